/**
 * The APR v2 sink (DESIGN.md §2.3): a `WritableStream<ModelChunk>` that lays
 * out the whole file from the header chunk, streams each payload to its final
 * offset chunk by chunk (memory independent of tensor size), builds the
 * footer CRC from per-tensor CRCs, and writes `OUT.partial` + a resume
 * journal, renamed to `OUT` only when complete.
 *
 * Not browser compatible: it writes files (use `encodeApr` in a browser).
 *
 * @module
 */

import { createHash } from "node:crypto";
import { HubAnswerError, ModelFormatError, UsageError } from "../../errors.ts";
import { DEFAULT_CHUNK_SIZE, releaseChunk } from "../../io/byte_source.ts";
import { FileSink } from "../../io/file_sink.ts";
import type { ModelChunk, ModelHeader, ProgressCallback, TensorEntry } from "../../tensor.ts";
import { crc32, crc32Combine } from "./crc32.ts";
import {
  APR_FOOTER_SIZE,
  type AprDataOrder,
  type AprLayout,
  type AprPlannedTensor,
  planAprLayout,
} from "./layout.ts";
import { assertOutputFree, pathExists, removeIfExists } from "../../io/fs_paths.ts";
import { assertRegularFile, renameIntoPlace, writeFreshFile } from "../../io/partial_file.ts";

/** Commit (sync + journal) at least every this many written bytes: bounds the work a crash can lose. */
export const APR_SINK_COMMIT_BYTES = 64 * 1024 * 1024;

/** Commit at least this often (ms), so slow inputs still make resumable progress. */
export const APR_SINK_COMMIT_INTERVAL_MS = 2000;

const JOURNAL_VERSION = "aprkit-apr-journal-1";
const ZEROS = new Uint8Array(64);

/** Options of {@linkcode AprSink.create}. */
export interface AprSinkOptions {
  /** Overwrite an existing output file. @default {false} */
  force?: boolean;
  /**
   * Continue from `OUT.partial` and its journal when they exist and were
   * planned from the same header and `planKey`; start fresh when they do not
   * exist. @default {false}
   */
  resume?: boolean;
  /**
   * Options that shaped the input (quantization, revision…), folded into the
   * plan hash so a resume with other options is refused. @default {""}
   */
  planKey?: string;
  /** Called as bytes are written (phase `"write"`); resumed bytes count as done. */
  onProgress?: ProgressCallback;
  /** Data order in the file. @default {"index"} */
  dataOrder?: AprDataOrder;
  /** Header flags. @default {APR_FLAGS.LAYOUT_ROW_MAJOR} */
  flags?: number;
  /** Commit after this many bytes. @default {APR_SINK_COMMIT_BYTES} */
  commitBytes?: number;
  /** Commit after this many milliseconds. @default {APR_SINK_COMMIT_INTERVAL_MS} */
  commitIntervalMs?: number;
}

/** What an {@linkcode AprSink} wrote, available after it closed. */
export interface AprSinkResult {
  /** The output path. */
  readonly path: string;
  /** File size in bytes. */
  readonly bytes: number;
  /** Number of tensors. */
  readonly tensors: number;
  /** The footer CRC32. */
  readonly footerCrc: number;
  /** Tensors taken from a previous run's partial output instead of being written. */
  readonly resumedTensors: number;
}

interface Commit {
  readonly index: number;
  readonly offset: number;
  readonly length: number;
  readonly crc: number;
}

function isBadInput(reason: unknown): boolean {
  // A HubAnswerError is content that failed its checksum: nothing written
  // from it may be resumed from.
  return reason instanceof ModelFormatError || reason instanceof TypeError ||
    reason instanceof RangeError || reason instanceof HubAnswerError;
}

/** CRC of a tensor's padded segment, from the CRC of its payload. */
function segmentCrc(t: AprPlannedTensor, payloadCrc: number): number {
  return crc32(ZEROS.subarray(0, t.paddedSize - t.info.byteLength), payloadCrc);
}

