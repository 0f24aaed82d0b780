// This module is browser compatible.

/**
 * The tensors of the hyper-connection architectures (DeepSeek-V4's
 * `deepseek4`, Qwen4-Exp's `qwen4exp`) against the keys llama.cpp sizes them
 * by when it loads them (`src/models/deepseek4.cpp`, `qwen4exp.cpp`
 * `load_arch_tensors`), which the common check names only: the residual
 * streams' mixers (`hyper_connection.count`, `.low_rank`), DeepSeek-V4's
 * low-rank query and grouped output (`q_lora_rank`, `output_group_count`,
 * `output_lora_rank`), its one KV head and sinks (`key_length`,
 * `head_count`), its compressors and lightning indexer by each layer's
 * compress ratio, its hash layers' token → expert tables
 * (`expert_used_count`), Qwen4-Exp's QSA indexer and its n-gram per-layer
 * embedding (`ple.*`, `embedding_length_per_layer_input`). A config field
 * off by one wrote a file llama.cpp refuses to load, exit 0.
 *
 * @module
 */

import {
  type Axis,
  axis,
  count,
  type KeyedTensor,
  type Keys,
  type KeyShapeProblem,
  said,
} from "./_key_axis.ts";

const H = "embedding_length";
const M = "hyper_connection.count";
const HC = "attention.head_count";
const K = "attention.key_length";
const IH = "attention.indexer.head_count";
const IK = "attention.indexer.key_length";
const CR = "attention.compress_ratios";

/** The keys these shapes follow from, read once per model. */
interface HcKeys {
  readonly hidden: number | undefined;
  readonly streams: number | undefined;
  readonly heads: number | undefined;
  readonly head: number | undefined;
  readonly indexerHeads: number | undefined;
  readonly indexerHead: number | undefined;
  readonly value: (key: string) => unknown;
}

/** Each layer's compress ratio (`attention.compress_ratios`), or `undefined`. */
function ratioOf(k: HcKeys, block: number | undefined): number | undefined {
  const ratios = k.value(CR);
  if (!Array.isArray(ratios) || block === undefined) return undefined;
  const r = ratios[block];
  return typeof r === "number" && Number.isSafeInteger(r) && r >= 0 ? r : undefined;
}

/** DeepSeek-V4's tensors, row-major, as `llama_model_deepseek4::load_arch_tensors` creates them. */
function deepseek4Shape(kind: string, block: number | undefined, k: HcKeys): Axis[] | undefined {
  const QR = "attention.q_lora_rank", OG = "attention.output_group_count";
  const OR = "attention.output_lora_rank", U = "expert_used_count";
  const key = (name: string) => count(k.value(name));
  const [h, m, heads, head] = [k.hidden, k.streams, k.heads, k.head];
  const qr = key(QR), og = key(OG), or = key(OR);
  const hidden = axis(h, H);
  const mix = axis(m && (2 + m) * m, M);
  const ratio = ratioOf(k, block);
  // The overlapping (ratio 4) compressors project twice the head.
  const coff = ratio === 4 ? 2 : 1;
  const ih = k.indexerHeads, ik = k.indexerHead;
  switch (kind) {
    case "HC_HEAD_FN":
      return [axis(m, M), axis(m && h && m * h, M, H)];
    case "HC_HEAD_BASE":
      return [axis(m, M)];
    case "HC_ATTN_FN":
    case "HC_FFN_FN":
      return [mix, axis(m && h && m * h, M, H)];
    case "HC_ATTN_BASE":
    case "HC_FFN_BASE":
      return [mix];
    case "ATTN_SINKS":
      return [axis(heads, HC)];
    case "ATTN_Q_A":
      return [axis(qr, QR), hidden];
    case "ATTN_Q_A_NORM":
      return [axis(qr, QR)];
    case "ATTN_Q_B":
      return [axis(heads && head && heads * head, HC, K), axis(qr, QR)];
    case "ATTN_KV":
      return [axis(head, K), hidden];
    case "ATTN_KV_NORM":
      return [axis(head, K)];
    case "ATTN_OUT_A":
      // Stored [groups × rank, heads × head / groups], loaded as one matrix per group.
      return [
        axis(og && or && og * or, OG, OR),
        axis(heads && head && og && heads * head / og, HC, K, OG),
      ];
    case "ATTN_OUT_B":
      return [hidden, axis(og && or && og * or, OG, OR)];
    case "ATTN_COMPRESSOR_WKV":
    case "ATTN_COMPRESSOR_WGATE":
      return [axis(head && coff * head, K, CR), hidden];
    case "ATTN_COMPRESSOR_APE":
      return [axis(ratio || undefined, CR), axis(head && coff * head, K, CR)];
    case "ATTN_COMPRESSOR_NORM":
      return [axis(head, K)];
    case "INDEXER_PROJ":
      return [axis(ih, IH), hidden];
    case "INDEXER_ATTN_Q_B":
      return [axis(ih && ik && ih * ik, IH, IK), axis(qr, QR)];
    case "INDEXER_COMPRESSOR_WKV":
    case "INDEXER_COMPRESSOR_WGATE":
      return [axis(ik && 2 * ik, IK), hidden];
    case "INDEXER_COMPRESSOR_APE":
      return [axis(ratio || undefined, CR), axis(ik && 2 * ik, IK)];
    case "INDEXER_COMPRESSOR_NORM":
      return [axis(ik, IK)];
    case "FFN_GATE_TID2EID":
      // One row per token, the experts it routes to.
      return [undefined, axis(key(U), U)];
  }
  return undefined;
}

