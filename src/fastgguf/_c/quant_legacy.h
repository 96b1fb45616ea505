/* Quantizers of the legacy 32-element block types Q4_0, Q4_1, Q5_0, Q5_1, Q8_0, Q8_1, and the
 * scalar building blocks the K-quant and misc quantizers share (quant_kquant.h, quant_misc.h).
 *
 * Target: the bytes of ggml's quantize_<type>(src, dst, nrow, n_per_row, imatrix) as ggml-base
 * is built (no -march, -ffp-contract=off). Every float32 operation below happens in the order
 * that decides those bits: sums run left to right, products group as written, scale inverses
 * are multiplied or divided where ggml multiplies or divides, and rounding uses the rule of the
 * step in question (fgg_iq_nearest_int, round-half-away, or truncation). Compiled with
 * -ffp-contract=off, so no multiply-add is fused.
 *
 * Each fgg_quantize_<type> has the kernel table's signature:
 *   void fgg_quantize_<type>(const float *src, uint8_t *dst, int64_t n_rows, int64_t n_per_row,
 *                            const float *imatrix)
 * src holds n_rows * n_per_row finite floats, n_per_row a multiple of the block size; imatrix
 * is NULL or n_per_row weights >= 0 (the same for every row). Rows are written back to back.
 * Q4_0, Q4_1, Q5_0, Q5_1 and Q8_0 also have fgg_quantize_checked_<type> (no imatrix), which finds
 * NaN/inf in src as it quantizes ("Quantizing and checking in one pass" below). With AVX2 they
 * quantize 8 blocks side by side (the extremes of 8 blocks reduce together, so the scale, its
 * inverse and fp16 are computed once per 8 blocks); each block's bytes are still its own.
 *
 * Shared pieces (prefix fgg_q_):
 *   fgg_q_half_to_float (h)     IEEE fp16 bits -> float32 (exact)
 *   fgg_q_round_away (v)        round half away from zero (C's roundf/lroundf) for |v| < 2^31
 *   fgg_q_put16 (p, h)          little-endian 16-bit store
 *   fgg_q_rms_weights (...)     imatrix weight: w * sqrt(sigma2 + x^2), per element
 *   fgg_q_fit_signed (...)      symmetric grid search (levels -nmax..nmax-1), weighted
 *   fgg_q_fit_affine (...)      grid search for a scale and a minimum (levels 0..nmax), weighted
 */
#ifndef FGG_QUANT_LEGACY_H
#define FGG_QUANT_LEGACY_H

#include <float.h>
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "quant_common.h"

#if FGG_IQ_SIMD && defined(__SSE2__)
#include <immintrin.h>
#define FGG_Q_X86_SQRT 1
#else
#define FGG_Q_X86_SQRT 0
#endif

#define FGG_Q_EPS 1e-15f /* a group whose largest magnitude is below this quantizes to zeros */

static inline float fgg_q_half_to_float(uint16_t h) {
    uint32_t sign = (uint32_t)(h & 0x8000u) << 16;
    uint32_t e = (h >> 10) & 0x1fu, m = h & 0x3ffu, bits;
    if (e == 0) {
        float v = (float)m * 5.9604644775390625e-8f; /* m * 2^-24, exact */
        memcpy(&bits, &v, sizeof bits);
        bits |= sign;
    } else if (e == 31) {
        bits = sign | 0x7f800000u | (m << 13);
    } else {
        bits = sign | ((e + 112u) << 23) | (m << 13);
    }
    float f;
    memcpy(&f, &bits, sizeof f);
    return f;
}

/* roundf / lroundf for |v| < 2^22: round to nearest even, then move a tie away from zero */
static inline int fgg_q_round_away(float v) {
    int n = fgg_iq_nearest_int(v);
    float diff = v - (float)n; /* exact */
    return n + ((diff == 0.5f) & (v > 0.0f)) - ((diff == -0.5f) & (v < 0.0f));
}

static inline void fgg_q_put16(uint8_t *p, uint16_t h) {
    p[0] = (uint8_t)h;
    p[1] = (uint8_t)(h >> 8);
}

static inline int fgg_q_clampi(int v, int lo, int hi) {
    return v < lo ? lo : (v > hi ? hi : v);
}

/* sum of squares of n floats, left to right */
static inline float fgg_q_sumsq(const float *x, int64_t n) {
    float s = 0.0f;
    for (int64_t i = 0; i < n; ++i) s += x[i] * x[i];
    return s;
}

/* n a multiple of 16; the SSE/AVX square roots are IEEE correctly rounded, as sqrtf is */
static inline void fgg_q_rms_weights(int n, const float *qw, const float *x, float sigma2, float *w) {
#if FGG_Q_X86_SQRT
    for (int i = 0; i < n; i += 4) {
        __m128 v = _mm_loadu_ps(x + i);
        v = _mm_sqrt_ps(_mm_add_ps(_mm_set1_ps(sigma2), _mm_mul_ps(v, v)));
        _mm_storeu_ps(w + i, _mm_mul_ps(_mm_loadu_ps(qw + i), v));
    }
#else
    for (int i = 0; i < n; ++i) w[i] = qw[i] * sqrtf(sigma2 + x[i] * x[i]);
#endif
}

/* ---- Many fits at once ----
 * fgg_q_fit_signed_n / fgg_q_fit_affine_n run fgg_q_fit_signed / fgg_q_fit_affine on count
 * independent groups (xs[k], ws[k] -> Ls[k], out[k]). With vector extensions, lane k of each
 * vector runs group k's scalar sequence of float32 operations unchanged (selects stand in for
 * the branches), so the results are the scalar ones bit for bit; otherwise they loop. */

#if FGG_IQ_SIMD
/* Lanes per vector (FGG_Q_W) and vectors side by side (FGG_Q_G): 16 x 1 with AVX-512, 8 x 2 with
 * AVX, 4 x 2 otherwise. Two vectors side by side keep two chains of dependent sums in flight. */
#if defined(__AVX512F__)
#define FGG_Q_W 16
#define FGG_Q_G 1
#elif defined(__AVX__)
#define FGG_Q_W 8
#define FGG_Q_G 2
#else
#define FGG_Q_W 4
#define FGG_Q_G 2
#endif
typedef float fgg_q_vf8 __attribute__((vector_size(4 * FGG_Q_W)));
typedef int32_t fgg_q_vi8 __attribute__((vector_size(4 * FGG_Q_W)));
#define FGG_Q_INL static inline __attribute__((always_inline))

FGG_Q_INL fgg_q_vf8 fgg_q_fsel(fgg_q_vi8 m, fgg_q_vf8 a, fgg_q_vf8 b) {
    return (fgg_q_vf8)((m & (fgg_q_vi8)a) | (~m & (fgg_q_vi8)b));
}
FGG_Q_INL fgg_q_vi8 fgg_q_isel(fgg_q_vi8 m, fgg_q_vi8 a, fgg_q_vi8 b) {
    return (m & a) | (~m & b);
}
FGG_Q_INL fgg_q_vi8 fgg_q_round8(fgg_q_vf8 v) { /* fgg_iq_nearest_int per lane */
    fgg_q_vi8 bits = (fgg_q_vi8)(v + 12582912.0f);
    return (bits & 0x007fffff) - 0x00400000;
}
FGG_Q_INL fgg_q_vi8 fgg_q_clamp8(fgg_q_vi8 v, int lo, int hi) {
#if FGG_Q_W == 16
    return (fgg_q_vi8)_mm512_min_epi32(_mm512_max_epi32((__m512i)v, _mm512_set1_epi32(lo)), _mm512_set1_epi32(hi));
#elif FGG_Q_W == 8 && defined(__AVX2__)
    return (fgg_q_vi8)_mm256_min_epi32(_mm256_max_epi32((__m256i)v, _mm256_set1_epi32(lo)), _mm256_set1_epi32(hi));
#else
    v = fgg_q_isel(v < lo, v - v + lo, v);
    return fgg_q_isel(v > hi, v - v + hi, v);
#endif
}
FGG_Q_INL fgg_q_vf8 fgg_q_abs8(fgg_q_vf8 v) {
    return (fgg_q_vf8)((fgg_q_vi8)v & 0x7fffffff);
}
FGG_Q_INL fgg_q_vf8 fgg_q_tof8(fgg_q_vi8 v) {
    return __builtin_convertvector(v, fgg_q_vf8);
}
typedef uint8_t fgg_q_vb8 __attribute__((vector_size(FGG_Q_W)));
/* low bytes of the lanes to p[0 .. FGG_Q_W) */
FGG_Q_INL void fgg_q_store_bytes(uint8_t *p, fgg_q_vi8 v) {
    fgg_q_vb8 b = __builtin_convertvector(v & 0xff, fgg_q_vb8);
    memcpy(p, &b, sizeof b);
}
FGG_Q_INL fgg_q_vf8 fgg_q_splat8(float x) {
    fgg_q_vf8 z = {0.0f};
    return z + x;
}
/* t[i] lane k = p[k][i] */
FGG_Q_INL void fgg_q_transpose8(int n, const float *const p[], fgg_q_vf8 *t) {
    for (int i = 0; i < n; ++i) {
        fgg_q_vf8 v;
        for (int k = 0; k < FGG_Q_W; ++k) v[k] = p[k][i];
        t[i] = v;
    }
}
#if defined(__AVX__)
/* largest of 8 lanes (exact in any order: the lanes hold no NaN; the sign of a zero result is either) */
FGG_Q_INL float fgg_q_hmax256(__m256 m) {
    __m128 h = _mm_max_ps(_mm256_castps256_ps128(m), _mm256_extractf128_ps(m, 1));
    h = _mm_max_ps(h, _mm_movehl_ps(h, h));
    return _mm_cvtss_f32(_mm_max_ss(h, _mm_shuffle_ps(h, h, 1)));
}
#endif
/* largest lane (exact in any order: the lanes hold no NaN; the sign of a zero result is either) */
FGG_Q_INL float fgg_q_hmax(fgg_q_vf8 m) {
#if FGG_Q_W == 16
    return _mm512_reduce_max_ps((__m512)m);
#elif FGG_Q_W == 8 && defined(__AVX__)
    return fgg_q_hmax256((__m256)m);
#endif
    float a[FGG_Q_W];
    memcpy(a, &m, sizeof a);
    for (int w = FGG_Q_W / 2; w >= 1; w /= 2)
        for (int k = 0; k < w; ++k) a[k] = a[k + w] > a[k] ? a[k + w] : a[k];
    return a[0];
}
#endif

