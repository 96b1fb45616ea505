"""Dequantized tensors to ``.safetensors``, ``.npz`` or a folder of ``.npy`` files, streamed row block by row block.

:func:`export_model` is what ``fastgguf convert`` runs: memory stays near one row block
(a few MiB) whatever the model's size, because each tensor is dequantized in blocks of whole
rows (:class:`fastgguf.dequant.RowBlocks`) that are written out before the next is made. The
writers (:class:`SafetensorsWriter`, :class:`NpzWriter`, :class:`NpyFolderWriter`) take
tensors the same way, from any source of row blocks.

Examples
--------
>>> import fastgguf
>>> with fastgguf.open("model.gguf") as model:                      # doctest: +SKIP
...     fastgguf.export_model(model, "model.safetensors", dtype="bfloat16")
"""

from __future__ import annotations

import json
import math
import os
import zipfile
from collections.abc import Callable, Iterable, Mapping
from typing import IO, Any
from urllib.parse import quote

import numpy as np

from .dequant import RowBlocks, has_kernel, resolve_dtype
from .reader import GGUFFile, TensorInfo
from .split import SplitModel

__all__ = ["OUTPUT_DTYPES", "NpyFolderWriter", "NpzWriter", "SafetensorsWriter", "TensorWriter", "export_model",
           "npy_filename", "open_writer", "output_name"]

#: Result types :func:`export_model` and the writers accept (numpy names).
OUTPUT_DTYPES = ("float32", "float16", "bfloat16", "float64")
_SAFETENSORS_DTYPES = {"float32": "F32", "float16": "F16", "bfloat16": "BF16", "float64": "F64"}


class TensorWriter:
    """Writes tensors to ``path`` one row block at a time.

    The calls, in order: :meth:`begin` once with every tensor's name, shape and dtype; then for
    each tensor in that order :meth:`start_tensor`, :meth:`write` for its blocks of elements in
    row-major order, :meth:`end_tensor`; finally :meth:`finish`. On any failure call
    :meth:`abort`, which removes a partial file. Single-file outputs are written to
    ``path + ".part"`` and renamed on :meth:`finish`, so ``path`` never holds half a file.

    Parameters
    ----------
    path : str or os.PathLike
        Where to write.
    """

    def __init__(self, path: str | os.PathLike) -> None:
        self.path = os.fspath(path)

    def begin(self, tensors: list[tuple[str, tuple[int, ...], np.dtype]], metadata: Mapping[str, str]) -> None:
        """Start the output: every tensor as ``(name, shape, dtype)``, and string metadata (where the format has any)."""

    def start_tensor(self, name: str, shape: tuple[int, ...], dtype: np.dtype) -> None:
        """The next tensor, as announced to :meth:`begin`, starts."""

    def write(self, block: np.ndarray) -> None:
        """The current tensor's next elements (any shape; written in C order)."""
        raise NotImplementedError

    def end_tensor(self) -> None:
        """The current tensor is complete."""

    def finish(self) -> None:
        """Every tensor is written: complete the output."""

    def abort(self) -> None:
        """Give up: close and remove what was written so far (a folder's finished files stay)."""


class SafetensorsWriter(TensorWriter):
    """safetensors: an 8-byte header length, a JSON header, then the tensors' bytes back to back.

    Written directly (the format is that simple) because the ``safetensors`` package's writers
    take every tensor at once, which would defeat streaming; its reader checks this output in
    the tests.
    """

    _handle: IO[bytes] | None = None

    def begin(self, tensors, metadata) -> None:
        header: dict[str, Any] = {"__metadata__": dict(metadata)}
        offset = 0
        for name, shape, dtype in tensors:
            if name == "__metadata__":
                raise ValueError("a tensor named '__metadata__' cannot be stored in safetensors")
            nbytes = math.prod(shape) * dtype.itemsize
            header[name] = {"dtype": _SAFETENSORS_DTYPES[_dtype_name(dtype)], "shape": list(shape),
                            "data_offsets": [offset, offset + nbytes]}
            offset += nbytes
        encoded = json.dumps(header, separators=(",", ":")).encode()
        encoded += b" " * (-len(encoded) % 8)  # data starts 8-byte aligned
        self._partial = self.path + ".part"
        self._handle = open(self._partial, "wb")  # noqa: SIM115 - closed in finish/abort
        self._handle.write(len(encoded).to_bytes(8, "little") + encoded)

    def write(self, block) -> None:
        assert self._handle is not None, "begin() first"
        self._handle.write(_little_endian(block))

    def finish(self) -> None:
        assert self._handle is not None, "begin() first"
        self._handle.close()
        os.replace(self._partial, self.path)

    def abort(self) -> None:
        if self._handle is not None:
            self._handle.close()
            os.unlink(self._partial)


