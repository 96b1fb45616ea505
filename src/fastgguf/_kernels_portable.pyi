"""Dequantization kernels, "portable" build (same source as every _kernels_* module: _c/kernels.pxi).

Private: use :func:`fastgguf.dequantize`. Import a non-portable build only on a CPU for which
``_kernels_portable.cpu_supports(name)`` is true.
"""

import numpy as np
import numpy.typing as npt

# Underscored names too: the other builds' stubs re-export this one with `import *`.
__all__ = [
    "_iq2_search_table",
    "_iq_tables",
    "_set_batch_min_rows",
    "_set_vnni",
    "_type_layout",
    "can_repack",
    "cpu_supports",
    "dequantize_into",
    "has_byteswap",
    "has_dot",
    "has_int_dot",
    "has_kernel",
    "has_quantize",
    "has_thread_pool",
    "int_batch_kernel",
    "int_dot_isa",
    "int_x_layout",
    "matmul_rows",
    "matmul_rows_grouped",
    "matmul_repacked_int",
    "matmul_rows_int",
    "pool_workers",
    "prefault",
    "q8_block_bytes",
    "quantize_into",
    "quantize_x8",
    "quantize_x8k",
    "repack_row_bytes",
    "repack_rows",
    "repack_tile_rows",
    "repacked_kernel",
    "set_pool_spin",
    "vnni_usable",
]

def has_kernel(type_id: int) -> bool:
    """Whether little-endian data of ggml type ``type_id`` can be dequantized."""

def has_byteswap(type_id: int) -> bool:
    """Whether big-endian data of ggml type ``type_id`` can be dequantized."""

def has_quantize(type_id: int) -> bool:
    """Whether float32 data can be quantized to ggml type ``type_id``."""

def has_dot(type_id: int) -> bool:
    """Whether a dot-product kernel exists for ggml type ``type_id``."""

def _type_layout(type_id: int) -> tuple[int, int]:
    """(block_size, type_size) of ``type_id`` in the generated type table; (0, 0) for no type."""

def _iq_tables() -> dict[str, bytes]:
    """Every IQ/FP4 lookup table as raw bytes, keyed by name (for the tests)."""


def _iq2_search_table(which: int) -> bytes:
    """The IQ2/IQ1 search table ``which`` (0..3) in canonical form."""


def prefault(data: npt.NDArray[np.uint8] | bytes | memoryview) -> int:
    """Map every page of ``data`` in one call (MADV_POPULATE_READ: 1, MADV_WILLNEED: 2, neither: 0)."""

def cpu_supports(variant: str) -> bool:
    """Whether this CPU can run the kernel build ``variant`` ("portable", "avx2", "avx512")."""

def dequantize_into(
    src: npt.NDArray[np.uint8] | bytes | memoryview,
    dst: npt.NDArray[np.float32],
    type_id: int,
    row_index: npt.NDArray[np.int64] | None = None,
    row_elems: int = 0,
    byteswapped: bool = False,
    stream: bool = False,
    threads: int = 1,
    split: int = 4096,
) -> None:
    """Fill 1-D float32 ``dst`` from ``src`` with the GIL released, on ``threads`` threads of the
    build's pool.

    Without ``row_index``: the first ``len(dst) / block_size`` blocks of ``src``. With it:
    rows of ``row_elems`` elements, ``dst`` row k = ``src`` row ``row_index[k]``.
    Raises ValueError on any size/index mismatch, NotImplementedError for a type without a
    kernel (or without byte swapping when ``byteswapped``).
    """

def quantize_into(
    src: npt.NDArray[np.float32],
    dst: npt.NDArray[np.uint8],
    type_id: int,
    imatrix: npt.NDArray[np.float32] | None = None,
) -> int:
    """Quantize the rows of C-contiguous 2-D float32 ``src`` into 2-D uint8 ``dst`` (one row of
    blocks per row) with the GIL released. Raises ValueError on a shape or imatrix mismatch,
    NotImplementedError for a type without a quantizer. Returns -1, or the first row holding a
    NaN or an infinity (the rows before it are written, it and those after it are not).
    """

