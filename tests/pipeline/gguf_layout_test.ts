/**
 * Issue 18: a Hugging Face model stream turned into its family's GGUF
 * tensors — names, experts stacked in expert order (and transformers 5's
 * stacked `gate_up_proj` split), Gemma's norms shifted (from BF16 too),
 * generated tensors first — and a family aprkit does not write refused.
 */

import assert from "node:assert/strict";
import { UsageError } from "../../src/errors.ts";
import { familyGgufPlan } from "../../src/arch/gguf_plan.ts";
import { assertGgufFamily, toGgufLayout } from "../../src/pipeline/gguf_layout.ts";
import type { ModelChunk, ModelHeader, ModelMetadata, TensorInfo } from "../../src/tensor.ts";
import type { DType } from "../../src/dtype.ts";

interface Source {
  name: string;
  dtype: DType;
  shape: number[];
  bytes: Uint8Array;
}

function f32(name: string, shape: number[], values: number[]): Source {
  return { name, dtype: "F32", shape, bytes: new Uint8Array(new Float32Array(values).buffer) };
}

async function run(
  metadata: ModelMetadata,
  sources: Source[],
): Promise<{ header: ModelHeader; payloads: Map<string, Uint8Array>; order: string[] }> {
  const infos: TensorInfo[] = sources.map((s) => ({
    name: s.name,
    dtype: s.dtype,
    shape: s.shape,
    byteLength: s.bytes.length,
  }));
  const chunks: ModelChunk[] = [
    { type: "header", header: { format: "safetensors", metadata, tensors: infos } },
    ...sources.map((s, i) => ({
      type: "tensor" as const,
      // Two chunks per payload, cut off any value boundary.
      tensor: {
        info: infos[i]!,
        open: () => ReadableStream.from([s.bytes.slice(0, 3), s.bytes.slice(3)]),
      },
    })),
  ];
  const out = await Array.fromAsync(ReadableStream.from(chunks).pipeThrough(toGgufLayout()));
  const header = (out[0] as { header: ModelHeader }).header;
  const payloads = new Map<string, Uint8Array>();
  const order: string[] = [];
  for (const c of out.slice(1)) {
    if (c.type !== "tensor") continue;
    order.push(c.tensor.info.name);
    payloads.set(
      c.tensor.info.name,
      new Uint8Array(await new Response(c.tensor.open()).arrayBuffer()),
    );
  }
  return { header, payloads, order };
}

const floats = (b: Uint8Array) => [...new Float32Array(b.slice().buffer)];

Deno.test("Mixtral's per-expert w1/w2/w3 become ffn_{gate,down,up}_exps after the layer's last expert", async () => {
  const sources: Source[] = [];
  for (let e = 0; e < 3; e++) {
    for (const w of ["w1", "w2", "w3"]) {
      const base = e * 100 + ["w1", "w2", "w3"].indexOf(w) * 10;
      sources.push(f32(`model.layers.0.block_sparse_moe.experts.${e}.${w}.weight`, [2, 2], [
        base,
        base + 1,
        base + 2,
        base + 3,
      ]));
    }
  }
  sources.push(f32("model.layers.0.block_sparse_moe.gate.weight", [3, 2], [1, 2, 3, 4, 5, 6]));
  const { header, payloads, order } = await run(
    { architecture: "mixtral", num_experts: 3 },
    sources,
  );
  assert.deepEqual(header.tensors.map((t) => t.name), order);
  assert.deepEqual(order, [
    "blk.0.ffn_gate_exps.weight",
    "blk.0.ffn_down_exps.weight",
    "blk.0.ffn_up_exps.weight",
    "blk.0.ffn_gate_inp.weight",
  ]);
  assert.deepEqual(header.tensors[0]!.shape, [3, 2, 2]);
  assert.deepEqual(floats(payloads.get("blk.0.ffn_down_exps.weight")!), [
    10,
    11,
    12,
    13,
    110,
    111,
    112,
    113,
    210,
    211,
    212,
    213,
  ]);
});

Deno.test("a missing expert is refused, naming it", async () => {
  const sources = [0, 1].flatMap((e) =>
    ["down_proj", "gate_proj", "up_proj"].map((w) =>
      f32(`model.layers.0.mlp.experts.${e}.${w}.weight`, [1, 2], [e, e])
    )
  ).filter((s) => s.name !== "model.layers.0.mlp.experts.1.up_proj.weight");
  await assert.rejects(
    run({ architecture: "qwen3moe", num_experts: 2 }, sources),
    /experts of layer 0: "model\.layers\.0\.mlp\.experts\.1\.up_proj\.weight" is missing/,
  );
});

