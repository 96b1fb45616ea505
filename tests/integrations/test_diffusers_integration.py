"""fastgguf.integrations.diffusers: diffusers' GGUF loading and dequantization through fastgguf.

A small Flux-shaped transformer (diffusers' own ``FluxTransformer2DModel``, random weights) is
written by fastgguf's writer and quantizers, then loaded with ``from_single_file(...,
quantization_config=GGUFQuantizationConfig(...))`` by diffusers alone and with the integration
enabled; the loaded bytes, the dequantized weights and the forward outputs are compared.

What is compared bit for bit and what within a tolerance (see the integration's module doc):
fastgguf's float32 values equal diffusers' torch dequantizers run in float32 for all 13 of its
types; by default diffusers computes most types in float16, so its weights differ from the float32
values by a few float16 roundings; only BF16 and IQ4_NL (float32 in diffusers too), and Q8_0/Q4_0/
Q5_0 when compute_dtype is float16 (a single rounding to float16 either way), are bit-identical to
diffusers' default path.
"""

from __future__ import annotations

import sys

import numpy as np
import pytest

torch = pytest.importorskip("torch")
diffusers = pytest.importorskip("diffusers")
gguf = pytest.importorskip("gguf")
pytest.importorskip("accelerate")  # diffusers loads GGUF weights only with it

import fastgguf  # noqa: E402
from fastgguf import GGMLType  # noqa: E402
from fastgguf.integrations import diffusers as integration, gguf_py  # noqa: E402

import diffusers_gguf_models as models  # noqa: E402 - after the skips: it needs torch and diffusers

pytestmark = pytest.mark.skipif(integration.unsupported_reason() is not None,
                                reason=str(integration.unsupported_reason()))

utils = pytest.importorskip("diffusers.quantizers.gguf.utils")
loading = pytest.importorskip("diffusers.models.model_loading_utils")

Q = GGMLType
#: diffusers' own types written as such: two K/IQ types, a legacy one, BF16, and a mix
SUPPORTED = {"Q4_K": Q.Q4_K, "Q8_0": Q.Q8_0, "IQ4_XS": Q.IQ4_XS, "BF16": Q.BF16, "IQ4_NL": Q.IQ4_NL}
#: types diffusers 0.42 refuses, all quantized by fastgguf without an imatrix (Q2_0: newer than gguf-py 0.19)
UNSUPPORTED = {"IQ3_S": Q.IQ3_S, "TQ2_0": Q.TQ2_0, "MXFP4": Q.MXFP4, "IQ1_M": Q.IQ1_M, "Q2_0": Q.Q2_0}
FP16_FRACTION = 2.0 ** -11  # float16's unit roundoff


def _mix(name, shape):
    if "ff" in name or "proj_mlp" in name:
        return Q.Q4_K
    if "attn" in name:
        return Q.Q8_0
    if "norm" in name:
        return Q.IQ4_XS
    return Q.BF16


@pytest.fixture(autouse=True)
def _disabled():
    """Every test starts and ends with diffusers on its own code."""
    integration.disable()
    yield
    integration.disable()


@pytest.fixture(scope="module")
def workdir(tmp_path_factory):
    return str(tmp_path_factory.mktemp("flux"))


@pytest.fixture(scope="module")
def model():
    return models.build()


def _file(model, workdir, name, types):
    return models.write(model, workdir, types, name=f"{name}.gguf")


def _originals() -> dict:
    """Every object the integration may replace, by where it is (for identity checks)."""
    quantizer = sys.modules.get("diffusers.quantizers.gguf.gguf_quantizer")
    found = {
        "loading.load_gguf_checkpoint": loading.load_gguf_checkpoint,
        "utils.dequantize_gguf_tensor": utils.dequantize_gguf_tensor,
        "utils.GGML_QUANT_SIZES": utils.GGML_QUANT_SIZES,
        "utils.SUPPORTED_GGUF_QUANT_TYPES": utils.SUPPORTED_GGUF_QUANT_TYPES,
        "utils.dequantize_functions": utils.dequantize_functions,
        "GGUFLinear.forward_native": utils.GGUFLinear.__dict__["forward_native"],
        "gguf.GGUFReader": gguf.GGUFReader,
        "gguf.GGML_QUANT_SIZES": gguf.GGML_QUANT_SIZES,
    }
    found.update({f"table[{key!r}]": value for key, value in utils.dequantize_functions.items()})
    found["table.keys"] = tuple(utils.dequantize_functions)
    found["supported.items"] = tuple(utils.SUPPORTED_GGUF_QUANT_TYPES)
    found["sizes.len"] = len(gguf.GGML_QUANT_SIZES)
    for name in ("dequantize_gguf_tensor", "GGML_QUANT_SIZES"):  # imported by value there in some releases
        if hasattr(quantizer, name):
            found[f"quantizer.{name}"] = getattr(quantizer, name)
    return found


