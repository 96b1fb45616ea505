# fastgguf.matmul's drivers: out[m, n] = sum_k x[m, k] * W[n, k] straight from W's blocks.
# Included at the end of kernels.pxi, so every kernel build has them, compiled with its ISA
# flags; the dot products themselves are in dot.h.
#
# Float path (matmul_rows): each weight row is dequantized _MM_CHUNK elements at a time into a
# scratch buffer that stays in L1 (never written to memory), and that chunk is multiplied with
# the same columns of every row of x before the next chunk is made. Each (m, n) is computed by
# one thread in one fixed order, so the result does not depend on the thread split. Q3_K, Q4_K,
# Q5_K and Q6_K (the types of the K_M models), IQ4_XS, Q8_0 and Q4_0 take the float path factored by
# sub-block instead (_matmul_exact, dot.h's fgg_mm_span_*): S * sum(q * x) - M * sum(x) per
# sub-block, with x's sums per 32 made once per call (Q8_0 and Q4_0 likewise, a block being one
# sub-block); not with round_to, whose rounding needs each weight's value. _mm_exact_rows walks
# it: up to FGG_MM_REG_ROWS rows of x over whole weight rows with x in place, more rows in spans
# of the weight rows against a packed copy of x.
#
# Integer path (matmul_rows_int): x quantized once per call (per 32 or per 256 values), the
# weight blocks unpacked once per 8 rows of x. matmul_rows_grouped runs matmul_id's experts,
# any path, in one hand-off to the pool.

from libc.stdlib cimport calloc, getenv

from fastgguf._c.dot cimport *


cdef enum:
    # Weight elements dequantized per step: 4 KiB of floats, a whole number of blocks of every
    # type (block sizes divide 256 or are 1), small enough that the chunk and the matching
    # columns of 8 rows of x stay in L1.
    _MM_CHUNK = 1024
    MM_Q8_BYTES = sizeof(fgg_mm_q8)
    MM_Q8K_BYTES = sizeof(fgg_mm_q8k)
    # Batches (M > 1) are walked in tiles: a tile of weight rows (about _MM_W_TILE bytes of blocks)
    # times a tile of x rows (about _MM_X_TILE bytes; a multiple of 8 rows, at least 8), both in L2,
    # so neither all of x is streamed again for every weight row (what made large batches slow),
    # nor the weights are read from memory more than once. Each (m, n) is still one kernel call
    # over the whole row in the same order (or, by spans, the same additions carried from span
    # to span): the tiles change no bits.
    _MM_W_TILE = 64 * 1024
    _MM_X_TILE = 128 * 1024
    # The factored float path walks a batch's tile a span of blocks at a time (_mm_exact_rows):
    # the span's columns of _MM_SPAN_X_ROWS rows of x (about _MM_SPAN_BYTES, whole multiples of
    # 256 values, at least 256) stay in L1 while every weight row of the tile meets them. 32 rows:
    # each weight block is unpacked once per 32 rows (16 before; at 64 rows of x, avx512: IQ4_XS
    # 79 -> 59 ms, Q2_K 72 -> 62; Q8_0, whose blocks unpack for almost nothing, level with 16 rows
    # since the tiles below grew).
    _MM_SPAN_X_ROWS = 32
    _MM_SPAN_BYTES = 16 * 1024
    # Tried on Zen 4 (one thread, 2048 x 4096, 512 rows of x, Q4_K 172 ms with these): spans of
    # 4 super-blocks 188 ms, 16 rows of x 201, 64 rows 203 (Q6_K 152 -> 149): the panel outgrows
    # L1, or fewer rows share each unpacking.
    # The weight rows of such a tile: about _MM_SPAN_W_TILE bytes, at most FGG_MM_SPAN_W_ROWS (in L2;
    # their lanes, 2 KiB per row at 32 rows of x, too), for the panel of x is built once per tile:
    # with 64 KiB, 28 rows of 4096 Q4_K values, building it took 6 % of a product with 512 rows of
    # x; with 256 KiB, 64 x 512 rows of x: Q4_K 7 %, Q6_K 12-14 % faster; with 512 KiB and 128 rows
    # (Zen 4, one thread, 2048 x 4096, 512 rows of x) Q4_K 184 -> 172 ms, Q6_K 170 -> 152.
    _MM_SPAN_W_TILE = 512 * 1024


cdef inline Py_ssize_t _tile_rows(Py_ssize_t budget, Py_ssize_t row_bytes, Py_ssize_t multiple) noexcept nogil:
    cdef Py_ssize_t rows = budget // row_bytes if row_bytes > 0 else budget
    rows = rows // multiple * multiple
    return rows if rows >= multiple else multiple


# Beside the table (set with the dot column): the batch kernel of a K kind or (VNNI) a per-32 type, taken from
# _gemm_min_rows(type_id) rows of x (lanes are rows of x; weight rows unpacked once per task), or NULL.
cdef fgg_mm_gemm_fn INT_BATCH[FGG_TYPE_LIMIT]
# Also beside it: a kernel of two weight rows at a time (the next row right after the first) for up
# to _ROWS2_MAX_X rows of x, or NULL. The two rows share x's loads and its part of the lanes, and
# their float steps are two chains; the next pair of rows is prefetched at the pair's pace (each row
# prefetching 4 KiB ahead of itself read memory slower than one row at a time: 33-37 GB/s against
# 40, 2 threads). One thread, 8192 x 4096, one row of x, ms. avx512 build (fgg_mm_rown_b512,
# VNNI): Q4_0 0.86 -> 0.70, Q4_1 0.98 -> 0.87, MXFP4 0.85 -> 0.72, 2-4 rows (maddubs) 4-11 % less;
# Q5_0 and Q5_1 (fifth bits by mask registers) the same or slower, so not there. avx2 build
# (fgg_mm_rown2_b_avx2): Q4_0 1.10 -> 0.91, Q4_1 1.30 -> 1.11, MXFP4 1.20 -> 0.90, Q5_0 1.58 ->
# 1.37, Q5_1 1.80 -> 1.53; 2 rows 1.11-1.21x, 4 rows 1.03-1.07x.
cdef fgg_dot_fn INT_ROWS2[FGG_TYPE_LIMIT]
cdef enum:
    _ROWS2_MAX_X = 4


cdef inline void _set_batch(int type_id, fgg_mm_gemm_fn vnni_kernel, fgg_mm_gemm_fn kernel, bint vnni) noexcept:
    """A type's INT_BATCH entry: its VNNI kernel, else its build's own (maddubs in the SIMD builds; in
    the portable SSE2 build the K kinds' and the per-32 types' but Q2_0's and NVFP4's on x
    widened once, fgg_mm_gemm_k_sse and fgg_mm_gemm_b_sse), or none."""
    cdef fgg_mm_gemm_fn chosen = vnni_kernel if vnni else kernel
    INT_BATCH[type_id] = chosen if chosen != fgg_mm_gemm_never else NULL


