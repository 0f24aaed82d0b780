/**
 * Tiny Hugging Face checkpoints around a real tokenizer, built the same way
 * on every machine: one or two decoder layers of seeded random BF16 weights
 * (mulberry32), `config.json` of the family, the tokenizer's files copied.
 * Used by the tokenizer tests and by the llama.cpp-converter sha256 test
 * (`tests/testdata/converter/make_reference.sh` writes the same folders with
 * `deno run` before running llama.cpp's converter on them).
 */

import { encodeSafetensors } from "../../src/formats/safetensors/encode.ts";
import { encodeBf16 } from "../../src/quant/bf16.ts";

/** A family's tiny shape. */
export interface TinyFamily {
  /** `architectures[0]`. */
  architecture: string;
  /** `model_type`. */
  modelType: string;
  /** Extra config.json fields (e.g. Qwen3's head_dim). */
  config?: Record<string, unknown>;
  /** Per-layer tensors besides the llama ones (Qwen3's q_norm/k_norm, Qwen2's biases). */
  extra?: "qwen2-bias" | "qwen3-norm";
}

/** The families whose checkpoints aprkit converts today, by name. */
export const TINY_FAMILIES: Record<string, TinyFamily> = {
  llama: { architecture: "LlamaForCausalLM", modelType: "llama" },
  mistral: { architecture: "MistralForCausalLM", modelType: "mistral" },
  qwen2: { architecture: "Qwen2ForCausalLM", modelType: "qwen2", extra: "qwen2-bias" },
  qwen3: { architecture: "Qwen3ForCausalLM", modelType: "qwen3", extra: "qwen3-norm" },
};

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

/** Options of {@linkcode writeTinyCheckpoint}. */
export interface TinyCheckpointOptions {
  /** Hidden size (and FFN size); rows of 256 let K-quants apply. @default 16 */
  hidden?: number;
  /** Decoder layers. @default 1 */
  layers?: number;
  /** All weights zero (the tokenizer tests need none). @default false */
  zeros?: boolean;
  /** `generation_config.json` to write. @default none */
  generationConfig?: Record<string, unknown>;
}

/**
 * Write a tiny checkpoint to `folder` (created), with the tokenizer files of `tokenizerDir`.
 *
 * @param folder Where to write.
 * @param tokenizerDir Folder with `tokenizer.json` and `tokenizer_config.json`.
 * @param vocabSize Embedding rows (`vocab_size`).
 * @param family The family's shape.
 * @param options Size and fill.
 */
export async function writeTinyCheckpoint(
  folder: string,
  tokenizerDir: string,
  vocabSize: number,
  family: TinyFamily = TINY_FAMILIES.llama!,
  options: TinyCheckpointOptions = {},
): Promise<void> {
  const hidden = options.hidden ?? 16;
  const layers = options.layers ?? 1;
  const heads = 2;
  const kvHeads = 1;
  const headDim = hidden / heads;
  await Deno.mkdir(folder, { recursive: true });
  for (const file of ["tokenizer.json", "tokenizer_config.json"]) {
    await Deno.copyFile(`${tokenizerDir}/${file}`, `${folder}/${file}`);
  }
  await Deno.writeTextFile(
    `${folder}/config.json`,
    JSON.stringify(
      {
        architectures: [family.architecture],
        model_type: family.modelType,
        hidden_size: hidden,
        intermediate_size: hidden,
        num_hidden_layers: layers,
        num_attention_heads: heads,
        num_key_value_heads: kvHeads,
        head_dim: headDim,
        vocab_size: vocabSize,
        max_position_embeddings: 64,
        rms_norm_eps: 1e-6,
        rope_theta: 10000,
        tie_word_embeddings: true,
        torch_dtype: "bfloat16",
        ...family.config,
      },
      null,
      2,
    ) + "\n",
  );
  if (options.generationConfig !== undefined) {
    await Deno.writeTextFile(
      `${folder}/generation_config.json`,
      JSON.stringify(options.generationConfig, null, 2) + "\n",
    );
  }
  const uniform = random(20261125);
  const tensor = (name: string, shape: number[], fill?: number) => {
    const values = new Float32Array(shape.reduce((a, b) => a * b, 1));
    if (!options.zeros) {
      for (let i = 0; i < values.length; i++) values[i] = fill ?? (uniform() - 0.5) * 0.1;
    }
    return { name, dtype: "BF16" as const, shape, data: encodeBf16(values) };
  };
  const tensors = [tensor("model.embed_tokens.weight", [vocabSize, hidden])];
  for (let i = 0; i < layers; i++) {
    const p = `model.layers.${i}`;
    tensors.push(
      tensor(`${p}.input_layernorm.weight`, [hidden], 1),
      tensor(`${p}.self_attn.q_proj.weight`, [heads * headDim, hidden]),
      tensor(`${p}.self_attn.k_proj.weight`, [kvHeads * headDim, hidden]),
      tensor(`${p}.self_attn.v_proj.weight`, [kvHeads * headDim, hidden]),
      tensor(`${p}.self_attn.o_proj.weight`, [hidden, heads * headDim]),
      tensor(`${p}.post_attention_layernorm.weight`, [hidden], 1),
      tensor(`${p}.mlp.gate_proj.weight`, [hidden, hidden]),
      tensor(`${p}.mlp.up_proj.weight`, [hidden, hidden]),
      tensor(`${p}.mlp.down_proj.weight`, [hidden, hidden]),
    );
    if (family.extra === "qwen2-bias") {
      tensors.push(
        tensor(`${p}.self_attn.q_proj.bias`, [heads * headDim]),
        tensor(`${p}.self_attn.k_proj.bias`, [kvHeads * headDim]),
        tensor(`${p}.self_attn.v_proj.bias`, [kvHeads * headDim]),
      );
    }
    if (family.extra === "qwen3-norm") {
      tensors.push(
        tensor(`${p}.self_attn.q_norm.weight`, [headDim], 1),
        tensor(`${p}.self_attn.k_norm.weight`, [headDim], 1),
      );
    }
  }
  tensors.push(tensor("model.norm.weight", [hidden], 1));
  // Sorted by name, as the safetensors library writes a checkpoint (and its readers list it).
  tensors.sort((a, b) => a.name < b.name ? -1 : a.name > b.name ? 1 : 0);
  await Deno.writeFile(
    `${folder}/model.safetensors`,
    encodeSafetensors({ metadata: { format: "pt" }, tensors }),
  );
}

if (import.meta.main) {
  // deno run -A tests/interop/_tiny_checkpoint.ts OUT TOKENIZER_DIR VOCAB FAMILY HIDDEN LAYERS
  const [out, tokenizerDir, vocab, family, hidden, layers] = Deno.args;
  await writeTinyCheckpoint(out!, tokenizerDir!, Number(vocab), TINY_FAMILIES[family!]!, {
    hidden: Number(hidden),
    layers: Number(layers),
  });
}
