/**
 * Reading exactly a range of a file through a runtime handle, which may
 * return fewer bytes a call: what `FileSource` and `FileSink` both read with.
 *
 * @module
 */

import type { RuntimeFile } from "../runtime/fs.ts";

/**
 * Fill `buffer` from `file` at its current position (the caller has sought
 * to `offset`).
 *
 * @param file The open handle.
 * @param buffer Where the bytes go; all of it is filled.
 * @param name The file, for the message.
 * @param offset Where the read starts, for the message.
 * @param hint Appended to the message (a likely cause).
 * @throws {RangeError} When the file ends first, naming the byte it ended at.
 */
export async function readFull(
  file: RuntimeFile,
  buffer: Uint8Array,
  name: string,
  offset: number,
  hint = "",
): Promise<void> {
  let filled = 0;
  while (filled < buffer.length) {
    const n = await file.read(buffer.subarray(filled));
    if (n === null) {
      throw new RangeError(
        `Cannot read "${name}": file ended at byte ${offset + filled}, expected ${
          offset + buffer.length
        }${hint}`,
      );
    }
    filled += n;
  }
}