class SinkState {
  readonly path: string;
  readonly partialPath: string;
  readonly journalPath: string;
  readonly options: AprSinkOptions;
  layout: AprLayout | undefined;
  byName = new Map<string, AprPlannedTensor>();
  file: FileSink | undefined;
  /** Whether this run created or took over the partial output (and may remove it). */
  owned = false;
  received = new Set<number>();
  /** Payload CRC of each tensor whose data is synced and journaled. */
  committed = new Map<number, number>();
  /** Written but not yet synced and journaled. */
  pending: Commit[] = [];
  pendingBytes = 0;
  lastCommit = Date.now();
  /** A commit syncing beside the writes; at most one at a time. */
  inflight: Promise<void> | undefined;
  /** Why a background commit failed; raised at the next write or close. */
  inflightError: unknown;
  bytesDone = 0;
  itemsDone = 0;
  resumedTensors = 0;
  resumedBytes = 0;
  finished = false;
  result: AprSinkResult | undefined;

  constructor(path: string, options: AprSinkOptions) {
    this.path = path;
    this.partialPath = `${path}.partial`;
    this.journalPath = `${path}.partial.journal`;
    this.options = options;
  }

  progress(current?: string): void {
    const on = this.options.onProgress;
    if (on === undefined || this.layout === undefined) return;
    const event = {
      phase: "write",
      bytesDone: this.bytesDone,
      bytesTotal: this.layout.payloadBytes,
      itemsDone: this.itemsDone,
      itemsTotal: this.layout.tensors.length,
      ...(this.resumedTensors > 0
        ? { resumedBytes: this.resumedBytes, resumedItems: this.resumedTensors }
        : {}),
    };
    on(current === undefined ? event : { ...event, current });
  }

  async write(chunk: ModelChunk): Promise<void> {
    try {
      if (chunk.type === "header") await this.#header(chunk.header);
      else if (chunk.type === "tensor") await this.#tensor(chunk.tensor);
      else {
        throw new TypeError(
          `Cannot write "${this.path}": unknown chunk type "${(chunk as { type: string }).type}"`,
        );
      }
    } catch (error) {
      await this.fail(error);
      throw error;
    }
  }

