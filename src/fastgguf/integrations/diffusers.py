"""Make Hugging Face diffusers load and run GGUF models through fastgguf.

After :func:`enable` (or inside ``with enabled():``), a GGUF checkpoint loaded with
``from_single_file(path, quantization_config=GGUFQuantizationConfig(compute_dtype=...))``:

- is read by fastgguf: the header is parsed by fastgguf's parser and every tensor is a view of a
  private (copy-on-write) map of the file, not a copy; quantized weights stay file-backed pages
  until something writes to them (nothing in diffusers does). The views are writable, so torch
  gives no "non-writable array" warning, and a write never reaches the file.
- may hold every ggml type fastgguf dequantizes: besides the 13 quantized types diffusers' GGUF
  code has, IQ1_S/IQ1_M, IQ2_XXS/XS/S, IQ3_XXS/S, TQ1_0/TQ2_0, MXFP4, NVFP4, Q1_0, Q2_0, Q8_K,
  ... load and run (diffusers itself refuses them).
- dequantizes its weights on every forward (``GGUFLinear``, the weights diffusers dequantizes at
  load or when un-quantizing a model) with fastgguf's CPU kernels, straight into the layer's
  ``compute_dtype``.

Values. fastgguf's dequantization is ggml's (float32). diffusers' torch dequantizers, run in
float32 (``dtype=torch.float32``), give bit-identical values for all 13 of its types. By default,
though, diffusers runs most of them in float16 (the block scales' type): Q8_0, Q4_0 and Q5_0 are
then the float32 values rounded once to float16; Q4_1, Q5_1, the K-quants and IQ4_XS round
several intermediate products to float16 (|error| up to about a float16 ulp of the block's
largest value); IQ4_NL and BF16 stay float32. fastgguf keeps the float32 values and rounds once,
to ``compute_dtype``: weights and outputs are bit-identical to diffusers for BF16, F16, F32 and
IQ4_NL tensors (and to diffusers' float32 dequantizers for every type), and within those float16
roundings of diffusers' default path for the others. Where ``compute_dtype`` is float16, Q8_0,
Q4_0 and Q5_0 are bit-identical too (one rounding to float16 either way).

Products. diffusers' ``GGUFLinear`` multiplies in ``compute_dtype``; torch's bfloat16 and
float16 matrix products on a CPU without native instructions for them (AVX512-BF16 or AMX for
bfloat16, AVX512-FP16 or AMX-FP16 for float16: most x86 CPUs) run several times slower than its
float32 ones. With ``products="float32"`` (what ``"auto"``, the default, picks on such CPUs), a
CPU ``GGUFLinear`` whose input is in ``compute_dtype`` bfloat16 or float16 multiplies the same
values in float32 instead: the weight rounded to ``compute_dtype`` as diffusers rounds it, the
input and bias exactly as given, float32 products and sums, the output rounded once to
``compute_dtype`` — what torch's own ``compute_dtype`` product computes (it also accumulates in
float32), up to the order of the sums: an output differs from it by one ``compute_dtype`` unit in
the last place where its float32 sum lies that near a rounding boundary (measured: ~1e-4 of the
bfloat16 outputs, ~2e-3 of the float16 ones, per layer). ``products="compute_dtype"`` keeps
diffusers' product, and with it the bit-identical outputs below. The conversions are fastgguf's
(torch's own float16/bfloat16 casts are slow on such CPUs). When autograd records the forward,
diffusers' product is used.

Layers, chosen by feature detection of the names diffusers has, never by a version pin (deepest
first; :func:`enable` returns the one in use, :func:`active_layer` says it later):

- ``"diffusers"``: ``load_gguf_checkpoint`` (diffusers' GGUF reader), ``dequantize_gguf_tensor``
  (wherever it was imported) and ``GGUFLinear.forward_native`` are replaced, and everything of
  the layers below;
- ``"dequantize_functions"``: diffusers' per-type block dequantizers (its ``dequantize_functions``
  table) are fastgguf's for every type fastgguf has, and its list of supported types and block
  sizes are extended; the checkpoint is read by diffusers' own loader through the gguf-py layer
  (so with its per-tensor copy);
- ``"gguf-py"``: gguf-py's reader and dequantizer are fastgguf's
  (:mod:`fastgguf.integrations.gguf_py`): diffusers' loader reads through fastgguf's parser.

Each hook is installed whenever diffusers has what it replaces, so a release missing one still
gets the others. Tensors on other devices than the CPU go to diffusers' own code.
"""