cdef void _set_int_dots(fgg_kernel_row *rows, bint vnni) noexcept:
    # the per-32 types' row kernels: vpdpbusd on VNNI CPUs, else maddubs (the same lanes)
    rows[FGG_TYPE_Q8_0].dot = <fgg_dot_fn>(fgg_mm_rows_q8_0_vnni if vnni else fgg_mm_rows_q8_0)
    rows[FGG_TYPE_Q4_0].dot = <fgg_dot_fn>(fgg_mm_rows_q4_0_vnni if vnni else fgg_mm_rows_q4_0)
    rows[FGG_TYPE_Q5_0].dot = <fgg_dot_fn>(fgg_mm_rows_q5_0_vnni if vnni else fgg_mm_rows_q5_0)
    rows[FGG_TYPE_Q4_1].dot = <fgg_dot_fn>(fgg_mm_rows_q4_1_vnni if vnni else fgg_mm_rows_q4_1)
    rows[FGG_TYPE_Q5_1].dot = <fgg_dot_fn>(fgg_mm_rows_q5_1_vnni if vnni else fgg_mm_rows_q5_1)
    rows[FGG_TYPE_IQ4_NL].dot = <fgg_dot_fn>(fgg_mm_rows_iq4_nl_vnni if vnni else fgg_mm_rows_iq4_nl)
    rows[FGG_TYPE_MXFP4].dot = <fgg_dot_fn>(fgg_mm_rows_mxfp4_vnni if vnni else fgg_mm_rows_mxfp4)
    # Q1_0, Q2_0, NVFP4, IQ4_XS, TQ1_0 and the grid types have no VNNI row kernels: their maddubs
    # kernels serve both (the K kinds' batch kernels are INT_BATCH)
    rows[FGG_TYPE_IQ4_XS].dot = <fgg_dot_fn>fgg_mm_rows_iq4_xs
    rows[FGG_TYPE_NVFP4].dot = <fgg_dot_fn>fgg_mm_rows_nvfp4
    rows[FGG_TYPE_Q1_0].dot = <fgg_dot_fn>fgg_mm_rows_q1_0
    rows[FGG_TYPE_Q2_0].dot = <fgg_dot_fn>fgg_mm_rows_q2_0
    rows[FGG_TYPE_IQ2_XXS].dot = <fgg_dot_fn>fgg_mm_rows_iq2_xxs
    rows[FGG_TYPE_IQ3_XXS].dot = <fgg_dot_fn>fgg_mm_rows_iq3_xxs
    rows[FGG_TYPE_IQ3_S].dot = <fgg_dot_fn>fgg_mm_rows_iq3_s
    rows[FGG_TYPE_IQ2_XS].dot = <fgg_dot_fn>fgg_mm_rows_iq2_xs
    rows[FGG_TYPE_IQ2_S].dot = <fgg_dot_fn>fgg_mm_rows_iq2_s
    rows[FGG_TYPE_IQ1_S].dot = <fgg_dot_fn>fgg_mm_rows_iq1_s
    rows[FGG_TYPE_IQ1_M].dot = <fgg_dot_fn>fgg_mm_rows_iq1_m
    rows[FGG_TYPE_TQ2_0].dot = <fgg_dot_fn>fgg_mm_rows_tq2_0
    rows[FGG_TYPE_TQ1_0].dot = <fgg_dot_fn>fgg_mm_rows_tq1_0
    cdef int t
    for t in range(FGG_TYPE_LIMIT):
        INT_BATCH[t] = NULL
        INT_ROWS2[t] = NULL
    if FGG_MM_HAVE_ROWS2 and FGG_MM_HAVE_PAIRS and _wide_on:
        # the avx512 build's 512-bit kernels, where the CPU runs 512-bit operations whole
        INT_ROWS2[FGG_TYPE_Q4_0] = <fgg_dot_fn>(fgg_mm_rows2_q4_0_vnni if vnni else fgg_mm_rows2_q4_0)
        INT_ROWS2[FGG_TYPE_Q4_1] = <fgg_dot_fn>(fgg_mm_rows2_q4_1_vnni if vnni else fgg_mm_rows2_q4_1)
        INT_ROWS2[FGG_TYPE_MXFP4] = <fgg_dot_fn>(fgg_mm_rows2_mxfp4_vnni if vnni else fgg_mm_rows2_mxfp4)
    elif FGG_MM_HAVE_ROWS2:
        # the 256-bit kernels: the avx2 build's own, and the avx512 build's copies of them
        INT_ROWS2[FGG_TYPE_Q4_0] = <fgg_dot_fn>(fgg_mm_rows2_q4_0_256_vnni if vnni else fgg_mm_rows2_q4_0_256)
        INT_ROWS2[FGG_TYPE_Q4_1] = <fgg_dot_fn>(fgg_mm_rows2_q4_1_256_vnni if vnni else fgg_mm_rows2_q4_1_256)
        INT_ROWS2[FGG_TYPE_MXFP4] = <fgg_dot_fn>(fgg_mm_rows2_mxfp4_256_vnni if vnni else fgg_mm_rows2_mxfp4_256)
        INT_ROWS2[FGG_TYPE_Q5_0] = <fgg_dot_fn>(fgg_mm_rows2_q5_0_256_vnni if vnni else fgg_mm_rows2_q5_0_256)
        INT_ROWS2[FGG_TYPE_Q5_1] = <fgg_dot_fn>(fgg_mm_rows2_q5_1_256_vnni if vnni else fgg_mm_rows2_q5_1_256)
        if vnni:  # IQ4_NL by vpdpbusd only (its unsigned values would saturate maddubs' pair sums)
            INT_ROWS2[FGG_TYPE_IQ4_NL] = <fgg_dot_fn>fgg_mm_rows2_iq4_nl_256_vnni
    _set_batch(FGG_TYPE_Q2_K, fgg_mm_gemm_q2_k_vnni, fgg_mm_gemm_q2_k, vnni)
    _set_batch(FGG_TYPE_Q3_K, fgg_mm_gemm_q3_k_vnni, fgg_mm_gemm_q3_k, vnni)
    _set_batch(FGG_TYPE_Q4_K, fgg_mm_gemm_q4_k_vnni, fgg_mm_gemm_q4_k, vnni)
    _set_batch(FGG_TYPE_Q5_K, fgg_mm_gemm_q5_k_vnni, fgg_mm_gemm_q5_k, vnni)
    _set_batch(FGG_TYPE_Q6_K, fgg_mm_gemm_q6_k_vnni, fgg_mm_gemm_q6_k, vnni)
    _set_batch(FGG_TYPE_TQ2_0, fgg_mm_gemm_tq2_0_vnni, fgg_mm_gemm_tq2_0, vnni)
    _set_batch(FGG_TYPE_TQ1_0, fgg_mm_gemm_tq1_0_vnni, fgg_mm_gemm_tq1_0, vnni)
    _set_batch(FGG_TYPE_IQ4_XS, fgg_mm_gemm_iq4_xs_vnni, fgg_mm_gemm_iq4_xs, vnni)
    _set_batch(FGG_TYPE_IQ2_XXS, fgg_mm_gemm_iq2_xxs_vnni, fgg_mm_gemm_iq2_xxs, vnni)
    _set_batch(FGG_TYPE_IQ2_XS, fgg_mm_gemm_iq2_xs_vnni, fgg_mm_gemm_iq2_xs, vnni)
    _set_batch(FGG_TYPE_IQ2_S, fgg_mm_gemm_iq2_s_vnni, fgg_mm_gemm_iq2_s, vnni)
    _set_batch(FGG_TYPE_IQ3_XXS, fgg_mm_gemm_iq3_xxs_vnni, fgg_mm_gemm_iq3_xxs, vnni)
    _set_batch(FGG_TYPE_IQ3_S, fgg_mm_gemm_iq3_s_vnni, fgg_mm_gemm_iq3_s, vnni)
    _set_batch(FGG_TYPE_IQ1_S, fgg_mm_gemm_iq1_s_vnni, fgg_mm_gemm_iq1_s, vnni)
    _set_batch(FGG_TYPE_IQ1_M, fgg_mm_gemm_iq1_m_vnni, fgg_mm_gemm_iq1_m, vnni)
    # the per-32 types: VNNI and maddubs batch kernels (Q1_0, Q2_0 and NVFP4 have none; Q1_0 the
    # portable SSE2 build's)
    _set_batch(FGG_TYPE_Q8_0, fgg_mm_gemm_q8_0_vnni, fgg_mm_gemm_q8_0, vnni)
    _set_batch(FGG_TYPE_Q4_0, fgg_mm_gemm_q4_0_vnni, fgg_mm_gemm_q4_0, vnni)
    _set_batch(FGG_TYPE_Q5_0, fgg_mm_gemm_q5_0_vnni, fgg_mm_gemm_q5_0, vnni)
    _set_batch(FGG_TYPE_Q4_1, fgg_mm_gemm_q4_1_vnni, fgg_mm_gemm_q4_1, vnni)
    _set_batch(FGG_TYPE_Q5_1, fgg_mm_gemm_q5_1_vnni, fgg_mm_gemm_q5_1, vnni)
    _set_batch(FGG_TYPE_IQ4_NL, fgg_mm_gemm_iq4_nl_vnni, fgg_mm_gemm_iq4_nl, vnni)
    _set_batch(FGG_TYPE_MXFP4, fgg_mm_gemm_mxfp4_vnni, fgg_mm_gemm_mxfp4, vnni)
    _set_batch(FGG_TYPE_Q1_0, fgg_mm_gemm_never, fgg_mm_gemm_q1_0, vnni)  # the portable SSE2 build's only
    # the K-quants' row kernels are maddubs on VNNI CPUs too: at 1 to 5 rows of x (from 6 the
    # batch kernel) their VNNI twins were 0-16 % slower (Q4_K, Q5_K, Q6_K, 4096 x 4096, one thread);
    # the avx512 build's 512-bit ones where the CPU runs them whole, else 256-bit ones
    rows[FGG_TYPE_Q4_K].dot = <fgg_dot_fn>(fgg_mm_rows_q4_k if _wide_on else fgg_mm_rows_q4_k_256)
    rows[FGG_TYPE_Q2_K].dot = <fgg_dot_fn>(fgg_mm_rows_q2_k if _wide_on else fgg_mm_rows_q2_k_256)
    rows[FGG_TYPE_Q3_K].dot = <fgg_dot_fn>(fgg_mm_rows_q3_k if _wide_on else fgg_mm_rows_q3_k_256)
    rows[FGG_TYPE_Q5_K].dot = <fgg_dot_fn>(fgg_mm_rows_q5_k if _wide_on else fgg_mm_rows_q5_k_256)
    rows[FGG_TYPE_Q6_K].dot = <fgg_dot_fn>(fgg_mm_rows_q6_k if _wide_on else fgg_mm_rows_q6_k_256)


cdef bint _vnni_on = False
# Whether the avx512 build's 512-bit one-row kernels run (those that hold two weight rows in one
# vector, and the K-quants' integer row kernels): where the CPU executes 512-bit operations whole
# (fgg_cpu_avx512_full_width), unless FASTGGUF_AVX512_FULL_WIDTH says otherwise ("0" or "1").
cdef bint _wide_on = True


cdef bint _env_flag(const char *name, bint unset) noexcept:
    """The environment variable ``name`` as a switch: ``unset`` when it is missing or empty, off
    for ``0``, on for anything else."""
    cdef const char *value = getenv(name)
    if value == NULL or value[0] == 0:
        return unset
    return not (value[0] == c'0' and value[1] == 0)


cdef void dot_rows(fgg_kernel_row *rows) noexcept:
    """The table's ``dot`` column: the integer kernels of dot.h (x as fgg_mm_q8 blocks).

    The AVX-512 VNNI ones where this build has them and the CPU can run them, unless the
    environment variable ``FASTGGUF_NO_VNNI`` is set (non-empty, not ``0``); else maddubs (AVX2,
    AVX-512 builds) or plain C. Where the CPU splits 512-bit operations (not _wide_on), the avx512
    build's two-row kernels are the avx2 build's and its K-quant row kernels take 256-bit lanes.
    All give the same bits.
    """
    global _vnni_on, _wide_on
    _wide_on = _env_flag(b"FASTGGUF_AVX512_FULL_WIDTH", fgg_cpu_avx512_full_width() != 0)
    _vnni_on = fgg_mm_vnni_usable() != 0 and not _env_flag(b"FASTGGUF_NO_VNNI", False)
    _set_int_dots(rows, _vnni_on)
    fgg_mm_init_tables()


def int_dot_isa():
    """The instructions of this build's integer dot products: ``"vnni"``, ``"maddubs"`` or ``"c"``."""
    _row(FGG_TYPE_Q8_0)  # the table (and the choice) is made on first use
    if _vnni_on:
        return "vnni"
    return "maddubs" if FGG_MM_INT_SIMD_BUILD else "c"


def _set_vnni(bint on):
    """Use the VNNI integer kernels (``on`` and :func:`vnni_usable`) or not; returns the previous
    state. A switch for tests and benchmarks: not while a matmul of this build runs in another thread."""
    global _vnni_on
    _row(FGG_TYPE_Q8_0)
    cdef bint before = _vnni_on
    _vnni_on = on and fgg_mm_vnni_usable() != 0
    _set_int_dots(KERNELS, _vnni_on)
    return before


def _set_wide(bint on):
    """Use the avx512 build's 512-bit one-row kernels (``on``: two weight rows per vector, the
    K-quants' integer row kernels) or the 256-bit ones (the same bits); returns the previous state.
    A switch for tests and benchmarks: not while a matmul of this build runs in another thread."""
    global _wide_on
    _row(FGG_TYPE_Q8_0)
    cdef bint before = _wide_on
    _wide_on = on
    _set_int_dots(KERNELS, _vnni_on)
    return before


def avx512_full_width():
    """Whether the CPU runs 512-bit vector operations whole (fgg_cpu_avx512_full_width: not AMD
    Zen 4), whatever FASTGGUF_AVX512_FULL_WIDTH says."""
    return fgg_cpu_avx512_full_width() != 0


def one_row_kernels(int type_id):
    """(exact, integer): the kernels one row of x takes here for ``type_id``. exact: ``"pairs"``
    (two weight rows per 512-bit vector), ``"q8_0"`` (Q8_0's own) or ``""`` (the register kernels,
    or the plain path); integer, where the build chooses a width: ``"512"`` or ``"256"`` (the per-32
    types' two-weight-row kernels, the avx2 build's counted as ``"256"``; the avx512 build's
    Q2_K-Q6_K row kernels), else ``""``."""
    if _row(type_id) == NULL:
        raise ValueError(f"unknown ggml tensor type id {type_id}")
    cdef _span1_fn span1 = _span1_for(type_id)
    exact = "" if span1 == NULL else "q8_0" if type_id == FGG_TYPE_Q8_0 else "pairs"
    # the kernel whose width the build chooses: the per-32 types' two-row one, or (the avx512
    # build) the K-quants' row kernel
    cdef fgg_dot_fn chosen = INT_ROWS2[type_id]
    if FGG_MM_HAVE_PAIRS and FGG_TYPE_Q2_K <= type_id <= FGG_TYPE_Q6_K:
        chosen = _row(type_id).dot
    if chosen == NULL:
        return exact, ""
    cdef bint narrow = (
        chosen == <fgg_dot_fn>fgg_mm_rows2_q4_0_256 or chosen == <fgg_dot_fn>fgg_mm_rows2_q4_1_256
        or chosen == <fgg_dot_fn>fgg_mm_rows2_mxfp4_256 or chosen == <fgg_dot_fn>fgg_mm_rows2_q5_0_256
        or chosen == <fgg_dot_fn>fgg_mm_rows2_q5_1_256 or chosen == <fgg_dot_fn>fgg_mm_rows2_q4_0_256_vnni
        or chosen == <fgg_dot_fn>fgg_mm_rows2_q4_1_256_vnni or chosen == <fgg_dot_fn>fgg_mm_rows2_mxfp4_256_vnni
        or chosen == <fgg_dot_fn>fgg_mm_rows2_q5_0_256_vnni or chosen == <fgg_dot_fn>fgg_mm_rows2_q5_1_256_vnni
        or chosen == <fgg_dot_fn>fgg_mm_rows2_iq4_nl_256_vnni
        or chosen == <fgg_dot_fn>fgg_mm_rows_q2_k_256
        or chosen == <fgg_dot_fn>fgg_mm_rows_q3_k_256 or chosen == <fgg_dot_fn>fgg_mm_rows_q4_k_256
        or chosen == <fgg_dot_fn>fgg_mm_rows_q5_k_256 or chosen == <fgg_dot_fn>fgg_mm_rows_q6_k_256)
    return exact, "256" if narrow else "512"


