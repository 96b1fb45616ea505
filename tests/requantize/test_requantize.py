"""fastgguf.requantize / `fastgguf quantize`: round trips, kept tensors, metadata, the output file's life."""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pytest

import fastgguf
import fastgguf.cli
from fastgguf import GGMLType as T, GGUFWriter, requantize as rq
from fastgguf.requantize import plan_requantize, quantizable_types, requantize
from fastgguf.types import REGISTRY, TYPE_TRAITS

N_LAYER = 4
COLS = 256


def write_model(path, *, dtype=np.float32, seed=0, n_layer=N_LAYER, odd=True):
    """A small llama-like model with real values: 4 layers, GQA 4, a tokenizer array, norms and odd-shaped tensors."""
    rng = np.random.default_rng(seed)
    w = GGUFWriter(path)
    w.add("general.architecture", "llama")
    w.add("general.name", "tiny llama")
    w.add("general.file_type", 0, fastgguf.GGUFValueType.UINT32)
    w.add("llama.block_count", n_layer, fastgguf.GGUFValueType.UINT32)
    w.add("llama.attention.head_count", 8, fastgguf.GGUFValueType.UINT32)
    w.add("llama.attention.head_count_kv", 2, fastgguf.GGUFValueType.UINT32)
    w.add("llama.rope.freq_base", 10000.0)
    w.add("tokenizer.ggml.tokens", ["<s>", "</s>", "h\u00e9llo", b"\xff\xfe raw"])
    w.add("tokenizer.ggml.scores", np.array([0.0, -1.5, 2.25, 3.0], np.float32))
    w.add("some.nested", [[1, 2], [3]])
    w.add("some.u64", np.uint64(2**40))

    def weight(rows, cols=COLS):
        return (rng.standard_normal((rows, cols)) * 0.05).astype(dtype)

    w.add_tensor("token_embd.weight", weight(32))
    w.add_tensor("output_norm.weight", np.ones(COLS, np.float32))
    w.add_tensor("output.weight", weight(32))
    for i in range(n_layer):
        w.add_tensor(f"blk.{i}.attn_norm.weight", rng.random(COLS).astype(np.float32))
        w.add_tensor(f"blk.{i}.attn_q.weight", weight(64))
        w.add_tensor(f"blk.{i}.attn_k.weight", weight(16))
        w.add_tensor(f"blk.{i}.attn_v.weight", weight(16))
        w.add_tensor(f"blk.{i}.attn_output.weight", weight(64))
        w.add_tensor(f"blk.{i}.ffn_gate.weight", weight(48))
        w.add_tensor(f"blk.{i}.ffn_up.weight", weight(48))
        w.add_tensor(f"blk.{i}.ffn_down.weight", weight(64))
        w.add_tensor(f"blk.{i}.ffn_norm.weight", np.ones(COLS, np.float32))
    if odd:
        w.add_tensor("blk.0.odd.weight", weight(4, 96))
    w.write()
    return str(path)


#: gguf-py's quantizers (an independent implementation) and numpy's float16 rounding stand in for
#: fastgguf.quantize where a test is about the file, the plan and the streaming, not about our quantizers.
GGUF_PY_TYPES = (T.Q4_0, T.Q4_1, T.Q5_0, T.Q5_1, T.Q8_0)
STAND_IN_TYPES = (*GGUF_PY_TYPES, T.F16)


def stand_in_quantize(x, type, *, imatrix=None, threads=None):  # noqa: A002 - fastgguf.quantize's signature
    import gguf

    x = np.asarray(x, np.float32)
    if type == T.F16:
        return x.astype("<f2").view(np.uint8).reshape(x.shape[0], -1)
    return gguf.quants.quantize(x, gguf.GGMLQuantizationType(int(type)))


#: This build's quantizers, less those needing an importance matrix.
# (without an imatrix llama-quantize also refuses IQ3_XXS, IQ2_S and IQ1_M targets, which ggml itself takes)
REAL_TYPES = [t for t in quantizable_types() if REGISTRY[t].file_type is not None
              and REGISTRY[t].imatrix != "required" and not REGISTRY[t].llama_imatrix]


@pytest.fixture(params=["stand-in"] + (["real"] if REAL_TYPES else []))
def quantizer(request, monkeypatch):
    """``(types, quantize)``: gguf-py's quantizers (always) and this build's (when it has them)."""
    if request.param == "real":
        return REAL_TYPES, fastgguf.quantize
    monkeypatch.setattr(rq, "quantizable_types", lambda: STAND_IN_TYPES)
    monkeypatch.setattr(rq, "_quantize_function", lambda: stand_in_quantize)
    return list(STAND_IN_TYPES), stand_in_quantize


