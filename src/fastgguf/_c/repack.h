/* Weights repacked for the integer path: 16 weight rows interleaved, 4 bytes at a time.
 *
 * The row kernels (dot.h) meet one weight row at a time: per block of 32 values they unpack its
 * 16 or 32 bytes, make 8 int32 lanes (lane k: values 4k..4k+3), and take one 8-float step per row
 * of x. At one row of x that step runs on a 256-bit vector, and the unpacking is paid for every
 * row of x the weight row meets only once. Interleaved, a 512-bit vector holds group k of 16
 * weight rows (4 bytes each): one vpdpbusd against x's 4 bytes of group k broadcast makes lane k
 * of 16 weight rows, and the float step acc[k] + lane * (d_w * d_x) runs for 16 rows at once, the
 * 16 scales converted by one vcvtph2ps. So a block of 16 rows costs 8 vpdpbusd and 24 float
 * operations per row of x, about half of what 16 row kernels spend, and nothing is summed across
 * lanes until the end. The integers and each float operation are the row kernels', in the same
 * order, so the results are the same bits.
 *
 * The layout (one tile = 16 weight rows, its blocks one after the other; a tile block holds
 * block b of the 16 rows, missing rows of a last tile zeros), for the per-32 types Q8_0, Q4_0,
 * Q5_0, Q4_1, Q5_1, IQ4_NL and MXFP4, the same bytes per row as the original blocks:
 *   scales:  16 f16 d (MXFP4: 16 E8M0 bytes), then for Q4_1 and Q5_1 16 f16 m
 *   Q5_0/Q5_1: 64 bytes of fifth bits: row r's 4 bytes at 4r, byte i's bit k = the fifth bit of
 *            value 4k + i (qh bit 4k + i)
 *   values:  the nibble types 4 chunks of 64 bytes: chunk j holds row r's qs[4j .. 4j + 3] at 4r,
 *            so its low nibbles are group j (values 4j..4j+3) and its high nibbles group j + 4;
 *            Q8_0 8 chunks of 64 bytes: chunk k holds row r's q[4k .. 4k + 3] at 4r.
 * The kernels take each value as an unsigned code u with v = u - c (Q4_0: c = 8, Q5_0: 16, Q8_0:
 * the byte's bits plus 128, c = 128, IQ4_NL and MXFP4: table value + 128, c = 128, Q4_1 and Q5_1:
 * c = 0), so a lane is vpdpbusd(-c * sum of x's group k, u, x) with x's sums made once per call.
 * The K kinds Q2_K to Q6_K and IQ4_XS (x per 256, fgg_mm_q8k) have layouts of their own below
 * (fgg_rp_pack_block_q45_k, _q6_k, _iq4_xs, _q23_k): their integer totals per super-block, then the row
 * kernels' float steps, 16 rows wide. */
#ifndef FGG_REPACK_H
#define FGG_REPACK_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "dot.h"
#include "type_table.h"

#define FGG_RP_ROWS 16
/* The K kinds here (the per-32 kinds are dot.h's FGG_MM_B_*) */
#define FGG_RP_Q4_K 100
#define FGG_RP_Q6_K 101
#define FGG_RP_Q5_K 102
#define FGG_RP_IQ4_XS 103
#define FGG_RP_Q3_K 104
#define FGG_RP_Q2_K 105

/* Bytes of a tile's blocks that one span takes (in L1 for every row of x that meets it). */
#define FGG_RP_SPAN_BYTES (16 * 1024)

/* How far ahead of its blocks a tile is prefetched (the next tile follows it in memory). */
#ifndef FGG_RP_PREFETCH
#define FGG_RP_PREFETCH 2048
#endif

/* Blocks per span of a tile whose blocks take tbb bytes: FGG_RP_SPAN_BYTES of them, at least least. */
static inline ptrdiff_t fgg_rp_span_blocks(ptrdiff_t tbb, ptrdiff_t least)
{
    return FGG_RP_SPAN_BYTES / tbb > least ? FGG_RP_SPAN_BYTES / tbb : least;
}

/* Prefetch the tile block FGG_RP_PREFETCH bytes past tb (tbb bytes of it). */
static inline void fgg_rp_prefetch(const uint8_t *tb, ptrdiff_t tbb)
{
#if defined(__GNUC__) || defined(__clang__)
    for (ptrdiff_t c = 0; c < tbb; c += 64) __builtin_prefetch(tb + FGG_RP_PREFETCH + c, 0, 3);
#else
    (void)tb, (void)tbb;
#endif
}

/* The per-32 kind of a ggml type id that has a repacked layout, else -1. */
static inline int fgg_rp_kind(int type_id)
{
    switch (type_id) {
    case FGG_TYPE_Q8_0: return FGG_MM_B_Q8_0;
    case FGG_TYPE_Q4_0: return FGG_MM_B_Q4_0;
    case FGG_TYPE_Q5_0: return FGG_MM_B_Q5_0;
    case FGG_TYPE_Q4_1: return FGG_MM_B_Q4_1;
    case FGG_TYPE_Q5_1: return FGG_MM_B_Q5_1;
    case FGG_TYPE_IQ4_NL: return FGG_MM_B_IQ4_NL;
    case FGG_TYPE_MXFP4: return FGG_MM_B_MXFP4;
    case FGG_TYPE_Q4_K: return FGG_RP_Q4_K;
    case FGG_TYPE_Q6_K: return FGG_RP_Q6_K;
    case FGG_TYPE_Q5_K: return FGG_RP_Q5_K;
    case FGG_TYPE_IQ4_XS: return FGG_RP_IQ4_XS;
    case FGG_TYPE_Q3_K: return FGG_RP_Q3_K;
    case FGG_TYPE_Q2_K: return FGG_RP_Q2_K;
    default: return -1;
    }
}

/* Bytes per row and block (super-block for the K kinds) in the repacked layout: the file's, but
 * Q4_K's and Q5_K's 12 bytes of 6-bit scales and mins become 16 bytes, IQ4_XS's 6 bytes of 6-bit
 * scales 8, Q3_K's 12 bytes of 6-bit scales 16. */
static inline ptrdiff_t fgg_rp_block_bytes(int kind)
{
    switch (kind) {
    case FGG_RP_Q4_K: return 148;
    case FGG_RP_Q5_K: return 180;
    case FGG_RP_Q6_K: return 210;
    case FGG_RP_IQ4_XS: return 138;
    case FGG_RP_Q3_K: return 114;
    case FGG_RP_Q2_K: return 84;
    default: return fgg_mm_b_bytes(kind);
    }
}

/* Bytes per block (super-block for the K kinds) in the file. */
static inline ptrdiff_t fgg_rp_source_block_bytes(int kind)
{
    switch (kind) {
    case FGG_RP_Q2_K: return 84;
    case FGG_RP_Q3_K: return 110;
    case FGG_RP_Q4_K: return 144;
    case FGG_RP_Q5_K: return 176;
    case FGG_RP_Q6_K: return 210;
    case FGG_RP_IQ4_XS: return 136;
    default: return fgg_mm_b_bytes(kind);
    }
}

/* Whether a kind takes x per 256 (fgg_mm_q8k). */
static inline int fgg_rp_is_k(int kind) { return kind >= FGG_RP_Q4_K; }

/* Whether a K kind has mins (a second float per row, subtracted at the end). */
static inline int fgg_rp_k_has_min(int kind) { return kind == FGG_RP_Q4_K || kind == FGG_RP_Q5_K || kind == FGG_RP_Q2_K; }

/* Offsets in a tile block: of the fifth bits (Q5_0, Q5_1) and of the values. */
static inline ptrdiff_t fgg_rp_scale_bytes(int kind)
{
    return kind == FGG_MM_B_MXFP4 ? 16 : fgg_mm_b_has_offset(kind) ? 64 : 32;
}
static inline int fgg_rp_has_fifth(int kind) { return kind == FGG_MM_B_Q5_0 || kind == FGG_MM_B_Q5_1; }
static inline ptrdiff_t fgg_rp_values_at(int kind) { return fgg_rp_scale_bytes(kind) + (fgg_rp_has_fifth(kind) ? 64 : 0); }

/* c of v = u - c (see the top). */
static inline int fgg_rp_offset(int kind)
{
    switch (kind) {
    case FGG_MM_B_Q4_0: return 8;
    case FGG_MM_B_Q5_0: return 16;
    case FGG_MM_B_Q4_1: case FGG_MM_B_Q5_1: return 0;
    default: return 128;  /* Q8_0, IQ4_NL, MXFP4 */
    }
}

/* Q4_K (144-byte super-blocks: f16 d, f16 dmin, 12 bytes of 6-bit scales and mins, 128 bytes of
 * nibbles, qs[32p + i] holding value i of sub-block 2p low and of 2p + 1 high). A tile block
 * (2368 bytes) holds the 16 rows' d, then dmin (f16), then sc[j][r] and mn[j][r] as bytes (8 x 16
 * each), then 32 chunks of 64 bytes: chunk 8p + k holds row r's qs[32p + 4k .. 32p + 4k + 3] at
 * 4r, its low nibbles group k (values 4k..4k+3) of sub-block 2p, its high ones of 2p + 1.
 * Q5_K (176 bytes: Q4_K's with 32 bytes of fifth bits qh before the nibbles, bit j of qh[i] the
 * fifth bit of value i of sub-block j): Q4_K's tile block, then 8 chunks of 64 bytes (2880 bytes
 * in all): chunk k holds row r's qh[4k .. 4k + 3] at 4r, the fifth bits of group k. */
#define FGG_RP_Q4_K_SC 64
#define FGG_RP_Q4_K_MN 192
#define FGG_RP_Q4_K_QS 320
#define FGG_RP_Q5_K_QH 2368
/* Super-block wb of weight row r into tile block tb. */
static inline void fgg_rp_pack_block_q45_k(const uint8_t *wb, int r, uint8_t *tb, int is_q5)
{
    memcpy(tb + 2 * r, wb, 2);
    memcpy(tb + 32 + 2 * r, wb + 2, 2);
    uint32_t words[4];
    fgg_mm_k4_scales(wb + 4, words);
    for (int j = 0; j < 8; j++) {
        tb[FGG_RP_Q4_K_SC + 16 * j + r] = (uint8_t)(words[j >> 2] >> (8 * (j & 3)));
        tb[FGG_RP_Q4_K_MN + 16 * j + r] = (uint8_t)(words[2 + (j >> 2)] >> (8 * (j & 3)));
    }
    for (int c = 0; c < 32; c++) memcpy(tb + FGG_RP_Q4_K_QS + 64 * c + 4 * r, wb + (is_q5 ? 48 : 16) + 4 * c, 4);
    if (is_q5)
        for (int k = 0; k < 8; k++) memcpy(tb + FGG_RP_Q5_K_QH + 64 * k + 4 * r, wb + 16 + 4 * k, 4);
}

/* Q6_K (210-byte super-blocks: 128 bytes ql, 64 bytes qh, 16 int8 scales, f16 d; value i of run
 * 4h + t (runs of 32) has the low 4 bits (ql[64h + 32(t & 1) + i] >> 4(t >> 1)) & 15 and the high 2
 * bits (qh[32h + i] >> 2t) & 3, minus 32; scale g covers values 16g..16g+15). A tile block (3360
 * bytes): the 16 rows' d (f16), then sc[g][r] (16 x 16 int8), then 32 chunks of 64 bytes whose
 * chunk 8P + k holds row r's low 4 bits of group k (values 4k..4k+3) of run 2P in the low nibbles
 * and of run 2P + 1 in the high ones, then 16 chunks: chunk 8h + k holds row r's
 * qh[32h + 4k .. 32h + 4k + 3] (the high bits of group k of runs 4h..4h+3, 2 bits each). */
