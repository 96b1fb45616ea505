"""`fastgguf quantize` streams: peak RSS stays near a couple of blocks of rows, not a tensor's or the model's.

Measured in a child process by conftest's ``cli_peak_rss_rise``.
"""

from __future__ import annotations

import os

import numpy as np
import pytest

import fastgguf
from fastgguf import GGMLType, GGUFWriter
from fastgguf.requantize import quantizable_types

from conftest import cli_peak_rss_rise

N_TENSORS = 8
TENSOR_SHAPE = (1024, 4096)  # 4 Mi elements: 16 MiB of F32 in, four blocks of rows
MiB = 1 << 20

@pytest.fixture(scope="module")
def many_tensor_model(tmp_path_factory):
    path = tmp_path_factory.mktemp("rss") / "many.gguf"
    rng = np.random.default_rng(0)
    block = rng.standard_normal(TENSOR_SHAPE).astype(np.float32)
    writer = GGUFWriter(path)
    writer.add("general.architecture", "llama")
    writer.add("llama.block_count", N_TENSORS, fastgguf.GGUFValueType.UINT32)
    for i in range(N_TENSORS):
        writer.add_tensor(f"blk.{i}.ffn_up.weight", block)
    writer.write()
    return str(path)


@pytest.mark.parametrize("target", ["F16", "Q8_0", "Q4_K"])
def test_quantize_peak_rss_near_a_block_of_rows(tmp_path, many_tensor_model, target):
    if GGMLType[target] not in quantizable_types():
        pytest.skip(f"no {target} quantizer in this build yet")
    out_path = str(tmp_path / "out.gguf")
    rise = cli_peak_rss_rise(["quantize", many_tensor_model, out_path, "--type", target, "--pure", "--no-progress",
                              "--threads", "2"])
    total_input = os.path.getsize(many_tensor_model)
    # Streaming costs a block of rows (1 Mi elements: 4 MiB of float32 in one reused buffer), that block's
    # input pages (released block by block) and its quantized bytes: about 12-15 MiB measured. Holding the
    # model (128 MiB in) or one whole tensor's input and float32 rows (32 MiB) would cost more.
    bound = 24 * MiB
    assert rise < bound, f"peak RSS rose {rise / MiB:.1f} MiB requantizing {total_input / MiB:.0f} MiB"
    assert total_input > 4 * bound  # the bound can tell streaming from not
    with fastgguf.open(out_path) as out:
        assert {t.type for t in out.tensors.values()} == {GGMLType[target]}
