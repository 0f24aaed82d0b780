/**
 * Issue 35 item 1: gguf-py's name heuristics, ported. For each name and
 * parameter count of tests/testdata/model_cards/name_components.json (gguf-py's
 * own `get_model_id_components` and `id_to_title`, recorded by
 * make_model_cards.py) aprkit must find the same basename, size label,
 * finetune, version and title; and the size label gguf-py counts from the
 * tensors (`NxM` with stacked experts).
 */

import assert from "node:assert/strict";
import {
  countsSizeLabel,
  generalMetadata,
  generalPairs,
  idToTitle,
  modelIdComponents,
  parameterCounts,
} from "../../src/arch/hf_model_card.ts";

const reference = JSON.parse(
  await Deno.readTextFile(
    new URL("../testdata/model_cards/name_components.json", import.meta.url),
  ),
) as {
  id: string;
  total_params: number;
  full_name: string | null;
  organization: string | null;
  basename: string | null;
  finetune: string | null;
  version: string | null;
  size_label: string | null;
  title: string | null;
}[];

Deno.test("modelIdComponents() and idToTitle() give gguf-py's components for every name and size", () => {
  assert.ok(reference.length > 300);
  const differing: string[] = [];
  for (const r of reference) {
    const c = modelIdComponents(r.id, r.total_params);
    const got = {
      full_name: c.fullName ?? null,
      organization: c.organization ?? null,
      basename: c.basename ?? null,
      finetune: c.finetune ?? null,
      version: c.version ?? null,
      size_label: c.sizeLabel ?? null,
      title: c.fullName === undefined ? null : idToTitle(c.fullName),
    };
    const { id: _, total_params: __, ...want } = r;
    if (JSON.stringify(got) !== JSON.stringify(want)) {
      differing.push(
        `${r.id} @ ${r.total_params}: ${JSON.stringify(got)} ≠ ${JSON.stringify(want)}`,
      );
    }
  }
  assert.deepEqual(differing, [], differing.join("\n"));
});

Deno.test("the size label is counted from the written tensors, NxM with stacked experts", () => {
  const dense = parameterCounts([
    { name: "token_embd.weight", shape: [32000, 4096] },
    { name: "blk.0.attn_q.weight", shape: [4096, 4096] },
  ]);
  assert.equal(countsSizeLabel(dense), "148M");
  const moe = parameterCounts([
    { name: "token_embd.weight", shape: [1000, 64] },
    { name: "blk.0.ffn_gate_exps.weight", shape: [8, 128, 64] },
    { name: "blk.0.ffn_up_exps.weight", shape: [8, 128, 64] },
    { name: "blk.0.ffn_down_exps.weight", shape: [8, 64, 128] },
    { name: "blk.0.ffn_gate_exps.bias", shape: [8, 128] },
  ]);
  // 64,000 + the 2-D bias's 1,024 shared, plus one expert's 3 × 8,192
  // (gguf.size_label(0, 65024, 24576, 8) is "8x90K").
  assert.equal(moe.expertCount, 8);
  assert.equal(countsSizeLabel(moe), "8x90K");
  // A size in the model's name wins, when it is near the count.
  const named = generalMetadata({
    folder: "Mixtral-8x7B-v0.1",
    counts: { total: 46_702_792_704, shared: 1.6e9, expert: 5.6e9, expertCount: 8 },
  });
  assert.equal(named.size_label, "8x7B");
  assert.equal(named.name, "Mixtral 8x7B v0.1");
});

Deno.test("generalPairs() leaves out what the converter cannot write, instead of stopping", () => {
  const pairs = generalPairs({
    name: "M",
    version: 1.5, // a YAML float: gguf-py raises
    license: ["mit", 3],
    tags: ["a", 1],
    languages: [],
    base_models: [{ name: "B", version: 2 }],
  });
  assert.deepEqual(pairs, [
    ["general.name", { type: "STRING", value: "M" }],
    ["general.base_model.count", { type: "UINT32", value: 1 }],
    ["general.base_model.0.name", { type: "STRING", value: "B" }],
  ]);
});