#define FGG_RP_Q6_K_SC 32
#define FGG_RP_Q6_K_LO 288
#define FGG_RP_Q6_K_HI 2336
static inline void fgg_rp_pack_block_q6_k(const uint8_t *wb, int r, uint8_t *tb)
{
    memcpy(tb + 2 * r, wb + 208, 2);
    for (int g = 0; g < 16; g++) tb[FGG_RP_Q6_K_SC + 16 * g + r] = wb[192 + g];
    for (int P = 0; P < 4; P++)
        for (int i = 0; i < 32; i++) {
            const int h = P >> 1, t0 = 2 * (P & 1); /* runs 4h + t0 and 4h + t0 + 1 */
            const uint8_t lo = (uint8_t)((wb[64 * h + i] >> (4 * (t0 >> 1))) & 15);
            const uint8_t hi = (uint8_t)((wb[64 * h + 32 + i] >> (4 * (t0 >> 1))) & 15);
            tb[FGG_RP_Q6_K_LO + 64 * (8 * P + (i >> 2)) + 4 * r + (i & 3)] = (uint8_t)(lo | (hi << 4));
        }
    for (int c = 0; c < 16; c++) memcpy(tb + FGG_RP_Q6_K_HI + 64 * c + 4 * r, wb + 128 + 4 * c, 4);
}

/* IQ4_XS (136-byte super-blocks: f16 d, u16 high scale bits, 4 bytes of low scale bits, 128 bytes
 * of nibbles; run j (32 values) has the 6-bit scale ls_j - 32 and the values iq4nl[q] of
 * qs[16j + i]'s low (value i) and high (value 16 + i) nibbles). A tile block (2208 bytes): the 16
 * rows' d (f16), then sc[j][r] = ls_j - 32 (8 x 16 int8), then 32 chunks of 64 bytes: chunk 4j + c
 * holds row r's qs[16j + 4c .. 16j + 4c + 3] at 4r, its low nibbles group c of run j, its high
 * ones group c + 4. */
#define FGG_RP_IQ4_XS_SC 32
#define FGG_RP_IQ4_XS_QS 160
static inline void fgg_rp_pack_block_iq4_xs(const uint8_t *wb, int r, uint8_t *tb)
{
    memcpy(tb + 2 * r, wb, 2);
    for (int j = 0; j < 8; j++) tb[FGG_RP_IQ4_XS_SC + 16 * j + r] = (uint8_t)(int8_t)fgg_mm_iq4_xs_scale(wb, j);
    for (int c = 0; c < 32; c++) memcpy(tb + FGG_RP_IQ4_XS_QS + 64 * c + 4 * r, wb + 8 + 4 * c, 4);
}

/* Q2_K (84-byte super-blocks: 16 bytes of 4-bit scales (low nibble) and mins (high), 64 bytes of
 * 2-bit codes, f16 d, f16 dmin; value i of run 4h + t (runs of 32) has the code
 * (qs[32h + i] >> 2t) & 3, sub-block g = 2 * run + i / 16) and Q3_K (110 bytes: 32 bytes hmask, 64
 * bytes of 2-bit codes as Q2_K's, 12 bytes of 6-bit scales, f16 d; value i of run j is
 * code | (hmask[i] bit j) << 2, less 4). A Q2_K tile block (1344 bytes): the 16 rows' d, then dmin
 * (f16), then their scale bytes as the file's, scales[g] of row r at 64 + 16g + r, then 16 chunks
 * of 64 bytes: chunk 8h + k holds row r's qs[32h + 4k .. 32h + 4k + 3] at 4r (the codes of group k
 * of runs 4h..4h+3, 2 bits each). A Q3_K tile block (1824 bytes): d, then sc[g][r] = scale - 32
 * (16 x 16 int8), then the codes' 16 chunks as Q2_K's, then 8 chunks: chunk k holds row r's
 * hmask[4k .. 4k + 3] (the third bits of group k of every run). */
#define FGG_RP_Q2_K_SC 64
#define FGG_RP_Q2_K_QS 320
#define FGG_RP_Q3_K_SC 32
#define FGG_RP_Q3_K_QS 288
#define FGG_RP_Q3_K_HM 1312
static inline void fgg_rp_pack_block_q23_k(const uint8_t *wb, int r, uint8_t *tb, int is_q3)
{
    if (is_q3) {
        int8_t sc[16];
        fgg_mm_q3_k_scales(wb, sc);
        memcpy(tb + 2 * r, wb + 108, 2);
        for (int g = 0; g < 16; g++) tb[FGG_RP_Q3_K_SC + 16 * g + r] = (uint8_t)sc[g];
        for (int c = 0; c < 16; c++) memcpy(tb + FGG_RP_Q3_K_QS + 64 * c + 4 * r, wb + 32 + 4 * c, 4);
        for (int k = 0; k < 8; k++) memcpy(tb + FGG_RP_Q3_K_HM + 64 * k + 4 * r, wb + 4 * k, 4);
    } else {
        memcpy(tb + 2 * r, wb + 80, 2);
        memcpy(tb + 32 + 2 * r, wb + 82, 2);
        for (int g = 0; g < 16; g++) tb[FGG_RP_Q2_K_SC + 16 * g + r] = wb[g];
        for (int c = 0; c < 16; c++) memcpy(tb + FGG_RP_Q2_K_QS + 64 * c + 4 * r, wb + 16 + 4 * c, 4);
    }
}

/* rows (1 to 16) weight rows of a K kind (nb super-blocks, row r at w + r * row_bytes) into one
 * tile, block by block. */
static inline void fgg_rp_pack_tile_k(int kind, const uint8_t *w, ptrdiff_t row_bytes, int rows, ptrdiff_t nb,
                                      uint8_t *dst)
{
    const ptrdiff_t tbb = FGG_RP_ROWS * fgg_rp_block_bytes(kind), sbb = fgg_rp_source_block_bytes(kind);
    memset(dst, 0, (size_t)(nb * tbb));
    for (int r = 0; r < rows; r++) {
        const uint8_t *wb = w + r * row_bytes;
        uint8_t *tb = dst;
        for (ptrdiff_t b = 0; b < nb; b++, wb += sbb, tb += tbb) {
            if (kind == FGG_RP_Q6_K)
                fgg_rp_pack_block_q6_k(wb, r, tb);
            else if (kind == FGG_RP_IQ4_XS)
                fgg_rp_pack_block_iq4_xs(wb, r, tb);
            else if (kind == FGG_RP_Q3_K || kind == FGG_RP_Q2_K)
                fgg_rp_pack_block_q23_k(wb, r, tb, kind == FGG_RP_Q3_K);
            else
                fgg_rp_pack_block_q45_k(wb, r, tb, kind == FGG_RP_Q5_K);
        }
    }
}

/* Repack rows (1 to 16) weight rows of nb blocks (row r at w + r * row_bytes) into one tile. */
static inline void fgg_rp_pack_tile(int kind, const uint8_t *w, ptrdiff_t row_bytes, int rows, ptrdiff_t nb,
                                    uint8_t *dst)
{
    if (fgg_rp_is_k(kind)) {
        fgg_rp_pack_tile_k(kind, w, row_bytes, rows, nb, dst);
        return;
    }
    const ptrdiff_t bytes = fgg_mm_b_bytes(kind), tbb = FGG_RP_ROWS * bytes;
    const ptrdiff_t vals = fgg_rp_values_at(kind);
    memset(dst, 0, (size_t)(nb * tbb));
    for (int r = 0; r < rows; r++) {
        const uint8_t *wb = w + r * row_bytes;
        uint8_t *tb = dst;
        for (ptrdiff_t b = 0; b < nb; b++, wb += bytes, tb += tbb) {
            const uint8_t *qs;
            if (kind == FGG_MM_B_MXFP4) {
                tb[r] = wb[0];
                qs = wb + 1;
            } else {
                memcpy(tb + 2 * r, wb, 2);
                if (fgg_mm_b_has_offset(kind)) memcpy(tb + 32 + 2 * r, wb + 2, 2);
                qs = wb + (fgg_mm_b_has_offset(kind) ? 4 : 2);
            }
            if (fgg_rp_has_fifth(kind)) {
                const uint32_t qh = fgg_load_u32le(qs);
                qs += 4;
                uint8_t *h = tb + fgg_rp_scale_bytes(kind) + 4 * r;
                for (int i = 0; i < 4; i++) {
                    unsigned byte = 0;
                    for (int k = 0; k < 8; k++) byte |= ((qh >> (4 * k + i)) & 1u) << k;
                    h[i] = (uint8_t)byte;
                }
            }
            const int chunks = kind == FGG_MM_B_Q8_0 ? 8 : 4;
            for (int j = 0; j < chunks; j++) memcpy(tb + vals + 64 * j + 4 * r, qs + 4 * j, 4);
        }
    }
}

/* Value i (0..31) of row r in a tile block, signed. */
static inline int fgg_rp_value(int kind, const uint8_t *tb, int r, int i)
{
    const int k = i >> 2, p = i & 3;
    const uint8_t *v = tb + fgg_rp_values_at(kind);
    if (kind == FGG_MM_B_Q8_0) return (int8_t)v[64 * k + 4 * r + p];
    const uint8_t byte = v[64 * (k & 3) + 4 * r + p];
    int u = k < 4 ? byte & 15 : byte >> 4;
    if (fgg_rp_has_fifth(kind)) u |= ((tb[fgg_rp_scale_bytes(kind) + 4 * r + p] >> k) & 1) << 4;
    switch (kind) {
    case FGG_MM_B_Q4_0: return u - 8;
    case FGG_MM_B_Q5_0: return u - 16;
    case FGG_MM_B_IQ4_NL: return fgg_iq4nl_values[u];
    case FGG_MM_B_MXFP4: return fgg_fp4_values[u];
    default: return u;  /* Q4_1, Q5_1 */
    }
}

static inline float fgg_rp_scale(int kind, const uint8_t *tb, int r)
{
    return kind == FGG_MM_B_MXFP4 ? fgg_e8m0_half_f32[tb[r]] : fgg_half_to_float_scale(fgg_load_u16le(tb + 2 * r));
}

/* The reference kernels of the K kinds, plain C: fgg_mm_rown_k's integers per super-block (tile
 * block tb, weight row r, x's super-block xb), then its float steps one by one. */

/* Q6_K: the lanes less 32 times the sums of x per 16, by the scales. */
static inline int32_t fgg_rp_c_total_q6_k(const uint8_t *tb, int r, const fgg_mm_q8k *xb)
{
    int32_t tot = 0;
    for (int g = 0; g < 16; g++) {
        const int run = g >> 1, P = run >> 1, h = run >> 2, t = run & 3;
        int32_t dot = 0;
        for (int v = 0; v < 16; v++) {
            const int iv = 16 * (g & 1) + v; /* value in the run */
            const uint8_t nib = tb[FGG_RP_Q6_K_LO + 64 * (8 * P + (iv >> 2)) + 4 * r + (iv & 3)];
            const uint8_t hb = tb[FGG_RP_Q6_K_HI + 64 * (8 * h + (iv >> 2)) + 4 * r + (iv & 3)];
            const int u = ((run & 1) ? nib >> 4 : nib & 15) | (((hb >> (2 * t)) & 3) << 4);
            dot += u * xb->q[32 * run + iv];
        }
        tot += (int8_t)tb[FGG_RP_Q6_K_SC + 16 * g + r] * (dot - 32 * xb->bsum[g]);
    }
    return tot;
}

