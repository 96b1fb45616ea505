"""Files written by gguf-py itself, for the differential tests against it (parser, gguf_compat)."""

from __future__ import annotations

import gguf
import numpy as np

from fastgguf import GGMLType
from fastgguf.types import TYPE_TRAITS

# gguf-py 0.19 sizes Q8_1 as 40 bytes per block (ggml: 36), and cannot size the newest types.
GGUF_PY_COMPARABLE_TYPES = [t for t in TYPE_TRAITS
                            if t != GGMLType.Q8_1 and t.value in {q.value for q in gguf.GGML_QUANT_SIZES}
                            and gguf.GGML_QUANT_SIZES[gguf.GGMLQuantizationType(t.value)] == tuple(TYPE_TRAITS[t])]


def write_with_gguf_py(path, endianess, rng, n_tensors=12):
    w = gguf.GGUFWriter(path, "llama", endianess=endianess)
    w.add_name("differential")
    w.add_context_length(4096)
    w.add_uint8("x.u8", 200)
    w.add_int8("x.i8", -100)
    w.add_uint16("x.u16", 60000)
    w.add_int16("x.i16", -30000)
    w.add_uint32("x.u32", 4_000_000_000)
    w.add_int32("x.i32", -2_000_000_000)
    w.add_float32("x.f32", 0.1)
    w.add_uint64("x.u64", 2**63 + 5)
    w.add_int64("x.i64", -(2**62))
    w.add_float64("x.f64", 1 / 3)
    w.add_bool("x.bool", True)
    w.add_string("x.str", "héllo")
    w.add_string("x.empty", "")
    w.add_array("x.arr.int", [1, 2, 3])
    w.add_array("x.arr.float", [0.5, 0.25])
    w.add_array("x.arr.str", ["a", "", "ü"])
    w.add_token_list([f"tok{i}" for i in range(500)])
    w.add_token_scores([float(i) / 7 for i in range(500)])
    w.add_token_types([1] * 500)
    types = GGUF_PY_COMPARABLE_TYPES
    for i in range(n_tensors):
        qtype = types[i % len(types)]
        traits = TYPE_TRAITS[qtype]
        shape = (1 + i % 3, traits.block_size * (1 + i % 2))  # numpy order
        nbytes = shape[0] * shape[1] // traits.block_size * traits.type_size
        # gguf-py takes uint8 data shaped (rows, bytes per row) and derives the element shape itself.
        raw = rng.integers(0, 256, nbytes, dtype=np.uint8).reshape(shape[0], -1)
        w.add_tensor(f"t{i}", raw, raw_dtype=gguf.GGMLQuantizationType(qtype.value))
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
