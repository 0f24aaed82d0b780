#!/usr/bin/env python3
"""A held-out probe of the family fixtures: each family rebuilt wider (hidden 96,
6 query heads, KV heads ×1.5, MLP widths ×1.5) with a new seed, then judged as the
tests judge the fixtures — aprkit's `--outtype f32`-equivalent GGUF against the
converter's (every KV pair and tensor) and llama.cpp's log-probs against
transformers'. Nothing it writes is committed: it looks for what the fixtures'
one shape cannot show (a width or head count taken from the wrong field).

    PYTHONPATH=/work/tools/llama.cpp/gguf-py /work/tools/venv5/bin/python \\
        tests/testdata/families/probe_held_out.py /work/tools/llama.cpp OUT_DIR [FAMILY...]

Families whose widened build transformers or the fixture script refuses are listed
as such (shapes the script ties to the defaults), not judged. Mamba's `ssm_a` (−exp(A_log))
differs from the converter's in the last bit, as the tests allow (README, `f32_base64`).
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import traceback
from pathlib import Path

import make_families as mf
import make_llamacpp as ml

ROOT = Path(__file__).resolve().parents[3]
SCALED = {"hidden_size": 1.5, "intermediate_size": 1.5, "moe_intermediate_size": 1.5,
          "shared_expert_intermediate_size": 1.5, "num_attention_heads": 1.5,
          "num_key_value_heads": 1.5,
          # Mamba-2 heads: heads × head_dim must stay hidden × expand.
          "num_heads": 1.5, "mamba_n_heads": 1.5}


# Widths the ×1.5 rule would break: DeepSeek-V4's MXFP4 experts need whole 32-value blocks.
OVERRIDES = {"deepseek4": {"moe_intermediate_size": 64}}


def widened(name: str, args: dict) -> dict:
    out = dict(args)
    for key, factor in SCALED.items():
        value = out.get(key)
        if isinstance(value, int) and value > 1:
            out[key] = int(value * factor)
    # Laguna's per-layer query heads widen with the global count.
    if isinstance(out.get("num_attention_heads_per_layer"), list):
        out["num_attention_heads_per_layer"] = [int(n * 1.5) for n in out["num_attention_heads_per_layer"]]
    out.update(OVERRIDES.get(name, {}))
    return out


def describe(path: Path) -> dict:
    m = ml.manifest(path, "")
    kv = {e["key"]: e for e in m["kv"] if e["key"] not in ("general.name", "general.basename")}
    return {"kv": kv, "tensors": {t["name"]: t for t in m["tensors"]},
            "order": [t["name"] for t in m["tensors"]]}


def differences(mine: dict, theirs: dict) -> list[str]:
    out = []
    for key in sorted(set(mine["kv"]) | set(theirs["kv"])):
        a, b = mine["kv"].get(key), theirs["kv"].get(key)
        if a != b:
            out.append(f"kv {key}: aprkit {a and str(a.get('value'))[:80]} converter {b and str(b.get('value'))[:80]}")
    for name in sorted(set(mine["tensors"]) | set(theirs["tensors"])):
        a, b = mine["tensors"].get(name), theirs["tensors"].get(name)
        if a != b:
            out.append(f"tensor {name}: aprkit {a and (a['type'], a['ne'])} converter {b and (b['type'], b['ne'])}"
                       + (" (bytes)" if a and b and a["type"] == b["type"] and a["ne"] == b["ne"] else ""))
    if not out and mine["order"] != theirs["order"]:
        out.append("tensor order differs")
    return out


def probe(llama_cpp: Path, out_dir: Path, name: str, seed: int) -> dict:
    work = out_dir / name
    work.mkdir(parents=True, exist_ok=True)
    # Remote tokenizer code the fixture script copies into Kimi's and Hunyuan's folders.
    shutil.copytree(Path(__file__).parent / "remote", work / "remote", dirs_exist_ok=True)
    mf.HERE = work
    config_cls, model_cls, args, tokenizer_kind, _ = mf.FAMILIES[name]
    mf.FAMILIES[name] = (config_cls, model_cls, widened(name, args), tokenizer_kind, {})
    try:
        mf.make(name, seed=seed)
    except BaseException as e:  # the script sys.exit()s on margins
        return {"family": name, "status": "not built", "why": f"{type(e).__name__}: {str(e)[:200]}"}
    folder = work / "hf" / name
    theirs_path, mine_path = work / "converter.gguf", work / "aprkit.gguf"
    # In a process of its own: make_llamacpp.convert patches the converter per folder.
    converted = subprocess.run(
        [sys.executable, "-c", "import sys, make_llamacpp as ml; from pathlib import Path; "
         "ml.convert(Path(sys.argv[1]), Path(sys.argv[2]), Path(sys.argv[3]))",
         str(llama_cpp), str(folder), str(theirs_path)],
        capture_output=True, text=True, cwd=Path(__file__).parent)
    if converted.returncode != 0:
        theirs_path = None
        converter_error = converted.stderr.strip()[-300:]
    run = subprocess.run(["deno", "run", "-A", str(ROOT / "cli.ts"), "convert", str(folder), "-o",
                          str(mine_path), "--dtype", "f32", "--force"], capture_output=True, text=True)
    result = {"family": name}
    if run.returncode != 0:
        result["aprkit"] = f"exit {run.returncode}: {run.stderr.strip()[:300]}"
    if theirs_path is None:
        result["converter"] = converter_error
    if run.returncode == 0 and theirs_path is not None:
        result["differences"] = differences(describe(mine_path), describe(theirs_path))[:8]
    if run.returncode == 0:
        judged_path = mine_path
        if "MXFP4" in run.stdout + run.stderr:
            # llama.cpp runs MXFP4 experts on Q8_0 activations: judge them decoded, as
            # deepseek4_test.ts and the gpt-oss tests do, and record the packed file's figure.
            result["llama_mxfp4"] = judge(work / "reference" / f"{name}.json", mine_path)
            judged_path = work / "decoded.gguf"
            subprocess.run(["deno", "run", "-A", str(ROOT / "cli.ts"), "convert", str(mine_path), "-o",
                            str(judged_path), "--keep-names", "--dtype", "f32", "--force"], check=True,
                           capture_output=True)
        result["llama"] = judge(work / "reference" / f"{name}.json", judged_path)
    return result


def judge(reference: Path, gguf: Path) -> dict:
    judged = subprocess.run(["deno", "run", "-A", str(ROOT / "tests/testdata/families/probe_judge.ts"),
                             str(reference), str(gguf)], capture_output=True, text=True)
    try:
        return json.loads(judged.stdout.strip().splitlines()[-1])
    except Exception:
        return {"error": judged.stderr.strip()[-300:]}


def main() -> None:
    llama_cpp, out_dir = Path(sys.argv[1]), Path(sys.argv[2])
    names = sys.argv[3:] or list(mf.FAMILIES)
    for i, name in enumerate(names):
        try:
            r = probe(llama_cpp, out_dir, name, seed=7001 + i)
        except BaseException:
            r = {"family": name, "status": "probe failed", "why": traceback.format_exc()[-400:]}
        print(json.dumps(r), flush=True)


if __name__ == "__main__":
    main()
