/* IQ1_S and IQ1_M quantizers: the bytes ggml's quantize_iq1_s / quantize_iq1_m write (portable
 * build, no FMA contraction). IQ1_S needs an importance matrix (as in ggml); IQ1_M works with or
 * without one. The search tables are quant_iq2.h's (fgg_iq2_init must have succeeded).
 *
 *   void fgg_quantize_iq1_s(const float *src, uint8_t *dst, int64_t n_rows, int64_t n_per_row,
 *                           const float *imatrix)   n_per_row % 256 == 0, 50-byte blocks
 *                           (given NULL it writes zero blocks; callers reject that case before)
 *   void fgg_quantize_iq1_m(...)                    56-byte blocks
 *
 * The rules that decide the bits (learned from ggml-quants.c, written anew):
 *  - sigma2 = 2*sum(x^2)/256 per super-block (left to right); weights w = imatrix *
 *    sqrt(sigma2 + x^2), without imatrix (IQ1_M) w = x^2.
 *  - blocks of 32 (IQ1_S) / 16 (IQ1_M) values; a block whose largest |x| is below 1e-12 / 1e-7
 *    gets scale 0 and shift +1 (IQ1_S) / pattern 0 (IQ1_M) and no grid bytes.
 *  - the values are sorted ascending. ggml calls qsort with a comparator that compares only the
 *    values, so equal values (also -0.0 and +0.0) tie; glibc's qsort is a merge sort (stable)
 *    for arrays this small, so ties stay in their original order. That is the order used here
 *    (a stable insertion sort), as if sorting by (value, position).
 *  - every split of the sorted values into three runs (levels 0, 1, 2 for the values -1, 0, +1
 *    shifted by +-0.125: x_p = {-0.875, 0.125, 1.125}, x_m = {-1.125, -0.125, 0.875}) is tried,
 *    i1 = 0..n, i2 = i1..n. IQ1_S: running sums S_j = S_{j-1} + w*x, W_j = W_{j-1} + w in sorted
 *    order, sumqx = ((S_i1 - S_0)*v0 + (S_i2 - S_i1)*v1) + (S_n - S_i2)*v2, sumq2 likewise with
 *    W and v*v, x_p then x_m. IQ1_M: four patterns (x_p/x_m for each half of 8), each sum
 *    accumulated from zero over the sorted values in order, (w*v)*x and (w*v)*v. A split is
 *    taken when sumq2 > 0 and sumqx^2 > best*sumq2 (best starts at -FLT_MAX); scale =
 *    sumqx/sumq2, best = scale*sumqx.
 *  - a negative scale is negated with the levels mirrored (l -> 2 - l) and the shift/pattern
 *    mirrored. Groups of 8 off the grid become their list entry of smallest sum
 *    w*(scale*v_l - x)^2 (first on ties; the first entry when no distance is finite, where ggml
 *    reads past its arrays); then scale is refitted when sumqx > 0 and sumq2 > 0.
 *  - IQ1_S: d = max scale/15, stored fp16(d*1.125); block scale nearest_int(0.5*(scale/d - 1))
 *    (1/d first) clamped to 0..7, | 8 for shift -1, in qh bits 12..15.
 *  - IQ1_M: block scales as IQ1_S (3 bits each), then d is refitted over the whole super-block
 *    from the stored grid points, patterns and block scales (sums over all 16 blocks, skipped
 *    blocks included as grid point 0), stored fp16(d*1.1125) in the four top nibbles.
 *
 * Speed: IQ1_M's split search keeps the partial sums of the first run (shared by all i2) and of
 * the second run (extended one value at a time as i2 grows), so each split adds only its third
 * run: the same additions in the same order as summing every split from zero.
 */
#ifndef FGG_QUANT_IQ1_H
#define FGG_QUANT_IQ1_H

#include "quant_iq2.h"

static const float fgg__iq1_xp[3] = {-1 + 0.125f, 0.125f, 1 + 0.125f};
static const float fgg__iq1_xm[3] = {-1 - 0.125f, -0.125f, 1 - 0.125f};

