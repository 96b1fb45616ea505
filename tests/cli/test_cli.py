"""The fastgguf command: every subcommand on files written by the tests and by gguf-py."""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys

import numpy as np
import pytest

import fastgguf
from fastgguf import GGMLType, GGUFValueType, GGUFWriter
from fastgguf.cli import ARRAY_PREVIEW, main, npy_filename

from conftest import REPO

gguf = pytest.importorskip("gguf")
ml_dtypes = pytest.importorskip("ml_dtypes")

SUBCOMMANDS = ["info", "dump", "tensors", "bench", "convert"]
TOKENS = [f"tok{i}" for i in range(300)] + ["<s>", "é", "\n"]
# Child processes import the same fastgguf as this one (the source tree in development, site-packages in CI).
SRC = os.path.dirname(os.path.dirname(os.path.abspath(fastgguf.__file__)))


def quantized(values: np.ndarray, qtype: GGMLType) -> bytes:
    return gguf.quants.quantize(values, gguf.GGMLQuantizationType(int(qtype))).tobytes()


@pytest.fixture(scope="module")
def model_path(tmp_path_factory):
    """A small llama-like model with every kind of metadata value and a few tensor types."""
    rng = np.random.default_rng(1)
    path = tmp_path_factory.mktemp("cli") / "Tiny-1K-Test-v1.0-Q8_0.gguf"
    with GGUFWriter(path) as w:
        w.add("general.architecture", "llama")
        w.add("general.name", "Tiny test model")
        w.add("general.file_type", 7, GGUFValueType.UINT32)
        w.add("llama.context_length", 4096, GGUFValueType.UINT32)
        w.add("llama.embedding_length", 64, GGUFValueType.UINT32)
        w.add("llama.block_count", 2, GGUFValueType.UINT32)
        w.add("llama.attention.head_count", np.array([4, 8], np.int32))
        w.add("llama.rope.freq_base", 10000.0)
        w.add("llama.attention.layer_norm_rms_epsilon", 1e-5)
        w.add("test.nan", float("nan"))
        w.add("test.big", 2**63 + 5, GGUFValueType.UINT64)
        w.add("test.negative", -3, GGUFValueType.INT8)
        w.add("test.flag", True)
        w.add("test.f64", 0.1, GGUFValueType.FLOAT64)
        w.add("test.nested", [[1, 2, 3], ["a", "b"], []])
        w.add("test.multiline", "line one\nline two")
        w.add("tokenizer.ggml.model", "llama")
        w.add("tokenizer.ggml.tokens", TOKENS)
        w.add("tokenizer.ggml.scores", np.linspace(0, 1, len(TOKENS), dtype=np.float32))
        w.add_tensor("token_embd.weight", rng.standard_normal((len(TOKENS), 64)).astype(np.float16))
        for layer in range(2):
            weight = rng.standard_normal((64, 64)).astype(np.float32)
            w.add_tensor(f"blk.{layer}.attn_q.weight", quantized(weight, GGMLType.Q8_0), GGMLType.Q8_0, (64, 64))
            w.add_tensor(f"blk.{layer}.ffn_up.weight", quantized(weight, GGMLType.Q4_0), GGMLType.Q4_0, (64, 64))
            w.add_tensor(f"blk.{layer}.attn_norm.weight", rng.standard_normal(64).astype(np.float32))
        w.add_tensor("output.weight", quantized(rng.standard_normal((8, 64)).astype(np.float32), GGMLType.BF16),
                     GGMLType.BF16, (8, 64))
    return str(path)


@pytest.fixture(scope="module")
def split_paths(tmp_path_factory, gguf_py_write):
    """gguf-py's writer, split_max_tensors=2: 5 tensors over 3 shards."""
    directory = tmp_path_factory.mktemp("cli-split")
    writer = gguf.GGUFWriter(directory / "split.gguf", arch="llama", split_max_tensors=2)
    writer.add_name("Split")
    writer.add_context_length(256)
    writer.add_token_list(TOKENS)
    rng = np.random.default_rng(2)
    for i in range(4):
        writer.add_tensor(f"blk.{i}.weight", rng.standard_normal((i + 2, 32)).astype(np.float32))
    writer.add_tensor("output.weight", rng.standard_normal((3, 32)).astype(np.float16))
    gguf_py_write(writer)
    return [str(directory / f"split-0000{i}-of-00003.gguf") for i in (1, 2, 3)]


