/**
 * Issue 18 item 4, judged by the source checkpoints: a GGUF of every family
 * (aprkit's, and llama.cpp's converter's where kept) converted back to
 * SafeTensors gives transformers' tensors bit for bit, and to APR gives what a
 * direct Hugging Face import gives (Hugging Face names and Q/K rows,
 * `rope_type` 2, the family's metadata). The multimodal families' text GGUFs
 * (aprkit's, which tests/interop/multimodal*_test.ts judge equal to the
 * converter's) give the metadata of their Hugging Face import too.
 */

import assert from "node:assert/strict";
import { familyOf } from "../../src/arch/registry.ts";
import { convertModel } from "../../src/pipeline/convert_model.ts";
import { openModel } from "../../src/pipeline/open_model.ts";
import { assertOneLineError, runApr, withTempDir } from "../cli/_run_apr.ts";
import type { ModelMetadata } from "../../src/tensor.ts";
import { testdata } from "../cli/_run_apr.ts";
import { readTensors } from "./_files.ts";
import {
  CONVERTER_GGUFS,
  fail,
  FAMILIES_DIR,
  familyDir,
  NOT_READ_BACK,
  readBackFamilies,
  tensorDifferences,
} from "./_families.ts";

const FAMILIES = readBackFamilies();

/**
 * The APR metadata a family's GGUF carries (its architecture's facts and
 * sizes): a GGUF import must give what the Hugging Face import gives.
 */
const FAMILY_FIELDS = [
  "architecture",
  "hf_architecture",
  "hf_model_type",
  "rope_type",
  "hidden_size",
  "num_layers",
  "num_heads",
  "num_kv_heads",
  "vocab_size",
  "intermediate_size",
  "max_position_embeddings",
  "head_dim",
  "num_experts",
  "num_experts_per_tok",
  "moe_intermediate_size",
] as const;

/** Fields GGUF holds as float32: equal at that precision. */
const F32_FIELDS = ["rope_theta", "rms_norm_eps"] as const;

