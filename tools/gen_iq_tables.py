"""Write ``src/fastgguf/_c/iq_tables.h`` (the lookup tables of the IQ, MXFP4 and NVFP4 formats, as
``static const`` C arrays), ``iq_tables.pxd`` (their Cython declarations) and ``iq_tables.pxi``
(``_iq_tables()``, the tables as bytes for the tests).

The grids are format constants. They are taken once from gguf-py (``pip install
gguf==0.19.0``), which stores them packed as hexadecimal text, and expanded here
into the byte values ggml's block formats refer to. The small tables (sign
parity, non-linear 4-bit values, FP4/FP8 decodings) are computed from their
definitions. ``tests/dequant/test_dequant_iq.py`` checks every table against gguf-py
again, so a hand edit of the output cannot go unnoticed.

Usage::

    python tools/gen_iq_tables.py            # rewrite the module
    python tools/gen_iq_tables.py --check    # exit 1 if it is out of date
"""

from __future__ import annotations

import argparse
import pathlib
import sys

import numpy as np
from gguf import quants

OUTPUT = pathlib.Path(__file__).resolve().parent.parent / "src" / "fastgguf" / "_c" / "iq_tables.pxi"
HEADER = OUTPUT.with_suffix(".h")

#: C name -> gguf-py class whose expanded grid it holds.
GRIDS = {
    "iq2xxs_grid": quants.IQ2_XXS,
    "iq2xs_grid": quants.IQ2_XS,
    "iq2s_grid": quants.IQ2_S,
    "iq3xxs_grid": quants.IQ3_XXS,
    "iq3s_grid": quants.IQ3_S,
    "iq1s_grid": quants.IQ1_S,
}

#: The 16 signed values a non-linear 4-bit code stands for (IQ4_NL, IQ4_XS).
IQ4NL_VALUES = (-127, -104, -83, -65, -49, -35, -22, -10, 1, 13, 25, 38, 53, 69, 89, 113)


def grid_bytes(cls) -> np.ndarray:
    """Return ``cls``'s grid as an (entries, width) int array of the values ggml stores."""
    cls.init_grid()
    grid = np.asarray(cls.grid, dtype=np.float32).reshape(cls.grid_shape)
    values = grid.astype(np.int64)
    assert (values == grid).all()
    return values


def ksigns() -> list[int]:
    """Seven sign bits plus an eighth that makes the count of set bits even."""
    return [i | ((bin(i).count("1") & 1) << 7) for i in range(128)]


def fp4_values() -> list[int]:
    """E2M1 code -> twice its value (the integer form MXFP4 and NVFP4 scale by half the block scale)."""
    magnitudes = [0, 1, 2, 3, 4, 6, 8, 12]  # 2 * {0, 0.5, 1, 1.5, 2, 3, 4, 6}
    return magnitudes + [-m for m in magnitudes]


def e8m0_half(code: int) -> float:
    """Half the power of two an E8M0 byte encodes (MXFP4 stores values doubled)."""
    return float(np.ldexp(np.float32(1.0), code - 128))


def ue4m3_half(code: int) -> float:
    """Half the value of an unsigned E4M3 byte as ggml reads it (bit 7 ignored; 0x00 and 0x7F give 0)."""
    if code in (0x00, 0x7F):
        return 0.0
    exponent, mantissa = (code >> 3) & 0xF, code & 0x7
    value = mantissa * 2.0**-9 if exponent == 0 else (1 + mantissa / 8) * 2.0 ** (exponent - 7)
    return value * 0.5


def c_float(x: float) -> str:
    assert np.float32(x) == x, x
    return f"{float(x).hex()}f" if x else "0.0f"


def c_array(ctype: str, name: str, rows: list[list[str]]) -> tuple[str, str]:
    """Return (C definition, Cython declaration) of a static const 1-D or 2-D array."""
    width = len(rows[0])
    if width == 1:
        dims = f"[{len(rows)}]"
        body = ",\n".join("    " + ", ".join(r[0] for r in rows[i : i + 8]) for i in range(0, len(rows), 8))
    else:
        dims = f"[{len(rows)}][{width}]"
        body = ",\n".join("    {" + ", ".join(r) + "}" for r in rows)
    cname = f"fgg_{name}"
    return f"static const {ctype} {cname}{dims} = {{\n{body}\n}};", f"    const {ctype} {cname}{dims}"


