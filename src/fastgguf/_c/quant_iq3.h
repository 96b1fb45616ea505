/* IQ3_XXS and IQ3_S quantizers: the bytes ggml's quantize_iq3_xxs / quantize_iq3_s write (portable
 * build, no FMA contraction), with or without an importance matrix.
 *
 *   int  fgg_iq3_init(const uint8_t grid256[][4], const uint8_t grid512[][4])
 *        Derive the search tables from the two dequantization grids (IQ3_XXS's 256 points,
 *        IQ3_S's 512). Call once, before any quantizer runs and before any thread can (the
 *        kernel modules do it at import); later calls do nothing. Returns 0, or -1 when a grid
 *        is not what the tables are derived for (the quantizers must then not be used).
 *   int  fgg_iq3_init_tables(void)   the same with the grids of iq_tables.h
 *   void fgg_quantize_iq3_xxs(const float *src, uint8_t *dst, int64_t n_rows, int64_t n_per_row,
 *                             const float *imatrix)   n_per_row % 256 == 0, 98-byte blocks
 *   void fgg_quantize_iq3_s(...)                      n_per_row % 256 == 0, 110-byte blocks
 *
 * The search tables (ggml builds the same ones in iq3xs_init_impl; derived here anew):
 *  - a grid point is 4 levels l in 0..7 (the rank of the stored value among the grid's 8
 *    distinct values), the quantizer compares x/scale with 2l+1; u = l0 | l1<<3 | l2<<6 | l3<<9.
 *  - map[u]: the grid index of u, or for the 4096 - n points off the grid, where its neighbour
 *    list starts: the grid points at the 2 (IQ3_XXS) or 3 (IQ3_S) smallest distinct squared
 *    distances from u, ordered by distance, then by index.
 *
 * The rules that decide the bits (learned from ggml-quants.c, written anew), per 32 values:
 *  - weights w as in IQ4 (sigma2 over the 256-value super-block: 2*sum(x^2)/256), and their
 *    square roots for the neighbour searches.
 *  - signs per 8 values (x >= 0 counts as positive); IQ3_XXS keeps an even count of negative
 *    values by flipping the value with the smallest w*x*x (first one on ties).
 *  - a block whose largest (sign-folded) value is below 1e-8 (IQ3_XXS) or zero (IQ3_S) gets
 *    scale 0, and IQ3_XXS leaves its grid bytes, signs and scale 0; IQ3_S writes nothing for it
 *    and, as ggml does, writes the grid bytes and signs of the next blocks that much earlier
 *    (the high index bits stay in place).
 *  - candidates id = (15 + is*0.2)/max for is = -15..15 (IQ3_XXS) or -9..9 (IQ3_S): levels
 *    l = nearest_int(0.5*(id*x - 1)) clamped to 0..7, a group of 4 off the grid replaced by its
 *    neighbour of smallest sum sqrt(w)*(scale*q - x)^2 (scale = 1/id; first one on ties); the
 *    sums sumqx = sum (w*x)*q, sumq2 = sum (w*q)*q left to right choose as in IQ4 (best starts
 *    at 0, scale at max/15).
 *  - when groups of the chosen candidate were off the grid (IQ3_S: also when no candidate was
 *    taken), those groups (IQ3_S: all) are placed again with 1/scale, and scale is refitted.
 *  - super-block: d = max scale / 31, stored as fp16(d * 1.0125) (IQ3_XXS) or fp16(d * 1.033)
 *    (IQ3_S); block scales nearest_int(0.5*(scale/d - 1)) clamped to 0..15.
 *
 * Speed (vector builds): one candidate per lane for the keys and sums, each lane the scalar
 * sequence of its candidate. For each group the grid keys and 2l+1 of all candidates are computed
 * at once; consecutive candidates with the same key off the grid (the levels move monotonically
 * with the scale) form a run. IQ3_S on AVX2/AVX-512 searches each candidate of a run with one
 * list entry per lane, distances from per-scale term tables looked up by permutes
 * (fgg_iq3_s_neighbours); otherwise (SSE2, IQ3_XXS) a run shares one pass over the neighbour
 * list, each lane keeping its first strictly smaller distance (fgg_iq3_run_lanes). The weighted
 * sums of all candidates then run side by side.
 */
#ifndef FGG_QUANT_IQ3_H
#define FGG_QUANT_IQ3_H

#include "iq_tables.h"
#include "quant_common.h"

/* Neighbour list storage: one count plus the entries, for each point off the grid. The sizes are
 * what the two grids give; fgg_iq3_init fails if its lists would not fill them exactly. */
#define FGG_IQ3_XXS_LISTS (3840 + 18985)
#define FGG_IQ3_S_LISTS (3584 + 24733)

typedef struct {
    int n;                 /* grid points */
    uint8_t level[512][4]; /* l of each coordinate */
    float q[512][4];       /* 2l + 1 */
    int32_t map[4096];     /* grid index, or -(1 + start of the neighbour list) */
    uint16_t *lists;
} fgg_iq3_table;

