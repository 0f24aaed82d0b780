/**
 * A {@linkcode ByteSource} over HTTP Range requests (DESIGN.md §2.1), so every
 * format reader works on a remote file, plus the retrying `fetch` the Hub
 * client shares. Transport faults follow FORMATS.md §4 D1–D4: a dropped body
 * continues from the byte reached, 429/5xx are retried with bounded backoff
 * honouring `Retry-After`, a Range answered 200 is read from its start with
 * the unwanted prefix discarded, and a body shorter or longer than announced
 * is never accepted, nor is a body with a `Content-Encoding` that was not
 * asked for (retried like a dropped connection).
 *
 * Nothing waits forever on a server (docs/SECURITY.md): the response headers
 * must come within a time limit, a body that sends nothing for a while is a
 * dropped connection, a body slower than a floor over a window is too (a
 * trickle defeats an idle timeout), and slow windows count against a budget
 * that progress does not reset.
 *
 * @module
 */

import { HubAnswerError, HubRequestError } from "../errors.ts";
import { assertRange, type ByteSource, DEFAULT_CHUNK_SIZE } from "./byte_source.ts";
import { parseRateLimit } from "./rate_limit.ts";

/** Retries of one request before giving up (D2: bounded). */
export const DEFAULT_RETRIES = 5;
/** First backoff delay; doubled on each retry. */
export const DEFAULT_RETRY_DELAY_MS = 500;
/** Longest wait between two attempts, also the cap on a server's `Retry-After`. */
export const DEFAULT_MAX_RETRY_DELAY_MS = 30_000;
/**
 * Longest time one request waits, in all, for rate-limit windows to reset
 * (a `RateLimit` header's `t` on HTTP 429): 5 minutes, one window of the
 * Hugging Face Hub. A reset further away fails at once, saying when.
 */
export const DEFAULT_RATE_LIMIT_BUDGET_MS = 300_000;
/** Re-resolutions of an expired signed URL (FORMATS.md §4) before a 401/403 is final. */
const MAX_REFRESHES = 3;
/** Wait for a response's headers (connect included) before the attempt counts as failed. */
export const DEFAULT_HEADER_TIMEOUT_MS = 30_000;
/** Silence in a body after which the connection counts as dropped. */
export const DEFAULT_IDLE_TIMEOUT_MS = 30_000;
/** A body averaging less than this over {@linkcode DEFAULT_SPEED_WINDOW_MS} counts as dropped (curl's --speed-limit). */
export const DEFAULT_MIN_BYTES_PER_SECOND = 1024;
/** The window of the speed floor (curl's --speed-time). */
export const DEFAULT_SPEED_WINDOW_MS = 30_000;
/** Statuses that say "try again later" (FORMATS.md D2). */
const RETRYABLE_STATUSES: ReadonlySet<number> = new Set([408, 429, 500, 502, 503, 504]);

/** How requests are retried; the same options are accepted by every Hub function. */
export interface RetryOptions {
  /**
   * Retries of a failed request (network error, 429, 5xx) or of a dropped body
   * that made no progress.
   *
   * @default {5}
   */
  retries?: number;
  /**
   * First backoff delay in milliseconds, doubled on every retry.
   *
   * @default {500}
   */
  retryDelayMs?: number;
  /**
   * Longest backoff delay, and the cap on a server's `Retry-After`.
   *
   * @default {30000}
   */
  maxRetryDelayMs?: number;
  /**
   * Most milliseconds one request waits, in all, for rate limits to reset
   * (HTTP 429 with a `RateLimit: "api";r=0;t=55` header).
   *
   * @default {300000}
   */
  rateLimitBudgetMs?: number;
  /** Told before a rate-limit wait, with a line saying how long and why. */
  onWait?: (message: string) => void;
  /** How to wait (tests pass a fast one). Default: `setTimeout`. */
  sleep?: (ms: number) => Promise<void>;
  /** The `fetch` to use. Default: the global one. */
  fetch?: typeof fetch;
  /** Aborts requests and waits. */
  signal?: AbortSignal;
  /**
   * Milliseconds to wait for a response's headers, connecting included
   * (`HF_HUB_ETAG_TIMEOUT` in seconds, through the Hub settings).
   *
   * @default {30000}
   */
  headerTimeoutMs?: number;
  /**
   * Milliseconds a body may send nothing before the connection counts as
   * dropped (`HF_HUB_DOWNLOAD_TIMEOUT` in seconds, through the Hub settings).
   *
   * @default {30000}
   */
  idleTimeoutMs?: number;
  /**
   * A body slower than this many bytes per second over `speedWindowMs` counts
   * as dropped; such slow windows are retried `retries` times in all, however
   * much progress they made. 0 disables the floor.
   *
   * @default {1024}
   */
  minBytesPerSecond?: number;
  /**
   * The window of the speed floor, in milliseconds.
   *
   * @default {30000}
   */
  speedWindowMs?: number;
}