def render() -> tuple[str, str]:
    defs: list[tuple[str, str]] = []
    for name, cls in GRIDS.items():
        values = grid_bytes(cls)
        ctype = "int8_t" if values.min() < 0 else "uint8_t"
        fmt = (lambda v: f"{v:d}") if ctype == "int8_t" else (lambda v: f"0x{v:02x}")
        defs.append(c_array(ctype, name, [[fmt(int(v)) for v in row] for row in values]))
        # The same grid as float32, for the kernels: a group decodes with plain vector loads. Static
        # data, not filled at import: a kernel module's import runs no ISA-specific loop.
        defs.append(c_array("float", f"{name}_f32", [[f"{int(v):d}.0f" for v in row] for row in values]))
    defs.append(c_array("uint8_t", "ksigns", [[f"0x{v:02x}"] for v in ksigns()]))
    # Every byte of sign bits as eight +-1.0 multipliers; low bit first.
    sign_rows = [["-1.0f" if (b >> j) & 1 else "1.0f" for j in range(8)] for b in range(256)]
    defs.append(c_array("float", "sign_f32", sign_rows))
    defs.append(c_array("int8_t", "iq4nl_values", [[f"{v:d}"] for v in IQ4NL_VALUES]))
    defs.append(c_array("int8_t", "fp4_values", [[f"{v:d}"] for v in fp4_values()]))
    defs.append(c_array("float", "e8m0_half_f32", [[c_float(e8m0_half(c))] for c in range(256)]))
    defs.append(c_array("float", "ue4m3_half_f32", [[c_float(ue4m3_half(c))] for c in range(256)]))

    c_code = "\n\n".join(d for d, _ in defs)
    decls = "\n".join(d for _, d in defs)
    names = [d.split()[3].split("[")[0] for d, _ in defs]
    dump = "\n".join(
        f'        "{n.removeprefix("fgg_")}": (<const char *> &{n}[0])[:sizeof({n})],' for n in names
    )
    header = (
        "/* Generated by tools/gen_iq_tables.py -- do not edit; rerun the script. */\n"
        "/* Lookup tables of the IQ, MXFP4 and NVFP4 formats (declared in iq_tables.pxd). */\n"
        "#ifndef FGG_IQ_TABLES_H\n#define FGG_IQ_TABLES_H\n#include <stdint.h>\n\n"
        f"{c_code}\n\n#endif\n"
    )
    pxd = f'''# Generated by tools/gen_iq_tables.py -- do not edit; rerun the script.
# Declarations of iq_tables.h: lookup tables of the IQ, MXFP4 and NVFP4 formats, static const C
# arrays (one copy per kernel module; tests/dequant/test_dequant_iq.py checks them against gguf-py).

from libc.stdint cimport int8_t, uint8_t

cdef extern from "iq_tables.h":
{decls}
'''
    pxi = f'''# Generated by tools/gen_iq_tables.py -- do not edit; rerun the script.
# The lookup tables of iq_tables.h as bytes, for the tests.

from fastgguf._c.iq_tables cimport *


def _iq_tables():
    \"\"\"Return every lookup table as raw bytes, keyed by name (for the tests).\"\"\"
    return {{
{dump}
    }}
'''
    return header, pxd, pxi


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="only report whether the module is current")
    args = parser.parse_args()
    header, pxd, pxi = render()
    outputs = ((HEADER, header), (OUTPUT.with_suffix(".pxd"), pxd), (OUTPUT, pxi))
    if args.check:
        current = all(path.exists() and path.read_text() == text for path, text in outputs)
        print(f"{OUTPUT} and {HEADER.name}, .pxd: {'up to date' if current else 'OUT OF DATE'}")
        return 0 if current else 1
    for path, text in outputs:
        path.write_text(text)
        print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
