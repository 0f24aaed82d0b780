/**
 * Bounded memory for split GGUF sets (issue 25 items 1 and 2): writing a set
 * of 128 MiB tensors with `maxShardSize`, and importing it back from one of
 * its shards, each stays under the import's bound (DESIGN.md §1.2) — no
 * shard, and no tensor, is ever held whole.
 *
 * @module
 */

import { equal, ok } from "node:assert/strict";
import { withTempDir, writeBigSafetensors } from "./_helpers.ts";

const CHILD = new URL("./_import_child.ts", import.meta.url).pathname;
const MIB = 1024 * 1024;
/** The import bound of memory_test.ts. */
const PEAK_RSS_LIMIT = 160 * MIB;
const HAS_PROC = await Deno.stat("/proc/self/status").then(() => true, () => false);

/** Run `convertModel(source, out, options)` in a child; its peak RSS and result. */
async function peakRssOf(script: string): Promise<{ peakRss: number; result: unknown }> {
  const output = await new Deno.Command(Deno.execPath(), {
    args: ["eval", "--ext=ts", script],
    stdout: "piped",
    stderr: "piped",
  }).output();
  equal(output.code, 0, new TextDecoder().decode(output.stderr));
  return JSON.parse(new TextDecoder().decode(output.stdout));
}

Deno.test({
  name:
    "writing and reading a split GGUF set of 128 MiB tensors stays under the import's memory bound",
  ignore: !HAS_PROC,
  fn: async () => {
    await withTempDir(async (dir) => {
      await writeBigSafetensors(`${dir}/big.safetensors`, {
        "model.layers.0.mlp.weight": 32 << 20,
        "model.layers.1.mlp.weight": 32 << 20,
        "model.layers.2.mlp.weight": 32 << 20,
      });
      const convert = new URL("../../src/pipeline/convert_model.ts", import.meta.url).href;
      const write = await peakRssOf(`
        import { convertModel } from "${convert}";
        const result = await convertModel("${dir}/big.safetensors", "${dir}/set.gguf",
          { maxShardSize: 130 * 1024 * 1024 });
        const kib = Number(/^VmHWM:\\s+(\\d+) kB$/m.exec(Deno.readTextFileSync("/proc/self/status"))?.[1]);
        console.log(JSON.stringify({ peakRss: kib * 1024, result }));
      `);
      equal((write.result as { shards: string[] }).shards.length, 3);
      await Deno.remove(`${dir}/big.safetensors`);
      const output = await new Deno.Command(Deno.execPath(), {
        args: ["run", "-A", CHILD, `${dir}/set-00002-of-00003.gguf`, `${dir}/out.apr`, "none"],
        stdout: "piped",
        stderr: "piped",
      }).output();
      equal(output.code, 0, new TextDecoder().decode(output.stderr));
      const read = JSON.parse(new TextDecoder().decode(output.stdout));
      equal(read.result.tensors, 3);
      const mib = (n: number) => `${(n / MIB).toFixed(1)} MiB`;
      console.log(`peak RSS: split write ${mib(write.peakRss)}, split read ${mib(read.peakRss)}`);
      ok(write.peakRss < PEAK_RSS_LIMIT, `write: ${mib(write.peakRss)}`);
      ok(read.peakRss < PEAK_RSS_LIMIT, `read: ${mib(read.peakRss)}`);
    });
  },
});
