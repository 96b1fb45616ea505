"""gguf-py's public reading API (``GGUFReader``, ``ReaderField``, ``ReaderTensor``, ``dequantize``,
``quantize``) on fastgguf's core.

The objects have gguf-py 0.19's attributes, values, dtypes, shapes and byte orders, so code written
for ``gguf.GGUFReader`` runs unchanged; what differs is the cost. gguf-py walks the header in
Python and makes a numpy view per string and per array element before returning (tens of seconds
for a 262k-token vocabulary); here the header is walked by fastgguf's Cython cursor, and a field's
``parts`` and ``data`` are lazy sequences that make gguf-py's numpy parts only when indexed.
``field.contents()`` of a string or numeric array decodes the whole array in one call.
Dequantizing and quantizing run on fastgguf's kernels (bit-identical to gguf-py's and ggml's).

Differences, each deliberate:

- every error a file causes is a :class:`fastgguf.GGUFError` (a ``ValueError``, as gguf-py's are);
  a duplicate key's is also a ``KeyError``, as gguf-py's is;
- ``parts`` / ``data`` are read-only sequences, not lists; the arrays in them are plain numpy views
  of ``reader.data`` (the ``np.memmap``), not ``np.memmap`` instances;
- Q8_1 tensors are sized as ggml sizes them (36-byte blocks; gguf-py 0.19 says 40), and tensor types
  gguf-py does not know yet are read (as fastgguf's :class:`~fastgguf.GGMLType`) instead of refused.

fastgguf's own parser is stricter than gguf-py in a few places (tensor data offsets must respect the
alignment, at most 4 dimensions, non-empty keys, ...). A file it refuses for such a reason is read
again by a plain Python walk that accepts what gguf-py accepts: a file gguf-py reads is never refused.
"""

from __future__ import annotations

import operator
import os
import sys
from collections import OrderedDict
from collections.abc import Callable, Iterator, Sequence
from enum import IntEnum
from typing import Any, NamedTuple

import numpy as np

from . import _parser
from .errors import GGUFError
from .types import TYPE_TRAITS, GGMLType, GGUFValueType as _V

__all__ = ["GGUFReader", "ReaderField", "ReaderTensor", "dequantize", "quantize", "GGUF_DEFAULT_ALIGNMENT"]

GGUF_DEFAULT_ALIGNMENT = 32
_MAGIC = 0x46554747  # "GGUF" read as a little-endian uint32
_SUPPORTED_VERSIONS = (2, 3)  # as gguf-py: version 1 (32-bit lengths) is refused

try:  # gguf-py's enums when it is installed, so values compare and print as gguf-py's do
    from gguf.constants import GGMLQuantizationType as _QuantType, GGUFEndian, GGUFValueType
except ImportError:  # pragma: no cover - exercised only without gguf
    GGUFValueType = _V  # type: ignore[misc, assignment]
    _QuantType = GGMLType  # type: ignore[misc, assignment]

    class GGUFEndian(IntEnum):  # type: ignore[no-redef]
        """gguf-py's name for a file's byte order."""

        LITTLE = 0
        BIG = 1


_SCALAR_DTYPES: dict[int, type[np.generic]] = {
    _V.UINT8: np.uint8, _V.INT8: np.int8, _V.UINT16: np.uint16, _V.INT16: np.int16,
    _V.UINT32: np.uint32, _V.INT32: np.int32, _V.FLOAT32: np.float32, _V.UINT64: np.uint64,
    _V.INT64: np.int64, _V.FLOAT64: np.float64, _V.BOOL: np.bool_,
}
# tensor types gguf-py hands out as typed arrays (of the element count); all others are uint8 blocks
_TYPED_TENSORS: dict[int, type[np.generic]] = {
    GGMLType.F16: np.float16, GGMLType.F32: np.float32, GGMLType.F64: np.float64, GGMLType.I8: np.int8,
    GGMLType.I16: np.int16, GGMLType.I32: np.int32, GGMLType.I64: np.int64,
}


