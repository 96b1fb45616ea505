"""llama.cpp's file types and its per-tensor mix rules, as ``llama-quantize`` applies them.

Mixes (``Q4_K_M``, ``IQ2_M``, ...) follow ``llama_tensor_get_type`` of llama.cpp's
``src/llama-quant.cpp``: which tensors are quantized at all, the rules per tensor kind
(``output.weight``, ``token_embd.weight``, ``attn_v``, ``attn_k``, ``attn_q``, ``attn_output``,
``attn_qkv``, ``ffn_down``/``ffn_gate``/``ffn_up``) with the layer counting of ``use_more_bits``,
the fallbacks when a row length is not a multiple of the block size, and which tensors need an
importance matrix. Per-type facts (file type, fallback, imatrix demands) come from the registry
(:data:`fastgguf.types.REGISTRY`); :mod:`fastgguf.requantize` applies these rules to a file.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

import numpy as np

from .errors import GGUFError
from .types import REGISTRY, TYPE_TRAITS, GGMLType, types_where

_T = GGMLType


class Weight(Protocol):
    """What the rules read of a tensor: its name and its shape (numpy order, outermost first)."""

    @property
    def name(self) -> str: ...

    @property
    def shape(self) -> tuple[int, ...]: ...

#: llama.cpp's ``llama_ftype`` values (``general.file_type``), by llama-quantize's name for them.
FILE_TYPES: dict[str, int] = {
    "F32": 0, "F16": 1, "Q4_0": 2, "Q4_1": 3, "Q8_0": 7, "Q5_0": 8, "Q5_1": 9, "Q2_K": 10, "Q3_K_S": 11,
    "Q3_K_M": 12, "Q3_K_L": 13, "Q4_K_S": 14, "Q4_K_M": 15, "Q5_K_S": 16, "Q5_K_M": 17, "Q6_K": 18,
    "IQ2_XXS": 19, "IQ2_XS": 20, "Q2_K_S": 21, "IQ3_XS": 22, "IQ3_XXS": 23, "IQ1_S": 24, "IQ4_NL": 25,
    "IQ3_S": 26, "IQ3_M": 27, "IQ2_S": 28, "IQ2_M": 29, "IQ4_XS": 30, "IQ1_M": 31, "BF16": 32, "TQ1_0": 36,
    "TQ2_0": 37, "MXFP4_MOE": 38, "NVFP4": 39, "Q1_0": 40, "Q2_0": 41,
}

#: llama-quantize's file types and the tensor type each starts from (``llama_ftype_get_default_type``).
#: ``--type`` with one of these names applies llama.cpp's per-tensor rules for it.
MIXES: dict[str, GGMLType] = {
    "F32": _T.F32, "F16": _T.F16, "BF16": _T.BF16, "Q4_0": _T.Q4_0, "Q4_1": _T.Q4_1, "Q5_0": _T.Q5_0,
    "Q5_1": _T.Q5_1, "Q8_0": _T.Q8_0, "Q1_0": _T.Q1_0, "Q2_0": _T.Q2_0, "MXFP4_MOE": _T.MXFP4,
    "NVFP4": _T.NVFP4, "Q2_K": _T.Q2_K, "Q2_K_S": _T.Q2_K, "Q3_K_S": _T.Q3_K, "Q3_K_M": _T.Q3_K,
    "Q3_K_L": _T.Q3_K, "Q4_K_S": _T.Q4_K, "Q4_K_M": _T.Q4_K, "Q5_K_S": _T.Q5_K, "Q5_K_M": _T.Q5_K,
    "Q6_K": _T.Q6_K, "TQ1_0": _T.TQ1_0, "TQ2_0": _T.TQ2_0, "IQ2_XXS": _T.IQ2_XXS, "IQ2_XS": _T.IQ2_XS,
    "IQ2_S": _T.IQ2_XS, "IQ2_M": _T.IQ2_S, "IQ3_XXS": _T.IQ3_XXS, "IQ3_XS": _T.IQ3_S, "IQ3_S": _T.IQ3_S,
    "IQ3_M": _T.IQ3_S, "IQ1_S": _T.IQ1_S, "IQ1_M": _T.IQ1_M, "IQ4_NL": _T.IQ4_NL, "IQ4_XS": _T.IQ4_XS,
}

#: ``general.file_type`` written for one tensor type on every weight: llama-quantize's file type of
#: that name, else the one whose starting type it is (what ``llama-quantize --pure`` writes).
PURE_FILE_TYPES: dict[GGMLType, int] = {t: row.file_type for t, row in REGISTRY.items() if row.file_type is not None}

FLOAT_TYPES = frozenset({_T.F32, _T.F16, _T.BF16})
#: Types ggml quantizes only with an importance matrix (``ggml_quantize_requires_imatrix``).
GGML_NEEDS_IMATRIX = types_where(imatrix="required")
#: Target types llama-quantize refuses to write without an importance matrix (``tensor_requires_imatrix``).
LLAMA_NEEDS_IMATRIX = types_where(llama_imatrix=True)
#: ``tensor_type_fallback``: the type used when a row length is not a multiple of the block size.
FALLBACK = {t: row.fallback for t, row in REGISTRY.items() if row.fallback is not None}



CATEGORIES = (  # (substring, category), tested in this order as llama.cpp does
    ("attn_qkv.weight", "qkv"), ("attn_kv_b.weight", "kv_b"), ("attn_v.weight", "v"), ("attn_k.weight", "k"),
    ("attn_q.weight", "q"), ("attn_output.weight", "attn_output"), ("ffn_up", "ffn_up"),
    ("ffn_gate", "ffn_gate"), ("ffn_down", "ffn_down"),
)
TOKEN_EMBD = ("token_embd.weight", "per_layer_token_embd.weight")
LAYER = re.compile(r"blk\.\s*([+-]?\d+)")

# Substrings of tensor names llama-quantize never quantizes (tensor_allows_quantization).
NOT_QUANTIZED = (
    "_norm.weight", "ffn_gate_inp.weight", "ffn_gate_tid2eid.weight", "altup", "laurel", "per_layer_model_proj",
    "ssm_conv1d", "shortconv.conv.weight", "indexer.k_proj.weight", "indexer.q_proj.weight",
    "time_mix_first.weight", "time_mix_w0.weight", "time_mix_w1.weight", "time_mix_w2.weight",
    "time_mix_v0.weight", "time_mix_v1.weight", "time_mix_v2.weight", "time_mix_a0.weight", "time_mix_a1.weight",
    "time_mix_a2.weight", "time_mix_g1.weight", "time_mix_g2.weight", "time_mix_decay_w1.weight",
    "time_mix_decay_w2.weight", "time_mix_lerp_fused.weight", "attn_rel_b.weight", ".position_embd",
    "sam.pos_embd", "sam.neck.", "sam.net_", ".rel_pos", ".patch_embd", ".patch_merger", "a.rvq.codebook",
    "mm.a.code_embd",
)


def category(name: str) -> str:
    if name == "output.weight":
        return "output"
    if name in TOKEN_EMBD:
        return "token_embd"
    for part, category in CATEGORIES:
        if part in name:
            return category
    return "other"


def n_dims(shape: tuple[int, ...]) -> int:
    """ggml_n_dims: dimensions up to the last one above 1 (outermost first here), at least 1."""
    for i, n in enumerate(shape):
        if n > 1:
            return len(shape) - i
    return 1


def ggml_shape(shape: tuple[int, ...]) -> tuple[int, ...]:
    """The shape as gguf writes a tensor's info: ``ggml_n_dims`` dimensions (outer ones of 1 dropped)."""
    return tuple(shape[len(shape) - n_dims(shape):]) if shape else shape


