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

#include <math.h>
#include "base.h"
#include "cpu.h"

#define FGG_MM_LANES 16

/* acc[j] += w[i] * x[i] for every i with i % 16 == j; n elements, any n. */
static inline void fgg_mm_dot_acc(const float *w, const float *x, ptrdiff_t n, float *acc)
{
    ptrdiff_t i = 0;
#if FGG_HAVE_AVX512
    __m512 a = _mm512_loadu_ps(acc);
    for (; i + 16 <= n; i += 16)
        a = _mm512_add_ps(a, _mm512_mul_ps(_mm512_loadu_ps(w + i), _mm512_loadu_ps(x + i)));
    _mm512_storeu_ps(acc, a);
#elif FGG_HAVE_AVX2
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

/* fgg_mm_dot_acc for 4 rows of x (row r at x + r * xs, its lanes at acc + 16 * r): the same
 * float operations in the same order per row, so the same bits; in the AVX2 build each 16
 * elements of w are loaded once for the 4 rows (a load per multiply instead of two: the float
 * path of a batch was bound by loads). */
static inline void fgg_mm_dot_acc4(const float *w, const float *x, ptrdiff_t xs, ptrdiff_t n, float *acc)
{
#if !FGG_HAVE_AVX512 && FGG_HAVE_AVX2
    ptrdiff_t i = 0;
    const float *x0 = x, *x1 = x + xs, *x2 = x + 2 * xs, *x3 = x + 3 * xs;
    __m256 a00 = _mm256_loadu_ps(acc), a01 = _mm256_loadu_ps(acc + 8);
    __m256 a10 = _mm256_loadu_ps(acc + 16), a11 = _mm256_loadu_ps(acc + 24);
    __m256 a20 = _mm256_loadu_ps(acc + 32), a21 = _mm256_loadu_ps(acc + 40);
    __m256 a30 = _mm256_loadu_ps(acc + 48), a31 = _mm256_loadu_ps(acc + 56);
    for (; i + 16 <= n; i += 16) {
        __m256 w0 = _mm256_loadu_ps(w + i), w1 = _mm256_loadu_ps(w + i + 8);
        a00 = _mm256_add_ps(a00, _mm256_mul_ps(w0, _mm256_loadu_ps(x0 + i)));
        a01 = _mm256_add_ps(a01, _mm256_mul_ps(w1, _mm256_loadu_ps(x0 + i + 8)));
        a10 = _mm256_add_ps(a10, _mm256_mul_ps(w0, _mm256_loadu_ps(x1 + i)));
        a11 = _mm256_add_ps(a11, _mm256_mul_ps(w1, _mm256_loadu_ps(x1 + i + 8)));
        a20 = _mm256_add_ps(a20, _mm256_mul_ps(w0, _mm256_loadu_ps(x2 + i)));
        a21 = _mm256_add_ps(a21, _mm256_mul_ps(w1, _mm256_loadu_ps(x2 + i + 8)));
        a30 = _mm256_add_ps(a30, _mm256_mul_ps(w0, _mm256_loadu_ps(x3 + i)));
        a31 = _mm256_add_ps(a31, _mm256_mul_ps(w1, _mm256_loadu_ps(x3 + i + 8)));
    }
    _mm256_storeu_ps(acc, a00);
    _mm256_storeu_ps(acc + 8, a01);
    _mm256_storeu_ps(acc + 16, a10);
    _mm256_storeu_ps(acc + 24, a11);
    _mm256_storeu_ps(acc + 32, a20);
    _mm256_storeu_ps(acc + 40, a21);
    _mm256_storeu_ps(acc + 48, a30);
    _mm256_storeu_ps(acc + 56, a31);
    if (i < n) /* fewer than 16 left: element i + j goes to lane j, as in fgg_mm_dot_acc */
        for (int r = 0; r < 4; r++) fgg_mm_dot_acc(w + i, x + r * xs + i, n - i, acc + FGG_MM_LANES * r);
#else
    for (int r = 0; r < 4; r++) fgg_mm_dot_acc(w, x + r * xs, n, acc + FGG_MM_LANES * r);
#endif
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

/* The integer kernels below all have one shape: one weight row (nb blocks at w) against m rows
 * of quantized x (row i at x + i * xs, in fgg_mm_q8 blocks), out[i * os] = the dot product.
 * Each weight block is unpacked once, to 32 signed bytes per 32 values (|v| <= 128), and used for
 * every row of x (8 rows at a time).
 *
 * The sums: the 32 products of a block go to 8 int32 lanes, lane k holding bytes 4k..4k+3 (each
 * half of 16 bytes weighted by an int16 scale): exact integers. Then per block and row, in
 * float32, acc[k] = acc[k] + (float)lane[k] * f with f = d_w * d_x, and the 8 lanes are summed
 * in one fixed order at the end. The SIMD builds (maddubs: |w| times x with w's sign moved onto
 * x, madd with the scales, one 8-float vector per row) and the portable loop do exactly these
 * operations, so every build gives the same bits. */
#if (FGG_HAVE_AVX2 || FGG_HAVE_AVX512)
#define FGG_MM_INT_SIMD 1
typedef __m256i fgg_mm_w32;   /* 32 signed weight bytes */
typedef __m256i fgg_mm_lanes; /* 8 int32 */
typedef __m256 fgg_mm_acc;    /* 8 float */

static inline fgg_mm_lanes fgg_mm_dot(fgg_mm_w32 w, const int8_t *xq, int a, int b)
{
    __m256i sx = _mm256_sign_epi8(_mm256_loadu_si256((const __m256i *)xq), w);
    __m256i p = _mm256_maddubs_epi16(_mm256_sign_epi8(w, w), sx);
    __m256i sc = _mm256_setr_epi16((short)a, (short)a, (short)a, (short)a, (short)a, (short)a, (short)a, (short)a,
                                   (short)b, (short)b, (short)b, (short)b, (short)b, (short)b, (short)b, (short)b);
    return _mm256_madd_epi16(p, sc);
}

/* fgg_mm_dot for w >= 0 (Q4_K's nibbles) and one scale a: maddubs takes w as it is (the same
 * integers, two sign operations fewer). */
static inline fgg_mm_lanes fgg_mm_dot_u(fgg_mm_w32 w, const int8_t *xq, int a)
{
    __m256i p = _mm256_maddubs_epi16(w, _mm256_loadu_si256((const __m256i *)xq));
    return _mm256_madd_epi16(p, _mm256_set1_epi16((short)a));
}

static inline fgg_mm_acc fgg_mm_acc_zero(void) { return _mm256_setzero_ps(); }

static inline fgg_mm_acc fgg_mm_acc_add(fgg_mm_acc acc, fgg_mm_lanes l, float f)
{
    return _mm256_add_ps(acc, _mm256_mul_ps(_mm256_cvtepi32_ps(l), _mm256_set1_ps(f)));
}

static inline float fgg_mm_acc_sum(fgg_mm_acc acc)
{
    float v[8];
    _mm256_storeu_ps(v, acc);
    return ((v[0] + v[4]) + (v[2] + v[6])) + ((v[1] + v[5]) + (v[3] + v[7]));
}
#else
typedef struct { int8_t b[32]; } fgg_mm_w32;
typedef struct { int32_t v[8]; } fgg_mm_lanes;
typedef struct { float v[8]; } fgg_mm_acc;

static inline fgg_mm_lanes fgg_mm_dot(fgg_mm_w32 w, const int8_t *xq, int a, int b)
{
    fgg_mm_lanes l;
    for (int k = 0; k < 8; k++) {
        int32_t t = 0;
        for (int i = 4 * k; i < 4 * k + 4; i++) t += (int32_t)w.b[i] * xq[i];
        l.v[k] = t * (k < 4 ? a : b);
    }
    return l;
}

static inline fgg_mm_lanes fgg_mm_dot_u(fgg_mm_w32 w, const int8_t *xq, int a) { return fgg_mm_dot(w, xq, a, a); }

static inline fgg_mm_acc fgg_mm_acc_zero(void)
{
    fgg_mm_acc a;
    for (int k = 0; k < 8; k++) a.v[k] = 0.0f;
    return a;
}

static inline fgg_mm_acc fgg_mm_acc_add(fgg_mm_acc acc, fgg_mm_lanes l, float f)
{
    for (int k = 0; k < 8; k++) {
        float p = (float)l.v[k] * f;
        acc.v[k] = acc.v[k] + p;
    }
    return acc;
}

static inline float fgg_mm_acc_sum(fgg_mm_acc acc)
{
    const float *v = acc.v;
    return ((v[0] + v[4]) + (v[2] + v[6])) + ((v[1] + v[5]) + (v[3] + v[7]));
}
#endif

/* 16 bytes of nibble pairs, minus ``offset``: low nibbles are values 0..15, high nibbles 16..31. */
static inline fgg_mm_w32 fgg_mm_nibbles16(const uint8_t *qs, int offset)
{
#if defined(FGG_MM_INT_SIMD)
    __m128i v = _mm_loadu_si128((const __m128i *)qs);
    __m128i m = _mm_set1_epi8(0x0f);
    __m256i u = _mm256_set_m128i(_mm_and_si128(_mm_srli_epi16(v, 4), m), _mm_and_si128(v, m));
    return _mm256_sub_epi8(u, _mm256_set1_epi8((char)offset));
#else
    fgg_mm_w32 u;
    for (int i = 0; i < 16; i++) {
        u.b[i] = (int8_t)((qs[i] & 15) - offset);
        u.b[i + 16] = (int8_t)((qs[i] >> 4) - offset);
    }
    return u;
#endif
}

/* 32 bytes of nibbles: lo = the low nibbles (one sub-block), hi = the high ones (the next). */
static inline void fgg_mm_nibbles32(const uint8_t *qs, fgg_mm_w32 *lo, fgg_mm_w32 *hi)
{
#if defined(FGG_MM_INT_SIMD)
    __m256i v = _mm256_loadu_si256((const __m256i *)qs);
    __m256i m = _mm256_set1_epi8(0x0f);
    *lo = _mm256_and_si256(v, m);
    *hi = _mm256_and_si256(_mm256_srli_epi16(v, 4), m);
#else
    for (int i = 0; i < 32; i++) {
        lo->b[i] = (int8_t)(qs[i] & 15);
        hi->b[i] = (int8_t)(qs[i] >> 4);
    }
#endif
}

static inline fgg_mm_w32 fgg_mm_load32(const uint8_t *p)
{
#if defined(FGG_MM_INT_SIMD)
    return _mm256_loadu_si256((const __m256i *)p);
#else
    fgg_mm_w32 w;
    memcpy(w.b, p, 32);
    return w;
#endif
}

/* Q8_0: 34-byte blocks, f16 d then 32 int8 (value d * q). */
static inline void fgg_mm_rows_q8_0(const uint8_t *w, ptrdiff_t nb, const fgg_mm_q8 *x, ptrdiff_t xs,
                                    int m, float *out, ptrdiff_t os)
{
    fgg_mm_acc acc[8];
    for (int r0 = 0; r0 < m; r0 += 8) {
        int mr = m - r0 < 8 ? m - r0 : 8;
        for (int i = 0; i < mr; i++) acc[i] = fgg_mm_acc_zero();
        const uint8_t *wb = w;
        for (ptrdiff_t b = 0; b < nb; b++, wb += 34) {
            float d = fgg_half_to_float(fgg_load_u16le(wb));
            fgg_mm_w32 q = fgg_mm_load32(wb + 2);
            for (int i = 0; i < mr; i++) {
                const fgg_mm_q8 *xb = x + (r0 + i) * xs + b;
                acc[i] = fgg_mm_acc_add(acc[i], fgg_mm_dot(q, xb->q, 1, 1), d * xb->d);
            }
        }
        for (int i = 0; i < mr; i++) out[(r0 + i) * os] = fgg_mm_acc_sum(acc[i]);
    }
}

/* Q4_0: 18-byte blocks, f16 d then 16 bytes of nibbles q (value d * (q - 8)). */
static inline void fgg_mm_rows_q4_0(const uint8_t *w, ptrdiff_t nb, const fgg_mm_q8 *x, ptrdiff_t xs,
                                    int m, float *out, ptrdiff_t os)
{
    fgg_mm_acc acc[8];
    for (int r0 = 0; r0 < m; r0 += 8) {
        int mr = m - r0 < 8 ? m - r0 : 8;
        for (int i = 0; i < mr; i++) acc[i] = fgg_mm_acc_zero();
        const uint8_t *wb = w;
        for (ptrdiff_t b = 0; b < nb; b++, wb += 18) {
            float d = fgg_half_to_float(fgg_load_u16le(wb));
            fgg_mm_w32 q = fgg_mm_nibbles16(wb + 2, 8);
            for (int i = 0; i < mr; i++) {
                const fgg_mm_q8 *xb = x + (r0 + i) * xs + b;
                acc[i] = fgg_mm_acc_add(acc[i], fgg_mm_dot(q, xb->q, 1, 1), d * xb->d);
            }
        }
        for (int i = 0; i < mr; i++) out[(r0 + i) * os] = fgg_mm_acc_sum(acc[i]);
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
 * nibbles); sub-block j of 32 has value d * sc[j] * q - dmin * mn[j]. The min terms go to one
 * float per row, subtracted at the end. */
static inline void fgg_mm_rows_q4_k(const uint8_t *w, ptrdiff_t nsb, const fgg_mm_q8 *x, ptrdiff_t xs,
                                    int m, float *out, ptrdiff_t os)
{
    fgg_mm_acc acc[8];
    float mins[8];
    uint8_t sc[8], mn[8];
    fgg_mm_w32 u[8];
    for (int r0 = 0; r0 < m; r0 += 8) {
        int mr = m - r0 < 8 ? m - r0 : 8;
        for (int i = 0; i < mr; i++) {
            acc[i] = fgg_mm_acc_zero();
            mins[i] = 0.0f;
        }
        const uint8_t *wb = w;
        for (ptrdiff_t b = 0; b < nsb; b++, wb += 144) {
            float d = fgg_half_to_float(fgg_load_u16le(wb)), dmin = fgg_half_to_float(fgg_load_u16le(wb + 2));
            fgg_mm_k4_scales(wb + 4, sc, mn);
            for (int g = 0; g < 4; g++) fgg_mm_nibbles32(wb + 16 + 32 * g, &u[2 * g], &u[2 * g + 1]);
            for (int i = 0; i < mr; i++) {
                const fgg_mm_q8 *xb = x + (r0 + i) * xs + 8 * b;
                for (int j = 0; j < 8; j++) {
                    acc[i] = fgg_mm_acc_add(acc[i], fgg_mm_dot_u(u[j], xb[j].q, sc[j]), d * xb[j].d);
                    float mt = (dmin * xb[j].d) * (float)(fgg_mm_qsum(&xb[j]) * mn[j]);
                    mins[i] = mins[i] + mt;
                }
            }
        }
        for (int i = 0; i < mr; i++) out[(r0 + i) * os] = fgg_mm_acc_sum(acc[i]) - mins[i];
    }
}

/* Q6_K: 210-byte super-blocks of 256 (128 bytes low 4 bits, 64 bytes high 2 bits, 16 int8
 * scales, f16 d); value d * scale[i / 16] * (q - 32), q = 0..63. */
static inline void fgg_mm_rows_q6_k(const uint8_t *w, ptrdiff_t nsb, const fgg_mm_q8 *x, ptrdiff_t xs,
                                    int m, float *out, ptrdiff_t os)
{
    fgg_mm_acc acc[8];
    fgg_mm_w32 u[8];
    for (int r0 = 0; r0 < m; r0 += 8) {
        int mr = m - r0 < 8 ? m - r0 : 8;
        for (int i = 0; i < mr; i++) acc[i] = fgg_mm_acc_zero();
        const uint8_t *wb = w;
        for (ptrdiff_t b = 0; b < nsb; b++, wb += 210) {
            const int8_t *scales = (const int8_t *)(wb + 192);
            float d = fgg_half_to_float(fgg_load_u16le(wb + 208));
            for (int h = 0; h < 2; h++) {
                const uint8_t *l = wb + 64 * h, *hb = wb + 128 + 32 * h;
#if defined(FGG_MM_INT_SIMD)
                __m256i m4 = _mm256_set1_epi8(0x0f), m2 = _mm256_set1_epi8(0x03), o = _mm256_set1_epi8(32);
                __m256i l0 = _mm256_loadu_si256((const __m256i *)l);
                __m256i l1 = _mm256_loadu_si256((const __m256i *)(l + 32));
                __m256i hv = _mm256_loadu_si256((const __m256i *)hb);
                u[4 * h + 0] = _mm256_sub_epi8(_mm256_or_si256(_mm256_and_si256(l0, m4),
                                               _mm256_slli_epi16(_mm256_and_si256(hv, m2), 4)), o);
                u[4 * h + 1] = _mm256_sub_epi8(_mm256_or_si256(_mm256_and_si256(l1, m4),
                                               _mm256_slli_epi16(_mm256_and_si256(_mm256_srli_epi16(hv, 2), m2), 4)), o);
                u[4 * h + 2] = _mm256_sub_epi8(_mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(l0, 4), m4),
                                               _mm256_slli_epi16(_mm256_and_si256(_mm256_srli_epi16(hv, 4), m2), 4)), o);
                u[4 * h + 3] = _mm256_sub_epi8(_mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(l1, 4), m4),
                                               _mm256_slli_epi16(_mm256_and_si256(_mm256_srli_epi16(hv, 6), m2), 4)), o);
#else
                for (int k = 0; k < 32; k++) {
                    u[4 * h + 0].b[k] = (int8_t)(((l[k] & 15) | ((hb[k] & 3) << 4)) - 32);
                    u[4 * h + 1].b[k] = (int8_t)(((l[k + 32] & 15) | (((hb[k] >> 2) & 3) << 4)) - 32);
                    u[4 * h + 2].b[k] = (int8_t)(((l[k] >> 4) | (((hb[k] >> 4) & 3) << 4)) - 32);
                    u[4 * h + 3].b[k] = (int8_t)(((l[k + 32] >> 4) | (((hb[k] >> 6) & 3) << 4)) - 32);
                }
#endif
            }
            for (int i = 0; i < mr; i++) {
                const fgg_mm_q8 *xb = x + (r0 + i) * xs + 8 * b;
                for (int j = 0; j < 8; j++)
                    acc[i] = fgg_mm_acc_add(acc[i], fgg_mm_dot(u[j], xb[j].q, scales[2 * j], scales[2 * j + 1]),
                                            d * xb[j].d);
            }
        }
        for (int i = 0; i < mr; i++) out[(r0 + i) * os] = fgg_mm_acc_sum(acc[i]);
    }
}

