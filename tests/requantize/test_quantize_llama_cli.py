"""`fastgguf quantize` as llama-quantize: its command line, options and recorded keys (behaviour checks;
byte equality with llama-quantize itself is tests/requantize/test_llama_quantize_hashes.py)."""

from __future__ import annotations

import numpy as np
import pytest

import fastgguf
import fastgguf.cli
from fastgguf import GGMLType as T, GGUFValueType as V
from fastgguf.cli.quantize import parse_llama_ftype
from fastgguf.requantize import parse_override_kv, parse_tensor_types, plan_requantize

import llama_models


@pytest.fixture(scope="module")
def folder(tmp_path_factory):
    path = tmp_path_factory.mktemp("llama_cli")
    llama_models.write_all(path)
    return path


def run(folder, monkeypatch, *argv):
    monkeypatch.chdir(folder)
    return fastgguf.cli.main(["quantize", *argv, "--no-progress"])


def plan_types(folder, mix="Q4_K_M", **kwargs):
    with fastgguf.open(str(folder / "gqa.gguf")) as model:
        plans, _ = plan_requantize(model, mix, **kwargs)
    return {p.name: p.target_type for p in plans}, plans


@pytest.mark.parametrize("text, expected", [
    ("Q4_K_M", ("Q4_K_M", "Q4_K_M")), ("q4_k", ("Q4_K", "Q4_K_M")), ("Q3_K", ("Q3_K", "Q3_K_M")),
    ("15", ("Q4_K", "Q4_K_M")), (" 7", ("Q8_0", "Q8_0")), ("0", ("F32", "F32")), ("iq2_m", ("IQ2_M", "IQ2_M")),
    ("copy", ("COPY", "COPY")), ("Q4_K_X", None), ("NVFP4", None), ("99", None), ("out.gguf", None)])
def test_llama_ftype_names(text, expected):
    assert parse_llama_ftype(text) == expected


def test_positional_forms(folder, monkeypatch):
    assert run(folder, monkeypatch, "gqa.gguf", "q8_0") == 0  # IN TYPE: ggml-model-TYPE.gguf beside IN
    with fastgguf.open(str(folder / "ggml-model-Q8_0.gguf")) as out:
        assert out.metadata["general.file_type"] == 7
    assert run(folder, monkeypatch, "gqa.gguf", "o.gguf", "Q4_K", "1") == 0  # IN OUT TYPE NTHREADS; Q4_K = Q4_K_M
    with fastgguf.open(str(folder / "o.gguf")) as out:
        assert out.metadata["general.file_type"] == 15
        assert out.tensors["blk.0.ffn_down.weight"].type == T.Q6_K  # the mix's rules, not plain Q4_K
    assert run(folder, monkeypatch, "gqa.gguf", "o2.gguf", "--type", "Q4_K") == 0  # fastgguf's form: plain Q4_K
    with fastgguf.open(str(folder / "o2.gguf")) as out:
        assert out.tensors["blk.0.ffn_down.weight"].type == T.Q4_K
    for bad in (["o3.gguf", "bogus"], ["o3.gguf", "Q8_0", "x"], ["o3.gguf"], ["Q8_0", "2", "3"]):
        with pytest.raises(SystemExit) as exit_info:  # usage errors
            run(folder, monkeypatch, "gqa.gguf", *bad)
        assert exit_info.value.code == 2
    assert not (folder / "o3.gguf").exists()


def test_dry_run_writes_nothing_and_prints_types_and_sizes(folder, monkeypatch, capsys):
    before = sorted(p.name for p in folder.iterdir())
    assert run(folder, monkeypatch, "--dry-run", "--tensor-type", "attn_q=q8_0", "gqa.gguf", "Q4_K_M") == 0
    assert sorted(p.name for p in folder.iterdir()) == before
    out = capsys.readouterr().out
    assert "blk.0.attn_q.weight" in out and "F16 -> Q8_0" in out and "(--tensor-type)" in out
    assert "blk.0.ffn_down.weight" in out and "F16 -> Q6_K" in out
    # the quant size is the size of the tensor data llama-quantize would write
    run(folder, monkeypatch, "--tensor-type", "attn_q=q8_0", "gqa.gguf", "dry.gguf", "Q4_K_M")
    with fastgguf.open(str(folder / "dry.gguf")) as written:
        data = sum(t.nbytes for t in written.tensors.values())
    line = next(line for line in out.splitlines() if line.startswith("quant size"))
    assert float(line.split("=")[1].split("MiB")[0]) == pytest.approx(data / 1024 / 1024, abs=0.005)


