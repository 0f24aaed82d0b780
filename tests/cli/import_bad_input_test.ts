/**
 * `apr import` of malformed inputs (FORMATS.md S-, I- and G-rows): each must
 * exit 2 with exactly one stderr line naming the file and the rule, print no
 * stack trace, and leave nothing at the output path — no OUT, no
 * OUT.partial, no OUT.partial.journal.
 *
 * @module
 */

import { deepEqual, equal, match, ok } from "node:assert/strict";
import {
  assertOneLineError,
  exists,
  f32Safetensors,
  lines,
  listDir,
  noise,
  rawSafetensors,
  runApr,
  testdata,
  withTempDir,
} from "./_run_apr.ts";
import { rawHeader } from "../formats/gguf/_raw_gguf.ts";

const text = new TextEncoder();

/** One malformed input: files to write, what to import, what the error must say. */
interface BadCase {
  row: string;
  /** Files to create under the case's folder (path → bytes or text). */
  files: Record<string, Uint8Array | string>;
  /** What to import, relative to the case's folder. */
  source: string;
  /** Patterns the one stderr line must match (besides the file name). */
  expect: (RegExp | string)[];
  /** The file name the message must contain. */
  names: string;
}

function st(header: Record<string, unknown>, data: number): Uint8Array {
  return rawSafetensors(JSON.stringify(header), new Uint8Array(data));
}

function index(weightMap: Record<string, string>, totalSize = 0): string {
  return JSON.stringify({ metadata: { total_size: totalSize }, weight_map: weightMap });
}

const SHARD1 = "model-00001-of-00002.safetensors";
const SHARD2 = "model-00002-of-00002.safetensors";

const S_ROWS: BadCase[] = [
  {
    row: "S1 file shorter than 8 bytes",
    files: { "bad.safetensors": new Uint8Array([1, 2, 3, 4]) },
    source: "bad.safetensors",
    names: "bad.safetensors",
    expect: [/header too small/i],
  },
  {
    row: "S2 header length over 100,000,000",
    files: { "bad.safetensors": rawSafetensors("{}", new Uint8Array(0), 200_000_000n) },
    source: "bad.safetensors",
    names: "bad.safetensors",
    expect: [/header too large/i],
  },
  {
    row: "S4 header length 2^64-1",
    files: { "bad.safetensors": rawSafetensors("{}", new Uint8Array(0), 2n ** 64n - 1n) },
    source: "bad.safetensors",
    names: "bad.safetensors",
    expect: [/header too large/i],
  },
  {
    row: "S9 shape x dtype size differs from the data range",
    files: {
      "bad.safetensors": st({ w: { dtype: "F32", shape: [2], data_offsets: [0, 4] } }, 4),
    },
    source: "bad.safetensors",
    names: "bad.safetensors",
    expect: [/tensor size mismatch/i, /"w"/],
  },
  {
    row: "S10 first BEGIN is not 0",
    files: {
      "bad.safetensors": st({ w: { dtype: "F32", shape: [1], data_offsets: [4, 8] } }, 8),
    },
    source: "bad.safetensors",
    names: "bad.safetensors",
    expect: [/invalid offsets/i, /"w"/],
  },
  {
    row: "S10 overlapping tensors",
    files: {
      "bad.safetensors": st({
        a: { dtype: "F32", shape: [2], data_offsets: [0, 8] },
        b: { dtype: "F32", shape: [2], data_offsets: [4, 12] },
      }, 12),
    },
    source: "bad.safetensors",
    names: "bad.safetensors",
    expect: [/invalid offsets/i, /overlapping/i, /"[ab]"/],
  },
  {
    row: "S11 the same key twice",
    files: {
      "bad.safetensors": rawSafetensors(
        '{"w":{"dtype":"F32","shape":[1],"data_offsets":[0,4]},' +
          '"w":{"dtype":"F32","shape":[1],"data_offsets":[0,4]}}',
        new Uint8Array(4),
      ),
    },
    source: "bad.safetensors",
    names: "bad.safetensors",
    expect: [/duplicate tensor name/i, /"w"/],
  },
  {
    row: "S15 bytes after the last tensor",
    files: {
      "bad.safetensors": st({ w: { dtype: "F32", shape: [1], data_offsets: [0, 4] } }, 12),
    },
    source: "bad.safetensors",
    names: "bad.safetensors",
    expect: [/trailing/i],
  },
  {
    row: "S16 file truncated inside the data",
    files: {
      "bad.safetensors": st({ w: { dtype: "F32", shape: [4], data_offsets: [0, 16] } }, 8),
    },
    source: "bad.safetensors",
    names: "bad.safetensors",
    expect: [/truncated/i],
  },
];

function validShard(names: string[], seed: number): Uint8Array {
  return f32Safetensors(Object.fromEntries(names.map((n, i) => [n, noise(4, seed + i)])));
}