from __future__ import annotations

import contextlib
import importlib
import importlib.util
import inspect
import logging
import mmap
import os
import sys
import threading
from collections.abc import Callable, Iterator
from typing import Any

import numpy as np

from . import _layers

__all__ = ["LAYERS", "PRODUCTS", "active_layer", "active_products", "disable", "enable", "enabled", "installed_hooks",
           "is_enabled", "native_half_products", "unsupported_reason"]

#: The layers :func:`enable` can turn on, deepest first.
LAYERS = ("diffusers", "dequantize_functions", "gguf-py")
#: How a CPU ``GGUFLinear`` multiplies (:func:`enable`'s ``products``; see the module doc).
PRODUCTS = ("auto", "float32", "compute_dtype")
#: The oldest diffusers release tested. There is no upper bound: a release whose GGUF code moved
#: gets the hooks it still has room for, down to the gguf-py layer.
OLDEST_TESTED_DIFFUSERS = "0.37.0"

logger = logging.getLogger(__name__)

_UTILS = "diffusers.quantizers.gguf.utils"
_LOADING = "diffusers.models.model_loading_utils"

_lock = threading.RLock()
# (owner, attribute or key, owner had it, original); owner a module, a class or a dict
_patches: list[tuple[Any, Any, bool, Any]] = []
_layer: list[str] = []
_hooks: list[str] = []
_owns_gguf_py: list[bool] = []
_products: list[str] = []  # "float32" or "compute_dtype" while enabled


def unsupported_reason() -> str | None:
    """Why :func:`enable` would do nothing here (torch, diffusers or gguf missing), or None."""
    missing = [name for name in ("torch", "diffusers", "gguf") if importlib.util.find_spec(name) is None]
    if missing:
        return (f"{' and '.join(missing)} not installed (pip install \"fastgguf[diffusers]\"; diffusers' GGUF "
                f"support needs torch and gguf)")
    return None


def active_layer() -> str | None:
    """The layer in use (one of :data:`LAYERS`), or None when not enabled."""
    return _layer[0] if _layer else None


def active_products() -> str | None:
    """How a CPU ``GGUFLinear`` multiplies while enabled (``"float32"`` or ``"compute_dtype"``), or None."""
    return _products[0] if _products else None


def _cpu_flags() -> set[str]:
    try:
        with open("/proc/cpuinfo", encoding="ascii", errors="replace") as handle:
            for line in handle:
                if line.startswith("flags"):
                    return set(line.split(":", 1)[1].split())
    except OSError:
        pass
    return set()


def native_half_products() -> dict[str, bool | None]:
    """Whether this CPU has instructions for bfloat16 and float16 matrix products (None: unknown).

    torch's own probes (``torch.cpu._is_avx512_bf16_supported`` ...) where it has them, else the
    Linux CPU flags. Only x86-64 is judged; elsewhere both are None.
    """
    import platform

    if platform.machine().lower() not in ("x86_64", "amd64"):
        return {"bfloat16": None, "float16": None}
    import torch

    def probe(name: str) -> bool | None:
        function = getattr(getattr(torch, "cpu", None), name, None)
        try:
            return bool(function()) if callable(function) else None
        except Exception:  # noqa: BLE001 - a private probe that moved: fall back to the flags
            return None

    flags = _cpu_flags()
    known = bool(flags)
    bf16 = [probe("_is_avx512_bf16_supported"), probe("_is_amx_tile_supported")]
    fp16 = [probe("_is_amx_fp16_supported")]
    if known:
        bf16 += ["avx512_bf16" in flags, "amx_bf16" in flags]
        fp16 += ["avx512_fp16" in flags, "amx_fp16" in flags]

    def verdict(answers: list[bool | None]) -> bool | None:
        return True if any(answers) else (False if known or any(a is not None for a in answers) else None)

    return {"bfloat16": verdict(bf16), "float16": verdict(fp16)}


def _resolve_products(products: str) -> str:
    if products not in PRODUCTS:
        raise ValueError(f"products must be one of {PRODUCTS}, not {products!r}")
    if products != "auto":
        return products
    native = native_half_products()
    # float32 only where both half types are known to lack native products (what is measured here)
    return "float32" if native["bfloat16"] is False and native["float16"] is False else "compute_dtype"


