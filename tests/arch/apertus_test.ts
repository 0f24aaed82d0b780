/**
 * Apertus's refusal: llama.cpp's `apertus` always applies xIELU. Its GGUF
 * (the xIELU scalars as `xielu.*` keys) is judged against llama.cpp's
 * converter and transformers in tests/interop/families_gguf_test.ts (fixture
 * `apertus`), read back in families_reverse_test.ts; the keys' order and the missing-scalar refusal in
 * tests/pipeline/gguf_layout_test.ts.
 */

import assert from "node:assert/strict";
import { FAMILIES } from "../../src/arch/registry.ts";
import { fixtureConfig, refusalOf } from "./_fixture_refusal.ts";

const CONFIG = await fixtureConfig("apertus");

Deno.test("apertus: a hidden_act other than xielu is refused for GGUF, naming llama.cpp's", () => {
  assert.equal(refusalOf("apertus", CONFIG, {}), undefined);
  assert.match(
    refusalOf("apertus", CONFIG, { hidden_act: "silu" })!,
    /hidden_act "silu"; llama\.cpp's apertus reads no key for it and computes as with "xielu"/,
  );
});

Deno.test("apertus: the xIELU scalars are made again from a GGUF's keys, a single number standing for every layer", () => {
  const back = FAMILIES.get("apertus")!.gguf!.tensorKeys!.back;
  const keys: Record<string, unknown> = {
    "apertus.block_count": 2,
    "xielu.alpha_n": [1, 2],
    "xielu.alpha_p": [3, 4],
    "xielu.beta": 0.5,
    "xielu.eps": [-1e-6, -1e-6],
  };
  const tensors = back((key) => keys[key]);
  assert.deepEqual(tensors.slice(0, 4), [
    { name: "model.layers.0.mlp.act_fn.alpha_n", shape: [1], values: [1] },
    { name: "model.layers.0.mlp.act_fn.alpha_p", shape: [1], values: [3] },
    { name: "model.layers.0.mlp.act_fn.beta", shape: [], values: [0.5] },
    { name: "model.layers.0.mlp.act_fn.eps", shape: [], values: [-1e-6] },
  ]);
  assert.deepEqual(tensors[5], {
    name: "model.layers.1.mlp.act_fn.alpha_p",
    shape: [1],
    values: [4],
  });
  assert.throws(
    () => back((key) => key === "xielu.beta" ? [0.5] : keys[key]),
    /xielu\.beta is not 2 numbers/,
  );
  assert.throws(() => back(() => undefined), /no apertus\.block_count/);
});
