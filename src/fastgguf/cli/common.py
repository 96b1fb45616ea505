"""What the subcommands share: the one-line error, opening a model, choosing tensors, argument types."""

from __future__ import annotations

import argparse
import contextlib
import fnmatch
import sys
from collections.abc import Callable, Iterator
from typing import Any

from ..errors import GGUFError
from ..reader import GGUFFile, TensorInfo
from ..split import SplitModel, open_model
from ..types import GGMLType

__all__ = ["FILE_HELP", "CommandError", "open_input", "parse_types", "positive_int", "progress", "progress_bar",
           "row_length_of", "select_tensors", "shard_of"]

FILE_HELP = "a GGUF file, or any shard of a split model"


class CommandError(Exception):
    """A problem worth one line on stderr and exit status 1."""


def open_input(path: str) -> GGUFFile | SplitModel:
    """Open a file or split model; GGUF errors name the file."""
    try:
        return open_model(path)
    except GGUFError as error:
        if error.reason.startswith(path):
            raise
        raise GGUFError(f"{path}: {error.reason}", error.offset) from None


def select_tensors(model: GGUFFile | SplitModel, patterns: list[str] | None) -> list[TensorInfo]:
    """Tensors whose names match any of the glob ``patterns`` (all without patterns)."""
    tensors = list(model.tensors.values())
    if not patterns:
        return tensors
    chosen = [t for t in tensors if any(fnmatch.fnmatchcase(t.name, p) for p in patterns)]
    if not chosen:
        raise CommandError(f"no tensor matches {' or '.join(repr(p) for p in patterns)}")
    return chosen


def row_length_of(info: TensorInfo) -> int:
    """Elements per row (ggml's ne0)."""
    return info.shape[-1] if info.shape else 1


def shard_of(model: GGUFFile | SplitModel, name: str) -> int | None:
    """The 0-based shard holding tensor ``name`` in a split model; None for a single file."""
    return model.shard_of(name) if isinstance(model, SplitModel) else None


def positive_int(text: str) -> int:
    """argparse type: an integer >= 1."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not an integer") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"{value} is not positive")
    return value


def parse_types(names: list[str] | None) -> list[GGMLType]:
    """Type names from the command line (repeated and/or comma-separated, any case), in order, once each."""
    if not names:
        return []
    chosen = []
    for item in names:
        for name in item.replace(",", " ").split():
            try:
                chosen.append(GGMLType[name.upper()])
            except KeyError:
                raise CommandError(f"unknown tensor type {name!r}; known: "
                                   f"{', '.join(t.name for t in GGMLType)}") from None
    return list(dict.fromkeys(chosen))


def progress_bar(total: int, enabled: bool, desc: str, unit: str = "B") -> Any:
    """A tqdm bar on stderr when ``enabled``, stderr is a terminal and tqdm is installed; else None."""
    if enabled and sys.stderr.isatty():
        try:
            from tqdm import tqdm
        except ImportError:
            return None
        scaled = {"unit_scale": True, "unit_divisor": 1024} if unit == "B" else {"unit_scale": True}
        return tqdm(total=total, unit=unit, desc=desc, file=sys.stderr, **scaled)
    return None


@contextlib.contextmanager
def progress(total: int, enabled: bool, desc: str, unit: str = "B") -> Iterator[Callable[[int], Any] | None]:
    """``with progress(...) as update:`` — a bar's ``update`` (or None without a bar), closed on the way out."""
    bar = progress_bar(total, enabled, desc, unit)
    try:
        yield None if bar is None else bar.update
    finally:
        if bar is not None:
            bar.close()