/** A server that did not answer in time. */
class TimeoutError extends Error {
  constructor(message: string) {
    super(message);
    this.name = "TimeoutError";
  }
}

/**
 * `reader.read()`, failing with a timeout after `ms` of silence; the
 * connection is then aborted through `abort`.
 */
async function readWithin<T>(
  reader: ReadableStreamDefaultReader<T>,
  ms: number,
  abort: (reason: Error) => void,
): Promise<ReadableStreamReadResult<T>> {
  const read = reader.read();
  // The read is abandoned on a timeout and then rejects: keep that quiet.
  read.catch(() => {});
  let timer: ReturnType<typeof setTimeout> | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => {
      const error = new TimeoutError(`no data for ${ms / 1000} s`);
      abort(error);
      reject(error);
    }, ms);
  });
  try {
    return await Promise.race([read, timeout]);
  } finally {
    clearTimeout(timer);
  }
}

/**
 * Read a whole response body of at most `limit` bytes (an API answer, a small
 * file), with the idle timeout of `options`. A longer body is refused as soon
 * as it is announced or exceeded, so a server cannot exhaust memory.
 *
 * @param response The response.
 * @param limit Largest body accepted, in bytes.
 * @param what What the body is, for the message (e.g. `the file list of hf://org/name`).
 * @param options The idle timeout.
 * @returns The body's bytes.
 * @throws {HubAnswerError} When the body is larger than `limit`.
 * @throws {HubRequestError} When the body stalls or breaks.
 */
export async function readBodyLimited(
  response: Response,
  limit: number,
  what: string,
  options: RetryOptions = {},
): Promise<Uint8Array> {
  const tooLarge = (): HubAnswerError =>
    new HubAnswerError(
      `Cannot use ${what}: the answer is larger than the ${limit} bytes allowed`,
      redactUrl(response.url),
    );
  const announced = Number(response.headers.get("content-length") ?? NaN);
  if (announced > limit) {
    await response.body?.cancel().catch(() => {});
    throw tooLarge();
  }
  if (response.body === null) return new Uint8Array(0);
  const reader = response.body.getReader();
  const pieces: Uint8Array[] = [];
  let total = 0;
  try {
    for (;;) {
      const { done, value } = await readWithin(
        reader,
        options.idleTimeoutMs ?? DEFAULT_IDLE_TIMEOUT_MS,
        (reason) => void reader.cancel(reason).catch(() => {}),
      );
      if (done) break;
      total += value.byteLength;
      if (total > limit) throw tooLarge();
      pieces.push(value);
    }
  } catch (error) {
    if (error instanceof HubRequestError) throw error;
    throw new HubRequestError(
      `Cannot use ${what}: ${describe(error)}`,
      0,
      redactUrl(response.url),
      { cause: error },
    );
  } finally {
    await reader.cancel().catch(() => {});
  }
  const body = new Uint8Array(total);
  let offset = 0;
  for (const piece of pieces) {
    body.set(piece, offset);
    offset += piece.byteLength;
  }
  return body;
}

