"""Small deterministic llama models and the llama-quantize command lines run on them.

Shared by ``tools/gen_llama_references.py`` (which runs llama.cpp's ``llama-quantize`` on them
and records the sha256 of each output in ``tests/data/llama_quantize_hashes.json``) and
``tests/requantize/test_llama_quantize_hashes.py`` (which runs ``fastgguf quantize`` with the same
arguments and compares). Everything here is a function of fixed seeds, so both sides build the
same bytes.

Models (:data:`MODELS`):

``gqa``
    llama, 8 layers, embedding 256, 8 heads / 2 KV heads (GQA 4), feed-forward 512, F16
    weights and F32 norms, an ``output.weight``, and one tensor whose row length (96) no
    256-element block divides (the fallbacks).
``split``
    ``gqa`` in two shards as ``llama-gguf-split`` writes them (:func:`write_split`).
``tied``
    llama, 4 layers, no GQA, no ``output.weight`` (tied embeddings), a mixture of 4 experts
    (3-D ``ffn_*_exps`` tensors, per-expert importance matrices), F32 weights.

Each has an importance matrix written as ``llama-imatrix`` writes its GGUF (``NAME.in_sum2``,
``NAME.counts``, ``imatrix.datasets``, ``imatrix.chunk_count``, ``imatrix.chunk_size``), from
synthetic sums and counts, and the same entries as a legacy ``.dat`` file.

:data:`CASES`: (case id, model, llama-quantize arguments before ``IN OUT TYPE``, TYPE). Paths in
the arguments are relative to the folder the model files are written to (the working directory
of both runs): ``quantize.imatrix.file`` records the path as given.
"""

from __future__ import annotations

import os
import struct

import numpy as np

import fastgguf
from fastgguf import GGMLType, GGUFValueType as V, GGUFWriter

MODELS = ("gqa", "tied")
IMATRIX = "imatrix.gguf"
IMATRIX_DAT = "imatrix.dat"
TENSOR_TYPE_FILE = "tensor_types.txt"
TENSOR_TYPE_FILE_TEXT = "attn_k=q5_0\nffn_up=iq4_nl  output=q8_0\n"


def _weights(name: str, model: str) -> list[tuple[str, np.ndarray, GGMLType]]:
    """(name, float32 values, storage type) of every tensor, in a fixed order."""
    rng = np.random.default_rng([20261125, MODELS.index(model)])
    out: list[tuple[str, np.ndarray, GGMLType]] = []

    def weight(tname: str, rows: int, cols: int, stype: GGMLType, experts: int = 0) -> None:
        shape = (experts, rows, cols) if experts else (rows, cols)
        scale = rng.uniform(0.5, 2.0, shape[:-1] + (1,)).astype(np.float32) * np.float32(0.02)
        values = rng.standard_t(5, shape).astype(np.float32) * scale
        out.append((tname, values.astype(np.float32), stype))

    def norm(tname: str, n: int) -> None:
        out.append((tname, (1.0 + 0.1 * rng.standard_normal(n)).astype(np.float32), GGMLType.F32))

    if model == "gqa":
        n_embd, n_ff, n_layer, n_kv, vocab, st = 256, 512, 8, 64, 96, GGMLType.F16
        weight("token_embd.weight", vocab, n_embd, st)
        norm("output_norm.weight", n_embd)
        weight("output.weight", vocab, n_embd, st)
        for i in range(n_layer):
            norm(f"blk.{i}.attn_norm.weight", n_embd)
            weight(f"blk.{i}.attn_q.weight", n_embd, n_embd, st)
            weight(f"blk.{i}.attn_k.weight", n_kv, n_embd, st)
            weight(f"blk.{i}.attn_v.weight", n_kv, n_embd, st)
            weight(f"blk.{i}.attn_output.weight", n_embd, n_embd, st)
            norm(f"blk.{i}.ffn_norm.weight", n_embd)
            weight(f"blk.{i}.ffn_gate.weight", n_ff, n_embd, st)
            weight(f"blk.{i}.ffn_up.weight", n_ff, n_embd, st)
            weight(f"blk.{i}.ffn_down.weight", n_embd, n_ff, st)
        weight("blk.0.ffn_odd.weight", 8, 96, st)
    else:
        n_embd, n_ff, n_layer, vocab, n_expert, st = 256, 256, 4, 64, 4, GGMLType.F32
        weight("token_embd.weight", vocab, n_embd, st)
        norm("output_norm.weight", n_embd)
        for i in range(n_layer):
            norm(f"blk.{i}.attn_norm.weight", n_embd)
            weight(f"blk.{i}.attn_q.weight", n_embd, n_embd, st)
            weight(f"blk.{i}.attn_k.weight", n_embd, n_embd, st)
            weight(f"blk.{i}.attn_v.weight", n_embd, n_embd, st)
            weight(f"blk.{i}.attn_output.weight", n_embd, n_embd, st)
            norm(f"blk.{i}.ffn_norm.weight", n_embd)
            weight(f"blk.{i}.ffn_gate_inp.weight", n_expert, n_embd, GGMLType.F32)
            weight(f"blk.{i}.ffn_gate_exps.weight", n_ff, n_embd, st, n_expert)
            weight(f"blk.{i}.ffn_up_exps.weight", n_ff, n_embd, st, n_expert)
            weight(f"blk.{i}.ffn_down_exps.weight", n_embd, n_ff, st, n_expert)
    return out


