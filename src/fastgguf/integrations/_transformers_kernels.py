"""fastgguf as transformers' GGUF kernel for CPU tensors (the packed path).

transformers (5.2x) can keep a GGUF model's weights as blocks in ``GgufLinear``,
``GgufEmbedding`` and ``GgufExperts`` modules and compute through a kernel object with
``mul_mat_vec``, ``mul_mat_id``, ``dequantize`` and ``get_rows``
(``transformers.integrations.gguf.kernels``); it resolves one only for accelerators, so on CPU it
dequantizes the whole model at load. :func:`install` registers fastgguf as that kernel for CPU
tensors: :func:`fastgguf.matmul` / :func:`fastgguf.matmul_id` for the products, :func:`fastgguf.take_rows`
for embedding rows, :func:`fastgguf.dequantize` for the rest. Tensors on other devices go to the
kernel transformers had resolved before, if any.

The products take the exact float path by default (``install(exact=True)``: within 1e-5 of the
dequantized model's); ``exact=False`` takes the integer path, ``x`` rounded to int8 blocks as
llama.cpp (and the accelerator kernels transformers loads) do: about 1.2x the tokens per second
in decoding (README). A ``GgufLinear`` asks the kernel for its product only up to transformers'
``MAX_GEMV_ROWS`` rows of input (8, the accelerator kernels' limit), and dequantizes its weight a
chunk at a time for torch's matmul above that; on CPU fastgguf's products are faster than that
path for far more rows (measured: :data:`EXACT_GEMV_ROWS`), so :func:`install` raises that limit
while it is in effect, where transformers has it (feature-detected) and no accelerator kernel was
resolved before (whose products take no more rows than the limit).

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

__all__ = ["EXACT_GEMV_ROWS", "INTEGER_GEMV_ROWS", "install", "installed", "is_exact", "uninstall"]

_lock = threading.Lock()
_saved: dict[str, Any] = {}

#: Rows of input up to which a ``GgufLinear`` takes fastgguf's exact product (transformers' own path
#: above: chunks dequantized, torch's matmul). Measured, a 200 MB Q4_0 LFM2 forward (2 cores, AVX2),
#: prompt of 16 / 32 / 64 / 128 / 256 tokens, ms, transformers' path -> fastgguf's: torch on one thread
#: 423 -> 153, 542 -> 242, 845 -> 459, 1357 -> 880, 2473 -> 1811; torch on both threads (its spinning
#: threads then slow fastgguf's) 420 -> 247, 481 -> 443, 658 -> 831, 910 -> 1356, 1536 -> 2308.
EXACT_GEMV_ROWS = 32
#: The same for the integer path (``exact=False``): every row count (fastgguf's was faster at 16-256
#: tokens with torch on one thread, 107 / 331 / 1295 ms at 16 / 64 / 256; on two, 1.07-2.7x up to 64
#: and 0.91x at 256).
INTEGER_GEMV_ROWS = 1 << 30

#: Types whose tensors stay packed: every block type fastgguf computes from (plain float types are
#: ordinary tensors in transformers).
_PLAIN = {GGMLType.F32, GGMLType.F16, GGMLType.BF16, GGMLType.F64, GGMLType.I8, GGMLType.I16, GGMLType.I32, GGMLType.I64}


def _numpy(tensor) -> np.ndarray:
    """A numpy view of a CPU tensor (float32 for floating inputs, converted if needed). Each step only
    where needed: a product of a few microseconds is called once per weight and token."""
    import torch

    if tensor.dtype != torch.float32 and tensor.is_floating_point():
        tensor = tensor.to(torch.float32)
    if tensor.requires_grad:
        tensor = tensor.detach()
    if not tensor.is_contiguous():
        tensor = tensor.contiguous()
    return tensor.numpy()


class _FastggufOps:
    """The four operations transformers asks of a GGUF kernel, on CPU tensors through fastgguf."""

    def __init__(self, fallback: Any, exact: bool):
        self.fallback = fallback  # the kernel transformers had resolved (False or None if none)
        self.exact = exact  # the products' path (fastgguf.matmul's ``exact``)
        self.GEMV_TYPES = frozenset(int(t) for t in _dequant.supported_types() if t not in _PLAIN)

    def _other(self, tensor, op: str):
        if self.fallback:
            return getattr(self.fallback, op)
        raise RuntimeError(f"fastgguf computes GGUF blocks on CPU only; this tensor is on {tensor.device}")

    def mul_mat_vec(self, weight, x, ggml_type: int, out_features: int):
        """``(N, row_bytes)`` uint8 blocks, ``(M, K)`` x -> ``(M, N)`` float32."""
        if not weight.is_cpu:  # (not device.type: 0.7 us a call against 0.1)
            return self._other(weight, "mul_mat_vec")(weight, x, ggml_type, out_features)
        import torch

        out = matmul(_numpy(x), _numpy(weight), ggml_type, exact=self.exact)
        return torch.from_numpy(out)

    def mul_mat_id(self, blocks, x, ids, ggml_type: int, out_features: int):
        """``(E, N, row_bytes)`` experts, ``(T, K)`` x, ``(T, E_used)`` ids -> ``(T, E_used, N)`` float32."""
        if not blocks.is_cpu:
            return self._other(blocks, "mul_mat_id")(blocks, x, ids, ggml_type, out_features)
        import torch

        out = matmul_id(_numpy(x), _numpy(blocks), ids.detach().cpu().numpy(), ggml_type, exact=self.exact)
        return torch.from_numpy(out)

    def dequantize(self, weight, ggml_type: int, rows: int, cols: int, dtype):
        """``(rows, row_bytes)`` blocks -> ``(rows, cols)`` in ``dtype``."""
        if not weight.is_cpu:
            return self._other(weight, "dequantize")(weight, ggml_type, rows, cols, dtype)
        import torch

        out = _dequant.dequantize(_numpy(weight), ggml_type, (rows, cols))
        return torch.from_numpy(out).to(dtype)

    def get_rows(self, weight, indices, ggml_type: int, cols: int, dtype):
        """Rows ``indices`` of ``(N, row_bytes)`` blocks -> ``(len(indices), cols)`` in ``dtype``."""
        if not weight.is_cpu:
            return self._other(weight, "get_rows")(weight, indices, ggml_type, cols, dtype)
        import torch

        out = take_rows(_numpy(weight), indices.detach().cpu().numpy(), ggml_type)
        return torch.from_numpy(out.reshape(-1, cols)).to(dtype)


def installed() -> bool:
    """Whether :func:`install` is in effect."""
    return bool(_saved)


def _gemv_limit_owner() -> Any:
    """transformers' module whose ``MAX_GEMV_ROWS`` ``GgufLinear`` reads, or None where it has none."""
    try:
        from transformers.integrations.gguf import utils
    except ImportError:
        return None
    return utils if isinstance(getattr(utils, "MAX_GEMV_ROWS", None), int) else None


