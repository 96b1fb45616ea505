/* Dot products for fastgguf.matmul (hand-written C, prefix fgg_mm_).
 *
 * The float path: a weight row is dequantized a few blocks at a time into a small scratch that
 * stays in L1, and each row of x is multiplied into its own 16 running float32 sums ("lanes").
 * Element i of the row always goes to lane i % 16, with a separate multiply and add (the
 * kernels are built with -ffp-contract=off), and the lanes are summed in one fixed order at the
 * end. So the portable C loop, the two 8-lane AVX2 vectors and the one 16-lane AVX-512 vector
 * compute exactly the same float operations: every CPU path and every thread count give the
 * same bits.
 *
 * The integer path: x is quantized to blocks of 32 int8 with one float scale each (the
 * "Q8 blocks" of fgg_mm_quantize_x8), and a weight block of 32 small integers is multiplied
 * with it as integers (exact), then scaled once per block. Faster, but x's rounding costs about
 * three decimal digits: fastgguf.matmul uses it only when asked (exact=False).
 */
#ifndef FGG_MATMUL_DOT_H
#define FGG_MATMUL_DOT_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <math.h>

#if !defined(FGG_NO_SIMD) && (defined(__AVX2__) || defined(__AVX512F__))
#include <immintrin.h>
#endif

#define FGG_MM_LANES 16

/* acc[j] += w[i] * x[i] for every i with i % 16 == j; n elements, any n. */
static inline void fgg_mm_dot_acc(const float *w, const float *x, ptrdiff_t n, float *acc)
{
    ptrdiff_t i = 0;
#if !defined(FGG_NO_SIMD) && defined(__AVX512F__)
    __m512 a = _mm512_loadu_ps(acc);
    for (; i + 16 <= n; i += 16)
        a = _mm512_add_ps(a, _mm512_mul_ps(_mm512_loadu_ps(w + i), _mm512_loadu_ps(x + i)));
    _mm512_storeu_ps(acc, a);
#elif !defined(FGG_NO_SIMD) && defined(__AVX2__)
    __m256 a0 = _mm256_loadu_ps(acc), a1 = _mm256_loadu_ps(acc + 8);
    for (; i + 16 <= n; i += 16) {
        a0 = _mm256_add_ps(a0, _mm256_mul_ps(_mm256_loadu_ps(w + i), _mm256_loadu_ps(x + i)));
        a1 = _mm256_add_ps(a1, _mm256_mul_ps(_mm256_loadu_ps(w + i + 8), _mm256_loadu_ps(x + i + 8)));
    }
    _mm256_storeu_ps(acc, a0);
    _mm256_storeu_ps(acc + 8, a1);
#else
    float a[FGG_MM_LANES];
    memcpy(a, acc, sizeof a);
    for (; i + 16 <= n; i += 16)
        for (int j = 0; j < FGG_MM_LANES; j++)
            a[j] = a[j] + w[i + j] * x[i + j];
    memcpy(acc, a, sizeof a);
#endif
    for (int j = 0; i + j < n; j++) {
        float p = w[i + j] * x[i + j];
        acc[j] = acc[j] + p;
    }
}

/* The 16 lanes summed in a fixed pairwise order. */
static inline float fgg_mm_lanes_sum(const float *acc)
{
    float s8[8], s4[4];
    for (int j = 0; j < 8; j++) s8[j] = acc[j] + acc[j + 8];
    for (int j = 0; j < 4; j++) s4[j] = s8[j] + s8[j + 4];
    return (s4[0] + s4[2]) + (s4[1] + s4[3]);
}

/* ------------------------------------------------------------------------------------------ */
/* Integer path                                                                               */

/* x quantized for the integer path: per 32 values one float scale d and 32 int8 q, x ~ d * q;
 * sum = sum of q (for weight types with an offset: Q4_1, Q5_1, Q4_K, Q5_K, Q2_K). */
typedef struct {
    float d;
    int32_t sum;
    int8_t q[32];
} fgg_mm_q8;

/* Quantize n (a multiple of 32) floats of x into n / 32 blocks. */
static inline void fgg_mm_quantize_x8(const float *x, ptrdiff_t n, fgg_mm_q8 *out)
{
    for (ptrdiff_t b = 0; b < n / 32; b++) {
        const float *v = x + b * 32;
        float amax = 0.0f;
        for (int i = 0; i < 32; i++) {
            float a = fabsf(v[i]);
            amax = a > amax ? a : amax;
        }
        float d = amax / 127.0f;
        float inv = d != 0.0f ? 1.0f / d : 0.0f;
        int32_t sum = 0;
        for (int i = 0; i < 32; i++) {
            int q = (int)lrintf(v[i] * inv);
            q = q > 127 ? 127 : (q < -127 ? -127 : q);
            out[b].q[i] = (int8_t)q;
            sum += q;
        }
        out[b].d = d;
        out[b].sum = sum;
    }
}

