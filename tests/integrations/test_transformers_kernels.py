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
    ids = torch.tensor([[1, 5, 77, 200, 3, 9, 42, 11, 250, 7, 6] * 4])  # 44 tokens: the unpack path too
    with torch.inference_mode():
        # up to EXACT_GEMV_ROWS rows: fastgguf's mul_mat_vec; more: transformers' chunked unpack
        for length in (1, 4, 11, _transformers_kernels.EXACT_GEMV_ROWS, 40):
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


def test_integer_path_lfm2(tmp_path):
    """install(exact=False): every product on the integer path (x rounded to int8 blocks), for any
    number of rows, within about 1 % of the dequantized model's logits (3 % allowed)."""
    path = tmp_path / "lfm2.gguf"
    build_lfm2(path, {"token_embd": GGMLType.Q8_0, "attn": GGMLType.Q4_0, "ffn": GGMLType.Q4_1, "output": GGMLType.Q8_0})
    _transformers_kernels.install(exact=False)
    try:
        assert _transformers_kernels.is_exact() is False
        packed = load(path, dequantize=False)
        dense = load(path, dequantize=True)
        ids = torch.tensor([[1, 5, 77, 200, 3, 9, 42, 11, 250, 7, 6] * 4])
        with torch.inference_mode():
            for length in (1, 11, 44):
                got = packed(ids[:, :length]).logits
                want = dense(ids[:, :length]).logits
                assert float((got - want).abs().max()) <= 0.03 * float(want.abs().max())
                _transformers_kernels.install(exact=True)  # installed: only the path changes
                exact = packed(ids[:, :length]).logits
                _transformers_kernels.install(exact=False)
                # the integer path ran: not the exact products' logits
                assert not torch.equal(got, exact)
                torch.testing.assert_close(exact, want, rtol=1e-4, atol=1e-4)
    finally:
        _transformers_kernels.uninstall()
    assert _transformers_kernels.is_exact() is None


def test_gemv_rows_raised_and_restored(monkeypatch):
    """GgufLinear's limit for the kernel's products: EXACT_GEMV_ROWS (exact) or every row count
    (integer) while installed, transformers' own after; left alone beside an accelerator kernel."""
    gguf_utils = pytest.importorskip("transformers.integrations.gguf.utils")
    if not isinstance(getattr(gguf_utils, "MAX_GEMV_ROWS", None), int):
        pytest.skip("this transformers has no MAX_GEMV_ROWS")
    before = gguf_utils.MAX_GEMV_ROWS
    _transformers_kernels.install()
    try:
        assert gguf_utils.MAX_GEMV_ROWS == max(before, _transformers_kernels.EXACT_GEMV_ROWS)
        _transformers_kernels.install(exact=False)
        assert gguf_utils.MAX_GEMV_ROWS == _transformers_kernels.INTEGER_GEMV_ROWS
        _transformers_kernels.install(exact=True)
        assert gguf_utils.MAX_GEMV_ROWS == max(before, _transformers_kernels.EXACT_GEMV_ROWS)
    finally:
        _transformers_kernels.uninstall()
    assert gguf_utils.MAX_GEMV_ROWS == before
    # an accelerator kernel resolved before: its products take no more rows than transformers' limit
    monkeypatch.setattr(gguf_kernels, "_gguf_kernel", object())
    _transformers_kernels.install(exact=False)
    try:
        assert gguf_utils.MAX_GEMV_ROWS == before
    finally:
        _transformers_kernels.uninstall()


def test_rows_routed_to_fastgguf(tmp_path, installed, monkeypatch):
    """Up to EXACT_GEMV_ROWS rows a GgufLinear's product is fastgguf.matmul's; above, transformers'
    own path (the weights dequantized by the kernel, a chunk at a time)."""
    path = tmp_path / "lfm2.gguf"
    build_lfm2(path, {"": GGMLType.Q4_0})
    packed = load(path, dequantize=False)
    calls = []
    real = _transformers_kernels.matmul
    monkeypatch.setattr(_transformers_kernels, "matmul", lambda x, *a, **k: calls.append(x.shape[0]) or real(x, *a, **k))
    rows = _transformers_kernels.EXACT_GEMV_ROWS
    with torch.inference_mode():
        packed(torch.arange(1, rows + 1).reshape(1, rows))
        assert calls and set(calls) == {rows}
        calls.clear()
        packed(torch.arange(1, rows + 2).reshape(1, rows + 1))
        assert calls == []


def test_other_devices_go_to_the_kernel_resolved_before(monkeypatch):
    """Tensors not on the CPU (here the meta device) go to the accelerator kernel transformers had
    resolved before install(), or raise when there was none."""
    import types

    calls = []

    def recorder(op):
        def record(*args):
            calls.append(op)
            return op
        return record

    previous = types.SimpleNamespace(**{op: recorder(op) for op in ("mul_mat_vec", "mul_mat_id", "dequantize", "get_rows")})
    monkeypatch.setattr(gguf_kernels, "_gguf_kernel", previous)
    meta = torch.empty((4, 34), dtype=torch.uint8, device="meta")
    x = torch.empty((1, 32), device="meta")
    _transformers_kernels.install()
    try:
        ops = _transformers_kernels._saved["ops"]
        assert ops.mul_mat_vec(meta, x, 8, 4) == "mul_mat_vec"
        assert ops.mul_mat_id(meta[None], x, torch.zeros((1, 1), dtype=torch.int32), 8, 4) == "mul_mat_id"
        assert ops.dequantize(meta, 8, 4, 32, torch.float32) == "dequantize"
        assert ops.get_rows(meta, torch.tensor([0]), 8, 32, torch.float32) == "get_rows"
        assert calls == ["mul_mat_vec", "mul_mat_id", "dequantize", "get_rows"]
    finally:
        _transformers_kernels.uninstall()
    monkeypatch.setattr(gguf_kernels, "_gguf_kernel", None)
    _transformers_kernels.install()
    try:
        with pytest.raises(RuntimeError, match="CPU only"):
            _transformers_kernels._saved["ops"].mul_mat_vec(meta, x, 8, 4)
    finally:
        _transformers_kernels.uninstall()


def test_install_is_undone(tmp_path):
    before_kernel, before_can_read = gguf_kernels._gguf_kernel, gguf_kernels.kernel_can_read
    _transformers_kernels.install()
    _transformers_kernels.install()  # idempotent
    assert _transformers_kernels.installed() and _transformers_kernels.is_exact() is True
    kernel = gguf_kernels.get_gguf_kernel()
    assert kernel and kernel.supports(int(GGMLType.Q4_K)) and not kernel.supports(int(GGMLType.F32))
    assert gguf_kernels.kernel_can_read(torch.zeros(2, dtype=torch.uint8))
    with pytest.raises(TypeError):
        _transformers_kernels.install(exact="no")
    _transformers_kernels.uninstall()
    _transformers_kernels.uninstall()
    assert not _transformers_kernels.installed() and _transformers_kernels.is_exact() is None
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
    # exact=False: the integer path's products (not the float path's)
    _transformers_kernels.install(exact=False)
    got = kernel.mul_mat_vec(t_blocks[1], torch.from_numpy(x), 8, 10).numpy()
    np.testing.assert_array_equal(got, matmul(x, blocks[1], GGMLType.Q8_0, exact=False))
    assert not np.array_equal(got, matmul(x, blocks[1], GGMLType.Q8_0))
    np.testing.assert_array_equal(kernel.mul_mat_id(t_blocks, torch.from_numpy(x), ids, 8, 10).numpy(),
                                  matmul_id(x, blocks, ids.numpy(), GGMLType.Q8_0, exact=False))