def installed_hooks() -> tuple[str, ...]:
    """The names of diffusers' objects replaced while enabled (empty when not enabled)."""
    return tuple(_hooks)


def is_enabled() -> bool:
    """Whether diffusers currently loads and dequantizes GGUF weights through fastgguf."""
    return bool(_layer)


# --- feature detection --------------------------------------------------------------------------------


def _import(name: str) -> Any:
    """Module ``name``, or None when it (or something it imports) is missing."""
    try:
        return importlib.import_module(name)
    except ImportError:
        return None


def _positional(function: Any, count: int) -> bool:
    """Whether ``function`` can be called with ``count`` positional arguments."""
    try:
        signature = inspect.signature(function)
    except (TypeError, ValueError):
        return False
    try:
        signature.bind(*range(count))
    except TypeError:
        return False
    return True


def _has_table(utils: Any) -> bool:
    table = getattr(utils, "dequantize_functions", None)
    return isinstance(table, dict) and isinstance(getattr(utils, "GGML_QUANT_SIZES", None), dict) and \
        all(callable(function) for function in table.values())


def _has_parameter(utils: Any) -> bool:
    cls = getattr(utils, "GGUFParameter", None)
    if not isinstance(cls, type):
        return False
    try:
        return "quant_type" in inspect.signature(cls.__new__).parameters
    except (TypeError, ValueError):
        return False


def _detect() -> dict[str, Any]:
    """What diffusers has room for: ``{hook name: owner}`` for each hook that can be installed."""
    found: dict[str, Any] = {}
    utils = _import(_UTILS)
    loading = _import(_LOADING)
    if utils is None:
        return found
    if _has_table(utils):
        found["dequantize_functions"] = utils
    if not _has_parameter(utils):
        return found  # the deeper hooks make diffusers' parameters: without the class, none of them
    if loading is not None and _positional(getattr(loading, "load_gguf_checkpoint", None), 1) \
            and isinstance(getattr(utils, "GGML_QUANT_SIZES", None), dict):
        found["load_gguf_checkpoint"] = loading
    if _positional(getattr(utils, "dequantize_gguf_tensor", None), 1):
        found["dequantize_gguf_tensor"] = utils
    linear = getattr(utils, "GGUFLinear", None)
    if isinstance(linear, type) and _positional(getattr(linear, "forward_native", None), 2):
        found["GGUFLinear.forward_native"] = linear
    return found


# --- enable / disable ---------------------------------------------------------------------------------


def _patch(owner: Any, attribute: Any, replacement: Any) -> None:
    """Set ``owner.attribute`` (or ``owner[attribute]`` for a dict) to ``replacement``, remembering the original."""
    if isinstance(owner, dict):
        had = attribute in owner
        _patches.append((owner, attribute, had, owner.get(attribute)))
        owner[attribute] = replacement
    else:
        had = attribute in vars(owner)
        _patches.append((owner, attribute, had, vars(owner).get(attribute)))
        setattr(owner, attribute, replacement)


def _rebind(original: Any, replacement: Any) -> None:
    """Point every diffusers module global that is ``original`` at ``replacement`` (names imported by value)."""
    for module in list(sys.modules.values()):
        name = getattr(module, "__name__", None)
        namespace = getattr(module, "__dict__", None)
        if not isinstance(name, str) or not name.startswith("diffusers") or not isinstance(namespace, dict):
            continue
        for attribute, value in list(namespace.items()):
            if value is original:
                _patch(module, attribute, replacement)


def _undo_patches() -> None:
    while _patches:
        owner, attribute, had, original = _patches.pop()
        if isinstance(owner, dict):
            if had:
                owner[attribute] = original
            else:
                owner.pop(attribute, None)
        elif had:
            setattr(owner, attribute, original)
        else:
            delattr(owner, attribute)


