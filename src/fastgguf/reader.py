"""Open GGUF files: the metadata mapping, tensor infos and zero-copy raw views.

Lifetime: every array this module hands out (tensor ``raw`` views, numeric metadata
arrays, lazy string sequences) holds a reference to the memory map. ``GGUFFile.close()``
drops the file's own references and unmaps at once when nothing else uses the map;
otherwise the map stays valid until the last such array is garbage-collected. No array
ever points into unmapped memory.
"""

from __future__ import annotations

import builtins
import mmap
import os
from collections.abc import Iterator, Mapping, Sequence
from types import MappingProxyType
from typing import Any

import numpy as np

from . import _parser
from ._model import _Model
from .errors import GGUFError
from .types import TYPE_TRAITS, GGMLType, GGUFValueType

__all__ = ["GGUFFile", "TensorInfo", "Metadata", "StringArray", "ArrayOfArrays"]

_NUMERIC_DTYPES: dict[int, str] = {
    GGUFValueType.UINT8: "u1",
    GGUFValueType.INT8: "i1",
    GGUFValueType.UINT16: "u2",
    GGUFValueType.INT16: "i2",
    GGUFValueType.UINT32: "u4",
    GGUFValueType.INT32: "i4",
    GGUFValueType.FLOAT32: "f4",
    GGUFValueType.UINT64: "u8",
    GGUFValueType.INT64: "i8",
    GGUFValueType.FLOAT64: "f8",
    GGUFValueType.BOOL: "u1",
}
_DECODE_CHUNK = 4096  # strings decoded per call while iterating a StringArray


class _Layout:
    """How to read one mapped file: its buffer, byte order and length-field width."""

    __slots__ = ("buffer", "mmap", "wide", "swap", "byteorder")

    def __init__(self, mapped: mmap.mmap | bytes, wide: bool, swap: bool, byteorder: str) -> None:
        self.mmap = mapped
        # A memoryview export: while any holder of this layout lives, the map cannot be closed under it.
        self.buffer = memoryview(mapped)
        self.wide = wide
        self.swap = swap
        self.byteorder = byteorder

    def check_intact(self) -> None:
        """Raise GGUFError if the file was truncated since it was mapped.

        Reading a mapped page past the new end of file raises SIGBUS, which would kill the
        interpreter: one fstat before each bulk read turns the common case (the file shrank while
        open) into an error. A truncation racing with a read already under way is not caught.
        """
        if isinstance(self.mmap, mmap.mmap):
            try:
                size = self.mmap.size()
            except (OSError, ValueError):
                return
            if size < len(self.buffer):
                raise GGUFError(f"the file shrank from {len(self.buffer)} to {size} bytes while open")

    def numeric_array(self, elem_type: int, count: int, offset: int) -> np.ndarray:
        array = np.frombuffer(self.buffer, dtype=self.byteorder + _NUMERIC_DTYPES[elem_type], count=count,
                              offset=offset)
        if elem_type == GGUFValueType.BOOL:
            array = array != 0
            array.flags.writeable = False
        elif self.swap:
            array = array.astype(array.dtype.newbyteorder("="))
            array.flags.writeable = False
        return array

    def array_value(self, elem_type: int, count: int, data_offset: int, elem_offsets) -> Any:
        if elem_type == GGUFValueType.STRING:
            return StringArray(self, elem_offsets)
        if elem_type == GGUFValueType.ARRAY:
            return ArrayOfArrays(self, elem_offsets)
        return self.numeric_array(elem_type, count, data_offset)


class _LazyElements(Sequence):
    """Elements of one GGUF array, located by the offsets the header walk kept; decoded on access."""

    __slots__ = ("_layout", "_offsets")

    def __init__(self, layout: _Layout, offsets: np.ndarray) -> None:
        self._layout = layout
        self._offsets = offsets

    def __len__(self) -> int:
        return len(self._offsets)

    def _offset(self, index) -> int:
        return int(self._offsets[_check_index(index, len(self))])


