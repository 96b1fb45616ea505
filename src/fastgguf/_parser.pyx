"""The GGUF header walk.

``parse(buffer)`` walks magic, version, counts, key/values and tensor infos with a
:class:`Cursor`, validating as it goes, and returns a :class:`ParsedHeader`: one small
record per key and per tensor (offsets into the buffer, types, counts). Array elements
never become Python objects here; string and nested arrays only get a ``uint64`` array
of element offsets, so that the reader can decode any element later without walking again.

The decode_* functions turn those offsets into Python values on demand.
"""

import sys

import numpy as np

from cpython.bytes cimport PyBytes_FromStringAndSize
from cpython.unicode cimport Py_UCS1, Py_UCS2, PyUnicode_1BYTE_DATA, PyUnicode_2BYTE_DATA, PyUnicode_4BYTE_DATA, PyUnicode_DecodeUTF8
from libc.string cimport memcpy
from libc.stdint cimport INT64_MAX, int8_t, int16_t, int32_t, int64_t, uint8_t, uint16_t, uint32_t, uint64_t

from fastgguf._c.cursor cimport (
    Cursor, cursor_left, cursor_offset, skip, take_f32, take_f64, take_len, take_u8, take_u16, take_u32,
    take_u64,
)

from fastgguf.errors import GGUFError
from fastgguf.types import REMOVED_TYPE_IDS, TYPE_TRAITS

cdef enum:
    GGUF_MAGIC = 0x46554747          # "GGUF" read as a little-endian u32
    MAX_STRING_BYTES = 1 << 30       # ggml's limit on one string
    MAX_DIMS = 4
    MAX_NAME_BYTES = 64              # tensor names must be shorter (ggml's GGML_MAX_NAME)
    MAX_ARRAY_DEPTH = 32             # arrays of arrays: bounded so a file cannot exhaust the C stack
    DEFAULT_ALIGNMENT = 32
    TYPE_TABLE_SIZE = 64

    VT_UINT8 = 0
    VT_INT8 = 1
    VT_UINT16 = 2
    VT_INT16 = 3
    VT_UINT32 = 4
    VT_INT32 = 5
    VT_FLOAT32 = 6
    VT_BOOL = 7
    VT_STRING = 8
    VT_ARRAY = 9
    VT_UINT64 = 10
    VT_INT64 = 11
    VT_FLOAT64 = 12
    VT_LAST = 12

cdef bint HOST_IS_BIG = sys.byteorder == "big"

# Block layout per ggml type id, copied once from the Python type table; block_size 0 = not a type.
cdef int64_t BLOCK_SIZE[TYPE_TABLE_SIZE]
cdef int64_t TYPE_SIZE[TYPE_TABLE_SIZE]
for _i in range(TYPE_TABLE_SIZE):
    BLOCK_SIZE[_i] = 0
    TYPE_SIZE[_i] = 0
for _type, _traits in TYPE_TRAITS.items():
    BLOCK_SIZE[int(_type)] = _traits.block_size
    TYPE_SIZE[int(_type)] = _traits.type_size


cdef inline int64_t scalar_size(uint32_t vtype) noexcept nogil:
    """Bytes of one value of a fixed-size type; 0 for STRING/ARRAY/unknown."""
    if vtype == VT_UINT8 or vtype == VT_INT8 or vtype == VT_BOOL:
        return 1
    if vtype == VT_UINT16 or vtype == VT_INT16:
        return 2
    if vtype == VT_UINT32 or vtype == VT_INT32 or vtype == VT_FLOAT32:
        return 4
    if vtype == VT_UINT64 or vtype == VT_INT64 or vtype == VT_FLOAT64:
        return 8
    return 0


cdef extern from "Python.h":
    object PyUnicode_New(Py_ssize_t size, Py_UCS4 maxchar)


