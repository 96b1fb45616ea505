"""Forward time of a GGUF Flux-shaped transformer on CPU: diffusers' own GGUF path against
``fastgguf.integrations.diffusers`` enabled, per weight type.

The model: diffusers' ``FluxTransformer2DModel``, width 512 (8 heads of 64), 2 double and 2 single
blocks, random weights, every linear weight in the type measured (the 64-channel image embedder in
F32); 256 image tokens and 64 text tokens, ``compute_dtype`` bfloat16, float16 or float32. Each
forward dequantizes every weight (``GGUFLinear``) and multiplies, which is where the paths differ:
diffusers' own; fastgguf with ``products="compute_dtype"`` (diffusers' product, bit-identical
outputs); fastgguf with ``products="float32"`` (the same values multiplied in float32, what
``"auto"`` picks on CPUs without bfloat16/float16 matrix instructions; for a float32
``compute_dtype`` the two fastgguf paths are one)::

    python benchmarks/bench_diffusers.py                      # Q4_K, IQ4_XS, Q8_0, Q6_K, BF16
    python benchmarks/bench_diffusers.py --type Q4_K --dtype bfloat16 --repeat 5
    python benchmarks/bench_diffusers.py --width 1024 --type Q4_K           # heads of 128, as Flux's
    python benchmarks/bench_diffusers.py --layer 3072x3072 --tokens 1024   # one GGUFLinear of Flux-dev's width
    python benchmarks/bench_diffusers.py --split --repeat 7                 # where a forward's time goes
    python benchmarks/bench_diffusers.py --width 3072 --blocks 1,1 --image-tokens 1024 --text-tokens 256
                                            # Flux-dev's width and block shapes, one of each

Under pytest (CI runs it with ``--benchmark-disable``) the small test model does one forward both
ways and the outputs are compared.
"""

from __future__ import annotations

import os
import sys
import tempfile
import time

import pytest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), os.pardir, "tests"))

BIG = dict(patch_size=1, in_channels=64, num_layers=2, num_single_layers=2, attention_head_dim=64,
           num_attention_heads=8, joint_attention_dim=512, pooled_projection_dim=512, guidance_embeds=False,
           axes_dims_rope=(16, 24, 24))
TYPES = ["Q4_K", "IQ4_XS", "Q8_0", "Q6_K", "BF16"]


def config_of_width(width: int) -> dict:
    """BIG at another width: 512 keeps BIG's 8 heads of 64; others take Flux's heads of 128 (rotary axes 16+56+56)."""
    if width == 512:
        return BIG
    if width % 128:
        raise ValueError(f"width must be 512 or a multiple of 128, not {width}")
    return dict(BIG, attention_head_dim=128, num_attention_heads=width // 128, joint_attention_dim=width,
                pooled_projection_dim=width, axes_dims_rope=(16, 56, 56))


