/**
 * Writes `examples/tiny-llama/`: a tiny llama-shaped model laid out like a
 * Hugging Face repository — two BF16 SafeTensors shards with
 * `model.safetensors.index.json`, `config.json`, a byte-level BPE
 * `tokenizer.json` trained here on a fixed text, and `tokenizer_config.json`.
 * Weights come from a seeded generator, so the output is the same on every
 * run and machine.
 *
 * Usage: deno run --allow-write examples/make_tiny_model.ts [OUT_DIR]
 *
 * @module
 */

import { encodeSafetensors } from "../src/formats/safetensors/encode.ts";
import { encodeBf16 } from "../src/quant/bf16.ts";

const OUT = Deno.args[0] ?? new URL("./tiny-llama/", import.meta.url).pathname;

const HIDDEN = 128;
const HEADS = 4;
const KV_HEADS = 2;
const HEAD_DIM = HIDDEN / HEADS;
const FFN = 192;
const LAYERS = 2;
const VOCAB = 256;
const SPECIALS = ["<unk>", "<s>", "</s>"];

/** mulberry32: a tiny seeded PRNG, so the weights never change. */
function random(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const uniform = random(20261121);
function normal(std: number): number {
  // Box–Muller; 1 - u keeps the logarithm finite.
  const u = 1 - uniform();
  const v = uniform();
  return std * Math.sqrt(-2 * Math.log(u)) * Math.cos(2 * Math.PI * v);
}

function weight(name: string, shape: number[], fill?: number) {
  const values = new Float32Array(shape.reduce((a, b) => a * b, 1));
  for (let i = 0; i < values.length; i++) values[i] = fill ?? normal(0.02);
  return { name, dtype: "BF16" as const, shape, data: encodeBf16(values) };
}

type Tensor = ReturnType<typeof weight>;

function layer(i: number): Tensor[] {
  const p = `model.layers.${i}`;
  return [
    weight(`${p}.input_layernorm.weight`, [HIDDEN], 1),
    weight(`${p}.self_attn.q_proj.weight`, [HEADS * HEAD_DIM, HIDDEN]),
    weight(`${p}.self_attn.k_proj.weight`, [KV_HEADS * HEAD_DIM, HIDDEN]),
    weight(`${p}.self_attn.v_proj.weight`, [KV_HEADS * HEAD_DIM, HIDDEN]),
    weight(`${p}.self_attn.o_proj.weight`, [HIDDEN, HEADS * HEAD_DIM]),
    weight(`${p}.post_attention_layernorm.weight`, [HIDDEN], 1),
    weight(`${p}.mlp.gate_proj.weight`, [FFN, HIDDEN]),
    weight(`${p}.mlp.up_proj.weight`, [FFN, HIDDEN]),
    weight(`${p}.mlp.down_proj.weight`, [HIDDEN, FFN]),
  ];
}

// Shard 1: embeddings and block 0; shard 2: block 1 and the final norm.
// The embedding matrix doubles as the output layer (tie_word_embeddings).
const shards: Tensor[][] = [
  [weight("model.embed_tokens.weight", [VOCAB, HIDDEN]), ...layer(0)],
  [...layer(1), weight("model.norm.weight", [HIDDEN], 1)],
];

// --- A byte-level BPE tokenizer trained on a fixed text -------------------

const TEXT = `aprkit imports machine learning models from the hub and converts them
into the apr format in one pass, in bounded memory, with progress and resume.
the model streams through quantizers into a sink that writes every byte once.
there is nothing on disk but the output, and a restart continues where it stopped.`;

function trainBpe(text: string, vocabSize: number): { vocab: string[]; merges: string[] } {
  // Printable ASCII maps to itself in GPT-2's byte-to-unicode table; a space
  // is written "Ġ" there.
  const symbol = (c: string): string => (c === " " ? "Ġ" : c);
  const vocab = [...SPECIALS];
  for (let c = 0x21; c <= 0x7e; c++) vocab.push(String.fromCharCode(c));
  vocab.push("Ġ");
  const words = text.split(/\s+/).filter(Boolean).map((w) => ["Ġ", ...w].map(symbol));
  const merges: string[] = [];
  while (vocab.length < vocabSize) {
    const counts = new Map<string, number>();
    for (const w of words) {
      for (let i = 0; i + 1 < w.length; i++) {
        const pair = `${w[i]} ${w[i + 1]}`;
        counts.set(pair, (counts.get(pair) ?? 0) + 1);
      }
    }
    // Most frequent pair; ties broken by the pair text so training is deterministic.
    const best = [...counts].sort((a, b) => b[1] - a[1] || (a[0] < b[0] ? -1 : 1))[0];
    if (!best) break;
    const [left, right] = best[0].split(" ") as [string, string];
    merges.push(best[0]);
    vocab.push(left + right);
    for (const w of words) {
      for (let i = 0; i + 1 < w.length; i++) {
        if (w[i] === left && w[i + 1] === right) w.splice(i, 2, left + right);
      }
    }
  }
  return { vocab, merges };
}

const { vocab, merges } = trainBpe(TEXT, VOCAB);
if (vocab.length !== VOCAB) {
  throw new Error(`tokenizer has ${vocab.length} tokens, wanted ${VOCAB}`);
}

const tokenizer = {
  version: "1.0",
  added_tokens: SPECIALS.map((content, id) => ({
    id,
    content,
    single_word: false,
    lstrip: false,
    rstrip: false,
    normalized: false,
    special: true,
  })),
  normalizer: null,
  pre_tokenizer: {
    type: "ByteLevel",
    add_prefix_space: false,
    trim_offsets: true,
    use_regex: true,
  },
  post_processor: null,
  decoder: { type: "ByteLevel", add_prefix_space: true, trim_offsets: true, use_regex: true },
  model: {
    type: "BPE",
    dropout: null,
    unk_token: "<unk>",
    continuing_subword_prefix: null,
    end_of_word_suffix: null,
    fuse_unk: false,
    byte_fallback: false,
    vocab: Object.fromEntries(vocab.map((token, id) => [token, id])),
    merges,
  },
};

const config = {
  architectures: ["LlamaForCausalLM"],
  model_type: "llama",
  hidden_size: HIDDEN,
  intermediate_size: FFN,
  num_hidden_layers: LAYERS,
  num_attention_heads: HEADS,
  num_key_value_heads: KV_HEADS,
  head_dim: HEAD_DIM,
  vocab_size: VOCAB,
  max_position_embeddings: 512,
  rms_norm_eps: 1e-5,
  rope_theta: 10000,
  tie_word_embeddings: true,
  bos_token_id: 1,
  eos_token_id: 2,
  torch_dtype: "bfloat16",
};

const tokenizerConfig = {
  bos_token: "<s>",
  eos_token: "</s>",
  unk_token: "<unk>",
  model_max_length: 512,
  chat_template:
    "{% for m in messages %}<s>{{ m['role'] }}: {{ m['content'] }}</s>{% endfor %}{% if add_generation_prompt %}<s>assistant: {% endif %}",
};

// --- Write the repository ---------------------------------------------------

await Deno.mkdir(OUT, { recursive: true });
const weightMap: Record<string, string> = {};
let totalSize = 0;
for (const [i, tensors] of shards.entries()) {
  const file = `model-${String(i + 1).padStart(5, "0")}-of-${
    String(shards.length).padStart(5, "0")
  }.safetensors`;
  await Deno.writeFile(
    `${OUT}/${file}`,
    encodeSafetensors({ metadata: { format: "pt" }, tensors }),
  );
  for (const t of tensors) {
    weightMap[t.name] = file;
    totalSize += t.data.length;
  }
}
const json = (value: unknown) => `${JSON.stringify(value, null, 2)}\n`;
await Deno.writeTextFile(
  `${OUT}/model.safetensors.index.json`,
  json({ metadata: { total_size: totalSize }, weight_map: weightMap }),
);
await Deno.writeTextFile(`${OUT}/config.json`, json(config));
await Deno.writeTextFile(`${OUT}/tokenizer.json`, json(tokenizer));
await Deno.writeTextFile(`${OUT}/tokenizer_config.json`, json(tokenizerConfig));
console.log(
  `wrote ${OUT}: ${shards.length} shards, ${
    Object.keys(weightMap).length
  } tensors, ${totalSize} bytes of weights`,
);
