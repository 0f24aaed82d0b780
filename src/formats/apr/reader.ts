// This module is browser compatible.

/**
 * The strict APR v2 reader and validator (APR_V2.md §6): reads the header,
 * metadata and index only, checks every structural rule, and hands out each
 * tensor as a re-openable stream of bounded chunks read by offset.
 *
 * @module
 */

import { tensorByteLength } from "../../dtype.ts";
import { ModelFormatError } from "../../errors.ts";
import { hexWord } from "../_hex.ts";
import { type ByteSource, DEFAULT_CHUNK_SIZE } from "../../io/byte_source.ts";
import { openSourceOf, withSourceOf } from "../../io/source_of.ts";
import type { ModelHeader, ModelReader, TensorEntry, TensorInfo } from "../../tensor.ts";
import { crc32 } from "./crc32.ts";
import { FooterCrcCheck } from "./footer_check.ts";
import { APR_FLAGS, APR_HEADER_SIZE, type AprHeader, parseAprHeader } from "./header.ts";
import { openAprLz4Image } from "./lz4_image.ts";
import {
  APR_MAX_DIMS,
  APR_MAX_NAME_BYTES,
  type AprIndexEntry,
  compareUtf8Bytes,
  parseAprIndex,
} from "./index_entry.ts";
import { APR_ALIGNMENT, APR_FOOTER_SIZE } from "./layout.ts";
import { APR_MAX_METADATA_SIZE, parseAprMetadata } from "./metadata.ts";

export { APR_MAX_METADATA_SIZE };

/**
 * Most tensors a file may index: the largest real models have fewer than
 * 10^5; each indexed tensor costs about a kilobyte of memory, so more is
 * refused before allocating.
 */
export const APR_MAX_TENSORS = 262_144;

/** Smallest packed index entry: u16 name length, dtype, ndim, offset, size. */
const MIN_ENTRY_SIZE = 2 + 1 + 1 + 8 + 8;
/** Largest packed index entry: a 256-byte name and 8 dims. */
const MAX_ENTRY_SIZE = 2 + APR_MAX_NAME_BYTES + 1 + 1 + 8 * APR_MAX_DIMS + 8 + 8;

/** One line of a validation report (for `apr validate`). */
export interface AprCheck {
  /** What was checked, e.g. `"header CRC"`. */
  readonly check: string;
  /** Whether it passed. */
  readonly ok: boolean;
  /** The rule broken, or a note. */
  readonly detail?: string;
}

/** Options of {@linkcode AprReader.open}. */
export interface AprReaderOptions {
  /** Largest chunk a tensor stream yields. @default {DEFAULT_CHUNK_SIZE} */
  chunkSize?: number;
}

/** Options of {@linkcode validateApr}. */
export interface ValidateAprOptions extends AprReaderOptions {
  /** Also stream the whole file and verify the footer CRC. @default {false} */
  deep?: boolean;
}

/** A tensor of an APR file: the stream-protocol entry plus where it lies. */
export interface AprTensorEntry extends TensorEntry {
  /** Name, dtype, shape, byte length. */
  readonly info: TensorInfo;
  /** The dtype code stored in the index (e.g. 8, or 128 from newest aprender). */
  readonly dtypeCode: number;
  /** Payload offset relative to data_offset, as stored. */
  readonly offset: number;
  /** Absolute byte offset of the payload in the file. */
  readonly fileOffset: number;
  /** Exact payload size in bytes. */
  readonly size: number;
}

/** Result of {@linkcode AprReader.verifyFooter}. */
export interface AprFooterCheck {
  /** The CRC stored in the last 4 bytes. */
  readonly stored: number;
  /** The CRC of every byte before them. */
  readonly computed: number;
  /** `stored === computed`. */
  readonly ok: boolean;
}

const HEADER_CHECKS = ["magic", "version 2.0", "file size", "header CRC", "flags", "header fields"];

