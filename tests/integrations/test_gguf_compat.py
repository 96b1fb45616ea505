"""fastgguf.gguf_compat against gguf-py itself: every attribute of the reader, its fields and tensors,
and dequantize/quantize, on files written by gguf-py, by fastgguf, by hand (what fastgguf's strict
parser refuses but gguf-py reads), big- and little-endian; files gguf-py refuses are refused."""

from __future__ import annotations

import struct

import numpy as np
import pytest

from fastgguf import GGMLType, GGUFError, GGUFValueType as V, GGUFWriter, gguf_compat
from fastgguf.types import TYPE_TRAITS

gguf = pytest.importorskip("gguf")

from gguf_py_files import GGUF_PY_COMPARABLE_TYPES, write_with_gguf_py  # noqa: E402


def _same_array(ours, theirs, what) -> int:
    assert isinstance(ours, np.ndarray), what
    assert ours.dtype == theirs.dtype, (what, ours.dtype, theirs.dtype)  # byte order included
    assert ours.shape == theirs.shape, (what, ours.shape, theirs.shape)
    assert ours.tobytes() == theirs.tobytes(), what
    return 3


def _equal_or_both_nan(a, b) -> bool:
    return a == b or repr(a) == repr(b)  # NaN != NaN; their reprs (and a list of them) are equal


def _same_field(ours, theirs, what) -> int:
    assert (ours.offset, ours.name) == (theirs.offset, theirs.name), what
    assert list(ours.types) == list(theirs.types), what
    assert [type(t) for t in ours.types] == [type(t) for t in theirs.types], what
    assert list(ours.data) == list(theirs.data), what
    assert len(ours.parts) == len(theirs.parts), what
    compared = 5
    for index, (a, b) in enumerate(zip(ours.parts, theirs.parts)):
        compared += _same_array(a, b, (what, index))
    try:
        expected = theirs.contents()
    except UnicodeDecodeError:
        with pytest.raises(UnicodeDecodeError):
            ours.contents()
        return compared + 1
    got = ours.contents()
    assert type(got) is type(expected), what
    assert _equal_or_both_nan(got, expected), what
    if len(theirs.data) > 2:
        for selection in (1, -1, slice(1, 3), slice(None, None, 2)):
            assert _equal_or_both_nan(ours.contents(selection), theirs.contents(selection)), (what, selection)
    return compared + 1


def assert_reads_as_gguf_py(path) -> int:
    """Compare everything gguf-py's reader exposes; returns how many attributes were compared."""
    theirs = gguf.GGUFReader(path)
    ours = gguf_compat.GGUFReader(path)
    compared = 0
    for attribute in ("byte_order", "alignment", "data_offset", "endianess"):
        assert getattr(ours, attribute) == getattr(theirs, attribute), attribute
        assert type(getattr(ours, attribute)) is type(getattr(theirs, attribute)), attribute
        compared += 1
    _same_array(ours.data, theirs.data, "data")
    assert isinstance(ours.data, np.memmap)
    assert list(ours.fields) == list(theirs.fields)
    for name, field in theirs.fields.items():
        compared += _same_field(ours.fields[name], field, name)
        assert ours.get_field(name).offset == field.offset
    assert ours.get_field("no.such.key") is None
    assert len(ours.tensors) == len(theirs.tensors)
    for index, (a, b) in enumerate(zip(ours.tensors, theirs.tensors)):
        if b.tensor_type == gguf.GGMLQuantizationType.Q8_1:
            # gguf-py sizes a Q8_1 block at 40 bytes; ggml's (and so fastgguf's) is 36: two halves + 32 int8
            assert a.n_bytes == a.n_elements // 32 * 36
            continue
        assert (a.name, a.tensor_type, a.n_elements, a.n_bytes, a.data_offset) == \
            (b.name, b.tensor_type, b.n_elements, b.n_bytes, b.data_offset), b.name
        assert type(a.tensor_type) is type(b.tensor_type)
        compared += 5 + _same_array(a.shape, b.shape, b.name) + _same_array(a.data, b.data, b.name)
        compared += _same_field(a.field, b.field, b.name)
        assert ours.get_tensor(index).name == b.name
        try:
            with np.errstate(all="ignore"):  # random blocks: some scales are inf or NaN
                expected = gguf.quants.dequantize(b.data, b.tensor_type)
        except NotImplementedError:  # gguf-py 0.19 has no dequantizer for a few types (Q8_K, ...)
            pass
        except ValueError:  # gguf-py cannot reshape an empty quantized tensor; ours gives an empty array
            assert b.data.size == 0
            assert gguf_compat.dequantize(a.data, a.tensor_type).size == 0
        else:
            with np.errstate(all="ignore"):
                got = gguf_compat.dequantize(a.data, a.tensor_type)
            _same_array(got, expected, ("dequantize", b.name))
            compared += 1
    return compared


