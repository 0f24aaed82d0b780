/// <reference lib="dom" />
/**
 * A download streamed through the page's service worker (web/download_sw.ts,
 * served beside the page as `aprkit-sw.js`): the browser's download pulls
 * the output chunk by chunk, so memory holds one chunk whatever the file's
 * size. Needs a secure context (https, or localhost) and service workers;
 * where either is missing the caller falls back to a download kept in
 * memory (web/memory_download.ts).
 *
 * This module is browser compatible.
 *
 * @module
 */

import type { DownloadSink } from "./download_writable.ts";

/** The service worker's file, beside the page (web/build.ts writes it). */
export const SERVICE_WORKER_FILE = "aprkit-sw.js";

/** How long the worker may take to install and answer before the page does without it. */
const WORKER_TIMEOUT_MS = 10_000;

/** The worker's lifetime is extended by events: one this often during a download. */
const PING_MS = 10_000;

/** The active service worker and its scope, once registered (or undefined without one). */
async function activeWorker(): Promise<{ worker: ServiceWorker; scope: string } | undefined> {
  const container = navigator.serviceWorker as ServiceWorkerContainer | undefined;
  if (!globalThis.isSecureContext || container === undefined) return undefined;
  const registration = await container.register(SERVICE_WORKER_FILE);
  const ready = await Promise.race([container.ready, timeout(WORKER_TIMEOUT_MS)]);
  const worker = ready?.active ?? registration.active;
  return worker ? { worker, scope: registration.scope } : undefined;
}

function timeout(ms: number): Promise<undefined> {
  return new Promise((resolve) => setTimeout(() => resolve(undefined), ms));
}

/**
 * Start a streamed download of `name`, or say this browser cannot.
 *
 * @param name The file name the browser saves under.
 * @param onCancel Called when the download is cancelled in the browser.
 * @returns The sink, or `undefined` when there is no usable service worker.
 */
export async function streamedDownload(
  name: string,
  onCancel: () => void,
): Promise<DownloadSink | undefined> {
  const active = await activeWorker().catch(() => undefined);
  if (active === undefined) return undefined;
  const { worker, scope } = active;
  const id = crypto.randomUUID();
  const { port1: port, port2 } = new MessageChannel();
  let pulls = 0;
  let registered = false;
  let stopped: unknown;
  let wake: (() => void) | undefined;
  port.onmessage = (event) => {
    if (event.data === "pull") pulls++;
    else if (event.data === "registered") registered = true;
    else if (event.data === "cancel") {
      stopped ??= new DOMException("the download was cancelled in the browser", "AbortError");
      onCancel();
    }
    wake?.();
  };
  const next = () => new Promise<void>((resolve) => (wake = resolve));
  worker.postMessage({ type: "download", id, name }, [port2]);
  const answered = await Promise.race([
    (async () => {
      while (!registered) await next();
      return true;
    })(),
    timeout(WORKER_TIMEOUT_MS),
  ]);
  if (answered !== true) {
    port.close();
    return undefined;
  }
  const ping = setInterval(() => worker.postMessage({ type: "ping" }), PING_MS);
  const frame = Object.assign(document.createElement("iframe"), {
    hidden: true,
    src: new URL(`aprkit-download/${id}/${encodeURIComponent(name)}`, scope).href,
  });
  document.body.append(frame);
  const finish = () => {
    clearInterval(ping);
    port.close();
    // The download outlives its frame once started; the frame goes later.
    setTimeout(() => frame.remove(), 60_000);
  };
  // Backpressure: one chunk per pull of the browser's download.
  const pulled = async () => {
    while (pulls === 0) {
      if (stopped !== undefined) throw stopped;
      await next();
    }
    pulls--;
  };
  return {
    async write(chunk) {
      await pulled();
      // Copied, not transferred: the writer reads the chunk's length after the write.
      port.postMessage({ type: "chunk", bytes: chunk });
    },
    async close() {
      await pulled();
      port.postMessage({ type: "end" });
      finish();
    },
    abort(reason) {
      stopped ??= reason ?? new DOMException("cancelled", "AbortError");
      wake?.();
      port.postMessage({
        type: "error",
        message: reason instanceof Error ? reason.message : String(reason),
      });
      finish();
      return Promise.resolve();
    },
  };
}
