"""Requantize a GGUF model: every weight to one tensor type, or llama.cpp's per-tensor mixes.

:func:`requantize` is what ``fastgguf quantize`` runs. It reads any source type (quantized
tensors are dequantized first), keeps every metadata entry, sets ``general.file_type`` (in
``llama_ftype`` numbering) and ``general.quantization_version``, and writes tensor by tensor,
a block of rows at a time, so memory stays near one block of rows plus one tensor's mapped
input whatever the model's size. The output goes to a temporary file beside the target that
is renamed only when complete; after an error or ``KeyboardInterrupt`` nothing is left.

:func:`plan_requantize` says, without writing anything, which type each tensor gets and why.

The per-tensor rules of llama.cpp's mixes are :mod:`fastgguf._llama_mixes`'s.
"""

from __future__ import annotations

import fnmatch
import math
import os
import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from . import dequant, quant
from ._llama_mixes import (
    FALLBACK,
    FILE_TYPES,
    FLOAT_TYPES,
    GGML_NEEDS_IMATRIX,
    LLAMA_NEEDS_IMATRIX,
    MIXES,
    PURE_FILE_TYPES,
    TOKEN_EMBD,
    Hparams,
    MixRules,
    category,
    ggml_shape,
    layer_of,
    why_not_quantized,
)
from ._rewrite import array_items, copy_tensor, create_beside, refuse_overwriting, release_pages
from .errors import GGUFError
from .reader import GGUFFile, TensorInfo
from .split import SplitModel, open_model
from .types import TYPE_TRAITS, GGMLType, GGUFValueType
from .writer import GGUFWriter

__all__ = ["FILE_TYPES", "MIXES", "TensorPlan", "filter_imatrix", "parse_override_kv", "parse_tensor_types", "plan_requantize",
           "quantizable_types", "read_tensor_type_file", "requantize"]

_T = GGMLType

#: Elements dequantized and quantized at a time (whole rows; at least one row).
_CHUNK_ELEMENTS = 1 << 20

_SPLIT_KEYS = ("split.no", "split.count", "split.tensors.count")


@dataclass(frozen=True)
class TensorPlan:
    """What :func:`requantize` does with one tensor.

    Attributes
    ----------
    name : str
    shape : tuple of int
    source_type, target_type : GGMLType
        ``target_type == source_type`` means the bytes are copied as they are.
    note : str
        Why a tensor is kept (``"1-D"``, ``"not a weight"``, ``"row length 100 is not a multiple of 256"``,
        ``"--keep"``, ``"--filter"``, ``"already Q4_K"``), or the fallback or override taken; empty otherwise.
    source_name : str
        The input's name for it when ``prune_layers`` renumbered its layer (else empty).
    """

    name: str
    shape: tuple[int, ...]
    source_type: GGMLType
    target_type: GGMLType
    note: str = ""
    source_name: str = ""

    @property
    def input_name(self) -> str:
        """The tensor's name in the input (differs from ``name`` where ``prune_layers`` renumbered it)."""
        return self.source_name or self.name

    @property
    def converted(self) -> bool:
        """Whether the tensor's data is rewritten (dequantized and quantized again)."""
        return self.target_type != self.source_type


# ---------------------------------------------------------------------------------------------
# The quantizer (fastgguf.quantize) and what it can do in this build


def quantizable_types() -> tuple[GGMLType, ...]:
    """The tensor types :func:`fastgguf.quantize` can write (a seam the tests replace)."""
    return quant.supported_types()


def _quantize_function() -> Callable[..., np.ndarray]:
    """:func:`fastgguf.quantize` (a seam: the tests stand gguf-py's quantizers in for it)."""
    return quant.quantize


@dataclass(frozen=True)
class _Named:
    """A tensor as the rules see it: its (possibly renumbered) name, shape and type, and its input name."""

    name: str
    shape: tuple[int, ...]
    type: GGMLType
    source: str


def _llama_order(tensors: Iterable[TensorInfo]) -> list[TensorInfo]:
    """llama.cpp's order of weights (``weight_name_comparer``): by layer (``blk.N.``; others first), then by name."""
    def key(info: TensorInfo) -> tuple[int, bytes]:
        layer = layer_of(info.name)
        return (-1 if layer is None else layer, info.name.encode("utf-8", "surrogateescape"))
    return sorted(tensors, key=key)


_BLK = re.compile(r"blk\.(\d+)\.")


