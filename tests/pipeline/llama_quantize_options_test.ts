import { deepStrictEqual as assertEquals } from "node:assert/strict";
import { convertModel, type ConvertOptions } from "../../src/pipeline/convert_model.ts";
import {
  GgufValueType,
  ggufValueTypeName,
  parseGgufHeader,
} from "../../src/formats/gguf/header.ts";
import { openFileSource } from "../../src/io/file_source.ts";
import { UsageError } from "../../src/errors.ts";
import type { QuantizeTarget } from "../../src/quant/plan_quantization.ts";
import { rejects } from "node:assert/strict";
import { assertOneLineError, runApr, withTempDir } from "../cli/_run_apr.ts";
import {
  imatrixPath,
  manifest,
  sha16,
  sourceGguf,
  sourceGgufSplit,
} from "../quant/_llama_quantize_fixture.ts";

// llama-quantize's per-tensor options against llama.cpp de3ff81's own runs
// with the same flags (tests/testdata/llama_quantize/options.manifest.json):
// every tensor of every output file, in file order, by name, type and bytes.

/** One output file of a run. */
interface Output {
  name: string;
  file_type: number | null;
  names: string[];
  types: string[];
  sha256_16: string[];
}

/** One llama-quantize run with flags. */
export interface OptionRun {
  model: "dense" | "moe";
  source: "f32" | "q8_0" | "split";
  args: string[];
  ftype: string;
  refused?: string;
  outputs?: Output[];
  /** Every metadata pair of the (first) file, for runs with keys of their own. */
  kv?: unknown[][];
}

/** The runs of options.manifest.json. */
export const OPTION_RUNS: OptionRun[] = JSON.parse(
  Deno.readTextFileSync(
    new URL("../testdata/llama_quantize/options.manifest.json", import.meta.url),
  ),
).runs;

/** The fixtures' folder: the runs' working directory (the matrix and type files are named relative to it). */
const FIXTURES = new URL("../testdata/llama_quantize/", import.meta.url).pathname;

/**
 * llama-quantize's flags as convertModel's options (the same names,
 * camel-cased); a `--tensor-type-file`'s entries, split at whitespace, take
 * its place in the `--tensor-type` list (the CLI's reading of the file is
 * tested on its own below).
 */
export function optionsOf(args: readonly string[]): ConvertOptions {
  const options: ConvertOptions = {};
  const tensorTypes: string[] = [];
  const list = (key: "includeWeights" | "excludeWeights" | "overrideKv", value: string) => {
    options[key] = [...(options[key] ?? []), value];
  };
  for (let i = 0; i < args.length; i++) {
    const flag = args[i]!;
    if (flag === "--output-tensor-type") options.outputTensorType = args[++i]!;
    else if (flag === "--token-embedding-type") options.tokenEmbeddingType = args[++i]!;
    else if (flag === "--tensor-type") tensorTypes.push(args[++i]!);
    else if (flag === "--tensor-type-file") {
      tensorTypes.push(
        ...Deno.readTextFileSync(FIXTURES + args[++i]!).split(/\s+/).filter((e) => e !== ""),
      );
    } else if (flag === "--imatrix") options.imatrix = FIXTURES + args[++i]!;
    else if (flag === "--include-weights") list("includeWeights", args[++i]!);
    else if (flag === "--exclude-weights") list("excludeWeights", args[++i]!);
    else if (flag === "--override-kv") list("overrideKv", args[++i]!);
    else if (flag === "--prune-layers") options.pruneLayers = args[++i]!.split(",").map(Number);
    else if (flag === "--pure") options.pure = true;
    else if (flag === "--leave-output-tensor") options.leaveOutputTensor = true;
    else if (flag === "--allow-requantize") options.allowRequantize = true;
    else if (flag === "--keep-split") options.keepSplit = true;
    else throw new Error(`no option for ${flag}`);
  }
  return tensorTypes.length > 0 ? { ...options, tensorTypes } : options;
}

/**
 * Name, type and sha256 prefix of every tensor of one GGUF file, in file
 * order (a shard alone: openModel would read its whole set).
 */
export async function outputOf(path: string): Promise<Omit<Output, "name">> {
  const source = await openFileSource(path);
  try {
    const header = await parseGgufHeader(source);
    const v = header.kv.get("general.file_type")?.value;
    const bytes = await Deno.readFile(path);
    const out: Omit<Output, "name"> = {
      file_type: v === undefined ? null : Number(v),
      names: [],
      types: [],
      sha256_16: [],
    };
    for (const t of header.tensors) {
      const at = header.dataOffset + t.offset;
      out.names.push(t.name);
      out.types.push(t.dtype);
      out.sha256_16.push(await sha16(bytes.subarray(at, at + t.byteLength)));
    }
    return out;
  } finally {
    await source.close?.();
  }
}

