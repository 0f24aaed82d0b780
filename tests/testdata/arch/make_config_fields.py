#!/usr/bin/env python3
"""Reference for tests/arch/config_fields_test.ts: every field of the transformers
config class of each `model_type` aprkit's families name (`hfModelTypes` in
src/arch/families/*.ts, read from the sources so a new family is picked up), with its
default, as transformers 5.18 declares them.

    /work/tools/venv5/bin/python tests/testdata/arch/make_config_fields.py

writes config_fields.json next to itself: model_type -> {class, fields: name -> default,
aliases: config.json name -> field (the class's attribute_map), head_dim_when_absent: what
the class fills in for a config.json without head_dim}. For a multimodal
model_type (a composite config with a `text_config`), `class`/`fields` are the text
config's (llama.cpp's converter moves `text_config` to the top) and `outer` holds the
composite's own fields. A model_type transformers does not know is recorded as null.
"""

import dataclasses
import json
import math
import re
from pathlib import Path

import transformers
from transformers import CONFIG_MAPPING

here = Path(__file__).resolve().parent
families = here.parents[2] / "src" / "arch" / "families"

model_types: list[str] = []
for source in sorted(families.glob("*.ts")):
    for group in re.findall(r"hfModelTypes:\s*\[([^\]]*)\]", source.read_text()):
        model_types += re.findall(r'"([^"]+)"', group)


def jsonable(value):
    if isinstance(value, float) and not math.isfinite(value):
        return repr(value)  # Mamba-2's time_step_limit (0.0, inf): JSON has no infinity
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    if isinstance(value, (list, tuple)):
        return [jsonable(v) for v in value]
    if isinstance(value, dict):
        return {str(k): jsonable(v) for k, v in value.items()}
    return repr(value)


def default_of(field):
    if field.default is not dataclasses.MISSING:
        return jsonable(field.default)
    if field.default_factory is not dataclasses.MISSING:
        return jsonable(field.default_factory())
    return None


def describe(cls):
    fields = {f.name: default_of(f) for f in dataclasses.fields(cls) if not f.name.startswith("_")}
    aliases = dict(sorted(getattr(cls, "attribute_map", {}).items()))
    return {"class": cls.__name__, "fields": dict(sorted(fields.items())), "aliases": aliases}


def head_dim_when_absent(cls):
    """What the class's to_dict() says of head_dim when config.json has none (the
    converter reads AutoConfig's to_dict()): hidden_size / num_attention_heads, a
    constant, or None (not filled in)."""
    try:
        small = cls(hidden_size=96, num_attention_heads=3).to_dict().get("head_dim")
        large = cls(hidden_size=192, num_attention_heads=3).to_dict().get("head_dim")
    except Exception:
        return None
    if small is None or large is None:
        return None
    if (small, large) == (32, 64):
        return "hidden_size / num_attention_heads"
    return small if small == large else None


TEXT_OF_DRAFTERS = {"gemma4_assistant": "gemma4_text",
                    "gemma4_unified_assistant": "gemma4_unified_text"}

out: dict = {"made_by": f"transformers {transformers.__version__}", "model_types": {}}
for model_type in sorted(set(model_types)):
    try:
        cls = CONFIG_MAPPING[model_type]
    except KeyError:
        out["model_types"][model_type] = None
        continue
    entry = describe(cls)
    if "text_config" in getattr(cls, "sub_configs", {}):
        default_text = cls().text_config
        # The drafters' configs default no text_config; their __post_init__ reads a dict as this type.
        text = (type(default_text) if default_text is not None
                else CONFIG_MAPPING[TEXT_OF_DRAFTERS[model_type]])
        outer = entry
        entry = describe(text)
        entry["outer"] = outer
    entry["head_dim_when_absent"] = head_dim_when_absent(text if "outer" in entry else cls)
    out["model_types"][model_type] = entry

path = here / "config_fields.json"
path.write_text(json.dumps(out, indent=1) + "\n")
print(f"{len(out['model_types'])} model types -> {path}")