/* Q4_K (Q5_K with is_q5): the codes times x by the scales; the mins' total into *mtot. */
static inline int32_t fgg_rp_c_total_q45_k(const uint8_t *tb, int r, const fgg_mm_q8k *xb, int is_q5, int32_t *mtot)
{
    int32_t tot = 0;
    *mtot = 0;
    for (int j = 0; j < 8; j++) {
        int32_t dot = 0;
        for (int v = 0; v < 32; v++) {
            const uint8_t byte = tb[FGG_RP_Q4_K_QS + 64 * (8 * (j >> 1) + (v >> 2)) + 4 * r + (v & 3)];
            int u = (j & 1) ? byte >> 4 : byte & 15;
            if (is_q5) u |= ((tb[FGG_RP_Q5_K_QH + 64 * (v >> 2) + 4 * r + (v & 3)] >> j) & 1) << 4;
            dot += u * xb->q[32 * j + v];
        }
        tot += dot * tb[FGG_RP_Q4_K_SC + 16 * j + r];
        *mtot += (xb->bsum[2 * j] + xb->bsum[2 * j + 1]) * tb[FGG_RP_Q4_K_MN + 16 * j + r];
    }
    return tot;
}

/* IQ4_XS: per run the table's values times x, by the run's scale. */
static inline int32_t fgg_rp_c_total_iq4_xs(const uint8_t *tb, int r, const fgg_mm_q8k *xb)
{
    int32_t tot = 0;
    for (int j = 0; j < 8; j++) {
        int32_t dot = 0;
        for (int v = 0; v < 32; v++) {
            const int byte = v & 15; /* qs[16j + byte]: low nibble value byte, high 16 + byte */
            const uint8_t q = tb[FGG_RP_IQ4_XS_QS + 64 * (4 * j + (byte >> 2)) + 4 * r + (byte & 3)];
            dot += fgg_iq4nl_values[v < 16 ? q & 15 : q >> 4] * xb->q[32 * j + v];
        }
        tot += dot * (int8_t)tb[FGG_RP_IQ4_XS_SC + 16 * j + r];
    }
    return tot;
}

/* Q2_K (Q3_K with is_q3): per sub-block of 16 the codes times x (Q3_K: less 4 times x's sum), by
 * the scale; Q2_K's mins' total into *mtot. */
static inline int32_t fgg_rp_c_total_q23_k(const uint8_t *tb, int r, const fgg_mm_q8k *xb, int is_q3, int32_t *mtot)
{
    int32_t tot = 0;
    *mtot = 0;
    for (int g = 0; g < 16; g++) {
        const int run = g >> 1, h = run >> 2, t = run & 3;
        int32_t dot = 0;
        for (int v = 0; v < 16; v++) {
            const int i = 16 * (g & 1) + v; /* value in the run */
            int u = (tb[(is_q3 ? FGG_RP_Q3_K_QS : FGG_RP_Q2_K_QS) + 64 * (8 * h + (i >> 2)) + 4 * r + (i & 3)] >> (2 * t)) & 3;
            if (is_q3) u |= ((tb[FGG_RP_Q3_K_HM + 64 * (i >> 2) + 4 * r + (i & 3)] >> run) & 1) << 2;
            dot += u * xb->q[32 * run + i];
        }
        if (is_q3) {
            tot += (int8_t)tb[FGG_RP_Q3_K_SC + 16 * g + r] * (dot - 4 * xb->bsum[g]);
        } else {
            const uint8_t sm = tb[FGG_RP_Q2_K_SC + 16 * g + r];
            tot += (sm & 15) * dot;
            *mtot += (sm >> 4) * xb->bsum[g];
        }
    }
    return tot;
}

static inline void fgg_rp_tile_c_k(int kind, const uint8_t *tile, ptrdiff_t nb, const fgg_mm_q8k *x, ptrdiff_t xs,
                                   int m, float *out, ptrdiff_t os, int rows)
{
    const ptrdiff_t tbb = FGG_RP_ROWS * fgg_rp_block_bytes(kind);
    for (int i = 0; i < m; i++) {
        for (int r = 0; r < rows; r++) {
            float a = 0.0f, am = 0.0f;
            const uint8_t *tb = tile;
            for (ptrdiff_t b = 0; b < nb; b++, tb += tbb) {
                const fgg_mm_q8k *xb = x + i * xs + b;
                int32_t mtot = 0;
                const int32_t tot = kind == FGG_RP_Q6_K    ? fgg_rp_c_total_q6_k(tb, r, xb)
                                    : kind == FGG_RP_IQ4_XS ? fgg_rp_c_total_iq4_xs(tb, r, xb)
                                    : kind == FGG_RP_Q3_K || kind == FGG_RP_Q2_K
                                        ? fgg_rp_c_total_q23_k(tb, r, xb, kind == FGG_RP_Q3_K, &mtot)
                                        : fgg_rp_c_total_q45_k(tb, r, xb, kind == FGG_RP_Q5_K, &mtot);
                const float fd = fgg_half_to_float_scale(fgg_load_u16le(tb + 2 * r)) * xb->d;
                const float pa = (float)tot * fd;
                a = a + pa;
                if (fgg_rp_k_has_min(kind)) {
                    const float fm = fgg_half_to_float_scale(fgg_load_u16le(tb + 32 + 2 * r)) * xb->d;
                    const float pm = (float)mtot * fm;
                    am = am + pm;
                }
            }
            out[i * os + r] = fgg_rp_k_has_min(kind) ? a - am : a;
        }
    }
}

/* The reference kernel, plain C (every build; tests): rows (1 to 16) weight rows of one tile
 * against m rows of x, out[i * os + r]. The operations of FGG_MM_ROWN_B one by one. */
static inline void fgg_rp_tile_c(int kind, const uint8_t *tile, ptrdiff_t nb, const void *xv, ptrdiff_t xs,
                                 int m, float *out, ptrdiff_t os, int rows)
{
    if (fgg_rp_is_k(kind)) {
        fgg_rp_tile_c_k(kind, tile, nb, (const fgg_mm_q8k *)xv, xs, m, out, os, rows);
        return;
    }
    const fgg_mm_q8 *x = (const fgg_mm_q8 *)xv;
    const ptrdiff_t tbb = FGG_RP_ROWS * fgg_mm_b_bytes(kind);
    for (int i = 0; i < m; i++) {
        for (int r = 0; r < rows; r++) {
            float acc[8] = {0.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f}, off = 0.0f;
            const uint8_t *tb = tile;
            for (ptrdiff_t b = 0; b < nb; b++, tb += tbb) {
                const fgg_mm_q8 *xb = x + i * xs + b;
                const float f = fgg_rp_scale(kind, tb, r) * xb->d;
                for (int k = 0; k < 8; k++) {
                    int lane = 0;
                    for (int p = 0; p < 4; p++) lane += fgg_rp_value(kind, tb, r, 4 * k + p) * xb->q[4 * k + p];
                    const float prod = (float)lane * f;
                    acc[k] = acc[k] + prod;
                }
                if (fgg_mm_b_has_offset(kind)) {
                    const float mn = fgg_half_to_float_scale(fgg_load_u16le(tb + 32 + 2 * r));
                    const float t = mn * xb->s;
                    off = off + t;
                }
            }
            const float sum = ((acc[0] + acc[4]) + (acc[2] + acc[6])) + ((acc[1] + acc[5]) + (acc[3] + acc[7]));
            out[i * os + r] = fgg_mm_b_has_offset(kind) ? sum + off : sum;
        }
    }
}

/* -c times the sums of x's groups of 4 (8 per block), the start of each lane (c: the tile
 * kernel's, fgg_rp_tile_kernel): m rows of nb blocks (row i at x + i * xs) into
 * o[(i * nb + b) * 8 + k]. */
static inline void fgg_rp_x_offsets(int c, const fgg_mm_q8 *x, ptrdiff_t xs, ptrdiff_t m, ptrdiff_t nb, int32_t *o)
{
    for (ptrdiff_t i = 0; i < m; i++)
        for (ptrdiff_t b = 0; b < nb; b++) {
            const int8_t *q = x[i * xs + b].q;
            for (int k = 0; k < 8; k++)
                o[(i * nb + b) * 8 + k] = -c * (q[4 * k] + q[4 * k + 1] + q[4 * k + 2] + q[4 * k + 3]);
        }
}

#if FGG_MM_HAVE_VNNI
/* The 16 rows' scales of a tile block as floats (those of fgg_mm_b_scale). */
static inline FGG_MM_VNNI __m512 fgg_rp_scales16(int kind, const uint8_t *tb)
{
    if (kind != FGG_MM_B_MXFP4) return _mm512_cvtph_ps(_mm256_loadu_si256((const __m256i *)tb));
    /* 2^(e - 128): the float bits (e - 1) << 23, below e = 2 the subnormals 2^21 << e */
    const __m512i e = _mm512_cvtepu8_epi32(_mm_loadu_si128((const __m128i *)tb));
    const __m512i normal = _mm512_slli_epi32(_mm512_sub_epi32(e, _mm512_set1_epi32(1)), 23);
    const __m512i small = _mm512_sllv_epi32(_mm512_set1_epi32(0x200000), e);
    const __mmask16 low = _mm512_cmplt_epu32_mask(e, _mm512_set1_epi32(2));
    return _mm512_castsi512_ps(_mm512_mask_blend_epi32(low, normal, small));
}

/* The 8 groups of 16 rows of a tile block as unsigned codes u (v = u - c). */
FGG_MM_ALWAYS_INLINE FGG_MM_VNNI void fgg_rp_unpack16(int kind, const uint8_t *tb, __m512i u[8])
{
    const uint8_t *v = tb + fgg_rp_values_at(kind);
    if (kind == FGG_MM_B_Q8_0) {
        for (int k = 0; k < 8; k++)
            u[k] = _mm512_xor_si512(_mm512_loadu_si512((const void *)(v + 64 * k)), _mm512_set1_epi8(-128));
        return;
    }
    const __m512i lo4 = _mm512_set1_epi8(15);
    for (int j = 0; j < 4; j++) {
        const __m512i c = _mm512_loadu_si512((const void *)(v + 64 * j));
        u[j] = _mm512_and_si512(c, lo4);
        u[j + 4] = _mm512_and_si512(_mm512_srli_epi16(c, 4), lo4);
    }
    if (fgg_rp_has_fifth(kind)) {
        /* bit k of each byte to bit 4; 16-bit shifts by at most 4 keep each byte's own bits there */
        const __m512i h = _mm512_loadu_si512((const void *)(tb + fgg_rp_scale_bytes(kind)));
        const __m512i b4 = _mm512_set1_epi8(16);
        u[0] = _mm512_ternarylogic_epi32(u[0], _mm512_slli_epi16(h, 4), b4, 0xF8);
        u[1] = _mm512_ternarylogic_epi32(u[1], _mm512_slli_epi16(h, 3), b4, 0xF8);
        u[2] = _mm512_ternarylogic_epi32(u[2], _mm512_slli_epi16(h, 2), b4, 0xF8);
        u[3] = _mm512_ternarylogic_epi32(u[3], _mm512_slli_epi16(h, 1), b4, 0xF8);
        u[4] = _mm512_ternarylogic_epi32(u[4], h, b4, 0xF8);
        u[5] = _mm512_ternarylogic_epi32(u[5], _mm512_srli_epi16(h, 1), b4, 0xF8);
        u[6] = _mm512_ternarylogic_epi32(u[6], _mm512_srli_epi16(h, 2), b4, 0xF8);
        u[7] = _mm512_ternarylogic_epi32(u[7], _mm512_srli_epi16(h, 3), b4, 0xF8);
    } else if (kind == FGG_MM_B_IQ4_NL || kind == FGG_MM_B_MXFP4) {
        /* the value table + 128: its bytes with the sign bit flipped */
        const __m128i signed_t = _mm_loadu_si128((const __m128i *)(kind == FGG_MM_B_IQ4_NL ? fgg_iq4nl_values : fgg_fp4_values));
        const __m512i t = _mm512_broadcast_i32x4(_mm_xor_si128(signed_t, _mm_set1_epi8(-128)));
        for (int k = 0; k < 8; k++) u[k] = _mm512_shuffle_epi8(t, u[k]);
    }
}

