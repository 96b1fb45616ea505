"""Quantization speed: fastgguf vs gguf-py (pytest-benchmark), and vs ggml's C (script mode).

The rows are real-like weights: per-row scales, heavy tails (Student-t, 5 degrees of freedom),
magnitude about 0.02; the importance matrix is positive with a long tail, like ``llama-imatrix``'s.

With pytest-benchmark (single thread; gguf-py only for the types it quantizes)::

    PYTHONPATH=src python -m pytest benchmarks/bench_quantize.py --benchmark-only \\
        --benchmark-group-by=param:qtype --benchmark-columns=min,median,rounds

With ``--benchmark-disable`` every case runs once on a few rows (a quick smoke test).

As a script (not in CI), a table of M elements/s single-threaded, fastgguf beside ggml's own
quantizers called through ctypes (``ggml_quantize_chunk``, what ``llama-quantize`` runs), one
column per library given (the first should be the portable build, which is also the reference
for the bit-exact columns; a second, e.g. ``-march=native``, is timed only), gguf-py, and 2
threads over 1 (on ``--thread-rows`` rows, 256 by default: the fast types split over threads only
from 2^20 elements each)::

    PYTHONPATH=src python benchmarks/bench_quantize.py \\
        --ggml /path/build-portable/src/libggml-base.so,/path/build-native/src/libggml-base.so \\
        [TYPE ...] [--rows 64] [--n-per-row 4096] [--repeat 3] [--thread-rows 256] [--markdown]

``--markdown`` prints the README's table instead: one row per type, plain and imatrix side by
side, × = speedup over the last ggml given.

Other quantizer families add their types to ``QUANT_TYPES`` (and to ``GGUF_PY_TYPES`` when
gguf-py has them); everything else is driven by those lists.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from collections.abc import Callable
from functools import partial

import numpy as np
import pytest

import fastgguf
from fastgguf import GGMLType

T = GGMLType
#: Types benchmarked here (one row per type in the script's table).
QUANT_TYPES: list[GGMLType] = [
    T.Q4_0, T.Q4_1, T.Q5_0, T.Q5_1, T.Q8_0, T.Q8_1,
    T.Q2_K, T.Q3_K, T.Q4_K, T.Q5_K, T.Q6_K, T.Q8_K,
    T.TQ1_0, T.TQ2_0, T.MXFP4, T.NVFP4, T.Q1_0, T.Q2_0,
]
QUANT_TYPES += [T.IQ2_XXS, T.IQ2_XS, T.IQ2_S, T.IQ1_S, T.IQ1_M]  # quant_iq2.h, quant_iq1.h
QUANT_TYPES += [T.IQ4_NL, T.IQ4_XS, T.IQ3_XXS, T.IQ3_S]  # quant_iq4.h, quant_iq3.h
#: The types gguf-py 0.19 quantizes (gguf.quants.quantize).
GGUF_PY_TYPES = {T.Q4_0, T.Q4_1, T.Q5_0, T.Q5_1, T.Q8_0, T.TQ1_0, T.TQ2_0, T.MXFP4}
#: Types ggml refuses to quantize without an importance matrix.
NEEDS_IMATRIX = {"IQ2_XXS", "IQ2_XS", "IQ1_S"}

BENCH_ROWS, SMOKE_ROWS, N_PER_ROW = 32, 2, 4096


def real_like(rows: int, n_per_row: int, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """``(x, imatrix)``: float32 rows like a weight matrix, and importance weights."""
    rng = np.random.default_rng(seed)
    x = rng.standard_t(5, size=(rows, n_per_row)) * rng.uniform(0.01, 0.03, size=(rows, 1))
    imatrix = rng.lognormal(0.0, 1.0, n_per_row)
    return x.astype(np.float32), imatrix.astype(np.float32)


def gguf_py_quantize(x: np.ndarray, qtype: GGMLType) -> np.ndarray:
    """gguf-py's quantizer (uint8 rows)."""
    from gguf.constants import GGMLQuantizationType
    from gguf.quants import quantize

    with np.errstate(all="ignore"):  # gguf-py's numpy code divides by zero scales on purpose
        return quantize(x, GGMLQuantizationType(int(qtype)))


