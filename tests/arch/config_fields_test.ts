/**
 * Every field of every family's transformers config class is accounted for
 * (src/arch/config_fields.ts): written to GGUF, checked against what
 * llama.cpp hard-codes, warned about, or irrelevant. The fields and their
 * defaults are transformers 5.18's own, recorded by
 * tests/testdata/arch/make_config_fields.py (which reads the families'
 * `hfModelTypes`, so a new family is covered once the JSON is remade).
 */

import assert from "node:assert/strict";
import { classifiedFields } from "../../src/arch/config_fields.ts";
import { familyGgufRefusal, familyGgufWarnings } from "../../src/arch/gguf_plan.ts";
import { ABSENT_ALIASES, WHEN_ABSENT } from "../../src/arch/_config_defaults.ts";
import { KvWriter } from "../../src/arch/kv.ts";
import { architectureOfHf, FAMILIES, familyOf } from "../../src/arch/registry.ts";
import { runApr, withTempDir } from "../cli/_run_apr.ts";
import { copyCheckpoint } from "../interop/_multimodal.ts";

interface ConfigClass {
  class: string;
  fields: Record<string, unknown>;
  aliases: Record<string, string>;
  outer?: ConfigClass;
  when_absent?: Record<string, unknown>;
}

const RECORDED = JSON.parse(
  await Deno.readTextFile(new URL("../testdata/arch/config_fields.json", import.meta.url)),
) as { model_types: Record<string, ConfigClass | null> };

const FIXTURES = new URL("../testdata/families/hf/", import.meta.url).pathname;

Deno.test("config fields: every field of every family's transformers config class is classified", () => {
  const missing: string[] = [];
  for (const family of FAMILIES.values()) {
    const classified = classifiedFields(family.configFields);
    for (const type of family.hfModelTypes) {
      assert.ok(
        Object.hasOwn(RECORDED.model_types, type),
        `${family.name}: model_type ${type} is not in config_fields.json; run ` +
          "tests/testdata/arch/make_config_fields.py",
      );
      const cls = RECORDED.model_types[type];
      assert.ok(cls !== null, `${family.name}: transformers knows no model_type ${type}`);
      for (const c of [cls!, ...(cls!.outer ? [cls!.outer] : [])]) {
        for (const field of [...Object.keys(c.fields), ...Object.keys(c.aliases)]) {
          if (!classified.has(field)) missing.push(`${family.name} (${c.class}): ${field}`);
        }
      }
    }
  }
  assert.deepEqual(missing, [], `fields no rule classifies:\n${missing.join("\n")}`);
});

Deno.test("config fields: each checked default is transformers' own", () => {
  let checked = 0;
  for (const family of FAMILIES.values()) {
    for (const a of family.configFields.assumed ?? []) {
      for (const type of family.hfModelTypes) {
        const fields = RECORDED.model_types[type]?.fields ?? {};
        if (!Object.hasOwn(fields, a.field)) continue;
        const own = a.hfDefaultByType !== undefined && Object.hasOwn(a.hfDefaultByType, type)
          ? a.hfDefaultByType[type]
          : a.hfDefault;
        assert.deepEqual(own, fields[a.field], `${family.name} ${type} ${a.field}`);
        checked++;
      }
    }
  }
  assert.ok(checked > 40, `only ${checked} defaults compared`);
});

Deno.test("config fields: every key of every fixture's config.json is classified", async () => {
  const missing: string[] = [];
  for await (const entry of Deno.readDir(FIXTURES)) {
    if (entry.name === "unknown-arch") continue;
    const config = JSON.parse(
      await Deno.readTextFile(`${FIXTURES}${entry.name}/config.json`),
    ) as Record<string, unknown>;
    const text = (config["text_config"] ?? {}) as Record<string, unknown>;
    const family = [...FAMILIES.values()].find((f) =>
      f.hfModelTypes.includes(String(config["model_type"]))
    );
    assert.ok(family !== undefined, entry.name);
    const classified = classifiedFields(family.configFields);
    for (const key of [...Object.keys(config), ...Object.keys(text)]) {
      if (!classified.has(key)) missing.push(`${entry.name}: ${key}`);
    }
  }
  assert.deepEqual(missing, [], `keys no rule classifies:\n${missing.join("\n")}`);
});

