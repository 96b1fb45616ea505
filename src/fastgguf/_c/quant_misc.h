/* Quantizers of TQ1_0, TQ2_0 (ternary), MXFP4, NVFP4 (4-bit floats) and Q1_0, Q2_0 (sign / 2-bit).
 *
 * Bit-identical to ggml's quantize_<type> as ggml-base is built. None of these types has an
 * importance-matrix path in ggml: the imatrix argument is accepted and ignored, as ggml does.
 */
#ifndef FGG_QUANT_MISC_H
#define FGG_QUANT_MISC_H

#include "iq_tables.h"
#include "quant_common.h"

/* ------------------------------------------------------------------ TQ1_0 / TQ2_0 */

/* C's (int)lroundf(v) and (int)roundf(v) as gcc compiles them for x86-64, where ggml-base is
 * built. They differ only where v has no int value: for a block of subnormals 1 / amax is inf,
 * and v is +-inf or NaN (0 * inf). lroundf then gives LONG_MIN (glibc converts with cvttss2si),
 * whose low 32 bits are 0; the cast of roundf's float gives INT_MIN ("integer indefinite"). */
static inline int fgg__q_lroundf_int(float v) {
    if (fabsf(v) < 4194304.0f) return fgg_q_round_away(v);
    if (fabsf(v) < 9223372036854775808.0f) return (int)(uint32_t)(uint64_t)(int64_t)roundf(v); /* low 32 bits */
    return 0;
}

static inline int fgg__q_roundf_int(float v) {
    if (fabsf(v) < 4194304.0f) return fgg_q_round_away(v);
    return fabsf(v) < 2147483648.0f ? (int)roundf(v) : INT32_MIN;
}

/* trit of x * id: -1, 0, 1 -> 0, 1, 2 (ggml: lroundf(x * id) + 1) */
static inline int fgg__q_trit(float v) {
    return fgg__q_lroundf_int(v) + 1;
}

/* base-3 number of the trits of x[0], x[stride], ... (count of them), the first most significant */
static inline unsigned fgg__q_trits(const float *x, int stride, int count, float id) {
    unsigned t = 0;
    for (int n = 0; n < count; ++n) t = t * 3u + (unsigned)fgg__q_trit(x[stride * n] * id);
    return t;
}

#if FGG_IQ_SIMD && FGG_HAVE_AVX2
/* (The AVX-512 build runs these 8-lane steps too: 16-lane ones measured 3 % faster for TQ1_0 and
 * 11 % slower for TQ2_0.) */

/* roundf of x[0..8) * id as int32 lanes, for a finite id (then |x * id| <= 1, so lroundf is roundf
 * and it is 1 from 0.5 up, -1 from -0.5 down, else 0): the two compare masks (-1) subtracted */
static inline __m256i fgg__q_round_unit8_avx2(const float *x, __m256 id) {
    const __m256 v = _mm256_mul_ps(_mm256_loadu_ps(x), id);
    return _mm256_sub_epi32(_mm256_castps_si256(_mm256_cmp_ps(v, _mm256_set1_ps(-0.5f), _CMP_LE_OQ)),
                            _mm256_castps_si256(_mm256_cmp_ps(v, _mm256_set1_ps(0.5f), _CMP_GE_OQ)));
}

/* trits (roundf + 1) of x[0..8) * id */
static inline __m256i fgg__q_trits8_avx2(const float *x, __m256 id) {
    return _mm256_add_epi32(fgg__q_round_unit8_avx2(x, id), _mm256_set1_epi32(1));
}

/* base-3 numbers of 5 trits (x[k stride], k = 0..4, the first most significant) in 8 lanes (the
 * roundings in base 3, plus 121 for the five +1), then ceil(t * 256 / 243) by a multiply and
 * shift (exact for every t <= 242, below 2^32) */
static inline __m256i fgg__q_tq1_bytes8_avx2(const float *x, int stride, __m256 id) {
    __m256i t = fgg__q_round_unit8_avx2(x, id);
    for (int k = 1; k < 5; ++k)
        t = _mm256_add_epi32(_mm256_add_epi32(_mm256_slli_epi32(t, 1), t), fgg__q_round_unit8_avx2(x + k * stride, id)); /* 3t + r */
    t = _mm256_add_epi32(_mm256_slli_epi32(t, 8), _mm256_set1_epi32(121 * 256 + 242));
    return _mm256_srli_epi32(_mm256_mullo_epi32(t, _mm256_set1_epi32(69043)), 24);
}

