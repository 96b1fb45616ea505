"""fastgguf.integrations.transformers: transformers' GGUF loading read through fastgguf gives transformers' results.

Each model is built by transformers itself (random weights), written by fastgguf's writer with
gguf-py's quantizers (fastgguf's for k-quants), then loaded twice — by transformers alone and with the
integration enabled — and the config, the token ids, every weight's bits and the logits are compared.

Families: llama, gemma2, gemma3, phi3 (sentencepiece vocabularies); gpt2, qwen2, qwen3, qwen2moe,
qwen3moe, falcon, bloom, stablelm, starcoder2, mamba, nemotron (byte-level BPE); t5 (unigram,
encoder-decoder) on transformers' legacy loader; qwen35, qwen35moe and lfm2 on its packed path. Where
transformers itself refuses a file (a llama file named "mistral"; Q5 blocks on the packed path; a MoE
base model), fastgguf refuses it the same way.
"""

from __future__ import annotations

import contextlib
import importlib
import importlib.util
import os
import sys
import types

import pytest

from conftest import REPO

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")
gguf = pytest.importorskip("gguf")
pytest.importorskip("accelerate")  # transformers loads GGUF weights only with it

from fastgguf import GGMLType  # noqa: E402
from fastgguf.integrations import transformers as integration  # noqa: E402

import hf_gguf_models  # noqa: E402 - after the skips: it needs torch and transformers

pytestmark = pytest.mark.skipif(integration.unsupported_reason() is not None,
                                reason=str(integration.unsupported_reason()))

TEXTS = ["héllo the cat", "日本語 🙂 straße über мир سلام 中文", "  two  spaces\nand a newline\t", "¿ünïcödé? ∑ 𝔘 x",
         "<|im_start|>user\n<think>héllo</think> 日本<|im_end|><|endoftext|><s>"]

Q = GGMLType
MODELS = {
    # name: (family, tensor types by name fragment (first match wins), builder options)
    "llama-mix": ("llama", {"token_embd": Q.Q8_0, "attn": Q.Q4_0, "output.weight": Q.F16}, {}),
    "llama-f32": ("llama", {"": Q.F32}, {}),
    "llama-f16": ("llama", {"": Q.F16}, {}),
    "llama-q4_0": ("llama", {"": Q.Q4_0}, {}),
    "gemma2-mix": ("gemma2", {"token_embd": Q.Q8_0, "ffn": Q.Q4_0, "attn": Q.F16}, {}),
    "gemma3-mix": ("gemma3", {"token_embd": Q.Q8_0, "ffn": Q.Q5_1, "attn": Q.Q4_0}, {}),
    # byte-level BPE, GPT-2's own pre-tokenizer; transposed Conv1D weights, biases everywhere, and an output
    # projection transformers' processor stores itself
    "gpt2-mix": ("gpt2", {"position_embd": Q.F16, "attn_qkv": Q.Q4_0, "ffn_up": Q.Q4_1, "output.weight": Q.Q4_1,
                          "": Q.Q8_0}, {}),
    # byte-level BPE tokenizer, 1-D attention biases, tied embeddings
    "qwen2-mix": ("qwen2", {"token_embd": Q.Q8_0, "attn": Q.Q5_0, "ffn": Q.Q4_1}, {"tied": True}),
    # q/k norms, head_dim 128 (transformers' default, which it does not read from the file), k-quants
    "qwen3-kquant": ("qwen3", {"attn_output": Q.Q4_K, "ffn_down": Q.Q6_K, "attn": Q.Q5_1, "output.weight": Q.F16,
                               "": Q.Q8_0}, {"intermediate": 256}),
    # fused attn_qkv and ffn_up (gate and up), phi3's own sentencepiece normalizer
    "phi3-mix": ("phi3", {"attn_qkv": Q.Q4_0, "ffn_up": Q.Q5_1, "ffn_down": Q.F16, "": Q.Q8_0}, {}),
    # 3-D expert tensors (gate and up merged by transformers), a shared expert with a 1-D gate
    "qwen2moe-mix": ("qwen2moe", {"ffn_down_shexp": Q.Q4_K, "exps": Q.Q4_0, "shexp": Q.Q8_0, "attn": Q.Q5_0,
                                  "": Q.Q8_0}, {"layers": 1}),
    "qwen3moe-mix": ("qwen3moe", {"ffn_down_exps": Q.Q6_K, "exps": Q.Q4_1, "ffn_gate_inp": Q.F32, "": Q.Q8_0},
                     {"layers": 1}),
}
BPE_MODELS = [name for name, (family, _, _) in MODELS.items() if family.startswith(("qwen", "gpt2"))] + ["qwen35moe-mix", "qwen35-mix"]
# more of the legacy loader's architectures, each shaped by transformers' own reading of its metadata:
# fused qkv (falcon, bloom: transformers reorders bloom's), layer norms with biases, mamba's state-space
# tensors (ssm_a = -exp(A_log), a squeezed conv1d), nemotron's norms stored as w + 1
GENERIC_ARCHS = ["falcon", "bloom", "stablelm", "starcoder2", "mamba", "nemotron"]
_GENERIC_TYPES = {"attn": Q.Q4_0, "ffn": Q.Q4_1, "ssm_in": Q.Q4_0, "ssm_out": Q.Q4_1, "": Q.Q8_0}
# on transformers' packed path (its GGUF_ARCHS): a hybrid linear-attention MoE
_QWEN35MOE_TYPES = {"exps": Q.Q4_0, "shexp": Q.Q4_1, "ssm_out": Q.Q8_0, "attn": Q.Q4_1, "": Q.Q8_0}


