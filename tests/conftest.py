"""Shared fixtures: write GGUF bytes to a temporary file and open it."""

from __future__ import annotations

import contextlib
import json
import os
import pathlib
import subprocess
import sys

import numpy as np
import pytest

import fastgguf

#: The repository and its tests folder (test modules live one folder down, by package layer).
REPO = pathlib.Path(__file__).resolve().parent.parent
TESTS = REPO / "tests"


@pytest.fixture
def gguf_path(tmp_path):
    """Return a function that writes ``data`` (bytes or a GGUFWriter) to a fresh file and returns its path."""
    counter = iter(range(1_000_000))

    def write(data) -> str:
        if isinstance(data, fastgguf.GGUFWriter):
            data = data.to_bytes()
        path = tmp_path / f"file{next(counter)}.gguf"
        path.write_bytes(data)
        return str(path)

    return write


@pytest.fixture
def open_bytes(gguf_path):
    """Return a function that opens GGUF bytes (or a GGUFWriter) with fastgguf.open."""
    opened = []

    def open_(data) -> fastgguf.GGUFFile:
        f = fastgguf.open(gguf_path(data))
        opened.append(f)
        return f

    yield open_
    for f in opened:
        f.close()


@pytest.fixture(scope="session")
def gguf_py_write():
    """Return a function that writes out a ``gguf.GGUFWriter`` (header, key/values, tensors) quietly."""
    import logging

    def write(writer) -> None:
        logging.disable(logging.INFO)  # gguf-py logs its plan
        try:
            writer.write_header_to_file()
            writer.write_kv_data_to_file()
            writer.write_tensors_to_file()
            writer.close()
        finally:
            logging.disable(logging.NOTSET)

    return write


def _read_value(value) -> None:
    """Touch every byte a metadata value refers to, through every accessor of its kind."""
    from fastgguf.reader import ArrayOfArrays, StringArray

    if isinstance(value, StringArray):
        items = value.tolist()
        assert len(items) == len(value)
        assert list(value) == items
        if items:
            assert value[-1] == items[-1]
            assert value.raw(0).decode("utf-8", "surrogateescape") == items[0]
            assert value[1:] == items[1:]
    elif isinstance(value, ArrayOfArrays):
        for i in range(len(value)):
            value.element_type(i)
            _read_value(value[i])
    elif isinstance(value, np.ndarray):
        value.tobytes()
    else:
        assert isinstance(value, (int, float, str)), type(value)
        repr(value)


def read_everything(f) -> None:
    """Read every key, value (strings, sub-arrays, raw bytes) and tensor byte of an open model.

    The one "read the whole file" helper of the suite (the fuzz harness builds on it); plain
    function so that scripts outside pytest can import it too. Raises whatever reading raises.
    """
    metadata = f.metadata
    for key in metadata:
        _read_value(metadata[key])
        metadata.value_type(key)
        metadata.element_type(key)
        metadata.offset(key)
        if metadata.value_type(key) == fastgguf.GGUFValueType.STRING:
            metadata.raw(key)
    repr(f)
    for tensor in f.tensors.values():
        repr(tensor)
        raw = tensor.raw
        assert raw.nbytes == tensor.nbytes
        raw.tobytes()


@pytest.fixture(name="read_everything")
def read_everything_fixture():
    """:func:`read_everything` as a fixture."""
    return read_everything


# --- kernel builds and bit-exact comparisons (shared by the dequantize/quantize tests) ----------


@pytest.fixture(params=fastgguf.dequant.available_cpu_paths())
def cpu_path(request):
    """Run the test once with each kernel build this CPU can run, restoring the original afterwards.

    Only builds from ``dequant.available_cpu_paths()``: importing one the CPU cannot run crashes.
    """
    from fastgguf import dequant

    before = dequant.cpu_path()
    dequant.set_cpu_path(request.param)
    yield request.param
    dequant.set_cpu_path(before)


def kernel_modules():
    """The imported kernel modules this CPU can run (never any other), slowest first."""
    return list(fastgguf.dequant.kernel_modules().values())


def same_bits(a, b) -> bool:
    """Whether two float32 arrays have the same shape and the same bits (NaN payloads included)."""
    a, b = np.ascontiguousarray(a, np.float32), np.ascontiguousarray(b, np.float32)
    return a.shape == b.shape and np.array_equal(a.view(np.uint32), b.view(np.uint32))


def assert_same_bits(actual, expected) -> None:
    """Assert float32 ``actual`` and ``expected`` hold the same values, bit for bit, in C order
    (shapes may differ, sizes not), naming the first difference."""
    import numpy as np

    a = np.ascontiguousarray(actual, dtype=np.float32).reshape(-1)
    e = np.ascontiguousarray(expected, dtype=np.float32).reshape(-1)
    assert a.size == e.size, f"{a.size} values, expected {e.size}"
    differ = np.flatnonzero(a.view(np.uint32) != e.view(np.uint32))
    assert differ.size == 0, (
        f"{differ.size} of {a.size} values differ; first at {differ[0]}: "
        f"got {a[differ[0]]!r} ({a.view(np.uint32)[differ[0]]:#010x}), "
        f"expected {e[differ[0]]!r} ({e.view(np.uint32)[differ[0]]:#010x})"
    )


@contextlib.contextmanager
def argument_error(kind: type[Exception] = ValueError, match: str | None = None):
    """``pytest.raises(kind)`` that also checks the error is not a GGUFError: a caller's mistake is not bad file data."""
    with pytest.raises(kind, match=match) as info:
        yield info
    assert not isinstance(info.value, fastgguf.GGUFError), f"{info.value!r} is an argument error, not a file's"


# The child imports the same fastgguf as this process (the source tree in development, site-packages in CI).
_CHILD_RSS = """
import json, resource, sys
import fastgguf.cli
before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
status = fastgguf.cli.main(sys.argv[1:])
after = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
print(json.dumps({"status": status, "before_kib": before, "after_kib": after}))
"""


def cli_peak_rss_rise(args: list[str], timeout: float = 600) -> int:
    """Bytes the peak RSS of a child process running ``fastgguf ARGS`` rose by over the command (after imports).

    A child process, so that this test process's own memory does not mask it. Linux only (``ru_maxrss``
    units and madvise behaviour); skips elsewhere.
    """
    if not sys.platform.startswith("linux"):
        pytest.skip("ru_maxrss units and madvise behaviour checked on Linux only")
    src = os.path.dirname(os.path.dirname(os.path.abspath(fastgguf.__file__)))
    env = dict(os.environ, PYTHONPATH=src + os.pathsep + os.environ.get("PYTHONPATH", ""))
    result = subprocess.run([sys.executable, "-c", _CHILD_RSS, *args], capture_output=True, text=True, env=env,
                            timeout=timeout)
    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout.splitlines()[-1])
    assert report["status"] == 0, result.stderr
    return (report["after_kib"] - report["before_kib"]) * 1024