def _hparams(model: str) -> dict[str, int]:
    if model == "gqa":
        return {"block_count": 8, "embedding_length": 256, "feed_forward_length": 512, "attention.head_count": 8,
                "attention.head_count_kv": 2, "context_length": 512, "rope.dimension_count": 32,
                "vocab_size": 96}
    return {"block_count": 4, "embedding_length": 256, "feed_forward_length": 256, "attention.head_count": 8,
            "attention.head_count_kv": 8, "context_length": 512, "rope.dimension_count": 32, "vocab_size": 64,
            "expert_count": 4, "expert_used_count": 2}


def write_model(folder: str | os.PathLike, model: str) -> str:
    """Write ``<folder>/<model>.gguf`` (llama architecture, no vocabulary; llama-quantize loads no vocabulary)."""
    path = os.path.join(os.fspath(folder), f"{model}.gguf")
    w = GGUFWriter(path)
    w.add("general.architecture", "llama")
    w.add("general.name", f"fastgguf test {model}")
    w.add("general.file_type", 1 if model == "gqa" else 0, V.UINT32)
    for key, value in _hparams(model).items():
        w.add(f"llama.{key}", value, V.UINT32)
    w.add("llama.rope.freq_base", 10000.0, V.FLOAT32)
    w.add("llama.attention.layer_norm_rms_epsilon", 1e-5, V.FLOAT32)
    w.add("some.flag", True, V.BOOL)
    w.add("some.list", np.array([3, 1, 4], np.int32), V.ARRAY, V.INT32)
    for name, values, stype in _weights("", model):
        data = values.astype(np.float16) if stype == GGMLType.F16 else values
        w.add_tensor(name, data)
    w.write()
    return path


def _imatrix_entries(model: str) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """name -> (in_sum2 float32 (n_matrices * n_per_row), counts float32 (n_matrices,))."""
    rng = np.random.default_rng([20261126, MODELS.index(model)])
    out = {}
    for name, values, _ in _weights("", model):
        if values.ndim < 2 or "norm" in name or "gate_inp" in name:
            continue
        n_mat = values.shape[0] if values.ndim == 3 else 1
        n = values.shape[-1]
        counts = np.full(n_mat, 4096.0, np.float32)
        if n_mat > 1:
            counts[1] = 0.0  # an expert never routed to: value 1 (llama-quantize's rule)
            counts[2] = 1000.4  # rounded (lround) before dividing
        sums = (rng.exponential(1.0, n_mat * n) * 10.0 ** rng.uniform(-1, 1, n_mat * n)).astype(np.float32)
        sums = (sums * counts.repeat(n)).astype(np.float32)
        out[name] = (sums, counts)
    return out


