/**
 * Sharded APR output (APR_V2.md §8): a `WritableStream<ModelChunk>` that
 * splits a model into shards of at most `maxShardSize` bytes of tensor data,
 * decided from the header chunk before any data, writes each shard with its
 * own {@linkcode AprSink} (so each shard is resumable on its own), and
 * writes the manifest last. Names: see `sharded_manifest.ts`.
 *
 * The set follows the split GGUF set's rules (`gguf/split_sink.ts`, issue
 * 34): its journal, `NAME.apr.partial.journal` as a split GGUF set's (so
 * `apr import`'s check for an interrupted run sees it; `io/set_journal.ts`),
 * is the set's lock from before any file of it is touched until it is
 * published or given up, and records the plan and the
 * source's identity (every source file's), so a second run is refused at
 * once and a resume from a changed source is refused. Each shard completes
 * as `SHARD.partial` with its own journal; the shards and the manifest are
 * renamed into place together once all are complete, all or none. Another
 * set of the output (another shard count) is refused without `force` and
 * removed with it once the new set is in place.
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
import { createSha256 } from "../../runtime/sha256.ts";
import { assertOutputFree, pathExists } from "../../io/fs_paths.ts";
import {
  discardFile,
  isBadInput,
  partialPathOf,
  renameSetIntoPlace,
  writeFreshFile,
} from "../../io/partial_file.ts";
import { otherSetFiles, refuseOtherSet, removeOtherSet, SetJournal } from "../../io/set_journal.ts";

const JOURNAL_VERSION = "aprkit-apr-sharded-journal-1";

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
  /** The set's journal and lock, held from planning until the set is published or given up. */
  #journal: SetJournal | undefined;
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
    if (this.#options.force !== true) {
      refuseOtherSet(this.#path, await otherAprSets(dir, names.pattern));
    }
    // The set's lock, before any file of it is touched (a second run is refused here).
    const planHash = createSha256().update(JOURNAL_VERSION).update("\0")
      .update(this.#options.planKey ?? "").update("\0").update(names.pattern).update("\0")
      .update(JSON.stringify(plan.map((m) => m.map((i) => header.tensors[i]!.name))))
      .digest("hex");
    this.#journal = await SetJournal.begin(`${this.#path}.partial.journal`, this.#path, {
      plan: planHash,
      source: this.#options.sourceKey,
      resume: this.#options.resume === true,
    });
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
        publish: false,
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
    try {
      await assertOutputFree(path, this.#options.force);
      await writeFreshFile(partialPathOf(path), JSON.stringify(manifest, null, 2) + "\n");
      // Still this run's set (nobody removed its lock), then every file in place, or none.
      await this.#journal!.assertStillHeld(this.#path);
      await renameSetIntoPlace(
        [...this.#sinks.map((s) => s.path), path].map((p) => ({
          partial: partialPathOf(p),
          path: p,
        })),
        this.#options.force,
      );
    } catch (error) {
      await discardFile(partialPathOf(path));
      await this.abort(error);
      throw error;
    }
    for (const sink of this.#sinks) await discardFile(`${partialPathOf(sink.path)}.journal`);
    const journal = this.#journal!;
    this.#journal = undefined;
    await journal.discard();
    // With force, an earlier set of another shard count goes: two sets would make neither load.
    await removeOtherSet(
      dirname(this.#path),
      await otherAprSets(dirname(this.#path), this.#names!.pattern),
    );
    this.result = {
      manifestPath: path,
      shards,
      resumedTensors: shards.reduce((s, r) => s + r.resumedTensors, 0),
      resumedBytes: shards.reduce((s, r) => s + r.resumedBytes, 0),
    };
  }

  /**
   * Abort every shard still open: each keeps or removes its partial as
   * AprSink decides. Shards completed but not published stay for a resume
   * with the set's journal, unless the input itself is bad (a resume would
   * reuse them); with nothing kept, the journal goes too. A run that never
   * held the set's lock touches none of its files.
   */
  async abort(reason: unknown): Promise<void> {
    if (this.#failed) return;
    this.#failed = true;
    await Promise.all(this.#writers.map((w) => w.abort(reason).catch(() => {})));
    const journal = this.#journal;
    this.#journal = undefined;
    if (journal === undefined) return;
    if (isBadInput(reason)) {
      for (const sink of this.#sinks) {
        await discardFile(partialPathOf(sink.path));
        await discardFile(`${partialPathOf(sink.path)}.journal`);
      }
    }
    let kept = false;
    for (const sink of this.#sinks) kept ||= await pathExists(partialPathOf(sink.path));
    if (kept) journal.close();
    else await journal.discard();
  }
}

/**
 * The files of other sharded sets of the output whose shards are named by
 * `pattern` (`NAME-{index}-of-0000N.apr`): `NAME-0000i-of-0000M.apr` with
 * another M.
 */
function otherAprSets(dir: string, pattern: string): Promise<string[]> {
  const [stem, count] = /^(.*)-\{index\}-of-(\d+)\.apr$/.exec(pattern)!.slice(1) as [
    string,
    string,
  ];
  return otherSetFiles(dir, (name) => {
    const m = /^(.*)-\d{5,}-of-(\d{5,})\.apr$/.exec(name);
    return m !== null && m[1] === stem && m[2] !== count;
  });
}