def vnni_usable():
    """Whether this build has the AVX-512 VNNI integer kernels and this CPU can run them."""
    return fgg_mm_vnni_usable() != 0


def int_batch_kernel(int type_id, Py_ssize_t m):
    """The integer kernel :func:`matmul_rows_int` takes for ``m`` rows of x: ``"vnni-batch"`` or
    ``"maddubs-batch"`` (lanes are rows of x: the K kinds from 6 rows on VNNI, 9 on maddubs, some IQ
    types from 7 or 8 on VNNI, from 7 to 24 on maddubs (_k_batch_min_rows); the
    per-32 types from 13 on VNNI, on maddubs from 5 to 32 by type), ``"vnni-few"`` (the per-32
    types at 2 to 12 rows, VNNI only: two rows of x per vector; where the CPU splits 512-bit
    operations, Q4_0, Q5_0, MXFP4 and IQ4_NL from 4 rows, Q4_1, Q5_1 and Q8_0 from 5),
    ``"sse2-wide-x"`` (the portable SSE2 build's K kinds and per-32 types but Q2_0 and NVFP4
    at any row count: x widened to int16 once, :func:`sse2_int_kernels`) or ``"rows"`` (one or two
    weight rows at a time)."""
    if _row(type_id) == NULL or _gemm_k(type_id) == NULL or m < _gemm_min_rows(type_id):
        return "rows"
    if fgg_mm_batch_few(_x_layout(type_id), m):
        return "vnni-few"
    if FGG_MM_SSE2_K_BUILD:
        return "sse2-wide-x"
    return "vnni-batch" if _vnni_on else "maddubs-batch"


def sse2_int_kernels():
    """Whether this is the portable build with SSE2 integer kernels for the K kinds (the K-quants,
    the 256-value IQ types, TQ1_0, TQ2_0) and the per-32 types but Q2_0 and NVFP4 (x widened
    to int16 once per product, weight rows one at a time): x86-64, not a FASTGGUF_NO_SIMD build."""
    return bool(FGG_MM_SSE2_K_BUILD)


def has_int_dot(int type_id):
    """Whether ``type_id`` has an integer (Q8-quantized x) dot product in this build (its ``dot``)."""
    return bool(has_dot(type_id))


def q8_block_bytes():
    """Bytes per 32 quantized values of x in the integer path of the per-32 types, Q1_0 to NVFP4 (fgg_mm_q8:
    float d, float s = d * sum(q), 32 int8 q)."""
    return MM_Q8_BYTES


cdef inline bint _x_by_256(int type_id) noexcept nogil:
    """Whether the integer dot of ``type_id`` takes x by super-blocks of 256 (fgg_mm_q8k): the
    types with 256-value blocks (the K-quants and IQ types); the per-32 ones take fgg_mm_q8."""
    return 0 <= type_id < FGG_TYPE_LIMIT and fgg_block_size[type_id] == 256


cdef inline int _x_layout(int type_id) noexcept nogil:
    """How the batch kernel of ``type_id`` takes x (fgg_mm_batch_x_fill): the K kinds by
    super-blocks; the per-32 types' VNNI kernels with a few rows as pairs (their few-rows kernel);
    their maddubs kernel in groups of 8 rows at any count, as x + 128 for Q4_0, Q5_0 and MXFP4
    (fgg_mm_b8_mode); the portable SSE2 build's kernels each row alone, widened to int16."""
    if _x_by_256(type_id):
        return FGG_MM_X_K16 if FGG_MM_SSE2_K_BUILD else FGG_MM_X_K
    if FGG_MM_SSE2_K_BUILD:
        return FGG_MM_X_B16
    if _vnni_on:
        return FGG_MM_X_B32
    if type_id == FGG_TYPE_Q4_0 or type_id == FGG_TYPE_Q5_0 or type_id == FGG_TYPE_MXFP4:
        return FGG_MM_X_B8_PLUS128
    return FGG_MM_X_B8


def int_x_layout(int type_id):
    """``(values, bytes)`` per block of quantized x that the integer dot of ``type_id`` takes:
    ``(256, sizeof fgg_mm_q8k)`` for the K-quants (:func:`quantize_x8k`), else
    ``(32, q8_block_bytes())`` (:func:`quantize_x8`)."""
    if _x_by_256(type_id):
        return 256, MM_Q8K_BYTES
    return 32, MM_Q8_BYTES