def narrow_floats(
    src: npt.NDArray[np.float32], dst: npt.NDArray[np.uint16], type_id: int, threads: int = 1, split: int = 4096,
) -> None:
    """float32 ``src`` to F16 or BF16 bits in ``dst`` (same length; every value, NaN and inf
    included), GIL released, on ``threads`` threads of the build's pool. Raises ValueError for
    another type or differing lengths.
    """

def dequantize_rounded_into(
    src: npt.NDArray[np.uint8], dst: npt.NDArray[np.float32], type_id: int, round_to: int, threads: int = 1,
    split: int = 4096,
) -> None:
    """``dequantize_into`` of whole little-endian blocks, each value rounded to the nearest F16 or
    BF16 (``round_to``) and kept as float32, in one pass, GIL released, on ``threads`` threads of
    the build's pool.
    """

# fastgguf.matmul's drivers (_c/kernels_matmul.pxi).

def int_dot_isa() -> str:
    """The instructions of this build's integer dot products: ``"vnni"``, ``"maddubs"`` or ``"c"``."""

def int_batch_kernel(type_id: int, m: int) -> str:
    """The integer kernel ``matmul_rows_int`` takes for ``m`` rows of x: ``"vnni-batch"``,
    ``"maddubs-batch"``, ``"vnni-few"``, ``"sse2-wide-x"`` or ``"rows"``."""

def sse2_int_kernels() -> bool:
    """Whether this is the portable build with SSE2 integer kernels for the K kinds and the per-32
    types but Q2_0 and NVFP4."""

def vnni_usable() -> bool:
    """Whether this build has the AVX-512 VNNI integer kernels and this CPU can run them."""

def _set_vnni(on: bool) -> bool:
    """Use the VNNI integer kernels or not (tests and benchmarks); returns the previous state."""

def avx512_full_width() -> bool:
    """Whether the CPU runs 512-bit vector operations whole (not AMD Zen 4)."""

def one_row_kernels(type_id: int) -> tuple[str, str]:
    """(exact, integer) kernels of one row of x: ``"pairs"``, ``"q8_0"`` or ``""``; ``"512"``,
    ``"256"`` or ``""`` (the width the build chose for the per-32 types' two-weight-row kernels or
    the avx512 build's Q2_K-Q6_K row kernels; ``""``: no choice)."""

def _set_wide(on: bool) -> bool:
    """Use the avx512 build's 512-bit one-row kernels (two weight rows per vector, the K-quants'
    integer row kernels) or the 256-bit ones (tests and benchmarks); returns the previous state."""

def _set_batch_min_rows(m: int) -> int:
    """Take the batch kernel from ``m`` rows of x (0: the instruction set's own count; tests and
    benchmarks); returns the previous setting."""

def has_int_dot(type_id: int) -> bool:
    """Whether ``type_id`` has an integer (Q8-quantized x) dot product in this build."""

def q8_block_bytes() -> int:
    """Bytes per 32 quantized values of x in the integer path of Q4_0 and Q8_0."""

def int_x_layout(type_id: int) -> tuple[int, int]:
    """(values, bytes) per block of quantized x that the integer dot of ``type_id`` takes."""

def matmul_rows(
    w: npt.NDArray[np.uint8],
    type_id: int,
    x: npt.NDArray[np.float32],
    out: npt.NDArray[np.float32],
    n0: int,
    n1: int,
    byteswapped: bool = False,
    round_to: int = 0,
    threads: int = 1,
) -> None:
    """``out[:, n0:n1] = x @ W[n0:n1].T`` by the float path, with the GIL released; ``round_to``
    (the F16 or BF16 type id) rounds each weight value to that type first; ``threads`` of the
    build's own pool share the rows."""

def pool_workers() -> int:
    """How many worker threads this build's pool has started in this process (for the tests)."""

