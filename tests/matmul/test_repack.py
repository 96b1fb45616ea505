"""fastgguf.repack: weights interleaved 16 rows at a time, the same bits as the original blocks."""

from __future__ import annotations

import numpy as np
import pytest
from test_matmul import quantized_x, random_weights

import fastgguf
from fastgguf import GGMLType, dequant
from fastgguf.matmul import RepackedWeight, matmul, repack

from conftest import argument_error, assert_same_bits

T = GGMLType
REPACK_TYPES = (T.Q8_0, T.Q4_0, T.Q5_0, T.Q4_1, T.Q5_1, T.IQ4_NL, T.MXFP4, T.Q4_K, T.Q5_K, T.Q6_K, T.IQ4_XS, T.Q3_K,
                T.Q2_K)
#: Bytes per super-block in the file and in the tiles: the K kinds with mins have their scales unpacked
K_BYTES = {T.Q4_K: (144, 148), T.Q5_K: (176, 180), T.Q6_K: (210, 210), T.IQ4_XS: (136, 138), T.Q3_K: (110, 114),
           T.Q2_K: (84, 84)}
TYPE_BYTES = {T.Q8_0: 34, T.Q4_0: 18, T.Q5_0: 22, T.Q4_1: 20, T.Q5_1: 24, T.IQ4_NL: 18, T.MXFP4: 17}
#: The rows of x (first, last) for which matmul runs a repacked weight on its tiles, per tile kernel
#: (the rest of the per-32 types: PER32_TILE_ROWS); None: such weights are not repacked.
TILE_ROWS = {"vnni": {T.Q4_K: (2, 24), T.Q5_K: (1, 12), T.Q6_K: None, T.Q8_0: None, T.IQ4_XS: (1, 256),
                      T.Q3_K: (1, 1), T.Q2_K: (1, 2)},
             "vnni-split": {T.Q4_K: (2, 32), T.Q5_K: (5, 12), T.Q6_K: None, T.Q8_0: None, T.IQ4_XS: (1, 256),
                            T.Q3_K: (1, 5), T.Q2_K: (1, 6), T.Q4_1: (1, 12), T.Q5_1: (1, 12), T.IQ4_NL: (1, 6)},
             "avx2": {T.Q4_K: None, T.Q6_K: None, T.Q8_0: None, T.MXFP4: None, T.Q4_0: None}}
PER32_TILE_ROWS = {"vnni": (1, 3), "vnni-split": (1, 4), "avx2": (1, 1)}


def tile_rows(kernel, qtype):
    return None if kernel is None else TILE_ROWS[kernel].get(qtype, PER32_TILE_ROWS[kernel])


