/**
 * A local stand-in for the Hugging Face Hub, for tests and benchmarks: two
 * real HTTP servers on 127.0.0.1 (port 0) — the Hub (revision, tree,
 * `resolve/` with HEAD, auth) and a "CDN" the Hub redirects LFS files to
 * (Range requests, signed URLs that can expire) — serving files from memory
 * or disk, counting every request and byte, and injecting the transport
 * faults of FORMATS.md §4 (D1–D6) on demand.
 *
 * @module
 */

import { createHash } from "node:crypto";
import { gzipSync } from "node:zlib";

/** One file of the served repository. */
export interface HubServerFile {
  /** Path inside the repository. */
  path: string;
  /** Content in memory... */
  data?: Uint8Array;
  /** ...or on disk (streamed, for benchmarks). */
  diskPath?: string;
  /** Whether the file is in LFS (redirected to the CDN). Default: not `.json`/`.md`/`.txt`. */
  lfs?: boolean;
}

/** A transport fault, applied to the matching requests `times` times (default 1). */
export type HubFault =
  /** D1: the CDN body breaks after `afterBytes` bytes of a response starting at or after `fromOffset`. */
  | { kind: "drop"; path: string; afterBytes: number; times?: number; fromOffset?: number }
  /** D2: answer `status` (with `Retry-After` when given) on a request to `on`. */
  | {
    kind: "status";
    status: number;
    on: "revision" | "tree" | "head" | "cdn";
    path?: string;
    retryAfter?: string;
    /** A `RateLimit` header, as the Hub sends with 429 (e.g. `"api";r=0;t=55`). */
    rateLimit?: string;
    times?: number;
  }
  /** D3: the CDN ignores `Range` and sends the whole file with 200. */
  | { kind: "ignore-range"; path: string; times?: number }
  /** D4: the CDN serves `delta` bytes more (or fewer when negative) than HEAD announced, always. */
  | { kind: "length"; path: string; delta: number }
  /** D5: the CDN serves content with one byte changed, always. */
  | { kind: "corrupt"; path: string }
  /** The signed CDN URL expires: the next CDN request for `path` after `afterBytes` gets 403. */
  | { kind: "expire"; path: string; afterBytes?: number; times?: number }
  /** Stop sending the body of `path` once `afterBytes` bytes of it were served in all; never resumes. */
  | { kind: "stall"; path: string; afterBytes: number }
  /** Send the body of `path` gzip-encoded (`Content-Encoding: gzip`) though `identity` was asked for. */
  | { kind: "gzip"; path: string; times?: number }
  /** Wait `delayMs` before each body chunk of `path`, always (a slow link). */
  | { kind: "slow"; path: string; delayMs: number };

/** One request as the servers saw it. */
export interface HubRequestLog {
  /** Which server. */
  server: "hub" | "cdn";
  /** HTTP method. */
  method: string;
  /** URL path (without query). */
  url: string;
  /** The repository file concerned, for `resolve/` and CDN requests. */
  file: string | undefined;
  /** The `Range` header. */
  range: string | null;
}

/** Counters of a running {@linkcode HubServer}. */
export interface HubServerCounters {
  /** Every request, in arrival order. */
  requests: HubRequestLog[];
  /** Body bytes sent for file content (resolve/ GETs and CDN GETs). */
  bytesServed: number;
  /** The same, per repository file. */
  bytesByFile: Map<string, number>;
  /** Whether the CDN ever received an `Authorization` header (it must not). */
  cdnSawAuthorization: boolean;
}

