"""Small deterministic models and the split/merge settings compared with llama-gguf-split.

Shared by ``tools/gen_split_references.py`` (which runs llama-gguf-split on them and records
hashes in ``tests/data/split_references.json``) and ``tests/files/test_split_write.py`` (which runs
fastgguf on the same models and compares). The models are built with fastgguf's own writer
from seeded random bytes; their hashes are recorded too, so a change here shows as such.
"""

from __future__ import annotations

import hashlib
import os

import numpy as np

from fastgguf import GGMLType, GGUFValueType, GGUFWriter
from fastgguf.types import TYPE_TRAITS

V = GGUFValueType

REFERENCES = os.path.join(os.path.dirname(__file__), "data", "split_references.json")

# case -> (model, llama-gguf-split --split options). Every case is also merged back.
CASES: dict[str, tuple[str, list[str]]] = {
    "mixed-default": ("mixed", []),
    "mixed-tensors-1": ("mixed", ["--split-max-tensors", "1"]),
    "mixed-tensors-3": ("mixed", ["--split-max-tensors", "3"]),
    "mixed-tensors-3-no-first": ("mixed", ["--split-max-tensors", "3", "--no-tensor-first-split"]),
    "mixed-tensors-100-no-first": ("mixed", ["--split-max-tensors", "100", "--no-tensor-first-split"]),
    "sized-size-1M": ("sized", ["--split-max-size", "1M"]),
    "sized-size-2M-no-first": ("sized", ["--split-max-size", "2M", "--no-tensor-first-split"]),
    "sized-tensors-4": ("sized", ["--split-max-tensors", "4"]),
    # A file llama-gguf-split merged (split.no 0, split.count 0 and split.tensors.count in it), split again.
    "merged-tensors-4": ("merged", ["--split-max-tensors", "4"]),
    "empty-default": ("empty", []),
}
MERGED_FROM = "mixed-tensors-3"  # the split whose merge is the "merged" model


def sha256(path: str | os.PathLike) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for chunk in iter(lambda: handle.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


def _raw(rng: np.random.Generator, type_: GGMLType, shape: tuple[int, ...]) -> bytes:
    traits = TYPE_TRAITS[type_]
    n = int(np.prod(shape)) // traits.block_size * traits.type_size
    return rng.integers(0, 256, n, dtype=np.uint8).tobytes()


def build_mixed(path: str | os.PathLike) -> None:
    """Every kind of metadata value, and tensors of odd sizes and shapes (leading 1s, 1-D, 3-D, 4-D)."""
    rng = np.random.default_rng(19)
    w = GGUFWriter(path)
    w.add("general.architecture", "llama")
    w.add("general.name", "Mixed split test")
    w.add("general.description", "h\u00e9llo \u4e16\u754c")
    w.add("llama.context_length", 4096, V.UINT32)
    w.add("llama.block_count", 3, V.UINT32)
    w.add("llama.rope.freq_base", 10000.5, V.FLOAT32)
    w.add("test.u8", 200, V.UINT8)
    w.add("test.i8", -100, V.INT8)
    w.add("test.u16", 65000, V.UINT16)
    w.add("test.i16", -32000, V.INT16)
    w.add("test.i32", -7, V.INT32)
    w.add("test.u64", 2**63 + 5, V.UINT64)
    w.add("test.i64", -(2**40), V.INT64)
    w.add("test.f64", 3.141592653589793, V.FLOAT64)
    w.add("test.true", True, V.BOOL)
    w.add("test.false", False, V.BOOL)
    w.add("test.empty_string", "", V.STRING)
    w.add("tokenizer.ggml.model", "gpt2")
    w.add("tokenizer.ggml.tokens", [f"tok{i}" for i in range(50)] + ["\u2581caf\u00e9", ""], V.ARRAY, V.STRING)
    w.add("tokenizer.ggml.scores", np.linspace(-1, 1, 52, dtype=np.float32))
    w.add("tokenizer.ggml.token_type", np.arange(52, dtype=np.int32) % 6)
    w.add("test.bools", [True, False, True], V.ARRAY, V.BOOL)
    w.add("test.u64s", np.array([0, 1, 2**64 - 1], dtype=np.uint64))
    w.add("test.empty_array", [], V.ARRAY, V.UINT32)
    tensors = [
        ("token_embd.weight", GGMLType.Q8_0, (52, 64)),
        ("blk.0.attn_norm.weight", GGMLType.F32, (7,)),            # 28 bytes: padded
        ("blk.0.attn_q.weight", GGMLType.F16, (1, 64)),            # ggml keeps one dimension
        ("blk.0.ffn_up.weight", GGMLType.Q4_K, (3, 256)),
        ("blk.1.attn_norm.weight", GGMLType.F32, (1, 1, 5)),
        ("blk.1.ffn_gate_exps.weight", GGMLType.Q4_0, (2, 3, 32)),  # 3-D
        ("blk.1.attn_k.weight", GGMLType.BF16, (4, 1, 16)),        # a 1 inside stays
        ("blk.2.attn_v.weight", GGMLType.Q6_K, (2, 256)),
        ("blk.2.test4d.weight", GGMLType.I8, (2, 1, 3, 4)),
        ("output_norm.weight", GGMLType.F32, (64,)),
        ("output.weight", GGMLType.F16, (5, 64)),
    ]
    for name, type_, shape in tensors:
        w.add_tensor(name, _raw(rng, type_, shape), type_, shape)
    w.write()


def build_sized(path: str | os.PathLike) -> None:
    """Tensors of about 0.2-0.7 MB (4.9 MB in all), for splitting by size with llama-gguf-split's M units."""
    rng = np.random.default_rng(1919)
    w = GGUFWriter(path)
    w.add("general.architecture", "llama")
    w.add("general.name", "Sized split test")
    w.add("llama.block_count", 4, V.UINT32)
    types = [GGMLType.F16, GGMLType.Q8_0, GGMLType.Q4_K, GGMLType.F32, GGMLType.Q6_K, GGMLType.Q5_0]
    for i in range(12):
        type_ = types[i % len(types)]
        rows = 100 + 37 * i
        shape = (rows, 1024)
        w.add_tensor(f"blk.{i // 3}.t{i % 3}.weight", _raw(rng, type_, shape), type_, shape)
    w.write()


def build_empty(path: str | os.PathLike) -> None:
    """Metadata and no tensors."""
    w = GGUFWriter(path)
    w.add("general.architecture", "llama")
    w.add("general.name", "No tensors")
    w.write()


BUILDERS = {"mixed": build_mixed, "sized": build_sized, "empty": build_empty}


def build_models(directory: str | os.PathLike) -> dict[str, str]:
    """Write every model but "merged" (which is a merge output) into ``directory``; name -> path."""
    paths = {}
    for name, build in BUILDERS.items():
        path = os.path.join(os.fspath(directory), f"{name}.gguf")
        build(path)
        paths[name] = path
    return paths


def split_kwargs(options: list[str]) -> dict:
    """llama-gguf-split --split options as fastgguf.split_file keyword arguments."""
    from fastgguf.gguf_split import parse_size

    kwargs: dict = {}
    items = iter(options)
    for option in items:
        if option == "--split-max-tensors":
            kwargs["max_tensors"] = int(next(items))
        elif option == "--split-max-size":
            kwargs["max_size"] = parse_size(next(items))
        elif option == "--no-tensor-first-split":
            kwargs["no_tensor_first_split"] = True
        else:
            raise ValueError(option)
    return kwargs
