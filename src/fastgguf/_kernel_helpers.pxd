# Shared inline helpers for every dequantization kernel family (floats, legacy, K-quants, IQ/TQ/...).
#
# Use them with ``from fastgguf._kernel_helpers cimport *`` (``_kernels.pxi`` already does this, so a
# family file included from it can call them directly). Everything here is a static inline C
# function: cimporting this file adds no run-time import.
#
#   fgg_load_u16le / u32le / u64le / f32le (p)  unaligned little-endian loads from a byte pointer
#   fgg_bswap16 / 32 / 64 (x)                    byte reversal
#   fgg_half_to_float (h)                        IEEE fp16 bits -> float32, bit-identical to numpy's
#                                                ``astype(float32)``: subnormals exact, inf kept, NaN
#                                                payload kept (not quieted, unlike F16C's vcvtph2ps)
#   fgg_bf16_to_float (h)                        bfloat16 bits -> float32 (exact: a 16-bit shift)
#   fgg_bits_to_float (u) / fgg_float_to_bits (f) reinterpret 32 bits

from libc.stdint cimport uint8_t, uint16_t, uint32_t, uint64_t

cdef extern from *:
    """
    #include <stdint.h>
    #include <string.h>

    #if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
    #define FGG_HOST_BIG_ENDIAN 1
    #else
    #define FGG_HOST_BIG_ENDIAN 0
    #endif

    static inline uint16_t fgg_bswap16(uint16_t x) { return (uint16_t)((x >> 8) | (x << 8)); }
    static inline uint32_t fgg_bswap32(uint32_t x) {
        return (x >> 24) | ((x >> 8) & 0x0000FF00u) | ((x << 8) & 0x00FF0000u) | (x << 24);
    }
    static inline uint64_t fgg_bswap64(uint64_t x) {
        return ((uint64_t)fgg_bswap32((uint32_t)x) << 32) | fgg_bswap32((uint32_t)(x >> 32));
    }

    /* memcpy loads: legal at any alignment, and compile to one plain load (vectorizable). */
    static inline uint16_t fgg_load_u16le(const uint8_t *p) {
        uint16_t v; memcpy(&v, p, 2);
        return FGG_HOST_BIG_ENDIAN ? fgg_bswap16(v) : v;
    }
    static inline uint32_t fgg_load_u32le(const uint8_t *p) {
        uint32_t v; memcpy(&v, p, 4);
        return FGG_HOST_BIG_ENDIAN ? fgg_bswap32(v) : v;
    }
    static inline uint64_t fgg_load_u64le(const uint8_t *p) {
        uint64_t v; memcpy(&v, p, 8);
        return FGG_HOST_BIG_ENDIAN ? fgg_bswap64(v) : v;
    }
    static inline float fgg_bits_to_float(uint32_t u) { float f; memcpy(&f, &u, 4); return f; }
    static inline uint32_t fgg_float_to_bits(float f) { uint32_t u; memcpy(&u, &f, 4); return u; }
    static inline float fgg_load_f32le(const uint8_t *p) { return fgg_bits_to_float(fgg_load_u32le(p)); }

    /* fp16 -> fp32 without branches (so loops over it vectorize) and without producing or
       consuming float subnormals (so a DAZ/FTZ mode set by some other library cannot change it):
       normals re-bias the exponent with an integer add; subnormals are built as
       2^-14 * (1 + m/1024) and 2^-14 is subtracted, an exact float subtraction; inf/NaN get an
       all-ones exponent with the payload kept. */
    static inline float fgg_half_to_float(uint16_t h) {
        uint32_t sign = (uint32_t)(h & 0x8000u) << 16;
        uint32_t shifted = (uint32_t)(h & 0x7FFFu) << 13;
        uint32_t normal = shifted + 0x38000000u;
        uint32_t infnan = shifted | 0x7F800000u;
        uint32_t subnormal = fgg_float_to_bits(
            fgg_bits_to_float(shifted + 0x38800000u) - fgg_bits_to_float(0x38800000u));
        uint32_t bits = shifted < 0x00800000u ? subnormal : (shifted >= 0x0F800000u ? infnan : normal);
        return fgg_bits_to_float(bits | sign);
    }

    static inline float fgg_bf16_to_float(uint16_t h) { return fgg_bits_to_float((uint32_t)h << 16); }
    """
    uint16_t fgg_bswap16(uint16_t x) noexcept nogil
    uint32_t fgg_bswap32(uint32_t x) noexcept nogil
    uint64_t fgg_bswap64(uint64_t x) noexcept nogil
    uint16_t fgg_load_u16le(const uint8_t *p) noexcept nogil
    uint32_t fgg_load_u32le(const uint8_t *p) noexcept nogil
    uint64_t fgg_load_u64le(const uint8_t *p) noexcept nogil
    float fgg_bits_to_float(uint32_t u) noexcept nogil
    uint32_t fgg_float_to_bits(float f) noexcept nogil
    float fgg_load_f32le(const uint8_t *p) noexcept nogil
    float fgg_half_to_float(uint16_t h) noexcept nogil
    float fgg_bf16_to_float(uint16_t h) noexcept nogil
    bint FGG_HOST_BIG_ENDIAN
