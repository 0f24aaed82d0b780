// This module is browser compatible.

/**
 * The tensors the common shape check names only (`model_shape.ts`), against
 * the `{arch}.*` keys llama.cpp sizes them by when it loads them (its
 * `llama-model.cpp` `create_tensor` calls): a state-space layer's
 * convolution, state and heads, a short convolution's cache, attention
 * whose head counts are per-layer lists, and which layers attend. A Hugging
 * Face checkpoint is checked against the keys its family writes from
 * `config.json`, so a config value that is in range but wrong
 * (`linear_conv_kernel_dim: 5` beside 4-wide kernels, a `layer_types` that
 * moves the attention layer) is refused before a file llama.cpp would refuse
 * to load, or would run as another model, is written.
 *
 * Shapes are compared without their unit axes: a checkpoint's depthwise
 * kernel `[channels, 1, kernel]` and Mamba-2's per-head `A` `[heads]` are
 * the GGUF's `[channels, kernel]` and `[heads, 1]`.
 *
 * @module
 */

import {
  type Axis,
  axis,
  count,
  fmt,
  type KeyedTensor,
  type Keys,
  type KeyShapeProblem,
  said,
} from "./_key_axis.ts";
import { hyperConnectionLayerProblem, hyperConnectionShape } from "./hyper_connection_shapes.ts";

export type { KeyedTensor, Keys, KeyShapeProblem } from "./_key_axis.ts";

/** How llama.cpp sizes a state-space layer's tensors from the `ssm.*` keys. */
type SsmLayout = "mamba" | "mamba2" | "gated-delta" | "kda";

/**
 * Architectures with state-space layers, by how llama.cpp's loader sizes
 * them: Mamba's (selective scan, per-channel state), Mamba-2's (per-head,
 * grouped B and C), gated DeltaNet's (Qwen3-Next: per-key-head convolution
 * channels) and Kimi's delta attention (separate q/k/v convolutions).
 */
const SSM_LAYOUTS: Readonly<Record<string, SsmLayout>> = {
  mamba: "mamba",
  jamba: "mamba",
  mamba2: "mamba2",
  granitehybrid: "mamba2",
  "falcon-h1": "mamba2",
  nemotron_h: "mamba2",
  nemotron_h_moe: "mamba2",
  qwen3next: "gated-delta",
  qwen35: "gated-delta",
  qwen35moe: "gated-delta",
  qwen4exp: "gated-delta",
  "kimi-linear": "kda",
};

/** The `ssm.*` keys of a model, `undefined` where absent. */
interface Ssm {
  readonly hidden: number | undefined;
  readonly conv: number | undefined;
  readonly inner: number | undefined;
  readonly state: number | undefined;
  readonly rank: number | undefined;
  readonly groups: number | undefined;
  /** Kimi's delta attention: each head's width (`kda.head_dim`) and the heads (`attention.head_count`). */
  readonly kdaHead?: number | undefined;
  readonly heads?: number | undefined;
}

/** The expected shape (unit axes left out) of a state-space tensor, or `undefined`. */
function ssmShape(layout: SsmLayout, kind: string, suffix: string, s: Ssm): Axis[] | undefined {
  const H = "embedding_length", C = "ssm.conv_kernel", I = "ssm.inner_size";
  const S = "ssm.state_size", R = "ssm.time_step_rank", G = "ssm.group_count";
  const bias = suffix === ".bias";
  if (layout === "kda") return kdaShape(kind, bias, s);
  if (layout === "mamba") {
    const inner = axis(s.inner, I);
    switch (kind) {
      case "SSM_IN":
        return bias ? undefined : [axis(s.inner && 2 * s.inner, I), axis(s.hidden, H)];
      case "SSM_CONV1D":
        return bias ? [inner] : [inner, axis(s.conv, C)];
      case "SSM_X":
        return [axis(s.rank && s.state && s.rank + 2 * s.state, R, S), inner];
      case "SSM_DT":
        return bias ? [inner] : [inner, axis(s.rank, R)];
      case "SSM_A":
        return [inner, axis(s.state, S)];
      case "SSM_D":
        return [inner];
      case "SSM_DT_NORM":
        return [axis(s.rank, R)];
      case "SSM_B_NORM":
      case "SSM_C_NORM":
        return [axis(s.state, S)];
      case "SSM_OUT":
        return bias ? undefined : [axis(s.hidden, H), inner];
    }
    return undefined;
  }
  // Mamba-2 and gated DeltaNet: per-head A, D and time step (heads: time_step_rank).
  const heads = axis(s.rank, R);
  const grouped = s.groups && s.state && 2 * s.groups * s.state;
  const channels = axis(grouped && s.inner && grouped + s.inner, I, G, S);
  switch (kind) {
    case "SSM_CONV1D":
      return bias ? [channels] : [channels, axis(s.conv, C)];
    case "SSM_A":
    case "SSM_D":
      return [heads];
    case "SSM_DT":
      return bias ? [heads] : undefined;
    case "SSM_IN":
      return layout === "mamba2" && !bias
        ? [
          axis(grouped && s.inner && s.rank && 2 * s.inner + grouped + s.rank, I, G, S, R),
          axis(
            s.hidden,
            H,
          ),
        ]
        : undefined;
    case "SSM_OUT":
      return bias ? undefined : [axis(s.hidden, H), axis(s.inner, I)];
  }
  return undefined;
}

