#!/usr/bin/env python3
"""`bf16/mistral3-t4/`: `hf/mistral3-t4` with its weights cast to BF16 by torch (as Mistral Small
3.x is published), and `llama.cpp/mistral3-t4-bf16-mmproj-bf16.json`, the converter's
`--mmproj --outtype bf16` of it: the converter writes the patch kernel and the patch merger as F32
whatever the source, which the F32 fixtures cannot show. Through `make_qwen3vl.py`'s BF16 helpers.

    /work/tools/venv5/bin/python tests/testdata/multimodal/make_mistral3_bf16.py
    PYTHONPATH=/work/tools/llama.cpp/gguf-py /work/tools/venv5/bin/python \\
      tests/testdata/multimodal/make_mistral3_bf16.py --llamacpp /work/tools/llama.cpp
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
# Named as the F32 fixture: the converter's general.name comes from the folder's name.
BF16 = HERE / "bf16" / "mistral3-t4"


def main() -> None:
    sys.path.insert(0, str(HERE))
    import make_qwen3vl as q
    if sys.argv[1:2] == ["--llamacpp"]:
        spec = importlib.util.spec_from_file_location("multimodal_llamacpp", HERE / "make_llamacpp.py")
        ml = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(ml)
        llama_cpp = sys.argv[2] if len(sys.argv) > 2 else "/work/tools/llama.cpp"
        q.make_bf16_manifest(ml, llama_cpp, BF16, HERE / "llama.cpp" / "mistral3-t4-bf16-mmproj-bf16.json")
    else:
        q.make_bf16_copy(HERE / "hf" / "mistral3-t4", BF16)


if __name__ == "__main__":
    main()
