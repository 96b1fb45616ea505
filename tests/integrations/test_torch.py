"""fastgguf.torch: GGUF tensors as torch tensors, dequantized by fastgguf into the dtype asked for."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest

import fastgguf
from fastgguf import GGMLType, GGUFWriter

torch = pytest.importorskip("torch")
ml_dtypes = pytest.importorskip("ml_dtypes")
gguf = pytest.importorskip("gguf")

import fastgguf.torch as fgt  # noqa: E402

TYPES = [GGMLType.F32, GGMLType.F16, GGMLType.BF16, GGMLType.Q8_0, GGMLType.Q4_0]
SHAPES = [(64,), (3, 64), (2, 5, 32)]
DTYPES = [torch.float32, torch.bfloat16, torch.float16, torch.float64]


def _write(path, shapes_types):
    """A file with one tensor per (shape, type), values from a seeded generator; returns their names."""
    from gguf import GGMLQuantizationType
    from gguf.quants import quantize

    rng = np.random.default_rng(7)
    writer = GGUFWriter(path)
    writer.add("general.architecture", "test")
    names = []
    for index, (shape, ggml_type) in enumerate(shapes_types):
        values = (rng.standard_normal(shape) * 3).astype(np.float32)
        name = f"t{index}.{ggml_type.name}"
        if ggml_type == GGMLType.F32:
            writer.add_tensor(name, values)
        elif ggml_type == GGMLType.F16:
            writer.add_tensor(name, values.astype(np.float16))
        else:
            writer.add_tensor(name, quantize(values, GGMLQuantizationType(int(ggml_type))), ggml_type, shape)
        names.append(name)
    writer.write()
    writer.close()
    return names


@pytest.fixture(scope="module")
def model_path(tmp_path_factory):
    path = str(tmp_path_factory.mktemp("torch") / "m.gguf")
    names = _write(path, [(shape, ggml_type) for ggml_type in TYPES for shape in SHAPES])
    return path, names


def _expected(info, dtype):
    """fastgguf's float32 result, cast by torch."""
    return torch.from_numpy(info.dequantize().copy()).to(dtype)


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_load_matches_float32_cast_by_torch(model_path, dtype):
    path, names = model_path
    loaded = fgt.load(path, dtype=dtype)
    assert list(loaded) == names
    with fastgguf.open(path) as model:
        for name, info in model.tensors.items():
            got = loaded[name]
            assert got.dtype == dtype and tuple(got.shape) == info.shape
            assert torch.equal(got, _expected(info, dtype)), name


def test_load_default_dtype_is_bfloat16_and_names_select(model_path):
    path, names = model_path
    chosen = [names[4], names[0]]
    loaded = fgt.load(path, names=chosen)
    assert list(loaded) == chosen
    assert all(value.dtype == torch.bfloat16 for value in loaded.values())
    with pytest.raises(KeyError, match="no tensor named 'nope'"):
        fgt.load(path, names=["nope"])


@pytest.mark.parametrize("ggml_type", TYPES, ids=lambda t: t.name)
@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_tensor(model_path, ggml_type, dtype):
    path, _ = model_path
    with fastgguf.open(path) as model:
        for info in model.tensors.values():
            if info.type != ggml_type:
                continue
            got = fgt.tensor(info, dtype)
            assert torch.equal(got, _expected(info, dtype))
            assert fgt.tensor(info).dtype == torch.float32


def test_from_numpy_shares_memory():
    array = np.arange(6, dtype=np.float32).astype(ml_dtypes.bfloat16).reshape(2, 3)
    tensor = fgt.from_numpy(array)
    assert tensor.dtype == torch.bfloat16 and tuple(tensor.shape) == (2, 3)
    assert tensor.data_ptr() == array.ctypes.data
    assert torch.equal(tensor, torch.arange(6, dtype=torch.bfloat16).reshape(2, 3))


def test_rejects_non_float_dtype(model_path):
    path, names = model_path
    with pytest.raises(TypeError, match="floating torch dtype"):
        fgt.load(path, dtype=torch.int32, names=names[:1])


def test_fastgguf_imports_without_torch():
    """fastgguf, fastgguf.torch and the transformers integration import with torch unimportable."""
    code = (
        "import sys; sys.modules['torch'] = None; sys.modules['transformers'] = None\n"
        "import fastgguf, fastgguf.torch, fastgguf.integrations.transformers as t\n"
        "assert 'torch' in t.unsupported_reason() or 'transformers' in t.unsupported_reason()\n"
        "try:\n    fastgguf.torch.load('x.gguf')\nexcept ImportError as e:\n    print(e)\n"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert "needs PyTorch" in result.stdout
