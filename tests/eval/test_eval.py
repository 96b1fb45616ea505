"""fastgguf.eval / ``fastgguf eval`` and ``fastgguf imatrix`` on a tiny random llama built by hf_gguf_models.

The statistics are checked against a plain per-token computation on hand-made logits; the pass
against the model itself (the base as F32: every weight swapped in, values unchanged), against the
file ``fastgguf quantize`` writes (the same statistics, bit for bit) and against a lighter format
(a larger divergence); the importance matrix against the inputs of the layers recomputed by hand.
"""

from __future__ import annotations

import contextlib
import io
import json
import math
import os
import random
import shutil
import subprocess

import numpy as np
import pytest

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")
pytest.importorskip("gguf")
pytest.importorskip("accelerate")

import fastgguf  # noqa: E402
from fastgguf import GGMLType  # noqa: E402
from fastgguf.cli import main  # noqa: E402
from fastgguf.eval import KLDStats, collect_imatrix  # noqa: E402
from fastgguf.integrations import transformers as integration  # noqa: E402
from fastgguf.requantize import requantize  # noqa: E402

import hf_gguf_models  # noqa: E402

pytestmark = pytest.mark.skipif(integration.unsupported_reason() is not None,
                                reason=str(integration.unsupported_reason()))

CTX, CHUNKS = 64, 3
REQUIRED_KEYS = {"name", "bits_per_weight", "size_bytes", "ppl", "ppl_base", "ppl_ratio", "kld_mean", "kld_mean_err",
                 "kld_median", "kld_p99", "kld_max", "same_top_p", "same_top_p_err", "delta_p_rms"}
STAT_KEYS = ("ppl", "ppl_err", "ppl_base", "ppl_ratio", "ppl_ratio_err", "log_ppl_ratio", "kld_mean", "kld_mean_err",
             "kld_median", "kld_p0.1", "kld_p99", "kld_p99.9", "kld_max", "delta_p_rms", "delta_p_mean", "same_top_p",
             "same_top_p_err", "n_tokens")


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    """(model path, text path, text): F16 weights with rows of 256, so the k-quant mixes apply as in llama.cpp."""
    folder = tmp_path_factory.mktemp("eval")
    path = str(folder / "tiny.gguf")
    hf_gguf_models.build(path, "llama", hidden=256, layers=2, heads=4, kv_heads=2, intermediate=512,
                         types={"": GGMLType.F16})
    words = "the cat héllo über straße мир 日本語 中文 a e o l h th he ll".split()
    rng = random.Random(1)
    text = " ".join(rng.choice(words) for _ in range(600))
    text_path = folder / "text.txt"
    text_path.write_text(text, encoding="utf-8")
    return path, str(text_path), text


@pytest.fixture(scope="module")
def q4_file(tiny, tmp_path_factory):
    out = str(tmp_path_factory.mktemp("q") / "tiny-Q4_K_M.gguf")
    requantize(tiny[0], out, "Q4_K_M")
    return out


@pytest.fixture(scope="module")
def records(tiny, q4_file):
    """One pass: the base as F32, Q8_0 and Q4_K_M in memory, and the Q4_K_M file."""
    calls = []
    # One torch thread: a BLAS may take fewer threads than asked under load (MKL's dynamic mode),
    # and another split of a product sums in another order; the tests compare logits exactly.
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        result = fastgguf.eval(tiny[0], ["F32", "Q8_0", "Q4_K_M"], quantized=[q4_file], text=tiny[2], ctx=CTX,
                               chunks=CHUNKS, progress=lambda done, total: calls.append((done, total)))
    finally:
        torch.set_num_threads(threads)
    assert calls == [(i, CHUNKS * 5) for i in range(1, CHUNKS * 5 + 1)]
    return {r["name"]: r for r in result}


# --------------------------------------------------------------------------------------------------
# The statistics, against a plain computation


