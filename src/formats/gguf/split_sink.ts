/**
 * A GGUF export split into a set as llama.cpp's `gguf-split --split-max-size`
 * writes it: `OUT-0000i-of-0000N.gguf`, the model's metadata in the first
 * shard, `split.no` / `split.count` / `split.tensors.count` in every shard,
 * each tensor whole in one shard, data padded to the alignment. llama.cpp
 * loads the set from its first file.
 *
 * The header chunk fixes the whole plan — which tensors go to which shard,
 * every shard's header bytes — before the first byte is written, so the
 * output stays one pass. Shards are written to `SHARD.partial` and renamed
 * into place together once all are complete, all or none
 * (`renameSetIntoPlace`). The journal (`OUT.partial.journal`) is the set's
 * lock for the whole run (`io/set_journal.ts`): a second run on the same set
 * is refused before it touches anything. It records the identity of the
 * source (`sourceKey`) and each completed shard with its SHA-256 (hashed as
 * it is written, not read back); a resumed run with the same plan and source
 * hashes each recorded shard again and keeps those that match, skipping their
 * tensors. A shard changed since (same size or not) is written again, and
 * said so in one line (`onWarning`): a set silently mixing it in would load
 * and compute wrong. A resume from a changed source is refused, as the APR
 * sink refuses it. Hashing costs a resume about a second per GB kept
 * (node:crypto: 0.6-0.9 GB/s read from disk on a busy 2-core machine,
 * ~1.5 GB/s idle) before it writes, which is acceptable once per resume.
 * The APR sink checks what it keeps too (CRCs, `apr/_commit_verifier.ts`).
 *
 * @module
 */

import { createSha256, type Sha256 } from "../../runtime/sha256.ts";
import { hashFile } from "../../io/hash_file.ts";
import { UsageError } from "../../errors.ts";
import { assertOutputFree } from "../../io/fs_paths.ts";
import { discardFile, isBadInput, renameSetIntoPlace, sealHeld } from "../../io/partial_file.ts";
import { otherSetFiles, refuseOtherSet, removeOtherSet, SetJournal } from "../../io/set_journal.ts";
import { basename, dirname } from "../../runtime/path.ts";
import { storageFailure } from "../../io/storage_errors.ts";
import type { ModelChunk, ModelHeader, TensorEntry } from "../../tensor.ts";
import { GgufValueType } from "./header.ts";
import type { GgufSinkOptions } from "./sink.ts";
import { checkExportOptions, createHeadedFile, ExportOrder, planGgufExport } from "./_export.ts";
import { ggufSplitPath, parseGgufSplitPath } from "./split.ts";
import { GGUF_MAX_SPLITS, GGUF_SPLIT_KEYS } from "./split.ts";
import { encodeGgufHeader, type GgufKvInput, type GgufLayout } from "./writer.ts";
import { fs, type RuntimeFile } from "../../runtime/fs.ts";

const JOURNAL_VERSION = "aprkit-gguf-split-journal-1";

/** Options of {@linkcode SplitGgufSink.create}. */
export interface SplitGgufSinkOptions extends GgufSinkOptions {
  /**
   * Most bytes of tensor data per shard, each tensor counted padded to the
   * alignment (`gguf-split --split-max-size`); a larger tensor gets a shard
   * of its own. Either this or `shardOf`.
   */
  maxShardSize?: number;
  /**
   * The shard (0-based) each tensor goes to, by name, instead of a size
   * limit: a source set's own split (llama-quantize's `--keep-split`). The
   * tensors must arrive shard after shard, every shard holding some.
   */
  shardOf?: (name: string) => number | undefined;
  /** Keep the shards a previous run with the same plan completed. @default {false} */
  resume?: boolean;
  /** Options that shaped the input, folded into the plan a resume must match. @default {""} */
  planKey?: string;
  /**
   * The identity of the source's content (`source_identity.ts`), journaled
   * so that a resume from changed source bytes is refused.
   * @default {undefined} (not checked)
   */
  sourceKey?: string;
  /** Told, in one line each, of a completed shard a resume writes again (it changed since). */
  onWarning?: (message: string) => void;
}

