/**
 * The imperative APR v2 writer (DESIGN.md §2.7): the tensor plan up front,
 * then the tensors, each written once at its final offset through
 * {@linkcode AprSink}.
 *
 * @module
 */

import { DEFAULT_CHUNK_SIZE } from "../../io/byte_source.ts";
import type { ModelChunk, ModelMetadata, TensorInfo } from "../../tensor.ts";
import { AprSink, type AprSinkOptions, type AprSinkResult } from "./sink.ts";

/** The plan and options of {@linkcode AprWriter.create}. */
export interface AprWriterOptions extends AprSinkOptions {
  /** APR metadata (`total_size` and `param_count` filled from the plan when absent). */
  metadata?: ModelMetadata;
  /** Every tensor the file will hold, with its exact byte length. */
  tensors: readonly TensorInfo[];
}

/** Split a byte array into bounded chunks (views, no copy). */
function chunked(data: Uint8Array): ReadableStream<Uint8Array> {
  let at = 0;
  return new ReadableStream<Uint8Array>({
    pull(controller) {
      if (at >= data.length) {
        controller.close();
        return;
      }
      const end = Math.min(data.length, at + DEFAULT_CHUNK_SIZE);
      controller.enqueue(data.subarray(at, end));
      at = end;
    },
  }, { highWaterMark: 0 });
}

/**
 * Write an APR v2 file from a plan: `create()` with every tensor's info,
 * `add()` each tensor's bytes (any order), then `close()`. Memory holds only
 * what the caller passes to `add()`.
 *
 * @example Usage
 * ```ts ignore
 * import { AprWriter } from "./writer.ts";
 * const writer = await AprWriter.create("tiny.apr", {
 *   metadata: { model_type: "demo" },
 *   tensors: [{ name: "w", dtype: "F32", shape: [2], byteLength: 8 }],
 * });
 * await writer.add("w", new Uint8Array(new Float32Array([1, 2]).buffer));
 * const { footerCrc } = await writer.close();
 * ```
 */
export class AprWriter {
  #sink: AprSink;
  #writer: WritableStreamDefaultWriter<ModelChunk>;
  #infos: Map<string, TensorInfo>;

  /**
   * Use {@linkcode AprWriter.create}.
   * Never throws.
   *
   * @param sink The sink, header already written.
   * @param writer The sink's writer.
   * @param tensors The plan.
   */
  constructor(
    sink: AprSink,
    writer: WritableStreamDefaultWriter<ModelChunk>,
    tensors: readonly TensorInfo[],
  ) {
    this.#sink = sink;
    this.#writer = writer;
    this.#infos = new Map(tensors.map((t) => [t.name, t]));
  }

  /**
   * Lay out the file and write its header, metadata and index.
   *
   * @param path Output path (written through `path + ".partial"`).
   * @param options The plan (`metadata`, `tensors`) and sink options (`force`, `resume`…).
   * @returns The writer.
   * @throws {UsageError} When `path` exists and `force` is not set.
   * @throws {TypeError|RangeError} When a tensor cannot be stored in APR.
   */
  static async create(path: string, options: AprWriterOptions): Promise<AprWriter> {
    const { metadata, tensors, ...sinkOptions } = options;
    const sink = await AprSink.create(path, sinkOptions);
    const writer = sink.getWriter();
    await writer.write({
      type: "header",
      header: { format: "apr", metadata: metadata ?? {}, tensors },
    });
    return new AprWriter(sink, writer, tensors);
  }

  /**
   * Write one tensor's payload.
   *
   * @param name A tensor of the plan.
   * @param data Its bytes, exactly `byteLength` of them, or a stream of them.
   * @throws {TypeError} When `name` is not in the plan or was already added.
   * @throws {RangeError} When the data length differs from the plan.
   */
  async add(name: string, data: Uint8Array | ReadableStream<Uint8Array>): Promise<void> {
    const info = this.#infos.get(name);
    if (info === undefined) {
      const error = new TypeError(`Cannot add tensor "${name}": it is not in the writer's plan`);
      await this.abort(error);
      throw error;
    }
    let opened = false;
    await this.#writer.write({
      type: "tensor",
      tensor: {
        info,
        open: () => {
          if (data instanceof Uint8Array) return chunked(data);
          if (opened) {
            throw new TypeError(`Cannot re-open tensor "${name}": it was given as a stream`);
          }
          opened = true;
          return data;
        },
      },
    });
  }

  /**
   * Finish the file: footer, sync, rename to the output path.
   *
   * @returns What was written.
   * @throws {Error} When a tensor of the plan was never added (the partial file is removed).
   */
  async close(): Promise<AprSinkResult> {
    await this.#writer.close();
    return this.#sink.result!;
  }

  /**
   * Give up: the partial output is kept for a resume when tensors were
   * committed and `reason` is not bad input, removed otherwise.
   * Never throws. Failures while removing the partial file are ignored.
   *
   * @param reason Why.
   */
  async abort(reason?: unknown): Promise<void> {
    await this.#writer.abort(reason).catch(() => {});
  }
}
