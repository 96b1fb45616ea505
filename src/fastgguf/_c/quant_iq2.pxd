# Declarations of quant_iq2.h.

from libc.stdint cimport int64_t, uint8_t

cdef extern from "quant_iq2.h":
    int fgg_iq2_init_raw(const void *grid256, const void *grid512, const void *grid1024,
                         const void *grid2048) noexcept nogil
    size_t fgg_iq2_serialize(int which, uint8_t *out, size_t cap) noexcept nogil
    void fgg_quantize_iq2_xxs(const float *src, uint8_t *dst, int64_t n_rows, int64_t n_per_row,
                              const float *imatrix) noexcept nogil
    void fgg_quantize_iq2_xs(const float *src, uint8_t *dst, int64_t n_rows, int64_t n_per_row,
                             const float *imatrix) noexcept nogil
    void fgg_quantize_iq2_s(const float *src, uint8_t *dst, int64_t n_rows, int64_t n_per_row,
                            const float *imatrix) noexcept nogil
