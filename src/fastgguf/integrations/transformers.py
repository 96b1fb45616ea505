"""Make Hugging Face transformers read GGUF files through fastgguf.

After :func:`enable` (or inside ``with enabled():``), every GGUF entry point of transformers —
``AutoConfig`` / ``AutoTokenizer`` / ``AutoModel*.from_pretrained(..., gguf_file=...)`` — reads the
file with fastgguf instead of gguf-py and transformers' own header walk:

- each file's header is parsed once and kept (keyed by path, size and modification time), so the
  config, the tokenizer and the weights share one parse;
- the token and merge lists the tokenizer needs are fastgguf's lazy string arrays, decoded as read;
- tensors are dequantized by fastgguf's kernels straight into the dtype the model is loaded in
  (no float32 copy of the whole model for ``dtype=torch.bfloat16``/``float16``), written into the
  tensor's own memory;
- a shard of a split model opens the whole model.

Only reading and dequantizing are replaced. transformers' own code still maps the metadata to the
config, builds the tokenizer, maps tensor names and applies its transforms (the llama Q/K
permutation, the gemma norm offset, tied embeddings, ...), so the results are the same: the same
config, the same token ids, bit-identical float32 weights. A tensor whose transform does arithmetic
(the norm offset, MoE merges, ...) is dequantized to float32 and cast by torch after the transform,
as transformers does, so half-precision weights are bit-identical too. (Tensors a transform stores
itself — the MoE experts, merged — are cast as they are made, where transformers would hold them
in float32 until the end of the load; the rounding is the same.)

On the packed path (``transformers.integrations.gguf``, architectures whose weights may stay as
GGUF blocks), the metadata, the tensor table and the raw block views come from fastgguf; turning
blocks into values there stays transformers' own ``Dequantize`` operation.

Two layers, chosen by feature detection, never by a version pin:

- ``"transformers"``: the hooks above, when transformers has every function they replace, with the
  signatures they expect (checked at :func:`enable`);
- ``"gguf-py"``: otherwise (a transformers release that moved its GGUF code), gguf-py's public API
  is served by :mod:`fastgguf.gguf_compat` (:mod:`fastgguf.integrations.gguf_py`): transformers'
  own loading code runs unchanged on fastgguf's reader and kernels, slower than the hooks (its
  per-token value parsing stays) but with the same results.

The gguf-py layer is on under the hooks too, so nothing transformers reads through gguf-py is
left to gguf-py. :func:`enable` returns the active layer; :func:`active_layer` says it later.
"""

from __future__ import annotations

import collections
import contextlib
import importlib
import importlib.util
import inspect
import logging
import os
import threading
from collections.abc import Iterator
from typing import Any

import numpy as np

from . import _layers

__all__ = ["LAYERS", "active_layer", "disable", "enable", "enabled", "hooks_unavailable_reason", "is_enabled",
           "unsupported_reason"]

#: The layers :func:`enable` can turn on, deepest first.
LAYERS = ("transformers", "gguf-py")
#: The oldest transformers release tested (CI runs it and the newest release). There is no upper bound:
#: a release whose GGUF code moved gets the gguf-py layer.
OLDEST_TESTED_TRANSFORMERS = "5.23.0"

logger = logging.getLogger(__name__)

_CACHE_SIZE = 4  # open files kept: a config, tokenizer and model load of one file, or a few files

_lock = threading.RLock()
_patches: list[tuple[Any, str, bool, Any]] = []  # (owner, attribute, owner had it in __dict__, original)
_layer: list[str] = []  # the active layer, while enabled
_cache: collections.OrderedDict[tuple, Any] = collections.OrderedDict()
_FAST_TYPES = ["fastgguf"]  # `field.types` of the fields handed to transformers' legacy parser
_LAZY_STRING_ARRAYS = ("tokenizer.ggml.tokens", "tokenizer.ggml.merges")


def _kernels_module():
    """``fastgguf.integrations._transformers_kernels`` if it exists, else None."""
    name = __name__.rsplit(".", 1)[0] + "._transformers_kernels"
    try:
        return importlib.import_module(name)
    except ModuleNotFoundError as error:
        if error.name != name:
            raise
        return None