/** Fields a family fixture's GGUF cannot carry, and why. */
const NOT_IN_GGUF: Readonly<Record<string, Readonly<Record<string, string>>>> = {
  mistral: {
    architecture: "llama.cpp files Mistral as llama: nothing in the GGUF tells them apart",
    hf_architecture: "as architecture",
    hf_model_type: "as architecture",
  },
  gemma: { rope_theta: "the converter writes no rope.freq_base for Gemma (llama.cpp's default)" },
  gemma2: { rope_theta: "as Gemma" },
  "command-r": {
    rms_norm_eps: "Cohere's LayerNorm epsilon is GGUF's attention.layer_norm_epsilon, which a " +
      "GGUF import does not read as APR's rms_norm_eps (the Hugging Face import takes layer_norm_eps)",
  },
  "command-r-plus": { rms_norm_eps: "as Command-R" },
  cohere2: { rms_norm_eps: "as Command-R" },
  cohere2moe: { rms_norm_eps: "as Command-R" },
  olmo3: {
    architecture: "llama.cpp's converter files OLMo 3 as olmo2: read back, it is OLMo 2's",
    hf_architecture: "as architecture",
    hf_model_type: "as architecture",
  },
  glm: {
    max_position_embeddings: "llama.cpp's converter writes the hidden size as chatglm's " +
      "context_length (GlmForCausalLM has no seq_length)",
    head_dim: "chatglm has no key_length: the head size is hidden / heads, which the import " +
      "does not write as head_dim",
  },
  "hunyuan-dense": {
    max_position_embeddings: "the converter writes HunYuan's 256k context for its dynamic RoPE, " +
      "whatever the trained one",
    rope_theta: "the converter writes the NTK-alpha base θ·alpha^(d/(d−2)), not θ",
  },
  ministral3: {
    architecture: "llama.cpp's converter files Ministral 3 as mistral3: read back, it is Mistral " +
      "3's language model",
    hf_architecture: "as architecture",
    hf_model_type: "as architecture",
  },
  gpt2: {
    rms_norm_eps: "as Command-R",
    intermediate_size: "GPT-2's config.json says n_inner null (4 × hidden, the GGUF's " +
      "feed_forward_length); its Hugging Face import records no width",
    num_kv_heads: "the converter writes no head_count_kv for GPT-2 (llama.cpp takes head_count)",
  },
  "gpt-bigcode": { rms_norm_eps: "as Command-R", intermediate_size: "as GPT-2" },
  gptneox: {
    rms_norm_eps: "as Command-R",
    num_kv_heads: "as GPT-2",
    rope_theta: "the converter writes no rope.freq_base for gptneox, phi2 and stablelm " +
      "(llama.cpp's default 10000, the only base aprkit writes them with)",
  },
  phi2: { rms_norm_eps: "as Command-R", rope_theta: "as GPT-NeoX" },
  stablelm: { rms_norm_eps: "as Command-R", rope_theta: "as GPT-NeoX" },
  "stablelm-qk": { rms_norm_eps: "as Command-R", rope_theta: "as GPT-NeoX" },
  bloom: {
    rms_norm_eps: "as Command-R",
    intermediate_size: "BLOOM's config.json names no MLP width (4 × hidden, the GGUF's)",
    max_position_embeddings: "BLOOM's config.json names no context (ALiBi); the converter " +
      "writes seq_length, else the hidden size",
  },
  falcon: {
    rms_norm_eps: "as Command-R",
    rope_theta: "as GPT-NeoX",
    intermediate_size: "Falcon's config.json names its MLP width ffn_hidden_size, which the " +
      "Hugging Face import does not read (the GGUF's feed_forward_length is 4 × hidden)",
  },
  olmoe: {},
  jais2: { rms_norm_eps: "as Command-R" },
  laguna: {
    num_heads: "Laguna's query heads vary by layer: the GGUF's attention.head_count is an " +
      "array, which a GGUF import does not read as APR's one num_heads",
  },
  gemma4: {
    head_dim: "Gemma 4's GGUF attention.key_length is the full-attention layers' head " +
      "(global_head_dim); config.json's head_dim is the sliding layers' (key_length_swa), " +
      "which a GGUF import does not read as APR's head_dim",
    intermediate_size: "the double-wide MLPs of the layers sharing KV make " +
      "feed_forward_length a per-layer array, which a GGUF import does not read as one width",
  },
  "gemma4-moe": {
    head_dim: "as gemma4",
    num_kv_heads: "the full-attention layer's own KV heads (num_global_key_value_heads) make " +
      "attention.head_count_kv a per-layer array, which a GGUF import does not read as one count",
  },
  "gemma4-dense": { head_dim: "as gemma4", intermediate_size: "as gemma4" },
  deepseek2: {
    num_kv_heads: "MLA is written as MQA over the latent: head_count_kv 1, key_length " +
      "kv_lora_rank + qk_rope_head_dim (the per-head sizes are *_length_mla), which a GGUF " +
      "import reads as APR's num_kv_heads and head_dim",
    head_dim: "as num_kv_heads",
  },
  deepseek3: {
    hf_architecture: "llama.cpp files DeepSeek-V2 and V3 alike as deepseek2: the GGUF names " +
      "no class",
    hf_model_type: "as hf_architecture",
    num_kv_heads: "as deepseek2",
    head_dim: "as deepseek2",
  },
  youtu: {
    architecture: "llama.cpp files Youtu-LLM as deepseek2: nothing in the GGUF tells them apart",
    hf_architecture: "as architecture",
    hf_model_type: "as architecture",
    num_kv_heads: "as deepseek2",
    head_dim: "as deepseek2",
    moe_intermediate_size: "DeepseekV2Model writes intermediate_size as " +
      "expert_feed_forward_length for a model without experts",
  },
  glm4moe: { num_layers: "as glm4moe-lite" },
  "solar-open": {
    architecture: "llama.cpp files Solar Open as glm4moe: nothing in the GGUF tells them apart",
    hf_architecture: "as architecture",
    hf_model_type: "as architecture",
  },
  "granitemoe-shared": {
    architecture: "llama.cpp files Granite MoE with a shared expert as granitemoe; its GGUF " +
      "reads back as Granite MoE's (the shared expert's tensors joined back too)",
    hf_architecture: "as architecture",
    hf_model_type: "as architecture",
  },
  "hrm-text": {
    num_kv_heads: "HRM-Text's config.json names no num_key_value_heads (transformers takes " +
      "the heads) and the converter writes no head_count_kv",
  },
  dbrx: {
    intermediate_size: "DBRX's config.json nests it in ffn_config (ffn_hidden_size), which the " +
      "Hugging Face import does not read; the GGUF's feed_forward_length has it",
    num_experts: "as intermediate_size (ffn_config.moe_num_experts)",
    num_experts_per_tok: "as intermediate_size (ffn_config.moe_top_k)",
  },
  lfm2: {
    num_kv_heads: "LFM2's attention.head_count_kv is a per-layer array (0 for a convolution " +
      "layer), which a GGUF import does not read as one count",
    intermediate_size: "the GGUF's feed_forward_length is the width transformers builds " +
      "(block_auto_adjust_ff_dim); the Hugging Face import records config.json's block_ff_dim",
  },
  "lfm2-moe": { num_kv_heads: "as lfm2" },
  "glm4moe-lite": {
    architecture:
      "llama.cpp files GLM-4.7-Flash as deepseek2: nothing in the GGUF tells them apart",
    hf_architecture: "as architecture",
    hf_model_type: "as architecture",
    num_layers: "the converter counts the multi-token-prediction layers in block_count " +
      "(num_nextn_predict_layers), which a GGUF import reads as APR's num_layers",
    num_kv_heads: "as deepseek2",
    head_dim: "as deepseek2",
  },
  deepseek32: { num_kv_heads: "as deepseek2", head_dim: "as deepseek2" },
  "glm-dsa": { num_kv_heads: "as deepseek2", head_dim: "as deepseek2" },
  mimo2: {
    num_kv_heads: "the sliding layers' own KV heads make attention.head_count_kv a per-layer " +
      "array, which a GGUF import does not read as one count",
    rms_norm_eps: "the published config.json's layernorm_epsilon, which the converter writes, " +
      "is not a field the Hugging Face import reads",
  },
  "mimo2-mtp": { num_kv_heads: "as mimo2", rms_norm_eps: "as mimo2" },
};