/** Options of {@linkcode startHubServer}. */
export interface HubServerOptions {
  /** The served files. */
  files: HubServerFile[];
  /** `org/name`. Default `test-org/tiny-model`. */
  repoId?: string;
  /** The commit `main` points at. Default: a fixed 40-hex id. */
  commit?: string;
  /** When set, the Hub requires `Authorization: Bearer <token>`. */
  token?: string;
  /** Faults to inject; the array may be changed while the server runs. */
  faults?: HubFault[];
  /** Entries per page of the tree listing (exercises `Link` pagination). Default 2. */
  treePageSize?: number;
  /**
   * A gated repository as the Hub answers today (huggingface_hub #4595): the
   * tree lists LFS hashes redacted to 64 `*`; the resolve answer's
   * `X-Linked-Etag` still carries the real sha256.
   */
  gated?: boolean;
  /** Size of the body chunks sent. Default 64 KiB (benchmarks use more). */
  serveChunkSize?: number;
}

/** A running local Hub. */
export interface HubServer {
  /** Base URL of the Hub, for `HF_ENDPOINT`. */
  endpoint: string;
  /** Base URL of the CDN. */
  cdnUrl: string;
  /** `org/name`. */
  repoId: string;
  /** The commit of `main`. */
  commit: string;
  /** Counters. */
  counters: HubServerCounters;
  /** The active faults (mutable). */
  faults: HubFault[];
  /** Requests for file data (resolve/ GET and CDN GET) since start or the last reset. */
  dataRequests(): HubRequestLog[];
  /** Zero the counters. */
  reset(): void;
  /** Stop both servers (stalled bodies are broken). */
  close(): Promise<void>;
}

/** The default commit of `main`. */
export const TEST_COMMIT = "0123456789abcdef0123456789abcdef01234567";

interface Served {
  path: string;
  size: number;
  lfs: boolean;
  etag: string;
  read(offset: number, length: number): Promise<Uint8Array>;
}

/**
 * Start the Hub and CDN servers.
 *
 * @param options Files, token, faults.
 * @returns The running servers.
 */
