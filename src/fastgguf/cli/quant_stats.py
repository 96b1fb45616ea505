"""``quant-stats``: which quantization type loses least per bit on this model, and how fast each runs here.

For every target type, every 2-D weight whose row length the type's block divides is quantized
and dequantized back, row block by row block; the errors are aggregated over the whole model
(:class:`fastgguf.quant_stats.ErrorStats`) and, with ``--per-tensor``, per tensor too. Sources:
a GGUF file (tensors stored quantized or as F16/BF16 are first dequantized to float32, and the
output says so), a ``.safetensors`` file of float weights, or an ``.npz`` of arrays.
"""

from __future__ import annotations

import csv
import fnmatch
import json
import math
import mmap
import os
import sys
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from .. import quant_stats
from ..quant_stats import EXACT_PERCENTILE_LIMIT, ErrorStats, QuantError, round_trip_rows
from ..reader import TensorInfo
from ..types import TYPE_TRAITS, GGMLType
from .common import CommandError, open_input, parse_types, positive_int, progress_bar
from .formatting import print_table

__all__ = ["DEFAULT_TYPES", "cmd_quant_stats", "register"]

ORDER = 50

#: Types compared without --types/--all (those this build can quantize).
DEFAULT_TYPES = ("Q4_0", "Q4_1", "Q5_0", "Q5_1", "Q8_0", "Q2_K", "Q3_K", "Q4_K", "Q5_K", "Q6_K", "IQ4_NL",
                 "IQ4_XS", "IQ3_S", "IQ3_XXS", "IQ2_S", "TQ2_0", "MXFP4", "BF16", "F16")

_BLOCK_ELEMENTS = 1 << 20  # source rows read, quantized and compared about this many at a time


@dataclass
class _Tensor:
    """A 2-D float source: its rows as float32 blocks on demand."""

    name: str
    n_rows: int
    row_length: int
    stored: str  # the stored type, e.g. "Q4_K", "F16", "float32"
    read: Callable[[int, int, np.ndarray], np.ndarray]  # (first, last, float32 scratch) -> (rows, row_length)

    @property
    def n_elements(self) -> int:
        return self.n_rows * self.row_length


# --------------------------------------------------------------------------------------------------
# Sources


def _gguf_tensors(model) -> list[_Tensor]:
    tensors = []
    for info in model.tensors.values():
        if len(info.shape) != 2 or info.n_elements == 0:
            continue
        tensors.append(_Tensor(info.name, info.shape[0], info.shape[1], info.type.name, _gguf_reader(info)))
    return tensors


def _gguf_reader(info: TensorInfo) -> Callable[[int, int, np.ndarray], np.ndarray]:
    def read(first: int, last: int, scratch: np.ndarray) -> np.ndarray:
        out = scratch[: (last - first) * info.shape[1]]
        info.dequantize(rows=slice(first, last), out=out, threads=1 if out.size < (1 << 16) else None)
        return out.reshape(last - first, info.shape[1])
    return read


def _array_reader(array: np.ndarray) -> Callable[[int, int, np.ndarray], np.ndarray]:
    def read(first: int, last: int, scratch: np.ndarray) -> np.ndarray:
        out = scratch[: (last - first) * array.shape[1]].reshape(last - first, array.shape[1])
        np.copyto(out, array[first:last], casting="unsafe")
        return out
    return read


_SAFETENSORS_DTYPES = {"F32": "<f4", "F16": "<f2", "F64": "<f8", "BF16": "<u2"}


