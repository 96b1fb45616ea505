"""Write reference vectors for the quantizers from a build of ggml's ``libggml-base``.

The vectors are what the tests compare ``fastgguf.quantize`` against byte for byte. This
script contains no ggml code: it loads the library through :mod:`ctypes`, calls its public
``ggml_quantize_chunk`` (the function ``llama-quantize`` uses, which calls
``quantize_<type>(src, dst, nrow, n_per_row, quant_weights)``) and stores inputs and outputs.
Q8_1 and Q8_K are not in ``ggml_quantize_chunk``; for them the exported
``quantize_row_q8_1_ref`` / ``quantize_row_q8_K_ref`` are used (they take no importance
matrix, so ``q_imatrix`` equals ``q``).

The library must be built the way ggml-base is built, without ``-march`` and with
``-ffp-contract=off`` (a ``-march=native`` build writes different bytes for many types)::

    cmake -S ggml -B build-portable -DCMAKE_BUILD_TYPE=Release -DGGML_NATIVE=OFF \\
          -DCMAKE_C_FLAGS=-ffp-contract=off -DCMAKE_CXX_FLAGS=-ffp-contract=off
    cmake --build build-portable --target ggml-base

Usage::

    python tools/gen_quantize_vectors.py LIBGGML_BASE_SO --commit SHA [TYPE ...] [--out DIR]
    python tools/gen_quantize_vectors.py --lib LIBGGML_BASE_SO --commit SHA [TYPE ...]

Without TYPE it writes every block type the library can quantize (F32, F16 and BF16, the
conversions, only when named). Each ``<out>/<TYPE>.npz`` (default ``tests/data/quantize``) holds

``x``
    float32 ``(rows, n_per_row)``: a gaussian row, an all-zero row, a row whose blocks are
    tiny (1e-30, 1e-8, ...), a row near the float16 maximum, a one-signed row (positive then
    negative blocks), a gaussian row with outliers, and a row of quarter-integers (rounding
    ties). ``n_per_row`` is 2 blocks for 256-element blocks, 4 blocks for 32-element blocks
    and 256 elements otherwise (F32/F16/BF16 too).
``imatrix``
    float32 ``(n_per_row,)``, positive with a few exact zeros.
``q``
    uint8 ``(rows, row_bytes)`` written without an importance matrix; absent for the types
    ggml refuses to quantize without one (IQ2_XXS, IQ2_XS, IQ1_S).
``q_imatrix``
    uint8 ``(rows, row_bytes)`` written with ``imatrix``.
``ggml_commit``
    the ggml commit the library was built from (a string, given by ``--commit``).

With ``--extreme`` it writes ``<out>/extreme/<TYPE>.npz`` instead, for the non-IQ block types
(ggml aborts on such inputs for some IQ types): ``x`` holds finite rows at the edges of float32
(all smallest subnormals, +-FLT_MAX, one FLT_MAX among 1e-30s, one subnormal among zeros, random
exponents from 1e-45 to 1e38, gaussians times 1e30 and 1e-40), ``imatrices`` three extreme
importance matrices (all 1e30; 1e-38 and zeros; random exponents), ``q`` the bytes without an
importance matrix and ``q_imatrix`` one ``(rows, row_bytes)`` per importance matrix. Where a
scale's inverse overflows to inf, ggml's bytes come from what gcc's x86-64 code does with the
resulting inf/NaN (C leaves those conversions undefined); fastgguf reproduces that too.

The inputs are generated from a fixed seed, so rerunning the script against the same library
rewrites identical files.
"""

from __future__ import annotations

import argparse
import ctypes
import os
import sys

import numpy as np

# ggml's type ids (include/ggml.h) and block sizes, for the types this script can write.
TYPES = {
    "F32": (0, 1), "F16": (1, 1), "BF16": (30, 1),
    "Q4_0": (2, 32), "Q4_1": (3, 32), "Q5_0": (6, 32), "Q5_1": (7, 32), "Q8_0": (8, 32),
    "Q8_1": (9, 32), "Q2_K": (10, 256), "Q3_K": (11, 256), "Q4_K": (12, 256), "Q5_K": (13, 256),
    "Q6_K": (14, 256), "Q8_K": (15, 256), "IQ2_XXS": (16, 256), "IQ2_XS": (17, 256),
    "IQ3_XXS": (18, 256), "IQ1_S": (19, 256), "IQ4_NL": (20, 32), "IQ3_S": (21, 256),
    "IQ2_S": (22, 256), "IQ4_XS": (23, 256), "IQ1_M": (29, 256), "TQ1_0": (34, 256),
    "TQ2_0": (35, 256), "MXFP4": (39, 32), "NVFP4": (40, 64), "Q1_0": (41, 128), "Q2_0": (42, 64),
}
# Types outside ggml_quantize_chunk: their row quantizer, which ignores an importance matrix.
ROW_REF = {"Q8_1": "quantize_row_q8_1_ref", "Q8_K": "quantize_row_q8_K_ref"}
SEED = 20261122


