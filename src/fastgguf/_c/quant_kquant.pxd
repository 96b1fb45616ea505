# Declarations of quant_kquant.h.
# quant-a's quantizers (ggml's quantize_<type>, bit-identical to its portable build)

from libc.stdint cimport int64_t, uint8_t

cdef extern from "quant_kquant.h":
    void fgg_quantize_q2_k(const float *src, uint8_t *dst, int64_t n_rows, int64_t n_per_row,
                           const float *imatrix) noexcept nogil
    void fgg_quantize_q3_k(const float *src, uint8_t *dst, int64_t n_rows, int64_t n_per_row,
                           const float *imatrix) noexcept nogil
    void fgg_quantize_q4_k(const float *src, uint8_t *dst, int64_t n_rows, int64_t n_per_row,
                           const float *imatrix) noexcept nogil
    void fgg_quantize_q5_k(const float *src, uint8_t *dst, int64_t n_rows, int64_t n_per_row,
                           const float *imatrix) noexcept nogil
    void fgg_quantize_q6_k(const float *src, uint8_t *dst, int64_t n_rows, int64_t n_per_row,
                           const float *imatrix) noexcept nogil
    void fgg_quantize_q8_k(const float *src, uint8_t *dst, int64_t n_rows, int64_t n_per_row,
                           const float *imatrix) noexcept nogil
