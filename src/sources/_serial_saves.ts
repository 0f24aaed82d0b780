/**
 * Saving a small state file as it changes, one write at a time: a save asked
 * for while one is in flight is folded into one more write after it, which
 * snapshots the state then. Used by the download sidecar (`hub_download.ts`)
 * and the digest checkpoint (`hub_digest_checkpoint.ts`).
 *
 * @module
 */

/** One write at a time; saves asked for meanwhile make one more. */
export class SerialSaves {
  #write: () => Promise<boolean>;
  #dirty = false;
  #writing: Promise<void> | undefined;

  /**
   * @param write Snapshots the state (before its first `await`) and writes
   *   it; `false` stops the round (a failed write), and a save asked for
   *   meanwhile stays pending until the next {@linkcode SerialSaves.request}.
   */
  constructor(write: () => Promise<boolean>) {
    this.#write = write;
  }

  /** Whether a save was asked for that no write has started on yet. */
  get pending(): boolean {
    return this.#dirty;
  }

  /** Ask for a save: now, or after the write in flight. */
  request(): void {
    if (this.#writing !== undefined) {
      this.#dirty = true;
      return;
    }
    this.#writing = (async () => {
      do {
        this.#dirty = false;
        if (!await this.#write()) return;
      } while (this.#dirty);
    })().finally(() => {
      this.#writing = undefined;
    });
  }

  /** Wait until no write is in flight. */
  async idle(): Promise<void> {
    while (this.#writing !== undefined) await this.#writing;
  }
}