def _set_gemv_rows(exact: bool) -> None:
    """Raise transformers' row limit for the kernel's products (under _lock, installed), unless an
    accelerator kernel is in use too: its products take no more rows than the limit it set."""
    owner = _gemv_limit_owner()
    if owner is None or _saved["ops"].fallback:
        return
    if "MAX_GEMV_ROWS" not in _saved:
        _saved["MAX_GEMV_ROWS"] = (owner, owner.MAX_GEMV_ROWS)
    original = _saved["MAX_GEMV_ROWS"][1]
    owner.MAX_GEMV_ROWS = max(original, EXACT_GEMV_ROWS if exact else INTEGER_GEMV_ROWS)


def install(exact: bool = True) -> None:
    """Register fastgguf as transformers' GGUF kernel for CPU tensors.

    Models loaded afterwards with ``from_pretrained(..., gguf_file=...)`` keep the weights of the
    architectures transformers' packed path supports as blocks on CPU. Called again, it only sets
    ``exact`` (for models loaded before too).

    Parameters
    ----------
    exact : bool
        The products' path, as :func:`fastgguf.matmul`'s: True (default) the float path, False the
        integer path (``x`` rounded to int8 blocks, as llama.cpp computes; faster, relative error
        of each product about 1e-2).
    """
    if not isinstance(exact, bool):
        raise TypeError(f"exact must be True or False, not {exact!r}")
    from transformers.integrations.gguf import kernels

    with _lock:
        if _saved:
            _saved["ops"].exact = exact
            _set_gemv_rows(exact)
            return
        previous = kernels._gguf_kernel
        ops = _FastggufOps(previous if previous else None, exact)
        _saved["_gguf_kernel"] = previous
        _saved["kernel_can_read"] = kernels.kernel_can_read
        _saved["ops"] = ops
        original_can_read = kernels.kernel_can_read

        def kernel_can_read(tensor) -> bool:
            # compared with `is not False` like transformers' own, so dynamo can trace it
            return kernels._gguf_kernel is not False and (tensor.device.type == "cpu" or original_can_read(tensor))

        kernels._gguf_kernel = kernels.GgufKernel(ops)  # type: ignore[assignment]
        kernels.kernel_can_read = kernel_can_read
        _set_gemv_rows(exact)


def is_exact() -> bool | None:
    """The products' path while :func:`install` is in effect (its ``exact``), else None."""
    with _lock:
        return _saved["ops"].exact if _saved else None


def uninstall() -> None:
    """Undo :func:`install`: transformers resolves its GGUF kernel its own way again."""
    from transformers.integrations.gguf import kernels

    with _lock:
        if not _saved:
            return
        kernels._gguf_kernel = _saved.pop("_gguf_kernel")
        kernels.kernel_can_read = _saved.pop("kernel_can_read")
        if "MAX_GEMV_ROWS" in _saved:
            owner, rows = _saved.pop("MAX_GEMV_ROWS")
            owner.MAX_GEMV_ROWS = rows
        _saved.clear()
