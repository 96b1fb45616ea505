/* Shared inline helpers of the dequantization kernels; declared (and documented) in dequant_common.pxd. */
#ifndef FGG_DEQUANT_COMMON_H
#define FGG_DEQUANT_COMMON_H
#include "base.h"

/* Byte-lane constants for unpacking eight quants at a time in a uint64 (SWAR). */
#define FGG_LANES_01 0x0101010101010101ULL
#define FGG_LANES_03 0x0303030303030303ULL
#define FGG_LANES_0F 0x0F0F0F0F0F0F0F0FULL
#define FGG_LANES_80 0x8080808080808080ULL

/* Lane-wise x - amount (both < 128 in every lane), wrapping like int8: setting each lane's
   top bit first absorbs the borrow, so no lane borrows from its neighbour. */
static inline uint64_t fgg_lanes_minus(uint64_t x, uint64_t amount) {
    return ((x | FGG_LANES_80) - amount) ^ FGG_LANES_80;
}

/* no NaN or infinity among n floats: the largest magnitude's bits stay below the exponent's all-ones
   (an unsigned max; no early exit, the rows checked are short) */
static inline int fgg_all_finite(const float *x, int64_t n) {
    uint32_t top = 0;
    int64_t i = 0;
#if FGG_HAVE_AVX2
    /* four independent maxima of 8 lanes: the loads, not one chain of maxima, set the pace */
    const __m256i mag = _mm256_set1_epi32(0x7fffffff);
    __m256i m0 = _mm256_setzero_si256(), m1 = m0, m2 = m0, m3 = m0;
    for (; i + 32 <= n; i += 32) {
        m0 = _mm256_max_epu32(m0, _mm256_and_si256(_mm256_loadu_si256((const __m256i *)(x + i)), mag));
        m1 = _mm256_max_epu32(m1, _mm256_and_si256(_mm256_loadu_si256((const __m256i *)(x + i + 8)), mag));
        m2 = _mm256_max_epu32(m2, _mm256_and_si256(_mm256_loadu_si256((const __m256i *)(x + i + 16)), mag));
        m3 = _mm256_max_epu32(m3, _mm256_and_si256(_mm256_loadu_si256((const __m256i *)(x + i + 24)), mag));
    }
    uint32_t lanes[8];
    _mm256_storeu_si256((__m256i *)lanes, _mm256_max_epu32(_mm256_max_epu32(m0, m1), _mm256_max_epu32(m2, m3)));
    for (int k = 0; k < 8; ++k) top = lanes[k] > top ? lanes[k] : top;
#endif
    for (; i < n; ++i) {
        uint32_t m = fgg_float_to_bits(x[i]) & 0x7fffffffu;
        top = m > top ? m : top;
    }
    return top < 0x7f800000u;
}

/* fgg_v16: 16 byte lanes (byte k of memory = lane k), an SSE2 register on x86 and two
   uint64 words elsewhere. Quants are unpacked in it with whole-vector shifts and masks and
   go straight into the conversion steps below, never through memory. Shifts act on 64-bit
   lanes: mask after a right shift, and shift left only what stays inside its byte. */
#if FGG_HAVE_SSE2
typedef __m128i fgg_v16;
static inline fgg_v16 fgg_v16_load(const uint8_t *p) { return _mm_loadu_si128((const __m128i *)p); }
static inline fgg_v16 fgg_v16_words(uint64_t lo, uint64_t hi) { return _mm_set_epi64x((long long)hi, (long long)lo); }
static inline fgg_v16 fgg_v16_splat(uint8_t x) { return _mm_set1_epi8((char)x); }
static inline fgg_v16 fgg_v16_and(fgg_v16 a, fgg_v16 b) { return _mm_and_si128(a, b); }
static inline fgg_v16 fgg_v16_or(fgg_v16 a, fgg_v16 b) { return _mm_or_si128(a, b); }
static inline fgg_v16 fgg_v16_not(fgg_v16 a) { return _mm_xor_si128(a, _mm_set1_epi8((char)0xFF)); }
static inline fgg_v16 fgg_v16_shr(fgg_v16 a, int bits) { return _mm_srl_epi64(a, _mm_cvtsi32_si128(bits)); }
static inline fgg_v16 fgg_v16_shl(fgg_v16 a, int bits) { return _mm_sll_epi64(a, _mm_cvtsi32_si128(bits)); }
static inline fgg_v16 fgg_v16_sub(fgg_v16 a, fgg_v16 b) { return _mm_sub_epi8(a, b); }
/* 16 bits (little-endian at p) -> lane j = value if bit j is set, else 0: broadcast byte
   j / 8 to lane j, keep bit j % 8, compare. */
