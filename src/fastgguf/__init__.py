"""fastgguf: a fast, robust GGUF reader with multi-threaded CPU dequantization."""

from .errors import GGUFError
from .types import GGMLType, GGUFValueType

__version__ = "0.1.0"

__all__ = [
    "GGMLType",
    "GGUFError",
    "GGUFValueType",
    "__version__",
]