/**
 * Strip the query and any user info from a URL before it appears in a
 * message: signed CDN URLs carry credentials in their query.
 *
 * @param url The URL.
 * @returns The URL without query, fragment or credentials.
 */
export function redactUrl(url: string): string {
  try {
    const parsed = new URL(url);
    return `${parsed.protocol}//${parsed.host}${parsed.pathname}`;
  } catch {
    return url.replace(/[?#].*$/, "");
  }
}

function defaultSleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) return reject(signal.reason);
    const timer = setTimeout(() => {
      signal?.removeEventListener("abort", onAbort);
      resolve();
    }, ms);
    const onAbort = (): void => {
      clearTimeout(timer);
      reject(signal?.reason);
    };
    signal?.addEventListener("abort", onAbort, { once: true });
  });
}

/** The wait before retry number `attempt` (0-based), honouring `Retry-After`. */
function backoff(attempt: number, retryAfter: string | null, options: RetryOptions): number {
  const base = options.retryDelayMs ?? DEFAULT_RETRY_DELAY_MS;
  const max = options.maxRetryDelayMs ?? DEFAULT_MAX_RETRY_DELAY_MS;
  if (retryAfter !== null) {
    const seconds = Number(retryAfter);
    if (Number.isFinite(seconds) && seconds >= 0) return Math.min(max, seconds * 1000);
    const date = Date.parse(retryAfter);
    if (Number.isFinite(date)) return Math.min(max, Math.max(0, date - Date.now()));
  }
  return Math.min(max, base * 2 ** attempt);
}

/**
 * Wait before a retry.
 *
 * @param attempt The retry number, from 0.
 * @param retryAfter The server's `Retry-After`, if any.
 * @param options Delays and the sleep function.
 */
export function waitBeforeRetry(
  attempt: number,
  retryAfter: string | null,
  options: RetryOptions,
): Promise<void> {
  const ms = backoff(attempt, retryAfter, options);
  return options.sleep ? options.sleep(ms) : defaultSleep(ms, options.signal);
}

function describe(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}

/**
 * Origins that have answered (any status) in this process. A connection to
 * one of them that fails is a blip worth every retry; one to an origin that
 * never answered (no network, a wrong `HF_ENDPOINT`) is tried
 * {@linkcode UNREACHED_RETRIES} more time(s) only, so being offline is said
 * in about a second, not after the whole backoff.
 */
const reachedOrigins = new Set<string>();

/** Retries of a connection to an origin that has not answered yet. */
export const UNREACHED_RETRIES = 1;

function originOf(url: string): string {
  try {
    return new URL(url).origin;
  } catch {
    return url;
  }
}

/**
 * `fetch` with bounded retries of network errors, 408, 429 and 5xx
 * (FORMATS.md D2), honouring `Retry-After`. Any other response, successful or
 * not, is returned for the caller to interpret.
 *
 * @param url The URL.
 * @param init Request options (method, headers); `signal` comes from `options`.
 * @param options Retry settings.
 * @returns The first response that is not retryable.
 * @throws {HubRequestError} When every attempt failed.
 */
