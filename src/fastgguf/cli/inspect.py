"""``info``, ``dump`` and ``tensors``: what a GGUF file holds, as text or JSON."""

from __future__ import annotations

import math
import sys
from collections import Counter

import numpy as np

from ..export import output_name
from ..reader import TensorInfo
from ..requantize import FILE_TYPES as LLAMA_FILE_TYPES
from ..split import SplitModel
from ..types import GGUFValueType
from .common import FILE_HELP, open_input, select_tensors, shard_of
from .formatting import format_bytes, format_count, format_shape, print_table, write_json_lines

__all__ = ["ARRAY_PREVIEW", "cmd_dump", "cmd_info", "cmd_tensors", "metadata_json", "register", "tensor_json"]

ORDER = 10

ARRAY_PREVIEW = 8  # array elements shown by `dump` unless --full-arrays
# Hyperparameters `info` shows, as suffixes of "<architecture>.".
HYPERPARAMETERS = (
    "context_length", "embedding_length", "block_count", "feed_forward_length",
    "attention.head_count", "attention.head_count_kv", "attention.key_length", "attention.value_length",
    "attention.layer_norm_rms_epsilon", "attention.layer_norm_epsilon", "attention.sliding_window",
    "rope.dimension_count", "rope.freq_base", "rope.scaling.type", "rope.scaling.factor",
    "expert_count", "expert_used_count", "vocab_size",
)


# llama.cpp's llama_ftype (general.file_type): the model's predominant encoding; 1024 marks a guess.
FILE_TYPES = {value: name for name, value in LLAMA_FILE_TYPES.items()} | {1024: "guessed"}


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
    assert element_type is not None, "an array has an element type"
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


def register(commands) -> None:
    """Add ``info``, ``dump`` and ``tensors`` to the subparsers ``commands``."""
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
