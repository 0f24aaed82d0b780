// This module is browser compatible.

/**
 * What every quantized-checkpoint method shares: the contract a method
 * module implements, its context (the parsed `quantization_config`, how to
 * name a bad file), the config readers, and the step that swaps a group of
 * companion tensors for the one tensor they encode.
 *
 * @module
 */

import { ModelFormatError } from "../../errors.ts";
import type { TensorEntry } from "../../tensor.ts";

/** What a method module sees of the checkpoint. */
export interface QuantContext {
  /** The `quantization_config` object. */
  readonly config: Readonly<Record<string, unknown>>;
  /** The model's path or URL, for messages. */
  readonly location: string;
  /** Bytes of packed source kept per tile (tests use small tiles). @default {TILE_BYTES} */
  readonly tileBytes?: number;
}

/**
 * One quantization method (`quantization_config.quant_method`): which
 * companion tensors combine and how they dequantize.
 */
export interface QuantMethod {
  /** The `quant_method` value. */
  readonly name: string;
  /** The published source of the formula, for readers of the code. */
  readonly reference: string;
  /**
   * Why a GGUF output of this method's checkpoints is refused, when it is
   * (llama.cpp keeps some methods' blocks as a ggml type aprkit cannot write yet).
   */
  readonly ggufRefusal?: string;
  /**
   * For GGUF output, when llama.cpp's converter keeps the method's blocks as
   * a ggml type (gpt-oss's MXFP4, NVFP4): the checkpoint's tensors with those
   * blocks as stored, every group checked as {@linkcode QuantMethod.dequantize}
   * checks it, for the GGUF layout to repack (see `arch/kept_blocks.ts`), and
   * any other group dequantized. `undefined` when this checkpoint keeps none
   * (GGUF output then gets the dequantized tensors, as when absent).
   */
  packedForGguf?(
    tensors: readonly TensorEntry[],
    context: QuantContext,
  ): TensorEntry[] | undefined | Promise<TensorEntry[] | undefined>;
  /** The ggml type {@linkcode QuantMethod.packedForGguf} keeps. */
  readonly keeps?: "MXFP4" | "NVFP4";
  /** Suffixes of the tensors the method consumes; any left over is an error. */
  readonly companions: readonly string[];
  /**
   * The checkpoint's tensors with every quantized group replaced by one F32
   * tensor (streamed in row bands) and the companion tensors removed. Checks
   * every shape before returning: the header plan is exact. May read a few
   * bytes (compressed-tensors' `weight_shape`).
   */
  dequantize(
    tensors: readonly TensorEntry[],
    context: QuantContext,
  ): TensorEntry[] | Promise<TensorEntry[]>;
}

/**
 * The error for a checkpoint that breaks its method's rules.
 *
 * @param context The checkpoint.
 * @param reason What is wrong, naming the tensor.
 * @returns The error (exit 2 in the CLI).
 */
export function checkpointError(context: QuantContext, reason: string): ModelFormatError {
  const method = String(context.config["quant_method"]);
  return new ModelFormatError("model", context.location, `${method} checkpoint: ${reason}`);
}

/**
 * A positive integer field of the config, or `fallback` when absent.
 *
 * @param context The checkpoint.
 * @param key The field.
 * @param fallback Used when the field is absent or null.
 * @returns The value.
 */
export function configInt(context: QuantContext, key: string, fallback?: number): number {
  const value = context.config[key];
  if ((value === undefined || value === null) && fallback !== undefined) return fallback;
  if (typeof value !== "number" || !Number.isSafeInteger(value)) {
    throw checkpointError(
      context,
      `quantization_config.${key} must be an integer (found ${JSON.stringify(value) ?? "none"})`,
    );
  }
  return value;
}

/**
 * Block sizes (`weight_block_size`, `block_structure`): absent, or a list of
 * positive integers.
 *
 * @param context The checkpoint.
 * @param value The field's value.
 * @param field Its name, for the message.
 * @returns The sizes, or `undefined`.
 */
export function blockSizes(
  context: QuantContext,
  value: unknown,
  field: string,
): readonly number[] | undefined {
  if (value === undefined || value === null) return undefined;
  if (
    !Array.isArray(value) || value.length === 0 || value.length > 8 ||
    !value.every((v) => typeof v === "number" && Number.isSafeInteger(v) && v > 0)
  ) {
    throw checkpointError(
      context,
      `${field} must be a list of positive integers (found ${JSON.stringify(value)})`,
    );
  }
  return value as number[];
}

/**
 * The tensor named `name`, or a one-line error naming what needed it.
 *
 * @param byName The checkpoint's tensors.
 * @param name The tensor wanted.
 * @param context The checkpoint.
 * @param by The tensor that needs it.
 * @returns The entry.
 */
export function companion(
  byName: ReadonlyMap<string, TensorEntry>,
  name: string,
  context: QuantContext,
  by: string,
): TensorEntry {
  const entry = byName.get(name);
  if (entry === undefined) {
    throw checkpointError(context, `tensor "${by}" has no "${name}" beside it`);
  }
  return entry;
}