static uint16_t fgg_iq3_lists_xxs[FGG_IQ3_XXS_LISTS];
static uint16_t fgg_iq3_lists_s[FGG_IQ3_S_LISTS];
static fgg_iq3_table fgg_iq3_tables[2];
static int fgg_iq3_ready = 0;

static int fgg_iq3_build(fgg_iq3_table *t, const uint8_t (*grid)[4], int n, int nwant,
                         uint16_t *lists, int capacity) {
    /* the 8 distinct stored values, ascending: a value's rank is its level */
    int values[8], nv = 0;
    for (int i = 0; i < n; ++i) {
        for (int k = 0; k < 4; ++k) {
            int v = grid[i][k], seen = 0;
            for (int j = 0; j < nv; ++j) seen |= values[j] == v;
            if (!seen) {
                if (nv == 8) return -1;
                int j = nv++;
                while (j > 0 && values[j - 1] > v) {
                    values[j] = values[j - 1];
                    --j;
                }
                values[j] = v;
            }
        }
    }
    if (nv != 8) return -1;
    t->n = n;
    t->lists = lists;
    for (int u = 0; u < 4096; ++u) t->map[u] = INT32_MIN;
    for (int i = 0; i < n; ++i) {
        int u = 0;
        for (int k = 0; k < 4; ++k) {
            int l = 0;
            while (values[l] != grid[i][k]) ++l;
            t->level[i][k] = (uint8_t)l;
            t->q[i][k] = (float)(2 * l + 1);
            u |= l << 3 * k;
        }
        if (t->map[u] != INT32_MIN) return -1;
        t->map[u] = i;
    }
    /* For each point off the grid: the squared distances (in levels: at most 4 * 7^2) to all grid
     * points, the nwant smallest distinct ones and their counts, then one pass that writes each
     * point into its distance's part of the list (in index order within a distance). */
    int used = 0;
    uint8_t d2[512], lk[4][512]; /* lk[k][i] = level k of point i (a layout that vectorizes) */
    for (int i = 0; i < n; ++i)
        for (int k = 0; k < 4; ++k) lk[k][i] = t->level[i][k];
    for (int u = 0; u < 4096; ++u) {
        if (t->map[u] != INT32_MIN) continue;
        const int u0 = u & 7, u1 = (u >> 3) & 7, u2 = (u >> 6) & 7, u3 = (u >> 9) & 7;
        for (int i = 0; i < n; ++i) {
            int a = lk[0][i] - u0, b = lk[1][i] - u1, c = lk[2][i] - u2, e = lk[3][i] - u3;
            d2[i] = (uint8_t)(a * a + b * b + c * c + e * e);
        }
        /* the nwant smallest distinct distances (255: none left), and how many points have each */
        int level[3], start[3], count = 0, nl = 0;
        for (int w = 0; w < nwant; ++w) {
            int lo = w ? level[w - 1] : -1, m = 255;
            for (int i = 0; i < n; ++i) {
                int v = d2[i] > lo ? d2[i] : 255;
                m = v < m ? v : m;
            }
            if (m == 255) break;
            int c = 0;
            for (int i = 0; i < n; ++i) c += d2[i] == m;
            level[nl] = m;
            start[nl++] = count;
            count += c;
        }
        if (used + 1 + count > capacity) return -1;
        lists[used] = (uint16_t)count;
        for (int i = 0; i < n; ++i) {
            if (d2[i] > level[nl - 1]) continue;
            for (int w = 0; w < nl; ++w)
                if (d2[i] == level[w]) lists[used + 1 + start[w]++] = (uint16_t)i;
        }
        t->map[u] = -(1 + used);
        used += 1 + count;
    }
    return used == capacity ? 0 : -1;
}

#if FGG_IQ_SIMD && (FGG_HAVE_AVX512 || FGG_HAVE_AVX2)
/* AVX2 / AVX-512: IQ3_S's neighbour searches with one list entry per lane. A coordinate's term
 * sw*(scale*(2l+1) - x)^2 depends only on its level l, so for each scale the 8 terms of each
 * coordinate are computed once (the same float operations as per entry) and each entry's
 * distance is ((t0[l0] + t1[l1]) + t2[l2]) + t3[l3], looked up by a permute. The lists are
 * stored again for this, FGG_IQ3_TW entries per chunk, each coordinate's permute index as bytes
 * (AVX-512: coordinates 1 and 3 read the upper half of a two-coordinate table, index l + 8). */
#define FGG_IQ3_S_TERMS 1
#if FGG_HAVE_AVX512
#define FGG_IQ3_TW 16
#define FGG_IQ3_S_CHUNKS 4096
#else
#define FGG_IQ3_TW 8
#define FGG_IQ3_S_CHUNKS 6400
#endif
#define FGG_IQ3_S_MAX_CHUNKS (64 / FGG_IQ3_TW) /* longest list / FGG_IQ3_TW, checked when building */
static uint8_t fgg_iq3_s_chunks[FGG_IQ3_S_CHUNKS][4][FGG_IQ3_TW];
static int32_t fgg_iq3_s_chunk_at[4096]; /* u off the grid -> first chunk of its list */

