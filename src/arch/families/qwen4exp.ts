// This module is browser compatible.

/**
 * Qwen4-Exp's text model (`Qwen4ExpForCausalLM`, Qwen3.8-Flash-Next), after
 * llama.cpp's `Qwen4ExpTextModel` (conversion/qwen4exp.py), GGUF
 * architecture `qwen4exp`.
 *
 * Qwen3.5-MoE's layers (`qwen35.ts`: gated DeltaNet with its value heads
 * tiled, gated full attention, Qwen2-MoE experts with a gated shared one)
 * and three additions:
 * - hyper-connections in place of every RMSNorm: `hc_count` residual
 *   streams mixed before each attention and feed-forward
 *   (`{attn,mlp}_hyper_connection.*` → `hc_{attn,ffn}_*`) and once before
 *   the LM head (`hyper_connection_mixer.*` → `output_hc_*`, there is no
 *   `model.norm`); their grouped norms are stored as `w − 1`, so 1 is added;
 * - QSA sparse attention on the full-attention layers: `indexer.index_qk_proj`
 *   holds the indexer's queries then its one key head, split into
 *   `indexer.q_proj` and `indexer.k_proj`; its q/k norms get 1 added;
 * - PLE n-gram hash embeddings on one linear layer: the table, saved as
 *   `split_ngram_parts` shards, concatenated into `per_layer_token_embd`;
 *   `ple.conv1d` `[channels, 1, kernel]` squeezed; its norms get 1 added; the
 *   int64 hash constants (`layer_multipliers`, `ngram_heads_offsets`,
 *   `ngram_heads_vocab_sizes`, buffers transformers derives from the config)
 *   are written as UINT64 keys, derived here from the config the same way.
 *
 * The multi-token-prediction block is left out, as the converter does.
 * `Qwen4ExpForConditionalGeneration`'s language model is the same model
 * under `model.language_model.` (`multimodal.ts`), with the image token id
 * as `ple.image_token_id`.
 *
 * @module
 */

import { tensorByteLength } from "../../dtype.ts";
import type { TensorInfo } from "../../tensor.ts";
import { type Family, type MadeTensor, TensorConfigMismatch } from "../family.ts";
import type { KvWriter } from "../kv.ts";
import type { Caveat, ConfigFields } from "../config_fields.ts";
import { concatPayloads, rangesInOrder } from "../transforms.ts";
import { QWEN_MOE_EXPERTS } from "./qwen2moe.ts";
import {
  dropsMtp,
  dtBiasName,
  LINEAR_ATTENTION_FIELDS,
  madeFrom,
  QWEN_SHARED_EXPERT_BLOCK,
  qwenNextShift,
} from "./qwen3next.ts";
import { QWEN35_BLOCK, qwen35Made, qwen35Unsupported, writeQwen35Kv } from "./qwen35.ts";

const MASK64 = (1n << 64n) - 1n;
const SPLITMIX_GAMMA = 0x9E3779B97F4A7C15n;

/** transformers' `_splitmix64`. */
function splitmix64(value: bigint): bigint {
  let v = (value + SPLITMIX_GAMMA) & MASK64;
  v = ((v ^ (v >> 30n)) * 0xBF58476D1CE4E5B9n) & MASK64;
  v = ((v ^ (v >> 27n)) * 0x94D049BB133111EBn) & MASK64;
  return (v ^ (v >> 31n)) & MASK64;
}

/** transformers' `_build_layer_multipliers`: one odd multiplier per n-gram position. */
export function pleMultipliers(
  vocab: number,
  ngram: number,
  pleIndex: number,
  seed: number,
): bigint[] {
  const half = (((1n << 63n) - 1n) / BigInt(Math.max(vocab, 1))) / 2n;
  const bound = half > 1n ? half : 1n;
  const base = BigInt(seed) + 10007n * BigInt(pleIndex);
  return Array.from({ length: ngram }, (_, i) => {
    const value = (base + SPLITMIX_GAMMA * BigInt(i + 1)) & MASK64;
    return 2n * (splitmix64(value) % bound) + 1n;
  });
}

