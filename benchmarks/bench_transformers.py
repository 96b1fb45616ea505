"""transformers' ``from_pretrained(gguf_file=...)`` (model + tokenizer): transformers alone against
``fastgguf.integrations.transformers`` enabled, side by side.

Under pytest (CI runs it once with ``--benchmark-disable``) a tiny model is loaded in process, both
ways, and the results compared. The real measurement is run by hand; each load runs in a fresh
subprocess so that its peak RSS is its own::

    python benchmarks/bench_transformers.py                 # builds a ~250 MB gemma3 GGUF once, then measures
    python benchmarks/bench_transformers.py --dtype bfloat16 --repeat 3
    PYTHONPATH=/path/to/older/transformers python benchmarks/bench_transformers.py   # another release

The model is shaped like Gemma-3 270M in Q4_K_M: gemma3 architecture, a 262,144-token sentencepiece
vocabulary, hidden 640, 18 layers, 4 heads (1 KV head), feed-forward 2048, random weights from
transformers; the tied embedding Q8_0, the 640-wide rows Q5_0 (640 is not a multiple of 256, so
llama-quantize falls back from the K-quants there too), ffn_down Q6_K, norms F32. Three paths, each
in a fresh process: transformers alone, fastgguf's deepest layer (the hooks into transformers'
GGUF loader, when this release has them), and fastgguf's gguf-py layer alone.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time

import pytest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), os.pardir, "tests"))

BIG = dict(hidden=640, layers=18, heads=4, kv_heads=1, intermediate=2048, extra_vocab=262_144 - 288)
PATHS = ("transformers", "fastgguf", "fastgguf:gguf-py")  # own path; deepest layer; the gguf-py layer alone


def _big_types():
    from fastgguf import GGMLType

    return {"token_embd": GGMLType.Q8_0, "ffn_down": GGMLType.Q6_K, "": GGMLType.Q5_0}


def load(directory: str, file: str, dtype_name: str, path: str):
    """``(model, tokenizer, layer)`` from ``directory/file`` along ``path`` (one of PATHS)."""
    import torch
    import transformers

    from fastgguf.integrations import transformers as integration

    dtype = getattr(torch, dtype_name)
    layer = None
    if path != "transformers":
        layer = integration.enable("gguf-py" if path == "fastgguf:gguf-py" else None)
        if not layer:
            raise RuntimeError(integration.unsupported_reason())
    try:
        tokenizer = transformers.AutoTokenizer.from_pretrained(directory, gguf_file=file)
        model = transformers.AutoModelForCausalLM.from_pretrained(directory, gguf_file=file, dtype=dtype)
    finally:
        if layer:
            integration.disable()
    return model, tokenizer, layer


def _peak_rss_mb() -> float:
    """This process's peak resident set (VmHWM: unlike ru_maxrss, not inherited from the parent across exec)."""
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    raise RuntimeError("no VmHWM in /proc/self/status (Linux only)")


def warm_imports() -> float:
    """Import what both paths import on first use (seconds): a script pays it once, whichever path it takes."""
    import importlib

    start = time.perf_counter()
    import torch  # noqa: F401
    import transformers

    for name in ("modeling_utils", "modeling_gguf_pytorch_utils", "quantizers.quantizer_gguf",
                 "integrations.gguf.reader", "integrations.gguf.gguf_tokenizer_mapping",
                 "models.gemma3.modeling_gemma3", "models.gemma.tokenization_gemma", "tokenization_utils_tokenizers"):
        try:
            importlib.import_module(f"transformers.{name}")
        except ImportError:  # not in this release (the modules move between releases)
            pass
    transformers.AutoModelForCausalLM, transformers.AutoTokenizer  # noqa: B018 - resolves the lazy names
    import fastgguf.integrations.transformers  # noqa: F401

    return time.perf_counter() - start


def _child(directory: str, file: str, dtype_name: str, path: str) -> None:
    """One load in this (fresh) process; prints its time, RSS figures and a digest of what it loaded as JSON."""
    import hashlib

    import torch

    imports = warm_imports()
    baseline = _peak_rss_mb()
    start = time.perf_counter()
    model, tokenizer, layer = load(directory, file, dtype_name, path)
    seconds = time.perf_counter() - start
    peak = _peak_rss_mb()
    ids = tokenizer("héllo the cat 日本語 <start_of_turn>user")["input_ids"]
    digest = hashlib.sha256(model.config.to_json_string().encode())
    for name, value in sorted(model.state_dict().items()):
        digest.update(name.encode() + value.detach().contiguous().view(torch.uint8).numpy().tobytes())
    with torch.no_grad():
        logits = model(torch.tensor([ids[:8]])).logits
    digest.update(logits.float().numpy().tobytes())
    weights = sum(value.numel() * value.element_size() for value in model.state_dict().values())
    print(json.dumps({"seconds": seconds, "imports": imports, "peak_rss_mb": peak, "baseline_rss_mb": baseline,
                      "ids": ids, "weights_mb": weights / 2**20, "layer": layer or "-", "digest": digest.hexdigest(),
                      "transformers": __import__("transformers").__version__}))