class NpzWriter(TensorWriter):
    """A zip of ``<name>.npy`` members (what :func:`numpy.savez` writes), streamed member by member."""

    _zip: zipfile.ZipFile | None = None
    _member: IO[bytes] | None = None

    def begin(self, tensors, metadata) -> None:
        self._partial = self.path + ".part"
        self._zip = zipfile.ZipFile(self._partial, "w", compression=zipfile.ZIP_STORED, allowZip64=True)

    def start_tensor(self, name, shape, dtype) -> None:
        assert self._zip is not None, "begin() first"
        self._member = self._zip.open(name + ".npy", "w", force_zip64=True)
        _write_npy_header(self._member, shape, dtype)

    def write(self, block) -> None:
        assert self._member is not None, "start_tensor() first"
        self._member.write(_little_endian(block))

    def end_tensor(self) -> None:
        assert self._member is not None, "start_tensor() first"
        self._member.close()
        self._member = None

    def finish(self) -> None:
        assert self._zip is not None, "begin() first"
        self._zip.close()
        os.replace(self._partial, self.path)

    def abort(self) -> None:
        if self._zip is not None:
            if self._member is not None:
                self._member.close()
            self._zip.close()
            os.unlink(self._partial)


class NpyFolderWriter(TensorWriter):
    """A folder with one ``.npy`` file per tensor, named by :func:`npy_filename`.

    Raises
    ------
    ValueError
        If ``path`` exists and is not a folder.
    """

    _handle: IO[bytes] | None = None

    def __init__(self, path: str | os.PathLike) -> None:
        super().__init__(path)
        if os.path.exists(self.path) and not os.path.isdir(self.path):
            raise ValueError(f"{self.path} exists and is not a folder; name the output *.safetensors, *.npz "
                             f"or a folder")

    def begin(self, tensors, metadata) -> None:
        os.makedirs(self.path, exist_ok=True)

    def start_tensor(self, name, shape, dtype) -> None:
        self._handle = open(os.path.join(self.path, npy_filename(name)), "wb")  # noqa: SIM115
        _write_npy_header(self._handle, shape, dtype)

    def write(self, block) -> None:
        assert self._handle is not None, "start_tensor() first"
        self._handle.write(_little_endian(block))

    def end_tensor(self) -> None:
        assert self._handle is not None, "start_tensor() first"
        self._handle.close()
        self._handle = None

    def abort(self) -> None:
        if self._handle is not None:
            self._handle.close()


def open_writer(path: str | os.PathLike) -> TensorWriter:
    """The writer for ``path``: ``*.safetensors``, ``*.npz``, otherwise a folder of ``.npy`` files.

    Raises
    ------
    ValueError
        If a folder is meant but ``path`` is an existing file.
    """
    path = os.fspath(path)
    lower = path.lower()
    if lower.endswith(".safetensors"):
        return SafetensorsWriter(path)
    if lower.endswith(".npz"):
        return NpzWriter(path)
    return NpyFolderWriter(path)


def output_name(name: str) -> str:
    """The name tensor ``name`` is stored under: bytes that are not valid UTF-8 become ``\\xNN`` text.

    (GGUF names are decoded with ``surrogateescape``; neither JSON headers nor zip members can hold that.)
    """
    return name.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")


def npy_filename(name: str) -> str:
    """The file tensor ``name`` is written to in a folder of ``.npy`` files (percent-quoted: never a path)."""
    return quote(output_name(name), safe="._-+,=@") + ".npy"


