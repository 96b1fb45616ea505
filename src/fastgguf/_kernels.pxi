# The dequantization engine: kernel typedefs, the per-family lookups, and the Python-callable
# driver. Each _kernels_<variant>.pyx is nothing but ``include "_kernels.pxi"``: one source,
# compiled once per CPU level with different ISA flags (see setup.py).
#
# Adding a kernel family: write _kernels_<family>.pxi with ``<family>_kernel(type_id)`` (and
# ``<family>_swap(type_id)`` once big-endian blocks are handled), include it below and ask it in
# kernel_for() / swap_for(). Shared inline helpers (fp16/bf16 -> float, unaligned little-endian
# loads, byte swaps) are in _kernel_helpers.pxd, already cimported here.

from libc.stdint cimport uint8_t, uint16_t, uint32_t, uint64_t, int64_t
from libc.stdlib cimport malloc, free

from fastgguf._kernel_helpers cimport *
from fastgguf._sigbus cimport fgg_guard, fgg_guard_enter, fgg_guard_leave, fgg_sigbus_install

from fastgguf.errors import GGUFError

# Converts n_blocks whole consecutive blocks at src to float32 at dst. Pure arithmetic on a
# range the caller has checked: no bounds checks, no Python objects, no GIL.
ctypedef void (*dequant_fn)(const uint8_t *src, float *dst, Py_ssize_t n_blocks) noexcept nogil

# Copies n_blocks blocks of big-endian data at src to dst with every multi-byte field put in
# little-endian order, so that the dequant_fn of the type can run on dst.
ctypedef void (*swap_fn)(const uint8_t *src, uint8_t *dst, Py_ssize_t n_blocks) noexcept nogil

# ggml tensor type ids (checked against fastgguf.types.GGMLType when the module loads).
cdef enum:
    TYPE_F32 = 0
    TYPE_F16 = 1
    TYPE_Q4_0 = 2
    TYPE_Q4_1 = 3
    TYPE_Q5_0 = 6
    TYPE_Q5_1 = 7
    TYPE_Q8_0 = 8
    TYPE_Q8_1 = 9
    TYPE_Q2_K = 10
    TYPE_Q3_K = 11
    TYPE_Q4_K = 12
    TYPE_Q5_K = 13
    TYPE_Q6_K = 14
    TYPE_Q8_K = 15
    TYPE_IQ2_XXS = 16
    TYPE_IQ2_XS = 17
    TYPE_IQ3_XXS = 18
    TYPE_IQ1_S = 19
    TYPE_IQ4_NL = 20
    TYPE_IQ3_S = 21
    TYPE_IQ2_S = 22
    TYPE_IQ4_XS = 23
    TYPE_I8 = 24
    TYPE_I16 = 25
    TYPE_I32 = 26
    TYPE_I64 = 27
    TYPE_F64 = 28
    TYPE_IQ1_M = 29
    TYPE_BF16 = 30
    TYPE_TQ1_0 = 34
    TYPE_TQ2_0 = 35
    TYPE_MXFP4 = 39
    TYPE_NVFP4 = 40
    TYPE_Q1_0 = 41
    TYPE_Q2_0 = 42
    TYPE_ID_LIMIT = 64  # ids at or above this have no layout entry

include "_kernels_float.pxi"
include "_kernels_legacy.pxi"
include "_kernels_kquant.pxi"
include "_kernels_iq.pxi"


cdef dequant_fn kernel_for(int type_id) noexcept nogil:
    """The little-endian kernel of ``type_id``, or NULL if no family owns it."""
    cdef dequant_fn fn = float_kernel(type_id)
    if fn == NULL:
        fn = legacy_kernel(type_id)
    if fn == NULL:
        fn = kquant_kernel(type_id)
    if fn == NULL:
        fn = iq_kernel(type_id)
    return fn


cdef swap_fn swap_for(int type_id) noexcept nogil:
    """The big-endian -> little-endian block converter of ``type_id``, or NULL if none yet."""
    cdef swap_fn fn = float_swap(type_id)
    if fn == NULL:
        fn = legacy_swap(type_id)
    if fn == NULL:
        fn = kquant_swap(type_id)
    if fn == NULL:
        fn = block_swap(type_id)
    return fn


