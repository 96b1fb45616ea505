/* Shared helpers of the IQ quantizers (quant_iq4.h, quant_iq3.h, quant_iq2.h, quant_iq1.h).
 *
 * Every function here reproduces one float32 step of ggml's quantizers exactly (bit for bit on
 * any CPU, given -ffp-contract=off): the rounding rules and the fp16 conversion that decide the
 * bytes. Owned by helper quant-iq3; others may append below the last section.
 *
 *   fgg_iq_nearest_int (v)   round to nearest, ties to even, by adding 1.5 * 2^23 and reading the
 *                            low mantissa bits of the sum (the result ggml's quantizers use, also
 *                            for inputs outside +-2^22 where it wraps)
 *   fgg_iq_fp16 (f)          float32 -> IEEE fp16 bits, round to nearest even; overflow gives
 *                            +-inf, NaN gives the quiet NaN 0x7e00 with the sign kept
 *   fgg_iq_store_u16le / u32le (p, v)   little-endian stores into a block
 *
 * Vector helpers (GCC/Clang vector extensions; FGG_IQ_SIMD is 1 where they are used, 0 for the
 * plain C paths of other compilers and of FGG_NO_SIMD builds). Each lane runs the scalar
 * sequence of one independent computation, so the lane count never changes a result.
 *   fgg_iq_vf / fgg_iq_vi      FGG_IQ_W float / int32 lanes (16 AVX-512, 8 AVX, 4 otherwise)
 *   fgg_iq_splat (x)           all lanes = x
 *   fgg_iq_select (m, a, b)    lane-wise m ? a : b for a mask from a vector comparison
 *   fgg_iq_loadu (p)           FGG_IQ_W floats from any address
 */
#ifndef FGG_QUANT_IQ_COMMON_H
#define FGG_QUANT_IQ_COMMON_H

#include <float.h>
#include <math.h>
#include <stdint.h>
#include <string.h>

#if (defined(__GNUC__) || defined(__clang__)) && !defined(FGG_NO_SIMD)
#define FGG_IQ_SIMD 1
#if defined(__F16C__)
#include <immintrin.h>
#endif
#else
#define FGG_IQ_SIMD 0
#endif

static inline int fgg_iq_nearest_int(float v) {
    float shifted = v + 12582912.0f; /* 1.5 * 2^23: the sum's low 23 bits hold the rounded v */
    int32_t bits;
    memcpy(&bits, &shifted, sizeof bits);
    return (bits & 0x007fffff) - 0x00400000;
}

static inline uint16_t fgg_iq_fp16(float f) {
    uint32_t w;
    memcpy(&w, &f, sizeof w);
    uint16_t sign = (uint16_t)((w >> 16) & 0x8000u);
    uint32_t mag = w & 0x7fffffffu;
    if (mag > 0x7f800000u) return (uint16_t)(sign | 0x7e00u);   /* NaN */
#if FGG_IQ_SIMD && defined(__F16C__)
    /* the same bits for every non-NaN float (checked over all 2^32 patterns), in one instruction */
    return (uint16_t)_cvtss_sh(f, _MM_FROUND_TO_NEAREST_INT);
#else
    if (mag >= 0x477ff000u) return (uint16_t)(sign | 0x7c00u);  /* >= 65520 rounds to inf */
    if (mag < 0x38800000u) {
        /* below 2^-14: an fp16 subnormal, a count of 2^-24 units. The scaling is exact and
         * adding then removing 2^23 rounds the count to nearest even (it is at most 1024,
         * which comes out as the smallest normal's bits). */
        float a;
        memcpy(&a, &mag, sizeof a);
        float units = a * 16777216.0f;
        float r = (units + 8388608.0f) - 8388608.0f;
        return (uint16_t)(sign | (uint16_t)r);
    }
    uint32_t exp = (mag >> 23) - 112; /* rebias 127 -> 15 */
    uint32_t mant = mag & 0x7fffffu;
    uint32_t h = (exp << 10) | (mant >> 13);
    uint32_t rest = mant & 0x1fffu;
    if (rest > 0x1000u || (rest == 0x1000u && (h & 1u))) ++h; /* a carry moves into the exponent */
    return (uint16_t)(sign | h);
#endif
}

static inline void fgg_iq_store_u16le(uint8_t *p, uint16_t v) {
    p[0] = (uint8_t)v;
    p[1] = (uint8_t)(v >> 8);
}

static inline void fgg_iq_store_u32le(uint8_t *p, uint32_t v) {
    p[0] = (uint8_t)v;
    p[1] = (uint8_t)(v >> 8);
    p[2] = (uint8_t)(v >> 16);
    p[3] = (uint8_t)(v >> 24);
}

#if FGG_IQ_SIMD
/* Lanes per vector: the build's native register width (the lane count never changes a result). */
#if defined(__AVX512F__)
#define FGG_IQ_W 16
#elif defined(__AVX__)
#define FGG_IQ_W 8
#else
#define FGG_IQ_W 4
#endif
typedef float fgg_iq_vf __attribute__((vector_size(4 * FGG_IQ_W)));
typedef int32_t fgg_iq_vi __attribute__((vector_size(4 * FGG_IQ_W)));
#define FGG_IQ_INLINE static inline __attribute__((always_inline))

FGG_IQ_INLINE fgg_iq_vf fgg_iq_splat(float x) {
#if FGG_IQ_W == 16
    return (fgg_iq_vf){x, x, x, x, x, x, x, x, x, x, x, x, x, x, x, x};
#elif FGG_IQ_W == 8
    return (fgg_iq_vf){x, x, x, x, x, x, x, x};
#else
    return (fgg_iq_vf){x, x, x, x};
#endif
}

FGG_IQ_INLINE fgg_iq_vf fgg_iq_select(fgg_iq_vi m, fgg_iq_vf a, fgg_iq_vf b) {
    return (fgg_iq_vf)((m & (fgg_iq_vi)a) | (~m & (fgg_iq_vi)b));
}

FGG_IQ_INLINE fgg_iq_vf fgg_iq_loadu(const float *p) {
    fgg_iq_vf v;
    memcpy(&v, p, sizeof v);
    return v;
}
#endif


/* ---- appended by quant-iq2 ----
 *   fgg_iq_bits (m)            bit l set when lane l of the comparison mask m is true (lanes of
 *                              fgg_iq_vi; a movemask where the ISA has one) */
#if FGG_IQ_SIMD
#if defined(__AVX512F__) || defined(__AVX__) || defined(__SSE2__)
#include <immintrin.h>
#endif
FGG_IQ_INLINE unsigned fgg_iq_bits(fgg_iq_vi m) {
#if FGG_IQ_W == 16 && defined(__AVX512F__)
    __m512i v;
    memcpy(&v, &m, sizeof v);
    return (unsigned)_mm512_test_epi32_mask(v, v);
#elif FGG_IQ_W == 8 && defined(__AVX__)
    __m256 v;
    memcpy(&v, &m, sizeof v);
    return (unsigned)_mm256_movemask_ps(v);
#elif FGG_IQ_W == 4 && defined(__SSE2__)
    __m128 v;
    memcpy(&v, &m, sizeof v);
    return (unsigned)_mm_movemask_ps(v);
#else
    unsigned b = 0;
    for (int l = 0; l < FGG_IQ_W; ++l) b |= (unsigned)(m[l] != 0) << l;
    return b;
#endif
}
#endif

#endif /* FGG_QUANT_IQ_COMMON_H */
