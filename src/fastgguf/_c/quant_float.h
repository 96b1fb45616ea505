/* The "quantize" column of the plain float types: float32 -> F32 / F16 / BF16 rows.
 *
 * Same signature as every fgg_quantize_<type> (see kernels.pxi): n_rows rows of n_per_row floats
 * at src to n_rows rows of the type at dst, little-endian; imatrix is ignored (a conversion has
 * nothing to weigh). Results are ggml's bits:
 *   F16:  IEEE round to nearest, ties to even; overflow to +-inf; every NaN becomes the quiet NaN
 *         0x7E00 with the input's sign (ggml's portable conversion, not F16C's, which keeps payloads).
 *   BF16: round to nearest even on the top 16 bits (subnormals kept, no flush); a NaN keeps its top
 *         16 bits with the quiet bit (0x0040) set.
 * Integer arithmetic only, so no floating-point mode (FTZ/DAZ, rounding) can change a result. */
#ifndef FGG_QUANT_FLOAT_H
#define FGG_QUANT_FLOAT_H
#include <stdint.h>
#include <string.h>
#if !defined(FGG_NO_SIMD) && defined(__AVX2__) && defined(__F16C__)
#include <immintrin.h>
#define FGG_QF_F16C 1
#else
#define FGG_QF_F16C 0
#endif

static inline uint32_t fgg__f32_bits(float f) { uint32_t u; memcpy(&u, &f, 4); return u; }

static inline uint16_t fgg_float_to_half(float f) {
    const uint32_t w = fgg__f32_bits(f);
    const uint16_t sign = (uint16_t)((w >> 16) & 0x8000u);
    const uint32_t a = w & 0x7FFFFFFFu;
    uint32_t q, rest, half, shift, mantissa;
    if (a > 0x7F800000u) return sign | 0x7E00u;        /* NaN */
    if (a >= 0x477FF000u) return sign | 0x7C00u;       /* >= 65520 (half-way past the largest half): inf */
    if (a >= 0x38800000u) {                             /* >= 2^-14: a normal half */
        q = (a - 0x38000000u) >> 13;                    /* exponent re-biased 127 -> 15, mantissa cut */
        rest = a & 0x1FFFu;
        q += (rest > 0x1000u) | ((rest == 0x1000u) & q); /* ties to even; a carry bumps the exponent */
        return sign | (uint16_t)q;
    }
    if (a < 0x33000000u) return sign;                   /* below 2^-25: rounds to zero */
    /* A subnormal half: units of 2^-24. The float's value is mantissa * 2^(exponent - 150). */
    mantissa = (a & 0x007FFFFFu) | 0x00800000u;
    shift = 126u - (a >> 23);                           /* 14 .. 24 */
    q = mantissa >> shift;
    rest = mantissa & ((1u << shift) - 1u);
    half = 1u << (shift - 1u);
    q += (rest > half) | ((rest == half) & q);
    return sign | (uint16_t)q;
}

static inline uint16_t fgg_float_to_bf16(float f) {
    const uint32_t w = fgg__f32_bits(f);
    if ((w & 0x7FFFFFFFu) > 0x7F800000u) return (uint16_t)((w >> 16) | 0x0040u);   /* NaN: quiet */
    return (uint16_t)((w + 0x7FFFu + ((w >> 16) & 1u)) >> 16);
}

#if FGG_QF_F16C /* (AVX2 and F16C) */
/* 8 halves of x[0..8) as ggml's conversion: F16C's rounding is the same for every float but NaN
 * (checked over all 2^32), where F16C keeps the payload and ggml writes 0x7E00 with the sign */
static inline __m128i fgg__f16x8(const float *x) {
    const __m256 v = _mm256_loadu_ps(x);
    const __m128i h = _mm256_cvtps_ph(v, _MM_FROUND_TO_NEAREST_INT);
    const __m256 nan = _mm256_cmp_ps(v, v, _CMP_UNORD_Q);
    const __m128i nan16 = _mm_packs_epi32(_mm256_castsi256_si128(_mm256_castps_si256(nan)),
                                          _mm256_extracti128_si256(_mm256_castps_si256(nan), 1));
    const __m128i quiet = _mm_or_si128(_mm_and_si128(h, _mm_set1_epi16((short)0x8000)), _mm_set1_epi16(0x7E00));
    return _mm_blendv_epi8(h, quiet, nan16);
}

/* 16 bfloat16 of x[0..16) as fgg_float_to_bf16 */
static inline __m256i fgg__bf16x16(const float *x) {
    __m256i r[2];
    for (int k = 0; k < 2; ++k) {
        const __m256 v = _mm256_loadu_ps(x + 8 * k);
        const __m256i w = _mm256_castps_si256(v);
        const __m256i odd = _mm256_and_si256(_mm256_srli_epi32(w, 16), _mm256_set1_epi32(1));
        const __m256i rounded = _mm256_srli_epi32(_mm256_add_epi32(_mm256_add_epi32(w, _mm256_set1_epi32(0x7FFF)), odd), 16);
        const __m256i quiet = _mm256_or_si256(_mm256_srli_epi32(w, 16), _mm256_set1_epi32(0x0040));
        r[k] = _mm256_blendv_epi8(rounded, quiet, _mm256_castps_si256(_mm256_cmp_ps(v, v, _CMP_UNORD_Q)));
    }
    return _mm256_permute4x64_epi64(_mm256_packus_epi32(r[0], r[1]), _MM_SHUFFLE(3, 1, 2, 0)); /* all <= 0xFFFF */
}
#endif

static void fgg_quantize_f32(const float *src, uint8_t *dst, int64_t n_rows, int64_t n_per_row,
                             const float *imatrix) {
    int64_t i, n = n_rows * n_per_row;
    (void)imatrix;
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
    memcpy(dst, src, (size_t)n * 4); /* the bytes are already little-endian */
    return;
#endif
    for (i = 0; i < n; i++) {
        const uint32_t u = fgg__f32_bits(src[i]);
        dst[4 * i] = (uint8_t)u;
        dst[4 * i + 1] = (uint8_t)(u >> 8);
        dst[4 * i + 2] = (uint8_t)(u >> 16);
        dst[4 * i + 3] = (uint8_t)(u >> 24);
    }
}

static void fgg_quantize_f16(const float *src, uint8_t *dst, int64_t n_rows, int64_t n_per_row,
                             const float *imatrix) {
    int64_t i = 0, n = n_rows * n_per_row;
    (void)imatrix;
#if FGG_QF_F16C
    for (; i + 8 <= n; i += 8) _mm_storeu_si128((__m128i *)(dst + 2 * i), fgg__f16x8(src + i));
#endif
    for (; i < n; i++) {
        const uint16_t h = fgg_float_to_half(src[i]);
        dst[2 * i] = (uint8_t)h;
        dst[2 * i + 1] = (uint8_t)(h >> 8);
    }
}

static void fgg_quantize_bf16(const float *src, uint8_t *dst, int64_t n_rows, int64_t n_per_row,
                              const float *imatrix) {
    int64_t i = 0, n = n_rows * n_per_row;
    (void)imatrix;
#if FGG_QF_F16C
    for (; i + 16 <= n; i += 16) _mm256_storeu_si256((__m256i *)(dst + 2 * i), fgg__bf16x16(src + i));
#endif
    for (; i < n; i++) {
        const uint16_t h = fgg_float_to_bf16(src[i]);
        dst[2 * i] = (uint8_t)h;
        dst[2 * i + 1] = (uint8_t)(h >> 8);
    }
}

#endif
