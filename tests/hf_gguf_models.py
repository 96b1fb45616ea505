"""Small transformers models written to GGUF by fastgguf's writer, for the transformers integration's
tests and benchmark. Random weights from transformers itself (1-D ones perturbed, so norms and biases
are not constant), quantized through gguf-py's quantizers (fastgguf's for the types gguf-py has none
for), and one of these tokenizers:

- a sentencepiece-style vocabulary (``tokenizer.ggml.model = "llama"``) with scores, multi-byte
  pieces and byte fallback (llama, mistral, gemma2, gemma3, phi3);
- a byte-level BPE one (``"gpt2"``, pre-tokenizer ``"qwen2"``/``"qwen35"``/``"gpt-2"``): the 256 byte
  characters, merges building whole words (multi-byte ones among them), control tokens and
  user-defined ones (the qwen families, gpt2);

and T5's unigram one for T5.

Families of :func:`build` (``FAMILIES``): llama; mistral (a llama file named "mistral"); gemma2 and
gemma3 (norms stored as w + 1; gemma3 with q/k norms); qwen2 (attention biases); qwen3 (q/k norms);
phi3 (fused qkv and gate/up tensors); qwen2moe (3-D expert tensors, a shared expert with a 1-D
gate); qwen3moe (3-D expert tensors, q/k norms); gpt2 (transposed Conv1D weights, biases).
:func:`build_qwen35moe` writes a Qwen3.5 MoE, an architecture transformers reads on its packed path;
:func:`build_t5` a (flan-)T5 encoder-decoder with a unigram vocabulary; :func:`build_generic` any
other architecture of transformers' legacy loader (falcon, bloom, stablelm, starcoder2, mamba,
nemotron, ...), shaped by transformers' own reading of its metadata.

Needs torch, transformers and gguf (the callers skip without them).
"""

from __future__ import annotations

import numpy as np

from fastgguf import GGMLType, GGUFWriter

#: family -> (transformers config class, gguf-py MODEL_ARCH name, tokenizer kind)
FAMILIES = {
    "llama": ("LlamaConfig", "LLAMA", "spm"),
    "gemma2": ("Gemma2Config", "GEMMA2", "spm"),
    "gemma3": ("Gemma3TextConfig", "GEMMA3", "spm"),
    "mistral": ("MistralConfig", "LLAMA", "spm"),
    "phi3": ("Phi3Config", "PHI3", "spm"),
    "gpt2": ("GPT2Config", "GPT2", "bpe"),
    "qwen2": ("Qwen2Config", "QWEN2", "bpe"),
    "qwen3": ("Qwen3Config", "QWEN3", "bpe"),
    "qwen2moe": ("Qwen2MoeConfig", "QWEN2MOE", "bpe"),
    "qwen3moe": ("Qwen3MoeConfig", "QWEN3MOE", "bpe"),
}

# a few whole words, multi-byte pieces among them, on top of the 256 byte tokens
_PIECES = ["▁", "a", "e", "o", "l", "h", "▁h", "▁the", "▁cat", "é", "▁héllo", "日本", "語", "▁日本語", "🙂",
           "ß", "▁straße", "ü", "▁über", "мир", "▁мир", "ل", "▁سلام", "中", "文", "▁中文", "th", "he", "ll"]

# words the BPE merges build, left to right; a leading space is part of a word, as in GPT-2
_BPE_WORDS = ["the", " the", " cat", "hé", "héllo", " héllo", "日本", "日本語", " 日本語", "🙂", " straße",
              " über", " мир", " سلام", " 中文", "中文", "  ", "\n", "\t", " two", " spaces", " and", " a",
              " newline", "ünï", "cödé", " ∑", "𝔘", "user", "er", " x"]
BPE_SPECIALS = ["<|endoftext|>", "<|im_start|>", "<|im_end|>"]  # control tokens (type 3)
BPE_USER_DEFINED = ["<think>", "</think>"]  # user-defined tokens (type 4): matched whole, not special


def vocabulary(extra: int = 0) -> tuple[list[str], list[float], list[int]]:
    """``(tokens, scores, token types)``: specials, 256 byte tokens, pieces, ``extra`` filler pieces."""
    tokens = ["<unk>", "<s>", "</s>"] + [f"<0x{byte:02X}>" for byte in range(256)] + list(_PIECES)
    tokens += [f"▁w{index}" for index in range(extra)]
    types = [2, 3, 3] + [6] * 256 + [1] * (len(tokens) - 259)
    scores = [0.0] * 259 + [-float(index) for index in range(len(tokens) - 259)]
    return tokens, scores, types


