"""GGUF value types, ggml tensor types, and the registry: one row per tensor type.

Every other module asks :data:`REGISTRY` (or :data:`TYPE_TRAITS`, its layout columns) about a
type; nothing else hard-codes block sizes, byte-swap recipes, imatrix policies or llama.cpp's
file types.
"""

from __future__ import annotations

import operator
from enum import IntEnum
from typing import Any, NamedTuple

__all__ = [
    "GGMLType",
    "GGUFValueType",
    "REGISTRY",
    "REMOVED_TYPE_IDS",
    "TYPE_TRAITS",
    "TypeRow",
    "TypeTraits",
    "resolve_type",
    "traits_of",
    "types_where",
]


class GGUFValueType(IntEnum):
    """Type tag of a metadata value, as stored in the file."""

    UINT8 = 0
    INT8 = 1
    UINT16 = 2
    INT16 = 3
    UINT32 = 4
    INT32 = 5
    FLOAT32 = 6
    BOOL = 7
    STRING = 8
    ARRAY = 9
    UINT64 = 10
    INT64 = 11
    FLOAT64 = 12


class GGMLType(IntEnum):
    """ggml tensor type ids (ggml's numbering; ids 4, 5, 31-33 and 36-38 were removed)."""

    F32 = 0
    F16 = 1
    Q4_0 = 2
    Q4_1 = 3
    Q5_0 = 6
    Q5_1 = 7
    Q8_0 = 8
    Q8_1 = 9
    Q2_K = 10
    Q3_K = 11
    Q4_K = 12
    Q5_K = 13
    Q6_K = 14
    Q8_K = 15
    IQ2_XXS = 16
    IQ2_XS = 17
    IQ3_XXS = 18
    IQ1_S = 19
    IQ4_NL = 20
    IQ3_S = 21
    IQ2_S = 22
    IQ4_XS = 23
    I8 = 24
    I16 = 25
    I32 = 26
    I64 = 27
    F64 = 28
    IQ1_M = 29
    BF16 = 30
    TQ1_0 = 34
    TQ2_0 = 35
    MXFP4 = 39
    NVFP4 = 40
    Q1_0 = 41
    Q2_0 = 42


class TypeTraits(NamedTuple):
    """Storage layout of one tensor type: a block of ``block_size`` elements takes ``type_size`` bytes."""

    block_size: int
    type_size: int

    @property
    def bits_per_weight(self) -> float:
        return 8.0 * self.type_size / self.block_size


#: Multi-byte numbers in a block, ``(byte offset, width in bytes, how many in a row)``: what a
#: big-endian file stores reversed (ggml writes a block as its C struct in the host's byte order).
Fields = tuple[tuple[int, int, int], ...]


class TypeRow(NamedTuple):
    """Everything fastgguf knows about one tensor type: one row of :data:`REGISTRY`.

    ``imatrix``: ``"required"`` (ggml refuses to quantize without an importance matrix),
    ``"used"`` (ggml weighs its search with one when given), ``"ignored"`` (no importance-matrix
    path in ggml: one is checked, then left out) or ``""`` (not quantized). ``fast``: quantized at
    about a billion elements a second (so small inputs are not worth a thread). ``file_type``:
    llama.cpp's ``general.file_type`` for a model of this type alone (``llama-quantize --pure``).
    ``fallback``: llama.cpp's type for rows that are not a whole number of blocks.
    ``llama_imatrix``: llama-quantize refuses to write it without an importance matrix.
    """

    block_size: int
    type_size: int
    fields: Fields
    imatrix: str = ""
    fast: bool = False
    file_type: int | None = None
    fallback: GGMLType | None = None
    llama_imatrix: bool = False

    @property
    def traits(self) -> TypeTraits:
        return TypeTraits(self.block_size, self.type_size)


