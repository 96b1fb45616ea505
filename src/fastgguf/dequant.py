"""Dequantize GGUF tensor data into float32 numpy arrays.

The bulk work runs in Cython kernels with the GIL released, split across threads; which kernel
build runs and how many threads is :mod:`fastgguf._backend`'s (``fastgguf.cpu_path()``,
``fastgguf.set_num_threads()``). Every build gives the same bits.
"""

from __future__ import annotations

import math
import operator
from collections.abc import Iterator
from functools import partial
from typing import Any

import numpy as np

from . import _backend
from ._args import check_out, contiguous_bytes
from .types import TYPE_TRAITS, GGMLType, resolve_type

__all__ = [
    "available_cpu_paths",
    "cpu_path",
    "dequantize",
    "get_num_threads",
    "has_byteswap",
    "has_kernel",
    "set_cpu_path",
    "set_num_threads",
    "supported_types",
]

#: Below this many output elements per thread, extra threads cost more than they save.
_MIN_ELEMENTS_PER_THREAD = 1 << 18

#: Contiguous work is split on multiples of this many elements (keeps chunks cache-line aligned).
_SPLIT_GRANULE = 1 << 12

#: Outputs at least this large are written with non-temporal (streaming) stores: they cannot
#: stay in the caches anyway, and streaming saves reading every destination line first.
_STREAM_MIN_BYTES = 16 << 20

#: Inputs at least this large are pre-faulted (madvise) in one call before a whole run is read.
_PREFAULT_MIN_BYTES = 1 << 20

_LITTLE, _BIG = "<", ">"


# The runtime (kernel build, threads) is _backend's; these names stay here for one release.
available_cpu_paths = _backend.available_cpu_paths
kernel_modules = _backend.kernel_modules
cpu_path = _backend.cpu_path
set_cpu_path = _backend.set_cpu_path
set_num_threads = _backend.set_num_threads
get_num_threads = _backend.get_num_threads


# ---------------------------------------------------------------------------------------------
# Types


def has_kernel(type_: GGMLType | int | str) -> bool:
    """Whether :func:`dequantize` can convert tensors of ``type_`` (little-endian data)."""
    try:
        qtype = resolve_type(type_)
    except ValueError:
        return False
    return bool(_backend.kernels().has_kernel(int(qtype)))


def has_byteswap(type_: GGMLType | int | str) -> bool:
    """Whether :func:`dequantize` can convert big-endian (``byteorder=">"``) tensors of ``type_``."""
    if not has_kernel(type_):
        return False
    return bool(_backend.kernels().has_byteswap(int(resolve_type(type_))))


def supported_types() -> tuple[GGMLType, ...]:
    """Every tensor type :func:`dequantize` can convert, in id order."""
    return tuple(t for t in GGMLType if _backend.kernels().has_kernel(int(t)))


# ---------------------------------------------------------------------------------------------
# Argument checks


