"""fastgguf.quantize: ggml's bytes for every type with a quantizer, on every CPU path and thread count.

Generic tests run over ``QUANTIZE_TYPES``; a quantizer lands with its type added there and its
reference vectors in ``tests/data/quantize/<TYPE>.npz`` (written by ``tools/gen_quantize_vectors.py``
from ggml itself; format in that script's docstring).
"""

from __future__ import annotations

import pathlib

import numpy as np
import pytest

import fastgguf
from fastgguf import GGMLType as T, dequant, dequantize, quantize
from fastgguf.types import TYPE_TRAITS

#: Every type fastgguf.quantize produces. Add a type here when its quantizer lands.
QUANTIZE_TYPES = [T.F32, T.F16, T.BF16]

DATA = pathlib.Path(__file__).resolve().parent / "data" / "quantize"
GGUF_PY_QUANTIZERS = {T.F32, T.F16, T.BF16, T.Q4_0, T.Q4_1, T.Q5_0, T.Q5_1, T.Q8_0, T.TQ1_0, T.TQ2_0, T.MXFP4}
IMATRIX_TYPES = [T.IQ2_XXS, T.IQ2_XS, T.IQ1_S]

type_ids = pytest.mark.parametrize("qtype", QUANTIZE_TYPES, ids=lambda t: t.name)
BLOCK_TYPES = [t for t in QUANTIZE_TYPES if TYPE_TRAITS[t].block_size > 1]


def vectors(qtype: T) -> dict:
    with np.load(DATA / f"{qtype.name}.npz") as f:
        return {k: f[k] for k in f.files}


def sample(qtype: T, n_rows: int = 6, blocks_per_row: int = 3, seed: int = 0) -> np.ndarray:
    n = max(256, TYPE_TRAITS[qtype].block_size) * blocks_per_row
    rng = np.random.default_rng(seed)
    return (rng.standard_normal((n_rows, n)) * rng.uniform(0.01, 10, (n_rows, 1))).astype(np.float32)


def row_bytes(qtype: T, n_per_row: int) -> int:
    block_size, type_size = TYPE_TRAITS[qtype]
    return n_per_row // block_size * type_size


def test_every_listed_type_is_supported():
    assert set(QUANTIZE_TYPES) == set(quantize.supported_types())
    assert all(quantize.has_quantize(t) for t in QUANTIZE_TYPES)
    assert not quantize.has_quantize(T.I32) and not quantize.has_quantize(4) and not quantize.has_quantize("F16")
    assert fastgguf.quantize is quantize and "quantize" in fastgguf.__all__


# --- exact bytes -------------------------------------------------------------------------------


@type_ids
def test_matches_ggml_vectors(qtype, cpu_path):
    ref = vectors(qtype)
    assert ref["ggml_commit"].item() and ref["x"].dtype == np.float32
    x, imatrix = ref["x"], ref["imatrix"]
    if "q" in ref:  # absent for the types ggml quantizes only with an importance matrix
        np.testing.assert_array_equal(quantize(x, qtype, threads=1), ref["q"])
    np.testing.assert_array_equal(quantize(x, qtype, imatrix=imatrix, threads=1), ref["q_imatrix"])


@pytest.mark.parametrize("qtype", [t for t in QUANTIZE_TYPES if t in GGUF_PY_QUANTIZERS], ids=lambda t: t.name)
def test_matches_gguf_py(qtype, cpu_path):
    from gguf import GGMLQuantizationType, quants

    x = sample(qtype, seed=1)
    expected = quants.quantize(x, GGMLQuantizationType(int(qtype)))
    np.testing.assert_array_equal(quantize(x, qtype), np.asarray(expected).view(np.uint8).reshape(x.shape[0], -1))


def finite_float32_near_halves() -> np.ndarray:
    """Every finite fp16 value as float32, the midpoints between neighbours (ties) and one ulp
    either side of them, and values around the overflow and underflow thresholds."""
    halves = np.arange(1 << 16, dtype=np.uint32).astype(np.uint16).view(np.float16)
    halves = np.sort(halves[np.isfinite(halves)].astype(np.float32))
    mid = ((halves[:-1].astype(np.float64) + halves[1:].astype(np.float64)) / 2).astype(np.float32)
    extra = np.array([65504, 65519.996, 65520, 65536, 1e10, 2.0**-24, 2.0**-25, 2.0**-26, 3 * 2.0**-26, 1e-30],
                     dtype=np.float32)
    bits = np.concatenate([halves, mid, extra, -extra]).view(np.uint32)
    bits = np.concatenate([bits, bits + 1, bits - 1])
    values = bits.view(np.float32)
    return values[np.isfinite(values)]


