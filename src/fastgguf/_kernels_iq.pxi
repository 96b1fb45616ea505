# Dequantization kernels for the importance-matrix (IQ1_S ... IQ4_XS), ternary
# (TQ1_0, TQ2_0), FP4 (MXFP4, NVFP4) and 1-/2-bit (Q1_0, Q2_0) block types.
#
# Included by _kernels.pxi, which defines ``dequant_fn`` and cimports the shared
# helpers (fgg_load_u16le, fgg_half_to_float, ...) from _kernel_helpers.pxd. Every kernel converts
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

from libc.stdint cimport int8_t, uint8_t, uint16_t, uint32_t
from libc.string cimport memcpy

include "_iq_tables.pxi"

cdef extern from *:
    """
    static const float fastgguf_iq1_deltas[2] = {0.125f, -0.125f};
    """
    # IQ1_S / IQ1_M grid offset, indexed by its sign bit: a load, where a select would branch.
    const float IQ1_DELTAS "fastgguf_iq1_deltas" [2]


# The grids as float32: a group then decodes with plain vector loads, no
# byte-to-float conversion (which the compiler leaves scalar). Filled at import
# from the byte tables in _iq_tables.pxi.
cdef float iq2xxs_grid_f32[256][8]
cdef float iq2xs_grid_f32[512][8]
cdef float iq2s_grid_f32[1024][8]
cdef float iq3xxs_grid_f32[256][4]
cdef float iq3s_grid_f32[512][4]
cdef float iq1s_grid_f32[2048][8]


cdef void iq_fill_float_grids() noexcept nogil:
    cdef int i, j
    for i in range(256):
        for j in range(8):
            iq2xxs_grid_f32[i][j] = fastgguf_iq2xxs_grid[i][j]
        for j in range(4):
            iq3xxs_grid_f32[i][j] = fastgguf_iq3xxs_grid[i][j]
    for i in range(512):
        for j in range(8):
            iq2xs_grid_f32[i][j] = fastgguf_iq2xs_grid[i][j]
        for j in range(4):
            iq3s_grid_f32[i][j] = fastgguf_iq3s_grid[i][j]
    for i in range(1024):
        for j in range(8):
            iq2s_grid_f32[i][j] = fastgguf_iq2s_grid[i][j]
    for i in range(2048):
        for j in range(8):
            iq1s_grid_f32[i][j] = fastgguf_iq1s_grid[i][j]


iq_fill_float_grids()