def _same(before: dict, after: dict) -> list[str]:
    return [key for key in before if before[key] is not after.get(key) and before[key] != after.get(key)]


def _state(loaded) -> dict:
    return {name: value for name, value in loaded.state_dict().items()}


def _as_float32_table(monkeypatch):
    """diffusers' own torch dequantizers, asked for float32 (their ``dtype`` argument) instead of their default."""
    for key, function in list(utils.dequantize_functions.items()):
        def in_float32(blocks, block_size, type_size, dtype=None, _function=function):
            return _function(blocks, block_size, type_size, dtype=torch.float32)
        monkeypatch.setitem(utils.dequantize_functions, key, in_float32)


# --- enable / disable --------------------------------------------------------------------------------


def test_enable_reports_layer_and_disable_restores_identity():
    import diffusers.quantizers.gguf.gguf_quantizer  # noqa: F401 - holds dequantize_gguf_tensor by value

    before = _originals()
    assert integration.enable() == "diffusers"
    assert integration.active_layer() == "diffusers" and integration.is_enabled()
    assert set(integration.installed_hooks()) == {"load_gguf_checkpoint", "dequantize_gguf_tensor",
                                                  "GGUFLinear.forward_native", "dequantize_functions"}
    during = _originals()
    changed = _same(before, during)
    for key in ("loading.load_gguf_checkpoint", "utils.dequantize_gguf_tensor", "quantizer.dequantize_gguf_tensor",
                "GGUFLinear.forward_native", "gguf.GGUFReader", "utils.SUPPORTED_GGUF_QUANT_TYPES",
                "utils.GGML_QUANT_SIZES", "quantizer.GGML_QUANT_SIZES"):
        assert key in changed or key not in before, key
    assert during["gguf.GGML_QUANT_SIZES"] is before["gguf.GGML_QUANT_SIZES"]  # gguf-py's dict is left alone
    assert during["sizes.len"] == before["sizes.len"]
    assert during["utils.dequantize_functions"] is before["utils.dequantize_functions"]  # entries, not the dict
    assert integration.enable() == "diffusers"  # again: nothing more
    integration.disable()
    assert not integration.is_enabled() and integration.active_layer() is None and not gguf_py.is_enabled()
    assert _same(before, _originals()) == []
    integration.disable()  # twice is fine


def test_enabled_context_and_gguf_py_left_as_found():
    gguf_py.enable()
    try:
        with integration.enabled() as layer:
            assert layer == "diffusers"
        assert gguf_py.is_enabled()  # the integration did not turn it on, so it does not turn it off
    finally:
        gguf_py.disable()


@pytest.mark.parametrize("step", ["_install_forward", "_install_dequantize", "_install_loader"])
def test_failure_in_enable_undoes_everything(monkeypatch, step):
    before = _originals()

    def broken(owner):
        raise RuntimeError("hook target broken")

    monkeypatch.setattr(integration, step, broken)
    with pytest.raises(RuntimeError, match="hook target broken"):
        integration.enable()
    assert not integration.is_enabled() and integration.installed_hooks() == () and not gguf_py.is_enabled()
    assert _same(before, _originals()) == []


def test_missing_hooks_fall_back_to_a_shallower_layer(monkeypatch):
    before = _originals()
    monkeypatch.delattr(utils, "dequantize_gguf_tensor")
    assert integration.enable() == "dequantize_functions"
    assert "load_gguf_checkpoint" in integration.installed_hooks()  # still there: installed
    assert isinstance(utils.dequantize_functions[gguf.GGMLQuantizationType.IQ3_S](
        torch.zeros(1, 110, dtype=torch.uint8), 256, 110), torch.Tensor)
    integration.disable()
    monkeypatch.undo()
    monkeypatch.delattr(utils, "dequantize_functions")
    assert integration.enable() == "diffusers"  # the table is only the fallback of dequantize_gguf_tensor
    integration.disable()
    monkeypatch.delattr(utils, "dequantize_gguf_tensor")
    assert integration.enable() == "gguf-py"
    assert gguf_py.is_enabled() and "load_gguf_checkpoint" in integration.installed_hooks()
    integration.disable()
    monkeypatch.delattr(utils, "GGUFParameter")  # every deeper hook makes diffusers' parameters
    assert integration.enable() == "gguf-py" and integration.installed_hooks() == ()
    integration.disable()
    monkeypatch.undo()
    assert _same(before, _originals()) == []
    with pytest.raises(ValueError):
        integration.enable("nope")
    assert integration.enable("gguf-py") == "gguf-py" and integration.installed_hooks() == ()