@pytest.fixture(autouse=True)
def _disabled():
    """Every test starts and ends with transformers reading GGUF its own way."""
    integration.disable()
    yield
    integration.disable()


@pytest.fixture(scope="module")
def model_dir(tmp_path_factory):
    directory = tmp_path_factory.mktemp("hf_gguf")
    for name, (family, tensor_types, options) in MODELS.items():
        hf_gguf_models.build(str(directory / f"{name}.gguf"), family, types=tensor_types, **options)
    hf_gguf_models.build(str(directory / "llama-tied.gguf"), "llama", tied=True)
    hf_gguf_models.build(str(directory / "mistral.gguf"), "mistral", layers=1)
    hf_gguf_models.build_t5(str(directory / "t5-mix.gguf"), {"attn_q": Q.Q4_0, "ffn": Q.Q4_1, "attn_o": Q.F16,
                                                             "": Q.Q8_0})
    for arch in GENERIC_ARCHS:
        hf_gguf_models.build_generic(str(directory / f"{arch}.gguf"), arch, _GENERIC_TYPES)
    hf_gguf_models.build_qwen35moe(str(directory / "qwen35moe-mix.gguf"), _QWEN35MOE_TYPES)
    hf_gguf_models.build_qwen35moe(str(directory / "qwen35-mix.gguf"), _QWEN35MOE_TYPES, moe=False)
    return directory


def _load(directory, name, dtype):
    file = f"{name}.gguf"
    config = transformers.AutoConfig.from_pretrained(directory, gguf_file=file)
    tokenizer = transformers.AutoTokenizer.from_pretrained(directory, gguf_file=file)
    model, info = transformers.AutoModelForCausalLM.from_pretrained(directory, gguf_file=file, dtype=dtype,
                                                                    output_loading_info=True)
    assert not any(info.values()), info  # every weight from the file: nothing left to random initialisation
    return config, tokenizer, model


def _logits(model, ids):
    with torch.no_grad():
        return model(torch.tensor([ids])).logits


def _same_bits(a, b) -> bool:
    if a.dtype != b.dtype or a.shape != b.shape:
        return False
    width = {1: torch.uint8, 2: torch.int16, 4: torch.int32, 8: torch.int64}[a.element_size()]
    return torch.equal(a.contiguous().view(width), b.contiguous().view(width))


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16, torch.float16], ids=str)
@pytest.mark.parametrize("name", [*MODELS, "llama-tied"])
def test_same_results_as_transformers(model_dir, name, dtype):
    config, tokenizer, model = _load(model_dir, name, dtype)
    with integration.enabled() as on:
        assert on and integration.is_enabled()
        fast_config, fast_tokenizer, fast_model = _load(model_dir, name, dtype)
    assert not integration.is_enabled()

    assert fast_config.to_dict() == config.to_dict()
    assert type(fast_tokenizer) is type(tokenizer)
    for text in TEXTS:
        ids = tokenizer(text)["input_ids"]
        assert fast_tokenizer(text)["input_ids"] == ids
        assert fast_tokenizer.decode(ids) == tokenizer.decode(ids)
        if name in BPE_MODELS:  # byte-level BPE loses nothing, multi-byte characters included
            assert fast_tokenizer.decode(ids) == text
    assert fast_tokenizer.get_vocab() == tokenizer.get_vocab()

    expected, got = model.state_dict(), fast_model.state_dict()
    assert list(got) == list(expected)
    for key, value in expected.items():
        assert _same_bits(got[key], value), key
        # torch picks matmul kernels by layout (with AVX-512, a transposed weight rounds differently)
        assert got[key].stride() == value.stride(), key
    ids = tokenizer(TEXTS[1])["input_ids"]
    assert _same_bits(_logits(fast_model, ids), _logits(model, ids))


