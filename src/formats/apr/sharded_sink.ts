/**
 * Sharded APR output (APR_V2.md §8): a `WritableStream<ModelChunk>` that
 * splits a model into shards of at most `maxShardSize` bytes of tensor data,
 * decided from the header chunk before any data, writes each shard with its
 * own {@linkcode AprSink} (so each shard is resumable on its own), and
 * writes the manifest last. Names: see `sharded_manifest.ts`.
 *
 * Not browser compatible: it writes files.
 *
 * @module
 */

import { basename, dirname, join } from "../../runtime/path.ts";
import { elementCount } from "../../dtype.ts";
import type { ModelChunk, ModelHeader, ModelMetadata, ProgressEvent } from "../../tensor.ts";
import { APR_FLAGS } from "./header.ts";
import {
  type AprShardManifest,
  type AprShardNames,
  aprShardNames,
  planAprShards,
} from "./sharded_manifest.ts";
import { AprSink, type AprSinkOptions, type AprSinkResult } from "./sink.ts";
import { assertOutputFree } from "../../io/fs_paths.ts";
import { partialPathOf, renameIntoPlace, writeFreshFile } from "../../io/partial_file.ts";

/** Options of {@linkcode ShardedAprSink.create}. */
export interface ShardedAprSinkOptions extends Omit<AprSinkOptions, "flags"> {
  /** Largest tensor data per shard, in bytes (a bigger tensor gets a shard of its own). */
  maxShardSize: number;
}

/** What a {@linkcode ShardedAprSink} wrote. */
export interface ShardedAprSinkResult {
  /** Path of the manifest. */
  readonly manifestPath: string;
  /** Each shard's result, index order. */
  readonly shards: readonly AprSinkResult[];
  /** Tensors found complete in resumed partial shards. */
  readonly resumedTensors: number;
  /** Payload bytes taken from resumed partial shards. */
  readonly resumedBytes: number;
}

/**
 * Write a model stream as a sharded APR set plus manifest.
 *
 * @example Usage
 * ```ts ignore
 * import { ShardedAprSink } from "./sharded_sink.ts";
 * const sink = await ShardedAprSink.create("out/model.apr", { maxShardSize: 2e9 });
 * await model.chunks().pipeTo(sink);
 * console.log(sink.result?.manifestPath); // out/model.apr.manifest.json
 * ```
 */
export class ShardedAprSink extends WritableStream<ModelChunk> {
  /** The output path the shard names derive from (`DIR/NAME.apr`; itself not written). */
  readonly path: string;
  #state: ShardedState;

  /**
   * Use {@linkcode ShardedAprSink.create}.
   *
   * @param path The output path.
   * @param state The state machine doing the work.
   */
  private constructor(path: string, state: ShardedState) {
    super({
      write: (chunk) => state.write(chunk),
      close: () => state.close(),
      abort: (reason) => state.abort(reason),
    }, { highWaterMark: 1 });
    this.path = path;
    this.#state = state;
  }

  /**
   * Create a sink for the set named after `path`.
   *
   * @param path `DIR/NAME.apr`: shards are `DIR/NAME-0000i-of-0000N.apr`, the manifest `DIR/NAME.apr.manifest.json`.
   * @param options Shard size, overwrite, resume, progress.
   * @returns The sink.
   * @throws {RangeError} When `maxShardSize` is not a positive integer.
   */
  static create(path: string, options: ShardedAprSinkOptions): Promise<ShardedAprSink> {
    if (typeof path !== "string" || path === "") {
      throw new TypeError("Cannot create sharded APR sink: the output path is empty");
    }
    if (!Number.isSafeInteger(options.maxShardSize) || options.maxShardSize <= 0) {
      throw new RangeError(
        `Cannot create sharded APR sink: max shard size ${options.maxShardSize} is not a positive integer`,
      );
    }
    return Promise.resolve(new ShardedAprSink(path, new ShardedState(path, options)));
  }

  /** What was written, once closed successfully. */
  get result(): ShardedAprSinkResult | undefined {
    return this.#state.result;
  }
}

class ShardedState {
  #path: string;
  #options: ShardedAprSinkOptions;
  #names: AprShardNames | undefined;
  #sinks: AprSink[] = [];
  #writers: WritableStreamDefaultWriter<ModelChunk>[] = [];
  #shardOf = new Map<string, number>();
  #lists: string[][] = [];
  #totalSize = 0;
  #progress: ProgressEvent[] = [];
  #failed = false;
  result: ShardedAprSinkResult | undefined;

  constructor(path: string, options: ShardedAprSinkOptions) {
    this.#path = path;
    this.#options = options;
  }