function isPrime(n: number): boolean {
  if (n < 2) return false;
  if (n % 2 === 0) return n === 2;
  for (let d = 3; d * d <= n; d += 2) if (n % d === 0) return false;
  return true;
}

/**
 * The n-gram heads' prime vocabulary sizes (transformers' `_find_nth_prime_after`:
 * head h of PLE module p takes the `(p·heads + h + 1)`-th prime above `base − 1`).
 */
export function pleHeadVocabSizes(base: number, heads: number, pleIndex: number): number[] {
  const sizes: number[] = [];
  let prime = base - 1;
  for (let i = 0; i < (pleIndex + 1) * heads; i++) {
    prime++;
    while (!isPrime(prime)) prime++;
    if (i >= pleIndex * heads) sizes.push(prime);
  }
  return sizes;
}

/** The PLE settings of a config with one PLE layer (0-based), or `undefined` without PLE. */
interface Ple {
  readonly layer: number;
  readonly ngram: number;
  readonly heads: number;
  readonly headDim: number;
  /** The n-gram vocabularies' base (`ngram_vocab_size_base`): each head's is the next prime. */
  readonly base: number;
}

function ple(w: KvWriter): Ple | undefined {
  const ids = w.hparams["ple_layer_ids"];
  if (!Array.isArray(ids) || ids.length === 0) return undefined;
  const ngram = w.hparams["ngram_size"] ?? 3;
  const perNgram = w.hparams["heads_per_ngram"] ?? 8;
  if (typeof ngram !== "number" || typeof perNgram !== "number") {
    throw new RangeError("config.json: ngram_size or heads_per_ngram is not a number");
  }
  const heads = (ngram - 1) * perNgram;
  const embed = w.num("ple_embed_dim") ?? w.need("hidden_size");
  const layer = Number(ids[0]) - 1;
  // Checked before the heads' prime vocabularies are searched ((layer + 1) ×
  // heads primes): heads_per_ngram 262144 searched for minutes. Each head
  // has at least one dimension of the embedding, the layer is one of the model's.
  if (
    !Number.isInteger(ngram) || ngram < 2 || !Number.isInteger(perNgram) || perNgram < 1 ||
    heads > embed
  ) {
    throw new RangeError(
      `config.json: ngram_size ${ngram} and heads_per_ngram ${perNgram} make ${heads} n-gram ` +
        `heads, not 1 to the ${embed} dimensions of the per-layer embedding`,
    );
  }
  if (!Number.isInteger(layer) || layer < 0 || layer >= w.need("num_hidden_layers")) {
    throw new RangeError(
      `config.json: ple_layer_ids[0] ${ids[0]} is not one of the model's layers`,
    );
  }
  // The primes are searched upward from it: 1e300 (where +1 is no step) or
  // a list (NaN) never ended. GGUF stores the sizes as u64; 2^32 bounds the
  // search's trial divisions.
  const base = w.hparams["ngram_vocab_size_base"] ?? 20_000_000;
  if (typeof base !== "number" || !Number.isInteger(base) || base < 2 || base > 2 ** 32) {
    throw new RangeError(
      `config.json: ngram_vocab_size_base ${JSON.stringify(base)?.slice(0, 40)} is not a ` +
        `vocabulary size from 2 to 2^32`,
    );
  }
  return { layer, ngram, heads, headDim: Math.trunc(embed / heads), base };
}

/** The one EOS id the PLE hash resets on: the converter takes the list's last, transformers its first. */
function pleEos(w: KvWriter): number | undefined {
  const eos = w.hparams["eos_token_id"];
  if (Array.isArray(eos)) return typeof eos.at(-1) === "number" ? eos.at(-1) as number : undefined;
  return typeof eos === "number" ? eos : undefined;
}

