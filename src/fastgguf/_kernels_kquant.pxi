# K-quants (256-element super-blocks) -> float32: Q2_K, Q3_K, Q4_K, Q5_K, Q6_K, Q8_K.
# Included from _kernels.pxi (which provides dequant_fn and the _kernel_helpers).
#
# Each kernel first decodes the super-block's packed sub-block scales into small float arrays
# (in gguf-py's order: sub-scale = d * float(scale), sub-min = dmin * float(min), both float32),
# copies the packed quants into local arrays (no aliasing with dst), and then runs fixed
# 16- or 32-wide loops with a constant scale, which the compiler vectorizes.
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
from libc.stdint cimport int8_t


cdef void dequant_q2_k(const uint8_t *src, float *dst, Py_ssize_t n_blocks) noexcept nogil:
    cdef Py_ssize_t b
    cdef int h, s, part, l, sub
    cdef float d, dmin, scale, minimum
    cdef uint8_t qs[64]
    cdef const uint8_t *scales
    cdef const uint8_t *q
    cdef float *y
    for b in range(n_blocks):
        scales = src
        memcpy(qs, src + 16, 64)
        d = fgg_half_to_float(fgg_load_u16le(src + 80))
        dmin = fgg_half_to_float(fgg_load_u16le(src + 82))
        for h in range(2):
            for s in range(4):
                for part in range(2):
                    sub = 8 * h + 2 * s + part
                    scale = d * <float>(scales[sub] & 0x0F)
                    minimum = dmin * <float>(scales[sub] >> 4)
                    q = qs + 32 * h + 16 * part
                    y = dst + 16 * sub
                    for l in range(16):
                        y[l] = scale * <float>((q[l] >> (2 * s)) & 3) - minimum
        src += 84
        dst += 256


cdef void dequant_q3_k(const uint8_t *src, float *dst, Py_ssize_t n_blocks) noexcept nogil:
    cdef Py_ssize_t b
    cdef int h, s, part, l, sub, i
    cdef float d, scale
    cdef uint8_t hmask[32]
    cdef uint8_t qs[64]
    cdef const uint8_t *packed
    cdef const uint8_t *q
    cdef const uint8_t *hm
    cdef float *y
    cdef float sub_scale[16]
    for b in range(n_blocks):
        memcpy(hmask, src, 32)
        memcpy(qs, src + 32, 64)
        packed = src + 96
        d = fgg_half_to_float(fgg_load_u16le(src + 108))
        for i in range(16):
            # low 4 bits: nibble (i // 8) of byte i % 8; high 2 bits: pair (i // 4) of byte 8 + i % 4
            sub_scale[i] = d * <float>(
                <int>(((packed[i & 7] >> (4 * (i >> 3))) & 0x0F)
                      | (((packed[8 + (i & 3)] >> (2 * (i >> 2))) & 3) << 4)) - 32)
        for h in range(2):
            for s in range(4):
                for part in range(2):
                    sub = 8 * h + 2 * s + part
                    scale = sub_scale[sub]
                    q = qs + 32 * h + 16 * part
                    hm = hmask + 16 * part
                    y = dst + 16 * sub
                    for l in range(16):
                        y[l] = scale * <float>(
                            <int>((q[l] >> (2 * s)) & 3)
                            - (<int>(((hm[l] >> (4 * h + s)) & 1) ^ 1) << 2))
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
    cdef int g, l
    cdef float d, dmin, scale_lo, min_lo, scale_hi, min_hi
    cdef float scales[8]
    cdef float mins[8]
    cdef uint8_t qs[128]
    cdef const uint8_t *q
    cdef float *y
    for b in range(n_blocks):
        d = fgg_half_to_float(fgg_load_u16le(src))
        dmin = fgg_half_to_float(fgg_load_u16le(src + 2))
        _unpack_scales_mins_k4(src + 4, d, dmin, scales, mins)
        memcpy(qs, src + 16, 128)
        for g in range(4):
            scale_lo = scales[2 * g]
            min_lo = mins[2 * g]
            scale_hi = scales[2 * g + 1]
            min_hi = mins[2 * g + 1]
            q = qs + 32 * g
            y = dst + 64 * g
            for l in range(32):
                y[l] = scale_lo * <float>(q[l] & 0x0F) - min_lo
                y[l + 32] = scale_hi * <float>(q[l] >> 4) - min_hi
        src += 144
        dst += 256


