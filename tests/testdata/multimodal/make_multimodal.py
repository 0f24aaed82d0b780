#!/usr/bin/env python3
"""Tiny random image-text-to-text checkpoints, and transformers' text-only
next-token log-probabilities for each (issue 27 item 5).

The Hub's key layout (`language_model.model.*`, `vision_tower.*`,
`multi_modal_projector.*`) is what transformers 4 saves; transformers 5 saves
`model.language_model.*`, `model.vision_tower.*` (its modules' own paths,
written with `save_original_format=False`; fine-tunes saved by transformers
4.52–4.56 have them). Run it with both:

    /work/tools/venv4/bin/python tests/testdata/multimodal/make_multimodal.py   # transformers 4.57.6
    /work/tools/venv5/bin/python tests/testdata/multimodal/make_multimodal.py   # transformers 5.18

Each run writes, next to itself, `hf/<fixture>-t<major>/` (what
`save_pretrained` wrote: config.json, F32 weights in shards, tokenizer files,
`preprocessor_config.json`) and `reference/<fixture>-t<major>.json` in the
format of `tests/testdata/families/reference/` (40 prompt token ids, 4 greedy
steps with the 10 likeliest tokens). The language model's shapes, weights
deviation and tokenizers are those of the family fixtures
(`tests/testdata/families/make_families.py`, imported); the vision towers are
as small as each config allows. The tokenizers hold the image tokens the
processors use (`<image>`, `<start_of_image>`, …) as special tokens, and the
configs name their ids. `ministral3-vl` (Ministral 3 as published: a
`ministral3` text config) is made by transformers 5 only, in the Hub's layout:

    /work/tools/venv5/bin/python tests/testdata/multimodal/make_multimodal.py ministral3-vl
"""

from __future__ import annotations

import io
import json
import random
import shutil
import sys
from pathlib import Path

import sentencepiece as spm
import torch
import transformers

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "families"))
import make_families as fam  # noqa: E402  (shapes, corpus, tokenizer helpers, randomize)

MAJOR = int(transformers.__version__.split(".")[0])
SUFFIX = f"t{MAJOR}"

GEMMA_IMAGE_TOKENS = ["<start_of_image>", "<end_of_image>", "<image_soft_token>"]
LLAVA_IMAGE_TOKENS = ["<image>"]
PIXTRAL_IMAGE_TOKENS = ["[IMG]", "[IMG_BREAK]", "[IMG_END]"]
LLAMA4_IMAGE_TOKENS = ["<|image_start|>", "<|image_end|>", "<|image|>", "<|patch|>",
                       "<|tile_x_separator|>", "<|tile_y_separator|>"]
QWEN_IMAGE_TOKENS = ["<|vision_start|>", "<|vision_end|>", "<|vision_pad|>", "<|image_pad|>",
                     "<|video_pad|>"]


def gemma_tokenizer(folder: Path) -> tuple[dict[str, int], list[int]]:
    """SentencePiece with Gemma's special ids and the image tokens as control symbols."""
    out = io.BytesIO()
    spm.SentencePieceTrainer.train(
        sentence_iterator=iter(fam.corpus()), model_writer=out, vocab_size=fam.VOCAB, model_type="bpe",
        byte_fallback=True, character_coverage=1.0, split_digits=True, num_threads=1, minloglevel=2,
        normalization_rule_name="identity", pad_id=0, eos_id=1, bos_id=2, unk_id=3, pad_piece="<pad>",
        eos_piece="<eos>", bos_piece="<bos>", unk_piece="<unk>", control_symbols=GEMMA_IMAGE_TOKENS,
    )
    model = out.getvalue()
    (folder / "tokenizer.model").write_bytes(model)
    cls = transformers.GemmaTokenizer if MAJOR >= 5 else transformers.GemmaTokenizerFast
    hf = cls.from_pretrained(folder)
    hf.save_pretrained(folder)
    config_path = folder / "tokenizer_config.json"
    config = json.loads(config_path.read_text())
    config.pop("vocab_file", None)
    config_path.write_text(json.dumps(config, indent=2, ensure_ascii=False) + "\n")
    sp = spm.SentencePieceProcessor(model_proto=model)
    ids = {t: sp.piece_to_id(t) for t in GEMMA_IMAGE_TOKENS}
    return ids, [i for i in range(sp.vocab_size()) if sp.is_control(i) or sp.is_unknown(i)]