static int fgg_iq3_s_build_chunks(const fgg_iq3_table *t) {
    int used = 0;
    for (int u = 0; u < 4096; ++u) {
        if (t->map[u] >= 0) continue;
        const uint16_t *list = t->lists - t->map[u] - 1;
        const int n = list[0], nc = (n + FGG_IQ3_TW - 1) / FGG_IQ3_TW;
        if (nc > FGG_IQ3_S_MAX_CHUNKS || used + nc > FGG_IQ3_S_CHUNKS) return -1;
        fgg_iq3_s_chunk_at[u] = used;
        for (int j = 0; j < FGG_IQ3_TW * nc; ++j)
            for (int i = 0; i < 4; ++i)
                fgg_iq3_s_chunks[used + j / FGG_IQ3_TW][i][j % FGG_IQ3_TW] =
                    (uint8_t)((j < n ? t->level[list[1 + j]][i] : 0) + (FGG_IQ3_TW == 16 ? 8 * (i & 1) : 0));
        used += nc;
    }
    return 0;
}

/* fgg_iq3_neighbour for the m scales sc[0..m-1] of one group (x, sw) whose levels have key u,
 * results in out[0], out[stride], ...: for each, the first entry of the smallest distance below
 * FLT_MAX (what the scalar strict-less scan from FLT_MAX keeps; NaN never wins), else the first
 * entry. */
static inline void fgg_iq3_s_neighbours(int u, const uint16_t *list, const float *x, const float *sw,
                                        const float *sc, int m, int *out, int stride) {
    const int n = list[0], nc = (n + FGG_IQ3_TW - 1) / FGG_IQ3_TW;
    const uint8_t (*ch)[4][FGG_IQ3_TW] = fgg_iq3_s_chunks + fgg_iq3_s_chunk_at[u];
#if FGG_IQ3_TW == 16
    __m512i idx[FGG_IQ3_S_MAX_CHUNKS][4];
    for (int c = 0; c < nc; ++c)
        for (int i = 0; i < 4; ++i) idx[c][i] = _mm512_cvtepu8_epi32(_mm_loadu_si128((const __m128i *)ch[c][i]));
    const __mmask16 last = (__mmask16)(0xffffu >> (16 * nc - n)); /* valid lanes of the last chunk */
    const __m512 q = _mm512_setr_ps(1, 3, 5, 7, 9, 11, 13, 15, 1, 3, 5, 7, 9, 11, 13, 15);
    const __m512 xa = _mm512_insertf32x8(_mm512_set1_ps(x[0]), _mm256_set1_ps(x[1]), 1);
    const __m512 xb = _mm512_insertf32x8(_mm512_set1_ps(x[2]), _mm256_set1_ps(x[3]), 1);
    const __m512 wa = _mm512_insertf32x8(_mm512_set1_ps(sw[0]), _mm256_set1_ps(sw[1]), 1);
    const __m512 wb = _mm512_insertf32x8(_mm512_set1_ps(sw[2]), _mm256_set1_ps(sw[3]), 1);
    const __m512 big = _mm512_set1_ps(FLT_MAX);
    for (int k = 0; k < m; ++k) {
        const __m512 s = _mm512_set1_ps(sc[k]);
        const __m512 da = _mm512_sub_ps(_mm512_mul_ps(s, q), xa), db = _mm512_sub_ps(_mm512_mul_ps(s, q), xb);
        const __m512 ta = _mm512_mul_ps(_mm512_mul_ps(wa, da), da), tb = _mm512_mul_ps(_mm512_mul_ps(wb, db), db);
        __m512 d[FGG_IQ3_S_MAX_CHUNKS], low = big;
        for (int c = 0; c < nc; ++c) {
            __m512 v = _mm512_add_ps(_mm512_permutexvar_ps(idx[c][0], ta), _mm512_permutexvar_ps(idx[c][1], ta));
            v = _mm512_add_ps(v, _mm512_permutexvar_ps(idx[c][2], tb));
            v = _mm512_add_ps(v, _mm512_permutexvar_ps(idx[c][3], tb));
            if (c == nc - 1) v = _mm512_mask_blend_ps(last, big, v);
            d[c] = v;
            low = _mm512_min_ps(v, low); /* low where v is NaN */
        }
        /* the minimum in every lane (no trip through a scalar), then the first lane holding it:
         * chunk c's lanes are bits 16c.. (no branch: the pattern of chunks differs from run to
         * run) */
        low = _mm512_min_ps(low, _mm512_shuffle_f32x4(low, low, 0x4e));
        low = _mm512_min_ps(low, _mm512_shuffle_f32x4(low, low, 0xb1));
        low = _mm512_min_ps(low, _mm512_permute_ps(low, 0x4e));
        low = _mm512_min_ps(low, _mm512_permute_ps(low, 0xb1));
        uint64_t eq = 0;
        for (int c = 0; c < nc; ++c) eq |= (uint64_t)_mm512_cmp_ps_mask(d[c], low, _CMP_EQ_OQ) << (16 * c);
        const int found = _mm512_cmp_ps_mask(low, big, _CMP_LT_OQ) & 1;
        const int pos = found ? __builtin_ctzll(eq | (uint64_t)1 << 63) : 0;
        out[k * stride] = list[1 + pos];
    }
#else
    __m256i idx[FGG_IQ3_S_MAX_CHUNKS][4];
    for (int c = 0; c < nc; ++c)
        for (int i = 0; i < 4; ++i) idx[c][i] = _mm256_cvtepu8_epi32(_mm_loadl_epi64((const __m128i *)ch[c][i]));
    const __m256i lane = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
    const __m256 last = _mm256_castsi256_ps(_mm256_cmpgt_epi32(_mm256_set1_epi32(n - 8 * (nc - 1)), lane));
    const __m256 q = _mm256_setr_ps(1, 3, 5, 7, 9, 11, 13, 15);
    __m256 xv[4], wv[4];
    for (int i = 0; i < 4; ++i) {
        xv[i] = _mm256_set1_ps(x[i]);
        wv[i] = _mm256_set1_ps(sw[i]);
    }
    const __m256 big = _mm256_set1_ps(FLT_MAX);
    for (int k = 0; k < m; ++k) {
        const __m256 s = _mm256_set1_ps(sc[k]);
        __m256 tt[4];
        for (int i = 0; i < 4; ++i) {
            __m256 di = _mm256_sub_ps(_mm256_mul_ps(s, q), xv[i]);
            tt[i] = _mm256_mul_ps(_mm256_mul_ps(wv[i], di), di);
        }
        __m256 d[FGG_IQ3_S_MAX_CHUNKS], low = big;
        for (int c = 0; c < nc; ++c) {
            __m256 v = _mm256_add_ps(_mm256_permutevar8x32_ps(tt[0], idx[c][0]), _mm256_permutevar8x32_ps(tt[1], idx[c][1]));
            v = _mm256_add_ps(v, _mm256_permutevar8x32_ps(tt[2], idx[c][2]));
            v = _mm256_add_ps(v, _mm256_permutevar8x32_ps(tt[3], idx[c][3]));
            if (c == nc - 1) v = _mm256_blendv_ps(big, v, last);
            d[c] = v;
            low = _mm256_min_ps(v, low); /* low where v is NaN */
        }
        /* as for AVX-512: the minimum in every lane, then its first lane */
        low = _mm256_min_ps(low, _mm256_permute2f128_ps(low, low, 1));
        low = _mm256_min_ps(low, _mm256_permute_ps(low, 0x4e));
        low = _mm256_min_ps(low, _mm256_permute_ps(low, 0xb1));
        uint64_t eq = 0;
        for (int c = 0; c < nc; ++c)
            eq |= (uint64_t)(unsigned)_mm256_movemask_ps(_mm256_cmp_ps(d[c], low, _CMP_EQ_OQ)) << (8 * c);
        const int found = _mm256_movemask_ps(_mm256_cmp_ps(low, big, _CMP_LT_OQ)) & 1;
        const int pos = found ? __builtin_ctzll(eq | (uint64_t)1 << 63) : 0;
        out[k * stride] = list[1 + pos];
    }
#endif
}
#else
#define FGG_IQ3_S_TERMS 0
#endif