def why_not_quantized(info: Weight) -> str | None:
    """Why llama-quantize leaves this tensor as it is, or None when it quantizes it."""
    dims = n_dims(info.shape)
    if dims < 2:
        return f"{dims}-D"
    name = info.name
    if not name.endswith("weight"):
        return "not a weight"
    if name in ("position_embd.weight", "token_types.weight") or any(part in name for part in NOT_QUANTIZED):
        return "kept by llama-quantize's rules"
    return None


def layer_of(name: str) -> int | None:
    match = LAYER.match(name)
    return int(match.group(1)) if match else None


@dataclass
class Hparams:
    arch: str
    n_layer: int
    n_gqa: int
    n_expert: int
    is_70b: bool

    @classmethod
    def of(cls, metadata: Mapping[str, Any], needed: bool) -> Hparams:
        arch = metadata.get("general.architecture", "")
        arch = arch if isinstance(arch, str) else ""

        def number(key: str, default: int) -> int:
            value = metadata.get(f"{arch}.{key}", default)
            if isinstance(value, np.ndarray):
                value = value[0] if value.size else default  # per-layer arrays: layer 0, as n_gqa() uses
            try:
                return int(value)
            except (TypeError, ValueError):
                raise GGUFError(f"{arch}.{key} is not a number: {value!r}") from None

        if needed and f"{arch}.block_count" not in metadata:
            raise ValueError(f"llama.cpp's mix rules count layers: {arch or '(no general.architecture)'}"
                             f".block_count is missing; use a plain tensor type (--pure)")
        n_layer = number("block_count", 0)
        n_head = number("attention.head_count", 0)
        n_head_kv = number("attention.head_count_kv", n_head)
        n_expert = number("expert_count", 0)
        n_gqa = n_head // n_head_kv if n_head_kv else 0
        return cls(arch, n_layer, n_gqa, n_expert, arch == "llama" and n_layer == 80 and n_head != n_head_kv)


