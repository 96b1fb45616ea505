"""Which tensor type each tensor gets: llama-quantize's mixes on synthetic llama-like models (header only)."""

from __future__ import annotations

import numpy as np
import pytest

import fastgguf
from fastgguf import GGMLType as T, GGUFWriter
from fastgguf.requantize import FILE_TYPES, MIXES, plan_requantize

COLS = 256
LAYER_WEIGHTS = ("attn_q", "attn_k", "attn_v", "attn_output", "ffn_gate", "ffn_up", "ffn_down")


def write_model(path, *, n_layer=16, head=8, head_kv=8, arch="llama", tied=False, experts=0, cols=COLS, rows=2,
                extra=(), block_count=True):
    """A llama-like model; every weight has ``rows`` rows of ``cols`` F16 values (plans read no data)."""
    w = GGUFWriter(path)
    w.add("general.architecture", arch)
    w.add("general.name", "tiny")
    w.add("general.file_type", 1, fastgguf.GGUFValueType.UINT32)
    if block_count:
        w.add(f"{arch}.block_count", n_layer, fastgguf.GGUFValueType.UINT32)
    w.add(f"{arch}.attention.head_count", head, fastgguf.GGUFValueType.UINT32)
    w.add(f"{arch}.attention.head_count_kv", head_kv, fastgguf.GGUFValueType.UINT32)
    if experts:
        w.add(f"{arch}.expert_count", experts, fastgguf.GGUFValueType.UINT32)
    weight = np.zeros((rows, cols), np.float16)
    w.add_tensor("token_embd.weight", weight)
    w.add_tensor("output_norm.weight", np.ones(cols, np.float32))
    if not tied:
        w.add_tensor("output.weight", weight)
    for i in range(n_layer):
        w.add_tensor(f"blk.{i}.attn_norm.weight", np.ones(cols, np.float32))
        for kind in LAYER_WEIGHTS:
            if experts and kind.startswith("ffn_"):
                w.add_tensor(f"blk.{i}.{kind}_exps.weight", np.zeros((experts, rows, cols), np.float16))
            else:
                w.add_tensor(f"blk.{i}.{kind}.weight", weight)
        if experts:
            w.add_tensor(f"blk.{i}.ffn_gate_inp.weight", np.zeros((experts, cols), np.float32))
        w.add_tensor(f"blk.{i}.ffn_norm.weight", np.ones(cols, np.float32))
    for name, array in extra:
        w.add_tensor(name, array)
    w.write()
    return str(path)


def plan(path, mix, **kwargs):
    with fastgguf.open(path) as model:
        plans, file_type = plan_requantize(model, mix, **kwargs)
    return {p.name: p.target_type for p in plans}, file_type, {p.name: p.note for p in plans}


MORE_BITS_16 = {0, 1, 4, 7, 10, 13, 14, 15}  # use_more_bits(i, 16): i < 2, i >= 14, (i - 2) % 3 == 2


def layer_types(types, kind, n_layer=16):
    return [types[f"blk.{i}.{kind}.weight"] for i in range(n_layer)]


def test_q4_k_m(tmp_path):
    types, file_type, _ = plan(write_model(tmp_path / "m.gguf"), "Q4_K_M")
    assert file_type == 15
    assert types["output.weight"] == T.Q6_K and types["token_embd.weight"] == T.Q4_K
    assert types["output_norm.weight"] == T.F32 and types["blk.3.attn_norm.weight"] == T.F32
    for kind in ("attn_v", "ffn_down"):
        assert layer_types(types, kind) == [T.Q6_K if i in MORE_BITS_16 else T.Q4_K for i in range(16)]
    for kind in ("attn_q", "attn_k", "attn_output", "ffn_gate", "ffn_up"):
        assert set(layer_types(types, kind)) == {T.Q4_K}