def set_pool_spin(seconds: float) -> None:
    """How long an idle worker of this build's pool spins before it sleeps (default 0.2 ms)."""

def has_thread_pool() -> bool:
    """Whether this build runs ``threads=`` on its own worker threads (POSIX), or on the caller only."""

def quantize_x8(x: npt.NDArray[np.float32], dst: npt.NDArray[np.uint8]) -> None:
    """Quantize each row of ``x`` into Q8 blocks for the integer path."""

def quantize_x8k(x: npt.NDArray[np.float32], dst: npt.NDArray[np.uint8]) -> None:
    """Quantize each row of ``x`` into super-blocks of 256 for the K-quants' integer path."""

def matmul_rows_int(
    w: npt.NDArray[np.uint8],
    type_id: int,
    xq: npt.NDArray[np.uint8],
    out: npt.NDArray[np.float32],
    n0: int,
    n1: int,
    threads: int = 1,
) -> None:
    """``out[:, n0:n1]`` from Q8-quantized rows of x by integer dot products, on ``threads``
    threads of the build's own pool."""

def matmul_quick(
    w: object,
    type_id: object,
    x: object,
    out: object,
    threads: int,
    exact: bool,
    min_work: int,
) -> bool:
    """:func:`fastgguf.matmul`'s common call checked and run in one step: True when done, False
    (nothing changed) for arguments that need its full path."""

def matmul_rows_grouped(
    w: npt.NDArray[np.uint8],
    type_id: int,
    x: npt.NDArray[np.float32],
    xq: npt.NDArray[np.uint8] | None,
    out: npt.NDArray[np.float32],
    experts: npt.NDArray[np.int64],
    bounds: npt.NDArray[np.int64],
    byteswapped: bool = False,
    threads: int = 1,
) -> None:
    """matmul_id's products in one call: rows ``bounds[g]:bounds[g + 1]`` of ``out`` are those rows
    of ``x`` times ``w[experts[g]]`` transposed (integer path with ``xq``, else exact), on
    ``threads`` threads of the build's own pool."""

# Repacked weights (_c/kernels_repack.pxi).

def repack_tile_rows() -> int:
    """Weight rows per tile of the repacked layout (16)."""

def can_repack(type_id: int) -> bool:
    """Whether ``type_id`` has a repacked layout (Q8_0, Q4_0, Q5_0, Q4_1, Q5_1, IQ4_NL, MXFP4, Q2_K to Q6_K, IQ4_XS)."""

def repacked_kernel(type_id: int) -> str | None:
    """The tile kernel ``matmul_repacked_int`` runs for ``type_id`` here (``"vnni"``, ``"vnni-split"`` or
    ``"avx2"``), or None."""

def repack_row_bytes(type_id: int, row_bytes: int) -> int:
    """Bytes a weight row takes in the repacked layout (the same, but Q4_K 148 per 144, Q5_K 180 per 176, Q3_K 114 per 110, IQ4_XS 138 per 136)."""

def repack_rows(w: npt.NDArray[np.uint8], type_id: int, dst: npt.NDArray[np.uint8], threads: int = 1) -> None:
    """Interleave the weight rows ``w`` (N, row_bytes) into ``dst`` (ceil(N / 16), repack_row_bytes * 16)."""

def matmul_repacked_int(
    packed: npt.NDArray[np.uint8],
    type_id: int,
    n_rows: int,
    xq: npt.NDArray[np.uint8],
    out: npt.NDArray[np.float32],
    threads: int = 1,
    reference: bool = False,
    experts: npt.NDArray[np.int64] | None = None,
    bounds: npt.NDArray[np.int64] | None = None,
) -> None:
    """``out`` (M, N) from repacked weight rows and quantized rows of x: the bits of
    ``matmul_rows_int`` on the original rows (``reference``: the plain C tile kernel); with
    ``experts`` and ``bounds``, matmul_id's groups against E experts' tiles."""
