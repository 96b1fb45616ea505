"""Dequantization of the IQ, ternary, FP4 and 1-/2-bit block types.

Every kernel must give the same float32 bits as gguf-py's ``dequantize`` (the
reference, from ``dequant_refs``) on random blocks, on blocks gguf-py quantized
itself where it can, and the values worked out by hand below. Q1_0 and Q2_0,
which gguf-py cannot dequantize, are checked against the numpy transcription of
ggml's definition in ``dequant_refs``.
The lookup tables are checked entry by entry against gguf-py's.
"""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest
from gguf import GGMLQuantizationType, quants as ref

import fastgguf
from fastgguf import GGMLType, dequant
from fastgguf.types import TYPE_TRAITS

import dequant_refs
from conftest import REPO, assert_same_bits, kernel_modules
from dequant_refs import IQ_GGUF_PY_TYPES, IQ_NUMPY_TYPES, SCALE_FIELDS, random_tensor_bytes, set_f16_scale

#: Types gguf-py cannot dequantize; checked against ``dequant_refs.numpy_reference``.
GGML_ONLY_TYPES = list(IQ_NUMPY_TYPES)
#: Types gguf-py dequantizes; its output is the reference.
GGUF_PY_TYPES = list(IQ_GGUF_PY_TYPES)
#: Types gguf-py can also quantize.
GGUF_PY_QUANTIZES = [GGMLType.TQ1_0, GGMLType.TQ2_0, GGMLType.MXFP4]

#: Output shapes, in blocks along the last axis: one block, several rows, 3-D.
SHAPES_IN_BLOCKS = [(1,), (3, 2), (2, 3, 5)]


def random_blocks(qtype: GGMLType, n_blocks: int, seed: int) -> np.ndarray:
    """``n_blocks`` blocks (n_blocks, type_size) of random bytes whose fp16 scales are finite."""
    rng = np.random.default_rng(seed)
    block_size, type_size = TYPE_TRAITS[qtype]
    return random_tensor_bytes(qtype, n_blocks * block_size, rng).reshape(n_blocks, type_size)


def reference(blocks: np.ndarray, qtype: GGMLType) -> np.ndarray:
    return dequant_refs.reference(qtype, blocks.reshape(-1))


def shape_of(qtype: GGMLType, shape_in_blocks: tuple[int, ...]) -> tuple[int, ...]:
    return (*shape_in_blocks[:-1], shape_in_blocks[-1] * TYPE_TRAITS[qtype].block_size)


# --- exactness against the references ----------------------------------------

@pytest.mark.parametrize("shape_in_blocks", SHAPES_IN_BLOCKS, ids=str)
@pytest.mark.parametrize("qtype", GGUF_PY_TYPES + GGML_ONLY_TYPES, ids=lambda t: t.name)
def test_random_blocks_match_reference(qtype, shape_in_blocks, cpu_path):
    n_blocks = int(np.prod(shape_in_blocks))
    blocks = random_blocks(qtype, n_blocks, seed=n_blocks * 1000 + int(qtype))
    shape = shape_of(qtype, shape_in_blocks)
    actual = fastgguf.dequantize(blocks.reshape(-1), qtype, shape)
    assert_same_bits(actual, reference(blocks, qtype).reshape(shape))