static int fgg_iq3_init(const uint8_t (*grid256)[4], const uint8_t (*grid512)[4]) {
    if (fgg_iq3_ready) return fgg_iq3_ready > 0 ? 0 : -1;
    int ok = fgg_iq3_build(&fgg_iq3_tables[0], grid256, 256, 2, fgg_iq3_lists_xxs, FGG_IQ3_XXS_LISTS) == 0
          && fgg_iq3_build(&fgg_iq3_tables[1], grid512, 512, 3, fgg_iq3_lists_s, FGG_IQ3_S_LISTS) == 0;
#if FGG_IQ3_S_TERMS
    ok = ok && fgg_iq3_s_build_chunks(&fgg_iq3_tables[1]) == 0;
#endif
    fgg_iq3_ready = ok ? 1 : -1;
    return ok ? 0 : -1;
}

static int fgg_iq3_init_tables(void) {
    return fgg_iq3_init(fgg_iq3xxs_grid, fgg_iq3s_grid);
}

/* The neighbour (in list order) of smallest weighted distance to the group x at this scale. */
static inline int fgg_iq3_neighbour(const fgg_iq3_table *t, const uint16_t *list, const float *x,
                                    const float *w, float scale) {
    float best = FLT_MAX;
    int index = list[1]; /* ggml stops on a NaN/inf-only list; a finite result never gets here */
    for (int j = 1; j <= list[0]; ++j) {
        const float *q = t->q[list[j]];
        float d2 = 0;
        for (int i = 0; i < 4; ++i) {
            float diff = scale * q[i] - x[i];
            d2 += w[i] * diff * diff;
        }
        if (d2 < best) {
            best = d2;
            index = list[j];
        }
    }
    return index;
}

