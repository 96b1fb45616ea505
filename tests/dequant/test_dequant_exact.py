"""Bit-exactness of the dequantization kernels against gguf-py and numpy references.

Every check runs on every kernel build this CPU can run (portable, avx2, avx512): all of them
must give the same bits as the reference.
"""

from __future__ import annotations

import numpy as np
import pytest

from fastgguf import GGMLType, dequant, dequantize
from fastgguf.types import TYPE_TRAITS

from conftest import assert_same_bits, kernel_modules
from dequant_refs import ENGINE_TYPES, GGUF_PY_TYPES, random_tensor_bytes, reference

T = GGMLType


def cpu_path(request):
    """Run the test with each available kernel build, restoring the original afterwards."""
    before = dequant.cpu_path()
    dequant.set_cpu_path(request.param)
    yield request.param
    dequant.set_cpu_path(before)


def shapes_for(qtype):
    block = TYPE_TRAITS[qtype].block_size
    return [(block,), (3, 2 * block), (2, 3, 4 * block), (1, 8 * 256)]


@pytest.mark.parametrize("qtype", ENGINE_TYPES, ids=lambda t: t.name)
@pytest.mark.parametrize("shape_index", range(4))
def test_random_blocks_match_reference(qtype, shape_index, cpu_path):
    shape = shapes_for(qtype)[shape_index]
    n = int(np.prod(shape))
    raw = random_tensor_bytes(qtype, n, np.random.default_rng([int(qtype), shape_index]))
    result = dequantize(raw, qtype, shape, threads=1)
    assert result.shape == shape and result.dtype == np.float32
    assert_same_bits(result, reference(qtype, raw))


@pytest.mark.parametrize("qtype", ENGINE_TYPES, ids=lambda t: t.name)
def test_many_blocks_match_reference(qtype, cpu_path):
    # Enough blocks to exercise every vector loop and tail in the kernels.
    block = TYPE_TRAITS[qtype].block_size
    n = block * (4099 if block == 1 else 67)
    raw = random_tensor_bytes(qtype, n, np.random.default_rng(1000 + int(qtype)))
    assert_same_bits(dequantize(raw, qtype, threads=1), reference(qtype, raw))


@pytest.mark.parametrize("stream", [False, True], ids=["stores", "streaming"])
@pytest.mark.parametrize("qtype", [T.F16, T.BF16], ids=lambda t: t.name)
def test_every_16_bit_pattern(qtype, stream, cpu_path, monkeypatch):
    # All 65536 encodings, including subnormals, infinities and NaNs with payloads: the same
    # bits as numpy's float16 -> float32 cast (F16) and a 16-bit shift (BF16), with ordinary
    # and with non-temporal stores (the large-output loops).
    if stream:
        monkeypatch.setattr(dequant, "_STREAM_MIN_BYTES", 0)
    bits = np.arange(1 << 16, dtype=np.uint32).astype("<u2")
    if qtype == T.F16:
        expected = bits.view(np.float16).astype(np.float32)
    else:
        expected = (bits.astype(np.uint32) << 16).view(np.float32)
    assert_same_bits(dequantize(bits.view(np.uint8), qtype, threads=1), expected)


QUANTIZABLE = [T.Q4_0, T.Q4_1, T.Q5_0, T.Q5_1, T.Q8_0, T.BF16, T.F16]


@pytest.mark.parametrize("qtype", QUANTIZABLE, ids=lambda t: t.name)
def test_gguf_py_quantized_data(qtype, cpu_path):
    from gguf.constants import GGMLQuantizationType
    from gguf.quants import quantize

    rng = np.random.default_rng(7)
    weights = (rng.standard_normal((16, 512)) * rng.uniform(0.001, 3.0, (16, 1))).astype(np.float32)
    weights[3] = 0.0  # an all-zero row: zero scales
    weights[5, :64] = 1e-6  # tiny values: subnormal fp16 scales
    packed = np.ascontiguousarray(quantize(weights, GGMLQuantizationType(int(qtype))))
    raw = packed.view(np.uint8).reshape(-1)
    result = dequantize(raw, qtype, weights.shape, threads=1)
    assert_same_bits(result, reference(qtype, raw))
    # and the round trip is close to the input (a sanity check on the reference, too)
    tolerance = {T.Q4_0: 0.5, T.Q4_1: 0.5, T.Q5_0: 0.25, T.Q5_1: 0.25}.get(qtype, 0.02)
    assert np.allclose(result, weights, atol=tolerance * np.abs(weights).max())


def test_reference_covers_q8_types_and_sizes():
    # gguf-py 0.19 gets Q8_1's size wrong (40); ggml's 36 is in our table, and Q8_K is 292.
    assert TYPE_TRAITS[T.Q8_1] == (32, 36)
    assert TYPE_TRAITS[T.Q8_K] == (256, 292)
    assert not {T.Q8_1, T.Q8_K} & set(GGUF_PY_TYPES)  # so they take the numpy references


