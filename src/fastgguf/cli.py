"""The ``fastgguf`` command: ``info``, ``dump``, ``tensors``, ``bench`` and ``convert``.

Every subcommand accepts a single GGUF file or any shard of a split model. Errors in the
input (missing file, not a GGUF, corrupt header, inconsistent shards) print one line,
``fastgguf: error: ...``, and exit with status 1; usage errors exit with status 2.
"""

from __future__ import annotations

import argparse
import codecs
import fnmatch
import json
import math
import os
import sys
import tempfile
import time
import warnings
import zipfile
from collections import Counter
from urllib.parse import quote

import numpy as np

from . import __version__
from .errors import GGUFError
from .reader import GGUFFile, TensorInfo
from .split import SplitModel, open_model
from .types import TYPE_TRAITS, GGMLType, GGUFValueType

__all__ = ["main"]

ARRAY_PREVIEW = 8  # array elements shown by `dump` unless --full-arrays
# Hyperparameters `info` shows, as suffixes of "<architecture>.".
HYPERPARAMETERS = (
    "context_length", "embedding_length", "block_count", "feed_forward_length",
    "attention.head_count", "attention.head_count_kv", "attention.key_length", "attention.value_length",
    "attention.layer_norm_rms_epsilon", "attention.layer_norm_epsilon", "attention.sliding_window",
    "rope.dimension_count", "rope.freq_base", "rope.scaling.type", "rope.scaling.factor",
    "expert_count", "expert_used_count", "vocab_size",
)


# llama.cpp's llama_ftype (general.file_type): the model's predominant encoding.
FILE_TYPES = {
    0: "F32", 1: "F16", 2: "Q4_0", 3: "Q4_1", 7: "Q8_0", 8: "Q5_0", 9: "Q5_1", 10: "Q2_K", 11: "Q3_K_S",
    12: "Q3_K_M", 13: "Q3_K_L", 14: "Q4_K_S", 15: "Q4_K_M", 16: "Q5_K_S", 17: "Q5_K_M", 18: "Q6_K",
    19: "IQ2_XXS", 20: "IQ2_XS", 21: "Q2_K_S", 22: "IQ3_XS", 23: "IQ3_XXS", 24: "IQ1_S", 25: "IQ4_NL",
    26: "IQ3_S", 27: "IQ3_M", 28: "IQ2_S", 29: "IQ2_M", 30: "IQ4_XS", 31: "IQ1_M", 32: "BF16", 36: "TQ1_0",
    37: "TQ2_0", 38: "MXFP4_MOE", 39: "NVFP4", 40: "Q1_0", 1024: "guessed",
}


class CommandError(Exception):
    """A problem worth one line on stderr and exit status 1."""


# --------------------------------------------------------------------------------------------------
# Formatting helpers


def format_bytes(n: int) -> str:
    """``1536`` → ``"1.50 KiB"``."""
    value = float(n)
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if abs(value) < 1024 or unit == "TiB":
            return f"{int(value)} B" if unit == "B" else f"{value:.2f} {unit}"
        value /= 1024
    raise AssertionError("unreachable")


def format_count(n: int) -> str:
    """``1_240_000_000`` → ``"1.24 B"`` (parameter counts)."""
    for scale, suffix in ((1e12, "T"), (1e9, "B"), (1e6, "M"), (1e3, "K")):
        if n >= scale:
            return f"{n / scale:.2f} {suffix}"
    return str(n)


def format_shape(shape: tuple[int, ...]) -> str:
    """numpy shape as ``4096x32000`` (no spaces, so columns split cleanly)."""
    return "x".join(str(d) for d in shape) if shape else "scalar"


def print_table(rows: list[list[str]], header: list[str], right: set[int] = frozenset(), file=None) -> None:
    """Print aligned columns; column indices in ``right`` are right-aligned."""
    widths = [max(len(str(row[i])) for row in [header, *rows]) for i in range(len(header))]

    def line(cells):
        parts = [str(cell).rjust(width) if i in right else str(cell).ljust(width)
                 for i, (cell, width) in enumerate(zip(cells, widths))]
        return "  ".join(parts).rstrip()

    print(line(header), file=file)
    for row in rows:
        print(line(row), file=file)


