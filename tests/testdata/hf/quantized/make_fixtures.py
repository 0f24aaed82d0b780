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
  with the tokenizer's pre-tokenizer hash check answered "default".

Tests and CI read only the committed outputs.
"""

import hashlib
import json
import os
import runpy
import shutil
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


def base_weights(seed: int) -> dict[str, torch.Tensor]:
    """Seeded float32 weights of the tiny Qwen2, shapes as transformers makes them."""
    g = torch.Generator().manual_seed(seed)
    h, i, kv = 64, 96, 32
    shapes = {
        "model.embed_tokens.weight": (512, h),
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
          llama_drop: tuple[str, ...] = (), llama: bool = True, llama_args: tuple[str, ...] = ()):
    folder = HERE / name
    shutil.rmtree(folder, ignore_errors=True)
    folder.mkdir()
    cfg = dict(config or CONFIG)
    cfg["quantization_config"] = quantization_config
    (folder / "config.json").write_text(json.dumps(cfg, indent=2) + "\n")
    if tokenizer:
        for f in ("tokenizer.json", "tokenizer_config.json"):
            shutil.copy(TOKENIZER / f, folder / f)
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
    if LLAMA is not None and tokenizer and llama:
        expected["llamacpp"] = run_llamacpp(folder, {k: v for k, v in tensors.items()
                                                     if not k.endswith(llama_drop)} if llama_drop else None,
                                         llama_args)
    (folder / "expected.json").write_text(json.dumps(expected, indent=2) + "\n")


def run_llamacpp(folder: Path, tensors: dict | None, args: tuple[str, ...]) -> dict:
    """llama.cpp's converter, --outtype f32; the sha256 of each tensor's data.

    `tensors`: a single-file checkpoint to convert instead of the folder's (llama.cpp
    cannot map compressed-tensors' unused activation scales, so they are left out).
    """
    if tensors is not None:
        copy = Path(tempfile.mkdtemp())
        for f in ("config.json", "tokenizer.json", "tokenizer_config.json"):
            shutil.copy(folder / f, copy / f)
        save_file(tensors, copy / "model.safetensors", metadata={"format": "pt"})
        folder = copy
    sys.path.insert(0, str(LLAMA))
    sys.path.insert(0, str(LLAMA / "gguf-py"))
    import gguf  # noqa: E402
    from conversion.base import TextModel  # noqa: E402
    TextModel.get_vocab_base_pre = lambda self, tokenizer: "default"
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "out.gguf"
        argv = sys.argv
        sys.argv = ["convert_hf_to_gguf.py", str(folder), "--outtype", "f32", "--outfile", str(out), *args]
        try:
            runpy.run_path(str(LLAMA / "convert_hf_to_gguf.py"), run_name="__main__")
        except SystemExit as e:
            if e.code not in (0, None):
                raise
        finally:
            sys.argv = argv
        reader = gguf.GGUFReader(out)
        result = {}
        for t in reader.tensors:
            assert t.tensor_type == gguf.GGMLQuantizationType.F32, t.name
            data = np.asarray(t.data, dtype="<f4")
            result[t.name] = {"shape": [int(d) for d in reversed(t.shape.tolist())],
                              "sha256": hashlib.sha256(data.tobytes()).hexdigest()}
        return dict(sorted(result.items()))


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


def make_gptq(name: str, bits: int, fmt: str, act_order: bool, group: int, seed: int):
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
          "numpy: scales[g_idx] * (q - zero), GPTQModel's dequantize_weight")


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
    experts, hidden, inter = 2, 64, 48
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


if __name__ == "__main__":
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
    make_awq()
    make_bitnet()
    make_mxfp4()