static inline fgg_v16 fgg_v16_bits(const uint8_t *p, uint8_t value) {
    __m128i m = _mm_cvtsi32_si128((int)p[0] | ((int)p[1] << 8));
    const __m128i bit = _mm_set1_epi64x((long long)0x8040201008040201ULL);
    m = _mm_unpacklo_epi8(m, m);
    m = _mm_unpacklo_epi16(m, m);
    m = _mm_unpacklo_epi32(m, m);
    return _mm_and_si128(_mm_cmpeq_epi8(_mm_and_si128(m, bit), bit), _mm_set1_epi8((char)value));
}
#else
typedef struct { uint64_t w[2]; } fgg_v16;   /* w[0] = lanes 0-7 (lane k = bits 8k..8k+7) */
static inline fgg_v16 fgg_v16_words(uint64_t lo, uint64_t hi) { fgg_v16 v; v.w[0] = lo; v.w[1] = hi; return v; }
static inline fgg_v16 fgg_v16_load(const uint8_t *p) { return fgg_v16_words(fgg_load_u64le(p), fgg_load_u64le(p + 8)); }
static inline fgg_v16 fgg_v16_splat(uint8_t x) { uint64_t w = FGG_LANES_01 * x; return fgg_v16_words(w, w); }
static inline fgg_v16 fgg_v16_and(fgg_v16 a, fgg_v16 b) { return fgg_v16_words(a.w[0] & b.w[0], a.w[1] & b.w[1]); }
static inline fgg_v16 fgg_v16_or(fgg_v16 a, fgg_v16 b) { return fgg_v16_words(a.w[0] | b.w[0], a.w[1] | b.w[1]); }
static inline fgg_v16 fgg_v16_not(fgg_v16 a) { return fgg_v16_words(~a.w[0], ~a.w[1]); }
static inline fgg_v16 fgg_v16_shr(fgg_v16 a, int bits) { return fgg_v16_words(a.w[0] >> bits, a.w[1] >> bits); }
static inline fgg_v16 fgg_v16_shl(fgg_v16 a, int bits) { return fgg_v16_words(a.w[0] << bits, a.w[1] << bits); }
/* lane-wise a - b for lanes below 128 (all that the kernels subtract) */
static inline fgg_v16 fgg_v16_sub(fgg_v16 a, fgg_v16 b) {
    return fgg_v16_words(fgg_lanes_minus(a.w[0], b.w[0]), fgg_lanes_minus(a.w[1], b.w[1]));
}
static inline uint8_t fgg__lane(fgg_v16 v, int j) { return (uint8_t)(v.w[j >> 3] >> (8 * (j & 7))); }
static inline uint64_t fgg_spread_bits8(uint32_t bits, uint32_t value);
static inline fgg_v16 fgg_v16_bits(const uint8_t *p, uint8_t value) {
    return fgg_v16_words(fgg_spread_bits8(p[0], value), fgg_spread_bits8(p[1], value));
}
#endif
typedef fgg_v16 fgg_q16;
#define fgg__q16_load(q) fgg_v16_load((const uint8_t *)(q))

