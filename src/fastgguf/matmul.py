"""Matrix products straight from GGUF blocks: inference without a float32 copy of the weights.

:func:`matmul` computes ``x @ W.T`` where ``W`` stays in its quantized blocks: each weight row is
dequantized a chunk of blocks at a time (1024 elements, 4 KiB of floats) into a scratch buffer
that stays in L1 and is consumed at once by every row of ``x``; nothing of ``W`` is ever
written out as floats. :func:`matmul_id` is the same for the experts of a mixture-of-experts
layer, :func:`take_rows` gathers embedding rows.

Two paths:

* the float path (``exact=True``, the default): float32 products accumulated in float32 in 16
  interleaved lanes, summed in a fixed order; the same bits for every thread count and every
  kernel build (portable, AVX2, AVX-512). Relative error vs a float64 ``x @ dequantize(W).T``
  is a few 1e-7 (bound: 1e-5). Q2_K to Q6_K, IQ4_XS, the IQ1, IQ2 and IQ3 types, TQ1_0, TQ2_0, Q8_0,
  Q4_0, Q5_0, Q4_1, Q5_1, IQ4_NL and MXFP4 factor each sub-block's (or block's) scale out instead
  of dequantizing
  (``S * sum(q * x) - M * sum(x)``, the small integers ``q`` exact as floats): fewer float
  operations per weight, the same guarantees, and a row of ``x`` gets the same bits whatever
  batch it comes in. For one row of ``x`` the avx512 build runs Q4_K, Q5_K, Q6_K and the per-32
  types' weight rows in pairs, each row's 8 lanes in one half of a 512-bit vector, and above 8
  rows of ``x`` it takes the rows of ``x`` in pairs the same way (the same operations per row).
  On CPUs that split 512-bit operations in two (AMD Zen 4) one row of ``x`` takes the 256-bit
  kernels instead for Q4_K, Q5_K and Q6_K (the integer path: the avx2 build's two-row kernels
  for the per-32 types), where they measured faster; ``FASTGGUF_AVX512_FULL_WIDTH=0``
  or ``1`` overrides the detection. The bits are the same either way.
* the integer path (``exact=False``, every quantized weight type; the float types stay on the
  float path): ``x`` is rounded to int8 and each weight block is unpacked once and multiplied
  with every row in integers (AVX2 ``maddubs`` in the SIMD builds, AVX-512 VNNI ``vpdpbusd`` in
  the avx512 build where the CPU has it, unless ``FASTGGUF_NO_VNNI=1``; below 8 rows of ``x`` the
  avx512 build's Q2_K-Q6_K row kernels, and at one row its Q4_0, Q4_1, Q5_0, Q5_1 and MXFP4
  ones, take two sub-blocks or blocks per 512-bit ``maddubs``; every build does the same
  integer and float operations, so gives the same bits, for every thread count). For Q1_0, Q2_0,
  Q4_0, Q4_1, Q5_0, Q5_1, Q8_0, IQ4_NL, MXFP4 and NVFP4 ``x`` has one float scale per 32 values
  and their sum (Q4_1's and Q5_1's offsets are taken against it), as their weights (IQ4_NL's and
  MXFP4's/NVFP4's 4-bit codes go through their value tables to int8 first; NVFP4's two scales per
  32 scale half of the lanes each). For the K-quants and the
  256-value IQ types, TQ1_0 and TQ2_0 (IQ4_XS, IQ1_S, IQ1_M, IQ2_XXS, IQ2_XS, IQ2_S, IQ3_XXS, IQ3_S: runs of 32
  with integer scales, per 32 or 16, under one float; IQ4_XS's codes through its table, the
  IQ1/IQ2/IQ3 grids' rows looked up and signed, IQ1's values times 8 with their +-1/8 shift) it has one
  float scale per 256 values and int16 sums per 16 (ggml's Q8_K): the sums stay integers over the
  whole super-block (scales in integers, mins and offsets from the per-16 sums; TQ2_0's codes and
  TQ1_0's digits with scale 1 and offset 1) and are converted
  to float once per 256 values and row. Rounding ``x`` costs relative error (measured vs float64, quantized Gaussian weights)
  5e-3 to 1e-2 with per-32 scales. With per-256 scales it is 7e-3 on Gaussian ``x``, 1.4-1.7e-2
  on SiLU-gated activations and up to 2.8e-2 with a few 20x outlier channels, the trade ggml
  makes for speed (``benchmarks/bench_matmul.py --int-error``). So it is never the default;
  other types use the float path.
"""