def enable(layer: str | None = None, *, products: str = "auto") -> str | bool:
    """Make diffusers load and dequantize GGUF weights through fastgguf (until :func:`disable`).

    Every hook the installed diffusers has room for is installed (see the module's doc). Calling it
    again while enabled does nothing. An error part-way leaves nothing changed.

    Parameters
    ----------
    layer : {None, "diffusers", "dequantize_functions", "gguf-py"}
        None: the deepest the installed diffusers supports. Another value asks for that layer and
        the ones below it only; RuntimeError when diffusers lacks what it replaces.
    products : {"auto", "float32", "compute_dtype"}
        How a CPU ``GGUFLinear`` in bfloat16 or float16 multiplies (the ``"diffusers"`` layer; see
        the module doc): ``"float32"`` — the same values multiplied in float32, the output rounded
        once to ``compute_dtype``; ``"compute_dtype"`` — torch's product in ``compute_dtype``, as
        diffusers (bit-identical outputs); ``"auto"`` — ``"float32"`` on x86-64 CPUs known to have
        neither bfloat16 nor float16 matrix instructions (:func:`native_half_products`), else
        ``"compute_dtype"``. :func:`active_products` says which is in use.

    Returns
    -------
    str or bool
        The active layer (true); False (after a ``RuntimeWarning`` saying why) when torch,
        diffusers or gguf is missing.
    """
    from . import gguf_py

    if products not in PRODUCTS:
        raise ValueError(f"products must be one of {PRODUCTS}, not {products!r}")
    with _lock:
        started = _layers.opening("diffusers", layer, LAYERS, _layer, unsupported_reason)
        if started is not None:
            return started
        found = _detect()
        deep = "load_gguf_checkpoint" in found and "dequantize_gguf_tensor" in found
        if layer == "diffusers" and not deep:
            raise RuntimeError(f"diffusers lacks the GGUF functions the 'diffusers' layer replaces (has: {sorted(found)})")
        if layer == "dequantize_functions" and "dequantize_functions" not in found:
            raise RuntimeError("diffusers has no dequantize_functions table")
        if layer == "dequantize_functions":
            found = {"dequantize_functions": found["dequantize_functions"]}
        elif layer == "gguf-py":
            found = {}
        already = gguf_py.is_enabled()
        gguf_py.enable()
        try:
            _products[:] = [_resolve_products(products)]
            _install(found)
            if deep and layer in (None, "diffusers"):
                _layer.append("diffusers")
            elif "dequantize_functions" in found:
                _layer.append("dequantize_functions")
            else:
                _layer.append("gguf-py")
        except BaseException:
            _undo_patches()
            _hooks.clear()
            _layer.clear()
            _products.clear()
            if not already:
                gguf_py.disable()
            raise
        _owns_gguf_py[:] = [not already]
        if _layer[0] != "diffusers":
            logger.info("fastgguf.integrations.diffusers: using the %r layer (hooks: %s)", _layer[0], _hooks)
        return _layer[0]


def _install(found: dict[str, Any]) -> None:
    """Install the hooks in ``found`` (from :func:`_detect`), the shallowest first."""
    if "dequantize_functions" in found:
        _install_table(found["dequantize_functions"])
    if "load_gguf_checkpoint" in found:
        _install_loader(found["load_gguf_checkpoint"])
    if "dequantize_gguf_tensor" in found:
        _install_dequantize(importlib.import_module(_UTILS))
    if "GGUFLinear.forward_native" in found:
        _install_forward(found["GGUFLinear.forward_native"])


def disable() -> None:
    """Undo :func:`enable`: every name replaced holds diffusers' (and gguf-py's) own object again."""
    from . import gguf_py

    with _lock:
        if not _layer:
            return
        _undo_patches()
        if _owns_gguf_py and _owns_gguf_py[0]:
            gguf_py.disable()
        _owns_gguf_py.clear()
        _hooks.clear()
        _layer.clear()
        _products.clear()


@contextlib.contextmanager
def enabled(layer: str | None = None, *, products: str = "auto") -> Iterator[str | bool]:
    """``with enabled():`` — :func:`enable` on entry, :func:`disable` on exit (if this call enabled it)."""
    with _layers.enabled_while(lambda: enable(layer, products=products), disable, is_enabled) as result:
        yield result


# --- types ------------------------------------------------------------------------------------------


def _fast_types() -> dict[int, Any]:
    """``{type id: type}`` for every block type fastgguf dequantizes; gguf-py's enum member where it has one."""
    import gguf

    from ..dequant import supported_types

    plain = {"F32", "F16", "F64", "I8", "I16", "I32", "I64"}  # tensors diffusers keeps as plain torch tensors
    result: dict[int, Any] = {}
    for qtype in supported_types():
        if qtype.name in plain:
            continue
        try:
            result[int(qtype)] = gguf.GGMLQuantizationType(int(qtype))
        except ValueError:
            result[int(qtype)] = qtype  # newer than the installed gguf-py: fastgguf's IntEnum (same hash, same ==)
    return result


