"""fastgguf as transformers' GGUF kernel for CPU tensors (the packed path).

transformers (5.2x) can keep a GGUF model's weights as blocks in ``GgufLinear``,
``GgufEmbedding`` and ``GgufExperts`` modules and compute through a kernel object with
``mul_mat_vec``, ``mul_mat_id``, ``dequantize`` and ``get_rows``
(``transformers.integrations.gguf.kernels``); it resolves one only for accelerators, so on CPU it
dequantizes the whole model at load. :func:`install` registers fastgguf as that kernel for CPU
tensors: :func:`fastgguf.matmul` / :func:`fastgguf.matmul_id` for the products (the exact float
path), :func:`fastgguf.take_rows` for embedding rows, :func:`fastgguf.dequantize` for the rest.
Tensors on other devices go to the kernel transformers had resolved before, if any.

:func:`fastgguf.integrations.transformers.enable` calls :func:`install`, ``disable()`` calls
:func:`uninstall`.
"""

from __future__ import annotations

import threading
from typing import Any

import numpy as np

from .. import dequant as _dequant
from ..matmul import matmul, matmul_id, take_rows
from ..types import GGMLType

__all__ = ["install", "installed", "uninstall"]

_lock = threading.Lock()
_saved: dict[str, Any] = {}

#: Types whose tensors stay packed: every block type fastgguf computes from (plain float types are
#: ordinary tensors in transformers).
_PLAIN = {GGMLType.F32, GGMLType.F16, GGMLType.BF16, GGMLType.F64, GGMLType.I8, GGMLType.I16, GGMLType.I32, GGMLType.I64}


def _numpy(tensor) -> np.ndarray:
    """A numpy view of a CPU tensor (float32 for floating inputs, converted if needed)."""
    import torch

    if tensor.is_floating_point() and tensor.dtype != torch.float32:
        tensor = tensor.to(torch.float32)
    return tensor.detach().contiguous().numpy()


class _FastggufOps:
    """The four operations transformers asks of a GGUF kernel, on CPU tensors through fastgguf."""

    def __init__(self, fallback: Any):
        self.fallback = fallback  # the kernel transformers had resolved (False or None if none)
        self.GEMV_TYPES = frozenset(int(t) for t in _dequant.supported_types() if t not in _PLAIN)

    def _other(self, tensor, op: str):
        if self.fallback:
            return getattr(self.fallback, op)
        raise RuntimeError(f"fastgguf computes GGUF blocks on CPU only; this tensor is on {tensor.device}")

    def mul_mat_vec(self, weight, x, ggml_type: int, out_features: int):
        """``(N, row_bytes)`` uint8 blocks, ``(M, K)`` x -> ``(M, N)`` float32."""
        if weight.device.type != "cpu":
            return self._other(weight, "mul_mat_vec")(weight, x, ggml_type, out_features)
        import torch

        out = matmul(_numpy(x), _numpy(weight), ggml_type)
        return torch.from_numpy(out)

    def mul_mat_id(self, blocks, x, ids, ggml_type: int, out_features: int):
        """``(E, N, row_bytes)`` experts, ``(T, K)`` x, ``(T, E_used)`` ids -> ``(T, E_used, N)`` float32."""
        if blocks.device.type != "cpu":
            return self._other(blocks, "mul_mat_id")(blocks, x, ids, ggml_type, out_features)
        import torch

        out = matmul_id(_numpy(x), _numpy(blocks), ids.detach().cpu().numpy(), ggml_type)
        return torch.from_numpy(out)

    def dequantize(self, weight, ggml_type: int, rows: int, cols: int, dtype):
        """``(rows, row_bytes)`` blocks -> ``(rows, cols)`` in ``dtype``."""
        if weight.device.type != "cpu":
            return self._other(weight, "dequantize")(weight, ggml_type, rows, cols, dtype)
        import torch

        out = _dequant.dequantize(_numpy(weight), ggml_type, (rows, cols))
        return torch.from_numpy(out).to(dtype)

    def get_rows(self, weight, indices, ggml_type: int, cols: int, dtype):
        """Rows ``indices`` of ``(N, row_bytes)`` blocks -> ``(len(indices), cols)`` in ``dtype``."""
        if weight.device.type != "cpu":
            return self._other(weight, "get_rows")(weight, indices, ggml_type, cols, dtype)
        import torch

        out = take_rows(_numpy(weight), indices.detach().cpu().numpy(), ggml_type)
        return torch.from_numpy(out.reshape(-1, cols)).to(dtype)


def installed() -> bool:
    """Whether :func:`install` is in effect."""
    return bool(_saved)


def install() -> None:
    """Register fastgguf as transformers' GGUF kernel for CPU tensors (idempotent).

    Models loaded afterwards with ``from_pretrained(..., gguf_file=...)`` keep the weights of the
    architectures transformers' packed path supports as blocks on CPU.
    """
    from transformers.integrations.gguf import kernels

    with _lock:
        if _saved:
            return
        previous = kernels._gguf_kernel
        ops = _FastggufOps(previous if previous else None)
        _saved["_gguf_kernel"] = previous
        _saved["kernel_can_read"] = kernels.kernel_can_read
        original_can_read = kernels.kernel_can_read

        def kernel_can_read(tensor) -> bool:
            # compared with `is not False` like transformers' own, so dynamo can trace it
            return kernels._gguf_kernel is not False and (tensor.device.type == "cpu" or original_can_read(tensor))

        kernels._gguf_kernel = kernels.GgufKernel(ops)  # type: ignore[assignment]
        kernels.kernel_can_read = kernel_can_read


def uninstall() -> None:
    """Undo :func:`install`: transformers resolves its GGUF kernel its own way again."""
    from transformers.integrations.gguf import kernels

    with _lock:
        if not _saved:
            return
        kernels._gguf_kernel = _saved.pop("_gguf_kernel")
        kernels.kernel_can_read = _saved.pop("kernel_can_read")
