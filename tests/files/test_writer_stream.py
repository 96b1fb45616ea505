"""GGUFWriter's streaming path: header first, tensor bytes appended in pieces, the same file as in one go."""

from __future__ import annotations

import io

import numpy as np
import pytest

from fastgguf import GGMLType, GGUFWriter


def tensors():
    rng = np.random.default_rng(0)
    return [("a", GGMLType.F32, rng.random((3, 5), dtype=np.float32)),
            ("empty", GGMLType.F32, np.zeros((0, 4), np.float32)),
            ("q", GGMLType.Q8_0, rng.integers(0, 256, (2, 2 * 34), dtype=np.uint8)),
            ("h", GGMLType.F16, rng.random(7).astype(np.float16))]


def shape_of(type_, array):
    return (array.shape[0], array.shape[1] // 34 * 32) if type_ == GGMLType.Q8_0 else array.shape


@pytest.mark.parametrize("byteorder", ["<", ">"])
@pytest.mark.parametrize("alignment", [32, 64])
def test_streamed_file_equals_the_one_written_at_once(byteorder, alignment):
    whole = GGUFWriter(byteorder=byteorder, alignment=alignment)
    streamed = GGUFWriter(byteorder=byteorder, alignment=alignment)
    for w in (whole, streamed):
        w.add("general.name", "x")
    for name, type_, array in tensors():
        whole.add_tensor(name, array.tobytes(), type_, shape_of(type_, array), byteorder="<")
        streamed.add_tensor_info(name, type_, shape_of(type_, array))
    handle = io.BytesIO()
    streamed.write_header(handle)
    for _, type_, array in tensors():
        raw = array.tobytes()
        block = 34 if type_ == GGMLType.Q8_0 else array.itemsize
        for start in range(0, len(raw), 2 * block):  # in pieces of two blocks
            streamed.write_tensor_data(handle, raw[start : start + 2 * block], byteorder="<")
    streamed.end_stream()
    assert handle.getvalue() == whole.to_bytes()


def test_streaming_errors(tmp_path):
    w = GGUFWriter()
    w.add_tensor_info("a", GGMLType.Q8_0, (1, 64))
    with pytest.raises(ValueError, match="write_header"):
        w.to_bytes()
    with pytest.raises(ValueError, match="write_header"):
        w.write(tmp_path / "x.gguf")
    handle = io.BytesIO()
    w.write_header(handle)
    with pytest.raises(ValueError, match="whole Q8_0 blocks"):
        w.write_tensor_data(handle, b"\0" * 35)
    with pytest.raises(ValueError, match="68 left"):
        w.write_tensor_data(handle, b"\0" * 102)
    w.write_tensor_data(handle, b"\0" * 34)
    with pytest.raises(ValueError, match="34 of its 68 bytes"):
        w.end_stream()
    w.write_tensor_data(handle, b"\0" * 34)
    w.end_stream()
    with pytest.raises(ValueError, match="every announced tensor"):
        w.write_tensor_data(handle, b"\0" * 34)
    with pytest.raises(ValueError, match="duplicate"):
        w.add_tensor_info("a", GGMLType.F32, (2,))
    with pytest.raises(ValueError, match="block size"):
        w.add_tensor_info("b", GGMLType.Q8_0, (2, 31))
    holding = GGUFWriter()
    holding.add_tensor("x", np.zeros(3, np.float32))
    with pytest.raises(ValueError, match="holds data"):
        holding.write_header(io.BytesIO())
