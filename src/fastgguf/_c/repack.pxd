# Declarations of repack.h: weights interleaved 16 rows at a time for the integer path.

from libc.stdint cimport uint8_t, int32_t

from fastgguf._c.dot cimport fgg_mm_q8

cdef extern from "repack.h" nogil:
    enum: FGG_RP_ROWS
    enum: FGG_RP_STATE_BYTES
    int fgg_rp_kind(int type_id)
    Py_ssize_t fgg_rp_block_bytes(int kind)
    int fgg_rp_is_k(int kind)
    void fgg_rp_pack_tile(int kind, const uint8_t *w, Py_ssize_t row_bytes, int rows, Py_ssize_t nb, uint8_t *dst)
    void fgg_rp_tile_c(int kind, const uint8_t *tile, Py_ssize_t nb, const void *x, Py_ssize_t xs,
                       int m, float *out, Py_ssize_t os, int rows)
    void fgg_rp_x_offsets(int c, const fgg_mm_q8 *x, Py_ssize_t xs, Py_ssize_t m, Py_ssize_t nb, int32_t *o)
    ctypedef void (*fgg_rp_tile_fn)(const uint8_t *tile, Py_ssize_t nb, const void *x, Py_ssize_t xs,
                                    const int32_t *xo, int m, float *out, Py_ssize_t os, int rows, void *st)
    fgg_rp_tile_fn fgg_rp_tile_kernel(int type_id, int vnni, int *c)
