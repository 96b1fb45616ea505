"""Write reference vectors for ``tests/test_quantize.py``: ggml's own bytes for a few rows.

ggml is not a dependency: this script loads a ``libggml-base`` built from a ggml checkout
(as ggml builds it: ``-O3``, no ``-march``, ``-ffp-contract=off``) with ctypes and asks
``ggml_quantize_chunk`` for the bytes of each type, with and without an importance matrix. Only
the small ``.npz`` files it writes are committed, with the ggml commit they came from.

File format, ``tests/data/quantize/<TYPE>.npz``:

* ``x``: (rows, n_per_row) float32, the input (a mix of scales, signs, zeros, outliers);
* ``imatrix``: (n_per_row,) float32 importance weights, all > 0;
* ``q``: (rows, row_bytes) uint8, ggml's bytes without an importance matrix (for types ggml
  refuses to quantize without one, a zero-row array);
* ``q_imatrix``: (rows, row_bytes) uint8, ggml's bytes with ``imatrix``;
* ``ggml_commit``: the ggml commit id (a 0-d unicode array).

Usage::

    PYTHONPATH=src python tools/gen_quantize_vectors.py --lib /path/to/libggml-base.so \\
        --commit <ggml commit id> F16 BF16 Q4_0 ...
"""

from __future__ import annotations

import argparse
import ctypes
import pathlib
import sys

import numpy as np

ROOT = pathlib.Path(__file__).resolve().parent.parent
OUT_DIR = ROOT / "tests" / "data" / "quantize"


def make_input(n_rows: int, n_per_row: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """Rows of different character (normal at several scales, zeros, outliers, tiny values)."""
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((n_rows, n_per_row)).astype(np.float32)
    scales = np.float32(10.0) ** rng.uniform(-4, 2, (n_rows, 1)).astype(np.float32)
    x *= scales
    x[0, : n_per_row // 4] = 0.0  # a zero stretch
    if n_rows > 1:
        x[1] = 0.0  # an all-zero row
    if n_rows > 2:
        x[2, rng.integers(0, n_per_row, 8)] *= 100  # outliers
    if n_rows > 3:
        x[3] = np.abs(x[3])  # one sign only
    if n_rows > 4:
        x[4] *= np.float32(1e-30)  # tiny values
    imatrix = (rng.uniform(0.01, 4.0, n_per_row) ** 2).astype(np.float32)
    return np.ascontiguousarray(x), imatrix


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--lib", required=True, help="path of ggml's libggml-base shared library")
    parser.add_argument("--commit", required=True, help="ggml commit id the library was built from")
    parser.add_argument("--rows", type=int, default=8)
    parser.add_argument("--n-per-row", type=int, default=256)
    parser.add_argument("--seed", type=int, default=20261122)
    parser.add_argument("types", nargs="+", help="type names, e.g. F16 Q4_K")
    args = parser.parse_args(argv)

    sys.path.insert(0, str(ROOT / "src"))
    from fastgguf.types import TYPE_TRAITS, GGMLType

    lib = ctypes.CDLL(args.lib)
    lib.ggml_quantize_chunk.restype = ctypes.c_size_t
    lib.ggml_quantize_chunk.argtypes = [ctypes.c_int, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int64,
                                        ctypes.c_int64, ctypes.c_int64, ctypes.c_void_p]
    lib.ggml_quantize_requires_imatrix.restype = ctypes.c_bool
    lib.ggml_quantize_requires_imatrix.argtypes = [ctypes.c_int]
    OUT_DIR.mkdir(parents=True, exist_ok=True)
    for name in args.types:
        qtype = GGMLType[name]
        block_size, type_size = TYPE_TRAITS[qtype]
        x, imatrix = make_input(args.rows, args.n_per_row, args.seed + int(qtype))
        row_bytes = args.n_per_row // block_size * type_size

        def run(weights):
            out = np.zeros((args.rows, row_bytes), dtype=np.uint8)
            size = lib.ggml_quantize_chunk(int(qtype), x.ctypes.data, out.ctypes.data, 0, args.rows,
                                           args.n_per_row, None if weights is None else weights.ctypes.data)
            assert size == out.size, (size, out.size)
            return out

        q = np.zeros((0, row_bytes), np.uint8) if lib.ggml_quantize_requires_imatrix(int(qtype)) else run(None)
        q_imatrix = run(imatrix)
        path = OUT_DIR / f"{name}.npz"
        np.savez_compressed(path, x=x, imatrix=imatrix, q=q, q_imatrix=q_imatrix, ggml_commit=np.array(args.commit))
        print(f"wrote {path.relative_to(ROOT)} ({path.stat().st_size} bytes)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
