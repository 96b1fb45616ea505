"""Split models: fastgguf.open on a shard opens every shard as one model, and checks them."""

import numpy as np
import pytest

import fastgguf
from fastgguf import GGUFError, GGUFFile, GGUFValueType, GGUFWriter, SplitModel

gguf = pytest.importorskip("gguf")

ARRAYS = {
    f"blk.{i}.weight": np.arange(i * 100, i * 100 + (i + 1) * 8, dtype=np.float32).reshape(i + 1, 8)
    for i in range(5)
}
ARRAYS["output.weight"] = np.linspace(-1, 1, 64, dtype=np.float16).reshape(2, 32)


@pytest.fixture(scope="module")
def gguf_py_split(tmp_path_factory, gguf_py_write):
    """A model written by gguf-py's writer with split_max_tensors=2: 6 tensors over 3 shards."""
    directory = tmp_path_factory.mktemp("split")
    writer = gguf.GGUFWriter(directory / "tiny.gguf", arch="llama", split_max_tensors=2)
    writer.add_name("Tiny")
    writer.add_context_length(128)
    for name, array in ARRAYS.items():
        writer.add_tensor(name, array)
    gguf_py_write(writer)
    return [directory / f"tiny-0000{i}-of-00003.gguf" for i in (1, 2, 3)]


@pytest.mark.parametrize("shard", [0, 1, 2])
def test_any_shard_opens_the_whole_model(gguf_py_split, shard):
    with fastgguf.open(gguf_py_split[shard]) as model:
        assert isinstance(model, SplitModel)
        assert model.path == str(gguf_py_split[0])
        assert model.paths == tuple(str(p) for p in gguf_py_split)
        assert list(model.tensors) == list(ARRAYS)
        assert [model.shard_of(name) for name in model.tensors] == [0, 0, 1, 1, 2, 2]
        assert model.metadata["general.architecture"] == "llama"
        assert model.metadata["general.name"] == "Tiny"
        assert model.metadata["llama.context_length"] == 128
        assert model.file_size == sum(p.stat().st_size for p in gguf_py_split)
        for name, array in ARRAYS.items():
            info = model.tensors[name]
            assert info.shape == array.shape
            assert info.raw.tobytes() == array.tobytes()
    assert model.closed
    assert all(shard.closed for shard in model.shards)
    with pytest.raises(GGUFError, match="closed"):
        model.tensors


def test_split_model_dequantizes_every_shard(gguf_py_split):
    with fastgguf.open(gguf_py_split[0]) as model:
        loaded = model.load()
        for name, array in ARRAYS.items():
            np.testing.assert_array_equal(loaded[name], array.astype(np.float32))
        np.testing.assert_array_equal(model.dequantize("blk.2.weight", dtype="float16"),
                                      ARRAYS["blk.2.weight"].astype(np.float16))


def test_single_shard_opens_alone_with_gguffile(gguf_py_split):
    with GGUFFile(gguf_py_split[1]) as shard:
        assert list(shard.tensors) == ["blk.2.weight", "blk.3.weight"]


# Shards built by hand to break one rule at a time -------------------------------------------------

def write_shard(path, no, count, total, names, *, extra=()):
    with GGUFWriter(path) as writer:
        if no is not None:
            writer.add("split.no", no, GGUFValueType.UINT16)
        if count is not None:
            writer.add("split.count", count, GGUFValueType.UINT16)
        if total is not None:
            writer.add("split.tensors.count", total, GGUFValueType.INT32)
        for key, value in extra:
            writer.add(key, value)
        for name in names:
            writer.add_tensor(name, np.zeros(4, np.float32))


def write_model(directory, layout, prefix="m"):
    """layout: one (no, count, total, names) per shard; returns the shard paths."""
    paths = []
    for index, (no, count, total, names) in enumerate(layout):
        path = directory / f"{prefix}-{index + 1:05d}-of-{len(layout):05d}.gguf"
        write_shard(path, no, count, total, names)
        paths.append(path)
    return paths


GOOD = [(0, 3, 4, ["a", "b"]), (1, 3, 4, ["c"]), (2, 3, 4, ["d"])]


def test_hand_built_split_model_opens(tmp_path):
    paths = write_model(tmp_path, GOOD)
    with fastgguf.open(paths[2]) as model:
        assert list(model.tensors) == ["a", "b", "c", "d"]
        assert model.tensors["d"].offset < paths[2].stat().st_size


def test_missing_shard(tmp_path):
    paths = write_model(tmp_path, GOOD)
    paths[1].unlink()
    with pytest.raises(GGUFError, match=r"missing shard 2 of 3: .*m-00002-of-00003\.gguf"):
        fastgguf.open(paths[0])


