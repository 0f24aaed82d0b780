/**
 * The synthetic benchmark model: a sharded BF16 transformers-style checkpoint
 * (3 SafeTensors shards and an index) of one `[131072, 2048]` embedding (512
 * MiB) and llama-named `[2048, 2048]` attention layers up to the requested
 * size, values normal with std 0.02 (a pool of 2 Mi values, reused).
 *
 * @module
 */

import { encodeBf16 } from "../src/quant/bf16.ts";

const MiB = 1024 * 1024;
const HIDDEN = 2048;

/**
 * Write the model into `dir` (created if needed).
 *
 * @param dir The model folder.
 * @param targetBytes Approximate size of the tensor data.
 * @returns The shard file names.
 */
export async function writeSyntheticModel(dir: string, targetBytes: number): Promise<string[]> {
  const tensors: { name: string; shape: number[] }[] = [
    { name: "model.embed_tokens.weight", shape: [131072, HIDDEN] },
  ];
  let planned = 131072 * HIDDEN * 2;
  for (let i = 0; planned < targetBytes; i++) {
    for (const part of ["q_proj", "k_proj", "v_proj", "o_proj"]) {
      tensors.push({ name: `model.layers.${i}.self_attn.${part}.weight`, shape: [HIDDEN, HIDDEN] });
      planned += HIDDEN * HIDDEN * 2;
    }
    tensors.push({ name: `model.layers.${i}.input_layernorm.weight`, shape: [HIDDEN] });
    planned += HIDDEN * 2;
  }
  const perShard = Math.ceil(planned / 3);
  const pool = valuePool();
  await Deno.mkdir(dir, { recursive: true });
  const shards: { name: string; shape: number[] }[][] = [[]];
  let size = 0;
  for (const t of tensors) {
    const bytes = t.shape.reduce((a, b) => a * b, 1) * 2;
    if (size > 0 && size + bytes > perShard && shards.length < 3) {
      shards.push([]);
      size = 0;
    }
    shards[shards.length - 1]!.push(t);
    size += bytes;
  }
  const names: string[] = [];
  const weightMap: Record<string, string> = {};
  let total = 0;
  for (const [i, list] of shards.entries()) {
    const name = `model-0000${i + 1}-of-0000${shards.length}.safetensors`;
    names.push(name);
    const header: Record<string, unknown> = {};
    let offset = 0;
    for (const t of list) {
      const bytes = t.shape.reduce((a, b) => a * b, 1) * 2;
      header[t.name] = { dtype: "BF16", shape: t.shape, data_offsets: [offset, offset + bytes] };
      offset += bytes;
      weightMap[t.name] = name;
    }
    total += offset;
    let json = JSON.stringify(header);
    json += " ".repeat((8 - ((8 + json.length) % 8)) % 8);
    using file = await Deno.open(`${dir}/${name}`, { write: true, create: true, truncate: true });
    const prefix = new Uint8Array(8 + json.length);
    new DataView(prefix.buffer).setBigUint64(0, BigInt(json.length), true);
    prefix.set(new TextEncoder().encode(json), 8);
    await writeAll(file, prefix);
    for (let left = offset; left > 0;) {
      const n = Math.min(left, pool.length);
      await writeAll(file, pool.subarray(0, n));
      left -= n;
    }
  }
  await Deno.writeTextFile(
    `${dir}/model.safetensors.index.json`,
    JSON.stringify({ metadata: { total_size: total }, weight_map: weightMap }),
  );
  return names;
}

/** Realistic BF16 values (normal, std 0.02), 4 MiB of them. */
function valuePool(): Uint8Array {
  const n = 4 * MiB / 2;
  const v = new Float32Array(n);
  let seed = 12345;
  const rand = () => ((seed = (seed * 1103515245 + 12345) >>> 0) / 4294967296);
  for (let i = 0; i < n; i++) {
    v[i] = 0.02 * Math.sqrt(-2 * Math.log(1 - rand())) * Math.cos(2 * Math.PI * rand());
  }
  return encodeBf16(v);
}

async function writeAll(file: Deno.FsFile, bytes: Uint8Array): Promise<void> {
  for (let done = 0; done < bytes.length;) done += await file.write(bytes.subarray(done));
}