/* NR (1 or 2) rows of x against blocks b0..b1 of one tile, the accumulators carried in st
 * (per row of x 9 vectors of 16 floats: acc[0..7], off) from the blocks before. xo: the rows'
 * fgg_rp_x_offsets (row i at xo + i * xos). */
FGG_MM_ALWAYS_INLINE FGG_MM_VNNI void fgg_rp_span_vnni(int kind, int NR, const uint8_t *tile, ptrdiff_t b0, ptrdiff_t b1,
                                                       const fgg_mm_q8 *x, ptrdiff_t xs, const int32_t *xo,
                                                       ptrdiff_t xos, __m512 *st, int ahead)
{
    const ptrdiff_t tbb = FGG_RP_ROWS * fgg_mm_b_bytes(kind);
    __m512 acc[2][8], off[2];
    for (int i = 0; i < NR; i++) {
        off[i] = st[9 * i + 8];
        for (int k = 0; k < 8; k++) acc[i][k] = st[9 * i + k];
    }
    const uint8_t *tb = tile + b0 * tbb;
    for (ptrdiff_t b = b0; b < b1; b++, tb += tbb) {
        if (ahead) /* the first pass over a tile reads it from memory: ask for it early */
            fgg_rp_prefetch(tb, tbb);
        const __m512 dw = fgg_rp_scales16(kind, tb);
        __m512i u[8];
        fgg_rp_unpack16(kind, tb, u);
        for (int i = 0; i < NR; i++) {
            const fgg_mm_q8 *xb = x + i * xs + b;
            const int32_t *q4 = (const int32_t *)(const void *)xb->q;
            const int32_t *o = xo + i * xos + 8 * b;
            const __m512 f = _mm512_mul_ps(dw, _mm512_set1_ps(xb->d));
            for (int k = 0; k < 8; k++) {
                const __m512i lane = _mm512_dpbusd_epi32(_mm512_set1_epi32(o[k]), u[k], _mm512_set1_epi32(q4[k]));
                acc[i][k] = _mm512_add_ps(acc[i][k], _mm512_mul_ps(_mm512_cvtepi32_ps(lane), f));
            }
            if (fgg_mm_b_has_offset(kind)) {
                const __m512 mw = _mm512_cvtph_ps(_mm256_loadu_si256((const __m256i *)(tb + 32)));
                off[i] = _mm512_add_ps(off[i], _mm512_mul_ps(mw, _mm512_set1_ps(xb->s)));
            }
        }
    }
    for (int i = 0; i < NR; i++) {
        st[9 * i + 8] = off[i];
        for (int k = 0; k < 8; k++) st[9 * i + k] = acc[i][k];
    }
}


/* m rows of x against one tile (rows weight rows valid), two rows of x at a time; beyond two rows
 * in spans of the blocks, so that a span is read from memory once and from L1 by each pair.
 * st: m * 9 vectors of scratch. */
FGG_MM_ALWAYS_INLINE FGG_MM_VNNI void fgg_rp_tile_vnni_kind(int kind, const uint8_t *tile, ptrdiff_t nb,
                                                            const fgg_mm_q8 *x, ptrdiff_t xs, const int32_t *xo,
                                                            int m, float *out, ptrdiff_t os, int rows, __m512 *st)
{
    const __mmask16 keep = (__mmask16)((1u << rows) - 1u);
    const ptrdiff_t xos = nb * 8, tbb = FGG_RP_ROWS * fgg_mm_b_bytes(kind);
    const ptrdiff_t span = m <= 2 ? nb : fgg_rp_span_blocks(tbb, 4);
    for (int j = 0; j < 9 * m; j++) st[j] = _mm512_setzero_ps();
    for (ptrdiff_t b0 = 0; b0 < nb; b0 += span) {
        const ptrdiff_t b1 = b0 + span < nb ? b0 + span : nb;
        int i = 0;
        for (; i + 2 <= m; i += 2)
            fgg_rp_span_vnni(kind, 2, tile, b0, b1, x + i * xs, xs, xo + i * xos, xos, st + 9 * i, i == 0);
        if (i < m) fgg_rp_span_vnni(kind, 1, tile, b0, b1, x + i * xs, xs, xo + i * xos, xos, st + 9 * i, i == 0);
    }
    for (int i = 0; i < m; i++) {
        const __m512 *a = st + 9 * i;
        __m512 s = _mm512_add_ps(_mm512_add_ps(_mm512_add_ps(a[0], a[4]), _mm512_add_ps(a[2], a[6])),
                                 _mm512_add_ps(_mm512_add_ps(a[1], a[5]), _mm512_add_ps(a[3], a[7])));
        if (fgg_mm_b_has_offset(kind)) s = _mm512_add_ps(s, a[8]);
        _mm512_mask_storeu_ps(out + i * os, keep, s);
    }
}

/* Bit `bit` of each byte of h moved to bit `to` (other bits undefined): 16-bit shifts keep each
 * byte's own bits there while the distance stays within the byte. */
FGG_MM_ALWAYS_INLINE FGG_MM_VNNI __m512i fgg_rp_bit_to(__m512i h, int bit, int to)
{
    return bit < to ? _mm512_slli_epi16(h, to - bit) : bit > to ? _mm512_srli_epi16(h, bit - to) : h;
}

/* The integer totals of one super-block (tile block tb, x's super-block b of NR rows, row i at
 * x + i * xs) for 16 weight rows, added into tot[i] (and the mins' into mtot[i]), per K kind. */

/* Q4_K (Q5_K with is_q5): per sub-block one vpdpbusd per group of 4 adds up the 32 products of 16
 * weight rows (exact: |sum| <= 32 * 31 * 127), vpmulld by the rows' scales into the total; the
 * mins' total from x's sums per 32 by vpmulld. Q5_K's fifth bits join the nibbles by one
 * vpternlogd each. */
FGG_MM_ALWAYS_INLINE FGG_MM_VNNI void fgg_rp_totals_q45_k_vnni(int NR, const uint8_t *tb, const fgg_mm_q8k *x, ptrdiff_t xs,
                                                               ptrdiff_t b, __m512i *tot, __m512i *mtot, const int is_q5)
{
    const __m512i lo4 = _mm512_set1_epi8(15), b4 = _mm512_set1_epi8(16);
    for (int p = 0; p < 4; p++) {
        __m512i dlo[4], dhi[4];
        for (int i = 0; i < NR; i++) dlo[i] = dhi[i] = _mm512_setzero_si512();
        for (int k = 0; k < 8; k++) {
            const __m512i c = _mm512_loadu_si512((const void *)(tb + FGG_RP_Q4_K_QS + 64 * (8 * p + k)));
            __m512i lo = _mm512_and_si512(c, lo4), hi = _mm512_and_si512(_mm512_srli_epi16(c, 4), lo4);
            if (is_q5) { /* sub-blocks 2p and 2p + 1: bits 2p and 2p + 1 of the fifth bits */
                const __m512i h = _mm512_loadu_si512((const void *)(tb + FGG_RP_Q5_K_QH + 64 * k));
                lo = _mm512_ternarylogic_epi32(lo, fgg_rp_bit_to(h, 2 * p, 4), b4, 0xF8);
                hi = _mm512_ternarylogic_epi32(hi, fgg_rp_bit_to(h, 2 * p + 1, 4), b4, 0xF8);
            }
            for (int i = 0; i < NR; i++) {
                const int32_t *q4 = (const int32_t *)(const void *)x[i * xs + b].q;
                dlo[i] = _mm512_dpbusd_epi32(dlo[i], lo, _mm512_set1_epi32(q4[16 * p + k]));
                dhi[i] = _mm512_dpbusd_epi32(dhi[i], hi, _mm512_set1_epi32(q4[16 * p + 8 + k]));
            }
        }
        const __m512i s0 = _mm512_cvtepu8_epi32(_mm_loadu_si128((const __m128i *)(tb + FGG_RP_Q4_K_SC + 32 * p)));
        const __m512i s1 = _mm512_cvtepu8_epi32(_mm_loadu_si128((const __m128i *)(tb + FGG_RP_Q4_K_SC + 32 * p + 16)));
        const __m512i m0 = _mm512_cvtepu8_epi32(_mm_loadu_si128((const __m128i *)(tb + FGG_RP_Q4_K_MN + 32 * p)));
        const __m512i m1 = _mm512_cvtepu8_epi32(_mm_loadu_si128((const __m128i *)(tb + FGG_RP_Q4_K_MN + 32 * p + 16)));
        for (int i = 0; i < NR; i++) {
            const int16_t *bs = x[i * xs + b].bsum;
            tot[i] = _mm512_add_epi32(tot[i], _mm512_add_epi32(_mm512_mullo_epi32(dlo[i], s0), _mm512_mullo_epi32(dhi[i], s1)));
            mtot[i] = _mm512_add_epi32(mtot[i], _mm512_add_epi32(_mm512_mullo_epi32(m0, _mm512_set1_epi32(bs[4 * p] + bs[4 * p + 1])),
                                                                 _mm512_mullo_epi32(m1, _mm512_set1_epi32(bs[4 * p + 2] + bs[4 * p + 3]))));
        }
    }
}

/* Q6_K: per sub-block of 16 one accumulator started at -32 times x's sum over it (the offset in
 * integers), the 6-bit codes from a nibble chunk and a chunk of high bits by one vpternlogd each,
 * then vpmulld by the rows' scales into the total. */
