"""The README's ``quant-stats`` example: a small synthetic model, its table and ``docs/quant-stats.png``.

Run from the repository root (needs matplotlib: ``pip install ".[plot]"``)::

    python tools/quant_stats_example.py

The model is written to a temporary folder from a fixed seed, so the error columns are the same
on every machine; the speed columns are this machine's. Its weights imitate a transformer's:
rows with their own scales, a few outlier columns, heavier tails than a normal distribution.
"""

from __future__ import annotations

import os
import sys
import tempfile

import numpy as np

import fastgguf
from fastgguf.cli import main

HERE = os.path.dirname(os.path.abspath(__file__))
PLOT = os.path.join(HERE, os.pardir, "docs", "quant-stats.png")

#: name -> (rows, row length): two small "layers", 2.4 M weights in all.
SHAPES = {
    "blk.0.attn_q.weight": (512, 512), "blk.0.attn_k.weight": (128, 512), "blk.0.attn_v.weight": (128, 512),
    "blk.0.attn_output.weight": (512, 512), "blk.0.ffn_up.weight": (1536, 512),
    "blk.0.ffn_down.weight": (512, 1536),
}


def synthetic_weight(rng: np.random.Generator, shape: tuple[int, int]) -> np.ndarray:
    rows, columns = shape
    values = rng.standard_t(df=5, size=shape)  # heavier tails than a normal distribution
    values *= rng.lognormal(0.0, 0.3, size=(rows, 1))  # each row its own scale
    outliers = rng.choice(columns, size=max(1, columns // 128), replace=False)
    values[:, outliers] *= 8.0  # a few columns carry large values, as in real models
    return (values * 0.02 / np.sqrt(5 / 3)).astype(np.float32)


def write_model(path: str) -> None:
    rng = np.random.default_rng(2024)
    with fastgguf.GGUFWriter(path) as writer:
        writer.add("general.architecture", "llama")
        writer.add("general.name", "fastgguf synthetic quant-stats example")
        for name, shape in SHAPES.items():
            writer.add_tensor(name, synthetic_weight(rng, shape))
        writer.add_tensor("blk.0.attn_norm.weight", np.ones(512, np.float32))  # 1-D: left out


def write_imatrix(path: str) -> None:
    """An importance matrix as llama-imatrix writes one: per weight, the sums of its squared inputs.

    The inputs are synthetic activations: each column its own scale, a few columns far larger
    (the outlier channels real models have), over 512 tokens.
    """
    rng = np.random.default_rng(7)
    tokens = 512
    with fastgguf.GGUFWriter(path) as writer:
        writer.add("general.type", "imatrix")
        writer.add("imatrix.datasets", ["synthetic activations"])
        writer.add("imatrix.chunk_count", 1, fastgguf.GGUFValueType.UINT32)
        writer.add("imatrix.chunk_size", tokens, fastgguf.GGUFValueType.UINT32)
        for name, (_, columns) in SHAPES.items():
            scale = rng.lognormal(0.0, 0.5, size=columns)
            scale[rng.choice(columns, size=max(1, columns // 64), replace=False)] *= 10.0
            activations = rng.standard_normal((tokens, columns)) * scale
            writer.add_tensor(name + ".in_sum2", (activations**2).sum(axis=0).astype(np.float32).reshape(1, -1))
            writer.add_tensor(name + ".counts", np.full((1, 1), tokens, np.float32))


def run(argv: list[str]) -> int:
    with tempfile.TemporaryDirectory() as scratch:
        model = os.path.join(scratch, "synthetic.gguf")
        imatrix = os.path.join(scratch, "imatrix.gguf")
        write_model(model)
        write_imatrix(imatrix)
        os.makedirs(os.path.dirname(PLOT), exist_ok=True)
        return main(["quant-stats", model, "--all", "--imatrix", imatrix, "--plot", os.path.normpath(PLOT), *argv])


if __name__ == "__main__":
    sys.exit(run(sys.argv[1:]))