/**
 * Kimi's delta-attention layers as llama.cpp's kimi-linear loads them: q, k
 * and v (and their depthwise kernels, `ssm.conv_kernel` long) and the
 * output `attention.head_count` × `kda.head_dim` wide, the decay and gate
 * projections through `kda.head_dim`, one β and A per head.
 */
function kdaShape(kind: string, bias: boolean, s: Ssm): Axis[] | undefined {
  const D = "kda.head_dim", HC = "attention.head_count";
  const head = axis(s.kdaHead, D);
  const width = axis(s.kdaHead && s.heads && s.kdaHead * s.heads, D, HC);
  const hidden = axis(s.hidden, "embedding_length");
  switch (kind) {
    case "SSM_CONV1D_Q":
    case "SSM_CONV1D_K":
    case "SSM_CONV1D_V":
      return bias ? undefined : [width, axis(s.conv, "ssm.conv_kernel")];
    case "ATTN_Q":
    case "ATTN_K":
    case "ATTN_V":
      return bias ? undefined : [width, hidden];
    case "ATTN_OUT":
      return bias ? undefined : [hidden, width];
    case "SSM_F_A":
    case "SSM_G_A":
      return [head, hidden];
    case "SSM_F_B":
    case "SSM_G_B":
      return [width, head];
    case "SSM_BETA":
      return [axis(s.heads, HC), hidden];
    case "SSM_A":
      return [axis(s.heads, HC)];
    case "SSM_DT":
      return bias ? [width] : undefined;
    case "SSM_NORM":
      return [head];
  }
  return undefined;
}

/**
 * Architectures whose query projection holds each head's query and output
 * gate side by side (Qwen3-Next's gated attention): llama.cpp loads Q as
 * 2 × heads × key_length rows, K and V as KV heads × key_length, and the
 * output as heads × key_length columns — sizes the common check leaves
 * unchecked for them.
 */
const GATED_QUERY = new Set(["qwen3next", "qwen35", "qwen35moe", "qwen4exp"]);

/** A gated-query attention tensor's expected shape, or `undefined`. */
function gatedAttentionShape(
  kind: string,
  suffix: string,
  hidden: Axis,
  heads: number | undefined,
  kvHeads: number | undefined,
  head: number | undefined,
): Axis[] | undefined {
  if (suffix !== ".weight" || head === undefined) return undefined;
  const HC = "attention.head_count", KV = "attention.head_count_kv", K = "attention.key_length";
  switch (kind) {
    case "ATTN_Q":
      return [axis(heads && 2 * heads * head, HC, K), hidden];
    case "ATTN_K":
    case "ATTN_V":
      return [axis(kvHeads && kvHeads * head, KV, K), hidden];
    case "ATTN_OUT":
      return [hidden, axis(heads && heads * head, HC, K)];
  }
  return undefined;
}

/**
 * The feed-forward widths the common check leaves to the tensors (a MoE's
 * dense layers are only the leading ones; GLM's and Phi-3's gate and up are
 * fused): llama.cpp loads the experts `expert_feed_forward_length` wide, the
 * shared expert `expert_shared_feed_forward_length` (or `expert_shared_count`
 * experts) wide, and the dense layers `feed_forward_length` wide (one
 * number, or one per layer). Read off the down projections' columns, the
 * one matrix no family fuses (gate and up are fused in some: Granite's
 * shared `input_linear`). The two trailing axes of a stacked (or
 * per-expert) matrix, `[rows, cols]`.
 */