FGG_MM_ALWAYS_INLINE FGG_MM_VNNI void fgg_rp_totals_q6_k_vnni(int NR, const uint8_t *tb, const fgg_mm_q8k *x, ptrdiff_t xs,
                                                              ptrdiff_t b, __m512i *tot)
{
    const __m512i lo4 = _mm512_set1_epi8(15), b45 = _mm512_set1_epi8(0x30);
    for (int P = 0; P < 4; P++) {
        __m512i d[4][4]; /* per row of x: sub-blocks 4P .. 4P + 3 */
        for (int i = 0; i < NR; i++)
            for (int j = 0; j < 4; j++) d[i][j] = _mm512_set1_epi32(-32 * x[i * xs + b].bsum[4 * P + j]);
        for (int k = 0; k < 8; k++) {
            const __m512i c = _mm512_loadu_si512((const void *)(tb + FGG_RP_Q6_K_LO + 64 * (8 * P + k)));
            const __m512i hc = _mm512_loadu_si512((const void *)(tb + FGG_RP_Q6_K_HI + 64 * (8 * (P >> 1) + k)));
            /* high bits of run 2P at bits 4P', of run 2P + 1 at 4P' + 2 (P' = P & 1): to bits 4-5 */
            const __m512i h0 = (P & 1) ? hc : _mm512_slli_epi16(hc, 4);
            const __m512i h1 = (P & 1) ? _mm512_srli_epi16(hc, 2) : _mm512_slli_epi16(hc, 2);
            const __m512i u0 = _mm512_ternarylogic_epi32(_mm512_and_si512(c, lo4), h0, b45, 0xF8);
            const __m512i u1 = _mm512_ternarylogic_epi32(_mm512_and_si512(_mm512_srli_epi16(c, 4), lo4), h1, b45, 0xF8);
            const int half = k >> 2;
            for (int i = 0; i < NR; i++) {
                const int32_t *q4 = (const int32_t *)(const void *)x[i * xs + b].q;
                d[i][half] = _mm512_dpbusd_epi32(d[i][half], u0, _mm512_set1_epi32(q4[16 * P + k]));
                d[i][2 + half] = _mm512_dpbusd_epi32(d[i][2 + half], u1, _mm512_set1_epi32(q4[16 * P + 8 + k]));
            }
        }
        for (int j = 0; j < 4; j++) {
            const __m512i sc = _mm512_cvtepi8_epi32(_mm_loadu_si128((const __m128i *)(tb + FGG_RP_Q6_K_SC + 16 * (4 * P + j))));
            for (int i = 0; i < NR; i++) tot[i] = _mm512_add_epi32(tot[i], _mm512_mullo_epi32(d[i][j], sc));
        }
    }
}

/* IQ4_XS: as Q6_K, per run of 32 one accumulator started at -128 times x's sum over it, the codes
 * through the value table + 128 (vpshufb), vpmulld by the rows' signed scales into the total. */
FGG_MM_ALWAYS_INLINE FGG_MM_VNNI void fgg_rp_totals_iq4_xs_vnni(int NR, const uint8_t *tb, const fgg_mm_q8k *x, ptrdiff_t xs,
                                                                ptrdiff_t b, __m512i *tot)
{
    const __m512i lo4 = _mm512_set1_epi8(15);
    const __m512i t = _mm512_broadcast_i32x4(_mm_xor_si128(_mm_loadu_si128((const __m128i *)fgg_iq4nl_values), _mm_set1_epi8(-128)));
    for (int j = 0; j < 8; j++) {
        __m512i d[4];
        for (int i = 0; i < NR; i++) {
            const int16_t *bs = x[i * xs + b].bsum;
            d[i] = _mm512_set1_epi32(-128 * (bs[2 * j] + bs[2 * j + 1]));
        }
        for (int c = 0; c < 4; c++) {
            const __m512i ch = _mm512_loadu_si512((const void *)(tb + FGG_RP_IQ4_XS_QS + 64 * (4 * j + c)));
            const __m512i ulo = _mm512_shuffle_epi8(t, _mm512_and_si512(ch, lo4));
            const __m512i uhi = _mm512_shuffle_epi8(t, _mm512_and_si512(_mm512_srli_epi16(ch, 4), lo4));
            for (int i = 0; i < NR; i++) {
                const int32_t *q4 = (const int32_t *)(const void *)x[i * xs + b].q;
                d[i] = _mm512_dpbusd_epi32(d[i], ulo, _mm512_set1_epi32(q4[8 * j + c]));
                d[i] = _mm512_dpbusd_epi32(d[i], uhi, _mm512_set1_epi32(q4[8 * j + 4 + c]));
            }
        }
        const __m512i sc = _mm512_cvtepi8_epi32(_mm_loadu_si128((const __m128i *)(tb + FGG_RP_IQ4_XS_SC + 16 * j)));
        for (int i = 0; i < NR; i++) tot[i] = _mm512_add_epi32(tot[i], _mm512_mullo_epi32(d[i], sc));
    }
}

/* Q2_K (Q3_K with is_q3): per sub-block of 16 one vpdpbusd per group of 4 (Q3_K: from -4 times x's
 * sum, the third bit joined by one vpternlogd), vpmulld by the rows' scales into the total; Q2_K's
 * mins' total from x's sums per 16 by vpmulld. */
FGG_MM_ALWAYS_INLINE FGG_MM_VNNI void fgg_rp_totals_q23_k_vnni(int NR, const uint8_t *tb, const fgg_mm_q8k *x, ptrdiff_t xs,
                                                               ptrdiff_t b, __m512i *tot, __m512i *mtot, const int is_q3)
{
    const __m512i three = _mm512_set1_epi8(3), b2 = _mm512_set1_epi8(4), lo4 = _mm512_set1_epi32(15);
    const uint8_t *qs = tb + (is_q3 ? FGG_RP_Q3_K_QS : FGG_RP_Q2_K_QS);
#pragma GCC unroll 8 /* GCC left it rolled: repacked Q3_K 1.25x faster at 1 row, 1.56x at 2 */
    for (int run = 0; run < 8; run++) {
        const int h = run >> 2, t = run & 3;
        __m512i d[4][2];
        for (int i = 0; i < NR; i++)
            for (int s = 0; s < 2; s++)
                d[i][s] = is_q3 ? _mm512_set1_epi32(-4 * x[i * xs + b].bsum[2 * run + s]) : _mm512_setzero_si512();
        for (int k = 0; k < 8; k++) {
            const __m512i c = _mm512_loadu_si512((const void *)(qs + 64 * (8 * h + k)));
            __m512i u = _mm512_and_si512(_mm512_srli_epi16(c, 2 * t), three);
            if (is_q3) {
                const __m512i hm = _mm512_loadu_si512((const void *)(tb + FGG_RP_Q3_K_HM + 64 * k));
                u = _mm512_ternarylogic_epi32(u, fgg_rp_bit_to(hm, run, 2), b2, 0xF8);
            }
            for (int i = 0; i < NR; i++) {
                const int32_t *q4 = (const int32_t *)(const void *)x[i * xs + b].q;
                d[i][k >> 2] = _mm512_dpbusd_epi32(d[i][k >> 2], u, _mm512_set1_epi32(q4[8 * run + k]));
            }
        }
        for (int s = 0; s < 2; s++) {
            const int g = 2 * run + s;
            const __m128i raw = _mm_loadu_si128((const __m128i *)(tb + (is_q3 ? FGG_RP_Q3_K_SC : FGG_RP_Q2_K_SC) + 16 * g));
            if (is_q3) {
                const __m512i sc = _mm512_cvtepi8_epi32(raw);
                for (int i = 0; i < NR; i++) tot[i] = _mm512_add_epi32(tot[i], _mm512_mullo_epi32(d[i][s], sc));
            } else {
                const __m512i sm = _mm512_cvtepu8_epi32(raw);
                const __m512i sc = _mm512_and_si512(sm, lo4), mn = _mm512_srli_epi32(sm, 4);
                for (int i = 0; i < NR; i++) {
                    tot[i] = _mm512_add_epi32(tot[i], _mm512_mullo_epi32(d[i][s], sc));
                    mtot[i] = _mm512_add_epi32(mtot[i], _mm512_mullo_epi32(mn, _mm512_set1_epi32(x[i * xs + b].bsum[g])));
                }
            }
        }
    }
}

/* NR (1 to 4) rows of x against super-blocks b0..b1 of one tile of a K kind, acc and accm per row
 * carried in st (2 vectors per row): per super-block its integer totals, then the row kernel's
 * float steps (one, or two with mins), 16 rows wide. */
FGG_MM_ALWAYS_INLINE FGG_MM_VNNI void fgg_rp_span_k_vnni(int kind, int NR, const uint8_t *tile, ptrdiff_t b0, ptrdiff_t b1,
                                                         const fgg_mm_q8k *x, ptrdiff_t xs, __m512 *st, int ahead)
{
    const ptrdiff_t tbb = FGG_RP_ROWS * fgg_rp_block_bytes(kind);
    const int has_min = fgg_rp_k_has_min(kind);
    __m512 acc[4], accm[4];
    for (int i = 0; i < NR; i++) {
        acc[i] = st[2 * i];
        accm[i] = st[2 * i + 1];
    }
    const uint8_t *tb = tile + b0 * tbb;
    for (ptrdiff_t b = b0; b < b1; b++, tb += tbb) {
        if (ahead) /* the first pass over a tile reads it from memory: ask for it early */
            fgg_rp_prefetch(tb, tbb);
        __m512i tot[4], mtot[4];
        for (int i = 0; i < NR; i++) tot[i] = mtot[i] = _mm512_setzero_si512();
        if (kind == FGG_RP_Q2_K || kind == FGG_RP_Q3_K)
            fgg_rp_totals_q23_k_vnni(NR, tb, x, xs, b, tot, mtot, kind == FGG_RP_Q3_K);
        else if (has_min)
            fgg_rp_totals_q45_k_vnni(NR, tb, x, xs, b, tot, mtot, kind == FGG_RP_Q5_K);
        else if (kind == FGG_RP_IQ4_XS)
            fgg_rp_totals_iq4_xs_vnni(NR, tb, x, xs, b, tot);
        else
            fgg_rp_totals_q6_k_vnni(NR, tb, x, xs, b, tot);
        const __m512 dw = _mm512_cvtph_ps(_mm256_loadu_si256((const __m256i *)tb));
        for (int i = 0; i < NR; i++)
            acc[i] = _mm512_add_ps(acc[i], _mm512_mul_ps(_mm512_cvtepi32_ps(tot[i]), _mm512_mul_ps(dw, _mm512_set1_ps(x[i * xs + b].d))));
        if (has_min) {
            const __m512 mw = _mm512_cvtph_ps(_mm256_loadu_si256((const __m256i *)(tb + 32)));
            for (int i = 0; i < NR; i++)
                accm[i] = _mm512_add_ps(accm[i], _mm512_mul_ps(_mm512_cvtepi32_ps(mtot[i]), _mm512_mul_ps(mw, _mm512_set1_ps(x[i * xs + b].d))));
        }
    }
    for (int i = 0; i < NR; i++) {
        st[2 * i] = acc[i];
        st[2 * i + 1] = accm[i];
    }
}

/* m rows of x against one tile of a K kind, 4 rows at a time; beyond 4 rows in spans of its
 * super-blocks. st: 2 vectors per row (acc, and Q4_K's and Q5_K's accm, subtracted at the end). */
