"""Make the quantized Hugging Face checkpoint fixtures and their reference values.

Run with the lead's venv (torch, transformers 5.18, safetensors, gguf-py) from the
repository root:

    PYTHONPATH=/work/tools/llama.cpp/gguf-py /work/tools/venv5/bin/python \
        tests/testdata/hf/quantized/make_fixtures.py /work/tools/llama.cpp

One tiny Qwen2 (1 layer, hidden 64, the tokenizer of ../tiny-qwen2) is quantized
by each method from the method's published description; each folder gets the
checkpoint, config.json with its quantization_config, the tokenizer, and
expected.json:

- "values": per dequantized tensor, the sha256 of its float32 values computed by
  the reference named in "reference" (transformers' own dequantizer where it runs
  on CPU, else numpy from the published formula).
- "llamacpp": per GGUF tensor, the sha256 of the float32 data of llama.cpp's
  convert_hf_to_gguf.py --outtype f32 output (for the methods it converts),
  the tokenizer's pre-tokenizer (a hash no published model has) named by its regex
  as ../../families/make_llamacpp.py does ("qwen2"; tiny-llama's ByteLevel, "gpt-2").
- "llamacpp_gguf": that same file described as ../../families/llama.cpp/*.json are:
  its sha256 (`file_sha256`), every KV pair and every tensor (type, ne, sha256 of
  its bytes) in file order, for the tests' whole-file comparison.
- "llamacpp_nvfp4" (NVFP4 checkpoints, whose weights the converter keeps as ggml's
  NVFP4): per --outtype (f32, bf16, q8_0), `general.file_type` and per GGUF tensor its
  type, shape and the sha256 of its stored bytes; the NVFP4 ones also of their values
  by gguf-py's dequantizer times `.scale`, checked equal to "values" here; and "gguf",
  the whole file described as "llamacpp_gguf" is.

The ModelOpt fixtures carry `hf_quant_config.json` (and no quantization_config) as
NVIDIA's releases do; the NVFP4 ones are a one-layer Llama (tokenizer of
examples/tiny-llama): llama.cpp's qwen2 graph does not apply NVFP4's `.scale`;
modelopt-nvfp4-moe is a two-layer Qwen3-MoE (the tokenizer of
../../families/hf/qwen3-moe, seed 9521) with NVFP4 experts one module each, which
the converter stacks per layer and projection with a `.scale` per expert;
ct-nvfp4-moe the same as compressed-tensors writes it (one layer, seed 9522), and
modelopt-nvfp4-mellum a one-layer Mellum 2 (Qwen3-MoE's block, seed 9523);
modelopt-nvfp4-nemotron-h and modelopt-nvfp4-nemotron-h-latent are Nemotron 3 Nano's
and Super's shapes (the nemotron-h-moe and nemotron-h-latent family fixtures with
64-wide experts, seeds 9561 and 9562), Mamba, attention and experts NVFP4.
Run one fixture alone by naming its function: `make_fixtures.py LLAMA make_ct_nvfp4`.

Tests and CI read only the committed outputs.
"""

import hashlib
import json
import os
import runpy
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np
import torch
from safetensors.torch import save_file

HERE = Path(__file__).resolve().parent
TOKENIZER = HERE.parent / "tiny-qwen2"
LLAMA = Path(sys.argv[1]) if len(sys.argv) > 1 else None

CONFIG = {
    "architectures": ["Qwen2ForCausalLM"],
    "model_type": "qwen2",
    "hidden_size": 64,
    "intermediate_size": 96,
    "num_attention_heads": 4,
    "num_key_value_heads": 2,
    "num_hidden_layers": 1,
    "vocab_size": 512,
    "max_position_embeddings": 2048,
    "rms_norm_eps": 1e-6,
    "rope_theta": 1000000.0,
    "tie_word_embeddings": True,
    "bos_token_id": 509,
    "eos_token_id": 511,
    "hidden_act": "silu",
    "torch_dtype": "bfloat16",
}
LINEARS = [
    "self_attn.q_proj", "self_attn.k_proj", "self_attn.v_proj", "self_attn.o_proj",
    "mlp.gate_proj", "mlp.up_proj", "mlp.down_proj",
]


def base_weights(seed: int, i: int = 96, vocab: int = 512, bias: bool = True) -> dict[str, torch.Tensor]:
    """Seeded float32 weights of the tiny Qwen2 (or, without biases, Llama), shapes as
    transformers makes them."""
    g = torch.Generator().manual_seed(seed)
    h, kv = 64, 32
    shapes = {
        "model.embed_tokens.weight": (vocab, h),
        "model.norm.weight": (h,),
        "model.layers.0.input_layernorm.weight": (h,),
        "model.layers.0.post_attention_layernorm.weight": (h,),
        "model.layers.0.self_attn.q_proj.weight": (h, h),
        "model.layers.0.self_attn.q_proj.bias": (h,),
        "model.layers.0.self_attn.k_proj.weight": (kv, h),
        "model.layers.0.self_attn.k_proj.bias": (kv,),
        "model.layers.0.self_attn.v_proj.weight": (kv, h),
        "model.layers.0.self_attn.v_proj.bias": (kv,),
        "model.layers.0.self_attn.o_proj.weight": (h, h),
        "model.layers.0.mlp.gate_proj.weight": (i, h),
        "model.layers.0.mlp.up_proj.weight": (i, h),
        "model.layers.0.mlp.down_proj.weight": (h, i),
    }
    out = {}
    for name, shape in shapes.items():
        if name.endswith(".bias") and not bias:
            continue
        t = torch.randn(shape, generator=g) * 0.1
        if name.endswith("norm.weight"):
            t = 1 + t
        out[name] = t
    return out


def sha(t: torch.Tensor) -> str:
    return hashlib.sha256(t.detach().to(torch.float32).contiguous().numpy().astype("<f4").tobytes()).hexdigest()


def plain(weights: dict[str, torch.Tensor], quantized: set[str]) -> dict[str, torch.Tensor]:
    """The tensors no method touches, stored in BF16 as the published checkpoints do."""
    return {k: v.to(torch.bfloat16) for k, v in weights.items() if k not in quantized}


def write(name: str, tensors: dict, quantization_config: dict, values: dict, reference: str,
          shards: list[list[str]] | None = None, config: dict | None = None, tokenizer: bool = True,
          llama_drop: tuple[str, ...] = (), llama: bool = True, llama_args: tuple[str, ...] = (),
          hf_quant_config: dict | None = None, nvfp4: dict[str, str] | None = None,
          tokenizer_from: Path = TOKENIZER):
    folder = HERE / name
    shutil.rmtree(folder, ignore_errors=True)
    folder.mkdir()
    cfg = dict(config or CONFIG)
    if quantization_config is not None:
        cfg["quantization_config"] = quantization_config
    if hf_quant_config is not None:
        (folder / "hf_quant_config.json").write_text(json.dumps(hf_quant_config, indent=4) + "\n")
    (folder / "config.json").write_text(json.dumps(cfg, indent=2) + "\n")
    if tokenizer:
        for f in ("tokenizer.json", "tokenizer_config.json"):
            shutil.copy(tokenizer_from / f, folder / f)
    tensors = {k: v.contiguous() for k, v in tensors.items()}
    if shards is None:
        save_file(tensors, folder / "model.safetensors", metadata={"format": "pt"})
    else:
        weight_map = {}
        for n, names in enumerate(shards):
            file = f"model-{n + 1:05d}-of-{len(shards):05d}.safetensors"
            save_file({k: tensors[k] for k in names}, folder / file, metadata={"format": "pt"})
            weight_map.update({k: file for k in names})
        assert set(weight_map) == set(tensors)
        (folder / "model.safetensors.index.json").write_text(json.dumps(
            {"metadata": {"total_size": sum(t.numel() * t.element_size() for t in tensors.values())},
             "weight_map": dict(sorted(weight_map.items()))}, indent=2) + "\n")
    expected = {"reference": reference, "values": {k: {"shape": list(v.shape), "sha256": sha(v)}
                                                   for k, v in sorted(values.items())}}
    if LLAMA is not None and nvfp4 is not None:
        expected["llamacpp_nvfp4"] = {outtype: run_llamacpp_nvfp4(folder, nvfp4, values, outtype)
                                      for outtype in ("f32", "bf16", "q8_0")}
    elif LLAMA is not None and tokenizer and llama:
        expected["llamacpp"], expected["llamacpp_gguf"] = run_llamacpp(
            folder, {k: v for k, v in tensors.items() if not k.endswith(llama_drop)} if llama_drop else None,
            llama_args)
    (folder / "expected.json").write_text(json.dumps(expected, indent=2) + "\n")


