"""Make the llama-quantize manifests of tests/quant/llama_quantize_types_test.ts (issue 33).

Judged by llama.cpp itself: two small F32 GGUF models (written by gguf-py,
values from a counter-based hash the test reproduces, so the 12-16 MB models
are not committed) are quantized by llama.cpp de3ff81's `llama-quantize` (the
tree node-llama-cpp 3.22.1 bundles, built with cmake) to every file type its
`QUANT_OPTIONS` lists, with and without `--imatrix` of a committed importance
matrix. Each manifest holds, per run, every tensor's ggml type and the first
16 hex digits of its bytes' sha256, or the line llama-quantize refused with.

- `dense`: llama, 16 layers, hidden 256, 4 heads of 32 sharing 1 KV head
  (GQA 4), FFN 136, vocabulary 256, untied output: rows of 256 (whole
  super-blocks), 128 (attn_output: whole 32-value blocks only) and 136
  (ffn_down: not even whole 32-value blocks, so F16 fallbacks happen).
- `moe`: llama with 8 experts (Mixtral's layout, 3-D expert tensors), 8
  layers, hidden 256, 4 heads of 32 and 2 KV heads, expert FFN 64, tied
  embeddings (no output.weight): llama-quantize's 8-expert rules.

`*.imatrix.dat` (llama-imatrix's legacy format, one call per entry): seeded
positive weights with some zeros, for every matrix but token_embd, as
llama-imatrix records (token_embd is a lookup, not a product).

`options.manifest.json` (tests/pipeline/llama_quantize_options_test.ts):
llama-quantize's per-tensor options (`--output-tensor-type`,
`--token-embedding-type`, `--tensor-type`, `--pure`, `--leave-output-tensor`,
`--allow-requantize` from its own Q8_0 file, `--keep-split` from a set
`llama-gguf-split --split-max-tensors` made), each run as its argument list
and the same per-tensor record (per shard for --keep-split). Also `--imatrix` with
those flags, `--tensor-type-file` (the committed `*.tensor_types.txt`),
`--include-weights`/`--exclude-weights`, `--override-kv` and `--prune-layers`
(issue 33), with every metadata pair of their file (`kv`).

Usage (after /work/tools/cmake.log ends with BUILD-OK):
  PYTHONPATH=/work/tools/llama.cpp/gguf-py /work/tools/venv5/bin/python \\
    tests/testdata/llama_quantize/make_fixtures.py /work/tools/llama.cpp [binary|libllama] [all|options]
"""

import ctypes
import hashlib
import json
import os
import struct
import subprocess
import sys
import tempfile

import numpy as np
import gguf

LLAMA = sys.argv[1]
# "binary" (llama-quantize, the judge) or "libllama" (its llama_model_quantize
# through ctypes, while the tools are still building; the same bytes).
VIA = sys.argv[2] if len(sys.argv) > 2 else "binary"
# "all" (every manifest) or "options" (options.manifest.json only).
WHAT = sys.argv[3] if len(sys.argv) > 3 else "all"
QUANTIZE = os.path.join(LLAMA, "build/bin/llama-quantize")
HERE = os.path.dirname(os.path.abspath(__file__))

# llama-quantize's QUANT_OPTIONS (tools/quantize/quantize.cpp) that quantize,
# without the aliases Q3_K, Q4_K, Q5_K.
FTYPES = [
    "Q1_0", "Q2_0", "Q4_0", "Q4_1", "MXFP4_MOE", "Q5_0", "Q5_1", "IQ2_XXS", "IQ2_XS", "IQ2_S",
    "IQ2_M", "IQ1_S", "IQ1_M", "TQ1_0", "TQ2_0", "Q2_K", "Q2_K_S", "IQ3_XXS", "IQ3_S", "IQ3_M",
    "IQ3_XS", "Q3_K_S", "Q3_K_M", "Q3_K_L", "IQ4_NL", "IQ4_XS", "Q4_K_S", "Q4_K_M", "Q5_K_S",
    "Q5_K_M", "Q6_K", "Q8_0",
]

