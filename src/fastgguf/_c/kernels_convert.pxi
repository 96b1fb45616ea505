# float32 <-> the half types outside the quantize/dequantize columns: a dtype cast (every value,
# NaN and inf included) and a dequantization rounded to a half type while the values are in L1.
# Included near the end of kernels.pxi, before kernels_matmul.pxi (whose float path rounds with _round_values).

from fastgguf._c.quant_float cimport fgg_round_to_bf16, fgg_round_to_f16


def narrow_floats(const float[::1] src not None, uint16_t[::1] dst not None, int type_id):
    """float32 ``src`` to F16 or BF16 bits in ``dst`` (same length), GIL released.

    The quantizers' rounding (nearest, ties to even; see quant_float.h), but for every value: NaN
    and infinities are converted too (``quantize_into`` refuses them), as a dtype cast must.

    Raises
    ------
    ValueError
        ``type_id`` not F16 or BF16, or lengths that differ.
    """
    cdef Py_ssize_t n = src.shape[0]
    if type_id != FGG_TYPE_F16 and type_id != FGG_TYPE_BF16:
        raise ValueError(f"narrow_floats converts to F16 or BF16, not type id {type_id}")
    if dst.shape[0] != n:
        raise ValueError(f"dst has {dst.shape[0]} elements, src {n}")
    if n == 0:
        return
    with nogil:
        if type_id == FGG_TYPE_F16:
            fgg_quantize_f16(&src[0], <uint8_t *>&dst[0], 1, n, NULL)
        else:
            fgg_quantize_bf16(&src[0], <uint8_t *>&dst[0], 1, n, NULL)


# Values rounded per this many floats (16 KiB): what the kernel just wrote is still in L1.
cdef enum:
    _ROUND_CHUNK_FLOATS = 4096


cdef inline void _round_values(float *values, Py_ssize_t n, int round_to) noexcept nogil:
    """Round ``values`` in place to the nearest F16 or BF16 (``round_to``; any other value: unchanged)."""
    if round_to == FGG_TYPE_BF16:
        fgg_round_to_bf16(values, n)
    elif round_to == FGG_TYPE_F16:
        fgg_round_to_f16(values, n)


cdef int _dequantize_rounded_guarded(fgg_dequantize_fn kernel, const uint8_t *src, float *dst, Py_ssize_t n_blocks,
                                     Py_ssize_t block_size, Py_ssize_t type_size, int round_to) noexcept nogil:
    cdef fgg_guard guard
    cdef Py_ssize_t per_chunk = max(1, _ROUND_CHUNK_FLOATS // block_size), done = 0, count
    if fgg_guard_enter(&guard):
        return -2
    while done < n_blocks:
        count = min(per_chunk, n_blocks - done)
        kernel(src + done * type_size, dst + done * block_size, count)
        _round_values(dst + done * block_size, count * block_size, round_to)
        done += count
    fgg_guard_leave(&guard)
    return 0


def dequantize_rounded_into(const uint8_t[::1] src not None, float[::1] dst not None, int type_id, int round_to):
    """``dequantize_into`` of whole blocks (little-endian), each value then rounded to the nearest
    F16 or BF16 (``round_to``) and kept as float32: a float32 copy of what a cast to that half type
    gives, in one pass. GIL released.

    Raises
    ------
    ValueError
        Unknown type id, ``round_to`` not F16 or BF16, ``dst`` not whole blocks, ``src`` too short.
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
    cdef Py_ssize_t block_size = fgg_block_size[type_id], type_size = fgg_type_size[type_id]
    cdef Py_ssize_t n_out = dst.shape[0]
    if n_out % block_size:
        raise ValueError(f"output length {n_out} is not a multiple of the block size {block_size}")
    cdef Py_ssize_t n_blocks = n_out // block_size
    if src.shape[0] < n_blocks * type_size:
        raise ValueError(f"{n_blocks} blocks need {n_blocks * type_size} bytes, src has {src.shape[0]}")
    if n_blocks == 0:
        return
    cdef int status
    with nogil:
        status = _dequantize_rounded_guarded(row.dequantize, &src[0], &dst[0], n_blocks, block_size, type_size, round_to)
    if status == -2:
        raise GGUFError("the data could not be read: the mapped file shrank while it was being read (SIGBUS)")
