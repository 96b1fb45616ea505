"""Hypothesis: structured mutations of valid files end in a fully readable file or GGUFError.

Files are rendered field by field from a drawn model, so that a mutation can lie in exactly one
field (a count, a length, a type, a dim, an offset, the alignment) while the rest stays well-formed;
truncation and byte splicing cover what is left.
"""

from __future__ import annotations

import struct
import sys
from dataclasses import dataclass

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

import fastgguf
from fastgguf import GGUFError, GGUFValueType as V
from fastgguf.types import TYPE_TRAITS

from conftest import TESTS

sys.path.insert(0, str(TESTS / "fuzz"))
import harness  # noqa: E402

SETTINGS = settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@dataclass
class Field:
    kind: str        # what the field means, e.g. "n_kv", "string_length", "dim"
    fmt: str         # struct format without byte order
    value: int


class Renderer:
    """A GGUF file as a list of typed fields and raw byte runs."""

    def __init__(self, version: int, byteorder: str) -> None:
        self.version, self.bo = version, byteorder
        self.len_fmt = "I" if version == 1 else "Q"
        self.parts: list = []

    def field(self, kind: str, fmt: str, value: int) -> None:
        self.parts.append(Field(kind, fmt, value))

    def raw(self, data: bytes) -> None:
        self.parts.append(bytes(data))

    def string(self, text: str, kind: str = "string_length") -> None:
        data = text.encode("utf-8", "surrogateescape")
        self.field(kind, self.len_fmt, len(data))
        self.raw(data)

    def value(self, vtype: int, value) -> None:
        if vtype == V.STRING:
            self.string(value)
        elif vtype == V.ARRAY:
            elem_type, items = value
            self.field("element_type", "I", elem_type)
            self.field("array_count", self.len_fmt, len(items))
            for item in items:
                self.value(elem_type, item)
        else:
            fmt = _SCALAR_FORMATS[vtype]
            self.raw(struct.pack(self.bo + fmt, value))

    def to_bytes(self) -> bytes:
        out = []
        for part in self.parts:
            if isinstance(part, Field):
                mask = (1 << (8 * struct.calcsize(part.fmt))) - 1
                out.append(struct.pack(self.bo + part.fmt, part.value & mask))
            else:
                out.append(part)
        return b"".join(out)


_SCALAR_FORMATS = {V.UINT8: "B", V.INT8: "b", V.UINT16: "H", V.INT16: "h", V.UINT32: "I", V.INT32: "i",
                   V.FLOAT32: "f", V.BOOL: "B", V.UINT64: "Q", V.INT64: "q", V.FLOAT64: "d"}
_SCALAR_VALUES = {
    V.UINT8: st.integers(0, 255), V.INT8: st.integers(-128, 127), V.UINT16: st.integers(0, 2**16 - 1),
    V.INT16: st.integers(-(2**15), 2**15 - 1), V.UINT32: st.integers(0, 2**32 - 1),
    V.INT32: st.integers(-(2**31), 2**31 - 1), V.FLOAT32: st.floats(width=32, allow_nan=False),
    V.BOOL: st.integers(0, 1), V.UINT64: st.integers(0, 2**64 - 1), V.INT64: st.integers(-(2**63), 2**63 - 1),
    V.FLOAT64: st.floats(allow_nan=False),
}
_TEXT = st.text(max_size=12)


_SCALARS = st.sampled_from(sorted(_SCALAR_VALUES)).flatmap(
    lambda t: st.tuples(st.just(int(t)), _SCALAR_VALUES[t]))
_LEAF_ARRAYS = st.one_of(
    st.sampled_from(sorted(_SCALAR_VALUES)).flatmap(
        lambda t: st.tuples(st.just(int(t)), st.lists(_SCALAR_VALUES[t], max_size=4))),
    st.tuples(st.just(int(V.STRING)), st.lists(_TEXT, max_size=4)),
)
# (element type, items) of arrays up to three levels deep.
_ARRAYS = st.recursive(_LEAF_ARRAYS, lambda inner: st.tuples(st.just(int(V.ARRAY)), st.lists(inner, max_size=3)),
                       max_leaves=6)
_VALUES = st.one_of(_SCALARS, st.tuples(st.just(int(V.STRING)), _TEXT), st.tuples(st.just(int(V.ARRAY)), _ARRAYS))


_TENSOR_TYPES = sorted(TYPE_TRAITS)


@st.composite
def models(draw):
    """A valid file's content: version, byte order, alignment, key/values, tensors."""
    version = draw(st.sampled_from([1, 2, 3]))
    byteorder = draw(st.sampled_from(["<", ">"]))
    alignment = draw(st.sampled_from([None, 1, 2, 16, 32, 64]))
    keys = draw(st.lists(st.text(min_size=1, max_size=10), unique=True, max_size=5))
    kvs = [(key, *draw(_VALUES)) for key in keys if key != "general.alignment"]
    tensors = []
    for name in draw(st.lists(st.text(max_size=6), unique=True, max_size=3)):
        ggml_type = draw(st.sampled_from(_TENSOR_TYPES))
        block = TYPE_TRAITS[ggml_type].block_size
        dims = [block * draw(st.integers(0, 2))] + draw(st.lists(st.integers(0, 3), max_size=3))
        tensors.append((name, dims, int(ggml_type)))
    seed = draw(st.integers(0, 2**32 - 1))
    return version, byteorder, alignment, kvs, tensors, seed


