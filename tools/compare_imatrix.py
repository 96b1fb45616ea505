"""Compare ``fastgguf imatrix`` with llama.cpp's ``llama-imatrix`` on the same model and the same tokens.

Run by hand, given a llama.cpp build (never from the tests or CI)::

    python tools/compare_imatrix.py LLAMA_CPP_BIN_DIR [--ctx 128] [--chunks 8] [--words 3000] [--threads 2]
                                    [--keep DIR] [--model {llama,qwen3moe}]

``LLAMA_CPP_BIN_DIR`` holds ``llama-imatrix`` and ``llama-perplexity``. In a temporary folder (or
``--keep DIR``) the script

1. builds the tiny F16 llama of the README's comparison (``tests/hf_gguf_models.build``, hidden 256,
   2 layers, a 288-token vocabulary), or with ``--model qwen3moe`` a tiny qwen3moe (hidden 256, 2 layers,
   4 experts of which 2 are used per token, 768 wide: per-expert entries for the ``*_exps`` tensors), and a
   text of random words from its vocabulary;
2. takes llama.cpp's token ids of that text from the header of a ``llama-perplexity
   --kl-divergence-base`` file (transformers' tokenizer splits this toy vocabulary differently), runs
   ``llama-imatrix -c CTX --chunks N -b CTX`` on the text and ``fastgguf.collect_imatrix`` on those ids
   (both: chunks of CTX tokens, the first token of each replaced by BOS, every position counted);
3. compares the two files per tensor: names, counts, and the relative difference of
   ``in_sum2 / counts`` (the values quantizers use), mean and max over the columns;
4. quantizes the model to IQ4_XS and Q4_K_M with each matrix (``fastgguf quantize --imatrix``) and
   runs ``fastgguf.eval`` on the same ids, with the in-memory mixes without a matrix for scale.

It prints the tables. It contains no llama.cpp code.
"""

from __future__ import annotations

import argparse
import os
import random
import subprocess
import sys
import tempfile
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, os.path.join(ROOT, "tests"))
sys.path.insert(0, os.path.join(ROOT, "src"))

import fastgguf  # noqa: E402
from fastgguf import GGMLType  # noqa: E402

import hf_gguf_models  # noqa: E402  (tests/hf_gguf_models.py: the tiny models of the tests)

WORDS = "the cat héllo über straße мир 日本語 中文 a e o l h th he ll".split()
TYPES = ("IQ4_XS", "Q4_K_M")


def _run(argv: list[str]) -> None:
    done = subprocess.run(argv, capture_output=True, text=True)
    if done.returncode != 0:
        sys.exit(f"{' '.join(argv)} failed ({done.returncode}):\n{done.stderr[-3000:]}")


def llama_tokens(path: str) -> tuple[int, int, np.ndarray]:
    """(n_ctx, n_chunk, token ids) from the header of a llama-perplexity --kl-divergence-base file."""
    with open(path, "rb") as handle:
        if handle.read(8) != b"_logits_":
            raise ValueError(f"{path}: not a llama-perplexity logits file")
        n_ctx, _n_vocab, n_chunk = np.frombuffer(handle.read(12), np.int32)
        tokens = np.frombuffer(handle.read(4 * int(n_ctx) * int(n_chunk)), np.int32)
    return int(n_ctx), int(n_chunk), tokens.astype(np.int64)


def read_raw(path: str) -> tuple[dict[str, tuple[np.ndarray, np.ndarray]], dict]:
    """GGUF imatrix file -> ({weight name: (in_sum2 float64 (n_mat, n_per_row), counts (n_mat,))}, metadata)."""
    out = {}
    with fastgguf.open(path) as f:
        metadata = dict(f.metadata)
        for name, tensor in f.tensors.items():
            if name.endswith(".in_sum2"):
                weight = name[: -len(".in_sum2")]
                sums = np.asarray(tensor.dequantize(), np.float64).reshape(-1, tensor.shape[-1])
                counts = np.asarray(f.tensors[f"{weight}.counts"].dequantize(), np.float64).reshape(-1)
                out[weight] = (sums, counts)
    return out, metadata