MODELS = {
    "dense": {
        "seed": 0x33D, "layers": 16, "embd": 256, "heads": 4, "kv_heads": 1, "head_dim": 32,
        "ff": 136, "vocab": 256, "experts": 0, "tied": False,
    },
    "moe": {
        "seed": 0x33E, "layers": 8, "embd": 256, "heads": 4, "kv_heads": 2, "head_dim": 32,
        "ff": 64, "vocab": 256, "experts": 8, "tied": True,
    },
}


def tensors_of(m: dict) -> list[tuple[str, tuple[int, ...]]]:
    """Names and shapes (outermost first, as numpy and aprkit order them), in file order."""
    e, q, kv = m["embd"], m["heads"] * m["head_dim"], m["kv_heads"] * m["head_dim"]
    out = [("token_embd.weight", (m["vocab"], e)), ("output_norm.weight", (e,))]
    if not m["tied"]:
        out.append(("output.weight", (m["vocab"], e)))
    for i in range(m["layers"]):
        b = f"blk.{i}."
        out += [
            (b + "attn_norm.weight", (e,)),
            (b + "attn_q.weight", (q, e)),
            (b + "attn_k.weight", (kv, e)),
            (b + "attn_v.weight", (kv, e)),
            (b + "attn_output.weight", (e, q)),
            (b + "ffn_norm.weight", (e,)),
        ]
        if m["experts"]:
            x = m["experts"]
            out += [
                (b + "ffn_gate_inp.weight", (x, e)),
                (b + "ffn_gate_exps.weight", (x, m["ff"], e)),
                (b + "ffn_up_exps.weight", (x, m["ff"], e)),
                (b + "ffn_down_exps.weight", (x, e, m["ff"])),
            ]
        else:
            out += [
                (b + "ffn_gate.weight", (m["ff"], e)),
                (b + "ffn_up.weight", (m["ff"], e)),
                (b + "ffn_down.weight", (e, m["ff"])),
            ]
    return out


def fnv1a(s: str) -> int:
    h = 0x811C9DC5
    for c in s.encode():
        h = ((h ^ c) * 0x01000193) & 0xFFFFFFFF
    return h


def mix(x: np.ndarray) -> np.ndarray:
    """lowbias32 (Wellons): a counter-based hash the test reproduces with Math.imul."""
    x = x ^ (x >> np.uint32(16))
    x = x * np.uint32(0x7FEB352D)
    x = x ^ (x >> np.uint32(15))
    x = x * np.uint32(0x846CA68B)
    return x ^ (x >> np.uint32(16))


def values_of(model_seed: int, name: str, shape: tuple[int, ...]) -> np.ndarray:
    """Exact f32 values: a triangular 23-bit integer times a power of two per row, rare outliers x16."""
    n = int(np.prod(shape))
    cols = shape[-1]
    seed = np.uint32(fnv1a(name) ^ model_seed)
    i = np.arange(n, dtype=np.uint32)
    with np.errstate(over="ignore"):
        u1 = mix(i * np.uint32(2) * np.uint32(0x9E3779B9) + seed)
        u2 = mix((i * np.uint32(2) + np.uint32(1)) * np.uint32(0x9E3779B9) + seed)
    s = (u1 >> np.uint32(10)).astype(np.int64) + (u2 >> np.uint32(10)).astype(np.int64) - (1 << 22)
    row = np.arange(n, dtype=np.int64) // cols
    exponent = 25 + (row * 7 + (fnv1a(name) & 7)) % 5
    v = s.astype(np.float64) * np.exp2(-exponent.astype(np.float64))
    v = np.where((u1 & np.uint32(1023)) == 0, v * 16, v)
    out = v.astype(np.float32)
    assert np.array_equal(out.astype(np.float64), v)  # exact
    return out.reshape(shape)