def unsupported_reason() -> str | None:
    """Why :func:`enable` would do nothing here (torch, transformers or gguf missing), or None.

    Returns
    -------
    str or None
    """
    missing = [name for name in ("torch", "transformers", "gguf") if importlib.util.find_spec(name) is None]
    if missing:
        return (f"{' and '.join(missing)} not installed (pip install \"fastgguf[transformers]\"; transformers' GGUF "
                f"loader needs torch, and gguf for its tensor-name map)")
    return None


def hooks_unavailable_reason() -> str | None:
    """Why the ``"transformers"`` layer cannot be used with the installed transformers, or None.

    Returns
    -------
    str or None
    """
    reason = unsupported_reason()
    if reason is not None:
        return reason
    try:
        _targets()
    except (ImportError, AttributeError, TypeError) as error:
        import transformers

        return f"transformers {transformers.__version__} lacks a GGUF loading function these hooks replace: {error}"
    return None


def active_layer() -> str | None:
    """The layer in use (one of :data:`LAYERS`), or None when not enabled."""
    return _layer[0] if _layer else None


def is_enabled() -> bool:
    """Whether transformers currently reads GGUF files through fastgguf."""
    return bool(_layer)


def enable(layer: str | None = None, *, exact: bool = True) -> str | bool:
    """Make transformers' GGUF loading read through fastgguf (until :func:`disable`).

    The deepest layer the installed transformers supports is turned on (see the module's doc); with
    the hooks, ``fastgguf.integrations._transformers_kernels`` is installed too (CPU kernels for
    weights kept as GGUF blocks). Calling it again while enabled only sets ``exact``. An error
    part-way leaves nothing changed.

    Parameters
    ----------
    layer : {None, "transformers", "gguf-py"}
        None: the deepest the installed transformers supports. ``"transformers"`` raises
        RuntimeError when the hooks cannot be used; ``"gguf-py"`` uses that layer alone.
    exact : bool
        For models whose weights stay as GGUF blocks (``GgufConfig(dequantize=False)``, the
        "transformers" layer): True (default), their products take :func:`fastgguf.matmul`'s exact
        float path; False, its integer path (the input rounded to int8 blocks, as llama.cpp
        computes: about 1.2x the tokens per second in decoding, see the README).

    Returns
    -------
    str or bool
        The active layer, ``"transformers"`` or ``"gguf-py"`` (both true); False (after a
        ``RuntimeWarning`` saying why) when torch, transformers or gguf is missing.
    """
    from . import gguf_py

    if not isinstance(exact, bool):
        raise TypeError(f"exact must be True or False, not {exact!r}")
    with _lock:
        started = _layers.opening("transformers", layer, LAYERS, _layer, unsupported_reason)
        if started is not None:
            kernels = _kernels_module() if started == "transformers" else None
            if kernels is not None:
                kernels.install(exact=exact)
            return started
        hooks_missing = hooks_unavailable_reason() if layer != "gguf-py" else "the gguf-py layer was asked for"
        if layer == "transformers" and hooks_missing is not None:
            raise RuntimeError(hooks_missing)
        already = gguf_py.is_enabled()
        gguf_py.enable()
        try:
            if hooks_missing is None:
                for owner, attribute, replacement in _replacements():
                    had = attribute in vars(owner)
                    _patches.append((owner, attribute, had, vars(owner).get(attribute)))
                    setattr(owner, attribute, replacement)
                kernels = _kernels_module()
                if kernels is not None:
                    kernels.install(exact=exact)
                _layer.append("transformers")
            else:
                logger.info("fastgguf.integrations.transformers: %s; using the gguf-py layer", hooks_missing)
                _layer.append("gguf-py")
        except BaseException:
            _undo_patches()
            if not already:
                gguf_py.disable()
            raise
        _owns_gguf_py[:] = [not already]
        return _layer[0]


_owns_gguf_py: list[bool] = []  # whether enable() turned the gguf-py layer on (so disable() turns it off)


def _undo_patches() -> None:
    while _patches:
        owner, attribute, had, original = _patches.pop()
        if had:
            setattr(owner, attribute, original)
        else:
            delattr(owner, attribute)


def disable() -> None:
    """Undo :func:`enable`: transformers reads GGUF files its own way again; cached files are closed."""
    from . import gguf_py

    with _lock:
        if not _layer:
            return
        if _layer[0] == "transformers":
            kernels = _kernels_module()
            if kernels is not None:
                kernels.uninstall()
        _undo_patches()
        if _owns_gguf_py and _owns_gguf_py[0]:
            gguf_py.disable()
        _owns_gguf_py.clear()
        _layer.clear()
        while _cache:
            _, model = _cache.popitem()
            model.close()
        _name_maps.clear()


