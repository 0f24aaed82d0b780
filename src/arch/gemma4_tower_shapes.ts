// This module is browser compatible.

/**
 * Gemma 4's vision and audio towers in the vision GGUF (`--mmproj`) against
 * the `vision_config` and `audio_config` fields transformers builds them by
 * and that the common tower check (`clip_shapes.ts`) does not read: the
 * vision attention's `head_dim` and `num_key_value_heads` (its q/k norms and
 * projections), the 2-D position tables (`position_embedding_size`, the
 * unified embedder's `mm_posemb_size`), the projection's input
 * (`output_proj_dims`, else the tower's width); the audio conformer's width,
 * heads, layers, feed-forward and convolutions (`hidden_size`,
 * `num_attention_heads`, `num_hidden_layers`, 4 × `hidden_size`,
 * `subsampling_conv_channels`) and its output projection
 * (`output_proj_dims`). clip.cpp checks no shape when it loads a tower: a
 * field off by one was written with exit 0 and failed (or read past a
 * tensor) when an image or a clip came; transformers cannot load such a
 * checkpoint. Where the tensors agree with the config but llama.cpp
 * computes the attention otherwise (it splits the width into
 * `head_count` heads and has no KV-head key for these towers), the tower
 * is refused too.
 *
 * @module
 */

import { count, fmt } from "./_key_axis.ts";
import type { ClipShapeProblem, ClipTensor, VisionConfig } from "./clip_shapes.ts";
import { record } from "./kv.ts";

/** A field of a config section with the words naming it: `config.json's audio_config.hidden_size 32`. */
interface Field {
  readonly value: number;
  readonly label: string;
}

/** The first of `tensors` whose name `pattern` matches. */
const first = (tensors: readonly ClipTensor[], pattern: RegExp) =>
  tensors.find((t) => pattern.test(t.name));

/**
 * The first tensor whose shape is not `want` (`undefined` entries unchecked), with the
 * fields it follows from; `undefined` when each matches.
 */
