"""fastgguf.matmul / matmul_id / take_rows against float64 products with the dequantized weights."""

from __future__ import annotations

import os
import platform
import sys

import numpy as np
import pytest

import fastgguf
from fastgguf import GGMLType, dequant, dequantize
from fastgguf.matmul import matmul, matmul_id, take_rows
from fastgguf.types import TYPE_TRAITS

from conftest import argument_error

T = GGMLType
TYPES = dequant.supported_types()
#: Types with an integer (Q8-quantized x) dot product.
INT_TYPES = (T.Q1_0, T.Q2_0, T.Q4_0, T.Q4_1, T.Q5_0, T.Q5_1, T.Q8_0, T.IQ4_NL, T.IQ4_XS, T.MXFP4, T.NVFP4, T.IQ1_S, T.IQ1_M, T.IQ2_XXS, T.IQ2_XS, T.IQ2_S,
             T.IQ3_XXS, T.IQ3_S, T.TQ1_0, T.TQ2_0, T.Q2_K, T.Q3_K, T.Q4_K, T.Q5_K, T.Q6_K)
#: The integer types whose x is per 32 values (fgg_mm_q8).
PER_32_INT_TYPES = (T.Q1_0, T.Q2_0, T.Q4_0, T.Q4_1, T.Q5_0, T.Q5_1, T.Q8_0, T.IQ4_NL, T.MXFP4, T.NVFP4)
K_INT_TYPES = (T.Q2_K, T.Q3_K, T.Q4_K, T.Q5_K, T.Q6_K, T.IQ1_S, T.IQ1_M, T.IQ2_XXS, T.IQ2_XS, T.IQ2_S, T.IQ3_XXS,
               T.IQ3_S, T.IQ4_XS, T.TQ1_0, T.TQ2_0)
FLOAT_DTYPES = {T.F32: "<f4", T.F16: "<f2", T.F64: "<f8"}
#: Relative error bound of the float path (issue 13) and the integer path on Gaussian x (measured
#: 5e-3 with x per 32 values, 7e-3 per 256 for the K-quants).
EXACT_BOUND = 1e-5
INT_BOUND = 3e-2
#: Relative error of the integer path against the float64 product of the rounded x (d * q): its
#: integer sums are exact, only the float32 steps per block and the final sums round.
ROUNDED_X_BOUND = 1e-5