/** Every tensor of `got` against llama-quantize's output `want`, one assertion per tensor. */
export function assertSameOutput(got: Omit<Output, "name">, want: Output): void {
  assertEquals(got.names, want.names, `${want.name}: tensor order`);
  want.names.forEach((name, i) => {
    assertEquals(
      [name, got.types[i], got.sha256_16[i]],
      [name, want.types[i], want.sha256_16[i]],
      `${want.name}: ${name}`,
    );
  });
  if (want.file_type !== null) assertEquals(got.file_type, want.file_type, "general.file_type");
}

/**
 * Every metadata pair of a GGUF file in file order, as make_fixtures.py's
 * `kv_of` records them: key, type, value (arrays: element type and length;
 * FLOAT32 as the float's double).
 */
export async function kvOf(path: string): Promise<unknown[][]> {
  const source = await openFileSource(path);
  try {
    const header = await parseGgufHeader(source);
    return [...header.kv].map(([key, e]) =>
      e.type === GgufValueType.ARRAY
        ? [key, `ARRAY:${ggufValueTypeName(e.arrayTypes![0]!)}`, (e.value as unknown[]).length]
        : [key, ggufValueTypeName(e.type), typeof e.value === "bigint" ? Number(e.value) : e.value]
    );
  } finally {
    await source.close?.();
  }
}

/** The tensor llama-quantize named when it refused ("… for tensor NAME in …"). */
function refusedTensor(message: string): string {
  return /tensor (\S+)/.exec(message)![1]!;
}

const FROM_F32 = OPTION_RUNS.filter((r) => r.source === "f32");

for (const run of FROM_F32) {
  Deno.test(`convertModel() of the ${run.model} F32 GGUF with ${run.ftype} ${run.args.join(" ")} ${run.refused ? "refuses as" : "equals"} llama-quantize`, async () => {
    await withTempDir(async (dir) => {
      await Deno.writeFile(`${dir}/f32.gguf`, sourceGguf(manifest(run.model)));
      const convert = convertModel(`${dir}/f32.gguf`, `${dir}/out.gguf`, {
        quantize: run.ftype.toLowerCase() as QuantizeTarget,
        threads: 0,
        ...optionsOf(run.args),
      });
      if (run.refused !== undefined) {
        await rejects(convert, (e: unknown) =>
          e instanceof UsageError &&
          e.message.includes(`tensor "${refusedTensor(run.refused!)}"`) &&
          /importance matrix/.test(e.message));
        await rejects(Deno.stat(`${dir}/out.gguf`), Deno.errors.NotFound);
        return;
      }
      await convert;
      assertSameOutput(await outputOf(`${dir}/out.gguf`), run.outputs![0]!);
      // --imatrix, --override-kv and --prune-layers write keys: every pair, in order.
      if (run.kv !== undefined) assertEquals(await kvOf(`${dir}/out.gguf`), run.kv);
    });
  });
}

Deno.test("the fixture's runs cover --imatrix with every per-tensor flag, on the dense model (rows of 136) and the MoE one", () => {
  const flags = (r: OptionRun) => new Set(r.args.filter((a) => a.startsWith("--")));
  for (const model of ["dense", "moe"]) {
    const withImatrix = FROM_F32.filter((r) => r.model === model && flags(r).has("--imatrix"));
    const covered = new Set(withImatrix.flatMap((r) => [...flags(r)]));
    for (
      const flag of ["--tensor-type", "--tensor-type-file", "--exclude-weights", "--prune-layers"]
    ) {
      assertEquals([model, flag, covered.has(flag)], [model, flag, true]);
    }
  }
  assertEquals(FROM_F32.some((r) => flags(r).has("--override-kv") && r.kv !== undefined), true);
});

/**
 * `apr convert` of the run's F32 source with its flags, in the fixtures'
 * folder as make_fixtures.py ran llama-quantize, checked against its file:
 * every tensor, and every metadata pair where the run recorded them.
 */
async function assertCliRun(dir: string, run: OptionRun): Promise<void> {
  await Deno.writeFile(`${dir}/f32.gguf`, sourceGguf(manifest(run.model)));
  const out = `${dir}/out.gguf`;
  const cli = await runApr(
    ["convert", `${dir}/f32.gguf`, "--quantize", run.ftype, ...run.args, "--threads", "0"]
      .concat(["-f", "-o", out]),
    { cwd: FIXTURES },
  );
  assertEquals(cli.code, 0, cli.stderr);
  assertSameOutput(await outputOf(out), run.outputs![0]!);
  if (run.kv !== undefined) assertEquals(await kvOf(out), run.kv);
}

