// This module is browser compatible.

/**
 * A model is what its config says (issue 34 §1): every tensor is a kind its
 * architecture has, in a block the config counts, with the shape the
 * hyperparameters imply, and no block is missing — checked before anything
 * is written, for GGUF input (the kinds of gguf-py's `MODEL_TENSORS`, the
 * `{arch}.*` keys) and Hugging Face input (the family's names, `config.json`).
 *
 * What is checked of a shape is what every architecture here shares, so
 * irregular layouts stay correct: the residual width (hidden size) on the
 * residual side of every norm, embedding, attention and feed-forward matrix,
 * the expert count of stacked experts and routers, and — where the
 * hyperparameters are one number for all layers — the attention heads × head
 * size and the feed-forward width. Kinds whose sizes come from elsewhere
 * (MLA's low-rank projections, Gemma 3n's AltUp and per-layer inputs, SSM
 * tensors) are checked by name and block only.
 *
 * @module
 */

import type { TensorInfo } from "../tensor.ts";
import {
  type Family,
  type LayerTensors,
  type MadeTensor,
  type MoeLayers,
  TensorConfigMismatch,
} from "./family.ts";
import { withConfigDefaults } from "./config_defaults.ts";
import { ggufTensorKind } from "./gguf_tensors.ts";
import { keptNvfp4Tensors } from "./kept_blocks.ts";
import { type Keys, keyShapeProblem } from "./key_shapes.ts";
import { KvWriter, record } from "./kv.ts";
import { hfToGgufName } from "./names.ts";
import { mtpCountLabel, sourceNamer, trunkLayers } from "./nextn.ts";
import { familiesOfGguf } from "./registry.ts";

/** A tensor as a file holds it. */
export interface ShapedTensor {
  /** Its name in the file. */
  readonly name: string;
  /** Row-major shape (`[rows, cols]`; a GGUF's `ne` reversed). */
  readonly shape: readonly number[];
  /** The file (shard) holding it, for the message. */
  readonly file?: string;
  /**
   * Its shape is the stored one, not the matrix's (a quantized checkpoint's
   * packed weights kept for GGUF): checked for its name and layer only.
   */
  readonly packed?: boolean;
}

/** Why a model does not match its config: one tensor (or block) and what is wrong. */
export interface ShapeProblem {
  /** The tensor's name in the file, or a block (`block 1`). */
  readonly tensor: string;
  /** The file (shard) holding it, when known. */
  readonly file?: string;
  /** What is wrong, e.g. `shape [64, 0], expected [64]`. */
  readonly reason: string;
}

/** The sizes a shape follows from. */
type Size =
  | "hidden"
  | "heads"
  | "kvHeads"
  | "keyLength"
  | "valueLength"
  | "ff"
  | "experts"
  | "latent"
  | "vocab";

/** The hyperparameters a shape follows from; `undefined`: not one number for the model. */
interface Dims {
  readonly blocks: number;
  /**
   * Blocks that must hold tensors: all but the multi-token-prediction ones,
   * which llama.cpp loads when present (a checkpoint may leave them out).
   */
  readonly required: number;
  /** Where `blocks` comes from, for the message. */
  readonly blocksKey: string;
  readonly hidden: number;
  /** Whether every counted block has the attention tensors block 0 has. */
  readonly everyBlockAttends: boolean;
  /**
   * The first layer that may lack K and V (Gemma 3n's layers sharing an
   * earlier layer's KV, which transformers 5 saves without them).
   */
  readonly kvSharedFrom?: number | undefined;
  /** Where each size comes from, for the message (`hidden_size`, `llama.embedding_length`). */
  readonly labels: Readonly<Record<Size, string>>;
  /** Before the labels in the message (`config.json: `), or `""`. */
  readonly labelPrefix: string;
  readonly heads?: number | undefined;
  readonly kvHeads?: number | undefined;
  readonly keyLength?: number | undefined;
  readonly valueLength?: number | undefined;
  readonly ff?: number | undefined;
  readonly experts?: number | undefined;
  /**
   * The width the routed experts read and write, where it is not the hidden
   * size (Nemotron 3 Super's LatentMoE: `moe_latent_size`, the latent
   * projections between).
   */
  readonly latent?: number | undefined;
  /** The token embedding's rows (`vocab_size`), where the config says them. */
  readonly vocab?: number | undefined;
}

/** A tensor read as a kind (gguf-py's `MODEL_TENSOR`) of the architecture. */
interface Kinded {
  readonly t: ShapedTensor;
  /** `undefined`: no kind the architecture has (a Hugging Face tensor the family renames itself). */
  readonly kind: string | undefined;
  readonly block: number | undefined;
  readonly suffix: string;
  /** Per-expert Hugging Face tensor: its matrix has no expert dimension. */
  readonly perExpert?: boolean;
  /** Stored `[in, out]` (GPT-2's `Conv1D`): its shape is the matrix's reversed. */
  readonly transposed?: boolean;
  /**
   * Stacked experts stored `[experts, in, out]` (transformers 5's
   * `gate_up_proj` `[experts, hidden, 2 × ff]` and `down_proj`
   * `[experts, ff, hidden]` where the family's layout says so): each
   * matrix is its last two axes swapped.
   */
  readonly matricesTransposed?: boolean;
}

/** 1-D tensors as wide as the residual stream. */
const RESIDUAL_NORMS = new Set([
  "ATTN_NORM",
  "ATTN_NORM_2",
  "FFN_NORM",
  "FFN_PRE_NORM",
  "FFN_POST_NORM",
  "ATTN_POST_NORM",
  "OUTPUT_NORM",
  "TOKEN_EMBD_NORM",
  "LAYER_OUT_NORM",
  "FFN_PRE_NORM_2",
  "FFN_POST_NORM_1",
  "FFN_POST_NORM_2",
]);
/** Matrices reading the residual stream (their columns are the hidden size). */
const READ_RESIDUAL = new Set([
  "TOKEN_EMBD",
  "OUTPUT",
  "ATTN_Q",
  "ATTN_K",
  "ATTN_V",
  "ATTN_QKV",
  "FFN_GATE",
  "FFN_UP",
  "FFN_GATE_SHEXP",
  "FFN_UP_SHEXP",
  "FFN_GATE_INP",
  "FFN_GATE_EXP",
  "FFN_UP_EXP",
  "FFN_GATE_UP_EXP",
]);
/** Matrices writing the residual stream (their rows are the hidden size). */
const WRITE_RESIDUAL = new Set(["ATTN_OUT", "FFN_DOWN", "FFN_DOWN_SHEXP", "FFN_DOWN_EXP"]);
/**
 * A LatentMoE's projections into and out of the experts' width (`latent`,
 * the hidden size where the config gives none, as llama.cpp loads them).
 */
