"""Files built byte by byte with struct.pack: v1, big-endian, every rejection rule, truncation everywhere."""

from __future__ import annotations

import struct

import numpy as np
import pytest

import fastgguf
from fastgguf import GGMLType, GGUFError, GGUFValueType as V, GGUFWriter


class Builder:
    """Pack GGUF pieces by hand, independent of GGUFWriter."""

    def __init__(self, version: int = 3, byteorder: str = "<") -> None:
        self.version = version
        self.bo = byteorder
        self.count = byteorder + ("I" if version == 1 else "Q")

    def pack(self, fmt: str, *values) -> bytes:
        return struct.pack(self.bo + fmt, *values)

    def string(self, text: str | bytes, length: int | None = None) -> bytes:
        raw = text.encode() if isinstance(text, str) else text
        return struct.pack(self.count, len(raw) if length is None else length) + raw

    def header(self, n_tensors: int, n_kv: int, magic: bytes = b"GGUF", version: int | None = None) -> bytes:
        return magic + self.pack("I", self.version if version is None else version) + struct.pack(
            self.count, n_tensors) + struct.pack(self.count, n_kv)

    def kv(self, key: str | bytes, vtype: int, payload: bytes) -> bytes:
        return self.string(key) + self.pack("I", vtype) + payload

    def array(self, elem_type: int, count: int, payload: bytes) -> bytes:
        return self.pack("I", elem_type) + struct.pack(self.count, count) + payload

    def tensor(self, name: str | bytes, dims, ggml_type: int, offset: int, n_dims: int | None = None) -> bytes:
        return (self.string(name) + self.pack("I", len(dims) if n_dims is None else n_dims)
                + b"".join(struct.pack(self.count, d) for d in dims) + self.pack("I", ggml_type)
                + self.pack("Q", offset))

    def file(self, kvs=(), tensors=(), data: bytes = b"", alignment: int = 32, pad: bool = True) -> bytes:
        head = self.header(len(tensors), len(kvs)) + b"".join(kvs) + b"".join(tensors)
        if pad:
            head += b"\0" * (-len(head) % alignment)
        return head + data


def f32_tensor_file(b: Builder, name="w", dims=(4, 2)) -> bytes:
    values = np.arange(8, dtype=np.dtype(b.bo + "f4"))
    return b.file(kvs=[b.kv("general.architecture", V.STRING, b.string("llama"))],
                  tensors=[b.tensor(name, dims, GGMLType.F32, 0)], data=values.tobytes())


@pytest.mark.parametrize("byteorder", ["<", ">"])
@pytest.mark.parametrize("version", [1, 2, 3])
def test_handbuilt_file_parses(open_bytes, version, byteorder):
    b = Builder(version, byteorder)
    kvs = [
        b.kv("general.name", V.STRING, b.string("tiny")),
        b.kv("n.u32", V.UINT32, b.pack("I", 7)),
        b.kv("n.i16", V.INT16, b.pack("h", -2)),
        b.kv("n.f32", V.FLOAT32, b.pack("f", 0.5)),
        b.kv("n.f64", V.FLOAT64, b.pack("d", -0.25)),
        b.kv("n.bool", V.BOOL, b"\x01"),
        b.kv("a.i32", V.ARRAY, b.array(V.INT32, 3, b.pack("3i", 1, -2, 3))),
        b.kv("a.str", V.ARRAY, b.array(V.STRING, 2, b.string("x") + b.string(""))),
        b.kv("a.nested", V.ARRAY, b.array(V.ARRAY, 2, b.array(V.UINT8, 1, b"\x09") + b.array(V.UINT8, 0, b""))),
    ]
    values = np.arange(8, dtype=np.dtype(byteorder + "f4"))
    data = b.file(kvs=kvs, tensors=[b.tensor("w", (4, 2), GGMLType.F32, 0)], data=values.tobytes())
    f = open_bytes(data)
    assert (f.version, f.byteorder) == (version, byteorder)
    md = f.metadata
    assert md["general.name"] == "tiny"
    assert (md["n.u32"], md["n.i16"], md["n.f32"], md["n.f64"], md["n.bool"]) == (7, -2, 0.5, -0.25, True)
    assert md["a.i32"].tolist() == [1, -2, 3]
    assert md["a.str"].tolist() == ["x", ""]
    assert [a.tolist() for a in md["a.nested"]] == [[9], []]
    info = f.tensors["w"]
    assert info.shape == (2, 4) and info.type == GGMLType.F32
    assert info.offset == f.data_offset and f.data_offset % 32 == 0
    np.testing.assert_array_equal(info.raw.view(values.dtype), values)


