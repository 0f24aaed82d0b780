import { deepStrictEqual as assertEquals } from "node:assert/strict";
import { type LlamaPreset, presetTensorTypes } from "../../src/quant/llama_presets.ts";
import { planTensor } from "../../src/quant/plan_quantization.ts";
import type { ModelMetadata, TensorInfo } from "../../src/tensor.ts";

// llama_tensor_get_type (llama.cpp c392e50) on synthetic models: which type
// each tensor gets. The fixture tests (tests/pipeline/llama_presets_test.ts)
// prove the bytes; these cover the rules tiny models cannot reach.

const t = (name: string, shape: number[]): TensorInfo => ({
  name,
  dtype: "F32",
  shape,
  byteLength: 0,
});

/** A llama-like model in GGUF names: `layers` blocks, hidden 256, untied output. */
function llama(layers: number, extra: TensorInfo[] = []): TensorInfo[] {
  const out = [t("token_embd.weight", [512, 256]), t("output_norm.weight", [256])];
  for (let i = 0; i < layers; i++) {
    for (const p of ["attn_q", "attn_k", "attn_v", "attn_output"]) {
      out.push(t(`blk.${i}.${p}.weight`, [256, 256]));
    }
    out.push(t(`blk.${i}.attn_norm.weight`, [256]), t(`blk.${i}.attn_q.bias`, [256]));
    out.push(t(`blk.${i}.ffn_down.weight`, [256, 512]), t(`blk.${i}.ffn_up.weight`, [512, 256]));
  }
  return [...out, t("output.weight", [512, 256]), ...extra];
}

function typesOf(
  tensors: TensorInfo[],
  preset: LlamaPreset,
  metadata: ModelMetadata = {},
  apr = false,
): Map<string, string | undefined> {
  const types = presetTensorTypes(tensors, { architecture: "llama", ...metadata }, preset, { apr });
  return new Map(tensors.map((x, i) => [x.name, types[i]]));
}

/** The layers whose `part` got `type`. */
function layersWith(types: Map<string, string | undefined>, part: string, type: string): number[] {
  return [...types].filter(([n, ty]) => n.endsWith(`.${part}.weight`) && ty === type)
    .map(([n]) => Number(n.split(".")[1])).sort((a, b) => a - b);
}

// use_more_bits(i, 32): i < 4, i >= 28, or (i - 4) % 3 == 2.
const MORE_BITS_32 = [0, 1, 2, 3, 6, 9, 12, 15, 18, 21, 24, 27, 28, 29, 30, 31];

Deno.test("presetTensorTypes() gives Q4_K_M's attn_v and ffn_down Q6_K on use_more_bits layers", () => {
  const types = typesOf(llama(32), "Q4_K_M");
  assertEquals(layersWith(types, "attn_v", "Q6_K"), MORE_BITS_32);
  assertEquals(layersWith(types, "ffn_down", "Q6_K"), MORE_BITS_32);
  assertEquals(layersWith(types, "attn_q", "Q4_K").length, 32);
  assertEquals(types.get("output.weight"), "Q6_K");
  assertEquals(types.get("token_embd.weight"), "Q4_K"); // untied: the base type
  assertEquals(types.get("output_norm.weight"), undefined);
  assertEquals(types.get("blk.0.attn_q.bias"), undefined);
});

Deno.test("presetTensorTypes() counts layers in llama.cpp's order, whatever the header's order", () => {
  const tensors = llama(32);
  const shuffled = [...tensors].reverse();
  const a = typesOf(tensors, "Q4_K_M");
  const b = typesOf(shuffled, "Q4_K_M");
  assertEquals([...a].sort(), [...b].sort());
});

Deno.test("presetTensorTypes() gives Q4_K_S Q5_K for the first four attn_v and the first eighth of ffn_down", () => {
  const types = typesOf(llama(32), "Q4_K_S");
  assertEquals(layersWith(types, "attn_v", "Q5_K"), [0, 1, 2, 3]);
  assertEquals(layersWith(types, "ffn_down", "Q5_K"), [0, 1, 2, 3]);
  assertEquals(layersWith(types, "ffn_down", "Q4_K").length, 28);
});

Deno.test("presetTensorTypes() gives Q5_K_M Q6_K on use_more_bits layers, Q5_K_S plain Q5_K", () => {
  const m = typesOf(llama(32), "Q5_K_M");
  assertEquals(layersWith(m, "attn_v", "Q6_K"), MORE_BITS_32);
  assertEquals(layersWith(m, "attn_q", "Q5_K").length, 32);
  const s = typesOf(llama(32), "Q5_K_S");
  assertEquals(layersWith(s, "attn_v", "Q5_K").length, 32);
  assertEquals(s.get("output.weight"), "Q6_K");
});

Deno.test("presetTensorTypes() treats tied embeddings as the output tensor", () => {
  const tied = llama(2).filter((x) => x.name !== "output.weight");
  assertEquals(typesOf(tied, "Q4_K_M").get("token_embd.weight"), "Q6_K");
  assertEquals(typesOf(tied, "Q8_0").get("token_embd.weight"), "Q8_0");
});

