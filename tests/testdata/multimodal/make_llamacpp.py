#!/usr/bin/env python3
"""What llama.cpp's own converter makes of each multimodal checkpoint's
language model (issue 27 item 5): the text GGUF it writes without `--mmproj`.

    PYTHONPATH=/work/tools/llama.cpp/gguf-py /work/tools/venv5/bin/python \\
        tests/testdata/multimodal/make_llamacpp.py /work/tools/llama.cpp

For each `hf/<fixture>/` it runs `convert_hf_to_gguf.py --outtype f32` of the
given llama.cpp checkout (the source the tests' judge runs) through
`tests/testdata/families/make_llamacpp.py --convert` (which names the tiny
tokenizers' pre-tokenizer after their regex, see that file), and writes
`llama.cpp/<fixture>-f32.json`: every KV pair and every tensor (name, type,
`ne`, sha256) in file order (for the fixtures in OUTTYPES and QUANTIZED also
`-bf16`, `-q8_0` and llama-quantize's `-Q4_K_M` of the F32 file). For the fixtures in MMPROJ it also runs
`--mmproj` and writes `llama.cpp/<fixture>-mmproj-f32.json` the same way.
"""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
FAMILIES = HERE.parent / "families"
sys.path.insert(0, str(FAMILIES))
import make_llamacpp as fam  # noqa: E402


# Fixtures whose vision GGUF aprkit writes (and so is compared with the converter's).
MMPROJ = ["gemma3", "qwen2.5-vl", "qwen2-vl", "mistral3", "llama4", "ministral3-vl", "qwen3.5-vl",
          "qwen3.5-moe-vl", "smolvlm", "idefics3", "lfm2-vl", "glm4v", "glm4v-moe"]
# Fixtures also converted with the converter's other --outtype values, and
# quantized by llama-quantize (when built) from its F32 file: Llama 4's
# transposed experts and routers through every type;
# LFM2-VL's and GLM-4V's text models (the converter's M-RoPE Q/K permute of
# GLM-4.1V) through every type and both presets.
OUTTYPES = {"llama4": ["bf16", "q8_0"], "lfm2-vl": ["bf16", "q8_0"], "glm4v": ["bf16", "q8_0"],
            "glm4v-moe": ["bf16", "q8_0"]}
QUANTIZED = {"llama4": ["Q4_K_M"], "lfm2-vl": ["Q4_K_M", "Q5_K_S"], "glm4v": ["Q4_K_M", "Q5_K_S"],
             "glm4v-moe": ["Q4_K_M", "Q5_K_S"]}


def main() -> None:
    llama_cpp = Path(sys.argv[1] if len(sys.argv) > 1 else "/work/tools/llama.cpp").resolve()
    names = sys.argv[2:] or sorted(p.name for p in (HERE / "hf").iterdir())
    commit = fam.llama_cpp_commit(llama_cpp)
    out_dir = HERE / "llama.cpp"
    out_dir.mkdir(exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        for name in names:
            f32 = Path(tmp) / f"{name}-f32.gguf"
            run = subprocess.run(
                [sys.executable, str(FAMILIES / "make_llamacpp.py"), "--convert", str(llama_cpp),
                 str(HERE / "hf" / name), str(f32)],
                capture_output=True, text=True,
            )
            if run.returncode != 0:
                last = run.stderr.strip().splitlines()[-1:] or ["?"]
                print(f"{name}: the converter refused: {last[0]}")
                continue
            made_by = f"llama.cpp {commit}: convert_hf_to_gguf.py --outtype f32"
            (out_dir / f"{name}-f32.json").write_text(json.dumps(fam.manifest(f32, made_by), indent=1) + "\n")
            print(f"{name}: f32")
            base = name.rsplit("-t", 1)[0]
            for outtype in OUTTYPES.get(base, []):
                path = Path(tmp) / f"{name}-{outtype}.gguf"
                subprocess.run(
                    [sys.executable, str(FAMILIES / "make_llamacpp.py"), "--convert", str(llama_cpp),
                     str(HERE / "hf" / name), str(path), outtype],
                    capture_output=True, check=True,
                )
                made_by = f"llama.cpp {commit}: convert_hf_to_gguf.py --outtype {outtype}"
                (out_dir / f"{name}-{outtype}.json").write_text(json.dumps(fam.manifest(path, made_by), indent=1) + "\n")
                print(f"{name}: {outtype}")
            quantize = llama_cpp / "build" / "bin" / "llama-quantize"
            for preset in QUANTIZED.get(base, []) if quantize.exists() else []:
                path = Path(tmp) / f"{name}-{preset}.gguf"
                subprocess.run([str(quantize), str(f32), str(path), preset], capture_output=True, check=True)
                made_by = f"llama.cpp {commit}: llama-quantize of the f32 file, {preset}"
                (out_dir / f"{name}-{preset}.json").write_text(json.dumps(fam.manifest(path, made_by), indent=1) + "\n")
                print(f"{name}: {preset}")
            if name.rsplit("-t", 1)[0] not in MMPROJ:
                continue
            # The vision GGUF: the converter itself, no tokenizer involved.
            mmproj = Path(tmp) / f"{name}-mmproj-f32.gguf"
            run = subprocess.run(
                [sys.executable, str(llama_cpp / "convert_hf_to_gguf.py"), str(HERE / "hf" / name), "--mmproj",
                 "--outtype", "f32", "--outfile", str(mmproj)],
                capture_output=True, text=True,
            )
            if run.returncode != 0:
                last = run.stderr.strip().splitlines()[-1:] or ["?"]
                print(f"{name}: the converter refused --mmproj: {last[0]}")
                continue
            made_by = f"llama.cpp {commit}: convert_hf_to_gguf.py --mmproj --outtype f32"
            (out_dir / f"{name}-mmproj-f32.json").write_text(
                json.dumps(fam.manifest(mmproj, made_by), indent=1) + "\n")
            print(f"{name}: mmproj-f32")


if __name__ == "__main__":
    main()
