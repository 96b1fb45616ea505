"""What every fuzz input goes through: open, read every value and tensor, dequantize a few rows.

The contract under test: ``fastgguf.open`` either raises GGUFError or returns a file whose every
value, string, sub-array and tensor can then be read without any error at all.
"""

from __future__ import annotations

import numpy as np

import fastgguf
from fastgguf import GGUFError

ROWS_TO_DEQUANTIZE = 2
SMALL_TENSOR_ELEMENTS = 1 << 16  # dequantized whole, on two threads


def consume(value, depth: int = 0) -> None:
    """Touch every byte a metadata value refers to."""
    if isinstance(value, fastgguf.reader.StringArray):
        items = value.tolist()
        assert len(items) == len(value)
        assert list(value) == items
        if items:
            assert value[-1] == items[-1]
            assert value.raw(0).decode("utf-8", "surrogateescape") == items[0]
            assert value[1:] == items[1:]
    elif isinstance(value, fastgguf.reader.ArrayOfArrays):
        for i in range(len(value)):
            value.element_type(i)
            consume(value[i], depth + 1)
    elif isinstance(value, np.ndarray):
        value.tobytes()
    else:
        assert isinstance(value, (int, float, str)), type(value)
        repr(value)


def exercise_file(f: fastgguf.GGUFFile) -> None:
    metadata = f.metadata
    for key in metadata:
        consume(metadata[key])
        metadata.value_type(key)
        metadata.element_type(key)
        if metadata.value_type(key) == fastgguf.GGUFValueType.STRING:
            metadata.raw(key)
    repr(f)
    for tensor in f.tensors.values():
        repr(tensor)
        raw = tensor.raw
        assert raw.nbytes == tensor.nbytes
        if raw.size:
            int(raw[0]) + int(raw[-1])
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
