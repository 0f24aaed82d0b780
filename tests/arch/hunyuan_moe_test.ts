/**
 * Hunyuan MoE: its refusals, Hunyuan-A13B's NTK-alpha RoPE keys, the per-layer
 * MoE lists read as the converter reads them (and as transformers builds the
 * model when they are left out), and the BOS its converter always writes. Its
 * GGUF itself is judged against llama.cpp's converter and transformers in
 * tests/interop/families_gguf_test.ts (fixture `hunyuan-moe`).
 */

import assert from "node:assert/strict";
import { HUNYUAN_MOE } from "../../src/arch/families/hunyuan_moe.ts";
import { KvWriter } from "../../src/arch/kv.ts";
import { aprMetadataFromHf } from "../../src/formats/safetensors/hf_metadata.ts";
import { fixtureConfig, refusalOf } from "./_fixture_refusal.ts";

const CONFIG = await fixtureConfig("hunyuan-moe");
const refusal = (change: Record<string, unknown>) => refusalOf("hunyuan-moe", CONFIG, change);
/** Hunyuan-A13B's attention width: 32 heads of 128. */
const A13B = { hidden_size: 4096, num_attention_heads: 32, max_position_embeddings: 32768 };
const ALPHA = { rope_type: "dynamic", rope_theta: 10000, alpha: 1000 };

function keys(change: Record<string, unknown>): Map<string, unknown> {
  const w = new KvWriter({ ...CONFIG, ...change }, "hunyuan-moe");
  HUNYUAN_MOE.gguf!.writeKv(w);
  return new Map([...w.entries()].map(([k, e]) => [k.replace("hunyuan-moe.", ""), e.value]));
}

Deno.test("hunyuan-moe: a config llama.cpp would not run as transformers does is refused, naming the field", () => {
  assert.equal(refusal({}), undefined);
  assert.equal(refusal({ ...A13B, rope_parameters: ALPHA }), undefined);
  assert.match(refusal({ attention_bias: true })!, /attention_bias true/);
  assert.match(refusal({ moe_topk: [2, 1] })!, /moe_topk \[2,1\]/);
  assert.match(refusal({ num_experts: [4, 8] })!, /num_experts \[4,8\]/);
  assert.match(refusal({ moe_intermediate_size: [64, 64] })!, /moe_intermediate_size 64/);
  // The converter asserts Hunyuan-A13B's own dynamic RoPE.
  assert.match(
    refusal({ rope_parameters: ALPHA, max_position_embeddings: 32768 })!,
    /alpha 1000 and hidden_size \/ num_attention_heads 16/,
  );
  assert.match(
    refusal({ ...A13B, rope_parameters: { ...ALPHA, alpha: 50 } })!,
    /alpha 50 and hidden_size \/ num_attention_heads 128/,
  );
  assert.match(
    refusal({ ...A13B, rope_parameters: { rope_type: "dynamic", rope_theta: 1e4, factor: 2 } })!,
    /"dynamic" without alpha/,
  );
  assert.match(
    refusal({ rope_parameters: { rope_type: "linear", rope_theta: 1e4, factor: 2 } })!,
    /rope_type "linear"; llama\.cpp's converter writes no such RoPE scaling for hunyuan-moe/,
  );
});

Deno.test("hunyuan-moe: Hunyuan-A13B's dynamic RoPE is written as the converter writes it", () => {
  const kv = keys({ ...A13B, rope_parameters: ALPHA });
  assert.equal(kv.get("rope.freq_base"), 10000 * 1000 ** (128 / 126));
  assert.equal(kv.get("rope.scaling.type"), "none");
  assert.equal(kv.get("context_length"), 262144);
});

Deno.test("hunyuan-moe: the per-layer lists, or without them the widths transformers builds", () => {
  const listed = keys({});
  assert.equal(listed.get("expert_used_count"), 2);
  assert.equal(listed.get("expert_feed_forward_length"), 128);
  assert.equal(listed.get("expert_shared_count"), 1);
  // transformers' own config: moe_topk a number, no moe_intermediate_size, one shared MLP.
  const plain = keys({
    moe_topk: 3,
    moe_intermediate_size: undefined,
    num_shared_expert: undefined,
  });
  assert.equal(plain.get("expert_used_count"), 3);
  assert.equal(plain.get("expert_feed_forward_length"), 128);
  assert.equal(plain.get("expert_shared_count"), 1);
});

Deno.test("hunyuan-moe: BOS is Hunyuan-A13B's <|bos|> (127959), as the converter always writes it", async () => {
  const tokenizer = JSON.parse(
    await Deno.readTextFile(
      new URL("../testdata/families/hf/hunyuan-moe/tokenizer.json", import.meta.url),
    ),
  );
  const m = aprMetadataFromHf({ config: CONFIG, tokenizer });
  const ids = m["tokenizer.special_ids"] as Record<string, number>;
  assert.equal(ids["bos"], 127959);
  assert.equal(ids["eos"], 379);
  assert.equal(m["tokenizer.pre"], "hunyuan");
  assert.equal(m["num_experts_per_tok"], 2);
});