def bpe_tokenizer(folder: Path, kind: str, image_tokens: list[str]) -> tuple[dict[str, int], list[int]]:
    """Byte-level BPE (Llama 3's or Qwen2's regex) with the image tokens as special tokens."""
    if kind == "qwen2":
        specials = ["<|endoftext|>", "<|im_start|>", "<|im_end|>", *image_tokens]
        tok = fam.byte_level_bpe(fam.QWEN2_REGEX, specials)
        hf = transformers.PreTrainedTokenizerFast(
            tokenizer_object=tok, eos_token="<|endoftext|>", pad_token="<|endoftext|>")
    elif kind == "glm":
        # GLM's added tokens, which llama.cpp's converter looks up by name
        # (Glm4Model.set_vocab, _set_vocab_glm), before the image tokens.
        specials = ["<|endoftext|>", "[MASK]", "[gMASK]", "[sMASK]", "<sop>", "<eop>", "<|system|>",
                    "<|user|>", "<|assistant|>", "<|observation|>", *image_tokens]
        tok = fam.byte_level_bpe(fam.LLAMA3_REGEX, specials)
        hf = transformers.PreTrainedTokenizerFast(
            tokenizer_object=tok, eos_token="<|endoftext|>", pad_token="<|endoftext|>")
    else:
        specials = ["<|begin_of_text|>", "<|end_of_text|>", *image_tokens]
        tok = fam.byte_level_bpe(fam.LLAMA3_REGEX, specials)
        hf = transformers.PreTrainedTokenizerFast(
            tokenizer_object=tok, bos_token=specials[0], eos_token=specials[1])
    hf.save_pretrained(folder)
    return {t: tok.token_to_id(t) for t in image_tokens}, [tok.token_to_id(s) for s in specials]


def text_args(**extra) -> dict:
    return fam.common(**extra)


def preprocessor(size: int, mean: list[float], std: list[float], **extra) -> dict:
    return {"image_mean": mean, "image_std": std, "size": {"height": size, "width": size},
            "do_normalize": True, "do_rescale": True, "rescale_factor": 1 / 255, "do_resize": True,
            "resample": 3, **extra}


SIGLIP_MEAN = [0.5, 0.5, 0.5]
CLIP_MEAN = [0.48145466, 0.4578275, 0.40821073]
CLIP_STD = [0.26862954, 0.26130258, 0.27577711]


def gemma3(folder: Path):
    ids, excluded = gemma_tokenizer(folder)
    text = text_args(head_dim=fam.HEAD_DIM, query_pre_attn_scalar=fam.HEAD_DIM, sliding_window=16,
                     num_hidden_layers=6, pad_token_id=0, eos_token_id=1, bos_token_id=2,
                     rope_theta=1000000.0, rope_local_base_freq=10000.0,
                     rope_scaling={"rope_type": "linear", "factor": 8.0})
    if MAJOR >= 5:
        for k in ("rope_theta", "rope_local_base_freq", "rope_scaling"):
            text.pop(k)
        text["rope_parameters"] = {
            "full_attention": {"rope_type": "linear", "factor": 8.0, "rope_theta": 1000000.0},
            "sliding_attention": {"rope_type": "default", "rope_theta": 10000.0},
        }
    vision = dict(hidden_size=32, intermediate_size=64, num_hidden_layers=2, num_attention_heads=2,
                  image_size=32, patch_size=8, vision_use_head=False)
    config = transformers.Gemma3Config(
        text_config=text, vision_config=vision, mm_tokens_per_image=4,
        boi_token_index=ids["<start_of_image>"], eoi_token_index=ids["<end_of_image>"],
        image_token_index=ids["<image_soft_token>"])
    pre = preprocessor(32, SIGLIP_MEAN, [0.5, 0.5, 0.5], image_processor_type="Gemma3ImageProcessor",
                       processor_class="Gemma3Processor", image_seq_length=4)
    return config, transformers.Gemma3ForConditionalGeneration, pre, excluded + list(ids.values())


def mistral3(folder: Path):
    ids, excluded = bpe_tokenizer(folder, "llama3", PIXTRAL_IMAGE_TOKENS)
    text = transformers.MistralConfig(**text_args(head_dim=fam.HEAD_DIM, sliding_window=None))
    return pixtral_composite(text, ids, excluded)