/**
 * Most shards aprkit writes in one set. `split.count` is a u16 (65,535), but
 * llama.cpp's loader keeps every shard of a set open while it loads, so a set
 * of more shards than the usual open-file limit (1,024 per process) does not
 * load; and a shard size that makes more is a mistyped size (`1` for `1GB`),
 * which would otherwise write hundreds of files a second before anyone notices.
 */
export const GGUF_MAX_WRITTEN_SPLITS = 1000;

/** Zeros fed to a shard's hash for the padding between its tensors (the file's bytes there). */
const ZEROS = new Uint8Array(64 * 1024);

/**
 * Which tensors each shard holds: `gguf-split`'s rule — a new shard starts
 * when the padded sizes of the current one would pass `maxShardSize` — except
 * that a first tensor larger than the limit gets its own shard instead of an
 * error.
 *
 * @example Usage
 * ```ts
 * import { planGgufSplit } from "./split_sink.ts";
 * console.assert(JSON.stringify(planGgufSplit([64, 64, 64], 128, 32)) === "[[0,2],[2,3]]");
 * ```
 *
 * @param byteLengths Each tensor's payload size, in file order.
 * @param maxShardSize Most padded tensor bytes per shard.
 * @param alignment The data alignment.
 * @returns `[start, end)` tensor ranges, one per shard.
 */
export function planGgufSplit(
  byteLengths: readonly number[],
  maxShardSize: number,
  alignment: number,
): [number, number][] {
  const shards: [number, number][] = [];
  let start = 0;
  let size = 0;
  byteLengths.forEach((n, i) => {
    const padded = Math.ceil(n / alignment) * alignment;
    if (i > start && size + padded > maxShardSize) {
      shards.push([start, i]);
      start = i;
      size = 0;
    }
    size += padded;
  });
  shards.push([start, byteLengths.length]);
  return shards;
}

/**
 * The smallest shard size that splits these tensors into at most
 * {@linkcode GGUF_MAX_WRITTEN_SPLITS} shards (tensors stay whole, so it is
 * searched for: fewer shards never need a smaller size).
 */
function smallestShardSize(byteLengths: readonly number[], alignment: number): number {
  let low = 1;
  let high = byteLengths.reduce((n, b) => n + Math.ceil(b / alignment) * alignment, 0) || 1;
  while (low < high) {
    const mid = Math.floor((low + high) / 2);
    if (planGgufSplit(byteLengths, mid, alignment).length <= GGUF_MAX_WRITTEN_SPLITS) high = mid;
    else low = mid + 1;
  }
  return low;
}

/**
 * The ranges of a split given tensor by tensor: consecutive runs of one
 * shard, shards in order from the first, none empty.
 */
function keptSplit(
  names: readonly string[],
  shardOf: (name: string) => number | undefined,
  path: string,
): [number, number][] {
  const ranges: [number, number][] = [];
  names.forEach((name, i) => {
    const shard = shardOf(name);
    const current = ranges.length - 1;
    if (shard === current) {
      ranges[current]![1] = i + 1;
      return;
    }
    if (shard !== current + 1) {
      throw new UsageError(
        `Cannot write "${path}" split as its source: tensor "${name}" ${
          shard === undefined ? "is in no source shard" : `comes from shard ${shard + 1}`
        } after shard ${current + 1}'s tensors`,
      );
    }
    ranges.push([i, i + 1]);
  });
  return ranges;
}

/** One planned shard. */
interface ShardPlan {
  readonly path: string;
  readonly partial: string;
  readonly first: number;
  readonly end: number;
  readonly layout: GgufLayout;
  /** The file's size: the data padded to the alignment, as gguf-split writes it. */
  readonly fileSize: number;
}

/** Write a model stream as a split GGUF set (see the module doc). */
export class SplitGgufSink extends WritableStream<ModelChunk> {
  /** The output as given (`OUT.gguf`); the shards are `OUT-0000i-of-0000N.gguf`. */
  readonly path: string;
  #writer: SplitWriter;

  private constructor(path: string, writer: SplitWriter) {
    super({
      write: (chunk) => writer.write(chunk),
      close: () => writer.finish(),
      abort: (reason) => writer.stop(reason),
    }, { highWaterMark: 1 });
    this.path = path;
    this.#writer = writer;
  }

  /** The shard paths, once the header has been planned (empty before). */
  get outputs(): readonly string[] {
    return this.#writer.shards.map((s) => s.path);
  }