Deno.test("apr convert reads --tensor-type-file and --imatrix as llama-quantize: the file's entries where the flag stands among --tensor-type", async () => {
  const run = FROM_F32.find((r) =>
    r.args.includes("--tensor-type-file") && r.args.includes("--tensor-type") && r.model === "dense"
  )!;
  await withTempDir((dir) => assertCliRun(dir, run));
});

Deno.test("apr convert takes --override-kv, --prune-layers, --include-weights and --exclude-weights as llama-quantize spells them", async () => {
  const runs = FROM_F32.filter((r) =>
    !r.refused && ["--override-kv", "--prune-layers", "--include-weights", "--exclude-weights"]
      .some((f) => r.args.includes(f))
  );
  await withTempDir(async (dir) => {
    for (const run of runs.slice(0, 4)) await assertCliRun(dir, run);
  });
});

Deno.test("apr convert takes llama-quantize's flags as llama-quantize spells them (repeatable --tensor-type, any case)", async () => {
  const run = FROM_F32.find((r) => r.args.includes("--tensor-type") && r.model === "dense")!;
  await withTempDir(async (dir) => {
    await Deno.writeFile(`${dir}/f32.gguf`, sourceGguf(manifest(run.model)));
    const cli = await runApr([
      "convert",
      `${dir}/f32.gguf`,
      "--quantize",
      run.ftype,
      ...run.args,
      "--threads",
      "0",
      "-o",
      `${dir}/out.gguf`,
    ]);
    assertEquals(cli.code, 0, cli.stderr);
    assertSameOutput(await outputOf(`${dir}/out.gguf`), run.outputs![0]!);
  });
});

Deno.test("apr convert refuses llama-quantize's flags with a bad value, without GGUF or without a file type: exit 2, one line, nothing written", async () => {
  await withTempDir(async (dir) => {
    await Deno.writeFile(`${dir}/f32.gguf`, sourceGguf(manifest("dense")));
    const cases: [string[], RegExp][] = [
      [
        ["--quantize", "q4_k_m", "--output-tensor-type", "q9_k"],
        /--output-tensor-type: "q9_k" is not a ggml type/,
      ],
      [
        ["--quantize", "q4_k_m", "--token-embedding-type", "i32"],
        /--token-embedding-type: aprkit cannot quantize to I32/,
      ],
      [
        ["--quantize", "q4_k_m", "--tensor-type", "attn_(q=q8_0"],
        /--tensor-type "attn_\(q=q8_0": "attn_\(q" is not a regular expression/,
      ],
      [
        ["--quantize", "q4_k_m", "--tensor-type", "attn_q"],
        /--tensor-type "attn_q" is not PATTERN=TYPE/,
      ],
      [["--quantize", "q4_k_m", "--tensor-type", "=q8_0"], /is not PATTERN=TYPE/],
      [["--quantize", "q4_k_m", "--tensor-type", "attn_q=f99"], /"f99" is not a ggml type/],
      [
        ["--pure"],
        /--pure: for GGUF output with a llama-quantize file type only \(--quantize q4_k_m, …; --allow-requantize with "q4_k" too\), not gguf with --quantize none/,
      ],
      [
        ["--quantize", "q4_k", "--allow-requantize", "--pure"],
        /--pure, --allow-requantize: for GGUF output with a llama-quantize file type only .*--quantize q4_k/,
      ],
      [
        ["--quantize", "q4_k", "--allow-requantize", "--format", "apr"],
        /--allow-requantize: for GGUF output .*not apr with --quantize q4_k/,
      ],
      [
        ["--quantize", "f16", "--leave-output-tensor"],
        /--leave-output-tensor: for GGUF output .*--quantize f16/,
      ],
      [
        ["--quantize", "q4_k_m", "--keep-split"],
        /--keep-split: ".*f32\.gguf" is not a split GGUF set/,
      ],
      [
        ["--quantize", "q4_k_m", "--keep-split", "--max-shard-size", "1MB"],
        /--keep-split splits as the source is split; it cannot be combined with --max-shard-size/,
      ],
      [
        ["--quantize", "q4_k_m", "--format", "apr", "--output-tensor-type", "q8_0"],
        /--output-tensor-type: for GGUF output .*not apr/,
      ],
      [
        ["--quantize", "q4_k_m", "--tensor-type-file", `${dir}/none.txt`],
        /--tensor-type-file ".*none\.txt": no such file/,
      ],
      [
        ["--quantize", "q4_k_m", "--tensor-type-file", `${dir}/bad.txt`],
        /--tensor-type-file ".*bad\.txt": --tensor-type "attn_q" is not PATTERN=TYPE/,
      ],
      [
        ["--quantize", "q4_k_m", "--include-weights", "attn"],
        /--include-weights and --exclude-weights choose entries .*: give --imatrix too/,
      ],
      [
        [
          "--quantize",
          "q4_k_m",
          "--imatrix",
          imatrixPath("dense"),
          "--include-weights",
          "attn",
          "--exclude-weights",
          "ffn",
        ],
        /--include-weights and --exclude-weights cannot be used together/,
      ],
      [
        ["--quantize", "q4_k_m", "--override-kv", "general.name"],
        /--override-kv "general\.name" is not KEY=TYPE:VALUE/,
      ],
      [
        ["--quantize", "q4_k_m", "--override-kv", "a.b=int:x"],
        /--override-kv "a\.b=int:x": int: takes a whole number/,
      ],
      [
        ["--quantize", "q4_k_m", "--override-kv", "a.b=u8:1"],
        /the type must be int, float, bool or str/,
      ],
      [
        ["--quantize", "q4_k_m", "--override-kv", "llama.block_count=int:8"],
        /llama\.block_count is one llama-quantize chooses tensor types by/,
      ],
      [
        ["--quantize", "q4_k_m", "--prune-layers", "3,x"],
        /--prune-layers: "x" is not a layer number/,
      ],
      [
        ["--quantize", "q4_k_m", "--prune-layers", "16"],
        /--prune-layers: the model has no layer 16 \(its layers are 0 to 15\)/,
      ],
    ];
    await Deno.writeTextFile(`${dir}/bad.txt`, "attn_v=q8_0\nattn_q\n");
    for (const [args, pattern] of cases) {
      const out = args.includes("apr") ? `${dir}/x.apr` : `${dir}/x.gguf`;
      const run = await runApr(["convert", `${dir}/f32.gguf`, ...args, "-o", out]);
      assertOneLineError(run, pattern);
      await rejects(Deno.stat(out), Deno.errors.NotFound);
    }
  });
});