#if FGG_HAVE_AVX512
static inline void fgg__i8_mul(float *dst, fgg_q16 v, float s) {
    _mm512_storeu_ps(dst, _mm512_mul_ps(_mm512_set1_ps(s), _mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(v))));
}
static inline void fgg__u8_mul_add(float *dst, fgg_q16 v, float s, float m) {
    __m512 f = _mm512_cvtepi32_ps(_mm512_cvtepu8_epi32(v));
    _mm512_storeu_ps(dst, _mm512_add_ps(_mm512_mul_ps(_mm512_set1_ps(s), f), _mm512_set1_ps(m)));
}
static inline void fgg__u8_mul_sub(float *dst, fgg_q16 v, float s, float m) {
    __m512 f = _mm512_cvtepi32_ps(_mm512_cvtepu8_epi32(v));
    _mm512_storeu_ps(dst, _mm512_sub_ps(_mm512_mul_ps(_mm512_set1_ps(s), f), _mm512_set1_ps(m)));
}
#elif FGG_HAVE_AVX2
static inline void fgg__i8_mul(float *dst, fgg_q16 v, float s) {
    __m256 vs = _mm256_set1_ps(s);
    _mm256_storeu_ps(dst, _mm256_mul_ps(vs, _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(v))));
    _mm256_storeu_ps(dst + 8, _mm256_mul_ps(vs, _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(_mm_srli_si128(v, 8)))));
}
static inline void fgg__u8_mul_add(float *dst, fgg_q16 v, float s, float m) {
    __m256 vs = _mm256_set1_ps(s), vm = _mm256_set1_ps(m);
    __m256 lo = _mm256_cvtepi32_ps(_mm256_cvtepu8_epi32(v));
    __m256 hi = _mm256_cvtepi32_ps(_mm256_cvtepu8_epi32(_mm_srli_si128(v, 8)));
    _mm256_storeu_ps(dst, _mm256_add_ps(_mm256_mul_ps(vs, lo), vm));
    _mm256_storeu_ps(dst + 8, _mm256_add_ps(_mm256_mul_ps(vs, hi), vm));
}
static inline void fgg__u8_mul_sub(float *dst, fgg_q16 v, float s, float m) {
    __m256 vs = _mm256_set1_ps(s), vm = _mm256_set1_ps(m);
    __m256 lo = _mm256_cvtepi32_ps(_mm256_cvtepu8_epi32(v));
    __m256 hi = _mm256_cvtepi32_ps(_mm256_cvtepu8_epi32(_mm_srli_si128(v, 8)));
    _mm256_storeu_ps(dst, _mm256_sub_ps(_mm256_mul_ps(vs, lo), vm));
    _mm256_storeu_ps(dst + 8, _mm256_sub_ps(_mm256_mul_ps(vs, hi), vm));
}
#elif FGG_HAVE_SSE2
/* SSE2 only (the x86-64 baseline): widen bytes with unpacks; the sign comes from an
   arithmetic shift of the byte placed at the top of each 32-bit lane. */
static inline void fgg__i8_ps(fgg_q16 v, __m128 out[4]) {
    __m128i w0 = _mm_unpacklo_epi8(v, v), w1 = _mm_unpackhi_epi8(v, v);
    out[0] = _mm_cvtepi32_ps(_mm_srai_epi32(_mm_unpacklo_epi16(w0, w0), 24));
    out[1] = _mm_cvtepi32_ps(_mm_srai_epi32(_mm_unpackhi_epi16(w0, w0), 24));
    out[2] = _mm_cvtepi32_ps(_mm_srai_epi32(_mm_unpacklo_epi16(w1, w1), 24));
    out[3] = _mm_cvtepi32_ps(_mm_srai_epi32(_mm_unpackhi_epi16(w1, w1), 24));
}
static inline void fgg__u8_ps(fgg_q16 v, __m128 out[4]) {
    __m128i z = _mm_setzero_si128();
    __m128i w0 = _mm_unpacklo_epi8(v, z), w1 = _mm_unpackhi_epi8(v, z);
    out[0] = _mm_cvtepi32_ps(_mm_unpacklo_epi16(w0, z));
    out[1] = _mm_cvtepi32_ps(_mm_unpackhi_epi16(w0, z));
    out[2] = _mm_cvtepi32_ps(_mm_unpacklo_epi16(w1, z));
    out[3] = _mm_cvtepi32_ps(_mm_unpackhi_epi16(w1, z));
}
static inline void fgg__i8_mul(float *dst, fgg_q16 v, float s) {
    __m128 f[4], vs = _mm_set1_ps(s);
    int k;
    fgg__i8_ps(v, f);
    for (k = 0; k < 4; k++) _mm_storeu_ps(dst + 4 * k, _mm_mul_ps(vs, f[k]));
}
static inline void fgg__u8_mul_add(float *dst, fgg_q16 v, float s, float m) {
    __m128 f[4], vs = _mm_set1_ps(s), vm = _mm_set1_ps(m);
    int k;
    fgg__u8_ps(v, f);
    for (k = 0; k < 4; k++) _mm_storeu_ps(dst + 4 * k, _mm_add_ps(_mm_mul_ps(vs, f[k]), vm));
}
static inline void fgg__u8_mul_sub(float *dst, fgg_q16 v, float s, float m) {
    __m128 f[4], vs = _mm_set1_ps(s), vm = _mm_set1_ps(m);
    int k;
    fgg__u8_ps(v, f);
    for (k = 0; k < 4; k++) _mm_storeu_ps(dst + 4 * k, _mm_sub_ps(_mm_mul_ps(vs, f[k]), vm));
}
#else
static inline void fgg__i8_mul(float *dst, fgg_q16 v, float s) {
    int j; for (j = 0; j < 16; j++) dst[j] = s * (float)(int8_t)fgg__lane(v, j);
}
static inline void fgg__u8_mul_add(float *dst, fgg_q16 v, float s, float m) {
    int j; for (j = 0; j < 16; j++) dst[j] = s * (float)fgg__lane(v, j) + m;
}
static inline void fgg__u8_mul_sub(float *dst, fgg_q16 v, float s, float m) {
    int j; for (j = 0; j < 16; j++) dst[j] = s * (float)fgg__lane(v, j) - m;
}
#endif