#if FGG_IQ_SIMD && defined(__AVX2__)
/* (int)roundf per lane (half away from zero), exact for every float: truncate v + copysign(0.5 - 2^-25, v).
 * Below 0.5 the sum stays below the next integer; from 0.5 up it reaches it (a tie rounds the sum
 * up to even); from 2^23 up v is whole and the sum rounds back to v. Inf, NaN and |v| >= 2^31 give
 * INT_MIN, as cvtps does. */
static inline __m256i fgg_q_lround_avx2(__m256 v) {
    const __m256 below_half = _mm256_castsi256_ps(_mm256_set1_epi32(0x3effffff));
    return _mm256_cvttps_epi32(_mm256_add_ps(v, _mm256_or_ps(below_half, _mm256_and_ps(v, _mm256_set1_ps(-0.0f)))));
}

/* fgg_iq_nearest_int per lane (the 1.5 * 2^23 trick, wrap included) */
static inline __m256i fgg_q_nearest_int_avx2(__m256 v) {
    const __m256i bits = _mm256_castps_si256(_mm256_add_ps(v, _mm256_set1_ps(12582912.0f)));
    return _mm256_sub_epi32(_mm256_and_si256(bits, _mm256_set1_epi32(0x007fffff)), _mm256_set1_epi32(0x00400000));
}

/* the low bytes of 4 x 8 int32 lanes (each in -128..255 as wanted) as 32 bytes in order */
static inline __m256i fgg_q_pack_bytes_avx2(__m256i a, __m256i b, __m256i c, __m256i d) {
    const __m256i m = _mm256_set1_epi32(0xff);
    __m256i p = _mm256_packus_epi16(_mm256_packus_epi32(_mm256_and_si256(a, m), _mm256_and_si256(b, m)),
                                    _mm256_packus_epi32(_mm256_and_si256(c, m), _mm256_and_si256(d, m)));
    return _mm256_permutevar8x32_epi32(p, _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7));
}
#endif

#if FGG_IQ_SIMD && defined(__AVX2__)
/* ---- Eight 32-value blocks side by side: lane b of a per-block vector belongs to block b, so the
 * per-block scalar steps (scale, inverse, fp16) run once per 8 blocks ---- */
enum { FGG_Q_TREE_MAX, FGG_Q_TREE_MIN };

/* lane b = the largest (smallest) lane of m[b], by a transposing tree: exact in any order, as the
 * lanes hold no NaN; only the sign of a zero result may differ from a scan */
static inline __m256 fgg_q_tree8_avx2(const __m256 m[8], int op) {
#define FGG_Q_TREE_OP(a, b) (op == FGG_Q_TREE_MAX ? _mm256_max_ps(a, b) : _mm256_min_ps(a, b))
    __m256 p[4], q[2];
    for (int k = 0; k < 4; ++k) /* per 128-bit half: [A01, A23, B01, B23] */
        p[k] = FGG_Q_TREE_OP(_mm256_shuffle_ps(m[2 * k], m[2 * k + 1], _MM_SHUFFLE(2, 0, 2, 0)),
                             _mm256_shuffle_ps(m[2 * k], m[2 * k + 1], _MM_SHUFFLE(3, 1, 3, 1)));
    for (int k = 0; k < 2; ++k) /* per half: [A, B, C, D] of that half's four lanes */
        q[k] = FGG_Q_TREE_OP(_mm256_shuffle_ps(p[2 * k], p[2 * k + 1], _MM_SHUFFLE(2, 0, 2, 0)),
                             _mm256_shuffle_ps(p[2 * k], p[2 * k + 1], _MM_SHUFFLE(3, 1, 3, 1)));
    return FGG_Q_TREE_OP(_mm256_permute2f128_ps(q[0], q[1], 0x20), _mm256_permute2f128_ps(q[0], q[1], 0x31));
#undef FGG_Q_TREE_OP
}

/* 1 / d per lane, 0 where d is 0 (ggml's id) */
static inline __m256 fgg_q_inverse_or_zero_avx2(__m256 d) {
    return _mm256_and_ps(_mm256_div_ps(_mm256_set1_ps(1.0f), d), _mm256_cmp_ps(d, _mm256_setzero_ps(), _CMP_NEQ_UQ));
}

/* fp16 of the 8 lanes (no NaN) to p[b * stride], little-endian */
static inline void fgg_q_put16x8_avx2(uint8_t *p, size_t stride, __m256 v) {
    uint16_t h[8];
    _mm_storeu_si128((__m128i *)h, _mm256_cvtps_ph(v, _MM_FROUND_TO_NEAREST_INT));
    for (int b = 0; b < 8; ++b) fgg_q_put16(p + b * stride, h[b]);
}
#endif

#define FGG_Q_INF_BITS 0x7f800000u /* |x| bits from here up: an infinity or a NaN */

/* the largest |x| bits of n floats, any n (scalar) */
static inline uint32_t fgg_q_mag_bits(const float *x, int64_t n) {
    uint32_t m = 0;
    for (int64_t i = 0; i < n; ++i) {
        uint32_t b;
        memcpy(&b, x + i, sizeof b);
        b &= 0x7fffffffu;
        m = b > m ? b : m;
    }
    return m;
}

/* The largest |x[i]| bits of n (a multiple of 16) floats: for finite values their integer order is
 * the float order (so the maximum is exact in any order); NaN and infinities give
 * FGG_Q_INF_BITS or more. Four chains of maxima where n allows (one chain's latency, not the
 * loads, would set the pace). */
static inline uint32_t fgg_q_amax_bits(const float *x, int n) {
#if FGG_IQ_SIMD && defined(__AVX2__)
    /* 8 lanes in the AVX-512 build too: its 16-lane form between the 8-lane steps of TQ1_0/TQ2_0
     * made them 40 % slower (the core leaves its 512-bit state only slowly) */
    const __m256i mag = _mm256_set1_epi32(0x7fffffff);
    __m256i m[4] = {_mm256_setzero_si256(), _mm256_setzero_si256(), _mm256_setzero_si256(), _mm256_setzero_si256()};
    const int chains = n % 32 == 0 ? 4 : 1;
    for (int i = 0; i < n; i += 8 * chains)
        for (int k = 0; k < chains; ++k) /* as int32 the |x| bits are >= 0: the signed maximum is the unsigned one */
            m[k] = _mm256_max_epi32(m[k], _mm256_and_si256(_mm256_loadu_si256((const __m256i *)(x + i + 8 * k)), mag));
    const __m256i m8 = _mm256_max_epi32(_mm256_max_epi32(m[0], m[1]), _mm256_max_epi32(m[2], m[3]));
    __m128i m4 = _mm_max_epi32(_mm256_castsi256_si128(m8), _mm256_extracti128_si256(m8, 1));
    m4 = _mm_max_epi32(m4, _mm_shuffle_epi32(m4, _MM_SHUFFLE(1, 0, 3, 2)));
    return (uint32_t)_mm_cvtsi128_si32(_mm_max_epi32(m4, _mm_shuffle_epi32(m4, _MM_SHUFFLE(2, 3, 0, 1))));
#elif FGG_IQ_SIMD
    const fgg_q_vi8 zero = {0};
    fgg_q_vi8 m[4] = {zero, zero, zero, zero};
    const int chains = n % (4 * FGG_Q_W) == 0 ? 4 : 1;
    for (int i = 0; i < n; i += chains * FGG_Q_W) {
        for (int k = 0; k < chains; ++k) {
            fgg_q_vi8 v;
            memcpy(&v, x + i + k * FGG_Q_W, sizeof v);
            v &= 0x7fffffff; /* as int32: >= 0, so the signed maximum is the unsigned one */
            m[k] = fgg_q_isel(v > m[k], v, m[k]);
        }
    }
    for (int k = 1; k < 4; ++k) m[0] = fgg_q_isel(m[k] > m[0], m[k], m[0]);
    int32_t lanes[FGG_Q_W], top = 0;
    memcpy(lanes, &m[0], sizeof lanes);
    for (int k = 0; k < FGG_Q_W; ++k) top = lanes[k] > top ? lanes[k] : top;
    return (uint32_t)top;
#else
    return fgg_q_mag_bits(x, n);
#endif
}