def use_more_bits(i_layer: int, n_layer: int) -> bool:
    return i_layer < n_layer // 8 or i_layer >= 7 * n_layer // 8 or (i_layer - n_layer // 8) % 3 == 2


class MixRules:
    """llama.cpp's ``llama_tensor_get_type_impl``: the tensor type for each tensor of one file type.

    Stateful like the original: counters of attn_v / ffn_* tensors advance as tensors are seen,
    which must be in llama.cpp's order (:func:`_llama_order`).
    """

    def __init__(self, mix: str, hp: Hparams, has_imatrix: bool, tensors: Sequence[Weight]) -> None:
        self.ft = mix
        self.hp = hp
        self.has_imatrix = has_imatrix
        categories = [category(t.name) for t in tensors]
        self.n_attention_wv = sum(c in ("v", "qkv", "kv_b") for c in categories)
        self.tied = "output" not in categories
        self.n_ffn = hp.n_layer
        self.i_attention_wv = self.i_ffn_down = self.i_ffn_gate = self.i_ffn_up = 0
        self.output_type: GGMLType | None = None
        self.token_embd_type: GGMLType | None = None

    def _layer(self, counter: int, name: str) -> tuple[int, int]:
        if self.hp.n_expert > 1:
            layer = layer_of(name)
            if layer is None:
                raise ValueError(f"cannot tell the layer of tensor {name!r} (expected blk.N.)")
            if not 0 <= layer < self.n_ffn:
                raise ValueError(f"bad layer {layer} for tensor {name!r}: must be in [0, {self.n_ffn})")
            return layer, self.n_ffn
        return counter, self.n_ffn

    def type_for(self, info: Weight, new: GGMLType) -> GGMLType:
        ft, hp, name = self.ft, self.hp, info.name
        cat = category(name)
        gqa, n_expert, falcon = hp.n_gqa, hp.n_expert, hp.arch == "falcon"
        very_low = ("IQ2_XXS", "IQ2_XS", "IQ1_S", "IQ2_S", "IQ2_M", "IQ1_M")
        attn_v_like = cat in ("v", "qkv", "kv_b")
        if cat == "output" or (self.tied and cat == "token_embd"):
            nx = info.shape[-1]
            if self.output_type is not None:
                new = self.output_type
            elif ft == "MXFP4_MOE" or falcon or nx % TYPE_TRAITS[new].block_size:
                new = _T.Q8_0
            elif ft in ("IQ2_XXS", "IQ2_XS", "IQ3_XXS", "IQ1_S", "IQ2_S", "IQ2_M", "IQ1_M"):
                new = _T.Q5_K
            elif new != _T.Q8_0:
                new = _T.Q6_K
        elif ft == "MXFP4_MOE":
            expert_role = cat in ("ffn_up", "ffn_gate", "ffn_down")
            n_mat = info.shape[-3] if len(info.shape) >= 3 else 1
            new = _T.MXFP4 if n_mat > 1 and (hp.arch != "bailingmoe3" or expert_role) else _T.Q8_0
        elif cat == "token_embd":
            if self.token_embd_type is not None:
                new = self.token_embd_type
            elif ft in ("IQ2_XXS", "IQ2_XS", "IQ1_S", "IQ1_M"):
                new = _T.Q2_K
            elif ft in ("IQ2_S", "IQ2_M", "IQ3_XXS"):
                new = _T.IQ3_S
            elif ft in ("TQ1_0", "TQ2_0", "Q2_0"):
                new = _T.Q4_K
        elif ft in very_low:
            iq2_sm = ft in ("IQ2_S", "IQ2_M")
            if attn_v_like:
                new = _T.Q4_K if gqa >= 4 or n_expert >= 4 else (_T.IQ3_S if iq2_sm else _T.Q2_K)
                self.i_attention_wv += 1
            elif n_expert == 8 and cat == "k":
                new = _T.Q4_K
            elif cat == "ffn_down":
                if self.i_ffn_down < self.n_ffn // 8:
                    new = _T.IQ3_S if iq2_sm else _T.Q2_K
                self.i_ffn_down += 1
            elif cat == "attn_output":
                if n_expert == 8:
                    new = _T.Q5_K
                elif ft in ("IQ1_S", "IQ1_M"):
                    new = _T.IQ2_XXS
                elif iq2_sm:
                    new = _T.IQ3_S
        elif attn_v_like:
            i, n = self.i_attention_wv, self.n_attention_wv
            if ft == "Q2_K":
                new = _T.Q4_K if gqa >= 4 else _T.Q3_K
            elif ft == "Q2_K_S" and gqa >= 4:
                new = _T.Q4_K
            elif ft == "IQ3_XXS":
                new = _T.Q4_K if gqa >= 4 else (_T.IQ3_XXS if self.has_imatrix else _T.IQ3_S)
            elif ft in ("IQ3_XS", "IQ3_S") and gqa >= 4:
                new = _T.Q4_K
            elif ft == "IQ3_M":
                new = _T.Q4_K
            elif ft == "Q3_K_M":
                new = _T.Q5_K if i < 2 else _T.Q4_K
            elif ft == "Q3_K_L":
                new = _T.Q5_K
            elif ft in ("IQ4_NL", "IQ4_XS") and gqa >= 4:
                new = _T.Q5_K
            elif ft in ("Q4_K_M", "Q5_K_M") and use_more_bits(i, n):
                new = _T.Q6_K
            elif ft == "Q4_K_S" and i < 4:
                new = _T.Q5_K
            if hp.is_70b and new in (_T.Q3_K, _T.Q4_K):
                new = _T.Q5_K
            if n_expert == 8:
                new = _T.Q8_0
            self.i_attention_wv += 1
        elif cat == "k":
            if n_expert == 8:
                new = _T.Q8_0
            elif ft == "IQ3_XS":
                new = _T.IQ3_XXS
            elif ft == "IQ3_XXS":
                new = _T.IQ2_S
        elif cat == "q":
            if ft == "IQ3_XS":
                new = _T.IQ3_XXS
            elif ft == "IQ3_XXS":
                new = _T.IQ2_S
        elif cat == "ffn_down":
            i, n = self._layer(self.i_ffn_down, name)
            if ft == "Q2_K":
                new = _T.Q3_K
            elif ft == "Q2_K_S":
                if i < n // 8:
                    new = _T.Q4_K
            elif ft == "IQ3_XXS" and not self.has_imatrix:
                new = _T.Q4_K if i < n // 8 else _T.Q3_K
            elif ft == "Q3_K_M":
                new = _T.Q5_K if i < n // 16 else (_T.Q4_K if not falcon or use_more_bits(i, n) else _T.Q3_K)
            elif ft == "IQ3_M" and (i < n // 8 or (n_expert == 8 and use_more_bits(i, n))):
                new = _T.Q4_K
            elif ft == "Q3_K_L":
                new = _T.Q4_K if falcon else _T.Q5_K
            elif ft == "Q4_K_M":
                if falcon:
                    new = _T.Q6_K if i < n // 16 else (_T.Q5_K if use_more_bits(i, n) else _T.Q4_K)
                elif use_more_bits(i, n):
                    new = _T.Q6_K
            elif i < n // 8 and ft in ("IQ4_NL", "IQ4_XS") and not self.has_imatrix:
                new = _T.Q5_K
            elif ft == "Q5_K_M" and use_more_bits(i, n):
                new = _T.Q6_K
            elif ft == "Q4_K_S" and not falcon and i < n // 8:
                new = _T.Q5_K
            elif ft in ("Q4_0", "Q5_0") and self.has_imatrix and i < n // 8:
                new = _T.Q4_1 if ft == "Q4_0" else _T.Q5_1
            self.i_ffn_down += 1
        elif cat == "attn_output":
            if not falcon:
                if n_expert == 8:
                    if ft in ("Q2_K", "IQ3_XS", "IQ3_XXS", "Q3_K_S", "Q3_K_M", "IQ4_NL", "Q4_K_S", "Q4_K_M", "IQ3_S",
                              "IQ3_M", "IQ4_XS"):
                        new = _T.Q5_K
                else:
                    new = {"Q2_K": _T.Q3_K, "IQ3_XXS": _T.IQ3_S, "Q3_K_M": _T.Q4_K, "Q3_K_L": _T.Q5_K,
                           "IQ3_M": _T.Q4_K}.get(ft, new)
            elif ft == "Q3_K_L":
                new = _T.Q4_K
        elif cat in ("ffn_gate", "ffn_up"):
            counter = self.i_ffn_gate if cat == "ffn_gate" else self.i_ffn_up
            i, n = self._layer(counter, name)
            if ft == "IQ3_XS" and n // 8 <= i < 7 * n // 8:
                new = _T.IQ3_XXS
            if cat == "ffn_gate":
                self.i_ffn_gate += 1
            else:
                self.i_ffn_up += 1
        return new
