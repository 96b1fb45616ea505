"""The fuzz corpus in the normal suite: seeds read fully, every checked-in regression input ends in
success or GGUFError, and a bounded coverage-guided run (atheris, when installed) finds nothing."""

from __future__ import annotations

import os
import pathlib
import subprocess
import sys

import pytest

import fastgguf

HERE = pathlib.Path(__file__).parent
sys.path.insert(0, str(HERE))
import harness  # noqa: E402
import seeds  # noqa: E402

REGRESSIONS = sorted(p for p in (HERE / "regressions").iterdir() if not p.name.startswith("."))
BOUNDED_RUN_SECONDS = 10


@pytest.mark.parametrize("name", sorted(seeds.seed_files()))
def test_seed_opens_and_reads_fully(tmp_path, name):
    path = tmp_path / name
    path.write_bytes(seeds.seed_files()[name])
    assert harness.exercise_path(path)


@pytest.mark.parametrize("path", REGRESSIONS, ids=[p.name for p in REGRESSIONS])
def test_regression_input_is_read_or_rejected(path):
    harness.exercise_path(path)


def test_bounded_fuzz_run_finds_nothing(tmp_path):
    pytest.importorskip("atheris")
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    package_root = str(pathlib.Path(fastgguf.__file__).parent.parent)
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, [package_root, os.environ.get("PYTHONPATH")])))
    proc = subprocess.run(
        [sys.executable, str(HERE / "fuzz_gguf.py"), str(corpus), str(HERE / "regressions"),
         f"-max_total_time={BOUNDED_RUN_SECONDS}", "-max_len=8192", "-timeout=10", "-rss_limit_mb=2048",
         f"-artifact_prefix={tmp_path}/", "-print_final_stats=1"],
        capture_output=True, text=True, timeout=BOUNDED_RUN_SECONDS + 120, env=env)
    assert proc.returncode == 0, proc.stderr[-4000:]
    runs = [line for line in proc.stderr.splitlines() if line.startswith("stat::number_of_executed_units")]
    assert runs and int(runs[0].split()[-1]) > 100, proc.stderr[-2000:]
    assert not list(tmp_path.glob("crash-*")) and not list(tmp_path.glob("timeout-*"))
