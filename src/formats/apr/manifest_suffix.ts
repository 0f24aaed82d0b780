// This module is browser compatible.

/**
 * The sharded APR manifest's file name suffix, apart from the manifest's
 * codec (`sharded_manifest.ts`), so that telling a manifest by its name loads
 * no APR code (start-up: docs/BENCHMARKS.md, "Fixed costs per run").
 *
 * @module
 */

/** The manifest file name suffix: `NAME.apr.manifest.json`. */
export const APR_MANIFEST_SUFFIX = ".apr.manifest.json";