def _prune(tensors: list[TensorInfo], prune_layers: Iterable[int]) -> tuple[list[_Named], int | None]:
    """llama-quantize's ``--prune-layers`` (``remap_layer``) over tensors in llama.cpp's order.

    Tensors of pruned layers are dropped; layers after the first pruned one are numbered on
    from there. Returns the tensors and the new ``block_count`` (None without pruning).
    """
    prune = sorted(set(int(i) for i in prune_layers))
    if any(i < 0 for i in prune):
        raise ValueError(f"--prune-layers: invalid layer id {min(prune)}")
    if not prune:
        return [_Named(t.name, tuple(t.shape), t.type, t.name) for t in tensors], None
    mapped: dict[int, str] = {}
    next_id = 0
    out = []
    for t in tensors:
        match = _BLK.search(t.name)
        if match is None:
            out.append(_Named(t.name, tuple(t.shape), t.type, t.name))
            continue
        blk = int(match.group(1))
        if blk not in mapped:
            if blk in prune:
                mapped[blk] = ""
            elif blk < prune[0]:
                mapped[blk] = str(blk)
                next_id = blk + 1
            else:
                mapped[blk] = str(next_id)
                next_id += 1
        if not mapped[blk]:
            continue
        name = t.name[: match.start(1)] + mapped[blk] + t.name[match.end(1):]
        out.append(_Named(name, tuple(t.shape), t.type, t.name))
    return out, next_id


def _resolve(type_or_mix: str | GGMLType | int, pure: bool) -> tuple[str | None, GGMLType, int, bool]:
    """(mix name or None, starting/only tensor type, general.file_type, llama.cpp file type given).

    A llama.cpp file type name with ``pure`` means its starting type on every weight, as
    ``llama-quantize --pure`` does (row lengths the block does not divide then take the fallback).
    """
    if isinstance(type_or_mix, str):
        name = type_or_mix.strip().upper()
        if name in MIXES:
            return (None if pure else name), MIXES[name], FILE_TYPES[name], True
        try:
            qtype = GGMLType[name]
        except KeyError:
            raise ValueError(f"unknown type {type_or_mix!r}: give a tensor type ({', '.join(t.name for t in PURE_FILE_TYPES)}) "
                             f"or a llama.cpp mix ({', '.join(MIXES)})") from None
    else:
        qtype = GGMLType(type_or_mix)
    if qtype not in PURE_FILE_TYPES:
        raise ValueError(f"{qtype.name} is not a type llama.cpp stores weights in")
    return None, qtype, PURE_FILE_TYPES[qtype], False


def _matches(name: str, patterns: Iterable[str] | None) -> bool:
    return any(fnmatch.fnmatchcase(name, p) for p in patterns or ())


def _tensor_type(value: str | GGMLType | int, what: str) -> GGMLType:
    """A tensor type by ggml's name (any case, as llama-quantize's ``parse_ggml_type``) or value."""
    if isinstance(value, str):
        try:
            return GGMLType[value.strip().upper()]
        except KeyError:
            raise ValueError(f"{what}: invalid ggml_type {value!r}") from None
    return GGMLType(value)


def parse_tensor_types(items: Iterable[str | tuple[str, str | GGMLType | int]]) -> list[tuple[str, GGMLType]]:
    """``--tensor-type NAME=TYPE`` values as llama-quantize reads them: (lower-cased pattern, type).

    ``NAME`` is a regular expression searched in tensor names (the first one that matches a
    tensor decides); ``TYPE`` a ggml type name in any case.
    """
    out = []
    for item in items:
        qtype: str | GGMLType | int
        if isinstance(item, str):
            name, sep, qtype = item.partition("=")
            if not sep:
                raise ValueError(f"--tensor-type: malformed tensor type {item!r} (NAME=TYPE)")
            if not name:
                raise ValueError(f"--tensor-type: missing tensor name in {item!r}")
            if not qtype:
                raise ValueError(f"--tensor-type: missing quantization type in {item!r}")
        else:
            name, qtype = item
        try:
            re.compile(name.lower())
        except re.error as error:
            raise ValueError(f"--tensor-type: bad pattern {name!r}: {error}") from None
        out.append((name.lower(), _tensor_type(qtype, f"--tensor-type {name}")))
    return out


def read_tensor_type_file(path: str | os.PathLike) -> list[tuple[str, GGMLType]]:
    """A ``--tensor-type-file``: ``NAME=TYPE`` items separated by whitespace."""
    with open(path, encoding="utf-8", errors="surrogateescape") as handle:
        return parse_tensor_types(handle.read().split())


