// This module is browser compatible.

/**
 * LZ4-compressed APR files (flag 0x0001), in realizar's layout (APR_V2.md
 * §8): the 64-byte header as is, then the uncompressed length of the rest
 * as a u32, then the rest of the file — metadata, index, data and footer —
 * as ONE LZ4 block. Offsets in the header refer to the decompressed image
 * (header ++ decompressed rest), whose footer CRC covers the image.
 *
 * Such files are below 4 GiB by construction (the u32 length), so reading
 * decompresses the whole image into memory, after checking the declared
 * size against the limit and the compressed size.
 *
 * @module
 */

import { ModelFormatError } from "../../errors.ts";
import { assertRange, type ByteSource, streamByReads } from "../../io/byte_source.ts";
import { Lz4BlockError, lz4CompressBlock, lz4DecompressBlock } from "./_lz4.ts";
import { APR_HEADER_SIZE } from "./header.ts";

/** Largest decompressed image: the length prefix is a u32, so everything is below 4 GiB. */
export const APR_LZ4_MAX_IMAGE_SIZE = APR_HEADER_SIZE + 0xffffffff;

/** LZ4 cannot expand data more than 255:1 (a 1-byte length step per 255 bytes); more is corruption. */
const LZ4_MAX_RATIO = 255;

/**
 * Decompress an LZ4 APR file into memory and return its image as a source
 * named like the file; closing the image closes `source`.
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
  {
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
    // Checked before allocating the image.
    if (length > compressed * LZ4_MAX_RATIO + 16) {
      fail(
        `LZ4 length prefix ${length} is impossible for ${compressed} compressed bytes (LZ4 expands at most ${LZ4_MAX_RATIO}:1)`,
        APR_HEADER_SIZE,
      );
    }
    const image = new Uint8Array(APR_HEADER_SIZE + length);
    image.set(head.subarray(0, APR_HEADER_SIZE));
    const block = await source.read(APR_HEADER_SIZE + 4, compressed);
    try {
      lz4DecompressBlock(block, image.subarray(APR_HEADER_SIZE));
    } catch (error) {
      if (!(error instanceof Lz4BlockError)) throw error;
      fail(
        `corrupt LZ4 data: ${error.message}`,
        APR_HEADER_SIZE + 4 + error.position,
        error,
      );
    }
    // Served from the one decompressed array (no Blob copy): reads return copies.
    const memory: ByteSource = {
      name: path,
      size: image.length,
      read: (offset, length) => {
        assertRange(path, image.length, offset, length);
        return Promise.resolve(image.slice(offset, offset + length));
      },
      stream: (start, end, chunkSize) => streamByReads(memory, start, end, chunkSize),
      close: () => source.close(),
    };
    return memory;
  }
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
