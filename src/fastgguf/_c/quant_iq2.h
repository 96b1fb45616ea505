/* IQ2_XXS, IQ2_XS and IQ2_S quantizers: the bytes ggml's quantize_iq2_xxs / quantize_iq2_xs /
 * quantize_iq2_s write (portable build, no FMA contraction). IQ2_XXS and IQ2_XS need an importance
 * matrix (as in ggml); IQ2_S works with or without one.
 *
 *   int  fgg_iq2_init(grid256, grid512, grid1024, grid2048)   (fgg_iq2_init_raw: void pointers)
 *        Derive the search tables from the dequantization grids (IQ2_XXS's 256 points, IQ2_XS's
 *        512, IQ2_S's 1024, IQ1_S/IQ1_M's 2048). Call once, before any quantizer runs and before
 *        any thread can (the kernel modules do it at import); later calls do nothing. Returns 0,
 *        or -1 when a grid is not what the tables are derived for or memory ran out (the
 *        quantizers of this file and of quant_iq1.h must then not be used).
 *   void fgg_quantize_iq2_xxs(const float *src, uint8_t *dst, int64_t n_rows, int64_t n_per_row,
 *                             const float *imatrix)   n_per_row % 256 == 0, 66-byte blocks
 *   void fgg_quantize_iq2_xs(...)                     74-byte blocks
 *   void fgg_quantize_iq2_s(...)                      82-byte blocks
 *   (imatrix: n_per_row weights >= 0; required by IQ2_XXS and IQ2_XS -- given NULL they write
 *   zero blocks, the callers reject that case before.)
 *
 * The search tables (ggml builds the same ones in iq2xs_init_impl; derived here anew):
 *  - a grid point is 8 levels l in 0..2 (the rank of the stored value among the grid's three
 *    distinct values: IQ2 grids store 8/25/43, the IQ1 grid -1/0/1); the IQ2 searches compare
 *    x/scale with 2l+1. The key of 8 levels is u = sum l_k << 2k (at most 0xAAAA).
 *  - map[u]: the grid index of u, or for a key off the grid, -(1 + start of its neighbour
 *    list): a count, then the grid points at the nwant smallest distinct squared distances
 *    sum (l_k - g_k)^2 from u, in order of distance, then of index. nwant = 2 (IQ2_XXS, IQ2_XS),
 *    1 (IQ2_S), 3 (IQ1_S, IQ1_M). Lists are built only for keys whose levels are all <= 2 (the
 *    only ones the quantizers look up).
 *
 * The rules that decide the bits (learned from ggml-quants.c, written anew):
 *  - per 256-value super-block, sigma2 = sum(x^2)/256 (IQ2_XXS, IQ2_XS) or 2*sum(x^2)/256
 *    (IQ2_S), sums left to right; weights w = imatrix * sqrt(sigma2 + x^2), without imatrix
 *    (IQ2_S) w = 0.25*sigma2 + x^2; sw = sqrt(w) for the neighbour searches.
 *  - signs per 8 values (x >= 0 is positive, so -0.0 is too); IQ2_XXS/IQ2_XS keep an even count
 *    of negatives by flipping back the value of smallest w*x*x (the first on ties) and store 7
 *    sign bits, IQ2_S stores all 8.
 *  - levels for an inverse scale id: l = nearest_int(0.5*(id*x - 1)) clamped to 0..2; a group of
 *    8 off the grid becomes its list entry of smallest sum sw*(scale*(2g+1) - x)^2 (scale =
 *    1/id, first one on ties); sumqx = sum (w*x)*q, sumq2 = sum (w*q)*q left to right (q = 2l+1)
 *    and a candidate is taken when sumq2 > 0 and sumqx^2 > best*sumq2 (best starts at 0), giving
 *    scale = sumqx/sumq2, best = scale*sumqx.
 *  - IQ2_XXS (blocks of 32): a block whose largest folded value is below 1e-15 gets scale 0; the
 *    starting scale is ggml's positive-levels fit (fgg_q_fit_pos, levels 0..4, the weights w);
 *    if 3*scale <= 0 the block gets scale 0; candidates id = (5 + 0.1*is)/(3*scale), is = -6..6;
 *    then if scale > 0 all four groups are placed again with 1/scale and scale refitted.
 *  - IQ2_XS / IQ2_S (blocks of 16): below 1e-15 / 1e-8 the block gets scale 0; candidates
 *    id = (5 + 0.1*is)/max, is = -9..9, scale starts at max/5; the groups of the taken candidate
 *    that were off the grid are placed again with 1/scale (when scale > 0) and scale refitted.
 *  - a negative final scale (not reachable with ordinary data) is negated and the signs inverted.
 *  - super-block: d = max scale / 31 stored as fp16(d) (IQ2_S: fp16(d * 0.9875)); block scales
 *    nearest_int(0.5*(scale/d - 1)) (with 1/d computed first) clamped to 0..15. A super-block
 *    with every scale 0 is all zero bytes.
 *  - ggml aborts when a neighbour search finds no finite distance (only with overflowing
 *    values); here the first list entry is taken.
 *
 * Speed: the 19 (13) candidates of a block are independent until the choice, so they are lanes
 * of vectors: their levels (packed into one key per group of 8), map look-ups (one gather with
 * AVX-512), and sums; the choice then scans them in ggml's order with selects. A candidate keeps
 * keys, never per-value levels: a search replaces its group's key. The off-grid groups' searches
 * are listed branch-free and run in two passes over the whole list (all distances, then all
 * picks), so independent searches overlap instead of each waiting on its own long chain; a
 * search's distances are 16 (8) list entries per vector, each lane summing its in-lane term
 * look-ups coordinate by coordinate. Signs, square roots and the choice are branch-free (they are
 * data: a branch would be mispredicted half the time). Every float operation is ggml's, in
 * ggml's order.
 */
#ifndef FGG_QUANT_IQ2_H
#define FGG_QUANT_IQ2_H

#include <stdlib.h>

#include "quant_common.h"
#include "quant_kquant.h" /* fgg_q_fit_pos: the positive-levels fit (ggml's make_qp_quants) */

#if FGG_IQ_SIMD && FGG_HAVE_AVX512
#define FGG_IQ2_VEC 16
#elif FGG_IQ_SIMD && FGG_HAVE_AVX2
#define FGG_IQ2_VEC 8
#else
#define FGG_IQ2_VEC 1
#endif

#define FGG_IQ2_KEYS 43692 /* keys of 8 levels 0..2, two bits each: 0 .. 0xAAAA */

typedef struct {
    int n;                    /* grid points */
    uint8_t level[2048][8];   /* l of each coordinate */
    int32_t map[FGG_IQ2_KEYS]; /* grid index, or -(1 + start of the neighbour list) */
    uint16_t *lists;          /* per key off the grid: count, then grid indices */
    uint16_t *keys;           /* beside each list entry: the key of its grid point */
    int32_t gkey[2048];       /* key of each grid point */
} fgg_iq2_table;

