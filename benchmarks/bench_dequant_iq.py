"""Speed of the IQ, ternary, FP4 and 1-/2-bit kernels.

For each type, in one run and on the same bytes (at least 16 Mi elements of
random blocks with finite scales, and a float32 output at least 4x the
last-level cache: ``fastgguf._bandwidth.default_elements``): fastgguf
single-threaded and on all threads, gguf-py's ``dequantize``, and
``out.fill(1.0)`` on a preallocated float32 array of the same size on one
thread and on all threads, each filling its slice (the memory-bandwidth
ceiling). Group by type to compare::

    PYTHONPATH=src python -m pytest benchmarks/bench_dequant_iq.py \\
        --benchmark-group-by=param:qtype --benchmark-columns=min,median,rounds

Elements per second = elements / time; ``benchmarks/summarize_iq.py`` turns a
``--benchmark-json`` file into the table of speeds and ratios (vs gguf-py, vs fill). In CI this file runs once per case as a
smoke test (``--benchmark-disable``), with 64 Ki elements to stay fast.
"""

from __future__ import annotations

import os

import numpy as np
import pytest
from gguf import GGMLQuantizationType, quants as ref

import fastgguf
from fastgguf import GGMLType
from fastgguf._bandwidth import default_elements, threaded_fill
from fastgguf.types import TYPE_TRAITS

IQ_TYPES = [
    GGMLType.IQ1_S,
    GGMLType.IQ1_M,
    GGMLType.IQ2_XXS,
    GGMLType.IQ2_XS,
    GGMLType.IQ2_S,
    GGMLType.IQ3_XXS,
    GGMLType.IQ3_S,
    GGMLType.IQ4_NL,
    GGMLType.IQ4_XS,
    GGMLType.TQ1_0,
    GGMLType.TQ2_0,
    GGMLType.MXFP4,
    GGMLType.NVFP4,
    GGMLType.Q1_0,
    GGMLType.Q2_0,
]
#: Types gguf-py can dequantize (the rest have no gguf-py baseline).
GGUF_PY_TYPES = [t for t in IQ_TYPES if t not in (GGMLType.Q1_0, GGMLType.Q2_0)]

ROW = 4096  # elements per row: a typical hidden size, a multiple of every block size here


@pytest.fixture(scope="module")
def n_elements(request) -> int:
    disabled = request.config.getoption("benchmark_disable", default=False)
    return 64 * 1024 if disabled else max(16 * 1024 * 1024, default_elements(multiple=ROW))


#: Byte offset of the fp16 scale in each block (IQ1_M splits its scale; MXFP4/NVFP4 have 8-bit scales).
FP16_SCALE_AT = {
    GGMLType.IQ1_S: 0, GGMLType.IQ2_XXS: 0, GGMLType.IQ2_XS: 0, GGMLType.IQ2_S: 0, GGMLType.IQ3_XXS: 0,
    GGMLType.IQ3_S: 0, GGMLType.IQ4_NL: 0, GGMLType.IQ4_XS: 0, GGMLType.TQ1_0: 52, GGMLType.TQ2_0: 64,
    GGMLType.Q1_0: 0, GGMLType.Q2_0: 0,
}


def random_blocks(qtype: GGMLType, n_blocks: int) -> np.ndarray:
    """Random bytes; every fp16 scale overwritten by a finite one (speed does not depend on the values)."""
    rng = np.random.default_rng(int(qtype))
    blocks = rng.integers(0, 256, (n_blocks, TYPE_TRAITS[qtype].type_size), dtype=np.uint8)
    scale = rng.uniform(-2, 2, n_blocks).astype("<f2").view(np.uint8).reshape(n_blocks, 2)
    if qtype in FP16_SCALE_AT:
        at = FP16_SCALE_AT[qtype]
        blocks[:, at : at + 2] = scale
    elif qtype == GGMLType.IQ1_M:
        blocks[:, 55] &= 0xBF  # clear bit 14 of the split fp16 scale: its exponent cannot be all ones
    elif qtype == GGMLType.MXFP4:
        blocks[:, 0] = rng.integers(100, 140, n_blocks)  # keep values finite
    return blocks


@pytest.fixture(scope="module")
def data(n_elements):
    """type -> (blocks as one uint8 array, output shape); built once per module."""
    cache = {}

    def get(qtype: GGMLType):
        if qtype not in cache:
            n_blocks = n_elements // TYPE_TRAITS[qtype].block_size
            cache[qtype] = (random_blocks(qtype, n_blocks).reshape(-1), (n_elements // ROW, ROW))
        return cache[qtype]

    return get


@pytest.fixture(scope="module")
def out(n_elements):
    array = np.empty((n_elements // ROW, ROW), dtype=np.float32)
    array.fill(0.0)  # touch every page before timing
    return array


@pytest.mark.parametrize("threads", [1, None], ids=["1thread", "allthreads"])
def test_fill_ceiling(benchmark, out, threads):
    """Writing the same number of float32 values with numpy's fill, each thread its slice: the bandwidth ceiling."""
    from concurrent.futures import ThreadPoolExecutor

    threads = threads or os.cpu_count() or 1
    benchmark.extra_info.update(elements=out.size, threads=threads)
    with ThreadPoolExecutor(threads) as pool:
        benchmark(threaded_fill, out, 1.0, threads, pool)
    assert (out == 1.0).all()


@pytest.mark.parametrize("threads", [1, None], ids=["1thread", "allthreads"])
@pytest.mark.parametrize("qtype", IQ_TYPES, ids=lambda t: t.name)
def test_fastgguf(benchmark, data, out, qtype, threads):
    blocks, shape = data(qtype)
    benchmark.extra_info["elements"] = out.size
    result = benchmark(fastgguf.dequantize, blocks, qtype, shape, out=out, threads=threads)
    assert np.shares_memory(result, out)


@pytest.mark.parametrize("qtype", GGUF_PY_TYPES, ids=lambda t: t.name)
def test_gguf_py(benchmark, data, qtype):
    blocks, shape = data(qtype)
    benchmark.extra_info["elements"] = int(np.prod(shape))
    gguf_type = GGMLQuantizationType(int(qtype))
    with np.errstate(all="ignore"):  # gguf-py's float math on random grids may warn; we only time it
        result = benchmark(ref.dequantize, blocks, gguf_type)
    assert result.size == np.prod(shape)