def pixtral_composite(text, ids: dict[str, int], excluded: list[int]):
    """A Mistral 3 checkpoint around `text`: Pixtral tower, projector, processor."""
    # 3 layers: the converter maps the projector's linear_{1,2} through its per-block table.
    vision = transformers.PixtralVisionConfig(hidden_size=32, intermediate_size=64, num_hidden_layers=3,
                                              num_attention_heads=2, image_size=32, patch_size=8,
                                              head_dim=16)
    # Untied, as Mistral Small 3.x: transformers 5.18's Mistral3Config would
    # otherwise tie at the top (true) against its text_config (false).
    config = transformers.Mistral3Config(vision_config=vision, text_config=text,
                                         image_token_index=ids["[IMG]"], spatial_merge_size=2,
                                         tie_word_embeddings=False)
    pre = preprocessor(32, CLIP_MEAN, CLIP_STD, image_processor_type="PixtralImageProcessor",
                       processor_class="PixtralProcessor", patch_size={"height": 8, "width": 8})
    pre["size"] = {"longest_edge": 32}
    return config, transformers.Mistral3ForConditionalGeneration, pre, excluded


def ministral3_vl(folder: Path):
    """Ministral 3 as published: `Mistral3ForConditionalGeneration` whose text
    model is `ministral3` (the `ministral3` family fixture's YaRN with
    llama_4_scaling_beta, original context 16 so the temperature steps in the
    prompt) beside the `mistral3` fixture's Pixtral tower."""
    if MAJOR < 5:
        return None  # transformers 4.57.6 has no Ministral3Config
    ids, excluded = bpe_tokenizer(folder, "llama3", PIXTRAL_IMAGE_TOKENS)
    text = transformers.Ministral3Config(**text_args(
        head_dim=fam.HEAD_DIM, rope_parameters=fam.MINISTRAL3_ROPE, pad_token_id=None,
        bos_token_id=excluded[0], eos_token_id=excluded[1]))
    return pixtral_composite(text, ids, excluded)


def qwen2_5_vl(folder: Path):
    ids, excluded = bpe_tokenizer(folder, "qwen2", QWEN_IMAGE_TOKENS)
    # Qwen2.5-VL's ids, as its config has them: BOS <|endoftext|>, EOS <|im_end|>.
    bos, eos = excluded[0], excluded[2]
    text = text_args(bos_token_id=bos, eos_token_id=eos, rope_scaling={"type": "mrope", "mrope_section": [2, 3, 3]}, rope_theta=1000000.0,
                     tie_word_embeddings=False, sliding_window=None, max_window_layers=fam.LAYERS)
    if MAJOR >= 5:
        text.pop("rope_scaling")
        text.pop("rope_theta")
        text["rope_parameters"] = {"rope_type": "default", "mrope_section": [2, 3, 3],
                                   "rope_theta": 1000000.0}
    # 3 blocks: the converter maps merger.mlp.{0,2} through its per-block table, so depth must exceed 2.
    # window_size 112 (the published one): llama.cpp's qwen2.5vl_merger reads no window size and
    # always attends in windows of 112 pixels (aprkit refuses another for --mmproj). First made with
    # 32; only config.json changed (no weight depends on it; the reference is text-only).
    vision = dict(depth=3, hidden_size=32, intermediate_size=64, num_heads=2, out_hidden_size=fam.HIDDEN,
                  patch_size=8, spatial_merge_size=2, temporal_patch_size=2, window_size=112,
                  fullatt_block_indexes=[1])
    config = transformers.Qwen2_5_VLConfig(
        text_config=text, vision_config=vision, image_token_id=ids["<|image_pad|>"],
        video_token_id=ids["<|video_pad|>"], vision_start_token_id=ids["<|vision_start|>"],
        vision_end_token_id=ids["<|vision_end|>"])
    pre = preprocessor(32, CLIP_MEAN, CLIP_STD, image_processor_type="Qwen2VLImageProcessor",
                       processor_class="Qwen2_5_VLProcessor", patch_size=8, merge_size=2,
                       temporal_patch_size=2, min_pixels=32 * 32, max_pixels=64 * 64)
    pre["size"] = {"shortest_edge": 32 * 32, "longest_edge": 64 * 64}
    return config, transformers.Qwen2_5_VLForConditionalGeneration, pre, excluded


