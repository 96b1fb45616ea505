# Declarations of cpu.h.

cdef extern from "cpu.h":
    int fgg_cpu_has_avx2() nogil
    int fgg_cpu_has_avx512() nogil
    int fgg_cpu_avx512_full_width() nogil
