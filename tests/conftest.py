"""Shared fixtures: write GGUF bytes to a temporary file and open it."""

from __future__ import annotations

import pytest

import fastgguf


@pytest.fixture
def gguf_path(tmp_path):
    """Return a function that writes ``data`` (bytes or a GGUFWriter) to a fresh file and returns its path."""
    counter = iter(range(1_000_000))

    def write(data) -> str:
        if isinstance(data, fastgguf.GGUFWriter):
            data = data.to_bytes()
        path = tmp_path / f"file{next(counter)}.gguf"
        path.write_bytes(data)
        return str(path)

    return write


@pytest.fixture
def open_bytes(gguf_path):
    """Return a function that opens GGUF bytes (or a GGUFWriter) with fastgguf.open."""
    opened = []

    def open_(data) -> fastgguf.GGUFFile:
        f = fastgguf.open(gguf_path(data))
        opened.append(f)
        return f

    yield open_
    for f in opened:
        f.close()


@pytest.fixture(scope="session")
def gguf_py_write():
    """Return a function that writes out a ``gguf.GGUFWriter`` (header, key/values, tensors) quietly."""
    import logging

    def write(writer) -> None:
        logging.disable(logging.INFO)  # gguf-py logs its plan
        try:
            writer.write_header_to_file()
            writer.write_kv_data_to_file()
            writer.write_tensors_to_file()
            writer.close()
        finally:
            logging.disable(logging.NOTSET)

    return write
