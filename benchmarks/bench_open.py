"""Opening a model-sized header: fastgguf and its drop-in ``gguf_compat.GGUFReader`` against gguf-py's
GGUFReader, side by side.

A file with a 256k-entry token vocabulary (plus scores and token types, like Gemma 3's) and 200
tensors. Compare within one run: ``python -m pytest benchmarks/bench_open.py --benchmark-group-by=group``.
"""

from __future__ import annotations

import numpy as np
import pytest

import fastgguf
from fastgguf import GGMLType, GGUFValueType as V, GGUFWriter, gguf_compat

gguf = pytest.importorskip("gguf")

N_TOKENS = 256_000
N_TENSORS = 200


@pytest.fixture(scope="module")
def vocab_file(tmp_path_factory):
    rng = np.random.default_rng(0)
    w = GGUFWriter()
    w.add("general.architecture", "llama")
    w.add("general.name", "bench")
    for i in range(30):
        w.add(f"llama.param{i}", i, V.UINT32)
    w.add("tokenizer.ggml.model", "llama")
    w.add("tokenizer.ggml.tokens", [f"▁tok{i}" for i in range(N_TOKENS)])
    w.add("tokenizer.ggml.scores", rng.standard_normal(N_TOKENS).astype(np.float32))
    w.add("tokenizer.ggml.token_type", np.ones(N_TOKENS, np.int32))
    for i in range(N_TENSORS):
        w.add_tensor(f"blk.{i // 10}.w{i % 10}", bytes(18 * 8), GGMLType.Q4_0, (8, 32))
    path = tmp_path_factory.mktemp("open") / "vocab.gguf"
    w.write(path)
    return str(path)


def scalars_and_tensor_infos_fastgguf(path):
    with fastgguf.open(path) as f:
        md = f.metadata
        scalars = {k: md[k] for k in md if md.value_type(k) != V.ARRAY}
        infos = [(t.name, t.shape, t.type, t.offset, t.nbytes) for t in f.tensors.values()]
    return scalars, infos


def scalars_and_tensor_infos_gguf_py(path, reader_class=None):
    reader = (reader_class or gguf.GGUFReader)(path)
    scalars = {k: f.contents() for k, f in reader.fields.items() if f.types and f.types[0] != gguf.GGUFValueType.ARRAY}
    infos = [(t.name, tuple(t.shape), t.tensor_type, t.data_offset, t.n_bytes) for t in reader.tensors]
    return scalars, infos


@pytest.mark.benchmark(group="open: scalar metadata + tensor infos")
def test_open_fastgguf(benchmark, vocab_file):
    scalars, infos = benchmark(scalars_and_tensor_infos_fastgguf, vocab_file)
    assert len(scalars) == 33 and len(infos) == N_TENSORS


@pytest.mark.benchmark(group="open: scalar metadata + tensor infos")
def test_open_gguf_py(benchmark, vocab_file):
    scalars, infos = benchmark.pedantic(scalars_and_tensor_infos_gguf_py, (vocab_file,), rounds=3, iterations=1)
    ours = scalars_and_tensor_infos_fastgguf(vocab_file)
    assert {k: v for k, v in scalars.items() if not k.startswith("GGUF.")}.keys() == ours[0].keys()
    assert len(infos) == N_TENSORS


@pytest.mark.benchmark(group="open: scalar metadata + tensor infos")
def test_open_gguf_compat(benchmark, vocab_file):
    """The same code as gguf-py's row, on the drop-in reader: what a gguf-py consumer gets."""
    scalars, infos = benchmark(scalars_and_tensor_infos_gguf_py, vocab_file, gguf_compat.GGUFReader)
    assert (scalars, infos) == scalars_and_tensor_infos_gguf_py(vocab_file)


@pytest.mark.benchmark(group="first token of the list (open + one element)")
def test_first_token_gguf_compat(benchmark, vocab_file):
    def first_token():
        field = gguf_compat.GGUFReader(vocab_file).fields["tokenizer.ggml.tokens"]
        return bytes(field.parts[field.data[0]])

    assert benchmark(first_token) == "▁tok0".encode()


@pytest.mark.benchmark(group="first token of the list (open + one element)")
def test_first_token_gguf_py(benchmark, vocab_file):
    def first_token():
        field = gguf.GGUFReader(vocab_file).fields["tokenizer.ggml.tokens"]
        return bytes(field.parts[field.data[0]])

    assert benchmark.pedantic(first_token, rounds=3, iterations=1) == "▁tok0".encode()


@pytest.mark.benchmark(group="token list as Python strings")
def test_tokens_gguf_compat(benchmark, vocab_file):
    field = gguf_compat.GGUFReader(vocab_file).fields["tokenizer.ggml.tokens"]
    result = benchmark(field.contents)
    assert result == gguf.GGUFReader(vocab_file).fields["tokenizer.ggml.tokens"].contents()


@pytest.mark.benchmark(group="token list as Python strings")
def test_tokens_fastgguf(benchmark, vocab_file):
    with fastgguf.open(vocab_file) as f:
        tokens = f.metadata["tokenizer.ggml.tokens"]
        result = benchmark(tokens.tolist)
    assert len(result) == N_TOKENS and result[-1] == f"▁tok{N_TOKENS - 1}"


@pytest.mark.benchmark(group="token list as Python strings")
def test_tokens_gguf_py(benchmark, vocab_file):
    field = gguf.GGUFReader(vocab_file).fields["tokenizer.ggml.tokens"]
    result = benchmark.pedantic(field.contents, rounds=3, iterations=1)
    assert len(result) == N_TOKENS and result[-1] == f"▁tok{N_TOKENS - 1}"


@pytest.mark.benchmark(group="token list as Python strings")
def test_tokens_cpython_floor(benchmark, vocab_file):
    """CPython's cheapest way to make the same 256k str objects: one split of one already-decoded str.

    No reader can build the list faster than this; it bounds the achievable ratio over gguf-py.
    """
    with fastgguf.open(vocab_file) as f:
        joined = "\0".join(f.metadata["tokenizer.ggml.tokens"].tolist())
    result = benchmark(joined.split, "\0")
    assert len(result) == N_TOKENS