# --- files ------------------------------------------------------------------------------------------


@pytest.mark.parametrize("endianess", ["LITTLE", "BIG"])
def test_gguf_py_written_files(tmp_path, endianess):
    path = str(tmp_path / "theirs.gguf")
    write_with_gguf_py(path, gguf.GGUFEndian[endianess], np.random.default_rng(3), n_tensors=40)
    assert assert_reads_as_gguf_py(path) > 1000


def _every_value(writer: GGUFWriter) -> None:
    writer.add("general.architecture", "llama")
    for i, vtype in enumerate([V.UINT8, V.INT8, V.UINT16, V.INT16, V.UINT32, V.INT32, V.FLOAT32, V.BOOL,
                               V.UINT64, V.INT64, V.FLOAT64]):
        writer.add(f"s.{vtype.name}", True if vtype == V.BOOL else 7 * i + 1, vtype)
        writer.add(f"a.{vtype.name}", [i % 2 == 0, True] if vtype == V.BOOL else [i, 2 * i, 3 * i], V.ARRAY, vtype)
    writer.add("s.nan", float("nan"), V.FLOAT32)
    writer.add("s.string", "héllo 🙂")
    writer.add("a.string", ["", "x", "yz", "日本語"])
    writer.add("a.empty", [], V.ARRAY, V.INT32)
    writer.add("a.nested", [[1, 2], [3], []], V.ARRAY, V.ARRAY)
    writer.add("tokenizer.ggml.tokens", [f"▁tok{i}" for i in range(3000)])
    writer.add("tokenizer.ggml.scores", np.linspace(-1, 1, 3000, dtype=np.float32))


@pytest.mark.parametrize("alignment", [1, 32, 64])
@pytest.mark.parametrize("byteorder", ["<", ">"])
def test_fastgguf_written_files(gguf_path, byteorder, alignment):
    rng = np.random.default_rng(alignment)
    writer = GGUFWriter(byteorder=byteorder, alignment=alignment)
    _every_value(writer)
    for qtype in TYPE_TRAITS:
        traits = TYPE_TRAITS[qtype]
        if qtype.value not in {t.value for t in gguf.GGMLQuantizationType} or qtype == GGMLType.Q8_1:
            continue  # gguf-py cannot size these (Q8_1: it says 40-byte blocks, ggml 36)
        shape = (3, 2 * traits.block_size)
        nbytes = 6 * traits.type_size
        writer.add_tensor(f"t.{qtype.name}", rng.integers(0, 256, nbytes, dtype=np.uint8).tobytes(), qtype, shape)
    writer.add_tensor("t.scalar", np.array(2.5, np.float32).tobytes(), GGMLType.F32, ())
    writer.add_tensor("t.3d", np.arange(24, dtype=np.float32).tobytes(), GGMLType.F32, (2, 3, 4))
    assert assert_reads_as_gguf_py(gguf_path(writer)) > 1000


def test_real_shaped_vocabulary_is_lazy(gguf_path):
    writer = GGUFWriter()
    writer.add("general.architecture", "gemma3")
    tokens = [f"▁w{i}" for i in range(50_000)]
    writer.add("tokenizer.ggml.tokens", tokens)
    writer.add("tokenizer.ggml.token_type", np.ones(50_000, np.int32))
    reader = gguf_compat.GGUFReader(gguf_path(writer))
    field = reader.fields["tokenizer.ggml.tokens"]
    assert not isinstance(field.parts, list) and not isinstance(field.data, list)  # made on access
    assert len(field.parts) == 5 + 2 * 50_000 and len(field.data) == 50_000
    assert field.contents() == tokens
    assert field.contents(49_999) == tokens[-1]
    assert bytes(field.parts[field.data[123]]) == tokens[123].encode()
    assert reader.fields["tokenizer.ggml.token_type"].contents(slice(0, 3)) == [1, 1, 1]


def _header(kvs: list[bytes], tensors: list[bytes], version: int = 3) -> bytes:
    return b"GGUF" + struct.pack("<IQQ", version, len(tensors), len(kvs)) + b"".join(kvs) + b"".join(tensors)


