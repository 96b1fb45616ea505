"""GGUF value types, ggml tensor types, and the one table of tensor-type traits.

Every other module asks :data:`TYPE_TRAITS` for block sizes and byte counts;
nothing else hard-codes them.
"""

from __future__ import annotations

import operator
from enum import IntEnum
from typing import Any, NamedTuple

__all__ = [
    "GGMLType",
    "GGUFValueType",
    "TypeTraits",
    "TYPE_TRAITS",
    "REMOVED_TYPE_IDS",
    "resolve_type",
    "traits_of",
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


_T = GGMLType
#: id -> (elements per block, bytes per block); ggml's ``type_traits`` for every type a GGUF may hold.
TYPE_TRAITS: dict[GGMLType, TypeTraits] = {
    _T.F32: TypeTraits(1, 4),
    _T.F16: TypeTraits(1, 2),
    _T.Q4_0: TypeTraits(32, 18),
    _T.Q4_1: TypeTraits(32, 20),
    _T.Q5_0: TypeTraits(32, 22),
    _T.Q5_1: TypeTraits(32, 24),
    _T.Q8_0: TypeTraits(32, 34),
    _T.Q8_1: TypeTraits(32, 36),  # two fp16 scales; gguf-py 0.19 wrongly says 40
    _T.Q2_K: TypeTraits(256, 84),
    _T.Q3_K: TypeTraits(256, 110),
    _T.Q4_K: TypeTraits(256, 144),
    _T.Q5_K: TypeTraits(256, 176),
    _T.Q6_K: TypeTraits(256, 210),
    _T.Q8_K: TypeTraits(256, 292),
    _T.IQ2_XXS: TypeTraits(256, 66),
    _T.IQ2_XS: TypeTraits(256, 74),
    _T.IQ3_XXS: TypeTraits(256, 98),
    _T.IQ1_S: TypeTraits(256, 50),
    _T.IQ4_NL: TypeTraits(32, 18),
    _T.IQ3_S: TypeTraits(256, 110),
    _T.IQ2_S: TypeTraits(256, 82),
    _T.IQ4_XS: TypeTraits(256, 136),
    _T.I8: TypeTraits(1, 1),
    _T.I16: TypeTraits(1, 2),
    _T.I32: TypeTraits(1, 4),
    _T.I64: TypeTraits(1, 8),
    _T.F64: TypeTraits(1, 8),
    _T.IQ1_M: TypeTraits(256, 56),
    _T.BF16: TypeTraits(1, 2),
    _T.TQ1_0: TypeTraits(256, 54),
    _T.TQ2_0: TypeTraits(256, 66),
    _T.MXFP4: TypeTraits(32, 17),
    _T.NVFP4: TypeTraits(64, 36),
    _T.Q1_0: TypeTraits(128, 18),
    _T.Q2_0: TypeTraits(64, 18),
}
del _T

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
    if isinstance(type_, str):
        try:
            return GGMLType[type_.upper()]
        except KeyError:
            raise ValueError(f"unknown ggml tensor type name {type_!r}") from None
    try:
        type_id = operator.index(type_)
    except TypeError:
        raise TypeError(f"type must be a GGMLType, an int or a type name, not {type(type_).__name__}") from None
    try:
        return GGMLType(type_id)
    except ValueError:
        state = "removed" if type_id in REMOVED_TYPE_IDS else "unknown"
        raise ValueError(f"{state} ggml tensor type id {type_id}") from None
