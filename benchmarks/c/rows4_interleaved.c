/* A measured dead end, kept so it can be rerun: ggml's repacking idea (several weight rows' values
 * interleaved, so one vector multiply serves 4 weight rows) applied on the fly to the K-quant
 * integer kernel, against the kernel fastgguf uses (dot.h's fgg_mm_rows_q4_k / fgg_mm_rows_q6_k).
 *
 * rows4_k unpacks 4 weight rows' super-block (dot.h's unpackers), interleaves them 8 bytes per row
 * (W[j][c] holds values 8c..8c+7 of sub-block j of rows 0..3), and multiplies each against 8
 * bytes of x broadcast to the 4 rows. The 4 maddubs of a 32-value sub-block then sum in int16
 * before one madd with the 4 rows' scales: 1.25 multiply instructions per 32 products where
 * dot.h's kernel spends 2 (maddubs, then madd with the sub-block's scale). Same integer sums per
 * row and super-block; the float steps differ (one total per row and super-block instead of
 * 8 lanes), so the outputs agree to rounding, not bits.
 *
 * Measured on the 2-core AMD EPYC VM (Zen 3, AVX2), 64 weight rows, one thread, ratio = dot.h's
 * time / rows4's: Q4_K 0.82-0.93 with 8 rows of x at K = 14336 (0.95 at K = 2048), 1.05-1.12 with 16-32 rows,
 * 1.21-1.33 with 32-64 rows at K = 1024-4096; Q6_K 0.88-1.05. Not integrated (README, "Against
 * llama.cpp").
 *
 *   gcc -O3 -ffp-contract=off -fno-strict-aliasing -mavx2 -mfma -mf16c -mbmi2 \
 *       -mprefer-vector-width=128 -I src/fastgguf/_c benchmarks/c/rows4_interleaved.c -o /tmp/rows4 -lm
 *   /tmp/rows4 q4|q6 K M
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "dot.h"

/* 4 weight rows interleaved: W[j][c] qword r = bytes 8c..8c+7 of row r's sub-block j */
typedef struct {
    __m256i w[8][4];
    __m256i sca[8], scb[8]; /* words 4r..4r+3: row r's scale of values 0..15 / 16..31 of sub-block j */
    __m256i bs[4];
    float d[4], dmin[4];
} ksb4;

static inline void ksb4_make(int kind, const uint8_t *w, ptrdiff_t row_bytes, ptrdiff_t b, ksb4 *t)
{
    fgg_mm_ksb s[4];
    const ptrdiff_t bytes = fgg_mm_k_bytes(kind);
    for (int r = 0; r < 4; r++) { t->dmin[r] = 0; fgg_mm_k_unpack_fields(kind, w + r * row_bytes + b * bytes, &s[r], &t->d[r], &t->dmin[r]); t->bs[r] = s[r].bs; }
    for (int j = 0; j < 8; j++) {
        __m256i t0 = _mm256_unpacklo_epi64(s[0].u[j], s[1].u[j]), t1 = _mm256_unpackhi_epi64(s[0].u[j], s[1].u[j]);
        __m256i t2 = _mm256_unpacklo_epi64(s[2].u[j], s[3].u[j]), t3 = _mm256_unpackhi_epi64(s[2].u[j], s[3].u[j]);
        t->w[j][0] = _mm256_permute2x128_si256(t0, t2, 0x20);
        t->w[j][2] = _mm256_permute2x128_si256(t0, t2, 0x31);
        t->w[j][1] = _mm256_permute2x128_si256(t1, t3, 0x20);
        t->w[j][3] = _mm256_permute2x128_si256(t1, t3, 0x31);
        /* sc[j] low half: scale of first 16 (8 words), high: second 16 */
        __m256i a01 = _mm256_unpacklo_epi64(s[0].sc[j], s[1].sc[j]); /* [r0 lo4w, r1 lo4w | r0 hi4w, r1 hi4w] */
        __m256i a23 = _mm256_unpacklo_epi64(s[2].sc[j], s[3].sc[j]);
        t->sca[j] = _mm256_permute2x128_si256(a01, a23, 0x20);
        t->scb[j] = _mm256_permute2x128_si256(a01, a23, 0x31);
    }
}

