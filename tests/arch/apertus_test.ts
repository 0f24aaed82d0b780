/**
 * Apertus's refusal: llama.cpp's `apertus` always applies xIELU. Its GGUF
 * (the xIELU scalars as `xielu.*` keys) is judged against llama.cpp's
 * converter and transformers in tests/interop/families_gguf_test.ts (fixture
 * `apertus`); the keys' order and the missing-scalar refusal in
 * tests/pipeline/gguf_layout_test.ts.
 */

import assert from "node:assert/strict";
import { fixtureConfig, refusalOf } from "./_fixture_refusal.ts";

const CONFIG = await fixtureConfig("apertus");

Deno.test("apertus: a hidden_act other than xielu is refused for GGUF, naming llama.cpp's", () => {
  assert.equal(refusalOf("apertus", CONFIG, {}), undefined);
  assert.match(
    refusalOf("apertus", CONFIG, { hidden_act: "silu" })!,
    /hidden_act "silu"; llama\.cpp's apertus reads no key for it and computes as with "xielu"/,
  );
});