def qwen2_vl(folder: Path):
    """Qwen2-VL: the Qwen2.5-VL fixture's text model; its older vision tower (LayerNorm, fc1/fc2 MLP)."""
    ids, excluded = bpe_tokenizer(folder, "qwen2", QWEN_IMAGE_TOKENS)
    bos, eos = excluded[0], excluded[2]
    text = text_args(bos_token_id=bos, eos_token_id=eos, rope_scaling={"type": "mrope", "mrope_section": [2, 3, 3]},
                     rope_theta=1000000.0, tie_word_embeddings=False, sliding_window=None,
                     max_window_layers=fam.LAYERS)
    if MAJOR >= 5:
        text.pop("rope_scaling")
        text.pop("rope_theta")
        text["rope_parameters"] = {"rope_type": "default", "mrope_section": [2, 3, 3],
                                   "rope_theta": 1000000.0}
    # 3 blocks, as for Qwen2.5-VL (the converter's per-block table maps merger.mlp.{0,2}).
    vision = dict(depth=3, embed_dim=32, hidden_size=fam.HIDDEN, mlp_ratio=2, num_heads=2, patch_size=8,
                  spatial_merge_size=2, temporal_patch_size=2)
    config = transformers.Qwen2VLConfig(
        text_config=text, vision_config=vision, image_token_id=ids["<|image_pad|>"],
        video_token_id=ids["<|video_pad|>"], vision_start_token_id=ids["<|vision_start|>"],
        vision_end_token_id=ids["<|vision_end|>"])
    pre = preprocessor(32, CLIP_MEAN, CLIP_STD, image_processor_type="Qwen2VLImageProcessor",
                       processor_class="Qwen2VLProcessor", patch_size=8, merge_size=2,
                       temporal_patch_size=2, min_pixels=32 * 32, max_pixels=64 * 64)
    pre["size"] = {"shortest_edge": 32 * 32, "longest_edge": 64 * 64}
    return config, transformers.Qwen2VLForConditionalGeneration, pre, excluded


def llava(folder: Path):
    ids, excluded = bpe_tokenizer(folder, "llama3", LLAVA_IMAGE_TOKENS)
    text = transformers.LlamaConfig(**text_args())
    vision = transformers.CLIPVisionConfig(hidden_size=32, intermediate_size=64, num_hidden_layers=2,
                                           num_attention_heads=2, image_size=32, patch_size=8,
                                           projection_dim=32)
    config = transformers.LlavaConfig(vision_config=vision, text_config=text,
                                      image_token_index=ids["<image>"], image_seq_length=16)
    pre = preprocessor(32, CLIP_MEAN, CLIP_STD, image_processor_type="CLIPImageProcessor",
                       processor_class="LlavaProcessor", crop_size={"height": 32, "width": 32})
    pre["size"] = {"shortest_edge": 32}
    return config, transformers.LlavaForConditionalGeneration, pre, excluded


def llama4(folder: Path):
    """Llama 4: Scout's text shape in small (MoE with a shared expert on every
    second layer as Maverick, dense layers between; NoPE every fourth layer,
    chunked attention elsewhere; QK L2 norm; llama3 RoPE scaling with Scout's
    equal low/high frequency factors) and its vision tower (pixel-shuffle
    adapter, one-matrix projector)."""
    ids, excluded = bpe_tokenizer(folder, "llama3", LLAMA4_IMAGE_TOKENS)
    text = llama4_text_args(excluded)
    # 3 layers: the converter maps the adapter's fc1/fc2 through its per-block table.
    # The dimensions relate as Scout's do (hidden 1408, intermediate 5632, adapter and
    # projector 4096, text 5120): the pixel shuffle (ratio 0.5) gives hidden / 0.25 =
    # intermediate_size channels, which the adapter's fc1 takes; fc1 gives projector_input_dim,
    # fc2 keeps projector_output_dim (the same), which is the projector's vision_output_dim
    # input; the projector gives the text width. Each differs from the others here. A 64-pixel
    # tile of 8-pixel patches: 8 x 8 patches, 4 x 4 tokens after the shuffle (Scout: 12 x 12),
    # so the order llama.cpp gives the tokens in is told apart from transformers' (INTEROP).
    vision = dict(hidden_size=32, intermediate_size=128, num_hidden_layers=3, num_attention_heads=2,
                  image_size=64, patch_size=8, vision_output_dim=48, projector_input_dim=48,
                  projector_output_dim=48, pixel_shuffle_ratio=0.5)
    config = transformers.Llama4Config(
        text_config=text, vision_config=vision, image_token_index=ids["<|image|>"],
        boi_token_index=ids["<|image_start|>"], eoi_token_index=ids["<|image_end|>"])
    pre = preprocessor(64, SIGLIP_MEAN, [0.5, 0.5, 0.5], image_processor_type="Llama4ImageProcessorFast",
                       processor_class="Llama4Processor", max_patches=4, resize_to_max_canvas=False)
    pre["size"] = {"height": 64, "width": 64}
    return config, transformers.Llama4ForConditionalGeneration, pre, excluded