def _reference(chunks):
    """llama-perplexity's statistics computed token by token with the math module (no numpy reductions)."""
    nll, nll_base, kld, dp, same = [], [], [], [], 0
    for base, q, targets in chunks:
        for row_b, row_q, t in zip(base.tolist(), q.tolist(), targets.tolist()):
            zb = math.log(sum(math.exp(v) for v in row_b))
            zq = math.log(sum(math.exp(v) for v in row_q))
            lb = [v - zb for v in row_b]
            lq = [v - zq for v in row_q]
            nll.append(-lq[t])
            nll_base.append(-lb[t])
            kld.append(sum(math.exp(a) * (a - b) for a, b in zip(lb, lq)))
            dp.append(math.exp(lq[t]) - math.exp(lb[t]))
            same += row_q.index(max(row_q)) == row_b.index(max(row_b))
    n = len(nll)

    def mean_err(xs):
        m = sum(xs) / n
        return m, math.sqrt(sum((x - m) ** 2 for x in xs) / n / (n - 1))

    def percentile(xs, q):
        xs = sorted(xs)
        position = q * (n - 1)
        low = int(position)
        high = min(low + 1, n - 1)
        return xs[low] + (position - low) * (xs[high] - xs[low])

    lq_mean, lq_err = mean_err(nll)
    lb_mean, lb_err = mean_err(nll_base)
    cov = sum((a - lq_mean) * (b - lb_mean) for a, b in zip(nll, nll_base)) / n / (n - 1)
    ratio_err = math.sqrt(lq_err**2 + lb_err**2 - 2 * cov)
    mse, mse_err = mean_err([x * x for x in dp])
    p_same = same / n
    out = {
        "n_tokens": n, "ppl": math.exp(lq_mean), "ppl_err": math.exp(lq_mean) * lq_err,
        "ppl_base": math.exp(lb_mean), "ppl_base_err": math.exp(lb_mean) * lb_err,
        "log_ppl_ratio": lq_mean - lb_mean, "log_ppl_ratio_err": ratio_err,
        "ppl_ratio": math.exp(lq_mean - lb_mean), "ppl_ratio_err": math.exp(lq_mean - lb_mean) * ratio_err,
        "kld_mean": mean_err(kld)[0], "kld_mean_err": mean_err(kld)[1], "kld_median": percentile(kld, 0.5),
        "kld_max": max(kld), "kld_min": min(kld),
        "delta_p_mean": 100 * mean_err(dp)[0], "delta_p_mean_err": 100 * mean_err(dp)[1],
        "delta_p_rms": 100 * math.sqrt(mse), "delta_p_rms_err": 100 * 0.5 / math.sqrt(mse) * mse_err,
        "delta_p_median": 100 * percentile(dp, 0.5), "delta_p_max": 100 * max(dp), "delta_p_min": 100 * min(dp),
        "same_top_p": 100 * p_same, "same_top_p_err": 100 * math.sqrt(p_same * (1 - p_same) / (n - 1)),
    }
    for q in (0.1, 1, 5, 10, 90, 95, 99, 99.9):
        out[f"kld_p{q:g}"] = percentile(kld, q / 100)
    for q in (0.1, 1, 5, 10, 25, 75, 90, 95, 99, 99.9):
        out[f"delta_p_p{q:g}"] = 100 * percentile(dp, q / 100)
    return out


def test_statistics_match_a_plain_computation():
    rng = np.random.default_rng(5)
    chunks = []
    for n in (97, 60):  # two chunks: sums carried over, odd and even totals
        base = rng.normal(0, 2, (n, 40)).astype(np.float32)
        q = (base + rng.normal(0, 0.7, base.shape)).astype(np.float32)
        q[::7] = base[::7]  # some rows unchanged: KLD 0 there, top token the same
        chunks.append((base, q, rng.integers(0, 40, n)))
    stats = KLDStats()
    for chunk in chunks:
        stats.add(*chunk)
    got, want = stats.result(), _reference(chunks)
    assert set(want) <= set(got)
    for key, value in want.items():
        assert got[key] == pytest.approx(value, rel=1e-9, abs=1e-12), key
    assert got["kld_min"] == 0.0


