"""Make the encoder vectors of tests/quant/legacy_encoders_test.ts (issue 33 item 1).

Judged by ggml itself: every expected file is the output of llama.cpp's own
`ggml_quantize_chunk` (libggml-base, the build llama-quantize links, through
ctypes) on seeded inputs, with and without importance weights. Nothing here
is aprkit code.

Inputs (committed, little-endian f32):
- `a.f32` (8 rows x 96) and `b.f32` (4 rows x 512) with their importance
  vectors `wa.f32`/`wb.f32` (one weight per column) were made for the older
  vectors in this folder; this script checks that ggml still gives those
  files' bytes before adding its own.
- `c.f32` (16 rows x 512, made here): rows that reach the encoders' edge
  paths: an all-zero row, a constant row, tiny values (below ggml's
  GROUP_MAX_EPS), one spike in a flat row, a heavy-tailed row, mixed scales
  per 16-value group, halves of +/- values, and plain normal rows; `wc.f32`
  its importance vector (with zeros, as real imatrix entries have).

Outputs: one file per call, `<input>.<type>` and `<input>.<type>.imatrix`.

Usage:
  /work/tools/venv5/bin/python tests/testdata/ggml_quants/make_fixtures.py /work/tools/llama.cpp
"""

import ctypes
import os
import sys

import numpy as np

LLAMA = sys.argv[1]
HERE = os.path.dirname(os.path.abspath(__file__))
ggml = ctypes.CDLL(os.path.join(LLAMA, "build/bin/libggml-base.so"))
ggml.ggml_quantize_chunk.restype = ctypes.c_size_t
ggml.ggml_quantize_chunk.argtypes = [
    ctypes.c_int, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int64, ctypes.c_int64,
    ctypes.c_int64, ctypes.c_void_p,
]
ggml.ggml_row_size.restype = ctypes.c_size_t
ggml.ggml_row_size.argtypes = [ctypes.c_int, ctypes.c_int64]

# name, ggml id, values per block.
TYPES = {
    "q4_0": (2, 32), "q4_1": (3, 32), "q5_0": (6, 32), "q5_1": (7, 32), "q8_0": (8, 32),
    "q2_k": (10, 256), "q3_k": (11, 256), "q4_k": (12, 256), "q5_k": (13, 256), "q6_k": (14, 256),
    "tq1_0": (34, 256), "tq2_0": (35, 256), "mxfp4": (39, 32), "q1_0": (41, 128), "q2_0": (42, 64),
}


def read(name: str) -> np.ndarray:
    return np.fromfile(os.path.join(HERE, name), dtype="<f4")


def quantize(type_name: str, values: np.ndarray, cols: int, weights) -> bytes:
    tid, _ = TYPES[type_name]
    rows = values.size // cols
    size = rows * ggml.ggml_row_size(tid, cols)
    dst = ctypes.create_string_buffer(size)
    src = np.ascontiguousarray(values, dtype=np.float32)
    w = None if weights is None else np.ascontiguousarray(weights, dtype=np.float32)
    got = ggml.ggml_quantize_chunk(tid, src.ctypes.data, dst, 0, rows, cols,
                                   None if w is None else w.ctypes.data)
    assert got == size, (type_name, got, size)
    return dst.raw


def make_c() -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(33)
    rows, cols = 16, 512
    c = np.zeros((rows, cols), dtype=np.float32)
    # row 0: all zero
    c[1] = 0.0375
    c[2] = rng.standard_normal(cols) * 1e-17
    c[3] = 0.001
    c[3, 77] = 0.9
    c[4] = rng.standard_t(2, cols) * 0.02
    scales = np.repeat(10.0 ** rng.uniform(-4, 0, cols // 16), 16)
    c[5] = rng.standard_normal(cols) * scales
    c[6, : cols // 2] = np.abs(rng.standard_normal(cols // 2)) * 0.05
    c[6, cols // 2:] = -np.abs(rng.standard_normal(cols // 2)) * 0.05
    c[7] = rng.uniform(-1, 1, cols) * 3
    c[8] = np.round(rng.standard_normal(cols) * 2) * 0.25  # ternary-ish and ties
    for r in range(9, rows):
        c[r] = rng.standard_normal(cols) * 0.05 * (r - 7)
    w = (rng.random(cols) * 2).astype(np.float32)
    w[rng.random(cols) < 0.1] = 0
    return c.reshape(-1), w


def main() -> None:
    a, wa = read("a.f32"), read("wa.f32")
    b, wb = read("b.f32"), read("wb.f32")
    # The older vectors must still be ggml's output.
    for name, values, cols, w in [
        ("a.q5_0", a, 96, None), ("a.q5_0.imatrix", a, 96, wa), ("a.q5_1", a, 96, None),
        ("a.q5_1.imatrix", a, 96, wa), ("a.q8_0", a, 96, None), ("b.q5_k", b, 512, None),
        ("b.q5_k.imatrix", b, 512, wb), ("b.q4_k.imatrix", b, 512, wb),
        ("b.q6_k.imatrix", b, 512, wb),
    ]:
        with open(os.path.join(HERE, name), "rb") as f:
            assert f.read() == quantize(name.split(".")[1], values, cols, w), name
    c, wc = make_c()
    c.astype("<f4").tofile(os.path.join(HERE, "c.f32"))
    wc.astype("<f4").tofile(os.path.join(HERE, "wc.f32"))
    inputs = {"a": (a, 96, wa), "b": (b, 512, wb), "c": (c, 512, wc)}
    made = []
    for type_name, (_, block) in TYPES.items():
        if type_name in ("q5_0", "q5_1", "q8_0", "q4_k", "q5_k", "q6_k"):
            continue  # older vectors, checked above (and by the K-quant tests)
        for key, (values, cols, w) in inputs.items():
            if cols % block != 0:
                continue
            for suffix, weights in (("", None), (".imatrix", w)):
                name = f"{key}.{type_name}{suffix}"
                with open(os.path.join(HERE, name), "wb") as f:
                    f.write(quantize(type_name, values, cols, weights))
                made.append(name)
    print("ok", " ".join(made))


main()
