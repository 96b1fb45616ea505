"""Split a model into shards and merge shards back, writing what llama.cpp's ``llama-gguf-split`` writes.

:func:`split_file` and :func:`merge_files` follow ``llama-gguf-split --split`` and ``--merge``:

* shard names ``PREFIX-00001-of-00003.gguf``;
* shard 1 carries every key of the input, the others none; every shard ends with ``split.no``
  (UINT16, 0-based), ``split.tensors.count`` (INT32, the total) and ``split.count`` (UINT16),
  in that order (the input's own ``split.*`` keys are dropped);
* tensors in the input's order; a new shard starts every ``max_tensors`` tensors, or when
  the tensors' data (each padded to 32 bytes) would pass ``max_size`` bytes;
* GGUF version 3, tensor infos with ggml's dimension count (trailing dimensions of 1 dropped:
  a ``(1, 64)`` tensor is written with one dimension), data aligned to 32 bytes;
* a merge writes shard 1's keys but ``split.count``, then ``split.count = 0`` (UINT16, so that
  the result is not taken for a shard), and every shard's tensors in order.

The bytes are the same as ``llama-gguf-split``'s for every input it handles correctly
(``tests/data/split_references.json`` holds its hashes). Where it writes a broken file,
these functions write a correct one instead: with a ``general.alignment`` other than 32,
the file carrying that key (shard 1, or the merged file) is laid out at that alignment,
and tensors with a zero dimension keep their dimensions.

Both stream: one piece of one tensor is in memory at a time. Outputs are written to hidden
temporary files and renamed into place only once all of them are complete; on an error
(or an interrupt) nothing is left behind.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any, NamedTuple

from ._rewrite import ByteCounter, PartialOutputs, copy_entry, copy_tensor, refuse_overwriting
from .errors import GGUFError
from .reader import GGUFFile, TensorInfo
from .split import SPLIT_COUNT, SPLIT_NO, SPLIT_TENSORS_COUNT, SplitModel, open_model
from .types import GGUFValueType
from .writer import GGUFWriter

__all__ = ["DEFAULT_MAX_TENSORS", "OutputFile", "merge_files", "parse_size", "shard_name", "split_file"]

DEFAULT_MAX_TENSORS = 128  # llama-gguf-split's default
_DEFAULT_ALIGNMENT = 32  # GGUF_DEFAULT_ALIGNMENT: the size limit counts tensors padded to it
_SPLIT_KEYS = (SPLIT_NO, SPLIT_COUNT, SPLIT_TENSORS_COUNT)
_MAX_SHARDS = 0xFFFF  # split.count is a UINT16


class OutputFile(NamedTuple):
    """One file :func:`split_file` or :func:`merge_files` writes (or would write, with ``dry_run``).

    Attributes
    ----------
    path : str
    tensors : tuple of str
        The names of its tensors, in order.
    size : int
        Its size in bytes.
    header_size : int
        Bytes before its data section (header, key/values, tensor infos, padding).
    data_size : int
        Its tensors' bytes without padding (``llama-gguf-split`` reports header plus this).
    """

    path: str
    tensors: tuple[str, ...]
    size: int
    header_size: int
    data_size: int


def shard_name(prefix: str | os.PathLike, number: int, count: int) -> str:
    """``PREFIX-000NN-of-000MM.gguf`` (``number`` 1-based), the name llama.cpp gives shards."""
    return f"{os.fspath(prefix)}-{number:05d}-of-{count:05d}.gguf"


def parse_size(text: str) -> int:
    """A size as ``llama-gguf-split --split-max-size`` takes it: ``500M`` or ``2G`` (10**6, 10**9 bytes).

    A plain number is a count of bytes (an extension: llama-gguf-split wants a unit).

    Raises
    ------
    ValueError
        For anything else, or a size that is not positive.
    """
    text = text.strip()
    scale = {"M": 1000**2, "G": 1000**3}.get(text[-1:].upper(), 1)
    digits = text[:-1] if scale != 1 else text
    if not digits.isdigit():
        raise ValueError(f"size {text!r}: expected a whole number with M (megabytes) or G (gigabytes), e.g. 2G")
    size = int(digits) * scale
    if size <= 0:
        raise ValueError(f"size {text!r} is not positive")
    return size


def split_file(path: str | os.PathLike | GGUFFile | SplitModel, out_prefix: str | os.PathLike, *,
               max_tensors: int | None = None, max_size: int | str | None = None,
               no_tensor_first_split: bool = False, dry_run: bool = False,
               progress: Callable[[int], Any] | None = None) -> list[OutputFile]:
    """Split a model into ``OUT_PREFIX-00001-of-0000N.gguf`` ... as ``llama-gguf-split --split`` does.

    Parameters
    ----------
    path : str, os.PathLike, GGUFFile or SplitModel
        The model: a file, any shard of a split model (its tensors are re-split), or an open one.
    out_prefix : str or os.PathLike
        The shards' names without ``-00001-of-0000N.gguf``.
    max_tensors : int, optional
        At most this many tensors per shard (default 128, llama-gguf-split's).
    max_size : int or str, optional
        At most this many bytes (or ``"2G"``, ``"500M"``: see :func:`parse_size`) of tensor data per shard (tensors padded to 32 bytes; the
        header comes on top). A tensor larger than this still gets a shard of its own,
        except as the first tensor of a shard that would then have none: that is an error,
        as it is for llama-gguf-split. Exclusive with ``max_tensors``.
    no_tensor_first_split : bool
        Shard 1 holds the metadata only; the tensors start in shard 2.
    dry_run : bool
        Plan only: return what would be written and write nothing.
    progress : callable, optional
        Called with each number of tensor bytes copied.

    Returns
    -------
    list of OutputFile
        The shards, in order.

    Raises
    ------
    ValueError
        Bad limits, a shard that would hold no tensors, more than 65535 shards, or an output
        that is the input.
    GGUFError
        A malformed input.
    """
    if isinstance(max_size, str):
        max_size = parse_size(max_size)
    if max_tensors is not None and max_size is not None:
        raise ValueError("give max_tensors or max_size, not both")
    if max_tensors is None and max_size is None:
        max_tensors = DEFAULT_MAX_TENSORS
    if max_tensors is not None and max_tensors < 1:
        raise ValueError(f"max_tensors must be at least 1, not {max_tensors}")
    if max_size is not None and max_size < 1:
        raise ValueError(f"max_size must be positive, not {max_size}")
    with _opened(path) as model:
        groups = _plan_split(model, max_tensors, max_size, no_tensor_first_split)
        count = len(groups)
        if count > _MAX_SHARDS:
            raise ValueError(f"{count} shards: split.count holds at most {_MAX_SHARDS}")
        metadata = model.metadata
        total = len(model.tensors)
        if total >= 2**31:
            raise ValueError(f"{total} tensors: split.tensors.count (INT32) cannot hold it")
        writers = []
        for number, names in enumerate(groups):
            alignment = model.alignment if number == 0 and "general.alignment" in metadata else _DEFAULT_ALIGNMENT
            writer = GGUFWriter(byteorder=model.byteorder, alignment=alignment)
            if number == 0:
                for key in metadata:
                    if key not in _SPLIT_KEYS:
                        copy_entry(metadata, key, writer)
            writer.add(SPLIT_NO, number, GGUFValueType.UINT16)
            writer.add(SPLIT_TENSORS_COUNT, total, GGUFValueType.INT32)
            writer.add(SPLIT_COUNT, count, GGUFValueType.UINT16)
            for name in names:
                _announce(writer, model.tensors[name])
            writers.append(writer)
        paths = [shard_name(out_prefix, number + 1, count) for number in range(count)]
        _refuse_input(model, paths)
        planned = [_describe(path_, writer, [model.tensors[n] for n in names])
                   for path_, writer, names in zip(paths, writers, groups)]
        if not dry_run:
            with PartialOutputs() as outputs:
                for path_, writer, names in zip(paths, writers, groups):
                    handle = outputs.create(path_)
                    _write(writer, handle, [model.tensors[n] for n in names], progress)
                outputs.commit()
    return planned


def merge_files(first_shard: str | os.PathLike | SplitModel, out_path: str | os.PathLike, *,
                dry_run: bool = False, progress: Callable[[int], Any] | None = None) -> OutputFile:
    """Merge a split model into one file as ``llama-gguf-split --merge`` does.

    Parameters
    ----------
    first_shard : str, os.PathLike or SplitModel
        Any shard of the model (every shard is found and checked as by :func:`fastgguf.open`);
        a one-shard model (``split.count`` 1) is accepted.
    out_path : str or os.PathLike
        The merged file; it must not exist yet (as for llama-gguf-split).
    dry_run : bool
        Plan only: return what would be written and write nothing.
    progress : callable, optional
        Called with each number of tensor bytes copied.

    Raises
    ------
    FileExistsError
        ``out_path`` exists.
    GGUFError
        The input is not a split model (no ``split.count``, or ``split.count`` 0: already
        merged), or its shards are missing or inconsistent.
    """
    out_path = os.fspath(out_path)
    with _opened(first_shard) as model:
        metadata = model.metadata
        if SPLIT_COUNT not in metadata:
            raise GGUFError(f"{model.path}: not a shard of a split model (no {SPLIT_COUNT} key)")
        if metadata[SPLIT_COUNT] == 0:
            raise GGUFError(f"{model.path}: {SPLIT_COUNT} is 0: a merged file, not a shard")
        if os.path.lexists(out_path):
            raise FileExistsError(f"{out_path}: the output exists; merge writes a new file")
        alignment = model.alignment if "general.alignment" in metadata else _DEFAULT_ALIGNMENT
        writer = GGUFWriter(byteorder=model.byteorder, alignment=alignment)
        for key in metadata:
            if key != SPLIT_COUNT:
                copy_entry(metadata, key, writer)
        writer.add(SPLIT_COUNT, 0, GGUFValueType.UINT16)
        tensors = list(model.tensors.values())
        for info in tensors:
            _announce(writer, info)
        planned = _describe(out_path, writer, tensors)
        if not dry_run:
            with PartialOutputs() as outputs:
                _write(writer, outputs.create(out_path), tensors, progress)
                outputs.commit()
    return planned


class _opened:
    """A model from a path (opened here, closed on exit) or an open model (left open)."""

    def __init__(self, source: str | os.PathLike | GGUFFile | SplitModel) -> None:
        self._own = not isinstance(source, (GGUFFile, SplitModel))
        self.model: GGUFFile | SplitModel = source if isinstance(source, (GGUFFile, SplitModel)) \
            else open_model(source)

    def __enter__(self) -> GGUFFile | SplitModel:
        return self.model

    def __exit__(self, *exc) -> None:
        if self._own:
            self.model.close()


def _plan_split(model: GGUFFile | SplitModel, max_tensors: int | None, max_size: int | None,
                no_tensor_first_split: bool) -> list[list[str]]:
    """Tensor names per shard, cut where llama-gguf-split cuts."""
    groups: list[list[str]] = [[]]
    if no_tensor_first_split:
        groups.append([])
    current = 0  # padded bytes in the current shard
    for index, (name, info) in enumerate(model.tensors.items()):
        padded = _pad(info.nbytes, _DEFAULT_ALIGNMENT)
        if max_size is not None:
            cut = current + padded > max_size
        else:
            assert max_tensors is not None
            cut = index > 0 and index % max_tensors == 0
        if cut:
            if not groups[-1]:
                raise ValueError(f"shard {len(groups)} would hold no tensors: tensor {name!r} takes {padded} bytes, "
                                 f"more than the limit of {max_size}")
            groups.append([])
            current = padded
        else:
            current += padded
        groups[-1].append(name)
    return groups


def _announce(writer: GGUFWriter, info: TensorInfo) -> None:
    writer.add_tensor_info(info.name, info.type, _ggml_shape(info.shape))


def _ggml_shape(shape: tuple[int, ...]) -> tuple[int, ...]:
    """The shape with ggml's dimension count: leading (numpy order) dimensions of 1 dropped, at least one left.

    ggml writes ``ggml_n_dims`` dimensions: up to the last of its ``ne`` above 1. A shape with a
    zero dimension is kept as it is (ggml's count would change its element count).
    """
    if 0 in shape:
        return shape
    start = 0
    while start < len(shape) - 1 and shape[start] == 1:
        start += 1
    return shape[start:] if shape else (1,)


def _describe(path: str, writer: GGUFWriter, tensors: list[TensorInfo]) -> OutputFile:
    counter = ByteCounter()
    _write_header(writer, counter)
    data = sum(info.nbytes for info in tensors)
    padded = sum(_pad(info.nbytes, writer.alignment) for info in tensors)
    return OutputFile(path, tuple(info.name for info in tensors), counter.size + padded, counter.size, data)


def _write_header(writer: GGUFWriter, handle) -> None:
    """The header; padded to the alignment even without tensors, as ggml writes it."""
    counter = ByteCounter()
    writer.write_header(_Tee(handle, counter))  # type: ignore[arg-type]
    handle.write(b"\0" * (_pad(counter.size, writer.alignment) - counter.size))


class _Tee:
    def __init__(self, *sinks) -> None:
        self._sinks = sinks

    def write(self, data) -> None:
        for sink in self._sinks:
            sink.write(data)


def _write(writer: GGUFWriter, handle, tensors: list[TensorInfo], progress) -> None:
    _write_header(writer, handle)
    for info in tensors:
        copy_tensor(writer, handle, info, progress)
    writer.end_stream()


def _refuse_input(model: GGUFFile | SplitModel, outputs: list[str]) -> None:
    inputs = model.paths if isinstance(model, SplitModel) else (model.path,)
    refuse_overwriting(outputs, inputs)


def _pad(n: int, alignment: int) -> int:
    return (n + alignment - 1) // alignment * alignment
