# The kernel layer: one table, indexed by ggml type id, of what this build can do with each type;
# the Python-callable drivers (dequantize_into, quantize_into) that check their arguments, release
# the GIL and run a row of it. Each _kernels_<variant>.pyx is nothing but ``include "kernels.pxi"``:
# one source, compiled once per CPU level with different ISA flags (setup.py); fastgguf.dequant
# imports only the builds this CPU can run (cpu_supports() of the portable build says which).
#
# Adding a type
# -------------
# 1. src/fastgguf/types.py: its id in GGMLType and its row in REGISTRY (layout, byte-swapped fields,
#    imatrix policy, llama file type; the recipe there). Then run
#    ``python tools/gen_type_table.py`` (writes type_table.h/.pxd: FGG_TYPE_<NAME>, layouts,
#    byte-swap fields; tests/dequant/test_dequant_kernel_table.py fails until it is rerun).
# 2. One kernel file, the family's kernels_<family>.pxi (float, legacy, kquant, iq): write
#    ``cdef void dequant_<name>(const uint8_t *src, float *dst, Py_ssize_t n_blocks) noexcept nogil``
#    and add its row to the family's ``<family>_rows()``:
#        rows[FGG_TYPE_<NAME>] = fgg_kernel_row(dequantize=dequant_<name>, byteswap=swap_block_fields,
#                                               quantize=NULL, dot=NULL)
#    (swap_block_fields reverses the fields of step 1; plain element types use swap_bytes_<n>).
#    Hand-written C goes in a .h file next to it (prefix fgg_, including base.h), declared in the
#    .pxd of the same name.
# 3. Its independent reference in tests/dequant_refs.py (ENGINE_TYPES) and, for a quantizer, its
#    vectors (tools/gen_quantize_vectors.py); the quantizer tests take their type list from the registry.
# A new family (rarely): a new kernels_<family>.pxi with its ``<family>_rows()``, included below
# and called in _fill_table().
#
# Adding a quantizer (the "quantize" column) to an existing type
# ---------------------------------------------------------------
# Write ``static void fgg_quantize_<name>(const float *src, uint8_t *dst, int64_t n_rows,
# int64_t n_per_row, const float *imatrix)`` in src/fastgguf/_c/quant_<family>.h (ggml's quantize_<type>
# contract: n_rows rows of n_per_row floats -> n_rows rows of blocks; imatrix NULL or n_per_row
# floats >= 0; finite input, n_per_row a multiple of the block size, all checked before the call;
# thread-safe: const or generated tables only). Declare it in quant_<family>.pxd:
#     cdef extern from "quant_<family>.h":
#         void fgg_quantize_<name>(const float *src, uint8_t *dst, int64_t n_rows, int64_t n_per_row,
#                                  const float *imatrix) noexcept nogil
# and replace ``quantize=NULL`` by ``quantize=fgg_quantize_<name>`` in the type's row. That is all:
# fastgguf.quantize() and has_quantize() pick it up; give the type's registry row an imatrix policy.
# For a quantizer that runs at memory speed, the driver's separate NaN/inf pass over the input
# costs a sixth of the time or more: QUANTIZE_CHECKED (below) takes a variant that finds them itself.
#
# Adding an integer dot product (the "dot" column, fastgguf.matmul(..., exact=False))
# ------------------------------------------------------------------------------------
# Write ``static inline void fgg_mm_rows_<name>(const uint8_t *w, ptrdiff_t nb, const fgg_mm_q8 *x,
# ptrdiff_t xs, int m, float *out, ptrdiff_t os)`` in src/fastgguf/_c/dot.h (one weight row
# against m rows of quantized x; the same operations on every build, see the comment there): x
# per 32 values (fgg_mm_q8) for a type whose blocks are one or a few runs of 32 (fgg_mm_rows_b's
# kinds; fgg_mm_b_runs), per 256 (fgg_mm_q8k: the types with 256-value blocks, _x_by_256() of
# kernels_matmul.pxi) for the K-quants and the IQ/TQ types, whose kernels are fgg_mm_rows_k's unpackers.
# Declare it in dot.pxd and set it in dot_rows(); add the type to INT_TYPES in
# tests/matmul/test_matmul.py.