def reference(source: fastgguf.TensorInfo, target: T, quantize) -> np.ndarray:
    """dequantize(quantize(x)) for one tensor, through the public functions; gguf-py's bytes where it has the type."""
    x = source.dequantize().reshape(-1, source.shape[-1])
    blocks = quantize(x, target)
    if target in STAND_IN_TYPES:
        np.testing.assert_array_equal(np.asarray(blocks).view(np.uint8).reshape(-1),
                                      stand_in_quantize(x, target).reshape(-1))
    return fastgguf.dequantize(blocks, target, source.shape)


def needs(*types):
    missing = [t.name for t in types if t not in quantizable_types()]
    return pytest.mark.skipif(bool(missing), reason=f"no quantizer for {', '.join(missing)} in this build yet")


def check_metadata(src, out, file_type):
    # as llama-quantize (gguf_set_val_*): the two keys it sets move to the end, version first
    moved = ["general.quantization_version", "general.file_type"]
    assert list(out.metadata) == [k for k in src.metadata if k not in moved] + moved
    for key in src.metadata:
        if key == "general.file_type":
            continue
        assert out.metadata.value_type(key) == src.metadata.value_type(key), key
        if src.metadata.value_type(key) == fastgguf.GGUFValueType.STRING:
            assert out.metadata.raw(key) == src.metadata.raw(key)
        elif key == "tokenizer.ggml.tokens":
            assert [out.metadata[key].raw(i) for i in range(4)] == [src.metadata[key].raw(i) for i in range(4)]
        elif key == "some.nested":
            assert [list(out.metadata[key][i]) for i in range(2)] == [[1, 2], [3]]
        else:
            np.testing.assert_array_equal(out.metadata[key], src.metadata[key])
    assert out.metadata["general.file_type"] == file_type
    assert out.metadata.value_type("general.file_type") == fastgguf.GGUFValueType.UINT32
    assert out.metadata["general.quantization_version"] == 2


@pytest.mark.parametrize("source_dtype", [np.float32, np.float16])
def test_round_trip_every_type(tmp_path, source_dtype, quantizer):
    targets, quantize = quantizer
    src_path = write_model(tmp_path / "in.gguf", dtype=source_dtype)
    for target in targets:
        out_path = tmp_path / f"out-{target.name}.gguf"
        plans = requantize(src_path, out_path, target, pure=True, threads=2)
        with fastgguf.open(src_path) as src, fastgguf.open(out_path) as out:
            check_metadata(src, out, REGISTRY[target].file_type)
            assert list(out.tensors) == [t.name for t in rq._llama_order(src.tensors.values())]  # llama.cpp's order
            for plan in plans:
                s, o = src.tensors[plan.name], out.tensors[plan.name]
                assert o.type == plan.target_type and o.shape == s.shape
                if plan.converted:
                    np.testing.assert_array_equal(o.dequantize(), reference(s, target, quantize))
                    if target not in (T.F16, T.TQ1_0, T.TQ2_0):  # near the source (ternary types zero most
                        # Gaussian values: they are made for ternary weights); 1-bit signs keep 0.6 of its RMS
                        x = s.dequantize()
                        assert np.sqrt(np.mean((o.dequantize() - x) ** 2)) < 0.75 * np.sqrt(np.mean(x**2))
                else:
                    assert bytes(o.raw) == bytes(s.raw)
            types = {p.name: p.target_type for p in plans}
            assert types["blk.0.attn_norm.weight"] == T.F32
            odd = src.tensors["blk.0.odd.weight"]
            assert types["blk.0.odd.weight"] == (target if 96 % TYPE_TRAITS[target].block_size == 0 else odd.type)
            assert types["blk.3.ffn_down.weight"] == target


def test_q8_0_mix_round_trip(tmp_path, quantizer):
    """llama-quantize's Q8_0: every weight Q8_0, output.weight too; F16 source."""
    _, quantize = quantizer
    src_path = write_model(tmp_path / "in.gguf", dtype=np.float16)
    plans = requantize(src_path, tmp_path / "out.gguf", "Q8_0")
    with fastgguf.open(src_path) as src, fastgguf.open(tmp_path / "out.gguf") as out:
        check_metadata(src, out, 7)
        for plan in plans:
            if plan.converted:
                np.testing.assert_array_equal(out.tensors[plan.name].dequantize(),
                                              reference(src.tensors[plan.name], T.Q8_0, quantize))
        assert {t.type for t in out.tensors.values()} == {T.Q8_0, T.F32}


