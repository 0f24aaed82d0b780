// This module is browser compatible.

/**
 * Which APR readers load an LZ4-compressed APR file (flag 0x0001, one LZ4
 * block after the header), as their public sources say (docs/INTEROP.md,
 * "APR"). `apr validate` reports it, the `--compress` help and the README
 * say it.
 *
 * @module
 */

/** Whether one reader loads an LZ4 APR file. */
export interface Lz4ReaderSupport {
  /** The reader. */
  readonly reader: "aprkit" | "realizar" | "aprender";
  /** `"yes"`, `"no"`, or `"feature"` (only when built with a non-default feature). */
  readonly loads: "yes" | "no" | "feature";
  /** What the reader does with it, in words that follow its name. */
  readonly detail: string;
}

/** Every reader examined, and whether it loads an LZ4 APR file. */
export const LZ4_READERS: readonly Lz4ReaderSupport[] = [
  { reader: "aprkit", loads: "yes", detail: "loads it (every command)" },
  {
    reader: "realizar",
    loads: "feature",
    detail: "loads it only when built with its non-default apr-compression feature " +
      "(otherwise: \"Compressed .apr files require 'apr-compression' feature\")",
  },
  {
    reader: "aprender",
    loads: "no",
    detail: "does not load it: its reader ignores the compression flag and fails " +
      '("Metadata error: expected value at line 1 column 1")',
  },
];