/* the 4 bytes of the last 16 values: byte m holds the trits of x[m], x[m + 4], x[m + 8], x[m + 12]
 * and a fifth, zero trit */
static inline uint32_t fgg__q_tq1_tail4_avx2(const float *x, __m256 id) {
    const __m256i a = fgg__q_trits8_avx2(x, id), b = fgg__q_trits8_avx2(x + 8, id);
    const __m128i part[4] = {_mm256_castsi256_si128(a), _mm256_extracti128_si256(a, 1),
                             _mm256_castsi256_si128(b), _mm256_extracti128_si256(b, 1)};
    __m128i t = part[0];
    for (int k = 1; k < 5; ++k) { /* 3t + trit; the fifth trit is 0 */
        t = _mm_add_epi32(_mm_slli_epi32(t, 1), t);
        if (k < 4) t = _mm_add_epi32(t, part[k]);
    }
    t = _mm_add_epi32(_mm_slli_epi32(t, 8), _mm_set1_epi32(242));
    t = _mm_srli_epi32(_mm_mullo_epi32(t, _mm_set1_epi32(69043)), 24);
    return (uint32_t)_mm_cvtsi128_si32(_mm_shuffle_epi8(t, _mm_setr_epi8(0, 4, 8, 12, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1)));
}
#endif

/* 256 elements -> 48 bytes of five trits (first 160 as 32 columns, then 80 as 16 columns),
 * 4 bytes of four trits (the last 16), fp16 amax. A byte holds ceil(t * 256 / 243), where t is
 * the base-3 number of its trits, most significant first. */
static void fgg__q_tq1_block(const float *x, uint8_t *blk, float d) {
    const float id = d != 0.0f ? 1.0f / d : 0.0f;
#if FGG_IQ_SIMD && FGG_HAVE_AVX2
    if (isfinite(id)) {
        const __m256 vid = _mm256_set1_ps(id);
        __m256i b[6];
        for (int g = 0; g < 4; ++g) b[g] = fgg__q_tq1_bytes8_avx2(x + 8 * g, 32, vid);
        for (int g = 0; g < 2; ++g) b[4 + g] = fgg__q_tq1_bytes8_avx2(x + 160 + 8 * g, 16, vid);
        _mm256_storeu_si256((__m256i *)blk, fgg_q_pack_bytes_avx2(b[0], b[1], b[2], b[3]));
        _mm_storeu_si128((__m128i *)(blk + 32),
                         _mm256_castsi256_si128(fgg_q_pack_bytes_avx2(b[4], b[5], b[4], b[5])));
        const uint32_t tail = fgg__q_tq1_tail4_avx2(x + 240, vid);
        memcpy(blk + 48, &tail, 4);
    } else
#endif
    {
        for (int m = 0; m < 32; ++m) blk[m] = (uint8_t)((fgg__q_trits(x + m, 32, 5, id) * 256u + 242u) / 243u);
        for (int m = 0; m < 16; ++m)
            blk[32 + m] = (uint8_t)((fgg__q_trits(x + 160 + m, 16, 5, id) * 256u + 242u) / 243u);
        for (int m = 0; m < 4; ++m) {
            const unsigned t = 3u * fgg__q_trits(x + 240 + m, 4, 4, id); /* a fifth, zero trit */
            blk[48 + m] = (uint8_t)((t * 256u + 242u) / 243u);
        }
    }
    fgg_store_u16le(blk + 52, fgg_float_to_half(d));
}

