"""Quantization to IQ4_NL, IQ4_XS, IQ3_XXS and IQ3_S: blocks worked out by hand, and ggml's layouts.

The bytes ggml writes for random rows are checked in ``test_quantize.py`` (reference vectors from
ggml's portable build). Here: inputs whose blocks can be derived on paper from the rules in
``quant_iq4.h`` / ``quant_iq3.h``, and properties of ggml's block layout that a wrong port would
break (IQ3_S writes the blocks after an all-zero 32-value block one slot earlier).
"""

from __future__ import annotations

import numpy as np
import pytest

import fastgguf
from fastgguf import GGMLType

#: The 16 values of a 4-bit non-linear code.
IQ4NL_VALUES = np.array([-127, -104, -83, -65, -49, -35, -22, -10, 1, 13, 25, 38, 53, 69, 89, 113], np.float32)

IQ_TYPES = [GGMLType.IQ4_NL, GGMLType.IQ4_XS, GGMLType.IQ3_XXS, GGMLType.IQ3_S]


def on_grid_block() -> np.ndarray:
    """32 values that are exactly 0.5 x the 16 IQ4 values, twice."""
    return np.tile(IQ4NL_VALUES * np.float32(0.5), 2)


@pytest.mark.parametrize("imatrix", [False, True])
def test_iq4_nl_block_on_the_grid(imatrix):
    # max |x| is 63.5 = -0.5 * -127: the first candidate scale 0.5 fits exactly (sumq2 = 2 * sumqx
    # term by term, so d = 0.5 exactly), and no other candidate fits better. fp16(0.5) = 0x3800;
    # value j gets code j % 16, byte j holds codes j and j + 16: 0x00, 0x11, ..., 0xff.
    x = on_grid_block()
    w = np.linspace(0.5, 2.0, 32, dtype=np.float32) if imatrix else None
    got = fastgguf.quantize(x, GGMLType.IQ4_NL, imatrix=w)
    expect = bytes([0x00, 0x38]) + bytes(17 * j for j in range(16))
    assert got.tobytes() == expect


def test_iq4_xs_block_on_the_grid():
    # every 32-value block has scale 0.5; ds = -0.5/32 = -2^-6 (fp16 0xa400); each block gets
    # l = nearest_int(0.5 / ds) = -32, stored as 0 (scales_h and scales_l all zero), and is
    # re-quantized with ds * -32 = 0.5: the IQ4_NL codes again.
    x = np.tile(on_grid_block(), 8)
    got = fastgguf.quantize(x, GGMLType.IQ4_XS)
    expect = bytes([0x00, 0xA4, 0, 0, 0, 0, 0, 0]) + bytes(17 * j for j in range(16)) * 8
    assert got.tobytes() == expect


@pytest.mark.parametrize("imatrix", [False, True])
def test_zero_blocks(imatrix):
    w = np.ones(256, np.float32) if imatrix else None
    x = np.zeros(256, np.float32)
    # IQ4_NL: scale 0, every value 0 -> nearest of the 16 values to 0 is 1 (code 8).
    assert fastgguf.quantize(x, GGMLType.IQ4_NL, imatrix=w).tobytes() == (b"\x00\x00" + b"\x88" * 16) * 8
    # IQ4_XS: ds = -0/32 = -0.0 (fp16 0x8000); each block l = 0, stored as 32: high bits 0b10.
    assert fastgguf.quantize(x, GGMLType.IQ4_XS, imatrix=w).tobytes() == (
        b"\x00\x80\xaa\xaa" + b"\x00" * 4 + b"\x88" * 128
    )
    # IQ3: the whole super-block stays zero.
    assert not fastgguf.quantize(x, GGMLType.IQ3_XXS, imatrix=w).any()
    assert not fastgguf.quantize(x, GGMLType.IQ3_S, imatrix=w).any()


def test_iq3_s_zero_block_shifts_later_blocks():
    # Without an imatrix a block's grid indices and signs depend on its own 32 values only. ggml
    # writes nothing for an all-zero block and puts the next blocks' 8 grid bytes (qs) and 4 sign
    # bytes one slot earlier, while their 9th index bits (qh) stay at the block's own position.
    rng = np.random.default_rng(7)
    x = rng.standard_normal(256).astype(np.float32)
    full = fastgguf.quantize(x, GGMLType.IQ3_S)
    x[:32] = 0
    holed = fastgguf.quantize(x, GGMLType.IQ3_S)
    qs, qh, signs = slice(2, 66), slice(66, 74), slice(74, 106)
    assert holed[qs][:56].tobytes() == full[qs][8:].tobytes()
    assert not holed[qs][56:].any()
    assert holed[signs][:28].tobytes() == full[signs][4:].tobytes()
    assert not holed[signs][28:].any()
    assert holed[qh][0] == 0 and holed[qh][1:].tobytes() == full[qh][1:].tobytes()


@pytest.mark.parametrize("qtype", IQ_TYPES, ids=lambda t: t.name)
def test_rows_are_independent(qtype):
    # A row's bytes do not depend on the rows around it (tables are read-only, no state leaks).
    rng = np.random.default_rng(3)
    x = rng.standard_normal((5, 512)).astype(np.float32)
    whole = fastgguf.quantize(x, qtype)
    for r in range(5):
        assert fastgguf.quantize(x[r], qtype).tobytes() == whole[r].tobytes()


#: ggml's tests/test-quantize-fns.cpp: the largest allowed error of dequantize(quantize(x)) on its
#: test data, as RMSE / sqrt(n) (sqrt of the summed squared differences, divided by n).
ROUND_TRIP_LIMITS = {GGMLType.IQ4_NL: 0.002, GGMLType.IQ4_XS: 0.002, GGMLType.IQ3_XXS: 0.005, GGMLType.IQ3_S: 0.004}


@pytest.mark.parametrize("qtype", IQ_TYPES, ids=lambda t: t.name)
def test_round_trip_error_within_ggml_limits(qtype):
    n = 32 * 128
    x = (0.1 + 2 * np.cos(np.arange(n, dtype=np.float32)).astype(np.float64)).astype(np.float32)  # ggml's data
    y = fastgguf.dequantize(fastgguf.quantize(x, qtype), qtype, x.shape)
    error = np.sqrt(np.sum((x.astype(np.float64) - y) ** 2)) / n
    assert error < ROUND_TRIP_LIMITS[qtype]
    # and the quantizer is doing real work: far better than storing nothing
    assert error < np.sqrt(np.sum(x.astype(np.float64) ** 2)) / n / 4