class StringArray(_LazyElements):
    """A lazy sequence of the strings of one GGUF string array.

    ``len()`` costs nothing; indexing and slicing decode only what is asked; iteration
    and :meth:`tolist` decode in bulk. Strings that are not valid UTF-8 decode with the
    ``surrogateescape`` handler, so ``s.encode("utf-8", "surrogateescape")`` (or
    :meth:`raw`) gives back the file's exact bytes.
    """

    __slots__ = ()

    def __getitem__(self, index):
        layout = self._layout
        layout.check_intact()
        if isinstance(index, slice):
            return _parser.decode_strings(layout.buffer, self._offsets[index], layout.wide, layout.swap)
        return _parser.decode_string(layout.buffer, self._offset(index), layout.wide, layout.swap)

    def __iter__(self) -> Iterator[str]:
        layout = self._layout
        for start in range(0, len(self), _DECODE_CHUNK):
            layout.check_intact()
            chunk = self._offsets[start:start + _DECODE_CHUNK]
            yield from _parser.decode_strings(layout.buffer, chunk, layout.wide, layout.swap)

    def tolist(self) -> list[str]:
        """All strings as a list of str (the fastest way to get them all)."""
        layout = self._layout
        layout.check_intact()
        return _parser.decode_strings(layout.buffer, self._offsets, layout.wide, layout.swap)

    def raw(self, index: int) -> bytes:
        """The exact bytes of string ``index``."""
        layout = self._layout
        return _parser.decode_string(layout.buffer, self._offset(index), layout.wide, layout.swap, True)

    def __eq__(self, other: object) -> bool:
        if isinstance(other, (StringArray, list, tuple)):
            return len(self) == len(other) and self.tolist() == list(other)
        return NotImplemented

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        head = ", ".join(repr(s) for s in self[:3])
        more = ", ..." if len(self) > 3 else ""
        return f"StringArray([{head}{more}], len={len(self)})"


class ArrayOfArrays(_LazyElements):
    """A lazy sequence of the sub-arrays of a nested GGUF array; each item is decoded on access."""

    __slots__ = ()

    def __getitem__(self, index):
        if isinstance(index, slice):
            return [self[i] for i in range(*index.indices(len(self)))]
        return self._layout.array_value(*self._walk(index))

    def element_type(self, index: int) -> GGUFValueType:
        """The element type of sub-array ``index``."""
        return GGUFValueType(self._walk(index)[0])

    def _walk(self, index) -> tuple:
        layout = self._layout
        return _parser.read_array(layout.buffer, self._offset(index), layout.wide, layout.swap)

    def __repr__(self) -> str:
        return f"ArrayOfArrays(len={len(self)})"


def _check_index(index, length: int) -> int:
    index = int(index)
    if index < 0:
        index += length
    if not 0 <= index < length:
        raise IndexError("index out of range")
    return index


class Metadata(Mapping):
    """The key/value section: an ordered, read-only mapping decoded on access.

    Scalars come back as ``int``/``float``/``bool``/``str``; numeric arrays as read-only
    numpy arrays (zero-copy views of the map when the file's byte order is the host's);
    string arrays as :class:`StringArray`; nested arrays as :class:`ArrayOfArrays`.
    """

    def __init__(self, layout: _Layout, records: list) -> None:
        self._layout = layout
        self._records = {record.key: record for record in records}
        self._cache: dict[str, Any] = {}

    def __getitem__(self, key: str) -> Any:
        try:
            return self._cache[key]
        except KeyError:
            pass
        record = self._records[key]
        layout = self._layout
        layout.check_intact()
        value: Any
        if record.value_type == GGUFValueType.STRING:
            value = _parser.decode_string(layout.buffer, record.value_offset, layout.wide, layout.swap)
        elif record.value_type == GGUFValueType.ARRAY:
            value = layout.array_value(record.element_type, record.count, record.data_offset,
                                       record.element_offsets)
        else:
            value = _parser.decode_scalar(layout.buffer, record.value_offset, record.value_type, layout.swap)
        self._cache[key] = value
        return value

    def __iter__(self) -> Iterator[str]:
        return iter(self._records)

    def __len__(self) -> int:
        return len(self._records)

    def __contains__(self, key: object) -> bool:
        return key in self._records

    def value_type(self, key: str) -> GGUFValueType:
        """The GGUF value type of ``key`` (``ARRAY`` for arrays)."""
        return GGUFValueType(self._records[key].value_type)

    def element_type(self, key: str) -> GGUFValueType | None:
        """The element type of array ``key``; None for a scalar."""
        record = self._records[key]
        return None if record.element_type < 0 else GGUFValueType(record.element_type)

    def offset(self, key: str) -> int:
        """The byte offset where entry ``key`` starts (its key's length field)."""
        return self._records[key].key_offset

    def raw(self, key: str) -> bytes:
        """The exact bytes of string value ``key``, whatever their encoding."""
        record = self._records[key]
        if record.value_type != GGUFValueType.STRING:
            raise TypeError(f"{key!r} is not a string value")
        return _parser.decode_string(self._layout.buffer, record.value_offset, self._layout.wide,
                                     self._layout.swap, True)

    def __repr__(self) -> str:
        return f"Metadata({len(self)} keys)"