function ffnDownShape(
  kind: string,
  suffix: string,
  widths: { expert: Axis; shared: Axis; dense: Axis },
): Axis[] | undefined {
  if (suffix !== ".weight") return undefined;
  // Gate and up fused (Granite's input_linear, transformers 5's gate_up_proj): twice the rows.
  if (kind === "FFN_GATE_UP_EXP") {
    const e = widths.expert;
    return e === undefined ? undefined : [axis(2 * e.n, ...e.keys), undefined];
  }
  const width = kind === "FFN_DOWN_EXP"
    ? widths.expert
    : kind === "FFN_DOWN_SHEXP"
    ? widths.shared
    : kind === "FFN_DOWN"
    ? widths.dense
    : undefined;
  return width === undefined ? undefined : [undefined, width];
}

/**
 * Multi-head latent attention's low-rank projections (DeepSeek-V2/V3,
 * Kimi-Linear, MiniCPM3…), which the common check names only: llama.cpp
 * loads the KV down-projection as `kv_lora_rank` + the rotated dimensions
 * rows, its norm and the up-projection's columns as `kv_lora_rank`, and
 * the query's down-projection, norm and up-projection by `q_lora_rank`.
 */
function mlaShape(
  kind: string,
  suffix: string,
  hidden: Axis,
  kvRank: number | undefined,
  qRank: number | undefined,
  rope: number | undefined,
  heads: { n: number | undefined; qk: Axis; v: Axis },
): Axis[] | undefined {
  const KV = "attention.kv_lora_rank", Q = "attention.q_lora_rank", R = "rope.dimension_count";
  const HC = "attention.head_count";
  if (suffix !== ".weight") return undefined;
  const { n, qk, v } = heads;
  switch (kind) {
    case "ATTN_KV_A_MQA":
      return [axis(kvRank && rope && kvRank + rope, KV, R), hidden];
    case "ATTN_KV_A_NORM":
      return [axis(kvRank, KV)];
    case "ATTN_KV_B":
      // Each head's unrotated key and its value.
      return [
        axis(
          n && qk && v && rope && n * (qk.n - rope + v.n),
          HC,
          ...qk?.keys ?? [],
          R,
          ...v?.keys ?? [],
        ),
        axis(kvRank, KV),
      ];
    case "ATTN_Q_A":
      return [axis(qRank, Q), hidden];
    case "ATTN_Q_A_NORM":
      return [axis(qRank, Q)];
    case "ATTN_Q_B":
      return [axis(n && qk && n * qk.n, HC, ...qk?.keys ?? []), axis(qRank, Q)];
    // Without a low-rank query (q_lora_rank null: DeepSeek-V2-Lite, Kimi-Linear), each
    // head's query (nope + rope) straight from the residual stream.
    case "ATTN_Q":
      return [axis(n && qk && n * qk.n, HC, ...qk?.keys ?? []), hidden];
  }
  return undefined;
}

/**
 * Attention whose head counts are given per layer (Laguna's query heads,
 * MiMo-V2's KV heads, twice as many in its sliding layers), which the
 * common check, reading one count, leaves: llama.cpp loads each layer's Q
 * as its heads × `key_length` rows, K and V as its KV heads ×
 * `key_length` / `value_length`, and the output as heads × `value_length`
 * columns. A layer of no KV heads (a hybrid's recurrent one) is not an
 * attention layer here ({@linkcode layerPatternProblem} judges those).
 */
function perLayerHeadsShape(
  kind: string,
  suffix: string,
  hidden: Axis,
  heads: Axis,
  kv: Axis,
  keyLength: Axis,
  valueLength: Axis,
): Axis[] | undefined {
  if (suffix !== ".weight" || kv === undefined || keyLength === undefined) return undefined;
  const times = (a: Axis, b: Axis) => a && b && axis(a.n * b.n, ...a.keys, ...b.keys);
  const value = valueLength ?? keyLength;
  switch (kind) {
    case "ATTN_Q":
      return [times(heads, keyLength), hidden];
    case "ATTN_K":
      return [times(kv, keyLength), hidden];
    case "ATTN_V":
      return [times(kv, value), hidden];
    case "ATTN_OUT":
      return [hidden, times(heads, value)];
  }
  return undefined;
}