def _run_child(directory: str, file: str, dtype_name: str, path: str) -> dict:
    command = [sys.executable, os.path.abspath(__file__), "--child", directory, file, dtype_name, path]
    env = dict(os.environ, TQDM_DISABLE="1")
    result = subprocess.run(command, capture_output=True, text=True, env=env)
    if result.returncode != 0:
        raise RuntimeError(result.stderr[-3000:])
    return json.loads(result.stdout.strip().splitlines()[-1])


def main(argv: list[str]) -> None:
    import argparse

    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--dir", default=os.path.join("/tmp", "fastgguf-bench-transformers"),
                        help="where the model is built (once) and kept")
    parser.add_argument("--dtype", action="append", help="torch dtype(s) to load in (default: bfloat16, float32)")
    parser.add_argument("--repeat", type=int, default=1, help="loads per path and dtype (the best is shown)")
    args = parser.parse_args(argv)

    import hf_gguf_models

    os.makedirs(args.dir, exist_ok=True)
    file = "bench-gemma3-262k.gguf"
    path = os.path.join(args.dir, file)
    if not os.path.exists(path):
        start = time.perf_counter()
        hf_gguf_models.build(path + ".tmp", "gemma3", types=_big_types(), **BIG)
        os.replace(path + ".tmp", path)
        print(f"built {path} in {time.perf_counter() - start:.0f} s")
    print(f"model file: {os.path.getsize(path) / 2**20:.0f} MiB")
    import transformers

    print(f"transformers {transformers.__version__}; from_pretrained(model) + from_pretrained(tokenizer), "
          f"fresh process each; RSS = peak of the process (baseline = after importing torch/transformers, "
          f"which takes 'imports' seconds before the clock starts, the same for both paths)")
    header = (f"{'dtype':9} {'path':17} {'layer':12} {'seconds':>8} {'peak RSS MiB':>13} {'baseline':>9} "
              f"{'weights MiB':>12} {'imports s':>10}")
    print(header)
    for dtype_name in args.dtype or ["float32", "bfloat16"]:
        results = {}
        for which in PATHS:
            runs = [_run_child(args.dir, file, dtype_name, which) for _ in range(args.repeat)]
            best = min(runs, key=lambda run: run["seconds"])
            results[which] = best
            print(f"{dtype_name:9} {which:17} {best['layer']:12} {best['seconds']:8.2f} "
                  f"{max(r['peak_rss_mb'] for r in runs):13.0f} {best['baseline_rss_mb']:9.0f} "
                  f"{best['weights_mb']:12.0f} {best['imports']:10.1f}")
        own = results["transformers"]
        for which in PATHS[1:]:
            if (results[which]["ids"], results[which]["digest"]) != (own["ids"], own["digest"]):
                raise SystemExit(f"{which}: token ids, config, weights or logits differ from transformers' own path")
            print(f"{dtype_name:9} {which:17} {own['seconds'] / results[which]['seconds']:.1f}x faster; config, "
                  f"token ids, weights (bits) and logits identical")
        print()


# --- pytest: a tiny model, both paths in this process ---------------------------------------------

if __name__ != "__main__":
    torch = pytest.importorskip("torch")
    pytest.importorskip("transformers")
    pytest.importorskip("accelerate")
    pytest.importorskip("gguf")


@pytest.fixture(scope="module")
def tiny_model(tmp_path_factory):
    from fastgguf.integrations import transformers as integration

    import hf_gguf_models

    if integration.unsupported_reason() is not None:
        pytest.skip(integration.unsupported_reason())
    directory = tmp_path_factory.mktemp("bench_transformers")
    hf_gguf_models.build(str(directory / "tiny.gguf"), "llama", extra_vocab=2000)
    return str(directory)


@pytest.mark.parametrize("path", PATHS)
@pytest.mark.benchmark(group="transformers from_pretrained(gguf_file=...) + tokenizer")
def test_from_pretrained(benchmark, tiny_model, path):
    model, tokenizer, layer = benchmark(load, tiny_model, "tiny.gguf", "bfloat16", path)
    assert model.dtype == torch.bfloat16
    assert len(tokenizer) == model.config.vocab_size
    from fastgguf.integrations import transformers as integration

    expected = {"transformers": None, "fastgguf:gguf-py": "gguf-py"}
    assert layer == expected[path] if path in expected else layer in integration.LAYERS


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "--child":
        _child(sys.argv[2], sys.argv[3], sys.argv[4], sys.argv[5])
    else:
        main(sys.argv[1:])