cdef extern from *:
    """
    /* One group of 8 outputs of the grid types, with the same float operations, in the same
       order, as gguf-py: (scale * grid) * sign, and scale * (grid + delta) for IQ1.
       Written with GCC/Clang vector types because the auto-vectorizer leaves these short
       loops scalar when it prefers 512-bit vectors (the AVX-512 build); plain loops elsewhere. */
    /* __builtin_shufflevector / __builtin_convertvector: clang, and gcc from 12 on. Define
       FASTGGUF_VEC_BUILTINS=0 to build (and test) the paths that do without them. */
    #if !defined(FASTGGUF_VEC_BUILTINS)
    #if defined(__clang__) || (defined(__GNUC__) && __GNUC__ >= 12)
    #define FASTGGUF_VEC_BUILTINS 1
    #else
    #define FASTGGUF_VEC_BUILTINS 0
    #endif
    #endif
    #if defined(__GNUC__) || defined(__clang__)
    typedef float fastgguf_v8f __attribute__((vector_size(32)));
    typedef float fastgguf_v4f __attribute__((vector_size(16)));
    #if defined(__AVX__)
    static inline void fastgguf_grid8(float *dst, float scale, const float *grid, const float *signs) {
        fastgguf_v8f g, s, v;
        memcpy(&g, grid, sizeof g);
        memcpy(&s, signs, sizeof s);
        v = (scale * g) * s;  /* the scalar is broadcast */
        memcpy(dst, &v, sizeof v);
    }
    static inline void fastgguf_iq1_grid8(float *dst, float scale, const float *grid, float delta) {
        fastgguf_v8f g, v;
        memcpy(&g, grid, sizeof g);
        v = scale * (g + delta);
        memcpy(dst, &v, sizeof v);
    }
    #else
    /* Without AVX, two 128-bit halves: gcc lowers 256-bit vector types through the stack. */
    static inline void fastgguf_grid8(float *dst, float scale, const float *grid, const float *signs) {
        fastgguf_v4f g0, g1, s0, s1;
        memcpy(&g0, grid, sizeof g0);
        memcpy(&g1, grid + 4, sizeof g1);
        memcpy(&s0, signs, sizeof s0);
        memcpy(&s1, signs + 4, sizeof s1);
        g0 = (scale * g0) * s0;
        g1 = (scale * g1) * s1;
        memcpy(dst, &g0, sizeof g0);
        memcpy(dst + 4, &g1, sizeof g1);
    }
    static inline void fastgguf_iq1_grid8(float *dst, float scale, const float *grid, float delta) {
        fastgguf_v4f g0, g1;
        memcpy(&g0, grid, sizeof g0);
        memcpy(&g1, grid + 4, sizeof g1);
        g0 = scale * (g0 + delta);
        g1 = scale * (g1 + delta);
        memcpy(dst, &g0, sizeof g0);
        memcpy(dst + 4, &g1, sizeof g1);
    }
    #endif
    #if defined(__AVX__) && FASTGGUF_VEC_BUILTINS
    static inline void fastgguf_grid4x2(float *dst, float scale, const float *grid_a,
                                        const float *grid_b, const float *signs) {
        fastgguf_v4f a, b;
        fastgguf_v8f s, v;
        memcpy(&a, grid_a, sizeof a);
        memcpy(&b, grid_b, sizeof b);
        memcpy(&s, signs, sizeof s);
        v = (scale * __builtin_shufflevector(a, b, 0, 1, 2, 3, 4, 5, 6, 7)) * s;
        memcpy(dst, &v, sizeof v);
    }
    #else
    static inline void fastgguf_grid4x2(float *dst, float scale, const float *grid_a,
                                        const float *grid_b, const float *signs) {
        fastgguf_v4f a, b, sa, sb;
        memcpy(&a, grid_a, sizeof a);
        memcpy(&b, grid_b, sizeof b);
        memcpy(&sa, signs, sizeof sa);
        memcpy(&sb, signs + 4, sizeof sb);
        a = (scale * a) * sa;
        b = (scale * b) * sb;
        memcpy(dst, &a, sizeof a);
        memcpy(dst + 4, &b, sizeof b);
    }
    #endif
    #else
    static inline void fastgguf_grid8(float *dst, float scale, const float *grid, const float *signs) {
        float v[8];
        for (int j = 0; j < 8; j++) v[j] = (scale * grid[j]) * signs[j];
        memcpy(dst, v, sizeof v);
    }
    static inline void fastgguf_grid4x2(float *dst, float scale, const float *grid_a,
                                        const float *grid_b, const float *signs) {
        float v[8];
        for (int j = 0; j < 4; j++) {
            v[j] = (scale * grid_a[j]) * signs[j];
            v[j + 4] = (scale * grid_b[j]) * signs[j + 4];
        }
        memcpy(dst, v, sizeof v);
    }
    static inline void fastgguf_iq1_grid8(float *dst, float scale, const float *grid, float delta) {
        float v[8];
        for (int j = 0; j < 8; j++) v[j] = scale * (grid[j] + delta);
        memcpy(dst, v, sizeof v);
    }
    #endif
    """
    void iq_grid8 "fastgguf_grid8" (float *dst, float scale, const float *grid, const float *signs) noexcept nogil
    void iq_grid4x2 "fastgguf_grid4x2" (float *dst, float scale, const float *grid_a, const float *grid_b,
                                        const float *signs) noexcept nogil
    void iq1_grid8 "fastgguf_iq1_grid8" (float *dst, float scale, const float *grid, float delta) noexcept nogil


