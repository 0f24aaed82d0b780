/**
 * A streaming GGUF v3 file writer for export: a `WritableStream` of
 * {@linkcode ModelChunk}s. The header chunk fixes the whole layout, so the
 * GGUF header is written once with final offsets and every payload streams
 * to its place; memory stays at one chunk. Output goes to `PATH.partial`,
 * renamed to `PATH` only when complete.
 *
 * @module
 */

import { DTYPES, elementCount, tensorByteLength } from "../../dtype.ts";
import type { ModelChunk, ModelHeader, ProgressCallback, TensorEntry } from "../../tensor.ts";
import { guessFileType } from "./file_type.ts";
import { aprToGgufKv } from "./metadata.ts";
import { UsageError } from "../../errors.ts";
import { hfToGgufName } from "./names.ts";
import {
  encodeGgufHeader,
  type GgufKvInput,
  type GgufLayout,
  type GgufTensorSpec,
} from "./writer.ts";
import { assertOutputFree } from "../../io/fs_paths.ts";
import { createFreshFile, renameIntoPlace } from "../../io/partial_file.ts";
import { fs, type RuntimeFile, SEEK_START } from "../../runtime/fs.ts";
import { releaseChunk } from "../../io/byte_source.ts";
import { storageFailure } from "../../io/storage_errors.ts";

/** llama.cpp's quantization format version (`GGML_QNT_VERSION`), which every export declares. */
const GGML_QUANTIZATION_VERSION = 2;

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
  extraKv?: readonly (readonly [string, GgufKvInput])[];
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
   * @throws {RangeError} When the alignment is not a power of two (before any I/O).
   */
  static async create(path: string, options: GgufSinkOptions = {}): Promise<GgufSink> {
    const alignment = options.alignment ?? 32;
    if (!Number.isSafeInteger(alignment) || alignment <= 0 || (alignment & (alignment - 1)) !== 0) {
      throw new RangeError(`Cannot write GGUF: alignment ${alignment} is not a power of two`);
    }
    const fileType = options.fileType;
    if (
      fileType !== undefined &&
      (!Number.isSafeInteger(fileType) || fileType < 0 || fileType > 0xffffffff)
    ) {
      throw new RangeError(
        `Cannot write GGUF: file type ${fileType} is not a 32-bit unsigned integer`,
      );
    }
    await assertOutputFree(path, options.force);
    const partial = `${path}.partial`;
    const file = await createFreshFile(partial);
    return new GgufSink(path, new GgufFileWriter(path, partial, file, { ...options, alignment }));
  }
}

