"""IQ2_XXS, IQ2_XS, IQ2_S, IQ1_S, IQ1_M quantizers: search tables, hand-computed blocks, round trips.

The bytes against ggml's are checked by tests/quant/test_quantize.py (reference vectors); this file
checks what those vectors cannot show on their own: the derived search tables equal ggml's
(``iq2xs_init_impl``), blocks whose bytes follow from the rules by hand, and the round-trip error
limits of ggml's tests/test-quantize-fns.cpp. (Ties in the IQ1 sort are covered by the vectors'
rows of quarter-integers and zeros.)
"""

from __future__ import annotations

import hashlib

import numpy as np
import pytest

from fastgguf import GGMLType as T, dequant, dequantize, quantize

IQ2_FAMILY = [T.IQ2_XXS, T.IQ2_XS, T.IQ2_S, T.IQ1_S, T.IQ1_M]
NEEDS_IMATRIX = {T.IQ2_XXS, T.IQ2_XS, T.IQ1_S}
family = pytest.mark.parametrize("qtype", IQ2_FAMILY, ids=lambda t: t.name)

#: sha256 of ggml's search tables (iq2_data after ggml_quantize_init, ggml d99724f2, portable
#: build) in the canonical form of fgg_iq2_serialize: per key of 8 levels <= 2, the grid index or
#: -1 and the neighbour list. Taken from the library by a C harness that reads ggml's static table.
GGML_TABLE_SHA256 = {
    0: "2654fb046c3ec1d95221728fdcaf5473e5052d727a0b45a64fb23b3e86bb33fb",  # IQ2_XXS, 256 points
    1: "b8fbcb34ec71bc7c2d02e38b920c354ce8d73d456ba5adf5042fdad2cd4b0d40",  # IQ2_XS, 512 points
    2: "a75bc735cd26e43bfc166c5b15aa7337b5ae781ebd6ef80b3cf0dba7b298b3d6",  # IQ2_S, 1024 points
    3: "e16e9e0901fb6bbf8c7780eaac64e094baf4af676eaa23982975ca659a151236",  # IQ1_S/IQ1_M, 2048
}


def kernel_modules():
    return list(dequant.kernel_modules().values())


@pytest.mark.parametrize("which", sorted(GGML_TABLE_SHA256))
def test_search_tables_equal_ggmls(which):
    for module in kernel_modules():
        data = module._iq2_search_table(which)
        assert hashlib.sha256(data).hexdigest() == GGML_TABLE_SHA256[which], module.__name__


def test_search_tables_shape():
    """Keys on the grid map to their point; every key off it has a non-empty list of grid points
    at the smallest distances, ordered by distance then index (IQ2_S keeps one distance)."""
    for which, npoints in ((0, 256), (1, 512), (2, 1024), (3, 2048)):
        data = kernel_modules()[0]._iq2_search_table(which)
        at, on, off = 0, 0, 0
        while at < len(data):
            g = int.from_bytes(data[at:at + 4], "little", signed=True)
            at += 4
            if g >= 0:
                assert g < npoints
                on += 1
                continue
            n = int.from_bytes(data[at:at + 2], "little")
            entries = np.frombuffer(data[at + 2:at + 2 + 2 * n], np.uint16)
            at += 2 + 2 * n
            assert n > 0 and (entries < npoints).all() and len(set(entries.tolist())) == n
            off += 1
        assert on == npoints and on + off == 3**8


def ones_imatrix(n):
    return np.ones(n, np.float32)


@family
def test_zero_rows_are_zero_blocks(qtype, cpu_path):
    x = np.zeros((3, 512), np.float32)
    assert not quantize(x, qtype, imatrix=ones_imatrix(512)).any()
    if qtype not in NEEDS_IMATRIX:
        assert not quantize(x, qtype).any()


def iq2s_grid_index(levels):
    """Index of the IQ2_S grid point whose 8 stored values are ``levels`` (0/1/2 -> 8/25/43)."""
    from gguf import quants

    quants.IQ2_S.init_grid()
    grid = np.asarray(quants.IQ2_S.grid, np.float32).reshape(-1, 8)
    want = np.array([(8, 25, 43)[lv] for lv in levels], np.float32)
    (hits,) = np.nonzero((grid == want).all(axis=1))
    assert len(hits) == 1
    return int(hits[0])