/* Lists are padded with copies of their first entry to a multiple of this many entries (the
 * widest vector): a copy's distance equals the first entry's, so it never wins a search that
 * takes the first strictly smaller distance. */
#define FGG_IQ2_PAD 16
#define FGG_IQ2_MAXLIST 320 /* longest padded list the searches take (the grids give 304) */

/* 0: IQ2_XXS (256), 1: IQ2_XS (512), 2: IQ2_S (1024), 3: IQ1_S / IQ1_M (2048). */
static fgg_iq2_table fgg_iq2_tables[4];
static int fgg_iq2_state = 0; /* 0 not built, 1 built, -1 failed */

static inline int fgg__iq2_key(const uint8_t *l) {
    int u = 0;
    for (int k = 0; k < 8; ++k) u |= l[k] << (2 * k);
    return u;
}

static int fgg__iq2_build(fgg_iq2_table *t, int nwant) {
    for (int u = 0; u < FGG_IQ2_KEYS; ++u) t->map[u] = INT32_MIN;
    for (int i = 0; i < t->n; ++i) {
        int u = fgg__iq2_key(t->level[i]);
        if (t->map[u] != INT32_MIN) return -1; /* two points with one key */
        t->map[u] = i;
        t->gkey[i] = u;
    }
    /* levels by coordinate, so the distance loop runs over the grid points */
    static uint8_t by_coord[8][2048];
    for (int i = 0; i < t->n; ++i) {
        for (int k = 0; k < 8; ++k) by_coord[k][i] = t->level[i][k];
    }
    size_t cap = 1 << 16, used = 0;
    uint16_t *lists = (uint16_t *)malloc(cap * sizeof(uint16_t));
    if (!lists) return -1;
    uint8_t dist[2048];
    for (int u = 0; u < FGG_IQ2_KEYS; ++u) {
        if (t->map[u] != INT32_MIN) continue;
        uint8_t lu[8];
        int ok = 1;
        for (int k = 0; k < 8; ++k) {
            lu[k] = (uint8_t)((u >> (2 * k)) & 3);
            if (lu[k] > 2) ok = 0;
        }
        if (!ok) continue;
        memset(dist, 0, sizeof dist);
        memset(dist + t->n, 255, sizeof dist - (size_t)t->n);
        for (int k = 0; k < 8; ++k) {
            const uint8_t c = lu[k];
            const uint8_t *col = by_coord[k];
            for (int j = 0; j < t->n; ++j) {
                uint8_t e = (uint8_t)(col[j] > c ? col[j] - c : c - col[j]);
                dist[j] = (uint8_t)(dist[j] + e * e);
            }
        }
        /* the nwant smallest distinct distances: limit is the largest of them */
        int limit = -1;
        uint8_t lo = 0;
        for (int r = 0; r < nwant; ++r) {
            /* d - lo wraps to >= 222 for d < lo (d <= 32) and for the 255 padding */
            uint8_t m = 255;
            for (int j = 0; j < 2048; ++j) {
                uint8_t c = (uint8_t)(dist[j] - lo);
                m = c < m ? c : m;
            }
            if (m > 32) break;
            m = (uint8_t)(m + lo);
            limit = m;
            lo = (uint8_t)(m + 1);
        }
        size_t need = used + 1 + (size_t)t->n + FGG_IQ2_PAD;
        if (need > cap) {
            while (need > cap) cap *= 2;
            uint16_t *grown = (uint16_t *)realloc(lists, cap * sizeof(uint16_t));
            if (!grown) {
                free(lists);
                return -1;
            }
            lists = grown;
        }
        /* entries by distance, then index: one pass into per-distance runs, then joined */
        static uint16_t run[33][2048];
        int run_n[33] = {0};
        for (int j = 0; j < t->n; ++j) {
            int d = dist[j]; /* branch-free: a store for every point, counted within limit */
            run[d][run_n[d]] = (uint16_t)j;
            run_n[d] += d <= limit;
        }
        size_t head = used++;
        int count = 0;
        for (int d = 0; d <= limit; ++d) {
            memcpy(lists + used, run[d], (size_t)run_n[d] * sizeof(uint16_t));
            used += (size_t)run_n[d];
            count += run_n[d];
        }
        while (count % FGG_IQ2_PAD) {
            lists[used++] = lists[head + 1];
            ++count;
        }
        if (count > FGG_IQ2_MAXLIST) {
            free(lists);
            return -1;
        }
        lists[head] = (uint16_t)count;
        t->map[u] = -(int32_t)(1 + head);
    }
    uint16_t *keys = (uint16_t *)malloc((used + FGG_IQ2_PAD) * sizeof(uint16_t));
    if (!keys) {
        free(lists);
        return -1;
    }
    for (size_t i = 0; i < used; ++i) keys[i] = (uint16_t)t->gkey[lists[i] & 2047];
    t->lists = lists;
    t->keys = keys;
    return 0;
}

/* The search tables of table `which` (0 IQ2_XXS, 1 IQ2_XS, 2 IQ2_S, 3 IQ1) in a canonical byte
 * form, for the tests to compare with ggml's: for each key u = 0..0xAAAA whose levels are all
 * <= 2, in order, the grid index as int32 (little-endian) when u is on the grid, else -1 and the
 * list without padding (uint16 count, uint16 entries). Returns the size; writes only when it fits
 * in cap (call with cap 0 for the size). */
static size_t fgg_iq2_serialize(int which, uint8_t *out, size_t cap) {
    if (which < 0 || which > 3 || fgg_iq2_state != 1) return 0;
    const fgg_iq2_table *t = &fgg_iq2_tables[which];
    size_t at = 0;
    for (int u = 0; u < FGG_IQ2_KEYS; ++u) {
        int ok = 1;
        for (int k = 0; k < 8; ++k) ok &= ((u >> (2 * k)) & 3) <= 2;
        if (!ok) continue;
        int32_t m = t->map[u];
        int32_t v = m >= 0 ? m : -1;
        if (at + 4 <= cap) fgg_store_u32le(out + at, (uint32_t)v);
        at += 4;
        if (m >= 0) continue;
        const uint16_t *list = t->lists - m - 1;
        int n = 1;
        while (n < list[0] && list[1 + n] != list[1]) ++n; /* padding: copies of the first */
        if (at + 2 <= cap) fgg_store_u16le(out + at, (uint16_t)n);
        at += 2;
        for (int j = 0; j < n; ++j) {
            if (at + 2 <= cap) fgg_store_u16le(out + at, list[1 + j]);
            at += 2;
        }
    }
    return at;
}

/* Levels of a grid whose three stored values are lo < mid < hi. */
static int fgg__iq2_levels_u8(fgg_iq2_table *t, const uint8_t (*grid)[8], int n) {
    t->n = n;
    for (int i = 0; i < n; ++i) {
        for (int k = 0; k < 8; ++k) {
            uint8_t v = grid[i][k];
            if (v == 0x08) t->level[i][k] = 0;
            else if (v == 0x19) t->level[i][k] = 1;
            else if (v == 0x2b) t->level[i][k] = 2;
            else return -1;
        }
    }
    return 0;
}

