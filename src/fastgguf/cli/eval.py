"""``eval`` and ``imatrix``: judge quantization formats by the model's outputs; collect importance matrices.

Both run the model in transformers on CPU through :mod:`fastgguf.integrations.transformers`
(:mod:`fastgguf.eval`).
"""

from __future__ import annotations

import csv
import json
import math
import sys
from typing import Any

from .common import CommandError, progress_bar
from .formatting import format_bytes, print_table

__all__ = ["cmd_eval", "cmd_imatrix", "register"]

ORDER = 55

#: Columns of the table (key, header, format).
_COLUMNS = [
    ("name", "candidate", "{}"), ("bits_per_weight", "bits/w", "{:.3f}"), ("size_bytes", "size", None),
    ("ppl", "PPL(Q)", "{:.4f}"), ("ppl_ratio", "PPL ratio", "{:.5f}"), ("ppl_ratio_err", "±", "{:.5f}"),
    ("kld_mean", "KLD mean", "{:.6f}"), ("kld_mean_err", "±", "{:.6f}"), ("kld_median", "KLD median", "{:.6f}"),
    ("kld_p99", "KLD p99", "{:.6f}"), ("kld_max", "KLD max", "{:.6f}"), ("delta_p_rms", "Δp RMS %", "{:.3f}"),
    ("same_top_p", "same top %", "{:.2f}"), ("same_top_p_err", "±", "{:.2f}"),
]


def _read_text(path: str) -> str:
    with open(path, encoding="utf-8", errors="surrogateescape") as handle:
        return handle.read()


def cmd_eval(args) -> None:
    from .. import eval as evaluate

    if args.plot:
        from .quant_stats import _check_plot_target

        _check_plot_target(args.plot)
    types = [t for item in args.types or () for t in item.replace(",", " ").split()]
    quantized = [p for group in args.quantized or () for p in group]
    if not types and not quantized:
        raise CommandError("nothing to compare: give --types and/or --quantized")
    text = _read_text(args.text)
    bar = progress_bar(0, not args.no_progress, "eval", unit="pass")
    try:
        records = evaluate(args.base, types, imatrix=args.imatrix, quantized=quantized, text=text, ctx=args.ctx,
                           chunks=args.chunks, progress=None if bar is None else _updater(bar))
    finally:
        if bar is not None:
            bar.close()
    if args.json:
        json.dump(records, sys.stdout, indent=1)
        sys.stdout.write("\n")
    elif args.csv:
        writer = csv.DictWriter(sys.stdout, fieldnames=list(records[0]))
        writer.writeheader()
        writer.writerows(records)
    else:
        _print_report(records, args)
    if args.plot:
        _plot(records, args.plot, args.base)
        print(f"wrote {args.plot}", file=sys.stderr)


def _updater(bar):
    def update(done: int, total: int) -> None:
        if bar.total != total:
            bar.total = total
        bar.update(done - bar.n)
    return update


def _print_report(records: list[dict[str, Any]], args) -> None:
    first = records[0]
    print(f"fastgguf eval: {args.base}: {first['n_chunks']} chunk(s) of {first['ctx']} tokens, "
          f"{first['n_tokens']} tokens scored; PPL(base) {first['ppl_base']:.4f} ± {first['ppl_base_err']:.4f}")
    rows = []
    for record in records:
        row = []
        for key, _, fmt in _COLUMNS:
            value = record[key]
            row.append(format_bytes(value) if fmt is None else fmt.format(value))
        rows.append(row)
    print_table(rows, [header for _, header, _ in _COLUMNS], right=set(range(1, len(_COLUMNS))))
    print("KLD in nats over the scored tokens; Δp = p(Q) - p(base) of the next token; same top: argmax agrees. "
          "--json for every statistic (percentiles, ln(PPL ratio), Δp percentiles).")


def _plot(records: list[dict[str, Any]], path: str, title: str) -> None:
    import matplotlib

    matplotlib.use("Agg", force=True)
    import matplotlib.pyplot as plt

    from .quant_stats import _label_points, pareto_front

    shown = [r for r in records if r["kld_mean"] > 0 and math.isfinite(r["kld_mean"])]
    figure, axes = plt.subplots(figsize=(9, 6.5))
    bits = [r["bits_per_weight"] for r in shown]
    klds = [r["kld_mean"] for r in shown]
    axes.errorbar(bits, klds, yerr=[r["kld_mean_err"] for r in shown], fmt="o", color="tab:blue", markersize=5,
                  capsize=3, zorder=3)
    front = pareto_front(list(zip(bits, klds)))
    if front:
        axes.step([bits[i] for i in front], [klds[i] for i in front], where="post", color="tab:red", linewidth=1.2,
                  label="Pareto front (least KLD for its size)", zorder=2)
        axes.scatter([bits[i] for i in front], [klds[i] for i in front], facecolors="none", edgecolors="tab:red",
                     s=110, zorder=4)
        axes.legend(loc="upper right")
    axes.set_yscale("log")
    axes.set_xlabel("bits per weight")
    axes.set_ylabel("mean KL divergence from the base model (nats per token)")
    axes.set_title(f"Output divergence: {title}")
    axes.grid(True, which="both", alpha=0.3)
    if bits:
        axes.set_xlim(min(bits) - 0.5, max(bits) + 0.5)
    figure.tight_layout()
    if shown:
        _label_points(axes, bits, klds, [r["name"] for r in shown])
    figure.savefig(path, metadata={"Software": None} if path.lower().endswith(".png") else {"Date": None})
    plt.close(figure)


