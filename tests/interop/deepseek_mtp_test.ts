/**
 * DeepSeek-V3's published checkpoints carry a multi-token-prediction layer
 * past `num_hidden_layers` (`model.layers.61.*`: `eh_proj`, `enorm`, `hnorm`,
 * `shared_head`, and a whole decoder block), which transformers ignores on
 * load and llama.cpp's converter drops (`skip_mtp`). The `deepseek3` fixture
 * with such a layer added must give the converter's file of the fixture
 * without it, byte for byte (checked when this test was written: llama.cpp
 * de3ff81's converter run on the folder this test makes writes that file,
 * sha256 a79d4576…, the `file_sha256` of llama.cpp/deepseek3-f32.json).
 */

import assert from "node:assert/strict";
import { encodeSafetensors } from "../../src/formats/safetensors/encode.ts";
import { convertModel } from "../../src/pipeline/convert_model.ts";
import { withTempDir } from "../cli/_run_apr.ts";
import {
  fail,
  familyDir,
  fileDifference,
  ggufDescription,
  llamaCppManifest,
  manifestDifferences,
} from "./_families.ts";

/** A few of V3's MTP tensors, for the layer after the last (F32, small values). */
function mtpTensors(layer: number) {
  const p = `model.layers.${layer}`;
  const shapes: [string, number[]][] = [
    [`${p}.eh_proj.weight`, [64, 128]],
    [`${p}.enorm.weight`, [64]],
    [`${p}.hnorm.weight`, [64]],
    [`${p}.shared_head.norm.weight`, [64]],
    [`${p}.self_attn.kv_b_proj.weight`, [128, 32]],
    [`${p}.mlp.gate.e_score_correction_bias`, [4]],
    ...[0, 1, 2, 3].flatMap((e) =>
      ["gate_proj", "up_proj", "down_proj"].map((x): [string, number[]] => [
        `${p}.mlp.experts.${e}.${x}.weight`,
        x === "down_proj" ? [64, 32] : [32, 64],
      ])
    ),
  ];
  return shapes.map(([name, shape]) => {
    const values = Float32Array.from(
      { length: shape.reduce((a, b) => a * b, 1) },
      (_, i) => (i % 7) / 10,
    );
    return { name, dtype: "F32" as const, shape, data: new Uint8Array(values.buffer) };
  });
}

Deno.test("deepseek3: a multi-token-prediction layer past num_hidden_layers is dropped, as llama.cpp's converter drops it", async () => {
  await withTempDir(async (dir) => {
    // Named as the fixture: the converter names the file after its folder.
    const source = `${dir}/with-mtp/deepseek3`;
    await Deno.mkdir(source, { recursive: true });
    for (const entry of Deno.readDirSync(familyDir("deepseek3"))) {
      await Deno.copyFile(`${familyDir("deepseek3")}/${entry.name}`, `${source}/${entry.name}`);
    }
    const config = JSON.parse(await Deno.readTextFile(`${source}/config.json`));
    assert.equal(config.num_hidden_layers, 2);
    assert.equal(config.num_nextn_predict_layers, 1);
    const tensors = mtpTensors(2);
    const shard = "model-mtp.safetensors";
    await Deno.writeFile(`${source}/${shard}`, encodeSafetensors({ tensors }));
    const index = JSON.parse(await Deno.readTextFile(`${source}/model.safetensors.index.json`));
    for (const t of tensors) index.weight_map[t.name] = shard;
    await Deno.writeTextFile(`${source}/model.safetensors.index.json`, JSON.stringify(index));

    const out = `${dir}/deepseek3.gguf`;
    await convertModel(source, out);
    const theirs = await llamaCppManifest("deepseek3", "f32");
    assert.ok(theirs !== undefined);
    const mine = await ggufDescription(out);
    assert.ok(!mine.tensors.some((t) => t.name.startsWith("blk.2.")), "no blk.2 tensors");
    fail("deepseek3 with an MTP layer", manifestDifferences(mine, theirs));
    fail("deepseek3 with an MTP layer", await fileDifference(out, theirs));
  });
});
