// This module is browser compatible.

/**
 * OS errors that are the machine's, not aprkit's or the input's: a full disk
 * (`ENOSPC`, or a quota: `EDQUOT`) and a device I/O error (`EIO`). Deno's
 * message for them ("No space left on device (os error 28)") names no path;
 * {@linkcode storageFailure} gives them one and an operation, so the CLI can
 * print one line a user can act on, with exit code 3.
 *
 * @module
 */

import { EnvironmentError } from "../errors.ts";

const FULL = new Set(["ENOSPC", "EDQUOT"]);

function codeOf(error: unknown): string | undefined {
  const code = (error as { code?: unknown } | null)?.code;
  if (typeof code === "string") return code;
  // Some paths only carry the OS text.
  const message = error instanceof Error ? error.message : "";
  if (/No space left on device|os error 28\b/.test(message)) return "ENOSPC";
  if (/Disk quota exceeded|os error 122\b/.test(message)) return "EDQUOT";
  if (/Input\/output error|os error 5\b/.test(message)) return "EIO";
  return undefined;
}

/**
 * Whether an error is a full disk or a device I/O error.
 *
 * @param error Anything thrown.
 * @returns True for ENOSPC, EDQUOT and EIO.
 */
export function isStorageFailure(error: unknown): boolean {
  const code = codeOf(error);
  return code !== undefined && (FULL.has(code) || code === "EIO");
}

/**
 * Name the path and operation of a storage failure; other errors pass
 * through unchanged.
 *
 * @example Usage
 * ```ts
 * import { storageFailure } from "./storage_errors.ts";
 * const os = Object.assign(new Error("No space left on device (os error 28)"), { code: "ENOSPC" });
 * const e = storageFailure(os, "m.apr.partial", "write") as Error;
 * console.assert(e.message.startsWith('Cannot write "m.apr.partial": the disk is full'));
 * ```
 *
 * @param error What the operation threw.
 * @param path The file it was on.
 * @param operation What it did: `write`, `read`, `create`, `sync`…
 * @returns An {@linkcode EnvironmentError} for a storage failure, else `error`.
 */
export function storageFailure(error: unknown, path: string, operation: string): unknown {
  if (error instanceof EnvironmentError) return error;
  const code = codeOf(error);
  if (code === undefined) return error;
  if (FULL.has(code)) {
    return new EnvironmentError(
      `Cannot ${operation} "${path}": the disk is full (${code}); free some space and run the same command again (an APR import continues where it stopped with --resume)`,
      path,
      { cause: error },
    );
  }
  if (code === "EIO") {
    return new EnvironmentError(
      `Cannot ${operation} "${path}": the device reported an I/O error (EIO); check the disk, then run the same command again`,
      path,
      { cause: error },
    );
  }
  return error;
}