# --- loading -----------------------------------------------------------------------------------------


def test_checkpoint_is_read_without_copies(model, workdir):
    path = _file(model, workdir, "mix", _mix)
    theirs = loading.load_gguf_checkpoint(path)
    integration.enable()
    ours = loading.load_gguf_checkpoint(path)
    assert list(ours) == list(theirs)
    for name, tensor in theirs.items():
        mine = ours[name]
        assert type(mine) is type(tensor) and mine.dtype == tensor.dtype and mine.shape == tensor.shape, name
        assert getattr(mine, "quant_type", None) == getattr(tensor, "quant_type", None), name
        assert torch.equal(torch.Tensor.as_subclass(mine, torch.Tensor), torch.Tensor.as_subclass(tensor, torch.Tensor))
    # the quantized weights are views of one map of the file, not copies
    with fastgguf.open(path) as file:
        infos = file.tensors
        q = ours["transformer_blocks.0.ff.net.0.proj.weight"]
        k = ours["transformer_blocks.0.attn.to_k.weight"]
        gap = k.untyped_storage().data_ptr() - q.untyped_storage().data_ptr()
        assert gap == infos["transformer_blocks.0.attn.to_k.weight"].offset - \
            infos["transformer_blocks.0.ff.net.0.proj.weight"].offset
    with open(path, "rb") as handle:
        before = handle.read()
    torch.Tensor.as_subclass(q, torch.Tensor).zero_()  # writable, copy-on-write: the file is untouched
    with open(path, "rb") as handle:
        assert handle.read() == before


@pytest.mark.parametrize("compute", ["bfloat16", "float16", "float32"])
def test_mixed_model_matches_diffusers(model, workdir, monkeypatch, compute):
    """Loaded bytes equal; weights and outputs equal diffusers' dequantizers in float32, and its default within float16 roundings."""
    dtype = getattr(torch, compute)
    path = _file(model, workdir, "mix", _mix)
    args = models.inputs(dtype=dtype)
    theirs = models.load(path, workdir, dtype)
    with torch.no_grad():
        their_out = theirs(**args)[0]
    with integration.enabled(products="compute_dtype"):
        assert integration.active_products() == "compute_dtype"
        ours = models.load(path, workdir, dtype)
        with torch.no_grad():
            our_out = ours(**args)[0]
    their_state, our_state = _state(theirs), _state(ours)
    assert list(their_state) == list(our_state)
    for name, tensor in their_state.items():
        assert type(our_state[name]) is type(tensor) and our_state[name].dtype == tensor.dtype
        assert torch.equal(torch.Tensor.as_subclass(our_state[name], torch.Tensor),
                           torch.Tensor.as_subclass(tensor, torch.Tensor)), name

    # diffusers' default: float16 intermediates for Q8_0/Q4_K/IQ4_XS. Each output differs by what a
    # few float16 roundings of ~1e-1 weights move through the layers: checked against the size of the outputs
    scale = their_out.float().abs().max().item()
    assert (our_out.float() - their_out.float()).abs().max().item() <= 0.05 * scale

    # diffusers' own dequantizers in float32, then its GGUFLinear (cast to compute_dtype, F.linear): bit for bit
    _as_float32_table(monkeypatch)
    exact = models.load(path, workdir, dtype)
    with torch.no_grad():
        exact_out = exact(**args)[0]
    assert torch.equal(exact_out, our_out)