def parse_override_kv(item: str) -> tuple[str, GGUFValueType, Any]:
    """``--override-kv KEY=TYPE:VALUE`` as llama-quantize writes it: (key, value type, value).

    ``int:`` is written as UINT32 (the absolute value, as ``atol`` reads it, wrapped to 32 bits),
    ``float:`` as FLOAT32 (``atof``), ``bool:true|false`` as BOOL, ``str:`` (at most 127 bytes) as STRING.
    """
    key, sep, rest = item.partition("=")
    if not sep or len(key.encode("utf-8", "surrogateescape")) >= 128:
        raise ValueError(f"--override-kv: malformed KV override {item!r}")
    V = GGUFValueType
    if rest.startswith("int:"):
        match = re.match(r"\s*([+-]?\d+)", rest[4:])
        number = int(match.group(1)) if match else 0
        number = max(-(2**63), min(2**63 - 1, number))
        return key, V.UINT32, abs(number) % (1 << 32)
    if rest.startswith("float:"):
        match = re.match(r"\s*([+-]?(?:inf(?:inity)?|nan|(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?))", rest[6:], re.I)
        return key, V.FLOAT32, float(match.group(1)) if match else 0.0
    if rest.startswith("bool:"):
        if rest[5:] not in ("true", "false"):
            raise ValueError(f"--override-kv: invalid boolean value in {item!r}")
        return key, V.BOOL, rest[5:] == "true"
    if rest.startswith("str:"):
        value = rest[4:].encode("utf-8", "surrogateescape")
        if len(value) > 127:
            raise ValueError(f"--override-kv: malformed KV override {item!r}, value cannot exceed 127 chars")
        return key, V.STRING, value.split(b"\0", 1)[0]
    raise ValueError(f"--override-kv: invalid type in {item!r} (int:, float:, bool: or str:)")


def filter_imatrix(imatrix: Mapping[str, np.ndarray], include: Iterable[str] = (),
                   exclude: Iterable[str] = ()) -> dict[str, np.ndarray]:
    """llama-quantize's ``--include-weights`` / ``--exclude-weights``: entries whose name contains one of the strings."""
    include, exclude = list(include or ()), list(exclude or ())
    if include and exclude:
        raise ValueError("--include-weights and --exclude-weights cannot be used together")
    out = {k: v for k, v in imatrix.items() if not any(e in k for e in exclude)}
    if include:
        out = {k: v for k, v in out.items() if any(i in k for i in include)}
    return out


