/**
 * The models of tests/testdata/llama_quantize/ (made by its make_fixtures.py):
 * their values, rebuilt from the same counter-based hash, an F32 GGUF of them
 * as gguf-py wrote it for llama-quantize, and the manifests of llama-quantize's
 * runs.
 */

import { encodeGguf, type GgufKvInput } from "../../src/formats/gguf/writer.ts";
import { GgufValueType } from "../../src/formats/gguf/header.ts";

const DIR = new URL("../testdata/llama_quantize/", import.meta.url);

/** One llama-quantize run: the types and hashes of every tensor, or its refusal. */
export interface Run {
  ftype: string;
  imatrix: boolean;
  refused?: string;
  file_type?: number;
  types?: string[];
  sha256_16?: string[];
}

/** A model's manifest. */
export interface Manifest {
  /** "dense" or "moe" (named in the model's general.name). */
  key: string;
  model: {
    seed: number;
    layers: number;
    embd: number;
    heads: number;
    kv_heads: number;
    head_dim: number;
    ff: number;
    vocab: number;
    experts: number;
    tied: boolean;
  };
  tensors: [string, number[]][];
  runs: Run[];
}

/** The manifest of model `key` ("dense" or "moe"). */
export function manifest(key: string): Manifest {
  return { ...JSON.parse(Deno.readTextFileSync(new URL(`${key}.manifest.json`, DIR))), key };
}

/** Path of model `key`'s importance matrix (llama-imatrix's legacy format). */
export function imatrixPath(key: string): string {
  return new URL(`${key}.imatrix.dat`, DIR).pathname;
}

function fnv1a(s: string): number {
  let h = 0x811c9dc5;
  for (const c of new TextEncoder().encode(s)) h = Math.imul(h ^ c, 0x01000193) >>> 0;
  return h;
}

/** lowbias32, as make_fixtures.py's `mix`. */
function mix(x: number): number {
  x = (x ^ (x >>> 16)) >>> 0;
  x = Math.imul(x, 0x7feb352d) >>> 0;
  x = (x ^ (x >>> 15)) >>> 0;
  x = Math.imul(x, 0x846ca68b) >>> 0;
  return (x ^ (x >>> 16)) >>> 0;
}

/** make_fixtures.py's `values_of`: exact f32 values of one tensor. */
export function valuesOf(seed: number, name: string, shape: readonly number[]): Float32Array {
  const n = shape.reduce((a, b) => a * b, 1);
  const cols = shape[shape.length - 1]!;
  const h = fnv1a(name);
  const s0 = (h ^ seed) >>> 0;
  const out = new Float32Array(n);
  for (let i = 0; i < n; i++) {
    const u1 = mix((Math.imul(2 * i, 0x9e3779b9) + s0) >>> 0);
    const u2 = mix((Math.imul(2 * i + 1, 0x9e3779b9) + s0) >>> 0);
    const s = (u1 >>> 10) + (u2 >>> 10) - (1 << 22);
    const row = Math.floor(i / cols);
    const exponent = 25 + ((row * 7 + (h & 7)) % 5);
    let v = s * 2 ** -exponent;
    if ((u1 & 1023) === 0) v *= 16;
    out[i] = v;
  }
  return out;
}

const u32 = (value: number): GgufKvInput => ({ type: GgufValueType.UINT32, value });

/** The F32 GGUF make_fixtures.py gave llama-quantize (metadata and tensors; gguf-py's layout aside). */
export function sourceGguf(m: Manifest): Uint8Array {
  return encodeGguf({ kv: sourceKv(m), tensors: sourceTensors(m) });
}

/**
 * The same model as `llama-gguf-split --split-max-tensors N` splits it: the
 * metadata in the first shard, `split.no`, `split.count` and
 * `split.tensors.count` in each, N tensors a shard in file order.
 */
export function sourceGgufSplit(m: Manifest, perShard: number): Uint8Array[] {
  const tensors = sourceTensors(m);
  const count = Math.ceil(tensors.length / perShard);
  return Array.from({ length: count }, (_, i) => {
    const kv: [string, GgufKvInput][] = [
      ...(i === 0 ? sourceKv(m) : []),
      ["split.no", { type: GgufValueType.UINT16, value: i }],
      ["split.count", { type: GgufValueType.UINT16, value: count }],
      ["split.tensors.count", { type: GgufValueType.INT32, value: tensors.length }],
    ];
    return encodeGguf({ kv, tensors: tensors.slice(i * perShard, (i + 1) * perShard) });
  });
}

function sourceKv(m: Manifest): [string, GgufKvInput][] {
  const { model } = m;
  const arch = "llama";
  const kv: [string, GgufKvInput][] = [
    ["general.architecture", { type: GgufValueType.STRING, value: arch }],
    ["general.name", { type: GgufValueType.STRING, value: `llama-quantize fixture ${m.key}` }],
    [`${arch}.context_length`, u32(256)],
    [`${arch}.embedding_length`, u32(model.embd)],
    [`${arch}.block_count`, u32(model.layers)],
    [`${arch}.feed_forward_length`, u32(model.ff)],
    [`${arch}.attention.head_count`, u32(model.heads)],
    [`${arch}.attention.head_count_kv`, u32(model.kv_heads)],
    [`${arch}.attention.key_length`, u32(model.head_dim)],
    [`${arch}.attention.value_length`, u32(model.head_dim)],
    [`${arch}.rope.dimension_count`, u32(model.head_dim)],
    [`${arch}.attention.layer_norm_rms_epsilon`, { type: GgufValueType.FLOAT32, value: 1e-5 }],
    [`${arch}.vocab_size`, u32(model.vocab)],
    ...(model.experts > 0
      ? [[`${arch}.expert_count`, u32(model.experts)], [`${arch}.expert_used_count`, u32(2)]] as [
        string,
        GgufKvInput,
      ][]
      : []),
    ["general.file_type", u32(0)],
    ["tokenizer.ggml.model", { type: GgufValueType.STRING, value: "llama" }],
    ["tokenizer.ggml.tokens", {
      type: GgufValueType.ARRAY,
      value: Array.from({ length: model.vocab }, (_, i) => `<t${i}>`),
      arrayTypes: [GgufValueType.STRING],
    }],
    ["tokenizer.ggml.scores", {
      type: GgufValueType.ARRAY,
      value: new Array(model.vocab).fill(0),
      arrayTypes: [GgufValueType.FLOAT32],
    }],
    ["tokenizer.ggml.token_type", {
      type: GgufValueType.ARRAY,
      value: new Array(model.vocab).fill(1),
      arrayTypes: [GgufValueType.INT32],
    }],
  ];
  return kv;
}

function sourceTensors(m: Manifest) {
  return m.tensors.map(([name, shape]) => {
    const v = valuesOf(m.model.seed, name, shape);
    return {
      name,
      dtype: "F32" as const,
      ne: [...shape].reverse(),
      data: new Uint8Array(v.buffer),
    };
  });
}

/** The first 16 hex digits of the sha256 of `bytes`. */
export async function sha16(bytes: Uint8Array): Promise<string> {
  const d = new Uint8Array(await crypto.subtle.digest("SHA-256", bytes as Uint8Array<ArrayBuffer>));
  return [...d.subarray(0, 8)].map((b) => b.toString(16).padStart(2, "0")).join("");
}
