# K-quants (256-element super-blocks) -> float32: Q2_K, Q3_K, Q4_K, Q5_K, Q6_K, Q8_K.
# Included from kernels.pxi (which provides dequant_fn and the dequant_common).
#
# Each kernel unpacks 16 quants at a time in an fgg_v16 (an SSE2 register on x86, two uint64
# words elsewhere) and converts them with the SIMD steps of dequant_common.pxd, using gguf-py's float32 order: sub-scale = d * float(scale),
# sub-min = dmin * float(min), value = sub-scale * q - sub-min (or sub-scale * q).
#
# Element order inside a super-block, with l the position inside a 32-run:
#   Q2_K  scales[16] | qs[64] | fp16 d | fp16 dmin
#         element 128*h + 32*s + l = (qs[32*h + l] >> 2*s) & 3;  sub-block (16 elements) e // 16
#         value = (d * (sc & 15)) * q - (dmin * (sc >> 4))
#   Q3_K  hmask[32] | qs[64] | scales[12] (16 x 6 bit) | fp16 d
#         low 2 bits as Q2_K; bit (4*h + s) of hmask[l] set -> +0, clear -> -4
#         value = (d * (scale - 32)) * q
#   Q4_K  fp16 d | fp16 dmin | scales[12] (8 x 6-bit scale, 8 x 6-bit min) | qs[128]
#         element 64*g + 32*h + l = (qs[32*g + l] >> 4*h) & 15;  sub-block (32 elements) 2*g + h
#         value = (d * sc) * q - (dmin * m)
#   Q5_K  as Q4_K with qh[32] before qs: bit j of qh[l] is the fifth bit of sub-block j's element l
#   Q6_K  ql[128] | qh[64] | int8 scales[16] | fp16 d;  per 128-half a:
#         element 128*a + 32*k + l: low nibble from ql[64*a + l + 32*(k & 1)] (>> 4 if k >= 2),
#         high 2 bits from (qh[32*a + l] >> 2*k) & 3;  value = (d * scale) * (q - 32)
#   Q8_K  f32 d | int8 qs[256] | int16 bsums[16] (unused here);  value = d * q

from libc.string cimport memcpy
from libc.stdint cimport int8_t, uint64_t
from fastgguf._c.quant_kquant cimport *


cdef void dequant_q2_k(const uint8_t *src, float *dst, Py_ssize_t n_blocks) noexcept nogil:
    cdef Py_ssize_t b
    cdef int h, s, sub
    cdef fgg_v16 v0, v1
    cdef fgg_v16 three = fgg_v16_splat(3)
    cdef float d, dmin
    for b in range(n_blocks):
        d = fgg_half_to_float_scale(fgg_load_u16le(src + 80))
        dmin = fgg_half_to_float_scale(fgg_load_u16le(src + 82))
        for h in range(2):
            v0 = fgg_v16_load(src + 16 + 32 * h)
            v1 = fgg_v16_load(src + 32 + 32 * h)
            for s in range(4):
                sub = 8 * h + 2 * s
                fgg_u8x16_mul_sub_v(dst + 16 * sub, fgg_v16_and(fgg_v16_shr(v0, 2 * s), three),
                                    d * <float>(src[sub] & 0x0F), dmin * <float>(src[sub] >> 4))
                fgg_u8x16_mul_sub_v(dst + 16 * sub + 16, fgg_v16_and(fgg_v16_shr(v1, 2 * s), three),
                                    d * <float>(src[sub + 1] & 0x0F), dmin * <float>(src[sub + 1] >> 4))
        src += 84
        dst += 256


cdef inline float _q3_k_scale(const uint8_t *packed, int sub, float d) noexcept nogil:
    # 6-bit scale: low 4 bits are nibble (sub // 8) of byte sub % 8, high 2 bits are pair
    # (sub // 4) of byte 8 + sub % 4; stored with a +32 bias.
    return d * <float>(<int>(((packed[sub & 7] >> (4 * (sub >> 3))) & 0x0F)
                             | (((packed[8 + (sub & 3)] >> (2 * (sub >> 2))) & 3) << 4)) - 32)


cdef inline fgg_v16 _q3_k_quants(fgg_v16 low_bits, fgg_v16 clear_bits, int bit) noexcept nogil:
    # 2 low bits at shift 2 * (bit & 3), minus 4 where hmask bit ``bit`` is clear.
    return fgg_v16_sub(fgg_v16_and(fgg_v16_shr(low_bits, 2 * (bit & 3)), fgg_v16_splat(3)),
                       fgg_v16_shl(fgg_v16_and(fgg_v16_shr(clear_bits, bit), fgg_v16_splat(1)), 2))


