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

#include "quant_legacy.h"

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

/* fgg_q_fit_q3 on many groups (see fgg_q_fit_signed8 for how lanes keep the scalar bits). A
 * lane whose pass changed nothing would change nothing in later passes, so the passes run
 * until no lane changes or five have run. */
#if FGG_IQ_SIMD
/* FGG_Q3_LANES groups: its passes are one long chain of dependent steps per lane, so twice the
 * vectors of the other fits run side by side */
#define FGG_Q3_G (2 * FGG_Q_G)
#define FGG_Q3_LANES (FGG_Q3_G * FGG_Q_W)
static void fgg__q_fit_q3_w(int n, int nmax, const float *const xs[], int8_t *const Ls[], float out[]) {
    fgg_q_vf8 x[16][FGG_Q3_G], w[16][FGG_Q3_G];
    fgg_q_vi8 L[16][FGG_Q3_G];
    fgg_q_vf8 xt[16];
    for (int h = 0; h < FGG_Q3_G; ++h) {
        fgg_q_transpose8(n, xs + h * FGG_Q_W, xt);
        for (int i = 0; i < n; ++i) x[i][h] = xt[i];
    }
    const fgg_q_vf8 zf = fgg_q_splat8(0.0f);
    fgg_q_vf8 amax[FGG_Q3_G] = {zf}, vmax[FGG_Q3_G] = {zf}, iscale[FGG_Q3_G], sumlx[FGG_Q3_G] = {zf}, suml2[FGG_Q3_G] = {zf};
    fgg_q_vi8 zero[FGG_Q3_G];
    for (int i = 0; i < n; ++i) {
        for (int h = 0; h < FGG_Q3_G; ++h) {
            fgg_q_vf8 a = fgg_q_abs8(x[i][h]);
            fgg_q_vi8 m = a > amax[h];
            amax[h] = fgg_q_fsel(m, a, amax[h]);
            vmax[h] = fgg_q_fsel(m, x[i][h], vmax[h]);
            w[i][h] = x[i][h] * x[i][h];
        }
    }
    for (int h = 0; h < FGG_Q3_G; ++h) {
        zero[h] = amax[h] < FGG_Q_EPS;
        iscale[h] = (float)(-nmax) / vmax[h];
    }
    for (int i = 0; i < n; ++i) {
        for (int h = 0; h < FGG_Q3_G; ++h) {
            fgg_q_vi8 l = fgg_q_clamp8(fgg_q_round8(iscale[h] * x[i][h]), -nmax, nmax - 1);
            L[i][h] = l;
            fgg_q_vf8 fl = fgg_q_tof8(l);
            sumlx[h] += w[i][h] * x[i][h] * fl;
            suml2[h] += w[i][h] * fl * fl;
        }
    }
    for (int pass = 0; pass < 5; ++pass) {
        fgg_q_vi8 changed = L[0][0] - L[0][0];
        for (int i = 0; i < n; ++i) {
            for (int h = 0; h < FGG_Q3_G; ++h) {
                const fgg_q_vf8 wx = w[i][h] * x[i][h];
                fgg_q_vf8 fl = fgg_q_tof8(L[i][h]);
                fgg_q_vf8 slx0 = sumlx[h] - wx * fl;
                fgg_q_vf8 sl2 = suml2[h] - w[i][h] * fl * fl;
                fgg_q_vi8 nl = fgg_q_clamp8(fgg_q_round8(x[i][h] * sl2 / slx0), -nmax, nmax - 1);
                fgg_q_vf8 fn = fgg_q_tof8(nl);
                fgg_q_vf8 slx = slx0 + wx * fn;
                sl2 = sl2 + w[i][h] * fn * fn;
                fgg_q_vi8 upd = (slx0 > 0.0f) & (nl != L[i][h]) & (sl2 > 0.0f) &
                                (slx * slx * suml2[h] > sumlx[h] * sumlx[h] * sl2);
                L[i][h] = fgg_q_isel(upd, nl, L[i][h]);
                sumlx[h] = fgg_q_fsel(upd, slx, sumlx[h]);
                suml2[h] = fgg_q_fsel(upd, sl2, suml2[h]);
                changed |= upd;
            }
        }
        int any = 0;
        for (int k = 0; k < FGG_Q_W; ++k) any |= changed[k];
        if (!any) break;
    }
    for (int h = 0; h < FGG_Q3_G; ++h) {
        fgg_q_vf8 r = fgg_q_fsel(suml2[h] > 0.0f, sumlx[h] / suml2[h], zf);
        r = fgg_q_fsel(zero[h], zf, r);
        for (int k = 0; k < FGG_Q_W; ++k) {
            out[h * FGG_Q_W + k] = r[k];
            for (int i = 0; i < n; ++i) Ls[h * FGG_Q_W + k][i] = zero[h][k] ? 0 : (int8_t)(L[i][h][k] + nmax);
        }
    }
}
#endif