def test_kld_of_a_known_pair():
    # p = (1/2, 1/2) against q = (1/4, 3/4): KL(p || q) = 1/2 ln 2 + 1/2 ln(2/3); the base's top is token 0
    # (first of equals), Q's token 1
    base = np.log(np.array([[0.5, 0.5]] * 12))
    q = np.log(np.array([[0.25, 0.75]] * 12))
    stats = KLDStats()
    stats.add(base, q, np.zeros(12, int))
    got = stats.result()
    assert got["kld_mean"] == pytest.approx(0.5 * math.log(2) + 0.5 * math.log(2 / 3), rel=1e-12)
    assert got["kld_mean_err"] < 1e-8 and got["kld_p99"] == pytest.approx(got["kld_mean"], rel=1e-12)
    assert got["same_top_p"] == 0
    assert got["ppl"] == pytest.approx(4) and got["ppl_base"] == pytest.approx(2)
    assert got["delta_p_mean"] == pytest.approx(-25) and got["delta_p_rms"] == pytest.approx(25)


def test_shapes_checked():
    with pytest.raises(ValueError):
        KLDStats().add(np.zeros((3, 4)), np.zeros((3, 5)), np.zeros(3, int))
    with pytest.raises(ValueError, match="no tokens"):
        KLDStats().result()


# --------------------------------------------------------------------------------------------------
# The pass


