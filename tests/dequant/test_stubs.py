"""Each extension module's .pyi stub names exactly the functions and classes the module defines."""

from __future__ import annotations

import ast
import importlib
import pathlib

import pytest

from fastgguf import dequant

MODULES = ["_parser"] + [f"_kernels_{path}" for path in dequant.available_cpu_paths()]


@pytest.mark.parametrize("name", MODULES)
def test_stub_matches_module(name):
    module = importlib.import_module(f"fastgguf.{name}")
    defined = {
        key for key, value in vars(module).items()
        if not key.startswith("__") and callable(value)
        and getattr(value, "__module__", None) in (module.__name__, None)
    }
    stub = pathlib.Path(module.__file__).with_name(f"{name}.pyi")
    tree = ast.parse(stub.read_text(encoding="utf-8"))
    if name.startswith("_kernels_") and name != "_kernels_portable":  # one source: the others re-export its stub
        assert any(isinstance(node, ast.ImportFrom) and node.module == "_kernels_portable" and node.names[0].name == "*"
                   for node in tree.body), f"{stub.name} should re-export _kernels_portable's stub"
        tree = ast.parse(stub.with_name("_kernels_portable.pyi").read_text(encoding="utf-8"))
    stubbed = {node.name for node in tree.body if isinstance(node, ast.FunctionDef | ast.ClassDef)}
    assert defined - stubbed == set(), f"{stub.name} lacks these"
    assert stubbed - defined == set(), f"{stub.name} names what the module does not define"
