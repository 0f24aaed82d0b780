#!/usr/bin/env python3
"""Reference for tests/arch/config_fields_test.ts: every field of the transformers
config class of each `model_type` aprkit's families name (`hfModelTypes` in
src/arch/families/*.ts, read from the sources so a new family is picked up), with its
default, as transformers 5.18 declares them.

    /work/tools/venv5/bin/python tests/testdata/arch/make_config_fields.py

writes config_fields.json next to itself: model_type -> {class, fields: name -> default,
aliases: config.json name -> field (the class's attribute_map), when_absent: what the class's
to_dict() holds for each sizing field (head_dim, num_key_value_heads, the context length, the
norm epsilons; null: left None, or derived otherwise, so not filled in) and for rope_parameters
when config.json leaves them out}, and
src/arch/_config_defaults.ts, the when_absent rules as aprkit applies them. For a multimodal
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


# The sizing fields llama.cpp's converter writes as KV pairs (TextModel.set_gguf_parameters and
# the family classes: key/value length, head_count_kv, context_length, the norm epsilons) that a
# config.json may leave out. The converter reads config.json through AutoConfig's to_dict(), so it
# sees, and writes, what the class fills in for each.
SIZING = ["head_dim", "num_key_value_heads", "max_position_embeddings", "n_positions", "n_ctx",
          "rms_norm_eps", "layer_norm_eps", "layer_norm_epsilon", "norm_eps", "norm_epsilon"]
PROBE = {"hidden_size": 96, "num_attention_heads": 3}


def made(cls, **kwargs):
    try:
        return cls(**{**PROBE, **kwargs}).to_dict()
    except Exception:
        return None


def declared(cls, field):
    """The class's own default for `field` (a dataclass field), or MISSING."""
    for f in dataclasses.fields(cls):
        if f.name == field:
            return default_of(f)
    return dataclasses.MISSING


def rule_of(cls, field, base):
    """How to_dict() fills `field` when config.json has none: a number, another field's name
    (its value copied: num_attention_heads, DeepSeek's qk_rope_head_dim), the quotient
    "hidden_size / num_attention_heads", or None (left None: nothing written)."""
    value = base.get(field)
    if value is None or isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    wide = made(cls, hidden_size=192)
    many = made(cls, hidden_size=96, num_attention_heads=6)
    if wide is not None and (value, wide.get(field)) == (32, 64):
        return "hidden_size / num_attention_heads"
    if many is not None and (value, many.get(field)) == (3, 6):
        return "num_attention_heads"
    # A copy of another integer field (DeepSeek's head_dim = qk_rope_head_dim): it follows that
    # field when the field alone is changed.
    if isinstance(value, int):
        for other, given in base.items():
            if other == field or other in PROBE or isinstance(given, bool) or given != value:
                continue
            moved = made(cls, **{other: 2 * value + 2})
            if moved is not None and moved.get(field) == 2 * value + 2:
                return other
    if wide is not None and wide.get(field) != value:
        return None  # derived some other way: not filled in
    # A constant only when it is the class's declared default (DBRX's and GPTBigCode's
    # num_key_value_heads come from attn_config / multi_query: not filled in).
    return value if declared(cls, field) == value else None


def rope_when_absent(cls, base):
    """to_dict()'s rope_parameters for a config.json with no RoPE keys, or None."""
    rope = base.get("rope_parameters")
    return jsonable(rope) if isinstance(rope, dict) and rope else None


ROPE_KEYS = ("rope_parameters", "rope_scaling", "rope_theta", "rotary_emb_base", "rope_local_base_freq",
             "global_rope_theta", "rope_global_theta", "rope_theta_global", "local_rope_theta",
             "rope_local_theta", "rope_theta_local", "swa_rope_theta")


def applied(rule, config):
    """A when_absent rule evaluated on a config.json as aprkit evaluates it, or None."""
    if isinstance(rule, (int, float)) or isinstance(rule, dict):
        return rule
    if rule == "hidden_size / num_attention_heads":
        width, heads = config.get("hidden_size"), config.get("num_attention_heads")
        return width // heads if isinstance(width, int) and isinstance(heads, int) and heads > 0 else None
    return config.get(rule)


