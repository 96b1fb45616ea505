/* Quantizers of the K-quant super-block types (256 elements): Q2_K, Q3_K, Q4_K, Q5_K, Q6_K, Q8_K.
 *
 * Bit-identical to ggml's quantize_<type> as ggml-base is built (see quant_legacy.h for the
 * rules that decide the bits). Each type has two paths, as in ggml: without an importance
 * matrix the sub-block scales are fitted per sub-block and the super-block scale is the largest
 * sub-block scale over the scale levels; with one, the weights are w * sqrt(sigma2 + x^2)
 * (sigma2 from the super-block's mean square) and the sub-block scales are themselves fitted
 * (fgg_q_fit_pos) with the weight sums of their sub-blocks. Q8_K has no importance-matrix
 * path. In every path the super-block scales go through fp16 before the final requantization.
 */
#ifndef FGG_QUANT_KQUANT_H
#define FGG_QUANT_KQUANT_H

#include "quant_common.h"

/* Fit of non-negative values x (scales or mins) on levels 0..nmax with weights w: best of nine
 * trial inverse scales by weighted squared error, then up to five passes that move single levels
 * while that raises (sum w x l)^2 / sum w l^2. Returns sum w x l / sum w l^2. */
static float fgg_q_fit_pos(int n, int nmax, const float *x, uint8_t *L, const float *w) {
    float vmax = 0.0f;
    for (int i = 0; i < n; ++i) vmax = vmax > x[i] ? vmax : x[i];
    if (vmax < FGG_Q_EPS) {
        memset(L, 0, (size_t)n);
        return 0.0f;
    }
    float iscale = (float)nmax / vmax;
    for (int i = 0; i < n; ++i) L[i] = (uint8_t)fgg_iq_nearest_int(iscale * x[i]);
    float scale = 1.0f / iscale;
    float best = 0.0f;
    for (int i = 0; i < n; ++i) {
        float diff = x[i] - scale * (float)L[i];
        best += w[i] * diff * diff;
    }
    for (int is = -4; is <= 4; ++is) {
        if (is == 0) continue;
        float iscale_is = (0.1f * (float)is + (float)nmax) / vmax;
        float scale_is = 1.0f / iscale_is;
        float err = 0.0f;
        for (int i = 0; i < n; ++i) {
            int l = fgg_iq_nearest_int(iscale_is * x[i]);
            if (l > nmax) l = nmax;
            float diff = x[i] - scale_is * (float)l;
            err += w[i] * diff * diff;
        }
        if (err < best) {
            best = err;
            iscale = iscale_is;
        }
    }
    float sumlx = 0.0f, suml2 = 0.0f;
    for (int i = 0; i < n; ++i) {
        int l = fgg_iq_nearest_int(iscale * x[i]);
        if (l > nmax) l = nmax;
        L[i] = (uint8_t)l;
        sumlx += w[i] * x[i] * (float)l;
        suml2 += w[i] * (float)l * (float)l;
    }
    for (int pass = 0; pass < 5; ++pass) {
        int changed = 0;
        for (int i = 0; i < n; ++i) {
            const float wi = w[i];
            const float li = (float)L[i];
            float slx = sumlx - wi * x[i] * li;
            float sl2 = suml2 - wi * li * li;
            if (slx > 0.0f && sl2 > 0.0f) {
                int nl = fgg_iq_nearest_int(x[i] * sl2 / slx);
                if (nl > nmax) nl = nmax;
                if (nl != (int)L[i]) {
                    slx += wi * x[i] * (float)nl;
                    sl2 += wi * (float)nl * (float)nl;
                    if (slx * slx * suml2 > sumlx * sumlx * sl2) {
                        L[i] = (uint8_t)nl;
                        sumlx = slx;
                        suml2 = sl2;
                        ++changed;
                    }
                }
            }
        }
        if (!changed) break;
    }
    return suml2 > 0.0f ? sumlx / suml2 : 0.0f;
}

/* Q3_K's sub-block fit without weights (w = x^2): levels -nmax..nmax-1 from -nmax/max, then up
 * to five passes of single-level moves. L gets l + nmax (all zero for a group below FGG_Q_EPS). */
static inline float fgg_q_fit_q3(int n, int nmax, const float *x, int8_t *L) {
    const float vmax = fgg_q_signed_amax(x, n);
    if (fabsf(vmax) < FGG_Q_EPS) {
        memset(L, 0, (size_t)n);
        return 0.0f;
    }
    const float iscale = (float)(-nmax) / vmax;
    float sumlx = 0.0f, suml2 = 0.0f;
    for (int i = 0; i < n; ++i) {
        int l = fgg_q_clampi(fgg_iq_nearest_int(iscale * x[i]), -nmax, nmax - 1);
        L[i] = (int8_t)l;
        float w = x[i] * x[i];
        sumlx += w * x[i] * (float)l;
        suml2 += w * (float)l * (float)l;
    }
    for (int pass = 0; pass < 5; ++pass) {
        int changed = 0;
        for (int i = 0; i < n; ++i) {
            float w = x[i] * x[i];
            float slx = sumlx - w * x[i] * (float)L[i];
            if (slx > 0.0f) {
                float sl2 = suml2 - w * (float)L[i] * (float)L[i];
                int nl = fgg_q_clampi(fgg_iq_nearest_int(x[i] * sl2 / slx), -nmax, nmax - 1);
                if (nl != L[i]) {
                    slx += w * x[i] * (float)nl;
                    sl2 += w * (float)nl * (float)nl;
                    if (sl2 > 0.0f && slx * slx * suml2 > sumlx * sumlx * sl2) {
                        L[i] = (int8_t)nl;
                        sumlx = slx;
                        suml2 = sl2;
                        ++changed;
                    }
                }
            }
        }
        if (!changed) break;
    }
    for (int i = 0; i < n; ++i) L[i] = (int8_t)(L[i] + nmax);
    return suml2 > 0.0f ? sumlx / suml2 : 0.0f;
}

#if FGG_IQ_SIMD
/* ---- Q3_K without an importance matrix: the sub-block fits of many super-blocks at once ----
 * A super-block's 16 groups are the lanes of FGG_Q3_V vectors (its 16 x 16 floats transposed),
 * and lane k runs group k's scalar sequence of float32 operations (fgg_q_fit_q3) unchanged,
 * selects standing in for the branches. A pass is a chain of 16 dependent steps per lane, so
 * FGG_Q3_S super-blocks ("slots") run side by side, and a slot whose lanes all passed without
 * a change (a lane that changed nothing changes nothing later) or that ran five passes hands in
 * its scales and takes the next super-block at once.
 * The levels are computed in float. The first ones, clamp(nearest_int(iscale x), -4, 3) with
 * |iscale x| <= 5: t = iscale x + 1.5 * 2^23 rounds as fgg_iq_nearest_int does, and clamping t
 * before taking 1.5 * 2^23 off is the same clamp. A step's new level from r: for |r| < 2^21,
 * clamp(nearest_int(r), -4, 3) is clamp(r, -4, 3) rounded to nearest even (fgg__q3_round), the
 * shorter dependent path (nearest_int's sum r + 1.5 * 2^23 stays below 2^24, where its bits
 * stop meaning r rounded); a super-block with a lane that needed more (|r| >= 2^21, or NaN, in
 * a step that counts) is fitted again by fgg_q_fit_q3. A level's terms of the sums, w x l and
 * w l l, are recomputed when needed rather than kept. Only the scales are kept: the final pass
 * requantizes every sub-block whose scale is not zero, and refits the others (rare) for their
 * levels (fgg__q3k_finish). */
#define FGG_Q3_V (16 / FGG_IQ_W)
#define FGG_Q3_S (FGG_IQ_W == 16 ? 4 : 2) /* with 8 lanes, more slots spill their sums to the stack */