static int fgg_iq2_init(const uint8_t (*grid256)[8], const uint8_t (*grid512)[8],
                        const uint8_t (*grid1024)[8], const int8_t (*grid2048)[8]) {
    if (fgg_iq2_state) return fgg_iq2_state > 0 ? 0 : -1;
    int ok = fgg__iq2_levels_u8(&fgg_iq2_tables[0], grid256, 256) == 0
          && fgg__iq2_levels_u8(&fgg_iq2_tables[1], grid512, 512) == 0
          && fgg__iq2_levels_u8(&fgg_iq2_tables[2], grid1024, 1024) == 0;
    if (ok) {
        fgg_iq2_table *t = &fgg_iq2_tables[3];
        t->n = 2048;
        for (int i = 0; i < 2048 && ok; ++i) {
            for (int k = 0; k < 8; ++k) {
                int v = grid2048[i][k];
                if (v < -1 || v > 1) ok = 0;
                t->level[i][k] = (uint8_t)(v + 1);
            }
        }
    }
    ok = ok && fgg__iq2_build(&fgg_iq2_tables[0], 2) == 0 && fgg__iq2_build(&fgg_iq2_tables[1], 2) == 0
            && fgg__iq2_build(&fgg_iq2_tables[2], 1) == 0 && fgg__iq2_build(&fgg_iq2_tables[3], 3) == 0;
    fgg_iq2_state = ok ? 1 : -1;
    return ok ? 0 : -1;
}

/* fgg_iq2_init for callers that hold the grids as untyped pointers (the Cython layer). */
static int fgg_iq2_init_raw(const void *grid256, const void *grid512, const void *grid1024,
                            const void *grid2048) {
    return fgg_iq2_init((const uint8_t (*)[8])grid256, (const uint8_t (*)[8])grid512,
                        (const uint8_t (*)[8])grid1024, (const int8_t (*)[8])grid2048);
}

/* A neighbour search runs in two steps, so that a block's searches can be run step by step side by
 * side (independent work then overlaps instead of each search waiting on its own long chain):
 *  fgg__iq2_dists: the distances d2 = sum_i T[i][level_i] of a list's entries, summed in
 *    coordinate order, into dv (list[0] of them). T[4i+l] is the term coordinate i adds for
 *    level l, computed once per search: the same float operations as computing every entry's
 *    terms anew. The sum starts at the first term instead of 0.0 + term: that differs only in
 *    the sign of a zero sum, which no comparison below sees.
 *  fgg__iq2_pick: the entry ggml's scan (take each distance below the best so far, from FLT_MAX)
 *    ends on: the first entry holding the smallest distance below FLT_MAX (a NaN is never
 *    taken), or the first entry when there is none. min(d, m) keeps m unless d < m, so the
 *    minimum over lanes is that distance (FLT_MAX when there is none); its first entry is then
 *    found by equality. */
#if FGG_IQ2_VEC > 1
static inline void fgg__iq2_dists(const fgg_iq2_table *t, const uint16_t *list, const float *T, float *dv) {
    const int count = list[0]; /* a multiple of FGG_IQ2_PAD */
#if FGG_IQ2_VEC == 16
    /* 16 entries per step: each lane picks its term by its level (an in-lane permute of the
     * coordinate's 4 terms; the permute reads the low 2 bits of the shifted key) */
    const uint16_t *K = t->keys + (list + 1 - t->lists);
    __m512 Tv[8];
    for (int i = 0; i < 8; ++i) Tv[i] = _mm512_broadcast_f32x4(_mm_loadu_ps(T + 4 * i));
    for (int j = 0; j < count; j += 16) {
        const __m512i k = _mm512_cvtepu16_epi32(_mm256_loadu_si256((const __m256i *)(K + j)));
        __m512 d = _mm512_permutevar_ps(Tv[0], k);
        for (int i = 1; i < 8; ++i) d = _mm512_add_ps(d, _mm512_permutevar_ps(Tv[i], _mm512_srli_epi32(k, 2 * i)));
        _mm512_storeu_ps(dv + j, d);
    }
#else
    const uint16_t *K = t->keys + (list + 1 - t->lists);
    __m256 Tv[8];
    for (int i = 0; i < 8; ++i) Tv[i] = _mm256_broadcast_ps((const __m128 *)(T + 4 * i));
    for (int j = 0; j < count; j += 8) {
        const __m256i k = _mm256_cvtepu16_epi32(_mm_loadu_si128((const __m128i *)(K + j)));
        __m256 d = _mm256_permutevar_ps(Tv[0], k);
        for (int i = 1; i < 8; ++i) d = _mm256_add_ps(d, _mm256_permutevar_ps(Tv[i], _mm256_srli_epi32(k, 2 * i)));
        _mm256_storeu_ps(dv + j, d);
    }
#endif
}

static inline int fgg__iq2_pick(const uint16_t *list, const float *dv) {
    const int count = list[0];
    const uint16_t *e = list + 1;
#if FGG_IQ2_VEC == 16
    const __m512 big = _mm512_set1_ps(FLT_MAX);
    __m512 m = big;
    for (int j = 0; j < count; j += 16) m = _mm512_min_ps(_mm512_loadu_ps(dv + j), m);
    m = _mm512_min_ps(m, _mm512_shuffle_f32x4(m, m, 0x4e)); /* every lane: the minimum */
    m = _mm512_min_ps(m, _mm512_shuffle_f32x4(m, m, 0xb1));
    m = _mm512_min_ps(m, _mm512_permute_ps(m, 0x4e));
    m = _mm512_min_ps(m, _mm512_permute_ps(m, 0xb1));
    for (int j = 0; j < count; j += 16) {
        const __m512 d = _mm512_loadu_ps(dv + j);
        unsigned hit = _mm512_mask_cmp_ps_mask(_mm512_cmp_ps_mask(d, m, _CMP_EQ_OQ), d, big, _CMP_LT_OQ);
        if (hit) return e[j + __builtin_ctz(hit)];
    }
    return e[0];
#else
    const __m256 big = _mm256_set1_ps(FLT_MAX);
    __m256 m = big;
    for (int j = 0; j < count; j += 8) m = _mm256_min_ps(_mm256_loadu_ps(dv + j), m);
    m = _mm256_min_ps(m, _mm256_permute2f128_ps(m, m, 1)); /* every lane: the minimum */
    m = _mm256_min_ps(m, _mm256_permute_ps(m, 0x4e));
    m = _mm256_min_ps(m, _mm256_permute_ps(m, 0xb1));
    for (int j = 0; j < count; j += 8) {
        const __m256 d = _mm256_loadu_ps(dv + j);
        unsigned hit = (unsigned)_mm256_movemask_ps(
            _mm256_and_ps(_mm256_cmp_ps(d, m, _CMP_EQ_OQ), _mm256_cmp_ps(d, big, _CMP_LT_OQ)));
        if (hit) return e[j + __builtin_ctz(hit)];
    }
    return e[0];
#endif
}

