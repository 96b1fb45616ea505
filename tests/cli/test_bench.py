"""fastgguf._bandwidth (the last-level cache's size, numpy's fill on N threads) and what ``fastgguf bench`` says.

No timing is asserted: only that arrays are sized past the cache, that the threaded fill writes
every element, and that the output states what its percentages mean.
"""

from __future__ import annotations

import numpy as np
import pytest

import fastgguf
from fastgguf import GGMLType, _bandwidth
from fastgguf._bandwidth import (
    FALLBACK_LLC_BYTES,
    LLC_FACTOR,
    CacheInfo,
    default_elements,
    describe_llc,
    fill_bandwidth,
    last_level_cache,
    parse_cache_size,
    read_sysfs_llc,
    threaded_fill,
)
from fastgguf.cli import bench as bench_cli, main

MiB = 1 << 20


def fake_sysfs(root, caches) -> str:
    """``root``/index<i>/{level,type,size} for each (level, type, size) in ``caches`` (None: file left out)."""
    for i, fields in enumerate(caches):
        directory = root / f"index{i}"
        directory.mkdir(parents=True)
        for name, value in zip(("level", "type", "size"), fields):
            if value is not None:
                (directory / name).write_text(f"{value}\n")
    return str(root)


EPYC = [(1, "Data", "32K"), (1, "Instruction", "32K"), (2, "Unified", "512K"), (3, "Unified", "32768K")]


# the last-level cache -----------------------------------------------------------------------------

@pytest.mark.parametrize("text, size", [("32768K", 32 * MiB), ("8M", 8 * MiB), ("1G", 1 << 30), ("512", 512),
                                        (" 1536K\n", 1536 << 10), ("32MiB", 32 * MiB), ("48k", 48 << 10)])
def test_parse_cache_size(text, size):
    assert parse_cache_size(text) == size


@pytest.mark.parametrize("text", ["", "K", "big", "-1K", "0K", "1.5M", "12T"])
def test_parse_cache_size_refuses(text):
    with pytest.raises(ValueError):
        parse_cache_size(text)


def test_sysfs_llc_is_the_level_3_cache(tmp_path):
    assert read_sysfs_llc(fake_sysfs(tmp_path, EPYC)) == CacheInfo(32 * MiB, 3)


def test_sysfs_llc_highest_level_without_l3(tmp_path):
    root = fake_sysfs(tmp_path, [(1, "Data", "48K"), (1, "Instruction", "32K"), (2, "Unified", "2048K")])
    assert read_sysfs_llc(root) == CacheInfo(2 * MiB, 2)


def test_sysfs_llc_order_of_entries_does_not_matter(tmp_path):
    assert read_sysfs_llc(fake_sysfs(tmp_path, EPYC[::-1])) == CacheInfo(32 * MiB, 3)


def test_sysfs_llc_skips_instruction_and_broken_entries(tmp_path):
    root = fake_sysfs(tmp_path, [
        (2, "Unified", "1024K"),
        (3, "Instruction", "65536K"),  # not where data goes
        (4, "Unified", None),  # no size
        ("x", "Unified", "8M"),  # no level
        (5, "Unified", "lots"),  # no number
        (None, "Unified", "16M"),  # no level file
    ])
    (tmp_path / "uevent").write_text("")  # not an index* entry
    assert read_sysfs_llc(root) == CacheInfo(1 * MiB, 2)


def test_sysfs_llc_largest_of_one_level(tmp_path):
    root = fake_sysfs(tmp_path, [(3, "Unified", "16M"), (3, "Data", "96M"), (2, "Unified", "128M")])
    assert read_sysfs_llc(root) == CacheInfo(96 * MiB, 3)


def test_no_sysfs_falls_back(tmp_path):
    assert read_sysfs_llc(str(tmp_path / "absent")) is None
    assert read_sysfs_llc(fake_sysfs(tmp_path / "empty", [])) is None
    assert last_level_cache(str(tmp_path / "absent")) == CacheInfo(FALLBACK_LLC_BYTES, None)
    assert last_level_cache(fake_sysfs(tmp_path / "epyc", EPYC)) == CacheInfo(32 * MiB, 3)


