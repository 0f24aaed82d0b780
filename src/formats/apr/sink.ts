/**
 * The APR v2 sink (DESIGN.md §2.3): a `WritableStream<ModelChunk>` that lays
 * out the whole file from the header chunk, streams each payload to its final
 * offset chunk by chunk (memory independent of tensor size), builds the
 * footer CRC from per-tensor CRCs, and writes `OUT.partial` + a resume
 * journal (`_journal.ts`), renamed to `OUT` only when complete. Commits
 * (fdatasync, then a journal line) land every 64 MiB or 2 s, inside a tensor
 * too at its producer's restart points; a resume continues from there and
 * checks the committed bytes beside its writes (`_commit_verifier.ts`).
 *
 * Not browser compatible: it writes files (use `encodeApr` in a browser).
 *
 * @module
 */

import { createSha256 } from "../../runtime/sha256.ts";
import { UsageError } from "../../errors.ts";
import { releaseChunk } from "../../io/byte_source.ts";
import { FileSink } from "../../io/file_sink.ts";
import {
  type ModelChunk,
  type ModelHeader,
  type ProgressCallback,
  restartOf,
  type TensorEntry,
} from "../../tensor.ts";
import { crc32, crc32Combine } from "./crc32.ts";
import { abortableStream } from "../../io/abortable_reads.ts";
import {
  APR_FOOTER_SIZE,
  type AprDataOrder,
  type AprLayout,
  type AprPlannedTensor,
  planAprLayout,
} from "./layout.ts";
import { assertOutputFree, pathExists, removeIfExists } from "../../io/fs_paths.ts";
import {
  assertRegularFile,
  assertStillHeld,
  isBadInput,
  renameIntoPlace,
  sealHeld,
  writeFreshFile,
} from "../../io/partial_file.ts";
import {
  commitLine,
  JOURNAL_VERSION,
  type JournalCommit,
  MAX_JOURNAL_BYTES,
  parseJournal,
  planLine,
} from "./_journal.ts";
import { CommitVerifier } from "./_commit_verifier.ts";
import { fs } from "../../runtime/fs.ts";

/** Commit (sync + journal) at least every this many written bytes: bounds the work a crash can lose. */
export const APR_SINK_COMMIT_BYTES = 64 * 1024 * 1024;

/** Commit at least this often (ms), so slow inputs still make resumable progress. */
export const APR_SINK_COMMIT_INTERVAL_MS = 2000;

const ZEROS = new Uint8Array(64);

/**
 * Commit at least every this many whole tensors too: zero-size tensors add
 * no bytes, and 261,000 of them held as pending journal records until the
 * close (issue 34 §1, "Memory") grew with the tensor count.
 */
const COMMIT_TENSORS = 4096;

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
  /**
   * The identity of the source's content (see `source_identity.ts`),
   * journaled so a resume from changed source bytes is refused.
   * @default {undefined} (not checked)
   */
  sourceKey?: string;
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
  /**
   * The signal that stops the pipe writing into the sink (`pipeTo`'s): a
   * stopped pipe waits for the write in flight, so the sink cancels the
   * tensor read it is waiting on when this aborts.
   */
  signal?: AbortSignal | undefined;
  /**
   * Rename the complete partial file into place when the stream closes.
   * `false` for a member of a set (`sharded_sink.ts`): the complete file
   * stays `OUT.partial` with its journal, sealed, for the set to publish
   * with the others, all or none (a resume finds it whole). @default {true}
   */
  publish?: boolean;
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
  /** Payload bytes taken from a previous run's partial output (whole tensors and parts). */
  readonly resumedBytes: number;
}

/** CRC of a tensor's padded segment, from the CRC of its payload. */
function segmentCrc(t: AprPlannedTensor, payloadCrc: number): number {
  return crc32(ZEROS.subarray(0, t.paddedSize - t.info.byteLength), payloadCrc);
}

/** A tensor being written: where it is, for a commit inside it. */
interface Progress {
  readonly t: AprPlannedTensor;
  /** Payload bytes written (from 0). */
  written: number;
  /** Latest restart point reached and the payload CRC up to it. */
  restart: JournalCommit | undefined;
}