def plan_requantize(model: GGUFFile | SplitModel, type_or_mix: str | GGMLType | int, *,
                    imatrix: Mapping[str, np.ndarray] | None = None, filter: Iterable[str] | None = None,  # noqa: A002
                    keep: Iterable[str] | None = None, pure: bool = False,
                    tensor_types: Iterable[str | tuple[str, str | GGMLType | int]] | None = None,
                    output_tensor_type: str | GGMLType | int | None = None,
                    token_embedding_type: str | GGMLType | int | None = None,
                    leave_output_tensor: bool = False, prune_layers: Iterable[int] | None = None,
                    keep_split: bool = False) -> tuple[list[TensorPlan], int]:
    """The type each tensor of ``model`` gets from :func:`requantize`, and the ``general.file_type``.

    Parameters are those of :func:`requantize` (``model`` open). Nothing is read but the header.

    Returns
    -------
    plans : list of TensorPlan
        One per tensor written, in llama.cpp's order (by layer, then name; with ``keep_split`` the
        input's), which is the output's.
    file_type : int
        ``llama_ftype`` value for ``general.file_type``.

    Raises
    ------
    ValueError
        Unknown type; a mix without ``{arch}.block_count``; a row length with no fallback type;
        a glob that matches no tensor; a tensor needing an importance matrix that ``imatrix``
        lacks, or an entry of the wrong length.
    """
    if isinstance(type_or_mix, str) and type_or_mix.strip().upper() == "COPY":
        return _plan_copy(model, prune_layers, keep_split)
    mix, base, file_type, llama_ftype = _resolve(type_or_mix, pure)
    filter, keep = list(filter or ()), list(keep or ())
    patterns = [(re.compile(p), t) for p, t in parse_tensor_types(tensor_types or ())]
    out_type = None if output_tensor_type is None else _tensor_type(output_tensor_type, "--output-tensor-type")
    embd_type = None if token_embedding_type is None else _tensor_type(token_embedding_type, "--token-embedding-type")
    all_tensors = list(model.tensors.values())
    for option, globs in (("--filter", filter), ("--keep", keep)):
        for pattern in globs:
            if not any(fnmatch.fnmatchcase(t.name, pattern) for t in all_tensors):
                raise ValueError(f"{option} {pattern!r} matches no tensor")
    tensors, _ = _prune(_llama_order(all_tensors), prune_layers or ())
    if keep_split:  # llama-quantize sorts by (shard, offset) after naming: the rules see that order
        where = {t.name: ((model.shard_of(t.name) if isinstance(model, SplitModel) else 0), t.offset)
                 for t in all_tensors}
        tensors.sort(key=lambda t: where[t.source])
    quantized_base = base not in FLOAT_TYPES
    use_rules = mix is not None and quantized_base
    hp = Hparams.of(model.metadata, needed=use_rules)
    rules = MixRules(mix, hp, imatrix is not None, tensors) if use_rules and mix is not None else None
    if rules is not None:
        rules.output_type = out_type
    plans = []
    for info in tensors:
        why = why_not_quantized(info)
        if why is None and leave_output_tensor and info.name == "output.weight":
            why = "--leave-output-tensor"
        if why is not None:
            plans.append(_plan(info, info.type, why))
            continue
        ncols = info.shape[-1]
        cat = category(info.name)
        note = ""
        new = base
        manual = None
        if patterns:
            manual = next((t for p, t in patterns if p.search(info.name)), None)
        if embd_type is not None and cat == "token_embd" and not (
                info.name == "per_layer_token_embd.weight" and manual is not None):
            new, note, fixed = embd_type, "--token-embedding-type", True
        elif out_type is not None and cat == "output":
            new, note, fixed = out_type, "--output-tensor-type", True
        else:
            fixed = not quantized_base
            if quantized_base:
                if manual is not None:
                    new, note = manual, "--tensor-type"
                elif rules is not None:
                    # Tensors left out by --filter/--keep still pass through the rules: their counters advance as in llama.cpp.
                    new = rules.type_for(info, base)
        if filter and not _matches(info.source, filter):
            plans.append(_plan(info, info.type, "not matched by --filter"))
            continue
        if _matches(info.source, keep):
            plans.append(_plan(info, info.type, "--keep"))
            continue
        block = TYPE_TRAITS[new].block_size
        if fixed or not ncols % block:
            if ncols % block:
                raise ValueError(f"tensor {info.name!r}: row length {ncols} is not a multiple of {new.name}'s block "
                                 f"size {block} ({note or 'the file type'} has no fallback)")
            plans.append(_plan(info, new, note))
            continue
        if not llama_ftype and manual is None:  # fastgguf's plain tensor type: copied as it is
            plans.append(_plan(info, info.type, f"row length {ncols} is not a multiple of {base.name}'s {block}"))
            continue
        wanted = new
        if new in FALLBACK:
            new = FALLBACK[new]
        elif block > 32:
            raise ValueError(f"tensor {info.name!r}: row length {ncols} is not a multiple of {new.name}'s block "
                             f"size and llama.cpp defines no fallback for {new.name} (use --keep)")
        if ncols % TYPE_TRAITS[new].block_size:
            new = _T.F16
        plans.append(_plan(info, new, f"row length {ncols}: {new.name} instead of {wanted.name}"))
    _check_imatrix(plans, imatrix, mix, file_type)
    return plans, file_type


#: llama_model_loader's guess of the file type from the most common tensor type (or'd with 1024, "guessed").
_GUESSED_FILE_TYPES = {
    _T.F32: 0, _T.F16: 1, _T.BF16: 32, _T.Q4_0: 2, _T.Q4_1: 3, _T.Q5_0: 8, _T.Q5_1: 9, _T.Q8_0: 7, _T.Q2_K: 10,
    _T.Q3_K: 12, _T.Q4_K: 15, _T.Q5_K: 17, _T.Q6_K: 18, _T.TQ1_0: 36, _T.TQ2_0: 37, _T.IQ2_XXS: 19,
    _T.IQ2_XS: 20, _T.IQ2_S: 28, _T.IQ3_XXS: 23, _T.IQ1_S: 24, _T.IQ1_M: 31, _T.IQ4_NL: 25, _T.IQ4_XS: 30,
    _T.IQ3_S: 26, _T.NVFP4: 39, _T.Q1_0: 40, _T.Q2_0: 41,
}