from __future__ import annotations

from functools import partial
from typing import Any

import numpy as np

from . import _backend, dequant as _dequant
from ._args import check_out
from .reader import TensorInfo
from .types import TYPE_TRAITS, GGMLType, resolve_type

__all__ = ["RepackedWeight", "matmul", "matmul_id", "repack", "take_rows"]

#: Below this many weight bytes (times rows of x) per thread, extra threads cost more than they save.
#: Measured (``benchmarks/bench_matmul.py --breakdown``, 2-core VM): handing a chunk to a pool thread
#: costs 25-100 us, and one 256x2048 Q4_K/Q6_K weight alone is 2-3x slower on 2 threads than on 1;
#: but 1 MiB here did not make a whole model's sweep measurably faster (README), so it stays at 128 KiB.
_MIN_WORK_PER_THREAD = 1 << 17

#: Rows of x (per weight) for which a repacked weight's products run on its tiles: (first, last) per
#: tile kernel ("vnni": AVX-512 VNNI; "vnni-split": the same where the CPU splits 512-bit operations;
#: "avx2": one row of x at a time) and type, the rest of the
#: per-32 types by _TILE_ROWS_PER32; None: never (such weights are not repacked for that kernel).
#: Other counts read the original blocks with their own kernels. Measured with the row kernels'
#: long tasks (2 threads, 20-30 weights of 5632 x 2048 from memory, tiles and original blocks
#: alternating, ms per sweep, Zen 5 VM; ``M=m sweepbw``-style loop around ``matmul``), tiles against
#: the original blocks: "vnni" Q4_K level at 1 row, 1.33x at 2, 1.84-1.86x at 4-8, 1.06-1.16x at
#: 16-24; Q5_K 1.2-1.7x at 2-8, 1.10x at 12; Q6_K level at 1, 4 and 8 rows, 0.89x at 2; Q8_0 0.96x
#: at 1, level at 2, 0.57-0.76x at 4-12; Q4_0 and IQ4_NL 1.4x at 2, 1.19x at 3, 0.78-0.90x at 4-12;
#: Q3_K 1.5x at 1, 0.90-0.97x at 2-8; Q2_K 1.5x at 1, 2.0x at 2, level at 4-8; IQ4_XS 2.9x at 2,
#: 3.9x at 8, 1.6x at 32, 1.15x at 128. "avx2" (one row), GB/s: Q4_K 47 / 39-42, Q6_K 46-52 /
#: 40-42, Q8_0 46-51 / 43-46, MXFP4 38 / 34 (with its two-row kernel; the original blocks faster);
#: Q4_0 (two-row kernel) 38-39 / 39-40, but the Q4_0 model file's sweep 6.4-6.6 / 6.9-7.5 ms;
#: Q2_K level; Q3_K, IQ4_XS, IQ4_NL, Q4_1, Q5_0 and Q5_1 1.14-1.4x. "vnni-split" (the same tiles on
#: a CPU that runs 512-bit operations in halves; Zen 4 VM, 5632 x 2048, 2 threads, the same loop):
#: Q4_K 0.99x at 1 row, 1.12x at 2, 1.35-1.50x at 4-8, 1.11-1.13x at 16-32; Q5_K 0.55x at 1,
#: 0.67x at 2, 0.81x at 3, 0.98x at 4, 1.04-1.22x at 5-12, 0.98x at 16; Q6_K 0.49-0.92x and Q8_0
#: 0.75-0.99x everywhere; Q3_K 1.05-1.22x at 1-5, 0.88x at 6; Q2_K 1.07-1.66x at 1-6, 0.79x at 8;
#: IQ4_XS 1.44-2.68x at 1-32; Q4_1 and Q5_1 1.03-1.42x at 1-12, 0.74-0.89x at 16; IQ4_NL (after its
#: two-row kernel) 1.12x at 1, 1.44x at 2, 1.16x at 4, 1.05x at 6, 0.98x at 8; Q4_0, Q5_0 and MXFP4
#: 1.03-1.43x at 1-4, 0.95-1.04x at 6, 0.89-1.00x at 8.
_TILE_ROWS: dict[str, dict[GGMLType, tuple[int, int] | None]] = {
    "vnni": {GGMLType.Q4_K: (2, 24), GGMLType.Q5_K: (1, 12), GGMLType.Q6_K: None, GGMLType.Q8_0: None,
             GGMLType.IQ4_XS: (1, 256), GGMLType.Q3_K: (1, 1), GGMLType.Q2_K: (1, 2)},
    "vnni-split": {GGMLType.Q4_K: (2, 32), GGMLType.Q5_K: (5, 12), GGMLType.Q6_K: None, GGMLType.Q8_0: None,
                   GGMLType.IQ4_XS: (1, 256), GGMLType.Q3_K: (1, 5), GGMLType.Q2_K: (1, 6),
                   GGMLType.Q4_1: (1, 12), GGMLType.Q5_1: (1, 12), GGMLType.IQ4_NL: (1, 6)},
    "avx2": {GGMLType.Q4_K: None, GGMLType.Q6_K: None, GGMLType.Q8_0: None, GGMLType.MXFP4: None,
             GGMLType.Q4_0: None},
}
_TILE_ROWS_PER32 = {"vnni": (1, 3), "vnni-split": (1, 4), "avx2": (1, 1)}


