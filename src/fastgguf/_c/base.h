/* The base every header of the C layer includes: which intrinsics this build may use, byte order,
 * and the scalar conversions of the formats' fields (fp16, bf16, little-endian), defined once so
 * that the dequantizers, quantizers and dot products read and write the same bits.
 *
 *   FGG_HAVE_SSE2 / AVX / AVX2 / AVX512 / F16C   1 where this build may use those intrinsics
 *   FGG_HAVE_VECEXT        1 where GCC/Clang vector extensions (vector_size) may be used
 *   fgg_load_u16le / u32le / u64le / f32le (p), fgg_store_u16le / u32le (p, v)   unaligned LE
 *   fgg_half_to_float (h)  fp16 bits -> float32, exact (NaN payloads kept), no subnormal floats
 *   fgg_float_to_half (f)  float32 -> fp16 bits as ggml: nearest even, NaN -> 0x7e00 | sign
 *   fgg_bf16_to_float (h) / fgg_float_to_bf16 (f)   bfloat16, ggml's rounding and quiet NaN
 */
#ifndef FGG_BASE_H
#define FGG_BASE_H
#include <stddef.h>
#include <stdint.h>
#include <string.h>

/* FGG_NO_SIMD (setup.py: FASTGGUF_NO_SIMD=1) forces the plain C paths that non-x86 machines
   compile, so that they can be tested on x86 too. */
#if (defined(__SSE2__) || defined(_M_X64)) && !defined(FGG_NO_SIMD)
#include <immintrin.h>
#define FGG_HAVE_SSE2 1
#else
#define FGG_HAVE_SSE2 0
#endif
#if FGG_HAVE_SSE2 && defined(__AVX__)
#define FGG_HAVE_AVX 1
#else
#define FGG_HAVE_AVX 0
#endif
#if FGG_HAVE_SSE2 && defined(__AVX2__)
#define FGG_HAVE_AVX2 1
#else
#define FGG_HAVE_AVX2 0
#endif
#if FGG_HAVE_SSE2 && defined(__AVX512F__) && defined(__AVX512BW__)
#define FGG_HAVE_AVX512 1
#else
#define FGG_HAVE_AVX512 0
#endif
#if FGG_HAVE_SSE2 && defined(__F16C__)
#define FGG_HAVE_F16C 1
#else
#define FGG_HAVE_F16C 0
#endif
#if FGG_HAVE_AVX2 && !FGG_HAVE_F16C
#error "the AVX2 kernel build needs F16C (-mf16c)"
#endif
#if (defined(__GNUC__) || defined(__clang__)) && !defined(FGG_NO_SIMD)
#define FGG_HAVE_VECEXT 1
#else
#define FGG_HAVE_VECEXT 0
#endif

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
static inline void fgg_store_u16le(uint8_t *p, uint16_t v) {
    p[0] = (uint8_t)v;
    p[1] = (uint8_t)(v >> 8);
}
static inline void fgg_store_u32le(uint8_t *p, uint32_t v) {
    p[0] = (uint8_t)v;
    p[1] = (uint8_t)(v >> 8);
    p[2] = (uint8_t)(v >> 16);
    p[3] = (uint8_t)(v >> 24);
}

static inline float fgg_bits_to_float(uint32_t u) { float f; memcpy(&f, &u, 4); return f; }
static inline uint32_t fgg_float_to_bits(float f) { uint32_t u; memcpy(&u, &f, 4); return u; }
static inline float fgg_load_f32le(const uint8_t *p) { return fgg_bits_to_float(fgg_load_u32le(p)); }

/* fp16 -> fp32 without branches or selects (masks only, so loops over it vectorize) and
   without producing or consuming float subnormals (so a DAZ/FTZ mode set by some other
   library cannot change it): normals re-bias the exponent with an integer add (twice for
   inf/NaN, which gives the all-ones exponent and keeps the payload); subnormals are built as
   2^-14 * (1 + m/1024) and 2^-14 is subtracted, an exact float subtraction. */