# ---------------------------------------------------------------------------------------------
# Hand-built blocks with the expected values worked out here.

F16_ONE, F16_HALF, F16_TWO, F16_QUARTER, F16_MINUS_ONE = 0x3C00, 0x3800, 0x4000, 0x3400, 0xBC00


def f16(bits: int) -> bytes:
    return bits.to_bytes(2, "little")


def hand_cases():
    cases = []
    # --- legacy -----------------------------------------------------------------------------
    # Q4_0: d = 0.5; byte j = j (low nibble) | (15 - j) << 4 (high nibble).
    qs = bytes(j | ((15 - j) << 4) for j in range(16))
    expected = [0.5 * (j - 8) for j in range(16)] + [0.5 * ((15 - j) - 8) for j in range(16)]
    cases.append(("Q4_0 ramp", T.Q4_0, f16(F16_HALF) + qs, expected))
    # Q4_0: d = -1, all nibbles 0 -> +8 everywhere.
    cases.append(("Q4_0 negative d", T.Q4_0, f16(F16_MINUS_ONE) + bytes(16), [8.0] * 32))
    # Q4_1: d = 2, m = -1; low nibbles 3, high nibbles 0 -> 5 and -1.
    cases.append(("Q4_1", T.Q4_1, f16(F16_TWO) + f16(F16_MINUS_ONE) + bytes([0x03] * 16), [5.0] * 16 + [-1.0] * 16))
    # Q5_0: d = 1; nibbles 0, high bit set only for element 0 and element 31 -> 16 - 16 = 0.
    qh = (1 | (1 << 31)).to_bytes(4, "little")
    cases.append(("Q5_0", T.Q5_0, f16(F16_ONE) + qh + bytes(16), [0.0] + [-16.0] * 30 + [0.0]))
    # Q5_1: d = 0.5, m = 1; all quants 31 (nibble 15, every high bit) -> 0.5 * 31 + 1.
    cases.append(("Q5_1", T.Q5_1, f16(F16_HALF) + f16(F16_ONE) + b"\xff" * 4 + b"\xff" * 16, [16.5] * 32))
    # Q8_0: d = 0.25; quants -128 .. 127 in steps.
    q = np.array([-128, -1, 0, 1, 127] + list(range(27)), dtype=np.int8)
    cases.append(("Q8_0", T.Q8_0, f16(F16_QUARTER) + q.tobytes(), list(q.astype(np.float64) * 0.25)))
    # Q8_1: d = 2, s (ignored) = 1; quants 0..31 -> 0, 2, ..., 62.
    q = np.arange(32, dtype=np.int8)
    cases.append(("Q8_1", T.Q8_1, f16(F16_TWO) + f16(F16_ONE) + q.tobytes(), [2.0 * i for i in range(32)]))
    # --- K-quants ---------------------------------------------------------------------------
    # Q2_K: scale byte 0x21 -> sub-scale 1, sub-min 2; d = 1, dmin = 0.25; every qs byte 0xE4
    # holds 0, 1, 2, 3 at shifts 0, 2, 4, 6, so element 32 * s + l of each half has q = s.
    block = bytes([0x21] * 16) + bytes([0xE4] * 64) + f16(F16_ONE) + f16(F16_QUARTER)
    half = [-0.5] * 32 + [0.5] * 32 + [1.5] * 32 + [2.5] * 32
    cases.append(("Q2_K", T.Q2_K, block, half * 2))
    # Q3_K: d = 0.5; scales 12 bytes: low nibbles 1 (bytes 0-7 = 0x11), high pairs 2 (bytes 8-11 =
    # 0xAA) -> 6-bit scale 1 | 2 << 4 = 33, minus 32 = 1. hmask 0 -> every quant has 4 subtracted;
    # qs 0xFF -> low bits 3: q = 3 - 4 = -1; value 0.5 * 1 * -1.
    block = bytes(32) + b"\xff" * 64 + b"\x11" * 8 + b"\xaa" * 4 + f16(F16_HALF)
    cases.append(("Q3_K hmask clear", T.Q3_K, block, [-0.5] * 256))
    # ...and hmask all set: no subtraction, q = 3, value 1.5.
    block = b"\xff" * 32 + b"\xff" * 64 + b"\x11" * 8 + b"\xaa" * 4 + f16(F16_HALF)
    cases.append(("Q3_K hmask set", T.Q3_K, block, [1.5] * 256))
    # Q4_K: d = 1, dmin = 0.5; sub-block scales j + 1 and mins j for j = 0..7 packed as
    # bytes 0-3: scale | (top bits of scales 4-7 = 0), bytes 4-7: min, bytes 8-11: scale lo | min lo << 4.
    scales = [1, 2, 3, 4] + [0, 1, 2, 3] + [(5 + k) | ((4 + k) << 4) for k in range(4)]
    qs = bytes([0x21] * 128)  # low nibble 1 (even sub-blocks), high nibble 2 (odd sub-blocks)
    block = f16(F16_ONE) + f16(F16_HALF) + bytes(scales) + qs
    expected = []
    for j in range(8):
        q = 1 if j % 2 == 0 else 2
        expected += [(j + 1) * q - 0.5 * j] * 32
    cases.append(("Q4_K", T.Q4_K, block, expected))
    # Q5_K: as Q4_K, plus qh bit j set only in sub-blocks 0 and 7 -> q + 16 there.
    qh = bytes([0x81] * 32)
    block = f16(F16_ONE) + f16(F16_HALF) + bytes(scales) + qh + qs
    expected = []
    for j in range(8):
        q = (1 if j % 2 == 0 else 2) + (16 if j in (0, 7) else 0)
        expected += [(j + 1) * q - 0.5 * j] * 32
    cases.append(("Q5_K", T.Q5_K, block, expected))
    # Q6_K: d = 0.5, int8 scales: 2 for sub-blocks 0-7, -1 for 8-15; ql 0xFF, qh 0xFF -> q = 63 - 32 = 31.
    block = b"\xff" * 128 + b"\xff" * 64 + bytes([2] * 8 + [0xFF] * 8) + f16(F16_HALF)
    cases.append(("Q6_K all max", T.Q6_K, block, [31.0] * 128 + [-15.5] * 128))
    # Q6_K: all zero bits, scale 1, d = 1 -> q = -32 everywhere.
    block = bytes(128) + bytes(64) + bytes([1] * 16) + f16(F16_ONE)
    cases.append(("Q6_K all min", T.Q6_K, block, [-32.0] * 256))
    # Q8_K: d = 0.5 (f32), quants i - 128 for i = 0..255; bsums are ignored.
    q = (np.arange(256) - 128).astype(np.int8)
    block = np.float32(0.5).tobytes() + q.tobytes() + bytes(range(32))
    cases.append(("Q8_K", T.Q8_K, block, [0.5 * (i - 128) for i in range(256)]))
    # --- plain element types ------------------------------------------------------------------
    cases.append(("F16", T.F16, bytes.fromhex("003c00c0ff7b0100"), [1.0, -2.0, 65504.0, 2.0**-24]))
    cases.append(("BF16", T.BF16, bytes.fromhex("803f40c0"), [1.0, -3.0]))
    cases.append(("F32", T.F32, np.array([1.5, -0.0], "<f4").tobytes(), [1.5, -0.0]))
    cases.append(("F64", T.F64, np.array([0.1, 1e300, -1e-300], "<f8").tobytes(), [np.float32(0.1), np.inf, -0.0]))
    cases.append(("I8", T.I8, bytes([0, 127, 128, 255]), [0.0, 127.0, -128.0, -1.0]))
    cases.append(("I16", T.I16, bytes.fromhex("ff7f0080"), [32767.0, -32768.0]))
    cases.append(("I32", T.I32, bytes.fromhex("01000001ffffffff"), [16777217.0, -1.0]))  # 2^24 + 1 rounds to 2^24
    cases.append(("I64", T.I64, (2**53 + 1).to_bytes(8, "little") + (-(2**63)).to_bytes(8, "little", signed=True),
                  [2.0**53, -(2.0**63)]))
    return cases


@pytest.mark.parametrize("name, qtype, block, expected", hand_cases(), ids=[c[0] for c in hand_cases()])
def test_hand_built_blocks(name, qtype, block, expected, cpu_path):
    result = dequantize(block, qtype, threads=1)
    assert_same_bits(result, np.array(expected, dtype=np.float32))


def test_every_engine_type_has_a_hand_case():
    assert {c[1] for c in hand_cases()} == set(ENGINE_TYPES)


@pytest.mark.parametrize("qtype", ENGINE_TYPES, ids=lambda t: t.name)
def test_all_cpu_paths_agree(qtype):
    # The builds are compared with each other directly, on one buffer, through the raw module call.
    block = TYPE_TRAITS[qtype].block_size
    raw = random_tensor_bytes(qtype, block * 300, np.random.default_rng(99))
    outputs = []
    for module in kernel_modules():
        out = np.full(block * 300, np.nan, dtype=np.float32)
        module.dequantize_into(raw, out, int(qtype))
        outputs.append(out)
    for out in outputs[1:]:
        assert_same_bits(out, outputs[0])
