/**
 * Hash a file's first bytes from disk, one reused buffer at a time: what a
 * resumed download or a resumed export checks its kept bytes with.
 *
 * @module
 */

import type { Sha256 } from "../runtime/sha256.ts";
import { fs } from "../runtime/fs.ts";

/** Bytes read at a time (one buffer, reused). */
const HASH_CHUNK_SIZE = 4 * 1024 * 1024;

/**
 * Feed the first `length` bytes of a file to a hash.
 *
 * @param path The file.
 * @param length How many bytes, from its start.
 * @param hash The hash to feed.
 * @throws {Error} When the file is shorter than `length`.
 */
export async function hashFile(path: string, length: number, hash: Sha256): Promise<void> {
  if (length === 0) return;
  const file = await fs.open(path, { read: true });
  try {
    const buffer = new Uint8Array(Math.min(HASH_CHUNK_SIZE, length));
    let done = 0;
    while (done < length) {
      const n = await file.read(buffer.subarray(0, Math.min(buffer.length, length - done)));
      if (n === null) throw new Error(`Cannot hash "${path}": it ended at byte ${done}`);
      hash.update(buffer.subarray(0, n));
      done += n;
    }
  } finally {
    file.close();
  }
}
