"""Reference data and reference dequantizers shared by the dequantization tests and benchmarks.

gguf-py (``gguf.quants.dequantize``) is the reference where it has the type. For Q8_1, Q8_K,
Q1_0, Q2_0, F64 and the integer types it has none (and gguf-py 0.19 has Q8_1's size wrong), so
plain numpy versions written from the block layouts (ggml's ``dequantize_row_<type>``) are here.
This is the one module of reference dequantizers: every test and benchmark takes them from here.
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

#: The IQ, ternary and FP4 types gguf-py 0.19 dequantizes.
IQ_GGUF_PY_TYPES = (
    T.IQ2_XXS, T.IQ2_XS, T.IQ2_S, T.IQ3_XXS, T.IQ3_S, T.IQ1_S, T.IQ1_M,
    T.IQ4_NL, T.IQ4_XS, T.TQ1_0, T.TQ2_0, T.MXFP4, T.NVFP4,
)

#: The 1-/2-bit types gguf-py cannot dequantize (checked against ``numpy_reference``).
IQ_NUMPY_TYPES = (T.Q1_0, T.Q2_0)

#: Types gguf-py 0.19 dequantizes (correctly).
GGUF_PY_TYPES = (
    T.F32, T.F16, T.BF16,
    T.Q4_0, T.Q4_1, T.Q5_0, T.Q5_1, T.Q8_0,
    T.Q2_K, T.Q3_K, T.Q4_K, T.Q5_K, T.Q6_K,
) + IQ_GGUF_PY_TYPES

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
    T.IQ2_XXS: [(0, "f16")],
    T.IQ2_XS: [(0, "f16")],
    T.IQ2_S: [(0, "f16")],
    T.IQ3_XXS: [(0, "f16")],
    T.IQ3_S: [(0, "f16")],
    T.IQ1_S: [(0, "f16")],
    T.IQ1_M: [(48, "f16 nibbles")],
    T.IQ4_NL: [(0, "f16")],
    T.IQ4_XS: [(0, "f16")],
    T.TQ1_0: [(52, "f16")],
    T.TQ2_0: [(64, "f16")],
    T.Q1_0: [(0, "f16")],
    T.Q2_0: [(0, "f16")],
    # MXFP4 / NVFP4: 8-bit scale codes, all of them finite or handled by the kernels as ggml does.
    T.MXFP4: [],
    T.NVFP4: [],
}


def set_f16_scale(blocks: np.ndarray, qtype: GGMLType, bits: np.ndarray, field: int = 0) -> None:
    """Store fp16 ``bits`` (one per block) in scale field ``field`` of each row of ``blocks`` (n, type_size).

    In place. IQ1_M keeps its scale's four nibbles in the top nibbles of the four trailing uint16.
    """
    offset, kind = SCALE_FIELDS[qtype][field]
    bits = np.asarray(bits, dtype=np.uint16)
    if kind == "f16 nibbles":
        packed = blocks[:, offset : offset + 8].copy().view("<u2") & np.uint16(0x0FFF)
        for k in range(4):
            packed[:, k] |= ((bits >> (4 * k)) & 0xF) << 12
        blocks[:, offset : offset + 8] = packed.view(np.uint8)
    else:
        blocks[:, offset : offset + 2] = bits.astype("<u2").view(np.uint8).reshape(-1, 2)

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
    for field, (offset, kind) in enumerate(SCALE_FIELDS[qtype]):
        if kind.startswith("f16"):
            bits = rng.integers(0, 1 << 16, n_blocks, dtype=np.uint16)
            bits[(bits & 0x7C00) == 0x7C00] &= 0xBFFF
            set_f16_scale(blocks, qtype, bits, field)
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
    if qtype == T.Q1_0:  # d where bit j is set, -d where clear, low bit first
        blocks = raw.reshape(-1, TYPE_TRAITS[qtype].type_size)
        d = blocks[:, :2].copy().view("<f2").astype(np.float32)
        bits = np.unpackbits(blocks[:, 2:], axis=1, bitorder="little")
        return np.where(bits == 1, d, -d).reshape(-1)
    if qtype == T.Q2_0:  # (code - 1) * d, 2-bit codes low bits first
        blocks = raw.reshape(-1, TYPE_TRAITS[qtype].type_size)
        d = blocks[:, :2].copy().view("<f2").astype(np.float32)
        codes = (blocks[:, 2:, None] >> np.array([0, 2, 4, 6], dtype=np.uint8)) & 3
        return ((codes.reshape(len(blocks), -1).astype(np.int32) - 1).astype(np.float32) * d).reshape(-1)
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
        with np.errstate(over="ignore", invalid="ignore"):  # large MXFP4 scales overflow to inf, as in ggml
            values = gguf_dequantize(rows, GGMLQuantizationType(int(qtype)))
        return np.asarray(values, dtype=np.float32).reshape(-1)
    return numpy_reference(qtype, raw)
