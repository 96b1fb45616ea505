"""fastgguf.integrations.gguf_py: gguf-py's names point at gguf_compat while enabled, and back after."""

from __future__ import annotations

import sys
import types

import numpy as np
import pytest

pytest.importorskip("gguf")
import gguf  # noqa: E402
import gguf.gguf_reader  # noqa: E402
import gguf.quants  # noqa: E402

from fastgguf import gguf_compat  # noqa: E402
from fastgguf.integrations import gguf_py  # noqa: E402
from fastgguf.types import GGMLType  # noqa: E402
from fastgguf.writer import GGUFWriter  # noqa: E402

NAMES = ("GGUFReader", "dequantize", "quantize")


def _theirs():
    return {"GGUFReader": gguf.gguf_reader.GGUFReader, "dequantize": gguf.quants.dequantize,
            "quantize": gguf.quants.quantize}


@pytest.fixture(autouse=True)
def _always_disabled_after():
    yield
    gguf_py.disable()


@pytest.fixture
def consumer():
    """A module that did ``from gguf import GGUFReader, dequantize, quantize`` before enable()."""
    module = types.ModuleType("consumer_of_gguf")
    for name in NAMES:
        setattr(module, name, getattr(gguf, name))
    sys.modules[module.__name__] = module
    yield module
    del sys.modules[module.__name__]


def test_enable_points_every_name_at_fastgguf_and_disable_restores_identity(consumer):
    theirs = _theirs()
    assert gguf_py.enable() is True and gguf_py.is_enabled()
    for name in NAMES:
        ours = getattr(gguf_compat, name)
        assert getattr(gguf, name) is ours
        assert getattr(consumer, name) is ours  # imported before enable()
        assert gguf_py.original(name) is theirs[name]
    assert gguf.gguf_reader.GGUFReader is gguf_compat.GGUFReader
    assert gguf.quants.dequantize is gguf_compat.dequantize and gguf.quants.quantize is gguf_compat.quantize
    gguf_py.disable()
    assert not gguf_py.is_enabled()
    for name in NAMES:
        assert getattr(gguf, name) is theirs[name]
        assert getattr(consumer, name) is theirs[name]
    assert _theirs() == theirs


def test_enable_twice_and_disable_twice_are_harmless(consumer):
    theirs = _theirs()
    gguf_py.enable()
    gguf_py.enable()
    gguf_py.disable()
    gguf_py.disable()
    assert all(getattr(consumer, name) is theirs[name] for name in NAMES)


def test_module_imported_while_enabled_gets_gguf_py_back():
    theirs = _theirs()
    gguf_py.enable()
    late = types.ModuleType("late_consumer_of_gguf")
    late.GGUFReader = gguf.GGUFReader  # what `from gguf import GGUFReader` gives now: ours
    sys.modules[late.__name__] = late
    try:
        assert late.GGUFReader is gguf_compat.GGUFReader
        gguf_py.disable()
        assert late.GGUFReader is theirs["GGUFReader"]
    finally:
        del sys.modules[late.__name__]


def test_exception_inside_enable_undoes_everything(consumer, monkeypatch):
    theirs = _theirs()
    real_import = gguf_py.importlib.import_module

    def fail_on_quants(name, *args, **kwargs):
        if name == "gguf.quants":
            raise RuntimeError("injected")
        return real_import(name, *args, **kwargs)

    monkeypatch.setattr(gguf_py.importlib, "import_module", fail_on_quants)
    with pytest.raises(RuntimeError, match="injected"):
        gguf_py.enable()
    assert not gguf_py.is_enabled()
    for name in NAMES:
        assert getattr(gguf, name) is theirs[name]
        assert getattr(consumer, name) is theirs[name]


def test_without_gguf_py_enable_changes_nothing(monkeypatch):
    real_find_spec = gguf_py.importlib.util.find_spec
    monkeypatch.setattr(gguf_py.importlib.util, "find_spec",
                        lambda name, *a: None if name == "gguf" else real_find_spec(name, *a))
    assert gguf_py.enable() is False
    assert not gguf_py.is_enabled() and gguf.GGUFReader is _theirs()["GGUFReader"]


def test_context_manager_leaves_an_earlier_enable_alone():
    with gguf_py.enabled() as active:
        assert active and gguf.GGUFReader is gguf_compat.GGUFReader
    assert gguf.GGUFReader is not gguf_compat.GGUFReader
    gguf_py.enable()
    with gguf_py.enabled():
        pass
    assert gguf.GGUFReader is gguf_compat.GGUFReader  # still on: the outer enable() owns it


def test_code_written_for_gguf_py_reads_the_same_while_enabled(tmp_path):
    path = str(tmp_path / "m.gguf")
    writer = GGUFWriter(path)
    writer.add("general.architecture", "llama")
    writer.add("tokenizer.ggml.tokens", [f"tok{i}" for i in range(1000)])
    rng = np.random.default_rng(0)
    writer.add_tensor("w", rng.standard_normal((4, 256)).astype(np.float32))
    blocks = gguf.quants.quantize(rng.standard_normal((4, 256)).astype(np.float32), gguf.GGMLQuantizationType.Q8_0)
    writer.add_tensor("q", blocks, type=GGMLType.Q8_0, shape=(4, 256))
    writer.write()

    def script():  # what a consumer writes against gguf-py's public API
        reader = gguf.GGUFReader(path)
        tokens = reader.fields["tokenizer.ggml.tokens"].contents()
        arrays = {t.name: gguf.dequantize(t.data, t.tensor_type) for t in reader.tensors}
        return tokens, arrays

    expected_tokens, expected = script()
    with gguf_py.enabled():
        assert gguf.GGUFReader is gguf_compat.GGUFReader
        tokens, got = script()
    assert tokens == expected_tokens
    assert expected.keys() == got.keys()
    for name in expected:
        assert got[name].dtype == expected[name].dtype and got[name].tobytes() == expected[name].tobytes()