/* sum over i < 32 of u[i] * s[i], u unsigned bytes 0..127 (or 0..255 with |s| small enough
 * that no pair overflows int16: callers keep u <= 63 or |s| <= 127 and u <= 127). */
static inline int32_t fgg_mm_dot32_us(const uint8_t *u, const int8_t *s)
{
#if !defined(FGG_NO_SIMD) && (defined(__AVX2__) || defined(__AVX512F__))
    __m256i p = _mm256_maddubs_epi16(_mm256_loadu_si256((const __m256i *)u),
                                     _mm256_loadu_si256((const __m256i *)s));
    __m256i q = _mm256_madd_epi16(p, _mm256_set1_epi16(1));
    __m128i r = _mm_add_epi32(_mm256_castsi256_si128(q), _mm256_extracti128_si256(q, 1));
    r = _mm_add_epi32(r, _mm_shuffle_epi32(r, 0x4e));
    r = _mm_add_epi32(r, _mm_shuffle_epi32(r, 0xb1));
    return _mm_cvtsi128_si32(r);
#else
    int32_t t = 0;
    for (int i = 0; i < 32; i++) t += (int32_t)u[i] * s[i];
    return t;
#endif
}

/* Unpack the 16 bytes of 4-bit pairs: low nibbles to out[0..15], high nibbles to out[16..31]. */
static inline void fgg_mm_nibbles(const uint8_t *qs, uint8_t *out)
{
#if !defined(FGG_NO_SIMD) && (defined(__AVX2__) || defined(__AVX512F__))
    __m128i v = _mm_loadu_si128((const __m128i *)qs);
    __m128i m = _mm_set1_epi8(0x0f);
    _mm_storeu_si128((__m128i *)out, _mm_and_si128(v, m));
    _mm_storeu_si128((__m128i *)(out + 16), _mm_and_si128(_mm_srli_epi16(v, 4), m));
#else
    for (int i = 0; i < 16; i++) {
        out[i] = qs[i] & 15;
        out[i + 16] = qs[i] >> 4;
    }
#endif
}

static inline float fgg_mm_h2f(uint16_t h)
{
    uint32_t sign = (uint32_t)(h & 0x8000) << 16;
    uint32_t exp = (h >> 10) & 0x1f, man = h & 0x3ff, bits;
    if (exp == 0x1f) {
        bits = sign | 0x7f800000u | (man << 13);
    } else if (exp == 0) {
        float f = (float)man * (1.0f / 16777216.0f);
        return sign ? -f : f;
    } else {
        bits = sign | ((exp + 112) << 23) | (man << 13);
    }
    float f;
    memcpy(&f, &bits, 4);
    return f;
}

static inline uint16_t fgg_mm_le16(const uint8_t *p) { return (uint16_t)(p[0] | (p[1] << 8)); }

/* One row of Q8_0 weights (34-byte blocks: f16 d, 32 int8) times one Q8-quantized row of x.
 * The per-block products are summed in block order into 1 float. */
static inline float fgg_mm_row_q8_0(const uint8_t *w, const fgg_mm_q8 *x, ptrdiff_t nb)
{
    float acc = 0.0f;
    for (ptrdiff_t b = 0; b < nb; b++, w += 34) {
        /* int8 x int8: make the left side unsigned with its sign moved to the right side. */
        int32_t t;
#if !defined(FGG_NO_SIMD) && (defined(__AVX2__) || defined(__AVX512F__))
        __m256i wq = _mm256_loadu_si256((const __m256i *)(w + 2));
        __m256i xq = _mm256_loadu_si256((const __m256i *)x[b].q);
        __m256i p = _mm256_maddubs_epi16(_mm256_sign_epi8(wq, wq), _mm256_sign_epi8(xq, wq));
        __m256i q = _mm256_madd_epi16(p, _mm256_set1_epi16(1));
        __m128i r = _mm_add_epi32(_mm256_castsi256_si128(q), _mm256_extracti128_si256(q, 1));
        r = _mm_add_epi32(r, _mm_shuffle_epi32(r, 0x4e));
        r = _mm_add_epi32(r, _mm_shuffle_epi32(r, 0xb1));
        t = _mm_cvtsi128_si32(r);
#else
        const int8_t *wq = (const int8_t *)(w + 2);
        t = 0;
        for (int i = 0; i < 32; i++) t += (int32_t)wq[i] * x[b].q[i];
#endif
        acc = acc + fgg_mm_h2f(fgg_mm_le16(w)) * x[b].d * (float)t;
    }
    return acc;
}

