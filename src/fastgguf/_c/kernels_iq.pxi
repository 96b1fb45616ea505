# Dequantization kernels for the importance-matrix (IQ1_S ... IQ4_XS), ternary
# (TQ1_0, TQ2_0), FP4 (MXFP4, NVFP4) and 1-/2-bit (Q1_0, Q2_0) block types.
#
# Included by kernels.pxi, which defines ``dequant_fn`` and cimports the shared
# helpers (fgg_load_u16le, fgg_half_to_float, ...) from dequant_common.pxd. Every kernel converts
# ``n_blocks`` whole consecutive blocks at ``src`` to float32 at ``dst``; the
# caller has checked the byte counts. Each kernel repeats gguf-py's float32
# operations in the same order, so the results are the same bits.
#
# Speed: a grid index selects 8 (or 4) values from a float copy of the grid; a
# byte of sign bits selects eight +-1.0 multipliers; each group of 8 outputs is
# a few vector instructions (GCC/Clang vector types, plain C elsewhere). The
# 16-entry tables of the 4-bit types are looked up with a byte shuffle under
# AVX2. Other loops work on local copies of the block's bytes, so that stores to
# dst cannot alias what they read and the compiler vectorizes them.

from libc.stdint cimport int8_t, int64_t, uint8_t, uint16_t, uint32_t
from libc.string cimport memcpy

include "iq_tables.pxi"

from fastgguf._c.dequant_iq cimport *
from fastgguf._c.quant_iq1 cimport *
from fastgguf._c.quant_iq2 cimport *
from fastgguf._c.quant_iq3 cimport *
from fastgguf._c.quant_iq4 cimport *
from fastgguf._c.quant_misc cimport *


# The grids are also stored as float32 (fgg_<grid>_f32 in iq_tables.h): a group then decodes
# with plain vector loads, no byte-to-float conversion (which the compiler leaves scalar).


# --- 4-bit non-linear -------------------------------------------------------

cdef void dequant_iq4_nl(const uint8_t *src, float *dst, Py_ssize_t n_blocks) noexcept nogil:
    """IQ4_NL: 32 codes of 4 bits indexing a non-linear table, one fp16 scale (18 bytes)."""
    cdef Py_ssize_t b
    for b in range(n_blocks):
        iq_lut4_decode32(dst, src + 2, fgg_iq4nl_values, fgg_half_to_float(fgg_load_u16le(src)))
        src += 18
        dst += 32


