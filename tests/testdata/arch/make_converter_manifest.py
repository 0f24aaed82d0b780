#!/usr/bin/env python3
"""What llama.cpp's converter writes for each family fixture, as a small
manifest (tests/arch/converter_manifest_test.ts compares aprkit's GGUFs
with it, without needing Python or llama.cpp).

    PYTHONPATH=/work/tools/llama.cpp/gguf-py /work/tools/venv5/bin/python \
        tests/testdata/arch/make_converter_manifest.py /work/tools/llama.cpp

For every folder of tests/testdata/families/hf/ (but unknown-arch) it runs
the given llama.cpp's convert_hf_to_gguf.py with --outtype f32, bf16 and q8_0
into a temporary folder, and that llama.cpp's build/bin/llama-quantize on the
F32 file with the Q4_K_M and Q5_K_S presets, and records, per output: the tensors in file
order (name, ggml type, numpy shape, sha256 of the data) and every key that
is not a tokenizer key (type and value), in file order. Tokenizer keys are
left out: the fixtures' tiny BPE tokenizer has a pre-tokenizer the converter
does not know (its hash list is for real models), so the run patches
`get_vocab_base_pre` to answer "gpt-2", which changes only tokenizer keys.
"""

import hashlib
import json
import subprocess
import sys
import tempfile
from pathlib import Path

from gguf import GGUFReader, GGUFValueType

HERE = Path(__file__).resolve().parent
FAMILIES = HERE.parent / "families" / "hf"
LLAMA_CPP = Path(sys.argv[1]).resolve()

RUNNER = f"""
import sys, runpy
sys.path.insert(0, {str(LLAMA_CPP)!r})
import conversion.base as b
b.TextModel.get_vocab_base_pre = lambda self, tok: "gpt-2"
sys.argv = ["convert_hf_to_gguf.py"] + sys.argv[1:]
runpy.run_path({str(LLAMA_CPP / "convert_hf_to_gguf.py")!r}, run_name="__main__")
"""


def field_value(field):
    t = field.types[0]
    if t == GGUFValueType.ARRAY:
        sub = field.types[-1]
        if sub == GGUFValueType.STRING:
            return [bytes(field.parts[i]).decode() for i in field.data]
        return [field.parts[i].tolist()[0] for i in field.data]
    if t == GGUFValueType.STRING:
        return bytes(field.parts[-1]).decode()
    return field.parts[-1].tolist()[0]


def manifest(path):
    r = GGUFReader(path)
    kv = []
    for name, field in r.fields.items():
        if name.startswith("GGUF.") or name.startswith("tokenizer."):
            continue
        types = [GGUFValueType(t).name for t in field.types]
        kv.append({"key": name, "types": types, "value": field_value(field)})
    tensors = [{
        "name": t.name,
        "type": t.tensor_type.name,
        "shape": [int(n) for n in reversed(t.shape.tolist())],
        "sha256": hashlib.sha256(t.data.tobytes()).hexdigest(),
    } for t in r.tensors]
    return {"kv": kv, "tensors": tensors}


out = {}
with tempfile.TemporaryDirectory() as tmp:
    runner = Path(tmp) / "run.py"
    runner.write_text(RUNNER)
    for folder in sorted(FAMILIES.iterdir()):
        if folder.name == "unknown-arch":
            continue
        out[folder.name] = {}
        for outtype in ("f32", "bf16", "q8_0"):
            gguf = Path(tmp) / f"{folder.name}-{outtype}.gguf"
            subprocess.run([sys.executable, str(runner), str(folder), "--outtype", outtype,
                            "--outfile", str(gguf)], check=True, capture_output=True)
            out[folder.name][outtype] = manifest(str(gguf))
            if outtype == "f32":
                for preset in ("Q4_K_M", "Q5_K_S"):
                    quantized = Path(tmp) / f"{folder.name}-{preset}.gguf"
                    subprocess.run([str(LLAMA_CPP / "build" / "bin" / "llama-quantize"), str(gguf),
                                    str(quantized), preset], check=True, capture_output=True)
                    out[folder.name][preset] = manifest(str(quantized))
        print(folder.name, file=sys.stderr)

(HERE / "converter_manifest.json").write_text(json.dumps(out, indent=None, separators=(",", ":")) + "\n")
