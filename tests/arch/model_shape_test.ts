/**
 * The shape rules (`src/arch/model_shape.ts`) against every real model in
 * tests/testdata, irregular layouts included (MoE leading dense layers,
 * Llama 4's interleaved MoE, DeepSeek's MLA, GLM's MTP layers, Gemma 3n,
 * tied embeddings, vision towers, quantized checkpoints): each file
 * llama.cpp's converter wrote and each Hugging Face fixture is what its
 * config says, and each converter file stops matching when a block past
 * `block_count` is added, a block is left out or the output norm is
 * mis-sized — the rules bite on every architecture, not only Llama.
 */

import assert from "node:assert/strict";
import { ggufBlocks, ggufShapeProblem, hfShapeProblem } from "../../src/arch/model_shape.ts";
import { hfToGgufName } from "../../src/arch/names.ts";
import { familyOf } from "../../src/arch/registry.ts";
import { languageModelView } from "../../src/pipeline/language_model.ts";
import { openModel } from "../../src/pipeline/open_model.ts";
import { modelShapeError } from "../../src/pipeline/model_shape_check.ts";

const DATA = new URL("../testdata/", import.meta.url);

interface Manifest {
  file: string;
  arch: string;
  kv: Map<string, unknown>;
  tensors: { name: string; shape: number[] }[];
}

async function converterFiles(): Promise<Manifest[]> {
  const out: Manifest[] = [];
  const dirs = [
    "families/llama.cpp",
    "multimodal/llama.cpp",
    "multimodal/gemma3n/llama.cpp",
    "multimodal/qwen3vl/llama.cpp",
  ];
  for (const dir of dirs) {
    for await (const e of Deno.readDir(new URL(dir, DATA))) {
      if (!e.name.endsWith(".json") || e.name.includes("mmproj")) continue;
      const m = JSON.parse(await Deno.readTextFile(new URL(`${dir}/${e.name}`, DATA)));
      if (!Array.isArray(m.kv)) continue;
      const kv = new Map<string, unknown>(
        m.kv.map((k: { key: string; value: unknown }) => [k.key, k.value]),
      );
      out.push({
        file: `${dir}/${e.name}`,
        arch: kv.get("general.architecture") as string,
        kv,
        tensors: m.tensors.map((t: { name: string; ne: number[] }) => ({
          name: t.name,
          shape: [...t.ne].reverse(),
        })),
      });
    }
  }
  return out.sort((a, b) => a.file.localeCompare(b.file));
}

const MANIFESTS = await converterFiles();

Deno.test("model shape: every GGUF llama.cpp's converter wrote is what its keys say", () => {
  assert.ok(MANIFESTS.length >= 100, `${MANIFESTS.length} converter files`);
  const archs = new Set(MANIFESTS.map((m) => m.arch));
  assert.ok(archs.size >= 25, [...archs].join(", "));
  for (const m of MANIFESTS) {
    assert.equal(ggufShapeProblem(m.arch, (k) => m.kv.get(k), m.tensors), undefined, m.file);
  }
});

Deno.test("model shape: each converter GGUF is refused with a stray block, a missing block or a mis-sized norm", () => {
  for (const m of MANIFESTS) {
    const kv = (k: string) => m.kv.get(k);
    // HRM-Text's block_count counts its cycles: the file holds fewer blocks.
    const blocks = ggufBlocks(m.arch, kv)!;
    const hidden = m.kv.get(`${m.arch}.embedding_length`) as number;
    // A copy of one of block 0's tensors, as block `block_count`.
    const first = m.tensors.find((t) => t.name.startsWith("blk.0."))!;
    const stray = [...m.tensors, {
      ...first,
      name: first.name.replace("blk.0.", `blk.${blocks}.`),
    }];
    assert.match(
      ggufShapeProblem(m.arch, kv, stray)?.reason ?? "",
      new RegExp(`^layer ${blocks}, but the model has ${blocks}`),
      m.file,
    );
    const missing = m.tensors.filter((t) => !t.name.startsWith("blk.0."));
    assert.equal(ggufShapeProblem(m.arch, kv, missing)?.tensor, "layer 0", m.file);
    // The final norm (LFM2's is token_embd_norm: its embedding_norm runs last);
    // OLMo 1's LayerNorms have no weights: no norm to mis-size.
    const norm = ["output_norm.weight", "token_embd_norm.weight"].find((n) =>
      m.tensors.some((t) => t.name === n)
    );
    if (norm === undefined) continue;
    const wide = m.tensors.map((t) => t.name === norm ? { ...t, shape: [hidden * 2] } : t);
    assert.match(
      ggufShapeProblem(m.arch, kv, wide)?.reason ?? "",
      new RegExp(`^shape \\[${hidden * 2}\\], expected \\[${hidden}\\]`),
      m.file,
    );
  }
});