export async function fetchWithRetry(
  url: string,
  init: RequestInit,
  options: RetryOptions = {},
): Promise<Response> {
  const retries = options.retries ?? DEFAULT_RETRIES;
  const doFetch = options.fetch ?? fetch;
  let rateLimited = 0; // milliseconds waited for rate limits so far
  for (let attempt = 0;; attempt++) {
    let response: Response;
    // Each attempt gets its headers within the time limit or is aborted; the
    // caller's signals (its own and the options') still abort it too.
    const deadline = new AbortController();
    const signals = [deadline.signal];
    if (options.signal) signals.push(options.signal);
    if (init.signal) signals.push(init.signal);
    const headerTimeout = options.headerTimeoutMs ?? DEFAULT_HEADER_TIMEOUT_MS;
    const timer = setTimeout(
      () => deadline.abort(new TimeoutError(`no response within ${headerTimeout / 1000} s`)),
      headerTimeout,
    );
    try {
      response = await doFetch(url, { ...init, signal: AbortSignal.any(signals) });
    } catch (thrown) {
      if (options.signal?.aborted || init.signal?.aborted) throw thrown;
      const error = deadline.signal.aborted ? deadline.signal.reason : thrown;
      const origin = originOf(url);
      const unreached = !deadline.signal.aborted && !reachedOrigins.has(origin);
      if (unreached && attempt >= Math.min(retries, UNREACHED_RETRIES)) {
        throw new HubRequestError(
          `Cannot reach "${redactUrl(url)}": ${describe(error)} (${attempt + 1} attempts). ` +
            `No network? HF_HUB_OFFLINE=1 uses only what the Hugging Face cache holds; ` +
            `HF_ENDPOINT names another Hub (now ${origin})`,
          0,
          redactUrl(url),
          { cause: error },
        );
      }
      if (attempt >= retries) {
        throw new HubRequestError(
          `Cannot fetch "${redactUrl(url)}": ${describe(error)} (gave up after ${
            attempt + 1
          } attempts)`,
          0,
          redactUrl(url),
          { cause: error },
        );
      }
      await waitBeforeRetry(attempt, null, options);
      continue;
    } finally {
      clearTimeout(timer);
    }
    reachedOrigins.add(originOf(url));
    if (!RETRYABLE_STATUSES.has(response.status)) return response;
    const retryAfter = response.headers.get("retry-after");
    await response.body?.cancel().catch(() => {});
    const limit = response.status === 429
      ? parseRateLimit(response.headers.get("ratelimit"))
      : undefined;
    if (limit !== undefined && limit.resetSeconds > 0) {
      // A used-up quota: waiting for its window is the only thing that
      // helps, and a retry before then only spends another request. Waits
      // count against their own budget, not the retries.
      const budget = options.rateLimitBudgetMs ?? DEFAULT_RATE_LIMIT_BUDGET_MS;
      const ms = limit.resetSeconds * 1000;
      if (rateLimited + ms > budget) {
        throw new HubRequestError(
          `Cannot fetch "${
            redactUrl(url)
          }": rate-limited (HTTP 429, quota "${limit.policy}" resets in ${limit.resetSeconds} s), more than the ${
            Math.round((budget - rateLimited) / 1000)
          } s left of this request's ${
            budget / 1000
          } s wait budget; try again later (a token, HF_TOKEN, gets higher limits)`,
          429,
          redactUrl(url),
        );
      }
      options.onWait?.(
        `${
          new URL(url).host
        } rate-limits requests (quota "${limit.policy}" used up, HTTP 429): waiting ${limit.resetSeconds} s for it to reset`,
      );
      rateLimited += ms;
      await (options.sleep ? options.sleep(ms) : defaultSleep(ms, options.signal));
      attempt--; // not a failed attempt
      continue;
    }
    if (attempt >= retries) {
      const busy = response.status === 429 ? "too many requests" : "server error";
      throw new HubRequestError(
        `Cannot fetch "${redactUrl(url)}": ${busy} (HTTP ${response.status}) on ${
          attempt + 1
        } attempts; try again later`,
        response.status,
        redactUrl(url),
      );
    }
    await waitBeforeRetry(attempt, retryAfter, options);
  }
}

/** Where to fetch a file from, and with which headers. */
export interface HttpLocation {
  /** The URL (may be a signed CDN URL). */
  url: string;
  /** Request headers, e.g. `Authorization`. */
  headers?: Record<string, string>;
}

/** Options of {@linkcode openHttpSource}. */
export interface HttpSourceOptions extends RetryOptions {
  /** Request headers, e.g. `Authorization` (never logged). */
  headers?: Record<string, string>;
  /** The size when already known (skips the probe request). */
  size?: number;
  /** A name for messages. Default: the URL without its query. */
  name?: string;
  /**
   * Resolve the URL again after a 401 or 403, e.g. because a signed CDN URL
   * expired mid-download (FORMATS.md §4). Without it a 401/403 is final.
   */
  refresh?: () => Promise<HttpLocation>;
  /** Turn a final non-success response into an error. Default: a generic {@linkcode HubRequestError}. */
  describeError?: (response: Response, url: string) => Error;
}