const LATENT_PROJECTIONS = new Set(["MOE_LATENT_DOWN", "MOE_LATENT_UP"]);
/** Stacked experts: a leading dimension of the expert count. */
const EXPERT_STACKS = new Set([
  "FFN_GATE_EXP",
  "FFN_UP_EXP",
  "FFN_DOWN_EXP",
  "FFN_GATE_UP_EXP",
]);

/**
 * Architectures whose attention rows are not heads × head size of one
 * number (each converter file and fixture of the others is checked so:
 * tests/arch/model_shape_test.ts). A width given per layer (Gemma 3n's
 * `intermediate_size` list) is no one number and is not checked.
 */
const IRREGULAR_HEADS = new Set([
  "deepseek2", // MLA: Q is heads × (nope + rope), K/V come low-rank, O reads heads × v_head_dim
  "qwen3next", // gated attention: Q holds each head's query and gate (2 × heads × head_dim)
  "qwen35", // the same
  "qwen35moe", // the same
  "deepseek32", // MLA, as deepseek2
  "glm-dsa", // the same
  "gemma4", // full-attention layers' heads are wider (global_head_dim) and may have other KV heads
  "minicpm3", // MLA, as deepseek2
  "mimo2", // the sliding layers have twice the KV heads; V heads are narrower (v_head_dim)
  "kimi-linear", // MLA, as deepseek2; KDA layers of their own head size
  "hy_v4", // MLA, as deepseek2
  "qwen4exp", // gated attention, as qwen35
  "gemma4-assistant", // as gemma4
]);

/** Architectures whose dense FFN is not `feed_forward_length` wide in every block. */
const IRREGULAR_FF = new Set([
  "phi3", // ffn_up is gate and up fused: 2 × feed_forward_length rows
  "glm4", // the same
  "chatglm", // the same (GLM-4-9B's gate_up_proj)
  "modern-bert", // the same (GeGLU's Wi)
  "jina-bert-v2", // the same (GEGLU's gated_layers)
  "gemma4", // the layers sharing KV have a double-wide MLP (use_double_wide_mlp)
]);

/**
 * Architectures whose layers may have K without V: llama.cpp then uses K as
 * V (Gemma 4's full-attention layers with `attention_k_eq_v`).
 */
const V_FROM_K = new Set(["gemma4"]);

/**
 * Architectures whose file holds fewer blocks than `block_count` counts:
 * HRM-Text's counts its cycles' cache slots (layers per stack × H cycles ×
 * (L cycles + 1)), and the file holds its L and H stacks once each.
 */
const STORED_BLOCKS: Readonly<Record<string, (kv: (key: string) => unknown) => unknown>> = {
  hrm_text: (kv) => {
    const perStack = kv("hrm_text.hrm.layers_per_stack");
    return typeof perStack === "number" ? 2 * perStack : undefined;
  },
};

/**
 * Checkpoints whose layers are not `model.layers.N`: HRM-Text's L and H
 * stacks (`model.{L,H}_module.layers.N`), which its GGUF holds as blocks N
 * and `layers_per_stack + N` (the converter's names on the way: `attn.` read
 * as `self_attn.`), 2 × `layers_per_stack` blocks though `num_hidden_layers`
 * counts the cycles.
 */
const HF_STACKS: Readonly<
  Record<string, {
    blocks(h: Readonly<Record<string, unknown>>): number | undefined;
    name(name: string, h: Readonly<Record<string, unknown>>): string;
  }>
> = {
  hrm_text: {
    blocks: (h) => {
      const perStack = num(h["num_layers_per_stack"]) ?? num(h["num_hidden_layers"]);
      return perStack === undefined ? undefined : 2 * perStack;
    },
    name: (name, h) => {
      const perStack = num(h["num_layers_per_stack"]) ?? num(h["num_hidden_layers"]) ?? 0;
      return name.replace(
        /^model\.([LH])_module\.layers\.(\d+)\.(attn\.)?/,
        (_, stack: string, n: string, attn: string | undefined) =>
          `model.layers.${Number(n) + (stack === "H" ? perStack : 0)}.${attn ? "self_attn." : ""}`,
      );
    },
  },
};

const fmt = (shape: readonly (number | undefined)[]) =>
  `[${shape.map((d) => d ?? "*").join(", ")}]`;

/** The sizes a kind's shape follows from, as the message names them. */
function sizesOf(kind: string, d: Dims): string {
  // A norm is as wide as the residual stream, whatever else the config says.
  const sizes: Size[] = RESIDUAL_NORMS.has(kind)
    ? ["hidden"]
    : kind.startsWith("ATTN_")
    ? ["hidden", "heads", "kvHeads", "keyLength", "valueLength"]
    : kind.endsWith("_EXP")
    ? ["hidden", "latent", "experts"]
    : kind === "FFN_GATE_INP"
    ? ["hidden", "experts"]
    : LATENT_PROJECTIONS.has(kind)
    ? ["hidden", "latent"]
    : kind.startsWith("FFN_")
    ? ["hidden", "ff"]
    : kind === "TOKEN_EMBD"
    ? ["vocab", "hidden"]
    : ["hidden"];
  const named = sizes.filter((s) => d[s] !== undefined).map((s) => `${d.labels[s]} ${d[s]}`);
  return d.labelPrefix + named.join(", ");
}

/** The expected shape of one tensor, `undefined` entries unchecked; `undefined`: nothing to check. */
function expected(k: Kinded, d: Dims, arch: string): (number | undefined)[] | undefined {
  const kind = k.kind;
  if (kind === undefined) return undefined;
  const stacked = EXPERT_STACKS.has(kind) && k.perExpert !== true;
  // A per-tensor or per-expert factor (`.scale`, NVFP4's `.input_scale`): sized by what it
  // scales, not checked.
  if (k.suffix === ".scale" || k.suffix === ".input_scale") return undefined;
  if (k.suffix === ".bias") {
    if (WRITE_RESIDUAL.has(kind) || RESIDUAL_NORMS.has(kind)) {
      return stacked ? [d.experts, d.hidden] : [d.hidden];
    }
    return undefined;
  }
  if (RESIDUAL_NORMS.has(kind)) return [d.hidden];
  if (kind === "MOE_LATENT_DOWN") return [d.latent ?? d.hidden, d.hidden];
  if (kind === "MOE_LATENT_UP") return [d.hidden, d.latent ?? d.hidden];
  const lead = stacked ? [d.experts] : [];
  // Routed experts read and write the latent width where there is one.
  const hidden = EXPERT_STACKS.has(kind) ? d.latent ?? d.hidden : d.hidden;
  if (WRITE_RESIDUAL.has(kind)) {
    const ff = kind === "FFN_DOWN" && !IRREGULAR_FF.has(arch) ? d.ff : undefined;
    const attn = kind === "ATTN_OUT" && !IRREGULAR_HEADS.has(arch) && d.heads !== undefined
      ? d.heads * (d.valueLength ?? d.keyLength ?? d.hidden / d.heads)
      : undefined;
    return [...lead, hidden, ff ?? attn];
  }
  if (READ_RESIDUAL.has(kind)) {
    const head = d.heads === undefined ? undefined : d.keyLength ?? d.hidden / d.heads;
    const value = d.heads === undefined ? undefined : d.valueLength ?? head;
    const regular = !IRREGULAR_HEADS.has(arch);
    const rows = kind === "FFN_GATE_INP"
      ? d.experts
      : kind === "TOKEN_EMBD"
      ? d.vocab
      : kind === "ATTN_Q" && regular && head !== undefined
      ? d.heads! * head
      : kind === "ATTN_K" && regular && head !== undefined && d.kvHeads !== undefined
      ? d.kvHeads * head
      : kind === "ATTN_V" && regular && value !== undefined && d.kvHeads !== undefined
      ? d.kvHeads * value
      : (kind === "FFN_GATE" || kind === "FFN_UP") && !IRREGULAR_FF.has(arch)
      ? d.ff
      : undefined;
    return [...lead, rows, hidden];
  }
  return undefined;
}

