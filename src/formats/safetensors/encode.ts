// This module is browser compatible.

/**
 * An in-memory SafeTensors encoder for small models, browsers and tests.
 *
 * @module
 */

import type { DType } from "../../dtype.ts";
import { checkSafetensorsTensors, layoutSafetensors } from "./_layout.ts";

/** One tensor for {@linkcode encodeSafetensors}. */
export interface EncodeSafetensorsTensor {
  /** Tensor name. */
  name: string;
  /** Element type; must be one SafeTensors has. */
  dtype: DType;
  /** Dimensions, outermost first. */
  shape: readonly number[];
  /** The payload, exactly dtype × shape bytes, little-endian. */
  data: Uint8Array;
}

/** Input of {@linkcode encodeSafetensors}. */
export interface EncodeSafetensorsInput {
  /** `__metadata__` (string → string); omitted from the file when absent. */
  metadata?: Readonly<Record<string, string>>;
  /** Tensors, written in this order. */
  tensors: readonly EncodeSafetensorsTensor[];
}

/**
 * Encode tensors as one SafeTensors file in memory, laid out like the
 * streaming writer does: JSON padded with spaces so data starts 8-aligned,
 * tensors contiguous in the given order.
 *
 * @example Usage
 * ```ts
 * import { encodeSafetensors } from "./encode.ts";
 * const bytes = encodeSafetensors({
 *   metadata: { format: "pt" },
 *   tensors: [{ name: "b", dtype: "F32", shape: [1], data: new Uint8Array(4) }],
 * });
 * console.assert(bytes.length % 8 === 4);
 * ```
 *
 * @param input Metadata and tensors.
 * @returns The file bytes.
 * @throws {TypeError} For a dtype SafeTensors lacks, or a reserved or repeated name.
 * @throws {RangeError} When a payload's length disagrees with dtype × shape.
 */
export function encodeSafetensors(input: EncodeSafetensorsInput): Uint8Array<ArrayBuffer> {
  const infos = input.tensors.map((t) => ({
    name: t.name,
    dtype: t.dtype,
    shape: t.shape,
    byteLength: t.data.length,
  }));
  checkSafetensorsTensors(infos);
  const layout = layoutSafetensors(infos, input.metadata);
  const out = new Uint8Array(layout.fileSize);
  out.set(layout.headerBytes, 0);
  input.tensors.forEach((t, i) => out.set(t.data, layout.offsets[i]!));
  return out;
}