def test_imatrix_keys(folder, monkeypatch):
    assert run(folder, monkeypatch, "--imatrix", "gqa-imatrix.gguf", "--exclude-weights", "ffn_down", "gqa.gguf",
               "k.gguf", "Q4_K_M") == 0
    with fastgguf.open(str(folder / "k.gguf")) as out:
        meta = out.metadata
        keys = list(meta)
        assert keys[-6:] == ["general.quantization_version", "general.file_type", "quantize.imatrix.file",
                             "quantize.imatrix.dataset", "quantize.imatrix.entries_count",
                             "quantize.imatrix.chunks_count"]
        assert meta["quantize.imatrix.file"] == "gqa-imatrix.gguf"  # the path as given
        assert meta["quantize.imatrix.dataset"] == "synthetic-gqa.txt"
        assert meta.value_type("quantize.imatrix.entries_count") == V.UINT32
        assert meta["quantize.imatrix.entries_count"] == 59 - 8  # the entries left after --exclude-weights
        assert meta["quantize.imatrix.chunks_count"] == 17
    assert run(folder, monkeypatch, "--imatrix", "gqa-imatrix.dat", "gqa.gguf", "k2.gguf", "Q4_K_M") == 0
    with fastgguf.open(str(folder / "k2.gguf")) as out:
        assert out.metadata["quantize.imatrix.dataset"] == "legacy-gqa.txt"
        assert out.metadata["quantize.imatrix.chunks_count"] == 9
        assert out.metadata["quantize.imatrix.entries_count"] == 59
    # every entry left out: no importance matrix at all, no keys
    assert run(folder, monkeypatch, "--imatrix", "gqa-imatrix.gguf", "--include-weights", "nothing-like-this",
               "gqa.gguf", "k3.gguf", "Q4_K_M") == 0
    with fastgguf.open(str(folder / "k3.gguf")) as out:
        assert not any(k.startswith("quantize.") for k in out.metadata)
    assert run(folder, monkeypatch, "--imatrix", "gqa-imatrix.gguf", "--include-weights", "a", "--exclude-weights",
               "b", "gqa.gguf", "k4.gguf", "Q4_K_M") != 0


def test_override_kv_parsing():
    assert parse_override_kv("a.b=int:-1024") == ("a.b", V.UINT32, 1024)
    assert parse_override_kv("a.b=int:12abc") == ("a.b", V.UINT32, 12)
    assert parse_override_kv("a.b=float:2.5e1x") == ("a.b", V.FLOAT32, 25.0)
    assert parse_override_kv("a.b=bool:true") == ("a.b", V.BOOL, True)
    assert parse_override_kv("a.b=str:h\u00e9") == ("a.b", V.STRING, "h\u00e9".encode())
    for bad in ("a.b", "a.b=bool:yes", "a.b=list:1", "a.b=str:" + "x" * 128, "k" * 128 + "=int:1"):
        with pytest.raises(ValueError):
            parse_override_kv(bad)


def test_override_kv_written_at_the_end(folder, monkeypatch):
    assert run(folder, monkeypatch, "--override-kv", "general.name=str:new", "--override-kv", "x.n=int:-3",
               "gqa.gguf", "ov.gguf", "Q8_0") == 0
    with fastgguf.open(str(folder / "ov.gguf")) as out:
        assert list(out.metadata)[-2:] == ["general.name", "x.n"]
        assert out.metadata["general.name"] == "new" and out.metadata["x.n"] == 3
        assert out.metadata.value_type("x.n") == V.UINT32