def _plan_copy(model: GGUFFile | SplitModel, prune_layers: Iterable[int] | None,
               keep_split: bool) -> tuple[list[TensorPlan], int]:
    """llama-quantize's ``COPY``: every tensor as it is; the file type the input's (or guessed as llama.cpp does)."""
    ordered = _llama_order(model.tensors.values())
    counts: dict[GGMLType, int] = {}
    most, best = 0, _T.F32
    for info in ordered:  # the first type to reach the highest count
        counts[info.type] = counts.get(info.type, 0) + 1
        if counts[info.type] > most:
            most, best = counts[info.type], info.type
    file_type = _GUESSED_FILE_TYPES.get(best, 0) | 1024
    if "general.file_type" in model.metadata:
        try:
            file_type = int(model.metadata["general.file_type"]) % (1 << 32)
        except (TypeError, ValueError):
            raise GGUFError(f"general.file_type is not a number: {model.metadata['general.file_type']!r}") from None
    tensors, _ = _prune(ordered, prune_layers or ())
    if keep_split:
        where = {t.name: ((model.shard_of(t.name) if isinstance(model, SplitModel) else 0), t.offset)
                 for t in ordered}
        tensors.sort(key=lambda t: where[t.source])
    return [_plan(info, info.type, "COPY") for info in tensors], file_type


def _plan(info: _Named, target: GGMLType, note: str) -> TensorPlan:
    if target == info.type and not note:
        note = f"already {target.name}"
    return TensorPlan(info.name, info.shape, info.type, target, note, "" if info.source == info.name else info.source)


def _imatrix_entry(plan: TensorPlan, imatrix: Mapping[str, np.ndarray] | None, mix: str | None,
                   file_type: int | None = None) -> np.ndarray | None:
    """The importance matrix for ``plan``'s tensor (n_matrices * n_per_row floats), or None; ValueError if required."""
    q2k_s = mix == "Q2_K_S" or file_type == FILE_TYPES["Q2_K_S"]
    needs = plan.target_type in GGML_NEEDS_IMATRIX or (
        plan.name not in TOKEN_EMBD and plan.name != "output.weight"
        and (plan.target_type in LLAMA_NEEDS_IMATRIX or (plan.target_type == _T.Q2_K and q2k_s)))
    entry = None if imatrix is None else imatrix.get(plan.input_name)
    if entry is not None:
        entry = np.asarray(entry, dtype=np.float32).reshape(-1)
        expected = plan.shape[-1] * math.prod(plan.shape[:-2])
        if entry.size != expected:
            if plan.name in TOKEN_EMBD:
                entry = None  # llama-quantize ignores a token_embd entry of the wrong size
            else:
                raise ValueError(f"importance matrix entry {plan.name!r} has {entry.size} values, the tensor "
                                 f"needs {expected} (row length {plan.shape[-1]} x {math.prod(plan.shape[:-2])})")
    if entry is None and needs:
        where = "no importance matrix given" if imatrix is None else "the importance matrix has no entry for it"
        raise ValueError(f"tensor {plan.name!r} -> {plan.target_type.name} needs an importance matrix ({where})")
    return entry


def _check_imatrix(plans: list[TensorPlan], imatrix: Mapping[str, np.ndarray] | None, mix: str | None,
                   file_type: int | None = None) -> None:
    for plan in plans:
        if plan.converted:
            _imatrix_entry(plan, imatrix, mix, file_type)


# ---------------------------------------------------------------------------------------------
# Writing


