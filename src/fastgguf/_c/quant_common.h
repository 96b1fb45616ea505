/* Helpers every quantizer family shares (quant_legacy.h, quant_kquant.h, quant_misc.h, quant_iq*.h);
 * fp16 and little-endian stores are base.h's.
 *
 * Every function here reproduces one float32 step of ggml's quantizers exactly (bit for bit on
 * any CPU, given -ffp-contract=off): the rounding rules that decide the bytes.
 *
 *   fgg_iq_nearest_int (v)   round to nearest, ties to even, by adding 1.5 * 2^23 and reading the
 *                            low mantissa bits of the sum (the result ggml's quantizers use, also
 *                            for inputs outside +-2^22 where it wraps)
 *   fgg_q_round_away (v)     round half away from zero (C's roundf/lroundf) for |v| < 2^31
 *   fgg_q_rms_weights (...)  imatrix weight: w * sqrt(sigma2 + x^2), per element
 *   fgg_q_fit_signed (...)   symmetric grid search (levels -nmax..nmax-1), weighted
 *   fgg_q_fit_affine (...)   grid search for a scale and a minimum (levels 0..nmax), weighted
 *   fgg_q_fit_signed_n / fgg_q_fit_affine_n   many fits at once, one per lane
 *
 * Vector helpers (GCC/Clang vector extensions; FGG_IQ_SIMD is 1 where they are used, 0 for the
 * plain C paths of other compilers and of FGG_NO_SIMD builds). Each lane runs the scalar
 * sequence of one independent computation, so the lane count never changes a result.
 *   fgg_iq_vf / fgg_iq_vi      FGG_IQ_W float / int32 lanes (16 AVX-512, 8 AVX, 4 otherwise)
 *   fgg_iq_splat (x)           all lanes = x
 *   fgg_iq_select (m, a, b)    lane-wise m ? a : b for a mask from a vector comparison
 *   fgg_iq_loadu (p)           FGG_IQ_W floats from any address
 */
#ifndef FGG_QUANT_COMMON_H
#define FGG_QUANT_COMMON_H

#include <float.h>
#include <math.h>
#include "base.h"

#define FGG_IQ_SIMD FGG_HAVE_VECEXT /* the lane-parallel paths (vector extensions) */

static inline int fgg_iq_nearest_int(float v) {
    float shifted = v + 12582912.0f; /* 1.5 * 2^23: the sum's low 23 bits hold the rounded v */
    int32_t bits;
    memcpy(&bits, &shifted, sizeof bits);
    return (bits & 0x007fffff) - 0x00400000;
}