/* 256 elements -> 64 bytes of four 2-bit trits (element m + 32 n of each 128 in bits 2n), fp16 amax */
static void fgg__q_tq2_block(const float *x, uint8_t *blk, float d) {
    const float id = d != 0.0f ? 1.0f / d : 0.0f;
    fgg_store_u16le(blk + 64, fgg_float_to_half(d));
#if FGG_IQ_SIMD && FGG_HAVE_AVX2
    if (isfinite(id)) {
        const __m256 vid = _mm256_set1_ps(id);
        for (int h = 0; h < 2; ++h) {
            __m256i b[4];
            for (int g = 0; g < 4; ++g) {
                const float *c = x + 128 * h + 8 * g;
                b[g] = fgg__q_round_unit8_avx2(c + 96, vid); /* sum of 4^n (r_n + 1): 4^n r_n + 85 */
                for (int n = 2; n >= 0; --n) b[g] = _mm256_add_epi32(_mm256_slli_epi32(b[g], 2), fgg__q_round_unit8_avx2(c + 32 * n, vid));
                b[g] = _mm256_add_epi32(b[g], _mm256_set1_epi32(85));
            }
            _mm256_storeu_si256((__m256i *)(blk + 32 * h), fgg_q_pack_bytes_avx2(b[0], b[1], b[2], b[3]));
        }
        return;
    }
#endif
    for (int h = 0; h < 2; ++h) {
        for (int m = 0; m < 32; ++m) {
            unsigned q = 0;
            for (int n = 0; n < 4; ++n) q += ((unsigned)fgg__q_trit(x[128 * h + m + 32 * n] * id) & 3u) << (2 * n);
            blk[32 * h + m] = (uint8_t)q;
        }
    }
}

/* Rows of TQ1_0 (54-byte blocks) or TQ2_0 (66): d = the block's largest magnitude. check: return
 * the first row holding a NaN or an infinity (seen in d's bits; that row written in part, the rows
 * after it not at all), or -1; else every row is written and -1 returned */
static int64_t fgg__q_tq_rows(const float *src, uint8_t *dst, int64_t n_rows, int64_t n_per_row, size_t bsz,
                              void (*block)(const float *, uint8_t *, float), int check) {
    const int64_t nb = n_per_row / 256;
    for (int64_t r = 0; r < n_rows; ++r) {
        for (int64_t i = 0; i < nb; ++i) {
            const float *x = src + r * n_per_row + 256 * i;
            const uint32_t bits = fgg_q_amax_bits(x, 256);
            if (check && bits >= FGG_Q_INF_BITS) return r;
            float d;
            memcpy(&d, &bits, sizeof d);
            block(x, dst + (size_t)(r * nb + i) * bsz, d);
        }
    }
    return -1;
}

static void fgg_quantize_tq1_0(const float *src, uint8_t *dst, int64_t n_rows, int64_t n_per_row,
                               const float *imatrix) {
    (void)imatrix;
    fgg__q_tq_rows(src, dst, n_rows, n_per_row, 54, fgg__q_tq1_block, 0);
}

static void fgg_quantize_tq2_0(const float *src, uint8_t *dst, int64_t n_rows, int64_t n_per_row,
                               const float *imatrix) {
    (void)imatrix;
    fgg__q_tq_rows(src, dst, n_rows, n_per_row, 66, fgg__q_tq2_block, 0);
}

static int64_t fgg_quantize_checked_tq1_0(const float *src, uint8_t *dst, int64_t n_rows, int64_t n_per_row) {
    return fgg__q_tq_rows(src, dst, n_rows, n_per_row, 54, fgg__q_tq1_block, 1);
}

static int64_t fgg_quantize_checked_tq2_0(const float *src, uint8_t *dst, int64_t n_rows, int64_t n_per_row) {
    return fgg__q_tq_rows(src, dst, n_rows, n_per_row, 66, fgg__q_tq2_block, 1);
}

/* ------------------------------------------------------------------ MXFP4 / NVFP4 */

/* doubled E2M1 values, codes 0..15 */
static const int8_t fgg_q_e2m1x2[16] = {0, 1, 2, 3, 4, 6, 8, 12, 0, -1, -2, -3, -4, -6, -8, -12};

/* code whose value (times e) is nearest to x; the first code wins ties */
static inline uint8_t fgg__q_e2m1_code(float x, float e) {
    uint8_t best = 0;
    float best_err = fabsf((float)fgg_q_e2m1x2[0] * e - x);
    for (int i = 1; i < 16; ++i) {
        float err = fabsf((float)fgg_q_e2m1x2[i] * e - x);
        if (err < best_err) {
            best = (uint8_t)i;
            best_err = err;
        }
    }
    return best;
}

/* codes[i] = fgg__q_e2m1_code(x[i], e) for n (a multiple of 8) elements, one element per lane.
 * Only the 8 magnitudes need trying, against |x|: a code of the other sign is never nearer, and
 * where it ties (the zeros) the first code, the positive one, wins; the error of code c + 8 for
 * x < 0, |-v e - x|, is the same float as |v e - |x||. The sign bit joins unless the code is 0. */