def run(capsys, *argv):
    """Run the command in-process; returns (exit status, stdout, stderr)."""
    status = main(list(argv))
    captured = capsys.readouterr()
    return status, captured.out, captured.err


# --help --------------------------------------------------------------------------------------------

@pytest.mark.parametrize("command", SUBCOMMANDS)
def test_every_subcommand_has_help(capsys, command):
    with pytest.raises(SystemExit) as exit_info:
        main([command, "--help"])
    assert exit_info.value.code == 0
    out = capsys.readouterr().out
    assert out.startswith(f"usage: fastgguf {command}")
    assert "FILE" in out


def test_top_level_help_lists_subcommands(capsys):
    with pytest.raises(SystemExit):
        main(["--help"])
    out = capsys.readouterr().out
    for command in SUBCOMMANDS:
        assert command in out


@pytest.mark.parametrize("argv", [[], ["frobnicate", "x"], ["info"], ["bench", "--threads", "0"],
                                  ["convert", "a.gguf", "b.npz", "--dtype", "int8"]])
def test_usage_errors_exit_2(capsys, argv):
    with pytest.raises(SystemExit) as exit_info:
        main(argv)
    assert exit_info.value.code == 2
    assert "usage: fastgguf" in capsys.readouterr().err


# info ----------------------------------------------------------------------------------------------

def info_fields(out: str) -> dict[str, str]:
    fields = {}
    for line in out.splitlines():
        label, _, value = line.partition("  ")
        fields[label.strip()] = value.strip()
    return fields


def test_info(capsys, model_path):
    status, out, err = run(capsys, "info", model_path)
    assert status == 0 and err == ""
    fields = info_fields(out)
    with fastgguf.open(model_path) as model:
        n_params = sum(t.n_elements for t in model.tensors.values())
        n_bytes = sum(t.nbytes for t in model.tensors.values())
        assert fields["file"] == model_path
        assert fields["file size"].endswith(f"({os.path.getsize(model_path):,} bytes)")
        assert fields["GGUF"] == "version 3, little-endian, alignment 32"
        assert fields["parameters"].endswith(f"({n_params:,})")
        assert fields["bits/weight"] == f"{8 * n_bytes / n_params:.2f}"
    assert fields["architecture"] == "llama"
    assert fields["name"] == "Tiny test model"
    assert fields["file type"] == "7 (Q8_0)"
    assert fields["tensors"] == "8: 2 Q8_0, 2 Q4_0, 2 F32, 1 F16, 1 BF16"
    assert fields["context_length"] == "4096"
    assert fields["attention.head_count"] == "4..8 (per layer, 2 values)"
    assert fields["attention.layer_norm_rms_epsilon"] == "1e-05"
    assert fields["rope.freq_base"] == "10000.0"
    assert fields["vocabulary"] == f"{len(TOKENS)} tokens (llama)"


def test_info_on_split_model(capsys, split_paths):
    status, out, _ = run(capsys, "info", split_paths[1])
    assert status == 0
    fields = info_fields(out)
    assert fields["file"] == split_paths[0]
    assert fields["shards"] == "3"
    assert fields["name"] == "Split"
    assert fields["tensors"] == "5: 4 F32, 1 F16"
    assert fields["file size"].endswith(f"({sum(os.path.getsize(p) for p in split_paths):,} bytes)")
    assert fields["context_length"] == "256"


# dump ----------------------------------------------------------------------------------------------

def expected_json_value(value):
    if isinstance(value, float) and value != value:
        return "nan"
    return value


def assert_json_agrees(entry, metadata, key, full):
    value_type = metadata.value_type(key)
    assert entry["type"] == value_type.name
    value = metadata[key]
    if value_type != GGUFValueType.ARRAY:
        assert entry["value"] == expected_json_value(value)
        return
    assert entry["element_type"] == metadata.element_type(key).name
    assert entry["count"] == len(value)
    shown = len(value) if full else min(len(value), ARRAY_PREVIEW)
    assert len(entry["value"]) == shown
    assert entry.get("truncated", False) == (shown < len(value))
    if metadata.element_type(key) == GGUFValueType.ARRAY:
        for i, sub in enumerate(entry["value"]):
            assert sub["element_type"] == value.element_type(i).name
            expected = value[i]
            expected = expected.tolist() if hasattr(expected, "tolist") else list(expected)
            assert sub["value"] == expected
    else:
        expected = value.tolist() if hasattr(value, "tolist") else list(value)
        assert entry["value"] == expected[:shown]


