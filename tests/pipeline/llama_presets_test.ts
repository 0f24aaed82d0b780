import { deepStrictEqual as assertEquals, ok, rejects } from "node:assert/strict";
import { convertModel } from "../../src/pipeline/convert_model.ts";
import { openModel } from "../../src/pipeline/open_model.ts";
import { parseGgufHeader } from "../../src/formats/gguf/header.ts";
import { openFileSource } from "../../src/io/file_source.ts";
import { ModelFormatError, UsageError } from "../../src/errors.ts";
import type { QuantizeTarget } from "../../src/quant/plan_quantization.ts";
import { testdata, withTempDir } from "./_helpers.ts";

// The judges of issue 12: llama.cpp c392e50's own files. tiny-qwen2 is a BF16
// transformers checkpoint (tied embeddings, q/k/v biases); its llama-quantize
// outputs were made from the F32 GGUF whose values equal the BF16 ones.
const QWEN = testdata("hf/tiny-qwen2");
const IMATRIX = testdata("gguf/tiny-qwen2-imatrix.dat");

interface Tensor {
  dtype: string;
  shape: string;
  bytes: Uint8Array;
}

/** Every tensor of a GGUF file by its GGUF name. */
async function ggufTensors(path: string): Promise<Map<string, Tensor>> {
  const model = await openModel(path, { keepNames: true });
  try {
    const out = new Map<string, Tensor>();
    for (const t of model.header.tensors) {
      out.set(t.name, {
        dtype: t.dtype,
        shape: String(t.shape),
        bytes: await model.tensor(t.name).bytes(),
      });
    }
    return out;
  } finally {
    await model.close();
  }
}

/** Tensor for tensor (any order): the same names, types, shapes and bytes. */
async function assertSameTensors(mine: string, theirs: string): Promise<void> {
  const a = await ggufTensors(mine);
  const b = await ggufTensors(theirs);
  assertEquals([...a.keys()].sort(), [...b.keys()].sort());
  for (const [name, t] of b) {
    const m = a.get(name)!;
    assertEquals([name, m.dtype, m.shape], [name, t.dtype, t.shape]);
    ok(m.bytes.length === t.bytes.length && m.bytes.every((v, i) => v === t.bytes[i]), name);
  }
}

async function fileType(path: string): Promise<[unknown, unknown]> {
  const source = await openFileSource(path);
  try {
    const h = await parseGgufHeader(source);
    return [h.kv.get("general.file_type")?.value, h.kv.get("general.quantization_version")?.value];
  } finally {
    await source.close?.();
  }
}

const QWEN_CASES: { to: QuantizeTarget; file: string; ftype: number; imatrix?: boolean }[] = [
  { to: "q4_k_m", file: "tiny-qwen2-Q4_K_M.gguf", ftype: 15 },
  { to: "q4_k_s", file: "tiny-qwen2-Q4_K_S.gguf", ftype: 14 },
  { to: "q6_k", file: "tiny-qwen2-Q6_K.gguf", ftype: 18 },
  { to: "q8_0", file: "tiny-qwen2-Q8_0.gguf", ftype: 7 },
  { to: "q4_k_m", file: "tiny-qwen2-Q4_K_M-imatrix.gguf", ftype: 15, imatrix: true },
];

for (const c of QWEN_CASES) {
  Deno.test(`convertModel() of the tiny-qwen2 checkpoint with ${c.to}${c.imatrix ? " and --imatrix" : ""} equals llama-quantize's ${c.file}`, async () => {
    await withTempDir(async (dir) => {
      const out = `${dir}/x.gguf`;
      await convertModel(QWEN, out, {
        quantize: c.to,
        ...(c.imatrix ? { imatrix: IMATRIX } : {}),
        threads: 0,
      });
      await assertSameTensors(out, testdata(`gguf/${c.file}`));
      assertEquals(await fileType(out), [c.ftype, 2]);
    });
  });
}

// The tiny llama fixture (untied output.weight, ffn 768): token_embd keeps the
// preset's base type, output.weight gets Q6_K.
for (const to of ["q4_k_m", "q6_k", "q8_0"] as const) {
  Deno.test(`convertModel() of tiny-llama-f32.gguf with ${to} equals llama-quantize's tiny-llama-${to}.gguf`, async () => {
    await withTempDir(async (dir) => {
      const out = `${dir}/x.gguf`;
      await convertModel(testdata("gguf/tiny-llama-f32.gguf"), out, { quantize: to, threads: 2 });
      await assertSameTensors(out, testdata(`gguf/tiny-llama-${to}.gguf`));
    });
  });
}