cdef extern from *:
    """
    #if defined(__AVX2__)
    #include <immintrin.h>
    #endif
    /* Decode 16 bytes of 4-bit codes into 32 floats: dst[j] = scale * lut[low nibble of
       byte j], dst[16 + j] = scale * lut[high nibble of byte j]. With AVX2 the 16-entry
       int8 table sits in a register and one byte shuffle looks up 16 codes at once. */
    static inline void fastgguf_lut4_decode32(float *dst, const uint8_t *codes,
                                              const int8_t *lut, float scale) {
    #if defined(__AVX2__)
        const __m128i table = _mm_loadu_si128((const __m128i *) lut);
        const __m128i mask = _mm_set1_epi8(0x0F);
        const __m128i bytes = _mm_loadu_si128((const __m128i *) codes);
        const __m128i lo = _mm_shuffle_epi8(table, _mm_and_si128(bytes, mask));
        const __m128i hi = _mm_shuffle_epi8(table, _mm_and_si128(_mm_srli_epi16(bytes, 4), mask));
        const __m256 vscale = _mm256_set1_ps(scale);
        _mm256_storeu_ps(dst + 0, _mm256_mul_ps(vscale, _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(lo))));
        _mm256_storeu_ps(dst + 8, _mm256_mul_ps(vscale, _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(_mm_srli_si128(lo, 8)))));
        _mm256_storeu_ps(dst + 16, _mm256_mul_ps(vscale, _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(hi))));
        _mm256_storeu_ps(dst + 24, _mm256_mul_ps(vscale, _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(_mm_srli_si128(hi, 8)))));
    #else
        for (int j = 0; j < 16; j++) {
            dst[j] = scale * (float) lut[codes[j] & 0x0F];
            dst[j + 16] = scale * (float) lut[codes[j] >> 4];
        }
    #endif
    }

    /* The same for 8 bytes -> 16 floats (NVFP4's 16-element sub-blocks). */
    static inline void fastgguf_lut4_decode16(float *dst, const uint8_t *codes,
                                              const int8_t *lut, float scale) {
    #if defined(__AVX2__)
        const __m128i table = _mm_loadu_si128((const __m128i *) lut);
        const __m128i mask = _mm_set1_epi8(0x0F);
        const __m128i bytes = _mm_loadl_epi64((const __m128i *) codes);
        const __m128i lo = _mm_shuffle_epi8(table, _mm_and_si128(bytes, mask));
        const __m128i hi = _mm_shuffle_epi8(table, _mm_and_si128(_mm_srli_epi16(bytes, 4), mask));
        const __m256 vscale = _mm256_set1_ps(scale);
        _mm256_storeu_ps(dst + 0, _mm256_mul_ps(vscale, _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(lo))));
        _mm256_storeu_ps(dst + 8, _mm256_mul_ps(vscale, _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(hi))));
    #else
        for (int j = 0; j < 8; j++) {
            dst[j] = scale * (float) lut[codes[j] & 0x0F];
            dst[j + 8] = scale * (float) lut[codes[j] >> 4];
        }
    #endif
    }
    """
    void iq_lut4_decode32 "fastgguf_lut4_decode32" (float *dst, const uint8_t *codes, const int8_t *lut,
                                                     float scale) noexcept nogil
    void iq_lut4_decode16 "fastgguf_lut4_decode16" (float *dst, const uint8_t *codes, const int8_t *lut,
                                                     float scale) noexcept nogil


# --- 4-bit non-linear -------------------------------------------------------

