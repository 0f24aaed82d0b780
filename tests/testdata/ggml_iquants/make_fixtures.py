"""Make the i-quant encoder fixtures of tests/quant/i_quants_encode_test.ts (issue 33).

Judged by ggml itself: every expected byte is the output of ggml's own
`ggml_quantize_chunk` (`quantize_iq*`, with `ggml_quantize_init`'s grids and
neighbour lists) from llama.cpp's libggml-base, built by cmake with
GGML_NATIVE=OFF (x86-64 baseline: SSE2, no FMA, so no contraction), called
through ctypes on seeded rows. Nothing here is aprkit code.

Inputs (little-endian f32):
- `a.f32`: 12 rows of 512 values (two super-blocks each): normal rows of
  several magnitudes, heavy-tailed, sparse, skewed, rows with repeated values.
- `b.f32`: 16 rows of 256 values, hard cases: all zeros, constant (positive,
  negative), large (3e4, 1e5) and tiny (1e-6, 1e-20, subnormal-adjacent) values,
  ties, one spike, alternating signs, values near each type's eps threshold.
- `wa.f32` / `wb.f32`: importance weights, one per column (some zero, as in a
  real importance matrix for unused columns).

Outputs: `{a,b}.{type}` (no weights, where ggml allows it: IQ2_XXS, IQ2_XS and
IQ1_S require an importance matrix) and `{a,b}.{type}.imatrix`, the raw blocks;
`manifest.json` records the llama.cpp commit and each file's sha256; `seeded.json`
the per-row sha256 of a larger set the test regenerates (see the end).

Usage: /work/tools/venv5/bin/python tests/testdata/ggml_iquants/make_fixtures.py /work/tools/llama.cpp
"""

import ctypes
import hashlib
import json
import os
import subprocess
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
ggml.ggml_quantize_requires_imatrix.restype = ctypes.c_bool
ggml.ggml_quantize_requires_imatrix.argtypes = [ctypes.c_int]

# name, ggml id, elements per block, bytes per block
TYPES = [
    ("IQ4_NL", 20, 32, 18),
    ("IQ4_XS", 23, 256, 136),
    ("IQ3_XXS", 18, 256, 98),
    ("IQ3_S", 21, 256, 110),
    ("IQ2_XXS", 16, 256, 66),
    ("IQ2_XS", 17, 256, 74),
    ("IQ2_S", 22, 256, 82),
    ("IQ1_S", 19, 256, 50),
    ("IQ1_M", 29, 256, 56),
]

rng = np.random.default_rng(33)


