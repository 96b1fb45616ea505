"""fastgguf: a fast, robust GGUF reader with multi-threaded CPU dequantization."""

from .dequant import dequantize
from .errors import GGUFError
from .export import export_model
from .imatrix import read_imatrix
from .matmul import matmul, matmul_id, take_rows
from .naming import GGUFFilename, parse_filename
from .quant import quantize
from .quant_stats import QuantError, quant_error
from .reader import GGUFFile, TensorInfo
from .split import SplitModel, open
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
    "QuantError",
    "SplitModel",
    "TensorInfo",
    "dequantize",
    "export_model",
    "matmul",
    "matmul_id",
    "__version__",
    "open",
    "parse_filename",
    "quant_error",
    "quantize",
    "read_imatrix",
    "take_rows",
]