/**
 * Open a URL for random-access reading with Range requests.
 *
 * @example Usage
 * ```ts ignore
 * import { openHttpSource } from "./http_source.ts";
 * const source = await openHttpSource("https://example.com/model.safetensors");
 * const header = await source.read(0, 8);
 * await source.close();
 * ```
 *
 * @param url The URL.
 * @param options Headers, known size, retries.
 * @returns The source.
 * @throws {HubRequestError} When the server refuses or cannot give the size.
 */
export async function openHttpSource(
  url: string,
  options: HttpSourceOptions = {},
): Promise<HttpSource> {
  if (options.size !== undefined) return new HttpSource(url, options.size, options);
  // Ask for one byte: Content-Range then carries the total size, which HEAD
  // behind a CDN does not always report faithfully.
  const headers = { ...options.headers, range: "bytes=0-0", "accept-encoding": "identity" };
  const response = await fetchWithRetry(url, { headers }, options);
  await response.body?.cancel().catch(() => {});
  let size: number | undefined;
  if (response.status === 206) {
    size = parseContentRange(response.headers.get("content-range"))?.total;
  } else if (response.ok) {
    const length = Number(response.headers.get("content-length") ?? NaN);
    if (Number.isSafeInteger(length)) size = length;
  } else if (response.status === 416) {
    size = 0;
  } else {
    throw (options.describeError ?? defaultDescribeError)(response, url);
  }
  if (size === undefined) {
    throw new HubRequestError(
      `Cannot read "${redactUrl(url)}": the server did not say how large the file is`,
      response.status,
      redactUrl(url),
    );
  }
  return new HttpSource(url, size, options);
}

function defaultDescribeError(response: Response, url: string): Error {
  return new HubRequestError(
    `Cannot fetch "${redactUrl(url)}": HTTP ${response.status} ${response.statusText}`.trimEnd(),
    response.status,
    redactUrl(url),
  );
}

/** A parsed `Content-Range: bytes a-b/total`. */
interface ContentRange {
  start: number;
  end: number;
  total: number | undefined;
}

function parseContentRange(value: string | null): ContentRange | undefined {
  const match = value === null ? null : /^bytes (\d+)-(\d+)\/(\d+|\*)$/.exec(value.trim());
  if (!match) return undefined;
  return {
    start: Number(match[1]),
    end: Number(match[2]),
    total: match[3] === "*" ? undefined : Number(match[3]),
  };
}

/**
 * A remote file as a ByteSource. Each `read()` or `stream()` is one Range
 * request (resumed from the byte reached if the connection drops), so
 * concurrent calls are independent and nothing is buffered beyond a chunk.
 */
export class HttpSource implements ByteSource {
  /** The URL without its query, for messages. */
  readonly name: string;
  /** Size in bytes. */
  readonly size: number;
  #location: HttpLocation;
  #options: HttpSourceOptions;
  #closed = false;
  #refreshing: Promise<void> | undefined;

  /**
   * Wrap a URL of known size. Prefer {@linkcode openHttpSource}.
   *
   * @param url The URL.
   * @param size Its size in bytes.
   * @param options Headers, retries, refresh.
   * @throws {RangeError} When `size` is not a whole number of bytes.
   */
  constructor(url: string, size: number, options: HttpSourceOptions = {}) {
    if (!Number.isSafeInteger(size) || size < 0) {
      throw new RangeError(`Cannot read "${redactUrl(url)}": size ${size} is not valid`);
    }
    this.name = options.name ?? redactUrl(url);
    this.size = size;
    this.#options = options;
    this.#location = options.headers === undefined ? { url } : { url, headers: options.headers };
  }

