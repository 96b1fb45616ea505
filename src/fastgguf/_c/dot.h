/* Dot products for fastgguf.matmul (hand-written C, prefix fgg_mm_).
 *
 * The float path: a weight row is dequantized a few blocks at a time into a small scratch that
 * stays in L1, and each row of x is multiplied into its own 16 running float32 sums ("lanes").
 * Element i of the row always goes to lane i % 16, with a separate multiply and add (the
 * kernels are built with -ffp-contract=off), and the lanes are summed in one fixed order at the
 * end. So the portable C loop, the two 8-lane AVX2 vectors and the one 16-lane AVX-512 vector
 * compute exactly the same float operations: every CPU path and every thread count give the
 * same bits. Q2_K to Q6_K, the IQ types, TQ1_0, TQ2_0, Q1_0 and the per-32 types but NVFP4 and
 * Q2_0 instead factor each sub-block's scale out of its sum (the end of this file): fewer float
 * operations per weight, the same guarantees.
 *
 * The integer path: x is quantized to int8 with one float scale per block of 32 (Q4_0, Q8_0:
 * fgg_mm_quantize_x8) or per super-block of 256 (the K-quants: fgg_mm_quantize_x8k), and the
 * weight's small integers are multiplied with it as integers (exact), the sums scaled to float
 * once per block (per 256 values for the K-quants). Faster, but x's rounding costs two to three
 * decimal digits: fastgguf.matmul uses it only when asked (exact=False).
 */
#ifndef FGG_MATMUL_DOT_H
#define FGG_MATMUL_DOT_H

#include <math.h>
#include <stdlib.h>
#if defined(_WIN32)
#include <malloc.h>
#endif
#include "base.h"
#include "cpu.h"
#include "iq_tables.h"

#if defined(__GNUC__) || defined(__clang__)
#define FGG_MM_ALWAYS_INLINE static inline __attribute__((always_inline))
#else
#define FGG_MM_ALWAYS_INLINE static __forceinline
#endif
#if defined(__GNUC__) || defined(__clang__)
#define FGG_MM_NOINLINE __attribute__((noinline))
#else
#define FGG_MM_NOINLINE __declspec(noinline)
#endif

/* A named integer kernel: the generic one (GENERIC, always inline) with its type constant folded
 * in; X the type of x's blocks. ATTR: "static inline", or the VNNI kernels' target attribute. */
#define FGG_MM_NAMED_ROWS(ATTR, NAME, X, GENERIC, KIND)                                                \
ATTR void NAME(const uint8_t *w, ptrdiff_t nb, const X *x, ptrdiff_t xs, int m, float *out, ptrdiff_t os) \
{                                                                                                     \
    GENERIC(KIND, w, nb, x, xs, m, out, os);                                                          \
}

/* 64-byte aligned scratch (the VNNI batch kernel's aligned loads); NULL when there is no memory. */
static inline void *fgg_aligned_malloc(size_t n)
{
#if defined(_WIN32)
    return _aligned_malloc(n ? n : 64, 64);
#else
    void *p = NULL;
    return posix_memalign(&p, 64, n ? n : 64) == 0 ? p : NULL;
#endif
}

static inline void fgg_aligned_free(void *p)
{
#if defined(_WIN32)
    _aligned_free(p);
#else
    free(p);
#endif
}

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

/* Ask for the cache lines of the block ``ahead`` bytes past p (n bytes): a row's blocks stream
 * from memory, and the single-row kernels are quick enough for the hardware prefetcher, which
 * stops at each 4 KiB page, to leave them waiting (about 10-15 % of a model's batch 1 sweep).
 * 4 KiB ahead: on a Zen 5 VM, 65536 x 4096 Q4_K from memory, one row of x, 2 threads, the integer
 * path read 33 GB/s at 512 bytes ahead, 39 at 1 KiB, 43-44 at 4 KiB, and no more at 8 KiB. */
#define FGG_MM_PREFETCH_AHEAD 4096
/* Ask for the cache lines of the n bytes at p (a hint: p may lie past the data). */
static inline void fgg_mm_prefetch(const uint8_t *p, ptrdiff_t n)
{
#if defined(__GNUC__) || defined(__clang__)
    for (ptrdiff_t o = 0; o < n; o += 64) __builtin_prefetch(p + o);
#else
    (void)p;
    (void)n;
#endif
}

static inline void fgg_mm_prefetch_ahead(const uint8_t *p, ptrdiff_t n) { fgg_mm_prefetch(p + FGG_MM_PREFETCH_AHEAD, n); }

/* ------------------------------------------------------------------------------------------ */
/* Integer path                                                                               */

/* x quantized for the integer path of the types with blocks of 32 or a few runs of 32 (Q1_0,
 * Q2_0, Q4_0, Q4_1, Q5_0, Q5_1, Q8_0, IQ4_NL, MXFP4, NVFP4): per 32 values one float scale d and 32 int8 q, x ~ d * q, and s = d * (float)sum(q)
 * (the share of the weights' offsets, Q4_1's and Q5_1's m, is m * s: made once per row of x,
 * not once per weight row). */
typedef struct {
    float d;
    float s;
    int8_t q[32];
} fgg_mm_q8;

/* Round n (a multiple of 32) floats of v to int8 q = v * (1 / d) with one scale d = amax / 127:
 * to nearest, ties to even, |q| <= 127. A product that is not finite (inf or NaN in v, or an
 * amax so small that 1 / d overflows) gives q = 0, as lrintf's LONG_MIN cast to int did before.
 * No libm call: lrintf per value made this step cost as much as the products themselves at
 * 64 rows (about 5 ns a value). The SIMD builds round with cvtps2dq (the default mode: to
 * nearest even), the portable one with the 1.5 * 2^23 trick (exact for |p| <= 128): the same q.
 * Returns d. */
static inline float fgg_mm_round_x(const float *v, int n, int8_t *q)
{
#if FGG_HAVE_AVX2 || FGG_HAVE_AVX512
    /* max(a, m) = a > m ? a : m, lane by lane: a NaN never wins, as in the scalar loop */
    const __m256 abs_mask = _mm256_castsi256_ps(_mm256_set1_epi32(0x7fffffff));
    __m256 m8 = _mm256_setzero_ps();
    for (int i = 0; i < n; i += 8) m8 = _mm256_max_ps(_mm256_and_ps(_mm256_loadu_ps(v + i), abs_mask), m8);
    __m128 m4 = _mm_max_ps(_mm256_extractf128_ps(m8, 1), _mm256_castps256_ps128(m8));
    m4 = _mm_max_ps(_mm_movehl_ps(m4, m4), m4);
    m4 = _mm_max_ss(_mm_shuffle_ps(m4, m4, 1), m4);
    float amax = _mm_cvtss_f32(m4);
    float d = amax / 127.0f;
    const __m256 inv = _mm256_set1_ps(d != 0.0f ? 1.0f / d : 0.0f), limit = _mm256_set1_ps(128.0f);
    const __m256i hi = _mm256_set1_epi32(127), lo = _mm256_set1_epi32(-127);
    for (int i = 0; i < n; i += 32) {
        __m256i r[4];
        for (int t = 0; t < 4; t++) {
            __m256 p = _mm256_mul_ps(_mm256_loadu_ps(v + i + 8 * t), inv);
            __m256 finite = _mm256_cmp_ps(_mm256_and_ps(p, abs_mask), limit, _CMP_LE_OQ);
            __m256i k = _mm256_and_si256(_mm256_cvtps_epi32(p), _mm256_castps_si256(finite));
            r[t] = _mm256_min_epi32(_mm256_max_epi32(k, lo), hi);
        }
        /* packs work within 128-bit halves: values 0-3, 8-11, 16-19, 24-27 | 4-7, ... ; put them back */
        __m256i b = _mm256_packs_epi16(_mm256_packs_epi32(r[0], r[1]), _mm256_packs_epi32(r[2], r[3]));
        b = _mm256_permutevar8x32_epi32(b, _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7));
        _mm256_storeu_si256((__m256i *)(q + i), b);
    }
    return d;
#else
    float amax = 0.0f;
    for (int i = 0; i < n; i++) {
        float a = fabsf(v[i]);
        amax = a > amax ? a : amax;
    }
    float d = amax / 127.0f;
    float inv = d != 0.0f ? 1.0f / d : 0.0f;
    for (int i = 0; i < n; i++) {
        float p = v[i] * inv;
        int r = fabsf(p) <= 128.0f ? (int)((p + 12582912.0f) - 12582912.0f) : 0;
        q[i] = (int8_t)(r > 127 ? 127 : (r < -127 ? -127 : r));
    }
    return d;
#endif
}

/* Quantize n (a multiple of 32) floats of x into n / 32 blocks. */
static inline void fgg_mm_quantize_x8(const float *x, ptrdiff_t n, fgg_mm_q8 *out)
{
    for (ptrdiff_t b = 0; b < n / 32; b++) {
        float d = fgg_mm_round_x(x + b * 32, 32, out[b].q);
        int sum = 0; /* |sum| <= 32 * 127: exact in float */
        for (int i = 0; i < 32; i++) sum += out[b].q[i];
        out[b].d = d;
        out[b].s = d * (float)sum;
    }
}

/* The integer kernels all have one shape: one weight row (nb blocks at w) against m rows of
 * quantized x (row i at x + i * xs, in fgg_mm_q8 blocks for the per-32 types below, fgg_mm_q8k
 * super-blocks for the K-quants further down), out[i * os] = the dot product.
 * Each weight block is unpacked once, to 32 signed bytes per 32 values (|v| <= 128), and used for
 * every row of x (8 rows at a time).
 *
 * The sums of the per-32 types: the 32 products of a run go to 8 int32 lanes, lane k holding
 * bytes 4k..4k+3: exact integers. Then per run and row, in float32,
 * acc[k] = acc[k] + (float)lane[k] * f with f = d_w * d_x, and the 8 lanes are summed in one
 * fixed order at the end. Q1_0 and Q2_0 (4 and 2 runs per block, one d_w): per block
 * p[k] = sum over its runs, in order, of (float)lane[k] * d_x, then acc[k] = acc[k] + p[k] * d_w,
 * so that the accumulator's chain takes one add per block, not one per run (Q1_0 1.04-1.14x
 * faster). The SIMD builds (maddubs: |w| times x with w's sign moved onto x, madd
 * with ones, one 8-float vector per row) and the portable loop (16-bit products) do exactly these
 * operations, so every build gives the same bits. */
#if (FGG_HAVE_AVX2 || FGG_HAVE_AVX512)
#define FGG_MM_INT_SIMD 1
typedef __m256i fgg_mm_w32;   /* 32 signed weight bytes */
typedef __m256i fgg_mm_lanes; /* 8 int32 */
typedef __m256 fgg_mm_acc;    /* 8 float */

static inline fgg_mm_lanes fgg_mm_dot(fgg_mm_w32 w, const int8_t *xq)
{
    __m256i sx = _mm256_sign_epi8(_mm256_loadu_si256((const __m256i *)xq), w);
    __m256i p = _mm256_maddubs_epi16(_mm256_sign_epi8(w, w), sx);
    return _mm256_madd_epi16(p, _mm256_set1_epi16(1));
}

static inline fgg_mm_acc fgg_mm_acc_zero(void) { return _mm256_setzero_ps(); }

static inline fgg_mm_acc fgg_mm_acc_add(fgg_mm_acc acc, fgg_mm_lanes l, float f)
{
    return _mm256_add_ps(acc, _mm256_mul_ps(_mm256_cvtepi32_ps(l), _mm256_set1_ps(f)));
}

/* (float)l[k] * f; and acc[k] + p[k] * f (the blocks of several runs: fgg_mm_rown_b) */
static inline fgg_mm_acc fgg_mm_acc_scaled(fgg_mm_lanes l, float f) { return _mm256_mul_ps(_mm256_cvtepi32_ps(l), _mm256_set1_ps(f)); }

static inline fgg_mm_acc fgg_mm_acc_addv(fgg_mm_acc acc, fgg_mm_acc p, float f)
{
    return _mm256_add_ps(acc, _mm256_mul_ps(p, _mm256_set1_ps(f)));
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

#if FGG_HAVE_SSE2
/* Two madd results (pair sums of values 0-7 and 8-15) as 4 lanes, each the sum of 4 consecutive
 * products: the lanes of fgg_mm_dot. */
FGG_MM_ALWAYS_INLINE __m128i fgg_mm_sse_quad_lanes(__m128i p0, __m128i p1)
{
    const __m128 a = _mm_castsi128_ps(p0), b = _mm_castsi128_ps(p1);
    return _mm_add_epi32(_mm_castps_si128(_mm_shuffle_ps(a, b, _MM_SHUFFLE(2, 0, 2, 0))),
                         _mm_castps_si128(_mm_shuffle_ps(a, b, _MM_SHUFFLE(3, 1, 3, 1))));
}
#endif

FGG_MM_ALWAYS_INLINE fgg_mm_lanes fgg_mm_dot(fgg_mm_w32 w, const int8_t *xq)
{
#if FGG_HAVE_SSE2
    /* bytes widened to int16 (SSE2 has no byte multiply), products summed in pairs by madd, then
     * pairs of pairs: the same lanes */
    fgg_mm_lanes sl;
    for (int h = 0; h < 2; h++) {
        const __m128i wv = _mm_loadu_si128((const __m128i *)(w.b + 16 * h)), xv = _mm_loadu_si128((const __m128i *)(xq + 16 * h));
        const __m128i p0 = _mm_madd_epi16(_mm_srai_epi16(_mm_unpacklo_epi8(wv, wv), 8), _mm_srai_epi16(_mm_unpacklo_epi8(xv, xv), 8));
        const __m128i p1 = _mm_madd_epi16(_mm_srai_epi16(_mm_unpackhi_epi8(wv, wv), 8), _mm_srai_epi16(_mm_unpackhi_epi8(xv, xv), 8));
        _mm_storeu_si128((__m128i *)(sl.v + 4 * h), fgg_mm_sse_quad_lanes(p0, p1));
    }
    return sl;
#endif
    int16_t p[32]; /* |w * x| <= 128 * 127: 16-bit products, a loop the compiler vectorizes */
    for (int i = 0; i < 32; i++) p[i] = (int16_t)(w.b[i] * xq[i]);
    fgg_mm_lanes l;
    for (int k = 0; k < 8; k++) l.v[k] = (p[4 * k] + p[4 * k + 1]) + (p[4 * k + 2] + p[4 * k + 3]);
    return l;
}

FGG_MM_ALWAYS_INLINE fgg_mm_acc fgg_mm_acc_zero(void)
{
    fgg_mm_acc a;
    for (int k = 0; k < 8; k++) a.v[k] = 0.0f;
    return a;
}

#if FGG_HAVE_SSE2
/* acc[k] + (float)l[k] * f[k / 4] in two vectors of 4 lanes (the loops' operations below) */
FGG_MM_ALWAYS_INLINE fgg_mm_acc fgg_mm_sse_acc_add(fgg_mm_acc acc, fgg_mm_lanes l, float f0, float f1)
{
    const float f[2] = {f0, f1};
    for (int h = 0; h < 2; h++) {
        const __m128 p = _mm_mul_ps(_mm_cvtepi32_ps(_mm_loadu_si128((const __m128i *)(l.v + 4 * h))), _mm_set1_ps(f[h]));
        _mm_storeu_ps(acc.v + 4 * h, _mm_add_ps(_mm_loadu_ps(acc.v + 4 * h), p));
    }
    return acc;
}
#endif

FGG_MM_ALWAYS_INLINE fgg_mm_acc fgg_mm_acc_add(fgg_mm_acc acc, fgg_mm_lanes l, float f)
{
#if FGG_HAVE_SSE2
    return fgg_mm_sse_acc_add(acc, l, f, f);
#endif
    for (int k = 0; k < 8; k++) {
        float p = (float)l.v[k] * f;
        acc.v[k] = acc.v[k] + p;
    }
    return acc;
}

FGG_MM_ALWAYS_INLINE fgg_mm_acc fgg_mm_acc_scaled(fgg_mm_lanes l, float f)
{
    fgg_mm_acc p;
#if FGG_HAVE_SSE2
    for (int h = 0; h < 2; h++)
        _mm_storeu_ps(p.v + 4 * h, _mm_mul_ps(_mm_cvtepi32_ps(_mm_loadu_si128((const __m128i *)(l.v + 4 * h))), _mm_set1_ps(f)));
    return p;
#endif
    for (int k = 0; k < 8; k++) p.v[k] = (float)l.v[k] * f;
    return p;
}

FGG_MM_ALWAYS_INLINE fgg_mm_acc fgg_mm_acc_addv(fgg_mm_acc acc, fgg_mm_acc p, float f)
{
#if FGG_HAVE_SSE2
    for (int h = 0; h < 2; h++)
        _mm_storeu_ps(acc.v + 4 * h, _mm_add_ps(_mm_loadu_ps(acc.v + 4 * h), _mm_mul_ps(_mm_loadu_ps(p.v + 4 * h), _mm_set1_ps(f))));
    return acc;
#endif
    for (int k = 0; k < 8; k++) {
        float t = p.v[k] * f;
        acc.v[k] = acc.v[k] + t;
    }
    return acc;
}

FGG_MM_ALWAYS_INLINE float fgg_mm_acc_sum(fgg_mm_acc acc)
{
    const float *v = acc.v;
    return ((v[0] + v[4]) + (v[2] + v[6])) + ((v[1] + v[5]) + (v[3] + v[7]));
}
#endif

/* The 8 lanes' integer total (exact: the K kinds' totals per super-block stay below 2^31). */
static inline int32_t fgg_mm_lanes_total(fgg_mm_lanes l)
{
#if defined(FGG_MM_INT_SIMD)
    __m128i s = _mm_add_epi32(_mm256_castsi256_si128(l), _mm256_extracti128_si256(l, 1));
    s = _mm_add_epi32(s, _mm_shuffle_epi32(s, 0x4e));
    return _mm_cvtsi128_si32(_mm_add_epi32(s, _mm_shuffle_epi32(s, 0xb1)));
#else
    int32_t t = 0;
    for (int k = 0; k < 8; k++) t += l.v[k];
    return t;
#endif
}

#if defined(FGG_MM_INT_SIMD)
/* Lane i: the integer total of l[i] (fgg_mm_lanes_total of 8 vectors at once). */
static inline __m256i fgg_mm_totals8(const __m256i l[8])
{
    __m256i g0 = _mm256_hadd_epi32(_mm256_hadd_epi32(l[0], l[1]), _mm256_hadd_epi32(l[2], l[3]));
    __m256i g1 = _mm256_hadd_epi32(_mm256_hadd_epi32(l[4], l[5]), _mm256_hadd_epi32(l[6], l[7]));
    return _mm256_add_epi32(_mm256_permute2x128_si256(g0, g1, 0x20), _mm256_permute2x128_si256(g0, g1, 0x31));
}
#endif

/* The float step of the K kinds (Q2_K..Q6_K, the 256-value IQ types, TQ1_0, TQ2_0): per row and
 * super-block, the lanes' integer total times f = d_w * d_x added to one float (not 8 float lanes as
 * the per-32 types: a super-block's sum is exact in int32, and one float per row and super-block
 * lets the batch kernel lay out its lanes as rows of x, fgg_mm_gemm_k_vnni). */
static inline float fgg_mm_kacc_add(float acc, fgg_mm_lanes l, float f)
{
    const float p = (float)fgg_mm_lanes_total(l) * f;
    return acc + p;
}

#if defined(FGG_MM_INT_SIMD)
/* fgg_mm_kacc_add for 8 super-blocks in order: their totals at once (fgg_mm_totals8), each times
 * its factor f[k] in one vector multiply, then added one by one: the same float operations. */
FGG_MM_ALWAYS_INLINE float fgg_mm_kacc_add8(float acc, const __m256i l[8], const float f[8])
{
    float p[8];
    _mm256_storeu_ps(p, _mm256_mul_ps(_mm256_cvtepi32_ps(fgg_mm_totals8(l)), _mm256_loadu_ps(f)));
    for (int k = 0; k < 8; k++) acc = acc + p[k];
    return acc;
}
#endif

#if !defined(FGG_MM_INT_SIMD) && FGG_HAVE_SSE2
/* 16 bytes of nibble pairs split: n[0] the low nibbles, n[1] the high ones. */
FGG_MM_ALWAYS_INLINE void fgg_mm_sse_nibbles(const uint8_t *qs, __m128i n[2])
{
    const __m128i v = _mm_loadu_si128((const __m128i *)qs), m = _mm_set1_epi8(0x0f);
    n[0] = _mm_and_si128(v, m);
    n[1] = _mm_and_si128(_mm_srli_epi16(v, 4), m);
}
#endif

/* 16 bytes of nibble pairs, minus ``offset``: low nibbles are values 0..15, high nibbles 16..31. */
static inline fgg_mm_w32 fgg_mm_nibbles16(const uint8_t *qs, int offset)
{
#if defined(FGG_MM_INT_SIMD)
    /* the 16 bytes in both lanes, the high lane's shifted by 4 */
    const __m256i v = _mm256_broadcastsi128_si256(_mm_loadu_si128((const __m128i *)qs));
    const __m256i u = _mm256_and_si256(_mm256_srlv_epi64(v, _mm256_setr_epi64x(0, 0, 4, 4)), _mm256_set1_epi8(0x0f));
    return _mm256_sub_epi8(u, _mm256_set1_epi8((char)offset));
#elif FGG_HAVE_SSE2
    __m128i n[2];
    fgg_mm_sse_nibbles(qs, n);
    fgg_mm_w32 u;
    for (int h = 0; h < 2; h++) _mm_storeu_si128((__m128i *)(u.b + 16 * h), _mm_sub_epi8(n[h], _mm_set1_epi8((char)offset)));
    return u;
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

/* The portable build's 16-entry byte tables (SSE2 has no pshufb): per code byte, the table values
 * of its low nibble (low byte) and of its high nibble (high byte) as one word. Filled once, before
 * any kernel runs (fgg_mm_init_tables). */
typedef uint16_t fgg_mm_words[256];
static fgg_mm_words fgg_mm_iq4nl_words, fgg_mm_fp4_words;

#if !defined(FGG_MM_INT_SIMD) && FGG_HAVE_SSE2
/* The words of 8 code bytes. */
FGG_MM_ALWAYS_INLINE __m128i fgg_mm_sse_word_set8(const uint8_t *qs, const fgg_mm_words words)
{
    return _mm_set_epi16((short)words[qs[7]], (short)words[qs[6]], (short)words[qs[5]], (short)words[qs[4]],
                         (short)words[qs[3]], (short)words[qs[2]], (short)words[qs[1]], (short)words[qs[0]]);
}

/* Their two values as int16: lo the low nibbles' (values 0..7 of the 8 bytes), hi the high ones'. */
FGG_MM_ALWAYS_INLINE void fgg_mm_sse_word_values(const uint8_t *qs, const fgg_mm_words words, __m128i *lo, __m128i *hi)
{
    const __m128i v = fgg_mm_sse_word_set8(qs, words);
    *lo = _mm_srai_epi16(_mm_slli_epi16(v, 8), 8);
    *hi = _mm_srai_epi16(v, 8);
}

/* The words of 8 code bytes, then their low bytes (the low nibbles' values, codes 0..7) and their
 * high bytes: lo and hi of 8 words each, in the word's low byte. */
FGG_MM_ALWAYS_INLINE void fgg_mm_sse_words8(const uint8_t *qs, const fgg_mm_words words, __m128i *lo, __m128i *hi)
{
    const __m128i w = fgg_mm_sse_word_set8(qs, words);
    *lo = _mm_and_si128(w, _mm_set1_epi16(0xff));
    *hi = _mm_srli_epi16(w, 8);
}
#endif

/* 16 bytes of nibble pairs through a table of 16 signed values (|v| <= 127), in the order of
 * fgg_mm_nibbles16: the low nibbles' values first, then the high ones'. ``words``: the same table
 * by code byte (fgg_mm_words), for the portable build. */
#if defined(FGG_MM_INT_SIMD)
/* A 16-entry table's values for 16 bytes of nibble pairs: lo for the low nibbles (values 0-15),
 * hi for the high ones (16-31), one pshufb each. */
FGG_MM_ALWAYS_INLINE void fgg_mm_lut16_halves(__m128i table, const uint8_t *qs, __m128i *lo, __m128i *hi)
{
    const __m128i v = _mm_loadu_si128((const __m128i *)qs), m = _mm_set1_epi8(0x0f);
    *lo = _mm_shuffle_epi8(table, _mm_and_si128(v, m));
    *hi = _mm_shuffle_epi8(table, _mm_and_si128(_mm_srli_epi16(v, 4), m));
}
#endif

static inline fgg_mm_w32 fgg_mm_lut16(const uint8_t *qs, const int8_t lut[16], const fgg_mm_words words)
{
#if defined(FGG_MM_INT_SIMD)
    __m128i lo, hi;
    (void)words;
    fgg_mm_lut16_halves(_mm_loadu_si128((const __m128i *)lut), qs, &lo, &hi);
    return _mm256_set_m128i(hi, lo);
#elif FGG_HAVE_SSE2
    (void)lut;
    __m128i lo0, hi0, lo1, hi1;
    fgg_mm_sse_words8(qs, words, &lo0, &hi0);
    fgg_mm_sse_words8(qs + 8, words, &lo1, &hi1);
    fgg_mm_w32 u;  /* packus keeps the bytes (0..255 in each word) */
    _mm_storeu_si128((__m128i *)u.b, _mm_packus_epi16(lo0, lo1));
    _mm_storeu_si128((__m128i *)(u.b + 16), _mm_packus_epi16(hi0, hi1));
    return u;
#else
    (void)words;
    fgg_mm_w32 u;
    for (int i = 0; i < 16; i++) {
        u.b[i] = lut[qs[i] & 15];
        u.b[i + 16] = lut[qs[i] >> 4];
    }
    return u;
#endif
}

/* 16 bytes of nibble pairs and 32 fifth bits (bit i of qh for value i) as 32 values minus
 * ``offset`` (16 for Q5_0, 0 for Q5_1), in the order of fgg_mm_nibbles16. */
#if defined(FGG_MM_INT_SIMD)
/* Bit i of ``bits`` in place in byte i of the vector (byte i / 8 of bits masked with its bit i % 8). */
static inline __m256i fgg_mm_bit_bytes32(uint32_t bits)
{
    const __m256i spread = _mm256_setr_epi64x(0, 0x0101010101010101LL, 0x0202020202020202LL, 0x0303030303030303LL);
    return _mm256_and_si256(_mm256_shuffle_epi8(_mm256_set1_epi32((int)bits), spread),
                            _mm256_set1_epi64x((long long)0x8040201008040201ULL));
}

/* Bit i of ``bits`` as byte i of the vector: -1 where it is set, else 0. */
static inline __m256i fgg_mm_bits32(uint32_t bits)
{
    return _mm256_cmpeq_epi8(fgg_mm_bit_bytes32(bits), _mm256_set1_epi64x((long long)0x8040201008040201ULL));
}

/* v with the bytes whose bit is set in signs negated. */
static inline __m256i fgg_mm_signed32(__m256i v, uint32_t signs)
{
    const __m256i neg = fgg_mm_bits32(signs);
    return _mm256_sub_epi8(_mm256_xor_si256(v, neg), neg);
}
#elif FGG_HAVE_SSE2
/* fgg_mm_bits32 without pshufb: bit i of bits as byte i of m[0] (i < 16) or m[1], -1 or 0. */
static inline void fgg_mm_sse_bits32(uint32_t bits, __m128i m[2])
{
    const __m128i pick = _mm_set1_epi64x((long long)0x8040201008040201ULL);
    __m128i v = _mm_cvtsi32_si128((int)bits);
    v = _mm_unpacklo_epi8(v, v);
    v = _mm_unpacklo_epi16(v, v);  /* byte k of bits four times, k = 0..3 */
    const __m128i spread[2] = {_mm_unpacklo_epi32(v, v), _mm_unpackhi_epi32(v, v)};  /* eight times */
    for (int h = 0; h < 2; h++) m[h] = _mm_cmpeq_epi8(_mm_and_si128(spread[h], pick), pick);
}
#endif

static inline fgg_mm_w32 fgg_mm_fives32(const uint8_t *qs, uint32_t qh, int offset)
{
#if defined(FGG_MM_INT_SIMD)
    __m256i high = _mm256_and_si256(fgg_mm_bits32(qh), _mm256_set1_epi8(16));
    return _mm256_sub_epi8(_mm256_or_si256(fgg_mm_nibbles16(qs, 0), high), _mm256_set1_epi8((char)offset));
#elif FGG_HAVE_SSE2
    __m128i n[2], fifth[2];
    fgg_mm_sse_nibbles(qs, n);
    fgg_mm_sse_bits32(qh, fifth);
    fgg_mm_w32 u;
    for (int h = 0; h < 2; h++)
        _mm_storeu_si128((__m128i *)(u.b + 16 * h),
                         _mm_sub_epi8(_mm_or_si128(n[h], _mm_and_si128(fifth[h], _mm_set1_epi8(16))), _mm_set1_epi8((char)offset)));
    return u;
#else
    fgg_mm_w32 u = fgg_mm_nibbles16(qs, 0);
    for (int i = 0; i < 32; i++) u.b[i] = (int8_t)((u.b[i] | (int)(((qh >> i) & 1) << 4)) - offset);
    return u;
#endif
}

/* Run r of a Q1_0 block (f16 d, 16 bytes of bits): value 8k + j is +1 if bit j of byte k is set,
 * else -1; run r is bytes 4r .. 4r + 3. */
static inline fgg_mm_w32 fgg_mm_q1_0_run(const uint8_t *wb, int r)
{
    const uint32_t bits = fgg_load_u32le(wb + 2 + 4 * r);
#if defined(FGG_MM_INT_SIMD)
    const __m256i set = fgg_mm_bits32(bits);
    return _mm256_sub_epi8(_mm256_set1_epi8(-1), _mm256_add_epi8(set, set));  /* a set bit is -1: -1 - 2 (-1) = 1 */
#elif FGG_HAVE_SSE2
    __m128i set[2];
    fgg_mm_sse_bits32(bits, set);
    fgg_mm_w32 w;
    for (int h = 0; h < 2; h++) _mm_storeu_si128((__m128i *)(w.b + 16 * h), _mm_sub_epi8(_mm_set1_epi8(-1), _mm_add_epi8(set[h], set[h])));
    return w;
#else
    fgg_mm_w32 w;
    for (int i = 0; i < 32; i++) w.b[i] = (int8_t)(((bits >> i) & 1) ? 1 : -1);
    return w;
#endif
}

/* Q1_0's run r in the form fgg_mm_q1_0_dot takes: in the SIMD builds the bytes of x its values
 * negate (-1 where the bit is clear, else 0), one operation fewer than the values and none for
 * their magnitudes, all 1 (as ggml's own kernel takes them); in the portable build its values. */
static inline fgg_mm_w32 fgg_mm_q1_0_form(const uint8_t *wb, int r)
{
#if defined(FGG_MM_INT_SIMD)
    return _mm256_cmpeq_epi8(fgg_mm_bit_bytes32(fgg_load_u32le(wb + 2 + 4 * r)), _mm256_setzero_si256());
#else
    return fgg_mm_q1_0_run(wb, r);
#endif
}

/* Q1_0's lanes: fgg_mm_dot of its values and x (lane k: the sum of values 4k..4k + 3 times x's). */
static inline fgg_mm_lanes fgg_mm_q1_0_dot(fgg_mm_w32 form, const int8_t *xq)
{
#if defined(FGG_MM_INT_SIMD)
    const __m256i xv = _mm256_loadu_si256((const __m256i *)xq);
    const __m256i sx = _mm256_sub_epi8(_mm256_xor_si256(xv, form), form); /* |x| <= 127: negation is exact */
    return _mm256_madd_epi16(_mm256_maddubs_epi16(_mm256_set1_epi8(1), sx), _mm256_set1_epi16(1));
#else
    return fgg_mm_dot(form, xq);
#endif
}

/* Run r of a Q2_0 block (f16 d, 16 bytes of 2-bit codes): value 4k + j is bits 2j, 2j + 1 of byte k,
 * minus 1; run r is bytes 8r .. 8r + 7. */
static inline fgg_mm_w32 fgg_mm_q2_0_run(const uint8_t *wb, int r)
{
    const uint8_t *q = wb + 2 + 8 * r;
#if defined(FGG_MM_INT_SIMD)
    /* byte i of the vector: byte i / 4 of the run; then, kept at the positions with i % 4 = j, its
     * bits 2j, 2j + 1 (16-bit shifts: bits moved in from the next byte are masked off) */
    const __m256i b = _mm256_shuffle_epi8(_mm256_set1_epi64x((long long)fgg_load_u64le(q)),
                                          _mm256_setr_epi8(0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 2, 2, 3, 3, 3, 3,
                                                           4, 4, 4, 4, 5, 5, 5, 5, 6, 6, 6, 6, 7, 7, 7, 7));
    const __m256i at0 = _mm256_set1_epi32(0x00000003), at1 = _mm256_set1_epi32(0x00000300);
    const __m256i at2 = _mm256_set1_epi32(0x00030000), at3 = _mm256_set1_epi32(0x03000000);
    __m256i c = _mm256_or_si256(_mm256_and_si256(b, at0), _mm256_and_si256(_mm256_srli_epi16(b, 2), at1));
    c = _mm256_or_si256(c, _mm256_and_si256(_mm256_srli_epi16(b, 4), at2));
    c = _mm256_or_si256(c, _mm256_and_si256(_mm256_srli_epi16(b, 6), at3));
    return _mm256_sub_epi8(c, _mm256_set1_epi8(1));
#elif FGG_HAVE_SSE2
    /* the same steps on each byte of the run repeated 4 times: bytes 0..3, then 4..7 */
    const __m128i v = _mm_loadl_epi64((const __m128i *)q), twice = _mm_unpacklo_epi8(v, v);
    const __m128i b[2] = {_mm_unpacklo_epi16(twice, twice), _mm_unpackhi_epi16(twice, twice)};
    fgg_mm_w32 w;
    for (int h = 0; h < 2; h++) {
        __m128i c = _mm_or_si128(_mm_and_si128(b[h], _mm_set1_epi32(0x00000003)),
                                 _mm_and_si128(_mm_srli_epi16(b[h], 2), _mm_set1_epi32(0x00000300)));
        c = _mm_or_si128(c, _mm_and_si128(_mm_srli_epi16(b[h], 4), _mm_set1_epi32(0x00030000)));
        c = _mm_or_si128(c, _mm_and_si128(_mm_srli_epi16(b[h], 6), _mm_set1_epi32(0x03000000)));
        _mm_storeu_si128((__m128i *)(w.b + 16 * h), _mm_sub_epi8(c, _mm_set1_epi8(1)));
    }
    return w;
#else
    fgg_mm_w32 w;
    for (int i = 0; i < 32; i++) w.b[i] = (int8_t)(((q[i / 4] >> (2 * (i % 4))) & 3) - 1);
    return w;
#endif
}

/* NVFP4 (36 bytes per 64 values: 4 UE4M3 scales, one per 16 values, then 4 groups of 8 bytes of
 * E2M1 codes, group g's values 0..7 in its low nibbles and 8..15 in its high ones) against x per
 * 32: a block is two runs of 32, each two groups. A run's 32 values in order make lanes 0..3 of
 * its products the first group's and lanes 4..7 the second's, so each half of the 8 lanes gets its
 * own factor: acc[k] = acc[k] + (float)lane[k] * (s[k / 4] * d_x), s the group's scale. */
static inline fgg_mm_w32 fgg_mm_nvfp4_run(const uint8_t *codes)
{
#if defined(FGG_MM_INT_SIMD)
    const __m128i v = _mm_loadu_si128((const __m128i *)codes), m = _mm_set1_epi8(0x0f);
    const __m128i t = _mm_loadu_si128((const __m128i *)fgg_fp4_values);
    const __m128i lo = _mm_shuffle_epi8(t, _mm_and_si128(v, m)), hi = _mm_shuffle_epi8(t, _mm_and_si128(_mm_srli_epi16(v, 4), m));
    return _mm256_set_m128i(_mm_unpackhi_epi64(lo, hi), _mm_unpacklo_epi64(lo, hi));
#elif FGG_HAVE_SSE2
    fgg_mm_w32 u;  /* group g: its 8 low nibbles' values, then its 8 high ones' */
    for (int g = 0; g < 2; g++) {
        __m128i lo, hi;
        fgg_mm_sse_words8(codes + 8 * g, fgg_mm_fp4_words, &lo, &hi);
        _mm_storeu_si128((__m128i *)(u.b + 16 * g), _mm_packus_epi16(lo, hi));
    }
    return u;
#else
    fgg_mm_w32 u;
    for (int g = 0; g < 2; g++)
        for (int i = 0; i < 8; i++) {
            u.b[16 * g + i] = fgg_fp4_values[codes[8 * g + i] & 15];
            u.b[16 * g + 8 + i] = fgg_fp4_values[codes[8 * g + i] >> 4];
        }
    return u;
#endif
}

/* The two scales of a run (of its first and second 16 values). */
#if defined(FGG_MM_INT_SIMD)
typedef __m256 fgg_mm_scale2;
static inline fgg_mm_scale2 fgg_mm_scale2_set(float s0, float s1) { return _mm256_set_m128(_mm_set1_ps(s1), _mm_set1_ps(s0)); }

static inline fgg_mm_acc fgg_mm_acc_add2(fgg_mm_acc acc, fgg_mm_lanes l, fgg_mm_scale2 s, float dx)
{
    return _mm256_add_ps(acc, _mm256_mul_ps(_mm256_cvtepi32_ps(l), _mm256_mul_ps(s, _mm256_set1_ps(dx))));
}
#else
typedef struct { float v[2]; } fgg_mm_scale2;
static inline fgg_mm_scale2 fgg_mm_scale2_set(float s0, float s1)
{
    fgg_mm_scale2 s = {{s0, s1}};
    return s;
}

static inline fgg_mm_acc fgg_mm_acc_add2(fgg_mm_acc acc, fgg_mm_lanes l, fgg_mm_scale2 s, float dx)
{
#if FGG_HAVE_SSE2
    return fgg_mm_sse_acc_add(acc, l, s.v[0] * dx, s.v[1] * dx);
#endif
    for (int k = 0; k < 8; k++) {
        float p = (float)l.v[k] * (s.v[k / 4] * dx);
        acc.v[k] = acc.v[k] + p;
    }
    return acc;
}
#endif

/* Run r's two scales of an NVFP4 block. */
static inline fgg_mm_scale2 fgg_mm_nvfp4_scales(const uint8_t *wb, int r)
{
    return fgg_mm_scale2_set(fgg_ue4m3_half_f32[wb[2 * r]], fgg_ue4m3_half_f32[wb[2 * r + 1]]);
}

/* The types whose blocks are one or a few runs of 32 values under one float scale (against x
 * per 32); Q4_1 and Q5_1 add an offset m per block; NVFP4's runs have two scales each. */
enum { FGG_MM_B_Q8_0, FGG_MM_B_Q4_0, FGG_MM_B_Q5_0, FGG_MM_B_IQ4_NL, FGG_MM_B_MXFP4, FGG_MM_B_Q4_1, FGG_MM_B_Q5_1,
       FGG_MM_B_Q1_0, FGG_MM_B_Q2_0, FGG_MM_B_NVFP4 };

/* Runs of 32 per block: Q1_0's blocks are 128 values, Q2_0's and NVFP4's 64. */
FGG_MM_ALWAYS_INLINE int fgg_mm_b_runs(int kind)
{
    return kind == FGG_MM_B_Q1_0 ? 4 : (kind == FGG_MM_B_Q2_0 || kind == FGG_MM_B_NVFP4) ? 2 : 1;
}

/* Bytes per block. */
FGG_MM_ALWAYS_INLINE ptrdiff_t fgg_mm_b_bytes(int kind)
{
    switch (kind) {
    case FGG_MM_B_Q8_0: return 34;
    case FGG_MM_B_Q5_0: return 22;
    case FGG_MM_B_MXFP4: return 17;
    case FGG_MM_B_Q4_1: return 20;
    case FGG_MM_B_Q5_1: return 24;
    case FGG_MM_B_NVFP4: return 36;
    default: return 18;  /* Q4_0, IQ4_NL, Q1_0, Q2_0 */
    }
}

FGG_MM_ALWAYS_INLINE int fgg_mm_b_has_offset(int kind) { return kind == FGG_MM_B_Q4_1 || kind == FGG_MM_B_Q5_1; }

/* Block wb's scale and its 32 signed values:
 *   Q8_0   34 bytes: f16 d, 32 int8 q; value d * q
 *   Q4_0   18 bytes: f16 d, 16 bytes of nibbles; value d * (q - 8)
 *   Q5_0   22 bytes: f16 d, u32 qh (value i's fifth bit: bit i), 16 bytes of nibbles; d * (q - 16)
 *   IQ4_NL 18 bytes: f16 d, 16 bytes of nibbles; value d * iq4nl[q]
 *   MXFP4  17 bytes: E8M0 e, 16 bytes of nibbles; value 2^(e - 128) * fp4[q] (fp4: twice E2M1)
 *   Q4_1   20 bytes: f16 d, f16 m, 16 bytes of nibbles; value d * q + m
 *   Q5_1   24 bytes: f16 d, f16 m, u32 qh, 16 bytes of nibbles; value d * q + m
 *   Q1_0   18 bytes per 128 values: f16 d, 16 bytes of bits; value d * (+1 or -1)
 *   Q2_0   18 bytes per 64 values: f16 d, 16 bytes of 2-bit codes; value d * (q - 1)
 *   NVFP4  36 bytes per 64 values: see fgg_mm_nvfp4_run (its scales per run: fgg_mm_nvfp4_scales)
 * The scales are those of the types' dequantizers (kernels_legacy.pxi, kernels_iq.pxi). */
FGG_MM_ALWAYS_INLINE float fgg_mm_b_scale(int kind, const uint8_t *wb)
{
    return kind == FGG_MM_B_MXFP4 ? fgg_e8m0_half_f32[wb[0]] : fgg_half_to_float_scale(fgg_load_u16le(wb));
}

/* Where a block's codes start (its nibbles; Q8_0's bytes), where Q5_0's and Q5_1's 32 fifth bits
 * are, and the offset taken off Q4_0's and Q5_0's codes (the one-run kinds). */
FGG_MM_ALWAYS_INLINE int fgg_mm_b_codes_at(int kind)
{
    switch (kind) {
    case FGG_MM_B_MXFP4: return 1;
    case FGG_MM_B_Q4_1: return 4;
    case FGG_MM_B_Q5_0: return 6;
    case FGG_MM_B_Q5_1: return 8;
    default: return 2;  /* Q8_0, Q4_0, IQ4_NL */
    }
}

FGG_MM_ALWAYS_INLINE int fgg_mm_b_fifths_at(int kind) { return kind == FGG_MM_B_Q5_0 ? 2 : 4; }

FGG_MM_ALWAYS_INLINE int fgg_mm_b_code_offset(int kind) { return kind == FGG_MM_B_Q4_0 ? 8 : kind == FGG_MM_B_Q5_0 ? 16 : 0; }

/* c for the kernels that meet x with unsigned codes u, values v = u - c: Q4_0 8, Q5_0 16, MXFP4 12
 * (its table + 12, fgg_mm_fp4_unsigned), else 0 (Q4_1, Q5_1; Q8_0 and IQ4_NL keep their signs). */
FGG_MM_ALWAYS_INLINE int fgg_mm_b_unsigned_offset(int kind) { return kind == FGG_MM_B_MXFP4 ? 12 : fgg_mm_b_code_offset(kind); }

#if defined(FGG_MM_INT_SIMD)
/* MXFP4's value table plus 12 (0..24): its codes' unsigned values by pshufb. */
static inline __m128i fgg_mm_fp4_unsigned(void)
{
    return _mm_add_epi8(_mm_loadu_si128((const __m128i *)fgg_fp4_values), _mm_set1_epi8(12));
}

/* IQ4_NL's value table plus 128 (1..241): unsigned values for vpdpbusd only (maddubs' int16 pair
 * sums would saturate: 2 * 241 * 127 > 32767). */
static inline __m128i fgg_mm_iq4nl_unsigned(void)
{
    return _mm_add_epi8(_mm_loadu_si128((const __m128i *)fgg_iq4nl_values), _mm_set1_epi8((char)0x80));
}
#endif

FGG_MM_ALWAYS_INLINE fgg_mm_w32 fgg_mm_b_values(int kind, const uint8_t *wb, int r)
{
    const uint8_t *codes = wb + fgg_mm_b_codes_at(kind);
    switch (kind) {
    case FGG_MM_B_Q1_0: return fgg_mm_q1_0_run(wb, r);
    case FGG_MM_B_Q2_0: return fgg_mm_q2_0_run(wb, r);
    case FGG_MM_B_Q8_0: return fgg_mm_load32(codes);
    case FGG_MM_B_Q4_0:
    case FGG_MM_B_Q4_1: return fgg_mm_nibbles16(codes, fgg_mm_b_code_offset(kind));
    case FGG_MM_B_Q5_0:
    case FGG_MM_B_Q5_1:
        return fgg_mm_fives32(codes, fgg_load_u32le(wb + fgg_mm_b_fifths_at(kind)), fgg_mm_b_code_offset(kind));
    case FGG_MM_B_IQ4_NL: return fgg_mm_lut16(codes, fgg_iq4nl_values, fgg_mm_iq4nl_words);
    case FGG_MM_B_NVFP4: return fgg_mm_nvfp4_run(wb + 4 + 16 * r);
    default: return fgg_mm_lut16(codes, fgg_fp4_values, fgg_mm_fp4_words);
    }
}

/* Q4_1's and Q5_1's offset m (0 for the others). */
FGG_MM_ALWAYS_INLINE float fgg_mm_b_offset(int kind, const uint8_t *wb)
{
    return fgg_mm_b_has_offset(kind) ? fgg_half_to_float_scale(fgg_load_u16le(wb + 2)) : 0.0f;
}

/* One weight row of ``kind`` against NR (1 to 8) rows of x: each run unpacked once and met by the
 * NR rows; with NR a constant in the call, their accumulators stay in registers. With offsets
 * (Q4_1, Q5_1) each row also carries off = off + m * s block by block, one float, added to the
 * lanes' sum at the end. One body for two dot products (DOT): fgg_mm_dot here, vpdpbusd in the
 * VNNI kernels below. */
#define FGG_MM_ROWN_B(ROWN, ATTR, DOT)                                                                \
FGG_MM_ALWAYS_INLINE ATTR void ROWN(int kind, int NR, const uint8_t *w, ptrdiff_t nb, const fgg_mm_q8 *x, \
                                    ptrdiff_t xs, float *out, ptrdiff_t os)                           \
{                                                                                                     \
    const ptrdiff_t bytes = fgg_mm_b_bytes(kind);                                                     \
    const int runs = fgg_mm_b_runs(kind);                                                             \
    fgg_mm_acc acc[8];                                                                                \
    float off[8];                                                                                     \
    for (int i = 0; i < NR; i++) {                                                                    \
        acc[i] = fgg_mm_acc_zero();                                                                   \
        off[i] = 0.0f;                                                                                \
    }                                                                                                 \
    const uint8_t *wb = w;                                                                            \
    for (ptrdiff_t b = 0; b < nb; b++, wb += bytes) {                                                 \
        fgg_mm_prefetch_ahead(wb, bytes);                                                             \
        const float d = kind == FGG_MM_B_NVFP4 ? 0.0f : fgg_mm_b_scale(kind, wb);                     \
        fgg_mm_acc blk[8]; /* Q1_0, Q2_0: the block's runs against x's scales, then times d */        \
        for (int r = 0; r < runs; r++) {                                                              \
            const fgg_mm_w32 q = kind == FGG_MM_B_Q1_0 ? fgg_mm_q1_0_form(wb, r) : fgg_mm_b_values(kind, wb, r); \
            const fgg_mm_scale2 sc = kind == FGG_MM_B_NVFP4 ? fgg_mm_nvfp4_scales(wb, r)              \
                                                            : fgg_mm_scale2_set(0.0f, 0.0f);          \
            for (int i = 0; i < NR; i++) {                                                            \
                const fgg_mm_q8 *xb = x + i * xs + runs * b + r;                                      \
                const fgg_mm_lanes dot = kind == FGG_MM_B_Q1_0 ? fgg_mm_q1_0_dot(q, xb->q) : DOT(q, xb->q); \
                if (kind == FGG_MM_B_NVFP4)                                                           \
                    acc[i] = fgg_mm_acc_add2(acc[i], dot, sc, xb->d);                                 \
                else if (runs == 1)                                                                   \
                    acc[i] = fgg_mm_acc_add(acc[i], dot, d * xb->d);                                  \
                else                                                                                  \
                    blk[i] = r == 0 ? fgg_mm_acc_scaled(dot, xb->d) : fgg_mm_acc_add(blk[i], dot, xb->d); \
            }                                                                                         \
        }                                                                                             \
        if (runs > 1 && kind != FGG_MM_B_NVFP4)                                                       \
            for (int i = 0; i < NR; i++) acc[i] = fgg_mm_acc_addv(acc[i], blk[i], d);                 \
        if (fgg_mm_b_has_offset(kind)) {                                                              \
            const float mn = fgg_mm_b_offset(kind, wb);                                               \
            for (int i = 0; i < NR; i++) off[i] = off[i] + mn * x[i * xs + b].s;                      \
        }                                                                                             \
    }                                                                                                 \
    for (int i = 0; i < NR; i++)                                                                      \
        out[i * os] = fgg_mm_b_has_offset(kind) ? fgg_mm_acc_sum(acc[i]) + off[i] : fgg_mm_acc_sum(acc[i]); \
}

#if defined(FGG_MM_INT_SIMD) && defined(__AVX512BW__)
/* fgg_mm_rown_b on 512-bit vectors (the avx512 build) for the kinds whose values are codes u less
 * a constant c (Q4_0 8, Q5_0 16, MXFP4's table + 12, Q4_1 and Q5_1 0): blocks b and b + 1 side by
 * side, each laid out as fgg_mm_rown_b lays one block in 256 bits, so each gets the same 8 integer
 * lanes; their float steps (fgg_mm_acc_add, the offsets' off + m * s) then run in block order, so
 * the bits are the same. AVX-512 has no vpsignb: u meets x unsigned, less c times x (exact in
 * int16: |pair| <= 2 * 31 * 128). */
FGG_MM_ALWAYS_INLINE int fgg_mm_b512(int kind)
{
    return kind == FGG_MM_B_Q4_0 || kind == FGG_MM_B_Q4_1 || kind == FGG_MM_B_Q5_0 || kind == FGG_MM_B_Q5_1 ||
           kind == FGG_MM_B_MXFP4;
}

/* The 8 int32 lanes of each block of a pair, u * x less c * x, by maddubs and madd: x's share
 * (fgg_mm_b512_cx, maddubs(c, x)) made once per row of x, whatever the weight rows. */
FGG_MM_ALWAYS_INLINE __m512i fgg_mm_b512_cx(__m512i xq, __m512i cv, int c)
{
    return c ? _mm512_maddubs_epi16(cv, xq) : _mm512_setzero_si512();
}

FGG_MM_ALWAYS_INLINE __m512i fgg_mm_b512_lanes(__m512i u, __m512i xq, __m512i cx, int c)
{
    const __m512i p = _mm512_maddubs_epi16(u, xq);
    return _mm512_madd_epi16(c ? _mm512_sub_epi16(p, cx) : p, _mm512_set1_epi16(1));
}

/* Words a..a+7 twice (the low 256 bits), then b..b+7 twice: an index for vpermw. */
FGG_MM_ALWAYS_INLINE __m512i fgg_mm_b512_words(int a, int b)
{
    const __m512i i8 = _mm512_broadcast_i64x4(_mm256_setr_epi16(0, 1, 2, 3, 4, 5, 6, 7, 0, 1, 2, 3, 4, 5, 6, 7));
    return _mm512_add_epi16(i8, _mm512_inserti64x4(_mm512_castsi256_si512(_mm256_set1_epi16((short)a)),
                                                   _mm256_set1_epi16((short)b), 1));
}

/* NW (1 or 2) weight rows, w and the row after it (nb blocks each), against NR (1 to 4) rows of x:
 * out[i * os + j] for x row i and weight row j. Two weight rows share x's loads and its share of
 * the lanes, and their float steps are two chains. The kinds of even block size (all but MXFP4)
 * load a pair of blocks in one masked load and take its nibbles and both d by word permutes;
 * MXFP4 (17 bytes) joins two loads. One body, two lane functions (CX, LANES): maddubs here,
 * vpdpbusd in the VNNI kernels. */
#define FGG_MM_ROWN_B512_FN(NAME, ATTR, CX, LANES)                                                    \
FGG_MM_ALWAYS_INLINE ATTR void NAME(int kind, int NR, int NW, const uint8_t *w, ptrdiff_t nb,         \
                                    const fgg_mm_q8 *x, ptrdiff_t xs, float *out, ptrdiff_t os)       \
{                                                                                                     \
    const ptrdiff_t bytes = fgg_mm_b_bytes(kind), row_bytes = bytes * nb;                             \
    const int at = fgg_mm_b_codes_at(kind), fifths = kind == FGG_MM_B_Q5_0 || kind == FGG_MM_B_Q5_1;  \
    const int c = fgg_mm_b_unsigned_offset(kind), words = bytes % 2 == 0;                             \
    const __m512i m4 = _mm512_set1_epi8(15), cv = _mm512_set1_epi8((char)c);                          \
    /* 128-bit lanes: block b's nibbles twice, then b + 1's; the copies at odd lanes shifted by 4 */  \
    const __m512i twice = _mm512_setr_epi64(0, 1, 0, 1, 2, 3, 2, 3), shift = _mm512_setr_epi64(0, 0, 4, 4, 0, 0, 4, 4); \
    const __m512i code_words = fgg_mm_b512_words(at / 2, (int)(bytes + at) / 2);                      \
    const __m512i d_words = _mm512_zextsi256_si512(                                                   \
        _mm256_inserti128_si256(_mm256_setzero_si256(), _mm_set1_epi16((short)(bytes / 2)), 1));     \
    const __mmask64 pair = ((__mmask64)1 << (2 * bytes)) - 1;                                         \
    const __m512i fp4 = _mm512_broadcast_i32x4(fgg_mm_fp4_unsigned());                                 \
    fgg_mm_acc acc[2][4];                                                                             \
    float off[2][4];                                                                                  \
    for (int j = 0; j < NW; j++)                                                                      \
        for (int i = 0; i < NR; i++) {                                                                \
            acc[j][i] = fgg_mm_acc_zero();                                                            \
            off[j][i] = 0.0f;                                                                         \
        }                                                                                             \
    ptrdiff_t b = 0;                                                                                  \
    for (; b + 2 <= nb; b += 2) {                                                                     \
        __m512i u[2];                                                                                 \
        __m512 d2[2]; /* both blocks' d, each in its half */                                          \
        float mn[2][2];                                                                               \
        if (NW == 1)                                                                                  \
            fgg_mm_prefetch_ahead(w + bytes * b, 2 * bytes);                                          \
        else /* the next pair of rows, at the pace of this pair */                                   \
            fgg_mm_prefetch(w + 2 * row_bytes + 2 * bytes * b, 4 * bytes);                            \
        for (int j = 0; j < NW; j++) {                                                                \
            const uint8_t *wb = w + j * row_bytes + bytes * b;                                        \
            if (words) {                                                                              \
                const __m512i v = _mm512_maskz_loadu_epi8(pair, wb);                                  \
                u[j] = _mm512_and_si512(_mm512_srlv_epi64(_mm512_permutexvar_epi16(code_words, v), shift), m4); \
                d2[j] = _mm512_cvtph_ps(_mm512_castsi512_si256(_mm512_permutexvar_epi16(d_words, v))); \
            } else { /* MXFP4 */                                                                      \
                const __m256i n2 = _mm256_inserti128_si256(                                           \
                    _mm256_castsi128_si256(_mm_loadu_si128((const __m128i *)(wb + at))),              \
                    _mm_loadu_si128((const __m128i *)(wb + bytes + at)), 1);                          \
                u[j] = _mm512_and_si512(                                                              \
                    _mm512_srlv_epi64(_mm512_permutexvar_epi64(twice, _mm512_castsi256_si512(n2)), shift), m4); \
                d2[j] = _mm512_insertf32x8(_mm512_castps256_ps512(_mm256_set1_ps(fgg_mm_b_scale(kind, wb))), \
                                           _mm256_set1_ps(fgg_mm_b_scale(kind, wb + bytes)), 1);      \
            }                                                                                         \
            if (fifths) /* value i's fifth bit: bit i of the block's qh, so byte i of the pair: bit i of both */ \
                u[j] = _mm512_mask_add_epi8(u[j], (__mmask64)fgg_load_u32le(wb + fgg_mm_b_fifths_at(kind)) | \
                                                  (__mmask64)fgg_load_u32le(wb + bytes + fgg_mm_b_fifths_at(kind)) << 32, \
                                            u[j], _mm512_set1_epi8(16));                              \
            else if (kind == FGG_MM_B_MXFP4)                                                          \
                u[j] = _mm512_shuffle_epi8(fp4, u[j]);                                                \
            mn[j][0] = fgg_mm_b_offset(kind, wb);                                                     \
            mn[j][1] = fgg_mm_b_offset(kind, wb + bytes);                                             \
        }                                                                                             \
        for (int i = 0; i < NR; i++) {                                                                \
            const fgg_mm_q8 *xb = x + i * xs + b;                                                     \
            const __m512i xq = _mm512_inserti64x4(_mm512_castsi256_si512(_mm256_loadu_si256((const __m256i *)xb[0].q)), \
                                                  _mm256_loadu_si256((const __m256i *)xb[1].q), 1);   \
            const __m512 xd = _mm512_insertf32x8(_mm512_castps256_ps512(_mm256_set1_ps(xb[0].d)), _mm256_set1_ps(xb[1].d), 1); \
            const __m512i cx = CX(xq, cv, c);                                                         \
            for (int j = 0; j < NW; j++) {                                                            \
                /* lanes * (d * d_x), as fgg_mm_acc_add: block b's, then b + 1's */                   \
                const __m512 t = _mm512_mul_ps(_mm512_cvtepi32_ps(LANES(u[j], xq, cx, c)), _mm512_mul_ps(d2[j], xd)); \
                acc[j][i] = _mm256_add_ps(acc[j][i], _mm512_castps512_ps256(t));                     \
                acc[j][i] = _mm256_add_ps(acc[j][i], _mm512_extractf32x8_ps(t, 1));                  \
                if (fgg_mm_b_has_offset(kind)) {                                                      \
                    off[j][i] = off[j][i] + mn[j][0] * xb[0].s;                                       \
                    off[j][i] = off[j][i] + mn[j][1] * xb[1].s;                                       \
                }                                                                                     \
            }                                                                                         \
        }                                                                                             \
    }                                                                                                 \
    for (int j = 0; j < NW; j++) {                                                                    \
        if (b < nb) { /* an odd last block, as fgg_mm_rown_b */                                       \
            const uint8_t *wb = w + j * row_bytes + bytes * b;                                        \
            const fgg_mm_w32 q = fgg_mm_b_values(kind, wb, 0);                                        \
            const float d = fgg_mm_b_scale(kind, wb), m1 = fgg_mm_b_offset(kind, wb);                 \
            for (int i = 0; i < NR; i++) {                                                            \
                const fgg_mm_q8 *xb = x + i * xs + b;                                                 \
                acc[j][i] = fgg_mm_acc_add(acc[j][i], fgg_mm_dot(q, xb->q), d * xb->d);               \
                if (fgg_mm_b_has_offset(kind)) off[j][i] = off[j][i] + m1 * xb->s;                    \
            }                                                                                         \
        }                                                                                             \
        for (int i = 0; i < NR; i++)                                                                  \
            out[i * os + j] = fgg_mm_b_has_offset(kind) ? fgg_mm_acc_sum(acc[j][i]) + off[j][i]       \
                                                        : fgg_mm_acc_sum(acc[j][i]);                  \
    }                                                                                                 \
}
FGG_MM_ROWN_B512_FN(fgg_mm_rown_b512, , fgg_mm_b512_cx, fgg_mm_b512_lanes)

/* Two weight rows (w and the row after it) of a kind fgg_mm_b512 takes against m (1 to 4) rows
 * of x: out[i * os] and out[i * os + 1], each as the one-row kernel gives it. */
#define FGG_MM_ROWS2_B512(ATTR, NAME, ROWN512, KIND)                                                  \
ATTR void NAME(const uint8_t *w, ptrdiff_t nb, const fgg_mm_q8 *x, ptrdiff_t xs, int m, float *out, ptrdiff_t os) \
{                                                                                                     \
    switch (m) {                                                                                      \
    case 1: ROWN512(KIND, 1, 2, w, nb, x, xs, out, os); break;                                        \
    case 2: ROWN512(KIND, 2, 2, w, nb, x, xs, out, os); break;                                        \
    case 3: ROWN512(KIND, 3, 2, w, nb, x, xs, out, os); break;                                        \
    default: ROWN512(KIND, 4, 2, w, nb, x, xs, out, os); break;                                       \
    }                                                                                                 \
}
/* A prefix for FGG_MM_ROWS_B's cases of up to 4 rows of x: those kinds take ROWN512 (one weight row). */
#define FGG_MM_ROWN_B512(ROWN512, N)                                                                  \
    if (fgg_mm_b512(kind)) {                                                                          \
        ROWN512(kind, N, 1, w, nb, xr, xs, o, os);                                                    \
        break;                                                                                        \
    }
#else
#define FGG_MM_ROWN_B512(ROWN512, N)
#endif

/* m rows of x 8 at a time, then the rest up to 4 at a time, each count a constant. */
#define FGG_MM_ROWS_B(ROWS, ROWN, ROWN512, ATTR)                                                      \
FGG_MM_ALWAYS_INLINE ATTR void ROWS(int kind, const uint8_t *w, ptrdiff_t nb, const fgg_mm_q8 *x, ptrdiff_t xs, \
                                    int m, float *out, ptrdiff_t os)                                  \
{                                                                                                     \
    int r0 = 0;                                                                                       \
    for (; r0 + 8 <= m; r0 += 8) ROWN(kind, 8, w, nb, x + r0 * xs, xs, out + r0 * os, os);          \
    for (; r0 < m; r0 += 4) {                                                                         \
        const fgg_mm_q8 *xr = x + r0 * xs;                                                            \
        float *o = out + r0 * os;                                                                     \
        switch (m - r0 < 4 ? m - r0 : 4) {                                                            \
        case 4: FGG_MM_ROWN_B512(ROWN512, 4) ROWN(kind, 4, w, nb, xr, xs, o, os); break;              \
        case 3: FGG_MM_ROWN_B512(ROWN512, 3) ROWN(kind, 3, w, nb, xr, xs, o, os); break;              \
        case 2: FGG_MM_ROWN_B512(ROWN512, 2) ROWN(kind, 2, w, nb, xr, xs, o, os); break;              \
        default: FGG_MM_ROWN_B512(ROWN512, 1) ROWN(kind, 1, w, nb, xr, xs, o, os); break;             \
        }                                                                                             \
    }                                                                                                 \
}
FGG_MM_ROWN_B(fgg_mm_rown_b, , fgg_mm_dot)
#if defined(FGG_MM_INT_SIMD)
FGG_MM_ROWS_B(fgg_mm_rows_b, fgg_mm_rown_b, fgg_mm_rown_b512, )
#else
/* The portable build: 8 rows of x at a time, the count a variable (constant counts took 1.6-2x
 * the time at 2 and 3 rows in this build); one row with the count a constant. */
FGG_MM_ALWAYS_INLINE void fgg_mm_rows_b(int kind, const uint8_t *w, ptrdiff_t nb, const fgg_mm_q8 *x, ptrdiff_t xs,
                                        int m, float *out, ptrdiff_t os)
{
    if (m == 1) {
        fgg_mm_rown_b(kind, 1, w, nb, x, xs, out, os);
        return;
    }
    for (int r0 = 0; r0 < m; r0 += 8)
        fgg_mm_rown_b(kind, m - r0 < 8 ? m - r0 : 8, w, nb, x + r0 * xs, xs, out + r0 * os, os);
}
#endif

#define FGG_MM_B_ROWS(NAME, KIND) FGG_MM_NAMED_ROWS(static inline, NAME, fgg_mm_q8, fgg_mm_rows_b, KIND)
FGG_MM_B_ROWS(fgg_mm_rows_q8_0, FGG_MM_B_Q8_0)
FGG_MM_B_ROWS(fgg_mm_rows_q4_0, FGG_MM_B_Q4_0)
FGG_MM_B_ROWS(fgg_mm_rows_q5_0, FGG_MM_B_Q5_0)
FGG_MM_B_ROWS(fgg_mm_rows_iq4_nl, FGG_MM_B_IQ4_NL)
FGG_MM_B_ROWS(fgg_mm_rows_mxfp4, FGG_MM_B_MXFP4)
FGG_MM_B_ROWS(fgg_mm_rows_q4_1, FGG_MM_B_Q4_1)
FGG_MM_B_ROWS(fgg_mm_rows_q5_1, FGG_MM_B_Q5_1)
FGG_MM_B_ROWS(fgg_mm_rows_q1_0, FGG_MM_B_Q1_0)
FGG_MM_B_ROWS(fgg_mm_rows_q2_0, FGG_MM_B_Q2_0)
FGG_MM_B_ROWS(fgg_mm_rows_nvfp4, FGG_MM_B_NVFP4)
#undef FGG_MM_B_ROWS

/* Two weight rows at a time (kernels_matmul.pxi's INT_ROWS2): the avx512 build by fgg_mm_rown_b512
 * with NW = 2 for Q4_0, Q4_1 and MXFP4 (the Q5 kinds measured no faster there), the avx2 build by
 * fgg_mm_rown2_b_avx2 for those and Q5_0, Q5_1; the avx512 build has the latter too, as
 * fgg_mm_rows2_*_256, for CPUs that split 512-bit operations in halves (Zen 4: Q4_0
 * from memory, 2 threads, 24.4 GB/s by fgg_mm_rown_b512, 29.1 by fgg_mm_rown2_b_avx2), and on
 * VNNI CPUs as fgg_mm_rows2_*_256_vnni (vpdpbusd in place of maddubs, subtract and madd: 1 row of
 * x, 4096 x 4096 from memory, 2 threads, Q4_0 26.5 -> 30.8 GB/s, Q5_0 25.5 -> 28.8, Q4_1 18.7 ->
 * 22.2, MXFP4 29.2 -> 32.0, Q5_1 1.06x; 2 rows 1.06-1.26x), IQ4_NL too there (against its VNNI
 * row kernel, one thread 11.4 -> 14.6 GB/s, 2 threads 18.4-21.4 -> 25.6-27.9). In the portable
 * build FGG_MM_HAVE_ROWS2 is 0; names a build lacks stand for the one-row kernels (or the build's
 * own two-row ones), never called as such. */
#if defined(FGG_MM_INT_SIMD)
/* 256-bit vectors (the avx2 build, and the avx512 build on CPUs that split 512-bit operations:
 * kernels_matmul.pxi's _wide_on): two weight rows (w and the row after it) of Q4_0, Q4_1, Q5_0,
 * Q5_1, MXFP4 (or, by vpdpbusd, IQ4_NL) against NR (1 to 4) rows of x, out[i * os + j]. As
 * fgg_mm_rown_b512, the codes u (MXFP4's and IQ4_NL's by a table of unsigned values) meet x
 * unsigned and x's share c * x (maddubs(c, x), once per row of x) is taken off: the same int16
 * pair sums as the sign trick of fgg_mm_dot (|pair| <= 2 * 31 * 127), so the same lanes;
 * each row's float steps are fgg_mm_rown_b's. One body, two lane functions (CX, LANES): maddubs
 * here, vpdpbusd in the VNNI kernels. */
/* The lanes by maddubs and madd (x's share: maddubs(c, x), taken off the int16 pair sums). */
FGG_MM_ALWAYS_INLINE __m256i fgg_mm_b256_cx(__m256i xq, __m256i cv, int c)
{
    return c ? _mm256_maddubs_epi16(cv, xq) : _mm256_setzero_si256();
}

FGG_MM_ALWAYS_INLINE __m256i fgg_mm_b256_lanes(__m256i u, __m256i xq, __m256i cx, int c)
{
    const __m256i p = _mm256_maddubs_epi16(u, xq);
    return _mm256_madd_epi16(c ? _mm256_sub_epi16(p, cx) : p, _mm256_set1_epi16(1));
}

#define FGG_MM_ROWN2_B256_FN(NAME, ATTR, CX, LANES)                                                   \
FGG_MM_ALWAYS_INLINE ATTR void NAME(int kind, int NR, const uint8_t *w, ptrdiff_t nb, const fgg_mm_q8 *x, \
                                    ptrdiff_t xs, float *out, ptrdiff_t os)                           \
{                                                                                                     \
    const ptrdiff_t bytes = fgg_mm_b_bytes(kind), row_bytes = bytes * nb;                             \
    const int c = kind == FGG_MM_B_IQ4_NL ? 128 : fgg_mm_b_unsigned_offset(kind);                     \
    const __m256i cv = _mm256_set1_epi8((char)c);                                                     \
    const __m256i table = _mm256_broadcastsi128_si256(kind == FGG_MM_B_IQ4_NL ? fgg_mm_iq4nl_unsigned() \
                                                                              : fgg_mm_fp4_unsigned()); \
    fgg_mm_acc acc[2][4];                                                                             \
    float off[2][4];                                                                                  \
    for (int j = 0; j < 2; j++)                                                                       \
        for (int i = 0; i < NR; i++) {                                                                \
            acc[j][i] = fgg_mm_acc_zero();                                                            \
            off[j][i] = 0.0f;                                                                         \
        }                                                                                             \
    for (ptrdiff_t b = 0; b < nb; b++) {                                                              \
        fgg_mm_prefetch(w + 2 * row_bytes + 2 * bytes * b, 2 * bytes); /* the next pair of rows, at this pair's pace */ \
        __m256i u[2];                                                                                 \
        float d[2], mn[2];                                                                            \
        for (int j = 0; j < 2; j++) {                                                                 \
            const uint8_t *wb = w + j * row_bytes + bytes * b;                                        \
            u[j] = kind == FGG_MM_B_Q5_0 || kind == FGG_MM_B_Q5_1                                     \
                       ? fgg_mm_fives32(wb + fgg_mm_b_codes_at(kind), fgg_load_u32le(wb + fgg_mm_b_fifths_at(kind)), 0) \
                       : fgg_mm_nibbles16(wb + fgg_mm_b_codes_at(kind), 0);                           \
            if (kind == FGG_MM_B_MXFP4 || kind == FGG_MM_B_IQ4_NL) u[j] = _mm256_shuffle_epi8(table, u[j]); \
            d[j] = fgg_mm_b_scale(kind, wb);                                                          \
            mn[j] = fgg_mm_b_offset(kind, wb);                                                        \
        }                                                                                             \
        for (int i = 0; i < NR; i++) {                                                                \
            const fgg_mm_q8 *xb = x + i * xs + b;                                                     \
            const __m256i xq = _mm256_loadu_si256((const __m256i *)xb->q);                            \
            const __m256i cx = CX(xq, cv, c);                                                         \
            for (int j = 0; j < 2; j++) {                                                             \
                acc[j][i] = fgg_mm_acc_add(acc[j][i], LANES(u[j], xq, cx, c), d[j] * xb->d);          \
                if (fgg_mm_b_has_offset(kind)) off[j][i] = off[j][i] + mn[j] * xb->s;                 \
            }                                                                                         \
        }                                                                                             \
    }                                                                                                 \
    for (int j = 0; j < 2; j++)                                                                       \
        for (int i = 0; i < NR; i++)                                                                  \
            out[i * os + j] = fgg_mm_b_has_offset(kind) ? fgg_mm_acc_sum(acc[j][i]) + off[j][i] : fgg_mm_acc_sum(acc[j][i]); \
}
FGG_MM_ROWN2_B256_FN(fgg_mm_rown2_b_avx2, , fgg_mm_b256_cx, fgg_mm_b256_lanes)

/* m (1 to 4) rows of x, NR_MAX at a time: 2 in the avx2 build (16 registers hold two rows'
 * accumulators for two weight rows), 4 in the VNNI kernels (AVX-512's 32 registers; one thread,
 * 8192 x 4096 from memory, against 2 at a time: Q4_0 2.92 -> 2.52 ms at 3 rows, 3.66 -> 3.11 at 4;
 * Q4_1 3.39 -> 2.93, 4.19 -> 3.54). */
#define FGG_MM_ROWS2_B_AVX2(NAME, KIND) FGG_MM_ROWS2_B256(static inline, NAME, fgg_mm_rown2_b_avx2, KIND, 2)
#define FGG_MM_ROWS2_B256(ATTR, NAME, ROWN2, KIND, NR_MAX)                                            \
ATTR void NAME(const uint8_t *w, ptrdiff_t nb, const fgg_mm_q8 *x, ptrdiff_t xs, int m, float *out, ptrdiff_t os) \
{                                                                                                     \
    for (int r0 = 0; r0 < m; r0 += NR_MAX) {                                                          \
        const fgg_mm_q8 *xr = x + r0 * xs;                                                            \
        float *o = out + r0 * os;                                                                     \
        switch (m - r0 < NR_MAX ? m - r0 : NR_MAX) {                                                  \
        case 4: if (NR_MAX == 4) { ROWN2(KIND, 4, w, nb, xr, xs, o, os); } break;                     \
        case 3: if (NR_MAX == 4) { ROWN2(KIND, 3, w, nb, xr, xs, o, os); } break;                     \
        case 2: ROWN2(KIND, 2, w, nb, xr, xs, o, os); break;                                          \
        default: ROWN2(KIND, 1, w, nb, xr, xs, o, os); break;                                         \
        }                                                                                             \
    }                                                                                                 \
}
#endif
#if defined(FGG_MM_INT_SIMD) && defined(__AVX512BW__)
#define FGG_MM_HAVE_ROWS2 1
FGG_MM_ROWS2_B512(static inline, fgg_mm_rows2_q4_0, fgg_mm_rown_b512, FGG_MM_B_Q4_0)
FGG_MM_ROWS2_B512(static inline, fgg_mm_rows2_q4_1, fgg_mm_rown_b512, FGG_MM_B_Q4_1)
FGG_MM_ROWS2_B512(static inline, fgg_mm_rows2_mxfp4, fgg_mm_rown_b512, FGG_MM_B_MXFP4)
FGG_MM_ROWS2_B_AVX2(fgg_mm_rows2_q4_0_256, FGG_MM_B_Q4_0)
FGG_MM_ROWS2_B_AVX2(fgg_mm_rows2_q4_1_256, FGG_MM_B_Q4_1)
FGG_MM_ROWS2_B_AVX2(fgg_mm_rows2_mxfp4_256, FGG_MM_B_MXFP4)
FGG_MM_ROWS2_B_AVX2(fgg_mm_rows2_q5_0_256, FGG_MM_B_Q5_0)
FGG_MM_ROWS2_B_AVX2(fgg_mm_rows2_q5_1_256, FGG_MM_B_Q5_1)
#elif defined(FGG_MM_INT_SIMD)
#define FGG_MM_HAVE_ROWS2 1
FGG_MM_ROWS2_B_AVX2(fgg_mm_rows2_q4_0, FGG_MM_B_Q4_0)
FGG_MM_ROWS2_B_AVX2(fgg_mm_rows2_q4_1, FGG_MM_B_Q4_1)
FGG_MM_ROWS2_B_AVX2(fgg_mm_rows2_mxfp4, FGG_MM_B_MXFP4)
FGG_MM_ROWS2_B_AVX2(fgg_mm_rows2_q5_0, FGG_MM_B_Q5_0)
FGG_MM_ROWS2_B_AVX2(fgg_mm_rows2_q5_1, FGG_MM_B_Q5_1)
#define fgg_mm_rows2_q4_0_256 fgg_mm_rows2_q4_0
#define fgg_mm_rows2_q4_1_256 fgg_mm_rows2_q4_1
#define fgg_mm_rows2_mxfp4_256 fgg_mm_rows2_mxfp4
#define fgg_mm_rows2_q5_0_256 fgg_mm_rows2_q5_0
#define fgg_mm_rows2_q5_1_256 fgg_mm_rows2_q5_1
#else
#define FGG_MM_HAVE_ROWS2 0
#define fgg_mm_rows2_q5_0 fgg_mm_rows_q5_0
#define fgg_mm_rows2_q5_1 fgg_mm_rows_q5_1
#define fgg_mm_rows2_q4_0 fgg_mm_rows_q4_0
#define fgg_mm_rows2_q4_1 fgg_mm_rows_q4_1
#define fgg_mm_rows2_mxfp4 fgg_mm_rows_mxfp4
#define fgg_mm_rows2_q4_0_256 fgg_mm_rows2_q4_0
#define fgg_mm_rows2_q4_1_256 fgg_mm_rows2_q4_1
#define fgg_mm_rows2_mxfp4_256 fgg_mm_rows2_mxfp4
#define fgg_mm_rows2_q5_0_256 fgg_mm_rows2_q5_0
#define fgg_mm_rows2_q5_1_256 fgg_mm_rows2_q5_1
#endif
#undef FGG_MM_ROWS2_B_AVX2

/* ------------------------------------------------------------------------------------------ */
/* K-quants (Q2_K to Q6_K) and the 256-value IQ types with grids or tables: x per 256          */

/* x quantized for the K-quant and 256-value IQ kernels: per 256 values one float scale d and
 * 256 int8 q, x ~ d * q, and bsum[g] = the sum of q[16g .. 16g + 15] (the weights' offsets and
 * mins are per 16 or 32 values: their share of the dot product is bsum times an integer). */
typedef struct {
    float d;
    int16_t bsum[16];
    int8_t q[256];
} fgg_mm_q8k;

/* Quantize n (a multiple of 256) floats of x into n / 256 super-blocks: the rounding of
 * fgg_mm_quantize_x8 with one scale per 256 (|q| <= 127, so |bsum| <= 2032). */
static inline void fgg_mm_quantize_x8k(const float *x, ptrdiff_t n, fgg_mm_q8k *out)
{
    for (ptrdiff_t b = 0; b < n / 256; b++) {
        out[b].d = fgg_mm_round_x(x + b * 256, 256, out[b].q);
        for (int g = 0; g < 16; g++) {
            int32_t sum = 0;
            for (int i = 16 * g; i < 16 * g + 16; i++) sum += out[b].q[i];
            out[b].bsum[g] = (int16_t)sum;
        }
    }
}

/* A weight super-block unpacked for the integer sums: u[j] = the 32 values of sub-block j as
 * bytes 0..63 (unsigned: offsets and mins are left to the bsum term), sc[g] = the int16 scale
 * of values 16g..16g+15, bs[g] = the factor of x's bsum[g] (Q2_K, Q4_K, Q5_K: the min; Q3_K:
 * 4 * scale, Q6_K: 32 * scale, the offsets of their values).
 *
 * The sums, one super-block against one row of x: 8 int32 lanes, lane k holding, over all 8
 * sub-blocks j, sc * (the products of bytes 4k..4k+3 of u[j] with x) — each half of 16 bytes
 * with its own sc — and apart from it lane k of the bsum term, bs[2k] * bsum[2k] +
 * bs[2k+1] * bsum[2k+1]. All exact integers (|lane| < 2^26), in any order. Then once per
 * super-block and row, in float32, the lanes' integer total times d_w * d_x is added to one
 * float (fgg_mm_kacc_add), so how the lanes split the total does not change the bits (the
 * portable build's SSE2 loop puts other products in each lane). The SIMD builds (maddubs, then
 * madd with the scales; madd of the bsums with bs) and the portable loop compute these totals. */
#if defined(FGG_MM_INT_SIMD)
typedef struct {
    __m256i u[8];
    __m256i sc[8]; /* sub-block j: sc[2j] in the 8 int16 of the low half, sc[2j+1] in the high */
    __m256i bs;    /* 16 int16 */
    __m256i v[8];  /* the signed types (fgg_mm_k_signed): the signed values, u their magnitudes */
} fgg_mm_ksb;

/* Lane k: sum over sub-blocks of sc * (bytes 4k..4k+3 of u times x). */
static inline __m256i fgg_mm_ksb_dot(const fgg_mm_ksb *s, const int8_t *xq)
{
    __m256i l = _mm256_setzero_si256();
    for (int j = 0; j < 8; j++) {
        __m256i p = _mm256_maddubs_epi16(s->u[j], _mm256_loadu_si256((const __m256i *)(xq + 32 * j)));
        l = _mm256_add_epi32(l, _mm256_madd_epi16(p, s->sc[j]));
    }
    return l;
}

/* fgg_mm_ksb_dot of a signed type: u times x with v's signs moved onto x. */
static inline __m256i fgg_mm_ksb_dot_signed(const fgg_mm_ksb *s, const int8_t *xq)
{
    __m256i l = _mm256_setzero_si256();
    for (int j = 0; j < 8; j++) {
        __m256i sx = _mm256_sign_epi8(_mm256_loadu_si256((const __m256i *)(xq + 32 * j)), s->v[j]);
        l = _mm256_add_epi32(l, _mm256_madd_epi16(_mm256_maddubs_epi16(s->u[j], sx), s->sc[j]));
    }
    return l;
}

/* fgg_mm_ksb_dot for 8 rows of x at once (row i at x + i * xs): each sub-block's bytes and
 * scales are loaded once for the 8 rows, where a row at a time loads them 8 times (loads, not
 * products, bound that loop). The same integer sums, so the same lanes. */
FGG_MM_ALWAYS_INLINE void fgg_mm_ksb_dot8(const fgg_mm_ksb *s, const fgg_mm_q8k *x, ptrdiff_t xs, int is_signed,
                                          __m256i lanes[8])
{
    for (int i = 0; i < 8; i++) lanes[i] = _mm256_setzero_si256();
    for (int j = 0; j < 8; j++) {
        __m256i u = s->u[j], sc = s->sc[j];
        for (int i = 0; i < 8; i++) {
            __m256i xv = _mm256_loadu_si256((const __m256i *)(x[i * xs].q + 32 * j));
            /* v is read only for the signed kinds, the only ones whose unpacking sets it */
            __m256i p = _mm256_maddubs_epi16(u, is_signed ? _mm256_sign_epi8(xv, s->v[j]) : xv);
            lanes[i] = _mm256_add_epi32(lanes[i], _mm256_madd_epi16(p, sc));
        }
    }
}

/* Lane k: bs[2k] * bsum[2k] + bs[2k+1] * bsum[2k+1]. */
static inline __m256i fgg_mm_ksb_bsum(const fgg_mm_ksb *s, const int16_t *bsum)
{
    return _mm256_madd_epi16(_mm256_loadu_si256((const __m256i *)bsum), s->bs);
}

static inline __m256i fgg_mm_lanes_sub(__m256i a, __m256i b) { return _mm256_sub_epi32(a, b); }

/* Row a: the bytes of word 2a repeated in the low 16 bytes, of word 2a + 1 in the high 16. */
static const int8_t fgg_mm_word_pick[4][32] = {
    {0, 1, 0, 1, 0, 1, 0, 1, 0, 1, 0, 1, 0, 1, 0, 1, 2, 3, 2, 3, 2, 3, 2, 3, 2, 3, 2, 3, 2, 3, 2, 3},
    {4, 5, 4, 5, 4, 5, 4, 5, 4, 5, 4, 5, 4, 5, 4, 5, 6, 7, 6, 7, 6, 7, 6, 7, 6, 7, 6, 7, 6, 7, 6, 7},
    {8, 9, 8, 9, 8, 9, 8, 9, 8, 9, 8, 9, 8, 9, 8, 9, 10, 11, 10, 11, 10, 11, 10, 11, 10, 11, 10, 11, 10, 11, 10, 11},
    {12, 13, 12, 13, 12, 13, 12, 13, 12, 13, 12, 13, 12, 13, 12, 13, 14, 15, 14, 15, 14, 15, 14, 15, 14, 15, 14, 15,
     14, 15, 14, 15},
};

/* Sub-block j's scale vector from the 16-byte halves lo (sub-blocks 0-3) and hi (4-7) broadcast
 * to both lanes: the fgg_mm_ksb sc[j] of fgg_mm_ksb_scales. */
static inline __m256i fgg_mm_sub_scale(__m256i lo, __m256i hi, int j)
{
    return _mm256_shuffle_epi8(j < 4 ? lo : hi, _mm256_loadu_si256((const __m256i *)fgg_mm_word_pick[j % 4]));
}

/* Broadcast the int16 scales: sub-block j takes word 2j of ``lo8`` (or of ``hi8`` for j >= 4,
 * words 2j - 8) in its low half and the next word in its high half. */
static inline void fgg_mm_ksb_scales(fgg_mm_ksb *s, __m128i lo8, __m128i hi8)
{
    __m256i lo = _mm256_broadcastsi128_si256(lo8), hi = _mm256_broadcastsi128_si256(hi8);
    for (int j = 0; j < 8; j++) s->sc[j] = fgg_mm_sub_scale(lo, hi, j);
}
#else
typedef struct {
    fgg_mm_w32 u[8];
    int16_t sc[16];
    int16_t bs[16];
    int16_t ws[256]; /* u times its scale (|.| <= 63 * 128): the row loop is then one plain dot */
} fgg_mm_ksb;

static inline fgg_mm_lanes fgg_mm_ksb_dot(const fgg_mm_ksb *s, const int8_t *xq)
{
#if FGG_HAVE_SSE2
    /* SSE2's madd of 16-bit pairs: x widened to int16, each lane a sum of pairs of products
     * (|lane| < 2^26); other lanes than below, the same total, which is all the K kinds use */
    __m128i a0 = _mm_setzero_si128(), a1 = _mm_setzero_si128();
    for (int i = 0; i < 256; i += 16) {
        __m128i xv = _mm_loadu_si128((const __m128i *)(xq + i));
        __m128i x0 = _mm_srai_epi16(_mm_unpacklo_epi8(xv, xv), 8), x1 = _mm_srai_epi16(_mm_unpackhi_epi8(xv, xv), 8);
        a0 = _mm_add_epi32(a0, _mm_madd_epi16(_mm_loadu_si128((const __m128i *)(s->ws + i)), x0));
        a1 = _mm_add_epi32(a1, _mm_madd_epi16(_mm_loadu_si128((const __m128i *)(s->ws + i + 8)), x1));
    }
    fgg_mm_lanes sl;
    _mm_storeu_si128((__m128i *)sl.v, a0);
    _mm_storeu_si128((__m128i *)(sl.v + 4), a1);
    return sl;
#endif
    /* per byte position over the 8 sub-blocks, folded into the lanes at the end: the same
     * integers in a loop the compiler vectorizes */
    int32_t a[32];
    for (int i = 0; i < 32; i++) a[i] = 0;
    for (int j = 0; j < 8; j++)
        for (int i = 0; i < 32; i++) a[i] += s->ws[32 * j + i] * xq[32 * j + i];
    fgg_mm_lanes l;
    for (int k = 0; k < 8; k++) l.v[k] = (a[4 * k] + a[4 * k + 1]) + (a[4 * k + 2] + a[4 * k + 3]);
    return l;
}

static inline fgg_mm_lanes fgg_mm_ksb_bsum(const fgg_mm_ksb *s, const int16_t *bsum)
{
    fgg_mm_lanes l;
    for (int k = 0; k < 8; k++) l.v[k] = s->bs[2 * k] * bsum[2 * k] + s->bs[2 * k + 1] * bsum[2 * k + 1];
    return l;
}

static inline fgg_mm_lanes fgg_mm_lanes_sub(fgg_mm_lanes a, fgg_mm_lanes b)
{
    for (int k = 0; k < 8; k++) a.v[k] -= b.v[k];
    return a;
}
#endif

/* Q2_K .. Q6_K, TQ2_0 and TQ1_0 (unsigned fields, their offsets and mins taken from x's sums),
 * and the 256-value IQ types, whose runs of 32 have integer scales under one float (their values
 * signed: fgg_mm_k_signed). */
enum {
    FGG_MM_K2 = 2, FGG_MM_K3 = 3, FGG_MM_K4 = 4, FGG_MM_K5 = 5, FGG_MM_K6 = 6,
    FGG_MM_K_IQ2_XXS = 7, FGG_MM_K_IQ3_XXS = 8, FGG_MM_K_IQ3_S = 9, FGG_MM_K_IQ4_XS = 10,
    FGG_MM_K_IQ2_XS = 11, FGG_MM_K_IQ2_S = 12, FGG_MM_K_IQ1_S = 13, FGG_MM_K_IQ1_M = 14, FGG_MM_K_TQ2_0 = 15,
    FGG_MM_K_TQ1_0 = 16
};

/* Q4_K scales and mins: 12 bytes packing eight 6-bit scales and eight 6-bit mins, unpacked as
 * four little-endian words: sc[0..3], sc[4..7], mn[0..3], mn[4..7] (a byte each). */
static inline void fgg_mm_k4_scales(const uint8_t *s, uint32_t out[4])
{
    uint32_t s0 = fgg_load_u32le(s), s1 = fgg_load_u32le(s + 4), s2 = fgg_load_u32le(s + 8);
    out[0] = s0 & 0x3f3f3f3fu;
    out[1] = (s2 & 0x0f0f0f0fu) | (((s0 >> 6) & 0x03030303u) << 4);
    out[2] = s1 & 0x3f3f3f3fu;
    out[3] = ((s2 >> 4) & 0x0f0f0f0fu) | (((s1 >> 6) & 0x03030303u) << 4);
}

#if defined(FGG_MM_INT_SIMD)
/* fgg_mm_k4_scales's four words in one vector, from the 16 bytes at s (12 of scales, then 4 of
 * the block's other bytes). */
FGG_MM_ALWAYS_INLINE __m128i fgg_mm_k4_scales128(const uint8_t *s)
{
    const __m128i v = _mm_loadu_si128((const __m128i *)s); /* s0 s1 s2 - */
    /* s0 & 0x3f.., s2 & 0x0f.., s1 & 0x3f.., (s2 >> 4) & 0x0f.. */
    const __m128i a = _mm_and_si128(_mm_srlv_epi32(_mm_shuffle_epi32(v, _MM_SHUFFLE(2, 1, 2, 0)), _mm_setr_epi32(0, 0, 0, 4)),
                                    _mm_setr_epi32(0x3f3f3f3f, 0x0f0f0f0f, 0x3f3f3f3f, 0x0f0f0f0f));
    /* the top 2 bits of s0's and s1's bytes, as bits 4-5 of words 1 and 3 */
    const __m128i b = _mm_and_si128(_mm_srli_epi32(_mm_shuffle_epi32(v, _MM_SHUFFLE(1, 1, 0, 0)), 2),
                                    _mm_setr_epi32(0, 0x30303030, 0, 0x30303030));
    return _mm_or_si128(a, b);
}
#endif

/* Q3_K's sixteen 6-bit scales (12 bytes at wb + 96) as four little-endian words, a byte each
 * (scale g in byte g & 3 of word g >> 2), before the offset of 32. */
static inline void fgg_mm_q3_k_scale_words(const uint8_t *wb, uint32_t words[4])
{
    const uint8_t *p = wb + 96;
    uint32_t a0 = fgg_load_u32le(p), a1 = fgg_load_u32le(p + 4), a2 = fgg_load_u32le(p + 8);
    words[0] = (a0 & 0x0f0f0f0fu) | ((a2 & 0x03030303u) << 4);
    words[1] = (a1 & 0x0f0f0f0fu) | (((a2 >> 2) & 0x03030303u) << 4);
    words[2] = ((a0 >> 4) & 0x0f0f0f0fu) | (((a2 >> 4) & 0x03030303u) << 4);
    words[3] = ((a1 >> 4) & 0x0f0f0f0fu) | (((a2 >> 6) & 0x03030303u) << 4);
}

#if defined(FGG_MM_INT_SIMD)
/* Q4_K's min bytes 8..15 (fgg_mm_k4_scales) as the words of x's 16 sums per 16 (two per min). */
static const int8_t fgg_mm_k4_min_pick[32] = {
    8, -128, 8, -128, 9, -128, 9, -128, 10, -128, 10, -128, 11, -128, 11, -128,
    12, -128, 12, -128, 13, -128, 13, -128, 14, -128, 14, -128, 15, -128, 15, -128,
};

/* Q4_K's and Q5_K's bs (see fgg_mm_k_scales) from fgg_mm_k4_scales128's bytes in both lanes. */
FGG_MM_ALWAYS_INLINE __m256i fgg_mm_k4_bs(__m256i b8)
{
    return _mm256_shuffle_epi8(b8, _mm256_loadu_si256((const __m256i *)fgg_mm_k4_min_pick));
}

/* The int16 scales of super-block wb of an unsigned kind (Q2_K .. Q6_K, the ternary types) as
 * fgg_mm_sub_scale takes them: lo the words of sub-blocks 0-3, hi those of 4-7 (word 2j scales
 * the first 16 values of sub-block j, 2j + 1 the next 16), each 16 bytes in both lanes; returned:
 * bs, the factors of x's 16 sums per 16 (the mins, or the offsets times the scales). The values
 * the portable unpackers put in sc and bs. */
FGG_MM_ALWAYS_INLINE __m256i fgg_mm_k_scales(int kind, const uint8_t *wb, __m256i *lo, __m256i *hi)
{
    __m128i lo8, hi8;
    __m256i bs;
    if (kind == FGG_MM_K4 || kind == FGG_MM_K5) { /* a scale and a min per 32: each word twice */
        __m128i b8 = fgg_mm_k4_scales128(wb + 4);
        __m128i sc8 = _mm_cvtepu8_epi16(b8);
        lo8 = _mm_unpacklo_epi16(sc8, sc8);
        hi8 = _mm_unpackhi_epi16(sc8, sc8);
        bs = fgg_mm_k4_bs(_mm256_broadcastsi128_si256(b8));
    } else {
        __m128i sv; /* an int8 scale per 16 */
        if (kind == FGG_MM_K2) { /* low nibbles the scales, high nibbles the mins */
            __m128i packed = _mm_loadu_si128((const __m128i *)wb), m4 = _mm_set1_epi8(15);
            sv = _mm_and_si128(packed, m4);
            bs = _mm256_cvtepu8_epi16(_mm_and_si128(_mm_srli_epi16(packed, 4), m4));
        } else if (kind == FGG_MM_K3) { /* 6-bit scales - 32, offset 4 */
            uint32_t words[4];
            fgg_mm_q3_k_scale_words(wb, words);
            sv = _mm_sub_epi8(_mm_setr_epi32((int)words[0], (int)words[1], (int)words[2], (int)words[3]),
                              _mm_set1_epi8(32));
            bs = _mm256_slli_epi16(_mm256_cvtepi8_epi16(sv), 2);
        } else if (kind == FGG_MM_K6) { /* int8 scales, offset 32 */
            sv = _mm_loadu_si128((const __m128i *)(wb + 192));
            bs = _mm256_slli_epi16(_mm256_cvtepi8_epi16(sv), 5);
        } else { /* the ternary types: scale 1, offset 1 */
            sv = _mm_set1_epi8(1);
            bs = _mm256_set1_epi16(1);
        }
        lo8 = _mm_cvtepi8_epi16(sv);
        hi8 = _mm_cvtepi8_epi16(_mm_srli_si128(sv, 8));
    }
    *lo = _mm256_broadcastsi128_si256(lo8);
    *hi = _mm256_broadcastsi128_si256(hi8);
    return bs;
}

/* fgg_mm_k_scales into the ksb's sc and bs. */
FGG_MM_ALWAYS_INLINE void fgg_mm_ksb_k_scales(int kind, const uint8_t *wb, fgg_mm_ksb *s)
{
    __m256i lo, hi;
    s->bs = fgg_mm_k_scales(kind, wb, &lo, &hi);
    for (int j = 0; j < 8; j++) s->sc[j] = fgg_mm_sub_scale(lo, hi, j);
}
#endif

/* Unpack a Q4_K super-block (144 bytes: f16 d, f16 dmin, 12 bytes of scales, 128 bytes of
 * nibbles; sub-block j has value d * sc[j] * q - dmin * mn[j]). */
static inline void fgg_mm_ksb_q4_k_at(const uint8_t *wb, const uint8_t *nibbles, fgg_mm_ksb *s)
{
    for (int g = 0; g < 4; g++) fgg_mm_nibbles32(nibbles + 32 * g, &s->u[2 * g], &s->u[2 * g + 1]);
#if defined(FGG_MM_INT_SIMD)
    fgg_mm_ksb_k_scales(FGG_MM_K4, wb, s);
#else
    uint32_t words[4];
    fgg_mm_k4_scales(wb + 4, words);
    uint8_t b[16];
    for (int w4 = 0; w4 < 4; w4++)
        for (int t = 0; t < 4; t++) b[4 * w4 + t] = (uint8_t)(words[w4] >> (8 * t));
    for (int j = 0; j < 8; j++) {
        s->sc[2 * j] = s->sc[2 * j + 1] = b[j];
        s->bs[2 * j] = s->bs[2 * j + 1] = b[8 + j];
    }
#endif
}

static inline void fgg_mm_ksb_q4_k(const uint8_t *wb, fgg_mm_ksb *s) { fgg_mm_ksb_q4_k_at(wb, wb + 16, s); }

#if defined(FGG_MM_INT_SIMD)
/* Sub-blocks 4h .. 4h + 3 of a Q6_K super-block as bytes q = 0..63 (its low 4 bits from 64 bytes
 * at 64h, its high 2 from the 32 bytes at 128 + 32h). */
static inline void fgg_mm_q6_k_half_u(const uint8_t *wb, int h, __m256i u[4])
{
    const __m256i m4 = _mm256_set1_epi8(0x0f), m30 = _mm256_set1_epi8(0x30);
    __m256i l0 = _mm256_loadu_si256((const __m256i *)(wb + 64 * h));
    __m256i l1 = _mm256_loadu_si256((const __m256i *)(wb + 64 * h + 32));
    __m256i hv = _mm256_loadu_si256((const __m256i *)(wb + 128 + 32 * h));
    /* each pair of high bits moved to bits 4-5 of its byte (16-bit shifts: the mask drops what
     * crosses from the neighbouring byte) */
    u[0] = _mm256_or_si256(_mm256_and_si256(l0, m4), _mm256_and_si256(_mm256_slli_epi16(hv, 4), m30));
    u[1] = _mm256_or_si256(_mm256_and_si256(l1, m4), _mm256_and_si256(_mm256_slli_epi16(hv, 2), m30));
    u[2] = _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(l0, 4), m4), _mm256_and_si256(hv, m30));
    u[3] = _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(l1, 4), m4),
                           _mm256_and_si256(_mm256_srli_epi16(hv, 2), m30));
}
#endif

/* Unpack a Q6_K super-block (210 bytes: 128 bytes low 4 bits, 64 bytes high 2 bits, 16 int8
 * scales, f16 d; value d * scale[i / 16] * (q - 32), q = 0..63): u = q, bs = 32 * scale. */
static inline void fgg_mm_ksb_q6_k(const uint8_t *wb, fgg_mm_ksb *s)
{
    for (int h = 0; h < 2; h++) {
#if defined(FGG_MM_INT_SIMD)
        fgg_mm_q6_k_half_u(wb, h, &s->u[4 * h]);
#else
        const uint8_t *l = wb + 64 * h, *hb = wb + 128 + 32 * h;
        for (int k = 0; k < 32; k++) {
            s->u[4 * h + 0].b[k] = (int8_t)((l[k] & 15) | ((hb[k] & 3) << 4));
            s->u[4 * h + 1].b[k] = (int8_t)((l[k + 32] & 15) | (((hb[k] >> 2) & 3) << 4));
            s->u[4 * h + 2].b[k] = (int8_t)((l[k] >> 4) | (((hb[k] >> 4) & 3) << 4));
            s->u[4 * h + 3].b[k] = (int8_t)((l[k + 32] >> 4) | (((hb[k] >> 6) & 3) << 4));
        }
#endif
    }
#if defined(FGG_MM_INT_SIMD)
    fgg_mm_ksb_k_scales(FGG_MM_K6, wb, s);
#else
    const int8_t *scales = (const int8_t *)(wb + 192);
    for (int g = 0; g < 16; g++) {
        s->sc[g] = scales[g];
        s->bs[g] = (int16_t)(32 * scales[g]);
    }
#endif
}

/* Per-16 scales given as 16 int8 (sc) and 16 int16 factors of bsum: the ksb's scale and bs
 * fields (Q2_K, Q3_K). */
static inline void fgg_mm_ksb_scales16(fgg_mm_ksb *s, const int8_t sc[16], const int16_t bs[16])
{
#if defined(FGG_MM_INT_SIMD)
    __m128i sv = _mm_loadu_si128((const __m128i *)sc);
    fgg_mm_ksb_scales(s, _mm_cvtepi8_epi16(sv), _mm_cvtepi8_epi16(_mm_srli_si128(sv, 8)));
    s->bs = _mm256_loadu_si256((const __m256i *)bs);
#else
    for (int g = 0; g < 16; g++) {
        s->sc[g] = sc[g];
        s->bs[g] = bs[g];
    }
#endif
}

/* 2-bit fields: sub-block 4h + t is bits 2t, 2t + 1 of the 32 bytes at q + 32h (Q2_K, Q3_K). */
static inline void fgg_mm_ksb_crumbs(const uint8_t *q, fgg_mm_ksb *s)
{
    for (int h = 0; h < 2; h++) {
#if defined(FGG_MM_INT_SIMD)
        __m256i v = _mm256_loadu_si256((const __m256i *)(q + 32 * h)), three = _mm256_set1_epi8(3);
        s->u[4 * h + 0] = _mm256_and_si256(v, three);
        s->u[4 * h + 1] = _mm256_and_si256(_mm256_srli_epi16(v, 2), three);
        s->u[4 * h + 2] = _mm256_and_si256(_mm256_srli_epi16(v, 4), three);
        s->u[4 * h + 3] = _mm256_and_si256(_mm256_srli_epi16(v, 6), three);
#else
        for (int t = 0; t < 4; t++)
            for (int l = 0; l < 32; l++) s->u[4 * h + t].b[l] = (int8_t)((q[32 * h + l] >> (2 * t)) & 3);
#endif
    }
}

/* Q2_K (84 bytes: 16 scale bytes, 64 bytes of 2-bit q, f16 d, f16 dmin): value of the 16-run g
 * d * (sc[g] & 15) * q - dmin * (sc[g] >> 4). */
static inline void fgg_mm_ksb_q2_k(const uint8_t *wb, fgg_mm_ksb *s)
{
#if defined(FGG_MM_INT_SIMD)
    fgg_mm_ksb_k_scales(FGG_MM_K2, wb, s);
#else
    int8_t sc[16];
    int16_t mn[16];
    for (int g = 0; g < 16; g++) {
        sc[g] = (int8_t)(wb[g] & 15);
        mn[g] = (int16_t)(wb[g] >> 4);
    }
    fgg_mm_ksb_scales16(s, sc, mn);
#endif
    fgg_mm_ksb_crumbs(wb + 16, s);
}

/* Q3_K (110 bytes: hmask[32], 64 bytes of low 2 bits, 12 bytes of sixteen 6-bit scales, f16 d):
 * value d * (scale - 32) * (low2 - (hmask bit clear ? 4 : 0)). u = low2 + 4 * bit (0..7), so
 * the value is (u - 4): bs = 4 * (scale - 32). The scales: low 4 bits from nibble g / 8 of byte
 * g % 8, high 2 bits from bits 2 (g / 4) of byte 8 + g % 4. Here the 16 scales, minus 32: */

static inline void fgg_mm_q3_k_scales(const uint8_t *wb, int8_t sc[16])
{
    uint32_t words[4];
    fgg_mm_q3_k_scale_words(wb, words);
    for (int g = 0; g < 16; g++) sc[g] = (int8_t)((int)((words[g >> 2] >> (8 * (g & 3))) & 63) - 32);
}

/* Q3_K's u for values 32j .. 32j + 31: their low 2 bits (low2, from fgg_mm_ksb_crumbs) | hmask bit j << 2. */
static inline fgg_mm_w32 fgg_mm_q3_k_u(const uint8_t *wb, fgg_mm_w32 low2, int j)
{
#if defined(FGG_MM_INT_SIMD)
    __m256i hm = _mm256_loadu_si256((const __m256i *)wb), one = _mm256_set1_epi8(1);
    return _mm256_or_si256(low2, _mm256_slli_epi16(_mm256_and_si256(_mm256_srli_epi16(hm, j), one), 2));
#else
    for (int l = 0; l < 32; l++) low2.b[l] = (int8_t)(low2.b[l] | (((wb[l] >> j) & 1) << 2));
    return low2;
#endif
}

static inline void fgg_mm_ksb_q3_k(const uint8_t *wb, fgg_mm_ksb *s)
{
#if defined(FGG_MM_INT_SIMD)
    fgg_mm_ksb_k_scales(FGG_MM_K3, wb, s);
#else
    int8_t sc[16];
    int16_t bs[16];
    fgg_mm_q3_k_scales(wb, sc);
    for (int g = 0; g < 16; g++) bs[g] = (int16_t)(4 * sc[g]);
    fgg_mm_ksb_scales16(s, sc, bs);
#endif
    fgg_mm_ksb_crumbs(wb + 32, s);
    for (int j = 0; j < 8; j++) s->u[j] = fgg_mm_q3_k_u(wb, s->u[j], j);
}

/* Q5_K (176 bytes: as Q4_K with qh[32] before the 128 bytes of nibbles): bit j of qh[l] is the
 * fifth bit of element l of sub-block j. */
static inline void fgg_mm_ksb_q5_k(const uint8_t *wb, fgg_mm_ksb *s)
{
    fgg_mm_ksb_q4_k_at(wb, wb + 48, s);
    for (int j = 0; j < 8; j++) {
#if defined(FGG_MM_INT_SIMD)
        __m256i qh = _mm256_loadu_si256((const __m256i *)(wb + 16)), one = _mm256_set1_epi8(1);
        __m256i bit = _mm256_and_si256(_mm256_srli_epi16(qh, j), one);
        s->u[j] = _mm256_or_si256(s->u[j], _mm256_slli_epi16(bit, 4));
#else
        for (int l = 0; l < 32; l++) s->u[j].b[l] = (int8_t)(s->u[j].b[l] | (((wb[16 + l] >> j) & 1) << 4));
#endif
    }
}


/* Bytes per super-block. */
FGG_MM_ALWAYS_INLINE ptrdiff_t fgg_mm_k_bytes(int kind)
{
    switch (kind) {
    case FGG_MM_K2: return 84;
    case FGG_MM_K3: return 110;
    case FGG_MM_K4: return 144;
    case FGG_MM_K5: return 176;
    case FGG_MM_K6: return 210;
    case FGG_MM_K_IQ2_XXS: return 66;
    case FGG_MM_K_IQ3_XXS: return 98;
    case FGG_MM_K_IQ3_S: return 110;
    case FGG_MM_K_IQ2_XS: return 74;
    case FGG_MM_K_IQ2_S: return 82;
    case FGG_MM_K_IQ1_S: return 50;
    case FGG_MM_K_IQ1_M: return 56;
    case FGG_MM_K_TQ2_0: return 66;
    case FGG_MM_K_TQ1_0: return 54;
    default: return 136;
    }
}

/* Whether the kind's values are signed (the IQ types): u then holds their magnitudes, v the
 * values, and x takes their signs before maddubs; no bsum term. */
FGG_MM_ALWAYS_INLINE int fgg_mm_k_signed(int kind)
{
    return kind >= FGG_MM_K_IQ2_XXS && kind != FGG_MM_K_TQ2_0 && kind != FGG_MM_K_TQ1_0;
}

/* 32 signed bytes from four rows of 8 unsigned grid values (g[0] the first 8), value i negated
 * where bit i % 8 of byte i / 8 of ``signs`` is set (the grids' values are below 128). */
static inline fgg_mm_w32 fgg_mm_grid32(const uint64_t g[4], uint32_t signs)
{
#if defined(FGG_MM_INT_SIMD)
    return fgg_mm_signed32(_mm256_set_epi64x((long long)g[3], (long long)g[2], (long long)g[1], (long long)g[0]), signs);
#elif FGG_HAVE_SSE2
    /* the same steps on two 16-byte halves (byte by byte in plain C: about 40 instructions per
     * value, measured) */
    fgg_mm_w32 w;
    __m128i neg[2];
    fgg_mm_sse_bits32(signs, neg);
    for (int h = 0; h < 2; h++) {
        const __m128i v = _mm_set_epi64x((long long)g[2 * h + 1], (long long)g[2 * h]);
        _mm_storeu_si128((__m128i *)(w.b + 16 * h), _mm_sub_epi8(_mm_xor_si128(v, neg[h]), neg[h]));
    }
    return w;
#else
    fgg_mm_w32 w;
    for (int i = 0; i < 32; i++) {
        const int v = (int)((g[i / 8] >> (8 * (i % 8))) & 0xff);
        w.b[i] = (int8_t)((signs >> (8 * (i / 8) + i % 8)) & 1 ? -v : v);
    }
    return w;
#endif
}

/* A grid row of 8 bytes as one word (fgg_mm_grid32's and fgg_mm_iq1_rows' g). */
static inline uint64_t fgg_mm_grid_row8(const uint8_t *row)
{
    uint64_t v;
    memcpy(&v, row, 8);
    return v;
}

static inline uint64_t fgg_mm_grid_rows4(const uint8_t *a, const uint8_t *b)
{
    uint32_t lo, hi;
    memcpy(&lo, a, 4);
    memcpy(&hi, b, 4);
    return (uint64_t)lo | ((uint64_t)hi << 32);
}

/* Run j of an IQ2_XXS block (66 bytes: f16 d, 8 runs of 4 grid indices and a u32 of four 7-bit
 * sign codes and a 4-bit scale), of an IQ3_XXS block (98 bytes: f16 d, 64 grid indices, per run
 * a u32 of sign codes and scale), of an IQ3_S block (110 bytes: f16 d, 64 low index bytes, 8
 * bytes of ninth bits, 32 sign bytes, 4 bytes of scales): its 32 values before the scale. */
#if defined(FGG_MM_INT_SIMD)
/* The grid rows of 8 indices (int32 lanes) in a table of 4-byte rows, or of 4 indices in a table
 * of 8-byte rows: 32 bytes in index order, by one gather. For IQ3_XXS, IQ3_S and IQ2_S, whose
 * indices took 6-8 instructions each in plain code (IQ3_S's ninth bits); IQ2_XXS's and IQ2_XS's
 * plain byte indices and 4 loads were as fast as a gather (measured, avx512 build). */
FGG_MM_ALWAYS_INLINE __m256i fgg_mm_gather_rows4(const uint8_t (*grid)[4], __m256i idx)
{
    return _mm256_i32gather_epi32((const int *)grid, idx, 4);
}

FGG_MM_ALWAYS_INLINE __m256i fgg_mm_gather_rows8(const uint8_t (*grid)[8], __m128i idx)
{
    return _mm256_i32gather_epi64((const long long *)grid, idx, 8);
}

/* Bit k of b in lane k (k = 0..7) of 8 int32 lanes, times 2^shift. */
FGG_MM_ALWAYS_INLINE __m256i fgg_mm_bit_lanes8(uint32_t b, int shift)
{
    const __m256i k = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
    return _mm256_slli_epi32(_mm256_and_si256(_mm256_srlv_epi32(_mm256_set1_epi32((int)b), k), _mm256_set1_epi32(1)), shift);
}
#endif

/* fgg_mm_*_gs: run j as 4 grid rows of 8 magnitudes (g[l]: values 8l..8l + 7) and, returned, their
 * sign bits (bit i of byte l set where value 8l + i is negated). */
static inline uint32_t fgg_mm_iq2_xxs_gs(const uint8_t *wb, int j, uint64_t g[4])
{
    const uint8_t *q = wb + 2 + 8 * j;
    const uint32_t aux = fgg_load_u32le(q + 4);
    uint32_t signs = 0;
    for (int l = 0; l < 4; l++) {
        g[l] = fgg_mm_grid_row8(fgg_iq2xxs_grid[q[l]]);
        signs |= (uint32_t)fgg_ksigns[(aux >> (7 * l)) & 127] << (8 * l);
    }
    return signs;
}

static inline fgg_mm_w32 fgg_mm_iq2_xxs_run(const uint8_t *wb, int j)
{
    uint64_t g[4];
    const uint32_t signs = fgg_mm_iq2_xxs_gs(wb, j, g);
    return fgg_mm_grid32(g, signs);
}

static inline uint32_t fgg_mm_iq3_xxs_signs(const uint8_t *wb, int j)
{
    const uint32_t aux = fgg_load_u32le(wb + 66 + 4 * j);
    uint32_t signs = 0;
    for (int l = 0; l < 4; l++) signs |= (uint32_t)fgg_ksigns[(aux >> (7 * l)) & 127] << (8 * l);
    return signs;
}

/* The IQ3 types' runs as 8 grid rows of 4 magnitudes (r[k]: values 4k..4k + 3) and their sign bits. */
static inline uint32_t fgg_mm_iq3_xxs_rows(const uint8_t *wb, int j, const uint8_t *r[8])
{
    const uint8_t *q = wb + 2 + 8 * j;
    for (int k = 0; k < 8; k++) r[k] = fgg_iq3xxs_grid[q[k]];
    return fgg_mm_iq3_xxs_signs(wb, j);
}

static inline uint32_t fgg_mm_iq3_s_rows(const uint8_t *wb, int j, const uint8_t *r[8])
{
    const uint8_t *qs = wb + 2 + 8 * j, qh = wb[66 + j];
    for (int k = 0; k < 8; k++) r[k] = fgg_iq3s_grid[qs[k] | (((qh >> k) & 1) << 8)];
    return fgg_load_u32le(wb + 74 + 4 * j);
}

/* fgg_mm_grid32 of those 8 rows of 4 and their sign bits. */
static inline fgg_mm_w32 fgg_mm_grid32_rows4(const uint8_t *const r[8], uint32_t signs)
{
    uint64_t g[4];
    for (int l = 0; l < 4; l++) g[l] = fgg_mm_grid_rows4(r[2 * l], r[2 * l + 1]);
    return fgg_mm_grid32(g, signs);
}

static inline fgg_mm_w32 fgg_mm_iq3_xxs_run(const uint8_t *wb, int j)
{
#if defined(FGG_MM_INT_SIMD)
    const __m128i q = _mm_loadl_epi64((const __m128i *)(wb + 2 + 8 * j));
    return fgg_mm_signed32(fgg_mm_gather_rows4(fgg_iq3xxs_grid, _mm256_cvtepu8_epi32(q)), fgg_mm_iq3_xxs_signs(wb, j));
#else
    const uint8_t *r[8];
    const uint32_t signs = fgg_mm_iq3_xxs_rows(wb, j, r);
    return fgg_mm_grid32_rows4(r, signs);
#endif
}

static inline fgg_mm_w32 fgg_mm_iq3_s_run(const uint8_t *wb, int j)
{
#if defined(FGG_MM_INT_SIMD)
    const uint8_t *qs = wb + 2 + 8 * j, qh = wb[66 + j];
    const __m256i idx = _mm256_or_si256(_mm256_cvtepu8_epi32(_mm_loadl_epi64((const __m128i *)qs)), fgg_mm_bit_lanes8(qh, 8));
    return fgg_mm_signed32(fgg_mm_gather_rows4(fgg_iq3s_grid, idx), fgg_load_u32le(wb + 74 + 4 * j));
#else
    const uint8_t *r[8];
    const uint32_t signs = fgg_mm_iq3_s_rows(wb, j, r);
    return fgg_mm_grid32_rows4(r, signs);
#endif
}

/* IQ2_XS (74 bytes: f16 d, 32 u16 of a 9-bit grid index and a 7-bit sign code, 8 bytes of two
 * 4-bit scales per run) and IQ2_S (82 bytes: f16 d, 32 low index bytes, 32 sign bytes, 8 bytes of
 * two high index bits per group of 8, 8 bytes of scales): run j's 32 values before the scales. */
static inline uint32_t fgg_mm_iq2_xs_gs(const uint8_t *wb, int j, uint64_t g[4])
{
    uint32_t signs = 0;
    for (int l = 0; l < 4; l++) {
        const uint32_t packed = fgg_load_u16le(wb + 2 + 8 * j + 2 * l);
        g[l] = fgg_mm_grid_row8(fgg_iq2xs_grid[packed & 511]);
        signs |= (uint32_t)fgg_ksigns[packed >> 9] << (8 * l);
    }
    return signs;
}

static inline fgg_mm_w32 fgg_mm_iq2_xs_run(const uint8_t *wb, int j)
{
    uint64_t g[4];
    const uint32_t signs = fgg_mm_iq2_xs_gs(wb, j, g);
    return fgg_mm_grid32(g, signs);
}

static inline uint32_t fgg_mm_iq2_s_gs(const uint8_t *wb, int j, uint64_t g[4])
{
    const uint8_t *qs = wb + 2 + 4 * j, qh = wb[66 + j];
    for (int l = 0; l < 4; l++) g[l] = fgg_mm_grid_row8(fgg_iq2s_grid[qs[l] | (((qh >> (2 * l)) & 3) << 8)]);
    return fgg_load_u32le(wb + 34 + 4 * j);
}

static inline fgg_mm_w32 fgg_mm_iq2_s_run(const uint8_t *wb, int j)
{
#if defined(FGG_MM_INT_SIMD)
    const uint8_t *qs = wb + 2 + 4 * j, qh = wb[66 + j];
    const __m128i hi = _mm_slli_epi32(_mm_and_si128(_mm_srlv_epi32(_mm_set1_epi32(qh), _mm_setr_epi32(0, 2, 4, 6)), _mm_set1_epi32(3)), 8);
    const __m128i idx = _mm_or_si128(_mm_cvtepu8_epi32(_mm_cvtsi32_si128((int)fgg_load_u32le(qs))), hi);
    return fgg_mm_signed32(fgg_mm_gather_rows8(fgg_iq2s_grid, idx), fgg_load_u32le(wb + 34 + 4 * j));
#else
    uint64_t g[4];
    const uint32_t signs = fgg_mm_iq2_s_gs(wb, j, g);
    return fgg_mm_grid32(g, signs);
#endif
}

#if FGG_HAVE_SSE2 && !defined(FGG_MM_INT_SIMD)
/* 16 bytes 8 * g + sigma of two grid rows (g0 bytes 0-7, g1 bytes 8-15) and sigma's bytes. */
FGG_MM_ALWAYS_INLINE __m128i fgg_mm_sse_iq1_half(uint64_t g0, uint64_t g1, __m128i sigma)
{
    __m128i v = _mm_set_epi64x((long long)g1, (long long)g0);
    v = _mm_add_epi8(v, v);
    v = _mm_add_epi8(v, v);
    v = _mm_add_epi8(v, v);
    return _mm_add_epi8(v, sigma);
}
#endif

/* 32 signed bytes 8 * g + sigma from four rows of 8 grid values g in {-1, 0, 1} (g[0] the first
 * 8), sigma = -1 for the rows whose bit is set in ``minus`` (bit l for row l), else +1: the IQ1
 * types' values g + delta, delta = +-1/8, times 8. */
static inline fgg_mm_w32 fgg_mm_iq1_rows(const uint64_t g[4], unsigned minus)
{
#if defined(FGG_MM_INT_SIMD)
    const long long plus = 0x0101010101010101LL, neg = -1LL;  /* bytes of +1, of -1 */
    __m256i v = _mm256_set_epi64x((long long)g[3], (long long)g[2], (long long)g[1], (long long)g[0]);
    __m256i sigma = _mm256_set_epi64x(minus & 8 ? neg : plus, minus & 4 ? neg : plus, minus & 2 ? neg : plus,
                                      minus & 1 ? neg : plus);
    v = _mm256_add_epi8(v, v);
    v = _mm256_add_epi8(v, v);
    v = _mm256_add_epi8(v, v);
    return _mm256_add_epi8(v, sigma);
#elif FGG_HAVE_SSE2
    fgg_mm_w32 w;
    const long long plus = 0x0101010101010101LL, neg = -1LL;
    for (int h = 0; h < 2; h++) {
        const __m128i sigma = _mm_set_epi64x(minus & (2u << (2 * h)) ? neg : plus, minus & (1u << (2 * h)) ? neg : plus);
        _mm_storeu_si128((__m128i *)(w.b + 16 * h), fgg_mm_sse_iq1_half(g[2 * h], g[2 * h + 1], sigma));
    }
    return w;
#else
    fgg_mm_w32 w;
    for (int i = 0; i < 32; i++)
        w.b[i] = (int8_t)(8 * (int8_t)((g[i / 8] >> (8 * (i % 8))) & 0xff) + ((minus >> (i / 8)) & 1 ? -1 : 1));
    return w;
#endif
}

/* IQ1_S (50 bytes: f16 d, 32 low index bytes, per run a u16 of four 3-bit high index parts, a
 * 3-bit scale and the delta's sign) and IQ1_M (56 bytes: 32 low index bytes, per run two bytes of
 * two (3 high index bits, delta sign) nibbles, 4 u16 of 3-bit scales per 16 values and the f16 d
 * in their top nibbles): run j's 32 values 8 * (g + delta). */
static inline fgg_mm_w32 fgg_mm_iq1_s_run(const uint8_t *wb, int j)
{
    const uint32_t qh = fgg_load_u16le(wb + 34 + 2 * j);
    uint64_t g[4];
    for (int l = 0; l < 4; l++)
        g[l] = fgg_mm_grid_row8((const uint8_t *)fgg_iq1s_grid[wb[2 + 4 * j + l] | (((qh >> (3 * l)) & 7) << 8)]);
#if FGG_HAVE_SSE2 && !defined(FGG_MM_INT_SIMD)
    /* One delta sign for the run, made by arithmetic: through fgg_mm_iq1_rows, gcc copied its code
     * behind a branch on this random bit (portable integer path, one row of x, 4096 x 4096, one
     * thread: 4.53 -> 2.9 ms). */
    fgg_mm_w32 w;
    const __m128i sigma = _mm_set1_epi8((char)(1u | (0u - (qh >> 15))));
    for (int h = 0; h < 2; h++) _mm_storeu_si128((__m128i *)(w.b + 16 * h), fgg_mm_sse_iq1_half(g[2 * h], g[2 * h + 1], sigma));
    return w;
#else
    return fgg_mm_iq1_rows(g, qh >> 15 ? 15u : 0u);
#endif
}

static inline fgg_mm_w32 fgg_mm_iq1_m_run(const uint8_t *wb, int j)
{
    const uint8_t *qs = wb + 4 * j, lo = wb[32 + 2 * j], hi = wb[33 + 2 * j];
    uint64_t g[4];
    g[0] = fgg_mm_grid_row8((const uint8_t *)fgg_iq1s_grid[qs[0] | ((lo & 7) << 8)]);
    g[1] = fgg_mm_grid_row8((const uint8_t *)fgg_iq1s_grid[qs[1] | ((lo & 0x70) << 4)]);
    g[2] = fgg_mm_grid_row8((const uint8_t *)fgg_iq1s_grid[qs[2] | ((hi & 7) << 8)]);
    g[3] = fgg_mm_grid_row8((const uint8_t *)fgg_iq1s_grid[qs[3] | ((hi & 0x70) << 4)]);
    return fgg_mm_iq1_rows(g, ((lo >> 3) & 1) | ((lo >> 7) << 1) | (((hi >> 3) & 1) << 2) | ((unsigned)(hi >> 7) << 3));
}

/* TQ1_0 (54 bytes: 48 bytes of codes with 5 base-3 digits each, 4 bytes with 4, then f16 d).
 * A code holds its digits as a fixed-point fraction: digit k of code c is the top digit of
 * c * 3^k (mod 256), (t >= 86) + (t >= 171) for t that product (as the dequantizer reads them).
 * Value v of the super-block: v < 160 digit v / 32 of byte v % 32; v < 240 digit (v - 160) / 16
 * of byte 32 + v % 16; else digit (v - 240) / 4 of byte 48 + v % 4. Run j's 32 digits (0..2; the
 * values are the digits minus 1): byte i of the run is the digit of code c[i] at power p[i]: */
static inline void fgg_mm_tq1_0_where(int j, int i, int *byte, int *power)
{
    const int v = 32 * j + i;
    if (v < 160) {
        *byte = v % 32;
        *power = v / 32;
    } else if (v < 240) {
        *byte = 32 + v % 16;
        *power = (v - 160) / 16;
    } else {
        *byte = 48 + v % 4;
        *power = (v - 240) / 4;
    }
}

#if defined(FGG_MM_INT_SIMD)
/* Bytewise c * 9 mod 256: c * 8 by a 16-bit shift, the bits it carries into the next byte masked. */
FGG_MM_ALWAYS_INLINE __m128i fgg_mm_times9_128(__m128i c) { return _mm_add_epi8(_mm_and_si128(_mm_slli_epi16(c, 3), _mm_set1_epi8(-8)), c); }
FGG_MM_ALWAYS_INLINE __m256i fgg_mm_times9(__m256i c) { return _mm256_add_epi8(_mm256_and_si256(_mm256_slli_epi16(c, 3), _mm256_set1_epi8(-8)), c); }

/* The top digit (3 t) >> 8 of each byte t, without a multiply: with x = t - 1 (0 for t = 0),
 * avg(x, avg(x, 0)) = (x + (x + 1) / 2 + 1) / 2 has that digit in its top 2 bits (checked for
 * all 256 bytes; ggml's kernel reads the digits so): 5 operations, 6 by two compares. */
FGG_MM_ALWAYS_INLINE __m256i fgg_mm_top_trit(__m256i t)
{
    const __m256i x = _mm256_subs_epu8(t, _mm256_set1_epi8(1));
    const __m256i a = _mm256_avg_epu8(x, _mm256_avg_epu8(x, _mm256_setzero_si256()));
    return _mm256_and_si256(_mm256_srli_epi16(a, 6), _mm256_set1_epi8(3));
}
#endif

static inline fgg_mm_w32 fgg_mm_tq1_0_digits(const uint8_t *wb, int j)
{
#if defined(FGG_MM_INT_SIMD)
    /* t = c * 3^k mod 256 by bytewise adds (x3: c + 2c; x9: fgg_mm_times9), as ggml's kernel
     * makes them: with the runs unrolled the compiler shares them between runs */
    __m256i t;
    if (j < 5) {
        const __m256i c = _mm256_loadu_si256((const __m256i *)wb), c3 = _mm256_add_epi8(c, _mm256_add_epi8(c, c));
        t = j == 0 ? c : j == 1 ? c3 : j == 2 ? fgg_mm_times9(c) : j == 3 ? fgg_mm_times9(c3) : fgg_mm_times9(fgg_mm_times9(c));
    } else {
        const __m128i mid = _mm_loadu_si128((const __m128i *)(wb + 32)), mid3 = _mm_add_epi8(mid, _mm_add_epi8(mid, mid));
        if (j == 5) {
            t = _mm256_set_m128i(mid3, mid);
        } else if (j == 6) {
            t = _mm256_set_m128i(fgg_mm_times9_128(mid3), fgg_mm_times9_128(mid));
        } else {  /* digit 4 of bytes 32..47, then the 16 digits of bytes 48..51 (byte index fastest) */
            const __m128i last = _mm_set1_epi32((int)fgg_load_u32le(wb + 48)), last3 = _mm_add_epi8(last, _mm_add_epi8(last, last));
            const __m128i powers = _mm_blend_epi32(_mm_blend_epi32(last, last3, 2), _mm_blend_epi32(fgg_mm_times9_128(last), fgg_mm_times9_128(last3), 8), 12);
            t = _mm256_set_m128i(powers, fgg_mm_times9_128(fgg_mm_times9_128(mid)));
        }
    }
    return fgg_mm_top_trit(t);
#elif FGG_HAVE_SSE2
    /* the same steps on two 16-byte halves (lo: bytes 0-15 of the run, hi: 16-31); the plain loop
     * took about 9x the time of TQ2_0's */
    __m128i c[2], p[2];
    if (j < 5) {
        static const uint8_t pow3[5] = {1, 3, 9, 27, 81};
        c[0] = _mm_loadu_si128((const __m128i *)wb);
        c[1] = _mm_loadu_si128((const __m128i *)(wb + 16));
        p[0] = p[1] = _mm_set1_epi8((char)pow3[j]);
    } else {
        c[0] = c[1] = _mm_loadu_si128((const __m128i *)(wb + 32));
        if (j == 5) {
            p[0] = _mm_set1_epi8(1);
            p[1] = _mm_set1_epi8(3);
        } else if (j == 6) {
            p[0] = _mm_set1_epi8(9);
            p[1] = _mm_set1_epi8(27);
        } else {
            p[0] = _mm_set1_epi8(81);
            c[1] = _mm_set1_epi32((int)fgg_load_u32le(wb + 48));
            p[1] = _mm_setr_epi8(1, 1, 1, 1, 3, 3, 3, 3, 9, 9, 9, 9, 27, 27, 27, 27);
        }
    }
    fgg_mm_w32 w;
    for (int h = 0; h < 2; h++) {
        const __m128i even = _mm_and_si128(_mm_mullo_epi16(c[h], p[h]), _mm_set1_epi16(0xff));
        const __m128i odd = _mm_slli_epi16(_mm_mullo_epi16(_mm_srli_epi16(c[h], 8), _mm_srli_epi16(p[h], 8)), 8);
        const __m128i t = _mm_or_si128(even, odd);
        const __m128i ge86 = _mm_cmpeq_epi8(_mm_max_epu8(t, _mm_set1_epi8(86)), t);
        const __m128i ge171 = _mm_cmpeq_epi8(_mm_max_epu8(t, _mm_set1_epi8((char)171)), t);
        _mm_storeu_si128((__m128i *)(w.b + 16 * h), _mm_sub_epi8(_mm_setzero_si128(), _mm_add_epi8(ge86, ge171)));
    }
    return w;
#else
    fgg_mm_w32 w;
    for (int i = 0; i < 32; i++) {
        int byte, power, t;
        fgg_mm_tq1_0_where(j, i, &byte, &power);
        t = wb[byte];
        for (int k = 0; k < power; k++) t = (t * 3) & 0xff;
        w.b[i] = (int8_t)((t >= 86) + (t >= 171));
    }
    return w;
#endif
}

/* The ternary types, value d * (code or digit - 1): scale 1 and offset 1 (bs = 1), as Q3_K's and
 * Q6_K's offsets. TQ2_0 (66 bytes: 64 bytes of 2-bit codes laid out as Q2_K's, then f16 d), TQ1_0
 * (above). */
static inline void fgg_mm_ksb_ternary(int kind, const uint8_t *wb, fgg_mm_ksb *s)
{
#if defined(FGG_MM_INT_SIMD)
    fgg_mm_ksb_k_scales(kind, wb, s);
#else
    int8_t sc[16];
    int16_t bs[16];
    for (int g = 0; g < 16; g++) {
        sc[g] = 1;
        bs[g] = 1;
    }
    fgg_mm_ksb_scales16(s, sc, bs);
#endif
    if (kind == FGG_MM_K_TQ2_0)
        fgg_mm_ksb_crumbs(wb, s);
    else
#pragma GCC unroll 8 /* TQ1_0's runs share their codes' products (fgg_mm_tq1_0_digits) */
        for (int j = 0; j < 8; j++) s->u[j] = fgg_mm_tq1_0_digits(wb, j);
}

/* The 256-value IQ types as the K-quants: run j's 32 signed values (fgg_mm_iq_run, the scale left
 * out) with its integer scales (one per 16 values) under one float d per super-block:
 *   IQ2_XXS (66 bytes)  value h * (0.5 + s_j) * 0.25 * g = (h / 8) * (2 s_j + 1) * g
 *   IQ3_XXS (98 bytes)  value h * (0.5 + s_j) * 0.5 * g  = (h / 4) * (2 s_j + 1) * g
 *   IQ3_S   (110 bytes) value h * (1 + 2 s_j) * g
 *   IQ4_XS  (136 bytes) value h * (ls_j - 32) * iq4nl[q]
 *   IQ2_XS, IQ2_S (74, 82 bytes) value h * (0.5 + s) * 0.25 * g = (h / 8) * (2 s + 1) * g, with a
 *           4-bit s per 16 values (the low nibble of byte j of the scales for the first 16)
 *   IQ1_S, IQ1_M (50, 56 bytes) value h * (2 s + 1) * (g + delta) = (h / 8) * (2 s + 1) * (8 g +- 1),
 *           a 3-bit s per run (IQ1_S) or per 16 values (IQ1_M)
 * h the block's f16 scale, s_j the run's 4-bit field, g the signed grid value (as the
 * dequantizers in kernels_iq.pxi).
 *
 * The float d of an IQ super-block (its runs' integer scales apart): */
FGG_MM_ALWAYS_INLINE float fgg_mm_iq_d(int kind, const uint8_t *wb)
{
    if (kind == FGG_MM_K_IQ1_M) {  /* the f16 in the top nibbles of the 4 scale words */
        const uint32_t h = (fgg_load_u16le(wb + 48) >> 12) | ((fgg_load_u16le(wb + 50) >> 8) & 0xf0)
                           | ((fgg_load_u16le(wb + 52) >> 4) & 0xf00) | (fgg_load_u16le(wb + 54) & 0xf000);
        return fgg_half_to_float_scale((uint16_t)h) * 0.125f;
    }
    const float h = fgg_half_to_float_scale(fgg_load_u16le(wb));
    switch (kind) {
    case FGG_MM_K_IQ3_XXS: return h * 0.25f;
    case FGG_MM_K_IQ3_S:
    case FGG_MM_K_IQ4_XS: return h;
    default: return h * 0.125f;  /* the IQ2 types, IQ1_S */
    }
}

/* IQ4_XS's scale of run j, ls_j - 32: 4 bits of wb[4 + j / 2], 2 of the 16-bit word at wb + 2. */
static inline int fgg_mm_iq4_xs_scale(const uint8_t *wb, int j)
{
    return (((wb[4 + j / 2] >> (4 * (j % 2))) & 0xf) | (int)(((fgg_load_u16le(wb + 2) >> (2 * j)) & 3) << 4)) - 32;
}

/* The integer scales of run j's first and last 16 values of an IQ super-block, in scale[0] and
 * scale[1]. */
FGG_MM_ALWAYS_INLINE void fgg_mm_iq_scales(int kind, const uint8_t *wb, int j, int scale[2])
{
    switch (kind) {
    case FGG_MM_K_IQ2_XXS:
        scale[0] = scale[1] = 2 * (int)(fgg_load_u32le(wb + 6 + 8 * j) >> 28) + 1;
        return;
    case FGG_MM_K_IQ3_XXS:
        scale[0] = scale[1] = 2 * (int)(fgg_load_u32le(wb + 66 + 4 * j) >> 28) + 1;
        return;
    case FGG_MM_K_IQ3_S:
        scale[0] = scale[1] = 2 * ((wb[106 + j / 2] >> (4 * (j % 2))) & 0xf) + 1;
        return;
    case FGG_MM_K_IQ1_S:
        scale[0] = scale[1] = 2 * (int)((fgg_load_u16le(wb + 34 + 2 * j) >> 12) & 7) + 1;
        return;
    case FGG_MM_K_IQ1_M: {
        const uint32_t sc = fgg_load_u16le(wb + 48 + 2 * (j / 2)) >> (6 * (j % 2));
        scale[0] = 2 * (int)(sc & 7) + 1;
        scale[1] = 2 * (int)((sc >> 3) & 7) + 1;
        return;
    }
    case FGG_MM_K_IQ2_XS:
    case FGG_MM_K_IQ2_S: {
        const uint8_t sc = wb[kind == FGG_MM_K_IQ2_XS ? 66 + j : 74 + j];
        scale[0] = 2 * (sc & 0xf) + 1;
        scale[1] = 2 * (sc >> 4) + 1;
        return;
    }
    default:
        scale[0] = scale[1] = fgg_mm_iq4_xs_scale(wb, j);
        return;
    }
}

/* Run j of an IQ super-block: its 32 signed values, and its scales (fgg_mm_iq_scales). */
FGG_MM_ALWAYS_INLINE fgg_mm_w32 fgg_mm_iq_run(int kind, const uint8_t *wb, int j, int scale[2])
{
    fgg_mm_iq_scales(kind, wb, j, scale);
    switch (kind) {
    case FGG_MM_K_IQ2_XXS: return fgg_mm_iq2_xxs_run(wb, j);
    case FGG_MM_K_IQ3_XXS: return fgg_mm_iq3_xxs_run(wb, j);
    case FGG_MM_K_IQ3_S: return fgg_mm_iq3_s_run(wb, j);
    case FGG_MM_K_IQ1_S: return fgg_mm_iq1_s_run(wb, j);
    case FGG_MM_K_IQ1_M: return fgg_mm_iq1_m_run(wb, j);
    case FGG_MM_K_IQ2_XS: return fgg_mm_iq2_xs_run(wb, j);
    case FGG_MM_K_IQ2_S: return fgg_mm_iq2_s_run(wb, j);
    default: return fgg_mm_lut16(wb + 8 + 16 * j, fgg_iq4nl_values, fgg_mm_iq4nl_words);
    }
}

#if defined(FGG_MM_INT_SIMD)
/* The 7-bit sign codes' patterns (fgg_ksigns) as 8 bytes of +1, or -1 where the value is negated:
 * x's signs for sign_epi8, one load per 8 values (filled by fgg_mm_init_tables). */
static uint64_t fgg_mm_sign_pm1[128];

/* IQ1_M's rows of 8 values 8 * g + sigma (fgg_mm_iq1_rows) for index i: the grid row of i & 2047,
 * sigma -1 where bit 11 of i is set, else +1 (fgg_mm_init_tables). IQ1_M keeps each row's delta
 * sign next to its 3 high index bits, so one load gives the row's values. */
static uint64_t fgg_mm_iq1_m_values[4096];

/* 8 int16 fields f as 2 f + 1. */
FGG_MM_ALWAYS_INLINE __m128i fgg_mm_odd16(__m128i f) { return _mm_add_epi16(_mm_add_epi16(f, f), _mm_set1_epi16(1)); }

/* The integer scales of an IQ super-block's 16 halves of runs (fgg_mm_iq_scales), all at once, as
 * fgg_mm_sub_scale takes them: lo holds runs 0-3 (words 2j and 2j + 1: run j's first and last 16
 * values), hi runs 4-7, each broadcast to both lanes. Per run they had taken a dozen scalar
 * operations (IQ1_M's 3-bit fields: 40 % of its row kernel's time). Not IQ2_XXS and IQ3_XXS
 * (fgg_mm_iq_run_us). */
FGG_MM_ALWAYS_INLINE void fgg_mm_iq_scale_vectors(int kind, const uint8_t *wb, __m256i *lo, __m256i *hi)
{
    __m128i a, b; /* a: runs 0-3, b: runs 4-7, as words 2j, 2j + 1 */
    switch (kind) {
    case FGG_MM_K_IQ1_M: {
        /* 4 words of four 3-bit fields (run 2k: bits 0-2 and 3-5 of word k; run 2k + 1: 6-8 and
         * 9-11): each field moved to bits 9-11 by a multiply, then shifted down */
        const __m128i words = _mm_loadl_epi64((const __m128i *)(wb + 48));
        const __m128i up = _mm_setr_epi16(1 << 9, 1 << 6, 1 << 3, 1, 1 << 9, 1 << 6, 1 << 3, 1), m7 = _mm_set1_epi16(7);
        const __m128i wa = _mm_shuffle_epi8(words, _mm_setr_epi8(0, 1, 0, 1, 0, 1, 0, 1, 2, 3, 2, 3, 2, 3, 2, 3));
        const __m128i wb4 = _mm_shuffle_epi8(words, _mm_setr_epi8(4, 5, 4, 5, 4, 5, 4, 5, 6, 7, 6, 7, 6, 7, 6, 7));
        a = fgg_mm_odd16(_mm_and_si128(_mm_srli_epi16(_mm_mullo_epi16(wa, up), 9), m7));
        b = fgg_mm_odd16(_mm_and_si128(_mm_srli_epi16(_mm_mullo_epi16(wb4, up), 9), m7));
        break;
    }
    case FGG_MM_K_IQ2_XS:
    case FGG_MM_K_IQ2_S: {
        /* a byte per run: its low nibble the first 16 values', its high nibble the last 16's */
        const __m128i v = _mm_cvtepu8_epi16(_mm_loadl_epi64((const __m128i *)(wb + (kind == FGG_MM_K_IQ2_XS ? 66 : 74))));
        const __m128i l4 = fgg_mm_odd16(_mm_and_si128(v, _mm_set1_epi16(15))), h4 = fgg_mm_odd16(_mm_srli_epi16(v, 4));
        a = _mm_unpacklo_epi16(l4, h4);
        b = _mm_unpackhi_epi16(l4, h4);
        break;
    }
    default: {
        /* one scale per run (r: 8 words), twice; IQ2_XXS and IQ3_XXS take theirs per run */
        __m128i r = _mm_setzero_si128();
        if (kind == FGG_MM_K_IQ3_S) { /* nibble j % 2 of byte 106 + j / 2 */
            const __m128i v = _mm_cvtepu8_epi16(_mm_cvtsi32_si128((int)fgg_load_u32le(wb + 106)));
            r = fgg_mm_odd16(_mm_unpacklo_epi16(_mm_and_si128(v, _mm_set1_epi16(15)), _mm_srli_epi16(v, 4)));
        } else if (kind == FGG_MM_K_IQ1_S) { /* bits 12-14 of the u16 at 34 + 2j */
            r = fgg_mm_odd16(_mm_and_si128(_mm_srli_epi16(_mm_loadu_si128((const __m128i *)(wb + 34)), 12), _mm_set1_epi16(7)));
        } else if (kind == FGG_MM_K_IQ4_XS) { /* ls_j - 32: 4 bits of byte 4 + j / 2, 2 of the u16 at 2 */
            const __m128i v = _mm_cvtepu8_epi16(_mm_cvtsi32_si128((int)fgg_load_u32le(wb + 4)));
            const __m128i low = _mm_unpacklo_epi16(_mm_and_si128(v, _mm_set1_epi16(15)), _mm_srli_epi16(v, 4));
            const __m128i high = _mm_srli_epi16(_mm_mullo_epi16(_mm_set1_epi16((short)fgg_load_u16le(wb + 2)),
                                                                _mm_setr_epi16(1 << 14, 1 << 12, 1 << 10, 1 << 8, 1 << 6, 1 << 4, 1 << 2, 1)), 14);
            r = _mm_sub_epi16(_mm_or_si128(low, _mm_slli_epi16(high, 4)), _mm_set1_epi16(32));
        }
        a = _mm_unpacklo_epi16(r, r);
        b = _mm_unpackhi_epi16(r, r);
        break;
    }
    }
    *lo = _mm256_broadcastsi128_si256(a);
    *hi = _mm256_broadcastsi128_si256(b);
}

/* Run j of an IQ super-block as the row kernel meets it: u the 32 values' magnitudes, s their
 * signs (bytes of +1 or -1, or the values themselves), so that u times sign_epi8(x, s) is v times
 * x, and sc its scales (fgg_mm_iq_scale_vectors' lo and hi; IQ2_XXS's and IQ3_XXS's from the word
 * that holds the run's sign codes, measured 4 and 11 % faster so). The grid types' u are their
 * grid rows as stored (the grids hold magnitudes) and s comes from their sign codes or bits, as
 * ggml's kernels do: no signed values made and taken apart again. IQ1_S: u = |g|, s = g (its
 * deltas: fgg_mm_iq1_s_deltas); IQ1_M and IQ4_XS: u = |v|, s = v. */
FGG_MM_ALWAYS_INLINE void fgg_mm_iq_run_us(int kind, const uint8_t *wb, int j, __m256i lo, __m256i hi, __m256i *u,
                                           __m256i *s, __m256i *sc)
{
    switch (kind) {
    case FGG_MM_K_IQ2_XXS: {
        const uint8_t *q = wb + 2 + 8 * j;
        const uint32_t aux = fgg_load_u32le(q + 4);
        *u = _mm256_set_epi64x((long long)fgg_mm_grid_row8(fgg_iq2xxs_grid[q[3]]), (long long)fgg_mm_grid_row8(fgg_iq2xxs_grid[q[2]]),
                               (long long)fgg_mm_grid_row8(fgg_iq2xxs_grid[q[1]]), (long long)fgg_mm_grid_row8(fgg_iq2xxs_grid[q[0]]));
        *s = _mm256_set_epi64x((long long)fgg_mm_sign_pm1[(aux >> 21) & 127], (long long)fgg_mm_sign_pm1[(aux >> 14) & 127],
                               (long long)fgg_mm_sign_pm1[(aux >> 7) & 127], (long long)fgg_mm_sign_pm1[aux & 127]);
        *sc = _mm256_set1_epi16((short)(2 * (aux >> 28) + 1)); /* the top 4 bits of the sign word */
        break;
    }
    case FGG_MM_K_IQ2_XS: {
        /* the four u16 from one load: an array of them, filled by 2-byte loads, was spilled and read
         * back 8 bytes wide (a failed store forward: the batch kernel's unpacking took 1.9x) */
        const uint64_t q = fgg_load_u64le(wb + 2 + 8 * j);
        const uint32_t p[4] = {(uint32_t)(q & 0xffff), (uint32_t)((q >> 16) & 0xffff), (uint32_t)((q >> 32) & 0xffff),
                               (uint32_t)(q >> 48)};
        *u = _mm256_set_epi64x((long long)fgg_mm_grid_row8(fgg_iq2xs_grid[p[3] & 511]), (long long)fgg_mm_grid_row8(fgg_iq2xs_grid[p[2] & 511]),
                               (long long)fgg_mm_grid_row8(fgg_iq2xs_grid[p[1] & 511]), (long long)fgg_mm_grid_row8(fgg_iq2xs_grid[p[0] & 511]));
        *s = _mm256_set_epi64x((long long)fgg_mm_sign_pm1[p[3] >> 9], (long long)fgg_mm_sign_pm1[p[2] >> 9],
                               (long long)fgg_mm_sign_pm1[p[1] >> 9], (long long)fgg_mm_sign_pm1[p[0] >> 9]);
        break;
    }
    case FGG_MM_K_IQ3_XXS: {
        const uint8_t *q = wb + 2 + 8 * j;
        const uint32_t aux = fgg_load_u32le(wb + 66 + 4 * j);
        uint32_t g[8]; /* 8 loads: faster than one gather on Zen 4 (0.43 against 0.49 ms here) */
        for (int l = 0; l < 8; l++) g[l] = fgg_load_u32le(fgg_iq3xxs_grid[q[l]]);
        *u = _mm256_setr_epi32((int)g[0], (int)g[1], (int)g[2], (int)g[3], (int)g[4], (int)g[5], (int)g[6], (int)g[7]);
        *s = _mm256_set_epi64x((long long)fgg_mm_sign_pm1[(aux >> 21) & 127], (long long)fgg_mm_sign_pm1[(aux >> 14) & 127],
                               (long long)fgg_mm_sign_pm1[(aux >> 7) & 127], (long long)fgg_mm_sign_pm1[aux & 127]);
        *sc = _mm256_set1_epi16((short)(2 * (aux >> 28) + 1));
        break;
    }
    case FGG_MM_K_IQ3_S: {
        const uint8_t *qs = wb + 2 + 8 * j;
        const uint32_t qh = wb[66 + j];
        uint32_t g[8]; /* 8 loads, as IQ3_XXS: one gather made the exact path's one row 1.3x slower */
        for (int l = 0; l < 8; l++) g[l] = fgg_load_u32le(fgg_iq3s_grid[qs[l] | (((qh >> l) & 1) << 8)]);
        *u = _mm256_setr_epi32((int)g[0], (int)g[1], (int)g[2], (int)g[3], (int)g[4], (int)g[5], (int)g[6], (int)g[7]);
        *s = _mm256_or_si256(fgg_mm_bits32(fgg_load_u32le(wb + 74 + 4 * j)), _mm256_set1_epi8(1));
        break;
    }
    case FGG_MM_K_IQ2_S: {
        const uint8_t *qs = wb + 2 + 4 * j, qh = wb[66 + j];
        *u = _mm256_set_epi64x((long long)fgg_mm_grid_row8(fgg_iq2s_grid[qs[3] | ((qh << 2) & 0x300)]),
                               (long long)fgg_mm_grid_row8(fgg_iq2s_grid[qs[2] | ((qh << 4) & 0x300)]),
                               (long long)fgg_mm_grid_row8(fgg_iq2s_grid[qs[1] | ((qh << 6) & 0x300)]),
                               (long long)fgg_mm_grid_row8(fgg_iq2s_grid[qs[0] | ((qh << 8) & 0x300)]));
        *s = _mm256_or_si256(fgg_mm_bits32(fgg_load_u32le(wb + 34 + 4 * j)), _mm256_set1_epi8(1));
        break;
    }
    case FGG_MM_K_IQ1_S: { /* g only: its rows' delta is taken against x's sums (fgg_mm_iq1_s_deltas) */
        const uint8_t *qs = wb + 2 + 4 * j;
        const uint32_t qh = fgg_load_u16le(wb + 34 + 2 * j);
        const __m256i g = _mm256_set_epi64x((long long)fgg_mm_grid_row8((const uint8_t *)fgg_iq1s_grid[qs[3] | ((qh >> 1) & 0x700)]),
                                            (long long)fgg_mm_grid_row8((const uint8_t *)fgg_iq1s_grid[qs[2] | ((qh << 2) & 0x700)]),
                                            (long long)fgg_mm_grid_row8((const uint8_t *)fgg_iq1s_grid[qs[1] | ((qh << 5) & 0x700)]),
                                            (long long)fgg_mm_grid_row8((const uint8_t *)fgg_iq1s_grid[qs[0] | ((qh << 8) & 0x700)]));
        *u = _mm256_sign_epi8(g, g);
        *s = g;
        break;
    }
    case FGG_MM_K_IQ1_M: {
        const uint8_t *qs = wb + 4 * j;
        const uint32_t h0 = wb[32 + 2 * j], h1 = wb[33 + 2 * j]; /* per row: 3 high index bits, then the sign */
        const __m256i v = _mm256_set_epi64x((long long)fgg_mm_iq1_m_values[qs[3] | ((h1 & 0xf0) << 4)],
                                            (long long)fgg_mm_iq1_m_values[qs[2] | ((h1 & 0x0f) << 8)],
                                            (long long)fgg_mm_iq1_m_values[qs[1] | ((h0 & 0xf0) << 4)],
                                            (long long)fgg_mm_iq1_m_values[qs[0] | ((h0 & 0x0f) << 8)]);
        *u = _mm256_sign_epi8(v, v);
        *s = v;
        break;
    }
    default: {
        int unused[2];
        const __m256i v = fgg_mm_iq_run(kind, wb, j, unused);
        *u = _mm256_sign_epi8(v, v);
        *s = v;
        break;
    }
    }
    if (kind != FGG_MM_K_IQ2_XXS && kind != FGG_MM_K_IQ3_XXS) *sc = fgg_mm_sub_scale(lo, hi, j);
}

/* Run j of an IQ super-block: its 32 signed values (those of fgg_mm_iq_run), their magnitudes in
 * *u, its scales. The grid types and IQ1_M from the row kernels' magnitudes and signs
 * (fgg_mm_iq_run_us: grid rows by plain loads, signs from a table or one compare), signed by one
 * sign_epi8; IQ1_S's u and s there leave out its deltas, and IQ4_XS's are its values, so those two
 * by fgg_mm_iq_run. The batch kernel's unpacking, avx2 build, 8 rows of x, 4096 x 14336, one
 * thread: IQ2_XXS 16.2 -> 14.5 ms, IQ3_XXS 18.8 -> 16.4, IQ1_M 17.6 -> 14.8, the others level. */
FGG_MM_ALWAYS_INLINE __m256i fgg_mm_iq_run_signed(int kind, const uint8_t *wb, int j, int scale[2], __m256i *u)
{
    if (kind == FGG_MM_K_IQ1_S) {  /* IQ1_M's rows of 8 (g +- 1/8): one load per 8 values */
        const uint8_t *qs = wb + 2 + 4 * j;
        const uint32_t qh = fgg_load_u16le(wb + 34 + 2 * j), minus = (qh >> 4) & 0x800;
        const __m256i v = _mm256_set_epi64x((long long)fgg_mm_iq1_m_values[qs[3] | ((qh >> 1) & 0x700) | minus],
                                            (long long)fgg_mm_iq1_m_values[qs[2] | ((qh << 2) & 0x700) | minus],
                                            (long long)fgg_mm_iq1_m_values[qs[1] | ((qh << 5) & 0x700) | minus],
                                            (long long)fgg_mm_iq1_m_values[qs[0] | ((qh << 8) & 0x700) | minus]);
        fgg_mm_iq_scales(kind, wb, j, scale);
        *u = _mm256_sign_epi8(v, v);
        return v;
    }
    if (kind == FGG_MM_K_IQ4_XS) {
        const __m256i v = fgg_mm_iq_run(kind, wb, j, scale);
        *u = _mm256_sign_epi8(v, v);
        return v;
    }
    const __m256i none = _mm256_setzero_si256(); /* the scale vectors: the row kernels' sc, unused */
    __m256i mag, sg, unused;
    fgg_mm_iq_run_us(kind, wb, j, none, none, &mag, &sg, &unused);
    fgg_mm_iq_scales(kind, wb, j, scale);
    *u = mag;
    return _mm256_sign_epi8(mag, sg);
}
#endif

/* Run j of fgg_mm_ksb_iq: its values (and in the SIMD builds their magnitudes) and scales. */
FGG_MM_ALWAYS_INLINE void fgg_mm_ksb_iq_run(int kind, const uint8_t *wb, int j, fgg_mm_ksb *s, int8_t sc[16])
{
    int scale[2];
#if defined(FGG_MM_INT_SIMD)
    s->v[j] = fgg_mm_iq_run_signed(kind, wb, j, scale, &s->u[j]);
#else
    /* signed: the portable dot multiplies values and scales in int16 */
    s->u[j] = fgg_mm_iq_run(kind, wb, j, scale);
#endif
    sc[2 * j] = (int8_t)scale[0];
    sc[2 * j + 1] = (int8_t)scale[1];
}

FGG_MM_ALWAYS_INLINE void fgg_mm_ksb_iq(int kind, const uint8_t *wb, fgg_mm_ksb *s, float *d)
{
    int8_t sc[16];
    const int16_t bs[16] = {0};
    *d = fgg_mm_iq_d(kind, wb);
    /* Unrolled, run j's offsets and shifts are immediates: the batch kernels' unpacking, 8 to 64
     * rows, IQ1_M and IQ2_XS 1.02-1.14x faster, IQ3_XXS 1.0-1.10x; the portable build's scales.
     * In the SIMD builds IQ1_S, IQ2_S and IQ2_XXS measured 0.94-0.98x so on VNNI: rolled. */
#if defined(FGG_MM_INT_SIMD)
    const int rolled = kind == FGG_MM_K_IQ1_S || kind == FGG_MM_K_IQ2_S || kind == FGG_MM_K_IQ2_XXS;
#else
    const int rolled = 0;
#endif
    if (rolled) {
        for (int j = 0; j < 8; j++) fgg_mm_ksb_iq_run(kind, wb, j, s, sc);
    } else {
#pragma GCC unroll 8
        for (int j = 0; j < 8; j++) fgg_mm_ksb_iq_run(kind, wb, j, s, sc);
    }
    fgg_mm_ksb_scales16(s, sc, bs);
}


/* Whether Q<kind>_K has mins (bs times bsum scaled by dmin, subtracted at the end) rather than
 * an offset (bs times bsum subtracted from the lanes, Q3_K and Q6_K). */
FGG_MM_ALWAYS_INLINE int fgg_mm_k_has_min(int kind) { return kind == FGG_MM_K2 || kind == FGG_MM_K4 || kind == FGG_MM_K5; }

/* Unpack super-block wb of Q<kind>_K into s; its d (and dmin). */
FGG_MM_ALWAYS_INLINE void fgg_mm_k_unpack_fields(int kind, const uint8_t *wb, fgg_mm_ksb *s, float *d, float *dmin)
{
    if (fgg_mm_k_signed(kind)) {
        fgg_mm_ksb_iq(kind, wb, s, d);
        return;
    }
    switch (kind) {
    case FGG_MM_K2:
        *d = fgg_half_to_float_scale(fgg_load_u16le(wb + 80));
        *dmin = fgg_half_to_float_scale(fgg_load_u16le(wb + 82));
        fgg_mm_ksb_q2_k(wb, s);
        break;
    case FGG_MM_K3:
        *d = fgg_half_to_float_scale(fgg_load_u16le(wb + 108));
        fgg_mm_ksb_q3_k(wb, s);
        break;
    case FGG_MM_K_TQ2_0:
    case FGG_MM_K_TQ1_0:
        *d = fgg_half_to_float_scale(fgg_load_u16le(wb + (kind == FGG_MM_K_TQ2_0 ? 64 : 52)));
        fgg_mm_ksb_ternary(kind, wb, s);
        break;
    case FGG_MM_K4:
    case FGG_MM_K5:
        *d = fgg_half_to_float_scale(fgg_load_u16le(wb));
        *dmin = fgg_half_to_float_scale(fgg_load_u16le(wb + 2));
        if (kind == FGG_MM_K4)
            fgg_mm_ksb_q4_k(wb, s);
        else
            fgg_mm_ksb_q5_k(wb, s);
        break;
    default:
        *d = fgg_half_to_float_scale(fgg_load_u16le(wb + 208));
        fgg_mm_ksb_q6_k(wb, s);
        break;
    }
}

FGG_MM_ALWAYS_INLINE void fgg_mm_k_unpack(int kind, const uint8_t *wb, fgg_mm_ksb *s, float *d, float *dmin)
{
    fgg_mm_k_unpack_fields(kind, wb, s, d, dmin);
#if !defined(FGG_MM_INT_SIMD) && FGG_HAVE_SSE2
    for (int j = 0; j < 8; j++)
        for (int h = 0; h < 2; h++) {  /* bytes widened to int16 (sign-extended), times the scale */
            const __m128i v = _mm_loadu_si128((const __m128i *)(s->u[j].b + 16 * h)), sc = _mm_set1_epi16(s->sc[2 * j + h]);
            _mm_storeu_si128((__m128i *)(s->ws + 32 * j + 16 * h), _mm_mullo_epi16(_mm_srai_epi16(_mm_unpacklo_epi8(v, v), 8), sc));
            _mm_storeu_si128((__m128i *)(s->ws + 32 * j + 16 * h + 8), _mm_mullo_epi16(_mm_srai_epi16(_mm_unpackhi_epi8(v, v), 8), sc));
        }
#elif !defined(FGG_MM_INT_SIMD)
    for (int j = 0; j < 8; j++) {
        int16_t lo = s->sc[2 * j], hi = s->sc[2 * j + 1];
        for (int i = 0; i < 16; i++) s->ws[32 * j + i] = (int16_t)(s->u[j].b[i] * lo);
        for (int i = 16; i < 32; i++) s->ws[32 * j + i] = (int16_t)(s->u[j].b[i] * hi);
    }
#endif
}

#if defined(FGG_MM_INT_SIMD)
/* fgg_mm_rows_k's steps for a group of exactly 8 rows of x (row i at x + i * xs): per super-block
 * the 8 rows' integer lanes first (fgg_mm_ksb_dot8: each sub-block's bytes and scales loaded once
 * for the 8 rows, where a row at a time loads them 8 times), then their float steps, the 8 rows'
 * in one vector (a lane per row: fgg_mm_totals8). The same integers and float operations per row,
 * so the same bits. */
FGG_MM_ALWAYS_INLINE void fgg_mm_rows8_k(int kind, const uint8_t *w, ptrdiff_t nsb, const fgg_mm_q8k *x, ptrdiff_t xs,
                                         float *out, ptrdiff_t os)
{
    __m256 acc = _mm256_setzero_ps(), accm = _mm256_setzero_ps(); /* lane i: row i's float */
    fgg_mm_ksb s;
    float d, dmin = 0.0f;
    const ptrdiff_t bytes = fgg_mm_k_bytes(kind);
    for (ptrdiff_t b = 0; b < nsb; b++) {
        __m256i lanes[8], bl[8];
        fgg_mm_k_unpack(kind, w + b * bytes, &s, &d, &dmin);
        fgg_mm_ksb_dot8(&s, x + b, xs, fgg_mm_k_signed(kind), lanes);
        const __m256 xd = _mm256_setr_ps(x[b].d, x[xs + b].d, x[2 * xs + b].d, x[3 * xs + b].d, x[4 * xs + b].d,
                                         x[5 * xs + b].d, x[6 * xs + b].d, x[7 * xs + b].d);
        if (!fgg_mm_k_signed(kind))
            for (int i = 0; i < 8; i++) bl[i] = fgg_mm_ksb_bsum(&s, x[i * xs + b].bsum);
        if (!fgg_mm_k_signed(kind) && !fgg_mm_k_has_min(kind)) /* offsets: subtracted in integers */
            for (int i = 0; i < 8; i++) lanes[i] = fgg_mm_lanes_sub(lanes[i], bl[i]);
        /* fgg_mm_kacc_add for the 8 rows at once: the totals (exact), then the same float steps */
        acc = _mm256_add_ps(acc, _mm256_mul_ps(_mm256_cvtepi32_ps(fgg_mm_totals8(lanes)),
                                               _mm256_mul_ps(_mm256_set1_ps(d), xd)));
        if (fgg_mm_k_has_min(kind))
            accm = _mm256_add_ps(accm, _mm256_mul_ps(_mm256_cvtepi32_ps(fgg_mm_totals8(bl)),
                                                     _mm256_mul_ps(_mm256_set1_ps(dmin), xd)));
    }
    float a[8], am[8];
    _mm256_storeu_ps(a, acc);
    _mm256_storeu_ps(am, accm);
    for (int i = 0; i < 8; i++) out[i * os] = fgg_mm_k_has_min(kind) ? a[i] - am[i] : a[i];
}
#endif

#if defined(FGG_MM_INT_SIMD)
/* fgg_mm_rows_k's 1 to 7 rows of x for Q2_K to Q6_K, TQ2_0 and TQ1_0, up to 4 at a time, each
 * sub-block multiplied with the rows as soon as its bytes are unpacked: unpacking the whole
 * super-block first (fgg_mm_ksb) holds 17 vectors, which spill. Its scales are the unpackers'
 * (fgg_mm_k_scales). The same products summed into the same lanes (integers), then the same float
 * steps: the same bits. One row: 1.03-1.2x ggml's speed relative to before
 * (benchmarks/c/int_row1.c); 2 to 5 rows 1.2-1.5x the speed of the fgg_mm_ksb loop. */
/* fgg_mm_kacc_add twice, for a super-block with mins: lane 0 of acc2 takes the total of l times
 * lane 0 of f2, lane 1 the total of lm times lane 1 (the same float operations, lane by lane). One
 * horizontal sum for both totals (integers: their order does not matter), one convert, one
 * multiply and one add, where the single-row kernel's loop was short enough for two chains of them
 * to cost a sixth of it. */
static inline __m128 fgg_mm_kacc2_add(__m128 acc2, __m256i l, __m256i lm, __m128 f2)
{
    __m256i h = _mm256_hadd_epi32(l, lm); /* l01 l23 m01 m23 | l45 l67 m45 m67 */
    __m128i s = _mm_add_epi32(_mm256_castsi256_si128(h), _mm256_extracti128_si256(h, 1));
    s = _mm_hadd_epi32(s, s); /* the totals of l and lm, twice */
    return _mm_add_ps(acc2, _mm_mul_ps(_mm_cvtepi32_ps(s), f2));
}

/* A super-block of a kind without mins, for one row of x (xb): its lanes less the bsum term (the
 * offsets, subtracted in integers) and, in *f, its factor d * d_x. l: the integer lanes; bs:
 * fgg_mm_k_scales's. */
FGG_MM_ALWAYS_INLINE __m256i fgg_mm_k_offset_lanes(int kind, const uint8_t *wb, const fgg_mm_q8k *xb, __m256i l, __m256i bs,
                                                   float *f)
{
    const __m256i bt = _mm256_madd_epi16(_mm256_loadu_si256((const __m256i *)xb->bsum), bs);
    const ptrdiff_t at = kind == FGG_MM_K3 ? 108 : kind == FGG_MM_K6 ? 208 : kind == FGG_MM_K_TQ2_0 ? 64 : 52;
    *f = fgg_half_to_float_scale(fgg_load_u16le(wb + at)) * xb->d;
    return _mm256_sub_epi32(l, bt);
}

/* The end of a super-block in fgg_mm_rown_k for one row of x (xb): the bsum term
 * (fgg_mm_ksb_bsum) and the float steps. */
FGG_MM_ALWAYS_INLINE void fgg_mm_rown_k_add(int kind, const uint8_t *wb, const fgg_mm_q8k *xb, __m256i l, __m256i bs,
                                            float *a, __m128 *a2)
{
    if (!fgg_mm_k_has_min(kind)) {
        float f;
        const __m256i t = fgg_mm_k_offset_lanes(kind, wb, xb, l, bs, &f);
        *a = fgg_mm_kacc_add(*a, t, f);
    } else { /* mins: their own lanes, subtracted at the end; d and dmin side by side */
        const __m256i bt = _mm256_madd_epi16(_mm256_loadu_si256((const __m256i *)xb->bsum), bs);
        const ptrdiff_t at = kind == FGG_MM_K2 ? 80 : 0; /* both halves in one conversion (F16C's) */
        const __m128 dd = _mm_cvtph_ps(_mm_cvtsi32_si128((int)fgg_load_u32le(wb + at)));
        *a2 = fgg_mm_kacc2_add(*a2, l, bt, _mm_mul_ps(dd, _mm_set1_ps(xb->d)));
    }
}

/* fgg_mm_rown_k's results: with mins, each row's total less its mins' total. */
FGG_MM_ALWAYS_INLINE void fgg_mm_rown_k_out(int kind, int NR, const float a[4], const __m128 a2[4], float *out,
                                            ptrdiff_t os)
{
    for (int i = 0; i < NR; i++) {
        if (fgg_mm_k_has_min(kind)) {
            float t[4];
            _mm_storeu_ps(t, a2[i]);
            out[i * os] = t[0] - t[1];
        } else {
            out[i * os] = a[i];
        }
    }
}

/* A row's super-blocks waiting for their float steps (fgg_mm_kacc_add8: 8 at once): the integer
 * lanes of each (less the bsum term) and its factor. The IQ row kernels and, of fgg_mm_rown_k's
 * kinds, Q3_K and TQ1_0 (fgg_mm_k_defers). One row, 4096 x 14336: Q3_K 1.08-1.13x faster so,
 * TQ1_0 about 1.1x; the kinds with mins (two totals: 0.83-0.96x) measured slower, Q6_K and TQ2_0
 * level, so they add each super-block at once. */
typedef struct {
    __m256i l[8];
    float f[8];
} fgg_mm_kpend;

FGG_MM_ALWAYS_INLINE int fgg_mm_k_defers(int kind) { return kind == FGG_MM_K3 || kind == FGG_MM_K_TQ1_0; }

/* The float steps of a row's n pending super-blocks, in order. */
FGG_MM_ALWAYS_INLINE float fgg_mm_kpend_flush(const fgg_mm_kpend *p, int n, float a)
{
    if (n == 8) return fgg_mm_kacc_add8(a, p->l, p->f);
    for (int k = 0; k < n; k++) a = fgg_mm_kacc_add(a, p->l[k], p->f[k]);
    return a;
}

/* After slot np of NR rows' pending super-blocks is filled: the next slot, the 8 added first when
 * they are full. */
FGG_MM_ALWAYS_INLINE int fgg_mm_kpend_next(int NR, const fgg_mm_kpend *pend, int np, float *a)
{
    if (++np < 8) return np;
    for (int i = 0; i < NR; i++) a[i] = fgg_mm_kpend_flush(&pend[i], 8, a[i]);
    return 0;
}

/* NR (1 to 4, a constant) rows of x (row i at x + i * xs) at once: each sub-block's unpacked bytes
 * and scales, in registers, meet the NR rows before the next is unpacked. */
FGG_MM_ALWAYS_INLINE void fgg_mm_rown_k(int kind, int NR, const uint8_t *w, ptrdiff_t nsb, const fgg_mm_q8k *x,
                                        ptrdiff_t xs, float *out, ptrdiff_t os)
{
    const ptrdiff_t bytes = fgg_mm_k_bytes(kind);
    float a[4] = {0.0f, 0.0f, 0.0f, 0.0f};
    __m128 a2[4]; /* the kinds with mins: row i's a and am in lanes 0 and 1 */
    for (int i = 0; i < NR; i++) a2[i] = _mm_setzero_ps();
    fgg_mm_kpend pend[4];
    int np = 0;
    for (ptrdiff_t b = 0; b < nsb; b++) {
        const uint8_t *wb = w + b * bytes;
        const int8_t *xq[4];
        __m256i l[4], lo, hi;
        for (int i = 0; i < NR; i++) {
            xq[i] = x[i * xs + b].q;
            l[i] = _mm256_setzero_si256();
        }
        __m256i bs, b8;
        if (kind == FGG_MM_K4 || kind == FGG_MM_K5) { /* the 16 scale and min bytes, widened by pshufb */
            b8 = _mm256_broadcastsi128_si256(fgg_mm_k4_scales128(wb + 4));
            bs = fgg_mm_k4_bs(b8);
        } else {
            bs = fgg_mm_k_scales(kind, wb, &lo, &hi);
        }
        fgg_mm_prefetch_ahead(wb, bytes);
        if (kind == FGG_MM_K_TQ1_0) { /* scales all 1: the products add up in int16 (|sum| <= 8 * 2 * 2 * 127) */
            __m256i p16[4];
            for (int i = 0; i < NR; i++) p16[i] = _mm256_setzero_si256();
#pragma GCC unroll 8
            for (int j = 0; j < 8; j++) {
                const __m256i u = fgg_mm_tq1_0_digits(wb, j);
                for (int i = 0; i < NR; i++)
                    p16[i] = _mm256_add_epi16(p16[i], _mm256_maddubs_epi16(u, _mm256_loadu_si256((const __m256i *)(xq[i] + 32 * j))));
            }
            for (int i = 0; i < NR; i++) l[i] = _mm256_madd_epi16(p16[i], _mm256_set1_epi16(1));
        } else if (kind == FGG_MM_K2 || kind == FGG_MM_K3 || kind == FGG_MM_K_TQ2_0) {
            /* 2-bit fields (fgg_mm_ksb_q2_k, _q3_k, fgg_mm_ksb_ternary) */
            __m256i p16[4]; /* TQ2_0: its scales are all 1, so the products add up in int16
                               (|sum| <= 8 * 2 * 2 * 127) and madd once: the same lanes */
            for (int i = 0; i < NR; i++) p16[i] = _mm256_setzero_si256();
            for (int h = 0; h < 2; h++) {
                const ptrdiff_t at = kind == FGG_MM_K2 ? 16 : kind == FGG_MM_K3 ? 32 : 0;
                __m256i v = _mm256_loadu_si256((const __m256i *)(wb + at + 32 * h));
                for (int t = 0; t < 4; t++) {
                    const int j = 4 * h + t;
                    __m256i u = _mm256_and_si256(_mm256_srli_epi16(v, 2 * t), _mm256_set1_epi8(3));
                    if (kind == FGG_MM_K3) u = fgg_mm_q3_k_u(wb, u, j);
                    const __m256i sc = fgg_mm_sub_scale(lo, hi, j);
                    for (int i = 0; i < NR; i++) {
                        __m256i p = _mm256_maddubs_epi16(u, _mm256_loadu_si256((const __m256i *)(xq[i] + 32 * j)));
                        if (kind == FGG_MM_K_TQ2_0)
                            p16[i] = _mm256_add_epi16(p16[i], p);
                        else
                            l[i] = _mm256_add_epi32(l[i], _mm256_madd_epi16(p, sc));
                    }
                }
            }
            if (kind == FGG_MM_K_TQ2_0)
                for (int i = 0; i < NR; i++) l[i] = _mm256_madd_epi16(p16[i], _mm256_set1_epi16(1));
        } else if (kind == FGG_MM_K6) {
            for (int h = 0; h < 2; h++) {
                __m256i u[4];
                fgg_mm_q6_k_half_u(wb, h, u);
                for (int t = 0; t < 4; t++) {
                    const __m256i sc = fgg_mm_sub_scale(lo, hi, 4 * h + t);
                    for (int i = 0; i < NR; i++) {
                        __m256i p = _mm256_maddubs_epi16(u[t], _mm256_loadu_si256((const __m256i *)(xq[i] + 32 * (4 * h + t))));
                        l[i] = _mm256_add_epi32(l[i], _mm256_madd_epi16(p, sc));
                    }
                }
            }
        } else {
            for (int g = 0; g < 4; g++) {
                __m256i u[2];
                fgg_mm_nibbles32(wb + (kind == FGG_MM_K5 ? 48 : 16) + 32 * g, &u[0], &u[1]);
                for (int t = 0; t < 2; t++) {
                    const int j = 2 * g + t;
                    if (kind == FGG_MM_K5) { /* bit j of qh[k]: the fifth bit of value k, moved to bit 4 */
                        const __m256i qh = _mm256_loadu_si256((const __m256i *)(wb + 16));
                        const __m256i at4 = j <= 4 ? _mm256_slli_epi16(qh, 4 - j) : _mm256_srli_epi16(qh, j - 4);
                        u[t] = _mm256_or_si256(u[t], _mm256_and_si256(at4, _mm256_set1_epi8(0x10)));
                    }
                    const __m256i sc = _mm256_shuffle_epi8(b8, _mm256_set1_epi16((short)(0x8000 | j))); /* byte j */
                    for (int i = 0; i < NR; i++) {
                        __m256i p = _mm256_maddubs_epi16(u[t], _mm256_loadu_si256((const __m256i *)(xq[i] + 32 * j)));
                        l[i] = _mm256_add_epi32(l[i], _mm256_madd_epi16(p, sc));
                    }
                }
            }
        }
        if (fgg_mm_k_defers(kind)) {
            for (int i = 0; i < NR; i++) pend[i].l[np] = fgg_mm_k_offset_lanes(kind, wb, x + i * xs + b, l[i], bs, &pend[i].f[np]);
            np = fgg_mm_kpend_next(NR, pend, np, a);
        } else {
            for (int i = 0; i < NR; i++) fgg_mm_rown_k_add(kind, wb, x + i * xs + b, l[i], bs, &a[i], &a2[i]);
        }
    }
    for (int i = 0; i < NR; i++) a[i] = fgg_mm_kpend_flush(&pend[i], np, a[i]);
    fgg_mm_rown_k_out(kind, NR, a, a2, out, os);
}

#if defined(__AVX512BW__)
/* fgg_mm_rown_k for Q2_K to Q6_K on 512-bit vectors (the avx512 build): sub-blocks 2p and 2p + 1
 * side by side, met by x's 64 bytes at 64p in one maddubs. Each super-block's integer total and
 * its float steps are fgg_mm_rown_k's, so the bits are the same. */
FGG_MM_ALWAYS_INLINE int fgg_mm_k512(int kind) { return kind >= FGG_MM_K2 && kind <= FGG_MM_K6; }

/* Word k of a 128-bit lane into all of lane k (pairs 0 and 2 of a half), or word 4 + k (1, 3). */
static const int8_t fgg_mm_pair_pick[2][64] = {
#define FGG_MM_W(k) 2 * (k), 2 * (k) + 1, 2 * (k), 2 * (k) + 1, 2 * (k), 2 * (k) + 1, 2 * (k), 2 * (k) + 1, \
                    2 * (k), 2 * (k) + 1, 2 * (k), 2 * (k) + 1, 2 * (k), 2 * (k) + 1, 2 * (k), 2 * (k) + 1
    {FGG_MM_W(0), FGG_MM_W(1), FGG_MM_W(2), FGG_MM_W(3)},
    {FGG_MM_W(4), FGG_MM_W(5), FGG_MM_W(6), FGG_MM_W(7)},
#undef FGG_MM_W
};

/* 256 bits in both halves. */
FGG_MM_ALWAYS_INLINE __m512i fgg_mm_both_halves(const uint8_t *p)
{
    return _mm512_broadcast_i64x4(_mm256_loadu_si256((const __m256i *)p));
}

/* A vector of bytes: lo in the low half, hi in the high half. */
FGG_MM_ALWAYS_INLINE __m512i fgg_mm_halves8(int lo, int hi)
{
    return _mm512_inserti64x4(_mm512_set1_epi8((char)lo), _mm256_set1_epi8((char)hi), 1);
}

/* The same of words (shift counts). */
FGG_MM_ALWAYS_INLINE __m512i fgg_mm_halves16(int lo, int hi)
{
    return _mm512_inserti64x4(_mm512_set1_epi16((short)lo), _mm256_set1_epi16((short)hi), 1);
}

/* The bytes q of sub-blocks 2p (low half) and 2p + 1 (high half) of super-block wb, p = 0..3:
 * fgg_mm_rown_k's u, two at a time. */
FGG_MM_ALWAYS_INLINE __m512i fgg_mm_k512_u(int kind, const uint8_t *wb, int p)
{
    const __m512i m4 = _mm512_set1_epi8(0x0f);
    if (kind == FGG_MM_K4 || kind == FGG_MM_K5) {
        /* 64 bytes of nibbles: low ones sub-blocks 4G and 4G + 2, high ones 4G + 1 and 4G + 3 */
        const __m512i v = _mm512_loadu_si512((const void *)(wb + (kind == FGG_MM_K5 ? 48 : 16) + 64 * (p >> 1)));
        const __m512i lo = _mm512_and_si512(v, m4), hi = _mm512_and_si512(_mm512_srli_epi16(v, 4), m4);
        __m512i u = (p & 1) ? _mm512_shuffle_i64x2(lo, hi, _MM_SHUFFLE(3, 2, 3, 2))
                            : _mm512_shuffle_i64x2(lo, hi, _MM_SHUFFLE(1, 0, 1, 0));
        if (kind == FGG_MM_K5) { /* bit j of qh[k]: the fifth bit of value k of sub-block j */
            const __mmask64 k = _mm512_test_epi8_mask(fgg_mm_both_halves(wb + 16), fgg_mm_halves8(1 << (2 * p), 2 << (2 * p)));
            u = _mm512_mask_add_epi8(u, k, u, _mm512_set1_epi8(16));
        }
        return u;
    }
    if (kind == FGG_MM_K6) { /* half h = p / 2: low 4 bits from ql[64h..], high 2 from qh[32h..] */
        const __m512i l = _mm512_loadu_si512((const void *)(wb + 64 * (p >> 1)));
        const __m512i h = fgg_mm_both_halves(wb + 128 + 32 * (p >> 1)), m30 = _mm512_set1_epi8(0x30);
        if (p & 1) /* sub-blocks 4h + 2, 4h + 3: high nibbles, qh bits 4-5 and 6-7 */
            return _mm512_or_si512(_mm512_and_si512(_mm512_srli_epi16(l, 4), m4),
                                   _mm512_and_si512(_mm512_srlv_epi16(h, fgg_mm_halves16(0, 2)), m30));
        return _mm512_or_si512(_mm512_and_si512(l, m4), /* 4h, 4h + 1: low nibbles, qh bits 0-1 and 2-3 */
                               _mm512_and_si512(_mm512_sllv_epi16(h, fgg_mm_halves16(4, 2)), m30));
    }
    /* Q2_K, Q3_K: sub-block 4h + t is bits 2t, 2t + 1 of the 32 bytes at q + 32h */
    const uint8_t *q = wb + (kind == FGG_MM_K2 ? 16 : 32) + 32 * (p >> 1);
    const __m512i shifts = (p & 1) ? fgg_mm_halves16(4, 6) : fgg_mm_halves16(0, 2);
    __m512i u = _mm512_and_si512(_mm512_srlv_epi16(fgg_mm_both_halves(q), shifts), _mm512_set1_epi8(3));
    if (kind == FGG_MM_K3) { /* hmask bit j of byte k: 4 more for value k of sub-block j */
        const __mmask64 k = _mm512_test_epi8_mask(fgg_mm_both_halves(wb), fgg_mm_halves8(1 << (2 * p), 2 << (2 * p)));
        u = _mm512_mask_add_epi8(u, k, u, _mm512_set1_epi8(4));
    }
    return u;
}

FGG_MM_ALWAYS_INLINE void fgg_mm_rown_k512(int kind, int NR, const uint8_t *w, ptrdiff_t nsb, const fgg_mm_q8k *x,
                                           ptrdiff_t xs, float *out, ptrdiff_t os)
{
    const ptrdiff_t bytes = fgg_mm_k_bytes(kind);
    const __m512i pick0 = _mm512_loadu_si512((const void *)fgg_mm_pair_pick[0]);
    const __m512i pick1 = _mm512_loadu_si512((const void *)fgg_mm_pair_pick[1]);
    float a[4] = {0.0f, 0.0f, 0.0f, 0.0f};
    __m128 a2[4];
    for (int i = 0; i < NR; i++) a2[i] = _mm_setzero_ps();
    for (ptrdiff_t b = 0; b < nsb; b++) {
        const uint8_t *wb = w + b * bytes;
        __m256i lo, hi, bs;
        __m512i l[4], sl, sh, sc8;
        for (int i = 0; i < NR; i++) l[i] = _mm512_setzero_si512();
        if (kind == FGG_MM_K4 || kind == FGG_MM_K5) { /* the 8 scale and 8 min bytes, widened by pshufb */
            const __m128i b8 = fgg_mm_k4_scales128(wb + 4);
            bs = fgg_mm_k4_bs(_mm256_broadcastsi128_si256(b8));
            sc8 = _mm512_broadcast_i32x4(b8);
        } else {
            bs = fgg_mm_k_scales(kind, wb, &lo, &hi);
            /* lo's and hi's 8 words in all four lanes: pair p's scales are lane k's word 4 (p & 1) + k */
            sl = _mm512_broadcast_i32x4(_mm256_castsi256_si128(lo));
            sh = _mm512_broadcast_i32x4(_mm256_castsi256_si128(hi));
        }
        fgg_mm_prefetch_ahead(wb, bytes);
        for (int p = 0; p < 4; p++) {
            const __m512i u = fgg_mm_k512_u(kind, wb, p);
            /* Q4_K, Q5_K: scale byte 2p in the low half's words, 2p + 1 in the high half's */
            const __m512i sc = kind == FGG_MM_K4 || kind == FGG_MM_K5
                ? _mm512_shuffle_epi8(sc8, fgg_mm_halves16(0x8000 | (2 * p), 0x8000 | (2 * p + 1)))
                : _mm512_shuffle_epi8(p < 2 ? sl : sh, (p & 1) ? pick1 : pick0);
            for (int i = 0; i < NR; i++) {
                const __m512i xq = _mm512_loadu_si512((const void *)(x[i * xs + b].q + 64 * p));
                l[i] = _mm512_add_epi32(l[i], _mm512_madd_epi16(_mm512_maddubs_epi16(u, xq), sc));
            }
        }
        for (int i = 0; i < NR; i++) {
            const __m256i l8 = _mm256_add_epi32(_mm512_castsi512_si256(l[i]), _mm512_extracti64x4_epi64(l[i], 1));
            fgg_mm_rown_k_add(kind, wb, x + i * xs + b, l8, bs, &a[i], &a2[i]);
        }
    }
    fgg_mm_rown_k_out(kind, NR, a, a2, out, os);
}
#endif
#endif

/* One weight row of Q<kind>_K against m rows of x: per super-block and row, the lanes times
 * d * d_x into acc; with mins, the bsum lanes times dmin * d_x into accm, subtracted at the end;
 * with an offset, the bsum lanes subtracted from the lanes (integers) first. */
#if defined(FGG_MM_INT_SIMD)
/* IQ1_S's deltas against x's sums per 16 (bsum): its values 8 g + sigma times their scale s are 8 s
 * times g, which fgg_mm_iq_run_us gives, plus s * sigma times the sum of x over the run (sigma = +-1
 * per run, the sign bit of the u16 at 34 + 2j). s * sigma for the 16 halves of runs, in bsum's
 * order: the scales as fgg_mm_iq_scale_vectors made them (lo's and hi's low lanes) signed. */
FGG_MM_ALWAYS_INLINE __m256i fgg_mm_iq1_s_deltas(const uint8_t *wb, __m256i lo, __m256i hi)
{
    const __m128i sigma = _mm_or_si128(_mm_srai_epi16(_mm_loadu_si128((const __m128i *)(wb + 34)), 15), _mm_set1_epi16(1));
    return _mm256_sign_epi16(_mm256_set_m128i(_mm256_castsi256_si128(hi), _mm256_castsi256_si128(lo)),
                             _mm256_set_m128i(_mm_unpackhi_epi16(sigma, sigma), _mm_unpacklo_epi16(sigma, sigma)));
}

/* fgg_mm_rown_k for the signed (IQ) kinds: each run's magnitudes and signs unpacked into registers
 * (fgg_mm_iq_run_us) and met by NR (1 to 4, a constant) rows of x, the signs moved onto x; the
 * scales made once per super-block (fgg_mm_iq_scale_vectors). Every way of splitting a
 * super-block's integer total gives the same float steps, so the same bits. The float steps wait
 * for 8 super-blocks (fgg_mm_kacc_add8: one horizontal sum for 8 totals): one row, IQ3_S 1.13x
 * faster, IQ4_XS 1.09-1.17x, the others 1.0-1.09x. */
FGG_MM_ALWAYS_INLINE void fgg_mm_rown_iq(int kind, int NR, const uint8_t *w, ptrdiff_t nsb, const fgg_mm_q8k *x,
                                         ptrdiff_t xs, float *out, ptrdiff_t os)
{
    const ptrdiff_t bytes = fgg_mm_k_bytes(kind);
    float a[4] = {0.0f, 0.0f, 0.0f, 0.0f};
    fgg_mm_kpend pend[4];
    int np = 0;
    for (ptrdiff_t b = 0; b < nsb; b++) {
        __m256i l[4];
        for (int i = 0; i < NR; i++) l[i] = _mm256_setzero_si256();
        fgg_mm_prefetch_ahead(w + b * bytes, bytes);
        __m256i lo, hi;
        fgg_mm_iq_scale_vectors(kind, w + b * bytes, &lo, &hi);
        if (kind == FGG_MM_K_IQ1_S) { /* 8 s against g; s * sigma against the sums */
            const __m256i deltas = fgg_mm_iq1_s_deltas(w + b * bytes, lo, hi);
            for (int i = 0; i < NR; i++) l[i] = _mm256_madd_epi16(_mm256_loadu_si256((const __m256i *)x[i * xs + b].bsum), deltas);
            lo = _mm256_slli_epi16(lo, 3);
            hi = _mm256_slli_epi16(hi, 3);
        }
        /* unrolled: with j a constant each run's byte offsets and its scale's shuffle mask are
         * immediates (GCC had left the loop rolled: IQ2_S at 1 row 1.23-1.27x faster so) */
#pragma GCC unroll 8
        for (int j = 0; j < 8; j++) {
            __m256i av, v, sc;
            fgg_mm_iq_run_us(kind, w + b * bytes, j, lo, hi, &av, &v, &sc);
            for (int i = 0; i < NR; i++) {
                __m256i sx = _mm256_sign_epi8(_mm256_loadu_si256((const __m256i *)(x[i * xs + b].q + 32 * j)), v);
                l[i] = _mm256_add_epi32(l[i], _mm256_madd_epi16(_mm256_maddubs_epi16(av, sx), sc));
            }
        }
        const float d = fgg_mm_iq_d(kind, w + b * bytes);
        for (int i = 0; i < NR; i++) {
            pend[i].l[np] = l[i];
            pend[i].f[np] = d * x[i * xs + b].d;
        }
        np = fgg_mm_kpend_next(NR, pend, np, a);
    }
    for (int i = 0; i < NR; i++) out[i * os] = fgg_mm_kpend_flush(&pend[i], np, a[i]);
}

/* nr (1 to 4) rows of x by fgg_mm_rown_k or, for the signed kinds, fgg_mm_rown_iq, with the row
 * count a constant in each call, so that the compiler unrolls the rows' loops. In the avx512 build,
 * Q2_K to Q6_K take fgg_mm_rown_k512 with `wide`, else the 256-bit fgg_mm_rown_k (for CPUs that
 * split 512-bit operations in halves: kernels_matmul.pxi's _wide_on). */
FGG_MM_ALWAYS_INLINE void fgg_mm_rown(int kind, const int wide, int nr, const uint8_t *w, ptrdiff_t nsb,
                                      const fgg_mm_q8k *x, ptrdiff_t xs, float *out, ptrdiff_t os)
{
#if defined(__AVX512BW__)
#define FGG_MM_ROWN(N)                                                                                \
    (fgg_mm_k_signed(kind)      ? fgg_mm_rown_iq(kind, N, w, nsb, x, xs, out, os)                     \
     : wide && fgg_mm_k512(kind) ? fgg_mm_rown_k512(kind, N, w, nsb, x, xs, out, os)                  \
                                 : fgg_mm_rown_k(kind, N, w, nsb, x, xs, out, os))
#else
    (void)wide;
#define FGG_MM_ROWN(N)                                                                                \
    (fgg_mm_k_signed(kind) ? fgg_mm_rown_iq(kind, N, w, nsb, x, xs, out, os)                          \
                           : fgg_mm_rown_k(kind, N, w, nsb, x, xs, out, os))
#endif
    switch (nr) {
    case 4: FGG_MM_ROWN(4); break;
    case 3: FGG_MM_ROWN(3); break;
    case 2: FGG_MM_ROWN(2); break;
    default: FGG_MM_ROWN(1); break;
    }
#undef FGG_MM_ROWN
}
#endif

FGG_MM_ALWAYS_INLINE void fgg_mm_rows_kw(int kind, const int wide, const uint8_t *w, ptrdiff_t nsb, const fgg_mm_q8k *x,
                                         ptrdiff_t xs, int m, float *out, ptrdiff_t os)
{
    float acc[8], accm[8];
    fgg_mm_ksb s;
    float d, dmin = 0.0f;
    const ptrdiff_t bytes = fgg_mm_k_bytes(kind);
    (void)wide;
    int r0 = 0;
#if defined(FGG_MM_INT_SIMD)
    /* Groups of 8 rows by fgg_mm_rows8_k for the K-quants, the ternary types, IQ4_XS and IQ3_S; the
     * other IQ types' row kernels (fgg_mm_rown_iq) are faster 4 rows at a time (avx2 build, 4096 x
     * 14336, one thread, 8 rows: 1.05-1.17x), IQ4_XS's not (0.90x). The rest 4 rows at a time, but
     * IQ3_S's 5 to 7 rows: there its second unpack (a gather per run) costs more than the loop below
     * (0.86-0.90x against the loop). */
    if (!fgg_mm_k_signed(kind) || kind == FGG_MM_K_IQ3_S || kind == FGG_MM_K_IQ4_XS)
        for (; m - r0 >= 8; r0 += 8) fgg_mm_rows8_k(kind, w, nsb, x + r0 * xs, xs, out + r0 * os, os);
    if (kind != FGG_MM_K_IQ3_S || m - r0 <= 4) {
        for (; r0 < m; r0 += 4)
            fgg_mm_rown(kind, wide, m - r0 < 4 ? m - r0 : 4, w, nsb, x + r0 * xs, xs, out + r0 * os, os);
        return;
    }
#endif
    for (; r0 < m; r0 += 8) {
        int mr = m - r0 < 8 ? m - r0 : 8;
        for (int i = 0; i < mr; i++) acc[i] = accm[i] = 0.0f;
        const uint8_t *wb = w;
        for (ptrdiff_t b = 0; b < nsb; b++, wb += bytes) {
            fgg_mm_k_unpack(kind, wb, &s, &d, &dmin);
            for (int i = 0; i < mr; i++) {
                const fgg_mm_q8k *xb = x + (r0 + i) * xs + b;
#if defined(FGG_MM_INT_SIMD)
                fgg_mm_lanes dot = fgg_mm_k_signed(kind) ? fgg_mm_ksb_dot_signed(&s, xb->q) : fgg_mm_ksb_dot(&s, xb->q);
#else
                fgg_mm_lanes dot = fgg_mm_ksb_dot(&s, xb->q);
#endif
                if (fgg_mm_k_signed(kind)) {
                    acc[i] = fgg_mm_kacc_add(acc[i], dot, d * xb->d);
                } else if (fgg_mm_k_has_min(kind)) {
                    acc[i] = fgg_mm_kacc_add(acc[i], dot, d * xb->d);
                    accm[i] = fgg_mm_kacc_add(accm[i], fgg_mm_ksb_bsum(&s, xb->bsum), dmin * xb->d);
                } else {
                    acc[i] = fgg_mm_kacc_add(acc[i], fgg_mm_lanes_sub(dot, fgg_mm_ksb_bsum(&s, xb->bsum)), d * xb->d);
                }
            }
        }
        for (int i = 0; i < mr; i++)
            out[(r0 + i) * os] = fgg_mm_k_has_min(kind) ? acc[i] - accm[i] : acc[i];
    }
}

/* fgg_mm_rows_kw with the 512-bit lanes where the build has them, and with 256-bit ones (the
 * avx512 build's kernels for CPUs that split 512-bit operations: Zen 4, one row of x from memory,
 * 2 threads, Q4_K 26.7 -> 30.2 GB/s, Q2_K 10.7 -> 12.0, Q5_K and Q6_K 2-4 % more, Q3_K level).
 * The same integer lanes and float steps, so the same bits. */
FGG_MM_ALWAYS_INLINE void fgg_mm_rows_k(int kind, const uint8_t *w, ptrdiff_t nsb, const fgg_mm_q8k *x, ptrdiff_t xs,
                                        int m, float *out, ptrdiff_t os)
{
    fgg_mm_rows_kw(kind, 1, w, nsb, x, xs, m, out, os);
}

FGG_MM_ALWAYS_INLINE void fgg_mm_rows_k_256(int kind, const uint8_t *w, ptrdiff_t nsb, const fgg_mm_q8k *x, ptrdiff_t xs,
                                            int m, float *out, ptrdiff_t os)
{
    fgg_mm_rows_kw(kind, 0, w, nsb, x, xs, m, out, os);
}

#define FGG_MM_K_ROWS(NAME, KIND) FGG_MM_NAMED_ROWS(static inline, NAME, fgg_mm_q8k, fgg_mm_rows_k, KIND)
FGG_MM_K_ROWS(fgg_mm_rows_q2_k, FGG_MM_K2)
FGG_MM_K_ROWS(fgg_mm_rows_q3_k, FGG_MM_K3)
FGG_MM_K_ROWS(fgg_mm_rows_q4_k, FGG_MM_K4)
FGG_MM_K_ROWS(fgg_mm_rows_q5_k, FGG_MM_K5)
FGG_MM_K_ROWS(fgg_mm_rows_q6_k, FGG_MM_K6)
FGG_MM_K_ROWS(fgg_mm_rows_iq2_xxs, FGG_MM_K_IQ2_XXS)
FGG_MM_K_ROWS(fgg_mm_rows_iq3_xxs, FGG_MM_K_IQ3_XXS)
FGG_MM_K_ROWS(fgg_mm_rows_iq3_s, FGG_MM_K_IQ3_S)
FGG_MM_K_ROWS(fgg_mm_rows_iq4_xs, FGG_MM_K_IQ4_XS)
FGG_MM_K_ROWS(fgg_mm_rows_iq2_xs, FGG_MM_K_IQ2_XS)
FGG_MM_K_ROWS(fgg_mm_rows_iq2_s, FGG_MM_K_IQ2_S)
FGG_MM_K_ROWS(fgg_mm_rows_iq1_s, FGG_MM_K_IQ1_S)
FGG_MM_K_ROWS(fgg_mm_rows_iq1_m, FGG_MM_K_IQ1_M)
FGG_MM_K_ROWS(fgg_mm_rows_tq2_0, FGG_MM_K_TQ2_0)
FGG_MM_K_ROWS(fgg_mm_rows_tq1_0, FGG_MM_K_TQ1_0)
#undef FGG_MM_K_ROWS
#if defined(FGG_MM_INT_SIMD) && defined(__AVX512BW__)
#define FGG_MM_K_ROWS_256(NAME, KIND) FGG_MM_NAMED_ROWS(static inline, NAME, fgg_mm_q8k, fgg_mm_rows_k_256, KIND)
FGG_MM_K_ROWS_256(fgg_mm_rows_q2_k_256, FGG_MM_K2)
FGG_MM_K_ROWS_256(fgg_mm_rows_q3_k_256, FGG_MM_K3)
FGG_MM_K_ROWS_256(fgg_mm_rows_q4_k_256, FGG_MM_K4)
FGG_MM_K_ROWS_256(fgg_mm_rows_q5_k_256, FGG_MM_K5)
FGG_MM_K_ROWS_256(fgg_mm_rows_q6_k_256, FGG_MM_K6)
#undef FGG_MM_K_ROWS_256
#else /* the other builds' K kernels are 256-bit (or plain C) already */
#define fgg_mm_rows_q2_k_256 fgg_mm_rows_q2_k
#define fgg_mm_rows_q3_k_256 fgg_mm_rows_q3_k
#define fgg_mm_rows_q4_k_256 fgg_mm_rows_q4_k
#define fgg_mm_rows_q5_k_256 fgg_mm_rows_q5_k
#define fgg_mm_rows_q6_k_256 fgg_mm_rows_q6_k
#endif

/* x for the VNNI batch kernel (fgg_mm_gemm_k_vnni): one super-block of 16 rows of x, interleaved
 * so that one 64-byte load holds the same 4 values of all 16 rows: q[g][r] = bytes 4g..4g+3 of row
 * r's q, bsum2[p][r] = its bsum[2p] (low 16 bits) and bsum[2p + 1] (high), d[r] its scale. */
typedef struct {
    int32_t q[64][16];
    int32_t bsum2[8][16];
    float d[16];
} fgg_mm_x16k;

/* A weight row's super-block unpacked for the VNNI batch kernel. */
typedef struct {
    uint8_t u[256];  /* the values in value order: fgg_mm_ksb's u, or for the signed kinds its v */
    int32_t sc[16];  /* the scale of values 16g..16g+15 */
    int32_t bs2[8];  /* bs[2p] (low 16 bits), bs[2p + 1] (high) */
    int32_t off;     /* the signed kinds, which meet x + 128: the sum of sc[g] * 128 * (the sum of
                      * values 16g..16g+15), taken off each row of x's total */
    float d, dmin;
    uint8_t pad[20]; /* to 384 bytes */
} fgg_mm_wk;

/* A batch kernel: weight rows 0..n-1 (nb blocks each) times m rows of x in groups of 16, x
 * interleaved by fgg_mm_batch_x_fill (fgg_mm_x16k for the K kinds, fgg_mm_x16b for the per-32
 * types), with a panel of fgg_mm_batch_panel_bytes per weight row of the tile. */
typedef void (*fgg_mm_gemm_fn)(const uint8_t *w, ptrdiff_t row_bytes, ptrdiff_t n, ptrdiff_t nb, const void *x,
                               ptrdiff_t m, float *out, ptrdiff_t os, void *panel, ptrdiff_t tile);

/* A batch kernel NAME (an fgg_mm_gemm_fn) for one kind: DRIVER with x and the panel as it takes
 * them (XT, PANEL), compiled with ATTR. */
#define FGG_MM_GEMM_FN(NAME, ATTR, DRIVER, KIND, XT, PANEL)                                           \
static ATTR void NAME(const uint8_t *w, ptrdiff_t row_bytes, ptrdiff_t n, ptrdiff_t nb, const void *x, \
                      ptrdiff_t m, float *out, ptrdiff_t os, void *panel, ptrdiff_t tile)             \
{                                                                                                     \
    DRIVER(KIND, w, row_bytes, n, nb, (const XT *)x, m, out, os, (PANEL *)panel, tile);               \
}

/* The name of a batch kernel a build does not have (never called: INT_BATCH holds NULL for it). */
static inline void fgg_mm_gemm_never(const uint8_t *w, ptrdiff_t row_bytes, ptrdiff_t n, ptrdiff_t nsb,
                                     const void *x, ptrdiff_t m, float *out, ptrdiff_t os, void *panel, ptrdiff_t tile)
{
    (void)w, (void)row_bytes, (void)n, (void)nsb, (void)x, (void)m, (void)out, (void)os, (void)panel, (void)tile;
}

/* Row r of an interleaved super-block from xb (NULL: a row past m, zero). */
static inline void fgg_mm_x16k_put(fgg_mm_x16k *o, int r, const fgg_mm_q8k *xb)
{
    if (xb == NULL) {
        for (int g = 0; g < 64; g++) o->q[g][r] = 0;
        for (int p = 0; p < 8; p++) o->bsum2[p][r] = 0;
        o->d[r] = 0.0f;
        return;
    }
    for (int g = 0; g < 64; g++) memcpy(&o->q[g][r], xb->q + 4 * g, 4);
    for (int p = 0; p < 8; p++) memcpy(&o->bsum2[p][r], xb->bsum + 2 * p, 4);
    o->d[r] = xb->d;
}

/* x for the per-32 types' VNNI batch kernel (fgg_mm_gemm_b_vnni): one block of 32 of 16 rows of x,
 * interleaved: q[k][r] = bytes 4k..4k+3 of row r's q, each plus 128 (the unsigned operand of
 * vpdpbusd), d[r] and s[r] its scale and scaled sum. */
typedef struct {
    uint32_t q[8][16];
    float d[16];
    float s[16];
} fgg_mm_x16b;

/* A weight block (one run of 32) unpacked for the batch kernels (fgg_mm_wb_unpack). For the
 * maddubs kernel's sign step (``signs``: Q8_0, IQ4_NL) q holds |values| and corr the values
 * instead (Q4_1's and Q5_1's values are unsigned codes: their corr goes unused there). */
typedef struct {
    int32_t q[8];     /* the run's 32 signed values, 4 per int32 (group k) */
    int32_t corr[8];  /* -128 * the sum of group k */
    float d, m;       /* the scale and (Q4_1, Q5_1) the offset */
} fgg_mm_wb;

/* Row r of an interleaved block of 32 from xb (NULL: a row past m, x = 0). */
static inline void fgg_mm_x16b_put(fgg_mm_x16b *o, int r, const fgg_mm_q8 *xb)
{
    for (int k = 0; k < 8; k++) {
        uint32_t v = 0;
        for (int j = 0; j < 4; j++) v |= (uint32_t)(uint8_t)((xb ? xb->q[4 * k + j] : 0) + 128) << (8 * j);
        o->q[k][r] = v;
    }
    o->d[r] = xb ? xb->d : 0.0f;
    o->s[r] = xb ? xb->s : 0.0f;
}

/* x for the per-32 types' few-rows VNNI kernel (fgg_mm_few_b_vnni, at most FGG_MM_FEW_ROWS rows):
 * one block of 32 of a pair of rows, row 2p in the low half of each vector, row 2p + 1 in the high:
 * q its values plus 128, d and s its scale and scaled sum in 8 lanes each. */
typedef struct {
    uint8_t q[64];
    float d[16];
    float s[16];
} fgg_mm_x2b;

#define FGG_MM_FEW_ROWS 12

/* How a batch kernel takes x: the K kinds' super-blocks (fgg_mm_x16k); the per-32 types' blocks
 * with a few rows as pairs (the VNNI kernels: fgg_mm_x2b up to FGG_MM_FEW_ROWS rows, fgg_mm_x16b
 * beyond); or in groups of 8 at any count (the maddubs kernel, fgg_mm_gemm_b_avx2: fgg_mm_x8b of
 * x, or of x + 128 for the types it takes so, fgg_mm_b8_mode's BIASED). */
enum { FGG_MM_X_K = 0, FGG_MM_X_B32 = 1, FGG_MM_X_B8 = 2, FGG_MM_X_B8_PLUS128 = 3, FGG_MM_X_K16 = 4, FGG_MM_X_B16 = 5 };

/* x for the portable build's K-quant kernels (FGG_MM_X_K16, fgg_mm_gemm_k_sse): one super-block of
 * one row of x with its q widened to int16 once per product (SSE2 multiplies only 16-bit pairs;
 * widening x per weight row cost as much as the products), 16-byte aligned for madd's operand. */
typedef struct {
    int16_t q[256];
    int16_t bsum[16];
    float d;
    float pad[3];
} fgg_mm_x1k16;

static inline void fgg_mm_x1k16_put(fgg_mm_x1k16 *o, const fgg_mm_q8k *xb)
{
    for (int i = 0; i < 256; i++) o->q[i] = xb->q[i];
    for (int g = 0; g < 16; g++) o->bsum[g] = xb->bsum[g];
    o->d = xb->d;
}

/* The same for the per-32 types (FGG_MM_X_B16, fgg_mm_gemm_b_sse): one block of 32 of one row. */
typedef struct {
    int16_t q[32];
    float d;
    float s;
    float pad[2];
} fgg_mm_x1b16;

static inline void fgg_mm_x1b16_put(fgg_mm_x1b16 *o, const fgg_mm_q8 *xb)
{
    for (int i = 0; i < 32; i++) o->q[i] = xb->q[i];
    o->d = xb->d;
    o->s = xb->s;
}

/* Whether m rows of x take the few-rows layout and kernel (FGG_MM_X_B32, m <= FGG_MM_FEW_ROWS). */
static inline int fgg_mm_batch_few(int layout, ptrdiff_t m) { return layout == FGG_MM_X_B32 && m <= FGG_MM_FEW_ROWS; }

/* Half h of a pair's block from xb (NULL: a row past m, x = 0). */
static inline void fgg_mm_x2b_put(fgg_mm_x2b *o, int h, const fgg_mm_q8 *xb)
{
    for (int i = 0; i < 32; i++) o->q[32 * h + i] = (uint8_t)((xb ? xb->q[i] : 0) + 128);
    for (int k = 0; k < 8; k++) {
        o->d[8 * h + k] = xb ? xb->d : 0.0f;
        o->s[8 * h + k] = xb ? xb->s : 0.0f;
    }
}

/* x for the per-32 types' maddubs batch kernel (fgg_mm_gemm_b_avx2): one block of 32 of 8 rows of
 * x, interleaved as fgg_mm_x16b (q[k][r]: bytes 4k..4k+3 of row r's q, each plus bias: 0, or 128
 * for FGG_MM_X_B8_PLUS128), 8 rows being its lanes; 320 bytes, so 32 blocks of it stay in L1. */
typedef struct {
    uint32_t q[8][8];
    float d[8];
    float s[8];
} fgg_mm_x8b;

/* Row r of an interleaved block of 32 from xb (NULL: a row past m, x = 0). */
static inline void fgg_mm_x8b_put(fgg_mm_x8b *o, int r, const fgg_mm_q8 *xb, int bias)
{
    for (int k = 0; k < 8; k++) {
        uint32_t v = 0;
        for (int j = 0; j < 4; j++) v |= (uint32_t)(uint8_t)((xb ? xb->q[4 * k + j] : 0) + bias) << (8 * j);
        o->q[k][r] = v;
    }
    o->d[r] = xb ? xb->d : 0.0f;
    o->s[r] = xb ? xb->s : 0.0f;
}

/* Rows of x per group of a layout: 16 (fgg_mm_x16k, fgg_mm_x16b), 8 (fgg_mm_x8b) or 1 (the portable
 * build's fgg_mm_x1k16, fgg_mm_x1b16: each row alone). */
static inline ptrdiff_t fgg_mm_batch_group_rows(int layout)
{
    return layout >= FGG_MM_X_K16 ? 1 : layout >= FGG_MM_X_B8 ? 8 : 16;
}

/* Bytes of the interleaved x (fgg_mm_x16k; for the per-32 layouts fgg_mm_x16b or fgg_mm_x8b, or
 * fgg_mm_x2b for a few rows; the portable build's fgg_mm_x1k16 or fgg_mm_x1b16) of m rows of nb
 * blocks. */
static inline size_t fgg_mm_batch_x_bytes(int layout, ptrdiff_t m, ptrdiff_t nb)
{
    if (fgg_mm_batch_few(layout, m)) return (size_t)((m + 1) / 2) * (size_t)nb * sizeof(fgg_mm_x2b);
    const ptrdiff_t gr = fgg_mm_batch_group_rows(layout);
    const size_t per = layout == FGG_MM_X_K ? sizeof(fgg_mm_x16k) : layout == FGG_MM_X_B32 ? sizeof(fgg_mm_x16b)
                       : layout == FGG_MM_X_K16                  ? sizeof(fgg_mm_x1k16)
                       : layout == FGG_MM_X_B16                  ? sizeof(fgg_mm_x1b16)
                                                                 : sizeof(fgg_mm_x8b);
    return (size_t)((m + gr - 1) / gr) * (size_t)nb * per;
}

/* Bytes of a batch kernel's panel per weight row of nb blocks: fgg_mm_wk per super-block, or for
 * the per-32 layouts fgg_mm_wb per block of 32; none for a few rows and for the portable build's
 * kernels (they unpack into registers). */
static inline size_t fgg_mm_batch_panel_bytes(int layout, ptrdiff_t m, ptrdiff_t nb)
{
    if (fgg_mm_batch_few(layout, m) || layout >= FGG_MM_X_K16) return 0;
    return (size_t)nb * (layout != FGG_MM_X_K ? sizeof(fgg_mm_wb) : sizeof(fgg_mm_wk));
}

/* x's m rows (fgg_mm_q8k super-blocks, or for the per-32 layouts fgg_mm_q8 blocks; row i's block b at
 * x[i * xs + b]) interleaved as groups of 16 rows (8 for FGG_MM_X_B8*, 1 for the portable build's
 * FGG_MM_X_K16 and FGG_MM_X_B16: each row's blocks widened to int16): group G's block b at
 * out[G * nb + b] (fgg_mm_x16k, fgg_mm_x16b, fgg_mm_x8b, fgg_mm_x1k16 or fgg_mm_x1b16); a few rows
 * of the per-32 types on VNNI (fgg_mm_batch_few) as ceil(m / 2) pairs instead: pair p's block b at
 * out[p * nb + b] (fgg_mm_x2b). Rows past m are x = 0. */
static inline void fgg_mm_batch_x_fill(int layout, const void *x, ptrdiff_t xs, ptrdiff_t m, ptrdiff_t nb, void *out)
{
    if (fgg_mm_batch_few(layout, m)) {
        for (ptrdiff_t p = 0; p < (m + 1) / 2; p++)
            for (ptrdiff_t b = 0; b < nb; b++)
                for (int h = 0; h < 2; h++)
                    fgg_mm_x2b_put((fgg_mm_x2b *)out + p * nb + b, h,
                                   2 * p + h < m ? (const fgg_mm_q8 *)x + (2 * p + h) * xs + b : NULL);
        return;
    }
    const ptrdiff_t gr = fgg_mm_batch_group_rows(layout);
    for (ptrdiff_t G = 0; G < (m + gr - 1) / gr; G++)
        for (ptrdiff_t b = 0; b < nb; b++)
            for (int r = 0; r < gr; r++) {
                const ptrdiff_t i = gr * G + r, at = i * xs + b;
                if (layout == FGG_MM_X_K16)
                    fgg_mm_x1k16_put((fgg_mm_x1k16 *)out + G * nb + b, (const fgg_mm_q8k *)x + at);
                else if (layout == FGG_MM_X_B16)
                    fgg_mm_x1b16_put((fgg_mm_x1b16 *)out + G * nb + b, (const fgg_mm_q8 *)x + at);
                else if (layout >= FGG_MM_X_B8)
                    fgg_mm_x8b_put((fgg_mm_x8b *)out + G * nb + b, r, i < m ? (const fgg_mm_q8 *)x + at : NULL,
                                   layout == FGG_MM_X_B8_PLUS128 ? 128 : 0);
                else if (layout == FGG_MM_X_B32)
                    fgg_mm_x16b_put((fgg_mm_x16b *)out + G * nb + b, r, i < m ? (const fgg_mm_q8 *)x + at : NULL);
                else
                    fgg_mm_x16k_put((fgg_mm_x16k *)out + G * nb + b, r, i < m ? (const fgg_mm_q8k *)x + at : NULL);
            }
}

#if defined(FGG_MM_INT_SIMD)
/* ------------------------------------------------------------------------------------------ */
/* The batch kernels of the K kinds (from a few rows of x on): lanes are rows of x
 * (fgg_mm_x16k), each weight row's 4 bytes broadcast, so one instruction makes 4 products for 8
 * or 16 rows of x at once. Weight rows are unpacked once per task into a panel (fgg_mm_wk) and
 * met by every row of x there. Per 16 values (one scale) the raw sums take the scale in integers,
 * the bsum term is added or kept apart in integers, and per super-block each pair (weight row,
 * row of x) gets the float step of fgg_mm_kacc_add on its exact integer total: the bits of
 * fgg_mm_rows_k. ggml's tiled K-quant kernels have this layout (lanes = rows of x, integer scales
 * per sub-block); this is our own form of it. Two instruction sets: AVX2 (maddubs, below) and
 * AVX-512 VNNI (vpdpbusd, further down). */

/* Weight rows 0..nr-1 (row r at w + r * row_bytes) unpacked into p[r * nsb + b]; rows nr..7 zero. */
FGG_MM_ALWAYS_INLINE void fgg_mm_wk_unpack(int kind, const uint8_t *w, ptrdiff_t row_bytes, int nr, ptrdiff_t nsb, fgg_mm_wk *p)
{
    const ptrdiff_t bytes = fgg_mm_k_bytes(kind);
    for (int r = 0; r < 8; r++)
        for (ptrdiff_t b = 0; b < nsb; b++) {
            fgg_mm_wk *o = p + r * nsb + b;
            if (r >= nr) {
                memset(o, 0, sizeof *o);
                continue;
            }
            fgg_mm_ksb s;
            float d, dmin = 0.0f;
            fgg_mm_prefetch_ahead(w + r * row_bytes + b * bytes, bytes);
            fgg_mm_k_unpack(kind, w + r * row_bytes + b * bytes, &s, &d, &dmin);
            /* sc[j] holds scale 2j in every int16 of its low half, 2j + 1 in its high half: dwords 0
             * and 4, shifted down, are the two scales as int32 */
            const __m256i pick = _mm256_setr_epi32(0, 4, 0, 4, 0, 4, 0, 4);
            for (int j = 0; j < 8; j++) {
                _mm256_storeu_si256((__m256i *)(o->u + 32 * j), fgg_mm_k_signed(kind) ? s.v[j] : s.u[j]);
                _mm_storel_epi64((__m128i *)(o->sc + 2 * j),
                                 _mm256_castsi256_si128(_mm256_permutevar8x32_epi32(_mm256_srai_epi32(s.sc[j], 16), pick)));
            }
            o->off = 0;
            if (fgg_mm_k_signed(kind)) /* sums of 8 values by sad of v + 128 (v ^ 0x80) */
                for (int j = 0; j < 8; j++) {
                    __m256i t = _mm256_sad_epu8(_mm256_xor_si256(s.v[j], _mm256_set1_epi8(-128)), _mm256_setzero_si256());
                    __m128i lo = _mm256_castsi256_si128(t), hi = _mm256_extracti128_si256(t, 1);
                    o->off += o->sc[2 * j] * 128 * ((int32_t)(_mm_cvtsi128_si32(lo) + _mm_extract_epi32(lo, 2)) - 2048);
                    o->off += o->sc[2 * j + 1] * 128 * ((int32_t)(_mm_cvtsi128_si32(hi) + _mm_extract_epi32(hi, 2)) - 2048);
                }
            _mm256_storeu_si256((__m256i *)o->bs2, s.bs);
            o->d = d;
            o->dmin = dmin;
        }
}

/* The driver of both: weight rows 0..n-1 (row r at w + r * row_bytes, nsb super-blocks) times the
 * m rows of x in groups of 16 (x[G * nsb + b], fgg_mm_batch_x_fill): out[i * os + r]. Tiles of
 * ``tile`` weight rows (a multiple of 8) are unpacked once (into ``panel``: tile * nsb fgg_mm_wk)
 * for 64 rows of x at a time, both in L2. TILE16 multiplies 8 weight rows by a group's 16 rows
 * (res[t][r]), TILE8 by its rows 0..7 only (a last group of at most 8 rows). */
#define FGG_MM_GEMM_K_DRIVER(NAME, ATTR, TILE16, TILE8)                                              \
FGG_MM_ALWAYS_INLINE ATTR void NAME(int kind, const uint8_t *w, ptrdiff_t row_bytes, ptrdiff_t n, ptrdiff_t nsb, \
                                    const fgg_mm_x16k *x, ptrdiff_t m, float *out, ptrdiff_t os, fgg_mm_wk *panel, \
                                    ptrdiff_t tile)                                                  \
{                                                                                                    \
    const ptrdiff_t groups = (m + 15) / 16;                                                          \
    for (ptrdiff_t a = 0; a < n; a += tile) {                                                        \
        const ptrdiff_t na = n - a < tile ? n - a : tile;                                            \
        for (ptrdiff_t t0 = 0; t0 < na; t0 += 8)                                                     \
            fgg_mm_wk_unpack(kind, w + (a + t0) * row_bytes, row_bytes, na - t0 < 8 ? (int)(na - t0) : 8, nsb, \
                             panel + t0 * nsb);                                                      \
        for (ptrdiff_t g0 = 0; g0 < groups; g0 += 4)                                                 \
            for (ptrdiff_t t0 = 0; t0 < na; t0 += 8)                                                 \
                for (ptrdiff_t g = g0; g < groups && g < g0 + 4; g++) {                              \
                    float res[8][16];                                                                \
                    const int nt = na - t0 < 8 ? (int)(na - t0) : 8, nr = m - 16 * g < 16 ? (int)(m - 16 * g) : 16; \
                    if (nr <= 8)                                                                     \
                        TILE8(kind, panel + t0 * nsb, nsb, x + g * nsb, res);                        \
                    else                                                                             \
                        TILE16(kind, panel + t0 * nsb, nsb, x + g * nsb, res);                       \
                    for (int r = 0; r < nr; r++)                                                     \
                        for (int t = 0; t < nt; t++) out[(16 * g + r) * os + a + t0 + t] = res[t][r];  \
                }                                                                                    \
    }                                                                                                \
}

/* AVX2: 8 weight rows (p[t * nsb + b]) times rows 8h..8h+7 of the group x (one int32 lane each):
 * res[t][8h + r]. Per 4 values, maddubs of the broadcast weight bytes with x gives 2 int16 sums
 * of 2 products per row; below 2^15 while the weights are below 32 (every unsigned kind but
 * Q6_K: 4 * 2 * 31 * 127 = 31496), so 4 such (16 values, one scale) add in int16 before one
 * madd with the scale takes them to int32: sc * (their sum), the same integer as VNNI's. Q6_K
 * (values to 63) adds 2 at a time. The signed kinds whose values are small (the IQ2 and IQ3
 * grids' to 62, IQ1's to 9) meet x + 128 as the unsigned operand, as on VNNI (2 * 255 * 62 =
 * 31620; IQ1's 4 at a time: 4 * 2 * 255 * 9 = 18360), their 128 * sum(v) times the scales taken
 * off once per super-block (fgg_mm_wk's off); IQ4_XS (values to 127) moves its signs onto x (|v|, |x|
 * <= 127). The signed kinds but IQ1's take the scale per 4 values. */
FGG_MM_ALWAYS_INLINE void fgg_mm_gemm_k_half(int kind, const fgg_mm_wk *p, ptrdiff_t nsb, const fgg_mm_x16k *x, int h,
                                             float res[8][16])
{
    const int sgn = fgg_mm_k_signed(kind), x128 = sgn && kind != FGG_MM_K_IQ4_XS;
    const int iq1 = kind == FGG_MM_K_IQ1_S || kind == FGG_MM_K_IQ1_M;
    const int per_madd = iq1 ? 4 : sgn ? 1 : kind == FGG_MM_K6 ? 2 : 4;
    __m256 acc[8], accm[8];
    for (int t = 0; t < 8; t++) acc[t] = accm[t] = _mm256_setzero_ps();
    for (ptrdiff_t b = 0; b < nsb; b++) {
        const fgg_mm_x16k *xb = x + b;
        __m256i s1[8];
        for (int t = 0; t < 8; t++) s1[t] = _mm256_setzero_si256();
        for (int g = 0; g < 16; g++) {
            __m256i c[4];
            for (int k = 0; k < 4; k++) c[k] = _mm256_load_si256((const __m256i *)(xb->q[4 * g + k] + 8 * h));
            if (x128)
                for (int k = 0; k < 4; k++) c[k] = _mm256_xor_si256(c[k], _mm256_set1_epi8(-128));
            for (int t = 0; t < 8; t++) {
                const fgg_mm_wk *wt = p + t * nsb + b;
                const int32_t *u4 = (const int32_t *)(const void *)wt->u + 4 * g;
                const __m256i sc = _mm256_set1_epi16((int16_t)wt->sc[g]);
                for (int k0 = 0; k0 < 4; k0 += per_madd) {
                    __m256i q = _mm256_setzero_si256();
                    for (int k = k0; k < k0 + per_madd; k++) {
                        const __m256i wv = _mm256_set1_epi32(u4[k]);
                        q = _mm256_add_epi16(q, x128  ? _mm256_maddubs_epi16(c[k], wv)
                                                : sgn ? _mm256_maddubs_epi16(_mm256_abs_epi8(wv), _mm256_sign_epi8(c[k], wv))
                                                      : _mm256_maddubs_epi16(wv, c[k]));
                    }
                    s1[t] = _mm256_add_epi32(s1[t], _mm256_madd_epi16(q, sc));
                }
            }
        }
        const __m256 xd = _mm256_load_ps(xb->d + 8 * h);
        for (int t = 0; t < 8; t++) {
            const fgg_mm_wk *wt = p + t * nsb + b;
            __m256i l = s1[t]; /* the signed kinds have no offsets or mins, but x + 128's */
            if (x128) l = _mm256_sub_epi32(l, _mm256_set1_epi32(wt->off));
            if (!sgn) {
                __m256i lb = _mm256_setzero_si256();
                for (int q = 0; q < 8; q++)
                    lb = _mm256_add_epi32(lb, _mm256_madd_epi16(_mm256_set1_epi32(wt->bs2[q]),
                                                                _mm256_load_si256((const __m256i *)(xb->bsum2[q] + 8 * h))));
                if (fgg_mm_k_has_min(kind))
                    accm[t] = _mm256_add_ps(accm[t], _mm256_mul_ps(_mm256_cvtepi32_ps(lb),
                                                                   _mm256_mul_ps(_mm256_set1_ps(wt->dmin), xd)));
                else
                    l = _mm256_sub_epi32(l, lb);
            }
            acc[t] = _mm256_add_ps(acc[t], _mm256_mul_ps(_mm256_cvtepi32_ps(l), _mm256_mul_ps(_mm256_set1_ps(wt->d), xd)));
        }
    }
    for (int t = 0; t < 8; t++)
        _mm256_storeu_ps(res[t] + 8 * h, fgg_mm_k_has_min(kind) ? _mm256_sub_ps(acc[t], accm[t]) : acc[t]);
}

FGG_MM_ALWAYS_INLINE void fgg_mm_gemm_k_avx2_tile(int kind, const fgg_mm_wk *p, ptrdiff_t nsb, const fgg_mm_x16k *x,
                                                  float res[8][16])
{
    fgg_mm_gemm_k_half(kind, p, nsb, x, 0, res);
    fgg_mm_gemm_k_half(kind, p, nsb, x, 1, res);
}

FGG_MM_ALWAYS_INLINE void fgg_mm_gemm_k_avx2_tile8(int kind, const fgg_mm_wk *p, ptrdiff_t nsb, const fgg_mm_x16k *x,
                                                   float res[8][16])
{
    fgg_mm_gemm_k_half(kind, p, nsb, x, 0, res);
}

FGG_MM_GEMM_K_DRIVER(fgg_mm_gemm_k_avx2, , fgg_mm_gemm_k_avx2_tile, fgg_mm_gemm_k_avx2_tile8)

#define FGG_MM_GEMM_K(NAME, KIND) FGG_MM_GEMM_FN(NAME, , fgg_mm_gemm_k_avx2, KIND, fgg_mm_x16k, fgg_mm_wk)
FGG_MM_GEMM_K(fgg_mm_gemm_q2_k, FGG_MM_K2)
FGG_MM_GEMM_K(fgg_mm_gemm_q3_k, FGG_MM_K3)
FGG_MM_GEMM_K(fgg_mm_gemm_q4_k, FGG_MM_K4)
FGG_MM_GEMM_K(fgg_mm_gemm_q5_k, FGG_MM_K5)
FGG_MM_GEMM_K(fgg_mm_gemm_q6_k, FGG_MM_K6)
FGG_MM_GEMM_K(fgg_mm_gemm_tq2_0, FGG_MM_K_TQ2_0)
FGG_MM_GEMM_K(fgg_mm_gemm_tq1_0, FGG_MM_K_TQ1_0)
FGG_MM_GEMM_K(fgg_mm_gemm_iq4_xs, FGG_MM_K_IQ4_XS)
FGG_MM_GEMM_K(fgg_mm_gemm_iq2_xxs, FGG_MM_K_IQ2_XXS)
FGG_MM_GEMM_K(fgg_mm_gemm_iq3_s, FGG_MM_K_IQ3_S)
FGG_MM_GEMM_K(fgg_mm_gemm_iq2_xs, FGG_MM_K_IQ2_XS)
FGG_MM_GEMM_K(fgg_mm_gemm_iq2_s, FGG_MM_K_IQ2_S)
FGG_MM_GEMM_K(fgg_mm_gemm_iq3_xxs, FGG_MM_K_IQ3_XXS)
FGG_MM_GEMM_K(fgg_mm_gemm_iq1_s, FGG_MM_K_IQ1_S)
FGG_MM_GEMM_K(fgg_mm_gemm_iq1_m, FGG_MM_K_IQ1_M)
#undef FGG_MM_GEMM_K

/* How the maddubs batch kernel (fgg_mm_gemm_b8_run) makes a group's integer, the fewest operations
 * for each type (C harness, cycles per group of 4 values and 8 rows, 64 rows of x):
 * - CODES: Q4_1's and Q5_1's values are their codes (0..31, unsigned), which meet x as it is
 *   (1.92 cycles);
 * - BIASED: Q4_0's, Q5_0's and MXFP4's signed values (|w| <= 16) meet x + 128, less 128 * the
 *   group's sum (2.35; 2.51 by the sign step of SIGNS);
 * - SIGNS: Q8_0's and IQ4_NL's values reach 127, which against x + 128 would saturate maddubs'
 *   pair sums, so |w| meets x signed by w (|w| * |x| <= 128 * 127), as in their row kernels. */
enum { FGG_MM_B8_CODES = 0, FGG_MM_B8_BIASED = 1, FGG_MM_B8_SIGNS = 2 };
FGG_MM_ALWAYS_INLINE int fgg_mm_b8_mode(int kind)
{
    if (kind == FGG_MM_B_Q4_1 || kind == FGG_MM_B_Q5_1) return FGG_MM_B8_CODES;
    return kind == FGG_MM_B_Q8_0 || kind == FGG_MM_B_IQ4_NL ? FGG_MM_B8_SIGNS : FGG_MM_B8_BIASED;
}

/* Weight row w's nb blocks (one run of 32 each) into p[0..nb) (fgg_mm_wb: the per-32 types'
 * batch kernels, maddubs and VNNI; ``signs``: |values| and values, for the sign trick). */
static inline void fgg_mm_wb_unpack(int kind, const uint8_t *w, ptrdiff_t nb, fgg_mm_wb *p, int signs)
{
    const ptrdiff_t bytes = fgg_mm_b_bytes(kind);
    for (ptrdiff_t b = 0; b < nb; b++) {
        const uint8_t *wb = w + b * bytes;
        const __m256i v = fgg_mm_b_values(kind, wb, 0);
        const __m256i sums = _mm256_madd_epi16(_mm256_maddubs_epi16(_mm256_set1_epi8(1), v), _mm256_set1_epi16(1));
        _mm256_storeu_si256((__m256i *)p[b].q, signs ? _mm256_abs_epi8(v) : v);
        _mm256_storeu_si256((__m256i *)p[b].corr, signs ? v : _mm256_mullo_epi32(sums, _mm256_set1_epi32(-128)));
        p[b].d = fgg_mm_b_scale(kind, wb);
        p[b].m = fgg_mm_b_offset(kind, wb);
    }
}

/* The per-32 types' batch kernel on AVX2 (maddubs; the avx2 build, and the avx512 build where the
 * CPU lacks VNNI): the VNNI batch kernel's lanes (rows of x) and panel (fgg_mm_wb), 8 rows of x
 * per group (fgg_mm_x8b). Per group k of 4 values, maddubs of the 4 broadcast weight bytes with x
 * (fgg_mm_b8_mode) makes 2 int16 sums of 2 products per row, and madd adds them to int32: lane k's
 * exact integer for 8 rows (less 128 * the group's sum where x came as x + 128). Then lane k's
 * float step of fgg_mm_acc_add (acc[k] + (float)lane * (d_w * d_x)), the offsets m * s likewise,
 * and the 8 lanes summed in fgg_mm_acc_sum's order: the bits of the row kernels. The 8 lanes'
 * accumulators take half the 16 registers, so one weight row at a time meets a group; they are
 * kept in memory (fgg_mm_b8_lanes) between chunks of blocks, so that a chunk of x stays in L1
 * while weight rows pass over it (each float step in its order, so the same bits): 2.8 -> 2.4
 * cycles per group of 4 values and 8 rows with x from L2 before (C harness). */
typedef struct {
    __m256 acc[8], off;
} fgg_mm_b8_lanes;

/* Blocks b0..b1-1 of one weight row (p) against a group of x, on top of its lanes st. */
FGG_MM_ALWAYS_INLINE void fgg_mm_gemm_b8_run(int kind, const fgg_mm_wb *p, ptrdiff_t b0, ptrdiff_t b1,
                                             const fgg_mm_x8b *x, fgg_mm_b8_lanes *st)
{
    const __m256i ones = _mm256_set1_epi16(1);
    const int mode = fgg_mm_b8_mode(kind);
    __m256 acc[8], off = st->off;
    for (int k = 0; k < 8; k++) acc[k] = st->acc[k];
    for (ptrdiff_t b = b0; b < b1; b++) {
        const fgg_mm_x8b *xb = x + b;
        const fgg_mm_wb *wb = p + b;
        const __m256 f = _mm256_mul_ps(_mm256_set1_ps(wb->d), _mm256_loadu_ps(xb->d));
        for (int k = 0; k < 8; k++) {
            const __m256i xv = _mm256_loadu_si256((const __m256i *)xb->q[k]);
            const __m256i wq = _mm256_set1_epi32(wb->q[k]);
            const __m256i l =
                mode == FGG_MM_B8_CODES ? _mm256_madd_epi16(_mm256_maddubs_epi16(wq, xv), ones)
                : mode == FGG_MM_B8_SIGNS
                    ? _mm256_madd_epi16(_mm256_maddubs_epi16(wq, _mm256_sign_epi8(xv, _mm256_set1_epi32(wb->corr[k]))), ones)
                    : _mm256_add_epi32(_mm256_madd_epi16(_mm256_maddubs_epi16(xv, wq), ones), _mm256_set1_epi32(wb->corr[k]));
            acc[k] = _mm256_add_ps(acc[k], _mm256_mul_ps(_mm256_cvtepi32_ps(l), f));
        }
        if (fgg_mm_b_has_offset(kind))
            off = _mm256_add_ps(off, _mm256_mul_ps(_mm256_set1_ps(wb->m), _mm256_loadu_ps(xb->s)));
    }
    for (int k = 0; k < 8; k++) st->acc[k] = acc[k];
    st->off = off;
}

enum {
    FGG_MM_B8_CHUNK = 32, /* blocks of x (10 KB) that weight rows meet in turn, from L1 */
    FGG_MM_B8_ROWS = 16   /* weight rows whose lanes are kept between chunks (4.6 KB) */
};

/* Weight rows 0..n-1 (row r at w + r * row_bytes, nb blocks) times the m rows of x in groups of 8
 * (x[G * nb + b], fgg_mm_batch_x_fill with FGG_MM_X_B8*): out[i * os + r]. Tiles of ``tile``
 * weight rows are unpacked once (into ``panel``: tile * nb fgg_mm_wb) for every group. */
FGG_MM_ALWAYS_INLINE void fgg_mm_gemm_b_avx2(int kind, const uint8_t *w, ptrdiff_t row_bytes, ptrdiff_t n, ptrdiff_t nb,
                                             const fgg_mm_x8b *x, ptrdiff_t m, float *out, ptrdiff_t os,
                                             fgg_mm_wb *panel, ptrdiff_t tile)
{
    fgg_mm_b8_lanes st[FGG_MM_B8_ROWS];
    for (ptrdiff_t a = 0; a < n; a += tile) {
        const ptrdiff_t na = n - a < tile ? n - a : tile;
        for (ptrdiff_t t = 0; t < na; t++)
            fgg_mm_wb_unpack(kind, w + (a + t) * row_bytes, nb, panel + t * nb, fgg_mm_b8_mode(kind) == FGG_MM_B8_SIGNS);
        for (ptrdiff_t g = 0; g < (m + 7) / 8; g++) {
            const fgg_mm_x8b *xg = x + g * nb;
            const int nr = m - 8 * g < 8 ? (int)(m - 8 * g) : 8;
            for (ptrdiff_t t0 = 0; t0 < na; t0 += FGG_MM_B8_ROWS) {
                const int nt = na - t0 < FGG_MM_B8_ROWS ? (int)(na - t0) : FGG_MM_B8_ROWS;
                for (int t = 0; t < nt; t++) {
                    for (int k = 0; k < 8; k++) st[t].acc[k] = _mm256_setzero_ps();
                    st[t].off = _mm256_setzero_ps();
                }
                for (ptrdiff_t c = 0; c < nb; c += FGG_MM_B8_CHUNK)
                    for (int t = 0; t < nt; t++)
                        fgg_mm_gemm_b8_run(kind, panel + (t0 + t) * nb, c, nb - c < FGG_MM_B8_CHUNK ? nb : c + FGG_MM_B8_CHUNK,
                                           xg, st + t);
                for (int t = 0; t < nt; t++) {
                    const __m256 *v = st[t].acc;
                    __m256 s = _mm256_add_ps(_mm256_add_ps(_mm256_add_ps(v[0], v[4]), _mm256_add_ps(v[2], v[6])),
                                             _mm256_add_ps(_mm256_add_ps(v[1], v[5]), _mm256_add_ps(v[3], v[7])));
                    if (fgg_mm_b_has_offset(kind)) s = _mm256_add_ps(s, st[t].off);
                    float res[8];
                    _mm256_storeu_ps(res, s);
                    for (int r = 0; r < nr; r++) out[(8 * g + r) * os + a + t0 + t] = res[r];
                }
            }
        }
    }
}

#define FGG_MM_GEMM_B(NAME, KIND) FGG_MM_GEMM_FN(NAME, , fgg_mm_gemm_b_avx2, KIND, fgg_mm_x8b, fgg_mm_wb)
FGG_MM_GEMM_B(fgg_mm_gemm_q4_0, FGG_MM_B_Q4_0)
FGG_MM_GEMM_B(fgg_mm_gemm_q5_0, FGG_MM_B_Q5_0)
FGG_MM_GEMM_B(fgg_mm_gemm_q4_1, FGG_MM_B_Q4_1)
FGG_MM_GEMM_B(fgg_mm_gemm_q5_1, FGG_MM_B_Q5_1)
FGG_MM_GEMM_B(fgg_mm_gemm_mxfp4, FGG_MM_B_MXFP4)
FGG_MM_GEMM_B(fgg_mm_gemm_q8_0, FGG_MM_B_Q8_0)
FGG_MM_GEMM_B(fgg_mm_gemm_iq4_nl, FGG_MM_B_IQ4_NL)
#undef FGG_MM_GEMM_B
#endif

/* ------------------------------------------------------------------------------------------ */
/* AVX-512 VNNI integer kernels: the avx512 build only, used only where the CPU has avx512_vnni.
 *
 * The same integers and the same float steps as above, by other instructions: vpdpbusd adds the
 * 4 products of unsigned w bytes with x bytes straight into an int32 lane, which is the lane
 * above before its scale. The per-32 types without Q1_0, Q2_0 and NVFP4: row kernels (w's sign
 * moved onto x), a few-rows kernel (2 to 12 rows of x: two rows per 512-bit vector, each float
 * step the 8-lane step above for two rows at once) and a batch kernel (lanes are 16 rows of x).
 * The K kinds: the batch kernel (their row kernels are maddubs on VNNI CPUs too, as fast or
 * faster at 1 to 5 rows). So the VNNI, maddubs and portable kernels give the same bits.
 * Each function is compiled for VNNI by a target attribute: the rest of the avx512 build still
 * runs on AVX-512 CPUs without VNNI, and these run only when fgg_cpu_has_avx512_vnni() says so. */
#if defined(FGG_MM_INT_SIMD) && FGG_HAVE_AVX512 && (defined(__GNUC__) || defined(__clang__))
#define FGG_MM_HAVE_VNNI 1
#define FGG_MM_VNNI __attribute__((target("avx512vnni,avx512bw,avx512f,avx512vl,avx512dq")))

/* The lanes of fgg_mm_dot: |w| times x with w's sign moved onto x, by vpdpbusd. */
static inline FGG_MM_VNNI __m256i fgg_mm_v1_dot(__m256i w, const int8_t *xq)
{
    __m256i sx = _mm256_sign_epi8(_mm256_loadu_si256((const __m256i *)xq), w);
    return _mm256_dpbusd_epi32(_mm256_setzero_si256(), _mm256_abs_epi8(w), sx);
}

/* The per-32 types with vpdpbusd in place of maddubs and madd: the same lanes. */
FGG_MM_ROWN_B(fgg_mm_rown_b_vnni, FGG_MM_VNNI, fgg_mm_v1_dot)
/* fgg_mm_rown_b512's lanes by vpdpbusd: x's share (c * x) once per row of x, u * x less it per
 * weight row. */
static inline FGG_MM_VNNI __m512i fgg_mm_b512_cx_vnni(__m512i xq, __m512i cv, int c)
{
    return c ? _mm512_dpbusd_epi32(_mm512_setzero_si512(), cv, xq) : _mm512_setzero_si512();
}

static inline FGG_MM_VNNI __m512i fgg_mm_b512_lanes_vnni(__m512i u, __m512i xq, __m512i cx, int c)
{
    const __m512i p = _mm512_dpbusd_epi32(_mm512_setzero_si512(), u, xq);
    return c ? _mm512_sub_epi32(p, cx) : p;
}
FGG_MM_ROWN_B512_FN(fgg_mm_rown_b512_vnni, FGG_MM_VNNI, fgg_mm_b512_cx_vnni, fgg_mm_b512_lanes_vnni)
FGG_MM_ROWS2_B512(static FGG_MM_VNNI, fgg_mm_rows2_q4_0_vnni, fgg_mm_rown_b512_vnni, FGG_MM_B_Q4_0)
FGG_MM_ROWS2_B512(static FGG_MM_VNNI, fgg_mm_rows2_q4_1_vnni, fgg_mm_rown_b512_vnni, FGG_MM_B_Q4_1)
FGG_MM_ROWS2_B512(static FGG_MM_VNNI, fgg_mm_rows2_mxfp4_vnni, fgg_mm_rown_b512_vnni, FGG_MM_B_MXFP4)
/* fgg_mm_rown2_b_avx2's lanes by vpdpbusd: x's share (c * x) made once per row of x as negated
 * lanes, on which each weight row's u * x is one vpdpbusd (maddubs, subtract and madd before). */
static inline FGG_MM_VNNI __m256i fgg_mm_b256_cx_vnni(__m256i xq, __m256i cv, int c)
{
    const __m256i z = _mm256_setzero_si256();
    return c ? _mm256_sub_epi32(z, _mm256_dpbusd_epi32(z, cv, xq)) : z;
}

static inline FGG_MM_VNNI __m256i fgg_mm_b256_lanes_vnni(__m256i u, __m256i xq, __m256i cx, int c)
{
    (void)c;
    return _mm256_dpbusd_epi32(cx, u, xq);
}
FGG_MM_ROWN2_B256_FN(fgg_mm_rown2_b256_vnni, FGG_MM_VNNI, fgg_mm_b256_cx_vnni, fgg_mm_b256_lanes_vnni)
FGG_MM_ROWS2_B256(static FGG_MM_VNNI, fgg_mm_rows2_q4_0_256_vnni, fgg_mm_rown2_b256_vnni, FGG_MM_B_Q4_0, 4)
FGG_MM_ROWS2_B256(static FGG_MM_VNNI, fgg_mm_rows2_q4_1_256_vnni, fgg_mm_rown2_b256_vnni, FGG_MM_B_Q4_1, 4)
FGG_MM_ROWS2_B256(static FGG_MM_VNNI, fgg_mm_rows2_mxfp4_256_vnni, fgg_mm_rown2_b256_vnni, FGG_MM_B_MXFP4, 4)
FGG_MM_ROWS2_B256(static FGG_MM_VNNI, fgg_mm_rows2_q5_0_256_vnni, fgg_mm_rown2_b256_vnni, FGG_MM_B_Q5_0, 4)
FGG_MM_ROWS2_B256(static FGG_MM_VNNI, fgg_mm_rows2_q5_1_256_vnni, fgg_mm_rown2_b256_vnni, FGG_MM_B_Q5_1, 4)
FGG_MM_ROWS2_B256(static FGG_MM_VNNI, fgg_mm_rows2_iq4_nl_256_vnni, fgg_mm_rown2_b256_vnni, FGG_MM_B_IQ4_NL, 4)
FGG_MM_ROWS_B(fgg_mm_rows_b_vnni, fgg_mm_rown_b_vnni, fgg_mm_rown_b512_vnni, FGG_MM_VNNI)
#define FGG_MM_B_ROWS_VNNI(NAME, KIND) FGG_MM_NAMED_ROWS(static FGG_MM_VNNI, NAME, fgg_mm_q8, fgg_mm_rows_b_vnni, KIND)
FGG_MM_B_ROWS_VNNI(fgg_mm_rows_q8_0_vnni, FGG_MM_B_Q8_0)
FGG_MM_B_ROWS_VNNI(fgg_mm_rows_q4_0_vnni, FGG_MM_B_Q4_0)
FGG_MM_B_ROWS_VNNI(fgg_mm_rows_q5_0_vnni, FGG_MM_B_Q5_0)
FGG_MM_B_ROWS_VNNI(fgg_mm_rows_iq4_nl_vnni, FGG_MM_B_IQ4_NL)
FGG_MM_B_ROWS_VNNI(fgg_mm_rows_mxfp4_vnni, FGG_MM_B_MXFP4)
FGG_MM_B_ROWS_VNNI(fgg_mm_rows_q4_1_vnni, FGG_MM_B_Q4_1)
FGG_MM_B_ROWS_VNNI(fgg_mm_rows_q5_1_vnni, FGG_MM_B_Q5_1)
#undef FGG_MM_B_ROWS_VNNI


/* The batch kernel of the K kinds on VNNI (see "The batch kernels" above): one vpdpbusd makes 4
 * products for 16 rows of x (the signed IQ kinds: x + 128 as the unsigned operand, their values
 * as the signed one, 128 * their sum per 16 taken off); per 16 values the raw sums
 * (|raw| <= 16 * 63 * 127) take the scale by vpmulld, the bsum term takes vpdpwssd. */
/* 8 weight rows (p[t * nsb + b]) times the rows of x of one group (x[b]): res[t][r]. One body for
 * two vector widths (VI/VF the integer and float vectors, MM the intrinsics' prefix, SI their
 * integer suffix): fgg_mm_gemm_k_tile on 512 bits, all 16 rows; fgg_mm_gemm_k_tile8 on 256 bits,
 * the group's rows 0..7 (the low half of each interleaved vector), for a last group of at most 8
 * rows, where 256-bit vectors, which issue twice as often, take about half the time. */
#define FGG_MM_GEMM_K_TILE(NAME, VI, VF, MM, SI)                                                      \
FGG_MM_ALWAYS_INLINE FGG_MM_VNNI void NAME(int kind, const fgg_mm_wk *p, ptrdiff_t nsb, const fgg_mm_x16k *x, \
                                           float res[8][16])                                          \
{                                                                                                     \
    const int sgn = fgg_mm_k_signed(kind);                                                            \
    VF acc[8], accm[8];                                                                               \
    for (int t = 0; t < 8; t++) acc[t] = accm[t] = MM##_setzero_ps();                                 \
    for (ptrdiff_t b = 0; b < nsb; b++) {                                                             \
        const fgg_mm_x16k *xb = x + b;                                                                \
        VI s1[8];                                                                                     \
        for (int t = 0; t < 8; t++) s1[t] = MM##_setzero_##SI();                                      \
        for (int g = 0; g < 16; g++) {                                                                \
            VI c[4];                                                                                  \
            for (int k = 0; k < 4; k++) c[k] = MM##_load_##SI((const VI *)xb->q[4 * g + k]);          \
            if (sgn) /* x + 128 as the unsigned operand; 128 * sum(v) taken off below */              \
                for (int k = 0; k < 4; k++) c[k] = MM##_xor_##SI(c[k], MM##_set1_epi8(-128));         \
            for (int t = 0; t < 8; t++) {                                                             \
                const fgg_mm_wk *wt = p + t * nsb + b;                                                \
                const int32_t *u4 = (const int32_t *)(const void *)wt->u + 4 * g;                     \
                VI raw = MM##_setzero_##SI();                                                         \
                for (int k = 0; k < 4; k++)                                                           \
                    raw = sgn ? MM##_dpbusd_epi32(raw, c[k], MM##_set1_epi32(u4[k]))                  \
                              : MM##_dpbusd_epi32(raw, MM##_set1_epi32(u4[k]), c[k]);                 \
                s1[t] = MM##_add_epi32(s1[t], MM##_mullo_epi32(raw, MM##_set1_epi32(wt->sc[g])));     \
            }                                                                                         \
        }                                                                                             \
        const VF xd = MM##_load_ps(xb->d);                                                            \
        for (int t = 0; t < 8; t++) {                                                                 \
            const fgg_mm_wk *wt = p + t * nsb + b;                                                    \
            VI l = s1[t]; /* the signed kinds have no offsets or mins, but x + 128's */               \
            if (sgn) l = MM##_sub_epi32(l, MM##_set1_epi32(wt->off));                                 \
            if (!sgn) {                                                                               \
                VI lb = MM##_setzero_##SI();                                                          \
                for (int q = 0; q < 8; q++)                                                           \
                    lb = MM##_dpwssd_epi32(lb, MM##_set1_epi32(wt->bs2[q]), MM##_load_##SI((const VI *)xb->bsum2[q])); \
                if (fgg_mm_k_has_min(kind))                                                           \
                    accm[t] = MM##_add_ps(accm[t], MM##_mul_ps(MM##_cvtepi32_ps(lb),                  \
                                                               MM##_mul_ps(MM##_set1_ps(wt->dmin), xd))); \
                else                                                                                  \
                    l = MM##_sub_epi32(l, lb);                                                        \
            }                                                                                         \
            acc[t] = MM##_add_ps(acc[t], MM##_mul_ps(MM##_cvtepi32_ps(l), MM##_mul_ps(MM##_set1_ps(wt->d), xd))); \
        }                                                                                             \
    }                                                                                                 \
    for (int t = 0; t < 8; t++)                                                                       \
        MM##_storeu_ps(res[t], fgg_mm_k_has_min(kind) ? MM##_sub_ps(acc[t], accm[t]) : acc[t]);       \
}
FGG_MM_GEMM_K_TILE(fgg_mm_gemm_k_tile, __m512i, __m512, _mm512, si512)
FGG_MM_GEMM_K_TILE(fgg_mm_gemm_k_tile8, __m256i, __m256, _mm256, si256)
#undef FGG_MM_GEMM_K_TILE

FGG_MM_GEMM_K_DRIVER(fgg_mm_gemm_k_vnni, FGG_MM_VNNI, fgg_mm_gemm_k_tile, fgg_mm_gemm_k_tile8)

#define FGG_MM_GEMM_K_VNNI(NAME, KIND) FGG_MM_GEMM_FN(NAME, FGG_MM_VNNI, fgg_mm_gemm_k_vnni, KIND, fgg_mm_x16k, fgg_mm_wk)
FGG_MM_GEMM_K_VNNI(fgg_mm_gemm_q2_k_vnni, FGG_MM_K2)
FGG_MM_GEMM_K_VNNI(fgg_mm_gemm_q3_k_vnni, FGG_MM_K3)
FGG_MM_GEMM_K_VNNI(fgg_mm_gemm_q4_k_vnni, FGG_MM_K4)
FGG_MM_GEMM_K_VNNI(fgg_mm_gemm_q5_k_vnni, FGG_MM_K5)
FGG_MM_GEMM_K_VNNI(fgg_mm_gemm_q6_k_vnni, FGG_MM_K6)
FGG_MM_GEMM_K_VNNI(fgg_mm_gemm_tq2_0_vnni, FGG_MM_K_TQ2_0)
FGG_MM_GEMM_K_VNNI(fgg_mm_gemm_tq1_0_vnni, FGG_MM_K_TQ1_0)
FGG_MM_GEMM_K_VNNI(fgg_mm_gemm_iq4_xs_vnni, FGG_MM_K_IQ4_XS)
FGG_MM_GEMM_K_VNNI(fgg_mm_gemm_iq2_xxs_vnni, FGG_MM_K_IQ2_XXS)
FGG_MM_GEMM_K_VNNI(fgg_mm_gemm_iq2_xs_vnni, FGG_MM_K_IQ2_XS)
FGG_MM_GEMM_K_VNNI(fgg_mm_gemm_iq2_s_vnni, FGG_MM_K_IQ2_S)
FGG_MM_GEMM_K_VNNI(fgg_mm_gemm_iq3_xxs_vnni, FGG_MM_K_IQ3_XXS)
FGG_MM_GEMM_K_VNNI(fgg_mm_gemm_iq3_s_vnni, FGG_MM_K_IQ3_S)
FGG_MM_GEMM_K_VNNI(fgg_mm_gemm_iq1_s_vnni, FGG_MM_K_IQ1_S)
FGG_MM_GEMM_K_VNNI(fgg_mm_gemm_iq1_m_vnni, FGG_MM_K_IQ1_M)
#undef FGG_MM_GEMM_K_VNNI

/* The batch kernel of the per-32 types on VNNI (Q8_0, Q4_0, Q5_0, Q4_1, Q5_1, IQ4_NL, MXFP4): as
 * the K kinds', lanes are 16 rows of x, but their float step stays per run of 32 and per lane k
 * (values 4k..4k+3), so one vpdpbusd of the broadcast 4 weight bytes of group k with the 16 rows'
 * 4 x bytes is lane k's exact integer for all of them: the weights are the signed operand, x + 128
 * the unsigned one (stored so, fgg_mm_x16b_put), and 128 * the group's weight sum is taken off.
 * Then lane k's float step of fgg_mm_acc_add (acc[k] + (float)lane * (d_w * d_x)) in a vector of
 * the 16 rows, the offsets of Q4_1 and Q5_1 (m * s) likewise, and the 8 lanes summed in
 * fgg_mm_acc_sum's order: the bits of fgg_mm_rows_b. */

/* R <= 2 weight rows (row t at p + t * nb, nb blocks) times the 16 rows of one group of x:
 * res[t][r]. The two rows share each load of x (loads, not products, bound one row alone). */
FGG_MM_ALWAYS_INLINE FGG_MM_VNNI void fgg_mm_gemm_b_rows(int kind, const int R, const fgg_mm_wb *p, ptrdiff_t nb,
                                                         const fgg_mm_x16b *x, float res[2][16])
{
    __m512 acc[2][8], off[2];
    for (int t = 0; t < R; t++) {
        off[t] = _mm512_setzero_ps();
        for (int k = 0; k < 8; k++) acc[t][k] = _mm512_setzero_ps();
    }
    for (ptrdiff_t b = 0; b < nb; b++) {
        const fgg_mm_x16b *xb = x + b;
        const __m512 xd = _mm512_load_ps(xb->d);
        __m512 f[2];
        for (int t = 0; t < R; t++) f[t] = _mm512_mul_ps(_mm512_set1_ps(p[t * nb + b].d), xd);
        for (int k = 0; k < 8; k++) {
            const __m512i xv = _mm512_load_si512((const void *)xb->q[k]);
            for (int t = 0; t < R; t++) {
                const fgg_mm_wb *wb = p + t * nb + b;
                const __m512i l = _mm512_dpbusd_epi32(_mm512_set1_epi32(wb->corr[k]), xv, _mm512_set1_epi32(wb->q[k]));
                acc[t][k] = _mm512_add_ps(acc[t][k], _mm512_mul_ps(_mm512_cvtepi32_ps(l), f[t]));
            }
        }
        if (fgg_mm_b_has_offset(kind))
            for (int t = 0; t < R; t++)
                off[t] = _mm512_add_ps(off[t], _mm512_mul_ps(_mm512_set1_ps(p[t * nb + b].m), _mm512_load_ps(xb->s)));
    }
    for (int t = 0; t < R; t++) {
        __m512 s = _mm512_add_ps(_mm512_add_ps(_mm512_add_ps(acc[t][0], acc[t][4]), _mm512_add_ps(acc[t][2], acc[t][6])),
                                 _mm512_add_ps(_mm512_add_ps(acc[t][1], acc[t][5]), _mm512_add_ps(acc[t][3], acc[t][7])));
        if (fgg_mm_b_has_offset(kind)) s = _mm512_add_ps(s, off[t]);
        _mm512_storeu_ps(res[t], s);
    }
}

/* A block's 32 values in both halves of a 512-bit vector: the nibble kinds unpacked at that width
 * from one broadcast load (128-bit lanes: low nibbles, high, low, high; Q5_0's and Q5_1's fifth
 * bits by a mask of qh in both halves), Q8_0 loaded so. */
FGG_MM_ALWAYS_INLINE FGG_MM_VNNI __m512i fgg_mm_b_values2(int kind, const uint8_t *wb)
{
    if (kind == FGG_MM_B_Q8_0) return _mm512_broadcast_i64x4(_mm256_loadu_si256((const __m256i *)(wb + 2)));
    const int at = kind == FGG_MM_B_Q4_1 ? 4 : kind == FGG_MM_B_MXFP4 ? 1 : kind == FGG_MM_B_Q5_0 ? 6
                 : kind == FGG_MM_B_Q5_1 ? 8 : 2;
    const __m512i v = _mm512_broadcast_i32x4(_mm_loadu_si128((const __m128i *)(wb + at)));
    __m512i u = _mm512_and_si512(_mm512_mask_srli_epi16(v, (__mmask32)0xFF00FF00u, v, 4), _mm512_set1_epi8(0x0f));
    if (kind == FGG_MM_B_Q5_0 || kind == FGG_MM_B_Q5_1) {
        const uint64_t qh = fgg_load_u32le(wb + at - 4);
        u = _mm512_mask_add_epi8(u, (__mmask64)(qh | qh << 32), u, _mm512_set1_epi8(16));
    }
    if (kind == FGG_MM_B_Q4_0) return _mm512_sub_epi8(u, _mm512_set1_epi8(8));
    if (kind == FGG_MM_B_Q5_0) return _mm512_sub_epi8(u, _mm512_set1_epi8(16));
    if (kind == FGG_MM_B_Q4_1 || kind == FGG_MM_B_Q5_1) return u;
    const int8_t *lut = kind == FGG_MM_B_IQ4_NL ? fgg_iq4nl_values : fgg_fp4_values;
    return _mm512_shuffle_epi8(_mm512_broadcast_i32x4(_mm_loadu_si128((const __m128i *)lut)), u);
}

/* Weight rows t (R = 1 or 2, a constant; row t at w + t * row_bytes, nb blocks) against P pairs of
 * rows of x (fgg_mm_x2b, pair p at x + p * nb, m rows in all): out[i * os + t]. Each weight block
 * is unpacked once, into registers (its values in both halves, and -128 times their sums by 4,
 * since x comes as x + 128), and met by every pair. Lanes 0-7 carry row 2p's float steps of the
 * row kernels, 8-15 row 2p + 1's, summed in fgg_mm_acc_sum's order: the same bits. */
FGG_MM_ALWAYS_INLINE FGG_MM_VNNI void fgg_mm_few_b_rows(int kind, const int P, const int R, const uint8_t *w,
                                                        ptrdiff_t row_bytes, ptrdiff_t nb, const fgg_mm_x2b *x,
                                                        ptrdiff_t m, float *out, ptrdiff_t os)
{
    const ptrdiff_t bytes = fgg_mm_b_bytes(kind);
    __m512 acc[2][6], off[2][6];
    for (int t = 0; t < R; t++)
        for (int p = 0; p < P; p++) acc[t][p] = off[t][p] = _mm512_setzero_ps();
    for (ptrdiff_t b = 0; b < nb; b++) {
        __m512i wq[2], corr[2];
        __m512 dw[2], mw[2];
        for (int t = 0; t < R; t++) {
            const uint8_t *wb = w + t * row_bytes + b * bytes;
            fgg_mm_prefetch_ahead(wb, bytes);
            wq[t] = fgg_mm_b_values2(kind, wb);
            corr[t] = _mm512_sub_epi32(_mm512_setzero_si512(),
                                       _mm512_dpbusd_epi32(_mm512_setzero_si512(), _mm512_set1_epi8((char)0x80), wq[t]));
            dw[t] = _mm512_set1_ps(fgg_mm_b_scale(kind, wb));
            mw[t] = _mm512_set1_ps(fgg_mm_b_offset(kind, wb));
        }
        for (int p = 0; p < P; p++) {
            const fgg_mm_x2b *xb = x + p * nb + b;
            const __m512i xq = _mm512_load_si512((const void *)xb->q);
            const __m512 xd = _mm512_load_ps(xb->d);
            for (int t = 0; t < R; t++) {
                const __m512i l = _mm512_dpbusd_epi32(corr[t], xq, wq[t]);
                acc[t][p] = _mm512_add_ps(acc[t][p], _mm512_mul_ps(_mm512_cvtepi32_ps(l), _mm512_mul_ps(dw[t], xd)));
                if (fgg_mm_b_has_offset(kind))
                    off[t][p] = _mm512_add_ps(off[t][p], _mm512_mul_ps(mw[t], _mm512_load_ps(xb->s)));
            }
        }
    }
    for (int t = 0; t < R; t++)
        for (int p = 0; p < P; p++)
            for (int h = 0; h < 2 && 2 * p + h < m; h++) {
                float r = fgg_mm_acc_sum(h ? _mm512_extractf32x8_ps(acc[t][p], 1) : _mm512_castps512_ps256(acc[t][p]));
                if (fgg_mm_b_has_offset(kind)) {
                    float o[16];
                    _mm512_storeu_ps(o, off[t][p]);
                    r = r + o[8 * h];
                }
                out[(2 * p + h) * os + t] = r;
            }
}

/* The per-32 types against at most FGG_MM_FEW_ROWS rows of x (P pairs, a constant), weight rows two
 * at a time (one at a time for Q4_1 and Q5_1 beyond 4 pairs: their offsets' accumulators would
 * not fit in the registers), each row read once from start to end (walking K in spans, to keep x
 * in L1 across many weight rows, took 1.0-1.3x the time: the weight rows then stream from memory
 * in pieces). */
FGG_MM_ALWAYS_INLINE FGG_MM_VNNI void fgg_mm_few_b_vnni(int kind, const int P, const uint8_t *w, ptrdiff_t row_bytes,
                                                        ptrdiff_t n, ptrdiff_t nb, const fgg_mm_x2b *x, ptrdiff_t m,
                                                        float *out, ptrdiff_t os)
{
    ptrdiff_t t = 0;
    if (!(fgg_mm_b_has_offset(kind) && P > 4))
        for (; t + 2 <= n; t += 2) fgg_mm_few_b_rows(kind, P, 2, w + t * row_bytes, row_bytes, nb, x, m, out + t, os);
    for (; t < n; t++) fgg_mm_few_b_rows(kind, P, 1, w + t * row_bytes, row_bytes, nb, x, m, out + t, os);
}

/* Weight rows 0..n-1 (row r at w + r * row_bytes, nb blocks) times the m rows of x in groups of 16
 * (x[G * nb + b], fgg_mm_batch_x_fill): out[i * os + r]. Tiles of ``tile`` weight rows are unpacked
 * once (into ``panel``: tile * nb fgg_mm_wb) for 64 rows of x at a time, both in L2. */
FGG_MM_ALWAYS_INLINE FGG_MM_VNNI void fgg_mm_gemm_b_vnni(int kind, const uint8_t *w, ptrdiff_t row_bytes, ptrdiff_t n,
                                                         ptrdiff_t nb, const void *x, ptrdiff_t m, float *out,
                                                         ptrdiff_t os, fgg_mm_wb *panel, ptrdiff_t tile)
{
    if (fgg_mm_batch_few(FGG_MM_X_B32, m)) {  /* x in fgg_mm_x2b */
        const fgg_mm_x2b *x2 = (const fgg_mm_x2b *)x;
        switch ((m + 1) / 2) {
        case 6: fgg_mm_few_b_vnni(kind, 6, w, row_bytes, n, nb, x2, m, out, os); break;
        case 5: fgg_mm_few_b_vnni(kind, 5, w, row_bytes, n, nb, x2, m, out, os); break;
        case 4: fgg_mm_few_b_vnni(kind, 4, w, row_bytes, n, nb, x2, m, out, os); break;
        case 3: fgg_mm_few_b_vnni(kind, 3, w, row_bytes, n, nb, x2, m, out, os); break;
        case 2: fgg_mm_few_b_vnni(kind, 2, w, row_bytes, n, nb, x2, m, out, os); break;
        default: fgg_mm_few_b_vnni(kind, 1, w, row_bytes, n, nb, x2, m, out, os); break;
        }
        return;
    }
    const fgg_mm_x16b *x16 = (const fgg_mm_x16b *)x;
    const ptrdiff_t groups = (m + 15) / 16;
    for (ptrdiff_t a = 0; a < n; a += tile) {
        const ptrdiff_t na = n - a < tile ? n - a : tile;
        for (ptrdiff_t t = 0; t < na; t++) fgg_mm_wb_unpack(kind, w + (a + t) * row_bytes, nb, panel + t * nb, 0);
        for (ptrdiff_t g0 = 0; g0 < groups; g0 += 4)
            for (ptrdiff_t t = 0; t < na; t += 2)
                for (ptrdiff_t g = g0; g < groups && g < g0 + 4; g++) {
                    float res[2][16];
                    const int nr = m - 16 * g < 16 ? (int)(m - 16 * g) : 16, nt = na - t < 2 ? 1 : 2;
                    if (nt == 2)
                        fgg_mm_gemm_b_rows(kind, 2, panel + t * nb, nb, x16 + g * nb, res);
                    else
                        fgg_mm_gemm_b_rows(kind, 1, panel + t * nb, nb, x16 + g * nb, res);
                    for (int r = 0; r < nr; r++)
                        for (int u = 0; u < nt; u++) out[(16 * g + r) * os + a + t + u] = res[u][r];
                }
    }
}

/* (x stays untyped: the driver reads it as fgg_mm_x2b or fgg_mm_x16b by the row count) */
#define FGG_MM_GEMM_B_VNNI(NAME, KIND) FGG_MM_GEMM_FN(NAME, FGG_MM_VNNI, fgg_mm_gemm_b_vnni, KIND, void, fgg_mm_wb)
FGG_MM_GEMM_B_VNNI(fgg_mm_gemm_q8_0_vnni, FGG_MM_B_Q8_0)
FGG_MM_GEMM_B_VNNI(fgg_mm_gemm_q4_0_vnni, FGG_MM_B_Q4_0)
FGG_MM_GEMM_B_VNNI(fgg_mm_gemm_q5_0_vnni, FGG_MM_B_Q5_0)
FGG_MM_GEMM_B_VNNI(fgg_mm_gemm_q4_1_vnni, FGG_MM_B_Q4_1)
FGG_MM_GEMM_B_VNNI(fgg_mm_gemm_q5_1_vnni, FGG_MM_B_Q5_1)
FGG_MM_GEMM_B_VNNI(fgg_mm_gemm_iq4_nl_vnni, FGG_MM_B_IQ4_NL)
FGG_MM_GEMM_B_VNNI(fgg_mm_gemm_mxfp4_vnni, FGG_MM_B_MXFP4)
#undef FGG_MM_GEMM_B_VNNI
#else
#define FGG_MM_HAVE_VNNI 0
/* Never called (fgg_mm_vnni_usable() is 0): names for the Cython table code. */
#define fgg_mm_rows_q8_0_vnni fgg_mm_rows_q8_0
#define fgg_mm_rows_q4_0_vnni fgg_mm_rows_q4_0
#define fgg_mm_rows_q5_0_vnni fgg_mm_rows_q5_0
#define fgg_mm_rows_iq4_nl_vnni fgg_mm_rows_iq4_nl
#define fgg_mm_rows_mxfp4_vnni fgg_mm_rows_mxfp4
#define fgg_mm_rows_q4_1_vnni fgg_mm_rows_q4_1
#define fgg_mm_rows_q5_1_vnni fgg_mm_rows_q5_1
#define fgg_mm_rows2_q4_0_vnni fgg_mm_rows2_q4_0
#define fgg_mm_rows2_q4_1_vnni fgg_mm_rows2_q4_1
#define fgg_mm_rows2_mxfp4_vnni fgg_mm_rows2_mxfp4
#define fgg_mm_rows2_q4_0_256_vnni fgg_mm_rows2_q4_0_256
#define fgg_mm_rows2_q4_1_256_vnni fgg_mm_rows2_q4_1_256
#define fgg_mm_rows2_mxfp4_256_vnni fgg_mm_rows2_mxfp4_256
#define fgg_mm_rows2_q5_0_256_vnni fgg_mm_rows2_q5_0_256
#define fgg_mm_rows2_q5_1_256_vnni fgg_mm_rows2_q5_1_256
#define fgg_mm_rows2_iq4_nl_256_vnni fgg_mm_rows_iq4_nl
#define fgg_mm_gemm_q2_k_vnni fgg_mm_gemm_never
#define fgg_mm_gemm_q3_k_vnni fgg_mm_gemm_never
#define fgg_mm_gemm_q4_k_vnni fgg_mm_gemm_never
#define fgg_mm_gemm_q5_k_vnni fgg_mm_gemm_never
#define fgg_mm_gemm_q6_k_vnni fgg_mm_gemm_never
#define fgg_mm_gemm_tq2_0_vnni fgg_mm_gemm_never
#define fgg_mm_gemm_tq1_0_vnni fgg_mm_gemm_never
#define fgg_mm_gemm_iq4_xs_vnni fgg_mm_gemm_never
#define fgg_mm_gemm_iq2_xxs_vnni fgg_mm_gemm_never
#define fgg_mm_gemm_iq2_xs_vnni fgg_mm_gemm_never
#define fgg_mm_gemm_iq2_s_vnni fgg_mm_gemm_never
#define fgg_mm_gemm_iq3_xxs_vnni fgg_mm_gemm_never
#define fgg_mm_gemm_iq3_s_vnni fgg_mm_gemm_never
#define fgg_mm_gemm_iq1_s_vnni fgg_mm_gemm_never
#define fgg_mm_gemm_iq1_m_vnni fgg_mm_gemm_never
#define fgg_mm_gemm_q8_0_vnni fgg_mm_gemm_never
#define fgg_mm_gemm_q4_0_vnni fgg_mm_gemm_never
#define fgg_mm_gemm_q5_0_vnni fgg_mm_gemm_never
#define fgg_mm_gemm_q4_1_vnni fgg_mm_gemm_never
#define fgg_mm_gemm_q5_1_vnni fgg_mm_gemm_never
#define fgg_mm_gemm_iq4_nl_vnni fgg_mm_gemm_never
#define fgg_mm_gemm_mxfp4_vnni fgg_mm_gemm_never
#endif
#if !FGG_HAVE_SSE2 || defined(FGG_MM_INT_SIMD)  /* the portable SSE2 build's own only (no SIMD batch kernel) */
#define fgg_mm_gemm_q1_0 fgg_mm_gemm_never
#endif
#if !defined(FGG_MM_INT_SIMD) && !FGG_HAVE_SSE2  /* the portable SSE2 build's are at the end (FGG_MM_SSE2_K_BUILD) */
#define fgg_mm_gemm_q8_0 fgg_mm_gemm_never
#define fgg_mm_gemm_q4_0 fgg_mm_gemm_never
#define fgg_mm_gemm_q5_0 fgg_mm_gemm_never
#define fgg_mm_gemm_q4_1 fgg_mm_gemm_never
#define fgg_mm_gemm_q5_1 fgg_mm_gemm_never
#define fgg_mm_gemm_q2_k fgg_mm_gemm_never
#define fgg_mm_gemm_q3_k fgg_mm_gemm_never
#define fgg_mm_gemm_q4_k fgg_mm_gemm_never
#define fgg_mm_gemm_q5_k fgg_mm_gemm_never
#define fgg_mm_gemm_q6_k fgg_mm_gemm_never
#endif

#if !defined(FGG_MM_INT_SIMD) && !FGG_HAVE_SSE2
#define fgg_mm_gemm_mxfp4 fgg_mm_gemm_never
#define fgg_mm_gemm_iq4_nl fgg_mm_gemm_never
#define fgg_mm_gemm_tq2_0 fgg_mm_gemm_never
#define fgg_mm_gemm_tq1_0 fgg_mm_gemm_never
#define fgg_mm_gemm_iq4_xs fgg_mm_gemm_never
#define fgg_mm_gemm_iq2_xxs fgg_mm_gemm_never
#define fgg_mm_gemm_iq3_s fgg_mm_gemm_never
#define fgg_mm_gemm_iq2_xs fgg_mm_gemm_never
#define fgg_mm_gemm_iq2_s fgg_mm_gemm_never
#define fgg_mm_gemm_iq3_xxs fgg_mm_gemm_never
#define fgg_mm_gemm_iq1_s fgg_mm_gemm_never
#define fgg_mm_gemm_iq1_m fgg_mm_gemm_never
#endif

#if defined(FGG_MM_INT_SIMD)
#define FGG_MM_INT_SIMD_BUILD 1
#else
#define FGG_MM_INT_SIMD_BUILD 0
#endif
/* Whether this build has the portable SSE2 kernels of the K kinds and of the per-32 types but Q2_0
 * and NVFP4 on x widened to int16 (fgg_mm_gemm_k_sse, FGG_MM_X_K16; fgg_mm_gemm_b_sse,
 * FGG_MM_X_B16). */
#if FGG_HAVE_SSE2 && !defined(FGG_MM_INT_SIMD)
#define FGG_MM_SSE2_K_BUILD 1
#else
#define FGG_MM_SSE2_K_BUILD 0
#endif

/* Whether this build has the VNNI kernels and this CPU (and OS) can run them. */
static inline int fgg_mm_vnni_usable(void) { return FGG_MM_HAVE_VNNI && fgg_cpu_has_avx512_vnni(); }


/* ------------------------------------------------------------------------------------------ */
/* Exact path of Q2_K to Q6_K, IQ4_XS, Q8_0 and Q4_0 from the blocks, factored by sub-block    */
/*
 * A sub-block's values are S * q - M (Q4_K: q = 0..15 per 32 values) or S * (q - 32) (Q6_K:
 * q = 0..63 per 16 values), so its part of a dot product is S * sum(q' * x) - M * sum(x): the
 * small integers q' are exact floats, and the scale is applied once per sub-block instead of
 * once per value (fewer float operations than dequantizing first, which fgg_mm_dot_acc needs).
 * For one row of x and one weight row: t[l] = sum over c of q'[8c + l] * x[8c + l] (8 lanes, c in
 * order, multiply then add); acc[l] = acc[l] + S * t[l]; Q4_K also, once per super-block, the 8
 * lanes mins[j] = mins[j] + M[j] * xsum[j], with xsum[j] sub-block j's sum of x (fgg_mm_xsum;
 * Q2_K's 16 mins per super-block in two such steps, sub-blocks 0-7 then 8-15); the result is fgg_mm_lanes8_sum(acc) - fgg_mm_lanes8_sum(mins). Plain C and
 * AVX2 do exactly these operations (no fused multiply-add), and a row of x gets the same
 * operations whatever the batch: the same bits on every build, thread count and batch.
 */
/* Floats of unpacked q per weight row (a super-block, or 8 blocks), and of its scales (or mins). */
#define FGG_MM_QF_ROW 256
#define FGG_MM_S_ROW 16
/* Weight rows one call of the unpacking spans takes at most (fgg_mm_exact_k_span,
 * fgg_mm_exact_b32_span; their q unpacked to qf side by side): 2 in the avx512 build, whose pairs
 * kernel holds both rows' lanes in registers; else 16, so that each group of 4 rows of x (4 KiB of
 * the driver's panel) meets 16 weight rows' unpacked q (16 KiB) before the next group. Two rows at
 * a time, the panel's 32 rows (32 KiB, all of Zen 2's L1d) were read again for each pair. One
 * thread, 4096 x 4096, ms at 64 / 512 rows of x (Zen 2): Q4_K 48.2 / 392.0 -> 45.1 / 373.5, Q6_K
 * 48.0 / 386.6 -> 44.5 / 366.6, Q4_0 49.0 / 393.8 -> 45.6 / 369.5, IQ4_XS 58.8 / 474.3 -> 57.1 /
 * 451.2; 32 rows a call: Q4_K 45.7 / 376.5. */
#define FGG_MM_SPAN_NW (FGG_HAVE_AVX512 ? 2 : 16)
#define FGG_MM_QF_FLOATS (FGG_MM_SPAN_NW * FGG_MM_QF_ROW)

/* The 8 lanes summed in a fixed pairwise order. */
static inline float fgg_mm_lanes8_sum(const float *acc)
{
    float s4[4];
    for (int j = 0; j < 4; j++) s4[j] = acc[j] + acc[j + 4];
    return (s4[0] + s4[2]) + (s4[1] + s4[3]);
}

/* Sums of x per `len` values (16 or 32; n a multiple of len): 8 lanes, each the values 8 apart
 * added in order, then fgg_mm_lanes8_sum. */
static inline void fgg_mm_xsum(const float *x, ptrdiff_t n, int len, float *sums)
{
    for (ptrdiff_t j = 0; j < n / len; j++) {
        const float *xj = x + len * j;
        float lane[8];
        for (int l = 0; l < 8; l++) {
            lane[l] = xj[l];
            for (int c = 8; c < len; c += 8) lane[l] = lane[l] + xj[c + l];
        }
        sums[j] = fgg_mm_lanes8_sum(lane);
    }
}

/* The alignment of x the factored kernels need: the portable build's SSE2 kernels read it with
 * aligned loads (fgg_mm_sse_sub), the AVX builds' unaligned loads fold anyway. */
#if FGG_HAVE_SSE2 && !FGG_HAVE_AVX2
#define FGG_MM_X_ALIGN 16
#else
#define FGG_MM_X_ALIGN 4
#endif

#if FGG_HAVE_SSE2 && !FGG_HAVE_AVX2
/* SSE2 has no byte-to-int32 widening: a byte u becomes the float u - off as the bits
 * 0x4B000000 | u (2^23 + u, exact) less 2^23 + off, two unpacks and a subtract per 4 values. */
typedef struct { __m128 v[2]; } fgg_mm_f8;

/* 16 bytes u as the floats u - off (off2 = 2^23 + off): values 0-7 in f[0], 8-15 in f[1]. */
FGG_MM_ALWAYS_INLINE void fgg_mm_sse_u8_to_f(__m128i u, __m128 off2, fgg_mm_f8 f[2])
{
    const __m128i z = _mm_setzero_si128(), e = _mm_set1_epi16(0x4B00);
    const __m128i w[2] = {_mm_unpacklo_epi8(u, z), _mm_unpackhi_epi8(u, z)};
    for (int h = 0; h < 2; h++) {
        f[h].v[0] = _mm_sub_ps(_mm_castsi128_ps(_mm_unpacklo_epi16(w[h], e)), off2);
        f[h].v[1] = _mm_sub_ps(_mm_castsi128_ps(_mm_unpackhi_epi16(w[h], e)), off2);
    }
}

/* One sub-block of 8 * n values (f) times x (16-byte aligned): t = f[0] * x[0..8] + f[1] *
 * x[8..16] + ..., then a = a + s * t, lane by lane (fgg_mm_sub_acc's operations). */
FGG_MM_ALWAYS_INLINE void fgg_mm_sse_sub(__m128 a[2], const fgg_mm_f8 *f, const int n, const float *x, float s)
{
    for (int h = 0; h < 2; h++) {
        __m128 t = _mm_mul_ps(f[0].v[h], _mm_load_ps(x + 4 * h));
        for (int c = 1; c < n; c++) t = _mm_add_ps(t, _mm_mul_ps(f[c].v[h], _mm_load_ps(x + 8 * c + 4 * h)));
        a[h] = _mm_add_ps(a[h], _mm_mul_ps(_mm_set1_ps(s), t));
    }
}

/* A header's 8 or 16 small scales, bytes u less off, times d: S[j] = d * (u[j] - off) (the
 * plain C steps: u - off is exact, then one rounded multiply). */
FGG_MM_ALWAYS_INLINE void fgg_mm_sse_scales(__m128i u, float off, float d, const int n, float *S)
{
    fgg_mm_f8 f[2];
    const __m128 dv = _mm_set1_ps(d);
    fgg_mm_sse_u8_to_f(u, _mm_set1_ps(8388608.0f + off), f);
    for (int k = 0; k < n / 4; k++) _mm_storeu_ps(S + 4 * k, _mm_mul_ps(dv, f[k >> 1].v[k & 1]));
}
#endif

/* Q4_K super-block header: S = d * scale, M = dmin * min for the 8 sub-blocks (6-bit fields,
 * unpacked as the integer path does it: fgg_mm_k4_scales). */
static inline void fgg_mm_q4_k_sm(const uint8_t *wb, float S[8], float M[8])
{
    const float d = fgg_half_to_float_scale(fgg_load_u16le(wb)), dmin = fgg_half_to_float_scale(fgg_load_u16le(wb + 2));
    uint32_t words[4];
    fgg_mm_k4_scales(wb + 4, words);
#if FGG_HAVE_AVX2
    __m128i b8 = _mm_setr_epi32((int)words[0], (int)words[1], (int)words[2], (int)words[3]);
    _mm256_storeu_ps(S, _mm256_mul_ps(_mm256_set1_ps(d), _mm256_cvtepi32_ps(_mm256_cvtepu8_epi32(b8))));
    _mm256_storeu_ps(M, _mm256_mul_ps(_mm256_set1_ps(dmin), _mm256_cvtepi32_ps(_mm256_cvtepu8_epi32(_mm_srli_si128(b8, 8)))));
#elif FGG_HAVE_SSE2
    const __m128i b8 = _mm_setr_epi32((int)words[0], (int)words[1], (int)words[2], (int)words[3]);
    fgg_mm_sse_scales(b8, 0.0f, d, 8, S);
    fgg_mm_sse_scales(_mm_srli_si128(b8, 8), 0.0f, dmin, 8, M);
#else
    for (int j = 0; j < 8; j++) {
        S[j] = d * (float)((words[j / 4] >> (8 * (j % 4))) & 0xffu);
        M[j] = dmin * (float)((words[2 + j / 4] >> (8 * (j % 4))) & 0xffu);
    }
#endif
}

#if FGG_HAVE_AVX2
/* 32 signed bytes (values 0-15 in lo, 16-31 in hi) as four vectors of 8 floats. */
FGG_MM_ALWAYS_INLINE void fgg_mm_i8x16x2_to_f8x4(__m128i lo, __m128i hi, __m256 f[4])
{
    f[0] = _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(lo));
    f[1] = _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(_mm_srli_si128(lo, 8)));
    f[2] = _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(hi));
    f[3] = _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(_mm_srli_si128(hi, 8)));
}

FGG_MM_ALWAYS_INLINE void fgg_mm_i8x32_to_f8x4(__m256i v, __m256 f[4])
{
    fgg_mm_i8x16x2_to_f8x4(_mm256_castsi256_si128(v), _mm256_extracti128_si256(v, 1), f);
}

/* 32 signed bytes at p (in memory) as four vectors of 8 floats. Bytes made in registers go
 * through memory for this: a super-block's bytes stored to a scratch and widened from there (the
 * load folded into vpmovsxbd, each 8 bytes where they are) cost less than widening from registers
 * (the extract and byte shifts that bring each 8 bytes to the bottom of an xmm first; Zen 2
 * measured 1.2-1.35x faster at one row); stored a whole super-block ahead, the store-to-load
 * forwarding stays off the critical path. */
FGG_MM_ALWAYS_INLINE void fgg_mm_i8x32_load_f8x4(const int8_t *p, __m256 f[4])
{
    for (int c = 0; c < 4; c++) f[c] = _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(_mm_loadl_epi64((const __m128i *)(p + 8 * c))));
}

/* 32 signed bytes as 32 floats at y. */
static inline void fgg_mm_i8x32_to_f(__m256i v, float *y)
{
    __m256 f[4];
    fgg_mm_i8x32_to_f8x4(v, f);
    for (int c = 0; c < 4; c++) _mm256_storeu_ps(y + 8 * c, f[c]);
}

/* A sub-block's 8 lanes t = f[0] * x[0..8] + f[1] * x[8..16] + ... over n vectors of its values,
 * multiply then add in that order (fgg_mm_sub_t's operations, the values in registers). */
FGG_MM_ALWAYS_INLINE __m256 fgg_mm_sub_t_f(const __m256 *f, const float *x, int n)
{
    __m256 t = _mm256_mul_ps(f[0], _mm256_loadu_ps(x));
    for (int c = 1; c < n; c++) t = _mm256_add_ps(t, _mm256_mul_ps(f[c], _mm256_loadu_ps(x + 8 * c)));
    return t;
}
#endif

/* The 256 q of a Q4_K super-block as floats, in value order. */
static inline void fgg_mm_q4_k_qf(const uint8_t *wb, float *qf)
{
    const uint8_t *qs = wb + 16;
#if FGG_HAVE_AVX2
    const __m256i low = _mm256_set1_epi8(15);
    for (int g = 0; g < 4; g++) {
        __m256i v = _mm256_loadu_si256((const __m256i *)(qs + 32 * g));
        fgg_mm_i8x32_to_f(_mm256_and_si256(v, low), qf + 64 * g);  /* 0..15: the same as unsigned */
        fgg_mm_i8x32_to_f(_mm256_and_si256(_mm256_srli_epi16(v, 4), low), qf + 64 * g + 32);
    }
    return;
#endif
    for (int g = 0; g < 4; g++)
        for (int k = 0; k < 32; k++) {
            qf[64 * g + k] = (float)(qs[32 * g + k] & 15);
            qf[64 * g + 32 + k] = (float)(qs[32 * g + k] >> 4);
        }
}

/* S = d * scale for the 16 sub-blocks of a Q6_K super-block. */
static inline void fgg_mm_q6_k_s(const uint8_t *wb, float S[16])
{
    const float d = fgg_half_to_float_scale(fgg_load_u16le(wb + 208));
#if FGG_HAVE_AVX2
    const __m128i sc = _mm_loadu_si128((const __m128i *)(wb + 192));
    _mm256_storeu_ps(S, _mm256_mul_ps(_mm256_set1_ps(d), _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(sc))));
    _mm256_storeu_ps(S + 8, _mm256_mul_ps(_mm256_set1_ps(d), _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(_mm_srli_si128(sc, 8)))));
#elif FGG_HAVE_SSE2
    fgg_mm_sse_scales(_mm_xor_si128(_mm_loadu_si128((const __m128i *)(wb + 192)), _mm_set1_epi8((char)0x80)), 128.0f, d, 16, S);
#else
    const int8_t *scales = (const int8_t *)(wb + 192);
    for (int j = 0; j < 16; j++) S[j] = d * (float)scales[j];
#endif
}

#if FGG_HAVE_AVX2
/* Half h of a Q6_K super-block: its 128 q - 32 as four vectors of 32 signed bytes, in value order. */
static inline void fgg_mm_q6_k_half(const uint8_t *wb, int h, __m256i q[4])
{
    fgg_mm_q6_k_half_u(wb, h, q);
    for (int t = 0; t < 4; t++) q[t] = _mm256_sub_epi8(q[t], _mm256_set1_epi8(32));
}
#endif

/* The 256 q - 32 of a Q6_K super-block as floats, in value order, and S = d * scale per 16. */
static inline void fgg_mm_q6_k_qf(const uint8_t *wb, float *qf, float S[16])
{
    fgg_mm_q6_k_s(wb, S);
    for (int h = 0; h < 2; h++) {
        float *y = qf + 128 * h;
#if FGG_HAVE_AVX2
        __m256i q[4];
        fgg_mm_q6_k_half(wb, h, q);
        for (int c = 0; c < 4; c++) fgg_mm_i8x32_to_f(q[c], y + 32 * c);
        continue;
#endif
        const uint8_t *l = wb + 64 * h, *hb = wb + 128 + 32 * h;
        for (int k = 0; k < 32; k++) {
            y[k] = (float)(((l[k] & 15) | ((hb[k] & 3) << 4)) - 32);
            y[k + 32] = (float)(((l[k + 32] & 15) | (((hb[k] >> 2) & 3) << 4)) - 32);
            y[k + 64] = (float)(((l[k] >> 4) | (((hb[k] >> 4) & 3) << 4)) - 32);
            y[k + 96] = (float)(((l[k + 32] >> 4) | (((hb[k] >> 6) & 3) << 4)) - 32);
        }
    }
}

/* acc[l] = acc[l] + S * sum over c < n8 of qf[8c + l] * x[8c + l]  (one sub-block, one row). */
static inline void fgg_mm_sub_acc(const float *qf, const float *x, int n8, float S, float *acc)
{
    float t[8];
    for (int l = 0; l < 8; l++) t[l] = qf[l] * x[l];
    for (int c = 1; c < n8; c++)
        for (int l = 0; l < 8; l++) t[l] = t[l] + qf[8 * c + l] * x[8 * c + l];
    for (int l = 0; l < 8; l++) acc[l] = acc[l] + S * t[l];
}

#if FGG_HAVE_AVX2
static inline __m256 fgg_mm_sub_t(const float *qf, const float *x, int n8)
{
    __m256 t = _mm256_mul_ps(_mm256_loadu_ps(qf), _mm256_loadu_ps(x));
    for (int c = 1; c < n8; c++)
        t = _mm256_add_ps(t, _mm256_mul_ps(_mm256_loadu_ps(qf + 8 * c), _mm256_loadu_ps(x + 8 * c)));
    return t;
}
#endif

/* The min lanes of r rows (acc + 16 * i + 8) for one super-block with n_min (8 or 16) mins M:
 * lanes + M[l] * xsum[l], then for 16 lanes + M[8 + l] * xsum[8 + l] (row i's sums at
 * xsum + i * xss). */
static inline void fgg_mm_min_lanes(const float *M, int n_min, const float *xsum, ptrdiff_t xss, int r, float *acc)
{
    if (n_min == 0) return;
#if FGG_HAVE_AVX2  /* in vectors: left to itself, gcc made it a tenth of a batch's time (Q4_K) */
    for (int i = 0; i < r; i++) {
        __m256 a = _mm256_loadu_ps(acc + 16 * i + 8);
        for (int h = 0; h < n_min; h += 8)
            a = _mm256_add_ps(a, _mm256_mul_ps(_mm256_loadu_ps(M + h), _mm256_loadu_ps(xsum + i * xss + h)));
        _mm256_storeu_ps(acc + 16 * i + 8, a);
    }
#else
    for (int i = 0; i < r; i++)
        for (int h = 0; h < n_min; h += 8)
            for (int l = 0; l < 8; l++)
                acc[16 * i + 8 + l] = acc[16 * i + 8 + l] + M[h + l] * xsum[i * xss + h + l];
#endif
}

/* One super-block's unpacked q (qf, n_sub sub-blocks of 8 * n8 values, scales S, and n_min mins M
 * or none) times r <= 4 rows of x (row i at x + i * xs, its sums per sub-block at xsum + i * xss),
 * into each row's 8 lanes and 8 min lanes (acc + 16 * i). Four rows share each load of qf. */
static inline void fgg_mm_sb_rows(const float *qf, const float *S, const float *M, int n_min, int n_sub, int n8,
                                  const float *x, ptrdiff_t xs, const float *xsum, ptrdiff_t xss, int r, float *acc)
{
    const int len = 8 * n8;
#if FGG_HAVE_AVX2
    if (r == 4) {
        __m256 a0 = _mm256_loadu_ps(acc), a1 = _mm256_loadu_ps(acc + 16);
        __m256 a2 = _mm256_loadu_ps(acc + 32), a3 = _mm256_loadu_ps(acc + 48);
        for (int j = 0; j < n_sub; j++) {
            const float *q = qf + len * j, *x0 = x + len * j;
            const __m256 s = _mm256_set1_ps(S[j]);
            a0 = _mm256_add_ps(a0, _mm256_mul_ps(s, fgg_mm_sub_t(q, x0, n8)));
            a1 = _mm256_add_ps(a1, _mm256_mul_ps(s, fgg_mm_sub_t(q, x0 + xs, n8)));
            a2 = _mm256_add_ps(a2, _mm256_mul_ps(s, fgg_mm_sub_t(q, x0 + 2 * xs, n8)));
            a3 = _mm256_add_ps(a3, _mm256_mul_ps(s, fgg_mm_sub_t(q, x0 + 3 * xs, n8)));
        }
        _mm256_storeu_ps(acc, a0);
        _mm256_storeu_ps(acc + 16, a1);
        _mm256_storeu_ps(acc + 32, a2);
        _mm256_storeu_ps(acc + 48, a3);
    } else {
        for (int i = 0; i < r; i++) {
            __m256 a = _mm256_loadu_ps(acc + 16 * i);
            for (int j = 0; j < n_sub; j++)
                a = _mm256_add_ps(a, _mm256_mul_ps(_mm256_set1_ps(S[j]), fgg_mm_sub_t(qf + len * j, x + i * xs + len * j, n8)));
            _mm256_storeu_ps(acc + 16 * i, a);
        }
    }
#elif FGG_HAVE_SSE2
    for (int i = 0; i < r; i++) {  /* qf and x at 16-byte boundaries */
        __m128 a[2] = {_mm_loadu_ps(acc + 16 * i), _mm_loadu_ps(acc + 16 * i + 4)};
        for (int j = 0; j < n_sub; j++) {
            fgg_mm_f8 f[4];
            for (int c = 0; c < n8; c++) {
                f[c].v[0] = _mm_load_ps(qf + len * j + 8 * c);
                f[c].v[1] = _mm_load_ps(qf + len * j + 8 * c + 4);
            }
            fgg_mm_sse_sub(a, f, n8, x + i * xs + len * j, S[j]);
        }
        _mm_storeu_ps(acc + 16 * i, a[0]);
        _mm_storeu_ps(acc + 16 * i + 4, a[1]);
    }
#else
    for (int i = 0; i < r; i++)
        for (int j = 0; j < n_sub; j++) fgg_mm_sub_acc(qf + len * j, x + i * xs + len * j, n8, S[j], acc + 16 * i);
#endif
    fgg_mm_min_lanes(M, n_min, xsum, xss, r, acc);
}

/* Rows of x one call of fgg_mm_sb_group takes: 4 (fgg_mm_sb_rows), or with pairs 8 (up to 4 pairs
 * in registers, each broadcast of q met by all of them). */
#define FGG_MM_PAIRS_MAX 4
#define FGG_MM_GROUP_ROWS(pairs) ((pairs) ? 2 * FGG_MM_PAIRS_MAX : 4)

#if FGG_HAVE_AVX512
/* fgg_mm_sb_rows without the mins for NW (1 or 2) weight rows (row r's q at
 * qf + FGG_MM_QF_ROW * r, its scales at S + FGG_MM_S_ROW * r, its lanes at acc + as * r) and P (1 to
 * FGG_MM_PAIRS_MAX) pairs of rows of x from a panel of pairs (fgg_mm_pair_panel; pair p at
 * xp + p * ps), the last pair's second row missing with odd: rows 2p and 2p + 1 in the halves of
 * one 512-bit vector, each 8 values of q broadcast to both. Each row gets fgg_mm_sb_rows' operations in its order (the same bits); one
 * 512-bit multiply or add does two rows' (on CPUs with full-width AVX-512 units, twice the work
 * per instruction), x's pairs come in whole vectors, and with two weight rows each load of x
 * meets both (half the loads of x per multiply). */
FGG_MM_ALWAYS_INLINE void fgg_mm_sb_pairs(const float *qf, const float *S, int n_sub, int n8, const float *xp,
                                          ptrdiff_t ps, const int P, const int odd, const int NW, float *acc,
                                          ptrdiff_t as)
{
    const int len = 8 * n8;
    __m512 a[2][FGG_MM_PAIRS_MAX];
    for (int r = 0; r < NW; r++)
        for (int p = 0; p < P; p++) {
            const float *ar = acc + as * r + 32 * p;
            const __m256 second = odd && p == P - 1 ? _mm256_setzero_ps() : _mm256_loadu_ps(ar + 16);
            a[r][p] = _mm512_insertf32x8(_mm512_castps256_ps512(_mm256_loadu_ps(ar)), second, 1);
        }
    for (int j = 0; j < n_sub; j++) {
        __m512 t[2][FGG_MM_PAIRS_MAX];
        for (int c = 0; c < n8; c++) {
            __m512 q[2];
            for (int r = 0; r < NW; r++)
                q[r] = _mm512_broadcast_f32x8(_mm256_loadu_ps(qf + FGG_MM_QF_ROW * r + len * j + 8 * c));
            for (int p = 0; p < P; p++) {
                const __m512 xv = _mm512_loadu_ps(xp + p * ps + 2 * (len * j + 8 * c));
                for (int r = 0; r < NW; r++) {
                    const __m512 prod = _mm512_mul_ps(q[r], xv);
                    t[r][p] = c ? _mm512_add_ps(t[r][p], prod) : prod;
                }
            }
        }
        for (int r = 0; r < NW; r++) {
            const __m512 s = _mm512_set1_ps(S[FGG_MM_S_ROW * r + j]);
            for (int p = 0; p < P; p++) a[r][p] = _mm512_add_ps(a[r][p], _mm512_mul_ps(s, t[r][p]));
        }
    }
    for (int r = 0; r < NW; r++)
        for (int p = 0; p < P; p++) {
            float *ar = acc + as * r + 32 * p;
            _mm256_storeu_ps(ar, _mm512_castps512_ps256(a[r][p]));
            if (!(odd && p == P - 1)) _mm256_storeu_ps(ar + 16, _mm512_extractf32x8_ps(a[r][p], 1));
        }
}
#endif

/* Rows i..i + r (r <= FGG_MM_GROUP_ROWS(pairs)) of x from value v on against nw (1 to FGG_MM_SPAN_NW; 1 or 2 with pairs) unpacked
 * super-blocks (or 8 blocks) of consecutive weight rows (fgg_mm_sb_pairs' strides; row r's mins
 * at M + FGG_MM_S_ROW * r, lanes at acc + as * r): fgg_mm_sb_rows on x's rows as they are (row i at
 * x + i * xs), or with pairs (the avx512 build) fgg_mm_sb_pairs on a panel of pairs
 * (fgg_mm_pair_panel, xs floats from one pair to the next). */
FGG_MM_ALWAYS_INLINE void fgg_mm_sb_group(const float *qf, const float *S, const float *M, int n_min, int n_sub, int n8,
                                          const float *x, ptrdiff_t xs, int pairs, int i, ptrdiff_t v,
                                          const float *xsum, ptrdiff_t xss, int r, const int nw, float *acc, ptrdiff_t as)
{
#if FGG_HAVE_AVX512
    if (pairs) {
        const float *xp = x + (i / 2) * xs + 2 * v;
#define FGG_MM_SB_PAIRS(NW)                                                                           \
        switch (r) {  /* the pair count a constant in each call */                                    \
        case 8: fgg_mm_sb_pairs(qf, S, n_sub, n8, xp, xs, 4, 0, NW, acc, as); break;                  \
        case 7: fgg_mm_sb_pairs(qf, S, n_sub, n8, xp, xs, 4, 1, NW, acc, as); break;                  \
        case 6: fgg_mm_sb_pairs(qf, S, n_sub, n8, xp, xs, 3, 0, NW, acc, as); break;                  \
        case 5: fgg_mm_sb_pairs(qf, S, n_sub, n8, xp, xs, 3, 1, NW, acc, as); break;                  \
        case 4: fgg_mm_sb_pairs(qf, S, n_sub, n8, xp, xs, 2, 0, NW, acc, as); break;                  \
        case 3: fgg_mm_sb_pairs(qf, S, n_sub, n8, xp, xs, 2, 1, NW, acc, as); break;                  \
        case 2: fgg_mm_sb_pairs(qf, S, n_sub, n8, xp, xs, 1, 0, NW, acc, as); break;                  \
        default: fgg_mm_sb_pairs(qf, S, n_sub, n8, xp, xs, 1, 1, NW, acc, as); break;                 \
        }
        if (nw == 2) {
            FGG_MM_SB_PAIRS(2)
        } else {
            FGG_MM_SB_PAIRS(1)
        }
#undef FGG_MM_SB_PAIRS
        for (int w = 0; w < nw; w++) fgg_mm_min_lanes(M + FGG_MM_S_ROW * w, n_min, xsum, xss, r, acc + as * w);
        return;
    }
#endif
    (void)pairs;
    for (int w = 0; w < nw; w++)
        fgg_mm_sb_rows(qf + FGG_MM_QF_ROW * w, S + FGG_MM_S_ROW * w, M + FGG_MM_S_ROW * w, n_min, n_sub, n8,
                       x + i * xs + v, xs, xsum, xss, r, acc + as * w);
}

/* How many weight rows a tile of the exact path's driver takes at most (their lanes carried between
 * spans in L2; by bytes, the tiles for up to 8 rows of x take fewer): 128 in the SIMD builds, 64
 * in the portable build, where 128 measured 0.93-0.95x for Q4_K at 16 and 64 rows of x (Zen 4). */
#define FGG_MM_SPAN_W_ROWS (FGG_HAVE_AVX2 ? 128 : 64)

/* Whether this build's spans take x as a panel of pairs (pairs = 1; fgg_mm_sb_group). */
#define FGG_MM_HAVE_PAIRS FGG_HAVE_AVX512

/* Rows 0..m of x (row i at x + i * xs, values 0..width, width a multiple of 8) as a panel of pairs
 * for fgg_mm_sb_pairs: values 8k..8k + 8 of rows 2p and 2p + 1 side by side at
 * panel + 2 * width * p + 16 * k, a missing last row's as zeros. */
static inline void fgg_mm_pair_panel(const float *x, ptrdiff_t xs, int m, ptrdiff_t width, float *panel)
{
    for (int i = 0; i < m + (m & 1); i++) {
        float *dst = panel + 2 * width * (i / 2) + 8 * (i & 1);
        for (ptrdiff_t k = 0; k < width; k += 8) {
            if (i < m)
                memcpy(dst + 2 * k, x + i * xs + k, 8 * sizeof(float));
            else
                memset(dst + 2 * k, 0, 8 * sizeof(float));
        }
    }
}

/* A K-quant super-block unpacked for the factored path: its q as floats (qf), its scales S and,
 * for types with a min, its 8 or 16 mins M (else M is left alone). */
typedef void (*fgg_mm_qf_unpack)(const uint8_t *wb, float *qf, float *S, float *M);

/* Super-blocks b0..b1 of nw (1 to FGG_MM_SPAN_NW) K-quant weight rows (row r's super-block b at
 * w + row_bytes * r + sb_bytes * b) times m rows of x (row i at x + i * xs), through its unpacker:
 * n_sub sub-blocks of 256 / n_sub values per super-block; n_min (0, or n_sub: 8 or 16) mins, taken
 * against x's sums per sub-block (xsum + i * xss). Added into weight row r's acc + as * r (16
 * floats per row of x: 8 lanes, then 8 min lanes); qf: FGG_MM_QF_FLOATS floats. A row's products
 * are the same whatever spans its super-blocks are walked in, so a batch can be walked a few
 * super-blocks at a time for all of a tile's rows. With pairs, x is a panel of pairs
 * (fgg_mm_sb_group). Always inlined: each type's span then has its unpacker and sub-block counts
 * as constants (one shared copy called the unpacker through a pointer, and the pairs kernel ran
 * no faster for Q4_K and Q5_K). */
FGG_MM_ALWAYS_INLINE void fgg_mm_exact_k_span(const uint8_t *w, ptrdiff_t row_bytes, int nw, ptrdiff_t b0,
                                              ptrdiff_t b1, ptrdiff_t sb_bytes, fgg_mm_qf_unpack unpack, int n_sub,
                                              int n_min, const float *x, ptrdiff_t xs, const float *xsum, ptrdiff_t xss,
                                              int m, int pairs, float *qf, float *acc, ptrdiff_t as)
{
    float S[FGG_MM_SPAN_NW * FGG_MM_S_ROW], M[FGG_MM_SPAN_NW * FGG_MM_S_ROW];
    for (ptrdiff_t b = b0; b < b1; b++) {
        for (int r = 0; r < nw; r++)
            unpack(w + row_bytes * r + sb_bytes * b, qf + FGG_MM_QF_ROW * r, S + FGG_MM_S_ROW * r, M + FGG_MM_S_ROW * r);
        for (int i = 0, g = FGG_MM_GROUP_ROWS(pairs); i < m; i += g)
            fgg_mm_sb_group(qf, S, M, n_min, n_sub, 32 / n_sub, x, xs, pairs, i, 256 * b,
                            n_min ? xsum + i * xss + n_min * b : NULL, xss, m - i < g ? m - i : g, nw, acc + 16 * i, as);
    }
}

/* out[i * os] from a span's acc: the 8 lanes summed, less the 8 min lanes summed (all zero for
 * the types without mins: x - 0 is x). */
static inline void fgg_mm_exact_out(const float *acc, int m, float *out, ptrdiff_t os)
{
    for (int i = 0; i < m; i++) out[i * os] = fgg_mm_lanes8_sum(acc + 16 * i) - fgg_mm_lanes8_sum(acc + 16 * i + 8);
}

#if FGG_HAVE_AVX2
/* fgg_mm_lanes8_sum of the 8 floats at acc + 16 r for 8 rows r, row r's sum in lane r: the rows
 * transposed into lanes, then the same additions in the same order. */
FGG_MM_ALWAYS_INLINE __m256 fgg_mm_lanes8_sum_x8(const float *acc)
{
    __m256 v[8], t[8], L[8];
    for (int r = 0; r < 8; r++) v[r] = _mm256_loadu_ps(acc + 16 * r);
    for (int r = 0; r < 8; r += 2) {
        t[r] = _mm256_unpacklo_ps(v[r], v[r + 1]);
        t[r + 1] = _mm256_unpackhi_ps(v[r], v[r + 1]);
    }
    for (int q = 0; q < 8; q += 4)
        for (int h = 0; h < 2; h++) {  /* lanes 2h, 2h + 1 (and those 4 on) of rows q .. q + 3 */
            v[q + 2 * h] = _mm256_shuffle_ps(t[q + h], t[q + 2 + h], 0x44);
            v[q + 2 * h + 1] = _mm256_shuffle_ps(t[q + h], t[q + 2 + h], 0xee);
        }
    for (int j = 0; j < 4; j++) {  /* lane j: rows 0-3 from v[j], rows 4-7 from v[4 + j] */
        L[j] = _mm256_permute2f128_ps(v[j], v[4 + j], 0x20);
        L[j + 4] = _mm256_permute2f128_ps(v[j], v[4 + j], 0x31);
    }
    __m256 s4[4];
    for (int j = 0; j < 4; j++) s4[j] = _mm256_add_ps(L[j], L[j + 4]);
    return _mm256_add_ps(_mm256_add_ps(s4[0], s4[2]), _mm256_add_ps(s4[1], s4[3]));
}
#elif FGG_HAVE_SSE2
/* The same for 4 rows (row r's sum in lane r), on SSE2. */
FGG_MM_ALWAYS_INLINE __m128 fgg_mm_lanes8_sum_x4(const float *acc)
{
    __m128 L[8];
    for (int h = 0; h < 2; h++) {  /* lanes 4h .. 4h + 3 of the 4 rows */
        for (int r = 0; r < 4; r++) L[4 * h + r] = _mm_loadu_ps(acc + 16 * r + 4 * h);
        _MM_TRANSPOSE4_PS(L[4 * h], L[4 * h + 1], L[4 * h + 2], L[4 * h + 3]);
    }
    __m128 s4[4];
    for (int j = 0; j < 4; j++) s4[j] = _mm_add_ps(L[j], L[j + 4]);
    return _mm_add_ps(_mm_add_ps(s4[0], s4[2]), _mm_add_ps(s4[1], s4[3]));
}
#endif

/* fgg_mm_exact_out for one row of x and nw weight rows (row n's acc at acc + 16 n, its out at
 * out[n]): in the SIMD builds 8 (SSE2: 4) rows at a time, each in a lane (the same bits). Against
 * a scalar chain per row, one thread (Zen 2): 16384 x 256 Q4_K 0.448 -> 0.408 ms, Q6_K 0.510 ->
 * 0.466; 4096 x 1024 about 2 %. */
static inline void fgg_mm_exact_out_w(const float *acc, ptrdiff_t nw, float *out)
{
    ptrdiff_t n = 0;
#if FGG_HAVE_AVX2
    for (; n + 8 <= nw; n += 8)
        _mm256_storeu_ps(out + n, _mm256_sub_ps(fgg_mm_lanes8_sum_x8(acc + 16 * n), fgg_mm_lanes8_sum_x8(acc + 16 * n + 8)));
#elif FGG_HAVE_SSE2
    for (; n + 4 <= nw; n += 4)
        _mm_storeu_ps(out + n, _mm_sub_ps(fgg_mm_lanes8_sum_x4(acc + 16 * n), fgg_mm_lanes8_sum_x4(acc + 16 * n + 8)));
#endif
    for (; n < nw; n++) out[n] = fgg_mm_lanes8_sum(acc + 16 * n) - fgg_mm_lanes8_sum(acc + 16 * n + 8);
}

/* The register kernels below take up to 4 rows of x at a time, with the row count a constant
 * (each count its own unrolled copy): CALL(r) for rows i..i + r of m, i a multiple of 4. */
#define FGG_MM_BY_4_ROWS(m, CALL)                                                                     \
    for (int i = 0; i < (m); i += 4) {                                                                \
        switch ((m) - i) {                                                                            \
        case 1: CALL(1); break;                                                                       \
        case 2: CALL(2); break;                                                                       \
        case 3: CALL(3); break;                                                                       \
        default: CALL(4); break;                                                                      \
        }                                                                                             \
    }

static inline void fgg_mm_q4_k_unpack(const uint8_t *wb, float *qf, float *S, float *M)
{
    fgg_mm_q4_k_sm(wb, S, M);
    fgg_mm_q4_k_qf(wb, qf);
}

#if FGG_HAVE_AVX2
/* Bit `bit` (0..7) of each byte of q moved to bit `to` (2 or 4), the other bits undefined: 16-bit
 * shifts by at most `to` up, or down, keep each byte's own bits there. */
FGG_MM_ALWAYS_INLINE __m256i fgg_mm_bit_to_256(__m256i q, int bit, int to)
{
    return bit < to ? _mm256_slli_epi16(q, to - bit) : bit > to ? _mm256_srli_epi16(q, bit - to) : q;
}

/* The 256 5-bit codes of a Q5_K super-block at wb (fifth bits qh) stored as bytes at q8, in value
 * order: sub-block j's nibbles with bit j of qh moved to bit 4. */
FGG_MM_ALWAYS_INLINE void fgg_mm_q5_k_bytes(const uint8_t *wb, __m256i qh, int8_t *q8)
{
    const __m256i b4 = _mm256_set1_epi8(16), l4 = _mm256_set1_epi8(15);
    for (int g = 0; g < 4; g++) {
        const __m256i v = _mm256_loadu_si256((const __m256i *)(wb + 48 + 32 * g));
        const __m256i ul = _mm256_or_si256(_mm256_and_si256(v, l4), _mm256_and_si256(fgg_mm_bit_to_256(qh, 2 * g, 4), b4));
        const __m256i uh = _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(v, 4), l4),
                                           _mm256_and_si256(fgg_mm_bit_to_256(qh, 2 * g + 1, 4), b4));
        _mm256_store_si256((__m256i *)(q8 + 64 * g), ul);
        _mm256_store_si256((__m256i *)(q8 + 64 * g + 32), uh);
    }
}

/* Group g (sub-blocks 2g and 2g + 1) of a Q4_K super-block at wb (Q5_K with is_q5: its codes as
 * bytes at q8, fgg_mm_q5_k_bytes) with scales S times R rows of x from x0 (row i at x0 + i * xs),
 * into a[i]: fgg_mm_q45_k_regs' step. */
FGG_MM_ALWAYS_INLINE void fgg_mm_q45_k_group(const uint8_t *wb, int g, const int8_t *q8, const float *S, const float *x0,
                                             ptrdiff_t xs, const int R, __m256 *a, const int is_q5)
{
    const __m256i low = _mm256_set1_epi32(15);
    const uint8_t *qs = wb + 16 + 32 * g;
    __m256 lo[4], hi[4];
    if (is_q5) {
        /* widened from memory (fgg_mm_i8x32_load_f8x4). From registers (each 16 bytes copied to
         * both lanes and spread to 32-bit lanes by pshufb), one row of x by 4096 x 14336 took
         * 7.81 ms against 5.89, 2 rows 10.22 against 7.74, 4 rows 14.35 against 12.39 (Zen 2) */
        fgg_mm_i8x32_load_f8x4(q8 + 64 * g, lo);
        fgg_mm_i8x32_load_f8x4(q8 + 64 * g + 32, hi);
    } else {
        for (int c = 0; c < 4; c++) {
            __m256i e = _mm256_cvtepu8_epi32(_mm_loadl_epi64((const __m128i *)(qs + 8 * c)));
            lo[c] = _mm256_cvtepi32_ps(_mm256_and_si256(e, low));  /* sub-block 2g */
            hi[c] = _mm256_cvtepi32_ps(_mm256_srli_epi32(e, 4));   /* sub-block 2g + 1 */
        }
    }
    const __m256 s0 = _mm256_set1_ps(S[2 * g]), s1 = _mm256_set1_ps(S[2 * g + 1]);
    for (int i = 0; i < R; i++) {
        a[i] = _mm256_add_ps(a[i], _mm256_mul_ps(s0, fgg_mm_sub_t_f(lo, x0 + i * xs, 4)));
        a[i] = _mm256_add_ps(a[i], _mm256_mul_ps(s1, fgg_mm_sub_t_f(hi, x0 + i * xs + 32, 4)));
    }
}

/* Super-blocks b0..b1 of one Q4_K weight row (Q5_K with is_q5) times R <= 4 rows of x (row i at
 * x + i * xs, its sums per 32 at xsum + i * xss), added into acc + 16 * i: the q go straight from
 * the bytes into registers, converted once for the R rows, and each row gets fgg_mm_sb_rows'
 * operations in its order (the same bits). */
FGG_MM_ALWAYS_INLINE void fgg_mm_q45_k_regs(const uint8_t *w, ptrdiff_t b0, ptrdiff_t b1, const float *x, ptrdiff_t xs,
                                            const float *xsum, ptrdiff_t xss, const int R, float *acc, const int is_q5)
{
    const ptrdiff_t sb_bytes = is_q5 ? 176 : 144;
    float S[8], M[8];
    __m256 a[4];
    for (int i = 0; i < R; i++) a[i] = _mm256_loadu_ps(acc + 16 * i);
    for (ptrdiff_t b = b0; b < b1; b++) {
        const uint8_t *wb = w + sb_bytes * b;
        fgg_mm_prefetch_ahead(wb, sb_bytes);
        fgg_mm_q4_k_sm(wb, S, M);
        int8_t q8[256] __attribute__((aligned(32)));  /* Q5_K's codes as bytes; unused for Q4_K */
        if (is_q5) fgg_mm_q5_k_bytes(wb, _mm256_loadu_si256((const __m256i *)(wb + 16)), q8);
        const float *xb = x + 256 * b;
        if (R > 1) {
            for (int g = 0; g < 4; g++) fgg_mm_q45_k_group(wb, g, q8, S, xb + 64 * g, xs, R, a, is_q5);
        } else {
            /* one row: the groups' loop kept rolled. Unrolled, GCC converted the next groups'
             * values ahead of this group's products and spilled them (42 stack moves a Q4_K
             * super-block): one row of x by 4096 x 14336, Q4_K 5.38 -> 4.95 ms, Q5_K (its codes
             * stored) 8.42 -> 5.89 (Zen 2; level at 2-4 rows) */
#pragma GCC unroll 1
            for (int g = 0; g < 4; g++) fgg_mm_q45_k_group(wb, g, q8, S, xb + 64 * g, xs, 1, a, is_q5);
        }
        const __m256 mv = _mm256_loadu_ps(M);
        for (int i = 0; i < R; i++) {
            float *mins = acc + 16 * i + 8;
            _mm256_storeu_ps(mins, _mm256_add_ps(_mm256_loadu_ps(mins), _mm256_mul_ps(mv, _mm256_loadu_ps(xsum + i * xss + 8 * b))));
        }
    }
    for (int i = 0; i < R; i++) _mm256_storeu_ps(acc + 16 * i, a[i]);
}
#endif

/* The 256 q of a Q5_K super-block (176 bytes: f16 d, f16 dmin, 12 bytes of scales and mins as
 * Q4_K's, 32 bytes of fifth bits qh, 128 bytes of nibbles) as floats, in value order: value k of
 * sub-block j is its nibble | bit j of qh[k] << 4. */
static inline void fgg_mm_q5_k_qf(const uint8_t *wb, float *qf)
{
    const uint8_t *qh = wb + 16, *qs = wb + 48;
#if FGG_HAVE_AVX2
    const __m256i low = _mm256_set1_epi8(15), one = _mm256_set1_epi8(1);
    const __m256i h = _mm256_loadu_si256((const __m256i *)qh);
    for (int g = 0; g < 4; g++) {
        __m256i v = _mm256_loadu_si256((const __m256i *)(qs + 32 * g));
        __m256i h0 = _mm256_slli_epi16(_mm256_and_si256(_mm256_srli_epi16(h, 2 * g), one), 4);
        __m256i h1 = _mm256_slli_epi16(_mm256_and_si256(_mm256_srli_epi16(h, 2 * g + 1), one), 4);
        fgg_mm_i8x32_to_f(_mm256_or_si256(_mm256_and_si256(v, low), h0), qf + 64 * g);
        fgg_mm_i8x32_to_f(_mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(v, 4), low), h1), qf + 64 * g + 32);
    }
    return;
#endif
    for (int g = 0; g < 4; g++)
        for (int k = 0; k < 32; k++) {
            qf[64 * g + k] = (float)((qs[32 * g + k] & 15) | (((qh[k] >> (2 * g)) & 1) << 4));
            qf[64 * g + 32 + k] = (float)((qs[32 * g + k] >> 4) | (((qh[k] >> (2 * g + 1)) & 1) << 4));
        }
}

static inline void fgg_mm_q5_k_unpack(const uint8_t *wb, float *qf, float *S, float *M)
{
    fgg_mm_q4_k_sm(wb, S, M);
    fgg_mm_q5_k_qf(wb, qf);
}

static inline void fgg_mm_q6_k_unpack(const uint8_t *wb, float *qf, float *S, float *M)
{
    (void)M;
    fgg_mm_q6_k_qf(wb, qf, S);
}

#if FGG_HAVE_AVX2
/* Two sub-blocks of 16 values (f: 4 vectors of 8 floats; or fgg_mm_pair16's q: 32 signed bytes)
 * times R rows of x (row i at x + i * xs), into a[i] with their scales s[0], s[1]:
 * fgg_mm_sb_rows' steps for each row (t = q * x over 8 lanes, then a + S * t, one sub-block after
 * the other), the values converted once for the R rows. */
FGG_MM_ALWAYS_INLINE void fgg_mm_pair16_f(__m256 *a, const int R, const __m256 f[4], const float *x, ptrdiff_t xs,
                                          const float *s)
{
    const __m256 s0 = _mm256_set1_ps(s[0]), s1 = _mm256_set1_ps(s[1]);
    for (int i = 0; i < R; i++) {
        a[i] = _mm256_add_ps(a[i], _mm256_mul_ps(s0, fgg_mm_sub_t_f(f, x + i * xs, 2)));
        a[i] = _mm256_add_ps(a[i], _mm256_mul_ps(s1, fgg_mm_sub_t_f(f + 2, x + i * xs + 16, 2)));
    }
}

FGG_MM_ALWAYS_INLINE void fgg_mm_pair16(__m256 *a, const int R, __m256i q, const float *x, ptrdiff_t xs, const float *s)
{
    __m256 f[4];
    fgg_mm_i8x32_to_f8x4(q, f);
    fgg_mm_pair16_f(a, R, f, x, xs, s);
}

/* One run of 32 values (f) with its scales S (two per 16 values when per16) times R rows of x
 * from xj, into a[i]: fgg_mm_sb_rows' operations. */
FGG_MM_ALWAYS_INLINE void fgg_mm_run_rows(__m256 *a, const int R, const __m256 f[4], const float *xj, ptrdiff_t xs,
                                          const float *S, int per16)
{
    if (per16) {
        fgg_mm_pair16_f(a, R, f, xj, xs, S);
    } else {
        const __m256 s = _mm256_set1_ps(S[0]);
        for (int i = 0; i < R; i++) a[i] = _mm256_add_ps(a[i], _mm256_mul_ps(s, fgg_mm_sub_t_f(f, xj + i * xs, 4)));
    }
}

/* A super-block's 8 runs of 32 q, stored as bytes at q8 (fgg_mm_i8x32_load_f8x4), times R rows
 * of x from xb, into a[i]: run j's scales at S + 2j (per16), else at S + j. The loop kept rolled
 * (GCC spilled the unrolled one). */
FGG_MM_ALWAYS_INLINE void fgg_mm_stored_runs(__m256 *a, const int R, const int8_t *q8, const float *xb, ptrdiff_t xs,
                                             const float *S, int per16)
{
#pragma GCC unroll 1
    for (int j = 0; j < 8; j++) {
        __m256 f[4];
        fgg_mm_i8x32_load_f8x4(q8 + 32 * j, f);
        fgg_mm_run_rows(a, R, f, xb + 32 * j, xs, S + (per16 ? 2 * j : j), per16);
    }
}

/* Super-blocks b0..b1 of one Q6_K weight row times R <= 4 rows of x, added into acc + 16 * i, as
 * fgg_mm_q45_k_regs (16 sub-blocks, no min term). */
FGG_MM_ALWAYS_INLINE void fgg_mm_q6_k_regs(const uint8_t *w, ptrdiff_t b0, ptrdiff_t b1, const float *x, ptrdiff_t xs,
                                           const int R, float *acc)
{
    float S[16];
    __m256 a[4];
    for (int i = 0; i < R; i++) a[i] = _mm256_loadu_ps(acc + 16 * i);
    for (ptrdiff_t b = b0; b < b1; b++) {
        const uint8_t *wb = w + 210 * b;
        fgg_mm_prefetch_ahead(wb, 210);
        fgg_mm_q6_k_s(wb, S);
        /* the q made in bytes, all 256 stored, then widened from memory (fgg_mm_i8x32_load_f8x4).
         * One row of x by 4096 x 14336 (Zen 2): 7.40 -> 6.01 ms, 2 rows 9.80 -> 8.17, 4 rows
         * 16.91 -> 12.54 against widening from registers; stored and read back a half at a
         * time, one row 7.99 ms */
        int8_t q8[256] __attribute__((aligned(32)));
        for (int h = 0; h < 2; h++) {
            __m256i q[4];
            fgg_mm_q6_k_half(wb, h, q);
            for (int c = 0; c < 4; c++) _mm256_store_si256((__m256i *)(q8 + 128 * h + 32 * c), q[c]);
        }
        fgg_mm_stored_runs(a, R, q8, x + 256 * b, xs, S, 1);
    }
    for (int i = 0; i < R; i++) _mm256_storeu_ps(acc + 16 * i, a[i]);
}
#endif


/* S = d * (6-bit scale - 32) for the 16 sub-blocks of a Q3_K super-block. */
static inline void fgg_mm_q3_k_s(const uint8_t *wb, float S[16])
{
    const float d = fgg_half_to_float_scale(fgg_load_u16le(wb + 108));
#if FGG_HAVE_AVX2
    /* fgg_mm_q3_k_scales' bytes made in one vector. Left to the compiler, the avx512 build's
     * 4-row kernel built them with EVEX vpinsrb, and under Bochs' Ice Lake model it then gave
     * wrong outputs (tools/emulate_avx512.py; Bochs or the code, not known without the CPU). */
    uint32_t w4[4];
    fgg_mm_q3_k_scale_words(wb, w4);
    const __m128i words = _mm_setr_epi32((int)w4[0], (int)w4[1], (int)w4[2], (int)w4[3]);
    const __m128i v = _mm_sub_epi8(_mm_and_si128(words, _mm_set1_epi8(63)), _mm_set1_epi8(32));
    _mm256_storeu_ps(S, _mm256_mul_ps(_mm256_set1_ps(d), _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(v))));
    _mm256_storeu_ps(S + 8, _mm256_mul_ps(_mm256_set1_ps(d), _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(_mm_srli_si128(v, 8)))));
#elif FGG_HAVE_SSE2
    uint32_t w4[4];
    fgg_mm_q3_k_scale_words(wb, w4);
    const __m128i words = _mm_setr_epi32((int)w4[0], (int)w4[1], (int)w4[2], (int)w4[3]);
    fgg_mm_sse_scales(_mm_and_si128(words, _mm_set1_epi8(63)), 32.0f, d, 16, S);
#else
    int8_t sc[16];
    fgg_mm_q3_k_scales(wb, sc);
    for (int g = 0; g < 16; g++) S[g] = d * (float)sc[g];
#endif
}

/* The 256 q of a Q3_K super-block as floats, in value order: u - 4 with the integer path's u
 * (fgg_mm_q3_k_u), and S. */
static inline void fgg_mm_q3_k_unpack(const uint8_t *wb, float *qf, float *S, float *M)
{
    (void)M;
    fgg_mm_q3_k_s(wb, S);
    fgg_mm_ksb s;
    fgg_mm_ksb_crumbs(wb + 32, &s);
    for (int j = 0; j < 8; j++) {
        fgg_mm_w32 u = fgg_mm_q3_k_u(wb, s.u[j], j);
#if defined(FGG_MM_INT_SIMD)
        fgg_mm_i8x32_to_f(_mm256_sub_epi8(u, _mm256_set1_epi8(4)), qf + 32 * j);
#else
        for (int l = 0; l < 32; l++) qf[32 * j + l] = (float)(u.b[l] - 4);
#endif
    }
}

#if FGG_HAVE_AVX2
/* Super-blocks b0..b1 of one Q3_K weight row times R <= 4 rows of x, added into acc + 16 * i, as
 * fgg_mm_q6_k_regs. The q made in bytes, all 256 stored, then widened from memory
 * (fgg_mm_i8x32_load_f8x4): each byte's low 2 bits, or'ed with 0xfc (-4 as a signed byte) where
 * its bit of hmask is clear, so the same q as u - 4 of the integer path's u = low2 | hbit << 2.
 * One row of x by 4096 x 14336 (Zen 2): 8.16 -> 6.04 ms, 2 rows 12.56 -> 8.03, 4 rows 20.97 ->
 * 12.67 against the low bits widened from memory with the high bits' -4 added in floats from a
 * table (which had been 1.13x faster than bytes widened from registers). */
FGG_MM_ALWAYS_INLINE void fgg_mm_q3_k_regs(const uint8_t *w, ptrdiff_t b0, ptrdiff_t b1, const float *x, ptrdiff_t xs,
                                           const int R, float *acc)
{
    const __m256i three = _mm256_set1_epi8(3), less4 = _mm256_set1_epi8((char)0xfc);
    float S[16];
    __m256 a[4];
    for (int i = 0; i < R; i++) a[i] = _mm256_loadu_ps(acc + 16 * i);
    for (ptrdiff_t b = b0; b < b1; b++) {
        const uint8_t *wb = w + 110 * b;
        fgg_mm_prefetch_ahead(wb, 110);
        fgg_mm_q3_k_s(wb, S);
        const __m256i hm = _mm256_loadu_si256((const __m256i *)wb);
        int8_t q8[256] __attribute__((aligned(32)));
        for (int j = 0; j < 8; j++) {  /* values 32j .. 32j + 31: bits 2(j % 4) of code byte 32(j / 4) + l */
            const __m256i v = _mm256_loadu_si256((const __m256i *)(wb + 32 + 32 * (j >> 2)));
            const __m256i low2 = _mm256_and_si256(_mm256_srli_epi16(v, 2 * (j & 3)), three);
            const __m256i clear = _mm256_cmpeq_epi8(_mm256_and_si256(hm, _mm256_set1_epi8((char)(1 << j))), _mm256_setzero_si256());
            _mm256_store_si256((__m256i *)(q8 + 32 * j), _mm256_or_si256(low2, _mm256_and_si256(clear, less4)));
        }
        fgg_mm_stored_runs(a, R, q8, x + 256 * b, xs, S, 1);
    }
    for (int i = 0; i < R; i++) _mm256_storeu_ps(acc + 16 * i, a[i]);
}
#endif

/* Q2_K (84 bytes: 16 scale bytes, 64 bytes of 2-bit q, f16 d, f16 dmin; value of sub-block j of
 * 16: d * (sc[j] & 15) * q - dmin * (sc[j] >> 4)): S_j = d * (sc[j] & 15), M_j = dmin * (sc[j] >> 4),
 * the q as they are, 16 sub-blocks of 16 and 16 mins against x's sums per 16. */
static inline void fgg_mm_q2_k_sm(const uint8_t *wb, float S[16], float M[16])
{
    const float d = fgg_half_to_float_scale(fgg_load_u16le(wb + 80));
    const float dmin = fgg_half_to_float_scale(fgg_load_u16le(wb + 82));
#if FGG_HAVE_AVX2
    const __m128i sc = _mm_loadu_si128((const __m128i *)wb), m4 = _mm_set1_epi8(15);
    const __m128i lo = _mm_and_si128(sc, m4), hi = _mm_and_si128(_mm_srli_epi16(sc, 4), m4);
    const __m256 dv = _mm256_set1_ps(d), mv = _mm256_set1_ps(dmin);
    _mm256_storeu_ps(S, _mm256_mul_ps(dv, _mm256_cvtepi32_ps(_mm256_cvtepu8_epi32(lo))));
    _mm256_storeu_ps(S + 8, _mm256_mul_ps(dv, _mm256_cvtepi32_ps(_mm256_cvtepu8_epi32(_mm_srli_si128(lo, 8)))));
    _mm256_storeu_ps(M, _mm256_mul_ps(mv, _mm256_cvtepi32_ps(_mm256_cvtepu8_epi32(hi))));
    _mm256_storeu_ps(M + 8, _mm256_mul_ps(mv, _mm256_cvtepi32_ps(_mm256_cvtepu8_epi32(_mm_srli_si128(hi, 8)))));
#elif FGG_HAVE_SSE2
    const __m128i sc = _mm_loadu_si128((const __m128i *)wb), m4 = _mm_set1_epi8(15);
    fgg_mm_sse_scales(_mm_and_si128(sc, m4), 0.0f, d, 16, S);
    fgg_mm_sse_scales(_mm_and_si128(_mm_srli_epi16(sc, 4), m4), 0.0f, dmin, 16, M);
#else
    for (int j = 0; j < 16; j++) {
        S[j] = d * (float)(wb[j] & 15);
        M[j] = dmin * (float)(wb[j] >> 4);
    }
#endif
}

/* The 256 q of a Q2_K super-block as floats, in value order (value 128h + 32t + l is bits 2t, 2t + 1
 * of byte 32h + l of the codes), and S, M. */
static inline void fgg_mm_q2_k_unpack(const uint8_t *wb, float *qf, float *S, float *M)
{
    fgg_mm_q2_k_sm(wb, S, M);
    for (int h = 0; h < 2; h++)
        for (int t = 0; t < 4; t++)
            for (int l = 0; l < 32; l++) qf[128 * h + 32 * t + l] = (float)((wb[16 + 32 * h + l] >> (2 * t)) & 3);
}

#if FGG_HAVE_AVX2
/* Super-blocks b0..b1 of one Q2_K weight row times R <= 4 rows of x (row i's sums per 16 at
 * xsum + i * xss), added into acc + 16 * i, as fgg_mm_q6_k_regs, then the 16 mins. */
FGG_MM_ALWAYS_INLINE void fgg_mm_q2_k_regs(const uint8_t *w, ptrdiff_t b0, ptrdiff_t b1, const float *x, ptrdiff_t xs,
                                           const float *xsum, ptrdiff_t xss, const int R, float *acc)
{
    const __m256i three = _mm256_set1_epi8(3);
    float S[16], M[16];
    __m256 a[4];
    for (int i = 0; i < R; i++) a[i] = _mm256_loadu_ps(acc + 16 * i);
    for (ptrdiff_t b = b0; b < b1; b++) {
        const uint8_t *wb = w + 84 * b;
        fgg_mm_prefetch_ahead(wb, 84);
        fgg_mm_q2_k_sm(wb, S, M);
        /* the four 2-bit fields of the code bytes as bytes, all 256 stored, then widened from
         * memory (fgg_mm_i8x32_load_f8x4). One row (Zen 2) 6.02 -> 5.79 ms, 3 rows 11.97 ->
         * 10.00 against each 8 code bytes widened from memory once for their 4 fields and
         * shifted in 32-bit lanes (which had been 1.27x faster than bytes widened from registers) */
        int8_t q8[256] __attribute__((aligned(32)));
        for (int h = 0; h < 2; h++) {
            const __m256i v = _mm256_loadu_si256((const __m256i *)(wb + 16 + 32 * h));
            for (int t = 0; t < 4; t++)  /* value 128h + 32t + l: bits 2t, 2t + 1 of code byte 32h + l */
                _mm256_store_si256((__m256i *)(q8 + 128 * h + 32 * t), _mm256_and_si256(_mm256_srli_epi16(v, 2 * t), three));
        }
        fgg_mm_stored_runs(a, R, q8, x + 256 * b, xs, S, 1);
        const __m256 m0 = _mm256_loadu_ps(M), m1 = _mm256_loadu_ps(M + 8);
        for (int i = 0; i < R; i++) {
            float *mins = acc + 16 * i + 8;
            const float *xsb = xsum + i * xss + 16 * b;
            __m256 lanes = _mm256_add_ps(_mm256_loadu_ps(mins), _mm256_mul_ps(m0, _mm256_loadu_ps(xsb)));
            _mm256_storeu_ps(mins, _mm256_add_ps(lanes, _mm256_mul_ps(m1, _mm256_loadu_ps(xsb + 8))));
        }
    }
    for (int i = 0; i < R; i++) _mm256_storeu_ps(acc + 16 * i, a[i]);
}
#endif

/* IQ4_XS (136 bytes: f16 d, 16 high and 4 x 8 low bits of the runs' 6-bit scales ls_j, 128 bytes
 * of nibbles; value i of run j is d * (ls_j - 32) * iq4nl[q], q the low (i < 16) or high nibble of
 * qs[16j + i % 16]): S_j = d * (ls_j - 32) and the table's integers as the q, 8 sub-blocks of 32 and
 * no mins. */
static inline void fgg_mm_iq4_xs_s(const uint8_t *wb, float S[8])
{
    const float d = fgg_half_to_float_scale(fgg_load_u16le(wb));
#if FGG_HAVE_SSE2
    /* the 6-bit scales u = low nibble j of scales_l | bits 2j, 2j + 1 of scales_h << 4 in bytes
     * (scales_h's fields moved to the top of 16-bit lanes by multiplies, then down) */
    const __m128i ls = _mm_cvtsi32_si128((int)fgg_load_u32le(wb + 4)), m4 = _mm_set1_epi8(15);
    const __m128i nib = _mm_unpacklo_epi8(_mm_and_si128(ls, m4), _mm_and_si128(_mm_srli_epi16(ls, 4), m4));
    const __m128i hs = _mm_srli_epi16(_mm_mullo_epi16(_mm_set1_epi16((short)fgg_load_u16le(wb + 2)),
                                                      _mm_setr_epi16(1 << 14, 1 << 12, 1 << 10, 1 << 8, 1 << 6, 1 << 4, 1 << 2, 1)), 14);
    const __m128i u = _mm_or_si128(nib, _mm_slli_epi16(_mm_packus_epi16(hs, hs), 4));
#if FGG_HAVE_AVX2
    _mm256_storeu_ps(S, _mm256_mul_ps(_mm256_set1_ps(d), _mm256_cvtepi32_ps(_mm256_sub_epi32(_mm256_cvtepu8_epi32(u), _mm256_set1_epi32(32)))));
#else
    fgg_mm_sse_scales(u, 32.0f, d, 8, S);
#endif
#else
    for (int j = 0; j < 8; j++) S[j] = d * (float)fgg_mm_iq4_xs_scale(wb, j);
#endif
}

static inline void fgg_mm_iq4_xs_unpack(const uint8_t *wb, float *qf, float *S, float *M)
{
    (void)M;
    fgg_mm_iq4_xs_s(wb, S);
    for (int j = 0; j < 8; j++)
        for (int i = 0; i < 16; i++) {
            qf[32 * j + i] = (float)fgg_iq4nl_values[wb[8 + 16 * j + i] & 15];
            qf[32 * j + 16 + i] = (float)fgg_iq4nl_values[wb[8 + 16 * j + i] >> 4];
        }
}

/* IQ4_NL's and MXFP4's table values as floats for each code byte: those of its low and its high
 * nibble (the portable build's kernels of IQ4_XS, IQ4_NL and MXFP4: SSE2 has no pshufb). Filled
 * once, before any kernel runs (fgg_mm_init_tables, from the kernels' table set-up with the GIL
 * held). */
typedef float fgg_mm_pairs[256][2];
static fgg_mm_pairs fgg_mm_iq4nl_pairs, fgg_mm_fp4_pairs;

#if !defined(FGG_MM_INT_SIMD) && FGG_HAVE_SSE2
/* The portable build's IQ1 grid rows times 8 (fgg_mm_sse_iq1_run_f; fgg_mm_init_tables). */
static float fgg_mm_iq1_grid8[2048][8];
#endif

#if FGG_HAVE_AVX2
/* The fifth bits of Q5_1's (row 0) and Q5_0's (row 1) 8 values whose bits are byte b of qh, as
 * their share of the codes: 16 where bit l of b is set, else 0; Q5_0's less its 16
 * (fgg_mm_b32_regs; fgg_mm_init_tables). */
static int8_t fgg_mm_q5_fifths[2][256][8];
#endif

#if FGG_MM_SSE2_K_BUILD
/* A byte's 8 bits as 8 int16 masks, -1 where the bit is set: the grid types' signs
 * (fgg_mm_sse_ksb_totals), Q1_0's values (fgg_mm_sse_b_row); fgg_mm_init_tables. */
static int16_t fgg_mm_sign16[256][8] __attribute__((aligned(16)));
#endif

#if FGG_HAVE_SSE2
/* Q1_0's signs of a byte's 8 values for fgg_mm_q1_0_regs: lane l's sign bit set where bit l is
 * clear (fgg_mm_init_tables). One load per 8 values; made from the bits by vpsllvd and a mask
 * instead, the avx2 build's one row took 1.4x the time (Zen 2). */
static uint32_t fgg_mm_q1_0_signs[256][8];
#endif

static inline void fgg_mm_init_tables(void)
{
    for (int b = 0; b < 256; b++) {
        fgg_mm_iq4nl_pairs[b][0] = (float)fgg_iq4nl_values[b & 15];
        fgg_mm_iq4nl_pairs[b][1] = (float)fgg_iq4nl_values[b >> 4];
        fgg_mm_fp4_pairs[b][0] = (float)fgg_fp4_values[b & 15];
        fgg_mm_fp4_pairs[b][1] = (float)fgg_fp4_values[b >> 4];
        fgg_mm_iq4nl_words[b] = (uint16_t)((uint8_t)fgg_iq4nl_values[b & 15] | (uint8_t)fgg_iq4nl_values[b >> 4] << 8);
        fgg_mm_fp4_words[b] = (uint16_t)((uint8_t)fgg_fp4_values[b & 15] | (uint8_t)fgg_fp4_values[b >> 4] << 8);
    }
#if !defined(FGG_MM_INT_SIMD) && FGG_HAVE_SSE2
    for (int i = 0; i < 2048; i++)
        for (int k = 0; k < 8; k++) fgg_mm_iq1_grid8[i][k] = (float)(8 * fgg_iq1s_grid[i][k]);
#endif
#if FGG_HAVE_SSE2
    for (int b = 0; b < 256; b++)
        for (int l = 0; l < 8; l++) fgg_mm_q1_0_signs[b][l] = (b >> l) & 1 ? 0u : 0x80000000u;
#endif
#if FGG_MM_SSE2_K_BUILD
    for (int b = 0; b < 256; b++)
        for (int l = 0; l < 8; l++) fgg_mm_sign16[b][l] = (int16_t)((b >> l) & 1 ? -1 : 0);
#endif
#if FGG_HAVE_AVX2
    for (int b = 0; b < 256; b++)
        for (int l = 0; l < 8; l++) {
            fgg_mm_q5_fifths[0][b][l] = (int8_t)(16 * ((b >> l) & 1));
            fgg_mm_q5_fifths[1][b][l] = (int8_t)(16 * ((b >> l) & 1) - 16);
        }
#endif
#if defined(FGG_MM_INT_SIMD)
    for (int c = 0; c < 128; c++) {
        uint64_t pattern = 0;
        for (int i = 0; i < 8; i++) pattern |= (uint64_t)((fgg_ksigns[c] >> i) & 1 ? 0xff : 0x01) << (8 * i);
        fgg_mm_sign_pm1[c] = pattern;
    }
    for (int i = 0; i < 4096; i++) {
        uint64_t row = 0;
        for (int k = 0; k < 8; k++)
            row |= (uint64_t)(uint8_t)(int8_t)(8 * fgg_iq1s_grid[i & 2047][k] + (i & 2048 ? -1 : 1)) << (8 * k);
        fgg_mm_iq1_m_values[i] = row;
    }
#endif
}

#if FGG_HAVE_AVX2
/* Super-blocks b0..b1 of one IQ4_XS weight row times R <= 4 rows of x, added into acc + 16 * i:
 * each run's values from its 16 bytes by one pshufb per half, converted once for the R rows, and
 * fgg_mm_sb_rows' operations per row (the same bits as fgg_mm_iq4_xs_unpack's path). */
FGG_MM_ALWAYS_INLINE void fgg_mm_iq4_xs_regs(const uint8_t *w, ptrdiff_t b0, ptrdiff_t b1, const float *x, ptrdiff_t xs,
                                             const int R, float *acc)
{
    const __m128i table = _mm_loadu_si128((const __m128i *)fgg_iq4nl_values);
    float S[8];
    __m256 a[4];
    for (int i = 0; i < R; i++) a[i] = _mm256_loadu_ps(acc + 16 * i);
    for (ptrdiff_t b = b0; b < b1; b++) {
        const uint8_t *wb = w + 136 * b;
        fgg_mm_prefetch_ahead(wb, 136);
        fgg_mm_iq4_xs_s(wb, S);
        int8_t q8[256] __attribute__((aligned(32)));
        for (int j = 0; j < 8; j++) {
            __m128i lo, hi;
            fgg_mm_lut16_halves(table, wb + 8 + 16 * j, &lo, &hi);
            _mm_store_si128((__m128i *)(q8 + 32 * j), lo);
            _mm_store_si128((__m128i *)(q8 + 32 * j + 16), hi);
        }
        fgg_mm_stored_runs(a, R, q8, x + 256 * b, xs, S, 0);
    }
    for (int i = 0; i < R; i++) _mm256_storeu_ps(acc + 16 * i, a[i]);
}
#endif

/* The integer path's per-32 kinds of one run per block (FGG_MM_B_*: Q8_0, Q4_0, Q5_0, IQ4_NL, MXFP4,
 * Q4_1, Q5_1): each block a sub-block of 32 with S = its scale, q its 32 signed values as the
 * integer path unpacks them (fgg_mm_b_values: Q4_0's nibbles less 8, IQ4_NL's table values, ...)
 * and, for Q4_1 and Q5_1 (value d * q + m), the min M = -m against x's sum over the block, in min
 * lane b % 8 (spans start at a multiple of 8 blocks: _mm_exact_rows). Taken 8 blocks (256 values)
 * at a time (fewer at the end of a row). */
static inline void fgg_mm_b32_qf(int kind, const uint8_t *w, int n, float *qf, float *S, float *M)
{
    const ptrdiff_t bytes = fgg_mm_b_bytes(kind);
    for (int k = 0; k < n; k++) {
        const uint8_t *blk = w + bytes * k;
        S[k] = fgg_mm_b_scale(kind, blk);
        M[k] = -fgg_mm_b_offset(kind, blk);
        const fgg_mm_w32 v = fgg_mm_b_values(kind, blk, 0);
#if defined(FGG_MM_INT_SIMD)
        fgg_mm_i8x32_to_f(v, qf + 32 * k);
#else
        for (int l = 0; l < 32; l++) qf[32 * k + l] = (float)v.b[l];
#endif
    }
}

/* Min lanes of one row (mins: acc + 16 * i + 8) for blocks b..b + n of a span, b a multiple of 8. */
static inline void fgg_mm_b32_min_lanes(const float *M, int n, const float *xsum, float *mins)
{
    for (int k = 0; k < n; k++) mins[k] = mins[k] + M[k] * xsum[k];
}

/* Blocks b0..b1 (b0 a multiple of 8) of nw (1 to FGG_MM_SPAN_NW) weight rows of a per-32 kind (row_bytes
 * apart) times m rows of x, added into acc + as * r (16 floats per row of x), 8 blocks at a time as
 * fgg_mm_exact_k_span does super-blocks. */
FGG_MM_ALWAYS_INLINE void fgg_mm_exact_b32_span(int kind, const uint8_t *w, ptrdiff_t row_bytes, int nw, ptrdiff_t b0,
                                                ptrdiff_t b1, const float *x, ptrdiff_t xs, const float *xsum,
                                                ptrdiff_t xss, int m, int pairs, float *qf, float *acc, ptrdiff_t as)
{
    float S[FGG_MM_SPAN_NW * FGG_MM_S_ROW], M[FGG_MM_SPAN_NW * FGG_MM_S_ROW];
    for (ptrdiff_t b = b0; b < b1; b += 8) {
        int n = b1 - b < 8 ? (int)(b1 - b) : 8;
        for (int r = 0; r < nw; r++)
            fgg_mm_b32_qf(kind, w + row_bytes * r + fgg_mm_b_bytes(kind) * b, n, qf + FGG_MM_QF_ROW * r,
                          S + FGG_MM_S_ROW * r, M + FGG_MM_S_ROW * r);
        for (int i = 0, g = FGG_MM_GROUP_ROWS(pairs); i < m; i += g)
            fgg_mm_sb_group(qf, S, M, 0, n, 4, x, xs, pairs, i, 32 * b, NULL, 0, m - i < g ? m - i : g, nw, acc + 16 * i, as);
        if (fgg_mm_b_has_offset(kind))
            for (int r = 0; r < nw; r++)
                for (int i = 0; i < m; i++)
                    fgg_mm_b32_min_lanes(M + FGG_MM_S_ROW * r, n, xsum + i * xss + b, acc + as * r + 16 * i + 8);
    }
}

#if FGG_HAVE_AVX2
/* fgg_mm_b_scale in 8 lanes; an f16 scale broadcast as f16 and then converted (one instruction
 * fewer than converting it first; the same float). */
FGG_MM_ALWAYS_INLINE __m256 fgg_mm_b_scale8(int kind, const uint8_t *wb)
{
    if (kind == FGG_MM_B_MXFP4) return _mm256_set1_ps(fgg_mm_b_scale(kind, wb));
    return _mm256_cvtph_ps(_mm_set1_epi16((short)fgg_load_u16le(wb)));
}

/* Blocks b0..b1 of one weight row of a per-32 kind times R <= 4 rows of x, added into
 * acc + 16 * i: the q straight from the bytes into registers (Q4_0's and Q4_1's bytes widened
 * before the nibbles are split; the others as the integer path unpacks them), the same operations
 * as fgg_mm_exact_b32_span. */
FGG_MM_ALWAYS_INLINE void fgg_mm_b32_regs(int kind, const uint8_t *w, ptrdiff_t b0, ptrdiff_t b1, const float *x,
                                          ptrdiff_t xs, const float *xsum, ptrdiff_t xss, const int R, float *acc)
{
    const ptrdiff_t bytes = fgg_mm_b_bytes(kind);
    const int stored = kind == FGG_MM_B_IQ4_NL || kind == FGG_MM_B_MXFP4;
    __m256 a[4];
    for (int i = 0; i < R; i++) a[i] = _mm256_loadu_ps(acc + 16 * i);
    for (ptrdiff_t b8 = b0; b8 < b1; b8 += 8) {  /* b0 is a multiple of 8 */
        const int n = b1 - b8 < 8 ? (int)(b1 - b8) : 8;
        const uint8_t *w8 = w + bytes * b8;
        int8_t q8[256] __attribute__((aligned(32)));
        if (stored)
            /* IQ4_NL's and MXFP4's values by one pshufb per 16 codes, the 8 blocks' values stored,
             * then widened from memory (fgg_mm_i8x32_load_f8x4): widened from registers, one row
             * took 1.17-1.21x the time (Zen 2) */
            for (int k = 0; k < n; k++) {
                __m128i lo, hi;
                fgg_mm_lut16_halves(_mm_loadu_si128((const __m128i *)(kind == FGG_MM_B_IQ4_NL ? fgg_iq4nl_values : fgg_fp4_values)),
                                    w8 + bytes * k + fgg_mm_b_codes_at(kind), &lo, &hi);
                _mm_store_si128((__m128i *)(q8 + 32 * k), lo);
                _mm_store_si128((__m128i *)(q8 + 32 * k + 16), hi);
            }
        for (int k = 0; k < n; k++) {
            const uint8_t *blk = w8 + bytes * k;
            fgg_mm_prefetch_ahead(blk, bytes);
            __m256 f[4];
            if (stored) {
                fgg_mm_i8x32_load_f8x4(q8 + 32 * k, f);
            } else if (kind == FGG_MM_B_Q8_0) {
                fgg_mm_i8x32_load_f8x4((const int8_t *)(blk + 2), f);
            } else {
                /* 8 code bytes widened to int32 straight from memory: their low nibbles by a mask,
                 * their high nibbles by a shift (no mask: a byte's high nibble is all that is left),
                 * then Q4_0's 8 taken off in int32 (fewer operations than widening the nibbles).
                 * Q5_0's and Q5_1's fifth bits, one byte of qh per 8 values, as 8 bytes from a
                 * table (Q5_0's 16 taken off there), widened from memory too: made in bytes and
                 * widened from registers, one row took 1.44-1.51x the time; made in bytes, stored
                 * and widened from memory, level (Zen 2) */
                const uint8_t *codes = blk + fgg_mm_b_codes_at(kind);
                const __m256i e0 = _mm256_cvtepu8_epi32(_mm_loadl_epi64((const __m128i *)codes));
                const __m256i e1 = _mm256_cvtepu8_epi32(_mm_loadl_epi64((const __m128i *)(codes + 8)));
                const __m256i m4 = _mm256_set1_epi32(15);
                const __m256i q[4] = {_mm256_and_si256(e0, m4), _mm256_and_si256(e1, m4), _mm256_srli_epi32(e0, 4),
                                      _mm256_srli_epi32(e1, 4)};
                if (kind == FGG_MM_B_Q5_0 || kind == FGG_MM_B_Q5_1) {
                    const uint8_t *qh = blk + fgg_mm_b_fifths_at(kind);
                    const int8_t(*fifths)[8] = fgg_mm_q5_fifths[kind == FGG_MM_B_Q5_0];
                    for (int c = 0; c < 4; c++)
                        f[c] = _mm256_cvtepi32_ps(_mm256_add_epi32(q[c], _mm256_cvtepi8_epi32(_mm_loadl_epi64((const __m128i *)fifths[qh[c]]))));
                } else {
                    const __m256i c8 = _mm256_set1_epi32(fgg_mm_b_code_offset(kind));
                    for (int c = 0; c < 4; c++) f[c] = _mm256_cvtepi32_ps(kind == FGG_MM_B_Q4_0 ? _mm256_sub_epi32(q[c], c8) : q[c]);
                }
            }
            const __m256 d = fgg_mm_b_scale8(kind, blk);
            for (int i = 0; i < R; i++) a[i] = _mm256_add_ps(a[i], _mm256_mul_ps(d, fgg_mm_sub_t_f(f, x + i * xs + 32 * (b8 + k), 4)));
        }
        if (fgg_mm_b_has_offset(kind)) {
            if (n == 8) {
                /* the 8 blocks' mins in their 8 lanes at once: each lane's multiply and add as
                 * fgg_mm_b32_min_lanes' */
                uint16_t m16[8];
                for (int k = 0; k < 8; k++) m16[k] = fgg_load_u16le(w8 + bytes * k + 2);
                const __m256 mn = _mm256_xor_ps(_mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)m16)),
                                                _mm256_set1_ps(-0.0f));  /* -m, -0 for 0 */
                for (int i = 0; i < R; i++) {
                    float *mins = acc + 16 * i + 8;
                    _mm256_storeu_ps(mins, _mm256_add_ps(_mm256_loadu_ps(mins), _mm256_mul_ps(mn, _mm256_loadu_ps(xsum + i * xss + b8))));
                }
            } else {
                for (int k = 0; k < n; k++) {
                    const float mn = -fgg_mm_b_offset(kind, w8 + bytes * k);
                    for (int i = 0; i < R; i++) fgg_mm_b32_min_lanes(&mn, 1, xsum + i * xss + b8 + k, acc + 16 * i + 8 + k);
                }
            }
        }
    }
    for (int i = 0; i < R; i++) _mm256_storeu_ps(acc + 16 * i, a[i]);
}
#endif

#if FGG_HAVE_AVX2
/* One row of x times NW <= 4 Q8_0 weight rows (row r at w + r * row_bytes, its lanes at
 * acc + r * acc_stride): fgg_mm_b32_regs's operations for each, the rows' chains of adds side by
 * side (one row's chain, an add per block, waits on the add before it) and x loaded once. Q4_0
 * ran slower so (its unpacking needs the registers): it keeps fgg_mm_b32_regs. */
FGG_MM_ALWAYS_INLINE void fgg_mm_q8_0_w_regs(const uint8_t *w, ptrdiff_t row_bytes, const int NW, ptrdiff_t b0,
                                             ptrdiff_t b1, const float *x, float *acc, ptrdiff_t acc_stride)
{
    __m256 a[4];
    for (int r = 0; r < NW; r++) a[r] = _mm256_loadu_ps(acc + r * acc_stride);
    for (ptrdiff_t b = b0; b < b1; b++) {
        const float *xb = x + 32 * b;
        __m256 xv[4];
        for (int c = 0; c < 4; c++) xv[c] = _mm256_loadu_ps(xb + 8 * c);
        for (int r = 0; r < NW; r++) {
            const uint8_t *blk = w + r * row_bytes + 34 * b;
            fgg_mm_prefetch_ahead(blk, 34);
            const __m256 d = _mm256_set1_ps(fgg_half_to_float_scale(fgg_load_u16le(blk)));
            __m256 t = _mm256_mul_ps(_mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(_mm_loadl_epi64((const __m128i *)(blk + 2)))), xv[0]);
            for (int c = 1; c < 4; c++) {
                const __m256i e = _mm256_cvtepi8_epi32(_mm_loadl_epi64((const __m128i *)(blk + 2 + 8 * c)));
                t = _mm256_add_ps(t, _mm256_mul_ps(_mm256_cvtepi32_ps(e), xv[c]));
            }
            a[r] = _mm256_add_ps(a[r], _mm256_mul_ps(d, t));
        }
    }
    for (int r = 0; r < NW; r++) _mm256_storeu_ps(acc + r * acc_stride, a[r]);
}

#if FGG_HAVE_AVX512
/* fgg_mm_q8_0_w_regs for NP (1 or 2) pairs of weight rows on 512-bit vectors: rows 2p and 2p + 1
 * in the halves of one vector, x's 8 values broadcast to both; each row's operations in its order. */
FGG_MM_ALWAYS_INLINE void fgg_mm_q8_0_w_pairs512(const uint8_t *w, ptrdiff_t row_bytes, const int NP, ptrdiff_t b0,
                                                 ptrdiff_t b1, const float *x, float *acc, ptrdiff_t acc_stride)
{
    __m512 a[2];
    for (int p = 0; p < NP; p++)
        a[p] = _mm512_insertf32x8(_mm512_castps256_ps512(_mm256_loadu_ps(acc + 2 * p * acc_stride)),
                                  _mm256_loadu_ps(acc + (2 * p + 1) * acc_stride), 1);
    for (ptrdiff_t b = b0; b < b1; b++) {
        const float *xb = x + 32 * b;
        __m512 xv[4];
        for (int c = 0; c < 4; c++) xv[c] = _mm512_broadcast_f32x8(_mm256_loadu_ps(xb + 8 * c));
        for (int p = 0; p < NP; p++) {
            const uint8_t *blk0 = w + 2 * p * row_bytes + 34 * b, *blk1 = blk0 + row_bytes;
            fgg_mm_prefetch_ahead(blk0, 34);
            fgg_mm_prefetch_ahead(blk1, 34);
            const __m512 d = _mm512_insertf32x8(_mm512_set1_ps(fgg_half_to_float_scale(fgg_load_u16le(blk0))),
                                                _mm256_set1_ps(fgg_half_to_float_scale(fgg_load_u16le(blk1))), 1);
            __m512 t = _mm512_setzero_ps();
            for (int c = 0; c < 4; c++) {
                const __m128i q = _mm_unpacklo_epi64(_mm_loadl_epi64((const __m128i *)(blk0 + 2 + 8 * c)),
                                                     _mm_loadl_epi64((const __m128i *)(blk1 + 2 + 8 * c)));
                const __m512 prod = _mm512_mul_ps(_mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(q)), xv[c]);
                t = c ? _mm512_add_ps(t, prod) : prod;
            }
            a[p] = _mm512_add_ps(a[p], _mm512_mul_ps(d, t));
        }
    }
    for (int p = 0; p < NP; p++) {
        _mm256_storeu_ps(acc + 2 * p * acc_stride, _mm512_castps512_ps256(a[p]));
        _mm256_storeu_ps(acc + (2 * p + 1) * acc_stride, _mm512_extractf32x8_ps(a[p], 1));
    }
}
#endif

/* Blocks b0..b1 of nw (1 to 4) Q8_0 weight rows times one row of x (fgg_mm_q8_0_w_regs; in the
 * avx512 build its pairs of rows by fgg_mm_q8_0_w_pairs512); xsum unused (Q8_0 has no offset). */
static inline void fgg_mm_span1_q8_0(const uint8_t *w, ptrdiff_t row_bytes, int nw, ptrdiff_t b0, ptrdiff_t b1,
                                     const float *x, const float *xsum, float *acc, ptrdiff_t acc_stride)
{
    (void)xsum;
#if FGG_HAVE_AVX512
    if (nw >= 2) {  /* the pair count a constant in each call */
        if (nw == 4)
            fgg_mm_q8_0_w_pairs512(w, row_bytes, 2, b0, b1, x, acc, acc_stride);
        else
            fgg_mm_q8_0_w_pairs512(w, row_bytes, 1, b0, b1, x, acc, acc_stride);
        if (nw == 3) fgg_mm_q8_0_w_regs(w + 2 * row_bytes, row_bytes, 1, b0, b1, x, acc + 2 * acc_stride, acc_stride);
        return;
    }
#endif
    switch (nw) {
    case 4: fgg_mm_q8_0_w_regs(w, row_bytes, 4, b0, b1, x, acc, acc_stride); break;
    case 3: fgg_mm_q8_0_w_regs(w, row_bytes, 3, b0, b1, x, acc, acc_stride); break;
    case 2: fgg_mm_q8_0_w_regs(w, row_bytes, 2, b0, b1, x, acc, acc_stride); break;
    default: fgg_mm_q8_0_w_regs(w, row_bytes, 1, b0, b1, x, acc, acc_stride); break;
    }
}
#define FGG_MM_HAVE_SPAN1 1
#else
#define FGG_MM_HAVE_SPAN1 0
#endif

#if FGG_HAVE_AVX512
/* The exact path's pair kernels walk two weight rows side by side, a whole span of one pair and
 * then of the next (fgg_mm_span1_pairs, fgg_mm_span1_b32: 4 rows a call), so a block is prefetched
 * at the same place in the rows this many rows on: a fixed distance ahead of each row
 * (fgg_mm_prefetch_ahead) would run into the rows being read. */
#define FGG_MM_PAIR_PREFETCH_ROWS 4

/* One row of x times two Q4_K weight rows w0, w1 (super-blocks b0..b1) on 512-bit vectors: row
 * w0's 8 lanes in the low half, w1's in the high half, x's 8 values broadcast to both. Each row
 * gets fgg_mm_q45_k_regs' operations in its order (t = q * x over 8 lanes, a + S * t per
 * sub-block, the mins' lanes + M * xsum per super-block), so the same bits; a 512-bit multiply
 * or add does both rows' (on CPUs with full-width AVX-512 units, twice the work per instruction). */
FGG_MM_ALWAYS_INLINE void fgg_mm_q45_k_pair512(const uint8_t *w0, const uint8_t *w1, ptrdiff_t b0, ptrdiff_t b1,
                                               const float *x, const float *xsum, float *acc0, float *acc1, const int is_q5)
{
    const ptrdiff_t sb_bytes = is_q5 ? 176 : 144;
    __m512 a = _mm512_insertf32x8(_mm512_castps256_ps512(_mm256_loadu_ps(acc0)), _mm256_loadu_ps(acc1), 1);
    __m512 am = _mm512_insertf32x8(_mm512_castps256_ps512(_mm256_loadu_ps(acc0 + 8)), _mm256_loadu_ps(acc1 + 8), 1);
    const __m512i low = _mm512_set1_epi32(15);
    const __m512i half = _mm512_set_epi32(8, 8, 8, 8, 8, 8, 8, 8, 0, 0, 0, 0, 0, 0, 0, 0);  /* w1's scales from 8 on */
    for (ptrdiff_t b = b0; b < b1; b++) {
        const uint8_t *wb0 = w0 + sb_bytes * b, *wb1 = w1 + sb_bytes * b;
        fgg_mm_prefetch(wb0 + FGG_MM_PAIR_PREFETCH_ROWS * (w1 - w0), sb_bytes);
        fgg_mm_prefetch(wb1 + FGG_MM_PAIR_PREFETCH_ROWS * (w1 - w0), sb_bytes);
        /* fgg_mm_q4_k_sm for both rows in one vector each: S = d * scale, M = dmin * min (w0's 8
         * sub-blocks, then w1's), the same products */
        uint32_t k0[4], k1[4];
        fgg_mm_k4_scales(wb0 + 4, k0);
        fgg_mm_k4_scales(wb1 + 4, k1);
        const __m512i sc = _mm512_cvtepu8_epi32(_mm_setr_epi32((int)k0[0], (int)k0[1], (int)k1[0], (int)k1[1]));
        const __m512i mn = _mm512_cvtepu8_epi32(_mm_setr_epi32((int)k0[2], (int)k0[3], (int)k1[2], (int)k1[3]));
        const __m512 d = _mm512_insertf32x8(_mm512_set1_ps(fgg_half_to_float_scale(fgg_load_u16le(wb0))),
                                            _mm256_set1_ps(fgg_half_to_float_scale(fgg_load_u16le(wb1))), 1);
        const __m512 dmin = _mm512_insertf32x8(_mm512_set1_ps(fgg_half_to_float_scale(fgg_load_u16le(wb0 + 2))),
                                               _mm256_set1_ps(fgg_half_to_float_scale(fgg_load_u16le(wb1 + 2))), 1);
        const __m512 sv = _mm512_mul_ps(d, _mm512_cvtepi32_ps(sc)), mv = _mm512_mul_ps(dmin, _mm512_cvtepi32_ps(mn));
        const __m256i qh0 = is_q5 ? _mm256_loadu_si256((const __m256i *)(wb0 + 16)) : _mm256_setzero_si256();
        const __m256i qh1 = is_q5 ? _mm256_loadu_si256((const __m256i *)(wb1 + 16)) : _mm256_setzero_si256();
        for (int g = 0; g < 4; g++) {
            const uint8_t *qs0 = wb0 + (is_q5 ? 48 : 16) + 32 * g, *qs1 = wb1 + (is_q5 ? 48 : 16) + 32 * g;
            const float *x0 = x + 256 * b + 64 * g;
            __m512 lo[4], hi[4];
            if (is_q5) {
                /* each row's 5-bit codes of sub-blocks 2g and 2g + 1 in bytes (fgg_mm_q45_k_regs'),
                 * then 8 of each row's widened together */
                const __m256i l4 = _mm256_set1_epi8(15), b4 = _mm256_set1_epi8(16);
                const __m256i v0 = _mm256_loadu_si256((const __m256i *)qs0), v1 = _mm256_loadu_si256((const __m256i *)qs1);
                const __m256i u[2][2] = {
                    {_mm256_or_si256(_mm256_and_si256(v0, l4), _mm256_and_si256(fgg_mm_bit_to_256(qh0, 2 * g, 4), b4)),
                     _mm256_or_si256(_mm256_and_si256(v1, l4), _mm256_and_si256(fgg_mm_bit_to_256(qh1, 2 * g, 4), b4))},
                    {_mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(v0, 4), l4),
                                     _mm256_and_si256(fgg_mm_bit_to_256(qh0, 2 * g + 1, 4), b4)),
                     _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(v1, 4), l4),
                                     _mm256_and_si256(fgg_mm_bit_to_256(qh1, 2 * g + 1, 4), b4))}};
                __m512 *f[2] = {lo, hi};
                for (int t = 0; t < 2; t++) {
                    const __m128i a0 = _mm256_castsi256_si128(u[t][0]), a1 = _mm256_castsi256_si128(u[t][1]);
                    const __m128i h0 = _mm256_extracti128_si256(u[t][0], 1), h1 = _mm256_extracti128_si256(u[t][1], 1);
                    f[t][0] = _mm512_cvtepi32_ps(_mm512_cvtepu8_epi32(_mm_unpacklo_epi64(a0, a1)));
                    f[t][1] = _mm512_cvtepi32_ps(_mm512_cvtepu8_epi32(_mm_unpackhi_epi64(a0, a1)));
                    f[t][2] = _mm512_cvtepi32_ps(_mm512_cvtepu8_epi32(_mm_unpacklo_epi64(h0, h1)));
                    f[t][3] = _mm512_cvtepi32_ps(_mm512_cvtepu8_epi32(_mm_unpackhi_epi64(h0, h1)));
                }
            } else {
                for (int c = 0; c < 4; c++) {
                    const __m128i pair = _mm_unpacklo_epi64(_mm_loadl_epi64((const __m128i *)(qs0 + 8 * c)),
                                                            _mm_loadl_epi64((const __m128i *)(qs1 + 8 * c)));
                    const __m512i e = _mm512_cvtepu8_epi32(pair);
                    lo[c] = _mm512_cvtepi32_ps(_mm512_and_si512(e, low));  /* sub-block 2g */
                    hi[c] = _mm512_cvtepi32_ps(_mm512_srli_epi32(e, 4));   /* sub-block 2g + 1 */
                }
            }
            __m512 tl = _mm512_mul_ps(lo[0], _mm512_broadcast_f32x8(_mm256_loadu_ps(x0)));
            __m512 th = _mm512_mul_ps(hi[0], _mm512_broadcast_f32x8(_mm256_loadu_ps(x0 + 32)));
            for (int c = 1; c < 4; c++) {
                tl = _mm512_add_ps(tl, _mm512_mul_ps(lo[c], _mm512_broadcast_f32x8(_mm256_loadu_ps(x0 + 8 * c))));
                th = _mm512_add_ps(th, _mm512_mul_ps(hi[c], _mm512_broadcast_f32x8(_mm256_loadu_ps(x0 + 32 + 8 * c))));
            }
            /* S[2g] of each row across its half, then S[2g + 1] */
            const __m512 s0 = _mm512_permutexvar_ps(_mm512_add_epi32(half, _mm512_set1_epi32(2 * g)), sv);
            const __m512 s1 = _mm512_permutexvar_ps(_mm512_add_epi32(half, _mm512_set1_epi32(2 * g + 1)), sv);
            a = _mm512_add_ps(a, _mm512_mul_ps(s0, tl));
            a = _mm512_add_ps(a, _mm512_mul_ps(s1, th));
        }
        am = _mm512_add_ps(am, _mm512_mul_ps(mv, _mm512_broadcast_f32x8(_mm256_loadu_ps(xsum + 8 * b))));
    }
    _mm256_storeu_ps(acc0, _mm512_castps512_ps256(a));
    _mm256_storeu_ps(acc1, _mm512_extractf32x8_ps(a, 1));
    _mm256_storeu_ps(acc0 + 8, _mm512_castps512_ps256(am));
    _mm256_storeu_ps(acc1 + 8, _mm512_extractf32x8_ps(am, 1));
}

/* Q6_K's 16 scales times d in one vector (fgg_mm_q6_k_s's products). */
FGG_MM_ALWAYS_INLINE __m512 fgg_mm_q6_k_s512(const uint8_t *wb)
{
    const __m512 d = _mm512_set1_ps(fgg_half_to_float_scale(fgg_load_u16le(wb + 208)));
    return _mm512_mul_ps(d, _mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(_mm_loadu_si128((const __m128i *)(wb + 192)))));
}

/* One row of x times two Q6_K weight rows w0, w1 as fgg_mm_q45_k_pair512: each row gets
 * fgg_mm_q6_k_regs' operations in its order (per pair of sub-blocks of 16, fgg_mm_pair16's). */
FGG_MM_ALWAYS_INLINE void fgg_mm_q6_k_pair512(const uint8_t *w0, const uint8_t *w1, ptrdiff_t b0, ptrdiff_t b1,
                                              const float *x, float *acc0, float *acc1)
{
    __m512 a = _mm512_insertf32x8(_mm512_castps256_ps512(_mm256_loadu_ps(acc0)), _mm256_loadu_ps(acc1), 1);
    const __m512i second = _mm512_set_epi32(16, 16, 16, 16, 16, 16, 16, 16, 0, 0, 0, 0, 0, 0, 0, 0);
    for (ptrdiff_t b = b0; b < b1; b++) {
        const uint8_t *wb0 = w0 + 210 * b, *wb1 = w1 + 210 * b;
        fgg_mm_prefetch(wb0 + FGG_MM_PAIR_PREFETCH_ROWS * (w1 - w0), 210);
        fgg_mm_prefetch(wb1 + FGG_MM_PAIR_PREFETCH_ROWS * (w1 - w0), 210);
        const __m512 sv0 = fgg_mm_q6_k_s512(wb0), sv1 = fgg_mm_q6_k_s512(wb1);
        for (int h = 0; h < 2; h++) {
            __m256i q0[4], q1[4];
            fgg_mm_q6_k_half(wb0, h, q0);
            fgg_mm_q6_k_half(wb1, h, q1);
            for (int c = 0; c < 4; c++) {  /* sub-blocks j = 8h + 2c and j + 1 */
                const float *xc = x + 256 * b + 128 * h + 32 * c;
                const __m128i l0 = _mm256_castsi256_si128(q0[c]), l1 = _mm256_castsi256_si128(q1[c]);
                const __m128i u0 = _mm256_extracti128_si256(q0[c], 1), u1 = _mm256_extracti128_si256(q1[c], 1);
                const __m512 f0 = _mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(_mm_unpacklo_epi64(l0, l1)));
                const __m512 f1 = _mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(_mm_unpackhi_epi64(l0, l1)));
                const __m512 f2 = _mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(_mm_unpacklo_epi64(u0, u1)));
                const __m512 f3 = _mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(_mm_unpackhi_epi64(u0, u1)));
                const int j = 8 * h + 2 * c;
                const __m512 s0 = _mm512_permutex2var_ps(sv0, _mm512_add_epi32(second, _mm512_set1_epi32(j)), sv1);
                const __m512 s1 = _mm512_permutex2var_ps(sv0, _mm512_add_epi32(second, _mm512_set1_epi32(j + 1)), sv1);
                const __m512 t0 = _mm512_add_ps(_mm512_mul_ps(f0, _mm512_broadcast_f32x8(_mm256_loadu_ps(xc))),
                                                _mm512_mul_ps(f1, _mm512_broadcast_f32x8(_mm256_loadu_ps(xc + 8))));
                const __m512 t1 = _mm512_add_ps(_mm512_mul_ps(f2, _mm512_broadcast_f32x8(_mm256_loadu_ps(xc + 16))),
                                                _mm512_mul_ps(f3, _mm512_broadcast_f32x8(_mm256_loadu_ps(xc + 24))));
                a = _mm512_add_ps(a, _mm512_mul_ps(s0, t0));
                a = _mm512_add_ps(a, _mm512_mul_ps(s1, t1));
            }
        }
    }
    _mm256_storeu_ps(acc0, _mm512_castps512_ps256(a));
    _mm256_storeu_ps(acc1, _mm512_extractf32x8_ps(a, 1));
}

/* The f16 numbers at h0 and h1 as floats, h0's in the low 8 lanes and h1's in the high 8. */
FGG_MM_ALWAYS_INLINE __m512 fgg_mm_half_pair512(const uint8_t *h0, const uint8_t *h1)
{
    const __m128i v0 = _mm_set1_epi16((short)fgg_load_u16le(h0)), v1 = _mm_set1_epi16((short)fgg_load_u16le(h1));
    return _mm512_cvtph_ps(_mm256_inserti128_si256(_mm256_castsi128_si256(v0), v1, 1));
}

/* A per-32 kind's value of each code 0-15 as floats, as fgg_mm_b_values gives it (Q5_0's and
 * Q5_1's for codes with the fifth bit clear, or with it set: high). */
FGG_MM_ALWAYS_INLINE __m512 fgg_mm_b_table512(int kind, int high)
{
    if (kind == FGG_MM_B_IQ4_NL || kind == FGG_MM_B_MXFP4) {
        const int8_t *values = kind == FGG_MM_B_IQ4_NL ? fgg_iq4nl_values : fgg_fp4_values;
        return _mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(_mm_loadu_si128((const __m128i *)values)));
    }
    const __m512i codes = _mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15);
    return _mm512_cvtepi32_ps(_mm512_add_epi32(codes, _mm512_set1_epi32(16 * high - fgg_mm_b_code_offset(kind))));
}

/* One row of x times two weight rows w0, w1 of a per-32 kind other than Q8_0 (blocks b0..b1) on
 * 512-bit vectors, as fgg_mm_q45_k_pair512: each row gets fgg_mm_b32_regs' operations in its order
 * (t = q * x over 8 lanes, a + d * t per block, Q4_1's and Q5_1's min lane b % 8 + M * xsum). A
 * value comes from its code by vpermps on a 16-float table, which reads only an index's low 4 bits:
 * the low nibble needs no mask. Q5_0's and Q5_1's codes with the fifth bit set take the high
 * table's value, the bits as a lane mask. */
FGG_MM_ALWAYS_INLINE void fgg_mm_b32_pair512(const int kind, const uint8_t *w0, const uint8_t *w1, ptrdiff_t b0,
                                             ptrdiff_t b1, const float *x, const float *xsum, float *acc0, float *acc1)
{
    const ptrdiff_t bytes = fgg_mm_b_bytes(kind);
    const int at = fgg_mm_b_codes_at(kind), has_fifths = kind == FGG_MM_B_Q5_0 || kind == FGG_MM_B_Q5_1;
    const __m512 table = fgg_mm_b_table512(kind, 0), table_high = fgg_mm_b_table512(kind, 1);
    const __m512 sign = _mm512_set1_ps(-0.0f);
    __m512 a = _mm512_insertf32x8(_mm512_castps256_ps512(_mm256_loadu_ps(acc0)), _mm256_loadu_ps(acc1), 1);
    __m512 am = _mm512_insertf32x8(_mm512_castps256_ps512(_mm256_loadu_ps(acc0 + 8)), _mm256_loadu_ps(acc1 + 8), 1);
    for (ptrdiff_t b = b0; b < b1; b++) {
        const uint8_t *blk0 = w0 + bytes * b, *blk1 = w1 + bytes * b;
        fgg_mm_prefetch(blk0 + FGG_MM_PAIR_PREFETCH_ROWS * (w1 - w0), bytes);
        fgg_mm_prefetch(blk1 + FGG_MM_PAIR_PREFETCH_ROWS * (w1 - w0), bytes);
        /* each row's 16 code bytes as int32; then bytes 0-7 of both rows, and bytes 8-15 */
        const __m512i e0 = _mm512_cvtepu8_epi32(_mm_loadu_si128((const __m128i *)(blk0 + at)));
        const __m512i e1 = _mm512_cvtepu8_epi32(_mm_loadu_si128((const __m128i *)(blk1 + at)));
        const __m512i p[2] = {_mm512_shuffle_i64x2(e0, e1, 0x44), _mm512_shuffle_i64x2(e0, e1, 0xEE)};
        /* the codes of values 0-7 and 8-15 (low nibbles), 16-23 and 24-31 (high nibbles) */
        const __m512i idx[4] = {p[0], p[1], _mm512_srli_epi32(p[0], 4), _mm512_srli_epi32(p[1], 4)};
        __m512 f[4];
        for (int c = 0; c < 4; c++) f[c] = _mm512_permutexvar_ps(idx[c], table);
        if (has_fifths) {  /* the fifth bits of values 8c..8c + 7 of row 0, then of row 1 */
            const int fa = fgg_mm_b_fifths_at(kind);
            const uint64_t bits = _pdep_u64(fgg_load_u32le(blk0 + fa), 0x00FF00FF00FF00FFull) |
                                  _pdep_u64(fgg_load_u32le(blk1 + fa), 0xFF00FF00FF00FF00ull);
            for (int c = 0; c < 4; c++) f[c] = _mm512_mask_permutexvar_ps(f[c], (__mmask16)(bits >> 16 * c), idx[c], table_high);
        }
        const float *xb = x + 32 * b;
        __m512 t = _mm512_mul_ps(f[0], _mm512_broadcast_f32x8(_mm256_loadu_ps(xb)));
        for (int c = 1; c < 4; c++) t = _mm512_add_ps(t, _mm512_mul_ps(f[c], _mm512_broadcast_f32x8(_mm256_loadu_ps(xb + 8 * c))));
        __m512 d;
        if (kind == FGG_MM_B_MXFP4)
            d = _mm512_insertf32x8(_mm512_set1_ps(fgg_e8m0_half_f32[blk0[0]]), _mm256_set1_ps(fgg_e8m0_half_f32[blk1[0]]), 1);
        else
            d = fgg_mm_half_pair512(blk0, blk1);
        a = _mm512_add_ps(a, _mm512_mul_ps(d, t));
        if (fgg_mm_b_has_offset(kind)) {
            const __m512 mv = _mm512_xor_ps(fgg_mm_half_pair512(blk0 + 2, blk1 + 2), sign);  /* M = -m */
            const __mmask16 lane = (__mmask16)(0x0101u << (b & 7));
            am = _mm512_mask_add_ps(am, lane, am, _mm512_mul_ps(mv, _mm512_set1_ps(xsum[b])));
        }
    }
    _mm256_storeu_ps(acc0, _mm512_castps512_ps256(a));
    _mm256_storeu_ps(acc1, _mm512_extractf32x8_ps(a, 1));
    _mm256_storeu_ps(acc0 + 8, _mm512_castps512_ps256(am));
    _mm256_storeu_ps(acc1 + 8, _mm512_extractf32x8_ps(am, 1));
}

/* Blocks b0..b1 of nw (1 to 4) Q4_K, Q5_K or Q6_K (type_id) weight rows times one row of x (Q4_K's
 * and Q5_K's sums per 32 at xsum): pairs of rows on 512-bit vectors, a last odd row by the AVX2
 * register kernel. */
FGG_MM_ALWAYS_INLINE void fgg_mm_span1_pairs(const int type_id, const uint8_t *w, ptrdiff_t row_bytes, int nw, ptrdiff_t b0,
                                             ptrdiff_t b1, const float *x, const float *xsum, float *acc,
                                             ptrdiff_t acc_stride)
{
    const int is_q6 = type_id == FGG_TYPE_Q6_K, is_q5 = type_id == FGG_TYPE_Q5_K;
    int r = 0;
    for (; r + 2 <= nw; r += 2) {
        const uint8_t *w0 = w + r * row_bytes, *w1 = w0 + row_bytes;
        if (is_q6)
            fgg_mm_q6_k_pair512(w0, w1, b0, b1, x, acc + r * acc_stride, acc + (r + 1) * acc_stride);
        else
            fgg_mm_q45_k_pair512(w0, w1, b0, b1, x, xsum, acc + r * acc_stride, acc + (r + 1) * acc_stride, is_q5);
    }
    if (r == nw) return;
    if (is_q6)
        fgg_mm_q6_k_regs(w + r * row_bytes, b0, b1, x, 0, 1, acc + r * acc_stride);
    else
        fgg_mm_q45_k_regs(w + r * row_bytes, b0, b1, x, 0, xsum, 0, 1, acc + r * acc_stride, is_q5);
}

/* Blocks b0..b1 of nw (1 to 4) weight rows of a per-32 kind other than Q8_0 times one row of x
 * (its sums per 32 at xsum): pairs of rows by fgg_mm_b32_pair512, a last odd row by
 * fgg_mm_b32_regs. */
FGG_MM_ALWAYS_INLINE void fgg_mm_span1_b32(const int kind, const uint8_t *w, ptrdiff_t row_bytes, int nw, ptrdiff_t b0,
                                           ptrdiff_t b1, const float *x, const float *xsum, float *acc, ptrdiff_t acc_stride)
{
    int r = 0;
    for (; r + 2 <= nw; r += 2)
        fgg_mm_b32_pair512(kind, w + r * row_bytes, w + (r + 1) * row_bytes, b0, b1, x, xsum, acc + r * acc_stride,
                           acc + (r + 1) * acc_stride);
    if (r < nw) fgg_mm_b32_regs(kind, w + r * row_bytes, b0, b1, x, 0, xsum, 0, 1, acc + r * acc_stride);
}

/* Each type's one-row kernel for the Cython code: SPAN1 (fgg_mm_span1_pairs or fgg_mm_span1_b32)
 * with its type or kind as a constant. */
#define FGG_MM_SPAN1(NAME, SPAN1, KIND)                                                               \
static inline void NAME(const uint8_t *w, ptrdiff_t row_bytes, int nw, ptrdiff_t b0, ptrdiff_t b1,        \
                        const float *x, const float *xsum, float *acc, ptrdiff_t acc_stride)              \
{                                                                                                     \
    SPAN1(KIND, w, row_bytes, nw, b0, b1, x, xsum, acc, acc_stride);                                  \
}
FGG_MM_SPAN1(fgg_mm_span1_q4_k, fgg_mm_span1_pairs, FGG_TYPE_Q4_K)
FGG_MM_SPAN1(fgg_mm_span1_q5_k, fgg_mm_span1_pairs, FGG_TYPE_Q5_K)
FGG_MM_SPAN1(fgg_mm_span1_q6_k, fgg_mm_span1_pairs, FGG_TYPE_Q6_K)
FGG_MM_SPAN1(fgg_mm_span1_q4_0, fgg_mm_span1_b32, FGG_MM_B_Q4_0)
FGG_MM_SPAN1(fgg_mm_span1_q4_1, fgg_mm_span1_b32, FGG_MM_B_Q4_1)
FGG_MM_SPAN1(fgg_mm_span1_q5_0, fgg_mm_span1_b32, FGG_MM_B_Q5_0)
FGG_MM_SPAN1(fgg_mm_span1_q5_1, fgg_mm_span1_b32, FGG_MM_B_Q5_1)
FGG_MM_SPAN1(fgg_mm_span1_iq4_nl, fgg_mm_span1_b32, FGG_MM_B_IQ4_NL)
FGG_MM_SPAN1(fgg_mm_span1_mxfp4, fgg_mm_span1_b32, FGG_MM_B_MXFP4)
#undef FGG_MM_SPAN1
#define FGG_MM_HAVE_SPAN1_PAIRS 1
#else
#define FGG_MM_HAVE_SPAN1_PAIRS 0
#endif

#if !FGG_MM_HAVE_SPAN1 || !FGG_MM_HAVE_SPAN1_PAIRS
/* Never called (FGG_MM_HAVE_SPAN1 or FGG_MM_HAVE_SPAN1_PAIRS is 0): names for the Cython code. */
static inline void fgg_mm_span1_never(const uint8_t *w, ptrdiff_t row_bytes, int nw, ptrdiff_t b0, ptrdiff_t b1,
                                      const float *x, const float *xsum, float *acc, ptrdiff_t acc_stride)
{
    (void)w, (void)row_bytes, (void)nw, (void)b0, (void)b1, (void)x, (void)xsum, (void)acc, (void)acc_stride;
}
#endif
#if !FGG_MM_HAVE_SPAN1
#define fgg_mm_span1_q8_0 fgg_mm_span1_never
#endif
#if !FGG_MM_HAVE_SPAN1_PAIRS
#define fgg_mm_span1_q4_k fgg_mm_span1_never
#define fgg_mm_span1_q5_k fgg_mm_span1_never
#define fgg_mm_span1_q6_k fgg_mm_span1_never
#define fgg_mm_span1_q4_0 fgg_mm_span1_never
#define fgg_mm_span1_q4_1 fgg_mm_span1_never
#define fgg_mm_span1_q5_0 fgg_mm_span1_never
#define fgg_mm_span1_q5_1 fgg_mm_span1_never
#define fgg_mm_span1_iq4_nl fgg_mm_span1_never
#define fgg_mm_span1_mxfp4 fgg_mm_span1_never
#endif

/* From here to the spans' end, gcc schedules the portable build's code before register allocation
 * too (its x86 default is after only). Its SSE2 register kernels (16 registers, two-operand
 * instructions) otherwise keep a whole group's converted codes live and spill the rows' lanes:
 * about 20 stack loads and stores per 64 Q4_K values. Exact path, one row of x, one thread (Zen
 * 4): Q4_K 6.75 -> 7.0 Gval/s, Q6_K 5.43 -> 5.87. Only here: for the whole build (setup flags) the
 * dequantization kernels ran 20 % slower. The same bits either way. */
#if FGG_HAVE_SSE2 && !FGG_HAVE_AVX2 && defined(__GNUC__) && !defined(__clang__) && !defined(__INTEL_COMPILER)
#pragma GCC push_options
#pragma GCC optimize("schedule-insns", "sched-pressure")
#define FGG_MM_SCHEDULED 1
#endif

#if FGG_HAVE_SSE2 && !FGG_HAVE_AVX2
/* The portable build's register kernels: the AVX2 kernels' float operations on pairs of 4-lane
 * SSE2 vectors (lanes 0-3 and 4-7), in the same order, so the same bits; x86-64 always has SSE2.
 * Bytes become floats by fgg_mm_sse_u8_to_f (above); x is read with aligned loads, which SSE
 * folds into the multiplies: the driver hands these kernels rows of x at 16-byte boundaries
 * (fgg_mm_sse_sub, above). */

/* 32 values, bytes u0 (values 0-15) and u1 (16-31) less off, converted once for R rows of x (row
 * i at x + i * xs, lanes a[i]): one sub-block of 32 under s[0], or with pair two of 16 under s[0]
 * and s[1]. */
FGG_MM_ALWAYS_INLINE void fgg_mm_sse_run32(__m128 (*a)[2], const int R, __m128i u0, __m128i u1, __m128 off2,
                                           const float *x, ptrdiff_t xs, const float *s, const int pair)
{
    fgg_mm_f8 f[4];
    fgg_mm_sse_u8_to_f(u0, off2, f);
    fgg_mm_sse_u8_to_f(u1, off2, f + 2);
    for (int i = 0; i < R; i++) {
        if (pair) {
            fgg_mm_sse_sub(a[i], f, 2, x + i * xs, s[0]);
            fgg_mm_sse_sub(a[i], f + 2, 2, x + i * xs + 16, s[1]);
        } else {
            fgg_mm_sse_sub(a[i], f, 4, x + i * xs, s[0]);
        }
    }
}

FGG_MM_ALWAYS_INLINE void fgg_mm_sse_acc_load(__m128 (*a)[2], const int R, const float *acc)
{
    for (int i = 0; i < R; i++) {
        a[i][0] = _mm_loadu_ps(acc + 16 * i);
        a[i][1] = _mm_loadu_ps(acc + 16 * i + 4);
    }
}

FGG_MM_ALWAYS_INLINE void fgg_mm_sse_acc_store(__m128 (*a)[2], const int R, float *acc)
{
    for (int i = 0; i < R; i++) {
        _mm_storeu_ps(acc + 16 * i, a[i][0]);
        _mm_storeu_ps(acc + 16 * i + 4, a[i][1]);
    }
}

#define FGG_MM_SSE_OFF(off) _mm_set1_ps(8388608.0f + (off))
#define FGG_MM_SSE_LOAD(p) _mm_loadu_si128((const __m128i *)(p))

/* fgg_mm_bit_to_256 on SSE2: bit `bit` of each byte (and those above it) moved to bit `to` (both
 * 0..7), the other bits undefined: one 16-bit shift, after which bit `to` of each byte holds bit
 * `bit` of that same byte (a shift down, a mask and a shift up took three operations). */
FGG_MM_ALWAYS_INLINE __m128i fgg_mm_sse_bit_to(__m128i q, int bit, int to)
{
    return bit < to ? _mm_slli_epi16(q, to - bit) : bit > to ? _mm_srli_epi16(q, bit - to) : q;
}

/* fgg_mm_q45_k_regs of the AVX2 build, on SSE2: nibbles split and fifth bits placed in bytes. */
FGG_MM_ALWAYS_INLINE void fgg_mm_q45_k_regs(const uint8_t *w, ptrdiff_t b0, ptrdiff_t b1, const float *x, ptrdiff_t xs,
                                            const float *xsum, ptrdiff_t xss, const int R, float *acc, const int is_q5)
{
    const ptrdiff_t sb_bytes = is_q5 ? 176 : 144;
    const __m128i low = _mm_set1_epi8(15), fifth = _mm_set1_epi8(16);
    float S[8], M[8];
    __m128 a[4][2];
    fgg_mm_sse_acc_load(a, R, acc);
    for (ptrdiff_t b = b0; b < b1; b++) {
        const uint8_t *wb = w + sb_bytes * b;
        fgg_mm_prefetch_ahead(wb, sb_bytes);
        fgg_mm_q4_k_sm(wb, S, M);
        for (int g = 0; g < 4; g++) {
            const uint8_t *qs = wb + (is_q5 ? 48 : 16) + 32 * g;
            for (int j = 0; j < 2; j++) {  /* sub-block 2g + j: the low (j = 0) or high nibbles */
                __m128i u[2];
                for (int k = 0; k < 2; k++) {
                    const __m128i v = FGG_MM_SSE_LOAD(qs + 16 * k);
                    u[k] = _mm_and_si128(j ? _mm_srli_epi16(v, 4) : v, low);
                    if (is_q5) {  /* the fifth bits: bit 2g + j of qh, to bit 4 */
                        const __m128i h = fgg_mm_sse_bit_to(FGG_MM_SSE_LOAD(wb + 16 + 16 * k), 2 * g + j, 4);
                        u[k] = _mm_or_si128(u[k], _mm_and_si128(h, fifth));
                    }
                }
                fgg_mm_sse_run32(a, R, u[0], u[1], FGG_MM_SSE_OFF(0), x + 256 * b + 64 * g + 32 * j, xs, S + 2 * g + j, 0);
            }
        }
        for (int i = 0; i < R; i++)
            for (int h = 0; h < 2; h++) {
                float *mins = acc + 16 * i + 8 + 4 * h;
                __m128 p = _mm_mul_ps(_mm_loadu_ps(M + 4 * h), _mm_loadu_ps(xsum + i * xss + 8 * b + 4 * h));
                _mm_storeu_ps(mins, _mm_add_ps(_mm_loadu_ps(mins), p));
            }
    }
    fgg_mm_sse_acc_store(a, R, acc);
}

/* Values 128h + 32c + 16k .. + 15 of a Q6_K super-block as their 16 codes q (q - 32 the value):
 * four bits of ql, and bits 2c, 2c + 1 of qh moved to bits 4, 5. */
FGG_MM_ALWAYS_INLINE __m128i fgg_mm_sse_q6_k_u(const uint8_t *wb, int h, int c, int k)
{
    __m128i l = FGG_MM_SSE_LOAD(wb + 64 * h + 32 * (c & 1) + 16 * k);
    if (c >= 2) l = _mm_srli_epi16(l, 4);
    const __m128i hb = fgg_mm_sse_bit_to(FGG_MM_SSE_LOAD(wb + 128 + 32 * h + 16 * k), 2 * c, 4);
    return _mm_or_si128(_mm_and_si128(l, _mm_set1_epi8(15)), _mm_and_si128(hb, _mm_set1_epi8(0x30)));
}

/* fgg_mm_q6_k_regs for one row of x on SSE2: the super-block's 256 codes made first and stored,
 * then one sub-block of 16 at a time (fgg_mm_sse_sub's steps), with the lanes in registers only
 * within the super-block. With all of a super-block's codes made in registers and the lanes kept
 * across super-blocks, gcc kept the lanes on the stack and the codes spilled: one row of 4096 x
 * 14336, one thread (Zen 2), 13.6 -> 12.4 ms, 3.07 -> 2.88 instructions a value. */
FGG_MM_ALWAYS_INLINE void fgg_mm_sse_q6_k_row1(const uint8_t *w, ptrdiff_t b0, ptrdiff_t b1, const float *x, float *acc)
{
    for (ptrdiff_t b = b0; b < b1; b++) {
        const uint8_t *wb = w + 210 * b;
        float S[16];
        uint8_t u8[256] __attribute__((aligned(16)));
        fgg_mm_prefetch_ahead(wb, 210);
        fgg_mm_q6_k_s(wb, S);
        for (int h = 0; h < 2; h++)
            for (int c = 0; c < 4; c++)
                for (int k = 0; k < 2; k++)
                    _mm_store_si128((__m128i *)(u8 + 128 * h + 32 * c + 16 * k), fgg_mm_sse_q6_k_u(wb, h, c, k));
        __m128 a[2] = {_mm_loadu_ps(acc), _mm_loadu_ps(acc + 4)};
#pragma GCC unroll 1
        for (int j = 0; j < 16; j++) {
            fgg_mm_f8 f[2];
            fgg_mm_sse_u8_to_f(_mm_load_si128((const __m128i *)(u8 + 16 * j)), FGG_MM_SSE_OFF(32), f);
            fgg_mm_sse_sub(a, f, 2, x + 256 * b + 16 * j, S[j]);
        }
        _mm_storeu_ps(acc, a[0]);
        _mm_storeu_ps(acc + 4, a[1]);
    }
}

/* fgg_mm_q6_k_regs of the AVX2 build, on SSE2: each 32 values (sub-blocks 8h + 2c, 8h + 2c + 1)
 * from four bits of ql and two of qh, less 32. */
FGG_MM_ALWAYS_INLINE void fgg_mm_q6_k_regs(const uint8_t *w, ptrdiff_t b0, ptrdiff_t b1, const float *x, ptrdiff_t xs,
                                           const int R, float *acc)
{
    if (R == 1) {
        fgg_mm_sse_q6_k_row1(w, b0, b1, x, acc);
        return;
    }
    float S[16];
    __m128 a[4][2];
    fgg_mm_sse_acc_load(a, R, acc);
    for (ptrdiff_t b = b0; b < b1; b++) {
        const uint8_t *wb = w + 210 * b;
        fgg_mm_prefetch_ahead(wb, 210);
        fgg_mm_q6_k_s(wb, S);
        for (int h = 0; h < 2; h++)
            for (int c = 0; c < 4; c++)
                fgg_mm_sse_run32(a, R, fgg_mm_sse_q6_k_u(wb, h, c, 0), fgg_mm_sse_q6_k_u(wb, h, c, 1), FGG_MM_SSE_OFF(32),
                                 x + 256 * b + 128 * h + 32 * c, xs, S + 8 * h + 2 * c, 1);
    }
    fgg_mm_sse_acc_store(a, R, acc);
}

/* fgg_mm_q3_k_regs of the AVX2 build, on SSE2: u = low2 | (bit j of hmask) << 2, less 4. */
FGG_MM_ALWAYS_INLINE void fgg_mm_q3_k_regs(const uint8_t *w, ptrdiff_t b0, ptrdiff_t b1, const float *x, ptrdiff_t xs,
                                           const int R, float *acc)
{
    const __m128i three = _mm_set1_epi8(3), four = _mm_set1_epi8(4);
    float S[16];
    __m128 a[4][2];
    fgg_mm_sse_acc_load(a, R, acc);
    for (ptrdiff_t b = b0; b < b1; b++) {
        const uint8_t *wb = w + 110 * b;
        fgg_mm_prefetch_ahead(wb, 110);
        fgg_mm_q3_k_s(wb, S);
        const __m128i hm[2] = {FGG_MM_SSE_LOAD(wb), FGG_MM_SSE_LOAD(wb + 16)};
#pragma GCC unroll 8
        for (int j = 0; j < 8; j++) {  /* sub-blocks 2j and 2j + 1 */
            __m128i u[2];
            for (int k = 0; k < 2; k++) {
                const __m128i low2 = _mm_and_si128(_mm_srli_epi16(FGG_MM_SSE_LOAD(wb + 32 + 32 * (j >> 2) + 16 * k), 2 * (j & 3)), three);
                u[k] = _mm_or_si128(low2, _mm_and_si128(fgg_mm_sse_bit_to(hm[k], j, 2), four));
            }
            fgg_mm_sse_run32(a, R, u[0], u[1], FGG_MM_SSE_OFF(4), x + 256 * b + 32 * j, xs, S + 2 * j, 1);
        }
    }
    fgg_mm_sse_acc_store(a, R, acc);
}

/* fgg_mm_q2_k_regs of the AVX2 build, on SSE2: each 32 values two bits of the 32 code bytes. */
FGG_MM_ALWAYS_INLINE void fgg_mm_q2_k_regs(const uint8_t *w, ptrdiff_t b0, ptrdiff_t b1, const float *x, ptrdiff_t xs,
                                           const float *xsum, ptrdiff_t xss, const int R, float *acc)
{
    const __m128i three = _mm_set1_epi8(3);
    float S[16], M[16];
    __m128 a[4][2];
    fgg_mm_sse_acc_load(a, R, acc);
    for (ptrdiff_t b = b0; b < b1; b++) {
        const uint8_t *wb = w + 84 * b;
        fgg_mm_prefetch_ahead(wb, 84);
        fgg_mm_q2_k_sm(wb, S, M);
        for (int h = 0; h < 2; h++) {
            const __m128i v0 = FGG_MM_SSE_LOAD(wb + 16 + 32 * h), v1 = FGG_MM_SSE_LOAD(wb + 32 + 32 * h);
            for (int t = 0; t < 4; t++)
                fgg_mm_sse_run32(a, R, _mm_and_si128(_mm_srli_epi16(v0, 2 * t), three),
                                 _mm_and_si128(_mm_srli_epi16(v1, 2 * t), three), FGG_MM_SSE_OFF(0),
                                 x + 256 * b + 128 * h + 32 * t, xs, S + 8 * h + 2 * t, 1);
        }
        for (int i = 0; i < R; i++)
            for (int k = 0; k < 2; k++) {  /* lanes 4k..4k + 3: mins 0-7, then 8-15 */
                float *mins = acc + 16 * i + 8 + 4 * k;
                const float *xsb = xsum + i * xss + 16 * b + 4 * k;
                __m128 lanes = _mm_add_ps(_mm_loadu_ps(mins), _mm_mul_ps(_mm_loadu_ps(M + 4 * k), _mm_loadu_ps(xsb)));
                _mm_storeu_ps(mins, _mm_add_ps(lanes, _mm_mul_ps(_mm_loadu_ps(M + 8 + 4 * k), _mm_loadu_ps(xsb + 8))));
            }
    }
    fgg_mm_sse_acc_store(a, R, acc);
}

/* The 32 table values of 16 code bytes q as floats (values 0-7, 8-15, 16-23, 24-31 in f[0..3]):
 * each 4 bytes' values looked up as float pairs (fgg_mm_iq4nl_pairs or fgg_mm_fp4_pairs) and
 * sorted into values 4c..4c + 3 (low nibbles) and 16 + 4c.. (high). */
FGG_MM_ALWAYS_INLINE void fgg_mm_sse_table_f(const uint8_t *q, const fgg_mm_pairs pairs, fgg_mm_f8 f[4])
{
    for (int c = 0; c < 4; c++) {  /* bytes 4c..4c + 3 */
        __m128 p[4];
        for (int k = 0; k < 4; k++) p[k] = _mm_castpd_ps(_mm_load_sd((const double *)pairs[q[4 * c + k]]));
        const __m128 u01 = _mm_unpacklo_ps(p[0], p[1]), u23 = _mm_unpacklo_ps(p[2], p[3]);
        f[c >> 1].v[c & 1] = _mm_movelh_ps(u01, u23);
        f[2 + (c >> 1)].v[c & 1] = _mm_movehl_ps(u23, u01);
    }
}

/* fgg_mm_iq4_xs_regs of the AVX2 build, on SSE2 (fgg_mm_sse_table_f: SSE2 has no pshufb). */
FGG_MM_ALWAYS_INLINE void fgg_mm_iq4_xs_regs(const uint8_t *w, ptrdiff_t b0, ptrdiff_t b1, const float *x, ptrdiff_t xs,
                                             const int R, float *acc)
{
    float S[8];
    __m128 a[4][2];
    fgg_mm_sse_acc_load(a, R, acc);
    for (ptrdiff_t b = b0; b < b1; b++) {
        const uint8_t *wb = w + 136 * b;
        fgg_mm_prefetch_ahead(wb, 136);
        fgg_mm_iq4_xs_s(wb, S);
        for (int j = 0; j < 8; j++) {
            fgg_mm_f8 f[4];
            fgg_mm_sse_table_f(wb + 8 + 16 * j, fgg_mm_iq4nl_pairs, f);
            for (int i = 0; i < R; i++) fgg_mm_sse_sub(a[i], f, 4, x + i * xs + 256 * b + 32 * j, S[j]);
        }
    }
    fgg_mm_sse_acc_store(a, R, acc);
}

/* Bit i of qh as byte i of u[0] (values 0-15) and u[1] (16-31): 16 where it is set, else 0. */
FGG_MM_ALWAYS_INLINE void fgg_mm_sse_fifth_bits(uint32_t qh, __m128i u[2])
{
    fgg_mm_sse_bits32(qh, u);
    for (int h = 0; h < 2; h++) u[h] = _mm_and_si128(u[h], _mm_set1_epi8(16));
}

/* fgg_mm_b32_regs of the AVX2 build, on SSE2: the values as bytes u less an offset (Q8_0's
 * int8 + 128 less 128, Q4_0's nibbles less 8, Q5_0's 5-bit codes less 16), IQ4_NL's and MXFP4's
 * through their tables (fgg_mm_sse_table_f). */
FGG_MM_ALWAYS_INLINE void fgg_mm_b32_regs(int kind, const uint8_t *w, ptrdiff_t b0, ptrdiff_t b1, const float *x,
                                          ptrdiff_t xs, const float *xsum, ptrdiff_t xss, const int R, float *acc)
{
    const __m128i low = _mm_set1_epi8(15), bias = _mm_set1_epi8((char)0x80);
    const ptrdiff_t bytes = fgg_mm_b_bytes(kind);
    __m128 a[4][2];
    fgg_mm_sse_acc_load(a, R, acc);
    for (ptrdiff_t b = b0; b < b1; b++) {
        const uint8_t *blk = w + bytes * b;
        const float d = fgg_mm_b_scale(kind, blk);
        if (kind == FGG_MM_B_IQ4_NL || kind == FGG_MM_B_MXFP4) {
            fgg_mm_f8 f[4];
            fgg_mm_sse_table_f(blk + fgg_mm_b_codes_at(kind), kind == FGG_MM_B_IQ4_NL ? fgg_mm_iq4nl_pairs : fgg_mm_fp4_pairs, f);
            for (int i = 0; i < R; i++) fgg_mm_sse_sub(a[i], f, 4, x + i * xs + 32 * b, d);
        } else {
            __m128i u0, u1;
            float off = 0.0f;
            const uint8_t *codes = blk + fgg_mm_b_codes_at(kind);
            if (kind == FGG_MM_B_Q8_0) {
                u0 = _mm_xor_si128(FGG_MM_SSE_LOAD(codes), bias);
                u1 = _mm_xor_si128(FGG_MM_SSE_LOAD(codes + 16), bias);
                off = 128.0f;
            } else {
                const __m128i v = FGG_MM_SSE_LOAD(codes);
                u0 = _mm_and_si128(v, low);
                u1 = _mm_and_si128(_mm_srli_epi16(v, 4), low);
                if (kind == FGG_MM_B_Q5_0 || kind == FGG_MM_B_Q5_1) {
                    __m128i h[2];
                    fgg_mm_sse_fifth_bits(fgg_load_u32le(blk + fgg_mm_b_fifths_at(kind)), h);
                    u0 = _mm_or_si128(u0, h[0]);
                    u1 = _mm_or_si128(u1, h[1]);
                }
                off = (float)fgg_mm_b_code_offset(kind);
            }
            fgg_mm_sse_run32(a, R, u0, u1, FGG_MM_SSE_OFF(off), x + 32 * b, xs, &d, 0);
        }
        if (fgg_mm_b_has_offset(kind)) {
            const float mn = -fgg_mm_b_offset(kind, blk);
            for (int i = 0; i < R; i++) fgg_mm_b32_min_lanes(&mn, 1, xsum + i * xss + b, acc + 16 * i + 8 + (b & 7));
        }
    }
    fgg_mm_sse_acc_store(a, R, acc);
}
#undef FGG_MM_SSE_OFF
#undef FGG_MM_SSE_LOAD
#endif

/* Spans with one signature for the driver (kernels_matmul.pxi): blocks b0..b1 of one weight row
 * times m rows of x, added into acc (16 floats per row); out by fgg_mm_exact_out. Up to
 * FGG_MM_REG_ROWS rows of x, the SIMD builds take the register kernels (4 rows at a time; SSE2 in
 * the portable build); more rows, and plain C, unpack a super-block's q as floats once for all of them
 * (fgg_mm_exact_k_span). The same operations either way. Measured on Zen 3, one thread: with 5
 * to 8 rows the register kernels took 0.5-0.92 of the unpacked path's time; beyond that neither
 * won clearly. */
#if FGG_HAVE_SSE2
#define FGG_MM_REG_ROWS 8
#define FGG_MM_SPAN_BODY(REGS, UNPACKED)                                                              \
    if (m <= FGG_MM_REG_ROWS && !pairs) {                                                             \
        for (int r = 0; r < nw; r++, w += row_bytes, acc += as) FGG_MM_BY_4_ROWS(m, REGS)             \
        return;                                                                                       \
    }                                                                                                 \
    UNPACKED;
#else
#define FGG_MM_REG_ROWS 0
#define FGG_MM_SPAN_BODY(REGS, UNPACKED) UNPACKED;
#endif
#define FGG_MM_SPAN(NAME, BODY)                                                                       \
static inline void NAME(const uint8_t *w, ptrdiff_t row_bytes, int nw, ptrdiff_t b0, ptrdiff_t b1,      \
                        const float *x, ptrdiff_t xs, const float *xsum, ptrdiff_t xss, int m, int pairs, \
                        float *qf, float *acc, ptrdiff_t as)                                          \
{                                                                                                     \
    (void)xsum;                                                                                       \
    (void)xss;                                                                                        \
    (void)qf;                                                                                         \
    BODY                                                                                              \
}
/* Each type's register kernel for rows i..i + r of x. */
#define FGG_MM_Q2_K_REGS(r) fgg_mm_q2_k_regs(w, b0, b1, x + i * xs, xs, xsum + i * xss, xss, r, acc + 16 * i)
#define FGG_MM_Q3_K_REGS(r) fgg_mm_q3_k_regs(w, b0, b1, x + i * xs, xs, r, acc + 16 * i)
#define FGG_MM_Q4_K_REGS(r) fgg_mm_q45_k_regs(w, b0, b1, x + i * xs, xs, xsum + i * xss, xss, r, acc + 16 * i, 0)
#define FGG_MM_Q5_K_REGS(r) fgg_mm_q45_k_regs(w, b0, b1, x + i * xs, xs, xsum + i * xss, xss, r, acc + 16 * i, 1)
#define FGG_MM_Q6_K_REGS(r) fgg_mm_q6_k_regs(w, b0, b1, x + i * xs, xs, r, acc + 16 * i)
#define FGG_MM_B32_REGS(r) fgg_mm_b32_regs(kind, w, b0, b1, x + i * xs, xs, xsum + i * xss, xss, r, acc + 16 * i)
FGG_MM_SPAN(fgg_mm_span_q2_k, FGG_MM_SPAN_BODY(FGG_MM_Q2_K_REGS,
            fgg_mm_exact_k_span(w, row_bytes, nw, b0, b1, 84, fgg_mm_q2_k_unpack, 16, 16, x, xs, xsum, xss, m, pairs, qf, acc, as)))
FGG_MM_SPAN(fgg_mm_span_q3_k, FGG_MM_SPAN_BODY(FGG_MM_Q3_K_REGS,
            fgg_mm_exact_k_span(w, row_bytes, nw, b0, b1, 110, fgg_mm_q3_k_unpack, 16, 0, x, xs, xsum, xss, m, pairs, qf, acc, as)))
FGG_MM_SPAN(fgg_mm_span_q4_k, FGG_MM_SPAN_BODY(FGG_MM_Q4_K_REGS,
            fgg_mm_exact_k_span(w, row_bytes, nw, b0, b1, 144, fgg_mm_q4_k_unpack, 8, 8, x, xs, xsum, xss, m, pairs, qf, acc, as)))
FGG_MM_SPAN(fgg_mm_span_q5_k, FGG_MM_SPAN_BODY(FGG_MM_Q5_K_REGS,
            fgg_mm_exact_k_span(w, row_bytes, nw, b0, b1, 176, fgg_mm_q5_k_unpack, 8, 8, x, xs, xsum, xss, m, pairs, qf, acc, as)))
FGG_MM_SPAN(fgg_mm_span_q6_k, FGG_MM_SPAN_BODY(FGG_MM_Q6_K_REGS,
            fgg_mm_exact_k_span(w, row_bytes, nw, b0, b1, 210, fgg_mm_q6_k_unpack, 16, 0, x, xs, xsum, xss, m, pairs, qf, acc, as)))
#define FGG_MM_IQ4_XS_REGS(r) fgg_mm_iq4_xs_regs(w, b0, b1, x + i * xs, xs, r, acc + 16 * i)
FGG_MM_SPAN(fgg_mm_span_iq4_xs, FGG_MM_SPAN_BODY(FGG_MM_IQ4_XS_REGS,
            fgg_mm_exact_k_span(w, row_bytes, nw, b0, b1, 136, fgg_mm_iq4_xs_unpack, 8, 0, x, xs, xsum, xss, m, pairs, qf, acc, as)))
#if FGG_HAVE_SSE2 && !FGG_HAVE_AVX2
/* 8 floats a * b (grid values times signs +-1: exact), 4 at a time. */
FGG_MM_ALWAYS_INLINE void fgg_mm_sse_mul8(fgg_mm_f8 *f, const float *a, const float *b)
{
    f->v[0] = _mm_mul_ps(_mm_loadu_ps(a), _mm_loadu_ps(b));
    f->v[1] = _mm_mul_ps(_mm_loadu_ps(a + 4), _mm_loadu_ps(b + 4));
}

/* IQ1_S's and IQ1_M's run j as floats 8 g + sigma (sigma = -1 or 1, the delta's sign): rows of
 * 8 g (fgg_mm_iq1_grid8) plus sigma, one add per 4 values (exact small integers). The sign is made
 * arithmetically: a branch on it, taken at random, cost 2.5x. */
FGG_MM_ALWAYS_INLINE void fgg_mm_sse_iq1_run_f(int kind, const uint8_t *wb, int j, fgg_mm_f8 f[4])
{
    const uint32_t qh = fgg_load_u16le(wb + 34 + 2 * j);
    for (int l = 0; l < 4; l++) {
        uint32_t index, minus;
        if (kind == FGG_MM_K_IQ1_S) {
            index = wb[2 + 4 * j + l] | (((qh >> (3 * l)) & 7) << 8);
            minus = qh >> 15;
        } else {  /* per row of 8: 3 high index bits, then the sign, in a nibble */
            const uint32_t h = (uint32_t)wb[32 + 2 * j + l / 2] >> (4 * (l & 1));
            index = wb[4 * j + l] | ((h & 7) << 8);
            minus = (h >> 3) & 1;
        }
        const float *g = fgg_mm_iq1_grid8[index];
        const __m128 sigma = _mm_set1_ps(1.0f - 2.0f * (float)minus);
        f[l].v[0] = _mm_add_ps(_mm_loadu_ps(g), sigma);
        f[l].v[1] = _mm_add_ps(_mm_loadu_ps(g + 4), sigma);
    }
}

/* Run j of IQ3_XXS, IQ3_S, IQ2_S, IQ2_XXS or IQ2_XS as 32 floats, the values of fgg_mm_iq_run,
 * from the dequantizers' float copies of the grids and sign patterns: SSE2 has no byte-to-float
 * widening, and here each 4 values are one multiply. The indices as in the fgg_mm_*_run functions
 * above. */
FGG_MM_ALWAYS_INLINE void fgg_mm_sse_iq_run_f(int kind, const uint8_t *wb, int j, fgg_mm_f8 f[4])
{
    if (kind == FGG_MM_K_IQ2_XXS || kind == FGG_MM_K_IQ2_XS) {
        /* IQ2_XXS: 4 grid bytes, then a word of four 7-bit sign codes; IQ2_XS: four u16 of a 9-bit
         * grid index and a 7-bit sign code */
        const uint8_t *qb = wb + 2 + 8 * j;
        const uint32_t aux = fgg_load_u32le(qb + 4);
        for (int l = 0; l < 4; l++) {
            const uint32_t p = fgg_load_u16le(qb + 2 * l);
            const float *g = kind == FGG_MM_K_IQ2_XXS ? fgg_iq2xxs_grid_f32[qb[l]] : fgg_iq2xs_grid_f32[p & 511];
            const float *sg = fgg_sign_f32[fgg_ksigns[kind == FGG_MM_K_IQ2_XXS ? (aux >> (7 * l)) & 127 : p >> 9]];
            fgg_mm_sse_mul8(&f[l], g, sg);
        }
        return;
    }
    if (kind == FGG_MM_K_IQ2_S) {
        const uint8_t *qs = wb + 2 + 4 * j, qh = wb[66 + j], *signs = wb + 34 + 4 * j;
        for (int l = 0; l < 4; l++) {
            const float *g = fgg_iq2s_grid_f32[qs[l] | (((qh >> (2 * l)) & 3) << 8)], *sg = fgg_sign_f32[signs[l]];
            fgg_mm_sse_mul8(&f[l], g, sg);
        }
        return;
    }
    for (int l = 0; l < 4; l++) {
        const float *ga, *gb, *sg;
        if (kind == FGG_MM_K_IQ3_XXS) {
            const uint8_t *g = wb + 2 + 8 * j;
            ga = fgg_iq3xxs_grid_f32[g[2 * l]];
            gb = fgg_iq3xxs_grid_f32[g[2 * l + 1]];
            sg = fgg_sign_f32[fgg_ksigns[(fgg_load_u32le(wb + 66 + 4 * j) >> (7 * l)) & 127]];
        } else {  /* IQ3_S */
            const uint8_t *qs = wb + 2 + 8 * j, qh = wb[66 + j];
            ga = fgg_iq3s_grid_f32[qs[2 * l] | (((qh >> (2 * l)) & 1) << 8)];
            gb = fgg_iq3s_grid_f32[qs[2 * l + 1] | (((qh >> (2 * l + 1)) & 1) << 8)];
            sg = fgg_sign_f32[wb[74 + 4 * j + l]];
        }
        f[l].v[0] = _mm_mul_ps(_mm_loadu_ps(ga), _mm_loadu_ps(sg));
        f[l].v[1] = _mm_mul_ps(_mm_loadu_ps(gb), _mm_loadu_ps(sg + 4));
    }
}

/* Run j of an IQ1, IQ2 or IQ3 type as 32 floats in registers, and its scales. */
FGG_MM_ALWAYS_INLINE void fgg_mm_sse_iq_scales_run(int kind, const uint8_t *wb, int j, int scale[2], fgg_mm_f8 f[4])
{
    fgg_mm_iq_scales(kind, wb, j, scale);
    if (kind == FGG_MM_K_IQ1_S || kind == FGG_MM_K_IQ1_M)
        fgg_mm_sse_iq1_run_f(kind, wb, j, f);
    else
        fgg_mm_sse_iq_run_f(kind, wb, j, f);
}
#endif

/* The IQ1, IQ2 and IQ3 types factored as the K-quants: a run's 32 signed integers q as the integer
 * path unpacks them (grid values with their signs: in the SIMD builds the row kernels' magnitudes
 * and signs, fgg_mm_iq_run_us; IQ1's 8 (g +- 1/8)) and S = d * scale (d as fgg_mm_iq_d has it) per
 * 32 values, or per 16 for IQ2_S, IQ2_XS and IQ1_M. Up to 4 rows of x each run goes into
 * registers (fgg_mm_runs_regs); more rows unpack a super-block's q as floats once for every row of
 * x. Measured against dequantizing first
 * (callgrind, avx2 build, one row): IQ3_S 4.16 -> 2.29 instructions per value, IQ3_XXS 3.06 ->
 * 2.53, IQ2_S 2.94 -> 2.60. IQ2_XXS and IQ2_XS (since fgg_mm_iq_run_us; 4096 x 4096, 2 threads, the
 * avx512 build): 1 row 1.11-1.19x and 0.96-1.07x, 64 rows 1.75x and 1.60x, the portable build level
 * at 1 row. IQ1_S and IQ1_M (one thread, 2048 x 4096): 1 row 0.99x and 1.15x (avx512), 0.86x and
 * 1.02x (avx2), 0.97x and 0.92x (portable, fgg_mm_sse_iq1_run_f; by fgg_mm_iq_run's bytes 0.57x and
 * 0.89x); 64 rows 1.5-2.3x on the SIMD builds. */
static inline int fgg_mm_iq_n_sub(int kind)
{
    return kind == FGG_MM_K_IQ2_S || kind == FGG_MM_K_IQ2_XS || kind == FGG_MM_K_IQ1_M ? 16 : 8;
}

/* A run kind's super-block scale d, and whether its sub-blocks are of 16 values (two per run). */
FGG_MM_ALWAYS_INLINE float fgg_mm_runs_d(int kind, const uint8_t *wb)
{
    if (kind == FGG_MM_K_TQ2_0 || kind == FGG_MM_K_TQ1_0)
        return fgg_half_to_float_scale(fgg_load_u16le(wb + (kind == FGG_MM_K_TQ2_0 ? 64 : 52)));
    return fgg_mm_iq_d(kind, wb);
}

FGG_MM_ALWAYS_INLINE int fgg_mm_runs_per16(int kind)
{
    return kind != FGG_MM_K_TQ2_0 && kind != FGG_MM_K_TQ1_0 && fgg_mm_iq_n_sub(kind) == 16;
}

/* A run kind's S per sub-block of run j from its integer scales (fgg_mm_iq_scales): d * scale,
 * the second only for the kinds with sub-blocks of 16. */
FGG_MM_ALWAYS_INLINE void fgg_mm_runs_S(int kind, const int scale[2], float d, float S[2])
{
    S[0] = d * (float)scale[0];
    if (fgg_mm_runs_per16(kind)) S[1] = d * (float)scale[1];
}

#if FGG_HAVE_AVX2
/* The run kinds' register kernel (the IQ grid types, TQ2_0, TQ1_0): run j of a super-block (32
 * values) as signed bytes, as its unpacker makes them, and the scales of its sub-blocks (S[0], or
 * S[0] and S[1] for two of 16), the same float steps. */
FGG_MM_ALWAYS_INLINE __m256i fgg_mm_kind_run(int kind, const uint8_t *wb, int j, float d, float S[2])
{
    if (kind == FGG_MM_K_TQ2_0) {
        S[0] = d;
        const __m256i v = _mm256_loadu_si256((const __m256i *)(wb + 32 * (j >> 2)));
        return _mm256_sub_epi8(_mm256_and_si256(_mm256_srli_epi16(v, 2 * (j & 3)), _mm256_set1_epi8(3)), _mm256_set1_epi8(1));
    }
    if (kind == FGG_MM_K_TQ1_0) {
        S[0] = d;
        return _mm256_sub_epi8(fgg_mm_tq1_0_digits(wb, j), _mm256_set1_epi8(1));
    }
    int scale[2];
    __m256i u;
    const __m256i v = fgg_mm_iq_run_signed(kind, wb, j, scale, &u);
    fgg_mm_runs_S(kind, scale, d, S);
    return v;
}

/* Whether fgg_mm_runs_regs takes a run kind's values as floats straight from its rows of 8
 * (fgg_mm_grid_run_f). IQ2_XS and IQ2_S measured level so (0.96-1.04x; their signs take a table
 * lookup more, or bits to spread), so they keep the bytes. */
FGG_MM_ALWAYS_INLINE int fgg_mm_runs_grid8(int kind)
{
    return kind == FGG_MM_K_IQ2_XXS || kind == FGG_MM_K_IQ1_S || kind == FGG_MM_K_IQ1_M;
}

/* 8 magnitudes (row: 8 bytes) as floats, negated where bit l of ``signs`` is set: an exact flip of
 * the sign bit by a mask from fgg_mm_q1_0_signs (its rows set the sign where a bit is clear). */
FGG_MM_ALWAYS_INLINE __m256 fgg_mm_grid8_f(const uint8_t *row, uint32_t signs)
{
    const __m256 mag = _mm256_cvtepi32_ps(_mm256_cvtepu8_epi32(_mm_loadl_epi64((const __m128i *)row)));
    return _mm256_xor_ps(mag, _mm256_loadu_ps((const float *)fgg_mm_q1_0_signs[~signs & 0xffu]));
}

/* 8 signed values (row: 8 bytes, IQ1's 8 g + sigma of fgg_mm_iq1_m_values) as floats. */
FGG_MM_ALWAYS_INLINE __m256 fgg_mm_row8_f(const uint64_t *row)
{
    return _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(_mm_loadl_epi64((const __m128i *)row)));
}

/* Run j of a fgg_mm_runs_grid8 kind as 4 vectors of 8 floats (the values fgg_mm_kind_run gives, so
 * the same floats), each 8 widened from its row in memory, IQ2_XXS's signs set by a table: the run
 * made in bytes and widened from registers took 1.09-1.29x the time at one row of x, 1.10-1.17x at
 * three (avx2 build, Zen 2, IQ2_XXS, IQ1_S, IQ1_M). */
FGG_MM_ALWAYS_INLINE void fgg_mm_grid_run_f(int kind, const uint8_t *wb, int j, __m256 f[4])
{
    switch (kind) {
    case FGG_MM_K_IQ2_XXS: {
        const uint8_t *q = wb + 2 + 8 * j;
        const uint32_t aux = fgg_load_u32le(q + 4);
        for (int l = 0; l < 4; l++) f[l] = fgg_mm_grid8_f(fgg_iq2xxs_grid[q[l]], fgg_ksigns[(aux >> (7 * l)) & 127]);
        break;
    }
    case FGG_MM_K_IQ1_S: {
        const uint8_t *qs = wb + 2 + 4 * j;
        const uint32_t qh = fgg_load_u16le(wb + 34 + 2 * j), minus = (qh >> 4) & 0x800;
        for (int l = 0; l < 4; l++) f[l] = fgg_mm_row8_f(&fgg_mm_iq1_m_values[qs[l] | (((qh >> (3 * l)) & 7) << 8) | minus]);
        break;
    }
    default: { /* IQ1_M: per row its 3 high index bits, then the sign */
        const uint8_t *qs = wb + 4 * j;
        const uint32_t h = fgg_load_u16le(wb + 32 + 2 * j);
        for (int l = 0; l < 4; l++) f[l] = fgg_mm_row8_f(&fgg_mm_iq1_m_values[qs[l] | (((h >> (4 * l)) & 0xf) << 8)]);
        break;
    }
    }
}

/* Super-blocks b0..b1 of one weight row of a run kind times R <= 4 rows of x (row i at x + i * xs),
 * added into acc + 16 * i: each run goes from the bytes into registers (the fgg_mm_runs_grid8 kinds
 * from their rows in memory; the others made in bytes, all 8 runs stored and widened from memory,
 * fgg_mm_i8x32_load_f8x4), converted once for the R rows, and each row gets fgg_mm_sb_rows'
 * operations in its order (the same bits as the unpacked span). Against the unpacked span, one
 * thread, 4096 x 14336, one row: avx512 build 1.19-1.70x (IQ3_S 1.19x, by its gather then), avx2
 * build 1.14-1.48x, portable build (below) IQ types 1.28-1.57x, TQ1_0 and TQ2_0 1.03-1.08x; 2048 x
 * 14336, 2 rows 1.17-1.61x, 4 rows 1.03-1.17x (portable 1.19-1.43x). Those runs widened from
 * registers instead of stored took 1.01-1.11x the time at one row, 1.18-1.32x at 4 rows (IQ2_XS,
 * IQ2_S, IQ3_S, IQ3_XXS; Zen 2). */
FGG_MM_ALWAYS_INLINE void fgg_mm_runs_regs(int kind, const uint8_t *w, ptrdiff_t b0, ptrdiff_t b1, const float *x,
                                           ptrdiff_t xs, const int R, float *acc)
{
    const ptrdiff_t sb_bytes = fgg_mm_k_bytes(kind);
    const int per16 = fgg_mm_runs_per16(kind);
    __m256 a[4];
    for (int i = 0; i < R; i++) a[i] = _mm256_loadu_ps(acc + 16 * i);
    for (ptrdiff_t b = b0; b < b1; b++) {
        const uint8_t *wb = w + sb_bytes * b;
        fgg_mm_prefetch_ahead(wb, sb_bytes);
        const float d = fgg_mm_runs_d(kind, wb);
        const float *xb = x + 256 * b;
        if (fgg_mm_runs_grid8(kind)) {
#pragma GCC unroll 8
            for (int j = 0; j < 8; j++) {
                int scale[2];
                float S[2];
                __m256 f[4];
                fgg_mm_iq_scales(kind, wb, j, scale);
                fgg_mm_runs_S(kind, scale, d, S);
                fgg_mm_grid_run_f(kind, wb, j, f);
                fgg_mm_run_rows(a, R, f, xb + 32 * j, xs, S, per16);
            }
        } else {
            int8_t q8[256] __attribute__((aligned(32)));
            float S[16];
            for (int j = 0; j < 8; j++)
                _mm256_store_si256((__m256i *)(q8 + 32 * j), fgg_mm_kind_run(kind, wb, j, d, S + (per16 ? 2 * j : j)));
            fgg_mm_stored_runs(a, R, q8, xb, xs, S, per16);
        }
    }
    for (int i = 0; i < R; i++) _mm256_storeu_ps(acc + 16 * i, a[i]);
}
#elif FGG_HAVE_SSE2
/* The portable build's form: run j of a run kind as 32 floats in registers (the values its unpacker
 * stores) and its scales, then fgg_mm_sse_sub for each row: the same float steps. */
FGG_MM_ALWAYS_INLINE void fgg_mm_kind_run(int kind, const uint8_t *wb, int j, float d, float S[2], fgg_mm_f8 f[4])
{
    if (kind == FGG_MM_K_TQ2_0 || kind == FGG_MM_K_TQ1_0) {
        S[0] = d;  /* the codes or digits less 1 */
        fgg_mm_w32 digits;
        if (kind == FGG_MM_K_TQ1_0) digits = fgg_mm_tq1_0_digits(wb, j);
        for (int k = 0; k < 2; k++) {
            __m128i u;
            if (kind == FGG_MM_K_TQ2_0)
                u = _mm_and_si128(_mm_srli_epi16(_mm_loadu_si128((const __m128i *)(wb + 32 * (j >> 2) + 16 * k)), 2 * (j & 3)),
                                  _mm_set1_epi8(3));
            else
                u = _mm_loadu_si128((const __m128i *)(digits.b + 16 * k));
            fgg_mm_sse_u8_to_f(u, _mm_set1_ps(8388608.0f + 1.0f), f + 2 * k);
        }
        return;
    }
    int scale[2];
    fgg_mm_sse_iq_scales_run(kind, wb, j, scale, f);
    fgg_mm_runs_S(kind, scale, d, S);
}

FGG_MM_ALWAYS_INLINE void fgg_mm_runs_regs(int kind, const uint8_t *w, ptrdiff_t b0, ptrdiff_t b1, const float *x,
                                           ptrdiff_t xs, const int R, float *acc)
{
    const ptrdiff_t sb_bytes = fgg_mm_k_bytes(kind);
    const int per16 = fgg_mm_runs_per16(kind);
    __m128 a[4][2];
    fgg_mm_sse_acc_load(a, R, acc);
    for (ptrdiff_t b = b0; b < b1; b++) {
        const uint8_t *wb = w + sb_bytes * b;
        fgg_mm_prefetch_ahead(wb, sb_bytes);
        const float d = fgg_mm_runs_d(kind, wb);
        for (int j = 0; j < 8; j++) {
            float S[2];
            fgg_mm_f8 f[4];
            fgg_mm_kind_run(kind, wb, j, d, S, f);
            for (int i = 0; i < R; i++) {
                const float *xi = x + i * xs + 256 * b + 32 * j;
                if (per16) {
                    fgg_mm_sse_sub(a[i], f, 2, xi, S[0]);
                    fgg_mm_sse_sub(a[i], f + 2, 2, xi + 16, S[1]);
                } else {
                    fgg_mm_sse_sub(a[i], f, 4, xi, S[0]);
                }
            }
        }
    }
    fgg_mm_sse_acc_store(a, R, acc);
}
#else
/* Without SSE2: run j as 32 signed bytes, as the SIMD form. */
FGG_MM_ALWAYS_INLINE fgg_mm_w32 fgg_mm_kind_run(int kind, const uint8_t *wb, int j, float d, float S[2])
{
    fgg_mm_w32 v;
    if (kind == FGG_MM_K_TQ2_0) {
        S[0] = d;
        for (int l = 0; l < 32; l++) v.b[l] = (int8_t)(((wb[32 * (j >> 2) + l] >> (2 * (j & 3))) & 3) - 1);
        return v;
    }
    if (kind == FGG_MM_K_TQ1_0) {
        S[0] = d;
        v = fgg_mm_tq1_0_digits(wb, j);
        for (int l = 0; l < 32; l++) v.b[l] = (int8_t)(v.b[l] - 1);
        return v;
    }
    int scale[2];
    v = fgg_mm_iq_run(kind, wb, j, scale);
    fgg_mm_runs_S(kind, scale, d, S);
    return v;
}
#endif

/* A run kind's super-block unpacked for more rows of x than the register kernel takes: its 256 q
 * as floats (fgg_mm_kind_run's runs) and S per sub-block (8 of 32 values, or 16 of 16). */
FGG_MM_ALWAYS_INLINE void fgg_mm_runs_unpack(int kind, const uint8_t *wb, float *qf, float *S)
{
    const float d = fgg_mm_runs_d(kind, wb);
    const int per16 = fgg_mm_runs_per16(kind);
#pragma GCC unroll 8 /* left rolled by GCC; unrolled 1.02-1.35x faster at 1 row (avx2 build, IQ types) */
    for (int j = 0; j < 8; j++) {
        float s[2];
        float *q = qf + 32 * j;
#if FGG_HAVE_AVX2
        fgg_mm_i8x32_to_f(fgg_mm_kind_run(kind, wb, j, d, s), q);
#elif FGG_HAVE_SSE2
        fgg_mm_f8 f[4];
        fgg_mm_kind_run(kind, wb, j, d, s, f);
        for (int c = 0; c < 8; c++) _mm_storeu_ps(q + 4 * c, f[c >> 1].v[c & 1]);
#else
        const fgg_mm_w32 v = fgg_mm_kind_run(kind, wb, j, d, s);
        for (int l = 0; l < 32; l++) q[l] = (float)v.b[l];
#endif
        if (per16) {
            S[2 * j] = s[0];
            S[2 * j + 1] = s[1];
        } else {
            S[j] = s[0];
        }
    }
}

/* Each run kind's span: the register kernel up to FGG_MM_RUNS_REG_ROWS rows of x (a second pass of 4
 * rows unpacks every run again, which cost more than the unpacked span's stores: 5 to 8 rows
 * measured 0.72-0.87x of its speed), else its unpacker: 8 sub-blocks of 32 (TQ2_0: q = code - 1,
 * the codes laid out as Q2_K's; TQ1_0: q = digit - 1, S = d) or 16 of 16 (IQ2_S, IQ2_XS, IQ1_M).
 * The register kernel in a function of its own (NAME_regs): inlined into the span, IQ3_S's took
 * 1.12-1.16x the time at 1 and 4 rows (avx2 build, Zen 2, one thread, 2048 x 4096). */
#define FGG_MM_RUNS_REG_ROWS 4
#define FGG_MM_RUNS_REGS(r) fgg_mm_runs_regs(kind, w, b0, b1, x + i * xs, xs, r, acc + 16 * i)
#if FGG_HAVE_SSE2
#define FGG_MM_RUNS_REGS_FN(NAME, KIND)                                                               \
    FGG_MM_NOINLINE static void NAME##_regs(const uint8_t *w, ptrdiff_t row_bytes, int nw, ptrdiff_t b0,  \
                                            ptrdiff_t b1, const float *x, ptrdiff_t xs, int m, float *acc, \
                                            ptrdiff_t as)                                             \
    {                                                                                                 \
        const int kind = KIND;                                                                        \
        for (int r = 0; r < nw; r++, w += row_bytes, acc += as) FGG_MM_BY_4_ROWS(m, FGG_MM_RUNS_REGS) \
    }
#define FGG_MM_RUNS_REGS_CALL(NAME)                                                                   \
    if (m <= FGG_MM_RUNS_REG_ROWS && !pairs) {                                                        \
        NAME##_regs(w, row_bytes, nw, b0, b1, x, xs, m, acc, as);                                     \
        return;                                                                                       \
    }
#else
#define FGG_MM_RUNS_REGS_FN(NAME, KIND)
#define FGG_MM_RUNS_REGS_CALL(NAME)
#endif
#define FGG_MM_RUNS_KIND_SPAN(NAME, KIND)                                                             \
    static inline void NAME##_unpack(const uint8_t *wb, float *qf, float *S, float *M)                \
    {                                                                                                 \
        (void)M;                                                                                      \
        fgg_mm_runs_unpack(KIND, wb, qf, S);                                                          \
    }                                                                                                 \
    FGG_MM_RUNS_REGS_FN(NAME, KIND)                                                                   \
    FGG_MM_SPAN(NAME, FGG_MM_RUNS_REGS_CALL(NAME)                                                     \
                fgg_mm_exact_k_span(w, row_bytes, nw, b0, b1, fgg_mm_k_bytes(KIND), NAME##_unpack,    \
                                    fgg_mm_runs_per16(KIND) ? 16 : 8, 0, x, xs, xsum, xss, m, pairs, qf, acc, as);)
FGG_MM_RUNS_KIND_SPAN(fgg_mm_span_iq2_s, FGG_MM_K_IQ2_S)
FGG_MM_RUNS_KIND_SPAN(fgg_mm_span_iq3_xxs, FGG_MM_K_IQ3_XXS)
FGG_MM_RUNS_KIND_SPAN(fgg_mm_span_iq3_s, FGG_MM_K_IQ3_S)
FGG_MM_RUNS_KIND_SPAN(fgg_mm_span_iq2_xxs, FGG_MM_K_IQ2_XXS)
FGG_MM_RUNS_KIND_SPAN(fgg_mm_span_iq2_xs, FGG_MM_K_IQ2_XS)
FGG_MM_RUNS_KIND_SPAN(fgg_mm_span_iq1_s, FGG_MM_K_IQ1_S)
FGG_MM_RUNS_KIND_SPAN(fgg_mm_span_iq1_m, FGG_MM_K_IQ1_M)
FGG_MM_RUNS_KIND_SPAN(fgg_mm_span_tq2_0, FGG_MM_K_TQ2_0)
FGG_MM_RUNS_KIND_SPAN(fgg_mm_span_tq1_0, FGG_MM_K_TQ1_0)
#undef FGG_MM_RUNS_KIND_SPAN
#undef FGG_MM_RUNS_REGS
#undef FGG_MM_RUNS_REGS_FN
#undef FGG_MM_RUNS_REGS_CALL

/* Q1_0 factored as the per-32 kinds, d shared by a block's 4 runs: per run of 32 values the 8 lanes
 * t = s_0 x_0 + s_1 x_1 + s_2 x_2 + s_3 x_3 in order (s_c the signs of values 8c..8c + 7, +1 or
 * -1: s x is x or -x, exact, so a flip of x's sign bit), then a + d * t. No multiply per value and
 * no conversion: a value costs a sign flip and an add per row of x (the sign masks, one table row
 * per 8 values, shared by up to 4 rows of x). All rows of x take this kernel, 4 at a time. Row
 * i's values 8v..8v + 7 at xr[i] + vstep * v: x's rows in place (vstep 8) or the avx512 build's
 * panel of pairs (vstep 16). Blocks b0..b1 of one weight row, added into acc + 16 * i. */
#if FGG_HAVE_AVX2
FGG_MM_ALWAYS_INLINE void fgg_mm_q1_0_regs(const uint8_t *w, ptrdiff_t b0, ptrdiff_t b1, const float *const *xr,
                                           const ptrdiff_t vstep, const int R, float *acc)
{
    __m256 a[4];
    for (int i = 0; i < R; i++) a[i] = _mm256_loadu_ps(acc + 16 * i);
    for (ptrdiff_t b = b0; b < b1; b++) {
        const uint8_t *wb = w + 18 * b;
        fgg_mm_prefetch_ahead(wb, 18);
        const __m256 d = _mm256_set1_ps(fgg_mm_b_scale(FGG_MM_B_Q1_0, wb));
        for (int r = 0; r < 4; r++) {
            __m256 sg[4];
            for (int c = 0; c < 4; c++) sg[c] = _mm256_loadu_ps((const float *)fgg_mm_q1_0_signs[wb[2 + 4 * r + c]]);
            for (int i = 0; i < R; i++) {
                const float *xv = xr[i] + vstep * (16 * b + 4 * r);
                __m256 t = _mm256_xor_ps(sg[0], _mm256_loadu_ps(xv));
                for (int c = 1; c < 4; c++) t = _mm256_add_ps(t, _mm256_xor_ps(sg[c], _mm256_loadu_ps(xv + vstep * c)));
                a[i] = _mm256_add_ps(a[i], _mm256_mul_ps(d, t));
            }
        }
    }
    for (int i = 0; i < R; i++) _mm256_storeu_ps(acc + 16 * i, a[i]);
}
#elif FGG_HAVE_SSE2
FGG_MM_ALWAYS_INLINE void fgg_mm_q1_0_regs(const uint8_t *w, ptrdiff_t b0, ptrdiff_t b1, const float *const *xr,
                                           const ptrdiff_t vstep, const int R, float *acc)
{
    __m128 a[4][2];
    fgg_mm_sse_acc_load(a, R, acc);
    for (ptrdiff_t b = b0; b < b1; b++) {
        const uint8_t *wb = w + 18 * b;
        fgg_mm_prefetch_ahead(wb, 18);
        const __m128 d = _mm_set1_ps(fgg_mm_b_scale(FGG_MM_B_Q1_0, wb));
        for (int r = 0; r < 4; r++) {
            __m128 t[4][2];
            for (int c = 0; c < 4; c++) {
                const uint32_t *sg = fgg_mm_q1_0_signs[wb[2 + 4 * r + c]];
                for (int h = 0; h < 2; h++) {
                    const __m128 sh = _mm_loadu_ps((const float *)(sg + 4 * h));
                    for (int i = 0; i < R; i++) {
                        const __m128 p = _mm_xor_ps(sh, _mm_load_ps(xr[i] + vstep * (16 * b + 4 * r + c) + 4 * h));
                        t[i][h] = c ? _mm_add_ps(t[i][h], p) : p;
                    }
                }
            }
            for (int i = 0; i < R; i++)
                for (int h = 0; h < 2; h++) a[i][h] = _mm_add_ps(a[i][h], _mm_mul_ps(d, t[i][h]));
        }
    }
    fgg_mm_sse_acc_store(a, R, acc);
}
#else
FGG_MM_ALWAYS_INLINE void fgg_mm_q1_0_regs(const uint8_t *w, ptrdiff_t b0, ptrdiff_t b1, const float *const *xr,
                                           const ptrdiff_t vstep, const int R, float *acc)
{
    for (ptrdiff_t b = b0; b < b1; b++) {
        const uint8_t *wb = w + 18 * b;
        const float d = fgg_mm_b_scale(FGG_MM_B_Q1_0, wb);
        for (int r = 0; r < 4; r++) {
            const uint32_t bits = fgg_load_u32le(wb + 2 + 4 * r);
            for (int i = 0; i < R; i++) {
                float t[8];
                for (int c = 0; c < 4; c++) {
                    const float *xv = xr[i] + vstep * (16 * b + 4 * r + c);
                    for (int l = 0; l < 8; l++) {
                        const float p = (bits >> (8 * c + l)) & 1 ? xv[l] : -xv[l];
                        t[l] = c ? t[l] + p : p;
                    }
                }
                for (int l = 0; l < 8; l++) acc[16 * i + l] = acc[16 * i + l] + d * t[l];
            }
        }
    }
}
#endif

/* Rows i..i + R of x for fgg_mm_q1_0_regs: in place (8 floats from one 8 values to the next), or
 * with pairs the avx512 build's panel of pairs (16; a constant 0 in the other builds). */
FGG_MM_ALWAYS_INLINE void fgg_mm_q1_0_rows(const uint8_t *w, ptrdiff_t b0, ptrdiff_t b1, const float *x, ptrdiff_t xs,
                                           int pairs, int i, const int R, float *acc)
{
    const int paired = FGG_MM_HAVE_PAIRS && pairs;
    const float *xr[4] = {x, x, x, x};
    for (int k = 0; k < R; k++) xr[k] = paired ? x + ((i + k) >> 1) * xs + 8 * ((i + k) & 1) : x + (i + k) * xs;
    fgg_mm_q1_0_regs(w, b0, b1, xr, paired ? 16 : 8, R, acc + 16 * i);
}

/* Q1_0's span: every row count by fgg_mm_q1_0_regs, 4 rows of x at a time. */
#define FGG_MM_Q1_0_REGS(r) fgg_mm_q1_0_rows(w, b0, b1, x, xs, pairs, i, r, acc)
FGG_MM_SPAN(fgg_mm_span_q1_0, for (int r = 0; r < nw; r++, w += row_bytes, acc += as) FGG_MM_BY_4_ROWS(m, FGG_MM_Q1_0_REGS))
#undef FGG_MM_Q1_0_REGS

/* The per-32 kinds: one span function per type, each with its kind a constant. */
#define FGG_MM_B32_SPAN(NAME, KIND)                                                                   \
    FGG_MM_SPAN(NAME, const int kind = KIND;                                                          \
                FGG_MM_SPAN_BODY(FGG_MM_B32_REGS, fgg_mm_exact_b32_span(kind, w, row_bytes, nw, b0, b1, x, xs, xsum, xss, m, pairs, qf, acc, as)))
FGG_MM_B32_SPAN(fgg_mm_span_q8_0, FGG_MM_B_Q8_0)
FGG_MM_B32_SPAN(fgg_mm_span_q4_0, FGG_MM_B_Q4_0)
FGG_MM_B32_SPAN(fgg_mm_span_q5_0, FGG_MM_B_Q5_0)
FGG_MM_B32_SPAN(fgg_mm_span_q4_1, FGG_MM_B_Q4_1)
FGG_MM_B32_SPAN(fgg_mm_span_q5_1, FGG_MM_B_Q5_1)
FGG_MM_B32_SPAN(fgg_mm_span_iq4_nl, FGG_MM_B_IQ4_NL)
FGG_MM_B32_SPAN(fgg_mm_span_mxfp4, FGG_MM_B_MXFP4)
#undef FGG_MM_B32_SPAN
#undef FGG_MM_SPAN
#undef FGG_MM_SPAN_BODY
#ifdef FGG_MM_SCHEDULED
#pragma GCC pop_options
#undef FGG_MM_SCHEDULED
#endif

#if FGG_MM_SSE2_K_BUILD
/* ------------------------------------------------------------------------------------------ */
/* The portable build's integer kernels of the K kinds (and below of Q8_0, Q4_0, Q5_0, Q4_1, Q5_1,
 * IQ4_NL, MXFP4 and Q1_0): x widened to int16 once per product (fgg_mm_x1k16), then each weight
 * row's codes (Q2_K to Q6_K from their fields; the other K kinds by fgg_mm_sse_ksb_totals) made as
 * int16 words in registers and met by madd, up to 4 rows of x per pass. The integer totals of
 * fgg_mm_rows_k, then its float steps: the same bits. Against fgg_mm_rows_k's portable loop (unpack
 * to a fgg_mm_ksb, scales multiplied in, x widened per weight row), one row of x, one thread, 4096 x
 * 14336: Q4_K 10.6 -> 5.7 ms, Q6_K 13.5 -> 6.9. */

/* The low 32 bits of the total of a's lanes 0 and 2 (the products of _mm_mul_epu32). */
FGG_MM_ALWAYS_INLINE int32_t fgg_mm_sse_total02(__m128i a)
{
    return (int32_t)((uint32_t)_mm_cvtsi128_si32(a) + (uint32_t)_mm_cvtsi128_si32(_mm_srli_si128(a, 8)));
}

FGG_MM_ALWAYS_INLINE int32_t fgg_mm_sse_total4(__m128i a)
{
    a = _mm_add_epi32(a, _mm_shuffle_epi32(a, 0x4e));
    return _mm_cvtsi128_si32(_mm_add_epi32(a, _mm_shuffle_epi32(a, 0xb1)));
}

/* a + s * sc lane by lane in 64-bit slots (SSE2 has no 32-bit lane multiply: _mm_mul_epu32 takes
 * lanes 0 and 2; their low 32 bits are the signed products' too, and only totals are used). */
FGG_MM_ALWAYS_INLINE __m128i fgg_mm_sse_add_scaled(__m128i a, __m128i s, __m128i sc)
{
    return _mm_add_epi32(a, _mm_add_epi32(_mm_mul_epu32(s, sc), _mm_mul_epu32(_mm_srli_epi64(s, 32), sc)));
}

/* x's 16 sums of 16 (xb->bsum) times the 16 int16 factors lo (sums 0-7) and hi (8-15): the total. */
FGG_MM_ALWAYS_INLINE int32_t fgg_mm_sse_bsum_total(const fgg_mm_x1k16 *xb, __m128i lo, __m128i hi)
{
    return fgg_mm_sse_total4(_mm_add_epi32(_mm_madd_epi16(_mm_load_si128((const __m128i *)xb->bsum), lo),
                                           _mm_madd_epi16(_mm_load_si128((const __m128i *)(xb->bsum + 8)), hi)));
}

/* 16 signed scale bytes as int16: sc16 (scales 0-7, 8-15) and, for a broadcast each, sc. */
FGG_MM_ALWAYS_INLINE void fgg_mm_sse_scales16(__m128i sc8, __m128i sc16[2], int16_t sc[16])
{
    sc16[0] = _mm_srai_epi16(_mm_unpacklo_epi8(sc8, sc8), 8);
    sc16[1] = _mm_srai_epi16(_mm_unpackhi_epi8(sc8, sc8), 8);
    _mm_storeu_si128((__m128i *)sc, sc16[0]);
    _mm_storeu_si128((__m128i *)(sc + 8), sc16[1]);
}

/* 8 int16 words lo against values lo_at..lo_at + 7 of rows x[0..R-1] (each at x[i * xs]) and 8 hi
 * against hi_at..hi_at + 7: their pair sums added to a[i]. */
FGG_MM_ALWAYS_INLINE void fgg_mm_sse_madd_rows(__m128i *a, const int R, __m128i lo, int lo_at, __m128i hi, int hi_at,
                                               const fgg_mm_x1k16 *x, ptrdiff_t xs)
{
    for (int i = 0; i < R; i++) {
        const int16_t *xq = x[i * xs].q + lo_at;
        a[i] = _mm_add_epi32(a[i], _mm_add_epi32(_mm_madd_epi16(lo, _mm_load_si128((const __m128i *)xq)),
                                                 _mm_madd_epi16(hi, _mm_load_si128((const __m128i *)(xq + (hi_at - lo_at))))));
    }
}

/* 16 codes u (bytes) times the scale s (|u * s| < 2^15) against values at..at + 15 of rows x[0..R-1]
 * (each at x[i * xs]): added to a[i]. */
FGG_MM_ALWAYS_INLINE void fgg_mm_sse_group16(__m128i *a, const int R, __m128i u, int16_t s, const fgg_mm_x1k16 *x,
                                             ptrdiff_t xs, int at)
{
    const __m128i z = _mm_setzero_si128(), sv = _mm_set1_epi16(s);
    const __m128i lo = _mm_mullo_epi16(_mm_unpacklo_epi8(u, z), sv), hi = _mm_mullo_epi16(_mm_unpackhi_epi8(u, z), sv);
    fgg_mm_sse_madd_rows(a, R, lo, at, hi, at + 8, x, xs);
}

/* Q4_K (is_q5 0) or Q5_K super-block wb against rows x[0..R-1] (each at x[i * xs]): the totals of
 * fgg_mm_rows_k, tot[i] the values' and mtot[i] the mins'. */
FGG_MM_ALWAYS_INLINE void fgg_mm_sse_q45_k_totals(const uint8_t *wb, const fgg_mm_x1k16 *x, ptrdiff_t xs, const int R,
                                                  const int is_q5, int32_t *tot, int32_t *mtot)
{
    const __m128i z = _mm_setzero_si128(), low = _mm_set1_epi8(15), fifth = _mm_set1_epi8(16);
    const uint8_t *qs = wb + (is_q5 ? 48 : 16);
    uint32_t words[4];
    fgg_mm_k4_scales(wb + 4, words);
    const __m128i m16 = _mm_unpackhi_epi8(_mm_setr_epi32((int)words[0], (int)words[1], (int)words[2], (int)words[3]), z);
    __m128i a[4];
    for (int i = 0; i < R; i++) {  /* min j is the factor of sums 2j and 2j + 1 */
        mtot[i] = fgg_mm_sse_bsum_total(x + i * xs, _mm_unpacklo_epi16(m16, m16), _mm_unpackhi_epi16(m16, m16));
        a[i] = z;
    }
#pragma GCC unroll 4
    for (int g = 0; g < 4; g++) {  /* (constant shifts for Q5_K's fifth bits: unrolled) */
        __m128i S[2][4];  /* [sub-block 2g + j][row] */
        for (int i = 0; i < R; i++) S[0][i] = S[1][i] = z;
        for (int k = 0; k < 2; k++) {
            const __m128i v = _mm_loadu_si128((const __m128i *)(qs + 32 * g + 16 * k));
            __m128i u[2] = {_mm_and_si128(v, low), _mm_and_si128(_mm_srli_epi16(v, 4), low)};
            if (is_q5)  /* the fifth bits: bit 2g + j of qh, to bit 4 */
                for (int j = 0; j < 2; j++) {
                    const __m128i qh = _mm_loadu_si128((const __m128i *)(wb + 16 + 16 * k));
                    u[j] = _mm_or_si128(u[j], _mm_and_si128(fgg_mm_sse_bit_to(qh, 2 * g + j, 4), fifth));
                }
            for (int j = 0; j < 2; j++) {
                const int at = 64 * g + 32 * j + 16 * k;
                fgg_mm_sse_madd_rows(S[j], R, _mm_unpacklo_epi8(u[j], z), at, _mm_unpackhi_epi8(u[j], z), at + 8, x, xs);
            }
        }
        const uint32_t sc2 = words[g >> 1] >> (16 * (g & 1));  /* the scales of sub-blocks 2g, 2g + 1 */
        const __m128i sc0 = _mm_set1_epi32((int)(sc2 & 0xff)), sc1 = _mm_set1_epi32((int)((sc2 >> 8) & 0xff));
        for (int i = 0; i < R; i++) a[i] = fgg_mm_sse_add_scaled(fgg_mm_sse_add_scaled(a[i], S[0][i], sc0), S[1][i], sc1);
    }
    for (int i = 0; i < R; i++) tot[i] = fgg_mm_sse_total02(a[i]);
}

/* Q6_K super-block wb against rows x[0..R-1]: fgg_mm_rows_k's total, values less the offsets' term. */
FGG_MM_ALWAYS_INLINE void fgg_mm_sse_q6_k_totals(const uint8_t *wb, const fgg_mm_x1k16 *x, ptrdiff_t xs, const int R, int32_t *tot)
{
    const __m128i low = _mm_set1_epi8(15), high = _mm_set1_epi8(0x30);
    __m128i sc16[2];
    int16_t sc[16];
    fgg_mm_sse_scales16(_mm_loadu_si128((const __m128i *)(wb + 192)), sc16, sc);  /* |code * scale| <= 63 * 128 */
    __m128i a[4];
    for (int i = 0; i < R; i++) a[i] = _mm_setzero_si128();
    for (int h = 0; h < 2; h++)
        for (int k = 0; k < 2; k++) {  /* values 128h + 32c + 16k .. + 15, c = 0..3: one scale each */
            const uint8_t *ql = wb + 64 * h + 16 * k;
            const __m128i A = _mm_loadu_si128((const __m128i *)ql), B = _mm_loadu_si128((const __m128i *)(ql + 32));
            const __m128i H = _mm_loadu_si128((const __m128i *)(wb + 128 + 32 * h + 16 * k));
            const __m128i u[4] = {
                _mm_or_si128(_mm_and_si128(A, low), _mm_and_si128(_mm_slli_epi16(H, 4), high)),
                _mm_or_si128(_mm_and_si128(B, low), _mm_and_si128(_mm_slli_epi16(H, 2), high)),
                _mm_or_si128(_mm_and_si128(_mm_srli_epi16(A, 4), low), _mm_and_si128(H, high)),
                _mm_or_si128(_mm_and_si128(_mm_srli_epi16(B, 4), low), _mm_and_si128(_mm_srli_epi16(H, 2), high)),
            };
            for (int c = 0; c < 4; c++) {
                const int grp = 8 * h + 2 * c + k;
                fgg_mm_sse_group16(a, R, u[c], sc[grp], x, xs, 16 * grp);
            }
        }
    for (int i = 0; i < R; i++) tot[i] = fgg_mm_sse_total4(a[i]) - 32 * fgg_mm_sse_bsum_total(x + i * xs, sc16[0], sc16[1]);
}

/* Q2_K (is_q3 0) or Q3_K super-block wb against rows x[0..R-1]: fgg_mm_rows_k's totals, tot[i] the
 * values' (Q3_K: less the offsets' term) and mtot[i] Q2_K's mins'. Scales per 16 values, taken
 * into the codes (pmullw: |code * scale| <= 7 * 32). */
FGG_MM_ALWAYS_INLINE void fgg_mm_sse_q23_k_totals(const uint8_t *wb, const fgg_mm_x1k16 *x, ptrdiff_t xs, const int R,
                                                  const int is_q3, int32_t *tot, int32_t *mtot)
{
    const __m128i z = _mm_setzero_si128(), three = _mm_set1_epi8(3), four = _mm_set1_epi8(4);
    __m128i sc8, mn8 = z;
    if (is_q3) {  /* 6-bit scales less 32 */
        uint32_t words[4];
        fgg_mm_q3_k_scale_words(wb, words);
        sc8 = _mm_sub_epi8(_mm_setr_epi32((int)words[0], (int)words[1], (int)words[2], (int)words[3]), _mm_set1_epi8(32));
    } else {  /* a scale (low nibble) and a min (high nibble) per 16 */
        const __m128i v = _mm_loadu_si128((const __m128i *)wb), low = _mm_set1_epi8(15);
        sc8 = _mm_and_si128(v, low);
        mn8 = _mm_and_si128(_mm_srli_epi16(v, 4), low);
    }
    __m128i sc16[2];
    int16_t sc[16];
    fgg_mm_sse_scales16(sc8, sc16, sc);
    const __m128i hm[2] = {_mm_loadu_si128((const __m128i *)wb), _mm_loadu_si128((const __m128i *)(wb + 16))};  /* Q3_K's */
    const uint8_t *qs = wb + (is_q3 ? 32 : 16);
    __m128i a[4];
    for (int i = 0; i < R; i++) a[i] = z;
#pragma GCC unroll 8
    for (int j = 0; j < 8; j++)  /* values 32j + 16k .. + 15: scale 2j + k (constant shifts: unrolled) */
        for (int k = 0; k < 2; k++) {
            __m128i u = _mm_and_si128(_mm_srli_epi16(_mm_loadu_si128((const __m128i *)(qs + 32 * (j >> 2) + 16 * k)), 2 * (j & 3)), three);
            if (is_q3)
                u = _mm_or_si128(u, _mm_and_si128(fgg_mm_sse_bit_to(hm[k], j, 2), four));
            fgg_mm_sse_group16(a, R, u, sc[2 * j + k], x, xs, 32 * j + 16 * k);
        }
    for (int i = 0; i < R; i++) {
        const int32_t bs = is_q3 ? fgg_mm_sse_bsum_total(x + i * xs, sc16[0], sc16[1])
                                 : fgg_mm_sse_bsum_total(x + i * xs, _mm_unpacklo_epi8(mn8, z), _mm_unpackhi_epi8(mn8, z));
        tot[i] = is_q3 ? fgg_mm_sse_total4(a[i]) - 4 * bs : fgg_mm_sse_total4(a[i]);
        mtot[i] = is_q3 ? 0 : bs;
    }
}

/* The other K kinds (the 256-value IQ types, TQ2_0 and TQ1_0) against rows x[0..R-1]: their values
 * as int16, times their scale (pmullw, as fgg_mm_k_unpack's ws), met by madd; tot[i] fgg_mm_rows_k's
 * total (the ternary types' less their offsets' term); returns d. The values: the grid types'
 * straight from their grid rows and sign bits, IQ4_XS's from its word table, the others' from the
 * row loop's unpacking (fgg_mm_k_unpack_fields: bytes, a scale per 16) widened. */
FGG_MM_ALWAYS_INLINE float fgg_mm_sse_ksb_totals(int kind, const uint8_t *wb, const fgg_mm_x1k16 *x, ptrdiff_t xs,
                                                 const int R, int32_t *tot)
{
    if (kind == FGG_MM_K_IQ2_XXS || kind == FGG_MM_K_IQ2_XS || kind == FGG_MM_K_IQ2_S || kind == FGG_MM_K_IQ3_XXS
        || kind == FGG_MM_K_IQ3_S) {
        /* the grid types as int16 straight from their rows and sign bits (fgg_mm_*_gs): per 8 values
         * the magnitudes widened, negated by a mask (fgg_mm_sign16), times the scale */
        const __m128i z = _mm_setzero_si128();
        __m128i a[4];
        for (int i = 0; i < R; i++) a[i] = z;
        for (int j = 0; j < 8; j++) {
            int scale[2];
            uint64_t g[4];
            const uint8_t *r[8];  /* the IQ3 types' rows of 4, each loaded into its half of the 8 bytes */
            fgg_mm_iq_scales(kind, wb, j, scale);  /* |magnitude * scale| <= 62 * 31 */
            const uint32_t signs = kind == FGG_MM_K_IQ2_XXS  ? fgg_mm_iq2_xxs_gs(wb, j, g)
                                   : kind == FGG_MM_K_IQ2_XS ? fgg_mm_iq2_xs_gs(wb, j, g)
                                   : kind == FGG_MM_K_IQ2_S  ? fgg_mm_iq2_s_gs(wb, j, g)
                                   : kind == FGG_MM_K_IQ3_XXS ? fgg_mm_iq3_xxs_rows(wb, j, r)
                                                              : fgg_mm_iq3_s_rows(wb, j, r);
            __m128i v[4];  /* values 8l..8l + 7 */
            for (int l = 0; l < 4; l++) {
                const __m128i m = _mm_load_si128((const __m128i *)fgg_mm_sign16[(signs >> (8 * l)) & 255]);
                const __m128i row8 = kind == FGG_MM_K_IQ3_XXS || kind == FGG_MM_K_IQ3_S
                                         ? _mm_unpacklo_epi32(_mm_cvtsi32_si128((int)fgg_load_u32le(r[2 * l])),
                                                              _mm_cvtsi32_si128((int)fgg_load_u32le(r[2 * l + 1])))
                                         : _mm_cvtsi64_si128((long long)g[l]);
                const __m128i mag = _mm_unpacklo_epi8(row8, z);
                v[l] = _mm_mullo_epi16(_mm_sub_epi16(_mm_xor_si128(mag, m), m), _mm_set1_epi16((short)scale[l >> 1]));
            }
            for (int h = 0; h < 2; h++) fgg_mm_sse_madd_rows(a, R, v[2 * h], 32 * j + 16 * h, v[2 * h + 1], 32 * j + 16 * h + 8, x, xs);
        }
        for (int i = 0; i < R; i++) tot[i] = fgg_mm_sse_total4(a[i]);
        return fgg_mm_iq_d(kind, wb);
    }
    if (kind == FGG_MM_K_IQ4_XS) {  /* its values as int16 straight from the word table (fgg_mm_words) */
        __m128i a[4];
        for (int i = 0; i < R; i++) a[i] = _mm_setzero_si128();
        for (int j = 0; j < 8; j++) {
            const __m128i sv = _mm_set1_epi16((short)fgg_mm_iq4_xs_scale(wb, j));  /* |value * scale| <= 127 * 32 */
            for (int h = 0; h < 2; h++) {  /* code bytes 8h..8h + 7: values 8h.. (low nibbles) and 16 + 8h.. */
                __m128i lo, hi;
                fgg_mm_sse_word_values(wb + 8 + 16 * j + 8 * h, fgg_mm_iq4nl_words, &lo, &hi);
                fgg_mm_sse_madd_rows(a, R, _mm_mullo_epi16(lo, sv), 32 * j + 8 * h, _mm_mullo_epi16(hi, sv), 32 * j + 16 + 8 * h, x, xs);
            }
        }
        for (int i = 0; i < R; i++) tot[i] = fgg_mm_sse_total4(a[i]);
        return fgg_mm_iq_d(kind, wb);
    }
    fgg_mm_ksb s;
    float d, dmin = 0.0f;
    fgg_mm_k_unpack_fields(kind, wb, &s, &d, &dmin);
    __m128i a[4];
    for (int i = 0; i < R; i++) a[i] = _mm_setzero_si128();
    for (int j = 0; j < 8; j++)
        for (int h = 0; h < 2; h++) {
            const __m128i v = _mm_loadu_si128((const __m128i *)(s.u[j].b + 16 * h)), sv = _mm_set1_epi16(s.sc[2 * j + h]);
            const __m128i lo = _mm_mullo_epi16(_mm_srai_epi16(_mm_unpacklo_epi8(v, v), 8), sv);
            const __m128i hi = _mm_mullo_epi16(_mm_srai_epi16(_mm_unpackhi_epi8(v, v), 8), sv);
            fgg_mm_sse_madd_rows(a, R, lo, 32 * j + 16 * h, hi, 32 * j + 16 * h + 8, x, xs);
        }
    const __m128i bs0 = _mm_loadu_si128((const __m128i *)s.bs), bs1 = _mm_loadu_si128((const __m128i *)(s.bs + 8));
    for (int i = 0; i < R; i++)
        tot[i] = fgg_mm_sse_total4(a[i]) - (fgg_mm_k_signed(kind) ? 0 : fgg_mm_sse_bsum_total(x + i * xs, bs0, bs1));
    return d;
}

/* One weight row (nsb super-blocks at w) against rows x[0..R-1] of fgg_mm_x1k16 (row i's
 * super-block b at x[i * nsb + b]): out[i * os], fgg_mm_rows_k's float steps. */
FGG_MM_ALWAYS_INLINE void fgg_mm_sse_k_row(int kind, const uint8_t *w, ptrdiff_t nsb, const fgg_mm_x1k16 *x, const int R,
                                           float *out, ptrdiff_t os)
{
    const ptrdiff_t bytes = fgg_mm_k_bytes(kind);
    float acc[4] = {0.0f, 0.0f, 0.0f, 0.0f}, accm[4] = {0.0f, 0.0f, 0.0f, 0.0f};
    for (ptrdiff_t b = 0; b < nsb; b++) {
        const uint8_t *wb = w + b * bytes;
        int32_t tot[4], mtot[4];
        fgg_mm_prefetch_ahead(wb, bytes);
        if (kind != FGG_MM_K2 && kind != FGG_MM_K3 && kind != FGG_MM_K4 && kind != FGG_MM_K5 && kind != FGG_MM_K6) {
            const float d = fgg_mm_sse_ksb_totals(kind, wb, x + b, nsb, R, tot);
            for (int i = 0; i < R; i++) acc[i] = acc[i] + (float)tot[i] * (d * x[i * nsb + b].d);
        } else if (kind == FGG_MM_K6 || kind == FGG_MM_K3) {
            const float d = fgg_half_to_float_scale(fgg_load_u16le(wb + (kind == FGG_MM_K6 ? 208 : 108)));
            if (kind == FGG_MM_K6)
                fgg_mm_sse_q6_k_totals(wb, x + b, nsb, R, tot);
            else
                fgg_mm_sse_q23_k_totals(wb, x + b, nsb, R, 1, tot, mtot);
            for (int i = 0; i < R; i++) acc[i] = acc[i] + (float)tot[i] * (d * x[i * nsb + b].d);
        } else {
            const int at = kind == FGG_MM_K2 ? 80 : 0;
            const float d = fgg_half_to_float_scale(fgg_load_u16le(wb + at)), dmin = fgg_half_to_float_scale(fgg_load_u16le(wb + at + 2));
            if (kind == FGG_MM_K2)
                fgg_mm_sse_q23_k_totals(wb, x + b, nsb, R, 0, tot, mtot);
            else
                fgg_mm_sse_q45_k_totals(wb, x + b, nsb, R, kind == FGG_MM_K5, tot, mtot);
            for (int i = 0; i < R; i++) {
                acc[i] = acc[i] + (float)tot[i] * (d * x[i * nsb + b].d);
                accm[i] = accm[i] + (float)mtot[i] * (dmin * x[i * nsb + b].d);
            }
        }
    }
    for (int i = 0; i < R; i++) out[i * os] = fgg_mm_k_has_min(kind) ? acc[i] - accm[i] : acc[i];
}

/* The per-32 types Q8_0, Q4_0, Q5_0, Q4_1, Q5_1, IQ4_NL, MXFP4 and Q1_0 the same way (x in
 * fgg_mm_x1b16, per 32 values): a run's values as int16 words in registers (IQ4_NL's and MXFP4's by
 * code byte from their word tables, fgg_mm_words: SSE2 has no pshufb; Q1_0's +-1 from its bits by
 * fgg_mm_sign16), met by madd, each pair of pair sums joined into the lanes of fgg_mm_rown_b
 * (values 4k..4k+3 in lane k), then its float steps (Q1_0's 4 runs a block: against x's scales,
 * then times d). One row, one thread, Q4_0 4096 x 14336 (C harness): 8.7 -> 6.7 ms; the float step
 * per 32 values (8 lanes) is most of what is left. */
FGG_MM_ALWAYS_INLINE void fgg_mm_sse_b_row(int kind, const uint8_t *w, ptrdiff_t nb, const fgg_mm_x1b16 *x, const int R,
                                           float *out, ptrdiff_t os)
{
    const ptrdiff_t bytes = fgg_mm_b_bytes(kind);
    const int runs = fgg_mm_b_runs(kind);  /* x's blocks a row: nb * runs */
    const __m128i z = _mm_setzero_si128(), fifth = _mm_set1_epi8(16);
    const __m128i c = _mm_set1_epi16((short)fgg_mm_b_code_offset(kind));
    __m128 a[4][2];
    float off[4] = {0.0f, 0.0f, 0.0f, 0.0f};
    for (int i = 0; i < R; i++) a[i][0] = a[i][1] = _mm_setzero_ps();
    for (ptrdiff_t b = 0; b < nb; b++) {
        const uint8_t *wb = w + bytes * b, *codes = wb + fgg_mm_b_codes_at(kind);
        fgg_mm_prefetch_ahead(wb, bytes);
        const float d = fgg_mm_b_scale(kind, wb);
        __m128 blk[4][2];  /* Q1_0: the block's runs against x's scales */
        for (int r = 0; r < runs; r++) {
            __m128i u[4];  /* values 0-7, 8-15, 16-23, 24-31 of run r as int16 */
            if (kind == FGG_MM_B_Q1_0) {
                /* +1 where the bit is set, else -1: ~mask | 1 */
                const uint32_t bits = fgg_load_u32le(wb + 2 + 4 * r);
                for (int k = 0; k < 4; k++) {
                    const __m128i m = _mm_load_si128((const __m128i *)fgg_mm_sign16[(bits >> (8 * k)) & 255]);
                    u[k] = _mm_or_si128(_mm_andnot_si128(m, _mm_set1_epi16(-1)), _mm_set1_epi16(1));
                }
            } else if (kind == FGG_MM_B_IQ4_NL || kind == FGG_MM_B_MXFP4) {
                /* the table's signed bytes by code byte (fgg_mm_words): byte k's low one value k, its high one 16 + k */
                const fgg_mm_words *words = kind == FGG_MM_B_IQ4_NL ? &fgg_mm_iq4nl_words : &fgg_mm_fp4_words;
                for (int h = 0; h < 2; h++) fgg_mm_sse_word_values(codes + 8 * h, *words, &u[h], &u[2 + h]);
            } else if (kind == FGG_MM_B_Q8_0) {
                for (int h = 0; h < 2; h++) {
                    const __m128i v = _mm_loadu_si128((const __m128i *)(codes + 16 * h));
                    u[2 * h] = _mm_srai_epi16(_mm_unpacklo_epi8(v, v), 8);
                    u[2 * h + 1] = _mm_srai_epi16(_mm_unpackhi_epi8(v, v), 8);
                }
            } else {
                __m128i n[2];
                fgg_mm_sse_nibbles(codes, n);
                if (kind == FGG_MM_B_Q5_0 || kind == FGG_MM_B_Q5_1) {
                    __m128i f[2];
                    fgg_mm_sse_bits32(fgg_load_u32le(wb + fgg_mm_b_fifths_at(kind)), f);
                    for (int h = 0; h < 2; h++) n[h] = _mm_or_si128(n[h], _mm_and_si128(f[h], fifth));
                }
                for (int h = 0; h < 2; h++) {
                    u[2 * h] = _mm_sub_epi16(_mm_unpacklo_epi8(n[h], z), c);
                    u[2 * h + 1] = _mm_sub_epi16(_mm_unpackhi_epi8(n[h], z), c);
                }
            }
            for (int i = 0; i < R; i++) {
                const fgg_mm_x1b16 *xb = x + (i * nb + b) * runs + r;
                __m128i p[4];
                for (int k = 0; k < 4; k++) p[k] = _mm_madd_epi16(u[k], _mm_load_si128((const __m128i *)(xb->q + 8 * k)));
                for (int h = 0; h < 2; h++) {
                    const __m128 lanes = _mm_cvtepi32_ps(fgg_mm_sse_quad_lanes(p[2 * h], p[2 * h + 1]));
                    if (runs == 1)  /* fgg_mm_acc_add */
                        a[i][h] = _mm_add_ps(a[i][h], _mm_mul_ps(lanes, _mm_set1_ps(d * xb->d)));
                    else  /* fgg_mm_acc_scaled, then fgg_mm_acc_add */
                        blk[i][h] = r == 0 ? _mm_mul_ps(lanes, _mm_set1_ps(xb->d))
                                           : _mm_add_ps(blk[i][h], _mm_mul_ps(lanes, _mm_set1_ps(xb->d)));
                }
            }
        }
        if (runs > 1)  /* fgg_mm_acc_addv */
            for (int i = 0; i < R; i++)
                for (int h = 0; h < 2; h++) a[i][h] = _mm_add_ps(a[i][h], _mm_mul_ps(blk[i][h], _mm_set1_ps(d)));
        if (fgg_mm_b_has_offset(kind)) {
            const float mn = fgg_mm_b_offset(kind, wb);
            for (int i = 0; i < R; i++) off[i] = off[i] + mn * x[i * nb + b].s;
        }
    }
    for (int i = 0; i < R; i++) {
        fgg_mm_acc acc;
        _mm_storeu_ps(acc.v, a[i][0]);
        _mm_storeu_ps(acc.v + 4, a[i][1]);
        out[i * os] = fgg_mm_b_has_offset(kind) ? fgg_mm_acc_sum(acc) + off[i] : fgg_mm_acc_sum(acc);
    }
}

/* Rows of x of xrow_bytes each in a block that stays in L2 (128 KiB; at least 4). */
static inline ptrdiff_t fgg_mm_sse_x_block(ptrdiff_t xrow_bytes)
{
    const ptrdiff_t rows = ((ptrdiff_t)128 * 1024 / (xrow_bytes > 0 ? xrow_bytes : 1)) / 4 * 4;
    return rows > 4 ? rows : 4;
}

/* The batch kernels on them: weight rows 0..n-1 (row r at w + r * row_bytes) times m rows of x
 * (XT, XB blocks a row: row i's block b at x[i * XB + b]), 4 rows of x a pass (then 2, 1): out[i * os + r]; an
 * fgg_mm_gemm_fn without a panel. The rows of x in blocks that stay in L2, each met by every
 * weight row. With 2 rows a pass, Q5_0 and Q5_1 were slower than the row loop from 8 rows (their
 * fifth bits made once per pass). */
#define FGG_MM_GEMM_SSE(NAME, ROW, XT, XB)                                                            \
FGG_MM_ALWAYS_INLINE void NAME(int kind, const uint8_t *w, ptrdiff_t row_bytes, ptrdiff_t n, ptrdiff_t nb, \
                               const XT *x, ptrdiff_t m, float *out, ptrdiff_t os, void *panel, ptrdiff_t tile) \
{                                                                                                     \
    (void)panel, (void)tile;                                                                          \
    const ptrdiff_t xb = XB, block = fgg_mm_sse_x_block(xb * (ptrdiff_t)sizeof(XT));                  \
    for (ptrdiff_t i0 = 0; i0 < m; i0 += block) {                                                     \
        const ptrdiff_t i1 = m - i0 > block ? i0 + block : m;                                         \
        for (ptrdiff_t r = 0; r < n; r++)                                                             \
            for (ptrdiff_t i = i0; i < i1;) {                                                         \
                const int R = i1 - i >= 4 ? 4 : i1 - i >= 2 ? 2 : 1;                                 \
                if (R == 4)                                                                           \
                    ROW(kind, w + r * row_bytes, nb, x + i * xb, 4, out + i * os + r, os);            \
                else if (R == 2)                                                                      \
                    ROW(kind, w + r * row_bytes, nb, x + i * xb, 2, out + i * os + r, os);            \
                else                                                                                  \
                    ROW(kind, w + r * row_bytes, nb, x + i * xb, 1, out + i * os + r, os);            \
                i += R;                                                                               \
            }                                                                                         \
    }                                                                                                 \
}
FGG_MM_GEMM_SSE(fgg_mm_gemm_k_sse, fgg_mm_sse_k_row, fgg_mm_x1k16, nb)
FGG_MM_GEMM_SSE(fgg_mm_gemm_b_sse, fgg_mm_sse_b_row, fgg_mm_x1b16, nb * fgg_mm_b_runs(kind))
#undef FGG_MM_GEMM_SSE

FGG_MM_GEMM_FN(fgg_mm_gemm_q8_0, inline, fgg_mm_gemm_b_sse, FGG_MM_B_Q8_0, fgg_mm_x1b16, void)
FGG_MM_GEMM_FN(fgg_mm_gemm_q4_0, inline, fgg_mm_gemm_b_sse, FGG_MM_B_Q4_0, fgg_mm_x1b16, void)
FGG_MM_GEMM_FN(fgg_mm_gemm_q5_0, inline, fgg_mm_gemm_b_sse, FGG_MM_B_Q5_0, fgg_mm_x1b16, void)
FGG_MM_GEMM_FN(fgg_mm_gemm_q4_1, inline, fgg_mm_gemm_b_sse, FGG_MM_B_Q4_1, fgg_mm_x1b16, void)
FGG_MM_GEMM_FN(fgg_mm_gemm_q5_1, inline, fgg_mm_gemm_b_sse, FGG_MM_B_Q5_1, fgg_mm_x1b16, void)
FGG_MM_GEMM_FN(fgg_mm_gemm_iq4_nl, inline, fgg_mm_gemm_b_sse, FGG_MM_B_IQ4_NL, fgg_mm_x1b16, void)
FGG_MM_GEMM_FN(fgg_mm_gemm_mxfp4, inline, fgg_mm_gemm_b_sse, FGG_MM_B_MXFP4, fgg_mm_x1b16, void)
FGG_MM_GEMM_FN(fgg_mm_gemm_q1_0, inline, fgg_mm_gemm_b_sse, FGG_MM_B_Q1_0, fgg_mm_x1b16, void)
FGG_MM_GEMM_FN(fgg_mm_gemm_q2_k, inline, fgg_mm_gemm_k_sse, FGG_MM_K2, fgg_mm_x1k16, void)
FGG_MM_GEMM_FN(fgg_mm_gemm_q3_k, inline, fgg_mm_gemm_k_sse, FGG_MM_K3, fgg_mm_x1k16, void)
FGG_MM_GEMM_FN(fgg_mm_gemm_q4_k, inline, fgg_mm_gemm_k_sse, FGG_MM_K4, fgg_mm_x1k16, void)
FGG_MM_GEMM_FN(fgg_mm_gemm_q5_k, inline, fgg_mm_gemm_k_sse, FGG_MM_K5, fgg_mm_x1k16, void)
FGG_MM_GEMM_FN(fgg_mm_gemm_q6_k, inline, fgg_mm_gemm_k_sse, FGG_MM_K6, fgg_mm_x1k16, void)
FGG_MM_GEMM_FN(fgg_mm_gemm_tq2_0, inline, fgg_mm_gemm_k_sse, FGG_MM_K_TQ2_0, fgg_mm_x1k16, void)
FGG_MM_GEMM_FN(fgg_mm_gemm_tq1_0, inline, fgg_mm_gemm_k_sse, FGG_MM_K_TQ1_0, fgg_mm_x1k16, void)
FGG_MM_GEMM_FN(fgg_mm_gemm_iq4_xs, inline, fgg_mm_gemm_k_sse, FGG_MM_K_IQ4_XS, fgg_mm_x1k16, void)
FGG_MM_GEMM_FN(fgg_mm_gemm_iq2_xxs, inline, fgg_mm_gemm_k_sse, FGG_MM_K_IQ2_XXS, fgg_mm_x1k16, void)
FGG_MM_GEMM_FN(fgg_mm_gemm_iq3_s, inline, fgg_mm_gemm_k_sse, FGG_MM_K_IQ3_S, fgg_mm_x1k16, void)
FGG_MM_GEMM_FN(fgg_mm_gemm_iq2_xs, inline, fgg_mm_gemm_k_sse, FGG_MM_K_IQ2_XS, fgg_mm_x1k16, void)
FGG_MM_GEMM_FN(fgg_mm_gemm_iq2_s, inline, fgg_mm_gemm_k_sse, FGG_MM_K_IQ2_S, fgg_mm_x1k16, void)
FGG_MM_GEMM_FN(fgg_mm_gemm_iq3_xxs, inline, fgg_mm_gemm_k_sse, FGG_MM_K_IQ3_XXS, fgg_mm_x1k16, void)
FGG_MM_GEMM_FN(fgg_mm_gemm_iq1_s, inline, fgg_mm_gemm_k_sse, FGG_MM_K_IQ1_S, fgg_mm_x1k16, void)
FGG_MM_GEMM_FN(fgg_mm_gemm_iq1_m, inline, fgg_mm_gemm_k_sse, FGG_MM_K_IQ1_M, fgg_mm_x1k16, void)
#endif

#endif