def write_model(key: str, m: dict, path: str) -> None:
    w = gguf.GGUFWriter(path, "llama")
    w.add_name(f"llama-quantize fixture {key}")
    w.add_context_length(256)
    w.add_embedding_length(m["embd"])
    w.add_block_count(m["layers"])
    w.add_feed_forward_length(m["ff"])
    w.add_head_count(m["heads"])
    w.add_head_count_kv(m["kv_heads"])
    w.add_key_length(m["head_dim"])
    w.add_value_length(m["head_dim"])
    w.add_rope_dimension_count(m["head_dim"])
    w.add_layer_norm_rms_eps(1e-5)
    w.add_vocab_size(m["vocab"])
    if m["experts"]:
        w.add_expert_count(m["experts"])
        w.add_expert_used_count(2)
    w.add_file_type(0)
    w.add_tokenizer_model("llama")
    w.add_token_list([f"<t{i}>" for i in range(m["vocab"])])
    w.add_token_scores([0.0] * m["vocab"])
    w.add_token_types([1] * m["vocab"])
    for name, shape in tensors_of(m):
        w.add_tensor(name, values_of(m["seed"], name, shape))
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()


def write_imatrix(key: str, m: dict, path: str) -> None:
    rng = np.random.default_rng(m["seed"])
    entries = []
    for name, shape in tensors_of(m):
        if len(shape) < 2 or name == "token_embd.weight" or "gate_inp" in name:
            continue
        n = shape[-1] * (shape[0] if len(shape) == 3 else 1)
        w = rng.lognormal(0.0, 1.0, n).astype(np.float32)
        w[rng.random(n) < 0.03] = 0
        entries.append((name, w))
    with open(path, "wb") as f:
        f.write(struct.pack("<i", len(entries)))
        for name, w in entries:
            b = name.encode()
            f.write(struct.pack("<i", len(b)) + b + struct.pack("<ii", 1, w.size) + w.tobytes())
        dataset = b"make_fixtures.py"
        f.write(struct.pack("<ii", 1, len(dataset)) + dataset)


# llama.h's llama_ftype of each file type (for the libllama route).
FTYPE_IDS = {
    "Q4_0": 2, "Q4_1": 3, "Q8_0": 7, "Q5_0": 8, "Q5_1": 9, "Q2_K": 10, "Q3_K_S": 11, "Q3_K_M": 12,
    "Q3_K_L": 13, "Q4_K_S": 14, "Q4_K_M": 15, "Q5_K_S": 16, "Q5_K_M": 17, "Q6_K": 18, "IQ2_XXS": 19,
    "IQ2_XS": 20, "Q2_K_S": 21, "IQ3_XS": 22, "IQ3_XXS": 23, "IQ1_S": 24, "IQ4_NL": 25, "IQ3_S": 26,
    "IQ3_M": 27, "IQ2_S": 28, "IQ2_M": 29, "IQ4_XS": 30, "IQ1_M": 31, "TQ1_0": 36, "TQ2_0": 37,
    "MXFP4_MOE": 38, "Q1_0": 40, "Q2_0": 41,
}