Deno.test("convertModel() with a preset and a worker pool gives the same bytes as in-thread", async () => {
  await withTempDir(async (dir) => {
    await convertModel(QWEN, `${dir}/a.gguf`, { quantize: "q4_k_s", threads: 2, imatrix: IMATRIX });
    await convertModel(QWEN, `${dir}/b.gguf`, { quantize: "q4_k_s", threads: 0, imatrix: IMATRIX });
    await assertSameTensors(`${dir}/a.gguf`, `${dir}/b.gguf`);
  });
});

Deno.test("convertModel() maps a preset to Q4_K/Q6_K/F32 for APR, with the same blocks as GGUF", async () => {
  await withTempDir(async (dir) => {
    const result = await convertModel(QWEN, `${dir}/x.apr`, { quantize: "q4_k_s", threads: 0 });
    // Q4_K_S gives attn_v Q5_K in both layers: APR holds them as Q6_K.
    assertEquals(Object.keys(result.dtypes).sort(), ["F32", "Q4_K", "Q6_K"]);
    const apr = await openModel(`${dir}/x.apr`);
    const gguf = await ggufTensors(testdata("gguf/tiny-qwen2-Q4_K_S.gguf"));
    try {
      const v = apr.header.tensors.find((t) =>
        t.name === "model.layers.0.self_attn.v_proj.weight"
      )!;
      assertEquals(v.dtype, "Q6_K");
      const q = await apr.tensor("model.layers.0.self_attn.q_proj.weight").bytes();
      assertEquals(q, gguf.get("blk.0.attn_q.weight")!.bytes);
      const norm = apr.header.tensors.find((t) => t.name === "model.norm.weight")!;
      assertEquals(norm.dtype, "F32");
    } finally {
      await apr.close();
    }
  });
});

Deno.test("convertModel() rejects q8_0 for APR and an imatrix without a K-quant target", async () => {
  await withTempDir(async (dir) => {
    await rejects(
      convertModel(QWEN, `${dir}/x.apr`, { quantize: "q8_0" }),
      (e: unknown) =>
        e instanceof UsageError && /quantize: "q8_0" works for GGUF output only/.test(e.message),
    );
    await rejects(
      convertModel(QWEN, `${dir}/x.gguf`, { quantize: "f16", imatrix: IMATRIX }),
      (e: unknown) =>
        e instanceof UsageError &&
        /the imatrix option needs a K-quant quantize target/.test(e.message),
    );
  });
});

Deno.test("convertModel() stops, naming the matrix, when an importance entry has the wrong size", async () => {
  await withTempDir(async (dir) => {
    const bad = new Map([["blk.0.ffn_down.weight", new Float32Array(256).fill(1)]]);
    await rejects(
      convertModel(QWEN, `${dir}/x.gguf`, {
        quantize: "q4_k_m",
        imatrix: { source: "bad.dat", entries: bad },
      }),
      (e: unknown) =>
        e instanceof ModelFormatError && e.path === "bad.dat" &&
        /size 256 is different from tensor size 512 for blk\.0\.ffn_down\.weight/.test(e.message),
    );
    // Nothing is left at the output path.
    await rejects(Deno.stat(`${dir}/x.gguf`));
    await rejects(Deno.stat(`${dir}/x.gguf.partial`));
  });
});

/** The legacy .dat fixture rewritten in llama-imatrix's GGUF form (sums and call counts as they are). */
async function imatrixAsGguf(path: string): Promise<void> {
  const { encodeGguf } = await import("../../src/formats/gguf/writer.ts");
  const dat = await Deno.readFile(IMATRIX);
  const dv = new DataView(dat.buffer);
  const tensors = [];
  let p = 4;
  for (let i = dv.getInt32(0, true); i > 0; i--) {
    const length = dv.getInt32(p, true);
    const name = new TextDecoder().decode(dat.subarray(p + 4, p + 4 + length));
    p += 4 + length;
    const ncall = dv.getInt32(p, true);
    const nval = dv.getInt32(p + 4, true);
    p += 8;
    const sums = dat.slice(p, p + 4 * nval);
    p += 4 * nval;
    tensors.push({ name: `${name}.in_sum2`, dtype: "F32" as const, ne: [nval, 1], data: sums });
    tensors.push({
      name: `${name}.counts`,
      dtype: "F32" as const,
      ne: [1, 1],
      data: new Uint8Array(new Float32Array([ncall]).buffer),
    });
  }
  await Deno.writeFile(
    path,
    encodeGguf({
      kv: [
        ["imatrix.datasets", { type: 9, value: ["imatrix-calib.txt"], arrayTypes: [8] }],
        ["imatrix.chunk_count", { type: 4, value: 8 }],
        ["imatrix.chunk_size", { type: 4, value: 64 }],
      ],
      tensors,
    }),
  );
}