cdef void dequant_iq4_xs(const uint8_t *src, float *dst, Py_ssize_t n_blocks) noexcept nogil:
    """IQ4_XS: IQ4_NL codes with a 6-bit scale per 32 elements under one fp16 scale (136 bytes)."""
    cdef Py_ssize_t b
    cdef int ib, scale
    cdef uint32_t scales_h
    cdef float d, dl
    for b in range(n_blocks):
        d = fgg_half_to_float(fgg_load_u16le(src))
        scales_h = fgg_load_u16le(src + 2)
        for ib in range(8):
            scale = ((src[4 + ib // 2] >> (4 * (ib % 2))) & 0xF) | (((scales_h >> (2 * ib)) & 3) << 4)
            dl = d * <float> (scale - 32)
            iq_lut4_decode32(dst, src + 8 + 16 * ib, fgg_iq4nl_values, dl)
            dst += 32
        src += 136


# --- 2-bit grids ------------------------------------------------------------

cdef void dequant_iq2_xxs(const uint8_t *src, float *dst, Py_ssize_t n_blocks) noexcept nogil:
    """IQ2_XXS: per 32 elements, four 8-bit grid indices and a uint32 of 4x7 sign bits + 4-bit scale (66 bytes)."""
    cdef Py_ssize_t b
    cdef int ib, l
    cdef uint32_t aux_signs
    cdef float d, db
    cdef const uint8_t *q
    for b in range(n_blocks):
        d = fgg_half_to_float(fgg_load_u16le(src))
        for ib in range(8):
            q = src + 2 + 8 * ib
            aux_signs = fgg_load_u32le(q + 4)
            db = d * (<float> 0.5 + <float> (aux_signs >> 28)) * <float> 0.25
            for l in range(4):
                iq_grid8(dst + 8 * l, db, fgg_iq2xxs_grid_f32[q[l]],
                         fgg_sign_f32[fgg_ksigns[(aux_signs >> (7 * l)) & 127]])
            dst += 32
        src += 66


cdef void dequant_iq2_xs(const uint8_t *src, float *dst, Py_ssize_t n_blocks) noexcept nogil:
    """IQ2_XS: 32 uint16 of 9-bit grid index + 7 sign bits, a 4-bit scale per 16 elements (74 bytes)."""
    cdef Py_ssize_t b
    cdef int ib, half, l
    cdef uint32_t packed
    cdef float d, db
    for b in range(n_blocks):
        d = fgg_half_to_float(fgg_load_u16le(src))
        for ib in range(8):
            # Scalar scales, one per 16 elements: an array of all 16 would be built in a
            # 512-bit register and re-read through memory in the AVX-512 build, which is slower.
            for half in range(2):
                db = d * (<float> 0.5 + <float> ((src[66 + ib] >> (4 * half)) & 0xF)) * <float> 0.25
                for l in range(2 * half, 2 * half + 2):
                    packed = fgg_load_u16le(src + 2 + 8 * ib + 2 * l)
                    iq_grid8(dst, db, fgg_iq2xs_grid_f32[packed & 511], fgg_sign_f32[fgg_ksigns[packed >> 9]])
                    dst += 8
        src += 74


cdef void dequant_iq2_s(const uint8_t *src, float *dst, Py_ssize_t n_blocks) noexcept nogil:
    """IQ2_S: 10-bit grid indices (8 low bits + 2 high), explicit sign bytes, 4-bit scales (82 bytes)."""
    cdef Py_ssize_t b
    cdef int ib, half, l, k
    cdef float d, db
    cdef const uint8_t *qs
    cdef const uint8_t *signs
    cdef const uint8_t *qh
    for b in range(n_blocks):
        d = fgg_half_to_float(fgg_load_u16le(src))
        qs = src + 2
        signs = src + 34
        qh = src + 66
        for ib in range(8):
            for half in range(2):
                db = d * (<float> 0.5 + <float> ((src[74 + ib] >> (4 * half)) & 0xF)) * <float> 0.25
                for l in range(2 * half, 2 * half + 2):
                    k = 4 * ib + l
                    iq_grid8(dst, db, fgg_iq2s_grid_f32[qs[k] | (((qh[ib] >> (2 * l)) & 3) << 8)],
                             fgg_sign_f32[signs[k]])
                    dst += 8
        src += 82


# --- 3-bit grids ------------------------------------------------------------

cdef void dequant_iq3_xxs(const uint8_t *src, float *dst, Py_ssize_t n_blocks) noexcept nogil:
    """IQ3_XXS: 8-bit indices into a 4-wide grid, per 32 elements a uint32 of 4x7 sign bits + 4-bit scale (98 bytes)."""
    cdef Py_ssize_t b
    cdef int ib, l
    cdef uint32_t aux_signs
    cdef float d, db
    cdef const uint8_t *q
    for b in range(n_blocks):
        d = fgg_half_to_float(fgg_load_u16le(src))
        for ib in range(8):
            q = src + 2 + 8 * ib
            aux_signs = fgg_load_u32le(src + 66 + 4 * ib)
            db = d * (<float> 0.5 + <float> (aux_signs >> 28)) * <float> 0.5
            for l in range(4):
                iq_grid4x2(dst + 8 * l, db, fgg_iq3xxs_grid_f32[q[2 * l]], fgg_iq3xxs_grid_f32[q[2 * l + 1]],
                           fgg_sign_f32[fgg_ksigns[(aux_signs >> (7 * l)) & 127]])
            dst += 32
        src += 98


cdef void dequant_iq3_s(const uint8_t *src, float *dst, Py_ssize_t n_blocks) noexcept nogil:
    """IQ3_S: 9-bit indices into a 4-wide grid, explicit sign bytes, odd 4-bit scales (110 bytes)."""
    cdef Py_ssize_t b
    cdef int ib, l, k
    cdef float d, db
    cdef const uint8_t *qs
    cdef const uint8_t *qh
    cdef const uint8_t *signs
    for b in range(n_blocks):
        d = fgg_half_to_float(fgg_load_u16le(src))
        qs = src + 2
        qh = src + 66
        signs = src + 74
        for ib in range(8):
            db = d * <float> (1 + 2 * ((src[106 + ib // 2] >> (4 * (ib % 2))) & 0xF))
            for l in range(4):
                k = 8 * ib + 2 * l      # index of the first of this group's two grid entries
                iq_grid4x2(dst, db,
                           fgg_iq3s_grid_f32[qs[k] | (((qh[ib] >> (2 * l)) & 1) << 8)],
                           fgg_iq3s_grid_f32[qs[k + 1] | (((qh[ib] >> (2 * l + 1)) & 1) << 8)],
                           fgg_sign_f32[signs[4 * ib + l]])
                dst += 8
        src += 110


# --- 1-bit grids ------------------------------------------------------------

cdef void dequant_iq1_s(const uint8_t *src, float *dst, Py_ssize_t n_blocks) noexcept nogil:
    """IQ1_S: 11-bit indices into a {-1,0,1} grid, per 32 elements a 3-bit scale and a +-1/8 shift (50 bytes)."""
    cdef Py_ssize_t b
    cdef int ib, l
    cdef uint32_t qh
    cdef float d, dl, delta
    cdef const uint8_t *qs
    for b in range(n_blocks):
        d = fgg_half_to_float(fgg_load_u16le(src))
        qs = src + 2
        for ib in range(8):
            qh = fgg_load_u16le(src + 34 + 2 * ib)
            dl = d * <float> (2 * ((qh >> 12) & 7) + 1)
            delta = IQ1_DELTAS[qh >> 15]
            for l in range(4):
                iq1_grid8(dst, dl, fgg_iq1s_grid_f32[qs[4 * ib + l] | (((qh >> (3 * l)) & 7) << 8)], delta)
                dst += 8
        src += 50


cdef void dequant_iq1_m(const uint8_t *src, float *dst, Py_ssize_t n_blocks) noexcept nogil:
    """IQ1_M: IQ1_S grid, a shift per 8 elements, a 3-bit scale per 16; the fp16 scale is split over 4 nibbles (56 bytes)."""
    cdef Py_ssize_t b
    cdef int ib, k
    cdef uint32_t sc[4]
    cdef uint32_t scales, qh_lo, qh_hi
    cdef float d, dl_lo, dl_hi
    cdef const uint8_t *qs
    for b in range(n_blocks):
        qs = src
        for k in range(4):
            sc[k] = fgg_load_u16le(src + 48 + 2 * k)
        d = fgg_half_to_float((sc[0] >> 12) | ((sc[1] >> 8) & 0xF0) | ((sc[2] >> 4) & 0xF00) | (sc[3] & 0xF000))
        for ib in range(8):
            # Sub-block ib: two 3-bit scales (16 elements each), two qh bytes of
            # two nibbles each (3 high index bits + a shift sign per 8 elements).
            scales = sc[ib // 2] >> (6 * (ib % 2))
            dl_lo = d * <float> (2 * (scales & 7) + 1)
            dl_hi = d * <float> (2 * ((scales >> 3) & 7) + 1)
            qh_lo = src[32 + 2 * ib]
            qh_hi = src[32 + 2 * ib + 1]
            iq1_grid8(dst, dl_lo, fgg_iq1s_grid_f32[qs[4 * ib] | ((qh_lo & 7) << 8)],
                      IQ1_DELTAS[(qh_lo >> 3) & 1])
            iq1_grid8(dst + 8, dl_lo, fgg_iq1s_grid_f32[qs[4 * ib + 1] | ((qh_lo & 0x70) << 4)],
                      IQ1_DELTAS[qh_lo >> 7])
            iq1_grid8(dst + 16, dl_hi, fgg_iq1s_grid_f32[qs[4 * ib + 2] | ((qh_hi & 7) << 8)],
                      IQ1_DELTAS[(qh_hi >> 3) & 1])
            iq1_grid8(dst + 24, dl_hi, fgg_iq1s_grid_f32[qs[4 * ib + 3] | ((qh_hi & 0x70) << 4)],
                      IQ1_DELTAS[qh_hi >> 7])
            dst += 32
        src += 56


# --- ternary ----------------------------------------------------------------

cdef void dequant_tq1_0(const uint8_t *src, float *dst, Py_ssize_t n_blocks) noexcept nogil:
    """TQ1_0: base-3 digits packed 5 per byte (4 in the last 4 bytes) as fixed-point fractions (54 bytes)."""
    cdef Py_ssize_t b
    cdef int k, j
    cdef float d
    cdef uint8_t q
    for b in range(n_blocks):
        d = fgg_half_to_float(fgg_load_u16le(src + 52))
        # Bytes 0-31: digit k of byte j is element 32k + j; bytes 32-47: 160 + 16k + j.
        tq1_digits16(dst, src, 32, 5, d)
        tq1_digits16(dst + 16, src + 16, 32, 5, d)
        tq1_digits16(dst + 160, src + 32, 16, 5, d)
        # Bytes 48-51: four digits each, element 240 + 4k + j.
        for j in range(4):
            q = src[48 + j]
            for k in range(4):
                dst[240 + 4 * k + j] = d * <float> (<int> (q >= 86) + <int> (q >= 171) - 1)
                q = <uint8_t> (q + q + q)
        src += 54
        dst += 256


cdef void dequant_tq2_0(const uint8_t *src, float *dst, Py_ssize_t n_blocks) noexcept nogil:
    """TQ2_0: 2-bit codes q meaning q - 1, four per byte in 32-byte planes (66 bytes)."""
    cdef Py_ssize_t b
    cdef int half, shift, j
    cdef float d
    cdef uint8_t codes[64]
    for b in range(n_blocks):
        d = fgg_half_to_float(fgg_load_u16le(src + 64))
        memcpy(codes, src, 64)
        for half in range(2):
            for shift in range(4):
                for j in range(32):
                    dst[j] = d * <float> (((codes[32 * half + j] >> (2 * shift)) & 3) - 1)
                dst += 32
        src += 66


# --- FP4 --------------------------------------------------------------------

cdef void dequant_mxfp4(const uint8_t *src, float *dst, Py_ssize_t n_blocks) noexcept nogil:
    """MXFP4: an E8M0 power-of-two scale and 32 E2M1 codes (17 bytes)."""
    cdef Py_ssize_t b
    for b in range(n_blocks):
        iq_lut4_decode32(dst, src + 1, fgg_fp4_values, fgg_e8m0_half_f32[src[0]])
        src += 17
        dst += 32


cdef void dequant_nvfp4(const uint8_t *src, float *dst, Py_ssize_t n_blocks) noexcept nogil:
    """NVFP4: four unsigned-E4M3 scales, each over 16 E2M1 codes (36 bytes per 64 elements)."""
    cdef Py_ssize_t b
    cdef int s
    for b in range(n_blocks):
        for s in range(4):
            iq_lut4_decode16(dst + 16 * s, src + 4 + 8 * s, fgg_fp4_values, fgg_ue4m3_half_f32[src[s]])
        dst += 64
        src += 36


# --- 1- and 2-bit linear ----------------------------------------------------

cdef void dequant_q1_0(const uint8_t *src, float *dst, Py_ssize_t n_blocks) noexcept nogil:
    """Q1_0: one bit per element choosing +d or -d, low bit first (18 bytes per 128 elements)."""
    cdef Py_ssize_t b
    cdef uint32_t d_bits
    for b in range(n_blocks):
        # -d is d with the sign bit flipped: done on the integer bits, branch-free.
        d_bits = fgg_float_to_bits(fgg_half_to_float(fgg_load_u16le(src)))
        q1_block(dst, src + 2, d_bits)
        src += 18
        dst += 128


cdef void dequant_q2_0(const uint8_t *src, float *dst, Py_ssize_t n_blocks) noexcept nogil:
    """Q2_0: 2-bit codes q meaning (q - 1) * d, four per byte, low bits first (18 bytes per 64 elements)."""
    cdef Py_ssize_t b
    cdef float d
    for b in range(n_blocks):
        d = fgg_half_to_float(fgg_load_u16le(src))
        q2_block(dst, src + 2, d)
        src += 18
        dst += 64


# --- quantizers: IQ2_XXS, IQ2_XS, IQ2_S (quant_iq2.h), IQ1_S, IQ1_M (quant_iq1.h) -----------------


cdef int _iq2_init() noexcept nogil:
    """Derive the IQ2/IQ1 search tables from the grids (once; 0 on success). Runs where the kernel
    table is filled: with the GIL held, before any quantizer can run."""
    return fgg_iq2_init_raw(&fgg_iq2xxs_grid[0][0], &fgg_iq2xs_grid[0][0], &fgg_iq2s_grid[0][0],
                            &fgg_iq1s_grid[0][0])


def _iq2_search_table(int which):
    """The IQ2_XXS (0), IQ2_XS (1), IQ2_S (2) or IQ1 (3) search table in fgg_iq2_serialize's
    canonical form (the tests compare it with ggml's)."""
    if _iq2_init() != 0:
        raise RuntimeError("the IQ2/IQ1 search tables could not be derived")
    cdef size_t n = fgg_iq2_serialize(which, NULL, 0)
    out = bytearray(n)
    cdef uint8_t[::1] view = out
    if n:
        fgg_iq2_serialize(which, &view[0], n)
    return bytes(out)


cdef void iq_rows(fgg_kernel_row *rows) noexcept nogil:
    """This family's rows of the kernel table."""
    rows[FGG_TYPE_IQ2_XXS] = fgg_kernel_row(dequantize=dequant_iq2_xxs, byteswap=swap_block_fields, quantize=fgg_quantize_iq2_xxs, dot=NULL)
    rows[FGG_TYPE_IQ2_XS] = fgg_kernel_row(dequantize=dequant_iq2_xs, byteswap=swap_block_fields, quantize=fgg_quantize_iq2_xs, dot=NULL)
    rows[FGG_TYPE_IQ2_S] = fgg_kernel_row(dequantize=dequant_iq2_s, byteswap=swap_block_fields, quantize=fgg_quantize_iq2_s, dot=NULL)
    rows[FGG_TYPE_IQ3_XXS] = fgg_kernel_row(dequantize=dequant_iq3_xxs, byteswap=swap_block_fields,
                                            quantize=fgg_quantize_iq3_xxs, dot=NULL)
    rows[FGG_TYPE_IQ3_S] = fgg_kernel_row(dequantize=dequant_iq3_s, byteswap=swap_block_fields,
                                          quantize=fgg_quantize_iq3_s, dot=NULL)
    rows[FGG_TYPE_IQ1_S] = fgg_kernel_row(dequantize=dequant_iq1_s, byteswap=swap_block_fields, quantize=fgg_quantize_iq1_s, dot=NULL)
    rows[FGG_TYPE_IQ1_M] = fgg_kernel_row(dequantize=dequant_iq1_m, byteswap=swap_block_fields, quantize=fgg_quantize_iq1_m, dot=NULL)
    if _iq2_init() != 0:  # tables not derived (out of memory): no IQ2/IQ1 quantizers
        rows[FGG_TYPE_IQ2_XXS].quantize = NULL
        rows[FGG_TYPE_IQ2_XS].quantize = NULL
        rows[FGG_TYPE_IQ2_S].quantize = NULL
        rows[FGG_TYPE_IQ1_S].quantize = NULL
        rows[FGG_TYPE_IQ1_M].quantize = NULL
    if fgg_iq3_init_tables() != 0:  # the IQ3 search tables could not be derived: no IQ3 quantizer
        rows[FGG_TYPE_IQ3_XXS].quantize = NULL
        rows[FGG_TYPE_IQ3_S].quantize = NULL
    rows[FGG_TYPE_IQ4_NL] = fgg_kernel_row(dequantize=dequant_iq4_nl, byteswap=swap_block_fields,
                                           quantize=fgg_quantize_iq4_nl, dot=NULL)
    rows[FGG_TYPE_IQ4_XS] = fgg_kernel_row(dequantize=dequant_iq4_xs, byteswap=swap_block_fields,
                                           quantize=fgg_quantize_iq4_xs, dot=NULL)
    rows[FGG_TYPE_TQ1_0] = fgg_kernel_row(dequantize=dequant_tq1_0, byteswap=swap_block_fields,
                                            quantize=fgg_quantize_tq1_0, dot=NULL)
    rows[FGG_TYPE_TQ2_0] = fgg_kernel_row(dequantize=dequant_tq2_0, byteswap=swap_block_fields,
                                            quantize=fgg_quantize_tq2_0, dot=NULL)
    QUANTIZE_CHECKED[FGG_TYPE_TQ1_0] = fgg_quantize_checked_tq1_0
    QUANTIZE_CHECKED[FGG_TYPE_TQ2_0] = fgg_quantize_checked_tq2_0
    rows[FGG_TYPE_MXFP4] = fgg_kernel_row(dequantize=dequant_mxfp4, byteswap=swap_block_fields,
                                            quantize=fgg_quantize_mxfp4, dot=NULL)
    rows[FGG_TYPE_NVFP4] = fgg_kernel_row(dequantize=dequant_nvfp4, byteswap=swap_block_fields,
                                            quantize=fgg_quantize_nvfp4, dot=NULL)
    rows[FGG_TYPE_Q1_0] = fgg_kernel_row(dequantize=dequant_q1_0, byteswap=swap_block_fields,
                                            quantize=fgg_quantize_q1_0, dot=NULL)
    rows[FGG_TYPE_Q2_0] = fgg_kernel_row(dequantize=dequant_q2_0, byteswap=swap_block_fields,
                                            quantize=fgg_quantize_q2_0, dot=NULL)
