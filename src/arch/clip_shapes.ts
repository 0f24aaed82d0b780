// This module is browser compatible.

/**
 * A vision GGUF's tower (`v.*`) against its `clip.vision.*` keys, which
 * llama.cpp's `clip.cpp` builds its graph from without checking a tensor's
 * shape when it loads it: a `vision_config` value that is in range but
 * wrong (`hidden_size`, `intermediate_size`, `num_hidden_layers`,
 * `num_attention_heads`, `patch_size`, `image_size`) made a file that
 * fails inside the graph, or reads past a tensor, when an image comes. What
 * every tower shares is checked: the width on the residual side of each
 * norm, attention and feed-forward matrix and of the patch and position
 * embeddings, the feed-forward width of the down projection, the blocks,
 * heads that divide the width, the patch kernel, and an absolute position
 * table of one row per patch (and a class token's).
 *
 * @module
 */

/** A vision GGUF tensor: GGUF name and row-major shape. */
export interface ClipTensor {
  readonly name: string;
  readonly shape: readonly number[];
}

/** What a vision tensor (or block) is found to be, and why. */
export interface ClipShapeProblem {
  readonly tensor: string;
  readonly reason: string;
}

const count = (v: unknown): number | undefined =>
  typeof v === "number" && Number.isSafeInteger(v) && v > 0 ? v : undefined;

const fmt = (shape: readonly (number | undefined)[]) =>
  `[${shape.map((d) => d ?? "*").join(", ")}]`;

/** Block tensors whose last axis (columns) reads the tower's width. */
const READS_WIDTH = /^v\.blk\.\d+\.(attn_q|attn_k|attn_v|attn_qkv|ffn_up|ffn_gate)\.weight$/;
/** Block tensors as wide as the tower: norms (and their biases), the output projections' rows. */
const WIDTH_VECTORS = /^v\.blk\.\d+\.(ln1|ln2)\.(weight|bias)$/;
const WRITES_WIDTH = /^v\.blk\.\d+\.(attn_out|ffn_down)\.weight$/;

/**
 * Projectors whose position table is resized to each image's grid (LFM2-VL's
 * SigLIP2 NaFlex), not one row per patch of `image_size`.
 */
const RESIZED_POSITIONS: ReadonlySet<unknown> = new Set(["lfm2"]);

/**
 * Check a vision GGUF's tower against its keys.
 *
 * @example Usage
 * ```ts
 * import { clipShapeProblem } from "./clip_shapes.ts";
 * const kv = new Map<string, unknown>([["clip.vision.embedding_length", 32], ["clip.vision.block_count", 1]]);
 * const problem = clipShapeProblem((k) => kv.get(k), () => [], [
 *   { name: "v.blk.0.ln1.weight", shape: [16] },
 * ]);
 * console.assert(problem?.reason.includes("clip.vision.embedding_length 32"));
 * ```
 *
 * @param kv The file's (or the plan's) keys.
 * @param source The `config.json` fields a key was made from (empty when unknown).
 * @param tensors The tensors, row-major.
 * @returns The first problem, or `undefined`.
 */
