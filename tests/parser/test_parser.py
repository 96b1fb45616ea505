"""Round trips through GGUFWriter and fastgguf.open: every value type, both byte orders, alignments, tensors."""

from __future__ import annotations

import gc
import math

import numpy as np
import pytest

import fastgguf
from fastgguf import GGMLType, GGUFError, GGUFValueType as V, GGUFWriter
from fastgguf.types import TYPE_TRAITS

BYTEORDERS = ["<", ">"]
ALIGNMENTS = [1, 8, 32, 64]
VERSIONS = [1, 2, 3]

SCALARS = {
    "u8.min": (V.UINT8, 0),
    "u8.max": (V.UINT8, 255),
    "i8.min": (V.INT8, -128),
    "i8.max": (V.INT8, 127),
    "u16.max": (V.UINT16, 65535),
    "i16.min": (V.INT16, -32768),
    "u32.max": (V.UINT32, 2**32 - 1),
    "i32.min": (V.INT32, -(2**31)),
    "f32.half": (V.FLOAT32, 1.5),
    "f32.inexact": (V.FLOAT32, 0.1),
    "f32.inf": (V.FLOAT32, -math.inf),
    "bool.true": (V.BOOL, True),
    "bool.false": (V.BOOL, False),
    "str.empty": (V.STRING, ""),
    "str.unicode": (V.STRING, "héllo ✓ 🦙"),
    "u64.max": (V.UINT64, 2**64 - 1),
    "i64.min": (V.INT64, -(2**63)),
    "f64.inexact": (V.FLOAT64, 0.1),
    "f64.tiny": (V.FLOAT64, 5e-324),
}

NUMERIC_ARRAYS = {
    V.UINT8: np.array([0, 1, 255], np.uint8),
    V.INT8: np.array([-128, 0, 127], np.int8),
    V.UINT16: np.array([0, 65535], np.uint16),
    V.INT16: np.array([-32768, 5], np.int16),
    V.UINT32: np.array([1, 2**32 - 1], np.uint32),
    V.INT32: np.arange(-5, 5, dtype=np.int32),
    V.FLOAT32: np.array([0.1, -2.5, np.inf], np.float32),
    V.BOOL: np.array([True, False, True]),
    V.UINT64: np.array([2**64 - 1, 0], np.uint64),
    V.INT64: np.array([-(2**63), 2**63 - 1], np.int64),
    V.FLOAT64: np.array([0.1, 1e300], np.float64),
}


def expected_scalar(vtype, value):
    if vtype == V.FLOAT32:
        return float(np.float32(value))
    return value


def write_everything(writer: GGUFWriter) -> None:
    for key, (vtype, value) in SCALARS.items():
        writer.add(key, value, vtype)
    for vtype, values in NUMERIC_ARRAYS.items():
        writer.add(f"arr.{vtype.name}", values, V.ARRAY)
        writer.add(f"arr.empty.{vtype.name}", values[:0], V.ARRAY)
    writer.add("arr.str", ["", "a", "héllo", "x" * 300, ""])
    writer.add("arr.str.empty", [], V.ARRAY, V.STRING)
    writer.add("arr.nested", [[1, 2, 3], [], [4]])
    writer.add("arr.nested.str", [["a", "b"], [""], []], V.ARRAY, V.ARRAY)
    writer.add("arr.nested.deep", [[[1], [2, 3]], [[]]])


def check_everything(f: fastgguf.GGUFFile) -> None:
    md = f.metadata
    for key, (vtype, value) in SCALARS.items():
        assert md.value_type(key) == vtype
        assert md.element_type(key) is None
        got = md[key]
        assert type(got) is type(value)
        assert got == expected_scalar(vtype, value)
    for vtype, values in NUMERIC_ARRAYS.items():
        for key, want in ((f"arr.{vtype.name}", values), (f"arr.empty.{vtype.name}", values[:0])):
            got = md[key]
            assert md.value_type(key) == V.ARRAY
            assert md.element_type(key) == vtype
            assert isinstance(got, np.ndarray)
            assert got.dtype == values.dtype.newbyteorder("=")
            assert got.dtype.isnative
            assert not got.flags.writeable
            np.testing.assert_array_equal(got, want)
    strings = md["arr.str"]
    assert md.element_type("arr.str") == V.STRING
    assert len(strings) == 5
    assert list(strings) == ["", "a", "héllo", "x" * 300, ""]
    assert strings.tolist() == list(strings)
    assert strings[2] == "héllo" and strings[-1] == "" and strings[1:3] == ["a", "héllo"]
    assert len(md["arr.str.empty"]) == 0 and md["arr.str.empty"].tolist() == []
    nested = md["arr.nested"]
    assert md.element_type("arr.nested") == V.ARRAY
    assert [list(a) for a in nested] == [[1, 2, 3], [], [4]]
    assert [a.tolist() for a in md["arr.nested.str"]] == [["a", "b"], [""], []]
    deep = md["arr.nested.deep"]
    assert [[list(inner) for inner in outer] for outer in deep] == [[[1], [2, 3]], [[]]]


