"""``bench``: dequantization throughput per tensor type, on a file or a synthetic model.

Each type's throughput is compared with numpy's ``fill`` writing a float32 array of the same size on
the same number of threads, with arrays 4x the last-level cache by default (``fastgguf._bandwidth``),
so "of fill" is a fraction of the machine's memory write bandwidth, not of a cache's.
"""

from __future__ import annotations

import math
import os
import tempfile
import time
import warnings

import numpy as np

from .. import __version__
from .._bandwidth import LLC_FACTOR, CacheInfo, default_elements, describe_llc, fill_bandwidth, last_level_cache
from ..reader import TensorInfo
from ..types import TYPE_TRAITS, GGMLType
from .common import CommandError, open_input, parse_types, positive_int, row_length_of
from .formatting import format_bytes, print_table

__all__ = ["cmd_bench", "fill_note", "register", "write_synthetic_model"]

ORDER = 20

#: Rows of synthetic data made (and written) at a time: the model is streamed, one chunk held.
_CHUNK_ELEMENTS = 1 << 22
_PLAIN_DTYPES = {
    GGMLType.F32: "<f4", GGMLType.F16: "<f2", GGMLType.F64: "<f8",
    GGMLType.I8: "<i1", GGMLType.I16: "<i2", GGMLType.I32: "<i4", GGMLType.I64: "<i8",
}


def _plain_chunk(qtype: GGMLType, normal: np.ndarray) -> np.ndarray:
    """Plausible values of a plain type from standard normal float32 ``normal``."""
    if qtype == GGMLType.BF16:
        return (normal.view(np.uint32) >> 16).astype("<u2")
    dtype = np.dtype(_PLAIN_DTYPES[qtype])
    return (normal if dtype.kind == "f" else np.clip(normal * 30, -100, 99)).astype(dtype)


