/**
 * Qwen3-Next's refusals: what llama.cpp's `qwen3next` reads no key for.
 * Its GGUF itself is judged against llama.cpp's converter and transformers
 * in tests/interop/families_gguf_test.ts (fixture `qwen3-next`).
 */

import assert from "node:assert/strict";
import { QWEN3NEXT } from "../../src/arch/families/qwen3next.ts";
import { configRefusal } from "../../src/arch/config_fields.ts";
import { KvWriter } from "../../src/arch/kv.ts";
import { assertOneLineError, rawSafetensors, runApr, withTempDir } from "../cli/_run_apr.ts";
import { convertModel } from "../../src/pipeline/convert_model.ts";
import { AprSink, openApr } from "../../src/formats/apr/mod.ts";
import { openGguf } from "../../src/formats/gguf/mod.ts";
import { openFileSource } from "../../src/io/file_source.ts";
import { type ModelChunk, modelChunks } from "../../src/tensor.ts";

const CONFIG = JSON.parse(
  await Deno.readTextFile(
    new URL("../testdata/families/hf/qwen3-next/config.json", import.meta.url),
  ),
) as Record<string, unknown>;

function refusal(change: Record<string, unknown>): string | undefined {
  const w = new KvWriter({ ...CONFIG, ...change }, "qwen3next");
  return configRefusal(QWEN3NEXT.configFields, w) ?? QWEN3NEXT.gguf!.unsupported!(w);
}

Deno.test("qwen3next: a config llama.cpp would not run as transformers does is refused, naming the field", () => {
  assert.equal(refusal({}), undefined);
  assert.match(refusal({ linear_value_head_dim: 32 })!, /linear_value_head_dim 32/);
  assert.match(refusal({ linear_num_value_heads: 3 })!, /linear_num_value_heads 3/);
  assert.match(refusal({ attention_bias: true })!, /attention_bias true/);
  assert.match(refusal({ norm_topk_prob: false })!, /norm_topk_prob false.*true/);
  assert.match(refusal({ mlp_only_layers: [1] })!, /mlp_only_layers \[1\]/);
  assert.match(refusal({ decoder_sparse_step: 2 })!, /decoder_sparse_step 2/);
});

Deno.test("qwen3next: the recurrent layers and rotated dims as the converter writes them", () => {
  const w = new KvWriter(CONFIG, "qwen3next");
  QWEN3NEXT.gguf!.writeKv(w);
  const kv = w.entries();
  assert.deepEqual(kv.get("qwen3next.attention.recurrent_layers")?.value, [
    true,
    true,
    true,
    false,
  ]);
  assert.equal(kv.get("qwen3next.rope.dimension_count")?.value, 4); // 16 × 0.25
  assert.equal(kv.get("qwen3next.ssm.inner_size")?.value, 64); // 4 value heads × 16
  // Gated norm of the linear attention kept; the others get the +1 transformers adds.
  assert.equal(QWEN3NEXT.gguf!.shift!("blk.0.ssm_norm.weight"), 0);
  assert.equal(QWEN3NEXT.gguf!.shift!("blk.3.attn_q_norm.weight"), 1);
  assert.equal(QWEN3NEXT.gguf!.shift!("output_norm.weight"), 1);
});

Deno.test("qwen3next: without mtp_num_hidden_layers (as Qwen3-Next publishes), the MTP layers are counted from the tensors, as the converter counts them", () => {
  const counted = QWEN3NEXT.gguf!.countedConfig!;
  const names = ["model.embed_tokens.weight", "mtp.fc.weight", "mtp.layers.0.mlp.gate.weight"];
  assert.equal(counted(CONFIG, names)["mtp_num_hidden_layers"], 1);
  // The highest layer plus one; under `model.mtp.` too.
  assert.equal(
    counted(CONFIG, ["model.mtp.layers.2.self_attn.q_proj.weight"])["mtp_num_hidden_layers"],
    3,
  );
  // A count of 0 is no count for the converter either.
  assert.equal(counted({ ...CONFIG, mtp_num_hidden_layers: 0 }, names)["mtp_num_hidden_layers"], 1);
  // A count in config.json wins; without MTP layer tensors the config is as it was.
  const two = { ...CONFIG, mtp_num_hidden_layers: 2 };
  assert.equal(counted(two, names), two);
  assert.equal(counted(CONFIG, ["mtp.fc.weight", "model.layers.0.mlp.gate.weight"]), CONFIG);
  // A multimodal config gets it in text_config, where the converter reads it.
  const composite = counted({ text_config: CONFIG }, names);
  const text = composite["text_config"] as Record<string, unknown>;
  assert.equal(text["mtp_num_hidden_layers"], 1);
  assert.equal("mtp_num_hidden_layers" in composite, false);
  // The counted MTP layer is named, keyed and refused as a counted one.
  const w = new KvWriter(counted(CONFIG, names), "qwen3next");
  assert.equal(
    QWEN3NEXT.gguf!.sourceName!("mtp.fc.weight", w.hparams),
    "model.layers.4.eh_proj.weight",
  );
  QWEN3NEXT.gguf!.writeKv(w);
  assert.equal(w.entries().get("qwen3next.block_count")?.value, 5);
  assert.equal(w.entries().get("qwen3next.nextn_predict_layers")?.value, 1);
  assert.match(
    refusal(counted(CONFIG, ["mtp.layers.2147482999.mlp.gate.weight"]))!,
    /mtp_num_hidden_layers 2147483000, more than its num_hidden_layers 4/,
  );
});

