"""Metadata editing: set_metadata in place (same size only) and edit_metadata (rewrite, tensors untouched)."""

import os

import numpy as np
import pytest

from fastgguf import (
    GGMLType,
    GGUFFile,
    GGUFValueType,
    GGUFWriter,
    edit_metadata,
    metadata_edit as metadata_edit_module,
    set_metadata,
)
from fastgguf.cli import main
from fastgguf.cli.metadata import parse_assignment
from fastgguf.metadata_edit import parse_value, resolve_value_type

gguf = pytest.importorskip("gguf")
V = GGUFValueType


def write_model(path, *, alignment=32, byteorder="<", version=3):
    rng = np.random.default_rng(3)
    w = GGUFWriter(path, alignment=alignment, byteorder=byteorder, version=version)
    w.add("general.architecture", "llama")
    w.add("general.name", "Edit me")
    w.add("llama.context_length", 2048, V.UINT32)
    w.add("llama.rope.freq_base", 10000.0, V.FLOAT32)
    w.add("test.flag", True, V.BOOL)
    w.add("test.big", 2**40, V.UINT64)
    w.add("tokenizer.ggml.tokens", ["a", "b\u00e9", "c"], V.ARRAY, V.STRING)
    w.add("test.ints", np.array([1, 2, 3], dtype=np.int32))
    w.add_tensor("w0", rng.standard_normal((4, 32)).astype(np.float32))
    w.add_tensor("q", rng.integers(0, 256, 34 * 2, dtype=np.uint8).tobytes(), GGMLType.Q8_0, (2, 32))
    w.add_tensor("n", rng.standard_normal(7).astype(np.float16))
    w.write()
    return str(path)


def read(path):
    with open(path, "rb") as handle:
        return handle.read()


def tensor_bytes(path):
    with GGUFFile(path) as f:
        return {name: (info.shape, info.type, info.raw.tobytes()) for name, info in f.tensors.items()}


def gguf_py_value(path, key):
    field = gguf.GGUFReader(path).fields[key]
    return field.contents()


# set_metadata: in place ------------------------------------------------------------------------------

@pytest.mark.parametrize("key, value, type_, expected, expected_type", [
    ("llama.context_length", "8192", None, 8192, V.UINT32),
    ("llama.context_length", 4096, "int", 4096, V.UINT32),       # int keeps the key's width
    ("llama.context_length", "-3", "INT32", -3, V.INT32),         # another type of the same size
    ("llama.rope.freq_base", "5e5", None, 500000.0, V.FLOAT32),
    ("llama.rope.freq_base", 0.5, "float", 0.5, V.FLOAT32),
    ("test.flag", "false", None, False, V.BOOL),
    ("test.big", "0x10", "int64", 16, V.INT64),
    ("general.name", "Edit it", None, "Edit it", V.STRING),       # same byte length
    ("general.name", "Edit \u00e9", "str", "Edit \u00e9", V.STRING),  # 7 bytes in UTF-8 too
])
def test_set_metadata_in_place(tmp_path, key, value, type_, expected, expected_type):
    path = write_model(tmp_path / "m.gguf")
    before = read(path)
    tensors = tensor_bytes(path)
    set_metadata(path, key, value, type_)
    after = read(path)
    assert len(after) == len(before)
    changed = [i for i, (a, b) in enumerate(zip(before, after)) if a != b]
    with GGUFFile(path) as f:
        record = f.metadata._records[key]
        assert f.metadata[key] == expected
        assert f.metadata.value_type(key) == expected_type
        start = record.value_offset - 4
    assert all(start <= i < start + 4 + 64 for i in changed)  # only the type and the value
    assert tensor_bytes(path) == tensors
    got = gguf_py_value(path, key)
    assert got == pytest.approx(expected) if isinstance(expected, float) else got == expected


@pytest.mark.parametrize("key, value, type_, error, message", [
    ("general.name", "longer name", None, ValueError, "edit-metadata"),
    ("llama.context_length", "5", "INT64", ValueError, "edit-metadata"),
    ("llama.context_length", "1", "bool", ValueError, "edit-metadata"),
    ("no.such.key", "5", None, KeyError, "edit-metadata"),
    ("general.alignment", "64", None, ValueError, "general.alignment cannot be edited"),
    ("split.count", "2", None, ValueError, "split keys"),
    ("tokenizer.ggml.tokens", "x", None, ValueError, "is an array"),
    ("llama.context_length", "-1", None, ValueError, "does not fit a UINT32"),
    ("llama.context_length", "2.5", None, ValueError, "not an integer"),
    ("test.flag", "maybe", None, ValueError, "not a bool"),
    ("llama.rope.freq_base", "1e40", None, ValueError, "does not fit a FLOAT32"),
    ("llama.context_length", "1", "ARRAY", ValueError, "arrays"),
    ("llama.context_length", "1", "uint128", ValueError, "unknown value type"),
])
def test_set_metadata_refusals_change_nothing(tmp_path, key, value, type_, error, message):
    path = write_model(tmp_path / "m.gguf")
    before = read(path)
    with pytest.raises(error, match=message):
        set_metadata(path, key, value, type_)
    assert read(path) == before


