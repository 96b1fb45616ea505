"""Quantize float arrays into GGUF tensor data (ggml's block formats, ggml's bits).

The work is done by the "quantize" column of the kernel table (``_c/kernels.pxi``), with the GIL
released and rows split across threads; every type gives the same bytes for any thread count and
on every CPU path. Types whose quantizer has not landed yet raise :class:`NotImplementedError`;
:func:`supported_types` lists the others.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from . import _backend
from ._args import check_out
from .types import TYPE_TRAITS, GGMLType, resolve_type, types_where

__all__ = ["has_quantize", "quantize", "requires_imatrix", "supported_types"]

#: Types ggml refuses to quantize without an importance matrix (too few bits to pick blocks blind).
_IMATRIX_REQUIRED = types_where(imatrix="required")

#: Below this many input elements per thread, extra threads cost more than they save (waking a
#: pool thread takes tens of microseconds).
_MIN_ELEMENTS_PER_THREAD = 1 << 16
#: The same for the types quantized at a billion elements a second or more: 2^16 of them take
#: about as long as the wake-up.
_MIN_ELEMENTS_PER_THREAD_FAST = 1 << 20
#: Types without an importance-matrix path in ggml: an imatrix is checked, then left out.
_IMATRIX_IGNORED = types_where(imatrix="ignored")
_FAST_TYPES = types_where(fast=True)

_FLOAT_INPUTS = (np.float32, np.float16, np.float64)


def has_quantize(type_: GGMLType | int | str) -> bool:
    """Whether :func:`quantize` can produce tensors of ``type_``."""
    try:
        qtype = resolve_type(type_)
    except (TypeError, ValueError):
        return False
    return bool(_backend.kernels().has_quantize(int(qtype)))


def supported_types() -> tuple[GGMLType, ...]:
    """Every tensor type :func:`quantize` can produce, in id order."""
    return tuple(t for t in GGMLType if _backend.kernels().has_quantize(int(t)))


def requires_imatrix(type_: GGMLType | int | str) -> bool:
    """Whether quantizing to ``type_`` needs an importance matrix (as in ggml: IQ2_XXS, IQ2_XS, IQ1_S)."""
    return resolve_type(type_) in _IMATRIX_REQUIRED


def _as_float32(x: Any) -> np.ndarray:
    """``x`` as a C-contiguous float32 array (float16, bfloat16 and float64 are converted)."""
    if not isinstance(x, np.ndarray):
        try:
            x = np.asarray(x)
        except Exception as exc:  # noqa: BLE001 - numpy raises many kinds for odd objects
            raise TypeError(f"x must be an array of floats, not {type(x).__name__} ({exc})") from None
    if x.dtype in _FLOAT_INPUTS or x.dtype.name == "bfloat16":
        return np.asarray(x, dtype=np.float32, order="C")  # (ascontiguousarray makes 0-d 1-D)
    raise TypeError(f"x must be float32, float16, bfloat16 or float64, not {x.dtype}")


def _check_imatrix(imatrix: Any, n_per_row: int) -> np.ndarray | None:
    if imatrix is None:
        return None
    weights = _as_float32(imatrix)
    if weights.ndim != 1 or weights.size != n_per_row:
        raise ValueError(f"imatrix must have shape ({n_per_row},) (one weight per column), not {weights.shape}")
    if not np.isfinite(weights).all():
        raise ValueError(f"imatrix weight {int(np.flatnonzero(~np.isfinite(weights))[0])} is not finite")
    if (weights < 0).any():
        raise ValueError(f"imatrix weight {int(np.flatnonzero(weights < 0)[0])} is negative")
    return weights


def quantize(
    x: Any,
    type: GGMLType | int | str,  # noqa: A002 - the GGUF word for it
    *,
    imatrix: Any = None,
    threads: int | None = None,
    out: np.ndarray | None = None,
) -> np.ndarray:
    """Quantize float values into the blocks of a ggml tensor type.

    Parameters
    ----------
    x : numpy.ndarray
        Values, 1-D (one row) or 2-D ``(rows, n_per_row)``; float32, or float16 / bfloat16 /
        float64 (converted to float32 first). Every value must be finite.
    type : GGMLType, int or str
        ggml tensor type to produce. ``n_per_row`` must be a multiple of its block size.
    imatrix : numpy.ndarray, optional
        Importance weights, one per column (``n_per_row`` finite values >= 0), as ggml's
        ``quantize_<type>`` takes them; required by IQ2_XXS, IQ2_XS and IQ1_S, ignored by the
        plain float types.
    threads : int, optional
        Number of threads the rows are split over; ``None`` uses
        :func:`fastgguf.get_num_threads`. The bytes do not depend on it.
    out : numpy.ndarray, optional
        A writable C-contiguous uint8 array of the result's shape, filled and returned. After a
        ValueError for a non-finite value in ``x`` its contents are unspecified (rows are checked
        as they are quantized).

    Returns
    -------
    numpy.ndarray
        uint8 of shape ``(rows, row_bytes)`` (``(row_bytes,)`` for 1-D ``x``), where
        ``row_bytes = n_per_row / block_size * type_size``: the tensor's bytes, little-endian.

    Raises
    ------
    NotImplementedError
        No quantizer for this type yet (see :func:`supported_types`).
    ValueError
        Unknown type id; ``x`` not 1-D or 2-D; ``n_per_row`` not a multiple of the block size;
        a non-finite value in ``x`` (the first bad row is named); ``imatrix`` missing where the
        type needs one, or of the wrong length, or with a negative or non-finite weight; ``out``
        of the wrong shape, not C-contiguous or read-only; ``threads < 1``.
    TypeError
        ``x``, ``imatrix`` or ``out`` of the wrong kind or dtype; ``type`` or ``threads`` not an int.
    """
    qtype = resolve_type(type)
    kernels = _backend.kernels()
    if not kernels.has_quantize(int(qtype)):
        raise NotImplementedError(f"quantization to {qtype.name} is not implemented yet")
    n_threads = _backend.resolve_threads(threads)
    values = _as_float32(x)
    if values.ndim not in (1, 2):
        raise ValueError(f"x must be 1-D or 2-D (rows, n_per_row), not {values.ndim}-D")
    rows = values.reshape(1, -1) if values.ndim == 1 else values
    n_rows, n_per_row = rows.shape
    block_size, type_size = TYPE_TRAITS[qtype]
    if n_per_row % block_size:
        raise ValueError(f"row length {n_per_row} is not a multiple of the {qtype.name} block size {block_size}")
    weights = _check_imatrix(imatrix, n_per_row)
    if qtype in _IMATRIX_IGNORED:
        weights = None  # (so these types take their one-pass, NaN-checking kernels with or without one)
    if weights is None and qtype in _IMATRIX_REQUIRED:
        raise ValueError(f"quantizing to {qtype.name} needs an importance matrix (imatrix=), as in ggml")
    row_bytes = n_per_row // block_size * type_size
    result_shape = (row_bytes,) if values.ndim == 1 else (n_rows, row_bytes)
    if out is None:
        result = np.empty(result_shape, dtype=np.uint8)
    else:
        result = check_out(out, result_shape, np.uint8)
        if np.may_share_memory(result, rows):
            raise ValueError("out overlaps x")
    dst = result.reshape(n_rows, row_bytes)
    per_thread = _MIN_ELEMENTS_PER_THREAD_FAST if qtype in _FAST_TYPES and weights is None else _MIN_ELEMENTS_PER_THREAD
    n_chunks = max(1, min(n_threads, n_rows, rows.size // per_thread))
    # The kernels check each row for NaN/inf just before quantizing it (while it is in cache) and
    # return the first bad row of their chunk, or -1.
    first_bad: list[int] = []
    tasks = []
    for k in range(n_chunks):
        r0, r1 = n_rows * k // n_chunks, n_rows * (k + 1) // n_chunks
        if r1 > r0:
            tasks.append(_chunk(kernels.quantize_into, rows[r0:r1], dst[r0:r1], int(qtype), weights, r0, first_bad))
    if tasks:
        _backend.run_chunks(tasks)
    if first_bad:
        raise ValueError(f"x has a non-finite value in row {min(first_bad)}")
    return result


def _chunk(quantize_into, rows, dst, type_id, weights, r0, first_bad):
    def run() -> None:
        bad = quantize_into(rows, dst, type_id, weights)
        if bad >= 0:
            first_bad.append(r0 + bad)
    return run