@pytest.mark.parametrize("full", [False, True], ids=["truncated", "full-arrays"])
def test_dump_json_agrees_with_the_file(capsys, model_path, full):
    argv = ["dump", "--json", model_path] + (["--full-arrays"] if full else [])
    status, out, _ = run(capsys, *argv)
    assert status == 0
    document = json.loads(out)
    with fastgguf.open(model_path) as model:
        assert {k: document[k] for k in ("version", "alignment", "data_offset", "file_size")} == {
            "version": model.version, "alignment": model.alignment, "data_offset": model.data_offset,
            "file_size": model.file_size}
        assert document["byteorder"] == "little"
        assert list(document["metadata"]) == list(model.metadata)
        for key, entry in document["metadata"].items():
            assert_json_agrees(entry, model.metadata, key, full)
        assert [t["name"] for t in document["tensors"]] == list(model.tensors)
        for entry in document["tensors"]:
            info = model.tensors[entry["name"]]
            assert entry == {"name": info.name, "shape": list(info.shape), "type": info.type.name,
                             "n_elements": info.n_elements, "nbytes": info.nbytes, "offset": info.offset}
    assert document["metadata"]["test.big"]["value"] == 2**63 + 5
    assert document["metadata"]["tokenizer.ggml.tokens"]["value"][-1] == ("\n" if full else "tok7")


def test_dump_json_no_tensors(capsys, model_path):
    status, out, _ = run(capsys, "dump", "--json", "--no-tensors", model_path)
    assert status == 0
    document = json.loads(out)
    assert "tensors" not in document
    assert len(document["metadata"]) == 19


def test_dump_json_split_model(capsys, split_paths):
    status, out, _ = run(capsys, "dump", "--json", split_paths[2])
    document = json.loads(out)
    assert document["shards"] == split_paths
    assert document["metadata"]["split.count"] == {"type": "UINT16", "value": 3}
    assert [(t["name"], t["shard"]) for t in document["tensors"]] == [
        ("blk.0.weight", 0), ("blk.1.weight", 0), ("blk.2.weight", 1), ("blk.3.weight", 1), ("output.weight", 2)]
    with fastgguf.open(split_paths[0]) as model:
        for entry in document["tensors"]:
            assert entry["offset"] == model.tensors[entry["name"]].offset


def test_dump_text(capsys, model_path):
    status, out, _ = run(capsys, "dump", model_path)
    assert status == 0
    lines = out.splitlines()
    assert lines[0].startswith(f"{model_path}: GGUF v3, little-endian, alignment 32, data at ")
    rows = {line.split()[0]: line.split(None, 2) for line in lines if line.startswith(("general.", "llama.",
                                                                                       "test.", "tokenizer."))}
    assert len(rows) == 19
    assert rows["general.name"][1:] == ["STRING", "'Tiny test model'"]
    assert rows["llama.attention.layer_norm_rms_epsilon"][1:] == ["FLOAT32", "1e-05"]
    assert rows["test.multiline"][2] == repr("line one\nline two")  # one line per key
    assert rows["test.nested"][1:] == ["ARRAY[3]", "[[1, 2, 3], ['a', 'b'], []]"]
    preview = ", ".join(repr(t) for t in TOKENS[:ARRAY_PREVIEW])
    assert rows["tokenizer.ggml.tokens"][1:] == [f"STRING[{len(TOKENS)}]", f"[{preview}, ...]"]
    assert "8 tensors:" in lines
    assert any(line.split()[:3] == ["token_embd.weight", f"{len(TOKENS)}x64", "F16"] for line in lines)

    _, full, _ = run(capsys, "dump", "--full-arrays", "--no-tensors", model_path)
    assert repr("\n") in full and "tensors:" not in full


# tensors -------------------------------------------------------------------------------------------

def tensor_rows(out: str) -> list[list[str]]:
    """Rows of the tensors table, sizes (two words) joined."""
    lines = out.splitlines()
    assert lines[0].split() == ["name", "shape", "type", "size", "offset"] + (["shard"] if "shard" in lines[0]
                                                                             else [])
    rows = []
    for line in lines[1:]:
        words = line.split()
        rows.append(words[:3] + [" ".join(words[3:5])] + words[5:])
    return rows