/* Positions 0..n-1 ordered by x ascending, equal values in position order (a stable sort: what
 * glibc's merge-sort qsort gives). Each position's rank is counted directly: the values below
 * it, plus the equal ones before it (n*n comparisons in vectorizable loops). */
static inline void fgg__iq1_sort(const float *x, int n, int *order) {
#if FGG_IQ_SIMD
    /* n is 16 or 32, a multiple of the lane count: the ranks of all positions side by side,
     * counting over the positions i one at a time */
    fgg_iq_vi rank[32 / FGG_IQ_W], pos[32 / FGG_IQ_W];
    fgg_iq_vf xv[32 / FGG_IQ_W];
    const int nv = n / FGG_IQ_W;
    for (int v = 0; v < nv; ++v) {
        rank[v] = (fgg_iq_vi){0};
        xv[v] = fgg_iq_loadu(x + v * FGG_IQ_W);
        for (int l = 0; l < FGG_IQ_W; ++l) pos[v][l] = v * FGG_IQ_W + l;
    }
    for (int i = 0; i < n; ++i) {
        const fgg_iq_vf xi = fgg_iq_splat(x[i]);
        const fgg_iq_vi iv = (fgg_iq_vi){0} + i;
        for (int v = 0; v < nv; ++v) rank[v] -= (xi < xv[v]) | ((xi == xv[v]) & (iv < pos[v]));
    }
    for (int v = 0; v < nv; ++v) {
        for (int l = 0; l < FGG_IQ_W; ++l) order[rank[v][l]] = v * FGG_IQ_W + l;
    }
#else
    for (int j = 0; j < n; ++j) {
        const float xj = x[j];
        int r = 0;
        for (int i = 0; i < n; ++i) r += (x[i] < xj) | ((x[i] == xj) & (i < j));
        order[r] = j;
    }
#endif
}

/* The list entry of smallest sum w*(scale*v[l] - x)^2 (ggml's IQ1 neighbour search). */
static inline int fgg__iq1_neighbour(const fgg_iq2_table *t, const uint16_t *list, const float *x,
                                     const float *w, float scale, const float *v) {
    fgg__iq2_spread s;
    fgg__iq2_spread_group(&s, x, w);
    float v32[32];
    for (int i = 0; i < 32; ++i) v32[i] = v[(i & 3) == 3 ? 2 : (i & 3)];
    return fgg__iq2_search(t, list, &s, v32, scale);
}

/* Grid points of n/8 groups whose levels are L; off-grid groups get neighbours. Returns whether
 * all were on the grid. v_of(k) is the value table of group k. */
static inline int fgg__iq1_place(const fgg_iq2_table *t, const float *xb, const float *w, float scale,
                                 const uint8_t *L, int groups, const float *const *v, int *index) {
    int all = 1;
    for (int k = 0; k < groups; ++k) { /* start the loads of the lists searched below */
        int g = t->map[fgg__iq2_key(L + 8 * k)];
        if (g < 0) {
            const uint16_t *list = t->lists - g - 1;
            __builtin_prefetch(list);
            __builtin_prefetch(t->keys + (list - t->lists) + 1);
        }
    }
    for (int k = 0; k < groups; ++k) {
        int g = t->map[fgg__iq2_key(L + 8 * k)];
        if (g < 0) {
            all = 0;
            g = fgg__iq1_neighbour(t, t->lists - g - 1, xb + 8 * k, w + 8 * k, scale, v[k]);
        }
        index[k] = g;
    }
    return all;
}

static inline float fgg__iq1_absmax(const float *x, int n) {
    float m = fabsf(x[0]);
    for (int i = 1; i < n; ++i) {
        float a = fabsf(x[i]);
        m = m > a ? m : a;
    }
    return m;
}