#if FGG_IQ_SIMD
/* 16 float / int lanes with AVX-512, 8 with AVX, 4 otherwise (the candidate search below) */
#if FGG_HAVE_AVX512
#define FGG_IQ3_CL 16
typedef float fgg_iq3_vf __attribute__((vector_size(64)));
typedef int32_t fgg_iq3_vi __attribute__((vector_size(64)));
FGG_IQ_INLINE fgg_iq3_vf fgg_iq3_splat(float x) {
    return (fgg_iq3_vf){x, x, x, x, x, x, x, x, x, x, x, x, x, x, x, x};
}
#elif FGG_HAVE_AVX
#define FGG_IQ3_CL 8
typedef float fgg_iq3_vf __attribute__((vector_size(32)));
typedef int32_t fgg_iq3_vi __attribute__((vector_size(32)));
FGG_IQ_INLINE fgg_iq3_vf fgg_iq3_splat(float x) {
    return (fgg_iq3_vf){x, x, x, x, x, x, x, x};
}
#else
#define FGG_IQ3_CL 4
typedef float fgg_iq3_vf __attribute__((vector_size(16)));
typedef int32_t fgg_iq3_vi __attribute__((vector_size(16)));
FGG_IQ_INLINE fgg_iq3_vf fgg_iq3_splat(float x) {
    return (fgg_iq3_vf){x, x, x, x};
}
#endif
#endif

#if FGG_IQ3_S_TERMS
#if FGG_IQ3_CL != FGG_IQ_W
#error "the run starts use fgg_iq_bits on candidate vectors: FGG_IQ3_CL must equal FGG_IQ_W"
#endif
/* Lane l of x moved to lane l + 1, lane 0 from the last lane of prev. */
FGG_IQ_INLINE fgg_iq3_vi fgg_iq3_prev_lane(fgg_iq3_vi x, fgg_iq3_vi prev) {
#if FGG_IQ3_CL == 16
    return (fgg_iq3_vi)_mm512_alignr_epi32((__m512i)x, (__m512i)prev, 15);
#else
    const __m256i mid = _mm256_permute2x128_si256((__m256i)prev, (__m256i)x, 0x21); /* prev hi | x lo */
    return (fgg_iq3_vi)_mm256_alignr_epi8((__m256i)x, mid, 12);
#endif
}
#endif

#if FGG_IQ_SIMD
/* fgg_iq3_neighbour for the candidates c..e-1 (e - c <= FGG_IQ3_CL, scales scs[c..]) whose
 * group k (values xg, square-root weights swg) has a key off the grid with map entry g: one
 * candidate per lane, each lane the scalar search at its own scale (first strictly smaller
 * distance wins). Their grid points go to gt[.][k], their 2l+1 to qt[4k..4k+3][.]. */
static inline void fgg_iq3_run_lanes(const fgg_iq3_table *t, int g, const float *xg, const float *swg,
                                     const float *scs, int c, int e, int (*gt)[8], float (*qt)[32 + FGG_IQ3_CL], int k) {
    const uint16_t *list = t->lists - g - 1;
    fgg_iq3_vf vs;
    memcpy(&vs, scs + c, sizeof vs);
    const fgg_iq3_vf x0 = fgg_iq3_splat(xg[0]), x1 = fgg_iq3_splat(xg[1]);
    const fgg_iq3_vf x2 = fgg_iq3_splat(xg[2]), x3 = fgg_iq3_splat(xg[3]);
    const fgg_iq3_vf w0 = fgg_iq3_splat(swg[0]), w1 = fgg_iq3_splat(swg[1]);
    const fgg_iq3_vf w2 = fgg_iq3_splat(swg[2]), w3 = fgg_iq3_splat(swg[3]);
    fgg_iq3_vf best = fgg_iq3_splat(FLT_MAX);
    fgg_iq3_vi index = (fgg_iq3_vi){0} + list[1];
    for (int j = 1; j <= list[0]; ++j) {
        const float *q = t->q[list[j]];
        fgg_iq3_vf d0 = vs * fgg_iq3_splat(q[0]) - x0;
        fgg_iq3_vf d1 = vs * fgg_iq3_splat(q[1]) - x1;
        fgg_iq3_vf dd2 = vs * fgg_iq3_splat(q[2]) - x2;
        fgg_iq3_vf d3 = vs * fgg_iq3_splat(q[3]) - x3;
        /* 0 + first term: the same value up to the sign of a zero, which no
         * comparison sees */
        fgg_iq3_vf d2 = w0 * d0 * d0;
        d2 += w1 * d1 * d1;
        d2 += w2 * dd2 * dd2;
        d2 += w3 * d3 * d3;
        fgg_iq3_vi take = d2 < best;
        best = (fgg_iq3_vf)((take & (fgg_iq3_vi)d2) | (~take & (fgg_iq3_vi)best));
        index = (take & ((fgg_iq3_vi){0} + list[j])) | (~take & index);
    }
    for (int cc = c; cc < e; ++cc) {
        gt[cc][k] = index[cc - c];
        for (int i = 0; i < 4; ++i) qt[4 * k + i][cc] = t->q[gt[cc][k]][i];
    }
}
#endif

/* Grid index for the 4 levels of a group at inverse scale id; off the grid, the neighbour
 * search runs at `scale`. *on_grid tells which. */