static inline __m256i bq(const int8_t *p) { return _mm256_castpd_si256(_mm256_broadcast_sd((const double *)p)); }

/* 4 rows x m rows of x; out[i*os + r] */
static void rows4_k(int kind, const uint8_t *w, ptrdiff_t row_bytes, ptrdiff_t nsb, const fgg_mm_q8k *x, ptrdiff_t xs,
                    int m, float *out, ptrdiff_t os)
{
    float acc[64][4], accm[64][4];
    const int per32 = kind == FGG_MM_K4 || kind == FGG_MM_K5;
    memset(acc, 0, sizeof acc); memset(accm, 0, sizeof accm);
    ksb4 t;
    for (ptrdiff_t b = 0; b < nsb; b++) {
        ksb4_make(kind, w, row_bytes, b, &t);
        __m128 dv = _mm_loadu_ps(t.d), mv = _mm_loadu_ps(t.dmin);
        for (int i = 0; i < m; i += 2) {
            const int two = i + 1 < m;
            const fgg_mm_q8k *xa = x + i * xs + b, *xc = two ? xa + xs : xa;
            __m256i la = _mm256_setzero_si256(), lc = _mm256_setzero_si256();
            for (int j = 0; j < 8; j++) {
                const int8_t *qa = xa->q + 32 * j, *qc = xc->q + 32 * j;
                __m256i w0 = t.w[j][0], w1 = t.w[j][1], w2 = t.w[j][2], w3 = t.w[j][3];
                __m256i a01 = _mm256_add_epi16(_mm256_maddubs_epi16(w0, bq(qa)), _mm256_maddubs_epi16(w1, bq(qa + 8)));
                __m256i a23 = _mm256_add_epi16(_mm256_maddubs_epi16(w2, bq(qa + 16)), _mm256_maddubs_epi16(w3, bq(qa + 24)));
                __m256i c01 = _mm256_add_epi16(_mm256_maddubs_epi16(w0, bq(qc)), _mm256_maddubs_epi16(w1, bq(qc + 8)));
                __m256i c23 = _mm256_add_epi16(_mm256_maddubs_epi16(w2, bq(qc + 16)), _mm256_maddubs_epi16(w3, bq(qc + 24)));
                if (per32) {
                    la = _mm256_add_epi32(la, _mm256_madd_epi16(_mm256_add_epi16(a01, a23), t.sca[j]));
                    lc = _mm256_add_epi32(lc, _mm256_madd_epi16(_mm256_add_epi16(c01, c23), t.sca[j]));
                } else {
                    la = _mm256_add_epi32(la, _mm256_add_epi32(_mm256_madd_epi16(a01, t.sca[j]), _mm256_madd_epi16(a23, t.scb[j])));
                    lc = _mm256_add_epi32(lc, _mm256_add_epi32(_mm256_madd_epi16(c01, t.sca[j]), _mm256_madd_epi16(c23, t.scb[j])));
                }
            }
            for (int u = 0; u < 1 + two; u++) {
                const fgg_mm_q8k *xb = u ? xc : xa;
                __m256i l = u ? lc : la;
                float *ac = acc[i + u], *am = accm[i + u];
                __m256i bsum = _mm256_loadu_si256((const __m256i *)xb->bsum);
                __m256i h01 = _mm256_hadd_epi32(_mm256_madd_epi16(bsum, t.bs[0]), _mm256_madd_epi16(bsum, t.bs[1]));
                __m256i h23 = _mm256_hadd_epi32(_mm256_madd_epi16(bsum, t.bs[2]), _mm256_madd_epi16(bsum, t.bs[3]));
                __m256i h = _mm256_hadd_epi32(h01, h23);
                __m128i btot = _mm_add_epi32(_mm256_castsi256_si128(h), _mm256_extracti128_si256(h, 1));
                __m256i dd = _mm256_hadd_epi32(l, l);
                __m128i dtot = _mm256_castsi256_si128(_mm256_permute4x64_epi64(dd, 0x08));
                __m128 dx = _mm_set1_ps(xb->d);
                if (fgg_mm_k_has_min(kind))
                    _mm_storeu_ps(am, _mm_add_ps(_mm_loadu_ps(am), _mm_mul_ps(_mm_cvtepi32_ps(btot), _mm_mul_ps(mv, dx))));
                else
                    dtot = _mm_sub_epi32(dtot, btot);
                _mm_storeu_ps(ac, _mm_add_ps(_mm_loadu_ps(ac), _mm_mul_ps(_mm_cvtepi32_ps(dtot), _mm_mul_ps(dv, dx))));
            }
        }
    }
    for (int i = 0; i < m; i++) for (int r = 0; r < 4; r++) out[i * os + r] = acc[i][r] - accm[i][r];
}

