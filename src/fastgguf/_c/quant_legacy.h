/* Quantizers of the legacy 32-element block types Q4_0, Q4_1, Q5_0, Q5_1, Q8_0, Q8_1.
 *
 * Target: the bytes of ggml's quantize_<type>(src, dst, nrow, n_per_row, imatrix) as ggml-base
 * is built (no -march, -ffp-contract=off). Every float32 operation below happens in the order
 * that decides those bits: sums run left to right, products group as written, scale inverses
 * are multiplied or divided where ggml multiplies or divides, and rounding uses the rule of the
 * step in question (fgg_iq_nearest_int, round-half-away, or truncation; quant_common.h). Compiled with
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
 */
#ifndef FGG_QUANT_LEGACY_H
#define FGG_QUANT_LEGACY_H

#include "quant_common.h"

#if FGG_IQ_SIMD && FGG_HAVE_AVX2
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
    for (int b = 0; b < 8; ++b) fgg_store_u16le(p + b * stride, h[b]);
}
#endif

/* ---- Q4_0 / Q5_0: d = (signed value of largest magnitude) / -2^(bits-1) ---- */

#if FGG_IQ_SIMD && FGG_HAVE_AVX2
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
#if FGG_IQ_SIMD && FGG_HAVE_AVX2
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
                fgg_store_u16le(blk, fgg_float_to_half(d[k]));
                uint8_t *q = blk + 2;
                if (affine) {
                    fgg_store_u16le(blk + 2, fgg_float_to_half(-neg_min[k]));
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
    fgg_iq_vf lo = fgg_q_splat8(FLT_MAX), up = fgg_q_splat8(-FLT_MAX);
    for (int j = 0; j < 32; j += FGG_IQ_W) {
        fgg_iq_vf v;
        memcpy(&v, x + j, sizeof v);
        lo = fgg_iq_select(v < lo, v, lo);
        up = fgg_iq_select(v > up, v, up);
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

#if FGG_IQ_SIMD && FGG_HAVE_AVX2
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
#if FGG_IQ_SIMD && FGG_HAVE_AVX2
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

#if FGG_IQ_SIMD && FGG_HAVE_AVX2
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
        fgg_store_u16le(blk, fgg_float_to_half(d));
        fgg_store_u16le(blk + 2, fgg_float_to_half((float)sum * d));
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
            fgg_store_u16le(y, fgg_float_to_half(fgg__q_block_q8(x, (int8_t *)(y + 2))));
            continue;
        }
        uint8_t *qs = y + (affine ? 4 : 2) + (bits == 5 ? 4 : 0), *out = bits == 4 ? qs : lv;
        float d, m = 0.0f;
        if (affine) fgg__q_block_affine(x, bits, out, &d, &m);
        else d = fgg__q_block_sym(x, 1 << (bits - 1), out);
        fgg_store_u16le(y, fgg_float_to_half(d));
        if (affine) fgg_store_u16le(y + 2, fgg_float_to_half(m));
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
#if FGG_IQ_SIMD && FGG_HAVE_AVX2
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