cdef inline object utf8(const uint8_t *p, uint64_t n):
    """Decode UTF-8 to str; invalid bytes survive as lone surrogates (``surrogateescape``).

    Vocabulary strings are short; CPython's general decoder spends most of its time on
    set-up for them, so valid input is measured, allocated once and filled here.
    """
    cdef uint64_t i = 0, n_chars = 0
    cdef Py_UCS4 max_char = 0, code
    cdef uint8_t lead
    cdef object text
    while i < n:  # pass 1: validate, count characters, find the widest
        lead = p[i]
        if lead < 0x80:
            code = lead
            i += 1
        elif lead >= 0xC2 and lead < 0xE0 and i + 1 < n and (p[i + 1] & 0xC0) == 0x80:
            code = ((lead & 0x1F) << 6) | (p[i + 1] & 0x3F)
            i += 2
        elif (lead >= 0xE0 and lead < 0xF0 and i + 2 < n and (p[i + 1] & 0xC0) == 0x80
              and (p[i + 2] & 0xC0) == 0x80):
            code = ((lead & 0x0F) << 12) | ((p[i + 1] & 0x3F) << 6) | (p[i + 2] & 0x3F)
            if code < 0x800 or (code >= 0xD800 and code < 0xE000):
                return slow_utf8(p, n)  # overlong, or an encoded surrogate
            i += 3
        elif (lead >= 0xF0 and lead < 0xF5 and i + 3 < n and (p[i + 1] & 0xC0) == 0x80
              and (p[i + 2] & 0xC0) == 0x80 and (p[i + 3] & 0xC0) == 0x80):
            code = ((lead & 0x07) << 18) | ((p[i + 1] & 0x3F) << 12) | ((p[i + 2] & 0x3F) << 6) | (p[i + 3] & 0x3F)
            if code < 0x10000 or code > 0x10FFFF:
                return slow_utf8(p, n)
            i += 4
        else:
            return slow_utf8(p, n)
        if code > max_char:
            max_char = code
        n_chars += 1
    text = PyUnicode_New(<Py_ssize_t>n_chars, max_char)
    if max_char < 0x80:
        memcpy(PyUnicode_1BYTE_DATA(text), p, n)
    elif max_char < 0x100:
        fill_utf8(p, n, PyUnicode_1BYTE_DATA(text), NULL, NULL)
    elif max_char < 0x10000:
        fill_utf8(p, n, NULL, PyUnicode_2BYTE_DATA(text), NULL)
    else:
        fill_utf8(p, n, NULL, NULL, PyUnicode_4BYTE_DATA(text))
    return text


cdef inline void fill_utf8(const uint8_t *p, uint64_t n, Py_UCS1 *out1, Py_UCS2 *out2, Py_UCS4 *out4) noexcept:
    """Pass 2 of utf8(): write the characters of already-validated UTF-8 into the string's storage."""
    cdef uint64_t i = 0, j = 0
    cdef Py_UCS4 code
    cdef uint8_t lead
    while i < n:
        lead = p[i]
        if lead < 0x80:
            code = lead
            i += 1
        elif lead < 0xE0:
            code = ((lead & 0x1F) << 6) | (p[i + 1] & 0x3F)
            i += 2
        elif lead < 0xF0:
            code = ((lead & 0x0F) << 12) | ((p[i + 1] & 0x3F) << 6) | (p[i + 2] & 0x3F)
            i += 3
        else:
            code = ((lead & 0x07) << 18) | ((p[i + 1] & 0x3F) << 12) | ((p[i + 2] & 0x3F) << 6) | (p[i + 3] & 0x3F)
            i += 4
        if out1 != NULL:
            out1[j] = <Py_UCS1>code
        elif out2 != NULL:
            out2[j] = <Py_UCS2>code
        else:
            out4[j] = code
        j += 1