def test_tensors(capsys, model_path):
    status, out, _ = run(capsys, "tensors", model_path)
    assert status == 0
    rows = tensor_rows(out)
    with fastgguf.open(model_path) as model:
        assert [row[0] for row in rows] == list(model.tensors)
        for name, shape, type_name, size, offset in rows:
            info = model.tensors[name]
            assert shape == "x".join(map(str, info.shape))
            assert type_name == info.type.name
            assert int(offset) == info.offset
            assert size == fastgguf.cli.format_bytes(info.nbytes)


@pytest.mark.parametrize("patterns, expected", [
    (["blk.0.*"], ["blk.0.attn_q.weight", "blk.0.ffn_up.weight", "blk.0.attn_norm.weight"]),
    (["*.attn_q.*", "output*"], ["blk.0.attn_q.weight", "blk.1.attn_q.weight", "output.weight"]),
    (["token_embd.weight"], ["token_embd.weight"]),
])
def test_tensors_filter(capsys, model_path, patterns, expected):
    argv = ["tensors", model_path]
    for pattern in patterns:
        argv += ["--filter", pattern]
    status, out, _ = run(capsys, *argv)
    assert status == 0
    assert [row[0] for row in tensor_rows(out)] == expected


def test_tensors_filter_matching_nothing(capsys, model_path):
    status, out, err = run(capsys, "tensors", model_path, "--filter", "nope*")
    assert status == 1 and out == ""
    assert err == "fastgguf: error: no tensor matches 'nope*'\n"


def test_tensors_split_model_shows_shards(capsys, split_paths):
    status, out, _ = run(capsys, "tensors", split_paths[0])
    assert status == 0
    assert [(row[0], row[-1]) for row in tensor_rows(out)] == [
        ("blk.0.weight", "1"), ("blk.1.weight", "1"), ("blk.2.weight", "2"), ("blk.3.weight", "2"),
        ("output.weight", "3")]


# convert -------------------------------------------------------------------------------------------

def load_output(path: str, names) -> dict[str, np.ndarray]:
    if path.endswith(".safetensors"):
        from safetensors.numpy import load_file
        return load_file(path)
    if path.endswith(".npz"):
        with np.load(path) as archive:
            return {name: archive[name] for name in archive.files}
    return {name: np.load(os.path.join(path, npy_filename(name))) for name in names}


@pytest.mark.parametrize("dtype", ["float32", "float16", "bfloat16"])
@pytest.mark.parametrize("suffix", [".safetensors", ".npz", ""], ids=["safetensors", "npz", "npy-folder"])
def test_convert_equals_dequantize(capsys, tmp_path, model_path, suffix, dtype):
    if suffix == ".safetensors":
        pytest.importorskip("safetensors")
    out_path = str(tmp_path / f"out{suffix}")
    status, out, err = run(capsys, "convert", model_path, out_path, "--dtype", dtype)
    assert status == 0, err
    target = np.dtype(ml_dtypes.bfloat16) if dtype == "bfloat16" else np.dtype(dtype)
    with fastgguf.open(model_path) as model:
        loaded = load_output(out_path, model.tensors)
        assert sorted(loaded) == sorted(model.tensors)
        for name, info in model.tensors.items():
            expected = info.dequantize().astype(target)
            got = loaded[name]
            assert got.shape == info.shape
            if got.dtype.kind == "V":  # .npy has no bfloat16 code: stored as 2-byte void
                got = got.view(target)
            assert got.dtype == target
            assert got.tobytes() == expected.tobytes(), name
    assert not os.path.exists(out_path + ".part")


def test_convert_filter_and_split_model(capsys, tmp_path, split_paths):
    out_path = str(tmp_path / "part.npz")
    status, _, _ = run(capsys, "convert", split_paths[1], out_path, "--filter", "blk.[13].*", "--filter", "output*")
    assert status == 0
    with fastgguf.open(split_paths[0]) as model:
        loaded = load_output(out_path, model.tensors)
        assert sorted(loaded) == ["blk.1.weight", "blk.3.weight", "output.weight"]
        for name, array in loaded.items():
            np.testing.assert_array_equal(array, model.dequantize(name))