Deno.test("presetTensorTypes() types an APR file's tied lm_head copy and the embedding as llama-quantize types the tied GGUF", () => {
  // APR output carries output.weight (lm_head) as a copy of a tied embedding.
  const withCopy = llama(2);
  const tied = typesOf(withCopy, "Q4_K_M", { tied_embeddings: true }, true);
  assertEquals(tied.get("token_embd.weight"), "Q6_K");
  assertEquals(tied.get("output.weight"), "Q6_K");
  // An untied output keeps token_embd at the base type.
  assertEquals(typesOf(withCopy, "Q4_K_M", {}, true).get("token_embd.weight"), "Q4_K");
});

Deno.test("presetTensorTypes() falls back as llama.cpp for rows that are not whole super-blocks", () => {
  const tensors = [
    t("blk.0.attn_q.weight", [64, 288]), // 288 = 9 × 32
    t("blk.0.attn_k.weight", [64, 300]), // not whole 32-value blocks either
    t("output.weight", [64, 288]),
  ];
  const q4 = typesOf(tensors, "Q4_K_M");
  assertEquals(q4.get("blk.0.attn_q.weight"), "Q5_0");
  assertEquals(q4.get("blk.0.attn_k.weight"), "F16");
  assertEquals(q4.get("output.weight"), "Q8_0");
  assertEquals(typesOf(tensors, "Q5_K_S").get("blk.0.attn_q.weight"), "Q5_1");
  assertEquals(typesOf(tensors, "Q6_K").get("blk.0.attn_q.weight"), "Q8_0");
  // presetTensorTypes gives APR the K-quant before the fallback (planQuantization
  // then applies APR's row fallback), and holds Q8_0/Q5_K as Q6_K.
  const apr = typesOf(tensors, "Q4_K_M", {}, true);
  assertEquals(apr.get("blk.0.attn_q.weight"), "Q4_K");
  assertEquals(apr.get("blk.0.attn_k.weight"), "Q4_K");
  assertEquals(apr.get("output.weight"), "Q6_K");
  assertEquals(typesOf(tensors, "Q5_K_S", {}, true).get("blk.0.attn_q.weight"), "Q6_K");
});

Deno.test("presetTensorTypes() falls back to F16 where a 32-value type does not fit (Q8_0 rows of 100), as llama.cpp's tensor_type_fallback", () => {
  // llama-quant.cpp (de3ff81): a target of 32-value blocks has no smaller
  // block to demote to, "the check below turns it into F16"; DeepSeek's
  // 16-wide attn_k_b rows (tests/testdata/families/llama.cpp/deepseek2-q8_0.json).
  const types = typesOf([t("blk.0.attn_q.weight", [4, 100])], "Q8_0");
  assertEquals([...types.values()], ["F16"]);
});

Deno.test("presetTensorTypes() skips 1-D tensors, norms, MoE gates and [1, n] matrices", () => {
  const types = typesOf([
    t("blk.0.ffn_gate_inp.weight", [8, 256]),
    t("blk.0.attn_q_norm.weight", [64, 256]),
    t("blk.0.attn_q.weight", [1, 256]), // ggml_n_dims is 1
    t("rope_freqs.weight", [64]),
    t("blk.0.attn_k.weight", [256, 256]),
  ], "Q4_K_M");
  assertEquals([...types.values()], [undefined, undefined, undefined, undefined, "Q4_K"]);
});

Deno.test("presetTensorTypes() applies the 8-expert, attn_qkv and 70B rules", () => {
  const moe = typesOf(
    [
      t("blk.0.attn_v.weight", [256, 256]),
      t("blk.0.attn_k.weight", [256, 256]),
      t("blk.0.attn_output.weight", [256, 256]),
      t("blk.1.ffn_down_exps.weight", [8, 256, 512]),
    ],
    "Q4_K_M",
    { num_experts: 8, num_layers: 2 },
  );
  assertEquals([...moe.values()], ["Q8_0", "Q8_0", "Q5_K", "Q6_K"]); // layer 1 of 2 uses more bits
  // The judge's llama.cpp counts a fused attn_qkv as attn_v (category_is_attn_v): its rules and
  // counter, so in 2 layers only the last gets more bits (as llama-quantize gave Phi-3's fixture,
  // tests/arch/converter_manifest_test.ts).
  const qkv = [t("blk.0.attn_qkv.weight", [768, 256]), t("blk.1.attn_qkv.weight", [768, 256])];
  assertEquals([...typesOf(qkv, "Q4_K_M").values()], ["Q4_K", "Q6_K"]);
  assertEquals([...typesOf(qkv, "Q5_K_M").values()], ["Q5_K", "Q6_K"]);
  assertEquals([...typesOf(qkv, "Q4_K_S").values()], ["Q5_K", "Q5_K"]); // first 4 attn_v-likes
  const big = llama(80);
  const gqa = typesOf(big, "Q4_K_S", { num_layers: 80, num_heads: 64, num_kv_heads: 8 });
  assertEquals(layersWith(gqa, "attn_v", "Q5_K").length, 80); // 70B: Q4_K → Q5_K
  const mha = typesOf(big, "Q4_K_S", { num_layers: 80, num_heads: 64, num_kv_heads: 64 });
  assertEquals(layersWith(mha, "attn_v", "Q5_K"), [0, 1, 2, 3]); // 65B: unchanged
});

