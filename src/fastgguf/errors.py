"""The package's one exception family."""

from __future__ import annotations

__all__ = ["GGUFError"]


class GGUFError(ValueError):
    """A GGUF file (or a buffer handed to the reader) is malformed or unsupported.

    Parameters
    ----------
    message : str
        What is wrong.
    offset : int, optional
        Byte offset in the file where the problem was found; it is appended
        to the message as ``"(at byte N)"``.
    """

    def __init__(self, message: str, offset: int | None = None) -> None:
        self.reason = message
        self.offset = offset
        if offset is not None:
            message = f"{message} (at byte {offset})"
        super().__init__(message)

    def __reduce__(self):
        return (type(self), (self.reason, self.offset))
