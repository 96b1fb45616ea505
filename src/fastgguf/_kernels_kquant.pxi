# K-quants (256-element super-blocks) -> float32: Q2_K, Q3_K, Q4_K, Q5_K, Q6_K, Q8_K.
# Included from _kernels.pxi (which provides dequant_fn and the _kernel_helpers).
#
# Each kernel unpacks the quants eight at a time into uint64 words of byte lanes (plain integer
# code, fast in every build), then converts them 16 at a time with the SIMD steps
# of _kernel_helpers.pxd, using gguf-py's float32 order: sub-scale = d * float(scale),
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


cdef void dequant_q2_k(const uint8_t *src, float *dst, Py_ssize_t n_blocks) noexcept nogil:
    cdef Py_ssize_t b
    cdef int h, k, s, sub
    cdef uint64_t w[4]
    cdef float d, dmin
    for b in range(n_blocks):
        d = fgg_half_to_float_scale(fgg_load_u16le(src + 80))
        dmin = fgg_half_to_float_scale(fgg_load_u16le(src + 82))
        for h in range(2):
            for k in range(4):
                w[k] = fgg_load_u64le(src + 16 + 32 * h + 8 * k)
            for s in range(4):
                sub = 8 * h + 2 * s
                fgg_u8x16_mul_sub_w(dst + 16 * sub, (w[0] >> (2 * s)) & LANES_03, (w[1] >> (2 * s)) & LANES_03,
                                    d * <float>(src[sub] & 0x0F), dmin * <float>(src[sub] >> 4))
                fgg_u8x16_mul_sub_w(dst + 16 * sub + 16, (w[2] >> (2 * s)) & LANES_03, (w[3] >> (2 * s)) & LANES_03,
                                    d * <float>(src[sub + 1] & 0x0F), dmin * <float>(src[sub + 1] >> 4))
        src += 84
        dst += 256


cdef inline float _q3_k_scale(const uint8_t *packed, int sub, float d) noexcept nogil:
    # 6-bit scale: low 4 bits are nibble (sub // 8) of byte sub % 8, high 2 bits are pair
    # (sub // 4) of byte 8 + sub % 4; stored with a +32 bias.
    return d * <float>(<int>(((packed[sub & 7] >> (4 * (sub >> 3))) & 0x0F)
                             | (((packed[8 + (sub & 3)] >> (2 * (sub >> 2))) & 3) << 4)) - 32)


cdef inline uint64_t _q3_k_word(uint64_t low_bits, uint64_t clear_bits, int s) noexcept nogil:
    # 2 low bits at shift 2s, minus 4 where the hmask bit s is clear.
    return fgg_lanes_minus((low_bits >> (2 * s)) & LANES_03, ((clear_bits >> s) & LANES_01) << 2)


cdef void dequant_q3_k(const uint8_t *src, float *dst, Py_ssize_t n_blocks) noexcept nogil:
    cdef Py_ssize_t b
    cdef int h, k, s, sub
    cdef uint64_t w[4]
    cdef uint64_t clear[4]
    cdef float d
    cdef const uint8_t *packed
    for b in range(n_blocks):
        packed = src + 96
        d = fgg_half_to_float_scale(fgg_load_u16le(src + 108))
        for h in range(2):
            for k in range(4):
                w[k] = fgg_load_u64le(src + 32 + 32 * h + 8 * k)
                clear[k] = ~fgg_load_u64le(src + 8 * k) >> (4 * h)
            for s in range(4):
                sub = 8 * h + 2 * s
                fgg_i8x16_mul_w(dst + 16 * sub, _q3_k_word(w[0], clear[0], s), _q3_k_word(w[1], clear[1], s),
                                _q3_k_scale(packed, sub, d))
                fgg_i8x16_mul_w(dst + 16 * sub + 16, _q3_k_word(w[2], clear[2], s), _q3_k_word(w[3], clear[3], s),
                                _q3_k_scale(packed, sub + 1, d))
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
    cdef int g, k
    cdef uint64_t w[4]
    cdef float d, dmin
    cdef float scales[8]
    cdef float mins[8]
    cdef float *y
    for b in range(n_blocks):
        d = fgg_half_to_float_scale(fgg_load_u16le(src))
        dmin = fgg_half_to_float_scale(fgg_load_u16le(src + 2))
        _unpack_scales_mins_k4(src + 4, d, dmin, scales, mins)
        for g in range(4):
            for k in range(4):
                w[k] = fgg_load_u64le(src + 16 + 32 * g + 8 * k)
            y = dst + 64 * g
            fgg_u8x16_mul_sub_w(y, w[0] & LANES_0F, w[1] & LANES_0F, scales[2 * g], mins[2 * g])
            fgg_u8x16_mul_sub_w(y + 16, w[2] & LANES_0F, w[3] & LANES_0F, scales[2 * g], mins[2 * g])
            fgg_u8x16_mul_sub_w(y + 32, (w[0] >> 4) & LANES_0F, (w[1] >> 4) & LANES_0F, scales[2 * g + 1], mins[2 * g + 1])
            fgg_u8x16_mul_sub_w(y + 48, (w[2] >> 4) & LANES_0F, (w[3] >> 4) & LANES_0F, scales[2 * g + 1], mins[2 * g + 1])
        src += 144
        dst += 256


