"""The kernel table and the generated type table agree with fastgguf.types, in every build this CPU runs."""

from __future__ import annotations

import subprocess
import sys

import pytest

from fastgguf import GGMLType, dequant
from fastgguf.types import TYPE_TRAITS

from conftest import REPO


def test_generated_type_table_is_current():
    done = subprocess.run([sys.executable, str(REPO / "tools" / "gen_type_table.py"), "--check"],
                          capture_output=True, text=True)
    assert done.returncode == 0, done.stderr


@pytest.mark.parametrize("path", dequant.available_cpu_paths())
def test_layouts_match_types_py(path):
    module = dequant.kernel_modules()[path]
    for type_id in range(-1, 70):
        expected = TYPE_TRAITS.get(type_id) if type_id in GGMLType._value2member_map_ else None
        assert module._type_layout(type_id) == (tuple(expected) if expected else (0, 0)), type_id


@pytest.mark.parametrize("path", dequant.available_cpu_paths())
def test_every_type_has_a_row(path):
    # Every type has a dequantize and a byteswap entry; ids that are no type have no row at all.
    module = dequant.kernel_modules()[path]
    for qtype in GGMLType:
        assert module.has_kernel(int(qtype)) and module.has_byteswap(int(qtype)), qtype.name
    for type_id in (-1, 4, 5, 31, 36, 43, 63, 64, 1000):
        assert not (module.has_kernel(type_id) or module.has_byteswap(type_id) or module.has_quantize(type_id)
                    or module.has_dot(type_id))


def test_all_builds_have_the_same_columns():
    modules = list(dequant.kernel_modules().values())
    for qtype in GGMLType:
        columns = {(m.has_kernel(qtype), m.has_byteswap(qtype), m.has_quantize(qtype), m.has_dot(qtype)) for m in modules}
        assert len(columns) == 1, qtype.name
