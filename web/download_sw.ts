/// <reference no-default-lib="true" />
/// <reference lib="esnext" />
/// <reference lib="webworker" />
/**
 * The web page's service worker (built beside the page as `aprkit-sw.js`):
 * it answers a download URL the page opens with a response streamed from
 * the page, chunk by chunk as the browser's download pulls them, so a
 * browser without the File System Access API saves an output of any size
 * holding one chunk at a time. Nothing here calls the network: it answers
 * only the URLs the page announced, and every other request passes through.
 *
 * Protocol, over the MessagePort the page sends with `{ type: "download",
 * id, name }`: the worker answers `"registered"`, then sends `"pull"` for
 * each chunk it wants; the page answers `{ type: "chunk", bytes }`, then
 * `{ type: "end" }` or `{ type: "error", message }`. The worker sends
 * `"cancel"` when the download is cancelled in the browser.
 *
 * This module is browser compatible.
 *
 * @module
 */

declare const self: ServiceWorkerGlobalScope;

/** The path prefix of download URLs, below the worker's scope. */
const PREFIX = "aprkit-download/";

/** Downloads announced by the page and not yet opened, by id. */
const announced = new Map<string, { port: MessagePort; name: string }>();

self.addEventListener("install", () => void self.skipWaiting());
self.addEventListener("activate", (event) => event.waitUntil(self.clients.claim()));

self.addEventListener("message", (event) => {
  const data = event.data as { type?: string; id?: unknown; name?: unknown };
  const port = event.ports[0];
  // "ping" keeps the worker alive during a long download; nothing to do.
  if (data?.type !== "download" || port === undefined) return;
  if (typeof data.id !== "string" || typeof data.name !== "string") return;
  announced.set(data.id, { port, name: data.name });
  port.postMessage("registered");
});

self.addEventListener("fetch", (event) => {
  const url = new URL(event.request.url);
  const scope = new URL(self.registration.scope);
  if (url.origin !== scope.origin || !url.pathname.startsWith(scope.pathname + PREFIX)) return;
  const id = url.pathname.slice(scope.pathname.length + PREFIX.length).split("/")[0]!;
  const download = announced.get(id);
  if (download === undefined) {
    event.respondWith(new Response("no such download", { status: 404 }));
    return;
  }
  announced.delete(id);
  event.respondWith(streamed(download.port, download.name));
});

/** The response that carries one download, pulled from the page. */
function streamed(port: MessagePort, name: string): Response {
  // The page sends one message per "pull", and an "error" whenever it fails.
  const inbox: { type: string; bytes?: Uint8Array; message?: string }[] = [];
  let wake: (() => void) | undefined;
  port.onmessage = (event) => {
    inbox.push(event.data);
    wake?.();
  };
  const body = new ReadableStream<Uint8Array>({
    async pull(controller) {
      port.postMessage("pull");
      while (inbox.length === 0) await new Promise<void>((resolve) => (wake = resolve));
      const message = inbox.shift()!;
      if (message.type === "chunk") return controller.enqueue(message.bytes!);
      port.close();
      if (message.type === "end") controller.close();
      else controller.error(new Error(message.message ?? "the conversion failed"));
    },
    cancel() {
      port.postMessage("cancel");
      port.close();
    },
  }, { highWaterMark: 1 });
  return new Response(body, {
    headers: {
      "Content-Type": "application/octet-stream",
      "Content-Disposition": `attachment; filename*=UTF-8''${encodeURIComponent(name)}`,
      "X-Content-Type-Options": "nosniff",
    },
  });
}