/**
 * Image-text composites whose text model is a `model_type` of its own: the
 * class, the composite's `model_type` and the text config's. Published
 * Ministral 3 is a `Mistral3ForConditionalGeneration` around a `ministral3`
 * text config (Mistral Small 3.x's is `mistral`, recorded under `mistral3`).
 */
const COMPOSITES: readonly (readonly [string, string, string, string])[] = [
  ["Mistral3ForConditionalGeneration", "mistral3", "ministral3", "ministral3-vl-t5"],
  ["Qwen3_5ForConditionalGeneration", "qwen3_5", "qwen3_5_text", "qwen3.5-vl-t5"],
  ["Qwen3_5MoeForConditionalGeneration", "qwen3_5_moe", "qwen3_5_moe_text", "qwen3.5-moe-vl-t5"],
  ["SmolVLMForConditionalGeneration", "smolvlm", "llama", "smolvlm-t5"],
  ["Idefics3ForConditionalGeneration", "idefics3", "llama", "idefics3-t5"],
  ["Lfm2VlForConditionalGeneration", "lfm2_vl", "lfm2", "lfm2-vl-t5"],
  ["Glm4vForConditionalGeneration", "glm4v", "glm4v_text", "glm4v-t5"],
  ["Glm4vMoeForConditionalGeneration", "glm4v_moe", "glm4v_moe_text", "glm4v-moe-t5"],
];

Deno.test("config fields: every field of an image-text composite around another text model_type is classified by the family it converts as", async () => {
  for (const [hfClass, outerType, textType, fixture] of COMPOSITES) {
    const config = JSON.parse(
      await Deno.readTextFile(
        new URL(`../testdata/multimodal/hf/${fixture}/config.json`, import.meta.url),
      ),
    ) as Record<string, unknown>;
    // The fixture's text_config: SmolVLM's text class is named in its `architectures`.
    const name = architectureOfHf(hfClass, outerType, {
      text_config: { ...config["text_config"] as object, model_type: textType },
    });
    const family = familyOf(name);
    assert.ok(family !== undefined, `${hfClass} with a ${textType} text config: no family`);
    assert.ok(family.hfModelTypes.includes(textType), `${family.name}: ${textType}`);
    const classified = classifiedFields(family.configFields);
    const outer = RECORDED.model_types[outerType]?.outer;
    const text = RECORDED.model_types[textType];
    assert.ok(
      outer !== undefined && text !== null && text !== undefined,
      `${outerType}/${textType}`,
    );
    assert.equal(config["architectures"]?.toString(), hfClass);
    const fixtureText = config["text_config"] as Record<string, unknown>;
    assert.equal(fixtureText["model_type"], textType);
    const missing = [
      ...[outer, text].flatMap((c) => [...Object.keys(c.fields), ...Object.keys(c.aliases)]),
      ...Object.keys(config),
      ...Object.keys(fixtureText),
    ].filter((f) => !classified.has(f));
    assert.deepEqual(missing, [], `${hfClass} (${textType}): fields no rule classifies`);
  }
});

async function fixtureConfig(name: string): Promise<Record<string, unknown>> {
  return JSON.parse(await Deno.readTextFile(`${FIXTURES}${name}/config.json`));
}

function metadataOf(architecture: string, config: Record<string, unknown>) {
  return { architecture, hf_config: config, original_format: "safetensors" };
}