def llama4_text(folder: Path):
    """`Llama4ForCausalLM` (text only, as MobileLLM and text fine-tunes): the `llama4` fixture's text shape."""
    _, excluded = bpe_tokenizer(folder, "llama3", LLAMA4_IMAGE_TOKENS)
    config = transformers.Llama4TextConfig(**llama4_text_args(excluded))
    return config, transformers.Llama4ForCausalLM, None, excluded


def llama4_text_args(excluded: list[int]) -> dict:
    rope = {"rope_type": "llama3", "factor": 16.0, "low_freq_factor": 1.0, "high_freq_factor": 1.0,
            "original_max_position_embeddings": fam.ORIGINAL_CONTEXT}
    text = text_args(head_dim=fam.HEAD_DIM, num_hidden_layers=4, intermediate_size=32,
                     intermediate_size_mlp=fam.INTERMEDIATE, num_local_experts=4, num_experts_per_tok=1,
                     interleave_moe_layer_step=2, bos_token_id=excluded[0], eos_token_id=excluded[1],
                     pad_token_id=None)
    if MAJOR >= 5:
        text["rope_parameters"] = {**rope, "rope_theta": 500000.0}
    else:
        text["rope_scaling"] = rope
        text["rope_theta"] = 500000.0
    return text


def qwen3_5_vl(folder: Path, moe: bool = False):
    """Qwen3.5 as published (`Qwen3_5ForConditionalGeneration`, or the MoE class with `moe`):
    the `qwen35` / `qwen35-moe` family fixtures' text model (gated DeltaNet layers 0-2, gated
    full attention on layer 3, interleaved M-RoPE) beside Qwen3-VL's vision tower without
    deepstack mergers (3 blocks, learned position embeddings for a 4 x 4 grid of 8-pixel
    patches). transformers 5 only (4.57.6 has no Qwen3.5), saved in the Hub's layout
    (`model.language_model.*`, `model.visual.*`, `lm_head.weight`); seeds 340 and 341."""
    if MAJOR < 5:
        return None
    ids, excluded = bpe_tokenizer(folder, "qwen2", QWEN_IMAGE_TOKENS)
    bos, eos = excluded[0], excluded[2]
    experts = dict(num_experts=4, num_experts_per_tok=2, moe_intermediate_size=32,
                   shared_expert_intermediate_size=64) if moe else {}
    text = text_args(**{**fam.QWEN_LINEAR, "bos_token_id": bos, "eos_token_id": eos},
                     rope_parameters=fam.QWEN35_ROPE, tie_word_embeddings=False, **experts)
    vision = dict(depth=3, hidden_size=32, intermediate_size=64, num_heads=2, out_hidden_size=fam.HIDDEN,
                  patch_size=8, spatial_merge_size=2, temporal_patch_size=2, num_position_embeddings=16)
    config_cls = transformers.Qwen3_5MoeConfig if moe else transformers.Qwen3_5Config
    config = config_cls(
        text_config=text, vision_config=vision, image_token_id=ids["<|image_pad|>"],
        video_token_id=ids["<|video_pad|>"], vision_start_token_id=ids["<|vision_start|>"],
        vision_end_token_id=ids["<|vision_end|>"], tie_word_embeddings=False)
    pre = preprocessor(32, [0.5, 0.5, 0.5], [0.5, 0.5, 0.5], image_processor_type="Qwen2VLImageProcessorFast",
                       processor_class="Qwen3VLProcessor", patch_size=8, merge_size=2,
                       temporal_patch_size=2)
    pre["size"] = {"shortest_edge": 32 * 32, "longest_edge": 64 * 64}
    model_cls = (transformers.Qwen3_5MoeForConditionalGeneration if moe
                 else transformers.Qwen3_5ForConditionalGeneration)
    return config, model_cls, pre, excluded


SMOLVLM_IMAGE_TOKENS = ["<fake_token_around_image>", "<image>", "<global-img>", "<end_of_utterance>"]


