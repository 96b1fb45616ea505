"""What the file rewriters (split, merge, edit-metadata) share.

Copying a key/value entry with its exact type, streaming a tensor's bytes through a
:class:`~fastgguf.GGUFWriter` without holding them, and writing outputs atomically: every
output goes to a hidden temporary file beside it, and only when all of them are complete are
they renamed into place; on any error the temporary files are removed.
"""

from __future__ import annotations

import mmap
import os
import secrets
from collections.abc import Callable, Iterable
from typing import Any, BinaryIO

from .reader import ArrayOfArrays, Metadata, StringArray, TensorInfo
from .types import TYPE_TRAITS, GGUFValueType
from .writer import GGUFWriter

__all__ = ["PartialOutputs", "copy_entry", "copy_tensor", "create_beside", "refuse_overwriting", "release_pages"]

_COPY_BYTES = 16 << 20  # a tensor is copied in pieces of about this size


def copy_entry(metadata: Metadata, key: str, writer: GGUFWriter) -> None:
    """Add ``metadata``'s entry ``key`` to ``writer`` with its exact type (strings byte for byte)."""
    vtype = metadata.value_type(key)
    if vtype == GGUFValueType.STRING:
        writer.add(key, metadata.raw(key), vtype)
    elif vtype == GGUFValueType.ARRAY:
        etype = metadata.element_type(key)
        writer.add(key, array_items(metadata[key]), vtype, etype)
    else:
        writer.add(key, metadata[key], vtype)


def array_items(value: Any) -> Any:
    """An array value as the writer takes it: numeric arrays as they are, strings as their exact bytes."""
    if isinstance(value, StringArray):
        return [value.raw(i) for i in range(len(value))]
    if isinstance(value, ArrayOfArrays):
        return [array_items(value[i]) for i in range(len(value))]
    return value


def copy_tensor(writer: GGUFWriter, handle: BinaryIO, info: TensorInfo,
                progress: Callable[[int], Any] | None = None) -> None:
    """Append ``info``'s bytes, as they are in its file, to a streaming ``writer`` in pieces.

    The input pages of each piece are released once written, so the resident set holds one
    piece, not the model.
    """
    info._layout.check_intact()
    raw = info.raw
    type_size = TYPE_TRAITS[info.type].type_size
    step = max(type_size, _COPY_BYTES // type_size * type_size)
    for start in range(0, raw.size, step):
        chunk = raw[start:start + step]
        writer.write_tensor_data(handle, chunk)
        release_pages(info, start, start + chunk.size)
        if progress is not None:
            progress(chunk.size)


def release_pages(info: TensorInfo, start: int, end: int) -> None:
    """Let the OS drop the mapped input pages of bytes ``start:end`` of a tensor (re-read if touched again).

    Done after each block, so that the resident set holds one block of a large tensor's input, not all of it.
    """
    mapped = info._layout.mmap
    if end <= start or not isinstance(mapped, mmap.mmap) or mapped.closed or not hasattr(mmap, "MADV_DONTNEED"):
        return
    first = (info.offset + start) // mmap.PAGESIZE * mmap.PAGESIZE
    mapped.madvise(mmap.MADV_DONTNEED, first, info.offset + end - first)


def refuse_overwriting(outputs: Iterable[str], inputs: Iterable[str]) -> None:
    """ValueError if an output path is a folder or one of the input files."""
    inputs = list(inputs)
    for out in outputs:
        if os.path.isdir(out):
            raise ValueError(f"{out} is a folder")
        for path in inputs:
            same = os.path.realpath(path) == os.path.realpath(out)
            if not same and os.path.exists(out):
                same = os.path.samefile(path, out)
            if same:
                raise ValueError(f"the output {out} is the input file {path}; write to another path")


def create_beside(path: str) -> tuple[str, BinaryIO]:
    """A new file in ``path``'s folder with a unique hidden name ``.NAME.XXXXXXXX.part``: (its path, binary handle)."""
    folder, base = os.path.split(os.path.abspath(path))
    while True:
        partial = os.path.join(folder, f".{base}.{secrets.token_hex(4)}.part")
        try:
            fd = os.open(partial, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_BINARY", 0), 0o666)
        except FileExistsError:
            continue
        return partial, os.fdopen(fd, "wb")


class PartialOutputs:
    """Temporary files that become the outputs together.

    ``with PartialOutputs() as outputs: handle = outputs.create(path) ...; outputs.commit()``:
    :meth:`create` opens a hidden ``.NAME.XXXXXXXX.part`` beside ``path``; :meth:`commit`
    closes them and renames each onto its path. Leaving the block without committing (an
    error, an interrupt) closes and deletes every temporary file, and no output is touched.
    """

    def __init__(self) -> None:
        self._files: list[tuple[str, str, BinaryIO]] = []  # (partial, final path, handle)
        self._committed = False

    def create(self, path: str) -> BinaryIO:
        partial, handle = create_beside(path)
        self._files.append((partial, path, handle))
        return handle

    def commit(self) -> None:
        for _, _, handle in self._files:
            handle.close()
        for partial, path, _ in self._files:
            os.replace(partial, path)
        self._committed = True

    def __enter__(self) -> PartialOutputs:
        return self

    def __exit__(self, exc_type, exc, tb) -> None:
        if self._committed:
            return
        for partial, _, handle in self._files:
            handle.close()
            try:
                os.unlink(partial)
            except FileNotFoundError:
                pass


class ByteCounter:
    """A write-only sink that counts bytes (the size of a header without writing it)."""

    def __init__(self) -> None:
        self.size = 0

    def write(self, data) -> int:
        n = len(memoryview(data).cast("B"))
        self.size += n
        return n
