"""fastgguf.quantize: ggml's bytes for every type with a quantizer, on every CPU path and thread count.

Generic tests run over ``QUANTIZE_TYPES`` (from the type registry); a quantizer lands with its
reference vectors in ``tests/data/quantize/<TYPE>.npz`` (written by ``tools/gen_quantize_vectors.py``
from ggml itself; format in that script's docstring).
"""

from __future__ import annotations

import numpy as np
import pytest

import fastgguf
from fastgguf import GGMLType as T, dequant, dequantize, quant, quantize
from fastgguf.types import REGISTRY, TYPE_TRAITS, types_where

from conftest import TESTS

#: Every type fastgguf.quantize produces: the registry's rows with an imatrix policy (checked against the kernels below).
QUANTIZE_TYPES = sorted(t for t, row in REGISTRY.items() if row.imatrix)

DATA = TESTS / "data" / "quantize"
GGUF_PY_QUANTIZERS = {T.F32, T.F16, T.BF16, T.Q4_0, T.Q4_1, T.Q5_0, T.Q5_1, T.Q8_0, T.TQ1_0, T.TQ2_0, T.MXFP4}
IMATRIX_TYPES = sorted(types_where(imatrix="required"))

type_ids = pytest.mark.parametrize("qtype", QUANTIZE_TYPES, ids=lambda t: t.name)
#: The generic tests below call quantize() without an importance matrix; the types ggml quantizes
#: only with one are covered by their vectors here and by their family's tests
#: (tests/quant/test_quantize_iq2.py).
plain_type_ids = pytest.mark.parametrize(
    "qtype", [t for t in QUANTIZE_TYPES if t not in IMATRIX_TYPES], ids=lambda t: t.name
)
BLOCK_TYPES = [t for t in QUANTIZE_TYPES if TYPE_TRAITS[t].block_size > 1]


def vectors(qtype: T, kind: str = "") -> dict:
    with np.load(DATA / kind / f"{qtype.name}.npz") as f:
        return {k: f[k] for k in f.files}


def sample(qtype: T, n_rows: int = 6, blocks_per_row: int = 3, seed: int = 0) -> np.ndarray:
    n = max(256, TYPE_TRAITS[qtype].block_size) * blocks_per_row
    rng = np.random.default_rng(seed)
    return (rng.standard_normal((n_rows, n)) * rng.uniform(0.01, 10, (n_rows, 1))).astype(np.float32)


def row_bytes(qtype: T, n_per_row: int) -> int:
    block_size, type_size = TYPE_TRAITS[qtype]
    return n_per_row // block_size * type_size


def test_every_listed_type_is_supported():
    assert set(QUANTIZE_TYPES) == set(quant.supported_types())
    assert all(quant.has_quantize(t) for t in QUANTIZE_TYPES)
    assert not quant.has_quantize(T.I32) and not quant.has_quantize(4) and not quant.has_quantize(b"F16")
    assert quant.has_quantize("F16") and not quant.has_quantize("I32")
    assert fastgguf.quantize is quant.quantize and "quantize" in fastgguf.__all__


# --- exact bytes -------------------------------------------------------------------------------


@type_ids
def test_matches_ggml_vectors(qtype, cpu_path):
    ref = vectors(qtype)
    assert ref["ggml_commit"].item() and ref["x"].dtype == np.float32
    x, imatrix = ref["x"], ref["imatrix"]
    if "q" in ref:  # absent for the types ggml quantizes only with an importance matrix
        np.testing.assert_array_equal(quantize(x, qtype, threads=1), ref["q"])
    np.testing.assert_array_equal(quantize(x, qtype, imatrix=imatrix, threads=1), ref["q_imatrix"])


#: Types with ggml's bytes for inputs at the edges of float32 (not the IQ types: ggml aborts on
#: some of those inputs for them; tests/quant/test_quantize.py::test_extreme_finite_inputs covers them).
EXTREME_TYPES = sorted((T[p.stem] for p in (DATA / "extreme").glob("*.npz")), key=int)


def test_extreme_vectors_cover_the_non_iq_types():
    assert set(EXTREME_TYPES) == {t for t in QUANTIZE_TYPES if TYPE_TRAITS[t].block_size > 1
                                  and not t.name.startswith("IQ")}


