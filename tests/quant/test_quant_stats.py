"""quant_error / ErrorStats against plain numpy, and the ``quant-stats`` command's outputs (table, JSON, CSV, plot)."""

from __future__ import annotations

import csv
import io
import json
import math
import sys
import xml.etree.ElementTree as ET

import numpy as np
import pytest

import fastgguf
from fastgguf import GGMLType, GGUFWriter, quant_stats
from fastgguf.cli import main
from fastgguf.cli.quant_stats import pareto_front
from fastgguf.export import SafetensorsWriter
from fastgguf.quant_stats import ErrorStats, quant_error
from fastgguf.types import TYPE_TRAITS

REQUIRED_KEYS = {"type", "bits_per_weight", "rmse", "rel_rmse", "max_abs_error", "p95_abs_error",
                 "median_abs_error", "cosine", "snr_db", "quantize_melem_s", "dequantize_gelem_s"}


#: This build's quantizers (none until fastgguf.quantize exists): the numbers tests run over them all.
REAL_TYPES = list(quant_stats.quantizable_types())

#: gguf-py's quantizers (an independent implementation) and numpy's float16 rounding stand in for
#: fastgguf.quantize where a test is about the statistics and the command, not about our quantizers.
STAND_IN_TYPES = [GGMLType.Q4_0, GGMLType.Q5_1, GGMLType.Q8_0, GGMLType.F16]


def stand_in_quantize(x, type, *, imatrix=None, threads=None):  # noqa: A002 - fastgguf.quantize's signature
    import gguf

    x = np.asarray(x, np.float32)
    if type == GGMLType.F16:
        return x.astype("<f2").view(np.uint8).reshape(x.shape[0], -1)
    if imatrix is not None:  # gguf-py has no importance weighting: weight the input instead, visibly
        x = x * np.sqrt(np.asarray(imatrix, np.float32) / np.mean(imatrix))
    return gguf.quants.quantize(x, gguf.GGMLQuantizationType(int(type)))


@pytest.fixture(params=["stand-in"] + (["real"] if REAL_TYPES else []))
def quantizer(request, monkeypatch):
    """The quantizer the test runs with: gguf-py's (always), and this build's when it has one.

    Returns ``(types, quantize)``.
    """
    if request.param == "real":
        return REAL_TYPES, fastgguf.quantize
    monkeypatch.setattr(quant_stats, "quantizable_types", lambda: tuple(STAND_IN_TYPES))
    monkeypatch.setattr(quant_stats, "_quantize_function", lambda: stand_in_quantize)
    monkeypatch.setattr(quant_stats, "requires_imatrix", lambda qtype: False)
    return STAND_IN_TYPES, stand_in_quantize


def block_type(types) -> GGMLType:
    """A type with blocks (lossy on any data) that quantizes without an importance matrix, or the
    first one there is."""
    return next(
        (t for t in types if TYPE_TRAITS[t].block_size > 1 and not fastgguf.quant.requires_imatrix(t)), types[0]
    )


def numpy_metrics(x: np.ndarray, y: np.ndarray) -> dict[str, float]:
    """The metrics, written plainly."""
    x = x.astype(np.float64).reshape(-1)
    y = y.astype(np.float64).reshape(-1)
    error = y - x
    abs_error = np.abs(error)
    rmse = np.sqrt(np.mean(error**2))
    with np.errstate(divide="ignore"):  # an exact round trip has an infinite SNR
        snr_db = 10 * np.log10(np.sum(x**2) / np.sum(error**2))
    return {
        "rmse": rmse,
        "rel_rmse": rmse / np.sqrt(np.mean(x**2)),
        "max_abs_error": abs_error.max(),
        "p95_abs_error": np.percentile(abs_error, 95),
        "median_abs_error": np.median(abs_error),
        "cosine": np.sum(x * y) / np.sqrt(np.sum(x**2) * np.sum(y**2)),
        "snr_db": snr_db,
    }


def numpy_weighted_rel_rmse(x: np.ndarray, y: np.ndarray, weights: np.ndarray) -> float:
    """Relative RMSE with column j weighted by weights[j], written plainly (rows along the last axis)."""
    x = x.astype(np.float64).reshape(-1, weights.size)
    error = y.astype(np.float64).reshape(x.shape) - x
    w = weights.astype(np.float64)
    return float(np.sqrt(np.sum(w * error**2) / np.sum(w * x**2)))


