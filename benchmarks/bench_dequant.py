"""Dequantization speed: fastgguf vs gguf-py vs the memory-bandwidth ceiling, and memory use.

With pytest-benchmark (at least 16M elements per tensor, and a float32 output at least 4x the
last-level cache, ``fastgguf._bandwidth.default_elements``: 128 MiB for a 32 MiB L3)::

    PYTHONPATH=src python -m pytest benchmarks/bench_dequant.py --benchmark-only \\
        --benchmark-group-by=param:qtype --benchmark-columns=min,median,rounds

With ``--benchmark-disable`` every benchmark runs once on a small tensor (a quick smoke test).

As a script, a table of per-type figures (single thread, all threads, gguf-py, and the
``out.fill(1.0)`` ceiling on as many threads as the dequantization it is compared with, all on the
same bytes in the same run)::

    PYTHONPATH=src python benchmarks/bench_dequant.py [TYPE ...] [--elements N] [--gguf-py] [--cpu-time]
    PYTHONPATH=src python benchmarks/bench_dequant.py --in-cache --cpu-time   # kernels alone, per CPU path
    PYTHONPATH=src python benchmarks/bench_dequant.py --half Q4_K Q8_0 F32    # float16/bfloat16 results
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import time

import numpy as np
import pytest

from fastgguf import GGMLType, dequant, dequantize
from fastgguf._bandwidth import default_elements, describe_llc, last_level_cache, threaded_fill
from fastgguf.types import TYPE_TRAITS

T = GGMLType
TYPES = (
    T.F32, T.F16, T.BF16, T.F64, T.I8, T.I16, T.I32, T.I64,
    T.Q4_0, T.Q4_1, T.Q5_0, T.Q5_1, T.Q8_0, T.Q8_1,
    T.Q2_K, T.Q3_K, T.Q4_K, T.Q5_K, T.Q6_K, T.Q8_K,
)
#: gguf-py 0.19 has no (correct) dequantizer for these.
NO_GGUF_PY = {T.F64, T.I8, T.I16, T.I32, T.I64, T.Q8_1, T.Q8_K}

FULL_ELEMENTS = max(1 << 24, default_elements())  # the float32 output well past the last-level cache
SMOKE_ELEMENTS = 1 << 16

# Where each block keeps its fp16 scales (or Q8_K's f32 one): benchmark data gets sane, finite
# values there, as real models have, and random bytes elsewhere.
SCALES = {
    T.Q4_0: [0], T.Q4_1: [0, 2], T.Q5_0: [0], T.Q5_1: [0, 2], T.Q8_0: [0], T.Q8_1: [0, 2],
    T.Q2_K: [80, 82], T.Q3_K: [108], T.Q4_K: [0, 2], T.Q5_K: [0, 2], T.Q6_K: [208],
}


def make_data(qtype: GGMLType, n_elements: int) -> np.ndarray:
    """Tensor bytes of ``n_elements`` elements: random quants, realistic finite scales."""
    rng = np.random.default_rng(int(qtype))
    block_size, type_size = TYPE_TRAITS[qtype]
    n_blocks = n_elements // block_size
    if qtype in (T.F32, T.F16, T.F64):
        dtype = {T.F32: "<f4", T.F16: "<f2", T.F64: "<f8"}[qtype]
        return rng.standard_normal(n_elements, dtype=np.float32).astype(dtype).view(np.uint8)
    if qtype == T.BF16:
        return (rng.standard_normal(n_elements, dtype=np.float32).view(np.uint32) >> 16).astype("<u2").view(np.uint8)
    blocks = rng.integers(0, 256, size=(n_blocks, type_size), dtype=np.uint8)
    for offset in SCALES.get(qtype, []):
        scales = rng.uniform(0.001, 0.05, n_blocks).astype("<f2")
        blocks[:, offset : offset + 2] = scales.view(np.uint8).reshape(-1, 2)
    if qtype == T.Q8_K:
        blocks[:, 0:4] = rng.uniform(0.001, 0.05, n_blocks).astype("<f4").view(np.uint8).reshape(-1, 4)
    return blocks.reshape(-1)


#: Row length for gguf-py, which works on (rows, row bytes) arrays as GGUFReader hands them out.
GGUF_PY_ROW = 4096


def gguf_py_dequantize(raw: np.ndarray, qtype: GGMLType) -> np.ndarray:
    from gguf.constants import GGMLQuantizationType
    from gguf.quants import dequantize as gguf_dequantize

    block_size, type_size = TYPE_TRAITS[qtype]
    row_bytes = GGUF_PY_ROW // block_size * type_size
    if qtype == T.F32:
        return raw.view(np.float32).copy()  # gguf-py returns a view; a copy writes the output
    if qtype == T.F16:
        return gguf_dequantize(raw.view(np.float16), GGMLQuantizationType.F16)
    return gguf_dequantize(raw.reshape(-1, row_bytes), GGMLQuantizationType(int(qtype)))


_cache: dict = {}


def data_for(qtype: GGMLType, n_elements: int) -> np.ndarray:
    """Benchmark data, one type kept at a time (16M elements of I64 is 128 MB)."""
    key = (qtype, n_elements)
    if key not in _cache:
        _cache.clear()
        _cache[key] = make_data(qtype, n_elements)
    return _cache[key]


@pytest.fixture
def n_elements(benchmark):
    return SMOKE_ELEMENTS if benchmark.disabled else FULL_ELEMENTS


def all_threads() -> int:
    return os.cpu_count() or 1


# ---------------------------------------------------------------------------------------------
# pytest-benchmark


@pytest.mark.parametrize("threads", [1, None], ids=["1thread", "allthreads"])
def test_fill_ceiling(benchmark, n_elements, threads):
    """Writing the same float32 output with numpy (each thread its slice): the memory-bandwidth ceiling."""
    from concurrent.futures import ThreadPoolExecutor

    threads = threads or all_threads()
    out = np.empty(n_elements, dtype=np.float32)
    with ThreadPoolExecutor(threads) as pool:
        threaded_fill(out, 0.0, threads, pool)  # fault the pages in first, as the dequantize benchmarks' out= is
        benchmark.group = "fill"
        benchmark.extra_info.update(elements=n_elements, threads=threads)
        benchmark.pedantic(threaded_fill, args=(out, 1.0, threads, pool), rounds=10, warmup_rounds=1)
    assert (out == 1.0).all()


@pytest.mark.parametrize("threads", [1, None], ids=["1thread", "allthreads"])
@pytest.mark.parametrize("qtype", TYPES, ids=lambda t: t.name)
def test_fastgguf(benchmark, n_elements, qtype, threads):
    raw = data_for(qtype, n_elements)
    out = np.empty(n_elements, dtype=np.float32)
    out.fill(0.0)
    benchmark.group = qtype.name
    benchmark.extra_info.update(elements=n_elements, threads=threads or all_threads(), cpu_path=dequant.cpu_path())
    result = benchmark.pedantic(dequantize, args=(raw, qtype), kwargs={"out": out, "threads": threads},
                                rounds=10, warmup_rounds=1)
    assert result is out


@pytest.mark.parametrize("qtype", [t for t in TYPES if t not in NO_GGUF_PY], ids=lambda t: t.name)
def test_gguf_py(benchmark, n_elements, qtype):
    raw = data_for(qtype, n_elements)
    benchmark.group = qtype.name
    benchmark.extra_info["elements"] = n_elements
    result = benchmark.pedantic(gguf_py_dequantize, args=(raw, qtype), rounds=3)
    # same bytes, same bits: the comparison is between equal work
    ours = dequantize(raw, qtype)
    assert np.array_equal(np.asarray(result, np.float32).reshape(-1).view(np.uint32), ours.view(np.uint32))


# ---------------------------------------------------------------------------------------------
# Memory: peak RSS of a fresh process, so nothing else muddies the high-water mark.

_RSS_SCRIPT = textwrap.dedent(
    """
    import resource, sys
    import numpy as np
    from fastgguf import dequantize
    from fastgguf.types import TYPE_TRAITS, GGMLType

    qtype = GGMLType[sys.argv[1]]
    rows_total, ne0, n_rows = int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
    block_size, type_size = TYPE_TRAITS[qtype]
    raw = np.ones(rows_total * ne0 // block_size * type_size, dtype=np.uint8)  # pages touched now
    rows = None if n_rows == rows_total else np.arange(n_rows) * (rows_total // n_rows)
    dequantize(raw[:type_size], qtype)  # imports, thread pool, kernel module: before the baseline
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    result = dequantize(raw, qtype, (rows_total, ne0), rows=rows)
    after = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    print((after - before) * 1024, result.nbytes)
    """
)


def peak_rss_growth(qtype: GGMLType, rows_total: int, ne0: int, n_rows: int) -> tuple[int, int]:
    """(growth of the peak RSS while dequantizing, bytes of the result), in a fresh process."""
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, [os.path.dirname(dequant.__file__) + "/..",
                                                                      os.environ.get("PYTHONPATH")])))
    done = subprocess.run([sys.executable, "-c", _RSS_SCRIPT, qtype.name, str(rows_total), str(ne0), str(n_rows)],
                          capture_output=True, text=True, check=True, env=env)
    growth, nbytes = map(int, done.stdout.split())
    return growth, nbytes


@pytest.mark.parametrize("qtype", [T.Q4_K, T.F16, T.Q8_0], ids=lambda t: t.name)
def test_peak_rss_whole_tensor(benchmark, qtype):
    rows_total, ne0 = (8192, 2048) if not benchmark.disabled else (256, 2048)
    growth, nbytes = peak_rss_growth(qtype, rows_total, ne0, rows_total)
    benchmark.extra_info.update(peak_rss_growth=growth, output_bytes=nbytes)
    benchmark.pedantic(lambda: None, rounds=1)
    assert growth <= nbytes + (4 << 20), f"peak RSS grew {growth} bytes for a {nbytes}-byte result"


def test_peak_rss_embedding_rows(benchmark):
    # 8 token rows of a 262144 x 640 Q4_0 embedding table: the table is 94 MB, the rows 20 kB.
    rows_total = 262144 if not benchmark.disabled else 16384
    growth, nbytes = peak_rss_growth(T.Q4_0, rows_total, 640, 8)
    benchmark.extra_info.update(peak_rss_growth=growth, output_bytes=nbytes)
    benchmark.pedantic(lambda: None, rounds=1)
    assert nbytes == 8 * 640 * 4
    assert growth <= (2 << 20), f"peak RSS grew {growth} bytes for 8 rows"


# ---------------------------------------------------------------------------------------------
# The table


def _best(fn, rounds: int, clock=time.perf_counter) -> float:
    return _best_interleaved([fn], rounds, clock)[0]


def _best_interleaved(fns, rounds: int, clock=time.perf_counter) -> list[float]:
    """The best time of each of ``fns`` over ``rounds`` rounds, the functions taking turns in each
    round (so that a ratio of two compares runs made under the same machine load)."""
    best = [float("inf")] * len(fns)
    for _ in range(rounds):
        for k, fn in enumerate(fns):
            start = clock()
            fn()
            best[k] = min(best[k], clock() - start)
    return best


def main(argv: list[str]) -> None:
    import argparse

    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("types", nargs="*", help="type names (default: all)")
    parser.add_argument("--elements", type=int, default=FULL_ELEMENTS)
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--gguf-py", action="store_true", help="also time gguf-py (slow)")
    parser.add_argument("--in-cache", action="store_true",
                        help="kernel throughput with the data in cache: 64K elements, the kernel module "
                             "called directly 200 times per timing, one row per CPU path, single thread")
    parser.add_argument("--cpu-time", action="store_true",
                        help="time single-threaded runs (fill, 1 thread, gguf-py) by this process's CPU "
                             "time instead of wall time: steadier on a machine shared with other work")
    parser.add_argument("--half", action="store_true",
                        help="float16/bfloat16 results: dequantize_as against dequantize + numpy/ml_dtypes "
                             "astype and + torch .to(), all threads, wall time")
    args = parser.parse_args(argv)
    clock = time.process_time if args.cpu_time else time.perf_counter
    types = [T[name] for name in args.types] or list(TYPES)
    if args.half:
        _half_table([T[name] for name in args.types] or [T.F32, T.Q4_K, T.Q8_0], args.elements, args.rounds)
        return
    if args.in_cache:
        _in_cache_table(types, args.rounds, time.process_time if args.cpu_time else time.perf_counter)
        return
    from concurrent.futures import ThreadPoolExecutor

    n = args.elements
    out = np.empty(n, dtype=np.float32)
    threads = all_threads()
    pool = ThreadPoolExecutor(threads)
    threaded_fill(out, 0.0, threads, pool)  # pages touched, threads started

    def fill_many():
        threaded_fill(out, 1.0, threads, pool)

    fill = _best(lambda: out.fill(1.0), args.rounds * 2, clock)
    fill_n = _best(fill_many, args.rounds * 2)
    print(f"cpu path {dequant.cpu_path()}, {threads} threads, {n} elements "
          f"({4 * n / last_level_cache().size:.3g}x {describe_llc(last_level_cache())} as float32), "
          f"{'CPU' if args.cpu_time else 'wall'} time for single-threaded runs; "
          f"fill {n / fill / 1e9:.2f} G elements/s ({4 * n / fill / 1e9:.1f} GB/s) on 1 thread, "
          f"{n / fill_n / 1e9:.2f} G/s ({4 * n / fill_n / 1e9:.1f} GB/s) on {threads}")
    # speedup: wall time of 1 thread / wall time of N threads, always
    # % fill: against fill on as many threads, timed in the same rounds as the type, turn about (same machine load)
    print(f"{'type':6} {'1 thread G/s':>12} {'% fill':>7} {'N threads G/s':>14} {'% fill':>7} {'speedup':>8} "
          f"{'gguf-py G/s':>12} {'x gguf-py':>10}")
    for qtype in types:
        raw = make_data(qtype, n)
        fill, one = _best_interleaved(
            [lambda: out.fill(1.0), lambda: dequantize(raw, qtype, out=out, threads=1)], args.rounds, clock)
        one_wall = one if clock is time.perf_counter else _best(
            lambda: dequantize(raw, qtype, out=out, threads=1), args.rounds)
        fill_n, many = _best_interleaved(
            [fill_many, lambda: dequantize(raw, qtype, out=out, threads=threads)], args.rounds)
        line = (f"{qtype.name:6} {n / one / 1e9:12.2f} {100 * fill / one:6.0f}% {n / many / 1e9:14.2f} "
                f"{100 * fill_n / many:6.0f}% {one_wall / many:7.2f}x")
        if args.gguf_py and qtype not in NO_GGUF_PY:
            ref = _best(lambda: gguf_py_dequantize(raw, qtype), 2, clock)
            line += f" {n / ref / 1e9:12.3f} {ref / one:9.0f}x"
        print(line, flush=True)
        del raw
    pool.shutdown()


def _in_cache_table(types, rounds: int, clock) -> None:
    n, repeat = 1 << 16, 200
    out = np.zeros(n, dtype=np.float32)
    builds = dequant.kernel_modules()  # only the builds this CPU can run
    paths, modules = list(builds), list(builds.values())
    print(f"in-cache kernel throughput, G elements/s ({n} elements x {repeat} calls, best of {rounds})")
    print(f"{'type':6} " + " ".join(f"{path:>9}" for path in paths))
    for qtype in types:
        raw = make_data(qtype, n)
        speeds = []
        for module in modules:
            def run(module=module):
                for _ in range(repeat):
                    module.dequantize_into(raw, out, int(qtype))
            speeds.append(n * repeat / _best(run, rounds, clock) / 1e9)
        print(f"{qtype.name:6} " + " ".join(f"{speed:9.2f}" for speed in speeds), flush=True)


# --- float16 / bfloat16 results ------------------------------------------------------------------------


def half_paths(raw: np.ndarray, qtype: GGMLType, dtype: str) -> dict:
    """``{name: () -> values}``: the ways to turn ``raw`` into ``dtype`` values that are compared."""
    from fastgguf.dequant import dequantize_as, resolve_dtype

    target = resolve_dtype(dtype)
    paths = {
        "fastgguf dequantize_as": lambda: dequantize_as(raw, qtype, dtype=dtype),
        "dequantize + astype": lambda: dequantize(raw, qtype).astype(target),
    }
    try:
        import torch
    except ImportError:
        return paths
    torch_dtype = getattr(torch, dtype)
    paths["dequantize + torch .to"] = lambda: torch.from_numpy(dequantize(raw, qtype)).to(torch_dtype)
    return paths


def _half_table(types, n: int, rounds: int) -> None:
    print(f"float16/bfloat16 results, {n} elements, all threads ({all_threads()}), wall time, best of {rounds} "
          f"(turn about); ms and the ratio of each way to fastgguf's")
    for qtype in types:
        raw = make_data(qtype, n)
        for dtype in ("float16", "bfloat16"):
            paths = half_paths(raw, qtype, dtype)
            times = _best_interleaved(list(paths.values()), rounds)
            cells = "  ".join(f"{name} {t * 1e3:7.1f} ms ({t / times[0]:4.1f}x)" for name, t in zip(paths, times))
            print(f"{qtype.name:5} {dtype:8}  {cells}", flush=True)
        del raw


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_half_results(dtype):
    """Smoke: every way gives the same values (the table's ratios compare like with like)."""
    pytest.importorskip("ml_dtypes")
    raw = make_data(T.Q4_K, 1 << 16)
    results = [np.asarray(fn() if not hasattr(fn(), "numpy") else fn().float().numpy(), dtype=np.float32)
               for fn in half_paths(raw, T.Q4_K, dtype).values()]
    for result in results[1:]:
        assert np.array_equal(result, results[0])


if __name__ == "__main__":
    main(sys.argv[1:])
