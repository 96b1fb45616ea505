"""The one owner of the compiled kernels and of the threads that run them.

The kernels are compiled several times (``portable`` and, on x86, ``avx2`` and ``avx512``); the
best build this CPU can run is chosen on import. ``FASTGGUF_CPU=portable|avx2|avx512`` forces one
(a build this CPU cannot run is an error at import); :func:`set_cpu_path` switches later. Every
build gives the same bits. A build the CPU cannot run is never imported: its code would die of an
illegal instruction, not raise.

:mod:`fastgguf.dequant`, :mod:`fastgguf.quant` and :mod:`fastgguf.matmul` are peers above this
module: they validate their arguments, then call :func:`kernels`. The kernel builds have their own
worker threads on POSIX (``_c/pool.h``; ``kernels().has_thread_pool()``): dequantization, the half
casts and matmul hand one call the whole range and a thread count, which costs about a microsecond
where a hand-off to Python's pool costs 100 µs or more. Elsewhere, and for quantization, the range
is split in Python and the pieces run on :func:`run_chunks`. :func:`set_num_threads` and
:func:`cpu_path` govern all of it and are re-exported at the top of the package.
"""

from __future__ import annotations

import importlib
import importlib.util
import operator
import os
import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from types import ModuleType
from typing import Any

from . import _kernels_portable

__all__ = [
    "available_cpu_paths",
    "check_threads",
    "cpu_path",
    "get_num_threads",
    "kernel_modules",
    "kernels",
    "resolve_threads",
    "run_chunks",
    "set_cpu_path",
    "set_num_threads",
]

#: Kernel builds from slowest to fastest.
CPU_PATHS = ("portable", "avx2", "avx512")


def _load(name: str) -> ModuleType:
    """Import the kernel build ``name``, only if this CPU can run it."""
    if name not in CPU_PATHS or not _kernels_portable.cpu_supports(name):
        raise ValueError(f"this CPU cannot run the {name!r} kernel build")
    return importlib.import_module(f"fastgguf._kernels_{name}")


def available_cpu_paths() -> tuple[str, ...]:
    """Kernel builds that exist in this installation and that this CPU can run, slowest first."""
    return tuple(name for name in CPU_PATHS
                 if _kernels_portable.cpu_supports(name)
                 and importlib.util.find_spec(f"fastgguf._kernels_{name}") is not None)


def kernel_modules() -> dict[str, ModuleType]:
    """Every kernel build this CPU can run, imported, by name (slowest first): for tests and benchmarks."""
    return {name: _load(name) for name in available_cpu_paths()}


def _initial_cpu_path() -> str:
    available = available_cpu_paths()
    requested = os.environ.get("FASTGGUF_CPU", "").strip().lower()
    if requested:
        if requested not in available:
            reason = "is not a kernel build" if requested not in CPU_PATHS else "cannot run on this CPU or is not built"
            raise RuntimeError(
                f"FASTGGUF_CPU={requested!r} {reason} (available here: {', '.join(available)}); "
                "unset it or choose one of those"
            )
        return requested
    return available[-1]


_cpu_path = _initial_cpu_path()
_kernels = _load(_cpu_path)


def kernels() -> ModuleType:
    """The kernel build in use (read it once per call: :func:`set_cpu_path` may switch it)."""
    return _kernels


def cpu_path() -> str:
    """Name of the kernel build in use: ``"portable"``, ``"avx2"`` or ``"avx512"``."""
    return _cpu_path


def set_cpu_path(name: str) -> None:
    """Use the kernel build ``name`` from now on (one of :func:`available_cpu_paths`).

    Raises
    ------
    ValueError
        If that build is missing or this CPU cannot run it.
    """
    global _cpu_path, _kernels
    if name not in available_cpu_paths():
        raise ValueError(f"CPU path {name!r} is not available here (available: {', '.join(available_cpu_paths())})")
    _kernels = _load(name)
    _cpu_path = name


# --- threads -----------------------------------------------------------------------------------

_default_threads: int | None = None
_pool: ThreadPoolExecutor | None = None
_pool_size = 0
_pool_lock = threading.Lock()


def check_threads(n: Any) -> int:
    """``n`` as a thread count (an int >= 1); TypeError/ValueError otherwise."""
    try:
        n = operator.index(n)
    except TypeError:
        raise TypeError(f"threads must be an int or None, not {type(n).__name__}") from None
    if n < 1:
        raise ValueError(f"threads must be at least 1, got {n}")
    return n


def set_num_threads(n: int | None) -> None:
    """Set how many threads dequantize, quantize and matmul use when called with ``threads=None``.

    ``None`` means every core this process may run on.
    """
    global _default_threads
    _default_threads = None if n is None else check_threads(n)


def usable_cores() -> int:
    """Cores this process may run on (its CPU affinity where the OS tells, else all)."""
    try:
        return len(os.sched_getaffinity(0)) or 1
    except (AttributeError, OSError):
        return os.cpu_count() or 1


def get_num_threads() -> int:
    """How many threads an operation called with ``threads=None`` uses: all usable cores unless set."""
    return _default_threads if _default_threads is not None else usable_cores()


def resolve_threads(threads: Any) -> int:
    """A ``threads=`` argument made a count: ``None`` is :func:`get_num_threads`, else checked."""
    return get_num_threads() if threads is None else check_threads(threads)


def _executor(workers: int) -> ThreadPoolExecutor:
    """The shared thread pool, with room for at least ``workers`` threads (created on first use).

    Threads start only as work arrives. A pool too small for a request is replaced, not shut
    down: another caller may still be submitting to it; it goes away with its last user.
    """
    global _pool, _pool_size
    with _pool_lock:
        if _pool is None or _pool_size < workers:
            _pool_size = max(workers, usable_cores())
            _pool = ThreadPoolExecutor(max_workers=_pool_size, thread_name_prefix="fastgguf")
        return _pool


def run_split(kernels: Any, n_chunks: int, whole: Callable[[int], Any],
              pieces: Callable[[], list[Callable[[], Any]]]) -> None:
    """Run one kernel call over a range on ``n_chunks`` threads.

    Where the kernel build has its own worker threads (or one chunk is enough): ``whole(n_chunks)``,
    one call that splits the range itself. Elsewhere: ``pieces()``, one callable per part of the
    range, on :func:`run_chunks`.
    """
    if n_chunks == 1 or kernels.has_thread_pool():
        whole(n_chunks)
    else:
        run_chunks(pieces())


def run_chunks(tasks: list[Callable[[], Any]]) -> None:
    """Run ``tasks`` (callables), the first on this thread and the rest on the pool; re-raise the first error."""
    if len(tasks) == 1:
        tasks[0]()
        return
    futures = [_executor(len(tasks) - 1).submit(task) for task in tasks[1:]]
    try:
        tasks[0]()
    finally:
        for future in futures:
            future.result()