def test_convert_tensor_larger_than_the_row_block_buffer(capsys, tmp_path, monkeypatch):
    # Many row blocks per tensor, and a last partial block.
    monkeypatch.setattr(fastgguf.dequant, "_BLOCK_ELEMENTS", 3 * 64)
    values = np.arange(10 * 64, dtype=np.float32).reshape(2, 5, 64)
    source = tmp_path / "in.gguf"
    with GGUFWriter(source) as w:
        w.add_tensor("t", values)
    status, _, _ = run(capsys, "convert", str(source), str(tmp_path / "o.safetensors"), "--dtype", "float16")
    assert status == 0
    loaded = load_output(str(tmp_path / "o.safetensors"), ["t"])
    np.testing.assert_array_equal(loaded["t"], values.astype(np.float16))


def test_npy_filename_keeps_names_inside_the_folder():
    assert npy_filename("blk.0.attn_q.weight") == "blk.0.attn_q.weight.npy"
    assert os.sep not in npy_filename(f"..{os.sep}evil")
    assert "/" not in npy_filename("a/b")


def test_convert_refuses_to_replace_a_file_with_a_folder(capsys, tmp_path, model_path):
    target = tmp_path / "taken"
    target.write_text("keep me")
    status, _, err = run(capsys, "convert", model_path, str(target))
    assert status == 1 and "exists and is not a folder" in err
    assert target.read_text() == "keep me"


# bench ---------------------------------------------------------------------------------------------

def bench_table(out: str) -> dict[str, list[str]]:
    lines = out.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("type "))
    rows = {}
    for line in lines[start + 1:]:
        words = line.split()
        if not words or not words[0].isupper() or words[0].endswith(":"):
            break
        rows[words[0]] = words[1:]
    return rows


def test_bench_synthetic(capsys):
    status, out, _ = run(capsys, "bench", "--types", "Q4_0,Q6_K", "IQ2_XXS", "F16", "--elements", "65536",
                         "--repeat", "1", "--threads", "1")
    assert status == 0
    assert "synthetic model, 65,536 elements per type" in out
    assert "1 thread(s)" in out
    rows = bench_table(out)
    assert list(rows) == ["F16", "Q4_0", "Q6_K", "IQ2_XXS"]  # type id order
    for name, row in rows.items():
        bits, gelem, gbs, fill, fraction = row[:5]
        assert float(bits) == round(fastgguf.types.TYPE_TRAITS[GGMLType[name]].bits_per_weight, 2)
        assert float(gelem) > 0 and float(fill) > 0
        assert float(gbs) == pytest.approx(4 * float(gelem), abs=0.03)  # both rounded to 0.01
        assert fraction.endswith("%")
        assert row[5].endswith("x")  # gguf-py has all four
    assert out.splitlines()[-1].startswith("done in ")


def test_bench_file_without_comparison(capsys, model_path):
    status, out, _ = run(capsys, "bench", model_path, "--repeat", "1", "--no-compare")
    assert status == 0
    rows = bench_table(out)
    assert sorted(rows) == ["BF16", "F16", "F32", "Q4_0", "Q8_0"]
    assert all(len(row) == 5 for row in rows.values())
    assert "vs gguf-py" not in out


def test_bench_file_types_absent(capsys, model_path):
    status, out, _ = run(capsys, "bench", model_path, "--types", "Q8_0", "Q6_K", "--repeat", "1", "--no-compare")
    assert status == 0
    assert list(bench_table(out)) == ["Q8_0"]
    assert "not in the file: Q6_K" in out


def test_bench_unknown_type(capsys):
    status, _, err = run(capsys, "bench", "--types", "Q9_9")
    assert status == 1
    assert err.startswith("fastgguf: error: unknown tensor type 'Q9_9'")


# errors --------------------------------------------------------------------------------------------

@pytest.fixture
def bad_inputs(tmp_path, model_path):
    not_gguf = tmp_path / "notes.gguf"
    not_gguf.write_text("hello, world\n")
    truncated = tmp_path / "truncated.gguf"
    with open(model_path, "rb") as handle:
        truncated.write_bytes(handle.read(300))
    empty = tmp_path / "empty.gguf"
    empty.write_bytes(b"")
    shard = tmp_path / "m-00001-of-00002.gguf"
    with GGUFWriter(shard) as w:
        w.add("split.no", 0, GGUFValueType.UINT16)
        w.add("split.count", 2, GGUFValueType.UINT16)
        w.add("split.tensors.count", 2, GGUFValueType.INT32)
        w.add_tensor("a", np.zeros(4, np.float32))
    return {
        "missing": (str(tmp_path / "nope.gguf"), "No such file or directory"),
        "not-gguf": (str(not_gguf), "bad magic"),
        "truncated": (str(truncated), "(at byte"),
        "empty": (str(empty), "empty file"),
        "directory": (str(tmp_path), "Is a directory"),
        "missing-shard": (str(shard), "missing shard 2 of 2"),
    }