FGG_MM_ALWAYS_INLINE FGG_MM_VNNI void fgg_rp_tile_k_vnni(int kind, const uint8_t *tile, ptrdiff_t nb, const fgg_mm_q8k *x,
                                                         ptrdiff_t xs, int m, float *out, ptrdiff_t os, int rows,
                                                         __m512 *st)
{
    const __mmask16 keep = (__mmask16)((1u << rows) - 1u);
    const ptrdiff_t span = m <= 4 ? nb : fgg_rp_span_blocks(FGG_RP_ROWS * fgg_rp_block_bytes(kind), 2);
    for (int j = 0; j < 2 * m; j++) st[j] = _mm512_setzero_ps();
    for (ptrdiff_t b0 = 0; b0 < nb; b0 += span) {
        const ptrdiff_t b1 = b0 + span < nb ? b0 + span : nb;
        for (int i = 0; i < m; i += 4) {
            const fgg_mm_q8k *xi = x + i * xs;
            __m512 *si = st + 2 * i;
            switch (m - i < 4 ? m - i : 4) {
            case 4: fgg_rp_span_k_vnni(kind, 4, tile, b0, b1, xi, xs, si, i == 0); break;
            case 3: fgg_rp_span_k_vnni(kind, 3, tile, b0, b1, xi, xs, si, i == 0); break;
            case 2: fgg_rp_span_k_vnni(kind, 2, tile, b0, b1, xi, xs, si, i == 0); break;
            default: fgg_rp_span_k_vnni(kind, 1, tile, b0, b1, xi, xs, si, i == 0); break;
            }
        }
    }
    for (int i = 0; i < m; i++)
        _mm512_mask_storeu_ps(out + i * os, keep, fgg_rp_k_has_min(kind) ? _mm512_sub_ps(st[2 * i], st[2 * i + 1]) : st[2 * i]);
}

#define FGG_RP_TILE_K_VNNI(NAME, KIND)                                                                \
static FGG_MM_VNNI void NAME(const uint8_t *tile, ptrdiff_t nb, const void *x, ptrdiff_t xs,            \
                             const int32_t *xo, int m, float *out, ptrdiff_t os, int rows, void *st)    \
{                                                                                                     \
    (void)xo;                                                                                         \
    fgg_rp_tile_k_vnni(KIND, tile, nb, (const fgg_mm_q8k *)x, xs, m, out, os, rows, (__m512 *)st);    \
}
FGG_RP_TILE_K_VNNI(fgg_rp_tile_q4_k_vnni, FGG_RP_Q4_K)
FGG_RP_TILE_K_VNNI(fgg_rp_tile_q6_k_vnni, FGG_RP_Q6_K)
FGG_RP_TILE_K_VNNI(fgg_rp_tile_q5_k_vnni, FGG_RP_Q5_K)
FGG_RP_TILE_K_VNNI(fgg_rp_tile_iq4_xs_vnni, FGG_RP_IQ4_XS)
FGG_RP_TILE_K_VNNI(fgg_rp_tile_q3_k_vnni, FGG_RP_Q3_K)
FGG_RP_TILE_K_VNNI(fgg_rp_tile_q2_k_vnni, FGG_RP_Q2_K)
#undef FGG_RP_TILE_K_VNNI

#define FGG_RP_TILE_VNNI(NAME, KIND)                                                                  \
static FGG_MM_VNNI void NAME(const uint8_t *tile, ptrdiff_t nb, const void *x, ptrdiff_t xs,            \
                             const int32_t *xo, int m, float *out, ptrdiff_t os, int rows, void *st)    \
{                                                                                                     \
    fgg_rp_tile_vnni_kind(KIND, tile, nb, (const fgg_mm_q8 *)x, xs, xo, m, out, os, rows, (__m512 *)st); \
}
FGG_RP_TILE_VNNI(fgg_rp_tile_q8_0_vnni, FGG_MM_B_Q8_0)
FGG_RP_TILE_VNNI(fgg_rp_tile_q4_0_vnni, FGG_MM_B_Q4_0)
FGG_RP_TILE_VNNI(fgg_rp_tile_q5_0_vnni, FGG_MM_B_Q5_0)
FGG_RP_TILE_VNNI(fgg_rp_tile_q4_1_vnni, FGG_MM_B_Q4_1)
FGG_RP_TILE_VNNI(fgg_rp_tile_q5_1_vnni, FGG_MM_B_Q5_1)
FGG_RP_TILE_VNNI(fgg_rp_tile_iq4_nl_vnni, FGG_MM_B_IQ4_NL)
FGG_RP_TILE_VNNI(fgg_rp_tile_mxfp4_vnni, FGG_MM_B_MXFP4)
#undef FGG_RP_TILE_VNNI
#endif

/* st: 64-byte aligned scratch of m * FGG_RP_STATE_BYTES */
typedef void (*fgg_rp_tile_fn)(const uint8_t *tile, ptrdiff_t nb, const void *x, ptrdiff_t xs,
                               const int32_t *xo, int m, float *out, ptrdiff_t os, int rows, void *st);
#define FGG_RP_STATE_BYTES (9 * 64)

#if defined(FGG_MM_INT_SIMD)
/* The AVX2 tile kernel (the avx2 build, and the avx512 build on a CPU without VNNI): a tile as two
 * halves of 8 weight rows (the first or last 32 bytes of each 64), one 256-bit vector each, one row
 * of x at a time (16 vector registers: the 8 accumulators and the group at hand). maddubs makes
 * the 4 products of group k in two int16 sums, madd adds them: the codes u (v = u - c) of Q4_0,
 * Q5_0, Q4_1, Q5_1 and MXFP4 (its table + 12) times x, |v| times x with v's sign moved onto x for
 * Q8_0 and IQ4_NL (c = 0, fgg_mm_b_unsigned_offset; |v| <= 128, so no int16 sum saturates). */

/* The first n (1 to 8) floats of s to out: a half tile's outputs (a last tile may hold fewer rows). */
static inline void fgg_rp_store_half(float *out, __m256 s, int n)
{
    float v[8];
    _mm256_storeu_ps(v, s);
    memcpy(out, v, (size_t)(n < 8 ? n : 8) * sizeof(float));
}

FGG_MM_ALWAYS_INLINE __m256 fgg_rp_scales8(int kind, const uint8_t *tb, int h)
{
    if (kind != FGG_MM_B_MXFP4) return _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(tb + 16 * h)));
    const __m256i e = _mm256_cvtepu8_epi32(_mm_loadl_epi64((const __m128i *)(tb + 8 * h)));
    const __m256i normal = _mm256_slli_epi32(_mm256_sub_epi32(e, _mm256_set1_epi32(1)), 23);
    const __m256i small = _mm256_sllv_epi32(_mm256_set1_epi32(0x200000), e);
    const __m256i low = _mm256_cmpgt_epi32(_mm256_set1_epi32(2), e);
    return _mm256_castsi256_ps(_mm256_blendv_epi8(normal, small, low));
}

/* Group k of half h of a tile block: the codes u, or for Q8_0 and IQ4_NL the signed values. */
FGG_MM_ALWAYS_INLINE __m256i fgg_rp_group8(int kind, const uint8_t *tb, int h, int k)
{
    const uint8_t *v = tb + fgg_rp_values_at(kind) + 32 * h;
    if (kind == FGG_MM_B_Q8_0) return _mm256_loadu_si256((const __m256i *)(v + 64 * k));
    const __m256i lo4 = _mm256_set1_epi8(15);
    const __m256i c = _mm256_loadu_si256((const __m256i *)(v + 64 * (k & 3)));
    __m256i u = _mm256_and_si256(k < 4 ? c : _mm256_srli_epi16(c, 4), lo4);
    if (fgg_rp_has_fifth(kind)) {
        const __m256i q = _mm256_loadu_si256((const __m256i *)(tb + fgg_rp_scale_bytes(kind) + 32 * h));
        const __m256i at4 = k < 4 ? _mm256_slli_epi16(q, 4 - k) : _mm256_srli_epi16(q, k - 4);
        u = _mm256_or_si256(u, _mm256_and_si256(at4, _mm256_set1_epi8(16)));
    } else if (kind == FGG_MM_B_IQ4_NL) {
        u = _mm256_shuffle_epi8(_mm256_broadcastsi128_si256(_mm_loadu_si128((const __m128i *)fgg_iq4nl_values)), u);
    } else if (kind == FGG_MM_B_MXFP4) {
        u = _mm256_shuffle_epi8(_mm256_broadcastsi128_si256(fgg_mm_fp4_unsigned()), u);
    }
    return u;
}

/* One row of x against half h of blocks b0..b1 of one tile, the accumulators carried in st
 * (9 vectors of 8 floats: acc[0..7], off). */
FGG_MM_ALWAYS_INLINE void fgg_rp_span_avx2(int kind, const uint8_t *tile, ptrdiff_t b0, ptrdiff_t b1, int h,
                                           const fgg_mm_q8 *x, const int32_t *xo, __m256 *st, int ahead)
{
    const ptrdiff_t tbb = FGG_RP_ROWS * fgg_mm_b_bytes(kind);
    const int sgn = kind == FGG_MM_B_Q8_0 || kind == FGG_MM_B_IQ4_NL, c = fgg_mm_b_unsigned_offset(kind);
    const __m256i ones = _mm256_set1_epi16(1);
    __m256 acc[8], off = st[8];
    for (int k = 0; k < 8; k++) acc[k] = st[k];
    const uint8_t *tb = tile + b0 * tbb;
    for (ptrdiff_t b = b0; b < b1; b++, tb += tbb) {
        if (ahead) /* the first pass over a tile reads it from memory: ask for it early */
            fgg_rp_prefetch(tb, tbb);
        const fgg_mm_q8 *xb = x + b;
        const int32_t *q4 = (const int32_t *)(const void *)xb->q;
        const int32_t *o = xo + 8 * b;
        const __m256 f = _mm256_mul_ps(fgg_rp_scales8(kind, tb, h), _mm256_set1_ps(xb->d));
        for (int k = 0; k < 8; k++) {
            const __m256i v = fgg_rp_group8(kind, tb, h, k), xk = _mm256_set1_epi32(q4[k]);
            const __m256i p = sgn ? _mm256_maddubs_epi16(_mm256_sign_epi8(v, v), _mm256_sign_epi8(xk, v))
                                  : _mm256_maddubs_epi16(v, xk);
            __m256i lane = _mm256_madd_epi16(p, ones);
            if (c) lane = _mm256_add_epi32(lane, _mm256_set1_epi32(o[k]));
            acc[k] = _mm256_add_ps(acc[k], _mm256_mul_ps(_mm256_cvtepi32_ps(lane), f));
        }
        if (fgg_mm_b_has_offset(kind)) {
            const __m256 mw = _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(tb + 32 + 16 * h)));
            off = _mm256_add_ps(off, _mm256_mul_ps(mw, _mm256_set1_ps(xb->s)));
        }
    }
    st[8] = off;
    for (int k = 0; k < 8; k++) st[k] = acc[k];
}

/* m rows of x against one tile, in spans of its blocks (a span is read from memory once, by the
 * first half of the first row, then from L1). st: m * 2 * 9 vectors of scratch. */
FGG_MM_ALWAYS_INLINE void fgg_rp_tile_avx2_kind(int kind, const uint8_t *tile, ptrdiff_t nb, const fgg_mm_q8 *x,
                                                ptrdiff_t xs, const int32_t *xo, int m, float *out, ptrdiff_t os,
                                                int rows, __m256 *st)
{
    const ptrdiff_t tbb = FGG_RP_ROWS * fgg_mm_b_bytes(kind);
    const ptrdiff_t span = fgg_rp_span_blocks(tbb, 4);
    for (int j = 0; j < 18 * m; j++) st[j] = _mm256_setzero_ps();
    for (ptrdiff_t b0 = 0; b0 < nb; b0 += span) {
        const ptrdiff_t b1 = b0 + span < nb ? b0 + span : nb;
        for (int i = 0; i < m; i++)
            for (int h = 0; h < 2 && 8 * h < rows; h++)
                fgg_rp_span_avx2(kind, tile, b0, b1, h, x + i * xs, xo + i * nb * 8, st + 18 * i + 9 * h, i == 0 && h == 0);
    }
    for (int i = 0; i < m; i++)
        for (int h = 0; h < 2 && 8 * h < rows; h++) {
            const __m256 *a = st + 18 * i + 9 * h;
            __m256 s = _mm256_add_ps(_mm256_add_ps(_mm256_add_ps(a[0], a[4]), _mm256_add_ps(a[2], a[6])),
                                     _mm256_add_ps(_mm256_add_ps(a[1], a[5]), _mm256_add_ps(a[3], a[7])));
            if (fgg_mm_b_has_offset(kind)) s = _mm256_add_ps(s, a[8]);
            fgg_rp_store_half(out + i * os + 8 * h, s, rows - 8 * h);
        }
}

