/**
 * Qwen4-Exp's refusals and warning: what llama.cpp's `qwen4exp` hard-codes
 * or computes otherwise, set in config.json; and the PLE hash constants,
 * derived from the config as transformers derives its buffers. Its GGUF itself
 * is judged against llama.cpp's converter and transformers in
 * tests/interop/families_gguf_test.ts (fixture `qwen4exp`).
 */

import assert from "node:assert/strict";
import { familyGgufWarnings } from "../../src/arch/gguf_plan.ts";
import { pleHeadVocabSizes, pleMultipliers } from "../../src/arch/families/qwen4exp.ts";
import { fixtureConfig, refusalOf } from "./_fixture_refusal.ts";

const CONFIG = await fixtureConfig("qwen4exp");
const refusal = (change: Record<string, unknown>) => refusalOf("qwen4exp", CONFIG, change);

Deno.test("qwen4exp: a config llama.cpp would not run as transformers does is refused, naming the field", () => {
  assert.equal(refusal({}), undefined);
  // transformers gates the linear attention with hidden_act (silu) when output_gate_type is
  // unset; llama.cpp always with sigmoid (the fixture with silu: 2.37 apart).
  assert.match(refusal({ output_gate_type: null })!, /output_gate_type null \(.*silu\).*sigmoid/);
  assert.match(refusal({ output_gate_type: "silu" })!, /output_gate_type "silu"/);
  assert.match(refusal({ ple_layer_ids: [1, 2] })!, /ple_layer_ids \[1,2\].*one PLE layer/);
  assert.match(refusal({ eos_token_id: [383, 382] })!, /eos_token_id \[383,382\].*383.*382/);
  assert.equal(refusal({ eos_token_id: [383] }), undefined);
  assert.match(refusal({ indexer_n_heads: null })!, /no indexer_n_heads/);
  assert.match(refusal({ norm_topk_prob: false })!, /norm_topk_prob false/);
});

Deno.test("qwen4exp: QSA is written with one warning: llama.cpp attends to the whole context", () => {
  const warnings = familyGgufWarnings({
    architecture: "qwen4exp",
    hf_config: { ...CONFIG, indexer_budget: 2048, indexer_compress_ratio: 64 },
    original_format: "safetensors",
  });
  assert.equal(warnings.length, 1);
  assert.match(warnings[0]!, /QSA attends to 2048 tokens .* from a context of 2112 tokens on/);
});

Deno.test("qwen4exp: the PLE hash constants are transformers' (the fixture's buffers, as the converter wrote them)", async () => {
  const manifest = JSON.parse(
    await Deno.readTextFile(
      new URL("../testdata/families/llama.cpp/qwen4exp-f32.json", import.meta.url),
    ),
  ) as { kv: { key: string; value: unknown }[] };
  const kv = (key: string) => manifest.kv.find((e) => e.key === key)!.value;
  assert.deepEqual(pleHeadVocabSizes(97, 4, 0), kv("qwen4exp.ple.head_vocab_sizes"));
  // gguf-py's reader gives the UINT64 values as exact integers; JSON.parse rounds
  // them to doubles, so the exact values are compared as written by transformers
  // (Qwen4ExpTextNGramEmbedding.layer_multipliers of the fixture).
  const multipliers = pleMultipliers(384, 3, 0, 1234);
  assert.deepEqual(multipliers.map(Number), kv("qwen4exp.ple.layer_multipliers"));
  assert.deepEqual(multipliers, [16304757896083889n, 11435418644576253n, 7275717464594479n]);
  // The second PLE module's heads take the next primes (transformers' global head index).
  assert.deepEqual(pleHeadVocabSizes(97, 4, 1), [109, 113, 127, 131]);
});
