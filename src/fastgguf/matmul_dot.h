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
 * half[h] = sum of q[16h .. 16h + 15] (for the weight types whose values have an offset). */
typedef struct {
    float d;
    int16_t half[2];
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
        int32_t sum[2] = {0, 0};
        for (int i = 0; i < 32; i++) {
            int q = (int)lrintf(v[i] * inv);
            q = q > 127 ? 127 : (q < -127 ? -127 : q);
            out[b].q[i] = (int8_t)q;
            sum[i >> 4] += q;
        }
        out[b].d = d;
        out[b].half[0] = (int16_t)sum[0];
        out[b].half[1] = (int16_t)sum[1];
    }
}

static inline int32_t fgg_mm_qsum(const fgg_mm_q8 *x) { return (int32_t)x->half[0] + x->half[1]; }

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

/* The integer kernels below all have one shape: one weight row (nb blocks at w) against m rows
 * of quantized x (row i at x + i * xs, in fgg_mm_q8 blocks), out[i * os] = the dot product.
 * Each weight block is unpacked once (to 32 unsigned bytes per 32 values) and used for every
 * row of x. Integer sums are exact, and the float work is the same sequence on every build.
 *
 * SIMD: u (0..63) times signed x bytes with maddubs (pairs stay below 2^15), pairs summed to
 * int32 with madd. */
#if !defined(FGG_NO_SIMD) && (defined(__AVX2__) || defined(__AVX512F__))
#define FGG_MM_INT_SIMD 1
typedef __m256i fgg_mm_u32;  /* 32 unsigned bytes */

static inline int32_t fgg_mm_hsum_i32(__m256i q)
{
    __m128i r = _mm_add_epi32(_mm256_castsi256_si128(q), _mm256_extracti128_si256(q, 1));
    r = _mm_add_epi32(r, _mm_shuffle_epi32(r, 0x4e));
    r = _mm_add_epi32(r, _mm_shuffle_epi32(r, 0xb1));
    return _mm_cvtsi128_si32(r);
}

/* sum of u[i] * s[i] * w16[i / 16 ...]: the pairs are weighted by the int16 lanes of w16. */
static inline int32_t fgg_mm_dot_u(fgg_mm_u32 u, const int8_t *s, __m256i w16)
{
    __m256i p = _mm256_maddubs_epi16(u, _mm256_loadu_si256((const __m256i *)s));
    return fgg_mm_hsum_i32(_mm256_madd_epi16(p, w16));
}
#define FGG_MM_W16(a, b) _mm256_setr_epi16(a, a, a, a, a, a, a, a, b, b, b, b, b, b, b, b)
#else
typedef struct { uint8_t b[32]; } fgg_mm_u32;

static inline int32_t fgg_mm_dot_u_scalar(const fgg_mm_u32 *u, const int8_t *s, int a, int b)
{
    int32_t t0 = 0, t1 = 0;
    for (int i = 0; i < 16; i++) t0 += (int32_t)u->b[i] * s[i];
    for (int i = 16; i < 32; i++) t1 += (int32_t)u->b[i] * s[i];
    return t0 * a + t1 * b;
}
#endif

/* u * s for one block, both halves weighted 1 (a, b: the half weights, int16). */
#if defined(FGG_MM_INT_SIMD)
#define FGG_MM_DOT(u, s, a, b) fgg_mm_dot_u((u), (s), FGG_MM_W16((short)(a), (short)(b)))
#define FGG_MM_DOT1(u, s) fgg_mm_dot_u((u), (s), _mm256_set1_epi16(1))
#else
#define FGG_MM_DOT(u, s, a, b) fgg_mm_dot_u_scalar(&(u), (s), (a), (b))
#define FGG_MM_DOT1(u, s) fgg_mm_dot_u_scalar(&(u), (s), 1, 1)
#endif

/* 16 bytes of nibble pairs: low nibbles are values 0..15, high nibbles values 16..31. */
static inline fgg_mm_u32 fgg_mm_nibbles16(const uint8_t *qs)
{
#if defined(FGG_MM_INT_SIMD)
    __m128i v = _mm_loadu_si128((const __m128i *)qs);
    __m128i m = _mm_set1_epi8(0x0f);
    return _mm256_set_m128i(_mm_and_si128(_mm_srli_epi16(v, 4), m), _mm_and_si128(v, m));
#else
    fgg_mm_u32 u;
    for (int i = 0; i < 16; i++) {
        u.b[i] = qs[i] & 15;
        u.b[i + 16] = qs[i] >> 4;
    }
    return u;
#endif
}

