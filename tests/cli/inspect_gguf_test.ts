/**
 * `apr inspect` and `apr tensors` show a GGUF as it is stored — every
 * key/value pair in file order with its GGUF type (arrays summarised), the
 * tensors under their GGUF names at their file offsets — as an independent
 * parser (`@huggingface/gguf`) reads the same file; `--translate` shows what
 * a conversion reads (Hugging Face names, APR's keys).
 *
 * @module
 */

import { deepEqual, equal, ok } from "node:assert/strict";
import { gguf } from "@huggingface/gguf";
import { runApr, testdata } from "./_run_apr.ts";

const FILE = testdata("gguf/tiny-qwen2-Q4_K_M.gguf");
/** Fields @huggingface/gguf adds to its metadata that are not key/value pairs of the file. */
const NOT_PAIRS = new Set(["version", "tensor_count", "kv_count"]);

async function json(args: string[]): Promise<Record<string, unknown>> {
  const run = await runApr([...args, "--json"]);
  equal(run.code, 0, run.stderr);
  return JSON.parse(run.stdout);
}

/** What @huggingface/gguf reads of the file. */
async function theirs() {
  const parsed = await gguf(FILE, { allowLocalFile: true });
  const metadata = parsed.metadata as Record<string, unknown>;
  const pairs = Object.keys(metadata).filter((k) => !NOT_PAIRS.has(k));
  return { parsed, metadata, pairs };
}

/** JSON's spelling of a GGUF value (@huggingface/gguf keeps 64-bit integers as bigint). */
function plain(v: unknown): unknown {
  if (Array.isArray(v)) return v.map(plain);
  return typeof v === "bigint" ? Number(v) : v;
}

Deno.test("apr inspect shows a GGUF as stored: every key/value pair, in file order, with its type", async () => {
  const { metadata, pairs } = await theirs();
  const doc = await json(["inspect", FILE]);
  equal(doc.view, "stored");
  equal(doc.ggufVersion, 3);
  const shown = doc.metadata as Record<
    string,
    { type: string; value?: unknown; length?: number; head?: unknown[] }
  >;
  deepEqual(Object.keys(shown), pairs);
  for (const key of pairs) {
    const value = plain(metadata[key]);
    const mine = shown[key]!;
    if (Array.isArray(value)) {
      equal(mine.type, "ARRAY", key);
      equal(mine.length, value.length, key);
      deepEqual(mine.head ?? mine.value, value.slice(0, 8), key);
      equal(mine.head === undefined, value.length <= 8, key);
    } else if (typeof value === "string" && value.length > 200) {
      ok((mine.value as string).startsWith(value.slice(0, 200)), key);
    } else {
      deepEqual(mine.value, value, key);
    }
  }
  equal(shown["qwen2.block_count"]!.type, "UINT32");
  equal(shown["qwen2.rope.freq_base"]!.type, "FLOAT32");

  // The text shows every pair too, one line each (25 here; it stopped at 5 elsewhere).
  const text = await runApr(["inspect", FILE]);
  equal(text.code, 0, text.stderr);
  for (const key of pairs) ok(text.stdout.includes(`\n  ${key}: `), key);
  ok(text.stdout.includes("tokenizer.ggml.tokens: ARRAY<STRING>[512] ["), text.stdout);
});

Deno.test("apr tensors shows a GGUF's tensors under their GGUF names, at their file offsets", async () => {
  const { parsed } = await theirs();
  const doc = await json(["tensors", FILE]);
  const rows = doc.tensors as { name: string; offset: number; shape: number[] }[];
  deepEqual(
    rows.map((r) => [r.name, r.offset, r.shape]),
    parsed.tensorInfos.map((t) => [
      t.name,
      Number(parsed.tensorDataOffset + t.offset),
      t.shape.map(Number).reverse(),
    ]),
  );
});

Deno.test("--translate shows a GGUF as a conversion reads it: Hugging Face names, APR's keys", async () => {
  const inspect = await json(["inspect", FILE, "--translate"]);
  equal(inspect.view, "translated");
  const metadata = inspect.metadata as Record<string, unknown>;
  equal(metadata.architecture, "qwen2");
  equal(metadata.hidden_size, 256);
  const tensors = (await json(["tensors", FILE, "--translate"])).tensors as { name: string }[];
  ok(tensors.some((t) => t.name === "model.embed_tokens.weight"), JSON.stringify(tensors));
  ok(!tensors.some((t) => t.name === "token_embd.weight"));
  // Documented with an example in each command's help.
  for (const command of ["inspect", "tensors"]) {
    const help = await runApr([command, "--help"]);
    ok(help.stdout.includes("--translate"), help.stdout);
    ok(/apr \w+ model\.gguf --translate/.test(help.stdout), help.stdout);
  }
});