cdef object slow_utf8(const uint8_t *p, uint64_t n):
    # surrogateescape: invalid UTF-8 survives as lone surrogates, so .encode("utf-8", "surrogateescape")
    # gives the file's exact bytes back.
    return PyUnicode_DecodeUTF8(<const char *>p, <Py_ssize_t>n, "surrogateescape")


cdef int fail(str message, size_t offset) except -1:
    raise GGUFError(message, offset)


cdef inline int need(bint ok, const Cursor *c, str what, object subject=None) except -1:
    # The message is built only on failure: this runs once per field of a 256k-entry vocabulary.
    if not ok:
        if subject is not None:
            what = f"{what} {subject!r}"
        fail(f"file ends inside {what}: {cursor_left(c)} bytes left", cursor_offset(c))
    return 0


cdef int take_string(Cursor *c, bint wide, const uint8_t **data, uint64_t *length, str what,
                     object subject=None) except -1:
    cdef size_t at = cursor_offset(c)
    if not take_len(c, wide, length):
        need(False, c, f"the length of {what}", subject)
    if length[0] > MAX_STRING_BYTES or length[0] > cursor_left(c):
        if subject is not None:
            what = f"{what} {subject!r}"
        if length[0] > MAX_STRING_BYTES:
            fail(f"{what} claims {length[0]} bytes, over the 1 GiB limit", at)
        fail(f"{what} claims {length[0]} bytes but only {cursor_left(c)} remain", at)
    data[0] = c.pos
    c.pos += length[0]
    return 0


cdef bint walk_strings(Cursor *c, bint wide, uint64_t count, uint64_t *offsets) noexcept nogil:
    """Step over ``count`` strings, recording where each starts; False (cursor on the bad one) on a bad one.

    The hot loop of opening a model: a vocabulary has 30k-260k strings.
    """
    cdef uint64_t i, length
    cdef const uint8_t *start
    for i in range(count):
        start = c.pos
        offsets[i] = <uint64_t>(start - c.start)
        if not take_len(c, wide, &length) or length > MAX_STRING_BYTES or length > cursor_left(c):
            c.pos = start
            return False
        c.pos += length
    return True


cdef int check_count(const Cursor *c, uint64_t count, uint64_t min_bytes_each, str what, size_t at) except -1:
    """Reject a count that cannot fit in the bytes left, before anything is allocated for it."""
    if min_bytes_each and count > cursor_left(c) // min_bytes_each:
        fail(f"{what} count {count} cannot fit in the {cursor_left(c)} bytes left", at)
    return 0


cdef int skip_array(Cursor *c, bint wide, int depth) except -1:
    """Validate and step over one array value (element type, count, elements), nested ones included."""
    cdef size_t at = cursor_offset(c)
    cdef uint32_t elem_type
    cdef uint64_t count, i, length
    cdef const uint8_t *data
    if depth > MAX_ARRAY_DEPTH:
        fail(f"arrays nested more than {MAX_ARRAY_DEPTH} deep", at)
    need(take_u32(c, &elem_type), c, "an array's element type")
    if elem_type > VT_LAST:
        fail(f"array element type {elem_type} is not a GGUF value type", at)
    need(take_len(c, wide, &count), c, "an array's length")
    if elem_type == VT_STRING:
        check_count(c, count, 8 if wide else 4, "string array", at)
        for i in range(count):
            take_string(c, wide, &data, &length, "an array string")
    elif elem_type == VT_ARRAY:
        check_count(c, count, 12 if wide else 8, "nested array", at)
        for i in range(count):
            skip_array(c, wide, depth + 1)
    else:
        check_count(c, count, scalar_size(elem_type), "array element", at)
        skip(c, count * scalar_size(elem_type))
    return 0


