"""The command line's main jobs, timed.

- ``fastgguf bench`` with no file (the README's first command) must finish in under a minute and
  print a row for every type with a kernel.
- ``fastgguf convert`` throughput and peak RSS on a many-tensor model (peak RSS rise is recorded in
  the benchmark's ``extra_info``; ``tests/cli/test_convert_memory.py`` asserts the bound).

Run: ``python -m pytest benchmarks/bench_cli.py`` (add ``--benchmark-disable`` to just check).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time

import numpy as np
import pytest

import fastgguf
from fastgguf import GGUFWriter
from fastgguf.dequant import supported_types

# Child processes import the fastgguf under test (an installed one, or an in-place build on PYTHONPATH).
SRC = os.path.dirname(os.path.dirname(os.path.abspath(fastgguf.__file__)))
ENV = dict(os.environ, PYTHONPATH=SRC + os.pathsep + os.environ.get("PYTHONPATH", ""))


def test_default_bench_command_under_a_minute():
    started = time.perf_counter()
    result = subprocess.run([sys.executable, "-m", "fastgguf", "bench"], capture_output=True, text=True, env=ENV,
                            timeout=120)
    elapsed = time.perf_counter() - started
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    header = next(i for i, line in enumerate(lines) if line.startswith("type "))
    types = [line.split()[0] for line in lines[header + 1:header + 1 + len(supported_types())]]
    assert types == [t.name for t in supported_types()]
    assert elapsed < 60, f"fastgguf bench took {elapsed:.1f} s"


CHILD = """
import json, resource, sys, time
import fastgguf.cli
before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
start = time.perf_counter()
status = fastgguf.cli.main(sys.argv[1:])
seconds = time.perf_counter() - start
after = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
print(json.dumps({"status": status, "seconds": seconds, "rss_rise_mib": (after - before) / 1024}))
"""


@pytest.fixture(scope="module")
def model_64_tensors(tmp_path_factory):
    path = tmp_path_factory.mktemp("convert-bench") / "m.gguf"
    block = np.random.default_rng(0).standard_normal((512, 4096)).astype(np.float16)  # 8 MiB out each
    writer = GGUFWriter(path)
    for i in range(64):
        writer.add_tensor(f"blk.{i}.weight", block)
    writer.write()
    return str(path)


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="ru_maxrss in KiB on Linux")
@pytest.mark.parametrize("dtype", ["float32", "float16"])
def test_convert_safetensors(benchmark, tmp_path, model_64_tensors, dtype):
    out = str(tmp_path / "m.safetensors")
    reports = []

    def convert():
        result = subprocess.run([sys.executable, "-c", CHILD, "convert", model_64_tensors, out, "--dtype", dtype,
                                 "--no-progress"], capture_output=True, text=True, env=ENV, timeout=300)
        assert result.returncode == 0, result.stderr
        reports.append(json.loads(result.stdout.splitlines()[-1]))

    benchmark.pedantic(convert, rounds=1, iterations=1)
    report = reports[-1]
    benchmark.extra_info.update(report, output_mib=64 * 512 * 4096 * np.dtype(dtype).itemsize / 2**20,
                                largest_tensor_mib=512 * 4096 * np.dtype(dtype).itemsize / 2**20)
    assert report["status"] == 0