@pytest.mark.parametrize("name", list(SUPPORTED))
def test_dequantized_weights(model, workdir, name):
    """Per weight: == diffusers in float32; == diffusers' default for BF16/IQ4_NL; else within its float16 roundings."""
    qtype = SUPPORTED[name]
    path = _file(model, workdir, name, models.uniform(qtype))
    checkpoint = loading.load_gguf_checkpoint(path)
    theirs = {key: utils.dequantize_gguf_tensor(value) for key, value in checkpoint.items()
              if hasattr(value, "quant_type")}
    assert theirs
    with integration.enabled():
        ours = loading.load_gguf_checkpoint(path)
        for key, their_values in theirs.items():
            values = utils.dequantize_gguf_tensor(ours[key])
            assert values.dtype == torch.float32 and values.shape == their_values.shape
            block_size, type_size = fastgguf.types.TYPE_TRAITS[qtype]
            blocks = torch.Tensor.as_subclass(checkpoint[key], torch.Tensor).reshape(-1, type_size)
            original = integration._patches  # the table entries are ours while enabled: call diffusers' own
            their_fn = next(saved for owner, attribute, had, saved in original
                            if owner is utils.dequantize_functions and attribute == qtype)
            in_float32 = their_fn(blocks, block_size, type_size, dtype=torch.float32).reshape(values.shape)
            assert torch.equal(values, in_float32), key
            if qtype in (Q.BF16, Q.IQ4_NL):
                assert torch.equal(values, their_values.float()), key
            else:
                # diffusers' float16 arithmetic: each value is d*q (- m) with the scale product d rounded to
                # float16, then the product and the difference rounded; the terms reach about twice the block's
                # largest |value| (the offset cancels), so the error stays under 6 float16 roundoffs of it
                # (measured up to 4.3 for Q4_K), plus float16's smallest subnormal
                per_block = values.reshape(-1, block_size)
                bound = 6 * FP16_FRACTION * per_block.abs().amax(dim=-1, keepdim=True) + 2.0 ** -24
                assert bool(((per_block - their_values.float().reshape(-1, block_size)).abs() <= bound).all()), key
                if qtype == Q.Q8_0:  # one product, one rounding to float16
                    assert torch.equal(values.to(torch.float16), their_values), key


@pytest.mark.parametrize("name", ["Q8_0", "BF16", "IQ4_NL"])
def test_forward_bit_identical_to_diffusers_default(model, workdir, name):
    """Where diffusers' default dequantization is exact (or rounds once to the compute dtype), its outputs' bits."""
    qtype = SUPPORTED[name]
    dtype = torch.float16 if qtype == Q.Q8_0 else torch.bfloat16
    path = _file(model, workdir, name, models.uniform(qtype))
    args = models.inputs(dtype=dtype)
    with torch.no_grad():
        theirs = models.load(path, workdir, dtype)(**args)[0]
        with integration.enabled(products="compute_dtype"):
            ours = models.load(path, workdir, dtype)(**args)[0]
    assert torch.equal(ours, theirs)


def _dense_reference(model, path, dtype):
    """``model``'s architecture with plain weights: fastgguf.dequantize of the file's tensors, cast to ``dtype``."""
    reference = models.build().to(dtype)
    state = {}
    with fastgguf.open(path) as file:
        for name, info in file.tensors.items():
            state[name] = torch.from_numpy(fastgguf.dequantize(info.raw, info.type, info.shape)).to(dtype)
    reference.load_state_dict(state)
    return reference


@pytest.mark.parametrize("name", list(UNSUPPORTED))
def test_types_diffusers_refuses_load_when_enabled(model, workdir, name):
    qtype = UNSUPPORTED[name]
    path = _file(model, workdir, name, models.uniform(qtype))
    with pytest.raises((ValueError, OSError, KeyError)):
        models.load(path, workdir, torch.bfloat16)
    with integration.enabled(products="compute_dtype"):
        loaded = models.load(path, workdir, torch.bfloat16)
        weight = loaded.transformer_blocks[0].ff.net[0].proj.weight
        assert int(weight.quant_type) == int(qtype)
        with fastgguf.open(path) as file:
            info = file.tensors["transformer_blocks.0.ff.net.0.proj.weight"]
            expected = fastgguf.dequantize(info.raw, info.type, info.shape)
        assert np.array_equal(utils.dequantize_gguf_tensor(weight).numpy(), expected)
        args = models.inputs(dtype=torch.bfloat16)
        with torch.no_grad():
            ours = loaded(**args)[0]
    # a dense model holding fastgguf's values cast to bfloat16 computes the same bits
    with torch.no_grad():
        reference = _dense_reference(model, path, torch.bfloat16)(**args)[0]
    assert torch.equal(ours, reference)
    assert torch.isfinite(ours).all()