/* largest |x[i]| of n (a multiple of 16) finite floats */
static inline float fgg_q_amax(const float *x, int n) {
    const uint32_t bits = fgg_q_amax_bits(x, n);
    float r;
    memcpy(&r, &bits, sizeof r);
    return r;
}

/* q[i] = round-half-away(x[i] * id) as int8, n a multiple of 16 */
static inline void fgg_q_round_scaled_i8(const float *x, int n, float id, int8_t *q) {
#if FGG_IQ_SIMD
    for (int i = 0; i < n; i += FGG_Q_W) {
        fgg_q_vf8 v;
        memcpy(&v, x + i, sizeof v);
        v = v * id;
        fgg_q_vi8 r = fgg_q_round8(v);
        fgg_q_vf8 diff = v - fgg_q_tof8(r);
        r = r - ((diff == 0.5f) & (v > 0.0f)) + ((diff == -0.5f) & (v < 0.0f)); /* masks are -1 */
        fgg_q_store_bytes((uint8_t *)q + i, r);
    }
#else
    for (int i = 0; i < n; ++i) q[i] = (int8_t)fgg_q_round_away(x[i] * id);
#endif
}

/* Levels of 32 floats by C's truncating conversion: (int8_t)(int)((x[i] - sub) * id + off)
 * capped at hi (wrap8 = 1), or (uint8_t)(int)(...) (wrap8 = 0). nib = 1 stores them as 16 bytes
 * of nibble pairs (level i low, level i + 16 high), else 32 bytes. */
static inline void fgg_q_trunc_levels32(const float *x, float sub, float id, float off, int hi, int wrap8,
                                        int nib, uint8_t *out) {
#if FGG_IQ_SIMD && defined(__AVX2__)
    /* 8 lanes x 4, their low bytes packed to 32 bytes in order */
    __m256i t[4];
    for (int c = 0; c < 4; ++c) {
        __m256 v = _mm256_loadu_ps(x + 8 * c);
        v = _mm256_add_ps(_mm256_mul_ps(_mm256_sub_ps(v, _mm256_set1_ps(sub)), _mm256_set1_ps(id)),
                          _mm256_set1_ps(off));
        __m256i l = _mm256_cvttps_epi32(v);
        t[c] = wrap8 ? _mm256_min_epi32(_mm256_srai_epi32(_mm256_slli_epi32(l, 24), 24), _mm256_set1_epi32(hi)) : l;
    }
    const __m256i b = fgg_q_pack_bytes_avx2(t[0], t[1], t[2], t[3]);
    if (nib) {
        __m128i low = _mm256_castsi256_si128(b), high = _mm256_extracti128_si256(b, 1);
        high = _mm_slli_epi16(_mm_and_si128(high, _mm_set1_epi8(0x0f)), 4);
        _mm_storeu_si128((__m128i *)out, _mm_or_si128(low, high));
    } else {
        _mm256_storeu_si256((__m256i *)out, b);
    }
#elif FGG_IQ_SIMD
    fgg_q_vi8 t[32 / FGG_Q_W];
    for (int c = 0; c < 32 / FGG_Q_W; ++c) {
        fgg_q_vf8 v;
        memcpy(&v, x + c * FGG_Q_W, sizeof v);
        v = (v - sub) * id + off;
        t[c] = __builtin_convertvector(v, fgg_q_vi8);
        if (wrap8) {
            t[c] = (t[c] << 24) >> 24;
            t[c] = fgg_q_isel(t[c] > hi, t[c] - t[c] + hi, t[c]);
        }
    }
    if (nib) {
        for (int c = 0; c < 16 / FGG_Q_W; ++c) fgg_q_store_bytes(out + c * FGG_Q_W, t[c] | (t[c + 16 / FGG_Q_W] << 4));
    } else {
        for (int c = 0; c < 32 / FGG_Q_W; ++c) fgg_q_store_bytes(out + c * FGG_Q_W, t[c]);
    }
#else
    uint8_t lv[32];
    for (int i = 0; i < 32; ++i) {
        int t = (int)((x[i] - sub) * id + off);
        if (wrap8) {
            t = (int8_t)t;
            t = t < hi ? t : hi;
        }
        lv[i] = (uint8_t)t;
    }
    if (nib) {
        for (int i = 0; i < 16; ++i) out[i] = (uint8_t)(lv[i] | (lv[i + 16] << 4));
    } else {
        memcpy(out, lv, 32);
    }
#endif
}

/* L[i] = clamp(nearest((x[i] + add) / d), lo, hi) + off for n (a multiple of 8) elements: the
 * K-quants' final pass against the fp16-rounded scales */
static inline void fgg_q_requant(const float *x, int n, float add, float d, int lo, int hi, int off, uint8_t *L) {
#if FGG_IQ_SIMD
    for (int i = 0; i < n; i += FGG_Q_W) {
        fgg_q_vf8 v;
        memcpy(&v, x + i, sizeof v);
        fgg_q_vi8 l = fgg_q_clamp8(fgg_q_round8((v + add) / d), lo, hi) + off;
        fgg_q_store_bytes(L + i, l);
    }
#else
    for (int i = 0; i < n; ++i) L[i] = (uint8_t)(fgg_q_clampi(fgg_iq_nearest_int((x[i] + add) / d), lo, hi) + off);
#endif
}

/* The scans that the vector paths fall back to where a tie or the sign of a zero decides */
static inline float fgg_q_signed_amax_scan(const float *x, int n) {
    float amax = 0.0f, vmax = 0.0f;
    for (int i = 0; i < n; ++i) {
        if (fabsf(x[i]) > amax) { amax = fabsf(x[i]); vmax = x[i]; }
    }
    return vmax;
}

static inline void fgg_q_minmax_scan(const float *x, int n, float *vmin, float *vmax) {
    float lo = FLT_MAX, up = -FLT_MAX;
    for (int j = 0; j < n; ++j) {
        if (x[j] < lo) lo = x[j];
        if (x[j] > up) up = x[j];
    }
    *vmin = lo;
    *vmax = up;
}

/* the first x[i] of largest magnitude, with its sign (+0 when all are zero), n a multiple of 16 */
static inline float fgg_q_signed_amax(const float *x, int n) {
#if FGG_IQ_SIMD && defined(__AVX2__)
    /* 8 lanes in the AVX-512 build too (see fgg_q_amax_bits); four chains of extremes where n allows */
    const int chains = n % 32 == 0 ? 4 : 1;
    __m256 up[4], lo[4];
    for (int k = 0; k < 4; ++k) up[k] = lo[k] = _mm256_setzero_ps();
    for (int i = 0; i < n; i += 8 * chains) {
        for (int k = 0; k < chains; ++k) {
            const __m256 v = _mm256_loadu_ps(x + i + 8 * k);
            up[k] = _mm256_max_ps(v, up[k]); /* v > up ? v : up */
            lo[k] = _mm256_min_ps(v, lo[k]);
        }
    }
    const float top = fgg_q_hmax256(_mm256_max_ps(_mm256_max_ps(up[0], up[1]), _mm256_max_ps(up[2], up[3])));
    const float neg_bottom = fgg_q_hmax256(_mm256_sub_ps(_mm256_setzero_ps(),
                                                         _mm256_min_ps(_mm256_min_ps(lo[0], lo[1]), _mm256_min_ps(lo[2], lo[3]))));
    if (__builtin_expect(top != neg_bottom, 1)) return top > neg_bottom ? top : -neg_bottom; /* no branch */
    if (top == 0.0f) return 0.0f;
#elif FGG_IQ_SIMD
    /* the extremes decide it unless +m and -m both occur; then the first of them does. Starting
     * from zero, as the scan does, a NaN (a callee may pass one) is never taken, as in the scan. */
    fgg_q_vf8 up = fgg_q_splat8(0.0f), lo = up;
    for (int i = 0; i < n; i += FGG_Q_W) {
        fgg_q_vf8 v;
        memcpy(&v, x + i, sizeof v);
        up = fgg_q_fsel(v > up, v, up);
        lo = fgg_q_fsel(v < lo, v, lo);
    }
    const float top = fgg_q_hmax(up), neg_bottom = fgg_q_hmax(-lo);
    if (__builtin_expect(top != neg_bottom, 1)) return top > neg_bottom ? top : -neg_bottom; /* no branch */
    if (top == 0.0f) return 0.0f;
#endif
    return fgg_q_signed_amax_scan(x, n);
}

