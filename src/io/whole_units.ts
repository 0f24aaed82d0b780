// This module is browser compatible.

/**
 * A payload (or a stream of decoded values) arrives in chunks of
 * any length, cut anywhere; the kernels work on whole units (elements,
 * blocks). This splits each chunk into whole units, carrying a unit cut at a
 * chunk's end into the next one.
 *
 * @module
 */

/** Whole units of a fixed length out of chunks cut anywhere. */
export class WholeUnits<T extends Uint8Array | Float32Array> {
  #carry: T;
  /** The other carry: a completed unit handed out stays intact while the next tail is kept. */
  #spare: T;
  #carried = 0;

  /** @param carry Holds one unit (its length is the unit's): the cut unit is completed in it. */
  constructor(carry: T) {
    this.#carry = carry;
    this.#spare = carry.slice() as T;
  }

  /** Whether a unit is cut short (what was taken so far ends inside one). */
  get partial(): boolean {
    return this.#carried !== 0;
  }

  /**
   * The whole units of `chunk` from `from`: the carried unit once completed,
   * then a run of the chunk's own (each when there is one); what follows them
   * is carried. Use the runs before the next call: the first may be a carry
   * buffer, which is reused.
   *
   * @param chunk The next part of the payload.
   * @param from Where it starts in `chunk`.
   * @returns At most two runs, each a whole number of units.
   */
  take(chunk: T, from = 0): T[] {
    const size = this.#carry.length;
    const runs: T[] = [];
    let off = from;
    if (this.#carried > 0) {
      const take = Math.min(size - this.#carried, chunk.length - off);
      this.#carry.set(chunk.subarray(off, off + take), this.#carried);
      this.#carried += take;
      off += take;
      if (this.#carried < size) return runs;
      runs.push(this.#carry);
      [this.#carry, this.#spare] = [this.#spare, this.#carry];
      this.#carried = 0;
    }
    const whole = Math.floor((chunk.length - off) / size) * size;
    if (whole > 0) runs.push(chunk.subarray(off, off + whole) as T);
    off += whole;
    if (off < chunk.length) {
      this.#carry.set(chunk.subarray(off), 0);
      this.#carried = chunk.length - off;
    }
    return runs;
  }
}
