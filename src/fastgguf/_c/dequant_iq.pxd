# Declarations of dequant_iq.h.

from libc.stdint cimport int8_t, uint32_t, uint8_t

cdef extern from "dequant_iq.h":
    # IQ1_S / IQ1_M grid offset, indexed by its sign bit: a load, where a select would branch.
    const float IQ1_DELTAS "fgg_iq1_deltas" [2]

    void iq_grid8 "fgg_grid8" (float *dst, float scale, const float *grid, const float *signs) noexcept nogil
    void iq_grid4x2 "fgg_grid4x2" (float *dst, float scale, const float *grid_a, const float *grid_b,
                                        const float *signs) noexcept nogil
    void iq1_grid8 "fgg_iq1_grid8" (float *dst, float scale, const float *grid, float delta) noexcept nogil

    void iq_lut4_decode32 "fgg_lut4_decode32" (float *dst, const uint8_t *codes, const int8_t *lut,
                                                     float scale) noexcept nogil
    void iq_lut4_decode16 "fgg_lut4_decode16" (float *dst, const uint8_t *codes, const int8_t *lut,
                                                     float scale) noexcept nogil

    void tq1_digits16 "fgg_tq1_digits16" (float *dst, const uint8_t *src, Py_ssize_t stride,
                                               int n_digits, float d) noexcept nogil

    void q1_block "fgg_q1_block" (float *dst, const uint8_t *src, uint32_t d_bits) noexcept nogil
    void q2_block "fgg_q2_block" (float *dst, const uint8_t *src, float d) noexcept nogil
