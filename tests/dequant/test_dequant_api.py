"""fastgguf.dequantize: rows, out, threads, byte order, input kinds, errors, CPU path choice."""

from __future__ import annotations

import mmap
import os
import subprocess
import sys

import numpy as np
import pytest

import fastgguf
from fastgguf import GGMLType, GGUFError, _backend, dequant, dequantize
from fastgguf.types import TYPE_TRAITS

from conftest import argument_error, same_bits
from dequant_refs import ELEMENT_DTYPES, ENGINE_TYPES, random_tensor_bytes, reference

T = GGMLType
SAMPLE_TYPES = [T.F32, T.F16, T.BF16, T.I32, T.Q4_0, T.Q5_1, T.Q8_1, T.Q2_K, T.Q6_K, T.Q8_K]


def tensor(qtype, shape, seed=0):
    n = int(np.prod(shape))
    return random_tensor_bytes(qtype, n, np.random.default_rng(seed))


@pytest.fixture
def small_chunks(monkeypatch):
    """Make even small tensors split across threads, so the threaded paths run in tests."""
    monkeypatch.setattr(dequant, "_MIN_ELEMENTS_PER_THREAD", 256)
    monkeypatch.setattr(dequant, "_SPLIT_GRANULE", 256)


# --- public surface ------------------------------------------------------------------------


def test_exported_from_package():
    assert fastgguf.dequantize is dequantize
    assert "dequantize" in fastgguf.__all__


def test_supported_types_cover_the_engine():
    supported = dequant.supported_types()
    assert set(ENGINE_TYPES) <= set(supported)
    assert all(dequant.has_kernel(t) for t in ENGINE_TYPES)
    assert all(dequant.has_kernel(int(t)) for t in ENGINE_TYPES)
    assert not dequant.has_kernel(4)  # removed type
    assert not dequant.has_kernel(1000)
    assert all(dequant.has_byteswap(t) for t in (T.F32, T.F16, T.BF16, T.F64, T.I8, T.I16, T.I32, T.I64))
    assert not dequant.has_byteswap(4)


def test_cpu_path_is_the_best_available():
    paths = dequant.available_cpu_paths()
    assert paths[0] == "portable"
    assert dequant.cpu_path() in paths
    if "FASTGGUF_CPU" not in os.environ:
        assert dequant.cpu_path() == paths[-1]


def test_set_cpu_path_rejects_unknown():
    with pytest.raises(ValueError, match="not available"):
        dequant.set_cpu_path("sse9")


@pytest.mark.parametrize("path", dequant.available_cpu_paths())
def test_env_var_selects_path(path):
    code = "from fastgguf import dequant; print(dequant.cpu_path())"
    env = dict(os.environ, FASTGGUF_CPU=path)
    done = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True)
    assert done.stdout.strip() == path


def test_env_var_unknown_is_an_error():
    code = "from fastgguf import dequant; print(dequant.cpu_path())"
    env = dict(os.environ, FASTGGUF_CPU="nonsense")
    done = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True)
    assert done.returncode != 0
    assert "RuntimeError: FASTGGUF_CPU='nonsense' is not a kernel build" in done.stderr


# --- shapes and inputs ---------------------------------------------------------------------


@pytest.mark.parametrize("qtype", SAMPLE_TYPES, ids=lambda t: t.name)
def test_default_shape_is_1d(qtype):
    block, size = TYPE_TRAITS[qtype]
    raw = tensor(qtype, (5 * block,))
    assert dequantize(raw, qtype).shape == (5 * block,)


@pytest.mark.parametrize("kind", ["bytes", "bytearray", "memoryview", "uint8", "typed", "mmap"])
def test_input_kinds_are_read_in_place(kind):
    raw = tensor(T.Q4_0, (4, 64))
    expected = dequantize(raw, T.Q4_0, (4, 64))
    if kind == "bytes":
        data = raw.tobytes()
    elif kind == "bytearray":
        data = bytearray(raw.tobytes())
    elif kind == "memoryview":
        data = memoryview(raw.tobytes())
    elif kind == "uint8":
        data = raw
    elif kind == "typed":
        data = raw.view(np.uint16)  # any C-contiguous array is taken as its bytes
    else:
        data = mmap.mmap(-1, raw.size)
        data[:] = raw.tobytes()
    assert same_bits(dequantize(data, T.Q4_0, (4, 64)), expected)


