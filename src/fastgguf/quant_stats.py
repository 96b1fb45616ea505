"""How much a quantization format loses: error metrics of a round trip (quantize, then dequantize).

:func:`quant_error` quantizes an array to one ggml type and back, row block by row block, and
measures the difference. :class:`ErrorStats` is the streaming accumulator behind it, usable to
aggregate over many tensors (``fastgguf quant-stats`` does that for a whole model).

Every sum is accumulated in float64. Memory stays bounded whatever the input's size: one block
of rows (about a million elements) at a time, plus, for the percentiles, either the absolute
errors themselves (up to :data:`EXACT_PERCENTILE_LIMIT` elements, then the percentiles are
exact: numpy's default linear interpolation) or a fixed histogram of them (see
:class:`ErrorStats`).
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np

from . import quant
from .types import TYPE_TRAITS, GGMLType

__all__ = ["EXACT_PERCENTILE_LIMIT", "ErrorStats", "QuantError", "quant_error", "quantizable_types", "requires_imatrix",
           "round_trip_rows"]

#: Up to this many elements, p95 and median are exact (every absolute error is kept: 32 MiB at most).
EXACT_PERCENTILE_LIMIT = 1 << 22

#: Rows are quantized and dequantized in blocks of about this many elements.
_BLOCK_ELEMENTS = 1 << 20

# The histogram's buckets: the top 16 bits of an absolute error's float32 bit pattern (sign 0,
# 8 exponent bits, 7 mantissa bits). Bit patterns of non-negative floats sort as the floats do,
# so a bucket is the interval between two neighbouring 16-bit prefixes: at most 2**-7 of its
# value wide, whatever the errors' scale, and a percentile read at the bucket's middle is within
# 2**-8 (0.4 %) of the exact one.
_HISTOGRAM_SHIFT = 16
_HISTOGRAM_BUCKETS = 1 << (32 - 1 - _HISTOGRAM_SHIFT)


@dataclass(frozen=True)
class QuantError:
    """Error metrics of a round trip through one quantization type.

    Attributes
    ----------
    type : GGMLType
    n_elements : int
    bits_per_weight : float
        The format's storage cost (block bytes x 8 / block elements).
    rmse : float
        Root mean square of the error (round trip minus input).
    rel_rmse : float
        ``rmse`` divided by the root mean square of the input (0 for an exact round trip,
        inf for a non-zero error on an all-zero input).
    max_abs_error, p95_abs_error, median_abs_error : float
        Largest, 95th percentile and median absolute error.
    cosine : float
        Cosine similarity of the input and its round trip (1 when both are all zeros).
    snr_db : float
        Signal to noise ratio, ``10 log10(sum x**2 / sum error**2)`` (inf for an exact round trip).
    weighted_rel_rmse : float
        ``rel_rmse`` with each column weighted by the importance matrix:
        ``sqrt(sum imatrix[j] * error[i, j]**2 / sum imatrix[j] * x[i, j]**2)``, the relative RMS
        error of the layer's output for inputs whose column ``j`` has mean square
        ``imatrix[j]`` (uncorrelated columns). This is what an importance matrix makes the
        quantizers minimise; plain ``rel_rmse`` may even grow with one. Equal to ``rel_rmse``
        when no importance matrix was given.
    percentiles_exact : bool
        Whether p95 and median are exact, or read from the histogram (within 0.4 %).
    quantize_seconds, dequantize_seconds : float
        Time spent in :func:`fastgguf.quantize` and in :func:`fastgguf.dequantize`.
    """

    type: GGMLType
    n_elements: int
    bits_per_weight: float
    rmse: float
    rel_rmse: float
    max_abs_error: float
    p95_abs_error: float
    median_abs_error: float
    cosine: float
    snr_db: float
    percentiles_exact: bool
    weighted_rel_rmse: float = math.nan
    quantize_seconds: float = 0.0
    dequantize_seconds: float = 0.0

    #: The keys of :meth:`as_dict`, in order.
    KEYS = ("type", "n_elements", "bits_per_weight", "rmse", "rel_rmse", "weighted_rel_rmse", "max_abs_error", "p95_abs_error",
            "median_abs_error", "cosine", "snr_db", "quantize_melem_s", "dequantize_gelem_s")

    @property
    def quantize_melem_s(self) -> float:
        """Quantization speed, million elements per second (nan if not timed)."""
        return self.n_elements / self.quantize_seconds / 1e6 if self.quantize_seconds > 0 else math.nan

    @property
    def dequantize_gelem_s(self) -> float:
        """Dequantization speed, billion elements per second (nan if not timed)."""
        return self.n_elements / self.dequantize_seconds / 1e9 if self.dequantize_seconds > 0 else math.nan

    def as_dict(self) -> dict[str, Any]:
        """The metrics as plain Python values, ``type`` as its name, keys in :attr:`KEYS` order."""
        values = asdict(self)
        values["type"] = self.type.name
        values["quantize_melem_s"] = self.quantize_melem_s
        values["dequantize_gelem_s"] = self.dequantize_gelem_s
        return {key: values[key] for key in self.KEYS}


class ErrorStats:
    """Streaming accumulator of round-trip errors for one type: feed blocks, read a :class:`QuantError`.

    Sums (of ``x**2``, ``y**2``, ``x*y`` and ``(y-x)**2``, and of the last two weighted by the
    importance matrix when one is given to :meth:`add`) are float64. Absolute errors are kept
    (float64) for exact percentiles until their count passes ``exact_limit``; from then on they go into a
    histogram of 32,768 buckets (256 KiB) keyed by the top 16 bits of the float32 bit pattern of
    ``|y - x|``: each bucket spans at most 2**-7 of its values, so a percentile read at a
    bucket's middle is within 0.4 % of the exact one, at any scale.

    Parameters
    ----------
    type : GGMLType or int
    exact_limit : int, optional
        Most elements for which percentiles stay exact (default :data:`EXACT_PERCENTILE_LIMIT`).
    """

    def __init__(self, type: GGMLType | int, *, exact_limit: int = EXACT_PERCENTILE_LIMIT) -> None:  # noqa: A002
        self.type = GGMLType(type)
        self.exact_limit = exact_limit
        self.n = 0
        self.sum_xx = self.sum_yy = self.sum_xy = self.sum_ee = 0.0
        self.weighted_sum_xx = self.weighted_sum_ee = 0.0
        self.max_abs = 0.0
        self.quantize_seconds = self.dequantize_seconds = 0.0
        self._errors: list[np.ndarray] | None = []
        self._histogram: np.ndarray | None = None

    def add(self, x: np.ndarray, y: np.ndarray, weights: np.ndarray | None = None) -> None:
        """Account for input values ``x`` and their round trip ``y`` (same size; any shape).

        ``weights`` (the importance matrix: one non-negative value per column, rows being the
        last axis of ``x``) weights the sums behind ``weighted_rel_rmse``; without it they are
        the plain ones.
        """
        x64 = np.asarray(x, dtype=np.float64).reshape(-1)
        y64 = np.asarray(y, dtype=np.float64).reshape(-1)
        if x64.size != y64.size:
            raise ValueError(f"x has {x64.size} elements, y has {y64.size}")
        if x64.size == 0:
            return
        error = y64 - x64
        sum_xx, sum_ee = float(np.dot(x64, x64)), float(np.dot(error, error))
        if weights is None:
            weighted_xx, weighted_ee = sum_xx, sum_ee
        else:
            w64 = np.asarray(weights, dtype=np.float64).reshape(-1)
            if w64.size == 0 or x64.size % w64.size:
                raise ValueError(f"{w64.size} weights do not divide {x64.size} elements into rows")
            columns = w64.size
            weighted_xx = float(np.einsum("ij,ij,j->", x64.reshape(-1, columns), x64.reshape(-1, columns), w64))
            weighted_ee = float(np.einsum("ij,ij,j->", error.reshape(-1, columns), error.reshape(-1, columns), w64))
        self.n += x64.size
        self.sum_xx += sum_xx
        self.sum_yy += float(np.dot(y64, y64))
        self.sum_xy += float(np.dot(x64, y64))
        self.sum_ee += sum_ee
        self.weighted_sum_xx += weighted_xx
        self.weighted_sum_ee += weighted_ee
        magnitude = np.abs(error)
        self.max_abs = max(self.max_abs, float(magnitude.max()))
        self._keep(magnitude)

    def _keep(self, magnitude: np.ndarray) -> None:
        if self._errors is not None:
            self._errors.append(magnitude)
            if self.n <= self.exact_limit:
                return
            kept, self._errors = self._errors, None
            self._histogram = np.zeros(_HISTOGRAM_BUCKETS, np.int64)
            for part in kept:
                self._count(part)
            return
        self._count(magnitude)

    def _count(self, magnitude: np.ndarray) -> None:
        assert self._histogram is not None
        buckets = magnitude.astype(np.float32).view(np.uint32) >> _HISTOGRAM_SHIFT
        self._histogram += np.bincount(buckets, minlength=_HISTOGRAM_BUCKETS)[:_HISTOGRAM_BUCKETS]

    def merge(self, other: ErrorStats) -> None:
        """Add another accumulator's elements (of the same type) to this one."""
        if other.type != self.type:
            raise ValueError(f"cannot merge {other.type.name} statistics into {self.type.name}")
        self.n += other.n
        self.sum_xx += other.sum_xx
        self.sum_yy += other.sum_yy
        self.sum_xy += other.sum_xy
        self.sum_ee += other.sum_ee
        self.weighted_sum_xx += other.weighted_sum_xx
        self.weighted_sum_ee += other.weighted_sum_ee
        self.max_abs = max(self.max_abs, other.max_abs)
        self.quantize_seconds += other.quantize_seconds
        self.dequantize_seconds += other.dequantize_seconds
        if other._errors is not None:
            for part in other._errors:
                self._keep(part)
            return
        assert other._histogram is not None
        if self._errors is not None:  # switch to a histogram first, then add the other's
            kept, self._errors = self._errors, None
            self._histogram = np.zeros(_HISTOGRAM_BUCKETS, np.int64)
            for part in kept:
                self._count(part)
        assert self._histogram is not None
        self._histogram += other._histogram

    def _percentiles(self) -> tuple[float, float]:
        """(p95, median) of the absolute errors."""
        if self._errors is not None:
            errors = np.concatenate(self._errors)
            p95, median = np.percentile(errors, [95, 50])
            return float(p95), float(median)
        assert self._histogram is not None
        cumulative = np.cumsum(self._histogram)
        return self._histogram_percentile(cumulative, 95), self._histogram_percentile(cumulative, 50)

    def _histogram_percentile(self, cumulative: np.ndarray, q: float) -> float:
        rank = q / 100 * (self.n - 1)  # 0-based, as numpy's linear interpolation counts
        bucket = int(np.searchsorted(cumulative, math.floor(rank), side="right"))
        if bucket == 0:
            return 0.0  # zero (and subnormal) errors
        low = np.array([bucket << _HISTOGRAM_SHIFT], np.uint32).view(np.float32)[0]
        high = np.array([(bucket + 1) << _HISTOGRAM_SHIFT], np.uint32).view(np.float32)[0]
        return min(0.5 * (float(low) + float(high)), self.max_abs)

    def result(self) -> QuantError:
        """The metrics over everything added so far."""
        n = self.n
        if n == 0:
            raise ValueError("no elements were added")
        rmse = math.sqrt(self.sum_ee / n)
        rms_x = math.sqrt(self.sum_xx / n)
        rel_rmse = rmse / rms_x if rms_x > 0 else (0.0 if rmse == 0 else math.inf)
        if self.weighted_sum_xx > 0:
            weighted_rel_rmse = math.sqrt(self.weighted_sum_ee / self.weighted_sum_xx)
        else:
            weighted_rel_rmse = 0.0 if self.weighted_sum_ee == 0 else math.inf
        norms = math.sqrt(self.sum_xx) * math.sqrt(self.sum_yy)
        if norms > 0:
            cosine = self.sum_xy / norms
        else:
            cosine = 1.0 if self.sum_xx == self.sum_yy == 0 else 0.0
        if self.sum_ee == 0:
            snr_db = math.inf
        elif self.sum_xx == 0:
            snr_db = -math.inf
        else:
            snr_db = 10 * math.log10(self.sum_xx / self.sum_ee)
        p95, median = self._percentiles()
        return QuantError(
            type=self.type, n_elements=n, bits_per_weight=TYPE_TRAITS[self.type].bits_per_weight, rmse=rmse,
            rel_rmse=rel_rmse, max_abs_error=self.max_abs, p95_abs_error=p95, median_abs_error=median,
            cosine=cosine, snr_db=snr_db, percentiles_exact=self._errors is not None,
            weighted_rel_rmse=weighted_rel_rmse,
            quantize_seconds=self.quantize_seconds, dequantize_seconds=self.dequantize_seconds)