def test_set_metadata_dry_run_and_big_endian(tmp_path):
    path = write_model(tmp_path / "m.gguf", byteorder=">")
    before = read(path)
    assert set_metadata(path, "llama.context_length", 99, dry_run=True) == (2048, 99)
    assert read(path) == before
    set_metadata(path, "llama.context_length", 99)
    with GGUFFile(path) as f:
        assert f.metadata["llama.context_length"] == 99


# edit_metadata: rewrite ------------------------------------------------------------------------------

def test_edit_metadata_sets_adds_and_removes(tmp_path):
    path = write_model(tmp_path / "m.gguf")
    out = str(tmp_path / "out.gguf")
    edit_metadata(path, out, set={"general.name": "A much longer name than before", "llama.context_length": "4096",
                                  "new.count": 7, "new.ratio": "0.25", "new.tokens": ["x", "y"],
                                  "test.ints": [9, 8]},
                  remove=["test.flag"], types={"new.count": "UINT16", "new.ratio": "float"})
    with GGUFFile(path) as source, GGUFFile(out) as f:
        keys = list(f.metadata)
        expected_keys = [k for k in source.metadata if k != "test.flag"] + ["new.count", "new.ratio", "new.tokens"]
        assert keys == expected_keys  # existing keys keep their place, new ones at the end
        assert f.metadata["general.name"] == "A much longer name than before"
        assert f.metadata["llama.context_length"] == 4096
        assert f.metadata.value_type("llama.context_length") == V.UINT32
        assert f.metadata["new.count"] == 7 and f.metadata.value_type("new.count") == V.UINT16
        assert f.metadata.value_type("new.ratio") == V.FLOAT64
        assert list(f.metadata["new.tokens"]) == ["x", "y"]
        assert f.metadata.element_type("test.ints") == V.INT32 and list(f.metadata["test.ints"]) == [9, 8]
        assert list(f.metadata["tokenizer.ggml.tokens"]) == ["a", "b\u00e9", "c"]
        assert f.alignment == source.alignment and f.version == source.version
    assert tensor_bytes(out) == tensor_bytes(path)
    assert gguf_py_value(out, "general.name") == "A much longer name than before"
    assert gguf_py_value(out, "new.count") == 7
    assert gguf_py_value(out, "new.tokens") == ["x", "y"]
    reader = gguf.GGUFReader(out)
    with GGUFFile(path) as source:
        for tensor in reader.tensors:
            assert tensor.data.tobytes() == source.tensors[tensor.name].raw.tobytes()


@pytest.mark.parametrize("alignment, byteorder, version", [(64, "<", 3), (32, ">", 3), (32, "<", 2), (256, "<", 1)])
def test_edit_metadata_keeps_layout_parameters(tmp_path, alignment, byteorder, version):
    path = write_model(tmp_path / "m.gguf", alignment=alignment, byteorder=byteorder, version=version)
    out = str(tmp_path / "out.gguf")
    edit_metadata(path, out, set={"general.name": "x"})
    with GGUFFile(out) as f:
        assert (f.alignment, f.byteorder, f.version) == (alignment, byteorder, version)
        assert f.metadata["general.name"] == "x"
    assert tensor_bytes(out) == tensor_bytes(path)


def test_edit_metadata_without_changes_is_the_same_file(tmp_path):
    path = write_model(tmp_path / "m.gguf")
    edit_metadata(path, tmp_path / "copy.gguf")
    assert (tmp_path / "copy.gguf").read_bytes() == read(path)


def test_edit_metadata_in_place_replaces_the_file(tmp_path):
    path = write_model(tmp_path / "m.gguf")
    tensors = tensor_bytes(path)
    edit_metadata(path, path, set={"general.name": "replaced, and longer"})
    with GGUFFile(path) as f:
        assert f.metadata["general.name"] == "replaced, and longer"
    assert tensor_bytes(path) == tensors
    assert os.listdir(tmp_path) == ["m.gguf"]


