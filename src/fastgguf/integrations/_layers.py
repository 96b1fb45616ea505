"""What the integrations share: the opening checks of a layered ``enable()`` and the ``enabled()`` context."""

from __future__ import annotations

import contextlib
import warnings
from collections.abc import Callable, Iterator, Sequence
from typing import Any

__all__ = ["enabled_while", "opening"]


def opening(library: str, layer: str | None, layers: Sequence[str], active: list[str],
            unsupported_reason: Callable[[], str | None]) -> str | bool | None:
    """The start of ``enable(layer)``, called under the integration's lock.

    ``layer`` must be None or one of ``layers``. Returns the active layer when one is on already
    (RuntimeError if another was asked for), False with a ``RuntimeWarning`` when the library
    cannot be hooked here (``unsupported_reason()``), and None when ``enable`` should go on.
    """
    if layer not in (None, *layers):
        raise ValueError(f"layer must be None or one of {tuple(layers)}, not {layer!r}")
    if active:
        if layer is not None and layer != active[0]:
            raise RuntimeError(f"already enabled with the {active[0]!r} layer; disable() first")
        return active[0]
    reason = unsupported_reason()
    if reason is not None:
        # stacklevel 3: the caller of enable(), not enable() itself
        warnings.warn(f"fastgguf.integrations.{library} not enabled: {reason}", RuntimeWarning, stacklevel=3)
        return False
    return None


@contextlib.contextmanager
def enabled_while(enable: Callable[[], Any], disable: Callable[[], None],
                  is_enabled: Callable[[], bool]) -> Iterator[Any]:
    """``enable()`` on entry, ``disable()`` on exit if this call is what enabled it; yields what enable returned."""
    already = is_enabled()
    result = enable()
    try:
        yield result
    finally:
        if result and not already:
            disable()