/** The Hugging Face fixtures: folders with a config.json. */
function hfFolders(): string[] {
  const roots = ["families/hf", "multimodal/hf", "hf/quantized", "multimodal/gemma3n/hf"];
  roots.push("embeddings/hf");
  roots.push("multimodal/qwen3vl/hf", "multimodal/qwen3vl/bf16");
  const out: string[] = [];
  for (const root of roots) {
    for (const e of Deno.readDirSync(new URL(root, DATA))) {
      const dir = new URL(`${root}/${e.name}/`, DATA);
      if (e.isDirectory && [...Deno.readDirSync(dir)].some((f) => f.name === "config.json")) {
        out.push(dir.pathname);
      }
    }
  }
  return out.sort();
}

Deno.test("model shape: every Hugging Face fixture is what its config says, read for any output", async (t) => {
  let checked = 0;
  for (const folder of hfFolders()) {
    await t.step(folder.replace(DATA.pathname, ""), async () => {
      for (const packedForGguf of [false, true]) {
        let model;
        try {
          model = await openModel(folder, { packedForGguf });
        } catch {
          continue; // a fixture of a refusal (tests/cli/import_quantized_test.ts)
        }
        try {
          const error = modelShapeError(model);
          assert.ok(!error, String(error?.message));
          if (error === null) checked++;
        } finally {
          await model.close();
        }
      }
    });
  }
  // The rules applied (a known family with its config), not skipped.
  assert.ok(checked >= 100, `${checked} checked`);
});

/** A block's residual-stream norm under its GGUF name (`blk.N.attn_norm.weight`). */
const RESIDUAL_NORM =
  /^blk\.\d+\.(attn_norm|ffn_norm|attn_post_norm|post_ffw_norm|layer_output_norm)\.weight$/;

/** The first of a size's spellings a config has (transformers' `attribute_map` aliases). */
function sizeKey(config: Record<string, unknown>, keys: readonly string[]): string | undefined {
  return keys.find((k) => typeof config[k] === "number");
}