/* ------------------------------------------------------------------------------------------ */
/* AVX-512 VNNI integer kernels: the avx512 build only, used only where the CPU has avx512_vnni.
 *
 * The same integers and the same float steps as above, by other instructions: vpdpbusd adds the
 * 4 products of unsigned |w| bytes with x bytes (w's sign moved onto x) straight into an int32
 * lane, which is the lane above before its scale. For Q4_K and Q6_K (|w| <= 32, |x| <= 127) that
 * lane is below 2^15 in magnitude, so vpmaddwd with the scale in the low 16 bits of each int32
 * (0 in the high) multiplies it by the scale exactly, as the madd above did. Two rows of x share one 512-bit vector (row i in the low 256 bits, row i + 1 in
 * the high), so every float step is the 8-lane step above, done for two rows at once; an odd
 * last row uses the 256-bit form. So the VNNI, maddubs and portable kernels give the same bits.
 * Each function is compiled for VNNI by a target attribute: the rest of the avx512 build still
 * runs on AVX-512 CPUs without VNNI, and these run only when fgg_cpu_has_avx512_vnni() says so. */
#if defined(FGG_MM_INT_SIMD) && FGG_HAVE_AVX512 && (defined(__GNUC__) || defined(__clang__))
#define FGG_MM_HAVE_VNNI 1
#define FGG_MM_VNNI __attribute__((target("avx512vnni,avx512bw,avx512f,avx512vl,avx512dq")))