/** A stack of matrices with each one transposed: its last two axes swapped. */
function swapLast<T>(shape: readonly T[]): T[] {
  const n = shape.length;
  return n < 2 ? [...shape] : [...shape.slice(0, n - 2), shape[n - 1]!, shape[n - 2]!];
}

function mismatch(shape: readonly number[], want: readonly (number | undefined)[]): boolean {
  return shape.length !== want.length ||
    shape.some((n, i) => want[i] !== undefined ? n !== want[i] : !(n > 0));
}

/** The common rules over tensors read as kinds. */
function check(kinded: readonly Kinded[], d: Dims, arch: string): ShapeProblem | undefined {
  const seen = new Set<number>();
  for (const k of kinded) {
    const at = k.t.file === undefined ? {} : { file: k.t.file };
    if (k.block !== undefined) {
      if (k.block >= d.blocks) {
        return {
          tensor: k.t.name,
          ...at,
          reason: `layer ${k.block}, but the model has ${d.blocks} (${d.blocksKey})`,
        };
      }
      seen.add(k.block);
    }
    const matrix = expected(k, d, arch);
    // A transposed tensor is compared as the file stores it.
    const want = k.t.packed === true
      ? undefined
      : k.transposed === true && matrix !== undefined
      ? [...matrix].reverse()
      : k.matricesTransposed === true && matrix !== undefined
      ? swapLast(matrix)
      : matrix;
    if (want !== undefined && mismatch(k.t.shape, want)) {
      return {
        tensor: k.t.name,
        ...at,
        reason: `shape ${fmt(k.t.shape)}, expected ${fmt(want)} (${sizesOf(k.kind!, d)})`,
      };
    }
  }
  // A file with no block tensor at all (a fragment of a checkpoint, as
  // quantization tests use) is checked for its tensors only.
  for (let b = 0; b < (seen.size > 0 ? d.required : 0); b++) {
    if (!seen.has(b)) {
      return {
        tensor: `layer ${b}`,
        reason: `no tensor of it, though ${d.blocksKey} is ${d.blocks}`,
      };
    }
  }
  return misplacedPrediction(kinded, d) ??
    (d.everyBlockAttends ? missingAttention(kinded, d, arch) : undefined);
}

/**
 * A multi-token-prediction layer (its `eh_proj`) where the config counts a
 * model layer, or a layer the config counts as a prediction layer without
 * one: `num_hidden_layers` one lower made DeepSeek-V3's last layer its MTP
 * layer, which the converter drops (a file of one layer fewer), exit 0.
 */
function misplacedPrediction(kinded: readonly Kinded[], d: Dims): ShapeProblem | undefined {
  if (d.blocks === d.required) return undefined;
  // Under the family's GGUF name, or under the checkpoint's (DeepSeek-V3's
  // `model.layers.61.eh_proj`, which its family does not map: the converter drops it).
  const heads = kinded.filter((k) =>
    k.block !== undefined && (k.kind === "NEXTN_EH_PROJ" || /\.eh_proj\.weight$/.test(k.t.name))
  );
  for (const k of heads) {
    if (k.block! >= d.required) continue;
    return {
      tensor: k.t.name,
      ...k.t.file === undefined ? {} : { file: k.t.file },
      reason:
        `a multi-token-prediction tensor in layer ${k.block}, one of the model's ${d.required} ` +
        `layers by ${d.blocksKey}`,
    };
  }
  // A prediction layer may be left out of a checkpoint, but one that is there has its eh_proj.
  const has = new Set(heads.map((k) => k.block!));
  const held = kinded.find((k) =>
    k.block !== undefined && k.block >= d.required && k.block < d.blocks && !has.has(k.block)
  );
  if (held === undefined) return undefined;
  return {
    tensor: held.t.name,
    ...held.t.file === undefined ? {} : { file: held.t.file },
    reason: `layer ${held.block} has no multi-token-prediction tensor (eh_proj), though ` +
      `${d.blocksKey} makes it a prediction layer, which the converter drops`,
  };
}

/**
 * Attention and its norm are in every layer of the architectures aprkit
 * knows (dense, MoE, MLA, interleaved or not; a hybrid's SSM layers are not
 * among them): each attention tensor layer 0 has, every counted layer has.
 */
const ATTENTION = new Set([
  "ATTN_NORM",
  "ATTN_Q",
  "ATTN_K",
  "ATTN_V",
  "ATTN_QKV",
  "ATTN_OUT",
  "ATTN_Q_A",
  "ATTN_Q_B",
  "ATTN_KV_A_MQA",
  "ATTN_K_B",
  "ATTN_V_B",
]);

function missingAttention(
  kinded: readonly Kinded[],
  d: Dims,
  arch: string,
): ShapeProblem | undefined {
  const byBlock = new Map<number, Set<string>>();
  const first = new Map<string, ShapedTensor>();
  for (const k of kinded) {
    if (k.block === undefined || k.kind === undefined || !ATTENTION.has(k.kind)) continue;
    const key = `${k.kind}${k.suffix}`;
    byBlock.set(k.block, (byBlock.get(k.block) ?? new Set()).add(key));
    if (k.block === 0 && !first.has(key)) first.set(key, k.t);
  }
  for (let b = 1; b < d.required; b++) {
    const has = byBlock.get(b) ?? new Set();
    for (const [key, t] of first) {
      if (has.has(key)) continue;
      if (b >= (d.kvSharedFrom ?? Infinity) && /^ATTN_[KV]\./.test(key)) continue;
      if (V_FROM_K.has(arch) && key.startsWith("ATTN_V.") && has.has(`ATTN_K${key.slice(6)}`)) {
        continue;
      }
      // Layer 0's tensor under layer b's number (its first numeric segment).
      const name = t.name.replace(/(^|\.)0\./, `$1${b}.`);
      return {
        tensor: name,
        ...t.file === undefined ? {} : { file: t.file },
        reason: `missing: layer 0 has "${t.name}" and every layer has its attention`,
      };
    }
  }
  return undefined;
}

