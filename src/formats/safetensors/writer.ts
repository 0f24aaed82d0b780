/**
 * A streaming SafeTensors writer for export: a `WritableStream` of
 * {@linkcode ModelChunk}s. The header chunk fixes the layout (offsets follow
 * from each tensor's `byteLength`), so each file's header is written once,
 * then payloads stream to their place; memory stays at one chunk.
 *
 * Output naming. Without `maxShardSize`, or when everything fits in one
 * shard, one file at `path`. Otherwise, with `path = DIR/BASE.safetensors`
 * (BASE is the file name without a `.safetensors` suffix):
 * `DIR/BASE-00001-of-0000N.safetensors` … and
 * `DIR/BASE.safetensors.index.json` (`{"metadata": {"total_size": B},
 * "weight_map": {...}}`, as `transformers` writes it) — so `-o
 * out/model.safetensors` gives the layout `transformers` loads from `out/`.
 *
 * Every file is written as `NAME.partial` and renamed when the whole set is
 * complete, all together or none (`renameSetIntoPlace`); on failure the
 * partials are removed. A sharded set follows the split GGUF set's rules
 * (issue 34): its journal, `BASE.safetensors.index.json.partial.journal`
 * (`io/set_journal.ts`), is the set's lock from before any file of it is
 * touched until it is published or given up, so a second run is refused at
 * once; another set of the output (another shard count) is refused without
 * `force` and removed with it once the new set is in place. (SafeTensors
 * output does not resume: the journal holds the plan only.)
 *
 * @module
 */

import { FileSink } from "../../io/file_sink.ts";
import type {
  ModelChunk,
  ModelHeader,
  ProgressCallback,
  TensorEntry,
  TensorInfo,
} from "../../tensor.ts";
import { checkSafetensorsTensors, layoutSafetensors, stringEntries } from "./_layout.ts";
import { assertOutputFree } from "../../io/fs_paths.ts";
import {
  partialPathOf,
  renameIntoPlace,
  renameSetIntoPlace,
  writeFreshFile,
} from "../../io/partial_file.ts";
import { otherSetFiles, refuseOtherSet, removeOtherSet, SetJournal } from "../../io/set_journal.ts";
import { fs } from "../../runtime/fs.ts";

/** Options of {@linkcode SafetensorsSink.create}. */
export interface SafetensorsSinkOptions {
  /**
   * Largest shard, in bytes of tensor data: tensors are packed in header
   * order into shards of at most this size (a tensor larger than it gets a
   * shard of its own). Unset: one file.
   */
  maxShardSize?: number;
  /**
   * Replace existing output files.
   *
   * @default {false}
   */
  force?: boolean;
  /** Called after each tensor is written (phase `"export"`). */
  onProgress?: ProgressCallback;
}

/** One output file of a SafeTensors export. */
interface ShardPlan {
  path: string;
  tensors: TensorInfo[];
}

/** Digits of the shard numbers, as `transformers` writes them (`00001`). */
const SHARD_DIGITS = 5;

function splitPath(path: string): { dir: string; base: string } {
  const slash = Math.max(path.lastIndexOf("/"), path.lastIndexOf("\\"));
  const dir = slash === -1 ? "" : path.slice(0, slash + 1);
  const file = path.slice(slash + 1);
  return {
    dir,
    base: file.endsWith(".safetensors") ? file.slice(0, -".safetensors".length) : file,
  };
}

/**
 * The files a SafeTensors export of `tensors` writes.
 *
 * @param path The output path given by the user.
 * @param tensors The tensors, in header order.
 * @param maxShardSize Largest shard in bytes, or undefined for one file.
 * @returns The shard plans, and the index path when there is more than one shard.
 */