/** Qwen4-Exp's tensors, row-major, as `llama_model_qwen4exp::load_arch_tensors` creates them. */
function qwen4expShape(kind: string, k: HcKeys): Axis[] | undefined {
  const LR = "hyper_connection.low_rank", PL = "embedding_length_per_layer_input";
  const C = "ple.conv_kernel";
  const [h, m] = [k.hidden, k.streams];
  const lr = count(k.value(LR));
  const hidden = axis(h, H);
  const streams = axis(m && h && m * h, M, H);
  const ik = k.indexerHead;
  switch (kind) {
    case "HC_HEAD_NORM":
    case "HC_ATTN_NORM":
    case "HC_FFN_NORM":
    case "PLE_NORM_KEY":
    case "PLE_NORM_QUERY":
    case "PLE_NORM_CONV":
      return [streams];
    case "HC_HEAD_DOWN":
    case "HC_ATTN_DOWN":
    case "HC_FFN_DOWN":
      return [axis(lr, LR), streams];
    case "HC_HEAD_UP":
    case "HC_ATTN_UP":
    case "HC_FFN_UP":
      return [streams, axis(lr, LR)];
    case "HC_ATTN_INJECT":
    case "HC_FFN_INJECT":
      return [axis(m, M), streams];
    case "INDEXER_Q_PROJ":
      return [axis(k.indexerHeads && ik && k.indexerHeads * ik, IH, IK), hidden];
    case "INDEXER_K_PROJ":
      // One key head (transformers' indexer_kv_heads, which llama.cpp does not read).
      return [axis(ik, IK), hidden];
    case "INDEXER_Q_NORM":
    case "INDEXER_K_NORM":
      return [axis(ik, IK)];
    case "PER_LAYER_TOKEN_EMBD":
      return [undefined, axis(count(k.value(PL)), PL)];
    case "PLE_KEY":
      return [streams, hidden];
    case "PLE_VALUE":
      return [hidden, hidden];
    case "PLE_CONV1D":
      return [streams, axis(count(k.value(C)), C)];
  }
  return undefined;
}

/** The architectures this module sizes. */
const SHAPES: Readonly<
  Record<string, (kind: string, block: number | undefined, k: HcKeys) => Axis[] | undefined>
> = {
  deepseek4: deepseek4Shape,
  qwen4exp: (kind, _block, k) => qwen4expShape(kind, k),
};

