/**
 * Fuzzing of the files beside the tensors (issue 20 item 10; docs/SECURITY.md
 * "Fuzzing"): config.json, tokenizer.json, tokenizer_config.json,
 * generation_config.json, imatrix files (`.dat` and GGUF) and a sharded-APR
 * manifest, mutated with the values that broke readers before (counts of
 * 10^8 and 2^32, ids of -1 and 2^53, `"NaN"`, lone surrogates…), bit flips
 * and truncations. Every mutant must convert or be refused as bad input,
 * within a time bound each, leaving no partial output; the campaign runs in a
 * child whose V8 heap is capped, and whose peak resident memory is bounded,
 * so a mutant that allocates without bound fails the test.
 *
 * Seed and count: `APR_FUZZ_SEED`, `APR_FUZZ_COMPANION_MUTANTS`.
 */

import { equal, ok } from "node:assert/strict";

const SEED = Number(Deno.env.get("APR_FUZZ_SEED") ?? 20261125);
const MUTANTS = Number(Deno.env.get("APR_FUZZ_COMPANION_MUTANTS") ?? 300);
/** Longest time one mutant may take. */
const MUTANT_TIMEOUT_MS = 20_000;
/** V8 heap cap of the child, in MiB. */
const HEAP_MIB = 768;
/** Peak resident memory of the whole child (VmHWM). */
const PEAK_BYTES = 1024 * 1024 * 1024;

Deno.test({
  name: "fuzz: mutated companion, imatrix and manifest files end in success or exit 2, bounded",
  sanitizeOps: false,
  sanitizeResources: false,
  async fn() {
    const child = new Deno.Command(Deno.execPath(), {
      args: [
        "run",
        "-A",
        `--v8-flags=--max-old-space-size=${HEAP_MIB}`,
        new URL("./_companion_fuzz_child.ts", import.meta.url).pathname,
        String(SEED),
        String(MUTANTS),
        String(MUTANT_TIMEOUT_MS),
      ],
      env: { HF_HUB_OFFLINE: "1", NO_COLOR: "1" },
      stdout: "piped",
      stderr: "piped",
    }).spawn();
    let peak = 0;
    let done = false;
    const output = child.output().finally(() => (done = true));
    while (!done) {
      const status = await Deno.readTextFile(`/proc/${child.pid}/status`).catch(() => "");
      const kb = /VmHWM:\s+(\d+) kB/.exec(status)?.[1];
      if (kb !== undefined) peak = Math.max(peak, Number(kb) * 1024);
      await new Promise((r) => setTimeout(r, 50));
    }
    const { code, stdout, stderr } = await output;
    const lines = new TextDecoder().decode(stdout).trimEnd().split("\n");
    const last = lines.at(-1) ?? "";
    equal(
      code,
      0,
      `the campaign crashed (heap cap ${HEAP_MIB} MiB?) at ${lines.at(-1)}\n${
        new TextDecoder().decode(stderr).slice(-2000)
      }`,
    );
    const summary = JSON.parse(last) as { refused: number; slowest: number; failures: string[] };
    ok(summary.failures.length === 0, summary.failures.join("\n\n"));
    ok(summary.slowest < MUTANT_TIMEOUT_MS, `slowest mutant ${summary.slowest} ms`);
    ok(
      summary.refused > 0 && summary.refused < MUTANTS,
      `refused ${summary.refused} of ${MUTANTS}`,
    );
    if (peak > 0) ok(peak < PEAK_BYTES, `peak RSS ${(peak / 2 ** 20).toFixed(0)} MiB`);
    console.log(
      `companion fuzz: ${MUTANTS} mutants (seed ${SEED}): ${summary.refused} refused; ` +
        `slowest ${summary.slowest} ms; peak ${(peak / 2 ** 20).toFixed(0)} MiB`,
    );
  },
});