class _DuplicateKeyError(GGUFError, KeyError):
    """A key appears twice: gguf-py raises ``KeyError`` for it, fastgguf ``GGUFError``; this is both."""

    __str__ = GGUFError.__str__  # KeyError's would quote the message


def _value_type(raw: int) -> Any:
    return GGUFValueType(raw)


def _tensor_type(raw: int) -> Any:
    """gguf-py's enum member for ``raw``; fastgguf's for a type gguf-py does not know yet."""
    try:
        return _QuantType(raw)
    except ValueError:
        return GGMLType(raw)


# --- lazy sequences ------------------------------------------------------------------------------


class _Lazy(Sequence):
    """A read-only sequence whose items are made on access by ``item(i)``."""

    __slots__ = ("_length", "_item")

    def __init__(self, length: int, item: Callable[[int], Any]) -> None:
        self._length = length
        self._item = item

    def __len__(self) -> int:
        return self._length

    def __getitem__(self, index):
        if type(index) is int and 0 <= index < self._length:  # the common case, first
            return self._item(index)
        if isinstance(index, slice):
            return [self._item(i) for i in range(*index.indices(self._length))]
        i = operator.index(index)
        if i < 0:
            i += self._length
        if not 0 <= i < self._length:
            raise IndexError("index out of range")
        return self._item(i)

    def __iter__(self) -> Iterator[Any]:
        return map(self._item, range(self._length))

    def __eq__(self, other: object) -> bool:
        if isinstance(other, (list, tuple, _Lazy)):
            return len(self) == len(other) and all(a == b for a, b in zip(self, other))
        return NotImplemented

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        shown = ", ".join(repr(x) for x in self[:4])
        return f"[{shown}{', ...' if self._length > 4 else ''}] ({self._length} items, made on access)"


class _ArrayParts(_Lazy):
    """``parts`` of a string or numeric array field, which can also decode the whole array at once."""

    __slots__ = ("_reader", "_offsets", "_first")

    def __init__(self, length: int, item: Callable[[int], Any], reader: GGUFReader, offsets: Any, first: int) -> None:
        super().__init__(length, item)
        self._reader, self._offsets, self._first = reader, offsets, first

    def contents(self, sub: Any, data: Sequence[int], index_or_slice: int | slice) -> Any:
        """``ReaderField.contents`` of the array, in one call for a slice."""
        reader = self._reader
        count = len(data)
        if sub == _V.STRING:
            if isinstance(index_or_slice, int):
                return _utf8(self[data[index_or_slice]])
            strings = _parser.decode_strings(reader._buffer, np.ascontiguousarray(self._offsets[index_or_slice]),
                                             True, reader._swap)
            try:
                "".join(strings).encode("utf-8")
            except UnicodeEncodeError:  # undecodable bytes: fail as gguf-py does, on the first bad string
                for i in data[index_or_slice]:
                    _utf8(self[i])
            return strings
        values = reader._view(self._first, _SCALAR_DTYPES[sub], count)
        if isinstance(index_or_slice, int):
            return values[range(count)[index_or_slice]].tolist()
        return values[index_or_slice].tolist()


class _Indices(_Lazy):
    """``data`` of an array field: ``first, first + step, ...`` (a list for a slice, as gguf-py's)."""

    __slots__ = ()

    def __init__(self, first: int, step: int, count: int) -> None:
        super().__init__(count, range(first, first + step * count, step).__getitem__)


# --- the records ---------------------------------------------------------------------------------