/**
 * Whether `arch` is one of the hyper-connection architectures this module sizes.
 *
 * @example Usage
 * ```ts
 * import { hasHyperConnections } from "./hyper_connection_shapes.ts";
 * console.assert(hasHyperConnections("deepseek4") && !hasHyperConnections("llama"));
 * ```
 *
 * @param arch `general.architecture`.
 * @returns Whether it is.
 */
export function hasHyperConnections(arch: string): boolean {
  return Object.hasOwn(SHAPES, arch);
}

/**
 * The expected shape (row-major, unit axes kept) of a tensor of a
 * hyper-connection architecture, or `undefined` for a kind this module
 * leaves to the other checks.
 *
 * @example Usage
 * ```ts
 * import { hyperConnectionShape } from "./hyper_connection_shapes.ts";
 * const kv = new Map<string, unknown>([["deepseek4.attention.q_lora_rank", 32], ["deepseek4.embedding_length", 64]]);
 * const want = hyperConnectionShape("deepseek4", "ATTN_Q_A", ".weight", 0, { value: (k) => kv.get(k), source: () => [] });
 * console.assert(want?.[0]?.n === 32 && want?.[1]?.n === 64);
 * ```
 *
 * @param arch `general.architecture`.
 * @param kind gguf-py's `MODEL_TENSOR` name.
 * @param suffix `.weight`, `.bias` or `""`.
 * @param block Its layer, or `undefined`.
 * @param keys The model's keys.
 * @returns The axes, or `undefined`.
 */
export function hyperConnectionShape(
  arch: string,
  kind: string,
  suffix: string,
  block: number | undefined,
  keys: Keys,
): Axis[] | undefined {
  if (!hasHyperConnections(arch) || suffix !== ".weight") return undefined;
  const value = (key: string) => keys.value(`${arch}.${key}`);
  return SHAPES[arch]!(kind, block, {
    hidden: count(value(H)),
    streams: count(value(M)),
    heads: count(value(HC)),
    head: count(value(K)),
    indexerHeads: count(value(IH)),
    indexerHead: count(value(IK)),
    value,
  });
}

/** Kinds that DeepSeek-V4 loads in a compressed layer (ratio 4 or 128) only. */
const COMPRESSOR = /^ATTN_COMPRESSOR_/;
/** Kinds that it loads in a ratio-4 layer only (the lightning indexer). */
const INDEXER = /^INDEXER_/;
/** Kinds that Qwen4-Exp loads in its PLE layer only. */
const PLE = /^PLE_/;

/**
 * A layer whose tensors its per-layer keys contradict: a DeepSeek-V4
 * compressor where `attention.compress_ratios` gives the layer none (or
 * none where it gives one), an indexer outside the ratio-4 layers;
 * Qwen4-Exp's PLE tensors outside the `ple.layers` layer, or an n-gram
 * table with fewer rows than `ple.head_offsets` + `ple.head_vocab_sizes`
 * index. transformers builds the layers by the config, llama.cpp loads
 * them by the keys: either refuses the file.
 *
 * @example Usage
 * ```ts
 * import { hyperConnectionLayerProblem } from "./hyper_connection_shapes.ts";
 * const kv = new Map<string, unknown>([["deepseek4.attention.compress_ratios", [4, 0]]]);
 * const problem = hyperConnectionLayerProblem("deepseek4", { value: (k) => kv.get(k), source: () => [] }, [
 *   { name: "blk.0.attn_norm.weight", shape: [4], kind: "ATTN_NORM", block: 0, suffix: ".weight" },
 * ], 2);
 * console.assert(problem?.tensor === "layer 0");
 * ```
 *
 * @param arch `general.architecture`.
 * @param keys The model's keys.
 * @param tensors The tensors, read as kinds.
 * @param layers The layers every tensor must be in.
 * @returns The first problem, or `undefined`.
 */
