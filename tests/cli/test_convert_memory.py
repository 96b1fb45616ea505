"""`fastgguf convert` streams: peak RSS stays near one tensor's output, not the model's.

Measured in a child process by conftest's ``cli_peak_rss_rise``.
"""

from __future__ import annotations

import os

import numpy as np
import pytest

from fastgguf import GGUFWriter

from conftest import cli_peak_rss_rise

N_TENSORS = 24
TENSOR_SHAPE = (256, 4096)  # 1 Mi elements: 2 MiB of F16 in, 4 MiB of float32 out
MiB = 1 << 20

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
    rise = cli_peak_rss_rise(["convert", many_tensor_model, out_path, "--dtype", dtype, "--no-progress"], timeout=300)
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
