#!/usr/bin/env python3
"""Tiny Qwen3-VL checkpoints (issue 27, its optional part), made the way
`make_multimodal.py` makes the others, into `qwen3vl/` (its own `hf/`,
`reference/` and, through `make_llamacpp.py`, `llama.cpp/`):

    /work/tools/venv4/bin/python tests/testdata/multimodal/make_qwen3vl.py   # transformers 4.57.6
    /work/tools/venv5/bin/python tests/testdata/multimodal/make_qwen3vl.py   # transformers 5.18
    PYTHONPATH=/work/tools/llama.cpp/gguf-py /work/tools/venv5/bin/python \\
        tests/testdata/multimodal/make_qwen3vl.py --llamacpp /work/tools/llama.cpp

    /work/tools/venv5/bin/python tests/testdata/multimodal/make_qwen3vl.py --bf16   # bf16/, from hf/qwen3-vl-t4

(names after the first three make only those: `qwen3-vl-tied`, `qwen3-vl-tied-t4`; `bf16` for
the converter's `--mmproj --outtype bf16` of `bf16/qwen3-vl-t4`).

Qwen3-VL's published checkpoints already have transformers' module paths
(`model.language_model.*`, `model.visual.*`, `lm_head.weight`), and both
transformers versions save them so.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
OUT = HERE / "qwen3vl"


def qwen3_vl(folder: Path):
    """Qwen3-VL: Qwen3's text block (Q/K norms, head_dim 16), 3 layers, interleaved M-RoPE sections
    [2, 3, 3]; a 3-block vision tower with deepstack mergers tapping blocks 1 and 2."""
    import make_multimodal as mm
    import transformers
    fam = mm.fam
    ids, excluded = mm.bpe_tokenizer(folder, "qwen2", mm.QWEN_IMAGE_TOKENS)
    bos, eos = excluded[0], excluded[2]
    rope = {"rope_type": "default", "mrope_section": [2, 3, 3], "mrope_interleaved": True}
    # 3 layers: llama.cpp (de3ff81) adds a deepstack input after each of the first n_deepstack_layers
    # layers, and fails (GGML_ASSERT ggml_can_repeat) when the last layer is one of them and not
    # every position is an output; real models have 3 deepstack layers among 28 or more.
    text = mm.text_args(bos_token_id=bos, eos_token_id=eos, head_dim=fam.HEAD_DIM, rope_scaling=rope,
                        rope_theta=5000000.0, tie_word_embeddings=False, num_hidden_layers=3)
    if mm.MAJOR >= 5:
        text.pop("rope_scaling")
        text.pop("rope_theta")
        text["rope_parameters"] = {**rope, "rope_theta": 5000000.0}
    # num_position_embeddings 16: a 4 x 4 grid of 8-pixel patches (the converter's image size, 32).
    vision = dict(depth=3, hidden_size=32, intermediate_size=64, num_heads=2, out_hidden_size=fam.HIDDEN,
                  patch_size=8, spatial_merge_size=2, temporal_patch_size=2, num_position_embeddings=16,
                  deepstack_visual_indexes=[1, 2])
    config = transformers.Qwen3VLConfig(
        text_config=text, vision_config=vision, image_token_id=ids["<|image_pad|>"],
        video_token_id=ids["<|video_pad|>"], vision_start_token_id=ids["<|vision_start|>"],
        vision_end_token_id=ids["<|vision_end|>"], tie_word_embeddings=False)
    pre = mm.preprocessor(32, [0.5, 0.5, 0.5], [0.5, 0.5, 0.5], image_processor_type="Qwen2VLImageProcessorFast",
                          processor_class="Qwen3VLProcessor", patch_size=8, merge_size=2,
                          temporal_patch_size=2)
    pre["size"] = {"shortest_edge": 32 * 32, "longest_edge": 64 * 64}
    return config, transformers.Qwen3VLForConditionalGeneration, pre, excluded


def qwen3_vl_tied(folder: Path):
    """The same shapes with tied embeddings (no lm_head.weight), as Qwen3-VL-2B and -4B are."""
    config, model_cls, pre, excluded = qwen3_vl(folder)
    config.tie_word_embeddings = True
    config.text_config.tie_word_embeddings = True
    return config, model_cls, pre, excluded


def qwen3_vl_moe(folder: Path):
    """Qwen3-VL-MoE: the same shapes, each layer's MLP 4 experts (2 used) of 16 rows, no shared
    expert. transformers 4.57.6 keeps the experts packed and transposed (`gate_up_proj`
    [experts, hidden, 2 x ff], `down_proj` [experts, ff, hidden]), as the Hub's checkpoints and
    5.18's default save have them; 5.18's own (`save_original_format=False`) is
    [experts, 2 x ff, hidden] and [experts, hidden, ff]."""
    import transformers
    base, _, pre, excluded = qwen3_vl(folder)
    text = base.text_config.to_dict()
    for k in ("model_type", "transformers_version", "architectures", "dtype", "torch_dtype"):
        text.pop(k, None)
    # 2 x ff (32) differs from hidden (64): the two layouts are told apart by shape.
    text.update(num_experts=4, num_experts_per_tok=2, moe_intermediate_size=16, decoder_sparse_step=1,
                mlp_only_layers=[], norm_topk_prob=True)
    vision = base.vision_config.to_dict()
    for k in ("model_type", "transformers_version", "architectures", "dtype", "torch_dtype"):
        vision.pop(k, None)
    config = transformers.Qwen3VLMoeConfig(
        text_config=text, vision_config=vision, image_token_id=base.image_token_id,
        video_token_id=base.video_token_id, vision_start_token_id=base.vision_start_token_id,
        vision_end_token_id=base.vision_end_token_id, tie_word_embeddings=False)
    pre["processor_class"] = "Qwen3VLProcessor"
    return config, transformers.Qwen3VLMoeForConditionalGeneration, pre, excluded


FIXTURES = {"qwen3-vl": (qwen3_vl, 201), "qwen3-vl-tied": (qwen3_vl_tied, 202),
            "qwen3-vl-moe": (qwen3_vl_moe, 203)}


def make_checkpoints(names: list[str]) -> None:
    import make_multimodal as mm
    # make_multimodal.make writes under its module's HERE, from its FIXTURES table.
    mm.HERE = OUT
    mm.FIXTURES = {name: make for name, (make, _) in FIXTURES.items()}
    for name in names or list(FIXTURES):
        ref = mm.make(name, seed=FIXTURES[name][1])
        print(f"{name}-{mm.SUFFIX}: greedy {ref['greedy']}, margins {ref['greedy_margins']}")


# Named as the F32 fixture: the converter's general.name comes from the folder's name
# (and a "bf16" in it would make gguf-py's name heuristics split basename and finetune).
BF16 = OUT / "bf16" / "qwen3-vl-t4"


def make_bf16_copy(source: Path | None = None, dest: Path | None = None) -> None:
    """`hf/qwen3-vl-t4` (or `source`) with its weights cast to BF16 (torch), as Qwen3-VL is published: the
    converter writes some vision tensors as F32 whatever the source (position embeddings, 1-D)."""
    import shutil
    import torch
    from safetensors.torch import load_file, save_file
    source = source or OUT / "hf" / "qwen3-vl-t4"
    dest = dest or BF16
    if dest.exists():
        shutil.rmtree(dest)
    dest.mkdir(parents=True)
    for f in sorted(source.iterdir()):
        if f.suffix == ".safetensors":
            tensors = {k: v.to(torch.bfloat16) for k, v in load_file(f).items()}
            save_file(tensors, dest / f.name, metadata={"format": "pt"})
        else:
            shutil.copy(f, dest / f.name)
    print(f"bf16/{dest.name}: BF16 copy of hf/{source.name}")


def make_bf16_manifest(ml, llama_cpp: str, folder: Path | None = None, out_json: Path | None = None) -> None:
    """The converter's `--mmproj --outtype bf16` of the BF16 copy (or of `folder`, into `out_json`)."""
    import subprocess
    import tempfile
    fam = ml.fam
    folder = folder or BF16
    out_json = out_json or OUT / "llama.cpp" / "qwen3-vl-t4-bf16-mmproj-bf16.json"
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "mmproj.gguf"
        subprocess.run([sys.executable, str(Path(llama_cpp) / "convert_hf_to_gguf.py"), str(folder), "--mmproj",
                        "--outtype", "bf16", "--outfile", str(out)], capture_output=True, check=True)
        made_by = f"llama.cpp {fam.llama_cpp_commit(Path(llama_cpp))}: convert_hf_to_gguf.py --mmproj --outtype bf16"
        out_json.write_text(json.dumps(fam.manifest(out, made_by), indent=1) + "\n")
    print(f"bf16/{folder.name}: {out_json.name}")


