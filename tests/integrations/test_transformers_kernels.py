"""fastgguf as transformers' packed-GGUF kernel on CPU: logits against transformers' dequantized model."""

from __future__ import annotations

import numpy as np
import pytest

from fastgguf import GGMLType

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")
gguf_kernels = pytest.importorskip("transformers.integrations.gguf.kernels")
from fastgguf.integrations import _transformers_kernels  # noqa: E402

from lfm2_gguf import build_lfm2  # noqa: E402


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


@pytest.mark.parametrize("moe", [True, False], ids=["qwen35moe", "qwen35"])
def test_packed_qwen35_logits_match_dequantized(tmp_path, installed, moe):
    """Qwen3.5 kept packed: routed experts as GgufExperts (``mul_mat_id``), the rest GgufLinear/Embedding."""
    from hf_gguf_models import build_qwen35moe

    path = tmp_path / "qwen35.gguf"
    build_qwen35moe(path, {"exps": GGMLType.Q4_0, "attn": GGMLType.Q4_1, "": GGMLType.Q8_0}, moe=moe)
    packed = load(path, dequantize=False)
    dense = load(path, dequantize=True)
    kinds = {type(m).__name__ for m in packed.modules()}
    assert {"GgufLinear", "GgufEmbedding"} <= kinds
    assert ("GgufExperts" in kinds) == moe
    ids = torch.tensor([[1, 5, 77, 200, 3, 9, 42, 11, 250, 7, 6]])
    with torch.inference_mode():
        for length in (1, 4, 11):
            torch.testing.assert_close(packed(ids[:, :length]).logits, dense(ids[:, :length]).logits,
                                       rtol=1e-4, atol=1e-4)
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