function headerCheckOf(reason: string): string {
  if (reason.startsWith("wrong magic")) return "magic";
  if (reason.includes("APR v1") || reason.startsWith("unsupported version")) return "version 2.0";
  if (reason.startsWith("file too short")) return "file size";
  if (reason.startsWith("header CRC")) return "header CRC";
  if (reason.includes("flag")) return "flags";
  return "header fields";
}

/** Records checks as they pass; the failing one is added by the catcher. */
class Checklist {
  readonly items: AprCheck[] = [];
  current = "";
  start(check: string): void {
    this.current = check;
  }
  pass(detail?: string): void {
    this.items.push(
      detail === undefined ? { check: this.current, ok: true } : {
        check: this.current,
        ok: true,
        detail,
      },
    );
  }
}

/**
 * Open an APR v2 file for reading; same as {@linkcode AprReader.open}.
 *
 * @example Usage
 * ```ts ignore
 * import { openApr } from "./reader.ts";
 * import { openFileSource } from "../../io/file_source.ts";
 * const reader = await openApr(await openFileSource("model.apr"));
 * console.log(reader.header.tensors.length);
 * await reader.close();
 * ```
 *
 * @param source The file's bytes, or its path; the reader owns it and closes it.
 * @param options Chunk size of tensor streams.
 * @returns The reader.
 * @throws {ModelFormatError} When the file breaks a structural rule.
 */
export async function openApr(
  source: ByteSource | string,
  options: AprReaderOptions = {},
): Promise<AprReader> {
  const opened = await openSourceOf(source, "APR file");
  try {
    return await AprReader.open(opened.source, options);
  } catch (error) {
    if (opened.opened) await opened.source.close();
    throw error;
  }
}

/**
 * Check an APR v2 file and report each check (for `apr validate`). Never
 * throws for a malformed file: the first failing check ends the list with
 * `ok: false` and the rule broken. With `deep`, also verifies the footer CRC
 * by streaming the file in chunks. Does not close a given `source` (a
 * path is opened and closed here).
 *
 * @example Usage
 * ```ts ignore
 * import { validateApr } from "./reader.ts";
 * import { openFileSource } from "../../io/file_source.ts";
 * const checks = await validateApr(await openFileSource("model.apr"), { deep: true });
 * console.log(checks.every((c) => c.ok));
 * ```
 *
 * @param source The file's bytes, or its path.
 * @param options `deep` to verify the footer CRC.
 * @returns The checks, in order.
 * @throws {Error} Only for I/O failures (a missing path: `NotFound`, `code: "ENOENT"`), never for a malformed file.
 */
export function validateApr(
  source: ByteSource | string,
  options: ValidateAprOptions = {},
): Promise<AprCheck[]> {
  return withSourceOf(source, "APR file", (s) => validateAprSource(s, options));
}

async function validateAprSource(
  source: ByteSource,
  options: ValidateAprOptions,
): Promise<AprCheck[]> {
  const list = new Checklist();
  let reader: AprReader;
  try {
    reader = await openChecked(source, options, list);
  } catch (error) {
    if (!(error instanceof ModelFormatError)) throw error;
    list.items.push({ check: list.current, ok: false, detail: error.reason });
    return list.items;
  }
  if (options.deep) {
    const footer = await reader.verifyFooter();
    list.items.push(
      footer.ok ? { check: "footer CRC", ok: true, detail: `0x${hexWord(footer.stored)}` } : {
        check: "footer CRC",
        ok: false,
        detail: `footer CRC mismatch: stored 0x${hexWord(footer.stored)}, computed 0x${
          hexWord(footer.computed)
        }`,
      },
    );
  }
  return list.items;
}

/**
 * An APR v2 file opened for reading: a {@linkcode ModelReader} whose tensors
 * are in index order. Only the header, metadata and index are read on open.
 */
