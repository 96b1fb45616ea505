# Big-endian quantized blocks. Included from _kernels.pxi.
#
# A swapper copies whole blocks into scratch with every multi-byte field reversed (the fields come
# from fastgguf._byteswap.BLOCK_FIELDS, loaded once at import), so that the little-endian kernel of
# the type can run on the copy. One table-driven loop serves every type; the per-type functions only
# bind the type id, since swap_fn has no room for it.

from libc.string cimport memcpy

cdef enum:
    _MAX_FIELD_RUNS = 4

cdef struct FieldRun:
    int offset
    int width
    int count

cdef FieldRun _field_runs[TYPE_ID_LIMIT][_MAX_FIELD_RUNS]
cdef int _n_field_runs[TYPE_ID_LIMIT]
cdef bint _swap_known[TYPE_ID_LIMIT]


cdef inline void _reverse(uint8_t *p, int width) noexcept nogil:
    cdef uint8_t t
    cdef int i
    for i in range(width // 2):
        t = p[i]
        p[i] = p[width - 1 - i]
        p[width - 1 - i] = t


cdef void _swap_fields(const uint8_t *src, uint8_t *dst, Py_ssize_t n_blocks, int type_id) noexcept nogil:
    cdef Py_ssize_t type_size = _type_size[type_id], b
    cdef int r, k, width
    cdef uint8_t *p
    memcpy(dst, src, <size_t>(n_blocks * type_size))
    for b in range(n_blocks):
        for r in range(_n_field_runs[type_id]):
            width = _field_runs[type_id][r].width
            p = dst + b * type_size + _field_runs[type_id][r].offset
            for k in range(_field_runs[type_id][r].count):
                _reverse(p, width)
                p += width


cdef void _swap_q4_0(const uint8_t *s, uint8_t *d, Py_ssize_t n) noexcept nogil:
    _swap_fields(s, d, n, TYPE_Q4_0)
cdef void _swap_q4_1(const uint8_t *s, uint8_t *d, Py_ssize_t n) noexcept nogil:
    _swap_fields(s, d, n, TYPE_Q4_1)
cdef void _swap_q5_0(const uint8_t *s, uint8_t *d, Py_ssize_t n) noexcept nogil:
    _swap_fields(s, d, n, TYPE_Q5_0)
cdef void _swap_q5_1(const uint8_t *s, uint8_t *d, Py_ssize_t n) noexcept nogil:
    _swap_fields(s, d, n, TYPE_Q5_1)
cdef void _swap_q8_0(const uint8_t *s, uint8_t *d, Py_ssize_t n) noexcept nogil:
    _swap_fields(s, d, n, TYPE_Q8_0)
cdef void _swap_q8_1(const uint8_t *s, uint8_t *d, Py_ssize_t n) noexcept nogil:
    _swap_fields(s, d, n, TYPE_Q8_1)
cdef void _swap_q2_k(const uint8_t *s, uint8_t *d, Py_ssize_t n) noexcept nogil:
    _swap_fields(s, d, n, TYPE_Q2_K)
cdef void _swap_q3_k(const uint8_t *s, uint8_t *d, Py_ssize_t n) noexcept nogil:
    _swap_fields(s, d, n, TYPE_Q3_K)
cdef void _swap_q4_k(const uint8_t *s, uint8_t *d, Py_ssize_t n) noexcept nogil:
    _swap_fields(s, d, n, TYPE_Q4_K)
cdef void _swap_q5_k(const uint8_t *s, uint8_t *d, Py_ssize_t n) noexcept nogil:
    _swap_fields(s, d, n, TYPE_Q5_K)
cdef void _swap_q6_k(const uint8_t *s, uint8_t *d, Py_ssize_t n) noexcept nogil:
    _swap_fields(s, d, n, TYPE_Q6_K)
cdef void _swap_q8_k(const uint8_t *s, uint8_t *d, Py_ssize_t n) noexcept nogil:
    _swap_fields(s, d, n, TYPE_Q8_K)
cdef void _swap_iq2_xxs(const uint8_t *s, uint8_t *d, Py_ssize_t n) noexcept nogil:
    _swap_fields(s, d, n, TYPE_IQ2_XXS)
cdef void _swap_iq2_xs(const uint8_t *s, uint8_t *d, Py_ssize_t n) noexcept nogil:
    _swap_fields(s, d, n, TYPE_IQ2_XS)
cdef void _swap_iq3_xxs(const uint8_t *s, uint8_t *d, Py_ssize_t n) noexcept nogil:
    _swap_fields(s, d, n, TYPE_IQ3_XXS)
cdef void _swap_iq1_s(const uint8_t *s, uint8_t *d, Py_ssize_t n) noexcept nogil:
    _swap_fields(s, d, n, TYPE_IQ1_S)
cdef void _swap_iq4_nl(const uint8_t *s, uint8_t *d, Py_ssize_t n) noexcept nogil:
    _swap_fields(s, d, n, TYPE_IQ4_NL)
cdef void _swap_iq3_s(const uint8_t *s, uint8_t *d, Py_ssize_t n) noexcept nogil:
    _swap_fields(s, d, n, TYPE_IQ3_S)
cdef void _swap_iq2_s(const uint8_t *s, uint8_t *d, Py_ssize_t n) noexcept nogil:
    _swap_fields(s, d, n, TYPE_IQ2_S)
cdef void _swap_iq4_xs(const uint8_t *s, uint8_t *d, Py_ssize_t n) noexcept nogil:
    _swap_fields(s, d, n, TYPE_IQ4_XS)
cdef void _swap_iq1_m(const uint8_t *s, uint8_t *d, Py_ssize_t n) noexcept nogil:
    _swap_fields(s, d, n, TYPE_IQ1_M)
cdef void _swap_tq1_0(const uint8_t *s, uint8_t *d, Py_ssize_t n) noexcept nogil:
    _swap_fields(s, d, n, TYPE_TQ1_0)
cdef void _swap_tq2_0(const uint8_t *s, uint8_t *d, Py_ssize_t n) noexcept nogil:
    _swap_fields(s, d, n, TYPE_TQ2_0)
cdef void _swap_mxfp4(const uint8_t *s, uint8_t *d, Py_ssize_t n) noexcept nogil:
    _swap_fields(s, d, n, TYPE_MXFP4)
cdef void _swap_nvfp4(const uint8_t *s, uint8_t *d, Py_ssize_t n) noexcept nogil:
    _swap_fields(s, d, n, TYPE_NVFP4)
cdef void _swap_q1_0(const uint8_t *s, uint8_t *d, Py_ssize_t n) noexcept nogil:
    _swap_fields(s, d, n, TYPE_Q1_0)
cdef void _swap_q2_0(const uint8_t *s, uint8_t *d, Py_ssize_t n) noexcept nogil:
    _swap_fields(s, d, n, TYPE_Q2_0)


cdef swap_fn block_swap(int type_id) noexcept nogil:
    """The big-endian block converter of quantized type ``type_id``, or NULL."""
    if not 0 <= type_id < TYPE_ID_LIMIT or not _swap_known[type_id]:
        return NULL
    if type_id == TYPE_Q4_0: return _swap_q4_0
    if type_id == TYPE_Q4_1: return _swap_q4_1
    if type_id == TYPE_Q5_0: return _swap_q5_0
    if type_id == TYPE_Q5_1: return _swap_q5_1
    if type_id == TYPE_Q8_0: return _swap_q8_0
    if type_id == TYPE_Q8_1: return _swap_q8_1
    if type_id == TYPE_Q2_K: return _swap_q2_k
    if type_id == TYPE_Q3_K: return _swap_q3_k
    if type_id == TYPE_Q4_K: return _swap_q4_k
    if type_id == TYPE_Q5_K: return _swap_q5_k
    if type_id == TYPE_Q6_K: return _swap_q6_k
    if type_id == TYPE_Q8_K: return _swap_q8_k
    if type_id == TYPE_IQ2_XXS: return _swap_iq2_xxs
    if type_id == TYPE_IQ2_XS: return _swap_iq2_xs
    if type_id == TYPE_IQ3_XXS: return _swap_iq3_xxs
    if type_id == TYPE_IQ1_S: return _swap_iq1_s
    if type_id == TYPE_IQ4_NL: return _swap_iq4_nl
    if type_id == TYPE_IQ3_S: return _swap_iq3_s
    if type_id == TYPE_IQ2_S: return _swap_iq2_s
    if type_id == TYPE_IQ4_XS: return _swap_iq4_xs
    if type_id == TYPE_IQ1_M: return _swap_iq1_m
    if type_id == TYPE_TQ1_0: return _swap_tq1_0
    if type_id == TYPE_TQ2_0: return _swap_tq2_0
    if type_id == TYPE_MXFP4: return _swap_mxfp4
    if type_id == TYPE_NVFP4: return _swap_nvfp4
    if type_id == TYPE_Q1_0: return _swap_q1_0
    if type_id == TYPE_Q2_0: return _swap_q2_0
    return NULL


def _load_swap_table():
    from fastgguf._byteswap import BLOCK_FIELDS

    cdef int i, r
    for i in range(TYPE_ID_LIMIT):
        _n_field_runs[i] = 0
        _swap_known[i] = False
    for type_, runs in BLOCK_FIELDS.items():
        if _block_size[type_] == 1:
            continue  # plain types have their own swappers (_kernels_float.pxi)
        if len(runs) > _MAX_FIELD_RUNS:
            raise ImportError(f"{type_.name}: more byte-swapped field runs than the kernel table holds")
        for r, (offset, width, count) in enumerate(runs):
            if offset < 0 or width not in (2, 4, 8) or offset + width * count > _type_size[type_]:
                raise ImportError(f"{type_.name}: byte-swapped field {(offset, width, count)} outside the block")
            _field_runs[type_][r].offset = offset
            _field_runs[type_][r].width = width
            _field_runs[type_][r].count = count
        _n_field_runs[type_] = len(runs)
        _swap_known[type_] = True