@pytest.mark.parametrize("name, stored", [
    ("qwen2moe-mix", ["model.layers.0.mlp.experts.gate_up_proj", "model.layers.0.mlp.experts.down_proj"]),
    ("qwen3moe-mix", ["model.layers.0.mlp.experts.gate_up_proj", "model.layers.0.mlp.experts.down_proj"]),
    ("gpt2-mix", ["lm_head.weight"]),
])
def test_processor_stored_tensors_in_load_dtype(model_dir, name, stored):
    """transformers' MoE processor stores the merged experts itself (gpt2's stores the output projection), in
    float32 whatever the dtype, and its loader casts them at the end; read through fastgguf, each is cast as it
    is made (the same rounding), so a bfloat16 load never holds them all in float32. A parameter the model
    keeps in float32 stays float32."""
    legacy = importlib.import_module("transformers.modeling_gguf_pytorch_utils")
    path = str(model_dir / f"{name}.gguf")
    config = transformers.AutoConfig.from_pretrained(model_dir, gguf_file=f"{name}.gguf")
    with torch.device("meta"):
        model = transformers.AutoModelForCausalLM.from_config(config, dtype=torch.bfloat16)
    kept = stored[-1]
    if len(stored) > 1:  # one parameter kept in float32
        module, attribute = kept.rsplit(".", 1)
        setattr(model.get_submodule(module), attribute, torch.nn.Parameter(model.get_parameter(kept).float()))

    def load():
        return legacy.load_gguf_checkpoint(path, return_tensors=True, model_to_load=model,
                                           torch_dtype=torch.bfloat16)["tensors"]

    expected = load()
    with integration.enabled():
        got = load()
    assert type(got) is dict and list(got) == list(expected)
    assert [key for key, value in expected.items() if value.dtype == torch.float32] == stored
    for key, value in expected.items():
        if key == kept and len(stored) > 1:
            assert _same_bits(got[key], value)
        else:
            assert _same_bits(got[key], value.to(torch.bfloat16)), key


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16], ids=str)
@pytest.mark.parametrize("arch", GENERIC_ARCHS)
def test_other_architectures_same_as_transformers(model_dir, arch, dtype):
    """falcon, bloom, stablelm, starcoder2, mamba, nemotron: transformers maps every weight of the file (nothing
    left to random initialisation, which would make the comparison vacuous), and through fastgguf the config,
    token ids, weights and logits are the same."""
    file = f"{arch}.gguf"
    config = transformers.AutoConfig.from_pretrained(model_dir, gguf_file=file)
    tokenizer = transformers.AutoTokenizer.from_pretrained(model_dir, gguf_file=file)
    model, info = transformers.AutoModelForCausalLM.from_pretrained(model_dir, gguf_file=file, dtype=dtype,
                                                                    output_loading_info=True)
    assert not any(info.values()), info
    with integration.enabled():
        fast_config = transformers.AutoConfig.from_pretrained(model_dir, gguf_file=file)
        fast_tokenizer = transformers.AutoTokenizer.from_pretrained(model_dir, gguf_file=file)
        fast_model = transformers.AutoModelForCausalLM.from_pretrained(model_dir, gguf_file=file, dtype=dtype)
    assert fast_config.to_dict() == config.to_dict()
    ids = tokenizer(TEXTS[1])["input_ids"]
    assert fast_tokenizer(TEXTS[1])["input_ids"] == ids and tokenizer.decode(ids) == TEXTS[1]
    expected, got = model.state_dict(), fast_model.state_dict()
    assert list(got) == list(expected)
    for key, value in expected.items():
        assert _same_bits(got[key], value), key
    assert _same_bits(_logits(fast_model, ids), _logits(model, ids))


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16], ids=str)
def test_t5_same_results_as_transformers(model_dir, dtype):
    """An encoder-decoder with a unigram tokenizer (T5's sentinels renamed from the file's ``[PAD..]``), loaded
    as AutoModelForSeq2SeqLM and as T5EncoderModel: the same config, ids, weights and logits."""
    file = "t5-mix.gguf"

    def load():
        config = transformers.AutoConfig.from_pretrained(model_dir, gguf_file=file)
        tokenizers = [transformers.AutoTokenizer.from_pretrained(model_dir, gguf_file=file, use_fast=fast)
                      for fast in (True, False)]
        model = transformers.AutoModelForSeq2SeqLM.from_pretrained(model_dir, gguf_file=file, dtype=dtype)
        encoder = transformers.T5EncoderModel.from_pretrained(model_dir, gguf_file=file, dtype=dtype)
        return config, tokenizers, model, encoder

    config, tokenizers, model, encoder = load()
    with integration.enabled():
        fast_config, fast_tokenizers, fast_model, fast_encoder = load()
    assert type(model).__name__ == "T5ForConditionalGeneration" and config.is_gated_act
    assert fast_config.to_dict() == config.to_dict()
    texts = [*TEXTS, "a <extra_id_0> cat <extra_id_99>"]
    for tokenizer, fast_tokenizer in zip(tokenizers, fast_tokenizers):
        assert type(fast_tokenizer) is type(tokenizer)
        assert fast_tokenizer.get_vocab() == tokenizer.get_vocab()
        for text in texts:
            ids = tokenizer(text)["input_ids"]
            assert fast_tokenizer(text)["input_ids"] == ids
            assert fast_tokenizer.decode(ids) == tokenizer.decode(ids)
    for expected, got in ((model.state_dict(), fast_model.state_dict()),
                          (encoder.state_dict(), fast_encoder.state_dict())):
        assert list(got) == list(expected)
        for key, value in expected.items():
            assert _same_bits(got[key], value), key
    ids = torch.tensor([tokenizers[0](TEXTS[0])["input_ids"]])
    with torch.no_grad():
        logits = model(input_ids=ids, decoder_input_ids=ids[:, :3]).logits
        fast_logits = fast_model(input_ids=ids, decoder_input_ids=ids[:, :3]).logits
        hidden, fast_hidden = encoder(input_ids=ids).last_hidden_state, fast_encoder(input_ids=ids).last_hidden_state
    assert _same_bits(fast_logits, logits) and _same_bits(fast_hidden, hidden)


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16], ids=str)
@pytest.mark.parametrize("name", ["llama-mix", "gpt2-mix", "qwen2-mix", "qwen3-kquant"])
def test_base_model_same_as_transformers(model_dir, name, dtype):
    """AutoModel (no LM head, parameter names without the ``model.`` prefix): the same weights."""
    expected = transformers.AutoModel.from_pretrained(model_dir, gguf_file=f"{name}.gguf", dtype=dtype).state_dict()
    with integration.enabled():
        got = transformers.AutoModel.from_pretrained(model_dir, gguf_file=f"{name}.gguf", dtype=dtype).state_dict()
    assert list(got) == list(expected) and not any(key.startswith(("model.", "lm_head")) for key in got)
    for key, value in expected.items():
        assert _same_bits(got[key], value), key