FAMILIES = runpy.run_path(str(HERE.parents[1] / "families" / "make_llamacpp.py"))
PRE_BY_REGEX = FAMILIES["PRE_BY_REGEX"]
FAMILY_PRE = FAMILIES["FAMILY_PRE"]


def convert(folder: Path, out: Path, args: tuple[str, ...]):
    """Run llama.cpp's convert_hf_to_gguf.py on `folder` into `out`, the tokenizer's
    pre-tokenizer named by its regex where its hash is unknown (gguf-py importable afterwards)."""
    sys.path.insert(0, str(LLAMA))
    sys.path.insert(0, str(LLAMA / "gguf-py"))
    from conversion.base import TextModel  # noqa: E402
    if not hasattr(TextModel, "hash_pre"):
        TextModel.hash_pre = TextModel.get_vocab_base_pre

    def get_vocab_base_pre(self, tokenizer) -> str:
        # The tiny vocabulary's hash is no published model's: named by its Split
        # regex, as ../../families/make_llamacpp.py does (qwen2 for tiny-qwen2's).
        try:
            return TextModel.hash_pre(self, tokenizer)
        except NotImplementedError:
            pre = json.loads((folder / "tokenizer.json").read_text())["pre_tokenizer"]
            steps = pre.get("pretokenizers", [pre])
            regexes = [s["pattern"]["Regex"] for s in steps if s.get("type") == "Split"]
            if len(regexes) == 1 and regexes[0] in PRE_BY_REGEX:
                # Under the name the family's published tokenizer hashes to (Nemotron-H's pixtral).
                name = PRE_BY_REGEX[regexes[0]]
                architecture = (self.hparams.get("architectures") or [""])[0]
                return FAMILY_PRE.get((name, architecture), name)
            if [(s.get("type"), s.get("use_regex")) for s in steps] == [("ByteLevel", True)]:
                return "gpt-2"  # GPT-2's own: its regex inside ByteLevel (tiny-llama's)
            raise
    TextModel.get_vocab_base_pre = get_vocab_base_pre
    argv = sys.argv
    sys.argv = ["convert_hf_to_gguf.py", str(folder), "--outfile", str(out), *args]
    try:
        runpy.run_path(str(LLAMA / "convert_hf_to_gguf.py"), run_name="__main__")
    except SystemExit as e:
        if e.code not in (0, None):
            raise
    finally:
        sys.argv = argv


def run_llamacpp(folder: Path, tensors: dict | None, args: tuple[str, ...]) -> dict:
    """llama.cpp's converter, --outtype f32; the sha256 of each tensor's data.

    `tensors`: a single-file checkpoint to convert instead of the folder's (llama.cpp
    cannot map compressed-tensors' unused activation scales, so they are left out).
    """
    with tempfile.TemporaryDirectory() as tmp:
        if tensors is not None:
            # The copy keeps the fixture's folder name: the converter's general.name.
            copy = Path(tmp) / folder.name
            copy.mkdir()
            for f in ("config.json", "tokenizer.json", "tokenizer_config.json"):
                shutil.copy(folder / f, copy / f)
            save_file(tensors, copy / "model.safetensors", metadata={"format": "pt"})
            folder = copy
        out = Path(tmp) / "out.gguf"
        convert(folder, out, ("--outtype", "f32", *args))
        import gguf  # noqa: E402
        reader = gguf.GGUFReader(out)
        result = {}
        for t in reader.tensors:
            assert t.tensor_type == gguf.GGMLQuantizationType.F32, t.name
            data = np.asarray(t.data, dtype="<f4")
            result[t.name] = {"shape": [int(d) for d in reversed(t.shape.tolist())],
                              "sha256": hashlib.sha256(data.tobytes()).hexdigest()}
        return dict(sorted(result.items())), gguf_manifest(out, ("--outtype", "f32", *args))


def gguf_manifest(path: Path, args: tuple[str, ...]) -> dict:
    """The converter's whole file, described by ../../families/make_llamacpp.py's `manifest`:
    its sha256, every KV pair and every tensor (type, ne, sha256 of its bytes), in file order."""
    commit = subprocess.run(["git", "-C", str(LLAMA), "log", "-1", "--format=%h"],
                            capture_output=True, text=True, check=True).stdout.strip()
    return FAMILIES["manifest"](path, f"llama.cpp {commit}: convert_hf_to_gguf.py {' '.join(args)}")