static double now(void) { struct timespec t; clock_gettime(CLOCK_MONOTONIC, &t); return t.tv_sec + 1e-9 * t.tv_nsec; }

int main(int argc, char **argv)
{
    int kind = argc > 1 && !strcmp(argv[1], "q6") ? FGG_MM_K6 : FGG_MM_K4;
    const int N = 64, K = argc > 2 ? atoi(argv[2]) : 14336, M = argc > 3 ? atoi(argv[3]) : 8, nsb = K / 256;
    const ptrdiff_t bytes = fgg_mm_k_bytes(kind), rb = nsb * bytes;
    uint8_t *w = malloc(N * rb);
    srand(1);
    for (ptrdiff_t i = 0; i < N * rb; i++) w[i] = rand();
    for (int n = 0; n < N; n++) for (int b = 0; b < nsb; b++) {  /* sane f16 scales */
        uint8_t *wb = w + n * rb + b * bytes;
        if (kind == FGG_MM_K4) { wb[0] = 0; wb[1] = 0x3c; wb[2] = 0; wb[3] = 0x38; } else { wb[208] = 0; wb[209] = 0x3c; }
    }
    float *xf = malloc(sizeof(float) * M * K);
    for (int i = 0; i < M * K; i++) xf[i] = (rand() / (float)RAND_MAX) - 0.5f;
    fgg_mm_q8k *xq = malloc(sizeof(fgg_mm_q8k) * M * nsb);
    for (int i = 0; i < M; i++) fgg_mm_quantize_x8k(xf + i * K, K, xq + i * nsb);
    float *o1 = malloc(4 * M * N), *o2 = malloc(4 * M * N);
    double best1 = 1e9, best2 = 1e9;
    for (int rep = 0; rep < 15; rep++) {
        double t0 = now();
        for (int n = 0; n < N; n++) (kind == FGG_MM_K4 ? fgg_mm_rows_q4_k : fgg_mm_rows_q6_k)(w + n * rb, nsb, xq, nsb, M, o1 + n, N);
        double t1 = now();
        for (int n = 0; n < N; n += 4) rows4_k(kind, w + n * rb, rb, nsb, xq, nsb, M, o2 + n, N);
        double t2 = now();
        if (t1 - t0 < best1) best1 = t1 - t0;
        if (t2 - t1 < best2) best2 = t2 - t1;
    }
    double md = 0, mx = 0;
    for (int i = 0; i < M * N; i++) { double e = fabs(o1[i] - o2[i]); if (e > md) md = e; if (fabs(o1[i]) > mx) mx = fabs(o1[i]); }
    double macs = (double)N * K * M;
    printf("%s K=%d M=%d: current %.4f ns/mac, rows4 %.4f ns/mac, ratio %.2f; maxdiff %.3g of %.3g\n", kind == FGG_MM_K4 ? "q4_K" : "q6_K", K, M,
           best1 / macs * 1e9, best2 / macs * 1e9, best1 / best2, md, mx);
    return 0;
}