/* Symmetric search: the scale d with levels l in [-nmax, nmax-1] (stored as l + nmax in L) that
 * maximizes (sum w x l)^2 / sum w l^2 over 19 trial inverse scales around -nmax/max, where max
 * is the signed value of largest magnitude. w NULL means w = x^2. Returns d (0 and all-zero L for
 * a group below FGG_Q_EPS). */
static inline float fgg_q_fit_signed(int n, int nmax, const float *x, int8_t *L, const float *w) {
    const float vmax = fgg_q_signed_amax(x, n);
    if (fabsf(vmax) < FGG_Q_EPS) {
        memset(L, 0, (size_t)n);
        return 0.0f;
    }
    float wt[256];
    for (int i = 0; i < n; ++i) wt[i] = w ? w[i] : x[i] * x[i];
    float iscale = (float)(-nmax) / vmax;
    float sumlx = 0.0f, suml2 = 0.0f;
    for (int i = 0; i < n; ++i) {
        int l = fgg_q_clampi(fgg_iq_nearest_int(iscale * x[i]), -nmax, nmax - 1);
        L[i] = (int8_t)(l + nmax);
        float fl = (float)l;
        sumlx += wt[i] * x[i] * fl;
        suml2 += wt[i] * fl * fl;
    }
    float scale = suml2 != 0.0f ? sumlx / suml2 : 0.0f;
    float best = scale * sumlx;
    int8_t trial[256];
    for (int is = -9; is <= 9; ++is) {
        if (is == 0) continue;
        iscale = -((float)nmax + 0.1f * (float)is) / vmax;
        sumlx = 0.0f;
        suml2 = 0.0f;
        for (int i = 0; i < n; ++i) {
            int l = fgg_q_clampi(fgg_iq_nearest_int(iscale * x[i]), -nmax, nmax - 1);
            trial[i] = (int8_t)(l + nmax);
            float fl = (float)l;
            sumlx += wt[i] * x[i] * fl;
            suml2 += wt[i] * fl * fl;
        }
        if (suml2 > 0.0f && sumlx * sumlx > best * suml2) {
            memcpy(L, trial, (size_t)n);
            scale = sumlx / suml2;
            best = scale * sumlx;
        }
    }
    return scale;
}

/* Affine search: levels l in [0, nmax] for x ~ scale * l + min with min <= 0, weights w, over
 * nstep + 1 trial inverse scales (rmin + rdelta * is + nmax) / (max - min), each followed by
 * the weighted least-squares scale and min for its levels. The error is the weighted squared
 * (mad: absolute) difference. Writes -min to *neg_min and returns the scale. */
static inline float fgg_q_fit_affine(int n, int nmax, const float *x, const float *w, uint8_t *L,
                              float *neg_min, float rmin, float rdelta, int nstep, int mad) {
    float vmin = x[0], vmax = x[0];
    float sum_w = w[0];
    float sum_x = sum_w * x[0];
    for (int i = 1; i < n; ++i) {
        if (x[i] < vmin) vmin = x[i];
        if (x[i] > vmax) vmax = x[i];
        sum_w += w[i];
        sum_x += w[i] * x[i];
    }
    if (vmin > 0.0f) vmin = 0.0f;
    if (vmax <= vmin) {
        memset(L, 0, (size_t)n);
        *neg_min = -vmin;
        return 0.0f;
    }
    float iscale = (float)nmax / (vmax - vmin);
    float scale = 1.0f / iscale;
    float best = 0.0f;
    for (int i = 0; i < n; ++i) {
        int l = fgg_q_clampi(fgg_iq_nearest_int(iscale * (x[i] - vmin)), 0, nmax);
        L[i] = (uint8_t)l;
        float diff = scale * (float)l + vmin - x[i];
        diff = mad ? fabsf(diff) : diff * diff;
        best += w[i] * diff;
    }
    if (nstep < 1) {
        *neg_min = -vmin;
        return scale;
    }
    uint8_t trial[256];
    for (int is = 0; is <= nstep; ++is) {
        /* a better fit replaces vmin, and later trials start from it */
        iscale = (rmin + rdelta * (float)is + (float)nmax) / (vmax - vmin);
        float sum_l = 0.0f, sum_l2 = 0.0f, sum_xl = 0.0f;
        for (int i = 0; i < n; ++i) {
            int l = fgg_q_clampi(fgg_iq_nearest_int(iscale * (x[i] - vmin)), 0, nmax);
            trial[i] = (uint8_t)l;
            float fl = (float)l;
            float wl = w[i] * fl;
            sum_l += wl;
            sum_l2 += wl * fl;
            sum_xl += wl * x[i];
        }
        float D = sum_w * sum_l2 - sum_l * sum_l;
        if (D > 0.0f) {
            float this_scale = (sum_w * sum_xl - sum_x * sum_l) / D;
            float this_min = (sum_l2 * sum_x - sum_l * sum_xl) / D;
            if (this_min > 0.0f) {
                this_min = 0.0f;
                this_scale = sum_xl / sum_l2;
            }
            float err = 0.0f;
            for (int i = 0; i < n; ++i) {
                float diff = this_scale * (float)trial[i] + this_min - x[i];
                diff = mad ? fabsf(diff) : diff * diff;
                err += w[i] * diff;
            }
            if (err < best) {
                memcpy(L, trial, (size_t)n);
                best = err;
                scale = this_scale;
                vmin = this_min;
            }
        }
    }
    *neg_min = -vmin;
    return scale;
}

#if FGG_IQ_SIMD
/* The vector cores take FGG_Q_LANES groups, FGG_Q_G vectors of FGG_Q_W lanes. */
#define FGG_Q_LANES (FGG_Q_G * FGG_Q_W)

