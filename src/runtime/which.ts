/**
 * Which JavaScript runtime this is: the one fact every runtime seam
 * (`fs.ts`, `path.ts`, `sha256.ts`, `env.ts`) chooses by.
 *
 * This module is browser compatible.
 *
 * @module
 */

/** The runtimes aprkit runs in. */
export type RuntimeName = "deno" | "node" | "browser";

/**
 * The runtime this module was loaded in. Deno is checked first: Deno 2 also
 * defines `process` for npm compatibility.
 */
export const RUNTIME: RuntimeName = "Deno" in globalThis
  ? "deno"
  : typeof (globalThis as { process?: { versions?: { node?: unknown } } }).process?.versions
      ?.node === "string"
  ? "node"
  : "browser";

/** Whether `node:` modules can be imported (Deno and Node). */
export const HAS_NODE_MODULES: boolean = RUNTIME !== "browser";
