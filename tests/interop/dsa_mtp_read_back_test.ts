/**
 * DeepSeek-V3.2's and GLM-5's published checkpoints carry their
 * multi-token-prediction layer past `num_hidden_layers` (`model.layers.61.*`,
 * `model.layers.78.*`: `embed_tokens`, `eh_proj`, `enorm`, `hnorm`,
 * `shared_head`, and a whole decoder block with its indexer), which the
 * converter keeps (`blk.N.nextn.*`, counted in `block_count`). The
 * `deepseek32` and `glm-dsa` fixtures (transformers builds no MTP layer, so
 * they have none) with such a layer added: their GGUF holds it as the
 * converter's does, and reads back into the checkpoint's tensors bit for bit
 * (MLA's `kv_b_proj` joined, the experts unstacked, the MTP layer under its
 * own names) and, through APR, into the GGUF again. The GGUF is the
 * converter's file byte for byte: llama.cpp de3ff81's converter
 * (`make_llamacpp.py`'s `convert`, `--outtype f32`) run on the folders this
 * test makes wrote files of the sha256s in {@linkcode CONVERTER_SHA256}.
 */

import assert from "node:assert/strict";
import { encodeSafetensors } from "../../src/formats/safetensors/encode.ts";
import { convertModel } from "../../src/pipeline/convert_model.ts";
import { withTempDir } from "../cli/_run_apr.ts";
import { readGgufFile, readTensors } from "./_files.ts";
import { fail, familyDir, tensorDifferences } from "./_families.ts";

/** The sha256 of llama.cpp's converter's file of the folder {@linkcode withMtpLayer} makes. */
const CONVERTER_SHA256: Readonly<Record<string, string>> = {
  deepseek32: "d93d6b137a8647ba4a2de6c2e5e0276f4618c24de4e75ad4f1d4b3d2ca9737ca",
  "glm-dsa": "52e1c0ddc864e2c4348838a1049ea5b123727bd1c2bd11512103aed511d2d54c",
};

async function sha256(path: string): Promise<string> {
  const digest = await crypto.subtle.digest("SHA-256", await Deno.readFile(path));
  return Array.from(new Uint8Array(digest), (b) => b.toString(16).padStart(2, "0")).join("");
}

/** The MTP layer's tensors of its own, by name after `model.layers.N.` (the fixtures' sizes). */
const OWN: readonly [string, (hidden: number, vocab: number) => number[]][] = [
  ["embed_tokens.weight", (h, v) => [v, h]],
  ["enorm.weight", (h) => [h]],
  ["hnorm.weight", (h) => [h]],
  ["eh_proj.weight", (h) => [h, 2 * h]],
  ["shared_head.norm.weight", (h) => [h]],
  ["shared_head.head.weight", (h, v) => [v, h]],
];

/** Values of their own for each tensor (a norm's near 1), so a misplaced one shows. */
function values(count: number, seed: number, norm: boolean): Uint8Array {
  const out = Float32Array.from(
    { length: count },
    (_, i) => (norm ? 1 : 0) + (((i * 7919 + seed * 104729) % 2001) - 1000) / 20000,
  );
  return new Uint8Array(out.buffer);
}

/**
 * `familyDir(family)` copied to `dir/family` with one MTP layer: the last
 * layer's tensors as layer N (`num_hidden_layers`), new values, and the
 * layer's own tensors; `num_nextn_predict_layers` 1.
 */
async function withMtpLayer(family: string, dir: string): Promise<string> {
  const source = `${dir}/${family}`;
  await Deno.mkdir(source, { recursive: true });
  for (const entry of Deno.readDirSync(familyDir(family))) {
    await Deno.copyFile(`${familyDir(family)}/${entry.name}`, `${source}/${entry.name}`);
  }
  const config = JSON.parse(await Deno.readTextFile(`${source}/config.json`));
  const layers: number = config.num_hidden_layers;
  config.num_nextn_predict_layers = 1;
  await Deno.writeTextFile(`${source}/config.json`, JSON.stringify(config, null, 2));
  const last = `model.layers.${layers - 1}.`;
  const block = [...(await readTensors(familyDir(family)))]
    .filter(([name]) => name.startsWith(last))
    .map(([name, t]) => ({ name: `model.layers.${layers}.${name.slice(last.length)}`, ...t }));
  const own = OWN.map(([name, shape]) => ({
    name: `model.layers.${layers}.${name}`,
    dtype: "F32" as const,
    shape: shape(config.hidden_size, config.vocab_size),
  }));
  // The fixtures are F32.
  assert.ok(block.every((t) => t.dtype === "F32"));
  const tensors = [...block, ...own].map((t, i) => ({
    name: t.name,
    dtype: "F32" as const,
    shape: [...t.shape],
    data: values(t.shape.reduce((a, b) => a * b, 1), i, /norm|layernorm/.test(t.name)),
  }));
  const shard = "model-mtp.safetensors";
  await Deno.writeFile(`${source}/${shard}`, encodeSafetensors({ tensors }));
  const index = JSON.parse(await Deno.readTextFile(`${source}/model.safetensors.index.json`));
  for (const t of tensors) index.weight_map[t.name] = shard;
  await Deno.writeTextFile(`${source}/model.safetensors.index.json`, JSON.stringify(index));
  return source;
}

for (const family of ["deepseek32", "glm-dsa"]) {
  Deno.test(`${family}: an MTP layer is kept in the GGUF as blk.N.nextn.* and reads back as the checkpoint's model.layers.N.*, bit for bit, and through APR as the GGUF again`, async () => {
    await withTempDir(async (dir) => {
      const source = await withMtpLayer(family, dir);
      const gguf = `${dir}/${family}.gguf`;
      await convertModel(source, gguf);
      assert.equal(await sha256(gguf), CONVERTER_SHA256[family], "not the converter's file");
      const file = await readGgufFile(gguf);
      const arch = family === "glm-dsa" ? "glm-dsa" : "deepseek32";
      assert.equal(file.kv.get(`${arch}.block_count`)?.value, 3);
      assert.equal(file.kv.get(`${arch}.nextn_predict_layers`)?.value, 1);
      for (
        const name of [
          "blk.2.nextn.eh_proj.weight",
          "blk.2.nextn.embed_tokens.weight",
          "blk.2.nextn.shared_head_head.weight",
          "blk.2.attn_k_b.weight",
          "blk.2.attn_v_b.weight",
          "blk.2.ffn_gate_exps.weight",
          "blk.2.exp_probs_b.bias",
        ]
      ) assert.ok(file.tensors.has(name), `no ${name} in the GGUF`);
      // V3.2's last layer runs its own indexer; GLM-5's fixture's reuses layer 0's.
      assert.equal(file.tensors.has("blk.2.indexer.proj.weight"), family === "deepseek32");

      await convertModel(gguf, `${dir}/back.safetensors`);
      fail(
        family,
        tensorDifferences(
          family,
          await readTensors(`${dir}/back.safetensors`),
          await readTensors(source),
        ),
      );

      await convertModel(gguf, `${dir}/back.apr`);
      await convertModel(`${dir}/back.apr`, `${dir}/again.gguf`);
      const again = await readGgufFile(`${dir}/again.gguf`);
      const problems = tensorDifferences(family, again.tensors, file.tensors);
      const keys = (kv: typeof file.kv) => JSON.stringify([...kv].map(([k, e]) => [k, e.value]));
      if (keys(again.kv) !== keys(file.kv)) problems.push("the keys differ");
      fail(family, problems);
    });
  });
}