cdef void dequant_iq4_nl(const uint8_t *src, float *dst, Py_ssize_t n_blocks) noexcept nogil:
    """IQ4_NL: 32 codes of 4 bits indexing a non-linear table, one fp16 scale (18 bytes)."""
    cdef Py_ssize_t b
    for b in range(n_blocks):
        iq_lut4_decode32(dst, src + 2, fastgguf_iq4nl_values, fgg_half_to_float(fgg_load_u16le(src)))
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
            iq_lut4_decode32(dst, src + 8 + 16 * ib, fastgguf_iq4nl_values, dl)
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
                iq_grid8(dst + 8 * l, db, iq2xxs_grid_f32[q[l]],
                         fastgguf_sign_f32[fastgguf_ksigns[(aux_signs >> (7 * l)) & 127]])
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
                    iq_grid8(dst, db, iq2xs_grid_f32[packed & 511], fastgguf_sign_f32[fastgguf_ksigns[packed >> 9]])
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
                    iq_grid8(dst, db, iq2s_grid_f32[qs[k] | (((qh[ib] >> (2 * l)) & 3) << 8)],
                             fastgguf_sign_f32[signs[k]])
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
                iq_grid4x2(dst + 8 * l, db, iq3xxs_grid_f32[q[2 * l]], iq3xxs_grid_f32[q[2 * l + 1]],
                           fastgguf_sign_f32[fastgguf_ksigns[(aux_signs >> (7 * l)) & 127]])
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
                           iq3s_grid_f32[qs[k] | (((qh[ib] >> (2 * l)) & 1) << 8)],
                           iq3s_grid_f32[qs[k + 1] | (((qh[ib] >> (2 * l + 1)) & 1) << 8)],
                           fastgguf_sign_f32[signs[4 * ib + l]])
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
                iq1_grid8(dst, dl, iq1s_grid_f32[qs[4 * ib + l] | (((qh >> (3 * l)) & 7) << 8)], delta)
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
            iq1_grid8(dst, dl_lo, iq1s_grid_f32[qs[4 * ib] | ((qh_lo & 7) << 8)],
                      IQ1_DELTAS[(qh_lo >> 3) & 1])
            iq1_grid8(dst + 8, dl_lo, iq1s_grid_f32[qs[4 * ib + 1] | ((qh_lo & 0x70) << 4)],
                      IQ1_DELTAS[qh_lo >> 7])
            iq1_grid8(dst + 16, dl_hi, iq1s_grid_f32[qs[4 * ib + 2] | ((qh_hi & 7) << 8)],
                      IQ1_DELTAS[(qh_hi >> 3) & 1])
            iq1_grid8(dst + 24, dl_hi, iq1s_grid_f32[qs[4 * ib + 3] | ((qh_hi & 0x70) << 4)],
                      IQ1_DELTAS[qh_hi >> 7])
            dst += 32
        src += 56


# --- ternary ----------------------------------------------------------------

