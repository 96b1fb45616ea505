"""matmul(..., round_weights=): the float path on weights rounded to float16/bfloat16 first.

The reference is independent of the rounding in the kernel: fastgguf.dequantize, then numpy's
float16 / ml_dtypes' bfloat16 cast and back, written as F32 blocks and multiplied by the same float
path, which must give the same bits (the same values in the same order of sums).
"""

from __future__ import annotations

import numpy as np
import pytest

import fastgguf

ml_dtypes = pytest.importorskip("ml_dtypes")

HALF = {"float16": np.float16, "bfloat16": ml_dtypes.bfloat16}
TYPES = ["Q4_K", "IQ4_XS", "Q8_0", "Q6_K", "Q4_0", "F16", "BF16", "F32"]


@pytest.mark.parametrize("qtype", TYPES)
@pytest.mark.parametrize("half", list(HALF))
def test_equals_float_path_on_cast_weights(cpu_path, qtype, half):
    rng = np.random.default_rng(len(qtype))
    values = (rng.standard_normal((67, 512)) * 0.3).astype(np.float32)
    values[3, :7] = [70000.0, -70000.0, 1e-9, -1e-9, 6e-8, 65519.0, 3.0e38]  # overflow, subnormals, ties
    blocks = fastgguf.quantize(values, qtype)
    with np.errstate(over="ignore"):
        rounded = fastgguf.dequantize(blocks, qtype, values.shape).astype(HALF[half]).astype(np.float32)
    x = rng.standard_normal((9, 512)).astype(np.float32)
    with np.errstate(over="ignore", invalid="ignore"):
        expected = fastgguf.matmul(x, rounded.view(np.uint8).reshape(67, -1), "F32")
    for threads in (1, 2, 3):
        result = fastgguf.matmul(x, blocks, qtype, round_weights=half, threads=threads)
        assert np.array_equal(result, expected, equal_nan=True)
    vector = fastgguf.matmul(x[0], blocks, qtype, round_weights=half)
    assert np.array_equal(vector, expected[0], equal_nan=True)


def test_without_rounding_unchanged():
    rng = np.random.default_rng(1)
    blocks = fastgguf.quantize(rng.standard_normal((16, 256)).astype(np.float32), "Q4_K")
    x = rng.standard_normal((2, 256)).astype(np.float32)
    assert np.array_equal(fastgguf.matmul(x, blocks, "Q4_K", round_weights=None), fastgguf.matmul(x, blocks, "Q4_K"))


@pytest.mark.parametrize("bad, error", [
    (dict(round_weights="float32"), "round_weights"),
    (dict(round_weights=np.float16), "round_weights"),
    (dict(round_weights="bfloat16", exact=False), "float path"),
])
def test_bad_round_weights(bad, error):
    blocks = fastgguf.quantize(np.ones((4, 256), np.float32), "Q4_K")
    with pytest.raises(ValueError, match=error):
        fastgguf.matmul(np.ones((1, 256), np.float32), blocks, "Q4_K", **bad)
    kernels = fastgguf._backend.kernels()
    with pytest.raises(ValueError, match="round_to"):
        kernels.matmul_rows(blocks, int(fastgguf.GGMLType.Q4_K), np.ones((1, 256), np.float32),
                            np.empty((1, 4), np.float32), 0, 4, False, int(fastgguf.GGMLType.Q8_0))