@contextlib.contextmanager
def enabled(*, exact: bool = True) -> Iterator[str | bool]:
    """``with enabled():`` — :func:`enable` on entry, :func:`disable` on exit (if this call enabled it).

    Parameters
    ----------
    exact : bool
        :func:`enable`'s.

    Yields
    ------
    str or bool
        What :func:`enable` returned.
    """
    with _layers.enabled_while(lambda: enable(exact=exact), disable, is_enabled) as result:
        yield result


# --- what is replaced -------------------------------------------------------------------------------


def _expect_parameters(function: Any, names: tuple[str, ...]) -> None:
    """Raise TypeError unless ``function``'s leading parameters are ``names`` (what the hooks call it with)."""
    found = tuple(inspect.signature(function).parameters)[:len(names)]
    if found != names:
        raise TypeError(f"{getattr(function, '__qualname__', function)}{found} is not ({', '.join(names)}, ...)")


def _targets():
    """The transformers modules hooked, after checking each replaced name exists with the expected signature."""
    legacy = importlib.import_module("transformers.modeling_gguf_pytorch_utils")
    reader = importlib.import_module("transformers.integrations.gguf.reader")
    package = importlib.import_module("transformers.integrations.gguf")
    quantizer = importlib.import_module("transformers.quantizers.quantizer_gguf")
    for module, names in ((legacy, ("load_gguf_checkpoint", "_gguf_parse_value", "TENSOR_PROCESSORS",
                                    "get_gguf_hf_weights_map", "TensorProcessor")),
                          (reader, ("read_gguf_metadata", "load_gguf_state_dict", "GgufHeader", "TensorInfo",
                                    "LazyGgufTensor", "_byte_count", "_TORCH_DTYPE", "GGML_BLOCK")),
                          (quantizer, ("read_gguf_metadata", "load_gguf_state_dict"))):
        for name in names:
            getattr(module, name)
    _expect_parameters(legacy.load_gguf_checkpoint, ("gguf_checkpoint_path", "return_tensors", "model_to_load",
                                                     "torch_dtype"))
    _expect_parameters(legacy._gguf_parse_value, ("_value", "data_type"))
    _expect_parameters(legacy.get_gguf_hf_weights_map, ("hf_model", "processor"))
    _expect_parameters(legacy.TensorProcessor.process, ("self", "weights", "name"))
    _expect_parameters(reader.read_gguf_metadata, ("gguf_path", "string_arrays"))
    _expect_parameters(reader.load_gguf_state_dict, ("header",))
    _expect_parameters(reader.GgufHeader.from_file, ("gguf_path",))
    _expect_parameters(reader._byte_count, ("ggml_type", "elements", "gguf_path"))
    _expect_parameters(reader.LazyGgufTensor, ("data", "ggml_type", "shape"))
    for cls, fields in ((reader.TensorInfo, ("name", "shape", "ggml_type", "offset", "nbytes")),
                        (reader.GgufHeader, ("path", "architecture", "tensors", "data_start"))):
        _expect_parameters(cls, fields)
    return legacy, reader, package, quantizer


def _replacements():
    legacy, reader, package, quantizer = _targets()
    originals = {
        "load_gguf_checkpoint": legacy.load_gguf_checkpoint,
        "parse_value": legacy._gguf_parse_value,
    }

    def parse_value(value, data_type):
        if data_type is _FAST_TYPES:  # a value this module already decoded
            return value
        return originals["parse_value"](value, data_type)

    def load_gguf_checkpoint(gguf_checkpoint_path, return_tensors=False, model_to_load=None, torch_dtype=None):
        return _load_gguf_checkpoint(originals["load_gguf_checkpoint"], legacy, gguf_checkpoint_path,
                                     return_tensors, model_to_load, torch_dtype)

    def from_file(cls, gguf_path):
        return _header(reader, cls, gguf_path)

    def load_gguf_state_dict(header):
        return _state_dict(reader, header)

    return [
        (legacy, "load_gguf_checkpoint", load_gguf_checkpoint),
        (legacy, "_gguf_parse_value", parse_value),
        (reader, "read_gguf_metadata", _read_gguf_metadata),
        (reader, "load_gguf_state_dict", load_gguf_state_dict),
        (reader.GgufHeader, "from_file", classmethod(from_file)),
        (quantizer, "read_gguf_metadata", _read_gguf_metadata),
        (quantizer, "load_gguf_state_dict", load_gguf_state_dict),
        # the lazy package caches what it hands out; a fresh lookup would find the reader's patched names
        (package, "read_gguf_metadata", _read_gguf_metadata),
        (package, "load_gguf_state_dict", load_gguf_state_dict),
    ]