for (const run of OPTION_RUNS.filter((r) => r.source === "q8_0")) {
  Deno.test(`convertModel() of llama-quantize's ${run.model} Q8_0 file with ${run.ftype} ${run.args.join(" ")} ${run.refused ? "refuses as" : "equals"} llama-quantize`, async () => {
    await withTempDir(async (dir) => {
      // The Q8_0 source: aprkit's, equal to llama-quantize's (llama_quantize_types_test.ts).
      await Deno.writeFile(`${dir}/f32.gguf`, sourceGguf(manifest(run.model)));
      await convertModel(`${dir}/f32.gguf`, `${dir}/q8_0.gguf`, { quantize: "q8_0", threads: 0 });
      const q8 = manifest(run.model).runs.find((r) => r.ftype === "Q8_0" && !r.imatrix)!;
      const source = await outputOf(`${dir}/q8_0.gguf`);
      assertEquals(
        source.sha256_16,
        source.names.map((n) =>
          q8.sha256_16![manifest(run.model).tensors.findIndex(([m]) => m === n)]
        ),
      );
      const convert = convertModel(`${dir}/q8_0.gguf`, `${dir}/out.gguf`, {
        quantize: run.ftype.toLowerCase() as QuantizeTarget,
        threads: 0,
        ...optionsOf(run.args),
      });
      if (run.refused !== undefined) {
        await rejects(
          convert,
          (e: unknown) => e instanceof UsageError && e.message.includes(run.refused!),
        );
        await rejects(Deno.stat(`${dir}/out.gguf`), Deno.errors.NotFound);
        return;
      }
      await convert;
      assertSameOutput(await outputOf(`${dir}/out.gguf`), run.outputs![0]!);
    });
  });
}

/** `dir`/q8_0.gguf: aprkit's Q8_0 file of the model, equal to llama-quantize's (checked above). */
async function q8_0Source(dir: string, model: "dense" | "moe"): Promise<void> {
  await Deno.writeFile(`${dir}/f32.gguf`, sourceGguf(manifest(model)));
  await convertModel(`${dir}/f32.gguf`, `${dir}/q8_0.gguf`, { quantize: "q8_0", threads: 0 });
}