@pytest.mark.parametrize("name", ["qwen2moe-mix", "qwen3moe-mix"])
def test_moe_base_model_refused_as_by_transformers(model_dir, name):
    """transformers' MoE processor maps experts only under ``model.layers``, so AutoModel (bare ``layers``) fails
    in it with a KeyError; through fastgguf it fails the same way."""
    with pytest.raises(KeyError) as refused:
        transformers.AutoModel.from_pretrained(model_dir, gguf_file=f"{name}.gguf")
    with integration.enabled(), pytest.raises(KeyError) as fast_refused:
        transformers.AutoModel.from_pretrained(model_dir, gguf_file=f"{name}.gguf")
    assert fast_refused.value.args == refused.value.args == ("blk.0.ffn_gate_exps",)


def test_mistral_named_llama_file(model_dir):
    """A llama file named "mistral" is a Mistral config to transformers; its weights it cannot map (gguf-py has
    no "mistral" architecture): config and tokenizer are the same through fastgguf, and so is the refusal."""
    file = "mistral.gguf"
    config = transformers.AutoConfig.from_pretrained(model_dir, gguf_file=file)
    tokenizer = transformers.AutoTokenizer.from_pretrained(model_dir, gguf_file=file)
    with pytest.raises(NotImplementedError, match="Unknown gguf model_type: mistral") as refused:
        transformers.AutoModelForCausalLM.from_pretrained(model_dir, gguf_file=file)
    with integration.enabled():
        fast_config = transformers.AutoConfig.from_pretrained(model_dir, gguf_file=file)
        fast_tokenizer = transformers.AutoTokenizer.from_pretrained(model_dir, gguf_file=file)
        with pytest.raises(NotImplementedError) as fast_refused:
            transformers.AutoModelForCausalLM.from_pretrained(model_dir, gguf_file=file)
    assert config.model_type == "mistral"
    assert fast_config.to_dict() == config.to_dict()
    assert [fast_tokenizer(text)["input_ids"] for text in TEXTS] == [tokenizer(text)["input_ids"] for text in TEXTS]
    assert str(fast_refused.value) == str(refused.value)


def test_tied_model_ties(model_dir):
    with integration.enabled():
        _, _, model = _load(model_dir, "llama-tied", torch.float32)
    assert model.config.tie_word_embeddings
    assert model.lm_head.weight.data_ptr() == model.model.embed_tokens.weight.data_ptr()


@pytest.mark.parametrize("name", ["llama-mix", "qwen2-mix", "qwen3moe-mix"])
def test_gguf_py_is_not_used_while_enabled(model_dir, monkeypatch, name):
    """With the integration on, neither gguf-py's reader nor its dequantizer runs (both raise here)."""

    def refuse(*args, **kwargs):
        raise AssertionError("gguf-py was used")

    expected = _load(model_dir, name, torch.float32)[2].state_dict()
    monkeypatch.setattr(gguf, "GGUFReader", refuse)
    monkeypatch.setattr(gguf, "dequantize", refuse)
    with integration.enabled():
        _, _, model = _load(model_dir, name, torch.float32)
    assert all(_same_bits(model.state_dict()[key], value) for key, value in expected.items())


def test_header_parsed_once(model_dir, monkeypatch):
    """Config, tokenizer and model of one file share one parse of its header."""
    import fastgguf

    opened = []
    real_open = fastgguf.open
    monkeypatch.setattr(fastgguf, "open", lambda path: opened.append(path) or real_open(path))
    with integration.enabled():
        _load(model_dir, "gemma2-mix", torch.bfloat16)
        _load(model_dir, "gemma2-mix", torch.float32)
    assert len(opened) == 1


def test_changed_file_is_parsed_again(tmp_path):
    path = str(tmp_path / "m.gguf")
    hf_gguf_models.build(path, "llama", layers=1)
    with integration.enabled():
        first = transformers.AutoConfig.from_pretrained(tmp_path, gguf_file="m.gguf")
        hf_gguf_models.build(path, "llama", layers=2)
        os.utime(path, ns=(1, 1))  # a new mtime even on a coarse clock
        second = transformers.AutoConfig.from_pretrained(tmp_path, gguf_file="m.gguf")
    assert (first.num_hidden_layers, second.num_hidden_layers) == (1, 2)


