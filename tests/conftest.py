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
