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
#include "base.h"

#if FGG_HAVE_AVX2 /* (and F16C) */
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
#if !FGG_HOST_BIG_ENDIAN
    memcpy(dst, src, (size_t)n * 4); /* the bytes are already little-endian */
    return;
#endif
    for (i = 0; i < n; i++) {
        fgg_store_u32le(dst + 4 * i, fgg_float_to_bits(src[i]));
    }
}

static void fgg_quantize_f16(const float *src, uint8_t *dst, int64_t n_rows, int64_t n_per_row,
                             const float *imatrix) {
    int64_t i = 0, n = n_rows * n_per_row;
    (void)imatrix;
#if FGG_HAVE_AVX2
    for (; i + 8 <= n; i += 8) _mm_storeu_si128((__m128i *)(dst + 2 * i), fgg__f16x8(src + i));
#endif
    for (; i < n; i++) {
        fgg_store_u16le(dst + 2 * i, fgg_float_to_half(src[i]));
    }
}

static void fgg_quantize_bf16(const float *src, uint8_t *dst, int64_t n_rows, int64_t n_per_row,
                              const float *imatrix) {
    int64_t i = 0, n = n_rows * n_per_row;
    (void)imatrix;
#if FGG_HAVE_AVX2
    for (; i + 16 <= n; i += 16) _mm256_storeu_si256((__m256i *)(dst + 2 * i), fgg__bf16x16(src + i));
#endif
    for (; i < n; i++) {
        fgg_store_u16le(dst + 2 * i, fgg_float_to_bf16(src[i]));
    }
}

/* Round n floats in place to the nearest half (F16) or bfloat16 (BF16) value, kept as float32:
 * float(half(x)) with the conversions above (so NaN payloads as those give them). For a product
 * in float32 of values another library would first have cast to a half type. */
static void fgg_round_to_bf16(float *values, int64_t n) {
    int64_t i = 0;
#if FGG_HAVE_AVX2
    /* in the 32-bit lanes: fgg__bf16x16's arithmetic with the low half cleared instead of shifted out */
    const __m256i top = _mm256_set1_epi32((int)0xFFFF0000u), bias = _mm256_set1_epi32(0x7FFF);
    const __m256i one = _mm256_set1_epi32(0x10000), quiet = _mm256_set1_epi32(0x00400000);
    for (; i + 8 <= n; i += 8) {
        const __m256 v = _mm256_loadu_ps(values + i);
        const __m256i w = _mm256_castps_si256(v);
        const __m256i odd = _mm256_srli_epi32(_mm256_and_si256(w, one), 16);
        const __m256i rounded = _mm256_and_si256(_mm256_add_epi32(_mm256_add_epi32(w, bias), odd), top);
        const __m256i nan = _mm256_or_si256(_mm256_and_si256(w, top), quiet);
        _mm256_storeu_si256((__m256i *)(values + i),
                            _mm256_blendv_epi8(rounded, nan, _mm256_castps_si256(_mm256_cmp_ps(v, v, _CMP_UNORD_Q))));
    }
#endif
    for (; i < n; i++) values[i] = fgg_bf16_to_float(fgg_float_to_bf16(values[i]));
}

static void fgg_round_to_f16(float *values, int64_t n) {
    int64_t i = 0;
#if FGG_HAVE_AVX2
    /* F16C's widening keeps every half's value (and payload) exactly, as fgg_half_to_float */
    for (; i + 8 <= n; i += 8) _mm256_storeu_ps(values + i, _mm256_cvtph_ps(fgg__f16x8(values + i)));
#endif
    for (; i < n; i++) values[i] = fgg_half_to_float(fgg_float_to_half(values[i]));
}

#endif
