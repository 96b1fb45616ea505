"""Read importance matrices written by llama.cpp's ``llama-imatrix``, in both of its formats.

An importance matrix gives, for each weight tensor, one non-negative float per input column
(ggml's ``quant_weights``): the mean square of the activations that column multiplied while
the model ran over some text. Quantizers weight their rounding error by it.

The values are what ``llama-quantize`` derives from the file (its ``load_imatrix``):

* GGUF files hold, per tensor ``NAME``, an F32 tensor ``NAME.in_sum2`` (sums of squared
  activations) and an F32 tensor ``NAME.counts`` (how many activations each matrix saw; one
  count per expert for a 3-D expert tensor). Counts are rounded to integers (``lround``);
  the value is ``in_sum2 / count`` in float32 for every matrix whose count is positive, and
  1 for a matrix never seen. ``NAME.in_sum`` (plain sums, newer files) is checked but not used.
* The older binary ``.dat`` files (little-endian): ``int32 n_entries``; per entry ``int32``
  name length, the name, ``int32 ncall``, ``int32 nval``, ``nval`` float32 values; then,
  optionally, ``int32`` chunk count, ``int32`` length and the dataset name. The value is
  ``values / ncall`` when ``ncall > 0``, else the stored values. Names end at a NUL byte, as
  llama.cpp reads them; a later entry with the same name replaces an earlier one.

An expert tensor of ``E`` experts with rows of ``n`` elements has an entry of ``E * n``
values, expert ``e``'s being ``[e * n:(e + 1) * n]`` (how ``llama-quantize`` slices it).
"""

from __future__ import annotations

import os
import struct

import numpy as np

from .errors import GGUFError
from .reader import GGUFFile, TensorInfo
from .types import GGMLType, GGUFValueType

__all__ = ["read_imatrix", "read_imatrix_info"]

_SUFFIXES = (".in_sum2", ".in_sum", ".counts")


def read_imatrix(path: str | os.PathLike) -> dict[str, np.ndarray]:
    """Read an importance matrix file (GGUF or legacy ``.dat``) as ``llama-quantize`` loads it.

    Parameters
    ----------
    path : str or os.PathLike
        A file written by ``llama-imatrix``; the format is told by its first bytes (``GGUF``).

    Returns
    -------
    dict of str to numpy.ndarray
        Tensor name (e.g. ``"blk.0.attn_q.weight"``) to a 1-D float32 array: ``n_per_row``
        values, or ``n_expert * n_per_row`` for an expert tensor (see the module docstring).

    Raises
    ------
    GGUFError
        The file is malformed (truncated, inconsistent lengths, sums without counts, a
        non-F32 tensor, a non-finite value), or holds no entries. The message gives the byte
        offset where that is meaningful.
    OSError
        The file cannot be read.
    """
    path = os.fspath(path)
    with open(path, "rb") as handle:
        magic = handle.read(4)
    if magic == b"GGUF":
        return _read_gguf(path)
    return _read_legacy(path)


def read_imatrix_info(path: str | os.PathLike) -> tuple[list[bytes], int]:
    """The dataset names and chunk count an importance matrix file records, as llama.cpp reads them.

    ``llama-quantize`` writes the first dataset as ``quantize.imatrix.dataset`` and a positive
    chunk count as ``quantize.imatrix.chunks_count``. GGUF files: the string array
    ``imatrix.datasets`` and ``imatrix.chunk_count``; legacy ``.dat`` files: the optional
    ``int32`` chunk count, ``int32`` length and name after the entries. Names end at a NUL byte
    (C strings). Missing parts give ``([], 0)``. Call :func:`read_imatrix` first to check the file.
    """
    path = os.fspath(path)
    with open(path, "rb") as handle:
        magic = handle.read(4)
    if magic == b"GGUF":
        with GGUFFile(path) as f:
            meta = f.metadata
            datasets: list[bytes] = []
            if "imatrix.datasets" in meta and meta.value_type("imatrix.datasets") == GGUFValueType.ARRAY \
                    and meta.element_type("imatrix.datasets") == GGUFValueType.STRING:
                names = meta["imatrix.datasets"]
                datasets = [names.raw(i).split(b"\0", 1)[0] for i in range(len(names))]
            count = meta.get("imatrix.chunk_count", 0)
            try:
                chunks = int(count)
            except (TypeError, ValueError):
                chunks = 0
            return datasets, chunks
    with open(path, "rb") as handle:
        data = handle.read()
    pos, size = 4, len(data)
    if size < 4:
        return [], 0
    (n_entries,) = struct.unpack_from("<i", data, 0)
    for _ in range(max(n_entries, 0)):
        if pos + 4 > size:
            return [], 0
        (length,) = struct.unpack_from("<i", data, pos)
        pos += 4 + length + 4
        if pos + 4 > size:
            return [], 0
        (nval,) = struct.unpack_from("<i", data, pos)
        pos += 4 + 4 * nval
    if pos + 4 > size:
        return [], 0
    (chunks,) = struct.unpack_from("<i", data, pos)
    pos += 4
    if pos + 4 > size:
        return [], chunks
    (length,) = struct.unpack_from("<i", data, pos)
    pos += 4
    if length <= 0 or pos + length > size:
        return [], chunks
    return [data[pos : pos + length].split(b"\0", 1)[0]], chunks


