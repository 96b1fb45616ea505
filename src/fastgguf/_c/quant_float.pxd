# Declarations of quant_float.h.

from libc.stdint cimport int64_t, uint8_t

cdef extern from "quant_float.h":
    void fgg_quantize_f32(const float *src, uint8_t *dst, int64_t n_rows, int64_t n_per_row, const float *imatrix) noexcept nogil
    void fgg_quantize_f16(const float *src, uint8_t *dst, int64_t n_rows, int64_t n_per_row, const float *imatrix) noexcept nogil
    void fgg_quantize_bf16(const float *src, uint8_t *dst, int64_t n_rows, int64_t n_per_row, const float *imatrix) noexcept nogil
    void fgg_round_to_bf16(float *values, int64_t n) noexcept nogil
    void fgg_round_to_f16(float *values, int64_t n) noexcept nogil
