"""Split models: ``NAME-00001-of-00003.gguf`` … opened as one model.

Every shard is a complete GGUF carrying ``split.no`` (0-based), ``split.count`` and
``split.tensors.count`` (the total over all shards); the general metadata lives in shard 0.
:class:`SplitModel` presents shard 0's metadata and all shards' tensors through the same
interface as :class:`~fastgguf.GGUFFile`. Each :class:`~fastgguf.TensorInfo` keeps its own
shard's map, so the merged tensor mapping needs nothing else.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from types import MappingProxyType

from ._model import _Model
from .errors import GGUFError
from .naming import _split_shard_name, shard_paths
from .reader import GGUFFile, Metadata, TensorInfo

__all__ = ["SplitModel", "open", "open_model"]

SPLIT_NO = "split.no"
SPLIT_COUNT = "split.count"
SPLIT_TENSORS_COUNT = "split.tensors.count"


class SplitModel(_Model):
    """All shards of a split GGUF model, presented as one file. Use :func:`fastgguf.open`.

    Attributes
    ----------
    path : str
        The first shard's path.
    paths : tuple of str
        Every shard's path, in order.
    shards : tuple of GGUFFile
        The open shards.
    version, byteorder, alignment, data_offset
        The first shard's.
    file_size : int
        Total size of all shards.
    metadata : Metadata
        The first shard's key/value section (where the model's metadata lives).
    tensors : Mapping[str, TensorInfo]
        Every shard's tensors, in shard order then file order. A tensor's ``offset`` is
        within its own shard; :meth:`shard_of` says which.
    """

    def __init__(self, shards: list[GGUFFile]) -> None:
        self.shards = tuple(shards)
        self.paths = tuple(shard.path for shard in shards)
        first = shards[0]
        self.path = first.path
        self.version = first.version
        self.byteorder = first.byteorder
        self.alignment = first.alignment
        self.data_offset = first.data_offset
        self.file_size = sum(shard.file_size for shard in shards)
        self._shard_index: dict[str, int] = {}
        for index, shard in enumerate(shards):
            for name in shard.tensors:
                if name in self._shard_index:
                    raise GGUFError(f"tensor {name!r} is in shard {self._shard_index[name] + 1} and in shard "
                                    f"{index + 1} ({shard.path})")
                self._shard_index[name] = index
        self._tensors = MappingProxyType({name: self.shards[index].tensors[name]
                                          for name, index in self._shard_index.items()})
        self._closed = False

    @property
    def metadata(self) -> Metadata:
        """The first shard's key/value section."""
        self._check_open()
        return self.shards[0].metadata

    @property
    def tensors(self) -> Mapping[str, TensorInfo]:
        """Tensor infos of all shards by name."""
        self._check_open()
        return self._tensors

    def shard_of(self, name: str) -> int:
        """The 0-based index of the shard holding tensor ``name``."""
        try:
            return self._shard_index[name]
        except KeyError:
            raise KeyError(f"no tensor named {name!r}") from None

    def _check_open(self) -> None:
        if self._closed:
            raise GGUFError("the file is closed")

    @property
    def closed(self) -> bool:
        return self._closed

    def close(self) -> None:
        """Close every shard (arrays already handed out stay valid)."""
        self._closed = True
        for shard in self.shards:
            shard.close()

    def __repr__(self) -> str:
        state = "closed" if self.closed else f"{len(self.metadata)} keys, {len(self.tensors)} tensors"
        return f"<SplitModel {self.path!r} {len(self.shards)} shards v{self.version} {state}>"