_T = GGMLType
_R = TypeRow
_H = ((0, 2, 1),)  # one fp16 scale at the start of the block: the most common layout
# Adding a tensor type (ggml's id and layout first: ggml-common.h's block struct, ggml.c's type_traits):
#   1. here: its member in GGMLType and its row in REGISTRY (layout, byte-swapped fields, imatrix
#      policy, speed class, llama.cpp's file type and fallback), then `python tools/gen_type_table.py`
#      regenerates the kernels' C view of the table (_type_table.h/.pxd; the tests run its --check);
#   2. its kernels in its family's files (dequantize in _kernels_<family>.pxi, quantize in
#      quant_<family>.h, a dot product in matmul_dot.h if any) and its one row in that family's
#      kernel-table setup (`rows[FGG_TYPE_X] = fgg_kernel_row(...)`);
#   3. only if llama.cpp has a file type (mix) for it: FILE_TYPES and MIXES in requantize.py.
#   Then its references: dequant_refs.py's independent dequantizer and, for a quantizer,
#   tests/data/quantize/<TYPE>.npz from tools/gen_quantize_vectors.py. The tests' type lists, the
#   CLI's tables, the byte-swap recipes and the imatrix sets follow from the row.
#: The registry: one row per tensor type a GGUF may hold, ggml's ``type_traits`` and more. Every other
#: table (the kernels' C table, byte-swap recipes, imatrix sets, llama.cpp's file types and fallbacks,
#: the CLI's and the tests' type lists) is derived from it.
#   type          block  bytes  byte-swapped fields           imatrix     fast   file  fallback  llama needs imatrix
REGISTRY: dict[GGMLType, TypeRow] = {
    _T.F32: _R(1, 4, ((0, 4, 1),), "ignored", True, 0),
    _T.F16: _R(1, 2, ((0, 2, 1),), "ignored", True, 1),
    _T.Q4_0: _R(32, 18, _H, "used", True, 2),
    _T.Q4_1: _R(32, 20, ((0, 2, 2),), "used", True, 3),
    _T.Q5_0: _R(32, 22, ((0, 2, 1), (2, 4, 1)), "used", True, 8),
    _T.Q5_1: _R(32, 24, ((0, 2, 2), (4, 4, 1)), "used", True, 9),
    _T.Q8_0: _R(32, 34, _H, "ignored", True, 7),
    _T.Q8_1: _R(32, 36, ((0, 2, 2),), "ignored", True),  # two fp16 scales; gguf-py 0.19 wrongly says 40
    _T.Q2_K: _R(256, 84, ((80, 2, 2),), "used", False, 10, _T.Q4_0),
    _T.Q3_K: _R(256, 110, ((108, 2, 1),), "used", False, 12, _T.Q4_0),
    _T.Q4_K: _R(256, 144, ((0, 2, 2),), "used", False, 15, _T.Q5_0),
    _T.Q5_K: _R(256, 176, ((0, 2, 2),), "used", False, 17, _T.Q5_1),
    _T.Q6_K: _R(256, 210, ((208, 2, 1),), "used", False, 18, _T.Q8_0),
    _T.Q8_K: _R(256, 292, ((0, 4, 1), (260, 2, 16)), "ignored", True),
    _T.IQ2_XXS: _R(256, 66, ((0, 2, 1), (2, 4, 16)), "required", False, 19, _T.IQ4_NL, True),
    _T.IQ2_XS: _R(256, 74, ((0, 2, 1), (2, 2, 32)), "required", False, 20, _T.IQ4_NL, True),
    _T.IQ3_XXS: _R(256, 98, ((0, 2, 1), (66, 4, 8)), "used", False, 23, _T.IQ4_NL, True),
    _T.IQ1_S: _R(256, 50, ((0, 2, 1), (34, 2, 8)), "required", False, 24, _T.IQ4_NL, True),
    _T.IQ4_NL: _R(32, 18, _H, "used", False, 25),
    _T.IQ3_S: _R(256, 110, _H, "used", False, 26, _T.IQ4_NL),
    _T.IQ2_S: _R(256, 82, _H, "used", False, 29, _T.IQ4_NL, True),
    _T.IQ4_XS: _R(256, 136, ((0, 2, 2),), "used", False, 30, _T.IQ4_NL),
    _T.I8: _R(1, 1, ()),
    _T.I16: _R(1, 2, ((0, 2, 1),)),
    _T.I32: _R(1, 4, ((0, 4, 1),)),
    _T.I64: _R(1, 8, ((0, 8, 1),)),
    _T.F64: _R(1, 8, ((0, 8, 1),)),
    _T.IQ1_M: _R(256, 56, ((48, 2, 4),), "used", False, 31, _T.IQ4_NL, True),
    _T.BF16: _R(1, 2, ((0, 2, 1),), "ignored", True, 32),
    _T.TQ1_0: _R(256, 54, ((52, 2, 1),), "ignored", True, 36, _T.Q4_0),
    _T.TQ2_0: _R(256, 66, ((64, 2, 1),), "ignored", True, 37, _T.Q4_0),
    _T.MXFP4: _R(32, 17, (), "ignored", False, 38),
    _T.NVFP4: _R(64, 36, (), "ignored", False, 39),
    _T.Q1_0: _R(128, 18, _H, "ignored", False, 40),
    _T.Q2_0: _R(64, 18, _H, "ignored", True, 41, _T.Q4_0),
}
del _T, _R, _H

#: id -> (elements per block, bytes per block), from :data:`REGISTRY`.
TYPE_TRAITS: dict[GGMLType, TypeTraits] = {qtype: row.traits for qtype, row in REGISTRY.items()}


def types_where(**column: Any) -> frozenset[GGMLType]:
    """The types whose registry row has every given column value: ``types_where(imatrix="required")``."""
    return frozenset(qtype for qtype, row in REGISTRY.items()
                     if all(getattr(row, name) == value for name, value in column.items()))


#: Ids ggml once used and has removed; files carrying them are rejected.
REMOVED_TYPE_IDS = frozenset({4, 5, 31, 32, 33, 36, 37, 38})


def traits_of(type_id: int) -> TypeTraits:
    """Return the layout of tensor type ``type_id``.

    Raises
    ------
    ValueError
        If ``type_id`` is not a ggml type a GGUF file may hold.
    """
    try:
        return TYPE_TRAITS[GGMLType(type_id)]
    except ValueError:
        state = "removed" if type_id in REMOVED_TYPE_IDS else "unknown"
        raise ValueError(f"{state} ggml tensor type id {type_id}") from None


def resolve_type(type_: Any) -> GGMLType:
    """The tensor type ``type_`` names: a :class:`GGMLType`, an int id, or a name (``"Q4_K"``, any case).

    Raises
    ------
    TypeError
        ``type_`` is none of those kinds.
    ValueError
        An unknown or removed id, or an unknown name.
    """
    if isinstance(type_, GGMLType):  # the common case, and GGMLType(member) costs an enum call
        return type_
    if isinstance(type_, str):
        try:
            return GGMLType[type_.upper()]
        except KeyError:
            raise ValueError(f"unknown ggml tensor type name {type_!r}") from None
    try:
        type_id = operator.index(type_)
    except TypeError:
        raise TypeError(f"type must be a GGMLType, an int or a type name, not {type(type_).__name__}") from None
    member = _TYPES_BY_ID.get(type_id)
    if member is None:
        state = "removed" if type_id in REMOVED_TYPE_IDS else "unknown"
        raise ValueError(f"{state} ggml tensor type id {type_id}")
    return member


#: GGMLType by id: a dict lookup, where GGMLType(id) is an enum call (about 1 us, per matmul call).
_TYPES_BY_ID = {int(member): member for member in GGMLType}