/* fgg_q_fit_q3 on count groups (n <= 16) */
static void fgg_q_fit_q3_n(int count, int n, int nmax, const float *const xs[], int8_t *const Ls[], float out[]) {
#if FGG_IQ_SIMD
    for (int g0 = 0; g0 < count; g0 += FGG_Q3_LANES) {
        const float *px[FGG_Q3_LANES];
        int8_t *pl[FGG_Q3_LANES], spare[16];
        float o[FGG_Q3_LANES];
        for (int k = 0; k < FGG_Q3_LANES; ++k) { /* a short tail repeats its last group */
            const int g = g0 + k < count ? g0 + k : count - 1;
            px[k] = xs[g];
            pl[k] = g0 + k < count ? Ls[g] : spare;
        }
        fgg__q_fit_q3_w(n, nmax, px, pl, o);
        for (int k = 0; k < FGG_Q3_LANES && g0 + k < count; ++k) out[g0 + k] = o[k];
    }
#else
    for (int k = 0; k < count; ++k) out[k] = fgg_q_fit_q3(n, nmax, xs[k], Ls[k]);
#endif
}

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
            hd = fgg_iq_fp16(max_scale / 15.0f);
        } else {
            memset(sc, 0, 16);
        }
        if (max_min > 0.0f) {
            const float im = 15.0f / max_min;
            for (int j = 0; j < 16; ++j) sc[j] = (uint8_t)(sc[j] | (fgg_iq_nearest_int(im * mins[j]) << 4));
            hm = fgg_iq_fp16(max_min / 15.0f);
        }
        fgg_q_put16(blk + 80, hd);
        fgg_q_put16(blk + 82, hm);
        fgg__q2k_requant(x, blk, sc, fgg_q_half_to_float(hd), fgg_q_half_to_float(hm), L);
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
    const uint16_t hd = fgg_iq_fp16(dm), hm = fgg_iq_fp16(mm);
    fgg_q_put16(blk + 80, hd);
    fgg_q_put16(blk + 82, hm);
    for (int j = 0; j < 16; ++j) sc[j] = (uint8_t)(Ls[j] | (Lm[j] << 4));
    fgg__q2k_requant(x, blk, sc, fgg_q_half_to_float(hd), fgg_q_half_to_float(hm), L);
}

/* ------------------------------------------------------------------ Q3_K (110 bytes) */

static inline void fgg__q3k_put_scale(uint8_t *sc, int j, int l) {
    if (j < 8) sc[j] = (uint8_t)(l & 0xf);
    else sc[j - 8] = (uint8_t)(sc[j - 8] | ((l & 0xf) << 4));
    sc[j % 4 + 8] = (uint8_t)(sc[j % 4 + 8] | ((l >> 4) << (2 * (j / 4))));
}

static void fgg__q3k_finish(const float *x, uint8_t *blk, int8_t *L) {
    uint8_t *hmask = blk, *qs = blk + 32, *sc = blk + 96;
    const float d = fgg_q_half_to_float((uint16_t)(blk[108] | (blk[109] << 8)));
    for (int j = 0; j < 16; ++j) {
        int s = j < 8 ? (sc[j] & 0xf) : (sc[j - 8] >> 4);
        s = (int8_t)((s | (((sc[8 + j % 4] >> (2 * (j / 4))) & 3) << 4)) - 32);
        const float dj = d * (float)s;
        if (dj == 0.0f) continue;
        fgg_q_requant(x + 16 * j, 16, 0.0f, dj, -4, 3, 4, (uint8_t *)L + 16 * j);
    }
    /* level bit 2 of element 32 b + m goes to bit b of hmask[m] (branch-free: the bit is random) */
    memset(hmask, 0, 32);
    uint8_t U[256];
    for (int b = 0; b < 8; ++b) {
        for (int m = 0; m < 32; ++m) {
            const uint8_t l = (uint8_t)L[32 * b + m];
            const uint8_t hi = (uint8_t)(l > 3);
            hmask[m] = (uint8_t)(hmask[m] | (hi << b));
            U[32 * b + m] = (uint8_t)(l - 4 * hi);
        }
    }
    fgg__q_pack2(qs, U);
}

/* One Q3_K super-block. Without an importance matrix (qw NULL) the caller has run the sub-block
 * fits (L, scales: see fgg__q3k_rows); with one, they run here. */