  /**
   * Read exactly `length` bytes at `offset`.
   *
   * @param offset First byte.
   * @param length Number of bytes.
   * @returns The bytes.
   * @throws {RangeError} When the range is outside the source (offset or length not whole, or past its end).
   * @throws {HubRequestError} When the server refuses or keeps failing after the retries.
   */
  async read(offset: number, length: number): Promise<Uint8Array> {
    assertRange(this.name, this.size, offset, length);
    const result = new Uint8Array(length);
    let filled = 0;
    for await (const piece of this.pieces(offset, offset + length)) {
      result.set(piece, filled);
      filled += piece.length;
    }
    return result;
  }

  /**
   * Stream `[start, end)` in fresh chunks of at most `chunkSize` bytes, from one Range request.
   *
   * @param start First byte.
   * @param end One past the last byte.
   * @param chunkSize Largest chunk.
   * @returns The chunks.
   * @throws {RangeError} When the range is outside the source (offset or length not whole, or past its end). Also for a chunk size that is not positive.
   * @throws {HubRequestError} Through the stream, when the server refuses or keeps failing.
   */
  stream(
    start: number,
    end: number,
    chunkSize: number = DEFAULT_CHUNK_SIZE,
  ): ReadableStream<Uint8Array> {
    assertRange(this.name, this.size, start, end - start);
    if (!Number.isSafeInteger(chunkSize) || chunkSize <= 0) {
      throw new RangeError(`Cannot stream "${this.name}": chunk size ${chunkSize} is not positive`);
    }
    // Cancelling must not wait behind a read the server never answers: an
    // async generator's return() queues after its pending next(), which a
    // stalled body would hold for every idle timeout and retry (minutes).
    const cancelled = new AbortController();
    const pieces = this.pieces(start, end, cancelled.signal);
    let position = start;
    let carry: Uint8Array | undefined;
    return new ReadableStream<Uint8Array>({
      async pull(controller) {
        if (position >= end) {
          controller.close();
          return;
        }
        // Fill one fresh chunk from the network pieces; a piece that
        // straddles two chunks is carried over, never concatenated whole.
        const chunk = new Uint8Array(Math.min(chunkSize, end - position));
        let filled = 0;
        while (filled < chunk.length) {
          let piece = carry;
          carry = undefined;
          if (piece === undefined) {
            const next = await pieces.next();
            if (next.done) break;
            piece = next.value;
          }
          const take = Math.min(piece.length, chunk.length - filled);
          chunk.set(piece.subarray(0, take), filled);
          filled += take;
          if (take < piece.length) carry = piece.subarray(take);
        }
        position += filled;
        controller.enqueue(filled === chunk.length ? chunk : chunk.subarray(0, filled));
      },
      async cancel(reason) {
        cancelled.abort(reason);
        await pieces.return(undefined).catch(() => {});
      },
    }, { highWaterMark: 1 });
  }

