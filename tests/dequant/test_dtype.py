"""dtype= on TensorInfo.dequantize / GGUFFile.load: float16, bfloat16 (ml_dtypes), float64, made in row blocks."""

from __future__ import annotations

import tracemalloc

import numpy as np
import pytest

import fastgguf
from fastgguf import GGMLType, GGUFError, GGUFWriter

ml_dtypes = pytest.importorskip("ml_dtypes")
gguf = pytest.importorskip("gguf")

SHAPE = (37, 64)


@pytest.fixture(scope="module")
def model(tmp_path_factory):
    rng = np.random.default_rng(3)
    path = tmp_path_factory.mktemp("dtype") / "dtype.gguf"
    values = (rng.standard_normal(SHAPE) * 3).astype(np.float32)
    with GGUFWriter(path) as w:
        w.add_tensor("f32", values)
        w.add_tensor("f16", values.astype(np.float16))
        w.add_tensor("q8_0", gguf.quants.quantize(values, gguf.GGMLQuantizationType.Q8_0).tobytes(), GGMLType.Q8_0,
                     SHAPE)
        w.add_tensor("cube", values.reshape(37, 2, 32))
    with fastgguf.open(path) as f:
        yield f


BFLOAT16 = np.dtype(ml_dtypes.bfloat16)
DTYPES = {"float16": np.dtype(np.float16), "bfloat16": BFLOAT16, "bf16": BFLOAT16, "float64": np.dtype(np.float64),
          "float32": np.dtype(np.float32)}
ROWS = [None, slice(3, 30), slice(None, None, 5), slice(30, 3, -4), [0, -1, 5, 5], 7, np.array([], np.int64)]


@pytest.mark.parametrize("name", ["f32", "f16", "q8_0", "cube"])
@pytest.mark.parametrize("dtype", list(DTYPES))
def test_dtype_equals_cast_of_float32(model, name, dtype):
    info = model.tensors[name]
    result = info.dequantize(dtype=dtype)
    expected = info.dequantize().astype(DTYPES[dtype])
    assert result.dtype == DTYPES[dtype]
    assert result.shape == info.shape
    assert result.tobytes() == expected.tobytes()


def test_dtype_objects_accepted(model):
    info = model.tensors["q8_0"]
    for dtype in (np.float16, ml_dtypes.bfloat16, np.dtype("f2")):
        assert info.dequantize(dtype=dtype).dtype == np.dtype(dtype)


@pytest.mark.parametrize("rows", ROWS, ids=repr)
@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_dtype_with_rows(model, rows, dtype, monkeypatch):
    monkeypatch.setattr(fastgguf.dequant, "_BLOCK_ELEMENTS", 64 * 4)  # several blocks, a partial last one
    info = model.tensors["cube"]
    result = info.dequantize(rows=rows, dtype=dtype, threads=1)
    expected = info.dequantize(rows=rows).astype(DTYPES[dtype])
    assert result.shape == expected.shape
    assert result.tobytes() == expected.tobytes()


@pytest.mark.parametrize("name", ["f32", "q8_0"])
def test_dtype_into_out_is_out(model, name):
    info = model.tensors[name]
    for dtype in ("float16", "bfloat16"):
        out = np.empty(SHAPE, DTYPES[dtype])
        assert info.dequantize(dtype=dtype, out=out) is out
        assert out.tobytes() == info.dequantize().astype(DTYPES[dtype]).tobytes()


def test_dtype_into_out(model):
    info = model.tensors["q8_0"]
    out = np.empty(SHAPE, np.float16)
    assert info.dequantize(dtype="float16", out=out) is out
    assert out.tobytes() == info.dequantize().astype(np.float16).tobytes()
    flat = np.empty(5 * 64, np.float16)
    assert info.dequantize(dtype="float16", out=flat, rows=slice(0, 5)) is flat


@pytest.mark.parametrize("out", [np.empty(SHAPE, np.float32), np.empty((3, 64), np.float16),
                                 np.empty((64, 37), np.float16).T, np.empty(SHAPE, np.float16)[:, :32]],
                         ids=["wrong-dtype", "wrong-size", "not-contiguous", "strided"])
def test_dtype_bad_out(model, out):
    with pytest.raises((TypeError, ValueError), match="out (must|has)") as raised:
        model.tensors["f16"].dequantize(dtype="float16", out=out)
    assert not isinstance(raised.value, GGUFError)  # a bad argument, not a bad file


def test_dtype_bad_rows_raise_like_float32(model):
    info = model.tensors["f16"]
    with pytest.raises(IndexError):
        info.dequantize(rows=[37], dtype="float16")
    with pytest.raises(IndexError):
        info.dequantize(rows=[37])


def test_load_with_dtype(model):
    loaded = model.load(dtype="bfloat16")
    assert list(loaded) == list(model.tensors)
    for name, array in loaded.items():
        assert array.dtype == ml_dtypes.bfloat16
        assert array.tobytes() == model.dequantize(name).astype(ml_dtypes.bfloat16).tobytes()
    assert model.load(["f16"], dtype="float16")["f16"].dtype == np.float16


def test_float16_needs_no_float32_copy_of_the_whole_tensor(tmp_path):
    path = tmp_path / "big.gguf"
    with GGUFWriter(path) as w:
        w.add_tensor("t", np.ones((1024, 4096), np.float16))  # 4 Mi elements: 16 MiB as float32
    with fastgguf.open(path) as f:
        tracemalloc.start()
        try:
            result = f.dequantize("t", dtype="float16", threads=2)
            peak = tracemalloc.get_traced_memory()[1]
        finally:
            tracemalloc.stop()
    full_float32 = result.size * 4
    assert peak < result.nbytes + full_float32 // 2  # a whole float32 temporary would add 16 MiB
    assert np.all(result == 1)
