/**
 * Llama-shaped BF16 checkpoints for the scale benchmark: a transformers-style
 * folder (config.json, a tokenizer, SafeTensors shards of at most ~4 GiB, an index) with
 * every tensor of a `LlamaForCausalLM` of the requested shape, values
 * pseudo-random (normal, std 0.02; norms 1.0) from a fixed seed, so every run
 * writes the same bytes. A 4 MiB pool of values is written at a different
 * offset for each tensor: generating 13.5 GB takes about as long as writing it.
 *
 * @module
 */

import { encodeBf16 } from "../src/quant/bf16.ts";

const MiB = 1024 * 1024;
const SHARD_BYTES = 4 * 1024 * MiB;

/** The dimensions of a llama-shaped model. */
export interface LlamaShape {
  /** Decoder layers. */
  layers: number;
  /** Hidden size. */
  hidden: number;
  /** MLP intermediate size. */
  ffn: number;
  /** Vocabulary size. */
  vocab: number;
  /** Attention heads. */
  heads: number;
  /** Key/value heads. */
  kvHeads: number;
}

/**
 * The benchmark's shapes: a small one (0.1B), Qwen2.5-0.5B's and 1.5B's
 * dimensions (with an untied output head) and Llama-2-7B's.
 */
export const SHAPES: Record<string, LlamaShape> = {
  // Small, with every row whole super-blocks (quant_types_measure.ts' default).
  "0.1B": { layers: 2, hidden: 1024, ffn: 2816, vocab: 32000, heads: 8, kvHeads: 8 },
  // 0.44 G values (0.88 GB of BF16): large enough that a run's fixed costs
  // (process start, module graph, workers) are small beside the encoding of
  // the cheap types (quant_types_measure.ts' figures for them).
  "0.4B": { layers: 6, hidden: 2048, ffn: 5632, vocab: 32000, heads: 16, kvHeads: 16 },
  "0.5B": { layers: 24, hidden: 896, ffn: 4864, vocab: 151936, heads: 14, kvHeads: 2 },
  "1.5B": { layers: 28, hidden: 1536, ffn: 8960, vocab: 151936, heads: 12, kvHeads: 2 },
  "7B": { layers: 32, hidden: 4096, ffn: 11008, vocab: 32000, heads: 32, kvHeads: 32 },
};

/** Every tensor of the shape, in the order transformers saves them. */
export function llamaTensors(s: LlamaShape): { name: string; shape: number[] }[] {
  const kv = (s.hidden / s.heads) * s.kvHeads;
  const list = [{ name: "model.embed_tokens.weight", shape: [s.vocab, s.hidden] }];
  for (let i = 0; i < s.layers; i++) {
    const p = `model.layers.${i}`;
    list.push(
      { name: `${p}.input_layernorm.weight`, shape: [s.hidden] },
      { name: `${p}.self_attn.q_proj.weight`, shape: [s.hidden, s.hidden] },
      { name: `${p}.self_attn.k_proj.weight`, shape: [kv, s.hidden] },
      { name: `${p}.self_attn.v_proj.weight`, shape: [kv, s.hidden] },
      { name: `${p}.self_attn.o_proj.weight`, shape: [s.hidden, s.hidden] },
      { name: `${p}.post_attention_layernorm.weight`, shape: [s.hidden] },
      { name: `${p}.mlp.gate_proj.weight`, shape: [s.ffn, s.hidden] },
      { name: `${p}.mlp.up_proj.weight`, shape: [s.ffn, s.hidden] },
      { name: `${p}.mlp.down_proj.weight`, shape: [s.hidden, s.ffn] },
    );
  }
  list.push(
    { name: "model.norm.weight", shape: [s.hidden] },
    { name: "lm_head.weight", shape: [s.vocab, s.hidden] },
  );
  return list;
}

/** Number of parameters of the shape. */
export function parameterCount(s: LlamaShape): number {
  return llamaTensors(s).reduce((n, t) => n + t.shape.reduce((a, b) => a * b, 1), 0);
}

/**
 * Write the checkpoint into `dir` (created if needed).
 *
 * @param dir The model folder.
 * @param shape The model's dimensions.
 * @param realLayers Layers from this one on are holes in their files (sparse:
 *   zeros that cost no disk, for a 7B shape on a small disk); every layer by default.
 * @returns Bytes of tensor data written.
 */