@pytest.mark.parametrize("qtype", EXTREME_TYPES, ids=lambda t: t.name)
def test_matches_ggml_on_extreme_inputs(qtype, cpu_path):
    ref = vectors(qtype, "extreme")
    x = ref["x"]
    np.testing.assert_array_equal(quantize(x, qtype, threads=1), ref["q"])
    for imatrix, expected in zip(ref["imatrices"], ref["q_imatrix"], strict=True):
        np.testing.assert_array_equal(quantize(x, qtype, imatrix=imatrix, threads=1), expected)


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


#: ggml's searches for these do not always find again the grid of values they quantized to (the
#: bytes are still ggml's): Q3_K and Q5_K pick other sub-block scales, Q8_K's f32 scale moves by an ulp,
#: IQ3_XXS/IQ3_S, IQ2_S and IQ1_M store the super-block scale times a fudge factor (1.0125 / 1.033,
#: 0.9875, 1.1125).
NOT_GRID_STABLE = {T.Q3_K, T.Q5_K, T.Q8_K, T.IQ3_XXS, T.IQ3_S, T.IQ2_S, T.IQ1_M}


@pytest.mark.parametrize(
    "qtype", [t for t in QUANTIZE_TYPES if t not in NOT_GRID_STABLE and t not in IMATRIX_TYPES], ids=lambda t: t.name
)
def test_round_trip_of_exact_values(qtype):
    # Values the type holds exactly come back unchanged through dequantize.
    x = dequantize(quantize(sample(qtype, seed=2), qtype), qtype, sample(qtype).shape)
    np.testing.assert_array_equal(dequantize(quantize(x, qtype), qtype, x.shape), x)


@plain_type_ids
def test_same_bytes_for_any_thread_count(qtype, cpu_path, monkeypatch):
    monkeypatch.setattr(quant, "_MIN_ELEMENTS_PER_THREAD", 1)
    monkeypatch.setattr(quant, "_MIN_ELEMENTS_PER_THREAD_FAST", 1)
    x = sample(qtype, n_rows=13, seed=3)
    expected = quantize(x, qtype, threads=1)
    for threads in (2, 3, 8, 32):
        np.testing.assert_array_equal(quantize(x, qtype, threads=threads), expected)


@plain_type_ids
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


@plain_type_ids
def test_1d_in_1d_out(qtype):
    x = sample(qtype, n_rows=1)[0]
    q = quantize(x, qtype)
    assert q.dtype == np.uint8 and q.shape == (row_bytes(qtype, x.size),)
    np.testing.assert_array_equal(q, quantize(x[None, :], qtype)[0])


@plain_type_ids
@pytest.mark.parametrize("n_rows", [0, 1, 5])
def test_2d_shapes(qtype, n_rows):
    x = sample(qtype, n_rows=max(n_rows, 1))[:n_rows]
    q = quantize(x, qtype)
    assert q.shape == (n_rows, row_bytes(qtype, x.shape[1])) and q.dtype == np.uint8


@plain_type_ids
@pytest.mark.parametrize("dtype", ["float16", "float64", "bfloat16"])
def test_other_float_inputs_are_converted(qtype, dtype):
    if dtype == "bfloat16":
        dtype = pytest.importorskip("ml_dtypes").bfloat16
    x = sample(qtype, seed=5).astype(dtype)
    np.testing.assert_array_equal(quantize(x, qtype), quantize(x.astype(np.float32), qtype))


@plain_type_ids
def test_non_contiguous_input(qtype):
    x = sample(qtype, n_rows=6, seed=6)
    np.testing.assert_array_equal(quantize(x[::2], qtype), quantize(np.ascontiguousarray(x[::2]), qtype))


@plain_type_ids
def test_out_is_filled_and_returned(qtype):
    x = sample(qtype, seed=7)
    out = np.zeros((x.shape[0], row_bytes(qtype, x.shape[1])), np.uint8)
    assert quantize(x, qtype, out=out) is out
    np.testing.assert_array_equal(out, quantize(x, qtype))


# --- errors -----------------------------------------------------------------------------------


def test_type_without_quantizer():
    with pytest.raises(NotImplementedError, match="I32"):
        quantize(np.zeros(4, np.float32), T.I32)


@pytest.mark.parametrize("bad, error", [("Q9_K", ValueError), (4, ValueError), (1000, ValueError), (1.0, TypeError),
                                        (b"F16", TypeError)])
def test_bad_type(bad, error):
    with pytest.raises(error):
        quantize(np.zeros(4, np.float32), bad)