/* The same 32 bytes in both halves. */
static inline FGG_MM_VNNI __m512i fgg_mm_v2_w(__m256i w) { return _mm512_broadcast_i64x4(w); }

/* Block b's 32 bytes of x for two rows: x0 low, x1 high. */
static inline FGG_MM_VNNI __m512i fgg_mm_v2_x(const int8_t *x0, const int8_t *x1)
{
    return _mm512_inserti64x4(_mm512_castsi256_si512(_mm256_loadu_si256((const __m256i *)x0)),
                              _mm256_loadu_si256((const __m256i *)x1), 1);
}

/* Lanes (before the scale) of a signed weight block against two rows: wa = |w| (both halves),
 * neg = its bytes that were negative. */
static inline FGG_MM_VNNI __m512i fgg_mm_v2_dot(__m512i wa, __mmask64 neg, __m512i x)
{
    __m512i sx = _mm512_mask_sub_epi8(x, neg, _mm512_setzero_si512(), x);
    return _mm512_dpbusd_epi32(_mm512_setzero_si512(), wa, sx);
}

/* The same for one row (256 bits). */
static inline FGG_MM_VNNI __m256i fgg_mm_v1_dot(__m256i w, const int8_t *xq)
{
    __m256i sx = _mm256_sign_epi8(_mm256_loadu_si256((const __m256i *)xq), w);
    return _mm256_dpbusd_epi32(_mm256_setzero_si256(), _mm256_abs_epi8(w), sx);
}