#else
/* The scalar build's search in one step: distances and ggml's scan together, four entries side by
 * side (the sum of each starts at its first term, as in fgg__iq2_dists). */
static inline int fgg__iq2_argmin1(const fgg_iq2_table *t, const uint16_t *list, const float *T) {
    const int count = list[0];
    const uint16_t *e = list + 1;
    float best = FLT_MAX;
    int g = e[0];
    for (int j = 0; j < count; j += 4) {
        const uint8_t *l0 = t->level[e[j]], *l1 = t->level[e[j + 1]];
        const uint8_t *l2 = t->level[e[j + 2]], *l3 = t->level[e[j + 3]];
        float d0 = T[l0[0]], d1 = T[l1[0]], d2 = T[l2[0]], d3 = T[l3[0]];
        for (int i = 1; i < 8; ++i) {
            d0 += T[4 * i + l0[i]];
            d1 += T[4 * i + l1[i]];
            d2 += T[4 * i + l2[i]];
            d3 += T[4 * i + l3[i]];
        }
        if (d0 < best) { best = d0; g = e[j]; }
        if (d1 < best) { best = d1; g = e[j + 1]; }
        if (d2 < best) { best = d2; g = e[j + 2]; }
        if (d3 < best) { best = d3; g = e[j + 3]; }
    }
    return g;
}
#endif

/* A group of 8 spread for the term tables: entry 4i+l holds coordinate i's x, weight, and the
 * value v[l] of level l (entry 4i+3 is never read; it gets level 2's). */
typedef struct {
    float x[32], w[32];
} fgg__iq2_spread;

static inline void fgg__iq2_spread_group(fgg__iq2_spread *s, const float *x, const float *w) {
    for (int i = 0; i < 8; ++i) {
        for (int l = 0; l < 4; ++l) {
            s->x[4 * i + l] = x[i];
            s->w[4 * i + l] = w[i];
        }
    }
}

static const float fgg__iq2_qv[32] = {1, 3, 5, 5, 1, 3, 5, 5, 1, 3, 5, 5, 1, 3, 5, 5,
                                      1, 3, 5, 5, 1, 3, 5, 5, 1, 3, 5, 5, 1, 3, 5, 5};

/* The terms T[4i+l] = w*(scale*v[l] - x)^2 of a search (ggml's IQ2 and IQ1 neighbour searches:
 * v = 2l+1 and sqrt weights for IQ2, the shifted IQ1 values and weights for IQ1). */
static inline void fgg__iq2_terms(const fgg__iq2_spread *s, const float *v32, float scale, float *T) {
#if FGG_IQ_SIMD
    const fgg_iq_vf sc = fgg_iq_splat(scale);
    for (int i = 0; i < 32; i += FGG_IQ_W) {
        const fgg_iq_vf diff = sc * fgg_iq_loadu(v32 + i) - fgg_iq_loadu(s->x + i);
        const fgg_iq_vf term = fgg_iq_loadu(s->w + i) * diff * diff;
        memcpy(T + i, &term, sizeof term);
    }
#else
    for (int i = 0; i < 32; ++i) {
        float diff = scale * v32[i] - s->x[i];
        T[i] = s->w[i] * diff * diff;
    }
#endif
}

/* The list entry of smallest sum w*(scale*v[l] - x)^2 over the 8 coordinates. */
static inline int fgg__iq2_search(const fgg_iq2_table *t, const uint16_t *list, const fgg__iq2_spread *s,
                                  const float *v32, float scale) {
    float T[32];
    fgg__iq2_terms(s, v32, scale, T);
#if FGG_IQ2_VEC == 1
    return fgg__iq2_argmin1(t, list, T);
#else
    float dv[FGG_IQ2_MAXLIST];
    fgg__iq2_dists(t, list, T, dv);
    return fgg__iq2_pick(list, dv);
#endif
}

/* The key of 8 values' levels at inverse scale id. */
static inline int32_t fgg__iq2_levels_key(const float *x, float id) {
    int32_t u = 0;
    for (int i = 0; i < 8; ++i) {
        int l = fgg_iq_nearest_int(0.5f * (id * x[i] - 1.0f));
        l = l < 0 ? 0 : l > 2 ? 2 : l;
        u |= l << (2 * i);
    }
    return u;
}

/* Signs of n values (a multiple of 8, at most 32) by groups of 8: xa gets |x| (x >= 0 kept as
 * is), signs[k] the sign bits of group k. With parity, a group's odd count of negatives is made
 * even by flipping back the value of smallest w*x*x (the first on ties). Branch-free: the signs
 * are data, a branch on them would be mispredicted half the time. */
static inline void fgg__iq2_signs(int n, const float *x, const float *w, float *xa, unsigned *signs, int parity) {
    uint32_t bits = 0;
#if FGG_IQ_SIMD
    for (int i = 0; i < n; i += FGG_IQ_W) {
        const fgg_iq_vf v = fgg_iq_loadu(x + i);
        const fgg_iq_vi neg = ~(v >= fgg_iq_splat(0.0f)); /* NaN too: ggml's else branch */
        const fgg_iq_vf a = (fgg_iq_vf)((fgg_iq_vi)v ^ (neg & INT32_MIN));
        memcpy(xa + i, &a, sizeof a);
        bits |= (uint32_t)fgg_iq_bits(neg) << i;
    }
#else
    for (int i = 0; i < n; ++i) {
        const int neg = !(x[i] >= 0);
        xa[i] = neg ? -x[i] : x[i];
        bits |= (uint32_t)neg << i;
    }
#endif
    for (int k = 0; k < n / 8; ++k) {
        unsigned s = (bits >> (8 * k)) & 255u;
        if (parity) {
            const float *xk = x + 8 * k, *wk = w + 8 * k;
            int at = 0;
            float least = wk[0] * xk[0] * xk[0];
            for (int i = 1; i < 8; ++i) {
                const float v = wk[i] * xk[i] * xk[i];
                const int less = v < least;
                least = less ? v : least;
                at = less ? i : at;
            }
            const unsigned odd = (unsigned)__builtin_parity(s);
            float *f = xa + 8 * k + at;
            *f = odd ? -*f : *f;
            s ^= odd << at;
        }
        signs[k] = s;
    }
}

/* sw = sqrtf(w) for n values (a multiple of 16): the SSE/AVX square roots are IEEE correctly
 * rounded, as sqrtf is (which the compiler does not vectorize: it may set errno). */
static inline void fgg__iq2_sqrt(int n, const float *w, float *sw) {
#if FGG_Q_X86_SQRT && FGG_HAVE_AVX512
    for (int i = 0; i < n; i += 16) _mm512_storeu_ps(sw + i, _mm512_sqrt_ps(_mm512_loadu_ps(w + i)));
#elif FGG_Q_X86_SQRT && FGG_HAVE_AVX
    for (int i = 0; i < n; i += 8) _mm256_storeu_ps(sw + i, _mm256_sqrt_ps(_mm256_loadu_ps(w + i)));
#elif FGG_Q_X86_SQRT
    for (int i = 0; i < n; i += 4) _mm_storeu_ps(sw + i, _mm_sqrt_ps(_mm_loadu_ps(w + i)));
#else
    for (int i = 0; i < n; ++i) sw[i] = sqrtf(w[i]);
#endif
}

