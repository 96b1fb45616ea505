"""Hostile headers: absurd counts, lengths, dims, offsets and nesting fail fast with GGUFError,
in bounded time and memory (measured in a subprocess), and huge honest arrays stay lazy."""

from __future__ import annotations

import json
import struct
import subprocess
import sys
import textwrap
import tracemalloc

import pytest

import fastgguf
from fastgguf import GGMLType, GGUFError, GGUFValueType as V

BIG = 2**60
SECONDS_PER_FILE = 2.0
EXTRA_RSS_BYTES = 48 * 2**20


class Pack:
    """Raw GGUF pieces, so that every field can lie."""

    def __init__(self, version: int = 3, byteorder: str = "<") -> None:
        self.version, self.bo = version, byteorder
        self.len_fmt = byteorder + ("I" if version == 1 else "Q")

    def u32(self, v: int) -> bytes:
        return struct.pack(self.bo + "I", v)

    def u64(self, v: int) -> bytes:
        return struct.pack(self.bo + "Q", v)

    def length(self, v: int) -> bytes:
        return struct.pack(self.len_fmt, v)

    def header(self, n_tensors: int, n_kv: int) -> bytes:
        return b"GGUF" + self.u32(self.version) + self.length(n_tensors) + self.length(n_kv)

    def string(self, text: str, claimed: int | None = None) -> bytes:
        raw = text.encode()
        return self.length(len(raw) if claimed is None else claimed) + raw

    def kv(self, key: str, vtype: int, payload: bytes) -> bytes:
        return self.string(key) + self.u32(vtype) + payload

    def array_head(self, elem_type: int, count: int) -> bytes:
        return self.u32(elem_type) + self.length(count)

    def tensor(self, name: str, dims, ggml_type: int, offset: int, n_dims: int | None = None) -> bytes:
        return (self.string(name) + self.u32(len(dims) if n_dims is None else n_dims)
                + b"".join(self.length(d) for d in dims) + self.u32(ggml_type) + self.u64(offset))


def padded(data: bytes, total: int = 4096) -> bytes:
    """Room after the lie, so that only the claim, not a short file, is what is wrong."""
    return data + b"\0" * max(0, total - len(data))


def nested(p: Pack, depth: int) -> bytes:
    return b"".join(p.array_head(V.ARRAY, 1) for _ in range(depth)) + p.array_head(V.UINT8, 0)


def hostile_files() -> dict[str, bytes]:
    files = {}
    for order, bo in (("le", "<"), ("be", ">")):
        p = Pack(3, bo)
        one_kv = p.header(0, 1)
        files[f"2^60 keys {order}"] = padded(p.header(0, BIG))
        files[f"2^60 tensors {order}"] = padded(p.header(BIG, 0))
        files[f"2^64-1 keys and tensors {order}"] = padded(p.header(2**64 - 1, 2**64 - 1))
        files[f"key of 2^60 bytes {order}"] = padded(one_kv + p.string("k", BIG))
        files[f"string value of 2^60 bytes {order}"] = padded(one_kv + p.kv("k", V.STRING, p.length(BIG)))
        files[f"string value of 2^31 bytes {order}"] = padded(one_kv + p.kv("k", V.STRING, p.length(2**31)))
        files[f"u8 array of 2^60 {order}"] = padded(one_kv + p.kv("k", V.ARRAY, p.array_head(V.UINT8, BIG)))
        # count * 8 wraps to 0 in 64 bits; count * 4 wraps to 4.
        files[f"u64 array of 2^61 {order}"] = padded(one_kv + p.kv("k", V.ARRAY, p.array_head(V.UINT64, 2**61)))
        files[f"u32 array of 2^62+1 {order}"] = padded(
            one_kv + p.kv("k", V.ARRAY, p.array_head(V.UINT32, 2**62 + 1)))
        files[f"string array of 2^60 {order}"] = padded(
            one_kv + p.kv("k", V.ARRAY, p.array_head(V.STRING, BIG)))
        files[f"string array with a 2^60-byte element {order}"] = padded(
            one_kv + p.kv("k", V.ARRAY, p.array_head(V.STRING, 2) + p.string("a") + p.length(BIG)))
        files[f"nested array of 2^60 {order}"] = padded(one_kv + p.kv("k", V.ARRAY, p.array_head(V.ARRAY, BIG)))
        files[f"nested array with a 2^60 inner count {order}"] = padded(
            one_kv + p.kv("k", V.ARRAY, p.array_head(V.ARRAY, 1) + p.array_head(V.FLOAT64, BIG)))
        files[f"arrays nested 100000 deep {order}"] = one_kv + p.kv("k", V.ARRAY, nested(p, 100_000))
        one_tensor = p.header(1, 0)
        files[f"tensor with 2^32-1 dims {order}"] = padded(one_tensor + p.string("t") + p.u32(2**32 - 1))
        files[f"tensor dims overflow the element count {order}"] = padded(
            one_tensor + p.tensor("t", [2**40, 2**40], GGMLType.F32, 0))
        files[f"tensor byte size overflows {order}"] = padded(
            one_tensor + p.tensor("t", [2**62], GGMLType.F64, 0))
        files[f"tensor of 2^60 elements {order}"] = padded(one_tensor + p.tensor("t", [BIG], GGMLType.F32, 0))
        # No bytes, but numpy cannot describe a (2^62, 0) shape: dequantizing it used to raise ValueError.
        files[f"empty tensor with a 2^62 dim {order}"] = padded(
            one_tensor + p.tensor("t", [0, 2**62], GGMLType.F32, 0))
        files[f"tensor at offset 2^64-32 {order}"] = padded(
            one_tensor + p.tensor("t", [8], GGMLType.F32, 2**64 - 32))
        files[f"tensor name of 2^60 bytes {order}"] = padded(one_tensor + p.string("t", BIG))
        files[f"alignment 2^31 pushes the data past the end {order}"] = padded(
            p.header(1, 1) + p.kv("general.alignment", V.UINT32, p.u32(2**31))
            + p.tensor("t", [8], GGMLType.F32, 0))
        for alignment in (0, 3, 2**32 - 1):
            files[f"alignment {alignment} {order}"] = padded(
                p.header(0, 1) + p.kv("general.alignment", V.UINT32, p.u32(alignment)))
    v1 = Pack(1)
    files["v1 2^32-1 keys"] = padded(v1.header(0, 2**32 - 1))
    files["v1 2^32-1 tensors"] = padded(v1.header(2**32 - 1, 0))
    files["v1 string array of 2^32-1"] = padded(
        v1.header(0, 1) + v1.kv("k", V.ARRAY, v1.array_head(V.STRING, 2**32 - 1)))
    files["v1 tensor of 2^32-1 x 2^32-1"] = padded(
        v1.header(1, 0) + v1.tensor("t", [2**32 - 1] * 2, GGMLType.F32, 0))
    return files