def test_split_model_opens_as_one(model_dir, tmp_path):
    first_shard = hf_gguf_models.split(str(model_dir / "llama-mix.gguf"), str(tmp_path), shards=3)
    expected = _load(model_dir, "llama-mix", torch.bfloat16)
    with integration.enabled():
        got = _load(tmp_path, os.path.basename(first_shard).removesuffix(".gguf"), torch.bfloat16)
    assert got[0].to_dict() | {"_name_or_path": None} == expected[0].to_dict() | {"_name_or_path": None}
    assert got[1](TEXTS[1])["input_ids"] == expected[1](TEXTS[1])["input_ids"]
    assert all(_same_bits(got[2].state_dict()[key], value) for key, value in expected[2].state_dict().items())


@pytest.mark.parametrize("name", ["llama-mix", "qwen3moe-mix", "qwen35moe-mix"])
def test_packed_path_readers_match_transformers(model_dir, name):
    """The packed path's metadata, tensor table and raw block views are transformers' own, read by fastgguf
    (a sentencepiece vocabulary; a BPE one with its merges and 3-D quantized expert tensors)."""
    reader = importlib.import_module("transformers.integrations.gguf.reader")
    path = str(model_dir / f"{name}.gguf")
    wanted = ("tokenizer.ggml.tokens", "tokenizer.ggml.merges")
    metadata, names = reader.read_gguf_metadata(path, wanted)
    header = reader.GgufHeader.from_file(path)
    blocks = {name: tensor[...] for name, tensor in reader.load_gguf_state_dict(header).items()}
    with integration.enabled():
        fast_metadata, fast_names = reader.read_gguf_metadata(path, wanted)
        fast_header = reader.GgufHeader.from_file(path)
        fast_blocks = {name: tensor[...] for name, tensor in reader.load_gguf_state_dict(fast_header).items()}
    assert fast_names == names
    lazy = [key for key in wanted if key in metadata]
    assert lazy == list(wanted if name in BPE_MODELS else wanted[:1])
    for key in lazy:
        assert list(fast_metadata[key]) == metadata[key]
    assert {**fast_metadata, **dict.fromkeys(lazy)} == {**metadata, **dict.fromkeys(lazy)}
    assert fast_header == header
    assert list(fast_blocks) == list(blocks)
    for name, value in blocks.items():
        assert _same_bits(fast_blocks[name], value), name


def test_packed_header_refuses_what_transformers_refuses(model_dir):
    """transformers' packed reader has no Q5_0/Q5_1 blocks; read by fastgguf, the header is refused the same way."""
    reader = importlib.import_module("transformers.integrations.gguf.reader")
    path = str(model_dir / "qwen2moe-mix.gguf")
    with pytest.raises(ValueError, match="ggml type 6, which is not supported") as expected:
        reader.GgufHeader.from_file(path)
    with integration.enabled(), pytest.raises(ValueError) as got:
        reader.GgufHeader.from_file(path)
    assert str(got.value) == str(expected.value)


def test_disable_restores_transformers(model_dir):
    legacy = importlib.import_module("transformers.modeling_gguf_pytorch_utils")
    reader = importlib.import_module("transformers.integrations.gguf.reader")
    before = (legacy.load_gguf_checkpoint, legacy._gguf_parse_value, reader.read_gguf_metadata,
              reader.load_gguf_state_dict, reader.GgufHeader.from_file)
    assert integration.enable()
    assert integration.enable()  # again: nothing more
    assert legacy.load_gguf_checkpoint is not before[0]
    integration.disable()
    integration.disable()
    after = (legacy.load_gguf_checkpoint, legacy._gguf_parse_value, reader.read_gguf_metadata,
             reader.load_gguf_state_dict, reader.GgufHeader.from_file)
    assert after == before
    assert not integration.is_enabled()


def test_missing_dependency_does_nothing(monkeypatch):
    legacy = importlib.import_module("transformers.modeling_gguf_pytorch_utils")
    before = legacy.load_gguf_checkpoint
    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "gguf" else real(name, *a))
    assert "gguf not installed" in integration.unsupported_reason()
    with pytest.warns(RuntimeWarning, match="gguf not installed"):
        assert integration.enable() is False
    assert not integration.is_enabled() and integration.active_layer() is None
    assert legacy.load_gguf_checkpoint is before


def test_deepest_layer_on_this_transformers():
    # CI runs this file on the oldest supported and the newest transformers: the hooks must fit both
    assert integration.hooks_unavailable_reason() is None
    assert integration.enable() == "transformers" == integration.active_layer()
    assert gguf.GGUFReader.__module__ == "fastgguf.gguf_compat"
    integration.disable()
    assert gguf.GGUFReader.__module__ == "gguf.gguf_reader"


def _hooks_gone(monkeypatch):
    """Make the installed transformers look like a release whose GGUF loader moved."""
    def moved():
        raise AttributeError("module 'transformers.modeling_gguf_pytorch_utils' has no attribute 'load_gguf_checkpoint'")

    monkeypatch.setattr(integration, "_targets", moved)


