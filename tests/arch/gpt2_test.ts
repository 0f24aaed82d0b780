/**
 * GPT-2's and GPTBigCode's refusals: what llama.cpp's gpt2 and starcoder
 * hard-code (a 4 × hidden MLP, the context as the position table, one KV
 * head, no per-layer attention scaling). Their GGUFs themselves are judged
 * against llama.cpp's converter and transformers in
 * tests/interop/families_gguf_test.ts (fixtures `gpt2`, `gpt-bigcode`).
 */

import assert from "node:assert/strict";
import { configRefusal } from "../../src/arch/config_fields.ts";
import { GPT2, STARCODER } from "../../src/arch/families/gpt2.ts";
import type { Family } from "../../src/arch/family.ts";
import { KvWriter } from "../../src/arch/kv.ts";

async function config(fixture: string): Promise<Record<string, unknown>> {
  const url = new URL(`../testdata/families/hf/${fixture}/config.json`, import.meta.url);
  return JSON.parse(await Deno.readTextFile(url));
}

function refusal(
  family: Family,
  base: Record<string, unknown>,
  change: Record<string, unknown>,
): string | undefined {
  const w = new KvWriter({ ...base, ...change }, family.ggufArchitecture);
  return configRefusal(family.configFields, w) ?? family.gguf!.unsupported!(w);
}

Deno.test("gpt2: a config llama.cpp's gpt2 would not run as transformers does is refused, naming the field and llama.cpp's value", async () => {
  const base = await config("gpt2");
  assert.equal(refusal(GPT2, base, {}), undefined);
  assert.match(refusal(GPT2, base, { n_inner: 100 })!, /n_inner 100.*4 × n_embd = 256/);
  assert.equal(refusal(GPT2, base, { n_inner: 256 }), undefined);
  assert.match(refusal(GPT2, base, { n_ctx: 128 })!, /n_ctx 128 and n_positions 256/);
  assert.match(
    refusal(GPT2, base, { scale_attn_by_inverse_layer_idx: true })!,
    /scale_attn_by_inverse_layer_idx true.*computes as with false/,
  );
  assert.match(refusal(GPT2, base, { scale_attn_weights: false })!, /scale_attn_weights false/);
  assert.match(refusal(GPT2, base, { activation_function: "relu" })!, /activation_function "relu"/);
});

Deno.test("starcoder: multi-head (not multi-query) GPTBigCode is refused, one KV head being what llama.cpp's starcoder assumes", async () => {
  const base = await config("gpt-bigcode");
  assert.equal(refusal(STARCODER, base, {}), undefined);
  assert.match(refusal(STARCODER, base, { multi_query: false })!, /multi_query false.*true/);
  assert.match(refusal(STARCODER, base, { n_inner: 100 })!, /n_inner 100/);
});

Deno.test("gpt2: its Conv1D weights (not biases, norms or embeddings) are the transposed ones", () => {
  const transposed = GPT2.gguf!.transposed!;
  for (const piece of ["attn.c_attn", "attn.c_proj", "mlp.c_fc", "mlp.c_proj"]) {
    assert.equal(transposed(`transformer.h.3.${piece}.weight`), true, piece);
    assert.equal(transposed(`transformer.h.3.${piece}.bias`), false, piece);
  }
  assert.equal(transposed("transformer.wte.weight"), false);
  assert.equal(transposed("transformer.h.0.ln_1.weight"), false);
  // GPTBigCode's projections are Linear: stored [out, in] already.
  assert.equal(STARCODER.gguf!.transposed, undefined);
});