function planShards(
  path: string,
  tensors: readonly TensorInfo[],
  maxShardSize: number | undefined,
): { shards: ShardPlan[]; indexPath: string | undefined } {
  const groups: TensorInfo[][] = [[]];
  let size = 0;
  for (const t of tensors) {
    const current = groups[groups.length - 1]!;
    if (maxShardSize !== undefined && current.length > 0 && size + t.byteLength > maxShardSize) {
      groups.push([t]);
      size = t.byteLength;
    } else {
      current.push(t);
      size += t.byteLength;
    }
  }
  if (groups.length === 1) return { shards: [{ path, tensors: groups[0]! }], indexPath: undefined };
  const { dir, base } = splitPath(path);
  const digits = Math.max(SHARD_DIGITS, String(groups.length).length);
  const of = String(groups.length).padStart(digits, "0");
  return {
    shards: groups.map((g, i) => ({
      path: `${dir}${base}-${String(i + 1).padStart(digits, "0")}-of-${of}.safetensors`,
      tensors: g,
    })),
    indexPath: `${dir}${base}.safetensors.index.json`,
  };
}

/**
 * Write a model stream as SafeTensors: one file, or shards plus an index
 * with `maxShardSize`. Only dtypes SafeTensors has are accepted (F32, F16,
 * BF16, F64, integers, BOOL, F8/F6/F4); quantized tensors (Q4_K, APR_Q8…)
 * are refused with a `TypeError` naming the tensor: convert them upstream
 * (the CLI's `--dtype f32`). `__metadata__` is the string entries of
 * `metadata.source_metadata`, with `"format": "pt"` added when missing
 * because `transformers` refuses files whose metadata lacks it.
 *
 * @example Usage
 * ```ts ignore
 * import { SafetensorsSink } from "./writer.ts";
 * import { openApr } from "../apr/reader.ts";
 * import { modelChunks } from "../../tensor.ts";
 * import { openFileSource } from "../../io/file_source.ts";
 * const model = await openApr(await openFileSource("model.apr"));
 * await modelChunks(model).pipeTo(
 *   await SafetensorsSink.create("out/model.safetensors", { maxShardSize: 5e9 }),
 * );
 * ```
 */
export class SafetensorsSink extends WritableStream<ModelChunk> {
  /** The path given; with shards, the index and shards are named after it. */
  readonly path: string;
  #writer: SafetensorsFilesWriter;

  /**
   * Use {@linkcode SafetensorsSink.create}.
   *
   * @param path The output path.
   * @param writer The state machine doing the work.
   */
  private constructor(path: string, writer: SafetensorsFilesWriter) {
    super({
      write: (chunk) => writer.write(chunk),
      close: () => writer.finish(),
      abort: () => writer.discard(),
    }, { highWaterMark: 1 });
    this.path = path;
    this.#writer = writer;
  }

  /** Paths of the files written (shards, then the index), known once the header has arrived. */
  get outputs(): readonly string[] {
    return this.#writer.outputs;
  }

  /**
   * Prepare a SafeTensors export. Nothing is created until the header chunk
   * arrives, since the number of shards depends on it.
   *
   * @param path Output file; with shards, the base of their names (see the module doc).
   * @param options Shard size, overwrite, progress.
   * @returns The sink; pipe a model stream into it.
   * @throws {RangeError} When `maxShardSize` is not a positive integer (before any I/O).
   * @throws {UsageError} When `path` exists and `force` is not set.
   */
  static async create(
    path: string,
    options: SafetensorsSinkOptions = {},
  ): Promise<SafetensorsSink> {
    const max = options.maxShardSize;
    if (max !== undefined && (!Number.isSafeInteger(max) || max <= 0)) {
      throw new RangeError(`Cannot write SafeTensors: shard size ${max} is not a positive integer`);
    }
    await assertOutputFree(path, options.force);
    return new SafetensorsSink(path, new SafetensorsFilesWriter(path, options));
  }
}

/** The sink's state: header first, then tensors in header order, shard after shard. */
class SafetensorsFilesWriter {
  #path: string;
  #options: SafetensorsSinkOptions;
  #header: ModelHeader | undefined;
  #shards: ShardPlan[] = [];
  #indexPath: string | undefined;
  #metadata: Record<string, string> | undefined;
  /** Shard currently open, its file, and where its next payload goes. */
  #current: { shard: number; file: FileSink; offsets: readonly number[]; next: number } | undefined;
  #partials: string[] = [];
  /** Files already renamed into place, removed again if a later rename fails. */
  #renamed: string[] = [];
  #next = 0;
  #bytesDone = 0;
  #bytesTotal = 0;
  #done = false;
  /** A sharded set's journal and lock, held from planning until it is published or given up. */
  #journal: SetJournal | undefined;

