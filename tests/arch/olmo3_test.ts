/**
 * OLMo 3's refusals: what llama.cpp's `olmo2` (the GGUF architecture its
 * converter writes for `Olmo3ForCausalLM`) reads no key or tensor for. Its
 * GGUF itself is judged against llama.cpp's converter and transformers in
 * tests/interop/families_gguf_test.ts (fixture `olmo3`).
 */

import assert from "node:assert/strict";
import { OLMO2 } from "../../src/arch/families/olmo2.ts";
import { OLMO3 } from "../../src/arch/families/olmo3.ts";
import { familyOfGguf } from "../../src/arch/registry.ts";
import { KvWriter } from "../../src/arch/kv.ts";

const CONFIG = JSON.parse(
  await Deno.readTextFile(new URL("../testdata/families/hf/olmo3/config.json", import.meta.url)),
) as Record<string, unknown>;
const ROPE = CONFIG["rope_parameters"] as Record<string, Record<string, unknown>>;

function refusal(change: Record<string, unknown>): string | undefined {
  return OLMO3.gguf!.unsupported!(new KvWriter({ ...CONFIG, ...change }, "olmo2"));
}

Deno.test("olmo3: a config llama.cpp would not run as transformers does is refused, naming the field", () => {
  assert.equal(refusal({}), undefined);
  // transformers 4's form: one rope_scaling (transformers 5 gives it to full attention only).
  assert.equal(
    refusal({
      rope_parameters: undefined,
      rope_theta: 10000,
      rope_scaling: { rope_type: "yarn", factor: 8, original_max_position_embeddings: 32 },
    }),
    undefined,
  );
  assert.match(
    refusal({
      rope_parameters: { ...ROPE, sliding_attention: { rope_type: "default", rope_theta: 5e5 } },
    })!,
    /rope_theta 500000 for sliding_attention and 10000 for full_attention/,
  );
  assert.match(
    refusal({
      rope_parameters: {
        ...ROPE,
        sliding_attention: { rope_type: "linear", factor: 2, rope_theta: 1e4 },
      },
    })!,
    /rope_type "linear" for sliding_attention/,
  );
  assert.match(refusal({ attention_bias: true })!, /attention_bias true/);
  assert.match(refusal({ tie_word_embeddings: true })!, /tie_word_embeddings true/);
});

Deno.test("olmo3: written as GGUF olmo2, which reads back as OLMo 2 (the file names no OLMo 3)", () => {
  assert.equal(OLMO3.ggufArchitecture, "olmo2");
  assert.equal(familyOfGguf("olmo2", false)?.name, "olmo2");
});

Deno.test("olmo2: tied embeddings and attention biases are refused for GGUF (llama.cpp's olmo2 requires output.weight and loads no biases)", () => {
  const olmo2 = JSON.parse(
    Deno.readTextFileSync(new URL("../testdata/families/hf/olmo2/config.json", import.meta.url)),
  ) as Record<string, unknown>;
  const refuse = (change: Record<string, unknown>) =>
    OLMO2.gguf!.unsupported!(new KvWriter({ ...olmo2, ...change }, "olmo2"));
  assert.equal(refuse({}), undefined);
  assert.match(
    refuse({ tie_word_embeddings: true })!,
    /tie_word_embeddings true; llama\.cpp's olmo2/,
  );
  assert.match(refuse({ attention_bias: true })!, /attention_bias true/);
});
