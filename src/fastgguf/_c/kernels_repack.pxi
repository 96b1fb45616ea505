# Weights repacked for the integer path (repack.h): 16 weight rows interleaved, made once
# (fastgguf.repack), then multiplied by a tile kernel that makes lane k of 16 weight rows in one
# vpdpbusd. The same bits as matmul_rows_int on the original blocks.

from libc.stdint cimport int32_t, int64_t

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
    """Whether ``type_id`` has a repacked layout (Q8_0, Q4_0, Q5_0, Q4_1, Q5_1, IQ4_NL, MXFP4, Q2_K
    to Q6_K, IQ4_XS)."""
    return fgg_rp_kind(type_id) >= 0


def repack_row_bytes(int type_id, Py_ssize_t row_bytes):
    """Bytes a weight row of ``row_bytes`` takes in the repacked layout (the same, but some scales
    unpacked: Q4_K 148 bytes per 144, Q5_K 180 per 176, Q3_K 114 per 110, IQ4_XS 138 per 136)."""
    cdef int kind = fgg_rp_kind(type_id)
    if kind < 0:
        raise ValueError(f"ggml type id {type_id} has no repacked layout")
    return row_bytes // fgg_type_size[type_id] * fgg_rp_block_bytes(kind)


cdef fgg_rp_tile_fn _tile_kernel(int type_id, int *c) noexcept:
    _row(FGG_TYPE_Q8_0)  # the VNNI choice is made with the table
    return fgg_rp_tile_kernel(type_id, _vnni_on, c)


def repacked_kernel(int type_id):
    """The tile kernel :func:`matmul_repacked_int` runs for ``type_id`` here: ``"vnni"`` (AVX-512
    VNNI on), ``"vnni-split"`` (the same, on a CPU that runs 512-bit operations in halves: Zen 4,
    where other row counts pay), ``"avx2"`` (maddubs: the avx2 build, the avx512 one without VNNI),
    or ``None`` (the portable build, or a type without a layout)."""
    cdef int c
    _row(FGG_TYPE_Q8_0)  # the table (and the width) is set on first use
    if _tile_kernel(type_id, &c) == NULL:
        return None
    if _vnni_on:
        return "vnni" if _wide_on else "vnni-split"
    return "avx2"