export function clipShapeProblem(
  kv: (key: string) => unknown,
  source: (key: string) => readonly string[],
  tensors: readonly ClipTensor[],
): ClipShapeProblem | undefined {
  const said = (...keys: string[]) =>
    keys.map((k) => {
      const from = source(k);
      return `${k} ${JSON.stringify(kv(k))}${
        from.length > 0 ? ` from config.json's vision_config.${from.join(", ")}` : ""
      }`;
    }).join(", ");
  const E = "clip.vision.embedding_length", F = "clip.vision.feed_forward_length";
  const B = "clip.vision.block_count", H = "clip.vision.attention.head_count";
  const P = "clip.vision.patch_size", I = "clip.vision.image_size";
  const width = count(kv(E));
  const ff = count(kv(F));
  const blocks = count(kv(B));
  const heads = count(kv(H));
  const patch = count(kv(P));
  const image = count(kv(I));
  const projector = kv("clip.projector_type");
  const vision = tensors.filter((t) => t.name.startsWith("v."));
  if (width === undefined || vision.length === 0) return undefined;
  const wrong = (t: ClipTensor, want: readonly (number | undefined)[], ...keys: string[]) => ({
    tensor: t.name,
    reason: `shape ${fmt(t.shape)}, expected ${fmt(want)} (${said(...keys)})`,
  });
  if (heads !== undefined && width % heads !== 0) {
    return {
      tensor: vision[0]!.name,
      reason: `${said(H)} does not divide ${said(E)}: no head size`,
    };
  }
  const seen = new Set<number>();
  for (const t of vision) {
    const s = t.shape;
    const block = /^v\.blk\.(\d+)\./.exec(t.name);
    if (block !== null) {
      const b = Number(block[1]);
      if (blocks !== undefined && b >= blocks) {
        return { tensor: t.name, reason: `layer ${b}, but the tower has ${said(B)}` };
      }
      seen.add(b);
    }
    if (WIDTH_VECTORS.test(t.name) && (s.length !== 1 || s[0] !== width)) {
      return wrong(t, [width], E);
    }
    if (READS_WIDTH.test(t.name) && s[s.length - 1] !== width) {
      return wrong(t, [undefined, width], E);
    }
    if (WRITES_WIDTH.test(t.name) && s[0] !== width) return wrong(t, [width, undefined], E);
    if (/^v\.blk\.\d+\.ffn_down\.weight$/.test(t.name) && ff !== undefined && s[1] !== ff) {
      return wrong(t, [width, ff], F);
    }
    if (t.name === "v.patch_embd.weight") {
      // `[width, channels, patch, patch]`, or a linear embedding of flattened patches.
      const kernel = s.length === 4 && patch !== undefined && (s[2] !== patch || s[3] !== patch);
      if (s[0] !== width || kernel) {
        return wrong(
          t,
          s.length === 4 ? [width, undefined, patch, patch] : [width, undefined],
          E,
          P,
        );
      }
    }
    if (t.name === "v.position_embd.weight" && s.length === 2) {
      const grid = image !== undefined && patch !== undefined && !RESIZED_POSITIONS.has(projector)
        ? (image / patch) ** 2
        : undefined;
      // One row per patch, and a class token's where the tower has one.
      const rows = grid !== undefined && s[0] !== grid && s[0] !== grid + 1 ? grid : undefined;
      if (s[1] !== width || rows !== undefined) return wrong(t, [rows ?? s[0], width], E, I, P);
    }
  }
  for (let b = 0; b < (seen.size > 0 ? blocks ?? 0 : 0); b++) {
    if (!seen.has(b)) return { tensor: `layer ${b}`, reason: `no tensor of it, though ${said(B)}` };
  }
  return undefined;
}

/** The config a vision GGUF is made from: `vision_config`, and the top level beside it. */
export interface VisionConfig {
  readonly vision: Readonly<Record<string, unknown>>;
  readonly top: Readonly<Record<string, unknown>>;
}

/** Projectors that merge `spatial_merge_size`² neighbouring patches by an MLP reading them side by side. */
const MLP_MERGERS: ReadonlySet<unknown> = new Set([
  "qwen2vl_merger",
  "qwen2.5vl_merger",
  "qwen3vl_merger",
]);

/** Projectors whose last layer is `mm.2` (the merger's output, `out_hidden_size` rows). */
const MERGER_OUT: ReadonlySet<unknown> = new Set(["qwen2.5vl_merger", "qwen3vl_merger"]);

/**
 * Axes sized by a `vision_config` field alone: Qwen3-VL's learned position
 * table (`num_position_embeddings` rows), Llama 4's adapter
 * (`projector_input_dim`, `projector_output_dim`) and projector
 * (`vision_output_dim` columns).
 */
const AXIS_FIELDS: readonly (readonly [string, number, readonly string[]])[] = [
  ["v.position_embd.weight", 0, ["num_position_embeddings"]],
  ["mm.model.mlp.1.weight", 0, ["projector_input_dim"]],
  ["mm.model.mlp.2.weight", 0, ["projector_output_dim"]],
  ["mm.model.mlp.2.weight", 1, ["projector_output_dim"]],
  ["mm.model.fc.weight", 1, ["vision_output_dim"]],
];

/** Projectors whose first layer reads `scale_factor`² patches shuffled into one. */
const SHUFFLE_INPUT: Readonly<Record<string, { tensor: string; field: string }>> = {
  idefics3: { tensor: "mm.model.fc.weight", field: "scale_factor" },
  lfm2: { tensor: "mm.input_norm.weight", field: "downsample_factor" },
};

/**
 * The tower and projector against the `vision_config` fields that size
 * them but that the converter writes no key of (or writes from the top
 * level, where the vision writer does not look): the image channels of the
 * patch kernel (`num_channels`, `in_channels`), the temporal patch (the
 * converter splits Qwen-VL's `[width, channels, T, p, p]` kernel into `T`
 * tensors), the merger's input of `spatial_merge_size`² patches (and
 * Idefics3's and LFM2's shuffled `scale_factor`² ones), the merger's output
 * width (`out_hidden_size`), Qwen2-VL's MLP (`mlp_ratio` × width), the
 * widths only the config says ({@linkcode AXIS_FIELDS}), a flattened
 * patch embedding's `channels × patch²` columns, and Pixtral's `head_dim`, by which
 * transformers rotates what it splits as `hidden_size / num_attention_heads`.
 * Each was written with exit 0 beside tensors of another size; transformers
 * cannot load such a checkpoint (or rotates part of each head).
 *
 * @example Usage
 * ```ts
 * import { visionConfigProblem } from "./clip_shapes.ts";
 * const problem = visionConfigProblem(() => undefined, {
 *   vision: { num_channels: 4 },
 *   top: {},
 * }, [{ name: "v.patch_embd.weight", shape: [32, 3, 8, 8] }]);
 * console.assert(problem?.reason.includes("vision_config.num_channels 4"));
 * ```
 *
 * @param kv The vision GGUF's keys.
 * @param config The config the keys were made from.
 * @param tensors The vision GGUF's tensors, row-major.
 * @returns The first problem, or `undefined`.
 */
export function visionConfigProblem(
  kv: (key: string) => unknown,
  config: VisionConfig,
  tensors: readonly ClipTensor[],
): ClipShapeProblem | undefined {
  /** A field of `vision_config`, else of the top level, with its name for the message. */
  const field = (...names: string[]) => {
    for (const name of names) {
      for (const [at, o] of [["vision_config.", config.vision], ["", config.top]] as const) {
        const value = count(o[name]);
        if (value !== undefined) return { value, label: `config.json's ${at}${name} ${value}` };
      }
    }
    return undefined;
  };
  const width = count(kv("clip.vision.embedding_length"));
  const projector = kv("clip.projector_type");
  const byName = new Map(tensors.map((t) => [t.name, t]));
  const wrong = (t: ClipTensor, want: readonly (number | undefined)[], label: string) => ({
    tensor: t.name,
    reason: `shape ${fmt(t.shape)}, expected ${fmt(want)} (${label})`,
  });
  const kernels = tensors.filter((t) => /^v\.patch_embd\.weight(\.\d+)?$/.test(t.name));
  const channels = field("num_channels", "in_channels");
  const patch = count(kv("clip.vision.patch_size"));
  for (const t of kernels) {
    if (channels !== undefined && t.shape.length === 4 && t.shape[1] !== channels.value) {
      return wrong(t, [t.shape[0], channels.value, t.shape[2], t.shape[3]], channels.label);
    }
    // A linear embedding of flattened patches (Llama 4's): channels × patch² columns.
    const flat = channels !== undefined && patch !== undefined
      ? channels.value * patch * patch
      : undefined;
    if (flat !== undefined && t.shape.length === 2 && t.shape[1] !== flat) {
      return wrong(t, [t.shape[0], flat], `${channels!.label}, clip.vision.patch_size ${patch}`);
    }
  }
  const temporal = field("temporal_patch_size");
  if (temporal !== undefined && kernels.length > 0 && kernels.length !== temporal.value) {
    return {
      tensor: kernels[0]!.name,
      reason: `a patch kernel of ${kernels.length} frames, but ${temporal.label}`,
    };
  }
  const merge = field("spatial_merge_size");
  const merger = MLP_MERGERS.has(projector)
    ? byName.get("mm.0.weight")
    : byName.get("mm.patch_merger.weight");
  if (merge !== undefined && merger !== undefined && width !== undefined) {
    const s = merger.shape;
    // GLM-4V's merger is a convolution of a merge × merge kernel.
    if (s.length === 4 && (s[2] !== merge.value || s[3] !== merge.value)) {
      return wrong(merger, [s[0], s[1], merge.value, merge.value], merge.label);
    }
    if (s.length === 2 && s[1] !== width * merge.value ** 2) {
      return wrong(
        merger,
        [s[0], width * merge.value ** 2],
        `${merge.label}, ${"clip.vision.embedding_length"} ${width}`,
      );
    }
  }
  const shuffle = typeof projector === "string" && Object.hasOwn(SHUFFLE_INPUT, projector)
    ? SHUFFLE_INPUT[projector]!
    : undefined;
  const scale = count(kv("clip.vision.projector.scale_factor"));
  const shuffled = shuffle === undefined ? undefined : byName.get(shuffle.tensor);
  if (shuffled !== undefined && scale !== undefined && width !== undefined) {
    const s = shuffled.shape;
    if (s[s.length - 1] !== width * scale ** 2) {
      const label = field(shuffle!.field)?.label ?? `clip.vision.projector.scale_factor ${scale}`;
      return wrong(
        shuffled,
        [...s.slice(0, -1), width * scale ** 2],
        `${label}, clip.vision.embedding_length ${width}`,
      );
    }
  }
  // Widths only the config says: each an axis of one tensor.
  for (const [name, at, fields] of AXIS_FIELDS) {
    const t = byName.get(name);
    const f = t === undefined ? undefined : field(...fields);
    if (t === undefined || f === undefined || t.shape[at] === f.value) continue;
    return wrong(t, t.shape.map((n, i) => i === at ? f.value : n), f.label);
  }
  const mlp = field("mlp_ratio");
  const down = tensors.find((t) => /^v\.blk\.0\.ffn_down\.weight$/.test(t.name));
  if (mlp !== undefined && down !== undefined && width !== undefined) {
    const ff = width * mlp.value;
    if (down.shape[1] !== ff) {
      return wrong(
        down,
        [down.shape[0], ff],
        `${mlp.label} × clip.vision.embedding_length ${width}`,
      );
    }
  }
  const out = field("out_hidden_size");
  const last = MERGER_OUT.has(projector)
    ? byName.get("mm.2.weight")
    : projector === "glm4v"
    ? byName.get("mm.patch_merger.weight")
    : undefined;
  if (out !== undefined && last !== undefined && last.shape[0] !== out.value) {
    return wrong(last, [out.value, ...last.shape.slice(1)], out.label);
  }
  // Pixtral rotates head_dim of each head that attention splits hidden_size / heads wide.
  const head = projector === "pixtral" ? field("head_dim") : undefined;
  const heads = count(kv("clip.vision.attention.head_count"));
  if (
    head !== undefined && heads !== undefined && width !== undefined && head.value * heads !== width
  ) {
    const q = tensors.find((t) => /^v\.blk\.0\.attn_q\.weight$/.test(t.name));
    return {
      tensor: q?.name ?? "v.blk.0.attn_q.weight",
      reason: `${heads} heads of ${
        width / heads
      } (clip.vision.embedding_length ${width}), but ${head.label}, which transformers rotates each head by`,
    };
  }
  return undefined;
}