def assert_metrics(result, expected: dict[str, float], exact_percentiles: bool = True) -> None:
    for key in ("rmse", "rel_rmse", "cosine", "snr_db"):
        assert getattr(result, key) == pytest.approx(expected[key], rel=1e-12, abs=1e-300), key
    assert result.max_abs_error == expected["max_abs_error"]
    if exact_percentiles:
        assert result.percentiles_exact
        assert result.p95_abs_error == expected["p95_abs_error"]
        assert result.median_abs_error == expected["median_abs_error"]


SHAPES = [(1, 32), (3, 256), (17, 512), (64, 1024)]


@pytest.mark.parametrize("shape", SHAPES, ids=str)
@pytest.mark.parametrize("blocks", [1, 3])
def test_error_stats_match_numpy(shape, blocks):
    rng = np.random.default_rng(shape[0] * 7 + blocks)
    x = rng.standard_normal(shape).astype(np.float32)
    y = (x + rng.normal(0, 0.05, shape)).astype(np.float32)
    stats = ErrorStats(GGMLType.Q4_0)
    for part_x, part_y in zip(np.array_split(x, blocks), np.array_split(y, blocks)):
        stats.add(part_x, part_y)
    result = stats.result()
    assert result.n_elements == x.size
    assert result.bits_per_weight == 4.5
    assert_metrics(result, numpy_metrics(x, y))


@pytest.mark.parametrize("shape", SHAPES, ids=str)
def test_weighted_rel_rmse_matches_numpy(shape):
    rng = np.random.default_rng(shape[1])
    x = rng.standard_normal(shape).astype(np.float32)
    y = (x + rng.normal(0, 0.05, shape)).astype(np.float32)
    weights = rng.gamma(0.5, 2.0, shape[1]).astype(np.float32)
    halves = ErrorStats(GGMLType.Q4_K), ErrorStats(GGMLType.Q4_K)
    split = shape[0] // 2
    halves[0].add(x[:split], y[:split], weights)
    halves[1].add(x[split:], y[split:], weights)
    halves[0].merge(halves[1])
    result = halves[0].result()
    assert result.weighted_rel_rmse == pytest.approx(numpy_weighted_rel_rmse(x, y, weights), rel=1e-12)
    assert_metrics(result, numpy_metrics(x, y))  # the plain metrics ignore the weights
    # Without weights, or with equal ones, it is the plain relative RMSE.
    plain = ErrorStats(GGMLType.Q4_K)
    plain.add(x, y)
    assert plain.result().weighted_rel_rmse == pytest.approx(plain.result().rel_rmse, rel=1e-14)
    equal = ErrorStats(GGMLType.Q4_K)
    equal.add(x, y, np.full(shape[1], 3.0, np.float32))
    assert equal.result().weighted_rel_rmse == pytest.approx(plain.result().rel_rmse, rel=1e-12)
    with pytest.raises(ValueError, match="weights"):
        ErrorStats(GGMLType.Q4_K).add(x, y, weights[:-1])


IMATRIX_SENSITIVE = [t for t in (GGMLType.Q3_K, GGMLType.Q4_K, GGMLType.IQ4_XS, GGMLType.Q4_0) if t in REAL_TYPES]


@pytest.mark.parametrize("qtype", IMATRIX_SENSITIVE, ids=lambda t: t.name)
def test_imatrix_lowers_the_error_it_weights(qtype):
    """What the importance matrix is for: with it, the error weighted by it drops (skewed columns)."""
    rng = np.random.default_rng(11)
    x = rng.standard_t(5, size=(64, 512)).astype(np.float32)
    importance = (rng.lognormal(0.0, 1.5, 512) ** 2).astype(np.float32)
    with_imatrix = quant_error(x, qtype, imatrix=importance)
    without = ErrorStats(qtype)
    without.add(x, fastgguf.dequantize(fastgguf.quantize(x, qtype), qtype, x.shape), importance)
    assert with_imatrix.weighted_rel_rmse < 0.9 * without.result().weighted_rel_rmse