class ReaderField(NamedTuple):
    """One metadata key/value (or tensor info) as gguf-py describes it: the raw numpy parts of its
    bytes, which of them hold the data, and its value types."""

    offset: int
    name: str
    parts: Sequence[np.ndarray] = []
    data: Sequence[int] = [-1]
    types: list[Any] = []

    def contents(self, index_or_slice: int | slice = slice(None)) -> Any:
        """The value as Python objects (gguf-py's ``ReaderField.contents``)."""
        if not self.types:
            return None
        main = self.types[0]
        if main == _V.ARRAY:
            sub = self.types[-1]
            if isinstance(self.parts, _ArrayParts) and len(self.types) == 2:
                return self.parts.contents(sub, self.data, index_or_slice)
            if sub == _V.STRING:
                if isinstance(index_or_slice, int):
                    return _utf8(self.parts[self.data[index_or_slice]])
                return [_utf8(self.parts[i]) for i in self.data[index_or_slice]]
            if isinstance(index_or_slice, int):
                return self.parts[self.data[index_or_slice]].tolist()[0]
            return [value for i in self.data[index_or_slice] for value in self.parts[i].tolist()]
        if main == _V.STRING:
            return _utf8(self.parts[-1])
        return self.parts[-1].tolist()[0]


def _utf8(part: np.ndarray) -> str:
    return str(part.tobytes(), encoding="utf-8")


class ReaderTensor(NamedTuple):
    """One tensor as gguf-py describes it; ``data`` is a view of the file's bytes (typed for float and
    integer tensors, uint8 blocks of shape ``(..., row_bytes)`` for block types)."""

    name: str
    tensor_type: Any
    shape: np.ndarray
    n_elements: int
    n_bytes: int
    data_offset: int
    data: np.ndarray
    field: ReaderField


# --- the reader ----------------------------------------------------------------------------------