/** How a GGUF import's metadata differs from the Hugging Face import's, in the family's fields. */
function metadataDifferences(
  family: string,
  got: ModelMetadata,
  want: ModelMetadata,
  expected: Readonly<Record<string, unknown>> = {},
): string[] {
  const problems: string[] = [];
  const skip = NOT_IN_GGUF[family] ?? {};
  const a = got as Record<string, unknown>;
  const b = { ...want, ...expected } as Record<string, unknown>;
  for (const field of [...FAMILY_FIELDS, ...F32_FIELDS]) {
    if (field in skip) continue;
    const f32 = (F32_FIELDS as readonly string[]).includes(field);
    const w = f32 && typeof b[field] === "number" ? Math.fround(b[field] as number) : b[field];
    if (a[field] !== w) {
      problems.push(`${field} ${JSON.stringify(a[field])}, want ${JSON.stringify(w)}`);
    }
  }
  return problems;
}

async function metadataOf(path: string): Promise<ModelMetadata> {
  const model = await openModel(path);
  try {
    return model.header.metadata;
  } finally {
    await model.close();
  }
}

/** Tensors llama.cpp's converter generates from config.json (Llama 3 RoPE, LongRoPE). */
const GENERATED_ROPE_TENSORS = [
  "rope_freqs.weight",
  "rope_factors_long.weight",
  "rope_factors_short.weight",
];