def test_histogram_percentiles_within_documented_bound():
    rng = np.random.default_rng(5)
    x = rng.standard_normal(200_000).astype(np.float32)
    y = (x + rng.laplace(0, 1e-3, x.size)).astype(np.float32)
    stats = ErrorStats(GGMLType.Q8_0, exact_limit=10_000)
    for part_x, part_y in zip(np.array_split(x, 7), np.array_split(y, 7)):
        stats.add(part_x, part_y)
    result = stats.result()
    expected = numpy_metrics(x, y)
    assert not result.percentiles_exact
    assert_metrics(result, expected, exact_percentiles=False)
    for key in ("p95_abs_error", "median_abs_error"):
        assert getattr(result, key) == pytest.approx(expected[key], rel=2**-8), key


@pytest.mark.parametrize("limit", [10**9, 1000], ids=["exact", "histogram"])
def test_merge_equals_one_pass(limit):
    rng = np.random.default_rng(9)
    x = rng.standard_normal((40, 64)).astype(np.float32)
    y = (x * 1.01).astype(np.float32)
    whole = ErrorStats(GGMLType.Q6_K, exact_limit=limit)
    whole.add(x, y)
    left, right = ErrorStats(GGMLType.Q6_K, exact_limit=limit), ErrorStats(GGMLType.Q6_K, exact_limit=limit)
    left.add(x[:30], y[:30])
    right.add(x[30:], y[30:])
    left.merge(right)
    a, b = whole.result(), left.result()
    assert a.percentiles_exact == b.percentiles_exact == (limit > x.size)
    assert (a.max_abs_error, a.p95_abs_error, a.median_abs_error) == (b.max_abs_error, b.p95_abs_error,
                                                                     b.median_abs_error)
    assert a.rmse == pytest.approx(b.rmse, rel=1e-14)
    with pytest.raises(ValueError, match="cannot merge"):
        left.merge(ErrorStats(GGMLType.Q4_0))


def test_exact_and_degenerate_round_trips():
    x = np.arange(64, dtype=np.float32).reshape(2, 32)
    stats = ErrorStats(GGMLType.F16)
    stats.add(x, x)
    result = stats.result()
    assert (result.rmse, result.rel_rmse, result.max_abs_error, result.cosine) == (0.0, 0.0, 0.0, 1.0)
    assert result.snr_db == math.inf and result.median_abs_error == 0.0
    zeros = ErrorStats(GGMLType.F16)
    zeros.add(np.zeros(32, np.float32), np.zeros(32, np.float32))
    assert zeros.result().cosine == 1.0 and zeros.result().rel_rmse == 0.0
    with pytest.raises(ValueError, match="no elements"):
        ErrorStats(GGMLType.F16).result()


def test_as_dict_keys_and_plain_values():
    stats = ErrorStats(GGMLType.Q4_K)
    stats.add(np.ones(256, np.float32), np.full(256, 1.5, np.float32))
    stats.quantize_seconds, stats.dequantize_seconds = 0.5, 0.25
    record = stats.result().as_dict()
    assert REQUIRED_KEYS <= set(record)
    assert record["type"] == "Q4_K" and record["bits_per_weight"] == TYPE_TRAITS[GGMLType.Q4_K].bits_per_weight
    assert record["quantize_melem_s"] == pytest.approx(256 / 0.5 / 1e6)
    assert record["dequantize_gelem_s"] == pytest.approx(256 / 0.25 / 1e9)
    json.dumps(record)


def test_pareto_front():
    points = [(4.5, 0.08), (5.0, 0.09), (5.5, 0.04), (8.5, 0.005), (16.0, 0.002), (16.0, 0.0001), (6.0, 0.04)]
    assert pareto_front(points) == [0, 2, 3, 5]


# quant_error: the real quantizers ------------------------------------------------------------------

def _round_trip(quantize, x: np.ndarray, qtype: GGMLType, imatrix=None) -> np.ndarray:
    packed = quantize(x, qtype, imatrix=imatrix)
    return fastgguf.dequantize(packed, qtype, x.shape)


