/**
 * Internal: checks, beside the writes of a resumed {@linkcode AprSink}, that
 * the bytes its journal claims are committed are still in the partial output
 * (CRC of the committed payload bytes, and zero padding after a whole
 * tensor). It reads on a handle of its own, one reused buffer at a time, so
 * the resumed run starts writing at once and memory stays flat.
 *
 * @module
 */

import { crc32 } from "./crc32.ts";
import type { AprPlannedTensor } from "./layout.ts";
import type { JournalCommit } from "./_journal.ts";
import { fs, type RuntimeFile, SEEK_START } from "../../runtime/fs.ts";

/** Bytes read at a time (reused). */
const READ_SIZE = 1 << 20;

interface Pending {
  readonly claim: JournalCommit;
  readonly tensor: AprPlannedTensor;
  resolve(ok: boolean): void;
  readonly promise: Promise<boolean>;
  result?: boolean;
}

/** Verifies journal claims in the background; see the module doc. */
export class CommitVerifier {
  #path: string;
  #items = new Map<number, Pending>();
  #run: Promise<void> | undefined;
  #stopped = false;

  /**
   * @param path The partial output.
   * @param claims The journal's claims, by tensor index.
   * @param tensors The layout's tensors, by index.
   */
  constructor(
    path: string,
    claims: ReadonlyMap<number, JournalCommit>,
    tensors: readonly AprPlannedTensor[],
  ) {
    this.#path = path;
    // Partial claims first: their tensor waits for the answer before it ends.
    const order = [...claims.values()].sort((a, b) =>
      Number(a.reached === a.length) - Number(b.reached === b.length) || a.offset - b.offset
    );
    for (const claim of order) {
      let resolve!: (ok: boolean) => void;
      const promise = new Promise<boolean>((r) => (resolve = r));
      const item: Pending = { claim, tensor: tensors[claim.index]!, resolve, promise };
      this.#items.set(claim.index, item);
    }
  }

  /** Start reading (once). */
  start(): void {
    this.#run ??= this.#verifyAll();
  }

  /** Whether the claim for tensor `index` holds (waits for its turn). */
  verified(index: number): Promise<boolean> {
    return this.#items.get(index)?.promise ?? Promise.resolve(false);
  }

  /** The answer for tensor `index` if known already. */
  settled(index: number): boolean | undefined {
    return this.#items.get(index)?.result;
  }

  /** Wait until every claim is checked. */
  async done(): Promise<void> {
    this.start();
    await this.#run;
  }

  /** Stop early: unchecked claims count as failed. */
  async stop(): Promise<void> {
    this.#stopped = true;
    await this.#run;
  }

  async #verifyAll(): Promise<void> {
    let file: RuntimeFile | undefined;
    try {
      file = await fs.open(this.#path, { read: true });
      const size = (await file.stat()).size;
      const buffer = new Uint8Array(READ_SIZE);
      for (const item of this.#items.values()) {
        const ok = !this.#stopped && await checkClaim(file, size, item, buffer);
        item.result = ok;
        item.resolve(ok);
      }
    } catch {
      // Unreadable: nothing is trusted, every tensor is written again.
    } finally {
      file?.close();
      for (const item of this.#items.values()) {
        if (item.result === undefined) {
          item.result = false;
          item.resolve(false);
        }
      }
    }
  }
}

async function checkClaim(
  file: RuntimeFile,
  size: number,
  item: Pending,
  buffer: Uint8Array,
): Promise<boolean> {
  const { claim, tensor } = item;
  const whole = claim.reached === claim.length;
  // A whole tensor's zero padding is checked too; a partial one's is not written yet.
  const span = whole ? tensor.paddedSize : claim.reached;
  if (claim.offset + span > size) return false;
  await file.seek(claim.offset, SEEK_START);
  let crc = 0;
  for (let at = 0; at < span;) {
    const want = Math.min(buffer.length, span - at);
    const n = await file.read(buffer.subarray(0, want));
    if (n === null || n === 0) return false;
    const bytes = buffer.subarray(0, n);
    const payload = Math.max(0, Math.min(n, claim.reached - at));
    crc = crc32(bytes.subarray(0, payload), crc);
    for (let i = payload; i < n; i++) if (bytes[i] !== 0) return false;
    at += n;
  }
  return crc === claim.crc;
}
