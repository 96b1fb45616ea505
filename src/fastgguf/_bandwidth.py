"""Memory write bandwidth for benchmarks: the last-level cache's size and numpy's fill on N threads.

A dequantizer's output is compared with ``fill`` writing a float32 array of the same size. For
that to be a memory figure, not a cache one, the array must be well past the last-level cache
(:func:`default_elements`: 4x it); for it to be fair, the fill runs on as many threads as the
dequantization (:func:`threaded_fill`: each thread fills its slice; numpy releases the GIL in
``fill``). Used by ``fastgguf bench`` and the scripts in ``benchmarks/``.
"""

from __future__ import annotations

import math
import os
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

import numpy as np

__all__ = ["FALLBACK_LLC_BYTES", "LLC_FACTOR", "CacheInfo", "default_elements", "describe_llc",
           "fill_bandwidth", "last_level_cache", "parse_cache_size", "read_sysfs_llc", "threaded_fill"]

SYSFS_CACHE = "/sys/devices/system/cpu/cpu0/cache"
#: Assumed when the cache size cannot be read (a large server L3).
FALLBACK_LLC_BYTES = 32 << 20
#: Benchmark arrays are at least this many times the last-level cache.
LLC_FACTOR = 4

_UNITS = {"": 1, "K": 1 << 10, "M": 1 << 20, "G": 1 << 30}


@dataclass(frozen=True)
class CacheInfo:
    """A cache's size in bytes and level; ``level`` is None for the fallback guess."""

    size: int
    level: int | None


def parse_cache_size(text: str) -> int:
    """Bytes of a sysfs cache size: ``"32768K"``, ``"8M"``, ``"1G"`` or plain bytes (ValueError otherwise)."""
    text = text.strip().upper().removesuffix("B").removesuffix("I")
    unit = text[-1:] if text[-1:] in ("K", "M", "G") else ""
    number = text[: len(text) - len(unit)].strip()
    if not number.isdigit() or int(number) == 0:
        raise ValueError(f"not a cache size: {text!r}")
    return int(number) * _UNITS[unit]


def _read(path: str) -> str | None:
    try:
        with open(path, encoding="ascii") as f:
            return f.read().strip()
    except (OSError, UnicodeDecodeError):
        return None


def read_sysfs_llc(root: str = SYSFS_CACHE) -> CacheInfo | None:
    """The highest-level data or unified cache under ``root`` (Linux's ``.../cpu0/cache``), or None.

    Each ``index*`` directory holds ``level``, ``type`` and ``size``; instruction caches and
    entries that do not parse are skipped; of several caches at the highest level the largest wins.
    """
    try:
        names = sorted(name for name in os.listdir(root) if name.startswith("index"))
    except OSError:
        return None
    best: CacheInfo | None = None
    for name in names:
        directory = os.path.join(root, name)
        level, kind, size = (_read(os.path.join(directory, f)) for f in ("level", "type", "size"))
        if level is None or size is None or not level.isdigit() or kind == "Instruction":
            continue
        try:
            found = CacheInfo(parse_cache_size(size), int(level))
        except ValueError:
            continue
        if best is None or (found.level, found.size) > (best.level or 0, best.size):
            best = found
    return best


def last_level_cache(root: str = SYSFS_CACHE) -> CacheInfo:
    """The last-level cache from sysfs, else :data:`FALLBACK_LLC_BYTES` with ``level`` None."""
    return read_sysfs_llc(root) or CacheInfo(FALLBACK_LLC_BYTES, None)


def describe_llc(cache: CacheInfo) -> str:
    """``"the 32 MiB L3 cache"``, or the fallback's ``"32 MiB (cache size unknown, assumed)"``."""
    size = f"{cache.size / (1 << 20):g} MiB" if cache.size >= 1 << 20 else f"{cache.size / (1 << 10):g} KiB"
    return f"the {size} L{cache.level} cache" if cache.level is not None else f"{size} (cache size unknown, assumed)"


def default_elements(cache: CacheInfo | None = None, itemsize: int = 4, multiple: int = 4096) -> int:
    """Elements of ``itemsize`` bytes filling :data:`LLC_FACTOR` times the last-level cache, rounded
    up to a multiple of ``multiple`` (a row length, itself a multiple of every block size)."""
    cache = cache or last_level_cache()
    return math.ceil(LLC_FACTOR * cache.size / itemsize / multiple) * multiple


def _slices(array: np.ndarray, threads: int) -> list[np.ndarray]:
    if not array.flags.c_contiguous:
        raise ValueError("threaded_fill needs a C-contiguous array")
    return np.array_split(array.reshape(-1), max(1, min(threads, array.size)))


def threaded_fill(array: np.ndarray, value: float, threads: int, executor: ThreadPoolExecutor | None = None) -> None:
    """``array.fill(value)`` with ``threads`` threads, each filling one contiguous slice.

    One thread fills in the caller's thread; more use ``executor`` (one is made for the call
    without it).
    """
    if threads <= 1:
        array.fill(value)
        return
    parts = _slices(array, threads)
    if executor is None:
        with ThreadPoolExecutor(len(parts)) as pool:
            list(pool.map(lambda part: part.fill(value), parts))
    else:
        list(executor.map(lambda part: part.fill(value), parts))


def fill_bandwidth(array: np.ndarray, threads: int, repeat: int = 10) -> float:
    """Bytes per second numpy's fill writes into ``array`` on ``threads`` threads, best of ``repeat`` runs.

    The pages are touched (and the threads started) by an untimed first fill; ``array`` ends up
    holding 1.0.
    """
    with ThreadPoolExecutor(max(1, threads)) as pool:
        threaded_fill(array, 0.0, threads, pool)
        best = math.inf
        for _ in range(max(1, repeat)):
            start = time.perf_counter()
            threaded_fill(array, 1.0, threads, pool)
            best = min(best, time.perf_counter() - start)
    return array.nbytes / best