@pytest.mark.parametrize("qtype", GGUF_PY_TYPES + GGML_ONLY_TYPES, ids=lambda t: t.name)
def test_many_blocks_match_reference(qtype, cpu_path):
    """Enough blocks that every grid entry, sign pattern and scale code occurs (IQ1_S's grid has 2048 entries)."""
    n_blocks = 1024
    blocks = random_blocks(qtype, n_blocks, seed=int(qtype))
    actual = fastgguf.dequantize(blocks, qtype, (8, n_blocks // 8 * TYPE_TRAITS[qtype].block_size), threads=2)
    assert_same_bits(actual.reshape(-1), reference(blocks, qtype))


@pytest.mark.parametrize("qtype", GGUF_PY_QUANTIZES, ids=lambda t: t.name)
def test_gguf_py_quantized_data_matches(qtype):
    rng = np.random.default_rng(int(qtype))
    weights = (rng.standard_normal((16, 1024)) * rng.uniform(0.001, 3.0, (16, 1))).astype(np.float32)
    weights[3, :256] = 0.0  # an all-zero block: zero scale
    data = ref.quantize(weights, GGMLQuantizationType(int(qtype)))
    expected = reference(data, qtype).reshape(weights.shape)
    actual = fastgguf.dequantize(data, qtype, weights.shape)
    assert_same_bits(actual, expected)
    if qtype != GGMLType.MXFP4:  # sanity: quantization kept the weights' scale (the ternary types' sign)
        assert np.all(np.sign(actual)[actual != 0] == np.sign(weights)[actual != 0])


@pytest.mark.parametrize("qtype", GGUF_PY_TYPES, ids=lambda t: t.name)
def test_non_finite_scales_match_gguf_py(qtype, cpu_path):
    """Infinite and NaN scales propagate as in gguf-py (NaNs compared as equal, not bit for bit)."""
    blocks = random_blocks(qtype, 64, seed=7)
    special = np.array([0x7C00, 0xFC00, 0x7E00, 0x0001, 0x8000], dtype=np.uint16)  # +inf, -inf, NaN, subnormal, -0
    if SCALE_FIELDS[qtype]:
        set_f16_scale(blocks[: len(special)], qtype, special)
    else:  # MXFP4 / NVFP4 scales are 8-bit codes: use the extremes
        blocks[: len(special), 0] = [0xFF, 0x00, 0x7F, 0x01, 0x80]
    actual = fastgguf.dequantize(blocks, qtype, (64 * TYPE_TRAITS[qtype].block_size,))
    np.testing.assert_array_equal(actual, reference(blocks, qtype))


@pytest.mark.parametrize("qtype", GGUF_PY_TYPES + GGML_ONLY_TYPES, ids=lambda t: t.name)
def test_rows_and_out_select_the_same_values(qtype):
    """``rows=`` and ``out=`` give exactly the corresponding part of the whole tensor."""
    shape = shape_of(qtype, (6, 3))
    blocks = random_blocks(qtype, 18, seed=11)
    whole = fastgguf.dequantize(blocks, qtype, shape)
    assert_same_bits(fastgguf.dequantize(blocks, qtype, shape, rows=slice(1, 5, 2)), whole[1:5:2])
    assert_same_bits(fastgguf.dequantize(blocks, qtype, shape, rows=[5, 0, 5]), whole[[5, 0, 5]])
    out = np.full(shape, np.nan, dtype=np.float32)
    assert fastgguf.dequantize(blocks, qtype, shape, out=out, threads=3) is out
    assert_same_bits(out, whole)


# --- blocks worked out by hand ------------------------------------------------

def half_bytes(value: float) -> list[int]:
    return list(np.array([value], "<f2").view(np.uint8))


def check_block(qtype: GGMLType, block: list[int], expected: list[float]) -> None:
    data = np.array(block, dtype=np.uint8)
    assert data.size == TYPE_TRAITS[qtype].type_size
    previous = dequant.cpu_path()
    try:
        for path in dequant.available_cpu_paths():
            dequant.set_cpu_path(path)
            actual = fastgguf.dequantize(data, qtype, (TYPE_TRAITS[qtype].block_size,))
            assert_same_bits(actual, np.array(expected, dtype=np.float32))
    finally:
        dequant.set_cpu_path(previous)


def test_iq4_nl_by_hand():
    # d = 0.5; byte j holds code j (low nibble, element j) and code 15 - j (high nibble, element 16 + j).
    halves = [-63.5, -52, -41.5, -32.5, -24.5, -17.5, -11, -5, 0.5, 6.5, 12.5, 19, 26.5, 34.5, 44.5, 56.5]
    check_block(GGMLType.IQ4_NL, half_bytes(0.5) + [j | (15 - j) << 4 for j in range(16)], halves + halves[::-1])


def test_iq4_xs_by_hand():
    # d = 1; sub-block scale codes 32 + ib - 4 (6 bits: low nibble in scales_l, 2 high bits in scales_h),
    # so the sub-block scales are -4 .. 3. All codes 8 (value 1) except byte 0's low nibble: code 0 (-127).
    scales = [(32 + ib - 4) for ib in range(8)]
    scales_h = sum((s >> 4) << (2 * ib) for ib, s in enumerate(scales))
    scales_l = [(scales[2 * i] & 0xF) | (scales[2 * i + 1] & 0xF) << 4 for i in range(4)]
    codes = [0x88] * 128
    codes[0] = 0x80
    block = half_bytes(1.0) + [scales_h & 0xFF, scales_h >> 8] + scales_l + codes
    expected = [float(ib - 4) for ib in range(8) for _ in range(32)]
    expected[0] = -4.0 * -127
    check_block(GGMLType.IQ4_XS, block, expected)


def test_tq2_0_by_hand():
    # d = 2; bytes 0xE4 hold codes 0,1,2,3 (low bits first) = -1,0,1,2; 0x1B the reverse.
    # Byte j's code at shift 2k is element 32k + j of its 128-element half.
    block = [0xE4] * 32 + [0x1B] * 32 + half_bytes(2.0)
    expected = [-2.0] * 32 + [0.0] * 32 + [2.0] * 32 + [4.0] * 32 + [4.0] * 32 + [2.0] * 32 + [0.0] * 32 + [-2.0] * 32
    check_block(GGMLType.TQ2_0, block, expected)


def test_tq1_0_by_hand():
    # A byte holds 5 base-3 digits t0..t4 as round_up(256 * (t0*81 + t1*27 + t2*9 + t3*3 + t4) / 243); digit k
    # belongs to element 32k + j (first 32 bytes), 160 + 16k + j (next 16), 240 + 4k + j (last 4, 4 digits).
    # 2-1-0-1-2 -> 2*81 + 27 + 0 + 3 + 2 = 194 -> ceil(194 * 256 / 243) = 205; values +1, 0, -1, 0, +1.
    # All-zero digits -> byte 0 -> -1 everywhere; d = -0.5.
    block = [205] * 32 + [0] * 16 + [0] * 4 + half_bytes(-0.5)
    expected = [-0.5] * 32 + [-0.0] * 32 + [0.5] * 32 + [-0.0] * 32 + [-0.5] * 32 + [0.5] * 96
    check_block(GGMLType.TQ1_0, block, expected)


def test_mxfp4_by_hand():
    # Scale byte 126 = 2**-1; values are (doubled E2M1) * 2**-1 / 2, i.e. the E2M1 values times 0.5.
    e2m1_times_half = [0, 0.25, 0.5, 0.75, 1, 1.5, 2, 3, 0, -0.25, -0.5, -0.75, -1, -1.5, -2, -3]
    block = [126] + [j | (15 - j) << 4 for j in range(16)]
    check_block(GGMLType.MXFP4, block, e2m1_times_half + e2m1_times_half[::-1])


def test_mxfp4_tiny_scales_by_hand():
    # Scale bytes 0 and 1 are 2**-127 and 2**-126; ggml halves them into float32 subnormals.
    check_block(GGMLType.MXFP4, [0] + [0x71] * 16, [2.0**-128 * 1] * 16 + [2.0**-128 * 12] * 16)
    check_block(GGMLType.MXFP4, [1] + [0xF9] * 16, [2.0**-127 * -1] * 16 + [2.0**-127 * -12] * 16)


def test_nvfp4_by_hand():
    # Four E4M3 sub-block scales: 0x38 = 1.0, 0x3C = 1.5, 0x01 = 2**-9 (subnormal), 0x7F = NaN read as 0;
    # values are (doubled E2M1) * scale / 2. Each sub-block: 8 bytes, low nibbles then high nibbles.
    doubled = [0, 1, 2, 3, 4, 6, 8, 12, 0, -1, -2, -3, -4, -6, -8, -12]
    codes = [j | (15 - j) << 4 for j in range(8)]
    block = [0x38, 0x3C, 0x01, 0x7F] + codes * 4
    per_sub = [doubled[j] for j in range(8)] + [doubled[15 - j] for j in range(8)]
    expected = [v * s / 2 for s in (1.0, 1.5, 2.0**-9, 0.0) for v in per_sub]
    check_block(GGMLType.NVFP4, block, expected)


def test_iq2_xxs_by_hand():
    # Sub-block 0: grid entries 0 (all 8), 1 (43, then 8s), 2 (25, 25, then 8s), 3 (8, 43, then 8s);
    # uint32 with scale 1 in the top 4 bits and sign codes 0 (no signs), 1 (0x81: elements 0 and 7
    # negative), 0, 0. db = 1.0 * (0.5 + 1) * 0.25 = 0.375. Other sub-blocks: all zero bytes (grid 0, scale 0).
    aux = (1 << 28) | (1 << 7)
    sub0 = [0, 1, 2, 3] + list(np.array([aux], "<u4").view(np.uint8))
    block = half_bytes(1.0) + sub0 + [0] * 56
    g = lambda *v: [x * 0.375 for x in v]  # noqa: E731
    expected = g(8, 8, 8, 8, 8, 8, 8, 8) + g(-43, 8, 8, 8, 8, 8, 8, -8) + g(25, 25, 8, 8, 8, 8, 8, 8)
    expected += g(8, 43, 8, 8, 8, 8, 8, 8) + [8 * 0.125] * 224
    check_block(GGMLType.IQ2_XXS, block, expected)


# The first IQ1_S/IQ1_M grid entries: 0 = eight -1; 1 = +1 then seven -1; 2 = 0, 0, then six -1.

def test_iq1_s_by_hand():
    # d = 1. Sub-block 0: grid entries 1, 2, 0, 0 (high index bits 0), qh = sign bit set (shift
    # -1/8) | scale code 2 << 12, so dl = 1 * (2 * 2 + 1) = 5 and values are 5 * (grid - 0.125).
    # Other sub-blocks: all zero, so dl = 1, shift +1/8: entry 0 gives -0.875.
    qh = [0x8000 | 2 << 12] + [0] * 7
    block = half_bytes(1.0) + [1, 2, 0, 0] + [0] * 28 + list(np.array(qh, "<u2").view(np.uint8))
    expected = [4.375] + [-5.625] * 7 + [-0.625] * 2 + [-5.625] * 6 + [-5.625] * 16 + [-0.875] * 224
    check_block(GGMLType.IQ1_S, block, expected)


def test_iq1_m_by_hand():
    # d = 1.0 = 0x3C00 is spread over the top nibbles of the four trailing uint16 (low nibble first).
    # Their low 12 bits hold 3-bit scales, one per 16 elements: 1 and 2 for the first two (dl = 3,
    # 5), 0 elsewhere (dl = 1). Each qh nibble: 3 high index bits, then the shift's sign (8 = -1/8).
    # Group 0: entry 1, +1/8 -> 3 * 1.125, 3 * -0.875; group 1: entry 2, -1/8 (qh[0] = 0x80)
    # -> 3 * -0.125, 3 * -1.125; groups 2, 3: entry 0, +1/8, dl 5; the rest entry 0, +1/8, dl 1.
    scales = [0x0000 | 1 | 2 << 3, 0x0000, 0xC000, 0x3000]
    block = [1, 2] + [0] * 30 + [0x80] + [0] * 15 + list(np.array(scales, "<u2").view(np.uint8))
    expected = [3.375] + [-2.625] * 7 + [-0.375] * 2 + [-3.375] * 6 + [-4.375] * 16 + [-0.875] * 224
    check_block(GGMLType.IQ1_M, block, expected)


def test_q1_0_by_hand():
    # d = 1.5; bit j of byte k set -> +d for element 8k + j, clear -> -d.
    block = half_bytes(1.5) + [0x01, 0x80, 0xFF, 0x00] + [0x55] * 12
    expected = [1.5] + [-1.5] * 7 + [-1.5] * 7 + [1.5] + [1.5] * 8 + [-1.5] * 8 + [1.5, -1.5] * 48
    check_block(GGMLType.Q1_0, block, expected)


def test_q2_0_by_hand():
    # d = 0.5; byte 0xE4 holds codes 0,1,2,3 (low bits first) for elements 4k .. 4k+3: (code - 1) * d.
    block = half_bytes(0.5) + [0xE4] * 8 + [0x1B] * 8
    check_block(GGMLType.Q2_0, block, [-0.5, 0.0, 0.5, 1.0] * 8 + [1.0, 0.5, 0.0, -0.5] * 8)


# --- lookup tables --------------------------------------------------------------

def gguf_py_grid(cls) -> np.ndarray:
    cls.init_grid()
    return np.asarray(cls.grid).reshape(cls.grid_shape)


GRIDS = {
    "iq2xxs_grid": (ref.IQ2_XXS, np.uint8),
    "iq2xs_grid": (ref.IQ2_XS, np.uint8),
    "iq2s_grid": (ref.IQ2_S, np.uint8),
    "iq3xxs_grid": (ref.IQ3_XXS, np.uint8),
    "iq3s_grid": (ref.IQ3_S, np.uint8),
    "iq1s_grid": (ref.IQ1_S, np.int8),
}


@pytest.mark.parametrize("name", GRIDS)
def test_grid_matches_gguf_py(name):
    cls, dtype = GRIDS[name]
    expected = gguf_py_grid(cls)
    for module in kernel_modules():
        table = np.frombuffer(module._iq_tables()[name], dtype=dtype).reshape(expected.shape)
        np.testing.assert_array_equal(table.astype(np.float32), expected)


def test_small_tables_match_gguf_py():
    codes = np.arange(256, dtype=np.uint8)
    for module in kernel_modules():
        tables = module._iq_tables()
        assert tables["ksigns"] == ref.IQ2_XXS.ksigns
        assert np.frombuffer(tables["iq4nl_values"], np.int8).tolist() == list(ref.IQ4_NL.kvalues)
        assert np.frombuffer(tables["fp4_values"], np.int8).tolist() == list(ref.MXFP4.kvalues)
        assert list(ref.NVFP4.kvalues) == list(ref.MXFP4.kvalues)
        assert_same_bits(np.frombuffer(tables["e8m0_half_f32"], np.float32), ref.MXFP4.e8m0_to_fp32_half(codes))
        assert_same_bits(
            np.frombuffer(tables["ue4m3_half_f32"], np.float32), ref.NVFP4.ue4m3_to_fp32(codes).astype(np.float32)
        )
        # Byte b's eight sign multipliers: -1.0 where bit j is set, low bit first.
        signs = np.frombuffer(tables["sign_f32"], np.float32).reshape(256, 8)
        bits = np.unpackbits(codes[:, None], axis=1, bitorder="little")
        assert_same_bits(signs, np.where(bits == 1, np.float32(-1), np.float32(1)))


def test_table_module_is_generated_from_gguf_py():
    """The committed table module is exactly what the generator writes today."""
    script = REPO / "tools" / "gen_iq_tables.py"
    result = subprocess.run([sys.executable, str(script), "--check"], capture_output=True, text=True)
    assert result.returncode == 0, result.stdout + result.stderr