def _check_shape(shape: Any, qtype: GGMLType, n_bytes: int) -> tuple[int, ...]:
    block_size, type_size = TYPE_TRAITS[qtype]
    if shape is None:
        if n_bytes % type_size:
            raise ValueError(f"{n_bytes} bytes is not a whole number of {qtype.name} blocks ({type_size} bytes each)")
        return (n_bytes // type_size * block_size,)
    if isinstance(shape, (int, np.integer)):
        shape = (shape,)
    try:
        dims = tuple(operator.index(d) for d in shape)
    except TypeError:
        raise TypeError(f"shape must be a sequence of ints, got {shape!r}") from None
    if any(d < 0 for d in dims):
        raise ValueError(f"negative dimension in shape {dims}")
    ne0 = dims[-1] if dims else 1  # a 0-d tensor is one element
    if ne0 % block_size:
        raise ValueError(f"row length {ne0} (last dimension of {dims}) is not a multiple of the {qtype.name} block size {block_size}")
    n_elements = 1
    for d in dims:
        n_elements *= d
    expected = n_elements // block_size * type_size
    if expected != n_bytes:
        raise ValueError(f"a {qtype.name} tensor of shape {dims} takes {expected} bytes, got {n_bytes}")
    return dims


def _check_rows(rows: Any, n_rows: int) -> slice | np.ndarray:
    """Normalize ``rows`` to a step-1 slice or an int64 array of non-negative indices."""
    if isinstance(rows, slice):
        start, stop, step = rows.indices(n_rows)
        if step == 1:
            return slice(start, max(start, stop))
        return np.arange(start, stop, step, dtype=np.int64)
    if isinstance(rows, (int, np.integer)):
        rows = [rows]
    index = np.asarray(rows)
    if index.dtype == np.bool_ or (index.size and not np.issubdtype(index.dtype, np.integer)):
        raise TypeError(f"rows must be a slice or integer indices, got dtype {index.dtype}")
    index = index.astype(np.int64, copy=False).reshape(-1)
    if index.size:
        low, high = int(index.min()), int(index.max())
        if low < -n_rows or high >= n_rows:
            bad = low if low < -n_rows else high
            raise IndexError(f"row {bad} is out of range for {n_rows} rows")
        if low < 0:
            index = np.where(index < 0, index + n_rows, index)
    return np.ascontiguousarray(index, dtype=np.int64)


# ---------------------------------------------------------------------------------------------
# The public function


def dequantize(
    data: Any,
    type: GGMLType | int | str,  # noqa: A002 - the GGUF word for it
    shape: Any = None,
    *,
    rows: slice | Any | None = None,
    out: np.ndarray | None = None,
    threads: int | None = None,
    byteorder: str = "<",
) -> np.ndarray:
    """Convert GGUF tensor data to a float32 array.

    Parameters
    ----------
    data : bytes-like or numpy.ndarray
        The tensor's bytes (``bytes``, ``memoryview``, ``mmap``, a uint8 array, ...); read in
        place, never copied. Must be C-contiguous.
    type : GGMLType, int or str
        ggml tensor type of the data.
    shape : sequence of int, optional
        Tensor shape in numpy order (the last dimension is ggml's ``ne0``, the contiguous one).
        Default: 1-D, as many elements as ``data`` holds.
    rows : slice or sequence of int, optional
        Only these rows of the tensor viewed as ``(-1, ne0)``: a slice, or integer indices
        (negative ones count from the end). Only those rows are read and allocated; the result
        has shape ``(n_rows, ne0)``.
    out : numpy.ndarray, optional
        A writable C-contiguous float32 array with exactly as many elements as the result; it is
        filled and returned as is (its shape is kept).
    threads : int, optional
        Number of threads; ``None`` uses :func:`get_num_threads` (all cores unless changed with
        :func:`set_num_threads`), ``1`` stays on the calling thread. Small inputs use fewer.
        The GIL is released while the kernels run.
    byteorder : {"<", ">"}
        Byte order of the data. Big-endian data (from a byte-swapped GGUF) is put in order block
        by block in a small scratch buffer before each kernel; :func:`has_byteswap` tells which
        types have a swap table.

    Returns
    -------
    numpy.ndarray
        float32, of shape ``shape`` (or ``(n_rows, ne0)`` with ``rows``), or ``out``.

    Raises
    ------
    ValueError
        Unknown or removed type id; byte count that does not match ``shape``; ``ne0`` not a
        multiple of the block size; ``data`` not C-contiguous; a bad ``out``.
    TypeError
        ``data``, ``type``, ``shape`` or ``out`` of the wrong kind.
    NotImplementedError
        The type has no kernel yet, or no byte-swap table for big-endian data.
    IndexError
        A row index out of range.
    TypeError, ValueError
        Arguments of the wrong kind: ``threads < 1``, ``byteorder`` not ``"<"``/``">"``,
        a bad ``out`` (dtype, contiguity, size, read-only,
        overlapping ``data``).
    """
    qtype = resolve_type(type)
    if byteorder not in (_LITTLE, _BIG):
        raise ValueError(f"byteorder must be '<' or '>', not {byteorder!r}")
    kernels = _backend.kernels()
    if not kernels.has_kernel(int(qtype)):
        raise NotImplementedError(f"dequantization of {qtype.name} tensors is not implemented yet")
    swapped = byteorder == _BIG
    if swapped and not kernels.has_byteswap(int(qtype)):
        raise NotImplementedError(f"big-endian {qtype.name} data is not supported yet")
    n_threads = _backend.resolve_threads(threads)

    src = contiguous_bytes(data)
    dims = _check_shape(shape, qtype, src.size)
    block_size, type_size = TYPE_TRAITS[qtype]
    ne0 = dims[-1] if dims else 1
    n_rows_total = 1
    for d in dims[:-1]:
        n_rows_total *= d

    if rows is None:
        result_shape = dims
        selection: slice | np.ndarray = slice(0, n_rows_total)
    else:
        selection = _check_rows(rows, n_rows_total)
        n_selected = selection.stop - selection.start if isinstance(selection, slice) else selection.size
        result_shape = (n_selected, ne0)

    n_out = 1
    for d in result_shape:
        n_out *= d
    if out is None:
        result = _empty_aligned(result_shape, n_out)
    else:
        result = check_out(out, n_out)
        if np.may_share_memory(result, src):
            raise ValueError("out overlaps the tensor data")
    if n_out == 0:
        return result
    flat = result.reshape(-1)

    if isinstance(selection, slice):
        # Contiguous rows are one run of blocks: split it on block boundaries.
        row_bytes = ne0 // block_size * type_size
        src = src[selection.start * row_bytes : selection.stop * row_bytes]
        if src.size >= _PREFAULT_MIN_BYTES:
            kernels.prefault(src)  # one call maps every page (a file map faults page by page otherwise)
        _dequantize_run(kernels, src, flat, int(qtype), block_size, type_size, n_threads, swapped)
    else:
        _dequantize_rows(kernels, src, flat, int(qtype), selection, ne0, n_threads, swapped)
    return result


#: Outputs we allocate start on a cache-line boundary: vector stores then never straddle two
#: lines (the allocator only promises 16 bytes; measured up to 40 % faster for cached outputs).
_OUTPUT_ALIGNMENT = 64


def _empty_aligned(shape: tuple[int, ...], n_elements: int) -> np.ndarray:
    """An uninitialized float32 array of ``shape`` whose data starts on a cache-line boundary."""
    slack = _OUTPUT_ALIGNMENT // 4
    backing = np.empty(n_elements + slack, dtype=np.float32)
    start = (-backing.ctypes.data % _OUTPUT_ALIGNMENT) // 4
    return backing[start : start + n_elements].reshape(shape)


def _dequantize_run(kernels, src, flat, type_id, block_size, type_size, n_threads, swapped) -> None:
    n_out = flat.size
    stream = n_out * 4 >= _STREAM_MIN_BYTES
    n_chunks = max(1, min(n_threads, n_out // _MIN_ELEMENTS_PER_THREAD))
    _backend.run_split(
        kernels, n_chunks,
        lambda threads: kernels.dequantize_into(src, flat, type_id, None, 0, swapped, stream, threads, _SPLIT_GRANULE),
        lambda: [partial(kernels.dequantize_into, src[b0:b1], flat[begin:end], type_id, None, 0, swapped, stream)
                 for b0, b1, begin, end in _block_chunks(n_out, block_size, type_size, n_chunks)])


def _even_parts(n: int, n_parts: int) -> list[tuple[int, int]]:
    """``(begin, end)`` of ``n_parts`` near-equal parts of ``range(n)``, empty parts left out."""
    bounds = [n * k // n_parts for k in range(n_parts + 1)]
    return [(a, b) for a, b in zip(bounds, bounds[1:]) if b > a]


def _block_chunks(n_out: int, block_size: int, type_size: int, n_chunks: int) -> list[tuple[int, int, int, int]]:
    """``(first byte, end byte, first value, end value)`` of ``n_chunks`` parts of ``n_out`` values of whole blocks.

    The boundaries are multiples of a granule that is itself a whole number of blocks; empty parts
    are left out. (Only where the kernels have no pool of their own: they split a call themselves.)
    """
    granule = max(block_size, _SPLIT_GRANULE // block_size * block_size)
    n_granules = n_out // granule
    chunks = []
    begin = 0
    for k in range(n_chunks):
        end = n_out if k == n_chunks - 1 else (n_granules * (k + 1) // n_chunks) * granule
        if end > begin:
            chunks.append((begin // block_size * type_size, end // block_size * type_size, begin, end))
            begin = end
    return chunks


def _dequantize_rows(kernels, src, flat, type_id, index, ne0, n_threads, swapped) -> None:
    n_rows = index.size
    stream = flat.size * 4 >= _STREAM_MIN_BYTES
    rows_per_thread = max(1, _MIN_ELEMENTS_PER_THREAD // ne0)
    n_chunks = max(1, min(n_threads, n_rows // rows_per_thread))
    _backend.run_split(
        kernels, n_chunks,
        lambda threads: kernels.dequantize_into(src, flat, type_id, index, ne0, swapped, stream, threads),
        lambda: [partial(kernels.dequantize_into, src, flat[r0 * ne0 : r1 * ne0], type_id, index[r0:r1], ne0, swapped, stream)
                 for r0, r1 in _even_parts(n_rows, n_chunks)])


# ---------------------------------------------------------------------------------------------
# Any result dtype, row block by row block (the reader's ``dtype=``, fastgguf.export, the CLI)

#: Rows reach a non-float32 result through a float32 staging buffer of about this many elements
#: (per 4 threads, up to 16 times this), reused block after block: no float32 copy of the whole.
_BLOCK_ELEMENTS = 1 << 20

__all__ += ["RowBlocks", "dequantize_as", "dequantize_rounded", "narrow_floats", "resolve_dtype"]

def _block_elements(n_threads: int) -> int:
    """Elements staged in float32 per step of a non-float32 result: about a million per 4 threads, at most 16 million."""
    return min(max(_BLOCK_ELEMENTS, n_threads * _BLOCK_ELEMENTS // 4), 16 * _BLOCK_ELEMENTS)


#: Below this many elements per thread, a conversion runs on one thread.
_MIN_CONVERT_PER_THREAD = 1 << 19


#: The half-precision float types by their numpy names (bfloat16: ml_dtypes'), for the casts to them.
HALF_TYPES = {"float16": GGMLType.F16, "bfloat16": GGMLType.BF16}


def _half_type(dtype: np.dtype) -> GGMLType | None:
    """F16 or BF16 for a float16 or bfloat16 numpy dtype, else None."""
    return HALF_TYPES.get(dtype.name) if dtype.itemsize == 2 else None


def narrow_floats(values: np.ndarray, dtype: Any, *, out: np.ndarray | None = None,
                  threads: int | None = None) -> np.ndarray:
    """float32 ``values`` cast to float16 or bfloat16 by fastgguf's C conversions.

    Round to nearest, ties to even, as numpy's, ml_dtypes' and torch's casts (and ggml's F16/BF16
    quantizers): the same bits for every value but NaN, whose payload follows ggml (float16: the
    quiet NaN with the value's sign; bfloat16: the top 16 bits with the quiet bit set). numpy's
    float16 cast is scalar code, and ml_dtypes' and torch's are several times slower than these.

    Parameters
    ----------
    values : numpy.ndarray
        C-contiguous float32.
    dtype : numpy dtype or str
        ``float16`` or ``bfloat16``.
    out : numpy.ndarray, optional
        C-contiguous writable array of ``dtype`` (or uint16), as many elements as ``values``.
    threads : int, optional
        As for :func:`dequantize`.

    Returns
    -------
    numpy.ndarray
        ``out``, or a new array of ``dtype`` shaped as ``values``.
    """
    target = resolve_dtype(dtype)
    qtype = _half_type(target)
    if qtype is None:
        raise ValueError(f"dtype must be float16 or bfloat16, not {target}")
    if not isinstance(values, np.ndarray) or values.dtype != np.float32 or not values.flags.c_contiguous:
        raise TypeError("values must be a C-contiguous float32 numpy array")
    if out is None:
        result = np.empty(values.shape, target)
    else:
        result = check_out(out, values.size, out.dtype if out.dtype == np.uint16 else target)
    src, dst = values.reshape(-1), result.reshape(-1).view(np.uint16)
    n_chunks = max(1, min(_backend.resolve_threads(threads), src.size // _MIN_CONVERT_PER_THREAD))
    kernels = _backend.kernels()
    _backend.run_split(
        kernels, n_chunks,
        lambda threads: kernels.narrow_floats(src, dst, int(qtype), threads, _SPLIT_GRANULE),
        lambda: [partial(kernels.narrow_floats, src[a:b], dst[a:b], int(qtype)) for a, b in _even_parts(src.size, n_chunks)])
    return result


def dequantize_rounded(data: Any, type: GGMLType | int | str, shape: Any = None, *,  # noqa: A002 - as dequantize
                       dtype: Any, threads: int | None = None) -> np.ndarray:
    """:func:`dequantize` (little-endian data) with every value rounded to the nearest float16 or bfloat16, as float32.

    ``dequantize(...).astype(dtype).astype(np.float32)`` in one pass (each chunk rounded while it
    is in L1), with :func:`narrow_floats`'s rounding: for a float32 product of the values another
    library would have cast to ``dtype`` first.
    """
    target = resolve_dtype(dtype)
    half = _half_type(target)
    if half is None:
        raise ValueError(f"dtype must be float16 or bfloat16, not {target}")
    qtype = resolve_type(type)
    src = contiguous_bytes(data)
    dims = _check_shape(shape, qtype, src.size)
    kernels = _backend.kernels()
    if not kernels.has_kernel(int(qtype)):
        raise NotImplementedError(f"dequantization of {qtype.name} is not implemented")
    block_size, type_size = TYPE_TRAITS[qtype]
    result = _empty_aligned(dims, math.prod(dims))
    flat = result.reshape(-1)
    n_chunks = max(1, min(_backend.resolve_threads(threads), flat.size // _MIN_ELEMENTS_PER_THREAD))
    _backend.run_split(
        kernels, n_chunks,
        lambda threads: kernels.dequantize_rounded_into(src, flat, int(qtype), int(half), threads, _SPLIT_GRANULE),
        lambda: [partial(kernels.dequantize_rounded_into, src[b0:b1], flat[begin:end], int(qtype), int(half))
                 for b0, b1, begin, end in _block_chunks(flat.size, block_size, type_size, n_chunks)])
    return result


def resolve_dtype(dtype: Any) -> np.dtype:
    """The numpy dtype for ``dtype``; ``"bfloat16"`` (or ``"bf16"``) comes from the ``ml_dtypes`` package.

    Raises
    ------
    ImportError
        For bfloat16 when ``ml_dtypes`` is not installed.
    TypeError
        If numpy does not understand ``dtype``.
    """
    if isinstance(dtype, str) and dtype.lower() in ("bfloat16", "bf16"):
        try:
            import ml_dtypes
        except ImportError:
            raise ImportError("bfloat16 output needs the ml_dtypes package (pip install ml_dtypes)") from None
        return np.dtype(ml_dtypes.bfloat16)
    return np.dtype(dtype)


class RowBlocks:
    """Dequantize tensors in blocks of whole rows into ``dtype``, through buffers reused from call to call.

    One instance serves any number of tensors one after another (not concurrently): its float32
    staging buffer (and, for another ``dtype``, the cast buffer) is allocated once and grows only
    for a row longer than it, so a pass over a whole model keeps a small, steady footprint.

    Parameters
    ----------
    dtype : numpy dtype or str, optional
        Type of the blocks handed out; float32 by default. ``"bfloat16"`` needs ``ml_dtypes``.
    threads : int, optional
        Threads per block, as for :func:`dequantize`.
    block_elements : int, optional
        Elements per block (rounded down to whole rows, at least one row). By default about a
        million per 4 threads, at most 16 million.
    """

    #: The block size for one thread; more threads get larger blocks unless ``block_elements`` is given.
    BASE_BLOCK_ELEMENTS = _BLOCK_ELEMENTS

    def __init__(self, dtype: Any = None, *, threads: int | None = None, block_elements: int | None = None) -> None:
        self.dtype = np.dtype(np.float32) if dtype is None else resolve_dtype(dtype)
        self.threads = None if threads is None else _backend.check_threads(threads)
        if block_elements is None:
            n_threads = _backend.resolve_threads(self.threads)
            block_elements = _block_elements(n_threads)
        elif operator.index(block_elements) < 1:
            raise ValueError(f"block_elements must be at least 1, got {block_elements}")
        self.block_elements = operator.index(block_elements)
        self._buffer = np.empty(0, np.float32)
        self._cast = np.empty(0, self.dtype)

    def _buffers(self, n_elements: int) -> tuple[np.ndarray, np.ndarray | None]:
        if self._buffer.size < n_elements:
            self._buffer = np.empty(n_elements, np.float32)
            if self.dtype != np.float32:
                self._cast = np.empty(n_elements, self.dtype)
        return self._buffer, (None if self.dtype == np.float32 else self._cast)

    def iter(self, data: Any, type: GGMLType | int | str, shape: Any = None, *,  # noqa: A002 - as dequantize
             rows: slice | Any | None = None, byteorder: str = "<") -> Iterator[tuple[int, np.ndarray]]:
        """Yield ``(first, block)``: the result's rows ``first ...`` as a ``(n, ne0)`` array of ``dtype``.

        Arguments as for :func:`dequantize`. Each block is a view of this object's buffers,
        valid until the next one is requested; copy it to keep it. ``first`` counts rows of the
        result (of the selection, with ``rows``). Argument errors are raised at the first
        ``next()``.
        """
        qtype = resolve_type(type)
        src = contiguous_bytes(data)
        dims = _check_shape(shape, qtype, src.size)
        ne0 = dims[-1] if dims else 1
        n_rows = math.prod(dims[:-1])
        selection = slice(0, n_rows) if rows is None else _check_rows(rows, n_rows)
        if isinstance(selection, slice):
            n_selected, offset = selection.stop - selection.start, selection.start
        else:
            n_selected, offset = selection.size, 0
        if n_selected == 0 or ne0 == 0:
            return
        rows_per_block = max(1, min(n_selected, self.block_elements // ne0))
        buffer, cast = self._buffers(rows_per_block * ne0)
        for first in range(0, n_selected, rows_per_block):
            last = min(n_selected, first + rows_per_block)
            block_rows: slice | np.ndarray = (slice(offset + first, offset + last) if isinstance(selection, slice)
                                              else selection[first:last])
            size = (last - first) * ne0
            block = dequantize(src, qtype, dims, rows=block_rows, out=buffer[:size], threads=self.threads,
                               byteorder=byteorder)
            if cast is not None:
                if _half_type(self.dtype) is not None:
                    narrow_floats(block, self.dtype, out=cast[:size], threads=self.threads)
                else:
                    np.copyto(cast[:size], block, casting="unsafe")
                block = cast[:size]
            yield first, block.reshape(last - first, ne0)


def dequantize_as(data: Any, type: GGMLType | int | str, shape: Any = None, *,  # noqa: A002 - as dequantize
                  dtype: Any = None, rows: slice | Any | None = None, out: np.ndarray | None = None,
                  threads: int | None = None, byteorder: str = "<") -> np.ndarray:
    """:func:`dequantize` into any ``dtype``, through a small float32 buffer (never a float32 copy of the whole).

    Parameters
    ----------
    data, type, shape, rows, threads, byteorder
        As for :func:`dequantize`.
    dtype : numpy dtype or str, optional
        The result's type; float32 (the default) is :func:`dequantize` itself. ``"bfloat16"``
        needs ``ml_dtypes``. Values are cast as numpy's ``astype`` would (float16 and bfloat16
        by :func:`narrow_floats`: the same bits, NaN payloads aside).
    out : numpy.ndarray, optional
        A writable C-contiguous array of ``dtype`` with as many elements as the result.

    Returns
    -------
    numpy.ndarray
        Of ``dtype``, shaped as :func:`dequantize` would shape it, or ``out``.

    Raises
    ------
    As :func:`dequantize`; ``TypeError``/``ValueError`` for a bad ``out``; ``ImportError``
    for bfloat16 without ``ml_dtypes``.
    """
    target = np.dtype(np.float32) if dtype is None else resolve_dtype(dtype)
    if target == np.float32:
        return dequantize(data, type, shape, rows=rows, out=out, threads=threads, byteorder=byteorder)
    qtype = resolve_type(type)
    src = contiguous_bytes(data)
    dims = _check_shape(shape, qtype, src.size)
    ne0 = dims[-1] if dims else 1
    if rows is None:
        result_shape = dims
    else:
        selection = _check_rows(rows, math.prod(dims[:-1]))
        n_selected = selection.stop - selection.start if isinstance(selection, slice) else selection.size
        result_shape = (n_selected, ne0)
    n_out = math.prod(result_shape)
    if out is None:
        result = np.empty(result_shape, target)
    else:
        result = check_out(out, n_out, target)
    flat = result.reshape(-1)
    half = _half_type(target) is not None
    if half and qtype == GGMLType.F32 and rows is None and byteorder == "<" and src.ctypes.data % 4 == 0:
        # the values are the data: narrowed straight from it, no staging copy
        narrow_floats(src[: n_out * 4].view(np.float32), target, out=flat, threads=threads)
        return result
    if rows is None:
        # the whole tensor: flat pieces of whole blocks (rows do not matter, and a long row is split too),
        # each dequantized on every thread into a small float32 buffer, then cast into place
        block_size, type_size = TYPE_TRAITS[qtype]
        piece = max(block_size, _block_elements(_backend.resolve_threads(threads)) // block_size * block_size)
        buffer = np.empty(min(piece, n_out), np.float32)
        for start in range(0, n_out, piece):
            stop = min(n_out, start + piece)
            values = dequantize(src[start // block_size * type_size: stop // block_size * type_size], qtype,
                                (stop - start,), out=buffer[: stop - start], threads=threads, byteorder=byteorder)
            if half:
                narrow_floats(values, target, out=flat[start:stop], threads=threads)
            else:
                np.copyto(flat[start:stop], values, casting="unsafe")
        return result
    blocks = RowBlocks(np.float32 if half else target, threads=threads)  # half types: narrowed straight into place
    for first, block in blocks.iter(src, qtype, dims, rows=rows, byteorder=byteorder):
        part = flat[first * ne0: first * ne0 + block.size]
        if half:
            narrow_floats(block.reshape(-1), target, out=part, threads=threads)
        else:
            part[...] = block.reshape(-1)
    return result