# Block layout per type id, filled from the one type table (fastgguf.types.TYPE_TRAITS) when the
# module loads, so callers cannot hand a kernel a layout that disagrees with it. 0 = no such type.
cdef Py_ssize_t _block_size[TYPE_ID_LIMIT]
cdef Py_ssize_t _type_size[TYPE_ID_LIMIT]


def _load_type_table():
    from fastgguf.types import GGMLType, TYPE_TRAITS

    cdef int i
    for i in range(TYPE_ID_LIMIT):
        _block_size[i] = 0
        _type_size[i] = 0
    for type_, traits in TYPE_TRAITS.items():
        if not 0 <= type_ < TYPE_ID_LIMIT:
            raise ImportError(f"ggml type id {int(type_)} is beyond the kernel table ({TYPE_ID_LIMIT})")
        _block_size[type_] = traits.block_size
        _type_size[type_] = traits.type_size
    expected = {
        "F32": TYPE_F32, "F16": TYPE_F16, "BF16": TYPE_BF16, "F64": TYPE_F64,
        "I8": TYPE_I8, "I16": TYPE_I16, "I32": TYPE_I32, "I64": TYPE_I64,
        "Q4_0": TYPE_Q4_0, "Q4_1": TYPE_Q4_1, "Q5_0": TYPE_Q5_0, "Q5_1": TYPE_Q5_1,
        "Q8_0": TYPE_Q8_0, "Q8_1": TYPE_Q8_1, "Q2_K": TYPE_Q2_K, "Q3_K": TYPE_Q3_K,
        "Q4_K": TYPE_Q4_K, "Q5_K": TYPE_Q5_K, "Q6_K": TYPE_Q6_K, "Q8_K": TYPE_Q8_K,
        "IQ2_XXS": TYPE_IQ2_XXS, "IQ2_XS": TYPE_IQ2_XS, "IQ3_XXS": TYPE_IQ3_XXS,
        "IQ1_S": TYPE_IQ1_S, "IQ4_NL": TYPE_IQ4_NL, "IQ3_S": TYPE_IQ3_S, "IQ2_S": TYPE_IQ2_S,
        "IQ4_XS": TYPE_IQ4_XS, "IQ1_M": TYPE_IQ1_M, "TQ1_0": TYPE_TQ1_0, "TQ2_0": TYPE_TQ2_0,
        "MXFP4": TYPE_MXFP4, "NVFP4": TYPE_NVFP4, "Q1_0": TYPE_Q1_0, "Q2_0": TYPE_Q2_0,
    }
    for name, type_id in expected.items():
        if GGMLType[name] != type_id:
            raise ImportError(f"kernel id of {name} ({type_id}) disagrees with GGMLType ({int(GGMLType[name])})")


_load_type_table()

include "_kernels_swap.pxi"

_load_swap_table()


cdef inline bint _has_layout(int type_id) noexcept nogil:
    return 0 <= type_id < TYPE_ID_LIMIT and _type_size[type_id] != 0


def has_kernel(int type_id):
    """Whether this module can dequantize little-endian data of ggml type ``type_id``."""
    return _has_layout(type_id) and kernel_for(type_id) != NULL


def has_byteswap(int type_id):
    """Whether this module can dequantize big-endian (byte-swapped) data of ggml type ``type_id``."""
    return has_kernel(type_id) and swap_for(type_id) != NULL


cdef enum:
    # Big-endian data is swapped into this many bytes of scratch at a time: small enough for L1,
    # and at least one block of every type.
    _SWAP_SCRATCH_BYTES = 16384
    # Streamed output is staged in this many floats (16 KiB, in L1) before the non-temporal copy;
    # a multiple of every block size, so each stage after the first starts cache-line aligned.
    _STAGE_FLOATS = 4096