static void fgg__q_fit_signed_w(int n, int nmax, const float *const xs[], const float *const ws[],
                                int8_t *const Ls[], float out[]) {
    fgg_q_vf8 x[32][FGG_Q_G], w[32][FGG_Q_G], wx[32][FGG_Q_G], t[32];
    fgg_q_vi8 L[32][FGG_Q_G];
    for (int h = 0; h < FGG_Q_G; ++h) {
        fgg_q_transpose8(n, xs + h * FGG_Q_W, t);
        for (int i = 0; i < n; ++i) x[i][h] = t[i];
        if (ws[0]) {
            fgg_q_transpose8(n, ws + h * FGG_Q_W, t);
            for (int i = 0; i < n; ++i) w[i][h] = t[i];
        } else {
            for (int i = 0; i < n; ++i) w[i][h] = x[i][h] * x[i][h];
        }
    }
    for (int i = 0; i < n; ++i) {
        for (int h = 0; h < FGG_Q_G; ++h) wx[i][h] = w[i][h] * x[i][h]; /* (w x) l, as the scalar sums group it */
    }
    const fgg_q_vf8 zf = fgg_q_splat8(0.0f);
    fgg_q_vf8 amax[FGG_Q_G] = {zf}, vmax[FGG_Q_G] = {zf}, sumlx[FGG_Q_G] = {zf}, suml2[FGG_Q_G] = {zf};
    fgg_q_vf8 iscale[FGG_Q_G], scale[FGG_Q_G], best[FGG_Q_G];
    fgg_q_vi8 zero[FGG_Q_G];
    for (int i = 0; i < n; ++i) {
        for (int h = 0; h < FGG_Q_G; ++h) {
            fgg_q_vf8 a = fgg_q_abs8(x[i][h]);
            fgg_q_vi8 m = a > amax[h];
            amax[h] = fgg_q_fsel(m, a, amax[h]);
            vmax[h] = fgg_q_fsel(m, x[i][h], vmax[h]);
        }
    }
    for (int h = 0; h < FGG_Q_G; ++h) {
        zero[h] = amax[h] < FGG_Q_EPS;
        iscale[h] = (float)(-nmax) / vmax[h];
    }
    for (int i = 0; i < n; ++i) {
        for (int h = 0; h < FGG_Q_G; ++h) {
            fgg_q_vi8 l = fgg_q_clamp8(fgg_q_round8(iscale[h] * x[i][h]), -nmax, nmax - 1);
            L[i][h] = l + nmax;
            fgg_q_vf8 fl = fgg_q_tof8(l);
            sumlx[h] += wx[i][h] * fl;
            suml2[h] += w[i][h] * fl * fl;
        }
    }
    for (int h = 0; h < FGG_Q_G; ++h) {
        scale[h] = fgg_q_fsel(suml2[h] != 0.0f, sumlx[h] / suml2[h], zf);
        best[h] = scale[h] * sumlx[h];
    }
    /* the winning trial's inverse scale is kept and its levels computed again at the end, instead
     * of copied every time a trial wins */
    fgg_q_vf8 won_iscale[FGG_Q_G];
    fgg_q_vi8 won[FGG_Q_G];
    for (int h = 0; h < FGG_Q_G; ++h) {
        const fgg_q_vi8 none = {0};
        won_iscale[h] = zf;
        won[h] = none;
    }
    for (int is = -9; is <= 9; ++is) {
        if (is == 0) continue;
        const float num = -((float)nmax + 0.1f * (float)is);
        for (int h = 0; h < FGG_Q_G; ++h) {
            iscale[h] = num / vmax[h];
            sumlx[h] = zf;
            suml2[h] = zf;
        }
        for (int i = 0; i < n; ++i) {
            for (int h = 0; h < FGG_Q_G; ++h) {
                fgg_q_vi8 l = fgg_q_clamp8(fgg_q_round8(iscale[h] * x[i][h]), -nmax, nmax - 1);
                fgg_q_vf8 fl = fgg_q_tof8(l);
                sumlx[h] += wx[i][h] * fl;
                suml2[h] += w[i][h] * fl * fl;
            }
        }
        for (int h = 0; h < FGG_Q_G; ++h) {
            fgg_q_vi8 upd = (suml2[h] > 0.0f) & (sumlx[h] * sumlx[h] > best[h] * suml2[h]);
            won[h] |= upd;
            won_iscale[h] = fgg_q_fsel(upd, iscale[h], won_iscale[h]);
            scale[h] = fgg_q_fsel(upd, sumlx[h] / suml2[h], scale[h]);
            best[h] = fgg_q_fsel(upd, scale[h] * sumlx[h], best[h]);
        }
    }
    for (int i = 0; i < n; ++i) /* the winning trial's levels (its own float steps again) */
        for (int h = 0; h < FGG_Q_G; ++h)
            L[i][h] = fgg_q_isel(won[h], fgg_q_clamp8(fgg_q_round8(won_iscale[h] * x[i][h]), -nmax, nmax - 1) + nmax, L[i][h]);
    for (int h = 0; h < FGG_Q_G; ++h) {
        fgg_q_vf8 r = fgg_q_fsel(zero[h], zf, scale[h]);
        for (int k = 0; k < FGG_Q_W; ++k) {
            const int g = h * FGG_Q_W + k;
            out[g] = r[k];
            for (int i = 0; i < n; ++i) Ls[g][i] = zero[h][k] ? 0 : (int8_t)L[i][h][k];
        }
    }
}

static void fgg__q_fit_affine_w(int n, int nmax, const float *const xs[], const float *const ws[],
                                uint8_t *const Ls[], float out[], float neg_min[], float rmin,
                                float rdelta, int nstep, int mad) {
    fgg_q_vf8 x[32][FGG_Q_G], w[32][FGG_Q_G], t[32], T[32][FGG_Q_G];
    fgg_q_vi8 L[32][FGG_Q_G];
    for (int h = 0; h < FGG_Q_G; ++h) {
        fgg_q_transpose8(n, xs + h * FGG_Q_W, t);
        for (int i = 0; i < n; ++i) x[i][h] = t[i];
        fgg_q_transpose8(n, ws + h * FGG_Q_W, t);
        for (int i = 0; i < n; ++i) w[i][h] = t[i];
    }
    const fgg_q_vf8 zf = fgg_q_splat8(0.0f);
    fgg_q_vf8 vmin[FGG_Q_G], vmax[FGG_Q_G], sum_w[FGG_Q_G], sum_x[FGG_Q_G], vmin0[FGG_Q_G], iscale[FGG_Q_G], scale[FGG_Q_G], best[FGG_Q_G] = {zf};
    fgg_q_vi8 flat[FGG_Q_G];
    for (int h = 0; h < FGG_Q_G; ++h) {
        vmin[h] = x[0][h];
        vmax[h] = x[0][h];
        sum_w[h] = w[0][h];
        sum_x[h] = sum_w[h] * x[0][h];
    }
    for (int i = 1; i < n; ++i) {
        for (int h = 0; h < FGG_Q_G; ++h) {
            vmin[h] = fgg_q_fsel(x[i][h] < vmin[h], x[i][h], vmin[h]);
            vmax[h] = fgg_q_fsel(x[i][h] > vmax[h], x[i][h], vmax[h]);
            sum_w[h] += w[i][h];
            sum_x[h] += w[i][h] * x[i][h];
        }
    }
    for (int h = 0; h < FGG_Q_G; ++h) {
        vmin[h] = fgg_q_fsel(vmin[h] > 0.0f, zf, vmin[h]);
        vmin0[h] = vmin[h];
        flat[h] = vmax[h] <= vmin[h];
        iscale[h] = (float)nmax / (vmax[h] - vmin[h]);
        scale[h] = 1.0f / iscale[h];
    }
    for (int i = 0; i < n; ++i) {
        for (int h = 0; h < FGG_Q_G; ++h) {
            fgg_q_vi8 l = fgg_q_clamp8(fgg_q_round8(iscale[h] * (x[i][h] - vmin[h])), 0, nmax);
            L[i][h] = l;
            fgg_q_vf8 diff = scale[h] * fgg_q_tof8(l) + vmin[h] - x[i][h];
            diff = mad ? fgg_q_abs8(diff) : diff * diff;
            best[h] += w[i][h] * diff;
        }
    }
    /* a trial's levels come from its iscale and the vmin of that moment: kept for the best trial, the
     * levels are computed again at the end instead of copied every time a trial wins */
    fgg_q_vf8 won_iscale[FGG_Q_G], won_vmin[FGG_Q_G];
    fgg_q_vi8 won[FGG_Q_G];
    for (int h = 0; h < FGG_Q_G; ++h) {
        const fgg_q_vi8 none = {0};
        won_iscale[h] = won_vmin[h] = zf;
        won[h] = none;
    }
    for (int is = 0; is <= nstep; ++is) {
        const float num = rmin + rdelta * (float)is + (float)nmax;
        fgg_q_vf8 sum_l[FGG_Q_G] = {zf}, sum_l2[FGG_Q_G] = {zf}, sum_xl[FGG_Q_G] = {zf};
        for (int h = 0; h < FGG_Q_G; ++h) iscale[h] = num / (vmax[h] - vmin[h]);
        for (int i = 0; i < n; ++i) {
            for (int h = 0; h < FGG_Q_G; ++h) {
                fgg_q_vi8 l = fgg_q_clamp8(fgg_q_round8(iscale[h] * (x[i][h] - vmin[h])), 0, nmax);
                fgg_q_vf8 fl = fgg_q_tof8(l);
                T[i][h] = fl;
                fgg_q_vf8 wl = w[i][h] * fl;
                sum_l[h] += wl;
                sum_l2[h] += wl * fl;
                sum_xl[h] += wl * x[i][h];
            }
        }
        fgg_q_vf8 this_scale[FGG_Q_G], this_min[FGG_Q_G], err[FGG_Q_G] = {zf};
        fgg_q_vi8 ok[FGG_Q_G];
        for (int h = 0; h < FGG_Q_G; ++h) {
            fgg_q_vf8 D = sum_w[h] * sum_l2[h] - sum_l[h] * sum_l[h];
            ok[h] = D > 0.0f;
            this_scale[h] = (sum_w[h] * sum_xl[h] - sum_x[h] * sum_l[h]) / D;
            this_min[h] = (sum_l2[h] * sum_x[h] - sum_l[h] * sum_xl[h]) / D;
            fgg_q_vi8 pos = this_min[h] > 0.0f;
            this_min[h] = fgg_q_fsel(pos, zf, this_min[h]);
            this_scale[h] = fgg_q_fsel(pos, sum_xl[h] / sum_l2[h], this_scale[h]);
        }
        for (int i = 0; i < n; ++i) {
            for (int h = 0; h < FGG_Q_G; ++h) {
                fgg_q_vf8 diff = this_scale[h] * T[i][h] + this_min[h] - x[i][h];
                diff = mad ? fgg_q_abs8(diff) : diff * diff;
                err[h] += w[i][h] * diff;
            }
        }
        for (int h = 0; h < FGG_Q_G; ++h) {
            fgg_q_vi8 upd = ok[h] & (err[h] < best[h]);
            won[h] |= upd;
            won_iscale[h] = fgg_q_fsel(upd, iscale[h], won_iscale[h]);
            won_vmin[h] = fgg_q_fsel(upd, vmin[h], won_vmin[h]);
            best[h] = fgg_q_fsel(upd, err[h], best[h]);
            scale[h] = fgg_q_fsel(upd, this_scale[h], scale[h]);
            vmin[h] = fgg_q_fsel(upd, this_min[h], vmin[h]);
        }
    }
    for (int i = 0; i < n; ++i) /* the winning trial's levels (its own float steps again) */
        for (int h = 0; h < FGG_Q_G; ++h)
            L[i][h] = fgg_q_isel(won[h], fgg_q_clamp8(fgg_q_round8(won_iscale[h] * (x[i][h] - won_vmin[h])), 0, nmax), L[i][h]);
    for (int h = 0; h < FGG_Q_G; ++h) {
        fgg_q_vf8 sc = fgg_q_fsel(flat[h], zf, scale[h]);
        fgg_q_vf8 mn = fgg_q_fsel(flat[h], vmin0[h], vmin[h]);
        for (int k = 0; k < FGG_Q_W; ++k) {
            const int g = h * FGG_Q_W + k;
            out[g] = sc[k];
            neg_min[g] = -mn[k];
            for (int i = 0; i < n; ++i) Ls[g][i] = flat[h][k] ? 0 : (uint8_t)L[i][h][k];
        }
    }
}
#endif

