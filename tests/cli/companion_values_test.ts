/**
 * Hostile values in companion files (issue 20 items 1 and 7; docs/SECURITY.md
 * "Companion files"): the demo model with one field of config.json or
 * tokenizer.json edited. Each must be refused at once — exit 2, one line
 * naming the file and the field — in small memory, instead of padding a
 * vocabulary to 10^8 entries or writing a GGUF from a meaningless value.
 */

import { equal, ok } from "node:assert/strict";
import { join } from "node:path";
import {
  assertOneLineError,
  DEMO_MODEL,
  exists,
  runApr,
  runAprPeakRss,
  withTempDir,
} from "./_run_apr.ts";

type Json = Record<string, unknown>;

/** Copy the demo model into `dir/model`, applying `edit` to its parsed JSON files. */
async function editedModel(
  dir: string,
  edit: { config?: (c: Json) => void; tokenizer?: (t: Json) => void; tokenizerText?: string },
): Promise<string> {
  const model = join(dir, "model");
  await Deno.mkdir(model);
  for await (const entry of Deno.readDir(DEMO_MODEL)) {
    await Deno.copyFile(join(DEMO_MODEL, entry.name), join(model, entry.name));
  }
  const rewrite = async (name: string, fn?: (v: Json) => void) => {
    if (fn === undefined) return;
    const value = JSON.parse(await Deno.readTextFile(join(model, name))) as Json;
    fn(value);
    await Deno.writeTextFile(join(model, name), JSON.stringify(value));
  };
  await rewrite("config.json", edit.config);
  await rewrite("tokenizer.json", edit.tokenizer);
  if (edit.tokenizerText !== undefined) {
    await Deno.writeTextFile(join(model, "tokenizer.json"), edit.tokenizerText);
  }
  return model;
}

const vocab = (t: Json) => (t["model"] as Json)["vocab"] as Record<string, unknown>;
const added = (t: Json) => t["added_tokens"] as Json[];

/** Peak memory allowed for a refusal: Deno itself takes ~100 MB. */
const REFUSAL_PEAK_BYTES = 400 * 1024 * 1024;

Deno.test("counts and ids larger than the checkpoint are refused before allocating", async (t) => {
  const cases: [string, Parameters<typeof editedModel>[1], string[], RegExp][] = [
    [
      "vocab_size 1e8",
      { config: (c) => (c["vocab_size"] = 1e8) },
      ["convert", "-o", "x.gguf"],
      /config\.json.*"vocab_size" is 100000000, more than the \d+ rows/,
    ],
    [
      "vocab_size 1e12",
      { config: (c) => (c["vocab_size"] = 1e12) },
      ["inspect"],
      /config\.json.*"vocab_size" is 1000000000000/,
    ],
    [
      "added token id 3e7",
      { tokenizer: (t) => added(t).push({ id: 3e7, content: "<big>", special: true }) },
      ["import", "-o", "x.apr"],
      /tokenizer\.json.*"added_tokens"\[\d+\]\.id is 30000000, past the \d+ ids/,
    ],
    [
      "added token id 2^31",
      { tokenizer: (t) => added(t).push({ id: 2 ** 31, content: "<big>", special: true }) },
      ["convert", "-o", "x.gguf"],
      /tokenizer\.json.*"added_tokens"\[\d+\]\.id is 2147483648/,
    ],
  ];
  for (const [name, edit, command, pattern] of cases) {
    await t.step(name, async () => {
      await withTempDir(async (dir) => {
        const model = await editedModel(dir, edit);
        const [verb, ...flags] = command;
        const args = [
          verb!,
          model,
          ...flags.map((f) => f.endsWith(".apr") || f.endsWith(".gguf") ? join(dir, f) : f),
        ];
        const started = performance.now();
        const { run, peakBytes } = await runAprPeakRss(args);
        assertOneLineError(run, pattern);
        ok(performance.now() - started < 30_000, "refused at once");
        if (peakBytes !== undefined) {
          ok(peakBytes < REFUSAL_PEAK_BYTES, `peak RSS ${peakBytes} bytes`);
        }
        for (const out of ["x.gguf", "x.apr", "x.gguf.partial", "x.apr.partial"]) {
          equal(await exists(join(dir, out)), false, out);
        }
      });
    });
  }
});

Deno.test("companion values of the wrong kind are refused, naming the file and the field", async (t) => {
  const cases: [string, Parameters<typeof editedModel>[1], RegExp][] = [
    [
      "vocab id -1",
      { tokenizer: (t) => (vocab(t)["a"] = -1) },
      /tokenizer\.json.*"model\.vocab" entry "a" is -1, not a token id/,
    ],
    [
      "vocab id 1e300",
      { tokenizer: (t) => (vocab(t)["a"] = 1e300) },
      /tokenizer\.json.*entry "a" is 1e\+300, not a token id/,
    ],
    [
      'vocab id "x"',
      { tokenizer: (t) => (vocab(t)["a"] = "x") },
      /tokenizer\.json.*entry "a" is "x", not a token id/,
    ],
    [
      "vocab id 2^53",
      { tokenizer: (t) => (vocab(t)["a"] = 2 ** 53) },
      /tokenizer\.json.*entry "a" is 9007199254740992, not a token id/,
    ],
    [
      "vocab id null",
      { tokenizer: (t) => (vocab(t)["a"] = null) },
      /tokenizer\.json.*entry "a" is null, not a token id/,
    ],
    [
      "added token id 2^32",
      { tokenizer: (t) => (added(t)[0]!["id"] = 2 ** 32) },
      /tokenizer\.json.*"added_tokens"\[0\]\.id is 4294967296/,
    ],
    [
      'rope_theta "NaN"',
      { config: (c) => (c["rope_theta"] = "NaN") },
      /config\.json.*"rope_theta" is "NaN", not a positive number/,
    ],
    [
      "num_hidden_layers -1",
      { config: (c) => (c["num_hidden_layers"] = -1) },
      /config\.json.*"num_hidden_layers" is -1, not a count/,
    ],
    [
      "a lone surrogate in an added token",
      {
        tokenizerText: (await Deno.readTextFile(join(DEMO_MODEL, "tokenizer.json"))).replace(
          '"content":"<unk>"',
          '"content":"<unk\\ud800>"',
        ).replace('"content": "<unk>"', '"content": "<unk\\ud800>"'),
      },
      /tokenizer\.json.*"added_tokens"\[0\] \(id 0\) holds a lone UTF-16 surrogate/,
    ],
  ];
  for (const [name, edit, pattern] of cases) {
    await t.step(name, async () => {
      await withTempDir(async (dir) => {
        const model = await editedModel(dir, edit);
        const out = join(dir, "x.gguf");
        assertOneLineError(await runApr(["convert", model, "-o", out]), pattern);
        equal(await exists(out), false);
      });
    });
  }
});

Deno.test("the unedited demo model still converts (the checks refuse only bad values)", async () => {
  await withTempDir(async (dir) => {
    const out = join(dir, "x.gguf");
    const run = await runApr(["convert", DEMO_MODEL, "-o", out]);
    equal(run.code, 0, run.stderr);
    ok(await exists(out));
  });
});
