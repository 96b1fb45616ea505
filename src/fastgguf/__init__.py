"""fastgguf: a fast, robust GGUF reader with multi-threaded CPU dequantization."""

from .errors import GGUFError
from .reader import GGUFFile, TensorInfo, open
from .types import GGMLType, GGUFValueType
from .writer import GGUFWriter

__version__ = "0.1.0"

__all__ = [
    "GGMLType",
    "GGUFError",
    "GGUFFile",
    "GGUFValueType",
    "GGUFWriter",
    "TensorInfo",
    "__version__",
    "open",
]