class Libllama:
    """llama_model_quantize through ctypes: what llama-quantize calls, for a
    tree whose tools are not built yet (--via libllama). The tool's legacy
    imatrix values are the file's sums divided by ncall (1 here), passed as is."""

    class ImatrixData(ctypes.Structure):
        _fields_ = [("name", ctypes.c_char_p), ("data", ctypes.c_void_p), ("size", ctypes.c_size_t)]

    class Params(ctypes.Structure):
        _fields_ = [
            ("nthread", ctypes.c_int32), ("ftype", ctypes.c_int32),
            ("output_tensor_type", ctypes.c_int32), ("token_embedding_type", ctypes.c_int32),
            ("allow_requantize", ctypes.c_bool), ("quantize_output_tensor", ctypes.c_bool),
            ("only_copy", ctypes.c_bool), ("pure", ctypes.c_bool), ("keep_split", ctypes.c_bool),
            ("dry_run", ctypes.c_bool), ("imatrix", ctypes.c_void_p), ("kv_overrides", ctypes.c_void_p),
            ("tt_overrides", ctypes.c_void_p), ("prune_layers", ctypes.c_void_p),
            ("max_buf_size", ctypes.c_size_t),
        ]

    def __init__(self) -> None:
        self.lib = ctypes.CDLL(os.path.join(LLAMA, "build/bin/libllama.so"))
        self.lib.llama_model_quantize_default_params.restype = self.Params
        self.lib.llama_model_quantize.restype = ctypes.c_uint32
        self.lib.llama_model_quantize.argtypes = [ctypes.c_char_p, ctypes.c_char_p, ctypes.POINTER(self.Params)]
        self.log: list[str] = []
        log_fn = ctypes.CFUNCTYPE(None, ctypes.c_int, ctypes.c_char_p, ctypes.c_void_p)
        self._cb = log_fn(lambda level, text, ud: self.log.append(text.decode(errors="replace")))
        self.lib.llama_log_set(self._cb, None)
        self.lib.llama_backend_init()

    def quantize(self, src: str, ftype: str, imatrix: dict | None, out: str) -> int:
        p = self.lib.llama_model_quantize_default_params()
        p.nthread = 1
        p.ftype = FTYPE_IDS[ftype]
        keep = []
        if imatrix:
            arr = (self.ImatrixData * (len(imatrix) + 1))()
            for i, (name, w) in enumerate(imatrix.items()):
                b = name.encode()
                keep.append(b)
                arr[i] = self.ImatrixData(b, w.ctypes.data, w.size)
            arr[len(imatrix)] = self.ImatrixData(None, None, 0)
            p.imatrix = ctypes.cast(arr, ctypes.c_void_p)
            keep.append(arr)
        self.log.clear()
        return self.lib.llama_model_quantize(src.encode(), out.encode(), ctypes.byref(p))


def read_imatrix(path: str) -> dict:
    out = {}
    with open(path, "rb") as f:
        (n,) = struct.unpack("<i", f.read(4))
        for _ in range(n):
            (ln,) = struct.unpack("<i", f.read(4))
            name = f.read(ln).decode()
            ncall, nval = struct.unpack("<ii", f.read(8))
            assert ncall == 1
            out[name] = np.frombuffer(f.read(4 * nval), dtype="<f4").copy()
    return out


LIB = Libllama() if VIA == "libllama" else None


def quantize(src: str, ftype: str, imatrix: str | None, out: str) -> dict:
    if LIB is not None:
        rc = LIB.quantize(src, ftype, read_imatrix(imatrix) if imatrix else None, out)
        text = "".join(LIB.log)
    else:
        args = [QUANTIZE] + (["--imatrix", imatrix] if imatrix else []) + [src, out, ftype, "1"]
        run = subprocess.run(args, capture_output=True, text=True)
        rc, text = run.returncode, run.stdout + run.stderr
    if rc != 0:
        lines = [ln.strip() for ln in text.splitlines() if "failed to quantize: " in ln]
        assert lines, text[-2000:]
        return {"refused": lines[-1].split("failed to quantize: ", 1)[1]}
    r = gguf.GGUFReader(out)
    types, hashes = {}, {}
    for t in r.tensors:
        types[t.name] = t.tensor_type.name
        hashes[t.name] = hashlib.sha256(bytes(t.data.tobytes())).hexdigest()[:16]
    ftype_kv = int(r.fields["general.file_type"].contents())
    os.remove(out)
    return {"file_type": ftype_kv, "types": types, "sha256_16": hashes}