def _string(text: bytes) -> bytes:
    return struct.pack("<Q", len(text)) + text


def _kv_u32(key: bytes, value: int) -> bytes:
    return _string(key) + struct.pack("<II", V.UINT32, value)


def _tensor(name: bytes, dims: tuple[int, ...], type_id: int, offset: int) -> bytes:
    return _string(name) + struct.pack("<I", len(dims)) + struct.pack(f"<{len(dims)}Q", *dims) + \
        struct.pack("<IQ", type_id, offset)


def _file(header: bytes, data: bytes, alignment: int = 32) -> bytes:
    return header + b"\0" * (-len(header) % alignment) + data


LENIENT_FILES = {
    # gguf-py reads these; fastgguf's own parser refuses them
    "misaligned tensor offset": _file(_header([_kv_u32(b"a", 1)], [_tensor(b"t0", (4,), 0, 0),
                                                                   _tensor(b"t1", (2,), 0, 16 + 4)]), bytes(64)),
    "five dimensions": _file(_header([], [_tensor(b"t", (1, 1, 2, 1, 1), 0, 0)]), bytes(8)),
    "empty key": _file(_header([_kv_u32(b"", 7)], []), b""),
}

EDGE_FILES = {
    # both read these: the padded data section would start past the end, but no tensor lives there
    "data section past the end, no tensors": _header([_kv_u32(b"general.alignment", 4096)], []),
    "no padding at all": _header([_kv_u32(b"a", 1)], []),
}


@pytest.mark.parametrize("name", EDGE_FILES)
def test_edge_files_read_as_gguf_py(gguf_path, name):
    assert assert_reads_as_gguf_py(gguf_path(EDGE_FILES[name])) > 5


@pytest.mark.parametrize("name", LENIENT_FILES)
def test_files_gguf_py_reads_are_never_refused(gguf_path, name):
    data = LENIENT_FILES[name]
    with pytest.raises(GGUFError):
        import fastgguf

        fastgguf.open(gguf_path(data))
    assert assert_reads_as_gguf_py(gguf_path(data)) > 5


REFUSED_FILES = {
    "bad magic": b"GGUX" + bytes(20),
    "version 1": b"GGUF" + struct.pack("<III", 1, 0, 0),
    "version 4": b"GGUF" + struct.pack("<IQQ", 4, 0, 0),
    "duplicate key": _header([_kv_u32(b"a", 1), _kv_u32(b"a", 2)], []),
    "duplicate tensor": _file(_header([], [_tensor(b"t", (2,), 0, 0), _tensor(b"t", (2,), 0, 0)]), bytes(8)),
    "unknown value type": _header([_string(b"k") + struct.pack("<I", 99)], []),
    "invalid UTF-8 key": _header([_kv_u32(b"\xff\xfe", 1)], []),
    "tensor data past the end": _file(_header([], [_tensor(b"t", (1000,), 0, 0)]), bytes(16)),
    "row not a block multiple": _file(_header([], [_tensor(b"t", (33,), GGMLType.Q4_0, 0)]), bytes(64)),
    "alignment not a power of two": _header([_kv_u32(b"general.alignment", 24)], []),
    "unknown tensor type": _file(_header([], [_tensor(b"t", (32,), 200, 0)]), bytes(64)),
}

CORRUPT_FILES = {
    # gguf-py reads a short value out of the first (numpy slices past the end silently) and tries to
    # allocate 2**62 array parts for the second; both are refused here, at the offset of the lie
    "truncated string": (_header([_string(b"k") + struct.pack("<IQ", V.STRING, 1000) + b"abc"], []), 37),
    "huge array count": (_header([_string(b"k") + struct.pack("<IIQ", V.ARRAY, V.UINT8, 2**62)], []), 37),
}


@pytest.mark.parametrize("name", CORRUPT_FILES)
def test_corrupt_files_gguf_py_misreads_are_refused(gguf_path, name):
    data, offset = CORRUPT_FILES[name]
    with pytest.raises(GGUFError) as error:
        gguf_compat.GGUFReader(gguf_path(data))
    assert error.value.offset == offset


@pytest.mark.parametrize("name", REFUSED_FILES)
def test_files_gguf_py_refuses_are_refused(gguf_path, name):
    path = gguf_path(REFUSED_FILES[name])
    with pytest.raises((ValueError, KeyError, IndexError)):
        gguf.GGUFReader(path)
    with pytest.raises(GGUFError) as error:
        gguf_compat.GGUFReader(path)
    if name == "duplicate key":
        assert isinstance(error.value, KeyError)  # gguf-py's exception type too


