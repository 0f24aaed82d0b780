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

import { createSha256 } from "../runtime/sha256.ts";
import { HubAnswerError } from "../errors.ts";
import { type ByteSource, DEFAULT_CHUNK_SIZE } from "./byte_source.ts";
import { type Sha256Snapshot, Sha256State } from "../runtime/sha256_state.ts";

/** How far a digest got: bytes `[0, hashed)` are in `state`. */
export interface DigestProgress {
  /** Bytes hashed, from the file's start. */
  readonly hashed: number;
  /** The SHA-256 state after them. */
  readonly state: Sha256Snapshot;
}

/** Options of {@linkcode ContentDigest}. */
export interface ContentDigestOptions {
  /**
   * Keep a state that {@linkcode ContentDigest.progress} can save, so a later
   * process continues the check (`sha256_state.ts`: WebAssembly, slower than
   * node:crypto, which cannot save its state; docs/BENCHMARKS.md, "SHA-256").
   */
  resumable?: boolean;
  /** Continue from a saved progress (implies `resumable`). */
  from?: DigestProgress | undefined;
  /** Called after the hashed prefix grew. */
  onAdvance?: () => void;
}

/** Largest gap a resumed check hashes before the first read (see `#fillGap`). */
const MAX_GAP_BYTES = 64 * 1024 * 1024;

/** The two hashes a digest may run on: node's (fast) or a resumable one. */
interface Hasher {
  update(bytes: Uint8Array): void;
  hex(): string;
}

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
  #hash: Hasher;
  #state: Sha256State | undefined;
  /** Bytes [0, #hashed) have gone into #hash. */
  #hashed = 0;
  #verified: Promise<void> | undefined;
  #onAdvance: (() => void) | undefined;
  /** Continued from a saved state, and no read has come yet. */
  #resumed = false;

  /**
   * Start checking a file.
   *
   * @param name The file, for messages.
   * @param size Its size.
   * @param sha256 The expected digest, lowercase hex.
   * @param options Resumable state, progress callback.
   * @throws {TypeError} When `options.from` is malformed or longer than the file.
   */
  constructor(name: string, size: number, sha256: string, options: ContentDigestOptions = {}) {
    this.name = name;
    this.size = size;
    this.#expected = sha256;
    this.#onAdvance = options.onAdvance;
    if (options.resumable || options.from !== undefined) {
      const state = options.from === undefined
        ? new Sha256State()
        : Sha256State.restore(options.from.state);
      if (
        options.from !== undefined && (state.length !== options.from.hashed || state.length > size)
      ) {
        throw new TypeError(
          `Cannot continue the check of "${name}": the saved progress does not fit it`,
        );
      }
      this.#state = state;
      this.#hashed = state.length;
      this.#resumed = options.from !== undefined;
      this.#hash = { update: (bytes) => state.update(bytes), hex: () => state.digestHex() };
    } else {
      const hash = createSha256();
      this.#hash = { update: (bytes) => hash.update(bytes), hex: () => hash.digest("hex") };
    }
  }

  /**
   * How far the check got, to continue it in another process; `undefined`
   * unless the digest is resumable.
   *
   * @returns The hashed prefix and the state after it.
   */
  progress(): DigestProgress | undefined {
    return this.#state === undefined
      ? undefined
      : { hashed: this.#hashed, state: this.#state.save() };
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
    const fill = (offset: number): Promise<void> => this.#fillGap(inner, offset);
    return {
      name: inner.name,
      size: inner.size,
      async read(offset: number, length: number): Promise<Uint8Array> {
        await fill(offset);
        const bytes = await inner.read(offset, length);
        absorb(offset, bytes);
        return bytes;
      },
      stream(start: number, end: number, chunkSize?: number): ReadableStream<Uint8Array> {
        let position = start;
        const hashing = new TransformStream<Uint8Array, Uint8Array>({
          transform(chunk, controller) {
            absorb(position, chunk);
            position += chunk.byteLength;
            controller.enqueue(chunk);
          },
        });
        // The gap (if any) is hashed before the range's first byte arrives.
        let reader: ReadableStreamDefaultReader<Uint8Array> | undefined;
        return new ReadableStream<Uint8Array>({
          async pull(controller) {
            if (reader === undefined) {
              await fill(start);
              reader = inner.stream(start, end, chunkSize).pipeThrough(hashing).getReader();
            }
            const { done, value } = await reader.read();
            if (done) controller.close();
            else controller.enqueue(value);
          },
          async cancel(reason) {
            await reader?.cancel(reason);
          },
        }, { highWaterMark: 0 });
      },
      close: () => inner.close(),
    };
  }

  /**
   * A resumed check whose saved state lags a little behind where the
   * resumed reads start (the earlier run was killed between two saves)
   * hashes the gap first, so those reads count instead of being fetched
   * again by {@linkcode ContentDigest.verify}. Only for resumed checks: in one
   * run, a gap is usually read later anyway (tensors out of file order).
   */
  async #fillGap(inner: ByteSource, offset: number): Promise<void> {
    if (!this.#resumed || offset <= this.#hashed || offset - this.#hashed > MAX_GAP_BYTES) return;
    this.#resumed = false; // once: the reads then continue in order
    while (this.#hashed < offset) {
      const length = Math.min(DEFAULT_CHUNK_SIZE, offset - this.#hashed);
      this.#absorb(this.#hashed, await inner.read(this.#hashed, length));
    }
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
      this.#onAdvance?.();
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
    const actual = this.#hash.hex();
    if (actual !== this.#expected) {
      throw new HubAnswerError(
        `Cannot use "${this.name}": its sha256 is ${actual} but the Hub announced ${this.#expected}; nothing was written`,
        this.name,
      );
    }
  }
}
