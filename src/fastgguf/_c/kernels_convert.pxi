# float32 <-> the half types outside the quantize/dequantize columns: a dtype cast (every value,
# NaN and inf included) and a dequantization rounded to a half type while the values are in L1.
# Included near the end of kernels.pxi, before kernels_matmul.pxi (whose float path rounds with _round_values).

from fastgguf._c.quant_float cimport fgg_round_to_bf16, fgg_round_to_f16


cdef struct _NarrowJob:
    const float *src
    uint16_t *dst
    Py_ssize_t n, granule
    int type_id, n_tasks


cdef void _narrow_task(void *ctx, int task) noexcept nogil:
    cdef _NarrowJob *job = <_NarrowJob *>ctx
    cdef Py_ssize_t a, b
    _task_span(job.n, job.granule, task, job.n_tasks, &a, &b)
    if a == b:
        return
    if job.type_id == FGG_TYPE_F16:
        fgg_quantize_f16(job.src + a, <uint8_t *>(job.dst + a), 1, b - a, NULL)
    else:
        fgg_quantize_bf16(job.src + a, <uint8_t *>(job.dst + a), 1, b - a, NULL)


def narrow_floats(const float[::1] src not None, uint16_t[::1] dst not None, int type_id, int threads=1,
                  Py_ssize_t split=4096):
    """float32 ``src`` to F16 or BF16 bits in ``dst`` (same length), GIL released, on ``threads``
    threads of the build's pool (sharing parts of a multiple of ``split`` elements).

    The quantizers' rounding (nearest, ties to even; see quant_float.h), but for every value: NaN
    and infinities are converted too (``quantize_into`` refuses them), as a dtype cast must.

    Raises
    ------
    ValueError
        ``type_id`` not F16 or BF16, lengths that differ, ``threads`` or ``split`` below 1.
    """
    cdef Py_ssize_t n = src.shape[0]
    if type_id != FGG_TYPE_F16 and type_id != FGG_TYPE_BF16:
        raise ValueError(f"narrow_floats converts to F16 or BF16, not type id {type_id}")
    if dst.shape[0] != n:
        raise ValueError(f"dst has {dst.shape[0]} elements, src {n}")
    if threads < 1 or split < 1:
        raise ValueError(f"threads and split must be at least 1, got {threads} and {split}")
    if n == 0:
        return
    cdef _NarrowJob job
    job.src = &src[0]
    job.dst = &dst[0]
    job.n = n
    job.type_id = type_id
    job.granule = split
    job.n_tasks = _split_tasks(n, split, threads)
    with nogil:
        fgg_pool_run(_narrow_task, &job, job.n_tasks, threads)


# Values rounded per this many floats (16 KiB): what the kernel just wrote is still in L1.
cdef enum:
    _ROUND_CHUNK_FLOATS = 4096


cdef inline void _round_values(float *values, Py_ssize_t n, int round_to) noexcept nogil:
    """Round ``values`` in place to the nearest F16 or BF16 (``round_to``; any other value: unchanged)."""
    if round_to == FGG_TYPE_BF16:
        fgg_round_to_bf16(values, n)
    elif round_to == FGG_TYPE_F16:
        fgg_round_to_f16(values, n)


cdef struct _RoundedJob:
    fgg_dequantize_fn kernel
    const uint8_t *src
    float *dst
    Py_ssize_t n_blocks, block_size, type_size, granule
    int round_to, n_tasks
    int status


cdef void _dequantize_rounded_task(void *ctx, int task) noexcept nogil:
    cdef _RoundedJob *job = <_RoundedJob *>ctx
    cdef fgg_guard guard
    cdef Py_ssize_t per_chunk = max(1, _ROUND_CHUNK_FLOATS // job.block_size), done, end, count
    _task_span(job.n_blocks, job.granule, task, job.n_tasks, &done, &end)
    if done == end:
        return
    if fgg_guard_enter(&guard):
        job.status = -2
        return
    while done < end:
        count = min(per_chunk, end - done)
        job.kernel(job.src + done * job.type_size, job.dst + done * job.block_size, count)
        _round_values(job.dst + done * job.block_size, count * job.block_size, job.round_to)
        done += count
    fgg_guard_leave(&guard)


def dequantize_rounded_into(const uint8_t[::1] src not None, float[::1] dst not None, int type_id, int round_to,
                            int threads=1, Py_ssize_t split=4096):
    """``dequantize_into`` of whole blocks (little-endian), each value then rounded to the nearest
    F16 or BF16 (``round_to``) and kept as float32: a float32 copy of what a cast to that half type
    gives, in one pass. GIL released; ``threads`` threads of the build's pool share the blocks
    (``split`` as for ``dequantize_into``).

    Raises
    ------
    ValueError
        Unknown type id, ``round_to`` not F16 or BF16, ``dst`` not whole blocks, ``src`` too short,
        ``threads`` or ``split`` below 1.
    NotImplementedError
        No kernel for this type in this module.
    GGUFError
        ``src`` is a map of a file that was truncated under it (SIGBUS while reading).
    """
    cdef fgg_kernel_row *row = _row(type_id)
    if row == NULL:
        raise ValueError(f"unknown ggml tensor type id {type_id}")
    if row.dequantize == NULL:
        raise NotImplementedError(f"no dequantization kernel for ggml type id {type_id}")
    if round_to != FGG_TYPE_F16 and round_to != FGG_TYPE_BF16:
        raise ValueError(f"round_to must be the F16 or BF16 type id, not {round_to}")
    if threads < 1 or split < 1:
        raise ValueError(f"threads and split must be at least 1, got {threads} and {split}")
    cdef Py_ssize_t block_size = fgg_block_size[type_id], type_size = fgg_type_size[type_id]
    cdef Py_ssize_t n_out = dst.shape[0]
    if n_out % block_size:
        raise ValueError(f"output length {n_out} is not a multiple of the block size {block_size}")
    cdef Py_ssize_t n_blocks = n_out // block_size
    if src.shape[0] < n_blocks * type_size:
        raise ValueError(f"{n_blocks} blocks need {n_blocks * type_size} bytes, src has {src.shape[0]}")
    if n_blocks == 0:
        return
    cdef _RoundedJob job
    job.kernel = row.dequantize
    job.src = &src[0]
    job.dst = &dst[0]
    job.n_blocks = n_blocks
    job.block_size = block_size
    job.type_size = type_size
    job.round_to = round_to
    job.granule = max(1, split // block_size)
    job.status = 0
    job.n_tasks = _split_tasks(n_blocks, job.granule, threads)
    with nogil:
        fgg_pool_run(_dequantize_rounded_task, &job, job.n_tasks, threads)
    if job.status == -2:
        raise GGUFError("the data could not be read: the mapped file shrank while it was being read (SIGBUS)")