def test_requantize_from_a_quantized_model(tmp_path, quantizer):
    """A quantized source is dequantized first; a tensor already in the target type is copied byte for byte."""
    _, quantize = quantizer
    src_path = write_model(tmp_path / "in.gguf")
    requantize(src_path, tmp_path / "q8.gguf", "Q8_0")
    plans = requantize(tmp_path / "q8.gguf", tmp_path / "q4.gguf", "Q4_0", keep=["output.weight"])
    with fastgguf.open(tmp_path / "q8.gguf") as q8, fastgguf.open(tmp_path / "q4.gguf") as q4:
        for plan in plans:
            if plan.converted:
                np.testing.assert_array_equal(q4.tensors[plan.name].dequantize(),
                                              reference(q8.tensors[plan.name], T.Q4_0, quantize))
            else:
                assert bytes(q4.tensors[plan.name].raw) == bytes(q8.tensors[plan.name].raw)
        assert q4.tensors["output.weight"].type == T.Q8_0 and q4.tensors["blk.0.ffn_up.weight"].type == T.Q4_0


@needs(T.Q4_K, T.Q6_K, T.Q5_0)
def test_q4_k_m_round_trip(tmp_path):
    src_path = write_model(tmp_path / "in.gguf", dtype=np.float16)
    plans = requantize(src_path, tmp_path / "out.gguf", "Q4_K_M")
    with fastgguf.open(src_path) as src, fastgguf.open(tmp_path / "out.gguf") as out:
        check_metadata(src, out, 15)
        for plan in plans:
            o = out.tensors[plan.name]
            assert o.type == plan.target_type
            if plan.converted:
                np.testing.assert_array_equal(o.dequantize(), reference(src.tensors[plan.name], plan.target_type,
                                                                        fastgguf.quantize))
        got = {name: t.type for name, t in out.tensors.items()}
    # 4 layers: use_more_bits(i, 4) holds for i = 2, 3 (attn_v and ffn_down get Q6_K there)
    assert [got[f"blk.{i}.ffn_down.weight"] for i in range(4)] == [T.Q4_K, T.Q4_K, T.Q6_K, T.Q6_K]
    assert [got[f"blk.{i}.attn_v.weight"] for i in range(4)] == [T.Q4_K, T.Q4_K, T.Q6_K, T.Q6_K]
    assert got["output.weight"] == T.Q6_K and got["token_embd.weight"] == T.Q4_K
    assert got["blk.0.odd.weight"] == T.Q5_0  # row length 96: llama.cpp's fallback for Q4_K


# -- the pipeline, with a stand-in quantizer where the test is about files, not numbers ----------------------------


def fake_f16(x, type, *, imatrix=None, threads=None):  # noqa: A002
    assert type == T.F16
    return np.asarray(x, np.float32).astype("<f2").view(np.uint8).reshape(x.shape[0], -1)


@pytest.fixture
def stand_in(monkeypatch):
    """requantize with an F16 "quantizer" in numpy (calls are counted)."""
    calls = []

    def quantize(x, type, **kwargs):  # noqa: A002
        calls.append(type)
        return fake_f16(x, type, **kwargs)

    monkeypatch.setattr(rq, "quantizable_types", lambda: (T.F16,))
    monkeypatch.setattr(rq, "_quantize_function", lambda: quantize)
    return calls


def leftovers(folder):
    return sorted(name for name in os.listdir(folder) if name.endswith(".part"))


def test_stand_in_pipeline(tmp_path, stand_in):
    src_path = write_model(tmp_path / "in.gguf")
    plans = requantize(src_path, tmp_path / "out.gguf", "F16")
    with fastgguf.open(src_path) as src, fastgguf.open(tmp_path / "out.gguf") as out:
        check_metadata(src, out, 1)
        for plan in plans:
            want = src.tensors[plan.name].dequantize()
            if plan.converted:
                want = want.astype(np.float16).astype(np.float32)
            np.testing.assert_array_equal(out.tensors[plan.name].dequantize(), want)
    assert leftovers(tmp_path) == []


