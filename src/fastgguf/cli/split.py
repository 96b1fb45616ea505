"""``split`` and ``merge``: what ``llama-gguf-split --split`` / ``--merge`` write (through :mod:`fastgguf.gguf_split`)."""

from __future__ import annotations

import argparse
import sys

from ..gguf_split import DEFAULT_MAX_TENSORS, OutputFile, merge_files, parse_size, split_file
from .common import FILE_HELP, open_input, positive_int, progress
from .formatting import format_bytes

__all__ = ["cmd_merge", "cmd_split", "register"]

ORDER = 45


def _size(text: str) -> int:
    try:
        return parse_size(text)
    except ValueError as error:
        raise argparse.ArgumentTypeError(str(error)) from None


def _print_plan(files: list[OutputFile]) -> None:
    """llama-gguf-split's plan lines: shard, tensor count, header plus unpadded data in whole MB."""
    print(f"n_split: {len(files)}")
    for number, shard in enumerate(files, 1):
        print(f"split {number:05d}: n_tensors = {len(shard.tensors)}, "
              f"total_size = {(shard.header_size + shard.data_size) // 1000 // 1000}M")


def cmd_split(args) -> None:
    with open_input(args.file) as model:
        total = sum(info.nbytes for info in model.tensors.values())
        with progress(total, not args.no_progress and not args.dry_run, "split") as update:
            files = split_file(model, args.out_prefix, max_tensors=args.split_max_tensors,
                               max_size=args.split_max_size, no_tensor_first_split=args.no_tensor_first_split,
                               dry_run=args.dry_run, progress=update)
    _print_plan(files)
    if not args.dry_run:
        for shard in files:
            print(f"wrote {shard.path}: {len(shard.tensors)} tensors, {format_bytes(shard.size)}", file=sys.stderr)


def cmd_merge(args) -> None:
    with open_input(args.file) as model:
        total = sum(info.nbytes for info in model.tensors.values())
        with progress(total, not args.no_progress and not args.dry_run, "merge") as update:
            merged = merge_files(model, args.out, dry_run=args.dry_run, progress=update)
        shards = len(getattr(model, "shards", (model,)))
    verb = "would write" if args.dry_run else "wrote"
    print(f"{verb} {merged.path}: {len(merged.tensors)} tensors from {shards} shard(s), {format_bytes(merged.size)}",
          file=sys.stderr)


def register(commands) -> None:
    """Add ``split`` and ``merge`` to the subparsers ``commands``."""
    split = commands.add_parser(
        "split", help="split a model into shards as llama-gguf-split --split does",
        description="Write OUT_PREFIX-00001-of-0000N.gguf ...: the same files, byte for byte, as llama-gguf-split "
                    "--split. Shard 1 carries the metadata; every shard gets split.no, split.tensors.count and "
                    "split.count. Streams; the shards appear only once all are written.")
    split.add_argument("file", metavar="IN", help=FILE_HELP + " (a split model is re-split)")
    split.add_argument("out_prefix", metavar="OUT_PREFIX", help="the shards' path without -00001-of-0000N.gguf")
    limit = split.add_mutually_exclusive_group()
    limit.add_argument("--split-max-tensors", type=positive_int, metavar="N",
                       help=f"at most N tensors per shard (default: {DEFAULT_MAX_TENSORS})")
    limit.add_argument("--split-max-size", type=_size, metavar="N(M|G)",
                       help="at most this much tensor data per shard, e.g. 500M or 2G (10^6 and 10^9 bytes)")
    split.add_argument("--no-tensor-first-split", action="store_true",
                       help="shard 1 holds the metadata only; tensors start in shard 2")
    split.add_argument("--dry-run", action="store_true", help="print the plan, write nothing")
    split.add_argument("--no-progress", action="store_true", help="no progress bar even on a terminal")
    split.set_defaults(run=cmd_split)

    merge = commands.add_parser(
        "merge", help="merge a split model into one file as llama-gguf-split --merge does",
        description="Write every shard's tensors, and shard 1's metadata with split.count set to 0, to OUT: the "
                    "same file, byte for byte, as llama-gguf-split --merge. OUT must not exist. Streams; OUT "
                    "appears only once complete.")
    merge.add_argument("file", metavar="FIRST_SHARD", help="any shard of the split model")
    merge.add_argument("out", metavar="OUT", help="the merged file")
    merge.add_argument("--dry-run", action="store_true", help="check the shards and say what would be written")
    merge.add_argument("--no-progress", action="store_true", help="no progress bar even on a terminal")
    merge.set_defaults(run=cmd_merge)