def test_gguf_type_as_int_and_enum():
    raw = tensor(T.Q8_0, (64,))
    assert same_bits(dequantize(raw, 8), dequantize(raw, T.Q8_0))


def test_empty_tensor():
    assert dequantize(b"", T.Q4_0, (0, 32)).shape == (0, 32)
    assert dequantize(b"", T.F32).shape == (0,)


# --- rows ----------------------------------------------------------------------------------


@pytest.mark.parametrize("qtype", SAMPLE_TYPES, ids=lambda t: t.name)
@pytest.mark.parametrize(
    "rows",
    [slice(None), slice(2, 5), slice(5, 2), slice(None, None, 3), slice(-3, None), slice(None, None, -2),
     [0], [6, 0, 3, 3], [-1, -7], np.array([1, 2], dtype=np.int32), np.array([], dtype=np.int64), 4],
    ids=lambda r: repr(r).replace(" ", ""),
)
def test_rows_equal_rows_of_full_result(qtype, rows):
    block = TYPE_TRAITS[qtype].block_size
    shape = (7, 2 * block)
    raw = tensor(qtype, shape, seed=3)
    full = dequantize(raw, qtype, shape)
    picked = dequantize(raw, qtype, shape, rows=rows)
    expected = full[[rows] if isinstance(rows, int) else rows]
    assert picked.shape == expected.shape
    assert same_bits(picked, expected)


def test_rows_over_flattened_leading_dims():
    shape = (2, 3, 64)
    raw = tensor(T.Q4_1, shape)
    full = dequantize(raw, T.Q4_1, shape).reshape(6, 64)
    assert same_bits(dequantize(raw, T.Q4_1, shape, rows=[5, 0]), full[[5, 0]])


def test_rows_read_only_the_requested_bytes():
    # Rows 1 and 3 of a 4-row Q8_0 tensor whose other rows are NaN scales: untouched bytes
    # cannot leak into the result.
    block = TYPE_TRAITS[T.Q8_0]
    raw = tensor(T.Q8_0, (4, 32), seed=9).reshape(4, block.type_size)
    raw[[0, 2], 0:2] = np.array([0x7E00], "<u2").view(np.uint8)  # NaN scale
    result = dequantize(raw.reshape(-1), T.Q8_0, (4, 32), rows=[1, 3])
    assert np.isfinite(result).all()
    assert same_bits(result, reference(T.Q8_0, raw[[1, 3]].reshape(-1)).reshape(2, 32))


@pytest.mark.parametrize("rows", [[7], [-8], [0, 100]])
def test_rows_out_of_range(rows):
    raw = tensor(T.Q4_0, (7, 32))
    with pytest.raises(IndexError, match="out of range"):
        dequantize(raw, T.Q4_0, (7, 32), rows=rows)


@pytest.mark.parametrize("rows", [[0.5], np.array([True, False]), ["a"]])
def test_rows_must_be_integers(rows):
    raw = tensor(T.Q4_0, (2, 32))
    with pytest.raises(TypeError):
        dequantize(raw, T.Q4_0, (2, 32), rows=rows)