const num = (v: unknown): number | undefined =>
  typeof v === "number" && Number.isSafeInteger(v) && v > 0 ? v : undefined;

/**
 * A config's width or KV head count, 0 included: 0 is written as the key
 * (`feed_forward_length` 0), so a tensor of another width contradicts it.
 * `intermediate_size: 0` made a Qwen3.5 GGUF of `feed_forward_length` 0
 * beside 128-wide FFN weights, exit 0.
 */
const numOrZero = (v: unknown): number | undefined => v === 0 ? 0 : num(v);

/** The largest of a list of numbers, or the value itself when it is no list. */
const largest = (v: unknown): unknown =>
  Array.isArray(v) && v.length > 0 && v.every((x) => typeof x === "number") ? Math.max(...v) : v;

/**
 * The blocks a GGUF holds: `{arch}.block_count`, or fewer where that counts
 * something else (HRM-Text's cycles).
 *
 * @param arch `general.architecture`.
 * @param kv The file's metadata values by key.
 * @returns The count, or `undefined` when the keys do not say it.
 */
export function ggufBlocks(arch: string, kv: (key: string) => unknown): number | undefined {
  const stored = Object.hasOwn(STORED_BLOCKS, arch) ? num(STORED_BLOCKS[arch]!(kv)) : undefined;
  return stored ?? num(kv(`${arch}.block_count`));
}

/**
 * Check a GGUF model's tensors against its architecture and `{arch}.*` keys.
 *
 * @example Usage
 * ```ts
 * import { ggufShapeProblem } from "./model_shape.ts";
 * const kv = new Map<string, unknown>([["llama.block_count", 1], ["llama.embedding_length", 4]]);
 * const problem = ggufShapeProblem("llama", (k) => kv.get(k), [
 *   { name: "blk.0.attn_norm.weight", shape: [4] },
 *   { name: "blk.1.attn_norm.weight", shape: [4] },
 * ]);
 * console.assert(problem?.tensor === "blk.1.attn_norm.weight");
 * ```
 *
 * @param arch `general.architecture`.
 * @param kv The file's metadata values by key.
 * @param tensors The tensors, under their GGUF names, with the shard each is in.
 * @returns The first problem, or `undefined` when the model is what its keys say
 * (or llama.cpp names no such architecture, or the keys do not say its size).
 */
export function ggufShapeProblem(
  arch: string,
  kv: (key: string) => unknown,
  tensors: readonly ShapedTensor[],
): ShapeProblem | undefined {
  const stored = Object.hasOwn(STORED_BLOCKS, arch) ? num(STORED_BLOCKS[arch]!(kv)) : undefined;
  const blocks = ggufBlocks(arch, kv);
  const hidden = num(kv(`${arch}.embedding_length`));
  // A vocabulary-only file (llama.cpp's ggml-vocab-*.gguf) holds no tensor.
  if (blocks === undefined || hidden === undefined || tensors.length === 0) return undefined;
  const kinded: Kinded[] = [];
  for (const t of tensors) {
    const k = ggufTensorKind(
      arch,
      t.name,
      familiesOfGguf(arch).flatMap((f) => f.ggufLoaderKinds ?? []),
    );
    if (k === undefined) {
      return {
        tensor: t.name,
        ...t.file === undefined ? {} : { file: t.file },
        reason: `no tensor of llama.cpp's "${arch}" architecture has this name`,
      };
    }
    kinded.push({ t, kind: k.kind, block: k.block, suffix: k.suffix });
  }
  const nextn = num(kv(`${arch}.nextn_predict_layers`)) ?? 0;
  const d: Dims = {
    blocks,
    // A drafter made of prediction layers only (Gemma 4's assistants) needs them all.
    required: trunkLayers(blocks, nextn),
    // Layers reusing an earlier layer's KV (Gemma 4's, which have no K/V of their own).
    kvSharedFrom: blocks - (num(kv(`${arch}.attention.shared_kv_layers`)) ?? 0),
    blocksKey: stored !== undefined ? `2 × ${arch}.hrm.layers_per_stack` : `${arch}.block_count`,
    // The architectures of aprkit's families (a GGUF of another is checked
    // for its names and sizes only).
    everyBlockAttends: familiesOfGguf(arch).some((f) => f.hybrid !== true),
    hidden,
    labels: {
      hidden: `${arch}.embedding_length`,
      heads: `${arch}.attention.head_count`,
      kvHeads: `${arch}.attention.head_count_kv`,
      keyLength: `${arch}.attention.key_length`,
      valueLength: `${arch}.attention.value_length`,
      ff: `${arch}.feed_forward_length`,
      experts: `${arch}.expert_count`,
      latent: `${arch}.moe_latent_size`,
      vocab: "tokenizer.ggml.tokens",
    },
    labelPrefix: "",
    heads: num(kv(`${arch}.attention.head_count`)),
    // A hybrid's per-layer list (0 for an SSM layer): its attention layers' count.
    kvHeads: num(largest(kv(`${arch}.attention.head_count_kv`))) ??
      num(kv(`${arch}.attention.head_count`)),
    keyLength: num(kv(`${arch}.attention.key_length`)),
    valueLength: num(kv(`${arch}.attention.value_length`)),
    ff: num(kv(`${arch}.feed_forward_length`)),
    experts: num(kv(`${arch}.expert_count`)),
    latent: num(kv(`${arch}.moe_latent_size`)),
  };
  return check(kinded, d, arch) ??
    keyShapeProblem(
      arch,
      { value: kv, source: () => [] },
      keyed(kinded),
      d.required,
      !IRREGULAR_HEADS.has(arch),
    ) ??
    tokenTypesProblem(
      kinded,
      num(kv("tokenizer.ggml.token_type_count")),
      "tokenizer.ggml.token_type_count",
    );
}

/**
 * BERT's token-type embedding against the count llama.cpp loads it by
 * (`tokenizer.ggml.token_type_count`, which the converter writes from
 * `type_vocab_size`): one row per type. A `type_vocab_size` off by one was
 * written as given, a file llama.cpp refuses to load.
 */
