/* One row of x, one thread: ggml's own vec_dot (libggml-cpu of a llama.cpp build) against
 * fastgguf's integer kernel, type by type, on the same weight blocks (random bytes, with the
 * blocks' float scales set to sane values). "x ggml" is ggml's time / fastgguf's within one run,
 * so an A/B of two dot.h versions (build once with each on the include path, run them in turn)
 * compares ratios, which this shared machine's noise moves less than times. The checksum (the
 * outputs' sum) must not change between two versions of dot.h.
 *
 *   L=LLAMA_CPP/build/bin
 *   gcc -O3 -ffp-contract=off -fno-strict-aliasing -mavx2 -mfma -mf16c -mbmi2 -mprefer-vector-width=128 \
 *       -I src/fastgguf/_c benchmarks/c/int_row1.c -o /tmp/int_row1 -L$L -lggml-cpu -lggml-base -Wl,-rpath,$L -lm
 *   /tmp/int_row1 TYPE N K        (TYPE: q4_k, iq4_xs, ...; "all" for every type in the table)
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "dot.h"

typedef void (*ggml_dot)(int n, float *s, size_t bs, const void *vx, size_t bx, const void *vy, size_t by, int nrc);
typedef void (*ggml_quantize_x)(const float *x, void *y, int64_t k);
#define GGML_DOTS(X) X(q4_0_q8_0) X(q4_1_q8_1) X(q5_0_q8_0) X(q5_1_q8_1) X(q8_0_q8_0) X(iq4_nl_q8_0) X(mxfp4_q8_0) \
    X(q2_K_q8_K) X(q3_K_q8_K) X(q4_K_q8_K) X(q5_K_q8_K) X(q6_K_q8_K) X(iq4_xs_q8_K) X(iq2_xxs_q8_K) X(iq2_xs_q8_K) \
    X(iq2_s_q8_K) X(iq3_xxs_q8_K) X(iq3_s_q8_K) X(iq1_s_q8_K) X(tq1_0_q8_K) X(tq2_0_q8_K)
#define DECLARE(NAME) void ggml_vec_dot_##NAME(int, float *, size_t, const void *, size_t, const void *, size_t, int);
GGML_DOTS(DECLARE)
void quantize_row_q8_0(const float *x, void *y, int64_t k);
void quantize_row_q8_1(const float *x, void *y, int64_t k);
void quantize_row_q8_K(const float *x, void *y, int64_t k);

typedef void (*ours_fn)(const uint8_t *, ptrdiff_t, const void *, ptrdiff_t, int, float *, ptrdiff_t);

/* name, values and bytes per block, its fp16 scales' offsets (-1: none) or (e8m0: 1) MXFP4's
 * exponent byte, ggml's dot and x quantizer (bytes per 32 or 256 x values), ours and x per 256 */
static const struct type_case {
    const char *name;
    int block, bytes, half_at[2], e8m0;
    ggml_dot ggml;
    ggml_quantize_x ggml_x;
    int ggml_x_bytes;
    ours_fn ours;
    int per256;
} CASES[] = {
#define PER32(N, B, H0, H1, E, G, GX, GB) {#N, 32, B, {H0, H1}, E, ggml_vec_dot_##G, GX, GB, (ours_fn)fgg_mm_rows_##N, 0}
#define PER256(N, B, H0, H1, G) {#N, 256, B, {H0, H1}, 0, ggml_vec_dot_##G, quantize_row_q8_K, 292, (ours_fn)fgg_mm_rows_##N, 1}
    PER32(q4_0, 18, 0, -1, 0, q4_0_q8_0, quantize_row_q8_0, 34),
    PER32(q4_1, 20, 0, 2, 0, q4_1_q8_1, quantize_row_q8_1, 36),
    PER32(q5_0, 22, 0, -1, 0, q5_0_q8_0, quantize_row_q8_0, 34),
    PER32(q5_1, 24, 0, 2, 0, q5_1_q8_1, quantize_row_q8_1, 36),
    PER32(q8_0, 34, 0, -1, 0, q8_0_q8_0, quantize_row_q8_0, 34),
    PER32(iq4_nl, 18, 0, -1, 0, iq4_nl_q8_0, quantize_row_q8_0, 34),
    PER32(mxfp4, 17, -1, -1, 1, mxfp4_q8_0, quantize_row_q8_0, 34),
    PER256(q2_k, 84, 80, 82, q2_K_q8_K),
    PER256(q3_k, 110, 108, -1, q3_K_q8_K),
    PER256(q4_k, 144, 0, 2, q4_K_q8_K),
    PER256(q5_k, 176, 0, 2, q5_K_q8_K),
    PER256(q6_k, 210, 208, -1, q6_K_q8_K),
    PER256(iq4_xs, 136, 0, -1, iq4_xs_q8_K),
    PER256(iq2_xxs, 66, 0, -1, iq2_xxs_q8_K),
    PER256(iq2_xs, 74, 0, -1, iq2_xs_q8_K),
    PER256(iq2_s, 82, 0, -1, iq2_s_q8_K),
    PER256(iq3_xxs, 98, 0, -1, iq3_xxs_q8_K),
    PER256(iq3_s, 110, 0, -1, iq3_s_q8_K),
    PER256(iq1_s, 50, 0, -1, iq1_s_q8_K),
    PER256(tq1_0, 54, 52, -1, tq1_0_q8_K),
    PER256(tq2_0, 66, 64, -1, tq2_0_q8_K),
};