#define FGG_RP_TILE_AVX2(NAME, KIND)                                                                  \
static void NAME(const uint8_t *tile, ptrdiff_t nb, const void *x, ptrdiff_t xs, const int32_t *xo,    \
                 int m, float *out, ptrdiff_t os, int rows, void *st)                                 \
{                                                                                                     \
    fgg_rp_tile_avx2_kind(KIND, tile, nb, (const fgg_mm_q8 *)x, xs, xo, m, out, os, rows, (__m256 *)st); \
}
FGG_RP_TILE_AVX2(fgg_rp_tile_q8_0_avx2, FGG_MM_B_Q8_0)
FGG_RP_TILE_AVX2(fgg_rp_tile_q4_0_avx2, FGG_MM_B_Q4_0)
FGG_RP_TILE_AVX2(fgg_rp_tile_q5_0_avx2, FGG_MM_B_Q5_0)
FGG_RP_TILE_AVX2(fgg_rp_tile_q4_1_avx2, FGG_MM_B_Q4_1)
FGG_RP_TILE_AVX2(fgg_rp_tile_q5_1_avx2, FGG_MM_B_Q5_1)
FGG_RP_TILE_AVX2(fgg_rp_tile_iq4_nl_avx2, FGG_MM_B_IQ4_NL)
FGG_RP_TILE_AVX2(fgg_rp_tile_mxfp4_avx2, FGG_MM_B_MXFP4)
#undef FGG_RP_TILE_AVX2

/* Q4_K on AVX2: half h (8 weight rows) of tile block tb against x's super-block xb, the integer
 * totals added into *tot and the mins' into *mtot. Per sub-block maddubs of the codes with x's 4
 * bytes per group, the 8 groups' int16 sums added in int16 (|sum| <= 8 * 2 * 15 * 127 < 2^15),
 * madd by the scale into the total; the mins' total by vpmulld. */
FGG_MM_ALWAYS_INLINE void fgg_rp_totals_q4_k_avx2(const uint8_t *tb, int h, const fgg_mm_q8k *xb, __m256i *tot,
                                                  __m256i *mtot)
{
    const __m256i lo4 = _mm256_set1_epi8(15);
    const int32_t *q4 = (const int32_t *)(const void *)xb->q;
    for (int p = 0; p < 4; p++) {
        __m256i plo = _mm256_setzero_si256(), phi = _mm256_setzero_si256();
        for (int k = 0; k < 8; k++) {
            const __m256i c = _mm256_loadu_si256((const __m256i *)(tb + FGG_RP_Q4_K_QS + 64 * (8 * p + k) + 32 * h));
            plo = _mm256_add_epi16(plo, _mm256_maddubs_epi16(_mm256_and_si256(c, lo4), _mm256_set1_epi32(q4[16 * p + k])));
            phi = _mm256_add_epi16(phi, _mm256_maddubs_epi16(_mm256_and_si256(_mm256_srli_epi16(c, 4), lo4),
                                                             _mm256_set1_epi32(q4[16 * p + 8 + k])));
        }
        /* each row's scale in both int16 halves of its lane */
        const __m256i s0 = _mm256_cvtepu8_epi32(_mm_loadl_epi64((const __m128i *)(tb + FGG_RP_Q4_K_SC + 32 * p + 8 * h)));
        const __m256i s1 = _mm256_cvtepu8_epi32(_mm_loadl_epi64((const __m128i *)(tb + FGG_RP_Q4_K_SC + 32 * p + 16 + 8 * h)));
        *tot = _mm256_add_epi32(*tot, _mm256_add_epi32(_mm256_madd_epi16(plo, _mm256_or_si256(s0, _mm256_slli_epi32(s0, 16))),
                                                     _mm256_madd_epi16(phi, _mm256_or_si256(s1, _mm256_slli_epi32(s1, 16)))));
        const __m256i m0 = _mm256_cvtepu8_epi32(_mm_loadl_epi64((const __m128i *)(tb + FGG_RP_Q4_K_MN + 32 * p + 8 * h)));
        const __m256i m1 = _mm256_cvtepu8_epi32(_mm_loadl_epi64((const __m128i *)(tb + FGG_RP_Q4_K_MN + 32 * p + 16 + 8 * h)));
        *mtot = _mm256_add_epi32(*mtot, _mm256_add_epi32(
            _mm256_mullo_epi32(m0, _mm256_set1_epi32(xb->bsum[4 * p] + xb->bsum[4 * p + 1])),
            _mm256_mullo_epi32(m1, _mm256_set1_epi32(xb->bsum[4 * p + 2] + xb->bsum[4 * p + 3]))));
    }
}

/* IQ4_XS on AVX2: half h of tile block tb against x's super-block xb, into *tot. Per group the
 * codes through the table to values v (|v| <= 127), |v| times x with v's sign moved onto x by
 * maddubs (|sum| <= 2 * 127 * 127 < 2^15), then madd by the run's scale: the run's 8 groups are
 * added in int32. */
FGG_MM_ALWAYS_INLINE void fgg_rp_totals_iq4_xs_avx2(const uint8_t *tb, int h, const fgg_mm_q8k *xb, __m256i *tot)
{
    const __m256i lo4 = _mm256_set1_epi8(15), low16 = _mm256_set1_epi32(0xffff);
    const __m256i table = _mm256_broadcastsi128_si256(_mm_loadu_si128((const __m128i *)fgg_iq4nl_values));
    const int32_t *q4 = (const int32_t *)(const void *)xb->q;
#pragma GCC unroll 8
    for (int j = 0; j < 8; j++) {
        const __m256i sc = _mm256_cvtepi8_epi32(_mm_loadl_epi64((const __m128i *)(tb + FGG_RP_IQ4_XS_SC + 16 * j + 8 * h)));
        const __m256i s2 = _mm256_or_si256(_mm256_and_si256(sc, low16), _mm256_slli_epi32(sc, 16));
#pragma GCC unroll 4
        for (int c = 0; c < 4; c++) {
            const __m256i b = _mm256_loadu_si256((const __m256i *)(tb + FGG_RP_IQ4_XS_QS + 64 * (4 * j + c) + 32 * h));
            const __m256i vl = _mm256_shuffle_epi8(table, _mm256_and_si256(b, lo4));
            const __m256i vh = _mm256_shuffle_epi8(table, _mm256_and_si256(_mm256_srli_epi16(b, 4), lo4));
            const __m256i xl = _mm256_set1_epi32(q4[8 * j + c]), xh = _mm256_set1_epi32(q4[8 * j + 4 + c]);
            const __m256i pl = _mm256_maddubs_epi16(_mm256_sign_epi8(vl, vl), _mm256_sign_epi8(xl, vl));
            const __m256i ph = _mm256_maddubs_epi16(_mm256_sign_epi8(vh, vh), _mm256_sign_epi8(xh, vh));
            *tot = _mm256_add_epi32(*tot, _mm256_add_epi32(_mm256_madd_epi16(pl, s2), _mm256_madd_epi16(ph, s2)));
        }
    }
}

/* Run `run` (a constant in each call: the shifts take immediates) of the half h of a Q6_K, Q3_K or
 * Q2_K tile block tb against x's bytes q4: its two groups' totals into *tot, its scales (Q2_K: its
 * mins) against x's sums bsum into *otot. The codes u (v = u - 32, u - 4, u): Q6_K's nibble | high
 * bits << 4, Q3_K's 2 bits | third bit << 2, Q2_K's 2 bits. */
FGG_MM_ALWAYS_INLINE void fgg_rp_run_q36_k_avx2(int kind, const uint8_t *tb, int h, const int run, const int32_t *q4,
                                                const int16_t *bsum, __m256i *tot, __m256i *otot)
{
    const __m256i low16 = _mm256_set1_epi32(0xffff);
    const int P = run >> 1, t = run & 3;
    __m256i sc[2], mn[2];
#pragma GCC unroll 2
    for (int half = 0; half < 2; half++) {
        const int g = 2 * run + half;
        if (kind == FGG_RP_Q2_K) {  /* scale in the low nibble, min in the high one */
            const __m256i sm = _mm256_cvtepu8_epi32(_mm_loadl_epi64((const __m128i *)(tb + FGG_RP_Q2_K_SC + 16 * g + 8 * h)));
            sc[half] = _mm256_and_si256(sm, _mm256_set1_epi32(15));
            mn[half] = _mm256_srli_epi32(sm, 4);
        } else {
            const ptrdiff_t at = kind == FGG_RP_Q6_K ? FGG_RP_Q6_K_SC : FGG_RP_Q3_K_SC;
            sc[half] = mn[half] = _mm256_cvtepi8_epi32(_mm_loadl_epi64((const __m128i *)(tb + at + 16 * g + 8 * h)));
        }
        __m256i p[2];
#pragma GCC unroll 2
        for (int pair = 0; pair < 2; pair++) {
            p[pair] = _mm256_setzero_si256();
#pragma GCC unroll 2
            for (int k = 4 * half + 2 * pair; k < 4 * half + 2 * pair + 2; k++) {
                __m256i u;
                if (kind == FGG_RP_Q6_K) {
                    const __m256i c = _mm256_loadu_si256((const __m256i *)(tb + FGG_RP_Q6_K_LO + 64 * (8 * P + k) + 32 * h));
                    const __m256i q = _mm256_loadu_si256((const __m256i *)(tb + FGG_RP_Q6_K_HI + 64 * (8 * (run >> 2) + k) + 32 * h));
                    const __m256i nib = _mm256_and_si256(run & 1 ? _mm256_srli_epi16(c, 4) : c, _mm256_set1_epi8(15));
                    u = _mm256_or_si256(nib, _mm256_and_si256(t == 3 ? _mm256_srli_epi16(q, 2) : _mm256_slli_epi16(q, 4 - 2 * t),
                                                              _mm256_set1_epi8(0x30)));
                } else if (kind == FGG_RP_Q2_K) {
                    const __m256i c = _mm256_loadu_si256((const __m256i *)(tb + FGG_RP_Q2_K_QS + 64 * (8 * (run >> 2) + k) + 32 * h));
                    u = _mm256_and_si256(_mm256_srli_epi16(c, 2 * t), _mm256_set1_epi8(3));
                } else {
                    const __m256i c = _mm256_loadu_si256((const __m256i *)(tb + FGG_RP_Q3_K_QS + 64 * (8 * (run >> 2) + k) + 32 * h));
                    const __m256i m = _mm256_loadu_si256((const __m256i *)(tb + FGG_RP_Q3_K_HM + 64 * k + 32 * h));
                    const __m256i two = _mm256_and_si256(_mm256_srli_epi16(c, 2 * t), _mm256_set1_epi8(3));
                    u = _mm256_or_si256(two, _mm256_and_si256(run >= 2 ? _mm256_srli_epi16(m, run - 2) : _mm256_slli_epi16(m, 2 - run),
                                                              _mm256_set1_epi8(4)));
                }
                p[pair] = _mm256_add_epi16(p[pair], _mm256_maddubs_epi16(u, _mm256_set1_epi32(q4[8 * run + k])));
            }
        }
        const __m256i s2 = _mm256_or_si256(_mm256_and_si256(sc[half], low16), _mm256_slli_epi32(sc[half], 16));
        *tot = _mm256_add_epi32(*tot, _mm256_add_epi32(_mm256_madd_epi16(p[0], s2), _mm256_madd_epi16(p[1], s2)));
    }
    /* scales (mins) 2 run and 2 run + 1 against x's sums over those 16 values each */
    const __m256i spair = _mm256_or_si256(_mm256_and_si256(mn[0], low16), _mm256_slli_epi32(mn[1], 16));
    const int32_t bpair = (int32_t)((uint32_t)(uint16_t)bsum[2 * run] | (uint32_t)(uint16_t)bsum[2 * run + 1] << 16);
    *otot = _mm256_add_epi32(*otot, _mm256_madd_epi16(spair, _mm256_set1_epi32(bpair)));
}