def test_q3_k_m_and_q3_k_l(tmp_path):
    path = write_model(tmp_path / "m.gguf")
    types, file_type, _ = plan(path, "Q3_K_M")
    assert file_type == 12
    assert layer_types(types, "attn_v") == [T.Q5_K] * 2 + [T.Q4_K] * 14
    assert layer_types(types, "ffn_down") == [T.Q5_K] + [T.Q4_K] * 15  # i < 16/16, then Q4_K (not falcon)
    assert set(layer_types(types, "attn_output")) == {T.Q4_K}
    assert set(layer_types(types, "attn_q") + layer_types(types, "ffn_up")) == {T.Q3_K}
    assert types["output.weight"] == T.Q6_K and types["token_embd.weight"] == T.Q3_K
    types, file_type, _ = plan(path, "Q3_K_L")
    assert file_type == 13
    assert set(layer_types(types, "attn_v") + layer_types(types, "ffn_down") + layer_types(types, "attn_output")) \
        == {T.Q5_K}
    assert set(layer_types(types, "attn_k")) == {T.Q3_K}


def test_q3_k_m_falcon(tmp_path):
    types, _, _ = plan(write_model(tmp_path / "m.gguf", arch="falcon"), "Q3_K_M")
    assert layer_types(types, "ffn_down") == [T.Q5_K] + [T.Q4_K if i in MORE_BITS_16 else T.Q3_K for i in range(1, 16)]
    assert set(layer_types(types, "attn_output")) == {T.Q3_K}
    assert types["output.weight"] == T.Q8_0


def test_q4_k_s_and_q5_k_s(tmp_path):
    path = write_model(tmp_path / "m.gguf")
    types, file_type, _ = plan(path, "Q4_K_S")
    assert file_type == 14
    assert layer_types(types, "attn_v") == [T.Q5_K] * 4 + [T.Q4_K] * 12
    assert layer_types(types, "ffn_down") == [T.Q5_K] * 2 + [T.Q4_K] * 14
    types, file_type, _ = plan(path, "Q5_K_S")
    assert file_type == 16
    assert {t for name, t in types.items() if name.startswith("blk.") and "norm" not in name} == {T.Q5_K}
    assert types["output.weight"] == T.Q6_K


@pytest.mark.parametrize("head_kv, attn_v", [(8, T.Q3_K), (2, T.Q4_K)])
def test_q2_k_gqa(tmp_path, head_kv, attn_v):
    types, file_type, _ = plan(write_model(tmp_path / "m.gguf", head_kv=head_kv), "Q2_K")
    assert file_type == 10
    assert set(layer_types(types, "attn_v")) == {attn_v}
    assert set(layer_types(types, "ffn_down") + layer_types(types, "attn_output")) == {T.Q3_K}
    assert set(layer_types(types, "attn_q") + layer_types(types, "ffn_gate")) == {T.Q2_K}


@pytest.mark.parametrize("mix, base, output", [("Q8_0", T.Q8_0, T.Q8_0), ("Q6_K", T.Q6_K, T.Q6_K),
                                                ("Q4_0", T.Q4_0, T.Q6_K), ("Q5_1", T.Q5_1, T.Q6_K)])
def test_single_type_mixes(tmp_path, mix, base, output):
    types, file_type, _ = plan(write_model(tmp_path / "m.gguf"), mix)
    assert file_type == FILE_TYPES[mix]
    assert types["output.weight"] == output
    assert {t for name, t in types.items() if "norm" not in name and name != "output.weight"} == {base}


def test_q4_0_with_imatrix_guards_first_ffn_down(tmp_path):
    path = write_model(tmp_path / "m.gguf")
    imatrix = {f"blk.{i}.ffn_down.weight": np.ones(COLS, np.float32) for i in range(16)}
    types, _, _ = plan(path, "Q4_0", imatrix=imatrix)
    assert layer_types(types, "ffn_down") == [T.Q4_1] * 2 + [T.Q4_0] * 14


@pytest.mark.parametrize("head_kv, attn_v", [(8, T.IQ4_XS), (2, T.Q5_K)])
def test_iq4_xs(tmp_path, head_kv, attn_v):
    types, file_type, _ = plan(write_model(tmp_path / "m.gguf", head_kv=head_kv), "IQ4_XS")
    assert file_type == 30
    assert set(layer_types(types, "attn_v")) == {attn_v}
    assert layer_types(types, "ffn_down") == [T.Q5_K] * 2 + [T.IQ4_XS] * 14  # no imatrix: first 1/8 more bits
    types, _, _ = plan(write_model(tmp_path / "m.gguf", head_kv=head_kv), "IQ4_XS",
                       imatrix={f"blk.{i}.ffn_down.weight": np.ones(COLS, np.float32) for i in range(16)})
    assert set(layer_types(types, "ffn_down")) == {T.IQ4_XS}


