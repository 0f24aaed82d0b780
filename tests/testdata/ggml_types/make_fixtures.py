"""Make the ggml-type fixtures of tests/quant/ggml_types_test.ts (issue 25 item 4).

Judged by ggml itself: every expected value is the output of ggml's own
`to_float` (`dequantize_row_*`) from llama.cpp's libggml-base, called through
ctypes, and cross-checked against gguf-py's numpy dequantizers where gguf-py
has the type. Nothing here is aprkit code.

1. `blocks.json`: for each type, blocks of pseudo-random bytes (xorshift32,
   reproduced by the test, so the bytes are not committed) with the f16 scale
   kept finite; enough blocks that every grid entry is used. Expected: the
   sha256 of ggml's f32 output, and the first block's values as f32 bits.
2. `iquants.gguf` + `iquants.manifest.json`: one real tensor per type,
   quantized by ggml's `ggml_quantize_chunk` (with an importance matrix, which
   IQ1/IQ2 need) from seeded normal values, written by gguf-py's GGUFWriter;
   the manifest holds each tensor's ggml-dequantized f32 sha256.

Usage (llama.cpp's own gguf-py: pip gguf 0.19 cannot write Q2_0, id 42):
  PYTHONPATH=/work/tools/llama.cpp/gguf-py /work/tools/venv5/bin/python \
  tests/testdata/ggml_types/make_fixtures.py /work/tools/llama.cpp
"""

import ctypes
import hashlib
import json
import os
import struct
import subprocess
import sys

import numpy as np
import gguf
from gguf import quants

LLAMA = sys.argv[1]
HERE = os.path.dirname(os.path.abspath(__file__))
ggml = ctypes.CDLL(os.path.join(LLAMA, "build/bin/libggml-base.so"))


class Traits(ctypes.Structure):
    _fields_ = [
        ("type_name", ctypes.c_char_p),
        ("blck_size", ctypes.c_int64),
        ("blck_size_interleave", ctypes.c_int64),
        ("type_size", ctypes.c_size_t),
        ("is_quantized", ctypes.c_bool),
        ("to_float", ctypes.c_void_p),
        ("from_float_ref", ctypes.c_void_p),
    ]


ggml.ggml_get_type_traits.restype = ctypes.POINTER(Traits)
ggml.ggml_get_type_traits.argtypes = [ctypes.c_int]
ggml.ggml_quantize_chunk.restype = ctypes.c_size_t
ggml.ggml_quantize_chunk.argtypes = [
    ctypes.c_int, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int64, ctypes.c_int64,
    ctypes.c_int64, ctypes.c_void_p,
]
TO_FLOAT = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int64)

# name, ggml id, elements per block, bytes per block, byte offsets whose bit 6
# is cleared (the f16 scale's exponent MSB: keeps |d| < 2, never inf/NaN),
# pseudo-random blocks to decode.
TYPES = [
    ("IQ2_XXS", 16, 256, 66, [1], 1024),
    ("IQ2_XS", 17, 256, 74, [1], 1024),
    ("IQ3_XXS", 18, 256, 98, [1], 1024),
    ("IQ1_S", 19, 256, 50, [1], 2048),
    ("IQ4_NL", 20, 32, 18, [1], 256),
    ("IQ3_S", 21, 256, 110, [1], 1024),
    ("IQ2_S", 22, 256, 82, [1], 1024),
    ("IQ4_XS", 23, 256, 136, [1], 256),
    ("IQ1_M", 29, 256, 56, [55], 2048),
    ("TQ1_0", 34, 256, 54, [53], 256),
    ("TQ2_0", 35, 256, 66, [65], 256),
    ("MXFP4", 39, 32, 17, [], 1024),
    ("NVFP4", 40, 64, 36, [], 1024),
    ("Q1_0", 41, 128, 18, [1], 256),
    ("Q2_0", 42, 64, 18, [1], 256),
]


def xorshift_bytes(seed: int, n: int) -> bytearray:
    """xorshift32 (13, 17, 5), each state little-endian: the test's generator."""
    x = seed & 0xFFFFFFFF
    out = bytearray()
    while len(out) < n:
        x ^= (x << 13) & 0xFFFFFFFF
        x ^= x >> 17
        x ^= (x << 5) & 0xFFFFFFFF
        out += struct.pack("<I", x)
    return out[:n]


def ggml_dequantize(type_id: int, raw: bytes, n: int) -> np.ndarray:
    if type_id == 0:  # F32: the bytes are the values (ggml has no to_float for it)
        return np.frombuffer(raw, dtype="<f4")[:n].copy()
    traits = ggml.ggml_get_type_traits(type_id).contents
    assert traits.to_float, type_id
    src = ctypes.create_string_buffer(bytes(raw), len(raw))
    out = np.zeros(n, dtype=np.float32)
    TO_FLOAT(traits.to_float)(src, out.ctypes.data, n)
    return out


def ggufpy_dequantize(name: str, raw: bytes, n: int):
    qtype = getattr(gguf.GGMLQuantizationType, name, None)
    if qtype is None or not hasattr(quants, name):
        return None
    data = np.frombuffer(raw, dtype=np.uint8)
    return quants.dequantize(data, qtype).reshape(-1)[:n].astype(np.float32)


def sha(a: np.ndarray) -> str:
    return hashlib.sha256(a.astype("<f4").tobytes()).hexdigest()


