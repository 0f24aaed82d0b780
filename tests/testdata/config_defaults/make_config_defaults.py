#!/usr/bin/env python3
"""What llama.cpp's converter writes for a config.json that leaves out a sizing field, for
tests/interop/config_defaults_test.ts.

    PYTHONPATH=/work/tools/llama.cpp/gguf-py /work/tools/venv5/bin/python \\
        tests/testdata/config_defaults/make_config_defaults.py /work/tools/llama.cpp [CASE…]

The converter reads config.json through transformers' AutoConfig.to_dict(), so a field the
file leaves out reaches it as the class fills it in (tests/testdata/arch/config_fields.json,
`when_absent`), and it writes KV pairs from that value. Each case in cases.json is a
checkpoint (a family fixture, `../families/hf/<base>/`, or one made here, `hf/<name>/`, whose
sizes are the class default's: Qwen3's head_dim 128, Gemma's 256) and the fields to leave out
of its config.json. For each, the folder is copied to `<tmp>/<name>/` (the converter names the
file after its folder) without those fields, transformers is checked to load it (the default
agrees with the tensors), and the converter's `--outtype f32` file of it is described in
`llama.cpp/<name>-f32.json` as make_llamacpp.py describes its files (KV pairs, tensor hashes,
file sha256). Each case in `refused` is checked the other way: transformers cannot load the
copy (the default contradicts the tensors), and what the converter does with it is recorded
in cases.json (`converter`).

The checkpoints made here (`made` in cases.json) are the base fixture's config with the sizes
changed, built by transformers from a seeded initialisation and saved in one F32 shard, with
the base fixture's tokenizer files; no reference run (only converter files are compared).
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
FAMILIES = HERE.parent / "families"
sys.path.insert(0, str(FAMILIES))
import make_llamacpp  # noqa: E402  (its convert() wrapper and manifest())

import torch  # noqa: E402
import transformers  # noqa: E402

WEIGHTS = ("model.safetensors", "model.safetensors.index.json")


def source(case: dict) -> Path:
    return HERE / "hf" / case["name"] if "made" in case else FAMILIES / "hf" / case["base"]


def make(case: dict) -> None:
    """A checkpoint of the base fixture's class with `made`'s sizes, seeded."""
    base = FAMILIES / "hf" / case["base"]
    folder = HERE / "hf" / case["name"]
    shutil.rmtree(folder, ignore_errors=True)
    config = transformers.AutoConfig.from_pretrained(base)
    for key, value in case["made"].items():
        setattr(config, key, value)
    torch.manual_seed(case["seed"])
    model = transformers.AutoModelForCausalLM.from_config(config, dtype=torch.float32)
    with torch.no_grad():  # norms and biases off their init values, as the family fixtures
        for name, p in model.named_parameters():
            if p.dim() == 1:
                p.add_(torch.randn_like(p) * 0.1)
    model.save_pretrained(folder, max_shard_size="1GB")
    for f in base.iterdir():
        if f.name.startswith("tokenizer") or f.name == "special_tokens_map.json":
            shutil.copyfile(f, folder / f.name)
    print(f"{case['name']}: made from {case['base']} with {case['made']}")


def stripped(case: dict, tmp: Path) -> Path:
    folder = tmp / case["name"]
    shutil.copytree(source(case), folder)
    path = folder / "config.json"
    config = json.loads(path.read_text())
    text = config.get("text_config") or config
    for field in case["drop"]:
        assert field in text, f"{case['name']}: {field} not in config.json"
        del text[field]
    path.write_text(json.dumps(config, indent=2) + "\n")
    return folder


def loads(folder: Path) -> str | None:
    """None when transformers loads the checkpoint, else its error's first line."""
    try:
        transformers.AutoModelForCausalLM.from_pretrained(folder, dtype=torch.float32)
        return None
    except Exception as e:  # noqa: BLE001
        return first_mismatch(folder) or (str(e).strip().splitlines() or [type(e).__name__])[0]


def first_mismatch(folder: Path) -> str | None:
    """The first tensor whose shape differs from the model transformers builds from the config."""
    from safetensors import safe_open

    config = transformers.AutoConfig.from_pretrained(folder)
    with torch.device("meta"):
        model = transformers.AutoModelForCausalLM.from_config(config)
    built = {k: list(v.shape) for k, v in model.state_dict().items()}
    for shard in sorted(folder.glob("*.safetensors")):
        with safe_open(shard, "pt") as f:
            for name in f.keys():
                saved = list(f.get_slice(name).get_shape())
                if name in built and built[name] != saved:
                    return f"{name}: checkpoint {saved}, model {built[name]} (size mismatch)"
    return None


def main() -> None:
    llama_cpp = Path(sys.argv[1] if len(sys.argv) > 1 else "/work/tools/llama.cpp").resolve()
    cases_path = HERE / "cases.json"
    cases = json.loads(cases_path.read_text())
    only = set(sys.argv[2:])  # case names to remake (default: all)
    chosen = lambda kind: [c for c in cases[kind] if not only or c["name"] in only]  # noqa: E731
    commit = make_llamacpp.llama_cpp_commit(llama_cpp)
    out_dir = HERE / "llama.cpp"
    out_dir.mkdir(exist_ok=True)
    for case in chosen("equal"):
        if "made" in case:
            make(case)
    with tempfile.TemporaryDirectory() as tmp:
        for case in chosen("equal"):
            work = Path(tmp) / case["name"]
            work.mkdir()
            folder = stripped(case, work)
            problem = loads(folder)
            assert problem is None, f"{case['name']}: transformers cannot load it: {problem}"
            gguf = work / "out.gguf"
            run = subprocess.run([sys.executable, make_llamacpp.__file__, "--convert", str(llama_cpp),
                                  str(folder), str(gguf)], capture_output=True, text=True)
            assert run.returncode == 0, f"{case['name']}: the converter refused: {run.stderr[-400:]}"
            made_by = f"llama.cpp {commit}: convert_hf_to_gguf.py --outtype f32, without {', '.join(case['drop'])}"
            (out_dir / f"{case['name']}-f32.json").write_text(
                json.dumps(make_llamacpp.manifest(gguf, made_by), indent=1) + "\n")
            print(f"{case['name']}: converter file described")
        for case in chosen("refused"):
            work = Path(tmp) / case["name"]
            work.mkdir()
            folder = stripped(case, work)
            problem = loads(folder)
            assert problem is not None, f"{case['name']}: transformers loads it"
            gguf = work / "out.gguf"
            run = subprocess.run([sys.executable, make_llamacpp.__file__, "--convert", str(llama_cpp),
                                  str(folder), str(gguf)], capture_output=True, text=True)
            case["transformers"] = problem[:300]
            case["converter"] = ("writes a file" if run.returncode == 0 and gguf.exists()
                                 else "refuses: " + (run.stderr.strip().splitlines() or ["?"])[-1][:200])
            print(f"{case['name']}: transformers: {case['transformers']}; converter {case['converter']}")
    cases["made_by"] = f"transformers {transformers.__version__}, llama.cpp {commit}"
    cases_path.write_text(json.dumps(cases, indent=1) + "\n")


if __name__ == "__main__":
    main()