def _read_gguf(path: str) -> dict[str, np.ndarray]:
    with GGUFFile(path) as f:
        if not f.tensors:
            raise GGUFError(f"{path}: no importance matrix entries (the file has no tensors)")
        groups: dict[str, dict[str, TensorInfo]] = {}
        for info in f.tensors.values():
            for suffix in _SUFFIXES:
                if info.name.endswith(suffix) and len(info.name) > len(suffix):
                    groups.setdefault(info.name[: -len(suffix)], {})[suffix] = info
                    break
        result: dict[str, np.ndarray] = {}
        for name, parts in groups.items():
            sums, counts, plain = parts.get(".in_sum2"), parts.get(".counts"), parts.get(".in_sum")
            if sums is None or counts is None:
                missing = ".in_sum2" if sums is None else ".counts"
                raise GGUFError(f"{path}: importance matrix entry {name!r} has no {name + missing!r} tensor")
            for info in (sums, counts, plain):
                if info is not None and info.type != GGMLType.F32:
                    raise GGUFError(f"{path}: tensor {info.name!r} is {info.type.name}, "
                                    f"importance matrix tensors must be F32", info.offset)
            sums_v = _f32(sums, f.byteorder)
            counts_v = _f32(counts, f.byteorder)
            if plain is not None and plain.n_elements != sums_v.size:
                raise GGUFError(f"{path}: {plain.name!r} has {plain.n_elements} values, "
                                f"{sums.name!r} has {sums_v.size}", plain.offset)
            if counts_v.size == 0 or sums_v.size == 0:
                continue  # llama-quantize skips such entries
            if sums_v.size % counts_v.size:
                raise GGUFError(f"{path}: {sums.name!r} has {sums_v.size} values, not a multiple of the "
                                f"{counts_v.size} counts", sums.offset)
            if not np.isfinite(counts_v).all():
                raise GGUFError(f"{path}: {counts.name!r} holds a non-finite count", counts.offset)
            # std::lround (halves away from zero), then the count as a float.
            rounded = (np.sign(counts_v) * np.floor(np.abs(counts_v.astype(np.float64)) + 0.5)).astype(np.float32)
            per_matrix = sums_v.reshape(counts_v.size, -1)
            seen = rounded > 0
            values = np.ones_like(per_matrix)
            np.divide(per_matrix, rounded[:, None], out=values, where=seen[:, None])
            result[name] = _finite(values.reshape(-1), path, name, sums.offset)
    return result


def _f32(info: TensorInfo, byteorder: str) -> np.ndarray:
    return np.frombuffer(info.raw, dtype=byteorder + "f4").astype(np.float32)


def _read_legacy(path: str) -> dict[str, np.ndarray]:
    with open(path, "rb") as handle:
        data = handle.read()
    size = len(data)
    pos = 0

    def int32(what: str) -> int:
        nonlocal pos
        if pos + 4 > size:
            raise GGUFError(f"{path}: truncated importance matrix: {what} needs 4 bytes, "
                            f"{size - pos} left", pos)
        (value,) = struct.unpack_from("<i", data, pos)
        pos += 4
        return value

    n_entries = int32("the entry count")
    if n_entries < 1:
        raise GGUFError(f"{path}: not an importance matrix: {n_entries} entries "
                        f"(neither a GGUF file nor llama-imatrix's .dat format)", 0)
    result: dict[str, np.ndarray] = {}
    for index in range(n_entries):
        start = pos
        length = int32(f"entry {index}'s name length")
        if length < 0 or length > size - pos:
            raise GGUFError(f"{path}: entry {index}: name length {length} with {size - pos} bytes left", start)
        raw_name = data[pos : pos + length].split(b"\0", 1)[0]
        pos += length
        ncall = int32(f"entry {index}'s call count")
        nval_at = pos
        nval = int32(f"entry {index}'s value count")
        if nval < 1 or nval > (size - pos) // 4:
            raise GGUFError(f"{path}: entry {index}: {nval} values with {size - pos} bytes left", nval_at)
        values = np.frombuffer(data, dtype="<f4", count=nval, offset=pos).astype(np.float32)
        name = raw_name.decode("utf-8", "surrogateescape")
        if ncall > 0:
            values = values / np.float32(ncall)
        result[name] = _finite(values, path, name, pos)
        pos += 4 * nval
    # What follows (chunk count, dataset name) is optional and not needed for quantizing.
    return result


def _finite(values: np.ndarray, path: str, name: str, offset: int) -> np.ndarray:
    bad = np.flatnonzero(~np.isfinite(values))
    if bad.size:
        raise GGUFError(f"{path}: importance matrix entry {name!r} has a non-finite value at index {bad[0]}", offset)
    return np.ascontiguousarray(values, dtype=np.float32)