@pytest.mark.parametrize("layout, message", [
    ([(0, 3, 4, ["a", "b"]), (1, 3, 4, ["c"]), (2, 3, 4, ["a"])], r"tensor 'a' is in shard 1 and in shard 3"),
    ([(0, 3, 4, ["a", "b"]), (1, 2, 4, ["c"]), (2, 3, 4, ["d"])], r"split\.count is 2, the first shard says 3"),
    ([(0, 3, 4, ["a", "b"]), (2, 3, 4, ["c"]), (2, 3, 4, ["d"])], r"split\.no is 2, expected 1"),
    ([(0, 3, 5, ["a", "b"]), (1, 3, 5, ["c"]), (2, 3, 5, ["d"])], r"split\.tensors\.count is 5 but .* hold 4"),
    ([(0, 3, 4, ["a", "b"]), (1, 3, 9, ["c"]), (2, 3, 4, ["d"])], r"split\.tensors\.count is 9, the first"),
    ([(0, 3, 4, ["a", "b"]), (1, 3, None, ["c"]), (None, 3, 4, ["d"])], r"without split\.no"),
    ([(0, 3, None, ["a", "b"]), (1, 3, 4, ["c"]), (2, 3, 4, ["d"])], r"without split\.tensors\.count"),
    ([(1, 3, 4, ["a", "b"]), (1, 3, 4, ["c"]), (2, 3, 4, ["d"])], r"the name says shard 1 of 3, the metadata says "
                                                                  r"shard 2 of 3"),
    ([(0, 3, 4, ["a", "b"]), (1, None, 4, ["c"]), (2, 3, 4, ["d"])], r"without split\.count"),
    ([(5, 3, 4, ["a", "b"]), (1, 3, 4, ["c"]), (2, 3, 4, ["d"])], r"split\.no = 5 with split\.count = 3"),
], ids=["duplicate-tensor", "count-mismatch", "no-mismatch", "total-wrong", "total-disagrees", "no-missing",
        "total-missing", "name-vs-no", "count-missing", "no-out-of-range"])
def test_inconsistent_shards_are_rejected(tmp_path, layout, message):
    paths = write_model(tmp_path, layout)
    with pytest.raises(GGUFError, match=message):
        fastgguf.open(paths[0])


def test_corrupt_shard_names_its_path(tmp_path):
    paths = write_model(tmp_path, GOOD)
    paths[1].write_bytes(paths[1].read_bytes()[:40])
    with pytest.raises(GGUFError, match=r"m-00002-of-00003\.gguf: .*\(at byte \d+\)"):
        fastgguf.open(paths[0])


def test_split_count_must_be_an_integer(tmp_path):
    path = tmp_path / "m-00001-of-00002.gguf"
    write_shard(path, 0, None, 1, ["a"], extra=[("split.count", "two")])
    with pytest.raises(GGUFError, match=r"split\.count is a STRING, not an integer"):
        fastgguf.open(path)


def test_shard_name_without_split_keys_is_rejected(tmp_path):
    path = tmp_path / "m-00001-of-00002.gguf"
    write_shard(path, None, None, None, ["a"])
    with pytest.raises(GGUFError, match="named as shard 1 of 2 but has no split.count"):
        fastgguf.open(path)
    with GGUFFile(path) as alone:  # the escape hatch the message names
        assert list(alone.tensors) == ["a"]


def test_split_keys_without_shard_name_are_rejected(tmp_path):
    path = tmp_path / "model.gguf"
    write_shard(path, 0, 2, 2, ["a"])
    with pytest.raises(GGUFError, match="does not end in -NNNNN-of-NNNNN.gguf"):
        fastgguf.open(path)


@pytest.mark.parametrize("name, keys", [
    ("model.gguf", (None, None, None)),             # an ordinary file
    ("model-00001-of-00001.gguf", (0, 1, 1)),      # a one-shard split
    ("model.gguf", (0, 1, 1)),
])
def test_single_files_open_as_gguffile(tmp_path, name, keys):
    write_shard(tmp_path / name, *keys, ["a"])
    with fastgguf.open(tmp_path / name) as model:
        assert type(model) is GGUFFile
        assert list(model.tensors) == ["a"]


def test_one_shard_split_checks_its_tensor_count(tmp_path):
    write_shard(tmp_path / "model.gguf", 0, 1, 2, ["a"])
    with pytest.raises(GGUFError, match="hold 1 tensors"):
        fastgguf.open(tmp_path / "model.gguf")