def fixture_configs(model_type):
    """The text-level config.json of each family fixture of this model_type."""
    for path in sorted((here.parent / "families" / "hf").glob("*/config.json")):
        config = json.loads(path.read_text())
        text = config.get("text_config") or {}
        if text.get("model_type", config.get("model_type")) == model_type:
            yield path.parent.name, {**text} if text else config
        elif config.get("model_type") == model_type and text:
            yield path.parent.name, {**text}


def holds(cls, field, rule, name, config):
    """Whether to_dict() of the fixture's config without `field` is what `rule` gives."""
    drop = ROPE_KEYS if field == "rope_parameters" else (field,)
    stripped = {k: v for k, v in config.items() if k not in drop}
    if field == "rope_parameters" and any(k in stripped for k in rule if k not in ("rope_type", "rope_theta")):
        return True  # aprkit fills nothing then (a field the dict would take in)
    try:
        truth = cls(**{k: v for k, v in stripped.items() if k != "model_type"}).to_dict().get(field)
    except Exception as e:
        print(f"  {name}: {cls.__name__} refuses the config without {field}: {e}")
        return True
    want = applied(rule, stripped)
    if want is not None and jsonable(truth) != jsonable(want):
        print(f"  {name}: without {field}, {cls.__name__} gives {truth!r}, the rule {rule!r} gives {want!r}: dropped")
        return False
    return True


def when_absent(cls, model_type):
    """What the class's to_dict() holds for each sizing field config.json leaves out (see
    rule_of), and its rope_parameters: the converter reads AutoConfig's to_dict(). Each rule
    is checked on the fixtures of the model type, with the field left out."""
    base = made(cls)
    if base is None:  # the probe's sizes do not fit the class (Mamba-2's heads): its constants only
        try:
            base = cls().to_dict()
        except Exception:
            return {}
    # None: the class has the field and leaves it None (nothing written), or derives it otherwise.
    out = {f: rule_of(cls, f, base) for f in SIZING if f in base}
    if (rope := rope_when_absent(cls, base)) is not None:
        out["rope_parameters"] = rope
    for name, config in fixture_configs(model_type):
        out = {f: rule if rule is None or holds(cls, f, rule, name, config) else None
               for f, rule in out.items()}
    return out


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
    entry["when_absent"] = when_absent(text if "outer" in entry else cls, model_type)
    out["model_types"][model_type] = entry

path = here / "config_fields.json"
path.write_text(json.dumps(out, indent=1) + "\n")
print(f"{len(out['model_types'])} model types -> {path}")

# The same rules for src/ (which reads no test data), with the config.json spellings
# (attribute_map aliases) that also give each field.
rules, aliases = {}, {}
for model_type, entry in out["model_types"].items():
    filled = {f: rule for f, rule in (entry or {}).get("when_absent", {}).items() if rule is not None}
    if filled:
        rules[model_type] = filled
        named = {}
        for alias, field in entry["aliases"].items():
            if field in filled:
                named.setdefault(field, []).append(alias)
        if named:
            aliases[model_type] = named
table = here.parents[2] / "src" / "arch" / "_config_defaults.ts"
table.write_text(f"""// This module is browser compatible.
// GENERATED by tests/testdata/arch/make_config_fields.py from {out["made_by"]}. Do not edit:
// regenerate (then deno fmt); tests/arch/config_fields_test.ts keeps it equal to config_fields.json.

/**
 * Internal: what each transformers config class's `to_dict()` holds for a
 * sizing field `config.json` leaves out (`when_absent` in
 * tests/testdata/arch/config_fields.json): a number (the class default),
 * `"hidden_size / num_attention_heads"`, another field's name (its value
 * copied), or, for `rope_parameters`, the whole dict. Read through
 * `config_defaults.ts`.
 *
 * @module
 */

/** One field's rule. */
export type AbsentRule = number | string | Readonly<Record<string, unknown>>;

/** model_type -> field -> rule. */
export const WHEN_ABSENT: Readonly<Record<string, Readonly<Record<string, AbsentRule>>>> = {json.dumps(rules, indent=2)};

/** model_type -> field -> the other config.json names of that field (`attribute_map`). */
export const ABSENT_ALIASES: Readonly<Record<string, Readonly<Record<string, readonly string[]>>>> = {json.dumps(aliases, indent=2)};
""")
print(f"{len(rules)} model types -> {table}")