def smolvlm(folder: Path, idefics3: bool = False):
    """SmolVLM (or Idefics3 with `idefics3`): a Llama text model, 2 layers, untied, its
    `text_config` naming `VLlama3ForCausalLM` as the published SmolVLM configs do (the
    converter takes the text class from there), beside a SigLIP-like tower of 2 layers (32 px,
    patch 8: 16 patches, pixel-shuffled by scale_factor 2 into 4 tokens of 128) and its
    connector. transformers 5 only here, in the Hub's layout (`model.text_model.*`,
    `model.vision_model.*`, `model.connector.*`, `lm_head.weight`); seeds 342 and 343."""
    if MAJOR < 5:
        return None
    ids, excluded = bpe_tokenizer(folder, "llama3", SMOLVLM_IMAGE_TOKENS)
    text = text_args(head_dim=fam.HEAD_DIM, pad_token_id=None, bos_token_id=excluded[0],
                     eos_token_id=excluded[1], tie_word_embeddings=False,
                     architectures=["VLlama3ForCausalLM"])
    vision = dict(hidden_size=32, intermediate_size=64, num_hidden_layers=2, num_attention_heads=2,
                  image_size=32, patch_size=8)
    config_cls = transformers.Idefics3Config if idefics3 else transformers.SmolVLMConfig
    config = config_cls(text_config=text, vision_config=vision, image_token_id=ids["<image>"],
                        scale_factor=2, tie_word_embeddings=False, pad_token_id=None)
    processor = "Idefics3" if idefics3 else "SmolVLM"
    pre = preprocessor(32, [0.5, 0.5, 0.5], [0.5, 0.5, 0.5], image_processor_type=f"{processor}ImageProcessor",
                       processor_class=f"{processor}Processor", do_image_splitting=False,
                       max_image_size={"longest_edge": 32})
    pre["size"] = {"longest_edge": 32}
    model_cls = (transformers.Idefics3ForConditionalGeneration if idefics3
                 else transformers.SmolVLMForConditionalGeneration)
    return config, model_cls, pre, excluded


LFM2_VL_IMAGE_TOKENS = ["<image>", "<|image_start|>", "<|image_end|>", "<|img_thumbnail|>"]


def lfm2_vl(folder: Path):
    """LFM2-VL as published (`Lfm2VlForConditionalGeneration`): the `lfm2` family fixture's
    text model (4 layers: short convolutions 0 and 2, attention 1 and 3; tied), its
    `text_config` naming `Lfm2ForCausalLM` as the published configs do (llama.cpp's converter
    takes the text class from there), beside a SigLIP2 NaFlex tower of 3 layers (3: the converter
    maps the projector's linear_{1,2} through its per-block table; patch 16, as
    the converter's patch-kernel reshape assumes; 16 positions; no head, as published) and the
    projector's layer norm, linear_1, linear_2 (downsample_factor 2). transformers 5 only here,
    in the published layout (SigLIP2's `vision_model.` put back: HUB_RENAMES); seed 550."""
    if MAJOR < 5:
        return None
    ids, excluded = bpe_tokenizer(folder, "llama3", LFM2_VL_IMAGE_TOKENS)
    text = text_args(num_hidden_layers=4, intermediate_size=192, block_auto_adjust_ff_dim=True,
                     block_multiple_of=32, block_ffn_dim_multiplier=1.0, conv_L_cache=3,
                     layer_types=["conv", "full_attention", "conv", "full_attention"],
                     pad_token_id=None, bos_token_id=excluded[0], eos_token_id=excluded[1],
                     architectures=["Lfm2ForCausalLM"], model_type="lfm2")
    vision = dict(model_type="siglip2_vision_model", hidden_size=32, intermediate_size=64,
                  num_hidden_layers=3, num_attention_heads=2, patch_size=16, num_patches=16,
                  vision_use_head=False)
    config = transformers.Lfm2VlConfig(text_config=text, vision_config=vision,
                                       image_token_id=ids["<image>"], projector_hidden_size=64,
                                       downsample_factor=2)
    pre = preprocessor(256, [0.5, 0.5, 0.5], [0.5, 0.5, 0.5], image_processor_type="Lfm2VlImageProcessorFast",
                       processor_class="Lfm2VlProcessor", downsample_factor=2, encoder_patch_size=16,
                       max_image_tokens=256, min_image_tokens=64, do_image_splitting=True)
    return config, transformers.Lfm2VlForConditionalGeneration, pre, excluded


GLM4V_IMAGE_TOKENS = ["<|begin_of_image|>", "<|end_of_image|>", "<|image|>", "<|begin_of_video|>",
                      "<|end_of_video|>", "<|video|>"]