static inline float fgg__iq2_sumsq(const float *x) {
    float s = 0.0f;
    for (int i = 0; i < 256; ++i) s += x[i] * x[i];
    return s;
}

/* fgg__iq2_sumsq of the m super-blocks at x, x + 256, ...: four at a time side by side (each
 * sum still left to right; one alone is a chain of 256 dependent additions). */
static inline void fgg__iq2_sumsq_n(const float *x, int64_t m, float *out) {
    int64_t j = 0;
    for (; j + 4 <= m; j += 4) {
        const float *a = x + 256 * j;
        float s0 = 0.0f, s1 = 0.0f, s2 = 0.0f, s3 = 0.0f;
        for (int i = 0; i < 256; ++i) {
            s0 += a[i] * a[i];
            s1 += a[256 + i] * a[256 + i];
            s2 += a[512 + i] * a[512 + i];
            s3 += a[768 + i] * a[768 + i];
        }
        out[j] = s0;
        out[j + 1] = s1;
        out[j + 2] = s2;
        out[j + 3] = s3;
    }
    for (; j < m; ++j) out[j] = fgg__iq2_sumsq(x + 256 * j);
}

#if FGG_IQ_SIMD
typedef uint32_t fgg__iq2_vu __attribute__((vector_size(4 * FGG_IQ_W))); /* wrapping key sums */

/* q = 2l+1 of each lane's level in key bits 2i, 2i+1 (an in-lane table lookup where the ISA has
 * one). */
FGG_IQ_INLINE fgg_iq_vf fgg__iq2_q(fgg_iq_vi key, int i) {
#if FGG_IQ2_VEC == 16
    __m512i k;
    memcpy(&k, &key, sizeof k);
    const __m512 q = _mm512_permutevar_ps(_mm512_set4_ps(5, 5, 3, 1), _mm512_srli_epi32(k, 2 * i));
    fgg_iq_vf r;
    memcpy(&r, &q, sizeof r);
    return r;
#elif FGG_IQ2_VEC == 8
    __m256i k;
    memcpy(&k, &key, sizeof k);
    const __m256 q = _mm256_permutevar_ps(_mm256_setr_ps(1, 3, 5, 5, 1, 3, 5, 5), _mm256_srli_epi32(k, 2 * i));
    fgg_iq_vf r;
    memcpy(&r, &q, sizeof r);
    return r;
#else
    return __builtin_convertvector(((key >> (2 * i)) & 3) * 2 + 1, fgg_iq_vf);
#endif
}
#endif

/* Candidate scales of one block, evaluated side by side (the loops over candidates are plain
 * loops the compiler turns into vector code; each candidate's arithmetic is ggml's, in order). */
#define FGG_IQ2_LANES 32

typedef struct {
    float id[FGG_IQ2_LANES];      /* inverse scale */
    float scale[FGG_IQ2_LANES];   /* 1/id */
    int32_t key[4][FGG_IQ2_LANES]; /* levels of each group of 8: as rounded, then the grid point's */
    uint32_t on[4];               /* bit c: group on the grid as rounded for candidate c */
    float sumqx[FGG_IQ2_LANES], sumq2[FGG_IQ2_LANES];
    fgg__iq2_spread sp[4];        /* the groups spread for the searches' terms */
} fgg__iq2_cands;

/* Run ns searches: search j takes list t->lists + soff[j], group sat[j] / FGG_IQ2_LANES (its
 * spread sp[...]) at scale[sat[j] % FGG_IQ2_LANES], and writes the key of the grid point found to
 * keys[sat[j]]. All distances of a batch are computed first, then all picks. */
static inline void fgg__iq2_run(const fgg_iq2_table *t, int ns, const int32_t *soff, const int32_t *sat,
                                const fgg__iq2_spread *sp, const float *scale, int32_t *keys) {
#if FGG_IQ2_VEC == 1
    for (int j = 0; j < ns; ++j) {
        const int32_t a = sat[j];
        keys[a] = t->gkey[fgg__iq2_search(t, t->lists + soff[j], &sp[a / FGG_IQ2_LANES], fgg__iq2_qv, scale[a % FGG_IQ2_LANES])];
    }
#else
    float dv[4 * FGG_IQ2_MAXLIST];
    int dat[4 * FGG_IQ2_LANES];
    for (int j = 0; j < ns;) {
        int end = j, used = 0;
        for (; end < ns && used + t->lists[soff[end]] <= 4 * FGG_IQ2_MAXLIST; ++end) {
            const int32_t a = sat[end];
            float T[32];
            fgg__iq2_terms(&sp[a / FGG_IQ2_LANES], fgg__iq2_qv, scale[a % FGG_IQ2_LANES], T);
            /* the distances read T back from memory: their broadcasts are then loads, where the
             * compiler would otherwise make them shuffles on the port the permutes need */
            __asm__ volatile("" : : "r"(T) : "memory");
            fgg__iq2_dists(t, t->lists + soff[end], T, dv + used);
            dat[end] = used;
            used += t->lists[soff[end]];
        }
        for (; j < end; ++j) keys[sat[j]] = t->gkey[fgg__iq2_pick(t->lists + soff[j], dv + dat[j])];
    }
#endif
}

/* sumqx = sum (w*x)*q, sumq2 = sum (w*q)*q over n values in order, q = 2l+1 of the levels in
 * the keys of candidate column c. */
static inline void fgg__iq2_sums(const fgg__iq2_cands *C, int c, int n, const float *x, const float *w,
                                 float *sumqx, float *sumq2) {
    float sx = 0.0f, s2 = 0.0f;
    for (int i = 0; i < n; ++i) {
        const float q = (float)(2 * ((C->key[i / 8][c] >> (2 * (i % 8))) & 3) + 1);
        sx += w[i] * x[i] * q;
        s2 += w[i] * q * q;
    }
    *sumqx = sx;
    *sumq2 = s2;
}

