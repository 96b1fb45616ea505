# Declarations of prefault.h.

cdef extern from "prefault.h":
    int fgg_prefault(const void *p, size_t n) nogil