/**
 * Q, K and V fused in one matrix (Phi-3, DBRX, GPT-NeoX, Falcon, BLOOM,
 * StarCoder's multi-query `c_attn`), which the common check leaves
 * unsized: llama.cpp loads it as heads × key_length + KV heads ×
 * (key_length + value_length) rows, by the keys the family writes (Falcon's
 * `num_kv_heads`, GPT-BigCode's `multi_query` read as the converter reads
 * them).
 */
function fusedQkvShape(
  suffix: string,
  hidden: Axis,
  heads: number | undefined,
  kvHeads: number | undefined,
  keyLength: number | undefined,
  valueLength: number | undefined,
  kvKeyed = true,
): Axis[] | undefined {
  if (suffix !== ".weight" || heads === undefined || kvHeads === undefined) return undefined;
  // transformers' `hidden_size // num_attention_heads` where no key says the head size.
  const head = keyLength ?? (hidden === undefined ? undefined : Math.trunc(hidden.n / heads));
  if (head === undefined || head === 0) return undefined;
  const value = valueLength ?? head;
  const rows = heads * head + kvHeads * (head + value);
  const keys = kvKeyed
    ? ["attention.head_count", "attention.head_count_kv"]
    : ["attention.head_count"];
  return [
    axis(rows, ...keys, keyLength === undefined ? "embedding_length" : "attention.key_length"),
    hidden,
  ];
}

/**
 * Architectures whose dense layers are not as wide as one key says: Gemma
 * 4's layers sharing KV have a double-wide MLP (`use_double_wide_mlp`),
 * which its per-layer `feed_forward_length` says ({@linkcode gemma4Shape}).
 */
const VARYING_FF = new Set(["gemma4", "gemma4-assistant"]);

/** Gemma 4's keys, as {@linkcode gemma4Shape} reads them. */
interface Gemma4Keys {
  readonly hidden: Axis;
  readonly heads: number | undefined;
  /** Per layer: whether it is a sliding layer. */
  readonly sliding: readonly boolean[] | undefined;
  readonly headFull: number | undefined;
  readonly headSwa: number | undefined;
  readonly kv: (block: number) => number | undefined;
  readonly ff: (block: number) => number | undefined;
  /** `embedding_length_per_layer_input`, and the layers it is given to. */
  readonly perLayer: number | undefined;
  readonly layers: number | undefined;
  /** An assistant's backbone width (`embedding_length_out`). */
  readonly backbone: number | undefined;
}

/**
 * Gemma 4's tensors by its per-layer keys, which the common check leaves
 * (its heads are irregular): each layer's query, key and value heads as wide
 * as a sliding layer's `key_length_swa` or a full layer's `key_length`
 * (`head_dim`, `global_head_dim`), its KV heads per layer, its MLP as wide
 * as `feed_forward_length` says for it (double in the layers sharing KV),
 * the per-layer inputs (`hidden_size_per_layer_input` wide, one slice per
 * layer in the per-layer embedding and projection), and an assistant's
 * projections from and to its backbone (`backbone_hidden_size`).
 */
function gemma4Shape(
  kind: string,
  suffix: string,
  block: number | undefined,
  g: Gemma4Keys,
): Axis[] | undefined {
  if (suffix !== ".weight") return undefined;
  const PL = "embedding_length_per_layer_input", B = "block_count";
  const perLayer = axis(g.perLayer, PL);
  const slices = axis(g.perLayer && g.layers && g.perLayer * g.layers, PL, B);
  const O = "embedding_length_out";
  switch (kind) {
    // An assistant's projections from the backbone's embedding and hidden state, and back.
    case "NEXTN_PROJ_PRE":
      return [g.hidden, axis(g.backbone && 2 * g.backbone, O)];
    case "NEXTN_PROJ_POST":
      return [axis(g.backbone, O), g.hidden];
    case "PER_LAYER_INP_GATE":
      return [perLayer, g.hidden];
    case "PER_LAYER_PROJ":
      return [g.hidden, perLayer];
    case "PER_LAYER_PROJ_NORM":
      return [perLayer];
    case "PER_LAYER_MODEL_PROJ":
      return [slices, g.hidden];
    case "PER_LAYER_TOKEN_EMBD":
      return [undefined, slices];
  }
  if (block === undefined || g.sliding === undefined || block >= g.sliding.length) return undefined;
  const swa = g.sliding[block]!;
  const HK = swa ? "attention.key_length_swa" : "attention.key_length";
  const SW = "attention.sliding_window_pattern";
  const head = swa ? g.headSwa : g.headFull;
  const heads = axis(g.heads && head && g.heads * head, "attention.head_count", HK, SW);
  const kv = g.kv(block);
  const kvRows = axis(kv && head && kv * head, "attention.head_count_kv", HK, SW);
  const ff = axis(g.ff(block), "feed_forward_length");
  switch (kind) {
    case "ATTN_Q":
      return [heads, g.hidden];
    case "ATTN_K":
    case "ATTN_V":
      return [kvRows, g.hidden];
    case "ATTN_OUT":
      return [g.hidden, heads];
    case "ATTN_Q_NORM":
    case "ATTN_K_NORM":
      return [axis(head, HK, SW)];
    case "FFN_GATE":
    case "FFN_UP":
      return [ff, g.hidden];
    case "FFN_DOWN":
      return [g.hidden, ff];
  }
  return undefined;
}

