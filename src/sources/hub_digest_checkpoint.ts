/**
 * The sha256 checks of a `--no-cache` import, saved beside its partial
 * output (`OUT.partial.digests.json`) so `--resume` continues them instead
 * of downloading every file again to hash what the earlier run had read.
 *
 * A resumed import skips the tensors its journal holds: without the saved
 * state their bytes would be fetched once more, only to be hashed (an
 * interrupted import of 18 of 27 tensors took as long to resume as to start).
 * The file holds, per Hub file, its announced sha256 and size, the length of
 * the prefix hashed and the SHA-256 state after it. A state is used only for
 * the same commit, path, sha256 and size; anything unreadable is ignored (the
 * check then starts over, which costs bytes, never correctness). It is
 * replaced atomically as the checks advance and removed once they pass.
 *
 * @module
 */

import { ContentDigest, type DigestProgress } from "../io/digest_source.ts";
import { atomicWrite } from "./hub_cache.ts";
import { fs } from "../runtime/fs.ts";
import { SerialSaves } from "./_serial_saves.ts";

/** Version of the file; another is ignored. */
const VERSION = 1;
/** Largest file read back (a few hundred bytes per Hub file). */
const MAX_BYTES = 4 * 1024 * 1024;
/** Saved again after this many more bytes were hashed. */
const SAVE_EVERY_BYTES = 8 * 1024 * 1024;

interface Saved {
  sha256: string;
  size: number;
  progress: DigestProgress;
}

/** The checkpoint file of one import. */
export class DigestCheckpoint {
  /** The file. */
  readonly path: string;
  #commit: string;
  #restored: Map<string, Saved>;
  #digests = new Map<string, { sha256: string; size: number; digest: ContentDigest }>();
  #lastSavedBytes = 0;
  #removed = false;
  #saves = new SerialSaves(() => this.#write());

  private constructor(path: string, commit: string, restored: Map<string, Saved>) {
    this.path = path;
    this.#commit = commit;
    this.#restored = restored;
  }

  /**
   * Open the checkpoint of an import.
   *
   * @param path The file (`OUT.partial.digests.json`).
   * @param commit The commit the import reads.
   * @param restore Read what an earlier run saved (`--resume`); otherwise start afresh.
   * @returns The checkpoint.
   */
  static async open(path: string, commit: string, restore: boolean): Promise<DigestCheckpoint> {
    const restored = new Map<string, Saved>();
    if (restore) {
      for (const [file, saved] of await readSaved(path, commit)) restored.set(file, saved);
    } else {
      await fs.remove(path).catch(() => {});
    }
    return new DigestCheckpoint(path, commit, restored);
  }

  /**
   * A resumable digest of one Hub file, continuing the saved one when it matches.
   *
   * @param file Path in the repository.
   * @param name The file, for messages.
   * @param size Its size.
   * @param sha256 Its announced sha256.
   * @returns The digest, tracked for saving.
   */
  digest(file: string, name: string, size: number, sha256: string): ContentDigest {
    const saved = this.#restored.get(file);
    const from = saved !== undefined && saved.sha256 === sha256 && saved.size === size
      ? saved.progress
      : undefined;
    let digest: ContentDigest;
    const onAdvance = (): void => this.#advanced();
    try {
      digest = new ContentDigest(name, size, sha256, { resumable: true, from, onAdvance });
    } catch {
      // A saved state that does not fit: check from the start.
      digest = new ContentDigest(name, size, sha256, { resumable: true, onAdvance });
    }
    this.#digests.set(file, { sha256, size, digest });
    return digest;
  }

  /** Save now (waiting for a save in flight). */
  async flush(): Promise<void> {
    this.#save();
    await this.#saves.idle();
  }

  /** The checks passed (or failed for good): nothing to continue. */
  async remove(): Promise<void> {
    this.#removed = true;
    this.#digests.clear();
    await this.#saves.idle();
    await fs.remove(this.path).catch(() => {});
  }

  /** Called per chunk hashed (a few files at most): save every SAVE_EVERY_BYTES. */
  #advanced(): void {
    let hashed = 0;
    for (const { digest } of this.#digests.values()) hashed += digest.bytesHashed;
    if (hashed - this.#lastSavedBytes >= SAVE_EVERY_BYTES) this.#save();
  }

  #save(): void {
    if (!this.#removed) this.#saves.request();
  }

  /** One save: the states as they are now; `false` when it is not written. */
  async #write(): Promise<boolean> {
    const files: Record<string, unknown> = {};
    let total = 0;
    for (const [file, { sha256, size, digest }] of this.#digests) {
      const progress = digest.progress();
      if (progress === undefined || progress.hashed === 0) continue;
      total += progress.hashed;
      files[file] = { sha256, size, ...progress };
    }
    this.#lastSavedBytes = total;
    // Keep what was restored but not reopened yet (a file this run has not reached).
    for (const [file, saved] of this.#restored) {
      if (!(file in files) && !this.#digests.has(file)) {
        files[file] = { sha256: saved.sha256, size: saved.size, ...saved.progress };
      }
    }
    if (this.#removed) return false;
    try {
      await atomicWrite(
        this.path,
        JSON.stringify({ version: VERSION, commit: this.#commit, files }),
      );
    } catch {
      // Not saved: a resume then hashes those files from their start.
      return false;
    }
    return true;
  }
}

/** The saved states of a commit's files; empty when absent, unreadable or for another commit. */
async function readSaved(path: string, commit: string): Promise<Map<string, Saved>> {
  const result = new Map<string, Saved>();
  try {
    const info = await fs.stat(path);
    if (!info.isFile || info.size > MAX_BYTES) return result;
    const data = JSON.parse(await fs.readTextFile(path)) as {
      version?: unknown;
      commit?: unknown;
      files?: Record<string, Record<string, unknown>>;
    };
    if (data.version !== VERSION || data.commit !== commit || typeof data.files !== "object") {
      return result;
    }
    for (const [file, entry] of Object.entries(data.files ?? {})) {
      const { sha256, size, hashed, state } = entry ?? {};
      if (typeof sha256 !== "string" || typeof size !== "number" || typeof hashed !== "number") {
        continue;
      }
      result.set(file, {
        sha256,
        size,
        progress: { hashed, state: state as DigestProgress["state"] },
      });
    }
  } catch {
    // Absent or unreadable: every check starts from the file's start.
  }
  return result;
}