function tokenTypesProblem(
  kinded: readonly Kinded[],
  types: number | undefined,
  label: string,
): ShapeProblem | undefined {
  if (types === undefined) return undefined;
  const t = kinded.find((k) => k.kind === "TOKEN_TYPES" && k.suffix === ".weight")?.t;
  if (t === undefined || t.shape[0] === types) return undefined;
  return {
    tensor: t.name,
    ...t.file === undefined ? {} : { file: t.file },
    reason: `shape ${fmt(t.shape)}, expected ${fmt([types, t.shape[1]])} (${label} ${types})`,
  };
}

/** Tensors read as kinds, as the key-sized check reads them. */
const keyed = (kinded: readonly Kinded[]) =>
  kinded.map((k) => ({
    name: k.t.name,
    // A transposed tensor (GPT-2's Conv1D) as its matrix, stacked ones as theirs.
    shape: k.transposed === true
      ? [...k.t.shape].reverse()
      : k.matricesTransposed === true
      ? swapLast(k.t.shape)
      : k.t.shape,
    ...k.transposed === true || k.matricesTransposed === true ? { stored: k.t.shape } : {},
    kind: k.kind,
    block: k.block,
    suffix: k.suffix,
    ...k.t.packed === true ? { packed: true } : {},
    ...k.t.file === undefined ? {} : { file: k.t.file },
  }));

/**
 * The keys a family writes from `config.json`, with the fields each came
 * from; `undefined` when it writes no GGUF or cannot write these (its
 * refusal is said where the GGUF is made).
 */
function familyKeys(family: Family, config: Readonly<Record<string, unknown>>): Keys | undefined {
  const write = family.gguf?.writeKv;
  if (write === undefined) return undefined;
  const w = new KvWriter(config, family.ggufArchitecture);
  try {
    write(w);
  } catch {
    return undefined;
  }
  const entries = w.entries();
  return { value: (key) => entries.get(key)?.value, source: (key) => w.sourceOf(key) };
}

/**
 * The spellings of one size in the config classes of aprkit's families, the
 * common name first: transformers' `attribute_map` aliases (GPT-2's `n_layer`,
 * DBRX's `d_model`; tests/testdata/arch/config_fields.json records each
 * class's), which a saved `config.json` keeps as the class spells them.
 */
const SIZE_KEYS = {
  layers: ["num_hidden_layers", "n_layer", "n_layers", "num_layers"],
  hidden: ["hidden_size", "n_embd", "d_model", "dim"],
  heads: ["num_attention_heads", "n_head", "n_heads"],
} as const;

/** The first spelling of a size the config has as a number, with its key. */
function sizeOf(
  h: Readonly<Record<string, unknown>>,
  keys: readonly string[],
): { key: string; value: number } | undefined {
  for (const key of keys) {
    const value = num(h[key]);
    if (value !== undefined) return { key, value };
  }
  return undefined;
}

/** The pattern of a family's Hugging Face block tensors, capturing the block number. */
function blockPattern(family: Family): RegExp {
  const prefix = (family.hfBlockPrefix ?? "model.layers").replaceAll(".", "\\.");
  return new RegExp(`^${prefix}\\.(\\d+)\\.`);
}

/** A task-head class's tensor name as its base model names it (`Family.hfHeadPrefix` dropped). */
function baseModelName(family: Family, name: string): string {
  const prefix = family.hfHeadPrefix;
  return prefix !== undefined && name.startsWith(prefix) ? name.slice(prefix.length) : name;
}

/**
 * Check a Hugging Face checkpoint's tensors (its language model's, under
 * the text family's names) against its family and `config.json`. A tensor
 * the family has no GGUF name for (one its converter makes itself, a
 * quantized checkpoint's parts) is checked for its layer only.
 *
 * @param family The family.
 * @param config `config.json` (a multimodal model's `text_config` is read too).
 * @param tensors The tensors, with the shard each is in.
 * @returns The first problem, or `undefined`.
 */
