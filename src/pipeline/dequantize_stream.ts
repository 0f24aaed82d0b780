// This module is browser compatible.

/**
 * `DequantizeStream`: decode tensors a target format cannot hold to F32,
 * streaming, in bounded memory (e.g. Q4_K or APR_Q8 on the way to
 * SafeTensors, or everything for `--dtype f32`).
 *
 * @module
 */

import { DTYPES, elementCount } from "../dtype.ts";
import { decodeStream } from "../quant/decode.ts";
import type { ModelChunk, TensorEntry, TensorInfo } from "../tensor.ts";

/** Options of {@linkcode DequantizeStream}. */
export interface DequantizeStreamOptions {
  /**
   * Which tensors stay as they are; the others are decoded to F32.
   * @default every tensor is decoded except F32 ones
   */
  keep?: (info: TensorInfo) => boolean;
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
            const f32: TensorInfo = {
              name: info.name,
              dtype: "F32",
              shape: info.shape,
              byteLength: elementCount(info.shape) * 4,
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
  return {
    info,
    open: () =>
      decodeStream(source.info, source.open()).pipeThrough(
        new TransformStream<Float32Array, Uint8Array>({
          transform(batch, controller) {
            // Float32Array memory is little-endian on every platform Deno runs on.
            controller.enqueue(new Uint8Array(batch.buffer, batch.byteOffset, batch.byteLength));
          },
        }),
      ),
  };
}
