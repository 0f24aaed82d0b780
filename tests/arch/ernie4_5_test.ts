/**
 * The ERNIE 4.5 families' refusals, dropped multi-token-prediction tensors
 * and router-bias name (their GGUF itself is judged against llama.cpp's
 * converter and transformers in tests/interop/families_gguf_test.ts,
 * fixtures `ernie4_5` and `ernie4_5-moe`).
 */

import assert from "node:assert/strict";
import { ERNIE4_5 } from "../../src/arch/families/ernie4_5.ts";
import { ERNIE4_5_MOE } from "../../src/arch/families/ernie4_5_moe.ts";
import { KvWriter } from "../../src/arch/kv.ts";
import { hfToGgufName } from "../../src/arch/names.ts";
import { convertModel } from "../../src/pipeline/convert_model.ts";
import { withTempDir } from "../cli/_run_apr.ts";
import { readGgufFile } from "../interop/_files.ts";

async function config(fixture: string): Promise<Record<string, unknown>> {
  return JSON.parse(
    await Deno.readTextFile(
      new URL(`../testdata/families/hf/${fixture}/config.json`, import.meta.url),
    ),
  );
}

const DENSE = await config("ernie4_5");
const MOE = await config("ernie4_5-moe");

function moeRefusal(change: Record<string, unknown>): string | undefined {
  return ERNIE4_5_MOE.gguf!.unsupported!(new KvWriter({ ...MOE, ...change }, "ernie4_5-moe"));
}

Deno.test("ernie4_5: use_bias, whose feed-forward biases llama.cpp's graph does not add, is refused", () => {
  const refusal = (change: Record<string, unknown>) =>
    ERNIE4_5.gguf!.unsupported!(new KvWriter({ ...DENSE, ...change }, "ernie4_5"));
  assert.equal(refusal({}), undefined);
  assert.match(refusal({ use_bias: true })!, /use_bias true/);
  assert.match(moeRefusal({ use_bias: true })!, /use_bias true/);
});

Deno.test("ernie4_5-moe: a config llama.cpp would run otherwise than transformers is refused, naming the field", () => {
  assert.equal(moeRefusal({}), undefined);
  assert.equal(moeRefusal({ moe_layer_end_index: -1 }), undefined);
  assert.match(moeRefusal({ moe_layer_interval: 2 })!, /moe_layer_interval 2/);
  assert.match(moeRefusal({ moe_layer_end_index: 0 })!, /moe_layer_end_index 0/);
  // 21B-A3B: 12288 // 4 = 1536 × 2; here the shared experts would be 96 wide, the converter's 64.
  assert.match(moeRefusal({ moe_num_shared_experts: 3 })!, /= 96 wide.*= 64/);
  assert.equal(moeRefusal({ moe_num_shared_experts: 0 }), undefined);
});

Deno.test("ernie4_5-moe: multi-token-prediction tensors are dropped, as the converter drops them", () => {
  const w = new KvWriter(MOE, "ernie4_5-moe");
  const drops = ERNIE4_5_MOE.gguf!.drops!;
  const mtp = [
    "model.mtp_block.0.self_attn.q_proj.weight",
    "model.mtp_emb_norm.0.weight",
    "model.mtp_hidden_norm.0.weight",
    "model.mtp_linear_proj.0.weight",
  ];
  for (const name of mtp) assert.equal(drops(name, w), true, name);
  assert.equal(drops("model.layers.1.mlp.gate.weight", w), false);
  assert.equal(drops("model.norm.weight", w), false);
});

Deno.test("ernie4_5-moe: the router's e_score_correction_bias is exp_probs_b.bias, and back", () => {
  const hf = "model.layers.3.mlp.moe_statics.e_score_correction_bias";
  const gguf = ERNIE4_5_MOE.gguf!;
  const read = gguf.hfName!(hf);
  assert.equal(hfToGgufName(read, ERNIE4_5_MOE), "blk.3.exp_probs_b.bias");
  assert.equal(gguf.hfNameBack!(read), hf);
  assert.equal(gguf.hfName!("model.layers.3.mlp.gate.weight"), "model.layers.3.mlp.gate.weight");
});

Deno.test("ernie4_5: add_space_prefix follows tokenizer_config.json's add_prefix_space whenever it is there (null: false), as Ernie4_5Model.set_vocab", async (t) => {
  // The fixture's own add_prefix_space null is judged by families_gguf_test.ts (= the converter).
  const fixture = new URL("../testdata/families/hf/ernie4_5/", import.meta.url);
  await withTempDir(async (dir) => {
    const cases: [string, unknown, boolean | undefined][] = [
      ["true", true, true],
      ["false", false, false],
      ["null", null, false],
      ["absent", undefined, undefined],
    ];
    for (const [label, value, want] of cases) {
      await t.step(label, async () => {
        const model = `${dir}/${label}`;
        await Deno.mkdir(model);
        for await (const e of Deno.readDir(fixture)) {
          await Deno.copyFile(new URL(e.name, fixture), `${model}/${e.name}`);
        }
        const config = JSON.parse(await Deno.readTextFile(`${model}/tokenizer_config.json`));
        config["add_prefix_space"] = value;
        await Deno.writeTextFile(`${model}/tokenizer_config.json`, JSON.stringify(config));
        await convertModel(model, `${model}.gguf`);
        const { kv } = await readGgufFile(`${model}.gguf`);
        assert.equal(kv.get("tokenizer.ggml.add_space_prefix")?.value, want);
      });
    }
  });
});

Deno.test("ernie4_5: an `ernie.` prefix is read as `model.`, as the converter's filter_tensors", () => {
  for (const family of [ERNIE4_5, ERNIE4_5_MOE]) {
    const read = (name: string) => hfToGgufName(family.gguf!.hfName!(name), family);
    assert.equal(read("ernie.layers.0.self_attn.q_proj.weight"), "blk.0.attn_q.weight");
    assert.equal(read("ernie.embed_tokens.weight"), "token_embd.weight");
    // PaddlePaddle's fused projections, which the converter splits: no GGUF name (refused).
    const fused = "ernie.layers.0.self_attn.qkv_proj.weight";
    assert.equal(read(fused), family.gguf!.hfName!(fused));
  }
  const bias = "ernie.layers.1.mlp.moe_statics.e_score_correction_bias";
  assert.equal(
    hfToGgufName(ERNIE4_5_MOE.gguf!.hfName!(bias), ERNIE4_5_MOE),
    "blk.1.exp_probs_b.bias",
  );
});
