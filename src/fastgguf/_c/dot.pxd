# Declarations of dot.h.

from libc.stdint cimport uint8_t

cdef extern from "dot.h" nogil:
    enum: FGG_MM_LANES
    void *fgg_aligned_malloc(size_t n)
    void fgg_aligned_free(void *p)
    ctypedef struct fgg_mm_q8:
        float d
        float s
    ctypedef struct fgg_mm_q8k:
        float d
    void fgg_mm_dot_acc(const float *w, const float *x, Py_ssize_t n, float *acc)
    void fgg_mm_dot_acc4(const float *w, const float *x, Py_ssize_t xs, Py_ssize_t n, float *acc)
    float fgg_mm_lanes_sum(const float *acc)
    void fgg_mm_quantize_x8(const float *x, Py_ssize_t n, fgg_mm_q8 *out)
    void fgg_mm_quantize_x8k(const float *x, Py_ssize_t n, fgg_mm_q8k *out)
    void fgg_mm_rows_q8_0(const uint8_t *w, Py_ssize_t nb, const fgg_mm_q8 *x, Py_ssize_t xs, int m, float *out, Py_ssize_t os)
    void fgg_mm_rows_q4_0(const uint8_t *w, Py_ssize_t nb, const fgg_mm_q8 *x, Py_ssize_t xs, int m, float *out, Py_ssize_t os)
    void fgg_mm_rows_q5_0(const uint8_t *w, Py_ssize_t nb, const fgg_mm_q8 *x, Py_ssize_t xs, int m, float *out, Py_ssize_t os)
    void fgg_mm_rows_iq4_nl(const uint8_t *w, Py_ssize_t nb, const fgg_mm_q8 *x, Py_ssize_t xs, int m, float *out, Py_ssize_t os)
    void fgg_mm_rows_iq4_xs(const uint8_t *w, Py_ssize_t nb, const fgg_mm_q8k *x, Py_ssize_t xs, int m, float *out, Py_ssize_t os)
    void fgg_mm_rows_iq2_xxs(const uint8_t *w, Py_ssize_t nb, const fgg_mm_q8k *x, Py_ssize_t xs, int m, float *out, Py_ssize_t os)
    void fgg_mm_rows_iq3_xxs(const uint8_t *w, Py_ssize_t nb, const fgg_mm_q8k *x, Py_ssize_t xs, int m, float *out, Py_ssize_t os)
    void fgg_mm_rows_iq3_s(const uint8_t *w, Py_ssize_t nb, const fgg_mm_q8k *x, Py_ssize_t xs, int m, float *out, Py_ssize_t os)
    void fgg_mm_rows_iq2_xs(const uint8_t *w, Py_ssize_t nb, const fgg_mm_q8k *x, Py_ssize_t xs, int m, float *out, Py_ssize_t os)
    void fgg_mm_rows_iq2_s(const uint8_t *w, Py_ssize_t nb, const fgg_mm_q8k *x, Py_ssize_t xs, int m, float *out, Py_ssize_t os)
    void fgg_mm_rows_iq1_s(const uint8_t *w, Py_ssize_t nb, const fgg_mm_q8k *x, Py_ssize_t xs, int m, float *out, Py_ssize_t os)
    void fgg_mm_rows_iq1_m(const uint8_t *w, Py_ssize_t nb, const fgg_mm_q8k *x, Py_ssize_t xs, int m, float *out, Py_ssize_t os)
    void fgg_mm_rows_tq1_0(const uint8_t *w, Py_ssize_t nb, const fgg_mm_q8k *x, Py_ssize_t xs, int m, float *out, Py_ssize_t os)
    void fgg_mm_rows_tq2_0(const uint8_t *w, Py_ssize_t nb, const fgg_mm_q8k *x, Py_ssize_t xs, int m, float *out, Py_ssize_t os)
    void fgg_mm_rows_q4_1(const uint8_t *w, Py_ssize_t nb, const fgg_mm_q8 *x, Py_ssize_t xs, int m, float *out, Py_ssize_t os)
    void fgg_mm_rows_q5_1(const uint8_t *w, Py_ssize_t nb, const fgg_mm_q8 *x, Py_ssize_t xs, int m, float *out, Py_ssize_t os)
    void fgg_mm_rows_nvfp4(const uint8_t *w, Py_ssize_t nb, const fgg_mm_q8 *x, Py_ssize_t xs, int m, float *out, Py_ssize_t os)
    void fgg_mm_rows_q1_0(const uint8_t *w, Py_ssize_t nb, const fgg_mm_q8 *x, Py_ssize_t xs, int m, float *out, Py_ssize_t os)
    void fgg_mm_rows_q2_0(const uint8_t *w, Py_ssize_t nb, const fgg_mm_q8 *x, Py_ssize_t xs, int m, float *out, Py_ssize_t os)
    void fgg_mm_rows_mxfp4(const uint8_t *w, Py_ssize_t nb, const fgg_mm_q8 *x, Py_ssize_t xs, int m, float *out, Py_ssize_t os)
    void fgg_mm_rows_q4_k(const uint8_t *w, Py_ssize_t nb, const fgg_mm_q8k *x, Py_ssize_t xs, int m, float *out, Py_ssize_t os)
    void fgg_mm_rows_q5_k(const uint8_t *w, Py_ssize_t nb, const fgg_mm_q8k *x, Py_ssize_t xs, int m, float *out, Py_ssize_t os)
    void fgg_mm_rows_q3_k(const uint8_t *w, Py_ssize_t nb, const fgg_mm_q8k *x, Py_ssize_t xs, int m, float *out, Py_ssize_t os)
    void fgg_mm_rows_q2_k(const uint8_t *w, Py_ssize_t nb, const fgg_mm_q8k *x, Py_ssize_t xs, int m, float *out, Py_ssize_t os)
    void fgg_mm_rows_q6_k(const uint8_t *w, Py_ssize_t nb, const fgg_mm_q8k *x, Py_ssize_t xs, int m, float *out, Py_ssize_t os)
    void fgg_mm_rows_q2_k_256(const uint8_t *w, Py_ssize_t nb, const fgg_mm_q8k *x, Py_ssize_t xs, int m, float *out, Py_ssize_t os)
    void fgg_mm_rows_q3_k_256(const uint8_t *w, Py_ssize_t nb, const fgg_mm_q8k *x, Py_ssize_t xs, int m, float *out, Py_ssize_t os)
    void fgg_mm_rows_q4_k_256(const uint8_t *w, Py_ssize_t nb, const fgg_mm_q8k *x, Py_ssize_t xs, int m, float *out, Py_ssize_t os)
    void fgg_mm_rows_q5_k_256(const uint8_t *w, Py_ssize_t nb, const fgg_mm_q8k *x, Py_ssize_t xs, int m, float *out, Py_ssize_t os)
    void fgg_mm_rows_q6_k_256(const uint8_t *w, Py_ssize_t nb, const fgg_mm_q8k *x, Py_ssize_t xs, int m, float *out, Py_ssize_t os)
    void fgg_mm_rows_q8_0_vnni(const uint8_t *w, Py_ssize_t nb, const fgg_mm_q8 *x, Py_ssize_t xs, int m, float *out, Py_ssize_t os)
    void fgg_mm_rows_q4_0_vnni(const uint8_t *w, Py_ssize_t nb, const fgg_mm_q8 *x, Py_ssize_t xs, int m, float *out, Py_ssize_t os)
    void fgg_mm_rows_q5_0_vnni(const uint8_t *w, Py_ssize_t nb, const fgg_mm_q8 *x, Py_ssize_t xs, int m, float *out, Py_ssize_t os)
    void fgg_mm_rows_iq4_nl_vnni(const uint8_t *w, Py_ssize_t nb, const fgg_mm_q8 *x, Py_ssize_t xs, int m, float *out, Py_ssize_t os)
    void fgg_mm_rows_mxfp4_vnni(const uint8_t *w, Py_ssize_t nb, const fgg_mm_q8 *x, Py_ssize_t xs, int m, float *out, Py_ssize_t os)
    void fgg_mm_rows_q4_1_vnni(const uint8_t *w, Py_ssize_t nb, const fgg_mm_q8 *x, Py_ssize_t xs, int m, float *out, Py_ssize_t os)
    void fgg_mm_rows_q5_1_vnni(const uint8_t *w, Py_ssize_t nb, const fgg_mm_q8 *x, Py_ssize_t xs, int m, float *out, Py_ssize_t os)
    void fgg_mm_rows2_q4_0(const uint8_t *w, Py_ssize_t nb, const fgg_mm_q8 *x, Py_ssize_t xs, int m, float *out, Py_ssize_t os)
    void fgg_mm_rows2_q4_1(const uint8_t *w, Py_ssize_t nb, const fgg_mm_q8 *x, Py_ssize_t xs, int m, float *out, Py_ssize_t os)
    void fgg_mm_rows2_mxfp4(const uint8_t *w, Py_ssize_t nb, const fgg_mm_q8 *x, Py_ssize_t xs, int m, float *out, Py_ssize_t os)
    void fgg_mm_rows2_q4_0_vnni(const uint8_t *w, Py_ssize_t nb, const fgg_mm_q8 *x, Py_ssize_t xs, int m, float *out, Py_ssize_t os)
    void fgg_mm_rows2_q4_1_vnni(const uint8_t *w, Py_ssize_t nb, const fgg_mm_q8 *x, Py_ssize_t xs, int m, float *out, Py_ssize_t os)
    void fgg_mm_rows2_mxfp4_vnni(const uint8_t *w, Py_ssize_t nb, const fgg_mm_q8 *x, Py_ssize_t xs, int m, float *out, Py_ssize_t os)
    enum: FGG_MM_HAVE_ROWS2
    void fgg_mm_rows2_q4_0_256(const uint8_t *w, Py_ssize_t nb, const fgg_mm_q8 *x, Py_ssize_t xs, int m, float *out, Py_ssize_t os)
    void fgg_mm_rows2_q4_0_256_vnni(const uint8_t *w, Py_ssize_t nb, const fgg_mm_q8 *x, Py_ssize_t xs, int m, float *out, Py_ssize_t os)
    void fgg_mm_rows2_q4_1_256(const uint8_t *w, Py_ssize_t nb, const fgg_mm_q8 *x, Py_ssize_t xs, int m, float *out, Py_ssize_t os)
    void fgg_mm_rows2_q4_1_256_vnni(const uint8_t *w, Py_ssize_t nb, const fgg_mm_q8 *x, Py_ssize_t xs, int m, float *out, Py_ssize_t os)
    void fgg_mm_rows2_mxfp4_256(const uint8_t *w, Py_ssize_t nb, const fgg_mm_q8 *x, Py_ssize_t xs, int m, float *out, Py_ssize_t os)
    void fgg_mm_rows2_mxfp4_256_vnni(const uint8_t *w, Py_ssize_t nb, const fgg_mm_q8 *x, Py_ssize_t xs, int m, float *out, Py_ssize_t os)
    void fgg_mm_rows2_q5_0_256(const uint8_t *w, Py_ssize_t nb, const fgg_mm_q8 *x, Py_ssize_t xs, int m, float *out, Py_ssize_t os)
    void fgg_mm_rows2_q5_0_256_vnni(const uint8_t *w, Py_ssize_t nb, const fgg_mm_q8 *x, Py_ssize_t xs, int m, float *out, Py_ssize_t os)
    void fgg_mm_rows2_q5_1_256(const uint8_t *w, Py_ssize_t nb, const fgg_mm_q8 *x, Py_ssize_t xs, int m, float *out, Py_ssize_t os)
    void fgg_mm_rows2_q5_1_256_vnni(const uint8_t *w, Py_ssize_t nb, const fgg_mm_q8 *x, Py_ssize_t xs, int m, float *out, Py_ssize_t os)
    void fgg_mm_rows2_iq4_nl_256_vnni(const uint8_t *w, Py_ssize_t nb, const fgg_mm_q8 *x, Py_ssize_t xs, int m, float *out, Py_ssize_t os)
    int fgg_mm_vnni_usable()
    ctypedef struct fgg_mm_x16k:
        pass
    ctypedef struct fgg_mm_wk:
        pass
    enum: FGG_MM_X_K, FGG_MM_X_B32, FGG_MM_X_B8, FGG_MM_X_B8_PLUS128, FGG_MM_X_K16, FGG_MM_X_B16
    size_t fgg_mm_batch_x_bytes(int layout, Py_ssize_t m, Py_ssize_t nb)
    bint fgg_mm_batch_few(int layout, Py_ssize_t m)
    Py_ssize_t fgg_mm_batch_group_rows(int layout)
    size_t fgg_mm_batch_panel_bytes(int layout, Py_ssize_t m, Py_ssize_t nb)
    void fgg_mm_batch_x_fill(int layout, const void *x, Py_ssize_t xs, Py_ssize_t m, Py_ssize_t nb, void *out)
    ctypedef void (*fgg_mm_gemm_fn)(const uint8_t *w, Py_ssize_t row_bytes, Py_ssize_t n, Py_ssize_t nb,
                                    const void *x, Py_ssize_t m, float *out, Py_ssize_t os, void *panel,
                                    Py_ssize_t tile)
    # The batch kernels, as values: VNNI (avx512 build), maddubs (avx2 and avx512 builds), Q2_K's to
    # Q6_K's and Q8_0's, Q4_0's, Q5_0's, Q4_1's, Q5_1's on x widened to int16 (the portable SSE2
    # build); in a build without them, fgg_mm_gemm_never
    void fgg_mm_gemm_never(const uint8_t *w, Py_ssize_t row_bytes, Py_ssize_t n, Py_ssize_t nb, const void *x,
                           Py_ssize_t m, float *out, Py_ssize_t os, void *panel, Py_ssize_t tile)
    const fgg_mm_gemm_fn fgg_mm_gemm_q2_k_vnni, fgg_mm_gemm_q3_k_vnni, fgg_mm_gemm_q4_k_vnni, fgg_mm_gemm_q5_k_vnni, fgg_mm_gemm_q6_k_vnni
    const fgg_mm_gemm_fn fgg_mm_gemm_tq2_0_vnni, fgg_mm_gemm_tq1_0_vnni, fgg_mm_gemm_iq4_xs_vnni, fgg_mm_gemm_iq2_xxs_vnni, fgg_mm_gemm_iq2_xs_vnni
    const fgg_mm_gemm_fn fgg_mm_gemm_iq2_s_vnni, fgg_mm_gemm_iq3_xxs_vnni, fgg_mm_gemm_iq3_s_vnni, fgg_mm_gemm_iq1_s_vnni, fgg_mm_gemm_iq1_m_vnni
    const fgg_mm_gemm_fn fgg_mm_gemm_q8_0_vnni, fgg_mm_gemm_q4_0_vnni, fgg_mm_gemm_q5_0_vnni, fgg_mm_gemm_q4_1_vnni, fgg_mm_gemm_q5_1_vnni
    const fgg_mm_gemm_fn fgg_mm_gemm_iq4_nl_vnni, fgg_mm_gemm_mxfp4_vnni
    const fgg_mm_gemm_fn fgg_mm_gemm_q2_k, fgg_mm_gemm_q3_k, fgg_mm_gemm_q4_k, fgg_mm_gemm_q5_k, fgg_mm_gemm_q6_k
    const fgg_mm_gemm_fn fgg_mm_gemm_tq2_0, fgg_mm_gemm_tq1_0, fgg_mm_gemm_iq4_xs, fgg_mm_gemm_iq2_xxs, fgg_mm_gemm_iq3_s
    const fgg_mm_gemm_fn fgg_mm_gemm_iq2_xs, fgg_mm_gemm_iq2_s, fgg_mm_gemm_iq3_xxs, fgg_mm_gemm_iq1_s, fgg_mm_gemm_iq1_m
    const fgg_mm_gemm_fn fgg_mm_gemm_q4_0, fgg_mm_gemm_q5_0, fgg_mm_gemm_q4_1, fgg_mm_gemm_q5_1, fgg_mm_gemm_mxfp4
    const fgg_mm_gemm_fn fgg_mm_gemm_q8_0, fgg_mm_gemm_iq4_nl, fgg_mm_gemm_q1_0
    enum: FGG_MM_QF_FLOATS
    enum: FGG_MM_SPAN_NW
    void fgg_mm_init_tables()
    enum: FGG_MM_REG_ROWS
    enum: FGG_MM_X_ALIGN
    void fgg_mm_xsum(const float *x, Py_ssize_t n, int len, float *sums)
    void fgg_mm_span_q2_k(const uint8_t *w, Py_ssize_t row_bytes, int nw, Py_ssize_t b0, Py_ssize_t b1,
                          const float *x, Py_ssize_t xs, const float *xsum, Py_ssize_t xss, int m, int pairs,
                          float *qf, float *acc, Py_ssize_t acc_stride)
    void fgg_mm_span_q3_k(const uint8_t *w, Py_ssize_t row_bytes, int nw, Py_ssize_t b0, Py_ssize_t b1,
                          const float *x, Py_ssize_t xs, const float *xsum, Py_ssize_t xss, int m, int pairs,
                          float *qf, float *acc, Py_ssize_t acc_stride)
    void fgg_mm_span_q4_k(const uint8_t *w, Py_ssize_t row_bytes, int nw, Py_ssize_t b0, Py_ssize_t b1,
                          const float *x, Py_ssize_t xs, const float *xsum, Py_ssize_t xss, int m, int pairs,
                          float *qf, float *acc, Py_ssize_t acc_stride)
    void fgg_mm_span_q5_k(const uint8_t *w, Py_ssize_t row_bytes, int nw, Py_ssize_t b0, Py_ssize_t b1,
                          const float *x, Py_ssize_t xs, const float *xsum, Py_ssize_t xss, int m, int pairs,
                          float *qf, float *acc, Py_ssize_t acc_stride)
    void fgg_mm_span_q6_k(const uint8_t *w, Py_ssize_t row_bytes, int nw, Py_ssize_t b0, Py_ssize_t b1,
                          const float *x, Py_ssize_t xs, const float *xsum, Py_ssize_t xss, int m, int pairs,
                          float *qf, float *acc, Py_ssize_t acc_stride)
    void fgg_mm_span_q8_0(const uint8_t *w, Py_ssize_t row_bytes, int nw, Py_ssize_t b0, Py_ssize_t b1,
                          const float *x, Py_ssize_t xs, const float *xsum, Py_ssize_t xss, int m, int pairs,
                          float *qf, float *acc, Py_ssize_t acc_stride)
    void fgg_mm_span_q4_0(const uint8_t *w, Py_ssize_t row_bytes, int nw, Py_ssize_t b0, Py_ssize_t b1,
                          const float *x, Py_ssize_t xs, const float *xsum, Py_ssize_t xss, int m, int pairs,
                          float *qf, float *acc, Py_ssize_t acc_stride)
    void fgg_mm_span_q5_0(const uint8_t *w, Py_ssize_t row_bytes, int nw, Py_ssize_t b0, Py_ssize_t b1,
                          const float *x, Py_ssize_t xs, const float *xsum, Py_ssize_t xss, int m, int pairs,
                          float *qf, float *acc, Py_ssize_t acc_stride)
    void fgg_mm_span_q4_1(const uint8_t *w, Py_ssize_t row_bytes, int nw, Py_ssize_t b0, Py_ssize_t b1,
                          const float *x, Py_ssize_t xs, const float *xsum, Py_ssize_t xss, int m, int pairs,
                          float *qf, float *acc, Py_ssize_t acc_stride)
    void fgg_mm_span_q5_1(const uint8_t *w, Py_ssize_t row_bytes, int nw, Py_ssize_t b0, Py_ssize_t b1,
                          const float *x, Py_ssize_t xs, const float *xsum, Py_ssize_t xss, int m, int pairs,
                          float *qf, float *acc, Py_ssize_t acc_stride)
    void fgg_mm_span_iq4_nl(const uint8_t *w, Py_ssize_t row_bytes, int nw, Py_ssize_t b0, Py_ssize_t b1,
                            const float *x, Py_ssize_t xs, const float *xsum, Py_ssize_t xss, int m, int pairs,
                            float *qf, float *acc, Py_ssize_t acc_stride)
    void fgg_mm_span_mxfp4(const uint8_t *w, Py_ssize_t row_bytes, int nw, Py_ssize_t b0, Py_ssize_t b1,
                           const float *x, Py_ssize_t xs, const float *xsum, Py_ssize_t xss, int m, int pairs,
                           float *qf, float *acc, Py_ssize_t acc_stride)
    void fgg_mm_span_q1_0(const uint8_t *w, Py_ssize_t row_bytes, int nw, Py_ssize_t b0, Py_ssize_t b1,
                          const float *x, Py_ssize_t xs, const float *xsum, Py_ssize_t xss, int m, int pairs,
                          float *qf, float *acc, Py_ssize_t acc_stride)
    void fgg_mm_span_iq2_s(const uint8_t *w, Py_ssize_t row_bytes, int nw, Py_ssize_t b0, Py_ssize_t b1,
                           const float *x, Py_ssize_t xs, const float *xsum, Py_ssize_t xss, int m, int pairs,
                           float *qf, float *acc, Py_ssize_t acc_stride)
    void fgg_mm_span_iq3_xxs(const uint8_t *w, Py_ssize_t row_bytes, int nw, Py_ssize_t b0, Py_ssize_t b1,
                             const float *x, Py_ssize_t xs, const float *xsum, Py_ssize_t xss, int m, int pairs,
                             float *qf, float *acc, Py_ssize_t acc_stride)
    void fgg_mm_span_iq3_s(const uint8_t *w, Py_ssize_t row_bytes, int nw, Py_ssize_t b0, Py_ssize_t b1,
                           const float *x, Py_ssize_t xs, const float *xsum, Py_ssize_t xss, int m, int pairs,
                           float *qf, float *acc, Py_ssize_t acc_stride)
    void fgg_mm_span_iq2_xxs(const uint8_t *w, Py_ssize_t row_bytes, int nw, Py_ssize_t b0, Py_ssize_t b1,
                             const float *x, Py_ssize_t xs, const float *xsum, Py_ssize_t xss, int m, int pairs,
                             float *qf, float *acc, Py_ssize_t acc_stride)
    void fgg_mm_span_iq2_xs(const uint8_t *w, Py_ssize_t row_bytes, int nw, Py_ssize_t b0, Py_ssize_t b1,
                            const float *x, Py_ssize_t xs, const float *xsum, Py_ssize_t xss, int m, int pairs,
                            float *qf, float *acc, Py_ssize_t acc_stride)
    void fgg_mm_span_iq1_s(const uint8_t *w, Py_ssize_t row_bytes, int nw, Py_ssize_t b0, Py_ssize_t b1,
                            const float *x, Py_ssize_t xs, const float *xsum, Py_ssize_t xss, int m, int pairs,
                            float *qf, float *acc, Py_ssize_t acc_stride)
    void fgg_mm_span_iq1_m(const uint8_t *w, Py_ssize_t row_bytes, int nw, Py_ssize_t b0, Py_ssize_t b1,
                            const float *x, Py_ssize_t xs, const float *xsum, Py_ssize_t xss, int m, int pairs,
                            float *qf, float *acc, Py_ssize_t acc_stride)
    void fgg_mm_span_tq2_0(const uint8_t *w, Py_ssize_t row_bytes, int nw, Py_ssize_t b0, Py_ssize_t b1,
                           const float *x, Py_ssize_t xs, const float *xsum, Py_ssize_t xss, int m, int pairs,
                           float *qf, float *acc, Py_ssize_t acc_stride)
    void fgg_mm_span_tq1_0(const uint8_t *w, Py_ssize_t row_bytes, int nw, Py_ssize_t b0, Py_ssize_t b1,
                           const float *x, Py_ssize_t xs, const float *xsum, Py_ssize_t xss, int m, int pairs,
                           float *qf, float *acc, Py_ssize_t acc_stride)
    void fgg_mm_span_iq4_xs(const uint8_t *w, Py_ssize_t row_bytes, int nw, Py_ssize_t b0, Py_ssize_t b1,
                            const float *x, Py_ssize_t xs, const float *xsum, Py_ssize_t xss, int m, int pairs,
                            float *qf, float *acc, Py_ssize_t acc_stride)
    void fgg_mm_exact_out(const float *acc, int m, float *out, Py_ssize_t os)
    void fgg_mm_exact_out_w(const float *acc, Py_ssize_t nw, float *out)
    enum: FGG_MM_HAVE_SPAN1
    enum: FGG_MM_HAVE_PAIRS
    enum: FGG_MM_SPAN_W_ROWS
    void fgg_mm_pair_panel(const float *x, Py_ssize_t xs, int m, Py_ssize_t width, float *panel)
    enum: FGG_MM_HAVE_SPAN1_PAIRS
    void fgg_mm_span1_q8_0(const uint8_t *w, Py_ssize_t row_bytes, int nw, Py_ssize_t b0, Py_ssize_t b1,
                           const float *x, const float *xsum, float *acc, Py_ssize_t acc_stride)
    void fgg_mm_span1_q4_k(const uint8_t *w, Py_ssize_t row_bytes, int nw, Py_ssize_t b0, Py_ssize_t b1,
                           const float *x, const float *xsum, float *acc, Py_ssize_t acc_stride)
    void fgg_mm_span1_q5_k(const uint8_t *w, Py_ssize_t row_bytes, int nw, Py_ssize_t b0, Py_ssize_t b1,
                           const float *x, const float *xsum, float *acc, Py_ssize_t acc_stride)
    void fgg_mm_span1_q6_k(const uint8_t *w, Py_ssize_t row_bytes, int nw, Py_ssize_t b0, Py_ssize_t b1,
                           const float *x, const float *xsum, float *acc, Py_ssize_t acc_stride)
    void fgg_mm_span1_q4_0(const uint8_t *w, Py_ssize_t row_bytes, int nw, Py_ssize_t b0, Py_ssize_t b1,
                           const float *x, const float *xsum, float *acc, Py_ssize_t acc_stride)
    void fgg_mm_span1_q4_1(const uint8_t *w, Py_ssize_t row_bytes, int nw, Py_ssize_t b0, Py_ssize_t b1,
                           const float *x, const float *xsum, float *acc, Py_ssize_t acc_stride)
    void fgg_mm_span1_q5_0(const uint8_t *w, Py_ssize_t row_bytes, int nw, Py_ssize_t b0, Py_ssize_t b1,
                           const float *x, const float *xsum, float *acc, Py_ssize_t acc_stride)
    void fgg_mm_span1_q5_1(const uint8_t *w, Py_ssize_t row_bytes, int nw, Py_ssize_t b0, Py_ssize_t b1,
                           const float *x, const float *xsum, float *acc, Py_ssize_t acc_stride)
    void fgg_mm_span1_iq4_nl(const uint8_t *w, Py_ssize_t row_bytes, int nw, Py_ssize_t b0, Py_ssize_t b1,
                             const float *x, const float *xsum, float *acc, Py_ssize_t acc_stride)
    void fgg_mm_span1_mxfp4(const uint8_t *w, Py_ssize_t row_bytes, int nw, Py_ssize_t b0, Py_ssize_t b1,
                            const float *x, const float *xsum, float *acc, Py_ssize_t acc_stride)
    enum: FGG_MM_INT_SIMD_BUILD
    enum: FGG_MM_SSE2_K_BUILD
