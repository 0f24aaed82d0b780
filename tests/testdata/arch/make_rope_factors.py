#!/usr/bin/env python3
"""Reference values for tests/arch/rope_factors_test.ts: llama.cpp's converter's
`rope_freqs.weight` for Llama 3 RoPE scaling (LlamaModel.generate_extra_tensors,
conversion/llama.py in the judge's llama.cpp), computed by that very code with
torch, for Llama 3.1 8B's published rope_scaling and for a tiny config.

    /work/tools/venv5/bin/python tests/testdata/arch/make_rope_factors.py

writes rope_factors.json next to itself: per case, the config and the float32
factors as little-endian hex (exact bytes).
"""

import json
import math
from pathlib import Path

import torch

CASES = {
    # meta-llama/Llama-3.1-8B config.json
    "llama-3.1-8b": {"head_dim": 128, "rope_theta": 500000.0, "factor": 8.0, "low_freq_factor": 1.0,
                     "high_freq_factor": 4.0, "original_max_position_embeddings": 8192},
    # meta-llama/Llama-3.2-1B config.json (factor 32)
    "llama-3.2-1b": {"head_dim": 64, "rope_theta": 500000.0, "factor": 32.0, "low_freq_factor": 1.0,
                     "high_freq_factor": 4.0, "original_max_position_embeddings": 8192},
    # the families fixture (tests/testdata/families/hf/llama3-rope)
    "tiny": {"head_dim": 16, "rope_theta": 10000.0, "factor": 8.0, "low_freq_factor": 1.0,
             "high_freq_factor": 4.0, "original_max_position_embeddings": 32},
}


def rope_factors(p):
    # The converter's code, verbatim but for the parameter lookups.
    base = p["rope_theta"]
    dim = p["head_dim"]
    freqs = 1.0 / (base ** (torch.arange(0, dim, 2, dtype=torch.float32) / dim))
    factor = p["factor"]
    low_freq_factor = p["low_freq_factor"]
    high_freq_factor = p["high_freq_factor"]
    old_context_len = p["original_max_position_embeddings"]
    low_freq_wavelen = old_context_len / low_freq_factor
    high_freq_wavelen = old_context_len / high_freq_factor
    rope_factors = []
    for freq in freqs:
        wavelen = 2 * math.pi / freq
        if wavelen < high_freq_wavelen:
            rope_factors.append(1)
        elif wavelen > low_freq_wavelen:
            rope_factors.append(factor)
        else:
            smooth = (old_context_len / wavelen - low_freq_factor) / (high_freq_factor - low_freq_factor)
            rope_factors.append(1 / ((1 - smooth) / factor + smooth))
    return torch.tensor(rope_factors, dtype=torch.float32)


out = {name: {"config": p, "f32_hex": rope_factors(p).numpy().astype("<f4").tobytes().hex()}
       for name, p in CASES.items()}
(Path(__file__).parent / "rope_factors.json").write_text(json.dumps(out, indent=1) + "\n")
