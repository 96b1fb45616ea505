""".ci/run's second pass: check that it really runs the debug build (bounds checks, AddressSanitizer)."""

from __future__ import annotations

import importlib
import os
import pathlib

import pytest

pytestmark = pytest.mark.skipif(not os.environ.get("FASTGGUF_EXPECT_DEBUG_BUILD"),
                                reason="only in the debug-build pass (FASTGGUF_EXPECT_DEBUG_BUILD=1)")

MODULES = ["fastgguf._parser", "fastgguf._kernels_portable"]


@pytest.mark.parametrize("name", MODULES)
def test_extension_is_compiled_with_bounds_checks(name):
    module = importlib.import_module(name)
    source = pathlib.Path(module.__file__).parent / (name.rsplit(".", 1)[1] + ".c")
    # Cython emits these calls only where boundscheck=True left an index check in the code.
    assert "__Pyx_RaiseBufferIndexError(" in source.read_text()


@pytest.mark.parametrize("name", MODULES)
def test_extension_is_instrumented_by_addresssanitizer(name):
    module = importlib.import_module(name)
    assert b"__asan_report_load" in pathlib.Path(module.__file__).read_bytes()


def test_addresssanitizer_runtime_is_loaded():
    with open("/proc/self/maps") as maps:
        assert "libasan" in maps.read()