/* n values (16 or 32) with weights w, sqrt weights sw; nc candidates (<= lanes). */
static inline void fgg__iq2_eval(const fgg_iq2_table *t, fgg__iq2_cands *C, int n, int nc, int lanes,
                                 int is0, float den, const float *xv, const float *w, const float *sw) {
    /* candidate c: id = (5 + is*0.1)/den, is = is0 + c (lanes past nc repeat the last one) */
#if FGG_IQ_SIMD
    lanes = (nc + FGG_IQ_W - 1) / FGG_IQ_W * FGG_IQ_W; /* whole vectors (<= 32) */
    for (int v = 0; v < lanes; v += FGG_IQ_W) {
        fgg_iq_vf is;
        for (int l = 0; l < FGG_IQ_W; ++l) is[l] = (float)(is0 + (v + l < nc ? v + l : nc - 1));
        const fgg_iq_vf id = (fgg_iq_splat(5.0f) + is * fgg_iq_splat(0.1f)) / fgg_iq_splat(den);
        const fgg_iq_vf scale = fgg_iq_splat(1.0f) / id;
        memcpy(C->id + v, &id, sizeof id);
        memcpy(C->scale + v, &scale, sizeof scale);
    }
#else
    for (int c = 0; c < lanes; ++c) {
        C->id[c] = (5 + (is0 + (c < nc ? c : nc - 1)) * 0.1f) / den;
        C->scale[c] = 1 / C->id[c];
    }
#endif
    /* levels l = nearest_int(0.5*(id*x - 1)) clamped to 0..2, packed into one key per group */
#if FGG_IQ_SIMD
    for (int v = 0; v < lanes; v += FGG_IQ_W) {
        const fgg_iq_vf idv = fgg_iq_loadu(C->id + v);
        const fgg_iq_vf half = fgg_iq_splat(0.5f), one = fgg_iq_splat(1.0f), magic = fgg_iq_splat(12582912.0f);
        for (int k = 0; k < n / 8; ++k) {
            /* the low mantissa bits of val hold l + 0x400000: clamped as they are, summed into
             * the key, and the 8 offsets taken off once (mod 2^32) */
            fgg__iq2_vu key = {0};
            for (int i = 0; i < 8; ++i) {
                const fgg_iq_vf val = half * (idv * fgg_iq_splat(xv[8 * k + i]) - one) + magic;
                key += (fgg__iq2_vu)fgg_q_clamp8(((fgg_iq_vi)val & 0x007fffff), 0x00400000, 0x00400002) << (2 * i);
            }
            key -= 0x00400000u * 0x5555u;
            memcpy(C->key[k] + v, &key, sizeof key);
        }
    }
#else
    for (int k = 0; k < n / 8; ++k) {
        for (int c = 0; c < lanes; ++c) C->key[k][c] = fgg__iq2_levels_key(xv + 8 * k, C->id[c]);
    }
#endif
    /* The searches of the groups off the grid, listed first (branch-free: which groups are off
     * the grid is data) and then run side by side: list offset and flat index k*LANES+c of
     * each. Each replaces its key with the found grid point's. */
    int32_t soff[4 * FGG_IQ2_LANES + 16], sat[4 * FGG_IQ2_LANES + 16];
    int ns = 0;
    for (int k = 0; k < n / 8; ++k) {
        C->on[k] = 0;
#if FGG_IQ2_VEC == 16
        /* 16 map look-ups in one gather; the off-grid lanes compressed to the front */
        for (int v = 0; v < nc; v += 16) {
            const __mmask16 valid = (__mmask16)(nc - v >= 16 ? 0xffff : (1u << (nc - v)) - 1);
            const __m512i g = _mm512_i32gather_epi32(_mm512_loadu_si512(C->key[k] + v), t->map, 4);
            const __mmask16 off = _mm512_mask_cmplt_epi32_mask(valid, g, _mm512_setzero_si512());
            const __m512i at = _mm512_add_epi32(_mm512_set1_epi32(k * FGG_IQ2_LANES + v),
                                                _mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15));
            _mm512_storeu_si512(soff + ns, _mm512_maskz_compress_epi32(off, _mm512_sub_epi32(_mm512_set1_epi32(-1), g)));
            _mm512_storeu_si512(sat + ns, _mm512_maskz_compress_epi32(off, at));
            C->on[k] |= (uint32_t)(valid & ~off) << v;
            ns += __builtin_popcount(off);
        }
#else
        uint32_t on = 0;
        for (int c = 0; c < nc; ++c) {
            const int g = t->map[C->key[k][c]];
            const int off = g < 0;
            on |= (uint32_t)!off << c;
            soff[ns] = off ? -g - 1 : 0;
            sat[ns] = k * FGG_IQ2_LANES + c;
            ns += off;
        }
        C->on[k] = on;
#endif
    }
    for (int k = 0; k < n / 8; ++k) fgg__iq2_spread_group(&C->sp[k], xv + 8 * k, sw + 8 * k);
    fgg__iq2_run(t, ns, soff, sat, C->sp, C->scale, &C->key[0][0]);
    /* sumqx = sum (w*x)*q, sumq2 = sum (w*q)*q over the values in order, q = 2l+1 */
#if FGG_IQ_SIMD
    for (int v = 0; v < lanes; v += FGG_IQ_W) {
        fgg_iq_vf sx = fgg_iq_splat(0.0f), s2 = sx;
        for (int k = 0; k < n / 8; ++k) {
            fgg_iq_vi key;
            memcpy(&key, C->key[k] + v, sizeof key);
            for (int i = 0; i < 8; ++i) {
                const float *wk = w + 8 * k, *xk = xv + 8 * k;
                const fgg_iq_vf wx = fgg_iq_splat(wk[i] * xk[i]), wi = fgg_iq_splat(wk[i]);
                const fgg_iq_vf q = fgg__iq2_q(key, i);
                sx += wx * q;
                s2 += wi * q * q;
            }
        }
        memcpy(C->sumqx + v, &sx, sizeof sx);
        memcpy(C->sumq2 + v, &s2, sizeof s2);
    }
#else
    for (int c = 0; c < lanes; ++c) fgg__iq2_sums(C, c, n, xv, w, &C->sumqx[c], &C->sumq2[c]);
#endif
}

/* ggml's choice among the nc candidates, in order: c is taken when sumq2 > 0 and
 * sumqx^2 > best*sumq2 (best from 0), giving scale = sumqx/sumq2 and best = scale*sumqx. Those
 * quotients and products are computed for every lane first (in vectors); the scan is then
 * branch-free (which candidates are taken is data). Returns the last taken (-1: none, *scale
 * kept). */
static inline int fgg__iq2_choose(const fgg__iq2_cands *C, int nc, float *scale) {
    float q[FGG_IQ2_LANES], b[FGG_IQ2_LANES];
#if FGG_IQ_SIMD
    for (int v = 0; v < nc; v += FGG_IQ_W) {
        const fgg_iq_vf sx = fgg_iq_loadu(C->sumqx + v), qv = sx / fgg_iq_loadu(C->sumq2 + v), bv = qv * sx;
        memcpy(q + v, &qv, sizeof qv);
        memcpy(b + v, &bv, sizeof bv);
    }
#else
    for (int c = 0; c < nc; ++c) {
        q[c] = C->sumqx[c] / C->sumq2[c];
        b[c] = q[c] * C->sumqx[c];
    }
#endif
    float best = 0.0f, s = *scale;
    int taken = -1;
    for (int c = 0; c < nc; ++c) {
        const int take = (C->sumq2[c] > 0) & (C->sumqx[c] * C->sumqx[c] > best * C->sumq2[c]);
        best = take ? b[c] : best;
        s = take ? q[c] : s;
        taken = take ? c : taken;
    }
    *scale = s;
    return taken;
}

