// This module is browser compatible.

/**
 * Checking an APR file's footer CRC while its tensors are read for another
 * purpose (a conversion), so corrupt data is never converted into a new file
 * with a freshly valid CRC (docs/SECURITY.md).
 *
 * The footer is the CRC32 of every byte before it. Each tensor streamed in
 * full contributes the CRC of its range, in whatever order the ranges are
 * read; {@linkcode FooterCrcCheck.verify} then reads only what no stream
 * covered (header, metadata, index, padding, tensors that were skipped) and
 * combines everything in file order with `crc32Combine`, as the sink does
 * when it writes. Memory: one entry per tensor.
 *
 * @module
 */

import { ModelFormatError } from "../../errors.ts";
import { hexWord } from "../_hex.ts";
import type { ByteSource } from "../../io/byte_source.ts";
import { crc32, crc32Combine } from "./crc32.ts";
import { APR_FOOTER_SIZE } from "./layout.ts";

/** The CRC of one range of the file. */
interface RangeCrc {
  start: number;
  length: number;
  crc: number;
}

/**
 * The footer check of one APR file.
 *
 * @example Usage
 * ```ts ignore
 * import { FooterCrcCheck } from "./footer_check.ts";
 * const check = new FooterCrcCheck("model.apr", source.size);
 * const stream = check.wrap(offset, source.stream(offset, offset + size));
 * // ... consume the streams ...
 * await check.verify(source);
 * ```
 */
export class FooterCrcCheck {
  /** The file, for messages. */
  readonly name: string;
  /** Its size, footer included. */
  readonly fileSize: number;
  #ranges = new Map<number, RangeCrc>();
  #verified: Promise<void> | undefined;

  /**
   * Start checking a file.
   *
   * @param name The file, for messages.
   * @param fileSize Its size, footer included.
   */
  constructor(name: string, fileSize: number) {
    this.name = name;
    this.fileSize = fileSize;
  }

  /**
   * A stream of `[start, …)` whose CRC is recorded once it has been read to
   * its end (a stream cancelled early records nothing; verify reads it).
   *
   * @param start File offset of the stream's first byte.
   * @param stream The bytes.
   * @returns The same bytes.
   */
  wrap(start: number, stream: ReadableStream<Uint8Array>): ReadableStream<Uint8Array> {
    let crc = 0;
    let length = 0;
    return stream.pipeThrough(
      new TransformStream<Uint8Array, Uint8Array>({
        transform(chunk, controller) {
          crc = crc32(chunk, crc);
          length += chunk.byteLength;
          controller.enqueue(chunk);
        },
        flush: () => {
          if (length > 0) this.#ranges.set(start, { start, length, crc });
        },
      }),
    );
  }

  /**
   * Read what no stream covered, combine, and compare with the footer. Safe
   * to call more than once.
   *
   * @param source The file (not closed here).
   * @throws {ModelFormatError} When the data does not match the footer CRC.
   */
  verify(source: ByteSource): Promise<void> {
    this.#verified ??= this.#verify(source);
    return this.#verified;
  }

  async #verify(source: ByteSource): Promise<void> {
    const end = this.fileSize - APR_FOOTER_SIZE;
    {
      let crc = 0;
      let position = 0;
      const readGap = async (to: number): Promise<void> => {
        if (to <= position) return;
        for await (const chunk of source.stream(position, to)) crc = crc32(chunk, crc);
        position = to;
      };
      const ranges = [...this.#ranges.values()].sort((a, b) => a.start - b.start);
      for (const range of ranges) {
        // Ranges are tensors, which the reader checked do not overlap.
        if (range.start < position || range.start + range.length > end) continue;
        await readGap(range.start);
        crc = crc32Combine(crc, range.crc, range.length);
        position = range.start + range.length;
      }
      await readGap(end);
      const tail = await source.read(end, APR_FOOTER_SIZE);
      const stored = new DataView(tail.buffer, tail.byteOffset, 4).getUint32(0, true);
      if (stored !== crc) {
        throw new ModelFormatError(
          "APR",
          this.name,
          `footer CRC mismatch: stored 0x${hexWord(stored)}, the data gives 0x${
            hexWord(crc)
          }; the file is corrupt, and nothing was written from it`,
          { offset: end },
        );
      }
    }
  }
}