def test_tensor_type_patterns(folder):
    assert parse_tensor_types(["ATTN_Q=Q8_0"]) == [("attn_q", T.Q8_0)]
    for bad in ("attn_q", "=q8_0", "attn_q=", "attn_q=q9_9", "(=q8_0"):
        with pytest.raises(ValueError):
            parse_tensor_types([bad])
    # regex search, the first matching pattern decides, counters of overridden tensors do not advance
    types, _ = plan_types(folder, tensor_types=[r"blk\.[0-1]\.attn_v=q8_0", "attn_v=q4_0", "attn=q5_0"])
    assert types["blk.0.attn_v.weight"] == types["blk.1.attn_v.weight"] == T.Q8_0
    assert types["blk.2.attn_v.weight"] == T.Q4_0 and types["blk.0.attn_q.weight"] == T.Q5_0
    assert types["output.weight"] == T.Q6_K  # not matched: the mix's rule
    types, plans = plan_types(folder, tensor_types=["ffn_odd=q4_k"])  # row length 96: the fallback still applies
    assert types["blk.0.ffn_odd.weight"] == T.Q5_0


def test_tensor_type_file_keeps_command_line_order(folder, monkeypatch, capsys):
    (folder / "tt.txt").write_text("attn_q=q5_0\n")
    assert run(folder, monkeypatch, "--dry-run", "--tensor-type", "attn_q=q8_0", "--tensor-type-file", "tt.txt",
               "gqa.gguf", "Q4_K_M") == 0
    assert "F16 -> Q8_0" in capsys.readouterr().out
    assert run(folder, monkeypatch, "--dry-run", "--tensor-type-file", "tt.txt", "--tensor-type", "attn_q=q8_0",
               "gqa.gguf", "Q4_K_M") == 0
    out = capsys.readouterr().out
    assert "F16 -> Q5_0" in out and "F16 -> Q8_0" not in out
    assert run(folder, monkeypatch, "--tensor-type-file", "missing.txt", "gqa.gguf", "x.gguf", "Q4_K_M") != 0


def test_output_and_token_embedding_types(folder):
    types, _ = plan_types(folder, output_tensor_type="q8_0", token_embedding_type="IQ4_NL")
    assert types["output.weight"] == T.Q8_0 and types["token_embd.weight"] == T.IQ4_NL
    types, plans = plan_types(folder, leave_output_tensor=True)
    assert types["output.weight"] == T.F16
    assert next(p for p in plans if p.name == "output.weight").note == "--leave-output-tensor"
    with pytest.raises(ValueError, match="invalid ggml_type"):
        plan_types(folder, output_tensor_type="Q9_K")


def test_prune_layers(folder, monkeypatch):
    assert run(folder, monkeypatch, "--prune-layers", "1,5,1", "gqa.gguf", "pr.gguf", "Q8_0") == 0
    with fastgguf.open(str(folder / "pr.gguf")) as out, fastgguf.open(str(folder / "gqa.gguf")) as src:
        assert out.metadata["llama.block_count"] == 6 and list(out.metadata)[-1] == "llama.block_count"
        layers = sorted({int(n.split(".")[1]) for n in out.tensors if n.startswith("blk.")})
        assert layers == list(range(6))
        # old layer 2 is the new layer 1, old 6 the new 4: the same values
        for new, old in ((0, 0), (1, 2), (4, 6)):
            assert out.tensors[f"blk.{new}.attn_norm.weight"].raw.tobytes() == \
                src.tensors[f"blk.{old}.attn_norm.weight"].raw.tobytes()
    with pytest.raises(SystemExit):  # a usage error, as llama-quantize's
        run(folder, monkeypatch, "--prune-layers", "1,x", "gqa.gguf", "pr2.gguf", "Q8_0")


