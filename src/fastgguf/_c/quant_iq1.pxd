# Declarations of quant_iq1.h.

from libc.stdint cimport int64_t, uint8_t

cdef extern from "quant_iq1.h":
    void fgg_quantize_iq1_s(const float *src, uint8_t *dst, int64_t n_rows, int64_t n_per_row,
                            const float *imatrix) noexcept nogil
    void fgg_quantize_iq1_m(const float *src, uint8_t *dst, int64_t n_rows, int64_t n_per_row,
                            const float *imatrix) noexcept nogil
