"""Small valid GGUF files for the fuzzer to start from: every value type, v1/v2/v3, both byte orders,
every tensor type. Deterministic, so a corpus written from them is reproducible."""

from __future__ import annotations

import numpy as np

from fastgguf import GGMLType, GGUFValueType as V, GGUFWriter
from fastgguf.types import TYPE_TRAITS

_NUMERIC = {
    V.UINT8: np.array([0, 255], np.uint8),
    V.INT8: np.array([-128, 127], np.int8),
    V.UINT16: np.array([1, 65535], np.uint16),
    V.INT16: np.array([-32768, 7], np.int16),
    V.UINT32: np.array([3, 2**32 - 1], np.uint32),
    V.INT32: np.array([-5, 5], np.int32),
    V.FLOAT32: np.array([0.5, -np.inf], np.float32),
    V.BOOL: np.array([True, False]),
    V.UINT64: np.array([2**64 - 1], np.uint64),
    V.INT64: np.array([-(2**63)], np.int64),
    V.FLOAT64: np.array([1e300, np.nan], np.float64),
}
_SCALARS = {
    V.UINT8: 200, V.INT8: -3, V.UINT16: 60000, V.INT16: -300, V.UINT32: 4_000_000_000, V.INT32: -70000,
    V.FLOAT32: 1.5, V.BOOL: True, V.UINT64: 2**63, V.INT64: -(2**40), V.FLOAT64: 0.1,
}


def _metadata(w: GGUFWriter) -> None:
    w.add("general.architecture", "llama")
    for vtype, value in _SCALARS.items():
        w.add(f"s.{vtype.name}", value, vtype)
    for vtype, values in _NUMERIC.items():
        w.add(f"a.{vtype.name}", values, V.ARRAY)
    w.add("a.empty", [], V.ARRAY, V.UINT8)
    w.add("s.str", "héllo")
    w.add("s.bytes", b"\xff\xfe not utf-8")
    w.add("a.str", ["<s>", "", "tok", "\u2581x"])
    w.add("a.nested", [[1, 2], [], [3]])
    w.add("a.nested.str", [["a"], ["b", ""]], V.ARRAY, V.ARRAY)
    w.add("a.deep", [[[[1]]]])


def _tensor_bytes(type_: GGMLType, rows: int, row_elements: int, rng: np.random.Generator) -> bytes:
    traits = TYPE_TRAITS[type_]
    n = rows * row_elements // traits.block_size * traits.type_size
    if type_ in (GGMLType.F32, GGMLType.F16, GGMLType.F64, GGMLType.BF16):
        # Finite values so that round trips in the seed tests compare cleanly.
        values = rng.standard_normal(rows * row_elements).astype(np.float32)
        if type_ == GGMLType.BF16:
            return (values.view(np.uint32) >> 16).astype("<u2").tobytes()
        return values.astype({GGMLType.F32: "<f4", GGMLType.F16: "<f2", GGMLType.F64: "<f8"}[type_]).tobytes()
    data = rng.integers(0, 256, n, dtype=np.uint8)
    return data.tobytes()


def seed_files() -> dict[str, bytes]:
    """Name -> file bytes."""
    seeds: dict[str, bytes] = {}
    rng = np.random.default_rng(6)
    for version in (1, 2, 3):
        for byteorder in ("<", ">"):
            w = GGUFWriter(byteorder=byteorder, version=version)
            _metadata(w)
            w.add_tensor("f32", np.arange(8, dtype=np.float32).reshape(2, 4))
            w.add_tensor("i16", np.arange(6, dtype=np.int16).reshape(3, 2))
            order = "le" if byteorder == "<" else "be"
            seeds[f"meta-v{version}-{order}.gguf"] = w.to_bytes()
    for alignment in (1, 8, 64):
        w = GGUFWriter(alignment=alignment)
        w.add_tensor("a", np.ones(3, np.float32))
        w.add_tensor("b", np.ones((2, 2), np.float16))
        seeds[f"align-{alignment}.gguf"] = w.to_bytes()
    seeds["empty-v3.gguf"] = GGUFWriter().to_bytes()
    for type_, traits in TYPE_TRAITS.items():
        for byteorder in ("<", ">"):
            w = GGUFWriter(byteorder=byteorder)
            row = traits.block_size * (2 if traits.block_size == 1 else 1)
            raw = _tensor_bytes(type_, 2, row, rng)
            if byteorder == ">" and traits.block_size == 1:
                # Plain types are stored byte-swapped in big-endian files.
                raw = np.frombuffer(raw, f"<u{traits.type_size}").byteswap().tobytes()
            w.add_tensor("t", raw, type_, (2, row))
            w.add_tensor("t.empty", b"", type_, (0, traits.block_size))
            order = "le" if byteorder == "<" else "be"
            seeds[f"tensor-{type_.name}-{order}.gguf"] = w.to_bytes()
    return seeds


def write_seeds(directory) -> list:
    """Write every seed into ``directory`` (created if needed); return the paths."""
    import pathlib

    directory = pathlib.Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    paths = []
    for name, data in seed_files().items():
        path = directory / name
        path.write_bytes(data)
        paths.append(path)
    return paths
