"""Big-endian quantized data: every block type's multi-byte fields are swapped back before the
kernel runs, for files written big-endian by our writer and by gguf-py (and its endian converter)."""

from __future__ import annotations

import argparse
import builtins
import shutil
import struct

import numpy as np
import pytest

import fastgguf
from fastgguf import GGMLType as T, GGUFWriter, dequant
from fastgguf._byteswap import BLOCK_FIELDS, byteswap_blocks
from fastgguf.types import TYPE_TRAITS

from conftest import same_bits

gguf = pytest.importorskip("gguf")

QUANTIZED = [t for t in TYPE_TRAITS if TYPE_TRAITS[t].block_size > 1 and dequant.has_kernel(t)]
# gguf-py's type table agrees with ggml's for these (it has Q8_1 at 40 bytes).
GGUF_PY_TYPES = [t for t in QUANTIZED if t.name in gguf.GGMLQuantizationType.__members__
                 and gguf.GGML_QUANT_SIZES[gguf.GGMLQuantizationType[t.name]] == tuple(TYPE_TRAITS[t])]
# The types gguf-py's gguf_convert_endian.py knows how to swap.
CONVERTIBLE = [T.Q4_0, T.Q8_0, T.Q4_K, T.Q6_K, T.MXFP4, T.F32, T.F16, T.BF16]


def little_endian_blocks(qtype, shape, seed=0) -> bytes:
    traits = TYPE_TRAITS[qtype]
    n = int(np.prod(shape)) // traits.block_size * traits.type_size
    return np.random.default_rng(seed).integers(0, 256, n, dtype=np.uint8).tobytes()


def test_every_type_has_a_field_table():
    assert set(BLOCK_FIELDS) == set(TYPE_TRAITS)
    for qtype in QUANTIZED:
        assert dequant.has_byteswap(qtype), qtype.name


@pytest.mark.parametrize("qtype", QUANTIZED, ids=lambda t: t.name)
def test_our_big_endian_file_dequantizes_like_the_little_endian_one(open_bytes, qtype, monkeypatch):
    monkeypatch.setattr(dequant, "_MIN_ELEMENTS_PER_THREAD", 256)  # so that threads=3 really splits
    monkeypatch.setattr(dequant, "_SPLIT_GRANULE", 256)
    shape = (4, 2 * TYPE_TRAITS[qtype].block_size)
    raw = little_endian_blocks(qtype, shape, seed=int(qtype))
    little, big = GGUFWriter(), GGUFWriter(byteorder=">")
    little.add_tensor("t", raw, qtype, shape)
    big.add_tensor("t", raw, qtype, shape, byteorder="<")
    f_little, f_big = open_bytes(little), open_bytes(big)
    assert f_big.byteorder == ">"
    assert (f_big.tensors["t"].raw.tobytes() != raw) == bool(BLOCK_FIELDS[qtype])
    expected = f_little.dequantize("t")
    assert same_bits(f_big.dequantize("t"), expected)
    assert same_bits(f_big.dequantize("t", rows=[3, 0]), expected[[3, 0]])
    assert same_bits(f_big.dequantize("t", threads=3), expected)


def test_writer_round_trips_blocks_through_both_orders():
    raw = little_endian_blocks(T.Q8_K, (2, 256))
    assert byteswap_blocks(byteswap_blocks(raw, T.Q8_K), T.Q8_K) == raw
    with pytest.raises(ValueError, match="byteorder"):
        GGUFWriter().add_tensor("t", raw, T.Q8_K, (2, 256), byteorder="=")


def _fp16_be(value: float) -> bytes:
    return np.array([value], ">f2").tobytes()