def rows_a() -> np.ndarray:
    n = 512
    rows = [
        rng.standard_normal(n) * 0.02,
        rng.standard_normal(n) * 0.5,
        rng.standard_normal(n) * 7.0,
        rng.standard_t(2.5, n) * 0.05,  # heavy tails
        np.where(rng.random(n) < 0.1, rng.standard_normal(n), 0.0),  # sparse
        np.abs(rng.standard_normal(n)) * 0.1 + 0.02,  # all positive, skewed
        -np.abs(rng.standard_normal(n)) * 0.1,  # all negative
        np.round(rng.standard_normal(n) * 3) / 16,  # few distinct values: sort ties
        rng.standard_normal(n) * np.repeat(rng.random(n // 16) * 2, 16),  # per-16 magnitudes
        rng.standard_normal(n) * np.repeat(10.0 ** rng.uniform(-9, 1, n // 32), 32),  # per-32 eps edges
        rng.uniform(-1, 1, n) ** 3,
        rng.standard_normal(n) * 0.01 + 0.03,  # offset
    ]
    return np.stack(rows).astype(np.float32)


def rows_b() -> np.ndarray:
    n = 256
    spike = np.zeros(n)
    spike[77] = 3.5
    half = rng.standard_normal(n) * 0.1
    half[:128] = 0
    rows = [
        np.zeros(n),
        np.full(n, 1.0),
        np.full(n, -0.25),
        rng.standard_normal(n) * 3e4,  # large (1e15 overflows ggml's weighted distances: it aborts)
        rng.standard_normal(n) * 1e-6,
        rng.standard_normal(n) * 1e-20,
        spike,
        np.tile([1.0, -1.0], n // 2) * 0.3,
        np.repeat(rng.standard_normal(n // 8), 8),  # each group of 8 constant
        half,
        rng.standard_normal(n) * 1e-8,  # around IQ3_XXS/IQ2_S eps (1e-8)
        rng.standard_normal(n) * 3e-13,  # around IQ1_S eps (1e-12)
        np.arange(n) / n - 0.5,
        rng.integers(-2, 3, n) * 0.125,
        rng.standard_normal(n) * 1e5,
        rng.laplace(0, 0.03, n),
    ]
    return np.stack(rows).astype(np.float32)


def weights(n: int) -> np.ndarray:
    w = rng.gamma(0.7, 1.0, n)
    w[rng.random(n) < 0.05] = 0
    return w.astype(np.float32)


def quantize(tid: int, be: int, bb: int, x: np.ndarray, w) -> bytes:
    nrows, ncols = x.shape
    size = nrows * ncols // be * bb
    dst = ctypes.create_string_buffer(size)
    got = ggml.ggml_quantize_chunk(tid, x.ctypes.data, dst, 0, nrows, ncols,
                                   None if w is None else w.ctypes.data)
    assert got == size, (tid, got, size)
    return dst.raw


commit = subprocess.check_output(["git", "-C", LLAMA, "rev-parse", "HEAD"], text=True).strip()
inputs = {"a": rows_a(), "b": rows_b()}
wts = {"a": weights(512), "b": weights(256)}
files = {}


def save(name: str, data: bytes) -> None:
    with open(os.path.join(HERE, name), "wb") as f:
        f.write(data)
    files[name] = hashlib.sha256(data).hexdigest()


for key in inputs:
    save(f"{key}.f32", np.ascontiguousarray(inputs[key]).astype("<f4").tobytes())
    save(f"w{key}.f32", wts[key].astype("<f4").tobytes())
for name, tid, be, bb in TYPES:
    for key, x in inputs.items():
        if not ggml.ggml_quantize_requires_imatrix(tid):
            save(f"{key}.{name.lower()}", quantize(tid, be, bb, x, None))
        save(f"{key}.{name.lower()}.imatrix", quantize(tid, be, bb, x, wts[key]))

with open(os.path.join(HERE, "manifest.json"), "w") as f:
    json.dump({"llama_cpp": commit, "library": "build/bin/libggml-base.so (GGML_NATIVE=OFF)",
               "files": files}, f, indent=1, sort_keys=True)
    f.write("\n")
print("ok", len(files), "files")

# A larger seeded set the test regenerates (so only hashes are committed):
# 48 rows of 1024 values from xorshift32 (13, 17, 5) states x, u = (x >> 8)·2⁻²⁴,
# t = 2u − 1 (exact in f32); even rows t³, odd rows t, times 2^(r mod 16 − 12);
# weights u²·4, or 0 when x mod 32 = 0. Per type and weighting: each row's
# sha256 (first 16 hex digits) and the whole output's.
SEED_ROWS, SEED_COLS, SEED = 48, 1024, 0x1D33


def xorshift_states(seed: int, n: int) -> np.ndarray:
    x = seed & 0xFFFFFFFF
    out = np.empty(n, dtype=np.uint32)
    for i in range(n):
        x ^= (x << 13) & 0xFFFFFFFF
        x ^= x >> 17
        x ^= (x << 5) & 0xFFFFFFFF
        out[i] = x
    return out


states = xorshift_states(SEED, SEED_ROWS * SEED_COLS + SEED_COLS)
u = ((states >> 8).astype(np.float32) * np.float32(2.0 ** -24)).astype(np.float32)
t = (u[: SEED_ROWS * SEED_COLS] * np.float32(2) - np.float32(1)).astype(np.float32)
rows = np.empty((SEED_ROWS, SEED_COLS), dtype=np.float32)
for r in range(SEED_ROWS):
    tr = t[r * SEED_COLS:(r + 1) * SEED_COLS]
    v = (tr * tr * tr).astype(np.float32) if r % 2 == 0 else tr
    rows[r] = v * np.float32(2.0 ** (r % 16 - 12))
uw = u[SEED_ROWS * SEED_COLS:]
seeded_w = (uw * uw * np.float32(4)).astype(np.float32)
seeded_w[(states[SEED_ROWS * SEED_COLS:] % 32) == 0] = 0
seeded = {"seed": SEED, "rows": SEED_ROWS, "cols": SEED_COLS,
          "f32_sha256": hashlib.sha256(rows.astype("<f4").tobytes()).hexdigest(),
          "weights_sha256": hashlib.sha256(seeded_w.astype("<f4").tobytes()).hexdigest(), "outputs": {}}
for name, tid, be, bb in TYPES:
    for weighted in (False, True):
        if not weighted and ggml.ggml_quantize_requires_imatrix(tid):
            continue
        raw = quantize(tid, be, bb, rows, seeded_w if weighted else None)
        row_bytes = SEED_COLS // be * bb
        seeded["outputs"][name + (".imatrix" if weighted else "")] = {
            "sha256": hashlib.sha256(raw).hexdigest(),
            "rows": [hashlib.sha256(raw[r * row_bytes:(r + 1) * row_bytes]).hexdigest()[:16]
                     for r in range(SEED_ROWS)],
        }
with open(os.path.join(HERE, "seeded.json"), "w") as f:
    json.dump({"llama_cpp": commit, **seeded}, f, indent=1, sort_keys=True)
    f.write("\n")
print("seeded ok")