Deno.test("families: GGUF → SafeTensors gives the source checkpoint's tensors back, bit for bit, from aprkit's GGUF and from llama.cpp's converter's", async (t) => {
  await withTempDir(async (dir) => {
    const cases = [
      ...FAMILIES.map((family) => ({ family, converters: false })),
      ...CONVERTER_GGUFS.map((family) => ({ family, converters: true })),
    ];
    for (const { family, converters } of cases) {
      await t.step(`${family}${converters ? " (llama.cpp's converter's GGUF)" : ""}`, async () => {
        let gguf = `${FAMILIES_DIR}/llama.cpp/${family}-f32.gguf`;
        if (!converters) {
          gguf = `${dir}/${family}.gguf`;
          await convertModel(familyDir(family), gguf);
        }
        const back = `${dir}/${family}${converters ? "-llamacpp" : ""}.safetensors`;
        await convertModel(gguf, back);
        const source = await readTensors(familyDir(family));
        fail(family, tensorDifferences(family, await readTensors(back), source));
      });
    }
  });
});

Deno.test("families: a GGUF aprkit does not read back is refused for SafeTensors and APR output, in one line naming the family and --keep-names, with no file", async (t) => {
  await withTempDir(async (dir) => {
    // gpt-oss: gpt_oss_test.ts.
    for (const family of Object.keys(NOT_READ_BACK).filter((f) => !f.startsWith("gpt-oss"))) {
      const gguf = `${dir}/${family}.gguf`;
      await convertModel(familyDir(family), gguf);
      for (const output of ["safetensors", "apr"]) {
        await t.step(`${family} → ${output}`, async () => {
          const out = `${dir}/back.${output}`;
          const run = await runApr(["convert", gguf, "-o", out]);
          assertOneLineError(
            run,
            /Qwen3-Next|Qwen3\.5|Mamba|Granite 4\.0-H|Bamba|Jamba|Nemotron-H|Falcon-H1|MiniCPM3|Kimi Linear|Qwen4-Exp|Hy4/,
            /--keep-names/,
          );
          await assert.rejects(Deno.stat(out), Deno.errors.NotFound);
        });
      }
    }
  });
});

Deno.test("families: GGUF → APR equals HF → APR (Hugging Face names and layout, rope_type 2), from aprkit's GGUF and from llama.cpp's converter's", async (t) => {
  await withTempDir(async (dir) => {
    const cases = [
      ...FAMILIES.map((family) => ({ family, gguf: undefined as string | undefined })),
      ...CONVERTER_GGUFS.map((family) => ({
        family,
        gguf: `${FAMILIES_DIR}/llama.cpp/${family}-f32.gguf` as string | undefined,
      })),
    ];
    for (const { family, gguf } of cases) {
      await t.step(
        `${family}${gguf === undefined ? "" : " (llama.cpp's converter's GGUF)"}`,
        async () => {
          const direct = `${dir}/${family}.apr`;
          if (!(await exists(direct))) await convertModel(familyDir(family), direct);
          let source = gguf;
          if (source === undefined) {
            source = `${dir}/${family}.gguf`;
            await convertModel(familyDir(family), source);
          }
          const viaGguf = `${dir}/${family}-${gguf === undefined ? "aprkit" : "llamacpp"}.apr`;
          await convertModel(source, viaGguf);
          // The converter's generated RoPE tensors may stay in the APR file: it
          // has no config to make them from again for a GGUF export, and
          // realizar does not look them up. Everything else must be equal.
          const got = await readTensors(viaGguf);
          for (const name of GENERATED_ROPE_TENSORS) got.delete(name);
          const problems = tensorDifferences(family, got, await readTensors(direct));
          const metadata = await metadataOf(viaGguf);
          // Hugging Face's Q/K rows: rotate_half's halves (2), or adjacent
          // pairs where transformers rotates those (Cohere, ERNIE 4.5, GLM-4:
          // 0); none for learned positions (GPT-2).
          const of = familyOf(metadata.architecture);
          const rows = of?.noRope ? undefined : of?.hfRopeInterleaved ? 0 : 2;
          if (metadata.rope_type !== rows) {
            problems.push(
              `rope_type ${metadata.rope_type}, want ${rows} (Hugging Face's Q/K rows)`,
            );
          }
          problems.push(...metadataDifferences(family, metadata, await metadataOf(direct)));
          fail(family, problems);
        },
      );
    }
  });
});

