"""transformers' ``from_pretrained(gguf_file=...)`` (model + tokenizer): transformers alone against
``fastgguf.integrations.transformers`` enabled, side by side.

Under pytest (CI runs it once with ``--benchmark-disable``) a tiny model is loaded in process, both
ways, and the results compared. The real measurement is run by hand; each load runs in a fresh
subprocess so that its peak RSS is its own::

    python benchmarks/bench_transformers.py                 # builds a ~250 MB llama GGUF once, then measures
    python benchmarks/bench_transformers.py --dtype float32 --repeat 3

The model: a llama config with a 64k vocabulary, 12 layers, hidden 1024, random weights from
transformers; token_embd/output/attention Q8_0, attn_v F16, feed-forward Q4_0, norms F32.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time

import pytest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), os.pardir, "tests"))

BIG = dict(hidden=1024, layers=12, heads=16, kv_heads=4, intermediate=2816, extra_vocab=64_000 - 288)


def _big_types():
    from fastgguf import GGMLType

    return {"attn_v": GGMLType.F16, "ffn": GGMLType.Q4_0, "": GGMLType.Q8_0}


def load(directory: str, file: str, dtype_name: str, fast: bool):
    """``(model, tokenizer)`` from ``directory/file``, through fastgguf if ``fast``."""
    import torch
    import transformers

    from fastgguf.integrations import transformers as integration

    dtype = getattr(torch, dtype_name)
    if fast and not integration.enable():
        raise RuntimeError(integration.unsupported_reason())
    try:
        tokenizer = transformers.AutoTokenizer.from_pretrained(directory, gguf_file=file)
        model = transformers.AutoModelForCausalLM.from_pretrained(directory, gguf_file=file, dtype=dtype)
    finally:
        if fast:
            integration.disable()
    return model, tokenizer


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
                 "models.llama.modeling_llama", "models.llama.tokenization_llama", "tokenization_utils_tokenizers"):
        importlib.import_module(f"transformers.{name}")
    transformers.AutoModelForCausalLM, transformers.AutoTokenizer  # noqa: B018 - resolves the lazy names
    import fastgguf.integrations.transformers  # noqa: F401

    return time.perf_counter() - start


def _child(directory: str, file: str, dtype_name: str, fast: bool) -> None:
    """One load in this (fresh) process; prints its time and RSS figures as JSON."""
    imports = warm_imports()
    baseline = _peak_rss_mb()
    start = time.perf_counter()
    model, tokenizer = load(directory, file, dtype_name, fast)
    seconds = time.perf_counter() - start
    peak = _peak_rss_mb()
    ids = tokenizer("héllo the cat 日本語")["input_ids"]
    weights = sum(value.numel() * value.element_size() for value in model.state_dict().values())
    print(json.dumps({"seconds": seconds, "imports": imports, "peak_rss_mb": peak, "baseline_rss_mb": baseline,
                      "ids": ids, "weights_mb": weights / 2**20,
                      "float32_mb": sum(v.numel() for v in model.state_dict().values()) * 4 / 2**20}))


def _run_child(directory: str, file: str, dtype_name: str, fast: bool) -> dict:
    command = [sys.executable, os.path.abspath(__file__), "--child", directory, file, dtype_name,
               "fast" if fast else "plain"]
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
    file = "bench-llama.gguf"
    path = os.path.join(args.dir, file)
    if not os.path.exists(path):
        start = time.perf_counter()
        hf_gguf_models.build(path + ".tmp", "llama", types=_big_types(), **BIG)
        os.replace(path + ".tmp", path)
        print(f"built {path} in {time.perf_counter() - start:.0f} s")
    print(f"model file: {os.path.getsize(path) / 2**20:.0f} MiB")
    import transformers

    print(f"transformers {transformers.__version__}; from_pretrained(model) + from_pretrained(tokenizer), "
          f"fresh process each; RSS = peak of the process (baseline = after importing torch/transformers, "
          f"which takes 'imports' seconds before the clock starts, the same for both paths)")
    header = (f"{'dtype':9} {'path':13} {'seconds':>8} {'peak RSS MiB':>13} {'baseline':>9} {'weights MiB':>12} "
              f"{'imports s':>10}")
    print(header)
    for dtype_name in args.dtype or ["bfloat16", "float32"]:
        results = {}
        for fast in (False, True):
            runs = [_run_child(args.dir, file, dtype_name, fast) for _ in range(args.repeat)]
            best = min(runs, key=lambda run: run["seconds"])
            results[fast] = best
            label = "fastgguf" if fast else "transformers"
            print(f"{dtype_name:9} {label:13} {best['seconds']:8.2f} {max(r['peak_rss_mb'] for r in runs):13.0f} "
                  f"{best['baseline_rss_mb']:9.0f} {best['weights_mb']:12.0f} {best['imports']:10.1f}")
        if results[True]["ids"] != results[False]["ids"]:
            raise SystemExit("token ids differ between the two paths")
        print(f"{dtype_name:9} speedup {results[False]['seconds'] / results[True]['seconds']:.1f}x; "
              f"float32 model size {results[True]['float32_mb']:.0f} MiB")


# --- pytest: a tiny model, both paths in this process ---------------------------------------------

if __name__ != "__main__":
    torch = pytest.importorskip("torch")
    pytest.importorskip("transformers")
    pytest.importorskip("accelerate")
    pytest.importorskip("gguf")


@pytest.fixture(scope="module")
def tiny_model(tmp_path_factory):
    import hf_gguf_models

    from fastgguf.integrations import transformers as integration

    if integration.unsupported_reason() is not None:
        pytest.skip(integration.unsupported_reason())
    directory = tmp_path_factory.mktemp("bench_transformers")
    hf_gguf_models.build(str(directory / "tiny.gguf"), "llama", extra_vocab=2000)
    return str(directory)


@pytest.mark.parametrize("fast", [False, True], ids=["transformers", "fastgguf"])
@pytest.mark.benchmark(group="transformers from_pretrained(gguf_file=...) + tokenizer")
def test_from_pretrained(benchmark, tiny_model, fast):
    model, tokenizer = benchmark(load, tiny_model, "tiny.gguf", "bfloat16", fast)
    assert model.dtype == torch.bfloat16
    assert len(tokenizer) == model.config.vocab_size


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "--child":
        _child(sys.argv[2], sys.argv[3], sys.argv[4], sys.argv[5] == "fast")
    else:
        main(sys.argv[1:])