def test_embedding_lookup_touches_only_its_rows():
    # An embedding table far bigger than the rows asked for: only the 8 rows are allocated.
    shape = (4096, 640)
    raw = np.zeros(4096 * 640 // 32 * 18, dtype=np.uint8)
    result = dequantize(raw, T.Q4_0, shape, rows=np.arange(8) * 500)
    assert result.shape == (8, 640)
    owner = result if result.base is None else result.base
    assert owner.nbytes <= 8 * 640 * 4 + 64


@pytest.mark.parametrize("shape", [(0,), (32,), (3, 64), (2, 3, 1024)])
def test_allocated_output_is_cache_line_aligned(shape):
    raw = tensor(T.Q8_0, shape)
    result = dequantize(raw, T.Q8_0, shape)
    assert result.shape == shape and result.flags.c_contiguous and result.flags.writeable
    assert result.size == 0 or result.ctypes.data % 64 == 0


# --- out -------------------------------------------------------------------------------------


@pytest.mark.parametrize("qtype", SAMPLE_TYPES, ids=lambda t: t.name)
def test_out_is_filled_and_returned(qtype):
    block = TYPE_TRAITS[qtype].block_size
    shape = (3, 4 * block)
    raw = tensor(qtype, shape, seed=5)
    out = np.full(shape, np.nan, dtype=np.float32)
    result = dequantize(raw, qtype, shape, out=out)
    assert result is out
    assert same_bits(out, reference(qtype, raw).reshape(shape))


def test_out_with_rows_and_any_shape():
    raw = tensor(T.Q4_K, (4, 256))
    out = np.full((2, 16, 16), np.nan, dtype=np.float32)
    result = dequantize(raw, T.Q4_K, (4, 256), rows=[3, 1], out=out)
    assert result is out
    assert same_bits(out.reshape(2, 256), dequantize(raw, T.Q4_K, (4, 256))[[3, 1]])


@pytest.mark.parametrize(
    "make_out, message",
    [
        (lambda: np.empty(64, np.float64), "dtype float32"),
        (lambda: np.empty((64, 2), np.float32)[:, 0], "C-contiguous"),
        (lambda: np.empty(63, np.float32), "63 elements"),
        (lambda: np.empty(65, np.float32), "65 elements"),
        (lambda: np.frombuffer(bytes(256), np.float32), "read-only"),
        (lambda: [0.0] * 64, "numpy array"),
    ],
    ids=["dtype", "strided", "short", "long", "readonly", "list"],
)
def test_bad_out(make_out, message):
    raw = tensor(T.Q4_0, (64,))
    with pytest.raises((TypeError, ValueError), match=message) as raised:
        dequantize(raw, T.Q4_0, (64,), out=make_out())
    assert not isinstance(raised.value, GGUFError)  # an argument error, not a file's


def test_out_overlapping_the_data():
    buffer = np.zeros(64 * 4, dtype=np.uint8)
    raw = buffer[: 64 // 32 * 18]
    with pytest.raises(ValueError, match="overlaps") as raised:
        dequantize(raw, T.Q4_0, (64,), out=buffer.view(np.float32))
    assert not isinstance(raised.value, GGUFError)


# --- threads -------------------------------------------------------------------------------


@pytest.mark.parametrize("qtype", ENGINE_TYPES, ids=lambda t: t.name)
def test_threads_give_identical_bits(qtype, small_chunks):
    block = TYPE_TRAITS[qtype].block_size
    shape = (6, 5 * max(block, 256))
    raw = tensor(qtype, shape, seed=11)
    one = dequantize(raw, qtype, shape, threads=1)
    for n in (2, 3, 8):
        assert same_bits(dequantize(raw, qtype, shape, threads=n), one)
    rows = [5, 0, 2, 2, 4, 1, 3]
    assert same_bits(dequantize(raw, qtype, shape, rows=rows, threads=4), one[rows])
    assert same_bits(dequantize(raw, qtype, shape, rows=slice(1, 5), threads=3), one[1:5])


@pytest.mark.parametrize("own_pool", [True, False])
def test_threads_use_the_pool(small_chunks, monkeypatch, own_pool):
    """With the kernels' own pool (POSIX): one call, told the thread count; elsewhere (as on a
    build without it) the chunks go to Python's pool and the calling thread runs the last one."""
    kernels = _backend.kernels()
    if not own_pool:
        monkeypatch.setattr(kernels, "has_thread_pool", lambda: False)
    elif not kernels.has_thread_pool():
        pytest.skip("this build has no pool of its own")
    raw = tensor(T.Q8_0, (4096,))
    if own_pool:
        calls = []
        real_into = kernels.dequantize_into
        monkeypatch.setattr(_backend, "_executor", lambda workers: pytest.fail("Python's pool used"))
        monkeypatch.setattr(kernels, "dequantize_into", lambda *args: calls.append(args[7]) or real_into(*args))
        dequantize(raw, T.Q8_0, threads=4)
        assert calls == [4] and kernels.pool_workers() >= 3
        calls.clear()
        dequantize(raw, T.Q8_0, threads=1)
        assert calls == [1]
        return
    submitted = []
    real = _backend._executor

    def spy(workers):
        submitted.append(workers)
        return real(workers)

    monkeypatch.setattr(_backend, "_executor", spy)
    dequantize(raw, T.Q8_0, threads=4)
    assert submitted and max(submitted) == 3  # the calling thread runs the fourth chunk
    submitted.clear()
    dequantize(raw, T.Q8_0, threads=1)
    assert submitted == []


def test_small_inputs_stay_on_the_calling_thread(monkeypatch):
    monkeypatch.setattr(_backend, "_executor", lambda workers: pytest.fail("pool used for a tiny tensor"))
    dequantize(tensor(T.Q4_0, (1024,)), T.Q4_0, threads=8)


def test_default_threads_setting():
    before = _backend._default_threads
    try:
        fastgguf.set_num_threads(3)
        assert fastgguf.get_num_threads() == 3
        assert dequant.get_num_threads() == 3  # the old names, kept for one release, are the same functions
        fastgguf.set_num_threads(None)
        assert 1 <= fastgguf.get_num_threads() <= (os.cpu_count() or 1)
    finally:
        _backend._default_threads = before


@pytest.mark.parametrize("threads, error", [(0, ValueError), (-2, ValueError), (1.5, TypeError), ("2", TypeError)])
def test_bad_threads(threads, error):
    with pytest.raises(error):
        dequantize(tensor(T.Q4_0, (32,)), T.Q4_0, threads=threads)


# --- byte order ------------------------------------------------------------------------------


@pytest.mark.parametrize("qtype", list(ELEMENT_DTYPES), ids=lambda t: t.name)
def test_big_endian_plain_types(qtype, small_chunks):
    shape = (3, 3000)
    raw = tensor(qtype, shape, seed=2)
    width = ELEMENT_DTYPES[qtype].itemsize
    swapped = raw.reshape(-1, width)[:, ::-1].copy().reshape(-1)
    expected = dequantize(raw, qtype, shape)
    assert same_bits(dequantize(swapped, qtype, shape, byteorder=">", threads=1), expected)
    assert same_bits(dequantize(swapped, qtype, shape, byteorder=">", threads=3), expected)
    assert same_bits(dequantize(swapped, qtype, shape, byteorder=">", rows=[2, 0]), expected[[2, 0]])


def test_bad_byteorder():
    with pytest.raises(ValueError, match="byteorder"):
        dequantize(b"\0\0", T.F16, byteorder="=")


# --- errors ----------------------------------------------------------------------------------


@pytest.mark.parametrize("type_id, word", [(4, "removed"), (5, "removed"), (31, "removed"), (99, "unknown"), (-1, "unknown")])
def test_unknown_and_removed_types(type_id, word):
    with argument_error(ValueError, match=word):
        dequantize(bytes(18), type_id)


def test_type_by_id_or_name():
    block = bytes([0, 0x3C]) + bytes(range(16))  # d = 1
    np.testing.assert_array_equal(dequantize(block, "q4_0"), dequantize(block, GGMLType.Q4_0))
    with pytest.raises(TypeError):
        dequantize(block, 2.0)
    with argument_error(ValueError, match="unknown ggml tensor type name 'Q4_9'"):
        dequantize(block, "Q4_9")


def test_type_without_kernel_names_itself(monkeypatch):
    class NoQ6K:
        def __getattr__(self, name):
            return getattr(_backend.kernel_modules()["portable"], name)

        @staticmethod
        def has_kernel(type_id):
            return type_id != int(T.Q6_K)

    monkeypatch.setattr(_backend, "_kernels", NoQ6K())
    with pytest.raises(NotImplementedError, match="Q6_K"):
        dequantize(bytes(210), T.Q6_K)
    assert not dequant.has_kernel(T.Q6_K)


@pytest.mark.parametrize(
    "qtype, n_bytes, shape, message",
    [
        (T.Q4_0, 36, (32,), "takes 18 bytes, got 36"),
        (T.Q4_0, 17, None, "whole number"),
        (T.Q4_0, 18, (2, 16), "multiple of the Q4_0 block size 32"),
        (T.Q6_K, 210, (128,), "multiple of the Q6_K block size 256"),
        (T.F32, 12, (2, 2), "takes 16 bytes, got 12"),
        (T.F16, 3, None, "whole number"),
        (T.Q8_1, 40, (32,), "takes 36 bytes, got 40"),
        (T.Q4_0, 18, (-1, 32), "negative"),
    ],
)
def test_wrong_sizes(qtype, n_bytes, shape, message):
    with argument_error(ValueError, match=message):
        dequantize(bytes(n_bytes), qtype, shape)


def test_non_contiguous_data():
    raw = np.zeros((36, 2), dtype=np.uint8)[:, 0]
    with argument_error(ValueError, match="contiguous"):
        dequantize(raw, T.Q4_0)


def test_not_a_buffer():
    with pytest.raises(TypeError):
        dequantize(12345, T.Q4_0)


# --- the raw module call checks its arguments too --------------------------------------------


@pytest.mark.parametrize("path", dequant.available_cpu_paths())
def test_module_level_checks(path):
    module = dequant.kernel_modules()[path]
    out = np.empty(64, np.float32)
    with pytest.raises(ValueError, match="source has"):
        module.dequantize_into(np.zeros(35, np.uint8), out, int(T.Q4_0))
    with pytest.raises(ValueError, match="multiple of the block size"):
        module.dequantize_into(np.zeros(36, np.uint8), np.empty(40, np.float32), int(T.Q4_0))
    with pytest.raises(ValueError, match="outside"):
        module.dequantize_into(np.zeros(36, np.uint8), out, int(T.Q4_0), np.array([0, 2], np.int64), 32)
    with pytest.raises(ValueError, match="unknown"):
        module.dequantize_into(np.zeros(36, np.uint8), out, 4)


# --- streaming (non-temporal) stores ---------------------------------------------------------


@pytest.mark.parametrize("qtype", ENGINE_TYPES, ids=lambda t: t.name)
def test_streaming_stores_give_identical_bits(qtype, monkeypatch):
    block = TYPE_TRAITS[qtype].block_size
    shape = (3, block * (4099 if block == 1 else 37))  # not a multiple of the 4096-float stage
    raw = tensor(qtype, shape, seed=21)
    expected = dequantize(raw, qtype, shape, threads=1)
    monkeypatch.setattr(dequant, "_STREAM_MIN_BYTES", 0)
    assert same_bits(dequantize(raw, qtype, shape, threads=1), expected)
    # an output that starts 4 bytes past any alignment the allocator gave
    backing = np.full(expected.size + 1, np.nan, dtype=np.float32)
    out = backing[1:].reshape(shape)
    assert dequantize(raw, qtype, shape, out=out) is out
    assert same_bits(out, expected)
    assert np.isnan(backing[0])
    assert same_bits(dequantize(raw, qtype, shape, rows=[2, 0]), expected[[2, 0]])


@pytest.mark.parametrize("path", dequant.available_cpu_paths())
def test_streaming_with_byte_swapping(path, monkeypatch):
    module = dequant.kernel_modules()[path]
    values = np.random.default_rng(4).standard_normal(10_001).astype(np.float16)
    out = np.empty(values.size, np.float32)
    module.dequantize_into(values.byteswap().view(np.uint8), out, int(T.F16), None, 0, True, True)
    assert same_bits(out, values.astype(np.float32))


# --- memory ----------------------------------------------------------------------------------


@pytest.mark.parametrize("threads", [1, 4])
def test_whole_tensor_allocates_only_its_output(threads, small_chunks):
    import tracemalloc

    shape = (64, 4096)
    raw = tensor(T.Q4_K, shape)
    dequantize(raw, T.Q4_K, shape, threads=threads)  # warm up: pool threads, imports
    tracemalloc.start()
    try:
        tracemalloc.reset_peak()
        result = dequantize(raw, T.Q4_K, shape, threads=threads)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert result.nbytes <= peak <= result.nbytes + (64 << 10)


def test_rows_allocate_only_the_rows():
    import tracemalloc

    shape = (16384, 640)
    raw = np.zeros(16384 * 640 // 32 * 18, dtype=np.uint8)
    dequantize(raw, T.Q4_0, shape, rows=[0])
    tracemalloc.start()
    try:
        tracemalloc.reset_peak()
        result = dequantize(raw, T.Q4_0, shape, rows=np.arange(8) * 2000)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert result.shape == (8, 640)
    assert peak <= result.nbytes + (16 << 10)


def test_zero_dim_tensor_keeps_its_empty_shape(tmp_path):
    """A tensor with no dimensions is one element; dequantizing it gives a 0-d array, like TensorInfo.shape."""
    import struct

    import fastgguf

    name = b"scalar"
    header = (b"GGUF" + struct.pack("<IQQ", 3, 1, 0) + struct.pack("<Q", len(name)) + name
              + struct.pack("<IIQ", 0, 0, 0))  # n_dims 0, type F32, offset 0
    header += b"\0" * (-len(header) % 32)
    path = tmp_path / "scalar.gguf"
    path.write_bytes(header + np.float32(2.5).tobytes())
    with fastgguf.open(path) as f:
        info = f.tensors["scalar"]
        assert info.shape == () and info.n_elements == 1
        value = info.dequantize()
        assert value.shape == () and value == np.float32(2.5)
        assert info.dequantize(rows=[0]).shape == (1, 1)


@pytest.mark.parametrize("qtype", [T.F16, T.BF16], ids=lambda t: t.name)
@pytest.mark.parametrize("offset", [0, 1, 5])
def test_streamed_16_bit_patterns_keep_every_bit(qtype, offset, cpu_path, monkeypatch):
    # F16/BF16 stream straight from registers (no staging): every pattern, NaN payloads included,
    # at any output alignment.
    patterns = np.arange(1 << 16, dtype=np.uint32).astype("<u2")
    expected = dequantize(patterns.view(np.uint8), qtype, threads=1)
    monkeypatch.setattr(dequant, "_STREAM_MIN_BYTES", 0)
    backing = np.full(patterns.size + 8, np.nan, np.float32)
    out = backing[offset : offset + patterns.size]
    dequantize(patterns.view(np.uint8), qtype, out=out, threads=1)
    assert same_bits(out, expected)
    ref = patterns.view(np.float16).astype(np.float32) if qtype == T.F16 else (patterns.astype(np.uint32) << 16).view(np.float32)
    assert same_bits(out, ref)


def test_runtime_settings_at_the_top_level():
    assert fastgguf.cpu_path() in fastgguf.available_cpu_paths()
    assert fastgguf.cpu_path is dequant.cpu_path and fastgguf.set_num_threads is dequant.set_num_threads
    with pytest.raises(ValueError, match="not available"):
        fastgguf.set_cpu_path("sse9")


@pytest.mark.parametrize("name, answer", [("Q4_0", True), ("q8_0", True), ("Q4_9", False), (9999, False)])
def test_type_questions_answer_for_names_too(name, answer):
    from fastgguf import quant

    assert dequant.has_kernel(name) is answer
    assert dequant.has_byteswap(name) is answer
    assert quant.has_quantize(name) is answer