cdef void _run(dequant_fn kernel, swap_fn swap, uint8_t *scratch, float *stage,
               const uint8_t *src, float *dst, Py_ssize_t n_blocks, Py_ssize_t block_size,
               Py_ssize_t type_size) noexcept nogil:
    """Dequantize n_blocks. With ``swap``, big-endian blocks are first put in order in
    ``scratch`` (_SWAP_SCRATCH_BYTES); with ``stage`` (_STAGE_FLOATS), the output is staged there
    and written to dst with non-temporal stores (the caller fences once at the end)."""
    if swap == NULL and stage == NULL:
        kernel(src, dst, n_blocks)
        return
    cdef Py_ssize_t per_chunk = _STAGE_FLOATS // block_size
    cdef Py_ssize_t done = 0, count
    cdef const uint8_t *blocks
    if swap != NULL:
        per_chunk = min(per_chunk, _SWAP_SCRATCH_BYTES // type_size)
    while done < n_blocks:
        count = min(per_chunk, n_blocks - done)
        blocks = src + done * type_size
        if swap != NULL:
            swap(blocks, scratch, count)
            blocks = scratch
        if stage != NULL:
            kernel(blocks, stage, count)
            fgg_stream_copy(dst + done * block_size, stage, count * block_size)
        else:
            kernel(blocks, dst + done * block_size, count)
        done += count


cdef int _run_guarded(dequant_fn kernel, swap_fn swap, uint8_t *scratch, float *stage,
                      const uint8_t *src, float *dst, Py_ssize_t n_blocks, const int64_t *row_index,
                      Py_ssize_t n_rows, Py_ssize_t row_blocks, Py_ssize_t row_bytes, Py_ssize_t row_elems,
                      Py_ssize_t block_size, Py_ssize_t type_size) noexcept nogil:
    """Every _run of one call (all of ``src`` when ``row_index`` is NULL, else those rows).

    Returns -2 instead of killing the process if reading ``src`` raises SIGBUS (a mapped file
    truncated under us, see _sigbus.pxd); the caller still owns and frees scratch and stage."""
    cdef fgg_guard guard
    cdef Py_ssize_t k
    if fgg_guard_enter(&guard):
        return -2
    if row_index == NULL:
        _run(kernel, swap, scratch, stage, src, dst, n_blocks, block_size, type_size)
    else:
        for k in range(n_rows):
            _run(kernel, swap, scratch, stage, src + row_index[k] * row_bytes, dst + k * row_elems,
                 row_blocks, block_size, type_size)
    fgg_guard_leave(&guard)
    return 0


fgg_sigbus_install()


def dequantize_into(const uint8_t[::1] src not None, float[::1] dst not None, int type_id,
                    const int64_t[::1] row_index=None, Py_ssize_t row_elems=0,
                    bint byteswapped=False, bint stream=False):
    """Dequantize blocks of ``src`` into ``dst`` with the GIL released.

    Without ``row_index``: ``dst`` is filled from the first ``len(dst) / block_size`` blocks of
    ``src``. With ``row_index``: ``src`` holds whole rows of ``row_elems`` elements and row
    ``row_index[k]`` goes to ``dst[k * row_elems : (k + 1) * row_elems]``.

    ``byteswapped``: the data is big-endian. ``stream``: write ``dst`` with non-temporal stores
    (for outputs much larger than the caches; it saves the read-for-ownership of every line).

    Every length and index is checked here, before any kernel runs; the block layout comes from
    ``fastgguf.types.TYPE_TRAITS``.

    Raises
    ------
    ValueError
        Unknown type id, ``dst`` not a whole number of blocks or rows, ``src`` too short,
        a ``row_index`` entry outside ``src``'s rows.
    NotImplementedError
        No kernel (or, with ``byteswapped``, no byte swapper) for this type in this module.
    MemoryError
        No scratch memory for byte-swapped data.
    GGUFError
        ``src`` is a map of a file that was truncated under it (SIGBUS while reading).
    """
    if not _has_layout(type_id):
        raise ValueError(f"unknown ggml tensor type id {type_id}")
    cdef dequant_fn kernel = kernel_for(type_id)
    if kernel == NULL:
        raise NotImplementedError(f"no dequantization kernel for ggml type id {type_id}")
    cdef swap_fn swap = NULL
    if byteswapped:
        swap = swap_for(type_id)
        if swap == NULL:
            raise NotImplementedError(f"no big-endian support for ggml type id {type_id}")

    cdef Py_ssize_t block_size = _block_size[type_id]
    cdef Py_ssize_t type_size = _type_size[type_id]
    cdef Py_ssize_t n_out = dst.shape[0]
    cdef Py_ssize_t n_src = src.shape[0]
    cdef Py_ssize_t n_blocks = 0, row_blocks = 0, row_bytes = 0, n_src_rows, n_rows = 0, k, r
    if n_out % block_size:
        raise ValueError(f"output length {n_out} is not a multiple of the block size {block_size}")

    if type_id == TYPE_F32:
        stream = False  # a plain memcpy, which picks non-temporal stores itself for large copies

    if row_index is None:
        n_blocks = n_out // block_size
        if n_blocks > n_src // type_size:
            raise ValueError(f"{n_out} elements need {n_blocks * type_size} bytes, source has {n_src}")
    else:
        if row_elems <= 0 or row_elems % block_size:
            raise ValueError(f"row length {row_elems} is not a positive multiple of the block size {block_size}")
        n_rows = row_index.shape[0]
        if n_out != n_rows * row_elems:
            raise ValueError(f"output length {n_out} is not {n_rows} rows of {row_elems}")
        row_blocks = row_elems // block_size
        row_bytes = row_blocks * type_size
        n_src_rows = n_src // row_bytes
        for k in range(n_rows):
            if not 0 <= row_index[k] < n_src_rows:
                raise ValueError(f"row {row_index[k]} is outside the {n_src_rows} rows of the source")
    if n_out == 0:
        return

    # Scratch for byte swapping and the streaming stage: allocated once per call.
    cdef uint8_t *scratch = NULL
    cdef float *stage = NULL
    if swap != NULL:
        scratch = <uint8_t *>malloc(_SWAP_SCRATCH_BYTES)
    if stream:
        stage = <float *>malloc(_STAGE_FLOATS * sizeof(float))
    if (swap != NULL and scratch == NULL) or (stream and stage == NULL):
        free(scratch)
        free(stage)
        raise MemoryError("no scratch memory for byte swapping or streaming")
    cdef const int64_t *rows = NULL if row_index is None else &row_index[0]
    cdef int status
    with nogil:
        status = _run_guarded(kernel, swap, scratch, stage, &src[0], &dst[0], n_blocks, rows, n_rows,
                              row_blocks, row_bytes, row_elems, block_size, type_size)
        if stage != NULL:
            fgg_stream_fence()
        free(scratch)
        free(stage)
    if status == -2:
        raise GGUFError("the data could not be read: the mapped file shrank while it was being read (SIGBUS)")


cdef extern from *:
    """
    #if (defined(__GNUC__) || defined(__clang__)) && (defined(__x86_64__) || defined(__i386__))
    #include <cpuid.h>
    #define FGG_CPU(feature) __builtin_cpu_supports(feature)
    #define FGG_CPU_INIT() __builtin_cpu_init()
    /* clang before 16 has no "f16c" for __builtin_cpu_supports: ask cpuid (leaf 1, ECX bit 29). */
    static int fgg_cpu_has_f16c(void) {
        unsigned int a, b, c, d;
        return __get_cpuid(1, &a, &b, &c, &d) && ((c >> 29) & 1u);
    }
    #else
    #define FGG_CPU(feature) 0
    #define FGG_CPU_INIT() ((void)0)
    static int fgg_cpu_has_f16c(void) { return 0; }
    #endif
    static int fgg_cpu_has_avx2(void) {
        FGG_CPU_INIT();
        return FGG_CPU("avx2") && FGG_CPU("fma") && fgg_cpu_has_f16c() && FGG_CPU("bmi2");
    }
    static int fgg_cpu_has_avx512(void) {
        FGG_CPU_INIT();
        return fgg_cpu_has_avx2() && FGG_CPU("avx512f") && FGG_CPU("avx512bw")
            && FGG_CPU("avx512vl") && FGG_CPU("avx512dq");
    }
    """
    int fgg_cpu_has_avx2() nogil
    int fgg_cpu_has_avx512() nogil


def cpu_supports(str variant):
    """Whether this CPU (and OS) can run the kernel build ``variant``.

    ``"portable"`` is always true; ``"avx2"`` needs AVX2, FMA, F16C and BMI2; ``"avx512"``
    additionally AVX-512 F, BW, VL and DQ -- exactly the flags setup.py builds those variants with.
    """
    if variant == "portable":
        return True
    if variant == "avx2":
        return bool(fgg_cpu_has_avx2())
    if variant == "avx512":
        return bool(fgg_cpu_has_avx512())
    raise ValueError(f"unknown kernel variant {variant!r}")
include "_kernels_matmul.pxi"