class SinkState {
  readonly path: string;
  readonly partialPath: string;
  readonly journalPath: string;
  readonly options: AprSinkOptions;
  layout: AprLayout | undefined;
  /** Built on the first tensor that arrives out of input order (`#planned`). */
  byName: Map<string, AprPlannedTensor> | undefined;
  /** The input index the next tensor has when tensors arrive in input order. */
  nextIndex = 0;
  file: FileSink | undefined;
  /** Whether this run created or took over the partial output (and may remove it). */
  owned = false;
  /** The stream's abort signal (set when the stream starts). */
  abortSignal: AbortSignal | undefined;
  /**
   * Per tensor (input index), 1 once it arrived; typed arrays, not a Set and
   * a Map: a few bytes a tensor however many there are.
   */
  received = new Uint8Array(0);
  receivedCount = 0;
  /** Payload CRC of each tensor written in full (this run, or verified from the last). */
  committed = new Uint32Array(0);
  /** A previous run's journal claims, checked by `verifier` beside the writes. */
  claims = new Map<number, JournalCommit>();
  verifier: CommitVerifier | undefined;
  /** Tensors skipped on a whole-tensor claim still being verified: written at close if it fails. */
  tentative = new Map<number, TensorEntry>();
  /** Whether the journal holds any commit (else a failure removes the partial). */
  journaled = false;
  /** Whole tensors written but not yet synced and journaled. */
  pending: JournalCommit[] = [];
  /** The tensor being written. */
  current: Progress | undefined;
  uncommitted = 0;
  lastCommit = Date.now();
  /** A commit syncing beside the writes; at most one at a time. */
  inflight: Promise<void> | undefined;
  /** Why a background commit failed; raised at the next write or close. */
  inflightError: unknown;
  bytesDone = 0;
  itemsDone = 0;
  /** Payload bytes of verified claims used as they were. */
  resumedBytes = 0;
  /** Of bytesDone and itemsDone, what the journal's claims account for (taken back if one fails). */
  claimedBytes = 0;
  claimedItems = 0;
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
      ...(this.claimedItems > 0 || this.claimedBytes > 0
        ? { resumedBytes: this.claimedBytes, resumedItems: this.claimedItems }
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
    const plan = createSha256().update(JOURNAL_VERSION).update("\0")
      .update(this.options.planKey ?? "").update("\0").update(layout.prefix).digest("hex");
    const resumable = this.options.resume === true && await pathExists(this.partialPath) &&
      await pathExists(this.journalPath);
    this.layout = layout;
    this.received = new Uint8Array(layout.tensors.length);
    this.committed = new Uint32Array(layout.tensors.length);
    if (resumable) {
      await assertRegularFile(this.partialPath);
      await assertRegularFile(this.journalPath);
      this.claims = await this.#readJournal(plan, layout);
      this.file = await FileSink.open(this.partialPath, { create: false });
      this.owned = true;
      // Checked beside the writes (a claim is only trusted once verified).
      this.verifier = new CommitVerifier(this.partialPath, this.claims, layout.tensors);
      this.verifier.start();
      await this.file.writeAt(0, layout.prefix);
      await this.file.truncate(layout.fileSize);
      // Compact: the plan and the latest claim of each tensor, still to verify
      // (the next resume verifies them again if this run stops first).
      const kept = [...this.claims.values()].map(commitLine).join("");
      await writeFreshFile(
        this.journalPath,
        planLine(plan, layout, this.options.sourceKey) + "\n" + kept,
      );
      this.journaled = this.claims.size > 0;
      // Progress starts where the last run stopped (taken back if a claim fails).
      for (const c of this.claims.values()) {
        this.bytesDone += c.reached;
        this.claimedBytes += c.reached;
        if (c.reached === c.length) {
          this.itemsDone++;
          this.claimedItems++;
        }
      }
    } else {
      // The partial first: its lock refuses a second writer before the
      // first one's journal is touched.
      this.file = await FileSink.open(this.partialPath, { truncate: true });
      this.owned = true;
      await removeIfExists(this.journalPath);
      await this.file.writeAt(0, layout.prefix);
      // Sparse preallocation: every payload then lands at its final offset, in any order.
      await this.file.truncate(layout.fileSize);
      await writeFreshFile(this.journalPath, planLine(plan, layout, this.options.sourceKey) + "\n");
    }
    this.lastCommit = Date.now();
    this.progress();
  }

