"""Check that every kernel build this CPU can run gives the same bytes, type by type.

Every build (portable, avx2, avx512; on AVX-512 VNNI CPUs the avx512 build's integer path with and
without its VNNI kernels) is asked for the same things, and their outputs are compared byte for byte:

- ``dequantize`` of blocks made by ``quantize`` (portable build) from Gaussian rows, or of random
  bytes with finite scales for the types fastgguf does not quantize (Q8_1, Q8_K);
- ``quantize`` of those rows (with an importance matrix where the type uses one);
- ``matmul``, exact and integer paths, for 1, 3, 6, 9 and 17 rows of ``x`` and 1 and 2 threads
  (``--threads``).

The test suite does the same on the builds of the machine it runs on. This script is small and
needs only numpy, so it can run where the suite cannot: inside an emulator of a CPU that the
machine lacks (``tools/emulate_avx512.py`` runs it under Bochs' Skylake-X CPU model).

Prints one line per type and a last line ``CPU BUILDS AGREE`` or ``CPU BUILDS DIFFER: ...``;
exits 0 or 1.

    python tools/cpu_builds_agree.py [--types Q4_K,IQ2_XS] [--rows 16] [--cols 1024] [--threads 1,2] [--show] [--trace]
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Callable
from typing import Any

import numpy as np

import fastgguf
from fastgguf import _backend
from fastgguf.types import REGISTRY, GGMLType

#: --trace: print each step before it runs (to see where an emulated run spends its time)
TRACE = False


def _paths() -> list[tuple[str, str, bool]]:
    """(label, build, VNNI on) for every build this CPU runs, and the VNNI switch where it matters."""
    out = []
    for name, module in _backend.kernel_modules().items():
        out.append((name, name, False))
        if name == "avx512" and module.vnni_usable():
            out.append((name + " vnni", name, True))
    return out


def _use(name: str, vnni: bool) -> None:
    fastgguf.set_cpu_path(name)
    if name == "avx512":
        _backend.kernels()._set_vnni(vnni)


def _step(got: dict[str, bytes], who: str, what: str, run: Callable[..., np.ndarray], *args: Any, **kw: Any) -> None:
    if TRACE:
        print(f"  {time.perf_counter():10.3f} {who}: {what}", flush=True)
    got[what] = run(*args, **kw).tobytes()


def _outputs(qtype: GGMLType, rows: int, cols: int, thread_counts: tuple[int, ...] = (1, 2)) -> dict[str, dict[str, bytes]]:
    """What each build makes of one type's inputs: {build label: {what: bytes}}."""
    if qtype in (GGMLType.I8, GGMLType.I16, GGMLType.I32, GGMLType.I64):  # no kernels: nothing to compare
        return {}
    rng = np.random.default_rng(int(qtype))
    block, size = REGISTRY[qtype].block_size, REGISTRY[qtype].type_size
    cols = max(cols // block, 1) * block
    x = rng.standard_normal((rows, cols)).astype(np.float32)
    imatrix = rng.random(cols).astype(np.float32) + 0.1
    can_quantize = REGISTRY[qtype].imatrix != ""
    _use("portable", False)
    if can_quantize:
        blocks = fastgguf.quantize(x, qtype, imatrix=imatrix)
    elif qtype == GGMLType.F64:  # no quantizer; random bytes would be NaNs and infinities, whose payloads may differ
        blocks = x.astype(np.float64).view(np.uint8)
    else:  # Q8_1, Q8_K: any bytes but the scales' are valid; give them finite scales
        blocks = rng.integers(0, 256, size=(rows, cols // block * size), dtype=np.uint8)
        scales = blocks.reshape(rows, -1, size)
        scales[:, :, 0:4] = np.frombuffer(np.float32(0.01).tobytes(), np.uint8) if block == 256 else \
            np.frombuffer(np.float16(0.01).tobytes() * 2, np.uint8)
    has_int = _backend.kernels().has_int_dot(int(qtype))
    # 1 row; 3 and 6 (4 + 2) take the exact path's register kernels, 9 its batch walk; 17 the
    # integer path's VNNI batch kernel (the K kinds)
    xs = {m: rng.standard_normal((m, cols)).astype(np.float32) for m in (1, 3, 6, 9, 17)}
    results: dict[str, dict[str, bytes]] = {}
    for label, name, vnni in _paths():
        _use(name, vnni)
        got: dict[str, bytes] = {}
        _step(got, f"{qtype.name} {label}", "dequantize", fastgguf.dequantize, blocks, qtype)
        if can_quantize:
            _step(got, f"{qtype.name} {label}", "quantize", fastgguf.quantize, x, qtype, imatrix=imatrix)
        for m, xm in xs.items():
            for threads in thread_counts:
                _step(got, f"{qtype.name} {label}", f"matmul exact m={m} t={threads}", fastgguf.matmul, xm, blocks, qtype,
                      threads=threads)
                if has_int:
                    _step(got, f"{qtype.name} {label}", f"matmul int m={m} t={threads}", fastgguf.matmul, xm, blocks,
                          qtype, threads=threads, exact=False)
        results[label] = got
    return results


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--types", default="", help="comma-separated type names (default: every type)")
    parser.add_argument("--rows", type=int, default=16, help="weight rows (and rows quantized)")
    parser.add_argument("--cols", type=int, default=1024, help="values per row")
    parser.add_argument("--show", action="store_true", help="print where differing outputs first differ")
    parser.add_argument("--trace", action="store_true", help="print each step before it runs")
    parser.add_argument("--no-spin", action="store_true",
                        help="idle pool workers sleep at once instead of spinning 0.2 ms")
    parser.add_argument("--threads", default="1,2", help="comma-separated thread counts for matmul")
    args = parser.parse_args(argv)
    thread_counts = tuple(int(t) for t in args.threads.split(",") if t.strip())
    if not thread_counts or min(thread_counts) < 1:
        parser.error("--threads: one or more counts of at least 1")
    global TRACE
    TRACE = args.trace
    if args.no_spin:
        for module in _backend.kernel_modules().values():
            module.set_pool_spin(0.0)
    types = [GGMLType[t.strip().upper()] for t in args.types.split(",") if t.strip()] or list(REGISTRY)
    print(f"fastgguf {fastgguf.__version__}; builds: {', '.join(label for label, _, _ in _paths())}", flush=True)
    differ = []
    start = time.perf_counter()
    before = fastgguf.cpu_path()
    avx512 = _backend.kernel_modules().get("avx512")
    vnni_before = avx512.int_dot_isa() == "vnni" if avx512 is not None else None
    try:
        for qtype in types:
            differ += _check(qtype, args.rows, args.cols, args.show, thread_counts)
    finally:
        fastgguf.set_cpu_path(before)
        if avx512 is not None:
            avx512._set_vnni(vnni_before)
    print(f"({time.perf_counter() - start:.1f} s)")
    print("CPU BUILDS AGREE" if not differ else f"CPU BUILDS DIFFER: {', '.join(differ)}", flush=True)
    return 1 if differ else 0


def _first_difference(a: bytes, b: bytes) -> str:
    """Where two outputs first differ: the byte offset and 16 bytes of each from the 4-byte word there."""
    if len(a) != len(b):
        return f" ({len(a)} bytes vs {len(b)})"
    i = next(k for k in range(len(a)) if a[k] != b[k])
    start = i // 4 * 4
    return f" (first at byte {i}: {a[start:start + 16].hex()} vs {b[start:start + 16].hex()})"


def _check(qtype: GGMLType, rows: int, cols: int, show: bool = False,
           thread_counts: tuple[int, ...] = (1, 2)) -> list[str]:
    """Print one type's line; [its name] if its builds differ (with show: where they first differ)."""
    results = _outputs(qtype, rows, cols, thread_counts)
    if not results:
        return []
    base_label, base = next(iter(results.items()))
    bad = [f"{label}: {what}" + (_first_difference(base[what], got[what]) if show else "")
           for label, got in results.items() for what in got if got[what] != base[what]]
    checks = sum(len(got) for got in results.values())
    print(f"{qtype.name:8s} {checks:4d} outputs {'agree' if not bad else 'DIFFER from ' + base_label + ': ' + '; '.join(bad)}",
          flush=True)
    return [qtype.name] if bad else []


if __name__ == "__main__":
    sys.exit(main())