  async #header(header: ModelHeader): Promise<void> {
    if (this.layout !== undefined) {
      throw new TypeError(`Cannot write "${this.path}": a second header chunk arrived`);
    }
    const layout = planAprLayout(header.metadata, header.tensors, {
      ...(this.options.dataOrder === undefined ? {} : { dataOrder: this.options.dataOrder }),
      ...(this.options.flags === undefined ? {} : { flags: this.options.flags }),
    });
    await assertOutputFree(this.path, this.options.force);
    const plan = createHash("sha256").update(JOURNAL_VERSION).update("\0")
      .update(this.options.planKey ?? "").update("\0").update(layout.prefix).digest("hex");
    const firstLine = JSON.stringify({
      journal: JOURNAL_VERSION,
      plan,
      fileSize: layout.fileSize,
      tensors: layout.tensors.length,
    });
    const resumable = this.options.resume === true && await pathExists(this.partialPath) &&
      await pathExists(this.journalPath);
    if (resumable) {
      await assertRegularFile(this.partialPath);
      await assertRegularFile(this.journalPath);
      const lines = (await Deno.readTextFile(this.journalPath)).split("\n");
      let recorded: unknown;
      try {
        recorded = JSON.parse(lines[0] ?? "");
      } catch {
        recorded = undefined;
      }
      if ((recorded as { plan?: unknown } | undefined)?.plan !== plan) {
        throw new UsageError(
          `Cannot resume "${this.path}": the partial output "${this.partialPath}" was planned from a different input or options; run without resume: true to start over`,
        );
      }
      this.layout = layout;
      this.#index(layout);
      this.file = await FileSink.open(this.partialPath, { create: false });
      this.owned = true;
      await this.#verifyCommitted(lines.slice(1));
      await this.file.writeAt(0, layout.prefix);
      await this.file.truncate(layout.fileSize);
      // Rewrite the journal with exactly the verified commits.
      const kept = [...this.committed].map(([index, crc]) => {
        const t = layout.tensors[index]!;
        return JSON.stringify({ index, offset: t.fileOffset, length: t.info.byteLength, crc });
      });
      await writeFreshFile(this.journalPath, [firstLine, ...kept].join("\n") + "\n");
    } else {
      this.layout = layout;
      this.#index(layout);
      await removeIfExists(this.journalPath);
      this.file = await FileSink.open(this.partialPath, { truncate: true });
      this.owned = true;
      await this.file.writeAt(0, layout.prefix);
      // Sparse preallocation: every payload then lands at its final offset, in any order.
      await this.file.truncate(layout.fileSize);
      await writeFreshFile(this.journalPath, firstLine + "\n");
    }
    this.lastCommit = Date.now();
    this.progress();
  }

  #index(layout: AprLayout): void {
    for (const t of layout.tensors) this.byName.set(t.info.name, t);
  }

  /** Keep the journaled tensors whose bytes in the partial still match (length + CRC, zero padding). */
  async #verifyCommitted(lines: string[]): Promise<void> {
    const layout = this.layout!;
    const file = this.file!;
    const fileSize = await file.size();
    for (const line of lines) {
      if (line.trim() === "") continue;
      let c: Commit;
      try {
        c = JSON.parse(line) as Commit;
      } catch {
        continue; // a torn last line: that tensor is simply written again
      }
      const t = layout.tensors[c.index];
      if (
        t === undefined || this.committed.has(c.index) || c.offset !== t.fileOffset ||
        c.length !== t.info.byteLength || t.fileOffset + t.paddedSize > fileSize
      ) continue;
      let crc = 0;
      let zeroPad = true;
      for (let at = 0; at < t.paddedSize; at += DEFAULT_CHUNK_SIZE) {
        const n = Math.min(DEFAULT_CHUNK_SIZE, t.paddedSize - at);
        const bytes = await file.readAt(t.fileOffset + at, n);
        const payload = Math.max(0, Math.min(n, t.info.byteLength - at));
        crc = crc32(bytes.subarray(0, payload), crc);
        if (bytes.subarray(payload).some((b) => b !== 0)) zeroPad = false;
      }
      if (crc !== c.crc || !zeroPad) continue;
      this.committed.set(c.index, crc);
      this.bytesDone += t.info.byteLength;
      this.itemsDone++;
    }
    this.resumedTensors = this.committed.size;
    this.resumedBytes = this.bytesDone;
  }

  async #tensor(entry: TensorEntry): Promise<void> {
    const layout = this.layout;
    if (layout === undefined) {
      throw new TypeError(`Cannot write "${this.path}": a tensor chunk arrived before the header`);
    }
    const { name } = entry.info;
    const t = this.byName.get(name);
    if (t === undefined) {
      throw new TypeError(`Cannot write "${this.path}": tensor "${name}" is not in the header`);
    }
    if (this.received.has(t.inputIndex)) {
      throw new TypeError(`Cannot write "${this.path}": tensor "${name}" arrived twice`);
    }
    const a = entry.info;
    const b = t.info;
    if (
      a.dtype !== b.dtype || a.byteLength !== b.byteLength || a.shape.length !== b.shape.length ||
      a.shape.some((d, i) => d !== b.shape[i])
    ) {
      throw new TypeError(
        `Cannot write "${this.path}": tensor "${name}" arrived as ${a.dtype} [${a.shape}] (${a.byteLength} bytes), the header said ${b.dtype} [${b.shape}] (${b.byteLength} bytes)`,
      );
    }
    this.received.add(t.inputIndex);
    // Resumed: already verified in the partial. Do not open() it, so upstream does no work.
    if (this.committed.has(t.inputIndex)) return;

    const file = this.file!;
    const reader = entry.open().getReader();
    let written = 0;
    let crc = 0;
    try {
      for (;;) {
        const { done, value } = await reader.read();
        if (done) break;
        if (written + value.length > b.byteLength) {
          throw new RangeError(
            `Cannot write tensor "${name}" to "${this.path}": its stream yields more than the ${b.byteLength} bytes its header says`,
          );
        }
        await file.writeAt(t.fileOffset + written, value);
        crc = crc32(value, crc);
        written += value.length;
        this.bytesDone += value.length;
        // Written and summed: free it now if its producer allows (bounded memory,
        // DESIGN.md §1.2), rather than when the GC gets to it.
        releaseChunk(value);
        this.progress(name);
      }
    } catch (error) {
      await reader.cancel(error).catch(() => {});
      throw error;
    } finally {
      reader.releaseLock();
    }
    if (written !== b.byteLength) {
      throw new RangeError(
        `Cannot write tensor "${name}" to "${this.path}": its stream yielded ${written} bytes, its header says ${b.byteLength}`,
      );
    }
    const pad = t.paddedSize - b.byteLength;
    if (pad > 0) await file.writeAt(t.fileOffset + b.byteLength, ZEROS.subarray(0, pad));
    this.pending.push({ index: t.inputIndex, offset: t.fileOffset, length: b.byteLength, crc });
    this.pendingBytes += t.paddedSize;
    this.itemsDone++;
    this.progress(name);
    if (this.inflightError !== undefined) throw this.inflightError;
    const commitBytes = this.options.commitBytes ?? APR_SINK_COMMIT_BYTES;
    const interval = this.options.commitIntervalMs ?? APR_SINK_COMMIT_INTERVAL_MS;
    if (
      this.inflight === undefined &&
      (this.pendingBytes >= commitBytes || Date.now() - this.lastCommit >= interval)
    ) {
      // Sync beside the writes: stalling the stream on every fsync cost ~40%
      // of a passthrough import's time (docs/BENCHMARKS.md).
      this.inflight = this.#commitBatch(this.#takePending(), true)
        .catch((error) => {
          this.inflightError = error;
        })
        .finally(() => {
          this.inflight = undefined;
        });
    }
  }

  #takePending(): Commit[] {
    const batch = this.pending;
    this.pending = [];
    this.pendingBytes = 0;
    this.lastCommit = Date.now();
    return batch;
  }

  /**
   * Sync written data, then journal it: a journaled tensor is always on disk.
   * Every tensor of `batch` was written in full before this starts.
   */
  async #commitBatch(batch: Commit[], beside: boolean): Promise<void> {
    if (batch.length === 0) return;
    await (beside ? this.file!.syncDataBeside() : this.file!.syncData());
    const lines = batch.map((c) => JSON.stringify(c) + "\n").join("");
    await Deno.writeTextFile(this.journalPath, lines, { append: true });
    for (const c of batch) this.committed.set(c.index, c.crc);
  }

  /** Commit everything written so far, waiting for a commit in flight first. */
  async #commit(): Promise<void> {
    await this.inflight;
    if (this.inflightError !== undefined) throw this.inflightError;
    await this.#commitBatch(this.#takePending(), false);
  }

  async close(): Promise<void> {
    try {
      const layout = this.layout;
      if (layout === undefined) {
        throw new TypeError(`Cannot write "${this.path}": the stream ended before a header chunk`);
      }
      if (this.received.size !== layout.tensors.length) {
        const missing = layout.tensors.find((t) => !this.received.has(t.inputIndex))!;
        // Not bad input by itself (upstream may have been cut short): keep the partial for --resume.
        throw new Error(
          `Cannot write "${this.path}": the stream ended after ${this.received.size} of ${layout.tensors.length} tensors (missing "${missing.info.name}")`,
        );
      }
      await this.#commit();
      let footer = crc32(layout.prefix);
      for (const t of layout.fileOrder) {
        footer = crc32Combine(
          footer,
          segmentCrc(t, this.committed.get(t.inputIndex)!),
          t.paddedSize,
        );
      }
      const bytes = new Uint8Array(APR_FOOTER_SIZE);
      new DataView(bytes.buffer).setUint32(0, footer, true);
      const file = this.file!;
      await file.writeAt(layout.fileSize - APR_FOOTER_SIZE, bytes);
      await file.syncData();
      await file.close();
      await renameIntoPlace(this.partialPath, this.path, this.options.force);
      this.finished = true;
      await removeIfExists(this.journalPath);
      this.result = {
        path: this.path,
        bytes: layout.fileSize,
        tensors: layout.tensors.length,
        footerCrc: footer,
        resumedTensors: this.resumedTensors,
      };
    } catch (error) {
      await this.fail(error);
      throw error;
    }
  }

  async abort(reason: unknown): Promise<void> {
    await this.fail(reason);
  }

  /**
   * Stop after a failure: keep what a resume can use (commit the tensors
   * written in full), or remove partial and journal when resume is
   * impossible (nothing committed, or the input itself is bad).
   */
  async fail(reason: unknown): Promise<void> {
    if (!this.owned || this.finished) return;
    this.owned = false;
    // Let a commit in flight finish first, so its journal append cannot
    // recreate a journal removed below.
    await this.inflight;
    const remove = isBadInput(reason);
    if (!remove) {
      try {
        await this.#commit();
      } catch {
        // Nothing more can be saved; the journal still lists earlier commits.
      }
    }
    await this.file?.close().catch(() => {});
    if (remove || this.committed.size === 0) {
      await removeIfExists(this.partialPath).catch(() => {});
      await removeIfExists(this.journalPath).catch(() => {});
    }
  }
}

