import assert from "node:assert/strict";
import { familyGgufPlan, familyGgufRefusal } from "../../src/arch/gguf_plan.ts";
import { ggufToHfName, hfToGgufName } from "../../src/arch/names.ts";

const CONFIG = {
  architectures: ["BertForSequenceClassification"],
  model_type: "bert",
  num_hidden_layers: 2,
  hidden_size: 32,
  intermediate_size: 64,
  num_attention_heads: 4,
  max_position_embeddings: 128,
  layer_norm_eps: 1e-12,
};

function keys(config: Record<string, unknown>, pooling?: string): Map<string, unknown> {
  const plan = familyGgufPlan({
    architecture: "bert",
    hf_config: { ...CONFIG, ...config },
    ...(pooling !== undefined ? { "embedding.pooling": pooling } : {}),
  });
  return new Map([...plan!.keys].map(([k, e]) => [k, e.value]));
}

Deno.test("bert family: classifier labels as the converter keeps them (AutoConfig's two dummy labels dropped, by id)", () => {
  assert.equal(
    keys({ id2label: { 0: "LABEL_0", 1: "LABEL_1" } }).has("bert.classifier.output_labels"),
    false,
  );
  assert.deepEqual(keys({ id2label: { 0: "LABEL_0" } }).get("bert.classifier.output_labels"), [
    "LABEL_0",
  ]);
  const many = Object.fromEntries(Array.from({ length: 11 }, (_, i) => [String(i), `l${i}`]));
  assert.deepEqual(
    keys({ id2label: many }).get("bert.classifier.output_labels"),
    Array.from({ length: 11 }, (_, i) => `l${i}`),
  );
});

Deno.test("bert family: pooling_type from the sentence-transformers mode; a mode llama.cpp has not is refused", () => {
  assert.equal(keys({}, "mean").get("bert.pooling_type"), 1);
  assert.equal(keys({}, "cls").get("bert.pooling_type"), 2);
  assert.equal(keys({}, "lasttoken").get("bert.pooling_type"), 3);
  assert.equal(keys({}).has("bert.pooling_type"), false);
  assert.equal(keys({}).get("bert.attention.causal"), false);
  assert.throws(() => keys({}, "weightedmean"), RangeError);
});

Deno.test("bert family: encoder.layer.N blocks and the embeddings map both ways", () => {
  const pairs = [
    ["encoder.layer.1.attention.self.query.weight", "blk.1.attn_q.weight"],
    ["encoder.layer.0.attention.output.LayerNorm.bias", "blk.0.attn_output_norm.bias"],
    ["encoder.layer.0.output.dense.weight", "blk.0.ffn_down.weight"],
    ["embeddings.token_type_embeddings.weight", "token_types.weight"],
    ["embeddings.LayerNorm.weight", "token_embd_norm.weight"],
  ];
  for (const [hf, gguf] of pairs) {
    assert.equal(hfToGgufName(hf!, "bert"), gguf);
    assert.equal(ggufToHfName(gguf!, "bert"), hf);
  }
});

Deno.test("bert family: the cross-encoders llama.cpp ranks otherwise than transformers (BERT's, DistilBERT's) are refused for GGUF, the embedders not", () => {
  const refusal = (config: Record<string, unknown>) =>
    familyGgufRefusal({ architecture: config["model_type"] as string, hf_config: config });
  assert.match(
    refusal(CONFIG) ?? "",
    /\[CLS\] q \[SEP\] \[SEP\] d \[SEP\] with every token of type 0/,
  );
  assert.equal(refusal({ ...CONFIG, architectures: ["BertModel"] }), undefined);
  const distil = { model_type: "distilbert", dim: 32, n_layers: 2, n_heads: 4, hidden_dim: 64 };
  assert.match(
    refusal({
      ...distil,
      model_type: "distilbert",
      architectures: ["DistilBertForSequenceClassification"],
    }) ??
      "",
    /tanh after pre_classifier/,
  );
  assert.equal(refusal({ ...distil, architectures: ["DistilBertModel"] }), undefined);
});