def _sizes(qtype: Any) -> tuple[int, int]:
    from ..types import traits_of

    traits = traits_of(int(qtype))
    return traits.block_size, traits.type_size


def _install_table(utils: Any) -> None:
    """diffusers' per-type dequantizers, supported-type list and block sizes, for every type fastgguf has."""
    table = utils.dequantize_functions
    for type_id, qtype in _fast_types().items():
        _patch(table, qtype, _block_dequantizer(type_id, table.get(qtype)))
    sizes = utils.GGML_QUANT_SIZES
    extended = dict(sizes)
    for type_id, qtype in _fast_types().items():
        if qtype not in extended:
            extended[qtype] = _sizes(type_id)
    if len(extended) != len(sizes):
        _rebind(sizes, extended)  # a copy: gguf-py's own GGML_QUANT_SIZES stays as it is
    supported = getattr(utils, "SUPPORTED_GGUF_QUANT_TYPES", None)
    if isinstance(supported, list):
        _rebind(supported, [*supported, *(qtype for qtype in table if qtype not in supported)])
    _hooks.append("dequantize_functions")


def _block_dequantizer(type_id: int, theirs: Callable | None) -> Callable:
    """An entry of diffusers' ``dequantize_functions``: ``(blocks, block_size, type_size, dtype=None)`` -> values."""
    from ..dequant import dequantize

    def dequantize_blocks(blocks, block_size, type_size, dtype=None):
        import torch

        if blocks.device.type != "cpu" and theirs is not None:
            return theirs(blocks, block_size, type_size, dtype=dtype)
        device = blocks.device
        data = blocks.detach().to("cpu").contiguous().view(torch.uint8).numpy()
        n_blocks = data.size // type_size
        values = torch.from_numpy(dequantize(data, type_id, (n_blocks, block_size)))
        if dtype is not None:
            values = values.to(dtype)
        return values.to(device)

    dequantize_blocks.__name__ = f"fastgguf_dequantize_{type_id}"
    return _eager(dequantize_blocks)


def _eager(function: Callable) -> Callable:
    """``function``, run eagerly (a graph break) under ``torch.compile``: it calls numpy and fastgguf's
    kernels, which dynamo cannot trace. torch.compiler.disable, else torch._dynamo.disable, else as is."""
    import torch

    disable = getattr(getattr(torch, "compiler", None), "disable", None)
    if not callable(disable):
        disable = getattr(getattr(torch, "_dynamo", None), "disable", None)
    return disable(function) if callable(disable) else function


def _install_dequantize(utils: Any) -> None:
    """``dequantize_gguf_tensor``, in diffusers' GGUF utils and wherever diffusers imported it."""
    theirs = utils.dequantize_gguf_tensor
    dequantize_parameter = _eager(_dequantize_parameter)

    def dequantize_gguf_tensor(tensor):
        if not hasattr(tensor, "quant_type") or tensor.device.type != "cpu":
            return theirs(tensor)
        return dequantize_parameter(tensor, None)

    dequantize_gguf_tensor.__doc__ = "fastgguf's dequantization of a GGUFParameter (float32), diffusers' own elsewhere."
    _patch(utils, "dequantize_gguf_tensor", dequantize_gguf_tensor)
    _rebind(theirs, dequantize_gguf_tensor)
    _hooks.append("dequantize_gguf_tensor")


