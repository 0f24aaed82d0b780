/**
 * LZ4-compressed APR output (`--compress lz4`, APR_V2.md §8): a
 * `WritableStream<ModelChunk>` that lays the file out from the header chunk
 * like {@linkcode AprSink}, fills the uncompressed image in memory (the
 * format is one LZ4 block of the whole file, so the compressor needs it all;
 * the image is refused at the header chunk when it would be 4 GiB or more),
 * then writes header + u32 length + block to `OUT.partial` and renames it.
 *
 * No resume: the output is written in one go at the end.
 *
 * Not browser compatible: it writes files.
 *
 * @module
 */

import { UsageError } from "../../errors.ts";
import type { ModelChunk, ModelHeader, ProgressCallback, TensorEntry } from "../../tensor.ts";
import { crc32 } from "./crc32.ts";
import { APR_FLAGS } from "./header.ts";
import { APR_FOOTER_SIZE, type AprLayout, planAprLayout } from "./layout.ts";
import { APR_LZ4_MAX_IMAGE_SIZE, encodeAprLz4 } from "./lz4_image.ts";
import { assertOutputFree } from "../../io/fs_paths.ts";
import { renameIntoPlace, writeFreshFile } from "../../io/partial_file.ts";
import { fs } from "../../runtime/fs.ts";

/** Options of {@linkcode AprLz4Sink.create}. */
export interface AprLz4SinkOptions {
  /** Replace an existing file. @default {false} */
  force?: boolean;
  /** Called as tensors are copied into the image (phase `"write"`). */
  onProgress?: ProgressCallback;
}

/**
 * Write a model stream as one LZ4-compressed APR v2 file.
 *
 * @example Usage
 * ```ts ignore
 * import { AprLz4Sink } from "./lz4_sink.ts";
 * await model.chunks().pipeTo(await AprLz4Sink.create("model.apr"));
 * ```
 */
export class AprLz4Sink extends WritableStream<ModelChunk> {
  /** The output path. */
  readonly path: string;

  /**
   * Use {@linkcode AprLz4Sink.create}.
   *
   * @param path The output path.
   * @param state The state machine doing the work.
   */
  private constructor(path: string, state: Lz4State) {
    super({
      write: (chunk) => state.write(chunk),
      close: () => state.close(),
    }, { highWaterMark: 1 });
    this.path = path;
  }

  /**
   * Create a sink writing `path` (through `path + ".partial"`).
   *
   * @param path Output path.
   * @param options Overwrite, progress.
   * @returns The sink.
   * @throws {UsageError} When `path` exists and `force` is not set.
   */
  static async create(path: string, options: AprLz4SinkOptions = {}): Promise<AprLz4Sink> {
    if (typeof path !== "string" || path === "") {
      throw new TypeError("Cannot create APR sink: the output path is empty");
    }
    await assertOutputFree(path, options.force);
    return new AprLz4Sink(path, new Lz4State(path, options));
  }
}

class Lz4State {
  #path: string;
  #options: AprLz4SinkOptions;
  #layout: AprLayout | undefined;
  #image: Uint8Array | undefined;
  #byName = new Map<string, AprLayout["tensors"][number]>();
  #done = new Set<string>();
  #bytesDone = 0;

  constructor(path: string, options: AprLz4SinkOptions) {
    this.#path = path;
    this.#options = options;
  }

  async write(chunk: ModelChunk): Promise<void> {
    if (chunk.type === "header") this.#header(chunk.header);
    else await this.#tensor(chunk.tensor);
  }

  #header(header: ModelHeader): void {
    if (this.#layout !== undefined) {
      throw new TypeError(`Cannot write "${this.#path}": a second header chunk arrived`);
    }
    const layout = planAprLayout(header.metadata, header.tensors, {
      flags: APR_FLAGS.LAYOUT_ROW_MAJOR | APR_FLAGS.LZ4,
    });
    // Checked before allocating the image (APR_V2.md §8: u32 length prefix).
    if (layout.fileSize > APR_LZ4_MAX_IMAGE_SIZE) {
      throw new UsageError(
        `Cannot write "${this.#path}" with compress: "lz4": the uncompressed file would be ${layout.fileSize} bytes, and LZ4 APR files must be under 4 GiB; leave out compress: "lz4"`,
      );
    }
    this.#layout = layout;
    for (const t of layout.tensors) this.#byName.set(t.info.name, t);
    this.#image = new Uint8Array(layout.fileSize);
    this.#image.set(layout.prefix);
  }

  async #tensor(entry: TensorEntry): Promise<void> {
    const image = this.#image;
    if (image === undefined) {
      throw new TypeError(`Cannot write "${this.#path}": a tensor chunk arrived before the header`);
    }
    const name = entry.info.name;
    const t = this.#byName.get(name);
    if (t === undefined || this.#done.has(name)) {
      throw new TypeError(
        `Cannot write "${this.#path}": tensor "${name}" is not in the header or arrived twice`,
      );
    }
    if (entry.info.byteLength !== t.info.byteLength || entry.info.dtype !== t.info.dtype) {
      throw new TypeError(
        `Cannot write "${this.#path}": tensor "${name}" arrived as ${entry.info.dtype} (${entry.info.byteLength} bytes), the header said ${t.info.dtype} (${t.info.byteLength} bytes)`,
      );
    }
    let written = 0;
    for await (const chunk of entry.open()) {
      if (written + chunk.length > t.info.byteLength) {
        throw new RangeError(
          `Cannot write tensor "${name}": its stream yields more than the ${t.info.byteLength} bytes its header says`,
        );
      }
      image.set(chunk, t.fileOffset + written);
      written += chunk.length;
    }
    if (written !== t.info.byteLength) {
      throw new RangeError(
        `Cannot write tensor "${name}": its stream yielded ${written} bytes, its header says ${t.info.byteLength}`,
      );
    }
    this.#done.add(name);
    this.#bytesDone += written;
    this.#options.onProgress?.({
      phase: "write",
      bytesDone: this.#bytesDone,
      bytesTotal: this.#layout!.payloadBytes,
      itemsDone: this.#done.size,
      itemsTotal: this.#layout!.tensors.length,
      current: name,
    });
  }

  async close(): Promise<void> {
    const layout = this.#layout;
    const image = this.#image;
    if (layout === undefined || image === undefined) {
      throw new TypeError(`Cannot write "${this.#path}": the stream ended before a header chunk`);
    }
    if (this.#done.size !== layout.tensors.length) {
      throw new Error(
        `Cannot write "${this.#path}": the stream ended after ${this.#done.size} of ${layout.tensors.length} tensors`,
      );
    }
    const end = layout.fileSize - APR_FOOTER_SIZE;
    new DataView(image.buffer).setUint32(end, crc32(image.subarray(0, end)), true);
    const bytes = encodeAprLz4(image);
    this.#image = undefined;
    const partial = `${this.#path}.partial`;
    try {
      await writeFreshFile(partial, bytes);
      await renameIntoPlace(partial, this.#path, this.#options.force);
    } catch (error) {
      await fs.remove(partial).catch(() => {});
      throw error;
    }
  }
}