def write_synthetic_model(path: str, types: list[GGMLType], n_elements: int, row_length: int = 4096) -> None:
    """A GGUF holding one tensor of ``n_elements`` (rows of ``row_length``) per type in ``types``.

    Plain types hold normal values (integers: 30x them, within -100..99), quantized ones random block bytes. The
    tensors are written a chunk of rows at a time from one chunk of random data, repeated: memory
    stays small however large the tensors (the kernels' speed does not depend on the values).
    """
    from ..writer import GGUFWriter

    rng = np.random.default_rng(0)
    n_rows = max(1, n_elements // row_length)
    chunk_rows = max(1, min(n_rows, _CHUNK_ELEMENTS // row_length))
    writer = GGUFWriter()
    writer.add("general.architecture", "bench")
    writer.add("general.name", "fastgguf synthetic benchmark model")
    for qtype in types:
        writer.add_tensor_info(f"bench.{qtype.name}", qtype, (n_rows, row_length))
    normal = rng.standard_normal(chunk_rows * row_length, dtype=np.float32)
    quantized = [t for t in types if t != GGMLType.BF16 and t not in _PLAIN_DTYPES]
    row_bytes = max((row_length // TYPE_TRAITS[t].block_size * TYPE_TRAITS[t].type_size for t in quantized), default=0)
    random_bytes = rng.integers(0, 256, chunk_rows * row_bytes, dtype=np.uint8)
    with open(path, "wb") as handle:
        writer.write_header(handle)
        for qtype in types:
            traits = TYPE_TRAITS[qtype]
            for start in range(0, n_rows, chunk_rows):
                rows = min(chunk_rows, n_rows - start)
                if qtype in quantized:
                    data = random_bytes[: rows * (row_length // traits.block_size * traits.type_size)]
                else:
                    data = _plain_chunk(qtype, normal[: rows * row_length])
                writer.write_tensor_data(handle, data)
        writer.end_stream()


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


def fill_note(threads: int, cache: CacheInfo, sizes: list[int]) -> str:
    """The header line saying what "of fill" means, for outputs of ``sizes`` bytes."""
    low, high = min(sizes), max(sizes)
    arrays = format_bytes(high) if low == high else f"{format_bytes(low)} to {format_bytes(high)}"
    return (f"of fill = dequantize GB/s of float32 written / numpy fill GB/s of a float32 array of the same size "
            f"on the same {threads} thread(s); arrays {arrays}, {'up to ' if low != high else ''}"
            f"{high / cache.size:.3g}x {describe_llc(cache)}")


def _rows_of(info: TensorInfo, max_elements: int) -> int:
    """Rows of ``info`` benchmarked: all of them, or as many as ``max_elements`` holds (at least one)."""
    row_length = row_length_of(info)
    return max(1, min(info.n_elements // row_length, max_elements // row_length))


def cmd_bench(args) -> None:
    from .. import dequant

    requested = parse_types(args.types)
    started = time.perf_counter()
    cache = last_level_cache()
    elements = args.elements if args.elements is not None else default_elements(cache)
    with tempfile.TemporaryDirectory(prefix="fastgguf-bench-") as scratch:
        skipped: list[str] = []
        if args.file is None:
            candidates = requested or list(TYPE_TRAITS)
            runnable = [t for t in candidates if dequant.has_kernel(t)]
            skipped = [f"{t.name} (no kernel in this build)" for t in candidates if t not in runnable]
            if not runnable:
                raise CommandError("no requested type has a dequantization kernel in this build")
            path = os.path.join(scratch, "synthetic.gguf")
            write_synthetic_model(path, runnable, elements)
            source = f"synthetic model, {elements:,} elements per type"
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
            sizes = {t: _rows_of(info, elements) * row_length_of(info) for t, info in chosen.items()}
            print(f"fastgguf {__version__} bench: {source}")
            print(f"CPU path {dequant.cpu_path()}, {threads} thread(s), best of {args.repeat} runs")
            print(fill_note(threads, cache, [4 * n for n in sizes.values()]))
            buffer = np.empty(max(sizes.values()), np.float32)  # every output a prefix: pages touched once
            fill_rates: dict[int, float] = {}  # output bytes -> fill bytes/s, measured once per size
            rows = []
            for qtype in sorted(chosen):
                out = buffer[: sizes[qtype]]
                if out.nbytes not in fill_rates:
                    fill_rates[out.nbytes] = fill_bandwidth(out, threads, _FILL_REPEAT)
                try:
                    rows.append(_bench_tensor(chosen[qtype], out, fill_rates[out.nbytes], threads, args.repeat,
                                              compare))
                except NotImplementedError:  # e.g. big-endian quantized data
                    order = "big" if model.byteorder == ">" else "little"
                    skipped.append(f"{qtype.name} (no kernel for {order}-endian data)")
            header = ["type", "bits/w", "Gelem/s", "GB/s out", "fill GB/s", "of fill"]
            header += ["vs gguf-py"] if compare else []
            if rows:
                print_table(rows, header, right=set(range(1, len(header))))
            small = [f"{t.name} ({format_bytes(4 * n)})" for t, n in sorted(sizes.items())
                     if 4 * n < LLC_FACTOR * cache.size and t.name in {row[0] for row in rows}]
    if small:
        which = "every output" if len(small) == len(rows) else ", ".join(small)
        print(f"under {LLC_FACTOR}x the last-level cache, so partly cache figures: {which}")
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


def _bench_tensor(info: TensorInfo, out: np.ndarray, fill_rate: float, threads: int, repeat: int,
                  compare: bool) -> list[str]:
    """One table row: dequantize the first ``out.size`` elements of ``info`` into ``out`` (pages touched)."""
    row_length = row_length_of(info)
    selection = slice(0, out.size // row_length)
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
                    "fraction of this machine's write bandwidth (numpy filling a float32 array of the same "
                    "size, past the last-level cache, on the same threads), and the speed-up over gguf-py "
                    "when it is installed. Without FILE, benchmarks a synthetic model holding every "
                    "supported type.")
    bench.add_argument("file", metavar="FILE", nargs="?", help="a GGUF file or shard (default: a synthetic model)")
    bench.add_argument("--types", nargs="+", metavar="TYPE", help="only these types, e.g. Q4_K Q8_0")
    bench.add_argument("--threads", type=positive_int, metavar="N", help="threads (default: all cores)")
    bench.add_argument("--elements", type=positive_int, metavar="N",
                       help=f"elements per type (default: a float32 output {LLC_FACTOR}x the last-level cache, "
                            f"e.g. {default_elements(CacheInfo(32 << 20, 3)):,} for 32 MiB; with FILE, at most "
                            f"this many of each type's largest tensor)")
    bench.add_argument("--repeat", type=positive_int, default=3, metavar="N",
                       help="timed runs per type, best kept (default: %(default)s)")
    bench.add_argument("--no-compare", action="store_true", help="skip the gguf-py comparison")
    bench.set_defaults(run=cmd_bench)
