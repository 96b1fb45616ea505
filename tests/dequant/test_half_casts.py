"""float32 -> float16/bfloat16 casts by fastgguf's C conversions: narrow_floats, dequantize_rounded.

Compared bit for bit with numpy's float16 cast and ml_dtypes' bfloat16 cast (independent
implementations) over every special value and random values of every magnitude, on each kernel
build the CPU runs; NaN is compared as NaN (its payload follows ggml's, see narrow_floats).
"""

from __future__ import annotations

import numpy as np
import pytest

import fastgguf
from fastgguf import GGMLType
from fastgguf.dequant import dequantize_rounded, narrow_floats

ml_dtypes = pytest.importorskip("ml_dtypes")

HALF = {"float16": np.dtype(np.float16), "bfloat16": np.dtype(ml_dtypes.bfloat16)}
SPECIAL = np.array([0.0, -0.0, np.inf, -np.inf, np.nan, -np.nan, 1.0, -1.0, 65504.0, 65519.99, 65520.0, 3.4028235e38,
                    -3.4028235e38, 1e-45, -1e-45, 2.0 ** -24, 2.0 ** -25, 2.0 ** -25 * 1.0000001, 3 * 2.0 ** -26,
                    2.0 ** -14, 2.0 ** -14 * (1 - 2.0 ** -11), 1.17549435e-38, 1.0 + 2.0 ** -8, 1.0 + 3 * 2.0 ** -8,
                    1.0 + 2.0 ** -11, 1.0 + 3 * 2.0 ** -11], np.float32)


def _values(seed: int = 0, n: int = 100_003) -> np.ndarray:
    """Random bit patterns (every exponent, NaN and inf included), then SPECIAL: odd length, not a multiple of 8 or 16."""
    bits = np.random.default_rng(seed).integers(0, 2 ** 32, n, dtype=np.uint64).astype(np.uint32)
    return np.concatenate([bits.view(np.float32), SPECIAL])


def _same(result: np.ndarray, expected: np.ndarray) -> None:
    a, b = result.astype(np.float32), expected.astype(np.float32)
    nan = np.isnan(b)
    assert np.array_equal(np.isnan(a), nan)
    assert np.array_equal(a[~nan].view(np.uint32), b[~nan].view(np.uint32))  # the sign of zero counts


@pytest.fixture
def small_chunks(monkeypatch):
    """Split even these small arrays over threads (into parts of 256 values), so the threaded paths run."""
    from fastgguf import dequant

    monkeypatch.setattr(dequant, "_MIN_CONVERT_PER_THREAD", 256)
    monkeypatch.setattr(dequant, "_MIN_ELEMENTS_PER_THREAD", 256)
    monkeypatch.setattr(dequant, "_SPLIT_GRANULE", 256)


@pytest.mark.parametrize("dtype", list(HALF))
@pytest.mark.parametrize("threads", [1, 3])
def test_narrow_floats_equals_numpy_and_ml_dtypes(cpu_path, dtype, threads, small_chunks):
    values = _values()
    with np.errstate(over="ignore", invalid="ignore"):
        expected = values.astype(HALF[dtype])
    result = narrow_floats(values, dtype, threads=threads)
    assert result.dtype == HALF[dtype] and result.shape == values.shape
    _same(result, expected)
    nan = np.isnan(values)
    if dtype == "bfloat16":  # ggml: the top 16 bits, quiet bit set
        assert np.array_equal(result.view(np.uint16)[nan], (values.view(np.uint32)[nan] >> 16).astype(np.uint16) | 0x40)
    else:  # the quiet NaN with the sign
        assert np.array_equal(result.view(np.uint16)[nan], np.where(np.signbit(values[nan]), 0xFE00, 0x7E00))


def test_narrow_floats_into_out_and_shapes():
    values = np.linspace(-3, 3, 48, dtype=np.float32).reshape(4, 12)
    out = np.empty(48, np.uint16)
    assert narrow_floats(values, "float16", out=out) is out
    assert np.array_equal(out, values.astype(np.float16).reshape(-1).view(np.uint16))
    out = np.empty((4, 12), ml_dtypes.bfloat16)
    assert narrow_floats(values, "bfloat16", out=out) is out
    assert out.tobytes() == values.astype(ml_dtypes.bfloat16).tobytes()
    assert narrow_floats(np.empty(0, np.float32), "float16").size == 0