def make_manifests(llama_cpp: str, names: list[str]) -> None:
    # Loaded under another name: it imports the families' make_llamacpp as make_llamacpp.
    import importlib.util
    spec = importlib.util.spec_from_file_location("multimodal_llamacpp", HERE / "make_llamacpp.py")
    ml = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(ml)
    ml.HERE = OUT
    # The vision GGUF once per class: the tied fixtures' vision towers are made the same way.
    ml.MMPROJ = ["qwen3-vl-t4", "qwen3-vl-t5", "qwen3-vl-moe-t4"]
    # The converter reads only the Hub's transposed experts: from transformers 5's own layout
    # (qwen3-vl-moe-t5) it would write wrong tensors, so it is judged by transformers alone.
    every = sorted(p.name for p in (OUT / "hf").iterdir() if p.name != "qwen3-vl-moe-t5")
    if names != ["bf16"]:
        sys.argv = [sys.argv[0], llama_cpp, *(names or every)]
        ml.main()
    if not names or "bf16" in names:
        make_bf16_manifest(ml, llama_cpp)


if __name__ == "__main__":
    sys.path.insert(0, str(HERE))
    if sys.argv[1:2] == ["--llamacpp"]:
        make_manifests(sys.argv[2] if len(sys.argv) > 2 else "/work/tools/llama.cpp", sys.argv[3:])
    elif sys.argv[1:2] == ["--bf16"]:
        make_bf16_copy()
    else:
        make_checkpoints(sys.argv[1:])