_PROBE = textwrap.dedent("""
    import json, os, resource, sys, time
    import fastgguf

    def peak_rss():
        scale = 1 if sys.platform == "darwin" else 1024  # ru_maxrss is KiB on Linux, bytes on macOS
        return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * scale

    baseline = peak_rss()
    results = {}
    for path in sys.argv[1:]:
        start = time.perf_counter()
        try:
            fastgguf.open(path).close()
            outcome = "opened"
        except fastgguf.GGUFError:
            outcome = "GGUFError"
        except BaseException as exc:
            outcome = f"{type(exc).__name__}: {exc}"
        results[os.path.basename(path)] = (outcome, time.perf_counter() - start)
    print(json.dumps({"results": results, "extra_rss": peak_rss() - baseline}))
""")


def test_every_hostile_header_fails_fast_with_small_memory(tmp_path):
    paths = {}
    for i, (label, data) in enumerate(hostile_files().items()):
        path = tmp_path / f"hostile{i}.gguf"
        path.write_bytes(data)
        paths[path.name] = label
    proc = subprocess.run([sys.executable, "-c", _PROBE, *map(str, sorted(tmp_path.iterdir()))],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    report = json.loads(proc.stdout)
    outcomes = {paths[name]: outcome for name, (outcome, _) in report["results"].items()}
    assert outcomes == {label: "GGUFError" for label in paths.values()}
    slow = {paths[name]: t for name, (_, t) in report["results"].items() if t > SECONDS_PER_FILE}
    assert not slow
    assert report["extra_rss"] < EXTRA_RSS_BYTES


@pytest.mark.parametrize("depth", [1, 31])
def test_nesting_below_the_limit_still_reads(open_bytes, depth):
    p = Pack()
    f = open_bytes(p.header(0, 1) + p.kv("k", V.ARRAY, nested(p, depth)))
    value = f.metadata["k"]
    for _ in range(depth - 1):
        assert len(value) == 1
        value = value[0]
    assert len(value) == 1 and len(value[0]) == 0


def test_nesting_one_past_the_limit_is_rejected(gguf_path):
    p = Pack()
    with pytest.raises(GGUFError, match="nested"):
        fastgguf.open(gguf_path(p.header(0, 1) + p.kv("k", V.ARRAY, nested(p, 33))))


def test_a_million_strings_stay_lazy(gguf_path):
    n = 1_000_000
    p = Pack()
    body = p.kv("tokens", V.ARRAY, p.array_head(V.STRING, n) + p.string("x") * n)
    path = gguf_path(p.header(0, 1) + body)
    tracemalloc.start()
    try:
        with fastgguf.open(path) as f:
            tokens = f.metadata["tokens"]
            assert len(tokens) == n
            assert tokens[n - 1] == "x"
            _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    # One uint64 offset per string; a str object each (~50 bytes) would be 50 MB.
    assert peak < 8 * n + 4 * 2**20


def test_file_sized_claims_are_walked_not_trusted(gguf_path):
    """A count that does fit the file is walked element by element and fails where the bytes stop making sense."""
    p = Pack()
    data = p.header(0, 1) + p.kv("k", V.ARRAY, p.array_head(V.STRING, 1000)) + p.string("ok") * 10
    data += p.length(2**40)
    data = padded(data, 8 * 1000 + len(data))
    with pytest.raises(GGUFError, match="claims"):
        fastgguf.open(gguf_path(data))
