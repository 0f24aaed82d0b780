// This module is browser compatible.

/**
 * `DequantizeStream`: decode tensors a target format cannot hold to F32,
 * streaming, in bounded memory (e.g. Q4_K or APR_Q8 on the way to
 * SafeTensors, or everything for `--dtype f32`).
 *
 * @module
 */

import { DTYPES, tensorByteLength } from "../dtype.ts";
import { decodeStream } from "../quant/decode.ts";
import { TensorEncoder } from "../quant/_tensor_encoder.ts";
import type { ModelChunk, TensorEntry, TensorInfo } from "../tensor.ts";

/** Options of {@linkcode DequantizeStream}. */
export interface DequantizeStreamOptions {
  /**
   * Which tensors stay as they are; the others are decoded to F32.
   * @default every tensor is decoded except F32 ones
   */
  keep?: (info: TensorInfo) => boolean;
  /**
   * The type each decoded tensor is written as: F32, F16 (rounded to nearest
   * even), or a ggml block type re-encoded from the decoded values.
   * @default every decoded tensor becomes F32
   */
  to?: (info: TensorInfo) => "F32" | "F16" | "Q5_0" | "Q5_1" | "Q8_0";
  /** Called once with the tensors that will be decoded (as they arrive, before decoding), when there are any. */
  onDecode?: (infos: readonly TensorInfo[]) => void;
}

/**
 * Decodes the chosen tensors of a model stream to F32. The header is
 * rewritten so a sink lays out the new sizes; payloads are decoded lazily
 * when the sink opens them. Integer tensors cannot be decoded: choosing one
 * is an error naming it.
 *
 * @example Everything to F32
 * ```ts ignore
 * await model.chunks().pipeThrough(new DequantizeStream()).pipeTo(sink);
 * ```
 */
export class DequantizeStream extends TransformStream<ModelChunk, ModelChunk> {
  /**
   * Create the transform.
   * Never throws. A tensor whose payload does not decode makes the stream error with a `TypeError` or `RangeError`.
   *
   * @param options Which tensors to keep.
   */
  constructor(options: DequantizeStreamOptions = {}) {
    const keep = options.keep ?? ((info: TensorInfo) => info.dtype === "F32");
    const decoded = new Map<string, TensorInfo>();
    // The infos as they arrive, for onDecode: "Q4_K has no SafeTensors type", not "F32".
    const sources: TensorInfo[] = [];
    super({
      transform(chunk, controller) {
        if (chunk.type === "header") {
          const tensors = chunk.header.tensors.map((info) => {
            if (keep(info)) return info;
            if (!DTYPES[info.dtype].isFloat || info.dtype === "C64") {
              throw new TypeError(
                `Cannot convert tensor "${info.name}": ${info.dtype} has no float form and the target format cannot hold it`,
              );
            }
            const dtype = options.to?.(info) ?? "F32";
            const f32: TensorInfo = {
              name: info.name,
              dtype,
              shape: info.shape,
              byteLength: tensorByteLength(dtype, info.shape),
            };
            decoded.set(info.name, f32);
            sources.push(info);
            return f32;
          });
          if (sources.length > 0) options.onDecode?.(sources);
          controller.enqueue({ type: "header", header: { ...chunk.header, tensors } });
          return;
        }
        const target = decoded.get(chunk.tensor.info.name);
        controller.enqueue(
          target ? { type: "tensor", tensor: decodedEntry(chunk.tensor, target) } : chunk,
        );
      },
    });
  }
}

function decodedEntry(source: TensorEntry, info: TensorInfo): TensorEntry {
  return { info, open: () => decodedBytes(source, info.dtype as DecodeTarget) };
}

/** What {@linkcode decodedBytes} writes. */
export type DecodeTarget = "F32" | "F16" | "Q5_0" | "Q5_1" | "Q8_0";

/**
 * A tensor's values decoded from any float type and written as `to`, streaming.
 *
 * @param source The tensor.
 * @param to The output type.
 * @returns The payload in the output type.
 */
export function decodedBytes(source: TensorEntry, to: DecodeTarget): ReadableStream<Uint8Array> {
  // Without a worker pool, every piece the encoder emits is synchronous.
  const encoder = to === "F32" ? undefined : new TensorEncoder(to, source.info.shape);
  return decodeStream(source.info, source.open()).pipeThrough(
    new TransformStream<Float32Array, Uint8Array>({
      transform(batch, controller) {
        // Float32Array memory is little-endian on every platform Deno runs on.
        if (encoder === undefined) {
          controller.enqueue(new Uint8Array(batch.buffer, batch.byteOffset, batch.byteLength));
        } else encoder.push(batch, (bytes) => controller.enqueue((bytes as Uint8Array).slice()));
      },
      flush(controller) {
        encoder?.finish((bytes) => controller.enqueue((bytes as Uint8Array).slice()));
      },
    }),
  );
}
