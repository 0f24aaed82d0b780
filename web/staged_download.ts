/// <reference lib="dom" />
/**
 * A download staged in the origin-private file system (Firefox, and other
 * browsers whose OPFS files take `createWritable()` but that have no save
 * picker): the conversion writes a file there with positioned writes, as it
 * would a picked file, then the browser downloads that file. Memory holds
 * one chunk; the disk holds the output twice until the download is done
 * (the staged copy is removed when the next conversion starts, or the page
 * is opened again).
 *
 * This module is browser compatible.
 *
 * @module
 */

import type { PositionedWritable } from "../mod.ts";
import { saveBlob } from "./memory_download.ts";

/** Staged files start with this, so that stale ones can be found and removed. */
const STAGED_PREFIX = "aprkit-staged-";

/** A staged output: write it, then download it. */
export interface StagedDownload {
  /** Positioned writes into the staged file. */
  writable: PositionedWritable;
  /** Hand the written file to the browser as a download. */
  download(): Promise<void>;
}

interface StagingRoot {
  getFileHandle(name: string, options?: { create?: boolean }): Promise<FileSystemFileHandle>;
  removeEntry(name: string): Promise<void>;
  keys(): AsyncIterable<string>;
}

/** The origin-private folder, if this browser writes files there from the page. */
async function stagingRoot(): Promise<StagingRoot | undefined> {
  const storage = navigator.storage as StorageManager | undefined;
  const handle = (globalThis as { FileSystemFileHandle?: { prototype: object } })
    .FileSystemFileHandle;
  if (typeof storage?.getDirectory !== "function" || !handle) return undefined;
  if (typeof (handle.prototype as { createWritable?: unknown }).createWritable !== "function") {
    return undefined;
  }
  return await storage.getDirectory() as unknown as StagingRoot;
}

/**
 * Remove staged files of earlier conversions (their downloads are done or gone).
 *
 * @returns When done; never rejects.
 */
export async function removeStaged(): Promise<void> {
  const root = await stagingRoot().catch(() => undefined);
  if (root === undefined) return;
  const names: string[] = [];
  try {
    for await (const name of root.keys()) if (name.startsWith(STAGED_PREFIX)) names.push(name);
  } catch {
    return;
  }
  await Promise.all(names.map((name) => root.removeEntry(name).catch(() => {})));
}

/**
 * Stage a download of `name`, or say this browser cannot.
 *
 * @param name The file name the browser saves under.
 * @returns The staged output, or `undefined` without a writable origin-private file system.
 */
export async function stagedDownload(name: string): Promise<StagedDownload | undefined> {
  const root = await stagingRoot().catch(() => undefined);
  if (root === undefined) return undefined;
  await removeStaged();
  const handle = await root.getFileHandle(`${STAGED_PREFIX}${crypto.randomUUID()}`, {
    create: true,
  });
  const file = await (handle as unknown as {
    createWritable(): Promise<PositionedWritable>;
  }).createWritable();
  const writable: PositionedWritable = {
    async write(command) {
      // The sinks set the full size before any tensor: say now if it cannot fit.
      if (command.type === "truncate") await checkRoom(name, command.size);
      return file.write(command);
    },
    close: () => file.close(),
    abort: (reason) => file.abort(reason),
  };
  return {
    writable,
    async download() {
      saveBlob(await handle.getFile(), name);
    },
  };
}

/** Refuse an output larger than the room left in the origin's storage quota. */
async function checkRoom(name: string, size: number): Promise<void> {
  const { quota, usage } = await navigator.storage.estimate().catch(() => ({
    quota: undefined,
    usage: undefined,
  }));
  if (quota === undefined || usage === undefined) return;
  if (size > quota - usage) {
    throw new RangeError(
      `Cannot save "${name}" as a download: it is ${size.toLocaleString("en")} bytes, and this ` +
        `browser lets the page store ${
          Math.max(0, quota - usage).toLocaleString("en")
        } more; free disk space, use Chrome or Edge (showSaveFilePicker), or the apr CLI`,
    );
  }
}
