/* IQ4_NL and IQ4_XS quantizers: the bytes ggml's quantize_iq4_nl / quantize_iq4_xs write (portable
 * build, no FMA contraction), for any finite input, with or without an importance matrix.
 *
 *   void fgg_quantize_iq4_nl(const float *src, uint8_t *dst, int64_t n_rows, int64_t n_per_row,
 *                            const float *imatrix)      n_per_row % 32 == 0, 18-byte blocks
 *   void fgg_quantize_iq4_xs(...)                       n_per_row % 256 == 0, 136-byte blocks
 *
 * The rules that decide the bits (learned from ggml-quants.c, written anew):
 *  - weights: imatrix[j] * sqrtf(sigma2 + x[j]^2) with sigma2 = (sum of x^2 over the 32 or 256
 *    values of the super-block, left to right) * (2/size); without imatrix x[j]^2.
 *  - a 32-value block whose largest |x| is below 1e-15 gets scale 0.
 *  - otherwise 16 candidate inverse scales are tried: 1/(max/127) (max = the first value of
 *    largest magnitude, signed), then (t - 127)/max for t = -7..7. For each, every x*id goes to
 *    the nearest of the 16 non-linear values (ties, measured as x - lo < hi - x in float, go up),
 *    and the weighted sums sumqx = sum (w*q)*x, sumq2 = sum (w*q)*q are taken left to right. The
 *    first candidate sets d = sumqx/sumq2 (0 if sumq2 <= 0) and best = d*sumqx; a later one
 *    replaces them when sumq2 > 0 and sumqx^2 > best*sumq2.
 *  - IQ4_NL stores fp16(d) and re-quantizes with 1/d (the float, not the fp16 value).
 *  - IQ4_XS: ds = -(the block scale of largest magnitude)/32 is stored as fp16; each block gets
 *    l = nearest_int(scale/ds) clamped to [-32, 31], stored as l + 32 (low nibbles in scales_l,
 *    high 2 bits in scales_h), and is re-quantized with 1/(ds*l) (0 when that is 0).
 *
 * Speed: the 16 candidates run as the 16 lanes of one vector (each lane the exact scalar sequence
 * of its candidate, sums in the same order); the final re-quantization runs 16 values per vector.
 */
#ifndef FGG_QUANT_IQ4_H
#define FGG_QUANT_IQ4_H

#include "quant_common.h"

/* The 16 values a 4-bit non-linear code stands for (float copies of ggml's kvalues_iq4nl). */
static const float fgg_iq4_values[16] = {
    -127.f, -104.f, -83.f, -65.f, -49.f, -35.f, -22.f, -10.f,
    1.f, 13.f, 25.f, 38.f, 53.f, 69.f, 89.f, 113.f,
};

/* Index of the value nearest to x: below the first or above the last value the end index,
 * otherwise the pair (lo, hi) around x by bisection, then lo when x - lo < hi - x. A NaN takes
 * every "not below" branch and ends at 15, as the bisection does. */
static inline int fgg_iq4_index(float x) {
    const float *v = fgg_iq4_values;
    if (x <= v[0]) return 0;
    if (x >= v[15]) return 15;
    int lo = 0, hi = 15;
    while (hi - lo > 1) {
        int mid = (lo + hi) / 2;
        if (x < v[mid]) hi = mid;
        else lo = mid;
    }
    return x - v[lo] < v[hi] - x ? lo : hi;
}

#if FGG_IQ_SIMD
/* fgg_iq4_index for FGG_IQ_W lanes: the bisection's lower end is the count of inner values x is
 * not below (the same for NaN: none are "below"); lo and hi are then that value and the next,
 * picked by blends (AVX) or built as sums of the steps between values (small integers: exact).
 * *q gets the value. */
