"""The type registry (fastgguf.types.REGISTRY) agrees with the kernels and with llama.cpp's tables."""

from __future__ import annotations

import pytest

from fastgguf import GGMLType, dequant, quant
from fastgguf.requantize import FILE_TYPES, MIXES
from fastgguf.types import REGISTRY, TYPE_TRAITS, types_where

ROWS = sorted(REGISTRY.items())


def test_one_row_per_type_and_the_layout_columns_are_type_traits():
    assert set(REGISTRY) == set(GGMLType)
    assert {t: (r.block_size, r.type_size) for t, r in REGISTRY.items()} == {t: tuple(v) for t, v in TYPE_TRAITS.items()}


@pytest.mark.parametrize("qtype, row", ROWS, ids=[t.name for t, _ in ROWS])
def test_row_is_consistent(qtype, row):
    assert row.imatrix in ("", "required", "used", "ignored")
    assert (row.imatrix != "") == quant.has_quantize(qtype), "imatrix policy set exactly for the quantizable types"
    assert (row.imatrix == "required") == quant.requires_imatrix(qtype)
    assert dequant.has_kernel(qtype) and dequant.has_byteswap(qtype)
    covered = set()
    for offset, width, count in row.fields:  # byte-swapped numbers: inside the block, no overlap
        assert width in (2, 4, 8) and count >= 1
        span = set(range(offset, offset + width * count))
        assert span <= set(range(row.type_size)) and not span & covered
        covered |= span
    if row.fallback is not None:
        fallback = REGISTRY[row.fallback]
        assert fallback.block_size < row.block_size and fallback.fallback is None
        assert fallback.imatrix in ("used", "ignored"), "a fallback must be writable without an importance matrix"
    if row.llama_imatrix:
        assert row.imatrix in ("required", "used")


def test_file_types_are_llamas():
    written = {t: r.file_type for t, r in REGISTRY.items() if r.file_type is not None}
    assert set(written.values()) <= set(FILE_TYPES.values())
    assert len(set(written.values())) == len(written)
    by_value = {value: name for name, value in FILE_TYPES.items()}
    for qtype, file_type in written.items():
        # the file type whose mix starts from this tensor type (llama-quantize --pure writes only it),
        # the one of the same name when that one does (IQ2_S's starts from IQ2_XS: IQ2_M's is IQ2_S)
        assert MIXES[by_value[file_type]] == qtype
        if MIXES.get(qtype.name) == qtype:
            assert by_value[file_type] == qtype.name


def test_types_where():
    assert types_where(imatrix="required") == {GGMLType.IQ2_XXS, GGMLType.IQ2_XS, GGMLType.IQ1_S}
    assert GGMLType.Q8_0 in types_where(fast=True, imatrix="ignored")
    assert types_where(imatrix="nonsense") == frozenset()
