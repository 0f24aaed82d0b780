#!/usr/bin/env bash
# Build mtmd_embed (mtmd_embed.cpp) against node-llama-cpp's prebuilt
# llama.cpp: libmtmd is not among its binaries, so its sources (tools/mtmd of
# the same llama.cpp commit, the package's llama/gitRelease.bundle) are
# compiled into the program, which links the prebuilt libllama and libggml
# (public API only: mtmd must not link llama-common, its CMakeLists checks).
#
#   tests/interop/mtmd_embed/build.sh LLAMA_CPP_TREE PREBUILT_BINS OUT
#
# LLAMA_CPP_TREE: a checkout of that commit (a clone of the bundle);
# PREBUILT_BINS: @node-llama-cpp/<platform>/bins/<platform>; OUT: the program.
# -O0: the encoders' arithmetic runs in the prebuilt ggml; what is compiled
# here builds graphs and preprocesses images, so optimising it buys nothing
# and costs minutes. Linux only (the prebuilt libraries' names).
set -euo pipefail
tree="$1"
bins="$2"
out="$3"
here="$(cd "$(dirname "$0")" && pwd)"
mtmd="$tree/tools/mtmd"
[ -f "$mtmd/mtmd.h" ] || { echo "$tree: no tools/mtmd/mtmd.h" >&2; exit 2; }
lib() {
  local found
  found="$(ls "$bins"/$1 2>/dev/null | head -1)"
  [ -n "$found" ] || { echo "$bins: no $1" >&2; exit 2; }
  echo "$found"
}
llama="$(lib 'libllama.*so')"
ggml="$(lib 'libggml.*so')"
ggml_base="$(lib 'libggml-base*.so')"

# The library's sources, as its CMakeLists lists them (helpers and the CLI left out).
sources=("$mtmd/mtmd.cpp" "$mtmd/mtmd-audio.cpp" "$mtmd/mtmd-image.cpp" "$mtmd/clip.cpp")
while read -r model; do
  sources+=("$mtmd/$model")
done < <(sed -n '/^add_library(mtmd/,/^ *)/p' "$mtmd/CMakeLists.txt" | grep -o 'models/[A-Za-z0-9_.-]*\.cpp')
sources+=("$here/mtmd_embed.cpp")

objects="$(mktemp -d)"
trap 'rm -rf "$objects"' EXIT
flags=(-O0 -std=c++17 -fPIC -DLLAMA_SHARED -I"$tree/include" -I"$tree/ggml/include" -I"$mtmd" -I"$tree/vendor")
jobs="${MTMD_EMBED_JOBS:-2}"
printf '%s\n' "${sources[@]}" | xargs -P "$jobs" -I{} sh -c \
  'g++ "$@" -c "{}" -o "'"$objects"'/$(basename "{}" .cpp).o"' _ "${flags[@]}"
mkdir -p "$(dirname "$out")"
g++ -o "$out.tmp" "$objects"/*.o "$llama" "$ggml" "$ggml_base" -Wl,-rpath,"$bins" -lpthread
mv "$out.tmp" "$out"
echo "built $out (${#sources[@]} sources)"