def test_iq2_s_constant_block_by_hand(cpu_path):
    """256 values 1.0 without imatrix: w = 0.25*sigma2 + 1 = 1.5 (sigma2 = 2*256/256), every
    candidate rounds to level 2 (q = 5), the first is taken: scale = sum(1.5*5)/sum(1.5*25) = 0.2.
    d = 0.2/31 is stored as fp16(d*0.9875); block scales nearest_int(0.5*(0.2/d - 1)) = 15;
    all signs positive; every group is the grid point of eight 2s."""
    x = np.ones(256, np.float32)
    q = quantize(x, T.IQ2_S)
    g = iq2s_grid_index([2] * 8)
    d = np.float32(0.2) / np.float32(31)
    expected = bytearray(82)
    expected[0:2] = np.float16(d * np.float32(0.9875)).tobytes()
    expected[2:34] = bytes([g & 255]) * 32  # grid low bytes
    expected[34:66] = bytes(32)  # signs
    expected[66:74] = bytes([((g >> 8) & 3) * 0x55]) * 8  # grid high bits, 2 per group
    expected[74:82] = bytes([0xFF]) * 8  # block scales 15
    assert q.tobytes() == bytes(expected)


def test_iq2_s_sign_bytes_and_negation(cpu_path):
    """Negating a row flips exactly the stored signs (IQ2_S keeps all 8 sign bits)."""
    rng = np.random.default_rng(3)
    x = rng.standard_normal(512).astype(np.float32)
    x[x == 0] = 1.0
    a = quantize(x, T.IQ2_S).reshape(2, 82)
    b = quantize(-x, T.IQ2_S).reshape(2, 82)
    np.testing.assert_array_equal(a[:, 34:66] ^ b[:, 34:66], 0xFF)
    np.testing.assert_array_equal(np.delete(a, np.s_[34:66], axis=1), np.delete(b, np.s_[34:66], axis=1))


#: ggml's tests/test-quantize-fns.cpp limits for sqrt(sum (x - y)^2)/n over 0.1 + 2*cos(i):
#: IQ2_S is tested there with the 2-bit limit 0.0075. IQ2_XXS/IQ2_XS/IQ1_S/IQ1_M have no
#: row quantizer there (they need an importance matrix or have none); here IQ2_XXS/IQ2_XS get
#: the 2-bit limit and the IQ1 types the binary one (0.025), with imatrix all ones.
ROUND_TRIP_LIMIT = {T.IQ2_XXS: 0.0075, T.IQ2_XS: 0.0075, T.IQ2_S: 0.0075, T.IQ1_S: 0.025, T.IQ1_M: 0.025}


@family
@pytest.mark.parametrize("offset", [0.0, 1.0])
def test_round_trip_error_within_ggml_limits(qtype, offset, cpu_path):
    n = 4096
    x = (0.1 + 2 * np.cos(np.arange(n, dtype=np.float32) + np.float32(offset))).astype(np.float32)
    for imatrix in (None, ones_imatrix(n)):
        if imatrix is None and qtype in NEEDS_IMATRIX:
            continue
        y = dequantize(quantize(x, qtype, imatrix=imatrix), qtype, shape=(n,))
        err = np.sqrt(np.sum((x.astype(np.float64) - y) ** 2)) / n
        assert err < ROUND_TRIP_LIMIT[qtype]


@pytest.mark.parametrize("qtype", sorted(NEEDS_IMATRIX), ids=lambda t: t.name)
def test_imatrix_required(qtype):
    with pytest.raises(ValueError, match="imatrix|importance"):
        quantize(np.ones(256, np.float32), qtype)


@family
def test_threads_and_cpu_paths_agree(qtype, monkeypatch):
    """Same bytes for any thread count and from every kernel build, with and without imatrix."""
    import sys

    monkeypatch.setattr(sys.modules["fastgguf.quant"], "_MIN_ELEMENTS_PER_THREAD", 1)
    rng = np.random.default_rng(11)
    x = (rng.standard_normal((9, 512)) * rng.uniform(0.01, 3, (9, 1))).astype(np.float32)
    im = rng.uniform(0, 4, 512).astype(np.float32)
    for imatrix in (im, None):
        if imatrix is None and qtype in NEEDS_IMATRIX:
            continue
        expected = quantize(x, qtype, imatrix=imatrix, threads=1)
        for threads in (2, 3, 8):
            np.testing.assert_array_equal(quantize(x, qtype, imatrix=imatrix, threads=threads), expected)
        for module in kernel_modules():
            out = np.empty_like(expected)
            module.quantize_into(x, out, int(qtype), imatrix)
            np.testing.assert_array_equal(out, expected, err_msg=module.__name__)
