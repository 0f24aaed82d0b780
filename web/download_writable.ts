/**
 * A save target for browsers without the File System Access API: the sinks'
 * positioned writes turned into the file's bytes in order, for a download.
 * A GGUF sink writes front to back (header, each tensor and its padding,
 * in order): its bytes go on as they come, one chunk held at a time. An APR
 * sink puts tensors in name order while they arrive in the source's order:
 * a write ahead of the next byte due is held until the bytes before it
 * arrive, within a bound. Bytes never written (the preallocated length's
 * zeros) are sent at the end. A write behind what was already sent cannot
 * be taken back from a download: it fails the conversion rather than give
 * a wrong file.
 *
 * This module is browser compatible.
 *
 * @module
 */

import type { PositionedWritable } from "../mod.ts";

/** Where a download's bytes go, in order. */
export interface DownloadSink {
  /** Take the next bytes (the sink may keep `chunk`); resolves when it can take more. */
  write(chunk: Uint8Array): Promise<void>;
  /** All bytes were written. */
  close(): Promise<void>;
  /** The conversion failed or was cancelled: drop the download. */
  abort(reason?: unknown): Promise<void>;
  /** The largest file this sink can hold, if it has a limit. */
  readonly limit?: number;
}

/** Zeros are sent in pieces of at most this size. */
const ZERO_CHUNK = 1 << 20;

/**
 * The most bytes held out of order (by default): an APR file of a model up
 * to about this size streams (its tensors wait for the ones before them in
 * name order).
 */
export const MAX_HELD_BYTES = 2 ** 31;

/** A {@linkcode PositionedWritable} whose bytes go, in file order, to a {@linkcode DownloadSink}. */
export class DownloadWritable implements PositionedWritable {
  #sink: DownloadSink;
  #name: string;
  /** Bytes sent to the sink (the file up to here is final). */
  #sent = 0;
  /** The size the writer set (truncate), or reached. */
  #size = 0;
  /** Writes ahead of #sent, by position. */
  #held = new Map<number, Uint8Array>();
  #heldBytes = 0;
  #peakHeld = 0;

  #maxHeld: number;

  /**
   * @param sink Where the bytes go.
   * @param name The file's name, for messages.
   * @param maxHeldBytes The most bytes held out of order.
   */
  constructor(sink: DownloadSink, name: string, maxHeldBytes: number = MAX_HELD_BYTES) {
    this.#sink = sink;
    this.#name = name;
    this.#maxHeld = maxHeldBytes;
  }

  /** The most bytes held out of order at once (0: the file streamed as written). */
  get peakHeld(): number {
    return this.#peakHeld;
  }

  /**
   * Take a positioned write or a size change.
   *
   * @param command What the writer asks.
   * @throws {RangeError} For a write behind the bytes already sent or over
   *   one held, a file that shrinks below them, or one over the sink's limit.
   */
  async write(
    command:
      | { type: "write"; position: number; data: Uint8Array }
      | { type: "truncate"; size: number },
  ): Promise<void> {
    if (command.type === "truncate") {
      this.#checkLimit(command.size);
      if (command.size < this.#sent) throw this.#behind(command.size);
      this.#size = command.size;
      return;
    }
    const { position, data } = command;
    if (data.length === 0) return;
    const end = position + data.length;
    if (position < this.#sent) throw this.#behind(position);
    this.#checkLimit(end);
    this.#size = Math.max(this.#size, end);
    if (position > this.#sent) {
      this.#hold(position, data);
      return;
    }
    await this.#send(data);
    // The held writes that now follow on.
    for (let next = this.#held.get(this.#sent); next; next = this.#held.get(this.#sent)) {
      this.#held.delete(this.#sent);
      this.#heldBytes -= next.length;
      await this.#send(next);
    }
  }

  /** Send the rest of the file (held writes, zeros where nothing was written) and finish. */
  async close(): Promise<void> {
    for (const position of [...this.#held.keys()].sort((a, b) => a - b)) {
      await this.#zeros(position);
      await this.#send(this.#held.get(position)!);
    }
    this.#held.clear();
    await this.#zeros(this.#size);
    await this.#sink.close();
  }

  /**
   * Drop the download.
   *
   * @param reason Why.
   */
  abort(reason?: unknown): Promise<void> {
    this.#held.clear();
    return this.#sink.abort(reason);
  }

  async #send(data: Uint8Array): Promise<void> {
    await this.#sink.write(data);
    this.#sent += data.length;
  }

  #hold(position: number, data: Uint8Array): void {
    const end = position + data.length;
    for (const [at, bytes] of this.#held) {
      if (at < end && position < at + bytes.length) {
        throw new RangeError(
          `Cannot save "${this.#name}" as a download: bytes ${position} to ${end} were ` +
            "written twice; use a browser with showSaveFilePicker (Chrome, Edge) or the apr CLI",
        );
      }
    }
    const limit = this.#maxHeld;
    if (this.#heldBytes + data.length > limit) {
      throw new RangeError(
        `Cannot save "${this.#name}" as a download in this browser: over ${
          limit.toLocaleString("en")
        } bytes arrived ahead of the bytes before them (an APR file's tensors are in name ` +
          "order); write GGUF, use Chrome or Edge (showSaveFilePicker), or the apr CLI",
      );
    }
    this.#held.set(position, data);
    this.#heldBytes += data.length;
    this.#peakHeld = Math.max(this.#peakHeld, this.#heldBytes);
  }

  async #zeros(until: number): Promise<void> {
    while (this.#sent < until) {
      await this.#send(new Uint8Array(Math.min(ZERO_CHUNK, until - this.#sent)));
    }
  }
  #checkLimit(size: number): void {
    const limit = this.#sink.limit;
    if (limit !== undefined && size > limit) {
      throw new RangeError(
        `Cannot save "${this.#name}" as a download in this browser: it is ${
          size.toLocaleString("en")
        } bytes, over the ${limit.toLocaleString("en")} bytes a download kept in memory may ` +
          "hold; serve the page over https (or localhost) to stream it, use Chrome or Edge, " +
          "or convert with the apr CLI",
      );
    }
  }

  #behind(position: number): RangeError {
    return new RangeError(
      `Cannot save "${this.#name}" as a download: the writer went back to byte ${position} ` +
        `after ${this.#sent} bytes were sent; use a browser with showSaveFilePicker ` +
        "(Chrome, Edge) or the apr CLI",
    );
  }
}