Deno.test("convertModel() with the same importance matrix in GGUF form gives llama-quantize's --imatrix bytes", async () => {
  await withTempDir(async (dir) => {
    await imatrixAsGguf(`${dir}/imatrix.gguf`);
    await convertModel(QWEN, `${dir}/x.gguf`, {
      quantize: "q4_k_m",
      imatrix: `${dir}/imatrix.gguf`,
      threads: 0,
    });
    await assertSameTensors(`${dir}/x.gguf`, testdata("gguf/tiny-qwen2-Q4_K_M-imatrix.gguf"));
  });
});

Deno.test("convertModel() of the example model (hidden 128) falls back to Q5_0/Q8_0 as llama-quantize, from HF or from llama.cpp's own F32 conversion alike", async () => {
  await withTempDir(async (dir) => {
    // Rows of 128 values are not whole super-blocks: Q4_K → Q5_0, Q6_K → Q8_0,
    // and the tied output (token_embd) Q8_0. The HF source also goes through
    // the Q/K row permutation llama.cpp's converter applies to llama models.
    await convertModel(testdata("../../examples/tiny-llama"), `${dir}/hf.gguf`, {
      quantize: "q4_k_m",
    });
    await convertModel(testdata("gguf/hf-convert/tiny-llama-hf-f32.gguf"), `${dir}/f32.gguf`, {
      quantize: "q4_k_m",
    });
    await assertSameTensors(`${dir}/hf.gguf`, `${dir}/f32.gguf`);
    const types = new Set([...(await ggufTensors(`${dir}/hf.gguf`)).values()].map((t) => t.dtype));
    assertEquals([...types].sort(), ["F32", "Q5_0", "Q8_0"]);
  });
});

/** The `quantize.*` pairs of a GGUF file, in file order, with their type ids. */
async function quantizeKeys(path: string): Promise<[string, number, unknown][]> {
  const source = await openFileSource(path);
  try {
    const h = await parseGgufHeader(source);
    return [...h.kv].filter(([k]) => k.startsWith("quantize.")).map((
      [k, v],
    ) => [k, v.type, v.value]);
  } finally {
    await source.close?.();
  }
}

Deno.test("convertModel() --imatrix writes llama-quantize's quantize.imatrix.* keys, last, the file by its base name (issue 12)", async () => {
  const theirs = await quantizeKeys(testdata("gguf/tiny-qwen2-Q4_K_M-imatrix.gguf"));
  // llama-quantize recorded the path it was given; aprkit records the base name.
  assertEquals(theirs[0], ["quantize.imatrix.file", 8, "tiny-qwen2-gguf/tiny-qwen2-imatrix.dat"]);
  // c392e50 wrote the counts as INT32 (5); the llama.cpp node-llama-cpp 3.22.1 bundles writes UINT32 (4).
  assertEquals(theirs.slice(2).map(([, type]) => type), [5, 5]);
  const uint32 = theirs.slice(1).map(([k, type, v]) => [k, type === 5 ? 4 : type, v]);
  const expected = [["quantize.imatrix.file", 8, "tiny-qwen2-imatrix.dat"], ...uint32];
  assertEquals(expected.map(([k]) => k), [
    "quantize.imatrix.file",
    "quantize.imatrix.dataset",
    "quantize.imatrix.entries_count",
    "quantize.imatrix.chunks_count",
  ]);
  await withTempDir(async (dir) => {
    await convertModel(QWEN, `${dir}/dat.gguf`, {
      quantize: "q4_k_m",
      imatrix: IMATRIX,
      threads: 0,
    });
    assertEquals(await quantizeKeys(`${dir}/dat.gguf`), expected);
    // The same matrix in GGUF form: the dataset from imatrix.datasets, chunks from imatrix.chunk_count.
    await imatrixAsGguf(`${dir}/tiny-qwen2-imatrix.dat`.replace(".dat", ".gguf"));
    await convertModel(QWEN, `${dir}/g.gguf`, {
      quantize: "q4_k_m",
      imatrix: `${dir}/tiny-qwen2-imatrix.gguf`,
      threads: 0,
    });
    assertEquals(await quantizeKeys(`${dir}/g.gguf`), [
      ["quantize.imatrix.file", 8, "tiny-qwen2-imatrix.gguf"],
      ...uint32,
    ]);
    // As llama-quantize, the keys come last, after general.file_type.
    const source = await openFileSource(`${dir}/dat.gguf`);
    try {
      const keys = [...(await parseGgufHeader(source)).kv.keys()];
      assertEquals(keys.slice(-4), expected.map(([k]) => k));
      ok(keys.indexOf("general.file_type") < keys.length - 4);
    } finally {
      await source.close?.();
    }
    // Without --imatrix, none.
    await convertModel(QWEN, `${dir}/plain.gguf`, { quantize: "q4_k_m", threads: 0 });
    assertEquals(await quantizeKeys(`${dir}/plain.gguf`), []);
  });
});
