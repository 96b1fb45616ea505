"""Build the Cython extensions.

Compiler directives and flags live here and nowhere else.

Environment switches
--------------------
FASTGGUF_DEBUG=1
    Cython bounds/wraparound checks on, ``-O1 -g``, frame pointers kept: a
    build for sanitizers and debuggers.
FASTGGUF_SANITIZE=address[,undefined]
    Also compile and link with ``-fsanitize=...`` (run Python with the
    sanitizer runtime in ``LD_PRELOAD``).
FASTGGUF_FUZZ=1
    Instrument for coverage-guided fuzzing (clang: ``-fsanitize=fuzzer-no-link``).
FASTGGUF_NO_SIMD=1
    Kernels without intrinsics (``-DFGG_NO_SIMD``): the plain C paths non-x86 machines compile,
    so that x86 CI can test them too.
"""

import glob
import os
import platform
import sys

import numpy as np
from Cython.Build import cythonize
from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext

DEBUG = os.environ.get("FASTGGUF_DEBUG", "") not in ("", "0")
SANITIZE = os.environ.get("FASTGGUF_SANITIZE", "")
FUZZ = os.environ.get("FASTGGUF_FUZZ", "") not in ("", "0")
NO_SIMD = os.environ.get("FASTGGUF_NO_SIMD", "") not in ("", "0")

DIRECTIVES = {
    "language_level": 3,
    "boundscheck": DEBUG,
    "wraparound": DEBUG,
    "initializedcheck": DEBUG,
    "cdivision": True,
    "nonecheck": False,
    "embedsignature": True,
    "freethreading_compatible": True,
}

IS_MSVC = sys.platform == "win32"
IS_X86 = platform.machine().lower() in ("x86_64", "amd64", "i686", "x86")

if IS_MSVC:
    BASE_FLAGS = ["/O2", "/fp:precise"]
    LINK_FLAGS = []
else:
    # -ffp-contract=off: no fused multiply-add, so results are the same bits on every CPU path.
    BASE_FLAGS = ["-ffp-contract=off", "-fno-strict-aliasing"]
    BASE_FLAGS += ["-O1", "-g", "-fno-omit-frame-pointer"] if DEBUG else ["-O3"]
    LINK_FLAGS = []
    if SANITIZE:
        BASE_FLAGS.append(f"-fsanitize={SANITIZE}")
        LINK_FLAGS.append(f"-fsanitize={SANITIZE}")
    if FUZZ:
        BASE_FLAGS.append("-fsanitize=fuzzer-no-link")
        LINK_FLAGS.append("-fsanitize=fuzzer-no-link")

# The dequantization kernels are compiled once per CPU level; fastgguf.dequant picks one at import.
# -mprefer-vector-width=128: the kernels' short fixed loops (16/32 bytes per block) are fully
# unrolled by gcc before vectorizing, and with 256/512-bit vectors it then leaves the byte work
# scalar (measured 5-8x slower); the wide conversions are written with intrinsics instead.
KERNEL_VARIANTS = {"portable": ["-DFGG_NO_SIMD"] if NO_SIMD else []}
if IS_X86 and not IS_MSVC:
    KERNEL_VARIANTS["avx2"] = ["-mavx2", "-mfma", "-mf16c", "-mbmi2", "-mprefer-vector-width=128"]
    KERNEL_VARIANTS["avx512"] = [
        "-mavx512f", "-mavx512bw", "-mavx512vl", "-mavx512dq", "-mfma", "-mf16c", "-mbmi2",
        "-mprefer-vector-width=128",
    ]


def extension(name, extra_flags=()):
    return Extension(
        f"fastgguf.{name}",
        [f"src/fastgguf/{name}.pyx"],
        depends=sorted(glob.glob("src/fastgguf/_c/*.*")),  # the C layer they include and cimport
        include_dirs=[np.get_include(), "src/fastgguf/_c"],
        define_macros=[("NPY_NO_DEPRECATED_API", "NPY_2_0_API_VERSION")],
        extra_compile_args=BASE_FLAGS + list(extra_flags),
        extra_link_args=LINK_FLAGS,
    )


extensions = [extension("_parser")]
extensions += [extension(f"_kernels_{variant}", flags) for variant, flags in KERNEL_VARIANTS.items()]


class ParallelBuildExt(build_ext):
    """Compile the extensions side by side unless ``-j`` says otherwise: each kernel build takes a
    minute or more, and ``pip install`` passes no ``-j``."""

    def finalize_options(self):
        super().finalize_options()
        if not self.parallel:
            self.parallel = os.cpu_count() or 1


setup(
    cmdclass={"build_ext": ParallelBuildExt},
    ext_modules=cythonize(
        extensions,
        compiler_directives=DIRECTIVES,
        include_path=["src"],  # cimport fastgguf._c.<header>
        annotate=False,
    ),
)