def n_per_row_for(block: int) -> int:
    """Row length of the vectors: 2 blocks of 256, 4 blocks of 32, else 256 elements."""
    if block >= 256:
        return 2 * block
    if block == 32:
        return 4 * block
    return 256  # also the conversions (block 1)


def make_rows(n: int, block: int, rng: np.random.Generator) -> np.ndarray:
    """The test rows (float32, ``(7, n)``); see the module docstring."""
    nb = n // block
    gauss = rng.standard_normal((7, n)).astype(np.float32)
    rows = np.zeros((7, n), np.float32)
    rows[0] = gauss[0]
    # rows[1] stays all zero
    tiny = [1e-30, 1e-8, 1e-20, 1e-5]
    for b in range(nb):
        rows[2, b * block:(b + 1) * block] = gauss[2, b * block:(b + 1) * block] * np.float32(tiny[b % 4])
    rows[3] = rng.uniform(-65000.0, 65000.0, n).astype(np.float32)
    half = (nb // 2) * block
    rows[4, :half] = np.abs(gauss[4, :half])
    rows[4, half:] = -np.abs(gauss[4, half:])
    rows[5] = gauss[5]
    spots = rng.choice(n, size=max(2, n // 32), replace=False)
    rows[5, spots] *= np.float32(30.0)
    rows[6] = np.round(gauss[6] * 4.0) / 4.0
    return rows


def make_imatrix(n: int, rng: np.random.Generator) -> np.ndarray:
    """Importance weights: positive, spread over two decades, with a few exact zeros."""
    # in float64, rounded once: numpy's float32 power gives other last bits on other CPUs (its AVX-512 path)
    w = (rng.exponential(1.0, n) * 10.0 ** rng.uniform(-1, 1, n)).astype(np.float32)
    w[rng.choice(n, size=max(1, n // 64), replace=False)] = 0.0
    return w.astype(np.float32)


def extreme_rows(n: int, rng: np.random.Generator) -> np.ndarray:
    """Finite rows at the edges of float32 (``(8, n)``); see the module docstring."""
    largest, smallest = np.finfo(np.float32).max, np.finfo(np.float32).smallest_subnormal
    rows = np.zeros((8, n), np.float32)
    rows[0] = smallest
    rows[1] = np.where(np.arange(n) % 2, largest, -largest)
    rows[2] = largest
    rows[3] = 1e-30
    rows[3, 0] = largest
    rows[4, -1] = -smallest
    rows[5] = rng.choice([-1, 1], n) * 10.0 ** rng.uniform(-45, 38, n)
    rows[6] = rng.standard_normal(n) * 1e30
    rows[7] = rng.standard_normal(n) * 1e-40
    return rows


def extreme_imatrices(n: int, rng: np.random.Generator) -> np.ndarray:
    """Three importance matrices at the edges of float32 (``(3, n)``)."""
    return np.array([np.full(n, 1e30), np.where(np.arange(n) % 3, 0.0, 1e-38), 10.0 ** rng.uniform(-38, 38, n)],
                    np.float32)


class GGML:
    """The few entry points of libggml-base the vectors need."""

    def __init__(self, path: str) -> None:
        self.lib = ctypes.CDLL(os.path.abspath(path))
        lib = self.lib
        lib.ggml_row_size.restype = ctypes.c_size_t
        lib.ggml_row_size.argtypes = [ctypes.c_int, ctypes.c_int64]
        lib.ggml_quantize_requires_imatrix.restype = ctypes.c_bool
        lib.ggml_quantize_requires_imatrix.argtypes = [ctypes.c_int]
        lib.ggml_quantize_init.restype = None
        lib.ggml_quantize_init.argtypes = [ctypes.c_int]
        lib.ggml_quantize_chunk.restype = ctypes.c_size_t
        lib.ggml_quantize_chunk.argtypes = [ctypes.c_int, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int64,
                                            ctypes.c_int64, ctypes.c_int64, ctypes.c_void_p]

    def row_size(self, type_id: int, n_per_row: int) -> int:
        """Bytes of one quantized row."""
        return int(self.lib.ggml_row_size(type_id, n_per_row))

    def requires_imatrix(self, type_id: int) -> bool:
        """Whether ggml refuses to quantize the type without an importance matrix."""
        return bool(self.lib.ggml_quantize_requires_imatrix(type_id))

    def quantize(self, name: str, x: np.ndarray, imatrix: np.ndarray | None) -> np.ndarray:
        """ggml's bytes for the rows of ``x`` (float32, C order) as uint8 ``(rows, row_bytes)``."""
        type_id = TYPES[name][0]
        rows, n = x.shape
        x = np.ascontiguousarray(x, np.float32)
        out = np.zeros((rows, self.row_size(type_id, n)), np.uint8)
        if name in ROW_REF:
            fn = getattr(self.lib, ROW_REF[name])
            fn.restype = None
            fn.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int64]
            fn(x.ctypes.data, out.ctypes.data, rows * n)
            return out
        self.lib.ggml_quantize_init(type_id)
        qw = None if imatrix is None else np.ascontiguousarray(imatrix, np.float32)
        written = self.lib.ggml_quantize_chunk(type_id, x.ctypes.data, out.ctypes.data, 0, rows, n,
                                               None if qw is None else qw.ctypes.data)
        if written != out.nbytes:
            raise RuntimeError(f"{name}: ggml wrote {written} bytes, expected {out.nbytes}")
        return out


def vectors_for(ggml: GGML, name: str, commit: str) -> dict[str, np.ndarray]:
    """The arrays of one type's ``.npz`` file."""
    type_id, block = TYPES[name]
    rng = np.random.default_rng([SEED, type_id])
    n = n_per_row_for(block)
    x = make_rows(n, block, rng)
    imatrix = make_imatrix(n, rng)
    arrays = {"x": x, "imatrix": imatrix, "ggml_commit": np.array(commit)}
    if name in ROW_REF or not ggml.requires_imatrix(type_id):
        arrays["q"] = ggml.quantize(name, x, None)
    arrays["q_imatrix"] = ggml.quantize(name, x, imatrix)
    return arrays


def extreme_vectors_for(ggml: GGML, name: str, commit: str) -> dict[str, np.ndarray]:
    """The arrays of one type's ``extreme/<TYPE>.npz`` file."""
    type_id, block = TYPES[name]
    rng = np.random.default_rng([SEED, type_id, 1])
    x = extreme_rows(2 * max(block, 256), rng)
    imatrices = extreme_imatrices(x.shape[1], rng)
    return {"x": x, "imatrices": imatrices, "ggml_commit": np.array(commit), "q": ggml.quantize(name, x, None),
            "q_imatrix": np.stack([ggml.quantize(name, x, qw) for qw in imatrices])}


def main(argv: list[str] | None = None) -> int:
    """Command-line entry point; see the module docstring."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("library", nargs="?", help="path of libggml-base.so built without -march, with -ffp-contract=off")
    parser.add_argument("--lib", help="the library path, as an option")
    parser.add_argument("types", nargs="*", help=f"types to write (default: all of {', '.join(TYPES)})")
    parser.add_argument("--commit", required=True, help="ggml commit id the library was built from")
    parser.add_argument("--out", default=os.path.join("tests", "data", "quantize"), help="output folder")
    parser.add_argument("--extreme", action="store_true", help="write extreme/<TYPE>.npz (non-IQ types)")
    args = parser.parse_intermixed_args(argv)
    library, types = args.library, list(args.types)
    if args.lib:  # then the first positional argument is a type
        library, types = args.lib, ([args.library] if args.library else []) + types
    if not library:
        parser.error("the library path is required")
    names = [t.upper() for t in types] or [t for t, (_, block) in TYPES.items()
                                           if block > 1 and not (args.extreme and t.startswith("IQ"))]
    unknown = [t for t in names if t not in TYPES]
    if unknown:
        parser.error(f"unknown type(s): {', '.join(unknown)}")
    ggml = GGML(library)
    out = os.path.join(args.out, "extreme") if args.extreme else args.out
    os.makedirs(out, exist_ok=True)
    for name in names:
        path = os.path.join(out, f"{name}.npz")
        arrays = extreme_vectors_for(ggml, name, args.commit) if args.extreme else vectors_for(ggml, name, args.commit)
        np.savez_compressed(path, **arrays)
        print(f"{path}: {os.path.getsize(path)} bytes")
    return 0


if __name__ == "__main__":
    sys.exit(main())