export function hfShapeProblem(
  family: Family,
  config: Readonly<Record<string, unknown>>,
  tensors: readonly (ShapedTensor & TensorInfo)[],
): ShapeProblem | undefined {
  const text = record(config["text_config"]);
  const given = text === undefined ? config : { ...config, ...text };
  // Sizes as transformers reads them: a head_dim config.json leaves out is its class's default.
  const h = withConfigDefaults(given);
  const said = (field: string) =>
    given[field] == null && h[field] != null ? `no ${field}, so transformers' default` : field;
  const arch = family.ggufArchitecture;
  // HRM-Text's L and H stacks, read as the blocks they become.
  const stacks = Object.hasOwn(HF_STACKS, arch) ? HF_STACKS[arch] : undefined;
  const stacked = stacks?.blocks(h);
  const layersKey = stacks === undefined
    ? sizeOf(h, SIZE_KEYS.layers)
    : stacked === undefined
    ? undefined
    : { key: "num_layers_per_stack", value: stacked };
  const hiddenKey = sizeOf(h, SIZE_KEYS.hidden);
  if (layersKey === undefined || hiddenKey === undefined) return undefined;
  const layers = layersKey.value;
  const hidden = hiddenKey.value;
  // Multi-token-prediction layers follow the last one (GLM-4.5, DeepSeek-V3, Qwen3.5).
  const extra = family.gguf?.extraBlocks?.(h) ?? 0;
  const nextnKey = extra > 0 ? undefined : "num_nextn_predict_layers";
  const nextn = extra > 0
    ? extra
    : typeof h["num_nextn_predict_layers"] === "number"
    ? Math.max(0, h["num_nextn_predict_layers"] as number)
    : 0;
  // Laguna's query heads are given per layer (num_attention_heads_per_layer): checked
  // by the key they make (key_shapes.ts), which names them, not by num_attention_heads.
  const headsKey = sizeOf(h, SIZE_KEYS.heads);
  const heads = Array.isArray(h["num_attention_heads_per_layer"]) ? undefined : headsKey?.value;
  const widthKey = family.hfWidthKeys?.intermediate_size ?? "intermediate_size";
  const vocabKey = ["vocab_size", "n_vocab"].find((k) => num(h[k]) !== undefined) ?? "vocab_size";
  const expertsKey =
    ["num_local_experts", "num_experts", "n_routed_experts"].find((k) => num(h[k]) !== undefined) ??
      "num_experts";
  const d: Dims = {
    blocks: layers + nextn,
    required: layers,
    everyBlockAttends: family.hybrid !== true,
    kvSharedFrom: layers - (num(h["num_kv_shared_layers"]) ?? 0),
    blocksKey: stacks !== undefined
      ? "2 × config.json's num_layers_per_stack"
      : nextn > 0
      ? `config.json's ${layersKey.key} + ${nextnKey ?? "its multi-token-prediction layers"}`
      : `config.json's ${layersKey.key}`,
    hidden,
    labels: {
      hidden: hiddenKey.key,
      heads: headsKey?.key ?? "num_attention_heads",
      kvHeads: said("num_key_value_heads"),
      keyLength: said("head_dim"),
      valueLength: said("head_dim"),
      ff: widthKey,
      experts: expertsKey,
      latent: "moe_latent_size",
      vocab: vocabKey,
    },
    labelPrefix: "config.json: ",
    heads,
    kvHeads: numOrZero(h["num_key_value_heads"]) ?? heads,
    keyLength: num(h["head_dim"]),
    // MoE models' dense width is the leading dense layers' (or none).
    ff: family.experts === undefined ? family.hfWidth?.(h) ?? numOrZero(h[widthKey]) : undefined,
    experts: num(h[expertsKey]),
    latent: num(h["moe_latent_size"]),
    // transformers builds the embedding from it, and llama.cpp loads it
    // against the vocabulary the converter pads to it (Gemma 3's is trimmed).
    vocab: family.embeddingRowsMayDiffer === true ? undefined : num(h[vocabKey]),
  };
  const prefix = family.experts?.prefix;
  const blocks = blockPattern(family);
  const perExpert = prefix === undefined ? undefined : new RegExp(
    `${blocks.source}${prefix.replaceAll(".", "\\.")}\\.\\d+\\.(.+)\\.weight$`,
  );
  const kinded: Kinded[] = [];
  const rename = sourceNamer(family, h);
  // A base model saved without its `model.` prefix (sentence-transformers'
  // Qwen2Model: `layers.N.*`, `embed_tokens`), read as the converter reads it:
  // its layers were not counted, and a layer count one low wrote a GGUF of
  // block_count 1 beside two blocks.
  const bare = family.hfBlockPrefix === undefined &&
    !tensors.some((t) => blocks.test(t.name)) && tensors.some((t) => /^layers\.\d+\./.test(t.name));
  // Read under the names the converter renames them to first (Qwen3.5's MTP
  // layer; K-EXAONE's mtp.fc, one copy per MTP layer).
  const read = rename === undefined
    ? tensors
    : tensors.flatMap((source) => rename(source.name).map((name) => ({ ...source, name })));
  // Each renamed tensor's checkpoint name, for a message naming what the checkpoint holds.
  const origin = new Map(
    rename === undefined
      ? []
      : tensors.flatMap((source) => rename(source.name).map((name) => [name, source.name])),
  );
  for (const t of read) {
    const named = stacks?.name(bare ? `model.${t.name}` : t.name, h) ??
      (bare ? `model.${t.name}` : t.name);
    const base = family.gguf?.hfName?.(named) ?? baseModelName(family, named);
    // A task head's layers under its base model's name too (BERT's `bert.encoder.layer.N`).
    const layer = blocks.exec(named) ?? blocks.exec(base);
    const block = layer === null ? undefined : Number(layer[1]);
    const expert = perExpert?.exec(named);
    const stack = expert ? family.experts!.stacks.find((s) => s.hf === expert[2]) : undefined;
    const gguf = stack !== undefined
      ? `blk.${block}.${stack.gguf}.weight`
      : hfToGgufName(base, family);
    const k = ggufTensorKind(arch, gguf) ??
      (block === undefined ? undefined : stackedKind(family, arch, named, block));
    kinded.push({
      t,
      kind: k?.kind,
      block,
      suffix: k?.suffix ?? "",
      ...stack !== undefined ? { perExpert: true } : {},
      ...family.gguf?.transposed?.(t.name) === true ? { transposed: true } : {},
      ...k !== undefined && "piece" in k &&
          family.experts?.transposedStack?.(k.piece, t.shape, hidden) === true
        ? { matricesTransposed: true }
        : {},
    });
  }
  const common = check(kinded, d, arch) ??
    mtpBlocksProblem(kinded, { layers, extra }, h, (name) => origin.get(name) ?? name);
  if (common !== undefined) return common;
  // Made only now: the keys are built from counts the common check has bounded
  // (an MTP layer at 2^31 would make a recurrent-layer list that long).
  const keys = familyKeys(family, config);
  let made: readonly MadeTensor[] | undefined;
  try {
    made = madeTensors(family, config, kinded);
  } catch (error) {
    if (!(error instanceof TensorConfigMismatch)) throw error;
    const file = kinded.find((k) => k.t.name === error.tensor)?.t.file;
    return { tensor: error.tensor, ...file === undefined ? {} : { file }, reason: error.reason };
  }
  const byKeys = (k: Keys) =>
    keyShapeProblem(
      arch,
      k,
      withMadeKinds(arch, keyed(kinded), made),
      d.required,
      !IRREGULAR_HEADS.has(arch),
    );
  return (keys === undefined
    ? undefined
    : byKeys(keys) ?? impliedProblem(family, h, keys, byKeys)) ??
    (keys === undefined ? undefined : unsizedFfn(arch, keys, kinded, widthKey, h)) ??
    moeLayerProblem(family.gguf?.moeLayers?.(h), kinded, d.required) ??
    layerTensorProblem(family.gguf?.layerTensors?.(h), kinded, d.required) ??
    tokenTypesProblem(kinded, num(h["type_vocab_size"]), "config.json: type_vocab_size") ??
    unknownBlockTensor(family, config, kinded, made);
}

/**
 * The multi-token-prediction blocks a checkpoint holds, against the count
 * config.json gives and `block_count` includes (`extraBlocks`): every one,
 * or none (a trunk-only checkpoint, as transformers saves Qwen3.5). With the
 * first but not the next, llama.cpp refuses the file and llama.cpp's
 * converter writes it with exit 0 (num_nextn_predict_layers 2 beside
 * GLM-4.5's one MTP layer: `blk.3.attn_norm.weight` not found).
 *
 * @param kinded The tensors, read under the converter's names.
 * @param count The trunk's layers and the MTP blocks the family counts.
 * @param h config.json.
 * @param source A tensor's name in the checkpoint.
 */
function mtpBlocksProblem(
  kinded: readonly Kinded[],
  count: { layers: number; extra: number },
  h: Readonly<Record<string, unknown>>,
  source: (name: string) => string,
): ShapeProblem | undefined {
  const { layers, extra } = count;
  // By the layers' own tensors: K-EXAONE's converter copies mtp.fc into every counted block.
  const held = new Map<number, string>();
  for (const k of kinded) {
    const name = source(k.t.name);
    if (k.block === undefined || k.block < layers || held.has(k.block)) continue;
    if (/layers\.\d+\./.test(name)) {
      held.set(k.block, name.replace(/^(.*?layers\.\d+)\..*$/, "$1.*"));
    }
  }
  // Without extraBlocks the converter drops them (DeepSeek-V3's).
  if (extra === 0 || held.size === 0 || held.size === extra) return undefined;
  const missing = Array.from({ length: extra }, (_, i) => layers + i).find((b) => !held.has(b))!;
  return {
    tensor: `layer ${missing}`,
    reason:
      `no tensor of it, though ${
        mtpCountLabel(h, extra)
      } is ${extra} and the checkpoint holds ${held.size} multi-token-prediction ` +
      `layer${held.size === 1 ? "" : "s"} (${[...held.values()].join(", ")}): ` +
      `llama.cpp will not load a file missing one`,
  };
}