cdef extern from *:
    """
    /* Digit k of 16 TQ1_0 codes, as (digit - 1) * d, to dst[k * stride + j], k < n_digits.
       A code holds base-3 digits as the fixed-point fraction round_up(256 * value / 3**n): its
       top digit is (code * 3) >> 8, i.e. (code >= 86) + (code >= 171), and multiplying the code
       by 3 (mod 256) brings up the next one. Written with vector types: the auto-vectorizer
       keeps these bytes in general registers in some builds. */
    #if (defined(__GNUC__) || defined(__clang__)) && (defined(__AVX2__) || FASTGGUF_VEC_BUILTINS)
    typedef uint8_t fastgguf_v16u8 __attribute__((vector_size(16)));
    typedef int8_t fastgguf_v16i8 __attribute__((vector_size(16)));
    typedef int8_t fastgguf_v8i8 __attribute__((vector_size(8)));
    typedef int32_t fastgguf_v8i32 __attribute__((vector_size(32)));
    static inline void fastgguf_tq1_digits16(float *dst, const uint8_t *src, Py_ssize_t stride,
                                             int n_digits, float d) {
        fastgguf_v16u8 q;
    #if !defined(__AVX2__)
        const fastgguf_v8f vd = {d, d, d, d, d, d, d, d};
    #endif
        memcpy(&q, src, sizeof q);
        for (int k = 0; k < n_digits; k++) {
            /* A true comparison is -1 in its lane: the sum is -digit, so digit - 1 = -sum - 1. */
            fastgguf_v16i8 value = -((fastgguf_v16i8) (q >= 86) + (fastgguf_v16i8) (q >= 171)) - 1;
    #if defined(__AVX2__)
            /* gcc 12 widens the upper 8 int8 lanes one by one unless told how. */
            const __m128i lanes = (__m128i) value;
            const __m256 vscale = _mm256_set1_ps(d);
            _mm256_storeu_ps(dst + k * stride,
                             _mm256_mul_ps(vscale, _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(lanes))));
            _mm256_storeu_ps(dst + k * stride + 8,
                             _mm256_mul_ps(vscale, _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(_mm_srli_si128(lanes, 8)))));
    #else
            fastgguf_v8i8 lo = __builtin_shufflevector(value, value, 0, 1, 2, 3, 4, 5, 6, 7);
            fastgguf_v8i8 hi = __builtin_shufflevector(value, value, 8, 9, 10, 11, 12, 13, 14, 15);
            /* int8 -> int32 -> float: gcc 12 converts int8 lanes to float one at a time. */
            fastgguf_v8f out_lo = vd * __builtin_convertvector(__builtin_convertvector(lo, fastgguf_v8i32), fastgguf_v8f);
            fastgguf_v8f out_hi = vd * __builtin_convertvector(__builtin_convertvector(hi, fastgguf_v8i32), fastgguf_v8f);
            memcpy(dst + k * stride, &out_lo, sizeof out_lo);
            memcpy(dst + k * stride + 8, &out_hi, sizeof out_hi);
    #endif
            q = q + q + q;
        }
    }
    #else
    static inline void fastgguf_tq1_digits16(float *dst, const uint8_t *src, Py_ssize_t stride,
                                             int n_digits, float d) {
        uint8_t q[16];
        memcpy(q, src, sizeof q);
        for (int k = 0; k < n_digits; k++) {
            for (int j = 0; j < 16; j++) {
                dst[k * stride + j] = d * (float) ((q[j] >= 86) + (q[j] >= 171) - 1);
                q[j] = (uint8_t) (q[j] * 3);
            }
        }
    }
    #endif
    """
    void tq1_digits16 "fastgguf_tq1_digits16" (float *dst, const uint8_t *src, Py_ssize_t stride,
                                               int n_digits, float d) noexcept nogil


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
        iq_lut4_decode32(dst, src + 1, fastgguf_fp4_values, fastgguf_e8m0_half_f32[src[0]])
        src += 17
        dst += 32


cdef void dequant_nvfp4(const uint8_t *src, float *dst, Py_ssize_t n_blocks) noexcept nogil:
    """NVFP4: four unsigned-E4M3 scales, each over 16 E2M1 codes (36 bytes per 64 elements)."""
    cdef Py_ssize_t b
    cdef int s
    for b in range(n_blocks):
        for s in range(4):
            iq_lut4_decode16(dst + 16 * s, src + 4 + 8 * s, fastgguf_fp4_values, fastgguf_ue4m3_half_f32[src[s]])
        dst += 64
        src += 36


# --- 1- and 2-bit linear ----------------------------------------------------