cdef object walk_array(Cursor *c, bint wide, int depth):
    """Validate one array and return ``(elem_type, count, data_offset, elem_offsets)``.

    ``elem_offsets`` (uint64, absolute) locates each element of a string or nested array; None otherwise.
    """
    cdef size_t at = cursor_offset(c)
    cdef uint32_t elem_type
    cdef uint64_t count, i, length
    cdef const uint8_t *data
    cdef uint64_t[::1] offsets
    cdef object offsets_array = None
    cdef size_t data_offset
    if depth > MAX_ARRAY_DEPTH:
        fail(f"arrays nested more than {MAX_ARRAY_DEPTH} deep", at)
    need(take_u32(c, &elem_type), c, "an array's element type")
    if elem_type > VT_LAST:
        fail(f"array element type {elem_type} is not a GGUF value type", at)
    need(take_len(c, wide, &count), c, "an array's length")
    data_offset = cursor_offset(c)
    if elem_type == VT_STRING:
        check_count(c, count, 8 if wide else 4, "string array", at)
        offsets_array = np.empty(count, dtype=np.uint64)
        offsets = offsets_array
        if count and not walk_strings(c, wide, count, &offsets[0]):
            take_string(c, wide, &data, &length, "an array string")  # raises for the string that stopped the walk
    elif elem_type == VT_ARRAY:
        check_count(c, count, 12 if wide else 8, "nested array", at)
        offsets_array = np.empty(count, dtype=np.uint64)
        offsets = offsets_array
        for i in range(count):
            offsets[i] = cursor_offset(c)
            skip_array(c, wide, depth + 1)
    else:
        check_count(c, count, scalar_size(elem_type), "array element", at)
        skip(c, count * scalar_size(elem_type))
    if offsets_array is not None:
        offsets_array.flags.writeable = False
    return (elem_type, count, data_offset, offsets_array)


cdef class KeyValue:
    """Where one metadata entry lives: key, value type, and offsets into the file."""

    cdef readonly str key
    cdef readonly int value_type
    cdef readonly Py_ssize_t key_offset       # offset of the key's length field
    cdef readonly Py_ssize_t value_offset     # offset of the value (of the element type field, for arrays)
    cdef readonly int element_type            # arrays only; -1 otherwise
    cdef readonly Py_ssize_t count            # arrays only; 1 otherwise
    cdef readonly Py_ssize_t data_offset      # arrays: first element; scalars: the value
    cdef readonly object element_offsets      # string / nested arrays: uint64 array; else None

    def __repr__(self):
        return f"KeyValue({self.key!r}, type={self.value_type}, at={self.key_offset})"


cdef class ParsedHeader:
    """Everything the header says, as compact records."""

    cdef readonly int version
    cdef readonly bint big_endian
    cdef readonly bint wide                   # lengths/counts are u64 (v2+) rather than u32 (v1)
    cdef readonly bint swap                   # file byte order is not the host's
    cdef readonly Py_ssize_t file_size
    cdef readonly Py_ssize_t alignment
    cdef readonly Py_ssize_t tensor_infos_offset
    cdef readonly Py_ssize_t header_end       # first byte after the tensor infos
    cdef readonly Py_ssize_t data_offset      # absolute start of the data section
    cdef readonly list kvs                    # [KeyValue]
    # tensors: [(name, dims in ggml order, type id, absolute offset, n_elements, nbytes)]
    cdef readonly list tensors


cdef bint empty_shape_fits(list dims):
    """Whether numpy can describe the shape of a tensor with a zero dimension.

    A zero dimension hides any other: ggml accepts (0, 2**62), but numpy sizes a shape as the product
    of its dimensions with zeros counted as 1, and refuses ones that overflow (8 bytes an element, the
    widest a result may ask for).
    """
    span = 1
    for dim in dims:
        span *= max(dim, 1)
    return span <= INT64_MAX // 8