/** The expected shape of a short convolution's kernel (LFM2). */
function shortConvShape(
  kind: string,
  suffix: string,
  hidden: Axis,
  cache: Axis,
): Axis[] | undefined {
  return kind === "SHORTCONV_CONV" && suffix === ".weight" ? [hidden, cache] : undefined;
}

/** Whether each layer attends, as a per-layer key says; `undefined`: no such key. */
function attendingLayers(
  arch: string,
  keys: Keys,
): { key: string; attends: boolean[] } | undefined {
  const kv = keys.value(`${arch}.attention.head_count_kv`);
  if (Array.isArray(kv) && kv.every((x) => typeof x === "number")) {
    return { key: "attention.head_count_kv", attends: kv.map((x) => x > 0) };
  }
  const recurrent = keys.value(`${arch}.attention.recurrent_layers`);
  if (Array.isArray(recurrent) && recurrent.every((x) => typeof x === "boolean")) {
    return { key: "attention.recurrent_layers", attends: recurrent.map((x) => !x) };
  }
  return undefined;
}

/**
 * The tensors that make a layer an attention layer: its query or key
 * projection, or in a model with MLA layers their low-rank KV projection
 * (Kimi-Linear's delta-attention layers have q/k/v projections of their own).
 */
const ATTENDS = new Set(["ATTN_Q", "ATTN_K"]);
const MLA_ATTENDS = new Set(["ATTN_KV_A_MQA"]);

/**
 * Check the state-space, short-convolution and layer-pattern tensors of a
 * model against its keys.
 *
 * @example Usage
 * ```ts
 * import { keyShapeProblem } from "./key_shapes.ts";
 * const kv = new Map<string, unknown>([["mamba.embedding_length", 4], ["mamba.ssm.conv_kernel", 5]]);
 * const problem = keyShapeProblem("mamba", { value: (k) => kv.get(k), source: () => [] }, [
 *   { name: "blk.0.ssm_conv1d.weight", shape: [8, 4], kind: "SSM_CONV1D", block: 0, suffix: ".weight" },
 * ], 1);
 * console.assert(problem?.reason.includes("mamba.ssm.conv_kernel 5"));
 * ```
 *
 * @param arch `general.architecture`.
 * @param keys The model's keys (a GGUF's, or those its family writes from `config.json`).
 * @param tensors The tensors, read as kinds.
 * @param layers The layers every tensor must be in (not the multi-token-prediction ones).
 * @param regularHeads Whether the architecture's attention rows are heads ×
 * head size of one number (`model_shape.ts`'s `IRREGULAR_HEADS` are not).
 * @returns The first problem, or `undefined`.
 */