  /**
   * The bytes `[start, end)` as they arrive from the network (pieces of any
   * size, views the caller must copy to keep beyond the next step). Handles
   * D1 (resume with Range), D3 (200 instead of 206), D4 (wrong length) and
   * expired signed URLs.
   *
   * @param start First byte.
   * @param end One past the last byte.
   * @param signal Gives up at once when aborted, dropping the connection in flight.
   * @returns The pieces, in order, exactly covering the range.
   * @throws {RangeError} When the range is outside the source (offset or length not whole, or past its end).
   * @throws {HubRequestError} When the server refuses or keeps failing after the retries.
   * @throws {DOMException} With `signal`'s reason, when it aborts.
   */
  async *pieces(
    start: number,
    end: number,
    signal?: AbortSignal,
  ): AsyncGenerator<Uint8Array, void, undefined> {
    assertRange(this.name, this.size, start, end - start);
    const retries = this.#options.retries ?? DEFAULT_RETRIES;
    let position = start;
    let failures = 0;
    let slowWindows = 0;
    let refreshes = 0;
    const minSpeed = this.#options.minBytesPerSecond ?? DEFAULT_MIN_BYTES_PER_SECOND;
    const speedWindow = minSpeed > 0
      ? this.#options.speedWindowMs ?? DEFAULT_SPEED_WINDOW_MS
      : Number.POSITIVE_INFINITY;
    // The speed floor's window spans responses and counts the wait for each
    // response too: a server answering every request with a byte or two, or
    // dropping each connection after a little progress, is as slow as a trickle.
    let windowWaitMs = 0;
    let windowBytes = 0;
    while (position < end) {
      if (this.#closed) throw new TypeError(`Cannot read "${this.name}": the source is closed`);
      signal?.throwIfAborted();
      const { url, headers } = this.#location;
      // Aborted when the body goes silent or too slow, to drop the connection,
      // or when the caller gives up (`signal`).
      const connection = new AbortController();
      const requested = performance.now();
      const response = await fetchWithRetry(url, {
        headers: {
          ...headers,
          range: `bytes=${position}-${end - 1}`,
          "accept-encoding": "identity",
        },
        signal: signal ? AbortSignal.any([connection.signal, signal]) : connection.signal,
      }, this.#options);
      windowWaitMs += performance.now() - requested;
      if (
        (response.status === 401 || response.status === 403) && this.#options.refresh &&
        refreshes < MAX_REFRESHES
      ) {
        // A signed CDN URL expired mid-download: resolve it again (FORMATS.md §4).
        await response.body?.cancel().catch(() => {});
        refreshes++;
        await this.#refresh(url);
        continue;
      }
      if (!response.ok) {
        await response.body?.cancel().catch(() => {});
        throw (this.#options.describeError ?? defaultDescribeError)(response, url);
      }
      const encoding = response.headers.get("content-encoding")?.trim().toLowerCase();
      if (encoding !== undefined && encoding !== "" && encoding !== "identity") {
        // Asked for "identity": an encoded body's bytes are not the file's, and
        // spliced with a later plain answer they would be kept as if they were.
        await response.body?.cancel().catch(() => {});
        if (++failures > retries) {
          throw this.#protocolError(
            `the server sent it encoded as ${
              JSON.stringify(encoding.slice(0, 40))
            } (Content-Encoding) ${failures} times, though the request asked for the plain bytes; nothing of it was kept`,
            response.status,
          );
        }
        await waitBeforeRetry(failures - 1, null, this.#options);
        continue;
      }
      // `skip` bytes of the body precede `position`; the body should end at `bodyEnd`.
      let skip = 0;
      let bodyEnd: number;
      if (response.status === 206) {
        const range = parseContentRange(response.headers.get("content-range"));
        if (range === undefined || range.start !== position || range.end >= end) {
          await response.body?.cancel().catch(() => {});
          throw this.#protocolError(
            `asked for bytes ${position}-${end - 1}, the server sent ${
              response.headers.get("content-range") ?? "no Content-Range"
            }`,
            response.status,
          );
        }
        this.#checkTotal(range.total, response);
        bodyEnd = range.end + 1;
      } else {
        // D3: the Range was ignored and the whole file is coming. Read it
        // from its start and discard the bytes before `position`: the result
        // is that of a clean restart, and nothing is written twice or out of place.
        const length = response.headers.get("content-length");
        this.#checkTotal(length === null ? undefined : Number(length), response);
        skip = position;
        bodyEnd = this.size;
      }
      if (response.body === null) {
        throw this.#protocolError("the response has no body", response.status);
      }
      const reader = response.body.getReader();
      const idle = this.#options.idleTimeoutMs ?? DEFAULT_IDLE_TIMEOUT_MS;
      const drop = (reason: Error): void => connection.abort(reason);
      let progressed = false;
      let dropped: unknown;
      let slow = false;
      // Only the time spent waiting for the server counts, not the consumer's.
      try {
        while (position < end) {
          let result: ReadableStreamReadResult<Uint8Array>;
          const waitStart = performance.now();
          try {
            result = await readWithin(reader, idle, drop);
            windowWaitMs += performance.now() - waitStart;
          } catch (error) {
            if (this.#options.signal?.aborted || signal?.aborted) throw error;
            dropped = error; // D1: the connection dropped mid-body (or went silent).
            break;
          }
          if (result.done) {
            // A body ending early is a drop (D1/D4); one ending where its
            // Content-Range said is a short answer: ask for the rest.
            if (position < bodyEnd) {
              dropped = new Error(`the body ended at byte ${position + skip} of ${bodyEnd}`);
            }
            break;
          }
          let piece = result.value;
          if (skip > 0) {
            const drop = Math.min(skip, piece.length);
            skip -= drop;
            piece = piece.subarray(drop);
            if (piece.length === 0) continue;
          }
          if (position + piece.length > bodyEnd) {
            // D4: more bytes than the server announced.
            throw this.#protocolError(
              `the server sent more bytes than the ${bodyEnd - position} it announced`,
              response.status,
            );
          }
          if (position + piece.length > end) piece = piece.subarray(0, end - position);
          position += piece.length;
          progressed = true;
          windowBytes += piece.length;
          yield piece;
          if (windowWaitMs >= speedWindow) {
            if (windowBytes * 1000 < minSpeed * windowWaitMs && position < end) {
              // A trickle keeps an idle timeout from firing: drop it, and count it.
              slow = true;
              dropped = new TimeoutError(
                `slower than ${minSpeed} bytes/s over ${speedWindow / 1000} s`,
              );
              windowWaitMs = 0;
              windowBytes = 0;
              drop(dropped as Error);
              break;
            }
            windowWaitMs = 0;
            windowBytes = 0;
          }
        }
        if (dropped === undefined && bodyEnd === end) {
          // The body should end exactly here; anything more is D4.
          const extra = await readWithin(reader, idle, drop).catch(() => ({
            done: true,
            value: undefined,
          }));
          if (!extra.done && extra.value !== undefined && extra.value.length > 0) {
            throw this.#protocolError(
              `the server sent more bytes than the ${end - start} announced`,
              response.status,
            );
          }
        }
      } finally {
        await reader.cancel().catch(() => {});
      }
      if (dropped !== undefined) {
        // Progress resets the count: a long download may survive many drops,
        // but a connection that never advances gives up after `retries`.
        // Slow windows have a budget of their own that progress does not reset.
        if (slow && ++slowWindows > retries) {
          throw new HubRequestError(
            `Cannot download "${this.name}": the server stayed ${
              describe(dropped)
            } (${slowWindows} times)`,
            0,
            this.name,
            { cause: dropped },
          );
        }
        failures = progressed && !slow ? 1 : failures + 1;
        if (failures > retries) {
          throw new HubRequestError(
            `Cannot download "${this.name}": the connection dropped at byte ${position} ${failures} times without progress (${
              describe(dropped)
            })`,
            0,
            this.name,
            { cause: dropped },
          );
        }
        await waitBeforeRetry(failures - 1, null, this.#options);
      }
    }
  }

  #checkTotal(total: number | undefined, response: Response): void {
    if (total !== undefined && total !== this.size) {
      throw this.#protocolError(
        `the file was announced as ${this.size} bytes but the server now serves ${total} bytes`,
        response.status,
      );
    }
  }

  #protocolError(reason: string, status: number): HubRequestError {
    return new HubRequestError(`Cannot download "${this.name}": ${reason}`, status, this.name);
  }

  #refresh(staleUrl: string): Promise<void> {
    // Concurrent ranges that all hit the expiry share one re-resolution.
    if (this.#location.url !== staleUrl) return Promise.resolve();
    this.#refreshing ??= this.#options.refresh!().then((location) => {
      this.#location = location;
    }).finally(() => {
      this.#refreshing = undefined;
    });
    return this.#refreshing;
  }

  /**
   * Stop further requests. Requests in flight finish or fail on their own.
   * Never throws.
   *
   * @returns At once.
   */
  close(): Promise<void> {
    this.#closed = true;
    return Promise.resolve();
  }
}