def parse(buffer):
    """Walk and validate a GGUF header.

    Parameters
    ----------
    buffer : buffer
        The whole file (a read-only mmap, bytes, ...).

    Returns
    -------
    ParsedHeader

    Raises
    ------
    GGUFError
        With the byte offset of the first problem found.
    """
    cdef const uint8_t[::1] view = buffer
    cdef Py_ssize_t size = view.shape[0]
    cdef Cursor c
    cdef uint32_t magic, version, vtype, n_dims, type_id, alignment_value
    cdef uint64_t n_tensors, n_kv, i, j, length, dim, n_elements, n_blocks, offset
    cdef const uint8_t *data
    cdef size_t at
    cdef ParsedHeader header = ParsedHeader.__new__(ParsedHeader)
    cdef KeyValue kv
    cdef int64_t block_size, type_size
    cdef bint wide

    if size == 0:
        fail("empty file: not a GGUF", 0)
    c.start = &view[0]
    c.pos = c.start
    c.end = c.start + size
    c.swap = False
    need(take_u32(&c, &magic), &c, "the magic")
    if magic != GGUF_MAGIC:
        fail("bad magic: not a GGUF file", 0)
    need(take_u32(&c, &version), &c, "the version")
    # There is no byte-order flag: a big-endian file's version reads byte-swapped (e.g. 0x03000000).
    header.big_endian = (version & 0xFFFF) == 0 and version != 0
    if header.big_endian:
        version = ((version >> 24) | ((version >> 8) & 0xFF00u) | ((version << 8) & 0xFF0000u) | (version << 24))
    if version < 1 or version > 3:
        fail(f"unsupported GGUF version {version}", 4)
    header.version = version
    header.swap = header.big_endian != HOST_IS_BIG
    c.swap = header.swap
    wide = version >= 2
    header.wide = wide
    header.file_size = size

    at = cursor_offset(&c)
    need(take_len(&c, wide, &n_tensors), &c, "the tensor count")
    at = cursor_offset(&c)
    need(take_len(&c, wide, &n_kv), &c, "the key/value count")
    check_count(&c, n_kv, 14 if wide else 10, "key/value", at)

    header.kvs = []
    seen_keys = set()
    alignment = DEFAULT_ALIGNMENT
    for i in range(n_kv):
        at = cursor_offset(&c)
        take_string(&c, wide, &data, &length, "a key")
        if length == 0:
            fail("empty key", at)
        key = utf8(data, length)
        if key in seen_keys:
            fail(f"duplicate key {key!r}", at)
        seen_keys.add(key)
        kv = KeyValue.__new__(KeyValue)
        kv.key = key
        kv.key_offset = at
        need(take_u32(&c, &vtype), &c, "the type of", key)
        if vtype > VT_LAST:
            fail(f"value type {vtype} of {key!r} is not a GGUF value type", cursor_offset(&c) - 4)
        kv.value_type = vtype
        kv.value_offset = cursor_offset(&c)
        kv.element_type = -1
        kv.count = 1
        kv.data_offset = kv.value_offset
        kv.element_offsets = None
        if vtype == VT_STRING:
            take_string(&c, wide, &data, &length, "the value of", key)
        elif vtype == VT_ARRAY:
            kv.element_type, kv.count, kv.data_offset, kv.element_offsets = walk_array(&c, wide, 1)
        else:
            need(skip(&c, scalar_size(vtype)), &c, "the value of", key)
        if key == "general.alignment":
            if vtype != VT_UINT32:
                fail("general.alignment must be a UINT32", kv.value_offset)
            alignment_value = decode_u32_at(&c, kv.value_offset)
            if alignment_value == 0 or (alignment_value & (alignment_value - 1)) != 0:
                fail(f"general.alignment {alignment_value} is not a non-zero power of two", kv.value_offset)
            alignment = alignment_value
        header.kvs.append(kv)
    header.alignment = alignment

    header.tensor_infos_offset = cursor_offset(&c)
    check_count(&c, n_tensors, 24 if wide else 20, "tensor", 8)
    header.tensors = []
    seen_names = set()
    for i in range(n_tensors):
        at = cursor_offset(&c)
        take_string(&c, wide, &data, &length, "a tensor name")
        if length >= MAX_NAME_BYTES:
            fail(f"tensor name of {length} bytes: names must be under {MAX_NAME_BYTES}", at)
        name = utf8(data, length)
        if name in seen_names:
            fail(f"duplicate tensor name {name!r}", at)
        seen_names.add(name)
        need(take_u32(&c, &n_dims), &c, "the dimension count of", name)
        if n_dims > MAX_DIMS:
            fail(f"tensor {name!r} has {n_dims} dimensions, at most {MAX_DIMS} allowed", cursor_offset(&c) - 4)
        dims = []
        n_elements = 1
        for j in range(n_dims):
            need(take_len(&c, wide, &dim), &c, "the dimensions of", name)
            if dim > <uint64_t>INT64_MAX:
                fail(f"tensor {name!r} has a negative dimension", cursor_offset(&c) - 8)
            if dim != 0 and n_elements > <uint64_t>INT64_MAX // dim:
                fail(f"tensor {name!r}: element count overflows", cursor_offset(&c) - (8 if wide else 4))
            n_elements *= dim
            dims.append(dim)
        need(take_u32(&c, &type_id), &c, "the type of", name)
        block_size = BLOCK_SIZE[type_id] if type_id < TYPE_TABLE_SIZE else 0
        if block_size == 0:
            state = "removed" if type_id in REMOVED_TYPE_IDS else "unknown"
            fail(f"tensor {name!r} has {state} ggml type id {type_id}", cursor_offset(&c) - 4)
        type_size = TYPE_SIZE[type_id]
        if (dims[0] if n_dims else 1) % block_size != 0:
            fail(f"tensor {name!r}: first dimension {dims[0] if n_dims else 1} is not a multiple of "
                 f"the block size {block_size}", cursor_offset(&c) - 4)
        n_blocks = n_elements // block_size
        if n_blocks > <uint64_t>INT64_MAX // <uint64_t>type_size:
            fail(f"tensor {name!r}: byte size overflows", cursor_offset(&c) - 4)
        if n_elements == 0 and not empty_shape_fits(dims):
            fail(f"tensor {name!r}: empty, but its other dimensions {dims} are too large for an array shape",
                 cursor_offset(&c) - 4)
        at = cursor_offset(&c)
        need(take_u64(&c, &offset), &c, "the data offset of", name)
        header.tensors.append((name, tuple(dims), type_id, offset, n_elements, n_blocks * type_size, at))

    header.header_end = cursor_offset(&c)
    header.data_offset = (header.header_end + alignment - 1) // alignment * alignment
    if header.tensors and header.data_offset > size:
        fail(f"data section would start at {header.data_offset}, past the end of the {size}-byte file",
             header.header_end)
    data_size = size - header.data_offset
    # Make offsets absolute and check that each tensor's bytes lie inside the file.
    for i, (name, dims, type_id, offset, n_elements, nbytes, at) in enumerate(header.tensors):
        if offset % alignment:
            fail(f"tensor {name!r}: data offset {offset} is not a multiple of the alignment {alignment}", at)
        if offset > data_size or nbytes > data_size - offset:
            fail(f"tensor {name!r}: data ({nbytes} bytes at data offset {offset}) extends past the end "
                 f"of the file", at)
        header.tensors[i] = (name, dims, type_id, header.data_offset + offset, n_elements, nbytes)
    return header


