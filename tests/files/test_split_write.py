"""Writing split models: fastgguf split/merge against llama-gguf-split's bytes, and their own guarantees."""

import json
import os

import numpy as np
import pytest

import fastgguf
from fastgguf import (
    GGMLType,
    GGUFError,
    GGUFFile,
    GGUFValueType,
    GGUFWriter,
    SplitModel,
    gguf_split as gguf_split_module,
    merge_files,
    split_file,
)
from fastgguf.cli import main

from split_models import CASES, MERGED_FROM, REFERENCES, build_models, sha256, split_kwargs

V = GGUFValueType


@pytest.fixture(scope="module")
def models(tmp_path_factory):
    directory = tmp_path_factory.mktemp("split-models")
    paths = build_models(directory)
    # "merged": what merging MERGED_FROM's shards gives (llama-gguf-split's hash is checked in the references test).
    folder = directory / "merged-source"
    folder.mkdir()
    shards = split_file(paths[CASES[MERGED_FROM][0]], folder / "out", **split_kwargs(CASES[MERGED_FROM][1]))
    paths["merged"] = merge_files(shards[0].path, directory / "merged.gguf").path
    return paths


@pytest.fixture(scope="module")
def references():
    if not os.path.exists(REFERENCES):
        pytest.skip("no tests/data/split_references.json (tools/gen_split_references.py writes it)")
    with open(REFERENCES) as handle:
        return json.load(handle)


def test_reference_models_are_the_recorded_ones(models, references):
    for name, digest in references["models"].items():
        assert sha256(models[name]) == digest, (f"model {name!r} differs from the one the references were made from: "
                                                f"tests/split_models.py changed? rerun tools/gen_split_references.py")


@pytest.mark.parametrize("case", list(CASES))
def test_split_and_merge_match_llama_gguf_split(models, references, tmp_path, case):
    model, options = CASES[case]
    expected = references["cases"][case]
    assert expected["options"] == options
    shards = split_file(models[model], tmp_path / "out", **split_kwargs(options))
    assert [os.path.basename(s.path) for s in shards] == list(expected["shards"])
    assert sorted(os.listdir(tmp_path)) == sorted(expected["shards"])  # nothing else left behind
    for shard in shards:
        assert os.path.getsize(shard.path) == shard.size
        assert sha256(shard.path) == expected["shards"][os.path.basename(shard.path)], shard.path
    merged = merge_files(shards[0].path, tmp_path / "merged.gguf")
    assert os.path.getsize(merged.path) == merged.size
    assert sha256(merged.path) == expected["merged"]


@pytest.mark.parametrize("case", list(CASES))
def test_dry_run_prints_llama_gguf_split_plan(models, references, tmp_path, capsys, case):
    model, options = CASES[case]
    assert main(["split", *options, "--dry-run", models[model], str(tmp_path / "out")]) == 0
    assert capsys.readouterr().out == references["cases"][case]["dry_run_stdout"]
    assert os.listdir(tmp_path) == []


# What the shards hold, checked without the references ------------------------------------------------

def test_shards_carry_split_keys_last_and_metadata_in_the_first(models, tmp_path):
    shards = split_file(models["mixed"], tmp_path / "x", max_tensors=4)
    assert [os.path.basename(s.path) for s in shards] == [f"x-0000{i}-of-00003.gguf" for i in (1, 2, 3)]
    with GGUFFile(models["mixed"]) as source:
        source_keys = list(source.metadata)
        n_tensors = len(source.tensors)
    for number, shard in enumerate(shards):
        with GGUFFile(shard.path) as f:
            keys = list(f.metadata)
            assert keys[-3:] == ["split.no", "split.tensors.count", "split.count"]
            assert keys[:-3] == (source_keys if number == 0 else [])
            assert [f.metadata.value_type(k) for k in keys[-3:]] == [V.UINT16, V.INT32, V.UINT16]
            assert [f.metadata[k] for k in keys[-3:]] == [number, n_tensors, 3]
            assert f.version == 3
            assert len(f.tensors) == len(shard.tensors)


def test_split_model_reads_back_everywhere(models, tmp_path):
    gguf = pytest.importorskip("gguf")
    shards = split_file(models["mixed"], tmp_path / "x", max_tensors=3, no_tensor_first_split=True)
    assert len(shards[0].tensors) == 0
    with fastgguf.open(shards[2].path) as split, GGUFFile(models["mixed"]) as source:
        assert isinstance(split, SplitModel)
        assert list(split.tensors) == list(source.tensors)
        for name, info in source.tensors.items():
            assert split.tensors[name].raw.tobytes() == info.raw.tobytes()
            assert split.tensors[name].type == info.type
            assert split.tensors[name].n_elements == info.n_elements
        # ggml's dimension count: a (1, 64) tensor comes out as (64,)
        assert split.tensors["blk.0.attn_q.weight"].shape == (64,)
        assert split.tensors["blk.1.attn_k.weight"].shape == (4, 1, 16)
        assert split.metadata["tokenizer.ggml.tokens"] == source.metadata["tokenizer.ggml.tokens"]
    for shard in shards:
        reader = gguf.GGUFReader(shard.path)
        assert [t.name for t in reader.tensors] == list(shard.tensors)
        assert int(reader.fields["split.count"].parts[-1][0]) == len(shards)