def main() -> None:
    commit = subprocess.check_output(["git", "-C", LLAMA, "rev-parse", "HEAD"], text=True).strip()
    with tempfile.TemporaryDirectory() as tmp:
        for key, m in MODELS.items():
            src = os.path.join(tmp, f"{key}.gguf")
            write_model(key, m, src)
            imatrix = os.path.join(HERE, f"{key}.imatrix.dat")
            write_imatrix(key, m, imatrix)
            names = [n for n, _ in tensors_of(m)]
            runs = []
            for ftype in FTYPES:
                for with_imatrix in (False, True):
                    got = quantize(src, ftype, imatrix if with_imatrix else None,
                                   os.path.join(tmp, "out.gguf"))
                    run = {"ftype": ftype, "imatrix": with_imatrix}
                    if "refused" in got:
                        run["refused"] = got["refused"]
                    else:
                        assert sorted(got["types"]) == sorted(names), ftype
                        run["file_type"] = got["file_type"]
                        # Aligned with `tensors`: the type and hash of each.
                        run["types"] = [got["types"][n] for n in names]
                        run["sha256_16"] = [got["sha256_16"][n] for n in names]
                    runs.append(run)
                    print(key, ftype, with_imatrix, run.get("refused", "ok"), flush=True)
            manifest = {
                "llama_cpp": commit,
                "tool": "llama-quantize [--imatrix FILE] IN OUT FTYPE 1" if LIB is None
                else "libllama llama_model_quantize (nthread 1)",
                "model": m,
                "tensors": [[n, list(s)] for n, s in tensors_of(m)],
                "runs": runs,
            }
            with open(os.path.join(HERE, f"{key}.manifest.json"), "w") as f:
                json.dump(manifest, f, separators=(",", ":"))
                f.write("\n")


