"""fastgguf.matmul vs numpy's float32 matmul on pre-dequantized weights.

The model: every 2-D weight of a ~250 MB Q4_K_M-like llama (8 layers of d=2048, ffn 5632,
grouped KV of 256, vocab 32000; attn_v, ffn_down and the output head in Q6_K, the rest Q4_K),
synthetic blocks (random quants, realistic fp16 scales). One "forward sweep" multiplies x with
every weight, as an engine does per token (for a batch, the output head with the last row only: a
prompt's forward needs the logits of its last token, and llama-bench's pp computes just those);
batch 1 and batch 8, all threads.

With pytest-benchmark (``--benchmark-disable`` runs each once on a small model: the CI smoke)::

    PYTHONPATH=src python -m pytest benchmarks/bench_matmul.py --benchmark-only \\
        --benchmark-group-by=param:batch --benchmark-columns=min,median,rounds

As a script, the sweep table per type (numpy on the dequantized float32 weights; fastgguf's float
path; its integer path with maddubs and with AVX-512 VNNI where the CPU has it; "x" = numpy's
time / this one, GB/s of quantized weight bytes read; the machine's read bandwidth)::

    PYTHONPATH=src python benchmarks/bench_matmul.py [--layers N] [--rounds R] [--all-only]
    PYTHONPATH=src python benchmarks/bench_matmul.py --types      # one 4096x4096 weight per type

The table per batch x path (numpy, exact, integer) x kernel build, with ms per sweep, GB/s of blocks,
the ratio to numpy and to llama.cpp, and the command of each row; ``--llama-cpp`` writes the model as
a llama GGUF (Q4_K_M by ``fastgguf quantize``, kept in ``--dir``), sweeps that file's weights and runs
``llama-bench`` on it, and ``test-backend-ops perf -o MUL_MAT`` (if built) for the model's types against
fastgguf.matmul on the same shapes, one thread each (``--no-backend-ops`` skips it)::

    PYTHONPATH=src python benchmarks/bench_matmul.py --table [--batches 1,8,64,512] [--paths numpy,exact,integer]
        [--cpu avx2,portable] [--llama-cpp LLAMA_CPP/build/bin]
    PYTHONPATH=src python benchmarks/bench_matmul.py --table --paired 5 --batches 1 --cpu avx512 \\
        --llama-cpp LLAMA_CPP/build/bin   # 5 rounds, llama.cpp and every column in each: median ratios
    PYTHONPATH=src python benchmarks/bench_matmul.py --breakdown   # per-call cost, 1 vs 2 threads per type/size
    PYTHONPATH=src python benchmarks/bench_matmul.py --per-weight --batches 1,8,64 [--rounds 7]
        # CPU time of one thread (time.thread_time) per weight and batch, exact vs integer path
    PYTHONPATH=src python benchmarks/bench_matmul.py --int-error  # the integer path's error per type
    PYTHONPATH=src python benchmarks/bench_matmul.py --width [--only Q4_0,Q4_K] [--rounds 7]
        # one row of x from memory: the avx512 build's kernels for CPUs that run 512-bit operations
        # whole and for those that split them (AMD Zen 4), and the avx2 build
    PYTHONPATH=src python benchmarks/bench_matmul.py --moe --batches 1,16,128 --rounds 15
        # matmul_id (128 experts, 8 per token) against one matmul per expert, per number of tokens

transformers generate on CPU (a random LFM2 of ~200 MB in Q4_0, built once into ``--dir``): the
packed model through fastgguf's kernels (exact path, and integer path: ``enable(exact=False)``) vs
transformers' dequantized float32 model: a 64-token prompt's forward, tokens/s of greedy decoding
and peak RSS, each in a fresh process::

    PYTHONPATH=src:tests python benchmarks/bench_matmul.py --transformers [--dir /tmp/fgg_lfm2]
"""

from __future__ import annotations

import argparse
import os
import re
import threading
import time
from functools import partial

import numpy as np
import pytest

from fastgguf import GGMLType, _backend, dequant, dequantize, matmul, repack
from fastgguf._bandwidth import LLC_FACTOR, last_level_cache
from fastgguf.types import TYPE_TRAITS

T = GGMLType

#: Where each block keeps its fp16 scales: they get sane values as in real models, the rest of
#: the block is random bytes.
SCALES = {
    T.Q4_0: [0], T.Q4_1: [0, 2], T.Q5_0: [0], T.Q5_1: [0, 2], T.Q8_0: [0], T.Q8_1: [0, 2],
    T.Q2_K: [80, 82], T.Q3_K: [108], T.Q4_K: [0, 2], T.Q5_K: [0, 2], T.Q6_K: [208],
    T.IQ4_NL: [0], T.IQ4_XS: [0], T.IQ2_XXS: [0], T.IQ2_XS: [0], T.IQ2_S: [0], T.IQ3_XXS: [0],
    T.IQ3_S: [0], T.IQ1_S: [0], T.TQ2_0: [64], T.TQ1_0: [52],
}