def test_fuzz_seeds_read_as_gguf_py(gguf_path):
    from fuzz.seeds import seed_files

    compared = 0
    for data in seed_files().values():
        path = gguf_path(data)
        try:
            gguf.GGUFReader(path)
        except Exception as error:
            if "not a valid GGMLQuantizationType" in str(error):  # a type newer than gguf-py's: read here
                assert any(type(t.tensor_type) is GGMLType for t in gguf_compat.GGUFReader(path).tensors)
                continue
            with pytest.raises(GGUFError):
                gguf_compat.GGUFReader(path)
            continue
        compared += assert_reads_as_gguf_py(path)
    assert compared > 100


def test_write_mode_writes_through(gguf_path):
    writer = GGUFWriter()
    writer.add("general.architecture", "llama")
    writer.add("x.u32", 5, V.UINT32)
    path = gguf_path(writer)
    reader = gguf_compat.GGUFReader(path, "r+")
    field = reader.fields["x.u32"]
    field.parts[field.data[0]][0] = 9
    reader.data.flush()
    del reader, field
    assert gguf.GGUFReader(path).fields["x.u32"].contents() == 9


# --- dequantize / quantize ------------------------------------------------------------------------


@pytest.mark.parametrize("qtype", GGUF_PY_COMPARABLE_TYPES, ids=lambda t: t.name)
def test_dequantize_same_bits_as_gguf_py(qtype):
    traits = TYPE_TRAITS[qtype]
    rng = np.random.default_rng(int(qtype))
    theirs_type = gguf.GGMLQuantizationType(int(qtype))
    blocks = rng.integers(0, 256, (3, 4 * traits.type_size), dtype=np.uint8)
    if qtype in (GGMLType.F16, GGMLType.BF16):
        blocks = rng.standard_normal((3, 4 * traits.type_size // 2)).astype(np.float16).view(np.uint8)
    if qtype == GGMLType.F32:
        blocks = rng.standard_normal((3, 4)).astype(np.float32).view(np.uint8)
    try:
        with np.errstate(all="ignore"):  # random blocks: some scales are inf or NaN
            expected = gguf.quants.dequantize(blocks, theirs_type)
    except NotImplementedError:
        pytest.skip(f"gguf-py has no dequantizer for {qtype.name}")
    with np.errstate(all="ignore"):
        got = gguf_compat.dequantize(blocks, theirs_type)
    assert got.dtype == expected.dtype and got.shape == expected.shape
    assert got.tobytes() == expected.tobytes()


@pytest.mark.parametrize("qtype", [GGMLType.F16, GGMLType.BF16, GGMLType.Q4_0, GGMLType.Q4_1, GGMLType.Q5_0,
                                   GGMLType.Q5_1, GGMLType.Q8_0, GGMLType.Q2_K, GGMLType.Q3_K, GGMLType.Q4_K,
                                   GGMLType.Q5_K, GGMLType.Q6_K, GGMLType.TQ1_0, GGMLType.TQ2_0, GGMLType.MXFP4],
                         ids=lambda t: t.name)
def test_quantize_same_bytes_as_gguf_py(qtype):
    theirs_type = gguf.GGMLQuantizationType(int(qtype))
    values = np.random.default_rng(int(qtype)).standard_normal((2, 3, 512)).astype(np.float32)
    try:
        expected = gguf.quants.quantize(values, theirs_type)
    except NotImplementedError:
        pytest.skip(f"gguf-py has no quantizer for {qtype.name}")
    got = gguf_compat.quantize(values, theirs_type)
    assert got.dtype == expected.dtype and got.shape == expected.shape
    assert got.tobytes() == expected.tobytes()


def test_quantize_errors_as_gguf_py():
    values = np.ones((2, 40), np.float32)
    with pytest.raises(gguf.quants.QuantError):
        gguf.quants.quantize(values, gguf.GGMLQuantizationType.Q4_0)
    with pytest.raises(gguf.quants.QuantError):
        gguf_compat.quantize(values, gguf.GGMLQuantizationType.Q4_0)
    with pytest.raises(ValueError, match="not a multiple"):
        gguf_compat.dequantize(np.zeros((2, 17), np.uint8), gguf.GGMLQuantizationType.Q4_0)
