#!/usr/bin/env python3
"""Tiny Gemma 3n checkpoints (issue 27, its last optional family), into `gemma3n/`
(its own `hf/`, `reference/` and, with `--llamacpp`, `llama.cpp/`):

    /work/tools/venv5/bin/python tests/testdata/multimodal/make_gemma3n.py          # transformers 5.18
    PYTHONPATH=/work/tools/llama.cpp/gguf-py /work/tools/venv5/bin/python \\
        tests/testdata/multimodal/make_gemma3n.py --llamacpp /work/tools/llama.cpp

transformers builds Gemma 3n's vision tower through timm's fixed MobileNetV5
(300M parameters), so a tiny `Gemma3nForConditionalGeneration` cannot be
saved. The language model is built alone (`Gemma3nForCausalLM`, seeded) and
its weights are written twice:

- `hf/gemma3n-t5/`: under the Hub's `Gemma3nForConditionalGeneration` key
  layout (`model.language_model.*`, as google/gemma-3n-E2B's index has them;
  tied, no `lm_head`), with a few small tensors under the towers' names
  (`model.vision_tower.*`, `model.audio_tower.*`, `model.embed_vision.*`,
  `model.embed_audio.*`) that a text conversion leaves out, and a
  `Gemma3nConfig` `config.json` whose `text_config` is the tiny one (the
  vision and audio configs are transformers' defaults: only the text
  conversion reads the config here);
- `hf/gemma3n-text-t5/`: `Gemma3nForCausalLM.save_pretrained` (`model.*`).

Both hold the same weights, so `reference/gemma3n-t5.json` (transformers'
greedy run of the language model) judges both.

The shape honours what llama.cpp de3ff81 assumes without reading a key
(`src/models/gemma3n.cpp`, `llama-hparams.h`): 4 AltUp inputs, the active one
0, Laurel rank 64, 256 values per layer of per-layer input, KV from the first
20 layers (so no KV sharing in a 2-layer model: `num_kv_shared_layers` 0), and
activation sparsity 0.95 on the first 10 layers (here both). The text
vocabulary (`vocab_size` 400) is larger than the per-layer one
(`vocab_size_per_layer_input` 384, the tokenizer's pieces), as Gemma 3n's
262400 and 262144: the converter pads the per-layer embedding with zero rows
and the token list with `[PAD<id>]`.
"""

from __future__ import annotations

import json
import random
import shutil
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
OUT = HERE / "gemma3n"
LAYERS = 2
VOCAB = 400  # the tokenizer has 384 pieces (make_families.VOCAB)
# Wider than the family fixtures' 128: llama.cpp's activation sparsity cutoff takes the sample
# standard deviation (n - 1) where transformers takes the population one (n), a relative
# difference of 1/(2n) that moves a 128-wide model's log-probs by up to 0.05 (real models: 8192+).
INTERMEDIATE = 512

# Small stand-ins under the towers' names of google/gemma-3n-E2B's index (shapes tiny).
TOWERS = {
    "model.vision_tower.timm_model.conv_stem.conv.weight": [8, 3, 3, 3],
    "model.vision_tower.timm_model.blocks.0.0.conv_exp.weight": [16, 8, 3, 3],
    "model.embed_vision.embedding.weight": [8, 32],
    "model.embed_vision.embedding_projection.weight": [64, 32],
    "model.embed_vision.hard_embedding_norm.weight": [32],
    "model.audio_tower.subsample_conv_projection.conv_0.conv.weight": [8, 1, 3, 3],
    "model.audio_tower.conformer.0.attention.attn.per_dim_scale": [16],
    "model.embed_audio.embedding.weight": [8, 32],
    "model.embed_audio.soft_embedding_norm.weight": [32],
}


def text_config(transformers, fam, excluded_ids):
    return transformers.Gemma3nTextConfig(
        vocab_size=VOCAB, vocab_size_per_layer_input=fam.VOCAB, hidden_size=fam.HIDDEN,
        intermediate_size=INTERMEDIATE, num_hidden_layers=LAYERS, num_attention_heads=fam.HEADS,
        num_key_value_heads=fam.KV_HEADS, head_dim=fam.HEAD_DIM, max_position_embeddings=fam.MAX_POSITIONS,
        sliding_window=16, layer_types=["sliding_attention", "full_attention"],
        hidden_size_per_layer_input=256, laurel_rank=64, altup_num_inputs=4, altup_active_idx=0,
        num_kv_shared_layers=0, activation_sparsity_pattern=[0.95] * LAYERS,
        pad_token_id=0, eos_token_id=1, bos_token_id=2,
    )