# ---------------------------------------------------------------- pytest-benchmark


@pytest.fixture(scope="module")
def rows(request: pytest.FixtureRequest) -> tuple[np.ndarray, np.ndarray]:
    disabled = request.config.getoption("benchmark_disable", False)
    return real_like(SMOKE_ROWS if disabled else BENCH_ROWS, N_PER_ROW)


@pytest.mark.parametrize("with_imatrix", [False, True], ids=["plain", "imatrix"])
@pytest.mark.parametrize("qtype", QUANT_TYPES, ids=[t.name for t in QUANT_TYPES])
def test_fastgguf(benchmark, rows, qtype: GGMLType, with_imatrix: bool) -> None:
    x, imatrix = rows
    if not with_imatrix and qtype.name in NEEDS_IMATRIX:
        pytest.skip("quantized only with an importance matrix (as in ggml)")
    out = benchmark(fastgguf.quantize, x, qtype, imatrix=imatrix if with_imatrix else None, threads=1)
    assert out.shape[0] == x.shape[0]


@pytest.mark.parametrize("qtype", [t for t in QUANT_TYPES if t in GGUF_PY_TYPES],
                         ids=[t.name for t in QUANT_TYPES if t in GGUF_PY_TYPES])
def test_gguf_py(benchmark, rows, qtype: GGMLType) -> None:
    pytest.importorskip("gguf")
    x, _ = rows
    out = benchmark(gguf_py_quantize, x, qtype)
    assert out.shape[0] == x.shape[0]


@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize("qtype", [T.Q4_K, T.Q6_K], ids=["Q4_K", "Q6_K"])
def test_threads(benchmark, rows, qtype: GGMLType, threads: int) -> None:
    x, imatrix = rows
    out = benchmark(fastgguf.quantize, x, qtype, imatrix=imatrix, threads=threads)
    assert out.shape[0] == x.shape[0]


# ---------------------------------------------------------------- script mode


def best_time(fn: Callable[[], object], repeat: int) -> float:
    """Smallest wall time of ``repeat`` calls (after one warm-up call)."""
    fn()
    best = float("inf")
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t0)
    return best


def load_ggml(path: str):
    """tools/gen_quantize_vectors.GGML for the library at ``path``."""
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tools"))
    from gen_quantize_vectors import GGML

    return GGML(path)


def markdown_head(n_libs: int) -> str:
    """The header of the --markdown table (the README's)."""
    libs = [f"ggml #{i + 1}" for i in range(n_libs)]
    part = ["fastgguf", *libs] + (["×"] if n_libs else [])
    head = ["type", *(f"{c}" for c in part), "gguf-py", *(f"imatrix: {c}" for c in part), "2 thr / 1 (plain / imatrix)",
            "bit-exact (plain / imatrix)"]
    return "| " + " | ".join(head) + " |\n|" + "---|" + "---:|" * (len(head) - 2) + ":---:|"


def markdown_cells(ours: float, theirs: list[float], cols: list[str], n: int) -> list[str]:
    """M elements/s of fastgguf and each ggml, the ratio to the last ggml, gguf-py, 2 thr/1, bit-exact."""
    def fmt(seconds: float) -> str:
        rate = n / seconds / 1e6
        return f"{rate:.0f}" if rate >= 100 else f"{rate:.1f}"
    cells = [fmt(ours)] + [fmt(t) for t in theirs] + ([f"{theirs[-1] / ours:.1f}×"] if theirs else [])
    return cells + [c.strip() for c in cols[-3:]]