def _imatrix_if_needed(quantize, qtype: GGMLType, row_length: int, x: np.ndarray):
    try:
        quantize(x[:1], qtype)
    except ValueError as error:
        if "imatrix" not in str(error):
            raise
        return np.linspace(0.5, 2.0, row_length, dtype=np.float32)
    return None


def check_quant_error(quantize, qtype: GGMLType, n_rows: int) -> None:
    row_length = 2 * max(256, TYPE_TRAITS[qtype].block_size)
    rng = np.random.default_rng(int(qtype) * 10 + n_rows)
    x = (rng.standard_normal((n_rows, row_length)) * 0.02).astype(np.float32)
    imatrix = _imatrix_if_needed(quantize, qtype, row_length, x)
    result = quant_error(x, qtype, imatrix=imatrix)
    assert result.type == qtype and result.n_elements == x.size
    assert_metrics(result, numpy_metrics(x, _round_trip(quantize, x, qtype, imatrix)))
    assert result.quantize_seconds > 0 and result.dequantize_seconds > 0


@pytest.mark.parametrize("qtype", REAL_TYPES, ids=lambda t: t.name)
@pytest.mark.parametrize("n_rows", [1, 5])
def test_quant_error_matches_numpy(qtype, n_rows):
    check_quant_error(fastgguf.quantize, qtype, n_rows)


@pytest.mark.parametrize("qtype", STAND_IN_TYPES, ids=lambda t: t.name)
@pytest.mark.parametrize("n_rows", [1, 5])
def test_quant_error_matches_numpy_stand_in(monkeypatch, qtype, n_rows):
    monkeypatch.setattr(quant_stats, "_quantize_function", lambda: stand_in_quantize)
    check_quant_error(stand_in_quantize, qtype, n_rows)


def test_quant_error_streams_row_blocks(monkeypatch, quantizer):
    types, quantize = quantizer
    qtype = block_type(types)
    row_length = max(256, TYPE_TRAITS[qtype].block_size)
    monkeypatch.setattr(quant_stats, "_BLOCK_ELEMENTS", 3 * row_length)  # several blocks and a partial one
    x = (np.random.default_rng(3).standard_normal((11, row_length))).astype(np.float32)
    imatrix = _imatrix_if_needed(quantize, qtype, row_length, x)
    expected = numpy_metrics(x, _round_trip(quantize, x, qtype, imatrix))
    assert_metrics(quant_error(x, qtype, imatrix=imatrix), expected)


def test_quant_error_arguments(quantizer):
    types, _ = quantizer
    qtype = block_type(types)
    if TYPE_TRAITS[qtype].block_size > 1:
        with pytest.raises(ValueError, match="block size"):
            quant_error(np.ones((2, TYPE_TRAITS[qtype].block_size + 1), np.float32), qtype)
    with pytest.raises(ValueError, match="empty"):
        quant_error(np.ones((0, 32), np.float32), qtype)
    result = quant_error(np.ones(256, np.float32) * 0.5, qtype.name.lower())  # a name, a 1-D row
    assert result.n_elements == 256 and result.type == qtype


# The command ---------------------------------------------------------------------------------------

def run(capsys, *argv):
    status = main(list(argv))
    captured = capsys.readouterr()
    return status, captured.out, captured.err


@pytest.fixture(scope="module")
def weights() -> dict[str, np.ndarray]:
    rng = np.random.default_rng(11)
    return {"blk.0.attn_q.weight": (rng.standard_normal((32, 512)) * 0.02).astype(np.float32),
            "blk.0.ffn_up.weight": (rng.standard_normal((16, 256)) * 0.02).astype(np.float32),
            "norm.weight": np.ones(256, np.float32)}


@pytest.fixture(scope="module")
def gguf_model(tmp_path_factory, weights):
    path = tmp_path_factory.mktemp("qs") / "m.gguf"
    with GGUFWriter(path) as writer:
        for name, array in weights.items():
            writer.add_tensor(name, array)
        writer.add_tensor("blk.0.half.weight", weights["blk.0.ffn_up.weight"].astype(np.float16))
    return str(path)


