"""Coverage-guided fuzzing of fastgguf.open and everything reachable from an opened file (atheris).

Usage (libFuzzer flags pass through)::

    python tests/fuzz/fuzz_gguf.py CORPUS_DIR [MORE_DIRS...] -max_total_time=600

Empty corpus directories are filled with the seeds from ``seeds.py`` first. Any exception other
than GGUFError from ``fastgguf.open``, and any crash, is a finding: libFuzzer writes the input to
``crash-*`` (see ``-artifact_prefix``). For coverage of the Cython code itself, build the extension
instrumented (README "Fuzzing").
"""

from __future__ import annotations

import os
import sys
import tempfile

import atheris

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

with atheris.instrument_imports(include=["fastgguf"]):
    import fastgguf  # noqa: F401

import harness  # noqa: E402
import seeds  # noqa: E402

# One scratch file per process, on tmpfs when there is one: fastgguf.open wants a path to map.
_SCRATCH_DIR = "/dev/shm" if os.path.isdir("/dev/shm") and os.access("/dev/shm", os.W_OK) else None
_fd, SCRATCH = tempfile.mkstemp(prefix="fastgguf-fuzz-", suffix=".gguf", dir=_SCRATCH_DIR)
os.close(_fd)


def test_one_input(data: bytes) -> None:
    with open(SCRATCH, "wb") as handle:
        handle.write(data)
    if not data:
        return  # fastgguf.open rejects empty files before mapping; nothing to fuzz
    harness.exercise_path(SCRATCH)


def main(argv: list[str]) -> None:
    for arg in argv[1:]:
        if not arg.startswith("-") and os.path.isdir(arg) and not os.listdir(arg):
            seeds.write_seeds(arg)
    atheris.Setup(argv, test_one_input)
    try:
        atheris.Fuzz()
    finally:
        os.unlink(SCRATCH)


if __name__ == "__main__":
    main(sys.argv)