def glm4v(folder: Path, moe: bool = False):
    """GLM-4.1V (`Glm4vForConditionalGeneration`) or, with `moe`, GLM-4.5V
    (`Glm4vMoeForConditionalGeneration`): GLM's text model with multimodal RoPE (half of each
    head rotated, mrope_section [2, 1, 1] over its 4 rotary pairs, as [8, 12, 12] over
    GLM-4.1V's 32; [2, 2, 2] over the MoE's 6) beside GLM-4V's vision tower (2 blocks, 32 px, patch 8: 16 positions,
    spatial merge 2, SwiGLU merger). The dense text model is the `glm4` family fixture's block
    (four norms, fused gate_up_proj, Q/K/V biases; head size hidden/heads, as Glm4vTextAttention
    takes it); the MoE one the `glm4moe` fixture's experts (one dense layer, 4 experts top 2, a
    shared one, sigmoid router scaled by 2.5; no Q/K norms, as GLM-4.5V). transformers 5 only,
    its default (the Hub's) layout (`model.language_model.*`, `model.visual.*`, `lm_head.weight`);
    seeds 551 and 552."""
    if MAJOR < 5:
        return None
    ids, excluded = bpe_tokenizer(folder, "glm", GLM4V_IMAGE_TOKENS)
    # MoE: GLM-4.5V's head wider than hidden/heads (24 here: 6 rotary pairs).
    rope = {"rope_type": "default", "rope_theta": 10000.0,
            "mrope_section": [2, 2, 2] if moe else [2, 1, 1], "partial_rotary_factor": 0.5}
    text = text_args(rope_parameters=rope, rms_norm_eps=1e-5, pad_token_id=excluded[0],
                     eos_token_id=[excluded[0], excluded[7]])
    if moe:
        text.update(head_dim=24, n_routed_experts=4, num_experts_per_tok=2, n_shared_experts=1,
                    moe_intermediate_size=32, first_k_dense_replace=1, n_group=1, topk_group=1,
                    norm_topk_prob=True, routed_scaling_factor=2.5, attention_bias=True,
                    use_qk_norm=False)
    vision = dict(depth=2, hidden_size=32, intermediate_size=64, num_heads=2, image_size=32, patch_size=8,
                  spatial_merge_size=2, temporal_patch_size=2, out_hidden_size=fam.HIDDEN)
    config_cls = transformers.Glm4vMoeConfig if moe else transformers.Glm4vConfig
    config = config_cls(
        text_config=text, vision_config=vision, image_token_id=ids["<|image|>"],
        video_token_id=ids["<|video|>"], image_start_token_id=ids["<|begin_of_image|>"],
        image_end_token_id=ids["<|end_of_image|>"], video_start_token_id=ids["<|begin_of_video|>"],
        video_end_token_id=ids["<|end_of_video|>"], tie_word_embeddings=False)
    pre = preprocessor(32, CLIP_MEAN, CLIP_STD, image_processor_type="Glm4vImageProcessor",
                       processor_class="Glm46VProcessor" if moe else "Glm4vProcessor", patch_size=8,
                       merge_size=2, temporal_patch_size=2)
    pre["size"] = {"shortest_edge": 32 * 32, "longest_edge": 64 * 64}
    model_cls = (transformers.Glm4vMoeForConditionalGeneration if moe
                 else transformers.Glm4vForConditionalGeneration)
    return config, model_cls, pre, excluded


FIXTURES = {"gemma3": gemma3, "mistral3": mistral3, "qwen2.5-vl": qwen2_5_vl, "llava": llava,
            "qwen2-vl": qwen2_vl, "llama4": llama4,
            "llama4-text": llama4_text, "ministral3-vl": ministral3_vl,
            "qwen3.5-vl": qwen3_5_vl, "qwen3.5-moe-vl": lambda folder: qwen3_5_vl(folder, moe=True),
            "smolvlm": smolvlm, "idefics3": lambda folder: smolvlm(folder, idefics3=True),
            "lfm2-vl": lfm2_vl, "glm4v": glm4v, "glm4v-moe": lambda folder: glm4v(folder, moe=True)}
# Seeds given explicitly (fixtures added by parallel branches); the others are 101 + their index.
SEEDS = {"ministral3-vl": 220, "qwen3.5-vl": 340, "qwen3.5-moe-vl": 341, "smolvlm": 342,
         "idefics3": 343, "lfm2-vl": 550, "glm4v": 551, "glm4v-moe": 552}
# Saved in the Hub's layout by transformers 5 too (its default), as the
# published checkpoints are: only 5 knows these classes, so no -t4 fixture
# holds that layout (and the converter's --mmproj reads only it).
HUB_LAYOUT = {"ministral3-vl", "qwen3.5-vl", "qwen3.5-moe-vl", "smolvlm", "idefics3", "lfm2-vl",
              "glm4v", "glm4v-moe"}

# Renames that give transformers 5's save the published checkpoints' names: 5.18
# builds SigLIP2's tower without its `vision_model` module and adds that prefix
# back on save only to a checkpoint it loaded with it, so a model made here is
# saved without it (the converter maps only the published names).
HUB_RENAMES = {"lfm2-vl": [("model.vision_tower.", "model.vision_tower.vision_model.")]}