  get #manifestPath(): string {
    return join(dirname(this.#path), this.#names!.manifest);
  }

  async write(chunk: ModelChunk): Promise<void> {
    try {
      if (chunk.type === "header") await this.#header(chunk.header);
      else {
        const shard = this.#shardOf.get(chunk.tensor.info.name);
        if (this.#names === undefined) {
          throw new TypeError(
            `Cannot write "${this.#path}": a tensor chunk arrived before the header`,
          );
        }
        if (shard === undefined) {
          throw new TypeError(
            `Cannot write "${this.#path}": tensor "${chunk.tensor.info.name}" is not in the header`,
          );
        }
        await this.#writers[shard]!.write(chunk);
      }
    } catch (error) {
      await this.abort(error);
      throw error;
    }
  }

  async #header(header: ModelHeader): Promise<void> {
    if (this.#names !== undefined) {
      throw new TypeError(`Cannot write "${this.#path}": a second header chunk arrived`);
    }
    const plan = planAprShards(header.tensors, this.#options.maxShardSize);
    const names = aprShardNames(basename(this.#path), plan.length);
    this.#names = names;
    const dir = dirname(this.#path);
    // Every output, before any is written: a link planted at a later shard
    // must not fail the run after earlier shards were renamed into place.
    for (const file of [...names.files, names.manifest]) {
      await assertOutputFree(join(dir, file), this.#options.force);
    }
    this.#totalSize = header.tensors.reduce((s, t) => s + t.byteLength, 0);
    const { maxShardSize: _, onProgress, ...common } = this.#options;
    for (const [index, members] of plan.entries()) {
      const tensors = members.map((i) => header.tensors[i]!);
      for (const t of tensors) this.#shardOf.set(t.name, index);
      this.#lists.push(tensors.map((t) => t.name));
      const metadata: ModelMetadata = {
        ...header.metadata,
        total_size: tensors.reduce((s, t) => s + t.byteLength, 0),
        param_count: tensors.reduce((s, t) => s + elementCount(t.shape), 0),
        sharding: {
          shard_count: plan.length,
          shard_index: index,
          total_size: this.#totalSize,
          pattern: names.pattern,
        },
      };
      this.#progress.push({
        phase: "write",
        bytesDone: 0,
        bytesTotal: 0,
        itemsDone: 0,
        itemsTotal: tensors.length,
      });
      const sink = await AprSink.create(join(dir, names.files[index]!), {
        ...common,
        flags: APR_FLAGS.LAYOUT_ROW_MAJOR | APR_FLAGS.SHARDED,
        ...(onProgress
          ? {
            onProgress: (event: ProgressEvent) => {
              this.#progress[index] = event;
              this.#report(event.current);
            },
          }
          : {}),
      });
      this.#sinks.push(sink);
      const writer = sink.getWriter();
      this.#writers.push(writer);
      await writer.write({ type: "header", header: { ...header, metadata, tensors } });
    }
  }

  #report(current: string | undefined): void {
    const on = this.#options.onProgress;
    if (!on) return;
    const sum = (
      key: "bytesDone" | "itemsDone" | "itemsTotal" | "resumedBytes" | "resumedItems",
    ): number => this.#progress.reduce((s, e) => s + (e[key] ?? 0), 0);
    const resumedItems = sum("resumedItems");
    // Bytes of a tensor begun count too: a resume may keep part of one tensor only.
    const resumedBytes = sum("resumedBytes");
    const event: ProgressEvent = {
      phase: "write",
      bytesDone: sum("bytesDone"),
      bytesTotal: this.#totalSize,
      itemsDone: sum("itemsDone"),
      itemsTotal: sum("itemsTotal"),
      ...(resumedItems > 0 || resumedBytes > 0 ? { resumedBytes, resumedItems } : {}),
    };
    on(current === undefined ? event : { ...event, current });
  }

  async close(): Promise<void> {
    if (this.#names === undefined) {
      throw new TypeError(`Cannot write "${this.#path}": the stream ended before a header chunk`);
    }
    try {
      for (const writer of this.#writers) await writer.close();
    } catch (error) {
      await this.abort(error);
      throw error;
    }
    const shards = this.#sinks.map((s) => s.result!);
    const manifest: AprShardManifest = {
      version: "2.0",
      shard_count: shards.length,
      total_size: this.#totalSize,
      tensor_count: this.#shardOf.size,
      shards: shards.map((r, index) => ({
        filename: this.#names!.files[index]!,
        index,
        size: r.bytes,
        tensors: this.#lists[index]!,
      })),
      weight_map: Object.fromEntries(this.#shardOf),
    };
    const path = this.#manifestPath;
    await assertOutputFree(path, this.#options.force);
    await writeFreshFile(partialPathOf(path), JSON.stringify(manifest, null, 2) + "\n");
    await renameIntoPlace(partialPathOf(path), path, this.#options.force);
    this.result = {
      manifestPath: path,
      shards,
      resumedTensors: shards.reduce((s, r) => s + r.resumedTensors, 0),
      resumedBytes: shards.reduce((s, r) => s + r.resumedBytes, 0),
    };
  }

  /** Abort every shard still open: each keeps or removes its partial as AprSink decides. */
  async abort(reason: unknown): Promise<void> {
    if (this.#failed) return;
    this.#failed = true;
    await Promise.all(this.#writers.map((w) => w.abort(reason).catch(() => {})));
  }
}
