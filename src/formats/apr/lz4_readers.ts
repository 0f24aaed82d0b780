// This module is browser compatible.

/**
 * Which APR readers load an LZ4-compressed APR file (flag 0x0001, one LZ4
 * block after the header), as measured with each reader's own code (issue
 * 34 §3; docs/INTEROP.md, "APR"): aprender rejects it, realizar's
 * `AprV2Model` loads it only when built with its non-default
 * `apr-compression` feature, and realizar's transformer loader — the one its
 * run paths use — rejects it in every build. `apr validate` reports it, an
 * import's note, the `--compress` help and the README say it.
 *
 * @module
 */

/** Whether one reader loads an LZ4 APR file. */
export interface Lz4ReaderSupport {
  /** The reader. */
  readonly reader: string;
  /** `"yes"`, `"no"`, or `"feature"` (only when built with a non-default feature). */
  readonly loads: "yes" | "no" | "feature";
  /** What the reader does with it, in words that follow its name. */
  readonly detail: string;
}

/** Every reader examined, and whether it loads an LZ4 APR file. */
export const LZ4_READERS: readonly Lz4ReaderSupport[] = [
  { reader: "aprkit", loads: "yes", detail: "loads it (every command)" },
  {
    reader: "realizar's AprV2Model",
    loads: "feature",
    detail: "loads it only when built with its non-default apr-compression feature " +
      "(otherwise: \"Compressed .apr files require 'apr-compression' feature\")",
  },
  {
    reader: "realizar's transformer loader",
    loads: "no",
    detail: "does not load it in any build (the loader realizar's run paths use)",
  },
  {
    reader: "aprender",
    loads: "no",
    detail: "does not load it: its reader ignores the compression flag and fails " +
      '("Metadata error: expected value at line 1 column 1")',
  },
];

/**
 * The one line an LZ4 import says about who can load its output.
 *
 * @example Usage
 * ```ts
 * import { lz4ReadersLine } from "./lz4_readers.ts";
 * console.assert(lz4ReadersLine().includes("transformer loader"));
 * ```
 *
 * @returns The line.
 */
export function lz4ReadersLine(): string {
  const none = LZ4_READERS.filter((r) => r.loads === "no").map((r) => r.reader);
  const feature = LZ4_READERS.filter((r) => r.loads === "feature").map((r) => r.reader);
  return `an LZ4-compressed APR file is loaded by aprkit, and by ${feature.join(", ")} only when ` +
    `built with its non-default apr-compression feature; ${
      none.join(" and ")
    } do not load it in any build`;
}