/* fgg_q_fit_signed on count groups: xs[k], ws[k] (all NULL: weights x^2) -> Ls[k], out[k] */
static void fgg_q_fit_signed_n(int count, int n, int nmax, const float *const xs[], const float *const ws[],
                               int8_t *const Ls[], float out[]) {
#if FGG_IQ_SIMD
    for (int g0 = 0; g0 < count; g0 += FGG_Q_LANES) {
        const float *px[FGG_Q_LANES], *pw[FGG_Q_LANES];
        int8_t *pl[FGG_Q_LANES], spare[32];
        float o[FGG_Q_LANES];
        for (int k = 0; k < FGG_Q_LANES; ++k) { /* a short tail repeats its last group */
            const int g = g0 + k < count ? g0 + k : count - 1;
            px[k] = xs[g];
            pw[k] = ws[g];
            pl[k] = g0 + k < count ? Ls[g] : spare;
        }
        fgg__q_fit_signed_w(n, nmax, px, pw, pl, o);
        for (int k = 0; k < FGG_Q_LANES && g0 + k < count; ++k) out[g0 + k] = o[k];
    }
#else
    for (int k = 0; k < count; ++k) out[k] = fgg_q_fit_signed(n, nmax, xs[k], Ls[k], ws[k]);
#endif
}

/* fgg_q_fit_affine on count groups; nstep >= 1 */
static void fgg_q_fit_affine_n(int count, int n, int nmax, const float *const xs[], const float *const ws[],
                               uint8_t *const Ls[], float out[], float neg_min[], float rmin, float rdelta,
                               int nstep, int mad) {
#if FGG_IQ_SIMD
    for (int g0 = 0; g0 < count; g0 += FGG_Q_LANES) {
        const float *px[FGG_Q_LANES], *pw[FGG_Q_LANES];
        uint8_t *pl[FGG_Q_LANES], spare[32];
        float o[FGG_Q_LANES], m[FGG_Q_LANES];
        for (int k = 0; k < FGG_Q_LANES; ++k) {
            const int g = g0 + k < count ? g0 + k : count - 1;
            px[k] = xs[g];
            pw[k] = ws[g];
            pl[k] = g0 + k < count ? Ls[g] : spare;
        }
        fgg__q_fit_affine_w(n, nmax, px, pw, pl, o, m, rmin, rdelta, nstep, mad);
        for (int k = 0; k < FGG_Q_LANES && g0 + k < count; ++k) {
            out[g0 + k] = o[k];
            neg_min[g0 + k] = m[k];
        }
    }
#else
    for (int k = 0; k < count; ++k)
        out[k] = fgg_q_fit_affine(n, nmax, xs[k], ws[k], Ls[k], &neg_min[k], rmin, rdelta, nstep, mad);
#endif
}

/* ---- Q4_0 / Q5_0: d = (signed value of largest magnitude) / -2^(bits-1) ---- */

#if FGG_IQ_SIMD && defined(__AVX2__)
/* 32 levels (0..31) in L: the low nibbles to qs (level j, level j + 16 in one byte), bit 4 to qh4 */
static inline void fgg__q_store_q5_avx2(uint8_t *qs, uint8_t *qh4, __m256i L) {
    const uint32_t bits = (uint32_t)_mm256_movemask_epi8(_mm256_slli_epi16(L, 3)); /* bit 4 of each level */
    const __m128i m = _mm_set1_epi8(0x0f);
    const __m128i low = _mm_and_si128(_mm256_castsi256_si128(L), m);
    const __m128i high = _mm_slli_epi16(_mm_and_si128(_mm256_extracti128_si256(L, 1), m), 4);
    _mm_storeu_si128((__m128i *)qs, _mm_or_si128(low, high));
    qh4[0] = (uint8_t)bits; qh4[1] = (uint8_t)(bits >> 8); qh4[2] = (uint8_t)(bits >> 16); qh4[3] = (uint8_t)(bits >> 24);
}
#endif

static inline void fgg__q_store_q5_high(uint8_t *qs, uint8_t *qh4, const uint8_t *lv) {
#if FGG_IQ_SIMD && defined(__AVX2__)
    fgg__q_store_q5_avx2(qs, qh4, _mm256_loadu_si256((const __m256i *)lv));
    return;
#endif
    uint32_t qh = 0;
    for (int j = 0; j < 16; ++j) {
        qs[j] = (uint8_t)((lv[j] & 0x0f) | ((lv[j + 16] & 0x0f) << 4));
        qh |= (uint32_t)((lv[j] >> 4) & 1u) << j;
        qh |= (uint32_t)((lv[j + 16] >> 4) & 1u) << (j + 16);
    }
    qh4[0] = (uint8_t)qh; qh4[1] = (uint8_t)(qh >> 8); qh4[2] = (uint8_t)(qh >> 16); qh4[3] = (uint8_t)(qh >> 24);
}

/* One block of Q4_0 (half = 8: out gets packed nibbles) or Q5_0 (half = 16: out gets 32 levels)
 * without importance weights. */
static inline float fgg__q_block_sym(const float *x, int half, uint8_t *out) {
    const float vmax = fgg_q_signed_amax(x, 32);
    const float d = vmax / (float)(-half);
    const float id = d != 0.0f ? 1.0f / d : 0.0f;
    fgg_q_trunc_levels32(x, 0.0f, id, (float)half + 0.5f, 2 * half - 1, 1, half == 8, out);
    return d;
}

/* block bytes of Q4_0 / Q5_0 (affine 0) or Q4_1 / Q5_1 (affine 1), bits 4 / 5, or Q8_0 (bits 8) */
static inline size_t fgg__q_legacy_bsz(int affine, int bits) {
    return bits == 8 ? 34 : (size_t)(affine ? 4 : 2) + 16 + (bits == 5 ? 4 : 0);
}

/* imatrix paths of Q4_0/Q5_0 (signed fit) and Q4_1/Q5_1 (affine fit): sigma2 is the row's mean
 * square; blocks are fitted sixteen at a time. */
static void fgg__q_rows_legacy_w(const float *src, uint8_t *dst, int64_t n_rows, int64_t n_per_row,
                                 const float *imatrix, int affine, int bits) {
    const size_t bsz = fgg__q_legacy_bsz(affine, bits);
    const int nmax = affine ? (1 << bits) - 1 : 1 << (bits - 1);
    const int64_t nb = n_per_row / 32;
    float w[16 * 32], d[16], neg_min[16];
    uint8_t lv[16][32];
    const float *xs[16], *ws[16];
    uint8_t *Lu[16];
    int8_t *Ls[16];
    for (int k = 0; k < 16; ++k) {
        ws[k] = w + 32 * k;
        Lu[k] = lv[k];
        Ls[k] = (int8_t *)lv[k];
    }
    for (int64_t r = 0; r < n_rows; ++r) {
        const float *x = src + r * n_per_row;
        uint8_t *y = dst + (size_t)r * (size_t)nb * bsz;
        const float sigma2 = fgg_q_sumsq(x, n_per_row) / (float)n_per_row;
        for (int64_t ib0 = 0; ib0 < nb; ib0 += 16) {
            const int cnt = nb - ib0 < 16 ? (int)(nb - ib0) : 16;
            for (int k = 0; k < cnt; ++k) {
                xs[k] = x + 32 * (ib0 + k);
                fgg_q_rms_weights(32, imatrix + 32 * (ib0 + k), xs[k], sigma2, w + 32 * k);
            }
            if (affine) fgg_q_fit_affine_n(cnt, 32, nmax, xs, ws, Lu, d, neg_min, -0.9f, 0.05f, 36, 0);
            else fgg_q_fit_signed_n(cnt, 32, nmax, xs, ws, Ls, d);
            for (int k = 0; k < cnt; ++k) {
                uint8_t *blk = y + (size_t)(ib0 + k) * bsz;
                fgg_q_put16(blk, fgg_iq_fp16(d[k]));
                uint8_t *q = blk + 2;
                if (affine) {
                    fgg_q_put16(blk + 2, fgg_iq_fp16(-neg_min[k]));
                    q = blk + 4;
                }
                if (bits == 5) {
                    fgg__q_store_q5_high(q + 4, q, lv[k]);
                } else {
                    for (int j = 0; j < 16; ++j) q[j] = (uint8_t)(lv[k][j] | (lv[k][j + 16] << 4));
                }
            }
        }
    }
}

