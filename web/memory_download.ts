/// <reference lib="dom" />
/**
 * The last save path, where neither the File System Access API nor a
 * service worker is there (a page opened from file://, a private window):
 * the output is gathered as a Blob and handed to the browser as a download
 * when it is complete. Memory is what bounds it, so it is capped.
 *
 * This module is browser compatible.
 *
 * @module
 */

import type { DownloadSink } from "./download_writable.ts";

/**
 * The largest output kept in memory for a download: 2 GiB (the page states
 * it). Browsers keep Blobs in memory or spill them to a temporary file;
 * past this, streaming or showSaveFilePicker is the way.
 */
export const MAX_MEMORY_DOWNLOAD = 2 ** 31;

/**
 * A sink that gathers the output and downloads it as `name` once closed.
 *
 * @param name The file name the browser saves under.
 * @returns The sink.
 */
export function memoryDownload(name: string): DownloadSink {
  let parts: Blob[] = [];
  return {
    limit: MAX_MEMORY_DOWNLOAD,
    write(chunk) {
      // A Blob per chunk: the browser may move it out of the JS heap.
      parts.push(new Blob([chunk as Uint8Array<ArrayBuffer>]));
      return Promise.resolve();
    },
    close() {
      saveBlob(new Blob(parts, { type: "application/octet-stream" }), name);
      parts = [];
      return Promise.resolve();
    },
    abort() {
      parts = [];
      return Promise.resolve();
    },
  };
}

/**
 * Hand a Blob (or a File) to the browser as a download of `name`.
 *
 * @param blob The bytes.
 * @param name The file name the browser saves under.
 */
export function saveBlob(blob: Blob, name: string): void {
  const url = URL.createObjectURL(blob);
  const link = Object.assign(document.createElement("a"), { href: url, download: name });
  document.body.append(link);
  link.click();
  link.remove();
  // The download holds its own reference once started; the URL goes later.
  setTimeout(() => URL.revokeObjectURL(url), 60_000);
}
