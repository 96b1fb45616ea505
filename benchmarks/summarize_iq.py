"""Summarize a pytest-benchmark JSON of bench_dequant_iq.py: speed per type, ratios to gguf-py and to fill.

Usage::

    PYTHONPATH=src python -m pytest benchmarks/bench_dequant_iq.py --benchmark-json=iq.json
    python benchmarks/summarize_iq.py iq.json

Speeds are elements per second from each case's minimum time (the least disturbed
round); "fill" is ``out.fill(1.0)`` on an array of the same size (past the last-level cache),
the memory-bandwidth ceiling for writing the result, on as many threads as the run it is compared
with: "1 thread / fill" against the 1-thread fill, "all threads / fill" against the fill with every
thread filling its slice.
"""

from __future__ import annotations

import json
import re
import sys


def main(path: str) -> int:
    with open(path, encoding="utf-8") as f:
        report = json.load(f)
    best: dict[str, float] = {}
    elements = 0
    for bench in report["benchmarks"]:
        best[bench["name"]] = bench["stats"]["min"]
        elements = bench["extra_info"].get("elements", elements)
    fill = best["test_fill_ceiling[1thread]"]
    fill_all = best["test_fill_ceiling[allthreads]"]
    print(f"{elements} elements; fill {elements / fill / 1e9:.2f} G elem/s on 1 thread, "
          f"{elements / fill_all / 1e9:.2f} on all threads\n")
    print("| type | 1 thread (G elem/s) | all threads | gguf-py | 1 thread / gguf-py | 1 thread / fill "
          "| all threads / fill |")
    print("|---|---:|---:|---:|---:|---:|---:|")
    types = sorted({m.group(1) for name in best if (m := re.match(r"test_fastgguf\[(\w+)-1thread\]", name))})
    for qtype in types:
        one = best[f"test_fastgguf[{qtype}-1thread]"]
        every = best.get(f"test_fastgguf[{qtype}-allthreads]")
        ref = best.get(f"test_gguf_py[{qtype}]")
        ref_speed = f"{elements / ref / 1e9:.3f}" if ref else "-"
        ratio = f"{ref / one:.0f}x" if ref else "-"
        print(
            f"| {qtype} | {elements / one / 1e9:.2f} | {f'{elements / every / 1e9:.2f}' if every else '-'} "
            f"| {ref_speed} | {ratio} "
            f"| {fill / one:.0%} | {f'{fill_all / every:.0%}' if every else '-'} |"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