def _dequantize_parameter(tensor, dtype):
    """A CPU GGUFParameter's values as a plain tensor of ``dtype`` (float32 if None), from fastgguf's float32 values."""
    import torch

    from ..dequant import dequantize_as
    from ..torch import empty_like_numpy

    qtype = tensor.quant_type
    block_size, type_size = _sizes(qtype)
    data = torch.Tensor.as_subclass(tensor, torch.Tensor).detach().contiguous().view(torch.uint8)
    shape = (*data.shape[:-1], data.shape[-1] // type_size * block_size)
    result, array = empty_like_numpy(shape, torch.float32 if dtype is None else dtype)
    dequantize_as(data.numpy(), int(qtype), shape, dtype=array.dtype, out=array)  # float32, rounded once to dtype
    return result


_FLOAT_DTYPES = ("float32", "float16", "bfloat16", "float64")
_DTYPE_NAMES: dict[Any, str] = {}  # torch dtype -> its name in _FLOAT_DTYPES (filled when the hook is installed)


def _half_bits(tensor):
    """A contiguous CPU float16/bfloat16 tensor's elements as a flat numpy uint16 array (shared memory)."""
    import torch

    return tensor.view(torch.int16).numpy().reshape(-1).view(np.uint16)


#: Below this many elements a conversion is one direct kernel call: a layer's product is called
#: dozens of times per forward, and the checked, threaded entry points cost tens of microseconds each.
_DIRECT_ELEMENTS = 1 << 17
#: Up to this many rows of input, a float32 product is computed from the blocks (fastgguf.matmul's float
#: path): measured faster than the dequantized weight and torch's product for 1-16 rows (Q4_K 18432x3072,
#: 1 row: 14 against 34 ms; 16 rows: 46 against 71 ms).
_FROM_BLOCKS_ROWS = 16


def _linear_float32(inputs, weight, bias, compute_dtype, half: str):
    """diffusers' ``GGUFLinear`` product in float32: the same inputs, one rounding of the output to ``compute_dtype``.

    Called with a CPU ``inputs`` of ``compute_dtype`` (bfloat16 or float16) and a CPU GGUFParameter;
    the sizes below are those of tensors torch made, so the kernels are called directly when small.
    """
    import torch

    from .. import _backend
    from ..dequant import HALF_TYPES, dequantize, dequantize_rounded, narrow_floats

    kernels = _backend.kernels()
    half_type = int(HALF_TYPES[half])
    x = inputs.contiguous()
    x32 = torch.empty(x.shape, dtype=torch.float32)
    x_bits, x32_flat = _half_bits(x).view(np.uint8), x32.numpy().reshape(-1)
    if x32_flat.size < _DIRECT_ELEMENTS:
        kernels.dequantize_into(x_bits, x32_flat, half_type)  # exact
    else:
        dequantize(x_bits, half_type, out=x32_flat)
    # diffusers' weight: the float32 values rounded once to compute_dtype (here kept as float32)
    type_id = int(weight.quant_type)
    block_size, type_size = _sizes(type_id)
    data = torch.Tensor.as_subclass(weight, torch.Tensor).detach().contiguous().view(torch.uint8).numpy()
    shape = (*data.shape[:-1], data.shape[-1] // type_size * block_size)
    b32 = None if bias is None else bias.to(compute_dtype).to(torch.float32)
    rows = x32_flat.size // shape[-1] if shape[-1] else 0
    if data.ndim == 2 and 0 < rows <= _FROM_BLOCKS_ROWS:
        # few rows (a timestep's modulation): the product straight from the blocks, each weight rounded in
        # L1, instead of a float32 copy of the weight written and read back
        from ..matmul import matmul

        product = matmul(x32_flat.reshape(rows, shape[-1]), data, type_id, round_weights=half)
        if b32 is not None:
            product += b32.numpy()
        out32 = torch.from_numpy(product).reshape(*x.shape[:-1], shape[0])
    else:
        if data.size // type_size * block_size < _DIRECT_ELEMENTS:
            w32 = torch.empty(shape, dtype=torch.float32)
            kernels.dequantize_rounded_into(data.reshape(-1), w32.numpy().reshape(-1), type_id, half_type)
        else:
            w32 = torch.from_numpy(dequantize_rounded(data, type_id, shape, dtype=half))
        out32 = torch.nn.functional.linear(x32, w32, b32).contiguous()
    result = torch.empty(out32.shape, dtype=compute_dtype)
    if out32.numel() < _DIRECT_ELEMENTS:
        kernels.narrow_floats(out32.numpy().reshape(-1), _half_bits(result), half_type)
    else:
        narrow_floats(out32.numpy(), half, out=_half_bits(result))
    return result


def _install_forward(linear: Any) -> None:
    """``GGUFLinear.forward_native``: the weight dequantized straight into ``compute_dtype``, then diffusers' linear."""
    import torch

    theirs = linear.forward_native
    _DTYPE_NAMES.update({getattr(torch, name): name for name in _FLOAT_DTYPES})
    from ..dequant import HALF_TYPES

    # _linear_float32 looked up at each call, so that a wrapper set on the module (benchmarks/bench_diffusers) is used
    dequantize_parameter, linear_float32 = _eager(_dequantize_parameter), _eager(lambda *args: _linear_float32(*args))

    def forward_native(self, inputs):
        import torch

        weight = self.weight
        compute_dtype = getattr(self, "compute_dtype", None)
        name = _DTYPE_NAMES.get(compute_dtype) if isinstance(compute_dtype, torch.dtype) else None
        if name is None or not hasattr(weight, "quant_type") or weight.device.type != "cpu":
            return theirs(self, inputs)
        if (name in HALF_TYPES and _products and _products[0] == "float32" and isinstance(inputs, torch.Tensor)
                and inputs.dtype == compute_dtype and inputs.device.type == "cpu"
                and not (torch.is_grad_enabled() and (inputs.requires_grad or (self.bias is not None and self.bias.requires_grad)))):
            return linear_float32(inputs, weight, self.bias, compute_dtype, name)
        # the same values as diffusers' float32 dequantization followed by .to(compute_dtype): one rounding
        weight = dequantize_parameter(weight, compute_dtype)
        bias = self.bias.to(compute_dtype) if self.bias is not None else None
        return torch.nn.functional.linear(inputs, weight, bias)

    _patch(linear, "forward_native", forward_native)
    _hooks.append("GGUFLinear.forward_native")


# --- the loader ---------------------------------------------------------------------------------------


def _install_loader(loading: Any) -> None:
    """diffusers' ``load_gguf_checkpoint`` (what ``from_single_file`` and ``load_state_dict`` call for .gguf)."""
    theirs = loading.load_gguf_checkpoint

    def load_gguf_checkpoint(gguf_checkpoint_path, *args, **kwargs):
        result = _load_checkpoint(gguf_checkpoint_path)
        return theirs(gguf_checkpoint_path, *args, **kwargs) if result is None else result

    load_gguf_checkpoint.__doc__ = "fastgguf's reading of a GGUF checkpoint into diffusers' state dict (map-backed)."
    _patch(loading, "load_gguf_checkpoint", load_gguf_checkpoint)
    _rebind(theirs, load_gguf_checkpoint)
    _hooks.append("load_gguf_checkpoint")


_PLAIN_DTYPES = {"F32": np.float32, "F16": np.float16, "F64": np.float64, "I8": np.int8, "I16": np.int16,
                 "I32": np.int32, "I64": np.int64}


def _load_checkpoint(path: str | os.PathLike) -> dict[str, Any] | None:
    """``{gguf name: tensor}`` as diffusers' loader makes it, the tensors views of a private map of the file.

    Quantized tensors (BF16 included) are diffusers' ``GGUFParameter`` of the bytes, shaped
    ``(..., row bytes)``; F32 and F16 (and F64 and the integer types, which diffusers refuses)
    are plain tensors. None for a big-endian file (diffusers' own loader reads it, through the
    gguf-py layer).
    """
    import torch

    from .. import dequant
    from ..reader import GGUFFile

    utils = importlib.import_module(_UTILS)
    fast_types = _fast_types()
    with GGUFFile(path) as model:
        if model.byteorder != "<":
            return None
        infos = list(model.tensors.values())
    for info in infos:
        if info.type.name not in _PLAIN_DTYPES and (int(info.type) not in fast_types or not dequant.has_kernel(info.type)):
            raise ValueError(f"{info.name} has a quantization type: {info.type.name}, which fastgguf cannot dequantize")
    if not infos:
        return {}
    with open(os.fspath(path), "rb") as handle:
        # copy-on-write: the views are writable (no torch warning), pages stay the file's until written, and a
        # write never reaches the file. Every view holds the map; it is unmapped when the last one goes.
        mapped = mmap.mmap(handle.fileno(), 0, access=mmap.ACCESS_COPY)
    parsed: dict[str, Any] = {}
    for info in infos:
        plain = _PLAIN_DTYPES.get(info.type.name)
        if plain is not None:
            count = info.nbytes // np.dtype(plain).itemsize
            array = np.frombuffer(mapped, dtype=plain, count=count, offset=info.offset).reshape(info.shape)
            parsed[info.name] = torch.from_numpy(array)
            continue
        block_size, type_size = _sizes(info.type)
        shape = (*info.shape[:-1], info.shape[-1] // block_size * type_size)
        array = np.frombuffer(mapped, dtype=np.uint8, count=info.nbytes, offset=info.offset).reshape(shape)
        parsed[info.name] = utils.GGUFParameter(torch.from_numpy(array), quant_type=fast_types[int(info.type)])
    return parsed