def requantize(in_path: str | os.PathLike, out_path: str | os.PathLike | None, type_or_mix: str | GGMLType | int, *,
               imatrix: str | os.PathLike | Mapping[str, np.ndarray] | None = None,
               filter: Iterable[str] | None = None, keep: Iterable[str] | None = None,  # noqa: A002
               pure: bool = False, threads: int | None = None,
               progress: Callable[[int], object] | None = None,
               tensor_types: Iterable[str | tuple[str, str | GGMLType | int]] | None = None,
               output_tensor_type: str | GGMLType | int | None = None,
               token_embedding_type: str | GGMLType | int | None = None,
               leave_output_tensor: bool = False,
               include_weights: Iterable[str] | None = None, exclude_weights: Iterable[str] | None = None,
               prune_layers: Iterable[int] | None = None,
               override_kv: Iterable[str | tuple[str, GGUFValueType, Any]] | None = None,
               dry_run: bool = False, keep_split: bool = False) -> list[TensorPlan]:
    """Write a copy of a GGUF model with its weights quantized to ``type_or_mix``.

    The output is laid out as ``llama-quantize`` lays it out: tensors in llama.cpp's order (by
    layer, then by name), the input's metadata with ``general.quantization_version`` and
    ``general.file_type`` (then any ``override_kv`` keys, the ``quantize.imatrix.*`` keys and a
    pruned ``block_count``) moved to the end, ``split.*`` keys dropped.

    Parameters
    ----------
    in_path : str or os.PathLike
        A GGUF file, or any shard of a split model (the output is one file without ``split.*`` keys).
    out_path : str or os.PathLike
        Where to write; must not be the input. Appears complete or not at all. May be None with ``dry_run``.
    type_or_mix : str, GGMLType or int
        A llama.cpp file type (``"Q4_K_M"``, ``"Q8_0"``, ``"IQ4_XS"``, ... see :data:`MIXES`):
        llama-quantize's per-tensor rules for it. Or a tensor type that is not such a name
        (``"Q4_K"``, ``"Q5_K"``, ``"Q3_K"``, a GGMLType): that type on every weight.
    imatrix : str, os.PathLike or mapping, optional
        An importance matrix file (see :func:`fastgguf.read_imatrix`) or its contents. A file
        also gives the ``quantize.imatrix.file`` / ``.dataset`` / ``.entries_count`` /
        ``.chunks_count`` keys llama-quantize records (``file`` is the path as given).
    filter : iterable of str, optional
        Globs: only tensors whose names match one are quantized; the others are copied as they are.
    keep : iterable of str, optional
        Globs: tensors whose names match one are copied as they are.
    pure : bool
        ``type_or_mix`` names one tensor type for every weight even where it is also a mix name
        (``pure=True, type_or_mix="Q6_K"``), like ``llama-quantize --pure``.
    threads : int, optional
        Threads for dequantizing and quantizing (default: all cores).
    progress : callable, optional
        Called with the number of input bytes after each block of rows is written.
    tensor_types : iterable, optional
        llama-quantize's ``--tensor-type``: ``"PATTERN=TYPE"`` strings or (pattern, type) pairs;
        the first pattern (a regular expression, lower-cased, searched in the name) that matches a
        weight decides its type, instead of the mix's rules (when the file type is a quantized one).
    output_tensor_type, token_embedding_type : str or GGMLType, optional
        The type of ``output.weight`` / ``token_embd.weight`` (``--output-tensor-type``,
        ``--token-embedding-type``).
    leave_output_tensor : bool
        Copy ``output.weight`` as it is (``--leave-output-tensor``).
    include_weights, exclude_weights : iterable of str, optional
        Use only the importance matrix entries whose names contain one of these strings / all but those.
    prune_layers : iterable of int, optional
        Layers to drop; the later ones are renumbered and ``{arch}.block_count`` updated.
    override_kv : iterable, optional
        ``"KEY=TYPE:VALUE"`` strings (see :func:`parse_override_kv`) or (key, value type, value)
        triples, set in the output's metadata.
    dry_run : bool
        Plan and check only; nothing is written.
    keep_split : bool
        llama-quantize's ``--keep-split``: one output per input shard, named ``OUT-00001-of-0000N.gguf``
        (OUT without ``.gguf``; also for a one-file input), tensors in the input's order (shard, then
        offset; the mix's layer counters follow it), ``split.*`` keys when there are several.

    Returns
    -------
    list of TensorPlan
        What was done with each tensor, in the output's order.

    Raises
    ------
    ValueError
        ``out_path`` is the input; anything :func:`plan_requantize` raises; non-finite values
        in a tensor being quantized (the message names the tensor).
    NotImplementedError
        A needed quantizer or dequantizer is not in this build (raised before anything is written).
    GGUFError
        The input or the importance matrix file is malformed.
    """
    in_path = os.fspath(in_path)
    overrides = [parse_override_kv(o) if isinstance(o, str) else o for o in override_kv or ()]
    imatrix_keys: list[tuple[str, GGUFValueType, Any]] = []
    if imatrix is not None and not isinstance(imatrix, Mapping):
        from .imatrix import read_imatrix, read_imatrix_info

        imatrix_path = imatrix
        imatrix = filter_imatrix(read_imatrix(imatrix_path), include_weights or (), exclude_weights or ())
        if imatrix:
            datasets, chunks = read_imatrix_info(imatrix_path)
            V = GGUFValueType
            imatrix_keys.append(("quantize.imatrix.file", V.STRING, os.fsencode(imatrix_path)[:127].split(b"\0")[0]))
            if datasets:
                imatrix_keys.append(("quantize.imatrix.dataset", V.STRING, datasets[0][:127]))
            imatrix_keys.append(("quantize.imatrix.entries_count", V.UINT32, len(imatrix) % (1 << 32)))
            if chunks > 0:
                imatrix_keys.append(("quantize.imatrix.chunks_count", V.UINT32, chunks))
    elif imatrix is not None:
        imatrix = filter_imatrix(imatrix, include_weights or (), exclude_weights or ())
    if imatrix is not None and not imatrix:
        imatrix = None  # every entry left out: llama-quantize then has no importance matrix
    options = dict(tensor_types=tensor_types, output_tensor_type=output_tensor_type,
                   token_embedding_type=token_embedding_type, leave_output_tensor=leave_output_tensor,
                   prune_layers=prune_layers, keep_split=keep_split)
    with open_model(in_path) as model:
        inputs = model.paths if isinstance(model, SplitModel) else (model.path,)
        if out_path is None and not dry_run:
            raise ValueError("no output path")
        if out_path is not None:
            refuse_overwriting([os.fspath(out_path)], inputs)
        plans, file_type = plan_requantize(model, type_or_mix, imatrix=imatrix, filter=filter, keep=keep, pure=pure,
                                           **options)  # type: ignore[arg-type]
        copy = isinstance(type_or_mix, str) and type_or_mix.strip().upper() == "COPY"
        mix = None if copy else _resolve(type_or_mix, pure)[0]
        converted = [p for p in plans if p.converted]
        quantizable = set(quantizable_types())
        missing = sorted({p.target_type.name for p in converted if p.target_type not in quantizable})
        if missing:
            raise NotImplementedError(f"no quantizer for {', '.join(missing)} in this build")
        no_kernel = sorted({p.source_type.name for p in converted if not dequant.has_kernel(p.source_type)})
        if no_kernel:
            raise NotImplementedError(f"cannot read {', '.join(no_kernel)} tensors: no dequantization kernel")
        if dry_run:
            return plans
        assert out_path is not None
        out_path = os.fspath(out_path)
        block_count = _prune(_llama_order(model.tensors.values()), prune_layers or ())[1]
        extra = list(overrides) + imatrix_keys
        if block_count is not None:
            arch = model.metadata.get("general.architecture", "")
            extra.append((f"{arch}.block_count", GGUFValueType.UINT32, block_count))
        # (path, plans) per output file: one, or with keep_split one per input shard (llama_split_path's names)
        groups: list[tuple[str, list[TensorPlan]]] = [(out_path, plans)]
        if keep_split:
            shard = (lambda name: model.shard_of(name)) if isinstance(model, SplitModel) else (lambda name: 0)
            n_split = max([shard(p.input_name) + 1 for p in plans] + [1])
            base = out_path[:-5] if ".gguf" in out_path else out_path
            groups = [(f"{base}-{i + 1:05d}-of-{n_split:05d}.gguf", [p for p in plans if shard(p.input_name) == i])
                      for i in range(n_split)]
            for path, _ in groups:
                refuse_overwriting([path], inputs)
        quantize = _quantize_function() if converted else None
        scratch = _Scratch()
        partials: list[tuple[str, str]] = []
        try:
            for index, (path, group) in enumerate(groups):
                writer = GGUFWriter(byteorder=model.byteorder, alignment=model.alignment, version=3)
                split_keys = [] if len(groups) == 1 else [
                    ("split.no", GGUFValueType.UINT16, index), ("split.count", GGUFValueType.UINT16, len(groups)),
                    ("split.tensors.count", GGUFValueType.INT32, len(plans))]
                if index == 0:
                    _copy_metadata(model.metadata, writer, file_type, extra + split_keys)
                else:
                    for key, vtype, value in split_keys:
                        writer.add(key, value, vtype)
                for plan in group:
                    writer.add_tensor_info(plan.name, plan.target_type, ggml_shape(plan.shape))
                partial, handle = create_beside(path)
                partials.append((partial, path))
                with handle:
                    writer.write_header(handle)
                    for plan in group:
                        info = model.tensors[plan.input_name]
                        info._layout.check_intact()
                        if plan.converted:
                            assert quantize is not None
                            _write_converted(writer, handle, info, plan, quantize,
                                             _imatrix_entry(plan, imatrix, mix, file_type), threads, progress, scratch)
                        else:
                            copy_tensor(writer, handle, info, progress)
                        info._release_pages()
                    writer.end_stream()
            for partial, path in partials:
                os.replace(partial, path)
        except BaseException:
            for partial, _ in partials:
                try:
                    os.unlink(partial)
                except FileNotFoundError:
                    pass
            raise
    return plans