def open_model(path: str | os.PathLike) -> GGUFFile | SplitModel:
    """Open a GGUF file, or the whole split model when ``path`` is one of its shards.

    A file without ``split.count`` (or with ``split.count`` 1, or 0 as ``llama-gguf-split --merge``
    leaves in the merged file) is opened alone as a :class:`GGUFFile`. Otherwise the other
    shards are found by the ``-NNNNN-of-NNNNN`` part of the name and checked: every shard
    present, ``split.count`` the same in all, ``split.no`` matching the file name, tensor
    names unique, and the tensor total equal to ``split.tensors.count``.

    Raises
    ------
    GGUFError
        If a shard is missing, malformed, or inconsistent with the others.
    OSError
        If a file cannot be read.
    """
    path = os.fspath(path)
    opened: list[GGUFFile] = []
    try:
        given = GGUFFile(path)
        opened.append(given)
        name_parts = _split_shard_name(os.path.basename(path))
        if SPLIT_COUNT not in given.metadata:
            if name_parts is not None and name_parts[2] > 1:
                raise GGUFError(f"{path}: named as shard {name_parts[1]} of {name_parts[2]} but has no "
                                f"{SPLIT_COUNT} key (open it alone with fastgguf.GGUFFile)")
            return given
        count = _split_int(given, SPLIT_COUNT)
        if count == 0:  # what llama-gguf-split --merge leaves in the merged file: not a shard
            return given
        number = _split_int(given, SPLIT_NO)
        if count < 1 or not 0 <= number < count:
            raise GGUFError(f"{path}: {SPLIT_NO} = {number} with {SPLIT_COUNT} = {count}",
                            given.metadata.offset(SPLIT_NO))
        if count == 1:
            _check_tensor_total(given, [given])
            return given
        if name_parts is None:
            raise GGUFError(f"{path}: shard {number + 1} of {count}, but the file name does not end in "
                            f"-NNNNN-of-NNNNN.gguf, so the other shards cannot be found (open it alone with "
                            f"fastgguf.GGUFFile)")
        if (name_parts[1], name_parts[2]) != (number + 1, count):
            raise GGUFError(f"{path}: the name says shard {name_parts[1]} of {name_parts[2]}, the metadata says "
                            f"shard {number + 1} of {count}")
        shards: list[GGUFFile] = []
        for index, shard_path in enumerate(shard_paths(path) or ()):
            if index == number:
                shard = given
            else:
                if not os.path.exists(shard_path):
                    raise GGUFError(f"missing shard {index + 1} of {count}: {shard_path}")
                try:
                    shard = GGUFFile(shard_path)
                except GGUFError as error:
                    raise GGUFError(f"{shard_path}: {error.reason}", error.offset) from None
                opened.append(shard)
                _check_shard(shard, index, count)
            shards.append(shard)
        _check_tensor_total(shards[0], shards)
        return SplitModel(shards)
    except BaseException:
        for shard in opened:
            shard.close()
        raise


def open(path: str | os.PathLike) -> GGUFFile | SplitModel:  # noqa: A001 - mirrors builtins.open on purpose
    """Open a GGUF file read-only; a shard of a split model opens the whole model.

    Parameters
    ----------
    path : str or os.PathLike

    Returns
    -------
    GGUFFile or SplitModel
        Usable as a context manager. For a shard of a split model
        (``NAME-00001-of-00003.gguf``, with ``split.count`` > 1) a
        :class:`~fastgguf.SplitModel` over all shards, with the same interface.

    Raises
    ------
    GGUFError
        If the file is not a valid GGUF (the message names the byte offset), or a
        split model's shards are missing or inconsistent.
    OSError
        If the file cannot be opened.
    """
    return open_model(path)


def _split_int(shard: GGUFFile, key: str) -> int:
    metadata = shard.metadata
    if key not in metadata:
        raise GGUFError(f"{shard.path}: split model shard without {key}")
    value = metadata[key]
    if isinstance(value, bool) or not isinstance(value, int):
        raise GGUFError(f"{shard.path}: {key} is a {metadata.value_type(key).name}, not an integer",
                        metadata.offset(key))
    return value


def _check_shard(shard: GGUFFile, index: int, count: int) -> None:
    shard_count = _split_int(shard, SPLIT_COUNT)
    if shard_count != count:
        raise GGUFError(f"{shard.path}: {SPLIT_COUNT} is {shard_count}, the first shard says {count}",
                        shard.metadata.offset(SPLIT_COUNT))
    number = _split_int(shard, SPLIT_NO)
    if number != index:
        raise GGUFError(f"{shard.path}: {SPLIT_NO} is {number}, expected {index} for shard {index + 1}",
                        shard.metadata.offset(SPLIT_NO))


def _check_tensor_total(first: GGUFFile, shards: list[GGUFFile]) -> None:
    expected = _split_int(first, SPLIT_TENSORS_COUNT)
    total = sum(len(shard.tensors) for shard in shards)
    if total != expected:
        raise GGUFError(f"{first.path}: {SPLIT_TENSORS_COUNT} is {expected} but the {len(shards)} shard(s) hold "
                        f"{total} tensors", first.metadata.offset(SPLIT_TENSORS_COUNT))
    for shard in shards[1:]:
        if SPLIT_TENSORS_COUNT in shard.metadata and _split_int(shard, SPLIT_TENSORS_COUNT) != expected:
            raise GGUFError(f"{shard.path}: {SPLIT_TENSORS_COUNT} is {shard.metadata[SPLIT_TENSORS_COUNT]}, "
                            f"the first shard says {expected}", shard.metadata.offset(SPLIT_TENSORS_COUNT))
