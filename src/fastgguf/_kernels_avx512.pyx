# Kernels, "avx512" build. Every variant module is this same one line: the shared source
# compiled with different ISA flags (setup.py), so that fastgguf.dequant can pick the fastest one
# this CPU runs while all of them give the same bits.
include "_c/kernels.pxi"