/** `Qwen4ExpTextModel.set_gguf_parameters`. */
function writeQwen4ExpKv(w: KvWriter): void {
  // Its converter class has no MTP export (no_mtp): Qwen3.5's keys without MTP layers.
  w.writeOver({ ...w.hparams, mtp_num_hidden_layers: 0 }, writeQwen35Kv);
  const layers = w.need("num_hidden_layers");
  w.u32("hyper_connection.count", w.need("hc_count"));
  w.u32("hyper_connection.low_rank", w.need("hc_lowrank"));
  w.u32("attention.indexer.head_count", w.need("indexer_n_heads"));
  w.u32("attention.indexer.key_length", w.need("indexer_head_dim"));
  w.u32("attention.indexer.top_k", w.need("indexer_budget"));
  // The converter writes the ratio on the layers whose type is "full_attention",
  // after transformers' config has renamed every such layer "indexed_attention":
  // every ratio is 0, and llama.cpp attends densely (the caveat below).
  w.setArray("attention.compress_ratios", "INT32", Array(layers).fill(0));
  const p = ple(w);
  if (p === undefined) return;
  // Each sizing key names the fields it is computed from (the shape check's message).
  w.computedFrom("ple_layer_ids");
  w.setArray("ple.layers", "INT32", [p.layer]);
  w.computedFrom("ngram_size");
  w.u32("ple.ngram_size", p.ngram);
  w.computedFrom("heads_per_ngram");
  w.u32("ple.heads_per_ngram", p.heads / (p.ngram - 1));
  w.computedFrom("ple_conv_kernel_size");
  w.u32("ple.conv_kernel", w.hparams["ple_conv_kernel_size"] ?? 4);
  w.computedFrom("eos_token_id");
  w.u32("ple.eos_token_id", pleEos(w));
  // The image-text class's image placeholder, which stands in for an image's positions in the hash.
  const image = w.hparams["image_token_id"];
  if (typeof image === "number") w.u32("ple.image_token_id", image);
  w.computedFrom("ple_embed_dim", "ngram_size", "heads_per_ngram");
  w.u32("embedding_length_per_layer_input", p.headDim);
  const sizes = pleHeadVocabSizes(p.base, p.heads, 0);
  const offsets = sizes.map((_, i) => sizes.slice(0, i).reduce((a, b) => a + b, 0));
  const seed = typeof w.hparams["seed"] === "number" ? w.hparams["seed"] as number : 1234;
  const multipliers = pleMultipliers(w.need("vocab_size"), p.ngram, 0, seed);
  w.computedFrom("vocab_size", "ngram_size", "seed");
  w.setArray("ple.layer_multipliers", "UINT64", multipliers.map(String));
  w.computedFrom("ngram_vocab_size_base", "ngram_size", "heads_per_ngram");
  w.setArray("ple.head_offsets", "UINT64", offsets.map(String));
  w.computedFrom("ngram_vocab_size_base", "ngram_size", "heads_per_ngram");
  w.setArray("ple.head_vocab_sizes", "UINT64", sizes.map(String));
}

/**
 * Qwen3.5's refusals, and what llama.cpp's qwen4exp hard-codes: a sigmoid
 * output gate on the linear attention, the QSA indexer with one key head,
 * at most one PLE layer, as wide as the hidden state, one EOS id for the
 * PLE hash.
 */
