"""Edit a GGUF file's metadata: in place when the size allows, else by rewriting the file.

:func:`set_metadata` changes one value inside the file, as gguf-py's ``gguf_set_metadata.py``
does, and only when the new value takes exactly the bytes of the old one (any number of the
same width, a string of the same byte length): nothing else in the file moves.
:func:`edit_metadata` writes a new file with keys set, added or removed; the tensor infos and
tensor bytes are copied as they are, streamed, and the output appears only once complete.

Both refuse ``general.alignment`` (it places every tensor) and the ``split.*`` keys (they tie
the shards of a split model together; use :func:`fastgguf.split_file` / :func:`fastgguf.merge_files`).

Types are named as llama-quantize's ``--override-kv`` names them, ``int``, ``float``,
``bool``, ``str``, or by GGUF value type (``UINT32``, ``FLOAT64``, ... any case). ``int`` and
``float`` keep the width of an existing number key (so that ``int`` on a UINT32 key stays
UINT32 and can be set in place); for a new key, or a key of another type, they mean INT64 and
FLOAT64, the types ``--override-kv`` writes.
"""

from __future__ import annotations

import os
import struct
from collections.abc import Iterable, Mapping
from typing import Any

import numpy as np

from ._rewrite import PartialOutputs, array_items, copy_entry, copy_tensor
from .reader import GGUFFile, Metadata
from .types import GGUFValueType
from .writer import GGUFWriter, _infer_type

__all__ = ["PROTECTED_KEYS", "edit_metadata", "parse_value", "resolve_value_type", "set_metadata"]

V = GGUFValueType
PROTECTED_KEYS = {
    "general.alignment": "it sets where every tensor's data lies; changing it would misplace them",
    "split.no": "split keys tie a split model's shards together; use fastgguf split / merge",
    "split.count": "split keys tie a split model's shards together; use fastgguf split / merge",
    "split.tensors.count": "split keys tie a split model's shards together; use fastgguf split / merge",
}
_INTEGER_TYPES = (V.UINT8, V.INT8, V.UINT16, V.INT16, V.UINT32, V.INT32, V.UINT64, V.INT64)
_FLOAT_TYPES = (V.FLOAT32, V.FLOAT64)
_SCALAR_FORMATS = {V.UINT8: "B", V.INT8: "b", V.UINT16: "H", V.INT16: "h", V.UINT32: "I", V.INT32: "i",
                   V.UINT64: "Q", V.INT64: "q", V.FLOAT32: "f", V.FLOAT64: "d", V.BOOL: "?"}


def resolve_value_type(name: str | GGUFValueType | int, existing: GGUFValueType | None = None) -> GGUFValueType:
    """A value type from its name: ``int``, ``float``, ``bool``, ``str`` or a GGUF value type name.

    ``int``/``float`` keep ``existing`` when it is an integer/float type, else mean INT64/FLOAT64.

    Raises
    ------
    ValueError
        An unknown name, or ARRAY (arrays are set through the Python API with a list).
    """
    if isinstance(name, (GGUFValueType, int)):
        return GGUFValueType(name)
    lowered = name.strip().lower()
    if lowered == "int":
        return existing if existing in _INTEGER_TYPES else V.INT64
    if lowered == "float":
        return existing if existing in _FLOAT_TYPES else V.FLOAT64
    if lowered == "bool":
        return V.BOOL
    if lowered in ("str", "string"):
        return V.STRING
    try:
        vtype = GGUFValueType[lowered.upper()]
    except KeyError:
        raise ValueError(f"unknown value type {name!r}; use int, float, bool, str or one of "
                         f"{', '.join(t.name for t in GGUFValueType if t != V.ARRAY)}") from None
    if vtype == V.ARRAY:
        raise ValueError("arrays cannot be given as text; pass a list to fastgguf.edit_metadata")
    return vtype


