# Declarations of quant_iq4.h.

from libc.stdint cimport int64_t, uint8_t

cdef extern from "quant_iq4.h":
    void fgg_quantize_iq4_nl(const float *src, uint8_t *dst, int64_t n_rows, int64_t n_per_row,
                             const float *imatrix) noexcept nogil
    void fgg_quantize_iq4_xs(const float *src, uint8_t *dst, int64_t n_rows, int64_t n_per_row,
                             const float *imatrix) noexcept nogil