  async #readJournal(plan: string, layout: AprLayout): Promise<Map<number, JournalCommit>> {
    // Limits before allocating: the journal is read back whole.
    const size = (await fs.lstat(this.journalPath)).size;
    if (size > MAX_JOURNAL_BYTES) {
      throw new UsageError(
        `Cannot resume "${this.path}": its journal "${this.journalPath}" is ${size} bytes, more than any import writes (${MAX_JOURNAL_BYTES}); run without resume: true to start over`,
      );
    }
    const text = new TextDecoder().decode(await fs.readFile(this.journalPath));
    return parseJournal(text, plan, layout, this.path, this.partialPath, this.options.sourceKey);
  }

  async #tensor(entry: TensorEntry): Promise<void> {
    const layout = this.layout;
    if (layout === undefined) {
      throw new TypeError(`Cannot write "${this.path}": a tensor chunk arrived before the header`);
    }
    const { name } = entry.info;
    const t = this.#planned(layout, name);
    if (t === undefined) {
      throw new TypeError(`Cannot write "${this.path}": tensor "${name}" is not in the header`);
    }
    if (this.received[t.inputIndex] === 1) {
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
    this.received[t.inputIndex] = 1;
    this.receivedCount++;
    const claim = this.claims.get(t.inputIndex);
    if (claim !== undefined && claim.reached === b.byteLength) {
      // Committed by an earlier run. Do not open() it, so upstream does no
      // work; if the check beside the writes fails, it is written at close.
      if (this.verifier!.settled(t.inputIndex) !== false) {
        this.tentative.set(t.inputIndex, entry);
        this.progress(name);
        return;
      }
      this.bytesDone -= b.byteLength;
      this.claimedBytes -= b.byteLength;
      this.itemsDone--;
      this.claimedItems--;
    }
    let crc: number;
    if (claim !== undefined && claim.reached < b.byteLength) {
      crc = await this.#resumeInside(entry, t, claim);
    } else {
      crc = await this.#copy(entry, t, entry.open(), 0, b.byteLength, 0);
    }
    const pad = t.paddedSize - b.byteLength;
    if (pad > 0) await this.file!.writeAt(t.fileOffset + b.byteLength, ZEROS.subarray(0, pad));
    this.current = undefined;
    this.pending.push({
      index: t.inputIndex,
      offset: t.fileOffset,
      length: b.byteLength,
      reached: b.byteLength,
      crc,
    });
    this.committed[t.inputIndex] = crc;
    this.itemsDone++;
    this.progress(name);
    this.#maybeCommit();
    // Tensors without bytes never wait for I/O, so the commit in flight may
    // not finish while they stream by: wait for it rather than hold their
    // records without bound.
    if (this.pending.length >= 2 * COMMIT_TENSORS) await this.inflight;
    if (this.inflightError !== undefined) throw this.inflightError;
  }

  /**
   * The planned tensor named `name`. Tensors come in input order from every
   * pipeline, so the next one is tried first; a name index is built only if
   * one comes out of order.
   */
  #planned(layout: AprLayout, name: string): AprPlannedTensor | undefined {
    const next = layout.tensors[this.nextIndex];
    if (next !== undefined && next.info.name === name) {
      this.nextIndex++;
      return next;
    }
    this.byName ??= new Map(layout.tensors.map((t) => [t.info.name, t]));
    const t = this.byName.get(name);
    if (t !== undefined) this.nextIndex = t.inputIndex + 1;
    return t;
  }

  /**
   * Continue a tensor an earlier run committed in part: write from the
   * restart point at once, and check the committed bytes meanwhile; if they
   * are not intact, write them again from the start of the payload.
   */
  async #resumeInside(
    entry: TensorEntry,
    t: AprPlannedTensor,
    claim: JournalCommit,
  ): Promise<number> {
    const length = t.info.byteLength;
    const rest = restartOf(entry)?.openAt(claim.reached, claim.state);
    if (rest === undefined) {
      this.bytesDone -= claim.reached;
      this.claimedBytes -= claim.reached;
      return await this.#copy(entry, t, entry.open(), 0, length, 0);
    }
    const tail = await this.#copy(entry, t, rest, claim.reached, length, claim.crc);
    if (await this.verifier!.verified(t.inputIndex)) {
      this.resumedBytes += claim.reached;
      return tail;
    }
    this.bytesDone -= claim.reached;
    this.claimedBytes -= claim.reached;
    this.current = undefined;
    // The committed head was not intact: write it again, then join the CRCs.
    const tailCrc = crc32Tail(tail, claim.crc, length - claim.reached);
    const head = await this.#copy(entry, t, entry.open(), 0, claim.reached, 0, true);
    return crc32Combine(head, tailCrc, length - claim.reached);
  }

  /**
   * Write `stream`'s bytes as payload bytes `from`..`to` of tensor `t`, with
   * commits inside the tensor at its producer's restart points.
   *
   * @returns The CRC of payload bytes 0..`to`, continuing from `crc` (the
   *   CRC of 0..`from`).
   */
  async #copy(
    entry: TensorEntry,
    t: AprPlannedTensor,
    stream: ReadableStream<Uint8Array>,
    from: number,
    to: number,
    crc: number,
    head = false,
  ): Promise<number> {
    const file = this.file!;
    const name = t.info.name;
    // Aborting the sink (Ctrl-C) waits for the write in flight: a read that a
    // stalled server never answers gives up instead (abortable_reads.ts).
    const aborted = this.abortSignal;
    const reader = (aborted === undefined ? stream : abortableStream(stream, aborted)).getReader();
    const restart = restartOf(entry);
    let written = from;
    let ended = false;
    // A head rewrite is not a restart point of its own: no commits inside it.
    const progress: Progress | undefined = head ? undefined : { t, written, restart: undefined };
    if (progress !== undefined) this.current = progress;
    try {
      for (;;) {
        const { done, value } = await reader.read();
        if (done) {
          ended = true;
          break;
        }
        let bytes = value;
        if (written + bytes.length > to) {
          if (!head) {
            throw new RangeError(
              `Cannot write tensor "${name}" to "${this.path}": its stream yields more than the ${t.info.byteLength} bytes its header says`,
            );
          }
          bytes = bytes.subarray(0, to - written);
        }
        await file.writeAt(t.fileOffset + written, bytes);
        crc = crc32(bytes, crc);
        written += bytes.length;
        this.bytesDone += bytes.length;
        this.uncommitted += bytes.length;
        // Written and summed: free it now if its producer allows (bounded memory,
        // DESIGN.md §1.2), rather than when the GC gets to it.
        releaseChunk(value);
        if (progress !== undefined) {
          progress.written = written;
          const point = written < to ? restart?.restartPoint(written) : undefined;
          if (point !== undefined) {
            progress.restart = {
              index: t.inputIndex,
              offset: t.fileOffset,
              length: t.info.byteLength,
              reached: written,
              crc,
              ...(point.state === undefined ? {} : { state: point.state }),
            };
          }
          this.#maybeCommit();
          if (this.inflightError !== undefined) throw this.inflightError;
        }
        this.progress(name);
        if (head && written === to) break;
      }
    } catch (error) {
      await reader.cancel(error).catch(() => {});
      throw error;
    } finally {
      if (head && written === to) await reader.cancel().catch(() => {});
      // An ended stream is left locked: nothing reads it again, and Deno's
      // releaseLock makes an error with a stack trace each time (a third of
      // the time of 261,000 zero-size tensors).
      if (!ended) reader.releaseLock();
    }
    if (written !== to) {
      throw new RangeError(
        `Cannot write tensor "${name}" to "${this.path}": its stream yielded ${written} bytes, its header says ${t.info.byteLength}`,
      );
    }
    return crc;
  }

  /** Start a commit beside the writes when 64 MiB or 2 s have gone by since the last. */
  #maybeCommit(): void {
    const commitBytes = this.options.commitBytes ?? APR_SINK_COMMIT_BYTES;
    const interval = this.options.commitIntervalMs ?? APR_SINK_COMMIT_INTERVAL_MS;
    if (
      this.inflight === undefined && (this.uncommitted > 0 || this.pending.length > 0) &&
      (this.uncommitted >= commitBytes || this.pending.length >= COMMIT_TENSORS ||
        Date.now() - this.lastCommit >= interval)
    ) {
      const batch = this.#takePending();
      if (batch.length === 0) return;
      // Sync beside the writes: stalling the stream on every fsync cost ~40%
      // of a passthrough import's time (docs/BENCHMARKS.md).
      this.inflight = this.#commitBatch(batch, true)
        .catch((error) => {
          this.inflightError = error;
        })
        .finally(() => {
          this.inflight = undefined;
        });
    }
  }

  /** The whole tensors written since the last commit, and the current tensor's restart point. */
  #takePending(): JournalCommit[] {
    const batch = this.pending;
    const restart = this.current?.restart;
    if (restart !== undefined) {
      batch.push(restart);
      this.current!.restart = undefined;
    }
    this.pending = [];
    this.uncommitted = 0;
    this.lastCommit = Date.now();
    return batch;
  }

  /**
   * Sync written data, then journal it: a journaled range is always on disk.
   * Every byte `batch` names was written before this starts.
   */
  async #commitBatch(batch: JournalCommit[], beside: boolean): Promise<void> {
    if (batch.length === 0) return;
    await (beside ? this.file!.syncDataBeside() : this.file!.syncData());
    await fs.writeTextFile(this.journalPath, batch.map(commitLine).join(""), { append: true });
    this.journaled = true;
  }

  /** Commit everything written so far, waiting for a commit in flight first. */
  async #commit(): Promise<void> {
    await this.inflight;
    if (this.inflightError !== undefined) throw this.inflightError;
    await this.#commitBatch(this.#takePending(), false);
  }

  /** Write the skipped tensors whose earlier commit did not verify. */
  async #settleTentative(): Promise<number> {
    let resumed = 0;
    for (const [index, entry] of this.tentative) {
      const t = this.layout!.tensors[index]!;
      if (await this.verifier!.verified(index)) {
        this.committed[index] = this.claims.get(index)!.crc;
        this.resumedBytes += t.info.byteLength;
        resumed++;
        continue;
      }
      const crc = await this.#copy(entry, t, entry.open(), 0, t.info.byteLength, 0);
      const pad = t.paddedSize - t.info.byteLength;
      if (pad > 0) {
        await this.file!.writeAt(t.fileOffset + t.info.byteLength, ZEROS.subarray(0, pad));
      }
      this.current = undefined;
      this.pending.push({
        index,
        offset: t.fileOffset,
        length: t.info.byteLength,
        reached: t.info.byteLength,
        crc,
      });
      this.committed[index] = crc;
      this.bytesDone -= t.info.byteLength; // counted when skipped, and again by #copy
      this.claimedBytes -= t.info.byteLength;
      this.claimedItems--;
    }
    this.tentative.clear();
    return resumed;
  }

  async close(): Promise<void> {
    try {
      const layout = this.layout;
      if (layout === undefined) {
        throw new TypeError(`Cannot write "${this.path}": the stream ended before a header chunk`);
      }
      if (this.receivedCount !== layout.tensors.length) {
        const missing = layout.tensors.find((t) => this.received[t.inputIndex] !== 1)!;
        // Not bad input by itself (upstream may have been cut short): keep the partial for --resume.
        throw new Error(
          `Cannot write "${this.path}": the stream ended after ${this.receivedCount} of ${layout.tensors.length} tensors (missing "${missing.info.name}")`,
        );
      }
      const resumedTensors = await this.#settleTentative();
      await this.verifier?.stop();
      await this.#commit();
      let footer = crc32(layout.prefix);
      for (const t of layout.fileOrder) {
        footer = crc32Combine(
          footer,
          segmentCrc(t, this.committed[t.inputIndex]!),
          t.paddedSize,
        );
      }
      const bytes = new Uint8Array(APR_FOOTER_SIZE);
      new DataView(bytes.buffer).setUint32(0, footer, true);
      const file = this.file!;
      await file.writeAt(layout.fileSize - APR_FOOTER_SIZE, bytes);
      await file.syncData();
      await file.close();
      if (this.options.publish === false) {
        // The file at the path must still be the one written, before it is sealed as complete.
        await assertStillHeld(this.partialPath, this.path);
        await sealHeld(this.partialPath);
        this.finished = true;
      } else {
        await renameIntoPlace(this.partialPath, this.path, this.options.force);
        this.finished = true;
        await removeIfExists(this.journalPath);
      }
      this.result = {
        path: this.path,
        bytes: layout.fileSize,
        tensors: layout.tensors.length,
        footerCrc: footer,
        resumedTensors,
        resumedBytes: this.resumedBytes,
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
   * Stop after a failure: keep what a resume can use (commit what was
   * written, up to the current tensor's last restart point), or remove
   * partial and journal when resume is impossible (nothing committed, or the
   * input itself is bad).
   */
  async fail(reason: unknown): Promise<void> {
    if (!this.owned || this.finished) return;
    this.owned = false;
    // Let a commit in flight finish first, so its journal append cannot
    // recreate a journal removed below.
    await this.inflight;
    await this.verifier?.stop();
    const remove = isBadInput(reason);
    if (!remove) {
      try {
        await this.#commit();
      } catch {
        // Nothing more can be saved; the journal still lists earlier commits.
      }
    }
    await this.file?.close().catch(() => {});
    if (remove || !this.journaled) {
      await removeIfExists(this.partialPath).catch(() => {});
      await removeIfExists(this.journalPath).catch(() => {});
    }
  }
}

/**
 * The CRC of the bytes after a head, from the CRC of head + tail and the
 * CRC the head was claimed to have (`crc32Combine` run backwards is not
 * possible, so the tail's own CRC is found by cancelling the head: CRC is
 * linear, `crc(A‖B) = shift(crc(A)) ⊕ crc(B)`).
 */
function crc32Tail(whole: number, headCrc: number, tailLength: number): number {
  // crc32Combine(a, b, n) = shift_n(a) ^ b, so b = shift_n(a) ^ whole.
  return (crc32Combine(headCrc, 0, tailLength) ^ whole) >>> 0;
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
      start: (controller) => {
        state.abortSignal = options.signal === undefined
          ? controller.signal
          : AbortSignal.any([controller.signal, options.signal]);
      },
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