cdef void dequant_q5_k(const uint8_t *src, float *dst, Py_ssize_t n_blocks) noexcept nogil:
    cdef Py_ssize_t b
    cdef int g, k
    cdef uint64_t w[4]
    cdef uint64_t lo[4]
    cdef uint64_t hi[4]
    cdef uint64_t high_bits
    cdef float d, dmin
    cdef float scales[8]
    cdef float mins[8]
    cdef float *y
    for b in range(n_blocks):
        d = fgg_half_to_float_scale(fgg_load_u16le(src))
        dmin = fgg_half_to_float_scale(fgg_load_u16le(src + 2))
        _unpack_scales_mins_k4(src + 4, d, dmin, scales, mins)
        for g in range(4):
            for k in range(4):
                w[k] = fgg_load_u64le(src + 48 + 32 * g + 8 * k)
                high_bits = fgg_load_u64le(src + 16 + 8 * k) >> (2 * g)  # bits 2g, 2g+1: sub-blocks 2g, 2g+1
                lo[k] = (w[k] & LANES_0F) | ((high_bits & LANES_01) << 4)
                hi[k] = ((w[k] >> 4) & LANES_0F) | (((high_bits >> 1) & LANES_01) << 4)
            y = dst + 64 * g
            fgg_u8x16_mul_sub_w(y, lo[0], lo[1], scales[2 * g], mins[2 * g])
            fgg_u8x16_mul_sub_w(y + 16, lo[2], lo[3], scales[2 * g], mins[2 * g])
            fgg_u8x16_mul_sub_w(y + 32, hi[0], hi[1], scales[2 * g + 1], mins[2 * g + 1])
            fgg_u8x16_mul_sub_w(y + 48, hi[2], hi[3], scales[2 * g + 1], mins[2 * g + 1])
        src += 176
        dst += 256


cdef inline uint64_t _q6_k_word(uint64_t low, int low_shift, uint64_t high, int high_shift) noexcept nogil:
    # 4 low bits from ``low`` at low_shift, 2 high bits from ``high`` at high_shift, minus 32.
    return fgg_lanes_minus(((low >> low_shift) & LANES_0F) | (((high >> high_shift) & LANES_03) << 4),
                           32 * LANES_01)


cdef void dequant_q6_k(const uint8_t *src, float *dst, Py_ssize_t n_blocks) noexcept nogil:
    cdef Py_ssize_t b
    cdef int a, k, r, sub
    cdef uint64_t lo[8]
    cdef uint64_t hi[4]
    cdef float d
    cdef const int8_t *scales
    for b in range(n_blocks):
        scales = <const int8_t *>(src + 192)
        d = fgg_half_to_float_scale(fgg_load_u16le(src + 208))
        for a in range(2):
            for k in range(4):
                lo[k] = fgg_load_u64le(src + 64 * a + 8 * k)
                lo[k + 4] = fgg_load_u64le(src + 64 * a + 32 + 8 * k)
                hi[k] = fgg_load_u64le(src + 128 + 32 * a + 8 * k)
            # run r (elements 128a + 32r ...): low nibbles of ql half (r & 1), shifted 4 if r >= 2;
            # high pair r of qh
            for r in range(4):
                sub = 8 * a + 2 * r
                fgg_i8x16_mul_w(dst + 16 * sub,
                                _q6_k_word(lo[4 * (r & 1)], 4 * (r >> 1), hi[0], 2 * r),
                                _q6_k_word(lo[4 * (r & 1) + 1], 4 * (r >> 1), hi[1], 2 * r),
                                d * <float>scales[sub])
                fgg_i8x16_mul_w(dst + 16 * sub + 16,
                                _q6_k_word(lo[4 * (r & 1) + 2], 4 * (r >> 1), hi[2], 2 * r),
                                _q6_k_word(lo[4 * (r & 1) + 3], 4 * (r >> 1), hi[3], 2 * r),
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


cdef dequant_fn kquant_kernel(int type_id) noexcept nogil:
    if type_id == TYPE_Q2_K:
        return dequant_q2_k
    if type_id == TYPE_Q3_K:
        return dequant_q3_k
    if type_id == TYPE_Q4_K:
        return dequant_q4_k
    if type_id == TYPE_Q5_K:
        return dequant_q5_k
    if type_id == TYPE_Q6_K:
        return dequant_q6_k
    if type_id == TYPE_Q8_K:
        return dequant_q8_k
    return NULL


cdef swap_fn kquant_swap(int type_id) noexcept nogil:
    # Big-endian K-quant blocks (fp16/f32 scales, Q8_K's int16 sums swapped) are not handled yet.
    return NULL
