# Weights repacked for the integer path (repack.h): 16 weight rows interleaved, made once
# (fastgguf.repack), then multiplied by a tile kernel that makes lane k of 16 weight rows in one
# vpdpbusd. The same bits as matmul_rows_int on the original blocks.

from libc.stdint cimport int32_t

from fastgguf._c.repack cimport *


cdef struct _RepackJob:
    int n_tasks
    int status
    int kind
    const uint8_t *w
    Py_ssize_t row_bytes, n_rows, nb, tile_bytes
    uint8_t *dst


cdef void _repack_task(void *ctx, int task) noexcept nogil:
    cdef _RepackJob *job = <_RepackJob *>ctx
    cdef fgg_guard guard
    cdef Py_ssize_t a, b, t, n_tiles = (job.n_rows + FGG_RP_ROWS - 1) // FGG_RP_ROWS
    _task_span(n_tiles, 1, task, job.n_tasks, &a, &b)
    if fgg_guard_enter(&guard):
        job.status = -2
        return
    for t in range(a, b):
        fgg_rp_pack_tile(job.kind, job.w + t * FGG_RP_ROWS * job.row_bytes, job.row_bytes,
                         <int>min(<Py_ssize_t>FGG_RP_ROWS, job.n_rows - t * FGG_RP_ROWS), job.nb,
                         job.dst + t * job.tile_bytes)
    fgg_guard_leave(&guard)


def repack_tile_rows():
    """Weight rows per tile of the repacked layout (16)."""
    return FGG_RP_ROWS


def can_repack(int type_id):
    """Whether ``type_id`` has a repacked layout (Q8_0, Q4_0, Q5_0, Q4_1, Q5_1, IQ4_NL, MXFP4)."""
    return fgg_rp_kind(type_id) >= 0


def repacked_kernel(int type_id):
    """The tile kernel :func:`matmul_repacked_int` runs for ``type_id`` here: ``"vnni"``, or
    ``None`` where this build or CPU has none (or VNNI is switched off)."""
    _row(FGG_TYPE_Q8_0)  # the VNNI choice is made with the table
    return "vnni" if _vnni_on and fgg_rp_tile_vnni(type_id) != NULL else None


def repack_rows(const uint8_t[:, ::1] w not None, int type_id, uint8_t[:, ::1] dst not None, int threads=1):
    """Interleave the weight rows ``w`` (N, row_bytes) of ``type_id`` into ``dst`` of shape
    ``(ceil(N / 16), row_bytes * 16)``: tile t holds rows 16t..16t+15 (missing rows zeros).

    Raises
    ------
    ValueError
        A type without a repacked layout, shapes that disagree, ``threads < 1``.
    GGUFError
        ``w`` maps a file that was truncated under it (SIGBUS).
    """
    cdef int kind = fgg_rp_kind(type_id)
    if kind < 0:
        raise ValueError(f"ggml type id {type_id} has no repacked layout")
    if threads < 1:
        raise ValueError(f"threads must be at least 1, got {threads}")
    cdef Py_ssize_t n_rows = w.shape[0], row_bytes = w.shape[1], type_size = fgg_type_size[type_id]
    if row_bytes % type_size:
        raise ValueError(f"rows of {row_bytes} bytes are not whole blocks of {type_size} bytes")
    cdef Py_ssize_t n_tiles = (n_rows + FGG_RP_ROWS - 1) // FGG_RP_ROWS
    if dst.shape[0] != n_tiles or dst.shape[1] != row_bytes * FGG_RP_ROWS:
        raise ValueError(f"dst must have shape ({n_tiles}, {row_bytes * FGG_RP_ROWS})")
    if n_rows == 0 or row_bytes == 0:
        return
    cdef _RepackJob job
    job.kind = kind
    job.w = &w[0, 0]
    job.row_bytes = row_bytes
    job.n_rows = n_rows
    job.nb = row_bytes // type_size
    job.tile_bytes = row_bytes * FGG_RP_ROWS
    job.dst = &dst[0, 0]
    job.status = 0
    job.n_tasks = _split_tasks(n_tiles, 1, threads)
    with nogil:
        fgg_pool_run(_repack_task, &job, job.n_tasks, threads)
    _raise_status(job.status)


cdef struct _RepackedJob:
    int n_tasks
    int status
    int kind
    fgg_rp_tile_fn fn  # NULL: the reference kernel
    const uint8_t *packed
    Py_ssize_t tile_bytes, n_rows, nb
    const fgg_mm_q8 *x
    Py_ssize_t xs
    const int32_t *xo
    int m
    float *out
    Py_ssize_t os