  /** Tensors and payload bytes a resumed run kept from the previous one. */
  get resumed(): { shards: number; tensors: number; bytes: number } {
    return this.#writer.resumedTotals();
  }

  /**
   * Check the options; nothing is written before the header chunk.
   *
   * @param path The output (`OUT.gguf`).
   * @param options Shard size, overwrite, resume, names, file type.
   * @returns The sink.
   * @throws {RangeError} When the shard size is not a positive integer or the alignment not a power of two.
   */
  static create(path: string, options: SplitGgufSinkOptions): Promise<SplitGgufSink> {
    const checked = checkExportOptions(options);
    if (options.shardOf !== undefined) {
      return Promise.resolve(new SplitGgufSink(path, new SplitWriter(path, checked)));
    }
    if (
      options.maxShardSize === undefined || !Number.isSafeInteger(options.maxShardSize) ||
      options.maxShardSize <= 0
    ) {
      throw new RangeError(
        `Cannot write GGUF: shard size ${options.maxShardSize} is not a positive whole number of bytes`,
      );
    }
    return Promise.resolve(
      new SplitGgufSink(path, new SplitWriter(path, checked)),
    );
  }
}

class SplitWriter {
  readonly shards: ShardPlan[] = [];
  readonly resumed = new Set<number>();
  /** SHA-256 of each kept shard, as the journal recorded it and its file still hashes. */
  #kept = new Map<number, string>();
  #path: string;
  #options: SplitGgufSinkOptions & { alignment: number };
  #order: ExportOrder;
  #journalPath: string;
  /** The set's journal and lock, held from planning until the set is published or given up. */
  #journal: SetJournal | undefined;
  #plan = "";
  #current = -1;
  /** The partial file the tensor in hand goes to, for failure messages. */
  #writing = "";
  #file: RuntimeFile | undefined;
  /** The SHA-256 of the shard being written, fed its bytes in file order up to `#hashedTo`. */
  #hash: Sha256 | undefined;
  #hashedTo = 0;
  #failed = false;

  constructor(path: string, options: SplitGgufSinkOptions & { alignment: number }) {
    this.#path = path;
    this.#options = options;
    this.#order = new ExportOrder(path, options.onProgress);
    this.#journalPath = `${path}.partial.journal`;
  }

  resumedTotals(): { shards: number; tensors: number; bytes: number } {
    let tensors = 0;
    let bytes = 0;
    for (const i of this.resumed) {
      const s = this.shards[i]!;
      tensors += s.end - s.first;
      for (let t = s.first; t < s.end; t++) bytes += this.#order.header!.tensors[t]!.byteLength;
    }
    return { shards: this.resumed.size, tensors, bytes };
  }