def quantizable_types() -> tuple[GGMLType, ...]:
    """The types :func:`fastgguf.quantize` can produce (a seam the tests replace)."""
    return quant.supported_types()


def requires_imatrix(type: GGMLType | int) -> bool:  # noqa: A002
    """Whether the quantizer refuses ``type`` without an importance matrix (ggml: IQ2_XXS, IQ2_XS, IQ1_S)."""
    return quant.requires_imatrix(type)


def _quantize_function() -> Callable[..., Any]:
    """:func:`fastgguf.quantize` (a seam: the tests stand gguf-py's quantizers in for it)."""
    return quant.quantize


def round_trip_rows(x: np.ndarray, type: GGMLType | int, stats: ErrorStats, *,  # noqa: A002
                    imatrix: np.ndarray | None = None, threads: int | None = None,
                    out: np.ndarray | None = None) -> None:
    """Quantize the float32 rows ``x`` (2-D, C-contiguous) to ``type``, dequantize, and add to ``stats``.

    Times both steps into ``stats`` (dequantizing: the better of two runs). ``out`` is an optional float32 scratch array of at least
    ``x.size`` elements for the round trip (reused across calls it keeps the heap steady).
    """
    from .dequant import dequantize

    quantize = _quantize_function()
    started = time.perf_counter()
    packed = quantize(x, type, imatrix=imatrix, threads=threads)
    stats.quantize_seconds += time.perf_counter() - started
    target = np.empty(x.size, np.float32) if out is None else out[: x.size]
    best = math.inf
    for _ in range(2):  # dequantizing is quick: the better of two runs, the first one warms caches and threads
        started = time.perf_counter()
        y = dequantize(packed, type, x.shape, out=target, threads=threads)
        best = min(best, time.perf_counter() - started)
    stats.dequantize_seconds += best
    stats.add(x, y, imatrix)