def _copy_metadata(metadata, writer: GGUFWriter, file_type: int,
                   extra: Iterable[tuple[str, GGUFValueType, Any]] = ()) -> None:
    """The input's keys with their exact types, then what llama-quantize sets, in its order.

    As gguf's ``gguf_set_val_*`` does, setting a key removes it where it was and appends it:
    ``general.quantization_version``, ``general.file_type``, then ``extra`` (overrides, the
    importance matrix's keys, a pruned block count). ``split.*`` keys are dropped.
    """
    V = GGUFValueType
    entries: dict[str, tuple[Any, GGUFValueType, GGUFValueType | None]] = {}
    for key in metadata:
        vtype = metadata.value_type(key)
        if vtype == V.STRING:
            entries[key] = (metadata.raw(key), V.STRING, None)
        elif vtype == V.ARRAY:
            etype = metadata.element_type(key)
            entries[key] = (array_items(metadata[key]), V.ARRAY, etype)
        else:
            entries[key] = (metadata[key], vtype, None)
    sets = [("general.quantization_version", V.UINT32, 2), ("general.file_type", V.UINT32, file_type)]
    for key, vtype, value in sets:
        entries.pop(key, None)
        entries[key] = (value, vtype, None)
    for key in _SPLIT_KEYS:
        entries.pop(key, None)
    for key, vtype, value in extra:
        entries.pop(key, None)
        entries[key] = (value, vtype, None)
    for key, (value, vtype, etype) in entries.items():
        if etype is None:
            writer.add(key, value, vtype)
        else:
            writer.add(key, value, vtype, etype)