def test_iq3_m(tmp_path):
    types, file_type, _ = plan(write_model(tmp_path / "m.gguf"), "IQ3_M")
    assert file_type == 27
    assert set(layer_types(types, "attn_v") + layer_types(types, "attn_output")) == {T.Q4_K}
    assert layer_types(types, "ffn_down") == [T.Q4_K] * 2 + [T.IQ3_S] * 14
    assert set(layer_types(types, "attn_q")) == {T.IQ3_S}


def all_weights_imatrix(path):
    with fastgguf.open(path) as model:
        return {t.name: np.ones(t.shape[-1] * (t.shape[0] if len(t.shape) == 3 else 1), np.float32)
                for t in model.tensors.values()}


def test_iq3_xxs_needs_an_imatrix(tmp_path):
    path = write_model(tmp_path / "m.gguf")
    with pytest.raises(ValueError, match="needs an importance matrix"):
        plan(path, "IQ3_XXS")
    types, file_type, _ = plan(path, "IQ3_XXS", imatrix=all_weights_imatrix(path))
    assert file_type == 23
    assert set(layer_types(types, "attn_v") + layer_types(types, "ffn_down")) == {T.IQ3_XXS}
    assert set(layer_types(types, "attn_q") + layer_types(types, "attn_k")) == {T.IQ2_S}
    assert set(layer_types(types, "attn_output")) == {T.IQ3_S}
    assert types["token_embd.weight"] == T.IQ3_S and types["output.weight"] == T.Q5_K


@pytest.mark.parametrize("mix, base, low, attn_output, embd", [
    ("IQ2_XS", T.IQ2_XS, T.Q2_K, T.IQ2_XS, T.Q2_K), ("IQ2_M", T.IQ2_S, T.IQ3_S, T.IQ3_S, T.IQ3_S),
    ("IQ1_M", T.IQ1_M, T.Q2_K, T.IQ2_XXS, T.Q2_K)])
def test_very_low_bit_mixes(tmp_path, mix, base, low, attn_output, embd):
    path = write_model(tmp_path / "m.gguf")
    types, _, _ = plan(path, mix, imatrix=all_weights_imatrix(path))
    assert set(layer_types(types, "attn_v")) == {low}
    assert layer_types(types, "ffn_down") == [low] * 2 + [base] * 14
    assert set(layer_types(types, "attn_output")) == {attn_output}
    assert types["token_embd.weight"] == embd and types["output.weight"] == T.Q5_K
    assert set(layer_types(types, "ffn_up")) == {base}


def test_tied_embeddings_take_the_output_rule(tmp_path):
    types, _, _ = plan(write_model(tmp_path / "m.gguf", tied=True), "Q4_K_M")
    assert types["token_embd.weight"] == T.Q6_K


def test_eight_experts(tmp_path):
    path = write_model(tmp_path / "m.gguf", n_layer=8, experts=8)
    types, _, _ = plan(path, "Q4_K_M")
    assert set(layer_types(types, "attn_v", 8) + layer_types(types, "attn_k", 8)) == {T.Q8_0}
    assert set(layer_types(types, "attn_output", 8)) == {T.Q5_K}
    # ffn_down layer from the name (blk.N.): use_more_bits(i, 8) is i < 1, i >= 7, (i - 1) % 3 == 2
    assert layer_types(types, "ffn_down_exps", 8) == [T.Q6_K if i in (0, 3, 6, 7) else T.Q4_K for i in range(8)]
    assert set(layer_types(types, "ffn_gate_inp", 8)) == {T.F32}  # expert router: never quantized
    types, file_type, _ = plan(path, "MXFP4_MOE")
    assert file_type == 38
    assert set(layer_types(types, "ffn_up_exps", 8)) == {T.MXFP4}
    assert set(layer_types(types, "attn_q", 8)) == {T.Q8_0} and types["output.weight"] == T.Q8_0