/**
 * A `WritableStream<ModelChunk>` that writes one APR v2 file: pipe a model
 * stream (header chunk, then tensor chunks) into it. Tensor chunks may come
 * in any order; each payload is written once, at its final offset.
 *
 * @example Usage
 * ```ts ignore
 * import { AprSink } from "./sink.ts";
 * const sink = await AprSink.create("model.apr", { force: true });
 * await model.chunks().pipeTo(sink);
 * console.log(sink.result?.footerCrc);
 * ```
 */
export class AprSink extends WritableStream<ModelChunk> {
  /** The output path. */
  readonly path: string;
  #state: SinkState;

  /**
   * Prefer {@linkcode AprSink.create}, which checks the output path before
   * any upstream work starts.
   *
   * @param path Output path.
   * @param options Overwrite, resume, progress…
   * @throws {TypeError} When `path` is empty.
   * @throws {RangeError} When `commitBytes` or `commitIntervalMs` is negative or not a number.
   */
  constructor(path: string, options: AprSinkOptions = {}) {
    const state = new SinkState(path, checkOptions(path, options));
    super({
      write: (chunk) => state.write(chunk),
      close: () => state.close(),
      abort: (reason) => state.abort(reason),
    }, { highWaterMark: 1 });
    this.path = path;
    this.#state = state;
  }

  /**
   * Create a sink writing `path` (through `path + ".partial"`).
   *
   * @param path Output path.
   * @param options Overwrite, resume, progress…
   * @returns The sink.
   * @throws {UsageError} When `path` exists and `force` is not set.
   * @throws {TypeError|RangeError} On invalid options.
   */
  static async create(path: string, options: AprSinkOptions = {}): Promise<AprSink> {
    checkOptions(path, options);
    await assertOutputFree(path, options.force);
    return new AprSink(path, options);
  }

  /** What was written, once the stream closed successfully; `undefined` before. */
  get result(): AprSinkResult | undefined {
    return this.#state.result;
  }
}

function checkOptions(path: string, options: AprSinkOptions): AprSinkOptions {
  if (typeof path !== "string" || path === "") {
    throw new TypeError("Cannot create APR sink: the output path is empty");
  }
  for (const key of ["commitBytes", "commitIntervalMs"] as const) {
    const v = options[key];
    if (v !== undefined && (!Number.isFinite(v) || v < 0)) {
      throw new RangeError(`Cannot create APR sink: ${key} ${v} is not a non-negative number`);
    }
  }
  return options;
}