export async function startHubServer(options: HubServerOptions): Promise<HubServer> {
  const repoId = options.repoId ?? "test-org/tiny-model";
  const commit = options.commit ?? TEST_COMMIT;
  const faults = options.faults ?? [];
  const pageSize = options.treePageSize ?? 2;
  const serveChunk = options.serveChunkSize ?? SERVE_CHUNK;
  const counters: HubServerCounters = {
    requests: [],
    bytesServed: 0,
    bytesByFile: new Map(),
    cdnSawAuthorization: false,
  };
  const files = new Map<string, Served>();
  for (const file of options.files) files.set(file.path, await describeFile(file));
  const bySha = new Map<string, Served>();
  for (const f of files.values()) if (f.lfs) bySha.set(f.etag, f);
  let signature = 1;
  const breakers = new Set<() => void>();
  const servedByFile = new Map<string, number>();

  const takeFault = <K extends HubFault["kind"]>(
    kind: K,
    match: (f: Extract<HubFault, { kind: K }>) => boolean,
  ): Extract<HubFault, { kind: K }> | undefined => {
    const index = faults.findIndex((f) =>
      f.kind === kind && match(f as Extract<HubFault, { kind: K }>)
    );
    if (index < 0) return undefined;
    const fault = faults[index] as Extract<HubFault, { kind: K }>;
    if (
      "times" in fault || fault.kind === "drop" || fault.kind === "status" ||
      fault.kind === "ignore-range" || fault.kind === "expire" || fault.kind === "gzip"
    ) {
      // One-shot faults (`times`, default 1); the others hold until removed.
      const left = (fault as { times?: number }).times ?? 1;
      if (left <= 1) faults.splice(index, 1);
      else (fault as { times?: number }).times = left - 1;
    }
    return fault;
  };
  const statusFault = (on: string, path?: string): Response | undefined => {
    const fault = takeFault(
      "status",
      (f) => f.on === on && (f.path === undefined || f.path === path),
    );
    if (!fault) return undefined;
    const headers: Record<string, string> = {};
    if (fault.retryAfter !== undefined) headers["retry-after"] = fault.retryAfter;
    if (fault.rateLimit !== undefined) headers["ratelimit"] = fault.rateLimit;
    return new Response("injected failure", { status: fault.status, headers });
  };

  const repoPrefix = `/${repoId}/resolve/`;
  const apiPrefix = `/api/models/${repoId}/`;

  const hubHandler = (request: Request): Response | Promise<Response> => {
    const url = new URL(request.url);
    const path = decodeURIComponent(url.pathname);
    const log: HubRequestLog = {
      server: "hub",
      method: request.method,
      url: url.pathname,
      file: undefined,
      range: request.headers.get("range"),
    };
    counters.requests.push(log);
    if (options.token !== undefined) {
      const auth = request.headers.get("authorization");
      if (auth === null) {
        return new Response("Unauthorized", {
          status: 401,
          headers: { "x-error-code": "RepoNotFound" },
        });
      }
      if (auth !== `Bearer ${options.token}`) {
        return new Response("Invalid credentials", { status: 401 });
      }
    }
    if (path.startsWith("/api/models/")) {
      if (!path.startsWith(apiPrefix)) return notFound("RepoNotFound");
      const [kind, ...rest] = path.slice(apiPrefix.length).split("/");
      const revision = rest.join("/");
      if (revision !== "main" && revision !== commit) return notFound("RevisionNotFound");
      if (kind === "revision") {
        const failure = statusFault("revision");
        if (failure) return failure;
        return Response.json({
          id: repoId,
          sha: commit,
          siblings: [...files.keys()].sort().map((rfilename) => ({ rfilename })),
        });
      }
      if (kind === "tree") {
        const failure = statusFault("tree");
        if (failure) return failure;
        const all = [...files.values()].sort((a, b) => (a.path < b.path ? -1 : 1));
        const cursor = Number(url.searchParams.get("cursor") ?? "0");
        const page = all.slice(cursor, cursor + pageSize).map((f) => ({
          type: "file",
          path: f.path,
          size: f.size,
          oid: f.lfs ? gitBlobId(new TextEncoder().encode(f.etag)) : f.etag,
          ...(f.lfs
            ? {
              lfs: {
                oid: options.gated ? "*".repeat(64) : f.etag,
                size: f.size,
                pointerSize: 134,
              },
            }
            : {}),
        }));
        const headers = new Headers({ "content-type": "application/json" });
        if (cursor + pageSize < all.length) {
          const next = new URL(url);
          next.searchParams.set("cursor", String(cursor + pageSize));
          headers.set("link", `<${next.href}>; rel="next"`);
        }
        return new Response(JSON.stringify(page), { headers });
      }
      return notFound();
    }
    if (path.startsWith(repoPrefix)) {
      const rest = path.slice(repoPrefix.length);
      const slash = rest.indexOf("/");
      const revision = rest.slice(0, slash);
      const filePath = rest.slice(slash + 1);
      log.file = filePath;
      if (revision !== "main" && revision !== commit) return notFound("RevisionNotFound");
      const file = files.get(filePath);
      if (file === undefined) return notFound("EntryNotFound");
      const failure = statusFault("head", filePath);
      if (failure) return failure;
      const headers = new Headers({ "x-repo-commit": commit, "accept-ranges": "bytes" });
      if (file.lfs) {
        headers.set("x-linked-etag", `"${file.etag}"`);
        headers.set("x-linked-size", String(file.size));
        headers.set("etag", `"${file.etag}"`);
        headers.set(
          "location",
          `${cdnUrl}/blobs/${file.etag}?sig=${signature}&file=${encodeURIComponent(filePath)}`,
        );
        return new Response(null, { status: 302, headers });
      }
      headers.set("etag", `"${file.etag}"`);
      if (request.method === "HEAD") {
        headers.set("content-length", String(file.size));
        return new Response(null, { status: 200, headers });
      }
      return serveBody(request, file, headers, log);
    }
    return notFound();
  };

  const cdnHandler = (request: Request): Response | Promise<Response> => {
    const url = new URL(request.url);
    const sha = url.pathname.replace(/^\/blobs\//, "");
    const file = bySha.get(sha);
    const log: HubRequestLog = {
      server: "cdn",
      method: request.method,
      url: url.pathname,
      file: file?.path,
      range: request.headers.get("range"),
    };
    counters.requests.push(log);
    if (request.headers.has("authorization")) counters.cdnSawAuthorization = true;
    if (file === undefined) return new Response("no such blob", { status: 404 });
    if (url.searchParams.get("sig") !== String(signature)) {
      return new Response("Request has expired", { status: 403 });
    }
    const expire = takeFault(
      "expire",
      (f) => f.path === file.path && (servedByFile.get(file.path) ?? 0) >= (f.afterBytes ?? 0),
    );
    if (expire) {
      signature++;
      return new Response("Request has expired", { status: 403 });
    }
    const failure = statusFault("cdn", file.path);
    if (failure) return failure;
    return serveBody(request, file, new Headers({ "accept-ranges": "bytes" }), log);
  };

  const serveBody = (
    request: Request,
    file: Served,
    headers: Headers,
    _log: HubRequestLog,
  ): Response | Promise<Response> => {
    const lengthFault = faults.find((f) => f.kind === "length" && f.path === file.path) as
      | { delta: number }
      | undefined;
    const corrupt = faults.some((f) => f.kind === "corrupt" && f.path === file.path);
    const size = file.size + (lengthFault?.delta ?? 0);
    const read = async (offset: number, length: number): Promise<Uint8Array> => {
      // Content beyond the real file (a "longer" fault) is zeros.
      const real = Math.max(0, Math.min(length, file.size - offset));
      const out = new Uint8Array(length);
      if (real > 0) out.set(await file.read(offset, real));
      // Corruption flips the last byte of the real content.
      const at = file.size - 1;
      if (corrupt && offset <= at && at < offset + length) {
        out[at - offset] = out[at - offset]! ^ 0xff;
      }
      return out;
    };
    let start = 0;
    let end = size;
    let status = 200;
    const range = request.headers.get("range");
    const ignore = range !== null && takeFault("ignore-range", (f) => f.path === file.path);
    if (range !== null && !ignore) {
      const match = /^bytes=(\d+)-(\d*)$/.exec(range);
      if (!match) return new Response("bad range", { status: 416 });
      start = Number(match[1]);
      end = match[2] === "" ? size : Math.min(size, Number(match[2]) + 1);
      if (start >= size || start >= end) {
        return new Response("range not satisfiable", {
          status: 416,
          headers: { "content-range": `bytes */${size}` },
        });
      }
      status = 206;
      headers.set("content-range", `bytes ${start}-${end - 1}/${size}`);
    }
    headers.set("content-length", String(end - start));
    if (request.method === "HEAD") return new Response(null, { status, headers });
    if (takeFault("gzip", (f) => f.path === file.path)) {
      return (async () => {
        const plain = await read(start, end - start);
        const encoded = new Uint8Array(gzipSync(plain));
        counters.bytesServed += encoded.length;
        headers.set("content-encoding", "gzip");
        headers.set("content-length", String(encoded.length));
        return new Response(encoded, { status, headers });
      })();
    }
    const slow = faults.find((f) => f.kind === "slow" && f.path === file.path) as
      | { delayMs: number }
      | undefined;
    const drop = takeFault(
      "drop",
      (f) => f.path === file.path && start >= (f.fromOffset ?? 0) && end - start > f.afterBytes,
    );
    const stall = faults.find((f) => f.kind === "stall" && f.path === file.path) as
      | { afterBytes: number }
      | undefined;
    let position = start;
    let sent = 0;
    let breaker: (() => void) | undefined;
    const body = new ReadableStream<Uint8Array>({
      pull: async (controller) => {
        if (position >= end) {
          controller.close();
          return;
        }
        let length = Math.min(serveChunk, end - position);
        if (drop && sent + length > drop.afterBytes) length = drop.afterBytes - sent;
        const total = servedByFile.get(file.path) ?? 0;
        if (stall && total + length > stall.afterBytes) length = stall.afterBytes - total;
        if (length <= 0) {
          if (drop && sent >= drop.afterBytes) {
            controller.close(); // Ends early against Content-Length: the client sees a dropped connection.
            return;
          }
          // Stalled: wait until the server closes.
          await new Promise<void>((resolve) => {
            breaker = resolve;
            breakers.add(resolve);
          });
          controller.error(new Error("server closed"));
          return;
        }
        if (slow) await new Promise((resolve) => setTimeout(resolve, slow.delayMs));
        const chunk = await read(position, length);
        position += length;
        sent += length;
        counters.bytesServed += length;
        counters.bytesByFile.set(file.path, (counters.bytesByFile.get(file.path) ?? 0) + length);
        servedByFile.set(file.path, total + length);
        controller.enqueue(chunk);
      },
      cancel: () => {
        if (breaker) breakers.delete(breaker);
      },
    }, { highWaterMark: 0 });
    return new Response(body, { status, headers });
  };

  const hub = Deno.serve({ hostname: "127.0.0.1", port: 0, onListen: () => {} }, hubHandler);
  const cdn = Deno.serve({ hostname: "127.0.0.1", port: 0, onListen: () => {} }, cdnHandler);
  const endpoint = `http://127.0.0.1:${hub.addr.port}`;
  const cdnUrl = `http://127.0.0.1:${cdn.addr.port}`;

  return {
    endpoint,
    cdnUrl,
    repoId,
    commit,
    counters,
    faults,
    dataRequests: () =>
      counters.requests.filter((r) =>
        r.method === "GET" && (r.server === "cdn" || r.url.includes("/resolve/"))
      ),
    reset: () => {
      counters.requests.length = 0;
      counters.bytesServed = 0;
      counters.bytesByFile.clear();
      counters.cdnSawAuthorization = false;
    },
    close: async () => {
      for (const release of breakers) release();
      breakers.clear();
      await Promise.all([hub.shutdown(), cdn.shutdown()]);
    },
  };
}

/** Size of the body chunks the servers send. */
const SERVE_CHUNK = 64 * 1024;

function notFound(code?: string): Response {
  return new Response("Not Found", {
    status: 404,
    headers: code === undefined ? {} : { "x-error-code": code },
  });
}

async function describeFile(file: HubServerFile): Promise<Served> {
  const lfs = file.lfs ?? !/\.(json|md|txt)$/.test(file.path);
  if (file.data !== undefined) {
    const data = file.data;
    return {
      path: file.path,
      size: data.length,
      lfs,
      etag: lfs ? sha256Hex(data) : gitBlobId(data),
      read: (offset, length) => Promise.resolve(data.slice(offset, offset + length)),
    };
  }
  if (file.diskPath === undefined) throw new TypeError(`file "${file.path}" has no content`);
  const diskPath = file.diskPath;
  const size = (await Deno.stat(diskPath)).size;
  // Hash once, streaming, so a benchmark's big files never sit in memory.
  const hash = createHash("sha256");
  const handle = await Deno.open(diskPath);
  const buffer = new Uint8Array(4 * 1024 * 1024);
  for (let n = await handle.read(buffer); n !== null; n = await handle.read(buffer)) {
    hash.update(buffer.subarray(0, n));
  }
  handle.close();
  return {
    path: file.path,
    size,
    lfs: true,
    etag: hash.digest("hex"),
    read: async (offset, length) => {
      const f = await Deno.open(diskPath);
      try {
        await f.seek(offset, Deno.SeekMode.Start);
        const out = new Uint8Array(length);
        let filled = 0;
        while (filled < length) {
          const n = await f.read(out.subarray(filled));
          if (n === null) break;
          filled += n;
        }
        return out;
      } finally {
        f.close();
      }
    },
  };
}

/**
 * The sha256 of bytes, as lowercase hex.
 *
 * @param data The bytes.
 * @returns 64 hex digits.
 */
export function sha256Hex(data: Uint8Array): string {
  return createHash("sha256").update(data).digest("hex");
}

function gitBlobId(data: Uint8Array): string {
  return createHash("sha1").update(`blob ${data.length}\0`).update(data).digest("hex");
}

/**
 * Encode a SafeTensors file by hand: 8-byte little-endian header length, JSON
 * header padded with spaces to 8 bytes, then the data.
 *
 * @param tensors Name → F32 values.
 * @returns The file's bytes.
 */
export function encodeSafetensors(tensors: Record<string, Float32Array>): Uint8Array {
  const header: Record<string, unknown> = { __metadata__: { format: "pt" } };
  let offset = 0;
  for (const [name, values] of Object.entries(tensors)) {
    header[name] = {
      dtype: "F32",
      shape: [values.length],
      data_offsets: [offset, offset + values.byteLength],
    };
    offset += values.byteLength;
  }
  let json = JSON.stringify(header);
  json += " ".repeat((8 - (json.length % 8)) % 8);
  const jsonBytes = new TextEncoder().encode(json);
  const out = new Uint8Array(8 + jsonBytes.length + offset);
  new DataView(out.buffer).setBigUint64(0, BigInt(jsonBytes.length), true);
  out.set(jsonBytes, 8);
  let at = 8 + jsonBytes.length;
  for (const values of Object.values(tensors)) {
    out.set(new Uint8Array(values.buffer, values.byteOffset, values.byteLength), at);
    at += values.byteLength;
  }
  return out;
}

/** Deterministic pseudo-random floats (so any corruption changes the sha256). */
function noise(count: number, seed: number): Float32Array {
  const out = new Float32Array(count);
  let x = seed >>> 0 || 1;
  for (let i = 0; i < count; i++) {
    x ^= x << 13;
    x ^= x >>> 17;
    x ^= x << 5;
    out[i] = ((x >>> 0) / 0xffffffff) * 2 - 1;
  }
  return out;
}

/** Options of {@linkcode buildTinyShardedModel}. */
export interface TinyModelOptions {
  /**
   * Approximate size of the second shard in bytes (make it a few MB for mid-body faults).
   *
   * @default {65536}
   */
  bigShardBytes?: number;
}

/**
 * A tiny valid two-shard SafeTensors model with its index, config and
 * tokenizer files, plus files a pull must NOT fetch (a stray shard, a
 * `pytorch_model.bin`, a README).
 *
 * @param options Size of the big shard.
 * @returns The repository's files.
 */
export function buildTinyShardedModel(options: TinyModelOptions = {}): HubServerFile[] {
  const bigCount = Math.max(16, Math.floor((options.bigShardBytes ?? 65536) / 4));
  const shard1 = encodeSafetensors({
    "model.embed_tokens.weight": noise(64, 1),
    "model.norm.weight": noise(8, 2),
  });
  const shard2 = encodeSafetensors({ "lm_head.weight": noise(bigCount, 3) });
  const index = {
    metadata: { total_size: 64 * 4 + 8 * 4 + bigCount * 4 },
    weight_map: {
      "model.embed_tokens.weight": "model-00001-of-00002.safetensors",
      "model.norm.weight": "model-00001-of-00002.safetensors",
      "lm_head.weight": "model-00002-of-00002.safetensors",
    },
  };
  const text = (value: unknown): Uint8Array => new TextEncoder().encode(JSON.stringify(value));
  return [
    { path: "config.json", data: text({ architectures: ["LlamaForCausalLM"], hidden_size: 8 }) },
    { path: "tokenizer_config.json", data: text({ model_max_length: 128 }) },
    { path: "generation_config.json", data: text({ max_length: 64 }) },
    { path: "model.safetensors.index.json", data: text(index) },
    { path: "model-00001-of-00002.safetensors", data: shard1 },
    { path: "model-00002-of-00002.safetensors", data: shard2 },
    { path: "model-stray.safetensors", data: encodeSafetensors({ stray: noise(16, 4) }) },
    { path: "pytorch_model.bin", data: new Uint8Array(noise(32, 5).buffer) },
    {
      path: "README.md",
      data: new TextEncoder().encode("---\nlicense: apache-2.0\n---\n# tiny model\n"),
    },
  ];
}
