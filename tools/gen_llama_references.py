"""Record what llama.cpp's ``llama-quantize`` writes for small deterministic models.

Builds the models, importance matrices and tensor-type file of ``tests/llama_models.py`` in a
temporary folder, runs ``llama-quantize [options] IN OUT TYPE 2`` there for every case of its
``CASES`` (mixes with and without an importance matrix, and each llama-quantize option), and
writes the sha256 of each output file, or the fact that llama-quantize refused the case, to
``tests/data/llama_quantize_hashes.json``. ``tests/requantize/test_llama_quantize_hashes.py`` runs
``fastgguf quantize`` with the same arguments and compares. This script contains no llama.cpp
code and the tests never build or run llama.cpp.

The build should be the release one named in ``tests/data/llama_cpp_reference.json``
(``cmake -DCMAKE_BUILD_TYPE=Release -DGGML_NATIVE=OFF``: ggml-base, where the quantizers are,
is then compiled without ``-march``)::

    python tools/gen_llama_references.py LLAMA_CPP_BUILD_DIR [--out FILE] [CASE ...]

``LLAMA_CPP_BUILD_DIR`` is the folder holding ``bin/llama-quantize``. With CASE ids only those
are run (and replaced in the existing file).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, os.path.join(ROOT, "tests"))
sys.path.insert(0, os.path.join(ROOT, "src"))

import llama_models  # noqa: E402  (tests/llama_models.py: the models and cases, shared with the tests)

DEFAULT_OUT = os.path.join(ROOT, "tests", "data", "llama_quantize_hashes.json")
REFERENCE = os.path.join(ROOT, "tests", "data", "llama_cpp_reference.json")


def sha256(path: str) -> str:
    """The file's sha256 (hex)."""
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for chunk in iter(lambda: handle.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


def run_case(binary: str, folder: str, case_id: str, model: str, args: list[str], ftype: str) -> dict:
    """Run one case in ``folder``; its record for the JSON file."""
    out, written = llama_models.output_name(case_id, args, model)
    for name in {out, *written}:
        if os.path.exists(os.path.join(folder, name)):
            os.unlink(os.path.join(folder, name))
    command = [binary, *args, llama_models.input_file(model), out, ftype, "2"]
    result = subprocess.run(command, cwd=folder, capture_output=True, text=True, errors="replace")
    record: dict = {"model": model, "args": args, "type": ftype}
    if result.returncode != 0:
        lines = [line for line in (result.stderr + result.stdout).splitlines() if line.strip()]
        record["error"] = lines[-1] if lines else f"exit status {result.returncode}"
        return record
    record["files"] = written
    record["sha256"] = [sha256(os.path.join(folder, name)) for name in written]
    record["size"] = [os.path.getsize(os.path.join(folder, name)) for name in written]
    return record


def main(argv: list[str] | None = None) -> int:
    """Command-line entry point; see the module docstring."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("build", help="llama.cpp build folder (with bin/llama-quantize)")
    parser.add_argument("cases", nargs="*", help="case ids to run (default: all)")
    parser.add_argument("--out", default=DEFAULT_OUT, help="the JSON file to write")
    args = parser.parse_args(argv)
    binary = os.path.join(os.path.abspath(args.build), "bin", "llama-quantize")
    if not os.access(binary, os.X_OK):
        parser.error(f"{binary} is not an executable")
    known = {case[0] for case in llama_models.CASES}
    unknown = [c for c in args.cases if c not in known]
    if unknown:
        parser.error(f"unknown case(s): {', '.join(unknown)}")
    records: dict = {}
    if args.cases and os.path.exists(args.out):
        with open(args.out, encoding="utf-8") as handle:
            records = json.load(handle)["cases"]
    with open(REFERENCE, encoding="utf-8") as handle:
        reference = json.load(handle)
    with tempfile.TemporaryDirectory() as folder:
        llama_models.write_all(folder)
        for case_id, model, case_args, ftype in llama_models.CASES:
            if args.cases and case_id not in args.cases:
                continue
            records[case_id] = run_case(binary, folder, case_id, model, case_args, ftype)
            state = " ".join(records[case_id].get("sha256", ["refused: " + records[case_id].get("error", "")]))
            print(f"{case_id}: {state}", flush=True)
    order = [case[0] for case in llama_models.CASES]
    document = {
        "about": "sha256 of what llama-quantize writes for tests/llama_models.py's CASES, by tools/gen_llama_references.py",
        "llama_cpp_python": reference["llama_cpp_python"],
        "llama_cpp_commit": reference["llama_cpp_commit"],
        "cases": {k: records[k] for k in order if k in records},
    }
    with open(args.out, "w", encoding="utf-8") as handle:
        json.dump(document, handle, indent=1)
        handle.write("\n")
    print(f"wrote {args.out}: {len(document['cases'])} cases")
    return 0


if __name__ == "__main__":
    sys.exit(main())