/* A K kind on AVX2: half h (8 weight rows) of a tile against one row of x over super-blocks
 * b0..b1, acc (and the mins' accm) carried in st. Per super-block the integer totals (Q4_K:
 * fgg_rp_totals_q4_k_avx2; IQ4_XS: fgg_rp_totals_iq4_xs_avx2; Q6_K, Q3_K, Q2_K: fgg_rp_run_q36_k_avx2 per run, per group of 16
 * values the codes times x by maddubs, two groups of 4 added in int16 (|sum| <= 4 * 63 * 127 <
 * 2^15), madd by the scale; the offset (32, 4) times x's sums per 16 by the scales taken off, or
 * Q2_K's mins times the sums as a total of their own), then the row kernels' float steps, 8 rows
 * wide. */
FGG_MM_ALWAYS_INLINE void fgg_rp_span_k_avx2(int kind, const uint8_t *tile, ptrdiff_t b0, ptrdiff_t b1, int h,
                                             const fgg_mm_q8k *x, __m256 *st, int ahead)
{
    const ptrdiff_t tbb = FGG_RP_ROWS * fgg_rp_block_bytes(kind);
    __m256 acc = st[0], accm = st[1];
    const uint8_t *tb = tile + b0 * tbb;
    for (ptrdiff_t b = b0; b < b1; b++, tb += tbb) {
        if (ahead) /* the first pass over a tile reads it from memory: ask for it early */
            fgg_rp_prefetch(tb, tbb);
        const fgg_mm_q8k *xb = x + b;
        __m256i tot = _mm256_setzero_si256(), mtot = _mm256_setzero_si256();
        if (kind == FGG_RP_Q4_K) {
            fgg_rp_totals_q4_k_avx2(tb, h, xb, &tot, &mtot);
        } else if (kind == FGG_RP_IQ4_XS) {
            fgg_rp_totals_iq4_xs_avx2(tb, h, xb, &tot);
        } else {
            const int32_t *q4 = (const int32_t *)(const void *)xb->q;
            fgg_rp_run_q36_k_avx2(kind, tb, h, 0, q4, xb->bsum, &tot, &mtot);
            fgg_rp_run_q36_k_avx2(kind, tb, h, 1, q4, xb->bsum, &tot, &mtot);
            fgg_rp_run_q36_k_avx2(kind, tb, h, 2, q4, xb->bsum, &tot, &mtot);
            fgg_rp_run_q36_k_avx2(kind, tb, h, 3, q4, xb->bsum, &tot, &mtot);
            fgg_rp_run_q36_k_avx2(kind, tb, h, 4, q4, xb->bsum, &tot, &mtot);
            fgg_rp_run_q36_k_avx2(kind, tb, h, 5, q4, xb->bsum, &tot, &mtot);
            fgg_rp_run_q36_k_avx2(kind, tb, h, 6, q4, xb->bsum, &tot, &mtot);
            fgg_rp_run_q36_k_avx2(kind, tb, h, 7, q4, xb->bsum, &tot, &mtot);
            if (!fgg_rp_k_has_min(kind)) tot = _mm256_sub_epi32(tot, _mm256_slli_epi32(mtot, kind == FGG_RP_Q6_K ? 5 : 2));
        }
        const __m256 xd = _mm256_set1_ps(xb->d);
        const __m256 dw = _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(tb + 16 * h)));
        acc = _mm256_add_ps(acc, _mm256_mul_ps(_mm256_cvtepi32_ps(tot), _mm256_mul_ps(dw, xd)));
        if (fgg_rp_k_has_min(kind)) {
            const __m256 mw = _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(tb + 32 + 16 * h)));
            accm = _mm256_add_ps(accm, _mm256_mul_ps(_mm256_cvtepi32_ps(mtot), _mm256_mul_ps(mw, xd)));
        }
    }
    st[0] = acc;
    st[1] = accm;
}

/* m rows of x against one tile of a K kind with an AVX2 span (Q4_K, Q6_K, Q3_K, Q2_K, IQ4_XS), in spans
 * of its super-blocks; st: per row and half the lanes' float sums and (Q4_K, Q2_K) the mins'. */
FGG_MM_ALWAYS_INLINE void fgg_rp_tile_k_avx2(int kind, const uint8_t *tile, ptrdiff_t nb, const void *xv, ptrdiff_t xs,
                                             int m, float *out, ptrdiff_t os, int rows, void *stv)
{
    const fgg_mm_q8k *x = (const fgg_mm_q8k *)xv;
    __m256 *st = (__m256 *)stv;
    const ptrdiff_t tbb = FGG_RP_ROWS * fgg_rp_block_bytes(kind);
    const ptrdiff_t span = fgg_rp_span_blocks(tbb, 2);
    for (int j = 0; j < 4 * m; j++) st[j] = _mm256_setzero_ps();
    for (ptrdiff_t b0 = 0; b0 < nb; b0 += span) {
        const ptrdiff_t b1 = b0 + span < nb ? b0 + span : nb;
        for (int i = 0; i < m; i++)
            for (int h = 0; h < 2 && 8 * h < rows; h++)
                fgg_rp_span_k_avx2(kind, tile, b0, b1, h, x + i * xs, st + 4 * i + 2 * h, i == 0 && h == 0);
    }
    for (int i = 0; i < m; i++)
        for (int h = 0; h < 2 && 8 * h < rows; h++) {
            const __m256 *a = st + 4 * i + 2 * h;
            fgg_rp_store_half(out + i * os + 8 * h, fgg_rp_k_has_min(kind) ? _mm256_sub_ps(a[0], a[1]) : a[0], rows - 8 * h);
        }
}

#define FGG_RP_TILE_K_AVX2(NAME, KIND)                                                                \
static void NAME(const uint8_t *tile, ptrdiff_t nb, const void *xv, ptrdiff_t xs, const int32_t *xo,   \
                 int m, float *out, ptrdiff_t os, int rows, void *stv)                                \
{                                                                                                     \
    (void)xo;                                                                                         \
    fgg_rp_tile_k_avx2(KIND, tile, nb, xv, xs, m, out, os, rows, stv);                                \
}
FGG_RP_TILE_K_AVX2(fgg_rp_tile_q4_k_avx2, FGG_RP_Q4_K)
FGG_RP_TILE_K_AVX2(fgg_rp_tile_q6_k_avx2, FGG_RP_Q6_K)
FGG_RP_TILE_K_AVX2(fgg_rp_tile_q3_k_avx2, FGG_RP_Q3_K)
FGG_RP_TILE_K_AVX2(fgg_rp_tile_q2_k_avx2, FGG_RP_Q2_K)
FGG_RP_TILE_K_AVX2(fgg_rp_tile_iq4_xs_avx2, FGG_RP_IQ4_XS)
#undef FGG_RP_TILE_K_AVX2
#endif


/* The tile kernel of a type id in this build: the VNNI one (vnni: the CPU has VNNI and it is
 * on), else the AVX2 one, else (the portable build, or no layout) NULL; *c its offset. */
static inline fgg_rp_tile_fn fgg_rp_tile_kernel(int type_id, int vnni, int *c)
{
    const int kind = fgg_rp_kind(type_id);
    if (kind < 0) return NULL;
#if FGG_MM_HAVE_VNNI
    if (vnni && fgg_rp_is_k(kind)) {
        *c = 0;
        switch (kind) {
        case FGG_RP_Q4_K: return fgg_rp_tile_q4_k_vnni;
        case FGG_RP_Q5_K: return fgg_rp_tile_q5_k_vnni;
        case FGG_RP_IQ4_XS: return fgg_rp_tile_iq4_xs_vnni;
        case FGG_RP_Q3_K: return fgg_rp_tile_q3_k_vnni;
        case FGG_RP_Q2_K: return fgg_rp_tile_q2_k_vnni;
        default: return fgg_rp_tile_q6_k_vnni;
        }
    }
    if (vnni) {
        *c = fgg_rp_offset(kind);
        switch (kind) {
        case FGG_MM_B_Q8_0: return fgg_rp_tile_q8_0_vnni;
        case FGG_MM_B_Q4_0: return fgg_rp_tile_q4_0_vnni;
        case FGG_MM_B_Q5_0: return fgg_rp_tile_q5_0_vnni;
        case FGG_MM_B_Q4_1: return fgg_rp_tile_q4_1_vnni;
        case FGG_MM_B_Q5_1: return fgg_rp_tile_q5_1_vnni;
        case FGG_MM_B_IQ4_NL: return fgg_rp_tile_iq4_nl_vnni;
        default: return fgg_rp_tile_mxfp4_vnni;
        }
    }
#else
    (void)vnni;
#endif
#if defined(FGG_MM_INT_SIMD)
    if (fgg_rp_is_k(kind)) {
        *c = 0;
        /* none for Q5_K (level with its row kernels: the fifth bits cost what the layout saves) */
        switch (kind) {
        case FGG_RP_Q4_K: return fgg_rp_tile_q4_k_avx2;
        case FGG_RP_Q6_K: return fgg_rp_tile_q6_k_avx2;
        case FGG_RP_Q3_K: return fgg_rp_tile_q3_k_avx2;
        case FGG_RP_Q2_K: return fgg_rp_tile_q2_k_avx2;
        case FGG_RP_IQ4_XS: return fgg_rp_tile_iq4_xs_avx2;
        default: return NULL;
        }
    }
    *c = fgg_mm_b_unsigned_offset(kind);
    switch (kind) {
    case FGG_MM_B_Q8_0: return fgg_rp_tile_q8_0_avx2;
    case FGG_MM_B_Q4_0: return fgg_rp_tile_q4_0_avx2;
    case FGG_MM_B_Q5_0: return fgg_rp_tile_q5_0_avx2;
    case FGG_MM_B_Q4_1: return fgg_rp_tile_q4_1_avx2;
    case FGG_MM_B_Q5_1: return fgg_rp_tile_q5_1_avx2;
    case FGG_MM_B_IQ4_NL: return fgg_rp_tile_iq4_nl_avx2;
    default: return fgg_rp_tile_mxfp4_avx2;
    }
#else
    *c = 0;
    return NULL;
#endif
}

#endif /* FGG_REPACK_H */