def _tiles(kernels, raw: np.ndarray, qtype: GGMLType) -> np.ndarray:
    rows = kernels.repack_tile_rows()
    tiles = np.full(((raw.shape[0] + rows - 1) // rows, kernels.repack_row_bytes(int(qtype), raw.shape[1]) * rows), 0xAB,
                    np.uint8)
    kernels.repack_rows(raw, int(qtype), tiles)
    return tiles


def _portable_tiles(qtype: GGMLType, n: int, k: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """Random blocks of n weight rows and their tiles by the portable build."""
    raw = random_weights(qtype, n, k, np.random.default_rng(seed))
    return raw, _tiles(dequant.kernel_modules()["portable"], raw, qtype)


@pytest.mark.parametrize("qtype", REPACK_TYPES, ids=lambda t: t.name)
@pytest.mark.parametrize("n", [1, 16, 37])
def test_tiles_same_bits_as_original_blocks(qtype, n):
    # random blocks: every code, fifth bit, sign and (finite) scale, subnormal ones included;
    # x with +-127 in every block; m covers one row, pairs, an odd last row and the spans
    # (Q8_0: 30 blocks per span, 72 blocks here; Q4_K: 6 super-blocks per span beyond 4 rows, 9 here)
    rng = np.random.default_rng([int(qtype), n])
    k = 256 * 9
    raw = random_weights(qtype, n, k, rng)
    for path in dequant.available_cpu_paths():
        kernels = dequant.kernel_modules()[path]
        tiles = _tiles(kernels, raw, qtype)
        for m in (1, 2, 3, 6, 9):
            x = rng.standard_normal((m, k)).astype(np.float32)
            x[:, ::32] *= 50.0
            xq = quantized_x(kernels, x, qtype)
            expected = np.empty((m, n), np.float32)
            kernels.matmul_rows_int(raw, int(qtype), xq, expected, 0, n)
            out = np.full((m, n), np.nan, np.float32)
            kernels.matmul_repacked_int(tiles, int(qtype), n, xq, out, 2, reference=True)
            assert_same_bits(out, expected)
            if kernels.repacked_kernel(int(qtype)) is not None:
                for threads in (1, 2):
                    out = np.full((m, n), np.nan, np.float32)
                    kernels.matmul_repacked_int(tiles, int(qtype), n, xq, out, threads)
                    assert_same_bits(out, expected)


def test_tile_layout_by_hand():
    # Q4_0 and Q5_0 rows whose bytes are their row and byte numbers: the documented places
    rng = np.random.default_rng(5)
    kernels = dequant.kernel_modules()["portable"]
    raw = random_weights(T.Q4_0, 18, 64, rng)
    tiles = _tiles(kernels, raw, T.Q4_0)
    assert tiles.shape == (2, 2 * 18 * 16)
    block1 = tiles[1, 288:576]  # block 1 of rows 16, 17 (the rest zeros)
    assert bytes(block1[0:4]) == bytes(raw[16, 18:20]) + bytes(raw[17, 18:20])
    for j in range(4):
        assert bytes(block1[32 + 64 * j:32 + 64 * j + 8]) == bytes(raw[16, 20 + 4 * j:24 + 4 * j]) + bytes(raw[17, 20 + 4 * j:24 + 4 * j])
    assert not block1[4:32].any() and not block1[32 + 8:32 + 64].any()
    tile0 = tiles[0, :288]
    for r in range(16):
        assert bytes(tile0[2 * r:2 * r + 2]) == bytes(raw[r, 0:2])
        for j in range(4):
            assert bytes(tile0[32 + 64 * j + 4 * r:36 + 64 * j + 4 * r]) == bytes(raw[r, 2 + 4 * j:6 + 4 * j])
    # Q5_0: byte i of row r's fifth bits has bit k = qh bit 4k + i
    raw = random_weights(T.Q5_0, 3, 32, rng)
    tiles = _tiles(kernels, raw, T.Q5_0)
    for r in range(3):
        qh = int.from_bytes(bytes(raw[r, 2:6]), "little")
        for i in range(4):
            assert tiles[0, 32 + 4 * r + i] == sum(((qh >> (4 * k + i)) & 1) << k for k in range(8))


def test_q5_k_tile_layout_by_hand():
    # Q5_K: Q4_K's tile block (d, dmin, scales and mins as bytes, 32 chunks of nibbles), then 8
    # chunks of fifth bits, chunk k holding row r's qh[4k .. 4k + 3] at 4r
    raw, tiles = _portable_tiles(T.Q5_K, 3, 512, seed=6)
    assert tiles.shape == (1, 2 * 180 * 16)
    for b in range(2):
        tb, wb = tiles[0, 2880 * b:2880 * (b + 1)], raw[:, 176 * b:176 * (b + 1)]
        for r in range(3):
            assert bytes(tb[2 * r:2 * r + 2]) == bytes(wb[r, 0:2]) and bytes(tb[32 + 2 * r:34 + 2 * r]) == bytes(wb[r, 2:4])
            sc = wb[r, 4:16].astype(np.int64)
            for j in range(8):  # ggml's 6-bit scale and min of sub-block j
                if j < 4:
                    s, m = sc[j] & 63, sc[j + 4] & 63
                else:
                    s = (sc[j + 4] & 15) | ((sc[j - 4] >> 6) << 4)
                    m = (sc[j + 4] >> 4) | ((sc[j] >> 6) << 4)
                assert tb[64 + 16 * j + r] == s and tb[192 + 16 * j + r] == m
            for c in range(32):
                assert bytes(tb[320 + 64 * c + 4 * r:324 + 64 * c + 4 * r]) == bytes(wb[r, 48 + 4 * c:52 + 4 * c])
            for k in range(8):
                assert bytes(tb[2368 + 64 * k + 4 * r:2372 + 64 * k + 4 * r]) == bytes(wb[r, 16 + 4 * k:20 + 4 * k])
        assert not tb[2368 + 12:2368 + 64].any()  # rows 3-15 of the last tile are zeros


def test_iq4_xs_tile_layout_by_hand():
    # IQ4_XS: the 16 rows' d, their 8 scales ls - 32 as int8, then 32 chunks of nibbles, chunk
    # 4j + c holding row r's qs[16j + 4c .. 16j + 4c + 3] at 4r
    raw, tiles = _portable_tiles(T.IQ4_XS, 2, 512, seed=8)
    assert tiles.shape == (1, 2 * 138 * 16)
    for b in range(2):
        tb, wb = tiles[0, 2208 * b:2208 * (b + 1)], raw[:, 136 * b:136 * (b + 1)]
        for r in range(2):
            assert bytes(tb[2 * r:2 * r + 2]) == bytes(wb[r, 0:2])
            high = int(wb[r, 2]) | int(wb[r, 3]) << 8
            for j in range(8):  # ggml's 6-bit scale of run j, less 32
                ls = ((int(wb[r, 4 + j // 2]) >> (4 * (j % 2))) & 15) | (((high >> (2 * j)) & 3) << 4)
                assert tb[32 + 16 * j + r].astype(np.int8) == ls - 32
            for c in range(32):
                assert bytes(tb[160 + 64 * c + 4 * r:164 + 64 * c + 4 * r]) == bytes(wb[r, 8 + 4 * c:12 + 4 * c])
        assert not tb[160 + 8:160 + 64].any() and not tb[32 + 2:32 + 16].any()  # rows 2-15: zeros


def test_q2_k_and_q3_k_tile_layout_by_hand():
    # the 2-bit codes in 16 chunks, chunk 8h + k holding row r's qs[32h + 4k .. 32h + 4k + 3] at 4r;
    # Q2_K: d, dmin, the scale bytes as the file's; Q3_K: d, the 16 scales less 32, then 8 chunks of
    # hmask, chunk k holding row r's hmask[4k .. 4k + 3]
    raw, tiles = _portable_tiles(T.Q2_K, 2, 256, seed=10)
    tb = tiles[0]
    assert tiles.shape == (1, 84 * 16)
    for r in range(2):
        assert bytes(tb[2 * r:2 * r + 2]) == bytes(raw[r, 80:82]) and bytes(tb[32 + 2 * r:34 + 2 * r]) == bytes(raw[r, 82:84])
        assert [int(tb[64 + 16 * g + r]) for g in range(16)] == list(raw[r, :16])
        for c in range(16):
            assert bytes(tb[320 + 64 * c + 4 * r:324 + 64 * c + 4 * r]) == bytes(raw[r, 16 + 4 * c:20 + 4 * c])
    raw, tiles = _portable_tiles(T.Q3_K, 2, 256, seed=11)
    tb = tiles[0]
    assert tiles.shape == (1, 114 * 16)
    for r in range(2):
        assert bytes(tb[2 * r:2 * r + 2]) == bytes(raw[r, 108:110])
        sc = raw[r, 96:108].astype(np.int64)
        for g in range(16):  # ggml's 6-bit scale g: 4 bits from bytes 0-7, 2 from bytes 8-11
            low = (sc[g % 8] >> (4 * (g // 8))) & 15
            assert tb[32 + 16 * g + r].astype(np.int8) == (low | (((sc[8 + g % 4] >> (2 * (g // 4))) & 3) << 4)) - 32
        for c in range(16):
            assert bytes(tb[288 + 64 * c + 4 * r:292 + 64 * c + 4 * r]) == bytes(raw[r, 32 + 4 * c:36 + 4 * c])
        for k in range(8):
            assert bytes(tb[1312 + 64 * k + 4 * r:1316 + 64 * k + 4 * r]) == bytes(raw[r, 4 * k:4 * k + 4])


@pytest.mark.parametrize("qtype", [T.Q4_0, T.Q8_0, T.Q5_1, T.MXFP4, T.Q2_K, T.Q3_K, T.Q4_K, T.Q5_K, T.Q6_K, T.IQ4_XS],
                         ids=lambda t: t.name)
def test_repack_api_same_bits(qtype):
    rng = np.random.default_rng([int(qtype), 2])
    n, k = 45, 256 * 3
    raw = random_weights(qtype, n, k, rng)
    rw = repack(raw, qtype)
    assert isinstance(rw, RepackedWeight) and rw.type == qtype and rw.shape == (n, k)
    kernel = fastgguf.dequant.kernel_modules()[fastgguf.cpu_path()].repacked_kernel(int(qtype))
    assert rw.repacked == (tile_rows(kernel, qtype) is not None)
    row_bytes = raw.shape[1] // K_BYTES[qtype][0] * K_BYTES[qtype][1] if qtype in K_BYTES else raw.shape[1]
    assert rw.nbytes == (48 * row_bytes if rw.repacked else 0)
    wide = (100, 257) if qtype == T.IQ4_XS else ()  # IQ4_XS takes the tiles up to 256 rows
    for m in (1, 2, 5, 9, 12, 13, 20, 25) + wide:  # the tiles' rows (TILE_ROWS) and beyond
        x = rng.standard_normal((m, k)).astype(np.float32)
        for threads in (1, 2):
            assert_same_bits(matmul(x, rw, exact=False, threads=threads), matmul(x, raw, qtype, exact=False))
        assert_same_bits(matmul(x, rw), matmul(x, raw, qtype))  # the float path reads the original
    x1 = rng.standard_normal(k).astype(np.float32)
    assert_same_bits(matmul(x1, rw, exact=False), matmul(x1, raw, qtype, exact=False))
    out = np.empty((3, n), np.float32)
    x3 = rng.standard_normal((3, k)).astype(np.float32)
    assert matmul(x3, rw, exact=False, out=out) is out
    assert_same_bits(out, matmul(x3, raw, qtype, exact=False))
    assert "RepackedWeight" in repr(rw) and qtype.name in repr(rw)


@pytest.mark.parametrize("qtype", REPACK_TYPES, ids=lambda t: t.name)
def test_which_products_run_on_the_tiles(qtype, monkeypatch):
    # the tiles take the rows of x where they were measured faster than the original blocks
    # (matmul.py's _TILE_ROWS), the original blocks the rest; the same bits either way
    rng = np.random.default_rng([int(qtype), 11])
    n, k = 32, 256 * 2
    raw = random_weights(qtype, n, k, rng)
    rw = repack(raw, qtype)
    kernels = fastgguf._backend.kernels()
    span = tile_rows(kernels.repacked_kernel(int(qtype)), qtype)
    calls = []
    real = kernels.matmul_repacked_int
    monkeypatch.setattr(kernels, "matmul_repacked_int", lambda *a, **kw: (calls.append(a[1]), real(*a, **kw)))
    for m in (1, 2, 3, 4, 9, 13, 25):
        calls.clear()
        x = rng.standard_normal((m, k)).astype(np.float32)
        assert_same_bits(matmul(x, rw, exact=False), matmul(x, raw, qtype, exact=False))
        assert bool(calls) == (span is not None and span[0] <= m <= span[1]), (m, span, calls)


def test_repack_of_a_tensor_and_other_types(tmp_path):
    rng = np.random.default_rng(9)
    w4 = rng.standard_normal((40, 256)).astype(np.float32)
    path = tmp_path / "w.gguf"
    with fastgguf.GGUFWriter(path) as writer:
        writer.add_tensor("a", fastgguf.quantize(w4, T.Q4_0), T.Q4_0, w4.shape)
        writer.add_tensor("b", fastgguf.quantize(w4, T.IQ3_S), T.IQ3_S, w4.shape)
    x = rng.standard_normal((2, 256)).astype(np.float32)
    with fastgguf.open(path) as f:
        for name in ("a", "b"):
            t = f.tensors[name]
            rw = repack(t)
            assert rw.source is t and rw.type == t.type
            if t.type == T.IQ3_S:
                assert not rw.repacked and rw.tiles is None  # no layout: the products read the blocks
            assert_same_bits(matmul(x, rw, exact=False), matmul(x, t, exact=False))
            assert_same_bits(matmul(x, rw, t.type, exact=False), matmul(x, t, exact=False))
            with argument_error(ValueError, "disagrees"):
                matmul(x, rw, T.Q8_0)


def test_tile_kernel_follows_the_build_in_use():
    # tiles made on one build are used by the tile kernel of the build in use when the product
    # runs (VNNI, or AVX2 with VNNI switched off), or the original blocks (portable): same bits
    rng = np.random.default_rng(3)
    raw = random_weights(T.Q4_0, 20, 64, rng)
    x = rng.standard_normal((2, 64)).astype(np.float32)
    expected = matmul(x, raw, T.Q4_0, exact=False)
    kernels = dequant.kernel_modules()[fastgguf.cpu_path()]
    rw = repack(raw, T.Q4_0)
    assert rw.repacked == (tile_rows(kernels.repacked_kernel(int(T.Q4_0)), T.Q4_0) is not None)
    before = kernels._set_vnni(False)
    try:
        assert kernels.repacked_kernel(int(T.Q4_0)) in (None, "avx2")
        assert_same_bits(matmul(x, rw, exact=False), expected)
    finally:
        kernels._set_vnni(before)
    path = fastgguf.cpu_path()
    fastgguf.set_cpu_path("portable")
    try:
        assert dequant.kernel_modules()["portable"].repacked_kernel(int(T.Q4_0)) is None
        assert not repack(raw, T.Q4_0).repacked  # nothing to run tiles: nothing copied
        assert_same_bits(matmul(x, rw, exact=False), expected)
        with pytest.raises(NotImplementedError):
            dequant.kernel_modules()["portable"].matmul_repacked_int(
                np.zeros((2, 18 * 2 * 16), np.uint8), int(T.Q4_0), 20, quantized_x(kernels, x, T.Q4_0),
                np.empty((2, 20), np.float32))
    finally:
        fastgguf.set_cpu_path(path)


def test_repack_arguments():
    kernels = dequant.kernel_modules()["portable"]
    raw = np.zeros((3, 18), np.uint8)
    with argument_error(ValueError, "no repacked layout"):
        kernels.repack_rows(np.zeros((3, 66), np.uint8), int(T.TQ2_0), np.zeros((1, 66 * 16), np.uint8))
    with argument_error(ValueError, "dst must have shape"):
        kernels.repack_rows(raw, int(T.Q4_0), np.zeros((1, 18), np.uint8))
    with argument_error(ValueError, "whole blocks"):
        kernels.repack_rows(np.zeros((3, 17), np.uint8), int(T.Q4_0), np.zeros((1, 17 * 16), np.uint8))
    tiles = np.zeros((1, 18 * 16), np.uint8)
    xq = np.zeros((1, kernels.q8_block_bytes()), np.uint8)
    with argument_error(ValueError, "n_rows"):
        kernels.matmul_repacked_int(tiles, int(T.Q4_0), 17, xq, np.empty((1, 17), np.float32), reference=True)
    with argument_error(ValueError, "out must be"):
        kernels.matmul_repacked_int(tiles, int(T.Q4_0), 3, xq, np.empty((1, 4), np.float32), reference=True)
    with argument_error(ValueError, "threads"):
        kernels.matmul_repacked_int(tiles, int(T.Q4_0), 3, xq, np.empty((1, 3), np.float32), 0, reference=True)
    with argument_error(ValueError):
        repack(np.zeros((2, 2, 3, 18), np.uint8), T.Q4_0)  # 2-D or 3-D only
    with argument_error(TypeError):
        repack(np.zeros((2, 18), np.uint8))  # a raw weight needs its type
    assert fastgguf.repack is repack and "repack" in fastgguf.__all__ and "RepackedWeight" in fastgguf.__all__


def test_layout_sizes():
    kernels = dequant.kernel_modules()["portable"]
    for qtype, size in TYPE_BYTES.items():
        assert kernels.can_repack(int(qtype))
        raw = np.zeros((1, size), np.uint8)
        kernels.repack_rows(raw, int(qtype), np.zeros((1, size * 16), np.uint8))  # the same bytes per row
    kernels.repack_rows(np.zeros((1, 144), np.uint8), int(T.Q4_K), np.zeros((1, 148 * 16), np.uint8))
    assert kernels.repack_row_bytes(int(T.Q4_K), 144 * 3) == 148 * 3  # its scales unpacked to bytes
    assert kernels.repack_row_bytes(int(T.Q4_0), 18 * 3) == 18 * 3
    assert kernels.repack_row_bytes(int(T.Q6_K), 210 * 2) == 210 * 2
    kernels.repack_rows(np.zeros((1, 210), np.uint8), int(T.Q6_K), np.zeros((1, 210 * 16), np.uint8))
    assert kernels.repack_row_bytes(int(T.Q5_K), 176 * 2) == 180 * 2  # Q4_K's unpacked scales, and qh
    kernels.repack_rows(np.zeros((1, 176), np.uint8), int(T.Q5_K), np.zeros((1, 180 * 16), np.uint8))
    assert kernels.repack_row_bytes(int(T.IQ4_XS), 136 * 2) == 138 * 2  # its scales as bytes
    assert kernels.repack_row_bytes(int(T.Q3_K), 110 * 2) == 114 * 2  # its scales as bytes
    assert kernels.repack_row_bytes(int(T.Q2_K), 84 * 2) == 84 * 2
    for qtype in (T.IQ3_S, T.IQ2_XXS, T.TQ2_0, T.NVFP4, T.Q1_0, T.F32):
        assert not kernels.can_repack(int(qtype))


@pytest.mark.parametrize("qtype", [T.MXFP4, T.Q4_0, T.Q8_0, T.Q2_K, T.Q3_K, T.Q4_K, T.Q5_K, T.Q6_K, T.IQ4_XS],
                         ids=lambda t: t.name)
def test_grouped_tiles_same_bits(qtype):
    # matmul_id's groups against the tiles of 5 experts (one with no rows), on every build: the
    # reference tile kernel, and the VNNI one where the CPU has it
    rng = np.random.default_rng([int(qtype), 7])
    n_exp, n, k = 5, 21, 256 * 2
    raw = np.stack([random_weights(qtype, n, k, rng) for _ in range(n_exp)])
    experts = np.array([0, 2, 3, 4], np.int64)
    bounds = np.array([0, 3, 4, 4, 9], np.int64)  # 3 rows, 1 row, none, 5 rows
    x = rng.standard_normal((9, k)).astype(np.float32)
    for path in dequant.available_cpu_paths():
        kernels = dequant.kernel_modules()[path]
        rows = kernels.repack_tile_rows()
        tiles = np.concatenate([_tiles(kernels, raw[e], qtype) for e in range(n_exp)])
        assert tiles.shape[0] == n_exp * ((n + rows - 1) // rows)
        xq = quantized_x(kernels, x, qtype)
        expected = np.empty((9, n), np.float32)
        kernels.matmul_rows_grouped(raw, int(qtype), x, xq, expected, experts, bounds)
        variants = [True] + ([False] if kernels.repacked_kernel(int(qtype)) is not None else [])
        for reference in variants:
            out = np.full((9, n), np.nan, np.float32)
            kernels.matmul_repacked_int(tiles, int(qtype), n, xq, out, 2, reference=reference,
                                        experts=experts, bounds=bounds)
            assert_same_bits(out, expected)
        with pytest.raises(IndexError):
            kernels.matmul_repacked_int(tiles, int(qtype), n, xq, out, reference=True,
                                        experts=np.array([0, 2, 3, 5], np.int64), bounds=bounds)
        with argument_error(ValueError, "bounds"):
            kernels.matmul_repacked_int(tiles, int(qtype), n, xq, out, reference=True, experts=experts,
                                        bounds=np.array([0, 3, 4, 4, 8], np.int64))
        with argument_error(ValueError, "together"):
            kernels.matmul_repacked_int(tiles, int(qtype), n, xq, out, reference=True, experts=experts)


@pytest.mark.parametrize("tokens", [1, 4, 40])
def test_matmul_id_on_repacked_experts(tokens):
    # 1 and 4 tokens: groups of a few rows (the tiles where they take them); 40 tokens x 2 of 4 experts:
    # groups beyond the tiles' rows, so the original blocks
    rng = np.random.default_rng(tokens)
    n_exp, n, k = 4, 30, 32 * 6
    raw = np.stack([random_weights(T.MXFP4, n, k, rng) for _ in range(n_exp)])
    rw = repack(raw, T.MXFP4)
    assert rw.shape == (n_exp, n, k) and "4x30x192" in repr(rw)
    ids = rng.integers(0, n_exp, size=(tokens, 2))
    x = rng.standard_normal((tokens, k)).astype(np.float32)
    for threads in (1, 2):
        assert_same_bits(fastgguf.matmul_id(x, rw, ids, exact=False, threads=threads),
                         fastgguf.matmul_id(x, raw, ids, T.MXFP4, exact=False))
    assert_same_bits(fastgguf.matmul_id(x, rw, ids), fastgguf.matmul_id(x, raw, ids, T.MXFP4))
    with argument_error(ValueError):
        matmul(x, rw, exact=False)  # 3-D experts are matmul_id's
    with argument_error(ValueError, "disagrees"):
        fastgguf.matmul_id(x, rw, ids, T.Q4_0)