cdef void _repacked_task(void *ctx, int task) noexcept nogil:
    cdef _RepackedJob *job = <_RepackedJob *>ctx
    cdef Py_ssize_t a, b, t, n_tiles = (job.n_rows + FGG_RP_ROWS - 1) // FGG_RP_ROWS
    cdef int rows
    _task_span(n_tiles, 1, task, job.n_tasks, &a, &b)
    cdef void *st = NULL
    if job.fn != NULL:
        st = fgg_aligned_malloc(job.m * FGG_RP_STATE_BYTES)
        if st == NULL:
            job.status = -3
            return
    for t in range(a, b):
        rows = <int>min(<Py_ssize_t>FGG_RP_ROWS, job.n_rows - t * FGG_RP_ROWS)
        if job.fn != NULL:
            job.fn(job.packed + t * job.tile_bytes, job.nb, job.x, job.xs, job.xo, job.m,
                   job.out + t * FGG_RP_ROWS, job.os, rows, st)
        else:
            fgg_rp_tile_c(job.kind, job.packed + t * job.tile_bytes, job.nb, job.x, job.xs, job.m,
                          job.out + t * FGG_RP_ROWS, job.os, rows)
    fgg_aligned_free(st)


def matmul_repacked_int(const uint8_t[:, ::1] packed not None, int type_id, Py_ssize_t n_rows,
                        const uint8_t[:, ::1] xq not None, float[:, :] out not None, int threads=1,
                        bint reference=False):
    """``out`` (M, N) from the repacked weight ``packed`` (:func:`repack_rows` of N rows) and the
    quantized rows ``xq`` (:func:`quantize_x8`): the bits of :func:`matmul_rows_int` on the
    original rows. ``reference``: the plain C tile kernel (slow; any build) instead of
    :func:`repacked_kernel`'s.

    Raises
    ------
    ValueError
        Shapes that disagree, ``threads < 1``.
    NotImplementedError
        No tile kernel here (and not ``reference``).
    """
    cdef int kind = fgg_rp_kind(type_id)
    if kind < 0:
        raise ValueError(f"ggml type id {type_id} has no repacked layout")
    if threads < 1:
        raise ValueError(f"threads must be at least 1, got {threads}")
    cdef fgg_rp_tile_fn fn = NULL
    if not reference:
        if repacked_kernel(type_id) is None:
            raise NotImplementedError("no tile kernel for repacked weights in this build or on this CPU")
        fn = fgg_rp_tile_vnni(type_id)
    cdef Py_ssize_t m = xq.shape[0], nb = xq.shape[1] // MM_Q8_BYTES
    cdef Py_ssize_t n_tiles = (n_rows + FGG_RP_ROWS - 1) // FGG_RP_ROWS
    if xq.shape[1] % MM_Q8_BYTES or nb * 32 % fgg_block_size[type_id]:
        raise ValueError(f"quantized x rows of {xq.shape[1]} bytes are not whole blocks")
    if n_rows < 0 or packed.shape[0] != n_tiles or packed.shape[1] != nb * fgg_type_size[type_id] * FGG_RP_ROWS:
        raise ValueError("packed does not hold n_rows repacked rows of x's length")
    if out.shape[0] != m or out.shape[1] != n_rows or (n_rows > 1 and out.strides[1] != sizeof(float)):
        raise ValueError("out must be (M, N) float32 with contiguous rows")
    if m > 0x7fffffff:
        raise ValueError(f"{m} rows of x are too many")
    if m == 0 or n_rows == 0:
        return
    cdef Py_ssize_t i, n
    if nb == 0:
        for i in range(m):
            for n in range(n_rows):
                out[i, n] = 0.0
        return
    cdef int32_t *xo = NULL
    if fn != NULL:
        xo = <int32_t *>malloc(m * nb * 8 * sizeof(int32_t))
        if xo == NULL:
            raise MemoryError("no memory for the sums of x")
    cdef _RepackedJob job
    job.kind = kind
    job.fn = fn
    job.packed = &packed[0, 0]
    job.tile_bytes = packed.shape[1]
    job.n_rows = n_rows
    job.nb = nb
    job.x = <const fgg_mm_q8 *>&xq[0, 0]
    job.xs = nb
    job.xo = xo
    job.m = <int>m
    job.out = &out[0, 0]
    job.os = out.strides[0] // sizeof(float)
    job.n_tasks = _split_tasks(n_tiles, 1, threads)
    job.status = 0
    try:
        with nogil:
            if xo != NULL:
                fgg_rp_x_offsets(kind, job.x, nb, m, nb, xo)
            fgg_pool_run(_repacked_task, &job, job.n_tasks, threads)
    finally:
        free(xo)
    _raise_status(job.status)