@pytest.mark.parametrize("error", [RuntimeError("disk on fire"), KeyboardInterrupt()], ids=["error", "ctrl-c"])
def test_no_partial_file(tmp_path, stand_in, monkeypatch, error):
    src_path = write_model(tmp_path / "in.gguf")
    out_path = tmp_path / "out.gguf"
    out_path.write_bytes(b"the previous file")
    real = rq._write_converted
    done = []

    def failing(*args, **kwargs):
        if len(done) == 5:
            assert leftovers(tmp_path)  # the partial file exists while writing
            raise error
        done.append(1)
        return real(*args, **kwargs)

    monkeypatch.setattr(rq, "_write_converted", failing)
    with pytest.raises(type(error)):
        requantize(src_path, out_path, "F16")
    assert leftovers(tmp_path) == []
    assert out_path.read_bytes() == b"the previous file"


def test_non_finite_values_name_the_tensor(tmp_path):
    if T.F16 not in quantizable_types():
        pytest.skip("no F16 quantizer in this build yet")
    w = GGUFWriter(tmp_path / "in.gguf")
    w.add("general.architecture", "llama")
    bad = np.zeros((4, COLS), np.float32)
    bad[2, 7] = np.nan
    w.add_tensor("blk.0.attn_q.weight", bad)
    w.write()
    with pytest.raises(ValueError, match="blk.0.attn_q.weight"):
        requantize(tmp_path / "in.gguf", tmp_path / "out.gguf", "F16")
    assert not (tmp_path / "out.gguf").exists() and leftovers(tmp_path) == []


@pytest.mark.parametrize("how", ["same path", "symlink", "hard link", "relative"])
def test_refuses_to_overwrite_the_input(tmp_path, stand_in, how, monkeypatch):
    src_path = write_model(tmp_path / "in.gguf")
    before = Path(src_path).read_bytes()
    out = {"same path": src_path, "symlink": tmp_path / "link.gguf", "hard link": tmp_path / "hard.gguf",
           "relative": "in.gguf"}[how]
    if how == "symlink":
        os.symlink(src_path, out)
    elif how == "hard link":
        os.link(src_path, out)
    monkeypatch.chdir(tmp_path)
    with pytest.raises(ValueError, match="is the input"):
        requantize(src_path, out, "F16")
    assert Path(src_path).read_bytes() == before
    assert leftovers(tmp_path) == []