# llama-quantize's per-tensor options: (model, source, extra arguments, ftype).
# The source is the F32 model, llama-quantize's own Q8_0 file of it ("q8_0",
# for --allow-requantize) or a split set of it ("split", for --keep-split).
OPTION_RUNS = [
    ("dense", "f32", ["--output-tensor-type", "q8_0", "--token-embedding-type", "Q4_0"], "Q4_K_M"),
    ("moe", "f32", ["--output-tensor-type", "q5_k"], "Q3_K_M"),
    ("moe", "f32", ["--token-embedding-type", "q8_0"], "Q4_K_S"),
    # First match wins; the pattern is lowercased (ATTN_Q), searched anywhere
    # in the name; a manual type still falls back for rows of 136.
    ("dense", "f32", [
        "--tensor-type", "attn_v=q8_0", "--tensor-type", "blk\\.[0-3]\\.ffn_(up|down)=q5_0",
        "--tensor-type", "ffn_=Q6_K", "--tensor-type", "ATTN_Q=q4_1",
    ], "Q4_K_M"),
    ("moe", "f32", ["--tensor-type", "ffn_down_exps=q8_0", "--tensor-type", "attn_k=q5_k"], "Q2_K"),
    ("dense", "f32", ["--pure"], "Q3_K_M"),
    ("dense", "f32", ["--pure"], "Q4_K_M"),
    ("moe", "f32", ["--pure"], "Q5_K_S"),
    ("dense", "f32", ["--pure", "--tensor-type", "attn_v=q6_k", "--output-tensor-type", "f16"], "Q4_K_S"),
    ("dense", "f32", ["--leave-output-tensor"], "Q4_K_M"),
    ("dense", "f32", ["--leave-output-tensor", "--pure"], "Q2_K"),
    ("dense", "q8_0", [], "Q4_K_M"),
    ("dense", "q8_0", ["--allow-requantize"], "Q4_K_M"),
    ("dense", "q8_0", ["--allow-requantize", "--leave-output-tensor"], "Q5_K_S"),
    ("dense", "q8_0", ["--allow-requantize", "--pure"], "Q4_0"),
    ("moe", "q8_0", ["--allow-requantize"], "Q3_K_M"),
    # aprkit's single type q4_k of a quantized GGUF is this --pure file (refused without the flag).
    ("dense", "q8_0", ["--allow-requantize", "--pure"], "Q4_K_M"),
    ("moe", "q8_0", ["--allow-requantize", "--pure"], "Q4_K_M"),
    ("dense", "f32", ["--tensor-type", "token_embd=q8_0", "--tensor-type", "output=q4_k"], "Q5_K_M"),
    ("dense", "split", [], "Q4_K_M"),
    ("dense", "split", ["--keep-split"], "Q4_K_M"),
    ("moe", "split", ["--keep-split", "--pure"], "Q6_K"),
    ("moe", "split", ["--keep-split"], "Q4_K_M"),
    # --imatrix with the per-tensor flags (issue 33): the matrix and the
    # --tensor-type-file files named relative to this folder (the runs' working
    # directory), so quantize.imatrix.file is the base name aprkit records.
    # --tensor-type and the file's entries form one list in command-line order.
    ("dense", "f32", [
        "--imatrix", "dense.imatrix.dat", "--tensor-type", "attn_v=q6_k",
        "--tensor-type-file", "dense.tensor_types.txt", "--tensor-type", "ffn_up=q4_0",
        "--output-tensor-type", "q8_0",
    ], "Q4_K_M"),
    ("dense", "f32", [
        "--tensor-type-file", "dense.tensor_types.txt", "--imatrix", "dense.imatrix.dat",
        "--token-embedding-type", "q4_k", "--pure",
    ], "IQ4_XS"),
    ("dense", "f32", ["--imatrix", "dense.imatrix.dat", "--exclude-weights", "ffn_down",
                      "--exclude-weights", "attn_q"], "Q3_K_M"),
    ("dense", "f32", ["--imatrix", "dense.imatrix.dat", "--include-weights", "blk.1"], "IQ3_S"),
    # Nothing left of the matrix: quantized and recorded as without one.
    ("dense", "f32", ["--imatrix", "dense.imatrix.dat", "--include-weights", "no_such"], "Q4_K_S"),
    # An IQ2 tensor whose entry is excluded: refused as without a matrix.
    ("dense", "f32", ["--imatrix", "dense.imatrix.dat", "--exclude-weights", "ffn_gate"], "IQ2_XS"),
    ("moe", "f32", [
        "--imatrix", "moe.imatrix.dat", "--tensor-type-file", "moe.tensor_types.txt",
        "--leave-output-tensor",
    ], "Q4_K_M"),
    ("moe", "f32", ["--imatrix", "moe.imatrix.dat", "--exclude-weights", "ffn_gate_exps",
                    "--tensor-type", "ffn_down_exps=iq4_nl"], "IQ3_XXS"),
    # --override-kv: set after the model's keys, before the matrix's; int as UINT32 of |v|.
    ("dense", "f32", [
        "--imatrix", "dense.imatrix.dat", "--override-kv", "general.name=str:renamed",
        "--override-kv", "llama.context_length=int:-512", "--override-kv", "aprkit.flag=bool:true",
        "--override-kv", "aprkit.scale=float:0.1",
    ], "Q4_K_M"),
    # --prune-layers: blocks renumbered, the matrix looked up under the old numbers,
    # block_count set last.
    ("dense", "f32", ["--prune-layers", "7,3,3", "--imatrix", "dense.imatrix.dat"], "Q4_K_M"),
    ("dense", "f32", ["--prune-layers", "0,15"], "Q3_K_M"),
    ("moe", "f32", ["--prune-layers", "2", "--imatrix", "moe.imatrix.dat",
                    "--tensor-type", "blk\\.2\\.attn_v=q8_0"], "Q4_K_M"),
]
# The runs whose metadata is recorded too (the keys these flags write).
KV_FLAGS = {"--imatrix", "--override-kv", "--prune-layers"}
# --tensor-type-file files (committed, read by the test as by llama-quantize).
TENSOR_TYPE_FILES = {
    "dense.tensor_types.txt": "attn_v=q8_0\n  ffn_down=q5_1 blk\\.1[0-5]\\.attn_q=iq4_nl\n\tffn=q6_k\n",
    "moe.tensor_types.txt": "ffn_gate_exps=q5_k ffn_up_exps=iq4_xs\nattn_output=q8_0\n",
}
# Tensors per shard of the split sources (llama-gguf-split --split-max-tensors).
SPLIT_TENSORS = {"dense": 60, "moe": 30}