Deno.test("model shape: every Hugging Face fixture stops matching its config with one layer more, a block tensor less or a residual width more, whatever its block prefix and config spelling", async (t) => {
  const prefixes = new Set<string>();
  let widened = 0;
  for (const folder of hfFolders()) {
    if (folder.includes("/hf/quantized/")) continue; // packed tensors: names and layers only
    let model;
    try {
      model = await openModel(folder);
    } catch {
      continue; // a fixture of a refusal
    }
    try {
      const { metadata } = model.header;
      const family = familyOf(metadata.architecture);
      const saved = metadata["hf_config"] as Record<string, unknown> | undefined;
      if (family === undefined || saved === undefined) continue;
      const text = saved["text_config"] as Record<string, unknown> | undefined;
      const config = text === undefined ? saved : { ...saved, ...text };
      const layersKey = sizeKey(config, ["num_hidden_layers", "n_layer", "n_layers", "num_layers"]);
      const hiddenKey = sizeKey(config, ["hidden_size", "n_embd", "d_model", "dim"]);
      assert.ok(layersKey && hiddenKey, `${folder}: no layer count or width`);
      const tensors = languageModelView(model.header).tensors.map((x) => ({
        ...x,
        file: folder,
      }));
      if (hfShapeProblem(family, config, tensors) !== undefined) continue; // judged above
      const prefix = family.hfBlockPrefix ?? "model.layers";
      const block = new RegExp(`^${prefix.replaceAll(".", "\\.")}\\.(\\d+)\\.`);
      const blockTensors = tensors.filter((x) => block.test(x.name));
      // An MTP layer would stand in for the layer added (GLM-4.5's): judged by its own test.
      if (blockTensors.length === 0 || typeof config["num_nextn_predict_layers"] === "number") {
        continue;
      }
      prefixes.add(prefix);
      await t.step(folder.replace(DATA.pathname, ""), () => {
        const layers = config[layersKey] as number;
        // Where the text model's config is (a multimodal model's `text_config`).
        const more = hfShapeProblem(
          family,
          text === undefined
            ? { ...saved, [layersKey]: layers + 1 }
            : { ...saved, text_config: { ...text, [layersKey]: layers + 1 } },
          tensors,
        );
        assert.equal(more?.tensor, `layer ${layers}`, `${layersKey} + 1: ${more?.reason}`);
        assert.match(more?.reason ?? "", new RegExp(`config\\.json's ${layersKey}`));
        // The last layer's residual norm, one wider.
        const last = blockTensors.filter((x) => x.name.startsWith(`${prefix}.${layers - 1}.`));
        const norm = last.find((x) =>
          RESIDUAL_NORM.test(hfToGgufName(x.name, family)) && x.shape[0] === config[hiddenKey]
        );
        if (norm !== undefined) {
          const wider = tensors.map((x) => x === norm ? { ...x, shape: [x.shape[0]! + 1] } : x);
          const problem = hfShapeProblem(family, config, wider);
          assert.equal(problem?.tensor, norm.name, problem?.reason);
          widened++;
        }
        const blockless = tensors.filter((x) => !last.includes(x));
        const less = hfShapeProblem(family, config, blockless);
        assert.ok(less !== undefined, `layer ${layers - 1} removed and nothing said`);
      });
    } finally {
      await model.close();
    }
  }
  // The prefixes of GPT-2, BLOOM, Falcon, DBRX, GPT-NeoX, Mamba and BERT, not Llama's alone.
  for (const p of ["transformer.h", "transformer.blocks", "backbone.layers", "gpt_neox.layers"]) {
    assert.ok(prefixes.has(p), `no fixture with blocks under ${p}`);
  }
  assert.ok(widened >= 80, `a residual norm widened in ${widened} fixtures`);
});

Deno.test("model shape: Gemma 3n's KV-sharing layers may come without K and V (as transformers 5 saves them), no other layer may", async () => {
  const model = await openModel(new URL("multimodal/gemma3n/hf/gemma3n-text-t5", DATA).pathname);
  try {
    const { metadata } = model.header;
    const family = familyOf(metadata.architecture)!;
    const config = metadata["hf_config"] as Record<string, unknown>;
    const layers = config["num_hidden_layers"] as number;
    assert.equal(layers, 2);
    const tensors = languageModelView(model.header).tensors;
    const last = tensors.filter((t) => !/^model\.layers\.1\.self_attn\.[kv]_proj\./.test(t.name));
    // The last layer shares the first's KV: it may come without its own.
    assert.equal(hfShapeProblem(family, { ...config, num_kv_shared_layers: 1 }, last), undefined);
    assert.match(
      hfShapeProblem(family, { ...config, num_kv_shared_layers: 0 }, last)?.reason ?? "",
      /^missing: layer 0 has "model\.layers\.0\.self_attn\.[kv]_proj\.weight"/,
    );
  } finally {
    await model.close();
  }
});

