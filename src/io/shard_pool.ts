// This module is browser compatible.

/**
 * The files of a sharded model (SafeTensors shards, a split GGUF set), opened
 * on demand: tensor streams name a shard, the pool opens it on first read and
 * keeps at most {@linkcode MAX_OPEN_SHARDS} idle ones, so a set of thousands
 * of shards never exhausts file descriptors or connections.
 *
 * @module
 */

import { type FormatName, ModelFormatError } from "../errors.ts";
import type { ByteSource } from "./byte_source.ts";
import type { ModelFiles } from "./model_files.ts";

/**
 * Shards kept open at once. Tensors are usually read shard by shard, so a
 * few open handles suffice, and a 10,000-shard set cannot exhaust file
 * descriptors.
 */
export const MAX_OPEN_SHARDS = 16;

/** Opens shards on demand and keeps at most {@linkcode MAX_OPEN_SHARDS} idle ones. */
export class ShardPool {
  #files: ModelFiles;
  #paths: readonly string[];
  #sizes: readonly number[];
  #open = new Map<number, Promise<ByteSource>>();
  #active = new Map<number, number>();
  #closed = false;
  #format: FormatName;

  /**
   * @param files Where the shards are.
   * @param paths Each shard's path inside `files`.
   * @param sizes Each shard's size when its header was read.
   * @param format The format's name, for messages.
   */
  constructor(
    files: ModelFiles,
    paths: readonly string[],
    sizes: readonly number[],
    format: FormatName,
  ) {
    this.#format = format;
    this.#files = files;
    this.#paths = paths;
    this.#sizes = sizes;
  }

  async #acquire(shard: number): Promise<ByteSource> {
    if (this.#closed) {
      throw new TypeError(`Cannot read "${this.#files.name}": the reader is closed`);
    }
    this.#active.set(shard, (this.#active.get(shard) ?? 0) + 1);
    try {
      let opening = this.#open.get(shard);
      if (opening === undefined) {
        opening = this.#files.open(this.#paths[shard]!);
        this.#open.set(shard, opening);
        opening.catch(() => this.#open.delete(shard));
        await this.#evict(shard);
      }
      const source = await opening;
      // The header was validated against this size; a file replaced since
      // then could put other bytes at those offsets.
      if (source.size !== this.#sizes[shard]) {
        throw new ModelFormatError(
          this.#format,
          source.name,
          `changed while reading: ${source.size} bytes now, ${
            this.#sizes[shard]
          } when its header was read`,
        );
      }
      return source;
    } catch (error) {
      this.#release(shard);
      throw error;
    }
  }

  #release(shard: number): void {
    this.#active.set(shard, (this.#active.get(shard) ?? 1) - 1);
  }

  async #evict(keep: number): Promise<void> {
    for (const [shard, opening] of this.#open) {
      if (this.#open.size <= MAX_OPEN_SHARDS) return;
      if (shard === keep || (this.#active.get(shard) ?? 0) > 0) continue;
      this.#open.delete(shard);
      await (await opening.catch(() => undefined))?.close();
    }
  }

  /** A stream of bytes `[start, end)` of one shard, opened on first read. */
  stream(
    shard: number,
    start: number,
    end: number,
    chunkSize: number,
    name: string,
  ): ReadableStream<Uint8Array> {
    if (this.#closed) throw new TypeError(`Cannot read tensor "${name}": the reader is closed`);
    let reader: ReadableStreamDefaultReader<Uint8Array> | undefined;
    let held = false;
    const release = (): void => {
      if (held) this.#release(shard);
      held = false;
    };
    return new ReadableStream<Uint8Array>({
      pull: async (controller) => {
        try {
          if (reader === undefined) {
            const source = await this.#acquire(shard);
            held = true;
            reader = source.stream(start, end, chunkSize).getReader();
          }
          const result = await reader.read();
          if (result.done) {
            release();
            controller.close();
          } else {
            controller.enqueue(result.value);
          }
        } catch (error) {
          release();
          throw error;
        }
      },
      cancel: async (reason) => {
        try {
          await reader?.cancel(reason);
        } finally {
          release();
        }
      },
    }, { highWaterMark: 0 });
  }

  /** Close every open shard. */
  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    const open = [...this.#open.values()];
    this.#open.clear();
    for (const opening of open) await (await opening.catch(() => undefined))?.close();
  }
}