def write_imatrix(folder: str | os.PathLike, model: str) -> tuple[str, str]:
    """Write ``<folder>/<model>-imatrix.gguf`` and ``<model>-imatrix.dat`` with the same entries; their paths."""
    entries = _imatrix_entries(model)
    gguf_path = os.path.join(os.fspath(folder), f"{model}-{IMATRIX}")
    w = GGUFWriter(gguf_path)
    w.add("general.type", "imatrix")
    w.add("imatrix.datasets", [f"synthetic-{model}.txt"])
    w.add("imatrix.chunk_count", 17, V.UINT32)
    w.add("imatrix.chunk_size", 512, V.UINT32)
    for name, (sums, counts) in entries.items():
        n_mat = counts.size
        w.add_tensor(f"{name}.in_sum2", sums.reshape(n_mat, -1))
        w.add_tensor(f"{name}.counts", counts.reshape(n_mat, 1))
    w.write()
    dat_path = os.path.join(os.fspath(folder), f"{model}-{IMATRIX_DAT}")
    with open(dat_path, "wb") as handle:
        handle.write(struct.pack("<i", len(entries)))
        for name, (sums, counts) in entries.items():
            raw = name.encode()
            ncall = int(counts.max())
            values = (sums / np.float32(max(counts.max(), 1.0)) * np.float32(ncall)).astype("<f4")
            handle.write(struct.pack("<i", len(raw)) + raw + struct.pack("<ii", ncall, values.size))
            handle.write(values.tobytes())
        dataset = f"legacy-{model}.txt".encode()
        handle.write(struct.pack("<ii", 9, len(dataset)) + dataset)
    return gguf_path, dat_path


def write_split(folder: str | os.PathLike) -> list[str]:
    """The ``gqa`` model as two shards, laid out as ``llama-gguf-split`` lays them out.

    ``gqa-split-00001-of-00002.gguf`` holds every metadata entry and the first 40 tensors (in
    the file's order), ``-00002-of-00002`` the rest; each has ``split.no``, ``split.count`` and
    ``split.tensors.count`` (the first after the model's entries, the second only those).
    """
    with fastgguf.open(os.path.join(os.fspath(folder), "gqa.gguf")) as src:
        names = list(src.tensors)
        parts = [names[:40], names[40:]]
        paths = []
        for i, part in enumerate(parts):
            path = os.path.join(os.fspath(folder), f"gqa-split-{i + 1:05d}-of-{len(parts):05d}.gguf")
            w = GGUFWriter(path)
            if i == 0:
                for key in src.metadata:
                    vtype = src.metadata.value_type(key)
                    if vtype == V.ARRAY:
                        w.add(key, src.metadata[key], V.ARRAY, src.metadata.element_type(key))
                    else:
                        w.add(key, src.metadata.raw(key) if vtype == V.STRING else src.metadata[key], vtype)
            w.add("split.no", i, V.UINT16)
            w.add("split.count", len(parts), V.UINT16)
            w.add("split.tensors.count", len(names), V.INT32)
            for name in part:
                info = src.tensors[name]
                w.add_tensor(name, info.raw.tobytes(), info.type, tuple(info.shape))
            w.write()
            paths.append(path)
    return paths


def input_file(model: str) -> str:
    """IN on the command line for a case's model."""
    return "gqa-split-00001-of-00002.gguf" if model == "split" else f"{model}.gguf"


def write_all(folder: str | os.PathLike) -> None:
    """Every model, its importance matrices and the tensor-type file, into ``folder``."""
    for model in MODELS:
        write_model(folder, model)
        write_imatrix(folder, model)
    write_split(folder)
    with open(os.path.join(os.fspath(folder), TENSOR_TYPE_FILE), "w", encoding="utf-8") as handle:
        handle.write(TENSOR_TYPE_FILE_TEXT)