function unsupported(w: KvWriter): string | undefined {
  const base = qwen35Unsupported(w);
  if (base !== undefined) return base;
  const gate = w.hparams["output_gate_type"] ?? w.hparams["hidden_act"] ?? "silu";
  if (gate !== "sigmoid") {
    return `its config.json has output_gate_type ${
      JSON.stringify(w.hparams["output_gate_type"] ?? null)
    }` +
      ` (the linear attention's output gate: ${gate}); llama.cpp's qwen4exp always gates with sigmoid`;
  }
  if (w.num("indexer_n_heads") === undefined) {
    return "its config.json has no indexer_n_heads (no QSA indexer); llama.cpp's qwen4exp " +
      "needs the indexer";
  }
  // transformers raises on another (the QSA indexer's one key head), llama.cpp loads one.
  const kvHeads = w.hparams["indexer_kv_heads"] ?? 1;
  if (kvHeads !== 1) {
    return `its config.json has indexer_kv_heads ${JSON.stringify(kvHeads)}; the QSA indexer ` +
      "has one key head (transformers requires it, llama.cpp's qwen4exp loads one)";
  }
  const ids = w.hparams["ple_layer_ids"];
  // llama.cpp's PLE projections read hidden_size wide (ple_key, ple_value: n_embd columns).
  const embed = w.hparams["ple_embed_dim"] ?? w.hparams["hidden_size"];
  if (Array.isArray(ids) && ids.length > 0 && embed !== w.hparams["hidden_size"]) {
    return `its config.json has ple_embed_dim ${JSON.stringify(embed)}, not its hidden_size ` +
      `${w.hparams["hidden_size"]}; llama.cpp's qwen4exp reads the n-gram embedding ` +
      "hidden_size wide";
  }
  if (Array.isArray(ids) && ids.length > 1) {
    return `its config.json has ple_layer_ids ${JSON.stringify(ids)}; llama.cpp's qwen4exp ` +
      "supports one PLE layer";
  }
  const eos = w.hparams["eos_token_id"];
  if (Array.isArray(ids) && ids.length === 1 && Array.isArray(eos) && eos.length > 1) {
    if (eos[0] !== eos.at(-1)) {
      return `its config.json has eos_token_id ${JSON.stringify(eos)}; the PLE hash resets on ` +
        `${eos[0]} in transformers, on ${eos.at(-1)} in llama.cpp (the converter writes the last)`;
    }
  }
  return undefined;
}

/**
 * QSA: transformers attends to the `indexer_budget` tokens of the best-scored
 * blocks of `indexer_compress_ratio` plus the incomplete tail; llama.cpp, with
 * the converter's ratios of 0, to every token. They agree while every
 * token is selected: up to `budget + ratio − 1` tokens.
 */
const QSA: Caveat = {
  fields: ["indexer_budget", "indexer_compress_ratio"],
  warn(w) {
    const budget = w.num("indexer_budget");
    const ratio = w.num("indexer_compress_ratio");
    if (budget === undefined || ratio === undefined) return undefined;
    return `config.json's QSA attends to ${budget} tokens of blocks of ${ratio}; llama.cpp's ` +
      `qwen4exp attends to the whole context (its compress ratios are 0, as the converter ` +
      `writes them): it computes otherwise than transformers from a context of ` +
      `${budget + ratio} tokens on`;
  },
};

const QWEN4EXP_FIELDS: ConfigFields = {
  ...LINEAR_ATTENTION_FIELDS,
  written: [
    ...LINEAR_ATTENTION_FIELDS.written!,
    "hc_count",
    "hc_lowrank",
    "indexer_n_heads",
    "indexer_head_dim",
    "ple_layer_ids",
    "ple_conv_kernel_size",
    "ngram_size",
    "heads_per_ngram",
    "ngram_vocab_size_base",
    "seed",
    "num_experts",
    "num_experts_per_tok",
  ],
  checked: [
    ...LINEAR_ATTENTION_FIELDS.checked!,
    "output_gate_type",
    "indexer_kv_heads",
    "ple_embed_dim",
  ],
  caveats: [QSA],
  irrelevant: {
    ...LINEAR_ATTENTION_FIELDS.irrelevant,
    make_ngram_vocab_size_divisible_by:
      "pads the n-gram table's rows, which the tensor's shape carries (a table of other rows, " +
      "which transformers cannot load, is refused: pleTable)",
    split_ngram_parts: "how many shards the n-gram table is saved in; they are concatenated",
    number_of_conv_states: "transformers' cache layout, derived from ple_layer_ids",
  },
  assumed: [
    ...LINEAR_ATTENTION_FIELDS.assumed!,
    { field: "norm_topk_prob", hfDefault: true, llamaCpp: true },
  ],
};

/** `model.layers.N.<rest>` of a tensor name. */
const LAYER = /^model\.layers\.(\d+)\.(.+)$/;