def quant_error(x: Any, type: GGMLType | int | str, *, imatrix: Any = None,  # noqa: A002 - the GGUF word
                threads: int | None = None) -> QuantError:
    """Quantize ``x`` to ``type``, dequantize it back, and measure what was lost.

    Parameters
    ----------
    x : array_like
        Values to quantize, as rows along the last axis (a 1-D array is one row); converted to
        float32 first (the error is measured against that float32 copy). The row length must
        be a multiple of the type's block size.
    type : GGMLType, int or str
        Target type (a name such as ``"Q4_K"`` is accepted).
    imatrix : array_like, optional
        Importance of each column (row length non-negative floats), as for :func:`fastgguf.quantize`.
    threads : int, optional
        Threads for quantizing and dequantizing.

    Returns
    -------
    QuantError
        The metrics (``.as_dict()`` for plain values), computed over row blocks of about a
        million elements with float64 sums; p95/median exact up to
        :data:`EXACT_PERCENTILE_LIMIT` elements, else from the histogram of :class:`ErrorStats`.

    Raises
    ------
    ValueError
        Empty input, or a row length the type's block size does not divide.
    NotImplementedError
        If this build has no quantizer for ``type``.
    """
    qtype = GGMLType[type.upper()] if isinstance(type, str) else GGMLType(type)
    array = np.asarray(x)
    if array.ndim == 0:
        array = array.reshape(1)
    rows = array.reshape(-1, array.shape[-1])  # a view when it can be: converted block by block below
    n_rows, row_length = rows.shape
    if rows.size == 0:
        raise ValueError("x is empty")
    block_size = TYPE_TRAITS[qtype].block_size
    if row_length % block_size:
        raise ValueError(f"row length {row_length} is not a multiple of the {qtype.name} block size {block_size}")
    weights = None if imatrix is None else np.ascontiguousarray(imatrix, dtype=np.float32)
    stats = ErrorStats(qtype)
    rows_per_block = max(1, _BLOCK_ELEMENTS // row_length)
    block_elements = min(n_rows, rows_per_block) * row_length
    source, scratch = np.empty(block_elements, np.float32), np.empty(block_elements, np.float32)
    for first in range(0, n_rows, rows_per_block):
        part = rows[first: first + rows_per_block]
        block = source[: part.size].reshape(part.shape)
        np.copyto(block, part, casting="unsafe")  # float32, contiguous, whatever the input was
        round_trip_rows(block, qtype, stats, imatrix=weights, threads=threads, out=scratch)
    return stats.result()
