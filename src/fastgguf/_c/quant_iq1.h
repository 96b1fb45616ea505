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
 *    W and v*v, x_p then x_m. IQ1_M (ggml after d99724f2, checked against llama.cpp 0c1e57098):
 *    running sums S_h, W_h per half h of the block (the values of positions 0..7 / 8..15 in
 *    sorted order, the other half's sums carried along), T_h/W_h their totals; for pattern
 *    k (0 = x_p x_p, 1 = x_p x_m, 2 = x_m x_p, 3 = x_m x_m, by half) sumqx = sum over h of
 *    T_h*v2 - (S_h[i1] + S_h[i2]), sumq2 = sum over h of ((W_h*v2)*v2 + W_h[i1]*(v0^2 - v1^2))
 *    + W_h[i2]*(v1^2 - v2^2), the two halves added first half first. A split is
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
 * Speed: IQ1_M scores all splits of one i1 first (independent float sums the compiler can
 * vectorize), then takes the best in ggml's order. IQ1_S scores the
 * splits of each i1 side by side in chunks starting at i1, tested against the best at the
 * chunk's start; a chunk with several splits that beat it is resolved at once by a running
 * maximum whose every step is checked exactly (fgg__iq1_scan), else walked in ggml's order.
 * Both take each super-block's sum of squares 32 values at a time during the previous one.
 */
#ifndef FGG_QUANT_IQ1_H
#define FGG_QUANT_IQ1_H

#include "quant_iq2.h"

static const float fgg__iq1_xp[3] = {-1 + 0.125f, 0.125f, 1 + 0.125f};
static const float fgg__iq1_xm[3] = {-1 - 0.125f, -0.125f, 1 - 0.125f};

/* Positions 0..n-1 ordered by x ascending, equal values in position order (a stable sort: what
 * glibc's merge-sort qsort gives). Each position's rank is counted directly: the values below
 * it, plus the equal ones before it (n*n comparisons in vectorizable loops). rank[i] = the place
 * of position i. */
static inline void fgg__iq1_sort(const float *x, int n, int *order, int *rank_out) {
#if FGG_IQ_SIMD
    /* n is 16 or 32, a multiple of the lane count: the ranks of all positions side by side,
     * counting over the positions i one at a time; a position i before (after) all lanes of a
     * vector counts where x_i <= x_j (x_i < x_j), only the vector's own positions need both */
    fgg_iq_vi rank[32 / FGG_IQ_W], pos[32 / FGG_IQ_W];
    fgg_iq_vf xv[32 / FGG_IQ_W];
    const int nv = n / FGG_IQ_W;
    for (int v = 0; v < nv; ++v) {
        rank[v] = (fgg_iq_vi){0};
        xv[v] = fgg_iq_loadu(x + v * FGG_IQ_W);
        for (int l = 0; l < FGG_IQ_W; ++l) pos[v][l] = v * FGG_IQ_W + l;
    }
    for (int v = 0; v < nv; ++v) {
        const int lo = v * FGG_IQ_W, hi = lo + FGG_IQ_W;
        fgg_iq_vi r = rank[v];
        for (int i = 0; i < lo; ++i) r -= fgg_iq_splat(x[i]) <= xv[v];
        for (int i = lo; i < hi; ++i) {
            const fgg_iq_vf xi = fgg_iq_splat(x[i]);
            r -= (xi < xv[v]) | ((xi == xv[v]) & (((fgg_iq_vi){0} + i) < pos[v]));
        }
        for (int i = hi; i < n; ++i) r -= fgg_iq_splat(x[i]) < xv[v];
        rank[v] = r;
        memcpy(rank_out + lo, &r, sizeof r);
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
        rank_out[j] = r;
    }
#endif
}

/* The shifted values spread for the term tables (entry 4i+l: level l's value, l = 3 unused) */
static const float fgg__iq1_xp32[32] = {-0.875f, 0.125f, 1.125f, 1.125f, -0.875f, 0.125f, 1.125f, 1.125f,
                                        -0.875f, 0.125f, 1.125f, 1.125f, -0.875f, 0.125f, 1.125f, 1.125f,
                                        -0.875f, 0.125f, 1.125f, 1.125f, -0.875f, 0.125f, 1.125f, 1.125f,
                                        -0.875f, 0.125f, 1.125f, 1.125f, -0.875f, 0.125f, 1.125f, 1.125f};
static const float fgg__iq1_xm32[32] = {-1.125f, -0.125f, 0.875f, 0.875f, -1.125f, -0.125f, 0.875f, 0.875f,
                                        -1.125f, -0.125f, 0.875f, 0.875f, -1.125f, -0.125f, 0.875f, 0.875f,
                                        -1.125f, -0.125f, 0.875f, 0.875f, -1.125f, -0.125f, 0.875f, 0.875f,
                                        -1.125f, -0.125f, 0.875f, 0.875f, -1.125f, -0.125f, 0.875f, 0.875f};

/* The list entry of smallest sum w*(scale*v[l] - x)^2 (ggml's IQ1 neighbour search); v is
 * fgg__iq1_xp or fgg__iq1_xm. */
static inline int fgg__iq1_neighbour(const fgg_iq2_table *t, const uint16_t *list, const float *x,
                                     const float *w, float scale, const float *v) {
    fgg__iq2_spread s;
    fgg__iq2_spread_group(&s, x, w);
    return fgg__iq2_search(t, list, &s, v == fgg__iq1_xp ? fgg__iq1_xp32 : fgg__iq1_xm32, scale);
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

/* Whether ggml's running maximum of |x| (m = m > a ? m : a) ends below eps: without NaN that
 * is every |x| < eps (checked side by side), with one the scalar loop decides. */
static inline int fgg__iq1_small(const float *x, int n, float eps) {
#if FGG_IQ_SIMD
    fgg_iq_vi nan = {0}, big = {0};
    const fgg_iq_vf e = fgg_iq_splat(eps);
    for (int i = 0; i < n; i += FGG_IQ_W) {
        const fgg_iq_vf v = fgg_iq_loadu(x + i);
        nan |= v != v;
        big |= ~(v < e) | ~(-v < e); /* |v| >= eps */
    }
    if (!fgg_iq_bits(nan)) return !fgg_iq_bits(big);
#endif
    return fgg__iq1_absmax(x, n) < eps;
}

/* The best split so far of IQ1_S's search (ggml's best_score, scale, besti1, besti2, best_shift). */
typedef struct {
    float best, scale;
    int b1, b2, shift;
} fgg__iq1_pick;

/* ggml's test and update for one split (i1, i2) with one shift. */
static inline void fgg__iq1_try(fgg__iq1_pick *p, float qx, float q2, int i1, int i2, int shift) {
    if (q2 > 0 && qx * qx > p->best * q2) {
        p->scale = qx / q2;
        p->best = p->scale * qx;
        p->b1 = i1;
        p->b2 = i2;
        p->shift = shift;
    }
}

#if FGG_IQ_SIMD
#if (FGG_IQ_W == 16 && defined(__AVX512F__)) || (FGG_IQ_W == 8 && defined(__AVX2__))
#define FGG_IQ1_SCAN 1
/* Inclusive running maximum over the lanes: lane l = max of lanes 0..l (NaN lanes give any
 * value; the scan below rejects them). Each step takes lane l - k, or lane 0 below k (already in). */
FGG_IQ_INLINE fgg_iq_vf fgg__iq1_runmax(fgg_iq_vf x) {
#if FGG_IQ_W == 16
    __m512 v = (__m512)x;
    const __m512i i1 = _mm512_setr_epi32(0, 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14);
    const __m512i i2 = _mm512_setr_epi32(0, 0, 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13);
    const __m512i i4 = _mm512_setr_epi32(0, 0, 0, 0, 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11);
    const __m512i i8 = _mm512_setr_epi32(0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 2, 3, 4, 5, 6, 7);
    v = _mm512_max_ps(v, _mm512_permutexvar_ps(i1, v));
    v = _mm512_max_ps(v, _mm512_permutexvar_ps(i2, v));
    v = _mm512_max_ps(v, _mm512_permutexvar_ps(i4, v));
    v = _mm512_max_ps(v, _mm512_permutexvar_ps(i8, v));
    return (fgg_iq_vf)v;
#else
    __m256 v = (__m256)x;
    v = _mm256_max_ps(v, _mm256_permutevar8x32_ps(v, _mm256_setr_epi32(0, 0, 1, 2, 3, 4, 5, 6)));
    v = _mm256_max_ps(v, _mm256_permutevar8x32_ps(v, _mm256_setr_epi32(0, 0, 0, 1, 2, 3, 4, 5)));
    v = _mm256_max_ps(v, _mm256_permutevar8x32_ps(v, _mm256_setr_epi32(0, 0, 0, 0, 0, 1, 2, 3)));
    return (fgg_iq_vf)v;
#endif
}

/* Lane l gets lane l - 1 of x, lane 0 gets b. */
FGG_IQ_INLINE fgg_iq_vf fgg__iq1_up1(fgg_iq_vf x, fgg_iq_vf b) {
#if FGG_IQ_W == 16
    return (fgg_iq_vf)_mm512_alignr_epi32((__m512i)x, (__m512i)b, 15);
#else
    __m256 r = _mm256_permutevar8x32_ps((__m256)x, _mm256_setr_epi32(0, 0, 1, 2, 3, 4, 5, 6));
    return (fgg_iq_vf)_mm256_blend_ps(r, (__m256)b, 1);
#endif
}

/* max(a, b) (either one where a lane holds NaN) */
FGG_IQ_INLINE fgg_iq_vf fgg__iq1_max(fgg_iq_vf a, fgg_iq_vf b) {
#if FGG_IQ_W == 16
    return (fgg_iq_vf)_mm512_max_ps((__m512)a, (__m512)b);
#else
    return (fgg_iq_vf)_mm256_max_ps((__m256)a, (__m256)b);
#endif
}

/* A whole chunk of splits at once, lanes = splits (i1, j0 + l), valid lanes set in `valid`.
 * ggml's walk takes split e (x_p of lane 0, x_m of lane 0, x_p of lane 1, ...) when it beats the
 * best B left by the splits before it, and then B = its score s. Guess B before each split as
 * the running maximum of best and the scores s of the splits before it (-inf where q2 <= 0),
 * decide every split against its guess, and check the guess: a split taken must score >= its
 * guess, one not taken <= it. Then max(guess, s) is exactly what the walk leaves after it, and
 * by induction every guess is the walk's B (NaN scores fail the check). Returns 0 when the
 * check fails (the caller walks the chunk instead). */
static inline int fgg__iq1_scan(fgg__iq1_pick *p, fgg_iq_vf xp, fgg_iq_vf x2p, fgg_iq_vf xm, fgg_iq_vf x2m,
                                fgg_iq_vi valid, int i1, int j0) {
    const fgg_iq_vf zero = fgg_iq_splat(0.0f), ninf = fgg_iq_splat(-INFINITY);
    const fgg_iq_vf scp = xp / x2p, scm = xm / x2m; /* the scale and score ggml would take */
    const fgg_iq_vf sp = scp * xp, sm = scm * xm;
    const fgg_iq_vi okp = valid & (x2p > zero), okm = valid & (x2m > zero);
    const fgg_iq_vf vp = fgg_iq_select(okp, sp, ninf), vm = fgg_iq_select(okm, sm, ninf);
    /* gp: the guess before lane l's x_p (best and both scores of lanes < l); gm: before x_m */
    const fgg_iq_vf bestv = fgg_iq_splat(p->best);
    const fgg_iq_vf gp = fgg__iq1_max(fgg__iq1_up1(fgg__iq1_runmax(fgg__iq1_max(vp, vm)), bestv), bestv);
    const fgg_iq_vf gm = fgg__iq1_max(gp, vp);
    const fgg_iq_vi tp = okp & (xp * xp > gp * x2p), tm = okm & (xm * xm > gm * x2m);
    const fgg_iq_vi bad = (tp & ~(vp >= gp)) | (~tp & ~(vp <= gp)) | (tm & ~(vm >= gm)) | (~tm & ~(vm <= gm));
    if (fgg_iq_bits(bad)) return 0;
    const unsigned taken = fgg_iq_bits(tp | tm);
    if (taken) { /* the last split taken decides */
        const int l = 31 - __builtin_clz(taken);
        const int m = tm[l] != 0;
        p->scale = m ? scm[l] : scp[l];
        p->best = m ? sm[l] : sp[l];
        p->b1 = i1;
        p->b2 = j0 + l;
        p->shift = m ? -1 : 1;
    }
    return 1;
}
#else
#define FGG_IQ1_SCAN 0
#endif

/* Bit l set where lane l of a is > b (a mask compare where the ISA has one). */
FGG_IQ_INLINE unsigned fgg__iq1_gt(fgg_iq_vf a, fgg_iq_vf b) {
#if FGG_IQ_W == 16 && defined(__AVX512F__)
    return (unsigned)_mm512_cmp_ps_mask((__m512)a, (__m512)b, _CMP_GT_OQ);
#elif FGG_IQ_W == 8 && defined(__AVX__)
    return (unsigned)_mm256_movemask_ps(_mm256_cmp_ps((__m256)a, (__m256)b, _CMP_GT_OQ));
#else
    return fgg_iq_bits(a > b);
#endif
}

/* ggml's walk over the splits of a chunk whose bits are set in hits (lanes 0..n-1 = splits
 * (i1, j0 + l), in order, x_p before x_m). The bits are the splits that beat thr = the best at
 * the start; a split without one cannot beat any best >= thr (for q2 > 0, thr*q2 <= best*q2 also
 * after rounding). Should rounding make a new best smaller than thr, the rest are scored again. */
static inline void fgg__iq1_walk(fgg__iq1_pick *p, const float *qxp, const float *q2p, const float *qxm,
                                 const float *q2m, unsigned hits, int n, int i1, int j0) {
    float thr = p->best;
    while (hits) {
        const int l = __builtin_ctz(hits);
        hits &= hits - 1;
        fgg__iq1_try(p, qxp[l], q2p[l], i1, j0 + l, 1);
        fgg__iq1_try(p, qxm[l], q2m[l], i1, j0 + l, -1);
        if (p->best < thr) {
            thr = p->best;
            hits = 0;
            for (int k = l + 1; k < n; ++k) {
                int h = (q2p[k] > 0 && qxp[k] * qxp[k] > thr * q2p[k])
                      || (q2m[k] > 0 && qxm[k] * qxm[k] > thr * q2m[k]);
                hits |= (unsigned)h << k;
            }
        }
    }
}
#endif

/* IQ1_S's split search over the running sums sx/swt (48 entries, 33..47 copies of entry 32):
 * every split i1 <= i2 of the 32 sorted values, x_p before x_m, taken as ggml's loop takes them.
 * For each i1 the splits i2 = i1..32 are scored side by side in chunks of FGG_IQ_W; a chunk none
 * of whose splits beats the best at its start (so the best cannot change in it) is skipped, the
 * others are resolved at once (fgg__iq1_scan) or walked in ggml's order. positive (a constant
 * after inlining): every sumq2 is known to be > 0, so that test is left out. */
#if defined(__GNUC__) || defined(__clang__)
#define FGG_IQ1_ALWAYS_INLINE static inline __attribute__((always_inline))
#else
#define FGG_IQ1_ALWAYS_INLINE static inline
#endif
FGG_IQ1_ALWAYS_INLINE void fgg__iq1_s_splits(const float *sx, const float *swt, fgg__iq1_pick *p, int positive) {
    const float *vp = fgg__iq1_xp, *vm = fgg__iq1_xm;
#if FGG_IQ_SIMD
    /* the third run's terms depend on i2 only: (sx[32] - sx[i2]) * v2 and ((W - W_i2) * v2) * v2 */
    float tail[4][48]; /* x_p, x_m; then the same for sumq2 */
    for (int i2 = 0; i2 < 48; ++i2) {
        float c = sx[32] - sx[i2], wc = swt[32] - swt[i2];
        tail[0][i2] = c * vp[2];
        tail[1][i2] = c * vm[2];
        tail[2][i2] = wc * vp[2] * vp[2];
        tail[3][i2] = wc * vm[2] * vm[2];
    }
    const fgg_iq_vf zero = fgg_iq_splat(0.0f), p1 = fgg_iq_splat(vp[1]);
#if FGG_IQ1_SCAN
    fgg_iq_vi lane;
    for (int l = 0; l < FGG_IQ_W; ++l) lane[l] = l;
#endif
    for (int i1 = 0; i1 <= 32; ++i1) {
        const float a = sx[i1] - sx[0], wa = swt[i1] - swt[0];
        const fgg_iq_vf ap = fgg_iq_splat(a * vp[0]), am = fgg_iq_splat(a * vm[0]);
        const fgg_iq_vf wap = fgg_iq_splat(wa * vp[0] * vp[0]), wam = fgg_iq_splat(wa * vm[0] * vm[0]);
        const fgg_iq_vf s1 = fgg_iq_splat(sx[i1]), w1 = fgg_iq_splat(swt[i1]);
        for (int j0 = i1; j0 <= 32; j0 += FGG_IQ_W) {
            /* vm[1] = -vp[1]: b*vm[1] = -(b*vp[1]) and (wb*vm[1])*vm[1] = (wb*vp[1])*vp[1] exactly */
            const fgg_iq_vf b = fgg_iq_loadu(sx + j0) - s1, wb = fgg_iq_loadu(swt + j0) - w1;
            const fgg_iq_vf bp = b * p1, wbb = wb * p1 * p1;
            const fgg_iq_vf xp = (ap + bp) + fgg_iq_loadu(tail[0] + j0), xm = (am - bp) + fgg_iq_loadu(tail[1] + j0);
            const fgg_iq_vf x2p = (wap + wbb) + fgg_iq_loadu(tail[2] + j0), x2m = (wam + wbb) + fgg_iq_loadu(tail[3] + j0);
            const fgg_iq_vf bestv = fgg_iq_splat(p->best);
            const int n = 33 - j0 < FGG_IQ_W ? 33 - j0 : FGG_IQ_W; /* lanes up to i2 = 32 */
            unsigned hits = fgg__iq1_gt(xp * xp, bestv * x2p), hm = fgg__iq1_gt(xm * xm, bestv * x2m);
            if (!positive) { /* positive: every sumq2 > 0 (see the caller) */
                hits &= fgg__iq1_gt(x2p, zero);
                hm &= fgg__iq1_gt(x2m, zero);
            }
            hits = (hits | hm) & ((2u << (n - 1)) - 1);
            if (!hits) continue;
#if FGG_IQ1_SCAN
            /* one split: the walk; several: the scan (not from a NaN best, which nothing beats) */
            if ((hits & (hits - 1)) && p->best == p->best && fgg__iq1_scan(p, xp, x2p, xm, x2m, lane < n, i1, j0))
                continue;
#endif
            float qxp[FGG_IQ_W], q2p[FGG_IQ_W], qxm[FGG_IQ_W], q2m[FGG_IQ_W];
            memcpy(qxp, &xp, sizeof xp);
            memcpy(q2p, &x2p, sizeof x2p);
            memcpy(qxm, &xm, sizeof xm);
            memcpy(q2m, &x2m, sizeof x2m);
            fgg__iq1_walk(p, qxp, q2p, qxm, q2m, hits, n, i1, j0);
        }
    }
#else
    (void)positive;
    for (int i1 = 0; i1 <= 32; ++i1) {
        const float a = sx[i1] - sx[0], wa = swt[i1] - swt[0];
        for (int i2 = i1; i2 <= 32; ++i2) {
            float b = sx[i2] - sx[i1], c = sx[32] - sx[i2];
            float wb = swt[i2] - swt[i1], wc = swt[32] - swt[i2];
            fgg__iq1_try(p, a * vp[0] + b * vp[1] + c * vp[2],
                         wa * vp[0] * vp[0] + wb * vp[1] * vp[1] + wc * vp[2] * vp[2], i1, i2, 1);
            fgg__iq1_try(p, a * vm[0] + b * vm[1] + c * vm[2],
                         wa * vm[0] * vm[0] + wb * vm[1] * vm[1] + wc * vm[2] * vm[2], i1, i2, -1);
        }
    }
#endif
}

/* The super-blocks' sums of squares (left to right, ggml's order) are taken 32 values at a time
 * while the previous super-block is quantized (sumsq is this one's, xn the next one or NULL,
 * *sumsq_next gets its sum): the chain of 256 dependent additions then overlaps other work
 * instead of stalling the start of each super-block. */
static inline float fgg__iq1_sumsq32(float s, const float *x) {
    for (int i = 0; i < 32; ++i) s += x[i] * x[i];
    return s;
}

static void fgg__iq1_s_superblock(const float *x, uint8_t *blk, const float *qw, float sumsq, const float *xn,
                                  float *sumsq_next) {
    const fgg_iq2_table *t = &fgg_iq2_tables[3];
    float sigma2 = 2 * sumsq / 256, sn = 0.0f;
    float scales[8];
    int shifts[8];
    float max_scale = 0.0f;
    uint8_t *qs = blk + 2, *qh = blk + 34;
    memset(blk, 0, 50);
    uint16_t h16[8] = {0};
    for (int ib = 0; ib < 8; ++ib) {
        if (xn) sn = fgg__iq1_sumsq32(sn, xn + 32 * ib);
        const float *xb = x + 32 * ib;
        float w[32];
        for (int i = 0; i < 32; ++i) w[i] = qw[32 * ib + i] * sqrtf(sigma2 + xb[i] * xb[i]);
        scales[ib] = 0.0f;
        shifts[ib] = 1;
        if (fgg__iq1_small(xb, 32, 1e-12f)) continue;
        int order[32], rank[32];
        fgg__iq1_sort(xb, 32, order, rank);
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
        fgg__iq1_pick pick = {-FLT_MAX, 0.0f, -1, -1, 0};
        /* With weights >= 0 the running sums grow, the three runs' weight sums are >= 0 and one
         * of them is >= W/3: every sumq2 is > 0 when W > 1e-30 (far above underflow). */
        int positive = swt[32] > 1e-30f;
        for (int i = 0; i < 32; ++i) positive &= w[i] >= 0;
        if (positive)
            fgg__iq1_s_splits(sx, swt, &pick, 1);
        else
            fgg__iq1_s_splits(sx, swt, &pick, 0);
        if (pick.b1 < 0) continue;
        const float *vp = fgg__iq1_xp, *vm = fgg__iq1_xm;
        const int b1 = pick.b1, b2 = pick.b2;
        float scale = pick.scale;
        int shift = pick.shift;
        uint8_t L[32];
        for (int i = 0; i < 32; ++i) L[i] = (uint8_t)((rank[i] >= b1) + (rank[i] >= b2)); /* b1 <= b2 */
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
    *sumsq_next = sn;
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

/* IQ1_M's split search (ggml's current quantize_row_iq1_m_impl): for the split (i1, i2) of the
 * sorted values and half h, with T_h / W_h the half's totals, the sums are
 *   sumqx_h = T_h*v2 - (S_h[i1] + S_h[i2]),   sumq2_h = ((W_h*v2)*v2 + W_h[i1]*c1) + W_h[i2]*c2
 * (v = x_p or x_m, c1 = v0^2 - v1^2, c2 = v1^2 - v2^2), pattern k adds its two halves:
 * 0 = p+p, 1 = p+m, 2 = m+p, 3 = m+m. Each split's sums are independent of the others', so
 * they are computed for a whole row of i2 first; the best is then taken in ggml's order. */
static inline void fgg__iq1_m_splits(const float px[2][17], const float pw[2][17], float *best_out,
                                     float *scale_out, int *b1_out, int *b2_out, int *bk_out) {
    const float *vp = fgg__iq1_xp, *vm = fgg__iq1_xm;
    const float p2 = vp[2], m2 = vm[2];
    const float cp1 = vp[0] * vp[0] - vp[1] * vp[1], cp2 = vp[1] * vp[1] - vp[2] * vp[2];
    const float cm1 = vm[0] * vm[0] - vm[1] * vm[1], cm2 = vm[1] * vm[1] - vm[2] * vm[2];
    float txp[2], txm[2], twp[2], twm[2];
    for (int h = 0; h < 2; ++h) {
        txp[h] = px[h][16] * p2;
        txm[h] = px[h][16] * m2;
        twp[h] = pw[h][16] * p2 * p2;
        twm[h] = pw[h][16] * m2 * m2;
    }
    float best = *best_out, scale = *scale_out;
    int b1 = *b1_out, b2 = *b2_out, bk = *bk_out;
    for (int i1 = 0; i1 <= 16; ++i1) {
        float qx[4][17], q2[4][17];
        const float a0 = px[0][i1], a1 = px[1][i1];
        const float ap0 = twp[0] + pw[0][i1] * cp1, ap1 = twp[1] + pw[1][i1] * cp1;
        const float am0 = twm[0] + pw[0][i1] * cm1, am1 = twm[1] + pw[1][i1] * cm1;
        for (int i2 = i1; i2 <= 16; ++i2) {
            const float s0 = a0 + px[0][i2], s1 = a1 + px[1][i2];
            const float xp0 = txp[0] - s0, xp1 = txp[1] - s1, xm0 = txm[0] - s0, xm1 = txm[1] - s1;
            const float wp0 = ap0 + pw[0][i2] * cp2, wp1 = ap1 + pw[1][i2] * cp2;
            const float wm0 = am0 + pw[0][i2] * cm2, wm1 = am1 + pw[1][i2] * cm2;
            qx[0][i2] = xp0 + xp1;
            qx[1][i2] = xp0 + xm1;
            qx[2][i2] = xm0 + xp1;
            qx[3][i2] = xm0 + xm1;
            q2[0][i2] = wp0 + wp1;
            q2[1][i2] = wp0 + wm1;
            q2[2][i2] = wm0 + wp1;
            q2[3][i2] = wm0 + wm1;
        }
        /* a row of splits none of which beats the best at its start leaves the best as it is
         * (tested side by side); any other row is walked with ggml's test in ggml's order */
        const float thr = best;
        int any = 0;
        for (int k = 0; k < 4; ++k)
            for (int i2 = i1; i2 <= 16; ++i2) any |= (q2[k][i2] > 0) & (qx[k][i2] * qx[k][i2] > thr * q2[k][i2]);
        if (!any) continue;
        for (int i2 = i1; i2 <= 16; ++i2) {
            for (int k = 0; k < 4; ++k) {
                const float sx = qx[k][i2], s2 = q2[k][i2];
                if (s2 > 0 && sx * sx > best * s2) {
                    scale = sx / s2;
                    best = scale * sx;
                    b1 = i1;
                    b2 = i2;
                    bk = k;
                }
            }
        }
    }
    *best_out = best;
    *scale_out = scale;
    *b1_out = b1;
    *b2_out = b2;
    *bk_out = bk;
}

/* (sumsq, xn, sumsq_next as for IQ1_S; only used with an importance matrix) */
static void fgg__iq1_m_superblock(const float *x, uint8_t *blk, const float *qw, float sumsq, const float *xn,
                                  float *sumsq_next) {
    const fgg_iq2_table *t = &fgg_iq2_tables[3];
    const float *vp = fgg__iq1_xp, *vm = fgg__iq1_xm;
    float sigma2 = 2 * sumsq / 256, sn = 0.0f;
    float scales[16];
    int shifts[16];
    float max_scale = 0.0f;
    uint8_t *qs = blk, *qh = blk + 32, *scb = blk + 48;
    memset(blk, 0, 56);
    for (int ib = 0; ib < 16; ++ib) {
        if (xn && !(ib & 1)) sn = fgg__iq1_sumsq32(sn, xn + 16 * ib);
        const float *xb = x + 16 * ib;
        float w[16];
        if (qw) {
            for (int i = 0; i < 16; ++i) w[i] = qw[16 * ib + i] * sqrtf(sigma2 + xb[i] * xb[i]);
        } else {
            for (int i = 0; i < 16; ++i) w[i] = xb[i] * xb[i];
        }
        scales[ib] = 0.0f;
        shifts[ib] = 0;
        if (fgg__iq1_small(xb, 16, 1e-7f)) continue;
        int order[16], rank[16];
        fgg__iq1_sort(xb, 16, order, rank);
        /* prefix sums over the sorted values, one pair per half of the block (each half has its
         * own shift); pattern k's sums for a split then come from the ends of its runs */
        float px[2][17], pw[2][17];
        px[0][0] = px[1][0] = pw[0][0] = pw[1][0] = 0.0f;
        for (int j = 0; j < 16; ++j) {
            const int i = order[j], h = i >= 8;
            px[h][j + 1] = px[h][j] + w[i] * xb[i];
            px[1 - h][j + 1] = px[1 - h][j];
            pw[h][j + 1] = pw[h][j] + w[i];
            pw[1 - h][j + 1] = pw[1 - h][j];
        }
        float best = -FLT_MAX, scale = 0.0f;
        int b1 = -1, b2 = -1, bk = -1;
        fgg__iq1_m_splits(px, pw, &best, &scale, &b1, &b2, &bk);
        if (bk < 0) continue;
        uint8_t L[16];
        for (int i = 0; i < 16; ++i) L[i] = (uint8_t)((rank[i] >= b1) + (rank[i] >= b2)); /* b1 <= b2 */
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
    *sumsq_next = sn;
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
    const int64_t nb = n_per_row / 256, ns = n_rows * nb; /* the rows' super-blocks follow each other */
    if (!imatrix) {
        memset(dst, 0, (size_t)ns * 50);
        return;
    }
    float sumsq = ns ? fgg__iq2_sumsq(src) : 0.0f;
    for (int64_t s = 0; s < ns; ++s)
        fgg__iq1_s_superblock(src + 256 * s, dst + 50 * s, imatrix + 256 * (s % nb), sumsq,
                              s + 1 < ns ? src + 256 * (s + 1) : NULL, &sumsq);
}

static void fgg_quantize_iq1_m(const float *src, uint8_t *dst, int64_t n_rows, int64_t n_per_row,
                               const float *imatrix) {
    const int64_t nb = n_per_row / 256, ns = n_rows * nb; /* the rows' super-blocks follow each other */
    float sumsq = imatrix && ns ? fgg__iq2_sumsq(src) : 0.0f;
    for (int64_t s = 0; s < ns; ++s)
        fgg__iq1_m_superblock(src + 256 * s, dst + 56 * s, imatrix ? imatrix + 256 * (s % nb) : NULL, sumsq,
                              imatrix && s + 1 < ns ? src + 256 * (s + 1) : NULL, &sumsq);
}

#endif /* FGG_QUANT_IQ1_H */
