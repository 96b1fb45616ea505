"""fastgguf.read_imatrix: both llama-imatrix formats, the values llama-quantize derives, hostile files."""

from __future__ import annotations

import struct

import numpy as np
import pytest

import fastgguf
from fastgguf import GGUFError, GGUFWriter

N = 64  # row length of the imaginary weights


def gguf_imatrix(path, entries, *, extra=()):
    """entries: name -> (in_sum2 (n_mat, N), counts (n_mat,)); written as llama-imatrix does (counts ne = {1, n_mat})."""
    w = GGUFWriter(path)
    w.add("general.type", "imatrix")
    w.add("imatrix.datasets", ["wiki.train.raw"])
    w.add("imatrix.chunk_count", 10, fastgguf.GGUFValueType.UINT32)
    w.add("imatrix.chunk_size", 512, fastgguf.GGUFValueType.UINT32)
    for name, (sums, counts) in entries.items():
        w.add_tensor(name + ".in_sum2", np.asarray(sums, np.float32))
        w.add_tensor(name + ".counts", np.asarray(counts, np.float32).reshape(-1, 1))
    for name, array in extra:
        w.add_tensor(name, array)
    w.write()
    return str(path)


def dat_imatrix(entries, trailer=b""):
    """entries: list of (name bytes, ncall, values); the legacy binary layout."""
    out = struct.pack("<i", len(entries))
    for name, ncall, values in entries:
        values = np.asarray(values, "<f4")
        out += struct.pack("<i", len(name)) + name + struct.pack("<ii", ncall, values.size) + values.tobytes()
    return out + trailer


def test_gguf_values_are_sums_over_rounded_counts(tmp_path):
    rng = np.random.default_rng(0)
    dense = rng.random((1, N), dtype=np.float32) * 100
    experts = rng.random((3, N), dtype=np.float32) * 100
    path = gguf_imatrix(tmp_path / "m.gguf", {
        "blk.0.attn_q.weight": (dense, [7.0]),
        # counts are lround()ed: 2.5 -> 3 (halves away from zero); a zero count means "never seen" -> 1
        "blk.0.ffn_down_exps.weight": (experts, [2.5, 0.0, 4.4]),
    })
    got = fastgguf.read_imatrix(path)
    assert set(got) == {"blk.0.attn_q.weight", "blk.0.ffn_down_exps.weight"}
    np.testing.assert_array_equal(got["blk.0.attn_q.weight"], dense[0] / np.float32(7))
    want = np.concatenate([experts[0] / np.float32(3), np.ones(N, np.float32), experts[2] / np.float32(4)])
    np.testing.assert_array_equal(got["blk.0.ffn_down_exps.weight"], want)
    for array in got.values():
        assert array.dtype == np.float32 and array.ndim == 1


def test_gguf_in_sum_is_checked_not_used(tmp_path):
    sums = np.full((1, N), 8, np.float32)
    path = gguf_imatrix(tmp_path / "m.gguf", {"w.weight": (sums, [2])},
                        extra=[("w.weight.in_sum", np.zeros((1, N), np.float32))])
    np.testing.assert_array_equal(fastgguf.read_imatrix(path)["w.weight"], np.full(N, 4, np.float32))
    bad = gguf_imatrix(tmp_path / "bad.gguf", {"w.weight": (sums, [2])},
                       extra=[("w.weight.in_sum", np.zeros((1, N - 1), np.float32))])
    with pytest.raises(GGUFError, match="in_sum"):
        fastgguf.read_imatrix(bad)


@pytest.mark.parametrize("case", ["no counts", "no sums", "f16 sums", "uneven", "nan count", "nan sum", "no tensors"])
def test_gguf_malformed(tmp_path, case):
    w = GGUFWriter(tmp_path / "m.gguf")
    sums = np.ones((2, N), np.float32)
    if case != "no sums":
        w.add_tensor("a.weight.in_sum2", sums.astype(np.float16) if case == "f16 sums" else
                     (sums[:, :-1].reshape(-1)[:2 * N - 3] if case == "uneven" else
                      np.where(np.arange(N) == 5, np.nan, sums).astype(np.float32) if case == "nan sum" else sums))
    if case != "no counts" and case != "no tensors":
        w.add_tensor("a.weight.counts", np.array([[1.0], [np.nan if case == "nan count" else 2.0]], np.float32))
    if case == "no tensors":
        w = GGUFWriter(tmp_path / "m.gguf")
        w.add("general.type", "imatrix")
    w.write()
    with pytest.raises(GGUFError):
        fastgguf.read_imatrix(tmp_path / "m.gguf")