static inline int fgg_iq3_place(const fgg_iq3_table *t, const float *x, const float *sw, float id,
                                float scale, int *on_grid) {
    int u = 0;
    for (int i = 0; i < 4; ++i) {
        int l = fgg_iq_nearest_int(0.5f * (id * x[i] - 1));
        l = l < 0 ? 0 : l > 7 ? 7 : l;
        u |= l << 3 * i;
    }
    int g = t->map[u];
    *on_grid = g >= 0;
    if (g >= 0) return g;
#if FGG_IQ3_S_TERMS
    if (t->n == 512) {
        int index;
        fgg_iq3_s_neighbours(u, t->lists - g - 1, x, sw, &scale, 1, &index, 1);
        return index;
    }
#endif
    return fgg_iq3_neighbour(t, t->lists - g - 1, x, sw, scale);
}

/* Weighted fit of the 32 values to the levels of 8 grid points: sumqx, sumq2. */
static inline void fgg_iq3_sums(const fgg_iq3_table *t, const int *gi, const float *xval,
                                const float *w, float *sumqx, float *sumq2) {
    float sx = 0, s2 = 0;
    for (int i = 0; i < 32; ++i) {
        float q = t->q[gi[i / 4]][i % 4];
        sx += w[i] * xval[i] * q;
        s2 += w[i] * q * q;
    }
    *sumqx = sx;
    *sumq2 = s2;
}

/* One block of 32 values: grid indices gi[8], sign bytes signs[4]; returns the scale (0 for a
 * block left empty, *empty set). */
