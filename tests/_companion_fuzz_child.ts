/**
 * The campaign of `companion_fuzz_test.ts`, run in a child process whose V8
 * heap is capped (`--max-old-space-size`), so a mutant that allocates without
 * bound ends the child instead of passing slowly: mutated companion files
 * (config.json, tokenizer.json, tokenizer_config.json,
 * generation_config.json), imatrix files (llama-imatrix's `.dat` and GGUF)
 * and a sharded-APR manifest, each through what `convert`/`import` do.
 * Prints one line per mutant before running it (the last line names the
 * culprit of a crash), then a JSON summary.
 *
 * Arguments: seed, mutant count, per-mutant time limit in ms.
 */

import { join } from "node:path";
import { isUserError } from "../src/cli/main.ts";
import { convertModel } from "../src/pipeline/convert_model.ts";
import { readImportanceMatrix } from "../src/pipeline/read_imatrix.ts";
import { DEMO_MODEL, testdata } from "./cli/_run_apr.ts";

const [seedArg, countArg, limitArg] = Deno.args;
const SEED = Number(seedArg);
const MUTANTS = Number(countArg);
const LIMIT_MS = Number(limitArg);

function prng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}
const random = prng(SEED);
const pick = (n: number): number => Math.floor(random() * n);

/** Values that broke readers before: huge counts, wrong kinds, lone surrogates. */
const VALUES = [
  "-1",
  "0",
  "1e300",
  "1e8",
  "1e12",
  "30000000",
  "2147483648",
  "4294967296",
  "9007199254740992",
  "null",
  '"x"',
  '"NaN"',
  "[]",
  "{}",
  "1.5",
  "true",
  '"\\ud800"',
  '"<\\udfff>"',
];

interface Fixture {
  /** File name inside the model folder (or the imatrix / manifest). */
  name: string;
  kind: "companion" | "imatrix" | "manifest";
  bytes: Uint8Array;
}