def test_row_length_fallbacks(tmp_path):
    extra = [("blk.0.odd96.weight", np.zeros((2, 96), np.float16)), ("blk.0.odd100.weight", np.zeros((2, 100), np.float16))]
    path = write_model(tmp_path / "m.gguf", extra=extra)
    types, _, notes = plan(path, "Q4_K_M")
    assert types["blk.0.odd96.weight"] == T.Q5_0 and "Q5_0 instead of Q4_K" in notes["blk.0.odd96.weight"]
    assert types["blk.0.odd100.weight"] == T.F16
    # a 32-element block type has nothing smaller to fall back to: F16, as llama.cpp does
    types, _, notes = plan(path, "Q8_0")
    assert types["blk.0.odd96.weight"] == T.Q8_0 and types["blk.0.odd100.weight"] == T.F16
    assert "F16 instead of Q8_0" in notes["blk.0.odd100.weight"]
    with pytest.raises(ValueError, match="no fallback for Q1_0"):  # a larger block without one: an error
        plan(path, "Q1_0")
    assert plan(path, "Q1_0", keep=["*odd*"])[0]["blk.0.attn_q.weight"] == T.Q1_0
    # One tensor type on every weight: what the block does not divide is kept as it is, and said so.
    types, file_type, notes = plan(path, "Q4_K")
    assert file_type == 15
    assert types["blk.0.odd96.weight"] == T.F16 and "not a multiple of Q4_K's 256" in notes["blk.0.odd96.weight"]
    assert types["blk.0.attn_q.weight"] == T.Q4_K and types["output.weight"] == T.Q4_K


def test_pure_and_plain_types(tmp_path):
    path = write_model(tmp_path / "m.gguf")
    for spec, kwargs, file_type in [("Q6_K", {"pure": True}, 18), ("q5_k", {}, 17), (T.IQ4_NL, {}, 25),
                                    ("MXFP4", {}, 38), ("BF16", {}, 32)]:
        types, got_type, notes = plan(path, spec, **kwargs)
        want = T[spec.upper()] if isinstance(spec, str) else spec
        assert got_type == file_type
        assert {t for name, t in types.items() if "norm" not in name} == {want}, spec
        assert notes["blk.0.attn_norm.weight"] == "1-D"
    for bad in ("Q8_K", "Q8_1", "Q4_K_X", "I32"):
        with pytest.raises(ValueError):
            plan(path, bad)


def test_filter_and_keep(tmp_path):
    path = write_model(tmp_path / "m.gguf", n_layer=4)
    types, _, notes = plan(path, "Q8_0", filter=["blk.1.*", "output.weight"], keep=["*attn_q*"])
    assert types["blk.1.ffn_up.weight"] == T.Q8_0 and types["output.weight"] == T.Q8_0
    assert types["blk.1.attn_q.weight"] == T.F16 and notes["blk.1.attn_q.weight"] == "--keep"
    assert types["blk.2.ffn_up.weight"] == T.F16 and notes["blk.2.ffn_up.weight"] == "not matched by --filter"
    with pytest.raises(ValueError, match="matches no tensor"):
        plan(path, "Q8_0", keep=["nothing*"])


def test_imatrix_entry_sizes(tmp_path):
    path = write_model(tmp_path / "m.gguf", n_layer=2)
    with pytest.raises(ValueError, match="has 10 values"):
        plan(path, "Q4_K_M", imatrix={"blk.0.attn_q.weight": np.ones(10, np.float32)})
    plan(path, "Q4_K_M", imatrix={"token_embd.weight": np.ones(10, np.float32)})  # ignored, as llama-quantize does


def test_mix_needs_block_count(tmp_path):
    path = write_model(tmp_path / "m.gguf", block_count=False)
    with pytest.raises(ValueError, match="block_count"):
        plan(path, "Q4_K_M")
    assert plan(path, "Q4_K")[0]["blk.0.attn_q.weight"] == T.Q4_K


def test_every_mix_has_a_file_type():
    assert set(MIXES) <= set(FILE_TYPES)