class TensorInfo:
    """One tensor's description and a zero-copy view of its bytes.

    Attributes
    ----------
    name : str
    shape : tuple of int
        numpy (row-major) order: the file's ggml dims reversed.
    type : GGMLType
    n_elements, nbytes : int
    offset : int
        Absolute byte offset of the tensor's data in its file.
    """

    __slots__ = ("name", "shape", "type", "n_elements", "nbytes", "offset", "_layout", "byteorder")

    def __init__(self, layout: _Layout, name: str, dims: tuple, type_id: int, offset: int, n_elements: int,
                 nbytes: int) -> None:
        self._layout = layout
        self.name = name
        self.shape = tuple(reversed(dims))
        self.type = GGMLType(type_id)
        self.offset = offset
        self.n_elements = n_elements
        self.nbytes = nbytes
        self.byteorder = layout.byteorder

    @property
    def raw(self) -> np.ndarray:
        """Read-only ``uint8`` view of the tensor's bytes in the map (no copy, nothing read yet)."""
        return np.frombuffer(self._layout.buffer, dtype=np.uint8, count=self.nbytes, offset=self.offset)

    @property
    def block_size(self) -> int:
        return TYPE_TRAITS[self.type].block_size

    def dequantize(self, *, rows=None, out=None, threads=None, dtype=None) -> np.ndarray:
        """Dequantize this tensor (or some of its rows); see :func:`fastgguf.dequantize`.

        Parameters
        ----------
        rows, out, threads
            As for :func:`fastgguf.dequantize`.
        dtype : numpy dtype or str, optional
            The result's type; float32 by default. Any other (``"float16"``, ``"bfloat16"``
            through the ``ml_dtypes`` package, ...) is produced in row blocks through a small
            reusable float32 buffer, so no float32 copy of the whole result is ever made;
            ``out``, if given, must then have this dtype.
        """
        from .dequant import dequantize_as

        self._layout.check_intact()
        return dequantize_as(self.raw, self.type, self.shape, dtype=dtype, rows=rows, out=out, threads=threads,
                             byteorder=self.byteorder)

    def _release_pages(self) -> None:
        """Let the OS drop this tensor's mapped pages from the process; they are re-read if touched again.

        A streaming pass over a large model calls this after each tensor so that its resident
        set does not grow to the whole file.
        """
        mapped = self._layout.mmap
        if self.nbytes == 0 or not isinstance(mapped, mmap.mmap) or mapped.closed \
                or not hasattr(mmap, "MADV_DONTNEED"):
            return
        start = self.offset - self.offset % mmap.PAGESIZE
        mapped.madvise(mmap.MADV_DONTNEED, start, self.offset + self.nbytes - start)

    def __repr__(self) -> str:
        return (f"TensorInfo(name={self.name!r}, shape={self.shape}, type={self.type.name}, "
                f"nbytes={self.nbytes}, offset={self.offset})")


class GGUFFile(_Model):
    """An open GGUF file. Use :func:`fastgguf.open`.

    Attributes
    ----------
    path : str
    version : int
    byteorder : str
        ``"<"`` or ``">"``.
    alignment : int
    data_offset : int
        Absolute offset of the data section.
    file_size : int
    metadata : Metadata
    tensors : Mapping[str, TensorInfo]
    """

    def __init__(self, path: str | os.PathLike) -> None:
        self.path = os.fspath(path)
        mapped = _map(self.path)
        try:
            header = _parser.parse(mapped)
        except BaseException:
            mapped.close()
            raise
        self._mmap: mmap.mmap | None = mapped
        self.version = header.version
        self.byteorder = ">" if header.big_endian else "<"
        self.alignment = header.alignment
        self.data_offset = header.data_offset
        self.file_size = header.file_size
        self._layout = _Layout(mapped, header.wide, header.swap, self.byteorder)
        self._metadata = Metadata(self._layout, header.kvs)
        self._tensors = MappingProxyType({record[0]: TensorInfo(self._layout, *record) for record in header.tensors})

    @property
    def metadata(self) -> Metadata:
        """The key/value section, in file order."""
        self._check_open()
        return self._metadata

    @property
    def tensors(self) -> Mapping[str, TensorInfo]:
        """Tensor infos by name, in file order."""
        self._check_open()
        return self._tensors

    def _check_open(self) -> None:
        if self._mmap is None:
            raise GGUFError("the file is closed")

    @property
    def closed(self) -> bool:
        return self._mmap is None

    def close(self) -> None:
        """Release the file. Arrays already handed out stay valid: they keep the map alive."""
        if self._mmap is None:
            return
        mapped, self._mmap = self._mmap, None
        # Closed: every accessor checks _check_open() before touching these.
        self._layout = self._metadata = self._tensors = None  # type: ignore[assignment]
        try:
            mapped.close()
        except BufferError:
            pass  # views handed out still use the map; it unmaps when the last one is collected

    def __repr__(self) -> str:
        state = "closed" if self.closed else f"{len(self.metadata)} keys, {len(self.tensors)} tensors"
        return f"<GGUFFile {self.path!r} v{self.version} {state}>"


def _map(path: str) -> mmap.mmap:
    with builtins.open(path, "rb") as handle:
        size = os.fstat(handle.fileno()).st_size
        if size == 0:
            raise GGUFError(f"{path}: empty file, not a GGUF", 0)
        return mmap.mmap(handle.fileno(), 0, access=mmap.ACCESS_READ)