commit = subprocess.check_output(["git", "-C", LLAMA, "rev-parse", "HEAD"], text=True).strip()
blocks = []
for i, (name, tid, be, bb, masked, count) in enumerate(TYPES):
    traits = ggml.ggml_get_type_traits(tid).contents
    assert traits.blck_size == be and traits.type_size == bb, (name, traits.blck_size, traits.type_size)
    seed = 0x9E3779B9 ^ (tid * 0x01000193)
    raw = xorshift_bytes(seed, count * bb)
    for b in range(count):
        for off in masked:
            raw[b * bb + off] &= 0xBF
    want = ggml_dequantize(tid, raw, count * be)
    assert np.all(np.isfinite(want)) or name in ("MXFP4",), name
    ref = ggufpy_dequantize(name, bytes(raw), count * be)
    if ref is not None:
        assert np.array_equal(ref.view(np.uint32), want.view(np.uint32)), f"gguf-py disagrees on {name}"
    blocks.append({
        "type": name,
        "ggml_type": tid,
        "seed": seed,
        "blocks": count,
        "masked_bytes": masked,
        "f32_sha256": sha(want),
        "first_block_f32_bits": [int(v) for v in want[:be].view(np.uint32)],
        "gguf_py_agrees": ref is not None,
    })

with open(os.path.join(HERE, "blocks.json"), "w") as f:
    json.dump({"llama_cpp": commit, "generator": "xorshift32(13,17,5), little-endian states", "types": blocks}, f, indent=1)
    f.write("\n")

# Real quantizations: 4 rows of 512 values (2 super-blocks per row).
rng = np.random.default_rng(25)
rows, cols = 4, 512
writer = gguf.GGUFWriter(os.path.join(HERE, "iquants.gguf"), "llama")
writer.add_name("ggml types fixture")
manifest = []
for name, tid, be, bb, _, _ in TYPES:
    values = (rng.standard_normal(rows * cols) * 0.05).astype(np.float32)
    imatrix = (rng.random(cols) + 0.5).astype(np.float32)
    dst = ctypes.create_string_buffer(rows * cols // be * bb)
    size = ggml.ggml_quantize_chunk(tid, values.ctypes.data, dst, 0, rows, cols, imatrix.ctypes.data)
    assert size == rows * cols // be * bb, (name, size)
    raw = dst.raw
    tensor_name = f"{name.lower()}.weight"
    qtype = gguf.GGMLQuantizationType(tid) if tid in gguf.GGMLQuantizationType._value2member_map_ else None
    if qtype is None:
        continue  # gguf-py cannot write this type id; covered by blocks.json
    writer.add_tensor(tensor_name, np.frombuffer(raw, dtype=np.uint8).reshape(rows, cols // be * bb),
                      raw_shape=(rows, cols // be * bb), raw_dtype=qtype)
    want = ggml_dequantize(tid, raw, rows * cols)
    ref = ggufpy_dequantize(name, raw, rows * cols)
    if ref is not None:
        assert np.array_equal(ref.view(np.uint32), want.view(np.uint32)), f"gguf-py disagrees on {name}"
    manifest.append({
        "name": tensor_name,
        "type": name,
        "shape": [rows, cols],
        "raw_sha256": hashlib.sha256(raw).hexdigest(),
        "f32_sha256": sha(want),
        "max_abs_err_vs_source": float(np.max(np.abs(want - values))),
    })
f32 = (rng.standard_normal(cols) * 0.05).astype(np.float32)
writer.add_tensor("plain.weight", f32)
writer.write_header_to_file()
writer.write_kv_data_to_file()
writer.write_tensors_to_file()
writer.close()
with open(os.path.join(HERE, "iquants.manifest.json"), "w") as f:
    json.dump({"llama_cpp": commit, "file": "iquants.gguf", "tensors": manifest}, f, indent=1)
    f.write("\n")
print("ok", [b["type"] for b in blocks], [m["type"] for m in manifest])

# 3. Whole models as llama-quantize writes them: tiny-llama (tests/testdata/gguf/
# tiny-llama-f32.gguf) in IQ4_XS, and in IQ2_XXS with an importance matrix of
# ones (IQ2_XXS requires one); per tensor, ggml's dequantized f32 sha256.
DATA = os.path.dirname(HERE)
with open(os.path.join(HERE, "ones.imatrix.dat"), "wb") as f:
    src = gguf.GGUFReader(os.path.join(DATA, "gguf/tiny-llama-f32.gguf"))
    mats = [t for t in src.tensors if len(t.shape) == 2]
    f.write(struct.pack("<i", len(mats)))
    for t in mats:
        name = t.name.encode()
        cols = int(t.shape[0])
        f.write(struct.pack("<i", len(name)) + name + struct.pack("<ii", 1, cols))
        f.write(np.ones(cols, dtype=np.float32).tobytes())
for preset, extra in (("IQ4_XS", []), ("IQ2_XXS", ["--imatrix", os.path.join(HERE, "ones.imatrix.dat")])):
    out = os.path.join(HERE, f"tiny-llama-{preset.lower()}.gguf")
    subprocess.run([os.path.join(LLAMA, "build/bin/llama-quantize"), *extra,
                    os.path.join(DATA, "gguf/tiny-llama-f32.gguf"), out, preset],
                   check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    r = gguf.GGUFReader(out)
    tensors = []
    for t in r.tensors:
        raw = bytes(t.data.tobytes())
        n = int(np.prod([int(x) for x in t.shape]))
        tensors.append({
            "name": t.name,
            "type": t.tensor_type.name,
            "numpy_shape": [int(x) for x in reversed(t.shape)],
            "raw_sha256": hashlib.sha256(raw).hexdigest(),
            "f32_sha256": sha(ggml_dequantize(int(t.tensor_type), raw, n)),
        })
    with open(out.replace(".gguf", ".manifest.json"), "w") as f:
        json.dump({"llama_cpp": commit, "file": os.path.basename(out), "tensors": tensors}, f, indent=1)
        f.write("\n")
os.remove(os.path.join(HERE, "ones.imatrix.dat"))
print("models ok")