def test_describe_llc():
    assert describe_llc(CacheInfo(32 * MiB, 3)) == "the 32 MiB L3 cache"
    assert describe_llc(CacheInfo(1536 << 10, 2)) == "the 1.5 MiB L2 cache"
    assert describe_llc(CacheInfo(512 << 10, 2)) == "the 512 KiB L2 cache"
    assert describe_llc(CacheInfo(FALLBACK_LLC_BYTES, None)) == "32 MiB (cache size unknown, assumed)"


@pytest.mark.parametrize("size", [32 * MiB, 1536 << 10, 3 * MiB + 4, 260 * MiB, 4096])
def test_default_elements_at_least_4x_the_cache(size):
    n = default_elements(CacheInfo(size, 3))
    assert LLC_FACTOR == 4
    assert 4 * n >= 4 * size
    assert 4 * n < 4 * size + 4 * 4096  # rounded up to one row, no more
    assert n % 4096 == 0


def test_default_elements_of_this_machine():
    assert 4 * default_elements() >= 4 * last_level_cache().size >= 4 * 4096
    assert default_elements(CacheInfo(32 * MiB, 3)) == 32 * MiB  # 128 MiB of float32


# the fill ----------------------------------------------------------------------------------------

@pytest.mark.parametrize("threads", [1, 2, 3, 8])
@pytest.mark.parametrize("size", [1, 5, 4096, 100_003])
def test_threaded_fill_fills_everything(size, threads):
    array = np.zeros(size, np.float32)
    threaded_fill(array, 3.5, threads)
    assert (array == 3.5).all()


def test_threaded_fill_2d_and_executor():
    from concurrent.futures import ThreadPoolExecutor

    array = np.full((64, 1000), -1.0, np.float32)
    with ThreadPoolExecutor(4) as pool:
        threaded_fill(array, 2.0, 4, pool)
    assert (array == 2.0).all()


def test_threaded_fill_one_slice_per_thread():
    calls = []

    class Recorder:  # an executor that runs the work in the calling thread and records it
        def map(self, fn, parts):
            calls.append([part.size for part in parts])
            return [fn(part) for part in parts]

    array = np.zeros(1001, np.float32)
    threaded_fill(array, 7.0, 3, Recorder())  # type: ignore[arg-type]
    assert calls == [[334, 334, 333]]
    assert (array == 7.0).all()


def test_threaded_fill_refuses_a_strided_array():
    array = np.zeros((10, 10), np.float32)[:, ::2]
    with pytest.raises(ValueError, match="C-contiguous"):
        threaded_fill(array, 1.0, 2)


@pytest.mark.parametrize("threads", [1, 2])
def test_fill_bandwidth(threads):
    array = np.zeros(1 << 16, np.float32)
    rate = fill_bandwidth(array, threads, repeat=2)
    assert rate > 0 and np.isfinite(rate)
    assert (array == 1.0).all()


# fastgguf bench ----------------------------------------------------------------------------------

def test_fill_note():
    note = bench_cli.fill_note(2, CacheInfo(32 * MiB, 3), [128 * MiB])
    assert note == ("of fill = dequantize GB/s of float32 written / numpy fill GB/s of a float32 array of the same "
                    "size on the same 2 thread(s); arrays 128.00 MiB, 4x the 32 MiB L3 cache")
    note = bench_cli.fill_note(1, CacheInfo(FALLBACK_LLC_BYTES, None), [2 * MiB, 64 * MiB])
    assert note.endswith("on the same 1 thread(s); arrays 2.00 MiB to 64.00 MiB, "
                         "up to 2x 32 MiB (cache size unknown, assumed)")


def run_bench(capsys, *argv: str) -> str:
    assert main(["bench", *argv]) == 0
    return capsys.readouterr().out


def table(out: str) -> dict[str, list[str]]:
    lines = out.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("type "))
    assert lines[start].split()[:7] == ["type", "bits/w", "Gelem/s", "GB/s", "out", "fill", "GB/s"]
    rows = {}
    for line in lines[start + 1:]:
        if not line.split() or not line.split()[0].isupper():
            break
        rows[line.split()[0]] = line.split()[1:]
    return rows