def test_f16_rounds_as_numpy(cpu_path):
    x = finite_float32_near_halves()
    with np.errstate(over="ignore"):  # numpy warns where values round to inf, as they must
        expected = x.astype(np.float16)
    np.testing.assert_array_equal(quantize(x, T.F16).view(np.uint16), expected.view(np.uint16))


def test_bf16_rounds_as_ml_dtypes(cpu_path):
    ml_dtypes = pytest.importorskip("ml_dtypes")
    high = np.arange(1 << 16, dtype=np.uint32) << 16
    low = np.array([0, 1, 0x7FFF, 0x8000, 0x8001, 0xFFFF], dtype=np.uint32)
    x = (high[:, None] | low[None, :]).reshape(-1).view(np.float32)
    x = x[np.isfinite(x)]
    np.testing.assert_array_equal(quantize(x, T.BF16).view(np.uint16), x.astype(ml_dtypes.bfloat16).view(np.uint16))


@type_ids
def test_round_trip_of_exact_values(qtype):
    # Values the type holds exactly come back unchanged through dequantize.
    x = dequantize(quantize(sample(qtype, seed=2), qtype), qtype, sample(qtype).shape)
    np.testing.assert_array_equal(dequantize(quantize(x, qtype), qtype, x.shape), x)


@type_ids
def test_same_bytes_for_any_thread_count(qtype, cpu_path, monkeypatch):
    import sys

    # fastgguf.quantize is the function; its module is only reachable through sys.modules
    monkeypatch.setattr(sys.modules["fastgguf.quantize"], "_MIN_ELEMENTS_PER_THREAD", 1)
    x = sample(qtype, n_rows=13, seed=3)
    expected = quantize(x, qtype, threads=1)
    for threads in (2, 3, 8, 32):
        np.testing.assert_array_equal(quantize(x, qtype, threads=threads), expected)


@type_ids
def test_all_cpu_paths_agree(qtype):
    x = sample(qtype, seed=4)
    outputs = []
    for module in dequant.kernel_modules().values():
        out = np.empty((x.shape[0], row_bytes(qtype, x.shape[1])), np.uint8)
        module.quantize_into(x, out, int(qtype))
        outputs.append(out)
    for out in outputs[1:]:
        np.testing.assert_array_equal(out, outputs[0])


# --- shapes and inputs ------------------------------------------------------------------------


@type_ids
def test_1d_in_1d_out(qtype):
    x = sample(qtype, n_rows=1)[0]
    q = quantize(x, qtype)
    assert q.dtype == np.uint8 and q.shape == (row_bytes(qtype, x.size),)
    np.testing.assert_array_equal(q, quantize(x[None, :], qtype)[0])


@type_ids
@pytest.mark.parametrize("n_rows", [0, 1, 5])
def test_2d_shapes(qtype, n_rows):
    x = sample(qtype, n_rows=max(n_rows, 1))[:n_rows]
    q = quantize(x, qtype)
    assert q.shape == (n_rows, row_bytes(qtype, x.shape[1])) and q.dtype == np.uint8


@type_ids
@pytest.mark.parametrize("dtype", ["float16", "float64", "bfloat16"])
def test_other_float_inputs_are_converted(qtype, dtype):
    if dtype == "bfloat16":
        dtype = pytest.importorskip("ml_dtypes").bfloat16
    x = sample(qtype, seed=5).astype(dtype)
    np.testing.assert_array_equal(quantize(x, qtype), quantize(x.astype(np.float32), qtype))


@type_ids
def test_non_contiguous_input(qtype):
    x = sample(qtype, n_rows=6, seed=6)
    np.testing.assert_array_equal(quantize(x[::2], qtype), quantize(np.ascontiguousarray(x[::2]), qtype))


@type_ids
def test_out_is_filled_and_returned(qtype):
    x = sample(qtype, seed=7)
    out = np.zeros((x.shape[0], row_bytes(qtype, x.shape[1])), np.uint8)
    assert quantize(x, qtype, out=out) is out
    np.testing.assert_array_equal(out, quantize(x, qtype))


# --- errors -----------------------------------------------------------------------------------


def test_type_without_quantizer():
    with pytest.raises(NotImplementedError, match="I32"):
        quantize(np.zeros(4, np.float32), T.I32)


@pytest.mark.parametrize("bad, error", [("F16", TypeError), (4, ValueError), (1000, ValueError), (1.0, TypeError)])
def test_bad_type(bad, error):
    with pytest.raises(error):
        quantize(np.zeros(4, np.float32), bad)


