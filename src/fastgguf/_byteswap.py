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

from .types import REGISTRY, TYPE_TRAITS, Fields, GGMLType

__all__ = ["BLOCK_FIELDS", "byteswap_blocks"]

#: type -> ((byte offset in the block, field width in bytes, number of consecutive fields), ...):
#: the registry's ``fields`` column.
BLOCK_FIELDS: dict[GGMLType, Fields] = {qtype: row.fields for qtype, row in REGISTRY.items()}


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
