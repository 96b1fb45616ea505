# Shared inline helpers for every kernel family (floats, legacy, K-quants, IQ/TQ/...): the C is in
# dequant_common.h, next to this file; this declares what the kernels use.
#
# Use them with ``from fastgguf._c.dequant_common cimport *`` (``kernels.pxi`` already does this, so a
# family file included from it can call them directly). Everything here is a static inline C
# function: cimporting this file adds no run-time import.
#
#   fgg_load_u16le / u32le / u64le / f32le (p)  unaligned little-endian loads from a byte pointer
#   fgg_bswap32 / 64 (x)                         byte reversal
#   fgg_half_to_float (h)                        IEEE fp16 bits -> float32, bit-identical to numpy's
#                                                ``astype(float32)``: subnormals exact, inf kept, NaN
#                                                payload kept (not quieted, unlike F16C's vcvtph2ps)
#   fgg_bf16_to_float (h)                        bfloat16 bits -> float32 (exact: a 16-bit shift)
#   fgg_halves_to_floats (src, dst, n)           n fp16 -> float32 as fgg_half_to_float, SIMD
#   fgg_halves_to_floats_nt / fgg_bf16_to_floats_nt (src, dst, n)
#                                                the same (and bf16) with non-temporal stores
#   fgg_float_to_bits (f)                        reinterpret 32 bits
#   fgg_all_finite (x, n)                        no NaN or infinity among n floats (quantize's input check)
#   fgg_half_to_float_scale (h)                  fp16 -> float32 for a value that only feeds
#                                                arithmetic (block scales): F16C where built with it
#                                                (a signalling NaN comes out quiet, as any
#                                                arithmetic on it would make it anyway)
#
# 16-wide SIMD steps (AVX-512 / AVX2 / SSE2 intrinsics by build, plain C elsewhere; all exact,
# no FMA: one float multiply then one add/subtract, the order gguf-py uses):
#   fgg_i8x16_mul (dst, q, s)            dst[j] = s * (float)q[j]        q: 16 x int8 in memory
#   fgg_i8x16_mul_v (dst, v, s)          the same with the 16 quants in an fgg_v16
#   fgg_u8x16_mul_add_v (dst, v, s, m)   dst[j] = s * (float)v[j] + m    v: 16 x uint8
#   fgg_u8x16_mul_sub_v (dst, v, s, m)   dst[j] = s * (float)v[j] - m    v: 16 x uint8
#   fgg_v16 and fgg_v16_load / splat / and / or / not / shr / shl / sub / bits
#                                        16 byte lanes (SSE2 register on x86): unpack 16 quants
#                                        per operation; shifts act on 64-bit lanes (mask after)
#   fgg_stream_copy (dst, src, n)        copy n floats with non-temporal stores (bypassing the
#                                        cache); fgg_stream_fence () after the last one

from libc.stdint cimport int8_t, int64_t, uint8_t, uint16_t, uint32_t, uint64_t

cdef extern from "dequant_common.h":
    uint32_t fgg_bswap32(uint32_t x) noexcept nogil
    uint64_t fgg_bswap64(uint64_t x) noexcept nogil
    uint16_t fgg_load_u16le(const uint8_t *p) noexcept nogil
    uint32_t fgg_load_u32le(const uint8_t *p) noexcept nogil
    uint64_t fgg_load_u64le(const uint8_t *p) noexcept nogil
    uint32_t fgg_float_to_bits(float f) noexcept nogil
    float fgg_load_f32le(const uint8_t *p) noexcept nogil
    bint fgg_all_finite(const float *x, int64_t n) noexcept nogil
    float fgg_half_to_float(uint16_t h) noexcept nogil
    float fgg_bf16_to_float(uint16_t h) noexcept nogil
    float fgg_half_to_float_scale(uint16_t h) noexcept nogil
    void fgg_i8x16_mul(float *dst, const int8_t *q, float s) noexcept nogil
    ctypedef struct fgg_v16:
        pass
    fgg_v16 fgg_v16_load(const uint8_t *p) noexcept nogil
    fgg_v16 fgg_v16_splat(uint8_t x) noexcept nogil
    fgg_v16 fgg_v16_and(fgg_v16 a, fgg_v16 b) noexcept nogil
    fgg_v16 fgg_v16_or(fgg_v16 a, fgg_v16 b) noexcept nogil
    fgg_v16 fgg_v16_not(fgg_v16 a) noexcept nogil
    fgg_v16 fgg_v16_shr(fgg_v16 a, int bits) noexcept nogil
    fgg_v16 fgg_v16_shl(fgg_v16 a, int bits) noexcept nogil
    fgg_v16 fgg_v16_sub(fgg_v16 a, fgg_v16 b) noexcept nogil
    fgg_v16 fgg_v16_bits(const uint8_t *p, uint8_t value) noexcept nogil
    void fgg_i8x16_mul_v(float *dst, fgg_v16 q, float s) noexcept nogil
    void fgg_u8x16_mul_add_v(float *dst, fgg_v16 q, float s, float m) noexcept nogil
    void fgg_u8x16_mul_sub_v(float *dst, fgg_v16 q, float s, float m) noexcept nogil
    void fgg_halves_to_floats(const uint8_t *src, float *dst, Py_ssize_t n) noexcept nogil
    void fgg_halves_to_floats_nt(const uint8_t *src, float *dst, Py_ssize_t n) noexcept nogil
    void fgg_bf16_to_floats_nt(const uint8_t *src, float *dst, Py_ssize_t n) noexcept nogil
    void fgg_stream_copy(float *dst, const float *src, Py_ssize_t n) noexcept nogil
    void fgg_stream_fence() noexcept nogil
    bint FGG_HOST_BIG_ENDIAN