def parse_value(value: Any, vtype: GGUFValueType) -> Any:
    """``value`` as a Python value of GGUF type ``vtype``; text is parsed (``true``/``false``/``1``/``0`` for BOOL).

    Raises
    ------
    ValueError
        Text that is not a value of the type, or a number that does not fit it.
    """
    vtype = GGUFValueType(vtype)
    if vtype == V.STRING:
        if not isinstance(value, (str, bytes)):
            raise ValueError(f"a STRING value must be str or bytes, not {type(value).__name__}")
        return value
    if vtype == V.BOOL:
        if isinstance(value, str):
            lowered = value.strip().lower()
            if lowered not in ("true", "false", "1", "0"):
                raise ValueError(f"{value!r} is not a bool (true, false, 1 or 0)")
            return lowered in ("true", "1")
        if not isinstance(value, (bool, np.bool_)):
            raise ValueError(f"a BOOL value must be a bool, not {type(value).__name__}")
        return bool(value)
    if vtype in _INTEGER_TYPES:
        if isinstance(value, str):
            try:
                number = int(value.strip(), 0)  # 0x.., 0b.. too
            except ValueError:
                try:
                    number = int(value)  # leading zeros
                except ValueError:
                    raise ValueError(f"{value!r} is not an integer") from None
        elif isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, np.integer)):
            raise ValueError(f"an {vtype.name} value must be an int, not {type(value).__name__}")
        else:
            number = int(value)
        _check_fits(number, vtype)
        return number
    if vtype in _FLOAT_TYPES:
        if isinstance(value, str):
            try:
                number_f = float(value)
            except ValueError:
                raise ValueError(f"{value!r} is not a number") from None
        elif isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, float, np.integer, np.floating)):
            raise ValueError(f"a {vtype.name} value must be a number, not {type(value).__name__}")
        else:
            number_f = float(value)
        _check_fits(number_f, vtype)
        return number_f
    raise ValueError(f"cannot parse a {vtype.name} value")


def _check_fits(number: int | float, vtype: GGUFValueType) -> None:
    try:
        struct.pack("<" + _SCALAR_FORMATS[vtype], number)
    except (struct.error, OverflowError):
        raise ValueError(f"{number} does not fit a {vtype.name}") from None


def _refuse_protected(keys: Iterable[str]) -> None:
    for key in keys:
        if key in PROTECTED_KEYS:
            raise ValueError(f"{key} cannot be edited: {PROTECTED_KEYS[key]}")


def set_metadata(path: str | os.PathLike, key: str, value: Any,
                 type: str | GGUFValueType | None = None, *, dry_run: bool = False) -> tuple[Any, Any]:  # noqa: A002
    """Change one existing metadata value in place.

    Parameters
    ----------
    path : str or os.PathLike
        A GGUF file (one shard of a split model is one file).
    key : str
        An existing key holding a number, bool or string (not an array).
    value
        The new value; text is parsed for numbers and bools.
    type : str or GGUFValueType, optional
        The new type (see :func:`resolve_value_type`); by default the key's current type.
    dry_run : bool
        Check and return, write nothing.

    Returns
    -------
    (old, new)
        The value before and the value written.

    Raises
    ------
    KeyError
        The key is not in the file.
    ValueError
        A protected key, an array, a value that does not parse or fit, or a new value whose
        encoding is not exactly as long as the old one's (the message says to use edit-metadata).
    """
    path = os.fspath(path)
    _refuse_protected([key])
    with GGUFFile(path) as model:
        metadata = model.metadata
        if key not in metadata:
            raise KeyError(f"{path}: no key {key!r}; adding one changes the header's size: "
                           f"use fastgguf edit-metadata (fastgguf.edit_metadata)")
        old_type = metadata.value_type(key)
        if old_type == V.ARRAY:
            raise ValueError(f"{key} is an array; use fastgguf edit-metadata (fastgguf.edit_metadata)")
        new_type = resolve_value_type(type, old_type) if type is not None else old_type
        new_value = parse_value(value, new_type)
        old_value = metadata[key]
        record = metadata._records[key]
        writer = GGUFWriter(byteorder=model.byteorder, version=model.version)
        old_bytes = writer._value(old_type, metadata.raw(key) if old_type == V.STRING else old_value, None)
        new_bytes = writer._value(new_type, new_value, None)
        if len(new_bytes) != len(old_bytes):
            raise ValueError(f"{key}: the new value takes {len(new_bytes)} bytes, the old one {len(old_bytes)}; "
                             f"set-metadata only changes a value in place when the sizes match: use fastgguf "
                             f"edit-metadata (fastgguf.edit_metadata), which rewrites the file")
        type_offset = record.value_offset - 4
        encoded = struct.pack(model.byteorder + "I", new_type) + new_bytes
    if not dry_run:
        with open(path, "r+b") as handle:
            handle.seek(type_offset)
            handle.write(encoded)
    return old_value, new_value