static inline void fgg_i8x16_mul(float *dst, const int8_t *q, float s) { fgg__i8_mul(dst, fgg__q16_load(q), s); }
#define fgg_i8x16_mul_v fgg__i8_mul
#define fgg_u8x16_mul_add_v fgg__u8_mul_add
#define fgg_u8x16_mul_sub_v fgg__u8_mul_sub

/* n fp16 values (little-endian, unaligned) -> float32, the same bits as fgg_half_to_float,
   8 or 16 lanes at a time with the same integer/mask steps. */
#if FGG_HAVE_SSE2
static inline __m128i fgg__halves4_to_bits(__m128i h) {   /* h: four fp16 in 32-bit lanes */
    const __m128i sign = _mm_slli_epi32(_mm_and_si128(h, _mm_set1_epi32(0x8000)), 16);
    const __m128i shifted = _mm_slli_epi32(_mm_and_si128(h, _mm_set1_epi32(0x7FFF)), 13);
    const __m128i is_sub = _mm_cmplt_epi32(shifted, _mm_set1_epi32(0x00800000));
    const __m128i is_infnan = _mm_cmpgt_epi32(shifted, _mm_set1_epi32(0x0F7FFFFF));
    const __m128i bias = _mm_set1_epi32(0x38000000);
    __m128i normal = _mm_add_epi32(_mm_add_epi32(shifted, bias), _mm_and_si128(is_infnan, bias));
    __m128i sub = _mm_castps_si128(_mm_sub_ps(
        _mm_castsi128_ps(_mm_add_epi32(shifted, _mm_set1_epi32(0x38800000))),
        _mm_castsi128_ps(_mm_set1_epi32(0x38800000))));
    __m128i bits = _mm_or_si128(_mm_and_si128(is_sub, sub), _mm_andnot_si128(is_sub, normal));
    return _mm_or_si128(bits, sign);
}
#endif
#if FGG_HAVE_AVX2 && !FGG_HAVE_F16C
#error "the AVX2 kernel build needs F16C (-mf16c)"
#endif
#if FGG_HAVE_AVX2
/* Eight fp16 (memory order) -> float32 bits with F16C's vcvtph2ps, which is exact for every
   encoding but signalling NaNs: it sets their quiet bit (float bit 22). Clear it again where the
   input was a NaN with its quiet bit (fp16 bit 9) clear, so payloads come through bit for bit. */