def test_json_output(capsys, gguf_model, quantizer):
    types = [t.name for t in quantizer[0] if not fastgguf.quant.requires_imatrix(t)][:3]
    status, out, err = run(capsys, "quant-stats", gguf_model, "--types", ",".join(types), "--json",
                           "--no-progress")
    assert status == 0, err
    records = json.loads(out)
    assert isinstance(records, list) and sorted(r["type"] for r in records) == sorted(types)
    for record in records:
        assert REQUIRED_KEYS <= set(record)
        assert record["n_elements"] == 32 * 512 + 2 * 16 * 256
        assert isinstance(record["rmse"], float)
    assert "F16 were dequantized to float32 first" in err  # said on stderr, stdout stays JSON


def test_csv_per_tensor_output(capsys, gguf_model, weights, quantizer):
    types, quantize = quantizer
    qtype = block_type(types)
    status, out, err = run(capsys, "quant-stats", gguf_model, "--types", qtype.name, "--csv", "--per-tensor",
                           "--filter", "blk.0.attn*", "--filter", "blk.0.ffn*")
    assert status == 0, err
    rows = list(csv.DictReader(io.StringIO(out)))
    assert REQUIRED_KEYS | {"tensor"} <= set(rows[0])
    assert [row["tensor"] for row in rows] == ["", "blk.0.attn_q.weight", "blk.0.ffn_up.weight"]
    x = weights["blk.0.attn_q.weight"]
    expected = numpy_metrics(x, _round_trip(quantize, x, qtype, _imatrix_if_needed(quantize, qtype, x.shape[1], x)))
    assert float(rows[1]["rmse"]) == pytest.approx(expected["rmse"], rel=1e-12)
    assert float(rows[1]["max_abs_error"]) == expected["max_abs_error"]


def test_table_output(capsys, gguf_model, quantizer):
    types, quantize = quantizer
    status, out, err = run(capsys, "quant-stats", gguf_model, "--all", "--threads", "1")
    assert status == 0, err
    lines = out.splitlines()
    assert lines[0].startswith(f"fastgguf quant-stats: {gguf_model}: 3 tensor(s)")
    assert lines[1].split()[:3] == ["type", "bits/w", "rel"]
    probe = np.random.default_rng(0).standard_normal((1, 512)).astype(np.float32)
    needs_imatrix = {t for t in types if _imatrix_if_needed(quantize, t, 512, probe) is not None}
    measured = [t for t in types if t not in needs_imatrix]
    listed = [line.split()[0] for line in lines[2:2 + len(measured)]]
    assert listed == [t.name for t in sorted(measured, key=lambda t: (TYPE_TRAITS[t].bits_per_weight, t))]
    for qtype in needs_imatrix:
        assert f"note: {qtype.name} skipped: it needs an importance matrix (--imatrix)" in out
    assert "1 tensor(s) that are not 2-D float weights left out" in out


@pytest.mark.parametrize("suffix", [".safetensors", ".npz", ".arrays"])
def test_float_sources(capsys, tmp_path, weights, suffix, quantizer):
    qtype = block_type(quantizer[0])
    path = tmp_path / f"w{suffix}"
    if suffix == ".safetensors":
        writer = SafetensorsWriter(path)
        chosen = [(name, array.shape, np.dtype(np.float32)) for name, array in weights.items()]
        writer.begin(chosen, {})
        for name, shape, dtype in chosen:
            writer.start_tensor(name, shape, dtype)
            writer.write(weights[name])
            writer.end_tensor()
        writer.finish()
    else:
        with open(path, "wb") as handle:
            np.savez(handle, **weights)
    extra = ["--from-npz"] if suffix == ".arrays" else []
    status, out, err = run(capsys, "quant-stats", str(path), "--types", qtype.name, "--json", *extra)
    assert status == 0, err
    (record,) = json.loads(out)
    assert "dequantized" not in err
    x = weights["blk.0.attn_q.weight"]
    assert record["n_elements"] == x.size + weights["blk.0.ffn_up.weight"].size


def test_plot_files(capsys, tmp_path, gguf_model, quantizer):
    pytest.importorskip("matplotlib")
    types = ",".join(t.name for t in quantizer[0])
    png, svg = tmp_path / "p.png", tmp_path / "p.svg"
    assert run(capsys, "quant-stats", gguf_model, "--types", types, "--plot", str(png))[0] == 0
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and png.stat().st_size > 10_000
    assert run(capsys, "quant-stats", gguf_model, "--types", types, "--plot", str(svg))[0] == 0
    root = ET.parse(svg).getroot()
    assert root.tag == "{http://www.w3.org/2000/svg}svg"
    assert "Pareto front" in svg.read_text()