def edit_metadata(in_path: str | os.PathLike, out_path: str | os.PathLike,
                  set: Mapping[str, Any] | None = None, remove: Iterable[str] = (), *,  # noqa: A002
                  types: Mapping[str, str | GGUFValueType] | None = None, progress=None) -> None:
    """Write ``in_path`` to ``out_path`` with metadata keys set, added or removed; tensors copied as they are.

    Parameters
    ----------
    in_path, out_path : str or os.PathLike
        A GGUF file (one shard of a split model is one file) and where to write the result;
        they may be the same path (the file is then replaced once the new one is complete).
    set : mapping, optional
        key -> new value. An existing key keeps its place and, unless ``types`` says otherwise,
        its type; a new key is added at the end with the type from ``types`` or the one
        :meth:`GGUFWriter.add` infers. Text is parsed for number and bool types; a list or
        numpy array makes an array.
    remove : iterable of str
        Keys to leave out; each must exist.
    types : mapping, optional
        key -> type name or GGUFValueType (see :func:`resolve_value_type`); for an array, its
        element type.
    progress : callable, optional
        Called with each number of tensor bytes copied.

    Raises
    ------
    ValueError
        A protected key, a key both set and removed, a removed key that is not there, or a
        value that does not parse or fit its type. Nothing is written then.
    """
    changes = dict(set or {})
    removed = list(dict.fromkeys(remove))
    types = dict(types or {})
    _refuse_protected(list(changes) + removed)
    both = sorted(k for k in removed if k in changes)
    if both:
        raise ValueError(f"{', '.join(both)}: both set and removed")
    unknown_types = sorted(k for k in types if k not in changes)
    if unknown_types:
        raise ValueError(f"types given for keys that are not set: {', '.join(unknown_types)}")
    in_path, out_path = os.fspath(in_path), os.fspath(out_path)
    if os.path.isdir(out_path):
        raise ValueError(f"{out_path} is a folder")
    with GGUFFile(in_path) as model:
        metadata = model.metadata
        missing = [k for k in removed if k not in metadata]
        if missing:
            raise ValueError(f"{in_path}: no key {', '.join(repr(k) for k in missing)} to remove")
        writer = GGUFWriter(byteorder=model.byteorder, alignment=model.alignment, version=model.version)
        for key in metadata:
            if key in removed:
                continue
            if key in changes:
                _add_value(writer, key, changes.pop(key), types.get(key), metadata)
            else:
                copy_entry(metadata, key, writer)
        for key, value in changes.items():
            _add_value(writer, key, value, types.get(key), None)
        tensors = list(model.tensors.values())
        for info in tensors:
            writer.add_tensor_info(info.name, info.type, info.shape)
        with PartialOutputs() as outputs:
            handle = outputs.create(out_path)
            writer.write_header(handle)
            for info in tensors:
                copy_tensor(writer, handle, info, progress)
            writer.end_stream()
            outputs.commit()


def _add_value(writer: GGUFWriter, key: str, value: Any, type_name: str | GGUFValueType | None,
               metadata: Metadata | None) -> None:
    existing = metadata.value_type(key) if metadata is not None else None
    if isinstance(value, (list, tuple, np.ndarray)):
        old_element = metadata.element_type(key) if metadata is not None else None
        element = resolve_value_type(type_name, old_element) if type_name is not None else old_element
        if element is not None:
            value = [parse_value(item, element) for item in array_items(value)] \
                if not isinstance(value, np.ndarray) else value
        try:
            writer.add(key, value, V.ARRAY, element)
        except (TypeError, ValueError, struct.error, OverflowError) as error:
            raise ValueError(f"{key}: {error}") from None
        return
    if type_name is not None:
        vtype = resolve_value_type(type_name, existing)
    elif existing is not None and existing != V.ARRAY:
        vtype = existing
    else:
        try:
            vtype = _infer_type(value)
        except TypeError as error:
            raise ValueError(f"{key}: {error}") from None
    try:
        writer.add(key, parse_value(value, vtype), vtype)
    except ValueError as error:
        raise ValueError(f"{key}: {error}") from None