def main() -> None:
    if len(sys.argv) > 2 and sys.argv[1] == "--llamacpp":
        # Loaded under another name: it imports the families' make_llamacpp as make_llamacpp.
        import importlib.util
        spec = importlib.util.spec_from_file_location("multimodal_llamacpp", HERE / "make_llamacpp.py")
        lc = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(lc)
        lc.HERE = OUT
        lc.MMPROJ = []
        lc.OUTTYPES = {"gemma3n": ["bf16", "q8_0"]}
        lc.QUANTIZED = {"gemma3n": ["Q8_0", "Q4_K_M"]}
        sys.argv = [sys.argv[0], sys.argv[2]]
        lc.main()
        return
    import make_multimodal as mm
    import torch
    import transformers
    from safetensors.torch import save_file
    fam = mm.fam
    assert mm.MAJOR >= 5, "Gemma 3n fixtures are made with transformers 5"
    if OUT.exists():
        for sub in ("hf", "reference"):
            shutil.rmtree(OUT / sub, ignore_errors=True)
    text_dir = OUT / "hf" / "gemma3n-text-t5"
    full_dir = OUT / "hf" / "gemma3n-t5"
    text_dir.mkdir(parents=True)
    full_dir.mkdir(parents=True)
    _, excluded = mm.gemma_tokenizer(text_dir)
    for f in text_dir.iterdir():
        shutil.copy(f, full_dir / f.name)
    seed = 301
    config = text_config(transformers, fam, excluded)
    config._attn_implementation = "eager"
    torch.manual_seed(seed)
    model = transformers.Gemma3nForCausalLM(config).eval()
    fam.randomize(model, seed)
    model.save_pretrained(text_dir, max_shard_size=fam.SHARD_SIZE)

    # The ConditionalGeneration layout: the language model's tensors, then the towers'.
    weights = {k: v.contiguous() for k, v in model.state_dict().items() if k != "lm_head.weight"}
    language = {k.replace("model.", "model.language_model.", 1): v for k, v in weights.items()}
    g = torch.Generator().manual_seed(seed + 1)
    towers = {k: torch.randn(s, generator=g) * 0.1 for k, s in TOWERS.items()}
    shards = {"model-00001-of-00002.safetensors": language, "model-00002-of-00002.safetensors": towers}
    weight_map = {}
    for shard, tensors in shards.items():
        save_file(tensors, full_dir / shard, metadata={"format": "pt"})
        weight_map.update({k: shard for k in tensors})
    size = sum(t.numel() * 4 for tensors in shards.values() for t in tensors.values())
    index = {"metadata": {"total_size": size}, "weight_map": dict(sorted(weight_map.items()))}
    (full_dir / "model.safetensors.index.json").write_text(json.dumps(index, indent=2) + "\n")
    text = json.loads((text_dir / "config.json").read_text())
    for key in ("architectures", "transformers_version", "dtype"):
        text.pop(key, None)
    full = transformers.Gemma3nConfig(text_config=text)
    full.architectures = ["Gemma3nForConditionalGeneration"]
    full.save_pretrained(full_dir)
    shutil.copy(text_dir / "generation_config.json", full_dir / "generation_config.json")

    # transformers' greedy run, prompts and greedy tokens within the per-layer vocabulary.
    excluded = set(excluded)
    for attempt in range(200):
        rng = random.Random(seed * 1000 + attempt)
        prompt = [rng.choice([i for i in range(fam.VOCAB) if i not in excluded]) for _ in range(fam.PROMPT_LENGTH)]
        try:
            greedy, rows = fam.greedy_run(model, prompt)
        except IndexError:  # a greedy token past the per-layer vocabulary, which the text model cannot embed
            continue
        margins = [float(r.topk(2).values[0] - r.topk(2).values[1]) for r in rows]
        # Not one token repeated four times, so each step sees a new last token.
        if min(margins) >= fam.MIN_MARGIN and max(greedy) < fam.VOCAB and len(set(greedy)) > 1:
            break
    else:
        sys.exit(f"gemma3n: no prompt with greedy margins >= {fam.MIN_MARGIN}")
    steps = []
    for r, g_ in zip(rows, greedy):
        top = r.topk(fam.TOP)
        steps.append({"greedy": g_, "top": [[int(i), round(float(v), 6)] for v, i in zip(top.values, top.indices)]})
    reference = {
        "family": "gemma3n-t5",
        "architecture": "Gemma3nForCausalLM",
        "made_by": f"transformers {transformers.__version__}, torch {torch.__version__} (CPU, eager attention), text only",
        "prompt": prompt,
        "sequence": prompt + greedy[:-1],
        "positions": list(range(fam.PROMPT_LENGTH - 1, fam.PROMPT_LENGTH - 1 + fam.STEPS)),
        "greedy": greedy,
        "steps": steps,
        "greedy_margins": [round(m, 4) for m in margins],
    }
    (OUT / "reference").mkdir(exist_ok=True)
    (OUT / "reference" / "gemma3n-t5.json").write_text(json.dumps(reference, indent=1) + "\n")
    print(f"gemma3n-t5: greedy {greedy}, margins {reference['greedy_margins']}")
    normal_quantiles(torch)


def normal_quantiles(torch) -> None:
    """The converter's activation sparsity scale of each probability in a grid: `.item()` of
    torch's float32 `Normal(0, 1).icdf` (0 and 1, whose quantiles are infinite, as strings)."""
    ps = [i / 1000 for i in range(1001)] + [1e-6, 1e-4, 0.9999, 0.999999]
    normal = torch.distributions.normal.Normal(0, 1)
    rows = []
    for p in ps:
        q = normal.icdf(torch.tensor(p, dtype=torch.float32)).item()
        rows.append([p, q if abs(q) != float("inf") else str(q)])
    made_by = f"torch {torch.__version__}: Normal(0, 1).icdf(torch.tensor(p, dtype=torch.float32)).item()"
    out = {"made_by": made_by, "quantiles": rows}
    (OUT / "reference" / "normal_icdf.json").write_text(json.dumps(out) + "\n")


if __name__ == "__main__":
    main()
