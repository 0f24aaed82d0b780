/**
 * Issue 18 item 5: HF → APR gives the tensors realizar's AprTransformer
 * looks up — Phi-3's fused gate_up_proj split into gate_proj/up_proj (the
 * first half of the rows is the gate), Mixtral's experts under mlp.* — and
 * exporting the APR gives the checkpoint's own tensors back, byte for byte.
 * A config whose vocab_size or hidden_size disagrees with the embedding is
 * refused at import, naming both.
 */

import assert from "node:assert/strict";
import { ModelFormatError } from "../../src/errors.ts";
import { convertModel } from "../../src/pipeline/convert_model.ts";
import { openModel } from "../../src/pipeline/open_model.ts";
import { withTempDir } from "../cli/_run_apr.ts";

const FIXTURES = new URL("../testdata/families/hf/", import.meta.url).pathname;

async function tensors(path: string): Promise<Map<string, { shape: number[]; bytes: Uint8Array }>> {
  const model = await openModel(path);
  try {
    const out = new Map<string, { shape: number[]; bytes: Uint8Array }>();
    for (const info of model.header.tensors) {
      const t = model.tensor(info.name);
      out.set(info.name, { shape: [...info.shape], bytes: await t.bytes() });
    }
    return out;
  } finally {
    await model.close();
  }
}

Deno.test("Phi-3 (phi-4's shape): gate_up_proj split for realizar, fused again on export", async () => {
  await withTempDir(async (dir) => {
    const source = await tensors(`${FIXTURES}phi4`);
    await convertModel(`${FIXTURES}phi4`, `${dir}/phi3.apr`);
    const apr = await tensors(`${dir}/phi3.apr`);
    const fused = source.get("model.layers.1.mlp.gate_up_proj.weight")!;
    const gate = apr.get("model.layers.1.mlp.gate_proj.weight")!;
    const up = apr.get("model.layers.1.mlp.up_proj.weight")!;
    assert.equal(apr.has("model.layers.1.mlp.gate_up_proj.weight"), false);
    assert.deepEqual(gate.shape, [fused.shape[0]! / 2, fused.shape[1]]);
    const half = fused.bytes.length / 2;
    assert.deepEqual(gate.bytes, fused.bytes.subarray(0, half));
    assert.deepEqual(up.bytes, fused.bytes.subarray(half));
    // realizar knows the fused QKV: kept.
    assert.ok(apr.has("model.layers.1.self_attn.qkv_proj.weight"));

    await convertModel(`${dir}/phi3.apr`, `${dir}/back.safetensors`);
    const back = await tensors(`${dir}/back.safetensors`);
    assert.deepEqual([...back.keys()].sort(), [...source.keys()].sort());
    for (const [name, t] of source) assert.deepEqual(back.get(name)!.bytes, t.bytes, name);
  });
});

Deno.test("Mixtral: router and experts under realizar's mlp.* names, and back", async () => {
  await withTempDir(async (dir) => {
    await convertModel(`${FIXTURES}mixtral`, `${dir}/m.apr`);
    const apr = await tensors(`${dir}/m.apr`);
    assert.ok(apr.has("model.layers.0.mlp.gate.weight"));
    for (const p of ["gate_proj", "up_proj", "down_proj"]) {
      assert.ok(apr.has(`model.layers.1.mlp.experts.3.${p}.weight`), p);
    }
    assert.equal([...apr.keys()].some((n) => n.includes("block_sparse_moe")), false);
    const source = await tensors(`${FIXTURES}mixtral`);
    assert.deepEqual(
      apr.get("model.layers.1.mlp.experts.2.down_proj.weight")!.bytes,
      source.get("model.layers.1.block_sparse_moe.experts.2.w2.weight")!.bytes,
    );
    await convertModel(`${dir}/m.apr`, `${dir}/back.safetensors`);
    const back = await tensors(`${dir}/back.safetensors`);
    assert.deepEqual([...back.keys()].sort(), [...source.keys()].sort());
  });
});

Deno.test("rope_type is written for every family, Gemma 3's rope_theta read from rope_parameters", async () => {
  await withTempDir(async (dir) => {
    await convertModel(`${FIXTURES}gemma3`, `${dir}/g.apr`);
    const model = await openModel(`${dir}/g.apr`);
    try {
      assert.equal(model.header.metadata.rope_type, 2);
      assert.equal(model.header.metadata.rope_theta, 1_000_000);
    } finally {
      await model.close();
    }
  });
});

Deno.test("a config.json whose vocab_size disagrees with the embedding is refused at import", async () => {
  await withTempDir(async (dir) => {
    const copy = `${dir}/qwen2`;
    await Deno.mkdir(copy);
    for (const entry of Deno.readDirSync(`${FIXTURES}qwen2`)) {
      await Deno.copyFile(`${FIXTURES}qwen2/${entry.name}`, `${copy}/${entry.name}`);
    }
    const config = JSON.parse(await Deno.readTextFile(`${copy}/config.json`));
    await Deno.writeTextFile(`${copy}/config.json`, JSON.stringify({ ...config, vocab_size: 500 }));
    const error = await convertModel(copy, `${dir}/q.apr`).catch((e) => e);
    assert.ok(error instanceof ModelFormatError, String(error));
    // The shape check says it first, for every output (llama.cpp refuses such a GGUF too).
    assert.match(
      error.message,
      /tensor "model\.embed_tokens\.weight": shape \[384, \d+\], expected \[500, \d+\] \(config\.json: vocab_size 500/,
    );
    assert.equal(await Deno.stat(`${dir}/q.apr`).catch(() => undefined), undefined);
  });
});
