#!/usr/bin/env bash
# Records what llama.cpp's converter (de3ff81) writes for the tokenizers of the
# checkpoints tests/interop/_tokenizer_companions_case.ts builds (case:
# tokenizer.model, added_tokens.json, chat_template.jinja +
# additional_chat_templates/; codellama: vocab_size 32016): their tokenizer.*
# keys, from --vocab-only GGUFs, into expected.json beside this script (for
# codellama, arrays as their length). tests/interop/tokenizer_companions_test.ts converts the same folder
# with aprkit and compares.
#
#   LLAMA_CPP=/path/to/llama.cpp PYTHON=/path/to/python bash make_expected.sh
set -euo pipefail
HERE="$(cd "$(dirname "$0")" && pwd)"
REPO="$(cd "$HERE/../../../.." && pwd)"
: "${LLAMA_CPP:?set LLAMA_CPP to the llama.cpp source folder}"
: "${PYTHON:?set PYTHON to a python with torch, transformers and sentencepiece}"
WORK="$(mktemp -d)"
trap 'rm -rf "$WORK"' EXIT
deno run -A "$REPO/tests/interop/_tokenizer_companions_case.ts" "$WORK"
for name in case codellama; do
  PYTHONPATH="$LLAMA_CPP/gguf-py" "$PYTHON" "$LLAMA_CPP/convert_hf_to_gguf.py" "$WORK/$name" \
    --vocab-only --outfile "$WORK/$name.gguf" > "$WORK/log" 2>&1 || { cat "$WORK/log" >&2; exit 1; }
done
PYTHONPATH="$LLAMA_CPP/gguf-py" "$PYTHON" - "$WORK" "$(git -C "$LLAMA_CPP" rev-parse HEAD)" \
  > "$HERE/expected.json" <<'PY'
import json
import sys

from gguf import GGUFReader, GGUFValueType


def tokenizer_keys(path, arrays):
    reader = GGUFReader(path)
    keys = {}
    for name, field in reader.fields.items():
        if not name.startswith("tokenizer."):
            continue
        kind = field.types[0]
        if kind == GGUFValueType.ARRAY and not arrays:
            value = {"length": len(field.data)}
        elif kind == GGUFValueType.ARRAY:
            inner = field.types[-1]
            if inner == GGUFValueType.STRING:
                value = [bytes(field.parts[i]).decode("utf-8") for i in field.data]
            else:
                value = [field.parts[i].tolist()[0] for i in field.data]
        elif kind == GGUFValueType.STRING:
            value = bytes(field.parts[-1]).decode("utf-8")
        else:
            value = field.parts[-1].tolist()[0]
        keys[name] = value
    return keys


work = sys.argv[1]
json.dump({
    "llama_cpp": sys.argv[2],
    "keys": tokenizer_keys(f"{work}/case.gguf", True),
    "codellama": tokenizer_keys(f"{work}/codellama.gguf", False),
}, sys.stdout, ensure_ascii=False)
sys.stdout.write("\n")
PY