def byte_characters() -> list[str]:
    """GPT-2's byte-level alphabet: the character standing for each byte 0..255.

    Printable Latin-1 bytes stand for themselves; the others are given the characters from
    U+0100 on, in byte order.
    """
    keep = [*range(ord("!"), ord("~") + 1), *range(0xA1, 0xAC + 1), *range(0xAE, 0xFF + 1)]
    characters, extra = {}, 0
    for byte in range(256):
        if byte in keep:
            characters[byte] = chr(byte)
        else:
            characters[byte] = chr(256 + extra)
            extra += 1
    return [characters[byte] for byte in range(256)]


def bpe_vocabulary(extra: int = 0) -> tuple[list[str], list[str], list[int]]:
    """``(tokens, merges, token types)`` of a byte-level BPE vocabulary.

    The byte characters, then each word of ``_BPE_WORDS`` spelled in them and merged left to right
    (every prefix a token, one merge per step), ``extra`` filler words, then the control and
    user-defined tokens.
    """
    alphabet = byte_characters()
    tokens = list(alphabet)
    known = set(tokens)
    merges: list[str] = []
    words = _BPE_WORDS + [f" w{index}" for index in range(extra)]
    for word in words:
        spelled = [alphabet[byte] for byte in word.encode("utf-8")]
        current = spelled[0]
        for character in spelled[1:]:
            merged = current + character
            if merged not in known:
                merges.append(f"{current} {character}")
                tokens.append(merged)
                known.add(merged)
            current = merged
    types = [1] * len(tokens) + [3] * len(BPE_SPECIALS) + [4] * len(BPE_USER_DEFINED)
    tokens += BPE_SPECIALS + BPE_USER_DEFINED
    return tokens, merges, types


def _quantize(array: np.ndarray, ggml_type: GGMLType):
    """``(bytes, type)`` for the writer: numpy for floats; for block types gguf-py's quantizer, or
    fastgguf's for the types gguf-py cannot make (k-quants, ...: what is tested is reading them)."""
    from gguf import GGMLQuantizationType
    from gguf.quants import quantize

    import fastgguf

    if ggml_type == GGMLType.F32:
        return np.ascontiguousarray(array, np.float32), None
    if ggml_type == GGMLType.F16:
        return np.ascontiguousarray(array, np.float16), None
    values = np.ascontiguousarray(array, np.float32)
    try:
        return quantize(values, GGMLQuantizationType(int(ggml_type))), ggml_type
    except NotImplementedError:
        rows = fastgguf.quantize(values.reshape(-1, values.shape[-1]), ggml_type)  # it takes rows
        return rows.reshape(*values.shape[:-1], -1), ggml_type