static inline __m256i fgg__halves8_f16c(__m128i h) {
    const __m256i x = _mm256_cvtepu16_epi32(h);
    const __m256i nan = _mm256_cmpgt_epi32(_mm256_and_si256(x, _mm256_set1_epi32(0x7FFF)), _mm256_set1_epi32(0x7C00));
    const __m256i signalling = _mm256_cmpeq_epi32(_mm256_and_si256(x, _mm256_set1_epi32(0x0200)), _mm256_setzero_si256());
    const __m256i fix = _mm256_and_si256(_mm256_and_si256(nan, signalling), _mm256_set1_epi32(0x00400000));
    return _mm256_andnot_si256(fix, _mm256_castps_si256(_mm256_cvtph_ps(h)));
}
#endif
#if FGG_HAVE_AVX512
/* The same for sixteen fp16 (AVX-512F's vcvtph2ps, same rule for signalling NaNs). */
static inline __m512i fgg__halves16_to_bits(__m256i h) {
    const __m512i x = _mm512_cvtepu16_epi32(h);
    __mmask16 nan = _mm512_cmpgt_epi32_mask(_mm512_and_si512(x, _mm512_set1_epi32(0x7FFF)), _mm512_set1_epi32(0x7C00));
    nan = _mm512_mask_testn_epi32_mask(nan, x, _mm512_set1_epi32(0x0200));
    const __m512i bits = _mm512_castps_si512(_mm512_cvtph_ps(h));
    return _mm512_mask_and_epi32(bits, nan, bits, _mm512_set1_epi32(~0x00400000));
}
#endif
static inline void fgg_halves_to_floats(const uint8_t *src, float *dst, ptrdiff_t n) {
    ptrdiff_t i = 0;
#if FGG_HAVE_AVX512
    for (; i + 16 <= n; i += 16) {
        __m256i h = _mm256_loadu_si256((const __m256i *)(src + 2 * i));
        _mm512_storeu_ps(dst + i, _mm512_castsi512_ps(fgg__halves16_to_bits(h)));
    }
#elif FGG_HAVE_AVX2
    for (; i + 8 <= n; i += 8) {
        _mm256_storeu_ps(dst + i, _mm256_castsi256_ps(fgg__halves8_f16c(_mm_loadu_si128((const __m128i *)(src + 2 * i)))));
    }
#elif FGG_HAVE_SSE2
    for (; i + 8 <= n; i += 8) {
        __m128i v = _mm_loadu_si128((const __m128i *)(src + 2 * i)), z = _mm_setzero_si128();
        _mm_storeu_ps(dst + i, _mm_castsi128_ps(fgg__halves4_to_bits(_mm_unpacklo_epi16(v, z))));
        _mm_storeu_ps(dst + i + 4, _mm_castsi128_ps(fgg__halves4_to_bits(_mm_unpackhi_epi16(v, z))));
    }
#endif
    for (; i < n; i++) dst[i] = fgg_half_to_float(fgg_load_u16le(src + 2 * i));
}

/* How far ahead of the loads the streaming conversions below prefetch their source (bytes). */
#define FGG_NT_PREFETCH_BYTES 2048

/* The same conversions writing dst with non-temporal stores, straight from the registers (for
   outputs much larger than the caches: no staging copy, no read-for-ownership of dst). dst is
   first brought to a vector boundary with ordinary stores; call fgg_stream_fence () after. */
static inline void fgg_halves_to_floats_nt(const uint8_t *src, float *dst, ptrdiff_t n) {
    ptrdiff_t i = 0;
#if FGG_HAVE_AVX512 || FGG_HAVE_AVX2
    const uintptr_t align = FGG_HAVE_AVX512 ? 64 : 32;
    if (((uintptr_t)dst & 3) == 0) {
        while (i < n && ((uintptr_t)(dst + i) & (align - 1))) { dst[i] = fgg_half_to_float(fgg_load_u16le(src + 2 * i)); i++; }
#if FGG_HAVE_AVX512
        for (; i + 16 <= n; i += 16) {
            if ((i & 31) == 0) _mm_prefetch((const char *)(src + 2 * i) + FGG_NT_PREFETCH_BYTES, _MM_HINT_NTA);
            __m256i h = _mm256_loadu_si256((const __m256i *)(src + 2 * i));
            _mm512_stream_ps(dst + i, _mm512_castsi512_ps(fgg__halves16_to_bits(h)));
        }
#else
        for (; i + 8 <= n; i += 8) {
            if ((i & 31) == 0) _mm_prefetch((const char *)(src + 2 * i) + FGG_NT_PREFETCH_BYTES, _MM_HINT_NTA);
            _mm256_stream_ps(dst + i, _mm256_castsi256_ps(fgg__halves8_f16c(_mm_loadu_si128((const __m128i *)(src + 2 * i)))));
        }
#endif
    }
#endif
    if (i < n) fgg_halves_to_floats(src + 2 * i, dst + i, n - i);
}

