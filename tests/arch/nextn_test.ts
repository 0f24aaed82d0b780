import assert from "node:assert/strict";
import { mtpSourceNames } from "../../src/arch/nextn.ts";

Deno.test("mtpSourceNames() reads the mtp.* module as the blocks after the trunk, its own tensors in the first block or copied into each", () => {
  const h = { num_hidden_layers: 4 };
  assert.equal(
    mtpSourceNames("mtp.layers.1.self_attn.q_proj.weight", h, 2, "every"),
    "model.layers.5.self_attn.q_proj.weight",
  );
  assert.equal(mtpSourceNames("mtp.fc.weight", h, 2, "first"), "model.layers.4.eh_proj.weight");
  assert.deepEqual(mtpSourceNames("mtp.fc.weight", h, 2, "every"), [
    "model.layers.4.eh_proj.weight",
    "model.layers.5.eh_proj.weight",
  ]);
  assert.deepEqual(mtpSourceNames("model.mtp.norm.weight", h, 2, "every"), [
    "model.layers.4.shared_head.norm.weight",
    "model.layers.5.shared_head.norm.weight",
  ]);
  // Without MTP layers counted, or outside the module, names are kept.
  assert.equal(mtpSourceNames("mtp.fc.weight", h, 0, "every"), "mtp.fc.weight");
  assert.equal(mtpSourceNames("model.norm.weight", h, 2, "every"), "model.norm.weight");
});