def repack_rows(const uint8_t[:, ::1] w not None, int type_id, uint8_t[:, ::1] dst not None, int threads=1):
    """Interleave the weight rows ``w`` (N, row_bytes) of ``type_id`` into ``dst`` of shape
    ``(ceil(N / 16), repack_row_bytes(type_id, row_bytes) * 16)``: tile t holds rows 16t..16t+15
    (missing rows zeros).

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
    cdef Py_ssize_t tile_bytes = row_bytes // type_size * fgg_rp_block_bytes(kind) * FGG_RP_ROWS
    if dst.shape[0] != n_tiles or dst.shape[1] != tile_bytes:
        raise ValueError(f"dst must have shape ({n_tiles}, {tile_bytes})")
    if n_rows == 0 or row_bytes == 0:
        return
    cdef _RepackJob job
    job.kind = kind
    job.w = &w[0, 0]
    job.row_bytes = row_bytes
    job.n_rows = n_rows
    job.nb = row_bytes // type_size
    job.tile_bytes = tile_bytes
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
    Py_ssize_t tile_bytes, n_rows, n_tiles, nb
    const uint8_t *x  # nb blocks of x per row (fgg_mm_q8, or fgg_mm_q8k for the K kinds), x_row_bytes apart
    Py_ssize_t x_row_bytes
    const int32_t *xo
    float *out
    Py_ssize_t os
    # groups of rows of x, each against one expert's tiles (matmul_id): group g is rows
    # bounds[g]..bounds[g + 1] against expert experts[g]; one group (expert 0, every row) without
    const int64_t *experts
    const int64_t *bounds
    Py_ssize_t n_groups, max_rows


cdef void _repacked_task(void *ctx, int task) noexcept nogil:
    """Units u = g * n_tiles + t (tile t of group g's expert), in order: a group's tiles together."""
    cdef _RepackedJob *job = <_RepackedJob *>ctx
    cdef Py_ssize_t a, b, u, g, t, e, r0, r1
    cdef int rows
    _task_span(job.n_groups * job.n_tiles, 1, task, job.n_tasks, &a, &b)
    cdef void *st = NULL
    if job.fn != NULL:
        st = fgg_aligned_malloc(job.max_rows * FGG_RP_STATE_BYTES)
        if st == NULL:
            job.status = -3
            return
    for u in range(a, b):
        g = u // job.n_tiles
        t = u - g * job.n_tiles
        e = job.experts[g] if job.experts != NULL else 0
        r0 = job.bounds[g] if job.bounds != NULL else 0
        r1 = job.bounds[g + 1] if job.bounds != NULL else job.max_rows
        if r1 == r0:
            continue
        rows = <int>min(<Py_ssize_t>FGG_RP_ROWS, job.n_rows - t * FGG_RP_ROWS)
        if job.fn != NULL:
            job.fn(job.packed + (e * job.n_tiles + t) * job.tile_bytes, job.nb, job.x + r0 * job.x_row_bytes, job.nb,
                   job.xo + r0 * job.nb * 8 if job.xo != NULL else NULL, <int>(r1 - r0),
                   job.out + r0 * job.os + t * FGG_RP_ROWS, job.os, rows, st)
        else:
            fgg_rp_tile_c(job.kind, job.packed + (e * job.n_tiles + t) * job.tile_bytes, job.nb,
                          job.x + r0 * job.x_row_bytes, job.nb, <int>(r1 - r0), job.out + r0 * job.os + t * FGG_RP_ROWS,
                          job.os, rows)
    fgg_aligned_free(st)


def matmul_repacked_int(const uint8_t[:, ::1] packed not None, int type_id, Py_ssize_t n_rows,
                        const uint8_t[:, ::1] xq not None, float[:, :] out not None, int threads=1,
                        bint reference=False, const int64_t[::1] experts=None, const int64_t[::1] bounds=None):
    """``out`` (M, N) from the repacked weight ``packed`` (:func:`repack_rows` of N rows) and the
    quantized rows ``xq`` (:func:`quantize_x8`): the bits of :func:`matmul_rows_int` on the
    original rows. ``reference``: the plain C tile kernel (slow; any build) instead of
    :func:`repacked_kernel`'s. With ``experts`` and ``bounds`` (matmul_id): ``packed`` holds the
    tiles of E experts one after the other, and rows ``bounds[g]:bounds[g + 1]`` of ``xq`` and
    ``out`` are group g, against expert ``experts[g]``.

    Raises
    ------
    ValueError
        Shapes that disagree, groups that do not tile the rows of x, ``threads < 1``.
    IndexError
        An expert index outside ``packed``.
    NotImplementedError
        No tile kernel here (and not ``reference``).
    """
    cdef int kind = fgg_rp_kind(type_id)
    if kind < 0:
        raise ValueError(f"ggml type id {type_id} has no repacked layout")
    if threads < 1:
        raise ValueError(f"threads must be at least 1, got {threads}")
    cdef fgg_rp_tile_fn fn = NULL
    cdef int c = 0
    if not reference:
        fn = _tile_kernel(type_id, &c)
        if fn == NULL:
            raise NotImplementedError("no tile kernel for repacked weights in this build")
    # x's blocks (per 32, or per 256 for the K kinds) pair with the weight blocks one to one
    cdef Py_ssize_t x_bytes = MM_Q8K_BYTES if _x_by_256(type_id) else MM_Q8_BYTES
    cdef Py_ssize_t m = xq.shape[0], nb = xq.shape[1] // x_bytes, g, n_exp
    cdef Py_ssize_t n_tiles = (n_rows + FGG_RP_ROWS - 1) // FGG_RP_ROWS
    if xq.shape[1] % x_bytes:
        raise ValueError(f"quantized x rows of {xq.shape[1]} bytes are not whole blocks")
    if (n_rows < 0 or packed.shape[1] != nb * fgg_rp_block_bytes(kind) * FGG_RP_ROWS
            or (packed.shape[0] != n_tiles if experts is None else n_tiles and packed.shape[0] % n_tiles)):
        raise ValueError("packed does not hold n_rows repacked rows of x's length")
    n_exp = packed.shape[0] // n_tiles if n_tiles else 0
    if out.shape[0] != m or out.shape[1] != n_rows or (n_rows > 1 and out.strides[1] != sizeof(float)):
        raise ValueError("out must be (M, N) float32 with contiguous rows")
    if m > 0x7fffffff:
        raise ValueError(f"{m} rows of x are too many")
    cdef _RepackedJob job
    job.experts = NULL
    job.bounds = NULL
    job.n_groups = 1
    job.max_rows = m
    if (experts is None) != (bounds is None):
        raise ValueError("experts and bounds go together")
    if experts is not None:
        job.n_groups = experts.shape[0]
        if bounds.shape[0] != job.n_groups + 1 or bounds[0] != 0 or bounds[job.n_groups] != m:
            raise ValueError("bounds must run from 0 to the rows of x, one more than the groups")
        job.max_rows = 0
        for g in range(job.n_groups):
            if bounds[g + 1] < bounds[g]:
                raise ValueError("bounds must not decrease")
            if not 0 <= experts[g] < n_exp and n_tiles:
                raise IndexError(f"expert index {experts[g]} out of range for {n_exp} experts")
            job.max_rows = max(job.max_rows, bounds[g + 1] - bounds[g])
        if job.n_groups:
            job.experts = &experts[0]
            job.bounds = &bounds[0]
    if m == 0 or n_rows == 0 or job.n_groups == 0:
        return
    cdef Py_ssize_t i, n
    if nb == 0:
        for i in range(m):
            for n in range(n_rows):
                out[i, n] = 0.0
        return
    cdef int32_t *xo = NULL
    if fn != NULL and not fgg_rp_is_k(kind):
        xo = <int32_t *>malloc(m * nb * 8 * sizeof(int32_t))
        if xo == NULL:
            raise MemoryError("no memory for the sums of x")
    job.kind = kind
    job.fn = fn
    job.packed = &packed[0, 0]
    job.tile_bytes = packed.shape[1]
    job.n_rows = n_rows
    job.n_tiles = n_tiles
    job.nb = nb
    job.x = &xq[0, 0]
    job.x_row_bytes = xq.shape[1]
    job.xo = xo
    job.out = &out[0, 0]
    job.os = out.strides[0] // sizeof(float)
    job.n_tasks = _split_tasks(job.n_groups * n_tiles, 1, threads)
    job.status = 0
    try:
        with nogil:
            if xo != NULL:
                fgg_rp_x_offsets(c, <const fgg_mm_q8 *>job.x, nb, m, nb, xo)
            fgg_pool_run(_repacked_task, &job, job.n_tasks, threads)
    finally:
        free(xo)
    _raise_status(job.status)
