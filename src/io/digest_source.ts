/**
 * Checking a file's content against a sha256 announced elsewhere (a Hub
 * file's LFS oid) while it is read for another purpose: no buffering, and
 * nothing read twice when the reads come in order.
 *
 * Reads are hashed as they pass, from the first byte not yet hashed onwards,
 * whichever {@linkcode ByteSource} of the file they come through (a reader may
 * close a file and open it again). Readers do not read strictly in order (a
 * header, then tensors in whatever order the output needs), so
 * {@linkcode ContentDigest.verify} reads whatever was skipped, then compares.
 * Nothing built from the content may be kept until `verify` has resolved.
 *
 * @module
 */

import { createSha256, type Sha256 } from "../runtime/sha256.ts";
import { HubAnswerError } from "../errors.ts";
import { type ByteSource, DEFAULT_CHUNK_SIZE } from "./byte_source.ts";

/**
 * The running sha256 of one file's content.
 *
 * @example Usage
 * ```ts ignore
 * import { ContentDigest } from "./digest_source.ts";
 * const digest = new ContentDigest("hf://org/name/model.safetensors", size, expectedSha256);
 * const source = digest.wrap(await open());
 * const header = await source.read(0, 8);
 * await digest.verify(open); // throws HubAnswerError on a mismatch
 * ```
 */
export class ContentDigest {
  /** The file, for messages. */
  readonly name: string;
  /** Its size. */
  readonly size: number;
  #expected: string;
  #hash: Sha256 = createSha256();
  /** Bytes [0, #hashed) have gone into #hash. */
  #hashed = 0;
  #verified: Promise<void> | undefined;

  /**
   * Start checking a file.
   *
   * @param name The file, for messages.
   * @param size Its size.
   * @param sha256 The expected digest, lowercase hex.
   */
  constructor(name: string, size: number, sha256: string) {
    this.name = name;
    this.size = size;
    this.#expected = sha256;
  }

  /** Bytes hashed so far (every byte before this offset). */
  get bytesHashed(): number {
    return this.#hashed;
  }

  /**
   * A source whose reads feed this digest.
   *
   * @param inner A source of this file; closing the result closes it.
   * @returns The wrapped source.
   */
  wrap(inner: ByteSource): ByteSource {
    const absorb = (offset: number, bytes: Uint8Array): void => this.#absorb(offset, bytes);
    return {
      name: inner.name,
      size: inner.size,
      async read(offset: number, length: number): Promise<Uint8Array> {
        const bytes = await inner.read(offset, length);
        absorb(offset, bytes);
        return bytes;
      },
      stream(start: number, end: number, chunkSize?: number): ReadableStream<Uint8Array> {
        let position = start;
        return inner.stream(start, end, chunkSize).pipeThrough(
          new TransformStream<Uint8Array, Uint8Array>({
            transform(chunk, controller) {
              absorb(position, chunk);
              position += chunk.byteLength;
              controller.enqueue(chunk);
            },
          }),
        );
      },
      close: () => inner.close(),
    };
  }

  /**
   * Hash whatever was not read yet, then compare with the expected sha256.
   * Safe to call more than once.
   *
   * @param open Opens the file again, to read what was skipped.
   * @throws {HubAnswerError} When the content differs from the announced sha256.
   */
  verify(open: () => Promise<ByteSource>): Promise<void> {
    this.#verified ??= this.#finish(open);
    return this.#verified;
  }

  #absorb(offset: number, bytes: Uint8Array): void {
    if (this.#hashed === this.size) return; // complete: the digest may have been taken
    const end = Math.min(offset + bytes.byteLength, this.size);
    if (offset <= this.#hashed && this.#hashed < end) {
      this.#hash.update(bytes.subarray(this.#hashed - offset, end - offset));
      this.#hashed = end;
    }
  }

  async #finish(open: () => Promise<ByteSource>): Promise<void> {
    if (this.#hashed < this.size) {
      const source = await open();
      try {
        while (this.#hashed < this.size) {
          const length = Math.min(DEFAULT_CHUNK_SIZE, this.size - this.#hashed);
          this.#absorb(this.#hashed, await source.read(this.#hashed, length));
        }
      } finally {
        await source.close();
      }
    }
    const actual = this.#hash.digest("hex");
    if (actual !== this.#expected) {
      throw new HubAnswerError(
        `Cannot use "${this.name}": its sha256 is ${actual} but the Hub announced ${this.#expected}; nothing was written`,
        this.name,
      );
    }
  }
}
