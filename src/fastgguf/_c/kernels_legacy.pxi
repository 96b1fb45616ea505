# Legacy 32-element block quants -> float32: Q4_0, Q4_1, Q5_0, Q5_1, Q8_0, Q8_1.
# Included from kernels.pxi (which provides dequant_fn and the dequant_common).
#
# Each kernel decodes the block's scale(s) once, unpacks 16 quants at a time in an fgg_v16 (an
# SSE2 register on x86, two uint64 words elsewhere), then converts them with the SIMD steps of
# dequant_common.pxd. Float operations follow gguf-py's order and precision
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
from fastgguf._c.quant_legacy cimport *


cdef inline fgg_v16 _high_bits(const uint8_t *mask) noexcept nogil:
    # 16 bits of the block's 32-bit fifth-bit mask -> 16 lanes of 16 or 0.
    return fgg_v16_bits(mask, 16)


cdef void dequant_q4_0(const uint8_t *src, float *dst, Py_ssize_t n_blocks) noexcept nogil:
    cdef Py_ssize_t b
    cdef float d
    cdef fgg_v16 v
    cdef fgg_v16 nibble = fgg_v16_splat(0x0F), eight = fgg_v16_splat(8)
    for b in range(n_blocks):
        d = fgg_half_to_float_scale(fgg_load_u16le(src))
        v = fgg_v16_load(src + 2)
        fgg_i8x16_mul_v(dst, fgg_v16_sub(fgg_v16_and(v, nibble), eight), d)
        fgg_i8x16_mul_v(dst + 16, fgg_v16_sub(fgg_v16_and(fgg_v16_shr(v, 4), nibble), eight), d)
        src += 18
        dst += 32


cdef void dequant_q4_1(const uint8_t *src, float *dst, Py_ssize_t n_blocks) noexcept nogil:
    cdef Py_ssize_t b
    cdef float d, m
    cdef fgg_v16 v
    cdef fgg_v16 nibble = fgg_v16_splat(0x0F)
    for b in range(n_blocks):
        d = fgg_half_to_float_scale(fgg_load_u16le(src))
        m = fgg_half_to_float_scale(fgg_load_u16le(src + 2))
        v = fgg_v16_load(src + 4)
        fgg_u8x16_mul_add_v(dst, fgg_v16_and(v, nibble), d, m)
        fgg_u8x16_mul_add_v(dst + 16, fgg_v16_and(fgg_v16_shr(v, 4), nibble), d, m)
        src += 20
        dst += 32


cdef void dequant_q5_0(const uint8_t *src, float *dst, Py_ssize_t n_blocks) noexcept nogil:
    cdef Py_ssize_t b
    cdef float d
    cdef fgg_v16 v
    cdef fgg_v16 nibble = fgg_v16_splat(0x0F), sixteen = fgg_v16_splat(16)
    for b in range(n_blocks):
        d = fgg_half_to_float_scale(fgg_load_u16le(src))
        v = fgg_v16_load(src + 6)
        fgg_i8x16_mul_v(dst, fgg_v16_sub(fgg_v16_or(fgg_v16_and(v, nibble), _high_bits(src + 2)), sixteen), d)
        fgg_i8x16_mul_v(dst + 16, fgg_v16_sub(fgg_v16_or(fgg_v16_and(fgg_v16_shr(v, 4), nibble),
                                                         _high_bits(src + 4)), sixteen), d)
        src += 22
        dst += 32


cdef void dequant_q5_1(const uint8_t *src, float *dst, Py_ssize_t n_blocks) noexcept nogil:
    cdef Py_ssize_t b
    cdef float d, m
    cdef fgg_v16 v
    cdef fgg_v16 nibble = fgg_v16_splat(0x0F)
    for b in range(n_blocks):
        d = fgg_half_to_float_scale(fgg_load_u16le(src))
        m = fgg_half_to_float_scale(fgg_load_u16le(src + 2))
        v = fgg_v16_load(src + 8)
        fgg_u8x16_mul_add_v(dst, fgg_v16_or(fgg_v16_and(v, nibble), _high_bits(src + 4)), d, m)
        fgg_u8x16_mul_add_v(dst + 16, fgg_v16_or(fgg_v16_and(fgg_v16_shr(v, 4), nibble), _high_bits(src + 6)), d, m)
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


cdef void legacy_rows(fgg_kernel_row *rows) noexcept nogil:
    """This family's rows of the kernel table."""
    rows[FGG_TYPE_Q4_0] = fgg_kernel_row(dequantize=dequant_q4_0, byteswap=swap_block_fields,
                                            quantize=fgg_quantize_q4_0, dot=NULL)
    rows[FGG_TYPE_Q4_1] = fgg_kernel_row(dequantize=dequant_q4_1, byteswap=swap_block_fields,
                                            quantize=fgg_quantize_q4_1, dot=NULL)
    rows[FGG_TYPE_Q5_0] = fgg_kernel_row(dequantize=dequant_q5_0, byteswap=swap_block_fields,
                                            quantize=fgg_quantize_q5_0, dot=NULL)
    rows[FGG_TYPE_Q5_1] = fgg_kernel_row(dequantize=dequant_q5_1, byteswap=swap_block_fields,
                                            quantize=fgg_quantize_q5_1, dot=NULL)
    rows[FGG_TYPE_Q8_0] = fgg_kernel_row(dequantize=dequant_q8_0, byteswap=swap_block_fields,
                                            quantize=fgg_quantize_q8_0, dot=NULL)
    rows[FGG_TYPE_Q8_1] = fgg_kernel_row(dequantize=dequant_q8_1, byteswap=swap_block_fields,
                                            quantize=fgg_quantize_q8_1, dot=NULL)
    QUANTIZE_CHECKED[FGG_TYPE_Q4_0] = fgg_quantize_checked_q4_0
    QUANTIZE_CHECKED[FGG_TYPE_Q4_1] = fgg_quantize_checked_q4_1
    QUANTIZE_CHECKED[FGG_TYPE_Q5_0] = fgg_quantize_checked_q5_0
    QUANTIZE_CHECKED[FGG_TYPE_Q5_1] = fgg_quantize_checked_q5_1
    QUANTIZE_CHECKED[FGG_TYPE_Q8_0] = fgg_quantize_checked_q8_0