/* IQ1_S's split search over the running sums sx/swt (48 entries, 33..47 copies of entry 32):
 * every split i1 <= i2 of the 32 sorted values, x_p before x_m, taken as ggml's loop takes them.
 * For each i1 the splits i2 = i1..32 are scored side by side; when none of them beats the best at
 * the start (so the best cannot have changed among them), they are skipped, otherwise taken one
 * by one in ggml's order from the first that beats it. */
static inline void fgg__iq1_s_splits(const float *sx, const float *swt, float *best_out, float *scale_out,
                                     int *b1_out, int *b2_out, int *shift_out) {
    const float *vp = fgg__iq1_xp, *vm = fgg__iq1_xm;
    float best = *best_out, scale = *scale_out;
    int b1 = *b1_out, b2 = *b2_out, shift = *shift_out;
#if FGG_IQ_SIMD
    /* the third run's terms depend on i2 only: (sx[32] - sx[i2]) * v2 and ((W - W_i2) * v2) * v2 */
    float cp[48], cm[48], wcp[48], wcm[48];
    for (int i2 = 0; i2 < 48; ++i2) {
        float c = sx[32] - sx[i2], wc = swt[32] - swt[i2];
        cp[i2] = c * vp[2];
        cm[i2] = c * vm[2];
        wcp[i2] = wc * vp[2] * vp[2];
        wcm[i2] = wc * vm[2] * vm[2];
    }
    const fgg_iq_vf zero = fgg_iq_splat(0.0f);
    const fgg_iq_vf p1 = fgg_iq_splat(vp[1]), m1 = fgg_iq_splat(vm[1]);
    for (int i1 = 0; i1 <= 32; ++i1) {
        const float a = sx[i1] - sx[0], wa = swt[i1] - swt[0];
        const fgg_iq_vf ap = fgg_iq_splat(a * vp[0]), am = fgg_iq_splat(a * vm[0]);
        const fgg_iq_vf wap = fgg_iq_splat(wa * vp[0] * vp[0]), wam = fgg_iq_splat(wa * vm[0] * vm[0]);
        const fgg_iq_vf s1 = fgg_iq_splat(sx[i1]), w1 = fgg_iq_splat(swt[i1]);
        const fgg_iq_vf bestv = fgg_iq_splat(best);
        float qxp[48], q2p[48], qxm[48], q2m[48];
        const int j0 = i1 - i1 % FGG_IQ_W;
        uint64_t hits = 0;
        for (int j = j0; j <= 32; j += FGG_IQ_W) {
            fgg_iq_vf b = fgg_iq_loadu(sx + j) - s1, wb = fgg_iq_loadu(swt + j) - w1;
            fgg_iq_vf xp = (ap + b * p1) + fgg_iq_loadu(cp + j);
            fgg_iq_vf x2p = (wap + wb * p1 * p1) + fgg_iq_loadu(wcp + j);
            fgg_iq_vf xm = (am + b * m1) + fgg_iq_loadu(cm + j);
            fgg_iq_vf x2m = (wam + wb * m1 * m1) + fgg_iq_loadu(wcm + j);
            fgg_iq_vi h = ((x2p > zero) & (xp * xp > bestv * x2p)) | ((x2m > zero) & (xm * xm > bestv * x2m));
            memcpy(qxp + j, &xp, sizeof xp);
            memcpy(q2p + j, &x2p, sizeof x2p);
            memcpy(qxm + j, &xm, sizeof xm);
            memcpy(q2m + j, &x2m, sizeof x2m);
            hits |= (uint64_t)fgg_iq_bits(h) << j;
        }
        const uint64_t valid = (((uint64_t)2 << 32) - 1) & ~(((uint64_t)1 << i1) - 1); /* i1..32 */
        hits &= valid;
        /* A split whose bit is clear does not beat thr (the best when the bits were made), so
         * it cannot beat any best >= thr either: for q2 > 0, thr*q2 <= best*q2 also after
         * rounding. Splits with a bit are taken as ggml's loop takes them, in order, x_p before
         * x_m. Should rounding ever make a new best smaller than thr, the later splits are
         * scored again against it. */
        float thr = best;
        while (hits) {
            const int j = __builtin_ctzll(hits);
            hits &= hits - 1;
            if (q2p[j] > 0 && qxp[j] * qxp[j] > best * q2p[j]) {
                scale = qxp[j] / q2p[j];
                best = scale * qxp[j];
                b1 = i1;
                b2 = j;
                shift = 1;
            }
            if (q2m[j] > 0 && qxm[j] * qxm[j] > best * q2m[j]) {
                scale = qxm[j] / q2m[j];
                best = scale * qxm[j];
                b1 = i1;
                b2 = j;
                shift = -1;
            }
            if (best < thr) {
                thr = best;
                hits = 0;
                for (int k = j + 1; k <= 32; ++k) {
                    int h = (q2p[k] > 0 && qxp[k] * qxp[k] > thr * q2p[k])
                          || (q2m[k] > 0 && qxm[k] * qxm[k] > thr * q2m[k]);
                    hits |= (uint64_t)h << k;
                }
            }
        }
    }
#else
    for (int i1 = 0; i1 <= 32; ++i1) {
        const float a = sx[i1] - sx[0], wa = swt[i1] - swt[0];
        float qxp[48], q2p[48], qxm[48], q2m[48];
        int32_t hit[48];
        const float best0 = best;
        for (int i2 = 0; i2 < 48; ++i2) { /* lanes outside i1..32 are computed and ignored */
            float b = sx[i2] - sx[i1], c = sx[32] - sx[i2];
            float wb = swt[i2] - swt[i1], wc = swt[32] - swt[i2];
            qxp[i2] = a * vp[0] + b * vp[1] + c * vp[2];
            q2p[i2] = wa * vp[0] * vp[0] + wb * vp[1] * vp[1] + wc * vp[2] * vp[2];
            qxm[i2] = a * vm[0] + b * vm[1] + c * vm[2];
            q2m[i2] = wa * vm[0] * vm[0] + wb * vm[1] * vm[1] + wc * vm[2] * vm[2];
            hit[i2] = (((q2p[i2] > 0) & (qxp[i2] * qxp[i2] > best0 * q2p[i2]))
                       | ((q2m[i2] > 0) & (qxm[i2] * qxm[i2] > best0 * q2m[i2])))
                    & (i2 >= i1) & (i2 <= 32);
        }
        int32_t any = 0;
        for (int i2 = 0; i2 < 48; ++i2) any |= hit[i2];
        if (!any) continue;
        const int m = 33 - i1;
        float *pqx = qxp + i1, *pq2 = q2p + i1, *mqx = qxm + i1, *mq2 = q2m + i1;
        for (int j = 0; j < m; ++j) {
            if (pq2[j] > 0 && pqx[j] * pqx[j] > best * pq2[j]) {
                scale = pqx[j] / pq2[j];
                best = scale * pqx[j];
                b1 = i1;
                b2 = i1 + j;
                shift = 1;
            }
            if (mq2[j] > 0 && mqx[j] * mqx[j] > best * mq2[j]) {
                scale = mqx[j] / mq2[j];
                best = scale * mqx[j];
                b1 = i1;
                b2 = i1 + j;
                shift = -1;
            }
        }
    }
#endif
    *best_out = best;
    *scale_out = scale;
    *b1_out = b1;
    *b2_out = b2;
    *shift_out = shift;
}

