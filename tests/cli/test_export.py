"""fastgguf.export without the command line: export_model and the writers' argument errors."""

from __future__ import annotations

import numpy as np
import pytest

import fastgguf
from fastgguf import GGUFWriter
from fastgguf.export import NpyFolderWriter, SafetensorsWriter, export_model, open_writer

safetensors_numpy = pytest.importorskip("safetensors.numpy")


@pytest.fixture
def model_path(tmp_path):
    rng = np.random.default_rng(0)
    path = tmp_path / "m.gguf"
    with GGUFWriter(path) as writer:
        writer.add("general.name", "export test")
        writer.add_tensor("a", rng.standard_normal((3, 64)).astype(np.float32))
        writer.add_tensor("b", rng.standard_normal((2, 32)).astype(np.float16))
        writer.add_tensor("c", rng.standard_normal(5).astype(np.float32))
    return str(path)


@pytest.mark.parametrize("dtype", ["float32", "float16", "float64"])
def test_export_from_a_path_with_progress(tmp_path, model_path, dtype):
    reported = []
    out = tmp_path / "o.safetensors"
    names = export_model(model_path, out, dtype=dtype, progress=reported.append)
    assert names == ["a", "b", "c"]
    loaded = safetensors_numpy.load_file(str(out))
    with fastgguf.open(model_path) as model:
        for name in names:
            np.testing.assert_array_equal(loaded[name], model.dequantize(name).astype(dtype))
        assert sum(reported) == sum(t.n_elements for t in model.tensors.values()) * np.dtype(dtype).itemsize


def test_export_chosen_tensors_of_an_open_model(tmp_path, model_path):
    with fastgguf.open(model_path) as model:
        assert export_model(model, tmp_path / "o.npz", tensors=["c", model.tensors["a"]]) == ["c", "a"]
        with np.load(tmp_path / "o.npz") as archive:
            assert archive.files == ["c", "a"]
            np.testing.assert_array_equal(archive["a"], model.dequantize("a"))


def test_export_argument_errors(tmp_path, model_path):
    with pytest.raises(ValueError, match="dtype must be one of"):
        export_model(model_path, tmp_path / "o.npz", dtype="int8")
    (tmp_path / "file").write_text("x")
    with pytest.raises(ValueError, match="exists and is not a folder"):
        export_model(model_path, tmp_path / "file")
    with pytest.raises(KeyError):
        export_model(model_path, tmp_path / "o.npz", tensors=["missing"])
    assert not (tmp_path / "o.npz").exists() and not (tmp_path / "o.npz.part").exists()


def test_writers_chosen_by_suffix(tmp_path):
    assert isinstance(open_writer(tmp_path / "x.SafeTensors"), SafetensorsWriter)
    assert isinstance(open_writer(tmp_path / "folder"), NpyFolderWriter)
    writer = SafetensorsWriter(tmp_path / "y.safetensors")
    with pytest.raises(ValueError, match="__metadata__"):
        writer.begin([("__metadata__", (1,), np.dtype(np.float32))], {})