def _safetensors_tensors(path: str) -> tuple[list[_Tensor], list[str]]:
    """2-D float tensors of a ``.safetensors`` file, read through a memory map; and the skipped names."""
    with open(path, "rb") as handle:
        head = handle.read(8)
        if len(head) < 8:
            raise CommandError(f"{path}: too short for a safetensors file")
        header_length = int.from_bytes(head, "little")
        if header_length > os.fstat(handle.fileno()).st_size - 8:
            raise CommandError(f"{path}: safetensors header length {header_length} is past the end of the file")
        try:
            header = json.loads(handle.read(header_length))
        except (UnicodeDecodeError, json.JSONDecodeError) as error:
            raise CommandError(f"{path}: safetensors header is not JSON ({error})") from None
        mapped = mmap.mmap(handle.fileno(), 0, access=mmap.ACCESS_READ) if header_length else None
    if not isinstance(header, dict):
        raise CommandError(f"{path}: safetensors header is not a JSON object")
    tensors, skipped = [], []
    base = 8 + header_length
    for name, entry in header.items():
        if name == "__metadata__":
            continue
        try:
            dtype, shape, (start, stop) = entry["dtype"], entry["shape"], entry["data_offsets"]
        except (KeyError, TypeError, ValueError):
            raise CommandError(f"{path}: malformed safetensors entry for {name!r}") from None
        if dtype not in _SAFETENSORS_DTYPES or len(shape) != 2 or 0 in shape:
            skipped.append(name)
            continue
        numpy_dtype = np.dtype(_SAFETENSORS_DTYPES[dtype])
        if stop - start != shape[0] * shape[1] * numpy_dtype.itemsize or mapped is None or base + stop > len(mapped):
            raise CommandError(f"{path}: the data of {name!r} does not match its shape and dtype")
        array = np.frombuffer(mapped, numpy_dtype, shape[0] * shape[1], base + start).reshape(shape)
        if dtype == "BF16":  # bfloat16 is the top half of a float32: no ml_dtypes needed
            tensors.append(_Tensor(name, shape[0], shape[1], dtype, _bf16_reader(array)))
        else:
            tensors.append(_Tensor(name, shape[0], shape[1], dtype, _array_reader(array)))
    return tensors, skipped


def _bf16_reader(bits: np.ndarray) -> Callable[[int, int, np.ndarray], np.ndarray]:
    def read(first: int, last: int, scratch: np.ndarray) -> np.ndarray:
        out = scratch[: (last - first) * bits.shape[1]]
        np.left_shift(bits[first:last].reshape(-1), 16, out=out.view(np.uint32), dtype=np.uint32)
        return out.reshape(last - first, bits.shape[1])
    return read


def _npz_tensors(path: str) -> tuple[list[_Tensor], list[str]]:
    tensors, skipped = [], []
    try:
        archive = np.load(path, allow_pickle=False)
    except (ValueError, OSError) as error:
        raise CommandError(f"{path}: not a readable .npz ({error})") from None
    if not hasattr(archive, "files"):
        raise CommandError(f"{path}: a single .npy array, not an .npz archive")
    with archive:
        for name in archive.files:
            array = archive[name]
            if array.ndim != 2 or array.size == 0 or array.dtype.kind != "f":
                skipped.append(name)
                continue
            tensors.append(_Tensor(name, array.shape[0], array.shape[1], array.dtype.name, _array_reader(array)))
    return tensors, skipped


# --------------------------------------------------------------------------------------------------
# The run


def _target_types(args) -> list[GGMLType]:
    available = list(quant_stats.quantizable_types())
    if not available:
        raise CommandError("this build of fastgguf has no quantizers")
    if args.all:
        return available
    if args.types:
        requested = parse_types(args.types)
        missing = [t.name for t in requested if t not in available]
        if missing:
            raise CommandError(f"no quantizer for {', '.join(missing)} in this build; available: "
                               f"{', '.join(t.name for t in available)}")
        return requested
    default = [GGMLType[name] for name in DEFAULT_TYPES if GGMLType[name] in available]
    return default or available


def _load_imatrix(path: str | None) -> Any:
    if path is None:
        return None
    try:
        from ..imatrix import read_imatrix
    except ImportError:
        raise CommandError("--imatrix needs fastgguf.read_imatrix, which this version lacks") from None
    return read_imatrix(path)


def _imatrix_for(imatrix: Any, name: str, row_length: int) -> np.ndarray | None:
    if imatrix is None:
        return None
    weights = imatrix.get(name) if hasattr(imatrix, "get") else None
    if weights is None:
        return None
    weights = np.ascontiguousarray(weights, dtype=np.float32).reshape(-1)
    return weights if weights.size == row_length else None


def cmd_quant_stats(args) -> None:
    if args.plot:
        _check_plot_target(args.plot)  # before the work, not after it
    types = _target_types(args)
    imatrix = _load_imatrix(args.imatrix)
    path = args.model
    lower = path.lower()
    notes: list[str] = []
    if args.from_npz or lower.endswith(".npz"):
        tensors, skipped = _npz_tensors(path)
        _run(args, path, types, imatrix, tensors, skipped, notes)
    elif lower.endswith(".safetensors"):
        tensors, skipped = _safetensors_tensors(path)
        _run(args, path, types, imatrix, tensors, skipped, notes)
    else:
        with open_input(path) as model:
            tensors = _gguf_tensors(model)
            skipped = [info.name for info in model.tensors.values() if len(info.shape) != 2]
            converted = Counter(t.stored for t in _chosen(tensors, args.filter) if t.stored != "F32")
            if converted:
                notes.append("source tensors stored as " + ", ".join(f"{n} {name}" for name, n in converted.most_common())
                             + " were dequantized to float32 first: errors are measured against those values")
            _run(args, path, types, imatrix, tensors, skipped, notes)


