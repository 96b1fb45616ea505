# Declarations of quant_legacy.h.
# quant-a's quantizers (ggml's quantize_<type>, bit-identical to its portable build)

from libc.stdint cimport int64_t, uint8_t

cdef extern from "quant_legacy.h":
    void fgg_quantize_q4_0(const float *src, uint8_t *dst, int64_t n_rows, int64_t n_per_row,
                           const float *imatrix) noexcept nogil
    void fgg_quantize_q4_1(const float *src, uint8_t *dst, int64_t n_rows, int64_t n_per_row,
                           const float *imatrix) noexcept nogil
    void fgg_quantize_q5_0(const float *src, uint8_t *dst, int64_t n_rows, int64_t n_per_row,
                           const float *imatrix) noexcept nogil
    void fgg_quantize_q5_1(const float *src, uint8_t *dst, int64_t n_rows, int64_t n_per_row,
                           const float *imatrix) noexcept nogil
    void fgg_quantize_q8_0(const float *src, uint8_t *dst, int64_t n_rows, int64_t n_per_row,
                           const float *imatrix) noexcept nogil
    void fgg_quantize_q8_1(const float *src, uint8_t *dst, int64_t n_rows, int64_t n_per_row,
                           const float *imatrix) noexcept nogil
    int64_t fgg_quantize_checked_q4_0(const float *src, uint8_t *dst, int64_t n_rows, int64_t n_per_row) noexcept nogil
    int64_t fgg_quantize_checked_q4_1(const float *src, uint8_t *dst, int64_t n_rows, int64_t n_per_row) noexcept nogil
    int64_t fgg_quantize_checked_q5_0(const float *src, uint8_t *dst, int64_t n_rows, int64_t n_per_row) noexcept nogil
    int64_t fgg_quantize_checked_q5_1(const float *src, uint8_t *dst, int64_t n_rows, int64_t n_per_row) noexcept nogil
    int64_t fgg_quantize_checked_q8_0(const float *src, uint8_t *dst, int64_t n_rows, int64_t n_per_row) noexcept nogil
