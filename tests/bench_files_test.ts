/**
 * `deno bench` (`deno task bench`) picks up every `*_bench.ts` in bench/ and
 * prints a table for each: a file that registers no `Deno.bench` prints an
 * empty one. Whole-run measurements are `deno run` scripts named `*_measure.ts`.
 *
 * @module
 */

import { deepEqual } from "node:assert/strict";

Deno.test("every bench/*_bench.ts registers a Deno.bench; scripts are *_measure.ts", async () => {
  const empty: string[] = [];
  for await (const entry of Deno.readDir(new URL("../bench/", import.meta.url))) {
    if (!entry.isFile || !/(^|[_.])bench\.(ts|js|mjs)$/.test(entry.name)) continue;
    const text = await Deno.readTextFile(new URL(`../bench/${entry.name}`, import.meta.url));
    if (!/\bDeno\.bench\(/.test(text)) empty.push(entry.name);
  }
  deepEqual(empty.sort(), [], "bench files without a Deno.bench (rename them *_measure.ts)");
});
