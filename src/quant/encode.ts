// This module is browser compatible.

/**
 * Encode a whole in-memory tensor from float32 values into any dtype aprkit
 * writes, with the same layout rules as {@linkcode QuantizeStream}: K-quant
 * rows padded to whole 256-value super-blocks, APR_Q4's last block
 * zero-filled, APR_Q8's scale first.
 *
 * @module
 */

import type { DType } from "../dtype.ts";
import { DTYPES, elementCount, tensorByteLength } from "../dtype.ts";
import { isEncodeTarget, TensorEncoder } from "./_tensor_encoder.ts";
import { BLOCK_ENCODERS } from "./_block_encoders.ts";
import { aprQ8Scale } from "./apr_q8.ts";
import { aprQ8Kernels } from "./kernels.ts";

/**
 * Encode float32 values as a `dtype` payload.
 *
 * @param dtype F32, F16, BF16, APR_Q8, or a type with a block encoder (APR_Q4,
 * Q4_K, Q5_K, Q6_K, Q8_0, Q5_0, Q5_1, Q4_0, Q4_1, Q2_K, Q3_K, TQ1_0, TQ2_0,
 * Q1_0, Q2_0, MXFP4).
 * @param values One value per element, row-major.
 * @param shape The tensor's dimensions, outermost first.
 * @returns The exact payload (`tensorByteLength(dtype, shape)` bytes).
 * @throws {TypeError} For a dtype aprkit does not encode.
 * @throws {RangeError} When `values.length` does not match the shape.
 *
 * @example Usage
 * ```ts
 * import { encodeFromFloat32 } from "./encode.ts";
 * const values = new Float32Array(300).fill(1);
 * const bytes = encodeFromFloat32("Q4_K", values, [1, 300]); // one row, padded to 512
 * console.assert(bytes.length === 2 * 144);
 * ```
 */
export function encodeFromFloat32(
  dtype: DType,
  values: Float32Array,
  shape: readonly number[],
): Uint8Array {
  if (!isEncodeTarget(dtype)) {
    // Types without an encoder (i-quants, NVFP4…) are read and decoded only.
    const why = DTYPES[dtype].decodeOnly
      ? "aprkit decodes this ggml type but has no encoder; "
      : "";
    throw new TypeError(
      `Cannot encode ${dtype}: ${why}expected one of F32, F16, BF16, APR_Q8, ` +
        Object.keys(BLOCK_ENCODERS).join(", "),
    );
  }
  const n = elementCount(shape);
  if (values.length !== n) {
    throw new RangeError(
      `Cannot encode ${dtype} [${shape}]: ${values.length} values given, ${n} expected`,
    );
  }
  const out = new Uint8Array(tensorByteLength(dtype, shape));
  const scale = dtype === "APR_Q8" ? aprQ8Scale(aprQ8Kernels().absmax(values)) : 1;
  const encoder = new TensorEncoder(dtype, shape, scale);
  let pos = 0;
  const emit = (b: Uint8Array | Promise<Uint8Array>) => {
    // Without a worker pool every piece is synchronous.
    const bytes = b as Uint8Array;
    out.set(bytes, pos);
    pos += bytes.length;
  };
  encoder.push(values, emit);
  encoder.finish(emit);
  return out;
}