export class AprReader implements ModelReader {
  /** Format `"apr"`, the parsed metadata, and the tensor infos in index order. */
  readonly header: ModelHeader;
  /** One entry per tensor, in index order. */
  readonly tensors: readonly AprTensorEntry[];
  /** The decoded 64-byte header. */
  readonly aprHeader: AprHeader;
  /** File size in bytes. */
  readonly fileSize: number;
  #source: ByteSource;
  #byName: Map<string, AprTensorEntry>;
  #chunkSize: number;
  #footer: FooterCrcCheck;

  /**
   * Use {@linkcode AprReader.open}; this constructor takes already-checked parts.
   * Never throws.
   *
   * @param source The file's bytes.
   * @param aprHeader The decoded header.
   * @param header The model header.
   * @param entries The index entries.
   * @param chunkSize Largest chunk of tensor streams.
   */
  constructor(
    source: ByteSource,
    aprHeader: AprHeader,
    header: ModelHeader,
    entries: readonly AprIndexEntry[],
    chunkSize: number,
  ) {
    this.#source = source;
    this.aprHeader = aprHeader;
    this.header = header;
    this.fileSize = source.size;
    this.#chunkSize = chunkSize;
    this.#footer = new FooterCrcCheck(source.name, source.size);
    this.tensors = entries.map((e, i) => {
      const fileOffset = aprHeader.dataOffset + e.offset;
      return {
        info: header.tensors[i]!,
        dtypeCode: e.dtypeCode,
        offset: e.offset,
        fileOffset,
        size: e.size,
        // Every tensor read in full feeds the footer check of verify().
        open: (): ReadableStream<Uint8Array> =>
          this.#footer.wrap(
            fileOffset,
            this.#source.stream(fileOffset, fileOffset + e.size, this.#chunkSize),
          ),
        // Partial reads bypass the footer check; verify() reads what they skipped.
        slice: (from: number, to: number): ReadableStream<Uint8Array> =>
          this.#source.stream(fileOffset + from, fileOffset + to, this.#chunkSize),
      };
    });
    this.#byName = new Map(this.tensors.map((t) => [t.info.name, t]));
  }

  /**
   * Read and check the header, metadata and index of an APR v2 file.
   *
   * @param source The file's bytes; the reader owns it and closes it.
   * @param options Chunk size of tensor streams.
   * @returns The reader.
   * @throws {ModelFormatError} When the file breaks a structural rule (APR_V2.md §6).
   */
  static open(source: ByteSource, options: AprReaderOptions = {}): Promise<AprReader> {
    return openChecked(source, options, new Checklist());
  }

  /**
   * The tensor named `name`.
   * Never throws. An unknown name gives `undefined`.
   *
   * @param name Tensor name.
   * @returns Its entry, or `undefined`.
   */
  tensor(name: string): AprTensorEntry | undefined {
    return this.#byName.get(name);
  }

  /**
   * Stream every byte before the footer in chunks and compare their CRC32
   * with the stored footer (the `--deep` check; memory is one chunk).
   *
   * @returns Stored and computed CRCs.
   * @throws {RangeError} When the source ends before its announced size (a file truncated while open).
   */
  async verifyFooter(): Promise<AprFooterCheck> {
    const end = this.fileSize - APR_FOOTER_SIZE;
    const tail = await this.#source.read(end, APR_FOOTER_SIZE);
    const stored = new DataView(tail.buffer, tail.byteOffset, 4).getUint32(0, true);
    let computed = 0;
    for await (const chunk of this.#source.stream(0, end, this.#chunkSize)) {
      computed = crc32(chunk, computed);
    }
    return { stored, computed, ok: stored === computed };
  }

  /**
   * Verify the footer CRC, throwing when it does not match.
   *
   * @throws {ModelFormatError} On a footer CRC mismatch.
   */
  async checkFooter(): Promise<void> {
    const f = await this.verifyFooter();
    if (!f.ok) {
      throw new ModelFormatError(
        "APR",
        this.#source.name,
        `footer CRC mismatch: stored 0x${hexWord(f.stored)}, computed 0x${hexWord(f.computed)}`,
        { offset: this.fileSize - APR_FOOTER_SIZE },
      );
    }
  }

  /**
   * Check the footer CRC against the tensors read so far plus whatever they
   * did not cover (read now), so a conversion never keeps corrupt data:
   * `convertModel` calls it before renaming its output.
   *
   * @throws {ModelFormatError} When the data does not match the footer CRC.
   */
  verify(): Promise<void> {
    return this.#footer.verify(this.#source);
  }

  /**
   * Close the underlying source. Safe to call twice.
   * Never throws.
   *
   * @returns When the source is closed.
   */
  close(): Promise<void> {
    return this.#source.close();
  }
}

