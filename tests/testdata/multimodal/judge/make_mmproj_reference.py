#!/usr/bin/env python3
"""transformers' image features after the projector, for each tiny checkpoint
whose vision GGUF (`--mmproj`) aprkit writes: the reference
`tests/interop/mmproj_judge_test.ts` holds llama.cpp's multimodal runtime
(libmtmd, through `tests/interop/mtmd_embed/`) to on aprkit's files.

    /work/tools/venv-mmproj/bin/python tests/testdata/multimodal/judge/make_mmproj_reference.py [NAME...]

(`venv-mmproj` is venv5 — torch 2.13 CPU, transformers 5.18 — plus Pillow,
which transformers' image processors need: a venv whose `venv5.pth` adds
venv5's site-packages, and `pip install --no-deps pillow==11.3.0`.)

For each fixture it makes one RGB image from a fixed generator (`pixels`,
which the test repeats), of a size neither side resizes: the processor's
pixel budget is given where llama.cpp's and transformers' defaults would pick
different sizes (`PROCESSOR`). transformers' slow (PIL/numpy) image processor
makes the pixel values; `get_image_features` of the checkpoint (eager
attention, float32) gives the features the language model receives, for
Qwen3-VL the main merger's followed by the deepstack mergers' along the
width, as llama.cpp's mmproj output lays them out, for Pixtral (Mistral 3)
with the [IMG_BREAK] embedding between the rows (`with_image_breaks`), for Llama 4 followed by
its `multi_modal_projector` (its `get_image_features` stops at the vision adapter; `project`).
Writes `<name>.json`:
the image's size and generator, the features' shape and values (float32,
9 significant digits), and the largest magnitude (so a test can scale its
tolerance).

For each audio tower (`AUDIO`) it writes `audio/<name>.json` the same way for
one clip (`clip`: 1 s at 16 kHz, two sines, which the test repeats), from
`get_audio_features` with transformers' default attention (sdpa; see
`audio_features`). Gemma 4's conformer: `embd` from log-mel features floored as
llama.cpp floors them, `embd_stock_floor` from the feature extractor's own (see
`log_mel`). Gemma 4 Unified's embedder: `embd` from its extractor's frames of
640 raw samples (llama.cpp's gemma4ua frames alike).
"""

from __future__ import annotations

import inspect
import json
import sys
from pathlib import Path

import numpy as np
import torch
import transformers
from transformers import AutoConfig, AutoImageProcessor

HERE = Path(__file__).resolve().parent
DATA = HERE.parent.parent

