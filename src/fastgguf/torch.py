"""GGUF tensors as ``torch.Tensor``: dequantized by fastgguf straight into the torch dtype asked for.

torch is imported when a function here is called, never when :mod:`fastgguf` is imported.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

import numpy as np

if TYPE_CHECKING:
    import torch

    from .reader import TensorInfo

__all__ = ["empty_like_numpy", "from_numpy", "load", "tensor"]


def _torch():
    try:
        import torch
    except ImportError:
        raise ImportError("fastgguf.torch needs PyTorch (pip install torch)") from None
    return torch


def _numpy_dtype(torch_dtype) -> np.dtype:
    """The numpy dtype that has the same bits as ``torch_dtype`` (bfloat16 through ``ml_dtypes``)."""
    torch = _torch()
    if torch_dtype == torch.bfloat16:
        try:
            import ml_dtypes
        except ImportError:
            raise ImportError("bfloat16 output needs the ml_dtypes package (pip install ml_dtypes)") from None
        return np.dtype(ml_dtypes.bfloat16)
    if not torch_dtype.is_floating_point or torch_dtype.itemsize not in (2, 4, 8):
        raise TypeError(f"dtype must be a floating torch dtype (float32, float16, bfloat16, float64), not {torch_dtype}")
    return np.dtype(str(torch_dtype).removeprefix("torch."))


def empty_like_numpy(shape: tuple[int, ...], dtype) -> tuple[torch.Tensor, np.ndarray]:
    """A new CPU tensor and a writable numpy array sharing its memory (bfloat16 as ``ml_dtypes.bfloat16``).

    Parameters
    ----------
    shape : tuple of int
    dtype : torch.dtype
        A floating dtype.

    Returns
    -------
    (torch.Tensor, numpy.ndarray)
    """
    torch = _torch()
    np_dtype = _numpy_dtype(dtype)
    result = torch.empty(shape, dtype=dtype)
    if dtype == torch.bfloat16:
        array = result.view(torch.int16).numpy().view(np_dtype)
    else:
        array = result.numpy()
    return result, array


def from_numpy(array: np.ndarray) -> torch.Tensor:
    """``torch.from_numpy`` that also takes ``ml_dtypes.bfloat16`` arrays (zero-copy, no cast).

    Parameters
    ----------
    array : numpy.ndarray

    Returns
    -------
    torch.Tensor
        Sharing ``array``'s memory.
    """
    torch = _torch()
    if array.dtype.name == "bfloat16":
        return torch.from_numpy(array.view(np.int16)).view(torch.bfloat16)
    return torch.from_numpy(array)


def tensor(info: TensorInfo, dtype=None, *, threads: int | None = None) -> torch.Tensor:
    """Dequantize one tensor into a new ``torch.Tensor`` of ``dtype``.

    Parameters
    ----------
    info : fastgguf.TensorInfo
        From ``fastgguf.open(path).tensors[name]``.
    dtype : torch.dtype, optional
        float32 (default), float16, bfloat16 or float64. The values are written straight into the
        tensor's memory in row blocks: there is no float32 copy of the whole tensor.
    threads : int, optional
        As for :func:`fastgguf.dequantize`.

    Returns
    -------
    torch.Tensor
        Shape ``info.shape`` (numpy order: the file's ggml dims reversed), on the CPU.
    """
    torch = _torch()
    dtype = torch.float32 if dtype is None else dtype
    result, array = empty_like_numpy(info.shape, dtype)
    info.dequantize(out=array, threads=threads, dtype=array.dtype)
    return result


def load(path: str | os.PathLike, dtype=None, names: Iterable[str] | None = None, *,
         threads: int | None = None) -> dict[str, Any]:
    """Dequantize a GGUF model's tensors (all, or those named) into ``{gguf_name: torch.Tensor}``.

    Parameters
    ----------
    path : str or os.PathLike
        A GGUF file; a shard of a split model loads the whole model.
    dtype : torch.dtype, optional
        Default ``torch.bfloat16``. See :func:`tensor`.
    names : iterable of str, optional
        Only these tensors (GGUF names), in this order.
    threads : int, optional
        As for :func:`fastgguf.dequantize`.

    Returns
    -------
    dict of str to torch.Tensor
        Keyed by GGUF tensor name, in file order (or ``names``' order); shapes in numpy order.

    Raises
    ------
    KeyError
        If a name in ``names`` is not a tensor of the model.
    """
    from . import open as open_gguf

    torch = _torch()
    dtype = torch.bfloat16 if dtype is None else dtype
    _numpy_dtype(dtype)  # a bad dtype fails before the file is opened
    with open_gguf(path) as model:
        infos = model.tensors
        chosen = list(infos) if names is None else list(names)
        result = {}
        for name in chosen:
            try:
                info = infos[name]
            except KeyError:
                raise KeyError(f"no tensor named {name!r}") from None
            result[name] = tensor(info, dtype, threads=threads)
        return result
