/**
 * SmolLM3's refusals: what llama.cpp's `smollm3` reads no key for (which
 * layers have no RoPE, a sliding window, biases, RoPE frequency factors). Its
 * GGUF itself is judged against llama.cpp's converter and transformers in
 * tests/interop/families_gguf_test.ts (fixture `smollm3`).
 */

import assert from "node:assert/strict";
import { SMOLLM3 } from "../../src/arch/families/smollm3.ts";
import { KvWriter } from "../../src/arch/kv.ts";
import { copyCheckpoint } from "../interop/_multimodal.ts";
import { runApr, withTempDir } from "../cli/_run_apr.ts";

const FIXTURE = new URL("../testdata/families/hf/smollm3", import.meta.url).pathname;
const CONFIG = JSON.parse(await Deno.readTextFile(`${FIXTURE}/config.json`)) as Record<
  string,
  unknown
>;

function refusal(change: Record<string, unknown>): string | undefined {
  return SMOLLM3.gguf!.unsupported!(new KvWriter({ ...CONFIG, ...change }, "smollm3"));
}

Deno.test("smollm3: a config llama.cpp would run otherwise than transformers is refused, naming the field", () => {
  assert.equal(refusal({}), undefined);
  // Without the list, transformers makes it from the interval (4, as llama.cpp assumes).
  assert.equal(refusal({ no_rope_layers: undefined }), undefined);
  assert.match(
    refusal({ no_rope_layers: undefined, no_rope_layer_interval: 2 })!,
    /no_rope_layers \[1,0,1,0\].*every 4th layer/,
  );
  assert.match(refusal({ no_rope_layers: [1, 1, 1, 1] })!, /no_rope_layers \[1,1,1,1\]/);
  assert.match(refusal({ no_rope_layers: [1, 1, 1] })!, /no_rope_layers \[1,1,1\]/);
  assert.match(
    refusal({
      layer_types: ["full_attention", "full_attention", "full_attention", "sliding_attention"],
    })!,
    /sliding_attention/,
  );
  assert.match(
    refusal({ layer_types: undefined, use_sliding_window: true, sliding_window: 16 })!,
    /use_sliding_window/,
  );
  assert.match(refusal({ attention_bias: true })!, /attention_bias true/);
  assert.match(refusal({ mlp_bias: true })!, /mlp_bias true/);
  assert.match(
    refusal({ rope_parameters: { rope_type: "llama3", rope_theta: 1e4, factor: 8 } })!,
    /rope_type llama3/,
  );
});

Deno.test("smollm3: apr convert refuses such a config in one line, exit 2, no output", async () => {
  await withTempDir(async (dir) => {
    const source = await copyCheckpoint(FIXTURE, `${dir}/nope`, (c) => {
      c["no_rope_layers"] = [1, 1, 0, 1];
    });
    const out = `${dir}/m.gguf`;
    const run = await runApr(["convert", source, "-o", out]);
    assert.equal(run.code, 2, run.stderr);
    assert.equal(run.stderr.trim().split("\n").length, 1, run.stderr);
    assert.match(run.stderr, /no_rope_layers \[1,1,0,1\]/);
    await assert.rejects(Deno.stat(out), Deno.errors.NotFound);
    // APR keeps the config as it is.
    const apr = await runApr(["convert", source, "-o", `${dir}/m.apr`]);
    assert.equal(apr.code, 0, apr.stderr);
  });
});
