# Legacy 32-element block quants -> float32: Q4_0, Q4_1, Q5_0, Q5_1, Q8_0, Q8_1.
# Included from _kernels.pxi (which provides dequant_fn and the _kernel_helpers).
#
# Each kernel decodes the block's scale(s) once, copies the packed quants into a local array
# (a local cannot alias dst, so the compiler vectorizes the 16/32-wide loop without run-time
# overlap checks), then runs one fixed-trip loop. Float operations follow gguf-py's order and
# precision exactly (float32 throughout, no FMA): that is what makes the results the same bits.
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
from libc.stdint cimport int8_t


cdef void dequant_q4_0(const uint8_t *src, float *dst, Py_ssize_t n_blocks) noexcept nogil:
    cdef Py_ssize_t b
    cdef int j
    cdef float d
    cdef uint8_t qs[16]
    for b in range(n_blocks):
        d = fgg_half_to_float(fgg_load_u16le(src))
        memcpy(qs, src + 2, 16)
        for j in range(16):
            dst[j] = d * <float>(<int>(qs[j] & 0x0F) - 8)
            dst[j + 16] = d * <float>(<int>(qs[j] >> 4) - 8)
        src += 18
        dst += 32


cdef void dequant_q4_1(const uint8_t *src, float *dst, Py_ssize_t n_blocks) noexcept nogil:
    cdef Py_ssize_t b
    cdef int j
    cdef float d, m
    cdef uint8_t qs[16]
    for b in range(n_blocks):
        d = fgg_half_to_float(fgg_load_u16le(src))
        m = fgg_half_to_float(fgg_load_u16le(src + 2))
        memcpy(qs, src + 4, 16)
        for j in range(16):
            dst[j] = d * <float>(qs[j] & 0x0F) + m
            dst[j + 16] = d * <float>(qs[j] >> 4) + m
        src += 20
        dst += 32


cdef inline void _spread_high_bits(uint32_t bits, uint8_t *high) noexcept nogil:
    # Bit j of the block's 32-bit mask becomes 16 (the fifth bit of quant j) or 0.
    cdef int j
    for j in range(32):
        high[j] = <uint8_t>(((bits >> j) & 1) << 4)


cdef void dequant_q5_0(const uint8_t *src, float *dst, Py_ssize_t n_blocks) noexcept nogil:
    cdef Py_ssize_t b
    cdef int j
    cdef float d
    cdef uint8_t qs[16]
    cdef uint8_t high[32]
    for b in range(n_blocks):
        d = fgg_half_to_float(fgg_load_u16le(src))
        _spread_high_bits(fgg_load_u32le(src + 2), high)
        memcpy(qs, src + 6, 16)
        for j in range(16):
            dst[j] = d * <float>(<int>((qs[j] & 0x0F) | high[j]) - 16)
            dst[j + 16] = d * <float>(<int>((qs[j] >> 4) | high[j + 16]) - 16)
        src += 22
        dst += 32


cdef void dequant_q5_1(const uint8_t *src, float *dst, Py_ssize_t n_blocks) noexcept nogil:
    cdef Py_ssize_t b
    cdef int j
    cdef float d, m
    cdef uint8_t qs[16]
    cdef uint8_t high[32]
    for b in range(n_blocks):
        d = fgg_half_to_float(fgg_load_u16le(src))
        m = fgg_half_to_float(fgg_load_u16le(src + 2))
        _spread_high_bits(fgg_load_u32le(src + 4), high)
        memcpy(qs, src + 8, 16)
        for j in range(16):
            dst[j] = d * <float>((qs[j] & 0x0F) | high[j]) + m
            dst[j + 16] = d * <float>((qs[j] >> 4) | high[j + 16]) + m
        src += 24
        dst += 32


cdef void dequant_q8_0(const uint8_t *src, float *dst, Py_ssize_t n_blocks) noexcept nogil:
    cdef Py_ssize_t b
    cdef int j
    cdef float d
    cdef int8_t qs[32]
    for b in range(n_blocks):
        d = fgg_half_to_float(fgg_load_u16le(src))
        memcpy(qs, src + 2, 32)
        for j in range(32):
            dst[j] = <float>qs[j] * d
        src += 34
        dst += 32


cdef void dequant_q8_1(const uint8_t *src, float *dst, Py_ssize_t n_blocks) noexcept nogil:
    cdef Py_ssize_t b
    cdef int j
    cdef float d
    cdef int8_t qs[32]
    for b in range(n_blocks):
        d = fgg_half_to_float(fgg_load_u16le(src))
        memcpy(qs, src + 4, 32)
        for j in range(32):
            dst[j] = d * <float>qs[j]
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