Deno.test("qwen3next: a checkpoint whose MTP layer tensors count past its layers is refused for GGUF in one line, with no file", async () => {
  await withTempDir(async (dir) => {
    const model = `${dir}/src`;
    await Deno.mkdir(model);
    const from = new URL("../testdata/families/hf/qwen3-next-mtp/", import.meta.url);
    for (const entry of Deno.readDirSync(from)) {
      await Deno.copyFile(new URL(entry.name, from), `${model}/${entry.name}`);
    }
    // The MTP shard's and the index's names at layer 2147482999.
    const far = (name: string) => name.replace(/^mtp\.layers\.0\./, "mtp.layers.2147482999.");
    const shard = await Deno.readFile(`${model}/model-mtp.safetensors`);
    const length = Number(new DataView(shard.buffer).getBigUint64(0, true));
    const header = JSON.parse(new TextDecoder().decode(shard.subarray(8, 8 + length)));
    const renamed = Object.fromEntries(Object.entries(header).map(([k, v]) => [far(k), v]));
    await Deno.writeFile(
      `${model}/model-mtp.safetensors`,
      rawSafetensors(JSON.stringify(renamed), shard.subarray(8 + length)),
    );
    const index = JSON.parse(await Deno.readTextFile(`${model}/model.safetensors.index.json`));
    index.weight_map = Object.fromEntries(
      Object.entries(index.weight_map).map(([k, v]) => [far(k), v]),
    );
    await Deno.writeTextFile(`${model}/model.safetensors.index.json`, JSON.stringify(index));
    const out = `${dir}/out`;
    await Deno.mkdir(out);
    const run = await runApr(["convert", model, "-o", `${out}/m.gguf`]);
    // The shape check, before the family's own refusal (the unit test above), names the tensor.
    assertOneLineError(run, /model-mtp\.safetensors.*"model\.layers\.2147483003\./);
    assert.deepEqual([...Deno.readDirSync(out)], []);
  });
});

Deno.test("qwen3next: an APR file imported before MTP layers were counted at import still writes them to GGUF", async () => {
  await withTempDir(async (dir) => {
    const fixture = new URL("../testdata/families/hf/qwen3-next-mtp/", import.meta.url).pathname;
    await convertModel(fixture, `${dir}/new.apr`);
    // An older import: the APR's hf_config without the count the tensors give.
    const reader = await openApr(await openFileSource(`${dir}/new.apr`));
    try {
      const { mtp_num_hidden_layers: counted, ...config } = reader.header.metadata[
        "hf_config"
      ] as Record<string, unknown>;
      assert.equal(counted, 1);
      const older = new TransformStream<ModelChunk, ModelChunk>({
        transform(chunk, controller) {
          controller.enqueue(
            chunk.type === "header"
              ? {
                type: "header",
                header: {
                  ...chunk.header,
                  metadata: { ...chunk.header.metadata, hf_config: config },
                },
              }
              : chunk,
          );
        },
      });
      await modelChunks(reader).pipeThrough(older).pipeTo(new AprSink(`${dir}/old.apr`));
    } finally {
      await reader.close();
    }
    await convertModel(`${dir}/new.apr`, `${dir}/new.gguf`);
    await convertModel(`${dir}/old.apr`, `${dir}/old.gguf`);
    const summary = async (path: string) => {
      const gguf = await openGguf(await openFileSource(path));
      try {
        return {
          blocks: gguf.header.metadata["gguf.qwen3next.block_count"],
          tensors: gguf.header.tensors.map((t) => t.name),
        };
      } finally {
        await gguf.close();
      }
    };
    const fresh = await summary(`${dir}/new.gguf`);
    assert.ok(fresh.tensors.some((n) => n.endsWith(".nextn.eh_proj.weight")), "the MTP layer");
    assert.deepEqual(await summary(`${dir}/old.gguf`), fresh);
  });
});
