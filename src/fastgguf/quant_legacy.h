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

#include "quant_iq_common.h"

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

static inline void fgg_q_rms_weights(int n, const float *qw, const float *x, float sigma2, float *w) {
    for (int i = 0; i < n; ++i) w[i] = qw[i] * sqrtf(sigma2 + x[i] * x[i]);
}

/* Symmetric search: the scale d with levels l in [-nmax, nmax-1] (stored as l + nmax in L) that
 * maximizes (sum w x l)^2 / sum w l^2 over 19 trial inverse scales around -nmax/max, where max
 * is the signed value of largest magnitude. w NULL means w = x^2. Returns d (0 and all-zero L for
 * a group below FGG_Q_EPS). */
static float fgg_q_fit_signed(int n, int nmax, const float *x, int8_t *L, const float *w) {
    float amax = 0.0f, vmax = 0.0f;
    for (int i = 0; i < n; ++i) {
        float a = fabsf(x[i]);
        if (a > amax) { amax = a; vmax = x[i]; }
    }
    if (amax < FGG_Q_EPS) {
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
static float fgg_q_fit_affine(int n, int nmax, const float *x, const float *w, uint8_t *L,
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

/* ---- Eight fits at once ----
 * fgg_q_fit_signed8 / fgg_q_fit_affine8 run fgg_q_fit_signed / fgg_q_fit_affine on eight
 * independent groups (xs[k], ws[k] -> Ls[k], out[k]). With vector extensions, lane k of each
 * vector runs group k's scalar sequence of float32 operations unchanged (selects stand in for
 * the branches), so the results are the scalar ones bit for bit; otherwise they loop. */

#if FGG_IQ_SIMD
/* lanes per vector: 8 where AVX registers hold them, else 4 (eight groups run as two halves) */
#if defined(__AVX__)
#define FGG_Q_W 8
#else
#define FGG_Q_W 4
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
    v = fgg_q_isel(v < lo, v - v + lo, v);
    return fgg_q_isel(v > hi, v - v + hi, v);
}
FGG_Q_INL fgg_q_vf8 fgg_q_abs8(fgg_q_vf8 v) {
    return (fgg_q_vf8)((fgg_q_vi8)v & 0x7fffffff);
}
FGG_Q_INL fgg_q_vf8 fgg_q_tof8(fgg_q_vi8 v) {
    return __builtin_convertvector(v, fgg_q_vf8);
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
#endif

/* largest |x[i]| of n (a multiple of 16) finite floats; the maximum is exact in any order */
static inline float fgg_q_amax(const float *x, int n) {
#if FGG_IQ_SIMD
    fgg_q_vf8 m = fgg_q_splat8(0.0f);
    for (int i = 0; i < n; i += FGG_Q_W) {
        fgg_q_vf8 v;
        memcpy(&v, x + i, sizeof v);
        v = fgg_q_abs8(v);
        m = fgg_q_fsel(v > m, v, m);
    }
    float r = 0.0f;
    for (int k = 0; k < FGG_Q_W; ++k) r = m[k] > r ? m[k] : r;
    return r;
#else
    float r = 0.0f;
    for (int i = 0; i < n; ++i) r = fabsf(x[i]) > r ? fabsf(x[i]) : r;
    return r;
#endif
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
        for (int k = 0; k < FGG_Q_W; ++k) q[i + k] = (int8_t)r[k];
    }
#else
    for (int i = 0; i < n; ++i) q[i] = (int8_t)fgg_q_round_away(x[i] * id);
#endif
}

/* lv[i] = min(hi, (int8_t)(int)(x[i] * id + off)) for 32 floats, or without the int8 step and
 * the clamp (wrap8 = 0: (uint8_t)(int)), from (x[i] - sub) when sub is used (C's truncating
 * conversions; the int8 step keeps ggml's wrap of the low byte) */
static inline void fgg_q_trunc_levels32(const float *x, float sub, float id, float off, int hi, int wrap8,
                                        uint8_t *lv) {
#if FGG_IQ_SIMD
    for (int i = 0; i < 32; i += FGG_Q_W) {
        fgg_q_vf8 v;
        memcpy(&v, x + i, sizeof v);
        v = (v - sub) * id + off;
        fgg_q_vi8 t = __builtin_convertvector(v, fgg_q_vi8);
        if (wrap8) {
            t = (t << 24) >> 24;
            t = fgg_q_isel(t > hi, t - t + hi, t);
        }
        for (int k = 0; k < FGG_Q_W; ++k) lv[i + k] = (uint8_t)t[k];
    }
#else
    for (int i = 0; i < 32; ++i) {
        int t = (int)((x[i] - sub) * id + off);
        if (wrap8) {
            t = (int8_t)t;
            t = t < hi ? t : hi;
        }
        lv[i] = (uint8_t)t;
    }
#endif
}

#if FGG_IQ_SIMD
static void fgg__q_fit_signed_w(int n, int nmax, const float *const xs[], const float *const ws[],
                                int8_t *const Ls[], float out[]) {
    fgg_q_vf8 x[32], w[32];
    fgg_q_vi8 L[32], T[32];
    fgg_q_transpose8(n, xs, x);
    if (ws[0]) fgg_q_transpose8(n, ws, w);
    else for (int i = 0; i < n; ++i) w[i] = x[i] * x[i];
    fgg_q_vf8 amax = fgg_q_splat8(0.0f), vmax = amax;
    for (int i = 0; i < n; ++i) {
        fgg_q_vf8 a = fgg_q_abs8(x[i]);
        fgg_q_vi8 m = a > amax;
        amax = fgg_q_fsel(m, a, amax);
        vmax = fgg_q_fsel(m, x[i], vmax);
    }
    const fgg_q_vi8 zero = amax < FGG_Q_EPS;
    fgg_q_vf8 iscale = (float)(-nmax) / vmax;
    fgg_q_vf8 sumlx = fgg_q_splat8(0.0f), suml2 = sumlx;
    for (int i = 0; i < n; ++i) {
        fgg_q_vi8 l = fgg_q_clamp8(fgg_q_round8(iscale * x[i]), -nmax, nmax - 1);
        L[i] = l + nmax;
        fgg_q_vf8 fl = fgg_q_tof8(l);
        sumlx += w[i] * x[i] * fl;
        suml2 += w[i] * fl * fl;
    }
    fgg_q_vf8 scale = fgg_q_fsel(suml2 != 0.0f, sumlx / suml2, fgg_q_splat8(0.0f));
    fgg_q_vf8 best = scale * sumlx;
    for (int is = -9; is <= 9; ++is) {
        if (is == 0) continue;
        iscale = -((float)nmax + 0.1f * (float)is) / vmax;
        sumlx = fgg_q_splat8(0.0f);
        suml2 = sumlx;
        for (int i = 0; i < n; ++i) {
            fgg_q_vi8 l = fgg_q_clamp8(fgg_q_round8(iscale * x[i]), -nmax, nmax - 1);
            T[i] = l + nmax;
            fgg_q_vf8 fl = fgg_q_tof8(l);
            sumlx += w[i] * x[i] * fl;
            suml2 += w[i] * fl * fl;
        }
        fgg_q_vi8 upd = (suml2 > 0.0f) & (sumlx * sumlx > best * suml2);
        for (int i = 0; i < n; ++i) L[i] = fgg_q_isel(upd, T[i], L[i]);
        scale = fgg_q_fsel(upd, sumlx / suml2, scale);
        best = fgg_q_fsel(upd, scale * sumlx, best);
    }
    scale = fgg_q_fsel(zero, fgg_q_splat8(0.0f), scale);
    for (int k = 0; k < FGG_Q_W; ++k) {
        out[k] = scale[k];
        for (int i = 0; i < n; ++i) Ls[k][i] = zero[k] ? 0 : (int8_t)L[i][k];
    }
}
#endif

static void fgg_q_fit_signed8(int n, int nmax, const float *const xs[8], const float *const ws[8],
                              int8_t *const Ls[8], float out[8]) {
#if FGG_IQ_SIMD
    for (int h = 0; h < 8; h += FGG_Q_W) fgg__q_fit_signed_w(n, nmax, xs + h, ws + h, Ls + h, out + h);
#else
    for (int k = 0; k < 8; ++k) out[k] = fgg_q_fit_signed(n, nmax, xs[k], Ls[k], ws[k]);
#endif
}

#if FGG_IQ_SIMD
static void fgg__q_fit_affine_w(int n, int nmax, const float *const xs[], const float *const ws[],
                                uint8_t *const Ls[], float out[], float neg_min[], float rmin,
                                float rdelta, int nstep, int mad) {
    fgg_q_vf8 x[32], w[32];
    fgg_q_vi8 L[32], T[32];
    fgg_q_transpose8(n, xs, x);
    fgg_q_transpose8(n, ws, w);
    fgg_q_vf8 vmin = x[0], vmax = x[0], sum_w = w[0];
    fgg_q_vf8 sum_x = sum_w * x[0];
    for (int i = 1; i < n; ++i) {
        vmin = fgg_q_fsel(x[i] < vmin, x[i], vmin);
        vmax = fgg_q_fsel(x[i] > vmax, x[i], vmax);
        sum_w += w[i];
        sum_x += w[i] * x[i];
    }
    const fgg_q_vf8 zf = fgg_q_splat8(0.0f);
    vmin = fgg_q_fsel(vmin > 0.0f, zf, vmin);
    const fgg_q_vf8 vmin0 = vmin;
    const fgg_q_vi8 flat = vmax <= vmin;
    fgg_q_vf8 iscale = (float)nmax / (vmax - vmin);
    fgg_q_vf8 scale = 1.0f / iscale;
    fgg_q_vf8 best = zf;
    for (int i = 0; i < n; ++i) {
        fgg_q_vi8 l = fgg_q_clamp8(fgg_q_round8(iscale * (x[i] - vmin)), 0, nmax);
        L[i] = l;
        fgg_q_vf8 diff = scale * fgg_q_tof8(l) + vmin - x[i];
        diff = mad ? fgg_q_abs8(diff) : diff * diff;
        best += w[i] * diff;
    }
    for (int is = 0; is <= nstep; ++is) {
        iscale = (rmin + rdelta * (float)is + (float)nmax) / (vmax - vmin);
        fgg_q_vf8 sum_l = zf, sum_l2 = zf, sum_xl = zf;
        for (int i = 0; i < n; ++i) {
            fgg_q_vi8 l = fgg_q_clamp8(fgg_q_round8(iscale * (x[i] - vmin)), 0, nmax);
            T[i] = l;
            fgg_q_vf8 fl = fgg_q_tof8(l);
            fgg_q_vf8 wl = w[i] * fl;
            sum_l += wl;
            sum_l2 += wl * fl;
            sum_xl += wl * x[i];
        }
        fgg_q_vf8 D = sum_w * sum_l2 - sum_l * sum_l;
        fgg_q_vi8 ok = D > 0.0f;
        fgg_q_vf8 this_scale = (sum_w * sum_xl - sum_x * sum_l) / D;
        fgg_q_vf8 this_min = (sum_l2 * sum_x - sum_l * sum_xl) / D;
        fgg_q_vi8 pos = this_min > 0.0f;
        this_min = fgg_q_fsel(pos, zf, this_min);
        this_scale = fgg_q_fsel(pos, sum_xl / sum_l2, this_scale);
        fgg_q_vf8 err = zf;
        for (int i = 0; i < n; ++i) {
            fgg_q_vf8 diff = this_scale * fgg_q_tof8(T[i]) + this_min - x[i];
            diff = mad ? fgg_q_abs8(diff) : diff * diff;
            err += w[i] * diff;
        }
        fgg_q_vi8 upd = ok & (err < best);
        for (int i = 0; i < n; ++i) L[i] = fgg_q_isel(upd, T[i], L[i]);
        best = fgg_q_fsel(upd, err, best);
        scale = fgg_q_fsel(upd, this_scale, scale);
        vmin = fgg_q_fsel(upd, this_min, vmin);
    }
    scale = fgg_q_fsel(flat, zf, scale);
    vmin = fgg_q_fsel(flat, vmin0, vmin);
    for (int k = 0; k < FGG_Q_W; ++k) {
        out[k] = scale[k];
        neg_min[k] = -vmin[k];
        for (int i = 0; i < n; ++i) Ls[k][i] = flat[k] ? 0 : (uint8_t)L[i][k];
    }
}
#endif

/* nstep >= 1 */
static void fgg_q_fit_affine8(int n, int nmax, const float *const xs[8], const float *const ws[8],
                              uint8_t *const Ls[8], float out[8], float neg_min[8], float rmin,
                              float rdelta, int nstep, int mad) {
#if FGG_IQ_SIMD
    for (int h = 0; h < 8; h += FGG_Q_W)
        fgg__q_fit_affine_w(n, nmax, xs + h, ws + h, Ls + h, out + h, neg_min + h, rmin, rdelta, nstep, mad);
#else
    for (int k = 0; k < 8; ++k)
        out[k] = fgg_q_fit_affine(n, nmax, xs[k], ws[k], Ls[k], &neg_min[k], rmin, rdelta, nstep, mad);
#endif
}

/* ---- Q4_0 / Q5_0: d = (signed value of largest magnitude) / -2^(bits-1) ---- */

static inline void fgg__q_store_q5_high(uint8_t *qs, uint8_t *qh4, const uint8_t *lv) {
    uint32_t qh = 0;
    for (int j = 0; j < 16; ++j) {
        qs[j] = (uint8_t)((lv[j] & 0x0f) | ((lv[j + 16] & 0x0f) << 4));
        qh |= (uint32_t)((lv[j] >> 4) & 1u) << j;
        qh |= (uint32_t)((lv[j + 16] >> 4) & 1u) << (j + 16);
    }
    qh4[0] = (uint8_t)qh; qh4[1] = (uint8_t)(qh >> 8); qh4[2] = (uint8_t)(qh >> 16); qh4[3] = (uint8_t)(qh >> 24);
}

/* One block of Q4_0 (half = 8) or Q5_0 (half = 16) without importance weights; lv gets the levels. */
static inline float fgg__q_block_sym(const float *x, int half, uint8_t *lv) {
    const float amax = fgg_q_amax(x, 32);
    float vmax = 0.0f;
    for (int j = 0; amax > 0.0f && j < 32; ++j) { /* the first element of largest magnitude, signed */
        if (fabsf(x[j]) == amax) { vmax = x[j]; break; }
    }
    const float d = vmax / (float)(-half);
    const float id = d != 0.0f ? 1.0f / d : 0.0f;
    fgg_q_trunc_levels32(x, 0.0f, id, (float)half + 0.5f, 2 * half - 1, 1, lv);
    return d;
}

/* imatrix paths of Q4_0/Q5_0 (signed fit, q5 = 0/1) and Q4_1/Q5_1 (affine fit, nmax 15/31):
 * sigma2 is the row's mean square; blocks are fitted eight at a time (a short tail repeats its
 * last block into lanes whose results are dropped). */
static void fgg__q_rows_legacy_w(const float *src, uint8_t *dst, int64_t n_rows, int64_t n_per_row,
                                 const float *imatrix, int affine, int bits) {
    const size_t bsz = (size_t)(affine ? 4 : 2) + 16 + (bits == 5 ? 4 : 0);
    const int nmax = affine ? (1 << bits) - 1 : 1 << (bits - 1);
    const int64_t nb = n_per_row / 32;
    float w[8 * 32], d[8], neg_min[8];
    uint8_t lv[8][32];
    const float *xs[8], *ws[8];
    uint8_t *Lu[8];
    int8_t *Ls[8];
    for (int k = 0; k < 8; ++k) {
        ws[k] = w + 32 * k;
        Lu[k] = lv[k];
        Ls[k] = (int8_t *)lv[k];
    }
    for (int64_t r = 0; r < n_rows; ++r) {
        const float *x = src + r * n_per_row;
        uint8_t *y = dst + (size_t)r * (size_t)nb * bsz;
        const float sigma2 = fgg_q_sumsq(x, n_per_row) / (float)n_per_row;
        for (int64_t ib0 = 0; ib0 < nb; ib0 += 8) {
            const int cnt = nb - ib0 < 8 ? (int)(nb - ib0) : 8;
            for (int k = 0; k < 8; ++k) {
                const int64_t ib = ib0 + (k < cnt ? k : cnt - 1);
                xs[k] = x + 32 * ib;
                fgg_q_rms_weights(32, imatrix + 32 * ib, xs[k], sigma2, w + 32 * k);
            }
            if (affine) fgg_q_fit_affine8(32, nmax, xs, ws, Lu, d, neg_min, -0.9f, 0.05f, 36, 0);
            else fgg_q_fit_signed8(32, nmax, xs, ws, Ls, d);
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

static void fgg_quantize_q4_0(const float *src, uint8_t *dst, int64_t n_rows, int64_t n_per_row,
                              const float *imatrix) {
    if (imatrix) {
        fgg__q_rows_legacy_w(src, dst, n_rows, n_per_row, imatrix, 0, 4);
        return;
    }
    const int64_t nb = n_rows * (n_per_row / 32);
    uint8_t lv[32];
    for (int64_t i = 0; i < nb; ++i) {
        uint8_t *blk = dst + 18 * i;
        float d = fgg__q_block_sym(src + 32 * i, 8, lv);
        fgg_q_put16(blk, fgg_iq_fp16(d));
        for (int j = 0; j < 16; ++j) blk[2 + j] = (uint8_t)(lv[j] | (lv[j + 16] << 4));
    }
}

static void fgg_quantize_q5_0(const float *src, uint8_t *dst, int64_t n_rows, int64_t n_per_row,
                              const float *imatrix) {
    if (imatrix) {
        fgg__q_rows_legacy_w(src, dst, n_rows, n_per_row, imatrix, 0, 5);
        return;
    }
    const int64_t nb = n_rows * (n_per_row / 32);
    uint8_t lv[32];
    for (int64_t i = 0; i < nb; ++i) {
        uint8_t *blk = dst + 22 * i;
        float d = fgg__q_block_sym(src + 32 * i, 16, lv);
        fgg_q_put16(blk, fgg_iq_fp16(d));
        fgg__q_store_q5_high(blk + 6, blk + 2, lv);
    }
}

/* ---- Q4_1 / Q5_1: d = (max - min) / (2^bits - 1), offset min ---- */

static inline void fgg__q_block_affine(const float *x, int bits, uint8_t *lv, float *d_out, float *m_out) {
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
    for (int k = 0; k < FGG_Q_W; ++k) {
        if (lo[k] < vmin) vmin = lo[k];
        if (up[k] > vmax) vmax = up[k];
    }
    if (vmin == 0.0f || vmax == 0.0f)
#endif
    {
        vmin = FLT_MAX;
        vmax = -FLT_MAX;
        for (int j = 0; j < 32; ++j) {
            if (x[j] < vmin) vmin = x[j];
            if (x[j] > vmax) vmax = x[j];
        }
    }
    const float d = (vmax - vmin) / (float)((1 << bits) - 1);
    const float id = d != 0.0f ? 1.0f / d : 0.0f;
    fgg_q_trunc_levels32(x, vmin, id, 0.5f, 15, bits == 4, lv);
    *d_out = d;
    *m_out = vmin;
}

static void fgg__q_rows_affine(const float *src, uint8_t *dst, int64_t n_rows, int64_t n_per_row,
                               const float *imatrix, int bits) {
    if (imatrix) {
        fgg__q_rows_legacy_w(src, dst, n_rows, n_per_row, imatrix, 1, bits);
        return;
    }
    const size_t bsz = bits == 4 ? 20 : 24;
    const int64_t nb = n_rows * (n_per_row / 32);
    uint8_t lv[32];
    for (int64_t i = 0; i < nb; ++i) {
        uint8_t *blk = dst + (size_t)i * bsz;
        float d, m;
        fgg__q_block_affine(src + 32 * i, bits, lv, &d, &m);
        fgg_q_put16(blk, fgg_iq_fp16(d));
        fgg_q_put16(blk + 2, fgg_iq_fp16(m));
        if (bits == 5) {
            fgg__q_store_q5_high(blk + 8, blk + 4, lv);
        } else {
            for (int j = 0; j < 16; ++j) blk[4 + j] = (uint8_t)(lv[j] | (lv[j + 16] << 4));
        }
    }
}

static void fgg_quantize_q4_1(const float *src, uint8_t *dst, int64_t n_rows, int64_t n_per_row,
                              const float *imatrix) {
    fgg__q_rows_affine(src, dst, n_rows, n_per_row, imatrix, 4);
}

static void fgg_quantize_q5_1(const float *src, uint8_t *dst, int64_t n_rows, int64_t n_per_row,
                              const float *imatrix) {
    fgg__q_rows_affine(src, dst, n_rows, n_per_row, imatrix, 5);
}

/* ---- Q8_0 / Q8_1: d = amax / 127, q = round-half-away(x / d) (the importance matrix is unused) ---- */

static inline float fgg__q_block_q8(const float *x, int8_t *q) {
    const float d = fgg_q_amax(x, 32) / 127.0f;
    const float id = d != 0.0f ? 1.0f / d : 0.0f;
    fgg_q_round_scaled_i8(x, 32, id, q);
    return d;
}

static void fgg_quantize_q8_0(const float *src, uint8_t *dst, int64_t n_rows, int64_t n_per_row,
                              const float *imatrix) {
    (void)imatrix;
    const int64_t nb = n_rows * (n_per_row / 32);
    for (int64_t i = 0; i < nb; ++i) {
        uint8_t *blk = dst + 34 * i;
        float d = fgg__q_block_q8(src + 32 * i, (int8_t *)(blk + 2));
        fgg_q_put16(blk, fgg_iq_fp16(d));
    }
}

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

#endif /* FGG_QUANT_LEGACY_H */