/**
 * The tensors against the sizes fields nobody writes imply
 * ({@linkcode Family.gguf}'s `impliedKeys`): each in place of the key it
 * would be, where it differs from the written one (which the tensors match).
 */
function impliedProblem(
  family: Family,
  h: Readonly<Record<string, unknown>>,
  keys: Keys,
  byKeys: (k: Keys) => ShapeProblem | undefined,
): ShapeProblem | undefined {
  const arch = family.ggufArchitecture;
  for (const implied of family.gguf?.impliedKeys?.(h) ?? []) {
    const full = `${arch}.${implied.key}`;
    if (keys.value(full) === implied.value) continue;
    const problem = byKeys({
      value: (k) => k === full ? implied.value : keys.value(k),
      source: (k) => k === full ? [implied.from] : keys.source(k),
    });
    if (problem !== undefined) return problem;
  }
  return undefined;
}

/**
 * A router in a layer the config makes dense, or none in one it makes a MoE
 * layer: llama.cpp runs the layers by their tensors, transformers builds
 * them by the config (Jamba's `expert_layer_offset` off by one was written
 * with exit 0).
 */
function moeLayerProblem(
  layers: MoeLayers | undefined,
  kinded: readonly Kinded[],
  required: number,
): ShapeProblem | undefined {
  if (layers === undefined) return undefined;
  return layerTensorProblem(
    {
      kind: "FFN_GATE_INP",
      // A checkpoint fragment without its routers is not judged by them.
      instead: "FFN_GATE_INP",
      has: layers.moe,
      from: layers.from,
      tensor: "an expert router",
      with: "a MoE layer",
      without: "dense",
    },
    kinded,
    required,
  );
}

/**
 * A tensor of a kind in a layer the config builds without it, or none in
 * one it builds with it ({@linkcode Family.gguf}'s `layerTensors`).
 */
function layerTensorProblem(
  layers: LayerTensors | undefined,
  kinded: readonly Kinded[],
  required: number,
): ShapeProblem | undefined {
  if (layers === undefined) return undefined;
  const found = new Map<number, ShapedTensor>();
  let fragment = true;
  for (const k of kinded) {
    if (k.block === undefined) continue;
    if (k.kind === layers.kind) found.set(k.block, k.t);
    if (k.kind === layers.kind || k.kind === layers.instead) fragment = false;
  }
  if (fragment) return undefined;
  const none = layers.tensor.replace(/^an? /, "no ");
  for (let b = 0; b < Math.min(required, layers.has.length); b++) {
    const t = found.get(b);
    const rows = layers.rows?.[b];
    if (t !== undefined && rows !== undefined && t.shape[0] !== rows) {
      return {
        tensor: t.name,
        ...t.file === undefined ? {} : { file: t.file },
        reason: `shape ${fmt(t.shape)}, expected ${fmt([rows, ...t.shape.slice(1)])} ` +
          `(config.json's ${layers.from})`,
      };
    }
    if ((t !== undefined) === layers.has[b]) continue;
    return t !== undefined
      ? {
        tensor: t.name,
        ...t.file === undefined ? {} : { file: t.file },
        reason: `${layers.tensor} in layer ${b}, which config.json's ${layers.from} makes ` +
          layers.without,
      }
      : {
        tensor: `layer ${b}`,
        reason: `${none}, though config.json's ${layers.from} makes it ${layers.with}`,
      };
  }
  return undefined;
}

/**
 * The kind of an already-stacked expert tensor (transformers 5's
 * `mlp.experts.down_proj`, Granite's `block_sparse_moe.output_linear`),
 * which no name table renames: its GGUF stack's, or — split into gate and
 * up stacks — the fused `FFN_GATE_UP_EXP`. Read so, the experts' width is
 * checked as a per-expert checkpoint's is (Granite MoE's `intermediate_size`
 * off by one was written as given).
 */
function stackedKind(
  family: Family,
  arch: string,
  name: string,
  block: number,
): { kind: string; suffix: string; piece: string } | undefined {
  const experts = family.experts;
  if (experts?.stacked === undefined) return undefined;
  const at = `${family.hfBlockPrefix ?? "model.layers"}.${block}.${experts.prefix}.`;
  const i = name.indexOf(at);
  if (i < 0) return undefined;
  const rest = name.slice(i + at.length);
  const piece = rest.endsWith(".weight") ? rest.slice(0, -7) : rest;
  const targets = experts.stacked.find(([p]) => p === piece)?.[1];
  if (targets === undefined) return undefined;
  if (targets.length === 2) return { kind: "FFN_GATE_UP_EXP", suffix: ".weight", piece };
  const k = targets.length === 1
    ? ggufTensorKind(arch, `blk.${block}.${targets[0]}.weight`)
    : undefined;
  return k === undefined ? undefined : { kind: k.kind, suffix: k.suffix, piece };
}

/**
 * What the family makes itself (MLA's kv_b_proj, gpt-oss's experts, routers'
 * biases, the SSM's reshaped tensors), a checkpoint's kept NVFP4 weights
 * first; `undefined` when a tensor it needs is missing or mis-shaped (the
 * GGUF layout says which when it is asked for; the other outputs do not
 * need it).
 */
function madeTensors(
  family: Family,
  config: Readonly<Record<string, unknown>>,
  kinded: readonly Kinded[],
): readonly MadeTensor[] | undefined {
  const infos = kinded.map((k) => k.t as ShapedTensor & TensorInfo);
  try {
    return [
      ...keptNvfp4Tensors(infos, family, config),
      ...family.gguf?.made?.(infos, new KvWriter(config, family.ggufArchitecture)) ?? [],
    ];
  } catch (error) {
    // A made tensor the config contradicts is the shape check's to report.
    if (error instanceof RangeError && !(error instanceof TensorConfigMismatch)) return undefined;
    throw error;
  }
}

/**
 * The kinds sized by the `ssm.*` and `shortconv.*` keys, DeepSeek-V4's hash
 * tables and Qwen4-Exp's PLE convolution: made one from one checkpoint tensor.
 */
const KEY_SIZED = /^(SSM_|SHORTCONV_|FFN_GATE_TID2EID$|PLE_CONV1D$)/;

/** The suffixes of a kept NVFP4 weight's per-tensor factors (`kept_blocks.ts`). */
const NVFP4_FACTOR = /^\.(scale|input_scale)$/;

/**
 * Kinds made in another shape than their source's: Qwen4-Exp's indexer
 * query and key (split from one `index_qk_proj`) and its n-gram table
 * (its shards concatenated), checked as made.
 */