Deno.test("apr convert of a quantized GGUF to a file type, or to the single type q4_k, refuses requantizing without --allow-requantize: exit 2, one line naming file, tensor, type and flag, nothing written", async () => {
  await withTempDir(async (dir) => {
    await q8_0Source(dir, "dense");
    const out = `${dir}/x.gguf`;
    // output.weight: Q6_K in Q4_K_M's mix, Q4_K in its --pure file.
    for (const [quantize, type] of [["Q4_K_M", "Q6_K"], ["q4_k", "Q4_K"]]) {
      const run = await runApr(["convert", `${dir}/q8_0.gguf`, "--quantize", quantize!, "-o", out]);
      assertOneLineError(
        run,
        `"${dir}/q8_0.gguf"`,
        `tensor "output.weight" from Q8_0 to ${type}: requantizing from type q8_0 is disabled, ` +
          "as in llama-quantize (--allow-requantize decodes",
      );
      await rejects(Deno.stat(out), Deno.errors.NotFound);
    }
  });
});

// The single type q4_k of a GGUF already quantized is llama-quantize's --pure
// Q4_K_M of it: refused as llama-quantize refuses it, its bytes with the flag.
const PURE_Q4_K_RUNS = OPTION_RUNS.filter((r) =>
  r.source === "q8_0" && r.ftype === "Q4_K_M" && r.args.join(" ") === "--allow-requantize --pure"
);
const REFUSED_Q4_K_M = OPTION_RUNS.find((r) =>
  r.source === "q8_0" && r.ftype === "Q4_K_M" && r.args.length === 0
)!.refused!;

for (const run of PURE_Q4_K_RUNS) {
  Deno.test(`convertModel() of llama-quantize's ${run.model} Q8_0 file to GGUF q4_k refuses as llama-quantize, and with allowRequantize equals llama-quantize --pure --allow-requantize Q4_K_M`, async () => {
    await withTempDir(async (dir) => {
      await q8_0Source(dir, run.model);
      await rejects(
        convertModel(`${dir}/q8_0.gguf`, `${dir}/refused.gguf`, { quantize: "q4_k", threads: 0 }),
        (e: unknown) =>
          e instanceof UsageError && e.message.includes(REFUSED_Q4_K_M) &&
          e.message.includes(`"${dir}/q8_0.gguf"`) && /tensor "[^"]+" from Q8_0/.test(e.message),
      );
      await rejects(Deno.stat(`${dir}/refused.gguf`), Deno.errors.NotFound);
      await convertModel(`${dir}/q8_0.gguf`, `${dir}/out.gguf`, {
        quantize: "q4_k",
        allowRequantize: true,
        threads: 0,
      });
      assertSameOutput(await outputOf(`${dir}/out.gguf`), run.outputs![0]!);
    });
  });
}

Deno.test("apr convert of a quantized GGUF to the single type q4_k with --allow-requantize writes llama-quantize's --pure --allow-requantize Q4_K_M file", async () => {
  await withTempDir(async (dir) => {
    await q8_0Source(dir, "dense");
    const out = `${dir}/x.gguf`;
    const written = await runApr([
      "convert",
      `${dir}/q8_0.gguf`,
      "--quantize",
      "q4_k",
      "--allow-requantize",
      "-o",
      out,
    ]);
    assertEquals(written.code, 0, written.stderr);
    const want = PURE_Q4_K_RUNS.find((r) => r.model === "dense")!.outputs![0]!;
    assertSameOutput(await outputOf(out), want);
  });
});

/** Tensors per shard of the split sources (make_fixtures.py's SPLIT_TENSORS). */
const SPLIT_TENSORS = { dense: 60, moe: 30 };

for (const run of OPTION_RUNS.filter((r) => r.source === "split")) {
  Deno.test(`convertModel() of the ${run.model} F32 split set with ${run.ftype} ${run.args.join(" ")} equals llama-quantize's ${run.outputs!.length} file(s)`, async () => {
    await withTempDir(async (dir) => {
      const shards = sourceGgufSplit(manifest(run.model), SPLIT_TENSORS[run.model]);
      for (const [i, bytes] of shards.entries()) {
        const n = (k: number) => String(k).padStart(5, "0");
        await Deno.writeFile(`${dir}/in-${n(i + 1)}-of-${n(shards.length)}.gguf`, bytes);
      }
      const result = await convertModel(
        `${dir}/in-00001-of-0000${shards.length}.gguf`,
        `${dir}/out.gguf`,
        {
          quantize: run.ftype.toLowerCase() as QuantizeTarget,
          threads: 0,
          ...optionsOf(run.args),
        },
      );
      const written = run.outputs!.length === 1 ? [`${dir}/out.gguf`] : result.shards!;
      assertEquals(written.map((p) => p.slice(dir.length + 1)), run.outputs!.map((o) => o.name));
      for (const [i, path] of written.entries()) {
        assertSameOutput(await outputOf(path), run.outputs![i]!);
      }
    });
  });
}