#if FGG_HAVE_AVX512 && FGG_IQ_W == 16
typedef __mmask16 fgg_q3_m;
FGG_IQ_INLINE fgg_q3_m fgg__q3_gt(fgg_iq_vf a, fgg_iq_vf b) { return _mm512_cmp_ps_mask((__m512)a, (__m512)b, _CMP_GT_OQ); }
FGG_IQ_INLINE fgg_q3_m fgg__q3_ne(fgg_iq_vf a, fgg_iq_vf b) { return _mm512_cmp_ps_mask((__m512)a, (__m512)b, _CMP_NEQ_OQ); }
FGG_IQ_INLINE fgg_q3_m fgg__q3_nlt(fgg_iq_vf a, fgg_iq_vf b) { return _mm512_cmp_ps_mask((__m512)a, (__m512)b, _CMP_NLT_UQ); }
FGG_IQ_INLINE fgg_iq_vf fgg__q3_sel(fgg_q3_m m, fgg_iq_vf a, fgg_iq_vf b) {
    return (fgg_iq_vf)_mm512_mask_blend_ps(m, (__m512)b, (__m512)a);
}
FGG_IQ_INLINE fgg_iq_vf fgg__q3_max(fgg_iq_vf a, fgg_iq_vf b) { return (fgg_iq_vf)_mm512_max_ps((__m512)a, (__m512)b); }
FGG_IQ_INLINE fgg_iq_vf fgg__q3_min(fgg_iq_vf a, fgg_iq_vf b) { return (fgg_iq_vf)_mm512_min_ps((__m512)a, (__m512)b); }
FGG_IQ_INLINE int fgg__q3_any(fgg_q3_m m) { return m != 0; }
FGG_IQ_INLINE fgg_q3_m fgg__q3_andnot(fgg_q3_m a, fgg_q3_m b) { return (fgg_q3_m)(a & ~b); } /* a and not b */
FGG_IQ_INLINE void fgg__q3_store_sel(fgg_iq_vf *p, fgg_q3_m m, fgg_iq_vf a) { _mm512_mask_store_ps(p, m, (__m512)a); }
#define FGG_Q3_NONE ((fgg_q3_m)0)
#else
typedef fgg_iq_vi fgg_q3_m;
FGG_IQ_INLINE fgg_q3_m fgg__q3_gt(fgg_iq_vf a, fgg_iq_vf b) { return a > b; }
FGG_IQ_INLINE fgg_q3_m fgg__q3_ne(fgg_iq_vf a, fgg_iq_vf b) { return a != b; } /* never NaN here */
FGG_IQ_INLINE fgg_q3_m fgg__q3_nlt(fgg_iq_vf a, fgg_iq_vf b) { return ~(a < b); }
FGG_IQ_INLINE fgg_q3_m fgg__q3_andnot(fgg_q3_m a, fgg_q3_m b) { return a & ~b; }
#define FGG_Q3_NONE ((fgg_q3_m){0})
#define fgg__q3_store_sel(p, m, a) (*(p) = fgg__q3_sel((m), (a), *(p))) /* *p = a in the lanes of m */
#if FGG_HAVE_AVX && FGG_IQ_W == 8
FGG_IQ_INLINE fgg_iq_vf fgg__q3_sel(fgg_q3_m m, fgg_iq_vf a, fgg_iq_vf b) {
    return (fgg_iq_vf)_mm256_blendv_ps((__m256)b, (__m256)a, (__m256)m);
}
FGG_IQ_INLINE fgg_iq_vf fgg__q3_max(fgg_iq_vf a, fgg_iq_vf b) { return (fgg_iq_vf)_mm256_max_ps((__m256)a, (__m256)b); }
FGG_IQ_INLINE fgg_iq_vf fgg__q3_min(fgg_iq_vf a, fgg_iq_vf b) { return (fgg_iq_vf)_mm256_min_ps((__m256)a, (__m256)b); }
FGG_IQ_INLINE int fgg__q3_any(fgg_q3_m m) { return _mm256_movemask_ps((__m256)m) != 0; }
#elif FGG_HAVE_SSE2 && FGG_IQ_W == 4
FGG_IQ_INLINE fgg_iq_vf fgg__q3_sel(fgg_q3_m m, fgg_iq_vf a, fgg_iq_vf b) { return fgg_iq_select(m, a, b); }
FGG_IQ_INLINE fgg_iq_vf fgg__q3_max(fgg_iq_vf a, fgg_iq_vf b) { return (fgg_iq_vf)_mm_max_ps((__m128)a, (__m128)b); }
FGG_IQ_INLINE fgg_iq_vf fgg__q3_min(fgg_iq_vf a, fgg_iq_vf b) { return (fgg_iq_vf)_mm_min_ps((__m128)a, (__m128)b); }
FGG_IQ_INLINE int fgg__q3_any(fgg_q3_m m) { return _mm_movemask_ps((__m128)m) != 0; }
#else
FGG_IQ_INLINE fgg_iq_vf fgg__q3_sel(fgg_q3_m m, fgg_iq_vf a, fgg_iq_vf b) { return fgg_iq_select(m, a, b); }
FGG_IQ_INLINE fgg_iq_vf fgg__q3_max(fgg_iq_vf a, fgg_iq_vf b) { return fgg_iq_select(a > b, a, b); }
FGG_IQ_INLINE fgg_iq_vf fgg__q3_min(fgg_iq_vf a, fgg_iq_vf b) { return fgg_iq_select(a < b, a, b); }
FGG_IQ_INLINE int fgg__q3_any(fgg_q3_m m) {
    int any = 0;
    for (int k = 0; k < FGG_IQ_W; ++k) any |= m[k];
    return any != 0;
}
#endif
#endif