# --- products in float32 -----------------------------------------------------------------------------


def _ulp(values: torch.Tensor, dtype) -> torch.Tensor:
    """One unit in the last place of ``dtype`` at each of ``values`` (float32 tensor of dtype-representable values)."""
    info = torch.finfo(dtype)
    exponent = torch.floor(torch.log2(values.abs().clamp_min(info.smallest_normal)))
    return torch.exp2(exponent) * info.eps


@pytest.mark.parametrize("compute", ["bfloat16", "float16"])
@pytest.mark.parametrize("name", ["Q4_K", "IQ4_XS", "Q8_0", "BF16"])
def test_float32_products_per_layer(model, workdir, compute, name):
    """Each GGUFLinear: torch's float32 product of diffusers' values (weight rounded to compute_dtype), rounded once —
    exactly, or for a few rows fastgguf.matmul's float path from the blocks (the same products, summed in another
    order). Against diffusers' own compute_dtype product (float32 sums too, in another order): apart by at most one
    unit in the last place plus what float32 sums of k terms can differ by (outputs much smaller than their terms),
    and rarely apart at all."""
    dtype = getattr(torch, compute)
    path = _file(model, workdir, name, models.uniform(SUPPORTED[name]))
    generator = torch.Generator().manual_seed(5)
    with integration.enabled(products="float32"):
        assert integration.active_products() == "float32"
        loaded = models.load(path, workdir, dtype)
        layers = [module for module in loaded.modules() if isinstance(module, utils.GGUFLinear)]
        assert len(layers) > 10
        differing = total = 0
        for layer in layers:
            k = layer.in_features
            for rows in (1, 7, 64):
                x = (torch.randn(1, rows, k, generator=generator) * 2).to(dtype)
                with torch.no_grad():
                    ours = layer(x)
                    bias = None if layer.bias is None else layer.bias.to(dtype).float()
                    weight = integration._dequantize_parameter(layer.weight, dtype)  # diffusers' values (tested above)
                    expected = torch.nn.functional.linear(x.float(), weight.float(), bias).to(dtype)
                    theirs = torch.nn.functional.linear(x, weight, None if bias is None else bias.to(dtype))
                assert ours.dtype == dtype and ours.shape == theirs.shape
                magnitude = torch.nn.functional.linear(x.float().abs(), weight.float().abs(),
                                                       None if bias is None else bias.abs())
                for other in (expected, theirs):  # other orders of the float32 sums
                    difference = (ours.float() - other.float()).abs()
                    bound = _ulp(torch.maximum(ours.float().abs(), other.float().abs()), dtype) + \
                        2 * k * 2.0 ** -24 * magnitude
                    assert bool((difference <= bound).all())
                if rows > integration._FROM_BLOCKS_ROWS:  # torch's float32 product itself
                    assert torch.equal(ours, expected)
                difference = (ours.float() - theirs.float()).abs()
                differing += int((difference > 0).sum())
                total += difference.numel()
    assert differing <= 0.02 * total, (differing, total)


@pytest.mark.parametrize("compute", ["bfloat16", "float16"])
def test_float32_products_whole_model(model, workdir, compute):
    """A whole forward in float32 products: near diffusers' own (the per-layer differences travel through the layers)."""
    dtype = getattr(torch, compute)
    path = _file(model, workdir, "mix", _mix)
    args = models.inputs(dtype=dtype)
    with torch.no_grad():
        theirs = models.load(path, workdir, dtype)(**args)[0].float()
        with integration.enabled(products="float32"):
            ours = models.load(path, workdir, dtype)(**args)[0].float()
    scale = theirs.abs().max().item()
    assert torch.isfinite(ours).all()
    assert (ours - theirs).abs().max().item() <= 0.02 * scale


def test_float32_products_not_under_autograd(model, workdir):
    """With autograd recording (an input that needs its gradient), the product is diffusers' own, differentiable."""
    path = _file(model, workdir, "Q4_K", models.uniform(Q.Q4_K))
    with integration.enabled(products="float32"):
        loaded = models.load(path, workdir, torch.bfloat16)
        layer = loaded.transformer_blocks[0].ff.net[0].proj
        x = torch.randn(1, 5, layer.in_features).to(torch.bfloat16).requires_grad_()
        out = layer(x)
        out.float().sum().backward()
        assert x.grad is not None and x.grad.shape == x.shape
        weight = integration._dequantize_parameter(layer.weight, torch.bfloat16)
        expected = torch.nn.functional.linear(x.detach(), weight, layer.bias.to(torch.bfloat16))
        assert torch.equal(out.detach(), expected)