@pytest.mark.parametrize("qtype", sorted(quant._IMATRIX_IGNORED), ids=lambda t: t.name)
def test_imatrix_ignored_where_ggml_has_no_use_for_it(qtype, cpu_path):
    x = sample(qtype, n_rows=3)
    imatrix = np.random.default_rng(1).lognormal(size=x.shape[1]).astype(np.float32)
    np.testing.assert_array_equal(quantize(x, qtype, imatrix=imatrix), quantize(x, qtype))
    x[2, 5] = np.nan  # found all the same
    with pytest.raises(ValueError, match="row 2"):
        quantize(x, qtype, imatrix=imatrix)


def test_type_by_name():
    x = np.random.default_rng(0).standard_normal((2, 256)).astype(np.float32)
    np.testing.assert_array_equal(quantize(x, "q4_k"), quantize(x, T.Q4_K))
    assert quant.requires_imatrix("IQ1_S") and quant.has_quantize("Q8_0") and not quant.has_quantize("NOPE")
    np.testing.assert_array_equal(dequantize(quantize(x, "Q8_0").reshape(-1), "Q8_0", shape=x.shape),
                                  dequantize(quantize(x, T.Q8_0).reshape(-1), T.Q8_0, shape=x.shape))


@pytest.mark.parametrize("qtype", BLOCK_TYPES, ids=lambda t: t.name)
def test_row_length_not_a_multiple_of_the_block(qtype):
    block = TYPE_TRAITS[qtype].block_size
    with pytest.raises(ValueError, match=f"not a multiple of the {qtype.name} block size {block}"):
        quantize(np.zeros((2, block + block // 2), np.float32), qtype)


@plain_type_ids
@pytest.mark.parametrize("bad", [np.nan, np.inf, -np.inf])
def test_non_finite_input_names_the_row(qtype, bad):
    x = sample(qtype, n_rows=5)
    x[3, 7] = bad
    with pytest.raises(ValueError, match="non-finite value in row 3"):
        quantize(x, qtype)


@pytest.mark.parametrize("qtype", [T.Q4_0, T.Q4_K, T.F16], ids=lambda t: t.name)
@pytest.mark.parametrize("threads", [1, 2, 3])
def test_first_non_finite_row_among_threads(qtype, threads, cpu_path, monkeypatch):
    # rows are checked by the kernel as each thread's chunk is quantized: the first bad row of
    # all chunks is named, whichever thread finds it; a subnormal or FLT_MAX is finite
    monkeypatch.setattr(quant, "_MIN_ELEMENTS_PER_THREAD", 1)
    monkeypatch.setattr(quant, "_MIN_ELEMENTS_PER_THREAD_FAST", 1)
    x = np.random.default_rng(5).standard_normal((40, 1024)).astype(np.float32)
    x[1, 0], x[2, 5] = np.float32(1e-45), np.finfo(np.float32).max
    for bad_rows in ([39], [17, 38], [25, 9, 30]):
        y = x.copy()
        for i, r in enumerate(bad_rows):
            y[r, (37 * i) % 1024] = [np.nan, np.inf, -np.inf][i % 3]
        with pytest.raises(ValueError, match=f"non-finite value in row {min(bad_rows)}$"):
            quantize(y, qtype, threads=threads)
    quantize(x, qtype, threads=threads)


@pytest.mark.parametrize("qtype", [T.Q4_0, T.Q4_1, T.Q5_0, T.Q5_1, T.Q8_0, T.TQ1_0, T.TQ2_0], ids=lambda t: t.name)
def test_non_finite_found_while_quantizing(qtype, cpu_path):
    # these types find NaN/inf as they quantize (a NaN or inf level's product is NaN): one bad value
    # anywhere in a row, in a block quantized 8 at a time or in a row's last blocks, among tricky
    # blocks; blocks of subnormals (1/d infinite) are finite
    rng = np.random.default_rng(int(qtype))
    n_per_row = 256 * 3 if qtype in (T.TQ1_0, T.TQ2_0) else 32 * 19
    x = tricky_blocks(rng, 6 * n_per_row // 32).reshape(6, n_per_row)
    x[1, :64] = np.float32(1e-39) * rng.integers(-3, 4, 64)
    expected = quantize(x, qtype)
    for column in [0, 5, 255, 256 + 31, n_per_row - 40, n_per_row - 2]:
        for bad in ([np.nan], [np.inf], [-np.inf], [np.inf, -np.inf]):
            y = x.copy()
            y[4, column:column + len(bad)] = bad
            y[5, 3] = np.nan
            with pytest.raises(ValueError, match="non-finite value in row 4$"):
                quantize(y, qtype)
    out = np.empty_like(expected)
    assert quantize(x, qtype, out=out) is out
    np.testing.assert_array_equal(out, expected)


@plain_type_ids
def test_bad_shapes_and_dtypes(qtype):
    with pytest.raises(ValueError, match="1-D or 2-D"):
        quantize(np.zeros((1, 1, 256), np.float32), qtype)
    with pytest.raises(ValueError, match="1-D or 2-D"):
        quantize(np.float32(1.0), qtype)
    with pytest.raises(TypeError, match="int32"):
        quantize(np.zeros(256, np.int32), qtype)
    with pytest.raises(TypeError):
        quantize(object(), qtype)


@plain_type_ids
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
    assert quant.requires_imatrix(qtype)
    x = np.zeros((1, 256), np.float32)
    error = ValueError if quant.has_quantize(qtype) else NotImplementedError
    with pytest.raises(error, match="importance matrix" if error is ValueError else qtype.name):
        quantize(x, qtype)


def test_other_types_need_no_imatrix():
    assert not any(quant.requires_imatrix(t) for t in T if t not in IMATRIX_TYPES)


@plain_type_ids
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
    out = np.full((3, 128), 7, np.uint8)
    y = np.ones((3, 64), np.float32)
    assert module.quantize_into(y, out, int(T.F16)) == -1
    y[1, 63], out[:] = np.inf, 7
    assert module.quantize_into(y, out, int(T.F16)) == 1  # row 0 written, rows 1 and 2 not
    assert (out[0] != 7).all() and (out[1:] == 7).all()
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


# --- Q4_0 ... Q8_K, TQ1_0, TQ2_0, MXFP4, NVFP4, Q1_0, Q2_0 (quant_legacy.h, quant_kquant.h, quant_misc.h)

QUANT_A_TYPES = [T.Q4_0, T.Q4_1, T.Q5_0, T.Q5_1, T.Q8_0, T.Q8_1, T.Q2_K, T.Q3_K, T.Q4_K, T.Q5_K, T.Q6_K, T.Q8_K,
                 T.TQ1_0, T.TQ2_0, T.MXFP4, T.NVFP4, T.Q1_0, T.Q2_0]


def edge_rows(rng: np.random.Generator, n_per_row: int) -> np.ndarray:
    """Rows with what the scale and rounding rules are sensitive to: exact zeros, ties, outliers, one
    sign, +m and -m both the largest magnitude of a block (the first decides). (Signed zeros are
    test_hand_signed_zeros': gguf-py's numpy min/max resolve them otherwise than ggml's scans.)"""
    x = rng.standard_normal((7, n_per_row)).astype(np.float32)
    x[1] *= np.float32(1e-3)
    x[2, ::3] = 0.0
    x[3] = np.round(x[3] * 4) / 4
    x[4, rng.integers(0, n_per_row, 8)] *= np.float32(50.0)
    x[5] = np.abs(x[5])
    blocks = x[6].reshape(-1, 32)  # a view: every 32 values get +5 and -5 in a random order
    for block in blocks:
        i, j = rng.choice(32, 2, replace=False)
        block[i], block[j] = 5.0, -5.0
    return x


@pytest.mark.parametrize("n_per_row", [256, 1024])
@pytest.mark.parametrize("qtype", [t for t in QUANT_A_TYPES if t in GGUF_PY_QUANTIZERS], ids=lambda t: t.name)
def test_matches_gguf_py_on_edge_rows(qtype, n_per_row, cpu_path):
    from gguf import GGMLQuantizationType, quants

    x = edge_rows(np.random.default_rng([int(qtype), n_per_row]), n_per_row)
    with np.errstate(all="ignore"):  # gguf-py divides by the zero scales of zero blocks, then masks the result
        expected = quants.quantize(x, GGMLQuantizationType(int(qtype)))
    np.testing.assert_array_equal(quantize(x, qtype), np.asarray(expected).view(np.uint8).reshape(x.shape[0], -1))


def _fp16_bytes(value: float) -> list[int]:
    return list(np.array([value], "<f2").view(np.uint8))


def test_hand_q8_0(cpu_path):
    # amax 127 makes d = 1; halves round away from zero (C's roundf)
    x = np.array([127, 2.5, -2.5, 0.5, -0.5, 1.49, -1.51] + [j - 12 for j in range(25)], np.float32)
    levels = np.array([127, 3, -3, 1, -1, 1, -2] + [j - 12 for j in range(25)], np.int8)
    assert list(quantize(x, T.Q8_0)) == _fp16_bytes(1.0) + list(levels.view(np.uint8))


def test_hand_q4_0(cpu_path):
    # the first value of largest magnitude is -8, so d = -8 / -8 = 1 and the level trunc(x + 8.5) is x + 8
    x = np.array([j - 8 for j in range(16)] + [7 - j for j in range(16)], np.float32)
    assert list(quantize(x, T.Q4_0)) == _fp16_bytes(1.0) + [j | ((15 - j) << 4) for j in range(16)]


@pytest.mark.parametrize("first_zero", [-0.0, 0.0])
def test_hand_signed_zeros(first_zero, cpu_path):
    # ggml's scans keep the first of equal extremes. Q4_0: the "largest" of an all-zero block is
    # its initial +0, so d = +0 / -8 = -0. Q4_1: the minimum is the first zero, with its sign,
    # and d = max - min is +0 for either order of the zeros.
    x = np.full(32, -first_zero, np.float32)
    x[0] = first_zero
    assert list(quantize(x, T.Q4_0)) == [0x00, 0x80] + [0x88] * 16
    sign = 0x80 if np.signbit(first_zero) else 0x00
    assert list(quantize(x, T.Q4_1)) == [0, 0, 0, sign] + [0] * 16
    assert list(quantize(x, T.Q5_1))[:4] == [0, 0, 0, sign]
    y = np.zeros(32, np.float32)
    y[9], y[0], y[5] = 1.0, first_zero, -first_zero  # min = the first zero; d = 1 / 15
    assert list(quantize(y, T.Q4_1))[2:4] == [0, sign]


def tricky_blocks(rng: np.random.Generator, n_blocks: int) -> np.ndarray:
    """32-value blocks where a tie or the sign of a zero decides a scale or a minimum, in a random order."""
    kinds = [
        lambda: rng.standard_normal(32),
        lambda: np.zeros(32),  # all +0
        lambda: rng.choice([0.0, -0.0], 32),  # zeros of both signs
        lambda: np.where(rng.random(32) < 0.5, 0.0, rng.random(32) + 0.1),  # min is a zero
        lambda: np.where(rng.random(32) < 0.5, -0.0, -(rng.random(32) + 0.1)),  # max is a zero
        lambda: rng.permutation(np.r_[5.0, -5.0, rng.uniform(-4.9, 4.9, 30)]),  # +m and -m
        lambda: rng.permutation(np.r_[-5.0, 5.0, -5.0, np.zeros(29)]),
        lambda: np.full(32, rng.standard_normal()),  # one value: max - min = 0
    ]
    return np.concatenate([kinds[k]() for k in rng.integers(0, len(kinds), n_blocks)]).astype(np.float32)


@pytest.mark.parametrize("qtype", [T.Q4_0, T.Q4_1, T.Q5_0, T.Q5_1, T.Q8_0, T.Q8_1], ids=lambda t: t.name)
def test_many_blocks_equal_one_block_at_a_time(qtype, cpu_path):
    # the SIMD builds quantize 8 blocks side by side; a lone block takes the one-block path
    x = tricky_blocks(np.random.default_rng(int(qtype)), 8 * 40 + 3)
    one_at_a_time = np.concatenate([quantize(block, qtype) for block in x.reshape(-1, 32)])
    np.testing.assert_array_equal(quantize(x, qtype), one_at_a_time)


def test_hand_q1_0(cpu_path):
    # d = mean |x|; bit j % 8 of byte j // 8 says x[j] >= 0, which -0.0 is
    x = np.where(np.arange(128) % 2 == 0, 1.0, -1.0).astype(np.float32)
    x[2], x[3] = -0.0, 0.0
    assert list(quantize(x, T.Q1_0)) == _fp16_bytes(126 / 128) + [0x55 | 0x08] + [0x55] * 15


def test_hand_mxfp4(cpu_path):
    # amax 6: shared exponent floor(log2 6) - 2 + 127 = 127, half-scale 0.5, so each value is its own
    # E2M1 code, except -0.0 (code 8): code 0 (+0) is as near and comes first
    values = np.array([0, 1, 2, 3, 4, 6, 8, 12, 0, -1, -2, -3, -4, -6, -8, -12], np.float32) * np.float32(0.5)
    values[8] = -0.0
    codes = [0 if c == 8 else c for c in range(16)]
    assert list(quantize(np.concatenate([values, values]), T.MXFP4)) == [127] + [c | (c << 4) for c in codes]


def test_hand_tq2_0(cpu_path):
    # trits -1, 0, 1 with amax 1: d = 1; element m + 32 n of each 128 goes to bits 2n of byte m
    x = (np.arange(256) % 3 - 1).astype(np.float32)
    t = (x + 1).astype(int)
    qs = [sum(int(t[128 * h + m + 32 * n]) << (2 * n) for n in range(4)) for h in range(2) for m in range(32)]
    assert list(quantize(x, T.TQ2_0)) == qs + _fp16_bytes(1.0)


@pytest.mark.parametrize("qtype", [T.Q2_K, T.Q3_K, T.Q4_K, T.Q5_K, T.Q6_K, T.Q8_K], ids=lambda t: t.name)
def test_hand_zero_super_block(qtype, cpu_path):
    # an all-zero super-block is all-zero bytes: scales, levels and fp16 zeros
    assert not quantize(np.zeros(256, np.float32), qtype).any()


#: ggml's tests/test-quantize-fns.cpp limits on sqrt(sum (x - y)^2) / n for y = dequantize(quantize(x)).
ROUND_TRIP_LIMITS = {T.Q1_0: 0.025, T.TQ1_0: 0.01, T.TQ2_0: 0.01, T.Q2_0: 0.01, T.Q2_K: 0.0075, T.Q3_K: 0.0040,
                     T.NVFP4: 0.0030}


@pytest.mark.parametrize("with_imatrix", [False, True], ids=["plain", "imatrix"])
@pytest.mark.parametrize("qtype", QUANT_A_TYPES, ids=lambda t: t.name)
def test_round_trip_error_within_ggml_limits(qtype, with_imatrix):
    n = 32 * 128
    x = (0.1 + 2 * np.cos(np.arange(n, dtype=np.float32))).astype(np.float32)  # ggml's test data
    imatrix = np.linspace(0.5, 2.0, n, dtype=np.float32) if with_imatrix else None
    y = dequantize(quantize(x, qtype, imatrix=imatrix), qtype, (n,))
    assert np.sqrt(np.sum((x.astype(np.float64) - y) ** 2)) / n < ROUND_TRIP_LIMITS.get(qtype, 0.002)


# --- extreme finite inputs -------------------------------------------------------------------


def extreme_rows(qtype: T) -> np.ndarray:
    """Finite rows at the edges of float32: subnormals, the largest floats, one huge outlier among tiny
    values, random exponents over the whole range. Scales may overflow; indices must not."""
    n = max(256, TYPE_TRAITS[qtype].block_size) * 2
    rng = np.random.default_rng(99)
    largest, smallest = np.finfo(np.float32).max, np.finfo(np.float32).smallest_subnormal
    rows = [
        np.full(n, smallest),
        np.where(np.arange(n) % 2, largest, -largest),
        np.full(n, largest),
        np.r_[largest, np.full(n - 1, 1e-30)],
        np.r_[np.zeros(n - 1), -smallest],
        rng.choice([-1, 1], n) * 10.0 ** rng.uniform(-45, 38, n),
        rng.standard_normal(n) * 1e30,
        rng.standard_normal(n) * 1e-40,
    ]
    return np.asarray(rows, np.float32)


def extreme_imatrices(n: int) -> list:
    rng = np.random.default_rng(7)
    return [None, np.full(n, 1e30, np.float32), np.where(np.arange(n) % 3, 0.0, 1e-38).astype(np.float32),
            (10.0 ** rng.uniform(-38, 38, n)).astype(np.float32)]


@type_ids
def test_extreme_finite_inputs(qtype):
    """No crash and no out-of-range table index (the debug/ASan pass runs this), the same bytes on every
    CPU build, and the blocks dequantize."""
    x = extreme_rows(qtype)
    for imatrix in extreme_imatrices(x.shape[1]):
        if imatrix is None and quant.requires_imatrix(qtype):
            continue
        outputs = [quantize(x, qtype, imatrix=imatrix, threads=1)]
        for module in dequant.kernel_modules().values():
            out = np.empty_like(outputs[0])
            module.quantize_into(x, out, int(qtype), imatrix) if imatrix is not None else \
                module.quantize_into(x, out, int(qtype))
            outputs.append(out)
        for out in outputs[1:]:
            np.testing.assert_array_equal(out, outputs[0])
        dequantize(outputs[0], qtype, x.shape)
