"""Small transformers models written to GGUF by fastgguf's writer, for the transformers integration's
tests and benchmark. Random weights from transformers itself; a sentencepiece-style vocabulary with
multi-byte tokens and byte fallback; quantized tensors through gguf-py's quantizers.

Needs torch, transformers and gguf (the callers skip without them).
"""

from __future__ import annotations

import numpy as np

from fastgguf import GGMLType, GGUFWriter

# a few whole words, multi-byte pieces among them, on top of the 256 byte tokens
_PIECES = ["▁", "a", "e", "o", "l", "h", "▁h", "▁the", "▁cat", "é", "▁héllo", "日本", "語", "▁日本語", "🙂",
           "ß", "▁straße", "ü", "▁über", "мир", "▁мир", "ل", "▁سلام", "中", "文", "▁中文", "th", "he", "ll"]


def vocabulary(extra: int = 0) -> tuple[list[str], list[float], list[int]]:
    """``(tokens, scores, token types)``: specials, 256 byte tokens, pieces, ``extra`` filler pieces."""
    tokens = ["<unk>", "<s>", "</s>"] + [f"<0x{byte:02X}>" for byte in range(256)] + list(_PIECES)
    tokens += [f"▁w{index}" for index in range(extra)]
    types = [2, 3, 3] + [6] * 256 + [1] * (len(tokens) - 259)
    scores = [0.0] * 259 + [-float(index) for index in range(len(tokens) - 259)]
    return tokens, scores, types


def _quantize(array: np.ndarray, ggml_type: GGMLType):
    """``(bytes, type)`` for the writer: gguf-py's quantizer for block types, numpy for floats."""
    from gguf import GGMLQuantizationType
    from gguf.quants import quantize

    if ggml_type == GGMLType.F32:
        return np.ascontiguousarray(array, np.float32), None
    if ggml_type == GGMLType.F16:
        return np.ascontiguousarray(array, np.float16), None
    return quantize(np.ascontiguousarray(array, np.float32), GGMLQuantizationType(int(ggml_type))), ggml_type


def build(path, family: str = "llama", *, hidden: int = 64, layers: int = 2, heads: int = 4, kv_heads: int = 2,
          intermediate: int = 128, extra_vocab: int = 0, types=None, tied: bool = False, seed: int = 0) -> None:
    """Write a random ``family`` ("llama" or "gemma2") model and its tokenizer to ``path``.

    ``types`` maps a GGUF tensor-name fragment ("attn_q", "ffn", "token_embd", ...) to a GGMLType;
    the first fragment found in a 2-D tensor's name wins; 1-D tensors are F32; default Q8_0.
    """
    import torch
    import transformers
    from gguf import MODEL_ARCH, get_tensor_name_map

    tokens, scores, token_types = vocabulary(extra_vocab)
    tied = tied or family == "gemma2"  # gemma's output is its embedding
    common = dict(vocab_size=len(tokens), hidden_size=hidden, intermediate_size=intermediate,
                  num_hidden_layers=layers, num_attention_heads=heads, num_key_value_heads=kv_heads,
                  max_position_embeddings=256, rms_norm_eps=1e-6, tie_word_embeddings=tied,
                  bos_token_id=1, eos_token_id=2)
    if family == "llama":
        config = transformers.LlamaConfig(**common)
        arch = MODEL_ARCH.LLAMA
    elif family == "gemma2":
        config = transformers.Gemma2Config(**common, head_dim=hidden // heads, sliding_window=128)
        arch = MODEL_ARCH.GEMMA2
    else:
        raise ValueError(family)
    torch.manual_seed(seed)
    model = transformers.AutoModelForCausalLM.from_config(config, dtype=torch.float32)
    names = get_tensor_name_map(arch, layers)
    types = {"token_embd": GGMLType.Q8_0, "attn": GGMLType.Q4_0, "output.weight": GGMLType.F16} \
        if types is None else types

    writer = GGUFWriter(path)
    writer.add("general.architecture", family)
    writer.add("general.name", f"fastgguf test {family}")
    writer.add(f"{family}.context_length", 256, 4)
    writer.add(f"{family}.embedding_length", hidden, 4)
    writer.add(f"{family}.block_count", layers, 4)
    writer.add(f"{family}.feed_forward_length", intermediate, 4)
    writer.add(f"{family}.attention.head_count", heads, 4)
    writer.add(f"{family}.attention.head_count_kv", kv_heads, 4)
    writer.add(f"{family}.attention.layer_norm_rms_epsilon", 1e-6)
    writer.add(f"{family}.rope.freq_base", 10000.0)
    if family == "gemma2":
        writer.add(f"{family}.attention.key_length", hidden // heads, 4)
        writer.add(f"{family}.attention.value_length", hidden // heads, 4)
        writer.add(f"{family}.attention.sliding_window", 128, 4)
    writer.add("tokenizer.ggml.model", "llama")
    writer.add("tokenizer.ggml.tokens", tokens)
    writer.add("tokenizer.ggml.scores", np.asarray(scores, np.float32))
    writer.add("tokenizer.ggml.token_type", np.asarray(token_types, np.int32))
    writer.add("tokenizer.ggml.bos_token_id", 1, 4)
    writer.add("tokenizer.ggml.eos_token_id", 2, 4)
    writer.add("tokenizer.ggml.unknown_token_id", 0, 4)
    writer.add("tokenizer.ggml.add_bos_token", True)

    for hf_name, value in model.state_dict().items():
        if tied and hf_name == "lm_head.weight":
            continue
        base, suffix = hf_name.rsplit(".", 1)
        gguf_name = names.get_name(base)
        if gguf_name is None:
            raise KeyError(f"{hf_name} ({base}) has no GGUF name")
        gguf_name = f"{gguf_name}.{suffix}"
        array = value.detach().numpy()
        if family == "gemma2" and "norm" in gguf_name:
            array = array + 1  # llama.cpp stores gemma's norms as w + 1; transformers takes the 1 off again
        ggml_type = GGMLType.F32
        if array.ndim == 2:
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
