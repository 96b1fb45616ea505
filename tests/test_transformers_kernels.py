"""fastgguf as transformers' packed-GGUF kernel on CPU: logits against transformers' dequantized model."""

from __future__ import annotations

import re

import numpy as np
import pytest

from fastgguf import GGMLType, GGUFWriter

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")
gguf_kernels = pytest.importorskip("transformers.integrations.gguf.kernels")
from fastgguf.integrations import _transformers_kernels  # noqa: E402

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
               vocab: int = 300, seed: int = 0) -> None:
    """A random 2-layer LFM2 (one convolution layer, one attention layer) written to GGUF.

    ``types`` maps a GGUF name fragment to the type of the 2-D weights that contain it (first
    match; default Q8_0), quantized with gguf-py.
    """
    from gguf import GGMLQuantizationType
    from gguf.quants import quantize

    config = transformers.Lfm2Config(
        vocab_size=vocab, hidden_size=hidden, intermediate_size=intermediate, num_hidden_layers=2,
        num_attention_heads=4, num_key_value_heads=2, layer_types=["conv", "full_attention"],
        block_auto_adjust_ff_dim=False, conv_L_cache=3, conv_bias=False, tie_word_embeddings=False,
        max_position_embeddings=256, bos_token_id=1, eos_token_id=2)
    torch.manual_seed(seed)
    model = transformers.AutoModelForCausalLM.from_config(config, dtype=torch.float32)
    writer = GGUFWriter(path)
    writer.add("general.architecture", "lfm2")
    writer.add("lfm2.context_length", 256, 4)
    writer.add("lfm2.embedding_length", hidden, 4)
    writer.add("lfm2.feed_forward_length", intermediate, 4)
    writer.add("lfm2.block_count", 2, 4)
    writer.add("lfm2.attention.head_count", 4, 4)
    writer.add("lfm2.attention.head_count_kv", np.array([0, 2], np.uint32))
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


@pytest.fixture
def installed():
    _transformers_kernels.install()
    try:
        yield
    finally:
        _transformers_kernels.uninstall()


def load(path, dequantize: bool):
    config = transformers.GgufConfig(dequantize=dequantize)
    return transformers.AutoModelForCausalLM.from_pretrained(
        str(path.parent), gguf_file=path.name, quantization_config=config, dtype=torch.float32)


@pytest.mark.parametrize("types", [
    {"token_embd": GGMLType.Q8_0, "attn": GGMLType.Q4_0, "ffn": GGMLType.Q4_1, "output": GGMLType.Q8_0},
    {"": GGMLType.Q4_0},
], ids=["mixed", "q4_0"])
def test_packed_lfm2_logits_match_dequantized(tmp_path, installed, types):
    path = tmp_path / "lfm2.gguf"
    build_lfm2(path, types)
    packed = load(path, dequantize=False)
    dense = load(path, dequantize=True)
    kinds = {type(m).__name__ for m in packed.modules()}
    assert {"GgufLinear", "GgufEmbedding"} <= kinds
    assert "GgufLinear" not in {type(m).__name__ for m in dense.modules()}
    ids = torch.tensor([[1, 5, 77, 200, 3, 9, 42, 11, 250, 7, 6]])  # 11 tokens: the unpack path too
    with torch.inference_mode():
        for length in (1, 4, 11):  # <= 8 rows: mul_mat_vec; more: transformers' chunked unpack
            got = packed(ids[:, :length]).logits
            want = dense(ids[:, :length]).logits
            torch.testing.assert_close(got, want, rtol=1e-4, atol=1e-4)
    with torch.inference_mode():
        out = packed.generate(ids[:, :3], max_new_tokens=4, do_sample=False)
        ref = dense.generate(ids[:, :3], max_new_tokens=4, do_sample=False)
    assert torch.equal(out, ref)


def test_install_is_undone(tmp_path):
    before_kernel, before_can_read = gguf_kernels._gguf_kernel, gguf_kernels.kernel_can_read
    _transformers_kernels.install()
    _transformers_kernels.install()  # idempotent
    assert _transformers_kernels.installed()
    kernel = gguf_kernels.get_gguf_kernel()
    assert kernel and kernel.supports(int(GGMLType.Q4_K)) and not kernel.supports(int(GGMLType.F32))
    assert gguf_kernels.kernel_can_read(torch.zeros(2, dtype=torch.uint8))
    _transformers_kernels.uninstall()
    _transformers_kernels.uninstall()
    assert not _transformers_kernels.installed()
    assert gguf_kernels._gguf_kernel is before_kernel and gguf_kernels.kernel_can_read is before_can_read


def test_kernel_ops_match_fastgguf(installed):
    from fastgguf import dequantize
    from fastgguf.matmul import matmul, matmul_id

    rng = np.random.default_rng(0)
    kernel = gguf_kernels.get_gguf_kernel()
    from gguf import GGMLQuantizationType
    from gguf.quants import quantize

    w = rng.standard_normal((3, 10, 64)).astype(np.float32)
    blocks = quantize(w, GGMLQuantizationType.Q8_0)
    x = rng.standard_normal((2, 64)).astype(np.float32)
    t_blocks = torch.from_numpy(blocks)
    np.testing.assert_array_equal(kernel.mul_mat_vec(t_blocks[1], torch.from_numpy(x), 8, 10).numpy(),
                                  matmul(x, blocks[1], GGMLType.Q8_0))
    ids = torch.tensor([[2, 0], [1, 1]], dtype=torch.int32)
    np.testing.assert_array_equal(kernel.mul_mat_id(t_blocks, torch.from_numpy(x), ids, 8, 10).numpy(),
                                  matmul_id(x, blocks, ids.numpy(), GGMLType.Q8_0))
    full = dequantize(blocks[0], GGMLType.Q8_0, (10, 64))
    np.testing.assert_array_equal(kernel.dequantize(t_blocks[0], 8, 10, 64, torch.float32).numpy(), full)
    rows = kernel.get_rows(t_blocks[0], torch.tensor([4, 0]), 8, 64, torch.bfloat16)
    assert rows.dtype == torch.bfloat16
    torch.testing.assert_close(rows, torch.from_numpy(full[[4, 0]]).to(torch.bfloat16))
    # bfloat16 x is converted to float32
    xb = torch.from_numpy(x).to(torch.bfloat16)
    np.testing.assert_array_equal(kernel.mul_mat_vec(t_blocks[1], xb, 8, 10).numpy(),
                                  matmul(xb.float().numpy(), blocks[1], GGMLType.Q8_0))