@pytest.mark.parametrize("version", VERSIONS)
@pytest.mark.parametrize("byteorder", BYTEORDERS)
def test_every_value_type_round_trips(open_bytes, byteorder, version):
    writer = GGUFWriter(byteorder=byteorder, version=version)
    write_everything(writer)
    f = open_bytes(writer)
    assert f.version == version
    assert f.byteorder == byteorder
    assert len(f.tensors) == 0
    check_everything(f)
    assert list(f.metadata) == list(SCALARS) + [k for v in NUMERIC_ARRAYS for k in (f"arr.{v.name}",
                                                                                   f"arr.empty.{v.name}")] + [
        "arr.str", "arr.str.empty", "arr.nested", "arr.nested.str", "arr.nested.deep"]


def random_tensors(rng, count):
    """(name, type, numpy shape, raw bytes) for ``count`` tensors of assorted types."""
    types = sorted(TYPE_TRAITS)
    tensors = []
    for i in range(count):
        ggml_type = types[i % len(types)]
        traits = TYPE_TRAITS[ggml_type]
        ndim = 1 + i % 4
        shape = tuple(int(d) for d in rng.integers(1, 4, size=ndim - 1)) + (traits.block_size * (1 + i % 3),)
        nbytes = int(np.prod(shape)) // traits.block_size * traits.type_size
        tensors.append((f"blk.{i}.weight", ggml_type, shape, rng.integers(0, 256, nbytes, dtype=np.uint8).tobytes()))
    return tensors


@pytest.mark.parametrize("n_tensors", [0, 1, 60])
@pytest.mark.parametrize("alignment", ALIGNMENTS)
@pytest.mark.parametrize("byteorder", BYTEORDERS)
def test_tensors_round_trip(open_bytes, byteorder, alignment, n_tensors):
    rng = np.random.default_rng(n_tensors * 100 + alignment)
    tensors = random_tensors(rng, n_tensors)
    writer = GGUFWriter(byteorder=byteorder, alignment=alignment)
    writer.add("general.architecture", "test")
    for name, ggml_type, shape, raw in tensors:
        writer.add_tensor(name, raw, ggml_type, shape)
    f = open_bytes(writer)
    assert f.alignment == alignment
    assert f.data_offset % alignment == 0
    if alignment != 32:
        assert f.metadata["general.alignment"] == alignment
    assert list(f.tensors) == [t[0] for t in tensors]
    for (name, ggml_type, shape, raw), info in zip(tensors, f.tensors.values()):
        assert info.name == name
        assert info.type == ggml_type and isinstance(info.type, GGMLType)
        assert info.shape == shape
        assert info.n_elements == int(np.prod(shape))
        assert info.nbytes == len(raw)
        assert info.offset % alignment == 0 and info.offset >= f.data_offset
        view = info.raw
        assert view.dtype == np.uint8 and not view.flags.writeable
        assert view.tobytes() == raw


@pytest.mark.parametrize("byteorder", BYTEORDERS)
def test_plain_tensors_from_numpy_keep_values(open_bytes, byteorder):
    arrays = {
        "f32": np.linspace(-1, 1, 24, dtype=np.float32).reshape(2, 3, 4),
        "f16": np.arange(8, dtype=np.float16),
        "i32": np.arange(-3, 3, dtype=np.int32).reshape(3, 2),
        "f64": np.array([[0.1, 0.2]]),
    }
    writer = GGUFWriter(byteorder=byteorder)
    for name, array in arrays.items():
        writer.add_tensor(name, array)
    f = open_bytes(writer)
    for name, array in arrays.items():
        info = f.tensors[name]
        assert info.shape == array.shape
        stored = info.raw.view(array.dtype.newbyteorder(byteorder)).reshape(array.shape)
        np.testing.assert_array_equal(stored, array)


