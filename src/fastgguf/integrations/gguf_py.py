"""Make code written for gguf-py (``import gguf``) read and dequantize through fastgguf.

After :func:`enable`, ``gguf.GGUFReader``, ``gguf.dequantize`` and ``gguf.quantize`` (and the same
names in ``gguf.gguf_reader`` / ``gguf.quants``) are :mod:`fastgguf.gguf_compat`'s: the same
attributes and values, without gguf-py's per-element walk of the header, and fastgguf's kernels for
the blocks. Modules that imported those names before (``from gguf import GGUFReader`` in
transformers, diffusers, ComfyUI-GGUF, scripts) are found in ``sys.modules`` and pointed at the fast
versions too. :func:`disable` puts gguf-py's own objects back everywhere, including in modules
imported while it was enabled.

This is the seam every GGUF consumer in Python shares; it does not depend on any consumer's version.
"""

from __future__ import annotations

import contextlib
import importlib
import importlib.util
import sys
import threading
from collections.abc import Iterator
from typing import Any

from . import _layers

__all__ = ["disable", "enable", "enabled", "is_enabled", "original"]

# (module of gguf, attribute) -> name in fastgguf.gguf_compat
_TARGETS = (
    ("gguf", "GGUFReader", "GGUFReader"),
    ("gguf.gguf_reader", "GGUFReader", "GGUFReader"),
    ("gguf", "dequantize", "dequantize"),
    ("gguf.quants", "dequantize", "dequantize"),
    ("gguf", "quantize", "quantize"),
    ("gguf.quants", "quantize", "quantize"),
)

_lock = threading.RLock()
_originals: dict[str, Any] = {}  # compat name -> gguf-py's object, while enabled
_patched: list[tuple[Any, str, Any]] = []  # (module, attribute, gguf-py's object it held)


def original(name: str) -> Any:
    """gguf-py's own ``GGUFReader`` / ``dequantize`` / ``quantize`` (even while enabled); None without gguf-py."""
    with _lock:
        if name in _originals:
            return _originals[name]
    try:
        import gguf.gguf_reader
        import gguf.quants
    except ImportError:
        return None
    return gguf.gguf_reader.GGUFReader if name == "GGUFReader" else getattr(gguf.quants, name, None)


def is_enabled() -> bool:
    """Whether ``gguf``'s reader and (de)quantizers are fastgguf's."""
    return bool(_patched)


def _modules_holding(obj: Any) -> Iterator[tuple[Any, str]]:
    """``(module, attribute)`` for every loaded module with a global that is ``obj``."""
    for module in list(sys.modules.values()):
        namespace = getattr(module, "__dict__", None)
        if not isinstance(namespace, dict):
            continue
        for attribute, value in list(namespace.items()):
            if value is obj:
                yield module, attribute


def enable() -> bool:
    """Point gguf-py's reader, ``dequantize`` and ``quantize`` at fastgguf's, wherever they were imported.

    Returns
    -------
    bool
        True; False (nothing changed) when gguf-py is not installed.
    """
    from .. import gguf_compat

    with _lock:
        if _patched:
            return True
        if importlib.util.find_spec("gguf") is None:
            return False
        try:
            for _, _, name in _TARGETS:
                if name not in _originals:
                    _originals[name] = original(name)
            replacements = {id(_originals[name]): getattr(gguf_compat, name) for name in _originals}
            for theirs in _originals.values():
                for module, attribute in _modules_holding(theirs):
                    if getattr(module, "__name__", "").startswith("fastgguf."):
                        continue
                    _patched.append((module, attribute, theirs))
                    setattr(module, attribute, replacements[id(theirs)])
            for module_name, attribute, name in _TARGETS:  # the gguf modules themselves, whatever they held
                module = importlib.import_module(module_name)
                if getattr(module, attribute) is not getattr(gguf_compat, name):
                    _patched.append((module, attribute, getattr(module, attribute)))
                    setattr(module, attribute, getattr(gguf_compat, name))
        except BaseException:
            _restore()
            raise
        return True


def _restore() -> None:
    from .. import gguf_compat

    while _patched:
        module, attribute, theirs = _patched.pop()
        setattr(module, attribute, theirs)
    # names copied from gguf while enabled (modules imported meanwhile) get gguf-py's objects back
    for name, theirs in _originals.items():
        for module, attribute in _modules_holding(getattr(gguf_compat, name)):
            if not getattr(module, "__name__", "").startswith("fastgguf"):
                setattr(module, attribute, theirs)
    _originals.clear()


def disable() -> None:
    """Undo :func:`enable`: every name points at gguf-py's own object again."""
    with _lock:
        if _patched:
            _restore()


@contextlib.contextmanager
def enabled() -> Iterator[bool]:
    """``with enabled():`` — :func:`enable` on entry, :func:`disable` on exit (if this call enabled it)."""
    with _layers.enabled_while(enable, disable, is_enabled) as result:
        yield result