/* 32 bytes of nibbles: lo = the low nibbles (one sub-block), hi = the high ones (the next). */
static inline void fgg_mm_nibbles32(const uint8_t *qs, fgg_mm_u32 *lo, fgg_mm_u32 *hi)
{
#if defined(FGG_MM_INT_SIMD)
    __m256i v = _mm256_loadu_si256((const __m256i *)qs);
    __m256i m = _mm256_set1_epi8(0x0f);
    *lo = _mm256_and_si256(v, m);
    *hi = _mm256_and_si256(_mm256_srli_epi16(v, 4), m);
#else
    for (int i = 0; i < 32; i++) {
        lo->b[i] = qs[i] & 15;
        hi->b[i] = qs[i] >> 4;
    }
#endif
}

/* Q8_0: 34-byte blocks, f16 d then 32 int8 (value d * q). */
static inline void fgg_mm_rows_q8_0(const uint8_t *w, ptrdiff_t nb, const fgg_mm_q8 *x, ptrdiff_t xs,
                                    int m, float *out, ptrdiff_t os)
{
    float acc[8];
    for (int r0 = 0; r0 < m; r0 += 8) {
        int mr = m - r0 < 8 ? m - r0 : 8;
        for (int i = 0; i < mr; i++) acc[i] = 0.0f;
        const uint8_t *wb = w;
        for (ptrdiff_t b = 0; b < nb; b++, wb += 34) {
            float d = fgg_mm_h2f(fgg_mm_le16(wb));
#if defined(FGG_MM_INT_SIMD)
            /* int8 x int8: the weight's sign moves onto x, so the left side is |w| (<= 128). */
            __m256i wq = _mm256_loadu_si256((const __m256i *)(wb + 2));
            __m256i aw = _mm256_sign_epi8(wq, wq);
#endif
            for (int i = 0; i < mr; i++) {
                const fgg_mm_q8 *xb = x + (r0 + i) * xs + b;
                int32_t t;
#if defined(FGG_MM_INT_SIMD)
                __m256i sx = _mm256_sign_epi8(_mm256_loadu_si256((const __m256i *)xb->q), wq);
                t = fgg_mm_hsum_i32(_mm256_madd_epi16(_mm256_maddubs_epi16(aw, sx), _mm256_set1_epi16(1)));
#else
                const int8_t *wq = (const int8_t *)(wb + 2);
                t = 0;
                for (int k = 0; k < 32; k++) t += (int32_t)wq[k] * xb->q[k];
#endif
                acc[i] = acc[i] + d * xb->d * (float)t;
            }
        }
        for (int i = 0; i < mr; i++) out[(r0 + i) * os] = acc[i];
    }
}

