# Declarations of quant_misc.h.
# quant-a's quantizers (ggml's quantize_<type>, bit-identical to its portable build)

from libc.stdint cimport int64_t, uint8_t

cdef extern from "quant_misc.h":
    void fgg_quantize_tq1_0(const float *src, uint8_t *dst, int64_t n_rows, int64_t n_per_row,
                           const float *imatrix) noexcept nogil
    void fgg_quantize_tq2_0(const float *src, uint8_t *dst, int64_t n_rows, int64_t n_per_row,
                           const float *imatrix) noexcept nogil
    int64_t fgg_quantize_checked_tq1_0(const float *src, uint8_t *dst, int64_t n_rows, int64_t n_per_row) noexcept nogil
    int64_t fgg_quantize_checked_tq2_0(const float *src, uint8_t *dst, int64_t n_rows, int64_t n_per_row) noexcept nogil
    void fgg_quantize_mxfp4(const float *src, uint8_t *dst, int64_t n_rows, int64_t n_per_row,
                           const float *imatrix) noexcept nogil
    void fgg_quantize_nvfp4(const float *src, uint8_t *dst, int64_t n_rows, int64_t n_per_row,
                           const float *imatrix) noexcept nogil
    void fgg_quantize_q1_0(const float *src, uint8_t *dst, int64_t n_rows, int64_t n_per_row,
                           const float *imatrix) noexcept nogil
    void fgg_quantize_q2_0(const float *src, uint8_t *dst, int64_t n_rows, int64_t n_per_row,
                           const float *imatrix) noexcept nogil
