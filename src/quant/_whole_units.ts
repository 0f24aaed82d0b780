// This module is browser compatible.

/**
 * Internal: a payload arrives in chunks of any length, cut anywhere; the
 * kernels work on whole units (elements, blocks). This splits each chunk
 * into whole units, carrying a unit cut at a chunk's end into the next one.
 *
 * @module
 */

/** Whole units of `size` bytes out of chunks cut anywhere. */
export class WholeUnits {
  #size: number;
  #carry: Uint8Array;
  #carryLen = 0;

  /** @param size Bytes per unit. */
  constructor(size: number) {
    this.#size = size;
    this.#carry = new Uint8Array(size);
  }

  /** Whether a unit is cut short (the payload so far ends inside one). */
  get partial(): boolean {
    return this.#carryLen !== 0;
  }

  /**
   * Pass the whole units of `chunk` (from byte `from`) to `onUnits`: first
   * the unit completed from the carried bytes (one), then the chunk's own
   * (one call, when it has any); the bytes after them are carried.
   *
   * @param chunk The next bytes of the payload.
   * @param from Where they start in `chunk`.
   * @param onUnits Receives a run of whole units and their count; the bytes
   *   are valid during the call only (the carried unit is reused).
   */
  push(
    chunk: Uint8Array,
    from: number,
    onUnits: (bytes: Uint8Array, units: number) => void,
  ): void {
    const size = this.#size;
    let off = from;
    if (this.#carryLen > 0) {
      const take = Math.min(size - this.#carryLen, chunk.length - off);
      this.#carry.set(chunk.subarray(off, off + take), this.#carryLen);
      this.#carryLen += take;
      off += take;
      if (this.#carryLen < size) return;
      onUnits(this.#carry, 1);
      this.#carryLen = 0;
    }
    const units = Math.floor((chunk.length - off) / size);
    if (units > 0) onUnits(chunk.subarray(off, off + units * size), units);
    off += units * size;
    if (off < chunk.length) {
      this.#carry.set(chunk.subarray(off));
      this.#carryLen = chunk.length - off;
    }
  }
}