def export_model(model: GGUFFile | SplitModel | str | os.PathLike, path: str | os.PathLike, *,
                 tensors: Iterable[str | TensorInfo] | None = None, dtype: Any = "float32",
                 threads: int | None = None, progress: Callable[[int], object] | None = None) -> list[str]:
    """Dequantize a model's tensors and write them to ``path``, one row block at a time.

    Parameters
    ----------
    model : GGUFFile, SplitModel, str or os.PathLike
        An open model, or the path of a GGUF file (or any shard of a split model) to open.
    path : str or os.PathLike
        ``NAME.safetensors``, ``NAME.npz``, or otherwise a folder for ``<tensor>.npy`` files
        (see :func:`npy_filename`). Single files appear complete or not at all.
    tensors : iterable of str or TensorInfo, optional
        Which tensors, in this order (default: all, in file order).
    dtype : {"float32", "float16", "bfloat16", "float64"} or numpy dtype
        Stored type; values are cast as numpy's ``astype`` would. bfloat16 needs ``ml_dtypes``.
    threads : int, optional
        Dequantization threads, as for :func:`fastgguf.dequantize`.
    progress : callable, optional
        Called with the number of output bytes after each block is written.

    Returns
    -------
    list of str
        The names the tensors were stored under (:func:`output_name`), in order.

    Raises
    ------
    ValueError
        Unsupported ``dtype``; tensor names that collide once escaped; a tensor named
        ``__metadata__`` in safetensors; a folder output that is an existing file.
    NotImplementedError
        A tensor's type has no dequantization kernel (nothing is written).
    GGUFError
        The model's data is malformed.
    ImportError
        bfloat16 without ``ml_dtypes``.
    """
    if not isinstance(model, (GGUFFile, SplitModel)):
        from .split import open_model

        with open_model(model) as opened:
            return export_model(opened, path, tensors=tensors, dtype=dtype, threads=threads, progress=progress)
    target = resolve_dtype(dtype)
    if _dtype_name(target) not in OUTPUT_DTYPES:
        raise ValueError(f"dtype must be one of {', '.join(OUTPUT_DTYPES)}, not {target}")
    chosen = list(model.tensors.values()) if tensors is None else \
        [item if isinstance(item, TensorInfo) else model.tensors[item] for item in tensors]
    unsupported = sorted({t.type.name for t in chosen if not has_kernel(t.type)})
    if unsupported:
        raise NotImplementedError(f"no dequantization kernel for {', '.join(unsupported)} in this build")
    names = [output_name(info.name) for info in chosen]
    if len(set(names)) < len(names):
        raise ValueError("tensor names that are not valid UTF-8 collide once escaped")
    writer = open_writer(path)
    from . import __version__

    metadata = {"source": f"fastgguf {__version__}", "gguf": os.path.basename(model.path)}
    for key in ("general.architecture", "general.name"):
        if isinstance(model.metadata.get(key), str):
            metadata[key] = output_name(model.metadata[key])
    writer.begin([(name, info.shape, target) for name, info in zip(names, chosen)], metadata)
    # One set of buffers for every tensor (a steady heap), of a fixed size whatever the thread count:
    # the peak memory of a conversion stays near one tensor's bytes at most.
    blocks = RowBlocks(target, threads=threads, block_elements=RowBlocks.BASE_BLOCK_ELEMENTS)
    try:
        for name, info in zip(names, chosen):
            writer.start_tensor(name, info.shape, target)
            info._layout.check_intact()
            for _, block in blocks.iter(info.raw, info.type, info.shape, byteorder=info.byteorder):
                writer.write(block)
                if progress is not None:
                    progress(block.nbytes)
            writer.end_tensor()
            info._release_pages()  # this tensor's mapped pages need not stay in our RSS
        writer.finish()
    except BaseException:
        writer.abort()
        raise
    return names


def _dtype_name(dtype: np.dtype) -> str:
    return "bfloat16" if dtype.name == "bfloat16" else np.dtype(dtype).name


def _little_endian(block: np.ndarray) -> memoryview:
    """The block's bytes, little-endian, as flat bytes (buffer exports refuse float16/bfloat16 arrays)."""
    block = np.ascontiguousarray(block.astype(block.dtype.newbyteorder("<"), copy=False))
    return block.reshape(-1).view(np.uint8).data


def _write_npy_header(handle: IO[bytes], shape: tuple[int, ...], dtype: np.dtype) -> None:
    descr = np.lib.format.dtype_to_descr(dtype.newbyteorder("<"))
    np.lib.format.write_array_header_2_0(handle, {"descr": descr, "fortran_order": False, "shape": tuple(shape)})
