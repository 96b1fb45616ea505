"""Text output shared by the subcommands: sizes, counts, shapes, aligned tables, line-per-entry JSON."""

from __future__ import annotations

import json
from typing import IO, Any

__all__ = ["format_bytes", "format_count", "format_shape", "print_table", "write_json_lines"]


def format_bytes(n: int) -> str:
    """``1536`` → ``"1.50 KiB"``."""
    value = float(n)
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if abs(value) < 1024 or unit == "TiB":
            return f"{int(value)} B" if unit == "B" else f"{value:.2f} {unit}"
        value /= 1024
    raise AssertionError("unreachable")


def format_count(n: int) -> str:
    """``1_240_000_000`` → ``"1.24 B"`` (parameter counts)."""
    for scale, suffix in ((1e12, "T"), (1e9, "B"), (1e6, "M"), (1e3, "K")):
        if n >= scale:
            return f"{n / scale:.2f} {suffix}"
    return str(n)


def format_shape(shape: tuple[int, ...]) -> str:
    """numpy shape as ``4096x32000`` (no spaces, so columns split cleanly)."""
    return "x".join(str(d) for d in shape) if shape else "scalar"


def print_table(rows: list[list[str]], header: list[str], right: frozenset[int] | set[int] = frozenset(),
                file: IO[str] | None = None) -> None:
    """Print aligned columns; column indices in ``right`` are right-aligned."""
    widths = [max(len(str(row[i])) for row in [header, *rows]) for i in range(len(header))]

    def line(cells):
        parts = [str(cell).rjust(width) if i in right else str(cell).ljust(width)
                 for i, (cell, width) in enumerate(zip(cells, widths))]
        return "  ".join(parts).rstrip()

    print(line(header), file=file)
    for row in rows:
        print(line(row), file=file)


def write_json_lines(document: dict[str, Any], stream: IO[str]) -> None:
    """JSON with one metadata entry or tensor per line: greppable, and still one JSON document."""
    stream.write("{\n")
    items = list(document.items())
    for position, (key, value) in enumerate(items):
        comma = "," if position < len(items) - 1 else ""
        if isinstance(value, dict) and value:
            stream.write(f" {json.dumps(key)}: {{\n")
            entries = list(value.items())
            for i, (name, entry) in enumerate(entries):
                stream.write(f"  {json.dumps(name)}: {json.dumps(entry)}{',' if i < len(entries) - 1 else ''}\n")
            stream.write(f" }}{comma}\n")
        elif isinstance(value, list) and value and isinstance(value[0], dict):
            stream.write(f" {json.dumps(key)}: [\n")
            for i, entry in enumerate(value):
                stream.write(f"  {json.dumps(entry)}{',' if i < len(value) - 1 else ''}\n")
            stream.write(f" ]{comma}\n")
        else:
            stream.write(f" {json.dumps(key)}: {json.dumps(value)}{comma}\n")
    stream.write("}\n")