export function keyShapeProblem(
  arch: string,
  keys: Keys,
  tensors: readonly KeyedTensor[],
  layers: number,
  regularHeads = true,
): KeyShapeProblem | undefined {
  const key = (k: string) => count(keys.value(`${arch}.${k}`));
  const layout = Object.hasOwn(SSM_LAYOUTS, arch) ? SSM_LAYOUTS[arch] : undefined;
  const ssm: Ssm = {
    hidden: key("embedding_length"),
    conv: key("ssm.conv_kernel"),
    inner: key("ssm.inner_size"),
    state: key("ssm.state_size"),
    rank: key("ssm.time_step_rank"),
    groups: key("ssm.group_count"),
    kdaHead: key("kda.head_dim"),
    heads: key("attention.head_count"),
  };
  const hidden = axis(ssm.hidden, "embedding_length");
  const cache = axis(key("shortconv.l_cache"), "shortconv.l_cache");
  const heads = key("attention.head_count");
  const kvList = keys.value(`${arch}.attention.head_count_kv`);
  const kvOf = (block: number | undefined) =>
    Array.isArray(kvList) ? count(kvList[block ?? -1]) : count(kvList);
  const headsList = keys.value(`${arch}.attention.head_count`);
  const headsOf = (block: number | undefined) =>
    Array.isArray(headsList) ? count(headsList[block ?? -1]) : heads;
  const head = key("attention.key_length");
  const ffList = keys.value(`${arch}.feed_forward_length`);

  // Without a key of their own, the experts are feed_forward_length wide (Mixtral's).
  const expertWidth = key("expert_feed_forward_length") === undefined && !Array.isArray(ffList)
    ? axis(count(ffList), "feed_forward_length")
    : axis(key("expert_feed_forward_length"), "expert_feed_forward_length");
  // Without one for the shared experts, they are expert_shared_count experts side by side.
  const sharedCount = key("expert_shared_count");
  const sharedWidth = key("expert_shared_feed_forward_length") !== undefined
    ? axis(key("expert_shared_feed_forward_length"), "expert_shared_feed_forward_length")
    : sharedCount !== undefined && expertWidth !== undefined
    ? axis(sharedCount * expertWidth.n, "expert_shared_count", ...expertWidth.keys)
    : undefined;
  const kvRank = key("attention.kv_lora_rank");
  const qRank = key("attention.q_lora_rank");
  const rope = key("rope.dimension_count");
  // A query head (nope + rope) and a value head: DeepSeek-V2's `_mla` keys (its plain
  // ones are the absorbed latent's), else the plain ones (MiniCPM3, older files).
  const mlaHeads = {
    n: heads,
    qk: axis(key("attention.key_length_mla"), "attention.key_length_mla") ??
      axis(key("attention.key_length"), "attention.key_length"),
    v: key("attention.key_length_mla") !== undefined
      ? axis(key("attention.value_length_mla"), "attention.value_length_mla")
      : axis(key("attention.value_length"), "attention.value_length"),
  };
  const pattern = keys.value(`${arch}.attention.sliding_window_pattern`);
  const gemma4: Gemma4Keys | undefined = !VARYING_FF.has(arch) ? undefined : {
    hidden,
    heads,
    sliding: Array.isArray(pattern) && pattern.every((p) => typeof p === "boolean")
      ? pattern as boolean[]
      : undefined,
    headFull: head,
    headSwa: key("attention.key_length_swa"),
    kv: kvOf,
    ff: (block) => Array.isArray(ffList) ? count(ffList[block]) : count(ffList),
    perLayer: key("embedding_length_per_layer_input"),
    layers: key("block_count"),
    backbone: key("embedding_length_out"),
  };
  const widths = (block: number | undefined) => ({
    expert: expertWidth,
    shared: sharedWidth,
    dense: axis(
      Array.isArray(ffList) ? count(ffList[block ?? -1]) : count(ffList),
      "feed_forward_length",
    ),
  });
  // MLA's layers (Kimi-Linear's others are delta attention, with a query of their own).
  const mlaBlocks = new Set(tensors.filter((t) => t.kind === "ATTN_KV_A_MQA").map((t) => t.block));
  // Head counts given per layer, outside MLA (whose heads mlaShape reads).
  const perLayerHeads = kvRank === undefined &&
    (Array.isArray(headsList) || Array.isArray(kvList));
  for (const t of tensors) {
    if (t.kind === undefined || t.packed === true) continue;
    // Dense models too where the common check leaves the width (GLM's fused gate and up).
    const ffn = t.block !== undefined &&
      (t.kind === "FFN_GATE_UP_EXP" ||
        t.kind.startsWith("FFN_DOWN") && (t.kind !== "FFN_DOWN" || !VARYING_FF.has(arch)));
    const expected = hyperConnectionShape(arch, t.kind, t.suffix, t.block, keys) ??
      (gemma4 !== undefined && !ffn
        ? gemma4Shape(t.kind, t.suffix, t.block, gemma4)
        : ffn
        ? ffnDownShape(t.kind, t.suffix, widths(t.block))
        : kvRank !== undefined &&
            (/^ATTN_(KV_A|KV_B|Q_A|Q_B)/.test(t.kind) ||
              t.kind === "ATTN_Q" && mlaBlocks.has(t.block))
        ? mlaShape(t.kind, t.suffix, hidden, kvRank, qRank, rope, mlaHeads)
        : t.kind === "ATTN_QKV" && regularHeads && layout === undefined
        ? fusedQkvShape(
          t.suffix,
          hidden,
          heads,
          // Without the key, llama.cpp's (GPT-2's and GPT-NeoX's every head has its K and V).
          kvList === undefined ? heads : kvOf(t.block),
          head,
          key("attention.value_length"),
          kvList !== undefined,
        )
        : GATED_QUERY.has(arch) && t.kind.startsWith("ATTN_")
        ? gatedAttentionShape(t.kind, t.suffix, hidden, heads, kvOf(t.block), head)
        : layout === "kda" && t.kind.startsWith("ATTN_")
        // Kimi-Linear: the MLA layers' other attention tensors are sized by the common check.
        ? (mlaBlocks.has(t.block) ? undefined : ssmShape(layout, t.kind, t.suffix, ssm))
        : perLayerHeads && t.kind.startsWith("ATTN_")
        ? perLayerHeadsShape(
          t.kind,
          t.suffix,
          hidden,
          axis(headsOf(t.block), "attention.head_count"),
          axis(kvOf(t.block), "attention.head_count_kv"),
          axis(head, "attention.key_length"),
          axis(key("attention.value_length"), "attention.value_length"),
        )
        : layout !== undefined
        ? ssmShape(layout, t.kind, t.suffix, ssm)
        : shortConvShape(t.kind, t.suffix, hidden, cache));
    if (expected === undefined) continue;
    // A feed-forward matrix by its trailing [rows, cols] (after any expert axis);
    // the others without their unit axes, expected ones too (one indexer head).
    const shape = ffn ? t.shape.slice(-2) : t.shape.filter((n) => n !== 1);
    const want = ffn ? expected : expected.filter((a) => a?.n !== 1);
    const sizes = want.map((a) => a?.n);
    if (
      shape.length === sizes.length &&
      shape.every((n, i) => sizes[i] === undefined || sizes[i] === n)
    ) {
      continue;
    }
    // The keys of the axes that differ (all of them when the rank does).
    const names = want.flatMap((a, i) =>
      a !== undefined && (shape.length !== sizes.length || shape[i] !== a.n) ? a.keys : []
    );
    return {
      tensor: t.name,
      ...t.file === undefined ? {} : { file: t.file },
      reason: `shape ${fmt(t.stored ?? t.shape)}${
        t.stored !== undefined ? ` (${fmt(t.shape)} as llama.cpp loads it)` : ""
      }${
        shape.length < t.shape.length && !ffn ? ` (${fmt(shape)} without its unit axes)` : ""
      }, expected${ffn && t.shape.length > 2 ? " each expert's" : ""} ${fmt(sizes)} (${
        said(arch, keys, names)
      })`,
    };
  }
  return perLayerListProblem(arch, keys) ??
    layerPatternProblem(arch, keys, tensors, layers) ??
    hyperConnectionLayerProblem(arch, keys, tensors, layers) ??
    leadingDenseProblem(arch, keys, tensors, layers) ??
    (gemma4 === undefined ? undefined : perLayerInputProblem(arch, keys, tensors));
}

