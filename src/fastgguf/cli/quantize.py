"""``quantize``: requantize a GGUF model to a tensor type or one of llama.cpp's mixes (through :mod:`fastgguf.requantize`).

Two forms: fastgguf's own (``quantize FILE OUT --type TYPE``) and llama-quantize's
(``quantize [options] IN [OUT] TYPE [NTHREADS]``, TYPE read as llama-quantize reads it: ``Q4_K``
is ``Q4_K_M``, numbers are ``llama_ftype`` values), with llama-quantize's options.
"""

from __future__ import annotations

import argparse
import math
import os
import sys
from typing import NoReturn

from ..requantize import FILE_TYPES, MIXES, read_tensor_type_file, requantize
from ..types import TYPE_TRAITS
from .common import FILE_HELP, CommandError, positive_int, progress

__all__ = ["cmd_quantize", "register", "parse_llama_ftype"]

ORDER = 40

#: llama-quantize's QUANT_OPTIONS in its order (the first name of an ``llama_ftype`` number wins),
#: name -> the file type meant (its aliases Q3_K, Q4_K, Q5_K are the _M mixes).
_LLAMA_FTYPES = [
    ("Q1_0", "Q1_0"), ("Q2_0", "Q2_0"), ("Q4_0", "Q4_0"), ("Q4_1", "Q4_1"), ("MXFP4_MOE", "MXFP4_MOE"),
    ("Q5_0", "Q5_0"), ("Q5_1", "Q5_1"), ("IQ2_XXS", "IQ2_XXS"), ("IQ2_XS", "IQ2_XS"), ("IQ2_S", "IQ2_S"),
    ("IQ2_M", "IQ2_M"), ("IQ1_S", "IQ1_S"), ("IQ1_M", "IQ1_M"), ("TQ1_0", "TQ1_0"), ("TQ2_0", "TQ2_0"),
    ("Q2_K", "Q2_K"), ("Q2_K_S", "Q2_K_S"), ("IQ3_XXS", "IQ3_XXS"), ("IQ3_S", "IQ3_S"), ("IQ3_M", "IQ3_M"),
    ("Q3_K", "Q3_K_M"), ("IQ3_XS", "IQ3_XS"), ("Q3_K_S", "Q3_K_S"), ("Q3_K_M", "Q3_K_M"), ("Q3_K_L", "Q3_K_L"),
    ("IQ4_NL", "IQ4_NL"), ("IQ4_XS", "IQ4_XS"), ("Q4_K", "Q4_K_M"), ("Q4_K_S", "Q4_K_S"), ("Q4_K_M", "Q4_K_M"),
    ("Q5_K", "Q5_K_M"), ("Q5_K_S", "Q5_K_S"), ("Q5_K_M", "Q5_K_M"), ("Q6_K", "Q6_K"), ("Q8_0", "Q8_0"),
    ("F16", "F16"), ("BF16", "BF16"), ("F32", "F32"), ("COPY", "COPY"),
]


def parse_llama_ftype(text: str) -> tuple[str, str] | None:
    """llama-quantize's ``try_parse_ftype``: (the name as it prints it, the file type meant) or None.

    A name in any case (``COPY``: every tensor copied), or an ``llama_ftype`` number (``std::stoi``:
    leading spaces, a sign, digits).
    """
    upper = text.upper()
    for name, ftype in _LLAMA_FTYPES:
        if name == upper:
            return name, ftype
    stripped = text.lstrip()
    digits = stripped[1:] if stripped[:1] in "+-" else stripped
    n = len(digits) - len(digits.lstrip("0123456789"))
    if n:
        number = int(stripped[: len(stripped) - len(digits) + n])
        for name, ftype in _LLAMA_FTYPES:
            if FILE_TYPES.get(ftype) == number:
                return name, ftype
    return None


