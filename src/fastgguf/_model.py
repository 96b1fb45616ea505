"""What a single GGUF file and a split model both offer, written once."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any

import numpy as np

if TYPE_CHECKING:
    from .reader import TensorInfo


class _Model:
    """Base of :class:`~fastgguf.GGUFFile` and :class:`~fastgguf.SplitModel`.

    A subclass provides ``tensors`` (name → :class:`~fastgguf.TensorInfo`, raising
    :class:`~fastgguf.GGUFError` once closed), ``closed`` and ``close()``; this class adds
    dequantizing by name, loading many tensors and the context-manager protocol.
    """

    __slots__ = ()

    @property
    def tensors(self) -> Mapping[str, TensorInfo]:
        raise NotImplementedError

    @property
    def closed(self) -> bool:
        raise NotImplementedError

    def close(self) -> None:
        raise NotImplementedError

    def dequantize(self, name: str, *, rows: Any = None, out: np.ndarray | None = None, threads: int | None = None,
                   dtype: Any = None) -> np.ndarray:
        """Dequantize tensor ``name`` (the whole tensor, or some rows); see :meth:`fastgguf.TensorInfo.dequantize`.

        Raises
        ------
        KeyError
            If there is no tensor of that name.
        """
        return self._tensor(name).dequantize(rows=rows, out=out, threads=threads, dtype=dtype)

    def load(self, names: Iterable[str] | None = None, *, threads: int | None = None,
             dtype: Any = None) -> dict[str, np.ndarray]:
        """Dequantize every tensor (or those named) into a dict name → array."""
        chosen = list(self.tensors) if names is None else list(names)
        return {name: self.dequantize(name, threads=threads, dtype=dtype) for name in chosen}

    def _tensor(self, name: str) -> TensorInfo:
        try:
            return self.tensors[name]
        except KeyError:
            raise KeyError(f"no tensor named {name!r}") from None

    def __enter__(self):  # -> Self (typing.Self needs Python 3.11)
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()