/**
 * Gemma 4's per-layer inputs where `embedding_length_per_layer_input` gives
 * none, or none where it gives them a width: llama.cpp loads them by the
 * key (and transformers builds them by `hidden_size_per_layer_input`).
 */
function perLayerInputProblem(
  arch: string,
  keys: Keys,
  tensors: readonly KeyedTensor[],
): KeyShapeProblem | undefined {
  const width = keys.value(`${arch}.embedding_length_per_layer_input`);
  if (typeof width !== "number") return undefined;
  const gate = tensors.find((t) => t.kind === "PER_LAYER_INP_GATE");
  // A fragment of a checkpoint without its layers is not judged by them.
  if (!tensors.some((t) => t.kind === "ATTN_NORM")) return undefined;
  if ((gate !== undefined) === (width > 0)) return undefined;
  const by = said(arch, keys, ["embedding_length_per_layer_input"]);
  return gate !== undefined
    ? {
      tensor: gate.name,
      ...gate.file === undefined ? {} : { file: gate.file },
      reason: `a per-layer input tensor, though ${by} gives the layers none`,
    }
    : { tensor: "layer 0", reason: `no per-layer input tensor, though ${by} gives it one` };
}

/**
 * A router where `leading_dense_block_count` makes a dense layer, or none
 * in a later layer: llama.cpp loads the first that many layers' dense FFN
 * and the others' experts (DeepSeek-V2/V3, GLM-4.5, dots.llm1…).
 */