def test_hooks_missing_falls_back_to_gguf_py_layer(model_dir, monkeypatch):
    legacy = importlib.import_module("transformers.modeling_gguf_pytorch_utils")
    before = legacy.load_gguf_checkpoint
    _hooks_gone(monkeypatch)
    assert "lacks a GGUF loading function" in integration.hooks_unavailable_reason()
    with pytest.raises(RuntimeError, match="lacks a GGUF loading function"):
        integration.enable("transformers")
    assert not integration.is_enabled()
    assert integration.enable() == "gguf-py" == integration.active_layer()
    assert legacy.load_gguf_checkpoint is before  # nothing of transformers' own is replaced
    assert gguf.GGUFReader.__module__ == "fastgguf.gguf_compat"
    integration.disable()
    assert gguf.GGUFReader.__module__ == "gguf.gguf_reader" and not integration.is_enabled()


def test_layer_argument_checked():
    with pytest.raises(ValueError, match="layer must be"):
        integration.enable("torch")
    assert integration.enable("gguf-py") == "gguf-py"
    assert integration.enable() == "gguf-py"  # already on: the same layer
    with pytest.raises(RuntimeError, match="already enabled"):
        integration.enable("transformers")


@pytest.mark.parametrize("name", ["llama-mix", "gemma3-mix", "qwen3moe-mix", "qwen35moe-mix"])
def test_gguf_py_layer_same_results_as_transformers(model_dir, name):
    expected_config, expected_tokenizer, expected = _load(model_dir, name, torch.float32)
    text = "The quick brown fox jumps over the lazy dog. 1234 \u00e9t\u00e9"
    ids = expected_tokenizer(text)["input_ids"]
    with _gguf_py_layer():
        config, tokenizer, model = _load(model_dir, name, torch.float32)
    assert config.to_dict() == expected_config.to_dict()
    assert tokenizer(text)["input_ids"] == ids
    got = model.state_dict()
    for key, value in expected.state_dict().items():
        assert _same_bits(got[key], value), key
    assert _same_bits(_logits(model, ids), _logits(expected, ids))


@contextlib.contextmanager
def _gguf_py_layer():
    assert integration.enable("gguf-py") == "gguf-py"
    try:
        yield
    finally:
        integration.disable()


def test_kernel_module_installed_and_removed(monkeypatch):
    calls = []
    fake = types.ModuleType("fastgguf.integrations._transformers_kernels")
    fake.install = lambda exact=True: calls.append(("install", exact))
    fake.uninstall = lambda: calls.append("uninstall")
    monkeypatch.setitem(sys.modules, fake.__name__, fake)
    with integration.enabled():
        assert calls == [("install", True)]
    assert calls == [("install", True), "uninstall"]
    calls.clear()
    with integration.enabled(exact=False):
        assert calls == [("install", False)]
        assert integration.enable(exact=True) == "transformers"  # already on: only the path changes
        assert calls == [("install", False), ("install", True)]
    assert calls[-1] == "uninstall"


def test_enable_exact_reaches_the_kernels():
    from fastgguf.integrations import _transformers_kernels

    with pytest.raises(TypeError):
        integration.enable(exact=1)
    assert not integration.is_enabled()
    try:
        assert integration.enable(exact=False) == "transformers"
        assert _transformers_kernels.is_exact() is False
        integration.enable()
        assert _transformers_kernels.is_exact() is True
    finally:
        integration.disable()
    assert _transformers_kernels.is_exact() is None


def test_pyproject_extra_has_no_upper_bound():
    tomllib = pytest.importorskip("tomllib")

    root = str(REPO / "pyproject.toml")
    with open(root, "rb") as handle:
        extras = tomllib.load(handle)["project"]["optional-dependencies"]
    oldest = ".".join(integration.OLDEST_TESTED_TRANSFORMERS.split(".")[:2])
    assert f"transformers>={oldest}" in extras["transformers"]
    assert not any(spec.startswith("transformers") and "<" in spec for extra in extras.values() for spec in extra)


@pytest.mark.parametrize("name, cls", [("llama-mix", "LlamaTokenizer"), ("gemma2-mix", "GemmaTokenizer"),
                                       ("llama-f16", "AutoTokenizer"), ("phi3-mix", "AutoTokenizer"),
                                       ("qwen2-mix", "Qwen2Tokenizer"), ("qwen2-mix", "GPT2Tokenizer"),
                                       ("qwen3moe-mix", "AutoTokenizer")])
