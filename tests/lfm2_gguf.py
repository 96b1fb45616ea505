"""A random LFM2 model written to GGUF, for the packed-path tests and benchmark.

LFM2 is one of the architectures transformers keeps packed (``GGUF_ARCHS``) and the simplest:
llama.cpp only renames its tensors and squeezes the convolution kernel. Needs torch, transformers
and gguf (for its quantizers).
"""

from __future__ import annotations

import re

import numpy as np

from fastgguf import GGMLType, GGUFWriter

#: transformers name -> GGUF name, the inverse of transformers' LFM2 renamings.
_LFM2_NAMES = [
    (r"^model\.embed_tokens\.", "token_embd."), (r"^model\.embedding_norm\.", "token_embd_norm."),
    (r"^lm_head\.", "output."), (r"^model\.layers\.", "blk."), (r"\.operator_norm\.", ".attn_norm."),
    (r"\.self_attn\.q_proj\.", ".attn_q."), (r"\.self_attn\.k_proj\.", ".attn_k."),
    (r"\.self_attn\.v_proj\.", ".attn_v."), (r"\.self_attn\.out_proj\.", ".attn_output."),
    (r"\.self_attn\.q_layernorm\.", ".attn_q_norm."), (r"\.self_attn\.k_layernorm\.", ".attn_k_norm."),
    (r"\.feed_forward\.w1\.", ".ffn_gate."), (r"\.feed_forward\.w3\.", ".ffn_up."),
    (r"\.feed_forward\.w2\.", ".ffn_down."), (r"\.conv\.in_proj\.", ".shortconv.in_proj."),
    (r"\.conv\.out_proj\.", ".shortconv.out_proj."), (r"\.conv\.conv\.", ".shortconv.conv."),
]


def build_lfm2(path, types: dict[str, GGMLType], *, hidden: int = 64, intermediate: int = 128,
               vocab: int = 300, layers: int = 2, seed: int = 0) -> None:
    """A random LFM2 written to GGUF: ``layers`` layers, convolution and attention alternating.

    ``types`` maps a GGUF name fragment to the type of the 2-D weights that contain it (first
    match; default Q8_0), quantized with gguf-py.
    """
    import torch
    import transformers
    from gguf import GGMLQuantizationType
    from gguf.quants import quantize

    kinds = ["conv" if i % 2 == 0 else "full_attention" for i in range(layers)]
    config = transformers.Lfm2Config(
        vocab_size=vocab, hidden_size=hidden, intermediate_size=intermediate, num_hidden_layers=layers,
        num_attention_heads=4, num_key_value_heads=2, layer_types=kinds,
        block_auto_adjust_ff_dim=False, conv_L_cache=3, conv_bias=False, tie_word_embeddings=False,
        max_position_embeddings=256, bos_token_id=1, eos_token_id=2)
    torch.manual_seed(seed)
    model = transformers.AutoModelForCausalLM.from_config(config, dtype=torch.float32)
    writer = GGUFWriter(path)
    writer.add("general.architecture", "lfm2")
    writer.add("lfm2.context_length", 256, 4)
    writer.add("lfm2.embedding_length", hidden, 4)
    writer.add("lfm2.feed_forward_length", intermediate, 4)
    writer.add("lfm2.block_count", layers, 4)
    writer.add("lfm2.attention.head_count", 4, 4)
    writer.add("lfm2.attention.head_count_kv", np.array([0 if k == "conv" else 2 for k in kinds], np.uint32))
    writer.add("lfm2.attention.layer_norm_rms_epsilon", 1e-5)
    writer.add("lfm2.shortconv.l_cache", 3, 4)
    writer.add("lfm2.rope.freq_base", 10000.0)
    writer.add("tokenizer.ggml.model", "llama")
    writer.add("tokenizer.ggml.tokens", [f"t{i}" for i in range(vocab)])
    writer.add("tokenizer.ggml.bos_token_id", 1, 4)
    writer.add("tokenizer.ggml.eos_token_id", 2, 4)
    for name, value in model.state_dict().items():
        for pattern, replacement in _LFM2_NAMES:
            name = re.sub(pattern, replacement, name)
        array = value.detach().numpy()
        if name.endswith("shortconv.conv.weight"):
            array = array[:, 0, :]  # llama.cpp squeezes the kernel to 2-D; it stays F32
            writer.add_tensor(name, np.ascontiguousarray(array, np.float32))
            continue
        if array.ndim != 2:
            writer.add_tensor(name, np.ascontiguousarray(array, np.float32))
            continue
        qtype = next((t for fragment, t in types.items() if fragment in name), GGMLType.Q8_0)
        blocks = quantize(np.ascontiguousarray(array, np.float32), GGMLQuantizationType(int(qtype)))
        writer.add_tensor(name, blocks, qtype, array.shape)
    writer.write()
    writer.close()
