"""What llama-quantize makes of llama.cpp's converter file of each NVFP4 fixture.

Run with the lead's venv (gguf-py) from the repository root, after make_fixtures.py:

    PYTHONPATH=/work/tools/llama.cpp/gguf-py /work/tools/venv5/bin/python \\
        tests/testdata/hf/quantized/make_llama_quantize.py /work/tools/llama.cpp

For each NVFP4 fixture (modelopt-nvfp4, modelopt-mixed, ct-nvfp4, and
modelopt-nvfp4-moe and modelopt-nvfp4-nemotron-h(-latent), whose experts the converter stacks; name some after the
llama.cpp path to run only those) it runs the
converter (`convert_hf_to_gguf.py --outtype f32`, as make_fixtures.py does) and
`build/bin/llama-quantize` of that file, and writes `llama_quantize.json` beside
the checkpoint: per run its flags, its file type and either the refusal
(llama-quantize's "failed to quantize:" text) or the output described as
../../families/llama.cpp/*.json are (`file_sha256`, every KV pair, every tensor's
type, ne and sha256 in file order).

The runs: plain Q4_K_M and MXFP4_MOE, which llama-quantize refuses ("requantizing
from type nvfp4 is disabled"); Q4_K_M, Q5_K_S, Q6_K, IQ4_NL, MXFP4_MOE and
`--pure` Q4_K_M with each NVFP4 weight kept by a `--tensor-type ^NAME$=nvfp4`
(flags recorded as `--tensor-type NVFP4=nvfp4`, one per weight); and Q4_K_M,
MXFP4_MOE and Q8_0 with `--allow-requantize` (the NVFP4 weights decoded and
quantized again; their `.scale` stays).

Tests and CI read only the committed JSON.
"""

import json
import re
import runpy
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
LLAMA = Path(sys.argv[1])
FIXTURES = ["modelopt-nvfp4", "modelopt-mixed", "ct-nvfp4", "modelopt-nvfp4-moe", "modelopt-nvfp4-nemotron-h",
            "modelopt-nvfp4-nemotron-h-latent"]
KEEP = "--tensor-type NVFP4=nvfp4"
RUNS = [
    ("Q4_K_M", []),
    ("MXFP4_MOE", []),
    ("Q4_K_M", [KEEP]),
    ("Q5_K_S", [KEEP]),
    ("Q6_K", [KEEP]),
    ("IQ4_NL", [KEEP]),
    ("MXFP4_MOE", [KEEP]),
    ("Q4_K_M", [KEEP, "--pure"]),
    ("Q4_K_M", ["--allow-requantize"]),
    ("MXFP4_MOE", ["--allow-requantize"]),
    ("Q8_0", ["--allow-requantize"]),
]

# make_fixtures.py's converter run (its pre-tokenizer naming) and the families' manifest.
FIXTURES_SCRIPT = runpy.run_path(str(HERE / "make_fixtures.py"), run_name="make_fixtures")
MANIFEST = runpy.run_path(str(HERE.parents[1] / "families" / "make_llamacpp.py"))["manifest"]


def nvfp4_names(path: Path) -> list[str]:
    from gguf import GGUFReader  # type: ignore
    return [t.name for t in GGUFReader(path).tensors if t.tensor_type.name == "NVFP4"]


def run(f32: Path, out: Path, ftype: str, flags: list[str], kept: list[str]) -> dict:
    args = []
    for flag in flags:
        if flag == KEEP:
            for name in kept:
                args += ["--tensor-type", f"^{re.escape(name)}$=nvfp4"]
        else:
            args.append(flag)
    quantize = LLAMA / "build" / "bin" / "llama-quantize"
    done = subprocess.run([str(quantize), *args, str(f32), str(out), ftype], capture_output=True, text=True)
    entry = {"ftype": ftype, "flags": flags}
    if done.returncode != 0:
        errors = [line.split("failed to quantize: ", 1)[1] for line in (done.stdout + done.stderr).splitlines()
                  if "failed to quantize: " in line and "llama_model_quantize" in line]
        assert errors, done.stdout + done.stderr
        entry["refused"] = errors[0]
        return entry
    commit = subprocess.run(["git", "-C", str(LLAMA), "log", "-1", "--format=%h"],
                            capture_output=True, text=True, check=True).stdout.strip()
    entry["gguf"] = MANIFEST(out, f"llama.cpp {commit}: llama-quantize {' '.join(flags + [''])}"
                                  f"of convert_hf_to_gguf.py --outtype f32, {ftype}")
    return entry


def main() -> None:
    # Only the fixtures named after the llama.cpp path, when any are.
    for name in sys.argv[2:] or FIXTURES:
        folder = HERE / name
        with tempfile.TemporaryDirectory() as tmp:
            f32 = Path(tmp) / "f32.gguf"
            FIXTURES_SCRIPT["convert"](folder, f32, ("--outtype", "f32"))
            kept = nvfp4_names(f32)
            assert kept, name
            runs = [run(f32, Path(tmp) / f"{i}.gguf", ftype, flags, kept) for i, (ftype, flags) in enumerate(RUNS)]
        # One run a line: ten manifests of the same small model stay small.
        (folder / "llama_quantize.json").write_text(
            '{"nvfp4_tensors": ' + json.dumps(kept) + ',\n "runs": [\n' +
            ",\n".join(json.dumps(r) for r in runs) + "\n]}\n")
        print(name, [r.get("refused", "ok") for r in runs])


if __name__ == "__main__":
    main()