def random_weights(qtype: GGMLType, n: int, k: int, rng: np.random.Generator) -> np.ndarray:
    """(n, row_bytes) uint8 blocks of ``qtype`` whose values are finite and below 1e30.

    Random bytes, block by block; blocks whose values are not (random fp16/e8m0 scales can be
    inf, NaN or huge) are drawn again. Float types get standard normal values.
    """
    block_size, type_size = TYPE_TRAITS[qtype]
    if qtype in FLOAT_DTYPES:
        return rng.standard_normal((n, k)).astype(FLOAT_DTYPES[qtype]).view(np.uint8)
    if qtype == T.BF16:
        bits = (rng.standard_normal((n, k)).astype(np.float32).view(np.uint32) >> 16).astype("<u2")
        return bits.view(np.uint8)
    blocks = rng.integers(0, 256, size=(n * k // block_size, type_size), dtype=np.uint8)
    with np.errstate(all="ignore"):
        while True:
            values = dequantize(blocks, qtype).reshape(blocks.shape[0], block_size)
            bad = ~(np.isfinite(values) & (np.abs(values) < 1e30)).all(axis=1)
            if not bad.any():
                break
            blocks[bad] = rng.integers(0, 256, size=(int(bad.sum()), type_size), dtype=np.uint8)
    return blocks.reshape(n, -1)


def rel_error(y: np.ndarray, ref: np.ndarray) -> float:
    return float(np.linalg.norm(y.astype(np.float64) - ref) / np.linalg.norm(ref))


def reference(x: np.ndarray, raw: np.ndarray, qtype: GGMLType, n: int, k: int) -> np.ndarray:
    w = dequantize(raw, qtype, (n, k)).astype(np.float64)
    return x.astype(np.float64) @ w.T


def quantized_x(kernels, x: np.ndarray, qtype: GGMLType) -> np.ndarray:
    """x rounded for the integer dot of ``qtype`` in ``kernels`` (per 32 or per 256 values)."""
    values, block_bytes = kernels.int_x_layout(int(qtype))
    xq = np.empty((x.shape[0], x.shape[1] // values * block_bytes), np.uint8)
    (kernels.quantize_x8k if values == 256 else kernels.quantize_x8)(x, xq)
    return xq


def x_blocks(xq: np.ndarray, values: int) -> tuple[np.ndarray, np.ndarray]:
    """The float32 scales d (m, blocks) and int8 values q (m, blocks, values) of quantized x rows
    ``xq`` (blocks of 32 or 256)."""
    m = xq.shape[0]
    if values == 32:  # fgg_mm_q8: float d, float s, int8 q[32]
        blocks = xq.reshape(m, -1, 40)
        q = blocks[:, :, 8:40].view(np.int8)
    else:  # fgg_mm_q8k: float d, int16 bsum[16], int8 q[256]
        blocks = xq.reshape(m, -1, 292)
        q = blocks[:, :, 36:292].view(np.int8)
    return blocks[:, :, 0:4].copy().view("<f4")[:, :, 0], q


def rounded_x(xq: np.ndarray, values: int) -> np.ndarray:
    """The float64 values d * q that quantized x rows ``xq`` stand for (blocks of 32 or 256)."""
    d, q = x_blocks(xq, values)
    return (d.astype(np.float64)[:, :, None] * q).reshape(xq.shape[0], -1)


def k_for(qtype: GGMLType, n_blocks: int) -> int:
    return TYPE_TRAITS[qtype].block_size * n_blocks if TYPE_TRAITS[qtype].block_size > 1 else 32 * n_blocks


@pytest.mark.parametrize("qtype", TYPES, ids=lambda t: t.name)
@pytest.mark.parametrize("m", [1, 8])
@pytest.mark.parametrize("n_blocks", [1, 5])
def test_float_path_matches_float64_reference(qtype, m, n_blocks):
    rng = np.random.default_rng([int(qtype), m, n_blocks])
    n, k = 19, k_for(qtype, n_blocks)
    raw = random_weights(qtype, n, k, rng)
    x = rng.standard_normal((m, k)).astype(np.float32)
    y = matmul(x, raw, qtype)
    assert y.shape == (m, n) and y.dtype == np.float32
    assert rel_error(y, reference(x, raw, qtype, n, k)) <= EXACT_BOUND
    # 1-D x gives 1-D output, the same values as its row in a batch.
    np.testing.assert_array_equal(matmul(x[0], raw, qtype), y[0])


@pytest.mark.parametrize("qtype", [T.F32, T.Q4_0, T.Q8_0, T.Q4_1, T.Q2_K, T.Q4_K, T.Q5_K, T.Q6_K, T.IQ4_XS, T.IQ2_XXS],
                         ids=lambda t: t.name)
def test_same_bits_for_every_thread_count(qtype, monkeypatch):
    import sys

    monkeypatch.setattr(sys.modules["fastgguf.matmul"], "_MIN_WORK_PER_THREAD", 1)  # split even tiny weights
    rng = np.random.default_rng(int(qtype))
    n, k = 97, k_for(qtype, 12)
    raw = random_weights(qtype, n, k, rng)
    x = rng.standard_normal((3, k)).astype(np.float32)
    first = matmul(x, raw, qtype, threads=1)
    for threads in (2, 3, 7):
        np.testing.assert_array_equal(matmul(x, raw, qtype, threads=threads), first)


@pytest.mark.parametrize("exact", [True, False])
def test_same_bits_without_the_kernels_pool(exact, monkeypatch):
    """Where a build has no pool of its own (not POSIX), the rows are split in Python and run on
    Python's pool: the same bits."""
    import sys

    from fastgguf import _backend

    monkeypatch.setattr(sys.modules["fastgguf.matmul"], "_MIN_WORK_PER_THREAD", 1)
    rng = np.random.default_rng(4)
    raw = random_weights(T.Q4_K, 97, 512, rng)
    x = rng.standard_normal((3, 512)).astype(np.float32)
    expected = matmul(x, raw, T.Q4_K, threads=1, exact=exact)
    monkeypatch.setattr(_backend.kernels(), "has_thread_pool", lambda: False)
    for threads in (2, 3):
        np.testing.assert_array_equal(matmul(x, raw, T.Q4_K, threads=threads, exact=exact), expected)


@pytest.mark.parametrize("exact", [True, False])
def test_the_kernels_pool_serves_concurrent_callers(exact, monkeypatch):
    """Several Python threads in matmul at once: one gets the build's worker threads, the others
    run their tasks on their own thread; every result has the bits of a one-thread product."""
    import sys
    import threading

    monkeypatch.setattr(sys.modules["fastgguf.matmul"], "_MIN_WORK_PER_THREAD", 1)
    rng = np.random.default_rng(5)
    n, k = 301, 512
    weights = [random_weights(T.Q4_K, n, k, rng) for _ in range(4)]
    xs = [rng.standard_normal((2, k)).astype(np.float32) for _ in range(4)]
    expected = [matmul(x, w, T.Q4_K, threads=1, exact=exact) for x, w in zip(xs, weights)]
    failures: list[int] = []
    start = threading.Barrier(4)

    def run(i: int) -> None:
        start.wait()
        for _ in range(30):
            if not np.array_equal(matmul(xs[i], weights[i], T.Q4_K, threads=3, exact=exact), expected[i]):
                failures.append(i)

    callers = [threading.Thread(target=run, args=(i,)) for i in range(4)]
    for caller in callers:
        caller.start()
    for caller in callers:
        caller.join()
    assert failures == []


@pytest.mark.skipif(not hasattr(__import__("os"), "fork"), reason="needs fork")
@pytest.mark.filterwarnings("ignore:.*fork.*:DeprecationWarning")  # Python 3.12+: fork with threads
def test_the_kernels_pool_works_in_a_forked_child(monkeypatch):
    """A fork copies the pool's state but not its threads: the child starts its own."""
    import os
    import sys

    monkeypatch.setattr(sys.modules["fastgguf.matmul"], "_MIN_WORK_PER_THREAD", 1)
    rng = np.random.default_rng(6)
    raw = random_weights(T.Q4_K, 257, 512, rng)
    x = rng.standard_normal((3, 512)).astype(np.float32)
    expected = matmul(x, raw, T.Q4_K, threads=2)  # the parent's workers exist now
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # pragma: no cover - the child reports through its exit status
        ok = all(np.array_equal(matmul(x, raw, T.Q4_K, threads=t), expected) for t in (2, 3, 2))
        os.write(write, b"1" if ok else b"0")
        os._exit(0)
    os.close(write)
    _, status = os.waitpid(pid, 0)
    answer = os.read(read, 1)
    os.close(read)
    assert status == 0 and answer == b"1"


@pytest.mark.parametrize("qtype", [T.Q1_0, T.Q4_0, T.Q8_0, T.Q5_0, T.Q4_1, T.Q5_1, T.IQ4_NL, T.MXFP4, T.Q2_K, T.Q3_K, T.Q4_K, T.Q5_K, T.Q6_K, T.IQ4_XS,
                                   T.IQ3_XXS, T.IQ3_S, T.IQ2_S, T.IQ2_XXS, T.IQ2_XS, T.IQ1_S, T.IQ1_M, T.TQ2_0, T.TQ1_0],
                         ids=lambda t: t.name)
def test_few_rows_of_x_have_the_bits_of_each_row_alone(qtype):
    """1 to 9 rows of x on the factored float path: the register kernels, 4 rows at a time (x read
    in place, here a slice of a wider array; up to 8 rows, and up to 4 for the IQ grid types and
    TQ1_0/TQ2_0), beyond them the q unpacked as floats once for a span of all rows; each row gets
    the bits of that row alone, on any thread count."""
    rng = np.random.default_rng(int(qtype) + 300)
    n, k = 37, k_for(qtype, 20)
    raw = random_weights(qtype, n, k, rng)
    x = rng.standard_normal((9, k + 64)).astype(np.float32)[:, 32:32 + k]
    alone = np.stack([matmul(x[i], raw, qtype, threads=1) for i in range(9)])
    for m in range(1, 10):
        np.testing.assert_array_equal(matmul(x[:m], raw, qtype, threads=1), alone[:m], err_msg=f"{m} rows")
        np.testing.assert_array_equal(matmul(x[:m], raw, qtype, threads=3), alone[:m], err_msg=f"{m} rows")


@pytest.mark.parametrize("qtype", [T.F32, T.Q1_0, T.Q4_0, T.Q8_0, T.Q5_0, T.Q4_1, T.Q5_1, T.IQ4_NL, T.MXFP4, T.Q2_K, T.Q3_K, T.Q4_K, T.Q5_K, T.Q6_K, T.IQ4_XS,
                                   T.IQ3_XXS, T.IQ3_S, T.IQ2_S, T.IQ1_S, T.IQ1_M, T.TQ2_0, T.TQ1_0], ids=lambda t: t.name)
@pytest.mark.parametrize("exact", [True, False])
def test_batches_are_tiled_without_changing_bits(qtype, exact):
    """A batch larger than one tile of x rows (and weights larger than one tile of rows, K of
    several tiles' worth): each row of the product has the bits of that row alone."""
    rng = np.random.default_rng(int(qtype) + 200)
    n, k = 300, k_for(qtype, 24)
    raw = random_weights(qtype, n, k, rng)
    x = rng.standard_normal((83, k)).astype(np.float32)
    whole = matmul(x, raw, qtype, exact=exact, threads=2)
    for i in (0, 7, 8, 40, 63, 64, 71, 72, 82):
        np.testing.assert_array_equal(whole[i], matmul(x[i], raw, qtype, exact=exact, threads=1))
    np.testing.assert_array_equal(matmul(x, raw, qtype, exact=exact, threads=3), whole)


@pytest.mark.parametrize("qtype", [T.Q1_0, T.Q4_0, T.Q8_0, T.Q5_0, T.Q4_1, T.Q5_1, T.IQ4_NL, T.MXFP4, T.Q2_K, T.Q3_K, T.Q4_K, T.Q5_K, T.Q6_K, T.IQ4_XS,
                                   T.IQ3_XXS, T.IQ3_S, T.IQ2_S, T.IQ1_S, T.IQ1_M, T.TQ2_0, T.TQ1_0], ids=lambda t: t.name)
@pytest.mark.parametrize("m", [1, 2, 37])
def test_big_endian_blocks_give_the_same_bits(qtype, m):
    """Weights of a big-endian file (each row's fields swapped in the kernel before its products;
    a batch swaps a tile of rows once and walks it in spans): the bits of the same blocks
    little-endian, on every kernel build."""
    from fastgguf._byteswap import byteswap_blocks

    rng = np.random.default_rng([int(qtype), m, 11])
    n, k = 83, k_for(qtype, 20)
    raw = random_weights(qtype, n, k, rng)
    big = np.frombuffer(byteswap_blocks(raw, qtype), np.uint8).reshape(raw.shape)
    x = rng.standard_normal((m, k)).astype(np.float32)
    for path in dequant.available_cpu_paths():
        kernels = dequant.kernel_modules()[path]
        little_out, big_out = np.empty((m, n), np.float32), np.empty((m, n), np.float32)
        kernels.matmul_rows(raw, int(qtype), x, little_out, 0, n, False, 0, 2)
        kernels.matmul_rows(big, int(qtype), x, big_out, 0, n, True, 0, 2)
        np.testing.assert_array_equal(big_out, little_out)
        np.testing.assert_array_equal(little_out, matmul(x, raw, qtype, threads=1))


@pytest.mark.parametrize("qtype", [T.F16, T.Q1_0, T.Q4_0, T.Q8_0, T.Q5_0, T.Q4_1, T.Q5_1, T.IQ4_NL, T.MXFP4, T.Q2_K, T.Q3_K, T.Q4_K, T.Q5_K, T.Q6_K,
                                   T.IQ3_S, T.IQ3_XXS, T.IQ2_S, T.IQ2_XXS, T.IQ2_XS, T.IQ1_S, T.IQ1_M, T.TQ2_0, T.TQ1_0],
                         ids=lambda t: t.name)
def test_same_bits_on_every_cpu_path(qtype):
    rng = np.random.default_rng(int(qtype) + 100)
    n, k = 9, k_for(qtype, 3) + (3 if TYPE_TRAITS[qtype].block_size == 1 else 0)
    raw = random_weights(qtype, n, k, rng)
    x = rng.standard_normal((6, k)).astype(np.float32)  # 4 rows at once (fgg_mm_dot_acc4) and 2 alone
    results = [dequant.kernel_modules()[path] for path in dequant.available_cpu_paths()]
    outs = []
    for kernels in results:
        out = np.empty((6, n), np.float32)
        kernels.matmul_rows(raw, int(qtype), x, out, 0, n)
        outs.append(out)
        one = np.empty((1, n), np.float32)  # a single row: the register kernels (AVX2, or SSE2 in the portable build)
        kernels.matmul_rows(raw, int(qtype), x[:1], one, 0, n)
        np.testing.assert_array_equal(one[0], out[0])
    for out in outs[1:]:
        np.testing.assert_array_equal(out, outs[0])


FACTORED_TYPES = (T.Q1_0, T.Q4_0, T.Q8_0, T.Q5_0, T.Q4_1, T.Q5_1, T.IQ4_NL, T.MXFP4, T.Q2_K, T.Q3_K, T.Q4_K, T.Q5_K,
                  T.Q6_K, T.IQ4_XS, T.IQ3_XXS, T.IQ3_S, T.IQ2_S, T.IQ2_XXS, T.IQ2_XS, T.IQ1_S, T.IQ1_M, T.TQ2_0,
                  T.TQ1_0)


def misaligned(a: np.ndarray, offset: int) -> np.ndarray:
    """A C-contiguous float32 copy of ``a`` whose data starts ``offset`` bytes past a 64-byte boundary."""
    buf = np.zeros(a.nbytes + 128, np.uint8)
    start = (-buf.ctypes.data) % 64 + offset
    out = buf[start:start + a.nbytes].view(np.float32).reshape(a.shape)
    out[...] = a
    assert out.ctypes.data % 64 == offset and out.flags.c_contiguous
    return out


@pytest.mark.parametrize("qtype", FACTORED_TYPES, ids=lambda t: t.name)
def test_x_at_any_address(qtype):
    # The portable build's factored kernels read x with aligned loads; x at 4, 8 or 12 bytes past a
    # 16-byte boundary is copied to one first: the same bits on every build, from 1 to 9 rows, and
    # in matmul_id's grouped kernel.
    rng = np.random.default_rng(int(qtype) + 900)
    n, k = 11, k_for(qtype, 8)
    raw = random_weights(qtype, n, k, rng)
    x = rng.standard_normal((9, k)).astype(np.float32)
    for path, kernels in dequant.kernel_modules().items():
        for m in (1, 3, 9):
            expected = np.empty((m, n), np.float32)
            kernels.matmul_rows(raw, int(qtype), x[:m], expected, 0, n)
            for offset in (4, 8, 12):
                got = np.empty((m, n), np.float32)
                kernels.matmul_rows(raw, int(qtype), misaligned(x[:m], offset), got, 0, n, False, 0, 2)
                np.testing.assert_array_equal(got, expected, err_msg=f"{path}, {m} rows, offset {offset}")
        experts = np.stack([raw, raw[::-1].copy()])
        bounds, which = np.array([0, 1, 4, 9], np.int64), np.array([1, 0, 1], np.int64)
        expected = np.empty((9, n), np.float32)
        kernels.matmul_rows_grouped(experts, int(qtype), x, None, expected, which, bounds, False, 2)
        got = np.empty((9, n), np.float32)
        kernels.matmul_rows_grouped(experts, int(qtype), misaligned(x, 4), None, got, which, bounds, False, 2)
        np.testing.assert_array_equal(got, expected, err_msg=f"{path}, grouped")


def test_every_fp16_scale(cpu_path):
    # Q8_0 blocks whose scale d is each of the 65536 fp16 encodings (zeros, subnormals, inf, NaN
    # with payloads) and whose value 0 is q = 1: dequantized, a block's value 0 is d, and so is
    # the exact product with x = (1, 0, ..., 0) (fgg_half_to_float_scale, which takes a short
    # branch for normal halves where there is no F16C). NaNs compare as NaNs.
    bits = np.arange(1 << 16, dtype=np.uint32).astype("<u2")
    blocks = np.zeros((1 << 16, 34), np.uint8)
    blocks[:, :2] = bits.view(np.uint8).reshape(-1, 2)
    blocks[:, 2] = 1
    expected = bits.view(np.float16).astype(np.float32)
    with np.errstate(all="ignore"):
        values = dequantize(blocks, T.Q8_0).reshape(-1, 32)
        x = np.zeros((1, 32), np.float32)
        x[0, 0] = 1.0
        product = matmul(x, blocks, T.Q8_0, threads=1)[0]
    np.testing.assert_array_equal(values[:, 0], expected)
    finite = np.isfinite(expected)
    # d times the other values' q = 0 is a zero, or NaN where d is inf or NaN (and so is the product)
    np.testing.assert_array_equal(np.isnan(values[:, 1:]).all(axis=1), ~finite)
    np.testing.assert_array_equal(product[finite], expected[finite])  # -0.0 + 0.0 is 0.0: equal
    np.testing.assert_array_equal(np.isnan(product), ~finite)


@pytest.mark.parametrize("qtype", INT_TYPES, ids=lambda t: t.name)
@pytest.mark.parametrize("m", [1, 8])
def test_integer_path_error_and_cpu_paths(qtype, m):
    rng = np.random.default_rng([int(qtype), m, 7])
    n, k = 23, k_for(qtype, 4)
    raw = random_weights(qtype, n, k, rng)
    x = rng.standard_normal((m, k)).astype(np.float32)
    ref = reference(x, raw, qtype, n, k)
    y = matmul(x, raw, qtype, exact=False)
    err = rel_error(y, ref)
    assert err <= INT_BOUND
    assert err > EXACT_BOUND  # really the integer path: x was rounded to 8 bits
    for path in dequant.available_cpu_paths():
        kernels = dequant.kernel_modules()[path]
        xq = quantized_x(kernels, x, qtype)
        out = np.empty((m, n), np.float32)
        kernels.matmul_rows_int(raw, int(qtype), xq, out, 0, n)
        np.testing.assert_array_equal(out, y)  # integer sums are exact, the float steps the same
        one = np.empty((1, n), np.float32)  # a single row has kernels of its own (unpacked blocks in registers)
        kernels.matmul_rows_int(raw, int(qtype), xq[-1:], one, 0, n)
        np.testing.assert_array_equal(one[0], y[-1])


def _int_dot_variants():
    """(name, kernels, vnni) for every integer dot product this CPU can run: each kernel build,
    the ones with AVX-512 VNNI both with it and with it switched off."""
    variants = []
    for path in dequant.available_cpu_paths():
        kernels = dequant.kernel_modules()[path]
        variants.append((path, kernels, False))
        if kernels.vnni_usable():
            variants.append((path + "-vnni", kernels, True))
    return variants


@pytest.mark.parametrize("qtype", INT_TYPES, ids=lambda t: t.name)
@pytest.mark.parametrize("m", [1, 2, 3, 8, 11, 37])
def test_integer_path_same_bits_with_and_without_vnni(qtype, m):
    # m covers row pairs, the odd last row, and more than one group of 8 rows; 8, 11 and 37 rows
    # the VNNI batch kernel of the K kinds (groups of 16 rows of x, or 8 for a last group
    # of up to 8, padded); n = 13
    # weight rows: one group of 8 and a padded one; n_blocks = 5 an odd count of blocks; values
    # include w = -128 (Q8_0) and x at +-127.
    rng = np.random.default_rng([int(qtype), m, 11])
    n, k = 13, k_for(qtype, 5)
    raw = random_weights(qtype, n, k, rng)
    x = rng.standard_normal((m, k)).astype(np.float32)
    x[:, ::32] *= 50.0  # the largest |x| of each block, quantized to +-127
    outs = {}
    for name, kernels, vnni in _int_dot_variants():
        before = kernels._set_vnni(vnni)
        try:
            assert kernels.int_dot_isa() == ("vnni" if vnni else "c" if name == "portable" else "maddubs")
            xq = quantized_x(kernels, x, qtype)
            out = np.empty((m, n), np.float32)
            kernels.matmul_rows_int(raw, int(qtype), xq, out, 0, n)
        finally:
            kernels._set_vnni(before)
        outs[name] = out
    first = outs.pop("portable")
    # One outlier per 32 sets the scale of its whole super-block for the K-quants: a larger error
    # than INT_BOUND, but the product of the rounded x is exact.
    kernels = dequant.kernel_modules()["portable"]
    rounded = rounded_x(quantized_x(kernels, x, qtype), kernels.int_x_layout(int(qtype))[0])
    assert rel_error(first, reference(rounded, raw, qtype, n, k)) <= ROUNDED_X_BOUND
    for name, out in outs.items():
        np.testing.assert_array_equal(out, first, err_msg=name)


# The types with a batch kernel (lanes = rows of x): the K-quants, the ternary and the 256-value IQ types.
K_KINDS = {T.Q2_K, T.Q3_K, T.Q4_K, T.Q5_K, T.Q6_K, T.TQ1_0, T.TQ2_0, T.IQ4_XS, T.IQ2_XXS, T.IQ2_XS, T.IQ2_S,
           T.IQ3_XXS, T.IQ3_S, T.IQ1_S, T.IQ1_M}
# The per-32 types with a batch kernel (lanes = rows of x, float steps per 4 values as their row kernels): VNNI
# (with a few-rows kernel up to 12 rows) and maddubs (groups of 8 rows; the signed values' signs moved onto x).
PER32_BATCH = {T.Q8_0, T.Q4_0, T.Q5_0, T.Q4_1, T.Q5_1, T.IQ4_NL, T.MXFP4}
# Rows of x from which the maddubs one is taken (a group of 8 costs about as much as the row kernels on that many).
MADDUBS_FROM = {T.Q4_0: 9, T.Q5_0: 6, T.Q4_1: 5, T.Q5_1: 5, T.MXFP4: 9, T.IQ4_NL: 9, T.Q8_0: 32}
# the K kinds that take the batch kernel at other counts than the K-quants (6 rows on VNNI, 9 on
# maddubs): some IQ types
VNNI_K_FROM = {T.IQ1_S: 7, T.IQ4_XS: 7, T.IQ2_XXS: 8, T.IQ2_S: 8, T.IQ1_M: 8}
MADDUBS_K_FROM = {T.IQ3_S: 7, T.IQ3_XXS: 8, T.IQ1_S: 8, T.IQ1_M: 8, T.IQ2_XXS: 12, T.IQ2_XS: 12, T.IQ2_S: 12,
                  T.IQ4_XS: 24}
# The portable SSE2 build's batch kernels (x widened to int16 once, taken at any row count): every K kind and
# the per-32 types but Q2_0 and NVFP4 (Q1_0's only there).
SSE2_BATCH = K_KINDS | PER32_BATCH | {T.Q1_0}


def _batch_variants(qtype):
    """_int_dot_variants with a batch kernel for qtype: the SIMD builds, and the portable build
    where it has SSE2 kernels (sse2_int_kernels) for the type."""
    return [(name, kernels, vnni) for name, kernels, vnni in _int_dot_variants()
            if (name != "portable" and qtype in K_KINDS | PER32_BATCH)
            or (name == "portable" and kernels.sse2_int_kernels() and qtype in SSE2_BATCH)]


def test_sse2_int_kernels_in_the_portable_build_of_x86():
    """The portable build has the SSE2 kernels on x86-64 (every such CPU has SSE2) unless built
    with FASTGGUF_NO_SIMD=1; the SIMD builds have their own."""
    kernels = dequant.kernel_modules()["portable"]
    x86 = platform.machine().lower() in ("x86_64", "amd64")
    assert kernels.sse2_int_kernels() == (x86 and os.environ.get("FASTGGUF_NO_SIMD", "") in ("", "0"))
    for path in dequant.available_cpu_paths():
        if path != "portable":
            assert not dequant.kernel_modules()[path].sse2_int_kernels()


def rows_and_batch(kernels, vnni: bool, raw: np.ndarray, qtype: GGMLType, xq: np.ndarray, n: int):
    """The integer products of xq's rows by the row kernels and by the batch kernel (taken from 1 row
    of x on), VNNI on or off: ({mode: out}, {mode: the kernel int_batch_kernel names})."""
    outs, taken = {}, {}
    m = xq.shape[0]
    before, min_rows = kernels._set_vnni(vnni), kernels._set_batch_min_rows(1 << 30)
    try:
        for mode in ("rows", "batch"):
            kernels._set_batch_min_rows(1 << 30 if mode == "rows" else 1)
            taken[mode] = kernels.int_batch_kernel(int(qtype), m)
            outs[mode] = np.empty((m, n), np.float32)
            kernels.matmul_rows_int(raw, int(qtype), xq, outs[mode], 0, n)
    finally:
        kernels._set_vnni(before)
        kernels._set_batch_min_rows(min_rows)
    return outs, taken


@pytest.mark.parametrize("qtype", sorted(SSE2_BATCH), ids=lambda t: t.name)
def test_batch_kernel_same_bits_as_row_kernels_for_any_row_count(qtype):
    """The batch kernels (VNNI, maddubs) against the row kernels of the same build, taken from 1 row
    of x on: a group of 16 with 1, 5 to 7 (row kernels of 4 and 1 to 3 rows), 8 (the 256-bit tile
    alone), 9 and 16 rows, 17 (a full group and one row), 40 (groups of 16, 16 and 8); 21 weight rows
    (two tiles of 8 and a padded one).
    The per-32 types on VNNI: the few-rows kernel up to 12 rows (1 to 6 pairs, an odd last row; 37
    weight rows: 18 pairs and a single row, or one at a time beyond 4 pairs with offsets; 70
    blocks), the batch kernel from 13; on maddubs the batch kernel at every count (groups of 8 rows:
    1 to 8 rows one group, 9 to 16 two, 17 and 40 a partial last group)."""
    rng = np.random.default_rng([int(qtype), 5])
    n, k = (21, k_for(qtype, 3)) if qtype in K_KINDS else (37, k_for(qtype, 70))
    raw = random_weights(qtype, n, k, rng)
    variants = _batch_variants(qtype)
    if not variants:
        pytest.skip("no build with this type's batch kernel runs here")
    for m in (1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 16, 17, 40) if qtype in PER32_BATCH else (1, 5, 6, 7, 8, 9, 16, 17, 40):
        x = rng.standard_normal((m, k)).astype(np.float32)
        x[:, ::32] *= 50.0
        for name, kernels, vnni in variants:
            outs, taken = rows_and_batch(kernels, vnni, raw, qtype, quantized_x(kernels, x, qtype), n)
            assert taken == {"rows": "rows", "batch": "sse2-wide-x" if name == "portable"
                             else "vnni-few" if vnni and qtype in PER32_BATCH and m <= 12
                             else "vnni-batch" if vnni else "maddubs-batch"}
            np.testing.assert_array_equal(outs["batch"], outs["rows"], err_msg=f"{name} m={m}")


@pytest.mark.parametrize("qtype", [T.Q4_K, T.Q6_K, T.Q8_0, T.Q5_1, T.Q1_0], ids=lambda t: t.name)
def test_sse2_batch_kernels_take_x_in_blocks(qtype):
    """The portable SSE2 kernels meet the rows of x in blocks that stay in L2 (128 KiB of widened
    rows): with 16384 values a row a block is 4 rows, so 11 rows are blocks of 4, 4 and 3 (passes of
    4, 4, 2 and 1 rows); the bits of the row loop (Q1_0: 4 blocks of x per weight block)."""
    kernels = dequant.kernel_modules()["portable"]
    if not kernels.sse2_int_kernels():
        pytest.skip("the portable build has no SSE2 kernels here")
    rng = np.random.default_rng([int(qtype), 11])
    n, k = 5, 16384
    raw = random_weights(qtype, n, k, rng)
    x = rng.standard_normal((11, k)).astype(np.float32)
    outs, taken = rows_and_batch(kernels, False, raw, qtype, quantized_x(kernels, x, qtype), n)
    assert taken == {"rows": "rows", "batch": "sse2-wide-x"}
    np.testing.assert_array_equal(outs["batch"], outs["rows"])


@pytest.mark.parametrize("qtype", sorted(K_KINDS), ids=lambda t: t.name)
def test_batch_kernel_at_the_int16_limits(qtype):
    """x at +-127 throughout, where the maddubs batch kernel's int16 sums are largest: the IQ2, IQ3
    and IQ1 types meet x + 128 (255 for x = 127) with their values, up to 2 * 255 * 62 per pair,
    which leaves room for one pair (IQ1's, values to 9: four) before the scale takes them to int32;
    the K-quants meet x itself. Rows all +127, all -127, alternating, and in runs of 4 (the four
    bytes a weight broadcast meets): the bits of the row kernels and the product of the rounded x."""
    rng = np.random.default_rng([int(qtype), 127])
    n, k = 16, k_for(qtype, 4)
    raw = random_weights(qtype, n, k, rng)
    x = np.ones((4, k), np.float32)
    x[1] = -1.0
    x[2, 1::2] = -1.0
    x[3] = np.where(np.arange(k) // 4 % 2, -1.0, 1.0)
    x = np.repeat(x, 4, axis=0)  # 16 rows: a whole group of the batch kernel
    variants = _batch_variants(qtype)
    if not variants:
        pytest.skip("no build with this type's batch kernel runs here")
    for name, kernels, vnni in variants:
        xq = quantized_x(kernels, x, qtype)
        outs, _ = rows_and_batch(kernels, vnni, raw, qtype, xq, n)
        np.testing.assert_array_equal(outs["batch"], outs["rows"], err_msg=name)
        rounded = rounded_x(xq, kernels.int_x_layout(int(qtype))[0])
        assert rel_error(outs["batch"], reference(rounded, raw, qtype, n, k)) <= ROUNDED_X_BOUND, name


@pytest.mark.parametrize("qtype", sorted(PER32_BATCH), ids=lambda t: t.name)
def test_maddubs_batch_leaves_a_short_last_group_to_the_row_kernels(qtype):
    """The per-32 types' maddubs batch kernel takes groups of 8 rows of x; a last group of fewer
    rows than the batch threshold goes to the row kernels in the same task (6 here: 13 rows are
    8 + 5, 22 are 16 + 6 and 15 are 8 + 7 by the batch kernel alone). The bits are the row kernels',
    on 1 and 2 threads."""
    rng = np.random.default_rng([int(qtype), 13])
    n, k = 29, k_for(qtype, 9)
    raw = random_weights(qtype, n, k, rng)
    variants = [(name, kernels) for name, kernels, vnni in _int_dot_variants() if name != "portable" and not vnni]
    if not variants:
        pytest.skip("no build with the maddubs kernels runs here")
    for m in (9, 13, 15, 22):
        x = rng.standard_normal((m, k)).astype(np.float32)
        for name, kernels in variants:
            xq = quantized_x(kernels, x, qtype)
            outs = {}
            before, min_rows = kernels._set_vnni(False), kernels._set_batch_min_rows(1 << 30)
            try:
                for mode, threads in (("rows", 1), ("split", 1), ("split", 2)):
                    kernels._set_batch_min_rows(1 << 30 if mode == "rows" else 6)
                    assert kernels.int_batch_kernel(int(qtype), m) == ("rows" if mode == "rows" else "maddubs-batch")
                    out = np.empty((m, n), np.float32)
                    kernels.matmul_rows_int(raw, int(qtype), xq, out, 0, n, threads)
                    outs[mode, threads] = out
            finally:
                kernels._set_vnni(before)
                kernels._set_batch_min_rows(min_rows)
            for key, out in outs.items():
                np.testing.assert_array_equal(out, outs["rows", 1], err_msg=f"{name} m={m} {key}")


def test_batch_kernel_is_taken_where_it_applies():
    """The K kinds take the batch kernel: from 6 rows of x on VNNI, from 9 on maddubs (AVX2 and
    AVX-512 without VNNI), some IQ types from their own counts (VNNI_K_FROM, MADDUBS_K_FROM); the
    per-32 types on VNNI the few-rows kernel from 2 rows (where the CPU splits 512-bit operations:
    Q4_0, Q5_0, MXFP4 and IQ4_NL from 4, Q4_1, Q5_1 and Q8_0 from 5), the batch kernel from 13, and
    on maddubs the batch kernel from MADDUBS_FROM; the portable SSE2 build's K kinds and per-32 types
    but Q2_0 and NVFP4 their kernel on x widened to int16 at any row count; other types, fewer rows and the other
    portable builds take the row kernels (whose bits the tests above compare)."""
    for name, kernels, vnni in _int_dot_variants():
        for wide in (True, False):
            before, wide_before = kernels._set_vnni(vnni), kernels._set_wide(wide)
            try:
                for qtype in INT_TYPES:
                    few_from = 2 if wide else 5 if qtype in (T.Q8_0, T.Q4_1, T.Q5_1) else 4
                    for m in (1, 2, 3, 4, 5, 6, 7, 8, 9, 11, 12, 13, 23, 24, 300):
                        if vnni and qtype in PER32_BATCH:
                            expected = "rows" if m < few_from else "vnni-few" if m <= 12 else "vnni-batch"
                        elif vnni:
                            expected = "vnni-batch" if qtype in K_KINDS and m >= VNNI_K_FROM.get(qtype, 6) else "rows"
                        elif name != "portable" and qtype in PER32_BATCH:
                            expected = "maddubs-batch" if m >= MADDUBS_FROM[qtype] else "rows"
                        elif name != "portable":
                            expected = "maddubs-batch" if qtype in K_KINDS and m >= MADDUBS_K_FROM.get(qtype, 9) else "rows"
                        elif kernels.sse2_int_kernels() and qtype in SSE2_BATCH:
                            expected = "sse2-wide-x"
                        else:
                            expected = "rows"
                        assert kernels.int_batch_kernel(int(qtype), m) == expected, (name, wide, qtype.name, m)
            finally:
                kernels._set_vnni(before)
                kernels._set_wide(wide_before)


def test_vnni_switch_and_detection():
    for path in dequant.available_cpu_paths():
        kernels = dequant.kernel_modules()[path]
        usable = kernels.vnni_usable()
        before = kernels._set_vnni(True)
        try:
            assert (kernels.int_dot_isa() == "vnni") == usable
            assert kernels._set_vnni(False) == usable
            assert kernels.int_dot_isa() == ("c" if path == "portable" else "maddubs")
        finally:
            kernels._set_vnni(before)
    # Only the avx512 build has VNNI kernels.
    assert not dequant.kernel_modules()["portable"].vnni_usable()


#: The types whose one-row kernels the avx512 build chooses by CPU width (_set_wide).
WIDTH_TYPES = (T.Q4_0, T.Q4_1, T.Q5_0, T.Q5_1, T.MXFP4, T.IQ4_NL, T.Q2_K, T.Q3_K, T.Q4_K, T.Q5_K, T.Q6_K)


@pytest.mark.parametrize("qtype", WIDTH_TYPES, ids=lambda t: t.name)
@pytest.mark.parametrize("exact", [True, False])
def test_kernels_for_split_512_bit_operations_keep_the_bits(qtype, exact):
    """The avx512 build's kernels for a CPU that runs 512-bit operations whole and for one that
    splits them (Zen 4: the 256-bit register kernels on the exact path, the avx2 build's two-row
    integer kernels, the K-quants' 256-bit integer row kernels) give the portable build's bits: 1
    to 5 rows of x (pairs of rows of x and an odd one), 37 weight rows (18 pairs and one alone), 70
    blocks or 3 super-blocks."""
    modules = dequant.kernel_modules()
    if "avx512" not in dequant.available_cpu_paths():
        pytest.skip("the avx512 build does not run here")
    kernels, portable = modules["avx512"], modules["portable"]
    rng = np.random.default_rng([int(qtype), 29])
    n, k = 37, k_for(qtype, 70 if TYPE_TRAITS[qtype].block_size == 32 else 3)
    raw = random_weights(qtype, n, k, rng)

    def product(module, x):
        out = np.empty((x.shape[0], n), np.float32)
        if exact:
            module.matmul_rows(raw, int(qtype), x, out, 0, n)
        else:
            module.matmul_rows_int(raw, int(qtype), quantized_x(module, x, qtype), out, 0, n)
        return out

    for m in (1, 2, 3, 5):
        x = rng.standard_normal((m, k)).astype(np.float32)
        x[:, ::32] *= 50.0
        expected = product(portable, x)
        for wide in (True, False):
            before = kernels._set_wide(wide)
            try:
                np.testing.assert_array_equal(product(kernels, x), expected, err_msg=f"wide={wide} m={m}")
            finally:
                kernels._set_wide(before)


def test_kernels_chosen_by_cpu_width():
    """Which one-row kernels run: the avx512 build's pairs of weight rows per 512-bit vector on
    CPUs that run 512-bit operations whole; where they are split, the 256-bit register kernels for
    Q4_K, Q5_K and Q6_K (pairs still for the per-32 types), the 256-bit two-row integer kernels
    (IQ4_NL's with VNNI only) and the K-quants' 256-bit integer row kernels; the avx2 build has only
    the two-row ones, the portable build neither."""
    modules = dequant.kernel_modules()
    for path in dequant.available_cpu_paths():
        kernels = modules[path]
        for wide in (True, False):
            before = kernels._set_wide(wide)
            try:
                for qtype in WIDTH_TYPES + (T.Q8_0,):
                    exact, integer = kernels.one_row_kernels(int(qtype))
                    per32 = qtype in (T.Q4_0, T.Q4_1, T.Q5_0, T.Q5_1, T.MXFP4)
                    k_quant = qtype in (T.Q2_K, T.Q3_K, T.Q4_K, T.Q5_K, T.Q6_K)
                    if path == "avx512":
                        pairs = qtype in (T.Q4_0, T.Q4_1, T.Q5_0, T.Q5_1, T.MXFP4, T.IQ4_NL) or (
                            wide and qtype in (T.Q4_K, T.Q5_K, T.Q6_K))
                        assert exact == ("q8_0" if qtype == T.Q8_0 else "pairs" if pairs else ""), (qtype, wide)
                        wide_rows2 = qtype in (T.Q4_0, T.Q4_1, T.MXFP4) or k_quant
                        # IQ4_NL's 256-bit two-row kernel is VNNI's only
                        narrow_rows2 = per32 or k_quant or (qtype == T.IQ4_NL and kernels.int_dot_isa() == "vnni")
                        assert integer == ("512" if wide and wide_rows2 else "256" if not wide and narrow_rows2
                                           else ""), (qtype, wide)
                    elif path == "avx2":
                        assert (exact, integer) == ("q8_0" if qtype == T.Q8_0 else "", "256" if per32 else "")
                    else:
                        assert (exact, integer) == ("", "")
            finally:
                kernels._set_wide(before)


def test_cpu_width_detection():
    """avx512_full_width reads cpuid: false only on AMD's family 0x19 (Zen 4, the AVX-512 CPUs that
    split 512-bit operations), checked against /proc/cpuinfo; every build answers the same."""
    kernels = dequant.kernel_modules()["portable"]
    answers = {dequant.kernel_modules()[path].avx512_full_width() for path in dequant.available_cpu_paths()}
    assert answers == {kernels.avx512_full_width()}
    try:
        with open("/proc/cpuinfo") as f:
            info = f.read()
    except OSError:
        pytest.skip("no /proc/cpuinfo to check against")
    fields = dict(line.split(":", 1) for line in info.split("\n\n")[0].splitlines() if ":" in line)
    fields = {key.strip(): value.strip() for key, value in fields.items()}
    if "vendor_id" not in fields or "cpu family" not in fields:
        pytest.skip("not an x86 /proc/cpuinfo")
    zen4 = fields["vendor_id"] == "AuthenticAMD" and int(fields["cpu family"]) == 0x19
    assert kernels.avx512_full_width() == (not zen4)


@pytest.mark.parametrize("qtype", [T.F16, T.BF16, T.F32], ids=lambda t: t.name)
def test_integer_path_falls_back_to_float_for_other_types(qtype):
    rng = np.random.default_rng(3)
    raw = random_weights(qtype, 4, 256, rng)
    x = rng.standard_normal((2, 256)).astype(np.float32)
    np.testing.assert_array_equal(matmul(x, raw, qtype, exact=False), matmul(x, raw, qtype))


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_half_precision_x_is_converted(dtype):
    ml_dtypes = pytest.importorskip("ml_dtypes") if dtype == "bfloat16" else None
    target = ml_dtypes.bfloat16 if ml_dtypes else np.float16
    rng = np.random.default_rng(5)
    raw = random_weights(T.Q8_0, 6, 64, rng)
    x = rng.standard_normal((2, 64)).astype(target)
    np.testing.assert_array_equal(matmul(x, raw, T.Q8_0), matmul(x.astype(np.float32), raw, T.Q8_0))


@pytest.mark.parametrize("byteorder", ["<", ">"])
def test_tensor_info_weights(open_bytes, byteorder):
    rng = np.random.default_rng(11)
    raw = random_weights(T.Q4_K, 8, 512, rng)
    experts = np.stack([random_weights(T.Q8_0, 6, 64, rng) for _ in range(3)])
    w = fastgguf.GGUFWriter(byteorder=byteorder)
    w.add_tensor("w", raw, T.Q4_K, (8, 512), byteorder="<")
    w.add_tensor("e", experts, T.Q8_0, (3, 6, 64), byteorder="<")
    f = open_bytes(w)
    x = rng.standard_normal((2, 512)).astype(np.float32)
    expected = matmul(x, raw, T.Q4_K)
    np.testing.assert_array_equal(matmul(x, f.tensors["w"]), expected)
    np.testing.assert_array_equal(matmul(x, f.tensors["w"], T.Q4_K), expected)
    with argument_error(ValueError, match="disagrees"):
        matmul(x, f.tensors["w"], T.Q8_0)
    xe = rng.standard_normal((2, 64)).astype(np.float32)
    ids = np.array([[2, 0], [1, 1]])
    np.testing.assert_array_equal(matmul_id(xe, f.tensors["e"], ids), matmul_id(xe, experts, ids, T.Q8_0))
    np.testing.assert_array_equal(take_rows(f.tensors["w"], [7, 1]), dequantize(raw, T.Q4_K, (8, 512))[[7, 1]])
    with argument_error(ValueError, match="dimensions"):
        matmul(xe, f.tensors["e"])


def test_out_argument_is_filled_and_returned():
    rng = np.random.default_rng(12)
    raw = random_weights(T.Q4_0, 5, 64, rng)
    x = rng.standard_normal((3, 64)).astype(np.float32)
    out = np.full((3, 5), np.nan, np.float32)
    assert matmul(x, raw, T.Q4_0, out=out) is out
    np.testing.assert_array_equal(out, matmul(x, raw, T.Q4_0))


@pytest.mark.parametrize("qtype", TYPES, ids=lambda t: t.name)
def test_one_step_call_equals_the_full_path(qtype, monkeypatch):
    """matmul's common call (raw blocks, an int type, float32 x) runs checked in one kernel call;
    the same bits as the full path (a type name takes that), both paths, every row count and
    thread count, 1-D and 2-D x, with and without ``out``."""
    module = sys.modules[matmul.__module__]  # fastgguf.matmul: the function hides the module
    taken = []
    real = module._quick
    monkeypatch.setattr(module, "_quick", lambda *a: taken.append(r := real(*a)) or r)
    rng = np.random.default_rng(int(qtype) + 29)
    k = k_for(qtype, 2)
    raw = random_weights(qtype, 19, k, rng)
    for m in (1, 3, 9):
        x = rng.standard_normal((m, k)).astype(np.float32)
        for exact in (True, False):
            for threads in (1, 2):
                taken.clear()
                got = matmul(x, raw, int(qtype), exact=exact, threads=threads)
                assert taken and taken[0] is got
                np.testing.assert_array_equal(got, matmul(x, raw, qtype.name, exact=exact, threads=threads))
                out = np.full((m, 19), np.nan, np.float32)
                assert matmul(x, raw, qtype, exact=exact, threads=threads, out=out) is out
                np.testing.assert_array_equal(out, got)
        vector = matmul(x[0], raw, qtype)
        assert vector.shape == (19,)
        np.testing.assert_array_equal(vector, matmul(x[:1], raw, qtype.name)[0])
    # what the one step does not take goes the full way: a strided x, a half x, no type, a read-only out
    x = rng.standard_normal((4, 2 * k)).astype(np.float32)[:, ::2]
    np.testing.assert_array_equal(matmul(x, raw, qtype), matmul(np.ascontiguousarray(x), raw, qtype.name))
    np.testing.assert_array_equal(matmul(x.astype(np.float16), raw, qtype),
                                  matmul(x.astype(np.float16).astype(np.float32), raw, qtype))
    with pytest.raises(TypeError):
        matmul(x, raw)
    out = np.empty((4, 19), np.float32)
    out.flags.writeable = False
    with argument_error(ValueError, match="read-only"):
        matmul(np.ascontiguousarray(x), raw, qtype, out=out)


def test_errors():
    rng = np.random.default_rng(13)
    raw = random_weights(T.Q4_0, 5, 64, rng)
    x = rng.standard_normal((3, 64)).astype(np.float32)
    with pytest.raises(TypeError):
        matmul(x, raw)  # raw blocks need a type
    with argument_error(ValueError, match="columns"):
        matmul(x[:, :32], raw, T.Q4_0)
    with argument_error(ValueError, match="whole"):
        matmul(x, raw[:, :17], T.Q4_0)
    with argument_error(TypeError, match="uint8"):
        matmul(x, raw.view(np.int8), T.Q4_0)
    with argument_error(TypeError, match="float32"):
        matmul(x.astype(np.float64), raw, T.Q4_0)
    with argument_error(ValueError, match="dimensions"):
        matmul(x, raw.reshape(-1), T.Q4_0)
    with argument_error(ValueError, match="x must be"):
        matmul(x[None], raw, T.Q4_0)
    with argument_error(ValueError, match="shape"):
        matmul(x, raw, T.Q4_0, out=np.empty((5, 3), np.float32))
    with argument_error(TypeError, match="dtype"):
        matmul(x, raw, T.Q4_0, out=np.empty((3, 5), np.float64))
    with pytest.raises(ValueError):
        matmul(x, raw, T.Q4_0, threads=0)
    with argument_error(ValueError, match="unknown"):
        matmul(x, raw, 77)


def test_empty_shapes():
    rng = np.random.default_rng(14)
    raw = random_weights(T.Q8_0, 4, 32, rng)
    assert matmul(np.empty((0, 32), np.float32), raw, T.Q8_0).shape == (0, 4)
    assert matmul(np.ones(32, np.float32), raw[:0], T.Q8_0).shape == (0,)
    # experts with rows of no elements: zeros (the rows of x are empty too)
    for exact in (True, False):
        y = matmul_id(np.empty((2, 0), np.float32), np.zeros((3, 4, 0), np.uint8), [[0, 1], [2, 2]], T.Q8_0,
                      exact=exact)
        assert y.shape == (2, 2, 4) and not y.any()


@pytest.mark.parametrize("qtype", [T.Q4_0, T.Q4_1, T.Q2_K, T.Q4_K, T.F16, T.IQ4_NL], ids=lambda t: t.name)
@pytest.mark.parametrize("exact", [True, False])
def test_matmul_id_equals_per_expert_matmul(qtype, exact):
    rng = np.random.default_rng(int(qtype) + 7)
    n_exp, n, k = 5, 11, k_for(qtype, 2)
    raw = np.stack([random_weights(qtype, n, k, rng) for _ in range(n_exp)])
    ids = np.array([[0, 3], [3, 4], [1, 0], [4, 4]])
    x = rng.standard_normal((4, k)).astype(np.float32)
    y = matmul_id(x, raw, ids, qtype, exact=exact)
    assert y.shape == (4, 2, n)
    for t in range(4):
        for j in range(2):
            np.testing.assert_array_equal(y[t, j], matmul(x[t], raw[ids[t, j]], qtype, exact=exact))
    # per-slot inputs
    x3 = rng.standard_normal((4, 2, k)).astype(np.float32)
    y3 = matmul_id(x3, raw, ids, qtype, exact=exact)
    np.testing.assert_array_equal(y3[2, 1], matmul(x3[2, 1], raw[0], qtype, exact=exact))
    with pytest.raises(IndexError):
        matmul_id(x, raw, ids + 1, qtype)
    with argument_error(ValueError):
        matmul_id(x[:3], raw, ids, qtype)


@pytest.mark.parametrize("qtype", [T.Q8_0, T.MXFP4, T.Q4_K, T.Q6_K, T.IQ4_XS, T.IQ2_S, T.IQ3_S, T.Q1_0], ids=lambda t: t.name)
@pytest.mark.parametrize("exact", [True, False])
@pytest.mark.parametrize("threads", [1, 2, 5, 64])
def test_matmul_id_groups_the_experts_without_changing_bits(qtype, exact, threads, monkeypatch):
    """One kernel call for all experts: with at least as many experts in use as threads each
    expert's rows run on one thread, with fewer each expert shares out its weight rows; either way
    and on Python's pool (a build without its own), each (token, slot) has the bits of its own
    product with its expert alone."""
    import sys

    from fastgguf import _backend

    monkeypatch.setattr(sys.modules["fastgguf.matmul"], "_MIN_WORK_PER_THREAD", 1)
    rng = np.random.default_rng([int(qtype), threads, exact])
    n_exp, n, k = 7, 45, k_for(qtype, 3)
    raw = np.stack([random_weights(qtype, n, k, rng) for _ in range(n_exp)])
    t, used = 19, 3
    ids = np.stack([rng.choice(n_exp, used, replace=False) for _ in range(t)])
    ids[:, 0] = 6  # one expert with a batch of 19 rows (the span-walked batch path), others with a few
    x = rng.standard_normal((t, used, k)).astype(np.float32)
    y = matmul_id(x, raw, ids, qtype, exact=exact, threads=threads)
    expected = np.stack([[matmul(x[i, j], raw[ids[i, j]], qtype, exact=exact, threads=1) for j in range(used)]
                         for i in range(t)])
    np.testing.assert_array_equal(y, expected)
    one_expert = np.full((t, 1), 2)  # fewer experts in use than threads
    np.testing.assert_array_equal(matmul_id(x[:, :1], raw, one_expert, qtype, exact=exact, threads=threads)[:, 0],
                                  matmul(x[:, 0], raw[2], qtype, exact=exact, threads=1))
    monkeypatch.setattr(_backend.kernels(), "has_thread_pool", lambda: False, raising=False)
    np.testing.assert_array_equal(matmul_id(x, raw, ids, qtype, exact=exact, threads=threads), expected)


def test_grouped_kernel_checks_its_arguments():
    from fastgguf import _backend

    kernels = _backend.kernels()
    rng = np.random.default_rng(3)
    raw = np.stack([random_weights(T.Q8_0, 4, 64, rng) for _ in range(3)])
    x = rng.standard_normal((5, 64)).astype(np.float32)
    out = np.empty((5, 4), np.float32)
    experts, bounds = np.array([0, 2], np.int64), np.array([0, 2, 5], np.int64)
    kernels.matmul_rows_grouped(raw, int(T.Q8_0), x, None, out, experts, bounds, False, 2)
    np.testing.assert_array_equal(out[2:], matmul(x[2:], raw[2], T.Q8_0, threads=1))
    with pytest.raises(IndexError):
        kernels.matmul_rows_grouped(raw, int(T.Q8_0), x, None, out, np.array([0, 3], np.int64), bounds, False, 2)
    for bad in ([0, 2, 4], [1, 2, 5], [0, 3, 2, 5], [0, 6, 5]):
        with pytest.raises(ValueError):
            kernels.matmul_rows_grouped(raw, int(T.Q8_0), x, None, out, experts, np.array(bad, np.int64), False, 2)
    with pytest.raises(ValueError):
        kernels.matmul_rows_grouped(raw, int(T.Q8_0), x[:, :32].copy(), None, out, experts, bounds, False, 2)
    with pytest.raises(ValueError):
        kernels.matmul_rows_grouped(raw, int(T.Q8_0), x, None, out[:4], experts, bounds, False, 2)
    with pytest.raises(ValueError):
        kernels.matmul_rows_grouped(raw, int(T.Q8_0), x, None, out, experts, bounds, False, 0)
    with pytest.raises(ValueError):  # quantized x of the wrong width
        kernels.matmul_rows_grouped(raw, int(T.Q8_0), x, np.zeros((5, 3), np.uint8), out, experts, bounds, False, 2)
    with pytest.raises(NotImplementedError):  # no integer dot for this type
        kernels.matmul_rows_grouped(raw, int(T.F16), x[:, :34].copy(), np.zeros((5, 40), np.uint8), out, experts,
                                    bounds, False, 2)


@pytest.mark.parametrize("qtype", [T.Q4_K, T.Q6_K, T.Q8_0, T.BF16, T.IQ2_S], ids=lambda t: t.name)
def test_take_rows_equals_dequantized_rows(qtype):
    rng = np.random.default_rng(int(qtype) + 9)
    n, k = 13, k_for(qtype, 2)
    raw = random_weights(qtype, n, k, rng)
    full = dequantize(raw, qtype, (n, k))
    idx = np.array([[3, 0, 12], [-1, 5, 5]])
    rows = take_rows(raw, idx, qtype)
    assert rows.shape == (2, 3, k)
    np.testing.assert_array_equal(rows, full[idx])
    with np.errstate(over="ignore"):  # random scales: some values are beyond float16
        np.testing.assert_array_equal(take_rows(raw, idx, qtype, dtype=np.float16), full[idx].astype(np.float16))
    ml_dtypes = pytest.importorskip("ml_dtypes")
    with np.errstate(over="ignore"):
        np.testing.assert_array_equal(take_rows(raw, idx, qtype, dtype="bfloat16"), full[idx].astype(ml_dtypes.bfloat16))
    with pytest.raises(IndexError):
        take_rows(raw, [n], qtype)
    with pytest.raises(TypeError):
        take_rows(raw, [0.5], qtype)


def test_exported():
    assert fastgguf.matmul is matmul
    for name in ("matmul", "matmul_id", "take_rows"):
        assert name in fastgguf.__all__


def _q8k_fields(xq: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(d, bsum, q) of quantized x rows in super-blocks of 256 (fgg_mm_q8k, 292 bytes)."""
    blocks = xq.reshape(xq.shape[0], -1, 292)
    d = blocks[:, :, 0:4].copy().view("<f4")[:, :, 0]
    bsum = blocks[:, :, 4:36].copy().view("<i2")
    q = blocks[:, :, 36:292].view(np.int8)
    return d, bsum, q


def test_x_layouts_of_the_integer_types():
    for path in dequant.available_cpu_paths():
        kernels = dequant.kernel_modules()[path]
        for qtype in K_INT_TYPES:
            assert kernels.int_x_layout(int(qtype)) == (256, 292)
        for qtype in PER_32_INT_TYPES:
            assert kernels.int_x_layout(int(qtype)) == (32, 40)
        assert kernels.q8_block_bytes() == 40


@pytest.mark.parametrize("path", dequant.available_cpu_paths())
def test_super_block_x_hand_computed(path):
    kernels = dequant.kernel_modules()[path]
    x = np.zeros((2, 512), np.float32)
    x[0, 0] = 127.0           # amax of the first super-block: d = 1
    x[0, 17] = -63.5          # rounds half to even: -64, in the sum of 16..31
    x[0, 18] = 2.4
    x[0, 255] = -127.0
    x[0, 256 + 40] = -0.5     # second super-block: d = 0.5 / 127, q = -127
    x[0, 256 + 41] = 0.25     # 63.5 -> 64
    # row 1: all zero: d = 0, every q and sum 0
    xq = np.empty((2, 2 * 292), np.uint8)
    kernels.quantize_x8k(x, xq)
    d, bsum, q = _q8k_fields(xq)
    assert d[0, 0] == 1.0 and d[0, 1] == np.float32(0.5) / np.float32(127)
    assert q[0, 0, 0] == 127 and q[0, 0, 17] == -64 and q[0, 0, 18] == 2 and q[0, 0, 255] == -127
    assert q[0, 1, 40] == -127 and q[0, 1, 41] == 64
    assert np.count_nonzero(q[0]) == 6
    expected = np.zeros((2, 16), np.int16)
    expected[0, 0], expected[0, 1], expected[0, 15] = 127, -62, -127
    expected[1, 2] = -63
    np.testing.assert_array_equal(bsum[0], expected)
    assert not d[1].any() and not q[1].any() and not bsum[1].any()
    with argument_error(ValueError, match="256"):
        kernels.quantize_x8k(np.zeros((1, 288), np.float32), np.empty((1, 292), np.uint8))
    with argument_error(ValueError, match="shape"):
        kernels.quantize_x8k(x, np.empty((2, 292), np.uint8))


@pytest.mark.parametrize("path", dequant.available_cpu_paths())
def test_x_rounding_of_values_without_a_finite_product(path):
    """inf or NaN in x, or an amax so small that 1 / d overflows, round to q = 0 (what lrintf's
    LONG_MIN cast to int gave before the rounding was vectorized); the finite values as usual."""
    kernels = dequant.kernel_modules()[path]
    x = np.zeros((4, 256), np.float32)
    x[0, 1], x[0, 2], x[0, 3] = np.inf, 1.0, -2.0      # amax inf: d inf, 1/d = 0, inf * 0 = NaN
    x[1, 5], x[1, 6], x[1, 7] = np.nan, 127.0, -63.5   # NaN never wins the amax: d = 1
    x[2, 0], x[2, 9] = 1e-38, -2e-39                   # d = 1e-38 / 127 is subnormal: 1 / d = inf
    x[3, 0], x[3, 1] = 2e-36, -1e-36                   # d = 2e-36 / 127, 1 / d finite: rounds as usual
    xq = np.empty((4, 292), np.uint8)
    kernels.quantize_x8k(x, xq)
    d, bsum, q = _q8k_fields(xq)
    assert np.isinf(d[0, 0]) and not q[0].any() and not bsum[0].any()
    assert d[1, 0] == 1.0 and q[1, 0, 5] == 0 and q[1, 0, 6] == 127 and q[1, 0, 7] == -64
    assert np.count_nonzero(q[1]) == 2
    assert d[2, 0] == np.float32(1e-38) / np.float32(127) and not q[2].any()
    assert q[3, 0, 0] == 127 and q[3, 0, 1] == -64 and np.count_nonzero(q[3]) == 2
    per32 = np.empty((4, 8 * 40), np.uint8)
    kernels.quantize_x8(x, per32)
    q32 = per32.reshape(4, 8, 40)[:, :, 8:].view(np.int8).reshape(4, 256)
    np.testing.assert_array_equal(q32[:, :32], q.reshape(4, 256)[:, :32])


@pytest.mark.parametrize("path", dequant.available_cpu_paths())
def test_per_32_x_hand_computed(path):
    """The per-32 types keep x per 32: a float scale d, s = d * sum(q) and 32 int8 (40 bytes) per block."""
    kernels = dequant.kernel_modules()[path]
    x = np.zeros((1, 64), np.float32)
    x[0, 3] = -12.7          # d = 0.1 for the first block: q = -127
    x[0, 4] = 0.05           # 0.5 -> 0 (half to even)
    x[0, 5] = 6.35           # 63.5 -> 64
    x[0, 32] = 254.0         # d = 2 for the second
    x[0, 33] = 3.0           # 1.5 -> 2
    xq = np.empty((1, 80), np.uint8)
    kernels.quantize_x8(x, xq)
    blocks = xq.reshape(2, 40)
    d = blocks[:, :4].copy().view("<f4")[:, 0]
    s = blocks[:, 4:8].copy().view("<f4")[:, 0]
    q = blocks[:, 8:].view(np.int8)
    assert d[0] == np.float32(12.7) / np.float32(127) and d[1] == 2.0
    assert q[0, 3] == -127 and q[0, 4] == 0 and q[0, 5] == 64 and q[1, 0] == 127 and q[1, 1] == 2
    assert np.count_nonzero(q) == 4
    np.testing.assert_array_equal(s, d * q.sum(axis=1).astype(np.float32))  # -127 + 64 and 127 + 2
    rng = np.random.default_rng(23)
    raw = random_weights(T.Q8_0, 5, 64, rng)
    expected = rounded_x(xq, 32) @ dequantize(raw, T.Q8_0, (5, 64)).astype(np.float64).T
    out = np.empty((1, 5), np.float32)
    kernels.matmul_rows_int(raw, int(T.Q8_0), xq, out, 0, 5)
    assert rel_error(out, expected) <= ROUNDED_X_BOUND


@pytest.mark.parametrize("path", dequant.available_cpu_paths())
def test_super_block_x_matches_numpy_rounding(path):
    """d = amax / 127, q = round-half-even(x * (1 / d)) clipped to +-127, bsum = sums of 16."""
    kernels = dequant.kernel_modules()[path]
    rng = np.random.default_rng(21)
    x = (rng.standard_normal((3, 768)) * rng.uniform(0.01, 100, (3, 1))).astype(np.float32)
    xq = np.empty((3, 3 * 292), np.uint8)
    kernels.quantize_x8k(x, xq)
    d, bsum, q = _q8k_fields(xq)
    blocks = x.reshape(3, 3, 256)
    d_np = np.abs(blocks).max(axis=2) / np.float32(127)
    np.testing.assert_array_equal(d, d_np)
    q_np = np.clip(np.rint(blocks * (np.float32(1) / d_np)[:, :, None]), -127, 127).astype(np.int8)
    np.testing.assert_array_equal(q, q_np)
    np.testing.assert_array_equal(bsum, q_np.reshape(3, 3, 16, 16).sum(axis=3, dtype=np.int16))


IQ4NL = [-127, -104, -83, -65, -49, -35, -22, -10, 1, 13, 25, 38, 53, 69, 89, 113]
FP4_TWICE = [0, 1, 2, 3, 4, 6, 8, 12, 0, -1, -2, -3, -4, -6, -8, -12]  # E2M1 values times 2


#: f16 bits of the block scale d that makes a grid type's run scale 1 with zero scale fields:
#: IQ2_XXS, IQ2_XS, IQ2_S d * 0.5 * 0.25, IQ3_XXS d * 0.5 * 0.5, IQ3_S d * 1; IQ1_S and IQ1_M
#: d * 1 on values g +- 1/8 (so d = 8 makes them the integers 8 g +- 1).
GRID_UNIT_D = {T.IQ2_XXS: 0x4800, T.IQ2_XS: 0x4800, T.IQ2_S: 0x4800, T.IQ3_XXS: 0x4400, T.IQ3_S: 0x3C00,
               T.IQ1_S: 0x4800, T.IQ1_M: 0x4800, T.TQ2_0: 0x3C00, T.TQ1_0: 0x3C00}


@pytest.mark.parametrize("path", dequant.available_cpu_paths())
@pytest.mark.parametrize("qtype", list(GRID_UNIT_D), ids=lambda t: t.name)
def test_grid_types_integer_dot_hand_computed(path, qtype):
    """IQ1_S, IQ1_M, IQ2_XXS, IQ2_XS, IQ2_S, IQ3_XXS, IQ3_S (random grid indices and signs), TQ1_0 and TQ2_0 blocks with unit scales,
    against integer x (x's scale 1, so x is not rounded): the integer path's sums are the exact
    integer sums of the values the dequantizer gives, times x (all below 2^24)."""
    kernels = dequant.kernel_modules()[path]
    rng = np.random.default_rng([int(qtype), 25])
    n, k = 6, 512
    type_size = TYPE_TRAITS[qtype].type_size
    raw = rng.integers(0, 256, size=(n, k // 256, type_size), dtype=np.uint8)
    unit = np.frombuffer(np.uint16(GRID_UNIT_D[qtype]).astype("<u2").tobytes(), np.uint8)
    if qtype == T.TQ2_0:      # codes - 1 under the f16 d in its last 2 bytes
        raw[:, :, 64:66] = unit
    elif qtype == T.TQ1_0:    # base-3 digits - 1 under the f16 d in its last 2 bytes
        raw[:, :, 52:54] = unit
    elif qtype != T.IQ1_M:
        raw[:, :, 0:2] = unit
    if qtype == T.IQ1_M:      # 4 u16 of 3-bit scales (zero), the f16 d in their top nibbles
        d = GRID_UNIT_D[qtype]
        words = [(d & 0xF) << 12, (d & 0xF0) << 8, (d & 0xF00) << 4, d & 0xF000]
        raw[:, :, 48:56] = np.frombuffer(np.array(words, "<u2").tobytes(), np.uint8)
    elif qtype == T.IQ1_S:    # per run, a u16 at 34 + 2j: the 3-bit scale in bits 12-14
        raw[:, :, 35:50:2] &= 0x8F
    elif qtype == T.IQ2_XXS:  # per run, byte 7 of its 8: the scale in the top nibble
        raw[:, :, 2 + 7:66:8] &= 0x0F
    elif qtype == T.IQ3_XXS:  # per run, a u32 at 66 + 4j: the scale in its top nibble
        raw[:, :, 66 + 3:98:4] &= 0x0F
    elif qtype == T.IQ3_S:    # the scale nibbles in the last 4 bytes
        raw[:, :, 106:110] = 0
    elif qtype not in (T.TQ1_0, T.TQ2_0):    # IQ2_XS, IQ2_S: two scale nibbles per run in the last 8 bytes
        raw[:, :, type_size - 8:] = 0
    raw = raw.reshape(n, -1)
    x = rng.integers(-127, 128, size=(3, k)).astype(np.float32)
    x[:, ::32] = 127  # amax 127 in every block of 32: scale 1
    values = dequantize(raw, qtype, (n, k)).astype(np.float64)
    assert np.array_equal(values, np.rint(values)) and np.abs(values).max() <= 62
    out = np.empty((3, n), np.float32)
    kernels.matmul_rows_int(raw, int(qtype), quantized_x(kernels, x, qtype), out, 0, n)
    np.testing.assert_array_equal(out, x.astype(np.float64) @ values.T)


@pytest.mark.parametrize("path", dequant.available_cpu_paths())
def test_table_types_integer_dot_hand_computed(path):
    """Q1_0, Q2_0, IQ4_NL, MXFP4, NVFP4, IQ4_XS, Q5_0, Q4_1 and Q5_1 blocks with unit scales (and integer offsets) against integer x (x's scale 1 per 32
    and per 256, so x is not rounded): the integer path gives the exact integer sums of the tables'
    values times x."""
    kernels = dequant.kernel_modules()[path]
    rng = np.random.default_rng(24)
    codes = rng.integers(0, 16, size=(2, 256))
    x = rng.integers(-127, 128, size=(1, 256)).astype(np.float32)
    x[0, ::32] = 127  # amax 127 in every block of 32: scale 1

    def nibbles(c):  # 32 codes -> 16 bytes: values 0..15 in the low nibbles, 16..31 in the high
        return (c[:16] | (c[16:] << 4)).astype(np.uint8).tobytes()

    iq4nl, fp4 = np.array(IQ4NL), np.array(FP4_TWICE)
    # IQ4_NL and MXFP4: 8 blocks of 32 per row; f16 1.0, and E8M0 128 (scale 2^(128 - 127), E2M1 / 2)
    nl = np.frombuffer(b"".join(b"\x00\x3c" + nibbles(c) for c in codes.reshape(-1, 32)), np.uint8).reshape(2, -1)
    mx = np.frombuffer(b"".join(b"\x80" + nibbles(c) for c in codes.reshape(-1, 32)), np.uint8).reshape(2, -1)
    # IQ4_XS: one super-block per row, d = 1, run j's scale ls_j - 32 with ls = 33, 31, 34, 30, 32, 35, 29, 40
    ls = np.array([33, 31, 34, 30, 32, 35, 29, 40])
    scales_h = sum(int(v >> 4) << (2 * j) for j, v in enumerate(ls))
    scales_l = bytes(int(ls[2 * i] & 15) | (int(ls[2 * i + 1] & 15) << 4) for i in range(4))
    xs = np.frombuffer(b"".join(b"\x00\x3c" + scales_h.to_bytes(2, "little") + scales_l
                                + b"".join(nibbles(c) for c in row.reshape(8, 32)) for row in codes), np.uint8).reshape(2, -1)
    runs = np.repeat(ls - 32, 32)
    # Q5_0: f16 1.0, the fifth bits of 32 five-bit codes in a u32, their low nibbles; value code - 16
    codes5 = rng.integers(0, 32, size=(2, 256))
    q5 = np.frombuffer(b"".join(b"\x00\x3c" + sum(int(v >> 4) << i for i, v in enumerate(c)).to_bytes(4, "little")
                                + nibbles(c & 15) for c in codes5.reshape(-1, 32)), np.uint8).reshape(2, -1)
    # Q4_1 and Q5_1: f16 d = 1 and an integer offset m per block (-8 .. 7, f16), value code + m
    offsets = rng.integers(-8, 8, size=(2, 8))
    m16 = [np.float16(v).astype("<f2").tobytes() for v in offsets.reshape(-1)]
    q41 = np.frombuffer(b"".join(b"\x00\x3c" + m + nibbles(c) for m, c in zip(m16, codes.reshape(-1, 32))),
                        np.uint8).reshape(2, -1)
    q51 = np.frombuffer(b"".join(b"\x00\x3c" + m + sum(int(v >> 4) << i for i, v in enumerate(c)).to_bytes(4, "little")
                                 + nibbles(c & 15) for m, c in zip(m16, codes5.reshape(-1, 32))), np.uint8).reshape(2, -1)
    per_value = np.repeat(offsets, 32, axis=1)
    # NVFP4: 4 blocks of 64 per row; UE4M3 scales 0x38 (1.0, so the E2M1 values: FP4_TWICE / 2) and
    # 0x40 (2.0: FP4_TWICE) per 16; group g's values 0..7 in the low nibbles of its 8 bytes, 8..15 in the high
    nv_scales = rng.choice([0x38, 0x40], size=(2, 16))
    groups = codes.reshape(2, 16, 16)
    nv = np.frombuffer(b"".join(bytes(nv_scales[r, 4 * b:4 * b + 4].tolist())
                                + b"".join((g[:8] | (g[8:] << 4)).astype(np.uint8).tobytes() for g in groups[r, 4 * b:4 * b + 4])
                                for r in range(2) for b in range(4)), np.uint8).reshape(2, -1)
    nv_values = fp4[codes] * np.repeat(np.where(nv_scales == 0x40, 1, 0.5), 16, axis=1)
    # Q1_0: f16 1.0 and 128 bits per block (value 8k + j: bit j of byte k, +1 or -1); Q2_0: f16 1.0
    # and 64 two-bit codes (value 4k + j: bits 2j, 2j + 1 of byte k, minus 1)
    bits = rng.integers(0, 2, size=(2, 256))
    q1 = np.frombuffer(b"".join(b"\x00\x3c" + np.packbits(c, bitorder="little").tobytes() for c in bits.reshape(-1, 128)),
                       np.uint8).reshape(2, -1)
    codes2 = rng.integers(0, 4, size=(2, 256))
    q2 = np.frombuffer(b"".join(b"\x00\x3c" + (c[0::4] | (c[1::4] << 2) | (c[2::4] << 4) | (c[3::4] << 6)).astype(np.uint8).tobytes()
                                for c in codes2.reshape(-1, 64)), np.uint8).reshape(2, -1)
    cases = [(T.Q1_0, q1, 2 * bits - 1), (T.Q2_0, q2, codes2 - 1), (T.IQ4_NL, nl, iq4nl[codes]), (T.MXFP4, mx, fp4[codes]), (T.IQ4_XS, xs, runs * iq4nl[codes]),
             (T.Q5_0, q5, codes5 - 16), (T.Q4_1, q41, codes + per_value), (T.Q5_1, q51, codes5 + per_value),
             (T.NVFP4, nv, nv_values)]
    for qtype, raw, values in cases:
        np.testing.assert_array_equal(dequantize(raw, qtype, (2, 256)), values.astype(np.float32))
        out = np.empty((1, 2), np.float32)
        kernels.matmul_rows_int(raw, int(qtype), quantized_x(kernels, x, qtype), out, 0, 2)  # per 32 or 256
        expected = values @ x[0].astype(np.int64)
        np.testing.assert_array_equal(out[0], expected.astype(np.float32), err_msg=qtype.name)


def test_integer_dot_rejects_the_wrong_x_layout():
    kernels = dequant.kernel_modules()["portable"]
    rng = np.random.default_rng(22)
    raw = random_weights(T.Q4_K, 3, 256, rng)
    x = rng.standard_normal((1, 256)).astype(np.float32)
    per32 = np.empty((1, 8 * 40), np.uint8)
    kernels.quantize_x8(x, per32)
    with argument_error(ValueError, match="fit"):
        kernels.matmul_rows_int(raw, int(T.Q4_K), per32, np.empty((1, 3), np.float32), 0, 3)
    raw0 = random_weights(T.Q4_0, 3, 256, rng)
    per256 = quantized_x(kernels, x, T.Q4_K)
    with argument_error(ValueError, match="fit"):
        kernels.matmul_rows_int(raw0, int(T.Q4_0), per256, np.empty((1, 3), np.float32), 0, 3)


@pytest.mark.parametrize("qtype", INT_TYPES, ids=lambda t: t.name)
@pytest.mark.parametrize("m", [1, 3, 8])
@pytest.mark.parametrize("n_super", [1, 3, 5])
def test_integer_path_same_bits_on_every_build_and_thread_count(qtype, m, n_super, monkeypatch):
    """K odd multiples of 256: every kernel build and 1, 2, 3 threads give the same bits, and
    those are the float64 product of the rounded x up to the float32 steps."""
    import sys

    monkeypatch.setattr(sys.modules["fastgguf.matmul"], "_MIN_WORK_PER_THREAD", 1)  # split even tiny weights
    rng = np.random.default_rng([int(qtype), m, n_super, 31])
    n, k = 37, 256 * n_super
    raw = random_weights(qtype, n, k, rng)
    x = rng.standard_normal((m, k)).astype(np.float32)
    before = fastgguf.cpu_path()
    outs = {}
    try:
        for path in dequant.available_cpu_paths():
            fastgguf.set_cpu_path(path)
            for threads in (1, 2, 3):
                outs[path, threads] = matmul(x, raw, qtype, exact=False, threads=threads)
    finally:
        fastgguf.set_cpu_path(before)
    first = outs.pop(("portable", 1))
    for key, out in outs.items():
        np.testing.assert_array_equal(out, first, err_msg=str(key))
    kernels = dequant.kernel_modules()["portable"]
    rounded = rounded_x(quantized_x(kernels, x, qtype), kernels.int_x_layout(int(qtype))[0])
    assert rel_error(first, reference(rounded, raw, qtype, n, k)) <= ROUNDED_X_BOUND
    # random blocks (scales of any size): x per 256 costs the IQ types' sums more than the K-quants'
    assert rel_error(first, reference(x, raw, qtype, n, k)) <= (2 * INT_BOUND if qtype in GRID_UNIT_D else INT_BOUND)


#: The integer path's relative error vs the float64 product, quantized Gaussian weights
#: (fastgguf.quantize), Gaussian activations with 6 channels 20x larger (measured: per-32 x
#: 0.9-1.0e-2, per-256 x of the K-quants 2.2-2.7e-2; plain Gaussian x 5e-3 and 7e-3).
REALISTIC_INT_BOUND = {**{qtype: 1.5e-2 for qtype in PER_32_INT_TYPES}, **{qtype: 4e-2 for qtype in K_INT_TYPES}}


@pytest.mark.parametrize("qtype", INT_TYPES, ids=lambda t: t.name)
def test_integer_path_error_on_realistic_data(qtype):
    rng = np.random.default_rng(int(qtype) + 41)
    n, k = 128, 2048
    w = (rng.standard_normal((n, k)) * 0.02).astype(np.float32)
    imatrix = np.ones(k, np.float32) if qtype in (T.IQ2_XXS, T.IQ2_XS, T.IQ1_S, T.IQ1_M) else None  # as ggml
    raw = fastgguf.quantize(w, qtype, imatrix=imatrix)
    x = rng.standard_normal((4, k)).astype(np.float32)
    x[:, rng.choice(k, 6, replace=False)] *= 20.0
    err = rel_error(matmul(x, raw, qtype, exact=False), reference(x, raw, qtype, n, k))
    assert EXACT_BOUND < err <= REALISTIC_INT_BOUND[qtype]


def _lanes8_sum(a: np.ndarray) -> np.ndarray:
    """fgg_mm_lanes8_sum over the last axis (8 float32 lanes) in its fixed order."""
    return ((a[..., 0] + a[..., 4]) + (a[..., 2] + a[..., 6])) + ((a[..., 1] + a[..., 5]) + (a[..., 3] + a[..., 7]))


def _per_32_float_steps(raw: np.ndarray, qtype: GGMLType, xq: np.ndarray) -> np.ndarray:
    """The integer path of a per-32 type with an f16 scale in its first 2 bytes, modelled in numpy
    float32 (each operation rounded as the kernels round it): per run of 32 the 8 int32 lanes
    (products of values 4k..4k+3); blocks of one run add lane * (d_w * d_x) into 8 float lanes,
    Q1_0's and Q2_0's blocks of 4 and 2 runs first sum lane * d_x over their runs, in order, then
    add that times d_w; the 8 lanes are summed in one fixed order."""
    block_size, type_size = TYPE_TRAITS[qtype]
    runs, n, m = block_size // 32, raw.shape[0], xq.shape[0]
    blocks = raw.reshape(n, -1, type_size)
    d_w = blocks[:, :, 0:2].copy().view("<f2")[:, :, 0].astype(np.float32)  # (n, nb)
    with np.errstate(divide="ignore", invalid="ignore"):
        v = dequantize(raw, qtype, (n, blocks.shape[1] * block_size)).reshape(n, -1, runs, 32) / d_w[:, :, None, None]
    v = np.where(d_w[:, :, None, None] == 0, 0, v).astype(np.int64)  # small integers: exact
    d_x, q_x = x_blocks(xq, 32)
    q_x = q_x.astype(np.int64)
    acc = np.zeros((n, m, 8), np.float32)
    for b in range(blocks.shape[1]):
        part = None
        for r in range(runs):
            j = b * runs + r
            lanes = np.einsum("nkc,mkc->nmk", v[:, b, r].reshape(n, 8, 4), q_x[:, j].reshape(m, 8, 4)).astype(np.float32)
            if runs == 1:
                acc = acc + lanes * (d_w[:, b, None] * d_x[None, :, j])[:, :, None]
            else:
                term = lanes * d_x[None, :, j, None]
                part = term if part is None else part + term
        if runs > 1:
            acc = acc + part * d_w[:, b, None, None]
    return _lanes8_sum(acc).T


@pytest.mark.parametrize("qtype", [T.Q1_0, T.Q2_0, T.Q4_0, T.Q5_0, T.Q8_0, T.IQ4_NL], ids=lambda t: t.name)
@pytest.mark.parametrize("m", [1, 3, 9, 20])
def test_per_32_integer_path_bits_are_its_documented_float_steps(qtype, m):
    """Every build's and kernel's bits (row kernels, the few-rows and batch kernels by m) equal the
    float steps written out in numpy: the order of the float operations is the contract that makes
    them agree, so a change of it must show here, not only as builds that still agree."""
    rng = np.random.default_rng([int(qtype), m, 26])
    n, k = 11, k_for(qtype, 6 if TYPE_TRAITS[qtype].block_size == 32 else 3)
    raw = random_weights(qtype, n, k, rng)
    x = rng.standard_normal((m, k)).astype(np.float32)
    for name, kernels, vnni in _int_dot_variants():
        before = kernels._set_vnni(vnni)
        try:
            xq = quantized_x(kernels, x, qtype)
            out = np.empty((m, n), np.float32)
            kernels.matmul_rows_int(raw, int(qtype), xq, out, 0, n)
        finally:
            kernels._set_vnni(before)
        np.testing.assert_array_equal(out, _per_32_float_steps(raw, qtype, xq), err_msg=f"{name} vnni={vnni}")


def _q4_k_exact_float_steps(raw: np.ndarray, x: np.ndarray) -> np.ndarray:
    """The exact path of Q4_K factored by sub-block, modelled in numpy float32 (each operation
    rounded as the kernels round it, none fused): per sub-block of 32 the 8 lanes
    t[l] = q[l] x[l] + q[8 + l] x[8 + l] + ... in order, then acc[l] + S t[l] with S = d * scale;
    per super-block mins[l] + M[l] * xsum[l] with M = dmin * min and xsum the sub-block's sum of x
    (8 lanes of 4 values in order, then the fixed sum); the result lanes8_sum(acc) -
    lanes8_sum(mins)."""
    n, m = raw.shape[0], x.shape[0]
    blocks = raw.reshape(n, -1, 144)
    nsb = blocks.shape[1]
    d = blocks[:, :, 0:2].copy().view("<f2")[:, :, 0].astype(np.float32)
    dmin = blocks[:, :, 2:4].copy().view("<f2")[:, :, 0].astype(np.float32)
    s = blocks[:, :, 4:16].astype(np.int64)
    sc = np.concatenate([s[..., 0:4] & 63, (s[..., 8:12] & 15) | ((s[..., 0:4] >> 6) << 4)], axis=-1)
    mn = np.concatenate([s[..., 4:8] & 63, (s[..., 8:12] >> 4) | ((s[..., 4:8] >> 6) << 4)], axis=-1)
    S = d[..., None] * sc.astype(np.float32)  # (n, nsb, 8)
    M = dmin[..., None] * mn.astype(np.float32)
    qs = blocks[:, :, 16:].reshape(n, nsb, 4, 32)
    q = np.stack([qs & 15, qs >> 4], axis=3).reshape(n, nsb, 8, 4, 8).astype(np.float32)  # sub-block j = 2h + nibble
    xs = x.reshape(m, nsb, 8, 4, 8)
    xlane = ((xs[..., 0, :] + xs[..., 1, :]) + xs[..., 2, :]) + xs[..., 3, :]
    xsum = _lanes8_sum(xlane)  # (m, nsb, 8)
    acc = np.zeros((m, n, 8), np.float32)
    mins = np.zeros((m, n, 8), np.float32)
    for b in range(nsb):
        for j in range(8):
            t = q[None, :, b, j, 0] * xs[:, None, b, j, 0]
            for c in range(1, 4):
                t = t + q[None, :, b, j, c] * xs[:, None, b, j, c]
            acc = acc + S[None, :, b, j, None] * t
        mins = mins + M[None, :, b, :] * xsum[:, None, b, :]
    return _lanes8_sum(acc) - _lanes8_sum(mins)


def _q1_0_exact_float_steps(raw: np.ndarray, x: np.ndarray) -> np.ndarray:
    """The exact path of Q1_0 modelled in numpy float32 (each operation rounded as the kernels round
    it): per run of 32 the 8 lanes t[l] = s[l] x[l] + s[8 + l] x[8 + l] + ... in order (s = +1 where
    the value's bit is set, else -1), then acc[l] + d t[l], the runs in order; the result
    lanes8_sum(acc) - 0 (no mins)."""
    n, m = raw.shape[0], x.shape[0]
    blocks = raw.reshape(n, -1, 18)
    nb = blocks.shape[1]
    d = blocks[:, :, 0:2].copy().view("<f2")[:, :, 0].astype(np.float32)
    bits = np.unpackbits(blocks[:, :, 2:], axis=-1, bitorder="little").reshape(n, nb, 4, 4, 8)  # value 8k + j: bit j of byte k
    s = np.where(bits == 1, np.float32(1), np.float32(-1))
    xs = x.reshape(m, nb, 4, 4, 8)
    acc = np.zeros((m, n, 8), np.float32)
    for b in range(nb):
        for r in range(4):
            t = s[None, :, b, r, 0] * xs[:, None, b, r, 0]
            for c in range(1, 4):
                t = t + s[None, :, b, r, c] * xs[:, None, b, r, c]
            acc = acc + d[None, :, b, None] * t
    return _lanes8_sum(acc) - np.float32(0)


#: The exact path's float steps written out in numpy, per type: (model, row length, seed).
_FLOAT_STEP_MODELS = {T.Q4_K: (_q4_k_exact_float_steps, 512, 27), T.Q1_0: (_q1_0_exact_float_steps, 1024, 28)}


@pytest.mark.parametrize("qtype", list(_FLOAT_STEP_MODELS), ids=lambda t: t.name)
@pytest.mark.parametrize("m", [1, 3, 4, 5, 8, 9, 33])
def test_exact_path_bits_are_the_documented_float_steps(qtype, m):
    """The exact path's bits on every build equal its float steps written out in numpy. Q4_K: the
    register kernels (1 to 8 rows of x), the spans of 9 and more rows (the avx512 build's pairs of
    rows of x against two weight rows at a time, an odd weight row and an odd row of x last).
    Q1_0: fgg_mm_q1_0_regs for every row count, 4 rows at a time, beyond 8 rows in spans (x
    copied into a panel, or a panel of pairs). The float order is the contract that makes the
    builds agree, so a change of it must show here, not only as builds that still agree."""
    model, k, seed = _FLOAT_STEP_MODELS[qtype]
    rng = np.random.default_rng([m, seed])
    n = 5
    raw = random_weights(qtype, n, k, rng)
    x = rng.standard_normal((m, k)).astype(np.float32)
    expected = model(raw, x)
    for path, kernels in dequant.kernel_modules().items():
        out = np.empty((m, n), np.float32)
        kernels.matmul_rows(raw, int(qtype), x, out, 0, n, False, 0, 2)
        np.testing.assert_array_equal(out, expected, err_msg=path)