def test_hand_built_big_endian_blocks():
    """Fields laid out by hand in big-endian order, independent of the field table."""
    qs = np.arange(-16, 16, dtype=np.int8)
    q8_0 = _fp16_be(0.5) + qs.tobytes()
    assert np.array_equal(fastgguf.dequantize(q8_0, T.Q8_0, byteorder=">"), 0.5 * qs)

    q8k_qs = np.arange(256, dtype=np.int64).astype(np.int8)
    bsums = q8k_qs.reshape(16, 16).sum(axis=1).astype(">i2")
    q8_k = struct.pack(">f", 0.25) + q8k_qs.tobytes() + bsums.tobytes()
    assert np.array_equal(fastgguf.dequantize(q8_k, T.Q8_K, byteorder=">"), 0.25 * q8k_qs)

    # Q5_0: the 32 fifth bits are one uint32; bits 0-15 go to elements 0-15. Read in the wrong
    # order, 0x0000FFFF would set the high bits of elements 16-31 instead.
    q5_0 = _fp16_be(1.0) + struct.pack(">I", 0x0000FFFF) + bytes(16)
    expected = np.where(np.arange(32) < 16, 0.0, -16.0)
    assert np.array_equal(fastgguf.dequantize(q5_0, T.Q5_0, byteorder=">"), expected)


def _write_with_gguf_py(path, types, endianess, blocks_for) -> dict:
    w = gguf.GGUFWriter(str(path), "llama", endianess=endianess)
    shapes = {}
    for qtype in types:
        traits = TYPE_TRAITS[qtype]
        shape = (3, 2 * traits.block_size)
        data = np.frombuffer(blocks_for(qtype, shape), np.uint8).reshape(shape[0], -1)
        if traits.block_size == 1:
            data = data.view(f"<{'f' if qtype != T.BF16 else 'u'}{traits.type_size}")
            if qtype == T.BF16:
                w.add_tensor(qtype.name, data, raw_dtype=gguf.GGMLQuantizationType.BF16)
            else:
                w.add_tensor(qtype.name, data)
        else:
            w.add_tensor(qtype.name, data, raw_dtype=gguf.GGMLQuantizationType[qtype.name])
        shapes[qtype.name] = shape
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    return shapes


def _finite_blocks(qtype, shape):
    if qtype in (T.F32, T.F16, T.BF16):
        values = np.random.default_rng(3).standard_normal(int(np.prod(shape))).astype(np.float32)
        return values.astype("<f2").tobytes() if qtype == T.F16 else (
            (values.view(np.uint32) >> 16).astype("<u2").tobytes() if qtype == T.BF16 else values.tobytes())
    return little_endian_blocks(qtype, shape, seed=int(qtype))


def test_gguf_py_endian_converter_output_reads_like_the_original(tmp_path, monkeypatch):
    from gguf.scripts.gguf_convert_endian import convert_byteorder

    little_path, big_path = tmp_path / "little.gguf", tmp_path / "big.gguf"
    _write_with_gguf_py(little_path, CONVERTIBLE, gguf.GGUFEndian.LITTLE, _finite_blocks)
    shutil.copy(little_path, big_path)
    monkeypatch.setattr(builtins, "input", lambda prompt="": "YES")
    reader = gguf.GGUFReader(str(big_path), "r+")
    convert_byteorder(reader, argparse.Namespace(order="big", dry_run=False))
    del reader
    with fastgguf.open(little_path) as little, fastgguf.open(big_path) as big:
        assert big.byteorder == ">"
        for name in little.tensors:
            assert little.tensors[name].shape == big.tensors[name].shape
            if BLOCK_FIELDS[T[name]]:
                assert little.tensors[name].raw.tobytes() != big.tensors[name].raw.tobytes()
            assert same_bits(big.dequantize(name), little.dequantize(name)), name


def test_gguf_py_big_endian_writer_with_swapped_blocks(tmp_path):
    # gguf-py writes raw uint8 blocks as given even in a big-endian file: hand it swapped ones.
    little_path, big_path = tmp_path / "little.gguf", tmp_path / "big.gguf"
    _write_with_gguf_py(little_path, GGUF_PY_TYPES, gguf.GGUFEndian.LITTLE, little_endian_blocks)
    _write_with_gguf_py(big_path, GGUF_PY_TYPES, gguf.GGUFEndian.BIG,
                        lambda qtype, shape: byteswap_blocks(little_endian_blocks(qtype, shape), qtype))
    with fastgguf.open(little_path) as little, fastgguf.open(big_path) as big:
        assert big.byteorder == ">" and len(big.tensors) == len(GGUF_PY_TYPES)
        for name in little.tensors:
            assert same_bits(big.dequantize(name), little.dequantize(name)), name
