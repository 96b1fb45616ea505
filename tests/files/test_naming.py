"""fastgguf.parse_filename: llama.cpp's <BaseName>-<SizeLabel>-<FineTune>-<Version>-<Encoding>-<Type>-<Shard>.gguf."""

import os

import pytest
from hypothesis import given, strategies as st

from fastgguf import GGUFFilename, parse_filename
from fastgguf.naming import shard_paths

N = None
CASES = [
    # the convention's own examples
    ("Mixtral-8x7B-v0.1-KQ2.gguf", ("Mixtral", "8x7B", N, "v0.1", "KQ2", N, N, N)),
    ("Hermes-2-Pro-Llama-3-8B-F16.gguf", ("Hermes-2-Pro-Llama-3", "8B", N, N, "F16", N, N, N)),
    ("Grok-100B-v1.0-Q4_0-00003-of-00009.gguf", ("Grok", "100B", N, "v1.0", "Q4_0", N, 3, 9)),
    ("Mixtral-8x7B-v0.1-Q4_K_M.gguf", ("Mixtral", "8x7B", N, "v0.1", "Q4_K_M", N, N, N)),
    # names seen in the wild
    ("Llama-3.2-1B-Instruct-Q4_K_M.gguf", ("Llama-3.2", "1B", "Instruct", N, "Q4_K_M", N, N, N)),
    ("Mistral-7B-Instruct-v0.3-IQ2_XXS.gguf", ("Mistral", "7B", "Instruct", "v0.3", "IQ2_XXS", N, N, N)),
    ("Qwen3-30B-A3B-Instruct-2507-BF16.gguf", ("Qwen3", "30B-A3B", "Instruct-2507", N, "BF16", N, N, N)),
    ("gemma-2b-it-TQ1_0.gguf", ("gemma", "2b", "it", N, "TQ1_0", N, N, N)),
    ("Model-7B-v1-F16-LoRA.gguf", ("Model", "7B", N, "v1", "F16", "LoRA", N, N)),
    ("Model-v2.1-vocab.gguf", ("Model", N, N, "v2.1", N, "vocab", N, N)),
    ("Model-7B-Chat-v1.0-MXFP4_MOE-00001-of-00002.gguf", ("Model", "7B", "Chat", "v1.0", "MXFP4_MOE", N, 1, 2)),
    # parts missing
    ("model.gguf", ("model", N, N, N, N, N, N, N)),
    ("model-00002-of-00005.gguf", ("model", N, N, N, N, N, 2, 5)),
    ("tiny-F32.gguf", ("tiny", N, N, N, "F32", N, N, N)),
    ("llama-7b", ("llama", "7b", N, N, N, N, N, N)),
    ("7B.gguf", ("7B", N, N, N, N, N, N, N)),  # the first token is always the base name
    # version-shaped tokens before the size label belong to the base name
    ("Model-v2-7B-Instruct-v0.1-Q4_0.gguf", ("Model-v2", "7B", "Instruct", "v0.1", "Q4_0", N, N, N)),
    ("Model-v2-Q4_0.gguf", ("Model", N, N, "v2", "Q4_0", N, N, N)),
]


@pytest.mark.parametrize("name, expected", CASES, ids=[case[0] for case in CASES])
def test_parse_filename(name, expected):
    parsed = parse_filename(name)
    assert isinstance(parsed, GGUFFilename)
    assert tuple(parsed) == expected


@pytest.mark.parametrize("name", [case[0] for case in CASES if case[0].endswith(".gguf")])
def test_filename_round_trips(name):
    assert parse_filename(name).filename == name
    assert str(parse_filename(name)) == name


def test_fields_by_name_and_directories_ignored():
    parsed = parse_filename(os.path.join("models", "v1.0-dir", "Grok-100B-v1.0-Q4_0-00003-of-00009.gguf"))
    assert parsed.base_name == "Grok"
    assert parsed.size_label == "100B"
    assert parsed.encoding == "Q4_0"
    assert (parsed.shard, parsed.shard_count) == (3, 9)


def test_accepts_path_like(tmp_path):
    assert parse_filename(tmp_path / "Phi-3-mini-4k-F16.gguf").encoding == "F16"


def test_shard_paths():
    directory = os.path.join("a", "b")
    assert shard_paths(os.path.join(directory, "m-Q4_0-00002-of-00003.gguf")) == [
        os.path.join(directory, f"m-Q4_0-0000{i}-of-00003.gguf") for i in (1, 2, 3)]
    assert shard_paths("model.gguf") is None
    assert shard_paths("m-1-of-3.gguf") is None


# Round trips over names built from the convention's parts ----------------------------------------

WORD = st.text(st.sampled_from("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"), min_size=1, max_size=8).filter(
    lambda w: w.lower() not in ("lora", "vocab"))
NUMBER = st.from_regex(r"[0-9]{1,4}(\.[0-9]{1,2})?", fullmatch=True)
BASE = st.lists(st.one_of(WORD, NUMBER), min_size=0, max_size=3).flatmap(
    lambda rest: WORD.map(lambda first: "-".join([first, *rest])))
SIZE = st.tuples(st.from_regex(r"([1-9][0-9]?x)?([0-9]{1,3}\.)?[0-9]{1,3}[KMBT]", fullmatch=True),
                 st.sampled_from(["", "-A3B", "-E2.5B"])).map("".join)
FINE_TUNE = st.lists(st.one_of(WORD, st.from_regex(r"[0-9]{1,4}", fullmatch=True)), min_size=1,
                     max_size=2).map("-".join)
VERSION = st.from_regex(r"v[0-9]{1,2}(\.[0-9]{1,2}){0,2}", fullmatch=True)
ENCODING = st.sampled_from(["Q4_K_M", "IQ2_XXS", "F16", "BF16", "Q8_0", "MXFP4_MOE", "TQ1_0", "F32", "Q5_K_S"])
SHARD = st.integers(1, 99999).flatmap(lambda count: st.tuples(st.integers(1, count), st.just(count)))


@st.composite
def filenames(draw):
    size = draw(st.none() | SIZE)
    fine_tune = draw(st.none() | FINE_TUNE) if size else None
    shard = draw(st.none() | SHARD)
    return GGUFFilename(draw(BASE), size, fine_tune, draw(st.none() | VERSION), draw(st.none() | ENCODING),
                        draw(st.sampled_from([None, "LoRA", "vocab"])), *(shard or (None, None)))


@given(filenames())
def test_parse_filename_inverts_filename(parts):
    assert parse_filename(parts.filename) == parts