def _write_converted(writer: GGUFWriter, handle, info: TensorInfo, plan: TensorPlan, quantize, imatrix, threads,
                     progress, scratch: Callable[[int], np.ndarray]) -> None:
    n_per_row = info.shape[-1]
    n_rows = info.n_elements // n_per_row if n_per_row else 0
    rows_per_matrix = info.shape[-2] if len(info.shape) >= 2 else n_rows
    in_row_bytes = n_per_row // TYPE_TRAITS[info.type].block_size * TYPE_TRAITS[info.type].type_size
    step = max(1, _CHUNK_ELEMENTS // max(n_per_row, 1))
    if imatrix is not None:
        step = min(step, max(rows_per_matrix, 1))  # a block of rows stays within one matrix (expert)
    buffer = scratch(step * n_per_row)
    row = 0
    while row < n_rows:
        end = min(n_rows, row + step)
        weights = None
        if imatrix is not None:
            matrix = row // rows_per_matrix
            end = min(end, (matrix + 1) * rows_per_matrix)
            weights = imatrix[matrix * n_per_row : (matrix + 1) * n_per_row]
        x = dequant.dequantize(info.raw, info.type, info.shape, rows=slice(row, end), threads=threads,
                               byteorder=info.byteorder, out=buffer[: (end - row) * n_per_row].reshape(-1, n_per_row))
        try:
            blocks = quantize(x, plan.target_type, imatrix=weights, threads=threads)
        except ValueError as error:
            raise ValueError(f"tensor {info.name!r} (rows {row}..{end - 1}): {error}") from None
        writer.write_tensor_data(handle, np.ascontiguousarray(blocks).reshape(-1), byteorder="<")
        release_pages(info, row * in_row_bytes, end * in_row_bytes)
        if progress is not None:
            progress((end - row) * in_row_bytes)
        row = end


class _Scratch:
    """One float32 buffer for the blocks of rows of every tensor, grown when needed: a steady heap.

    (Fresh 8 MiB arrays per block leave glibc's heap fragmented and the resident set growing.)
    """

    def __init__(self) -> None:
        self._buffer = np.empty(0, np.float32)

    def __call__(self, n: int) -> np.ndarray:
        if self._buffer.size < n:
            self._buffer = np.empty(0, np.float32)  # drop the old one first
            self._buffer = np.empty(n, np.float32)
        return self._buffer
