/**
 * Child process of the sub-tensor resume test: imports SOURCE into OUT with
 * `importModel()`, committing every 64 KiB, and kills itself with SIGKILL
 * (no cleanup of any kind runs) as soon as a journal in OUT's folder records
 * a commit inside a tensor. Exits 0 only if the import finished first (the
 * test then tries again).
 *
 * With `APR_KILL_ON=commit` in the environment it kills itself after the
 * first commit of any kind instead (for models whose tensors are smaller
 * than a commit).
 *
 * Usage: deno run -A tests/pipeline/_kill_child.ts SOURCE OUT QUANTIZE [MAX_SHARD_SIZE]
 *
 * @module
 */

import { dirname } from "node:path";
import { importModel, type QuantizeTarget } from "../../src/pipeline/convert_model.ts";

const [source, out, quantize, maxShard] = Deno.args;
if (source === undefined || out === undefined || quantize === undefined) {
  throw new TypeError("usage: _kill_child.ts SOURCE OUT QUANTIZE [MAX_SHARD_SIZE]");
}
const dir = dirname(out);

const mark = Deno.env.get("APR_KILL_ON") === "commit" ? '"crc"' : '"reached"';

function committedInsideATensor(): boolean {
  for (const e of Deno.readDirSync(dir)) {
    if (!e.name.endsWith(".partial.journal")) continue;
    if (Deno.readTextFileSync(`${dir}/${e.name}`).includes(mark)) return true;
  }
  return false;
}

await importModel(source, out, {
  quantize: quantize as QuantizeTarget,
  commitBytes: 64 * 1024,
  ...(maxShard === undefined ? {} : { maxShardSize: Number(maxShard) }),
  onProgress: () => {
    if (committedInsideATensor()) Deno.kill(Deno.pid, "SIGKILL");
    // Slow the writes down (a blocking sleep per chunk) so that a commit's
    // fdatasync, running beside them, lands while the tensor is still being
    // written even on a busy disk.
    Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, 30);
  },
});
