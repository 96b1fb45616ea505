# Legacy 32-element block quants -> float32: Q4_0, Q4_1, Q5_0, Q5_1, Q8_0, Q8_1.
# Included from _kernels.pxi (which provides dequant_fn and the _kernel_helpers).
#
# Each kernel decodes the block's scale(s) once, unpacks the quants eight at a time into uint64
# words of byte lanes (plain integer code, fast in every build), then converts 16 at a time with
# the SIMD steps of _kernel_helpers.pxd. Float operations follow gguf-py's order and precision
# exactly (float32 throughout, no FMA): that is what makes the results the same bits.
#
# Block layouts (bytes):
#   Q4_0  fp16 d | 16 B nibbles             value = d * (q - 8)
#   Q4_1  fp16 d | fp16 m | 16 B nibbles    value = d * q + m
#   Q5_0  fp16 d | u32 high bits | 16 B     value = d * (q - 16)
#   Q5_1  fp16 d | fp16 m | u32 high | 16 B value = d * q + m
#   Q8_0  fp16 d | 32 x int8                value = q * d
#   Q8_1  fp16 d | fp16 s | 32 x int8       value = d * q   (s = d * sum(q) is only for dot products)
# Nibble layout: byte j holds element j in its low nibble and element j + 16 in its high nibble.

from libc.string cimport memcpy
from libc.stdint cimport int8_t, uint64_t


cdef inline void _nibbles(const uint8_t *packed, const uint8_t *high_mask, uint64_t minus,
                          uint64_t *w) noexcept nogil:
    # 16 packed bytes -> 32 quants as four words of byte lanes (w[0], w[1]: elements 0-15 from
    # the low nibbles; w[2], w[3]: elements 16-31 from the high nibbles), with the fifth bit from
    # high_mask (32 bits, if not NULL), minus ``minus`` per lane.
    cdef uint64_t word, lo, hi
    cdef int k
    for k in range(2):
        word = fgg_load_u64le(packed + 8 * k)
        lo = word & LANES_0F
        hi = (word >> 4) & LANES_0F
        if high_mask != NULL:
            lo = lo | fgg_spread_bits8(high_mask[k], 16)
            hi = hi | fgg_spread_bits8(high_mask[k + 2], 16)
        if minus:
            lo = fgg_lanes_minus(lo, minus)
            hi = fgg_lanes_minus(hi, minus)
        w[k] = lo
        w[k + 2] = hi


cdef void dequant_q4_0(const uint8_t *src, float *dst, Py_ssize_t n_blocks) noexcept nogil:
    cdef Py_ssize_t b
    cdef float d
    cdef uint64_t w[4]
    for b in range(n_blocks):
        d = fgg_half_to_float_scale(fgg_load_u16le(src))
        _nibbles(src + 2, NULL, 8 * LANES_01, w)
        fgg_i8x16_mul_w(dst, w[0], w[1], d)
        fgg_i8x16_mul_w(dst + 16, w[2], w[3], d)
        src += 18
        dst += 32


cdef void dequant_q4_1(const uint8_t *src, float *dst, Py_ssize_t n_blocks) noexcept nogil:
    cdef Py_ssize_t b
    cdef float d, m
    cdef uint64_t w[4]
    for b in range(n_blocks):
        d = fgg_half_to_float_scale(fgg_load_u16le(src))
        m = fgg_half_to_float_scale(fgg_load_u16le(src + 2))
        _nibbles(src + 4, NULL, 0, w)
        fgg_u8x16_mul_add_w(dst, w[0], w[1], d, m)
        fgg_u8x16_mul_add_w(dst + 16, w[2], w[3], d, m)
        src += 20
        dst += 32


cdef void dequant_q5_0(const uint8_t *src, float *dst, Py_ssize_t n_blocks) noexcept nogil:
    cdef Py_ssize_t b
    cdef float d
    cdef uint64_t w[4]
    for b in range(n_blocks):
        d = fgg_half_to_float_scale(fgg_load_u16le(src))
        _nibbles(src + 6, src + 2, 16 * LANES_01, w)
        fgg_i8x16_mul_w(dst, w[0], w[1], d)
        fgg_i8x16_mul_w(dst + 16, w[2], w[3], d)
        src += 22
        dst += 32


cdef void dequant_q5_1(const uint8_t *src, float *dst, Py_ssize_t n_blocks) noexcept nogil:
    cdef Py_ssize_t b
    cdef float d, m
    cdef uint64_t w[4]
    for b in range(n_blocks):
        d = fgg_half_to_float_scale(fgg_load_u16le(src))
        m = fgg_half_to_float_scale(fgg_load_u16le(src + 2))
        _nibbles(src + 8, src + 4, 0, w)
        fgg_u8x16_mul_add_w(dst, w[0], w[1], d, m)
        fgg_u8x16_mul_add_w(dst + 16, w[2], w[3], d, m)
        src += 24
        dst += 32


cdef void dequant_q8_0(const uint8_t *src, float *dst, Py_ssize_t n_blocks) noexcept nogil:
    cdef Py_ssize_t b
    cdef float d
    for b in range(n_blocks):
        d = fgg_half_to_float_scale(fgg_load_u16le(src))
        fgg_i8x16_mul(dst, <const int8_t *>(src + 2), d)
        fgg_i8x16_mul(dst + 16, <const int8_t *>(src + 18), d)
        src += 34
        dst += 32


cdef void dequant_q8_1(const uint8_t *src, float *dst, Py_ssize_t n_blocks) noexcept nogil:
    cdef Py_ssize_t b
    cdef float d
    for b in range(n_blocks):
        d = fgg_half_to_float_scale(fgg_load_u16le(src))
        fgg_i8x16_mul(dst, <const int8_t *>(src + 4), d)
        fgg_i8x16_mul(dst + 16, <const int8_t *>(src + 20), d)
        src += 36
        dst += 32


cdef dequant_fn legacy_kernel(int type_id) noexcept nogil:
    if type_id == TYPE_Q4_0:
        return dequant_q4_0
    if type_id == TYPE_Q4_1:
        return dequant_q4_1
    if type_id == TYPE_Q5_0:
        return dequant_q5_0
    if type_id == TYPE_Q5_1:
        return dequant_q5_1
    if type_id == TYPE_Q8_0:
        return dequant_q8_0
    if type_id == TYPE_Q8_1:
        return dequant_q8_1
    return NULL


cdef swap_fn legacy_swap(int type_id) noexcept nogil:
    # Big-endian quantized blocks (fp16 scales and the u32 masks swapped) are not handled yet.
    return NULL
