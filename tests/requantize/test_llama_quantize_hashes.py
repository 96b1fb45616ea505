"""`fastgguf quantize` with llama-quantize's command lines writes llama-quantize's bytes.

tests/data/llama_quantize_hashes.json holds the sha256 of what llama.cpp's llama-quantize wrote
for each case of tests/llama_models.py (tools/gen_llama_references.py, run against the build named
in tests/data/llama_cpp_reference.json); here the same models are rebuilt and fastgguf runs the
same arguments. Cases llama-quantize refused must fail here too, writing nothing.
"""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path

import numpy as np
import pytest

import fastgguf.cli

import llama_models
from conftest import TESTS

DATA = TESTS / "data"
HASHES = DATA / "llama_quantize_hashes.json"
REFERENCE = json.loads((DATA / "llama_cpp_reference.json").read_text())
RECORDS = json.loads(HASHES.read_text())["cases"] if HASHES.exists() else {}


@pytest.fixture(scope="module")
def models(tmp_path_factory):
    folder = tmp_path_factory.mktemp("llama_models")
    llama_models.write_all(folder)
    return folder


def sha256(path) -> str:
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()


def test_hashes_cover_every_case_and_name_the_reference():
    assert HASHES.exists(), "run tools/gen_llama_references.py"
    document = json.loads(HASHES.read_text())
    assert document["llama_cpp_commit"] == REFERENCE["llama_cpp_commit"]
    assert document["llama_cpp_python"] == REFERENCE["llama_cpp_python"]
    assert list(document["cases"]) == [case[0] for case in llama_models.CASES]
    for case_id, _model, args, ftype in llama_models.CASES:
        assert document["cases"][case_id]["args"] == args and document["cases"][case_id]["type"] == ftype, case_id


def test_quantize_vectors_name_the_same_reference():
    for path in sorted((DATA / "quantize").glob("*.npz")):
        assert np.load(path)["ggml_commit"].item() == REFERENCE["llama_cpp_commit"], path.name


@pytest.mark.parametrize("case", llama_models.CASES, ids=[case[0] for case in llama_models.CASES])
def test_same_bytes_as_llama_quantize(case, models, monkeypatch, capsys):
    case_id, model, args, ftype = case
    record = RECORDS.get(case_id)
    if record is None:
        pytest.skip("no reference recorded")
    monkeypatch.chdir(models)
    out, written = llama_models.output_name(case_id, args, model)
    for name in {out, *written}:
        if os.path.exists(name):
            os.unlink(name)
    status = fastgguf.cli.main(["quantize", *args, llama_models.input_file(model), out, ftype, "2", "--no-progress"])
    if "error" in record:
        assert status != 0, f"llama-quantize refused this case ({record['error']}); fastgguf wrote it"
        assert not any(os.path.exists(name) for name in {out, *written})
        return
    assert status == 0, capsys.readouterr().err
    assert record["files"] == written
    assert [os.path.getsize(name) for name in written] == record["size"]
    assert [sha256(name) for name in written] == record["sha256"]
    for name in written:
        os.unlink(name)