static float fgg_iq3_block(const fgg_iq3_table *t, int is_s, const float *xb, const float *w,
                           int gi[8], uint8_t signs[4], int *empty) {
    float sw[32], xval[32];
    for (int i = 0; i < 32; ++i) sw[i] = sqrtf(w[i]);
    for (int k = 0; k < 4; ++k) {
        unsigned s = 0, nflip = 0;
        for (int i = 0; i < 8; ++i) { /* no branch: the signs are random */
            const float v = xb[8 * k + i];
            const unsigned neg = !(v >= 0);
            xval[8 * k + i] = neg ? -v : v;
            nflip += neg;
            s |= neg << i;
        }
        if (!is_s && (nflip & 1)) {
            int imin = 0;
            float min = w[8 * k] * xb[8 * k] * xb[8 * k];
            for (int i = 1; i < 8; ++i) {
                float a = w[8 * k + i] * xb[8 * k + i] * xb[8 * k + i];
                if (a < min) {
                    min = a;
                    imin = i;
                }
            }
            xval[8 * k + imin] = -xval[8 * k + imin];
            s ^= 1u << imin;
        }
        signs[k] = (uint8_t)(is_s ? s : s & 127);
    }
    float max = xval[0];
    for (int i = 1; i < 32; ++i) max = max > xval[i] ? max : xval[i];
    *empty = is_s ? !max : max < 1e-8f;
    if (*empty) return 0.f;

    const int nis = is_s ? 9 : 15;
    float best = 0, scale = max / 15;
    int on_grid[8], cand[8], cand_on[8];
    for (int k = 0; k < 8; ++k) {
        on_grid[k] = !is_s;
        gi[k] = 0; /* levels 0, on both grids */
    }
#if FGG_IQ_SIMD
    /* All candidates first, group by group, then their sums with one candidate per lane, then
     * the scalar choice in candidate order. */
    float qt[32][32 + FGG_IQ3_CL]; /* [value][candidate]: 2l+1 of the candidate's placement */
    int32_t ucs[8][32 + FGG_IQ3_CL]; /* [group][candidate]: the key of its levels */
    int gt[32][8];                   /* [candidate][group]: the neighbour, for keys off the grid */
    const int ncand = 2 * nis + 1;
    /* candidate inverse scales and scales, padded for whole vectors */
    float ids[32 + FGG_IQ3_CL], scs[32 + FGG_IQ3_CL];
    for (int c = 0; c < 32 + FGG_IQ3_CL; ++c) {
        ids[c] = (15 + (float)((c < ncand ? c : ncand - 1) - nis) * 0.2f) / max;
        scs[c] = 1 / ids[c];
    }
    for (int k = 0; k < 8; ++k) {
        /* levels of group k for every candidate, one candidate per lane: their key, and their
         * 2l+1 (the placement's values where the key is on the grid) */
        int32_t *uc = ucs[k];
#if FGG_IQ3_S_TERMS
        unsigned starts = 0; /* (IQ3_S) candidates whose key differs from the one before */
        fgg_iq3_vi uprev = (fgg_iq3_vi){0} - 1;
#endif
        for (int c = 0; c < ncand; c += FGG_IQ3_CL) {
            fgg_iq3_vf vid;
            memcpy(&vid, ids + c, sizeof vid);
            fgg_iq3_vi u = {0};
            for (int i = 0; i < 4; ++i) {
                fgg_iq3_vf a = fgg_iq3_splat(0.5f) * (vid * fgg_iq3_splat(xval[4 * k + i]) - fgg_iq3_splat(1.0f));
                fgg_iq3_vi l = ((fgg_iq3_vi)(a + fgg_iq3_splat(12582912.0f)) & 0x007fffff) - 0x00400000;
                l &= ~(l < 0);
                fgg_iq3_vi big = l > 7;
                l = (l & ~big) | (big & 7);
                u |= l << (3 * i);
                fgg_iq3_vi q = 2 * l + 1;
#if FGG_HAVE_AVX512
                fgg_iq3_vf qf = (fgg_iq3_vf)_mm512_cvtepi32_ps((__m512i)q);
#elif FGG_HAVE_AVX
                fgg_iq3_vf qf = (fgg_iq3_vf)_mm256_cvtepi32_ps((__m256i)q);
#else
                fgg_iq3_vf qf;
                for (int j = 0; j < FGG_IQ3_CL; ++j) qf[j] = (float)q[j];
#endif
                memcpy(qt[4 * k + i] + c, &qf, sizeof qf);
            }
            memcpy(uc + c, &u, sizeof u);
#if FGG_IQ3_S_TERMS
            starts |= fgg_iq_bits(u != fgg_iq3_prev_lane(u, uprev)) << c;
            uprev = u;
#endif
        }
#if FGG_IQ3_S_TERMS
        if (is_s) {
            /* runs of candidates with the same key (the levels move monotonically with the
             * scale) start where the key changes */
            starts &= (2u << (ncand - 1)) - 1;
            while (starts) {
                const int c = __builtin_ctz(starts);
                starts &= starts - 1;
                const int e = starts ? __builtin_ctz(starts) : ncand;
                const int g = t->map[uc[c]];
                if (g >= 0) continue;
                fgg_iq3_s_neighbours(uc[c], t->lists - g - 1, xval + 4 * k, sw + 4 * k, scs + c, e - c, &gt[c][k], 8);
                for (int cc = c; cc < e; ++cc)
                    for (int i = 0; i < 4; ++i) qt[4 * k + i][cc] = t->q[gt[cc][k]][i];
            }
            continue;
        }
#endif
        /* Runs of candidates with the same key off the grid share one pass over the neighbour
         * list: lane = candidate, each lane the scalar search at its own scale (first strictly
         * smaller distance wins). */
        for (int c = 0; c < ncand;) {
            int u = uc[c], e = c + 1;
            while (e < ncand && e - c < FGG_IQ3_CL && uc[e] == u) ++e;
            int g = t->map[u];
            if (g >= 0) {
                c = e;
                continue;
            }
            fgg_iq3_run_lanes(t, g, xval + 4 * k, sw + 4 * k, scs, c, e, gt, qt, k);
            c = e;
        }
    }
    float sx[32], s2[32];
    for (int c = 0; c < ncand; c += FGG_IQ3_CL) { /* lanes past ncand hold finite values, unused */
        fgg_iq3_vf sumqx = {0}, sumq2 = {0};
        for (int i = 0; i < 32; ++i) {
            fgg_iq3_vf q;
            memcpy(&q, qt[i] + c, sizeof q);
            sumqx += fgg_iq3_splat(w[i] * xval[i]) * q;
            sumq2 += fgg_iq3_splat(w[i]) * q * q;
        }
        memcpy(sx + c, &sumqx, sizeof sumqx);
        memcpy(s2 + c, &sumq2, sizeof sumq2);
    }
    int chosen = -1;
    for (int c = 0; c < ncand; ++c) {
        if (s2[c] > 0 && sx[c] * sx[c] > best * s2[c]) {
            scale = sx[c] / s2[c];
            best = scale * sx[c];
            chosen = c;
        }
    }
    if (chosen >= 0) {
        for (int k = 0; k < 8; ++k) {
            const int g = t->map[ucs[k][chosen]];
            on_grid[k] = g >= 0;
            gi[k] = g >= 0 ? g : gt[chosen][k];
        }
    }
    (void)cand;
    (void)cand_on;
#else
    for (int is = -nis; is <= nis; ++is) {
        float id = (15 + (float)is * 0.2f) / max;
        float this_scale = 1 / id;
        for (int k = 0; k < 8; ++k)
            cand[k] = fgg_iq3_place(t, xval + 4 * k, sw + 4 * k, id, this_scale, &cand_on[k]);
        float sumqx, sumq2;
        fgg_iq3_sums(t, cand, xval, w, &sumqx, &sumq2);
        if (sumq2 > 0 && sumqx * sumqx > best * sumq2) {
            scale = sumqx / sumq2;
            best = scale * sumqx;
            for (int k = 0; k < 8; ++k) {
                gi[k] = cand[k];
                on_grid[k] = cand_on[k];
            }
        }
    }
#endif
    int off = 0;
    for (int k = 0; k < 8; ++k) off += !on_grid[k];
    if (off > 0 && scale > 0) {
        float id = 1 / scale;
        for (int k = 0; k < 8; ++k) {
            if (!is_s && on_grid[k]) continue;
            int unused;
            gi[k] = fgg_iq3_place(t, xval + 4 * k, sw + 4 * k, id, scale, &unused);
        }
        float sumqx, sumq2;
        fgg_iq3_sums(t, gi, xval, w, &sumqx, &sumq2);
        if (sumq2 > 0) scale = sumqx / sumq2;
    }
    if (scale < 0) {
        scale = -scale;
        for (int k = 0; k < 4; ++k) signs[k] = (uint8_t)(is_s ? ~signs[k] : ~signs[k] & 127);
    }
    return scale;
}