Deno.test("presetTensorTypes() reads Hugging Face names of llama-like models through the GGUF mapping", () => {
  const types = typesOf(
    [
      t("model.embed_tokens.weight", [512, 256]),
      t("model.layers.0.self_attn.v_proj.weight", [128, 256]),
      t("model.layers.1.self_attn.v_proj.weight", [128, 256]),
    ],
    "Q4_K_M",
    { num_layers: 2 },
  );
  assertEquals([...types.values()], ["Q6_K", "Q4_K", "Q6_K"]);
});

Deno.test("presetTensorTypes() leaves kept blocks out as a --tensor-type naming them with their own type does: chosen and counted by no rule", () => {
  // Layers 0-11's attn_v and ffn_down NVFP4 (a checkpoint's kept blocks), the rest F32.
  const nvfp4 = (x: TensorInfo): TensorInfo =>
    /^blk\.([0-9]|1[01])\.(attn_v|ffn_down)\./.test(x.name) ? { ...x, dtype: "NVFP4" } : x;
  const tensors = llama(32).map(nvfp4);
  const meta = { architecture: "llama" };
  const keep = (x: TensorInfo) => x.dtype === "NVFP4";
  const kept = presetTensorTypes(tensors, meta, "Q4_K_M", { keep });
  // llama-quantize told `--tensor-type ^NAME$=nvfp4` for each (already modelled and compared
  // with llama-quantize's files in tests/pipeline/llama_quantize_options_test.ts).
  const named = presetTensorTypes(tensors, meta, "Q4_K_M", {
    params: {
      tensorTypes: tensors.filter(keep).map((x) => ({
        pattern: new RegExp(`^${x.name.replaceAll(".", "\\.")}$`),
        type: "NVFP4" as const,
      })),
    },
  });
  assertEquals(
    kept.map((type, i) => type ?? (keep(tensors[i]!) ? "NVFP4" : undefined)),
    named,
  );
  // Not vacuous: the later layers' choices move with the counters that skip the kept ones
  // (layers 12-31 are use_more_bits(i, 32)'s i = 0-19, not 12-31).
  const counted = presetTensorTypes(tensors, meta, "Q4_K_M");
  const moved = tensors.filter((x, i) => !keep(x) && counted[i] !== kept[i]).map((x) => x.name);
  assertEquals(moved.length > 0, true);
  // The mix's own type for a kept block (MXFP4 experts under MXFP4_MOE) is chosen and counted.
  const experts = [t("blk.0.ffn_down_exps.weight", [8, 256, 512])].map((x) => ({
    ...x,
    dtype: "MXFP4" as const,
  }));
  assertEquals(
    presetTensorTypes(experts, { architecture: "llama", num_experts: 8 }, "MXFP4_MOE", {
      keep: () => true,
    }),
    ["MXFP4"],
  );
});

Deno.test("presetTensorTypes() gives the converter's Q8_0 to a router it converts anyway, and keeps the others F32", () => {
  const routers = [
    t("blk.0.ffn_gate_inp.weight", [8, 256]),
    t("blk.1.ffn_gate_inp.weight", [8, 256]),
  ];
  const tensors = llama(2, routers);
  const converted = new Set(["blk.1.ffn_gate_inp.weight"]);
  const types = presetTensorTypes(tensors, { architecture: "llama" }, "Q8_0", {
    convertedAnyway: converted,
  });
  const of = new Map(tensors.map((x, i) => [x.name, types[i]]));
  assertEquals(of.get("blk.0.ffn_gate_inp.weight"), undefined);
  assertEquals(of.get("blk.1.ffn_gate_inp.weight"), "Q8_0");
  // llama-quantize's presets never quantize a router, whatever the converter did.
  const q4 = presetTensorTypes(tensors, { architecture: "llama" }, "Q4_K_M", {
    convertedAnyway: converted,
  });
  assertEquals(q4[tensors.length - 1], undefined);
});

Deno.test("planTensor() converts a router the converter converts anyway to BF16, as --outtype bf16", () => {
  const router = t("blk.7.ffn_gate_inp.weight", [8, 64]);
  const bf16 = (options: object) =>
    planTensor(router, { to: "bf16", ggufTypes: true, ...options }).info.dtype;
  assertEquals(bf16({}), "F32");
  assertEquals(bf16({ convertedAnyway: new Set([router.name]) }), "BF16");
});