cdef int _mm_float(fgg_dequantize_fn kernel, fgg_byteswap_fn swap, int type_id, const uint8_t *w, Py_ssize_t row_bytes,
                   Py_ssize_t k, Py_ssize_t block_size, Py_ssize_t type_size,
                   const float *x, Py_ssize_t m, Py_ssize_t x_stride,
                   float *out, Py_ssize_t out_stride, Py_ssize_t n0, Py_ssize_t n1,
                   float *scratch, uint8_t *swapped, float *acc, int round_to) noexcept nogil:
    cdef fgg_guard guard
    cdef Py_ssize_t n, off, length, i, chunk_blocks = _MM_CHUNK // block_size
    cdef const uint8_t *blocks
    if chunk_blocks < 1:
        chunk_blocks = 1
    if swap != NULL and chunk_blocks * type_size > _SWAP_SCRATCH_BYTES:
        chunk_blocks = _SWAP_SCRATCH_BYTES // type_size
    if fgg_guard_enter(&guard):
        return -2
    for n in range(n0, n1):
        for i in range(m * FGG_MM_LANES):
            acc[i] = 0.0
        off = 0
        while off < k:
            length = min(chunk_blocks * block_size, k - off)
            blocks = w + n * row_bytes + off // block_size * type_size
            if swap != NULL:
                swap(blocks, swapped, length // block_size, type_id)
                blocks = swapped
            kernel(blocks, scratch, length // block_size)
            _round_values(scratch, length, round_to)
            i = 0
            while i + 4 <= m:
                fgg_mm_dot_acc4(scratch, x + i * x_stride + off, x_stride, length, acc + i * FGG_MM_LANES)
                i += 4
            while i < m:
                fgg_mm_dot_acc(scratch, x + i * x_stride + off, length, acc + i * FGG_MM_LANES)
                i += 1
            off += length
        for i in range(m):
            out[i * out_stride + n] = fgg_mm_lanes_sum(acc + i * FGG_MM_LANES)
    fgg_guard_leave(&guard)
    return 0


cdef struct _JobHead:
    # The first fields of every job (_MMFloatJob, _MMExactJob, _MMIntJob), in this order, so that
    # matmul_rows_grouped reads any job's task count and status through one cast.
    int n_tasks
    int status


cdef struct _MMFloatJob:
    int n_tasks
    int status
    fgg_dequantize_fn kernel
    fgg_byteswap_fn swap
    int type_id
    const uint8_t *w
    Py_ssize_t row_bytes, k, block_size, type_size
    const float *x
    Py_ssize_t m, x_stride
    float *out
    Py_ssize_t out_stride, n0, n1, wt, xt
    int round_to


cdef void _fill_float_job(_MMFloatJob *job, fgg_dequantize_fn kernel, fgg_byteswap_fn swap, int type_id,
                          const uint8_t *w, Py_ssize_t row_bytes, Py_ssize_t k, const float *x, Py_ssize_t x_stride,
                          Py_ssize_t m, float *out, Py_ssize_t out_stride, Py_ssize_t n0, Py_ssize_t n1, int round_to,
                          int threads) noexcept nogil:
    job.kernel = kernel
    job.swap = swap
    job.type_id = type_id
    job.w = w
    job.row_bytes = row_bytes
    job.k = k
    job.block_size = fgg_block_size[type_id]
    job.type_size = fgg_type_size[type_id]
    job.x = x
    job.m = m
    job.x_stride = x_stride
    job.out = out
    job.out_stride = out_stride
    job.n0 = n0
    job.n1 = n1
    job.wt = _tile_rows(_MM_W_TILE, row_bytes, 1)
    job.xt = _tile_rows(_MM_X_TILE, k * sizeof(float), 8)
    job.round_to = round_to
    job.n_tasks = _row_tasks(n1 - n0, job.wt, threads)
    job.status = 0


cdef inline void _task_rows(Py_ssize_t n0, Py_ssize_t n1, int task, int n_tasks, Py_ssize_t *a, Py_ssize_t *b) noexcept nogil:
    _task_span(n1 - n0, 1, task, n_tasks, a, b)
    a[0] += n0
    b[0] += n0


cdef int _row_tasks(Py_ssize_t n_rows, Py_ssize_t tile_rows, int threads) noexcept nogil:
    """Tasks for ``n_rows`` weight rows on ``threads`` threads: a few long ones (_split_tasks: up to
    _TASKS_PER_THREAD per thread, each at least a tile of rows), at least one per thread while
    there are rows."""
    cdef int tasks = _split_tasks(n_rows, tile_rows, threads)
    if tasks < threads and tasks < n_rows:
        tasks = <int>min(<Py_ssize_t>threads, n_rows)
    return tasks


cdef void _mm_float_task(void *ctx, int task) noexcept nogil:
    cdef _MMFloatJob *job = <_MMFloatJob *>ctx
    cdef Py_ssize_t a, a1, b, b1, n0, n1
    cdef int status = 0
    _task_rows(job.n0, job.n1, task, job.n_tasks, &n0, &n1)
    if n0 == n1:
        return
    cdef float *scratch = <float *>malloc(_MM_CHUNK * sizeof(float) + 64)
    cdef float *acc = <float *>malloc(min(job.m, job.xt) * FGG_MM_LANES * sizeof(float) + 64)
    cdef uint8_t *swapped = <uint8_t *>malloc(_SWAP_SCRATCH_BYTES) if job.swap != NULL else NULL
    if scratch == NULL or acc == NULL or (job.swap != NULL and swapped == NULL):
        status = -3
    a = n0
    while a < n1 and status == 0:
        a1 = min(a + job.wt, n1)
        b = 0
        while b < job.m and status == 0:
            b1 = min(b + job.xt, job.m)
            status = _mm_float(job.kernel, job.swap, job.type_id, job.w, job.row_bytes, job.k, job.block_size,
                               job.type_size, job.x + b * job.x_stride, b1 - b, job.x_stride,
                               job.out + b * job.out_stride, job.out_stride, a, a1, scratch, swapped, acc,
                               job.round_to)
            b = b1
        a = a1
    free(scratch)
    free(acc)
    free(swapped)
    if status != 0:
        job.status = status


ctypedef void (*_span_fn)(const uint8_t *w, Py_ssize_t row_bytes, int nw, Py_ssize_t b0, Py_ssize_t b1,
                          const float *x, Py_ssize_t xs, const float *xsum, Py_ssize_t xss, int m, int pairs,
                          float *qf, float *acc, Py_ssize_t acc_stride) noexcept nogil


cdef _span_fn _exact_by_sub_block(int type_id) noexcept nogil:
    """The float path factored by sub-block (dot.h) for the types that have it: its kernel over a
    span of a row's blocks, adding into carried lanes; else NULL."""
    if type_id == FGG_TYPE_Q2_K:
        return <_span_fn>fgg_mm_span_q2_k
    if type_id == FGG_TYPE_Q3_K:
        return <_span_fn>fgg_mm_span_q3_k
    if type_id == FGG_TYPE_Q4_K:
        return <_span_fn>fgg_mm_span_q4_k
    if type_id == FGG_TYPE_Q5_K:
        return <_span_fn>fgg_mm_span_q5_k
    if type_id == FGG_TYPE_Q6_K:
        return <_span_fn>fgg_mm_span_q6_k
    if type_id == FGG_TYPE_Q8_0:
        return <_span_fn>fgg_mm_span_q8_0
    if type_id == FGG_TYPE_Q4_0:
        return <_span_fn>fgg_mm_span_q4_0
    if type_id == FGG_TYPE_IQ4_XS:
        return <_span_fn>fgg_mm_span_iq4_xs
    if type_id == FGG_TYPE_Q5_0:
        return <_span_fn>fgg_mm_span_q5_0
    if type_id == FGG_TYPE_Q4_1:
        return <_span_fn>fgg_mm_span_q4_1
    if type_id == FGG_TYPE_Q5_1:
        return <_span_fn>fgg_mm_span_q5_1
    if type_id == FGG_TYPE_IQ4_NL:
        return <_span_fn>fgg_mm_span_iq4_nl
    if type_id == FGG_TYPE_MXFP4:
        return <_span_fn>fgg_mm_span_mxfp4
    if type_id == FGG_TYPE_Q1_0:
        return <_span_fn>fgg_mm_span_q1_0
    if type_id == FGG_TYPE_IQ2_S:
        return <_span_fn>fgg_mm_span_iq2_s
    if type_id == FGG_TYPE_IQ3_XXS:
        return <_span_fn>fgg_mm_span_iq3_xxs
    if type_id == FGG_TYPE_IQ3_S:
        return <_span_fn>fgg_mm_span_iq3_s
    if type_id == FGG_TYPE_IQ2_XXS:
        return <_span_fn>fgg_mm_span_iq2_xxs
    if type_id == FGG_TYPE_IQ2_XS:
        return <_span_fn>fgg_mm_span_iq2_xs
    if type_id == FGG_TYPE_IQ1_S:
        return <_span_fn>fgg_mm_span_iq1_s
    if type_id == FGG_TYPE_IQ1_M:
        return <_span_fn>fgg_mm_span_iq1_m
    if type_id == FGG_TYPE_TQ2_0:
        return <_span_fn>fgg_mm_span_tq2_0
    if type_id == FGG_TYPE_TQ1_0:
        return <_span_fn>fgg_mm_span_tq1_0
    return NULL


ctypedef void (*_span1_fn)(const uint8_t *w, Py_ssize_t row_bytes, int nw, Py_ssize_t b0, Py_ssize_t b1,
                           const float *x, const float *xsum, float *acc, Py_ssize_t acc_stride) noexcept nogil


cdef _span1_fn _span1_for(int type_id) noexcept nogil:
    """The kernel of one row of x against up to 4 weight rows at a time, where this build has
    one for ``type_id`` (Q8_0; Q4_K, Q5_K, Q6_K and the other per-32 types in the avx512 build),
    else NULL.

    The avx512 build's kernels hold two weight rows in a 512-bit vector. On a CPU that splits
    512-bit operations in halves (not _wide_on: Zen 4) a 512-bit operation costs two 256-bit ones,
    and the register kernels' 256-bit vectors measured faster for Q4_K, Q5_K and Q6_K (Zen 4, one
    row of x from memory, 2 threads, GB/s of blocks, pairs -> register kernels: 12.9 -> 15.8, 13.6
    -> 14.6, 14.5 -> 19.3; bench_matmul.py --width). The per-32 types keep the pairs there: IQ4_NL
    and MXFP4, whose codes a 16-float vpermps table turns into values, 13.9 against 11.3 and 13.1
    against 10.8 (avx2 build), Q4_0 12.1 against 11.2, Q4_1 and Q5_0 level. Above 8 rows of x the
    pairs of rows of x (_exact_pairs) stay on every CPU: on Zen 4 too they measured faster (Q4_K,
    64 rows, one thread: 21.7 against 25.0 ms)."""
    if FGG_MM_HAVE_SPAN1 and type_id == FGG_TYPE_Q8_0:
        return <_span1_fn>fgg_mm_span1_q8_0
    if not FGG_MM_HAVE_SPAN1_PAIRS:
        return NULL
    if not _wide_on and (type_id == FGG_TYPE_Q4_K or type_id == FGG_TYPE_Q5_K or type_id == FGG_TYPE_Q6_K):
        return NULL
    if type_id == FGG_TYPE_Q4_K:
        return <_span1_fn>fgg_mm_span1_q4_k
    if type_id == FGG_TYPE_Q5_K:
        return <_span1_fn>fgg_mm_span1_q5_k
    if type_id == FGG_TYPE_Q6_K:
        return <_span1_fn>fgg_mm_span1_q6_k
    if type_id == FGG_TYPE_Q4_0:
        return <_span1_fn>fgg_mm_span1_q4_0
    if type_id == FGG_TYPE_Q4_1:
        return <_span1_fn>fgg_mm_span1_q4_1
    if type_id == FGG_TYPE_Q5_0:
        return <_span1_fn>fgg_mm_span1_q5_0
    if type_id == FGG_TYPE_Q5_1:
        return <_span1_fn>fgg_mm_span1_q5_1
    if type_id == FGG_TYPE_IQ4_NL:
        return <_span1_fn>fgg_mm_span1_iq4_nl
    if type_id == FGG_TYPE_MXFP4:
        return <_span1_fn>fgg_mm_span1_mxfp4
    return NULL


cdef inline int _exact_pairs(Py_ssize_t mt) noexcept nogil:
    """Whether the factored path takes mt rows of x as a panel of pairs (fgg_mm_pair_panel): in
    the avx512 build, above the register kernels' rows."""
    return FGG_MM_HAVE_PAIRS and mt > FGG_MM_REG_ROWS


cdef struct _MMExactJob:
    int n_tasks
    int status
    _span_fn span
    _span1_fn span1  # one row of x against up to 4 weight rows at a time (_span1_for), or NULL
    Py_ssize_t span_blocks
    fgg_byteswap_fn swap
    int type_id
    const uint8_t *w
    Py_ssize_t row_bytes, nb
    const float *x
    Py_ssize_t x_stride, m
    const float *xsum
    Py_ssize_t xsum_stride, xsum_len
    float *out
    Py_ssize_t out_stride, n0, n1, wt, xt


cdef void _mm_exact_rows(_MMExactJob *job, const uint8_t *tile, Py_ssize_t a, Py_ssize_t a1, Py_ssize_t b,
                         Py_ssize_t b1, float *qf, float *acc, float *panel) noexcept nogil:
    """Weight rows a..a1 (their blocks at ``tile``) times x rows b..b1, a span of each row's
    blocks at a time: the span's columns of these x rows stay in L1 for all the weight rows
    (several rows copied together into ``panel``: in place, rows of x a multiple of 4 KiB apart
    fall in the same few L1 sets and evict each other). Each row's lanes are carried in ``acc``
    from span to span, so the sums are those of one pass over the whole row."""
    cdef Py_ssize_t n, i, c, c1, mt = b1 - b, bs = fgg_block_size[job.type_id], ts = fgg_type_size[job.type_id]
    cdef Py_ssize_t lanes = 16 * mt, width, sums, xs, xss
    cdef const float *xp
    cdef const float *xsp
    # the avx512 build's spans take more rows than its register kernels as a panel of pairs
    cdef int pairs = _exact_pairs(mt)
    cdef Py_ssize_t panel_rows = mt + (mt & 1) if pairs else mt
    for n in range(lanes * (a1 - a)):
        acc[n] = 0.0
    c = 0
    while c < job.nb:
        c1 = min(c + job.span_blocks, job.nb)
        width = (c1 - c) * bs
        sums = width // job.xsum_len
        if c1 - c == job.nb and not pairs:  # whole rows of x: read in place
            xp, xs = job.x + b * job.x_stride, job.x_stride
            xsp, xss = NULL, job.xsum_stride
            if job.xsum != NULL:
                xsp = job.xsum + b * job.xsum_stride
        else:
            if pairs:
                fgg_mm_pair_panel(job.x + b * job.x_stride + c * bs, job.x_stride, <int>mt, width, panel)
                xs = 2 * width
            else:
                for i in range(mt):
                    memcpy(panel + i * width, job.x + (b + i) * job.x_stride + c * bs, width * sizeof(float))
                xs = width
            xp, xsp, xss = panel, NULL, sums
            if job.xsum != NULL:
                xsp = panel + panel_rows * width
                for i in range(mt):
                    memcpy(panel + panel_rows * width + i * sums, job.xsum + (b + i) * job.xsum_stride + c * bs // job.xsum_len,
                           sums * sizeof(float))
        if mt == 1 and job.span1 != NULL:
            n = 0
            while n < a1 - a:
                job.span1(tile + n * job.row_bytes + c * ts, job.row_bytes, <int>min(4, a1 - a - n), 0, c1 - c, xp,
                          xsp, acc + n * lanes, lanes)
                n += 4
        else:
            n = 0
            while n < a1 - a:  # FGG_MM_SPAN_NW weight rows at a time (2 with pairs: each load of x meets both)
                job.span(tile + n * job.row_bytes + c * ts, job.row_bytes, <int>min(FGG_MM_SPAN_NW, a1 - a - n), 0,
                         c1 - c, xp, xs, xsp, xss, <int>mt, pairs, qf, acc + n * lanes, lanes)
                n += FGG_MM_SPAN_NW
        c = c1
    if mt == 1:
        fgg_mm_exact_out_w(acc, a1 - a, job.out + b * job.out_stride + a)
        return
    for n in range(a1 - a):
        fgg_mm_exact_out(acc + n * lanes, <int>mt, job.out + b * job.out_stride + a + n, job.out_stride)


cdef void _mm_exact_task(void *ctx, int task) noexcept nogil:
    cdef _MMExactJob *job = <_MMExactJob *>ctx
    cdef fgg_guard guard
    cdef Py_ssize_t a, a1, b, b1, n, n0, n1
    _task_rows(job.n0, job.n1, task, job.n_tasks, &n0, &n1)
    if n0 == n1:
        return
    cdef const uint8_t *tile
    cdef Py_ssize_t xt = min(job.m, job.xt)
    cdef Py_ssize_t acc_floats = 16 * xt * job.wt
    # the rows of x a span at a time (and a row of zeros for an odd count in pairs), then their sums
    cdef Py_ssize_t panel_floats = ((xt + 1) * job.span_blocks * fgg_block_size[job.type_id] * 17 // 16
                                    if job.span_blocks < job.nb or _exact_pairs(xt) else 0)
    # aligned: the panel's rows of x are read with aligned loads (the portable build's kernels)
    cdef float *qf = <float *>fgg_aligned_malloc((FGG_MM_QF_FLOATS + acc_floats + panel_floats) * sizeof(float) + 64)
    cdef uint8_t *swapped = <uint8_t *>malloc(job.row_bytes * job.wt) if job.swap != NULL else NULL
    if qf == NULL or (job.swap != NULL and swapped == NULL):
        fgg_aligned_free(qf)
        free(swapped)
        job.status = -3
        return
    if fgg_guard_enter(&guard):
        job.status = -2
    else:
        a = n0
        while a < n1:
            a1 = min(a + job.wt, n1)
            tile = job.w + a * job.row_bytes
            if swapped != NULL:  # big-endian: the tile's rows put in order first
                for n in range(a, a1):
                    job.swap(job.w + n * job.row_bytes, swapped + (n - a) * job.row_bytes, job.nb, job.type_id)
                tile = swapped
            b = 0
            while b < job.m:
                b1 = min(b + job.xt, job.m)
                _mm_exact_rows(job, tile, a, a1, b, b1, qf, qf + FGG_MM_QF_FLOATS, qf + FGG_MM_QF_FLOATS + acc_floats)
                b = b1
            a = a1
        fgg_guard_leave(&guard)
    fgg_aligned_free(qf)
    free(swapped)


cdef const float *_aligned_x(const float *x, Py_ssize_t m, Py_ssize_t k, float **copy) noexcept nogil:
    """x's m rows of k values (k a multiple of 4) at the boundary the factored path's kernels
    need (FGG_MM_X_ALIGN: 16 bytes for the portable build's aligned loads): x itself, or a copy
    put in ``copy`` (for the caller to free with fgg_aligned_free); NULL when there is no memory
    for one."""
    copy[0] = NULL
    if (<size_t>x) % FGG_MM_X_ALIGN == 0:
        return x
    copy[0] = <float *>fgg_aligned_malloc(m * k * sizeof(float))
    if copy[0] != NULL:
        memcpy(copy[0], x, m * k * sizeof(float))
    return copy[0]


cdef inline int _x_sum_len(int type_id) noexcept nogil:
    """How many values of x each of its sums covers for a factored type with mins (one sum per
    sub-block: Q2_K's 16; Q4_K's, Q5_K's, Q4_1's and Q5_1's 32), else 0: the types without mins
    read none."""
    if type_id == FGG_TYPE_Q2_K:
        return 16
    if (type_id == FGG_TYPE_Q4_K or type_id == FGG_TYPE_Q5_K or type_id == FGG_TYPE_Q4_1
            or type_id == FGG_TYPE_Q5_1):
        return 32
    return 0


cdef float *_x_sums(int type_id, const float *x, Py_ssize_t x_stride, Py_ssize_t m, Py_ssize_t k, bint *failed) noexcept nogil:
    """x's sums per sub-block (_x_sum_len values) for the factored types with mins, else NULL.
    ``failed`` is set when there is no memory for them."""
    cdef int length = _x_sum_len(type_id)
    cdef Py_ssize_t i, xss
    cdef float *xsum
    failed[0] = False
    if length == 0:
        return NULL
    xss = k // length
    xsum = <float *>malloc(max(1, m * xss) * sizeof(float))
    if xsum == NULL:
        failed[0] = True
        return NULL
    for i in range(m):
        fgg_mm_xsum(x + i * x_stride, k, length, xsum + i * xss)
    return xsum


cdef void _fill_exact_job(_MMExactJob *job, fgg_byteswap_fn swap, int type_id, const uint8_t *w,
                          Py_ssize_t row_bytes, Py_ssize_t nb, const float *x, Py_ssize_t x_stride, Py_ssize_t m,
                          const float *xsum, float *out, Py_ssize_t out_stride, Py_ssize_t n0,
                          Py_ssize_t n1, int threads) noexcept nogil:
    """A job of the factored float path: ``type_id`` is one of the types that have it; ``xsum``
    its rows of x's sums (_x_sums), or NULL."""
    job.span = _exact_by_sub_block(type_id)
    job.span1 = _span1_for(type_id)
    job.swap = swap
    job.type_id = type_id
    job.w = w
    job.row_bytes = row_bytes
    job.nb = nb
    job.x = x
    job.x_stride = x_stride
    job.m = m
    job.xsum = xsum
    job.xsum_len = max(1, _x_sum_len(type_id))  # 1 for the types without sums: never read then
    job.xsum_stride = nb * fgg_block_size[type_id] // job.xsum_len
    job.out = out
    job.out_stride = out_stride
    job.n0 = n0
    job.n1 = n1
    # at most FGG_MM_SPAN_W_ROWS weight rows, whose lanes (acc) are carried between spans
    job.wt = min(_tile_rows(_MM_W_TILE, row_bytes, 1), FGG_MM_SPAN_W_ROWS)
    if m == 1 or m <= FGG_MM_REG_ROWS:
        # one row of x, or up to 8 for the register kernels: whole weight rows, x read in place
        # (cut into spans, the weights' short runs per row slowed streaming them from L3 and memory)
        job.xt = m
        job.span_blocks = nb
    else:
        # _MM_SPAN_X_ROWS rows of x at a time, each span _MM_SPAN_BYTES of them (_mm_exact_rows)
        job.xt = min(m, _MM_SPAN_X_ROWS)
        job.wt = min(_tile_rows(_MM_SPAN_W_TILE, row_bytes, 1), FGG_MM_SPAN_W_ROWS)
        job.span_blocks = max(256, _MM_SPAN_BYTES // (job.xt * <Py_ssize_t>sizeof(float)) // 256 * 256) \
                          // fgg_block_size[type_id]
    job.n_tasks = _row_tasks(n1 - n0, job.wt, threads)
    job.status = 0


cdef int _raise_status(int status) except -1:
    if status == -3:
        raise MemoryError("no scratch memory for matmul")
    if status == -2:
        raise GGUFError("the data could not be read: the mapped file shrank while it was being read (SIGBUS)")
    return 0


cdef int _matmul_exact(fgg_byteswap_fn swap, int type_id, const uint8_t[:, ::1] w,
                       const float[:, ::1] x, float[:, :] out, Py_ssize_t n0, Py_ssize_t n1, Py_ssize_t nb,
                       int threads) except -1:
    """matmul_rows by the factored float path: x's sums per 32 first, then the rows on the pool."""
    cdef Py_ssize_t m = x.shape[0], k = x.shape[1]
    cdef bint failed = False
    cdef float *xsum = NULL
    cdef float *x_copy
    cdef const float *xp
    cdef _MMExactJob job
    with nogil:
        xp = _aligned_x(&x[0, 0], m, k, &x_copy)
        if xp != NULL:
            xsum = _x_sums(type_id, xp, k, m, k, &failed)
    if xp == NULL or failed:
        fgg_aligned_free(x_copy)
        raise MemoryError("no scratch memory for matmul")
    _fill_exact_job(&job, swap, type_id, &w[0, 0], w.shape[1], nb, xp, k, m, xsum,
                    &out[0, 0], out.strides[0] // sizeof(float), n0, n1, threads)
    with nogil:
        fgg_pool_run(_mm_exact_task, &job, job.n_tasks, threads)
    free(xsum)
    fgg_aligned_free(x_copy)
    return _raise_status(job.status)


def matmul_rows(const uint8_t[:, ::1] w not None, int type_id, const float[:, ::1] x not None,
                float[:, :] out not None, Py_ssize_t n0, Py_ssize_t n1, bint byteswapped=False, int round_to=0,
                int threads=1):
    """``out[:, n0:n1] = x @ W[n0:n1].T`` by the float path, with the GIL released.

    ``w`` holds N whole rows of blocks of ``x.shape[1]`` elements; ``out`` is (M, N) with unit
    column stride. ``round_to``: 0, or the F16 / BF16 type id: each weight value is first rounded
    to that type (as ``dequantize_rounded_into``). ``threads``: how many threads of the kernels'
    pool share the rows (the bits do not depend on it). Every length is checked here before any
    kernel runs.

    Raises
    ------
    ValueError
        Unknown type, shapes that disagree, a row range outside ``w``, ``threads < 1``.
    NotImplementedError
        No kernel (or byte swapper) for this type.
    MemoryError
        No scratch memory.
    GGUFError
        ``w`` maps a file that was truncated under it (SIGBUS).
    """
    cdef fgg_kernel_row *row = _row(type_id)
    if row == NULL:
        raise ValueError(f"unknown ggml tensor type id {type_id}")
    cdef fgg_dequantize_fn kernel = row.dequantize
    if kernel == NULL:
        raise NotImplementedError(f"no dequantization kernel for ggml type id {type_id}")
    cdef fgg_byteswap_fn swap = NULL
    if byteswapped:
        swap = row.byteswap
        if swap == NULL:
            raise NotImplementedError(f"no big-endian support for ggml type id {type_id}")
    cdef Py_ssize_t block_size = fgg_block_size[type_id], type_size = fgg_type_size[type_id]
    cdef Py_ssize_t m = x.shape[0], k = x.shape[1], n_rows = w.shape[0], i, n
    if round_to != 0 and round_to != FGG_TYPE_F16 and round_to != FGG_TYPE_BF16:
        raise ValueError(f"round_to must be 0 or the F16 or BF16 type id, not {round_to}")
    if threads < 1:
        raise ValueError(f"threads must be at least 1, got {threads}")
    if k % block_size:
        raise ValueError(f"row length {k} is not a multiple of the block size {block_size}")
    if w.shape[1] != k // block_size * type_size:
        raise ValueError(f"weight rows have {w.shape[1]} bytes, {k} elements take {k // block_size * type_size}")
    if out.shape[0] != m or out.shape[1] != n_rows or (n_rows > 1 and out.strides[1] != sizeof(float)):
        raise ValueError("out must be (M, N) float32 with contiguous rows")
    if not 0 <= n0 <= n1 <= n_rows:
        raise ValueError(f"row range {n0}:{n1} is outside the {n_rows} weight rows")
    if m == 0 or n1 == n0:
        return
    if k == 0:
        for i in range(m):
            for n in range(n0, n1):
                out[i, n] = 0.0
        return
    _matmul_float_run(kernel, swap, type_id, w, x, out, n0, n1, round_to, threads)


cdef int _matmul_float_run(fgg_dequantize_fn kernel, fgg_byteswap_fn swap, int type_id, const uint8_t[:, ::1] w,
                           const float[:, ::1] x, float[:, :] out, Py_ssize_t n0, Py_ssize_t n1, int round_to,
                           int threads) except -1:
    """matmul_rows after its checks (rows of x and of w, K, all > 0)."""
    cdef Py_ssize_t k = x.shape[1], block_size = fgg_block_size[type_id]
    if _exact_by_sub_block(type_id) != NULL and round_to == 0:
        return _matmul_exact(swap, type_id, w, x, out, n0, n1, k // block_size, threads)
    cdef _MMFloatJob job
    _fill_float_job(&job, kernel, swap, type_id, &w[0, 0], w.shape[1], k, &x[0, 0], x.strides[0] // sizeof(float),
                    x.shape[0], &out[0, 0], out.strides[0] // sizeof(float), n0, n1, round_to, threads)
    with nogil:
        fgg_pool_run(_mm_float_task, &job, job.n_tasks, threads)
    return _raise_status(job.status)


def quantize_x8(const float[:, ::1] x not None, uint8_t[:, ::1] dst not None):
    """Quantize each row of ``x`` (length a multiple of 32) into Q8 blocks for the integer path.

    ``dst`` has shape ``(M, K // 32 * q8_block_bytes())``.
    """
    cdef Py_ssize_t m = x.shape[0], k = x.shape[1]
    if k % 32:
        raise ValueError(f"row length {k} is not a multiple of 32")
    if dst.shape[0] != m or dst.shape[1] != k // 32 * MM_Q8_BYTES:
        raise ValueError("dst has the wrong shape")
    if m == 0 or k == 0:
        return
    with nogil:
        _quantize_x_rows(False, &x[0, 0], x.strides[0] // sizeof(float), m, k, &dst[0, 0], dst.shape[1])


def quantize_x8k(const float[:, ::1] x not None, uint8_t[:, ::1] dst not None):
    """Quantize each row of ``x`` (length a multiple of 256) into super-blocks for the K-quants'
    integer path: per 256 values one float scale, 256 int8 and 16 int16 sums of 16.

    ``dst`` has shape ``(M, K // 256 * int_x_layout(Q4_K)[1])``.
    """
    cdef Py_ssize_t m = x.shape[0], k = x.shape[1]
    if k % 256:
        raise ValueError(f"row length {k} is not a multiple of 256")
    if dst.shape[0] != m or dst.shape[1] != k // 256 * MM_Q8K_BYTES:
        raise ValueError("dst has the wrong shape")
    if m == 0 or k == 0:
        return
    with nogil:
        _quantize_x_rows(True, &x[0, 0], x.strides[0] // sizeof(float), m, k, &dst[0, 0], dst.shape[1])


cdef void _quantize_x_rows(bint by_256, const float *x, Py_ssize_t xs, Py_ssize_t m, Py_ssize_t k, uint8_t *dst,
                           Py_ssize_t dst_row) noexcept nogil:
    """m rows of k values (row i at x + i * xs) quantized for the integer path, row i at dst + i *
    dst_row: per 256 values (by_256, the K-quants' layout) or per 32."""
    cdef Py_ssize_t i
    for i in range(m):
        if by_256:
            fgg_mm_quantize_x8k(x + i * xs, k, <fgg_mm_q8k *>(dst + i * dst_row))
        else:
            fgg_mm_quantize_x8(x + i * xs, k, <fgg_mm_q8 *>(dst + i * dst_row))


cdef struct _MMIntJob:
    int n_tasks
    int status
    fgg_dot_fn fn
    fgg_dot_fn fn2  # two weight rows at a time (INT_ROWS2), or NULL
    fgg_mm_gemm_fn gemm  # the batch kernel (with xi, tile, panel_bytes), or NULL: fn a weight row at a time
    Py_ssize_t gm  # rows of x the batch kernel takes (the first gm); fn and fn2 take the rest
    const void *xi
    Py_ssize_t tile
    size_t panel_bytes  # a task's panel (tile weight rows)
    const uint8_t *w
    Py_ssize_t row_bytes, nb
    const uint8_t *x
    Py_ssize_t x_row_bytes, xs, m
    float *out
    Py_ssize_t out_stride, n0, n1, wt, xt


cdef void _mm_int_task(void *ctx, int task) noexcept nogil:
    cdef _MMIntJob *job = <_MMIntJob *>ctx
    cdef fgg_guard guard
    cdef Py_ssize_t a, a1, b, b1, n, n0, n1
    _task_rows(job.n0, job.n1, task, job.n_tasks, &n0, &n1)
    if n0 == n1:
        return
    cdef void *panel = NULL
    if job.gemm != NULL and job.panel_bytes:
        panel = fgg_aligned_malloc(job.panel_bytes)
        if panel == NULL:
            job.status = -3
            return
    if fgg_guard_enter(&guard):
        job.status = -2
        fgg_aligned_free(panel)
        return
    cdef Py_ssize_t b0 = 0
    if job.gemm != NULL:
        job.gemm(job.w + n0 * job.row_bytes, job.row_bytes, n1 - n0, job.nb, job.xi, job.gm, job.out + n0,
                 job.out_stride, panel, job.tile)
        b0 = job.gm
    a = n0
    while a < n1 and b0 < job.m:
        a1 = min(a + job.wt, n1)
        b = b0
        while b < job.m:
            b1 = min(b + job.xt, job.m)
            n = a
            if job.fn2 != NULL and b1 - b <= _ROWS2_MAX_X:
                while n + 2 <= a1:
                    job.fn2(job.w + n * job.row_bytes, job.nb, job.x + b * job.x_row_bytes, job.xs, <int>(b1 - b),
                            job.out + b * job.out_stride + n, job.out_stride)
                    n += 2
            while n < a1:
                job.fn(job.w + n * job.row_bytes, job.nb, job.x + b * job.x_row_bytes, job.xs, <int>(b1 - b),
                       job.out + b * job.out_stride + n, job.out_stride)
                n += 1
            b = b1
        a = a1
    fgg_guard_leave(&guard)
    fgg_aligned_free(panel)


# Rows of x from which the K kinds take the batch kernel (lanes = 16 rows of x, or 8 for a short
# group), which costs about the same for 1 to 8 rows. VNNI: from 6 rows, where the row kernels
# start to cost more. maddubs: from 9, since the row kernel's 8-row form (fgg_mm_rows8_k) matches
# it at 8 (Q2_K-Q6_K at 4096 x 14336, one thread). The IQ types by type: from 6 to 8 rows on
# VNNI, 7 to 24 on maddubs (_k_batch_min_rows). The per-32 types (VNNI): from 2
# rows, up to 12 the few-rows kernel (two rows of x per vector, fgg_mm_batch_few), then the batch
# kernel (16 lanes), which costs the same from 9 to 16 rows. Against the row kernels and batch
# kernel before it (one thread, 4096 x 14336, Q8_0, Q4_0, Q5_0, Q4_1, Q5_1, IQ4_NL, MXFP4), the
# few-rows kernel took 0.51-0.74 of the time at 2 rows, 0.45-0.66 at 8, 0.68-0.82 at 12 (1.00
# and 1.02 for Q4_1 and Q5_1, whose offsets take one weight row at a time beyond 8 rows). Where
# the CPU splits 512-bit operations (not _wide_on: Zen 4) the row kernels (the 256-bit two-row
# ones, by vpdpbusd, up to 4 rows of x in one pass; Q8_0's VNNI row kernel) are faster at a few
# rows, so the few-rows kernel starts later: 8192 x 4096 from memory, few-rows time / row kernels'
# time at 1 and 2 threads: 2 rows 1.18-1.32 (Q4_0, Q4_1, Q5_0, MXFP4, IQ4_NL), 3 rows 1.19-1.30
# (all six); 4 rows Q4_0 0.96-1.00, Q5_0 0.98, MXFP4 0.93-0.97, IQ4_NL 0.95-0.96: those from 4;
# Q4_1 1.09 and Q5_1 1.05-1.06 at 4: from 5. Q8_0 0.65 at 2 rows, 0.76 at 3, 0.95 at 4 (its row
# kernel): from 5. Without VNNI (maddubs) the per-32 types' batch kernel (groups of 8 rows of x,
# no few-rows kernel) costs about the same for 1 to 8 rows; against the row kernels (avx2 build,
# 4096 x 4096, 2 threads, batch / rows at 8, 16 and 64 rows): Q4_0 1.00, 0.89, 0.81; MXFP4 1.00,
# 0.90, 0.82; IQ4_NL 0.98, 0.86, 0.81; Q5_0 0.91-0.96 at 6-8 rows, 0.68 at 64; Q4_1 and Q5_1
# (unsigned codes, the fewest operations) 0.76-0.89 at 5 rows, 0.48-0.55 at 64; Q8_0, whose row
# kernel unpacks nothing, 1.01 at 16, 0.97 at 32, 0.91 at 64. So from 9 rows (Q4_0, MXFP4,
# IQ4_NL), 6 (Q5_0), 5 (Q4_1, Q5_1), 32 (Q8_0); a last group of fewer rows than that takes the
# row kernels (_use_gemm). Tests take the batch kernels down to 1 row (_set_batch_min_rows).
cdef Py_ssize_t _gemm_min_rows_set = 0  # 0: the ISA's own


cdef inline Py_ssize_t _gemm_min_rows(int type_id) noexcept nogil:
    if _gemm_min_rows_set:
        return _gemm_min_rows_set
    if FGG_MM_SSE2_K_BUILD:  # the portable build's kernels: weight rows one at a time, x widened once
        return 1
    if not _x_by_256(type_id) and not _vnni_on:  # the per-32 types' maddubs kernel
        if type_id == FGG_TYPE_Q4_1 or type_id == FGG_TYPE_Q5_1:
            return 5
        if type_id == FGG_TYPE_Q8_0:
            return 32
        return 6 if type_id == FGG_TYPE_Q5_0 else 9
    if not _x_by_256(type_id):  # the per-32 types on VNNI: the few-rows kernel
        if _wide_on:
            return 2
        if type_id == FGG_TYPE_Q8_0 or type_id == FGG_TYPE_Q4_1 or type_id == FGG_TYPE_Q5_1:
            return 5
        return 4
    return _k_batch_min_rows(type_id)


cdef inline Py_ssize_t _k_batch_min_rows(int type_id) noexcept nogil:
    """_gemm_min_rows for the K kinds: 6 rows of x on VNNI, 9 on maddubs, but for the IQ types, whose
    row kernels (fgg_mm_rown_iq, 4 rows of x at a time; IQ4_XS's 8-row form, fgg_mm_rows8_k) keep up
    for longer or less long. Batch time / row kernels' time (avx512 build with VNNI and avx2 build,
    4096 x 14336, one thread) at the first count taken: VNNI IQ2_XS 1.00, IQ3_XXS 0.95, IQ3_S 0.93
    at 6 rows; IQ1_S 0.97, IQ4_XS 0.94 at 7; IQ2_XXS 0.95, IQ2_S 0.97, IQ1_M 0.94 at 8. maddubs
    IQ3_S 0.91 at 7; IQ3_XXS 0.98, IQ1_S 0.96, IQ1_M 0.97 at 8; the IQ2 types 0.95-0.98 at 12;
    IQ4_XS (signs moved onto x there, no x + 128) 0.99 at 24, 1.35 at 17."""
    if _vnni_on:
        if type_id == FGG_TYPE_IQ1_S or type_id == FGG_TYPE_IQ4_XS:
            return 7
        if type_id == FGG_TYPE_IQ2_XXS or type_id == FGG_TYPE_IQ2_S or type_id == FGG_TYPE_IQ1_M:
            return 8
        return 6
    if type_id == FGG_TYPE_IQ3_S:
        return 7
    if type_id == FGG_TYPE_IQ3_XXS or type_id == FGG_TYPE_IQ1_S or type_id == FGG_TYPE_IQ1_M:
        return 8
    if type_id == FGG_TYPE_IQ2_XXS or type_id == FGG_TYPE_IQ2_XS or type_id == FGG_TYPE_IQ2_S:
        return 12
    if type_id == FGG_TYPE_IQ4_XS:
        return 24
    return 9


def _set_batch_min_rows(Py_ssize_t m):
    """Take the batch kernel from ``m`` rows of x (0: the instruction set's own count); returns the
    previous setting. For tests and benchmarks: not while a matmul of this build runs in another
    thread."""
    global _gemm_min_rows_set
    if m < 0:
        raise ValueError(f"m must be at least 0, got {m}")
    cdef Py_ssize_t before = _gemm_min_rows_set
    _gemm_min_rows_set = m
    return before


cdef enum:
    # Weight rows a batch task unpacks at a time (its panel): 64, fewer (a multiple
    # of 8) where 64 rows' unpacked blocks would pass _MM_GEMM_PANEL_BYTES (long rows)
    _MM_GEMM_PANEL_ROWS = 64
    _MM_GEMM_PANEL_BYTES = 1024 * 1024


cdef fgg_mm_gemm_fn _gemm_k(int type_id) noexcept nogil:
    """The batch kernel of a K kind (a K-quant, ternary or 256-value IQ type) or of a per-32 type in
    use, or NULL."""
    return INT_BATCH[type_id]


cdef Py_ssize_t _gemm_tile(size_t row_panel_bytes) noexcept nogil:
    """Weight rows per task of the batch kernel whose panel takes ``row_panel_bytes`` per weight row
    (none: _MM_GEMM_PANEL_ROWS)."""
    if row_panel_bytes == 0:
        return _MM_GEMM_PANEL_ROWS
    return max(8, min(_MM_GEMM_PANEL_ROWS, _MM_GEMM_PANEL_BYTES // <Py_ssize_t>row_panel_bytes) // 8 * 8)


cdef size_t _xi_bytes(int type_id, Py_ssize_t m, Py_ssize_t nb) noexcept nogil:
    """Bytes of m rows of x interleaved for the batch kernel: fgg_mm_x16k per super-block (the K
    kinds) or fgg_mm_x16b per block of 32, 16 rows each (m rounded up), or for a few rows of the
    per-32 types fgg_mm_x2b per block of 32, 2 rows each (VNNI); fgg_mm_x8b per block of 32, 8
    rows each (maddubs)."""
    return fgg_mm_batch_x_bytes(_x_layout(type_id), m, _x_blocks(type_id, nb))


cdef inline Py_ssize_t _x_blocks(int type_id, Py_ssize_t nb) noexcept nogil:
    """Blocks of quantized x that meet nb weight blocks of ``type_id``: nb, or for the per-32 types
    of several runs a block (Q1_0's 4) nb times that."""
    return nb if _x_by_256(type_id) else nb * (fgg_block_size[type_id] // 32)


cdef void _use_gemm(_MMIntJob *job, int type_id, fgg_mm_gemm_fn gemm, char *xi, int threads) noexcept nogil:
    """Make an integer job run the batch kernel: x interleaved into ``xi`` (_xi_bytes), tasks of
    _gemm_tile weight rows. The maddubs kernel of the per-32 types costs the same for 1 to 8 rows
    of x (a group), so a last group of fewer than _gemm_min_rows rows takes the row kernels."""
    cdef int layout = _x_layout(type_id)
    job.gm = job.m
    if fgg_mm_batch_group_rows(layout) == 8 and job.m % 8 < _gemm_min_rows(type_id):
        job.gm = job.m - job.m % 8
    cdef size_t row_panel_bytes = fgg_mm_batch_panel_bytes(layout, job.gm, _x_blocks(type_id, job.nb))
    job.gemm = gemm
    job.xi = xi
    job.tile = _gemm_tile(row_panel_bytes)
    job.panel_bytes = job.tile * row_panel_bytes
    fgg_mm_batch_x_fill(layout, job.x, job.xs, job.gm, _x_blocks(type_id, job.nb), xi)
    job.n_tasks = _row_tasks(job.n1 - job.n0, job.tile, threads)


def matmul_rows_int(const uint8_t[:, ::1] w not None, int type_id, const uint8_t[:, ::1] xq not None,
                    float[:, :] out not None, Py_ssize_t n0, Py_ssize_t n1, int threads=1):
    """``out[:, n0:n1]`` from the quantized rows ``xq`` by integer dots: ``xq`` in the layout
    :func:`int_x_layout` names for the type (:func:`quantize_x8` or :func:`quantize_x8k`).
    ``threads`` as for :func:`matmul_rows`.

    Raises
    ------
    ValueError
        Shapes that disagree, a row range outside ``w``, ``threads < 1``.
    NotImplementedError
        This type has no integer dot product.
    GGUFError
        ``w`` maps a file that was truncated under it (SIGBUS).
    """
    cdef fgg_kernel_row *row = _row(type_id)
    cdef fgg_dot_fn fn = row.dot if row != NULL else NULL
    if fn == NULL:
        raise NotImplementedError(f"no integer dot product for ggml type id {type_id}")
    if threads < 1:
        raise ValueError(f"threads must be at least 1, got {threads}")
    cdef Py_ssize_t block_size = fgg_block_size[type_id], type_size = fgg_type_size[type_id]
    cdef Py_ssize_t m = xq.shape[0], n_rows = w.shape[0], i, n
    cdef Py_ssize_t x_values = 256 if _x_by_256(type_id) else 32
    cdef Py_ssize_t x_bytes = MM_Q8K_BYTES if _x_by_256(type_id) else MM_Q8_BYTES
    cdef Py_ssize_t k = xq.shape[1] // x_bytes * x_values
    # the kernels pair weight block b with x blocks b * r .. b * r + r - 1, r = block_size / x_values
    if xq.shape[1] % x_bytes or block_size % x_values or k % block_size:
        raise ValueError(f"quantized x rows of {xq.shape[1]} bytes do not fit the block size {block_size}")
    if w.shape[1] != k // block_size * type_size:
        raise ValueError(f"weight rows have {w.shape[1]} bytes, {k} elements take {k // block_size * type_size}")
    if out.shape[0] != m or out.shape[1] != n_rows or (n_rows > 1 and out.strides[1] != sizeof(float)):
        raise ValueError("out must be (M, N) float32 with contiguous rows")
    if not 0 <= n0 <= n1 <= n_rows:
        raise ValueError(f"row range {n0}:{n1} is outside the {n_rows} weight rows")
    if m == 0 or n1 == n0:
        return
    if m > 0x7fffffff:
        raise ValueError(f"{m} rows of x are too many")
    if k == 0:
        for i in range(m):
            for n in range(n0, n1):
                out[i, n] = 0.0
        return
    _matmul_int_run(fn, type_id, &w[0, 0], w.shape[1], k // block_size, &xq[0, 0], xq.shape[1], x_bytes, m,
                    &out[0, 0], out.strides[0] // sizeof(float), n0, n1, threads)


cdef int _matmul_int_run(fgg_dot_fn fn, int type_id, const uint8_t *w, Py_ssize_t row_bytes, Py_ssize_t nb,
                         const uint8_t *xq, Py_ssize_t xq_row_bytes, Py_ssize_t x_bytes, Py_ssize_t m, float *out,
                         Py_ssize_t out_stride, Py_ssize_t n0, Py_ssize_t n1, int threads) except -1:
    """matmul_rows_int after its checks (m rows of x quantized at xq, nb blocks a row, all > 0)."""
    cdef _MMIntJob job
    _fill_int_job(&job, fn, INT_ROWS2[type_id], w, row_bytes, nb, xq, xq_row_bytes, xq_row_bytes // x_bytes, m,
                  out, out_stride, n0, n1, threads)
    cdef fgg_mm_gemm_fn gemm = _gemm_k(type_id)
    cdef char *xi = NULL
    if gemm != NULL and m >= _gemm_min_rows(type_id):
        xi = <char *>fgg_aligned_malloc(_xi_bytes(type_id, m, job.nb))
        if xi == NULL:
            raise MemoryError("no memory for the interleaved rows of x")
    try:
        with nogil:
            if xi != NULL:
                _use_gemm(&job, type_id, gemm, xi, threads)
            fgg_pool_run(_mm_int_task, &job, job.n_tasks, threads)
    finally:
        fgg_aligned_free(xi)
    return _raise_status(job.status)


def matmul_quick(w, type_id, x, out, int threads, bint exact, Py_ssize_t min_work):
    """fastgguf.matmul's common call, checked and run in one step: ``w`` a C-contiguous (N, row_bytes)
    uint8 array of whole blocks of ``type_id`` (an int) with a kernel, ``x`` a C-contiguous (M, K)
    float32 array (M, N, K > 0), ``out`` a C-contiguous (M, N) float32 array, ``threads`` >= 1;
    ``exact`` as matmul's. Threads as :func:`fastgguf.matmul` splits them: at most one per
    ``min_work`` bytes of weights times rows of x.

    Returns True when done, False (having changed nothing) for any other arguments: fastgguf.matmul
    then takes its full path, which also raises the errors (its checks in Python cost about 5 us a
    call more: as much as the product of a small weight).
    """
    if not isinstance(type_id, int) or threads < 1 or min_work < 1:
        return False
    cdef const uint8_t[:, ::1] wv
    cdef const float[:, ::1] xv
    cdef float[:, ::1] ov
    try:
        wv = w
        xv = x
        ov = out
    except (TypeError, ValueError, BufferError):
        return False
    cdef int t = type_id if -1 <= type_id <= FGG_TYPE_LIMIT else -1
    cdef fgg_kernel_row *row = _row(t)
    if row == NULL or row.dequantize == NULL:
        return False
    cdef Py_ssize_t block_size = fgg_block_size[t], type_size = fgg_type_size[t]
    cdef Py_ssize_t m = xv.shape[0], k = xv.shape[1], n = wv.shape[0]
    if (m == 0 or n == 0 or k == 0 or k % block_size or wv.shape[1] != k // block_size * type_size
            or ov.shape[0] != m or ov.shape[1] != n or m > 0x7fffffff):
        return False
    # matmul's split: w's bytes times the rows of x, one thread per min_work (in floats: no overflow)
    cdef double work = <double>wv.shape[0] * <double>wv.shape[1] * <double>m / <double>min_work
    cdef int n_threads = threads if work >= threads and n >= threads else <int>max(1, min(<double>n, work))
    cdef Py_ssize_t x_values = 256 if _x_by_256(t) else 32
    cdef Py_ssize_t x_bytes = MM_Q8K_BYTES if _x_by_256(t) else MM_Q8_BYTES
    if not exact and row.dot != NULL and k % x_values == 0 and block_size % x_values:
        return False  # matmul_rows_int refuses it: the full path says so
    if exact or row.dot == NULL or k % x_values:
        _matmul_float_run(row.dequantize, NULL, t, wv, xv, ov, 0, n, 0, n_threads)
        return True
    # the integer path: x quantized once (as matmul's quantize_x8 / quantize_x8k), then the dots
    cdef Py_ssize_t xq_row = k // x_values * x_bytes
    cdef uint8_t *xq = <uint8_t *>malloc(m * xq_row)
    if xq == NULL:
        raise MemoryError("no memory for the quantized rows of x")
    try:
        with nogil:
            _quantize_x_rows(x_values == 256, &xv[0, 0], xv.strides[0] // sizeof(float), m, k, xq, xq_row)
        _matmul_int_run(row.dot, t, &wv[0, 0], wv.shape[1], k // block_size, xq, xq_row, x_bytes, m, &ov[0, 0], n,
                        0, n, n_threads)
    finally:
        free(xq)
    return True


cdef void _fill_int_job(_MMIntJob *job, fgg_dot_fn fn, fgg_dot_fn fn2, const uint8_t *w, Py_ssize_t row_bytes,
                        Py_ssize_t nb, const uint8_t *x, Py_ssize_t x_row_bytes, Py_ssize_t xs, Py_ssize_t m, float *out,
                        Py_ssize_t out_stride, Py_ssize_t n0, Py_ssize_t n1, int threads) noexcept nogil:
    job.fn = fn
    job.fn2 = fn2
    job.gemm = NULL
    job.gm = 0
    job.xi = NULL
    job.tile = 0
    job.panel_bytes = 0
    job.w = w
    job.row_bytes = row_bytes
    job.nb = nb
    job.x = x
    job.x_row_bytes = x_row_bytes
    job.xs = xs
    job.m = m
    job.out = out
    job.out_stride = out_stride
    job.n0 = n0
    job.n1 = n1
    job.wt = _tile_rows(_MM_W_TILE, row_bytes, 1)
    job.xt = _tile_rows(_MM_X_TILE, x_row_bytes, 8)
    job.n_tasks = _row_tasks(n1 - n0, job.wt, threads)
    job.status = 0


# --- matmul_id: the products of many experts in one run of the pool ---------------------------------

ctypedef void (*_job_task_fn)(void *ctx, int task) noexcept nogil


cdef struct _GroupRun:
    _job_task_fn task
    char *jobs
    Py_ssize_t job_bytes


cdef void _group_task(void *ctx, int g) noexcept nogil:
    """Group g's whole product on this thread (its job was made for one thread: one task)."""
    cdef _GroupRun *run = <_GroupRun *>ctx
    run.task(run.jobs + g * run.job_bytes, 0)


def matmul_rows_grouped(const uint8_t[:, :, ::1] w not None, int type_id, const float[:, ::1] x not None,
                        const uint8_t[:, ::1] xq, float[:, ::1] out not None, const int64_t[::1] experts not None,
                        const int64_t[::1] bounds not None, bint byteswapped=False, int threads=1):
    """matmul_id's products: for each group g, the rows ``bounds[g]:bounds[g + 1]`` of ``out`` are
    those rows of ``x`` times ``w[experts[g]]`` transposed. With ``xq`` (x quantized in the type's
    :func:`int_x_layout`) by the integer path, else by the float path (exact). Each group's product
    is the one :func:`matmul_rows` / :func:`matmul_rows_int` computes for it, with the same bits.

    With at least as many groups as threads (a token's experts, or a prompt's), the groups are the
    pool's tasks, one thread each: one hand-off to the pool for all of them, where a call per
    expert costs as much as a small expert's product. With fewer, each group in turn shares out
    its weight rows, as matmul_rows does.

    Raises
    ------
    ValueError
        Shapes that disagree, groups that do not tile the rows of ``x``, ``threads < 1``.
    IndexError
        An expert index outside ``w``.
    NotImplementedError
        No kernel (integer dot, byte swapper) for this type.
    MemoryError, GGUFError
        As for :func:`matmul_rows`.
    """
    cdef fgg_kernel_row *row = _row(type_id)
    if row == NULL:
        raise ValueError(f"unknown ggml tensor type id {type_id}")
    if row.dequantize == NULL:
        raise NotImplementedError(f"no dequantization kernel for ggml type id {type_id}")
    if threads < 1:
        raise ValueError(f"threads must be at least 1, got {threads}")
    cdef fgg_byteswap_fn swap = row.byteswap if byteswapped else NULL
    if byteswapped and swap == NULL:
        raise NotImplementedError(f"no big-endian support for ggml type id {type_id}")
    cdef bint integer = xq is not None
    if integer and (row.dot == NULL or byteswapped):
        raise NotImplementedError(f"no integer dot product for ggml type id {type_id}")
    cdef Py_ssize_t block_size = fgg_block_size[type_id], type_size = fgg_type_size[type_id]
    cdef Py_ssize_t n_exp = w.shape[0], n_rows = w.shape[1], row_bytes = w.shape[2]
    cdef Py_ssize_t m = x.shape[0], k = x.shape[1], n_groups = experts.shape[0], g, i, e
    cdef Py_ssize_t x_values = (256 if _x_by_256(type_id) else 32) if integer else 1
    cdef Py_ssize_t x_bytes = (MM_Q8K_BYTES if _x_by_256(type_id) else MM_Q8_BYTES) if integer else 0
    if k % block_size or row_bytes != k // block_size * type_size:
        raise ValueError(f"weight rows have {row_bytes} bytes, {k} elements take {k // block_size * type_size}")
    if integer and (xq.shape[0] != m or block_size % x_values or k % block_size
                    or xq.shape[1] != k // x_values * x_bytes):
        raise ValueError(f"quantized x of shape ({xq.shape[0]}, {xq.shape[1]}) does not fit x of shape ({m}, {k})")
    if out.shape[0] != m or out.shape[1] != n_rows:
        raise ValueError(f"out must be ({m}, {n_rows}) float32")
    if bounds.shape[0] != n_groups + 1 or bounds[0] != 0 or bounds[n_groups] != m:
        raise ValueError("bounds must run from 0 to the rows of x, one more than the groups")
    for g in range(n_groups):
        if bounds[g + 1] < bounds[g]:
            raise ValueError("bounds must not decrease")
        if not 0 <= experts[g] < n_exp:
            raise IndexError(f"expert index {experts[g]} out of range for {n_exp} experts")
    if m == 0 or n_rows == 0 or n_groups == 0:
        return
    if k == 0:
        out[:, :] = 0.0
        return
    cdef bint factored = not integer and _exact_by_sub_block(type_id) != NULL
    cdef _GroupRun run
    cdef size_t job_bytes = (sizeof(_MMIntJob) if integer else sizeof(_MMExactJob) if factored
                             else sizeof(_MMFloatJob))
    cdef bint by_group = n_groups >= threads
    cdef int group_threads = 1 if by_group else threads
    cdef bint failed = False
    cdef float *xsum = NULL
    cdef float *x_copy = NULL
    cdef const float *xf = NULL  # the factored path's x, aligned for its kernels (_aligned_x)
    cdef char *jobs = <char *>calloc(n_groups, job_bytes)
    if jobs == NULL:
        raise MemoryError("no memory for matmul_id's jobs")
    cdef Py_ssize_t x_stride = x.strides[0] // sizeof(float), out_stride = out.strides[0] // sizeof(float)
    cdef int status = 0
    # the groups of _gemm_min_rows(type_id) rows or more take the batch kernel (if any), their
    # rows of x interleaved into one buffer
    cdef fgg_mm_gemm_fn gemm = _gemm_k(type_id) if integer else NULL
    cdef Py_ssize_t xi_count = 0, xi_at = 0
    cdef char *xi = NULL
    if gemm != NULL:
        for g in range(n_groups):
            if bounds[g + 1] - bounds[g] >= _gemm_min_rows(type_id):
                xi_count += _xi_bytes(type_id, bounds[g + 1] - bounds[g], k // block_size)
        if xi_count:
            xi = <char *>fgg_aligned_malloc(xi_count)
            if xi == NULL:
                free(jobs)
                raise MemoryError("no memory for the interleaved rows of x")
    try:
        with nogil:
            if factored:
                xf = _aligned_x(&x[0, 0], m, k, &x_copy)
                failed = xf == NULL
                if not failed:
                    xsum = _x_sums(type_id, xf, k, m, k, &failed)
            if not failed:
                for g in range(n_groups):
                    i = bounds[g]
                    e = experts[g]
                    if integer:
                        _fill_int_job(<_MMIntJob *>(jobs + g * job_bytes), row.dot, INT_ROWS2[type_id], &w[e, 0, 0],
                                      row_bytes, k // block_size, &xq[0, 0] + i * xq.shape[1], xq.shape[1],
                                      xq.shape[1] // x_bytes, bounds[g + 1] - i, &out[0, 0] + i * out_stride, out_stride, 0, n_rows,
                                      group_threads)
                        if xi != NULL and bounds[g + 1] - i >= _gemm_min_rows(type_id):
                            _use_gemm(<_MMIntJob *>(jobs + g * job_bytes), type_id, gemm, xi + xi_at, group_threads)
                            xi_at += _xi_bytes(type_id, bounds[g + 1] - i, k // block_size)
                    elif factored:
                        _fill_exact_job(<_MMExactJob *>(jobs + g * job_bytes), swap, type_id, &w[e, 0, 0],
                                        row_bytes, k // block_size, xf + i * k, k, bounds[g + 1] - i,
                                        (xsum + i * (k // _x_sum_len(type_id))) if xsum != NULL else NULL,
                                        &out[0, 0] + i * out_stride, out_stride, 0, n_rows, group_threads)
                    else:
                        _fill_float_job(<_MMFloatJob *>(jobs + g * job_bytes), row.dequantize, swap, type_id,
                                        &w[e, 0, 0], row_bytes, k, &x[0, 0] + i * x_stride, x_stride, bounds[g + 1] - i,
                                        &out[0, 0] + i * out_stride, out_stride, 0, n_rows, 0, group_threads)
                run.task = <_job_task_fn>(_mm_int_task if integer else _mm_exact_task if factored
                                          else _mm_float_task)
                run.jobs = jobs
                run.job_bytes = job_bytes
                if by_group:
                    fgg_pool_run(_group_task, &run, <int>n_groups, threads)
                else:
                    for g in range(n_groups):
                        fgg_pool_run(run.task, jobs + g * job_bytes, (<_JobHead *>(jobs + g * job_bytes)).n_tasks, threads)
                for g in range(n_groups):
                    status = min(status, (<_JobHead *>(jobs + g * job_bytes)).status)
        if failed:
            raise MemoryError("no scratch memory for matmul")
        _raise_status(status)
    finally:
        free(xsum)
        fgg_aligned_free(x_copy)
        free(jobs)
        fgg_aligned_free(xi)



