/**
 * No quiet substitutes (issue 34 §2): what a user asks for is written, or
 * the run is refused before anything exists. `apr convert SRC -o x.gguf
 * --quantize q8` wrote an all-F32 GGUF with a warning (twice a BF16 source's
 * size), and `apr import x -o y.gguf` wrote an APR file named `.gguf`. One
 * rule for every command: an output extension that names another format
 * than the one written is refused.
 *
 * @module
 */

import { deepEqual, equal, ok } from "node:assert/strict";
import { join } from "node:path";
import { quantizeTargetsFor } from "../../src/quant/plan_quantization.ts";
import {
  assertOneLineError,
  DEMO_MODEL,
  exists,
  listDir,
  runApr,
  withTempDir,
} from "./_run_apr.ts";

Deno.test("apr convert refuses an APR-only quantization for GGUF and SafeTensors output", async (t) => {
  const cases: [string, string, RegExp][] = [
    [
      "x.gguf",
      "q8",
      /--quantize q8 is APR_Q8, which GGUF has no type for; gguf output takes .*q8_0/,
    ],
    ["x.gguf", "q4", /--quantize q4 is APR_Q4, which GGUF has no type for; .*q4_k_m/],
    [
      "x.safetensors",
      "q8",
      /--quantize q8 is APR_Q8, which SafeTensors has no type for; .*f16, bf16$/,
    ],
    ["x.safetensors", "q4_k", /--quantize q4_k is Q4_K, which SafeTensors has no type for/],
  ];
  for (const [out, to, pattern] of cases) {
    await t.step(`${out} --quantize ${to}`, async () => {
      await withTempDir(async (dir) => {
        const run = await runApr(["convert", DEMO_MODEL, "-o", join(dir, out), "--quantize", to]);
        assertOneLineError(run, pattern);
        deepEqual(await listDir(dir), []);
      });
    });
  }
});

Deno.test("quantizeTargetsFor() offers each format only the types it holds (the web page's list)", () => {
  const gguf = quantizeTargetsFor("gguf");
  ok(!gguf.includes("q8") && !gguf.includes("q4"), gguf.join());
  ok(gguf.includes("q8_0") && gguf.includes("q4_k_m") && gguf.includes("bf16"), gguf.join());
  deepEqual(quantizeTargetsFor("safetensors"), ["none", "f16", "bf16"]);
  const apr = quantizeTargetsFor("apr");
  ok(!apr.includes("q8_0") && apr.includes("q8") && apr.includes("q4_k_m"), apr.join());
});

Deno.test("an output extension naming another format is refused by every command", async (t) => {
  await withTempDir(async (dir) => {
    const apr = join(dir, "model.apr");
    const made = await runApr(["import", DEMO_MODEL, "-o", apr]);
    equal(made.code, 0, made.stderr);
    const cases: [string, string[], string, RegExp][] = [
      [
        "import -o y.gguf",
        ["import", DEMO_MODEL],
        "y.gguf",
        /"[^"]*y\.gguf" ends in \.gguf, but APR is what would be written: name it \.apr, or write GGUF with apr convert/,
      ],
      [
        "import -o y.safetensors",
        ["import", DEMO_MODEL],
        "y.safetensors",
        /ends in \.safetensors, but APR is what would be written/,
      ],
      [
        "convert --format gguf -o y.apr",
        ["convert", DEMO_MODEL, "--format", "gguf"],
        "y.apr",
        /ends in \.apr, but GGUF is what would be written: name it \.gguf$/,
      ],
      [
        "export --format safetensors -o y.gguf",
        ["export", apr, "--format", "safetensors"],
        "y.gguf",
        /ends in \.gguf, but SafeTensors is what would be written/,
      ],
      [
        "convert --mmproj y.apr",
        ["convert", DEMO_MODEL, "--mmproj", join(dir, "y.apr")],
        "z.gguf",
        /"[^"]*y\.apr" ends in \.apr, but GGUF is what would be written/,
      ],
    ];
    for (const [name, args, out, pattern] of cases) {
      await t.step(name, async () => {
        const run = await runApr([...args, "-o", join(dir, out)]);
        assertOneLineError(run, pattern);
        for (const file of [out, `${out}.partial`, "y.apr"]) {
          equal(await exists(join(dir, file)), false, file);
        }
      });
    }
  });
});