/** The n-gram table's shards, in shard order. */
const SHARD = /^model\.layers\.(\d+)\.ple\.ple_embedding\.ngram_embedding\.shard_(\d+)\.weight$/;

/** `Qwen4ExpTextModel.modify_tensors` on top of Qwen3.5's. */
function qwen4ExpMade(tensors: readonly TensorInfo[], w: KvWriter): MadeTensor[] {
  const made = [...qwen35Made(tensors, w)];
  const shards: [number, TensorInfo][] = [];
  for (const info of tensors) {
    const s = SHARD.exec(info.name);
    if (s !== null) {
      shards.push([Number(s[2]), info]);
      continue;
    }
    const m = LAYER.exec(info.name);
    if (m === null) continue;
    const blk = `blk.${m[1]}`;
    if (m[2] === "self_attn.indexer.index_qk_proj.weight") {
      const nq = w.need("indexer_n_heads") * w.need("indexer_head_dim");
      const [rows, cols] = [info.shape[0] ?? 0, info.shape[1] ?? 0];
      if (info.shape.length !== 2 || rows <= nq) {
        throw new RangeError(
          `Cannot convert "${info.name}" [${info.shape}] to GGUF: expected more than ${nq} rows ` +
            `(the indexer's queries, then its key)`,
        );
      }
      const rowBytes = tensorByteLength(info.dtype, [cols]);
      made.push(
        madeFrom(
          info,
          `${blk}.indexer.q_proj.weight`,
          [nq, cols],
          (open) => rangesInOrder(open, [[0, nq * rowBytes]]),
        ),
        madeFrom(
          info,
          `${blk}.indexer.k_proj.weight`,
          [rows - nq, cols],
          (open) => rangesInOrder(open, [[nq * rowBytes, rows * rowBytes]]),
        ),
      );
    } else if (m[2] === "ple.conv1d.weight") {
      const shape = info.shape.filter((n) => n !== 1);
      made.push(madeFrom(info, `${blk}.ple_conv1d.weight`, shape, (open) => open()));
    }
  }
  if (shards.length > 0) {
    made.push(pleTable(shards.sort((a, b) => a[0] - b[0]).map(([, i]) => i), w));
  }
  return made;
}

/**
 * The shards' rows one after another, as `per_layer_token_embd`: as many as
 * transformers builds the table with (the heads' prime vocabularies, padded
 * to `make_ngram_vocab_size_divisible_by`), else it cannot load the
 * checkpoint its config describes (llama.cpp loads the table by its rows).
 */
function pleTable(shards: readonly TensorInfo[], w: KvWriter): MadeTensor {
  const first = shards[0]!;
  const cols = first.shape[1] ?? 0;
  for (const s of shards) {
    if (s.shape.length !== 2 || s.shape[1] !== cols || s.dtype !== first.dtype) {
      throw new RangeError(
        `Cannot convert "${s.name}" ${s.dtype} [${s.shape}] to GGUF: the n-gram table's shards ` +
          `must share one type and row width (${first.dtype}, ${cols})`,
      );
    }
  }
  const shape = [shards.reduce((n, s) => n + s.shape[0]!, 0), cols];
  const p = ple(w);
  const divisor = w.hparams["make_ngram_vocab_size_divisible_by"] ?? 128;
  // Rows once the heads agree with its width (a width they contradict is the key check's).
  if (
    p !== undefined && cols === p.headDim && Number.isSafeInteger(divisor) &&
    (divisor as number) > 0
  ) {
    const total = pleHeadVocabSizes(p.base, p.heads, 0).reduce((a, b) => a + b, 0);
    const padded = Math.ceil(total / (divisor as number)) * (divisor as number);
    if (shape[0] !== padded) {
      throw new TensorConfigMismatch(
        first.name,
        `the n-gram table's ${shards.length} shards hold ${shape[0]} rows, but config.json's ` +
          `ngram_vocab_size_base ${p.base}, ${p.heads} heads (ngram_size, heads_per_ngram) and ` +
          `make_ngram_vocab_size_divisible_by ${divisor} make ${padded}, as transformers ` +
          "builds the table",
      );
    }
  }
  return {
    info: {
      name: "per_layer_token_embd.weight",
      dtype: first.dtype,
      shape,
      byteLength: tensorByteLength(first.dtype, shape),
    },
    needs: shards.map((s) => s.name),
    open: (sources) => concatPayloads(sources.map((s) => () => s.open())),
  };
}

