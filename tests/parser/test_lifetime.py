"""What handed-out arrays may outlive: close(), the GGUFFile itself, other threads, a truncated file."""

from __future__ import annotations

import gc
import os
import signal
import subprocess
import sys
import textwrap
import threading
import weakref

import numpy as np
import pytest

import fastgguf
from fastgguf import GGMLType, GGUFError, GGUFWriter

TOKENS = [f"tok{i}" for i in range(10_000)]
WEIGHT = np.arange(64 * 1024, dtype=np.float32).reshape(64, 1024)
Q8_ROWS = 256


def q8_0_blocks(n_rows: int) -> bytes:
    # d = 1.0 (fp16 0x3C00) and quants 0..31 in every block: easy to check after dequantizing.
    block = b"\x00\x3c" + bytes(range(32))
    return block * (n_rows * 1024 // 32)


def expected_q8_0(n_rows: int) -> np.ndarray:
    return np.tile(np.arange(32, dtype=np.float32), n_rows * 32).reshape(n_rows, 1024)


@pytest.fixture
def model_path(gguf_path):
    w = GGUFWriter()
    w.add("general.architecture", "llama")
    w.add("tokenizer.ggml.tokens", TOKENS)
    w.add("scores", np.linspace(0, 1, 100, dtype=np.float32))
    w.add("nested", [[1, 2], [3]])
    w.add_tensor("weight", WEIGHT)
    w.add_tensor("q8", q8_0_blocks(Q8_ROWS), GGMLType.Q8_0, (Q8_ROWS, 1024))
    return gguf_path(w)


def grab_everything(f: fastgguf.GGUFFile) -> dict:
    return {
        "raw": f.tensors["weight"].raw,
        "info": f.tensors["q8"],
        "scores": f.metadata["scores"],
        "tokens": f.metadata["tokenizer.ggml.tokens"],
        "nested": f.metadata["nested"],
        "metadata": f.metadata,
    }


def check_everything(held: dict) -> None:
    assert held["raw"].tobytes() == WEIGHT.tobytes()
    assert np.array_equal(held["info"].dequantize(), expected_q8_0(Q8_ROWS))
    assert np.array_equal(held["scores"], np.linspace(0, 1, 100, dtype=np.float32))
    assert held["tokens"].tolist() == TOKENS
    assert held["tokens"][-1] == TOKENS[-1] and held["tokens"].raw(5) == b"tok5"
    assert [list(a) for a in held["nested"]] == [[1, 2], [3]]
    assert held["metadata"]["general.architecture"] == "llama"


def mapped_paths() -> str:
    with open("/proc/self/maps") as maps:
        return maps.read()


linux_only = pytest.mark.skipif(not os.path.exists("/proc/self/maps"), reason="needs /proc/self/maps")


def test_everything_handed_out_survives_close(model_path):
    f = fastgguf.open(model_path)
    held = grab_everything(f)
    f.close()
    assert f.closed
    with pytest.raises(GGUFError, match="closed"):
        f.metadata
    check_everything(held)


def test_everything_handed_out_survives_the_file_object(model_path):
    f = fastgguf.open(model_path)
    held = grab_everything(f)
    alive = weakref.ref(f)
    del f
    gc.collect()
    assert alive() is None
    check_everything(held)


@linux_only
def test_the_map_goes_when_the_last_view_goes(model_path):
    f = fastgguf.open(model_path)
    raw = f.tensors["weight"].raw
    f.close()
    gc.collect()
    assert model_path in mapped_paths()
    del raw
    gc.collect()
    assert model_path not in mapped_paths()


@linux_only
def test_close_unmaps_at_once_when_nothing_is_held(model_path):
    f = fastgguf.open(model_path)
    f.metadata["general.architecture"]
    assert model_path in mapped_paths()
    f.close()
    assert model_path not in mapped_paths()


def test_dequantizing_threads_outlive_close_and_collection(model_path):
    f = fastgguf.open(model_path)
    info, tokens = f.tensors["q8"], f.metadata["tokenizer.ggml.tokens"]
    expected = expected_q8_0(Q8_ROWS)
    failures, started = [], threading.Barrier(5)

    def dequantize_repeatedly():
        started.wait()
        for _ in range(20):
            if not np.array_equal(info.dequantize(threads=2), expected):
                failures.append("wrong values")

    def decode_repeatedly():
        started.wait()
        for _ in range(20):
            if list(tokens) != TOKENS:
                failures.append("wrong strings")

    workers = [threading.Thread(target=dequantize_repeatedly) for _ in range(2)]
    workers += [threading.Thread(target=decode_repeatedly) for _ in range(2)]
    for worker in workers:
        worker.start()
    started.wait()
    f.close()
    del f
    gc.collect()
    for worker in workers:
        worker.join()
    assert failures == []


_TRUNCATE = textwrap.dedent("""
    import os, sys
    import numpy as np
    import fastgguf
    path, what = sys.argv[1], sys.argv[2]
    f = fastgguf.open(path)
    tensor = f.tensors["weight"]
    raw = tensor.raw
    q8 = f.tensors["q8"]
    q8_raw = q8.raw.reshape(q8.shape[0], -1)
    tokens = f.metadata["tokenizer.ggml.tokens"]
    os.truncate(path, 4096)
    try:
        if what == "dequantize":
            tensor.dequantize()
        elif what == "strings":
            tokens.tolist()
        elif what == "metadata":
            f.metadata["scores"]
        elif what == "dequantize a view":
            fastgguf.dequantize(raw, tensor.type, tensor.shape, threads=2)
        elif what == "matmul a view":
            fastgguf.matmul(np.ones(1024, np.float32), q8_raw, q8.type, threads=2)
        elif what == "integer matmul a view":
            fastgguf.matmul(np.ones(1024, np.float32), q8_raw, q8.type, threads=2, exact=False)
        elif what == "raw view":
            raw.sum()
    except fastgguf.GGUFError as exc:
        print("GGUFError:", exc)
        sys.exit(3)
    print("no error")
""")


def run_after_truncation(path, what) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", _TRUNCATE, path, what], capture_output=True, text=True,
                          timeout=60)


@linux_only
@pytest.mark.parametrize("what", ["dequantize", "strings", "metadata"])
def test_reads_through_the_reader_after_truncation_raise(model_path, what):
    proc = run_after_truncation(model_path, what)
    assert proc.returncode == 3, proc.stdout + proc.stderr
    assert "shrank" in proc.stdout


@linux_only
@pytest.mark.parametrize("what", ["dequantize a view", "matmul a view", "integer matmul a view"])
def test_a_kernel_reading_a_truncated_map_raises_instead_of_dying(model_path, what):
    """No size check up front here: the SIGBUS inside the kernel itself, on whichever of its
    worker threads it happens, is turned into GGUFError."""
    proc = run_after_truncation(model_path, what)
    assert proc.returncode == 3, proc.stdout + proc.stderr
    assert "SIGBUS" in proc.stdout


@linux_only
def test_a_numpy_view_read_after_truncation_dies_with_sigbus(model_path):
    """Documented limit (README, Safety): numpy reads a raw view directly; nothing can intercept it."""
    proc = run_after_truncation(model_path, "raw view")
    # Under AddressSanitizer (the debug build), ASan catches the SIGBUS and exits 1 with a report.
    died_under_asan = proc.returncode == 1 and "AddressSanitizer: BUS" in proc.stderr
    assert proc.returncode == -signal.SIGBUS or died_under_asan, proc.stdout + proc.stderr