/* Q4_0: 18-byte blocks, f16 d then 16 bytes of nibbles q (value d * (q - 8)). */
static inline void fgg_mm_rows_q4_0(const uint8_t *w, ptrdiff_t nb, const fgg_mm_q8 *x, ptrdiff_t xs,
                                    int m, float *out, ptrdiff_t os)
{
    float acc[8];
    for (int r0 = 0; r0 < m; r0 += 8) {
        int mr = m - r0 < 8 ? m - r0 : 8;
        for (int i = 0; i < mr; i++) acc[i] = 0.0f;
        const uint8_t *wb = w;
        for (ptrdiff_t b = 0; b < nb; b++, wb += 18) {
            float d = fgg_mm_h2f(fgg_mm_le16(wb));
            fgg_mm_u32 u = fgg_mm_nibbles16(wb + 2);
            for (int i = 0; i < mr; i++) {
                const fgg_mm_q8 *xb = x + (r0 + i) * xs + b;
                int32_t t = FGG_MM_DOT1(u, xb->q) - 8 * fgg_mm_qsum(xb);
                acc[i] = acc[i] + d * xb->d * (float)t;
            }
        }
        for (int i = 0; i < mr; i++) out[(r0 + i) * os] = acc[i];
    }
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

/* Q4_K: 144-byte super-blocks of 256 (f16 d, f16 dmin, 12 bytes of scales, 128 bytes of
 * nibbles); sub-block j of 32 has value d * sc[j] * q - dmin * mn[j]. */
static inline void fgg_mm_rows_q4_k(const uint8_t *w, ptrdiff_t nsb, const fgg_mm_q8 *x, ptrdiff_t xs,
                                    int m, float *out, ptrdiff_t os)
{
    float acc[8];
    uint8_t sc[8], mn[8];
    fgg_mm_u32 u[8];
    for (int r0 = 0; r0 < m; r0 += 8) {
        int mr = m - r0 < 8 ? m - r0 : 8;
        for (int i = 0; i < mr; i++) acc[i] = 0.0f;
        const uint8_t *wb = w;
        for (ptrdiff_t b = 0; b < nsb; b++, wb += 144) {
            float d = fgg_mm_h2f(fgg_mm_le16(wb)), dmin = fgg_mm_h2f(fgg_mm_le16(wb + 2));
            fgg_mm_k4_scales(wb + 4, sc, mn);
            for (int g = 0; g < 4; g++) fgg_mm_nibbles32(wb + 16 + 32 * g, &u[2 * g], &u[2 * g + 1]);
            for (int i = 0; i < mr; i++) {
                const fgg_mm_q8 *xb = x + (r0 + i) * xs + 8 * b;
                float s = 0.0f, mm = 0.0f;
                for (int j = 0; j < 8; j++) {
                    int32_t t = FGG_MM_DOT(u[j], xb[j].q, sc[j], sc[j]);
                    s = s + xb[j].d * (float)t;
                    mm = mm + xb[j].d * (float)(fgg_mm_qsum(&xb[j]) * mn[j]);
                }
                acc[i] = acc[i] + (d * s - dmin * mm);
            }
        }
        for (int i = 0; i < mr; i++) out[(r0 + i) * os] = acc[i];
    }
}

/* Q6_K: 210-byte super-blocks of 256 (128 bytes low 4 bits, 64 bytes high 2 bits, 16 int8
 * scales, f16 d); value d * scale[i / 16] * (q - 32), q = 0..63. */
static inline void fgg_mm_rows_q6_k(const uint8_t *w, ptrdiff_t nsb, const fgg_mm_q8 *x, ptrdiff_t xs,
                                    int m, float *out, ptrdiff_t os)
{
    float acc[8];
    fgg_mm_u32 u[8];
    for (int r0 = 0; r0 < m; r0 += 8) {
        int mr = m - r0 < 8 ? m - r0 : 8;
        for (int i = 0; i < mr; i++) acc[i] = 0.0f;
        const uint8_t *wb = w;
        for (ptrdiff_t b = 0; b < nsb; b++, wb += 210) {
            const int8_t *scales = (const int8_t *)(wb + 192);
            float d = fgg_mm_h2f(fgg_mm_le16(wb + 208));
            for (int h = 0; h < 2; h++) {
                const uint8_t *l = wb + 64 * h, *hb = wb + 128 + 32 * h;
#if defined(FGG_MM_INT_SIMD)
                __m256i m4 = _mm256_set1_epi8(0x0f), m2 = _mm256_set1_epi8(0x03);
                __m256i l0 = _mm256_loadu_si256((const __m256i *)l);
                __m256i l1 = _mm256_loadu_si256((const __m256i *)(l + 32));
                __m256i hv = _mm256_loadu_si256((const __m256i *)hb);
                u[4 * h + 0] = _mm256_or_si256(_mm256_and_si256(l0, m4),
                                               _mm256_slli_epi16(_mm256_and_si256(hv, m2), 4));
                u[4 * h + 1] = _mm256_or_si256(_mm256_and_si256(l1, m4),
                                               _mm256_slli_epi16(_mm256_and_si256(_mm256_srli_epi16(hv, 2), m2), 4));
                u[4 * h + 2] = _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(l0, 4), m4),
                                               _mm256_slli_epi16(_mm256_and_si256(_mm256_srli_epi16(hv, 4), m2), 4));
                u[4 * h + 3] = _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(l1, 4), m4),
                                               _mm256_slli_epi16(_mm256_and_si256(_mm256_srli_epi16(hv, 6), m2), 4));
#else
                for (int k = 0; k < 32; k++) {
                    u[4 * h + 0].b[k] = (uint8_t)((l[k] & 15) | ((hb[k] & 3) << 4));
                    u[4 * h + 1].b[k] = (uint8_t)((l[k + 32] & 15) | (((hb[k] >> 2) & 3) << 4));
                    u[4 * h + 2].b[k] = (uint8_t)((l[k] >> 4) | (((hb[k] >> 4) & 3) << 4));
                    u[4 * h + 3].b[k] = (uint8_t)((l[k + 32] >> 4) | (((hb[k] >> 6) & 3) << 4));
                }
#endif
            }
            for (int i = 0; i < mr; i++) {
                const fgg_mm_q8 *xb = x + (r0 + i) * xs + 8 * b;
                float s = 0.0f;
                for (int j = 0; j < 8; j++) {
                    int a = scales[2 * j], c = scales[2 * j + 1];
                    int32_t t = FGG_MM_DOT(u[j], xb[j].q, a, c) - 32 * (a * xb[j].half[0] + c * xb[j].half[1]);
                    s = s + xb[j].d * (float)t;
                }
                acc[i] = acc[i] + d * s;
            }
        }
        for (int i = 0; i < mr; i++) out[(r0 + i) * os] = acc[i];
    }
}

#endif
