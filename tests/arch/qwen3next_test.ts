/**
 * Qwen3-Next's refusals: what llama.cpp's `qwen3next` reads no key for.
 * Its GGUF itself is judged against llama.cpp's converter and transformers
 * in tests/interop/families_gguf_test.ts (fixture `qwen3-next`).
 */

import assert from "node:assert/strict";
import { QWEN3NEXT } from "../../src/arch/families/qwen3next.ts";
import { configRefusal } from "../../src/arch/config_fields.ts";
import { KvWriter } from "../../src/arch/kv.ts";

const CONFIG = JSON.parse(
  await Deno.readTextFile(
    new URL("../testdata/families/hf/qwen3-next/config.json", import.meta.url),
  ),
) as Record<string, unknown>;

function refusal(change: Record<string, unknown>): string | undefined {
  const w = new KvWriter({ ...CONFIG, ...change }, "qwen3next");
  return configRefusal(QWEN3NEXT.configFields, w) ?? QWEN3NEXT.gguf!.unsupported!(w);
}

Deno.test("qwen3next: a config llama.cpp would not run as transformers does is refused, naming the field", () => {
  assert.equal(refusal({}), undefined);
  assert.match(refusal({ linear_value_head_dim: 32 })!, /linear_value_head_dim 32/);
  assert.match(refusal({ linear_num_value_heads: 3 })!, /linear_num_value_heads 3/);
  assert.match(refusal({ attention_bias: true })!, /attention_bias true/);
  assert.match(refusal({ norm_topk_prob: false })!, /norm_topk_prob false.*true/);
  assert.match(refusal({ mlp_only_layers: [1] })!, /mlp_only_layers \[1\]/);
  assert.match(refusal({ decoder_sparse_step: 2 })!, /decoder_sparse_step 2/);
});

Deno.test("qwen3next: the recurrent layers and rotated dims as the converter writes them", () => {
  const w = new KvWriter(CONFIG, "qwen3next");
  QWEN3NEXT.gguf!.writeKv(w);
  const kv = w.entries();
  assert.deepEqual(kv.get("qwen3next.attention.recurrent_layers")?.value, [
    true,
    true,
    true,
    false,
  ]);
  assert.equal(kv.get("qwen3next.rope.dimension_count")?.value, 4); // 16 × 0.25
  assert.equal(kv.get("qwen3next.ssm.inner_size")?.value, 64); // 4 value heads × 16
  // Gated norm of the linear attention kept; the others get the +1 transformers adds.
  assert.equal(QWEN3NEXT.gguf!.shift!("blk.0.ssm_norm.weight"), 0);
  assert.equal(QWEN3NEXT.gguf!.shift!("blk.3.attn_q_norm.weight"), 1);
  assert.equal(QWEN3NEXT.gguf!.shift!("output_norm.weight"), 1);
});
