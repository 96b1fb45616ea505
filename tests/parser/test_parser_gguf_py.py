"""Differential tests against gguf-py: its writer's files read the same in both readers, and ours read in gguf-py."""

from __future__ import annotations

import numpy as np
import pytest

import fastgguf
from fastgguf import GGMLType, GGUFValueType as V, GGUFWriter
from fastgguf.types import TYPE_TRAITS

gguf = pytest.importorskip("gguf")

from gguf_py_files import GGUF_PY_COMPARABLE_TYPES, write_with_gguf_py  # noqa: E402

# gguf-py's synthetic fields, not key/values of the file.
GGUF_PY_PSEUDO_FIELDS = {"GGUF.version", "GGUF.tensor_count", "GGUF.kv_count"}


def test_type_table_matches_gguf_py():
    for qtype, sizes in gguf.GGML_QUANT_SIZES.items():
        ours = TYPE_TRAITS[GGMLType(qtype.value)]
        if qtype.name == "Q8_1":
            assert tuple(ours) == (32, 36)  # ggml's block: two fp16 + 32 int8; gguf-py says 40
        else:
            assert tuple(ours) == sizes, qtype.name
        assert GGMLType(qtype.value).name == qtype.name


def assert_same_as_gguf_py(path: str) -> None:
    theirs = gguf.GGUFReader(path)
    with fastgguf.open(path) as ours:
        fields = {k: v for k, v in theirs.fields.items() if k not in GGUF_PY_PSEUDO_FIELDS}
        assert list(ours.metadata) == list(fields)
        for key, field in fields.items():
            assert ours.metadata.value_type(key) == field.types[0], key
            value = ours.metadata[key]
            if field.types[0] == V.ARRAY and len(field.types) == 1:
                assert len(value) == 0  # gguf-py records no element type for an empty array
            elif field.types[0] == V.ARRAY:
                assert ours.metadata.element_type(key) == field.types[-1], key
                expected = field.contents()
                got = value.tolist() if not isinstance(value, np.ndarray) else value.tolist()
                if field.types[-1] == V.FLOAT32:
                    np.testing.assert_array_equal(np.asarray(got, np.float32), np.asarray(expected, np.float32))
                else:
                    assert got == expected, key
            elif field.types[0] == V.FLOAT32:
                assert np.float32(value) == np.float32(field.contents()), key
            else:
                assert value == field.contents(), key
        assert list(ours.tensors) == [t.name for t in theirs.tensors]
        for t in theirs.tensors:
            info = ours.tensors[t.name]
            assert info.type.value == t.tensor_type.value
            assert info.shape == tuple(int(d) for d in reversed(t.shape))
            assert info.n_elements == t.n_elements
            assert info.nbytes == t.n_bytes
            assert info.offset == t.data_offset
            assert info.raw.tobytes() == np.asarray(t.data).tobytes()


@pytest.mark.parametrize("endianess", ["LITTLE", "BIG"])
def test_gguf_py_files_read_identically(tmp_path, endianess):
    path = str(tmp_path / "theirs.gguf")
    write_with_gguf_py(path, gguf.GGUFEndian[endianess], np.random.default_rng(1))
    assert_same_as_gguf_py(path)
    with fastgguf.open(path) as f:
        assert f.byteorder == ("<" if endianess == "LITTLE" else ">")
        assert f.metadata["tokenizer.ggml.tokens"][499] == "tok499"


@pytest.mark.parametrize("alignment", [1, 8, 32, 64])
@pytest.mark.parametrize("byteorder", ["<", ">"])
def test_our_files_read_identically_in_gguf_py(gguf_path, byteorder, alignment):
    rng = np.random.default_rng(alignment)
    w = GGUFWriter(byteorder=byteorder, alignment=alignment)
    w.add("general.architecture", "llama")
    for i, vtype in enumerate([V.UINT8, V.INT8, V.UINT16, V.INT16, V.UINT32, V.INT32, V.FLOAT32, V.BOOL,
                               V.UINT64, V.INT64, V.FLOAT64]):
        w.add(f"s.{vtype.name}", 1 if vtype != V.BOOL else True, vtype)
        w.add(f"a.{vtype.name}", [i % 2 == 0, True] if vtype == V.BOOL else [i, 2 * i], V.ARRAY, vtype)
    w.add("s.string", "text")
    w.add("a.string", ["", "x", "yz"])
    w.add("a.empty", [], V.ARRAY, V.INT32)
    for qtype in GGUF_PY_COMPARABLE_TYPES:
        traits = TYPE_TRAITS[qtype]
        shape = (2, traits.block_size)
        nbytes = 2 * traits.type_size
        w.add_tensor(f"t.{qtype.name}", rng.integers(0, 256, nbytes, dtype=np.uint8).tobytes(), qtype, shape)
    assert_same_as_gguf_py(gguf_path(w))
