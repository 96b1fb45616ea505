from typing import Literal, overload

import numpy as np
import numpy.typing as npt
from typing_extensions import Buffer

class KeyValue:
    key: str
    value_type: int
    key_offset: int
    value_offset: int
    element_type: int
    count: int
    data_offset: int
    element_offsets: npt.NDArray[np.uint64] | None

class ParsedHeader:
    version: int
    big_endian: bool
    wide: bool
    swap: bool
    file_size: int
    alignment: int
    tensor_infos_offset: int
    header_end: int
    data_offset: int
    kvs: list[KeyValue]
    tensors: list[tuple[str, tuple[int, ...], int, int, int, int]]

def parse(buffer: Buffer) -> ParsedHeader: ...
def decode_scalar(buffer: Buffer, offset: int, value_type: int, swap: bool) -> int | float | bool: ...
@overload
def decode_string(buffer: Buffer, offset: int, wide: bool, swap: bool, as_bytes: Literal[False] = ...) -> str: ...
@overload
def decode_string(buffer: Buffer, offset: int, wide: bool, swap: bool, as_bytes: Literal[True]) -> bytes: ...
def decode_strings(buffer: Buffer, offsets: npt.NDArray[np.uint64], wide: bool, swap: bool) -> list[str]: ...
def read_array(
    buffer: Buffer, offset: int, wide: bool, swap: bool
) -> tuple[int, int, int, npt.NDArray[np.uint64] | None]: ...