@pytest.mark.parametrize("use_fast", [True, False])
def test_tokenizer_classes(model_dir, name, cls, use_fast):
    """The tokenizer classes directly, and asked for a slow one (5.x builds the same backend from a GGUF)."""
    tokenizer_class = getattr(transformers, cls)
    expected = tokenizer_class.from_pretrained(model_dir, gguf_file=f"{name}.gguf", use_fast=use_fast)
    with integration.enabled():
        got = tokenizer_class.from_pretrained(model_dir, gguf_file=f"{name}.gguf", use_fast=use_fast)
    assert type(got) is type(expected)
    assert got.get_vocab() == expected.get_vocab()
    assert got.all_special_tokens == expected.all_special_tokens
    for text in TEXTS:
        ids = expected(text)["input_ids"]
        assert got(text)["input_ids"] == ids
        assert got.decode(ids, skip_special_tokens=True) == expected.decode(ids, skip_special_tokens=True)
    assert (got.bos_token, got.eos_token, got.unk_token) == (expected.bos_token, expected.eos_token,
                                                             expected.unk_token)


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16], ids=str)
def test_packed_architecture_dequantized_same_as_transformers(tmp_path, dtype):
    """LFM2 goes through transformers' packed path: the config (get_gguf_config) and, asked to dequantize,
    the weights and logits are transformers' own when fastgguf reads the file. In bfloat16 the blocks are
    unpacked by fastgguf's kernel (installed by enable()) in float32 and rounded once, so the weights are
    transformers' float32 ones cast to bfloat16 (transformers' own torch unpacking computes in bfloat16
    and can differ from that in the last bit). (The builder's vocabulary has no scores, which
    transformers' tokenizer conversion needs, so no tokenizer here.)"""
    from lfm2_gguf import build_lfm2

    build_lfm2(str(tmp_path / "lfm2.gguf"), {"attn": GGMLType.Q4_0, "": GGMLType.Q8_0})

    def load(dtype):
        config = transformers.AutoConfig.from_pretrained(tmp_path, gguf_file="lfm2.gguf")
        model = transformers.AutoModelForCausalLM.from_pretrained(
            tmp_path, gguf_file="lfm2.gguf", dtype=dtype,
            quantization_config=transformers.GgufConfig(dequantize=True))
        return config, model

    config, model = load(torch.float32)
    with integration.enabled():
        fast_config, fast_model = load(dtype)
    assert fast_config.to_dict() | {"dtype": None} == config.to_dict() | {"dtype": None}
    expected, got = model.state_dict(), fast_model.state_dict()
    assert list(got) == list(expected)
    for key, value in expected.items():
        assert _same_bits(got[key], value.to(dtype)), key
    if dtype == torch.float32:
        ids = [1, 17, 250, 3, 99, 42]
        assert _same_bits(_logits(fast_model, ids), _logits(model, ids))


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16], ids=str)
@pytest.mark.parametrize("name", ["qwen35moe-mix", "qwen35-mix"])
def test_packed_qwen35_same_as_transformers(model_dir, name, dtype):
    """Qwen3.5 (dense and MoE) goes through transformers' packed path (config from get_gguf_config, the qwen35
    BPE pre-tokenizer, its conversion ops; for the MoE 3-D expert blocks fused by them). Asked to dequantize,
    everything is transformers' own when fastgguf reads the file; in bfloat16 the weights are transformers'
    float32 ones rounded once (fastgguf's kernel unpacks in float32; see the LFM2 test)."""
    file = f"{name}.gguf"

    def load(dtype):
        config = transformers.AutoConfig.from_pretrained(model_dir, gguf_file=file)
        tokenizer = transformers.AutoTokenizer.from_pretrained(model_dir, gguf_file=file)
        model = transformers.AutoModelForCausalLM.from_pretrained(
            model_dir, gguf_file=file, dtype=dtype, quantization_config=transformers.GgufConfig(dequantize=True))
        return config, tokenizer, model

    config, tokenizer, model = load(torch.float32)
    with integration.enabled():
        fast_config, fast_tokenizer, fast_model = load(dtype)
    moe = name == "qwen35moe-mix"
    assert type(model).__name__ == ("Qwen3_5MoeForCausalLM" if moe else "Qwen3_5ForCausalLM")
    assert "full_attention" in config.layer_types
    assert fast_config.to_dict() | {"dtype": None} == config.to_dict() | {"dtype": None}
    assert type(fast_tokenizer) is type(tokenizer)
    for text in TEXTS:
        ids = tokenizer(text)["input_ids"]
        assert fast_tokenizer(text)["input_ids"] == ids
        assert fast_tokenizer.decode(ids) == tokenizer.decode(ids) == text
    expected, got = model.state_dict(), fast_model.state_dict()
    assert list(got) == list(expected)
    if moe:
        assert expected["model.layers.0.mlp.experts.gate_up_proj"].shape == (4, 64, 64)
    for key, value in expected.items():
        assert _same_bits(got[key], value.to(dtype)), key
    if dtype == torch.float32:
        ids = tokenizer(TEXTS[1])["input_ids"]
        assert _same_bits(_logits(fast_model, ids), _logits(model, ids))


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16], ids=str)
@pytest.mark.parametrize("name", ["llama-mix", "gemma2-mix", "qwen3-kquant", "qwen2moe-mix"])
def test_large_tensors_in_row_blocks(model_dir, monkeypatch, name, dtype):
    """Tensors above the release threshold are read in row blocks (pages let go after each): same bits."""
    monkeypatch.setattr(integration, "_RELEASE_CHUNK_BYTES", 700)  # a few rows of every 2-D tensor
    expected = _load(model_dir, name, dtype)[2].state_dict()
    with integration.enabled():
        got = _load(model_dir, name, dtype)[2].state_dict()
    for key, value in expected.items():
        assert _same_bits(got[key], value), key