export function hyperConnectionLayerProblem(
  arch: string,
  keys: Keys,
  tensors: readonly KeyedTensor[],
  layers: number,
): KeyShapeProblem | undefined {
  if (arch === "deepseek4") return compressorLayerProblem(arch, keys, tensors, layers);
  if (arch === "qwen4exp") return pleLayerProblem(arch, keys, tensors, layers);
  return undefined;
}

/** The first tensor of each layer whose kind `pattern` matches. */
function byLayer(tensors: readonly KeyedTensor[], pattern: RegExp): Map<number, KeyedTensor> {
  const found = new Map<number, KeyedTensor>();
  for (const t of tensors) {
    if (t.block === undefined || t.kind === undefined || !pattern.test(t.kind)) continue;
    if (!found.has(t.block)) found.set(t.block, t);
  }
  return found;
}

/** A layer's tensors of a part (compressor, indexer, PLE) against whether the keys give it one. */
function presence(
  found: ReadonlyMap<number, KeyedTensor>,
  layers: number,
  has: (block: number) => boolean,
  what: string,
  by: string,
): KeyShapeProblem | undefined {
  for (let b = 0; b < layers; b++) {
    const t = found.get(b);
    if ((t !== undefined) === has(b)) continue;
    return t !== undefined
      ? {
        tensor: t.name,
        ...t.file === undefined ? {} : { file: t.file },
        reason: `a ${what} tensor in layer ${b}, which ${by} gives none`,
      }
      : { tensor: `layer ${b}`, reason: `no ${what} tensor, though ${by} gives it one` };
  }
  return undefined;
}

function compressorLayerProblem(
  arch: string,
  keys: Keys,
  tensors: readonly KeyedTensor[],
  layers: number,
): KeyShapeProblem | undefined {
  const ratios = keys.value(`${arch}.${CR}`);
  // A fragment of a checkpoint without its attention is not judged by its layers.
  if (!Array.isArray(ratios) || !tensors.some((t) => t.kind === "ATTN_KV")) return undefined;
  const by = said(arch, keys, [CR]);
  const n = Math.min(layers, ratios.length);
  return presence(byLayer(tensors, COMPRESSOR), n, (b) => ratios[b] !== 0, "compressor", by) ??
    presence(byLayer(tensors, INDEXER), n, (b) => ratios[b] === 4, "indexer", by);
}

function pleLayerProblem(
  arch: string,
  keys: Keys,
  tensors: readonly KeyedTensor[],
  layers: number,
): KeyShapeProblem | undefined {
  const ple = keys.value(`${arch}.ple.layers`);
  if (!Array.isArray(ple) || !tensors.some((t) => t.kind?.startsWith("HC_ATTN_"))) {
    return undefined;
  }
  const problem = presence(
    byLayer(tensors, PLE),
    layers,
    (b) => ple.includes(b),
    "per-layer embedding (PLE)",
    said(arch, keys, ["ple.layers"]),
  );
  if (problem !== undefined) return problem;
  // llama.cpp gathers each n-gram head's rows at its offset: the table must hold them all.
  const offsets = keys.value(`${arch}.ple.head_offsets`);
  const sizes = keys.value(`${arch}.ple.head_vocab_sizes`);
  const table = tensors.find((t) => t.kind === "PER_LAYER_TOKEN_EMBD" && t.packed !== true);
  if (!Array.isArray(offsets) || !Array.isArray(sizes) || table === undefined) return undefined;
  const rows = Math.max(...sizes.map((s, i) => Number(offsets[i] ?? NaN) + Number(s)));
  // The table as llama.cpp loads it (a checkpoint's first shard stands for the concatenation).
  const held = table.shape[0] ?? 0;
  if (!(rows > held)) return undefined;
  return {
    tensor: table.name,
    ...table.file === undefined ? {} : { file: table.file },
    reason: `${held} rows${
      table.stored !== undefined ? " (its shards concatenated)" : ""
    }, fewer than the ${rows} the n-gram heads index (${
      said(arch, keys, ["ple.head_offsets", "ple.head_vocab_sizes"])
    })`,
  };
}