FGG_IQ_INLINE fgg_iq_vi fgg_iq4_index_v(fgg_iq_vf x, fgg_iq_vf *q) {
    const float *v = fgg_iq4_values;
    fgg_iq_vf lo = fgg_iq_splat(v[0]), hi = fgg_iq_splat(v[1]);
    fgg_iq_vi count = {0};
    for (int t = 1; t < 15; ++t) {
        fgg_iq_vi up = ~(x < fgg_iq_splat(v[t]));
        count -= up;
#if FGG_HAVE_AVX /* one blend instruction each */
        lo = fgg_iq_select(up, fgg_iq_splat(v[t]), lo);
        hi = fgg_iq_select(up, fgg_iq_splat(v[t + 1]), hi);
#else
        lo += (fgg_iq_vf)(up & (fgg_iq_vi)fgg_iq_splat(v[t] - v[t - 1]));
        hi += (fgg_iq_vf)(up & (fgg_iq_vi)fgg_iq_splat(v[t + 1] - v[t]));
#endif
    }
    fgg_iq_vi take_lo = (x - lo) < (hi - x);
    *q = fgg_iq_select(take_lo, lo, hi);
    return count + 1 + take_lo;
}
#endif

/* The scale of one 32-value block (amax >= 1e-15, max its signed largest value): the candidate
 * search described at the top. */
static inline float fgg_iq4_block_scale(const float *xb, const float *w, float max) {
    const float *v = fgg_iq4_values;
#if FGG_IQ_SIMD
    float ids[16], sx[16], s2[16];
    ids[0] = 1.0f / (-max / v[0]);
    for (int t = -7; t <= 7; ++t) ids[t + 8] = (float)(t - 127) / max;
    for (int c = 0; c < 16; c += FGG_IQ_W) {
        fgg_iq_vf id = fgg_iq_loadu(ids + c);
        fgg_iq_vf sumqx = {0}, sumq2 = {0};
        for (int j = 0; j < 32; ++j) {
            fgg_iq_vf xj = fgg_iq_splat(xb[j]), q;
            (void)fgg_iq4_index_v(id * xj, &q);
            fgg_iq_vf wq = fgg_iq_splat(w[j]) * q;
            sumqx += wq * xj;
            sumq2 += wq * q;
        }
        memcpy(sx + c, &sumqx, sizeof sumqx);
        memcpy(s2 + c, &sumq2, sizeof sumq2);
    }
    float d = s2[0] > 0 ? sx[0] / s2[0] : 0.f;
    float best = d * sx[0];
    for (int k = 1; k < 16; ++k) {
        if (s2[k] > 0 && sx[k] * sx[k] > best * s2[k]) {
            d = sx[k] / s2[k];
            best = d * sx[k];
        }
    }
    return d;
#else
    float d = 0.f, best = 0.f;
    for (int k = 0; k < 16; ++k) {
        float id = k == 0 ? 1.0f / (-max / v[0]) : (float)(k - 8 - 127) / max;
        float sumqx = 0, sumq2 = 0;
        for (int j = 0; j < 32; ++j) {
            float q = v[fgg_iq4_index(id * xb[j])];
            float wq = w[j] * q;
            sumqx += wq * xb[j];
            sumq2 += wq * q;
        }
        if (k == 0) {
            d = sumq2 > 0 ? sumqx / sumq2 : 0.f;
            best = d * sumqx;
        } else if (sumq2 > 0 && sumqx * sumqx > best * sumq2) {
            d = sumqx / sumq2;
            best = d * sumqx;
        }
    }
    return d;
#endif
}

/* Codes of 32 values x*id (id the same for all), packed as IQ4 stores them: byte j holds value j
 * in its low and value j + 16 in its high nibble. */
static inline void fgg_iq4_pack(const float *x, float id, uint8_t *qs) {
    uint8_t L[32];
#if FGG_IQ_SIMD
    fgg_iq_vf vid = fgg_iq_splat(id), q;
    for (int h = 0; h < 32; h += FGG_IQ_W) {
        fgg_iq_vi l = fgg_iq4_index_v(vid * fgg_iq_loadu(x + h), &q);
        for (int j = 0; j < FGG_IQ_W; ++j) L[h + j] = (uint8_t)l[j];
    }
#else
    for (int j = 0; j < 32; ++j) L[j] = (uint8_t)fgg_iq4_index(id * x[j]);
#endif
    for (int j = 0; j < 16; ++j) qs[j] = (uint8_t)(L[j] | (L[j + 16] << 4));
}