def test_bench_default_elements_are_4x_the_cache(capsys, monkeypatch):
    monkeypatch.setattr(bench_cli, "last_level_cache", lambda: CacheInfo(64 << 10, 3))  # a 64 KiB "LLC"
    out = run_bench(capsys, "--types", "Q4_0", "F16", "--repeat", "1", "--threads", "2", "--no-compare")
    assert "synthetic model, 65,536 elements per type" in out  # 256 KiB of float32
    assert ("of fill = dequantize GB/s of float32 written / numpy fill GB/s of a float32 array of the same size "
            "on the same 2 thread(s); arrays 256.00 KiB, 4x the 64 KiB L3 cache") in out
    assert list(table(out)) == ["F16", "Q4_0"]
    assert "last-level cache" not in out  # no output under 4x it


def test_bench_small_run(capsys):
    out = run_bench(capsys, "--types", "Q8_0", "IQ4_XS", "BF16", "--elements", "8192", "--repeat", "1",
                    "--threads", "2", "--no-compare")
    assert "synthetic model, 8,192 elements per type" in out
    assert "on the same 2 thread(s); arrays 32.00 KiB, " in out
    rows = table(out)
    assert list(rows) == ["Q8_0", "IQ4_XS", "BF16"]  # type id order
    assert len({row[3] for row in rows.values()}) == 1  # one fill figure for one size
    for _bits, gelem, gbs, fill, fraction in rows.values():
        assert float(gelem) > 0 and float(fill) > 0
        assert fraction.endswith("%")
        if float(gbs) >= 0.1:  # the percentage is GB/s out / fill GB/s (both printed rounded to 0.01)
            ratio = float(gbs) / float(fill)
            slack = ratio * (0.006 / float(gbs) + 0.006 / float(fill))
            assert int(fraction[:-1]) == pytest.approx(100 * ratio, abs=1 + 100 * slack)
    assert "under 4x the last-level cache, so partly cache figures: every output" in out


def test_bench_file_notes_small_outputs(capsys, tmp_path, monkeypatch):
    path = str(tmp_path / "two.gguf")
    writer = fastgguf.GGUFWriter(path)
    writer.add("general.architecture", "test")
    writer.add_tensor("big", np.ones((64, 256), np.float32))  # 64 KiB out
    writer.add_tensor("small", np.ones((2, 256), np.float16))  # 2 KiB out
    writer.write()
    monkeypatch.setattr(bench_cli, "last_level_cache", lambda: CacheInfo(4 << 10, 2))  # 16 KiB = 4x
    out = run_bench(capsys, path, "--repeat", "1", "--threads", "1", "--no-compare")
    # the default --elements takes 16 KiB (4x the cache) of F32's 64 KiB; F16 has only 2 KiB
    assert "on the same 1 thread(s); arrays 2.00 KiB to 16.00 KiB, up to 4x the 4 KiB L2 cache" in out
    assert "under 4x the last-level cache, so partly cache figures: F16 (2.00 KiB)\n" in out
    assert list(table(out)) == ["F32", "F16"]


def test_synthetic_model_streamed_in_chunks(tmp_path, monkeypatch):
    monkeypatch.setattr(bench_cli, "_CHUNK_ELEMENTS", 2 * 256)  # 2 rows a chunk: 3 chunks of 5 rows
    path = str(tmp_path / "synthetic.gguf")
    types = [GGMLType.F32, GGMLType.BF16, GGMLType.I8, GGMLType.Q4_K, GGMLType.F64]
    bench_cli.write_synthetic_model(path, types, 5 * 256 + 100, row_length=256)
    with fastgguf.open(path) as model:
        assert [(info.type, info.shape) for info in model.tensors.values()] == [(t, (5, 256)) for t in types]
        f32 = model.tensors["bench.F32"].dequantize()
        assert np.isfinite(f32).all() and 0.5 < f32.std() < 2  # normal values
        assert np.array_equal(f32[0], f32[2])  # one chunk of data, repeated
        bf16 = model.tensors["bench.BF16"].dequantize()
        assert np.array_equal(bf16.view(np.uint32), f32.view(np.uint32) & 0xFFFF0000)
        i8 = model.tensors["bench.I8"].dequantize()
        assert i8.min() >= -100 and i8.max() <= 99 and len(np.unique(i8)) > 50
        assert np.array_equal(model.tensors["bench.F64"].dequantize(), f32)
        assert model.tensors["bench.Q4_K"].dequantize().shape == (5, 256)


def test_one_shared_module():
    # the CLI measures with the module the benchmarks use, not a copy of its own
    assert bench_cli.fill_bandwidth is _bandwidth.fill_bandwidth
    assert not hasattr(bench_cli, "_measure_fill")