static void fgg__iq1_s_superblock(const float *x, uint8_t *blk, const float *qw) {
    const fgg_iq2_table *t = &fgg_iq2_tables[3];
    float sigma2 = 2 * fgg__iq2_sumsq(x) / 256;
    float scales[8];
    int shifts[8];
    float max_scale = 0.0f;
    uint8_t *qs = blk + 2, *qh = blk + 34;
    memset(blk, 0, 50);
    uint16_t h16[8] = {0};
    for (int ib = 0; ib < 8; ++ib) {
        const float *xb = x + 32 * ib;
        float w[32];
        for (int i = 0; i < 32; ++i) w[i] = qw[32 * ib + i] * sqrtf(sigma2 + xb[i] * xb[i]);
        scales[ib] = 0.0f;
        shifts[ib] = 1;
        if (fgg__iq1_absmax(xb, 32) < 1e-12f) continue;
        int order[32];
        fgg__iq1_sort(xb, 32, order);
        float sx[48], swt[48];
        sx[0] = swt[0] = 0.0f;
        for (int j = 0; j < 32; ++j) {
            int i = order[j];
            sx[j + 1] = sx[j] + w[i] * xb[i];
            swt[j + 1] = swt[j] + w[i];
        }
        for (int j = 33; j < 48; ++j) {
            sx[j] = sx[32];
            swt[j] = swt[32];
        }
        float best = -FLT_MAX, scale = 0.0f;
        int b1 = -1, b2 = -1, shift = 0;
        const float *vp = fgg__iq1_xp, *vm = fgg__iq1_xm;
        fgg__iq1_s_splits(sx, swt, &best, &scale, &b1, &b2, &shift);
        if (b1 < 0) continue;
        uint8_t L[32];
        for (int j = 0; j < 32; ++j) L[order[j]] = (uint8_t)(j < b1 ? 0 : j < b2 ? 1 : 2);
        if (scale < 0) {
            for (int j = 0; j < 32; ++j) L[j] = (uint8_t)(2 - L[j]);
            scale = -scale;
            shift = -shift;
        }
        const float *v = shift == 1 ? vp : vm;
        const float *vv[4] = {v, v, v, v};
        int index[4];
        if (!fgg__iq1_place(t, xb, w, scale, L, 4, vv, index)) {
            float sumqx = 0.0f, sumq2 = 0.0f;
            for (int k = 0; k < 4; ++k) {
                const uint8_t *lv = t->level[index[k]];
                for (int j = 0; j < 8; ++j) {
                    float wj = w[8 * k + j];
                    float q = v[lv[j]];
                    sumqx += wj * q * xb[8 * k + j];
                    sumq2 += wj * q * q;
                }
            }
            if (sumqx > 0 && sumq2 > 0) scale = sumqx / sumq2;
        }
        unsigned h = 0;
        for (int k = 0; k < 4; ++k) {
            qs[4 * ib + k] = (uint8_t)(index[k] & 255);
            h |= (unsigned)(index[k] >> 8) << (3 * k);
        }
        h16[ib] = (uint16_t)h;
        scales[ib] = scale;
        shifts[ib] = shift;
        max_scale = max_scale > scale ? max_scale : scale;
    }
    if (!max_scale) {
        /* grid bytes stay, as ggml leaves them */
        for (int ib = 0; ib < 8; ++ib) fgg_iq_store_u16le(qh + 2 * ib, h16[ib]);
        return;
    }
    float d = max_scale / 15;
    fgg_iq_store_u16le(blk, fgg_iq_fp16(d * 1.125f));
    float id = 1 / d;
    for (int ib = 0; ib < 8; ++ib) {
        int l = fgg_iq_nearest_int(0.5f * (id * scales[ib] - 1));
        l = l < 0 ? 0 : l > 7 ? 7 : l;
        if (shifts[ib] == -1) l |= 8;
        fgg_iq_store_u16le(qh + 2 * ib, (uint16_t)(h16[ib] | (l << 12)));
    }
}