def markdown_row(name: str, cells: dict[str, list[str]], n_libs: int) -> str:
    """One row: plain then imatrix figures (a dash where ggml needs an imatrix), gguf-py from plain."""
    width = 1 + n_libs + (1 if n_libs else 0)
    plain = cells.get("plain", ["-"] * (width + 3))
    both = cells.get("imatrix", plain)
    exact = f"{plain[-1]} / {both[-1]}" if "plain" in cells else f"- / {both[-1]}"
    threads = f"{plain[-2]} / {both[-2]}" if "plain" in cells else f"- / {both[-2]}"
    row = [name, *plain[:width], plain[-3], *both[:width], threads, exact]
    return "| " + " | ".join(row) + " |"


def main(argv: list[str] | None = None) -> int:
    """Print the per-type table; see the module docstring."""
    parser = argparse.ArgumentParser(description="fastgguf vs ggml vs gguf-py quantization speed")
    parser.add_argument("types", nargs="*", help="types (default: all of QUANT_TYPES)")
    parser.add_argument("--ggml", default="", help="comma-separated libggml-base.so paths; the first is the reference")
    parser.add_argument("--rows", type=int, default=64)
    parser.add_argument("--n-per-row", type=int, default=4096)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--thread-rows", type=int, default=256,
                        help="rows of the 2 threads / 1 thread comparison (longer runs than --rows)")
    parser.add_argument("--markdown", action="store_true",
                        help="one table row per type, plain and imatrix side by side, x = fastgguf / last ggml")
    args = parser.parse_intermixed_args(argv)
    types = [T[name.upper()] for name in args.types] or QUANT_TYPES
    libs = [load_ggml(p) for p in args.ggml.split(",") if p]
    x, imatrix = real_like(args.rows, args.n_per_row)
    x_threads, _ = real_like(args.thread_rows, args.n_per_row)
    n = x.size

    def rate(seconds: float) -> str:
        return f"{n / seconds / 1e6:8.1f}"

    head = ["type", "imatrix", "fastgguf"] + [f"ggml#{i + 1}" for i in range(len(libs))]
    head += ["gguf-py", "2 thr/1", "bit-exact"]
    if args.markdown:
        print(markdown_head(len(libs)))
    else:
        print(" ".join(f"{h:>9}" for h in head))
    for qtype in types:
        cells: dict[str, list[str]] = {}
        for qw in (None, imatrix):
            if qw is None and qtype.name in NEEDS_IMATRIX:
                continue
            ours = best_time(partial(fastgguf.quantize, x, qtype, imatrix=qw, threads=1), args.repeat)
            one, two = (best_time(partial(fastgguf.quantize, x_threads, qtype, imatrix=qw, threads=t), args.repeat)
                        for t in (1, 2))
            theirs = [best_time(partial(lib.quantize, qtype.name, x, qw), args.repeat) for lib in libs]
            cols = [qtype.name, "no" if qw is None else "yes", rate(ours)] + [rate(t) for t in theirs]
            if qw is None and qtype in GGUF_PY_TYPES:
                cols.append(rate(best_time(partial(gguf_py_quantize, x, qtype), min(3, args.repeat))))
            else:
                cols.append("-")
            cols.append(f"{one / two:8.2f}")
            if libs:
                same = np.array_equal(fastgguf.quantize(x, qtype, imatrix=qw), libs[0].quantize(qtype.name, x, qw))
                cols.append("yes" if same else "NO")
            else:
                cols.append("-")
            if args.markdown:
                cells["imatrix" if qw is not None else "plain"] = markdown_cells(ours, theirs, cols, n)
            else:
                print(" ".join(f"{c:>9}" for c in cols), flush=True)
        if args.markdown:
            print(markdown_row(qtype.name, cells, len(libs)), flush=True)
    print(f"\n{args.rows} rows x {args.n_per_row}, M elements/s, single thread; 2 thr / 1 on {args.thread_rows} rows; "
          f"ggml#i = {', '.join(args.ggml.split(',')) or 'none'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