def open_input(path: str) -> GGUFFile | SplitModel:
    """Open a file or split model; GGUF errors name the file."""
    try:
        return open_model(path)
    except GGUFError as error:
        if error.reason.startswith(path):
            raise
        raise GGUFError(f"{path}: {error.reason}", error.offset) from None


def select_tensors(model, patterns: list[str] | None) -> list[TensorInfo]:
    """Tensors whose names match any of the glob ``patterns`` (all without patterns)."""
    tensors = list(model.tensors.values())
    if not patterns:
        return tensors
    chosen = [t for t in tensors if any(fnmatch.fnmatchcase(t.name, p) for p in patterns)]
    if not chosen:
        raise CommandError(f"no tensor matches {' or '.join(repr(p) for p in patterns)}")
    return chosen


def row_length_of(info: TensorInfo) -> int:
    """Elements per row (ggml's ne0)."""
    return info.shape[-1] if info.shape else 1


def shard_of(model, name: str) -> int | None:
    return model.shard_of(name) if isinstance(model, SplitModel) else None


# --------------------------------------------------------------------------------------------------
# Metadata values as JSON / text


def _json_scalar(value):
    if isinstance(value, float) and not math.isfinite(value):
        return str(value)  # "nan", "inf", "-inf": JSON has no literal for them
    if isinstance(value, str) and not _is_valid_text(value):
        return output_name(value)  # lone surrogates would make the JSON invalid Unicode
    return value