/* acc = acc + (float)l * f, f = f0 in the low 8 lanes, f1 in the high 8. */
static inline FGG_MM_VNNI __m512 fgg_mm_v2_acc(__m512 acc, __m512i l, float f0, float f1)
{
    __m512 f = _mm512_insertf32x8(_mm512_set1_ps(f0), _mm256_set1_ps(f1), 1);
    return _mm512_add_ps(acc, _mm512_mul_ps(_mm512_cvtepi32_ps(l), f));
}

static inline FGG_MM_VNNI void fgg_mm_v2_out(__m512 acc, float *o0, float *o1)
{
    *o0 = fgg_mm_acc_sum(_mm512_castps512_ps256(acc));
    *o1 = fgg_mm_acc_sum(_mm512_extractf32x8_ps(acc, 1));
}

/* Q8_0 and Q4_0 (scale 1 on both halves; w signed). */
#define FGG_MM_V_LEGACY(NAME, BYTES, UNPACK)                                                          \
static FGG_MM_VNNI void NAME(const uint8_t *w, ptrdiff_t nb, const fgg_mm_q8 *x, ptrdiff_t xs,       \
                             int m, float *out, ptrdiff_t os)                                        \
{                                                                                                    \
    __m512 acc2[4];                                                                                  \
    fgg_mm_acc acc1 = fgg_mm_acc_zero();                                                             \
    for (int r0 = 0; r0 < m; r0 += 8) {                                                              \
        int mr = m - r0 < 8 ? m - r0 : 8, np = mr / 2;                                               \
        for (int p = 0; p < np; p++) acc2[p] = _mm512_setzero_ps();                                  \
        acc1 = fgg_mm_acc_zero();                                                                    \
        const uint8_t *wb = w;                                                                       \
        for (ptrdiff_t b = 0; b < nb; b++, wb += (BYTES)) {                                          \
            float d = fgg_half_to_float(fgg_load_u16le(wb));                                                   \
            __m256i q = UNPACK;                                                                      \
            __m512i qz = fgg_mm_v2_w(q);                                                             \
            __m512i qa = _mm512_abs_epi8(qz);                                                        \
            __mmask64 neg = _mm512_movepi8_mask(qz);                                                 \
            for (int p = 0; p < np; p++) {                                                           \
                const fgg_mm_q8 *x0 = x + (r0 + 2 * p) * xs + b, *x1 = x0 + xs;                      \
                __m512i l = fgg_mm_v2_dot(qa, neg, fgg_mm_v2_x(x0->q, x1->q));                       \
                acc2[p] = fgg_mm_v2_acc(acc2[p], l, d * x0->d, d * x1->d);                           \
            }                                                                                        \
            if (mr & 1) {                                                                            \
                const fgg_mm_q8 *xr = x + (r0 + mr - 1) * xs + b;                                    \
                acc1 = fgg_mm_acc_add(acc1, fgg_mm_v1_dot(q, xr->q), d * xr->d);                     \
            }                                                                                        \
        }                                                                                            \
        for (int p = 0; p < np; p++)                                                                 \
            fgg_mm_v2_out(acc2[p], &out[(r0 + 2 * p) * os], &out[(r0 + 2 * p + 1) * os]);            \
        if (mr & 1) out[(r0 + mr - 1) * os] = fgg_mm_acc_sum(acc1);                                  \
    }                                                                                                \
}