Deno.test("transformers 5's stacked gate_up_proj splits into each expert's gate and up rows", async () => {
  // 2 experts × (2 gate rows + 2 up rows) × 2 columns.
  const values = Array.from({ length: 16 }, (_, i) => i);
  const { payloads, order, header } = await run({ architecture: "qwen2moe" }, [
    f32("model.layers.1.mlp.experts.down_proj", [2, 2, 2], values.slice(0, 8)),
    f32("model.layers.1.mlp.experts.gate_up_proj", [2, 4, 2], values),
  ]);
  assert.deepEqual(order, [
    "blk.1.ffn_down_exps.weight",
    "blk.1.ffn_gate_exps.weight",
    "blk.1.ffn_up_exps.weight",
  ]);
  assert.deepEqual(header.tensors[1]!.shape, [2, 2, 2]);
  assert.deepEqual(floats(payloads.get("blk.1.ffn_gate_exps.weight")!), [0, 1, 2, 3, 8, 9, 10, 11]);
  assert.deepEqual(floats(payloads.get("blk.1.ffn_up_exps.weight")!), [4, 5, 6, 7, 12, 13, 14, 15]);
});

Deno.test("Gemma's norms get +1 as F32, from BF16 too; other tensors keep their bytes", async () => {
  // BF16 of 0.5 and -0.25: the high halves of their float32s.
  const bf16 = new Uint8Array([0x00, 0x3f, 0x80, 0xbe]);
  const { header, payloads } = await run({ architecture: "gemma" }, [
    { name: "model.layers.0.input_layernorm.weight", dtype: "BF16", shape: [2], bytes: bf16 },
    f32("model.norm.weight", [2], [0, -1]),
    f32("model.layers.0.mlp.up_proj.weight", [1, 2], [0.5, -0.5]),
  ]);
  assert.deepEqual(header.tensors.map((t) => [t.name, t.dtype]), [
    ["blk.0.attn_norm.weight", "F32"],
    ["output_norm.weight", "F32"],
    ["blk.0.ffn_up.weight", "F32"],
  ]);
  assert.deepEqual(floats(payloads.get("blk.0.attn_norm.weight")!), [1.5, 0.75]);
  assert.deepEqual(floats(payloads.get("output_norm.weight")!), [1, 0]);
  assert.deepEqual(floats(payloads.get("blk.0.ffn_up.weight")!), [0.5, -0.5]);
});

Deno.test("Llama 3 RoPE scaling: rope_freqs.weight comes first, from config.json", async () => {
  const config = {
    architectures: ["LlamaForCausalLM"],
    num_hidden_layers: 1,
    vocab_size: 4,
    hidden_size: 8,
    num_attention_heads: 1,
    rope_scaling: {
      rope_type: "llama3",
      factor: 8,
      low_freq_factor: 1,
      high_freq_factor: 4,
      original_max_position_embeddings: 8,
    },
    rope_theta: 10000,
  };
  const { order, payloads } = await run({ architecture: "llama", hf_config: config }, [
    f32("model.norm.weight", [2], [1, 1]),
  ]);
  assert.deepEqual(order, ["rope_freqs.weight", "output_norm.weight"]);
  assert.equal(payloads.get("rope_freqs.weight")!.length, 4 * 4);
});

/** Apertus's config and tensors: layer 1's xIELU scalars come last, beta and eps 0-D. */
const APERTUS_CONFIG = {
  architectures: ["ApertusForCausalLM"],
  num_hidden_layers: 2,
  vocab_size: 4,
  hidden_size: 2,
  num_attention_heads: 1,
};
const xielu = (layer: number, base: number): Source[] =>
  ["alpha_n", "alpha_p", "beta", "eps"].map((kind, i) =>
    f32(`model.layers.${layer}.mlp.act_fn.${kind}`, i < 2 ? [1] : [], [base + i])
  );