/** A JSON-aware or byte-level mutation. */
function mutate(f: Fixture): { bytes: Uint8Array; what: string } {
  const text = new TextDecoder().decode(f.bytes);
  const json = f.kind !== "imatrix" && text.trimStart().startsWith("{");
  const kind = pick(json ? 6 : 3);
  const bytes = f.bytes.slice();
  if (kind === 0) {
    const at: number[] = [];
    for (let i = 0, n = 1 + pick(4); i < n; i++) {
      const p = pick(bytes.length);
      bytes[p] = bytes[p]! ^ (1 << pick(8));
      at.push(p);
    }
    return { bytes, what: `bit flips at ${at.join(",")}` };
  }
  if (kind === 1) {
    const n = pick(bytes.length);
    return { bytes: bytes.subarray(0, n), what: `truncated to ${n}` };
  }
  if (kind === 2) {
    // A u32/u64 count of a binary file set to a large value, or a byte to 0xff.
    const p = pick(Math.max(1, bytes.length - 8));
    const view = new DataView(bytes.buffer);
    const v = [0xffffffff, 0x80000000, 0x7fffffff, 0][pick(4)]!;
    view.setUint32(p, v, true);
    return { bytes, what: `u32 ${v} at ${p}` };
  }
  const value = VALUES[pick(VALUES.length)]!;
  const re = kind === 3
    ? /-?\d+(\.\d+)?(e[+-]?\d+)?/g
    : kind === 4
    ? /"(?:[^"\\]|\\.)*"/g
    : /[\[{]/g;
  const hits = [...text.matchAll(re)];
  if (hits.length === 0) return { bytes, what: "unchanged" };
  const m = hits[pick(hits.length)]!;
  const out = kind === 5
    // Nest or widen: a value put in front of an array's or object's first entry.
    ? text.slice(0, m.index! + 1) + (m[0] === "[" ? `${value},` : `"k${pick(99)}":${value},`) +
      text.slice(m.index! + 1)
    : text.slice(0, m.index) + value + text.slice(m.index! + m[0].length);
  return {
    bytes: new TextEncoder().encode(out),
    what: `${kind === 3 ? "number" : kind === 4 ? "string" : "insert"} at ${m.index} -> ${value}`,
  };
}

function withTimeout<T>(promise: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${what}: no result after ${ms} ms (a hang)`)), ms);
  });
  return Promise.race([promise, timeout]).finally(() => clearTimeout(timer));
}

const dir = await Deno.makeTempDir({ prefix: "aprkit-companion-fuzz-" });
const read = (p: string) => Deno.readFile(p);
const setDir = join(dir, "set");
await Deno.mkdir(setDir);
await convertModel(DEMO_MODEL, join(setDir, "m.apr"), { maxShardSize: 200_000, threads: 0 });
const fixtures: Fixture[] = [
  { name: "config.json", kind: "companion", bytes: await read(join(DEMO_MODEL, "config.json")) },
  {
    name: "tokenizer.json",
    kind: "companion",
    bytes: await read(join(DEMO_MODEL, "tokenizer.json")),
  },
  {
    name: "tokenizer_config.json",
    kind: "companion",
    bytes: await read(join(DEMO_MODEL, "tokenizer_config.json")),
  },
  {
    name: "generation_config.json",
    kind: "companion",
    bytes: new TextEncoder().encode(
      JSON.stringify({ bos_token_id: 1, eos_token_id: [2, 3], pad_token_id: 0, max_length: 512 }),
    ),
  },
  {
    name: "imatrix.dat",
    kind: "imatrix",
    bytes: await read(testdata("gguf/tiny-qwen2-imatrix.dat")),
  },
  {
    name: "imatrix.gguf",
    kind: "imatrix",
    bytes: await read(testdata("gguf/tiny-qwen2-Q4_K_M-imatrix.gguf")),
  },
  {
    name: "m.apr.manifest.json",
    kind: "manifest",
    bytes: await read(join(setDir, "m.apr.manifest.json")),
  },
];

const failures: string[] = [];
let refused = 0;
let slowest = 0;
for (let i = 0; i < MUTANTS && failures.length < 5; i++) {
  const f = fixtures[i % fixtures.length]!;
  const { bytes, what } = mutate(f);
  const label = `seed ${SEED} mutant ${i} (${f.name}, ${what})`;
  console.log(label);
  const work = join(dir, `m${i}`);
  await Deno.mkdir(work);
  const out = join(work, "out");
  await Deno.mkdir(out);
  let run: () => Promise<unknown>;
  if (f.kind === "companion") {
    const model = join(work, "model");
    await Deno.mkdir(model);
    for await (const e of Deno.readDir(DEMO_MODEL)) {
      await Deno.copyFile(join(DEMO_MODEL, e.name), join(model, e.name));
    }
    await Deno.writeFile(join(model, f.name), bytes);
    run = async () => {
      await convertModel(model, join(out, "x.gguf"), { threads: 0 });
      await convertModel(model, join(out, "x.apr"), { threads: 0 });
    };
  } else if (f.kind === "imatrix") {
    const path = join(work, f.name);
    await Deno.writeFile(path, bytes);
    run = async () => {
      await readImportanceMatrix(path);
      await convertModel(DEMO_MODEL, join(out, "x.apr"), {
        quantize: "q4_k",
        imatrix: path,
        threads: 0,
      });
    };
  } else {
    for await (const e of Deno.readDir(setDir)) {
      if (e.name.endsWith(".apr")) await Deno.copyFile(join(setDir, e.name), join(work, e.name));
    }
    await Deno.writeFile(join(work, f.name), bytes);
    run = () => convertModel(join(work, f.name), join(out, "x.gguf"), { threads: 0 });
  }
  const started = performance.now();
  try {
    await withTimeout(run(), LIMIT_MS, label);
  } catch (error) {
    refused++;
    if (!isUserError(error)) {
      failures.push(`${label}: not a user error: ${error instanceof Error ? error.stack : error}`);
    }
    const left = [];
    for await (const e of Deno.readDir(out)) left.push(e.name);
    if (left.some((n) => n.endsWith(".partial"))) {
      failures.push(`${label}: left ${left.join(", ")} after failing`);
    }
  }
  slowest = Math.max(slowest, performance.now() - started);
  await Deno.remove(work, { recursive: true });
}
await Deno.remove(dir, { recursive: true });
console.log(JSON.stringify({ mutants: MUTANTS, refused, slowest: Math.round(slowest), failures }));