static inline void fgg__q_e2m1_codes(const float *x, int n, float e, uint8_t *codes) {
#if FGG_IQ_SIMD
    fgg_iq_vf value[8];
    for (int c = 0; c < 8; ++c) value[c] = fgg_q_splat8((float)fgg_q_e2m1x2[c] * e);
    for (int i = 0; i < n; i += FGG_IQ_W) {
        fgg_iq_vf v;
        memcpy(&v, x + i, sizeof v);
        const fgg_iq_vf a = fgg_q_abs8(v);
        fgg_iq_vf best_err = fgg_q_abs8(value[0] - a);
        fgg_iq_vi best = fgg_q_round8(fgg_q_splat8(0.0f));
        for (int c = 1; c < 8; ++c) {
            const fgg_iq_vf err = fgg_q_abs8(value[c] - a);
            const fgg_iq_vi m = err < best_err;
            best = fgg_q_isel(m, best - best + c, best);
            best_err = fgg_iq_select(m, err, best_err);
        }
        best |= (v < 0.0f) & (best != 0) & 8;
        fgg_q_store_bytes(codes + i, best);
    }
#else
    for (int i = 0; i < n; ++i) codes[i] = fgg__q_e2m1_code(x[i], e);
#endif
}

/* ggml's shared exponent: (uint8_t)(floor(log2f(amax)) - 2 + 127) in float. For a normal amax
 * whose significand is below 1.9999 (its log2 at least 1.4e-5 below the next integer, far more
 * than log2f's rounding), floor(log2f(amax)) is the binary exponent; otherwise the C library's
 * log2f decides, as in ggml. */
static inline uint8_t fgg__q_mxfp4_exp(float amax) {
    uint32_t bits;
    memcpy(&bits, &amax, sizeof bits);
    const uint32_t ex = (bits >> 23) & 0xffu;
    if (ex != 0 && (bits & 0x7fffffu) < 0x7ffcb9u) /* significand < 1.9999 */
        return (uint8_t)(int)((float)((int)ex - 127) - 2.0f + 127.0f);
    return (uint8_t)(int)(floorf(log2f(amax)) - 2.0f + 127.0f);
}

static void fgg_quantize_mxfp4(const float *src, uint8_t *dst, int64_t n_rows, int64_t n_per_row,
                               const float *imatrix) {
    (void)imatrix;
    const int64_t nb = n_rows * (n_per_row / 32);
    for (int64_t i = 0; i < nb; ++i) {
        const float *x = src + 32 * i;
        uint8_t *blk = dst + 17 * i;
        const float amax = fgg_q_amax(x, 32);
        const uint8_t e = amax > 0.0f ? fgg__q_mxfp4_exp(amax) : 0;
        const float d = fgg_e8m0_half_f32[e];
        blk[0] = e;
        uint8_t c[32];
        fgg__q_e2m1_codes(x, 32, d, c);
        for (int j = 0; j < 16; ++j) blk[1 + j] = (uint8_t)(c[j] | (c[j + 16] << 4));
    }
}

/* UE4M3 (unsigned, 4 exponent bits biased by 7, 3 mantissa bits) of x > 0, rounding the
 * mantissa half up on the first dropped bit, saturating at 0x7e; 0 for x <= 0 */
static inline uint8_t fgg__q_to_ue4m3(float x) {
    if (!(x > 0.0f)) return 0;
    if (x > 448.0f) x = 448.0f;
    uint32_t bits;
    memcpy(&bits, &x, sizeof bits);
    int ex = (int)((bits >> 23) & 0xffu) - 127 + 7;
    if (ex <= 0) {
        int man = (int)(x * 512.0f + 0.5f);
        if (man > 7) man = 7;
        return man < 1 ? 0 : (uint8_t)man;
    }
    if (ex >= 15) return 0x7e;
    int man = (int)((bits >> 20) & 7u) + (int)((bits >> 19) & 1u);
    if (man > 7) {
        man = 0;
        if (++ex >= 15) return 0x7e;
    }
    return (uint8_t)((ex << 3) | man);
}

