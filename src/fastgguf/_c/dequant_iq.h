/* C helpers of the IQ / ternary / FP4 / Q1_0 / Q2_0 kernels (kernels_iq.pxi declares them). */
#ifndef FGG_KERNELS_IQ_H
#define FGG_KERNELS_IQ_H
#include "base.h"

static const float fgg_iq1_deltas[2] = {0.125f, -0.125f};

/* One group of 8 outputs of the grid types, with the same float operations, in the same
   order, as gguf-py: (scale * grid) * sign, and scale * (grid + delta) for IQ1.
   Written with GCC/Clang vector types because the auto-vectorizer leaves these short
   loops scalar when it prefers 512-bit vectors (the AVX-512 build); plain loops elsewhere. */
/* __builtin_shufflevector / __builtin_convertvector: clang, and gcc from 12 on. Define
   FGG_VEC_BUILTINS=0 to build (and test) the paths that do without them. */
#if !defined(FGG_VEC_BUILTINS)
#if defined(__clang__) || (defined(__GNUC__) && __GNUC__ >= 12)
#define FGG_VEC_BUILTINS 1
#else
#define FGG_VEC_BUILTINS 0
#endif
#endif
#if defined(__GNUC__) || defined(__clang__)
typedef float fgg_v8f __attribute__((vector_size(32)));
typedef float fgg_v4f __attribute__((vector_size(16)));
#if FGG_HAVE_AVX
static inline void fgg_grid8(float *dst, float scale, const float *grid, const float *signs) {
    fgg_v8f g, s, v;
    memcpy(&g, grid, sizeof g);
    memcpy(&s, signs, sizeof s);
    v = (scale * g) * s;  /* the scalar is broadcast */
    memcpy(dst, &v, sizeof v);
}
static inline void fgg_iq1_grid8(float *dst, float scale, const float *grid, float delta) {
    fgg_v8f g, v;
    memcpy(&g, grid, sizeof g);
    v = scale * (g + delta);
    memcpy(dst, &v, sizeof v);
}
#else
/* Without AVX, two 128-bit halves: gcc lowers 256-bit vector types through the stack. */
static inline void fgg_grid8(float *dst, float scale, const float *grid, const float *signs) {
    fgg_v4f g0, g1, s0, s1;
    memcpy(&g0, grid, sizeof g0);
    memcpy(&g1, grid + 4, sizeof g1);
    memcpy(&s0, signs, sizeof s0);
    memcpy(&s1, signs + 4, sizeof s1);
    g0 = (scale * g0) * s0;
    g1 = (scale * g1) * s1;
    memcpy(dst, &g0, sizeof g0);
    memcpy(dst + 4, &g1, sizeof g1);
}
static inline void fgg_iq1_grid8(float *dst, float scale, const float *grid, float delta) {
    fgg_v4f g0, g1;
    memcpy(&g0, grid, sizeof g0);
    memcpy(&g1, grid + 4, sizeof g1);
    g0 = scale * (g0 + delta);
    g1 = scale * (g1 + delta);
    memcpy(dst, &g0, sizeof g0);
    memcpy(dst + 4, &g1, sizeof g1);
}
#endif
#if FGG_HAVE_AVX && FGG_VEC_BUILTINS
static inline void fgg_grid4x2(float *dst, float scale, const float *grid_a,
                                    const float *grid_b, const float *signs) {
    fgg_v4f a, b;
    fgg_v8f s, v;
    memcpy(&a, grid_a, sizeof a);
    memcpy(&b, grid_b, sizeof b);
    memcpy(&s, signs, sizeof s);
    v = (scale * __builtin_shufflevector(a, b, 0, 1, 2, 3, 4, 5, 6, 7)) * s;
    memcpy(dst, &v, sizeof v);
}
#else
static inline void fgg_grid4x2(float *dst, float scale, const float *grid_a,
                                    const float *grid_b, const float *signs) {
    fgg_v4f a, b, sa, sb;
    memcpy(&a, grid_a, sizeof a);
    memcpy(&b, grid_b, sizeof b);
    memcpy(&sa, signs, sizeof sa);
    memcpy(&sb, signs + 4, sizeof sb);
    a = (scale * a) * sa;
    b = (scale * b) * sb;
    memcpy(dst, &a, sizeof a);
    memcpy(dst + 4, &b, sizeof b);
}
#endif
#else
static inline void fgg_grid8(float *dst, float scale, const float *grid, const float *signs) {
    float v[8];
    for (int j = 0; j < 8; j++) v[j] = (scale * grid[j]) * signs[j];
    memcpy(dst, v, sizeof v);
}
static inline void fgg_grid4x2(float *dst, float scale, const float *grid_a,
                                    const float *grid_b, const float *signs) {
    float v[8];
    for (int j = 0; j < 4; j++) {
        v[j] = (scale * grid_a[j]) * signs[j];
        v[j + 4] = (scale * grid_b[j]) * signs[j + 4];
    }
    memcpy(dst, v, sizeof v);
}
static inline void fgg_iq1_grid8(float *dst, float scale, const float *grid, float delta) {
    float v[8];
    for (int j = 0; j < 8; j++) v[j] = scale * (grid[j] + delta);
    memcpy(dst, v, sizeof v);
}
#endif