# name: (checkpoint folder, image side in pixels, processor keyword arguments)
FIXTURES: dict[str, tuple[str, int, dict]] = {
    "gemma3": ("multimodal/hf/gemma3-t5", 32, {}),
    "qwen2-vl": ("multimodal/hf/qwen2-vl-t5", 64, {}),
    # 128 x 128: an 8 x 8 grid of merged patches in windows of 7 (112 px), so window
    # attention (7 x 7, 7 x 1, 1 x 7, 1 x 1) is exercised; the processor's default budget
    # (4096 pixels) would shrink it to 64 x 64, one window.
    "qwen2.5-vl": ("multimodal/hf/qwen2.5-vl-t5", 128, {"size": {"shortest_edge": 1024, "longest_edge": 16384}}),
    "qwen3.5-vl": ("multimodal/hf/qwen3.5-vl-t5", 64, {}),
    "qwen3.5-moe-vl": ("multimodal/hf/qwen3.5-moe-vl-t5", 64, {}),
    # GLM-4V's processor counts the two temporal copies against longest_edge
    # (4096 keeps 32 x 32); llama.cpp keeps 64 x 64 (16 tokens).
    "glm4v": ("multimodal/hf/glm4v-t5", 64, {"size": {"shortest_edge": 1024, "longest_edge": 8192}}),
    "glm4v-moe": ("multimodal/hf/glm4v-moe-t5", 64, {"size": {"shortest_edge": 1024, "longest_edge": 8192}}),
    "qwen3-vl": ("multimodal/qwen3vl/hf/qwen3-vl-t5", 64, {}),
    "qwen3-vl-moe": ("multimodal/qwen3vl/hf/qwen3-vl-moe-t5", 64, {}),
    "qwen4exp-cg": ("families/hf/qwen4exp-cg", 256, {}),
    "smolvlm": ("multimodal/hf/smolvlm-t5", 32, {}),
    # LFM2-VL's processor needs torchvision (not in this venv): `lfm2_vl_inputs` makes its
    # inputs as its code does for an image within the token budget (64 tokens of 256 x 256
    # pixels, patch 16: not resized, not split), unpadded.
    "lfm2-vl": ("multimodal/hf/lfm2-vl-t5", 256, {"inputs": "lfm2_vl_inputs"}),
    # Gemma 4's processor scales every image to its token budget (a 64 x 64 image to
    # 768 x 768, 256 tokens); llama.cpp's budget gives 432 x 432 (81 tokens), which it
    # keeps as it is: so 432 x 432, not resized by either.
    "gemma4-cg": ("families/hf/gemma4-cg", 432, {"do_resize": False}),
    "gemma4-audio": ("families/hf/gemma4-audio", 432, {"do_resize": False}),
    # Gemma 4 Unified's processor needs torchvision (for its resize only): `gemma4_unified_inputs`
    # runs its own patch code on an image llama.cpp keeps (108 x 108: 81 tokens of 3 x 3 patches of 4).
    "gemma4-unified": ("families/hf/gemma4-unified", 108, {"inputs": "gemma4_unified_inputs"}),
    "idefics3": ("multimodal/hf/idefics3-t5", 32, {}),
    # Pixtral: 64 x 64 (16 merged tokens; llama.cpp enlarges an image under 8, the fixture's
    # processor would shrink one past its longest_edge of 32). "image_break": the [IMG_BREAK]
    # token's embedding after each row of merged patches but the last (the processor's
    # `[IMG] * w + [IMG_BREAK]` rows, the last break replaced by [IMG_END]), as the language
    # model receives them and llama.cpp's pixtral graph lays them out.
    "mistral3": ("multimodal/hf/mistral3-t5", 64, {"size": {"longest_edge": 64}, "image_break": True}),
    "ministral3-vl": ("multimodal/hf/ministral3-vl-t5", 64, {"size": {"longest_edge": 64}, "image_break": True}),
    # Llama 4: one 64 x 64 tile (the tower's image_size), 64 patches pixel-shuffled into 16 tokens;
    # neither side tiles or resizes an image of the tile's size. Its processor needs torchvision:
    # `llama4_inputs` makes its one tile. "project": get_image_features stops at the vision
    # adapter; the model's forward applies multi_modal_projector, as llama.cpp's mmproj does.
    "llama4": ("multimodal/hf/llama4-t5", 64, {"inputs": "llama4_inputs", "project": True}),
}

# name: (checkpoint folder, input features: "log-mel" or "waveform"), for the audio towers judged
AUDIO: dict[str, tuple[str, str]] = {
    "gemma4-audio": ("families/hf/gemma4-audio", "log-mel"),
    "gemma4-unified": ("families/hf/gemma4-unified", "waveform"),
}

SAMPLE_RATE = 16000


def pixels(side: int) -> np.ndarray:
    """side x side x 3 bytes from a 31-bit LCG (glibc's constants), byte = bits 16-23."""
    out = np.empty(side * side * 3, dtype=np.uint8)
    x = 12345
    for i in range(out.size):
        x = (1103515245 * x + 12345) % 2**31
        out[i] = (x >> 16) & 255
    return out.reshape(side, side, 3)


