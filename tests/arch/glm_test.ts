/**
 * The GLM families' refusals and tokenizer facts (their GGUFs themselves are
 * judged against llama.cpp's converter and transformers in
 * tests/interop/families_gguf_test.ts, fixtures `glm`, `glm4`, `glm4moe`,
 * `glm4moe-mtp` and `solar-open`).
 */

import assert from "node:assert/strict";
import { GLM } from "../../src/arch/families/glm.ts";
import { GLM4 } from "../../src/arch/families/glm4.ts";
import { GLM4MOE } from "../../src/arch/families/glm4moe.ts";
import { SOLAR_OPEN } from "../../src/arch/families/solar_open.ts";
import { KvWriter } from "../../src/arch/kv.ts";
import { aprMetadataFromHf } from "../../src/formats/safetensors/hf_metadata.ts";

const fixture = async (family: string, file: string) =>
  JSON.parse(
    await Deno.readTextFile(
      new URL(`../testdata/families/hf/${family}/${file}`, import.meta.url),
    ),
  ) as Record<string, unknown>;

const MOE_CONFIG = await fixture("glm4moe", "config.json");
const DENSE_CONFIG = await fixture("glm4", "config.json");

function refusal(config: Record<string, unknown>, change: Record<string, unknown>) {
  const family = config === MOE_CONFIG ? GLM4MOE : GLM4;
  return family.gguf!.unsupported!(
    new KvWriter({ ...config, ...change }, family.ggufArchitecture),
  );
}

Deno.test("glm4, glm4moe: a config llama.cpp would run otherwise than transformers is refused, naming the field", () => {
  for (const config of [DENSE_CONFIG, MOE_CONFIG]) {
    assert.equal(refusal(config, {}), undefined);
    const rope = config["rope_parameters"] as Record<string, unknown>;
    // GLM-4.1V / GLM-4.5V's text models: M-RoPE sections, written (tests/interop/multimodal_test.ts).
    assert.equal(
      refusal(config, { rope_parameters: { ...rope, mrope_section: [2, 2, 2] } }),
      undefined,
    );
    // 24 × 0.3 = 7.2: 7 dims, an odd number.
    assert.match(
      refusal(config, { rope_parameters: { ...rope, partial_rotary_factor: 0.3 } })!,
      /head_dim 24 × partial_rotary_factor 0\.3: 7 rotated dims/,
    );
    // 24 × 0.35 = 8.4: 8 dims, as both truncate.
    assert.equal(
      refusal(config, { rope_parameters: { ...rope, partial_rotary_factor: 0.35 } }),
      undefined,
    );
  }
  // GLM-4.1V's sections without a rotary share: transformers' Glm4vTextConfig rotates the whole
  // head, the converter half; GLM-4.5V's config defaults to half, as the converter.
  const noShare = (config: Record<string, unknown>) => {
    const { partial_rotary_factor: _, ...rope } = config["rope_parameters"] as Record<
      string,
      unknown
    >;
    return {
      rope_parameters: { ...rope, mrope_section: [2, 2, 2] },
      partial_rotary_factor: undefined,
    };
  };
  assert.match(refusal(DENSE_CONFIG, noShare(DENSE_CONFIG))!, /no partial_rotary_factor/);
  assert.equal(refusal(MOE_CONFIG, noShare(MOE_CONFIG)), undefined);
  assert.match(refusal(MOE_CONFIG, { scoring_func: "softmax" })!, /scoring_func "softmax"/);
  assert.equal(refusal(MOE_CONFIG, { scoring_func: "sigmoid" }), undefined);
});

Deno.test("glm4moe: block_count and llama-quantize's layer count include the MTP layers", () => {
  const w = new KvWriter(MOE_CONFIG, "glm4moe");
  GLM4MOE.gguf!.writeKv(w);
  const kv = w.entries();
  assert.equal(kv.get("glm4moe.block_count")?.value, 3);
  assert.equal(kv.get("glm4moe.nextn_predict_layers")?.value, 1);
  assert.equal(kv.get("glm4moe.expert_gating_func")?.value, 2);
  assert.equal(GLM4MOE.gguf!.extraBlocks!(MOE_CONFIG), 1);
  assert.equal(GLM4MOE.gguf!.extraBlocks!({ ...MOE_CONFIG, num_nextn_predict_layers: 0 }), 0);
});

