#!/usr/bin/env python3
"""config.json of fixtures as transformers 5.18 saves them, for the tests of aprkit's
handling of that form (issue 31).

    /work/tools/venv5/bin/python tests/testdata/families/make_transformers5_configs.py

For each name in SAVED it loads `hf/<name>/config.json` with `AutoConfig.from_pretrained`
and writes what `save_pretrained` makes of it to `transformers5/<name>.config.json`,
unchanged: DeepSeek-V4's published `compress_ratios`, `num_hash_layers` and `rope_scaling`
folded into transformers' `layer_types` + `compress_rates`, `mlp_layer_types` and
`rope_parameters` (main/compress), on which llama.cpp's converter fails. It checks that
loading the saved form gives the same config as the published one (transformers folds
both into the same fields).
"""

from __future__ import annotations

import json
import tempfile
from pathlib import Path

import transformers
from transformers import AutoConfig

HERE = Path(__file__).resolve().parent
SAVED = ["deepseek4"]


def main() -> None:
    out_dir = HERE / "transformers5"
    out_dir.mkdir(exist_ok=True)
    for name in SAVED:
        published = AutoConfig.from_pretrained(HERE / "hf" / name)
        with tempfile.TemporaryDirectory() as tmp:
            published.save_pretrained(tmp)
            saved = json.loads((Path(tmp) / "config.json").read_text())
            again = AutoConfig.from_pretrained(tmp)
        # Where it was read from aside, the same config.
        same = [{k: v for k, v in c.to_dict().items() if k != "_name_or_path"} for c in (again, published)]
        assert same[0] == same[1], f"{name}: the saved form loads otherwise"
        (out_dir / f"{name}.config.json").write_text(json.dumps(saved, indent=2, sort_keys=True) + "\n")
        print(f"{name}: transformers {transformers.__version__}'s config.json, {len(saved)} keys")


if __name__ == "__main__":
    main()