def record_of(path: str) -> dict:
    r = gguf.GGUFReader(path)
    names = [t.name for t in r.tensors]
    types = [t.tensor_type.name for t in r.tensors]
    hashes = [hashlib.sha256(bytes(t.data.tobytes())).hexdigest()[:16] for t in r.tensors]
    # A --keep-split set's later shards hold no metadata but the split keys.
    ft = r.fields.get("general.file_type")
    return {"file_type": int(ft.contents()) if ft is not None else None, "names": names,
            "types": types, "sha256_16": hashes}


def kv_of(path: str) -> list:
    """Every metadata pair in file order: key, GGUF type and value (arrays by type and length)."""
    r = gguf.GGUFReader(path)
    out = []
    for f in r.fields.values():
        if f.name.startswith("GGUF."):
            continue
        t = f.types[0].name
        if t == "ARRAY":
            out.append([f.name, f"ARRAY:{f.types[1].name}", len(f.data)])
        else:
            v = f.contents()
            out.append([f.name, t, v])
    return out


def options_main() -> None:
    commit = subprocess.check_output(["git", "-C", LLAMA, "rev-parse", "HEAD"], text=True).strip()
    split = os.path.join(LLAMA, "build/bin/llama-gguf-split")
    runs = []
    for name, text in TENSOR_TYPE_FILES.items():
        with open(os.path.join(HERE, name), "w") as f:
            f.write(text)
    with tempfile.TemporaryDirectory() as tmp:
        sources = {}
        for key, m in MODELS.items():
            f32 = os.path.join(tmp, f"{key}.gguf")
            write_model(key, m, f32)
            q8 = os.path.join(tmp, f"{key}-q8_0.gguf")
            subprocess.run([QUANTIZE, f32, q8, "Q8_0", "1"], check=True, capture_output=True)
            subprocess.run([split, "--split-max-tensors", str(SPLIT_TENSORS[key]), f32,
                            os.path.join(tmp, f"{key}-split")], check=True, capture_output=True)
            first = os.path.join(tmp, f"{key}-split-00001-of-")
            first = [os.path.join(tmp, f) for f in sorted(os.listdir(tmp))
                     if os.path.join(tmp, f).startswith(first)][0]
            sources[key] = {"f32": f32, "q8_0": q8, "split": first}
        for key, source, extra, ftype in OPTION_RUNS:
            out = os.path.join(tmp, "out.gguf")
            args = [QUANTIZE, *extra, sources[key][source], out, ftype, "1"]
            run = subprocess.run(args, capture_output=True, text=True, cwd=HERE)
            entry = {"model": key, "source": source, "args": extra, "ftype": ftype}
            if run.returncode != 0:
                text = run.stdout + run.stderr
                lines = [ln.strip() for ln in text.splitlines() if "failed to quantize: " in ln]
                assert lines, text[-2000:]
                entry["refused"] = lines[-1].split("failed to quantize: ", 1)[1]
            else:
                shards = sorted(f for f in os.listdir(tmp) if f.startswith("out"))
                entry["outputs"] = [{"name": f, **record_of(os.path.join(tmp, f))} for f in shards]
                if KV_FLAGS.intersection(extra):
                    entry["kv"] = kv_of(os.path.join(tmp, shards[0]))
                for f in shards:
                    os.remove(os.path.join(tmp, f))
            runs.append(entry)
            print(key, source, extra, ftype, entry.get("refused", "ok"), flush=True)
    manifest = {
        "llama_cpp": commit,
        "tool": "llama-quantize ARGS IN OUT FTYPE 1; split sources: llama-gguf-split "
                "--split-max-tensors N (dense 60, moe 30); q8_0 sources: llama-quantize IN OUT Q8_0 1",
        "runs": runs,
    }
    with open(os.path.join(HERE, "options.manifest.json"), "w") as f:
        json.dump(manifest, f, separators=(",", ":"))
        f.write("\n")


if WHAT == "all":
    main()
options_main()