def render(model) -> Renderer:
    version, byteorder, alignment, kvs, tensors, seed = model
    r = Renderer(version, byteorder)
    r.raw(b"GGUF")
    r.field("version", "I", version)
    r.field("n_tensors", r.len_fmt, len(tensors))
    r.field("n_kv", r.len_fmt, len(kvs) + (alignment is not None))
    if alignment is not None:
        r.string("general.alignment", "key_length")
        r.field("value_type", "I", V.UINT32)
        r.field("alignment", "I", alignment)
    for key, vtype, value in kvs:
        r.string(key, "key_length")
        r.field("value_type", "I", vtype)
        r.value(vtype, value)
    # An alignment that is a lie is not honoured when laying out data: the file stays small.
    align = alignment if alignment and alignment <= 64 and not alignment & (alignment - 1) else 32
    offset, blobs = 0, []
    rng = np.random.default_rng(seed)
    for name, dims, ggml_type in tensors:
        r.string(name, "name_length")
        r.field("n_dims", "I", len(dims))
        for d in dims:
            r.field("dim", r.len_fmt, d)
        r.field("tensor_type", "I", ggml_type)
        r.field("tensor_offset", "Q", offset)
        traits = TYPE_TRAITS[ggml_type]
        nbytes = int(np.prod(dims)) // traits.block_size * traits.type_size
        blob = rng.integers(0, 256, nbytes, dtype=np.uint8).tobytes()
        blob += b"\0" * (-len(blob) % align)
        blobs.append(blob)
        offset += len(blob)
    if tensors:
        size = len(r.to_bytes())
        r.raw(b"\0" * (-size % align))
        for blob in blobs:
            r.raw(blob)
    return r


_INTERESTING = [0, 1, 2, 3, 4, 7, 8, 9, 12, 13, 31, 32, 33, 63, 64, 65, 255, 256, 2**16 - 1, 2**31 - 1,
                2**31, 2**32 - 1, 2**32, 2**40, 2**60, 2**62 + 1, 2**63 - 1, 2**63, 2**64 - 1, -1]


@pytest.fixture(scope="module")
def scratch(tmp_path_factory):
    return tmp_path_factory.mktemp("properties") / "mutant.gguf"


def check(scratch, data: bytes) -> bool:
    """The property: success with everything readable, or GGUFError; nothing else."""
    scratch.write_bytes(data)
    if not data:
        with pytest.raises(GGUFError):
            fastgguf.open(scratch)
        return False
    return harness.exercise_path(scratch)


@SETTINGS
@given(model=models())
def test_unmutated_models_open_and_read(scratch, model):
    assert check(scratch, render(model).to_bytes())
    version, byteorder, alignment, kvs, tensors, _ = model
    with fastgguf.open(scratch) as f:
        assert f.version == version and f.byteorder == byteorder
        assert list(f.tensors) == [t[0] for t in tensors]
        assert [k for k in f.metadata if k != "general.alignment"] == [kv[0] for kv in kvs]


@SETTINGS
@given(model=models(), data=st.data())
def test_one_lying_field_is_read_or_rejected(scratch, model, data):
    r = render(model)
    fields = [part for part in r.parts if isinstance(part, Field)]
    target = data.draw(st.sampled_from(fields))
    target.value = data.draw(st.one_of(st.sampled_from(_INTERESTING), st.integers(0, 2**64 - 1),
                                       st.integers(target.value - 3, target.value + 3)))
    check(scratch, r.to_bytes())


@SETTINGS
@given(model=models(), data=st.data())
def test_several_lying_fields_are_read_or_rejected(scratch, model, data):
    r = render(model)
    fields = [part for part in r.parts if isinstance(part, Field)]
    for target in data.draw(st.lists(st.sampled_from(fields), min_size=2, max_size=5)):
        target.value = data.draw(st.sampled_from(_INTERESTING))
    check(scratch, r.to_bytes())


@SETTINGS
@given(model=models(), odd=st.integers(0, 2**32 - 1).filter(lambda a: a & (a - 1)))
def test_alignment_that_is_not_a_power_of_two_is_rejected(scratch, model, odd):
    version, byteorder, _, kvs, tensors, seed = model
    data = render((version, byteorder, odd, kvs, tensors, seed)).to_bytes()
    scratch.write_bytes(data)
    with pytest.raises(GGUFError, match="alignment"):
        fastgguf.open(scratch)


@SETTINGS
@given(model=models(), data=st.data())
def test_truncation_anywhere_is_read_or_rejected(scratch, model, data):
    full = render(model).to_bytes()
    cut = data.draw(st.integers(0, len(full) - 1))
    opened = check(scratch, full[:cut])
    # Only the tail of the data section may be lost and still open: the header is all needed.
    assert not opened or not model[4] or cut >= len(full) - len(render(model).parts[-1])


@SETTINGS
@given(model=models(), data=st.data())
def test_spliced_bytes_are_read_or_rejected(scratch, model, data):
    full = bytearray(render(model).to_bytes())
    for _ in range(data.draw(st.integers(1, 4))):
        at = data.draw(st.integers(0, len(full)))
        action = data.draw(st.sampled_from(["insert", "delete", "overwrite"]))
        chunk = data.draw(st.binary(min_size=1, max_size=9))
        if action == "insert":
            full[at:at] = chunk
        elif action == "delete":
            del full[at:at + len(chunk)]
        else:
            full[at:at + len(chunk)] = chunk
    check(scratch, bytes(full))
