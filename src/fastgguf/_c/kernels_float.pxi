# Plain element types -> float32: F32, F16, BF16, F64, I8, I16, I32, I64 (block size 1).
# Included from kernels.pxi (which provides the table types and the dequant_common). The
# "quantize" column of F32/F16/BF16 (round to nearest even, as ggml) is C in quant_float.h.
#
# The loops are single flat passes over raw pointers so the compiler vectorizes them; loads go
# through memcpy helpers because tensor data is not guaranteed to be aligned.

from libc.string cimport memcpy
from libc.stdint cimport int8_t, int16_t, int32_t, int64_t

from fastgguf._c.quant_float cimport *


cdef void dequant_f32(const uint8_t *src, float *dst, Py_ssize_t n) noexcept nogil:
    cdef Py_ssize_t i
    if not FGG_HOST_BIG_ENDIAN:
        memcpy(dst, src, <size_t>n * 4)
        return
    for i in range(n):
        dst[i] = fgg_load_f32le(src + 4 * i)


cdef void dequant_f16(const uint8_t *src, float *dst, Py_ssize_t n) noexcept nogil:
    cdef Py_ssize_t i
    if FGG_HOST_BIG_ENDIAN:
        for i in range(n):
            dst[i] = fgg_half_to_float(fgg_load_u16le(src + 2 * i))
        return
    fgg_halves_to_floats(src, dst, n)


cdef void dequant_f16_stream(const uint8_t *src, float *dst, Py_ssize_t n) noexcept nogil:
    cdef Py_ssize_t i
    if FGG_HOST_BIG_ENDIAN:
        for i in range(n):
            dst[i] = fgg_half_to_float(fgg_load_u16le(src + 2 * i))
        return
    fgg_halves_to_floats_nt(src, dst, n)


cdef void dequant_bf16_stream(const uint8_t *src, float *dst, Py_ssize_t n) noexcept nogil:
    fgg_bf16_to_floats_nt(src, dst, n)


cdef void dequant_bf16(const uint8_t *src, float *dst, Py_ssize_t n) noexcept nogil:
    cdef Py_ssize_t i
    for i in range(n):
        dst[i] = fgg_bf16_to_float(fgg_load_u16le(src + 2 * i))


cdef void dequant_f64(const uint8_t *src, float *dst, Py_ssize_t n) noexcept nogil:
    cdef Py_ssize_t i
    cdef uint64_t bits
    cdef double value
    for i in range(n):
        bits = fgg_load_u64le(src + 8 * i)
        memcpy(&value, &bits, 8)
        dst[i] = <float>value


cdef void dequant_i8(const uint8_t *src, float *dst, Py_ssize_t n) noexcept nogil:
    cdef Py_ssize_t i
    for i in range(n):
        dst[i] = <float>(<int8_t>src[i])


cdef void dequant_i16(const uint8_t *src, float *dst, Py_ssize_t n) noexcept nogil:
    cdef Py_ssize_t i
    for i in range(n):
        dst[i] = <float>(<int16_t>fgg_load_u16le(src + 2 * i))


cdef void dequant_i32(const uint8_t *src, float *dst, Py_ssize_t n) noexcept nogil:
    cdef Py_ssize_t i
    for i in range(n):
        dst[i] = <float>(<int32_t>fgg_load_u32le(src + 4 * i))


cdef void dequant_i64(const uint8_t *src, float *dst, Py_ssize_t n) noexcept nogil:
    cdef Py_ssize_t i
    for i in range(n):
        dst[i] = <float>(<int64_t>fgg_load_u64le(src + 8 * i))


# Big-endian data: each element's bytes are reversed into little-endian order, then the
# ordinary kernel above runs on the result (see _run in kernels.pxi).

cdef void swap_bytes_1(const uint8_t *src, uint8_t *dst, Py_ssize_t n, int type_id) noexcept nogil:
    memcpy(dst, src, <size_t>n)


cdef void swap_bytes_2(const uint8_t *src, uint8_t *dst, Py_ssize_t n, int type_id) noexcept nogil:
    cdef Py_ssize_t i
    for i in range(n):
        dst[2 * i] = src[2 * i + 1]
        dst[2 * i + 1] = src[2 * i]


cdef void swap_bytes_4(const uint8_t *src, uint8_t *dst, Py_ssize_t n, int type_id) noexcept nogil:
    cdef Py_ssize_t i
    cdef uint32_t v
    for i in range(n):
        memcpy(&v, src + 4 * i, 4)
        v = fgg_bswap32(v)
        memcpy(dst + 4 * i, &v, 4)


cdef void swap_bytes_8(const uint8_t *src, uint8_t *dst, Py_ssize_t n, int type_id) noexcept nogil:
    cdef Py_ssize_t i
    cdef uint64_t v
    for i in range(n):
        memcpy(&v, src + 8 * i, 8)
        v = fgg_bswap64(v)
        memcpy(dst + 8 * i, &v, 8)


cdef void float_rows(fgg_kernel_row *rows) noexcept nogil:
    """This family's rows of the kernel table (I8 has one byte per element: its swap is a copy)."""
    rows[FGG_TYPE_F32] = fgg_kernel_row(dequantize=dequant_f32, byteswap=swap_bytes_4, quantize=fgg_quantize_f32, dot=NULL)
    rows[FGG_TYPE_F16] = fgg_kernel_row(dequantize=dequant_f16, byteswap=swap_bytes_2, quantize=fgg_quantize_f16, dot=NULL)
    rows[FGG_TYPE_BF16] = fgg_kernel_row(dequantize=dequant_bf16, byteswap=swap_bytes_2, quantize=fgg_quantize_bf16, dot=NULL)
    rows[FGG_TYPE_F64] = fgg_kernel_row(dequantize=dequant_f64, byteswap=swap_bytes_8, quantize=NULL, dot=NULL)
    rows[FGG_TYPE_I8] = fgg_kernel_row(dequantize=dequant_i8, byteswap=swap_bytes_1, quantize=NULL, dot=NULL)
    rows[FGG_TYPE_I16] = fgg_kernel_row(dequantize=dequant_i16, byteswap=swap_bytes_2, quantize=NULL, dot=NULL)
    rows[FGG_TYPE_I32] = fgg_kernel_row(dequantize=dequant_i32, byteswap=swap_bytes_4, quantize=NULL, dot=NULL)
    rows[FGG_TYPE_I64] = fgg_kernel_row(dequantize=dequant_i64, byteswap=swap_bytes_8, quantize=NULL, dot=NULL)
    # 2 bytes in, 4 out: the staging copy would cost more than the conversion.
    DEQUANTIZE_STREAM[FGG_TYPE_F16] = dequant_f16_stream
    DEQUANTIZE_STREAM[FGG_TYPE_BF16] = dequant_bf16_stream