static inline void fgg_iq3_weights(const float *x, const float *qw, float *w) {
    if (qw) {
        float sumx2 = 0;
        for (int i = 0; i < 256; ++i) sumx2 += x[i] * x[i];
        float sigma2 = 2 * sumx2 / 256;
        for (int i = 0; i < 256; ++i) w[i] = qw[i] * sqrtf(sigma2 + x[i] * x[i]);
    } else {
        for (int i = 0; i < 256; ++i) w[i] = x[i] * x[i];
    }
}

static void fgg_quantize_iq3_xxs(const float *src, uint8_t *dst, int64_t n_rows, int64_t n_per_row,
                                 const float *imatrix) {
    const fgg_iq3_table *t = &fgg_iq3_tables[0];
    int64_t nb = n_per_row / 256;
    float w[256], scales[8];
    int gi[8], empty;
    uint8_t signs[4];
    for (int64_t r = 0; r < n_rows; ++r) {
        const float *x = src + r * n_per_row;
        uint8_t *y = dst + r * nb * 98;
        for (int64_t b = 0; b < nb; ++b, x += 256, y += 98) {
            /* d (2 bytes), 64 grid bytes, 8 x uint32: 4 x 7 sign bits + 4-bit scale */
            memset(y, 0, 98);
            fgg_iq3_weights(x, imatrix ? imatrix + 256 * b : NULL, w);
            uint32_t packed[8] = {0};
            float max_scale = 0;
            for (int ib = 0; ib < 8; ++ib) {
                float scale = fgg_iq3_block(t, 0, x + 32 * ib, w + 32 * ib, gi, signs, &empty);
                scales[ib] = scale;
                if (empty) continue;
                for (int k = 0; k < 8; ++k) y[2 + 8 * ib + k] = (uint8_t)gi[k];
                packed[ib] = signs[0] | (uint32_t)signs[1] << 7 | (uint32_t)signs[2] << 14
                           | (uint32_t)signs[3] << 21;
                max_scale = max_scale > scale ? max_scale : scale;
            }
            if (!max_scale) {
                memset(y, 0, 98);
                continue;
            }
            float d = max_scale / 31;
            fgg_store_u16le(y, fgg_float_to_half(d * 1.0125f));
            float id = 1 / d;
            for (int ib = 0; ib < 8; ++ib) {
                int l = fgg_iq_nearest_int(0.5f * (id * scales[ib] - 1));
                l = l < 0 ? 0 : l > 15 ? 15 : l;
                fgg_store_u32le(y + 66 + 4 * ib, packed[ib] | (uint32_t)l << 28);
            }
        }
    }
}

static void fgg_quantize_iq3_s(const float *src, uint8_t *dst, int64_t n_rows, int64_t n_per_row,
                               const float *imatrix) {
    const fgg_iq3_table *t = &fgg_iq3_tables[1];
    int64_t nb = n_per_row / 256;
    float w[256], scales[8];
    int gi[8], empty;
    uint8_t signs[4];
    for (int64_t r = 0; r < n_rows; ++r) {
        const float *x = src + r * n_per_row;
        uint8_t *y = dst + r * nb * 110;
        for (int64_t b = 0; b < nb; ++b, x += 256, y += 110) {
            /* d (2), qs[64] (low 8 index bits), qh[8] (9th bits), signs[32], scales[4] */
            memset(y, 0, 110);
            uint8_t *qs = y + 2, *qh = y + 66, *sg = y + 74;
            fgg_iq3_weights(x, imatrix ? imatrix + 256 * b : NULL, w);
            float max_scale = 0;
            for (int ib = 0; ib < 8; ++ib) {
                float scale = fgg_iq3_block(t, 1, x + 32 * ib, w + 32 * ib, gi, signs, &empty);
                scales[ib] = scale;
                if (empty) continue; /* qs and sg do not advance (ggml's layout) */
                for (int k = 0; k < 8; ++k) {
                    qs[k] = (uint8_t)gi[k];
                    qh[ib] |= (uint8_t)((gi[k] >> 8) << k);
                }
                memcpy(sg, signs, 4);
                qs += 8;
                sg += 4;
                max_scale = max_scale > scale ? max_scale : scale;
            }
            if (!max_scale) continue;
            float d = max_scale / 31;
            fgg_store_u16le(y, fgg_float_to_half(d * 1.033f));
            float id = 1 / d;
            for (int ib = 0; ib < 8; ib += 2) {
                int l1 = fgg_iq_nearest_int(0.5f * (id * scales[ib] - 1));
                int l2 = fgg_iq_nearest_int(0.5f * (id * scales[ib + 1] - 1));
                l1 = l1 < 0 ? 0 : l1 > 15 ? 15 : l1;
                l2 = l2 < 0 ? 0 : l2 > 15 ? 15 : l2;
                y[106 + ib / 2] = (uint8_t)(l1 | l2 << 4);
            }
        }
    }
}

#endif /* FGG_QUANT_IQ3_H */
