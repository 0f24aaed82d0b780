import assert from "node:assert/strict";
import { ModelFormatError } from "../../../src/errors.ts";
import {
  APR_MAX_METADATA_SIZE,
  encodeAprMetadata,
  parseAprMetadata,
} from "../../../src/formats/apr/metadata.ts";
import { GOLDEN_METADATA } from "./_fixtures.ts";

const text = (b: Uint8Array): string => new TextDecoder().decode(b);
const bytes = (s: string): Uint8Array => new TextEncoder().encode(s);

Deno.test("encodeAprMetadata() writes the golden vector's metadata", () => {
  assert.equal(
    text(encodeAprMetadata(GOLDEN_METADATA)),
    '{"model_type":"linear_regression","name":"golden-v2","license":null,"data_source":null,"data_license":null,"version":"0.0.0-golden","created_at":"1700000000","total_size":0,"param_count":8}',
  );
});

Deno.test("encodeAprMetadata() orders known keys, then custom keys in insertion order", () => {
  const json = text(encodeAprMetadata({
    "tokenizer.vocabulary": ["a", "b"],
    num_layers: 2,
    architecture: "llama",
    model_type: "llama",
    license: "mit",
    description: null,
    quantization: { quant_type: "q4_k", bits: 4, block_size: null, symmetric: false },
    "tokenizer.merges": ["a b"],
  }));
  assert.equal(
    json,
    '{"model_type":"llama","license":"mit","data_source":null,"data_license":null,"total_size":0,"param_count":0,' +
      '"quantization":{"quant_type":"q4_k","bits":4,"block_size":null,"symmetric":false},' +
      '"architecture":"llama","num_layers":2,"tokenizer.vocabulary":["a","b"],"tokenizer.merges":["a b"]}',
  );
});

Deno.test("encodeAprMetadata() writes exactly one spelling per alias group", async (t) => {
  const cases: [string, Record<string, unknown>, string][] = [
    ["alias fills canonical", { n_embd: 64 }, '"hidden_size":64'],
    ["canonical wins over alias", { hidden_dim: 32, hidden_size: 64 }, '"hidden_size":64'],
    ["null canonical takes alias", { hidden_size: null, d_model: 48 }, '"hidden_size":48'],
    ["alias before null canonical", { num_hidden_layers: 3, num_layers: null }, '"num_layers":3'],
    ["null alias dropped", { n_layer: null }, ""],
  ];
  for (const [label, input, expected] of cases) {
    await t.step(label, () => {
      const json = text(encodeAprMetadata(input));
      for (
        const alias of [
          "hidden_dim",
          "d_model",
          "n_embd",
          "num_hidden_layers",
          "n_layer",
          "n_layers",
        ]
      ) {
        assert.ok(!json.includes(`"${alias}"`), json);
      }
      if (expected) assert.ok(json.includes(expected), json);
      else assert.ok(!json.includes("num_layers"), json);
    });
  }
});

Deno.test("encodeAprMetadata() rejects known fields of the wrong type", () => {
  assert.throws(
    () => encodeAprMetadata({ hidden_size: 1.5 }),
    (e) => e instanceof TypeError && /"hidden_size" must be a non-negative integer/.test(e.message),
  );
  assert.throws(
    () => encodeAprMetadata({ custom: 10n }),
    (e) => e instanceof TypeError && /custom key "custom" is not JSON/.test(e.message),
  );
});

Deno.test("parseAprMetadata() accepts both null styles, aliases and unknown keys", () => {
  const m = parseAprMetadata(
    bytes('{"model_type":"x","name":null,"n_head":4,"sharding":null,"foo":{"a":1}}'),
  );
  assert.deepEqual(m, { model_type: "x", name: null, num_heads: 4, sharding: null, foo: { a: 1 } });
});

Deno.test("parseAprMetadata() rejects bad metadata", async (t) => {
  const cases: [string, string, string][] = [
    ["not JSON", "{", "metadata is not valid JSON"],
    ["not an object", "[1]", "metadata is not a JSON object"],
    ["bad string", '{"name":3}', 'metadata field "name" must be a string or null'],
    ["bad integer", '{"total_size":-1}', '"total_size" must be a non-negative integer'],
    ["bad alias", '{"n_vocab":"x"}', '"vocab_size" must be a non-negative integer'],
    ["bad quantization", '{"quantization":{"bits":4}}', "needs a string quant_type"],
  ];
  for (const [label, json, message] of cases) {
    await t.step(label, () => {
      assert.throws(() => parseAprMetadata(bytes(json), "m.apr", 64), (e) => {
        assert.ok(e instanceof ModelFormatError);
        assert.ok(e.message.includes(message), e.message);
        assert.equal(e.offset, 64);
        return true;
      });
    });
  }
  await t.step("invalid UTF-8", () => {
    assert.throws(
      () => parseAprMetadata(new Uint8Array([0x7b, 0xff, 0x7d])),
      (e) => e instanceof ModelFormatError && e.message.includes("not valid JSON"),
    );
  });
});

Deno.test("encodeAprMetadata() refuses metadata past the limit readers accept, before V8's string limit", async (t) => {
  // 24 MB of control characters: 144 MB as JSON escapes, past the 128 MiB limit.
  const template = "\u0001".repeat(24_000_000);
  await t.step("a known key", () => {
    assert.throws(
      () => encodeAprMetadata({ chat_template: template }),
      (e: Error) =>
        e instanceof RangeError && /^Cannot encode APR metadata: the JSON \(/.test(e.message),
    );
  });
  await t.step("a custom key", () => {
    assert.throws(
      () => encodeAprMetadata({ custom: { text: template } }),
      (e: Error) =>
        e instanceof RangeError &&
        e.message.endsWith(`is over the ${APR_MAX_METADATA_SIZE}-byte limit APR readers accept`),
    );
  });
  await t.step("just under the limit is written", () => {
    const bytes = encodeAprMetadata({ chat_template: "x".repeat(1_000_000) });
    assert.ok(bytes.length > 1_000_000);
  });
});