@pytest.mark.parametrize("bad, error", [
    (dict(values=np.zeros(4, np.float64)), TypeError),
    (dict(values=np.zeros((4, 4), np.float32)[:, ::2]), TypeError),
    (dict(dtype="float64"), ValueError),
    (dict(dtype="int16"), ValueError),
    (dict(out=np.empty(3, np.float16)), ValueError),
    (dict(out=np.empty(4, np.float32)), TypeError),
    (dict(out=np.empty(4, np.float16)[::-1]), ValueError),
])
def test_narrow_floats_bad_arguments(bad, error):
    arguments = dict(values=np.zeros(4, np.float32), dtype="float16", out=None)
    arguments.update(bad)
    with pytest.raises(error):
        narrow_floats(arguments["values"], arguments["dtype"], out=arguments["out"])


@pytest.mark.parametrize("dtype", list(HALF))
@pytest.mark.parametrize("qtype", [GGMLType.F32, GGMLType.F16, GGMLType.Q4_K, GGMLType.Q8_0, GGMLType.IQ4_XS,
                                   GGMLType.Q6_K, GGMLType.IQ2_XXS])
def test_dequantize_rounded_equals_cast_of_dequantize(cpu_path, dtype, qtype, small_chunks):
    rng = np.random.default_rng(int(qtype))
    values = (rng.standard_normal((67, 512)) * 300).astype(np.float32)  # float16's range is reached by F32's
    if qtype == GGMLType.IQ2_XXS:
        blocks = fastgguf.quantize(values, qtype, imatrix=np.ones(512, np.float32))
    else:
        blocks = fastgguf.quantize(values, qtype)
    for threads in (1, 2, 5):
        result = dequantize_rounded(blocks, qtype, values.shape, dtype=dtype, threads=threads)
        assert result.dtype == np.float32 and result.shape == values.shape
        with np.errstate(over="ignore", invalid="ignore"):
            expected = fastgguf.dequantize(blocks, qtype, values.shape).astype(HALF[dtype]).astype(np.float32)
        _same(result, expected)


def test_dequantize_rounded_special_values():
    """F32 data is the values themselves: NaN, inf, overflow, subnormals through the rounding."""
    values = _values(1, 4093)
    for dtype in HALF:
        result = dequantize_rounded(values.view(np.uint8), "F32", values.shape, dtype=dtype)
        with np.errstate(over="ignore", invalid="ignore"):
            _same(result, values.astype(HALF[dtype]))


def test_dequantize_rounded_bad_arguments():
    blocks = fastgguf.quantize(np.ones((2, 256), np.float32), "Q4_K")
    with pytest.raises(ValueError, match="float16 or bfloat16"):
        dequantize_rounded(blocks, "Q4_K", (2, 256), dtype="float32")
    with pytest.raises(ValueError):
        dequantize_rounded(blocks, "Q4_K", (3, 256), dtype="float16")  # more than the bytes hold
    with pytest.raises(ValueError):
        dequantize_rounded(blocks, "Q4_K", (2, 200), dtype="float16")  # not whole blocks
    kernels = fastgguf._backend.kernels()
    with pytest.raises(ValueError, match="round_to"):
        kernels.dequantize_rounded_into(blocks.reshape(-1), np.empty(512, np.float32), int(GGMLType.Q4_K), int(GGMLType.Q8_0))
    with pytest.raises(ValueError, match="bytes"):
        kernels.dequantize_rounded_into(blocks.reshape(-1)[:100], np.empty(512, np.float32), int(GGMLType.Q4_K),
                                        int(GGMLType.F16))
    with pytest.raises(ValueError, match="F16 or BF16"):
        kernels.narrow_floats(np.zeros(4, np.float32), np.zeros(4, np.uint16), int(GGMLType.F32))
