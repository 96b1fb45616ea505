"""fastgguf: a fast, robust GGUF reader with multi-threaded CPU dequantization."""

from .dequant import dequantize
from .errors import GGUFError
from .quantize import quantize
from .naming import GGUFFilename, parse_filename
from .reader import GGUFFile, TensorInfo, open
from .split import SplitModel
from .types import GGMLType, GGUFValueType
from .writer import GGUFWriter

__version__ = "0.1.0"

__all__ = [
    "GGMLType",
    "GGUFError",
    "GGUFFile",
    "GGUFFilename",
    "GGUFValueType",
    "GGUFWriter",
    "SplitModel",
    "TensorInfo",
    "dequantize",
    "__version__",
    "open",
    "parse_filename",
    "quantize",
]