cdef void dequant_q3_k(const uint8_t *src, float *dst, Py_ssize_t n_blocks) noexcept nogil:
    cdef Py_ssize_t b
    cdef int h, s, sub
    cdef fgg_v16 v0, v1, clear0, clear1
    cdef float d
    cdef float scales[16]
    for b in range(n_blocks):
        d = fgg_half_to_float_scale(fgg_load_u16le(src + 108))
        for sub in range(16):
            scales[sub] = _q3_k_scale(src + 96, sub, d)
        clear0 = fgg_v16_not(fgg_v16_load(src))
        clear1 = fgg_v16_not(fgg_v16_load(src + 16))
        for h in range(2):
            v0 = fgg_v16_load(src + 32 + 32 * h)
            v1 = fgg_v16_load(src + 48 + 32 * h)
            for s in range(4):
                sub = 8 * h + 2 * s
                fgg_i8x16_mul_v(dst + 16 * sub, _q3_k_quants(v0, clear0, 4 * h + s), scales[sub])
                fgg_i8x16_mul_v(dst + 16 * sub + 16, _q3_k_quants(v1, clear1, 4 * h + s), scales[sub + 1])
        src += 110
        dst += 256


cdef inline void _unpack_scales_mins_k4(const uint8_t *packed, float d, float dmin,
                                        float *scales, float *mins) noexcept nogil:
    # Eight 6-bit scales and eight 6-bit mins packed into 12 bytes (Q4_K and Q5_K).
    cdef int j
    cdef int sc, mn
    for j in range(8):
        if j < 4:
            sc = packed[j] & 63
            mn = packed[j + 4] & 63
        else:
            sc = (packed[j + 4] & 0x0F) | ((packed[j - 4] >> 6) << 4)
            mn = (packed[j + 4] >> 4) | ((packed[j] >> 6) << 4)
        scales[j] = d * <float>sc
        mins[j] = dmin * <float>mn


cdef void dequant_q4_k(const uint8_t *src, float *dst, Py_ssize_t n_blocks) noexcept nogil:
    cdef Py_ssize_t b
    cdef int g
    cdef fgg_v16 v0, v1
    cdef fgg_v16 nibble = fgg_v16_splat(0x0F)
    cdef float d, dmin
    cdef float scales[8]
    cdef float mins[8]
    cdef float *y
    for b in range(n_blocks):
        d = fgg_half_to_float_scale(fgg_load_u16le(src))
        dmin = fgg_half_to_float_scale(fgg_load_u16le(src + 2))
        _unpack_scales_mins_k4(src + 4, d, dmin, scales, mins)
        for g in range(4):
            v0 = fgg_v16_load(src + 16 + 32 * g)
            v1 = fgg_v16_load(src + 32 + 32 * g)
            y = dst + 64 * g
            fgg_u8x16_mul_sub_v(y, fgg_v16_and(v0, nibble), scales[2 * g], mins[2 * g])
            fgg_u8x16_mul_sub_v(y + 16, fgg_v16_and(v1, nibble), scales[2 * g], mins[2 * g])
            fgg_u8x16_mul_sub_v(y + 32, fgg_v16_and(fgg_v16_shr(v0, 4), nibble), scales[2 * g + 1], mins[2 * g + 1])
            fgg_u8x16_mul_sub_v(y + 48, fgg_v16_and(fgg_v16_shr(v1, 4), nibble), scales[2 * g + 1], mins[2 * g + 1])
        src += 144
        dst += 256


cdef inline fgg_v16 _q5_k_quants(fgg_v16 low, int low_shift, fgg_v16 high, int high_bit) noexcept nogil:
    # 4 bits from ``low`` at low_shift, the fifth from bit high_bit of ``high``.
    return fgg_v16_or(fgg_v16_and(fgg_v16_shr(low, low_shift), fgg_v16_splat(0x0F)),
                      fgg_v16_shl(fgg_v16_and(fgg_v16_shr(high, high_bit), fgg_v16_splat(1)), 4))


cdef void dequant_q5_k(const uint8_t *src, float *dst, Py_ssize_t n_blocks) noexcept nogil:
    cdef Py_ssize_t b
    cdef int g
    cdef fgg_v16 v0, v1, high0, high1
    cdef float d, dmin
    cdef float scales[8]
    cdef float mins[8]
    cdef float *y
    for b in range(n_blocks):
        d = fgg_half_to_float_scale(fgg_load_u16le(src))
        dmin = fgg_half_to_float_scale(fgg_load_u16le(src + 2))
        _unpack_scales_mins_k4(src + 4, d, dmin, scales, mins)
        high0 = fgg_v16_load(src + 16)
        high1 = fgg_v16_load(src + 32)
        for g in range(4):
            v0 = fgg_v16_load(src + 48 + 32 * g)
            v1 = fgg_v16_load(src + 64 + 32 * g)
            y = dst + 64 * g
            fgg_u8x16_mul_sub_v(y, _q5_k_quants(v0, 0, high0, 2 * g), scales[2 * g], mins[2 * g])
            fgg_u8x16_mul_sub_v(y + 16, _q5_k_quants(v1, 0, high1, 2 * g), scales[2 * g], mins[2 * g])
            fgg_u8x16_mul_sub_v(y + 32, _q5_k_quants(v0, 4, high0, 2 * g + 1), scales[2 * g + 1], mins[2 * g + 1])
            fgg_u8x16_mul_sub_v(y + 48, _q5_k_quants(v1, 4, high1, 2 * g + 1), scales[2 * g + 1], mins[2 * g + 1])
        src += 176
        dst += 256


