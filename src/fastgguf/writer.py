"""Write GGUF files: any metadata, tensors from numpy arrays or raw bytes, either byte order."""

from __future__ import annotations

import builtins
import os
import struct
from typing import Any, BinaryIO

import numpy as np

from ._byteswap import byteswap_blocks
from .types import TYPE_TRAITS, GGMLType, GGUFValueType

__all__ = ["GGUFWriter"]

_V = GGUFValueType
_SCALAR_FORMATS = {
    _V.UINT8: "B", _V.INT8: "b", _V.UINT16: "H", _V.INT16: "h", _V.UINT32: "I", _V.INT32: "i",
    _V.FLOAT32: "f", _V.BOOL: "?", _V.UINT64: "Q", _V.INT64: "q", _V.FLOAT64: "d",
}
_NUMPY_VALUE_TYPES = {
    np.dtype(np.uint8): _V.UINT8, np.dtype(np.int8): _V.INT8, np.dtype(np.uint16): _V.UINT16,
    np.dtype(np.int16): _V.INT16, np.dtype(np.uint32): _V.UINT32, np.dtype(np.int32): _V.INT32,
    np.dtype(np.float32): _V.FLOAT32, np.dtype(np.bool_): _V.BOOL, np.dtype(np.uint64): _V.UINT64,
    np.dtype(np.int64): _V.INT64, np.dtype(np.float64): _V.FLOAT64,
}
_NUMPY_TENSOR_TYPES = {
    np.dtype(np.float32): GGMLType.F32, np.dtype(np.float16): GGMLType.F16, np.dtype(np.float64): GGMLType.F64,
    np.dtype(np.int8): GGMLType.I8, np.dtype(np.int16): GGMLType.I16, np.dtype(np.int32): GGMLType.I32,
    np.dtype(np.int64): GGMLType.I64,
}