def forward_seconds(path: str, directory: str, config: dict, fast: bool | str, repeat: int,
                    image_tokens: int = 256, text_tokens: int = 64, dtype_name: str = "bfloat16"):
    """``(best seconds per forward, best seconds dequantizing every GGUFLinear weight, output)``.

    Through fastgguf if ``fast`` (True: ``products="auto"``; a string: that ``products``). The
    second figure: each ``GGUFLinear``'s weight turned into what its product takes, as its forward
    does it (``compute_dtype``; for float32 products, float32 values rounded to ``compute_dtype``).
    """
    import torch
    from diffusers.quantizers.gguf import utils

    from fastgguf.dequant import dequantize_rounded
    from fastgguf.integrations import diffusers as integration

    import diffusers_gguf_models as models

    dtype = getattr(torch, dtype_name)
    if fast and not integration.enable(products="auto" if fast is True else fast):
        raise RuntimeError(integration.unsupported_reason())
    rounded = fast and integration.active_products() == "float32" and dtype_name in ("bfloat16", "float16")
    try:
        model = models.load(path, directory, dtype)
        args = models.inputs(config, image_tokens=image_tokens, text_tokens=text_tokens, dtype=dtype)
        layers = [module for module in model.modules() if isinstance(module, utils.GGUFLinear)]
        best = best_weights = float("inf")
        with torch.no_grad():
            for _ in range(repeat):
                start = time.perf_counter()
                out = model(**args)[0]
                best = min(best, time.perf_counter() - start)
                start = time.perf_counter()
                for layer in layers:
                    if rounded:
                        blocks = torch.Tensor.as_subclass(layer.weight, torch.Tensor).numpy()
                        block_size, type_size = integration._sizes(layer.weight.quant_type)
                        dequantize_rounded(blocks, int(layer.weight.quant_type),
                                           (blocks.shape[0], blocks.shape[1] // type_size * block_size), dtype=dtype_name)
                    elif fast:
                        integration._dequantize_parameter(layer.weight, layer.compute_dtype)
                    else:
                        utils.dequantize_gguf_tensor(layer.weight).to(layer.compute_dtype)
                best_weights = min(best_weights, time.perf_counter() - start)
    finally:
        if fast:
            integration.disable()
    return best, best_weights, out


def layer_seconds(n_out: int, n_in: int, tokens: int, qtype_name: str, dtype_name: str, repeat: int) -> dict:
    """``{path: best seconds}`` of one ``GGUFLinear`` (random weights of ``qtype_name``, with a bias) on ``tokens`` rows."""
    import numpy as np
    import torch
    from diffusers.quantizers.gguf import utils

    import fastgguf
    from fastgguf import GGMLType
    from fastgguf.integrations import diffusers as integration

    dtype = getattr(torch, dtype_name)
    rng = np.random.default_rng(0)
    blocks = fastgguf.quantize((rng.standard_normal((n_out, n_in)) * 0.05).astype(np.float32), qtype_name)
    layer = utils.GGUFLinear(n_in, n_out, bias=True, compute_dtype=dtype)
    quant_type = integration._fast_types()[int(GGMLType[qtype_name])]
    layer.weight = utils.GGUFParameter(torch.from_numpy(blocks), quant_type=quant_type)
    x = torch.randn(1, tokens, n_in).to(dtype)
    times = {}
    with torch.no_grad():
        for name, products in (("diffusers", None), ("fastgguf compute_dtype", "compute_dtype"), ("fastgguf float32", "float32")):
            if products is not None:
                integration.enable(products=products)
            try:
                times[name] = min(_timed(lambda: layer(x)) for _ in range(repeat))
            finally:
                integration.disable()
    return times


def forward_split(config: dict, qtype_name: str, dtype_name: str, repeat: int, image_tokens: int = 256,
                  text_tokens: int = 64) -> dict:
    """Where a forward with ``products="float32"`` spends its time: ``{part: seconds}`` of the best of ``repeat``.

    "products": the float32 products of the GGUFLinear layers (torch's; fastgguf.matmul's for a few
    rows, which includes dequantizing those weights in L1); "conversions": the rest of those
    layers (weights dequantized and rounded, inputs widened, outputs narrowed); "other": the rest of
    the model (torch's own code); "rows=1 layers": the layers fed one row (part of the first two).
    """
    import collections
    import importlib

    import torch

    from fastgguf import GGMLType
    from fastgguf.integrations import diffusers as integration

    import diffusers_gguf_models as models

    fast_matmul = importlib.import_module("fastgguf.matmul")  # the module (the package's name is the function)
    dtype = getattr(torch, dtype_name)
    spent: collections.Counter = collections.Counter()
    linear, product, from_blocks = torch.nn.functional.linear, integration._linear_float32, fast_matmul.matmul

    inside = []

    def timed_linear(*args, **kwargs):
        start = time.perf_counter()
        result = linear(*args, **kwargs)
        if inside:  # a GGUFLinear's product, not a plain nn.Linear of the model
            spent["products"] += time.perf_counter() - start
        return result

    def timed_from_blocks(*args, **kwargs):  # a product of a few rows, straight from the blocks
        start = time.perf_counter()
        result = from_blocks(*args, **kwargs)
        spent["products"] += time.perf_counter() - start
        return result

    def timed_product(inputs, *args):
        start = time.perf_counter()
        inside.append(True)
        try:
            result = product(inputs, *args)
        finally:
            inside.pop()
        seconds = time.perf_counter() - start
        spent["layers"] += seconds
        if inputs.numel() == inputs.shape[-1]:
            spent["rows=1 layers"] += seconds
        return result

    import tempfile

    with tempfile.TemporaryDirectory() as directory:
        path = models.write(models.build(config), directory, models.uniform(GGMLType[qtype_name]), name="split.gguf")
        integration.enable(products="float32")
        try:
            model = models.load(path, directory, dtype)
            args = models.inputs(config, image_tokens=image_tokens, text_tokens=text_tokens, dtype=dtype)
            best: dict = {}
            with torch.no_grad():
                model(**args)
                integration._linear_float32, torch.nn.functional.linear = timed_product, timed_linear
                fast_matmul.matmul = timed_from_blocks
                try:
                    for _ in range(repeat):
                        spent.clear()
                        start = time.perf_counter()
                        model(**args)
                        total = time.perf_counter() - start
                        if not best or total < best["forward"]:
                            best = dict(spent, forward=total)
                finally:
                    integration._linear_float32, torch.nn.functional.linear = product, linear
                    fast_matmul.matmul = from_blocks
        finally:
            integration.disable()
    return {"forward": best["forward"], "products": best["products"],
            "conversions": best["layers"] - best["products"], "other": best["forward"] - best["layers"],
            "rows=1 layers": best.get("rows=1 layers", 0.0)}


def _timed(fn) -> float:
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


def main(argv: list[str]) -> None:
    import argparse

    import diffusers
    import torch

    from fastgguf import GGMLType

    import diffusers_gguf_models as models

    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--type", action="append", help=f"weight type(s) (default: {', '.join(TYPES)})")
    parser.add_argument("--repeat", type=int, default=3, help="forwards per path (the best is shown)")
    parser.add_argument("--dtype", action="append", help="compute_dtype(s) (default: bfloat16, float32)")
    parser.add_argument("--width", type=int, default=512, help="the model's width (default 512: 8 heads of 64)")
    parser.add_argument("--layer", help="OUTxIN: time one GGUFLinear of that shape instead of the model")
    parser.add_argument("--tokens", type=int, default=1024, help="rows of x for --layer")
    parser.add_argument("--blocks", default="2,2", help="double,single transformer blocks of the model (default 2,2)")
    parser.add_argument("--image-tokens", type=int, default=256, help="image tokens of the model's input (default 256)")
    parser.add_argument("--text-tokens", type=int, default=64, help="text tokens of the model's input (default 64)")
    parser.add_argument("--split", action="store_true", help="where a float32-products forward spends its time")
    args = parser.parse_args(argv)
    double, single = (int(count) for count in args.blocks.split(","))
    config = dict(config_of_width(args.width), num_layers=double, num_single_layers=single)
    tokens = dict(image_tokens=args.image_tokens, text_tokens=args.text_tokens)
    if args.split:
        for name in args.type or ["Q4_K"]:
            for dtype_name in args.dtype or ["bfloat16"]:
                parts = forward_split(config, name, dtype_name, max(args.repeat, 5), **tokens)
                print(f"{name} {dtype_name}, width {args.width}: " + ", ".join(f"{part} {seconds * 1e3:.1f} ms"
                                                                           for part, seconds in parts.items()))
        return
    if args.layer:
        n_out, n_in = (int(side) for side in args.layer.lower().split("x"))
        print(f"one GGUFLinear {n_out}x{n_in} with bias, {args.tokens} tokens, torch {torch.get_num_threads()} threads, "
              f"best of {args.repeat}: ms (ratio to diffusers')")
        for name in args.type or ["Q4_K", "IQ4_XS"]:
            for dtype_name in args.dtype or ["bfloat16", "float16", "float32"]:
                times = layer_seconds(n_out, n_in, args.tokens, name, dtype_name, args.repeat)
                base = times["diffusers"]
                print(f"{name:7} {dtype_name:9} " + "  ".join(f"{path} {t * 1e3:8.1f} ({base / t:4.1f}x)"
                                                           for path, t in times.items()), flush=True)
        return
    print(f"diffusers {diffusers.__version__}, torch {torch.__version__} ({torch.get_num_threads()} threads); "
          f"Flux-shaped, width {config['attention_head_dim'] * config['num_attention_heads']} "
          f"({config['num_attention_heads']} heads), {config['num_layers']}+{config['num_single_layers']} blocks, "
          f"{args.image_tokens}+{args.text_tokens} tokens; best of {args.repeat}")
    print("forward: one whole forward, ms (ratio to diffusers'); weights: every GGUFLinear weight made what its "
          "product takes, ms; max |diff|: of the output, to diffusers' own")
    print(f"{'dtype':9} {'type':7} {'products':13} {'forward':>9} {'ratio':>6} {'weights':>8} {'ratio':>6} "
          f"{'max |diff|':>11} {'max |out|':>10}")
    model = models.build(config)
    with tempfile.TemporaryDirectory() as directory:
        for name in args.type or TYPES:
            path = models.write(model, directory, models.uniform(GGMLType[name]), name=f"{name}.gguf")
            for dtype_name in args.dtype or ["bfloat16", "float32"]:
                theirs, their_weights, their_out = forward_seconds(path, directory, config, False, args.repeat,
                                                                   dtype_name=dtype_name, **tokens)
                scale = their_out.float().abs().max().item()
                print(f"{dtype_name:9} {name:7} {'(diffusers)':13} {theirs * 1e3:9.1f} {'':6} {their_weights * 1e3:8.1f} "
                      f"{'':6} {'':11} {scale:10.3g}", flush=True)
                for products in ("compute_dtype", "float32")[: 1 if dtype_name == "float32" else 2]:
                    ours, our_weights, our_out = forward_seconds(path, directory, config, products, args.repeat,
                                                                 dtype_name=dtype_name, **tokens)
                    diff = (their_out.float() - our_out.float()).abs().max().item()
                    print(f"{'':9} {'':7} {products:13} {ours * 1e3:9.1f} {theirs / ours:5.1f}x {our_weights * 1e3:8.1f} "
                          f"{their_weights / our_weights:5.1f}x {diff:11.3g}", flush=True)
            os.remove(path)


# --- pytest: the small test model, one forward each way ---------------------------------------------

if __name__ != "__main__":
    torch = pytest.importorskip("torch")
    pytest.importorskip("diffusers")
    pytest.importorskip("accelerate")
    pytest.importorskip("gguf")


@pytest.fixture(scope="module")
def small_file(tmp_path_factory):
    from fastgguf import GGMLType
    from fastgguf.integrations import diffusers as integration

    import diffusers_gguf_models as models

    if integration.unsupported_reason() is not None:
        pytest.skip(integration.unsupported_reason())
    directory = str(tmp_path_factory.mktemp("bench_diffusers"))
    return models.write(models.build(), directory, models.uniform(GGMLType.Q8_0)), directory


@pytest.mark.parametrize("fast", [False, "compute_dtype", "float32"], ids=["diffusers", "fastgguf", "fastgguf-float32"])
@pytest.mark.benchmark(group="diffusers GGUF forward (Q8_0, small Flux-shaped)")
def test_forward(benchmark, small_file, fast):
    import diffusers_gguf_models as models

    path, directory = small_file
    seconds, weights, out = benchmark(forward_seconds, path, directory, models.SMALL, fast, 1, 16, 8)
    assert out.dtype == torch.bfloat16 and torch.isfinite(out).all()




def test_split_smoke():
    import diffusers_gguf_models as models

    parts = forward_split(models.SMALL, "Q8_0", "bfloat16", 1)
    assert 0 < parts["products"] < parts["forward"] and parts["other"] > 0


def test_layer_smoke():
    times = layer_seconds(64, 256, 8, "Q4_K", "bfloat16", 1)
    assert set(times) == {"diffusers", "fastgguf compute_dtype", "fastgguf float32"}


if __name__ == "__main__":
    main(sys.argv[1:])