def lfm2_vl_inputs(folder: Path, image: np.ndarray) -> dict:
    """Lfm2VlImageProcessorFast's output for one image it neither resizes nor splits:
    rescaled and normalized, then `convert_image_to_patches` (row-major patches of
    patch x patch x channels), with an all-ones attention mask and its patch grid."""
    pre = json.loads((folder / "preprocessor_config.json").read_text())
    p = pre["encoder_patch_size"]
    x = (image.astype(np.float32) * np.float32(pre["rescale_factor"]) - np.float32(pre["image_mean"])) \
        / np.float32(pre["image_std"])
    h, w, c = x.shape
    patches = x.reshape(h // p, p, w // p, p, c).transpose(0, 2, 1, 3, 4).reshape(1, (h // p) * (w // p), p * p * c)
    return {
        "pixel_values": torch.from_numpy(np.ascontiguousarray(patches)),
        "pixel_attention_mask": torch.ones(1, patches.shape[1], dtype=torch.long),
        "spatial_shapes": torch.tensor([[h // p, w // p]]),
    }


def gemma4_unified_inputs(folder: Path, image: np.ndarray) -> dict:
    """Gemma4UnifiedImageProcessor's `_preprocess` without its resize (the image is kept as it is):
    rescaled (no normalization, as its preprocessor_config says), its `convert_image_to_patches`,
    position ids, `patches_merge` and `pad_along_first_dim`. Its module imports torchvision's
    functional API (used only to resize) at the top, so that import is stubbed."""
    import importlib.util
    import types
    for name in ("torchvision", "torchvision.transforms", "torchvision.transforms.v2",
                 "torchvision.transforms.v2.functional"):
        sys.modules.setdefault(name, types.ModuleType(name))
    sys.modules["torchvision.transforms.v2.functional"].InterpolationMode = object  # an annotation
    # transformers' lazy module hands out a placeholder once it has seen no torchvision: load the file.
    name = "transformers.models.gemma4_unified.image_processing_gemma4_unified"
    path = Path(transformers.__file__).parent / "models/gemma4_unified/image_processing_gemma4_unified.py"
    spec = importlib.util.spec_from_file_location(name, path)
    ip = importlib.util.module_from_spec(spec)
    sys.modules[name] = ip
    spec.loader.exec_module(ip)

    pre = json.loads((folder / "preprocessor_config.json").read_text())
    assert pre["do_rescale"] and not pre["do_normalize"]
    p, k, soft = pre["patch_size"], pre["pooling_kernel_size"], pre["max_soft_tokens"]
    x = torch.from_numpy(image).permute(2, 0, 1).float() * pre["rescale_factor"]
    patches = ip.convert_image_to_patches(x, p)
    ph, pw = x.shape[-2] // p, x.shape[-1] // p
    grid = torch.meshgrid(torch.arange(pw), torch.arange(ph), indexing="xy")
    positions = torch.stack(grid, dim=-1).reshape(patches.shape[0], 2)
    merged, merged_pos = ip.patches_merge(patches.unsqueeze(0), positions.unsqueeze(0), patches.shape[0] // (k * k))
    merged, merged_pos = ip.pad_along_first_dim(merged.squeeze(0), merged_pos.squeeze(0), soft)
    return {"pixel_values": merged.unsqueeze(0), "image_position_ids": merged_pos.unsqueeze(0)}


def llama4_inputs(folder: Path, image: np.ndarray) -> dict:
    """Llama4ImageProcessorFast's output for an image of its tile size: its best fit is that one
    tile, so the resize and the padding leave it as it is and no global tile is added (only
    images of more than one tile get one); rescaled and normalized, channels first, one tile."""
    pre = json.loads((folder / "preprocessor_config.json").read_text())
    assert image.shape[:2] == (pre["size"]["height"], pre["size"]["width"])
    x = (image.astype(np.float32) * np.float32(pre["rescale_factor"]) - np.float32(pre["image_mean"])) \
        / np.float32(pre["image_std"])
    return {"pixel_values": torch.from_numpy(np.ascontiguousarray(x.transpose(2, 0, 1)))[None]}


def with_image_breaks(model, folder: Path, feat: torch.Tensor, inputs: dict) -> torch.Tensor:
    """Pixtral's features with the [IMG_BREAK] embedding (its id as PixtralProcessor finds it)
    after each row of merged patches but the last."""
    from transformers import AutoTokenizer
    break_id = AutoTokenizer.from_pretrained(folder).convert_tokens_to_ids("[IMG_BREAK]")
    embedding = model.get_input_embeddings()(torch.tensor([break_id]))
    height, width = (int(v) for v in inputs["image_sizes"][0])
    step = model.config.vision_config.patch_size * model.config.spatial_merge_size
    rows = feat.reshape(height // step, width // step, feat.shape[-1])
    parts = []
    for i, row in enumerate(rows):
        parts.append(row)
        if i < rows.shape[0] - 1:
            parts.append(embedding)
    return torch.cat(parts)


def features(folder: Path, image: np.ndarray, extra: dict) -> np.ndarray:
    extra = dict(extra)
    image_break = extra.pop("image_break", False)
    project = extra.pop("project", False)
    config = AutoConfig.from_pretrained(folder)
    model = getattr(transformers, config.architectures[0]).from_pretrained(
        folder, dtype=torch.float32, attn_implementation="eager").eval()
    if "inputs" in extra:
        inputs = globals()[extra["inputs"]](folder, image)
    else:
        processor = AutoImageProcessor.from_pretrained(folder, backend="pil")
        inputs = processor(images=image, return_tensors="pt", **extra)
    inner = getattr(model, "model", model)  # Llama 4 holds its towers itself
    wanted = inspect.signature(inner.get_image_features).parameters
    with torch.no_grad():
        out = inner.get_image_features(**{k: v for k, v in inputs.items() if k in wanted})
        if project:
            out.pooler_output = inner.multi_modal_projector(out.last_hidden_state)
    feat = out.pooler_output
    if isinstance(feat, (list, tuple)):
        feat = torch.cat([f.reshape(-1, f.shape[-1]) for f in feat])
    deepstack = getattr(out, "deepstack_features", None)
    if deepstack:
        # one tuple per tapped block, split per image: one image here
        parts = [d[0] if isinstance(d, (list, tuple)) else d for d in deepstack]
        feat = torch.cat([feat] + parts, dim=-1)
    if image_break:
        with torch.no_grad():
            feat = with_image_breaks(model, folder, feat.reshape(-1, feat.shape[-1]), inputs)
    return feat.reshape(-1, feat.shape[-1]).numpy()


def clip() -> np.ndarray:
    """1 s at 16 kHz: 0.3 sin(2 pi 440 t) + 0.2 sin(2 pi 1250 t), in float64, rounded to float32."""
    t = np.arange(SAMPLE_RATE) / SAMPLE_RATE
    return (0.3 * np.sin(2 * np.pi * 440 * t) + 0.2 * np.sin(2 * np.pi * 1250 * t)).astype(np.float32)


def log_mel(samples: np.ndarray, floor: str) -> dict:
    """Gemma4AudioFeatureExtractor's input features, with its defaults (the fixture has no audio
    preprocessor config; llama.cpp hard-codes the same 320/160/512 frame, hop and FFT). "stock": its own log(mel + 0.001). "llama.cpp":
    log(max(mel, 0.001)), the floor llama.cpp's Gemma 4 preprocessing hard-codes (same frames,
    FFT, window and filters otherwise), made as max(log mel, log 0.001) from the extractor's
    output with no floor; the clip's quiet bins are 0.69 apart between the two."""
    from transformers import Gemma4AudioFeatureExtractor
    extractor = Gemma4AudioFeatureExtractor()
    if floor == "stock":
        return extractor([samples], return_tensors="pt")
    floor_value = float(extractor.mel_floor)
    extractor.mel_floor = np.array(0.0)
    with np.errstate(divide="ignore"):
        out = extractor([samples], return_tensors="pt")
    out["input_features"] = torch.clamp(out["input_features"], min=float(np.float32(np.log(floor_value))))
    return out


def waveform_frames(samples: np.ndarray) -> dict:
    """Gemma4UnifiedAudioFeatureExtractor's input features (its defaults: frames of 640 samples)."""
    from transformers.models.gemma4_unified.feature_extraction_gemma4_unified import (
        Gemma4UnifiedAudioFeatureExtractor,
    )
    return Gemma4UnifiedAudioFeatureExtractor()(samples, return_tensors="pt")


def audio_features(folder: Path, floor: str | None) -> np.ndarray:
    """`get_audio_features`'s pooler output (the embedder's, what the language model receives).
    Default attention (sdpa), not eager: under eager transformers 5.18's Gemma 4 audio attention
    applies create_bidirectional_mask's additive float mask as a boolean one (masked_fill on
    mask.logical_not()), attending exactly where it should not (huggingface/transformers#48818):
    2.07 off llama.cpp on this clip where sdpa's boolean mask is 0.0021 off."""
    inputs = waveform_frames(clip()) if floor is None else log_mel(clip(), floor)
    config = AutoConfig.from_pretrained(folder)
    model = getattr(transformers, config.architectures[0]).from_pretrained(
        folder, dtype=torch.float32, attn_implementation="sdpa").eval()
    with torch.no_grad():
        out = model.model.get_audio_features(inputs["input_features"], inputs["input_features_mask"])
    return out.pooler_output.reshape(-1, out.pooler_output.shape[-1]).numpy()


def values(feat: np.ndarray) -> list[float]:
    return [float(f"{v:.9g}") for v in feat.reshape(-1).tolist()]


def main(names: list[str]) -> None:
    torch.manual_seed(0)
    for name in names or list(AUDIO):
        if name not in AUDIO:
            continue
        folder, kind = AUDIO[name]
        feat = audio_features(DATA / folder, "llama.cpp" if kind == "log-mel" else None)
        record = {
            "fixture": name,
            "checkpoint": folder,
            "transformers": transformers.__version__,
            "audio": {"sample_rate": SAMPLE_RATE, "samples": SAMPLE_RATE,
                      "signal": "0.3 sin(2 pi 440 t) + 0.2 sin(2 pi 1250 t)"},
            "attn_implementation": "sdpa",
            "input_features": kind,
            "n_tokens": int(feat.shape[0]),
            "n_embd": int(feat.shape[1]),
            "max_abs": float(np.abs(feat).max()),
            "embd": values(feat),
        }
        if kind == "log-mel":
            record["mel_floor"] = "log(max(mel, 0.001)) (llama.cpp's); embd_stock_floor: log(mel + 0.001)"
            record["embd_stock_floor"] = values(audio_features(DATA / folder, "stock"))
        (HERE / "audio").mkdir(exist_ok=True)
        (HERE / "audio" / f"{name}.json").write_text(json.dumps(record) + "\n")
        print(f"{name} (audio): {feat.shape[0]} x {feat.shape[1]}, max |x| {record['max_abs']:.4g}")
    for name in names or list(FIXTURES):
        if name not in FIXTURES:
            continue
        folder, side, extra = FIXTURES[name]
        feat = features(DATA / folder, pixels(side), extra)
        record = {
            "fixture": name,
            "checkpoint": folder,
            "transformers": transformers.__version__,
            "image": {"width": side, "height": side, "pixels": "lcg31(12345)"},
            "processor": extra,
            "n_tokens": int(feat.shape[0]),
            "n_embd": int(feat.shape[1]),
            "max_abs": float(np.abs(feat).max()),
            "embd": values(feat),
        }
        (HERE / f"{name}.json").write_text(json.dumps(record) + "\n")
        print(f"{name}: {feat.shape[0]} x {feat.shape[1]}, max |x| {record['max_abs']:.4g}")


if __name__ == "__main__":
    main(sys.argv[1:])