const MADE_SHAPED = /^(INDEXER_(Q|K)_PROJ|PER_LAYER_TOKEN_EMBD)$/;

/**
 * A checkpoint's state-space tensors under the kind of the GGUF tensor the
 * family makes of each (Qwen3.5's `linear_attn.conv1d`, LFM2's
 * `conv.conv`, which no name table renames), for the key-sized check; a
 * down projection the family makes (gpt-oss's experts, Granite 4.0-H's
 * shared MLP) under its kind and with the shape it makes, so its width is
 * read on the right axis.
 */
function withMadeKinds(
  arch: string,
  tensors: ReturnType<typeof keyed>,
  made: readonly MadeTensor[] | undefined,
): ReturnType<typeof keyed> {
  const kinds = new Map<string, { kind: string; suffix: string }>();
  const downs = new Map<string, { kind: string; suffix: string; shape: readonly number[] }>();
  const shaped = new Map<string, { kind: string; suffix: string; shape: readonly number[] }[]>();
  for (const m of made ?? []) {
    const k = m.needs.length > 0 ? ggufTensorKind(arch, m.info.name) : undefined;
    // A kept NVFP4 weight's per-tensor factors (Nemotron-H's ssm_in.scale) size nothing.
    if (k !== undefined && NVFP4_FACTOR.test(k.suffix)) continue;
    if (k !== undefined && MADE_SHAPED.test(k.kind)) {
      // Under its first source (the first shard), each part of a split one.
      const parts = shaped.get(m.needs[0]!) ?? [];
      shaped.set(m.needs[0]!, [...parts, { kind: k.kind, suffix: k.suffix, shape: m.info.shape }]);
    } else if (k !== undefined && m.needs.length === 1 && KEY_SIZED.test(k.kind)) {
      kinds.set(m.needs[0]!, { kind: k.kind, suffix: k.suffix });
    } else if (k !== undefined && k.kind.startsWith("FFN_DOWN")) {
      // Under its first source (an MXFP4 checkpoint's `_blocks`, its scales beside it).
      downs.set(m.needs[0]!, { kind: k.kind, suffix: k.suffix, shape: m.info.shape });
    }
  }
  return tensors.flatMap((t) => {
    if (t.kind !== undefined) return [t];
    const kind = kinds.get(t.name);
    if (kind?.kind === "FFN_GATE_TID2EID") {
      // Integer ids, read as "packed" by their type: their shape is their own.
      const { packed: _packed, ...ids } = t;
      return [{ ...ids, ...kind }];
    }
    if (kind !== undefined) return [{ ...t, ...kind }];
    const parts = shaped.get(t.name);
    if (parts !== undefined) return parts.map((p) => ({ ...t, ...p, stored: t.shape }));
    const down = downs.get(t.name);
    if (down === undefined) return [t];
    // As the family makes it (gpt-oss's down_proj [experts, ff, hidden] transposed,
    // or unpacked from MXFP4 blocks): the made shape is its matrices'.
    const same = down.shape.length === t.shape.length &&
      down.shape.every((n, i) => n === t.shape[i]);
    const { packed: _packed, ...unpacked } = t;
    return [{
      ...unpacked,
      kind: down.kind,
      suffix: down.suffix,
      shape: down.shape,
      ...same ? {} : { stored: t.shape },
    }];
  });
}

/** The dense feed-forward matrices, sized by `feed_forward_length`. */
const DENSE_FFN = new Set(["FFN_GATE", "FFN_UP", "FFN_DOWN"]);

/**
 * A dense feed-forward tensor in a model whose keys would have no
 * `feed_forward_length`: the converter writes the key only when the config
 * has a width (`intermediate_size: null` leaves it out), and llama.cpp then
 * loads the FFN as 0 wide and refuses the file; transformers cannot build
 * the layer either.
 */
function unsizedFfn(
  arch: string,
  keys: Keys,
  kinded: readonly Kinded[],
  widthKey: string,
  h: Readonly<Record<string, unknown>>,
): ShapeProblem | undefined {
  // A width the config has but not as a number (`null`, as transformers saves an
  // unset one), or leaves out (transformers then builds its default width).
  if (keys.value(`${arch}.feed_forward_length`) !== undefined) return undefined;
  const t = kinded.find((k) => k.block !== undefined && DENSE_FFN.has(k.kind ?? ""))?.t;
  if (t === undefined) return undefined;
  return {
    tensor: t.name,
    ...t.file === undefined ? {} : { file: t.file },
    reason: `shape ${fmt(t.shape)}, but config.json ${
      Object.hasOwn(h, widthKey)
        ? `has ${widthKey} ${JSON.stringify(h[widthKey])}`
        : `has no ${widthKey}`
    }, so the GGUF would have no ${arch}.feed_forward_length to load it by`,
  };
}

/**
 * A tensor of a layer that the family has no name for, makes nothing from
 * and does not stack: a tensor of another architecture (or a misspelt one).
 * Tensors kept packed (a quantized checkpoint's scales and blocks) and
 * those transformers recomputes (`rotary_emb.inv_freq`) are not judged here.
 */
function unknownBlockTensor(
  family: Family,
  config: Readonly<Record<string, unknown>>,
  kinded: readonly Kinded[],
  made: readonly MadeTensor[] | undefined,
): ShapeProblem | undefined {
  if (made === undefined) return undefined;
  // One writer over the config for the family's hooks (kept, dropped).
  const w = new KvWriter(config, family.ggufArchitecture);
  const consumed = new Set(made.flatMap((m) => m.needs));
  const stacked = (family.experts?.stacked ?? []).map(([piece]) =>
    `${family.experts!.prefix}.${piece}`
  );
  for (const k of kinded) {
    if (k.kind !== undefined || k.block === undefined || k.t.packed === true) continue;
    const name = k.t.name;
    const at = `${family.hfBlockPrefix ?? "model.layers"}.${k.block}.`;
    // After the layer's prefix, wherever it is (a task head's `bert.` before it).
    const piece = name.slice(Math.max(0, name.indexOf(at)) + at.length);
    if (consumed.has(name) || name.endsWith(".rotary_emb.inv_freq")) continue;
    if (family.hfKeptPiece?.(piece, w.hparams) === true) continue;
    if (
      stacked.some((s) => piece === s || piece.startsWith(`${s}.`) || piece.startsWith(`${s}_`))
    ) {
      continue;
    }
    if (family.gguf?.drops?.(name, w) === true) continue;
    if (family.gguf?.tensorKeys?.reads(name) === true) continue; // written as keys
    return {
      tensor: name,
      ...k.t.file === undefined ? {} : { file: k.t.file },
      reason: `the ${family.name} family has no tensor "${piece}" in a layer`,
    };
  }
  return undefined;
}
