"""``convert``: dequantize to ``.safetensors``, ``.npz`` or a folder of ``.npy`` (through :mod:`fastgguf.export`)."""

from __future__ import annotations

import sys

from ..dequant import resolve_dtype
from ..export import OUTPUT_DTYPES, export_model, npy_filename, open_writer
from .common import FILE_HELP, CommandError, open_input, positive_int, progress, select_tensors

__all__ = ["cmd_convert", "npy_filename", "register"]

ORDER = 30


def cmd_convert(args) -> None:
    try:
        dtype = resolve_dtype(args.dtype)
        open_writer(args.out)  # a folder output that is a file: said before any work
    except (ImportError, ValueError) as error:
        raise CommandError(str(error)) from None
    with open_input(args.file) as model:
        tensors = select_tensors(model, args.filter)
        total = sum(t.n_elements for t in tensors) * dtype.itemsize
        with progress(total, not args.no_progress, "convert") as update:
            try:
                export_model(model, args.out, tensors=tensors, dtype=dtype, threads=args.threads, progress=update)
            except NotImplementedError as error:
                raise CommandError(f"{error} (use --filter to leave those tensors out)") from None
    print(f"wrote {len(tensors)} tensors ({args.dtype}) to {args.out}", file=sys.stderr)


def register(commands) -> None:
    """Add ``convert`` to the subparsers ``commands``."""
    convert = commands.add_parser(
        "convert", help="dequantize to .safetensors, .npz or a folder of .npy",
        description="Dequantize every tensor (or those matching --filter) and write them to OUT: "
                    "*.safetensors, *.npz, or otherwise a folder of <name>.npy files. Streams row blocks, "
                    "so memory stays small whatever the model's size.")
    convert.add_argument("file", metavar="FILE", help=FILE_HELP)
    convert.add_argument("out", metavar="OUT", help="NAME.safetensors, NAME.npz, or a folder for NAME/<tensor>.npy")
    convert.add_argument("--dtype", choices=OUTPUT_DTYPES, default="float32",
                         help="output type (default: %(default)s; bfloat16 needs ml_dtypes)")
    convert.add_argument("--filter", action="append", metavar="GLOB", help="only tensors whose name matches "
                                                                          "(repeatable)")
    convert.add_argument("--threads", type=positive_int, metavar="N", help="threads (default: all cores)")
    convert.add_argument("--no-progress", action="store_true", help="no progress bar even on a terminal")
    convert.set_defaults(run=cmd_convert)