Deno.test("model shape: nomic-embed-text-v2-moe's router, experts and their bias are its tensors (kept in APR), a misspelt one or the same in v1 is not", async () => {
  const model = await openModel(new URL("embeddings/hf/nomic-moe-embed", DATA).pathname);
  try {
    const family = familyOf(model.header.metadata.architecture)!;
    const config = model.header.metadata["hf_config"] as Record<string, unknown>;
    const tensors = languageModelView(model.header).tensors;
    assert.equal(hfShapeProblem(family, config, tensors), undefined);
    const misspelt = tensors.map((t) =>
      t.name === "encoder.layers.1.mlp.router.layer.weight"
        ? { ...t, name: "encoder.layers.1.mlp.routr.layer.weight" }
        : t
    );
    assert.match(
      hfShapeProblem(family, config, misspelt)?.reason ?? "",
      /no tensor "mlp\.routr\.layer\.weight" in a layer/,
    );
    const { moe_every_n_layers: _, ...v1 } = config;
    assert.match(hfShapeProblem(family, v1, tensors)?.reason ?? "", /no tensor "mlp\.fc1\./);
  } finally {
    await model.close();
  }
});

Deno.test("model shape: DeepSeek-V4's published layout (layers.N, bare hyper-connection parameters, MXFP4 experts with scales) is its own; a misspelt, stray or mis-sized tensor is not", async () => {
  const model = await openModel(new URL("families/hf/deepseek4", DATA).pathname);
  try {
    const family = familyOf(model.header.metadata.architecture)!;
    assert.equal(family.name, "deepseek4");
    const config = model.header.metadata["hf_config"] as Record<string, unknown>;
    // The experts' E2M1 pairs (I8) are packed: checked for their name and layer only.
    const tensors = languageModelView(model.header).tensors.map((t) => ({
      ...t,
      packed: t.dtype === "I8",
    }));
    assert.equal(hfShapeProblem(family, config, tensors), undefined);
    // What the check says of the model with one tensor renamed.
    const renamed = (from: string, to: string) =>
      hfShapeProblem(family, config, tensors.map((t) => t.name === from ? { ...t, name: to } : t))
        ?.reason ?? "";
    assert.match(
      renamed("layers.1.hc_attn_fn", "layers.1.hc_atn_fn"),
      /no tensor "hc_atn_fn" in a layer/,
    );
    assert.match(
      renamed("layers.1.ffn.experts.2.w1.scale", "layers.1.ffn.experts.2.w4.scale"),
      /no tensor "ffn\.experts\.2\.w4\.scale" in a layer/,
    );
    // Layer 4 is the MTP layer's (num_nextn_predict_layers 1); 5 is past both.
    assert.match(
      renamed("layers.3.attn_norm.weight", "layers.5.attn_norm.weight"),
      /^layer 5, but the model has 5/,
    );
    const wide = tensors.map((t) =>
      t.name === "layers.2.ffn_norm.weight" ? { ...t, shape: [65] } : t
    );
    assert.equal(hfShapeProblem(family, config, wide)?.tensor, "layers.2.ffn_norm.weight");
    const blockless = tensors.filter((t) => !t.name.startsWith("layers.2."));
    assert.equal(hfShapeProblem(family, config, blockless)?.tensor, "layer 2");
  } finally {
    await model.close();
  }
});

Deno.test("model shape: each converter GGUF with state-space layers, a short convolution or a per-layer attention pattern is refused when its kernel, state or pattern key is off", () => {
  let checked = 0;
  for (const m of MANIFESTS) {
    const kv = (k: string) => m.kv.get(k);
    for (const key of ["ssm.conv_kernel", "ssm.state_size", "shortconv.l_cache", "kda.head_dim"]) {
      const value = m.kv.get(`${m.arch}.${key}`);
      if (typeof value !== "number") continue;
      const off = (k: string) => k === `${m.arch}.${key}` ? value + 1 : kv(k);
      assert.match(
        ggufShapeProblem(m.arch, off, m.tensors)?.reason ?? "",
        new RegExp(`${m.arch}\\.${key.replace(".", "\\.")} ${value + 1}`),
        `${m.file} ${key}`,
      );
      checked++;
    }
    // The attention layers moved by one (a hybrid's head_count_kv list, 0 for an SSM layer).
    const pattern = m.kv.get(`${m.arch}.attention.head_count_kv`);
    if (!Array.isArray(pattern) || !pattern.includes(0) || pattern.every((x) => x === 0)) continue;
    const moved = [pattern[pattern.length - 1], ...pattern.slice(0, -1)];
    if (JSON.stringify(moved) === JSON.stringify(pattern)) continue;
    const off = (k: string) => k === `${m.arch}.attention.head_count_kv` ? moved : kv(k);
    assert.match(
      ggufShapeProblem(m.arch, off, m.tensors)?.reason ?? "",
      /attention/,
      `${m.file} head_count_kv ${JSON.stringify(moved)}`,
    );
    checked++;
  }
  assert.ok(checked >= 20, `${checked} cases`);
});

Deno.test("model shape: each converter GGUF with per-layer head counts is refused when layer 0's count is one more or the list one short", () => {
  const archs = new Set<string>();
  for (const m of MANIFESTS) {
    const kv = (k: string) => m.kv.get(k);
    for (const key of ["attention.head_count", "attention.head_count_kv"]) {
      const full = `${m.arch}.${key}`;
      const list = m.kv.get(full);
      // Lists with SSM layers (0) are judged by their pattern (the test above).
      if (!Array.isArray(list) || list.includes(0)) continue;
      const more = [list[0] + 1, ...list.slice(1)];
      const off = (k: string) => k === full ? more : kv(k);
      assert.match(
        ggufShapeProblem(m.arch, off, m.tensors)?.reason ?? "",
        new RegExp(`${full.replaceAll(".", "\\.")} \\[${more.join(",")}\\]`),
        `${m.file} ${key} ${JSON.stringify(more)}`,
      );
      const short = (k: string) => k === full ? list.slice(0, -1) : kv(k);
      assert.match(
        ggufShapeProblem(m.arch, short, m.tensors)?.reason ?? "",
        /no entry in .*block_count/,
        `${m.file} ${key} one short`,
      );
      archs.add(m.arch);
    }
  }
  // Laguna's query heads, MiMo-V2's KV heads (Gemma 4's by its own check).
  for (const arch of ["laguna", "mimo2"]) assert.ok(archs.has(arch), [...archs].join(", "));
});

Deno.test("model shape: the converter's DeepSeek-V4 and Qwen4-Exp GGUFs are refused when a key their tensors are sized by is off", () => {
  const keys = [
    "attention.head_count",
    "attention.key_length",
    "attention.q_lora_rank",
    "attention.output_group_count",
    "attention.output_lora_rank",
    "attention.indexer.head_count",
    "attention.indexer.key_length",
    "hyper_connection.count",
    "hyper_connection.low_rank",
    "expert_used_count",
    "ple.conv_kernel",
    "embedding_length_per_layer_input",
  ];
  const seen = new Set<string>();
  for (const m of MANIFESTS.filter((m) => m.arch === "deepseek4" || m.arch === "qwen4exp")) {
    const kv = (k: string) => m.kv.get(k);
    for (const key of keys) {
      const value = m.kv.get(`${m.arch}.${key}`);
      // Qwen4-Exp's expert_used_count sizes no tensor (it has no hash table).
      if (typeof value !== "number" || (m.arch === "qwen4exp" && key === "expert_used_count")) {
        continue;
      }
      const off = (k: string) => k === `${m.arch}.${key}` ? value + 1 : kv(k);
      assert.match(
        ggufShapeProblem(m.arch, off, m.tensors)?.reason ?? "",
        new RegExp(`${m.arch}\\.${key.replaceAll(".", "\\.")} ${value + 1}`),
        `${m.file} ${key}`,
      );
      seen.add(`${m.arch} ${key}`);
    }
    // DeepSeek-V4's compress ratios moved by a layer: compressors where the ratio gives none.
    const ratios = m.kv.get(`${m.arch}.attention.compress_ratios`);
    if (m.arch !== "deepseek4" || !Array.isArray(ratios)) continue;
    const moved = [...ratios.slice(1), ratios[0]];
    const off = (k: string) => k === `${m.arch}.attention.compress_ratios` ? moved : kv(k);
    assert.match(
      ggufShapeProblem(m.arch, off, m.tensors)?.reason ?? "",
      /compress_ratios/,
      `${m.file} compress_ratios ${JSON.stringify(moved)}`,
    );
    seen.add("deepseek4 compress_ratios");
  }
  // Each key of each architecture on at least one of its converter files.
  assert.ok(seen.size >= 18, [...seen].join(", "));
});