def test_products_auto_follows_the_cpu(monkeypatch):
    monkeypatch.setattr(integration, "native_half_products", lambda: {"bfloat16": False, "float16": False})
    assert integration.enable() == "diffusers" and integration.active_products() == "float32"
    integration.disable()
    assert integration.active_products() is None
    for native in ({"bfloat16": True, "float16": False}, {"bfloat16": False, "float16": True},
                   {"bfloat16": None, "float16": None}):
        monkeypatch.setattr(integration, "native_half_products", lambda native=native: native)
        assert integration.enable() and integration.active_products() == "compute_dtype", native
        integration.disable()
    assert integration.enable(products="float32") and integration.active_products() == "float32"
    integration.disable()
    with pytest.raises(ValueError, match="products"):
        integration.enable(products="float64")
    assert not integration.is_enabled()


def test_native_half_products_reads_the_cpu(monkeypatch):
    found = integration.native_half_products()
    assert set(found) == {"bfloat16", "float16"} and all(value in (True, False, None) for value in found.values())
    import platform

    monkeypatch.setattr(platform, "machine", lambda: "aarch64")
    assert integration.native_half_products() == {"bfloat16": None, "float16": None}
    monkeypatch.setattr(platform, "machine", lambda: "x86_64")
    monkeypatch.setattr(integration, "_cpu_flags", lambda: {"avx2", "avx512_bf16"})
    monkeypatch.setattr(torch.cpu, "_is_avx512_bf16_supported", lambda: False, raising=False)
    monkeypatch.setattr(torch.cpu, "_is_amx_tile_supported", lambda: False, raising=False)
    monkeypatch.setattr(torch.cpu, "_is_amx_fp16_supported", lambda: False, raising=False)
    assert integration.native_half_products() == {"bfloat16": True, "float16": False}
    monkeypatch.setattr(integration, "_cpu_flags", lambda: {"avx2"})
    assert integration.native_half_products() == {"bfloat16": False, "float16": False}
    monkeypatch.setattr(torch.cpu, "_is_amx_tile_supported", lambda: True, raising=False)
    assert integration.native_half_products()["bfloat16"] is True


def test_pyproject_extras_start_at_the_oldest_tested_release():
    """The extras' lower bound (what .ci/run installs for its second run) is the oldest release tested; no upper bound."""
    import tomllib

    from conftest import REPO

    with open(REPO / "pyproject.toml", "rb") as handle:
        extras = tomllib.load(handle)["project"]["optional-dependencies"]
    assert f"diffusers>={integration.OLDEST_TESTED_DIFFUSERS}" in extras["diffusers"]
    assert f"diffusers>={integration.OLDEST_TESTED_DIFFUSERS}" in extras["test"]
    assert not any(spec.startswith("diffusers") and "<" in spec for extra in extras.values() for spec in extra)


@pytest.mark.parametrize("products", ["float32", "compute_dtype"])
@pytest.mark.filterwarnings("ignore:Dynamo detected a call to a `functools.lru_cache`")  # diffusers' own code (0.37)
def test_torch_compile(model, workdir, products):
    """Under torch.compile the hooks run eagerly (a graph break each: numpy and the kernels cannot be traced):
    the compiled model gives the eager model's outputs. (dynamo's "eager" backend: the tracing is what is tested.)"""
    path = _file(model, workdir, "Q4_K", models.uniform(Q.Q4_K))
    args = models.inputs(dtype=torch.bfloat16)
    torch._dynamo.reset()
    try:
        with integration.enabled(products=products), torch.no_grad():
            loaded = models.load(path, workdir, torch.bfloat16)
            expected = loaded(**args)[0]
            compiled = torch.compile(loaded, backend="eager")
            assert torch.equal(compiled(**args)[0], expected)
            layer = loaded.transformer_blocks[0].ff.net[0].proj
            x = torch.randn(3, layer.in_features).to(torch.bfloat16)
            assert torch.equal(torch.compile(utils.dequantize_gguf_tensor, backend="eager")(layer.weight),
                               utils.dequantize_gguf_tensor(layer.weight))
            assert torch.equal(torch.compile(layer, backend="eager")(x), layer(x))
    finally:
        torch._dynamo.reset()