/** One quantized weight found by the tensor that marks it (`….qweight`, `….weight_scale`). */
export interface AnchoredWeight {
  /** The marking tensor's name. */
  readonly name: string;
  /** Its name without the marking suffix. */
  readonly base: string;
  /** The tensor `base + suffix`, or a one-line error naming the marking tensor. */
  part(suffix: string): TensorEntry;
  /** The tensor `base + suffix`, or `undefined` when the checkpoint has none. */
  optional(suffix: string): TensorEntry | undefined;
}

/**
 * Every tensor whose name ends in `suffix`, in order, with the lookups of
 * the tensors beside it: how each method finds its quantized weights.
 *
 * @param tensors The checkpoint's tensors.
 * @param suffix The suffix that marks a quantized weight.
 * @param context For the error naming a missing companion.
 * @returns One entry per marking tensor.
 */
export function anchoredWeights(
  tensors: readonly TensorEntry[],
  suffix: string,
  context: QuantContext,
): AnchoredWeight[] {
  const byName = new Map(tensors.map((t) => [t.info.name, t]));
  return tensors.filter((t) => t.info.name.endsWith(suffix)).map(({ info: { name } }) => {
    const base = name.slice(0, -suffix.length);
    return {
      name,
      base,
      part: (s: string) => companion(byName, base + s, context, name),
      optional: (s: string) => byName.get(base + s),
    };
  });
}

/** A dequantized (or kept) tensor and the checkpoint tensors it stands for. */
export interface ReplacedGroup {
  /** The new tensor. */
  readonly entry: TensorEntry;
  /**
   * The names it replaces; it takes the place of the first of them in the
   * reader's order. The first name is the stored tensor that marks the group
   * (`.qweight`, `.weight_packed`…; see {@linkcode markedBy}).
   */
  readonly replaces: readonly string[];
  /** Further new tensors placed after it. */
  readonly extra?: readonly TensorEntry[];
}

/**
 * Longest row a dequantized tensor may have (values): a row is the unit of
 * work, and a tile holds a few; real rows (input features, hidden sizes) are
 * under 2^18.
 */
export const MAX_ROW_VALUES = 1 << 20;

/**
 * The tensor each group's new tensor was made from by {@linkcode replaceGroups}:
 * a side table rather than a field, so an entry stays a plain
 * {@linkcode TensorEntry} for every transform after the reader.
 */
const MARKS = new WeakMap<TensorEntry, string>();

/**
 * The stored tensor that marks the group `entry` was made from (the first
 * of its `replaces`): llama.cpp's converter adds a weight it makes under a
 * new name in the order it read these (`dequant_model`'s `new_tensors`).
 *
 * @param entry A tensor {@linkcode replaceGroups} returned.
 * @returns The marking tensor's name, or `undefined` for one it did not make.
 */
export function markedBy(entry: TensorEntry): string | undefined {
  return MARKS.get(entry);
}

/**
 * Swap groups for their dequantized tensors: each new tensor (and its
 * `extra` ones after it) takes the place of the first member of its group;
 * consumed tensors are dropped.
 *
 * @param tensors The checkpoint's tensors, in order.
 * @param groups New tensor → the names it replaces.
 * @param dropped Further names to drop (activation scales, unused).
 * @param context For the error when a new name collides with a kept tensor.
 * @returns The new list.
 */
export function replaceGroups(
  tensors: readonly TensorEntry[],
  groups: readonly ReplacedGroup[],
  dropped: ReadonlySet<string>,
  context: QuantContext,
): TensorEntry[] {
  const at = new Map(tensors.map((t, i) => [t.info.name, i]));
  const consumed = new Set(dropped);
  const placed = new Map<number, TensorEntry[]>();
  for (const group of groups) {
    const shape = group.entry.info.shape;
    if (shape.length > 0 && shape[shape.length - 1]! > MAX_ROW_VALUES) {
      throw checkpointError(
        context,
        `the dequantized tensor "${group.entry.info.name}" ${
          shapeText(shape)
        } has rows over the ${MAX_ROW_VALUES}-value limit`,
      );
    }
    for (const name of group.replaces) consumed.add(name);
    MARKS.set(group.entry, group.replaces[0]!);
    const first = Math.min(...group.replaces.map((n) => at.get(n)!));
    placed.set(first, [group.entry, ...(group.extra ?? [])]);
  }
  const out: TensorEntry[] = [];
  const names = new Set<string>();
  tensors.forEach((t, i) => {
    const entries = placed.get(i) ?? (consumed.has(t.info.name) ? [] : [t]);
    for (const entry of entries) {
      if (names.has(entry.info.name)) {
        throw checkpointError(
          context,
          `the dequantized tensor "${entry.info.name}" would collide with a tensor of the same name`,
        );
      }
      names.add(entry.info.name);
      out.push(entry);
    }
  });
  return out;
}

/**
 * Product of dimensions.
 *
 * @param shape The dimensions.
 * @returns The element count.
 */
export function count(shape: readonly number[]): number {
  return shape.reduce((a, b) => a * b, 1);
}

/**
 * The shape as text, for messages: `[4096, 11008]`.
 *
 * @param shape The dimensions.
 * @returns The text.
 */
export function shapeText(shape: readonly number[]): string {
  return `[${shape.join(", ")}]`;
}
