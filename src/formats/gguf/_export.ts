/**
 * Internal: what the one-file GGUF sink (`sink.ts`) and the split sink
 * (`split_sink.ts`) share, so a fix lands once — the checked options, the
 * plan of what an export writes (`planGgufExport`), a partial file opened
 * with its header and full length, the order and progress of the tensors,
 * and the copy of one tensor's payload to its place.
 *
 * @module
 */

import { DTYPES, elementCount, tensorByteLength } from "../../dtype.ts";
import type { ModelHeader, ProgressCallback, TensorEntry, TensorInfo } from "../../tensor.ts";
import { guessFileType } from "./file_type.ts";
import { aprToGgufKv } from "./metadata.ts";
import { UsageError } from "../../errors.ts";
import { hfToGgufName } from "./names.ts";
import type { GgufKvInput, GgufLayout, GgufTensorSpec } from "./writer.ts";
import { createFreshFile } from "../../io/partial_file.ts";
import { type RuntimeFile, SEEK_START } from "../../runtime/fs.ts";
import { releaseChunk } from "../../io/byte_source.ts";
import type { GgufSinkOptions } from "./sink.ts";

/** llama.cpp's quantization format version (`GGML_QNT_VERSION`), which every export declares. */
const GGML_QUANTIZATION_VERSION = 2;

/**
 * An export's options, checked before any I/O, with the alignment filled in.
 *
 * @param options As given (alignment 32 by default).
 * @returns The options with their alignment.
 * @throws {RangeError} When the alignment is not a power of two or the file
 *   type not a 32-bit unsigned integer.
 */
export function checkExportOptions<T extends GgufSinkOptions>(
  options: T,
): T & { alignment: number } {
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
  return { ...options, alignment };
}

/**
 * Create a fresh partial file holding `header` at its start, at its full
 * length: padding and not yet written tensors read as zeros.
 *
 * @param partial The partial file's path.
 * @param header The encoded GGUF header.
 * @param fileSize The file's final size.
 * @returns The open file.
 */
export async function createHeadedFile(
  partial: string,
  header: Uint8Array,
  fileSize: number,
): Promise<RuntimeFile> {
  const file = await createFreshFile(partial);
  try {
    await writeHeader(file, header, fileSize);
  } catch (error) {
    file.close();
    throw error;
  }
  return file;
}

/**
 * Write `header` at the start of `file` and give the file its full length.
 *
 * @param file The open partial file.
 * @param header The encoded GGUF header.
 * @param fileSize The file's final size.
 */
export async function writeHeader(
  file: RuntimeFile,
  header: Uint8Array,
  fileSize: number,
): Promise<void> {
  await file.seek(0, SEEK_START);
  await writeAll(file, header);
  await file.truncate(fileSize);
}

/**
 * The header, the tensors' order and the progress of one export: a stream
 * must bring one header, then every tensor in header order.
 */
export class ExportOrder {
  /** The header, once it arrived. */
  header: ModelHeader | undefined;
  /** Index of the next tensor expected (tensors done). */
  next = 0;
  /** Payload bytes written (or kept from a resumed run). */
  bytesDone = 0;
  /** Payload bytes of every tensor, summed once (per report it was quadratic). */
  #bytesTotal = 0;
  #path: string;
  #onProgress: ProgressCallback | undefined;

  /**
   * @param path The output, for messages.
   * @param onProgress Called after the header, after each chunk written and after each tensor.
   */
  constructor(path: string, onProgress: ProgressCallback | undefined) {
    this.#path = path;
    this.#onProgress = onProgress;
  }

  /**
   * Take the header chunk.
   *
   * @param header The model header.
   * @throws {TypeError} When a header arrived before.
   */
  start(header: ModelHeader): void {
    if (this.header !== undefined) {
      throw new TypeError(`Cannot write "${this.#path}": a second header chunk arrived`);
    }
    this.header = header;
    this.#bytesTotal = header.tensors.reduce((n, t) => n + t.byteLength, 0);
  }

  /**
   * The header's entry for a tensor chunk.
   *
   * @param entry The tensor that arrived.
   * @returns Its header entry.
   * @throws {TypeError} When it arrived before the header or out of order.
   */
  expect(entry: TensorEntry): TensorInfo {
    if (this.header === undefined) {
      throw new TypeError(`Cannot write "${this.#path}": a tensor arrived before the header`);
    }
    const expected = this.header.tensors[this.next];
    if (expected === undefined || expected.name !== entry.info.name) {
      throw new TypeError(
        `Cannot write "${this.#path}": tensor "${entry.info.name}" arrived, expected ${
          expected === undefined ? "no more tensors" : `"${expected.name}"`
        } (tensors must follow header order)`,
      );
    }
    return expected;
  }