/* nearest integer, ties to even, per lane, for |t| < 2^21 */
FGG_IQ_INLINE fgg_iq_vf fgg__q3_round(fgg_iq_vf t) {
#if FGG_HAVE_AVX && FGG_IQ_W == 8
    return (fgg_iq_vf)_mm256_round_ps((__m256)t, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
#else
    return (t + 12582912.0f) - 12582912.0f;
#endif
}

/* in place transpose of the FGG_IQ_W x FGG_IQ_W tile a[0 .. FGG_IQ_W) (vector r = row r), by
 * exchanging the off-diagonal halves of ever smaller sub-tiles */
FGG_IQ_INLINE void fgg__q_transpose_tile(fgg_iq_vf *a) {
    fgg_iq_vi c;
    for (int k = 0; k < FGG_IQ_W; ++k) c[k] = k;
#pragma GCC unroll 4
    for (int b = 1; b < FGG_IQ_W; b *= 2) {
        const fgg_iq_vi odd = (c & b) != 0;
        const fgg_iq_vi lo = fgg_q_isel(odd, c + (FGG_IQ_W - b), c), hi = fgg_q_isel(odd, c + FGG_IQ_W, c + b);
#pragma GCC unroll 16
        for (int r = 0; r < FGG_IQ_W; ++r) {
            if (r & b) continue;
            const fgg_iq_vf p = a[r], q = a[r + b];
            a[r] = __builtin_shuffle(p, q, lo);
            a[r + b] = __builtin_shuffle(p, q, hi);
        }
    }
}

/* the 16 groups of 16 floats at x as columns: t[i][v] lane k = x[16 (v FGG_IQ_W + k) + i] */
FGG_IQ_INLINE void fgg__q3_transpose(const float *x, fgg_iq_vf t[16][FGG_Q3_V]) {
    for (int gv = 0; gv < FGG_Q3_V; ++gv) {
        for (int cv = 0; cv < FGG_Q3_V; ++cv) {
            fgg_iq_vf a[FGG_IQ_W];
            for (int r = 0; r < FGG_IQ_W; ++r) memcpy(&a[r], x + 16 * (gv * FGG_IQ_W + r) + cv * FGG_IQ_W, sizeof a[r]);
            fgg__q_transpose_tile(a);
            for (int r = 0; r < FGG_IQ_W; ++r) t[cv * FGG_IQ_W + r][gv] = a[r];
        }
    }
}

/* scales[16 b + j] = fgg_q_fit_q3(16, 4, x + 256 b + 16 j, ...) for the nblk super-blocks at x */
static void fgg__q3k_fit_plain(const float *x, int64_t nblk, float *scales) {
    enum { V = FGG_Q3_V, S = FGG_Q3_S };
    fgg_iq_vf X[S][16][V], W2[S][16][V], W3[S][16][V], Lf[S][16][V]; /* x, w = x^2, w x, level */
    fgg_iq_vf sumlx[S][V], suml2[S][V];
    fgg_q3_m zero[S][V], bad[S][V], changed[S][V];
    int64_t blk[S];
    int pass[S], active[S], n_active = 0;
    int64_t next = 0;
    const fgg_iq_vf zf = fgg_q_splat8(0.0f), magic = fgg_q_splat8(12582912.0f);
    const fgg_iq_vf tlo = magic - 4.0f, thi = magic + 3.0f, big = fgg_q_splat8(2097152.0f);
    const fgg_iq_vf lo = fgg_q_splat8(-4.0f), hi = fgg_q_splat8(3.0f);
    int8_t spare[16];
#define FGG__Q3_LOAD(s)                                                                              \
    do {                                                                                             \
        active[s] = next < nblk;                                                                     \
        if (!active[s]) break;                                                                       \
        ++n_active;                                                                                  \
        blk[s] = next++;                                                                             \
        pass[s] = 0;                                                                                 \
        fgg__q3_transpose(x + 256 * blk[s], X[s]);                                                   \
        for (int v = 0; v < V; ++v) {                                                                \
            fgg_iq_vf amax = zf, vmax = zf, slx = zf, sl2 = zf;                                      \
            for (int i = 0; i < 16; ++i) {                                                           \
                const fgg_iq_vf xi = X[s][i][v], a = fgg_q_abs8(xi);                                 \
                const fgg_q3_m m = fgg__q3_gt(a, amax);                                              \
                amax = fgg__q3_sel(m, a, amax);                                                      \
                vmax = fgg__q3_sel(m, xi, vmax);                                                     \
                W2[s][i][v] = xi * xi;                                                               \
                W3[s][i][v] = W2[s][i][v] * xi;                                                      \
            }                                                                                        \
            zero[s][v] = fgg__q3_gt(fgg_q_splat8(FGG_Q_EPS), amax);                                  \
            bad[s][v] = FGG_Q3_NONE;                                                                 \
            const fgg_iq_vf iscale = -4.0f / vmax;                                                   \
            for (int i = 0; i < 16; ++i) {                                                           \
                const fgg_iq_vf t = fgg__q3_min(fgg__q3_max(iscale * X[s][i][v] + magic, tlo), thi); \
                const fgg_iq_vf fl = t - magic;                                                      \
                Lf[s][i][v] = fl;                                                                    \
                slx += W3[s][i][v] * fl;                                                             \
                sl2 += W2[s][i][v] * fl * fl;                                                        \
            }                                                                                        \
            sumlx[s][v] = slx;                                                                       \
            suml2[s][v] = sl2;                                                                       \
        }                                                                                            \
    } while (0)
    for (int s = 0; s < S; ++s) FGG__Q3_LOAD(s);
    while (n_active) {
        for (int s = 0; s < S; ++s)
            for (int v = 0; v < V; ++v) changed[s][v] = FGG_Q3_NONE;
        for (int i = 0; i < 16; ++i) {
#pragma GCC unroll 4
            for (int s = 0; s < S; ++s) {
                if (!active[s]) continue;
#pragma GCC unroll 4
                for (int v = 0; v < V; ++v) {
                    const fgg_iq_vf xi = X[s][i][v], w = W2[s][i][v], wx = W3[s][i][v], fl = Lf[s][i][v];
                    const fgg_iq_vf slx0 = sumlx[s][v] - wx * fl;
                    const fgg_iq_vf sl20 = suml2[s][v] - w * fl * fl;
                    const fgg_iq_vf r = xi * sl20 / slx0;
                    const fgg_iq_vf fn = fgg__q3_round(fgg__q3_min(fgg__q3_max(r, lo), hi));
                    const fgg_q3_m pos = fgg__q3_gt(slx0, zf);
                    bad[s][v] |= pos & fgg__q3_nlt(fgg_q_abs8(r), big);
                    const fgg_iq_vf a = wx * fn, b = w * fn * fn;
                    const fgg_iq_vf slx = slx0 + a;
                    const fgg_iq_vf sl2 = sl20 + b;
                    const fgg_iq_vf ss = slx * slx;
                    const fgg_q3_m upd = (pos & fgg__q3_ne(fn, fl) & fgg__q3_gt(sl2, zf)) &
                                         fgg__q3_gt(ss * suml2[s][v], sumlx[s][v] * sumlx[s][v] * sl2);
                    fgg__q3_store_sel(&Lf[s][i][v], upd, fn);
                    sumlx[s][v] = fgg__q3_sel(upd, slx, sumlx[s][v]);
                    suml2[s][v] = fgg__q3_sel(upd, sl2, suml2[s][v]);
                    changed[s][v] |= upd;
                }
            }
        }
        for (int s = 0; s < S; ++s) {
            if (!active[s]) continue;
            int any = 0;
            for (int v = 0; v < V; ++v) any |= fgg__q3_any(changed[s][v]);
            if (any && ++pass[s] < 5) continue;
            float *out = scales + 16 * blk[s];
            int redo = 0;
            for (int v = 0; v < V; ++v) {
                fgg_iq_vf d = fgg__q3_sel(fgg__q3_gt(suml2[s][v], zf), sumlx[s][v] / suml2[s][v], zf);
                d = fgg__q3_sel(zero[s][v], zf, d);
                memcpy(out + v * FGG_IQ_W, &d, sizeof d);
                redo |= fgg__q3_any(fgg__q3_andnot(bad[s][v], zero[s][v]));
            }
            if (redo) {
                for (int j = 0; j < 16; ++j) out[j] = fgg_q_fit_q3(16, 4, x + 256 * blk[s] + 16 * j, spare);
            }
            --n_active;
            FGG__Q3_LOAD(s);
        }
    }
#undef FGG__Q3_LOAD
}

/* fgg_q_fit_signed's trial t (0..18) numerator: -nmax first, then -(nmax + 0.1 is) for is = -9..9 but 0 */
static inline float fgg__q_signed_trial_num(int nmax, int t) {
    const int is = t == 0 ? 0 : (t <= 9 ? t - 10 : t - 9);
    return is == 0 ? (float)(-nmax) : -((float)nmax + 0.1f * (float)is);
}

/* The scales of fgg_q_fit_signed(16, nmax, x + 16 j, ., w + 16 j) for the 16 groups of one
 * super-block, with lanes as groups: X and W are x and w transposed by fgg__q3_transpose
 * (w_given 0: W is filled with x^2). The levels are not kept (the callers refit a sub-block
 * whose final pass needs them). The levels are clamped in float as fgg__q3k_fit_plain's first
 * ones: every product iscale * x is within +-(nmax + 1), the lanes of a group below FGG_Q_EPS
 * excepted, and those are discarded. wsum (if not NULL) gets the groups' weight sums, left to
 * right. */
static void fgg__q_fit_signed16(int nmax, const fgg_iq_vf X[16][FGG_Q3_V], fgg_iq_vf W[16][FGG_Q3_V], int w_given,
                                float *scales, float *wsum) {
    enum { V = FGG_Q3_V };
    fgg_iq_vf WX[16][V];
    const fgg_iq_vf zf = fgg_q_splat8(0.0f), magic = fgg_q_splat8(12582912.0f);
    const fgg_iq_vf tlo = magic - (float)nmax, thi = magic + (float)(nmax - 1);
    fgg_iq_vf amax[V], vmax[V], scale[V], best[V];
    for (int v = 0; v < V; ++v) {
        amax[v] = vmax[v] = scale[v] = best[v] = zf; /* scale and best: set by trial 0 */
        fgg_iq_vf s = zf;
        for (int i = 0; i < 16; ++i) {
            const fgg_iq_vf xi = X[i][v], a = fgg_q_abs8(xi);
            const fgg_q3_m m = fgg__q3_gt(a, amax[v]);
            amax[v] = fgg__q3_sel(m, a, amax[v]);
            vmax[v] = fgg__q3_sel(m, xi, vmax[v]);
            if (!w_given) W[i][v] = xi * xi;
            WX[i][v] = W[i][v] * xi; /* (w x) l, as the scalar sums group it */
            s += W[i][v];
        }
        if (wsum) memcpy(wsum + v * FGG_IQ_W, &s, sizeof s);
    }
    for (int t = 0; t < 19; ++t) {
        const float num = fgg__q_signed_trial_num(nmax, t);
        fgg_iq_vf iscale[V], slx[V], sl2[V];
        for (int v = 0; v < V; ++v) {
            iscale[v] = num / vmax[v];
            slx[v] = sl2[v] = zf;
        }
        for (int i = 0; i < 16; ++i) {
            for (int v = 0; v < V; ++v) {
                const fgg_iq_vf fl = fgg__q3_min(fgg__q3_max(iscale[v] * X[i][v] + magic, tlo), thi) - magic;
                slx[v] += WX[i][v] * fl;
                sl2[v] += W[i][v] * fl * fl;
            }
        }
        for (int v = 0; v < V; ++v) {
            if (t == 0) {
                scale[v] = fgg_iq_select(sl2[v] != 0.0f, slx[v] / sl2[v], zf);
                best[v] = scale[v] * slx[v];
            } else {
                const fgg_q3_m upd = fgg__q3_gt(sl2[v], zf) & fgg__q3_gt(slx[v] * slx[v], best[v] * sl2[v]);
                scale[v] = fgg__q3_sel(upd, slx[v] / sl2[v], scale[v]);
                best[v] = fgg__q3_sel(upd, scale[v] * slx[v], best[v]);
            }
        }
    }
    for (int v = 0; v < V; ++v) {
        const fgg_iq_vf r = fgg__q3_sel(fgg__q3_gt(fgg_q_splat8(FGG_Q_EPS), amax[v]), zf, scale[v]);
        memcpy(scales + v * FGG_IQ_W, &r, sizeof r);
    }
}

/* fgg_q_fit_signed(16, nmax, x, L, w) with lanes as its 19 trials: the sums of all trials at
 * once, then the choice among them in trial order, as the scalar fit makes it */
static float fgg__q_fit_signed_trials(int nmax, const float *x, int8_t *L, const float *w) {
    enum { T = (19 + FGG_IQ_W - 1) / FGG_IQ_W };
    const float vmax = fgg_q_signed_amax(x, 16);
    if (fabsf(vmax) < FGG_Q_EPS) {
        memset(L, 0, 16);
        return 0.0f;
    }
    float num[T * FGG_IQ_W], sx[T * FGG_IQ_W], s2[T * FGG_IQ_W];
    for (int t = 0; t < T * FGG_IQ_W; ++t) num[t] = fgg__q_signed_trial_num(nmax, t < 19 ? t : 0); /* spare lanes: trial 0 */
    const fgg_iq_vf zf = fgg_q_splat8(0.0f);
    fgg_iq_vf iscale[T], slx[T], sl2[T];
    for (int k = 0; k < T; ++k) {
        memcpy(&iscale[k], num + k * FGG_IQ_W, sizeof iscale[k]);
        iscale[k] = iscale[k] / vmax;
        slx[k] = sl2[k] = zf;
    }
    for (int i = 0; i < 16; ++i) {
        const fgg_iq_vf xi = fgg_q_splat8(x[i]), wi = fgg_q_splat8(w[i]), wxi = fgg_q_splat8(w[i] * x[i]);
        for (int k = 0; k < T; ++k) {
            const fgg_iq_vf fl = fgg_q_tof8(fgg_q_clamp8(fgg_q_round8(iscale[k] * xi), -nmax, nmax - 1));
            slx[k] += wxi * fl;
            sl2[k] += wi * fl * fl;
        }
    }
    memcpy(sx, slx, sizeof slx);
    memcpy(s2, sl2, sizeof sl2);
    int win = 0;
    float scale = s2[0] != 0.0f ? sx[0] / s2[0] : 0.0f;
    float best = scale * sx[0];
    for (int t = 1; t < 19; ++t) {
        if (s2[t] > 0.0f && sx[t] * sx[t] > best * s2[t]) {
            win = t;
            scale = sx[t] / s2[t];
            best = scale * sx[t];
        }
    }
    const float iscale_win = num[win] / vmax;
    for (int i = 0; i < 16; ++i) L[i] = (int8_t)(fgg_q_clampi(fgg_iq_nearest_int(iscale_win * x[i]), -nmax, nmax - 1) + nmax);
    return scale;
}

/* lane-wise sqrtf (IEEE correctly rounded in every branch) */
FGG_IQ_INLINE fgg_iq_vf fgg__q_sqrt8(fgg_iq_vf v) {
#if FGG_IQ_W == 16
    return (fgg_iq_vf)_mm512_sqrt_ps((__m512)v);
#elif FGG_IQ_W == 8 && FGG_HAVE_AVX
    return (fgg_iq_vf)_mm256_sqrt_ps((__m256)v);
#elif FGG_IQ_W == 4 && FGG_HAVE_SSE2
    return (fgg_iq_vf)_mm_sqrt_ps((__m128)v);
#else
    for (int k = 0; k < FGG_IQ_W; ++k) v[k] = sqrtf(v[k]);
    return v;
#endif
}

/* sums of squares (left to right, as fgg_q_sumsq) of the FGG_IQ_W super-blocks at x, one per
 * lane: the blocks' FGG_IQ_W x FGG_IQ_W tiles transposed, so each lane's chain runs in order */
FGG_IQ_INLINE fgg_iq_vf fgg__q_sumsq256_lanes(const float *x) {
    fgg_iq_vf acc = fgg_q_splat8(0.0f);
    for (int c = 0; c < 256; c += FGG_IQ_W) {
        fgg_iq_vf a[FGG_IQ_W];
        for (int r = 0; r < FGG_IQ_W; ++r) memcpy(&a[r], x + 256 * r + c, sizeof a[r]);
        fgg__q_transpose_tile(a);
        for (int k = 0; k < FGG_IQ_W; ++k) acc += a[k] * a[k];
    }
    return acc;
}
#endif

/* four 2-bit planes: byte l of each 32-byte group holds levels l, l+32, l+64, l+96 of 128 */
static inline void fgg__q_pack2(uint8_t *qs, const uint8_t *L) {
    for (int j = 0; j < 256; j += 128) {
        for (int l = 0; l < 32; ++l) {
            qs[j / 4 + l] = (uint8_t)(L[j + l] | (L[j + l + 32] << 2) | (L[j + l + 64] << 4) | (L[j + l + 96] << 6));
        }
    }
}

/* ------------------------------------------------------------------ Q2_K (84 bytes) */

static void fgg__q2k_requant(const float *x, uint8_t *blk, const uint8_t *scales, float d, float dmin, uint8_t *L) {
    for (int j = 0; j < 16; ++j) {
        const float dj = d * (float)(scales[j] & 0xf);
        if (dj == 0.0f) continue;
        fgg_q_requant(x + 16 * j, 16, dmin * (float)(scales[j] >> 4), dj, 0, 3, 0, L + 16 * j);
    }
    fgg__q_pack2(blk + 16, L);
}

static void fgg__q2k_block(const float *x, uint8_t *blk, const float *qw) {
    uint8_t L[256];
    float scales[16], mins[16], w[256];
    const float *xs[16], *ws[16];
    uint8_t *Ls16[16];
    for (int j = 0; j < 16; ++j) {
        xs[j] = x + 16 * j;
        ws[j] = w + 16 * j;
        Ls16[j] = L + 16 * j;
    }
    uint8_t *sc = blk;
    if (!qw) {
        for (int i = 0; i < 256; ++i) w[i] = fabsf(x[i]);
        fgg_q_fit_affine_n(16, 16, 3, xs, ws, Ls16, scales, mins, -0.5f, 0.1f, 15, 1);
        float max_scale = 0.0f, max_min = 0.0f;
        for (int j = 0; j < 16; ++j) {
            if (scales[j] > max_scale) max_scale = scales[j];
            if (mins[j] > max_min) max_min = mins[j];
        }
        uint16_t hd = 0, hm = 0;
        if (max_scale > 0.0f) {
            const float is = 15.0f / max_scale;
            for (int j = 0; j < 16; ++j) sc[j] = (uint8_t)fgg_iq_nearest_int(is * scales[j]);
            hd = fgg_float_to_half(max_scale / 15.0f);
        } else {
            memset(sc, 0, 16);
        }
        if (max_min > 0.0f) {
            const float im = 15.0f / max_min;
            for (int j = 0; j < 16; ++j) sc[j] = (uint8_t)(sc[j] | (fgg_iq_nearest_int(im * mins[j]) << 4));
            hm = fgg_float_to_half(max_min / 15.0f);
        }
        fgg_store_u16le(blk + 80, hd);
        fgg_store_u16le(blk + 82, hm);
        fgg__q2k_requant(x, blk, sc, fgg_half_to_float(hd), fgg_half_to_float(hm), L);
        return;
    }
    float sw[16];
    uint8_t Ls[16], Lm[16];
    const float sigma2 = fgg_q_sumsq(x, 256) / 256.0f;
    fgg_q_rms_weights(256, qw, x, sigma2, w);
    for (int j = 0; j < 16; ++j) {
        float s = 0.0f;
        for (int i = 0; i < 16; ++i) s += w[16 * j + i];
        sw[j] = s;
    }
    fgg_q_fit_affine_n(16, 16, 3, xs, ws, Ls16, scales, mins, -0.9f, 0.05f, 36, 0);
    const float dm = fgg_q_fit_pos(16, 15, scales, Ls, sw);
    const float mm = fgg_q_fit_pos(16, 15, mins, Lm, sw);
    const uint16_t hd = fgg_float_to_half(dm), hm = fgg_float_to_half(mm);
    fgg_store_u16le(blk + 80, hd);
    fgg_store_u16le(blk + 82, hm);
    for (int j = 0; j < 16; ++j) sc[j] = (uint8_t)(Ls[j] | (Lm[j] << 4));
    fgg__q2k_requant(x, blk, sc, fgg_half_to_float(hd), fgg_half_to_float(hm), L);
}

/* ------------------------------------------------------------------ Q3_K (110 bytes) */

static inline void fgg__q3k_put_scale(uint8_t *sc, int j, int l) {
    if (j < 8) sc[j] = (uint8_t)(l & 0xf);
    else sc[j - 8] = (uint8_t)(sc[j - 8] | ((l & 0xf) << 4));
    sc[j % 4 + 8] = (uint8_t)(sc[j % 4 + 8] | ((l >> 4) << (2 * (j / 4))));
}

static inline int fgg__q3k_get_scale(const uint8_t *sc, int j) {
    const int s = j < 8 ? (sc[j] & 0xf) : (sc[j - 8] >> 4);
    return (int8_t)((s | (((sc[8 + j % 4] >> (2 * (j / 4))) & 3) << 4)) - 32);
}

#if FGG_IQ_SIMD && FGG_HAVE_AVX2 && !FGG_HAVE_AVX512
/* Q3_K's and Q6_K's final levels of two sub-blocks of 16 (scales d0, d1):
 * clamp(nearest_int(x / d), -nmax, nmax - 1) + nmax as 32 bytes at U, in order */
static inline void fgg__q_k_levels32_avx2(const float *x, float d0, float d1, int nmax, uint8_t *U) {
    __m256i t[4];
    for (int c = 0; c < 4; ++c) {
        const __m256 q = _mm256_div_ps(_mm256_loadu_ps(x + 8 * c), _mm256_set1_ps(c < 2 ? d0 : d1));
        const __m256i l = _mm256_max_epi32(_mm256_min_epi32(fgg_q_nearest_int_avx2(q), _mm256_set1_epi32(nmax - 1)),
                                           _mm256_set1_epi32(-nmax));
        t[c] = _mm256_add_epi32(l, _mm256_set1_epi32(nmax));
    }
    _mm256_storeu_si256((__m256i *)U, fgg_q_pack_bytes_avx2(t[0], t[1], t[2], t[3]));
}
#endif

/* The final pass against the fp16 super-block scale and the 6-bit sub-block scales already in
 * blk, and the packing. A sub-block whose scale is zero keeps the levels of its fit: L holds
 * them (refit = 0), or they are refitted here (refit = 1: the fits kept only the scales). */
static void fgg__q3k_finish(const float *x, uint8_t *blk, int8_t *L, int refit) {
    uint8_t *hmask = blk, *qs = blk + 32, *sc = blk + 96;
    const float d = fgg_half_to_float((uint16_t)(blk[108] | (blk[109] << 8)));
#if FGG_IQ_SIMD && FGG_HAVE_AVX2 && !FGG_HAVE_AVX512
    /* levels of 32 elements (two sub-blocks) per step, packed to bytes in order; then the bit
     * planes with byte-safe 16-bit shifts of masked bits */
    uint8_t U[256];
    float dj[16];
    for (int j = 0; j < 16; ++j) dj[j] = d * (float)fgg__q3k_get_scale(sc, j);
    for (int j = 0; j < 16; j += 2) {
        fgg__q_k_levels32_avx2(x + 16 * j, dj[j], dj[j + 1], 4, U + 16 * j);
        for (int h = 0; h < 2; ++h) {
            if (dj[j + h] != 0.0f) continue;
            if (refit) fgg_q_fit_q3(16, 4, x + 16 * (j + h), L + 16 * (j + h));
            memcpy(U + 16 * (j + h), L + 16 * (j + h), 16);
        }
    }
    const __m256i bit2 = _mm256_set1_epi8(4), low2 = _mm256_set1_epi8(3);
    __m256i hm = _mm256_setzero_si256(), q[2] = {_mm256_setzero_si256(), _mm256_setzero_si256()};
#pragma GCC unroll 8
    for (int b = 0; b < 8; ++b) {
        const __m256i l = _mm256_loadu_si256((const __m256i *)(U + 32 * b)), h = _mm256_and_si256(l, bit2);
        hm = _mm256_or_si256(hm, b < 2 ? _mm256_srli_epi16(h, 2 - b) : _mm256_slli_epi16(h, b - 2));
        q[b / 4] = _mm256_or_si256(q[b / 4], _mm256_slli_epi16(_mm256_and_si256(l, low2), 2 * (b % 4)));
    }
    _mm256_storeu_si256((__m256i *)hmask, hm);
    _mm256_storeu_si256((__m256i *)qs, q[0]);
    _mm256_storeu_si256((__m256i *)(qs + 32), q[1]);
#else
    for (int j = 0; j < 16; ++j) {
        const float dj = d * (float)fgg__q3k_get_scale(sc, j);
        if (dj == 0.0f) {
            if (refit) fgg_q_fit_q3(16, 4, x + 16 * j, L + 16 * j);
            continue;
        }
        fgg_q_requant(x + 16 * j, 16, 0.0f, dj, -4, 3, 4, (uint8_t *)L + 16 * j);
    }
    /* level bit 2 of element 32 b + m goes to bit b of hmask[m]; bits 0-1 to the 2-bit planes */
#if FGG_IQ_SIMD
    typedef uint8_t v16 __attribute__((vector_size(16)));
    for (int h = 0; h < 32; h += 16) {
        v16 hm = {0}, q0 = {0}, q1 = {0};
        for (int b = 0; b < 8; ++b) {
            v16 l;
            memcpy(&l, L + 32 * b + h, 16);
            hm |= ((l >> 2) & 1) << b;
            if (b < 4) q0 |= (l & 3) << (2 * b);
            else q1 |= (l & 3) << (2 * (b - 4));
        }
        memcpy(hmask + h, &hm, 16);
        memcpy(qs + h, &q0, 16);
        memcpy(qs + 32 + h, &q1, 16);
    }
#else
    memset(hmask, 0, 32);
    uint8_t U[256];
    for (int b = 0; b < 8; ++b) {
        for (int m = 0; m < 32; ++m) {
            const uint8_t l = (uint8_t)L[32 * b + m];
            hmask[m] = (uint8_t)(hmask[m] | ((l >> 2) << b));
            U[32 * b + m] = (uint8_t)(l & 3);
        }
    }
    fgg__q_pack2(qs, U);
#endif
#endif
}

/* One Q3_K super-block without an importance matrix, from its 16 sub-block fits' scales */
static void fgg__q3k_plain_block(const float *x, uint8_t *blk, const float *scales, int8_t *L) {
    uint8_t *sc = blk + 96;
    memset(sc, 0, 12);
    float max_scale = 0.0f, amax = 0.0f;
    for (int j = 0; j < 16; ++j) {
        float a = fabsf(scales[j]);
        if (a > amax) { amax = a; max_scale = scales[j]; }
    }
    uint16_t hd = 0;
    if (max_scale != 0.0f) {
        const float iscale = -32.0f / max_scale;
        for (int j = 0; j < 16; ++j) {
            int l = (int8_t)fgg_iq_nearest_int(iscale * scales[j]);
            l = fgg_q_clampi(l, -32, 31) + 32;
            fgg__q3k_put_scale(sc, j, l);
        }
        hd = fgg_float_to_half(1.0f / iscale);
    }
    fgg_store_u16le(blk + 108, hd);
    fgg__q3k_finish(x, blk, L, 1);
}

/* One Q3_K super-block with importance weights qw; sumsq = fgg_q_sumsq(x, 256) */
static void fgg__q3k_imat_block(const float *x, uint8_t *blk, const float *qw, float sumsq) {
    uint8_t *sc = blk + 96;
    memset(sc, 0, 12);
    int8_t L[256];
    float w[256], sw[16], scales[16];
    int8_t Ls[16];
    const float sigma2 = 2.0f * sumsq / 256.0f;
#if FGG_IQ_SIMD
    fgg_iq_vf X[16][FGG_Q3_V], W[16][FGG_Q3_V];
    fgg__q3_transpose(x, X);
    fgg__q3_transpose(qw, W);
    for (int i = 0; i < 16; ++i)
        for (int v = 0; v < FGG_Q3_V; ++v) W[i][v] = W[i][v] * fgg__q_sqrt8(sigma2 + X[i][v] * X[i][v]);
    fgg__q_fit_signed16(4, X, W, 1, scales, sw);
    const float d_block = fgg__q_fit_signed_trials(32, scales, Ls, sw);
#else
    const float *xs[16], *ws[16];
    int8_t *Ls16[16];
    fgg_q_rms_weights(256, qw, x, sigma2, w);
    for (int j = 0; j < 16; ++j) {
        float s = 0.0f;
        for (int i = 0; i < 16; ++i) s += w[16 * j + i];
        sw[j] = s;
        xs[j] = x + 16 * j;
        ws[j] = w + 16 * j;
        Ls16[j] = L + 16 * j;
    }
    fgg_q_fit_signed_n(16, 16, 4, xs, ws, Ls16, scales);
    const float d_block = fgg_q_fit_signed(16, 32, scales, Ls, sw);
#endif
    for (int j = 0; j < 16; ++j) fgg__q3k_put_scale(sc, j, Ls[j]);
    const uint16_t hd = fgg_float_to_half(d_block);
    fgg_store_u16le(blk + 108, hd);
#if FGG_IQ_SIMD
    /* the fits kept only the scales: a sub-block whose scale comes out zero is refitted for its levels */
    const float d = fgg_half_to_float(hd);
    const float *xs[16], *ws[16];
    int8_t *Ls16[16];
    int n_refit = 0;
    for (int j = 0; j < 16; ++j) {
        if (d * (float)fgg__q3k_get_scale(sc, j) != 0.0f) continue;
        fgg_q_rms_weights(16, qw + 16 * j, x + 16 * j, sigma2, w + 16 * j);
        xs[n_refit] = x + 16 * j;
        ws[n_refit] = w + 16 * j;
        Ls16[n_refit++] = L + 16 * j;
    }
    if (n_refit) fgg_q_fit_signed_n(n_refit, 16, 4, xs, ws, Ls16, scales); /* the scales are done with */
#endif
    fgg__q3k_finish(x, blk, L, 0);
}

/* Q3_K rows, one run of super-blocks. Without an importance matrix, fitted FGG_Q3_CHUNK at a
 * time (fgg__q3k_fit_plain), then finished one by one; with one, the sums of squares of
 * FGG_IQ_W super-blocks are taken together (one dependent chain per lane). */
#define FGG_Q3_CHUNK 64
static void fgg_quantize_q3_k(const float *src, uint8_t *dst, int64_t n_rows, int64_t n_per_row,
                              const float *imatrix) {
    const int64_t nb = n_per_row / 256;
    const int64_t total = n_rows * nb;
    if (imatrix) {
        for (int64_t b0 = 0; b0 < total;) {
            float sumsq[16];
            int count = 1;
#if FGG_IQ_SIMD
            if (total - b0 >= FGG_IQ_W) {
                const fgg_iq_vf s = fgg__q_sumsq256_lanes(src + 256 * b0);
                memcpy(sumsq, &s, sizeof s);
                count = FGG_IQ_W;
            } else
#endif
                sumsq[0] = fgg_q_sumsq(src + 256 * b0, 256);
            for (int b = 0; b < count; ++b, ++b0) {
                fgg__q3k_imat_block(src + 256 * b0, dst + (size_t)b0 * 110, imatrix + 256 * (b0 % nb), sumsq[b]);
            }
        }
        return;
    }
    float scales[16 * FGG_Q3_CHUNK];
    int8_t L[256];
    for (int64_t b0 = 0; b0 < total; b0 += FGG_Q3_CHUNK) {
        const int64_t count = total - b0 < FGG_Q3_CHUNK ? total - b0 : FGG_Q3_CHUNK;
        const float *x = src + 256 * b0;
#if FGG_IQ_SIMD
        fgg__q3k_fit_plain(x, count, scales);
#else
        for (int64_t j = 0; j < 16 * count; ++j) scales[j] = fgg_q_fit_q3(16, 4, x + 16 * j, L);
#endif
        for (int64_t b = 0; b < count; ++b) {
            fgg__q3k_plain_block(x + 256 * b, dst + (size_t)(b0 + b) * 110, scales + 16 * b, L);
        }
    }
}

/* ------------------------------------------------------------------ Q4_K / Q5_K (144 / 176 bytes) */

static inline void fgg__q_put_scale_min_k4(uint8_t *sc, int j, int ls, int lm) {
    if (j < 4) {
        sc[j] = (uint8_t)ls;
        sc[j + 4] = (uint8_t)lm;
    } else {
        sc[j + 4] = (uint8_t)((ls & 0xf) | ((lm & 0xf) << 4));
        sc[j - 4] = (uint8_t)(sc[j - 4] | ((ls >> 4) << 6));
        sc[j] = (uint8_t)(sc[j] | ((lm >> 4) << 6));
    }
}

static inline void fgg__q_get_scale_min_k4(const uint8_t *q, int j, int *d, int *m) {
    if (j < 4) {
        *d = q[j] & 63;
        *m = q[j + 4] & 63;
    } else {
        *d = (q[j + 4] & 0xf) | ((q[j - 4] >> 6) << 4);
        *m = (q[j + 4] >> 4) | ((q[j] >> 6) << 4);
    }
}

/* Q4_K (nmax 15) and Q5_K (nmax 31) share everything up to the final packing. The sub-block
 * fits of count (1 or 2) consecutive super-blocks run together (16 groups fill the vector lanes
 * better than 8); sw gets the sub-blocks' weight sums (imatrix path). */
static void fgg__q45k_fit(const float *x, const float *qw, int nmax, int count, uint8_t *L, float *scales,
                          float *mins, float *sw) {
    float w[512];
    const float *xs[16], *ws[16];
    uint8_t *Ls[16];
    for (int j = 0; j < 8 * count; ++j) {
        xs[j] = x + 32 * j;
        ws[j] = w + 32 * j;
        Ls[j] = L + 32 * j;
    }
    if (!qw) {
        for (int j = 0; j < 8 * count; ++j) {
            const float av_x = sqrtf(fgg_q_sumsq(xs[j], 32) / 32.0f);
            for (int i = 0; i < 32; ++i) w[32 * j + i] = av_x + fabsf(xs[j][i]);
        }
        if (nmax == 15) fgg_q_fit_affine_n(8 * count, 32, 15, xs, ws, Ls, scales, mins, -1.0f, 0.1f, 20, 0);
        else fgg_q_fit_affine_n(8 * count, 32, 31, xs, ws, Ls, scales, mins, -0.5f, 0.1f, 15, 0);
        return;
    }
    for (int b = 0; b < count; ++b) {
        const float sigma2 = 2.0f * fgg_q_sumsq(x + 256 * b, 256) / 256.0f;
        fgg_q_rms_weights(256, qw + 256 * b, x + 256 * b, sigma2, w + 256 * b);
    }
    for (int j = 0; j < 8 * count; ++j) {
        float s = 0.0f;
        for (int i = 0; i < 32; ++i) s += w[32 * j + i];
        sw[j] = s;
    }
    fgg_q_fit_affine_n(8 * count, 32, nmax, xs, ws, Ls, scales, mins, -0.9f, 0.05f, 36, 0);
}

/* the rest of one super-block after fgg__q45k_fit: scales, fp16 scales, requantization, packing */
static void fgg__q45k_block(const float *x, uint8_t *blk, int imat, int nmax, uint8_t *L, const float *scales,
                            const float *mins, const float *sw) {
    uint8_t *sc = blk + 4;
    if (!imat) {
        float max_scale = 0.0f, max_min = 0.0f;
        for (int j = 0; j < 8; ++j) {
            if (scales[j] > max_scale) max_scale = scales[j];
            if (mins[j] > max_min) max_min = mins[j];
        }
        const float inv_scale = max_scale > 0.0f ? 63.0f / max_scale : 0.0f;
        const float inv_min = max_min > 0.0f ? 63.0f / max_min : 0.0f;
        for (int j = 0; j < 8; ++j) {
            uint8_t ls = (uint8_t)fgg_iq_nearest_int(inv_scale * scales[j]);
            uint8_t lm = (uint8_t)fgg_iq_nearest_int(inv_min * mins[j]);
            fgg__q_put_scale_min_k4(sc, j, ls < 63 ? ls : 63, lm < 63 ? lm : 63);
        }
        fgg_store_u16le(blk, fgg_float_to_half(max_scale / 63.0f));
        fgg_store_u16le(blk + 2, fgg_float_to_half(max_min / 63.0f));
    } else {
        uint8_t Ls[8], Lm[8];
        const float d_block = fgg_q_fit_pos(8, 63, scales, Ls, sw);
        const float m_block = fgg_q_fit_pos(8, 63, mins, Lm, sw);
        for (int j = 0; j < 8; ++j) {
            fgg__q_put_scale_min_k4(sc, j, Ls[j] < 63 ? Ls[j] : 63, Lm[j] < 63 ? Lm[j] : 63);
        }
        fgg_store_u16le(blk, fgg_float_to_half(d_block));
        fgg_store_u16le(blk + 2, fgg_float_to_half(m_block));
    }
    const float d = fgg_half_to_float((uint16_t)(blk[0] | (blk[1] << 8)));
    const float dmin = fgg_half_to_float((uint16_t)(blk[2] | (blk[3] << 8)));
    for (int j = 0; j < 8; ++j) {
        int s, m;
        fgg__q_get_scale_min_k4(sc, j, &s, &m);
        const float dj = d * (float)s;
        if (dj == 0.0f) continue;
        fgg_q_requant(x + 32 * j, 32, dmin * (float)m, dj, 0, nmax, 0, L + 32 * j);
    }
    if (nmax == 15) {
        uint8_t *q = blk + 16;
        for (int j = 0; j < 256; j += 64) {
            for (int l = 0; l < 32; ++l) q[l] = (uint8_t)(L[j + l] | (L[j + l + 32] << 4));
            q += 32;
        }
    } else {
        uint8_t *qh = blk + 16, *ql = blk + 48;
        memset(qh, 0, 32);
        for (int n = 0, shift = 0; n < 256; n += 64, shift += 2) {
            for (int j = 0; j < 32; ++j) {
                int l1 = L[n + j], l2 = L[n + j + 32];
                if (l1 > 15) { l1 -= 16; qh[j] = (uint8_t)(qh[j] | (1u << shift)); }
                if (l2 > 15) { l2 -= 16; qh[j] = (uint8_t)(qh[j] | (2u << shift)); }
                ql[j] = (uint8_t)(l1 | (l2 << 4));
            }
            ql += 32;
        }
    }
}

/* ------------------------------------------------------------------ Q6_K (210 bytes) */

static void fgg__q6k_block(const float *x, uint8_t *blk, const float *qw) {
    int8_t L[256];
    float scales[16];
    float max_scale = 0.0f, max_abs = 0.0f;
    const float *xs[16], *ws[16];
    int8_t *Ls16[16];
    for (int j = 0; j < 16; ++j) {
        xs[j] = x + 16 * j;
        ws[j] = qw ? qw + 16 * j : NULL;
        Ls16[j] = L + 16 * j;
    }
#if FGG_IQ_SIMD
    fgg_iq_vf X[16][FGG_Q3_V], W[16][FGG_Q3_V];
    fgg__q3_transpose(x, X);
    if (qw) fgg__q3_transpose(qw, W);
    fgg__q_fit_signed16(32, X, W, qw != NULL, scales, NULL);
#else
    fgg_q_fit_signed_n(16, 16, 32, xs, ws, Ls16, scales);
#endif
    for (int j = 0; j < 16; ++j) {
        float a = fabsf(scales[j]);
        if (a > max_abs) { max_abs = a; max_scale = scales[j]; }
    }
    if (max_abs < FGG_Q_EPS) {
        memset(blk, 0, 210);
        return;
    }
    uint8_t *ql = blk, *qh = blk + 128;
    int8_t *sc = (int8_t *)(blk + 192);
    const float iscale = -128.0f / max_scale;
    const uint16_t hd = fgg_float_to_half(1.0f / iscale);
    fgg_store_u16le(blk + 208, hd);
    for (int j = 0; j < 16; ++j) {
        int l = fgg_iq_nearest_int(iscale * scales[j]);
        sc[j] = (int8_t)(l < 127 ? l : 127);
    }
    const float d = fgg_half_to_float(hd);
#if FGG_IQ_SIMD
    /* a sub-block whose scale comes out zero keeps the levels of its fit: refit those */
    int n_refit = 0;
    for (int j = 0; j < 16; ++j) {
        if (d * (float)sc[j] == 0.0f) {
            xs[n_refit] = xs[j];
            ws[n_refit] = ws[j];
            Ls16[n_refit++] = Ls16[j];
        }
    }
    if (n_refit) fgg_q_fit_signed_n(n_refit, 16, 32, xs, ws, Ls16, scales); /* the scales are done with */
#endif
#if FGG_IQ_SIMD && FGG_HAVE_AVX2 && !FGG_HAVE_AVX512
    /* levels of 32 elements (two sub-blocks) per step, packed to bytes in order; then the nibble
     * and 2-bit planes with byte-safe 16-bit shifts (levels are below 64) */
    uint8_t U[256];
    for (int j = 0; j < 16; j += 2) {
        fgg__q_k_levels32_avx2(x + 16 * j, d * (float)sc[j], d * (float)sc[j + 1], 32, U + 16 * j);
        for (int h = 0; h < 2; ++h) {
            if (d * (float)sc[j + h] == 0.0f) memcpy(U + 16 * (j + h), L + 16 * (j + h), 16);
        }
    }
    const __m256i m4 = _mm256_set1_epi8(0x0f), m30 = _mm256_set1_epi8(0x30);
    for (int j = 0; j < 256; j += 128) {
        const __m256i a = _mm256_loadu_si256((const __m256i *)(U + j)), b = _mm256_loadu_si256((const __m256i *)(U + j + 32));
        const __m256i c = _mm256_loadu_si256((const __m256i *)(U + j + 64)), e = _mm256_loadu_si256((const __m256i *)(U + j + 96));
        _mm256_storeu_si256((__m256i *)ql, _mm256_or_si256(_mm256_and_si256(a, m4), _mm256_slli_epi16(_mm256_and_si256(c, m4), 4)));
        _mm256_storeu_si256((__m256i *)(ql + 32), _mm256_or_si256(_mm256_and_si256(b, m4), _mm256_slli_epi16(_mm256_and_si256(e, m4), 4)));
        const __m256i h = _mm256_or_si256(_mm256_or_si256(_mm256_srli_epi16(_mm256_and_si256(a, m30), 4),
                                                          _mm256_srli_epi16(_mm256_and_si256(b, m30), 2)),
                                          _mm256_or_si256(_mm256_and_si256(c, m30), _mm256_slli_epi16(_mm256_and_si256(e, m30), 2)));
        _mm256_storeu_si256((__m256i *)qh, h);
        ql += 64;
        qh += 32;
    }
#else
    for (int j = 0; j < 16; ++j) {
        const float dj = d * (float)sc[j];
        if (dj == 0.0f) continue;
        fgg_q_requant(x + 16 * j, 16, 0.0f, dj, -32, 31, 32, (uint8_t *)L + 16 * j);
    }
    const uint8_t *U = (const uint8_t *)L;
    for (int j = 0; j < 256; j += 128) {
        for (int l = 0; l < 32; ++l) {
            ql[l] = (uint8_t)((U[j + l] & 0xf) | ((U[j + l + 64] & 0xf) << 4));
            ql[l + 32] = (uint8_t)((U[j + l + 32] & 0xf) | ((U[j + l + 96] & 0xf) << 4));
            qh[l] = (uint8_t)((U[j + l] >> 4) | ((U[j + l + 32] >> 4) << 2) | ((U[j + l + 64] >> 4) << 4) |
                              ((U[j + l + 96] >> 4) << 6));
        }
        ql += 64;
        qh += 32;
    }
#endif
}

/* ------------------------------------------------------------------ Q8_K (292 bytes: f32 d, 256 q, 16 sums) */

static void fgg__q8k_block(const float *x, uint8_t *blk) {
    const float vmax = fgg_q_signed_amax(x, 256);
    int8_t *q = (int8_t *)(blk + 4);
    if (vmax == 0.0f) {
        memset(blk, 0, 292);
        return;
    }
    const float iscale = -127.0f / vmax;
#if FGG_IQ_SIMD && FGG_HAVE_AVX2
    /* levels in -128..127 (nearest_int's wrap included), packed in order; each group's sum by
     * psadbw on the levels biased to unsigned */
    const __m256 vs = _mm256_set1_ps(iscale);
    for (int j = 0; j < 256; j += 32) {
        __m256i t[4];
        for (int c = 0; c < 4; ++c) /* the int8_t store keeps the low byte */
            t[c] = _mm256_min_epi32(fgg_q_nearest_int_avx2(_mm256_mul_ps(_mm256_loadu_ps(x + j + 8 * c), vs)),
                                    _mm256_set1_epi32(127));
        const __m256i b = fgg_q_pack_bytes_avx2(t[0], t[1], t[2], t[3]);
        _mm256_storeu_si256((__m256i *)(q + j), b);
        __m256i sad = _mm256_sad_epu8(_mm256_xor_si256(b, _mm256_set1_epi8((char)0x80)), _mm256_setzero_si256());
        for (int g = 0; g < 2; ++g) { /* 64-bit lanes 2g, 2g + 1 hold the two halves of group j/16 + g */
            int s = (int)(_mm256_extract_epi64(sad, 2 * g) + _mm256_extract_epi64(sad, 2 * g + 1)) - 16 * 128;
            blk[260 + 2 * (j / 16 + g)] = (uint8_t)s;
            blk[261 + 2 * (j / 16 + g)] = (uint8_t)((unsigned)s >> 8);
        }
    }
#elif FGG_IQ_SIMD
    for (int j = 0; j < 256; j += FGG_IQ_W) {
        fgg_iq_vf v;
        memcpy(&v, x + j, sizeof v);
        fgg_iq_vi l = fgg_q_round8(v * iscale);
        fgg_q_store_bytes((uint8_t *)q + j, fgg_q_isel(l > 127, l - l + 127, l));
    }
#else
    for (int j = 0; j < 256; ++j) {
        int v = fgg_iq_nearest_int(iscale * x[j]);
        q[j] = (int8_t)(v < 127 ? v : 127);
    }
#endif
#if !(FGG_IQ_SIMD && FGG_HAVE_AVX2)
    for (int j = 0; j < 16; ++j) {
        int s = 0;
        for (int i = 0; i < 16; ++i) s += q[16 * j + i];
        blk[260 + 2 * j] = (uint8_t)s;
        blk[261 + 2 * j] = (uint8_t)((unsigned)s >> 8);
    }
#endif
    const float d = 1.0f / iscale;
    memcpy(blk, &d, 4); /* little-endian hosts (the kernels' byte order) */
}

/* ------------------------------------------------------------------ entry points */

#define FGG__Q_K_ROWS(name, bsz, call)                                                                  \
    static void fgg_quantize_##name(const float *src, uint8_t *dst, int64_t n_rows, int64_t n_per_row, \
                                    const float *imatrix) {                                            \
        const int64_t nb = n_per_row / 256;                                                            \
        for (int64_t r = 0; r < n_rows; ++r) {                                                         \
            for (int64_t i = 0; i < nb; ++i) {                                                         \
                const float *x = src + r * n_per_row + 256 * i;                                        \
                uint8_t *blk = dst + (size_t)(r * nb + i) * (bsz);                                     \
                const float *qw = imatrix ? imatrix + 256 * i : NULL;                                  \
                (void)qw;                                                                              \
                call;                                                                                  \
            }                                                                                          \
        }                                                                                              \
    }