@pytest.mark.parametrize("kind", ["missing", "not-gguf", "truncated", "empty", "directory", "missing-shard"])
@pytest.mark.parametrize("command", ["info", "dump", "tensors", "bench", "convert"])
def test_bad_input_prints_one_line(capsys, tmp_path, bad_inputs, kind, command):
    path, reason = bad_inputs[kind]
    argv = [command, path] + ([str(tmp_path / "out.npz")] if command == "convert" else [])
    status, out, err = run(capsys, *argv)
    assert status == 1
    assert out == ""
    assert err.startswith(f"fastgguf: error: {path}")
    assert reason in err
    assert err.count("\n") == 1
    assert not os.path.exists(tmp_path / "out.npz")


def run_module(*argv):
    env = dict(os.environ, PYTHONPATH=SRC + os.pathsep + os.environ.get("PYTHONPATH", ""))
    return subprocess.run([sys.executable, "-m", "fastgguf", *argv], capture_output=True, text=True, env=env,
                          timeout=120)


def test_python_dash_m_error_has_no_traceback(tmp_path):
    path = tmp_path / "bad.gguf"
    path.write_bytes(b"GGUF\x03\x00\x00\x00" + b"\xff" * 16)
    result = run_module("info", str(path))
    assert result.returncode == 1
    assert result.stdout == ""
    assert result.stderr.startswith(f"fastgguf: error: {path}: ")
    assert result.stderr.count("\n") == 1 and "Traceback" not in result.stderr


def test_python_dash_m_runs(model_path):
    result = run_module("tensors", model_path, "--filter", "output*")
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines()[1].split()[:3] == ["output.weight", "8x64", "BF16"]


@pytest.mark.parametrize("suffix", [".safetensors", ".npz", ""], ids=["safetensors", "npz", "npy-folder"])
def test_convert_odd_shapes(capsys, tmp_path, suffix):
    arrays = {"empty": np.zeros((0, 32), np.float32), "vector": np.arange(5, dtype=np.float32),
              "cube": np.arange(24, dtype=np.float16).reshape(2, 3, 4)}
    source = tmp_path / "odd.gguf"
    with GGUFWriter(source) as w:
        for name, array in arrays.items():
            w.add_tensor(name, array)
    out_path = str(tmp_path / f"odd{suffix}")
    status, _, err = run(capsys, "convert", str(source), out_path)
    assert status == 0, err
    loaded = load_output(out_path, arrays)
    for name, array in arrays.items():
        assert loaded[name].dtype == np.float32
        np.testing.assert_array_equal(loaded[name], array.astype(np.float32), strict=True)


def test_bench_big_endian_file_skips_quantized_types(capsys, tmp_path):
    path = tmp_path / "big-endian.gguf"
    with GGUFWriter(path, byteorder=">") as w:
        w.add_tensor("plain", np.ones((4, 32), np.float32))
        w.add_tensor("quantized", bytes(4 * 34), type=GGMLType.Q8_0, shape=(4, 32))
    try:
        fastgguf.dequantize(bytes(34), GGMLType.Q8_0, (32,), byteorder=">")
        supported = True
    except NotImplementedError:
        supported = False
    status, out, _ = run(capsys, "bench", str(path), "--repeat", "1")
    assert status == 0
    assert list(bench_table(out)) == (["F32", "Q8_0"] if supported else ["F32"])
    assert ("skipped: Q8_0 (no kernel for big-endian data)" in out) != supported
    assert "no gguf-py comparison" in out


class Terminal(io.StringIO):
    def isatty(self):
        return True


@pytest.mark.parametrize("no_progress", [False, True])
def test_convert_progress_bar_on_a_terminal(monkeypatch, tmp_path, model_path, no_progress):
    pytest.importorskip("tqdm")
    terminal = Terminal()
    monkeypatch.setattr(sys, "stderr", terminal)
    argv = ["convert", model_path, str(tmp_path / "o.npz")] + (["--no-progress"] if no_progress else [])
    assert main(argv) == 0
    text = terminal.getvalue()
    assert ("convert: 100%" in text) != no_progress
    assert text.endswith(f"wrote 8 tensors (float32) to {tmp_path / 'o.npz'}\n")