/* Decode 16 bytes of 4-bit codes into 32 floats: dst[j] = scale * lut[low nibble of
   byte j], dst[16 + j] = scale * lut[high nibble of byte j]. With AVX2 the 16-entry
   int8 table sits in a register and one byte shuffle looks up 16 codes at once. */
static inline void fgg_lut4_decode32(float *dst, const uint8_t *codes,
                                          const int8_t *lut, float scale) {
#if FGG_HAVE_AVX2
    const __m128i table = _mm_loadu_si128((const __m128i *) lut);
    const __m128i mask = _mm_set1_epi8(0x0F);
    const __m128i bytes = _mm_loadu_si128((const __m128i *) codes);
    const __m128i lo = _mm_shuffle_epi8(table, _mm_and_si128(bytes, mask));
    const __m128i hi = _mm_shuffle_epi8(table, _mm_and_si128(_mm_srli_epi16(bytes, 4), mask));
    const __m256 vscale = _mm256_set1_ps(scale);
    _mm256_storeu_ps(dst + 0, _mm256_mul_ps(vscale, _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(lo))));
    _mm256_storeu_ps(dst + 8, _mm256_mul_ps(vscale, _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(_mm_srli_si128(lo, 8)))));
    _mm256_storeu_ps(dst + 16, _mm256_mul_ps(vscale, _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(hi))));
    _mm256_storeu_ps(dst + 24, _mm256_mul_ps(vscale, _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(_mm_srli_si128(hi, 8)))));
#else
    for (int j = 0; j < 16; j++) {
        dst[j] = scale * (float) lut[codes[j] & 0x0F];
        dst[j + 16] = scale * (float) lut[codes[j] >> 4];
    }
#endif
}

/* The same for 8 bytes -> 16 floats (NVFP4's 16-element sub-blocks). */
static inline void fgg_lut4_decode16(float *dst, const uint8_t *codes,
                                          const int8_t *lut, float scale) {
#if FGG_HAVE_AVX2
    const __m128i table = _mm_loadu_si128((const __m128i *) lut);
    const __m128i mask = _mm_set1_epi8(0x0F);
    const __m128i bytes = _mm_loadl_epi64((const __m128i *) codes);
    const __m128i lo = _mm_shuffle_epi8(table, _mm_and_si128(bytes, mask));
    const __m128i hi = _mm_shuffle_epi8(table, _mm_and_si128(_mm_srli_epi16(bytes, 4), mask));
    const __m256 vscale = _mm256_set1_ps(scale);
    _mm256_storeu_ps(dst + 0, _mm256_mul_ps(vscale, _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(lo))));
    _mm256_storeu_ps(dst + 8, _mm256_mul_ps(vscale, _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(hi))));
#else
    for (int j = 0; j < 8; j++) {
        dst[j] = scale * (float) lut[codes[j] & 0x0F];
        dst[j + 8] = scale * (float) lut[codes[j] >> 4];
    }
#endif
}

/* Digit k of 16 TQ1_0 codes, as (digit - 1) * d, to dst[k * stride + j], k < n_digits.
   A code holds base-3 digits as the fixed-point fraction round_up(256 * value / 3**n): its
   top digit is (code * 3) >> 8, i.e. (code >= 86) + (code >= 171), and multiplying the code
   by 3 (mod 256) brings up the next one. Written with vector types: the auto-vectorizer
   keeps these bytes in general registers in some builds. */
#if (defined(__GNUC__) || defined(__clang__)) && (FGG_HAVE_AVX2 || FGG_VEC_BUILTINS)
typedef uint8_t fgg_v16u8 __attribute__((vector_size(16)));
typedef int8_t fgg_v16i8 __attribute__((vector_size(16)));
typedef int8_t fgg_v8i8 __attribute__((vector_size(8)));
typedef int32_t fgg_v8i32 __attribute__((vector_size(32)));
static inline void fgg_tq1_digits16(float *dst, const uint8_t *src, Py_ssize_t stride,
                                         int n_digits, float d) {
    fgg_v16u8 q;
#if !FGG_HAVE_AVX2
    const fgg_v8f vd = {d, d, d, d, d, d, d, d};
#endif
    memcpy(&q, src, sizeof q);
    for (int k = 0; k < n_digits; k++) {
        /* A true comparison is -1 in its lane: the sum is -digit, so digit - 1 = -sum - 1. */
        fgg_v16i8 value = -((fgg_v16i8) (q >= 86) + (fgg_v16i8) (q >= 171)) - 1;
#if FGG_HAVE_AVX2
        /* gcc 12 widens the upper 8 int8 lanes one by one unless told how. */
        const __m128i lanes = (__m128i) value;
        const __m256 vscale = _mm256_set1_ps(d);
        _mm256_storeu_ps(dst + k * stride,
                         _mm256_mul_ps(vscale, _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(lanes))));
        _mm256_storeu_ps(dst + k * stride + 8,
                         _mm256_mul_ps(vscale, _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(_mm_srli_si128(lanes, 8)))));
