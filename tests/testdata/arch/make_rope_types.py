#!/usr/bin/env python3
"""Reference for tests/arch/family_facts_test.ts: llama.cpp's RoPE type of each GGUF
architecture, as the judge's llama.cpp (de3ff81) assigns it in
`llama_model_rope_type()` (src/llama-model.cpp), keyed by the `general.architecture`
name `LLM_ARCH_NAMES` gives each `LLM_ARCH_*` (src/llama-arch.cpp).

    python3 tests/testdata/arch/make_rope_types.py /work/tools/llama.cpp

writes rope_types.json next to itself: architecture name -> "none", "norm", "neox",
"mrope" or "imrope". Architectures whose type depends on the model's hyperparameters
(a conditional `return`) are left out, except those that use M-RoPE only with rope
sections (`use_mrope()`: GLM-4, GLM-4.5, HunYuan-VL), recorded with their type without.
"""

import json
import re
import subprocess
import sys
from pathlib import Path

root = Path(sys.argv[1])
arch_src = (root / "src/llama-arch.cpp").read_text()
model_src = (root / "src/llama-model.cpp").read_text()
commit = subprocess.run(["git", "-C", str(root), "rev-parse", "HEAD"], capture_output=True,
                        text=True, check=True).stdout.strip()

table = arch_src[arch_src.index("LLM_ARCH_NAMES = {"):]
table = table[:table.index("};")]
names = dict(re.findall(r'\{\s*(LLM_ARCH_\w+),\s*"([^"]+)"\s*\}', table))

body = model_src[model_src.index("llama_rope_type llama_model_rope_type("):]
body = body[:body.index("\n}\n")]
types: dict[str, str] = {}
pending: list[str] = []
for line in body.splitlines():
    line = line.split("//")[0].strip()
    case = re.fullmatch(r"case (LLM_ARCH_\w+):", line)
    if case:
        pending.append(case.group(1))
        continue
    # GLM-4, GLM-4.5, HunYuan-VL: M-RoPE only when the file has rope
    # sections (use_mrope()), which a text model's GGUF does not: its type then.
    ret = re.fullmatch(r"return LLAMA_ROPE_TYPE_(\w+);", line) or re.fullmatch(
        r"return model->hparams\.use_mrope\(\) \? LLAMA_ROPE_TYPE_MROPE : LLAMA_ROPE_TYPE_(\w+);", line)
    if ret and pending:
        for arch in pending:
            types[names[arch]] = ret.group(1).lower()
    if line and not case:
        pending = []

out = {"made_by": f"llama.cpp {commit[:7]} llama_model_rope_type()", "rope_types": types}
path = Path(__file__).with_name("rope_types.json")
path.write_text(json.dumps(out, indent=1, sort_keys=False) + "\n")
print(f"{len(types)} architectures -> {path}")
