import { deepStrictEqual as assertEquals, ok, rejects } from "node:assert/strict";
import { convertModel } from "../../src/pipeline/convert_model.ts";
import { openModel } from "../../src/pipeline/open_model.ts";
import { parseGgufHeader } from "../../src/formats/gguf/header.ts";
import { openFileSource } from "../../src/io/file_source.ts";
import { UsageError } from "../../src/errors.ts";
import type { QuantizeTarget } from "../../src/quant/plan_quantization.ts";
import { assertOneLineError, runApr, withTempDir } from "../cli/_run_apr.ts";
import { imatrixPath, manifest, sha16, sourceGguf } from "../quant/_llama_quantize_fixture.ts";

// Whole files, as a user makes them: `apr convert F32.gguf --quantize TYPE`
// against llama.cpp de3ff81's llama-quantize of the same F32 GGUF
// (tests/testdata/llama_quantize/): every tensor by type and bytes, the file
// type, and its refusals (exit 2, one line, nothing written).

/** Type and sha256 prefix of every tensor of a GGUF, by name. */
async function tensorsOf(path: string): Promise<Map<string, [string, string]>> {
  const model = await openModel(path, { keepNames: true });
  try {
    const out = new Map<string, [string, string]>();
    for (const t of model.header.tensors) {
      out.set(t.name, [t.dtype, await sha16(await model.tensor(t.name).bytes())]);
    }
    return out;
  } finally {
    await model.close();
  }
}

async function fileType(path: string): Promise<unknown> {
  const source = await openFileSource(path);
  try {
    return (await parseGgufHeader(source)).kv.get("general.file_type")?.value;
  } finally {
    await source.close?.();
  }
}

/** Runs covering the legacy types, the low-bit K-quant mixes, ternary and MXFP4, both models. */
const CASES: [string, string, boolean][] = [
  ["dense", "Q4_0", true],
  ["dense", "Q5_1", false],
  ["dense", "Q2_K", false],
  ["dense", "Q3_K_M", true],
  ["dense", "TQ1_0", false],
  ["moe", "Q2_K_S", true],
  ["moe", "Q3_K_L", false],
  ["moe", "MXFP4_MOE", false],
  ["moe", "Q2_0", true],
];

for (const [key, ftype, imatrix] of CASES) {
  Deno.test(`convertModel() of the ${key} F32 GGUF with ${ftype}${imatrix ? " and an imatrix" : ""} equals llama-quantize's file, tensor for tensor`, async () => {
    const m = manifest(key);
    const run = m.runs.find((r) => r.ftype === ftype && r.imatrix === imatrix)!;
    await withTempDir(async (dir) => {
      await Deno.writeFile(`${dir}/f32.gguf`, sourceGguf(m));
      await convertModel(`${dir}/f32.gguf`, `${dir}/out.gguf`, {
        quantize: ftype.toLowerCase() as QuantizeTarget,
        ...(imatrix ? { imatrix: imatrixPath(key) } : {}),
        threads: 2,
      });
      const got = await tensorsOf(`${dir}/out.gguf`);
      assertEquals([...got.keys()].sort(), m.tensors.map(([n]) => n).sort());
      m.tensors.forEach(([name], i) => {
        assertEquals([name, ...got.get(name)!], [name, run.types![i], run.sha256_16![i]]);
      });
      assertEquals(await fileType(`${dir}/out.gguf`), run.file_type);
    });
  });
}

Deno.test("apr convert refuses as llama-quantize does: an i-quant mix without --imatrix, Q1_0 rows with no fallback, a mix APR has no types for", async () => {
  await withTempDir(async (dir) => {
    const dense = manifest("dense");
    await Deno.writeFile(`${dir}/f32.gguf`, sourceGguf(dense));
    const src = `${dir}/f32.gguf`;
    for (
      const [type, format, pattern] of [
        [
          "iq2_xxs",
          "gguf",
          /IQ2_XXS without an importance matrix: tensor "blk\.0\.attn_k\.weight"/,
        ],
        ["q2_k_s", "gguf", /Q2_K_S without an importance matrix/],
        ["q1_0", "gguf", /blk\.0\.ffn_down\.weight.*llama-quantize has no fallback type/],
        ["q3_k_m", "apr", /"q3_k_m" for APR: its Q3_K tensors have no APR type/],
      ] as const
    ) {
      const out = `${dir}/x.${format}`;
      const run = await runApr(["convert", src, "--quantize", type, "-o", out]);
      assertOneLineError(run, pattern);
      await rejects(Deno.stat(out), Deno.errors.NotFound);
    }
  });
});

Deno.test("convertModel() refuses a missing imatrix entry a very-low-bit tensor needs", async () => {
  await withTempDir(async (dir) => {
    const moe = manifest("moe");
    await Deno.writeFile(`${dir}/f32.gguf`, sourceGguf(moe));
    // The imatrix without blk.3.ffn_up_exps.weight: Q2_K_S's Q2_K tensor there needs it.
    const bytes = await Deno.readFile(imatrixPath("moe"));
    const trimmed = dropImatrixEntry(bytes, "blk.3.ffn_up_exps.weight");
    await Deno.writeFile(`${dir}/part.imatrix.dat`, trimmed);
    await rejects(
      convertModel(`${dir}/f32.gguf`, `${dir}/x.gguf`, {
        quantize: "q2_k_s",
        imatrix: `${dir}/part.imatrix.dat`,
      }),
      (e: unknown) =>
        e instanceof UsageError &&
        /no entry for tensor "blk\.3\.ffn_up_exps\.weight"/.test(e.message),
    );
  });
});

/** A legacy imatrix file without one entry. */
function dropImatrixEntry(bytes: Uint8Array, drop: string): Uint8Array {
  const dv = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const n = dv.getInt32(0, true);
  const parts: Uint8Array[] = [];
  let o = 4;
  let kept = 0;
  for (let i = 0; i < n; i++) {
    const len = dv.getInt32(o, true);
    const name = new TextDecoder().decode(bytes.subarray(o + 4, o + 4 + len));
    const nval = dv.getInt32(o + 8 + len, true);
    const end = o + 12 + len + 4 * nval;
    if (name !== drop) {
      parts.push(bytes.subarray(o, end));
      kept++;
    }
    o = end;
  }
  ok(kept === n - 1);
  const head = new Uint8Array(4);
  new DataView(head.buffer).setInt32(0, kept, true);
  const out = new Uint8Array(4 + parts.reduce((s, p) => s + p.length, 0) + (bytes.length - o));
  out.set(head);
  let w = 4;
  for (const p of parts) {
    out.set(p, w);
    w += p.length;
  }
  out.set(bytes.subarray(o), w);
  return out;
}