#if FGG_IQ_SIMD
/* Lanes per vector: the build's native register width (the lane count never changes a result). */
#if FGG_HAVE_AVX512
#define FGG_IQ_W 16
#elif FGG_HAVE_AVX
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
FGG_IQ_INLINE unsigned fgg_iq_bits(fgg_iq_vi m) {
#if FGG_IQ_W == 16 && FGG_HAVE_AVX512
    __m512i v;
    memcpy(&v, &m, sizeof v);
    return (unsigned)_mm512_test_epi32_mask(v, v);
#elif FGG_IQ_W == 8 && FGG_HAVE_AVX
    __m256 v;
    memcpy(&v, &m, sizeof v);
    return (unsigned)_mm256_movemask_ps(v);
#elif FGG_IQ_W == 4 && FGG_HAVE_SSE2
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

#if FGG_IQ_SIMD && FGG_HAVE_SSE2
#define FGG_Q_X86_SQRT 1
#else
#define FGG_Q_X86_SQRT 0
#endif

#define FGG_Q_EPS 1e-15f /* a group whose largest magnitude is below this quantizes to zeros */

/* roundf / lroundf for |v| < 2^22: round to nearest even, then move a tie away from zero */
static inline int fgg_q_round_away(float v) {
    int n = fgg_iq_nearest_int(v);
    float diff = v - (float)n; /* exact */
    return n + ((diff == 0.5f) & (v > 0.0f)) - ((diff == -0.5f) & (v < 0.0f));
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
/* Vectors side by side (FGG_Q_G): 1 with AVX-512, else 2, to keep two chains of dependent sums
 * in flight. */
#if FGG_IQ_W == 16
#define FGG_Q_G 1
#else
#define FGG_Q_G 2
#endif

FGG_IQ_INLINE fgg_iq_vi fgg_q_isel(fgg_iq_vi m, fgg_iq_vi a, fgg_iq_vi b) {
    return (m & a) | (~m & b);
}
FGG_IQ_INLINE fgg_iq_vi fgg_q_round8(fgg_iq_vf v) { /* fgg_iq_nearest_int per lane */
    fgg_iq_vi bits = (fgg_iq_vi)(v + 12582912.0f);
    return (bits & 0x007fffff) - 0x00400000;
}
FGG_IQ_INLINE fgg_iq_vi fgg_q_clamp8(fgg_iq_vi v, int lo, int hi) {
#if FGG_IQ_W == 16
    return (fgg_iq_vi)_mm512_min_epi32(_mm512_max_epi32((__m512i)v, _mm512_set1_epi32(lo)), _mm512_set1_epi32(hi));
#elif FGG_IQ_W == 8 && FGG_HAVE_AVX2
    return (fgg_iq_vi)_mm256_min_epi32(_mm256_max_epi32((__m256i)v, _mm256_set1_epi32(lo)), _mm256_set1_epi32(hi));
#else
    v = fgg_q_isel(v < lo, v - v + lo, v);
    return fgg_q_isel(v > hi, v - v + hi, v);
#endif
}
FGG_IQ_INLINE fgg_iq_vf fgg_q_abs8(fgg_iq_vf v) {
    return (fgg_iq_vf)((fgg_iq_vi)v & 0x7fffffff);
}
FGG_IQ_INLINE fgg_iq_vf fgg_q_tof8(fgg_iq_vi v) {
    return __builtin_convertvector(v, fgg_iq_vf);
}
typedef uint8_t fgg_q_vb8 __attribute__((vector_size(FGG_IQ_W)));
/* low bytes of the lanes to p[0 .. FGG_IQ_W) */
FGG_IQ_INLINE void fgg_q_store_bytes(uint8_t *p, fgg_iq_vi v) {
    fgg_q_vb8 b = __builtin_convertvector(v & 0xff, fgg_q_vb8);
    memcpy(p, &b, sizeof b);
}
FGG_IQ_INLINE fgg_iq_vf fgg_q_splat8(float x) {
    fgg_iq_vf z = {0.0f};
    return z + x;
}
/* t[i] lane k = p[k][i] */
FGG_IQ_INLINE void fgg_q_transpose8(int n, const float *const p[], fgg_iq_vf *t) {
    for (int i = 0; i < n; ++i) {
        fgg_iq_vf v;
        for (int k = 0; k < FGG_IQ_W; ++k) v[k] = p[k][i];
        t[i] = v;
    }
}
#if FGG_HAVE_AVX
/* largest of 8 lanes (exact in any order: the lanes hold no NaN; the sign of a zero result is either) */
FGG_IQ_INLINE float fgg_q_hmax256(__m256 m) {
    __m128 h = _mm_max_ps(_mm256_castps256_ps128(m), _mm256_extractf128_ps(m, 1));
    h = _mm_max_ps(h, _mm_movehl_ps(h, h));
    return _mm_cvtss_f32(_mm_max_ss(h, _mm_shuffle_ps(h, h, 1)));
}
#endif
/* largest lane (exact in any order: the lanes hold no NaN; the sign of a zero result is either) */
FGG_IQ_INLINE float fgg_q_hmax(fgg_iq_vf m) {
#if FGG_IQ_W == 16
    return _mm512_reduce_max_ps((__m512)m);
#elif FGG_IQ_W == 8 && FGG_HAVE_AVX
    return fgg_q_hmax256((__m256)m);
#endif
    float a[FGG_IQ_W];
    memcpy(a, &m, sizeof a);
    for (int w = FGG_IQ_W / 2; w >= 1; w /= 2)
        for (int k = 0; k < w; ++k) a[k] = a[k + w] > a[k] ? a[k + w] : a[k];
    return a[0];
}
#endif

#if FGG_IQ_SIMD && FGG_HAVE_AVX2
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
#if FGG_IQ_SIMD && FGG_HAVE_AVX2
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
    const fgg_iq_vi zero = {0};
    fgg_iq_vi m[4] = {zero, zero, zero, zero};
    const int chains = n % (4 * FGG_IQ_W) == 0 ? 4 : 1;
    for (int i = 0; i < n; i += chains * FGG_IQ_W) {
        for (int k = 0; k < chains; ++k) {
            fgg_iq_vi v;
            memcpy(&v, x + i + k * FGG_IQ_W, sizeof v);
            v &= 0x7fffffff; /* as int32: >= 0, so the signed maximum is the unsigned one */
            m[k] = fgg_q_isel(v > m[k], v, m[k]);
        }
    }
    for (int k = 1; k < 4; ++k) m[0] = fgg_q_isel(m[k] > m[0], m[k], m[0]);
    int32_t lanes[FGG_IQ_W], top = 0;
    memcpy(lanes, &m[0], sizeof lanes);
    for (int k = 0; k < FGG_IQ_W; ++k) top = lanes[k] > top ? lanes[k] : top;
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
    for (int i = 0; i < n; i += FGG_IQ_W) {
        fgg_iq_vf v;
        memcpy(&v, x + i, sizeof v);
        v = v * id;
        fgg_iq_vi r = fgg_q_round8(v);
        fgg_iq_vf diff = v - fgg_q_tof8(r);
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
#if FGG_IQ_SIMD && FGG_HAVE_AVX2
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
    fgg_iq_vi t[32 / FGG_IQ_W];
    for (int c = 0; c < 32 / FGG_IQ_W; ++c) {
        fgg_iq_vf v;
        memcpy(&v, x + c * FGG_IQ_W, sizeof v);
        v = (v - sub) * id + off;
        t[c] = __builtin_convertvector(v, fgg_iq_vi);
        if (wrap8) {
            t[c] = (t[c] << 24) >> 24;
            t[c] = fgg_q_isel(t[c] > hi, t[c] - t[c] + hi, t[c]);
        }
    }
    if (nib) {
        for (int c = 0; c < 16 / FGG_IQ_W; ++c) fgg_q_store_bytes(out + c * FGG_IQ_W, t[c] | (t[c + 16 / FGG_IQ_W] << 4));
    } else {
        for (int c = 0; c < 32 / FGG_IQ_W; ++c) fgg_q_store_bytes(out + c * FGG_IQ_W, t[c]);
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
    for (int i = 0; i < n; i += FGG_IQ_W) {
        fgg_iq_vf v;
        memcpy(&v, x + i, sizeof v);
        fgg_iq_vi l = fgg_q_clamp8(fgg_q_round8((v + add) / d), lo, hi) + off;
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
#if FGG_IQ_SIMD && FGG_HAVE_AVX2
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
    fgg_iq_vf up = fgg_q_splat8(0.0f), lo = up;
    for (int i = 0; i < n; i += FGG_IQ_W) {
        fgg_iq_vf v;
        memcpy(&v, x + i, sizeof v);
        up = fgg_iq_select(v > up, v, up);
        lo = fgg_iq_select(v < lo, v, lo);
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
/* The vector cores take FGG_Q_LANES groups, FGG_Q_G vectors of FGG_IQ_W lanes. */
#define FGG_Q_LANES (FGG_Q_G * FGG_IQ_W)

static void fgg__q_fit_signed_w(int n, int nmax, const float *const xs[], const float *const ws[],
                                int8_t *const Ls[], float out[]) {
    fgg_iq_vf x[32][FGG_Q_G], w[32][FGG_Q_G], wx[32][FGG_Q_G], t[32];
    fgg_iq_vi L[32][FGG_Q_G];
    for (int h = 0; h < FGG_Q_G; ++h) {
        fgg_q_transpose8(n, xs + h * FGG_IQ_W, t);
        for (int i = 0; i < n; ++i) x[i][h] = t[i];
        if (ws[0]) {
            fgg_q_transpose8(n, ws + h * FGG_IQ_W, t);
            for (int i = 0; i < n; ++i) w[i][h] = t[i];
        } else {
            for (int i = 0; i < n; ++i) w[i][h] = x[i][h] * x[i][h];
        }
    }
    for (int i = 0; i < n; ++i) {
        for (int h = 0; h < FGG_Q_G; ++h) wx[i][h] = w[i][h] * x[i][h]; /* (w x) l, as the scalar sums group it */
    }
    const fgg_iq_vf zf = fgg_q_splat8(0.0f);
    fgg_iq_vf amax[FGG_Q_G] = {zf}, vmax[FGG_Q_G] = {zf}, sumlx[FGG_Q_G] = {zf}, suml2[FGG_Q_G] = {zf};
    fgg_iq_vf iscale[FGG_Q_G], scale[FGG_Q_G], best[FGG_Q_G];
    fgg_iq_vi zero[FGG_Q_G];
    for (int i = 0; i < n; ++i) {
        for (int h = 0; h < FGG_Q_G; ++h) {
            fgg_iq_vf a = fgg_q_abs8(x[i][h]);
            fgg_iq_vi m = a > amax[h];
            amax[h] = fgg_iq_select(m, a, amax[h]);
            vmax[h] = fgg_iq_select(m, x[i][h], vmax[h]);
        }
    }
    for (int h = 0; h < FGG_Q_G; ++h) {
        zero[h] = amax[h] < FGG_Q_EPS;
        iscale[h] = (float)(-nmax) / vmax[h];
    }
    for (int i = 0; i < n; ++i) {
        for (int h = 0; h < FGG_Q_G; ++h) {
            fgg_iq_vi l = fgg_q_clamp8(fgg_q_round8(iscale[h] * x[i][h]), -nmax, nmax - 1);
            L[i][h] = l + nmax;
            fgg_iq_vf fl = fgg_q_tof8(l);
            sumlx[h] += wx[i][h] * fl;
            suml2[h] += w[i][h] * fl * fl;
        }
    }
    for (int h = 0; h < FGG_Q_G; ++h) {
        scale[h] = fgg_iq_select(suml2[h] != 0.0f, sumlx[h] / suml2[h], zf);
        best[h] = scale[h] * sumlx[h];
    }
    /* the winning trial's inverse scale is kept and its levels computed again at the end, instead
     * of copied every time a trial wins */
    fgg_iq_vf won_iscale[FGG_Q_G];
    fgg_iq_vi won[FGG_Q_G];
    for (int h = 0; h < FGG_Q_G; ++h) {
        const fgg_iq_vi none = {0};
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
                fgg_iq_vi l = fgg_q_clamp8(fgg_q_round8(iscale[h] * x[i][h]), -nmax, nmax - 1);
                fgg_iq_vf fl = fgg_q_tof8(l);
                sumlx[h] += wx[i][h] * fl;
                suml2[h] += w[i][h] * fl * fl;
            }
        }
        for (int h = 0; h < FGG_Q_G; ++h) {
            fgg_iq_vi upd = (suml2[h] > 0.0f) & (sumlx[h] * sumlx[h] > best[h] * suml2[h]);
            won[h] |= upd;
            won_iscale[h] = fgg_iq_select(upd, iscale[h], won_iscale[h]);
            scale[h] = fgg_iq_select(upd, sumlx[h] / suml2[h], scale[h]);
            best[h] = fgg_iq_select(upd, scale[h] * sumlx[h], best[h]);
        }
    }
    for (int i = 0; i < n; ++i) /* the winning trial's levels (its own float steps again) */
        for (int h = 0; h < FGG_Q_G; ++h)
            L[i][h] = fgg_q_isel(won[h], fgg_q_clamp8(fgg_q_round8(won_iscale[h] * x[i][h]), -nmax, nmax - 1) + nmax, L[i][h]);
    for (int h = 0; h < FGG_Q_G; ++h) {
        fgg_iq_vf r = fgg_iq_select(zero[h], zf, scale[h]);
        for (int k = 0; k < FGG_IQ_W; ++k) {
            const int g = h * FGG_IQ_W + k;
            out[g] = r[k];
            for (int i = 0; i < n; ++i) Ls[g][i] = zero[h][k] ? 0 : (int8_t)L[i][h][k];
        }
    }
}

static void fgg__q_fit_affine_w(int n, int nmax, const float *const xs[], const float *const ws[],
                                uint8_t *const Ls[], float out[], float neg_min[], float rmin,
                                float rdelta, int nstep, int mad) {
    fgg_iq_vf x[32][FGG_Q_G], w[32][FGG_Q_G], t[32], T[32][FGG_Q_G];
    fgg_iq_vi L[32][FGG_Q_G];
    for (int h = 0; h < FGG_Q_G; ++h) {
        fgg_q_transpose8(n, xs + h * FGG_IQ_W, t);
        for (int i = 0; i < n; ++i) x[i][h] = t[i];
        fgg_q_transpose8(n, ws + h * FGG_IQ_W, t);
        for (int i = 0; i < n; ++i) w[i][h] = t[i];
    }
    const fgg_iq_vf zf = fgg_q_splat8(0.0f);
    fgg_iq_vf vmin[FGG_Q_G], vmax[FGG_Q_G], sum_w[FGG_Q_G], sum_x[FGG_Q_G], vmin0[FGG_Q_G], iscale[FGG_Q_G], scale[FGG_Q_G], best[FGG_Q_G] = {zf};
    fgg_iq_vi flat[FGG_Q_G];
    for (int h = 0; h < FGG_Q_G; ++h) {
        vmin[h] = x[0][h];
        vmax[h] = x[0][h];
        sum_w[h] = w[0][h];
        sum_x[h] = sum_w[h] * x[0][h];
    }
    for (int i = 1; i < n; ++i) {
        for (int h = 0; h < FGG_Q_G; ++h) {
            vmin[h] = fgg_iq_select(x[i][h] < vmin[h], x[i][h], vmin[h]);
            vmax[h] = fgg_iq_select(x[i][h] > vmax[h], x[i][h], vmax[h]);
            sum_w[h] += w[i][h];
            sum_x[h] += w[i][h] * x[i][h];
        }
    }
    for (int h = 0; h < FGG_Q_G; ++h) {
        vmin[h] = fgg_iq_select(vmin[h] > 0.0f, zf, vmin[h]);
        vmin0[h] = vmin[h];
        flat[h] = vmax[h] <= vmin[h];
        iscale[h] = (float)nmax / (vmax[h] - vmin[h]);
        scale[h] = 1.0f / iscale[h];
    }
    for (int i = 0; i < n; ++i) {
        for (int h = 0; h < FGG_Q_G; ++h) {
            fgg_iq_vi l = fgg_q_clamp8(fgg_q_round8(iscale[h] * (x[i][h] - vmin[h])), 0, nmax);
            L[i][h] = l;
            fgg_iq_vf diff = scale[h] * fgg_q_tof8(l) + vmin[h] - x[i][h];
            diff = mad ? fgg_q_abs8(diff) : diff * diff;
            best[h] += w[i][h] * diff;
        }
    }
    /* a trial's levels come from its iscale and the vmin of that moment: kept for the best trial, the
     * levels are computed again at the end instead of copied every time a trial wins */
    fgg_iq_vf won_iscale[FGG_Q_G], won_vmin[FGG_Q_G];
    fgg_iq_vi won[FGG_Q_G];
    for (int h = 0; h < FGG_Q_G; ++h) {
        const fgg_iq_vi none = {0};
        won_iscale[h] = won_vmin[h] = zf;
        won[h] = none;
    }
    for (int is = 0; is <= nstep; ++is) {
        const float num = rmin + rdelta * (float)is + (float)nmax;
        fgg_iq_vf sum_l[FGG_Q_G] = {zf}, sum_l2[FGG_Q_G] = {zf}, sum_xl[FGG_Q_G] = {zf};
        for (int h = 0; h < FGG_Q_G; ++h) iscale[h] = num / (vmax[h] - vmin[h]);
        for (int i = 0; i < n; ++i) {
            for (int h = 0; h < FGG_Q_G; ++h) {
                fgg_iq_vi l = fgg_q_clamp8(fgg_q_round8(iscale[h] * (x[i][h] - vmin[h])), 0, nmax);
                fgg_iq_vf fl = fgg_q_tof8(l);
                T[i][h] = fl;
                fgg_iq_vf wl = w[i][h] * fl;
                sum_l[h] += wl;
                sum_l2[h] += wl * fl;
                sum_xl[h] += wl * x[i][h];
            }
        }
        fgg_iq_vf this_scale[FGG_Q_G], this_min[FGG_Q_G], err[FGG_Q_G] = {zf};
        fgg_iq_vi ok[FGG_Q_G];
        for (int h = 0; h < FGG_Q_G; ++h) {
            fgg_iq_vf D = sum_w[h] * sum_l2[h] - sum_l[h] * sum_l[h];
            ok[h] = D > 0.0f;
            this_scale[h] = (sum_w[h] * sum_xl[h] - sum_x[h] * sum_l[h]) / D;
            this_min[h] = (sum_l2[h] * sum_x[h] - sum_l[h] * sum_xl[h]) / D;
            fgg_iq_vi pos = this_min[h] > 0.0f;
            this_min[h] = fgg_iq_select(pos, zf, this_min[h]);
            this_scale[h] = fgg_iq_select(pos, sum_xl[h] / sum_l2[h], this_scale[h]);
        }
        for (int i = 0; i < n; ++i) {
            for (int h = 0; h < FGG_Q_G; ++h) {
                fgg_iq_vf diff = this_scale[h] * T[i][h] + this_min[h] - x[i][h];
                diff = mad ? fgg_q_abs8(diff) : diff * diff;
                err[h] += w[i][h] * diff;
            }
        }
        for (int h = 0; h < FGG_Q_G; ++h) {
            fgg_iq_vi upd = ok[h] & (err[h] < best[h]);
            won[h] |= upd;
            won_iscale[h] = fgg_iq_select(upd, iscale[h], won_iscale[h]);
            won_vmin[h] = fgg_iq_select(upd, vmin[h], won_vmin[h]);
            best[h] = fgg_iq_select(upd, err[h], best[h]);
            scale[h] = fgg_iq_select(upd, this_scale[h], scale[h]);
            vmin[h] = fgg_iq_select(upd, this_min[h], vmin[h]);
        }
    }
    for (int i = 0; i < n; ++i) /* the winning trial's levels (its own float steps again) */
        for (int h = 0; h < FGG_Q_G; ++h)
            L[i][h] = fgg_q_isel(won[h], fgg_q_clamp8(fgg_q_round8(won_iscale[h] * (x[i][h] - won_vmin[h])), 0, nmax), L[i][h]);
    for (int h = 0; h < FGG_Q_G; ++h) {
        fgg_iq_vf sc = fgg_iq_select(flat[h], zf, scale[h]);
        fgg_iq_vf mn = fgg_iq_select(flat[h], vmin0[h], vmin[h]);
        for (int k = 0; k < FGG_IQ_W; ++k) {
            const int g = h * FGG_IQ_W + k;
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

/* quant_iq1.h's names for base.h's conversions */
#define fgg_iq_fp16 fgg_float_to_half
#define fgg_iq_store_u16le fgg_store_u16le

#endif /* FGG_QUANT_COMMON_H */