def _is_valid_text(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def _json_array(value, element_type: GGUFValueType, full: bool) -> dict:
    count = len(value)
    shown = value if full else value[:ARRAY_PREVIEW]
    if element_type == GGUFValueType.STRING:
        items = [_json_scalar(item) for item in (shown.tolist() if hasattr(shown, "tolist") else shown)]
    elif element_type == GGUFValueType.ARRAY:
        items = [_json_array(shown[i], value.element_type(i), full) for i in range(len(shown))]
    else:
        items = [_json_scalar(item) for item in np.asarray(shown).tolist()]
    entry = {"type": "ARRAY", "element_type": element_type.name, "count": count, "value": items}
    if len(items) < count:
        entry["truncated"] = True
    return entry


def metadata_json(metadata, key: str, full: bool) -> dict:
    value_type = metadata.value_type(key)
    if value_type == GGUFValueType.ARRAY:
        return _json_array(metadata[key], metadata.element_type(key), full)
    value = metadata[key]
    entry = {"type": value_type.name, "value": _json_scalar(value)}
    if value_type == GGUFValueType.STRING and not _is_valid_text(value):
        entry["raw_hex"] = metadata.raw(key).hex()  # the exact bytes; "value" shows them as \xNN
    return entry


def _text_value(value, value_type: GGUFValueType, element_type: GGUFValueType | None, full: bool) -> str:
    if value_type != GGUFValueType.ARRAY:
        return _text_scalar(value, value_type)
    entry = _json_array(value, element_type, full)

    def render(item, item_type):
        if isinstance(item, dict):
            tail = ", ..." if item.get("truncated") else ""
            inner = GGUFValueType[item["element_type"]]
            return "[" + ", ".join(render(i, inner) for i in item["value"]) + tail + "]"
        return _text_scalar(item, item_type)

    return render(entry, GGUFValueType.ARRAY)


def _text_scalar(value, value_type: GGUFValueType) -> str:
    if value_type == GGUFValueType.STRING:
        return repr(value)
    if value_type == GGUFValueType.FLOAT32 and isinstance(value, float):
        return str(np.float32(value))  # shortest text that reads back as the same float32
    return str(value)


def tensor_json(model, info: TensorInfo) -> dict:
    entry = {"name": _json_scalar(info.name), "shape": list(info.shape), "type": info.type.name, "n_elements": info.n_elements,
             "nbytes": info.nbytes, "offset": info.offset}
    shard = shard_of(model, info.name)
    if shard is not None:
        entry["shard"] = shard
    return entry


# --------------------------------------------------------------------------------------------------
# Subcommands


def cmd_info(args) -> None:
    with open_input(args.file) as model:
        metadata = model.metadata
        tensors = list(model.tensors.values())
        n_params = sum(t.n_elements for t in tensors)
        n_bytes = sum(t.nbytes for t in tensors)
        by_type = Counter(t.type.name for t in tensors)
        arch = metadata.get("general.architecture")
        rows = [("file", model.path)]
        if isinstance(model, SplitModel):
            rows.append(("shards", str(len(model.shards))))
        rows += [
            ("file size", f"{format_bytes(model.file_size)} ({model.file_size:,} bytes)"),
            ("GGUF", f"version {model.version}, {'little' if model.byteorder == '<' else 'big'}-endian, "
                     f"alignment {model.alignment}"),
            ("architecture", str(arch) if arch is not None else "-"),
            ("name", str(metadata.get("general.name", "-"))),
        ]
        if "general.size_label" in metadata:
            rows.append(("size label", str(metadata["general.size_label"])))
        if "general.file_type" in metadata:
            file_type = metadata["general.file_type"]
            name = FILE_TYPES.get(file_type) if isinstance(file_type, int) else None
            rows.append(("file type", f"{file_type} ({name})" if name else str(file_type)))
        rows += [
            ("parameters", f"{format_count(n_params)} ({n_params:,})"),
            ("tensors", f"{len(tensors)}: " + ", ".join(f"{n} {name}" for name, n in by_type.most_common())),
            ("tensor data", format_bytes(n_bytes)),
            ("bits/weight", f"{8 * n_bytes / n_params:.2f}" if n_params else "-"),
        ]
        if isinstance(arch, str):
            for suffix in HYPERPARAMETERS:
                key = f"{arch}.{suffix}"
                if key in metadata:
                    rows.append((suffix, _summary(metadata[key], metadata.value_type(key))))
        if "tokenizer.ggml.tokens" in metadata:
            tokens = metadata["tokenizer.ggml.tokens"]  # lazy: len() decodes nothing
            model_name = metadata.get("tokenizer.ggml.model")
            rows.append(("vocabulary", f"{len(tokens):,} tokens" + (f" ({model_name})" if model_name else "")))
        width = max(len(label) for label, _ in rows)
        for label, text in rows:
            print(f"{label.ljust(width)}  {text}")


def _summary(value, value_type: GGUFValueType) -> str:
    """A scalar as is; a per-layer array as its range."""
    if isinstance(value, np.ndarray):
        if value.size == 0:
            return "[]"
        low, high = value.min(), value.max()
        return f"{low} (per layer, {value.size} values)" if low == high else \
            f"{low}..{high} (per layer, {value.size} values)"
    return _text_scalar(value, value_type)


def cmd_dump(args) -> None:
    with open_input(args.file) as model:
        metadata = model.metadata
        if args.json:
            document = {
                "path": model.path,
                "version": model.version,
                "byteorder": "little" if model.byteorder == "<" else "big",
                "alignment": model.alignment,
                "data_offset": model.data_offset,
                "file_size": model.file_size,
            }
            if isinstance(model, SplitModel):
                document["shards"] = list(model.paths)
            document["metadata"] = {key: metadata_json(metadata, key, args.full_arrays) for key in metadata}
            if not args.no_tensors:
                document["tensors"] = [tensor_json(model, info) for info in model.tensors.values()]
            write_json_lines(document, sys.stdout)
            return
        order = "little" if model.byteorder == "<" else "big"
        shards = f", {len(model.shards)} shards" if isinstance(model, SplitModel) else ""
        print(f"{model.path}: GGUF v{model.version}, {order}-endian, alignment {model.alignment}, "
              f"data at {model.data_offset}{shards}")
        print(f"{len(metadata)} key/value pairs:")
        rows = []
        for key in metadata:
            value_type = metadata.value_type(key)
            element_type = metadata.element_type(key)
            if value_type == GGUFValueType.ARRAY:
                type_text = f"{element_type.name}[{len(metadata[key])}]"
            else:
                type_text = value_type.name
            rows.append([key, type_text, _text_value(metadata[key], value_type, element_type, args.full_arrays)])
        print_table(rows, ["key", "type", "value"])
        if not args.no_tensors:
            print(f"{len(model.tensors)} tensors:")
            print_tensors(model, list(model.tensors.values()))


def write_json_lines(document: dict, stream) -> None:
    """JSON with one metadata entry or tensor per line: greppable, and still one JSON document."""
    stream.write("{\n")
    items = list(document.items())
    for position, (key, value) in enumerate(items):
        comma = "," if position < len(items) - 1 else ""
        if isinstance(value, dict) and value:
            stream.write(f" {json.dumps(key)}: {{\n")
            entries = list(value.items())
            for i, (name, entry) in enumerate(entries):
                stream.write(f"  {json.dumps(name)}: {json.dumps(entry)}{',' if i < len(entries) - 1 else ''}\n")
            stream.write(f" }}{comma}\n")
        elif isinstance(value, list) and value and isinstance(value[0], dict):
            stream.write(f" {json.dumps(key)}: [\n")
            for i, entry in enumerate(value):
                stream.write(f"  {json.dumps(entry)}{',' if i < len(value) - 1 else ''}\n")
            stream.write(f" ]{comma}\n")
        else:
            stream.write(f" {json.dumps(key)}: {json.dumps(value)}{comma}\n")
    stream.write("}\n")


def print_tensors(model, tensors: list[TensorInfo]) -> None:
    split = isinstance(model, SplitModel)
    rows = []
    for info in tensors:
        row = [info.name, format_shape(info.shape), info.type.name, format_bytes(info.nbytes), str(info.offset)]
        if split:
            row.append(str(model.shard_of(info.name) + 1))
        rows.append(row)
    header = ["name", "shape", "type", "size", "offset"] + (["shard"] if split else [])
    print_table(rows, header, right={3, 4, 5})


def cmd_tensors(args) -> None:
    with open_input(args.file) as model:
        print_tensors(model, select_tensors(model, args.filter))


# --------------------------------------------------------------------------------------------------
# bench


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
    from .writer import GGUFWriter

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
    from . import dequant

    requested = _parse_types(args.types)
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


def _parse_types(names: list[str] | None) -> list[GGMLType]:
    if not names:
        return []
    chosen = []
    for item in names:
        for name in item.replace(",", " ").split():
            try:
                chosen.append(GGMLType[name.upper()])
            except KeyError:
                raise CommandError(f"unknown tensor type {name!r}; known: "
                                   f"{', '.join(t.name for t in GGMLType)}") from None
    return list(dict.fromkeys(chosen))


# --------------------------------------------------------------------------------------------------
# convert


OUTPUT_DTYPES = ("float32", "float16", "bfloat16")
_SAFETENSORS_DTYPES = {"float32": "F32", "float16": "F16", "bfloat16": "BF16"}
_CHUNK_ELEMENTS = 1 << 20  # rows are converted through a float32 buffer of about this many elements


def resolve_dtype(name: str) -> np.dtype:
    if name == "bfloat16":
        try:
            import ml_dtypes
        except ImportError:
            raise CommandError("bfloat16 output needs the ml_dtypes package (pip install ml_dtypes)") from None
        return np.dtype(ml_dtypes.bfloat16)
    return np.dtype(name)


def iter_row_blocks(info: TensorInfo, buffer: np.ndarray, cast: np.ndarray | None = None, threads: int | None = None):
    """Yield the tensor's values in blocks of whole rows, dequantized into the reusable float32 ``buffer``.

    With ``cast`` (an array of the output dtype, as large as ``buffer``), each block is cast into
    it. A block is valid until the next one is requested; peak memory is the two buffers,
    whatever the tensor's size. ``buffer`` must hold at least one row.
    """
    if info.n_elements == 0:
        return
    row_length = row_length_of(info)
    n_rows = info.n_elements // row_length
    rows_per_block = buffer.size // row_length
    for start in range(0, n_rows, rows_per_block):
        stop = min(n_rows, start + rows_per_block)
        block = buffer[: (stop - start) * row_length]
        info.dequantize(rows=slice(start, stop), out=block, threads=threads)
        if cast is None:
            yield block
        else:
            np.copyto(cast[: block.size], block, casting="unsafe")
            yield cast[: block.size]


class _OutputFormat:
    """Writes tensors one row block at a time."""

    def __init__(self, path: str) -> None:
        self.path = path

    def begin(self, tensors: list[tuple[str, tuple, np.dtype]], metadata: dict[str, str]) -> None: ...
    def start_tensor(self, name: str, shape: tuple, dtype: np.dtype) -> None: ...
    def write(self, block: np.ndarray) -> None: ...
    def end_tensor(self) -> None: ...
    def finish(self) -> None: ...
    def abort(self) -> None: ...


class _SafetensorsOutput(_OutputFormat):
    """safetensors: an 8-byte header length, a JSON header, then the tensors' bytes back to back.

    Written directly (the format is that simple) because the ``safetensors`` package's writers
    take every tensor at once, which would defeat streaming; its reader checks our output in tests.
    """

    def begin(self, tensors, metadata) -> None:
        if any(name == "__metadata__" for name, _, _ in tensors):
            raise CommandError("a tensor named '__metadata__' cannot be stored in safetensors")
        header: dict = {"__metadata__": metadata}
        offset = 0
        for name, shape, dtype in tensors:
            nbytes = math.prod(shape) * dtype.itemsize
            header[name] = {"dtype": _SAFETENSORS_DTYPES[dtype.name], "shape": list(shape),
                            "data_offsets": [offset, offset + nbytes]}
            offset += nbytes
        encoded = json.dumps(header, separators=(",", ":")).encode()
        encoded += b" " * (-len(encoded) % 8)  # data starts 8-byte aligned
        self._partial = self.path + ".part"
        self._handle = open(self._partial, "wb")  # noqa: SIM115 - closed in finish/abort
        self._handle.write(len(encoded).to_bytes(8, "little") + encoded)

    def write(self, block) -> None:
        self._handle.write(_little_endian(block))

    def finish(self) -> None:
        self._handle.close()
        os.replace(self._partial, self.path)

    def abort(self) -> None:
        if getattr(self, "_handle", None) is not None:
            self._handle.close()
            os.unlink(self._partial)


class _NpzOutput(_OutputFormat):
    """A zip of ``.npy`` members (what ``numpy.savez`` writes), streamed member by member."""

    def begin(self, tensors, metadata) -> None:
        self._partial = self.path + ".part"
        self._zip = zipfile.ZipFile(self._partial, "w", compression=zipfile.ZIP_STORED, allowZip64=True)

    def start_tensor(self, name, shape, dtype) -> None:
        self._member = self._zip.open(name + ".npy", "w", force_zip64=True)
        _write_npy_header(self._member, shape, dtype)

    def write(self, block) -> None:
        self._member.write(_little_endian(block))

    def end_tensor(self) -> None:
        self._member.close()

    def finish(self) -> None:
        self._zip.close()
        os.replace(self._partial, self.path)

    def abort(self) -> None:
        if getattr(self, "_zip", None) is not None:
            if getattr(self, "_member", None) is not None:
                self._member.close()
            self._zip.close()
            os.unlink(self._partial)


class _NpyFolderOutput(_OutputFormat):
    """A folder with one ``<name>.npy`` per tensor (names percent-quoted if they hold a path separator)."""

    def begin(self, tensors, metadata) -> None:
        os.makedirs(self.path, exist_ok=True)

    def start_tensor(self, name, shape, dtype) -> None:
        self._handle = open(os.path.join(self.path, npy_filename(name)), "wb")  # noqa: SIM115
        _write_npy_header(self._handle, shape, dtype)

    def write(self, block) -> None:
        self._handle.write(_little_endian(block))

    def end_tensor(self) -> None:
        self._handle.close()


def output_name(name: str) -> str:
    """The name ``convert`` stores tensor ``name`` under: invalid UTF-8 bytes become ``\\xNN`` text.

    (Names are decoded with ``surrogateescape``; neither JSON headers nor zip members can hold that.)
    """
    return name.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")


def npy_filename(name: str) -> str:
    """The file ``convert`` writes tensor ``name`` to in a folder of ``.npy`` files."""
    return quote(output_name(name), safe="._-+,=@") + ".npy"


def _little_endian(block: np.ndarray) -> np.ndarray:
    """The block's bytes, little-endian, as a flat uint8 array (buffer exports refuse float16/bfloat16)."""
    block = np.ascontiguousarray(block.astype(block.dtype.newbyteorder("<"), copy=False))
    return block.reshape(-1).view(np.uint8)


def _write_npy_header(handle, shape, dtype: np.dtype) -> None:
    descr = np.lib.format.dtype_to_descr(dtype.newbyteorder("<"))
    np.lib.format.write_array_header_2_0(handle, {"descr": descr, "fortran_order": False, "shape": tuple(shape)})


def _output_format(path: str) -> _OutputFormat:
    lower = path.lower()
    if lower.endswith(".safetensors"):
        return _SafetensorsOutput(path)
    if lower.endswith(".npz"):
        return _NpzOutput(path)
    if os.path.exists(path) and not os.path.isdir(path):
        raise CommandError(f"{path} exists and is not a folder; name the output *.safetensors, *.npz or a folder")
    return _NpyFolderOutput(path)


def _progress(total_bytes: int, enabled: bool):
    if enabled and sys.stderr.isatty():
        try:
            from tqdm import tqdm
        except ImportError:
            return None
        return tqdm(total=total_bytes, unit="B", unit_scale=True, unit_divisor=1024, desc="convert",
                    file=sys.stderr)
    return None


def cmd_convert(args) -> None:
    dtype = resolve_dtype(args.dtype)
    writer = _output_format(args.out)
    with open_input(args.file) as model:
        tensors = select_tensors(model, args.filter)
        from . import dequant

        unsupported = sorted({t.type.name for t in tensors if not dequant.has_kernel(t.type)})
        if unsupported:
            raise CommandError(f"no dequantization kernel for {', '.join(unsupported)} in this build "
                               f"(use --filter to leave those tensors out)")
        metadata = {"source": f"fastgguf {__version__}", "gguf": os.path.basename(model.path)}
        for key in ("general.architecture", "general.name"):
            if isinstance(model.metadata.get(key), str):
                metadata[key] = output_name(model.metadata[key])
        names = {info.name: output_name(info.name) for info in tensors}
        if len(set(names.values())) < len(names):
            raise CommandError("tensor names that are not valid UTF-8 collide once escaped")
        writer.begin([(names[t.name], t.shape, dtype) for t in tensors], metadata)
        # Allocated once: per-tensor buffers would fragment the heap and raise the peak.
        longest_row = max((row_length_of(t) for t in tensors), default=1)
        buffer = np.empty(max(_CHUNK_ELEMENTS, longest_row), np.float32)
        cast = None if dtype == np.float32 else np.empty(buffer.size, dtype)
        progress = _progress(sum(t.n_elements for t in tensors) * dtype.itemsize, not args.no_progress)
        try:
            for info in tensors:
                writer.start_tensor(names[info.name], info.shape, dtype)
                for block in iter_row_blocks(info, buffer, cast, args.threads):
                    writer.write(block)
                    if progress is not None:
                        progress.update(block.nbytes)
                writer.end_tensor()
                info._release_pages()  # this tensor's mapped pages need not stay in our RSS
            writer.finish()
        except BaseException:
            writer.abort()
            raise
        finally:
            if progress is not None:
                progress.close()
    print(f"wrote {len(tensors)} tensors ({args.dtype}) to {args.out}", file=sys.stderr)


# --------------------------------------------------------------------------------------------------
# Entry point


FILE_HELP = "a GGUF file, or any shard of a split model"


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="fastgguf", description="Inspect, benchmark and convert GGUF files (llama.cpp's model format). "
                                     "FILE may be any shard of a split model (NAME-00001-of-00003.gguf).")
    parser.add_argument("--version", action="version", version=f"fastgguf {__version__}")
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    info = commands.add_parser("info", help="summary: format, architecture, parameters, types, hyperparameters",
                               description="A readable summary of a GGUF model.")
    info.add_argument("file", metavar="FILE", help=FILE_HELP)
    info.set_defaults(run=cmd_info)

    dump = commands.add_parser("dump", help="every key/value pair and tensor info",
                               description="Print every key/value pair and tensor info.")
    dump.add_argument("file", metavar="FILE", help=FILE_HELP)
    dump.add_argument("--json", action="store_true", help="machine-readable JSON on stdout")
    dump.add_argument("--no-tensors", action="store_true", help="leave out the tensor infos")
    dump.add_argument("--full-arrays", action="store_true",
                      help=f"print arrays whole (default: their first {ARRAY_PREVIEW} elements)")
    dump.set_defaults(run=cmd_dump)

    tensors = commands.add_parser("tensors", help="one line per tensor: name, shape, type, size, offset",
                                  description="One line per tensor: name, shape (numpy order), type, size, "
                                              "absolute offset in its file (and shard for split models).")
    tensors.add_argument("file", metavar="FILE", help=FILE_HELP)
    tensors.add_argument("--filter", action="append", metavar="GLOB",
                         help="only tensors whose name matches (repeatable), e.g. 'blk.0.*'")
    tensors.set_defaults(run=cmd_tensors)

    bench = commands.add_parser(
        "bench", help="dequantization throughput per tensor type",
        description="Measure dequantization throughput per tensor type: elements/s, output GB/s, the "
                    "fraction of this machine's write bandwidth, and the speed-up over gguf-py when it is "
                    "installed. Without FILE, benchmarks a synthetic model holding every supported type.")
    bench.add_argument("file", metavar="FILE", nargs="?", help="a GGUF file or shard (default: a synthetic model)")
    bench.add_argument("--types", nargs="+", metavar="TYPE", help="only these types, e.g. Q4_K Q8_0")
    bench.add_argument("--threads", type=_positive_int, metavar="N", help="threads (default: all cores)")
    bench.add_argument("--elements", type=_positive_int, default=1 << 22, metavar="N",
                       help="elements per type (default: %(default)s; with FILE, at most this many "
                            "of each type's largest tensor)")
    bench.add_argument("--repeat", type=_positive_int, default=3, metavar="N",
                       help="timed runs per type, best kept (default: %(default)s)")
    bench.add_argument("--no-compare", action="store_true", help="skip the gguf-py comparison")
    bench.set_defaults(run=cmd_bench)

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
    convert.add_argument("--threads", type=_positive_int, metavar="N", help="threads (default: all cores)")
    convert.add_argument("--no-progress", action="store_true", help="no progress bar even on a terminal")
    convert.set_defaults(run=cmd_convert)
    return parser


def _positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not an integer") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"{value} is not positive")
    return value


def main(argv: list[str] | None = None) -> int:
    """Run the ``fastgguf`` command; returns the exit status."""
    args = build_parser().parse_args(argv)
    if getattr(sys.stdout, "errors", None) == "strict" and hasattr(sys.stdout, "reconfigure"):
        # Names and strings that are not valid UTF-8 (kept as surrogates) print as \xNN, not a traceback.
        sys.stdout.reconfigure(errors=_ESCAPE_BYTES)
    try:
        args.run(args)
    except (GGUFError, CommandError, NotImplementedError) as error:
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


def _escape_bytes(error: UnicodeEncodeError) -> tuple[str, int]:
    """Encoding error handler: surrogate-escaped bytes as ``\\xNN``, anything else as ``backslashreplace``."""
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