def rename_saved(folder: Path, renames: list[tuple[str, str]]) -> None:
    """Rename the saved tensors by prefix, in every shard and the index."""
    from safetensors.torch import load_file, save_file

    def renamed(key: str) -> str:
        for old, new in renames:
            if key.startswith(old):
                return new + key[len(old):]
        return key

    for shard in sorted(folder.glob("*.safetensors")):
        tensors = load_file(shard)
        save_file({renamed(k): v for k, v in tensors.items()}, shard, metadata={"format": "pt"})
    index_path = folder / "model.safetensors.index.json"
    if index_path.exists():
        index = json.loads(index_path.read_text())
        index["weight_map"] = dict(sorted((renamed(k), v) for k, v in index["weight_map"].items()))
        index_path.write_text(json.dumps(index, indent=2) + "\n")


def make(name: str, seed: int) -> dict:
    folder = HERE / "hf" / f"{name}-{SUFFIX}"
    if folder.exists():
        shutil.rmtree(folder)
    folder.mkdir(parents=True)
    made = FIXTURES[name](folder)
    if made is None:
        folder.rmdir()
        print(f"{name}: not made by transformers {transformers.__version__}")
        return {}
    config, model_cls, pre, excluded = made
    config._attn_implementation = "eager"
    torch.manual_seed(seed)
    model = model_cls(config).eval()
    fam.randomize(model, seed)
    # transformers 5 writes the Hub's layout by default; its own (the model's
    # module paths: model.language_model.*, model.vision_tower.*) is what
    # save_original_format=False writes, as fine-tunes saved by transformers
    # 4.52–4.56 have it.
    extra = {"save_original_format": False} if MAJOR >= 5 and name not in HUB_LAYOUT else {}
    model.save_pretrained(folder, max_shard_size=fam.SHARD_SIZE, **extra)
    if name in HUB_RENAMES:
        rename_saved(folder, HUB_RENAMES[name])
    if pre is not None:
        (folder / "preprocessor_config.json").write_text(json.dumps(pre, indent=2) + "\n")
    # transformers 4.57 writes Qwen2.5-VL's class inside text_config only; the
    # Hub's Qwen2.5-VL configs (and llama.cpp's --mmproj) have it at the top.
    config_path = folder / "config.json"
    saved = json.loads(config_path.read_text())
    if "architectures" not in saved:
        saved = {"architectures": [model_cls.__name__], **saved}
        config_path.write_text(json.dumps(saved, indent=2, sort_keys=True) + "\n")
    excluded = set(excluded)
    vocab = fam.VOCAB
    for attempt in range(100):
        rng = random.Random(seed * 1000 + attempt)
        prompt = [rng.choice([i for i in range(vocab) if i not in excluded]) for _ in range(fam.PROMPT_LENGTH)]
        greedy, rows = fam.greedy_run(model, prompt)
        margins = [float(r.topk(2).values[0] - r.topk(2).values[1]) for r in rows]
        if min(margins) >= fam.MIN_MARGIN:
            break
    else:
        sys.exit(f"{name}: no prompt with greedy margins >= {fam.MIN_MARGIN}")
    steps = []
    for r, g in zip(rows, greedy):
        top = r.topk(fam.TOP)
        steps.append({"greedy": g, "top": [[int(i), round(float(v), 6)] for v, i in zip(top.values, top.indices)]})
    reference = {
        "family": f"{name}-{SUFFIX}",
        "architecture": model_cls.__name__,
        "made_by": f"transformers {transformers.__version__}, torch {torch.__version__} (CPU, eager attention), text only",
        "prompt": prompt,
        "sequence": prompt + greedy[:-1],
        "positions": list(range(fam.PROMPT_LENGTH - 1, fam.PROMPT_LENGTH - 1 + fam.STEPS)),
        "greedy": greedy,
        "steps": steps,
        "greedy_margins": [round(m, 4) for m in margins],
    }
    (HERE / "reference").mkdir(exist_ok=True)
    (HERE / "reference" / f"{name}-{SUFFIX}.json").write_text(json.dumps(reference, indent=1) + "\n")
    return reference


def main() -> None:
    names = sys.argv[1:] or list(FIXTURES)
    for index, name in enumerate(FIXTURES):
        if name in names:
            ref = make(name, seed=SEEDS.get(name, 101 + index))
            if ref:
                print(f"{name}-{SUFFIX}: greedy {ref['greedy']}, margins {ref['greedy_margins']}")


if __name__ == "__main__":
    main()
