// This module is browser compatible.

/**
 * What APR readers do with a sharded APR set (`--max-shard-size`: shards
 * plus a JSON manifest), as measured with each reader's own code (issue 34
 * §3): none but aprkit joins the shards. aprender and realizar's
 * `AprV2Model` read one shard as a whole model; realizar's transformer
 * loader given shard 1 fills the tensors it does not find with zeros and
 * ones and loads — a wrong model, without an error. An import's note and
 * docs/INTEROP.md say it from here.
 *
 * @module
 */

/**
 * The one line a sharded APR import says about who can read its output.
 *
 * @example Usage
 * ```ts
 * import { shardSetReadersLine } from "./shard_set_readers.ts";
 * console.assert(shardSetReadersLine(3).startsWith("3 APR shards"));
 * ```
 *
 * @param shards How many shards were written.
 * @returns The line.
 */
export function shardSetReadersLine(shards: number): string {
  return `${shards} APR shards and a manifest: only aprkit joins a sharded APR set; aprender and ` +
    "realizar read one shard as a whole model, and realizar's transformer loader given shard 1 " +
    "fills the tensors it lacks with zeros and ones and runs a wrong model (write one file for " +
    "them: no --max-shard-size)";
}
