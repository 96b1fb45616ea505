"""Kernel builds for instruction sets the CPU lacks are never imported (they would die of SIGILL).

A CPU without AVX-512 is faked through the detection itself: ``_kernels_portable.cpu_supports`` is
wrapped, as soon as that module loads, to deny ``"avx512"``, and an import hook fails any import of
``fastgguf._kernels_avx512``. Then importing fastgguf, choosing paths, converting data and running
part of the test suite must not touch that build, and ``FASTGGUF_CPU=avx512`` must be an error.
"""

from __future__ import annotations

import os
import pathlib
import subprocess
import sys
import textwrap

import pytest

import fastgguf

from conftest import REPO

FAKE_CPU = textwrap.dedent(
    '''
    """pytest plugin / preamble: this CPU has no AVX-512, and its kernel build must not be imported."""
    import importlib.abc
    import importlib.machinery
    import sys

    FORBIDDEN = "fastgguf._kernels_avx512"


    class _Loader(importlib.abc.Loader):
        def __init__(self, inner):
            self.inner = inner

        def create_module(self, spec):
            return self.inner.create_module(spec)

        def exec_module(self, module):
            self.inner.exec_module(module)
            real = module.cpu_supports
            module.cpu_supports = lambda variant: False if variant == "avx512" else real(variant)


    class FakeCpuWithoutAvx512(importlib.abc.MetaPathFinder):
        def find_spec(self, name, path=None, target=None):
            if name == FORBIDDEN:
                raise ImportError(f"{FORBIDDEN} imported on a CPU without AVX-512")
            if name != "fastgguf._kernels_portable":
                return None
            spec = importlib.machinery.PathFinder.find_spec(name, path)
            if spec is None:
                return None
            spec.loader = _Loader(spec.loader)
            return spec


    sys.meta_path.insert(0, FakeCpuWithoutAvx512())


    def pytest_unconfigure(config):
        assert FORBIDDEN not in sys.modules
    '''
)


@pytest.fixture
def fake_cpu_env(tmp_path):
    (tmp_path / "fake_cpu_without_avx512.py").write_text(FAKE_CPU)
    # The fastgguf this run imports (an in-place build under src/, or an installed one).
    package_root = pathlib.Path(fastgguf.__file__).resolve().parent.parent
    paths = [str(tmp_path), str(package_root), os.environ.get("PYTHONPATH", "")]
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in paths if p))
    env.pop("FASTGGUF_CPU", None)
    return env


def run(code: str, env: dict) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=300)


def test_faked_cpu_never_imports_the_avx512_build(fake_cpu_env):
    code = textwrap.dedent(
        """
        import sys
        import fake_cpu_without_avx512
        import numpy as np
        import fastgguf
        from fastgguf import dequant

        assert "avx512" not in dequant.available_cpu_paths(), dequant.available_cpu_paths()
        assert dequant.cpu_path() != "avx512"
        try:
            dequant.set_cpu_path("avx512")
        except ValueError:
            pass
        else:
            raise AssertionError("set_cpu_path('avx512') accepted")
        for name in dequant.available_cpu_paths():
            dequant.set_cpu_path(name)
            x = np.linspace(-1, 1, 64, dtype=np.float32)
            assert (fastgguf.dequantize(fastgguf.quantize(x, fastgguf.GGMLType.F16), fastgguf.GGMLType.F16) == x.astype(np.float16)).all()
        assert set(dequant.kernel_modules()) == set(dequant.available_cpu_paths())
        assert fake_cpu_without_avx512.FORBIDDEN not in sys.modules
        print("ok", dequant.available_cpu_paths())
        """
    )
    done = run(code, fake_cpu_env)
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("ok")


def test_faked_cpu_rejects_fastgguf_cpu_avx512(fake_cpu_env):
    done = run("import fake_cpu_without_avx512, fastgguf", dict(fake_cpu_env, FASTGGUF_CPU="avx512"))
    assert done.returncode != 0
    assert "RuntimeError: FASTGGUF_CPU='avx512' cannot run on this CPU" in done.stderr
    assert "Fatal Python error" not in done.stderr


def test_faked_cpu_test_suite_never_imports_the_avx512_build(fake_cpu_env):
    # The tests that go through every kernel build, under the fake CPU (the plugin fails the run
    # if the AVX-512 build is imported at any point, collection included).
    args = [
        sys.executable, "-m", "pytest", "-q", "-p", "fake_cpu_without_avx512", "-p", "no:cacheprovider",
        "--benchmark-disable", "-x", "-k", "all_cpu_paths_agree or grid_matches or module_level_checks or hand_built",
        "tests/dequant/test_dequant_exact.py", "tests/dequant/test_dequant_iq.py", "tests/dequant/test_dequant_api.py",
    ]
    done = subprocess.run(args, env=fake_cpu_env, cwd=REPO, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    assert " passed" in done.stdout