Deno.test("glm4, glm4moe: the pre-tokenizer is named glm4 where llama.cpp splits alike, and the special tokens the converter looks up by name are set", async () => {
  const tokenizer = await fixture("glm4moe", "tokenizer.json");
  const tokenizerConfig = await fixture("glm4moe", "tokenizer_config.json");
  const model = tokenizer["model"] as Record<string, unknown>;
  // GLM-4.5's published tokenizer.json: Llama 3's regex without ignore_merges
  // (the converter names it glm4 by its hash; aprkit would say smaug-bpe).
  const published = { ...tokenizer, model: { ...model, ignore_merges: false } };
  const meta = (config: Record<string, unknown>, tok: Record<string, unknown>) =>
    aprMetadataFromHf({ config, tokenizer: tok, tokenizerConfig });
  for (const config of [DENSE_CONFIG, MOE_CONFIG]) {
    assert.equal(meta(config, published)["tokenizer.pre"], "glm4");
    // The fixture's own: Llama 3's with ignore_merges, which llama.cpp's glm4 does not do.
    assert.equal(meta(config, tokenizer)["tokenizer.pre"], "llama-bpe");
  }
  const llama = { ...DENSE_CONFIG, architectures: ["LlamaForCausalLM"], model_type: "llama" };
  assert.equal(meta(llama, published)["tokenizer.pre"], "smaug-bpe");

  const vocab = tokenizer["added_tokens"] as { id: number; content: string }[];
  const id = (content: string) => vocab.find((t) => t.content === content)!.id;
  // tokenizer_config.json names eos and pad; the classes add the rest in their order.
  assert.deepEqual(meta(MOE_CONFIG, tokenizer)["tokenizer.special_ids"], {
    eos: id("<|endoftext|>"),
    pad: id("<|endoftext|>"),
    bos: id("[gMASK]"),
    eot: id("<|user|>"),
    unk: id("<|endoftext|>"),
    eom: id("<|observation|>"),
  });
  assert.deepEqual(meta(DENSE_CONFIG, tokenizer)["tokenizer.special_ids"], {
    eos: id("<|endoftext|>"),
    pad: id("<|endoftext|>"),
    eot: id("<|user|>"),
    unk: id("<|endoftext|>"),
    bos: id("<|endoftext|>"),
  });
});

const GLM_CONFIG = await fixture("glm", "config.json");

function glmKv(change: Record<string, unknown>) {
  const w = new KvWriter({ ...GLM_CONFIG, ...change }, "chatglm");
  return { refusal: GLM.gguf!.unsupported!(w), kv: (GLM.gguf!.writeKv(w), w.entries()) };
}

Deno.test("glm (GlmForCausalLM → chatglm): what llama.cpp's chatglm cannot run is refused; the epsilon and RoPE base are the config's", () => {
  assert.equal(glmKv({}).refusal, undefined);
  assert.match(
    glmKv({ head_dim: 32 }).refusal!,
    /head_dim 32 with 4 heads of hidden size 64; llama\.cpp's chatglm reads no head size/,
  );
  assert.match(
    glmKv({ rope_parameters: { rope_type: "linear", factor: 2, rope_theta: 1e4 } }).refusal!,
    /rope_type "linear"; llama\.cpp's converter writes no RoPE scaling for chatglm/,
  );
  // The converter writes 1e-5 and 10000 whatever the config says; aprkit the config's.
  const { kv } = glmKv({
    rms_norm_eps: 1.5625e-7,
    rope_parameters: { rope_type: "default", rope_theta: 5e5, partial_rotary_factor: 0.5 },
  });
  assert.equal(kv.get("chatglm.attention.layer_norm_rms_epsilon")!.value, 1.5625e-7);
  assert.equal(kv.get("chatglm.rope.freq_base")!.value, 5e5);
  // Its own keys: context_length is the hidden size (no seq_length), add_bos_token false.
  assert.equal(kv.get("chatglm.context_length")!.value, 64);
  assert.equal(kv.get("chatglm.rope.dimension_count")!.value, 8);
  assert.deepEqual(kv.get("tokenizer.ggml.add_bos_token"), { type: "BOOL", value: false });
});

Deno.test("solar_open: a config without partial_rotary_factor rotates the whole head, as transformers does (the converter assumes GLM's half)", async () => {
  const config = await fixture("solar-open", "config.json");
  const ropeDims = (rope: Record<string, unknown>) => {
    const w = new KvWriter({ ...config, rope_parameters: rope }, "glm4moe");
    SOLAR_OPEN.gguf!.writeKv(w);
    return w.entries().get("glm4moe.rope.dimension_count")!.value;
  };
  assert.equal(ropeDims({ rope_type: "default", rope_theta: 1e6, partial_rotary_factor: 1 }), 16);
  assert.equal(ropeDims({ rope_type: "default", rope_theta: 1e6 }), 16);
  assert.equal(ropeDims({ rope_type: "default", rope_theta: 1e6, partial_rotary_factor: 0.5 }), 8);
  assert.equal(
    SOLAR_OPEN.gguf!.unsupported!(new KvWriter({ ...config, scoring_func: "softmax" }, "glm4moe")),
    'its config.json has scoring_func "softmax"; transformers and llama.cpp score GLM-4.5\'s ' +
      "experts with a sigmoid",
  );
});
