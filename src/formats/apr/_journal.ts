/**
 * Internal: the resume journal of {@linkcode AprSink} (`OUT.partial.journal`,
 * DESIGN.md §2.3). One JSON object per line: first the plan line (journal
 * version, plan hash, file size, tensor count), then one commit per line,
 * appended only after an fdatasync of the bytes it names:
 *
 * - a whole tensor: `{"index","offset","length","crc"}`, the CRC of its payload;
 * - part of a tensor: the same plus `"reached"`, the payload bytes committed
 *   (a restart point of its producer), with `"crc"` the CRC of those bytes
 *   and `"state"` what the producer needs to restart there (e.g. APR_Q8's
 *   scale). A later line for the same tensor supersedes an earlier one.
 *
 * The file is read back on `--resume`, so it is treated as hostile: its size
 * is checked before it is read, lines are length-capped, every field is
 * type- and range-checked against the plan, and a claim is only a claim: the
 * sink verifies the committed bytes' CRC before relying on them.
 *
 * @module
 */

import { UsageError } from "../../errors.ts";
import { sourceChangedError } from "../../io/partial_file.ts";
import type { AprLayout } from "./layout.ts";

/** Journal format version; part of the plan hash, so older journals are not resumed. */
export const JOURNAL_VERSION = "aprkit-apr-journal-2";

/** Longest journal line accepted (a commit line is ~150 characters). */
const MAX_LINE = 4096;
/** Longest producer state kept (APR_Q8's scale is ~20 characters). */
export const MAX_STATE = 256;

/** A committed range of one tensor's payload, as journaled. */
export interface JournalCommit {
  /** Tensor index (input order). */
  readonly index: number;
  /** File offset of the payload. */
  readonly offset: number;
  /** Payload size. */
  readonly length: number;
  /** Payload bytes committed: `length` for a whole tensor. */
  readonly reached: number;
  /** CRC32 of the first `reached` payload bytes. */
  readonly crc: number;
  /** Producer state for a restart at `reached` (partial commits only). */
  readonly state?: string;
}

/**
 * Largest journal read back. It is compacted to one line per tensor at each
 * resume, and a commit is appended at most every 64 MiB or 2 s (~150 bytes a
 * line): 64 MiB is days of commits on top of a million tensors.
 */
export const MAX_JOURNAL_BYTES = 64 * 1024 * 1024;

/**
 * The plan line written first. `source` is the identity of the source's
 * content (`source_identity.ts`), checked on resume apart from the plan so
 * the refusal can say what changed.
 */
export function planLine(plan: string, layout: AprLayout, source?: string): string {
  return JSON.stringify({
    journal: JOURNAL_VERSION,
    plan,
    fileSize: layout.fileSize,
    tensors: layout.tensors.length,
    ...(source === undefined ? {} : { source }),
  });
}

/** One commit line (with its newline). */
export function commitLine(c: JournalCommit): string {
  const line = c.reached === c.length
    ? { index: c.index, offset: c.offset, length: c.length, crc: c.crc }
    : {
      index: c.index,
      offset: c.offset,
      length: c.length,
      reached: c.reached,
      crc: c.crc,
      ...(c.state === undefined ? {} : { state: c.state }),
    };
  return JSON.stringify(line) + "\n";
}

/**
 * Read a journal back: the plan must match; the last valid commit of each
 * tensor is returned (claims still to verify against the file). Invalid
 * lines (a torn last line, a hostile edit) are skipped.
 *
 * @param text The journal's text (size already checked by the caller).
 * @param plan The plan hash of this run.
 * @param layout This run's layout.
 * @param output The output path, for messages.
 * @param partialPath The partial output's path, for messages.
 * @param source The identity of this run's source content, when known.
 * @returns The claims, by tensor index.
 * @throws {UsageError} When the plan or the source differs.
 */
export function parseJournal(
  text: string,
  plan: string,
  layout: AprLayout,
  output: string,
  partialPath: string,
  source?: string,
): Map<number, JournalCommit> {
  const lines = text.split("\n");
  let recorded: unknown;
  try {
    recorded = (lines[0] ?? "").length <= MAX_LINE ? JSON.parse(lines[0] ?? "") : undefined;
  } catch {
    recorded = undefined;
  }
  if ((recorded as { plan?: unknown } | null | undefined)?.plan !== plan) {
    throw new UsageError(
      `Cannot resume "${output}": the partial output "${partialPath}" was planned from a different input or options; run without resume: true to start over`,
    );
  }
  // The same plan from changed bytes (a shard rewritten in place, same size
  // and header): what was committed came from other content.
  if (source !== undefined && (recorded as { source?: unknown }).source !== source) {
    throw sourceChangedError(output, partialPath);
  }
  const claims = new Map<number, JournalCommit>();
  for (const line of lines.slice(1)) {
    const c = parseCommit(line, layout);
    if (c !== undefined) claims.set(c.index, c);
  }
  return claims;
}

function isUint(v: unknown): v is number {
  return typeof v === "number" && Number.isSafeInteger(v) && v >= 0;
}

function parseCommit(line: string, layout: AprLayout): JournalCommit | undefined {
  if (line.length === 0 || line.length > MAX_LINE) return undefined;
  let raw: unknown;
  try {
    raw = JSON.parse(line);
  } catch {
    return undefined; // a torn last line: that tensor is simply written again
  }
  if (typeof raw !== "object" || raw === null || Array.isArray(raw)) return undefined;
  const { index, offset, length, crc, reached, state } = raw as Record<string, unknown>;
  if (!isUint(index) || !isUint(offset) || !isUint(length) || !isUint(crc)) return undefined;
  if (crc > 0xffffffff) return undefined;
  const t = layout.tensors[index];
  if (t === undefined || offset !== t.fileOffset || length !== t.info.byteLength) return undefined;
  const upTo = reached === undefined ? length : reached;
  if (!isUint(upTo) || upTo === 0 || upTo > length) return undefined;
  if (state !== undefined && (typeof state !== "string" || state.length > MAX_STATE)) {
    return undefined;
  }
  if (upTo === length && state !== undefined) return undefined;
  return {
    index,
    offset,
    length,
    reached: upTo,
    crc,
    ...(state === undefined ? {} : { state }),
  };
}