/** The sink's state: header first, then tensors in header order. */
class GgufFileWriter {
  #path: string;
  #partial: string;
  #file: RuntimeFile;
  #options: GgufSinkOptions & { alignment: number };
  #header: ModelHeader | undefined;
  #layout: GgufLayout | undefined;
  #next = 0;
  /** Payload bytes of every tensor, summed once (per tensor it was quadratic). */
  #bytesTotal = 0;
  #bytesDone = 0;
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
  }

  async write(chunk: ModelChunk): Promise<void> {
    try {
      if (chunk.type === "header") await this.#writeHeader(chunk.header);
      else {await this.#writeTensor(chunk.tensor).catch((error) => {
          throw storageFailure(error, this.#partial, "write");
        });}
    } catch (error) {
      await this.discard();
      throw error;
    }
  }

  async #writeHeader(header: ModelHeader): Promise<void> {
    if (this.#header !== undefined) {
      throw new TypeError(`Cannot write "${this.#path}": a second header chunk arrived`);
    }
    this.#header = header;
    this.#bytesTotal = header.tensors.reduce((n, t) => n + t.byteLength, 0);
    const { kv, specs } = planGgufExport(header, this.#options, this.#path);
    const layout = encodeGgufHeader(kv, specs, {
      alignment: this.#options.alignment,
    });
    this.#layout = layout;
    await this.#writeAt(0, layout.header);
    // A file without tensor data still has its full padded length.
    await this.#file.truncate(layout.fileSize);
    this.#report(undefined);
  }

  async #writeTensor(entry: TensorEntry): Promise<void> {
    const header = this.#header;
    const layout = this.#layout;
    if (header === undefined || layout === undefined) {
      throw new TypeError(`Cannot write "${this.#path}": a tensor arrived before the header`);
    }
    const expected = header.tensors[this.#next];
    if (expected === undefined || expected.name !== entry.info.name) {
      throw new TypeError(
        `Cannot write "${this.#path}": tensor "${entry.info.name}" arrived, expected ${
          expected === undefined ? "no more tensors" : `"${expected.name}"`
        } (tensors must follow header order)`,
      );
    }
    const place = layout.tensors[this.#next]!;
    await this.#file.seek(place.offset, SEEK_START);
    let written = 0;
    for await (const chunk of entry.open()) {
      if (written + chunk.length > place.byteLength) {
        throw new RangeError(
          `Cannot write "${this.#path}": tensor "${expected.name}" yields more than its ` +
            `${place.byteLength} bytes`,
        );
      }
      await writeAll(this.#file, chunk);
      written += chunk.length;
      this.#bytesDone += chunk.length;
      // Written: free it now if its producer allows (bounded memory, DESIGN.md
      // §1.2), rather than when the GC gets to it (~60 MiB of dead chunks).
      releaseChunk(chunk);
    }
    if (written !== place.byteLength) {
      throw new RangeError(
        `Cannot write "${this.#path}": tensor "${expected.name}" yielded ${written} of its ` +
          `${place.byteLength} bytes`,
      );
    }
    this.#next++;
    this.#report(expected.name);
  }

  #report(current: string | undefined): void {
    const header = this.#header!;
    this.#options.onProgress?.({
      phase: "export",
      bytesDone: this.#bytesDone,
      bytesTotal: this.#bytesTotal,
      itemsDone: this.#next,
      itemsTotal: header.tensors.length,
      ...(current === undefined ? {} : { current }),
    });
  }

  async #writeAt(offset: number, bytes: Uint8Array): Promise<void> {
    try {
      await this.#file.seek(offset, SEEK_START);
      await writeAll(this.#file, bytes);
    } catch (error) {
      throw storageFailure(error, this.#partial, "write");
    }
  }

  async finish(): Promise<void> {
    try {
      if (this.#header === undefined) {
        throw new TypeError(`Cannot write "${this.#path}": the stream ended before its header`);
      }
      if (this.#next !== this.#header.tensors.length) {
        throw new TypeError(
          `Cannot write "${this.#path}": the stream ended after ${this.#next} of ` +
            `${this.#header.tensors.length} tensors`,
        );
      }
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

/** `ggml_n_dims`: trailing `ne` entries of 1 do not count (at least one dimension stays). */
function squeezed(ne: number[]): number[] {
  let n = ne.length;
  while (n > 1 && ne[n - 1] === 1) n--;
  return ne.slice(0, n);
}

/**
 * Internal: what a GGUF export of `header` writes — the metadata pairs (the
 * model's, `general.file_type`, the parameter count, the quantization
 * version, then `extraKv`) and one tensor info per tensor, GGUF names and
 * `ne` order — checked before any byte is written. Shared by the single-file
 * and the split writers.
 *
 * @param header The model header.
 * @param options Names, file type, extra pairs.
 * @param path The output, for messages.
 * @returns The pairs and tensor specs, in file order.
 * @throws {TypeError} For a tensor type GGUF cannot hold.
 * @throws {RangeError} For a tensor whose byte length does not match its shape.
 */
export function planGgufExport(
  header: ModelHeader,
  options: GgufSinkOptions,
  path: string,
): { kv: Map<string, GgufKvInput>; specs: GgufTensorSpec[] } {
  const specs: GgufTensorSpec[] = header.tensors.map((t) => {
    const spec = DTYPES[t.dtype];
    if (spec.ggufType === undefined) {
      throw new TypeError(
        `Cannot write "${path}": tensor "${t.name}" is ${t.dtype}, which GGUF cannot ` +
          `hold; convert it first (to F16, BF16, Q8_0, Q4_K or Q6_K)`,
      );
    }
    const expected = tensorByteLength(t.dtype, t.shape);
    if (expected !== t.byteLength) {
      throw new RangeError(
        `Cannot write "${path}": tensor "${t.name}" declares ${t.byteLength} bytes, ` +
          `but ${t.dtype} [${t.shape}] takes ${expected}`,
      );
    }
    return {
      name: options.keepNames === true ? t.name : hfToGgufName(t.name),
      dtype: t.dtype,
      // ggml's ne runs fastest-varying first; a scalar is one element.
      ne: t.shape.length === 0
        ? [1]
        : options.squeezeDims === true
        ? squeezed([...t.shape].reverse())
        : [...t.shape].reverse(),
    };
  });
  const fileType = options.fileType ?? guessFileType(header.tensors);
  let kv: Map<string, GgufKvInput>;
  try {
    kv = aprToGgufKv(header.metadata, {
      ...(fileType === undefined ? {} : { fileType }),
      parameterCount: header.tensors.reduce((n, t) => n + elementCount(t.shape), 0),
      tensors: specs.map((t) => ({ name: t.name, shape: [...t.ne].reverse() })),
      quantizationVersion: GGML_QUANTIZATION_VERSION,
    });
  } catch (error) {
    // Name the file being written (a tokenizer llama.cpp cannot run is refused here).
    if (!(error instanceof UsageError)) throw error;
    throw new UsageError(
      error.message.replace(/^Cannot write GGUF:/, `Cannot write "${path}":`),
      { cause: error },
    );
  }
  for (const [key, value] of options.extraKv ?? []) {
    // Removed, then added: the key moves to the end, where llama.cpp's gguf_set_val puts it.
    kv.delete(key);
    kv.set(key, value);
  }
  return { kv, specs };
}

/** Internal: write all of `bytes` at the file's position. */
export async function writeAll(file: RuntimeFile, bytes: Uint8Array): Promise<void> {
  let n = 0;
  while (n < bytes.length) n += await file.write(bytes.subarray(n));
}