/* 64 elements: four UE4M3 scales (one per 16), then 32 bytes of E2M1 codes */
static void fgg_quantize_nvfp4(const float *src, uint8_t *dst, int64_t n_rows, int64_t n_per_row,
                               const float *imatrix) {
    (void)imatrix;
    const int64_t nb = n_rows * (n_per_row / 64);
    for (int64_t i = 0; i < nb; ++i) {
        uint8_t *blk = dst + 36 * i;
        for (int s = 0; s < 4; ++s) {
            const float *x = src + 64 * i + 16 * s;
            const float amax = fgg_q_amax(x, 16);
            const uint8_t u = fgg__q_to_ue4m3(amax / 6.0f);
            blk[s] = u;
            const float d = fgg_ue4m3_half_f32[u];
            uint8_t c[16];
            fgg__q_e2m1_codes(x, 16, d, c);
            for (int j = 0; j < 8; ++j) blk[4 + 8 * s + j] = (uint8_t)(c[j] | (c[j + 8] << 4));
        }
    }
}

/* ------------------------------------------------------------------ Q1_0 / Q2_0 */

/* 128 elements: fp16 mean |x|, then one bit per element (x >= 0), element j in bit j % 8 of byte j / 8 */
static void fgg_quantize_q1_0(const float *src, uint8_t *dst, int64_t n_rows, int64_t n_per_row,
                              const float *imatrix) {
    (void)imatrix;
    const int64_t nb = n_rows * (n_per_row / 128);
    for (int64_t i = 0; i < nb; ++i) {
        const float *x = src + 128 * i;
        uint8_t *blk = dst + 18 * i;
        float s = 0.0f;
        for (int j = 0; j < 128; ++j) s += fabsf(x[j]);
        fgg_store_u16le(blk, fgg_float_to_half(s / 128.0f));
        for (int b = 0; b < 16; ++b) {
            unsigned byte = 0;
            for (int k = 0; k < 8; ++k) byte |= (unsigned)(x[8 * b + k] >= 0.0f) << k;
            blk[2 + b] = (uint8_t)byte;
        }
    }
}

/* 64 elements: fp16 amax, then 2 bits per element: round(x / amax) clamped to -1..2, plus one */
static void fgg_quantize_q2_0(const float *src, uint8_t *dst, int64_t n_rows, int64_t n_per_row,
                              const float *imatrix) {
    (void)imatrix;
    const int64_t nb = n_rows * (n_per_row / 64);
    for (int64_t i = 0; i < nb; ++i) {
        const float *x = src + 64 * i;
        uint8_t *blk = dst + 18 * i;
        const float amax = fgg_q_amax(x, 64);
        const float id = amax > 0.0f ? 1.0f / amax : 0.0f;
        fgg_store_u16le(blk, fgg_float_to_half(amax));
#if FGG_IQ_SIMD && FGG_HAVE_AVX2
        if (isfinite(id)) { /* then |x * id| <= 1: the level is a trit (roundf + 1), inside the clamp */
            const __m256 vid = _mm256_set1_ps(id);
            __m256i q[8];
            for (int c = 0; c < 8; ++c) q[c] = fgg__q_trits8_avx2(x + 8 * c, vid);
            /* 4 levels per byte, element j in bits 2 (j % 4): byte pairs q0 + 4 q1, then q01 + 16 q23 */
            __m256i w[2];
            for (int h = 0; h < 2; ++h) {
                const __m256i lv = fgg_q_pack_bytes_avx2(q[4 * h], q[4 * h + 1], q[4 * h + 2], q[4 * h + 3]);
                const __m256i pairs = _mm256_maddubs_epi16(lv, _mm256_set1_epi16(0x0401));
                w[h] = _mm256_madd_epi16(pairs, _mm256_set1_epi32(0x00100001));
            }
            const __m256i z = _mm256_setzero_si256();
            _mm_storeu_si128((__m128i *)(blk + 2), _mm256_castsi256_si128(fgg_q_pack_bytes_avx2(w[0], w[1], z, z)));
            continue;
        }
#endif
        for (int b = 0; b < 16; ++b) {
            unsigned byte = 0;
            for (int k = 0; k < 4; ++k) {
                const int q = fgg_q_clampi(fgg__q_roundf_int(x[4 * b + k] * id) + 1, 0, 3);
                byte |= (unsigned)q << (2 * k);
            }
            blk[2 + b] = (uint8_t)byte;
        }
    }
}

#endif /* FGG_QUANT_MISC_H */