def test_console_script_entry_point_is_main():
    tomllib = pytest.importorskip("tomllib")
    repository = str(REPO)
    with open(os.path.join(repository, "pyproject.toml"), "rb") as handle:
        scripts = tomllib.load(handle)["project"]["scripts"]
    module, _, attribute = scripts["fastgguf"].partition(":")
    assert getattr(__import__(module, fromlist=[attribute]), attribute) is main


def test_closed_pipe_ends_quietly(tmp_path):
    path = tmp_path / "many.gguf"
    with GGUFWriter(path) as w:
        for i in range(3000):  # ~130 kB of output: more than a pipe buffer
            w.add_tensor(f"blk.{i}.weight", np.zeros(4, np.float32))
    env = dict(os.environ, PYTHONPATH=SRC + os.pathsep + os.environ.get("PYTHONPATH", ""))
    process = subprocess.Popen([sys.executable, "-m", "fastgguf", "tensors", str(path)], stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, env=env)
    assert process.stdout.readline().split() == [b"name", b"shape", b"type", b"size", b"offset"]
    process.stdout.close()  # like `| head -1`
    stderr = process.stderr.read()
    process.stderr.close()
    assert process.wait(timeout=60) == 1
    assert stderr == b""


def test_convert_refuses_a_tensor_named_like_the_safetensors_header(capsys, tmp_path):
    source = tmp_path / "odd.gguf"
    with GGUFWriter(source) as w:
        w.add_tensor("__metadata__", np.zeros(4, np.float32))
    out_path = tmp_path / "o.safetensors"
    status, _, err = run(capsys, "convert", str(source), str(out_path))
    assert status == 1
    assert err == "fastgguf: error: a tensor named '__metadata__' cannot be stored in safetensors\n"
    assert list(tmp_path.iterdir()) == [source]


@pytest.fixture
def invalid_utf8_model(tmp_path):
    path = tmp_path / "bytes.gguf"
    with GGUFWriter(path) as w:
        w.add("general.architecture", "x")
        w.add("general.name", b"caf\xe9")
        w.add_tensor(b"w\xff".decode("utf-8", "surrogateescape"), np.arange(4, dtype=np.float32))
    return str(path)


@pytest.mark.parametrize("command", ["info", "dump", "tensors"])
def test_invalid_utf8_prints_escaped_on_a_strict_stdout(monkeypatch, invalid_utf8_model, command):
    stdout = io.TextIOWrapper(io.BytesIO(), encoding="utf-8", errors="strict")
    monkeypatch.setattr(sys, "stdout", stdout)
    assert main([command, invalid_utf8_model]) == 0
    stdout.flush()
    text = stdout.buffer.getvalue().decode("utf-8")
    expected_name = {"info": "caf\\xe9", "dump": "'caf\\udce9'", "tensors": None}[command]  # dump shows repr()
    assert expected_name is None or expected_name in text
    assert ("w\\xff" in text) == (command != "info")


@pytest.mark.parametrize("suffix", [".safetensors", ".npz", ""], ids=["safetensors", "npz", "npy-folder"])
def test_convert_escapes_invalid_utf8_names(capsys, tmp_path, invalid_utf8_model, suffix):
    out_path = str(tmp_path / f"out{suffix}")
    status, _, err = run(capsys, "convert", invalid_utf8_model, out_path)
    assert status == 0, err
    escaped = "w\\xff"
    loaded = load_output(out_path, [escaped])
    assert list(loaded) == [escaped]
    np.testing.assert_array_equal(loaded[escaped], np.arange(4, dtype=np.float32))


def test_dump_json_of_invalid_utf8_is_valid_unicode(capsys, invalid_utf8_model):
    status, out, _ = run(capsys, "dump", "--json", invalid_utf8_model)
    assert status == 0
    out.encode("utf-8")  # no lone surrogates anywhere
    document = json.loads(out)
    assert document["metadata"]["general.name"] == {"type": "STRING", "value": "caf\\xe9", "raw_hex": "636166e9"}
    assert document["tensors"][0]["name"] == "w\\xff"