class _TensorTypeAction(argparse.Action):
    """--tensor-type and --tensor-type-file share one list, in command-line order (as llama-quantize reads them)."""

    def __call__(self, parser, namespace, values, option_string=None):
        items = getattr(namespace, self.dest, None) or []
        items.append((option_string, values))
        setattr(namespace, self.dest, items)


def _tensor_types(args) -> list:
    out: list = []
    for option, value in args.tensor_type_opts or ():
        if option == "--tensor-type-file":
            try:
                out += read_tensor_type_file(value)
            except OSError as error:
                raise CommandError(f"--tensor-type-file: failed to open file {value!r}: {error.strerror}") from None
        else:
            out.append(value)
    return out


def _prune_layers(text: str) -> list[int]:
    ids = []
    for part in text.split(","):
        try:
            value = int(part.strip().split()[0]) if part.strip() else -1
        except ValueError:
            value = -1
        if value < 0:
            raise argparse.ArgumentTypeError(f"invalid layer id {part!r}")
        ids.append(value)
    return ids


def _usage(args, message: str) -> NoReturn:
    """A usage error (exit status 2), as argparse reports its own."""
    args.usage_error(message)
    raise SystemExit(2)


def _forms(args) -> tuple[str, str | None, str, bool, int | None]:
    """(input, output or None, type, whether llama-quantize's form was used, threads)."""
    pos = list(args.positional)
    threads = args.threads
    if args.type is not None:  # fastgguf's form: FILE OUT --type TYPE
        if not pos or len(pos) > 2 or (len(pos) == 1 and not args.dry_run):
            _usage(args, "give FILE OUT --type TYPE, or llama-quantize's form IN [OUT] TYPE [NTHREADS]")
        return pos[0], (pos[1] if len(pos) > 1 else None), args.type, False, threads
    if len(pos) < 2:
        _usage(args, "give FILE OUT --type TYPE, or llama-quantize's form IN [OUT] TYPE [NTHREADS]")
    inp = pos[0]
    parsed = parse_llama_ftype(pos[1])
    if parsed is not None:  # IN TYPE [NTHREADS]: OUT is ggml-model-TYPE.gguf beside IN
        name, ftype = parsed
        suffix = "" if args.keep_split else ".gguf"  # llama-quantize adds none with --keep-split
        out = None if args.dry_run else os.path.join(os.path.dirname(inp), f"ggml-model-{name}{suffix}")
        rest = pos[2:]
    else:
        if len(pos) < 3:
            _usage(args, "missing ftype")
        out = pos[1]
        parsed = parse_llama_ftype(pos[2])
        if parsed is None:
            _usage(args, f"invalid ftype {pos[2]!r}")
        name, ftype = parsed
        rest = pos[3:]
    if len(rest) > 1:
        _usage(args, f"unexpected arguments: {' '.join(rest[1:])}")
    if rest:
        try:
            n = int(rest[0].strip().split()[0]) if rest[0].strip() else None
        except ValueError:
            n = None
        if n is None:
            _usage(args, f"invalid nthread {rest[0]!r}")
        threads = n if n > 0 else None
    return inp, out, ftype, True, threads


def _mib(n: int) -> str:
    return f"{n / 1024 / 1024:8.2f} MiB"