  async write(chunk: ModelChunk): Promise<void> {
    try {
      if (chunk.type === "header") await this.#planAll(chunk.header);
      else {
        // A full disk or an I/O error names the shard, as the one-file sink does (exit 3).
        await this.#writeTensor(chunk.tensor).catch((error) => {
          throw storageFailure(error, this.#writing, "write");
        });
      }
    } catch (error) {
      await this.stop(error);
      throw error;
    }
  }

  async #planAll(header: ModelHeader): Promise<void> {
    this.#order.start(header);
    const { kv, specs } = planGgufExport(header, this.#options, this.#path);
    const alignment = this.#options.alignment;
    const shardOf = this.#options.shardOf;
    const ranges = shardOf !== undefined
      ? keptSplit(header.tensors.map((t) => t.name), shardOf, this.#path)
      : planGgufSplit(
        header.tensors.map((t) => t.byteLength),
        this.#options.maxShardSize!,
        alignment,
      );
    if (ranges.length > GGUF_MAX_WRITTEN_SPLITS) {
      // Before any file of the set is touched (a u16 split.count allows 65,535).
      throw new UsageError(
        `Cannot write "${this.#path}": ${ranges.length} shards of at most ${this.#options.maxShardSize} bytes; ` +
          `aprkit writes at most ${GGUF_MAX_WRITTEN_SPLITS} (llama.cpp keeps every shard open while it loads; ` +
          `split.count allows ${GGUF_MAX_SPLITS}): give a shard size of at least ${
            smallestShardSize(header.tensors.map((t) => t.byteLength), alignment)
          } bytes`,
      );
    }
    const prefix = this.#path.replace(/\.gguf$/i, "");
    const count = ranges.length;
    const hash = createSha256().update(JOURNAL_VERSION).update("\0")
      .update(this.#options.planKey ?? "");
    for (const [i, [first, end]] of ranges.entries()) {
      // gguf-split: every key of the model in the first shard, then the split
      // keys in the order it leaves them (split.count is set last, once known).
      const shardKv = new Map<string, GgufKvInput>(i === 0 ? kv : []);
      shardKv.set(GGUF_SPLIT_KEYS.no, { type: GgufValueType.UINT16, value: i });
      shardKv.set(GGUF_SPLIT_KEYS.tensorsCount, {
        type: GgufValueType.INT32,
        value: header.tensors.length,
      });
      shardKv.set(GGUF_SPLIT_KEYS.count, { type: GgufValueType.UINT16, value: count });
      const layout = encodeGgufHeader(shardKv, specs.slice(first, end), { alignment });
      const path = ggufSplitPath(prefix, i, count);
      this.shards.push({
        path,
        partial: `${path}.partial`,
        first,
        end,
        layout,
        fileSize: Math.ceil(layout.fileSize / alignment) * alignment,
      });
      hash.update("\0").update(layout.header);
    }
    this.#plan = hash.digest("hex");
    for (const s of this.shards) await assertOutputFree(s.path, this.#options.force);
    if (this.#options.force !== true) {
      refuseOtherSet(this.#path, await otherSetShards(prefix, count));
    }
    // The set's lock, before any file of it is touched (a second run is refused here).
    this.#journal = await SetJournal.begin(this.#journalPath, this.#path, {
      plan: this.#plan,
      source: this.#options.sourceKey,
      resume: this.#options.resume === true,
      keep: async (lines) => {
        await this.#keepShards(lines);
        return [...this.resumed].map((i) => shardLine(i, this.#kept.get(i)!));
      },
    });
    for (const i of this.resumed) {
      const s = this.shards[i]!;
      this.#order.bytesDone += header.tensors.slice(s.first, s.end)
        .reduce((n, t) => n + t.byteLength, 0);
    }
    this.#order.report(undefined);
  }

  /**
   * Shards the journal of a previous run with the same plan and source
   * (`SetJournal.begin` checked both) records complete, whose files still
   * have the recorded size and SHA-256;
   * any other shard recorded is said to be written again.
   */
  async #keepShards(lines: readonly string[]): Promise<void> {
    for (const line of lines) {
      let record: { shard?: unknown; sha256?: unknown };
      try {
        record = JSON.parse(line) as typeof record;
      } catch {
        continue; // A torn last line: that shard is redone.
      }
      const index = record.shard;
      const s = typeof index === "number" ? this.shards[index] : undefined;
      if (s === undefined || this.resumed.has(index as number)) continue;
      const changed = await this.#changedSince(s, record.sha256);
      if (changed === undefined) {
        this.resumed.add(index as number);
        this.#kept.set(index as number, record.sha256 as string);
      } else {
        this.#options.onWarning?.(
          `the completed shard "${s.partial}" ${changed}: writing it again`,
        );
      }
    }
  }

  /** How a recorded shard's file differs from what the journal says of it, or undefined. */
  async #changedSince(s: ShardPlan, sha256: unknown): Promise<string | undefined> {
    const info = await fs.lstat(s.partial).catch(() => undefined);
    if (info?.isFile !== true) return "is gone";
    if (info.size !== s.fileSize) return `has ${info.size} bytes, not ${s.fileSize}`;
    // A journal without digests (an older aprkit) proves nothing about the bytes.
    if (typeof sha256 !== "string") return "has no SHA-256 in the journal to check it against";
    const hash = createSha256();
    await hashFile(s.partial, s.fileSize, hash);
    return hash.digest("hex") === sha256
      ? undefined
      : "changed since the run that wrote it (its SHA-256 is not the one the journal recorded)";
  }

  async #writeTensor(entry: TensorEntry): Promise<void> {
    const expected = this.#order.expect(entry);
    const next = this.#order.next;
    const index = this.shards.findIndex((s) => next >= s.first && next < s.end);
    const shard = this.shards[index]!;
    if (this.resumed.has(index)) {
      // Written by the run being resumed: its bytes are already in place.
      this.#order.done(expected.name);
      return;
    }
    this.#writing = shard.partial;
    if (index !== this.#current) {
      // Current before the file exists: a failure removes a half-made shard too.
      this.#current = index;
      this.#file = await createHeadedFile(shard.partial, shard.layout.header, shard.fileSize);
      this.#hash = createSha256().update(shard.layout.header);
      this.#hashedTo = shard.layout.header.length;
    }
    const place = shard.layout.tensors[next - shard.first]!;
    this.#hashZerosTo(place.offset);
    const hash = this.#hash!;
    await this.#order.copyTensor(this.#file!, place, entry, shard.path, (c) => hash.update(c));
    this.#hashedTo = place.offset + place.byteLength;
    if (next + 1 === shard.end) await this.#completeShard(index);
    this.#order.done(expected.name);
  }

  /** Feed the hash the zeros the file holds from `#hashedTo` to `offset` (alignment padding). */
  #hashZerosTo(offset: number): void {
    while (this.#hashedTo < offset) {
      const n = Math.min(ZEROS.length, offset - this.#hashedTo);
      this.#hash!.update(ZEROS.subarray(0, n));
      this.#hashedTo += n;
    }
  }

  async #completeShard(index: number): Promise<void> {
    const file = this.#file!;
    await file.sync();
    file.close();
    this.#file = undefined;
    this.#current = -1;
    await sealHeld(this.shards[index]!.partial);
    this.#hashZerosTo(this.shards[index]!.fileSize);
    const sha256 = this.#hash!.digest("hex");
    this.#hash = undefined;
    await this.#journal!.append(shardLine(index, sha256));
  }

  async finish(): Promise<void> {
    try {
      this.#order.assertComplete();
      const journal = this.#journal;
      if (journal === undefined) {
        throw new TypeError(`Cannot write "${this.#path}": the stream ended before a header chunk`);
      }
      // Still this run's set (nobody removed its lock), then every shard in place, or none.
      await journal.assertStillHeld(this.#path);
      await renameSetIntoPlace(this.shards, this.#options.force);
      this.#journal = undefined;
      await journal.discard();
      // With force, an earlier set of another shard count goes: two sets would make neither load.
      const prefix = this.#path.replace(/\.gguf$/i, "");
      await removeOtherSet(dirname(prefix), await otherSetShards(prefix, this.shards.length));
    } catch (error) {
      await this.stop(error);
      throw error;
    }
  }

  /**
   * Stop after a failure or an abort: close the open shard and remove its
   * partial file. Completed shards (`SHARD.partial`) and the journal stay
   * for a `resume`; no final name is ever given to an incomplete set
   * (DESIGN.md §2.3). With nothing completed, nothing is kept; when the
   * input itself is bad (`isBadInput`, as the APR sink decides), nothing is
   * kept either: a resume would reuse shards written from it. A run that
   * never held the set's lock touches none of its files.
   *
   * @param reason Why the set stops.
   */
  async stop(reason?: unknown): Promise<void> {
    if (this.#failed) return;
    this.#failed = true;
    try {
      this.#file?.close();
    } catch {
      // Already closed.
    }
    this.#file = undefined;
    if (this.#current >= 0) await discardFile(this.shards[this.#current]!.partial);
    const journal = this.#journal;
    this.#journal = undefined;
    if (journal === undefined) return; // never this run's set
    if (isBadInput(reason)) {
      for (const s of this.shards) await discardFile(s.partial);
      await journal.discard();
      return;
    }
    const completed = await fs.readTextFile(journal.path).then(
      (text) => text.includes('"shard"'),
      () => false,
    );
    if (completed) journal.close();
    else await journal.discard();
  }
}

/**
 * The files of other split sets of `prefix` in its folder: names
 * `PREFIX-0000i-of-0000N.gguf` with another N than `count`.
 */
function otherSetShards(prefix: string, count: number): Promise<string[]> {
  const stem = basename(prefix);
  return otherSetFiles(dirname(prefix), (name) => {
    const parsed = parseGgufSplitPath(name);
    return parsed !== undefined && parsed.prefix === stem && parsed.count !== count;
  });
}

/** The journal's line for a completed shard. */
function shardLine(index: number, sha256: string): string {
  return `${JSON.stringify({ shard: index, sha256 })}\n`;
}