def make_weight(qtype: GGMLType, n: int, k: int, rng: np.random.Generator) -> np.ndarray:
    """(n, row_bytes) synthetic blocks of ``qtype``."""
    block_size, type_size = TYPE_TRAITS[qtype]
    if qtype in (T.F32, T.F16):
        return (rng.standard_normal((n, k), dtype=np.float32) * 0.02).astype("<f4" if qtype == T.F32 else "<f2").view(np.uint8)
    if qtype == T.BF16:
        bits = (rng.standard_normal((n, k), dtype=np.float32) * 0.02).view(np.uint32) >> 16
        return bits.astype("<u2").view(np.uint8)
    blocks = rng.integers(0, 256, size=(n * k // block_size, type_size), dtype=np.uint8)
    for offset in SCALES.get(qtype, []):
        blocks[:, offset : offset + 2] = rng.uniform(0.0005, 0.002, (blocks.shape[0], 1)).astype("<f2").view(np.uint8)
    if qtype == T.MXFP4:  # its E8M0 scale byte e: 2^(e - 127) from 2^-11 to 2^-8 (random bytes reach inf)
        blocks[:, 0] = rng.integers(116, 120, blocks.shape[0], dtype=np.uint8)
    return blocks.reshape(n, -1)


def model_shapes(layers: int, d: int = 2048, ffn: int = 5632, kv: int = 256, vocab: int = 32000):
    """(name, type, N, K) of every 2-D weight of the llama-like model, Q4_K_M-like types."""
    shapes = []
    for i in range(layers):
        shapes += [
            (f"blk.{i}.attn_q", T.Q4_K, d, d), (f"blk.{i}.attn_k", T.Q4_K, kv, d),
            (f"blk.{i}.attn_v", T.Q6_K, kv, d), (f"blk.{i}.attn_output", T.Q4_K, d, d),
            (f"blk.{i}.ffn_gate", T.Q4_K, ffn, d), (f"blk.{i}.ffn_up", T.Q4_K, ffn, d),
            (f"blk.{i}.ffn_down", T.Q6_K, d, ffn),
        ]
    shapes.append(("output", T.Q6_K, vocab, d))
    return shapes


def build_model(shapes, seed: int = 0):
    rng = np.random.default_rng(seed)
    return [(name, qtype, make_weight(qtype, n, k, rng)) for name, qtype, n, k in shapes]


#: The output head's names: a prompt's forward needs its logits only for the last token.
HEADS = ("output", "output.weight")


def rows_for(name: str, x: np.ndarray, last_head: bool) -> np.ndarray:
    """The rows of ``x`` a forward multiplies weight ``name`` with: with ``last_head``, the output head
    takes the last row only, as llama.cpp's prompt processing (``llama-bench -p``) computes it."""
    return x[-1:] if last_head and name in HEADS else x


def row_length(qtype: GGMLType, raw: np.ndarray) -> int:
    """K, the values per row of a weight's blocks ``raw`` (rows of bytes)."""
    return raw.shape[1] // TYPE_TRAITS[qtype].type_size * TYPE_TRAITS[qtype].block_size


def sweep_fastgguf(model, xs, exact=True, threads=None, last_head=True):
    for name, qtype, raw in model:
        x = xs[row_length(qtype, raw)]
        matmul(rows_for(name, x, last_head), raw, qtype, exact=exact, threads=threads)


def repacked_model(model, threads=None):
    """``model`` with every weight made ready by :func:`fastgguf.repack` (for the build in use)."""
    return [(name, qtype, repack(raw, qtype, threads=threads)) for name, qtype, raw in model]


def sweep_repacked(packed, xs, threads=None, last_head=True):
    """The integer path over :func:`repacked_model`'s weights."""
    for name, _qtype, rw in packed:
        matmul(rows_for(name, xs[rw.shape[1]], last_head), rw, exact=False, threads=threads)


def sweep_int(model, xs, vnni: bool, threads=None):
    """The integer path with the AVX-512 VNNI kernels on or off (maddubs) in the current build."""
    kernels = _backend.kernels()
    before = kernels._set_vnni(vnni)
    try:
        sweep_fastgguf(model, xs, False, threads)
    finally:
        kernels._set_vnni(before)


def sweep_numpy(dense, xs, last_head=True):
    for name, w in dense:
        rows_for(name, xs[w.shape[1]], last_head) @ w.T


def dense_weights(model) -> list[tuple[str, np.ndarray]]:
    """(name, float32 weight) of every weight of ``model``: numpy's operands."""
    return [(name, dequantize(raw, q, (raw.shape[0], row_length(q, raw)))) for name, q, raw in model]


def inputs(model, batch: int, seed: int = 1):
    rng = np.random.default_rng(seed)
    ks = {row_length(q, raw) for _n, q, raw in model}
    return {k: rng.standard_normal((batch, k), dtype=np.float32) for k in ks}


# ---------------------------------------------------------------------------------------------
# pytest-benchmark

_models: dict = {}


def model_for(disabled: bool):
    layers = 0 if disabled else 8
    if layers not in _models:
        _models.clear()
        shapes = model_shapes(layers, vocab=32000) if layers else model_shapes(1, d=256, ffn=512, kv=64, vocab=512)
        model = build_model(shapes)
        dense = dense_weights(model)
        _models[layers] = (model, dense)
    return _models[layers]


@pytest.mark.parametrize("batch", [1, 8, 64])
@pytest.mark.parametrize("engine", ["fastgguf", "fastgguf-int", "fastgguf-int-vnni", "numpy"])
def test_sweep(benchmark, batch, engine):
    if engine == "fastgguf-int-vnni" and not _backend.kernels().vnni_usable():
        pytest.skip("no AVX-512 VNNI on this CPU (or not the avx512 build)")
    model, dense = model_for(benchmark.disabled)
    xs = inputs(model, batch)
    benchmark.group = f"batch {batch}"
    benchmark.extra_info.update(weight_bytes=sum(raw.nbytes for _n, _q, raw in model), cpu_path=dequant.cpu_path())
    if engine == "numpy":
        benchmark.pedantic(sweep_numpy, args=(dense, xs), rounds=5, warmup_rounds=1)
    elif engine == "fastgguf":
        benchmark.pedantic(sweep_fastgguf, args=(model, xs, True), rounds=5, warmup_rounds=1)
    else:  # the integer path: maddubs (VNNI off) or VNNI
        benchmark.pedantic(sweep_int, args=(model, xs, engine == "fastgguf-int-vnni"), rounds=5, warmup_rounds=1)


def test_backend_ops_line_parsing():
    """The plain MUL_MAT cases of test-backend-ops' perf output are read; permuted or batched ones are not."""
    plain = ("  MUL_MAT(type_a=q4_K,type_b=f32,m=4096,n=1,k=14336,bs=[1,1],nr=[1,1],per=[0,1,2,3],k_v=0,o=1,"
             "src_overlap=0,m_v=0,pad=0):                345 runs -  3381.55 us/run - 117.44 MFLOP/run - "
             "\x1b[1;34m 34.73 GFLOPS\x1b[0m")
    batched = plain.replace("bs=[1,1]", "bs=[2,1]")
    assert _BACKEND_OPS_CASE.findall(plain + "\n" + batched) == [("q4_K", "4096", "1", "14336", "3381.55")]


def test_backend_ops_filter():
    """The -p pattern picks the types' plain cases, and with rows only those rows of x."""
    case = "type_a=iq2_xs,type_b=f32,m=4096,n={},k=14336,bs=[1,1]"
    both = _backend_ops_filter(("iq2_xs", "q1_0"), rows=(1, 4))
    assert [bool(re.search(both, case.format(n))) for n in (1, 4, 2, 16, 14)] == [True, True, False, False, False]
    assert re.search(_backend_ops_filter(("iq2_xs",)), case.format(16))
    assert not re.search(_backend_ops_filter(("q1_0",)), case.format(1))
    # fastgguf's names (upper case) match ggml's printed ones (q4_K); they once matched nothing
    k_case = "type_a=q4_K,type_b=f32,m=4096,n=1,k=14336,bs=[1,1]"
    assert re.search(_backend_ops_filter(("Q4_K", "IQ2_XS")), k_case)
    assert re.search(_backend_ops_filter(("IQ2_XS",)), case.format(1))


def _repacks_here(qtype: GGMLType) -> bool:
    """Whether :func:`fastgguf.repack` makes tiles for ``qtype`` on the build in use (a tile kernel
    existing is not enough: without VNNI Q4_0 and MXFP4 keep their blocks)."""
    return repack(make_weight(qtype, 16, 256, np.random.default_rng(0)), qtype).repacked


def test_backend_ops_rows_smoke(capsys):
    """fastgguf's columns of the per-op comparison (a made-up ggml time): the smoke only."""
    rows = _backend_ops_rows([("q4_0", 64, 2, 256, 100.0), ("iq3_s", 64, 1, 256, 100.0)], exact_up_to=1)
    assert [(r["type"], r["n"]) for r in rows] == [("q4_0", 2), ("iq3_s", 1)]
    assert rows[0]["exact_us"] is None and rows[1]["exact_us"] > 0 and rows[1]["repacked_us"] is None
    assert (rows[0]["repacked_us"] is not None) == _repacks_here(GGMLType.Q4_0)
    assert "| q4_0 | 64x256 | 2 |" in capsys.readouterr().out


def test_table_smoke(tmp_path, capsys):
    """The table and the llama GGUF writer on a tiny model (no llama.cpp run): the smoke only."""
    q_path = quantize_file(write_llama_f16(str(tmp_path / "f16.gguf"), 1, d=256, ffn=512, kv=128, vocab=256),
                           str(tmp_path / "q.gguf"))
    model = model_from_file(q_path)
    assert {name for name, _q, _r in model} >= {"output.weight", "blk.0.ffn_down.weight"}
    rows = table(model, [1, 3], list(PATHS), list(_backend.available_cpu_paths()), 1, {1: 1.0}, "bench")
    assert len(rows) == 2 * (1 + 3 * len(_backend.available_cpu_paths()))
    printed = capsys.readouterr().out
    assert "| 3 | integer |" in printed and "| 1 | repacked |" in printed


def test_paired_table_smoke(tmp_path, capsys):
    """The paired rounds on a tiny model, with a made-up llama.cpp run: the smoke only."""
    q_path = quantize_file(write_llama_f16(str(tmp_path / "f16.gguf"), 1, d=256, ffn=512, kv=128, vocab=256),
                           str(tmp_path / "q.gguf"))
    cpus = list(_backend.available_cpu_paths())
    rows = paired_table(model_from_file(q_path), [1, 2], ["numpy", "integer"], cpus, 1, 2,
                        lambda: {1: 1.0, 2: 2.0}, "bench")
    assert len(rows) == 2 * (1 + len(cpus)) and all(len(r["seconds"]) == 2 for r in rows)
    printed = capsys.readouterr().out
    assert "round 2/2" in printed and "| 2 | llama.cpp (pp2) |" in printed


# ---------------------------------------------------------------------------------------------
# Script


def best_of(fn, rounds: int) -> float:
    fn()
    best = float("inf")
    for _ in range(rounds):
        t0 = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t0)
    return best


def read_bandwidth(n_bytes: int | None = None, threads: int | None = None) -> float:
    """GB/s of numpy summing a large array (1 GiB, or 4x the last-level cache if more), one slice per
    thread (numpy releases the GIL)."""
    n_bytes = n_bytes or max(1 << 30, LLC_FACTOR * last_level_cache().size)
    threads = threads or os.cpu_count() or 1
    a = np.ones(n_bytes // 8, dtype=np.float64)
    parts = np.array_split(a, threads)

    def run():
        ts = [threading.Thread(target=np.add.reduce, args=(p,)) for p in parts]
        for t in ts:
            t.start()
        for t in ts:
            t.join()

    return n_bytes / best_of(run, 3) / 1e9


def transformers_child(path: str, mode: str, new_tokens: int, torch_threads: int) -> None:
    """Load ``path`` packed (through fastgguf: ``packed`` its exact path, ``packed-int`` its integer path)
    or dequantized (``dense``), time a 64-token prompt's forward and a greedy generate, print tokens/s
    and peak RSS."""
    import resource

    import torch
    import transformers

    from fastgguf.integrations import _transformers_kernels

    if torch_threads:
        torch.set_num_threads(torch_threads)
    if mode.startswith("packed"):
        _transformers_kernels.install(exact=mode == "packed")
    directory, name = os.path.split(path)
    t0 = time.perf_counter()
    model = transformers.AutoModelForCausalLM.from_pretrained(
        directory, gguf_file=name, dtype=torch.float32,
        quantization_config=transformers.GgufConfig(dequantize=mode == "dense"))
    load = time.perf_counter() - t0
    ids = torch.tensor([[1, 5, 77, 200, 3, 9, 42, 11]])
    prompt = torch.arange(1, 65).reshape(1, 64)
    with torch.inference_mode():
        model.generate(ids, max_new_tokens=2, min_new_tokens=2, do_sample=False)  # warm up
        prefill = best_of(lambda: model(prompt), 3)
        t0 = time.perf_counter()
        model.generate(ids, max_new_tokens=new_tokens, min_new_tokens=new_tokens, do_sample=False)
        elapsed = time.perf_counter() - t0
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # KiB on Linux
    threads = f"torch threads {torch.get_num_threads()}"
    print(f"{mode:10} {threads}  load {load:5.1f} s  64-token prompt {prefill * 1e3:6.0f} ms  "
          f"{new_tokens / elapsed:6.2f} tokens/s  peak RSS {rss:6.0f} MiB", flush=True)


def transformers_bench(directory: str, new_tokens: int) -> None:
    import subprocess
    import sys

    from lfm2_gguf import build_lfm2

    path = os.path.join(directory, "lfm2-q4_0.gguf")
    if not os.path.exists(path):
        os.makedirs(directory, exist_ok=True)
        build_lfm2(path, {"token_embd": T.Q8_0, "": T.Q4_0}, hidden=1024, intermediate=4096, vocab=32000,
                   layers=16)
    print(f"{path}: {os.path.getsize(path) / 1e6:.0f} MB")
    # torch's idle OpenMP threads spin for a while after each op and take the cores from fastgguf's
    # threads: the packed model is fastest with torch on one thread (fastgguf still uses all cores).
    for mode, torch_threads in (("packed", 1), ("packed-int", 1), ("packed", 0), ("dense", 0), ("dense", 1)):
        subprocess.run([sys.executable, __file__, "--transformers-child", mode, path, "--new-tokens", str(new_tokens),
                        "--torch-threads", str(torch_threads)], check=True)


def test_transformers_child_smoke(tmp_path, capsys):
    """Each mode of ``--transformers`` once, on a small LFM2 (the kernels uninstalled after)."""
    import sys

    pytest.importorskip("torch")
    pytest.importorskip("transformers.integrations.gguf.kernels")
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), os.pardir, "tests"))
    from fastgguf.integrations import _transformers_kernels

    from lfm2_gguf import build_lfm2

    path = tmp_path / "lfm2.gguf"
    build_lfm2(path, {"": T.Q4_0})
    try:
        for mode in ("packed", "packed-int", "dense"):
            transformers_child(str(path), mode, 2, 1)
            _transformers_kernels.uninstall()
    finally:
        _transformers_kernels.uninstall()
    out = capsys.readouterr().out
    assert [line.split()[0] for line in out.splitlines() if "tokens/s" in line] == ["packed", "packed-int", "dense"]