def compare(ours: dict, ref: dict) -> list[dict]:
    rows = []
    for name in sorted(set(ours) | set(ref)):
        if name not in ours or name not in ref:
            rows.append({"name": name, "missing": "fastgguf" if name not in ours else "llama-imatrix"})
            continue
        (s_a, c_a), (s_b, c_b) = ours[name], ref[name]
        a, b = s_a / c_a[:, None], s_b / c_b[:, None]
        rel = np.abs(a - b) / np.abs(b)
        rows.append({"name": name, "n": a.size, "counts": (c_a.tolist(), c_b.tolist()), "counts_equal":
                     np.array_equal(c_a, c_b), "rel_mean": float(rel.mean()), "rel_max": float(rel.max()),
                     "bias": float((a.sum() - b.sum()) / b.sum())})
    return rows


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("bin_dir", help="folder holding llama-imatrix and llama-perplexity")
    parser.add_argument("--ctx", type=int, default=128)
    parser.add_argument("--chunks", type=int, default=8)
    parser.add_argument("--words", type=int, default=3000)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--keep", help="work in this folder and keep the files")
    parser.add_argument("--model", choices=("llama", "qwen3moe"), default="llama",
                        help="the tiny model compared (default llama, the README's first comparison)")
    parser.add_argument("--perturb", type=int, default=4,
                        help="also quantize with this many copies of llama-imatrix's matrix, each value scaled by "
                             "1 + r·N(0, 1) with r the mean relative difference found, to measure how much the "
                             "quantized model moves with a matrix that differs that much (default 4)")
    parser.add_argument("--dtype", choices=("F16", "F32"), default="F16",
                        help="the model's weights; F32 also runs llama.cpp with an F32 KV cache and without flash "
                             "attention, so that no activation is rounded to 16 bits (default F16, the README's)")
    args = parser.parse_args(argv)
    imatrix_bin = os.path.join(args.bin_dir, "llama-imatrix")
    perplexity_bin = os.path.join(args.bin_dir, "llama-perplexity")
    with tempfile.TemporaryDirectory() as tmp:
        folder = args.keep or tmp
        os.makedirs(folder, exist_ok=True)
        return _compare(folder, imatrix_bin, perplexity_bin, args)