def test_base_against_itself(records):
    # F32 from an F16 base: every weight is converted, swapped into the model through transformers' processors
    # (llama's q/k permutation among them), and equal: a wrong mapping or permutation would show here
    same = records["F32"]
    assert same["kld_mean"] == 0 and same["kld_max"] == 0 and same["kld_median"] == 0
    assert same["same_top_p"] == 100 and same["same_top_p_err"] == 0
    assert same["ppl"] == same["ppl_base"] and same["ppl_ratio"] == 1 and same["delta_p_rms"] == 0
    assert same["n_tokens"] == CHUNKS * (CTX - 1 - CTX // 2)


def test_more_bits_less_divergence(records):
    q8, q4 = records["Q8_0"], records["Q4_K_M"]
    assert 0 < q8["kld_mean"] < q4["kld_mean"]
    assert q8["same_top_p"] >= q4["same_top_p"]
    assert q8["bits_per_weight"] > q4["bits_per_weight"]
    for record in records.values():
        assert record["ppl_base"] == records["F32"]["ppl_base"]  # one base pass for all


def test_in_memory_candidate_equals_the_quantized_file(records, q4_file):
    memory, file = records["Q4_K_M"], records[os.path.basename(q4_file)]
    assert memory["source"] == "memory" and file["source"] == q4_file
    for key in STAT_KEYS:
        assert memory[key] == file[key], key  # exactly: the same weights, so the same logits
    assert memory["size_bytes"] == file["size_bytes"] == os.path.getsize(q4_file)
    assert memory["bits_per_weight"] == file["bits_per_weight"]
    with fastgguf.open(q4_file) as model:
        n_bytes = sum(t.nbytes for t in model.tensors.values())
        n_elements = sum(t.n_elements for t in model.tensors.values())
    assert file["bits_per_weight"] == pytest.approx(8 * n_bytes / n_elements)


def test_record_keys(records):
    for record in records.values():
        assert REQUIRED_KEYS <= set(record)
        assert all(isinstance(value, (int, float, str)) for value in record.values())


def test_tokens_and_chunks(tiny):
    from fastgguf.eval import _chunks, _Loaded

    loaded = _Loaded(tiny[0])
    try:
        tokens = loaded.tokens(tiny[2])
        assert tokens[0] == 1 and loaded.add_bos  # llama vocabulary: BOS first
        chunks = _chunks(tokens, CTX, None, loaded.add_bos, loaded.bos)
        assert len(chunks) == len(tokens) // CTX
        assert all(c[0] == 1 for c in chunks) and np.array_equal(chunks[1][1:], tokens[CTX + 1 : 2 * CTX])
    finally:
        loaded.close()
    with pytest.raises(ValueError, match="needs at least"):
        _chunks(tokens[:10], CTX, None, True, 1)


def test_nothing_to_compare_and_unknown_type(tiny):
    with pytest.raises(ValueError, match="nothing to compare"):
        fastgguf.eval(tiny[0], text=tiny[2])
    with pytest.raises(ValueError, match="unknown type"):
        fastgguf.eval(tiny[0], ["Q4_Z"], text=tiny[2], ctx=CTX, chunks=1)


# --------------------------------------------------------------------------------------------------
# Importance matrices


def test_imatrix_round_trip(tiny, tmp_path):
    path, _, text = tiny
    out = str(tmp_path / "imatrix.gguf")
    entries = collect_imatrix(path, text, out, ctx=CTX, chunks=2)
    read = fastgguf.read_imatrix(out)
    layers = [f"blk.{i}.{kind}.weight" for i in range(2)
              for kind in ("attn_q", "attn_k", "attn_v", "attn_output", "ffn_gate", "ffn_up", "ffn_down")]
    assert sorted(read) == sorted(layers) == sorted(entries)
    for name in layers:
        sums, counts = entries[name]
        assert counts.tolist() == [2 * CTX]
        np.testing.assert_array_equal(read[name], (sums[0].astype(np.float32) / np.float32(2 * CTX)))
        assert read[name].size == (512 if "ffn_down" in name else 256)
    # q, k and v read the same normed input
    np.testing.assert_array_equal(read["blk.0.attn_q.weight"], read["blk.0.attn_v.weight"])
    with fastgguf.open(out) as f:
        assert f.metadata["general.type"] == "imatrix"
        assert f.metadata["imatrix.chunk_count"] == 2 and f.metadata["imatrix.chunk_size"] == CTX
        assert f.tensors["blk.0.ffn_down.weight.in_sum2"].shape == (1, 512)
        assert f.tensors["blk.0.ffn_down.weight.counts"].shape == (1, 1)

    # recomputed by hand: layer 0's attention input is its input norm of the embeddings
    from fastgguf.eval import _chunks, _Loaded

    loaded = _Loaded(path)
    try:
        want = np.zeros(256)
        for chunk in _chunks(loaded.tokens(text), CTX, 2, loaded.add_bos, loaded.bos):
            with torch.no_grad():
                layer = loaded.model.model.layers[0]
                x = layer.input_layernorm(loaded.model.model.embed_tokens(torch.from_numpy(chunk)[None]))
            want += (x.double() ** 2).sum(dim=(0, 1)).numpy()
    finally:
        loaded.close()
    np.testing.assert_allclose(entries["blk.0.attn_q.weight"][0][0], want, rtol=1e-10)

    # into fastgguf quantize: the matrix changes the blocks, and eval's in-memory candidate with it is that file
    plain, weighted = str(tmp_path / "plain.gguf"), str(tmp_path / "weighted.gguf")
    assert main(["quantize", path, plain, "--type", "IQ4_XS", "--no-progress"]) == 0
    assert main(["quantize", path, weighted, "--type", "IQ4_XS", "--imatrix", out, "--no-progress"]) == 0
    with fastgguf.open(plain) as a, fastgguf.open(weighted) as b:
        assert not np.array_equal(a.tensors["blk.0.attn_q.weight"].raw, b.tensors["blk.0.attn_q.weight"].raw)
    result = fastgguf.eval(path, ["IQ4_XS"], imatrix=out, quantized=[weighted], text=text, ctx=CTX, chunks=1)
    for key in STAT_KEYS:
        assert result[0][key] == result[1][key], key


def test_imatrix_read_by_llama_quantize(tiny, tmp_path):
    binary = os.path.join(os.environ.get("LLAMA_CPP_BIN", "/work/llama/llama_cpp_python-0.3.36/vendor/llama.cpp/"
                                                          "build/bin"), "llama-quantize")
    if not os.access(binary, os.X_OK) and shutil.which("llama-quantize") is None:
        pytest.skip("llama-quantize not built")
    binary = binary if os.access(binary, os.X_OK) else str(shutil.which("llama-quantize"))
    out = str(tmp_path / "imatrix.gguf")
    assert main(["imatrix", tiny[0], "--text", tiny[1], "-o", out, "--ctx", str(CTX), "--chunks", "1",
                 "--no-progress"]) == 0
    done = subprocess.run([binary, "--imatrix", out, tiny[0], str(tmp_path / "q.gguf"), "IQ4_XS"],
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    assert "imatrix" in done.stdout + done.stderr
    assert "14 importance matrix entries" in done.stdout + done.stderr


# --------------------------------------------------------------------------------------------------
# The command


def _run(argv):
    stdout = io.StringIO()
    with contextlib.redirect_stdout(stdout):
        status = main(argv)
    return status, stdout.getvalue()


def test_cli_json_csv_table_and_plot(tiny, tmp_path, q4_file):
    path, text_path, _ = tiny
    common = [path, "--types", "Q8_0", "--quantized", q4_file, "--text", text_path, "--ctx", str(CTX), "--chunks", "1",
              "--no-progress"]
    plot = tmp_path / "kld.png"
    status, out = _run(["eval", *common, "--json", "--plot", str(plot)])
    assert status == 0
    records = json.loads(out)
    assert [r["name"] for r in records] == ["Q8_0", os.path.basename(q4_file)]
    assert all(REQUIRED_KEYS <= set(r) for r in records)
    assert plot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and plot.stat().st_size > 10_000
    status, out = _run(["eval", *common, "--csv"])
    lines = out.splitlines()
    assert status == 0 and lines[0].startswith("name,source,bits_per_weight") and len(lines) == 3
    status, out = _run(["eval", *common])
    assert status == 0 and "KLD mean" in out and "Q8_0" in out and "same top" in out
    assert main(["eval", path, "--text", text_path]) == 1  # nothing to compare
    assert main(["eval", *common, "--plot", str(tmp_path / "x.gif")]) == 1


def test_moe_experts_swapped_in_place(tmp_path, tiny):
    # qwen2moe: transformers merges ffn_gate_exps and ffn_up_exps into one parameter itself; F32 from F16 swaps every
    # expert tensor in and must give the base's outputs exactly. The importance matrix has the routed experts (per
    # expert) and the shared one (a plain linear layer).
    path = str(tmp_path / "moe.gguf")
    hf_gguf_models.build(path, "qwen2moe", hidden=256, layers=1, intermediate=512, types={"": GGMLType.F16})
    same, q4 = fastgguf.eval(path, ["F32", "Q4_K_M"], text=tiny[2], ctx=CTX, chunks=1)
    assert same["kld_max"] == 0 and same["same_top_p"] == 100 and same["ppl"] == same["ppl_base"]
    assert q4["kld_mean"] > 0
    entries = collect_imatrix(path, tiny[2], str(tmp_path / "imatrix.gguf"), ctx=CTX, chunks=1)
    assert {"blk.0.ffn_down_shexp.weight", "blk.0.attn_q.weight", "blk.0.ffn_gate_inp.weight",
            "blk.0.ffn_gate_inp_shexp.weight"} <= set(entries)
    for kind in ("gate", "up", "down"):
        sums, counts = entries[f"blk.0.ffn_{kind}_exps.weight"]
        assert sums.shape[0] == counts.shape[0] == 4 and counts.sum() == CTX * 2  # tokens x top-k


@pytest.fixture(scope="module")
def moe(tmp_path_factory):
    path = str(tmp_path_factory.mktemp("moe") / "qwen3moe.gguf")
    hf_gguf_models.build(path, "qwen3moe", hidden=256, layers=1, intermediate=512, types={"": GGMLType.F16})
    return path


def test_imatrix_moe_experts_per_expert(moe, tiny, tmp_path):
    # Per expert, as llama-imatrix's MUL_MAT_ID: recomputed here from the GGUF weights alone (router ffn_gate_inp,
    # top-2 of its logits; gate/up/down experts dequantized, float64) and the hidden states entering the MoE block.
    from fastgguf.eval import _chunks, _Loaded

    path, text = moe, tiny[2]
    out = str(tmp_path / "imatrix.gguf")
    entries = collect_imatrix(path, text, out, ctx=CTX, chunks=2)
    names = {kind: f"blk.0.ffn_{kind}_exps.weight" for kind in ("gate", "up", "down")}
    assert set(names.values()) <= set(entries)
    with fastgguf.open(path) as f:
        weights = {kind: f.tensors[name].dequantize().astype(np.float64) for kind, name in names.items()}
        router = f.tensors["blk.0.ffn_gate_inp.weight"].dequantize().astype(np.float64)
        top_k = int(f.metadata["qwen3moe.expert_used_count"])
    n_expert, n_ff, n_embd = weights["gate"].shape
    want_x, want_h = np.zeros((n_expert, n_embd)), np.zeros((n_expert, n_ff))
    want_counts = np.zeros(n_expert)
    loaded = _Loaded(path)
    seen = []
    handle = loaded.model.model.layers[0].mlp.register_forward_pre_hook(
        lambda _m, args: seen.append(args[0].detach().reshape(-1, n_embd).double().numpy()))
    try:
        for chunk in _chunks(loaded.tokens(text), CTX, 2, loaded.add_bos, loaded.bos):
            loaded.logits(chunk, 1)
    finally:
        handle.remove()
        loaded.close()
    x = np.concatenate(seen)
    assert x.shape == (2 * CTX, n_embd)
    chosen = np.argsort(-(x @ router.T), axis=1)[:, :top_k]
    for token, experts in zip(x, chosen):
        for e in experts:
            gate, up = weights["gate"][e] @ token, weights["up"][e] @ token
            h = gate / (1 + np.exp(-gate)) * up
            want_x[e] += token**2
            want_h[e] += h**2
            want_counts[e] += 1
    assert want_counts.sum() == 2 * CTX * top_k and (want_counts > 0).all()
    # the router (its own module, no nn.Linear) reads every token, as llama-imatrix's plain MUL_MAT
    sums, counts = entries["blk.0.ffn_gate_inp.weight"]
    assert counts.tolist() == [2 * CTX]
    np.testing.assert_allclose(sums[0], (x**2).sum(axis=0), rtol=1e-10)
    for kind, want in (("gate", want_x), ("up", want_x), ("down", want_h)):
        sums, counts = entries[names[kind]]
        assert counts.tolist() == want_counts.tolist(), kind
        np.testing.assert_allclose(sums, want, rtol=2e-5, err_msg=kind)

    # the file: in_sum2 (n_expert, n_per_row), counts (n_expert, 1); read back as llama-quantize does, per expert
    read = fastgguf.read_imatrix(out)
    with fastgguf.open(out) as f:
        assert f.tensors[names["down"] + ".in_sum2"].shape == (n_expert, n_ff)
        assert f.tensors[names["down"] + ".counts"].shape == (n_expert, 1)
    for name in names.values():
        sums, counts = entries[name]
        expected = (sums.astype(np.float32) / counts.astype(np.float32)[:, None]).reshape(-1)
        np.testing.assert_array_equal(read[name], expected)

    # into fastgguf quantize: each expert quantized with its own slice
    plain, weighted = str(tmp_path / "plain.gguf"), str(tmp_path / "weighted.gguf")
    assert main(["quantize", path, plain, "--type", "IQ4_XS", "--no-progress"]) == 0
    assert main(["quantize", path, weighted, "--type", "IQ4_XS", "--imatrix", out, "--no-progress"]) == 0
    with fastgguf.open(plain) as a, fastgguf.open(weighted) as b:
        for name in names.values():
            assert b.tensors[name].shape == a.tensors[name].shape
            assert not np.array_equal(a.tensors[name].raw, b.tensors[name].raw), name
        with fastgguf.open(path) as base:
            expert = fastgguf.quantize(base.tensors[names["up"]].dequantize()[1], b.tensors[names["up"]].type,
                                       imatrix=read[names["up"]][n_embd : 2 * n_embd])
        per_expert = len(b.tensors[names["up"]].raw) // n_expert
        assert bytes(b.tensors[names["up"]].raw[per_expert : 2 * per_expert]) == bytes(np.asarray(expert).tobytes())


def test_imatrix_skips_unknown_experts_with_a_warning(moe, tiny, tmp_path, monkeypatch):
    # an experts module laid out otherwise (here: one with a bias it would add) is not hooked; its tensors are named
    # in a warning
    import importlib

    eval_module = importlib.import_module("fastgguf.eval")

    class Transposed(eval_module._Loaded):
        def __init__(self, path):
            super().__init__(path)
            for module in self.model.modules():
                if hasattr(module, "gate_up_proj"):
                    module.gate_up_proj_bias = torch.zeros(module.gate_up_proj.shape[:2])

    monkeypatch.setattr(eval_module, "_Loaded", Transposed)
    with pytest.warns(UserWarning, match="expert tensors not collected.*ffn_down_exps"):
        entries = collect_imatrix(moe, tiny[2], str(tmp_path / "imatrix.gguf"), ctx=CTX, chunks=1)
    assert "blk.0.attn_q.weight" in entries and not any("_exps" in name for name in entries)
