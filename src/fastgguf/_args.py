"""Argument checks shared by the operations (dequantize, quantize, matmul).

The package's one error rule: :class:`fastgguf.GGUFError` is for bad file data only (it names the
byte offset). A caller's mistake — a wrong type, shape, dtype or buffer — is a plain ``TypeError``
(wrong kind of object) or ``ValueError`` (right kind, wrong value), raised by these helpers.
"""

from __future__ import annotations

from typing import Any

import numpy as np

__all__ = ["check_out", "contiguous_bytes"]


def contiguous_bytes(data: Any, what: str = "data") -> np.ndarray:
    """A zero-copy 1-D uint8 view of ``data`` (a numpy array or any buffer)."""
    if isinstance(data, np.ndarray):
        if not data.flags.c_contiguous:
            raise ValueError(f"{what} must be C-contiguous")
        return data.reshape(-1).view(np.uint8)
    try:
        return np.frombuffer(data, dtype=np.uint8)
    except (TypeError, ValueError, BufferError) as exc:
        raise TypeError(f"{what} must be a bytes-like object or a numpy array, not {type(data).__name__} ({exc})") from None


def check_out(out: Any, result: tuple[int, ...] | int, dtype: Any = np.float32) -> np.ndarray:
    """``out`` if it can take a result of shape ``result`` (or of that many elements) and ``dtype``."""
    if not isinstance(out, np.ndarray):
        raise TypeError(f"out must be a numpy array, not {type(out).__name__}")
    if out.dtype != dtype:
        raise TypeError(f"out must have dtype {np.dtype(dtype)}, not {out.dtype}")
    if not out.flags.c_contiguous:
        raise ValueError("out must be C-contiguous")
    if not out.flags.writeable:
        raise ValueError("out is read-only")
    if isinstance(result, int):
        if out.size != result:
            raise ValueError(f"out has {out.size} elements, the result has {result}")
    elif out.shape != tuple(result):
        raise ValueError(f"out has shape {out.shape}, the result has shape {tuple(result)}")
    return out