static void fgg__q3k_block(const float *x, uint8_t *blk, const float *qw, int8_t *L, float *scales) {
    uint8_t *sc = blk + 96;
    memset(sc, 0, 12);
    if (!qw) {
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
            hd = fgg_iq_fp16(1.0f / iscale);
        }
        fgg_q_put16(blk + 108, hd);
    } else {
        float w[256], sw[16];
        const float *xs[16], *ws[16];
        int8_t *Ls16[16];
        int8_t Ls[16];
        const float sigma2 = 2.0f * fgg_q_sumsq(x, 256) / 256.0f;
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
        for (int j = 0; j < 16; ++j) fgg__q3k_put_scale(sc, j, Ls[j]);
        fgg_q_put16(blk + 108, fgg_iq_fp16(d_block));
    }
    fgg__q3k_finish(x, blk, L);
}

/* Q3_K rows: without an importance matrix, the sub-block fits of two super-blocks run together */
static void fgg_quantize_q3_k(const float *src, uint8_t *dst, int64_t n_rows, int64_t n_per_row,
                              const float *imatrix) {
    const int64_t nb = n_per_row / 256;
    int8_t L[512];
    float scales[32];
    const float *xs[32];
    int8_t *Ls[32];
    for (int j = 0; j < 32; ++j) Ls[j] = L + 16 * j;
    for (int64_t r = 0; r < n_rows; ++r) {
        for (int64_t i = 0; i < nb; i += 2) {
            const int count = nb - i >= 2 ? 2 : 1;
            const float *x = src + r * n_per_row + 256 * i;
            uint8_t *blk = dst + (size_t)(r * nb + i) * 110;
            if (!imatrix) {
                for (int j = 0; j < 16 * count; ++j) xs[j] = x + 16 * j;
                fgg_q_fit_q3_n(16 * count, 16, 4, xs, Ls, scales);
            }
            for (int b = 0; b < count; ++b) {
                fgg__q3k_block(x + 256 * b, blk + 110 * (size_t)b, imatrix ? imatrix + 256 * (i + b) : NULL,
                               L + 256 * b, scales + 16 * b);
            }
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
        fgg_q_put16(blk, fgg_iq_fp16(max_scale / 63.0f));
        fgg_q_put16(blk + 2, fgg_iq_fp16(max_min / 63.0f));
    } else {
        uint8_t Ls[8], Lm[8];
        const float d_block = fgg_q_fit_pos(8, 63, scales, Ls, sw);
        const float m_block = fgg_q_fit_pos(8, 63, mins, Lm, sw);
        for (int j = 0; j < 8; ++j) {
            fgg__q_put_scale_min_k4(sc, j, Ls[j] < 63 ? Ls[j] : 63, Lm[j] < 63 ? Lm[j] : 63);
        }
        fgg_q_put16(blk, fgg_iq_fp16(d_block));
        fgg_q_put16(blk + 2, fgg_iq_fp16(m_block));
    }
    const float d = fgg_q_half_to_float((uint16_t)(blk[0] | (blk[1] << 8)));
    const float dmin = fgg_q_half_to_float((uint16_t)(blk[2] | (blk[3] << 8)));
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
    fgg_q_fit_signed_n(16, 16, 32, xs, ws, Ls16, scales);
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
    const uint16_t hd = fgg_iq_fp16(1.0f / iscale);
    fgg_q_put16(blk + 208, hd);
    for (int j = 0; j < 16; ++j) {
        int l = fgg_iq_nearest_int(iscale * scales[j]);
        sc[j] = (int8_t)(l < 127 ? l : 127);
    }
    const float d = fgg_q_half_to_float(hd);
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
#if FGG_IQ_SIMD
    for (int j = 0; j < 256; j += FGG_Q_W) {
        fgg_q_vf8 v;
        memcpy(&v, x + j, sizeof v);
        fgg_q_vi8 l = fgg_q_round8(v * iscale);
        fgg_q_store_bytes((uint8_t *)q + j, fgg_q_isel(l > 127, l - l + 127, l));
    }
#else
    for (int j = 0; j < 256; ++j) {
        int v = fgg_iq_nearest_int(iscale * x[j]);
        q[j] = (int8_t)(v < 127 ? v : 127);
    }
#endif
    for (int j = 0; j < 16; ++j) {
        int s = 0;
        for (int i = 0; i < 16; ++i) s += q[16 * j + i];
        blk[260 + 2 * j] = (uint8_t)s;
        blk[261 + 2 * j] = (uint8_t)((unsigned)s >> 8);
    }
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
