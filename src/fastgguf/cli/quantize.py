"""``quantize``: requantize a GGUF model to a tensor type or one of llama.cpp's mixes (through :mod:`fastgguf.requantize`)."""

from __future__ import annotations

import sys

from ..errors import GGUFError
from ..requantize import MIXES, requantize
from .common import FILE_HELP, CommandError, positive_int, progress_bar

__all__ = ["cmd_quantize", "register"]

ORDER = 40


def cmd_quantize(args) -> None:
    import os

    from ..split import open_model

    with open_model(args.file) as model:  # the input's size for the progress bar
        total = sum(t.nbytes for t in model.tensors.values())
    progress = progress_bar(total, not args.no_progress, "quantize")
    try:
        plans = requantize(args.file, args.out, args.type, imatrix=args.imatrix, filter=args.filter, keep=args.keep,
                           pure=args.pure, threads=args.threads,
                           progress=None if progress is None else progress.update)
    except NotImplementedError as error:
        raise CommandError(f"{error}; nothing was written") from None
    except ValueError as error:
        if isinstance(error, GGUFError):
            raise
        raise CommandError(str(error)) from None
    finally:
        if progress is not None:
            progress.close()
    converted = [p for p in plans if p.converted]
    for plan in plans:
        if plan.note and (not plan.converted or args.verbose):
            state = f"{plan.source_type.name} -> {plan.target_type.name}" if plan.converted else \
                f"kept {plan.source_type.name}"
            print(f"  {plan.name}: {state} ({plan.note})", file=sys.stderr)
    in_size, out_size = os.path.getsize(args.file), os.path.getsize(args.out)
    print(f"wrote {args.out}: {len(converted)} of {len(plans)} tensors quantized, "
          f"{len(plans) - len(converted)} kept; {in_size} -> {out_size} bytes", file=sys.stderr)


def register(commands) -> None:
    """Add ``quantize`` to the subparsers ``commands``."""
    quantize = commands.add_parser(
        "quantize", help="requantize a GGUF to a tensor type or a llama.cpp mix",
        description="Write OUT, a copy of FILE with its weights quantized. TYPE is a llama.cpp file type "
                    f"({', '.join(MIXES)}), quantized with llama-quantize's per-tensor rules, or a tensor type "
                    "such as Q4_K (every weight in that type). Metadata is kept (general.file_type updated); "
                    "1-D tensors, norms and tensors whose row length the block does not divide are kept or "
                    "fall back as llama-quantize does. Streams a block of rows at a time; OUT appears complete "
                    "or not at all.")
    quantize.add_argument("file", metavar="FILE", help=FILE_HELP)
    quantize.add_argument("out", metavar="OUT", help="the GGUF file to write (not FILE)")
    quantize.add_argument("--type", required=True, metavar="TYPE", help="a llama.cpp mix (Q4_K_M, IQ4_XS, ...) or a "
                                                                       "tensor type (Q4_K, ...)")
    quantize.add_argument("--pure", action="store_true", help="TYPE is the one tensor type for every weight, even "
                                                              "where it names a mix too (Q6_K, Q8_0, ...)")
    quantize.add_argument("--imatrix", metavar="FILE", help="importance matrix from llama-imatrix (.gguf or .dat)")
    quantize.add_argument("--filter", action="append", metavar="GLOB", help="quantize only tensors whose name matches, "
                                                                          "copy the others (repeatable)")
    quantize.add_argument("--keep", action="append", metavar="GLOB", help="copy tensors whose name matches as they "
                                                                        "are (repeatable)")
    quantize.add_argument("--threads", type=positive_int, metavar="N", help="threads (default: all cores)")
    quantize.add_argument("--no-progress", action="store_true", help="no progress bar even on a terminal")
    quantize.add_argument("-v", "--verbose", action="store_true", help="list every tensor whose type differs from "
                                                                     "TYPE's with the reason")
    quantize.set_defaults(run=cmd_quantize)