def cmd_quantize(args) -> None:
    from ..split import SplitModel, open_model

    inp, out, qtype, llama_form, threads = _forms(args)
    if args.include_weights and args.exclude_weights:
        raise CommandError("--include-weights and --exclude-weights cannot be used together")
    with open_model(inp) as model:  # the input's size for the progress bar
        total = sum(t.nbytes for t in model.tensors.values())
        n_elements = sum(t.n_elements for t in model.tensors.values())
        n_shards = len(model.paths) if isinstance(model, SplitModel) else 1
    with progress(total, not args.no_progress and not args.dry_run, "quantize") as update:
        try:
            plans = requantize(inp, out, qtype, imatrix=args.imatrix, filter=args.filter, keep=args.keep,
                               pure=args.pure, threads=threads, progress=update,
                               tensor_types=_tensor_types(args), output_tensor_type=args.output_tensor_type,
                               token_embedding_type=args.token_embedding_type,
                               leave_output_tensor=args.leave_output_tensor, include_weights=args.include_weights,
                               exclude_weights=args.exclude_weights, prune_layers=args.prune_layers,
                               override_kv=args.override_kv, dry_run=args.dry_run, keep_split=args.keep_split)
        except NotImplementedError as error:
            raise CommandError(f"{error}; nothing was written") from None
    if args.dry_run:
        _print_dry_run(plans, total, n_elements)
        return
    assert out is not None
    converted = [p for p in plans if p.converted]
    one_d = [p for p in plans if not p.converted and p.note.endswith("-D")]
    for plan in plans:
        if not plan.note or (plan in one_d and not args.verbose) or (plan.converted and not args.verbose):
            continue
        state = f"{plan.source_type.name} -> {plan.target_type.name}" if plan.converted else \
            f"kept {plan.source_type.name}"
        print(f"  {plan.name}: {state} ({plan.note})", file=sys.stderr)
    if one_d and not args.verbose:
        print(f"  {len(one_d)} tensors of fewer than 2 dimensions (norms, biases) kept as they are", file=sys.stderr)
    written = [out]
    if args.keep_split:
        base = out[:-5] if ".gguf" in out else out
        written = [f"{base}-{i + 1:05d}-of-{n_shards:05d}.gguf" for i in range(n_shards)]
    in_size, out_size = total, sum(os.path.getsize(path) for path in written)
    print(f"wrote {', '.join(written)}: {len(converted)} of {len(plans)} tensors quantized, "
          f"{len(plans) - len(converted)} kept; {in_size} -> {out_size} bytes", file=sys.stderr)


