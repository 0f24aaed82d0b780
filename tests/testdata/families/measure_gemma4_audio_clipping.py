"""Gemma 4 audio's gradient_clipping in transformers (issue 31 item 3).

transformers clamps the conformer's activations to +/- gradient_clipping
(around each feed-forward, attention and light convolution, and at each
layer's end); llama.cpp's gemma4a clamps nothing. This runs the gemma4-audio
fixture's audio tower on one fixed input with the published 1e10 and with
smaller values, and prints the largest difference of its output from the
1e10 run: a value that binds changes transformers' computation, so aprkit
refuses one below 1e10 (src/arch/mmproj_audio.ts).

    /work/tools/venv5/bin/python tests/testdata/families/measure_gemma4_audio_clipping.py
"""

from pathlib import Path

import torch
from transformers import Gemma4ForConditionalGeneration

FIXTURE = Path(__file__).parent / "hf" / "gemma4-audio"

model = Gemma4ForConditionalGeneration.from_pretrained(FIXTURE, dtype=torch.float32).eval()
tower = model.model.audio_tower
torch.manual_seed(0)
features = torch.randn(1, 64, 128) * 3
mask = torch.ones(1, 64, dtype=torch.bool)


def run(clipping: float) -> torch.Tensor:
    for module in tower.modules():
        if hasattr(module, "gradient_clipping"):
            module.gradient_clipping = clipping
    with torch.no_grad():
        return tower(features, mask).last_hidden_state


base = run(1e10)
for clipping in [3.4e38, 1e6, 100.0, 10.0, 1.0, 0.5]:
    print(f"gradient_clipping {clipping:g}: max |difference| from 1e10 = "
          f"{(run(clipping) - base).abs().max().item():.4g}")