function mismatch(
  tensors: readonly ClipTensor[],
  pattern: RegExp,
  want: readonly (number | undefined)[],
  ...fields: readonly (Field | undefined)[]
): ClipShapeProblem | undefined {
  for (const t of tensors) {
    if (!pattern.test(t.name)) continue;
    const s = t.shape;
    if (s.length === want.length && s.every((n, i) => want[i] === undefined || want[i] === n)) {
      continue;
    }
    // "config.json's" once, before the first field.
    const by = fields.flatMap((f) => f === undefined ? [] : [f.label]).map((l, i) =>
      i === 0 ? l : l.replace(/^config\.json's /, "")
    ).join(", ");
    return { tensor: t.name, reason: `shape ${fmt(s)}, expected ${fmt(want)} (${by})` };
  }
  return undefined;
}

/** A product of fields as one, for an expected size and its words. */
function times(a: Field | undefined, b: Field | undefined): Field | undefined {
  return a === undefined || b === undefined ? undefined : {
    value: a.value * b.value,
    label: `${a.label} × ${b.label.replace(/^config\.json's /, "")}`,
  };
}

/**
 * Check Gemma 4's towers (projectors `gemma4v`, `gemma4uv`, `gemma4a`) of
 * a vision GGUF against the config they were written from.
 *
 * @example Usage
 * ```ts
 * import { gemma4TowerProblem } from "./gemma4_tower_shapes.ts";
 * const kv = new Map<string, unknown>([["clip.vision.projector_type", "gemma4v"]]);
 * const problem = gemma4TowerProblem((k) => kv.get(k), {
 *   vision: { head_dim: 17 },
 *   top: {},
 * }, [{ name: "v.blk.0.attn_q_norm.weight", shape: [16] }]);
 * console.assert(problem?.reason.includes("vision_config.head_dim 17"));
 * ```
 *
 * @param kv The vision GGUF's keys.
 * @param config The config the keys were made from (`audio_config` read from its top level).
 * @param tensors The vision GGUF's tensors, row-major.
 * @returns The first problem, or `undefined` (also for another projector).
 */
export function gemma4TowerProblem(
  kv: (key: string) => unknown,
  config: VisionConfig,
  tensors: readonly ClipTensor[],
): ClipShapeProblem | undefined {
  const vision = kv("clip.vision.projector_type");
  const audio = kv("clip.audio.projector_type");
  const section = (name: string, o: Readonly<Record<string, unknown>>) => (key: string) => {
    const value = count(o[key]);
    return value === undefined
      ? undefined
      : { value, label: `config.json's ${name}.${key} ${value}` } as Field;
  };
  const v = section("vision_config", config.vision);
  const audioConfig = record(config.top["audio_config"]) ?? {};
  const a = section("audio_config", audioConfig);
  return (vision === "gemma4v" ? visionProblem(v, tensors) : undefined) ??
    (vision === "gemma4uv" ? unifiedVisionProblem(v, tensors) : undefined) ??
    (audio === "gemma4a" ? audioProblem(a, audioConfig, tensors) : undefined);
}

/** The vision tower's attention, position tables and projection. */
function visionProblem(
  v: (key: string) => Field | undefined,
  tensors: readonly ClipTensor[],
): ClipShapeProblem | undefined {
  const width = v("hidden_size");
  const head = v("head_dim");
  const heads = v("num_attention_heads");
  const kvHeads = v("num_key_value_heads");
  const problem = mismatch(tensors, /^v\.blk\.\d+\.attn_[qk]_norm\.weight$/, [head?.value], head) ??
    mismatch(
      tensors,
      /^v\.blk\.\d+\.attn_q\.weight$/,
      [times(heads, head)?.value, undefined],
      times(heads, head),
    ) ??
    mismatch(
      tensors,
      /^v\.blk\.\d+\.attn_[kv]\.weight$/,
      [times(kvHeads, head)?.value, undefined],
      times(kvHeads, head),
    ) ??
    mismatch(
      tensors,
      /^v\.blk\.\d+\.attn_out\.weight$/,
      [undefined, times(heads, head)?.value],
      times(heads, head),
    ) ??
    positions(v("position_embedding_size"), tensors) ??
    projection(v("output_proj_dims") ?? width, tensors);
  if (problem !== undefined) return problem;
  // clip.cpp splits the width into head_count heads of width / head_count, each its own K and V.
  const q = first(tensors, /^v\.blk\.0\.attn_q\.weight$/);
  if (q === undefined || width === undefined || heads === undefined) return undefined;
  if (head !== undefined && head.value * heads.value !== width.value) {
    return {
      tensor: q.name,
      reason: `${heads.label} heads of ${head.label.replace(/^config\.json's /, "")}, ` +
        `but llama.cpp's gemma4v splits ${width.label.replace(/^config\.json's /, "")} into ` +
        `${heads.value} heads`,
    };
  }
  if (kvHeads !== undefined && kvHeads.value !== heads.value) {
    return {
      tensor: q.name,
      reason: `${kvHeads.label}, but llama.cpp's gemma4v gives every one of the ` +
        `${heads.value} heads its own key and value (no KV-head key for it)`,
    };
  }
  return undefined;
}

/** The unified class's vision embedder: its position table and projection. */
function unifiedVisionProblem(
  v: (key: string) => Field | undefined,
  tensors: readonly ClipTensor[],
): ClipShapeProblem | undefined {
  return positions(v("mm_posemb_size"), tensors) ??
    projection(v("output_proj_dims") ?? v("mm_embed_dim"), tensors);
}

/** The x and y position tables, `[2, size, width]`. */
function positions(size: Field | undefined, tensors: readonly ClipTensor[]) {
  return mismatch(tensors, /^v\.position_embd\.weight$/, [2, size?.value, undefined], size);
}

/** The projection into the text model reads the tower's output (`output_proj_dims`). */
function projection(input: Field | undefined, tensors: readonly ClipTensor[]) {
  return mismatch(tensors, /^mm\.input_projection\.weight$/, [undefined, input?.value], input);
}

/** The audio conformer: transformers' `Gemma4AudioModel` by its fields. */
function audioProblem(
  a: (key: string) => Field | undefined,
  audio: Readonly<Record<string, unknown>>,
  tensors: readonly ClipTensor[],
): ClipShapeProblem | undefined {
  const width = a("hidden_size");
  const heads = a("num_attention_heads");
  const out = a("output_proj_dims");
  const E = width?.value;
  // transformers' head_dim: hidden_size // num_attention_heads.
  const head = E !== undefined && heads !== undefined
    ? {
      value: Math.trunc(E / heads.value),
      label: `${width!.label} // ${heads.label.replace(/^config\.json's audio_config\./, "")}`,
    }
    : undefined;
  const qkv = times(heads, head);
  const scaled = (n: number) => width === undefined ? undefined : { ...width, value: n * E! };
  const [four, two] = [scaled(4), scaled(2)];
  const B = /^a\.blk\.\d+\./.source;
  const at = (rest: string) => new RegExp(`${B}${rest}$`);
  return subsampling(audio, width, tensors) ??
    mismatch(tensors, at(String.raw`(ln2|\w*norm\w*)\.weight`), [E], width) ??
    mismatch(
      tensors,
      at(String.raw`(attn_q|attn_k|attn_v|attn_k_rel)\.weight`),
      [qkv?.value, E],
      qkv,
      width,
    ) ??
    mismatch(tensors, at(String.raw`attn_out\.weight`), [E, qkv?.value], width, qkv) ??
    mismatch(tensors, at(String.raw`per_dim_scale\.weight`), [head?.value], head) ??
    mismatch(tensors, at(String.raw`ffn_up(_1)?\.weight`), [four?.value, E], four) ??
    mismatch(tensors, at(String.raw`ffn_down(_1)?\.weight`), [E, four?.value], four) ??
    mismatch(tensors, at(String.raw`conv_pw1\.weight`), [two?.value, E], two) ??
    mismatch(tensors, at(String.raw`conv_pw2\.weight`), [E, E], width) ??
    mismatch(tensors, at(String.raw`conv_dw\.weight`), [E, undefined], width) ??
    mismatch(tensors, /^a\.pre_encode\.out\.weight$/, [out?.value, E], out, width) ??
    mismatch(tensors, /^a\.pre_encode\.out\.bias$/, [out?.value], out) ??
    mismatch(tensors, /^mm\.a\.input_projection\.weight$/, [undefined, out?.value], out) ??
    audioLayers(a("num_hidden_layers"), tensors);
}

/**
 * The two subsampling convolutions (`subsampling_conv_channels` out
 * channels each, 3 × 3) and the projection after them, which reads
 * `channels[0] // 4 × channels[1]` values (transformers' `proj_input_dim`).
 */
function subsampling(
  audio: Readonly<Record<string, unknown>>,
  width: Field | undefined,
  tensors: readonly ClipTensor[],
): ClipShapeProblem | undefined {
  const ch = audio["subsampling_conv_channels"];
  if (!Array.isArray(ch) || ch.length !== 2 || !ch.every((c) => count(c) !== undefined)) {
    return undefined;
  }
  const [c0, c1] = ch as [number, number];
  const f = {
    value: 0,
    label: `config.json's audio_config.subsampling_conv_channels ${JSON.stringify(ch)}`,
  };
  return mismatch(tensors, /^a\.conv1d\.0\.weight$/, [c0, 1, 3, 3], f) ??
    mismatch(tensors, /^a\.conv1d\.0\.norm\.weight$/, [c0], f) ??
    mismatch(tensors, /^a\.conv1d\.1\.weight$/, [c1, c0, 3, 3], f) ??
    mismatch(tensors, /^a\.conv1d\.1\.norm\.weight$/, [c1], f) ??
    mismatch(
      tensors,
      /^a\.input_projection\.weight$/,
      [width?.value, Math.trunc(c0 / 4) * c1],
      f,
      width,
    );
}

/** A conformer layer past `num_hidden_layers`, or one it counts without a tensor. */
function audioLayers(
  layers: Field | undefined,
  tensors: readonly ClipTensor[],
): ClipShapeProblem | undefined {
  if (layers === undefined) return undefined;
  const seen = new Set<number>();
  for (const t of tensors) {
    const m = /^a\.blk\.(\d+)\./.exec(t.name);
    if (m === null) continue;
    const b = Number(m[1]);
    if (b >= layers.value) {
      return { tensor: t.name, reason: `layer ${b}, but the audio tower has ${layers.label}` };
    }
    seen.add(b);
  }
  for (let b = 0; b < (seen.size > 0 ? layers.value : 0); b++) {
    if (!seen.has(b)) {
      return {
        tensor: `layer ${b}`,
        reason: `no tensor of it in the audio tower, though ${layers.label}`,
      };
    }
  }
  return undefined;
}
