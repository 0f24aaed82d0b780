"""Make the split GGUF fixtures (issue 25 items 1 and 2), with the two writers
users have: llama.cpp's `llama-gguf-split` and gguf-py's GGUFWriter.

1. `llama/tiny-qwen2-Q4_K_S-0000i-of-00003.gguf`: `llama-gguf-split --split
   --split-max-tensors 10` of tests/testdata/gguf/tiny-qwen2-Q4_K_S.gguf
   (26 tensors: 10 + 10 + 6).
2. `gguf-py/iquants-0000i-of-00004.gguf`: gguf-py's GGUFWriter with
   `split_max_tensors=6, small_first_shard=True` (a first shard holding only
   metadata) re-writing tests/testdata/ggml_types/iquants.gguf's 16 tensors.
3. `llama_split_of_aprkit.json`: the sha256 of each shard `llama-gguf-split
   --split-max-size 2M` makes of aprkit's own unsplit GGUF conversion of
   tests/testdata/gguf/tiny-llama-f32.gguf (and that file's sha256), so the
   test can check that `apr convert --max-shard-size 2MB` writes the same
   bytes as gguf-split (the shards are not committed: 7 MB).

Usage (llama.cpp's gguf-py, which knows Q2_0):
  PYTHONPATH=/work/tools/llama.cpp/gguf-py /work/tools/venv5/bin/python tests/testdata/gguf_split/make_fixtures.py /work/tools/llama.cpp
"""

import os
import shutil
import subprocess
import sys
from pathlib import Path

import hashlib
import json
import tempfile

import gguf

LLAMA = sys.argv[1]
HERE = Path(__file__).resolve().parent
DATA = HERE.parent

llama_dir = HERE / "llama"
shutil.rmtree(llama_dir, ignore_errors=True)
llama_dir.mkdir()
subprocess.run(
    [os.path.join(LLAMA, "build/bin/llama-gguf-split"), "--split", "--split-max-tensors", "10",
     str(DATA / "gguf/tiny-qwen2-Q4_K_S.gguf"), str(llama_dir / "tiny-qwen2-Q4_K_S")],
    check=True, stdout=subprocess.DEVNULL,
)

py_dir = HERE / "gguf-py"
shutil.rmtree(py_dir, ignore_errors=True)
py_dir.mkdir()
src = gguf.GGUFReader(DATA / "ggml_types/iquants.gguf")
writer = gguf.GGUFWriter(py_dir / "iquants.gguf", "llama", split_max_tensors=6, small_first_shard=True)
writer.add_name("ggml types fixture")
for t in src.tensors:
    writer.add_tensor(t.name, t.data, raw_shape=t.data.shape, raw_dtype=t.tensor_type)
writer.write_header_to_file()
writer.write_kv_data_to_file()
writer.write_tensors_to_file()
writer.close()
REPO = DATA.parent.parent
deno = REPO / ".tools/node_modules/deno/deno"
sha = lambda p: hashlib.sha256(Path(p).read_bytes()).hexdigest()
with tempfile.TemporaryDirectory() as tmp:
    one = Path(tmp) / "one.gguf"
    subprocess.run([str(deno), "run", "-A", str(REPO / "cli.ts"), "convert",
                    str(DATA / "gguf/tiny-llama-f32.gguf"), "-o", str(one), "-q"], check=True)
    (Path(tmp) / "ref").mkdir()
    subprocess.run([os.path.join(LLAMA, "build/bin/llama-gguf-split"), "--split", "--split-max-size",
                    "2M", str(one), str(Path(tmp) / "ref/q")], check=True, stdout=subprocess.DEVNULL)
    shards = sorted((Path(tmp) / "ref").iterdir())
    reference = {
        "input": "gguf/tiny-llama-f32.gguf",
        "aprkit_unsplit_sha256": sha(one),
        "llama_gguf_split": "--split --split-max-size 2M",
        "shards": [{"name": p.name, "size": p.stat().st_size, "sha256": sha(p)} for p in shards],
    }
(HERE / "llama_split_of_aprkit.json").write_text(json.dumps(reference, indent=1) + "\n")
print(sorted(p.name for p in llama_dir.iterdir()), sorted(p.name for p in py_dir.iterdir()))
