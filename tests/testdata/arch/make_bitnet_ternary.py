#!/usr/bin/env python3
"""Reference for tests/arch/ternary_test.ts: llama.cpp's converter's
`BitnetModel.weight_quant` (conversion/bitnet.py, run from the given checkout)
on seeded weights that rounding changes, in F32 and BF16:

    PYTHONPATH=/work/tools/llama.cpp/gguf-py /work/tools/venv5/bin/python \\
        tests/testdata/arch/make_bitnet_ternary.py /work/tools/llama.cpp

writes bitnet_ternary.json next to itself: per case its dtype, shape, and the
input and output payloads (base64, little-endian).
"""

import base64
import json
import sys
from pathlib import Path

import torch

sys.path.insert(0, sys.argv[1] if len(sys.argv) > 1 else "/work/tools/llama.cpp")
from conversion.bitnet import BitnetModel  # noqa: E402


def payload(t: torch.Tensor) -> str:
    if t.dtype == torch.bfloat16:
        t = t.view(torch.int16)
    return base64.b64encode(t.contiguous().numpy().tobytes()).decode()


g = torch.Generator().manual_seed(509)
cases = {
    "normal-f32": torch.randn(48, 64, generator=g) * 0.15,
    "normal-bf16": (torch.randn(32, 64, generator=g) * 0.15).to(torch.bfloat16),
    # Mostly small values around a few large ones: many round to zero (and −0).
    "spiky-f32": torch.randn(16, 64, generator=g) ** 3,
    # mean(|w|) below 1e-5: the clamp decides the scale.
    "tiny-f32": torch.randn(8, 64, generator=g) * 1e-6,
    # Halves: w · iscale = ±0.5, ±1.5 exactly (scale 1): ties to even.
    "ties-f32": torch.tensor([0.5, -0.5, 1.5, -1.5, 1.5, 0.5, -1.5, -0.5] * 8),
}
out = {}
for name, w in cases.items():
    q = BitnetModel.weight_quant(None, w)
    out[name] = {"dtype": "BF16" if w.dtype == torch.bfloat16 else "F32", "shape": list(w.shape),
                 "input": payload(w), "output": payload(q)}
here = Path(__file__).resolve().parent
(here / "bitnet_ternary.json").write_text(json.dumps(out, indent=1) + "\n")
print(", ".join(out))