@pytest.mark.parametrize("qtype", BLOCK_TYPES, ids=lambda t: t.name)
def test_row_length_not_a_multiple_of_the_block(qtype):
    block = TYPE_TRAITS[qtype].block_size
    with pytest.raises(ValueError, match=f"not a multiple of the {qtype.name} block size {block}"):
        quantize(np.zeros((2, block + block // 2), np.float32), qtype)


@type_ids
@pytest.mark.parametrize("bad", [np.nan, np.inf, -np.inf])
def test_non_finite_input_names_the_row(qtype, bad):
    x = sample(qtype, n_rows=5)
    x[3, 7] = bad
    with pytest.raises(ValueError, match="non-finite value in row 3"):
        quantize(x, qtype)


@type_ids
def test_bad_shapes_and_dtypes(qtype):
    with pytest.raises(ValueError, match="1-D or 2-D"):
        quantize(np.zeros((1, 1, 256), np.float32), qtype)
    with pytest.raises(ValueError, match="1-D or 2-D"):
        quantize(np.float32(1.0), qtype)
    with pytest.raises(TypeError, match="int32"):
        quantize(np.zeros(256, np.int32), qtype)
    with pytest.raises(TypeError):
        quantize(object(), qtype)


@type_ids
def test_bad_imatrix(qtype):
    x = sample(qtype, n_rows=2)
    n = x.shape[1]
    with pytest.raises(ValueError, match="shape"):
        quantize(x, qtype, imatrix=np.ones(n - 1, np.float32))
    with pytest.raises(ValueError, match="shape"):
        quantize(x, qtype, imatrix=np.ones((1, n), np.float32))
    for bad, message in ((-1.0, "weight 5 is negative"), (np.nan, "weight 5 is not finite"), (np.inf, "not finite")):
        weights = np.ones(n, np.float32)
        weights[5] = bad
        with pytest.raises(ValueError, match=message):
            quantize(x, qtype, imatrix=weights)
    with pytest.raises(TypeError):
        quantize(x, qtype, imatrix=np.ones(n, np.int64))


@pytest.mark.parametrize("qtype", IMATRIX_TYPES, ids=lambda t: t.name)
def test_types_that_need_an_imatrix(qtype):
    assert quantize.requires_imatrix(qtype)
    x = np.zeros((1, 256), np.float32)
    error = ValueError if quantize.has_quantize(qtype) else NotImplementedError
    with pytest.raises(error, match="importance matrix" if error is ValueError else qtype.name):
        quantize(x, qtype)


def test_other_types_need_no_imatrix():
    assert not any(quantize.requires_imatrix(t) for t in T if t not in IMATRIX_TYPES)


@type_ids
def test_bad_out(qtype):
    x = sample(qtype, n_rows=2)
    shape = (2, row_bytes(qtype, x.shape[1]))
    with pytest.raises(TypeError, match="numpy array"):
        quantize(x, qtype, out=bytearray(shape[0] * shape[1]))
    with pytest.raises(TypeError, match="uint8"):
        quantize(x, qtype, out=np.zeros(shape, np.int8))
    with pytest.raises(ValueError, match="shape"):
        quantize(x, qtype, out=np.zeros((shape[0] * shape[1],), np.uint8))
    with pytest.raises(ValueError, match="contiguous"):
        quantize(x, qtype, out=np.zeros((shape[0], 2 * shape[1]), np.uint8)[:, ::2])
    readonly = np.zeros(shape, np.uint8)
    readonly.flags.writeable = False
    with pytest.raises(ValueError, match="read-only"):
        quantize(x, qtype, out=readonly)
    overlap = np.zeros(x.nbytes + shape[0] * shape[1], np.uint8)
    with pytest.raises(ValueError, match="overlaps"):
        quantize(overlap[: x.nbytes].view(np.float32).reshape(x.shape), qtype, out=overlap[: shape[0] * shape[1]].reshape(shape))


@pytest.mark.parametrize("threads, error", [(0, ValueError), (-1, ValueError), (1.5, TypeError)])
def test_bad_threads(threads, error):
    with pytest.raises(error):
        quantize(np.zeros(4, np.float32), T.F16, threads=threads)


@pytest.mark.parametrize("path", dequant.available_cpu_paths())
def test_module_level_checks(path):
    module = dequant.kernel_modules()[path]
    x = np.zeros((2, 64), np.float32)
    with pytest.raises(ValueError, match="output shape"):
        module.quantize_into(x, np.zeros((2, 127), np.uint8), int(T.F16))
    with pytest.raises(ValueError, match="unknown"):
        module.quantize_into(x, np.zeros((2, 128), np.uint8), 4)
    with pytest.raises(NotImplementedError):
        module.quantize_into(x, np.zeros((2, 128), np.uint8), int(T.I32))
    with pytest.raises(ValueError, match="imatrix has 3 weights"):
        module.quantize_into(x, np.zeros((2, 128), np.uint8), int(T.F16), np.ones(3, np.float32))
    with pytest.raises(ValueError, match="weight 1 is -1"):
        module.quantize_into(x, np.zeros((2, 128), np.uint8), int(T.F16), np.array([1] + [-1] * 63, np.float32))