/** The hash constants, written as keys instead. */
function drops(name: string): boolean {
  return dropsMtp(name) ||
    /\.ple\.ple_embedding\.(layer_multipliers|ngram_heads_offsets|ngram_heads_vocab_sizes)$/.test(
      name,
    );
}

/** Every RMSNorm but the linear attention's gated one is stored as `w − 1` (PLE's three too). */
function shift(ggufName: string): number {
  if (/\.ple_norm_(key|query|conv)\.weight$/.test(ggufName)) return 1;
  return qwenNextShift(ggufName);
}

/** Qwen3.8-Flash-Next. */
export const QWEN4EXP: Family = {
  name: "qwen4exp",
  // Gated DeltaNet layers between the attending ones.
  hybrid: true,
  source: "llama.cpp conversion/qwen4exp.py Qwen4ExpTextModel; transformers Qwen4ExpForCausalLM",
  configFields: QWEN4EXP_FIELDS,
  hfArchitectures: ["Qwen4ExpForCausalLM"],
  hfModelTypes: ["qwen4_exp_text", "qwen4_exp"],
  ggufArchitecture: "qwen4exp",
  ggufRopeType: "imrope",
  globalNames: [
    ["token_embd", "model.embed_tokens"],
    ["output", "lm_head"],
    ["output_hc_norm", "model.hyper_connection_mixer.hc_norm"],
    ["output_hc_down", "model.hyper_connection_mixer.input_mix_weight_down"],
    ["output_hc_up", "model.hyper_connection_mixer.input_mix_weight_up"],
  ],
  blockNames: [
    // No layer norms: the hyper-connections' grouped norms stand in for them.
    // Without the MTP layers' names (its converter class exports none).
    ...QWEN35_BLOCK.filter(([g]) =>
      g !== "attn_norm" && g !== "post_attention_norm" && !g.startsWith("nextn.")
    ),
    ...QWEN_SHARED_EXPERT_BLOCK,
    ["hc_attn_norm", "attn_hyper_connection.hc_norm"],
    ["hc_attn_down", "attn_hyper_connection.input_mix_weight_down"],
    ["hc_attn_up", "attn_hyper_connection.input_mix_weight_up"],
    ["hc_attn_inject", "attn_hyper_connection.block_inject_weight"],
    ["hc_ffn_norm", "mlp_hyper_connection.hc_norm"],
    ["hc_ffn_down", "mlp_hyper_connection.input_mix_weight_down"],
    ["hc_ffn_up", "mlp_hyper_connection.input_mix_weight_up"],
    ["hc_ffn_inject", "mlp_hyper_connection.block_inject_weight"],
    ["indexer.q_norm", "self_attn.indexer.q_layernorm"],
    ["indexer.k_norm", "self_attn.indexer.k_layernorm"],
    ["ple_key", "ple.key_proj"],
    ["ple_value", "ple.value_proj"],
    ["ple_norm_key", "ple.norm_key"],
    ["ple_norm_query", "ple.norm_query"],
    ["ple_norm_conv", "ple.norm_conv"],
  ],
  experts: QWEN_MOE_EXPERTS,
  permutesQk: false,
  tiedByDefault: false,
  ggufRenamesOnly: false,
  gguf: {
    writeKv: writeQwen4ExpKv,
    unsupported,
    made: qwen4ExpMade,
    shift,
    hfName: dtBiasName,
    drops,
  },
  ggufReadBackRefusal:
    "aprkit does not read a Qwen4-Exp GGUF back into Hugging Face's layout (ssm_a is " +
    "−exp(A_log), the linear attention's projections are regrouped, the n-gram hash " +
    "constants are keys); --keep-names keeps its GGUF tensors",
};