/* Place the groups k with bit k of `which` again at inverse scale id, into candidate column c of
 * C (its keys; its scale becomes `scale`): the key of their levels, or of the list entry nearest at
 * `scale` when off the grid (the searches side by side). */
static inline void fgg__iq2_replace(const fgg_iq2_table *t, fgg__iq2_cands *C, const float *xv, int ngroups,
                                    unsigned which, int c, float id, float scale) {
    int32_t soff[4], sat[4], u[4];
    int ns = 0;
    C->scale[c] = scale;
#if FGG_IQ_SIMD
    /* the levels of all groups in vectors (lanes = values), each shifted to its place in the key;
     * a group's key is then the sum of its 8 lanes */
    uint32_t part[32];
    for (int i = 0; i < 8 * ngroups; i += FGG_IQ_W) {
        const fgg_iq_vf val = fgg_iq_splat(0.5f) * (fgg_iq_splat(id) * fgg_iq_loadu(xv + i) - fgg_iq_splat(1.0f))
                              + fgg_iq_splat(12582912.0f);
        fgg__iq2_vu sh;
        for (int l = 0; l < FGG_IQ_W; ++l) sh[l] = (uint32_t)(2 * ((i + l) % 8));
        const fgg__iq2_vu lv = (fgg__iq2_vu)fgg_q_clamp8(((fgg_iq_vi)val & 0x007fffff), 0x00400000, 0x00400002)
                               - 0x00400000u;
        const fgg__iq2_vu pv = lv << sh;
        memcpy(part + i, &pv, sizeof pv);
    }
    for (int k = 0; k < ngroups; ++k) {
        const uint32_t *p = part + 8 * k;
        u[k] = (int32_t)((p[0] | p[1]) | (p[2] | p[3]) | ((p[4] | p[5]) | (p[6] | p[7])));
    }
#else
    for (int k = 0; k < ngroups; ++k) u[k] = fgg__iq2_levels_key(xv + 8 * k, id);
#endif
    for (int k = 0; k < ngroups; ++k) {
        if (!((which >> k) & 1)) continue;
        const int g = t->map[u[k]];
        C->key[k][c] = u[k];
        soff[ns] = g < 0 ? -g - 1 : 0;
        sat[ns] = k * FGG_IQ2_LANES + c;
        ns += g < 0;
    }
    fgg__iq2_run(t, ns, soff, sat, C->sp, C->scale, &C->key[0][0]);
}

/* One 16-value block of IQ2_XS / IQ2_S: returns the scale (0 for a block below eps), and the
 * two grid indices and sign bytes. */
static float fgg__iq2_block16(const fgg_iq2_table *t, const float *xb, const float *w, int parity,
                              float eps, int *grid, unsigned *signs) {
    float sw[16], xv[16];
    fgg__iq2_sqrt(16, w, sw);
    fgg__iq2_signs(16, xb, w, xv, signs, parity);
    if (parity) {
        signs[0] &= 127;
        signs[1] &= 127;
    }
    float vmax = xv[0];
    for (int i = 1; i < 16; ++i) vmax = vmax > xv[i] ? vmax : xv[i];
    grid[0] = grid[1] = 0;
    if (vmax < eps) {
        signs[0] = signs[1] = 0; /* ggml writes nothing for this block */
        return 0.0f;
    }

    float scale = vmax / 5;
    fgg__iq2_cands C;
    fgg__iq2_eval(t, &C, 16, 19, 24, -9, vmax, xv, w, sw);
    int taken = fgg__iq2_choose(&C, 19, &scale);
    int32_t keys[2] = {0, 0}; /* no candidate taken: levels 0 (ggml's) */
    if (taken >= 0) {
        const unsigned which = (~C.on[0] >> taken & 1u) | (~C.on[1] >> taken & 1u) << 1;
        if (which && scale > 0) {
            fgg__iq2_replace(t, &C, xv, 2, which, taken, 1 / scale, scale);
            float sumqx, sumq2;
            fgg__iq2_sums(&C, taken, 16, xv, w, &sumqx, &sumq2);
            if (sumq2 > 0) scale = sumqx / sumq2;
        }
        keys[0] = C.key[0][taken];
        keys[1] = C.key[1][taken];
    }
    if (scale < 0) {
        scale = -scale;
        signs[0] = ~signs[0] & (parity ? 127u : 255u);
        signs[1] = ~signs[1] & (parity ? 127u : 255u);
    }
    /* always on the grid here; a negative would mean a broken table */
    for (int k = 0; k < 2; ++k) {
        const int g = t->map[keys[k]];
        grid[k] = g < 0 ? 0 : g;
    }
    return scale;
}

static inline int fgg__iq2_scale_level(float id, float scale) {
    int l = fgg_iq_nearest_int(0.5f * (id * scale - 1));
    return l < 0 ? 0 : l > 15 ? 15 : l;
}

/* One super-block of IQ2_XS (is_s == 0, 74 bytes) or IQ2_S (is_s == 1, 82 bytes). */
static void fgg__iq2_xs_s_superblock(const float *x, float sumx2, uint8_t *blk, const float *qw, int is_s) {
    const fgg_iq2_table *t = &fgg_iq2_tables[is_s ? 2 : 1];
    float sigma2 = is_s ? 2 * sumx2 / 256 : sumx2 / 256;
    float scales[16];
    int grid[16][2];
    unsigned signs[16][2];
    float max_scale = 0.0f;
    for (int ib = 0; ib < 16; ++ib) {
        const float *xb = x + 16 * ib;
        float w[16];
        if (qw) {
            fgg_q_rms_weights(16, qw + 16 * ib, xb, sigma2, w);
        } else {
            for (int i = 0; i < 16; ++i) w[i] = 0.25f * sigma2 + xb[i] * xb[i];
        }
        float s = fgg__iq2_block16(t, xb, w, !is_s, is_s ? 1e-8f : 1e-15f, grid[ib], signs[ib]);
        scales[ib] = s;
        max_scale = max_scale > s ? max_scale : s;
    }
    if (is_s) {
        /* grid bytes and signs are written even when every scale is 0, as ggml does */
        memset(blk, 0, 82);
        uint8_t *qs = blk + 2, *sg = blk + 2 + 32, *qh = blk + 66, *sc = blk + 74;
        for (int ib = 0; ib < 16; ++ib) {
            for (int k = 0; k < 2; ++k) {
                int i8 = 2 * ib + k;
                qs[i8] = (uint8_t)(grid[ib][k] & 255);
                qh[i8 / 4] |= (uint8_t)((grid[ib][k] >> 8) << (2 * (i8 % 4)));
                sg[i8] = (uint8_t)signs[ib][k];
            }
        }
        if (!max_scale) return;
        float d = max_scale / 31;
        fgg_store_u16le(blk, fgg_float_to_half(d * 0.9875f));
        float id = 1 / d;
        for (int ib = 0; ib < 16; ++ib) {
            int l = fgg__iq2_scale_level(id, scales[ib]);
            sc[ib / 2] |= (uint8_t)(ib % 2 ? l << 4 : l);
        }
    } else {
        memset(blk, 0, 74);
        if (!max_scale) return;
        for (int ib = 0; ib < 16; ++ib) {
            for (int k = 0; k < 2; ++k) {
                unsigned v = (unsigned)grid[ib][k] | (signs[ib][k] << 9);
                fgg_store_u16le(blk + 2 + 2 * (2 * ib + k), (uint16_t)v);
            }
        }
        float d = max_scale / 31;
        fgg_store_u16le(blk, fgg_float_to_half(d));
        float id = 1 / d;
        for (int ib = 0; ib < 16; ++ib) {
            int l = fgg__iq2_scale_level(id, scales[ib]);
            blk[66 + ib / 2] |= (uint8_t)(ib % 2 ? l << 4 : l);
        }
    }
}

