""".ci/run's second pass: check that it really runs the debug build (bounds checks, ASan, UBSan)."""

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


@pytest.mark.parametrize("name", MODULES)
def test_extension_is_instrumented_by_ubsan(name):
    # float-cast-overflow included: a float converted to an integer it does not fit is reported.
    data = pathlib.Path(importlib.import_module(name).__file__).read_bytes()
    assert b"__ubsan_handle_" in data
    if name != "fastgguf._parser":
        assert b"__ubsan_handle_float_cast_overflow" in data


def test_addresssanitizer_runtime_is_loaded():
    with open("/proc/self/maps") as maps:
        assert "libasan" in maps.read()