/** The refusal of a fixture's config with `change` applied (`undefined` deletes a key). */
async function refusal(
  fixture: string,
  architecture: string,
  change: Record<string, unknown>,
): Promise<string | undefined> {
  const config = { ...await fixtureConfig(fixture), ...change };
  for (const [k, v] of Object.entries(change)) if (v === undefined) delete config[k];
  return familyGgufRefusal(metadataOf(architecture, config));
}

async function warnings(
  fixture: string,
  architecture: string,
  change: Record<string, unknown>,
): Promise<string[]> {
  const config = { ...await fixtureConfig(fixture), ...change };
  for (const [k, v] of Object.entries(change)) if (v === undefined) delete config[k];
  return familyGgufWarnings(metadataOf(architecture, config));
}

Deno.test("config fields: MoE top-k normalisation llama.cpp hard-codes is checked", async () => {
  assert.equal(await refusal("qwen3-moe", "qwen3moe", {}), undefined);
  assert.equal(
    await refusal("qwen3-moe", "qwen3moe", { norm_topk_prob: false }),
    "its config.json has norm_topk_prob false; llama.cpp's qwen3moe reads no key for it and " +
      "computes as with true",
  );
  // Left out, transformers' default (false) applies.
  assert.match(
    (await refusal("qwen3-moe", "qwen3moe", { norm_topk_prob: undefined }))!,
    /norm_topk_prob false \(transformers' default; absent\).*as with true/,
  );
  // Qwen2-MoE: llama.cpp never normalises.
  assert.equal(await refusal("qwen2-moe", "qwen2moe", {}), undefined);
  assert.match(
    (await refusal("qwen2-moe", "qwen2moe", { norm_topk_prob: true }))!,
    /norm_topk_prob true; llama.cpp's qwen2moe .* as with false/,
  );
  assert.match(
    (await refusal("qwen3-moe", "qwen3moe", { decoder_sparse_step: 2 }))!,
    /decoder_sparse_step 2.*as with 1/,
  );
  assert.match(
    (await refusal("qwen3-moe", "qwen3moe", { mlp_only_layers: [1] }))!,
    /mlp_only_layers \[1\].*as with \[\]/,
  );
});

Deno.test("config fields: RoPE scaling llama.cpp cannot run is refused", async () => {
  assert.match(
    (await refusal("llama", "llama", {
      rope_parameters: { rope_type: "dynamic", factor: 2, rope_theta: 10000 },
    }))!,
    /rope_scaling type "dynamic"; llama\.cpp has no such RoPE scaling/,
  );
  assert.match(
    (await refusal("qwen2", "qwen2", {
      rope_scaling: { type: "dynamic", factor: 2 },
      rope_parameters: undefined,
    }))!,
    /"dynamic"/,
  );
  // Qwen2-VL's published config spells its multi-axis RoPE type "mrope".
  assert.equal(
    await refusal("qwen2", "qwen2vl", {
      rope_scaling: { type: "mrope", mrope_section: [2, 3, 3] },
      rope_parameters: undefined,
    }),
    undefined,
  );
  // Kimi-K2's YaRN betas: DeepSeek-V3's class, llama.cpp's deepseek2 uses 32/1.
  const deepseek = await fixtureConfig("deepseek3");
  const rope = deepseek["rope_parameters"] as Record<string, unknown>;
  assert.equal(await refusal("deepseek3", "deepseek2", {}), undefined);
  assert.equal(
    await refusal("deepseek3", "deepseek2", {
      model_type: "kimi_k2",
      rope_parameters: { ...rope, beta_fast: 1, beta_slow: 1 },
    }),
    "its config.json has YaRN beta_fast 1; llama.cpp's deepseek2 reads no key for it and " +
      "computes with beta_fast 32, beta_slow 1",
  );
  assert.match(
    (await refusal("deepseek3", "deepseek2", { rope_parameters: { ...rope, beta_slow: 2 } }))!,
    /YaRN beta_slow 2/,
  );
  // transformers reads 0 as the default (`or 32`).
  assert.equal(
    await refusal("deepseek3", "deepseek2", { rope_parameters: { ...rope, beta_fast: 32 } }),
    undefined,
  );
});

Deno.test("config fields: Gemma 2/3's query_pre_attn_scalar must be llama.cpp's", async () => {
  assert.equal(await refusal("gemma2", "gemma2", {}), undefined);
  assert.equal(
    await refusal("gemma2", "gemma2", { query_pre_attn_scalar: 24 }),
    "its config.json has query_pre_attn_scalar 24; llama.cpp's gemma2 reads no key for it and " +
      "computes as with 16",
  );
  // The 27B (46 layers): hidden / heads, whatever the head size.
  const wide = { head_dim: 32, query_pre_attn_scalar: 16, layer_types: undefined };
  assert.equal(await refusal("gemma2", "gemma2", { ...wide, num_hidden_layers: 46 }), undefined);
  assert.match((await refusal("gemma2", "gemma2", wide))!, /scalar 16; .* as with 32$/);
  assert.equal(await refusal("gemma3", "gemma3", {}), undefined);
  assert.match(
    (await refusal("gemma3", "gemma3", { query_pre_attn_scalar: 64 }))!,
    /query_pre_attn_scalar 64; llama\.cpp's gemma3 .* as with 16/,
  );
  assert.match(
    (await refusal("gemma3", "gemma3", { attn_logit_softcapping: 50 }))!,
    /attn_logit_softcapping 50; .* as with null/,
  );
});

Deno.test("config fields: an activation llama.cpp's graph does not compute is refused", async () => {
  assert.match(
    (await refusal("llama", "llama", { hidden_act: "relu" }))!,
    /hidden_act "relu"; llama\.cpp's llama .* as with "silu"/,
  );
  assert.equal(await refusal("llama", "llama", { hidden_act: "swish" }), undefined);
});

Deno.test("config fields: sliding windows llama.cpp ignores are written with one warning", async () => {
  assert.deepEqual(await warnings("mistral", "mistral", {}), []);
  assert.deepEqual(await warnings("mistral", "mistral", { sliding_window: 4096 }), [
    "config.json sets a sliding window of 4096 tokens on every layer, which llama.cpp's llama " +
    "does not apply (it attends to the whole context): it computes otherwise than transformers " +
    "from a context of 4097 tokens on",
  ]);
  assert.equal(await refusal("mistral", "mistral", { sliding_window: 4096 }), undefined);
  assert.match(
    (await warnings("starcoder2", "starcoder2", { sliding_window: 4096 })).join(),
    /sliding window of 4096 tokens on every layer, .*starcoder2/,
  );
  assert.match(
    (await warnings("phi4", "phi3", { sliding_window: 2047 })).join(),
    /sliding window of 2047 tokens .*phi3 .*from a context of 2048 tokens/,
  );
  // Qwen2: only with use_sliding_window, from max_window_layers on.
  assert.deepEqual(await warnings("qwen2", "qwen2", { sliding_window: 32 }), []);
  assert.match(
    (await warnings("qwen2", "qwen2", {
      use_sliding_window: true,
      sliding_window: 32,
      max_window_layers: 1,
      layer_types: undefined,
    })).join(),
    /sliding window of 32 tokens on layers 1, .*qwen2/,
  );
  assert.match(
    (await warnings("qwen2", "qwen2", {
      use_sliding_window: true,
      sliding_window: 32,
      layer_types: ["sliding_attention", "sliding_attention"],
    })).join(),
    /on every layer/,
  );
  assert.match(
    (await warnings("qwen3-moe", "qwen3moe", { use_sliding_window: true, sliding_window: 8 }))
      .join(),
    /window of 8 tokens on every layer/,
  );
});

Deno.test("config fields: gpt-oss's untruncated YaRN is written with one warning", async () => {
  // The fixture's YaRN truncates (as transformers' default): no warning.
  assert.deepEqual(await warnings("gpt-oss", "gpt-oss", {}), []);
  const fixture = await fixtureConfig("gpt-oss");
  const rope = { ...fixture["rope_parameters"] as Record<string, unknown>, truncate: false };
  const ws = await warnings("gpt-oss", "gpt-oss", { rope_parameters: rope });
  assert.equal(ws.length, 1, ws.join("\n"));
  assert.match(ws[0]!, /YaRN has truncate false, which llama\.cpp does not read/);
  assert.match(ws[0]!, /apart from \d+ tokens on/);
  assert.equal(await refusal("gpt-oss", "gpt-oss", { rope_parameters: rope }), undefined);
  // openai/gpt-oss-20b's RoPE.
  const published = await warnings("gpt-oss", "gpt-oss", {
    head_dim: 64,
    rope_parameters: {
      rope_type: "yarn",
      rope_theta: 150000,
      factor: 32,
      original_max_position_embeddings: 4096,
      beta_fast: 32,
      beta_slow: 1,
      truncate: false,
    },
  });
  assert.match(published.join(), /apart from 453 tokens on/);
});

Deno.test("config fields: DeepSeek-V2's group-limited routing, which llama.cpp ranks otherwise, is refused", async () => {
  assert.equal(await refusal("deepseek2", "deepseek2", {}), undefined);
  assert.equal(
    await refusal("deepseek2", "deepseek2", {
      topk_method: "group_limited_greedy",
      n_group: 2,
      topk_group: 1,
    }),
    'its config.json has topk_method "group_limited_greedy" with n_group 2 and topk_group 1; ' +
      "llama.cpp's deepseek2 reads no key for it and picks expert groups as topk_method " +
      '"noaux_tc" does (by the sum of each group\'s two best scores)',
  );
  // Greedy ignores groups; llama.cpp would use the written ones.
  assert.match(
    (await refusal("deepseek2", "deepseek2", { n_group: 2, topk_group: 1 }))!,
    /topk_method "greedy" with n_group 2/,
  );
  // Every group kept: no group is left out either way.
  assert.equal(
    await refusal("deepseek2", "deepseek2", {
      topk_method: "group_limited_greedy",
      n_group: 2,
      topk_group: 2,
    }),
    undefined,
  );
  // V3's router is noaux_tc in transformers too.
  assert.equal(await refusal("deepseek3", "deepseek2", {}), undefined);
});

Deno.test("config fields: apr convert refuses a hard-coded field in one line, exit 2, no file; warns once for a window", async () => {
  await withTempDir(async (dir) => {
    const moe = await copyCheckpoint(`${FIXTURES}qwen3-moe`, `${dir}/moe`, (c) => {
      c["norm_topk_prob"] = false;
    });
    const out = `${dir}/moe.gguf`;
    const run = await runApr(["convert", moe, "-o", out]);
    assert.equal(run.code, 2, run.stderr);
    assert.equal(run.stderr.trim().split("\n").length, 1, run.stderr);
    assert.match(run.stderr, /norm_topk_prob false; llama\.cpp's qwen3moe .* as with true/);
    await assert.rejects(Deno.stat(out), Deno.errors.NotFound);
    // APR keeps the config as it is.
    assert.equal((await runApr(["convert", moe, "-o", `${dir}/moe.apr`])).code, 0);

    const mistral = await copyCheckpoint(`${FIXTURES}mistral`, `${dir}/mistral`, (c) => {
      c["sliding_window"] = 4096;
    });
    const written = await runApr(["convert", mistral, "-o", `${dir}/mistral.gguf`]);
    assert.equal(written.code, 0, written.stderr);
    const warned = written.stderr.split("\n").filter((l) => /sliding window/.test(l));
    assert.equal(warned.length, 1, written.stderr);
    assert.match(warned[0]!, /4096 tokens .* from a context of 4097 tokens on/);
    assert.ok((await Deno.stat(`${dir}/mistral.gguf`)).size > 0);
  });
});

Deno.test("config fields: a folder without a tokenizer aprkit reads is refused for GGUF, not written without a vocabulary", async () => {
  await withTempDir(async (dir) => {
    for (const [name, extra] of [["none", undefined], ["tiktoken", "tiktoken.model"]] as const) {
      const source = await copyCheckpoint(`${FIXTURES}llama`, `${dir}/${name}`, () => {});
      for await (const e of Deno.readDir(source)) {
        if (e.name.startsWith("tokenizer") || e.name === "special_tokens_map.json") {
          await Deno.remove(`${source}/${e.name}`);
        }
      }
      // Kimi-K2 ships a tiktoken BPE file only.
      if (extra !== undefined) await Deno.writeTextFile(`${source}/${extra}`, "IQ== 0\n");
      const out = `${dir}/${name}.gguf`;
      const run = await runApr(["convert", source, "-o", out]);
      assert.equal(run.code, 2, run.stderr);
      assert.equal(run.stderr.trim().split("\n").length, 1, run.stderr);
      assert.match(run.stderr, /has no tokenizer\.json or tokenizer\.model .*without a vocabulary/);
      await assert.rejects(Deno.stat(out), Deno.errors.NotFound);
      assert.equal((await runApr(["convert", source, "-o", `${dir}/${name}.apr`])).code, 0);
    }
  });
});

Deno.test("config fields: norm_topk_prob left out is written as transformers' default (DeepSeek-V3, GLM-4.5: true)", async () => {
  const norm = async (fixture: string, architecture: string, change: Record<string, unknown>) => {
    const config = { ...await fixtureConfig(fixture), ...change };
    for (const [k, v] of Object.entries(change)) if (v === undefined) delete config[k];
    const family = FAMILIES.get(architecture)!;
    const w = new KvWriter(config, family.ggufArchitecture);
    family.gguf!.writeKv(w);
    return w.entries().get(`${family.ggufArchitecture}.expert_weights_norm`)?.value;
  };
  assert.equal(await norm("deepseek3", "deepseek2", {}), true);
  assert.equal(await norm("deepseek3", "deepseek2", { norm_topk_prob: undefined }), true);
  assert.equal(await norm("deepseek2", "deepseek2", { norm_topk_prob: undefined }), undefined);
  assert.equal(await norm("glm4moe", "glm4moe", { norm_topk_prob: undefined }), true);
  assert.equal(await norm("glm4moe", "glm4moe", { norm_topk_prob: false }), false);
});

Deno.test("config fields: the sizing defaults filled in are the ones config_fields.json records", () => {
  // The converter reads AutoConfig's to_dict(), which has every field of the class: one
  // config.json leaves out is its default (Qwen3's head_dim 128), or derived from others
  // (Llama's hidden_size // num_attention_heads, DeepSeek's qk_rope_head_dim).
  const named = new Set([...FAMILIES.values()].flatMap((f) => f.hfModelTypes));
  const rules: Record<string, unknown> = {};
  const aliases: Record<string, Record<string, string[]>> = {};
  for (const [type, c] of Object.entries(RECORDED.model_types)) {
    const absent = (c as { when_absent?: Record<string, unknown> } | null)?.when_absent;
    assert.ok(c === null || absent !== undefined, `${type}: no when_absent recorded`);
    // null: the class leaves the field None (or derives it otherwise): nothing filled in.
    const filled = Object.fromEntries(Object.entries(absent ?? {}).filter(([, r]) => r !== null));
    if (!named.has(type) || Object.keys(filled).length === 0) continue;
    rules[type] = filled;
    for (const [alias, field] of Object.entries(c!.aliases)) {
      if (Object.hasOwn(filled, field)) ((aliases[type] ??= {})[field] ??= []).push(alias);
    }
  }
  assert.deepEqual(WHEN_ABSENT, rules, "src/arch/_config_defaults.ts: run make_config_fields.py");
  assert.deepEqual(ABSENT_ALIASES, aliases);
  // Every kind of rule is recorded for some class.
  assert.equal(WHEN_ABSENT["llama"]!["head_dim"], "hidden_size / num_attention_heads");
  assert.equal(WHEN_ABSENT["llama"]!["num_key_value_heads"], "num_attention_heads");
  assert.equal(WHEN_ABSENT["qwen3"]!["head_dim"], 128);
  assert.equal(WHEN_ABSENT["gemma2"]!["head_dim"], 256);
  assert.equal(WHEN_ABSENT["deepseek_v3"]!["head_dim"], "qk_rope_head_dim");
  // Mixtral's head_dim stays None (the converter writes no key_length): recorded, not filled.
  assert.equal(RECORDED.model_types["mixtral"]!.when_absent!["head_dim"], null);
  assert.equal(Object.hasOwn(WHEN_ABSENT["mixtral"]!, "head_dim"), false);
});

Deno.test("config fields: a sizing field config.json leaves out is read as transformers fills it in", () => {
  const hp = (config: Record<string, unknown>) => new KvWriter(config, "x").hparams;
  const llama = hp({ model_type: "llama", hidden_size: 96, num_attention_heads: 3 });
  assert.equal(llama["head_dim"], 32);
  assert.equal(llama["num_key_value_heads"], 3);
  assert.equal(llama["max_position_embeddings"], 2048);
  assert.equal(llama["rms_norm_eps"], 1e-6);
  assert.deepEqual(llama["rope_parameters"], { rope_theta: 10000, rope_type: "default" });
  // Stated values stay; a derived field given as null is derived (its __post_init__), a
  // constant one given as null stays null (the dataclass default applies only when absent).
  const stated = hp({
    model_type: "llama",
    hidden_size: 96,
    num_attention_heads: 3,
    head_dim: 16,
    num_key_value_heads: null,
  });
  assert.equal(stated["head_dim"], 16);
  assert.equal(stated["num_key_value_heads"], 3);
  assert.equal(hp({ model_type: "qwen3", head_dim: null })["head_dim"], null);
  assert.equal(hp({ model_type: "qwen3", hidden_size: 96 })["head_dim"], 128);
  assert.equal(hp({ model_type: "deepseek_v3", qk_rope_head_dim: 8 })["head_dim"], 8);
  // A derived field whose sources are missing too is left out.
  assert.equal(Object.hasOwn(hp({ model_type: "llama" }), "head_dim"), false);
  // Any RoPE key (or a field the class's dict would take in) and no rope_parameters is added.
  assert.equal(hp({ model_type: "llama", rope_theta: 5e5 })["rope_parameters"], undefined);
  assert.equal(
    hp({ model_type: "phi3", partial_rotary_factor: 0.5 })["rope_parameters"],
    undefined,
  );
  assert.deepEqual(hp({ model_type: "gemma3_text" })["rope_parameters"], {
    sliding_attention: { rope_type: "default", rope_theta: 10000 },
    full_attention: { rope_type: "default", rope_theta: 1000000 },
  });
  // An alias (attribute_map) of the field counts as the field.
  assert.equal(hp({ model_type: "gpt2", max_position_embeddings: 64 })["n_positions"], undefined);
  assert.equal(hp({ model_type: "gpt2" })["n_positions"], 1024);
  // Read as saved by the converter (CONFIG_AS_SAVED): nothing filled in.
  assert.equal(Object.hasOwn(hp({ model_type: "mimo_v2_flash" }), "rms_norm_eps"), false);
  // The text config of a multimodal model is filled in by its own type.
  const vl = hp({
    model_type: "gemma3",
    text_config: { model_type: "gemma3_text", hidden_size: 64, num_attention_heads: 4 },
  });
  assert.equal(vl["head_dim"], 256);
});