/* Block weights of ggml's IQ4 quantizer for the n values at x (imatrix qw or NULL). */
static inline void fgg_iq4_weights(const float *x, const float *qw, int n, float *w) {
    if (qw) {
        float sigma2 = 0;
        for (int j = 0; j < n; ++j) sigma2 += x[j] * x[j];
        sigma2 *= 2.f / (float)n;
        for (int j = 0; j < n; ++j) w[j] = qw[j] * sqrtf(sigma2 + x[j] * x[j]);
    } else {
        for (int j = 0; j < n; ++j) w[j] = x[j] * x[j];
    }
}

/* Scale of a 32-value block (0 for an all-but-zero one). */
static inline float fgg_iq4_scale(const float *xb, const float *w) {
    float amax = 0, max = 0;
    for (int j = 0; j < 32; ++j) {
        float ax = fabsf(xb[j]);
        if (ax > amax) {
            amax = ax;
            max = xb[j];
        }
    }
    if (amax < 1e-15f) return 0.f;
    return fgg_iq4_block_scale(xb, w, max);
}

static void fgg_quantize_iq4_nl(const float *src, uint8_t *dst, int64_t n_rows, int64_t n_per_row,
                                const float *imatrix) {
    int64_t nb = n_per_row / 32;
    float w[32];
    for (int64_t r = 0; r < n_rows; ++r) {
        const float *x = src + r * n_per_row;
        uint8_t *y = dst + r * nb * 18;
        for (int64_t b = 0; b < nb; ++b, x += 32, y += 18) {
            fgg_iq4_weights(x, imatrix ? imatrix + 32 * b : NULL, 32, w);
            float d = fgg_iq4_scale(x, w);
            fgg_store_u16le(y, fgg_float_to_half(d));
            fgg_iq4_pack(x, d ? 1 / d : 0.f, y + 2);
        }
    }
}

static void fgg_quantize_iq4_xs(const float *src, uint8_t *dst, int64_t n_rows, int64_t n_per_row,
                                const float *imatrix) {
    int64_t nb = n_per_row / 256;
    float w[256], scales[8];
    for (int64_t r = 0; r < n_rows; ++r) {
        const float *x = src + r * n_per_row;
        uint8_t *y = dst + r * nb * 136;
        for (int64_t b = 0; b < nb; ++b, x += 256, y += 136) {
            fgg_iq4_weights(x, imatrix ? imatrix + 256 * b : NULL, 256, w);
            float max_scale = 0, amax_scale = 0;
            for (int ib = 0; ib < 8; ++ib) {
                scales[ib] = fgg_iq4_scale(x + 32 * ib, w + 32 * ib);
                if (fabsf(scales[ib]) > amax_scale) {
                    amax_scale = fabsf(scales[ib]);
                    max_scale = scales[ib];
                }
            }
            float d = -max_scale / 32;
            float id = d ? 1 / d : 0.f;
            uint16_t scales_h = 0;
            uint8_t scales_l[4] = {0, 0, 0, 0};
            for (int ib = 0; ib < 8; ++ib) {
                int l = fgg_iq_nearest_int(id * scales[ib]);
                l = l < -32 ? -32 : l > 31 ? 31 : l;
                float dl = d * (float)l;
                fgg_iq4_pack(x + 32 * ib, dl ? 1 / dl : 0.f, y + 8 + 16 * ib);
                l += 32;
                scales_l[ib / 2] |= (uint8_t)((l & 0xf) << 4 * (ib % 2));
                scales_h |= (uint16_t)((l >> 4) << 2 * ib);
            }
            fgg_store_u16le(y, fgg_float_to_half(d));
            fgg_store_u16le(y + 2, scales_h);
            memcpy(y + 4, scales_l, 4);
        }
    }
}

#endif /* FGG_QUANT_IQ4_H */