def test_invalid_utf8_is_kept_exactly(open_bytes):
    writer = GGUFWriter()
    writer.add("bad", b"ok\xff\xfe")
    writer.add("tokens", [b"\xc3\x28", "fine"], V.ARRAY, V.STRING)
    f = open_bytes(writer)
    assert f.metadata.raw("bad") == b"ok\xff\xfe"
    assert f.metadata["bad"].encode("utf-8", "surrogateescape") == b"ok\xff\xfe"
    tokens = f.metadata["tokens"]
    assert tokens.raw(0) == b"\xc3\x28"
    assert tokens[0].encode("utf-8", "surrogateescape") == b"\xc3\x28"
    assert tokens[1] == "fine"


def test_header_fields(open_bytes):
    writer = GGUFWriter(alignment=64)
    writer.add_tensor("a", np.ones(16, np.float32))
    data = writer.to_bytes()
    f = open_bytes(data)
    assert (f.version, f.byteorder, f.alignment, f.file_size) == (3, "<", 64, len(data))
    assert f.tensors["a"].offset == f.data_offset
    assert f.path.endswith(".gguf")
    assert "1 tensors" in repr(f)


def test_file_without_tensors_may_end_after_key_values(open_bytes):
    writer = GGUFWriter()
    writer.add("tokenizer.ggml.tokens", ["a", "b", "c"])
    data = writer.to_bytes()
    f = open_bytes(data)
    assert f.file_size == len(data)
    assert f.data_offset >= len(data) - 0  # padding was never written
    assert f.metadata["tokenizer.ggml.tokens"].tolist() == ["a", "b", "c"]


def test_string_array_is_lazy_and_sliceable(open_bytes):
    words = [f"tok{i}" for i in range(10_000)]
    writer = GGUFWriter()
    writer.add("tokens", words)
    tokens = open_bytes(writer).metadata["tokens"]
    assert len(tokens) == 10_000
    assert tokens[9_999] == "tok9999" and tokens[-10_000] == "tok0"
    assert tokens[10:20:3] == words[10:20:3]
    assert tokens[::-1][:2] == ["tok9999", "tok9998"]
    assert list(tokens) == words
    assert tokens == words
    with pytest.raises(IndexError):
        tokens[10_000]


class TestLifetime:
    """Arrays handed out keep the map alive after close() and after the file object is collected."""

    def make(self, gguf_path):
        writer = GGUFWriter()
        writer.add("nums", np.arange(100, dtype=np.int32))
        writer.add("words", ["alpha", "beta"])
        writer.add_tensor("t", np.arange(64, dtype=np.float32))
        return fastgguf.open(gguf_path(writer))

    def test_views_survive_close(self, gguf_path):
        f = self.make(gguf_path)
        raw, nums, words = f.tensors["t"].raw, f.metadata["nums"], f.metadata["words"]
        f.close()
        assert f.closed
        np.testing.assert_array_equal(raw.view(np.float32), np.arange(64, dtype=np.float32))
        np.testing.assert_array_equal(nums, np.arange(100))
        assert words.tolist() == ["alpha", "beta"]
        with pytest.raises(GGUFError, match="closed"):
            f.metadata

    def test_views_survive_garbage_collection(self, gguf_path):
        f = self.make(gguf_path)
        raw = f.tensors["t"].raw
        del f
        gc.collect()
        np.testing.assert_array_equal(raw.view(np.float32), np.arange(64, dtype=np.float32))

    def test_close_unmaps_when_nothing_is_exported(self, gguf_path):
        f = self.make(gguf_path)
        mapped = f._mmap
        f.metadata["nums"]  # decoded, then dropped below with the file's own caches
        f.close()
        assert mapped.closed

    def test_context_manager_closes(self, gguf_path):
        with self.make(gguf_path) as f:
            assert not f.closed
        assert f.closed
        f.close()  # idempotent


def test_opening_never_touches_tensor_data(tmp_path):
    """A file whose tensor data is an 8 GiB hole opens, lists tensors and hands out views without faulting it in."""
    import resource
    import struct

    n_elements = 2**31  # F32: 8 GiB of data, never written (a sparse file)
    name = b"huge"
    header = (b"GGUF" + struct.pack("<IQQ", 3, 1, 0)
              + struct.pack("<Q", len(name)) + name + struct.pack("<IQIQ", 1, n_elements, GGMLType.F32, 0))
    header += b"\0" * (-len(header) % 32)
    path = tmp_path / "sparse.gguf"
    with open(path, "wb") as handle:
        handle.write(header)
        handle.truncate(len(header) + n_elements * 4)
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    with fastgguf.open(path) as f:
        info = f.tensors["huge"]
        assert info.nbytes == n_elements * 4 and info.offset == len(header)
        assert info.raw.shape == (n_elements * 4,)
    grown_kib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before
    assert grown_kib < 64 * 1024