# ---------------------------------------------------------------------------------------------
# The table: batch x path (numpy, exact, integer) x CPU build, optionally against llama.cpp

PATHS = ("numpy", "exact", "integer", "repacked")
LLAMA_HEADS = 16  # head dim 128 at d=2048; the KV width 256 is 2 KV heads


def write_llama_f16(path: str, layers: int, d: int = 2048, ffn: int = 5632, kv: int = 256, vocab: int = 32000,
                    seed: int = 0) -> str:
    """A llama-architecture GGUF llama.cpp loads (F16 weights, F32 norms, no vocabulary: ``no_vocab``
    with ``llama.vocab_size`` dummy tokens), shaped as :func:`model_shapes`; random normal weights."""
    from fastgguf import GGUFValueType as V, GGUFWriter

    heads = max(1, d // 128)
    head_dim = d // heads
    rng = np.random.default_rng(seed)
    w = GGUFWriter(path)
    w.add("general.architecture", "llama")
    w.add("general.name", "fastgguf bench_matmul")
    w.add("general.file_type", 1, V.UINT32)
    for key, value in [("block_count", layers), ("context_length", 2048), ("embedding_length", d),
                       ("feed_forward_length", ffn), ("attention.head_count", heads),
                       ("attention.head_count_kv", max(1, kv // head_dim)), ("rope.dimension_count", head_dim),
                       ("vocab_size", vocab)]:
        w.add(f"llama.{key}", value, V.UINT32)
    w.add("llama.rope.freq_base", 10000.0, V.FLOAT32)
    w.add("llama.attention.layer_norm_rms_epsilon", 1e-5, V.FLOAT32)
    w.add("tokenizer.ggml.model", "no_vocab")

    def weight(name: str, n: int, k: int) -> None:
        w.add_tensor(name, (rng.standard_normal((n, k), dtype=np.float32) * 0.02).astype(np.float16))

    def norm(name: str) -> None:
        w.add_tensor(name, (1.0 + 0.1 * rng.standard_normal(d, dtype=np.float32)).astype(np.float32))

    weight("token_embd.weight", vocab, d)
    norm("output_norm.weight")
    weight("output.weight", vocab, d)
    for i in range(layers):
        norm(f"blk.{i}.attn_norm.weight")
        weight(f"blk.{i}.attn_q.weight", d, d)
        weight(f"blk.{i}.attn_k.weight", kv, d)
        weight(f"blk.{i}.attn_v.weight", kv, d)
        weight(f"blk.{i}.attn_output.weight", d, d)
        norm(f"blk.{i}.ffn_norm.weight")
        weight(f"blk.{i}.ffn_gate.weight", ffn, d)
        weight(f"blk.{i}.ffn_up.weight", ffn, d)
        weight(f"blk.{i}.ffn_down.weight", d, ffn)
    w.write()
    w.close()
    return path


def quantize_file(src: str, dst: str, ftype: str = "Q4_K_M") -> str:
    """``fastgguf quantize src dst --type Q4_K_M`` in a child process."""
    import subprocess
    import sys

    subprocess.run([sys.executable, "-m", "fastgguf", "quantize", src, dst, "--type", ftype], check=True,
                   stdout=subprocess.DEVNULL)
    return dst


def model_from_file(path: str):
    """(name, type, raw blocks) of every 2-D weight a forward multiplies with (not token_embd), copied out."""
    import fastgguf

    model = []
    with fastgguf.open(path) as f:
        for name, t in f.tensors.items():
            if len(t.shape) == 2 and name != "token_embd.weight":
                block_size, type_size = TYPE_TRAITS[t.type]
                model.append((name, t.type, np.array(t.raw).reshape(t.shape[0], t.shape[1] // block_size * type_size)))
    return model


def llama_bench(bin_dir: str, path: str, batches, threads: int = 2, reps: int = 3) -> dict[int, float]:
    """llama.cpp's ms per forward of ``b`` tokens: ``llama-bench -p B,... -n 1,16`` (pp for b > 1, tg16 for 1)."""
    import json
    import subprocess

    prompts = [b for b in batches if b > 1]
    cmd = [os.path.join(bin_dir, "llama-bench"), "-m", path, "-n", "1,16", "-t", str(threads), "-r", str(reps),
           "-o", "json"]
    if prompts:
        cmd[3:3] = ["-p", ",".join(map(str, prompts))]
    else:
        cmd[3:3] = ["-p", "0"]
    print("$", " ".join(cmd), flush=True)
    done = subprocess.run(cmd, check=True, capture_output=True, text=True)
    ms: dict[int, float] = {}
    for row in json.loads(done.stdout):
        n_prompt, n_gen, ts = row["n_prompt"], row["n_gen"], row["avg_ts"]
        if n_gen == 0 and n_prompt in prompts:
            ms[n_prompt] = n_prompt * 1e3 / ts
        elif n_prompt == 0:
            print(f"llama.cpp tg{n_gen}: {1e3 / ts:.1f} ms/token ({ts:.1f} +- {row['stddev_ts']:.1f} t/s)")
            if n_gen == 16 or 1 not in ms:
                ms[1] = 1e3 / ts
    for b in prompts:
        print(f"llama.cpp pp{b}: {ms[b]:.1f} ms per {b} tokens ({b * 1e3 / ms[b]:.1f} t/s)")
    return ms


#: A plain MUL_MAT case of ``test-backend-ops perf``: weight type, m (weight rows), n (rows of x), k, us per run.
_BACKEND_OPS_CASE = re.compile(r"MUL_MAT\(type_a=(\w+),type_b=f32,m=(\d+),n=(\d+),k=(\d+),bs=\[1,1\],nr=\[1,1\],"
                               r"per=\[0,1,2,3\],k_v=0,o=1,[^)]*\):\s+\d+ runs -\s+([\d.]+) us/run")


def _ggml_type_name(name: str) -> str:
    """A type as ggml's tools print it (``Q4_K`` or ``q4_k`` -> ``q4_K``): lower case but the
    K-quants' K; test-backend-ops matches its ``-p`` case-sensitively."""
    low = name.lower()
    return low[:-1] + "K" if low.endswith("_k") else low


def _backend_ops_filter(types, rows=None) -> str:
    """test-backend-ops' ``-p`` (a regular expression searched in each case's parameters): these weight
    types (any case) against float32 x, with ``rows`` (rows of x) only these counts."""
    pattern = f"type_a=({'|'.join(_ggml_type_name(t) for t in types)}),type_b=f32"
    return pattern + (f",m=[0-9]+,n=({'|'.join(str(n) for n in rows)})," if rows else "")


def backend_ops(bin_dir: str, types=("q4_K", "q6_K"), exact_up_to: int = 8, cpu: str | None = None,
                rows=None) -> list[dict]:
    """ggml's own MUL_MAT kernels against fastgguf.matmul on the same shapes and types, one thread each.

    Runs ``test-backend-ops perf -o MUL_MAT -b CPU -p "type_a=(...),type_b=f32"`` (its CPU backend
    uses half the cores: one thread here; ``rows``: only cases with these rows of x), then times
    fastgguf's integer path (ggml also rounds x to 8 bits, Q8_K) and, up to ``exact_up_to`` rows of x,
    its exact path on random blocks of each case's type and shape, on kernel build ``cpu`` (default:
    the one in use). Prints a markdown table; returns its rows."""
    import subprocess

    ops = os.path.join(bin_dir, "test-backend-ops")
    if not os.path.exists(ops):
        print(f"{ops}: not built, no per-op comparison")
        return []
    cmd = [ops, "perf", "-o", "MUL_MAT", "-b", "CPU", "-p", _backend_ops_filter(types, rows)]
    print("$", " ".join(cmd), flush=True)
    out = subprocess.run(cmd, capture_output=True, text=True).stdout
    cases = [(a, int(m), int(n), int(k), float(us)) for a, m, n, k, us in _BACKEND_OPS_CASE.findall(out)]
    before = _backend.cpu_path()
    try:
        if cpu is not None:
            _backend.set_cpu_path(cpu)
        return _backend_ops_rows(cases, exact_up_to)
    finally:
        _backend.set_cpu_path(before)


def _backend_ops_rows(cases, exact_up_to: int) -> list[dict]:
    print(f"fastgguf on its {_backend.cpu_path()} build")
    print("| type | m x k | n (rows of x) | ggml us | fastgguf integer us | x ggml | repacked us | x ggml "
          "| fastgguf exact us | x ggml |")
    print("| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
    rows, weights = [], {}
    rng = np.random.default_rng(5)
    for name, m, n, k, ggml_us in cases:
        qtype = GGMLType[name.upper()]
        if (qtype, m, k) not in weights:
            weights.clear()  # one weight at a time: the largest are hundreds of MB
            weights[qtype, m, k] = make_weight(qtype, m, k, rng)
            weights["repacked"] = repack(weights[qtype, m, k], qtype)
        w, rw = weights[qtype, m, k], weights["repacked"]
        x = rng.standard_normal((n, k), dtype=np.float32)
        t_int = timed(partial(matmul, x, w, qtype, exact=False, threads=1), 5, budget=5.0) * 1e6
        t_exact = timed(partial(matmul, x, w, qtype, threads=1), 3, budget=5.0) * 1e6 if n <= exact_up_to else None
        t_rp = timed(partial(matmul, x, rw, exact=False, threads=1), 5, budget=5.0) * 1e6 if rw.repacked else None
        exact_cols = f"{t_exact:.0f} | {ggml_us / t_exact:.2f}" if t_exact else "- | -"
        rp_cols = f"{t_rp:.0f} | {ggml_us / t_rp:.2f}" if t_rp else "- | -"
        print(f"| {name} | {m}x{k} | {n} | {ggml_us:.0f} | {t_int:.0f} | {ggml_us / t_int:.2f} | {rp_cols} | {exact_cols} |",
              flush=True)
        rows.append(dict(type=name, m=m, n=n, k=k, ggml_us=ggml_us, integer_us=t_int, repacked_us=t_rp, exact_us=t_exact))
    return rows


#: After a call, OpenBLAS's worker threads spin waiting for the next one (for about 0.1 s or more)
#: before they sleep: timed right after numpy, the next path shared the cores with them (the exact
#: path's batch-1 sweep measured 23.5-26 ms after numpy, 15.0 ms alone, 2-core AMD EPYC). Waited out.
_BLAS_SPIN_S = 1.0


def timed(fn, rounds: int, budget: float = 20.0) -> float:
    """Best of ``rounds`` after a warm-up, fewer rounds when one takes long (a total of about
    ``budget`` s; a warm-up longer than that is the measurement)."""
    t0 = time.perf_counter()
    fn()
    best = time.perf_counter() - t0
    n = min(rounds, int(budget / max(best, 1e-6)))
    if n == 0:
        return best
    best = float("inf")
    for _ in range(n):
        t0 = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t0)
    return best


def table(model, batches, paths, cpus, rounds: int, llama_ms: dict[int, float] | None, repro: str,
          last_head: bool = True) -> list[dict]:
    """Time a sweep per batch x path x CPU build and print the table (markdown); the rows as dicts.

    A sweep multiplies every weight with the batch's rows of x; with ``last_head`` the output head
    only with the last row, as a prompt's forward (llama-bench's pp) does."""
    q_bytes = sum(raw.nbytes for _n, _q, raw in model)
    dense = dense_weights(model) if "numpy" in paths else None
    kinds = sorted({q.name for _n, q, _r in model})
    print(f"weights: {len(model)} matrices, {q_bytes / 1e6:.0f} MB of blocks ({', '.join(kinds)}); "
          f"{dequant.get_num_threads()} threads; the output head times "
          + ("the last row of x only (as llama-bench's pp)" if last_head else "every row of x"))
    print("| batch | path | CPU build | ms / sweep | GB/s of blocks | x numpy | x llama.cpp | command |")
    print("| ---: | --- | --- | ---: | ---: | ---: | ---: | --- |")
    before = _backend.cpu_path()
    rows = []
    packed: dict = {}
    try:
        for batch in batches:
            xs = inputs(model, batch)
            t_np = None
            for path in paths:
                for cpu in (["-"] if path == "numpy" else cpus):
                    t = _sweep_time(model, dense, packed, xs, path, cpu, rounds, last_head)
                    if path == "numpy":
                        t_np = t
                    cmd = _row_command(repro, batch, path, cpu)
                    x_np = f"{t_np / t:.2f}" if t_np else "-"
                    x_ll = f"{llama_ms[batch] / 1e3 / t:.2f}" if llama_ms and batch in llama_ms else "-"
                    print(f"| {batch} | {path} | {cpu} | {t * 1e3:.1f} | {q_bytes / t / 1e9:.1f} | {x_np} | {x_ll} | "
                          f"`{cmd}` |", flush=True)
                    rows.append(dict(batch=batch, path=path, cpu=cpu, seconds=t))
            if llama_ms and batch in llama_ms:
                what = "tg16, per token" if batch == 1 else f"pp{batch}"
                print(f"| {batch} | llama.cpp ({what}) | its own | {llama_ms[batch]:.1f} | "
                      f"{q_bytes / llama_ms[batch] * 1e3 / 1e9:.1f} | - | 1.00 | (see llama-bench above) |", flush=True)
    finally:
        _backend.set_cpu_path(before)
    return rows


def _row_command(repro: str, batch: int, path: str, cpu: str) -> str:
    """The command that reproduces one row of the table (``cpu`` "-" for numpy's)."""
    env = "" if cpu == "-" else f"FASTGGUF_CPU={cpu} "
    return f"{env}{repro} --batches {batch} --paths {path}" + ("" if cpu == "-" else f" --cpu {cpu}")


def _sweep_time(model, dense, packed: dict, xs, path: str, cpu: str, rounds: int, last_head: bool) -> float:
    """Seconds of the best sweep of ``path`` ("numpy", "exact", "integer", "repacked") on kernel build
    ``cpu`` (left set); ``packed`` caches the repacked weights per build."""
    if path == "numpy":
        t = timed(partial(sweep_numpy, dense, xs, last_head), rounds)
        time.sleep(_BLAS_SPIN_S)
        return t
    _backend.set_cpu_path(cpu)
    if path == "repacked":
        if cpu not in packed:
            packed[cpu] = repacked_model(model)
        return timed(partial(sweep_repacked, packed[cpu], xs, last_head=last_head), rounds)
    return timed(partial(sweep_fastgguf, model, xs, path == "exact", last_head=last_head), rounds)


def paired_table(model, batches, paths, cpus, rounds: int, pairs: int, llama_run, repro: str,
                 last_head: bool = True) -> list[dict]:
    """The table's columns measured ``pairs`` times over, each round in one minute: llama.cpp
    (``llama_run()``: its ms per batch, or None), numpy, then every path and build. On a shared
    machine whose speed moves from minute to minute, columns measured apart do not compare; within a
    round they do. Prints the median ms of each column and the median (min-max) of the per-round
    ratios; returns a dict per row with the rounds' seconds."""
    q_bytes = sum(raw.nbytes for _n, _q, raw in model)
    dense = dense_weights(model) if "numpy" in paths else None
    packed: dict = {}
    cols = [(p, c) for p in paths for c in (["-"] if p == "numpy" else cpus)]
    secs: dict = {(b, p, c): [] for b in batches for p, c in cols}
    llama: dict = {b: [] for b in batches}
    xs_of = {b: inputs(model, b) for b in batches}
    before = _backend.cpu_path()
    try:
        for r in range(pairs):
            ms = llama_run() if llama_run else None
            for b in batches:
                llama[b].append(ms[b] / 1e3 if ms and b in ms else None)
                for p, c in cols:
                    secs[b, p, c].append(_sweep_time(model, dense, packed, xs_of[b], p, c, rounds, last_head))
            print(f"round {r + 1}/{pairs}: " + ", ".join(
                f"b{b} {p}{'' if c == '-' else '/' + c} {secs[b, p, c][-1] * 1e3:.1f} ms"
                for b in batches for p, c in cols) + "".join(
                f", b{b} llama.cpp {llama[b][-1] * 1e3:.1f} ms" for b in batches if llama[b][-1]), flush=True)
    finally:
        _backend.set_cpu_path(before)

    def ratio(num, den) -> str:
        rs = [n / d for n, d in zip(num, den) if n and d]
        return f"{np.median(rs):.2f} ({min(rs):.2f}-{max(rs):.2f})" if rs else "-"

    print(f"{pairs} rounds; medians of each column and of the per-round ratios (min-max)")
    print("| batch | path | CPU build | ms / sweep | GB/s of blocks | x numpy | x llama.cpp | command |")
    print("| ---: | --- | --- | ---: | ---: | ---: | ---: | --- |")
    rows = []
    for b in batches:
        for p, c in cols:
            t = float(np.median(secs[b, p, c]))
            x_np = ratio(secs[b, "numpy", "-"], secs[b, p, c]) if "numpy" in paths else "-"
            print(f"| {b} | {p} | {c} | {t * 1e3:.1f} | {q_bytes / t / 1e9:.1f} | {x_np} | "
                  f"{ratio(llama[b], secs[b, p, c])} | `{_row_command(repro, b, p, c)}` |")
            rows.append(dict(batch=b, path=p, cpu=c, seconds=secs[b, p, c]))
        if any(llama[b]):
            t = float(np.median([v for v in llama[b] if v]))
            what = "tg16, per token" if b == 1 else f"pp{b}"
            print(f"| {b} | llama.cpp ({what}) | its own | {t * 1e3:.1f} | {q_bytes / t / 1e9:.1f} | - | 1.00 | "
                  "(llama-bench, each round) |")
    return rows


#: The weight types whose ggml MUL_MAT cases the table's per-op comparison runs, per file type (others:
#: Q4_K and Q6_K, a Q4_K_M file's).
_BACKEND_OPS_TYPES = {"Q8_0": ("q8_0",), "Q4_0": ("q4_0", "q8_0"), "Q4_1": ("q4_1",), "Q5_0": ("q5_0",),
                      "Q5_1": ("q5_1",), "IQ4_NL": ("iq4_nl",), "MXFP4_MOE": ("mxfp4",),
                      "Q5_K_M": ("q5_K", "q6_K"), "Q5_K_S": ("q5_K",), "IQ4_XS": ("iq4_xs",), "Q3_K_M": ("q3_K",),
                      "Q2_K": ("q2_K",)}


def table_main(args) -> None:
    batches = [int(b) for b in args.batches.split(",")]
    paths = [p for p in args.paths.split(",") if p]
    for p in paths:
        if p not in PATHS:
            raise SystemExit(f"unknown path {p!r}: one of {', '.join(PATHS)}")
    cpus = args.cpu.split(",") if args.cpu else list(_backend.available_cpu_paths())
    repro = f"PYTHONPATH=src python benchmarks/bench_matmul.py --table --layers {args.layers}" + (
        " --every-row-head" if args.every_row_head else "")
    llama_ms = None
    if args.llama_cpp or args.ftype:  # a llama GGUF file's weights (without --llama-cpp: no llama.cpp run)
        ftype = args.ftype or "Q4_K_M"
        os.makedirs(args.dir, exist_ok=True)
        q_path = os.path.join(args.dir, f"llama-{args.layers}l-{ftype.lower()}.gguf")
        if not os.path.exists(q_path):
            f16 = write_llama_f16(os.path.join(args.dir, f"llama-{args.layers}l-f16.gguf"), args.layers)
            quantize_file(f16, q_path, ftype)
            os.remove(f16)
        print(f"{q_path}: {os.path.getsize(q_path) / 1e6:.0f} MB, {ftype} by fastgguf quantize")
        model = model_from_file(q_path)
        repro += (f" --llama-cpp {args.llama_cpp}" if args.llama_cpp else "") + f" --dir {args.dir}" + (
            f" --ftype {ftype}" if ftype != "Q4_K_M" else "")
        if args.llama_cpp and not args.no_llama_run:
            if args.paired:
                llama_ms = partial(llama_bench, args.llama_cpp, q_path, batches)  # run in each round
            else:
                llama_ms = llama_bench(args.llama_cpp, q_path, batches)
            if not args.no_backend_ops:
                backend_ops(args.llama_cpp, types=_BACKEND_OPS_TYPES.get(ftype, ("q4_K", "q6_K")), cpu=cpus[0])
    else:
        model = build_model(model_shapes(args.layers))
    print(f"read bandwidth (numpy sum, all threads): {read_bandwidth():.1f} GB/s")
    if args.paired:
        repro += f" --paired {args.paired}"
        paired_table(model, batches, paths, cpus, args.rounds, args.paired, llama_ms, repro,
                     last_head=not args.every_row_head)
    else:
        table(model, batches, paths, cpus, args.rounds, llama_ms, repro, last_head=not args.every_row_head)


def _per_call(fn, min_time: float = 0.3) -> float:
    """Median seconds per call of ``fn`` over batches of calls lasting about ``min_time`` in all."""
    fn()
    n = 1
    while True:
        t0 = time.perf_counter()
        for _ in range(n):
            fn()
        if time.perf_counter() - t0 > min_time / 5:
            break
        n *= 2
    runs = []
    for _ in range(5):
        t0 = time.perf_counter()
        for _ in range(n):
            fn()
        runs.append((time.perf_counter() - t0) / n)
    return sorted(runs)[2]


def breakdown() -> None:
    """Where the time goes at batch 1: fixed cost per call, threads, per type and size, in and out of cache."""
    rng = np.random.default_rng(0)
    k = 2048
    x1 = rng.standard_normal(k, dtype=np.float32)
    tiny = make_weight(T.Q8_0, 1, 32, rng)
    xt = x1[:32]
    print("fixed cost per call (1x32 Q8_0 weight, 1 thread):")
    for exact in (True, False):
        t = _per_call(partial(matmul, xt, tiny, T.Q8_0, exact=exact, threads=1))
        print(f"  matmul exact={exact}: {t * 1e6:6.1f} us")
    noop = lambda: None  # noqa: E731
    print(f"  run_chunks of 2 no-op tasks (Python's pool round trip): {_per_call(lambda: _backend.run_chunks([noop, noop])) * 1e6:6.1f} us")
    kernels = _backend.kernels()
    if kernels.has_thread_pool():
        # two blocks as two tasks on 2 threads, against both on 1: what the kernels' own pool adds to a call
        blocks, floats = make_weight(T.Q8_0, 1, 64, rng).reshape(-1), np.empty(64, np.float32)
        one = _per_call(lambda: kernels.dequantize_into(blocks, floats, int(T.Q8_0), None, 0, False, False, 1, 32))
        two = _per_call(lambda: kernels.dequantize_into(blocks, floats, int(T.Q8_0), None, 0, False, False, 2, 32))
        print(f"  the kernels' own pool, 2 tiny tasks on 2 threads vs 1: {(two - one) * 1e6:6.1f} us more")
    print("batch 1, per weight: us per call and GB/s of blocks, 1 thread vs 2 threads "
          "(the same call repeated: weights up to a few MB stay in L2/L3, 32000 rows do not; F32: the FMA chain alone)")
    print(f"{'type':6} {'N x K':>11} {'MB':>6} | {'exact 1t':>9} {'GB/s':>5} {'exact 2t':>9} {'GB/s':>5} {'2t/1t':>5} | "
          f"{'int 1t':>9} {'GB/s':>5} {'int 2t':>9} {'GB/s':>5} {'2t/1t':>5} | {'ns/elem ex':>10} {'int':>5}")
    for qtype in (T.F32, T.Q8_0, T.Q4_0, T.Q4_K, T.Q6_K):
        for n in (32, 256, 2048, 5632, 32000):
            if qtype == T.F32 and n > 256:
                continue
            w = make_weight(qtype, n, k, rng)
            cols = []
            for exact in (True, False):
                if not exact and qtype == T.F32:
                    cols.append(f"{'-':>9} {'-':>5} {'-':>9} {'-':>5} {'-':>5}")
                    continue
                t1 = _per_call(partial(matmul, x1, w, qtype, exact=exact, threads=1))
                t2 = _per_call(partial(matmul, x1, w, qtype, exact=exact, threads=2))
                cols.append(f"{t1 * 1e6:9.0f} {w.nbytes / t1 / 1e9:5.1f} {t2 * 1e6:9.0f} {w.nbytes / t2 / 1e9:5.1f} "
                            f"{t1 / t2:5.2f}")
                if exact:
                    ns_ex = t1 / (n * k) * 1e9
                else:
                    ns_int = t1 / (n * k) * 1e9
            ns = f"{ns_ex:10.3f} " + (f"{ns_int:5.3f}" if qtype != T.F32 else f"{'-':>5}")
            print(f"{qtype.name:6} {f'{n}x{k}':>11} {w.nbytes / 1e6:6.2f} | {cols[0]} | {cols[1]} | {ns}", flush=True)


def _thread_ms(fn, rounds: int = 7, min_time: float = 0.02) -> float:
    """Best CPU time of this thread (``time.thread_time``: other jobs on the machine do not count)
    per call of ``fn``, in ms; calls repeated until a round lasts ``min_time``."""
    fn()
    n = 1
    while True:
        t0 = time.thread_time()
        for _ in range(n):
            fn()
        if time.thread_time() - t0 >= min_time:
            break
        n *= 2
    best = float("inf")
    for _ in range(rounds):
        t0 = time.thread_time()
        for _ in range(n):
            fn()
        best = min(best, (time.thread_time() - t0) / n)
    return best * 1e3


def int_types(only: str = "") -> list:
    """The types with an integer path (``exact=False``) in this build, or those of them named in ``only`` (comma-separated)."""
    from fastgguf import _backend

    kernels = _backend.kernels()
    types = [qtype for qtype in dequant.supported_types() if kernels.has_int_dot(int(qtype))]
    if only:
        names = {name.strip().upper() for name in only.split(",")}
        types = [qtype for qtype in types if qtype.name in names]
    return types


def per_weight(batches, rounds: int, types) -> None:
    """One thread, one weight per type (N x 2048; Q4_K as ffn_up 5632 x 2048): ms of CPU time per
    call, exact and integer paths, per batch."""
    rng = np.random.default_rng(0)
    k = 2048
    print(f"cpu path {dequant.cpu_path()}; CPU time of one thread (time.thread_time), best of {rounds}")
    print("| type | N x K | batch | exact ms | integer ms | exact / integer | integer ns per weight and row |")
    print("| --- | ---: | ---: | ---: | ---: | ---: | ---: |")
    for qtype in types:
        n = 5632 if qtype == T.Q4_K else 2048
        w = make_weight(qtype, n, k, rng)
        for batch in batches:
            x = rng.standard_normal((batch, k), dtype=np.float32)
            t_exact = _thread_ms(partial(matmul, x, w, qtype, exact=True, threads=1), rounds)
            t_int = _thread_ms(partial(matmul, x, w, qtype, exact=False, threads=1), rounds)
            print(f"| {qtype.name} | {n}x{k} | {batch} | {t_exact:.2f} | {t_int:.2f} | {t_exact / t_int:.2f} | "
                  f"{t_int * 1e6 / (n * k * batch):.3f} |", flush=True)


def int_error(types, draws: int = 4) -> None:
    """Relative error of the integer path vs float64 ``x @ dequantize(W).T``: weights quantized by
    fastgguf.quantize from Gaussians (512 x 2048), 8 rows of x per draw, three kinds of x."""
    from fastgguf import quantize

    rng = np.random.default_rng(42)
    n, k = 512, 2048
    print(f"| x | type | relative error (min-max over {draws} draws) |")
    print("| --- | --- | ---: |")
    for kind in ("Gaussian", "SiLU(gate) * up", "Gaussian, 6 channels x 20"):
        for qtype in types:
            imatrix = np.ones(k, np.float32) if qtype in (T.IQ2_XXS, T.IQ2_XS, T.IQ1_S, T.IQ1_M) else None  # as ggml
            raw = quantize((rng.standard_normal((n, k)) * 0.02).astype(np.float32), qtype, imatrix=imatrix)
            w = dequantize(raw, qtype, (n, k)).astype(np.float64)
            errs = []
            for _ in range(draws):
                if kind.startswith("SiLU"):
                    g, u = rng.standard_normal((8, k)), rng.standard_normal((8, k))
                    x = (g / (1 + np.exp(-g)) * u).astype(np.float32)
                else:
                    x = rng.standard_normal((8, k)).astype(np.float32)
                    if "channels" in kind:
                        x[:, rng.choice(k, 6, replace=False)] *= 20
                ref = x.astype(np.float64) @ w.T
                y = matmul(x, raw, qtype, exact=False)
                errs.append(float(np.linalg.norm(y - ref) / np.linalg.norm(ref)))
            print(f"| {kind} | {qtype.name} | {min(errs):.2e}-{max(errs):.2e} |", flush=True)


#: A small mixture of experts (Qwen3-30B-A3B's ffn_up_exps: 128 experts of 768 x 2048, 8 per token).
MOE = dict(experts=128, n=768, k=2048, used=8)


def per_expert_loop(x: np.ndarray, w: np.ndarray, ids: np.ndarray, qtype: GGMLType, exact: bool) -> np.ndarray:
    """matmul_id's products as one fastgguf.matmul per expert in use, what matmul_id did until it
    ran them all in one kernel call: each expert's (token, slot) rows gathered, multiplied, put back."""
    t, used = ids.shape
    flat_ids, flat_x = ids.reshape(-1), np.repeat(x, used, axis=0)
    out = np.empty((t * used, w.shape[1]), np.float32)
    for e in np.unique(flat_ids):
        sel = np.nonzero(flat_ids == e)[0]
        out[sel] = matmul(flat_x[sel], w[e], qtype, exact=exact)
    return out.reshape(t, used, -1)


def best_alternating(fns, rounds: int) -> list[float]:
    """Best seconds of each of ``fns`` over ``rounds`` rounds, the calls alternating within a round
    (this VM's speed moves between runs; alternating keeps the comparison fair)."""
    best = [float("inf")] * len(fns)
    for _ in range(rounds):
        for i, fn in enumerate(fns):
            t0 = time.perf_counter()
            fn()
            best[i] = min(best[i], time.perf_counter() - t0)
    return best


def moe(tokens, rounds: int, config: dict = MOE, qtype: GGMLType = T.Q4_K) -> list[tuple]:
    """matmul_id against a matmul per expert, both paths (and the integer path on
    :func:`fastgguf.repack`'s experts where this CPU has a tile kernel), per number of tokens: the
    two alternate round by round (best of ``rounds`` each), after checking that they give the same
    bits."""
    from fastgguf import matmul_id

    rng = np.random.default_rng(0)
    n_exp, n, k, used = config["experts"], config["n"], config["k"], config["used"]
    w = make_weight(qtype, n_exp * n, k, rng).reshape(n_exp, n, -1)
    print(f"cpu path {dequant.cpu_path()}, {dequant.get_num_threads()} threads; {n_exp} experts of {n}x{k} "
          f"{qtype.name}, {used} per token; best of {rounds}, the two alternating")
    print("| path | tokens | experts in use | matmul_id ms | a matmul per expert ms | ratio | "
          "matmul_id ns per weight and row |")
    print("| --- | ---: | ---: | ---: | ---: | ---: | ---: |")
    rows = []
    rw = repack(w, qtype)
    for path in ("exact", "integer") + (("repacked",) if rw.repacked else ()):
        exact = path == "exact"
        for t in tokens:
            x = rng.standard_normal((t, k), dtype=np.float32)
            ids = np.stack([rng.choice(n_exp, used, replace=False) for _ in range(t)])
            grouped = partial(matmul_id, x, rw if path == "repacked" else w, ids, qtype, exact=exact)
            looped = partial(per_expert_loop, x, w, ids, qtype, exact)
            if not np.array_equal(grouped(), looped()):
                raise AssertionError("matmul_id and the per-expert products differ")
            best = best_alternating((grouped, looped), rounds)
            row = (path, t, len(np.unique(ids)), best[0] * 1e3, best[1] * 1e3)
            rows.append(row)
            print(f"| {row[0]} | {t} | {row[2]} | {row[3]:.2f} | {row[4]:.2f} | {best[1] / best[0]:.2f} | "
                  f"{best[0] * 1e9 / (t * used * n * k):.3f} |", flush=True)
    return rows


def repacked(batches, rounds: int, types, n: int = 14336, k: int = 4096, threads: int | None = None) -> list[tuple]:
    """The integer path on :func:`fastgguf.repack`'s tiles against the original blocks, per type and
    rows of x, in alternating calls (best of ``rounds`` each), after checking the bits agree; and
    the time of the repack itself."""
    rng = np.random.default_rng(0)
    print(f"cpu path {dequant.cpu_path()}, tile kernel {_backend.kernels().repacked_kernel(int(T.Q4_0))}, "
          f"{threads or dequant.get_num_threads()} threads; {n} x {k}; best of {rounds}, the two alternating")
    print("| type | rows of x | blocks ms | tiles ms | x blocks | repack ms (once) |")
    print("| --- | ---: | ---: | ---: | ---: | ---: |")
    rows = []
    for qtype in types:
        w = make_weight(qtype, n, k, rng)
        t0 = time.perf_counter()
        rw = repack(w, qtype, threads=threads)
        t_repack = time.perf_counter() - t0
        if not rw.repacked:
            print(f"| {qtype.name} | - | - | - | - | not repacked here |")
            continue
        for m in batches:
            x = rng.standard_normal((m, k), dtype=np.float32)
            blocks = partial(matmul, x, w, qtype, exact=False, threads=threads)
            tiles = partial(matmul, x, rw, exact=False, threads=threads)
            if not np.array_equal(blocks().view(np.uint32), tiles().view(np.uint32)):
                raise AssertionError(f"{qtype.name}: the tiles and the blocks differ")
            best = best_alternating((blocks, tiles), rounds)
            rows.append((qtype.name, m, best[0] * 1e3, best[1] * 1e3))
            print(f"| {qtype.name} | {m} | {best[0] * 1e3:.2f} | {best[1] * 1e3:.2f} | {best[0] / best[1]:.2f} | "
                  f"{t_repack * 1e3:.1f} |", flush=True)
    return rows


def test_repacked_smoke(capsys):
    """The tiles-against-blocks comparison on small weights: the smoke only (it checks the bits)."""
    rows = repacked([1, 3], 1, [T.Q4_0, T.IQ3_S], n=40, k=256)
    tiled = _repacks_here(T.Q4_0)
    assert [(r[0], r[1]) for r in rows] == ([("Q4_0", 1), ("Q4_0", 3)] if tiled else [])
    assert "| IQ3_S | - |" in capsys.readouterr().out  # no layout: nothing repacked


def test_moe_smoke(capsys):
    """The MoE comparison on a few small experts: the smoke only (it checks the two agree)."""
    rows = moe([1, 5], 1, dict(experts=6, n=16, k=256, used=2), qtype=T.MXFP4)
    assert [(r[0], r[1]) for r in rows][:4] == [("exact", 1), ("exact", 5), ("integer", 1), ("integer", 5)]
    assert len(rows) == (6 if _repacks_here(T.MXFP4) else 4)
    assert "| integer | 5 |" in capsys.readouterr().out


def test_per_weight_and_int_error_smoke(capsys):
    """--per-weight and --int-error for one type (the smoke only); --only picks among this build's integer types."""
    assert int_types("q4_1, Q6_K") == [T.Q4_1, T.Q6_K] and T.F16 not in int_types()
    per_weight([1], 1, [T.Q4_1])
    int_error([T.Q4_1], draws=1)
    out = capsys.readouterr().out
    assert "| Q4_1 | 2048x2048 | 1 |" in out and "| Gaussian, 6 channels x 20 | Q4_1 |" in out


def width(types, rounds: int, n: int = 4096, k: int = 4096, n_bytes: int | None = None) -> list[tuple]:
    """One row of x against weights read from memory (copies of one n x k weight past 4x the
    last-level cache, or ``n_bytes``), all threads, GB/s of blocks: the avx512 build's kernels for
    CPUs that run 512-bit operations whole ("wide": two weight rows per 512-bit vector) and for those
    that split them ("narrow", the choice on AMD Zen 4), and the avx2 build, alternating in turn so
    that each column sees the same minutes. Checks that all give the same bits; returns the rows."""
    variants = [(path, wide) for path in ("avx512", "avx2") if path in dequant.available_cpu_paths()
                for wide in ((True, False) if path == "avx512" else (None,))]
    names = [path if wide is None else f"{path} {'wide' if wide else 'narrow'}" for path, wide in variants]
    n_bytes = n_bytes or LLC_FACTOR * last_level_cache().size
    print(f"one row of x, weights from memory, {dequant.get_num_threads()} threads, GB/s of blocks; "
          f"read bandwidth (numpy sum): {read_bandwidth():.1f} GB/s")
    print("| type | path | " + " | ".join(names) + " |")
    print("| --- | --- |" + " ---: |" * len(names))
    rows, before = [], _backend.cpu_path()
    wide_kernels = dequant.kernel_modules()["avx512"] if "avx512" in dequant.available_cpu_paths() else None
    wide_before = wide_kernels._set_wide(True) if wide_kernels is not None else None
    rng = np.random.default_rng(7)
    try:
        for qtype in types:
            w0 = make_weight(qtype, n, k, rng)
            ws = [w0.copy() for _ in range(max(1, -(-n_bytes // w0.nbytes)))]
            x = rng.standard_normal((1, k), dtype=np.float32)
            for exact in (True, False):
                best, outs = [float("inf")] * len(variants), []
                for r in range(rounds):
                    for i, (path, wide) in enumerate(variants):
                        _backend.set_cpu_path(path)
                        if wide is not None:
                            _backend.kernels()._set_wide(wide)
                        t0 = time.perf_counter()
                        ys = [matmul(x, w, qtype, exact=exact) for w in ws]
                        best[i] = min(best[i], time.perf_counter() - t0)
                        if r == 0:
                            outs.append(ys[0])
                for name, y in zip(names, outs):
                    np.testing.assert_array_equal(y, outs[0], err_msg=name)
                rate = [sum(w.nbytes for w in ws) / t / 1e9 for t in best]
                print(f"| {qtype.name} | {'exact' if exact else 'integer'} | " + " | ".join(f"{g:.1f}" for g in rate) + " |",
                      flush=True)
                rows.append((qtype.name, exact, *rate))
    finally:
        if wide_kernels is not None:
            wide_kernels._set_wide(wide_before)
        _backend.set_cpu_path(before)
    return rows


def test_width_smoke(capsys):
    """--width on small weights: the smoke only (it checks the bits of every variant)."""
    rows = width([T.Q4_0], 1, n=16, k=256, n_bytes=1 << 16)
    variants = 3 if "avx512" in dequant.available_cpu_paths() else 1 if "avx2" in dequant.available_cpu_paths() else 0
    assert [len(r) for r in rows] == [2 + variants] * 2
    assert "| Q4_0 | integer |" in capsys.readouterr().out


def _cols(t: float, t_np: float, q_bytes: int) -> str:
    """ms, numpy's time / t, GB/s of quantized weights."""
    return f"{t * 1e3:8.1f} {t_np / t:5.2f} {q_bytes / t / 1e9:5.1f}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--layers", type=int, default=8)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--types", action="store_true", help="one 4096x4096 weight per type instead of the model")
    parser.add_argument("--all-only", action="store_true", help="only the whole model's sweep, not per type")
    parser.add_argument("--transformers", action="store_true", help="transformers generate, packed vs dequantized")
    parser.add_argument("--dir", default="/tmp/fgg_lfm2",
                        help="where --transformers (and --llama-cpp: default /tmp/fgg_llama) keeps its model")
    parser.add_argument("--new-tokens", type=int, default=32)
    parser.add_argument("--table", action="store_true",
                        help="the table: batch x path x CPU build (implied by --llama-cpp)")
    parser.add_argument("--batches", default="1,8,64,512", help="batch sizes of the table (comma-separated)")
    parser.add_argument("--paths", default=",".join(PATHS), help="paths of the table: numpy,exact,integer,repacked (the integer path on fastgguf.repack's weights)")
    parser.add_argument("--cpu", default="", help="kernel builds of the table (default: every one this CPU runs)")
    parser.add_argument("--llama-cpp", metavar="BUILD_BIN_DIR", default="",
                        help="write the model as a llama GGUF (Q4_K_M by fastgguf quantize, kept in --dir), sweep "
                             "its weights and run llama.cpp's llama-bench (and test-backend-ops if built) on it")
    parser.add_argument("--every-row-head", action="store_true",
                        help="--table: the output head times every row of x too (the sweep of tables before 2026-11-26)")
    parser.add_argument("--backend-ops", metavar="TYPES", default="",
                        help="with --llama-cpp: only test-backend-ops' per-op comparison, for these weight types "
                             "(comma-separated) and --batches rows of x, on --cpu (one build) or the one in use")
    parser.add_argument("--no-backend-ops", action="store_true",
                        help="with --llama-cpp: skip test-backend-ops' per-op comparison (about 4 min here)")
    parser.add_argument("--ftype", default=None,
                        help="--table / --llama-cpp: sweep the model as a llama GGUF of this file type (written by "
                             "fastgguf quantize, kept in --dir; with --llama-cpp the default is Q4_K_M); without "
                             "--llama-cpp, llama.cpp does not run")
    parser.add_argument("--paired", type=int, default=0, metavar="N",
                        help="with --table: N rounds, each running llama.cpp (if given), numpy and every path in "
                             "one minute; medians of the columns and of the per-round ratios")
    parser.add_argument("--no-llama-run", action="store_true", help="with --llama-cpp: the file's weights, no llama-bench")
    parser.add_argument("--breakdown", action="store_true",
                        help="where the time goes at batch 1: per-call cost, 1 vs 2 threads, per type and size")
    parser.add_argument("--per-weight", action="store_true",
                        help="CPU time of one thread per weight and batch (--batches), exact vs integer path")
    parser.add_argument("--moe", action="store_true",
                        help="matmul_id over 128 experts (8 per token) against a matmul per expert, per --batches tokens "
                             "(experts of type --moe-type)")
    parser.add_argument("--moe-type", default="Q4_K", help="with --moe: the experts' type (Q4_K; MXFP4 as gpt-oss)")
    parser.add_argument("--repacked", action="store_true",
                        help="the integer path on fastgguf.repack's tiles against the original blocks, per type "
                             "(--only) and --batches rows of x, 14336 x 4096, on --threads threads")
    parser.add_argument("--threads", type=int, default=0, help="with --repacked: threads (0: all)")
    parser.add_argument("--int-error", action="store_true",
                        help="relative error of the integer path per type on quantized Gaussian weights")
    parser.add_argument("--width", action="store_true",
                        help="one row of x from memory per type (--only), the avx512 build's kernels for CPUs that run "
                             "512-bit operations whole and for those that split them (AMD Zen 4), and the avx2 build")
    parser.add_argument("--only", default="", help="with --types / --per-weight / --int-error / --repacked: these types (comma-separated)")
    parser.add_argument("--torch-threads", type=int, default=0, help=argparse.SUPPRESS)
    parser.add_argument("--transformers-child", nargs=2, metavar=("MODE", "PATH"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.transformers_child:
        transformers_child(args.transformers_child[1], args.transformers_child[0], args.new_tokens, args.torch_threads)
        return
    if args.transformers:
        transformers_bench(args.dir, args.new_tokens)
        return
    if args.breakdown:
        print(f"cpu path {dequant.cpu_path()}")
        breakdown()
        return
    if args.int_error:
        int_error(int_types(args.only))
        return
    if args.per_weight:
        per_weight([int(b) for b in args.batches.split(",")], args.rounds, int_types(args.only))
        return
    if args.width:
        width(int_types(args.only or "Q4_0,Q4_1,Q5_0,MXFP4,IQ4_NL,Q4_K,Q5_K,Q6_K"), args.rounds)
        return
    if args.repacked:
        repacked([int(b) for b in args.batches.split(",")], args.rounds,
                 int_types(args.only or "Q4_0,Q8_0,Q5_0,Q4_1,Q5_1,IQ4_NL,MXFP4"), threads=args.threads or None)
        return
    if args.moe:
        moe([int(b) for b in args.batches.split(",")], args.rounds, qtype=GGMLType[args.moe_type.upper()])
        return
    if args.backend_ops:
        if not args.llama_cpp:
            parser.error("--backend-ops needs --llama-cpp BUILD_BIN_DIR")
        backend_ops(args.llama_cpp, types=tuple(args.backend_ops.split(",")),
                    cpu=args.cpu or None, rows=[int(b) for b in args.batches.split(",")])
        return
    if args.table or args.llama_cpp:
        if args.dir == "/tmp/fgg_lfm2":
            args.dir = "/tmp/fgg_llama"
        table_main(args)
        return
    print(f"cpu path {dequant.cpu_path()}, {dequant.get_num_threads()} threads")
    print(f"read bandwidth (numpy sum, all threads): {read_bandwidth():.1f} GB/s")
    if args.types:
        types = [t for t in dequant.supported_types() if t not in (T.I8, T.I16, T.I32, T.I64, T.F64, T.Q8_1, T.Q8_K)]
        if args.only:
            types = [t for t in types if t.name in args.only.upper().split(",")]
        groups = {t.name: [(t.name, t, 4096, 4096)] for t in types}
    else:
        shapes = model_shapes(args.layers)
        groups = {}
        for s in shapes:
            groups.setdefault(s[1].name, []).append(s)
        groups["all"] = shapes
    if args.all_only and not args.types:
        groups = {"all": groups["all"]}
    vnni = bool(_backend.kernels().vnni_usable())
    print(f"int path: maddubs, and VNNI {'too' if vnni else 'not available here'}")
    print(f"{'weights':8} {'MB q':>6} {'MB f32':>6} {'batch':>5} {'numpy ms':>8} | {'float ms':>8} {'x':>5} {'GB/s':>5} | "
          f"{'maddubs':>8} {'x':>5} {'GB/s':>5} | {'vnni ms':>8} {'x':>5} {'GB/s':>5} {'v/m':>5}")
    for label, shapes in groups.items():
        model = build_model(shapes)
        q_bytes = sum(raw.nbytes for _n, _q, raw in model)
        dense = dense_weights(model)
        f_bytes = sum(w.nbytes for _name, w in dense)
        for batch in (1, 8):
            xs = inputs(model, batch)
            t_np = best_of(partial(sweep_numpy, dense, xs), args.rounds)
            time.sleep(_BLAS_SPIN_S)
            cols = partial(_cols, t_np=t_np, q_bytes=q_bytes)
            t_f = best_of(partial(sweep_fastgguf, model, xs, True), args.rounds)
            t_m = best_of(partial(sweep_int, model, xs, False), args.rounds)
            line = (f"{label:8} {q_bytes / 1e6:6.0f} {f_bytes / 1e6:6.0f} {batch:5d} {t_np * 1e3:8.1f} | {cols(t_f)} | "
                    f"{cols(t_m)} | ")
            if vnni:
                t_v = best_of(partial(sweep_int, model, xs, True), args.rounds)
                line += f"{cols(t_v)} {t_m / t_v:5.2f}"
            else:
                line += f"{'-':>8} {'-':>5} {'-':>5} {'-':>5}"
            print(line, flush=True)


if __name__ == "__main__":
    main()
