/**
 * A streaming GGUF v3 file writer for export: a `WritableStream` of
 * {@linkcode ModelChunk}s. The header chunk fixes the whole layout, so the
 * GGUF header is written once with final offsets and every payload streams
 * to its place; memory stays at one chunk. Output goes to `PATH.partial`,
 * renamed to `PATH` only when complete.
 *
 * @module
 */

import type { ModelChunk, ModelHeader, ProgressCallback, TensorEntry } from "../../tensor.ts";
import { encodeGgufHeader, type GgufKvInput, type GgufLayout } from "./writer.ts";
import { assertOutputFree } from "../../io/fs_paths.ts";
import { createFreshFile, renameIntoPlace } from "../../io/partial_file.ts";
import { fs, type RuntimeFile } from "../../runtime/fs.ts";
import { storageFailure } from "../../io/storage_errors.ts";
import {
  checkExportOptions,
  ExportOrder,
  planGgufExport,
  writeHeader,
  writePadding,
} from "./_export.ts";

/** Options of {@linkcode GgufSink.create}. */
export interface GgufSinkOptions {
  /**
   * Replace an existing file at the path.
   *
   * @default {false}
   */
  force?: boolean;
  /** Called after each tensor is written (phase `"export"`). */
  onProgress?: ProgressCallback;
  /**
   * Write tensor names as they arrive instead of mapping Hugging Face names
   * back to GGUF names (`model.layers.0.self_attn.q_proj.weight` →
   * `blk.0.attn_q.weight`).
   *
   * @default {false}
   */
  keepNames?: boolean;
  /**
   * `general.file_type` to write (llama.cpp's `llama_ftype`, e.g. 14 for a
   * Q4_K_S preset mix, as `llama-quantize` writes it). By default it is
   * derived from the tensors, as llama.cpp's loader guesses it: the type most
   * tensors have. `general.quantization_version` 2 is written either way.
   */
  fileType?: number;
  /**
   * Write each tensor's dimensions as llama-quantize does (`ggml_n_dims`:
   * outer dimensions of size 1 dropped, a `[1, 64]` gate becomes `[64]`)
   * rather than as the source has them (llama.cpp's converter keeps them).
   *
   * @default {false}
   */
  squeezeDims?: boolean;
  /**
   * Pairs written after the model's metadata, replacing keys of the same
   * name, as llama-quantize's overrides (e.g. `imatrixGgufKv`'s `quantize.imatrix.*` keys).
   */
  extraKv?: Iterable<readonly [string, GgufKvInput]>;
  /**
   * Data alignment in bytes (a power of two).
   *
   * @default {32}
   */
  alignment?: number;
}

/**
 * Write a model stream as a GGUF v3 file. Metadata is mapped back from APR
 * (`aprToGgufKv`), names with `hfToGgufName`, shapes reversed to ggml's
 * `ne` order. Only ggml types are accepted (F32, F16, BF16, Q8_0, Q4_K,
 * Q6_K…): APR_Q8 / APR_Q4 must be converted upstream.
 *
 * @example Usage
 * ```ts ignore
 * import { GgufSink } from "./sink.ts";
 * import { openGguf } from "./reader.ts";
 * import { modelChunks } from "../../tensor.ts";
 * import { openFileSource } from "../../io/file_source.ts";
 * const model = await openGguf(await openFileSource("in.gguf"));
 * await modelChunks(model).pipeTo(await GgufSink.create("out.gguf", { force: true }));
 * ```
 */
export class GgufSink extends WritableStream<ModelChunk> {
  /** The final path (the file is written to `path + ".partial"` first). */
  readonly path: string;

  /**
   * Use {@linkcode GgufSink.create}, which checks the path and opens the file.
   *
   * @param path The final path.
   * @param writer The state machine doing the work.
   */
  private constructor(path: string, writer: GgufFileWriter) {
    super({
      write: (chunk) => writer.write(chunk),
      close: () => writer.finish(),
      abort: () => writer.discard(),
    }, { highWaterMark: 1 });
    this.path = path;
  }

  /**
   * Open `path + ".partial"` for writing.
   *
   * @param path Where the GGUF file goes.
   * @param options Overwrite, progress, names, alignment.
   * @returns The sink; pipe a model stream into it.
   * @throws {UsageError} When `path` exists and `force` is not set.
   * @throws {RangeError} When the alignment is not a power of two or the file type not a u32 (before any I/O).
   */
  static async create(path: string, options: GgufSinkOptions = {}): Promise<GgufSink> {
    const checked = checkExportOptions(options);
    await assertOutputFree(path, options.force);
    const partial = `${path}.partial`;
    const file = await createFreshFile(partial);
    return new GgufSink(path, new GgufFileWriter(path, partial, file, checked));
  }
}

/** The sink's state: header first, then tensors in header order. */
class GgufFileWriter {
  #path: string;
  #partial: string;
  #file: RuntimeFile;
  #options: GgufSinkOptions & { alignment: number };
  #order: ExportOrder;
  #layout: GgufLayout | undefined;
  #closed = false;

  constructor(
    path: string,
    partial: string,
    file: RuntimeFile,
    options: GgufSinkOptions & { alignment: number },
  ) {
    this.#path = path;
    this.#partial = partial;
    this.#file = file;
    this.#options = options;
    this.#order = new ExportOrder(path, options.onProgress);
  }

  async write(chunk: ModelChunk): Promise<void> {
    try {
      if (chunk.type === "header") await this.#writeHeader(chunk.header);
      else {
        // A full disk or an I/O error names the partial file (exit 3).
        await this.#writeTensor(chunk.tensor).catch((error) => {
          throw storageFailure(error, this.#partial, "write");
        });
      }
    } catch (error) {
      await this.discard();
      throw error;
    }
  }

  async #writeHeader(header: ModelHeader): Promise<void> {
    this.#order.start(header);
    const { kv, specs } = planGgufExport(header, this.#options, this.#path);
    const layout = encodeGgufHeader(kv, specs, { alignment: this.#options.alignment });
    this.#layout = layout;
    // A file without tensor data still has its full padded length.
    await writeHeader(this.#file, layout.header, layout.fileSize).catch((error) => {
      throw storageFailure(error, this.#partial, "write");
    });
    this.#order.report(undefined);
  }

  async #writeTensor(entry: TensorEntry): Promise<void> {
    const expected = this.#order.expect(entry);
    const layout = this.#layout!;
    const place = layout.tensors[this.#order.next]!;
    await this.#order.copyTensor(this.#file, place, entry, this.#path);
    const end = layout.tensors[this.#order.next + 1]?.offset ?? layout.fileSize;
    await writePadding(this.#file, end - place.offset - place.byteLength);
    this.#order.done(expected.name);
  }

  async finish(): Promise<void> {
    try {
      this.#order.assertComplete();
      await this.#file.sync().catch((error) => {
        throw storageFailure(error, this.#partial, "write");
      });
      this.#file.close();
      this.#closed = true;
      await renameIntoPlace(this.#partial, this.#path, this.#options.force);
    } catch (error) {
      await this.discard();
      throw error;
    }
  }

  /** Close and remove the partial file; never leave a half-written output (DESIGN.md §2.3). */
  async discard(): Promise<void> {
    if (!this.#closed) {
      this.#closed = true;
      try {
        this.#file.close();
      } catch {
        // Already closed.
      }
    }
    await fs.remove(this.#partial).catch(() => {});
  }
}
