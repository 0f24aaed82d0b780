import assert from "node:assert/strict";
import {
  blockCountOf,
  firstNextnBlock,
  ggufMtpHparams,
  mtpHfName,
  mtpLayerHfName,
  mtpSourceNames,
  trunkLayers,
} from "../../src/arch/nextn.ts";

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

Deno.test("mtpHfName() and mtpLayerHfName() read the blocks from the first with nextn.* tensors back as the checkpoint's MTP module", () => {
  const gguf = new Set([
    "blk.3.attn_q.weight",
    "blk.5.nextn.eh_proj.weight",
    "blk.4.nextn.eh_proj.weight",
  ]);
  assert.equal(firstNextnBlock(gguf), 4);
  assert.equal(mtpHfName("model.layers.5.eh_proj.weight", gguf), "mtp.fc.weight");
  assert.equal(mtpHfName("model.layers.4.shared_head.norm.weight", gguf), "mtp.norm.weight");
  assert.equal(
    mtpHfName("model.layers.5.self_attn.q_proj.weight", gguf),
    "mtp.layers.1.self_attn.q_proj.weight",
  );
  // The trunk, and a GGUF without MTP blocks, keep their names.
  assert.equal(mtpHfName("model.layers.3.eh_proj.weight", gguf), "model.layers.3.eh_proj.weight");
  assert.equal(
    mtpHfName("model.layers.5.eh_proj.weight", new Set(["blk.5.attn_q.weight"])),
    "model.layers.5.eh_proj.weight",
  );
  assert.equal(
    mtpLayerHfName("model.layers.4.eh_proj.weight", gguf, "model.mtp.layers"),
    "model.mtp.layers.0.eh_proj.weight",
  );
});

Deno.test("trunkLayers(), blockCountOf() and ggufMtpHparams() count a GGUF's MTP blocks out of the trunk and back", () => {
  assert.equal(trunkLayers(6, 2), 4);
  assert.equal(trunkLayers(6, 0), 6);
  // A drafter all of MTP layers (Gemma 4's assistants) keeps its count.
  assert.equal(trunkLayers(4, 4), 4);
  const gguf_metadata = {
    "general.architecture": { type: "STRING", value: "exaone-moe" },
    "exaone-moe.block_count": { type: "UINT32", value: 6 },
    "exaone-moe.nextn_predict_layers": { type: "UINT32", value: 2 },
  };
  assert.equal(blockCountOf({ num_layers: 4, gguf_metadata }), 6);
  // num_layers as the GGUF has it (--keep-names), or edited to another count, is written as it is.
  assert.equal(blockCountOf({ num_layers: 6, gguf_metadata }), 6);
  assert.equal(blockCountOf({ num_layers: 3, gguf_metadata }), 3);
  assert.equal(blockCountOf({ num_layers: 4 }), 4);
  assert.deepEqual(ggufMtpHparams({ gguf_metadata }), {
    num_hidden_layers: 4,
    num_nextn_predict_layers: 2,
    mtp_num_hidden_layers: 2,
  });
  assert.deepEqual(ggufMtpHparams({}), {});
});
