"""The "avx2" kernel build: the same functions as every _kernels_* module (one source, _c/kernels.pxi)."""

from ._kernels_portable import *  # noqa: F403