class GGUFWriter:
    """Build a GGUF file in memory and write it.

    Parameters
    ----------
    path : str or os.PathLike, optional
        Where :meth:`close` (or leaving the ``with`` block) writes the file. Without a path,
        use :meth:`to_bytes`.
    byteorder : {"<", ">"}
        Little- or big-endian. Plain tensors given as numpy arrays are stored in this order;
        raw bytes are written as given.
    alignment : int
        Data alignment, a power of two; other than 32 it is recorded as ``general.alignment``.
    version : {3, 2, 1}
        GGUF version; 1 writes 32-bit counts and lengths (for testing readers of old files).

    Examples
    --------
    >>> with GGUFWriter("tiny.gguf") as w:                       # doctest: +SKIP
    ...     w.add("general.architecture", "llama")
    ...     w.add_tensor("weight", np.ones((2, 4), np.float32))
    """

    def __init__(self, path: str | os.PathLike | None = None, *, byteorder: str = "<", alignment: int = 32,
                 version: int = 3) -> None:
        if byteorder not in ("<", ">"):
            raise ValueError("byteorder must be '<' or '>'")
        if alignment <= 0 or alignment & (alignment - 1):
            raise ValueError(f"alignment {alignment} is not a positive power of two")
        if version not in (1, 2, 3):
            raise ValueError(f"cannot write GGUF version {version}")
        self.path = None if path is None else os.fspath(path)
        self.byteorder = byteorder
        self.alignment = alignment
        self.version = version
        self._kvs: list[tuple[str, GGUFValueType, Any, Any]] = []
        self._keys: set[str] = set()
        # (name, shape, type, data, nbytes); data is None for a tensor announced by add_tensor_info.
        self._tensors: list[tuple[str, tuple, GGMLType, bytes | memoryview | None, int]] = []
        self._tensor_names: set[str] = set()
        self._streamed = 0  # tensors whose data write_tensor_data has written
        self._stream_pos = 0  # bytes of the current one written so far
        if alignment != 32:
            self.add("general.alignment", alignment, GGUFValueType.UINT32)

    # metadata -------------------------------------------------------------------------------------
    def add(self, key: str, value: Any, value_type: GGUFValueType | int | None = None,
            element_type: GGUFValueType | int | None = None) -> None:
        """Add a key/value pair.

        Parameters
        ----------
        key : str
        value
            A scalar, ``str`` or ``bytes`` (a string written byte for byte), a numpy array,
            or a list/tuple (an array; nested lists make nested arrays).
        value_type : GGUFValueType, optional
            Inferred when omitted: bool → BOOL, int → INT32 (INT64 if it does not fit),
            float → FLOAT32, str/bytes → STRING, numpy scalars/arrays → their dtype, list → ARRAY.
        element_type : GGUFValueType, optional
            For arrays: the element type; inferred from the elements when omitted.
        """
        if key in self._keys and key != "general.alignment":
            raise ValueError(f"duplicate key {key!r}")
        if key == "general.alignment":
            self._kvs = [kv for kv in self._kvs if kv[0] != key]
        vtype = _V(value_type) if value_type is not None else _infer_type(value)
        etype = None
        if vtype == _V.ARRAY:
            etype = _V(element_type) if element_type is not None else _infer_element_type(value)
        self._keys.add(key)
        self._kvs.append((key, vtype, value, etype))

    # tensors --------------------------------------------------------------------------------------
    def add_tensor(self, name: str, data, type: GGMLType | int | None = None,  # noqa: A002
                   shape: tuple[int, ...] | None = None, *, byteorder: str | None = None) -> None:
        """Add a tensor.

        Parameters
        ----------
        name : str
        data : numpy.ndarray or bytes-like
            A numpy array of float32/float16/float64/int8/int16/int32/int64 (type inferred),
            or the raw bytes of any ggml type (then ``type`` and ``shape`` are required).
        type : GGMLType, optional
        shape : tuple of int, optional
            numpy order (the last dimension is the contiguous one, ggml's ne0).
        byteorder : {"<", ">"}, optional
            The byte order of raw ``data``. When it is not the file's, every multi-byte field of
            every block (fp16/f32 scales, 16/32-bit masks and sums, plain elements) is reversed on
            the way in, e.g. to write a big-endian file from little-endian quantized blocks. By
            default raw bytes are written as given.
        """
        if byteorder not in (None, "<", ">"):
            raise ValueError("byteorder must be '<', '>' or None")
        if isinstance(data, np.ndarray) and type is None:
            byteorder = None  # numpy arrays are converted to the file's order by their dtype
            try:
                type = _NUMPY_TENSOR_TYPES[data.dtype.newbyteorder("=")]
            except KeyError:
                raise ValueError(f"no ggml type for dtype {data.dtype}; pass raw bytes and a type") from None
            shape = data.shape if shape is None else tuple(shape)
            order = "<" if self.byteorder == "<" else ">"
            data = np.ascontiguousarray(data, dtype=data.dtype.newbyteorder(order)).tobytes()
        else:
            if type is None or shape is None:
                raise ValueError("raw tensor bytes need a type and a shape")
            data = memoryview(data).cast("B")
        type, shape, expected = self._check_tensor(name, type, shape)
        if len(data) != expected:
            raise ValueError(f"tensor {name!r}: {len(data)} bytes given, {type.name}{shape} needs {expected}")
        if byteorder is not None and byteorder != self.byteorder:
            data = byteswap_blocks(data, type)
        self._tensor_names.add(name)
        self._tensors.append((name, shape, type, data, expected))

    def add_tensor_info(self, name: str, type: GGMLType | int, shape: tuple[int, ...]) -> None:  # noqa: A002
        """Announce a tensor whose bytes are written later, for streaming a file too large to hold.

        When every tensor is announced this way, :meth:`write_header` writes the file up to its
        data section and :meth:`write_tensor_data` then appends each tensor's bytes in the order
        announced; only one tensor's bytes are ever held. :meth:`to_bytes` and :meth:`write`
        refuse a writer with announced tensors.

        Parameters
        ----------
        name : str
        type : GGMLType
        shape : tuple of int
            numpy order (the last dimension is ggml's ne0).
        """
        type, shape, nbytes = self._check_tensor(name, type, shape)
        self._tensor_names.add(name)
        self._tensors.append((name, shape, type, None, nbytes))

    def _check_tensor(self, name: str, type: GGMLType | int, shape) -> tuple[GGMLType, tuple[int, ...], int]:  # noqa: A002
        """The tensor's type, shape and byte count; ValueError for a bad shape or a duplicate name."""
        type = GGMLType(type)
        shape = tuple(int(d) for d in shape)
        if any(d < 0 for d in shape):
            raise ValueError(f"tensor {name!r}: negative dimension in {shape}")
        traits = TYPE_TRAITS[type]
        n_elements = int(np.prod(shape, dtype=np.int64)) if shape else 1
        if shape and shape[-1] % traits.block_size:
            raise ValueError(f"last dimension {shape[-1]} is not a multiple of {type.name}'s block size")
        if name in self._tensor_names:
            raise ValueError(f"duplicate tensor name {name!r}")
        return type, shape, n_elements // traits.block_size * traits.type_size

    # output ---------------------------------------------------------------------------------------
    def to_bytes(self) -> bytes:
        """The whole file."""
        parts: list[bytes] = []
        self._write_to(parts.append)
        return b"".join(parts)

    def write_header(self, handle: BinaryIO) -> None:
        """Write the file up to its data section to ``handle`` (streaming; see :meth:`add_tensor_info`).

        Raises
        ------
        ValueError
            If a tensor was added with its data (:meth:`add_tensor`): streaming takes announced ones only.
        """
        if any(data is not None for _, _, _, data, _ in self._tensors):
            raise ValueError("write_header streams tensors announced by add_tensor_info; this writer holds data")
        self._streamed = self._stream_pos = 0
        self._write_header(handle.write)

    def write_tensor_data(self, handle: BinaryIO, data, *, byteorder: str | None = None) -> None:
        """Append bytes of the announced tensors, in order, to ``handle`` (streaming; see :meth:`add_tensor_info`).

        A tensor's bytes may come in several calls (each a whole number of its blocks); once a
        tensor is complete its padding is written and the next tensor's bytes follow.

        Parameters
        ----------
        handle : binary file
            The file :meth:`write_header` wrote to.
        data : bytes-like
            The current tensor's next bytes; never more than it has left.
        byteorder : {"<", ">"}, optional
            The byte order of ``data``; swapped into the file's order when it differs (as in :meth:`add_tensor`).
        """
        if byteorder not in (None, "<", ">"):
            raise ValueError("byteorder must be '<', '>' or None")
        view = memoryview(data).cast("B")
        while self._streamed < len(self._tensors) and self._tensors[self._streamed][4] == 0:
            self._streamed += 1  # empty tensors take no bytes and no padding
        if self._streamed >= len(self._tensors):
            raise ValueError("every announced tensor has been written")
        name, _, type, _, nbytes = self._tensors[self._streamed]
        left = nbytes - self._stream_pos
        type_size = TYPE_TRAITS[type].type_size
        if len(view) > left or len(view) % type_size:
            raise ValueError(f"tensor {name!r}: {len(view)} bytes given with {left} left "
                             f"(whole {type.name} blocks of {type_size} bytes)")
        if byteorder is not None and byteorder != self.byteorder:
            view = memoryview(byteswap_blocks(view, type))
        handle.write(view)
        self._stream_pos += len(view)
        if self._stream_pos == nbytes:
            handle.write(b"\0" * (_pad(nbytes, self.alignment) - nbytes))
            self._streamed += 1
            self._stream_pos = 0

    def end_stream(self) -> None:
        """Check that :meth:`write_tensor_data` wrote every announced tensor completely.

        Raises
        ------
        ValueError
            If a tensor's bytes are missing.
        """
        while self._streamed < len(self._tensors) and self._tensors[self._streamed][4] == 0:
            self._streamed += 1
        if self._streamed < len(self._tensors):
            name, _, _, _, nbytes = self._tensors[self._streamed]
            raise ValueError(f"tensor {name!r}: {self._stream_pos} of its {nbytes} bytes written")

    def write(self, path: str | os.PathLike | None = None) -> None:
        """Write the file to ``path`` (or the path given at construction)."""
        path = path if path is not None else self.path
        if path is None:
            raise ValueError("no path to write to")
        self._check_complete()
        with builtins.open(path, "wb") as handle:
            self._write_to(handle.write)

    def close(self) -> None:
        if self.path is not None:
            self.write()

    def __enter__(self) -> GGUFWriter:
        return self

    def __exit__(self, exc_type, exc, tb) -> None:
        if exc_type is None:
            self.close()

    def _check_complete(self) -> None:
        if any(data is None for _, _, _, data, _ in self._tensors):
            raise ValueError("tensors announced by add_tensor_info are written with write_header/write_tensor_data")

    def _write_to(self, emit) -> None:
        self._check_complete()
        self._write_header(emit)
        for _, _, _, data, nbytes in self._tensors:
            assert data is not None
            emit(bytes(data))
            emit(b"\0" * (_pad(nbytes, self.alignment) - nbytes))

    def _write_header(self, emit) -> None:
        bo = self.byteorder
        count = bo + ("I" if self.version == 1 else "Q")
        size = 0

        def put(chunk: bytes) -> None:
            nonlocal size
            emit(chunk)
            size += len(chunk)

        version = struct.pack(bo + "I", self.version)
        put(b"GGUF" + version + struct.pack(count, len(self._tensors)) + struct.pack(count, len(self._kvs)))
        for key, vtype, value, etype in self._kvs:
            put(self._string(key) + struct.pack(bo + "I", vtype) + self._value(vtype, value, etype))
        offset = 0
        for name, shape, type, _, nbytes in self._tensors:
            dims = tuple(reversed(shape))
            put(self._string(name) + struct.pack(bo + "I", len(dims))
                + b"".join(struct.pack(count, d) for d in dims)
                + struct.pack(bo + "I", type) + struct.pack(bo + "Q", offset))
            offset += _pad(nbytes, self.alignment)
        if self._tensors:
            put(b"\0" * (_pad(size, self.alignment) - size))

    def _string(self, text: str | bytes) -> bytes:
        raw = text.encode("utf-8", "surrogateescape") if isinstance(text, str) else bytes(text)
        return struct.pack(self.byteorder + ("I" if self.version == 1 else "Q"), len(raw)) + raw

    def _value(self, vtype: GGUFValueType, value: Any, etype: GGUFValueType | None) -> bytes:
        bo = self.byteorder
        if vtype == _V.STRING:
            return self._string(value)
        if vtype != _V.ARRAY:
            return struct.pack(bo + _SCALAR_FORMATS[vtype], value)
        assert etype is not None, "an array value needs its element type"
        items = value
        head = struct.pack(bo + "I", etype) + struct.pack(bo + ("I" if self.version == 1 else "Q"), len(items))
        if etype == _V.STRING:
            return head + b"".join(self._string(s) for s in items)
        if etype == _V.ARRAY:
            return head + b"".join(self._value(_V.ARRAY, sub, _infer_element_type(sub)) for sub in items)
        return head + np.asarray(items, dtype=np.dtype(bo + _SCALAR_FORMATS[etype])).tobytes()


def _pad(n: int, alignment: int) -> int:
    return (n + alignment - 1) // alignment * alignment


def _infer_type(value: Any) -> GGUFValueType:
    if isinstance(value, (bool, np.bool_)):
        return _V.BOOL
    if isinstance(value, np.generic):
        return _NUMPY_VALUE_TYPES[value.dtype]
    if isinstance(value, int):
        return _V.INT32 if -2**31 <= value < 2**31 else _V.INT64
    if isinstance(value, float):
        return _V.FLOAT32
    if isinstance(value, (str, bytes)):
        return _V.STRING
    if isinstance(value, (list, tuple, np.ndarray)):
        return _V.ARRAY
    raise TypeError(f"cannot store a {type(value).__name__} in GGUF metadata")


def _infer_element_type(items: Any) -> GGUFValueType:
    if isinstance(items, np.ndarray):
        return _NUMPY_VALUE_TYPES[items.dtype.newbyteorder("=")]
    if len(items) == 0:
        return _V.INT32
    kinds = {_infer_type(item) for item in items}
    if kinds <= {_V.INT32, _V.INT64}:
        return max(kinds)
    if len(kinds) != 1:
        raise ValueError(f"array mixes element types {sorted(k.name for k in kinds)}")
    return kinds.pop()