// Every check of APR_V2.md §6, in order, recorded in `list` for validateApr().
async function openChecked(
  source: ByteSource,
  options: AprReaderOptions,
  list: Checklist,
): Promise<AprReader> {
  const chunkSize = options.chunkSize ?? DEFAULT_CHUNK_SIZE;
  if (!Number.isSafeInteger(chunkSize) || chunkSize <= 0) {
    throw new RangeError(`Cannot open APR file: chunk size ${chunkSize} is not positive`);
  }
  const path = source.name;
  let size = source.size;
  const fail = (reason: string, offset: number): never => {
    throw new ModelFormatError("APR", path, reason, { offset });
  };

  // Header: magic, version, size, CRC, flags (header.ts).
  list.start(HEADER_CHECKS[0]!);
  const head = await source.read(0, Math.min(APR_HEADER_SIZE, size));
  let h: AprHeader;
  try {
    h = parseAprHeader(head, path, { lz4: true });
  } catch (error) {
    if (error instanceof ModelFormatError) {
      const failed = headerCheckOf(error.reason);
      for (const c of HEADER_CHECKS) {
        if (c === failed) break;
        list.start(c);
        list.pass();
      }
      list.start(failed);
    }
    throw error;
  }
  for (const c of HEADER_CHECKS) {
    list.start(c);
    list.pass();
  }
  if ((h.flags & APR_FLAGS.LZ4) !== 0) {
    // APR_V2.md §8: the rest of the file is one LZ4 block; every later check
    // and read applies to the decompressed image, which replaces the source.
    list.start("LZ4 decompression");
    source = await openAprLz4Image(source);
    size = source.size;
    list.pass(`${size} bytes decompressed`);
  }

  // Metadata region and JSON.
  list.start("metadata region");
  const metaEnd = h.metadataOffset + h.metadataSize;
  if (h.metadataOffset < APR_HEADER_SIZE) {
    fail(`metadata_offset ${h.metadataOffset} overlaps the 64-byte header`, 12);
  }
  if (metaEnd > size) {
    fail(
      `metadata [${h.metadataOffset}, ${metaEnd}) extends past the end of the file (${size} bytes)`,
      12,
    );
  }
  if (metaEnd > h.tensorIndexOffset) {
    fail(
      `metadata [${h.metadataOffset}, ${metaEnd}) runs into the tensor index at ${h.tensorIndexOffset}`,
      24,
    );
  }
  if (h.metadataSize > APR_MAX_METADATA_SIZE) {
    fail(
      `metadata too large: ${h.metadataSize} bytes exceeds the ${APR_MAX_METADATA_SIZE}-byte limit`,
      20,
    );
  }
  list.pass();
  list.start("metadata JSON");
  const metadata = parseAprMetadata(
    await source.read(h.metadataOffset, h.metadataSize),
    path,
    h.metadataOffset,
  );
  list.pass();

  // Index region: [tensor_index_offset, data_offset), with the footer after the data.
  list.start("index region");
  if (h.tensorIndexOffset > h.dataOffset) {
    fail(
      `tensor_index_offset ${h.tensorIndexOffset} is after data_offset ${h.dataOffset}`,
      24,
    );
  }
  if (h.dataOffset + APR_FOOTER_SIZE > size) {
    fail(
      `data_offset ${h.dataOffset} leaves no room for the 4-byte footer in a ${size}-byte file`,
      32,
    );
  }
  if (h.dataOffset % APR_ALIGNMENT !== 0) {
    fail(`data_offset ${h.dataOffset} is not a multiple of ${APR_ALIGNMENT}`, 32);
  }
  if (h.tensorCount > APR_MAX_TENSORS) {
    fail(`tensor_count ${h.tensorCount} exceeds the limit of ${APR_MAX_TENSORS}`, 8);
  }
  const regionSize = h.dataOffset - h.tensorIndexOffset;
  if (h.tensorCount * MIN_ENTRY_SIZE > regionSize) {
    fail(
      `tensor index truncated: ${h.tensorCount} entries need at least ${
        h.tensorCount * MIN_ENTRY_SIZE
      } bytes, the index region has ${regionSize}`,
      h.tensorIndexOffset,
    );
  }
  list.pass();
  list.start("index entries");
  const indexBytes = await source.read(
    h.tensorIndexOffset,
    Math.min(regionSize, h.tensorCount * MAX_ENTRY_SIZE),
  );
  const entries = parseAprIndex(indexBytes, h.tensorCount, path, h.tensorIndexOffset);
  list.pass(`${entries.length} tensors`);

  list.start("index sorted");
  for (let i = 1; i < entries.length; i++) {
    const a = entries[i - 1]!;
    const b = entries[i]!;
    const order = compareUtf8Bytes(a.name, b.name);
    if (order === 0) fail(`duplicate tensor name "${b.name}" in the index`, b.entryOffset);
    if (order > 0) {
      fail(
        `tensor index not sorted by UTF-8 name bytes: "${b.name}" comes after "${a.name}"`,
        b.entryOffset,
      );
    }
  }
  list.pass();

  list.start("tensor sizes");
  for (const e of entries) {
    let expected: number;
    try {
      expected = tensorByteLength(e.dtype, e.shape);
    } catch (cause) {
      throw new ModelFormatError(
        "APR",
        path,
        `tensor "${e.name}" has an invalid shape: ${(cause as Error).message}`,
        { offset: e.entryOffset, cause },
      );
    }
    if (expected !== e.size) {
      fail(
        `tensor "${e.name}" size ${e.size} does not match ${e.dtype} [${e.shape}] (${expected} bytes)`,
        e.entryOffset,
      );
    }
  }
  list.pass();

  list.start("tensor alignment");
  for (const e of entries) {
    if (e.offset % APR_ALIGNMENT !== 0) {
      fail(
        `tensor "${e.name}" offset ${e.offset} is not a multiple of ${APR_ALIGNMENT}`,
        e.entryOffset,
      );
    }
  }
  list.pass();

  list.start("tensor extents");
  const dataEnd = size - APR_FOOTER_SIZE;
  for (const e of entries) {
    const end = h.dataOffset + e.offset + e.size;
    if (end > dataEnd) {
      fail(
        `tensor "${e.name}" [${
          h.dataOffset + e.offset
        }, ${end}) extends past the end of the data (${dataEnd}, before the footer)`,
        e.entryOffset,
      );
    }
  }
  list.pass();

  list.start("no overlapping tensors");
  const byOffset = entries.filter((e) => e.size > 0).sort((a, b) => a.offset - b.offset);
  for (let i = 1; i < byOffset.length; i++) {
    const a = byOffset[i - 1]!;
    const b = byOffset[i]!;
    if (a.offset + a.size > b.offset) {
      fail(
        `tensors "${a.name}" [${a.offset}, ${a.offset + a.size}) and "${b.name}" [${b.offset}, ${
          b.offset + b.size
        }) overlap (offsets relative to data_offset)`,
        b.entryOffset,
      );
    }
  }
  list.pass();

  const header: ModelHeader = {
    format: "apr",
    metadata,
    tensors: entries.map((e) => ({
      name: e.name,
      dtype: e.dtype,
      shape: e.shape,
      byteLength: e.size,
    })),
  };
  return new AprReader(source, h, header, entries, chunkSize);
}