# --- the header cache -------------------------------------------------------------------------------


def _open(path: str | os.PathLike):
    """The open fastgguf model for ``path``, parsed once while it is unchanged (path, size, mtime)."""
    from .. import open as open_gguf

    real = os.path.realpath(os.fspath(path))
    stat = os.stat(real)
    key = (real, stat.st_size, stat.st_mtime_ns, stat.st_ino)
    with _lock:
        model = _cache.get(key)
        if model is not None:
            _cache.move_to_end(key)
            return model
        model = open_gguf(real)
        _cache[key] = model
        while len(_cache) > _CACHE_SIZE:
            _, old = _cache.popitem(last=False)
            old.close()
        return model


def _plain(value: Any) -> Any:
    """A metadata value as transformers' parsers make it: numbers, strings and lists of them."""
    if isinstance(value, np.ndarray):
        return value.tolist()
    if isinstance(value, (str, bytes, int, float, bool)):
        return value
    return [_plain(element) for element in value]


# --- the legacy loader (modeling_gguf_pytorch_utils) ------------------------------------------------


class _Field:
    """A metadata field in the shape transformers' legacy parser reads: one part, already decoded."""

    __slots__ = ("parts", "data", "types")

    def __init__(self, value: Any) -> None:
        self.parts = [value]
        self.data = [0]
        self.types = _FAST_TYPES


class _Reader:
    """Stands in for ``gguf.GGUFReader`` inside transformers' legacy metadata parse."""

    def __init__(self, path: str) -> None:
        model = _open(path)
        metadata = model.metadata
        self.fields = {}
        for key in metadata:
            value = metadata[key]
            if not isinstance(value, (str, int, float, bool)):
                # gguf-py's fields make a one-element array a bare value; the token list stays lazy
                value = value if key in _LAZY_STRING_ARRAYS and len(value) != 1 else _plain(value)
                if isinstance(value, list) and len(value) == 1:
                    value = value[0]
            self.fields[key] = _Field(value)
        self.tensors = list(model.tensors.values())


_gguf_swap = threading.Lock()
_name_maps: dict[tuple, Any] = {}  # (arch, block count) -> gguf-py's TensorNameMap: read only, costly to build


@contextlib.contextmanager
def _gguf_attribute(attribute: str, replacement) -> Iterator[None]:
    """While transformers' code runs in this thread, ``gguf.<attribute>`` is ``replacement``.

    ``replacement(original, *args, **kwargs)`` is called in this thread only; any other thread
    calling ``gguf.<attribute>`` meanwhile gets the original.
    """
    import gguf

    original = getattr(gguf, attribute)
    owner = threading.get_ident()

    def dispatch(*args, **kwargs):
        if threading.get_ident() == owner:
            return replacement(original, *args, **kwargs)
        return original(*args, **kwargs)

    with _gguf_swap:
        setattr(gguf, attribute, dispatch)
        try:
            yield
        finally:
            setattr(gguf, attribute, original)


def _gguf_reader_for(path: str):
    """``gguf.GGUFReader(path)`` is a :class:`_Reader` of the cached parse (another path: gguf-py's)."""

    def reader(original, *args, **kwargs):
        if args and os.fspath(args[0]) == os.fspath(path):
            return _Reader(path)
        return original(*args, **kwargs)

    return _gguf_attribute("GGUFReader", reader)


def _shared_name_maps():
    """``gguf.get_tensor_name_map`` built once per (arch, block count): transformers asks once per submodule."""

    def name_map(original, arch, n_blocks):
        key = (arch, n_blocks)
        if key not in _name_maps:
            _name_maps[key] = original(arch, n_blocks)
        return _name_maps[key]

    return _gguf_attribute("get_tensor_name_map", name_map)