def test_keep_split(folder, monkeypatch, tmp_path):
    assert run(folder, monkeypatch, "--keep-split", "gqa.gguf", "ks.gguf", "Q8_0") == 0
    assert (folder / "ks-00001-of-00001.gguf").exists() and not (folder / "ks.gguf").exists()
    with fastgguf.open(str(folder / "ks-00001-of-00001.gguf")) as out, fastgguf.open(str(folder / "gqa.gguf")) as src:
        assert list(out.tensors) == list(src.tensors)  # the input's order, as llama-quantize keeps it
        assert not any(k.startswith("split.") for k in out.metadata)
    # a split input: one output shard per input shard, split keys at the end of each
    from fastgguf import GGUFWriter
    from fastgguf.reader import GGUFFile
    for i in range(2):
        w = GGUFWriter(tmp_path / f"m-0000{i + 1}-of-00002.gguf")
        if i == 0:
            w.add("general.architecture", "llama")
            w.add("llama.block_count", 2, V.UINT32)
        w.add("split.no", i, V.UINT16)
        w.add("split.count", 2, V.UINT16)
        w.add("split.tensors.count", 4, V.INT32)
        for j in range(2):
            w.add_tensor(f"blk.{1 - i}.t{j}.weight", np.full((2, 32), i + j, np.float32))
        w.write()
    assert run(tmp_path, monkeypatch, "--keep-split", "m-00001-of-00002.gguf", "o.gguf", "Q8_0") == 0
    for i in range(2):
        with GGUFFile(str(tmp_path / f"o-0000{i + 1}-of-00002.gguf")) as shard:  # the shard alone
            assert list(shard.metadata)[-3:] == ["split.no", "split.count", "split.tensors.count"]
            assert shard.metadata["split.no"] == i and shard.metadata["split.tensors.count"] == 4
            assert list(shard.tensors) == [f"blk.{1 - i}.t0.weight", f"blk.{1 - i}.t1.weight"]
            assert all(t.type == T.Q8_0 for t in shard.tensors.values())
            assert ("general.file_type" in shard.metadata) == (i == 0)
    with fastgguf.open(str(tmp_path / "o-00001-of-00002.gguf")) as model:  # fastgguf reads it as one model
        assert len(model.tensors) == 4


def test_outer_dimensions_of_one_count_as_gguf_counts_them(tmp_path):
    # ggml_n_dims: a (1, 256) weight is 1-D to llama-quantize (kept) and written with one dimension
    from fastgguf import GGUFWriter
    from fastgguf.requantize import requantize
    w = GGUFWriter(tmp_path / "m.gguf")
    w.add("general.architecture", "llama")
    w.add("llama.block_count", 1, V.UINT32)
    w.add_tensor("blk.0.row.weight", np.ones((1, 256), np.float32))
    w.add_tensor("blk.0.experts.weight", np.ones((1, 2, 256), np.float32))
    w.write()
    plans = requantize(tmp_path / "m.gguf", tmp_path / "o.gguf", "Q8_0")
    assert {p.name: p.note for p in plans}["blk.0.row.weight"] == "1-D"
    with fastgguf.open(str(tmp_path / "o.gguf")) as out:
        assert out.tensors["blk.0.row.weight"].shape == (256,) and out.tensors["blk.0.row.weight"].type == T.F32
        assert out.tensors["blk.0.experts.weight"].shape == (2, 256)
        assert out.tensors["blk.0.experts.weight"].type == T.Q8_0


def test_copy(folder, monkeypatch, tmp_path):
    assert run(folder, monkeypatch, "gqa.gguf", "cp.gguf", "COPY") == 0
    with fastgguf.open(str(folder / "cp.gguf")) as out, fastgguf.open(str(folder / "gqa.gguf")) as src:
        assert out.metadata["general.file_type"] == 1  # the input's
        for name, info in src.tensors.items():
            assert out.tensors[name].type == info.type and out.tensors[name].raw.tobytes() == info.raw.tobytes()
    # without general.file_type: llama.cpp's guess from the most common type, marked guessed (| 1024)
    from fastgguf import GGUFWriter
    from fastgguf.requantize import requantize
    w = GGUFWriter(tmp_path / "m.gguf")
    w.add("general.architecture", "llama")
    for i in range(3):
        w.add_tensor(f"blk.{i}.a.weight", np.ones((2, 32), np.float16))
    w.add_tensor("blk.0.b.weight", np.ones((2, 32), np.float32))
    w.write()
    requantize(tmp_path / "m.gguf", tmp_path / "o.gguf", "COPY")
    with fastgguf.open(str(tmp_path / "o.gguf")) as out:
        assert out.metadata["general.file_type"] == 1 | 1024
