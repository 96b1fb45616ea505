# Bounds-checked unaligned loads over a byte range: the only code that reads file bytes during the header walk.
#
# Every take_* returns False, leaving the cursor where it was, when fewer bytes remain than it needs;
# the caller turns that into an error with the offset. Multi-byte fields are copied out with memcpy
# (the format packs fields with no alignment) and byte-swapped when the file's order is not the host's.

from libc.stdint cimport int64_t, uint8_t, uint16_t, uint32_t, uint64_t
from libc.string cimport memcpy


cdef struct Cursor:
    const uint8_t *start  # byte 0 of the file: offsets are reported relative to it
    const uint8_t *pos
    const uint8_t *end
    bint swap             # file byte order differs from the host's


cdef inline size_t cursor_offset(const Cursor *c) noexcept nogil:
    return <size_t>(c.pos - c.start)


cdef inline size_t cursor_left(const Cursor *c) noexcept nogil:
    return <size_t>(c.end - c.pos)


cdef inline uint16_t bswap16(uint16_t v) noexcept nogil:
    return <uint16_t>((v >> 8) | (v << 8))


cdef inline uint32_t bswap32(uint32_t v) noexcept nogil:
    return ((v >> 24) | ((v >> 8) & 0xFF00u) | ((v << 8) & 0xFF0000u) | (v << 24))


cdef inline uint64_t bswap64(uint64_t v) noexcept nogil:
    return (<uint64_t>bswap32(<uint32_t>v) << 32) | bswap32(<uint32_t>(v >> 32))


cdef inline bint skip(Cursor *c, uint64_t n) noexcept nogil:
    if n > cursor_left(c):
        return False
    c.pos += n
    return True


cdef inline bint take_u8(Cursor *c, uint8_t *out) noexcept nogil:
    if c.pos >= c.end:
        return False
    out[0] = c.pos[0]
    c.pos += 1
    return True


cdef inline bint take_u16(Cursor *c, uint16_t *out) noexcept nogil:
    cdef uint16_t v
    if cursor_left(c) < 2:
        return False
    memcpy(&v, c.pos, 2)
    c.pos += 2
    out[0] = bswap16(v) if c.swap else v
    return True


cdef inline bint take_u32(Cursor *c, uint32_t *out) noexcept nogil:
    cdef uint32_t v
    if cursor_left(c) < 4:
        return False
    memcpy(&v, c.pos, 4)
    c.pos += 4
    out[0] = bswap32(v) if c.swap else v
    return True


cdef inline bint take_u64(Cursor *c, uint64_t *out) noexcept nogil:
    cdef uint64_t v
    if cursor_left(c) < 8:
        return False
    memcpy(&v, c.pos, 8)
    c.pos += 8
    out[0] = bswap64(v) if c.swap else v
    return True


cdef inline bint take_f32(Cursor *c, float *out) noexcept nogil:
    cdef uint32_t bits
    if not take_u32(c, &bits):
        return False
    memcpy(out, &bits, 4)
    return True


cdef inline bint take_f64(Cursor *c, double *out) noexcept nogil:
    cdef uint64_t bits
    if not take_u64(c, &bits):
        return False
    memcpy(out, &bits, 8)
    return True


cdef inline bint take_len(Cursor *c, bint wide, uint64_t *out) noexcept nogil:
    """A count or length: u64 in GGUF v2/v3, u32 in v1."""
    cdef uint32_t narrow
    if wide:
        return take_u64(c, out)
    if not take_u32(c, &narrow):
        return False
    out[0] = narrow
    return True