def _load_gguf_checkpoint(original, legacy, path, return_tensors, model_to_load, torch_dtype):
    """transformers' ``load_gguf_checkpoint``: its own metadata parse over fastgguf, tensors by fastgguf."""
    with _gguf_reader_for(path):
        parsed = original(path, return_tensors=False)
    if return_tensors:
        parsed["tensors"] = {}
        _load_tensors(legacy, path, parsed, model_to_load, torch_dtype)
    return parsed


def _moves_values_only(legacy, processor, name: str) -> bool:
    """Whether transformers' processing of tensor ``name`` only moves values (so any dtype gives the same bits)."""
    kind = type(processor)
    moving = tuple(getattr(legacy, cls, None) for cls in ("TensorProcessor", "LlamaTensorProcessor",
                                                          "T5TensorProcessor", "Lfm2TensorProcessor"))
    offsetting = tuple(getattr(legacy, cls, None) for cls in ("Gemma2TensorProcessor", "NemotronTensorProcessor"))
    if kind in moving:
        return True
    if kind is getattr(legacy, "Qwen2MoeTensorProcessor", None):  # qwen2moe, qwen3moe
        # it stores the experts itself (merging gate and up); other tensors it renames or reshapes only
        pattern = getattr(kind, "GGUF_MOE_WEIGHTS_PATTERN", None)
        return pattern is not None and pattern.fullmatch(name) is None
    return kind in offsetting and "norm.weight" not in name


class _StoredTensors(dict):
    """``parsed["tensors"]`` while transformers' tensor processors run: remembers the entries set.

    Some processors store tensors themselves (the MoE ones merge ``ffn_gate_exps`` and
    ``ffn_up_exps`` into one ``gate_up_proj``), in float32 whatever the load's dtype; the
    loader casts them only once every tensor is read. :meth:`settle` casts each as soon as it is
    set, so a half-precision load never holds the float32 experts of the whole model.
    """

    def __init__(self) -> None:
        super().__init__()
        self.fresh: list[str] = []

    def __setitem__(self, key, value) -> None:
        super().__setitem__(key, value)
        self.fresh.append(key)

    def settle(self, dtypes: dict, torch_dtype) -> None:
        """Cast the float entries set since the last call to ``torch_dtype`` where the model's parameter has it.

        The loader would make the same cast (round to nearest even) later, into a parameter of that
        dtype; an entry whose parameter keeps another dtype (or that is no parameter) is left alone.
        A merged tensor still being filled is cast after its first half: its second half is then
        copied into it with the same rounding.
        """
        for key in self.fresh:
            tensor = self[key]
            if (torch_dtype is not None and dtypes.get(key) == torch_dtype and tensor.dtype != torch_dtype
                    and tensor.is_floating_point()):
                super().__setitem__(key, tensor.to(torch_dtype))
        self.fresh.clear()


def _load_tensors(legacy, path, parsed, model_to_load, torch_dtype) -> None:
    model = _open(path)
    architecture = model.metadata["general.architecture"]
    processor = legacy.TENSOR_PROCESSORS.get(architecture, legacy.TensorProcessor)(config=parsed.get("config", {}))
    with _shared_name_maps():
        tensor_key_mapping = legacy.get_gguf_hf_weights_map(model_to_load, processor)
    dtypes = {} if model_to_load is None else {key: value.dtype for key, value in model_to_load.state_dict().items()}
    tensors = parsed["tensors"] = _StoredTensors()
    try:
        _process_tensors(legacy, model, processor, tensor_key_mapping, parsed, tensors, dtypes, torch_dtype)
    finally:
        parsed["tensors"] = dict(tensors)


def _process_tensors(legacy, model, processor, tensor_key_mapping, parsed, tensors, dtypes, torch_dtype) -> None:
    """Dequantize every tensor of ``model`` and pass it through transformers' ``processor`` into ``tensors``."""
    import torch

    from ..torch import empty_like_numpy, from_numpy

    for info in model.tensors.values():
        name = info.name
        direct = _moves_values_only(legacy, processor, name)
        if direct and name not in tensor_key_mapping:
            continue  # not a parameter of this model, and its processing renames nothing
        target = torch_dtype if direct and torch_dtype is not None else torch.float32
        tensor, array = empty_like_numpy(info.shape, target)
        _dequantize_into(info, array)
        result = processor.process(weights=array, name=name, tensor_key_mapping=tensor_key_mapping,
                                   parsed_parameters=parsed)
        tensors.settle(dtypes, torch_dtype)  # what the processor stored itself
        weights, name = result.weights, result.name
        if name not in tensor_key_mapping:
            continue
        if weights is not array:
            # the layout transformers' np.copy gives (a transpose stays column-major): torch picks its
            # matmul kernels by strides, so another layout can change the logits' bits
            dense = weights.flags.c_contiguous or weights.flags.f_contiguous
            tensor = from_numpy(weights if dense and weights.flags.writeable else np.copy(weights))
        if torch_dtype is not None and tensor.dtype != torch_dtype:
            tensor = tensor.to(torch_dtype)
        tensors[tensor_key_mapping[name]] = tensor