function leadingDenseProblem(
  arch: string,
  keys: Keys,
  tensors: readonly KeyedTensor[],
  layers: number,
): KeyShapeProblem | undefined {
  const dense = count(keys.value(`${arch}.leading_dense_block_count`)) ??
    (keys.value(`${arch}.leading_dense_block_count`) === 0 ? 0 : undefined);
  if (dense === undefined) return undefined;
  const routers = new Map<number, KeyedTensor>();
  for (const t of tensors) {
    if (t.kind === "FFN_GATE_INP" && t.block !== undefined && !routers.has(t.block)) {
      routers.set(t.block, t);
    }
  }
  if (routers.size === 0) return undefined;
  const by = said(arch, keys, ["leading_dense_block_count"]);
  for (let b = 0; b < layers; b++) {
    const router = routers.get(b);
    if ((router !== undefined) === (b >= dense)) continue;
    return router !== undefined
      ? {
        tensor: router.name,
        ...router.file === undefined ? {} : { file: router.file },
        reason: `an expert router in layer ${b}, which ${by} makes a dense layer`,
      }
      : { tensor: `layer ${b}`, reason: `no expert router, though ${by} makes it a MoE layer` };
  }
  return undefined;
}

/** The head counts llama.cpp reads one per layer when given as a list (`get_key_or_arr`). */
const PER_LAYER_LISTS = ["attention.head_count", "attention.head_count_kv"];

/**
 * A per-layer head count list of another length than `block_count`, which
 * llama.cpp refuses to load ("wrong array length") and transformers
 * refuses to build (Laguna's `num_attention_heads_per_layer` one short was
 * written with exit 0).
 */
function perLayerListProblem(arch: string, keys: Keys): KeyShapeProblem | undefined {
  const blocks = count(keys.value(`${arch}.block_count`));
  if (blocks === undefined) return undefined;
  for (const k of PER_LAYER_LISTS) {
    const list = keys.value(`${arch}.${k}`);
    if (!Array.isArray(list) || list.length === blocks) continue;
    const by = said(arch, keys, [k]);
    const layers = said(arch, keys, ["block_count"]);
    return list.length < blocks
      ? {
        tensor: `layer ${list.length}`,
        reason: `no entry in ${by}, though ${layers} counts it (llama.cpp reads one per layer)`,
      }
      : {
        tensor: `layer ${blocks}`,
        reason: `an entry in ${by}, though ${layers} counts no such layer (llama.cpp reads ` +
          `one per layer)`,
      };
  }
  return undefined;
}

/** A layer whose attention tensors the per-layer key contradicts. */
function layerPatternProblem(
  arch: string,
  keys: Keys,
  tensors: readonly KeyedTensor[],
  layers: number,
): KeyShapeProblem | undefined {
  const pattern = attendingLayers(arch, keys);
  if (pattern === undefined) return undefined;
  const attending = new Map<number, KeyedTensor>();
  const marks = tensors.some((t) => t.kind === "ATTN_KV_A_MQA") ? MLA_ATTENDS : ATTENDS;
  for (const t of tensors) {
    if (t.block === undefined || t.kind === undefined || !marks.has(t.kind)) continue;
    if (!attending.has(t.block)) attending.set(t.block, t);
  }
  // A checkpoint fragment with no attention at all is not judged by its pattern.
  if (attending.size === 0) return undefined;
  const n = Math.min(layers, pattern.attends.length);
  for (let b = 0; b < n; b++) {
    const has = attending.get(b);
    if ((has !== undefined) === pattern.attends[b]) continue;
    const by = said(arch, keys, [pattern.key]);
    return has !== undefined
      ? {
        tensor: has.name,
        ...has.file === undefined ? {} : { file: has.file },
        reason: `an attention tensor in layer ${b}, which ${by} gives no attention`,
      }
      : {
        tensor: `layer ${b}`,
        reason: `no attention tensor, though ${by} makes it an attention layer`,
      };
  }
  return undefined;
}
