/**
 * One budget for a model's companion data (issue 34 §1, "Memory";
 * `src/formats/safetensors/companion_limits.ts` `CompanionBudget`): chat
 * templates had a per-file limit and no total (one 30 MiB
 * `chat_template.jinja` peaked at 750 MB; 40 × 30 MiB additional templates
 * at ~5 GB before the refusal), and a `tokenizer.json` of 5 million merges
 * (76 MB) at 810 MB, exit 0. Each is now refused before it is read: exit 2,
 * one line naming the file, nothing written, and a peak (VmHWM of the child
 * process, as tests/cli/hub_no_cache_memory_test.ts measures it) near the
 * runtime's own.
 *
 * @module
 */

import { equal, ok } from "node:assert/strict";
import { join } from "node:path";
import {
  assertOneLineError,
  copyModel,
  DEMO_MODEL,
  exists,
  runAprPeakRss,
  withTempDir,
} from "./_run_apr.ts";

const MIB = 1024 * 1024;

/**
 * Measured after the fix: 70–75 MiB for each case (the runtime and the
 * model's headers); before it, 660 MiB for the 30 MiB template here.
 */
const PEAK_RSS_LIMIT = 200 * MIB;

const HAS_PROC = await Deno.stat("/proc/self/status").then(() => true, () => false);

/** The demo model copied to `dir/model`, with `add` writing extra files into it. */
async function model(dir: string, add: (folder: string) => Promise<void>): Promise<string> {
  const folder = await copyModel(dir, DEMO_MODEL);
  await add(folder);
  return folder;
}

const CASES: [string, (folder: string) => Promise<void>, RegExp][] = [
  [
    "one 30 MiB chat_template.jinja",
    (folder) =>
      Deno.writeTextFile(join(folder, "chat_template.jinja"), "{{ x }}".repeat(30 * MIB / 7)),
    /chat_template\.jinja.*over the 1048576-character budget for all of them/,
  ],
  [
    "40 additional templates of 1 MiB",
    async (folder) => {
      await Deno.writeTextFile(join(folder, "chat_template.jinja"), "{{ x }}");
      await Deno.mkdir(join(folder, "additional_chat_templates"));
      for (let i = 0; i < 40; i++) {
        await Deno.writeTextFile(
          join(folder, "additional_chat_templates", `t${i}.jinja`),
          "x".repeat(MIB),
        );
      }
    },
    /additional_chat_templates\/t\d+\.jinja.*over the 1048576-character budget for all of them/,
  ],
  [
    "a tokenizer.json of 5 million merges (76 MB)",
    async (folder) => {
      const path = join(folder, "tokenizer.json");
      const tokenizer = JSON.parse(await Deno.readTextFile(path)) as { model: { merges: unknown } };
      const merge = JSON.stringify("abcdef ghijk");
      tokenizer.model.merges = "MERGES";
      const [head, tail] = JSON.stringify(tokenizer).split('"MERGES"') as [string, string];
      using file = await Deno.open(path, { write: true, truncate: true });
      const encoder = new TextEncoder();
      const write = async (text: string) => {
        const bytes = encoder.encode(text);
        for (let done = 0; done < bytes.length;) done += await file.write(bytes.subarray(done));
      };
      await write(`${head}[${merge}`);
      const block = `,${merge}`.repeat(100_000);
      for (let i = 0; i < 50; i++) await write(block);
      await write(`]${tail}`);
    },
    /tokenizer\.json.*bring the model's companion files to \d+ bytes, over the 67108864-byte budget/,
  ],
];

Deno.test("companion data past its one budget is refused before it is read, in small memory", async (t) => {
  for (const [name, add, pattern] of CASES) {
    await t.step(name, async () => {
      await withTempDir(async (dir) => {
        const folder = await model(dir, add);
        const out = join(dir, "x.apr");
        const { run, peakBytes } = await runAprPeakRss(["import", folder, "-o", out]);
        assertOneLineError(run, pattern);
        equal(await exists(out), false);
        equal(await exists(`${out}.partial`), false);
        if (HAS_PROC) {
          ok(peakBytes !== undefined && peakBytes < PEAK_RSS_LIMIT, `peak RSS ${peakBytes} bytes`);
        }
      });
    });
  }
});