FGG__Q_K_ROWS(q2_k, 84, fgg__q2k_block(x, blk, qw))
FGG__Q_K_ROWS(q6_k, 210, fgg__q6k_block(x, blk, qw))
FGG__Q_K_ROWS(q8_k, 292, fgg__q8k_block(x, blk))

/* Q4_K / Q5_K: super-blocks in pairs within a row (see fgg__q45k_fit) */
static void fgg__q45k_rows(const float *src, uint8_t *dst, int64_t n_rows, int64_t n_per_row, const float *imatrix,
                           int nmax) {
    const size_t bsz = nmax == 15 ? 144 : 176;
    const int64_t nb = n_per_row / 256;
    uint8_t L[512];
    float scales[16], mins[16], sw[16];
    for (int64_t r = 0; r < n_rows; ++r) {
        for (int64_t i = 0; i < nb; i += 2) {
            const int count = nb - i >= 2 ? 2 : 1;
            const float *x = src + r * n_per_row + 256 * i;
            uint8_t *blk = dst + (size_t)(r * nb + i) * bsz;
            fgg__q45k_fit(x, imatrix ? imatrix + 256 * i : NULL, nmax, count, L, scales, mins, sw);
            for (int b = 0; b < count; ++b) {
                fgg__q45k_block(x + 256 * b, blk + bsz * (size_t)b, imatrix != NULL, nmax, L + 256 * b,
                                scales + 8 * b, mins + 8 * b, sw + 8 * b);
            }
        }
    }
}

static void fgg_quantize_q4_k(const float *src, uint8_t *dst, int64_t n_rows, int64_t n_per_row,
                              const float *imatrix) {
    fgg__q45k_rows(src, dst, n_rows, n_per_row, imatrix, 15);
}

static void fgg_quantize_q5_k(const float *src, uint8_t *dst, int64_t n_rows, int64_t n_per_row,
                              const float *imatrix) {
    fgg__q45k_rows(src, dst, n_rows, n_per_row, imatrix, 31);
}

#endif /* FGG_QUANT_KQUANT_H */
