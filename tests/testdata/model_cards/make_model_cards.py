#!/usr/bin/env python3
"""What llama.cpp's converter takes from model cards and names (issue 35 item 1).

    PYTHONPATH=/work/tools/llama.cpp/gguf-py /work/tools/venv5/bin/python \\
        tests/testdata/model_cards/make_model_cards.py /work/tools/llama.cpp

1. For each case of `cases.json`: the family's tiny checkpoint
   (`../families/hf/<family>/`, or `../multimodal/hf/<multimodal>/`) copied to a folder named `folder`, with the
   case's `readme` as `README.md` (none when null) and its `config` keys
   added to `config.json`, converted by `convert_hf_to_gguf.py --outtype f32`
   (through `../families/make_llamacpp.py`, which names the tiny tokenizers'
   pre-tokenizers). `<id>.json` records every KV pair (key, GGUF type, array
   element types, value) in file order and the whole file's sha256; with
   `mmproj`, `<id>-mmproj.json` the same for `--mmproj` (the vision GGUF).
2. `name_components.json`: gguf-py's `Metadata.get_model_id_components` and
   `id_to_title` of each name in NAMES, for each parameter count in TOTALS.
3. `yaml.json`: PyYAML's `safe_load` of each text in `yaml_samples.json` (the
   YAML the converter's model card reader parses), dates as ISO text.
"""

from __future__ import annotations

import hashlib
import json
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
FAMILIES = HERE.parent / "families"
sys.path.insert(0, str(FAMILIES))

from make_llamacpp import llama_cpp_commit, plain  # noqa: E402

NAMES = [
    "Qwen2.5-7B-Instruct",
    "Qwen/Qwen2.5-7B-Instruct",
    "Llama-3.1-8B",
    "meta-llama/Llama-3.1-8B-Instruct",
    "meta-llama/Meta-Llama-3-8B",
    "gemma-2-2b-it",
    "google/gemma-3-27b-it",
    "Mistral-7B-v0.3",
    "mistralai/Mistral-7B-Instruct-v0.2",
    "Mixtral-8x7B-Instruct-v0.1",
    "Qwen3-30B-A3B",
    "Qwen/Qwen3-235B-A22B-Instruct-2507",
    "Phi-3-mini-128k-instruct",
    "bloom-7b1",
    "TinyLlama-1.1B-Chat-v1.0",
    "SmolLM2-360M-Instruct",
    "gpt-oss-20b",
    "DeepSeek-V3",
    "deepseek-coder-6.7b-instruct",
    "Llama-2-7b-chat-hf",
    "hermes-2-pro-llama-3-8b-DPO",
    "tiny-llama",
    "checkpoint-final",
    "model",
    "./local/model",
    "../Model-7B",
    "A model with spaces",
    "falcon-mamba-7b-instruct-Q4_K_M",
    "t5-small",
    "ModernBERT-large",
    "Meta-Llama-3.1-8B-Instruct-bf16",
    "OLMo-2-1124-7B-Instruct",
    "granite-3.3-2b-instruct",
    "Llama-3.2-1B-Instruct-lora",
    "iter3-model",
    "vicuna-13b-v1.5-16k",
    "model--with--double",
]
TOTALS = [0, 99_000, 494_032_768, 1_100_048_384, 7_241_732_096, 7_615_616_512, 8_030_261_248,
          46_702_792_704, -20_000_000]


def convert(llama_cpp: Path, folder: Path, out: Path) -> None:
    run = subprocess.run(
        [sys.executable, str(FAMILIES / "make_llamacpp.py"), "--convert", str(llama_cpp), str(folder),
         str(out), "f32"],
        capture_output=True, text=True,
    )
    if run.returncode != 0:
        sys.exit(f"{folder.name}: the converter failed:\n{run.stderr[-3000:]}")


def checkpoint(case: dict) -> Path:
    """The tiny checkpoint a case starts from: a family's, or a multimodal fixture's."""
    if case.get("multimodal"):
        return HERE.parent / "multimodal" / "hf" / case["multimodal"]
    return FAMILIES / "hf" / case["family"]