def test_missing_quantizer_fails_before_writing(tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(rq, "quantizable_types", lambda: ())
    src_path = write_model(tmp_path / "in.gguf")
    with pytest.raises(NotImplementedError, match="no quantizer for Q4_K, Q5_0, Q6_K"):
        requantize(src_path, tmp_path / "out.gguf", "Q4_K_M")
    assert fastgguf.cli.main(["quantize", src_path, str(tmp_path / "out.gguf"), "--type", "Q4_K_M"]) == 1
    assert "no quantizer for" in capsys.readouterr().err
    assert os.listdir(tmp_path) == ["in.gguf"]


def test_imatrix_reaches_the_quantizer_per_expert(tmp_path, monkeypatch):
    """An expert tensor is quantized expert by expert, each with its slice of the importance matrix."""
    seen = []

    def quantize(x, type, *, imatrix=None, threads=None):  # noqa: A002
        seen.append((x.shape[0], None if imatrix is None else float(imatrix[0])))
        return fake_f16(x, T.F16)

    monkeypatch.setattr(rq, "quantizable_types", lambda: (T.F16,))
    monkeypatch.setattr(rq, "_quantize_function", lambda: quantize)
    monkeypatch.setattr(rq, "_CHUNK_ELEMENTS", 3 * COLS)  # blocks of 3 rows
    w = GGUFWriter(tmp_path / "in.gguf")
    w.add("general.architecture", "llama")
    w.add_tensor("blk.0.ffn_up_exps.weight", np.ones((3, 4, COLS), np.float32))
    w.write()
    imatrix = {"blk.0.ffn_up_exps.weight": np.repeat(np.array([1.0, 2.0, 3.0], np.float32), COLS)}
    requantize(tmp_path / "in.gguf", tmp_path / "out.gguf", "F16", imatrix=imatrix)
    assert seen == [(3, 1.0), (1, 1.0), (3, 2.0), (1, 2.0), (3, 3.0), (1, 3.0)]
    seen.clear()
    requantize(tmp_path / "in.gguf", tmp_path / "out2.gguf", "F16")
    assert seen == [(3, None)] * 4  # without one, blocks of rows cross experts


def test_imatrix_file(tmp_path, stand_in):
    src_path = write_model(tmp_path / "in.gguf", n_layer=1, odd=False)
    w = GGUFWriter(tmp_path / "imatrix.gguf")
    w.add_tensor("blk.0.attn_q.weight.in_sum2", np.ones((1, COLS), np.float32))
    w.add_tensor("blk.0.attn_q.weight.counts", np.ones((1, 1), np.float32))
    w.write()
    requantize(src_path, tmp_path / "out.gguf", "F16", imatrix=tmp_path / "imatrix.gguf")
    w = GGUFWriter(tmp_path / "wrong.gguf")
    w.add_tensor("blk.0.attn_q.weight.in_sum2", np.ones((1, 32), np.float32))
    w.add_tensor("blk.0.attn_q.weight.counts", np.ones((1, 1), np.float32))
    w.write()
    status = fastgguf.cli.main(["quantize", src_path, str(tmp_path / "out2.gguf"), "--type", "F16",
                                "--imatrix", str(tmp_path / "wrong.gguf")])
    assert status == 1 and not (tmp_path / "out2.gguf").exists()


def test_cli(tmp_path, stand_in, capsys):
    src_path = write_model(tmp_path / "in.gguf")
    out = str(tmp_path / "out.gguf")
    assert fastgguf.cli.main(["quantize", src_path, out, "--type", "f16", "--keep", "output.weight",
                              "--no-progress", "--threads", "1"]) == 0
    err = capsys.readouterr().err
    assert "output.weight: kept F32 (--keep)" in err
    assert "blk.0.attn_norm.weight" not in err and f"{2 * N_LAYER + 1} tensors of fewer than 2 dimensions" in err
    assert "blk.0.odd.weight: F32 -> F16" not in err
    assert f"wrote {out}" in err
    with fastgguf.open(out) as f:
        assert f.tensors["output.weight"].type == T.F32 and f.tensors["blk.0.attn_q.weight"].type == T.F16
    assert fastgguf.cli.main(["quantize", src_path, out, "--type", "F16", "--no-progress", "-v"]) == 0
    assert "blk.0.attn_norm.weight: kept F32 (1-D)" in capsys.readouterr().err
    # usage errors: 2; bad input: 1 with one line
    with pytest.raises(SystemExit) as exit_info:
        fastgguf.cli.main(["quantize", src_path, out])
    assert exit_info.value.code == 2
    capsys.readouterr()
    for args, message in [(["--type", "Q9_K"], "unknown type 'Q9_K'"), (["--type", "F16", "--filter", "nope*"],
                                                                          "matches no tensor")]:
        assert fastgguf.cli.main(["quantize", src_path, str(tmp_path / "x.gguf"), *args]) == 1
        err = capsys.readouterr().err
        assert err.startswith("fastgguf: error: ") and message in err and err.count("\n") == 1
    assert fastgguf.cli.main(["quantize", src_path, src_path, "--type", "F16"]) == 1
    assert "is the input" in capsys.readouterr().err
    (tmp_path / "junk.gguf").write_bytes(b"GGUF\x03\0\0\0")
    assert fastgguf.cli.main(["quantize", str(tmp_path / "junk.gguf"), str(tmp_path / "y.gguf"), "--type", "F16"]) == 1
    assert not (tmp_path / "x.gguf").exists() and not (tmp_path / "y.gguf").exists()


def test_big_endian_input_keeps_its_byte_order(tmp_path, stand_in):
    w = GGUFWriter(tmp_path / "be.gguf", byteorder=">")
    w.add("general.architecture", "llama")
    data = np.arange(2 * COLS, dtype=np.float32).reshape(2, COLS) / 7
    w.add_tensor("blk.0.attn_q.weight", data)
    w.add_tensor("blk.0.attn_norm.weight", np.ones(COLS, np.float32))
    w.write()
    requantize(tmp_path / "be.gguf", tmp_path / "out.gguf", "F16")
    with fastgguf.open(tmp_path / "out.gguf") as f:
        assert f.byteorder == ">"
        np.testing.assert_array_equal(f.tensors["blk.0.attn_q.weight"].dequantize(),
                                      data.astype(np.float16).astype(np.float32))
        np.testing.assert_array_equal(f.tensors["blk.0.attn_norm.weight"].dequantize(), np.ones(COLS))


def test_plan_reads_no_data(tmp_path):
    src_path = write_model(tmp_path / "in.gguf")
    with fastgguf.open(src_path) as model:
        plans, file_type = plan_requantize(model, "Q8_0")
    assert file_type == 7 and len(plans) == 3 + 9 * N_LAYER + 1
