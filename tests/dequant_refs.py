"""Reference data and reference dequantizers shared by the dequantization tests and benchmarks.

gguf-py (``gguf.quants.dequantize``) is the reference where it has the type. For Q8_1, Q8_K,
F64 and the integer types it has none (and gguf-py 0.19 has Q8_1's size wrong), so plain numpy
versions written from the block layouts are here.
"""

from __future__ import annotations

import numpy as np

from fastgguf.types import TYPE_TRAITS, GGMLType

T = GGMLType

#: The plain element types and the legacy and K-quant block types (the IQ, ternary and FP4 ones
#: are tested in test_dequant_iq.py).
ENGINE_TYPES = (
    T.F32, T.F16, T.BF16, T.F64, T.I8, T.I16, T.I32, T.I64,
    T.Q4_0, T.Q4_1, T.Q5_0, T.Q5_1, T.Q8_0, T.Q8_1,
    T.Q2_K, T.Q3_K, T.Q4_K, T.Q5_K, T.Q6_K, T.Q8_K,
)

#: Types gguf-py 0.19 dequantizes (correctly).
GGUF_PY_TYPES = (
    T.F32, T.F16, T.BF16,
    T.Q4_0, T.Q4_1, T.Q5_0, T.Q5_1, T.Q8_0,
    T.Q2_K, T.Q3_K, T.Q4_K, T.Q5_K, T.Q6_K,
)

#: Scale fields per block: (byte offset, "f16" | "f32"). Random tests put finite values there.
SCALE_FIELDS = {
    T.Q4_0: [(0, "f16")],
    T.Q4_1: [(0, "f16"), (2, "f16")],
    T.Q5_0: [(0, "f16")],
    T.Q5_1: [(0, "f16"), (2, "f16")],
    T.Q8_0: [(0, "f16")],
    T.Q8_1: [(0, "f16"), (2, "f16")],
    T.Q2_K: [(80, "f16"), (82, "f16")],
    T.Q3_K: [(108, "f16")],
    T.Q4_K: [(0, "f16"), (2, "f16")],
    T.Q5_K: [(0, "f16"), (2, "f16")],
    T.Q6_K: [(208, "f16")],
    T.Q8_K: [(0, "f32")],
}

#: Plain element types: numpy dtype of one stored element.
ELEMENT_DTYPES = {
    T.F32: np.dtype("<f4"), T.F16: np.dtype("<f2"), T.BF16: np.dtype("<u2"), T.F64: np.dtype("<f8"),
    T.I8: np.dtype("i1"), T.I16: np.dtype("<i2"), T.I32: np.dtype("<i4"), T.I64: np.dtype("<i8"),
}


def random_tensor_bytes(qtype: GGMLType, n_elements: int, rng: np.random.Generator) -> np.ndarray:
    """Random bytes for ``n_elements`` of ``qtype``; scales and float elements are finite."""
    block_size, type_size = TYPE_TRAITS[qtype]
    n_blocks = n_elements // block_size
    if qtype in ELEMENT_DTYPES:
        dtype = ELEMENT_DTYPES[qtype]
        if qtype in (T.F32, T.F64):
            values = (rng.standard_normal(n_elements) * 10.0 ** rng.integers(-40, 38, n_elements)).astype(dtype)
        elif qtype == T.F16:
            bits = rng.integers(0, 1 << 16, n_elements, dtype=np.uint16)
            bits[(bits & 0x7C00) == 0x7C00] &= 0xBFFF  # no inf/NaN: clear the top exponent bit
            values = bits.view("<f2")
        elif qtype == T.BF16:
            bits = rng.integers(0, 1 << 16, n_elements, dtype=np.uint16)
            bits[(bits & 0x7F80) == 0x7F80] &= 0xBFFF
            values = bits
        else:
            info = np.iinfo(dtype)
            values = rng.integers(info.min, info.max, n_elements, dtype=dtype, endpoint=True)
        return np.ascontiguousarray(values).view(np.uint8).reshape(-1)
    blocks = rng.integers(0, 256, size=(n_blocks, type_size), dtype=np.uint8)
    for offset, kind in SCALE_FIELDS[qtype]:
        if kind == "f16":
            bits = rng.integers(0, 1 << 16, n_blocks, dtype=np.uint16)
            bits[(bits & 0x7C00) == 0x7C00] &= 0xBFFF
            blocks[:, offset : offset + 2] = bits.view(np.uint8).reshape(-1, 2)
        else:
            scale = (rng.standard_normal(n_blocks) * 10.0 ** rng.integers(-30, 30, n_blocks)).astype("<f4")
            blocks[:, offset : offset + 4] = scale.view(np.uint8).reshape(-1, 4)
    return blocks.reshape(-1)


def numpy_reference(qtype: GGMLType, raw: np.ndarray) -> np.ndarray:
    """Plain numpy dequantization for the types gguf-py lacks; 1-D float32."""
    if qtype in (T.I8, T.I16, T.I32, T.I64, T.F64):
        return raw.view(ELEMENT_DTYPES[qtype]).astype(np.float32)
    if qtype == T.Q8_1:
        blocks = raw.reshape(-1, 36)
        d = blocks[:, 0:2].copy().view("<f2").astype(np.float32)  # (n, 1)
        q = blocks[:, 4:36].view(np.int8).astype(np.float32)
        return (d * q).reshape(-1)
    if qtype == T.Q8_K:
        blocks = raw.reshape(-1, 292)
        d = blocks[:, 0:4].copy().view("<f4")  # (n, 1)
        q = blocks[:, 4:260].view(np.int8).astype(np.float32)
        return (d * q).reshape(-1)
    raise KeyError(qtype)


def reference(qtype: GGMLType, raw: np.ndarray) -> np.ndarray:
    """The reference float32 values (1-D) of ``raw`` bytes of ``qtype``."""
    if qtype in GGUF_PY_TYPES:
        from gguf.constants import GGMLQuantizationType
        from gguf.quants import dequantize as gguf_dequantize

        block_size, type_size = TYPE_TRAITS[qtype]
        rows = raw.reshape(-1, type_size)
        if qtype == T.F32:
            rows = raw.view(np.float32)
        elif qtype == T.F16:
            rows = raw.view(np.float16)
        return np.asarray(gguf_dequantize(rows, GGMLQuantizationType(int(qtype))), dtype=np.float32).reshape(-1)
    return numpy_reference(qtype, raw)