/* One 32-value block of IQ2_XXS: returns the scale, the four grid indices and sign groups. */
static float fgg__iq2_xxs_block(const fgg_iq2_table *t, const float *xb, const float *w,
                                int *grid, unsigned *signs) {
    float sw[32], xv[32];
    fgg__iq2_sqrt(32, w, sw);
    fgg__iq2_signs(32, xb, w, xv, signs, 1);
    for (int k = 0; k < 4; ++k) signs[k] &= 127;
    grid[0] = grid[1] = grid[2] = grid[3] = 0;
    float vmax = xv[0];
    for (int i = 1; i < 32; ++i) vmax = vmax > xv[i] ? vmax : xv[i];
    if (vmax < 1e-15f) {
        memset(signs, 0, 4 * sizeof *signs); /* ggml writes nothing for this block */
        return 0.0f;
    }
    uint8_t Lfit[32];
    float scale = fgg_q_fit_pos(32, 4, xv, Lfit, w);
    float eff_max = scale * 3;
    if (eff_max <= 0) {
        memset(signs, 0, 4 * sizeof *signs);
        return 0.0f;
    }
    fgg__iq2_cands C;
    fgg__iq2_eval(t, &C, 32, 13, 16, -6, eff_max, xv, w, sw);
    int taken = fgg__iq2_choose(&C, 13, &scale);
    if (scale > 0) { /* every group placed again (into column 0 if none was taken) */
        taken = taken >= 0 ? taken : 0;
        fgg__iq2_replace(t, &C, xv, 4, 15u, taken, 1 / scale, scale);
        float sumqx, sumq2;
        fgg__iq2_sums(&C, taken, 32, xv, w, &sumqx, &sumq2);
        if (sumq2 > 0) scale = sumqx / sumq2;
    } else if (taken < 0) { /* unreachable: scale <= 0 only after a candidate was taken */
        memset(signs, 0, 4 * sizeof *signs);
        return 0.0f;
    }
    if (scale < 0) {
        scale = -scale;
        for (int k = 0; k < 4; ++k) signs[k] = ~signs[k] & 127u;
    }
    for (int k = 0; k < 4; ++k) {
        const int g = t->map[C.key[k][taken]];
        grid[k] = g < 0 ? 0 : g;
    }
    return scale;
}

static void fgg__iq2_xxs_superblock(const float *x, float sumx2, uint8_t *blk, const float *qw) {
    const fgg_iq2_table *t = &fgg_iq2_tables[0];
    float sigma2 = sumx2 / 256;
    float scales[8];
    uint32_t q2[16];
    memset(q2, 0, sizeof q2);
    memset(blk, 0, 66);
    float max_scale = 0.0f;
    for (int ib = 0; ib < 8; ++ib) {
        const float *xb = x + 32 * ib;
        float w[32];
        fgg_q_rms_weights(32, qw + 32 * ib, xb, sigma2, w);
        int grid[4];
        unsigned signs[4];
        float s = fgg__iq2_xxs_block(t, xb, w, grid, signs);
        scales[ib] = s;
        for (int k = 0; k < 4; ++k) {
            q2[2 * ib] |= (uint32_t)grid[k] << (8 * k);
            q2[2 * ib + 1] |= (uint32_t)signs[k] << (7 * k);
        }
        max_scale = max_scale > s ? max_scale : s;
    }
    if (!max_scale) return;
    float d = max_scale / 31;
    fgg_store_u16le(blk, fgg_float_to_half(d));
    float id = 1 / d;
    for (int ib = 0; ib < 8; ++ib) q2[2 * ib + 1] |= (uint32_t)fgg__iq2_scale_level(id, scales[ib]) << 28;
    for (int i = 0; i < 16; ++i) fgg_store_u32le(blk + 2 + 4 * i, q2[i]);
}

/* The rows' super-blocks of 256 values: nbytes each, from sb(x, sum of x^2, block, imatrix part)
 * (the sums of a row computed first, side by side). Without an importance matrix when `need`,
 * zero blocks (the callers reject that case before). */
static inline void fgg__iq2_rows(const float *src, uint8_t *dst, int64_t n_rows, int64_t n_per_row,
                                 const float *imatrix, int need, size_t nbytes,
                                 void (*sb)(const float *, float, uint8_t *, const float *, int), int arg) {
    const int64_t nb = n_per_row / 256;
    for (int64_t r = 0; r < n_rows; ++r) {
        const float *x = src + r * n_per_row;
        uint8_t *out = dst + (size_t)(r * nb) * nbytes;
        if (need && !imatrix) {
            memset(out, 0, (size_t)nb * nbytes);
            continue;
        }
        for (int64_t b0 = 0; b0 < nb; b0 += 16) {
            float sums[16];
            const int64_t m = nb - b0 < 16 ? nb - b0 : 16;
            fgg__iq2_sumsq_n(x + 256 * b0, m, sums);
            for (int64_t b = b0; b < b0 + m; ++b) {
                sb(x + 256 * b, sums[b - b0], out + (size_t)b * nbytes, imatrix ? imatrix + 256 * b : NULL, arg);
            }
        }
    }
}

static void fgg__iq2_xxs_sb(const float *x, float sumx2, uint8_t *blk, const float *qw, int arg) {
    (void)arg;
    fgg__iq2_xxs_superblock(x, sumx2, blk, qw);
}

static void fgg_quantize_iq2_xxs(const float *src, uint8_t *dst, int64_t n_rows, int64_t n_per_row,
                                 const float *imatrix) {
    fgg__iq2_rows(src, dst, n_rows, n_per_row, imatrix, 1, 66, fgg__iq2_xxs_sb, 0);
}

static void fgg_quantize_iq2_xs(const float *src, uint8_t *dst, int64_t n_rows, int64_t n_per_row,
                                const float *imatrix) {
    fgg__iq2_rows(src, dst, n_rows, n_per_row, imatrix, 1, 74, fgg__iq2_xs_s_superblock, 0);
}

static void fgg_quantize_iq2_s(const float *src, uint8_t *dst, int64_t n_rows, int64_t n_per_row,
                               const float *imatrix) {
    fgg__iq2_rows(src, dst, n_rows, n_per_row, imatrix, 0, 82, fgg__iq2_xs_s_superblock, 1);
}

#endif /* FGG_QUANT_IQ2_H */
