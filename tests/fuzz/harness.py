"""What every fuzz input goes through: open, read every value and tensor, dequantize a few rows.

The contract under test: ``fastgguf.open`` either raises GGUFError or returns a file whose every
value, string, sub-array and tensor can then be read without any error at all.
"""

from __future__ import annotations

import os
import sys

import numpy as np

import fastgguf
from fastgguf import GGUFError

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from conftest import read_everything  # noqa: E402 - the suite's one "read the whole file" helper

ROWS_TO_DEQUANTIZE = 2
SMALL_TENSOR_ELEMENTS = 1 << 16  # dequantized whole, on two threads


def exercise_file(f: fastgguf.GGUFFile) -> None:
    read_everything(f)
    for tensor in f.tensors.values():
        dequantize_some_rows(tensor)


def dequantize_some_rows(tensor) -> None:
    try:
        import fastgguf.dequant  # noqa: F401 - the engine may not be built yet
    except ImportError:
        return
    rows = int(np.prod(tensor.shape[:-1])) if len(tensor.shape) > 1 else 1
    first = tensor.dequantize(rows=slice(0, min(rows, ROWS_TO_DEQUANTIZE)))
    assert first.dtype == np.float32
    if rows:
        # Row indices (not a slice) take the kernels' other path; both must agree.
        picked = tensor.dequantize(rows=[rows - 1, 0])
        assert np.array_equal(picked[1].view(np.uint32), first[0].view(np.uint32))
    if tensor.n_elements <= SMALL_TENSOR_ELEMENTS:
        whole = tensor.dequantize(threads=2)
        # Not the shape: a 0-d tensor (n_dims = 0) has shape () but dequantizes to shape (1,).
        assert whole.size == tensor.n_elements


def exercise_path(path) -> bool:
    """Open and read everything; return False if the file was rejected with GGUFError."""
    try:
        f = fastgguf.open(path)
    except GGUFError:
        try:
            # A well-formed file is also refused as an incomplete split model: read it alone too.
            f = fastgguf.GGUFFile(path)
        except GGUFError:
            return False
    with f:
        exercise_file(f)
    return True