def _tile_rows(kernel: str | None, qtype: GGMLType) -> tuple[int, int] | None:
    """(first, last) rows of x a product of ``qtype`` takes on tiles for tile kernel ``kernel``, or None."""
    if kernel is None:
        return None
    return _TILE_ROWS[kernel].get(qtype, _TILE_ROWS_PER32[kernel])


def _tiles_for(kernels: Any, packed: RepackedWeight | None, qtype: GGMLType, rows: int) -> np.ndarray | None:
    """``packed``'s tiles if a product of ``rows`` rows of x (per weight) runs on them, else None."""
    if packed is None or packed.tiles is None:
        return None
    span = _tile_rows(kernels.repacked_kernel(int(qtype)), qtype)
    return packed.tiles if span is not None and span[0] <= rows <= span[1] else None


class RepackedWeight:
    """A 2-D quantized weight made ready for fast integer-path products by :func:`repack`.

    Pass it to :func:`matmul` (2-D) or :func:`matmul_id` (3-D) as the weight. Attributes:
    ``type``, ``shape`` ((N, K), or (E, N, K)), ``source``
    (the weight it was made from, which the float path and large batches still read), ``tiles``
    (the interleaved blocks, or ``None`` where nothing was repacked) and ``nbytes`` (of the tiles).
    """

    __slots__ = ("source", "type", "shape", "tiles")

    def __init__(self, source: Any, qtype: GGMLType, shape: tuple[int, ...], tiles: np.ndarray | None) -> None:
        self.source = source
        self.type = qtype
        self.shape = shape
        self.tiles = tiles

    @property
    def repacked(self) -> bool:
        """Whether the integer path of this machine runs on interleaved tiles (see :func:`repack`)."""
        return self.tiles is not None

    @property
    def nbytes(self) -> int:
        return 0 if self.tiles is None else int(self.tiles.nbytes)

    def __repr__(self) -> str:
        state = f"{self.nbytes} bytes repacked" if self.repacked else "not repacked"
        return f"<RepackedWeight {self.type.name} {'x'.join(map(str, self.shape))}, {state}>"


