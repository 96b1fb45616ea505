"""tools/cpu_builds_agree.py: the cross-build byte check that tools/emulate_avx512.py runs under an emulated
AVX-512 CPU. Here it runs on this machine's builds, and it must catch a build that differs."""

from __future__ import annotations

import importlib.util

import numpy as np
import pytest

import fastgguf
from fastgguf import _backend

from conftest import REPO


def _load_tool(name: str):
    spec = importlib.util.spec_from_file_location(name, REPO / "tools" / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _tool():
    return _load_tool("cpu_builds_agree")


def test_builds_here_agree(capsys):
    before = fastgguf.cpu_path()  # the build in use: the best one here, or FASTGGUF_CPU's
    assert _tool().main(["--types", "Q4_K,IQ2_XS,Q4_0,BF16,Q8_K", "--rows", "9", "--cols", "512"]) == 0
    out = capsys.readouterr().out
    assert "CPU BUILDS AGREE" in out
    assert all(f"{name} " in out for name in ("Q4_K", "IQ2_XS", "Q4_0", "BF16", "Q8_K"))
    assert fastgguf.cpu_path() == before, "the check must leave the build in use as it found it"


@pytest.mark.skipif(len(_backend.available_cpu_paths()) < 2, reason="one kernel build here: nothing to compare")
def test_a_differing_build_is_caught(capsys, monkeypatch):
    tool = _tool()
    real = fastgguf.matmul

    def off_by_one_ulp(*args, **kw):  # what a miscompiled build would do: every build but portable is off
        out = real(*args, **kw)
        if fastgguf.cpu_path() != "portable":
            out = np.nextafter(out, np.float32(np.inf))
        return out

    monkeypatch.setattr(fastgguf, "matmul", off_by_one_ulp)
    assert tool.main(["--types", "Q6_K", "--rows", "2", "--cols", "256"]) == 1
    out = capsys.readouterr().out
    assert "CPU BUILDS DIFFER: Q6_K" in out and "matmul exact m=1 t=1" in out


def test_thread_counts_are_the_ones_asked_for(capsys):
    assert _tool().main(["--types", "Q4_0", "--rows", "2", "--cols", "64", "--threads", "1", "--trace"]) == 0
    out = capsys.readouterr().out
    assert "matmul exact m=9 t=1" in out and "t=2" not in out
    with pytest.raises(SystemExit):
        _tool().main(["--types", "Q4_0", "--threads", "0"])


def test_emulator_register_check_builds_and_passes_on_real_avx512(tmp_path):
    """The emulator's --register-check program (it found Bochs losing zmm0-31 across thread switches)
    compiles; on a CPU with AVX-512 it runs here and must find the registers kept."""
    import pathlib
    import shutil
    import subprocess

    if shutil.which("gcc") is None:
        pytest.skip("no gcc")
    exe = tmp_path / "register_check"
    built = _load_tool("emulate_avx512").build_register_check(exe)
    if built.returncode != 0 and "cannot find -l" in built.stderr:
        pytest.skip("no static C library here")
    assert built.returncode == 0, built.stderr
    if "avx512f" not in pathlib.Path("/proc/cpuinfo").read_text():
        pytest.skip("no AVX-512 here to run it on")
    ran = subprocess.run([str(exe)], capture_output=True, text=True, timeout=120)
    assert ran.returncode == 0 and "REGISTERS KEPT" in ran.stdout, ran.stdout