static double now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + 1e-9 * t.tv_nsec;
}

static void run(const struct type_case *c, int n, int k)
{
    const int nb = k / c->block, rounds = 15;
    const size_t rb = (size_t)nb * c->bytes;
    uint8_t *w = aligned_alloc(64, (rb * n + 63) / 64 * 64);
    srand(1);
    for (size_t i = 0; i < rb * n; i++) w[i] = (uint8_t)rand();
    for (size_t b = 0; b < (size_t)n * nb; b++) {
        uint8_t *p = w + b * c->bytes;
        for (int h = 0; h < 2; h++)
            if (c->half_at[h] >= 0) { p[c->half_at[h]] = 0; p[c->half_at[h] + 1] = h ? 0x1c : 0x20; }
        if (c->e8m0) p[0] = 120;
    }
    float *x = malloc(sizeof(float) * k);
    for (int i = 0; i < k; i++) x[i] = rand() / (float)RAND_MAX - 0.5f;
    void *xg = malloc((size_t)(k / (c->per256 ? 256 : 32)) * c->ggml_x_bytes);
    c->ggml_x(x, xg, k);
    void *xf = aligned_alloc(64, c->per256 ? sizeof(fgg_mm_q8k) * (k / 256) : sizeof(fgg_mm_q8) * (k / 32));
    if (c->per256) fgg_mm_quantize_x8k(x, k, xf); else fgg_mm_quantize_x8(x, k, xf);
    float *o1 = malloc(sizeof(float) * n), *o2 = malloc(sizeof(float) * n);
    double best[2] = {1e9, 1e9}, checksum = 0;
    for (int r = 0; r < rounds; r++) {
        double t = now();
        for (int i = 0; i < n; i++) c->ggml(k, o1 + i, 0, w + i * rb, 0, xg, 0, 1);
        t = now() - t;
        if (t < best[0]) best[0] = t;
        t = now();
        for (int i = 0; i < n; i++) c->ours(w + i * rb, nb, xf, 0, 1, o2 + i, 1);
        t = now() - t;
        if (t < best[1]) best[1] = t;
    }
    for (int i = 0; i < n; i++) checksum += o2[i];
    printf("%-8s %dx%d ggml %6.0f us fastgguf %6.0f us x ggml %.2f checksum %.9g\n", c->name, n, k, best[0] * 1e6,
           best[1] * 1e6, best[0] / best[1], checksum);
    free(w), free(x), free(xg), free(xf), free(o1), free(o2);
}

int main(int argc, char **argv)
{
    if (argc < 4) {
        fprintf(stderr, "usage: %s TYPE|all N K\n", argv[0]);
        return 2;
    }
    int found = 0, n = atoi(argv[2]), k = atoi(argv[3]);
    if (k <= 0 || k % 256 || n <= 0) {
        fprintf(stderr, "K must be a positive multiple of 256, N positive\n");
        return 2;
    }
    for (size_t i = 0; i < sizeof CASES / sizeof CASES[0]; i++)
        if (!strcmp(argv[1], "all") || !strcmp(argv[1], CASES[i].name)) {
            run(&CASES[i], n, k);
            found = 1;
        }
    if (!found) fprintf(stderr, "unknown type %s\n", argv[1]);
    return !found;
}
