"""The README's "Tensor types" table is the one tools/type_table.py generates from the type table and the kernels."""

from __future__ import annotations

import importlib.util

import fastgguf
from fastgguf import GGMLType, dequant

from conftest import REPO


def load_tool():
    spec = importlib.util.spec_from_file_location("type_table", REPO / "tools" / "type_table.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_readme_type_table_is_current():
    tool = load_tool()
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    assert "\n## Tensor types\n" in readme
    assert tool.readme_table(readme) == tool.render(), "README out of date: paste `python tools/type_table.py`"


def test_table_has_a_row_per_type_with_its_support():
    rows = {}
    for line in load_tool().render().splitlines()[3:-1]:
        cells = [c.strip() for c in line.strip("|").split("|")]
        rows[int(cells[0])] = cells
    assert sorted(rows) == sorted(int(t) for t in GGMLType)
    for qtype in GGMLType:
        assert rows[int(qtype)][1] == qtype.name
        assert rows[int(qtype)][5] == ("yes" if dequant.has_kernel(qtype) else "no")
        quantizable = qtype in fastgguf.quant.supported_types()
        assert rows[int(qtype)][6] == (("imatrix" if fastgguf.quant.requires_imatrix(qtype) else "yes")
                                       if quantizable else "no")
        assert rows[int(qtype)][7].startswith("exact") == dequant.has_kernel(qtype)


def test_matmul_column_is_the_same_for_every_kernel_build():
    """The table must not depend on the CPU it was generated on."""
    answers = {tuple(module.has_int_dot(int(t)) for t in GGMLType) for module in dequant.kernel_modules().values()}
    assert len(answers) == 1