def run_llamacpp_nvfp4(folder: Path, names: dict[str, str], values: dict, outtype: str) -> dict:
    """llama.cpp's converter (--outtype `outtype`) of an NVFP4 checkpoint: its GGUF manifest.

    The NVFP4 tensors stay NVFP4 with a per-tensor `.scale`: gguf-py's NVFP4 dequantizer
    times that scale must give `values` (the published formula) bit for bit; `names` maps
    each GGUF weight to its checkpoint tensor (a stack of experts: to theirs in expert
    order, each expert times its own value of the stacked `.scale`). Recorded: `general.file_type`, and per tensor
    its ggml type, shape, the sha256 of its stored bytes and, for the NVFP4 weights, of
    its dequantized float32 values (in the checkpoint's row order: a Llama's Q/K rows
    permuted back).
    """
    config = json.loads((folder / "config.json").read_text())
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "out.gguf"
        convert(folder, out, ("--outtype", outtype))
        import gguf  # noqa: E402
        from gguf.quants import dequantize  # noqa: E402
        reader = gguf.GGUFReader(out)
        by_name = {t.name: t for t in reader.tensors}
        tensors = {}
        for t in reader.tensors:
            entry = {"type": t.tensor_type.name, "shape": [int(d) for d in reversed(t.shape.tolist())],
                     "sha256": hashlib.sha256(np.asarray(t.data).tobytes()).hexdigest()}
            if t.tensor_type == gguf.GGMLQuantizationType.NVFP4:
                deq = dequantize(np.asarray(t.data), t.tensor_type).astype(np.float32)
                scale = by_name.get(t.name.replace(".weight", ".scale"))
                stacked = isinstance(names[t.name], list)  # experts: one .scale value each
                if scale is not None:
                    s = np.asarray(scale.data, dtype=np.float32)
                    deq = deq * (s[:, None, None] if stacked else s[0])
                want = (np.stack([values[n].numpy() for n in names[t.name]]) if stacked
                        else values[names[t.name]].numpy())
                heads = {"attn_q": config["num_attention_heads"], "attn_k": config["num_key_value_heads"]}
                part = t.name.split(".")[2]
                if config["model_type"] in ("llama", "nemotron_h") and part in heads:
                    # Back from the converter's RoPE row permutation to the checkpoint's rows.
                    rows, cols = want.shape
                    deq = deq.reshape(heads[part], rows // heads[part] // 2, 2, cols).swapaxes(1, 2)
                    deq = np.ascontiguousarray(deq).reshape(rows, cols)
                assert deq.astype("<f4").tobytes() == want.astype("<f4").tobytes(), t.name
                entry["dequantized_sha256"] = hashlib.sha256(deq.astype("<f4").tobytes()).hexdigest()
            tensors[t.name] = entry
        file_type = int(reader.fields["general.file_type"].contents())
        assert set(names) == {n for n, t in tensors.items() if t["type"] == "NVFP4"}
        return {"general.file_type": file_type, "tensors": dict(sorted(tensors.items())),
                "gguf": gguf_manifest(out, ("--outtype", outtype))}


# --- fp8 (transformers finegrained FP8; llama.cpp dequant_simple) -------------------

def fp8_blocks(w: torch.Tensor, block: list[int]) -> tuple[torch.Tensor, torch.Tensor]:
    """Per-block absmax scale (unpadded edge blocks), weight / scale in float8_e4m3fn."""
    rows, cols = w.shape
    br, bc = block
    nr, nc = -(-rows // br), -(-cols // bc)
    scale = torch.empty(nr, nc)
    q = torch.empty(rows, cols, dtype=torch.float8_e4m3fn)
    for a in range(nr):
        for b in range(nc):
            tile = w[a * br:(a + 1) * br, b * bc:(b + 1) * bc]
            s = tile.abs().max() / 448.0
            scale[a, b] = s
            q[a * br:(a + 1) * br, b * bc:(b + 1) * bc] = (tile / s).to(torch.float8_e4m3fn)
    return q, scale


def make_fp8(name: str, block: list[int], seed: int, use_transformers: bool):
    w = base_weights(seed)
    tensors, values = {}, {}
    quantized = {f"model.layers.0.{m}.weight" for m in LINEARS}
    for k in sorted(quantized):
        q, s = fp8_blocks(w[k], block)
        tensors[k] = q
        tensors[k + "_scale_inv"] = s
        if use_transformers:
            from transformers.integrations.finegrained_fp8 import Fp8Dequantize
            values[k] = Fp8Dequantize(None)._dequantize_one(q, s, torch.float32)
        else:
            rep = s.repeat_interleave(block[0], 0).repeat_interleave(block[1], 1)[:q.shape[0], :q.shape[1]]
            values[k] = q.to(torch.float32) * rep
    tensors.update(plain(w, quantized))
    names = sorted(tensors)
    # Two shards, weights and their scales apart: a scale is read from another file.
    first = [n for n in names if not n.endswith("_scale_inv")]
    second = [n for n in names if n.endswith("_scale_inv")]
    write(name, tensors, {"quant_method": "fp8", "fmt": "e4m3", "activation_scheme": "dynamic",
                          "weight_block_size": block}, values,
          "transformers 5.18 Fp8Dequantize._dequantize_one" if use_transformers
          else "numpy: weight.float() * scale_inv repeated over each block, cut at the edges",
          shards=[first, second])


# --- compressed-tensors float-quantized, per-channel ----------------------------

def make_ct_channel():
    w = base_weights(3)
    tensors, values = {}, {}
    quantized = {f"model.layers.0.{m}.weight" for m in LINEARS}
    for k in sorted(quantized):
        s = w[k].abs().amax(dim=1, keepdim=True) / 448.0
        q = (w[k] / s).to(torch.float8_e4m3fn)
        s16 = s.to(torch.bfloat16)
        tensors[k] = q
        tensors[k.removesuffix(".weight") + ".weight_scale"] = s16
        tensors[k.removesuffix(".weight") + ".input_scale"] = torch.tensor([0.02], dtype=torch.bfloat16)
        values[k] = q.to(torch.float32) * s16.to(torch.float32)
    tensors.update(plain(w, quantized))
    write("ct-fp8-channel", tensors, {
        "quant_method": "compressed-tensors", "format": "float-quantized",
        "quantization_status": "compressed",
        "config_groups": {"group_0": {"targets": ["Linear"], "weights": {
            "num_bits": 8, "type": "float", "strategy": "channel", "symmetric": True,
            "dynamic": False}, "input_activations": {"num_bits": 8, "type": "float",
                                                     "strategy": "tensor", "dynamic": False}}},
        "ignore": ["lm_head"]}, values,
        "numpy: weight.float() * weight_scale[row] (compressed-tensors float-quantized, channel)",
        llama_drop=(".input_scale",))


# --- compressed-tensors int-quantized (I8, per channel) and fp8 per tensor ---------

def make_ct_int8():
    w = base_weights(8)
    tensors, values = {}, {}
    quantized = {f"model.layers.0.{m}.weight" for m in LINEARS}
    for k in sorted(quantized):
        s = (w[k].abs().amax(dim=1, keepdim=True) / 127.0).to(torch.bfloat16)
        q = torch.clamp(torch.round(w[k] / s.float()), -128, 127).to(torch.int8)
        tensors[k] = q
        tensors[k + "_scale"] = s
        values[k] = q.to(torch.float32) * s.to(torch.float32)
    tensors.update(plain(w, quantized))
    write("ct-int8-channel", tensors, {
        "quant_method": "compressed-tensors", "format": "int-quantized",
        "quantization_status": "compressed",
        "config_groups": {"group_0": {"targets": ["Linear"], "weights": {
            "num_bits": 8, "type": "int", "strategy": "channel", "symmetric": True,
            "dynamic": False}}},
        "ignore": ["lm_head"]}, values,
        "numpy: int8 weight.float() * weight_scale[row] (compressed-tensors int-quantized, channel)")


def make_fp8_tensor():
    w = base_weights(10)
    tensors, values = {}, {}
    quantized = {f"model.layers.0.{m}.weight" for m in LINEARS}
    for k in sorted(quantized):
        s = w[k].abs().max() / 448.0
        q = (w[k] / s).to(torch.float8_e4m3fn)
        tensors[k] = q
        tensors[k + "_scale_inv"] = s.reshape(())  # one scale for the tensor, a 0-d tensor
        values[k] = q.to(torch.float32) * s
    tensors.update(plain(w, quantized))
    write("fp8-tensor", tensors, {"quant_method": "fp8", "fmt": "e4m3",
                                  "activation_scheme": "dynamic", "weight_block_size": None}, values,
          "numpy: weight.float() * scale_inv (one per tensor)")


# --- compressed-tensors pack-quantized (llama.cpp dequant_packed) -----------------

def ct_pack(values: np.ndarray, bits: int, dim: int) -> np.ndarray:
    """compressed-tensors pack_to_int32: values + 2^(bits-1) (below 8 bits), packed along `dim`."""
    pf = 32 // bits
    u = (values + (1 << (bits - 1)) if bits < 8 else values + 128).astype(np.uint32) & ((1 << bits) - 1)
    if dim == 0:
        u = u.T
    n, m = u.shape
    padded = np.zeros((n, -(-m // pf) * pf), dtype=np.uint32)
    padded[:, :m] = u
    out = np.zeros((n, padded.shape[1] // pf), dtype=np.uint32)
    for j in range(pf):
        out |= padded[:, j::pf] << np.uint32(bits * j)
    out = out.view(np.int32)
    return np.ascontiguousarray(out.T) if dim == 0 else out


def make_ct_packed(name: str, bits: int, group: int, symmetric: bool, seed: int):
    w = base_weights(seed)
    rng = np.random.default_rng(seed)
    lo, hi = -(1 << (bits - 1)), (1 << (bits - 1)) - 1
    tensors, values = {}, {}
    quantized = {f"model.layers.0.{m}.weight" for m in LINEARS}
    for k in sorted(quantized):
        W = w[k].numpy()
        out_f, in_f = W.shape
        g = np.arange(in_f) // group
        scale = (rng.uniform(0.5, 1.5, size=(out_f, in_f // group)) * np.abs(W).max() / hi).astype(np.float32)
        scale16 = torch.from_numpy(scale).to(torch.bfloat16)
        s = scale16.to(torch.float32).numpy()
        zp = np.zeros((out_f, in_f // group), dtype=np.int64) if symmetric else \
            rng.integers(lo // 2, hi // 2 + 1, size=(out_f, in_f // group))
        q = np.clip(np.round(W / s[:, g] + zp[:, g]), lo, hi).astype(np.int64)
        tensors[k + "_packed"] = torch.from_numpy(ct_pack(q, bits, 1))
        tensors[k + "_scale"] = scale16
        tensors[k + "_shape"] = torch.tensor([out_f, in_f], dtype=torch.int64)
        if not symmetric:
            tensors[k + "_zero_point"] = torch.from_numpy(ct_pack(zp, bits, 0))
        values[k] = torch.from_numpy(((q - zp[:, g]).astype(np.float32) * s[:, g]).astype(np.float32))
    tensors.update(plain(w, quantized))
    write(name, tensors, {
        "quant_method": "compressed-tensors", "format": "pack-quantized",
        "quantization_status": "compressed",
        "config_groups": {"group_0": {"targets": ["Linear"], "weights": {
            "num_bits": bits, "type": "int", "strategy": "group", "group_size": group,
            "symmetric": symmetric, "dynamic": False, "actorder": None}}},
        "ignore": ["lm_head"]}, values,
        "numpy: (q - zero_point) * weight_scale per group, compressed-tensors pack_to_int32 layout")


# --- GPTQ (GPTQModel packing; llama.cpp dequant_gptq) --------------------------

def pack_rows(q: np.ndarray, bits: int) -> np.ndarray:
    """[n, m] values → [n / (32/bits), m] int32, value i at bits (i % pf) * bits of word i // pf."""
    pf = 32 // bits
    n, m = q.shape
    out = np.zeros((n // pf, m), dtype=np.uint32)
    for j in range(pf):
        out |= q[j::pf].astype(np.uint32) << np.uint32(bits * j)
    return out.view(np.int32)


def make_gptq(name: str, bits: int, fmt: str, act_order: bool, group: int, seed: int,
              shards: list[list[str]] | None = None):
    w = base_weights(seed)
    rng = np.random.default_rng(seed)
    maxq = 2 ** bits - 1
    tensors, values = {}, {}
    quantized = {f"model.layers.0.{m}.weight" for m in LINEARS}
    for k in sorted(quantized):
        W = w[k].numpy()  # [out, in]
        out_f, in_f = W.shape
        groups = -(-in_f // group)
        if act_order:
            perm = rng.permutation(in_f)
            g_idx = np.empty(in_f, dtype=np.int32)
            g_idx[perm] = np.arange(in_f) // group
        else:
            g_idx = (np.arange(in_f) // group).astype(np.int32)
        zeros = rng.integers(1, maxq + 1, size=(groups, out_f))  # true zero points, >= 1 for v1
        scales = (rng.uniform(0.5, 1.5, size=(groups, out_f)) * np.abs(W).max() / maxq).astype(np.float16)
        q = np.clip(np.round(W.T / scales[g_idx].astype(np.float32) + zeros[g_idx]), 0, maxq).astype(np.uint32)
        stored = zeros - 1 if fmt == "gptq" else zeros
        base = k.removesuffix(".weight")
        tensors[base + ".qweight"] = torch.from_numpy(pack_rows(q, bits))
        tensors[base + ".qzeros"] = torch.from_numpy(pack_rows(stored.T.astype(np.uint32), bits).T.copy())
        tensors[base + ".scales"] = torch.from_numpy(scales)
        tensors[base + ".g_idx"] = torch.from_numpy(g_idx)
        # The published formula (GPTQModel dequantize_weight), float32.
        deq = scales[g_idx].astype(np.float32) * (q.astype(np.float32) - zeros[g_idx].astype(np.float32))
        values[k] = torch.from_numpy(np.ascontiguousarray(deq.T))
    tensors.update(plain(w, quantized))
    write(name, tensors, {"quant_method": "gptq", "bits": bits, "group_size": group,
                          "desc_act": act_order, "sym": False, "checkpoint_format": fmt,
                          "pack_dtype": "int32"}, values,
          "numpy: scales[g_idx] * (q - zero), GPTQModel's dequantize_weight", shards=shards)


def make_gptq_sharded():
    """gptq-4bit-actorder's checkpoint (same seed, same values) in two shards whose
    boundary splits groups: the converter adds each dequantized `.weight` after every
    tensor it read, in the order of the `.qweight` names (shard, then name), so the
    shard of the `.qweight` decides, not where the group begins. Here q_proj keeps its
    qweight in shard 1 and the rest in shard 2 (as a state dict in module order splits),
    o_proj the reverse (g_idx and qzeros in shard 1), and down_proj, wholly in shard 2,
    is the first group there."""
    layer = "model.layers.0."
    group = (".qweight", ".qzeros", ".scales", ".g_idx")
    first = ["model.embed_tokens.weight", layer + "input_layernorm.weight",
             layer + "post_attention_layernorm.weight",
             *(layer + f"self_attn.{p}_proj.bias" for p in "qkv"),
             *(layer + m + s for m in ("mlp.up_proj", "self_attn.k_proj") for s in group),
             layer + "self_attn.q_proj.qweight",
             layer + "self_attn.o_proj.g_idx", layer + "self_attn.o_proj.qzeros"]
    rest = [layer + m + s for m in LINEARS for s in group if layer + m + s not in first]
    make_gptq("gptq-4bit-sharded", 4, "gptq", True, 32, 11,
              shards=[first, rest + ["model.norm.weight"]])


# --- AWQ GEMM (AutoAWQ packing) -------------------------------------------------

AWQ_ORDER = [0, 2, 4, 6, 1, 3, 5, 7]


def awq_pack(q: np.ndarray) -> np.ndarray:
    """[n, m] 4-bit values → [n, m/8] int32 in AutoAWQ's order."""
    n, m = q.shape
    out = np.zeros((n, m // 8), dtype=np.uint32)
    for s in range(8):
        out |= q[:, AWQ_ORDER[s]::8].astype(np.uint32) << np.uint32(4 * s)
    return out.view(np.int32)


def make_awq():
    w = base_weights(5)
    rng = np.random.default_rng(5)
    group = 32
    tensors, values = {}, {}
    quantized = {f"model.layers.0.{m}.weight" for m in LINEARS}
    for k in sorted(quantized):
        W = w[k].numpy().T  # [in, out], as AWQ stores it
        in_f, out_f = W.shape
        g = np.arange(in_f) // group
        zeros = rng.integers(0, 16, size=(in_f // group, out_f))
        scales = (rng.uniform(0.5, 1.5, size=(in_f // group, out_f)) * np.abs(W).max() / 15).astype(np.float16)
        q = np.clip(np.round(W / scales[g].astype(np.float32) + zeros[g]), 0, 15).astype(np.uint32)
        base = k.removesuffix(".weight")
        tensors[base + ".qweight"] = torch.from_numpy(awq_pack(q))
        tensors[base + ".qzeros"] = torch.from_numpy(awq_pack(zeros.astype(np.uint32)))
        tensors[base + ".scales"] = torch.from_numpy(scales)
        # AutoAWQ unpack_awq + reverse_awq_order, then (q - z) * s in float32, transposed to [out, in].
        deq = (q.astype(np.float32) - zeros[g].astype(np.float32)) * scales[g].astype(np.float32)
        values[k] = torch.from_numpy(np.ascontiguousarray(deq.T))
        # The unpacking, as AutoAWQ writes it, must give back q and zeros.
        check = unpack_awq(tensors[base + ".qweight"].numpy())
        assert (check == q).all()
    tensors.update(plain(w, quantized))
    write("awq-gemm", tensors, {"quant_method": "awq", "bits": 4, "group_size": group,
                                "version": "gemm", "zero_point": True}, values,
          "numpy: AutoAWQ unpack_awq + reverse_awq_order, (q - zero) * scale in float32",
          llama=False)  # llama.cpp's converter has no AWQ path


def unpack_awq(qweight: np.ndarray) -> np.ndarray:
    """AutoAWQ's unpack_awq and reverse_awq_order, in numpy."""
    shifts = np.arange(0, 32, 4, dtype=np.uint32)
    u = qweight.view(np.uint32)
    iw = ((u[:, :, None] >> shifts[None, None, :]) & 15).reshape(u.shape[0], -1)
    reverse = np.arange(iw.shape[1]).reshape(-1, 8)[:, [0, 4, 1, 5, 2, 6, 3, 7]].reshape(-1)
    return iw[:, reverse]


# --- BitNet (transformers unpack_weights; llama.cpp dequant_bitnet) ---------------

def make_bitnet():
    from transformers.integrations.bitnet import pack_weights, unpack_weights
    w = base_weights(7)
    g = torch.Generator().manual_seed(7)
    tensors, values = {}, {}
    quantized = {f"model.layers.0.{m}.weight" for m in LINEARS}
    for k in sorted(quantized):
        ternary = torch.randint(-1, 2, w[k].shape, generator=g).to(torch.int8)
        packed = pack_weights(ternary.clone())  # it adds 1 in place
        scale = torch.tensor([1.0 / (0.05 + 0.01 * len(values))], dtype=torch.bfloat16)
        tensors[k] = packed
        tensors[k + "_scale"] = scale
        values[k] = unpack_weights(packed, torch.float32) / scale.float()
        assert torch.equal(unpack_weights(packed, torch.int8), ternary)
    tensors.update(plain(w, quantized))
    write("bitnet", tensors, {"quant_method": "bitnet", "linear_class": "autobitlinear",
                              "quantization_mode": "offline"}, values,
          "transformers 5.18 integrations.bitnet.unpack_weights(packed) / weight_scale",
          # Its lazy mode fails in dequant_bitnet (a shift tensor left off the meta device).
          llama_args=("--no-lazy",))


# --- MXFP4 (gpt-oss experts; transformers convert_moe_packed_tensors) ------------

def make_mxfp4():
    from transformers.integrations.mxfp4 import convert_moe_packed_tensors
    g = torch.Generator().manual_seed(9)
    # intermediate_size a multiple of the 32-value blocks: each expert's down_proj is ff wide.
    experts, hidden, inter = 2, 64, 64
    tensors, values = {}, {}
    for proj, rows, cols in (("gate_up_proj", 2 * inter, hidden), ("down_proj", hidden, inter)):
        base = f"model.layers.0.mlp.experts.{proj}"
        blocks = torch.randint(0, 256, (experts, rows, cols // 32, 16), generator=g, dtype=torch.uint8)
        scales = torch.randint(118, 130, (experts, rows, cols // 32), generator=g, dtype=torch.uint8)
        tensors[base + "_blocks"] = blocks
        tensors[base + "_scales"] = scales
        tensors[base + "_bias"] = (torch.randn(experts, rows, generator=g) * 0.1).to(torch.bfloat16)
        values[base] = convert_moe_packed_tensors(blocks, scales, dtype=torch.float32)
    tensors["model.layers.0.mlp.router.weight"] = (torch.randn(experts, hidden, generator=g) * 0.1).to(torch.bfloat16)
    config = {"architectures": ["GptOssForCausalLM"], "model_type": "gpt_oss", "hidden_size": hidden,
              "intermediate_size": inter, "num_local_experts": experts, "num_hidden_layers": 1,
              "num_attention_heads": 4, "num_key_value_heads": 2, "head_dim": 16, "vocab_size": 512,
              "experts_per_token": 2, "sliding_window": 128, "torch_dtype": "bfloat16"}
    write("mxfp4-gpt-oss", tensors, {"quant_method": "mxfp4", "modules_to_not_convert": [
        "model.layers.*.self_attn", "model.layers.*.mlp.router", "model.embed_tokens", "lm_head"]},
        values, "transformers 5.18 integrations.mxfp4.convert_moe_packed_tensors(dtype=float32)",
        config=config, tokenizer=False)


# --- NVIDIA ModelOpt FP8 and NVFP4, compressed-tensors NVFP4 --------------------

E2M1 = np.array([0, 0.5, 1, 1.5, 2, 3, 4, 6], dtype=np.float32)
GGUF_NAMES = {"self_attn.q_proj": "attn_q", "self_attn.k_proj": "attn_k", "self_attn.v_proj": "attn_v",
              "self_attn.o_proj": "attn_output", "mlp.gate_proj": "ffn_gate", "mlp.up_proj": "ffn_up",
              "mlp.down_proj": "ffn_down"}


def modelopt_fp8_weights(seed: int) -> tuple[dict, dict]:
    """ModelOpt's FP8 export: an F8_E4M3 weight, a 0-d F32 weight_scale and input_scale,
    k_proj.k_scale / v_proj.v_scale for the FP8 KV cache."""
    w = base_weights(seed)
    tensors, values = {}, {}
    quantized = {f"model.layers.0.{m}.weight" for m in LINEARS}
    for k in sorted(quantized):
        s = (w[k].abs().max() / 448.0).to(torch.float32)
        q = (w[k] / s).to(torch.float8_e4m3fn)
        base = k.removesuffix(".weight")
        tensors[k] = q
        tensors[base + ".weight_scale"] = s.reshape(())
        tensors[base + ".input_scale"] = torch.tensor(0.015625, dtype=torch.float32)
        values[k] = q.to(torch.float32) * s
    tensors["model.layers.0.self_attn.k_proj.k_scale"] = torch.tensor(0.0625, dtype=torch.float32)
    tensors["model.layers.0.self_attn.v_proj.v_scale"] = torch.tensor(0.03125, dtype=torch.float32)
    tensors.update(plain(w, quantized))
    return tensors, values


def nvfp4_quantize(w: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.float32]:
    """NVFP4 as NVIDIA defines it: a per-tensor FP32 scale s2 = amax / (6 · 448), per 16
    values an E4M3 scale of (block amax / 6) / s2, each value the nearest E2M1 code of
    value / (scale · s2). Returns U8 codes [out, in/2] (the first value in the low
    nibble), the E4M3 scales [out, in/16] as bytes, and s2."""
    rows, cols = w.shape
    s2 = np.float32(np.abs(w).max() / (6.0 * 448.0))
    blocks = w.reshape(rows, cols // 16, 16)
    scale = torch.from_numpy((np.abs(blocks).max(axis=-1) / 6.0 / s2).astype(np.float32)).to(torch.float8_e4m3fn)
    sf = scale.to(torch.float32).numpy()
    x = blocks / np.where(sf == 0, 1, sf)[..., None] / s2
    mag = np.abs(x)
    code = np.abs(mag[..., None] - E2M1).argmin(axis=-1).astype(np.uint8) | np.where(x < 0, 8, 0).astype(np.uint8)
    code = code.reshape(rows, cols)
    packed = (code[:, 0::2] | (code[:, 1::2] << 4)).astype(np.uint8)
    return packed, scale.view(torch.uint8).numpy(), s2


def nvfp4_values(packed: np.ndarray, scale: np.ndarray, s2: np.float32) -> torch.Tensor:
    """The published formula in float32: E2M1(code) · E4M3(scale) · s2 (−0 as +0)."""
    rows = packed.shape[0]
    codes = np.stack([packed & 15, packed >> 4], axis=-1).reshape(rows, -1)
    v = np.where(codes & 8, -1, 1).astype(np.float32) * E2M1[codes & 7]
    sf = torch.from_numpy(scale).view(torch.float8_e4m3fn).to(torch.float32).numpy()
    v = (v.reshape(rows, -1, 16) * sf[..., None]).reshape(rows, -1).astype(np.float32)
    # + 0: code 8 (E2M1's −0) reads as +0, as in ggml's kvalues_fp4 (no −0 there).
    return torch.from_numpy((v * s2 + np.float32(0)).astype(np.float32))


def modelopt_nvfp4(tensors: dict, values: dict, k: str, w: torch.Tensor, input_scale: float | None):
    """ModelOpt's NVFP4 export of weight `k` into `tensors` (U8 codes, E4M3 weight_scale, F32
    weight_scale_2, and input_scale when given), its values by the published formula into `values`."""
    packed, scale, s2 = nvfp4_quantize(w.numpy())
    base = k.removesuffix(".weight")
    tensors[k] = torch.from_numpy(packed)
    tensors[base + ".weight_scale"] = torch.from_numpy(scale).view(torch.float8_e4m3fn)
    tensors[base + ".weight_scale_2"] = torch.tensor(s2, dtype=torch.float32)
    if input_scale is not None:
        tensors[base + ".input_scale"] = torch.tensor(input_scale, dtype=torch.float32)
    values[k] = nvfp4_values(packed, scale, s2)


# A tiny Llama (the tokenizer of examples/tiny-llama): llama.cpp's llama graph applies
# the NVFP4 weights' per-tensor .scale (its qwen2 graph does not), and the converter
# permutes the Q/K rows of NVFP4 weights and their scales as of float ones.
LLAMA_TOKENIZER = HERE.parents[3] / "examples" / "tiny-llama"
NVFP4_CONFIG = {
    "architectures": ["LlamaForCausalLM"], "model_type": "llama", "hidden_size": 64,
    "intermediate_size": 128,  # ggml's NVFP4 blocks hold 64 values
    "num_attention_heads": 4, "num_key_value_heads": 2, "num_hidden_layers": 1, "vocab_size": 256,
    "max_position_embeddings": 512, "rms_norm_eps": 1e-5, "rope_theta": 10000.0,
    "tie_word_embeddings": True, "bos_token_id": 1, "eos_token_id": 2, "hidden_act": "silu",
    "torch_dtype": "bfloat16",
}


def nvfp4_base(seed: int) -> dict[str, torch.Tensor]:
    return base_weights(seed, 128, 256, bias=False)


def make_modelopt_fp8():
    tensors, values = modelopt_fp8_weights(14)
    # As nvidia/Llama-3.1-8B-Instruct-FP8 publishes it: config.json without a
    # quantization_config, hf_quant_config.json beside it.
    write("modelopt-fp8", tensors, None, values,
          "numpy: weight.float() * weight_scale (one per tensor), llama.cpp's dequant_simple",
          hf_quant_config={"producer": {"name": "modelopt", "version": "0.19.0"},
                           "quantization": {"quant_algo": "FP8", "kv_cache_quant_algo": "FP8",
                                            "exclude_modules": ["lm_head"]}})


def make_modelopt_nvfp4():
    w = nvfp4_base(15)
    tensors, values, names = {}, {}, {}
    quantized = {f"model.layers.0.{m}.weight" for m in LINEARS}
    for m in LINEARS:
        k = f"model.layers.0.{m}.weight"
        modelopt_nvfp4(tensors, values, k, w[k], 0.0078125)
        names[f"blk.0.{GGUF_NAMES[m]}.weight"] = k
    tensors["model.layers.0.self_attn.k_proj.k_scale"] = torch.tensor(0.0625, dtype=torch.float32)
    tensors["model.layers.0.self_attn.v_proj.v_scale"] = torch.tensor(0.03125, dtype=torch.float32)
    tensors.update(plain(w, quantized))
    # As nvidia/Llama-3.1-8B-Instruct-FP4 publishes it: hf_quant_config.json only.
    write("modelopt-nvfp4", tensors, None, values,
          "numpy: E2M1(code) * E4M3(weight_scale) * weight_scale_2, NVIDIA's NVFP4; equal to gguf-py's "
          "NVFP4 dequantizer times .scale on llama.cpp's converter output",
          config=NVFP4_CONFIG, nvfp4=names, tokenizer_from=LLAMA_TOKENIZER,
          hf_quant_config={"producer": {"name": "modelopt", "version": "0.29.0"},
                           "quantization": {"quant_algo": "NVFP4", "kv_cache_quant_algo": "FP8",
                                            "group_size": 16, "exclude_modules": ["lm_head"]}})


def make_modelopt_mixed():
    """MIXED_PRECISION (per layer, as ModelOpt's mixed exports list them): the attention
    projections FP8 with a per-channel scale, the MLP NVFP4."""
    w = nvfp4_base(17)
    tensors, values, names, layers = {}, {}, {}, {}
    quantized = {f"model.layers.0.{m}.weight" for m in LINEARS}
    for m in LINEARS:
        k = f"model.layers.0.{m}.weight"
        base = k.removesuffix(".weight")
        if m.startswith("self_attn"):
            s = (w[k].abs().amax(dim=1) / 448.0).to(torch.float32)
            q = (w[k] / s[:, None]).to(torch.float8_e4m3fn)
            tensors[k] = q
            tensors[base + ".weight_scale"] = s
            values[k] = q.to(torch.float32) * s[:, None]
            layers[base] = {"quant_algo": "FP8"}
        else:
            modelopt_nvfp4(tensors, values, k, w[k], None)
            names[f"blk.0.{GGUF_NAMES[m]}.weight"] = k
            layers[base] = {"quant_algo": "NVFP4", "group_size": 16}
        tensors[base + ".input_scale"] = torch.tensor(0.0078125, dtype=torch.float32)
    tensors.update(plain(w, quantized))
    write("modelopt-mixed", tensors, None, values,
          "numpy: FP8 weight.float() * weight_scale[row]; NVFP4 E2M1(code) * E4M3(weight_scale) * "
          "weight_scale_2, equal to gguf-py's NVFP4 dequantizer times .scale on llama.cpp's converter output",
          config=NVFP4_CONFIG, nvfp4=names, tokenizer_from=LLAMA_TOKENIZER,
          hf_quant_config={"producer": {"name": "modelopt", "version": "0.37.0"},
                           "quantization": {"quant_algo": "MIXED_PRECISION", "kv_cache_quant_algo": None,
                                            "quantized_layers": layers}})


def ct_nvfp4(tensors: dict, values: dict, k: str, w: torch.Tensor):
    """compressed-tensors' NVFP4 (nvfp4-pack-quantized) of weight `k` into `tensors`, its
    values by the published formula into `values`."""
    packed, scale, s2 = nvfp4_quantize(w.numpy())
    # compressed-tensors stores the reciprocal, 1 / s2, as weight_global_scale; the
    # converter (and so aprkit) multiplies by 1 / global rounded to f32.
    global_scale = np.float32(1.0) / s2
    inv = np.float32(np.float32(1.0) / global_scale)
    tensors[k + "_packed"] = torch.from_numpy(packed)
    tensors[k + "_scale"] = torch.from_numpy(scale).view(torch.float8_e4m3fn)
    tensors[k + "_global_scale"] = torch.tensor([global_scale], dtype=torch.float32)
    tensors[k.removesuffix(".weight") + ".input_global_scale"] = torch.tensor([448.0 * 6 / 4], dtype=torch.float32)
    values[k] = nvfp4_values(packed, scale, inv)


CT_NVFP4_GROUP = {"targets": ["Linear"], "format": "nvfp4-pack-quantized",
                  "weights": {"num_bits": 4, "type": "float", "strategy": "tensor_group", "group_size": 16,
                              "symmetric": True, "dynamic": False},
                  "input_activations": {"num_bits": 4, "type": "float", "strategy": "tensor_group",
                                        "group_size": 16, "symmetric": True, "dynamic": "local"}}


def make_ct_nvfp4():
    w = nvfp4_base(16)
    tensors, values, names = {}, {}, {}
    quantized = {f"model.layers.0.{m}.weight" for m in LINEARS}
    for m in LINEARS:
        k = f"model.layers.0.{m}.weight"
        ct_nvfp4(tensors, values, k, w[k])
        names[f"blk.0.{GGUF_NAMES[m]}.weight"] = k
    tensors.update(plain(w, quantized))
    write("ct-nvfp4", tensors, {
        "quant_method": "compressed-tensors", "format": "nvfp4-pack-quantized",
        "quantization_status": "compressed", "config_groups": {"group_0": CT_NVFP4_GROUP},
        "ignore": ["lm_head"]}, values,
        "numpy: E2M1(code) * E4M3(weight_scale) * f32(1 / weight_global_scale); equal to gguf-py's "
        "NVFP4 dequantizer times .scale on llama.cpp's converter output",
        config=NVFP4_CONFIG, nvfp4=names, tokenizer_from=LLAMA_TOKENIZER)


# A tiny Qwen3-MoE (llama.cpp's qwen3moe graph applies the per-expert .scale of
# stacked NVFP4 experts, build_moe_ffn's *_exps_s) as ModelOpt exports it
# (nvidia/Qwen3-30B-A3B-NVFP4): every projection NVFP4, experts one per module
# (`mlp.experts.N.gate_proj`), the router and lm_head left out. The converter
# stacks each layer's experts per projection (_flush_nvfp4_experts), their
# weight_scale_2 and input_scale into [n_expert] F32 tensors.
NVFP4_MOE_CONFIG = {
    "architectures": ["Qwen3MoeForCausalLM"], "model_type": "qwen3_moe", "hidden_size": 64,
    "intermediate_size": 128, "moe_intermediate_size": 128,  # ggml's NVFP4 blocks hold 64 values
    "num_attention_heads": 4, "num_key_value_heads": 2, "head_dim": 16, "num_hidden_layers": 2,
    "num_local_experts": 4, "num_experts_per_tok": 2, "norm_topk_prob": True, "decoder_sparse_step": 1,
    "mlp_only_layers": [], "vocab_size": 384, "max_position_embeddings": 512, "rms_norm_eps": 1e-6,
    "rope_parameters": {"rope_theta": 10000.0, "rope_type": "default"}, "attention_bias": False,
    "use_sliding_window": False, "sliding_window": None, "tie_word_embeddings": False,
    "bos_token_id": None, "eos_token_id": None, "hidden_act": "silu", "torch_dtype": "bfloat16",
}
# The tiny Qwen tokenizer of the qwen3-moe family fixture (384 tokens).
MOE_TOKENIZER = HERE.parents[1] / "families" / "hf" / "qwen3-moe"
MOE_LINEARS = ["self_attn.q_proj", "self_attn.k_proj", "self_attn.v_proj", "self_attn.o_proj"]
MOE_EXPERT_GGUF = {"gate_proj": "ffn_gate_exps", "up_proj": "ffn_up_exps", "down_proj": "ffn_down_exps"}


def nvfp4_moe_weights(c: dict, seed: int) -> dict[str, torch.Tensor]:
    """Seeded float32 weights of the tiny Qwen3-MoE `c`, experts one module each."""
    h, ff, experts, layers = c["hidden_size"], c["moe_intermediate_size"], c["num_local_experts"], c["num_hidden_layers"]
    q, kv = c["num_attention_heads"] * c["head_dim"], c["num_key_value_heads"] * c["head_dim"]
    g = torch.Generator().manual_seed(seed)
    shapes = {"model.embed_tokens.weight": (c["vocab_size"], h), "lm_head.weight": (c["vocab_size"], h),
              "model.norm.weight": (h,)}
    for i in range(layers):
        p = f"model.layers.{i}."
        shapes.update({p + "input_layernorm.weight": (h,), p + "post_attention_layernorm.weight": (h,),
                       p + "self_attn.q_proj.weight": (q, h), p + "self_attn.k_proj.weight": (kv, h),
                       p + "self_attn.v_proj.weight": (kv, h), p + "self_attn.o_proj.weight": (h, q),
                       p + "self_attn.q_norm.weight": (c["head_dim"],),
                       p + "self_attn.k_norm.weight": (c["head_dim"],), p + "mlp.gate.weight": (experts, h)})
        for e in range(experts):
            shapes.update({f"{p}mlp.experts.{e}.gate_proj.weight": (ff, h),
                           f"{p}mlp.experts.{e}.up_proj.weight": (ff, h),
                           f"{p}mlp.experts.{e}.down_proj.weight": (h, ff)})
    w = {}
    for name, shape in shapes.items():
        t = torch.randn(shape, generator=g) * 0.1
        w[name] = 1 + t if name.endswith("norm.weight") else t
    return w


def nvfp4_moe_names(k: str, experts: int, names: dict):
    """The GGUF weight holding `k`: its own, or its layer's stack of experts (all of them)."""
    bid, part = int(k.split(".")[2]), k.split(".")[-2]
    if ".mlp.experts." in k:
        stack = f"blk.{bid}.{MOE_EXPERT_GGUF[part]}.weight"
        names[stack] = [f"model.layers.{bid}.mlp.experts.{e}.{part}.weight" for e in range(experts)]
    else:
        names[f"blk.{bid}.{GGUF_NAMES['self_attn.' + part]}.weight"] = k


def nvfp4_moe_quantized(w: dict) -> set[str]:
    return {k for k in w if any(f".{m}.weight" in k for m in MOE_LINEARS) or ".mlp.experts." in k}


def write_nvfp4_moe(name: str, c: dict, seed: int, ct: bool = False, kv_cache: bool = False):
    """An NVFP4 MoE fixture of config `c`: every projection NVFP4 as ModelOpt exports it (or, with
    `ct`, compressed-tensors), with ModelOpt's KV-cache scales when `kv_cache`."""
    w = nvfp4_moe_weights(c, seed)
    tensors, values, names = {}, {}, {}
    quantized = nvfp4_moe_quantized(w)
    for k in sorted(quantized):
        if ct:
            ct_nvfp4(tensors, values, k, w[k])
        else:
            # Each module's own activation scale: the stacked .input_scale keeps the experts' order.
            modelopt_nvfp4(tensors, values, k, w[k], 0.0078125 * (1 + len(values) / 64))
        nvfp4_moe_names(k, c["num_local_experts"], names)
    for i in range(c["num_hidden_layers"] if kv_cache else 0):
        tensors[f"model.layers.{i}.self_attn.k_proj.k_scale"] = torch.tensor(0.0625, dtype=torch.float32)
        tensors[f"model.layers.{i}.self_attn.v_proj.v_scale"] = torch.tensor(0.03125, dtype=torch.float32)
    tensors.update(plain(w, quantized))
    judged = ("equal to gguf-py's NVFP4 dequantizer times .scale (per expert for the stacked experts) "
              "on llama.cpp's converter output")
    if ct:
        write(name, tensors, {
            "quant_method": "compressed-tensors", "format": "nvfp4-pack-quantized",
            "quantization_status": "compressed", "config_groups": {"group_0": CT_NVFP4_GROUP},
            "ignore": ["lm_head", "re:.*mlp.gate$"]}, values,
            "numpy: E2M1(code) * E4M3(weight_scale) * f32(1 / weight_global_scale); " + judged,
            config=c, nvfp4=names, tokenizer_from=MOE_TOKENIZER)
        return
    write(name, tensors, None, values,
          "numpy: E2M1(code) * E4M3(weight_scale) * weight_scale_2, NVIDIA's NVFP4; " + judged,
          config=c, nvfp4=names, tokenizer_from=MOE_TOKENIZER,
          hf_quant_config={"producer": {"name": "modelopt", "version": "0.33.0"},
                           "quantization": {"quant_algo": "NVFP4",
                                            "kv_cache_quant_algo": "FP8" if kv_cache else None,
                                            "group_size": 16,
                                            "exclude_modules": ["lm_head", "model.layers.*.mlp.gate"]}})


def make_modelopt_nvfp4_moe():
    write_nvfp4_moe("modelopt-nvfp4-moe", NVFP4_MOE_CONFIG, 9521, kv_cache=True)


def make_ct_nvfp4_moe():
    """The Qwen3-MoE as compressed-tensors (llm-compressor) exports it (RedHatAI's
    Qwen3-30B-A3B-NVFP4): one layer, the converter renames its tensors to ModelOpt's and
    stacks the experts as for modelopt-nvfp4-moe."""
    write_nvfp4_moe("ct-nvfp4-moe", {**NVFP4_MOE_CONFIG, "num_hidden_layers": 1}, 9522, ct=True)


def make_modelopt_nvfp4_mellum():
    """Mellum 2 (llama.cpp's mellum graph applies the experts' .scale too): Qwen3-MoE's
    block with a sliding window on the layers `layer_types` names; one layer."""
    c = {**NVFP4_MOE_CONFIG, "architectures": ["MellumForCausalLM"], "model_type": "mellum",
         "num_hidden_layers": 1, "layer_types": ["sliding_attention"], "mlp_layer_types": ["sparse"],
         "sliding_window": 16,
         "rope_parameters": {t: {"rope_theta": 10000.0, "rope_type": "default"}
                             for t in ("full_attention", "sliding_attention")}}
    for k in ("use_sliding_window", "decoder_sparse_step", "mlp_only_layers"):
        c.pop(k)
    write_nvfp4_moe("modelopt-nvfp4-mellum", c, 9523)


# A tiny Nemotron 3 Nano (NemotronHForCausalLM with MoE layers, "MEM*E": Mamba-2, MoE,
# attention) as ModelOpt exports it: the Mamba, attention, shared-expert and expert
# projections NVFP4, whose .scale llama.cpp's nemotron_h_moe graph multiplies in; the
# router and lm_head left out. Its experts (`mixer.experts.N.up_proj`, ReLU², no gate)
# are stacked by the converter as Qwen3-MoE's; config.json counts them as n_routed_experts,
# which _generate_nvfp4_tensors does not read, so it stacks them after every other weight.
NEMOTRON_H_FAMILY = HERE.parents[1] / "families" / "hf" / "nemotron-h-moe"
NEMOTRON_H_GGUF = {"mixer.in_proj": "ssm_in", "mixer.out_proj": "ssm_out", "mixer.q_proj": "attn_q",
                   "mixer.k_proj": "attn_k", "mixer.v_proj": "attn_v", "mixer.o_proj": "attn_output",
                   "mixer.shared_experts.up_proj": "ffn_up_shexp",
                   "mixer.shared_experts.down_proj": "ffn_down_shexp"}


def write_nvfp4_nemotron_h(name: str, family: Path, seed: int, **config):
    """A Nemotron-H family fixture's model (`family`) with `config` changed (64-wide experts:
    ggml's NVFP4 blocks hold 64 values), its SSM parameters and norms kept, every projection
    drawn anew from `seed`; all but the router and the latent projections NVFP4."""
    from safetensors.torch import load_file
    c = {**json.loads((family / "config.json").read_text()), **config}
    weights = {}
    for f in sorted(family.glob("*.safetensors")):
        weights.update(load_file(f))
    g = torch.Generator().manual_seed(seed)
    h, ff, latent = c["hidden_size"], c["moe_intermediate_size"], c.get("moe_latent_size") or c["hidden_size"]
    shexp = c["moe_shared_expert_intermediate_size"]
    shapes = {".shared_experts.up_proj.weight": (shexp, h), ".shared_experts.down_proj.weight": (h, shexp),
              ".fc1_latent_proj.weight": (latent, h), ".fc2_latent_proj.weight": (h, latent)}
    w = {}
    for k, v in sorted(weights.items()):
        shape = next((s for end, s in shapes.items() if k.endswith(end)), tuple(v.shape))
        if ".experts." in k and ".shared_experts." not in k:
            shape = (ff, latent) if k.endswith("up_proj.weight") else (latent, ff)
        if v.ndim == 2 and "conv1d" not in k:
            w[k] = torch.randn(shape, generator=g) * 0.1
        else:
            w[k] = v.clone()
    tensors, values, names = {}, {}, {}
    # The router and the latent projections: llama.cpp's graph multiplies them without a .scale.
    quantized = {k for k in w if k.startswith("backbone.layers.") and w[k].ndim == 2
                 and not k.endswith(("mixer.gate.weight", "_latent_proj.weight"))}
    for k in sorted(quantized):
        modelopt_nvfp4(tensors, values, k, w[k], 0.0078125 * (1 + len(values) / 64))
        bid, part = int(k.split(".")[2]), k.split(".", 3)[3].removesuffix(".weight")
        if ".mixer.experts." in k:
            proj = part.split(".")[-1]
            names[f"blk.{bid}.ffn_{proj.removesuffix('_proj')}_exps.weight"] = [
                f"backbone.layers.{bid}.mixer.experts.{e}.{proj}.weight" for e in range(c["n_routed_experts"])]
        else:
            names[f"blk.{bid}.{NEMOTRON_H_GGUF[part]}.weight"] = k
    tensors.update(plain(w, quantized))
    for k in w:  # The SSM's A_log and D in F32, as the published checkpoints keep them.
        if k.endswith(("mixer.A_log", "mixer.D")):
            tensors[k] = w[k]
    write(name, tensors, None, values,
          "numpy: E2M1(code) * E4M3(weight_scale) * weight_scale_2, NVIDIA's NVFP4; equal to gguf-py's "
          "NVFP4 dequantizer times .scale (per expert for the stacked experts) on llama.cpp's converter output",
          config=c, nvfp4=names, tokenizer_from=family,
          hf_quant_config={"producer": {"name": "modelopt", "version": "0.33.0"},
                           "quantization": {"quant_algo": "NVFP4", "kv_cache_quant_algo": None,
                                            "group_size": 16,
                                            "exclude_modules": ["lm_head", "backbone.layers.*.mixer.gate",
                                                                "backbone.layers.*.mixer.fc1_latent_proj",
                                                                "backbone.layers.*.mixer.fc2_latent_proj"]}})


def make_modelopt_nvfp4_nemotron_h():
    """Nemotron 3 Nano's shape (the nemotron-h-moe family fixture, "MEM*E"), seed 9561."""
    write_nvfp4_nemotron_h("modelopt-nvfp4-nemotron-h", NEMOTRON_H_FAMILY, 9561, moe_intermediate_size=64)


def make_modelopt_nvfp4_nemotron_h_latent():
    """Nemotron 3 Super's LatentMoE (the nemotron-h-latent family fixture, "MEMEM*E"), seed 9562:
    its experts NVFP4 in a 64-wide latent space, the latent projections BF16."""
    write_nvfp4_nemotron_h("modelopt-nvfp4-nemotron-h-latent", NEMOTRON_H_FAMILY.parent / "nemotron-h-latent",
                           9562, moe_intermediate_size=64, moe_latent_size=64,
                           moe_shared_expert_intermediate_size=64)


if __name__ == "__main__":
    if len(sys.argv) > 2:  # only the named fixtures
        for name in sys.argv[2:]:
            globals()[name]()
        sys.exit(0)
    torch.manual_seed(0)
    make_fp8("fp8-block", [16, 32], 1, use_transformers=True)
    make_fp8("fp8-block-edge", [24, 40], 2, use_transformers=False)
    make_ct_channel()
    make_ct_int8()
    make_fp8_tensor()
    make_ct_packed("ct-w4a16-asym", 4, 32, False, 4)
    make_ct_packed("ct-w8-packed-sym", 8, 16, True, 6)
    make_gptq("gptq-4bit-actorder", 4, "gptq", True, 32, 11)
    make_gptq("gptq-2bit", 2, "gptq", False, 32, 12)
    make_gptq("gptq-8bit-v2", 8, "gptq_v2", False, 64, 13)
    make_gptq_sharded()
    make_awq()
    make_bitnet()
    make_mxfp4()
    make_modelopt_fp8()
    make_modelopt_nvfp4()
    make_modelopt_mixed()
    make_ct_nvfp4()
    make_modelopt_nvfp4_moe()
    make_ct_nvfp4_moe()
    make_modelopt_nvfp4_mellum()
    make_modelopt_nvfp4_nemotron_h()
    make_modelopt_nvfp4_nemotron_h_latent()