FGG_MM_V_LEGACY(fgg_mm_rows_q8_0_vnni, 34, fgg_mm_load32(wb + 2))
FGG_MM_V_LEGACY(fgg_mm_rows_q4_0_vnni, 18, fgg_mm_nibbles16(wb + 2, 8))
#undef FGG_MM_V_LEGACY

/* Q4_K: the nibbles are unsigned, so they are vpdpbusd's unsigned operand as they are. */
static FGG_MM_VNNI void fgg_mm_rows_q4_k_vnni(const uint8_t *w, ptrdiff_t nsb, const fgg_mm_q8 *x, ptrdiff_t xs,
                                              int m, float *out, ptrdiff_t os)
{
    __m512 acc2[4];
    fgg_mm_acc acc1 = fgg_mm_acc_zero();
    float mins[8];
    uint8_t sc[8], mn[8];
    fgg_mm_w32 u[8];
    __m512i uz[8], s2[8];
    for (int r0 = 0; r0 < m; r0 += 8) {
        int mr = m - r0 < 8 ? m - r0 : 8, np = mr / 2;
        for (int p = 0; p < np; p++) acc2[p] = _mm512_setzero_ps();
        acc1 = fgg_mm_acc_zero();
        for (int i = 0; i < mr; i++) mins[i] = 0.0f;
        const uint8_t *wb = w;
        for (ptrdiff_t b = 0; b < nsb; b++, wb += 144) {
            float d = fgg_half_to_float(fgg_load_u16le(wb)), dmin = fgg_half_to_float(fgg_load_u16le(wb + 2));
            fgg_mm_k4_scales(wb + 4, sc, mn);
            for (int g = 0; g < 4; g++) fgg_mm_nibbles32(wb + 16 + 32 * g, &u[2 * g], &u[2 * g + 1]);
            if (np > 0)
                for (int j = 0; j < 8; j++) {
                    uz[j] = fgg_mm_v2_w(u[j]);
                    s2[j] = _mm512_set1_epi32(sc[j]);
                }
            for (int p = 0; p < np; p++) {
                const fgg_mm_q8 *x0 = x + (r0 + 2 * p) * xs + 8 * b, *x1 = x0 + xs;
                for (int j = 0; j < 8; j++) {
                    __m512i l = _mm512_dpbusd_epi32(_mm512_setzero_si512(), uz[j], fgg_mm_v2_x(x0[j].q, x1[j].q));
                    acc2[p] = fgg_mm_v2_acc(acc2[p], _mm512_madd_epi16(l, s2[j]), d * x0[j].d, d * x1[j].d);
                    float mt0 = (dmin * x0[j].d) * (float)(fgg_mm_qsum(&x0[j]) * mn[j]);
                    float mt1 = (dmin * x1[j].d) * (float)(fgg_mm_qsum(&x1[j]) * mn[j]);
                    mins[2 * p] = mins[2 * p] + mt0;
                    mins[2 * p + 1] = mins[2 * p + 1] + mt1;
                }
            }
            if (mr & 1) {
                const fgg_mm_q8 *xr = x + (r0 + mr - 1) * xs + 8 * b;
                for (int j = 0; j < 8; j++) {
                    __m256i l = _mm256_dpbusd_epi32(_mm256_setzero_si256(), u[j],
                                                    _mm256_loadu_si256((const __m256i *)xr[j].q));
                    acc1 = fgg_mm_acc_add(acc1, _mm256_madd_epi16(l, _mm256_set1_epi32(sc[j])), d * xr[j].d);
                    float mt = (dmin * xr[j].d) * (float)(fgg_mm_qsum(&xr[j]) * mn[j]);
                    mins[mr - 1] = mins[mr - 1] + mt;
                }
            }
        }
        for (int p = 0; p < np; p++) {
            float o0, o1;
            fgg_mm_v2_out(acc2[p], &o0, &o1);
            out[(r0 + 2 * p) * os] = o0 - mins[2 * p];
            out[(r0 + 2 * p + 1) * os] = o1 - mins[2 * p + 1];
        }
        if (mr & 1) out[(r0 + mr - 1) * os] = fgg_mm_acc_sum(acc1) - mins[mr - 1];
    }
}

