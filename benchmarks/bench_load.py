"""Whole-model loading: ``GGUFFile.load()`` against ``np.empty`` + ``fill`` of the same outputs.

The model is llama-like with llama.cpp's Q4_K_M mix (Q4_K weights; Q6_K for ``attn_v``,
``ffn_down`` and ``output``; F32 norms), random blocks with sane scales. ``load()`` allocates
every output itself, so the ceiling it is compared with allocates too: one ``np.empty`` of each
tensor's shape, then ``fill``, on one thread and on as many as ``load()`` uses (each filling a
slice, ``fastgguf._bandwidth.threaded_fill``); ``load(threads=1)`` is compared with the first,
``load()`` with the second. Both pay the first-touch page faults of fresh memory; ``load()`` also
reads the file's pages (pre-faulted in one ``madvise``). The default 6-layer model's outputs (1.76
GB) are far past the last-level cache; the script says so when they are not.

With pytest-benchmark (a small model; with ``--benchmark-disable`` each case runs once)::

    PYTHONPATH=src python -m pytest benchmarks/bench_load.py --benchmark-only

As a script (not in CI), a table of times, output GB/s, % of the ceiling and minor page faults
per pass, the variants taken in turn in each round (same machine load)::

    PYTHONPATH=src python benchmarks/bench_load.py [--layers 6] [--rounds 5] [--dir DIR] [--gguf-py]
"""

from __future__ import annotations

import argparse
import os
import resource
import sys
import tempfile
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest

import fastgguf
from fastgguf import GGMLType, dequant
from fastgguf._bandwidth import LLC_FACTOR, describe_llc, last_level_cache, threaded_fill
from fastgguf.types import TYPE_TRAITS

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bench_dequant import make_data  # noqa: E402

T = GGMLType


def model_tensors(n_layers: int, n_embd: int, n_ff: int, n_vocab: int) -> list[tuple[str, GGMLType, tuple]]:
    """``(name, type, numpy shape)`` of a llama-like model in the Q4_K_M mix."""
    tensors = [("token_embd.weight", T.Q4_K, (n_vocab, n_embd))]
    for i in range(n_layers):
        b = f"blk.{i}."
        tensors += [
            (b + "attn_norm.weight", T.F32, (n_embd,)),
            (b + "attn_q.weight", T.Q4_K, (n_embd, n_embd)),
            (b + "attn_k.weight", T.Q4_K, (n_embd, n_embd)),
            (b + "attn_v.weight", T.Q6_K, (n_embd, n_embd)),
            (b + "attn_output.weight", T.Q4_K, (n_embd, n_embd)),
            (b + "ffn_norm.weight", T.F32, (n_embd,)),
            (b + "ffn_gate.weight", T.Q4_K, (n_ff, n_embd)),
            (b + "ffn_up.weight", T.Q4_K, (n_ff, n_embd)),
            (b + "ffn_down.weight", T.Q6_K, (n_embd, n_ff)),
        ]
    tensors += [("output_norm.weight", T.F32, (n_embd,)), ("output.weight", T.Q6_K, (n_vocab, n_embd))]
    return tensors


def write_model(path: str, n_layers: int, n_embd: int = 2048, n_ff: int = 5632, n_vocab: int = 32000) -> None:
    """Write the model to ``path``: each tensor's bytes are a slice of one pool of blocks per type."""
    tensors = model_tensors(n_layers, n_embd, n_ff, n_vocab)
    largest = max(int(np.prod(shape)) for _, _, shape in tensors)
    pools = {qtype: make_data(qtype, largest) for qtype in {t for _, t, _ in tensors}}
    writer = fastgguf.GGUFWriter(path)
    writer.add("general.architecture", "llama")
    writer.add("general.name", f"bench-load {n_layers} layers")
    for name, qtype, shape in tensors:
        block_size, type_size = TYPE_TRAITS[qtype]
        n_bytes = int(np.prod(shape)) // block_size * type_size
        writer.add_tensor(name, pools[qtype][:n_bytes], qtype, shape)
    writer.write()


def fill_ceiling(shapes: list[tuple], threads: int = 1, pool: ThreadPoolExecutor | None = None
                 ) -> Callable[[], list[np.ndarray]]:
    """A pass that allocates and fills an output of every shape, as ``load()`` must, on ``threads`` threads."""
    def run() -> list[np.ndarray]:
        outputs = []
        for shape in shapes:
            out = np.empty(shape, np.float32)
            threaded_fill(out, 1.0, threads, pool)
            outputs.append(out)
        return outputs
    return run


def gguf_py_load(path: str) -> dict[str, np.ndarray]:
    """What a gguf-py user writes: the reader, then gguf.quants.dequantize per tensor."""
    from gguf import GGUFReader
    from gguf.quants import dequantize

    reader = GGUFReader(path)
    return {t.name: dequantize(t.data, t.tensor_type) for t in reader.tensors}