def _compare(folder: str, imatrix_bin: str, perplexity_bin: str, args) -> int:
    from fastgguf.eval import collect_imatrix
    from fastgguf.requantize import requantize

    def path(name: str) -> str:
        return os.path.join(folder, name)

    model = path("tiny.gguf")
    hf_gguf_models.build(model, args.model, hidden=256, layers=2, heads=4, kv_heads=2, intermediate=512,
                         types={"": GGMLType[args.dtype]})
    rng = random.Random(1)
    with open(path("text.txt"), "w", encoding="utf-8") as handle:
        handle.write(" ".join(rng.choice(WORDS) for _ in range(args.words)))
    common = ["-m", model, "-f", path("text.txt"), "-c", str(args.ctx), "--chunks", str(args.chunks),
              "-b", str(args.ctx), "-t", str(args.threads)]
    if args.dtype == "F32":
        common += ["-ctk", "f32", "-ctv", "f32", "-fa", "off"]

    # llama.cpp's token ids (the header of the base logits file), and its importance matrix
    _run([perplexity_bin, *common, "--kl-divergence-base", path("base.logits")])
    n_ctx, n_chunk, ids = llama_tokens(path("base.logits"))
    assert n_ctx == args.ctx and n_chunk == args.chunks, (n_ctx, n_chunk)
    start = time.perf_counter()
    _run([imatrix_bin, *common, "--output-format", "gguf", "--no-ppl", "-o", path("ref.imatrix.gguf")])
    t_llama = time.perf_counter() - start
    start = time.perf_counter()
    collect_imatrix(model, ids.tolist(), path("ours.imatrix.gguf"), ctx=args.ctx, chunks=args.chunks)
    t_ours = time.perf_counter() - start

    ours, ours_meta = read_raw(path("ours.imatrix.gguf"))
    ref, ref_meta = read_raw(path("ref.imatrix.gguf"))
    print(f"{n_chunk} chunk(s) of {n_ctx} llama.cpp tokens; llama-imatrix {t_llama:.1f} s, fastgguf imatrix "
          f"{t_ours:.1f} s (with loading transformers)")
    for key in ("imatrix.chunk_count", "imatrix.chunk_size"):
        print(f"  {key}: fastgguf {ours_meta.get(key)}, llama-imatrix {ref_meta.get(key)}")
    rows = compare(ours, ref)
    print(f"\n{'tensor':28} {'n':>5} {'counts (ours, ref; per expert)':>30} {'rel diff mean':>14} {'rel diff max':>13} "
          f"{'Σ bias':>10}")
    for row in rows:
        if "missing" in row:
            print(f"{row['name']:28} missing in {row['missing']}")
            continue
        counts = f"{'/'.join(f'{c:.0f}' for c in row['counts'][0])}, {'/'.join(f'{c:.0f}' for c in row['counts'][1])}"
        print(f"{row['name']:28} {row['n']:>5} {counts:>30} {row['rel_mean']:>14.2e} {row['rel_max']:>13.2e} "
              f"{row['bias']:>+10.2e}")
    both = [r for r in rows if "missing" not in r]
    print(f"names: {len(both)} in both, {len(rows) - len(both)} in one only; counts equal: "
          f"{all(r['counts_equal'] for r in both)}; relative difference of in_sum2/counts: mean "
          f"{np.mean([r['rel_mean'] for r in both]):.2e}, max {max(r['rel_max'] for r in both):.2e}")

    # quantized with each matrix, judged on the same tokens
    files = []
    for mix in TYPES:
        for label, source in (("fastgguf", "ours"), ("llama", "ref")):
            out = path(f"tiny-{mix}-imatrix-{label}.gguf")
            requantize(model, out, mix, imatrix=path(f"{source}.imatrix.gguf"))
            files.append(out)
    scale = float(np.mean([r["rel_mean"] for r in both]))
    reference = fastgguf.read_imatrix(path("ref.imatrix.gguf"))
    noise = np.random.default_rng(0)
    for k in range(args.perturb):
        perturbed = {name: (values * (1 + scale * noise.standard_normal(values.shape))).astype(np.float32)
                     for name, values in reference.items()}
        for mix in TYPES:
            out = path(f"tiny-{mix}-imatrix-perturbed{k}.gguf")
            requantize(model, out, mix, imatrix=perturbed)
            files.append(out)
    records = fastgguf.eval(model, list(TYPES), quantized=files, text=ids.tolist(), ctx=args.ctx,
                            chunks=args.chunks)
    print(f"\nfastgguf eval on the same {records[0]['n_tokens']} scored tokens "
          f"(PPL(base) {records[0]['ppl_base']:.4f}); no-imatrix rows are the in-memory mixes")
    print(f"{'candidate':36} {'KLD mean':>10} {'±':>9} {'same top %':>10} {'±':>6} {'PPL ratio':>10} {'±':>8}")
    for record in records:
        name = record["name"] + (" (no imatrix)" if record["source"] == "memory" else "")
        print(f"{name:36} {record['kld_mean']:>10.6f} {record['kld_mean_err']:>9.6f} {record['same_top_p']:>10.2f} "
              f"{record['same_top_p_err']:>6.2f} {record['ppl_ratio']:>10.5f} {record['ppl_ratio_err']:>8.5f}")
    print("\nrows of the quantized tensors with the same bytes with either matrix (each expert's rows for the "
          "expert tensors; llama: one 256-column block a row but ffn_down's 2):")
    for mix in TYPES:
        same = total = 0
        with fastgguf.open(path(f"tiny-{mix}-imatrix-fastgguf.gguf")) as a, \
                fastgguf.open(path(f"tiny-{mix}-imatrix-llama.gguf")) as b:
            for name, tensor in a.tensors.items():
                if name in ours:
                    n_rows = int(np.prod(tensor.shape[:-1]))  # expert tensors: every row of every expert
                    rows_a = np.asarray(tensor.raw).reshape(n_rows, -1)
                    rows_b = np.asarray(b.tensors[name].raw).reshape(n_rows, -1)
                    same += int((rows_a == rows_b).all(axis=1).sum())
                    total += rows_a.shape[0]
        print(f"  {mix}: {same} of {total} ({100 * same / total:.1f} %)")
    by_name = {r["name"]: r for r in records}
    for mix in TYPES:
        a = by_name[f"tiny-{mix}-imatrix-fastgguf.gguf"]
        b = by_name[f"tiny-{mix}-imatrix-llama.gguf"]
        err = float(np.hypot(a["kld_mean_err"], b["kld_mean_err"]))
        print(f"{mix}: KLD(fastgguf matrix) − KLD(llama matrix) = {a['kld_mean'] - b['kld_mean']:+.6f} "
              f"(combined error {err:.6f}); same top {a['same_top_p'] - b['same_top_p']:+.2f} %")
        spread = [by_name[f"tiny-{mix}-imatrix-perturbed{k}.gguf"]["kld_mean"] for k in range(args.perturb)]
        if len(spread) > 1:
            print(f"  llama's matrix × (1 + {scale:.1e}·N(0,1)), {len(spread)} draws: KLD mean "
                  f"{np.mean(spread):.6f}, standard deviation {np.std(spread, ddof=1):.6f} "
                  f"(range {min(spread):.6f} … {max(spread):.6f})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
