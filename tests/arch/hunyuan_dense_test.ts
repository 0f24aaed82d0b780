/**
 * Hunyuan dense: its refusals, its NTK-alpha RoPE keys and the EOS/EOT ids its
 * converter takes from the configs. Its GGUF itself is judged against
 * llama.cpp's converter and transformers in tests/interop/families_gguf_test.ts
 * (fixture `hunyuan-dense`).
 */

import assert from "node:assert/strict";
import { HUNYUAN_DENSE } from "../../src/arch/families/hunyuan_dense.ts";
import { KvWriter } from "../../src/arch/kv.ts";
import { aprMetadataFromHf } from "../../src/formats/safetensors/hf_metadata.ts";
import { fixtureConfig, refusalOf } from "./_fixture_refusal.ts";

const CONFIG = await fixtureConfig("hunyuan-dense");
const refusal = (change: Record<string, unknown>) => refusalOf("hunyuan-dense", CONFIG, change);

Deno.test("hunyuan-dense: a config llama.cpp would not run as transformers does is refused, naming the field", () => {
  assert.equal(refusal({}), undefined);
  assert.match(refusal({ attention_bias: true })!, /attention_bias true/);
  assert.match(
    refusal({ rope_parameters: { rope_type: "dynamic", rope_theta: 1e4, factor: 2 } })!,
    /"dynamic" without alpha/,
  );
  assert.match(
    refusal({ rope_parameters: { rope_type: "dynamic", rope_theta: 5e5, alpha: 1000 } })!,
    /rope_theta 500000 and max_position_embeddings 32768/,
  );
  assert.match(
    refusal({ rope_parameters: { rope_type: "linear", rope_theta: 1e4, factor: 2 } })!,
    /rope_type "linear"/,
  );
  // Other families still refuse dynamic RoPE.
  assert.match(
    refusalOf("llama", CONFIG, { rope_parameters: { rope_type: "dynamic", rope_theta: 1e4 } })!,
    /rope_scaling type "dynamic"; llama\.cpp has no such RoPE scaling/,
  );
});

Deno.test("hunyuan-dense: dynamic RoPE with alpha is written as the converter writes it", () => {
  const w = new KvWriter(CONFIG, "hunyuan-dense");
  HUNYUAN_DENSE.gguf!.writeKv(w);
  const kv = w.entries();
  assert.equal(kv.get("hunyuan-dense.rope.freq_base")!.value, 10000 * 1000 ** (16 / 14));
  assert.equal(kv.get("hunyuan-dense.rope.scaling.type")!.value, "none");
  assert.equal(kv.get("hunyuan-dense.context_length")!.value, 262144);
  assert.equal(kv.get("hunyuan-dense.rope.scaling.original_context_length")!.value, 262144);
});

Deno.test("hunyuan-dense: eod_token_id is the EOS and a generation config's first EOS the EOT, over the tokenizer files'", async () => {
  const tokenizer = JSON.parse(
    await Deno.readTextFile(
      new URL("../testdata/families/hf/hunyuan-dense/tokenizer.json", import.meta.url),
    ),
  );
  const m = aprMetadataFromHf({
    config: { ...CONFIG, eod_token_id: 7 },
    tokenizer,
    generationConfig: { eos_token_id: [5, 7] },
  });
  const ids = m["tokenizer.special_ids"] as Record<string, number>;
  assert.equal(ids["eos"], 7);
  assert.equal(ids["eot"], 5);
});
