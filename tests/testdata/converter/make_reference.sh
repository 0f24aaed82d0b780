#!/usr/bin/env bash
# Records the sha256 of what llama.cpp's converter and llama-quantize write for
# tiny checkpoints of each family (tests/interop/_tiny_checkpoint.ts builds
# them, with a real tokenizer from tests/testdata/tokenizers/packages.json),
# into reference.json beside this script. converter_sha256_test.ts builds
# the same folders and requires aprkit's files to have the same sha256.
#
# Needs: the llama.cpp source node-llama-cpp 3.22.1 bundles
# (llama/gitRelease.bundle, cloned), built with llama-quantize; a Python with
# torch, transformers, safetensors and sentencepiece; deno.
#
#   LLAMA_CPP=/path/to/llama.cpp PYTHON=/path/to/python bash make_reference.sh
set -euo pipefail
HERE="$(cd "$(dirname "$0")" && pwd)"
REPO="$(cd "$HERE/../../.." && pwd)"
: "${LLAMA_CPP:?set LLAMA_CPP to the llama.cpp source folder}"
: "${PYTHON:?set PYTHON to a python with torch and transformers}"
# KEEP=DIR keeps the folders and files there (to compare with aprkit's by hand).
WORK="${KEEP:-$(mktemp -d)}"
mkdir -p "$WORK"
[ -n "${KEEP:-}" ] || trap 'rm -rf "$WORK"' EXIT
cd "$REPO"
deno run -A tests/interop/_converter_cases.ts "$WORK" > "$WORK/folders.tsv"
{
  echo "{"
  echo "  \"llama_cpp\": \"$(git -C "$LLAMA_CPP" rev-parse HEAD)\","
  echo "  \"files\": {"
  first=1
  while IFS=$'\t' read -r family folder; do
    for outtype in f32 f16 bf16 q8_0; do
      PYTHONPATH="$LLAMA_CPP/gguf-py" "$PYTHON" "$LLAMA_CPP/convert_hf_to_gguf.py" "$folder" \
        --outtype "$outtype" --outfile "$WORK/$family-$outtype.gguf" > "$WORK/log" 2>&1 ||
        { cat "$WORK/log" >&2; exit 1; }
      [ $first = 1 ] || echo ","
      first=0
      printf '    "%s %s": "%s"' "$family" "$outtype" "$(sha256sum "$WORK/$family-$outtype.gguf" | cut -d' ' -f1)"
    done
    for preset in Q4_K_M Q4_K_S Q5_K_M Q5_K_S Q6_K; do
      "$LLAMA_CPP/build/bin/llama-quantize" "$WORK/$family-f32.gguf" "$WORK/$family-$preset.gguf" "$preset" \
        > "$WORK/log" 2>&1 || { cat "$WORK/log" >&2; exit 1; }
      echo ","
      printf '    "%s %s": "%s"' "$family" "$preset" "$(sha256sum "$WORK/$family-$preset.gguf" | cut -d' ' -f1)"
    done
  done < "$WORK/folders.tsv"
  echo
  echo "  }"
  echo "}"
} > "$HERE/reference.json"