Deno.test("Apertus: xIELU's scalars are read before the header and written as xielu.* keys, not tensors", async () => {
  const sources = [
    f32("model.layers.0.mlp.up_proj.weight", [2, 2], [1, 2, 3, 4]),
    ...xielu(0, 10),
    f32("model.layers.1.mlp.up_proj.weight", [2, 2], [5, 6, 7, 8]),
    // The converter adds each array when its last layer's value comes: beta before alpha_n here.
    ...xielu(1, 20).sort((a, b) => a.name.localeCompare(b.name)).reverse(),
  ];
  const { header, order, payloads } = await run(
    { architecture: "apertus", hf_config: APERTUS_CONFIG, original_format: "safetensors" },
    sources,
  );
  assert.deepEqual(order, ["blk.0.ffn_up.weight", "blk.1.ffn_up.weight"]);
  assert.deepEqual(header.tensors.map((t) => t.name), order);
  assert.deepEqual(floats(payloads.get("blk.1.ffn_up.weight")!), [5, 6, 7, 8]);
  const early = familyGgufPlan(header.metadata)!.early;
  assert.deepEqual([...early.keys()], [
    "xielu.eps",
    "xielu.beta",
    "xielu.alpha_p",
    "xielu.alpha_n",
  ]);
  assert.deepEqual(early.get("xielu.alpha_n"), {
    type: "ARRAY",
    array_types: ["FLOAT32"],
    value: [10, 20],
  });
  assert.deepEqual(early.get("xielu.eps")!.value, [13, 23]);
});

Deno.test("Apertus: a missing xIELU scalar, or one with too many values, is refused naming it", async () => {
  const metadata = { architecture: "apertus", hf_config: APERTUS_CONFIG };
  const without = [...xielu(0, 10), ...xielu(1, 20)].filter((s) =>
    s.name !== "model.layers.1.mlp.act_fn.beta"
  );
  await assert.rejects(
    run(metadata, without),
    /xielu\.beta: the model has no "model\.layers\.1\.mlp\.act_fn\.beta"/,
  );
  await assert.rejects(
    run(metadata, [f32("model.norm.weight", [2], [1, 1])]),
    /xielu\.alpha_n: the model has no "model\.layers\.0\.mlp\.act_fn\.alpha_n"/,
  );
  const big = [...xielu(0, 10), ...xielu(1, 20)].map((s) =>
    s.name.endsWith("1.mlp.act_fn.alpha_p") ? f32(s.name, [65], Array(65).fill(1)) : s
  );
  await assert.rejects(
    run(metadata, big),
    /"model\.layers\.1\.mlp\.act_fn\.alpha_p" to GGUF: the apertus family writes it as a key, and it has 65 values \(at most 64\)/,
  );
});

Deno.test("a tensor the family has no GGUF name for is refused, naming it", async () => {
  await assert.rejects(
    run({ architecture: "qwen2" }, [f32("model.layers.0.mlp.mystery.weight", [1], [0])]),
    /"model\.layers\.0\.mlp\.mystery\.weight" to GGUF: the qwen2 family has no GGUF name/,
  );
});

Deno.test("assertGgufFamily(): an unknown family is refused naming it and the supported list", () => {
  const error = assert.throws(
    () =>
      assertGgufFamily(
        { architecture: "tiny_made_up", hf_architecture: "TinyMadeUpForCausalLM" },
        "models/x",
      ),
    (e: unknown) => {
      assert.ok(e instanceof UsageError);
      assert.match(
        e.message,
        /^Cannot convert "models\/x" to GGUF: architecture "tiny_made_up" \(TinyMadeUpForCausalLM\) is not one aprkit writes as GGUF; supported: llama, mistral, mixtral, .*starcoder2, gpt-oss, deepseek2(, [a-z0-9_-]+)*$/,
      );
      return true;
    },
  );
  void error;
  // A known family whose config llama.cpp would compute otherwise: refused too.
  // From a GGUF, or without an architecture: passed.
  const qwen2 = {
    model_type: "qwen2",
    hidden_act: "gelu",
    num_hidden_layers: 2,
    hidden_size: 64,
    num_attention_heads: 4,
    num_key_value_heads: 2,
    intermediate_size: 128,
    vocab_size: 384,
  };
  assert.throws(
    () =>
      assertGgufFamily(
        { architecture: "qwen2", hf_architecture: "Qwen2ForCausalLM", hf_config: qwen2 },
        "m",
      ),
    /hidden_act "gelu"; llama\.cpp's qwen2 reads no key for it/,
  );
  assertGgufFamily({ architecture: "tiny_made_up", original_format: "gguf" }, "m");
  assertGgufFamily({}, "m");
});

Deno.test("assertGgufFamily(): a config.json without what the family needs names the file", () => {
  assert.throws(
    () => assertGgufFamily({ architecture: "gemma2", hf_config: { hidden_size: 8 } }, "dir/gemma"),
    /^ModelFormatError: Cannot read JSON file "dir\/gemma": config\.json has no number for max_position_embeddings, which the gemma2 family's GGUF needs$/,
  );
});