def _cases() -> list[tuple[str, str, list[str], str]]:
    cases = []
    plain = ["Q4_0", "Q4_1", "Q5_0", "Q5_1", "Q8_0", "Q2_K", "Q3_K_S", "Q3_K_M", "Q3_K_L", "Q4_K_S", "Q4_K_M",
             "Q5_K_S", "Q5_K_M", "Q6_K", "IQ4_NL", "IQ4_XS", "IQ3_S", "IQ3_M", "IQ3_XS", "TQ1_0", "TQ2_0", "Q1_0",
             "Q2_0", "MXFP4_MOE", "F16", "BF16", "F32", "Q4_K", "15"]
    for ftype in plain:
        cases.append((f"gqa-{ftype}", "gqa", [], ftype))
    im = ["--imatrix", f"gqa-{IMATRIX}"]
    for ftype in ["IQ1_S", "IQ1_M", "IQ2_XXS", "IQ2_XS", "IQ2_S", "IQ2_M", "IQ3_XXS", "Q2_K_S", "Q4_K_M", "Q4_0",
                  "Q5_0", "IQ4_XS", "Q3_K_S"]:
        cases.append((f"gqa-imatrix-{ftype}", "gqa", im, ftype))
    cases += [
        ("gqa-imatrix-dat-IQ2_XS", "gqa", ["--imatrix", f"gqa-{IMATRIX_DAT}"], "IQ2_XS"),
        ("gqa-pure-Q6_K", "gqa", ["--pure"], "Q6_K"),
        ("gqa-pure-Q4_K_M", "gqa", ["--pure"], "Q4_K_M"),
        ("gqa-tensor-type", "gqa", ["--tensor-type", "attn_q=q8_0", "--tensor-type", r"blk\.[0-3]\.ffn_down=Q5_K",
                                    "--tensor-type", "ffn_odd=q4_1"], "Q4_K_M"),
        ("gqa-tensor-type-file", "gqa", ["--tensor-type-file", TENSOR_TYPE_FILE, "--tensor-type", "attn_v=q8_0"],
         "Q3_K_M"),
        ("gqa-output-embd-types", "gqa", ["--output-tensor-type", "q8_0", "--token-embedding-type", "Q4_0"],
         "Q4_K_M"),
        ("gqa-leave-output", "gqa", ["--leave-output-tensor"], "Q4_K_S"),
        ("gqa-override-kv", "gqa", ["--override-kv", "general.name=str:overridden", "--override-kv",
                                    "llama.context_length=int:-1024", "--override-kv", "some.float=float:2.5",
                                    "--override-kv", "some.flag=bool:false"], "Q5_K_M"),
        ("gqa-prune-layers", "gqa", ["--prune-layers", "1,5"], "Q4_K_M"),
        ("gqa-prune-imatrix", "gqa", ["--prune-layers", "0", *im], "IQ2_M"),
        ("gqa-exclude-weights", "gqa", [*im, "--exclude-weights", "ffn_down", "--exclude-weights", "attn_k"], "Q4_K_M"),
        ("gqa-include-weights", "gqa", [*im, "--include-weights", "attn_"], "IQ4_NL"),
        ("gqa-allow-requantize", "gqa", ["--allow-requantize"], "Q8_0"),
        ("gqa-keep-split", "gqa", ["--keep-split"], "Q6_K"),
        ("gqa-keep-split-Q4_K_M", "gqa", ["--keep-split"], "Q4_K_M"),
        ("gqa-COPY", "gqa", [], "COPY"),
        ("gqa-COPY-prune", "gqa", ["--prune-layers", "7", "--override-kv", "general.file_type=int:15"], "COPY"),
    ]
    tim = ["--imatrix", f"tied-{IMATRIX}"]
    for ftype in ["Q4_K_M", "Q3_K_M", "Q2_K", "IQ4_XS", "Q6_K", "MXFP4_MOE"]:
        cases.append((f"tied-{ftype}", "tied", [], ftype))
    for ftype in ["IQ2_XS", "IQ3_XXS", "IQ1_M", "Q4_0"]:
        cases.append((f"tied-imatrix-{ftype}", "tied", tim, ftype))
    cases.append(("tied-output-type", "tied", ["--output-tensor-type", "q5_k"], "Q4_K_M"))
    cases += [
        ("split-Q4_K_M", "split", [], "Q4_K_M"),
        ("split-keep-split-Q4_K_M", "split", ["--keep-split"], "Q4_K_M"),
        ("split-keep-split-imatrix-IQ2_XS", "split", ["--keep-split", *im], "IQ2_XS"),
    ]
    return cases


CASES = _cases()


def output_name(case_id: str, args: list[str], model: str) -> tuple[str, list[str]]:
    """(OUT as given on the command line, the files that get written) for a case."""
    out = f"out-{case_id}.gguf"
    if "--keep-split" in args:
        n = 2 if model == "split" else 1
        return out, [f"out-{case_id}-{i + 1:05d}-of-{n:05d}.gguf" for i in range(n)]
    return out, [out]


def read_model(path: str) -> fastgguf.GGUFFile:
    """Open a written model (a convenience for the tests)."""
    return fastgguf.open(path)