@pytest.fixture(scope="module")
def small_model(tmp_path_factory):
    path = str(tmp_path_factory.mktemp("load") / "model.gguf")
    write_model(path, n_layers=1, n_embd=256, n_ff=512, n_vocab=1024)
    return path


@pytest.mark.parametrize("threads", [1, None], ids=["1-thread", "all-threads"])
def test_load_fastgguf(benchmark, small_model, threads):
    with fastgguf.open(small_model) as model:
        arrays = benchmark(model.load, threads=threads)
        assert set(arrays) == set(model.tensors)
        assert all(a.dtype == np.float32 and np.isfinite(a).all() for a in arrays.values())


@pytest.mark.parametrize("threads", [1, None], ids=["1-thread", "all-threads"])
def test_load_fill_ceiling(benchmark, small_model, threads):
    with fastgguf.open(small_model) as model:
        shapes = [info.shape for info in model.tensors.values()]
    threads = threads or dequant.get_num_threads()
    with ThreadPoolExecutor(threads) as pool:
        outputs = benchmark(fill_ceiling(shapes, threads, pool))
    assert [o.shape for o in outputs] == shapes
    assert all((o == 1.0).all() for o in outputs)


def _timed(fn: Callable[[], object]) -> tuple[float, int]:
    """Seconds and minor page faults of one call (its result freed before returning)."""
    faults = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
    t0 = time.perf_counter()
    result = fn()
    seconds = time.perf_counter() - t0
    faults = resource.getrusage(resource.RUSAGE_SELF).ru_minflt - faults
    del result
    return seconds, faults


def main(argv: list[str] | None = None) -> int:
    """Print the table; see the module docstring."""
    parser = argparse.ArgumentParser(description="fastgguf whole-model load vs np.empty + fill")
    parser.add_argument("--layers", type=int, default=6)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--dir", default=None, help="keep the model here (default: a temporary directory)")
    parser.add_argument("--gguf-py", action="store_true", help="also time gguf-py once")
    args = parser.parse_args(argv)

    with tempfile.TemporaryDirectory() as tmp:
        directory = args.dir or tmp
        os.makedirs(directory, exist_ok=True)
        path = os.path.join(directory, f"bench-load-{args.layers}L-Q4_K_M.gguf")
        if not os.path.exists(path):
            write_model(path, args.layers)
        model = fastgguf.open(path)
        shapes = [info.shape for info in model.tensors.values()]
        out_bytes = 4 * sum(int(np.prod(s)) for s in shapes)
        threads = dequant.get_num_threads()
        cache = last_level_cache()
        print(f"{path}: {os.path.getsize(path) / 1e6:.0f} MB file, {len(shapes)} tensors, "
              f"{out_bytes / 1e9:.2f} GB float32 out ({out_bytes / cache.size:.3g}x {describe_llc(cache)}), "
              f"{os.cpu_count()} CPUs, load() on {threads} threads")
        if out_bytes < LLC_FACTOR * cache.size:
            print(f"warning: outputs under {LLC_FACTOR}x the last-level cache: partly cache figures (more --layers)")
        pool = ThreadPoolExecutor(threads)
        fill_n = f"fill, {threads} threads"
        variants: dict[str, Callable[[], object]] = {
            "np.empty + fill": fill_ceiling(shapes),
            fill_n: fill_ceiling(shapes, threads, pool),
            "load(threads=1)": lambda: model.load(threads=1),
            "load()": model.load,
        }
        # each row's "% of fill": against the fill on as many threads
        ceiling_of = {"load()": fill_n, fill_n: fill_n}
        model.load()  # file pages into the page cache
        best: dict[str, tuple[float, int]] = {}
        for _ in range(args.rounds):
            for name, fn in variants.items():
                seconds, faults = _timed(fn)
                if name not in best or seconds < best[name][0]:
                    best[name] = (seconds, faults)
        if args.gguf_py:
            best["gguf-py"] = _timed(lambda: gguf_py_load(path))
        print(f"{'':18} {'seconds':>8} {'GB/s out':>9} {'% of fill':>10} {'minor faults':>13}")
        for name, (seconds, faults) in best.items():
            ceiling = best[ceiling_of.get(name, "np.empty + fill")][0]
            print(f"{name:18} {seconds:8.3f} {out_bytes / seconds / 1e9:9.2f} {100 * ceiling / seconds:9.0f}% "
                  f"{faults:13d}")
        print(f"best of {args.rounds} rounds (gguf-py: one run); % of fill: against numpy's fill on the same "
              f"number of threads ({threads} for load(), 1 for the others)")
        pool.shutdown()
        model.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