def _chosen(tensors: list[_Tensor], patterns: list[str] | None) -> list[_Tensor]:
    if not patterns:
        return tensors
    return [t for t in tensors if any(fnmatch.fnmatchcase(t.name, p) for p in patterns)]


def _run(args, path: str, types: list[GGMLType], imatrix: Any, all_tensors: list[_Tensor], skipped: list[str],
         notes: list[str]) -> None:
    tensors = _chosen(all_tensors, args.filter)
    if not tensors:
        what = f"matching {' or '.join(repr(p) for p in args.filter)}" if args.filter else "in the file"
        raise CommandError(f"no 2-D float weight {what}")
    started = time.perf_counter()
    # Exact percentiles keep every error (8 bytes each): the budget is shared by the types compared,
    # so memory stays near EXACT_PERCENTILE_LIMIT x 8 bytes (x2: the model's and a tensor's) however many.
    exact_limit = max(1 << 16, EXACT_PERCENTILE_LIMIT // len(types))
    totals = {qtype: ErrorStats(qtype, exact_limit=exact_limit) for qtype in types}
    per_tensor: list[tuple[str, QuantError]] = []
    unused = {qtype: 0 for qtype in types}
    needs_imatrix: set[GGMLType] = set()
    work = sum(t.n_elements * sum(t.row_length % TYPE_TRAITS[q].block_size == 0 for q in types) for t in tensors)
    progress = progress_bar(work, not args.no_progress, "quant-stats", unit="elem")
    longest = max(t.row_length for t in tensors)
    scratch = np.empty(max(_BLOCK_ELEMENTS, longest), np.float32)
    round_trip = np.empty(scratch.size, np.float32)
    try:
        for tensor in tensors:
            weights = _imatrix_for(imatrix, tensor.name, tensor.row_length)
            if weights is None:
                needs_imatrix.update(q for q in types if quant_stats.requires_imatrix(q))
            eligible = [q for q in types if tensor.row_length % TYPE_TRAITS[q].block_size == 0 and q not in needs_imatrix]
            for qtype in types:
                if tensor.row_length % TYPE_TRAITS[qtype].block_size:
                    unused[qtype] += 1
            stats = {qtype: ErrorStats(qtype, exact_limit=exact_limit) for qtype in eligible}
            rows_per_block = max(1, scratch.size // tensor.row_length)
            for first in range(0, tensor.n_rows, rows_per_block):
                last = min(tensor.n_rows, first + rows_per_block)
                block = tensor.read(first, last, scratch)
                for qtype in list(stats):
                    try:
                        round_trip_rows(block, qtype, stats[qtype], imatrix=weights, threads=args.threads,
                                        out=round_trip)
                    except ValueError as error:
                        if weights is None and "imatrix" in str(error):
                            needs_imatrix.add(qtype)  # ggml refuses some types without one
                            del stats[qtype]
                            continue
                        raise
                    if progress is not None:
                        progress.update(block.size)
            for qtype, tensor_stats in stats.items():
                if tensor_stats.n == 0:
                    continue
                totals[qtype].merge(tensor_stats)
                if args.per_tensor:
                    per_tensor.append((tensor.name, tensor_stats.result()))
    finally:
        if progress is not None:
            progress.close()
    elapsed = time.perf_counter() - started
    order = {qtype: (TYPE_TRAITS[qtype].bits_per_weight, int(qtype)) for qtype in types}
    results = sorted((totals[q].result() for q in types if totals[q].n), key=lambda r: order[r.type])
    position = {t.name: i for i, t in enumerate(tensors)}
    per_tensor.sort(key=lambda item: (position[item[0]], order[item[1].type]))
    for qtype in sorted(needs_imatrix):
        notes.append(f"{qtype.name} skipped: it needs an importance matrix (--imatrix)" if imatrix is None else
                     f"{qtype.name} skipped: it needs an importance matrix entry for every tensor, and some have none")
    for qtype in types:
        if totals[qtype].n == 0 and qtype not in needs_imatrix:
            notes.append(f"{qtype.name}: no tensor has a row length its block size {TYPE_TRAITS[qtype].block_size} divides")
        elif unused[qtype]:
            notes.append(f"{qtype.name}: {unused[qtype]} tensor(s) left out, row length not a multiple of "
                         f"{TYPE_TRAITS[qtype].block_size}")
    if skipped:
        notes.append(f"{len(skipped)} tensor(s) that are not 2-D float weights left out")
    if not results:
        raise CommandError("nothing to measure: " + "; ".join(notes))
    rows = [("(all)", r) for r in results] + per_tensor
    if args.plot:
        _plot(results, args.plot, title=os.path.basename(path), weighted=args.imatrix is not None)
        notes.append(f"plot written to {args.plot}")
    n_elements = sum(t.n_elements for t in tensors)
    summary = (f"{len(tensors)} tensor(s), {n_elements:,} elements, {len(results)} type(s), "
               f"{'imatrix ' + args.imatrix + ', ' if args.imatrix else ''}{elapsed:.1f} s")
    if args.json:
        _write_json(rows, args.per_tensor)
    elif args.csv:
        _write_csv(rows, args.per_tensor)
    else:
        print(f"fastgguf quant-stats: {path}: {summary}")
        _print_table(rows, args.per_tensor, weighted=args.imatrix is not None)
    stream = sys.stderr if args.json or args.csv else sys.stdout
    for note in notes:
        print(f"note: {note}", file=stream)


# --------------------------------------------------------------------------------------------------
# Output


def _finite_or_text(value: Any) -> Any:
    if isinstance(value, float) and not math.isfinite(value):
        return str(value)  # "inf", "nan": JSON has no literal for them
    return value


def _records(rows: list[tuple[str, QuantError]], per_tensor: bool) -> list[dict[str, Any]]:
    records = []
    for tensor, result in rows:
        record = result.as_dict()
        record["percentiles_exact"] = result.percentiles_exact
        if per_tensor:
            record = {"tensor": None if tensor == "(all)" else tensor, **record}
        records.append(record)
    return records


def _write_json(rows: list[tuple[str, QuantError]], per_tensor: bool) -> None:
    records = [{key: _finite_or_text(value) for key, value in record.items()} for record in _records(rows, per_tensor)]
    json.dump(records, sys.stdout, indent=1)
    sys.stdout.write("\n")


def _write_csv(rows: list[tuple[str, QuantError]], per_tensor: bool) -> None:
    records = _records(rows, per_tensor)
    writer = csv.DictWriter(sys.stdout, fieldnames=list(records[0]), lineterminator="\n")
    writer.writeheader()
    for record in records:
        writer.writerow({key: "" if value is None else value for key, value in record.items()})


def _print_table(rows: list[tuple[str, QuantError]], per_tensor: bool, weighted: bool = False) -> None:
    # With an importance matrix, the error it weights ("w. rel RMSE") is the one the quantizers minimise.
    header = ((["tensor"] if per_tensor else []) + ["type", "bits/w", "rel RMSE"] + (["w. rel RMSE"] if weighted else [])
              + ["RMSE", "max err", "p95 err", "median err", "cosine", "SNR dB", "quant Melem/s", "dequant Gelem/s"])
    table = []
    for tensor, r in rows:
        approx = "" if r.percentiles_exact else "~"
        cells = ([r.type.name, f"{r.bits_per_weight:.3f}", f"{r.rel_rmse:.3e}"]
                 + ([f"{r.weighted_rel_rmse:.3e}"] if weighted else [])
                 + [f"{r.rmse:.3e}", f"{r.max_abs_error:.3e}", f"{approx}{r.p95_abs_error:.3e}",
                    f"{approx}{r.median_abs_error:.3e}", f"{r.cosine:.6f}", f"{r.snr_db:.2f}",
                    f"{r.quantize_melem_s:.1f}", f"{r.dequantize_gelem_s:.2f}"])
        table.append(([tensor] if per_tensor else []) + cells)
    first = 2 if per_tensor else 1
    print_table(table, header, right=set(range(first, len(header))))
    if any(not r.percentiles_exact for _, r in rows):
        print("~: percentile read from a histogram of the errors (within 0.4 %)")


def pareto_front(points: list[tuple[float, float]]) -> list[int]:
    """Indices of the points no other point beats on both axes (lower x and lower y), by increasing x."""
    order = sorted(range(len(points)), key=lambda i: (points[i][0], points[i][1]))
    front, best = [], math.inf
    for i in order:
        if points[i][1] < best:
            front.append(i)
            best = points[i][1]
    return front


def _check_plot_target(path: str) -> None:
    if not path.lower().endswith((".png", ".svg")):
        raise CommandError(f"--plot {path}: name the picture *.png or *.svg")
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        raise CommandError('--plot needs matplotlib: pip install "fastgguf[plot]" (or pip install matplotlib)') from None


#: Where a type's label may go, tried in order: offset from its point (typographic points) and
#: horizontal alignment. Nearer places first; the farther ones get a leader line.
_LABEL_PLACES = [(5, 5, "left"), (5, -9, "left"), (-5, 5, "right"), (-5, -9, "right"), (0, 9, "center"),
                 (0, -15, "center"), (12, 14, "left"), (12, -20, "left"), (-12, 14, "right"),
                 (-12, -20, "right"), (0, 22, "center"), (0, -28, "center"), (22, 2, "left"), (-22, 2, "right"),
                 (20, 26, "left"), (20, -32, "left"), (-20, 26, "right"), (-20, -32, "right")]


def _label_points(axes, xs: list[float], ys: list[float], labels: list[str]) -> None:
    """Label each point where the text overlaps no other label and no point (greedy, left to right)."""
    from matplotlib.transforms import Bbox

    figure = axes.figure
    figure.canvas.draw()
    renderer = figure.canvas.get_renderer()
    radius = 4.0 * figure.dpi / 72.0
    display = axes.transData.transform(np.column_stack([xs, ys]))
    taken = [Bbox.from_bounds(px - radius, py - radius, 2 * radius, 2 * radius) for px, py in display]
    frame = axes.get_window_extent(renderer)
    for i in sorted(range(len(labels)), key=lambda i: (xs[i], ys[i])):
        for dx, dy, align in _LABEL_PLACES:
            far = abs(dx) > 6 or abs(dy) > 10
            text = axes.annotate(labels[i], (xs[i], ys[i]), xytext=(dx, dy), textcoords="offset points",
                                 ha=align, va="bottom", fontsize=8,
                                 arrowprops={"arrowstyle": "-", "color": "0.5", "linewidth": 0.6} if far else None)
            box = text.get_window_extent(renderer)
            clear = frame.contains(box.x0, box.y0) and frame.contains(box.x1, box.y1)
            if clear and not any(box.overlaps(other) for other in taken):
                taken.append(box)
                break
            text.remove()
        else:  # crowded everywhere: the nearest place, overlapping
            dx, dy, align = _LABEL_PLACES[0]
            taken.append(axes.annotate(labels[i], (xs[i], ys[i]), xytext=(dx, dy), textcoords="offset points",
                                       ha=align, va="bottom", fontsize=8).get_window_extent(renderer))


def _plot(results: list[QuantError], path: str, title: str, weighted: bool = False) -> None:
    lower = path.lower()
    _check_plot_target(path)
    import matplotlib

    matplotlib.use("Agg", force=True)
    import matplotlib.pyplot as plt
    from matplotlib.ticker import FixedFormatter, FixedLocator, NullFormatter, NullLocator

    def error_of(r: QuantError) -> float:
        return r.weighted_rel_rmse if weighted else r.rel_rmse

    shown = [r for r in results if error_of(r) > 0 and math.isfinite(error_of(r))]
    figure, (error_axes, speed_axes) = plt.subplots(1, 2, figsize=(14, 6.5), gridspec_kw={"width_ratios": [3, 2]})
    bits = [r.bits_per_weight for r in shown]
    errors = [error_of(r) for r in shown]
    error_axes.scatter(bits, errors, color="tab:blue", s=22, zorder=3)
    front = pareto_front(list(zip(bits, errors)))
    if front:
        error_axes.step([bits[i] for i in front], [errors[i] for i in front], where="post", color="tab:red",
                        linewidth=1.2, label="Pareto front (least error for its size)", zorder=2)
        error_axes.scatter([bits[i] for i in front], [errors[i] for i in front], facecolors="none",
                           edgecolors="tab:red", s=90, zorder=4)
        error_axes.legend(loc="upper right")
    error_axes.set_yscale("log")
    # Bits per weight on a log scale: the low-bit types, where the choice is hard, get the room.
    error_axes.set_xscale("log", base=2)
    if bits:
        ticks = [t for t in (1, 1.5, 2, 3, 4, 5, 6, 8, 12, 16, 32) if min(bits) / 1.2 <= t <= max(bits) * 1.2]
        error_axes.xaxis.set_major_locator(FixedLocator(ticks))
        error_axes.xaxis.set_major_formatter(FixedFormatter([f"{t:g}" for t in ticks]))
        error_axes.xaxis.set_minor_locator(NullLocator())
        error_axes.xaxis.set_minor_formatter(NullFormatter())
        error_axes.set_xlim(min(bits) / 1.15, max(bits) * 1.15)
        error_axes.set_ylim(min(errors) / 2.5, max(errors) * 2.5)
    error_axes.set_xlabel("bits per weight (log scale)")
    error_axes.set_ylabel("relative RMSE, columns weighted by the importance matrix" if weighted
                          else "relative RMSE (RMSE / RMS of weights)")
    error_axes.set_title(f"Round-trip error: {title}")
    error_axes.grid(True, which="both", alpha=0.3)

    names = [r.type.name for r in results]
    positions = np.arange(len(results))
    quantize_speed = [r.quantize_melem_s for r in results]
    dequantize_speed = [r.dequantize_gelem_s * 1e3 for r in results]
    speed_axes.barh(positions - 0.2, quantize_speed, height=0.4, label="quantize", color="tab:orange")
    speed_axes.barh(positions + 0.2, dequantize_speed, height=0.4, label="dequantize", color="tab:green")
    speed_axes.set_yticks(positions, names)
    speed_axes.invert_yaxis()
    speed_axes.set_xscale("log")
    speed_axes.set_xlabel("million elements per second (log scale)")
    speed_axes.set_title("Speed on this machine")
    speed_axes.legend(loc="upper center", bbox_to_anchor=(0.5, -0.1), ncol=2, frameon=False)
    speed_axes.grid(True, axis="x", which="both", alpha=0.3)
    figure.tight_layout()
    _label_points(error_axes, bits, errors, [r.type.name for r in shown])
    figure.savefig(path, metadata={"Software": None} if lower.endswith(".png") else {"Date": None})
    plt.close(figure)


def register(commands) -> None:
    """Add ``quant-stats`` to the subparsers ``commands``."""
    parser = commands.add_parser(
        "quant-stats", help="error and speed of quantization types on a model's weights",
        description="Quantize every 2-D weight of MODEL to each target type and back, and report the error "
                    "(RMSE, relative RMSE, max/p95/median absolute error, cosine similarity, SNR) aggregated "
                    "over the model, with bits per weight and quantize/dequantize speed on this machine. "
                    "MODEL is a GGUF file (or shard; quantized tensors are dequantized to float32 first), a "
                    ".safetensors file of float weights, or an .npz of arrays.")
    parser.add_argument("model", metavar="MODEL", help="a GGUF file or shard, NAME.safetensors or NAME.npz")
    which = parser.add_mutually_exclusive_group()
    which.add_argument("--types", action="append", metavar="T,T,...",
                       help="target types (repeatable; default: the common ones this build can quantize)")
    which.add_argument("--all", action="store_true", help="every type this build can quantize")
    parser.add_argument("--imatrix", metavar="FILE", help="importance matrix (llama.cpp imatrix file) for the "
                                                          "quantizers")
    parser.add_argument("--filter", action="append", metavar="GLOB", help="only weights whose name matches "
                                                                          "(repeatable)")
    parser.add_argument("--per-tensor", action="store_true", help="also one row per tensor and type")
    output = parser.add_mutually_exclusive_group()
    output.add_argument("--json", action="store_true", help="a JSON list of objects on stdout")
    output.add_argument("--csv", action="store_true", help="CSV on stdout")
    parser.add_argument("--plot", metavar="FILE", help="draw error vs bits per weight and speeds to FILE.png or "
                                                       "FILE.svg (needs matplotlib)")
    parser.add_argument("--threads", type=positive_int, metavar="N", help="threads (default: all cores)")
    parser.add_argument("--from-npz", action="store_true", help="read MODEL as an .npz whatever its name")
    parser.add_argument("--no-progress", action="store_true", help="no progress bar even on a terminal")
    parser.set_defaults(run=cmd_quant_stats)