def cmd_imatrix(args) -> None:
    from ..eval import collect_imatrix

    text = _read_text(args.text)
    bar = progress_bar(0, not args.no_progress, "imatrix", unit="chunk")
    try:
        entries = collect_imatrix(args.model, text, args.out, ctx=args.ctx, chunks=args.chunks, dataset=args.text,
                                  progress=None if bar is None else _updater(bar))
    finally:
        if bar is not None:
            bar.close()
    tokens = max((int(c[0]) for _, c in entries.values() if c.size == 1), default=0)
    experts = sum(c.size > 1 for _, c in entries.values())
    routed = f" ({experts} of them per expert)" if experts else ""
    print(f"wrote {args.out}: {len(entries)} entries{routed}, {tokens} tokens", file=sys.stderr)


def register(commands) -> None:
    """Add ``eval`` and ``imatrix`` to the subparsers ``commands``."""
    from .common import FILE_HELP, positive_int

    evaluate = commands.add_parser(
        "eval", help="compare quantized models with the base by their outputs (KL divergence, PPL)",
        description="Run BASE in transformers (CPU, float32) over the text and compare each candidate's next-token "
                    "distributions with BASE's, as llama-perplexity --kl-divergence does: chunks of CTX tokens "
                    "(BOS first), the second half of each scored. Candidates from --types are quantized in memory "
                    "with exactly the per-tensor types `fastgguf quantize` chooses; --quantized files are read as "
                    "they are. Reports PPL(Q), PPL(base), their ratio, KLD mean/median/percentiles/max, Δp and "
                    "same-top-p, with llama-perplexity's error estimates, bits per weight and file size.")
    evaluate.add_argument("base", metavar="BASE", help="the reference GGUF model (a transformers architecture)")
    evaluate.add_argument("--types", action="append", metavar="T,T,...", help="llama.cpp mixes or tensor types "
                                                                            "(Q4_K_M,IQ4_XS,Q8_0,...)")
    evaluate.add_argument("--imatrix", metavar="FILE", help="importance matrix for the --types candidates")
    evaluate.add_argument("--quantized", action="append", nargs="+", metavar="FILE",
                          help="quantized GGUF files of the same model")
    evaluate.add_argument("--text", required=True, metavar="FILE", help="the evaluation text (UTF-8)")
    evaluate.add_argument("--ctx", type=positive_int, default=512, metavar="N", help="tokens per chunk (default 512)")
    evaluate.add_argument("--chunks", type=positive_int, metavar="N", help="at most N chunks (default: all)")
    output = evaluate.add_mutually_exclusive_group()
    output.add_argument("--json", action="store_true", help="a JSON list, one object per candidate, every statistic")
    output.add_argument("--csv", action="store_true", help="the same as CSV")
    evaluate.add_argument("--plot", metavar="FILE.png", help="draw mean KLD against bits per weight (matplotlib)")
    evaluate.add_argument("--no-progress", action="store_true", help="no progress bar even on a terminal")
    evaluate.set_defaults(run=cmd_eval)

    imatrix = commands.add_parser(
        "imatrix", help="collect an importance matrix (llama-imatrix's GGUF format)",
        description="Run MODEL in transformers over the text (chunks of CTX tokens, BOS first) and write, for each "
                    "blk.* weight of a linear layer, the sum of squared inputs per column and the token count, in "
                    "llama-imatrix's GGUF format (for fastgguf quantize --imatrix or llama-quantize --imatrix). "
                    "MoE expert tensors (*_exps) are collected per expert from the tokens routed to each, as "
                    "llama-imatrix does.")
    imatrix.add_argument("model", metavar="MODEL", help=FILE_HELP)
    imatrix.add_argument("--text", required=True, metavar="FILE", help="the calibration text (UTF-8)")
    imatrix.add_argument("-o", "--out", required=True, metavar="FILE", help="the imatrix GGUF to write")
    imatrix.add_argument("--ctx", type=positive_int, default=512, metavar="N", help="tokens per chunk (default 512)")
    imatrix.add_argument("--chunks", type=positive_int, metavar="N", help="at most N chunks (default: all)")
    imatrix.add_argument("--no-progress", action="store_true", help="no progress bar even on a terminal")
    imatrix.set_defaults(run=cmd_imatrix)
