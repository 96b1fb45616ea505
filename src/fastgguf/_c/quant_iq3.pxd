# Declarations of quant_iq3.h.

from libc.stdint cimport int64_t, uint8_t

cdef extern from "quant_iq3.h":
    # Derives IQ3's search tables (grid map, neighbour lists) from the grids; 0 on success. Runs
    # once, from iq_rows (table fill: first use, GIL held, before any quantizer thread).
    int fgg_iq3_init_tables() noexcept nogil
    void fgg_quantize_iq3_xxs(const float *src, uint8_t *dst, int64_t n_rows, int64_t n_per_row,
                              const float *imatrix) noexcept nogil
    void fgg_quantize_iq3_s(const float *src, uint8_t *dst, int64_t n_rows, int64_t n_per_row,
                            const float *imatrix) noexcept nogil