  /**
   * Count the tensor in hand done and report it.
   *
   * @param name Its name.
   */
  done(name: string): void {
    this.next++;
    this.report(name);
  }

  /**
   * Check that the stream brought the header and every tensor.
   *
   * @throws {TypeError} When it ended early.
   */
  assertComplete(): void {
    if (this.header === undefined) {
      throw new TypeError(`Cannot write "${this.#path}": the stream ended before its header`);
    }
    if (this.next !== this.header.tensors.length) {
      throw new TypeError(
        `Cannot write "${this.#path}": the stream ended after ${this.next} of ` +
          `${this.header.tensors.length} tensors`,
      );
    }
  }

  /**
   * Report progress (phase `"export"`).
   *
   * @param current The tensor just written, if any.
   */
  report(current: string | undefined): void {
    this.#onProgress?.({
      phase: "export",
      bytesDone: this.bytesDone,
      bytesTotal: this.#bytesTotal,
      itemsDone: this.next,
      itemsTotal: this.header!.tensors.length,
      ...(current === undefined ? {} : { current }),
    });
  }

  /**
   * Copy one tensor's payload to its place in `file`, checking its length.
   *
   * @param file The open partial file.
   * @param place Where the tensor goes.
   * @param entry The tensor.
   * @param path The file, for messages.
   * @param onChunk Given each chunk once written, before it is released (a
   *   shard's SHA-256 is computed so, not by reading the shard back).
   * @throws {RangeError} When the payload is not exactly `place.byteLength` bytes.
   */
  async copyTensor(
    file: RuntimeFile,
    place: GgufLayout["tensors"][number],
    entry: TensorEntry,
    path: string,
    onChunk?: (chunk: Uint8Array) => void,
  ): Promise<void> {
    const name = entry.info.name;
    await file.seek(place.offset, SEEK_START);
    let written = 0;
    for await (const chunk of entry.open()) {
      if (written + chunk.length > place.byteLength) {
        throw new RangeError(
          `Cannot write "${path}": tensor "${name}" yields more than its ${place.byteLength} bytes`,
        );
      }
      await writeAll(file, chunk);
      onChunk?.(chunk);
      written += chunk.length;
      this.bytesDone += chunk.length;
      // Within the tensor too: a large tensor quantized for seconds would
      // otherwise hold the bar still (the display throttles redraws).
      this.report(name);
      // Written: free it now if its producer allows (bounded memory, DESIGN.md
      // §1.2), rather than when the GC gets to it (~60 MiB of dead chunks).
      releaseChunk(chunk);
    }
    if (written !== place.byteLength) {
      throw new RangeError(
        `Cannot write "${path}": tensor "${name}" yielded ${written} of its ` +
          `${place.byteLength} bytes`,
      );
    }
  }
}

/** `ggml_n_dims`: trailing `ne` entries of 1 do not count (at least one dimension stays). */
function squeezed(ne: number[]): number[] {
  let n = ne.length;
  while (n > 1 && ne[n - 1] === 1) n--;
  return ne.slice(0, n);
}

/**
 * What a GGUF export of `header` writes — the metadata pairs (the model's,
 * `general.file_type`, the parameter count, the quantization version, then
 * `extraKv`) and one tensor info per tensor, GGUF names and `ne` order —
 * checked before any byte is written.
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

/** Zeros for the alignment padding. */
const ZEROS = new Uint8Array(4096);

/**
 * Write `n` zero bytes at the file's position: the padding after a tensor.
 * Written, not left to the preallocated length, so that the file is written
 * front to back without holes (a browser download streams it,
 * web/download_writable.ts).
 *
 * @param file The open partial file, at the end of a tensor.
 * @param n The padding's length.
 */
export async function writePadding(file: RuntimeFile, n: number): Promise<void> {
  for (let left = n; left > 0; left -= ZEROS.length) {
    await writeAll(file, ZEROS.subarray(0, Math.min(left, ZEROS.length)));
  }
}

/** Write all of `bytes` at the file's position. */
async function writeAll(file: RuntimeFile, bytes: Uint8Array): Promise<void> {
  let n = 0;
  while (n < bytes.length) n += await file.write(bytes.subarray(n));
}
