"""Make `bf16_all.f16`, the vector of tests/quant/bf16_to_f16_test.ts: every
one of the 65536 BF16 bit patterns (in order, 0x0000 to 0xffff) converted to
F16 as llama-quantize converts a BF16 tensor to F16, by llama.cpp's own code
(libggml-base, the build llama-quantize links, through ctypes):
`ggml_bf16_to_fp32_row` (the tensor to f32), then `ggml_quantize_chunk` to
GGML_TYPE_F16 (`ggml_fp32_to_fp16_row`: round to nearest even, subnormals,
overflow to infinity, every NaN to 0x7e00 with its sign). Nothing here is
aprkit code. Output: 65536 little-endian u16 (128 KiB).

Usage:
  /work/tools/venv5/bin/python tests/testdata/ggml_quants/make_bf16_f16.py /work/tools/llama.cpp
"""

import ctypes
import os
import sys

import numpy as np

LLAMA = sys.argv[1]
HERE = os.path.dirname(os.path.abspath(__file__))
ggml = ctypes.CDLL(os.path.join(LLAMA, "build/bin/libggml-base.so"))
ggml.ggml_bf16_to_fp32_row.restype = None
ggml.ggml_bf16_to_fp32_row.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int64]
ggml.ggml_quantize_chunk.restype = ctypes.c_size_t
ggml.ggml_quantize_chunk.argtypes = [
    ctypes.c_int, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int64, ctypes.c_int64,
    ctypes.c_int64, ctypes.c_void_p,
]
GGML_TYPE_F16 = 1

n = 65536
bf16 = np.arange(n, dtype="<u2")
f32 = np.empty(n, dtype="<f4")
ggml.ggml_bf16_to_fp32_row(bf16.ctypes.data, f32.ctypes.data, n)
f16 = np.empty(n, dtype="<u2")
size = ggml.ggml_quantize_chunk(GGML_TYPE_F16, f32.ctypes.data, f16.ctypes.data, 0, 1, n, None)
assert size == 2 * n, size
f16.tofile(os.path.join(HERE, "bf16_all.f16"))
print(f"wrote bf16_all.f16: {n} values")