  constructor(path: string, options: SafetensorsSinkOptions) {
    this.#path = path;
    this.#options = options;
  }

  get outputs(): readonly string[] {
    const paths = this.#shards.map((s) => s.path);
    return this.#indexPath === undefined ? paths : [...paths, this.#indexPath];
  }

  async write(chunk: ModelChunk): Promise<void> {
    try {
      if (chunk.type === "header") await this.#plan(chunk.header);
      else await this.#writeTensor(chunk.tensor);
    } catch (error) {
      await this.discard();
      throw error;
    }
  }

  async #plan(header: ModelHeader): Promise<void> {
    if (this.#header !== undefined) {
      throw new TypeError(`Cannot write "${this.#path}": a second header chunk arrived`);
    }
    checkSafetensorsTensors(header.tensors);
    this.#header = header;
    const plan = planShards(this.#path, header.tensors, this.#options.maxShardSize);
    this.#shards = plan.shards;
    this.#indexPath = plan.indexPath;
    for (const path of this.outputs) await assertOutputFree(path, this.#options.force);
    if (this.#indexPath !== undefined) {
      if (this.#options.force !== true) {
        refuseOtherSet(this.#path, await otherShardSets(this.#path, this.#shards.length));
      }
      // The set's lock, before any file of it is touched (a second run is refused here).
      this.#journal = await SetJournal.begin(`${this.#indexPath}.partial.journal`, this.#path, {
        plan: JSON.stringify(this.outputs),
        resume: false,
      });
    }
    const metadata = stringEntries(header.metadata["source_metadata"]) ?? {};
    if (!Object.hasOwn(metadata, "format")) metadata["format"] = "pt";
    this.#metadata = metadata;
    // Every shard's header is checked before the first byte is written.
    for (const shard of this.#shards) layoutSafetensors(shard.tensors, metadata, shard.path);
    this.#bytesTotal = header.tensors.reduce((n, t) => n + t.byteLength, 0);
    this.#report(undefined);
  }

  /** Open shard `shard`'s partial file and write its header. */
  async #openShard(shard: number): Promise<void> {
    const plan = this.#shards[shard]!;
    const layout = layoutSafetensors(plan.tensors, this.#metadata, plan.path);
    const partial = `${plan.path}.partial`;
    this.#partials.push(partial);
    const file = await FileSink.open(partial, { truncate: true });
    this.#current = { shard, file, offsets: layout.offsets, next: 0 };
    await file.writeAt(0, layout.headerBytes);
  }

  async #closeCurrent(): Promise<void> {
    const current = this.#current;
    if (current === undefined) return;
    this.#current = undefined;
    await current.file.syncData();
    await current.file.close();
  }

  async #writeTensor(entry: TensorEntry): Promise<void> {
    const header = this.#header;
    if (header === undefined) {
      throw new TypeError(`Cannot write "${this.#path}": a tensor arrived before the header`);
    }
    const expected = header.tensors[this.#next];
    if (expected === undefined || expected.name !== entry.info.name) {
      throw new TypeError(
        `Cannot write "${this.#path}": tensor "${entry.info.name}" arrived, expected ${
          expected === undefined ? "no more tensors" : `"${expected.name}"`
        } (tensors must follow header order)`,
      );
    }
    if (this.#current === undefined || this.#current.next >= this.#current.offsets.length) {
      const shard = this.#current === undefined ? 0 : this.#current.shard + 1;
      await this.#closeCurrent();
      await this.#openShard(shard);
    }
    const current = this.#current!;
    let position = current.offsets[current.next]!;
    let written = 0;
    for await (const chunk of entry.open()) {
      if (written + chunk.length > expected.byteLength) {
        throw new RangeError(
          `Cannot write "${this.#path}": tensor "${expected.name}" yields more than its ${expected.byteLength} bytes`,
        );
      }
      await current.file.writeAt(position, chunk);
      position += chunk.length;
      written += chunk.length;
      this.#bytesDone += chunk.length;
    }
    if (written !== expected.byteLength) {
      throw new RangeError(
        `Cannot write "${this.#path}": tensor "${expected.name}" yielded ${written} of its ${expected.byteLength} bytes`,
      );
    }
    current.next++;
    this.#next++;
    this.#report(expected.name);
  }