const I_ROWS: BadCase[] = [
  {
    row: "I1 index is not JSON",
    files: { "model.safetensors.index.json": "{not json", [SHARD1]: validShard(["a"], 1) },
    source: ".",
    names: "model.safetensors.index.json",
    expect: [/invalid index/i, /not JSON/i],
  },
  {
    row: "I1 index is not an object",
    files: { "model.safetensors.index.json": "[1, 2]", [SHARD1]: validShard(["a"], 1) },
    source: ".",
    names: "model.safetensors.index.json",
    expect: [/invalid index/i, /not an object/i],
  },
  {
    row: "I4 shard name with ..",
    files: {
      "model.safetensors.index.json": index({ a: "../evil.safetensors" }),
      [SHARD1]: validShard(["a"], 1),
    },
    source: ".",
    names: "model.safetensors.index.json",
    expect: [/unsafe shard name/i, "../evil.safetensors"],
  },
  {
    row: "I4 shard name that is a URL",
    files: {
      "model.safetensors.index.json": index({ a: "http://x/y.safetensors" }),
      [SHARD1]: validShard(["a"], 1),
    },
    source: ".",
    names: "model.safetensors.index.json",
    expect: [/unsafe shard name/i, /:\/\//],
  },
  {
    row: "I6 the index names a tensor no shard contains",
    files: {
      "model.safetensors.index.json": index({ a: SHARD1, ghost: SHARD1 }),
      [SHARD1]: validShard(["a"], 1),
    },
    source: ".",
    names: SHARD1,
    expect: [/missing tensor/i, /"ghost"/],
  },
  {
    row: "I7 a shard holds a tensor the index does not list",
    files: {
      "model.safetensors.index.json": index({ a: SHARD1 }),
      [SHARD1]: validShard(["a", "extra"], 1),
    },
    source: ".",
    names: SHARD1,
    expect: [/unexpected tensor/i, /"extra"/],
  },
  {
    row: "I8 a shard the index names is absent",
    files: {
      "model.safetensors.index.json": index({ a: SHARD1, b: SHARD2 }),
      [SHARD1]: validShard(["a"], 1),
    },
    source: ".",
    names: SHARD2,
    expect: [/missing shard/i],
  },
  {
    row: "I9 a tensor mapped to shard A found only in shard B",
    files: {
      "model.safetensors.index.json": index({ a: SHARD1, b: SHARD1, c: SHARD2 }),
      [SHARD1]: validShard(["a"], 1),
      [SHARD2]: validShard(["b", "c"], 2),
    },
    source: ".",
    names: SHARD2,
    expect: [/mismatch/i, /"b"/],
  },
  {
    row: "I10 the same tensor in two shards",
    files: {
      "model.safetensors.index.json": index({ a: SHARD1, b: SHARD2 }),
      [SHARD1]: validShard(["a", "b"], 1),
      [SHARD2]: validShard(["b"], 2),
    },
    source: ".",
    names: SHARD2,
    expect: [/duplicate tensor/i, /"b"/],
  },
];

/** A tiny valid GGUF v3 body after the header counts: one F32 tensor of 8 values. */
function ggufWith(
  options: { version?: number; type?: number; dataBytes?: number; magic?: string } = {},
): Uint8Array {
  const b = rawHeader(1, 1, options.version ?? 3)
    .str("general.architecture").u32(8).str("llama")
    .tensor("token_embd.weight", [8], options.type ?? 0, 0)
    .pad()
    .zeros(options.dataBytes ?? 32)
    .bytes();
  if (options.magic) b.set(text.encode(options.magic), 0);
  return b;
}

const G_ROWS: BadCase[] = [
  {
    row: "G1 magic is not GGUF",
    files: { "bad.gguf": ggufWith({ magic: "GGUX" }) },
    source: "bad.gguf",
    names: "bad.gguf",
    expect: [/not a GGUF file/i, /magic/i],
  },
  {
    row: "G2 version 1",
    files: { "bad.gguf": ggufWith({ version: 1 }) },
    source: "bad.gguf",
    names: "bad.gguf",
    expect: [/unsupported version/i],
  },
  {
    row: "G2 version 4",
    files: { "bad.gguf": ggufWith({ version: 4 }) },
    source: "bad.gguf",
    names: "bad.gguf",
    expect: [/unsupported version/i],
  },
  {
    row: "G3 byte-swapped version",
    files: { "bad.gguf": ggufWith({ version: 0x03000000 }) },
    source: "bad.gguf",
    names: "bad.gguf",
    expect: [/endianness mismatch/i],
  },
  {
    row: "G5 truncated inside the KV pairs",
    // The counts are plausible; the file ends inside the first KV's value.
    files: {
      "bad.gguf": rawHeader(0, 1).str("general.architecture").u32(8).u64(5)
        .raw(text.encode("ll")).bytes(),
    },
    source: "bad.gguf",
    names: "bad.gguf",
    expect: [/truncated/i, /at byte \d+/],
  },
  {
    row: "G12 unknown ggml type",
    files: { "bad.gguf": ggufWith({ type: 99 }) },
    source: "bad.gguf",
    names: "bad.gguf",
    expect: [/unsupported ggml type 99/i, /"token_embd\.weight"/],
  },
  {
    row: "G16 tensor data past end of file",
    files: { "bad.gguf": ggufWith({ dataBytes: 16 }) },
    source: "bad.gguf",
    names: "bad.gguf",
    expect: [/truncated/i, /"token_embd\.weight"/, /past the end/],
  },
];

async function writeCase(dir: string, files: BadCase["files"]): Promise<void> {
  await Deno.mkdir(dir, { recursive: true });
  for (const [name, data] of Object.entries(files)) {
    if (typeof data === "string") await Deno.writeTextFile(`${dir}/${name}`, data);
    else await Deno.writeFile(`${dir}/${name}`, data);
  }
}

async function checkRows(t: Deno.TestContext, rows: BadCase[]): Promise<void> {
  await withTempDir(async (root) => {
    // Run every case's subprocess at once: the suite stays fast.
    const runs = await Promise.all(rows.map(async (c, i) => {
      const dir = `${root}/case${i}`;
      await writeCase(dir, c.files);
      const out = `${root}/out${i}.apr`;
      return { out, run: await runApr(["import", `${dir}/${c.source}`, "-o", out]) };
    }));
    for (const [i, c] of rows.entries()) {
      const { out, run } = runs[i]!;
      await t.step(c.row, async () => {
        assertOneLineError(run, c.names, ...c.expect);
        for (const path of [out, `${out}.partial`, `${out}.partial.journal`]) {
          ok(!(await exists(path)), `${path} must not exist after: ${run.stderr}`);
        }
      });
    }
    // Nothing else appeared beside the outputs either.
    deepEqual((await listDir(root)).filter((n) => !n.startsWith("case")), []);
  });
}

Deno.test("apr import rejects malformed SafeTensors files (FORMATS.md S1-S16)", async (t) => {
  await checkRows(t, S_ROWS);
});

Deno.test("apr import rejects a real malformed file from safetensors-cpp (FORMATS.md S18)", async () => {
  await withTempDir(async (dir) => {
    const out = `${dir}/abuse.apr`;
    const source = testdata("safetensors/other/safetensors-cpp-abuse-1.safetensors");
    const run = await runApr(["import", source, "-o", out]);
    assertOneLineError(run, "safetensors-cpp-abuse-1.safetensors", /truncated header/i);
    deepEqual(await listDir(dir), []);
  });
});

Deno.test("apr import rejects malformed sharded models (FORMATS.md I1-I10)", async (t) => {
  await checkRows(t, I_ROWS);
});

Deno.test("apr import rejects malformed GGUF files (FORMATS.md G1-G16)", async (t) => {
  await checkRows(t, G_ROWS);
});

Deno.test("apr import never reads a stray shard the index does not name (FORMATS.md I11)", async () => {
  await withTempDir(async (dir) => {
    await writeCase(`${dir}/model`, {
      "model.safetensors.index.json": index({ a: SHARD1, b: SHARD2 }, 32),
      [SHARD1]: validShard(["a"], 1),
      [SHARD2]: validShard(["b"], 2),
      // Garbage: reading it would fail the import.
      "model-stray.safetensors": new Uint8Array([1, 2, 3]),
      "model.safetensors": new Uint8Array([9, 9, 9]),
    });
    const run = await runApr(["import", `${dir}/model`, "-o", `${dir}/out.apr`, "--json"]);
    equal(run.code, 0, run.stderr);
    const result = JSON.parse(run.stdout);
    equal(result.tensors, 2);
    ok(await exists(`${dir}/out.apr`));
  });
});

Deno.test("apr import warns, and still succeeds, on a wrong index total_size (FORMATS.md I12)", async () => {
  await withTempDir(async (dir) => {
    await writeCase(`${dir}/model`, {
      "model.safetensors.index.json": index({ a: SHARD1 }, 12345),
      [SHARD1]: validShard(["a"], 1),
    });
    const run = await runApr(["import", `${dir}/model`, "-o", `${dir}/out.apr`]);
    equal(run.code, 0, run.stderr);
    const warnings = lines(run.stderr).filter((l) => l.startsWith("warning:"));
    equal(warnings.length, 1, run.stderr);
    match(warnings[0]!, /total_size/);
    match(warnings[0]!, /12345|12,345/);
    ok(await exists(`${dir}/out.apr`));
  });
});