export async function writeLlamaShapedModel(
  dir: string,
  shape: LlamaShape,
  realLayers = Infinity,
): Promise<number> {
  await Deno.mkdir(dir, { recursive: true });
  const tensors = llamaTensors(shape);
  const shards: { name: string; shape: number[] }[][] = [[]];
  let size = 0;
  for (const t of tensors) {
    const bytes = t.shape.reduce((a, b) => a * b, 1) * 2;
    if (size > 0 && size + bytes > SHARD_BYTES) {
      shards.push([]);
      size = 0;
    }
    shards[shards.length - 1]!.push(t);
    size += bytes;
  }
  const pool = valuePool();
  const ones = encodeBf16(new Float32Array(shape.hidden).fill(1));
  const weightMap: Record<string, string> = {};
  let total = 0;
  let tensorIndex = 0;
  for (const [i, list] of shards.entries()) {
    const n = String(shards.length).padStart(5, "0");
    const name = `model-${String(i + 1).padStart(5, "0")}-of-${n}.safetensors`;
    const header: Record<string, unknown> = { __metadata__: { format: "pt" } };
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
    for (const t of list) {
      const bytes = t.shape.reduce((a, b) => a * b, 1) * 2;
      const layer = /^model\.layers\.(\d+)\./.exec(t.name);
      if (layer !== null && Number(layer[1]) >= realLayers) {
        await file.seek(bytes, Deno.SeekMode.Current);
        tensorIndex++;
        continue;
      }
      if (t.shape.length === 1) {
        await writeAll(file, ones.subarray(0, bytes));
        tensorIndex++;
        continue;
      }
      // A different (even) start in the pool for each tensor.
      let at = ((tensorIndex++ * 7919 * 2) % (pool.length / 2)) & ~1;
      for (let left = bytes; left > 0;) {
        const k = Math.min(left, pool.length - at);
        await writeAll(file, pool.subarray(at, at + k));
        left -= k;
        at = 0;
      }
    }
    // A trailing hole: the file still has its full length.
    await file.truncate(prefix.length + offset);
  }
  await Deno.writeTextFile(
    `${dir}/model.safetensors.index.json`,
    JSON.stringify({ metadata: { total_size: total }, weight_map: weightMap }),
  );
  await Deno.writeTextFile(`${dir}/config.json`, JSON.stringify(config(shape), null, 2));
  await writeLlamaTokenizer(dir, shape.vocab);
  return total;
}

function config(s: LlamaShape): Record<string, unknown> {
  return {
    architectures: ["LlamaForCausalLM"],
    model_type: "llama",
    hidden_size: s.hidden,
    intermediate_size: s.ffn,
    num_hidden_layers: s.layers,
    num_attention_heads: s.heads,
    num_key_value_heads: s.kvHeads,
    vocab_size: s.vocab,
    max_position_embeddings: 4096,
    rms_norm_eps: 1e-5,
    rope_theta: 10000,
    hidden_act: "silu",
    tie_word_embeddings: false,
    torch_dtype: "bfloat16",
  };
}

/** Realistic BF16 values (normal, std 0.02), 4 MiB of them, from a fixed seed. */
function valuePool(): Uint8Array {
  const n = 4 * MiB / 2;
  const v = new Float32Array(n);
  let seed = 20231;
  const rand = () => ((seed = (seed * 1103515245 + 12345) >>> 0) / 4294967296);
  for (let i = 0; i < n; i++) {
    v[i] = 0.02 * Math.sqrt(-2 * Math.log(1 - rand())) * Math.cos(2 * Math.PI * rand());
  }
  return encodeBf16(v);
}

async function writeAll(file: Deno.FsFile, bytes: Uint8Array): Promise<void> {
  for (let done = 0; done < bytes.length;) done += await file.write(bytes.subarray(done));
}

/**
 * A Llama-style (byte-fallback BPE) tokenizer.json of `vocab` tokens, no
 * merges: what convert_hf_to_gguf.py and a GGUF export need to write the
 * vocabulary, which the timing does not depend on.
 */
export async function writeLlamaTokenizer(dir: string, vocab: number): Promise<void> {
  const tokens: Record<string, number> = { "<unk>": 0, "<s>": 1, "</s>": 2 };
  for (let b = 0; b < 256; b++) {
    tokens[`<0x${b.toString(16).toUpperCase().padStart(2, "0")}>`] = 3 + b;
  }
  tokens["\u2581"] = 259;
  for (let i = 260; i < vocab; i++) tokens[`\u2581t${i}`] = i;
  const special = (id: number, content: string) => ({
    id,
    content,
    single_word: false,
    lstrip: false,
    rstrip: false,
    normalized: false,
    special: true,
  });
  await Deno.writeTextFile(
    `${dir}/tokenizer.json`,
    JSON.stringify({
      version: "1.0",
      truncation: null,
      padding: null,
      added_tokens: [special(0, "<unk>"), special(1, "<s>"), special(2, "</s>")],
      normalizer: {
        type: "Sequence",
        normalizers: [
          { type: "Prepend", prepend: "\u2581" },
          { type: "Replace", pattern: { String: " " }, content: "\u2581" },
        ],
      },
      pre_tokenizer: null,
      post_processor: null,
      decoder: {
        type: "Sequence",
        decoders: [
          { type: "Replace", pattern: { String: "\u2581" }, content: " " },
          { type: "ByteFallback" },
          { type: "Fuse" },
          { type: "Strip", content: " ", start: 1, stop: 0 },
        ],
      },
      model: {
        type: "BPE",
        dropout: null,
        unk_token: "<unk>",
        continuing_subword_prefix: null,
        end_of_word_suffix: null,
        fuse_unk: true,
        byte_fallback: true,
        vocab: tokens,
        merges: [],
      },
    }),
  );
  await Deno.writeTextFile(
    `${dir}/tokenizer_config.json`,
    JSON.stringify({
      tokenizer_class: "PreTrainedTokenizerFast",
      bos_token: "<s>",
      eos_token: "</s>",
      unk_token: "<unk>",
    }),
  );
}