from libc.stdint cimport uint8_t, uint16_t, uint32_t, uint64_t, int64_t
from libc.stdlib cimport malloc, free
from libc.string cimport memcpy
from libc.math cimport isfinite

from fastgguf._c.dequant_common cimport *
from fastgguf._c.type_table cimport *
from fastgguf._c.sigbus cimport fgg_guard, fgg_guard_enter, fgg_guard_leave, fgg_sigbus_install
from fastgguf._c.cpu cimport *
from fastgguf._c.prefault cimport *
from fastgguf._c.pool cimport fgg_pool_run, fgg_pool_set_spin, fgg_pool_workers, FGG_HAVE_POOL

from fastgguf.errors import GGUFError

# The columns of the table. Every function is pure arithmetic on a range its caller has checked:
# no bounds checks, no Python objects, no GIL.

# Converts n_blocks whole consecutive blocks at src to float32 at dst.
ctypedef void (*fgg_dequantize_fn)(const uint8_t *src, float *dst, Py_ssize_t n_blocks) noexcept nogil

# Copies n_blocks blocks of big-endian data of type ``type_id`` at src to dst with every multi-byte
# field put in little-endian order, so that the type's dequantize can run on dst.
ctypedef void (*fgg_byteswap_fn)(const uint8_t *src, uint8_t *dst, Py_ssize_t n_blocks, int type_id) noexcept nogil

# ggml's quantize_<type>: n_rows rows of n_per_row floats at src -> n_rows rows of blocks at dst;
# imatrix is NULL or n_per_row weights >= 0 (see "Adding a quantizer" above).
ctypedef void (*fgg_quantize_fn)(const float *src, uint8_t *dst, int64_t n_rows, int64_t n_per_row,
                                 const float *imatrix) noexcept nogil

# Dot products of one weight row of n_blocks little-endian blocks with m activation rows (row i at
# x + i * x_stride, in the form the type's dot product takes: for the integer path of
# kernels_matmul.pxi, fgg_mm_q8 blocks of 32 or fgg_mm_q8k super-blocks of 256 quantized values,
# x_stride counted in those blocks),
# out[i * out_stride] = the dot product: the signature of dot.h's fgg_mm_rows_<type>
# (mm_row_fn), with x as const void *. Filled by dot_rows() in kernels_matmul.pxi (after the
# families: a type gets its dot product there, next to the matmul drivers that call it).
ctypedef void (*fgg_dot_fn)(const uint8_t *w, Py_ssize_t n_blocks, const void *x, Py_ssize_t x_stride, int m,
                            float *out, Py_ssize_t out_stride) noexcept nogil

cdef struct fgg_kernel_row:
    fgg_dequantize_fn dequantize
    fgg_byteswap_fn byteswap
    fgg_quantize_fn quantize
    fgg_dot_fn dot

# The table: zero (all NULL) until _fill_table() runs, i.e. on first use of this module (never at
# import: a build for a CPU that lacks its ISA may be imported by mistake, and must not crash then).
cdef fgg_kernel_row KERNELS[FGG_TYPE_LIMIT]

# Optional, beside the table (a family sets it in its <family>_rows()): dequantize writing dst with
# non-temporal stores itself, for outputs far larger than the caches (the caller fences). NULL: the
# driver stages the row's dequantize output in L1 and streams that. Worth it where the staging
# copy costs as much as the conversion (F16, BF16).
cdef fgg_dequantize_fn DEQUANTIZE_STREAM[FGG_TYPE_LIMIT]