#: what each file must hold for its test to mean what it says: {tensor name: (type, number of dimensions)}
_LAYOUTS = {
    "gemma3-mix": {"blk.0.attn_q_norm.weight": (Q.F32, 1), "blk.1.post_ffw_norm.weight": (Q.F32, 1),
                   "blk.0.ffn_up.weight": (Q.Q5_1, 2), "output.weight": None},
    "gpt2-mix": {"output.weight": (Q.Q4_1, 2), "position_embd.weight": (Q.F16, 2), "blk.0.attn_qkv.weight": (Q.Q4_0, 2),
                 "blk.1.attn_qkv.bias": (Q.F32, 1), "blk.0.ffn_up.weight": (Q.Q4_1, 2), "blk.0.ffn_norm.bias": (Q.F32, 1)},
    "t5-mix": {"enc.blk.0.attn_q.weight": (Q.Q4_0, 2), "dec.blk.1.cross_attn_q.weight": (Q.Q4_0, 2),
               "dec.blk.0.ffn_gate.weight": (Q.Q4_1, 2), "enc.blk.0.attn_o.weight": (Q.F16, 2),
               "enc.blk.0.attn_rel_b.weight": (Q.F32, 2), "output.weight": (Q.Q8_0, 2)},
    "qwen2-mix": {"blk.0.attn_q.bias": (Q.F32, 1), "blk.1.attn_v.bias": (Q.F32, 1), "blk.0.attn_k.weight": (Q.Q5_0, 2),
                  "blk.1.ffn_gate.weight": (Q.Q4_1, 2), "output.weight": None},
    "qwen3-kquant": {"blk.0.attn_q_norm.weight": (Q.F32, 1), "blk.1.attn_k_norm.weight": (Q.F32, 1),
                     "blk.0.attn_output.weight": (Q.Q4_K, 2), "blk.1.ffn_down.weight": (Q.Q6_K, 2),
                     "output.weight": (Q.F16, 2)},
    "phi3-mix": {"blk.0.attn_qkv.weight": (Q.Q4_0, 2), "blk.1.ffn_up.weight": (Q.Q5_1, 2), "blk.0.attn_q.weight": None,
                 "blk.0.ffn_gate.weight": None},
    "qwen2moe-mix": {"blk.0.ffn_gate_exps.weight": (Q.Q4_0, 3), "blk.0.ffn_up_exps.weight": (Q.Q4_0, 3),
                     "blk.0.ffn_down_exps.weight": (Q.Q4_0, 3), "blk.0.ffn_gate_inp_shexp.weight": (Q.F32, 1),
                     "blk.0.ffn_down_shexp.weight": (Q.Q4_K, 2), "blk.0.ffn_gate_inp.weight": (Q.Q8_0, 2)},
    "qwen3moe-mix": {"blk.0.ffn_gate_exps.weight": (Q.Q4_1, 3), "blk.0.ffn_down_exps.weight": (Q.Q6_K, 3),
                     "blk.0.ffn_gate_inp.weight": (Q.F32, 2), "blk.0.attn_q_norm.weight": (Q.F32, 1)},
    "qwen35moe-mix": {"blk.0.ffn_up_exps.weight": (Q.Q4_0, 3), "blk.0.ffn_gate_inp_shexp.weight": (Q.F32, 1),
                      "blk.1.ffn_down_shexp.weight": (Q.Q4_1, 2), "blk.0.attn_qkv.weight": (Q.Q4_1, 2),
                      "blk.2.ssm_out.weight": (Q.Q8_0, 2), "blk.0.ssm_a": (Q.F32, 1),
                      "blk.0.ssm_conv1d.weight": (Q.F32, 2), "blk.3.attn_q.weight": (Q.Q4_1, 2),
                      "blk.3.attn_q_norm.weight": (Q.F32, 1), "blk.0.attn_q.weight": None},
}


@pytest.mark.parametrize("name", list(_LAYOUTS))
def test_models_hold_what_they_test(model_dir, name):
    """The builder wrote the layouts the comparisons above are about (biases, norms, fused and 3-D expert
    tensors, k-quants; a byte-level BPE vocabulary with merges for the qwen families)."""
    import fastgguf

    with fastgguf.open(str(model_dir / f"{name}.gguf")) as model:
        for tensor, expected in _LAYOUTS[name].items():
            if expected is None:
                assert tensor not in model.tensors, tensor
            else:
                info = model.tensors[tensor]
                assert (info.type, len(info.shape)) == expected, tensor
        tokenizer = model.metadata["tokenizer.ggml.model"]
        assert tokenizer == ("gpt2" if name in BPE_MODELS else "t5" if name == "t5-mix" else "llama")
        if tokenizer == "gpt2":
            assert model.metadata["tokenizer.ggml.pre"] == {"qwen35moe-mix": "qwen35", "gpt2-mix": "gpt-2"}.get(name, "qwen2")
            assert len(model.metadata["tokenizer.ggml.merges"]) > 50
            tokens = list(model.metadata["tokenizer.ggml.tokens"])
            assert "æĹ¥æľ¬" in tokens and "ĠhÃ©llo" in tokens  # 日本 and " héllo", spelled in bytes
