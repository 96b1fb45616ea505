"""``bench``: dequantization throughput per tensor type, on a file or a synthetic model."""

from __future__ import annotations

import math
import os
import tempfile
import time
import warnings

import numpy as np

from .. import __version__
from ..reader import TensorInfo
from ..types import TYPE_TRAITS, GGMLType
from .common import CommandError, open_input, parse_types, positive_int, row_length_of
from .formatting import print_table

__all__ = ["cmd_bench", "register", "write_synthetic_model"]

ORDER = 20


def _synthetic_tensor(qtype: GGMLType, n_elements: int, rng: np.random.Generator) -> np.ndarray | bytes:
    """Plausible data for ``qtype``: real values for plain types, random bytes for quantized blocks."""
    normal = rng.standard_normal(n_elements, dtype=np.float32)
    if qtype == GGMLType.F32:
        return normal
    if qtype == GGMLType.F16:
        return normal.astype(np.float16)
    if qtype == GGMLType.F64:
        return normal.astype(np.float64)
    if qtype == GGMLType.BF16:
        return (normal.view(np.uint32) >> 16).astype(np.uint16).tobytes()
    integer = {GGMLType.I8: np.int8, GGMLType.I16: np.int16, GGMLType.I32: np.int32, GGMLType.I64: np.int64}
    if qtype in integer:
        return rng.integers(-100, 100, n_elements, dtype=integer[qtype])
    traits = TYPE_TRAITS[qtype]
    return rng.integers(0, 256, n_elements // traits.block_size * traits.type_size, dtype=np.uint8).tobytes()


def write_synthetic_model(path: str, types: list[GGMLType], n_elements: int, row_length: int = 4096) -> None:
    """A GGUF holding one tensor of ``n_elements`` (rows of ``row_length``) per type in ``types``."""
    from ..writer import GGUFWriter

    rng = np.random.default_rng(0)
    n_rows = max(1, n_elements // row_length)
    writer = GGUFWriter(path)
    writer.add("general.architecture", "bench")
    writer.add("general.name", "fastgguf synthetic benchmark model")
    for qtype in types:
        data = _synthetic_tensor(qtype, n_rows * row_length, rng)
        shape = (n_rows, row_length)
        if isinstance(data, np.ndarray) and data.dtype != np.uint8:
            writer.add_tensor(f"bench.{qtype.name}", data.reshape(shape))
        else:
            writer.add_tensor(f"bench.{qtype.name}", data, type=qtype, shape=shape)
    writer.write()


def _best_time(action, repeat: int) -> float:
    best = math.inf
    for _ in range(repeat):
        start = time.perf_counter()
        action()
        best = min(best, time.perf_counter() - start)
    return best


def _gguf_py_seconds_per_element(info: TensorInfo, n_rows: int) -> float | None:
    """gguf-py's time per element on the first ``n_rows`` rows; None without gguf-py or a gguf-py kernel."""
    try:
        from gguf import GGMLQuantizationType
        from gguf.quants import dequantize as gguf_dequantize
    except ImportError:
        return None
    if info.type == GGMLType.F32:
        return None  # gguf-py returns a view of the bytes: nothing to compare
    try:
        qtype = GGMLQuantizationType(int(info.type))
    except ValueError:
        return None
    traits = TYPE_TRAITS[info.type]
    row_length = row_length_of(info)
    row_bytes = row_length // traits.block_size * traits.type_size
    total_rows = info.n_elements // row_length
    n_rows = max(1, min(n_rows, total_rows))
    data = info.raw[: n_rows * row_bytes].reshape(n_rows, row_bytes)
    try:
        with warnings.catch_warnings(), np.errstate(all="ignore"):
            warnings.simplefilter("ignore")  # random scales overflow in gguf-py's numpy arithmetic
            gguf_dequantize(data[:1], qtype)  # warm-up: gguf-py builds its IQ grids on first use
            seconds = _best_time(lambda: gguf_dequantize(data, qtype), 1)
    except Exception:  # noqa: BLE001 - any gguf-py failure just means "no comparison"
        return None
    return seconds / (n_rows * row_length)


_FILL_REPEAT = 10  # filling is cheap: more runs steady the denominator of "of fill"
_fill_rates: dict[int, float] = {}


def _measure_fill(buffer: np.ndarray) -> float:
    """Bytes per second numpy writes into ``buffer`` (the machine's practical write bandwidth).

    Measured once per buffer size, best of several runs, so rows of the same size share it.
    """
    if buffer.nbytes not in _fill_rates:
        buffer.fill(0.0)  # touch every page first
        _fill_rates[buffer.nbytes] = buffer.nbytes / _best_time(lambda: buffer.fill(1.0), _FILL_REPEAT)
    return _fill_rates[buffer.nbytes]


def cmd_bench(args) -> None:
    from .. import dequant

    requested = parse_types(args.types)
    started = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="fastgguf-bench-") as scratch:
        skipped: list[str] = []
        if args.file is None:
            candidates = requested or list(TYPE_TRAITS)
            runnable = [t for t in candidates if dequant.has_kernel(t)]
            skipped = [f"{t.name} (no kernel in this build)" for t in candidates if t not in runnable]
            if not runnable:
                raise CommandError("no requested type has a dequantization kernel in this build")
            path = os.path.join(scratch, "synthetic.gguf")
            write_synthetic_model(path, runnable, args.elements)
            source = f"synthetic model, {args.elements:,} elements per type"
        else:
            path, source = args.file, args.file
        with open_input(path) as model:
            chosen: dict[GGMLType, TensorInfo] = {}  # the largest tensor of each type
            for info in model.tensors.values():
                if (requested and info.type not in requested) or info.n_elements == 0:
                    continue
                if info.type not in chosen or info.n_elements > chosen[info.type].n_elements:
                    chosen[info.type] = info
            absent = [t.name for t in requested if t not in chosen] if args.file is not None else []
            for qtype in [t for t in chosen if not dequant.has_kernel(t)]:
                skipped.append(f"{chosen.pop(qtype).type.name} (no kernel in this build)")
            if not chosen:
                raise CommandError("nothing to benchmark: no tensor of a type with a kernel")
            threads = args.threads if args.threads is not None else dequant.get_num_threads()
            compare = not args.no_compare and model.byteorder == "<" and _has_gguf_py()
            print(f"fastgguf {__version__} bench: {source}")
            print(f"CPU path {dequant.cpu_path()}, {threads} thread(s), best of {args.repeat} runs; "
                  f"'of fill' compares output bytes/s with numpy filling a float32 array of the same size "
                  f"(1 thread)")
            rows = []
            for qtype in sorted(chosen):
                try:
                    rows.append(_bench_tensor(chosen[qtype], args.elements, threads, args.repeat, compare))
                except NotImplementedError:  # e.g. big-endian quantized data
                    order = "big" if model.byteorder == ">" else "little"
                    skipped.append(f"{qtype.name} (no kernel for {order}-endian data)")
            header = ["type", "bits/w", "Gelem/s", "GB/s out", "fill GB/s", "of fill"]
            header += ["vs gguf-py"] if compare else []
            if rows:
                print_table(rows, header, right=set(range(1, len(header))))
    if absent:
        print(f"not in the file: {', '.join(absent)}")
    if skipped:
        print(f"skipped: {', '.join(skipped)}")
    if compare:
        print("vs gguf-py: speed-up over gguf.quants.dequantize (timed on 256K elements); "
              "'-' where gguf-py has no kernel or returns a view (F32)")
    elif not args.no_compare:
        print("no gguf-py comparison (install gguf to get one; little-endian files only)")
    print(f"done in {time.perf_counter() - started:.1f} s")


def _bench_tensor(info: TensorInfo, max_elements: int, threads: int, repeat: int, compare: bool) -> list[str]:
    """One table row: dequantize (up to ``max_elements`` of) ``info`` into a warm preallocated array."""
    row_length = row_length_of(info)
    n_rows = max(1, min(info.n_elements // row_length, max_elements // row_length))
    out = np.empty(n_rows * row_length, np.float32)
    fill_rate = _measure_fill(out)
    selection = slice(0, n_rows)
    info.dequantize(rows=selection, out=out, threads=threads)  # warm-up: pages mapped, threads started
    seconds = _best_time(lambda: info.dequantize(rows=selection, out=out, threads=threads), repeat)
    rate = out.size / seconds
    row = [info.type.name, f"{TYPE_TRAITS[info.type].bits_per_weight:.2f}", f"{rate / 1e9:.2f}",
           f"{out.nbytes / seconds / 1e9:.2f}", f"{fill_rate / 1e9:.2f}", f"{out.nbytes / seconds / fill_rate:.0%}"]
    if compare:
        # gguf-py is timed on a slice (it is slow); compared per element.
        reference = _gguf_py_seconds_per_element(info, max(1, (1 << 18) // row_length))
        row.append(f"{reference * rate:.0f}x" if reference else "-")
    return row


def _has_gguf_py() -> bool:
    try:
        import gguf.quants  # noqa: F401
    except ImportError:
        return False
    return True


def register(commands) -> None:
    """Add ``bench`` to the subparsers ``commands``."""
    bench = commands.add_parser(
        "bench", help="dequantization throughput per tensor type",
        description="Measure dequantization throughput per tensor type: elements/s, output GB/s, the "
                    "fraction of this machine's write bandwidth, and the speed-up over gguf-py when it is "
                    "installed. Without FILE, benchmarks a synthetic model holding every supported type.")
    bench.add_argument("file", metavar="FILE", nargs="?", help="a GGUF file or shard (default: a synthetic model)")
    bench.add_argument("--types", nargs="+", metavar="TYPE", help="only these types, e.g. Q4_K Q8_0")
    bench.add_argument("--threads", type=positive_int, metavar="N", help="threads (default: all cores)")
    bench.add_argument("--elements", type=positive_int, default=1 << 22, metavar="N",
                       help="elements per type (default: %(default)s; with FILE, at most this many "
                            "of each type's largest tensor)")
    bench.add_argument("--repeat", type=positive_int, default=3, metavar="N",
                       help="timed runs per type, best kept (default: %(default)s)")
    bench.add_argument("--no-compare", action="store_true", help="skip the gguf-py comparison")
    bench.set_defaults(run=cmd_bench)