/** A GGUF import of a family without a text class of its own names none. */
const NO_CLASS = { hf_architecture: undefined, hf_model_type: undefined };

/**
 * The multimodal fixtures (transformers 5's saves) and what their text
 * GGUF's import names differently from their Hugging Face import: the GGUF
 * holds the language model only, under its text class where the family has
 * one (Gemma 3, Llama 4), else none (Qwen2-VL, Qwen3-VL, Mistral 3, Ministral 3).
 */
const MULTIMODAL: readonly { dir: string; family: string; expected: Record<string, unknown> }[] = [
  { dir: "hf/qwen2-vl-t5", family: "qwen2vl", expected: NO_CLASS },
  { dir: "hf/qwen2.5-vl-t5", family: "qwen2vl", expected: NO_CLASS },
  { dir: "qwen3vl/hf/qwen3-vl-t5", family: "qwen3vl", expected: NO_CLASS },
  { dir: "qwen3vl/hf/qwen3-vl-moe-t5", family: "qwen3vlmoe", expected: NO_CLASS },
  {
    dir: "hf/llama4-t5",
    family: "llama4",
    expected: { hf_architecture: "Llama4ForCausalLM", hf_model_type: "llama4_text" },
  },
  { dir: "hf/llama4-text-t5", family: "llama4", expected: {} },
  { dir: "hf/mistral3-t5", family: "mistral3", expected: NO_CLASS },
  {
    dir: "hf/gemma3-t5",
    family: "gemma3",
    expected: { hf_architecture: "Gemma3ForCausalLM", hf_model_type: "gemma3_text" },
  },
  // Read back as mistral3 (NOT_IN_GGUF's ministral3), as its text-only form.
  { dir: "hf/ministral3-vl-t5", family: "ministral3", expected: NO_CLASS },
  // Llama's text GGUF reads back as LlamaForCausalLM (llama's own class).
  {
    dir: "hf/smolvlm-t5",
    family: "llama",
    expected: { hf_architecture: "LlamaForCausalLM", hf_model_type: "llama" },
  },
];

Deno.test("families: a multimodal family's text GGUF → APR gives the metadata of HF → APR (architecture, rope_type, sizes)", async (t) => {
  await withTempDir(async (dir) => {
    for (const { dir: fixture, family, expected } of MULTIMODAL) {
      const name = fixture.split("/").at(-1)!;
      await t.step(`${name} (${family})`, async () => {
        const source = testdata(`multimodal/${fixture}`);
        await convertModel(source, `${dir}/${name}.apr`);
        await convertModel(source, `${dir}/${name}.gguf`);
        await convertModel(`${dir}/${name}.gguf`, `${dir}/${name}-gguf.apr`);
        const want = await metadataOf(`${dir}/${name}.apr`);
        const got = await metadataOf(`${dir}/${name}-gguf.apr`);
        const problems = metadataDifferences(family, got, want, expected);
        if (want.architecture !== family) problems.push(`HF → APR says ${want.architecture}`);
        fail(name, problems);
      });
    }
  });
});

async function exists(path: string): Promise<boolean> {
  try {
    await Deno.stat(path);
    return true;
  } catch {
    return false;
  }
}