def _size(plan, target) -> int:
    """Bytes of the tensor in ``target``: rows times ggml_row_size (shape is outermost first)."""
    traits = TYPE_TRAITS[target]
    n_per_row = plan.shape[-1] if plan.shape else 1
    return math.prod(plan.shape[:-1]) * (n_per_row // traits.block_size * traits.type_size)


def _print_dry_run(plans, total_in: int, n_elements: int) -> None:
    """Each tensor's type and size, then the totals (llama-quantize --dry-run's figures), on stdout."""
    size_in = size_out = 0
    for i, plan in enumerate(plans, 1):
        old, new = _size(plan, plan.source_type), _size(plan, plan.target_type)
        size_in += old
        size_out += new
        shape = ", ".join(f"{n:5d}" for n in plan.shape)
        change = f"{plan.source_type.name} -> {plan.target_type.name}" if plan.converted else \
            f"{plan.source_type.name} kept"
        note = f"  ({plan.note})" if plan.note and not plan.note.startswith("already") else ""
        print(f"[{i:4d}/{len(plans):4d}] {plan.name:<36} [{shape}] {change:<16} {_mib(old)} -> {_mib(new)}{note}")
    bits = max(n_elements, 1)
    print(f"model size = {_mib(total_in)} ({total_in * 8 / bits:.2f} BPW)")
    print(f"quant size = {_mib(size_out)} ({size_out * 8 / bits:.2f} BPW)")


def register(commands) -> None:
    """Add ``quantize`` to the subparsers ``commands``."""
    quantize = commands.add_parser(
        "quantize", help="requantize a GGUF to a tensor type or a llama.cpp mix (also llama-quantize's command line)",
        usage="%(prog)s FILE OUT --type TYPE [options]\n       %(prog)s [options] IN [OUT] TYPE [NTHREADS]",
        description="Write OUT, a copy of FILE with its weights quantized. TYPE is a llama.cpp file type "
                    f"({', '.join(MIXES)}), quantized with llama-quantize's per-tensor rules, or with --type a "
                    "tensor type such as Q4_K (every weight in that type). The second form is llama-quantize's: "
                    "the same arguments, options and output bytes (there Q4_K means Q4_K_M, numbers are "
                    "llama_ftype values, OUT defaults to ggml-model-TYPE.gguf beside IN). Metadata is kept "
                    "(general.file_type updated); 1-D tensors, norms and tensors whose row length the block does "
                    "not divide are kept or fall back as llama-quantize does. Streams a block of rows at a time; "
                    "OUT appears complete or not at all.")
    quantize.add_argument("positional", nargs="*", metavar="ARG", help=f"FILE OUT, or IN [OUT] TYPE [NTHREADS]; "
                                                                      f"{FILE_HELP}")
    quantize.add_argument("--type", metavar="TYPE", help="a llama.cpp mix (Q4_K_M, IQ4_XS, ...) or a "
                                                         "tensor type (Q4_K, ...)")
    quantize.add_argument("--pure", action="store_true", help="TYPE's starting type on every weight, no mix rules "
                                                              "(llama-quantize --pure)")
    quantize.add_argument("--imatrix", metavar="FILE", help="importance matrix from llama-imatrix (.gguf or .dat); "
                                                            "its quantize.imatrix.* keys are written as llama-quantize does")
    quantize.add_argument("--include-weights", action="append", metavar="NAME",
                          help="use the importance matrix only for tensors whose name contains NAME (repeatable)")
    quantize.add_argument("--exclude-weights", action="append", metavar="NAME",
                          help="do not use the importance matrix for tensors whose name contains NAME (repeatable)")
    quantize.add_argument("--output-tensor-type", metavar="GGML_TYPE", help="the type of output.weight")
    quantize.add_argument("--token-embedding-type", metavar="GGML_TYPE", help="the type of token_embd.weight")
    quantize.add_argument("--tensor-type", dest="tensor_type_opts", action=_TensorTypeAction, metavar="NAME=TYPE",
                          help="quantize tensors whose name matches the regular expression NAME to TYPE; the first "
                               "match decides (repeatable)")
    quantize.add_argument("--tensor-type-file", dest="tensor_type_opts", action=_TensorTypeAction, metavar="FILE",
                          help="NAME=TYPE items separated by spaces or newlines")
    quantize.add_argument("--leave-output-tensor", action="store_true", help="copy output.weight as it is")
    quantize.add_argument("--prune-layers", type=_prune_layers, metavar="L0,L1,...",
                          help="drop these layers (the later ones are renumbered)")
    quantize.add_argument("--override-kv", action="append", metavar="KEY=TYPE:VALUE",
                          help="set metadata KEY (TYPE int, float, bool or str; repeatable)")
    quantize.add_argument("--keep-split", action="store_true",
                          help="write shards like the input's, OUT-00001-of-0000N.gguf (OUT without .gguf)")
    quantize.add_argument("--dry-run", action="store_true", help="print each tensor's type and the sizes; "
                                                                 "write nothing")
    quantize.add_argument("--allow-requantize", action="store_true",
                          help="accepted for llama-quantize's command line (quantized input is always allowed)")
    quantize.add_argument("--max-buffer-size", type=positive_int, metavar="MIB",
                          help="accepted for llama-quantize's command line (memory stays near one block of rows)")
    quantize.add_argument("--filter", action="append", metavar="GLOB", help="quantize only tensors whose name matches, "
                                                                          "copy the others (repeatable)")
    quantize.add_argument("--keep", action="append", metavar="GLOB", help="copy tensors whose name matches as they "
                                                                        "are (repeatable)")
    quantize.add_argument("--threads", type=positive_int, metavar="N", help="threads (default: all cores)")
    quantize.add_argument("--no-progress", action="store_true", help="no progress bar even on a terminal")
    quantize.add_argument("-v", "--verbose", action="store_true", help="also list 1-D tensors and every tensor "
                                                                     "whose type differs from TYPE's, with the reason")
    quantize.set_defaults(run=cmd_quantize, usage_error=quantize.error)
