"""``set-metadata`` (in place, same size) and ``edit-metadata`` (rewrite), through :mod:`fastgguf.metadata_edit`."""

from __future__ import annotations

import argparse
import sys

from ..errors import GGUFError
from ..metadata_edit import edit_metadata, resolve_value_type, set_metadata
from ..reader import GGUFFile
from .common import CommandError, progress

__all__ = ["cmd_edit_metadata", "cmd_set_metadata", "parse_assignment", "register"]

ORDER = 47
_TYPES_HELP = ("int, float, bool, str (as llama-quantize's --override-kv; int and float keep an existing key's "
               "width, else INT64 / FLOAT64) or a GGUF value type: UINT8, INT8, UINT16, INT16, UINT32, INT32, "
               "UINT64, INT64, FLOAT32, FLOAT64, BOOL, STRING")


def parse_assignment(text: str) -> tuple[str, str | None, str]:
    """``KEY=TYPE:VALUE`` or ``KEY=VALUE`` -> (key, type name or None, value text).

    The part before the first ``:`` is a type only if it names one; otherwise all of it is the value.
    """
    key, sep, rest = text.partition("=")
    if not sep or not key:
        raise argparse.ArgumentTypeError(f"{text!r}: expected KEY=TYPE:VALUE")
    type_name, colon, value = rest.partition(":")
    if colon:
        try:
            resolve_value_type(type_name)
        except ValueError:
            return key, None, rest
        return key, type_name, value
    return key, None, rest


def _fail(error: Exception) -> CommandError:
    return CommandError(str(error.args[0]) if isinstance(error, KeyError) else str(error))


def _name_file(error: GGUFError, path: str) -> GGUFError:
    if error.reason.startswith(path):
        return error
    return GGUFError(f"{path}: {error.reason}", error.offset)


def cmd_set_metadata(args) -> None:
    try:
        _set_metadata(args)
    except GGUFError as error:
        raise _name_file(error, args.file) from None


def cmd_edit_metadata(args) -> None:
    try:
        _edit_metadata(args)
    except GGUFError as error:
        raise _name_file(error, args.file) from None


def _set_metadata(args) -> None:
    try:
        old, new = set_metadata(args.file, args.key, args.value, args.type, dry_run=args.dry_run)
    except KeyError as error:  # a missing key: its message, unquoted (ValueErrors reach main as they are)
        raise _fail(error) from None
    verb = "would set" if args.dry_run else "set"
    print(f"{verb} {args.key}: {old!r} -> {new!r}", file=sys.stderr)


def _edit_metadata(args) -> None:
    changes: dict[str, str] = {}
    types: dict[str, str] = {}
    for key, type_name, value in args.set or ():
        if key in changes:
            raise CommandError(f"{key} is set twice")
        changes[key] = value
        if type_name is not None:
            types[key] = type_name
    with GGUFFile(args.file) as model:
        new_untyped = sorted(k for k in changes if k not in model.metadata and k not in types)
        total = sum(info.nbytes for info in model.tensors.values())
    if new_untyped:
        raise CommandError(f"{', '.join(new_untyped)}: a new key needs a type: --set KEY=TYPE:VALUE "
                           f"(TYPE: {_TYPES_HELP})")
    with progress(total, not args.no_progress, "edit-metadata") as update:
        edit_metadata(args.file, args.out, set=changes, remove=args.remove or (), types=types, progress=update)
    print(f"wrote {args.out}: {len(changes)} key(s) set, {len(args.remove or ())} removed", file=sys.stderr)


def register(commands) -> None:
    """Add ``set-metadata`` and ``edit-metadata`` to the subparsers ``commands``."""
    set_cmd = commands.add_parser(
        "set-metadata", help="change one metadata value in place (same encoded size)",
        description="Change KEY's value inside FILE, as gguf-py's gguf_set_metadata.py does: only when the new value "
                    "takes exactly as many bytes as the old one (a number of the same width, a string of the same "
                    "byte length). Anything else: use edit-metadata. general.alignment and split.* are refused.")
    set_cmd.add_argument("file", metavar="FILE", help="a GGUF file (one shard of a split model is one file)")
    set_cmd.add_argument("key", metavar="KEY")
    set_cmd.add_argument("value", metavar="VALUE", help="numbers as text; bools true/false/1/0")
    set_cmd.add_argument("--type", metavar="T", help="the new type (default: the key's own): " + _TYPES_HELP)
    set_cmd.add_argument("--dry-run", action="store_true", help="check and report, change nothing")
    set_cmd.set_defaults(run=cmd_set_metadata)

    edit = commands.add_parser(
        "edit-metadata", help="write a copy with metadata keys set, added or removed",
        description="Write IN to OUT with --set and --remove applied; tensor infos and bytes are copied as they are "
                    "(streamed), and OUT appears only once complete (OUT may be IN). Existing keys keep their place "
                    "and, without a TYPE, their type; new keys go at the end and need a TYPE. general.alignment and "
                    "split.* are refused.")
    edit.add_argument("file", metavar="IN", help="a GGUF file (one shard of a split model is one file)")
    edit.add_argument("out", metavar="OUT")
    edit.add_argument("--set", action="append", type=parse_assignment, metavar="KEY=TYPE:VALUE",
                      help="set or add KEY (repeatable); TYPE: " + _TYPES_HELP)
    edit.add_argument("--remove", action="append", metavar="KEY", help="remove KEY (repeatable)")
    edit.add_argument("--no-progress", action="store_true", help="no progress bar even on a terminal")
    edit.set_defaults(run=cmd_edit_metadata)