def repack(weight: Any, type: GGMLType | int | str | None = None, *,  # noqa: A002
           threads: int | None = None) -> RepackedWeight:
    """Prepare a weight once for the integer path (``exact=False``) of :func:`matmul` (2-D) or
    :func:`matmul_id` (3-D experts).

    The blocks of 16 weight rows are interleaved 4 bytes at a time (the same bytes per row as the
    original), so that one AVX-512 VNNI instruction makes 4 products for 16 weight rows and the
    float steps run 16 rows wide: ggml's load-time repacking, in a layout of fastgguf's own. Then
    ``matmul(x, repack(W), exact=False)`` gives the same bits as ``matmul(x, W, exact=False)``. The
    tiles take the row counts where they were measured faster than the original blocks' kernels
    (2 threads, weights from memory, Zen 5): with VNNI Q4_0, Q5_0, Q4_1, Q5_1, IQ4_NL and MXFP4 at
    1-3 rows of ``x`` (1.2-1.4x at 2-3), Q4_K at 2-24 (1.3-1.9x up to 8), Q5_K 1-12 (1.1-1.7x),
    IQ4_XS 1-256 (1.15-3.9x), Q3_K at 1 and Q2_K at 1-2 (1.5-2x). On CPUs that run 512-bit
    operations in halves (Zen 4) other counts: the per-32 types at 1-4 rows (Q4_1 and Q5_1 1-12,
    IQ4_NL 1-6), Q4_K 2-32, Q5_K only 5-12 (0.55x at one row), Q3_K 1-5, Q2_K 1-6. Without VNNI
    (the avx2 build, or ``FASTGGUF_NO_VNNI``) an AVX2 tile kernel takes one row of ``x`` (8 weight
    rows per vector;
    level to 1.4x) for Q5_0, Q4_1, Q5_1, IQ4_NL, Q2_K, Q3_K and IQ4_XS. Q6_K and Q8_0, and Q4_K,
    Q4_0 and MXFP4 without VNNI, are left as they are: their own row kernels read memory as fast
    or faster (their layouts, like Q5_K's, stay in the kernels). Q4_K's and Q5_K's scales take 4
    more bytes per super-block in the tiles, unpacked, IQ4_XS's 2 more. For other types, in the portable build
    and for big-endian data nothing is copied and the products read the original blocks, so any
    weight can be passed.

    Parameters
    ----------
    weight : TensorInfo or numpy.ndarray
        As for :func:`matmul` (2-D) or :func:`matmul_id` (3-D): a tensor, or a uint8 array
        ``(N, row_bytes)`` / ``(E, N, row_bytes)`` of ``type`` blocks.
    type : GGMLType, int or str, optional
        As for :func:`matmul`.
    threads : int, optional
        Threads for the copy; ``None`` uses :func:`fastgguf.get_num_threads`.

    Returns
    -------
    RepackedWeight
        Keeps ``weight`` (the float path and batches beyond the tile kernel's rows read it)
        and the interleaved copy (``nbytes``: the weight's own size, rounded up to 16 rows).
    """
    n_dims = len(weight.shape) if isinstance(weight, TensorInfo) else getattr(weight, "ndim", 2)
    if n_dims not in (2, 3):
        raise ValueError(f"repack takes a 2-D weight or 3-D experts, not {n_dims} dimensions")
    raw, qtype, shape, swapped = _weight_of(weight, type, n_dims)
    kernels = _backend.kernels()
    _check_kernel(kernels, qtype, swapped)
    n_threads = _backend.resolve_threads(threads)
    tiles = None
    if not swapped and _tile_rows(kernels.repacked_kernel(int(qtype)), qtype) is not None:
        rows = kernels.repack_tile_rows()
        experts = raw.reshape(-1, *raw.shape[-2:])
        n_tiles = (shape[-2] + rows - 1) // rows
        tile_bytes = kernels.repack_row_bytes(int(qtype), raw.shape[-1]) * rows
        tiles = np.empty((experts.shape[0] * n_tiles, tile_bytes), dtype=np.uint8)
        per_expert = tiles.reshape(experts.shape[0], n_tiles, -1)
        copy_threads = max(1, min(n_threads, experts[0].nbytes // _MIN_WORK_PER_THREAD))
        for e in range(experts.shape[0]):
            kernels.repack_rows(experts[e], int(qtype), per_expert[e], copy_threads)
    return RepackedWeight(weight, qtype, tuple(int(v) for v in shape), tiles)


def _weight_of(weight: Any, type_: Any, n_dims: int) -> tuple[np.ndarray, GGMLType, tuple[int, ...], bool]:
    """(raw uint8 blocks shaped (..., row_bytes), type, logical shape, big-endian) of ``weight``."""
    if isinstance(weight, TensorInfo):
        if type_ is not None and resolve_type(type_) != weight.type:
            raise ValueError(f"type {type_!r} disagrees with the tensor's type {weight.type.name}")
        qtype = weight.type
        shape = tuple(weight.shape)
        if len(shape) != n_dims:
            raise ValueError(f"tensor {weight.name!r} has shape {shape}, expected {n_dims} dimensions")
        block_size, type_size = TYPE_TRAITS[qtype]
        raw = weight.raw.reshape(*shape[:-1], shape[-1] // block_size * type_size)
        return raw, qtype, shape, weight.byteorder == ">"
    if type_ is None:
        raise TypeError("type is required when weight is an array of raw blocks")
    qtype = resolve_type(type_)
    if not isinstance(weight, np.ndarray):
        raise TypeError(f"weight must be a TensorInfo or a uint8 numpy array, not {type(weight).__name__}")
    if weight.dtype != np.uint8:
        raise TypeError(f"raw weight blocks must have dtype uint8, not {weight.dtype}")
    if weight.ndim != n_dims:
        raise ValueError(f"raw weight blocks must have {n_dims} dimensions, got shape {weight.shape}")
    block_size, type_size = TYPE_TRAITS[qtype]
    if weight.shape[-1] % type_size:
        raise ValueError(f"rows of {weight.shape[-1]} bytes are not whole {qtype.name} blocks ({type_size} bytes)")
    k = weight.shape[-1] // type_size * block_size
    return np.ascontiguousarray(weight), qtype, (*weight.shape[:-1], k), False


def _as_float32(x: Any, name: str = "x") -> np.ndarray:
    arr = np.asarray(x)
    if arr.dtype == np.float32:
        return arr
    if arr.dtype == np.float16 or arr.dtype.name == "bfloat16":
        return arr.astype(np.float32)
    raise TypeError(f"{name} must be float32, float16 or bfloat16, not {arr.dtype}")


def _check_kernel(kernels: Any, qtype: GGMLType, swapped: bool) -> None:
    if not kernels.has_kernel(int(qtype)):
        raise NotImplementedError(f"matmul with {qtype.name} weights is not implemented")
    if swapped and not kernels.has_byteswap(int(qtype)):
        raise NotImplementedError(f"big-endian {qtype.name} weights are not supported")


def _run_rows(kernels, raw2d, type_id: int, x2d, xq, out2d, n_threads, swapped, round_to: int = 0) -> None:
    """Fill out2d (M, N) = x2d @ W.T, output rows split over threads.

    Where the build has its own worker threads (POSIX), one call hands them the whole range: a
    hand-off to Python's pool costs as much as a small product. Elsewhere the range is split here
    and the pieces run on :func:`fastgguf._backend.run_chunks`. Called once per weight of a model
    (a product of one row takes a few microseconds), so it builds no closures.
    """
    n_rows = raw2d.shape[0]
    work = raw2d.nbytes * max(1, x2d.shape[0])
    n_chunks = max(1, min(n_threads, n_rows, work // _MIN_WORK_PER_THREAD))
    tail: tuple[Any, ...]
    if xq is not None:
        kernel, head, tail = kernels.matmul_rows_int, (raw2d, type_id, xq, out2d), ()
    else:
        kernel, head, tail = kernels.matmul_rows, (raw2d, type_id, x2d, out2d), (swapped, round_to)
    if n_chunks == 1 or kernels.has_thread_pool():
        kernel(*head, 0, n_rows, *tail, n_chunks)
    else:
        _backend.run_chunks([partial(kernel, *head, a, b, *tail, 1) for a, b in _dequant._even_parts(n_rows, n_chunks)])


def _prepare_x(x: Any, k: int) -> tuple[np.ndarray, bool]:
    arr = _as_float32(x)
    if arr.ndim not in (1, 2):
        raise ValueError(f"x must be 1-D (K,) or 2-D (M, K), got shape {arr.shape}")
    vector = arr.ndim == 1
    x2d = np.ascontiguousarray(arr.reshape(1, -1) if vector else arr)
    if x2d.shape[1] != k:
        raise ValueError(f"x has {x2d.shape[1]} columns, the weight rows have {k} elements")
    return x2d, vector


def _quantized_x(kernels, type_id: int, x2d: np.ndarray, exact: bool, swapped: bool) -> np.ndarray | None:
    """x rounded to int8 blocks in the layout the type's integer dot takes (per 32 or per 256), or
    None where the float path runs (``exact``, byte-swapped weights, no integer dot, K not whole blocks)."""
    if exact or swapped or not kernels.has_int_dot(type_id):
        return None
    values, block_bytes = kernels.int_x_layout(type_id)
    m, k = x2d.shape
    if k % values:
        return None
    xq = np.empty((m, k // values * block_bytes), dtype=np.uint8)
    (kernels.quantize_x8k if values == 256 else kernels.quantize_x8)(x2d, xq)
    return xq


def _quick(x: Any, weight: np.ndarray, type_: Any, out: np.ndarray | None, threads: Any,
           exact: bool) -> np.ndarray | None:
    """:func:`matmul`'s common call (float32 ``x`` and raw uint8 blocks as C-contiguous arrays, an
    int type) in one kernel call that checks it, or None for the full path: a model's products
    of a few microseconds each are made once per weight and token, and the full path's checks in
    Python cost as much (a 16 x 256 Q4_0 product, one row: 9.3 us a call that way, 4.1 in one step)."""
    if not (isinstance(x, np.ndarray) and isinstance(type_, int) and weight.ndim == 2):
        return None
    n_threads = _backend.get_num_threads() if threads is None else threads
    if not isinstance(n_threads, int) or n_threads < 1:
        return None  # the full path says what is wrong
    if x.ndim == 2:
        x2d = x
    elif x.ndim == 1 and out is None:
        x2d = x.reshape(1, -1)
    else:
        return None
    result = np.empty((x2d.shape[0], weight.shape[0]) if x.ndim == 2 else weight.shape[:1], dtype=np.float32) \
        if out is None else out
    out2d = result if x.ndim == 2 else result.reshape(1, -1)
    if _backend.kernels().matmul_quick(weight, type_, x2d, out2d, n_threads, exact, _MIN_WORK_PER_THREAD):
        return result
    return None


def matmul(
    x: Any,
    weight: Any,
    type: GGMLType | int | str | None = None,  # noqa: A002 - the GGUF word for it
    *,
    out: np.ndarray | None = None,
    threads: int | None = None,
    exact: bool = True,
    round_weights: Any = None,
) -> np.ndarray:
    """``x @ W.T`` in float32, read straight from the quantized blocks of ``W``.

    Parameters
    ----------
    x : array_like
        float32 (float16 and bfloat16 are converted), shape ``(M, K)`` or ``(K,)``.
    weight : TensorInfo, numpy.ndarray or RepackedWeight
        A 2-D tensor of shape ``(N, K)`` from :func:`fastgguf.open`, or a C-contiguous uint8 array
        of shape ``(N, row_bytes)`` holding N rows of ``type`` blocks, or either made ready by
        :func:`repack` (the integer path then runs on its tiles for the rows of ``x`` :func:`repack`
        names, e.g. 1-3 rows for Q4_0 and 2-24 for Q4_K with AVX-512 VNNI, one row without).
    type : GGMLType, int or str, optional
        Tensor type of a raw ``weight``; required then, optional (must agree) for a TensorInfo.
    out : numpy.ndarray, optional
        Writable C-contiguous float32 array of the result's shape, filled and returned.
    threads : int, optional
        Threads over output rows; ``None`` uses :func:`fastgguf.get_num_threads`.
        The result does not depend on it. The GIL is released while the kernels run.
    exact : bool
        ``True`` (default): the float path, relative error ≤ 1e-5 (measured a few 1e-7) vs a
        float64 product with the dequantized weights. ``False``: for every quantized type,
        quantize ``x`` to int8 (per 32 values; per 256 for the 256-value types) and use integer
        dot products (1.2-6x faster on one thread; relative error 5e-3 to 3e-2, see the module
        doc); the float types stay on the float path.
    round_weights : {None, "float16", "bfloat16"}
        With the float path (``exact=True``, required): each weight value is first rounded to
        that type (as :func:`fastgguf.dequant.dequantize_rounded`), so the result is the float32
        product of the weights another library would have cast to it.

    Returns
    -------
    numpy.ndarray
        float32 of shape ``(M, N)``, or ``(N,)`` for a 1-D ``x``.

    Raises
    ------
    ValueError
        Shapes that disagree, a bad ``out``, a raw ``weight`` that is not whole blocks, an unknown type id.
    TypeError
        ``x`` or a raw ``weight`` of the wrong dtype or kind.
    GGUFError
        A mapped file truncated under us.
    NotImplementedError
        A type fastgguf cannot dequantize (or big-endian data of a type without a swap table).
    TypeError, ValueError
        Arguments of the wrong kind, ``threads < 1``.
    """
    if round_weights is None and isinstance(weight, np.ndarray):
        quick = _quick(x, weight, type, out, threads, exact)
        if quick is not None:
            return quick
    packed = None
    if isinstance(weight, RepackedWeight):
        if type is not None and resolve_type(type) != weight.type:
            raise ValueError(f"type {type!r} disagrees with the repacked weight's type {weight.type.name}")
        packed, weight, type = weight, weight.source, weight.type
    raw, qtype, shape, swapped = _weight_of(weight, type, 2)
    round_to = _round_type(round_weights, exact)
    kernels = _backend.kernels()
    _check_kernel(kernels, qtype, swapped)
    n_threads = _backend.resolve_threads(threads)
    n, k = shape
    x2d, vector = _prepare_x(x, k)
    result_shape = (n,) if vector else (x2d.shape[0], n)
    result = np.empty(result_shape, dtype=np.float32) if out is None else check_out(out, result_shape)
    if result.size == 0:
        return result
    out2d = result.reshape(x2d.shape[0], n)
    type_id = int(qtype)
    xq = _quantized_x(kernels, type_id, x2d, exact, swapped)
    tiles = _tiles_for(kernels, packed, qtype, x2d.shape[0]) if xq is not None else None
    if tiles is not None:
        work = tiles.nbytes * x2d.shape[0]
        kernels.matmul_repacked_int(tiles, type_id, n, xq, out2d,
                                    max(1, min(n_threads, work // _MIN_WORK_PER_THREAD)))
        return result
    _run_rows(kernels, raw, type_id, x2d, xq, out2d, n_threads, swapped, round_to)
    return result


def _round_type(round_weights: Any, exact: bool) -> int:
    """The kernels' ``round_to`` for ``round_weights``: 0, or the F16 / BF16 type id."""
    if round_weights is None:
        return 0
    if not isinstance(round_weights, str) or round_weights not in _dequant.HALF_TYPES:
        raise ValueError(f"round_weights must be None, 'float16' or 'bfloat16', not {round_weights!r}")
    if not exact:
        raise ValueError("round_weights needs the float path (exact=True)")
    return int(_dequant.HALF_TYPES[round_weights])


def matmul_id(
    x: Any,
    weights: Any,
    ids: Any,
    type: GGMLType | int | str | None = None,  # noqa: A002
    *,
    out: np.ndarray | None = None,
    threads: int | None = None,
    exact: bool = True,
) -> np.ndarray:
    """Mixture-of-experts products: ``out[t, j] = x[t] @ weights[ids[t, j]].T``.

    Parameters
    ----------
    x : array_like
        float32 (float16/bfloat16 converted) of shape ``(T, K)`` (every selected expert of token
        ``t`` gets ``x[t]``) or ``(T, E_used, K)`` (each selected expert its own input).
    weights : TensorInfo, numpy.ndarray or RepackedWeight
        3-D expert weights ``(E, N, K)`` as a TensorInfo, or a uint8 array ``(E, N, row_bytes)``,
        or either made ready by :func:`repack` (the integer path runs on its tiles when no expert
        has more rows of ``x`` in the call than the tiles take, as :func:`repack` says: e.g. 3 with
        VNNI for Q4_0, 24 for Q4_K, 256 for IQ4_XS; 1 without).
    ids : array_like of int
        ``(T, E_used)`` expert indices in ``[0, E)``.
    type, out, threads, exact
        As for :func:`matmul`.

    Returns
    -------
    numpy.ndarray
        float32 of shape ``(T, E_used, N)``. The tokens of one expert are computed together
        (the expert's blocks are read once per call), each result exactly as :func:`matmul`.

    Raises
    ------
    ValueError, TypeError, NotImplementedError, GGUFError
        As for :func:`matmul`.
    IndexError
        An expert index out of range.
    """
    packed = None
    if isinstance(weights, RepackedWeight):
        if type is not None and resolve_type(type) != weights.type:
            raise ValueError(f"type {type!r} disagrees with the repacked weights' type {weights.type.name}")
        packed, weights, type = weights, weights.source, weights.type
    raw, qtype, shape, swapped = _weight_of(weights, type, 3)
    kernels = _backend.kernels()
    _check_kernel(kernels, qtype, swapped)
    n_threads = _backend.resolve_threads(threads)
    n_exp, n, k = shape
    index = np.asarray(ids)
    if index.ndim != 2 or (index.size and not np.issubdtype(index.dtype, np.integer)):
        raise ValueError(f"ids must be a 2-D integer array (T, E_used), got {index.dtype} of shape {index.shape}")
    t, used = index.shape
    xf = _as_float32(x)
    if xf.ndim == 2:
        xf = np.broadcast_to(xf[:, None, :], (xf.shape[0], used, xf.shape[-1]))
    if xf.ndim != 3 or xf.shape[:2] != (t, used) or xf.shape[2] != k:
        raise ValueError(f"x of shape {np.shape(x)} does not fit ids {index.shape} and experts of {k} columns")
    if index.size and (index.min() < 0 or index.max() >= n_exp):
        raise IndexError(f"expert index out of range for {n_exp} experts")
    result_shape = (t, used, n)
    result = np.empty(result_shape, dtype=np.float32) if out is None else check_out(out, result_shape)
    if result.size == 0:
        return result
    flat_ids = index.reshape(-1)
    flat_x = xf.reshape(t * used, k)  # not -1: K may be 0
    flat_out = result.reshape(-1, n)
    type_id = int(qtype)
    if kernels.has_thread_pool() or n_threads == 1:
        # the (token, slot) rows sorted by expert, and every expert's product in one kernel call
        order = np.argsort(flat_ids, kind="stable")
        experts, starts = np.unique(flat_ids[order], return_index=True)
        x_sorted = np.ascontiguousarray(flat_x[order])
        out_sorted = np.empty((order.size, n), dtype=np.float32)
        xq = _quantized_x(kernels, type_id, x_sorted, exact, swapped)
        bounds = np.append(starts, order.size).astype(np.int64)
        tiles = _tiles_for(kernels, packed, qtype, int(np.diff(bounds).max())) if xq is not None else None
        if tiles is not None:
            kernels.matmul_repacked_int(tiles, type_id, n, xq, out_sorted, n_threads,
                                        experts=experts.astype(np.int64), bounds=bounds)
            flat_out[order] = out_sorted
            return result
        kernels.matmul_rows_grouped(np.ascontiguousarray(raw), type_id, x_sorted, xq, out_sorted,
                                    experts.astype(np.int64), bounds, swapped, n_threads)
        flat_out[order] = out_sorted
        return result
    for e in np.unique(flat_ids):  # no pool in the kernels: each expert's rows split over Python's
        sel = np.nonzero(flat_ids == e)[0]
        xe = np.ascontiguousarray(flat_x[sel])
        oe = np.empty((sel.size, n), dtype=np.float32)
        xq = _quantized_x(kernels, type_id, xe, exact, swapped)
        _run_rows(kernels, raw[int(e)], type_id, xe, xq, oe, n_threads, swapped)
        flat_out[sel] = oe
    return result


def take_rows(
    weight: Any,
    indices: Any,
    type: GGMLType | int | str | None = None,  # noqa: A002
    *,
    dtype: Any = None,
    threads: int | None = None,
) -> np.ndarray:
    """Rows ``weight[indices]`` dequantized, e.g. token embeddings, reading only those rows.

    Parameters
    ----------
    weight : TensorInfo or numpy.ndarray
        2-D tensor ``(N, K)``, or a uint8 array ``(N, row_bytes)`` of ``type`` blocks.
    indices : array_like of int
        Row indices of any shape (negative ones count from the end).
    type : GGMLType, int or str, optional
        As for :func:`matmul`.
    dtype : numpy dtype or str
        float32 (default) or any other (float16, ``"bfloat16"`` through ``ml_dtypes``, ...),
        produced as :meth:`fastgguf.TensorInfo.dequantize` does with ``dtype=``.
    threads : int, optional
        As for :func:`matmul`.

    Returns
    -------
    numpy.ndarray
        Shape ``indices.shape + (K,)``.

    Raises
    ------
    IndexError
        An index out of range.
    ValueError, TypeError, NotImplementedError
        As for :func:`fastgguf.dequantize`.
    ImportError
        bfloat16 without ``ml_dtypes``.
    """
    raw, qtype, shape, swapped = _weight_of(weight, type, 2)
    index = np.asarray(indices)
    if index.size and not np.issubdtype(index.dtype, np.integer):
        raise TypeError(f"indices must be integers, got dtype {index.dtype}")
    rows = _dequant.dequantize_as(raw, qtype, shape, dtype=dtype, rows=index.reshape(-1), threads=threads,
                                  byteorder=">" if swapped else "<")
    return rows.reshape(*index.shape, shape[1])