cdef extern from *:
    """
    /* Q1_0: the 8 outputs of one byte of sign bits, low bit first: +d where the bit is set, -d
       (d with its sign bit flipped, as ggml's -d) where it is clear.
       Q2_0: the 8 outputs of two bytes of 2-bit codes q, low bits first: (q - 1) * d. */
    #if defined(__AVX__) && (defined(__GNUC__) || defined(__clang__)) && FASTGGUF_VEC_BUILTINS
    typedef uint32_t fastgguf_v8u32 __attribute__((vector_size(32)));
    static inline void fastgguf_q1_byte(float *dst, uint32_t byte, uint32_t d_bits) {
        const fastgguf_v8u32 shifts = {0, 1, 2, 3, 4, 5, 6, 7};
        fastgguf_v8u32 v = (byte >> shifts) & 1;          /* the scalar is broadcast */
        v = d_bits ^ ((v ^ 1) << 31);
        memcpy(dst, &v, sizeof v);
    }
    static inline void fastgguf_q2_pair(float *dst, uint32_t pair, float d) {
        const fastgguf_v8u32 shifts = {0, 2, 4, 6, 8, 10, 12, 14};
        fastgguf_v8i32 q = (fastgguf_v8i32) ((pair >> shifts) & 3) - 1;
        fastgguf_v8f v = __builtin_convertvector(q, fastgguf_v8f) * d;
        memcpy(dst, &v, sizeof v);
    }
    #else
    /* Whole-block loops over a local copy of the codes: the compiler vectorizes these well
       with SSE2, better than one 8-output group at a time. */
    #define FASTGGUF_Q12_BLOCKWISE 1
    static inline void fastgguf_q1_block(float *dst, const uint8_t *src, uint32_t d_bits) {
        uint8_t bits[16];
        uint32_t *out = (uint32_t *) dst;  /* the build has -fno-strict-aliasing */
        memcpy(bits, src, sizeof bits);
        for (int k = 0; k < 16; k++)
            for (int j = 0; j < 8; j++)
                out[8 * k + j] = d_bits ^ ((((uint32_t) bits[k] >> j & 1) ^ 1) << 31);
    }
    static inline void fastgguf_q2_block(float *dst, const uint8_t *src, float d) {
        uint8_t codes[16];
        memcpy(codes, src, sizeof codes);
        for (int k = 0; k < 16; k++)
            for (int j = 0; j < 4; j++)
                dst[4 * k + j] = (float) ((int) ((codes[k] >> (2 * j)) & 3) - 1) * d;
    }
    #endif
    #if !defined(FASTGGUF_Q12_BLOCKWISE)
    #define FASTGGUF_Q12_BLOCKWISE 0
    static inline void fastgguf_q1_block(float *dst, const uint8_t *src, uint32_t d_bits) {
        for (int k = 0; k < 16; k++) fastgguf_q1_byte(dst + 8 * k, src[k], d_bits);
    }
    static inline void fastgguf_q2_block(float *dst, const uint8_t *src, float d) {
        for (int k = 0; k < 8; k++)
            fastgguf_q2_pair(dst + 8 * k, (uint32_t) src[2 * k] | (uint32_t) src[2 * k + 1] << 8, d);
    }
    #endif
    """
    void q1_block "fastgguf_q1_block" (float *dst, const uint8_t *src, uint32_t d_bits) noexcept nogil
    void q2_block "fastgguf_q2_block" (float *dst, const uint8_t *src, float d) noexcept nogil


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


cdef dequant_fn iq_kernel(int type_id) noexcept nogil:
    """Kernel for ``type_id`` (a ggml type id) if this family owns it, else NULL."""
    if type_id == 16:
        return dequant_iq2_xxs
    if type_id == 17:
        return dequant_iq2_xs
    if type_id == 18:
        return dequant_iq3_xxs
    if type_id == 19:
        return dequant_iq1_s
    if type_id == 20:
        return dequant_iq4_nl
    if type_id == 21:
        return dequant_iq3_s
    if type_id == 22:
        return dequant_iq2_s
    if type_id == 23:
        return dequant_iq4_xs
    if type_id == 29:
        return dequant_iq1_m
    if type_id == 34:
        return dequant_tq1_0
    if type_id == 35:
        return dequant_tq2_0
    if type_id == 39:
        return dequant_mxfp4
    if type_id == 40:
        return dequant_nvfp4
    if type_id == 41:
        return dequant_q1_0
    if type_id == 42:
        return dequant_q2_0
    return NULL