cdef uint32_t decode_u32_at(const Cursor *file, size_t offset) noexcept nogil:
    cdef Cursor c = file[0]
    cdef uint32_t v = 0
    c.pos = c.start + offset
    take_u32(&c, &v)
    return v


cdef inline int cursor_at(Cursor *c, const uint8_t[::1] view, Py_ssize_t offset, bint swap) except -1:
    if offset < 0 or offset > view.shape[0]:
        raise GGUFError("offset outside the file", offset)
    c.start = &view[0]
    c.pos = c.start + offset
    c.end = c.start + view.shape[0]
    c.swap = swap
    return 0


def decode_scalar(buffer, Py_ssize_t offset, int value_type, bint swap):
    """Decode the fixed-size or string value at ``offset`` into a Python object."""
    cdef const uint8_t[::1] view = buffer
    cdef Cursor c
    cdef uint8_t u8
    cdef uint16_t u16
    cdef uint32_t u32
    cdef uint64_t u64, length
    cdef float f32
    cdef double f64
    cdef const uint8_t *data
    cursor_at(&c, view, offset, swap)
    if value_type == VT_UINT8:
        need(take_u8(&c, &u8), &c, "a UINT8")
        return u8
    if value_type == VT_INT8:
        need(take_u8(&c, &u8), &c, "an INT8")
        return <int8_t>u8
    if value_type == VT_BOOL:
        need(take_u8(&c, &u8), &c, "a BOOL")
        return u8 != 0
    if value_type == VT_UINT16:
        need(take_u16(&c, &u16), &c, "a UINT16")
        return u16
    if value_type == VT_INT16:
        need(take_u16(&c, &u16), &c, "an INT16")
        return <int16_t>u16
    if value_type == VT_UINT32:
        need(take_u32(&c, &u32), &c, "a UINT32")
        return u32
    if value_type == VT_INT32:
        need(take_u32(&c, &u32), &c, "an INT32")
        return <int32_t>u32
    if value_type == VT_UINT64:
        need(take_u64(&c, &u64), &c, "a UINT64")
        return u64
    if value_type == VT_INT64:
        need(take_u64(&c, &u64), &c, "an INT64")
        return <int64_t>u64
    if value_type == VT_FLOAT32:
        need(take_f32(&c, &f32), &c, "a FLOAT32")
        return f32
    if value_type == VT_FLOAT64:
        need(take_f64(&c, &f64), &c, "a FLOAT64")
        return f64
    raise GGUFError(f"value type {value_type} is not a scalar type", offset)