/* One row of Q4_0 weights (18-byte blocks: f16 d, 16 bytes of nibbles q, value d * (q - 8)). */
static inline float fgg_mm_row_q4_0(const uint8_t *w, const fgg_mm_q8 *x, ptrdiff_t nb)
{
    float acc = 0.0f;
    uint8_t u[32];
    for (ptrdiff_t b = 0; b < nb; b++, w += 18) {
        fgg_mm_nibbles(w + 2, u);
        int32_t t = fgg_mm_dot32_us(u, x[b].q) - 8 * x[b].sum;
        acc = acc + fgg_mm_h2f(fgg_mm_le16(w)) * x[b].d * (float)t;
    }
    return acc;
}

/* Q4_K scales and mins: 12 bytes packing eight 6-bit scales and eight 6-bit mins. */
static inline void fgg_mm_k4_scales(const uint8_t *s, uint8_t *sc, uint8_t *mn)
{
    for (int j = 0; j < 4; j++) {
        sc[j] = s[j] & 63;
        mn[j] = s[j + 4] & 63;
        sc[j + 4] = (uint8_t)((s[j + 8] & 15) | ((s[j] >> 6) << 4));
        mn[j + 4] = (uint8_t)((s[j + 8] >> 4) | ((s[j + 4] >> 6) << 4));
    }
}

/* One row of Q4_K weights (144-byte super-blocks of 256: f16 d, f16 dmin, 12 bytes of scales,
 * 128 bytes of nibbles; sub-block j of 32: value d * sc[j] * q - dmin * mn[j]). */
static inline float fgg_mm_row_q4_k(const uint8_t *w, const fgg_mm_q8 *x, ptrdiff_t nsb)
{
    float acc = 0.0f;
    uint8_t u[32], sc[8], mn[8];
    for (ptrdiff_t b = 0; b < nsb; b++, w += 144, x += 8) {
        float d = fgg_mm_h2f(fgg_mm_le16(w)), dmin = fgg_mm_h2f(fgg_mm_le16(w + 2));
        fgg_mm_k4_scales(w + 4, sc, mn);
        const uint8_t *qs = w + 16;
        float s = 0.0f, m = 0.0f;
        for (int j = 0; j < 8; j += 2, qs += 32) {
            /* 32 bytes: low nibbles are sub-block j, high nibbles sub-block j + 1. */
            for (int h = 0; h < 2; h++) {
                for (int i = 0; i < 32; i++) u[i] = h ? (qs[i] >> 4) : (qs[i] & 15);
                int32_t t = fgg_mm_dot32_us(u, x[j + h].q);
                s = s + x[j + h].d * (float)(t * sc[j + h]);
                m = m + x[j + h].d * (float)(x[j + h].sum * mn[j + h]);
            }
        }
        acc = acc + (d * s - dmin * m);
    }
    return acc;
}

/* One row of Q6_K weights (210-byte super-blocks of 256: 128 bytes low 4 bits, 64 bytes high
 * 2 bits, 16 int8 scales, f16 d; value d * scale[i / 16] * (q - 32)). */
static inline float fgg_mm_row_q6_k(const uint8_t *w, const fgg_mm_q8 *x, ptrdiff_t nsb)
{
    float acc = 0.0f;
    uint8_t u[256];
    for (ptrdiff_t b = 0; b < nsb; b++, w += 210, x += 8) {
        const uint8_t *ql = w, *qh = w + 128;
        const int8_t *scales = (const int8_t *)(w + 192);
        float d = fgg_mm_h2f(fgg_mm_le16(w + 208));
        for (int half = 0; half < 2; half++) {
            const uint8_t *l = ql + 64 * half, *hb = qh + 32 * half;
            uint8_t *o = u + 128 * half;
            for (int i = 0; i < 32; i++) {
                o[i] = (uint8_t)((l[i] & 15) | (((hb[i] >> 0) & 3) << 4));
                o[i + 32] = (uint8_t)((l[i + 32] & 15) | (((hb[i] >> 2) & 3) << 4));
                o[i + 64] = (uint8_t)((l[i] >> 4) | (((hb[i] >> 4) & 3) << 4));
                o[i + 96] = (uint8_t)((l[i + 32] >> 4) | (((hb[i] >> 6) & 3) << 4));
            }
        }
        float s = 0.0f;
        for (int j = 0; j < 8; j++) {
            /* two 16-element halves with their own scales */
            int32_t t0 = 0, t1 = 0, q0 = 0, q1 = 0;
            const uint8_t *o = u + 32 * j;
            const int8_t *xq = x[j].q;
            for (int i = 0; i < 16; i++) { t0 += (int32_t)o[i] * xq[i]; q0 += xq[i]; }
            for (int i = 16; i < 32; i++) { t1 += (int32_t)o[i] * xq[i]; q1 += xq[i]; }
            int32_t t = (t0 - 32 * q0) * scales[2 * j] + (t1 - 32 * q1) * scales[2 * j + 1];
            s = s + x[j].d * (float)t;
        }
        acc = acc + d * s;
    }
    return acc;
}

#endif