/* ---- Q4_1 / Q5_1: d = (max - min) / (2^bits - 1), offset min ---- */

/* One block of Q4_1 (bits 4: out gets packed nibbles) or Q5_1 (bits 5: 32 levels) */
static inline void fgg__q_block_affine(const float *x, int bits, uint8_t *out, float *d_out, float *m_out) {
    float vmin = FLT_MAX, vmax = -FLT_MAX;
#if FGG_IQ_SIMD
    /* lanes find the same extremes; only the sign of a zero extreme depends on which zero came
     * first, so those blocks take the scalar scan */
    fgg_q_vf8 lo = fgg_q_splat8(FLT_MAX), up = fgg_q_splat8(-FLT_MAX);
    for (int j = 0; j < 32; j += FGG_Q_W) {
        fgg_q_vf8 v;
        memcpy(&v, x + j, sizeof v);
        lo = fgg_q_fsel(v < lo, v, lo);
        up = fgg_q_fsel(v > up, v, up);
    }
    vmin = -fgg_q_hmax(-lo);
    vmax = fgg_q_hmax(up);
    if (vmin == 0.0f || vmax == 0.0f)
#endif
        fgg_q_minmax_scan(x, 32, &vmin, &vmax);
    const float d = (vmax - vmin) / (float)((1 << bits) - 1);
    const float id = d != 0.0f ? 1.0f / d : 0.0f;
    fgg_q_trunc_levels32(x, vmin, id, 0.5f, 15, bits == 4, bits == 4, out);
    *d_out = d;
    *m_out = vmin;
}

#if FGG_IQ_SIMD && defined(__AVX2__)
/* Per-lane extremes of one 32-value block (up = v > up ? v : up from start_up, lo likewise). The
 * AVX-512 build keeps these 8-lane steps: 16-lane ones measured 5-10 % slower here. */
static inline void fgg__q_extremes32_avx2(const float *x, __m256 start_up, __m256 start_lo, __m256 *up, __m256 *lo) {
    __m256 u = start_up, l = start_lo;
    for (int c = 0; c < 4; ++c) {
        const __m256 v = _mm256_loadu_ps(x + 8 * c);
        u = _mm256_max_ps(v, u);
        l = _mm256_min_ps(v, l);
    }
    *up = u;
    *lo = l;
}

/* The 32 levels (int)((x - sub) * id + off) of one block kept in 0..hi, as bytes in order;
 * subtract = 0 skips x - 0, which is x. A level is 0..2^bits or, for a NaN/inf product, INT_MIN
 * (whose low byte, 0, ggml stores): the signed pack to 16 bits makes that -32768, kept in lowest
 * (see fgg__q_rows_checked), and the unsigned pack to bytes 0 */
static inline __m256i fgg__q_levels32_avx2(const float *x, int subtract, float sub, float id, float off, int hi,
                                           __m256i *lowest) {
    __m256i t[4];
    for (int c = 0; c < 4; ++c) {
        __m256 v = _mm256_loadu_ps(x + 8 * c);
        if (subtract) v = _mm256_sub_ps(v, _mm256_set1_ps(sub));
        t[c] = _mm256_cvttps_epi32(_mm256_add_ps(_mm256_mul_ps(v, _mm256_set1_ps(id)), _mm256_set1_ps(off)));
    }
    const __m256i w0 = _mm256_packs_epi32(t[0], t[1]), w1 = _mm256_packs_epi32(t[2], t[3]);
    *lowest = _mm256_min_epi16(*lowest, _mm256_min_epi16(w0, w1));
    __m256i b = _mm256_permutevar8x32_epi32(_mm256_packus_epi16(w0, w1), _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7));
    if (hi < 255) b = _mm256_min_epu8(b, _mm256_set1_epi8((char)hi));
    return b;
}

/* Eight blocks of Q4_0 / Q5_0 (signed: d = signed largest magnitude / -2^(bits-1)) or Q4_1 / Q5_1
 * (affine: d = (max - min) / (2^bits - 1), offset min) without importance weights: the extremes
 * of 8 blocks reduce together, d, 1/d and fp16 run once per 8 blocks, then each block's levels */
static void fgg__q_legacy8_avx2(const float *x, uint8_t *y, int affine, int bits, __m256i *lowest) {
    const int half = 1 << (bits - 1);
    const size_t bsz = fgg__q_legacy_bsz(affine, bits);
    const int hi = affine ? (bits == 4 ? 15 : 255) : 2 * half - 1; /* Q5_1 keeps the low byte */
    const __m256 zero = _mm256_setzero_ps();
    __m256 up[8], lo[8];
    for (int b = 0; b < 8; ++b) /* the scans' starts */
        fgg__q_extremes32_avx2(x + 32 * b, affine ? _mm256_set1_ps(-FLT_MAX) : zero, affine ? _mm256_set1_ps(FLT_MAX) : zero,
                               &up[b], &lo[b]);
    const __m256 top = fgg_q_tree8_avx2(up, FGG_Q_TREE_MAX), bottom = fgg_q_tree8_avx2(lo, FGG_Q_TREE_MIN);
    const __m256 neg_bottom = _mm256_sub_ps(zero, bottom);
    float vmax[8], vmin[8];
    int scan;
    if (affine) { /* a zero extreme's sign is the first zero's */
        _mm256_storeu_ps(vmax, top);
        _mm256_storeu_ps(vmin, bottom);
        scan = _mm256_movemask_ps(_mm256_or_ps(_mm256_cmp_ps(top, zero, _CMP_EQ_OQ), _mm256_cmp_ps(bottom, zero, _CMP_EQ_OQ)));
    } else { /* +m and -m both largest: the first of them */
        _mm256_storeu_ps(vmax, _mm256_blendv_ps(bottom, top, _mm256_cmp_ps(top, neg_bottom, _CMP_GT_OQ)));
        scan = _mm256_movemask_ps(_mm256_and_ps(_mm256_cmp_ps(top, neg_bottom, _CMP_EQ_OQ), _mm256_cmp_ps(top, zero, _CMP_NEQ_OQ)));
    }
    for (int b = 0; scan; ++b, scan >>= 1) {
        if (!(scan & 1)) continue;
        if (affine) fgg_q_minmax_scan(x + 32 * b, 32, &vmin[b], &vmax[b]);
        else vmax[b] = fgg_q_signed_amax_scan(x + 32 * b, 32);
    }
    const __m256 vmax8 = _mm256_loadu_ps(vmax);
    const __m256 d = affine ? _mm256_div_ps(_mm256_sub_ps(vmax8, _mm256_loadu_ps(vmin)), _mm256_set1_ps((float)((1 << bits) - 1)))
                            : _mm256_div_ps(vmax8, _mm256_set1_ps((float)(-half)));
    float id[8];
    _mm256_storeu_ps(id, fgg_q_inverse_or_zero_avx2(d));
    fgg_q_put16x8_avx2(y, bsz, d);
    if (affine) fgg_q_put16x8_avx2(y + 2, bsz, _mm256_loadu_ps(vmin));
    const float off = affine ? 0.5f : (float)half + 0.5f;
    __m256i low = *lowest; /* (a local: not a chain through memory) */
    for (int b = 0; b < 8; ++b) {
        uint8_t *qs = y + b * bsz + (affine ? 4 : 2) + (bits == 5 ? 4 : 0);
        const __m256i L = fgg__q_levels32_avx2(x + 32 * b, affine, affine ? vmin[b] : 0.0f, id[b], off, hi, &low);
        if (bits == 4) /* level j low, level j + 16 high (levels <= 15: the shift leaks nothing) */
            _mm_storeu_si128((__m128i *)qs, _mm_or_si128(_mm256_castsi256_si128(L), _mm_slli_epi16(_mm256_extracti128_si256(L, 1), 4)));
        else
            fgg__q_store_q5_avx2(qs, qs - 4, L);
    }
    *lowest = low;
}
#endif

/* ---- Q8_0 / Q8_1: d = amax / 127, q = round-half-away(x / d) (the importance matrix is unused) ---- */