cdef inline fgg_v16 _q6_k_quants(fgg_v16 low, int low_shift, fgg_v16 high, int high_shift) noexcept nogil:
    # 4 low bits from ``low`` at low_shift, 2 high bits from ``high`` at high_shift, minus 32.
    return fgg_v16_sub(fgg_v16_or(fgg_v16_and(fgg_v16_shr(low, low_shift), fgg_v16_splat(0x0F)),
                                  fgg_v16_shl(fgg_v16_and(fgg_v16_shr(high, high_shift), fgg_v16_splat(3)), 4)),
                       fgg_v16_splat(32))


cdef void dequant_q6_k(const uint8_t *src, float *dst, Py_ssize_t n_blocks) noexcept nogil:
    cdef Py_ssize_t b
    cdef int a, r, sub
    cdef fgg_v16 lo[4]
    cdef fgg_v16 hi[2]
    cdef float d
    cdef const int8_t *scales
    for b in range(n_blocks):
        scales = <const int8_t *>(src + 192)
        d = fgg_half_to_float_scale(fgg_load_u16le(src + 208))
        for a in range(2):
            lo[0] = fgg_v16_load(src + 64 * a)        # ql bytes 0-15 of this half
            lo[1] = fgg_v16_load(src + 64 * a + 16)   # 16-31
            lo[2] = fgg_v16_load(src + 64 * a + 32)   # 32-47
            lo[3] = fgg_v16_load(src + 64 * a + 48)   # 48-63
            hi[0] = fgg_v16_load(src + 128 + 32 * a)
            hi[1] = fgg_v16_load(src + 144 + 32 * a)
            # run r (elements 128a + 32r ...): low nibbles of ql bytes 32 * (r & 1) + l, shifted
            # 4 if r >= 2; high pair r of qh
            for r in range(4):
                sub = 8 * a + 2 * r
                fgg_i8x16_mul_v(dst + 16 * sub, _q6_k_quants(lo[2 * (r & 1)], 4 * (r >> 1), hi[0], 2 * r),
                                d * <float>scales[sub])
                fgg_i8x16_mul_v(dst + 16 * sub + 16, _q6_k_quants(lo[2 * (r & 1) + 1], 4 * (r >> 1), hi[1], 2 * r),
                                d * <float>scales[sub + 1])
        src += 210
        dst += 256


cdef void dequant_q8_k(const uint8_t *src, float *dst, Py_ssize_t n_blocks) noexcept nogil:
    cdef Py_ssize_t b
    cdef int k
    cdef float d
    for b in range(n_blocks):
        d = fgg_load_f32le(src)
        for k in range(16):
            fgg_i8x16_mul(dst + 16 * k, <const int8_t *>(src + 4 + 16 * k), d)
        src += 292
        dst += 256


cdef void kquant_rows(fgg_kernel_row *rows) noexcept nogil:
    """This family's rows of the kernel table."""
    rows[FGG_TYPE_Q2_K] = fgg_kernel_row(dequantize=dequant_q2_k, byteswap=swap_block_fields,
                                            quantize=fgg_quantize_q2_k, dot=NULL)
    rows[FGG_TYPE_Q3_K] = fgg_kernel_row(dequantize=dequant_q3_k, byteswap=swap_block_fields,
                                            quantize=fgg_quantize_q3_k, dot=NULL)
    rows[FGG_TYPE_Q4_K] = fgg_kernel_row(dequantize=dequant_q4_k, byteswap=swap_block_fields,
                                            quantize=fgg_quantize_q4_k, dot=NULL)
    rows[FGG_TYPE_Q5_K] = fgg_kernel_row(dequantize=dequant_q5_k, byteswap=swap_block_fields,
                                            quantize=fgg_quantize_q5_k, dot=NULL)
    rows[FGG_TYPE_Q6_K] = fgg_kernel_row(dequantize=dequant_q6_k, byteswap=swap_block_fields,
                                            quantize=fgg_quantize_q6_k, dot=NULL)
    rows[FGG_TYPE_Q8_K] = fgg_kernel_row(dequantize=dequant_q8_k, byteswap=swap_block_fields,
                                            quantize=fgg_quantize_q8_k, dot=NULL)