cdef void dequant_q5_k(const uint8_t *src, float *dst, Py_ssize_t n_blocks) noexcept nogil:
    cdef Py_ssize_t b
    cdef int g, l
    cdef float d, dmin, scale_lo, min_lo, scale_hi, min_hi
    cdef float scales[8]
    cdef float mins[8]
    cdef uint8_t qh[32]
    cdef uint8_t qs[128]
    cdef const uint8_t *q
    cdef float *y
    for b in range(n_blocks):
        d = fgg_half_to_float(fgg_load_u16le(src))
        dmin = fgg_half_to_float(fgg_load_u16le(src + 2))
        _unpack_scales_mins_k4(src + 4, d, dmin, scales, mins)
        memcpy(qh, src + 16, 32)
        memcpy(qs, src + 48, 128)
        for g in range(4):
            scale_lo = scales[2 * g]
            min_lo = mins[2 * g]
            scale_hi = scales[2 * g + 1]
            min_hi = mins[2 * g + 1]
            q = qs + 32 * g
            y = dst + 64 * g
            for l in range(32):
                y[l] = scale_lo * <float>((q[l] & 0x0F) | (((qh[l] >> (2 * g)) & 1) << 4)) - min_lo
                y[l + 32] = scale_hi * <float>((q[l] >> 4) | (((qh[l] >> (2 * g + 1)) & 1) << 4)) - min_hi
        src += 176
        dst += 256


cdef void dequant_q6_k(const uint8_t *src, float *dst, Py_ssize_t n_blocks) noexcept nogil:
    cdef Py_ssize_t b
    cdef int a, part, l
    cdef float d
    cdef float s0, s1, s2, s3
    cdef uint8_t ql[128]
    cdef uint8_t qh[64]
    cdef float sub_scale[16]
    cdef const uint8_t *lo
    cdef const uint8_t *hi
    cdef float *y
    for b in range(n_blocks):
        memcpy(ql, src, 128)
        memcpy(qh, src + 128, 64)
        d = fgg_half_to_float(fgg_load_u16le(src + 208))
        for l in range(16):
            sub_scale[l] = d * <float>(<int8_t>src[192 + l])
        for a in range(2):
            for part in range(2):
                # the four 16-runs at 32*k + 16*part (k = 0..3) share these bytes
                lo = ql + 64 * a + 16 * part
                hi = qh + 32 * a + 16 * part
                y = dst + 128 * a + 16 * part
                s0 = sub_scale[8 * a + part]
                s1 = sub_scale[8 * a + 2 + part]
                s2 = sub_scale[8 * a + 4 + part]
                s3 = sub_scale[8 * a + 6 + part]
                for l in range(16):
                    y[l] = s0 * <float>(<int>((lo[l] & 0x0F) | ((hi[l] & 3) << 4)) - 32)
                    y[l + 32] = s1 * <float>(<int>((lo[l + 32] & 0x0F) | (((hi[l] >> 2) & 3) << 4)) - 32)
                    y[l + 64] = s2 * <float>(<int>((lo[l] >> 4) | (((hi[l] >> 4) & 3) << 4)) - 32)
                    y[l + 96] = s3 * <float>(<int>((lo[l + 32] >> 4) | ((hi[l] >> 6) << 4)) - 32)
        src += 210
        dst += 256


cdef void dequant_q8_k(const uint8_t *src, float *dst, Py_ssize_t n_blocks) noexcept nogil:
    cdef Py_ssize_t b
    cdef int l
    cdef float d
    cdef int8_t qs[256]
    for b in range(n_blocks):
        d = fgg_load_f32le(src)
        memcpy(qs, src + 4, 256)
        for l in range(256):
            dst[l] = d * <float>qs[l]
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