def test_gguf_entry_with_no_counts_is_skipped(tmp_path):
    w = GGUFWriter(tmp_path / "m.gguf")
    w.add_tensor("a.weight.in_sum2", np.ones((1, N), np.float32))
    w.add_tensor("a.weight.counts", np.zeros((0,), np.float32))
    w.add_tensor("b.weight.in_sum2", np.ones((1, N), np.float32))
    w.add_tensor("b.weight.counts", np.ones((1, 1), np.float32))
    w.write()
    assert list(fastgguf.read_imatrix(tmp_path / "m.gguf")) == ["b.weight"]


def test_dat_values(tmp_path):
    rng = np.random.default_rng(1)
    a, b, c = (rng.random(N, dtype=np.float32) for _ in range(3))
    trailer = struct.pack("<i", 100) + struct.pack("<i", 8) + b"wiki.raw"
    data = dat_imatrix([(b"blk.0.attn_k.weight", 4, a), (b"blk.0.attn_v.weight", 0, b),
                        (b"cut\0after.weight", 2, c), (b"blk.0.attn_k.weight", 5, b)], trailer)
    (tmp_path / "m.dat").write_bytes(data)
    got = fastgguf.read_imatrix(tmp_path / "m.dat")
    assert list(got) == ["blk.0.attn_k.weight", "blk.0.attn_v.weight", "cut"]
    np.testing.assert_array_equal(got["blk.0.attn_k.weight"], b / np.float32(5))  # a later entry replaces
    np.testing.assert_array_equal(got["blk.0.attn_v.weight"], b)  # ncall 0: values as stored
    np.testing.assert_array_equal(got["cut"], c / np.float32(2))
    # The trailer is optional, and a short one is ignored as llama.cpp ignores it.
    for cut in (0, 4, 6):
        (tmp_path / "t.dat").write_bytes(data[: len(data) - len(trailer) + cut])
        assert list(fastgguf.read_imatrix(tmp_path / "t.dat")) == list(got)


def test_dat_every_truncation_is_an_error(tmp_path):
    data = dat_imatrix([(b"a.weight", 1, np.ones(8)), (b"bb.weight", 2, np.ones(4))])
    for cut in range(len(data)):
        (tmp_path / "t.dat").write_bytes(data[:cut])
        with pytest.raises(GGUFError, match=r"at byte \d+"):
            fastgguf.read_imatrix(tmp_path / "t.dat")


@pytest.mark.parametrize("data", [
    struct.pack("<i", 0),
    struct.pack("<i", -5),
    struct.pack("<ii", 1, -1) + struct.pack("<ii", 1, 1) + b"\0" * 4,
    struct.pack("<ii", 1, 2**31 - 1) + b"ab",
    struct.pack("<ii", 1, 1) + b"a" + struct.pack("<ii", 1, 2**31 - 1) + b"\0" * 16,
    struct.pack("<ii", 1, 1) + b"a" + struct.pack("<ii", 1, 0),
    struct.pack("<ii", 1, 1) + b"a" + struct.pack("<ii", 1, -3),
    struct.pack("<ii", 1, 1) + b"a" + struct.pack("<ii", 1, 2) + struct.pack("<ff", 1.0, np.inf),
], ids=["zero entries", "negative entries", "negative name length", "huge name length", "huge value count",
        "zero values", "negative values", "infinite value"])
def test_dat_hostile(tmp_path, data):
    (tmp_path / "h.dat").write_bytes(data)
    with pytest.raises(GGUFError):
        fastgguf.read_imatrix(tmp_path / "h.dat")


def test_malformed_gguf_is_a_gguf_error(tmp_path):
    good = GGUFWriter()
    good.add_tensor("a.weight.in_sum2", np.ones((1, N), np.float32))
    good.add_tensor("a.weight.counts", np.ones((1, 1), np.float32))
    (tmp_path / "t.gguf").write_bytes(good.to_bytes()[:40])
    with pytest.raises(GGUFError):
        fastgguf.read_imatrix(tmp_path / "t.gguf")


def test_missing_file(tmp_path):
    with pytest.raises(FileNotFoundError):
        fastgguf.read_imatrix(tmp_path / "none.dat")


def test_same_values_from_both_formats(tmp_path):
    """What llama-imatrix writes for one set of statistics in either format gives the same importance."""
    rng = np.random.default_rng(2)
    sums = rng.random((1, N), dtype=np.float32) * 10
    from_gguf = fastgguf.read_imatrix(gguf_imatrix(tmp_path / "m.gguf", {"w.weight": (sums, [4])}))
    (tmp_path / "m.dat").write_bytes(dat_imatrix([(b"w.weight", 4, sums[0])]))
    from_dat = fastgguf.read_imatrix(tmp_path / "m.dat")
    np.testing.assert_array_equal(from_gguf["w.weight"], from_dat["w.weight"])
