"""Record what llama.cpp's llama-gguf-split writes, for tests/files/test_split_write.py to compare with.

Usage::

    python tools/gen_split_references.py LLAMA_CPP_BUILD_DIR [--out tests/data/split_references.json]

Builds the small deterministic models of ``tests/split_models.py``, runs
``BUILD_DIR/bin/llama-gguf-split`` on each case there (``--split`` with its options, its
``--dry-run`` plan, and ``--merge`` of the shards), and writes the SHA-256 of every model and
output file, the shard names and the dry-run plan, with the llama.cpp version that made them.
Nothing is built here; build llama.cpp first (``cmake --build build --target llama-gguf-split``).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "tests"))
sys.path.insert(0, os.path.join(HERE, "..", "src"))

from split_models import CASES, MERGED_FROM, REFERENCES, build_models, sha256  # noqa: E402


def run(command: list[str]) -> str:
    done = subprocess.run(command, capture_output=True, text=True)
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(command)} failed ({done.returncode}):\n{done.stdout}\n{done.stderr}")
    return done.stdout


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("build_dir", help="a llama.cpp build folder (with bin/llama-gguf-split)")
    parser.add_argument("--out", default=REFERENCES, help="the JSON to write (default: %(default)s)")
    parser.add_argument("--source", default="", help="where the llama.cpp tree came from, recorded as is")
    args = parser.parse_args()
    tool = os.path.join(args.build_dir, "bin", "llama-gguf-split")
    if not os.access(tool, os.X_OK):
        raise SystemExit(f"{tool}: not found or not executable")
    version = subprocess.run([tool, "--version"], capture_output=True, text=True)
    version_text = (version.stdout + version.stderr).strip()

    cases: dict[str, dict] = {}
    with tempfile.TemporaryDirectory(prefix="split-refs-") as scratch:
        models = build_models(scratch)
        model_hashes = {name: sha256(path) for name, path in models.items()}
        order = [MERGED_FROM] + [case for case in CASES if case != MERGED_FROM]  # "merged" needs MERGED_FROM's merge
        for case in order:
            model, options = CASES[case]
            folder = os.path.join(scratch, case)
            os.mkdir(folder)
            prefix = os.path.join(folder, "out")
            plan = run([tool, "--split", *options, "--dry-run", models[model], prefix])
            run([tool, "--split", *options, models[model], prefix])
            shards = sorted(name for name in os.listdir(folder) if name.endswith(".gguf"))
            merged = os.path.join(scratch, f"{case}-merged.gguf")
            run([tool, "--merge", os.path.join(folder, shards[0]), merged])
            cases[case] = {
                "model": model,
                "options": options,
                "dry_run_stdout": plan,
                "shards": {name: sha256(os.path.join(folder, name)) for name in shards},
                "merged": sha256(merged),
            }
            if case == MERGED_FROM:
                models["merged"] = merged
                model_hashes["merged"] = cases[case]["merged"]
    document = {
        "about": "sha256 of what llama-gguf-split writes for the models of tests/split_models.py; "
                 "written by tools/gen_split_references.py",
        "llama_cpp": {"version": version_text, "source": args.source},
        "models": model_hashes,
        "cases": {case: cases[case] for case in CASES},
    }
    with open(args.out, "w") as handle:
        json.dump(document, handle, indent=1, sort_keys=False)
        handle.write("\n")
    print(f"wrote {len(cases)} cases to {args.out}")


if __name__ == "__main__":
    main()
