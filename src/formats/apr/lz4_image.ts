// This module is browser compatible.

/**
 * LZ4-compressed APR files (flag 0x0001), in realizar's layout (APR_V2.md
 * §8): the 64-byte header as is, then the uncompressed length of the rest
 * as a u32, then the rest of the file — metadata, index, data and footer —
 * as ONE LZ4 block. Offsets in the header refer to the decompressed image
 * (header ++ decompressed rest), whose footer CRC covers the image.
 *
 * Such files are below 4 GiB by construction (the u32 length). Reading never
 * holds the image in memory: the block is decoded in a bounded window, and the
 * declared size is checked against the compressed size first (docs/SECURITY.md).
 *
 * @module
 */

import { ModelFormatError } from "../../errors.ts";
import { assertRange, type ByteSource, DEFAULT_CHUNK_SIZE } from "../../io/byte_source.ts";
import { Lz4BlockError, lz4CompressBlock } from "./_lz4.ts";
import { decodeLz4Block, type Lz4Block, type Lz4Checkpoint } from "./_lz4_stream.ts";
import { APR_HEADER_SIZE } from "./header.ts";

/** Largest decompressed image: the length prefix is a u32, so everything is below 4 GiB. */
export const APR_LZ4_MAX_IMAGE_SIZE = APR_HEADER_SIZE + 0xffffffff;

/** LZ4 cannot expand data more than 255:1 (a 1-byte length step per 255 bytes); more is corruption. */
const LZ4_MAX_RATIO = 255;

/**
 * Open an LZ4 APR file as its decompressed image, named like the file;
 * closing the image closes `source`. The whole block is decoded once to check
 * it (time linear in the image, memory a few megabytes: see `_lz4_stream.ts`),
 * and reads then decode from the checkpoint before them.
 *
 * @param source The compressed file.
 * @returns The decompressed image.
 * @throws {ModelFormatError} When the sizes are impossible or the block is corrupt.
 */
export async function openAprLz4Image(source: ByteSource): Promise<ByteSource> {
  const path = source.name;
  const fail = (reason: string, offset: number, cause?: unknown): never => {
    throw new ModelFormatError("APR", path, reason, {
      offset,
      ...(cause === undefined ? {} : { cause }),
    });
  };
  if (source.size < APR_HEADER_SIZE + 4) {
    fail(
      `LZ4 file too short: ${source.size} bytes, the header and length prefix need ${
        APR_HEADER_SIZE + 4
      }`,
      APR_HEADER_SIZE,
    );
  }
  const head = await source.read(0, APR_HEADER_SIZE + 4);
  const length = new DataView(head.buffer, head.byteOffset, head.byteLength).getUint32(
    APR_HEADER_SIZE,
    true,
  );
  const compressed = source.size - APR_HEADER_SIZE - 4;
  if (length > compressed * LZ4_MAX_RATIO + 16) {
    fail(
      `LZ4 length prefix ${length} is impossible for ${compressed} compressed bytes (LZ4 expands at most ${LZ4_MAX_RATIO}:1)`,
      APR_HEADER_SIZE,
    );
  }
  const block: Lz4Block = {
    source,
    start: APR_HEADER_SIZE + 4,
    end: source.size,
    outputSize: length,
  };
  const checkpoints: Lz4Checkpoint[] = [{
    input: block.start,
    output: 0,
    history: new Uint8Array(0),
  }];
  const corrupt = (error: unknown): never => {
    if (!(error instanceof Lz4BlockError)) throw error;
    return fail(`corrupt LZ4 data: ${error.message}`, block.start + error.position, error);
  };
  try {
    for await (const _ of decodeLz4Block(block, checkpoints[0]!, (c) => checkpoints.push(c))) {
      // The first pass only checks the block and records checkpoints.
    }
  } catch (error) {
    corrupt(error);
  }
  const header = head.slice(0, APR_HEADER_SIZE);
  const size = APR_HEADER_SIZE + length;
  /** The image's bytes [start, end), in pieces, decoding from the checkpoint before `start`. */
  async function* pieces(start: number, end: number): AsyncGenerator<Uint8Array> {
    if (start < APR_HEADER_SIZE) {
      yield header.slice(start, Math.min(end, APR_HEADER_SIZE));
      start = APR_HEADER_SIZE;
    }
    if (start >= end) return;
    const from = start - APR_HEADER_SIZE;
    const to = end - APR_HEADER_SIZE;
    let checkpoint = checkpoints[0]!;
    for (const c of checkpoints) if (c.output <= from) checkpoint = c;
    let at = checkpoint.output;
    try {
      for await (const piece of decodeLz4Block(block, checkpoint, undefined, to)) {
        const lo = Math.max(from, at);
        const hi = Math.min(to, at + piece.length);
        if (hi > lo) yield piece.subarray(lo - at, hi - at);
        at += piece.length;
        if (at >= to) return;
      }
    } catch (error) {
      corrupt(error);
    }
  }
  const image: ByteSource = {
    name: path,
    size,
    async read(offset, length) {
      assertRange(path, size, offset, length);
      const out = new Uint8Array(length);
      let filled = 0;
      for await (const piece of pieces(offset, offset + length)) {
        out.set(piece, filled);
        filled += piece.length;
      }
      return out;
    },
    stream(start, end, chunkSize = DEFAULT_CHUNK_SIZE) {
      assertRange(path, size, start, end - start);
      const it = pieces(start, end);
      let carry: Uint8Array | undefined;
      return new ReadableStream<Uint8Array>({
        async pull(controller) {
          if (carry === undefined || carry.length === 0) {
            const next = await it.next();
            if (next.done) return controller.close();
            carry = next.value;
          }
          const chunk = carry.slice(0, chunkSize);
          carry = carry.subarray(chunk.length);
          controller.enqueue(chunk);
        },
        async cancel() {
          await it.return(undefined);
        },
      }, { highWaterMark: 0 });
    },
    close: () => source.close(),
  };
  return image;
}

/**
 * Compress a complete APR image (its header already carrying flag LZ4) into
 * the file realizar reads.
 *
 * @param image The uncompressed file: header, metadata, index, data, footer.
 * @returns The compressed file bytes.
 * @throws {RangeError} When the image is 4 GiB or more.
 */
export function encodeAprLz4(image: Uint8Array): Uint8Array<ArrayBuffer> {
  if (image.length < APR_HEADER_SIZE || image.length > APR_LZ4_MAX_IMAGE_SIZE) {
    throw new RangeError(
      `Cannot LZ4-compress an APR file of ${image.length} bytes: the format needs 64 bytes to 4 GiB`,
    );
  }
  const block = lz4CompressBlock(image.subarray(APR_HEADER_SIZE));
  const out = new Uint8Array(APR_HEADER_SIZE + 4 + block.length);
  out.set(image.subarray(0, APR_HEADER_SIZE));
  new DataView(out.buffer).setUint32(APR_HEADER_SIZE, image.length - APR_HEADER_SIZE, true);
  out.set(block, APR_HEADER_SIZE + 4);
  return out;
}