@pytest.mark.parametrize("kwargs, message", [
    ({"set": {"general.alignment": 64}}, "general.alignment cannot be edited"),
    ({"remove": ["general.alignment"]}, "general.alignment cannot be edited"),
    ({"remove": ["split.no"]}, "split keys"),
    ({"set": {"split.tensors.count": 3}}, "split keys"),
    ({"set": {"general.name": "x"}, "remove": ["general.name"]}, "both set and removed"),
    ({"remove": ["no.such.key"]}, "no key 'no.such.key' to remove"),
    ({"set": {"llama.context_length": "lots"}}, "llama.context_length: 'lots' is not an integer"),
    ({"set": {"llama.context_length": 2**40}}, "does not fit a UINT32"),
    ({"set": {"new": 1}, "types": {"new": "complex"}}, "unknown value type"),
    ({"set": {"new": object()}}, "cannot store"),
    ({"types": {"general.name": "str"}}, "types given for keys that are not set"),
])
def test_edit_metadata_refusals_write_nothing(tmp_path, kwargs, message):
    path = write_model(tmp_path / "m.gguf")
    with pytest.raises(ValueError, match=message):
        edit_metadata(path, tmp_path / "out.gguf", **kwargs)
    assert os.listdir(tmp_path) == ["m.gguf"]


def test_edit_metadata_failure_leaves_no_partial_output(tmp_path, monkeypatch):
    path = write_model(tmp_path / "m.gguf")
    out = tmp_path / "out.gguf"
    out.write_bytes(b"the old output")
    real = metadata_edit_module.copy_tensor
    calls = []

    def failing(*args, **kwargs):
        calls.append(1)
        if len(calls) == 2:
            raise OSError("disk full (simulated)")
        return real(*args, **kwargs)

    monkeypatch.setattr(metadata_edit_module, "copy_tensor", failing)
    with pytest.raises(OSError, match="simulated"):
        edit_metadata(path, out, set={"general.name": "new"})
    assert out.read_bytes() == b"the old output"
    assert sorted(os.listdir(tmp_path)) == ["m.gguf", "out.gguf"]


# names of types and values ---------------------------------------------------------------------------

@pytest.mark.parametrize("name, existing, expected", [
    ("int", V.UINT32, V.UINT32), ("int", None, V.INT64), ("int", V.STRING, V.INT64), ("int", V.FLOAT32, V.INT64),
    ("float", V.FLOAT32, V.FLOAT32), ("float", V.UINT8, V.FLOAT64), ("bool", None, V.BOOL), ("str", None, V.STRING),
    ("uint16", None, V.UINT16), ("FLOAT64", V.FLOAT32, V.FLOAT64), ("string", None, V.STRING),
])
def test_resolve_value_type(name, existing, expected):
    assert resolve_value_type(name, existing) == expected


@pytest.mark.parametrize("text, vtype, expected", [
    ("12", V.UINT8, 12), ("-0x10", V.INT32, -16), ("007", V.INT16, 7), ("TRUE", V.BOOL, True), ("0", V.BOOL, False),
    ("1.5", V.FLOAT32, 1.5), ("inf", V.FLOAT64, float("inf")), ("a:b", V.STRING, "a:b"),
])
def test_parse_value(text, vtype, expected):
    assert parse_value(text, vtype) == expected


@pytest.mark.parametrize("text, expected", [
    ("general.name=str:My model", ("general.name", "str", "My model")),
    ("a.b=UINT32:7", ("a.b", "UINT32", "7")),
    ("a.b=7", ("a.b", None, "7")),
    ("general.url=https://x.org", ("general.url", None, "https://x.org")),  # "https" is not a type
    ("k=str:", ("k", "str", "")),
])
def test_parse_assignment(text, expected):
    assert parse_assignment(text) == expected


def test_cli(tmp_path, capsys):
    path = write_model(tmp_path / "m.gguf")
    assert main(["set-metadata", path, "llama.context_length", "1024"]) == 0
    assert main(["set-metadata", path, "general.name", "longer than before"]) == 1
    assert "use fastgguf edit-metadata" in capsys.readouterr().err
    out = str(tmp_path / "o.gguf")
    assert main(["edit-metadata", path, out, "--no-progress", "--set", "general.name=longer than before",
                 "--set", "new.k=int:5", "--remove", "test.big"]) == 0
    with GGUFFile(out) as f:
        assert f.metadata["general.name"] == "longer than before"
        assert f.metadata["llama.context_length"] == 1024
        assert f.metadata["new.k"] == 5 and f.metadata.value_type("new.k") == V.INT64
        assert "test.big" not in f.metadata
    assert main(["edit-metadata", path, out, "--set", "new.k2=5"]) == 1
    assert "needs a type" in capsys.readouterr().err
    assert main(["edit-metadata", path, out, "--set", "general.alignment=UINT32:64"]) == 1


def test_editing_a_shard_keeps_the_split_model_whole(tmp_path):
    import fastgguf

    path = write_model(tmp_path / "m.gguf")
    shards = fastgguf.split_file(path, tmp_path / "s", max_tensors=2)
    edit_metadata(shards[0].path, shards[0].path, set={"general.name": "a new, longer name"})
    with fastgguf.open(shards[1].path) as model:
        assert model.metadata["general.name"] == "a new, longer name"
        assert len(model.tensors) == 3