def kv_manifest(path: Path, made_by: str) -> dict:
    from gguf import GGUFReader, GGUFValueType  # type: ignore

    reader = GGUFReader(path)
    kv = []
    for field in reader.fields.values():
        if field.name.startswith("GGUF."):
            continue
        entry = {"key": field.name, "type": int(field.types[0])}
        if field.types[0] == GGUFValueType.ARRAY:
            entry["array_types"] = [int(t) for t in field.types[1:]]
        entry["value"] = plain(field.contents())
        kv.append(entry)
    return {"made_by": made_by, "file_sha256": hashlib.sha256(path.read_bytes()).hexdigest(), "kv": kv}


def name_components() -> list:
    from gguf.metadata import Metadata  # type: ignore

    out = []
    for name in NAMES:
        for total in TOTALS:
            full, org, basename, finetune, version, size = Metadata.get_model_id_components(name, total)
            out.append({
                "id": name, "total_params": total, "full_name": full, "organization": org,
                "basename": basename, "finetune": finetune, "version": version, "size_label": size,
                "title": Metadata.id_to_title(full) if full is not None else None,
            })
    return out


def plain_yaml(value):
    """A PyYAML value as JSON: dates as ISO text, NaN and infinities as Python spells them."""
    import datetime
    import math

    if isinstance(value, float) and (math.isnan(value) or math.isinf(value)):
        return str(value)
    if isinstance(value, datetime.date):
        return value.isoformat()
    if isinstance(value, dict):
        return {str(k): plain_yaml(v) for k, v in value.items()}
    if isinstance(value, list):
        return [plain_yaml(v) for v in value]
    return value


def yaml_reference() -> list:
    import yaml

    samples = json.loads((HERE / "yaml_samples.json").read_text())
    return [{"yaml": text, "value": plain_yaml(yaml.safe_load(text))} for text in samples]


def main() -> None:
    llama_cpp = Path(sys.argv[1] if len(sys.argv) > 1 else "/work/tools/llama.cpp").resolve()
    only = set(sys.argv[2:])
    if only == {"--no-convert"}:
        (HERE / "name_components.json").write_text(json.dumps(name_components(), indent=0) + "\n")
        (HERE / "yaml.json").write_text(json.dumps(yaml_reference(), indent=0, ensure_ascii=False) + "\n")
        return
    made_by = f"convert_hf_to_gguf.py --outtype f32 of llama.cpp {llama_cpp_commit(llama_cpp)}"
    cases = json.loads((HERE / "cases.json").read_text())["cases"]
    with tempfile.TemporaryDirectory() as tmp:
        for case in cases:
            if only and case["id"] not in only:
                continue
            folder = Path(tmp) / case["id"] / case["folder"]
            shutil.copytree(checkpoint(case), folder)
            if case.get("readme") is not None:
                (folder / "README.md").write_text(case["readme"], encoding="utf-8")
            if case.get("config"):
                config = json.loads((folder / "config.json").read_text())
                config.update(case["config"])
                (folder / "config.json").write_text(json.dumps(config, indent=2) + "\n")
            out = Path(tmp) / f"{case['id']}.gguf"
            convert(llama_cpp, folder, out)
            manifest = kv_manifest(out, made_by)
            (HERE / f"{case['id']}.json").write_text(json.dumps(manifest, ensure_ascii=False) + "\n")
            print(case["id"], manifest["file_sha256"])
            if case.get("mmproj"):
                # The vision GGUF: the converter itself, no tokenizer involved.
                mmproj = Path(tmp) / f"{case['id']}-mmproj.gguf"
                subprocess.run(
                    [sys.executable, str(llama_cpp / "convert_hf_to_gguf.py"), str(folder), "--mmproj",
                     "--outtype", "f32", "--outfile", str(mmproj)],
                    capture_output=True, text=True, check=True,
                )
                manifest = kv_manifest(mmproj, made_by.replace("--outtype", "--mmproj --outtype"))
                (HERE / f"{case['id']}-mmproj.json").write_text(json.dumps(manifest, ensure_ascii=False) + "\n")
                print(case["id"], "mmproj", manifest["file_sha256"])
    if not only:
        (HERE / "name_components.json").write_text(json.dumps(name_components(), indent=0) + "\n")
        (HERE / "yaml.json").write_text(json.dumps(yaml_reference(), indent=0, ensure_ascii=False) + "\n")


if __name__ == "__main__":
    main()