static inline float fgg_half_to_float(uint16_t h) {
    uint32_t sign = (uint32_t)(h & 0x8000u) << 16;
    uint32_t shifted = (uint32_t)(h & 0x7FFFu) << 13;
    uint32_t is_subnormal = 0u - (uint32_t)(shifted < 0x00800000u);   /* all ones or 0 */
    uint32_t is_infnan = 0u - (uint32_t)(shifted >= 0x0F800000u);
    uint32_t normal = shifted + 0x38000000u + (is_infnan & 0x38000000u);
    uint32_t subnormal = fgg_float_to_bits(
        fgg_bits_to_float(shifted + 0x38800000u) - fgg_bits_to_float(0x38800000u));
    return fgg_bits_to_float((subnormal & is_subnormal) | (normal & ~is_subnormal) | sign);
}

/* for a value that only feeds arithmetic (block scales): F16C where built with it (a signalling
   NaN comes out quiet, as any arithmetic on it would make it anyway). Without F16C, the normal
   halves that scales almost always are take one re-biasing add behind a well-predicted branch
   (fgg_half_to_float's masks cost about 20 instructions); zeros, subnormals, inf and NaN take
   fgg_half_to_float. The same bits either way. */
static inline float fgg_half_to_float_scale(uint16_t h) {
#if FGG_HAVE_F16C
    return _cvtsh_ss(h);
#else
    if ((uint32_t)(h & 0x7C00u) - 0x0400u < 0x7800u)  /* exponent 1..30 */
        return fgg_bits_to_float(((((uint32_t)h & 0x7FFFu) << 13) + 0x38000000u) | ((uint32_t)(h & 0x8000u) << 16));
    return fgg_half_to_float(h);
#endif
}

/* Integer steps only, so no floating-point mode (FTZ/DAZ, rounding) changes a result. */
static inline uint16_t fgg_float_to_half(float f) {
    const uint32_t w = fgg_float_to_bits(f);
    const uint16_t sign = (uint16_t)((w >> 16) & 0x8000u);
    const uint32_t a = w & 0x7FFFFFFFu;
    uint32_t q, rest, half, shift, mantissa;
    if (a > 0x7F800000u) return sign | 0x7E00u;        /* NaN */
#if FGG_HAVE_F16C
    /* the same bits for every non-NaN float (checked over all 2^32 patterns), in one instruction */
    return (uint16_t)_cvtss_sh(f, _MM_FROUND_TO_NEAREST_INT);
#endif
    if (a >= 0x477FF000u) return sign | 0x7C00u;       /* >= 65520 (half-way past the largest half): inf */
    if (a >= 0x38800000u) {                             /* >= 2^-14: a normal half */
        q = (a - 0x38000000u) >> 13;                    /* exponent re-biased 127 -> 15, mantissa cut */
        rest = a & 0x1FFFu;
        q += (rest > 0x1000u) | ((rest == 0x1000u) & q); /* ties to even; a carry bumps the exponent */
        return sign | (uint16_t)q;
    }
    if (a < 0x33000000u) return sign;                   /* below 2^-25: rounds to zero */
    /* A subnormal half: units of 2^-24. The float's value is mantissa * 2^(exponent - 150). */
    mantissa = (a & 0x007FFFFFu) | 0x00800000u;
    shift = 126u - (a >> 23);                           /* 14 .. 24 */
    q = mantissa >> shift;
    rest = mantissa & ((1u << shift) - 1u);
    half = 1u << (shift - 1u);
    q += (rest > half) | ((rest == half) & q);
    return sign | (uint16_t)q;
}

static inline float fgg_bf16_to_float(uint16_t h) { return fgg_bits_to_float((uint32_t)h << 16); }

/* round to nearest even on the top 16 bits (subnormals kept); a NaN keeps its top bits, made quiet */
static inline uint16_t fgg_float_to_bf16(float f) {
    const uint32_t w = fgg_float_to_bits(f);
    if ((w & 0x7FFFFFFFu) > 0x7F800000u) return (uint16_t)((w >> 16) | 0x0040u);
    return (uint16_t)((w + 0x7FFFu + ((w >> 16) & 1u)) >> 16);
}

#endif /* FGG_BASE_H */