# Optional, beside the table (set in <family>_rows()): the quantizer without an importance matrix
# for input that may hold NaN or infinities, finding them as it goes; returns the first row holding
# one (that row partly written, later rows not), or -1. NULL: the driver checks each row in a
# separate pass first. Worth it where that pass costs as much as a tenth of the quantizer.
ctypedef int64_t (*fgg_quantize_checked_fn)(const float *src, uint8_t *dst, int64_t n_rows,
                                            int64_t n_per_row) noexcept nogil
cdef fgg_quantize_checked_fn QUANTIZE_CHECKED[FGG_TYPE_LIMIT]
cdef bint _table_filled = False


cdef void swap_block_fields(const uint8_t *src, uint8_t *dst, Py_ssize_t n_blocks, int type_id) noexcept nogil:
    """The byteswap of every block type: reverse the fields type_table.h lists for ``type_id``."""
    cdef Py_ssize_t type_size = fgg_type_size[type_id], b
    cdef const fgg_block_fields *fields = &fgg_swap_fields_of[type_id]
    cdef int r, k, i, width
    cdef uint8_t *p
    cdef uint8_t t
    memcpy(dst, src, <size_t>(n_blocks * type_size))
    for b in range(n_blocks):
        for r in range(fields.n_runs):
            width = fields.runs[r].width
            p = dst + b * type_size + fields.runs[r].offset
            for k in range(fields.runs[r].count):
                for i in range(width // 2):
                    t = p[i]
                    p[i] = p[width - 1 - i]
                    p[width - 1 - i] = t
                p += width


include "kernels_float.pxi"
include "kernels_legacy.pxi"
include "kernels_kquant.pxi"
include "kernels_iq.pxi"


cdef void _fill_table() noexcept:
    """Fill KERNELS and install the SIGBUS guard: on first use, with the GIL held (one caller)."""
    global _table_filled
    if _table_filled:
        return
    float_rows(KERNELS)
    legacy_rows(KERNELS)
    kquant_rows(KERNELS)
    iq_rows(KERNELS)
    dot_rows(KERNELS)
    fgg_sigbus_install()
    _table_filled = True


cdef inline fgg_kernel_row *_row(int type_id) noexcept:
    """The row of ``type_id``, or NULL for an id that is no type. Fills the table on first use."""
    if not _table_filled:
        _fill_table()
    if not 0 <= type_id < FGG_TYPE_LIMIT or fgg_type_size[type_id] == 0:
        return NULL
    return &KERNELS[type_id]


def has_kernel(int type_id):
    """Whether this module can dequantize little-endian data of ggml type ``type_id``."""
    cdef fgg_kernel_row *row = _row(type_id)
    return row != NULL and row.dequantize != NULL


def has_byteswap(int type_id):
    """Whether this module can dequantize big-endian (byte-swapped) data of ggml type ``type_id``."""
    cdef fgg_kernel_row *row = _row(type_id)
    return row != NULL and row.dequantize != NULL and row.byteswap != NULL


def has_quantize(int type_id):
    """Whether this module can quantize float32 data to ggml type ``type_id``."""
    cdef fgg_kernel_row *row = _row(type_id)
    return row != NULL and row.quantize != NULL


def has_dot(int type_id):
    """Whether this module has a dot-product kernel for ggml type ``type_id``."""
    cdef fgg_kernel_row *row = _row(type_id)
    return row != NULL and row.dot != NULL


def _type_layout(int type_id):
    """(block_size, type_size) the kernels use for ``type_id`` (from type_table.h; for the tests)."""
    if not 0 <= type_id < FGG_TYPE_LIMIT:
        return (0, 0)
    return (fgg_block_size[type_id], fgg_type_size[type_id])


cdef enum:
    # Big-endian data is swapped into this many bytes of scratch at a time: small enough for L1,
    # and at least one block of every type.
    _SWAP_SCRATCH_BYTES = 16384
    # Streamed output is staged in this many floats (16 KiB, in L1) before the non-temporal copy;
    # a multiple of every block size, so each stage after the first starts cache-line aligned.
    _STAGE_FLOATS = 4096


cdef void _run(fgg_dequantize_fn kernel, fgg_dequantize_fn stream_kernel, fgg_byteswap_fn swap, int type_id, uint8_t *scratch, float *stage,
               const uint8_t *src, float *dst, Py_ssize_t n_blocks, Py_ssize_t block_size,
               Py_ssize_t type_size) noexcept nogil:
    """Dequantize n_blocks. With ``swap``, big-endian blocks are first put in order in
    ``scratch`` (_SWAP_SCRATCH_BYTES); with ``stage`` (_STAGE_FLOATS), the output is staged there
    and written to dst with non-temporal stores (the caller fences once at the end)."""
    if swap == NULL and (stage == NULL or stream_kernel != NULL):
        (kernel if stage == NULL else stream_kernel)(src, dst, n_blocks)
        return
    cdef Py_ssize_t per_chunk = _STAGE_FLOATS // block_size
    cdef Py_ssize_t done = 0, count
    cdef const uint8_t *blocks
    if swap != NULL:
        per_chunk = min(per_chunk, _SWAP_SCRATCH_BYTES // type_size)
    while done < n_blocks:
        count = min(per_chunk, n_blocks - done)
        blocks = src + done * type_size
        if swap != NULL:
            swap(blocks, scratch, count, type_id)
            blocks = scratch
        if stage != NULL:
            kernel(blocks, stage, count)
            fgg_stream_copy(dst + done * block_size, stage, count * block_size)
        else:
            kernel(blocks, dst + done * block_size, count)
        done += count


cdef enum:
    # At most this many tasks per thread: claimed dynamically, so a thread slowed by the rest of
    # the machine takes fewer. Few and long: a task that streams its rows from memory loses the
    # start of each (the prefetch ramps up again) and prefetches past its end into another
    # task's rows. Matrix products at one row of x (Zen 5 VM, 2 threads, Q4_K_M model file) took
    # 1.25x longer with one task per 64 KiB tile of weight rows.
    _TASKS_PER_THREAD = 4


cdef inline void _task_span(Py_ssize_t n, Py_ssize_t granule, int task, int n_tasks,
                            Py_ssize_t *a, Py_ssize_t *b) noexcept nogil:
    """Task ``task`` of ``n_tasks``'s part [a, b) of [0, n), cut on multiples of ``granule`` (the last part ends at n)."""
    cdef Py_ssize_t units = n // granule
    a[0] = units * task // n_tasks * granule
    b[0] = n if task == n_tasks - 1 else units * (task + 1) // n_tasks * granule


cdef int _split_tasks(Py_ssize_t n, Py_ssize_t granule, int threads) noexcept nogil:
    """How many tasks ``threads`` threads share [0, n) in: up to _TASKS_PER_THREAD each, each at least a granule."""
    cdef Py_ssize_t units = n // granule
    cdef Py_ssize_t tasks = <Py_ssize_t>threads * _TASKS_PER_THREAD if threads > 1 else 1
    if tasks > units:
        tasks = units if units > 0 else 1
    return <int>tasks


def has_thread_pool():
    """Whether this build runs ``threads=`` on its own worker threads (POSIX), or on the caller only."""
    return bool(FGG_HAVE_POOL)


def pool_workers():
    """How many worker threads this build's pool has started in this process (for the tests)."""
    return fgg_pool_workers()


def set_pool_spin(double seconds):
    """How long an idle worker of this build's pool spins before it sleeps (default 0.2 ms)."""
    fgg_pool_set_spin(<long long>(seconds * 1e9))


cdef struct _DequantJob:
    fgg_dequantize_fn kernel
    fgg_dequantize_fn stream_kernel
    fgg_byteswap_fn swap
    int type_id
    bint stream
    const uint8_t *src
    float *dst
    Py_ssize_t n_blocks
    const int64_t *row_index
    Py_ssize_t n_rows, row_blocks, row_bytes, row_elems, block_size, type_size, granule
    int n_tasks
    int status


cdef void _dequantize_task(void *ctx, int task) noexcept nogil:
    """One task's share of a dequantize_into call: a run of blocks, or of the indexed rows. Its own
    scratch and stage, its own SIGBUS guard, and its own fence after non-temporal stores."""
    cdef _DequantJob *job = <_DequantJob *>ctx
    cdef fgg_guard guard
    cdef Py_ssize_t a, b, k
    cdef uint8_t *scratch = NULL
    cdef float *stage = NULL
    if job.row_index == NULL:
        _task_span(job.n_blocks, job.granule, task, job.n_tasks, &a, &b)
    else:
        _task_span(job.n_rows, 1, task, job.n_tasks, &a, &b)
    if a == b:
        return
    if job.swap != NULL:
        scratch = <uint8_t *>malloc(_SWAP_SCRATCH_BYTES)
    if job.stream:
        stage = <float *>malloc(_STAGE_FLOATS * sizeof(float))
    if (job.swap != NULL and scratch == NULL) or (job.stream and stage == NULL):
        free(scratch)
        free(stage)
        job.status = -3
        return
    if fgg_guard_enter(&guard):
        job.status = -2
    else:
        if job.row_index == NULL:
            _run(job.kernel, job.stream_kernel, job.swap, job.type_id, scratch, stage, job.src + a * job.type_size,
                 job.dst + a * job.block_size, b - a, job.block_size, job.type_size)
        else:
            for k in range(a, b):
                _run(job.kernel, job.stream_kernel, job.swap, job.type_id, scratch, stage,
                     job.src + job.row_index[k] * job.row_bytes, job.dst + k * job.row_elems, job.row_blocks,
                     job.block_size, job.type_size)
        fgg_guard_leave(&guard)
    if stage != NULL:
        fgg_stream_fence()
    free(scratch)
    free(stage)


def dequantize_into(const uint8_t[::1] src not None, float[::1] dst not None, int type_id,
                    const int64_t[::1] row_index=None, Py_ssize_t row_elems=0,
                    bint byteswapped=False, bint stream=False, int threads=1, Py_ssize_t split=4096):
    """Dequantize blocks of ``src`` into ``dst`` with the GIL released.

    Without ``row_index``: ``dst`` is filled from the first ``len(dst) / block_size`` blocks of
    ``src``. With ``row_index``: ``src`` holds whole rows of ``row_elems`` elements and row
    ``row_index[k]`` goes to ``dst[k * row_elems : (k + 1) * row_elems]``.

    ``byteswapped``: the data is big-endian. ``stream``: write ``dst`` with non-temporal stores
    (for outputs much larger than the caches; it saves the read-for-ownership of every line).
    ``threads``: how many threads of the build's pool share the blocks (or rows); ``split``:
    blocks are shared out in parts of a multiple of this many elements (rounded down to whole
    blocks), so that no two threads write one cache line.

    Every length and index is checked here, before any kernel runs; the block layout comes from
    ``fastgguf.types.TYPE_TRAITS``.

    Raises
    ------
    ValueError
        Unknown type id, ``dst`` not a whole number of blocks or rows, ``src`` too short,
        a ``row_index`` entry outside ``src``'s rows.
    NotImplementedError
        No kernel (or, with ``byteswapped``, no byte swapper) for this type in this module.
    MemoryError
        No scratch memory for byte-swapped data.
    GGUFError
        ``src`` is a map of a file that was truncated under it (SIGBUS while reading).
    """
    cdef fgg_kernel_row *row = _row(type_id)
    if row == NULL:
        raise ValueError(f"unknown ggml tensor type id {type_id}")
    cdef fgg_dequantize_fn kernel = row.dequantize
    if kernel == NULL:
        raise NotImplementedError(f"no dequantization kernel for ggml type id {type_id}")
    cdef fgg_byteswap_fn swap = NULL
    if byteswapped:
        swap = row.byteswap
        if swap == NULL:
            raise NotImplementedError(f"no big-endian support for ggml type id {type_id}")

    cdef Py_ssize_t block_size = fgg_block_size[type_id]
    cdef Py_ssize_t type_size = fgg_type_size[type_id]
    cdef Py_ssize_t n_out = dst.shape[0]
    cdef Py_ssize_t n_src = src.shape[0]
    cdef Py_ssize_t n_blocks = 0, row_blocks = 0, row_bytes = 0, n_src_rows, n_rows = 0, k, r
    if n_out % block_size:
        raise ValueError(f"output length {n_out} is not a multiple of the block size {block_size}")

    if type_id == FGG_TYPE_F32:
        stream = False  # a plain memcpy, which picks non-temporal stores itself for large copies

    if row_index is None:
        n_blocks = n_out // block_size
        if n_blocks > n_src // type_size:
            raise ValueError(f"{n_out} elements need {n_blocks * type_size} bytes, source has {n_src}")
    else:
        if row_elems <= 0 or row_elems % block_size:
            raise ValueError(f"row length {row_elems} is not a positive multiple of the block size {block_size}")
        n_rows = row_index.shape[0]
        if n_out != n_rows * row_elems:
            raise ValueError(f"output length {n_out} is not {n_rows} rows of {row_elems}")
        row_blocks = row_elems // block_size
        row_bytes = row_blocks * type_size
        n_src_rows = n_src // row_bytes
        for k in range(n_rows):
            if not 0 <= row_index[k] < n_src_rows:
                raise ValueError(f"row {row_index[k]} is outside the {n_src_rows} rows of the source")
    if n_out == 0:
        return

    if threads < 1:
        raise ValueError(f"threads must be at least 1, got {threads}")
    if split < 1:
        raise ValueError(f"split must be at least 1, got {split}")
    cdef _DequantJob job
    job.kernel = kernel
    job.stream_kernel = DEQUANTIZE_STREAM[type_id]
    job.swap = swap
    job.type_id = type_id
    job.stream = stream
    job.src = &src[0]
    job.dst = &dst[0]
    job.n_blocks = n_blocks
    job.row_index = NULL if row_index is None else &row_index[0]
    job.n_rows = n_rows
    job.row_blocks = row_blocks
    job.row_bytes = row_bytes
    job.row_elems = row_elems
    job.block_size = block_size
    job.type_size = type_size
    job.granule = max(1, split // block_size)
    job.status = 0
    if row_index is None:
        job.n_tasks = _split_tasks(n_blocks, job.granule, threads)
    else:
        job.n_tasks = _split_tasks(n_rows, 1, threads)
    with nogil:
        fgg_pool_run(_dequantize_task, &job, job.n_tasks, threads)
    if job.status == -3:
        raise MemoryError("no scratch memory for byte swapping or streaming")
    if job.status == -2:
        raise GGUFError("the data could not be read: the mapped file shrank while it was being read (SIGBUS)")


def quantize_into(const float[:, ::1] src not None, uint8_t[:, ::1] dst not None, int type_id,
                  const float[::1] imatrix=None):
    """Quantize the rows of ``src`` (float32, C-contiguous) into ``dst`` with the GIL released.

    ``dst`` must have one row per row of ``src`` of exactly ``n_per_row / block_size * type_size``
    bytes. ``imatrix``: None or ``n_per_row`` importance weights (finite, >= 0). Rows are checked
    for non-finite values a few at a time, just before they are quantized (while they are in
    cache). Returns -1 when every row was quantized, else the index of the first row with a NaN or
    an infinity: the rows before it are written, it and the rows after it are not.

    Raises
    ------
    ValueError
        Unknown type id, ``n_per_row`` not a multiple of the block size, ``dst`` of the wrong
        shape, ``imatrix`` of the wrong length or with a negative or non-finite weight.
    NotImplementedError
        No quantizer for this type in this module.
    """
    cdef fgg_kernel_row *row = _row(type_id)
    if row == NULL:
        raise ValueError(f"unknown ggml tensor type id {type_id}")
    if row.quantize == NULL:
        raise NotImplementedError(f"no quantizer for ggml type id {type_id}")
    cdef Py_ssize_t block_size = fgg_block_size[type_id], type_size = fgg_type_size[type_id]
    cdef Py_ssize_t n_rows = src.shape[0], n_per_row = src.shape[1], j
    if n_per_row % block_size:
        raise ValueError(f"row length {n_per_row} is not a multiple of the block size {block_size}")
    cdef Py_ssize_t row_bytes = n_per_row // block_size * type_size
    if dst.shape[0] != n_rows or dst.shape[1] != row_bytes:
        raise ValueError(f"output shape ({dst.shape[0]}, {dst.shape[1]}) is not ({n_rows}, {row_bytes})")
    cdef const float *weights = NULL
    if imatrix is not None:
        if imatrix.shape[0] != n_per_row:
            raise ValueError(f"imatrix has {imatrix.shape[0]} weights, rows have {n_per_row} elements")
        for j in range(n_per_row):
            if not (isfinite(imatrix[j]) and imatrix[j] >= 0):
                raise ValueError(f"imatrix weight {j} is {imatrix[j]}: weights must be finite and >= 0")
        if n_per_row:
            weights = &imatrix[0]
    if n_rows == 0 or n_per_row == 0:
        return -1
    cdef fgg_quantize_fn quantize = row.quantize
    cdef fgg_quantize_checked_fn checked = QUANTIZE_CHECKED[type_id]
    cdef int64_t first_bad
    if weights == NULL and checked != NULL:
        with nogil:
            first_bad = checked(&src[0, 0], &dst[0, 0], n_rows, n_per_row)
        return first_bad
    # rows per check-then-quantize step: about 16 KiB of input, so the quantizer reads it from L1
    cdef Py_ssize_t step = max(1, 4096 // n_per_row), r0 = 0, r1, r, bad = -1
    with nogil:
        while r0 < n_rows and bad < 0:
            r1 = min(n_rows, r0 + step)
            for r in range(r0, r1):
                if not fgg_all_finite(&src[r, 0], n_per_row):
                    bad = r
                    r1 = r
                    break
            if r1 > r0:
                quantize(&src[r0, 0], &dst[r0, 0], r1 - r0, n_per_row, weights)
            r0 = r1
    return bad


def prefault(const uint8_t[::1] data not None):
    """Map every page of ``data`` (a file map, usually) in one call before it is read, GIL released.

    Returns 1 if the pages were populated (``MADV_POPULATE_READ``), 2 if only advised
    (``MADV_WILLNEED``), 0 if neither is possible here. Advice only: nothing is changed.
    """
    cdef int done = 0
    if data.shape[0] == 0:
        return 0
    with nogil:
        done = fgg_prefault(&data[0], <size_t>data.shape[0])
    return done


def cpu_supports(str variant):
    """Whether this CPU (and OS) can run the kernel build ``variant``.

    ``"portable"`` is always true; ``"avx2"`` needs AVX2, FMA, F16C and BMI2; ``"avx512"``
    additionally AVX-512 F, BW, VL and DQ -- exactly the flags setup.py builds those variants with.
    Ask the portable build (``fastgguf._kernels_portable``): it runs on any CPU.
    """
    if variant == "portable":
        return True
    if variant == "avx2":
        return bool(fgg_cpu_has_avx2())
    if variant == "avx512":
        return bool(fgg_cpu_has_avx512())
    raise ValueError(f"unknown kernel variant {variant!r}")
include "kernels_convert.pxi"
include "kernels_matmul.pxi"
include "kernels_repack.pxi"
