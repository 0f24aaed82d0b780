// This module is browser compatible.

/**
 * Error classes, used the same way by every public function:
 *
 * - a file whose bytes are wrong: {@linkcode ModelFormatError};
 * - a path that does not exist (a source, an output's folder): `NotFound`
 *   (`Deno.errors.NotFound` in Deno; a class of that name in Node and
 *   browsers, src/runtime/fs.ts);
 * - a request the input or options cannot satisfy — an unknown target or
 *   format, a tensor the model lacks, an output that exists without
 *   `force: true`, options that do not combine: {@linkcode UsageError} (a
 *   `TypeError`), its message naming the library option (`force: true`);
 * - a server that refuses: {@linkcode HubRequestError} ({@linkcode HubUnreachableError}
 *   when there is no connection but the cache holds the model);
 * - the machine failing an operation (a full disk, an I/O error):
 *   {@linkcode EnvironmentError};
 * - a malformed argument to a low-level API (a negative size, chunks out of
 *   protocol order): `TypeError` or `RangeError`, before any I/O.
 *
 * Each function's `@throws` tags say which apply. The CLI turns them into
 * one line and exit code 2 (bad input or usage) or 3 (the environment: a full
 * disk, a network or server failure), naming its flags (`--force`) instead of
 * options.
 *
 * @module
 */

/** Which file format a {@linkcode ModelFormatError} concerns. */
export type FormatName =
  | "APR"
  | "SafeTensors"
  | "SafeTensors index"
  | "GGUF"
  | "QNAT"
  | "imatrix"
  | "JSON"
  | "chat template"
  | "model card"
  | "model";

/** Options of {@linkcode ModelFormatError}. */
export interface ModelFormatErrorOptions extends ErrorOptions {
  /** Byte offset in the file where the problem was found. */
  offset?: number;
}

/**
 * A file is malformed: do not retry, fix the file. Carries the format, the
 * file's path or URL, and the byte offset where the problem was found.
 *
 * @example Usage
 * ```ts
 * import { ModelFormatError } from "./errors.ts";
 * const e = new ModelFormatError("APR", "m.apr", "wrong magic", { offset: 0 });
 * console.assert(e.message === 'Cannot read APR file "m.apr": wrong magic (at byte 0)');
 * ```
 */
export class ModelFormatError extends SyntaxError {
  /** The format being read. */
  readonly format: FormatName;
  /** Path or URL of the file. */
  readonly path: string;
  /** Byte offset of the problem, when it is known. */
  readonly offset: number | undefined;
  /** The rule that was broken, without the file name. */
  readonly reason: string;

  /**
   * Describe a malformed file.
   *
   * @param format The format being read.
   * @param path Path or URL of the file.
   * @param reason What is wrong, e.g. `"header CRC mismatch"`.
   * @param options Byte offset and cause.
   */
  constructor(
    format: FormatName,
    path: string,
    reason: string,
    options: ModelFormatErrorOptions = {},
  ) {
    const at = options.offset === undefined ? "" : ` (at byte ${options.offset})`;
    super(`Cannot read ${format} file "${path}": ${reason}${at}`, options);
    this.name = "ModelFormatError";
    this.format = format;
    this.path = path;
    this.offset = options.offset;
    this.reason = reason;
  }
}

/**
 * A Hugging Face Hub (or any HTTP) request failed in a way retries did not
 * fix. `status` is the HTTP status, or 0 when no response arrived.
 */
export class HubRequestError extends Error {
  /** HTTP status, 0 for a network failure. */
  readonly status: number;
  /** The URL requested (never carries the token). */
  readonly url: string;

  /**
   * Describe a failed request.
   *
   * @param message What failed, for the user.
   * @param status HTTP status, 0 for a network failure.
   * @param url The URL requested.
   * @param options The cause.
   */
  constructor(message: string, status: number, url: string, options?: ErrorOptions) {
    super(message, options);
    this.name = "HubRequestError";
    this.status = status;
    this.url = url;
  }
}

/**
 * `HF_HUB_OFFLINE` is set and what was asked needs the network (the files
 * are not in the cache). The user's setting to change, so the CLI exits 2.
 */
export class HubOfflineError extends HubRequestError {
  /**
   * Describe what offline mode could not do.
   *
   * @param message What is missing, for the user.
   * @param name The model reference.
   */
  constructor(message: string, name: string) {
    super(message, 0, name);
    this.name = "HubOfflineError";
  }
}

/**
 * No connection to the Hub, while the cache holds the revision's snapshot:
 * the caller may read the cache instead (and say so).
 */
export class HubUnreachableError extends HubRequestError {
  /** The commit of the cached snapshot. */
  readonly cachedCommit: string;

  /**
   * Wrap a network failure.
   *
   * @param error The network failure (status 0).
   * @param cachedCommit The commit of the cached snapshot.
   */
  constructor(error: HubRequestError, cachedCommit: string) {
    super(error.message, 0, error.url, { cause: error.cause ?? error });
    this.name = "HubUnreachableError";
    this.cachedCommit = cachedCommit;
  }
}

/**
 * A server answered, but what it said cannot be used: a file name that would
 * leave the cache, a malformed commit id or ETag, content whose sha256 differs
 * from what was announced, a JSON body over its size limit. Like a malformed
 * file, this is not retried; the CLI reports it with exit code 2.
 *
 * @example Usage
 * ```ts
 * import { HubAnswerError } from "./errors.ts";
 * const e = new HubAnswerError("Cannot use the file list: bad name", "https://hub/api");
 * console.assert(e.status === 200 && e.url === "https://hub/api");
 * ```
 */
export class HubAnswerError extends HubRequestError {
  /**
   * Describe an unusable answer.
   *
   * @param message What is wrong, naming the entry.
   * @param url The URL that gave the answer (without the token).
   * @param options The cause.
   */
  constructor(message: string, url: string, options?: ErrorOptions) {
    super(message, 200, url, options);
    this.name = "HubAnswerError";
  }
}

/**
 * What was asked cannot be done as asked: an unknown option value (format,
 * quantization target), a tensor name the model lacks, an output that exists
 * without `force: true`, options that do not combine; in the CLI, also an
 * unknown flag or a missing argument. The CLI prints the message and exits 2.
 */
export class UsageError extends TypeError {
  /**
   * Describe a usage mistake.
   *
   * @param message What is wrong, for the user.
   * @param options The cause.
   */
  constructor(message: string, options?: ErrorOptions) {
    super(message, options);
    this.name = "UsageError";
  }
}

/**
 * The machine failed an operation that was right to ask for: the disk is
 * full, a device reported an I/O error. Neither a bug nor bad input: the CLI
 * exits 3 with the path, the operation and what to do (free space, then
 * `--resume`). Network failures are {@linkcode HubRequestError}s, which the
 * CLI also reports with exit code 3 when they are not the request's fault.
 *
 * @example Usage
 * ```ts
 * import { EnvironmentError } from "./errors.ts";
 * const e = new EnvironmentError('Cannot write "m.apr.partial": the disk is full', "m.apr.partial");
 * console.assert(e.path === "m.apr.partial");
 * ```
 */
export class EnvironmentError extends Error {
  /** The file (or URL) the failed operation was on. */
  readonly path: string;

  /**
   * Describe a failure of the environment.
   *
   * @param message What failed, on which path, and the fix.
   * @param path The file or URL.
   * @param options The cause (the OS error).
   */
  constructor(message: string, path: string, options?: ErrorOptions) {
    super(message, options);
    this.name = "EnvironmentError";
    this.path = path;
  }
}