_RELEASE_CHUNK_BYTES = 8 << 20  # file bytes read between two releases of a tensor's mapped pages


def _dequantize_into(info, array: np.ndarray) -> None:
    """Dequantize ``info`` into ``array`` (any float dtype), letting go of the file's pages as it goes.

    A large tensor is done in row blocks of about 8 MiB of file data, its mapped pages released
    after each, so the process never holds more than that of the file on top of the weights.
    """
    row_length = info.shape[-1] if info.shape else 1
    n_rows = info.n_elements // row_length if row_length else 0
    if info.nbytes <= _RELEASE_CHUNK_BYTES or n_rows < 2:
        info.dequantize(out=array, dtype=array.dtype)
    else:
        rows = array.reshape(n_rows, row_length)
        step = max(1, n_rows * _RELEASE_CHUNK_BYTES // info.nbytes)
        for first in range(0, n_rows, step):
            block = slice(first, min(n_rows, first + step))
            info.dequantize(rows=block, out=rows[block], dtype=array.dtype)
            info._release_pages()  # pages already read are done with; later ones fault in again
    info._release_pages()  # the file's pages for this tensor need not stay in the process's RSS


# --- the packed path (transformers.integrations.gguf.reader) ----------------------------------------


def _read_gguf_metadata(gguf_path, string_arrays=()):
    """transformers' ``read_gguf_metadata`` from the cached parse: ``(metadata, tensor names)``."""
    from ..types import GGUFValueType

    model = _open(gguf_path)
    metadata = model.metadata
    result = {}
    for key in metadata:
        if metadata.value_type(key) != GGUFValueType.ARRAY:
            result[key] = metadata[key]
            continue
        element = metadata.element_type(key)
        if element == GGUFValueType.STRING:
            # asked for: a vocabulary or a merge table, lazily decoded; else only the count, as transformers does
            result[key] = metadata[key] if key in string_arrays else len(metadata[key])
        elif element == GGUFValueType.ARRAY:
            raise ValueError(f"GGUF metadata holds an array of type {int(element)}, which this reader cannot read.")
        else:
            result[key] = metadata[key].tolist()
    if "general.architecture" not in result:
        raise ValueError(f"{gguf_path} has no `general.architecture` in its metadata.")
    return result, tuple(model.tensors)


def _data_offset(model, name: str) -> int:
    """Where the data section of the file holding tensor ``name`` starts."""
    shards = getattr(model, "shards", None)
    if shards is None:
        return model.data_offset
    return shards[model.shard_of(name)].data_offset


def _header(reader, cls, gguf_path):
    """transformers' ``GgufHeader.from_file`` from the cached parse."""
    model = _open(gguf_path)
    infos = tuple(
        reader.TensorInfo(info.name, info.shape, int(info.type), info.offset - _data_offset(model, info.name),
                          reader._byte_count(int(info.type), info.n_elements, gguf_path))
        for info in model.tensors.values()
    )
    first = next(iter(model.tensors), None)
    data_start = _data_offset(model, first) if first is not None else getattr(model, "data_offset", 0)
    return cls(os.fspath(gguf_path), model.metadata["general.architecture"], infos, data_start)


def _state_dict(reader, header):
    """transformers' ``load_gguf_state_dict``: ``{gguf_name: LazyGgufTensor}`` over fastgguf's views of the map."""
    model = _open(header.path)
    state_dict = {}
    for info in header.tensors:
        shape = info.shape
        if info.ggml_type not in reader._TORCH_DTYPE:
            block_elements, block_bytes = reader.GGML_BLOCK[info.ggml_type]
            shape = (*shape[:-1], shape[-1] // block_elements * block_bytes)
        state_dict[info.name] = reader.LazyGgufTensor(model.tensors[info.name].raw, info.ggml_type, shape)
    return state_dict