def _config(family: str, vocab: int, hidden: int, layers: int, heads: int, kv_heads: int, intermediate: int,
            tied: bool, special_ids: dict):
    """The transformers config of a random ``family`` model, shaped as transformers reads it back from GGUF.

    transformers takes some sizes from its config class's defaults instead of the file (qwen3's
    head_dim, the MoE expert sizes), so the model is built with those defaults.
    """
    import transformers

    if family == "gpt2":  # transformers reads neither the inner width nor n_positions: the defaults (4 * hidden, 1024)
        return transformers.GPT2Config(vocab_size=vocab, n_embd=hidden, n_layer=layers, n_head=heads, n_positions=1024,
                                       layer_norm_epsilon=1e-5, tie_word_embeddings=tied, **special_ids)
    common = dict(vocab_size=vocab, hidden_size=hidden, intermediate_size=intermediate,
                  num_hidden_layers=layers, num_attention_heads=heads, num_key_value_heads=kv_heads,
                  max_position_embeddings=256, rms_norm_eps=1e-6, tie_word_embeddings=tied, **special_ids)
    cls = getattr(transformers, FAMILIES[family][0])
    if family in ("gemma2", "gemma3"):
        common.update(head_dim=hidden // heads, sliding_window=128)
    elif family in ("qwen2moe", "qwen3moe"):
        common.update(num_experts=4, num_experts_per_tok=2)
    if family == "qwen3":
        common.update(head_dim=128)  # transformers does not read qwen3.attention.key_length
    return cls(**common)


def _write_config(writer: GGUFWriter, family: str, config, hidden: int, layers: int, heads: int, kv_heads: int,
                  intermediate: int) -> None:
    """The architecture's keys as llama.cpp's converter writes them.

    A mistral file is a llama one; transformers tells them apart by a ``general.name`` of exactly "mistral".
    """
    name = "mistral" if family == "mistral" else f"fastgguf test {family}"
    family = "llama" if family == "mistral" else family
    writer.add("general.architecture", family)
    writer.add("general.name", name)
    if family == "gpt2":
        for key, value in [("context_length", 1024), ("embedding_length", hidden), ("block_count", layers),
                           ("feed_forward_length", 4 * hidden), ("attention.head_count", heads)]:
            writer.add(f"{family}.{key}", value, 4)
        writer.add(f"{family}.attention.layer_norm_epsilon", 1e-5)
        return
    writer.add(f"{family}.context_length", 256, 4)
    writer.add(f"{family}.embedding_length", hidden, 4)
    writer.add(f"{family}.block_count", layers, 4)
    writer.add(f"{family}.feed_forward_length", intermediate, 4)
    writer.add(f"{family}.attention.head_count", heads, 4)
    writer.add(f"{family}.attention.head_count_kv", kv_heads, 4)
    writer.add(f"{family}.attention.layer_norm_rms_epsilon", 1e-6)
    writer.add(f"{family}.rope.freq_base", 10000.0)
    head_dim = getattr(config, "head_dim", None) or hidden // heads
    if family in ("gemma2", "gemma3", "qwen3", "qwen3moe"):
        writer.add(f"{family}.attention.key_length", head_dim, 4)
        writer.add(f"{family}.attention.value_length", head_dim, 4)
    if family in ("gemma2", "gemma3"):
        writer.add(f"{family}.attention.sliding_window", 128, 4)
    if family == "phi3":
        writer.add(f"{family}.rope.dimension_count", head_dim, 4)
    if family in ("qwen2moe", "qwen3moe"):
        writer.add(f"{family}.expert_count", config.num_experts, 4)
        writer.add(f"{family}.expert_used_count", config.num_experts_per_tok, 4)
        writer.add(f"{family}.expert_feed_forward_length", config.moe_intermediate_size, 4)
    if family == "qwen2moe":
        writer.add(f"{family}.expert_shared_feed_forward_length", config.shared_expert_intermediate_size, 4)


def _gguf_tensors(family: str, hf_name: str, array: np.ndarray, names) -> list[tuple[str, np.ndarray]]:
    """The GGUF tensors (name, values) llama.cpp's converter makes of transformers parameter ``hf_name``."""
    if hf_name.endswith((".weight", ".bias")):
        base, suffix = hf_name.rsplit(".", 1)
    else:
        base, suffix = hf_name, "weight"  # a bare 3-D expert parameter
    if base.endswith(".mlp.experts.gate_up_proj"):
        # one [experts, 2 * ff, hidden] parameter; GGUF keeps gate and up apart (gate first)
        block = base.split(".")[2]
        half = array.shape[1] // 2
        return [(f"blk.{block}.ffn_gate_exps.weight", array[:, :half]),
                (f"blk.{block}.ffn_up_exps.weight", array[:, half:])]
    gguf_name = names.get_name(base)
    if gguf_name is None:
        raise KeyError(f"{hf_name} ({base}) has no GGUF name")
    gguf_name = f"{gguf_name}.{suffix}"
    if family in ("gemma2", "gemma3") and "norm" in gguf_name:
        array = array + 1  # llama.cpp stores gemma's norms as w + 1; transformers takes the 1 off again
    if family == "gpt2" and suffix == "weight" \
            and gguf_name.split(".")[-2] in ("attn_qkv", "attn_output", "ffn_up", "ffn_down"):
        array = array.T  # transformers' Conv1D keeps [in, out]; llama.cpp stores [out, in]
    if gguf_name.endswith("ffn_gate_inp_shexp.weight"):
        array = array.reshape(-1)  # a [1, hidden] gate, stored as a vector
    return [(gguf_name, array)]


def build(path, family: str = "llama", *, hidden: int = 64, layers: int = 2, heads: int = 4, kv_heads: int = 2,
          intermediate: int = 128, extra_vocab: int = 0, types=None, tied: bool = False, seed: int = 0) -> None:
    """Write a random ``family`` model (a key of ``FAMILIES``) and its tokenizer to ``path``.

    ``types`` maps a GGUF tensor-name fragment ("attn_q", "ffn", "exps", "token_embd", ...) to a
    GGMLType; the first fragment found in a 2-D or 3-D tensor's name wins; 1-D tensors are F32;
    default Q8_0.
    """
    import gguf
    import torch
    import transformers

    if family not in FAMILIES:
        raise ValueError(family)
    tokenizer_kind = FAMILIES[family][2]
    if tokenizer_kind == "spm":
        tokens, scores, token_types = vocabulary(extra_vocab)
        special_ids = dict(bos_token_id=1, eos_token_id=2)
        if family != "llama":  # llama's tests keep the file they have always read (no padding token)
            special_ids["pad_token_id"] = 0
    else:
        tokens, merges, token_types = bpe_vocabulary(extra_vocab)
        end_of_text = tokens.index("<|endoftext|>")
        special_ids = dict(bos_token_id=end_of_text, eos_token_id=tokens.index("<|im_end|>"),
                           pad_token_id=end_of_text)
    tied = tied or family in ("gemma2", "gemma3")  # gemma's output is its embedding
    config = _config(family, len(tokens), hidden, layers, heads, kv_heads, intermediate, tied, special_ids)
    torch.manual_seed(seed)
    model = transformers.AutoModelForCausalLM.from_config(config, dtype=torch.float32)
    with torch.no_grad():  # transformers starts norms at 1 (gemma: 0) and biases at 0: make them say something
        for parameter in model.parameters():
            if parameter.ndim == 1:
                parameter.add_(torch.randn_like(parameter) * 0.25)
    names = gguf.get_tensor_name_map(getattr(gguf.MODEL_ARCH, FAMILIES[family][1]), layers)
    types = {"token_embd": GGMLType.Q8_0, "attn": GGMLType.Q4_0, "output.weight": GGMLType.F16} \
        if types is None else types

    writer = GGUFWriter(path)
    _write_config(writer, family, config, hidden, layers, heads, kv_heads, intermediate)
    if tokenizer_kind == "spm":
        writer.add("tokenizer.ggml.model", "llama")
        writer.add("tokenizer.ggml.tokens", tokens)
        writer.add("tokenizer.ggml.scores", np.asarray(scores, np.float32))
        writer.add("tokenizer.ggml.token_type", np.asarray(token_types, np.int32))
        writer.add("tokenizer.ggml.add_bos_token", True)
        writer.add("tokenizer.ggml.unknown_token_id", 0, 4)
    else:
        writer.add("tokenizer.ggml.model", "gpt2")
        writer.add("tokenizer.ggml.pre", "gpt-2" if family == "gpt2" else "qwen2")
        writer.add("tokenizer.ggml.tokens", tokens)
        writer.add("tokenizer.ggml.token_type", np.asarray(token_types, np.int32))
        writer.add("tokenizer.ggml.merges", merges)
        writer.add("tokenizer.ggml.add_bos_token", False)
    writer.add("tokenizer.ggml.bos_token_id", special_ids["bos_token_id"], 4)
    writer.add("tokenizer.ggml.eos_token_id", special_ids["eos_token_id"], 4)
    if "pad_token_id" in special_ids:
        writer.add("tokenizer.ggml.padding_token_id", special_ids["pad_token_id"], 4)

    for hf_name, value in model.state_dict().items():
        if tied and hf_name == "lm_head.weight":
            continue
        for gguf_name, array in _gguf_tensors(family, hf_name, value.detach().numpy(), names):
            ggml_type = GGMLType.F32
            if array.ndim >= 2:
                ggml_type = next((t for fragment, t in types.items() if fragment in gguf_name), GGMLType.Q8_0)
            data, raw_type = _quantize(array, ggml_type)
            if raw_type is None:
                writer.add_tensor(gguf_name, data)
            else:
                writer.add_tensor(gguf_name, data, raw_type, array.shape)
    writer.write()
    writer.close()


def split(path, directory, name: str = "model", shards: int = 2) -> str:
    """Rewrite the model at ``path`` as ``shards`` files in llama.cpp's split layout; the first shard's path.

    Metadata (all of it) in the first shard; tensors shared out in file order; ``split.*`` keys in each.
    """
    import os

    import fastgguf
    from fastgguf import GGUFValueType

    with fastgguf.open(path) as source:
        metadata, infos = source.metadata, list(source.tensors.values())
        per_shard = -(-len(infos) // shards)
        paths = [os.path.join(directory, f"{name}-{index + 1:05d}-of-{shards:05d}.gguf") for index in range(shards)]
        for index, shard_path in enumerate(paths):
            writer = GGUFWriter(shard_path)
            if index == 0:
                for key in metadata:
                    value = metadata[key]
                    value = value if isinstance(value, (str, int, float, bool, np.ndarray)) else list(value)
                    writer.add(key, value, metadata.value_type(key), metadata.element_type(key))
            writer.add("split.no", index, GGUFValueType.UINT16)
            writer.add("split.count", shards, GGUFValueType.UINT16)
            writer.add("split.tensors.count", len(infos), GGUFValueType.INT32)
            for info in infos[index * per_shard:(index + 1) * per_shard]:
                writer.add_tensor(info.name, info.raw, info.type, info.shape)
            writer.write()
            writer.close()
    return paths[0]


# --- Qwen3.5 MoE: one of the architectures transformers keeps packed (its `GGUF_ARCHS`) -------------------

#: transformers name -> GGUF name, the inverse of transformers' qwen35/qwen35moe renamings
_QWEN35_NAMES = [
    (r"^model\.embed_tokens\.", "token_embd."), (r"^lm_head\.", "output."), (r"^model\.norm\.", "output_norm."),
    (r"^model\.layers\.", "blk."), (r"\.input_layernorm\.", ".attn_norm."),
    (r"\.post_attention_layernorm\.", ".post_attention_norm."), (r"\.self_attn\.q_proj\.", ".attn_q."),
    (r"\.self_attn\.k_proj\.", ".attn_k."), (r"\.self_attn\.v_proj\.", ".attn_v."),
    (r"\.self_attn\.o_proj\.", ".attn_output."), (r"\.self_attn\.q_norm\.", ".attn_q_norm."),
    (r"\.self_attn\.k_norm\.", ".attn_k_norm."), (r"\.linear_attn\.in_proj_qkv\.", ".attn_qkv."),
    (r"\.linear_attn\.in_proj_z\.", ".attn_gate."), (r"\.linear_attn\.in_proj_a\.", ".ssm_alpha."),
    (r"\.linear_attn\.in_proj_b\.", ".ssm_beta."), (r"\.linear_attn\.conv1d\.", ".ssm_conv1d."),
    (r"\.linear_attn\.norm\.", ".ssm_norm."), (r"\.linear_attn\.out_proj\.", ".ssm_out."),
    (r"\.linear_attn\.A_log$", ".ssm_a"), (r"\.linear_attn\.dt_bias$", ".ssm_dt.bias"),
    (r"\.mlp\.gate\.", ".ffn_gate_inp."), (r"\.mlp\.experts\.down_proj$", ".ffn_down_exps.weight"),
    (r"\.mlp\.shared_expert_gate\.", ".ffn_gate_inp_shexp."), (r"\.mlp\.shared_expert\.gate_proj\.", ".ffn_gate_shexp."),
    (r"\.mlp\.shared_expert\.up_proj\.", ".ffn_up_shexp."), (r"\.mlp\.shared_expert\.down_proj\.", ".ffn_down_shexp."),
    (r"\.mlp\.gate_proj\.", ".ffn_gate."), (r"\.mlp\.up_proj\.", ".ffn_up."), (r"\.mlp\.down_proj\.", ".ffn_down."),
]
_QWEN35_OFFSET_NORMS = (".attn_norm.", ".post_attention_norm.", "output_norm.", ".attn_q_norm.", ".attn_k_norm.")


def build_qwen35moe(path, types=None, *, hidden: int = 64, layers: int = 4, experts: int = 4, moe: bool = True,
                    seed: int = 0) -> None:
    """A random Qwen3.5 MoE (GatedDeltaNet linear attention, full attention every fourth layer, routed and
    shared experts; with ``moe=False`` the dense Qwen3.5, a gated MLP instead) and its byte-level BPE
    tokenizer (pre-tokenizer "qwen35") written to GGUF.

    llama.cpp's value transforms are applied where transformers undoes them with arithmetic or a reshape
    (norms stored as w + 1, ``ssm_a = -exp(A_log)``, the squeezed conv1d, gate and up experts apart, the
    1-D shared-expert gate); the value-head reorder is not (the weights are random: what is compared is
    two loads of one file). ``types`` as for :func:`build` (2-D and 3-D tensors; default Q8_0).
    """
    import re

    import torch
    import transformers

    tokens, merges, token_types = bpe_vocabulary()
    end_of_text = tokens.index("<|endoftext|>")
    head_dim, rotary = 32, 8
    sizes = dict(moe_intermediate_size=32, shared_expert_intermediate_size=64, num_experts=experts,
                 num_experts_per_tok=2) if moe else dict(intermediate_size=96)
    config = (transformers.Qwen3_5MoeTextConfig if moe else transformers.Qwen3_5TextConfig)(
        vocab_size=len(tokens), hidden_size=hidden, num_hidden_layers=layers, num_attention_heads=4,
        num_key_value_heads=2, head_dim=head_dim, max_position_embeddings=256, rms_norm_eps=1e-6,
        linear_conv_kernel_dim=4, linear_key_head_dim=32, linear_value_head_dim=32, linear_num_key_heads=2,
        linear_num_value_heads=4, tie_word_embeddings=False, **sizes,
        rope_parameters={"rope_type": "default", "rope_theta": 10000.0, "partial_rotary_factor": rotary / head_dim,
                         "mrope_section": [2, 1, 1], "mrope_interleaved": True},
        bos_token_id=end_of_text, eos_token_id=tokens.index("<|im_end|>"), pad_token_id=end_of_text)
    torch.manual_seed(seed)
    model = transformers.AutoModelForCausalLM.from_config(config, dtype=torch.float32)
    with torch.no_grad():
        for parameter in model.parameters():
            if parameter.ndim == 1:
                parameter.add_(torch.randn_like(parameter) * 0.25)
    types = {"exps": GGMLType.Q4_0, "": GGMLType.Q8_0} if types is None else types

    arch = "qwen35moe" if moe else "qwen35"
    writer = GGUFWriter(path)
    writer.add("general.architecture", arch)
    writer.add("general.name", f"fastgguf test {arch}")
    keys = [("context_length", 256), ("embedding_length", hidden), ("block_count", layers),
            ("attention.head_count", 4), ("attention.head_count_kv", 2), ("attention.key_length", head_dim),
            ("attention.value_length", head_dim), ("full_attention_interval", 4), ("ssm.conv_kernel", 4),
            ("ssm.state_size", 32), ("ssm.group_count", 2), ("ssm.time_step_rank", 4), ("ssm.inner_size", 4 * 32),
            ("rope.dimension_count", rotary)]
    keys += [("expert_count", experts), ("expert_used_count", 2), ("expert_feed_forward_length", 32),
             ("expert_shared_feed_forward_length", 64)] if moe else [("feed_forward_length", 96)]
    for key, value in keys:
        writer.add(f"{arch}.{key}", value, 4)
    writer.add(f"{arch}.rope.dimension_sections", np.array([2, 1, 1, 0], np.int32))
    writer.add(f"{arch}.attention.layer_norm_rms_epsilon", 1e-6)
    writer.add(f"{arch}.rope.freq_base", 10000.0)
    writer.add("tokenizer.ggml.model", "gpt2")
    writer.add("tokenizer.ggml.pre", "qwen35")
    writer.add("tokenizer.ggml.tokens", tokens)
    writer.add("tokenizer.ggml.token_type", np.asarray(token_types, np.int32))
    writer.add("tokenizer.ggml.merges", merges)
    writer.add("tokenizer.ggml.add_bos_token", False)
    writer.add("tokenizer.ggml.bos_token_id", end_of_text, 4)
    writer.add("tokenizer.ggml.eos_token_id", tokens.index("<|im_end|>"), 4)
    writer.add("tokenizer.ggml.padding_token_id", end_of_text, 4)

    for hf_name, value in model.state_dict().items():
        array = value.detach().numpy()
        if hf_name.endswith(".mlp.experts.gate_up_proj"):
            block = hf_name.split(".")[2]
            half = array.shape[1] // 2
            pieces = [(f"blk.{block}.ffn_gate_exps.weight", array[:, :half]),
                      (f"blk.{block}.ffn_up_exps.weight", array[:, half:])]
        else:
            name = hf_name
            for pattern, replacement in _QWEN35_NAMES:
                name = re.sub(pattern, replacement, name)
            if name == hf_name:
                raise KeyError(f"{hf_name} has no GGUF name")
            if any(norm in name for norm in _QWEN35_OFFSET_NORMS):
                array = array + 1
            elif name.endswith(".ssm_a"):
                array = -np.exp(array)
            elif name.endswith(".ssm_conv1d.weight"):
                array = array.reshape(array.shape[0], array.shape[-1])
            elif name.endswith(".ffn_gate_inp_shexp.weight"):
                array = array.reshape(-1)
            pieces = [(name, array)]
        for name, piece in pieces:
            ggml_type = GGMLType.F32
            if piece.ndim >= 2 and "ssm_conv1d" not in name:
                ggml_type = next((t for fragment, t in types.items() if fragment in name), GGMLType.Q8_0)
            data, raw_type = _quantize(piece, ggml_type)
            if raw_type is None:
                writer.add_tensor(name, data)
            else:
                writer.add_tensor(name, data, raw_type, piece.shape)
    writer.write()
    writer.close()


# --- T5: an encoder-decoder, with a unigram tokenizer ---------------------------------------------------

_T5_PIECES = ["▁", "▁the", "▁cat", "▁h", "é", "llo", "▁héllo", "▁日本語", "日本", "語", "🙂", "▁straße", "▁über",
              "▁мир", "▁سلام", "▁中文", "▁two", "▁spaces", "▁and", "▁a", "▁newline", "x", "e", "a", "o", "t", "s"]


def _write_t5_metadata(writer: GGUFWriter, tokens: list[str], scores: list[float], token_types: list[int], *,
                       hidden: int, layers: int, heads: int, intermediate: int) -> None:
    arch = "t5"
    writer.add("general.architecture", arch)
    writer.add("general.name", "fastgguf test t5")
    for key, value in [("context_length", 512), ("embedding_length", hidden), ("feed_forward_length", intermediate),
                       ("block_count", layers), ("attention.head_count", heads),
                       ("attention.key_length", hidden // heads), ("attention.value_length", hidden // heads),
                       ("attention.relative_buckets_count", 32), ("decoder_start_token_id", 0)]:
        writer.add(f"{arch}.{key}", value, 4)
    writer.add(f"{arch}.attention.layer_norm_epsilon", 1e-6)
    writer.add(f"{arch}.attention.layer_norm_rms_epsilon", 1e-6)
    writer.add("tokenizer.ggml.model", "t5")
    writer.add("tokenizer.ggml.tokens", tokens)
    writer.add("tokenizer.ggml.scores", np.asarray(scores, np.float32))
    writer.add("tokenizer.ggml.token_type", np.asarray(token_types, np.int32))
    writer.add("tokenizer.ggml.add_space_prefix", True)
    writer.add("tokenizer.ggml.add_eos_token", True)
    writer.add("tokenizer.ggml.padding_token_id", 0, 4)
    writer.add("tokenizer.ggml.eos_token_id", 1, 4)
    writer.add("tokenizer.ggml.unknown_token_id", 2, 4)


def build_t5(path, types=None, *, hidden: int = 64, layers: int = 2, heads: int = 4, intermediate: int = 128,
             seed: int = 0) -> None:
    """A random (flan-)T5 — encoder and decoder, gated feed-forward — and its unigram vocabulary (with
    sentinel ``[PAD...]`` tokens, as llama.cpp writes T5's ``<extra_id_N>``) written to GGUF.

    The model is built from the config transformers itself reads back from the metadata, so its shapes
    are the ones transformers loads. ``types`` as for :func:`build`.
    """
    import os
    import tempfile

    import gguf
    import torch
    import transformers

    sentinels = 100  # T5's <extra_id_0..99>, which transformers expects all of
    tokens = ["<pad>", "</s>", "<unk>"] + _T5_PIECES + [f"[PAD{index}]" for index in range(sentinels)]
    scores = [0.0, 0.0, 0.0] + [-1.0 - index * 0.5 for index in range(len(_T5_PIECES))] + [0.0] * sentinels
    token_types = [3, 3, 2] + [1] * len(_T5_PIECES) + [4] * sentinels
    sizes = dict(hidden=hidden, layers=layers, heads=heads, intermediate=intermediate)
    with tempfile.TemporaryDirectory() as directory:  # transformers' reading of the metadata alone
        writer = GGUFWriter(os.path.join(directory, "t5.gguf"))
        _write_t5_metadata(writer, tokens, scores, token_types, **sizes)
        writer.write()
        writer.close()
        config = transformers.AutoConfig.from_pretrained(directory, gguf_file="t5.gguf")
    config.tie_word_embeddings = False  # a file with an output tensor reads back untied
    torch.manual_seed(seed)
    model = transformers.AutoModelForSeq2SeqLM.from_config(config, dtype=torch.float32)
    with torch.no_grad():
        for parameter in model.parameters():
            if parameter.ndim == 1:
                parameter.add_(torch.randn_like(parameter) * 0.25)
    names = gguf.get_tensor_name_map(gguf.MODEL_ARCH.T5, layers)
    types = {"": GGMLType.Q8_0} if types is None else types
    writer = GGUFWriter(path)
    _write_t5_metadata(writer, tokens, scores, token_types, **sizes)
    for hf_name, value in model.state_dict().items():
        if hf_name in ("encoder.embed_tokens.weight", "decoder.embed_tokens.weight"):
            continue  # the shared embedding
        base, suffix = hf_name.rsplit(".", 1)
        name = names.get_name(base)
        if name is None:
            raise KeyError(f"{hf_name} has no GGUF name")
        name = f"{name}.{suffix}"
        array = value.detach().numpy()
        ggml_type = GGMLType.F32
        if array.ndim >= 2 and "attn_rel_b" not in name:
            ggml_type = next((t for fragment, t in types.items() if fragment in name), GGMLType.Q8_0)
        data, raw_type = _quantize(array, ggml_type)
        if raw_type is None:
            writer.add_tensor(name, data)
        else:
            writer.add_tensor(name, data, raw_type, array.shape)
    writer.write()
    writer.close()


# --- any other architecture of transformers' legacy loader, shaped by transformers' own reading ----------

#: values for the metadata keys transformers' legacy loader maps (`GGUF_CONFIG_MAPPING`), for small models
_GENERIC_VALUES = {"context_length": 256, "block_count": 2, "feed_forward_length": 256, "embedding_length": 64,
                   "rope.dimension_count": 16, "rope.freq_base": 10000.0, "attention.head_count": 4,
                   "attention.head_count_kv": 4, "attention.layer_norm_rms_epsilon": 1e-5,
                   "attention.layer_norm_epsilon": 1e-5, "ssm.conv_kernel": 4, "ssm.state_size": 16,
                   "ssm.time_step_rank": 4, "ssm.inner_size": 128}


def build_generic(path, arch: str, types=None, *, seed: int = 0) -> None:
    """A random model of GGUF architecture ``arch`` (falcon, bloom, stablelm, starcoder2, mamba, nemotron, ...)
    with the byte-level BPE tokenizer, written to GGUF.

    The metadata holds every key transformers maps for ``arch`` (``_GENERIC_VALUES``); the model is built from
    the config transformers itself reads back from it, its tensors named the way transformers looks them up
    (gguf-py's name map, on the full parameter name or on a submodule's), so the file is one transformers
    loads. llama.cpp's value transforms are applied where transformers undoes them with arithmetic
    (nemotron's norms stored as w + 1, mamba's ``ssm_a = -exp(A_log)``) or a reshape (mamba's squeezed
    conv1d); bloom's fused-qkv reorder is not (the weights are random: what is compared is two loads of one
    file). ``types`` as for :func:`build`.
    """
    import os
    import tempfile

    import gguf
    import torch
    import transformers
    from transformers.integrations.ggml import GGUF_CONFIG_MAPPING

    tokens, merges, token_types = bpe_vocabulary()

    def write_metadata(writer: GGUFWriter) -> None:
        writer.add("general.architecture", arch)
        writer.add("general.name", f"fastgguf test {arch}")
        for key in GGUF_CONFIG_MAPPING[arch]:
            if key in _GENERIC_VALUES:
                value = _GENERIC_VALUES[key]
                writer.add(f"{arch}.{key}", value, 4 if isinstance(value, int) else None)
        writer.add("tokenizer.ggml.model", "gpt2")
        writer.add("tokenizer.ggml.pre", "qwen2")
        writer.add("tokenizer.ggml.tokens", tokens)
        writer.add("tokenizer.ggml.token_type", np.asarray(token_types, np.int32))
        writer.add("tokenizer.ggml.merges", merges)
        writer.add("tokenizer.ggml.bos_token_id", tokens.index("<|endoftext|>"), 4)
        writer.add("tokenizer.ggml.eos_token_id", tokens.index("<|im_end|>"), 4)

    with tempfile.TemporaryDirectory() as directory:  # transformers' reading of the metadata alone
        writer = GGUFWriter(os.path.join(directory, "m.gguf"))
        write_metadata(writer)
        writer.write()
        writer.close()
        config = transformers.AutoConfig.from_pretrained(directory, gguf_file="m.gguf")
    tied = arch in ("falcon", "bloom")  # transformers ties these whatever the file holds
    config.tie_word_embeddings = tied
    torch.manual_seed(seed)
    model = transformers.AutoModelForCausalLM.from_config(config, dtype=torch.float32)
    with torch.no_grad():
        for parameter in model.parameters():
            if parameter.ndim == 1:
                parameter.add_(torch.randn_like(parameter) * 0.25)
    arch_id = next(key for key, value in gguf.MODEL_ARCH_NAMES.items() if value == arch)
    names = gguf.get_tensor_name_map(arch_id, config.num_hidden_layers)
    types = {"": GGMLType.Q8_0} if types is None else types

    def gguf_name(hf_name: str) -> str:
        base, suffix = hf_name.rsplit(".", 1) if hf_name.endswith((".weight", ".bias")) else (hf_name, "")
        parts = base.split(".")
        for start in range(len(parts)):  # the whole name, then a submodule's, as transformers looks them up
            found = names.get_name(".".join(parts[start:]))
            if found is not None:
                return f"{found}.{suffix}" if suffix else found
        if arch == "mamba" and parts[-1] in ("A_log", "D"):  # bare parameters llama.cpp names by hand
            return f"blk.{parts[-3]}.{'ssm_a' if parts[-1] == 'A_log' else 'ssm_d'}"
        raise KeyError(f"{hf_name} has no GGUF name")

    writer = GGUFWriter(path)
    write_metadata(writer)
    for hf_name, value in model.state_dict().items():
        if tied and hf_name == "lm_head.weight":
            continue
        name = gguf_name(hf_name)
        array = value.detach().numpy()
        if arch == "nemotron" and name.endswith("norm.weight"):
            array = array + 1
        elif name.endswith(".ssm_a"):
            array = -np.exp(array)
        elif name.endswith(".ssm_conv1d.weight"):
            array = array.reshape(array.shape[0], array.shape[-1])
        ggml_type = GGMLType.F32
        if array.ndim >= 2 and array.shape[-1] % 32 == 0 and not name.endswith((".ssm_a", ".ssm_conv1d.weight")):
            ggml_type = next((t for fragment, t in types.items() if fragment in name), GGMLType.Q8_0)
        data, raw_type = _quantize(array, ggml_type)
        if raw_type is None:
            writer.add_tensor(name, data)
        else:
            writer.add_tensor(name, data, raw_type, array.shape)
    writer.write()
    writer.close()