def decode_string(buffer, Py_ssize_t offset, bint wide, bint swap, bint as_bytes=False):
    """Decode the string whose length field is at ``offset`` (str, or its exact bytes)."""
    cdef const uint8_t[::1] view = buffer
    cdef Cursor c
    cdef const uint8_t *data
    cdef uint64_t length
    cursor_at(&c, view, offset, swap)
    take_string(&c, wide, &data, &length, "a string")
    if as_bytes:
        return PyBytes_FromStringAndSize(<const char *>data, <Py_ssize_t>length)
    return utf8(data, length)


def decode_strings(buffer, const uint64_t[:] offsets, bint wide, bint swap):
    """Decode the strings whose length fields are at ``offsets`` into a list of str."""
    cdef const uint8_t[::1] view = buffer
    cdef Cursor c
    cdef const uint8_t *data
    cdef uint64_t length
    cdef Py_ssize_t i, n = offsets.shape[0]
    cdef list result = [None] * n
    cursor_at(&c, view, 0, swap)
    for i in range(n):
        if offsets[i] > <uint64_t>view.shape[0]:
            raise GGUFError("string offset outside the file", offsets[i])
        c.pos = c.start + offsets[i]
        if not take_len(&c, wide, &length) or length > cursor_left(&c):
            c.pos = c.start + offsets[i]
            take_string(&c, wide, &data, &length, "a string")  # raises with the details
        result[i] = utf8(c.pos, length)
    return result


def read_array(buffer, Py_ssize_t offset, bint wide, bint swap):
    """Walk the array value at ``offset`` again: ``(elem_type, count, data_offset, elem_offsets)``.

    Used for the elements of nested arrays, whose own element offsets the first walk did not keep.
    """
    cdef const uint8_t[::1] view = buffer
    cdef Cursor c
    cursor_at(&c, view, offset, swap)
    return walk_array(&c, wide, 2)