def test_plot_without_matplotlib(capsys, tmp_path, gguf_model, monkeypatch, quantizer):
    monkeypatch.setitem(sys.modules, "matplotlib", None)  # import fails
    status, _, err = run(capsys, "quant-stats", gguf_model, "--plot", str(tmp_path / "p.png"))
    assert status == 1 and 'pip install "fastgguf[plot]"' in err


def test_usage_errors(capsys, tmp_path, gguf_model, quantizer):
    status, _, err = run(capsys, "quant-stats", gguf_model, "--plot", str(tmp_path / "p.jpg"))
    assert status == 1 and "*.png or *.svg" in err
    status, _, err = run(capsys, "quant-stats", gguf_model, "--filter", "nothing*")
    assert status == 1 and "no 2-D float weight matching 'nothing*'" in err
    status, _, err = run(capsys, "quant-stats", gguf_model, "--types", "NOPE")
    assert status == 1 and "unknown tensor type 'NOPE'" in err
    with pytest.raises(SystemExit):
        main(["quant-stats", gguf_model, "--json", "--csv"])


@pytest.mark.parametrize("dtype", [np.float16, np.float64])
def test_quant_error_measures_against_the_float32_values(dtype, quantizer):
    types, quantize = quantizer
    qtype = block_type(types)
    row_length = max(256, TYPE_TRAITS[qtype].block_size)
    x = (np.random.default_rng(4).standard_normal((3, row_length)) * 0.1).astype(dtype)
    as_float32 = x.astype(np.float32)
    imatrix = _imatrix_if_needed(quantize, qtype, row_length, as_float32)
    result = quant_error(x, qtype, imatrix=imatrix)
    assert_metrics(result, numpy_metrics(as_float32, _round_trip(quantize, as_float32, qtype, imatrix)))


def write_legacy_imatrix(path, entries: dict[str, np.ndarray], ncall: int = 4) -> None:
    """llama-imatrix's binary .dat layout: count, then per entry name, ncall, nval and the sums."""
    import struct

    with open(path, "wb") as handle:
        handle.write(struct.pack("<i", len(entries)))
        for name, values in entries.items():
            encoded = name.encode()
            handle.write(struct.pack("<i", len(encoded)) + encoded + struct.pack("<ii", ncall, values.size))
            handle.write((values * ncall).astype("<f4").tobytes())


def test_imatrix_reaches_the_quantizer(capsys, tmp_path, gguf_model, weights, quantizer):
    types, quantize = quantizer
    qtype = block_type(types)
    name = "blk.0.attn_q.weight"
    x = weights[name]
    importance = np.linspace(0.1, 3.0, x.shape[1], dtype=np.float32)
    path = tmp_path / "imatrix.dat"
    write_legacy_imatrix(path, {name: importance})
    status, out, err = run(capsys, "quant-stats", gguf_model, "--types", qtype.name, "--imatrix", str(path),
                           "--filter", name, "--json")
    assert status == 0, err
    (record,) = json.loads(out)
    weighted = _round_trip(quantize, x, qtype, fastgguf.read_imatrix(path)[name])
    expected = numpy_metrics(x, weighted)
    assert record["rmse"] == pytest.approx(expected["rmse"], rel=1e-12)
    assert record["max_abs_error"] == expected["max_abs_error"]
    imatrix = fastgguf.read_imatrix(path)[name]
    assert record["weighted_rel_rmse"] == pytest.approx(numpy_weighted_rel_rmse(x, weighted, imatrix), rel=1e-12)
    plain = _round_trip(quantize, x, qtype)
    if _imatrix_if_needed(quantize, qtype, x.shape[1], x) is None and not np.array_equal(weighted, plain):
        # This quantizer uses the importance: the command's numbers must be the weighted ones.
        assert record["rmse"] != pytest.approx(numpy_metrics(x, plain)["rmse"], rel=1e-12)