  #report(current: string | undefined): void {
    this.#options.onProgress?.({
      phase: "export",
      bytesDone: this.#bytesDone,
      bytesTotal: this.#bytesTotal,
      itemsDone: this.#next,
      itemsTotal: this.#header?.tensors.length ?? 0,
      ...(current === undefined ? {} : { current }),
    });
  }

  async finish(): Promise<void> {
    try {
      const header = this.#header;
      if (header === undefined) {
        throw new TypeError(`Cannot write "${this.#path}": the stream ended before its header`);
      }
      if (this.#next !== header.tensors.length) {
        throw new TypeError(
          `Cannot write "${this.#path}": the stream ended after ${this.#next} of ${header.tensors.length} tensors`,
        );
      }
      // A model without tensors is still one valid file.
      if (this.#current === undefined && this.#partials.length === 0) await this.#openShard(0);
      await this.#closeCurrent();
      if (this.#indexPath !== undefined) {
        const weightMap: Record<string, string> = {};
        const entries: [string, string][] = [];
        for (const shard of this.#shards) {
          const name = shard.path.slice(
            Math.max(shard.path.lastIndexOf("/"), shard.path.lastIndexOf("\\")) + 1,
          );
          for (const t of shard.tensors) entries.push([t.name, name]);
        }
        // Sorted by tensor name, as transformers writes it.
        entries.sort((a, b) => (a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : 0));
        for (const [name, shard] of entries) {
          Object.defineProperty(weightMap, name, {
            value: shard,
            enumerable: true,
            writable: true,
            configurable: true,
          });
        }
        const json = JSON.stringify(
          { metadata: { total_size: this.#bytesTotal }, weight_map: weightMap },
          null,
          2,
        ) + "\n";
        const partial = `${this.#indexPath}.partial`;
        this.#partials.push(partial);
        await writeFreshFile(partial, json);
      }
      if (this.#journal === undefined) {
        await renameIntoPlace(partialPathOf(this.#path), this.#path, this.#options.force);
        this.#renamed.push(this.#path);
      } else {
        // Still this run's set (nobody removed its lock), then every file in place, or none.
        await this.#journal.assertStillHeld(this.#path);
        await renameSetIntoPlace(
          this.outputs.map((path) => ({ partial: partialPathOf(path), path })),
          this.#options.force,
        );
        const journal = this.#journal;
        this.#journal = undefined;
        await journal.discard();
        // With force, an earlier set of another shard count goes: two sets would make neither load.
        const { dir } = splitPath(this.#path);
        await removeOtherSet(dir, await otherShardSets(this.#path, this.#shards.length));
      }
      this.#done = true;
    } catch (error) {
      await this.discard();
      throw error;
    }
  }

  /** Close and remove every partial file; never leave a half-written output (DESIGN.md §2.3). */
  async discard(): Promise<void> {
    if (this.#done) return;
    const current = this.#current;
    this.#current = undefined;
    await current?.file.close().catch(() => {});
    for (const path of [...this.#partials, ...this.#renamed]) {
      await fs.remove(path).catch(() => {});
    }
    const journal = this.#journal;
    this.#journal = undefined;
    await journal?.discard();
  }
}

/**
 * The shards of other sets of the output at `path` in its folder:
 * `BASE-0000i-of-0000M.safetensors` with another M than `count`.
 */
function otherShardSets(path: string, count: number): Promise<string[]> {
  const { dir, base } = splitPath(path);
  return otherSetFiles(dir, (name) => {
    const m = /^(.*)-\d{5,}-of-(\d{5,})\.safetensors$/.exec(name);
    return m !== null && m[1] === base && Number(m[2]) !== count;
  });
}
