"""GGUF file names: ``<BaseName>-<SizeLabel>-<FineTune>-<Version>-<Encoding>-<Type>-<Shard>.gguf``.

The convention (ggml's ``docs/gguf.md``) makes every part but the base name optional, so a
name is read from the right, where the parts are recognisable by shape: the shard
(``00003-of-00009``), the type (``LoRA`` or ``vocab``), the version (``v1.0``) and the
encoding that follows it (or, without a version, a token shaped like a ggml type such as
``Q4_K_M`` or ``BF16``); then, from the left, the first token after the base name that
looks like a size label (``7B``, ``8x7B``, ``30B-A3B``) separates the base name from the
fine-tune.
"""

from __future__ import annotations

import os
import re
from typing import NamedTuple

__all__ = ["GGUFFilename", "parse_filename"]

_SHARD_RE = re.compile(r"^(?P<prefix>.+)-(?P<no>\d{5})-of-(?P<count>\d{5})\.gguf$", re.IGNORECASE)
_VERSION_RE = re.compile(r"[vV]\d+(?:\.\d+)*")
# Without a version the encoding must look like a ggml type name (Q4_K_M, IQ2_XXS, TQ1_0, BF16, F32, MXFP4 ...).
_ENCODING_RE = re.compile(r"(?:[IT]?Q\d+(?:_[A-Z0-9]+)*|B?F(?:P)?(?:8|16|32|64)|MXFP4(?:_[A-Z0-9]+)*|NVFP4)",
                          re.IGNORECASE)
_SIZE_RE = re.compile(r"(?:\d+x)?(?:\d+\.)?\d+[A-Za-z]")
_SIZE_SUFFIX_RE = re.compile(r"[A-Za-z]+(?:\d+\.)?\d+[A-Za-z]+")  # the "A3B" of "30B-A3B" (active parameters)
_TYPES = {"lora": "LoRA", "vocab": "vocab"}


class GGUFFilename(NamedTuple):
    """The parts of a GGUF file name; absent parts are None.

    Attributes
    ----------
    base_name : str
        The model's name, e.g. ``"Mixtral"`` or ``"Llama-3.2"``.
    size_label : str or None
        Parameter count class, e.g. ``"7B"``, ``"8x7B"``, ``"30B-A3B"``.
    fine_tune : str or None
        e.g. ``"Instruct"``.
    version : str or None
        e.g. ``"v0.1"``.
    encoding : str or None
        The weights' encoding, e.g. ``"Q4_K_M"``.
    type : str or None
        ``"LoRA"`` or ``"vocab"``; None for a model.
    shard : int or None
        1-based shard number of a split model.
    shard_count : int or None
        Number of shards of a split model.
    """

    base_name: str
    size_label: str | None = None
    fine_tune: str | None = None
    version: str | None = None
    encoding: str | None = None
    type: str | None = None
    shard: int | None = None
    shard_count: int | None = None

    @property
    def filename(self) -> str:
        """The name these parts spell, ``.gguf`` included."""
        parts = [self.base_name, self.size_label, self.fine_tune, self.version, self.encoding, self.type]
        if self.shard is not None:
            parts.append(f"{self.shard:05d}-of-{self.shard_count:05d}")
        return "-".join(part for part in parts if part) + ".gguf"

    def __str__(self) -> str:
        return self.filename


def parse_filename(name: str | os.PathLike) -> GGUFFilename:
    """Split a GGUF file name into the parts of llama.cpp's naming convention.

    Parameters
    ----------
    name : str or os.PathLike
        A file name or path (directories are ignored). The ``.gguf`` suffix is optional.

    Returns
    -------
    GGUFFilename
        A named tuple; parts the name does not have are None. A name that follows no
        convention at all comes back whole as ``base_name``.

    Examples
    --------
    >>> parse_filename("Mixtral-8x7B-v0.1-Q4_K_M.gguf")
    GGUFFilename(base_name='Mixtral', size_label='8x7B', fine_tune=None, version='v0.1', encoding='Q4_K_M', type=None, shard=None, shard_count=None)
    >>> parse_filename("Grok-100B-v1.0-Q4_0-00003-of-00009.gguf").shard
    3
    """
    stem = os.path.basename(os.fspath(name))
    shard = shard_count = None
    parts = _split_shard_name(stem)
    if parts is not None:
        stem, shard, shard_count = parts
    elif stem.lower().endswith(".gguf"):
        stem = stem[:-len(".gguf")]

    tokens = stem.split("-")
    kind = None
    if len(tokens) > 1 and tokens[-1].lower() in _TYPES:
        kind = _TYPES[tokens.pop().lower()]

    # The size label comes first from the left; the version is the last version-shaped token after it
    # (so a base name such as "Model-v2" keeps its "v2").
    size_at = next((i for i in range(1, len(tokens)) if _SIZE_RE.fullmatch(tokens[i])), None)
    version = encoding = None
    first_after_size = 1 if size_at is None else size_at + 1
    version_at = next((i for i in range(len(tokens) - 1, first_after_size - 1, -1)
                       if _VERSION_RE.fullmatch(tokens[i])), None)
    if version_at is not None:
        version = tokens[version_at]
        encoding = "-".join(tokens[version_at + 1:]) or None
        del tokens[version_at:]
    elif len(tokens) > first_after_size and _ENCODING_RE.fullmatch(tokens[-1]):
        encoding = tokens.pop()

    size_label = fine_tune = None
    if size_at is not None:
        size_end = size_at + 1
        if size_end < len(tokens) and _SIZE_SUFFIX_RE.fullmatch(tokens[size_end]):
            size_end += 1
        size_label = "-".join(tokens[size_at:size_end])
        fine_tune = "-".join(tokens[size_end:]) or None
        del tokens[size_at:]
    return GGUFFilename("-".join(tokens), size_label, fine_tune, version, encoding, kind, shard, shard_count)


def _split_shard_name(name: str) -> tuple[str, int, int] | None:
    """``("prefix", no, count)`` for ``prefix-000NN-of-000MM.gguf`` (no is 1-based); None otherwise."""
    match = _SHARD_RE.match(name)
    if match is None:
        return None
    return match["prefix"], int(match["no"]), int(match["count"])


def shard_paths(path: str | os.PathLike) -> list[str] | None:
    """All shard paths of the split model ``path`` belongs to, in order; None if not a shard name."""
    path = os.fspath(path)
    directory, name = os.path.split(path)
    parts = _split_shard_name(name)
    if parts is None:
        return None
    prefix, _, count = parts
    suffix = name[-len(".gguf"):]  # keep the suffix's case
    return [os.path.join(directory, f"{prefix}-{no:05d}-of-{count:05d}{suffix}") for no in range(1, count + 1)]