class GGUFReader:
    """gguf-py's ``GGUFReader`` on fastgguf's parse: same attributes, lazily made.

    Parameters
    ----------
    path : str or os.PathLike
        The GGUF file.
    mode : {"r", "r+", "c"}
        ``np.memmap``'s mode: read-only, read-write (writes through the parts go to the file),
        copy-on-write.
    """

    byte_order = "I"  # "I": the host's; "S": swapped
    alignment: Any = GGUF_DEFAULT_ALIGNMENT
    data_offset: int
    gguf_scalar_to_np: dict[Any, type[np.generic]] = {GGUFValueType(k): v for k, v in _SCALAR_DTYPES.items()}

    def __init__(self, path: os.PathLike[str] | str, mode: str = "r") -> None:
        self.data = np.memmap(path, mode=mode)  # type: ignore[call-overload]
        self._bytes = self.data.view(np.ndarray)  # plain views of the map: no memmap bookkeeping per part
        self._buffer = memoryview(self._bytes)
        self._init_byte_order()
        self.fields: OrderedDict[str, ReaderField] = OrderedDict()
        self.tensors: list[ReaderTensor] = []
        self._push_pseudo_fields()
        try:
            header = _parser.parse(self._buffer)
        except GGUFError as strict:
            # fastgguf refuses some files gguf-py reads (misaligned tensor offsets, > 4 dims, ...)
            try:
                infos, infos_end = _PythonWalk(self).run()
            except GGUFError as lenient:
                raise (lenient if isinstance(lenient, _DuplicateKeyError) else strict) from None
        else:
            infos, infos_end = self._fields_from(header)
        alignment = self.fields.get("general.alignment")
        if alignment is not None:
            self.alignment = alignment.parts[-1][0]
        # gguf-py's arithmetic, so the type is gguf-py's too (numpy.uint32 when padded to a stored alignment)
        padding = infos_end % self.alignment
        self.data_offset = infos_end + (self.alignment - padding) if padding else infos_end
        self._build_tensors(int(self.data_offset), infos)

    # -- helpers gguf-py has too (with gguf-py's behaviour) --

    def get_field(self, key: str) -> ReaderField | None:
        """The field named ``key``, or None."""
        return self.fields.get(key, None)

    def get_tensor(self, idx: int) -> ReaderTensor:
        """The ``idx``-th tensor."""
        return self.tensors[idx]

    # -- the walk --

    def _dtype(self, dtype: Any) -> np.dtype:
        return np.dtype(dtype).newbyteorder(self.byte_order)

    def _view(self, offset: int, dtype: Any, count: int = 1) -> np.ndarray:
        """``count`` items of ``dtype`` (the file's byte order) at ``offset``: a view of the map."""
        dt = self._dtype(dtype)
        end = offset + dt.itemsize * count
        if offset < 0 or end > self._bytes.size:
            raise GGUFError(f"{count} x {dt} extends past the end of the {self._bytes.size}-byte file", offset)
        return self._bytes[offset:end].view(dt)

    def _init_byte_order(self) -> None:
        if self._bytes.size < 8 or int(self._bytes[:4].view("<u4")[0]) != _MAGIC:
            raise GGUFError("GGUF magic invalid", 0)
        version = self._view(4, np.uint32)
        if int(version[0]) & 0xFFFF == 0:  # written on a host of the other byte order
            self.byte_order = "S"
            version = self._view(4, np.uint32)
        if int(version[0]) not in _SUPPORTED_VERSIONS:
            raise GGUFError(f"file appears to be GGUF version {int(version[0])}, which gguf-py cannot read", 4)
        self._swap = self.byte_order == "S"
        host_big = sys.byteorder == "big"
        self.endianess = GGUFEndian.BIG if host_big != self._swap else GGUFEndian.LITTLE
        self._version = version

    def _push_pseudo_fields(self) -> None:
        counts = self._view(8, np.uint64, 2)
        uint32, uint64 = _value_type(_V.UINT32), _value_type(_V.UINT64)
        self.fields["GGUF.version"] = ReaderField(4, "GGUF.version", [self._version], [0], [uint32])
        self.fields["GGUF.tensor_count"] = ReaderField(8, "GGUF.tensor_count", [counts[:1]], [0], [uint64])
        self.fields["GGUF.kv_count"] = ReaderField(16, "GGUF.kv_count", [counts[1:]], [0], [uint64])

    def _fields_from(self, header) -> tuple[list[tuple[str, int]], int]:
        """Fields from fastgguf's parse; returns ``([(tensor name, info offset)], end of the tensor infos)``."""
        for kv in header.kvs:
            if not _valid_utf8(kv.key):
                raise GGUFError("a key is not valid UTF-8", kv.key_offset)
            self.fields[kv.key] = self._field(kv)
        infos = []
        offset = header.tensor_infos_offset
        for name, dims, *_ in header.tensors:
            if not _valid_utf8(name):
                raise GGUFError("a tensor name is not valid UTF-8", offset)
            infos.append((name, offset))
            offset += 8 + len(name.encode("utf-8")) + 4 + 8 * len(dims) + 4 + 8
        return infos, offset

    def _field(self, kv) -> ReaderField:
        key_length = kv.value_offset - 4 - kv.key_offset - 8
        head = [(kv.key_offset, np.uint64, 1), (kv.key_offset + 8, np.uint8, key_length),
                (kv.value_offset - 4, np.uint32, 1)]
        vtype = kv.value_type
        if vtype == _V.STRING:
            length = int(self._view(kv.value_offset, np.uint64)[0])
            head += [(kv.value_offset, np.uint64, 1), (kv.value_offset + 8, np.uint8, length)]
            return self._make_field(kv, head, [4], [_value_type(vtype)])
        if vtype != _V.ARRAY:
            head.append((kv.value_offset, _SCALAR_DTYPES[vtype], 1))
            return self._make_field(kv, head, [3], [_value_type(vtype)])
        head += [(kv.value_offset, np.uint32, 1), (kv.value_offset + 4, np.uint64, 1)]
        element, count = kv.element_type, kv.count
        if element == _V.ARRAY:  # nested arrays: rare and small, made as gguf-py makes them
            _, parts, data, types = _PythonWalk(self).value_parts(kv.value_offset, _V.ARRAY)
            views = [self._view(*spec) for spec in head[:3]] + parts
            return ReaderField(kv.key_offset, kv.key, views, [3 + i for i in data], types)
        types = [_value_type(_V.ARRAY)] + ([_value_type(element)] if count else [])
        if element == _V.STRING:
            # the parse validated every length: the per-string parts are made with no further checks
            offsets = kv.element_offsets.tolist()
            raw, u64 = self._bytes, self._dtype(np.uint64)

            def string_part(i: int) -> np.ndarray:
                start = offsets[i >> 1]
                if not i & 1:
                    return raw[start:start + 8].view(u64)
                length = int(raw[start:start + 8].view(u64)[0])
                return raw[start + 8:start + 8 + length]

            strings = _ArrayParts(5 + 2 * count, _chain(self, head, string_part), self, kv.element_offsets, 0)
            return ReaderField(kv.key_offset, kv.key, strings, _Indices(6, 2, count), types)
        first = kv.data_offset
        values = self._view(first, _SCALAR_DTYPES[element], count)
        numbers = _ArrayParts(5 + count, _chain(self, head, lambda i: values[i:i + 1]), self, None, first)
        return ReaderField(kv.key_offset, kv.key, numbers, _Indices(5, 1, count), types)

    def _make_field(self, kv, specs, data, types) -> ReaderField:
        return ReaderField(kv.key_offset, kv.key, [self._view(*spec) for spec in specs], data, types)

    def _build_tensors(self, start: int, infos: list[tuple[str, int]]) -> None:
        tensors = []
        for name, info_offset in infos:
            field = self._tensor_field(name, info_offset)
            _, _, _, dims, raw_type, relative = field.parts
            try:
                ggml_type = _tensor_type(int(raw_type[0]))
            except ValueError:
                raise GGUFError(f"tensor {name!r} has the unknown ggml type {int(raw_type[0])}", info_offset) from None
            traits = TYPE_TRAITS.get(GGMLType(int(ggml_type)))
            if traits is None:
                raise GGUFError(f"tensor {name!r} has the removed ggml type {int(raw_type[0])}", info_offset)
            n_elements = int(np.prod(dims))
            block_size, type_size = traits
            n_bytes = n_elements * type_size // block_size
            data_offset = int(start + relative[0])
            np_dims = tuple(reversed(dims.tolist()))
            item = _TYPED_TENSORS.get(int(ggml_type))
            if item is None:
                if np_dims and np_dims[-1] % block_size:
                    raise GGUFError(f"tensor {name!r}: row size {np_dims[-1]} is not a multiple of the "
                                    f"{ggml_type.name} block size {block_size}", info_offset)
                if np_dims:
                    np_dims = (*np_dims[:-1], np_dims[-1] // block_size * type_size)
                item, count = np.uint8, n_bytes
            else:
                count = n_elements
            data = self._view(data_offset, item, count).reshape(np_dims)
            tensors.append(ReaderTensor(name, ggml_type, dims, n_elements, n_bytes, data_offset, data, field))
        self.tensors = tensors

    def _tensor_field(self, name: str, offset: int) -> ReaderField:
        name_length = int(self._view(offset, np.uint64)[0])
        at = offset + 8 + name_length
        n_dims = int(self._view(at, np.uint32)[0])
        specs = [(offset, np.uint64, 1), (offset + 8, np.uint8, name_length), (at, np.uint32, 1),
                 (at + 4, np.uint64, n_dims), (at + 4 + 8 * n_dims, np.uint32, 1), (at + 8 + 8 * n_dims, np.uint64, 1)]
        return ReaderField(offset, name, [self._view(*spec) for spec in specs], [1, 3, 4, 5])


def _chain(reader: GGUFReader, head: list[tuple[int, Any, int]], tail: Callable[[int], np.ndarray]):
    """``item(i)`` of a lazy parts list: the fixed head parts, then ``tail(i - len(head))``."""
    n_head = len(head)

    def item(i: int) -> np.ndarray:
        return reader._view(*head[i]) if i < n_head else tail(i - n_head)

    return item


def _valid_utf8(text: str) -> bool:
    """Whether fastgguf's decoding of a name (surrogateescape) came from valid UTF-8."""
    if text.isascii():
        return True
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


class _PythonWalk:
    """The header walked in Python, accepting what gguf-py accepts (bounds still checked).

    Used for the files fastgguf's stricter parser refuses, and for nested arrays.
    """

    def __init__(self, reader: GGUFReader) -> None:
        self.reader = reader
        self.size = reader._bytes.size

    def _read(self, offset: int, dtype: Any) -> int:
        return self.reader._view(offset, dtype)[0].item()

    def _count_fits(self, count: int, at: int, each: int, what: str) -> None:
        if count > (self.size - at) // max(each, 1):
            raise GGUFError(f"{what} count {count} cannot fit in the {self.size - at} bytes left", at)

    def _string(self, offset: int) -> tuple[int, bytes]:
        length = self._read(offset, np.uint64)
        self._count_fits(length, offset + 8, 1, "string byte")
        return length, self.reader._bytes[offset + 8:offset + 8 + length].tobytes()

    def run(self) -> tuple[list[tuple[str, int]], int]:
        reader = self.reader
        n_tensors, n_kv = (int(x) for x in reader._view(8, np.uint64, 2))
        offset = 24
        self._count_fits(n_kv, offset, 13, "key/value")
        for _ in range(n_kv):
            start = offset
            length, raw_key = self._string(offset)
            key = _decode(raw_key, offset)
            offset += 8 + length
            vtype = self._read(offset, np.uint32)
            offset += 4
            size, parts, data, types = self.value_parts(offset, vtype)
            if key in reader.fields:
                raise _DuplicateKeyError(f"duplicate key {key!r}", start)
            head = [reader._view(start, np.uint64), reader._view(start + 8, np.uint8, length),
                    reader._view(offset - 4, np.uint32)]
            reader.fields[key] = ReaderField(start, key, head + parts, [3 + i for i in data], types)
            offset += size
        alignment = reader.fields.get("general.alignment")
        if alignment is not None:
            if list(alignment.types) != [_V.UINT32]:
                raise GGUFError("general.alignment must be a UINT32", alignment.offset)
            value = int(alignment.parts[-1][0])
            if value == 0 or value & (value - 1):
                raise GGUFError(f"general.alignment {value} is not a non-zero power of two", alignment.offset)
        self._count_fits(n_tensors, offset, 24, "tensor info")
        infos, names = [], set()
        for _ in range(n_tensors):
            start = offset
            length, raw_name = self._string(offset)
            name = _decode(raw_name, offset)
            if name in names:
                raise GGUFError(f"duplicate tensor name {name!r}", start)
            names.add(name)
            offset += 8 + length
            n_dims = self._read(offset, np.uint32)
            self._count_fits(n_dims, offset + 4, 8, "dimension")
            offset += 4 + 8 * n_dims + 4 + 8
            if offset > self.size:
                raise GGUFError(f"tensor info of {name!r} extends past the end of the file", start)
            infos.append((name, start))
        return infos, offset

    def value_parts(self, offset: int, vtype: int) -> tuple[int, list[np.ndarray], list[int], list[Any]]:
        """gguf-py's ``(size, parts, data indices, types)`` of the value at ``offset``."""
        reader = self.reader
        try:
            types = [_value_type(vtype)]
        except ValueError:
            raise GGUFError(f"value type {vtype} is not a GGUF value type", offset) from None
        if vtype == _V.STRING:
            length, _ = self._string(offset)
            return 8 + length, [reader._view(offset, np.uint64), reader._view(offset + 8, np.uint8, length)], [1], types
        if vtype in _SCALAR_DTYPES:
            part = reader._view(offset, _SCALAR_DTYPES[vtype])
            return part.nbytes, [part], [0], types
        element = self._read(offset, np.uint32)
        count = self._read(offset + 4, np.uint64)
        parts: list[np.ndarray] = [reader._view(offset, np.uint32), reader._view(offset + 4, np.uint64)]
        data: list[int] = []
        position = offset + 12
        self._count_fits(count, position, 1 if element in _SCALAR_DTYPES else 8, "array element")
        for index in range(count):
            size, sub_parts, sub_data, sub_types = self.value_parts(position, element)
            if index == 0:
                types += sub_types
            data += [len(parts) + i for i in sub_data]
            parts += sub_parts
            position += size
        return position - offset, parts, data, types


def _decode(raw: bytes, offset: int) -> str:
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError:
        raise GGUFError("a name is not valid UTF-8", offset) from None


# --- dequantize / quantize -----------------------------------------------------------------------


def _original(name: str) -> Callable[..., Any] | None:
    """gguf-py's own ``gguf.quants.<name>`` (unpatched), or None without gguf-py."""
    from .integrations import gguf_py

    return gguf_py.original(name)


def _byte_rows_to_shape(shape: tuple[int, ...], qtype: GGMLType) -> tuple[int, ...]:
    block_size, type_size = TYPE_TRAITS[qtype]
    if not shape or shape[-1] % type_size:
        row = shape[-1] if shape else 0
        raise ValueError(f"Quantized tensor bytes per row ({row}) is not a multiple of {qtype.name} type size "
                         f"({type_size})")
    return (*shape[:-1], shape[-1] // type_size * block_size)


def dequantize(data: np.ndarray, qtype: Any) -> np.ndarray:
    """gguf-py's ``gguf.quants.dequantize``: blocks of shape ``(..., row_bytes)`` to float32 ``(..., row)``.

    F32 data is reinterpreted, F16 converted, every block type dequantized by fastgguf's kernels
    (multi-threaded, GIL released; the same float32 bits as gguf-py). Inputs gguf-py handles that
    are no numpy array (its lazy tensors) go to gguf-py's own function.
    """
    from . import dequant

    if not isinstance(data, np.ndarray):
        original = _original("dequantize")
        if original is None:
            raise TypeError(f"data must be a numpy array, not {type(data).__name__}")
        return original(data, qtype)
    ggml_type = GGMLType(int(qtype))
    if ggml_type == GGMLType.F32:
        return data.view(np.float32)
    if ggml_type == GGMLType.F16:
        return data.view(np.float16).astype(np.float32)
    if not dequant.has_kernel(ggml_type):
        original = _original("dequantize")
        if original is None:
            raise NotImplementedError(f"Dequantization for {ggml_type.name} is not yet implemented")
        return original(data, qtype)
    blocks = np.ascontiguousarray(data).view(np.uint8)
    return dequant.dequantize(blocks, ggml_type, _byte_rows_to_shape(blocks.shape, ggml_type))


def quantize(data: np.ndarray, qtype: Any) -> np.ndarray:
    """gguf-py's ``gguf.quants.quantize``: float values ``(..., row)`` to blocks ``(..., row_bytes)``.

    Block types run fastgguf's quantizers (ggml's bytes; gguf-py's where gguf-py has the type);
    F32/F16 are numpy casts. Values fastgguf refuses (NaN, inf) or inputs that are no numpy array
    go to gguf-py's own function when it is installed.
    """
    from . import quant

    ggml_type = GGMLType(int(qtype))
    if ggml_type == GGMLType.F32:
        return data.astype(np.float32, copy=False)
    if ggml_type == GGMLType.F16:
        return data.astype(np.float16, copy=False)
    original = _original("quantize")
    if not isinstance(data, np.ndarray) or not quant.has_quantize(ggml_type) or quant.requires_imatrix(ggml_type):
        if original is None:
            raise NotImplementedError(f"Quantization for {ggml_type.name} is not yet implemented")
        return original(data, qtype)
    block_size, _ = TYPE_TRAITS[ggml_type]
    if data.ndim == 0 or data.shape[-1] % block_size:
        if original is not None:
            return original(data, qtype)  # raises gguf-py's QuantError
        raise ValueError(f"Can't quantize tensor with shape {data.shape} to {ggml_type.name}")
    rows = np.ascontiguousarray(data, dtype=np.float32).reshape(-1, data.shape[-1])
    try:
        blocks = quant.quantize(rows, ggml_type)
    except ValueError:
        if original is None:
            raise
        return original(data, qtype)  # non-finite values: gguf-py's own handling of them
    return blocks.reshape(*data.shape[:-1], blocks.shape[-1])

