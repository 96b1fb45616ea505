"""Which bytes of a quantized block are multi-byte numbers, and so are stored byte-swapped in a
big-endian file.

ggml writes a block as its C struct in the host's byte order: fp16/f32 scales, uint16/int16/uint32
fields, and the uint32 words its reference quantizers store into byte arrays (Q5's high bits,
IQ2_XXS's grid/sign words, IQ3_XXS's scale-and-sign words) come out reversed on a big-endian host;
plain byte arrays do not. The kernels (through ``type_table.h``, written by
``tools/gen_type_table.py``) and :func:`byteswap_blocks` (used by ``GGUFWriter``) both read
:data:`BLOCK_FIELDS`.
"""

from __future__ import annotations

import numpy as np

from .types import TYPE_TRAITS, GGMLType

__all__ = ["BLOCK_FIELDS", "byteswap_blocks"]

_T = GGMLType
#: type -> ((byte offset in the block, field width in bytes, number of consecutive fields), ...)
BLOCK_FIELDS: dict[GGMLType, tuple[tuple[int, int, int], ...]] = {
    _T.Q4_0: ((0, 2, 1),),
    _T.Q4_1: ((0, 2, 2),),
    _T.Q5_0: ((0, 2, 1), (2, 4, 1)),
    _T.Q5_1: ((0, 2, 2), (4, 4, 1)),
    _T.Q8_0: ((0, 2, 1),),
    _T.Q8_1: ((0, 2, 2),),
    _T.Q2_K: ((80, 2, 2),),
    _T.Q3_K: ((108, 2, 1),),
    _T.Q4_K: ((0, 2, 2),),
    _T.Q5_K: ((0, 2, 2),),
    _T.Q6_K: ((208, 2, 1),),
    _T.Q8_K: ((0, 4, 1), (260, 2, 16)),
    _T.IQ2_XXS: ((0, 2, 1), (2, 4, 16)),
    _T.IQ2_XS: ((0, 2, 1), (2, 2, 32)),
    _T.IQ3_XXS: ((0, 2, 1), (66, 4, 8)),
    _T.IQ1_S: ((0, 2, 1), (34, 2, 8)),
    _T.IQ4_NL: ((0, 2, 1),),
    _T.IQ3_S: ((0, 2, 1),),
    _T.IQ2_S: ((0, 2, 1),),
    _T.IQ4_XS: ((0, 2, 2),),
    _T.IQ1_M: ((48, 2, 4),),
    _T.TQ1_0: ((52, 2, 1),),
    _T.TQ2_0: ((64, 2, 1),),
    _T.MXFP4: (),
    _T.NVFP4: (),
    _T.Q1_0: ((0, 2, 1),),
    _T.Q2_0: ((0, 2, 1),),
}
# Plain types: the whole element is one field.
for _type in (_T.F32, _T.F16, _T.BF16, _T.F64, _T.I8, _T.I16, _T.I32, _T.I64):
    _size = TYPE_TRAITS[_type].type_size
    BLOCK_FIELDS[_type] = ((0, _size, 1),) if _size > 1 else ()
del _T, _type, _size


def byteswap_blocks(data, type: GGMLType | int) -> bytes:  # noqa: A002
    """Return ``data`` (whole blocks of ggml type ``type``) with every multi-byte field reversed:
    little-endian blocks become big-endian ones and back."""
    type_ = GGMLType(type)
    type_size = TYPE_TRAITS[type_].type_size
    blocks = np.frombuffer(memoryview(data).cast("B"), dtype=np.uint8)
    if blocks.size % type_size:
        raise ValueError(f"{blocks.size} bytes are not whole {type_.name} blocks of {type_size} bytes")
    blocks = blocks.reshape(-1, type_size).copy()
    for offset, width, count in BLOCK_FIELDS[type_]:
        fields = blocks[:, offset:offset + width * count].reshape(-1, count, width)
        fields[...] = fields[:, :, ::-1].copy()
    return blocks.tobytes()
