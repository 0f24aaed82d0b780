// This module is browser compatible.

/**
 * In-memory APR v2 encoder for small models and browsers (DESIGN.md §2.7).
 *
 * @module
 */

import type { DType } from "../../dtype.ts";
import type { ModelMetadata } from "../../tensor.ts";
import { crc32 } from "./crc32.ts";
import { APR_FOOTER_SIZE, type AprLayoutOptions, planAprLayout } from "./layout.ts";

/** One tensor for {@linkcode encodeApr}. */
export interface AprTensorData {
  /** Tensor name. */
  readonly name: string;
  /** Element type (must have an APR code). */
  readonly dtype: DType;
  /** Dimensions, outermost first. */
  readonly shape: readonly number[];
  /** The payload, exactly `tensorByteLength(dtype, shape)` bytes. */
  readonly data: Uint8Array;
}

/** The model for {@linkcode encodeApr}. */
export interface EncodeAprInput {
  /** APR metadata (`total_size` and `param_count` filled from the tensors when absent). */
  readonly metadata?: ModelMetadata;
  /** Tensors, in any order. */
  readonly tensors: readonly AprTensorData[];
}

/**
 * Encode a whole APR v2 file in memory. Produces the same bytes as
 * `AprSink` given the same metadata, tensors and options.
 *
 * @example Usage
 * ```ts
 * import { encodeApr } from "./encode_apr.ts";
 * const bytes = encodeApr({
 *   metadata: { model_type: "demo" },
 *   tensors: [{ name: "w", dtype: "F32", shape: [2], data: new Uint8Array(8) }],
 * });
 * console.assert(bytes.length % 64 === 4);
 * ```
 *
 * @param input Metadata and tensors.
 * @param options Data order and flags.
 * @returns The file bytes.
 * @throws {TypeError|RangeError} When a tensor cannot be stored (see `planAprLayout`).
 */
export function encodeApr(input: EncodeAprInput, options: AprLayoutOptions = {}): Uint8Array {
  const layout = planAprLayout(
    input.metadata ?? {},
    input.tensors.map((t) => ({
      name: t.name,
      dtype: t.dtype,
      shape: t.shape,
      byteLength: t.data.length,
    })),
    options,
  );
  const out = new Uint8Array(layout.fileSize);
  out.set(layout.prefix);
  for (const t of layout.tensors) out.set(input.tensors[t.inputIndex]!.data, t.fileOffset);
  const end = layout.fileSize - APR_FOOTER_SIZE;
  new DataView(out.buffer).setUint32(end, crc32(out.subarray(0, end)), true);
  return out;
}