def test_re_split_a_split_model_and_merge(models, tmp_path):
    first = split_file(models["sized"], tmp_path / "a", max_tensors=5)
    again = split_file(first[1].path, tmp_path / "b", max_size=2_000_000)  # any shard opens the whole model
    merged = merge_files(again[-1].path, tmp_path / "m.gguf")
    with fastgguf.open(merged.path) as m, GGUFFile(models["sized"]) as source:
        assert type(m) is GGUFFile  # split.count 0: one file
        assert m.metadata["split.count"] == 0
        for name, info in source.tensors.items():
            assert m.tensors[name].raw.tobytes() == info.raw.tobytes()


def test_size_limit_counts_padded_tensors(models, tmp_path):
    with GGUFFile(models["sized"]) as source:
        sizes = [(info.nbytes + 31) // 32 * 32 for info in source.tensors.values()]
    limit = sizes[0] + sizes[1]
    assert [s.tensors for s in split_file(models["sized"], tmp_path / "x", max_size="1M", dry_run=True)] == \
        [s.tensors for s in split_file(models["sized"], tmp_path / "x", max_size=10**6, dry_run=True)]
    shards = split_file(models["sized"], tmp_path / "x", max_size=limit, dry_run=True)
    assert len(shards[0].tensors) == 2
    assert os.listdir(tmp_path) == []
    assert split_file(models["sized"], tmp_path / "x", max_size=limit - 1, dry_run=True)[0].tensors == \
        shards[0].tensors[:1]


def test_a_shard_without_tensors_is_refused(models, tmp_path):
    with pytest.raises(ValueError, match="shard 1 would hold no tensors"):
        split_file(models["sized"], tmp_path / "x", max_size=1000)
    with pytest.raises(ValueError, match="shard 2 would hold no tensors"):
        split_file(models["sized"], tmp_path / "x", max_size=1000, no_tensor_first_split=True)
    assert os.listdir(tmp_path) == []


@pytest.mark.parametrize("kwargs, message", [
    ({"max_tensors": 0}, "at least 1"),
    ({"max_size": 0}, "positive"),
    ({"max_tensors": 2, "max_size": 10}, "not both"),
])
def test_bad_limits(models, tmp_path, kwargs, message):
    with pytest.raises(ValueError, match=message):
        split_file(models["mixed"], tmp_path / "x", **kwargs)


@pytest.mark.parametrize("text, size", [("1M", 10**6), ("2G", 2 * 10**9), ("500m", 5 * 10**8), ("4096", 4096)])
def test_parse_size(text, size):
    assert gguf_split_module.parse_size(text) == size


@pytest.mark.parametrize("text", ["", "M", "1.5G", "-1M", "0G", "2T"])
def test_parse_size_refuses(text):
    with pytest.raises(ValueError):
        gguf_split_module.parse_size(text)


def _fail_on_call(monkeypatch, module, n):
    real = module.copy_tensor
    calls = []

    def failing(*args, **kwargs):
        calls.append(1)
        if len(calls) == n:
            raise OSError("disk full (simulated)")
        return real(*args, **kwargs)

    monkeypatch.setattr(module, "copy_tensor", failing)


def test_split_failure_leaves_nothing(models, tmp_path, monkeypatch):
    _fail_on_call(monkeypatch, gguf_split_module, 7)  # in the third shard
    with pytest.raises(OSError, match="simulated"):
        split_file(models["mixed"], tmp_path / "x", max_tensors=3)
    assert os.listdir(tmp_path) == []


def test_merge_failure_leaves_nothing(models, tmp_path, monkeypatch):
    shards = split_file(models["mixed"], tmp_path / "x", max_tensors=3)
    _fail_on_call(monkeypatch, gguf_split_module, 5)
    with pytest.raises(OSError, match="simulated"):
        merge_files(shards[0].path, tmp_path / "m.gguf")
    assert sorted(os.listdir(tmp_path)) == sorted(os.path.basename(s.path) for s in shards)


def test_split_never_overwrites_its_input(models, tmp_path):
    shards = split_file(models["mixed"], tmp_path / "x", max_tensors=6)
    before = [sha256(s.path) for s in shards]
    with pytest.raises(ValueError, match="is the input file"):
        split_file(shards[0].path, tmp_path / "x", max_tensors=6)
    assert [sha256(s.path) for s in shards] == before


def test_merge_refusals(models, tmp_path):
    shards = split_file(models["mixed"], tmp_path / "x", max_tensors=6)
    (tmp_path / "taken.gguf").write_bytes(b"keep")
    with pytest.raises(FileExistsError, match="exists"):
        merge_files(shards[0].path, tmp_path / "taken.gguf")
    assert (tmp_path / "taken.gguf").read_bytes() == b"keep"
    with pytest.raises(GGUFError, match="no split.count"):
        merge_files(models["mixed"], tmp_path / "m.gguf")
    merged = merge_files(shards[0].path, tmp_path / "m.gguf")
    with pytest.raises(GGUFError, match="split.count is 0"):
        merge_files(merged.path, tmp_path / "m2.gguf")


def test_one_shard_split_merges(models, tmp_path):
    (shard,) = split_file(models["mixed"], tmp_path / "x")
    assert os.path.basename(shard.path) == "x-00001-of-00001.gguf"
    merged = merge_files(shard.path, tmp_path / "m.gguf")
    with GGUFFile(merged.path) as m:
        assert m.metadata["split.count"] == 0 and len(m.tensors) == 11


def _model_with(tmp_path, name, *, alignment=32, byteorder="<"):
    rng = np.random.default_rng(7)
    w = GGUFWriter(tmp_path / name, alignment=alignment, byteorder=byteorder)
    w.add("general.architecture", "llama")
    w.add("general.name", "odd")
    for i in range(5):
        w.add_tensor(f"t{i}", rng.standard_normal((3, 8 * (i + 1))).astype(np.float32))
    w.add_tensor("q", rng.integers(0, 256, 34 * 3, dtype=np.uint8).tobytes(), GGMLType.Q8_0, (3, 32))
    w.write()
    return tmp_path / name


@pytest.mark.parametrize("alignment, byteorder", [(64, "<"), (32, ">"), (128, ">")])
def test_other_alignments_and_big_endian_round_trip(tmp_path, alignment, byteorder):
    gguf = pytest.importorskip("gguf")
    source_path = _model_with(tmp_path, "m.gguf", alignment=alignment, byteorder=byteorder)
    shards = split_file(source_path, tmp_path / "x", max_tensors=2)
    merged = merge_files(shards[0].path, tmp_path / "merged.gguf")
    with GGUFFile(source_path) as source, fastgguf.open(shards[0].path) as split, \
            GGUFFile(merged.path) as m:
        assert split.shards[0].alignment == alignment  # the shard carrying general.alignment is laid out by it
        assert all(s.alignment == 32 for s in split.shards[1:])
        assert m.alignment == alignment and m.byteorder == byteorder
        for name, info in source.tensors.items():
            assert split.tensors[name].raw.tobytes() == info.raw.tobytes()
            assert m.tensors[name].raw.tobytes() == info.raw.tobytes()
            np.testing.assert_array_equal(m.dequantize(name), source.dequantize(name))
    if byteorder == "<":
        for path in [s.path for s in shards] + [merged.path]:
            reader = gguf.GGUFReader(path)
            assert reader.alignment == (alignment if path in (shards[0].path, merged.path) else 32)


def test_cli_split_and_merge(models, tmp_path, capsys):
    assert main(["split", "--split-max-tensors", "4", "--no-progress", models["mixed"], str(tmp_path / "x")]) == 0
    out, err = capsys.readouterr()
    assert out.startswith("n_split: 3\n")
    assert "wrote" in err
    assert main(["merge", "--no-progress", str(tmp_path / "x-00003-of-00003.gguf"), str(tmp_path / "m.gguf")]) == 0
    assert main(["merge", str(tmp_path / "x-00001-of-00003.gguf"), str(tmp_path / "m.gguf")]) == 1
    assert "the output exists" in capsys.readouterr().err
    assert main(["split", "--split-max-size", "1000", models["sized"], str(tmp_path / "s")]) == 1
    assert "would hold no tensors" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        main(["split", "--split-max-size", "1.5G", models["sized"], str(tmp_path / "s")])


def test_open_takes_a_merged_file_alone(models, tmp_path):
    shards = split_file(models["mixed"], tmp_path / "x-00001-of-00002", max_tensors=6)
    # A merged file that kept a shard-like name is still one file: split.count is 0.
    merged = merge_files(shards[0].path, tmp_path / "y-00001-of-00002.gguf")
    with fastgguf.open(merged.path) as m:
        assert type(m) is GGUFFile


def test_a_zero_dimension_is_kept(tmp_path):
    # llama-gguf-split writes ggml's dimension count, which drops it: the shard then claims 128 bytes it lacks.
    w = GGUFWriter(tmp_path / "z.gguf")
    w.add_tensor("z", np.zeros((0, 32), np.float32))
    w.add_tensor("b", np.ones((1, 8), np.float32))
    w.write()
    shards = split_file(tmp_path / "z.gguf", tmp_path / "x", max_tensors=1)
    with fastgguf.open(shards[0].path) as split:
        assert split.tensors["z"].shape == (0, 32) and split.tensors["z"].nbytes == 0
        assert split.tensors["b"].shape == (8,)
