"""`fastgguf convert` streams: peak RSS stays near one tensor's output, not the model's.

Measured in a child process (``resource.getrusage``), so that this test process's own memory
does not mask it: the child records its peak RSS after imports, converts, and reports the rise.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

import numpy as np
import pytest

import fastgguf
from fastgguf import GGUFWriter

resource = pytest.importorskip("resource")  # POSIX only
if not sys.platform.startswith("linux"):
    pytest.skip("ru_maxrss units and madvise behaviour checked on Linux only", allow_module_level=True)

# Child processes import the same fastgguf as this one (the source tree in development, site-packages in CI).
SRC = os.path.dirname(os.path.dirname(os.path.abspath(fastgguf.__file__)))
N_TENSORS = 24
TENSOR_SHAPE = (256, 4096)  # 1 Mi elements: 2 MiB of F16 in, 4 MiB of float32 out
MiB = 1 << 20

CHILD = """
import json, resource, sys
import fastgguf.cli
before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
status = fastgguf.cli.main(sys.argv[1:])
after = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
print(json.dumps({"status": status, "before_kib": before, "after_kib": after}))
"""


@pytest.fixture(scope="module")
def many_tensor_model(tmp_path_factory):
    path = tmp_path_factory.mktemp("rss") / "many.gguf"
    rng = np.random.default_rng(0)
    block = rng.standard_normal(TENSOR_SHAPE).astype(np.float16)
    writer = GGUFWriter(path)
    for i in range(N_TENSORS):
        writer.add_tensor(f"blk.{i}.weight", block)
    writer.write()
    return str(path)


@pytest.mark.parametrize("suffix, dtype", [(".safetensors", "float32"), (".npz", "float16"), ("", "float32")],
                         ids=["safetensors-f32", "npz-f16", "npy-folder-f32"])
def test_convert_peak_rss_near_largest_tensor(tmp_path, many_tensor_model, suffix, dtype):
    out_path = str(tmp_path / f"out{suffix}")
    env = dict(os.environ, PYTHONPATH=SRC + os.pathsep + os.environ.get("PYTHONPATH", ""))
    result = subprocess.run([sys.executable, "-c", CHILD, "convert", many_tensor_model, out_path, "--dtype", dtype,
                             "--no-progress"], capture_output=True, text=True, env=env, timeout=300)
    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout.splitlines()[-1])
    assert report["status"] == 0
    rise = (report["after_kib"] - report["before_kib"]) * 1024
    itemsize = np.dtype(dtype).itemsize
    largest_output = TENSOR_SHAPE[0] * TENSOR_SHAPE[1] * itemsize
    total_output = N_TENSORS * largest_output
    total_input = os.path.getsize(many_tensor_model)
    # Holding all outputs (or all the mapped input) would cost >= 48 MiB; streaming costs the row-block
    # buffers (4 MiB of float32, and a cast copy) plus one tensor's mapped input pages.
    bound = largest_output + 12 * MiB
    assert rise < bound, (
        f"peak RSS rose {rise / MiB:.1f} MiB converting {N_TENSORS} tensors of {largest_output / MiB:.0f} MiB "
        f"output ({total_output / MiB:.0f} MiB in all, {total_input / MiB:.0f} MiB input)")
    assert total_output > 3 * bound  # the bound can tell streaming from not
