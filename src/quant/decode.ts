// This module is browser compatible.

/**
 * Decode any tensor payload to float32 values: in one call for tensors that
 * fit in memory ({@linkcode decodeToFloat32}), or as a stream of bounded
 * batches for huge ones ({@linkcode decodeStream}).
 *
 * Decoding is exact for every float type and bit-exact with llama.cpp's
 * dequantizers for ggml types (FORMATS.md §3). Integers become the nearest
 * f32 (exact below 2^24). C64 has no float form and is rejected.
 *
 * @module
 */

import { type DType, DTYPES, elementCount, tensorByteLength } from "../dtype.ts";
import type { TensorInfo } from "../tensor.ts";
import { blockDecoder, noFloatForm } from "./_block_decoders.ts";
import { DEFAULT_MAX_CHUNK_ELEMENTS, TensorDecoder } from "./_tensor_decoder.ts";

/**
 * Decode a whole tensor payload to float32.
 *
 * @param dtype The payload's element type.
 * @param bytes The exact payload (`tensorByteLength(dtype, shape)` bytes), at any offset.
 * @param shape The tensor's dimensions, outermost first.
 * @returns One f32 per element, row padding of block types removed.
 * @throws {TypeError} For C64, which has no float form.
 * @throws {RangeError} When `bytes` is not exactly the payload size.
 *
 * @example Usage
 * ```ts
 * import { decodeToFloat32 } from "./decode.ts";
 * const bytes = new Uint8Array([0x00, 0x3c, 0x00, 0xc0]); // f16 1, -2
 * console.assert(decodeToFloat32("F16", bytes, [2]).join() === "1,-2");
 * ```
 */
export function decodeToFloat32(
  dtype: DType,
  bytes: Uint8Array,
  shape: readonly number[],
): Float32Array {
  if (dtype === "C64") noFloatForm(dtype);
  const expect = tensorByteLength(dtype, shape);
  if (bytes.length !== expect) {
    throw new RangeError(
      `Cannot decode ${dtype} [${shape}]: payload has ${bytes.length} bytes, expected ${expect}`,
    );
  }
  const n = elementCount(shape);
  const out = new Float32Array(n);
  const spec = DTYPES[dtype];
  const fn = blockDecoder(dtype);
  if (spec.layout === "elements" && fn !== undefined) {
    fn(bytes, out);
    return out;
  }
  const dec = new TensorDecoder(
    { name: dtype, dtype, shape, byteLength: expect },
    Number.MAX_SAFE_INTEGER,
  );
  let pos = 0;
  dec.push(bytes, (v) => {
    out.set(v, pos);
    pos += v.length;
  });
  dec.finish();
  return out;
}

/** Options of {@linkcode decodeStream}. */
export interface DecodeStreamOptions {
  /**
   * Upper bound on the values in one emitted batch (rounded down to whole blocks).
   *
   * @default {1048576}
   */
  maxChunkElements?: number;
}

/**
 * Decode a tensor payload stream to float32 batches, in bounded memory:
 * partial blocks are carried between input chunks of any size, APR_Q8's scale
 * prefix is read first, and the row padding of ggml block types is dropped.
 *
 * @param info The tensor's dtype, shape and exact payload size.
 * @param payload The payload, in chunks of any size.
 * @param options Batch size.
 * @returns Batches of f32 values, in element order.
 * @throws {TypeError} For C64 (before reading anything).
 *
 * @example Usage
 * ```ts
 * import { decodeStream } from "./decode.ts";
 * const info = { name: "w", dtype: "BF16" as const, shape: [2], byteLength: 4 };
 * const payload = ReadableStream.from([new Uint8Array([0x80, 0x3f, 0x00]), new Uint8Array([0xc0])]);
 * const values: number[] = [];
 * for await (const batch of decodeStream(info, payload)) values.push(...batch);
 * console.assert(values.join() === "1,-2");
 * ```
 */
export function decodeStream(
  info: TensorInfo,
  payload: ReadableStream<Uint8Array>,
  options: DecodeStreamOptions = {},
): ReadableStream<Float32Array> {
  const decoder = new TensorDecoder(info, options.maxChunkElements ?? DEFAULT_MAX_CHUNK_ELEMENTS);
  return payload.pipeThrough(
    new TransformStream<Uint8Array, Float32Array>({
      transform(chunk, controller) {
        decoder.push(chunk, (v) => controller.enqueue(v));
      },
      flush() {
        decoder.finish();
      },
    }),
  );
}
