"""The ``fastgguf`` command: one subcommand group per module of this package.

Every subcommand accepts a single GGUF file or any shard of a split model. Errors in the
input (missing file, not a GGUF, corrupt header, inconsistent shards) print one line,
``fastgguf: error: ...``, and exit with status 1; usage errors exit with status 2.

Adding a subcommand
-------------------
Write ``fastgguf/cli/<name>.py`` defining ``ORDER`` (an int: where its commands appear in
``--help``, existing ones use 10, 20, ...) and ``register(commands)``, which adds its
parsers to the ``argparse`` subparsers object ``commands`` and sets ``run=<function(args)>``
on each with ``set_defaults``. Helpers shared by commands live in :mod:`fastgguf.cli.common`
(errors, opening files, argument types) and :mod:`fastgguf.cli.formatting` (tables, sizes).
Modules whose name starts with ``_`` and modules without ``register`` are not commands.
"""

from __future__ import annotations

import argparse
import codecs
import importlib
import os
import pkgutil
import sys

from .. import __version__
from .common import CommandError
from .convert import npy_filename
from .formatting import format_bytes
from .inspect import ARRAY_PREVIEW

__all__ = ["ARRAY_PREVIEW", "build_parser", "format_bytes", "main", "npy_filename"]


def _command_modules() -> list:
    """The modules of this package that define subcommands, in ``ORDER``."""
    modules = []
    for found in pkgutil.iter_modules(__path__):
        if found.name.startswith("_"):
            continue
        module = importlib.import_module(f"{__name__}.{found.name}")
        if callable(getattr(module, "register", None)):
            modules.append(module)
    return sorted(modules, key=lambda module: (getattr(module, "ORDER", 1000), module.__name__))


def build_parser() -> argparse.ArgumentParser:
    """The ``fastgguf`` argument parser with every subcommand of this package."""
    parser = argparse.ArgumentParser(
        prog="fastgguf", description="Inspect, benchmark and convert GGUF files (llama.cpp's model format). "
                                     "FILE may be any shard of a split model (NAME-00001-of-00003.gguf).")
    parser.add_argument("--version", action="version", version=f"fastgguf {__version__}")
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for module in _command_modules():
        module.register(commands)
    return parser


def main(argv: list[str] | None = None) -> int:
    """Run the ``fastgguf`` command; returns the exit status."""
    args = build_parser().parse_args(argv)
    if getattr(sys.stdout, "errors", None) == "strict" and hasattr(sys.stdout, "reconfigure"):
        # Names and strings that are not valid UTF-8 (kept as surrogates) print as \xNN, not a traceback.
        sys.stdout.reconfigure(errors=_ESCAPE_BYTES)
    try:
        args.run(args)
    except (ValueError, CommandError, NotImplementedError) as error:  # GGUFError (bad file data) is a ValueError
        return _fail(str(error))
    except OSError as error:
        if isinstance(error, BrokenPipeError):  # e.g. `fastgguf dump x | head`
            _silence_stdout()
            return 1
        if error.filename is not None and error.strerror:
            return _fail(f"{error.filename}: {error.strerror}")
        return _fail(str(error))
    except KeyboardInterrupt:
        return 130
    return 0


def _escape_bytes(error: UnicodeError) -> tuple[str | bytes, int]:
    """Encoding error handler: surrogate-escaped bytes as ``\\xNN``, anything else as ``backslashreplace``."""
    assert isinstance(error, UnicodeEncodeError)
    bad = error.object[error.start:error.end]
    if all(0xDC80 <= ord(c) <= 0xDCFF for c in bad):
        return "".join(f"\\x{ord(c) - 0xDC00:02x}" for c in bad), error.end
    return codecs.backslashreplace_errors(error)


_ESCAPE_BYTES = "fastgguf.escape_bytes"
codecs.register_error(_ESCAPE_BYTES, _escape_bytes)


def _fail(message: str) -> int:
    print(f"fastgguf: error: {message}", file=sys.stderr)
    return 1


def _silence_stdout() -> None:
    # Python flushes stdout at exit; with the reader gone that would print a second traceback.
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, sys.stdout.fileno())