static inline float fgg__q_block_q8(const float *x, int8_t *q) {
#if FGG_IQ_SIMD && defined(__AVX2__)
    const __m256 sign = _mm256_set1_ps(-0.0f);
    __m256 v[4], m = _mm256_setzero_ps();
    for (int c = 0; c < 4; ++c) {
        v[c] = _mm256_loadu_ps(x + 8 * c);
        m = _mm256_max_ps(m, _mm256_andnot_ps(sign, v[c]));
    }
    const float d = fgg_q_hmax256(m) / 127.0f;
    const __m256 id = _mm256_set1_ps(d != 0.0f ? 1.0f / d : 0.0f);
    __m256i t[4];
    for (int c = 0; c < 4; ++c) /* the int8_t store keeps the low byte (cvtps gives 0x80000000, low byte 0,
                                 * for the inf/NaN of a subnormal block's 1/d, as C's conversion does) */
        t[c] = fgg_q_lround_avx2(_mm256_mul_ps(v[c], id));
    _mm256_storeu_si256((__m256i *)q, fgg_q_pack_bytes_avx2(t[0], t[1], t[2], t[3]));
    return d;
#else
    const float d = fgg_q_amax(x, 32) / 127.0f;
    const float id = d != 0.0f ? 1.0f / d : 0.0f;
    fgg_q_round_scaled_i8(x, 32, id, q);
    return d;
#endif
}

#if FGG_IQ_SIMD && defined(__AVX2__)
/* Eight blocks of Q8_0: the largest magnitudes reduce together, d = amax / 127 and its inverse
 * once per 8 blocks, then each block's levels as in fgg__q_block_q8 (lowest: as in
 * fgg__q_levels32_avx2) */
static void fgg__q_q8_0_blocks8_avx2(const float *x, uint8_t *y, __m256i *lowest) {
    const __m256 sign = _mm256_set1_ps(-0.0f);
    __m256 m[8];
    for (int b = 0; b < 8; ++b) {
        m[b] = _mm256_setzero_ps();
        for (int c = 0; c < 4; ++c) m[b] = _mm256_max_ps(m[b], _mm256_andnot_ps(sign, _mm256_loadu_ps(x + 32 * b + 8 * c)));
    }
    const __m256 d = _mm256_div_ps(fgg_q_tree8_avx2(m, FGG_Q_TREE_MAX), _mm256_set1_ps(127.0f));
    float id[8];
    _mm256_storeu_ps(id, fgg_q_inverse_or_zero_avx2(d));
    fgg_q_put16x8_avx2(y, 34, d);
    __m256i low = *lowest;
    for (int b = 0; b < 8; ++b) {
        const __m256 idb = _mm256_set1_ps(id[b]);
        __m256i t[4];
        for (int c = 0; c < 4; ++c) {
            t[c] = fgg_q_lround_avx2(_mm256_mul_ps(_mm256_loadu_ps(x + 32 * b + 8 * c), idb));
            low = _mm256_min_epi32(low, t[c]);
        }
        _mm256_storeu_si256((__m256i *)(y + 34 * b + 2), fgg_q_pack_bytes_avx2(t[0], t[1], t[2], t[3]));
    }
    *lowest = low;
}
#endif

static void fgg_quantize_q8_1(const float *src, uint8_t *dst, int64_t n_rows, int64_t n_per_row,
                              const float *imatrix) {
    (void)imatrix;
    const int64_t nb = n_rows * (n_per_row / 32);
    for (int64_t i = 0; i < nb; ++i) {
        uint8_t *blk = dst + 36 * i;
        int8_t *q = (int8_t *)(blk + 4);
        float d = fgg__q_block_q8(src + 32 * i, q);
        int sum = 0;
        for (int j = 0; j < 32; ++j) sum += q[j];
        fgg_q_put16(blk, fgg_iq_fp16(d));
        fgg_q_put16(blk + 2, fgg_iq_fp16((float)sum * d));
    }
}

/* ---- Quantizing and checking in one pass ----
 * fgg_quantize_checked_<type>(src, dst, n_rows, n_per_row) is fgg_quantize_<type> without an
 * importance matrix for src that may hold NaN or infinities: it returns the first row holding one
 * (that row written in part, the rows after it not at all), or -1. No separate pass reads the
 * input: a NaN or an infinity makes its own level's product NaN (an infinity makes d infinite and
 * 1/d zero), which converts to INT_MIN; the few rows where that happens otherwise (1/d infinite,
 * a block of subnormals) are told apart by a look at their values. */

/* count blocks of those types one at a time (the blocks past a row's last 8) */
static void fgg__q_legacy_blocks(const float *x, uint8_t *y, int64_t count, int affine, int bits) {
    const size_t bsz = fgg__q_legacy_bsz(affine, bits);
    uint8_t lv[32];
    for (int64_t i = 0; i < count; ++i, x += 32, y += bsz) {
        if (bits == 8) {
            fgg_q_put16(y, fgg_iq_fp16(fgg__q_block_q8(x, (int8_t *)(y + 2))));
            continue;
        }
        uint8_t *qs = y + (affine ? 4 : 2) + (bits == 5 ? 4 : 0), *out = bits == 4 ? qs : lv;
        float d, m = 0.0f;
        if (affine) fgg__q_block_affine(x, bits, out, &d, &m);
        else d = fgg__q_block_sym(x, 1 << (bits - 1), out);
        fgg_q_put16(y, fgg_iq_fp16(d));
        if (affine) fgg_q_put16(y + 2, fgg_iq_fp16(m));
        if (bits == 5) fgg__q_store_q5_high(qs, qs - 4, lv);
    }
}

/* Rows of those types without an importance matrix, 8 blocks at a time with AVX2. check: return the
 * first row holding a NaN or an infinity (that row written in part, later rows not), or -1; else
 * every row is written and -1 returned. */
static int64_t fgg__q_legacy_rows(const float *src, uint8_t *dst, int64_t n_rows, int64_t n_per_row, int affine,
                                  int bits, int check) {
    const int64_t nb = n_per_row / 32;
    const size_t bsz = fgg__q_legacy_bsz(affine, bits);
    for (int64_t r = 0; r < n_rows; ++r) {
        const float *x = src + r * n_per_row;
        uint8_t *y = dst + (size_t)r * (size_t)nb * bsz;
        int64_t i = 0;
#if FGG_IQ_SIMD && defined(__AVX2__)
        __m256i lowest = _mm256_setzero_si256();
        for (; i + 8 <= nb; i += 8) {
            if (bits == 8) fgg__q_q8_0_blocks8_avx2(x + 32 * i, y + bsz * (size_t)i, &lowest);
            else fgg__q_legacy8_avx2(x + 32 * i, y + bsz * (size_t)i, affine, bits, &lowest);
        }
        /* an int16 -32768 in lowest: an INT_MIN level (Q8_0's int32 INT_MIN has it as its upper half) */
        if (check && _mm256_movemask_epi8(_mm256_cmpeq_epi16(lowest, _mm256_set1_epi16(INT16_MIN))) &&
            fgg_q_mag_bits(x, 32 * i) >= FGG_Q_INF_BITS)
            return r;
#endif
        if (i < nb) { /* the last blocks (all of them without AVX2): checked first */
            if (check && fgg_q_mag_bits(x + 32 * i, 32 * (nb - i)) >= FGG_Q_INF_BITS) return r;
            fgg__q_legacy_blocks(x + 32 * i, y + bsz * (size_t)i, nb - i, affine, bits);
        }
    }
    return -1;
}

/* the kernel table's entry points; with an importance matrix Q4_0 ... Q5_1 fit blocks instead */
#define FGG__Q_LEGACY_ENTRY(name, affine, bits)                                                          \
    static void fgg_quantize_##name(const float *src, uint8_t *dst, int64_t n_rows, int64_t n_per_row,  \
                                    const float *imatrix) {                                             \
        if (imatrix && (bits) != 8) fgg__q_rows_legacy_w(src, dst, n_rows, n_per_row, imatrix, affine, bits); \
        else fgg__q_legacy_rows(src, dst, n_rows, n_per_row, affine, bits, 0);                          \
    }                                                                                                   \
    static int64_t fgg_quantize_checked_##name(const float *src, uint8_t *dst, int64_t n_rows,          \
                                               int64_t n_per_row) {                                     \
        return fgg__q_legacy_rows(src, dst, n_rows, n_per_row, affine, bits, 1);                       \
    }
FGG__Q_LEGACY_ENTRY(q4_0, 0, 4)
FGG__Q_LEGACY_ENTRY(q4_1, 1, 4)
FGG__Q_LEGACY_ENTRY(q5_0, 0, 5)
FGG__Q_LEGACY_ENTRY(q5_1, 1, 5)
FGG__Q_LEGACY_ENTRY(q8_0, 0, 8) /* (Q8_0 has no importance-matrix path in ggml) */
#undef FGG__Q_LEGACY_ENTRY

#endif /* FGG_QUANT_LEGACY_H */