def test_big_endian_is_detected_from_the_swapped_version(open_bytes):
    b = Builder(3, ">")
    data = b.file(kvs=[b.kv("k", V.UINT16, b.pack("H", 0x0102))])
    assert data[4:8] == b"\x00\x00\x00\x03"
    f = open_bytes(data)
    assert f.byteorder == ">" and f.metadata["k"] == 0x0102


# Each rejection rule: (id, builder of the corrupt file, message fragment, expected offset or None).
def _rules():
    b = Builder()
    ok_kv = b.kv("general.architecture", V.STRING, b.string("llama"))
    f32 = np.arange(8, dtype=np.float32).tobytes()

    def tensor_file(*tensors, data=f32, kvs=(ok_kv,)):
        return b.file(kvs=kvs, tensors=list(tensors), data=data)

    big = 1 << 60
    yield "empty file", b"", "empty", 0
    yield "bad magic", b.file().replace(b"GGUF", b"GGML", 1), "magic", 0
    yield "version 0", b.header(0, 0, version=0), "version 0", 4
    yield "version 4", b.header(0, 0, version=4), "version 4", 4
    yield "big-endian version 4", Builder(3, ">").header(0, 0, version=4), "version 4", 4
    yield "huge kv count", b.header(0, big), "key/value count", 16
    yield "huge tensor count", b.header(big, 0), "tensor count", 8
    yield "string over 1 GiB", b.header(0, 1) + b.string("k", length=(1 << 30) + 1) + b"\0" * 10, "1 GiB", 24
    yield "string past end", b.header(0, 1) + b.string("abc", length=100) + b"\0" * 10, "only 13 remain", 24
    yield "array past end", b.header(0, 1) + b.kv("a", V.ARRAY, b.array(V.UINT32, 5, b"\0" * 19)), "cannot fit", 37
    yield "huge string array", b.header(0, 1) + b.kv("a", V.ARRAY, b.array(V.STRING, big, b"")), "cannot fit", 37
    yield "empty key", b.file(kvs=[b.kv("", V.UINT8, b"\0")]), "empty key", 24
    yield "duplicate key", b.file(kvs=[b.kv("k", V.UINT8, b"\0"), b.kv("k", V.UINT8, b"\0")]), "duplicate key", 38
    yield "value type 13", b.file(kvs=[b.kv("k", 13, b"\0")]), "value type 13", 33
    yield "array element type 13", b.file(kvs=[b.kv("k", V.ARRAY, b.array(13, 0, b""))]), "element type 13", 37
    yield ("alignment not UINT32", b.file(kvs=[b.kv("general.alignment", V.UINT64, b.pack("Q", 32))]),
           "must be a UINT32", 53)
    yield ("alignment 0", b.file(kvs=[b.kv("general.alignment", V.UINT32, b.pack("I", 0))]),
           "power of two", 53)
    yield ("alignment 48", b.file(kvs=[b.kv("general.alignment", V.UINT32, b.pack("I", 48))]),
           "power of two", 53)
    yield "name of 64 bytes", tensor_file(b.tensor("n" * 64, (4, 2), GGMLType.F32, 0)), "names must be under", 69
    yield ("duplicate tensor", tensor_file(b.tensor("w", (8,), GGMLType.F32, 0), b.tensor("w", (8,), GGMLType.F32, 0)),
           "duplicate tensor", None)
    yield "5 dims", tensor_file(b.tensor("w", (1, 1, 1, 1, 8), GGMLType.F32, 0)), "5 dimensions", None
    yield "negative dim", tensor_file(b.tensor("w", (8, 1 << 63), GGMLType.F32, 0)), "negative", None
    yield "element overflow", tensor_file(b.tensor("w", (1 << 32, 1 << 32), GGMLType.F32, 0)), "overflows", None
    yield "byte size overflow", tensor_file(b.tensor("w", (1 << 31, 1 << 31), GGMLType.F32, 0)), "byte size", None
    yield "unknown type", tensor_file(b.tensor("w", (8,), 99, 0)), "unknown ggml type id 99", None
    yield "removed type", tensor_file(b.tensor("w", (32,), 4, 0)), "removed ggml type id 4", None
    yield "ne0 not a block multiple", tensor_file(b.tensor("w", (16, 2), GGMLType.Q4_0, 0)), "block size 32", None
    yield ("data section past end", b.header(1, 0) + b.tensor("w", (8,), GGMLType.F32, 0),
           "past the end", None)
    yield "data past end", tensor_file(b.tensor("w", (16,), GGMLType.F32, 0)), "extends past the end", None
    yield "misaligned offset", tensor_file(b.tensor("w", (2,), GGMLType.F32, 4)), "not a multiple of the alignment", None
    nested = b.array(V.UINT8, 0, b"")
    for _ in range(40):
        nested = b.array(V.ARRAY, 1, nested)
    yield "nesting too deep", b.file(kvs=[b.kv("k", V.ARRAY, nested)]), "nested more than", None


