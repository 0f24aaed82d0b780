/**
 * Gemma 3n's KV-sharing layers as transformers 5.18 saves them: without the
 * K/V projections and K norm those layers never use (google/gemma-3n-E2B and
 * E4B hold them). llama.cpp's gemma3n loads all three for every layer, so
 * aprkit writes the missing ones as zeros (src/arch/families/gemma3n.ts); the
 * judge loads that file and computes exactly what it computes for the same
 * checkpoint with the tensors present (real values, unread).
 *
 * The checkpoint is made here from the 2-layer fixture
 * (tests/testdata/multimodal/gemma3n/hf/gemma3n-text-t5): 21 layers (llama.cpp
 * shares KV from layer 20 on, so `num_kv_shared_layers` 1), layer i a copy of
 * the fixture's layer i mod 2, the per-layer embedding and projection widened
 * the same way.
 */

import assert from "node:assert/strict";
import { encodeSafetensors } from "../../src/formats/safetensors/encode.ts";
import { runApr, withTempDir } from "../cli/_run_apr.ts";
import { llamaLogProbs } from "./_llama_judge.ts";

const FIXTURE =
  new URL("../testdata/multimodal/gemma3n/hf/gemma3n-text-t5/", import.meta.url).pathname;
const LAYERS = 21;
const PER_LAYER = 256;

interface Tensor {
  shape: number[];
  data: Float32Array;
}

async function fixtureTensors(): Promise<Map<string, Tensor>> {
  const out = new Map<string, Tensor>();
  for await (const e of Deno.readDir(FIXTURE)) {
    if (!e.name.endsWith(".safetensors")) continue;
    const bytes = await Deno.readFile(`${FIXTURE}${e.name}`);
    const n = Number(new DataView(bytes.buffer).getBigUint64(0, true));
    const header = JSON.parse(new TextDecoder().decode(bytes.subarray(8, 8 + n)));
    for (const [name, t] of Object.entries(header) as [string, Record<string, unknown>][]) {
      if (name === "__metadata__") continue;
      assert.equal(t["dtype"], "F32");
      const [a, b] = t["data_offsets"] as [number, number];
      const data = new Float32Array(bytes.slice(8 + n + a, 8 + n + b).buffer);
      out.set(name, { shape: t["shape"] as number[], data });
    }
  }
  return out;
}

/** Columns (`axis` 1) or rows (0) of a 2-D tensor in per-layer blocks, each block from layer i mod 2. */
function widened(t: Tensor, axis: 0 | 1): Tensor {
  const [rows, cols] = t.shape as [number, number];
  if (axis === 0) {
    const block = PER_LAYER * cols;
    const data = new Float32Array(LAYERS * block);
    for (let i = 0; i < LAYERS; i++) {
      data.set(t.data.subarray((i % 2) * block, (i % 2 + 1) * block), i * block);
    }
    return { shape: [LAYERS * PER_LAYER, cols], data };
  }
  const data = new Float32Array(rows * LAYERS * PER_LAYER);
  for (let r = 0; r < rows; r++) {
    for (let i = 0; i < LAYERS; i++) {
      const from = r * cols + (i % 2) * PER_LAYER;
      data.set(t.data.subarray(from, from + PER_LAYER), (r * LAYERS + i) * PER_LAYER);
    }
  }
  return { shape: [rows, LAYERS * PER_LAYER], data };
}

/** The 21-layer checkpoint in `dir`, with or without the shared layer's K/V tensors. */
async function writeCheckpoint(dir: string, withSharedKv: boolean): Promise<void> {
  await Deno.mkdir(dir, { recursive: true });
  const source = await fixtureTensors();
  const tensors: { name: string; tensor: Tensor }[] = [];
  const perLayer = /^model\.layers\.(\d+)\.(.+)$/;
  for (const [name, tensor] of source) {
    if (perLayer.test(name)) continue;
    const t = name === "model.embed_tokens_per_layer.weight"
      ? widened(tensor, 1)
      : name === "model.per_layer_model_projection.weight"
      ? widened(tensor, 0)
      : tensor;
    tensors.push({ name, tensor: t });
  }
  for (let i = 0; i < LAYERS; i++) {
    for (const [name, tensor] of source) {
      const m = perLayer.exec(name);
      if (m === null || Number(m[1]) !== i % 2) continue;
      const shared = i >= LAYERS - 1;
      if (shared && !withSharedKv && /self_attn\.(k_proj|v_proj|k_norm)\./.test(m[2]!)) continue;
      tensors.push({ name: `model.layers.${i}.${m[2]}`, tensor });
    }
  }
  await Deno.writeFile(
    `${dir}/model.safetensors`,
    encodeSafetensors({
      metadata: { format: "pt" },
      tensors: tensors.map(({ name, tensor }) => ({
        name,
        dtype: "F32",
        shape: tensor.shape,
        data: new Uint8Array(tensor.data.buffer, tensor.data.byteOffset, tensor.data.byteLength),
      })),
    }),
  );
  const config = JSON.parse(await Deno.readTextFile(`${FIXTURE}config.json`));
  Object.assign(config, {
    num_hidden_layers: LAYERS,
    num_kv_shared_layers: 1,
    intermediate_size: Array(LAYERS).fill(512),
    layer_types: Array.from(
      { length: LAYERS },
      (_, i) => i % 2 === 0 ? "sliding_attention" : "full_attention",
    ),
    activation_sparsity_pattern: Array.from({ length: LAYERS }, (_, i) => i < 10 ? 0.95 : 0),
  });
  await Deno.writeTextFile(`${dir}/config.json`, JSON.stringify(config, null, 2));
  for (const f of ["tokenizer.json", "tokenizer.model", "tokenizer_config.json"]) {
    await Deno.copyFile(`${FIXTURE}${f}`, `${dir}/${f}`);
  }
}

Deno.test("gemma3n: transformers 5's checkpoint without the shared layers' K/V gets them as zeros; llama.cpp loads it and computes as with the published tensors", async () => {
  await withTempDir(async (dir) => {
    const files: string[] = [];
    for (const [name, withSharedKv] of [["published", true], ["tf5", false]] as const) {
      await writeCheckpoint(`${dir}/${name}`, withSharedKv);
      const out = `${dir}/${name}.gguf`;
      const run = await runApr(["convert", `${dir}/${name}`, "-o", out]);
      assert.equal(run.code, 0, run.stderr);
      files.push(out);
    }
    const ids = [2, 10, 20, 30, 40, 50, 60, 70, 80, 90, 100, 110];
    const positions = [3, 7, 11];
    const [published, tf5] = await llamaLogProbs(
      files.map((path) => ({ path, ids, positions })),
    );
    assert.equal(published!.error, undefined, published!.error);
    assert.equal(tf5!.error, undefined, tf5!.error);
    let max = 0;
    published!.logprobs.forEach((row, p) =>
      row.forEach((v, t) => max = Math.max(max, Math.abs(v - tf5!.logprobs[p]![t]!)))
    );
    assert.equal(max, 0, `max log-prob difference ${max}`);
  });
});
