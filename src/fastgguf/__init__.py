"""fastgguf: a fast, robust GGUF reader with multi-threaded CPU dequantization."""

from ._backend import available_cpu_paths, cpu_path, get_num_threads, set_cpu_path, set_num_threads
from ._version import __version__
from .dequant import dequantize
from .errors import GGUFError
from .eval import eval  # noqa: A004 - fastgguf.eval, the model-output comparison
from .export import export_model
from .gguf_split import merge_files, split_file
from .imatrix import read_imatrix
from .matmul import RepackedWeight, matmul, matmul_id, repack, take_rows
from .metadata_edit import edit_metadata, set_metadata
from .naming import GGUFFilename, parse_filename
from .quant import quantize
from .quant_stats import QuantError, quant_error
from .reader import GGUFFile, TensorInfo
from .split import SplitModel, open
from .types import GGMLType, GGUFValueType
from .writer import GGUFWriter

__all__ = [
    "GGMLType",
    "GGUFError",
    "GGUFFile",
    "GGUFFilename",
    "GGUFValueType",
    "GGUFWriter",
    "QuantError",
    "RepackedWeight",
    "SplitModel",
    "TensorInfo",
    "available_cpu_paths",
    "cpu_path",
    "dequantize",
    "edit_metadata",
    "eval",
    "export_model",
    "get_num_threads",
    "matmul",
    "matmul_id",
    "merge_files",
    "__version__",
    "open",
    "parse_filename",
    "quant_error",
    "quantize",
    "read_imatrix",
    "repack",
    "set_cpu_path",
    "set_metadata",
    "set_num_threads",
    "split_file",
    "take_rows",
]