/* Q6_K: values q - 32 (signed), an int8 scale per 16. */
static FGG_MM_VNNI void fgg_mm_rows_q6_k_vnni(const uint8_t *w, ptrdiff_t nsb, const fgg_mm_q8 *x, ptrdiff_t xs,
                                              int m, float *out, ptrdiff_t os)
{
    __m512 acc2[4];
    fgg_mm_acc acc1 = fgg_mm_acc_zero();
    fgg_mm_w32 u[8];
    __m512i ua[8], s2[8];
    __m256i s1[8];
    __mmask64 neg[8];
    for (int r0 = 0; r0 < m; r0 += 8) {
        int mr = m - r0 < 8 ? m - r0 : 8, np = mr / 2;
        for (int p = 0; p < np; p++) acc2[p] = _mm512_setzero_ps();
        acc1 = fgg_mm_acc_zero();
        const uint8_t *wb = w;
        for (ptrdiff_t b = 0; b < nsb; b++, wb += 210) {
            const int8_t *scales = (const int8_t *)(wb + 192);
            float d = fgg_half_to_float(fgg_load_u16le(wb + 208));
            __m256i m4 = _mm256_set1_epi8(0x0f), m2 = _mm256_set1_epi8(0x03), o = _mm256_set1_epi8(32);
            for (int h = 0; h < 2; h++) {
                const uint8_t *l = wb + 64 * h, *hb = wb + 128 + 32 * h;
                __m256i l0 = _mm256_loadu_si256((const __m256i *)l);
                __m256i l1 = _mm256_loadu_si256((const __m256i *)(l + 32));
                __m256i hv = _mm256_loadu_si256((const __m256i *)hb);
                u[4 * h + 0] = _mm256_sub_epi8(_mm256_or_si256(_mm256_and_si256(l0, m4),
                                               _mm256_slli_epi16(_mm256_and_si256(hv, m2), 4)), o);
                u[4 * h + 1] = _mm256_sub_epi8(_mm256_or_si256(_mm256_and_si256(l1, m4),
                                               _mm256_slli_epi16(_mm256_and_si256(_mm256_srli_epi16(hv, 2), m2), 4)), o);
                u[4 * h + 2] = _mm256_sub_epi8(_mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(l0, 4), m4),
                                               _mm256_slli_epi16(_mm256_and_si256(_mm256_srli_epi16(hv, 4), m2), 4)), o);
                u[4 * h + 3] = _mm256_sub_epi8(_mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(l1, 4), m4),
                                               _mm256_slli_epi16(_mm256_and_si256(_mm256_srli_epi16(hv, 6), m2), 4)), o);
            }
            for (int j = 0; j < 8; j++) {
                int a = scales[2 * j] & 0xffff, c = scales[2 * j + 1] & 0xffff;
                s1[j] = _mm256_setr_epi32(a, a, a, a, c, c, c, c);
            }
            if (np > 0)
                for (int j = 0; j < 8; j++) {
                    __m512i z = fgg_mm_v2_w(u[j]);
                    ua[j] = _mm512_abs_epi8(z);
                    neg[j] = _mm512_movepi8_mask(z);
                    s2[j] = fgg_mm_v2_w(s1[j]);
                }
            for (int p = 0; p < np; p++) {
                const fgg_mm_q8 *x0 = x + (r0 + 2 * p) * xs + 8 * b, *x1 = x0 + xs;
                for (int j = 0; j < 8; j++) {
                    __m512i lz = fgg_mm_v2_dot(ua[j], neg[j], fgg_mm_v2_x(x0[j].q, x1[j].q));
                    acc2[p] = fgg_mm_v2_acc(acc2[p], _mm512_madd_epi16(lz, s2[j]), d * x0[j].d, d * x1[j].d);
                }
            }
            if (mr & 1) {
                const fgg_mm_q8 *xr = x + (r0 + mr - 1) * xs + 8 * b;
                for (int j = 0; j < 8; j++)
                    acc1 = fgg_mm_acc_add(acc1, _mm256_madd_epi16(fgg_mm_v1_dot(u[j], xr[j].q), s1[j]), d * xr[j].d);
            }
        }
        for (int p = 0; p < np; p++)
            fgg_mm_v2_out(acc2[p], &out[(r0 + 2 * p) * os], &out[(r0 + 2 * p + 1) * os]);
        if (mr & 1) out[(r0 + mr - 1) * os] = fgg_mm_acc_sum(acc1);
    }
}
#else
#define FGG_MM_HAVE_VNNI 0
/* Never called (fgg_mm_vnni_usable() is 0): names for the Cython table code. */
#define fgg_mm_rows_q8_0_vnni fgg_mm_rows_q8_0
#define fgg_mm_rows_q4_0_vnni fgg_mm_rows_q4_0
#define fgg_mm_rows_q4_k_vnni fgg_mm_rows_q4_k
#define fgg_mm_rows_q6_k_vnni fgg_mm_rows_q6_k
#endif

#if defined(FGG_MM_INT_SIMD)
#define FGG_MM_INT_SIMD_BUILD 1
#else
#define FGG_MM_INT_SIMD_BUILD 0
#endif

/* Whether this build has the VNNI kernels and this CPU (and OS) can run them. */
static inline int fgg_mm_vnni_usable(void) { return FGG_MM_HAVE_VNNI && fgg_cpu_has_avx512_vnni(); }

#endif