#else
        fgg_v8i8 lo = __builtin_shufflevector(value, value, 0, 1, 2, 3, 4, 5, 6, 7);
        fgg_v8i8 hi = __builtin_shufflevector(value, value, 8, 9, 10, 11, 12, 13, 14, 15);
        /* int8 -> int32 -> float: gcc 12 converts int8 lanes to float one at a time. */
        fgg_v8f out_lo = vd * __builtin_convertvector(__builtin_convertvector(lo, fgg_v8i32), fgg_v8f);
        fgg_v8f out_hi = vd * __builtin_convertvector(__builtin_convertvector(hi, fgg_v8i32), fgg_v8f);
        memcpy(dst + k * stride, &out_lo, sizeof out_lo);
        memcpy(dst + k * stride + 8, &out_hi, sizeof out_hi);
#endif
        q = q + q + q;
    }
}
#else
static inline void fgg_tq1_digits16(float *dst, const uint8_t *src, Py_ssize_t stride,
                                         int n_digits, float d) {
    uint8_t q[16];
    memcpy(q, src, sizeof q);
    for (int k = 0; k < n_digits; k++) {
        for (int j = 0; j < 16; j++) {
            dst[k * stride + j] = d * (float) ((q[j] >= 86) + (q[j] >= 171) - 1);
            q[j] = (uint8_t) (q[j] * 3);
        }
    }
}
#endif

/* Q1_0: the 8 outputs of one byte of sign bits, low bit first: +d where the bit is set, -d
   (d with its sign bit flipped, as ggml's -d) where it is clear.
   Q2_0: the 8 outputs of two bytes of 2-bit codes q, low bits first: (q - 1) * d. */
#if FGG_HAVE_AVX && (defined(__GNUC__) || defined(__clang__)) && FGG_VEC_BUILTINS
typedef uint32_t fgg_v8u32 __attribute__((vector_size(32)));
static inline void fgg_q1_byte(float *dst, uint32_t byte, uint32_t d_bits) {
    const fgg_v8u32 shifts = {0, 1, 2, 3, 4, 5, 6, 7};
    fgg_v8u32 v = (byte >> shifts) & 1;          /* the scalar is broadcast */
    v = d_bits ^ ((v ^ 1) << 31);
    memcpy(dst, &v, sizeof v);
}
static inline void fgg_q2_pair(float *dst, uint32_t pair, float d) {
    const fgg_v8u32 shifts = {0, 2, 4, 6, 8, 10, 12, 14};
    fgg_v8i32 q = (fgg_v8i32) ((pair >> shifts) & 3) - 1;
    fgg_v8f v = __builtin_convertvector(q, fgg_v8f) * d;
    memcpy(dst, &v, sizeof v);
}
#else
/* Whole-block loops over a local copy of the codes: the compiler vectorizes these well
   with SSE2, better than one 8-output group at a time. */
#define FASTGGUF_Q12_BLOCKWISE 1
static inline void fgg_q1_block(float *dst, const uint8_t *src, uint32_t d_bits) {
    uint8_t bits[16];
    uint32_t *out = (uint32_t *) dst;  /* the build has -fno-strict-aliasing */
    memcpy(bits, src, sizeof bits);
    for (int k = 0; k < 16; k++)
        for (int j = 0; j < 8; j++)
            out[8 * k + j] = d_bits ^ ((((uint32_t) bits[k] >> j & 1) ^ 1) << 31);
}
static inline void fgg_q2_block(float *dst, const uint8_t *src, float d) {
    uint8_t codes[16];
    memcpy(codes, src, sizeof codes);
    for (int k = 0; k < 16; k++)
        for (int j = 0; j < 4; j++)
            dst[4 * k + j] = (float) ((int) ((codes[k] >> (2 * j)) & 3) - 1) * d;
}
#endif
#if !defined(FASTGGUF_Q12_BLOCKWISE)
#define FASTGGUF_Q12_BLOCKWISE 0
static inline void fgg_q1_block(float *dst, const uint8_t *src, uint32_t d_bits) {
    for (int k = 0; k < 16; k++) fgg_q1_byte(dst + 8 * k, src[k], d_bits);
}
static inline void fgg_q2_block(float *dst, const uint8_t *src, float d) {
    for (int k = 0; k < 8; k++)
        fgg_q2_pair(dst + 8 * k, (uint32_t) src[2 * k] | (uint32_t) src[2 * k + 1] << 8, d);
}
#endif

#endif