static inline void fgg_bf16_to_floats_nt(const uint8_t *src, float *dst, ptrdiff_t n) {
    ptrdiff_t i = 0;
#if FGG_HAVE_AVX512 || FGG_HAVE_AVX2
    const uintptr_t align = FGG_HAVE_AVX512 ? 64 : 32;
    if (((uintptr_t)dst & 3) == 0) {
        while (i < n && ((uintptr_t)(dst + i) & (align - 1))) { dst[i] = fgg_bf16_to_float(fgg_load_u16le(src + 2 * i)); i++; }
#if FGG_HAVE_AVX512
        for (; i + 32 <= n; i += 32) {
            _mm_prefetch((const char *)(src + 2 * i) + FGG_NT_PREFETCH_BYTES, _MM_HINT_NTA);
            __m512i h = _mm512_loadu_si512((const void *)(src + 2 * i));
            /* bf16 -> float: each 16-bit value becomes the high half of its 32-bit lane */
            __m512i lo = _mm512_unpacklo_epi16(_mm512_setzero_si512(), h);
            __m512i hi = _mm512_unpackhi_epi16(_mm512_setzero_si512(), h);
            /* unpack works within 128-bit lanes: lanes (0..3 of lo, hi) hold elements in the order
               lo0 hi0 lo1 hi1 ...; put them back in memory order with two cross-lane permutes */
            const __m512i first = _mm512_set_epi64(11, 10, 3, 2, 9, 8, 1, 0);
            const __m512i second = _mm512_set_epi64(15, 14, 7, 6, 13, 12, 5, 4);
            _mm512_stream_si512((void *)(dst + i), _mm512_permutex2var_epi64(lo, first, hi));
            _mm512_stream_si512((void *)(dst + i + 16), _mm512_permutex2var_epi64(lo, second, hi));
        }
#else
        for (; i + 8 <= n; i += 8) {
            if ((i & 31) == 0) _mm_prefetch((const char *)(src + 2 * i) + FGG_NT_PREFETCH_BYTES, _MM_HINT_NTA);
            __m256i h = _mm256_cvtepu16_epi32(_mm_loadu_si128((const __m128i *)(src + 2 * i)));
            _mm256_stream_ps(dst + i, _mm256_castsi256_ps(_mm256_slli_epi32(h, 16)));
        }
#endif
    }
#endif
    for (; i < n; i++) dst[i] = fgg_bf16_to_float(fgg_load_u16le(src + 2 * i));
}

/* The low 8 bits of ``bits`` -> 8 byte lanes of a uint64 (lane k = bits 8k..8k+7, i.e. byte
   k once stored little-endian): lane k is ``value`` (< 256) where bit k is set, else 0.
   A shift/mask ladder moves bit k to bit 8k; the multiply then cannot carry between lanes. */
static inline uint64_t fgg_spread_bits8(uint32_t bits, uint32_t value) {
    uint64_t x = bits & 0xFFu;
    x = (x | (x << 28)) & 0x0000000F0000000FULL;
    x = (x | (x << 14)) & 0x0003000300030003ULL;
    return ((x | (x << 7)) & 0x0101010101010101ULL) * value;
}

/* Non-temporal copy for outputs much larger than the caches: no read-for-ownership of the
   destination lines, so the write costs half the memory traffic of ordinary stores. */
static inline void fgg_stream_copy(float *dst, const float *src, ptrdiff_t n) {
    ptrdiff_t i = 0;
#if FGG_HAVE_SSE2
#if FGG_HAVE_AVX512
    const uintptr_t align = 64; const ptrdiff_t width = 16;
#elif FGG_HAVE_AVX2
    const uintptr_t align = 32; const ptrdiff_t width = 8;
#else
    const uintptr_t align = 16; const ptrdiff_t width = 4;
#endif
    if (((uintptr_t)dst & 3) == 0) {
        while (i < n && ((uintptr_t)(dst + i) & (align - 1))) { dst[i] = src[i]; i++; }
        for (; i + width <= n; i += width) {
#if FGG_HAVE_AVX512
            _mm512_stream_ps(dst + i, _mm512_loadu_ps(src + i));
#elif FGG_HAVE_AVX2
            _mm256_stream_ps(dst + i, _mm256_loadu_ps(src + i));
#else
            _mm_stream_ps(dst + i, _mm_loadu_ps(src + i));
#endif
        }
    }
#endif
    if (i < n) memcpy(dst + i, src + i, (size_t)(n - i) * sizeof(float));
}
static inline void fgg_stream_fence(void) {
#if FGG_HAVE_SSE2
    _mm_sfence();
#endif
}

#endif