static void fgg__iq1_m_superblock(const float *x, uint8_t *blk, const float *qw) {
    const fgg_iq2_table *t = &fgg_iq2_tables[3];
    const float *vp = fgg__iq1_xp, *vm = fgg__iq1_xm;
    float sigma2 = 2 * fgg__iq2_sumsq(x) / 256;
    float scales[16];
    int shifts[16];
    float max_scale = 0.0f;
    uint8_t *qs = blk, *qh = blk + 32, *scb = blk + 48;
    memset(blk, 0, 56);
    for (int ib = 0; ib < 16; ++ib) {
        const float *xb = x + 16 * ib;
        float w[16];
        if (qw) {
            for (int i = 0; i < 16; ++i) w[i] = qw[16 * ib + i] * sqrtf(sigma2 + xb[i] * xb[i]);
        } else {
            for (int i = 0; i < 16; ++i) w[i] = xb[i] * xb[i];
        }
        scales[ib] = 0.0f;
        shifts[ib] = 0;
        if (fgg__iq1_absmax(xb, 16) < 1e-7f) continue;
        int order[16];
        fgg__iq1_sort(xb, 16, order);
        /* per sorted value: its contributions for the four patterns, for each level */
        float cx[16][3][4], c2[16][3][4];
        for (int j = 0; j < 16; ++j) {
            int i = order[j];
            for (int l = 0; l < 3; ++l) {
                float wp = w[i] * vp[l], wm = w[i] * vm[l];
                float px = wp * xb[i], mx = wm * xb[i];
                float p2 = wp * vp[l], m2 = wm * vm[l];
                /* pattern k: first half uses x_p for k < 2, second half x_p for even k */
                int first = i < 8;
                cx[j][l][0] = px;
                c2[j][l][0] = p2;
                cx[j][l][1] = first ? px : mx;
                c2[j][l][1] = first ? p2 : m2;
                cx[j][l][2] = first ? mx : px;
                c2[j][l][2] = first ? m2 : p2;
                cx[j][l][3] = mx;
                c2[j][l][3] = m2;
            }
        }
        float best = -FLT_MAX, scale = 0.0f;
        int b1 = -1, b2 = -1, bk = -1;
        float ax[4] = {0, 0, 0, 0}, a2[4] = {0, 0, 0, 0};
        for (int i1 = 0; i1 <= 16; ++i1) {
            if (i1 > 0) {
                for (int k = 0; k < 4; ++k) {
                    ax[k] += cx[i1 - 1][0][k];
                    a2[k] += c2[i1 - 1][0][k];
                }
            }
            float bx[4], b2s[4];
            for (int k = 0; k < 4; ++k) {
                bx[k] = ax[k];
                b2s[k] = a2[k];
            }
            for (int i2 = i1; i2 <= 16; ++i2) {
                if (i2 > i1) {
                    for (int k = 0; k < 4; ++k) {
                        bx[k] += cx[i2 - 1][1][k];
                        b2s[k] += c2[i2 - 1][1][k];
                    }
                }
                float sx[4], s2[4];
                for (int k = 0; k < 4; ++k) {
                    sx[k] = bx[k];
                    s2[k] = b2s[k];
                }
                for (int j = i2; j < 16; ++j) {
                    for (int k = 0; k < 4; ++k) {
                        sx[k] += cx[j][2][k];
                        s2[k] += c2[j][2][k];
                    }
                }
                for (int k = 0; k < 4; ++k) {
                    if (s2[k] > 0 && sx[k] * sx[k] > best * s2[k]) {
                        scale = sx[k] / s2[k];
                        best = scale * sx[k];
                        b1 = i1;
                        b2 = i2;
                        bk = k;
                    }
                }
            }
        }
        if (bk < 0) continue;
        uint8_t L[16];
        for (int j = 0; j < 16; ++j) L[order[j]] = (uint8_t)(j < b1 ? 0 : j < b2 ? 1 : 2);
        if (scale < 0) {
            for (int j = 0; j < 16; ++j) L[j] = (uint8_t)(2 - L[j]);
            scale = -scale;
            bk = 3 - bk;
        }
        const float *vv[2] = {bk < 2 ? vp : vm, bk % 2 == 0 ? vp : vm};
        int index[2];
        if (!fgg__iq1_place(t, xb, w, scale, L, 2, vv, index)) {
            float sumqx = 0.0f, sumq2 = 0.0f;
            for (int k = 0; k < 2; ++k) {
                const uint8_t *lv = t->level[index[k]];
                for (int j = 0; j < 8; ++j) {
                    float wj = w[8 * k + j];
                    float q = vv[k][lv[j]];
                    sumqx += wj * q * xb[8 * k + j];
                    sumq2 += wj * q * q;
                }
            }
            if (sumqx > 0 && sumq2 > 0) scale = sumqx / sumq2;
        }
        qs[2 * ib] = (uint8_t)(index[0] & 255);
        qs[2 * ib + 1] = (uint8_t)(index[1] & 255);
        qh[ib] = (uint8_t)((index[0] >> 8) | ((index[1] >> 8) << 4));
        scales[ib] = scale;
        shifts[ib] = bk;
        max_scale = max_scale > scale ? max_scale : scale;
    }
    if (!max_scale) return;
    static const uint8_t masks[4] = {0x00, 0x80, 0x08, 0x88};
    uint16_t sc[4] = {0, 0, 0, 0};
    float d = max_scale / 15;
    float id = 1 / d;
    float sumqx = 0.0f, sumq2 = 0.0f;
    for (int ib = 0; ib < 16; ++ib) {
        int l = fgg_iq_nearest_int(0.5f * (id * scales[ib] - 1));
        l = l < 0 ? 0 : l > 7 ? 7 : l;
        sc[ib / 4] |= (uint16_t)(l << (3 * (ib % 4)));
        qh[ib] |= masks[shifts[ib]];
        const float *xb = x + 16 * ib;
        float w[16];
        if (qw) {
            for (int i = 0; i < 16; ++i) w[i] = qw[16 * ib + i] * sqrtf(sigma2 + xb[i] * xb[i]);
        } else {
            for (int i = 0; i < 16; ++i) w[i] = xb[i] * xb[i];
        }
        const float m = (float)(2 * l + 1);
        for (int k = 0; k < 2; ++k) {
            const float *v = k == 0 ? (shifts[ib] < 2 ? vp : vm) : (shifts[ib] % 2 == 0 ? vp : vm);
            int g = qs[2 * ib + k] | (((qh[ib] >> (4 * k)) & 7) << 8);
            const uint8_t *lv = t->level[g];
            for (int j = 0; j < 8; ++j) {
                float wj = w[8 * k + j];
                float q = v[lv[j]] * m;
                sumqx += wj * q * xb[8 * k + j];
                sumq2 += wj * q * q;
            }
        }
    }
    if (sumq2 > 0) d = sumqx / sumq2;
    uint16_t s = fgg_iq_fp16(d * 1.1125f);
    sc[0] |= (uint16_t)((s & 0x000f) << 12);
    sc[1] |= (uint16_t)((s & 0x00f0) << 8);
    sc[2] |= (uint16_t)((s & 0x0f00) << 4);
    sc[3] |= (uint16_t)(s & 0xf000);
    for (int i = 0; i < 4; ++i) fgg_iq_store_u16le(scb + 2 * i, sc[i]);
}

static void fgg_quantize_iq1_s(const float *src, uint8_t *dst, int64_t n_rows, int64_t n_per_row,
                               const float *imatrix) {
    int64_t nb = n_per_row / 256;
    for (int64_t r = 0; r < n_rows; ++r) {
        for (int64_t b = 0; b < nb; ++b) {
            uint8_t *blk = dst + (r * nb + b) * 50;
            if (!imatrix) {
                memset(blk, 0, 50);
                continue;
            }
            fgg__iq1_s_superblock(src + r * n_per_row + 256 * b, blk, imatrix + 256 * b);
        }
    }
}

static void fgg_quantize_iq1_m(const float *src, uint8_t *dst, int64_t n_rows, int64_t n_per_row,
                               const float *imatrix) {
    int64_t nb = n_per_row / 256;
    for (int64_t r = 0; r < n_rows; ++r) {
        for (int64_t b = 0; b < nb; ++b) {
            fgg__iq1_m_superblock(src + r * n_per_row + 256 * b, dst + (r * nb + b) * 56,
                                  imatrix ? imatrix + 256 * b : NULL);
        }
    }
}

#endif /* FGG_QUANT_IQ1_H */