RULES = list(_rules())


@pytest.mark.parametrize(("data", "message", "offset"), [r[1:] for r in RULES], ids=[r[0] for r in RULES])
def test_each_rejection_rule(gguf_path, data, message, offset):
    with pytest.raises(GGUFError, match=message) as caught:
        fastgguf.open(gguf_path(data))
    assert isinstance(caught.value, ValueError)
    assert caught.value.offset is not None
    assert "at byte" in str(caught.value)
    if offset is not None:
        assert caught.value.offset == offset


def test_contiguity_is_not_required(open_bytes):
    """Unlike ggml, tensors may sit anywhere in the data section, in any order."""
    b = Builder()
    data = np.arange(24, dtype=np.float32).tobytes()
    f = open_bytes(b.file(tensors=[b.tensor("late", (8,), GGMLType.F32, 64), b.tensor("early", (8,), GGMLType.F32, 0)],
                          data=data + b"\0" * 8))
    np.testing.assert_array_equal(f.tensors["late"].raw.view(np.float32), np.arange(16, 24))
    np.testing.assert_array_equal(f.tensors["early"].raw.view(np.float32), np.arange(8))


def every_value_type_file(byteorder: str) -> bytes:
    w = GGUFWriter(byteorder=byteorder, alignment=8)
    for vtype in (V.UINT8, V.INT8, V.UINT16, V.INT16, V.UINT32, V.INT32, V.FLOAT32, V.UINT64, V.INT64, V.FLOAT64):
        w.add(f"s{vtype}", 1, vtype)
        w.add(f"a{vtype}", [1, 2], V.ARRAY, vtype)
    w.add("b", True)
    w.add("str", "text")
    w.add("strs", ["a", "bc", ""])
    w.add("nested", [[1, 2], [3]])
    w.add_tensor("q", bytes(range(36)), GGMLType.Q4_0, (2, 32))
    w.add_tensor("f", np.ones((2, 3), np.float32))
    return w.to_bytes()


@pytest.mark.parametrize("byteorder", ["<", ">"])
def test_truncation_at_every_header_offset(gguf_path, byteorder, read_everything):
    data = every_value_type_file(byteorder)
    with fastgguf.open(gguf_path(data)) as whole:
        header_end = whole.data_offset
        tensor_ends = max(t.offset + t.nbytes for t in whole.tensors.values())
    for cut in range(0, tensor_ends):
        path = gguf_path(data[:cut])
        try:
            f = fastgguf.open(path)
        except GGUFError as error:
            assert error.offset is not None and error.offset <= max(cut, header_end)
            continue
        # A cut can only leave a complete file if it drops nothing the header points at.
        with f:
            read_everything(f)
            assert cut >= header_end
    assert cut == tensor_ends - 1


def test_truncated_v1_file(gguf_path):
    b = Builder(1)
    data = f32_tensor_file(b)
    for cut in range(len(data)):
        with pytest.raises(GGUFError):
            fastgguf.open(gguf_path(data[:cut]))
    with fastgguf.open(gguf_path(data)) as f:
        assert f.version == 1 and f.tensors["w"].shape == (2, 4)
