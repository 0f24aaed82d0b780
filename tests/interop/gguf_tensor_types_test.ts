/**
 * Issue 10 items 3 and 4: what a GGUF export does with tensors GGUF cannot
 * hold as they are, and which float type an APR import keeps. Judged by
 * llama.cpp (the file loads and runs) and by the decoded values.
 */

import assert from "node:assert/strict";
import { convertModel } from "../../src/pipeline/convert_model.ts";
import { hasPaddedRows } from "../../src/formats/gguf/tensor_storage.ts";
import { decodeF16, encodeF16 } from "../../src/quant/f16.ts";
import { DEMO_MODEL, withTempDir } from "../cli/_run_apr.ts";
import { readGgufFile, readTensors, readValues, sameBytes } from "./_files.ts";
import { encodeFromFloat32 } from "../../src/quant/encode.ts";
import { decodeToFloat32 } from "../../src/quant/decode.ts";
import { encodeApr } from "../../src/formats/apr/encode_apr.ts";
import { llamaGenerate } from "./_llama_judge.ts";
import { openModel } from "../../src/pipeline/open_model.ts";

Deno.test("row-padded Q4_K tensors go to GGUF as llama-quantize's Q5_0 with one warning, and llama.cpp runs the file", async () => {
  await withTempDir(async (dir) => {
    // tiny-llama's rows hold 128 or 192 values: Q4_K pads each row to 256
    // when asked to (rowFallback "padded"; the default is APR_Q8).
    const apr = `${dir}/q4k.apr`;
    await convertModel(DEMO_MODEL, apr, { quantize: "q4_k", rowFallback: "padded" });
    const model = await openModel(apr);
    const padded = model.header.tensors.filter(hasPaddedRows).map((t) => t.name);
    await model.close();
    assert.equal(padded.length, 16);

    const warnings: string[] = [];
    const out = `${dir}/q4k.gguf`;
    await convertModel(apr, out, { onWarning: (w) => warnings.push(w) });
    // lm_head is the tied embedding's copy and is dropped: 15 tensors.
    assert.deepEqual(warnings, [
      "15 Q4_K tensor(s) have rows that are not whole blocks (padded per row), which GGUF " +
      "cannot hold; writing them as Q5_0, as llama-quantize does",
    ]);
    const gguf = await readGgufFile(out);
    const types = [...gguf.tensors.values()].map((t) => t.dtype);
    assert.equal(types.filter((t) => t === "Q5_0").length, 15);
    assert.equal(types.filter((t) => t === "F32").length, 5);
    assert.equal(gguf.kv.get("general.file_type")?.value, 8, "mostly Q5_0");
    // Each is the Q5_0 encoding of the Q4_K values (Q/K rows permuted for llama.cpp).
    const q4k = await readValues(apr);
    const stored = await readTensors(out, { keepNames: false });
    for (const [name, t] of stored) {
      if (t.dtype !== "Q5_0" || /[qk]_proj/.test(name)) continue;
      const want = encodeFromFloat32("Q5_0", q4k.get(name)!, t.shape);
      assert.ok(sameBytes(t.bytes, want), name);
    }
    const [run] = await llamaGenerate([out], 4);
    assert.equal(run!.generated.length, 4);
  });
});

Deno.test("--quantize q4_k to GGUF: rows that are not whole super-blocks are llama-quantize's Q5_0 of the source values (not of a padded Q4_K), in one note", async () => {
  await withTempDir(async (dir) => {
    const notes: string[] = [];
    const warnings: string[] = [];
    const out = `${dir}/q4k.gguf`;
    await convertModel(DEMO_MODEL, out, {
      quantize: "q4_k",
      onNote: (n) => notes.push(n),
      onWarning: (w) => warnings.push(w),
    });
    assert.deepEqual(warnings, []);
    assert.equal(notes.length, 1, notes.join("\n"));
    assert.match(
      notes[0]!,
      /^15 tensor\(s\) have rows of .*, not whole Q4_K blocks .* written as Q5_0/,
    );
    const source = await readValues(DEMO_MODEL);
    const stored = await readTensors(out, { keepNames: false });
    let checked = 0;
    for (const [name, t] of stored) {
      if (t.dtype !== "Q5_0" || /[qk]_proj/.test(name)) continue;
      // Encoded once, from the source: a padded Q4_K decoded again would differ.
      assert.ok(sameBytes(t.bytes, encodeFromFloat32("Q5_0", source.get(name)!, t.shape)), name);
      checked++;
    }
    assert.ok(checked >= 10, `${checked} Q5_0 tensors compared`);
  });
});

Deno.test("padded Q6_K goes to GGUF as Q8_0, or F16 when rows are not whole 32-value blocks", async () => {
  await withTempDir(async (dir) => {
    const values = (n: number) => new Float32Array(n).map((_, i) => Math.sin(i));
    const odd = encodeFromFloat32("Q6_K", values(4 * 40), [4, 40]);
    const even = encodeFromFloat32("Q6_K", values(4 * 64), [4, 64]);
    const apr = `${dir}/padded.apr`;
    await Deno.writeFile(
      apr,
      encodeApr({
        tensors: [
          { name: "odd", dtype: "Q6_K", shape: [4, 40], data: odd },
          { name: "even", dtype: "Q6_K", shape: [4, 64], data: even },
        ],
      }),
    );
    const warnings: string[] = [];
    await convertModel(apr, `${dir}/padded.gguf`, { onWarning: (w) => warnings.push(w) });
    assert.equal(warnings.length, 1);
    assert.match(
      warnings[0]!,
      /^2 Q6_K tensor\(s\) .* writing them as Q8_0\/F16, as llama-quantize does$/,
    );
    const stored = (await readGgufFile(`${dir}/padded.gguf`)).tensors;
    const f16 = stored.get("odd")!;
    assert.equal(f16.dtype, "F16");
    assert.deepEqual(
      decodeF16(f16.bytes),
      decodeF16(encodeF16(decodeToFloat32("Q6_K", odd, [4, 40]))),
    );
    const q8 = stored.get("even")!;
    assert.equal(q8.dtype, "Q8_0");
    const want = encodeFromFloat32("Q8_0", decodeToFloat32("Q6_K", even, [4, 64]), [4, 64]);
    assert.ok(sameBytes(q8.bytes, want));
  });
});

Deno.test("an import keeps norms in float: BF16 as F32 when quantizing, BF16 with one warning otherwise", async () => {
  await withTempDir(async (dir) => {
    for (const quantize of ["q4_k", "q8", "f16"] as const) {
      const warnings: string[] = [];
      const result = await convertModel(DEMO_MODEL, `${dir}/${quantize}.apr`, {
        quantize,
        onWarning: (w) => warnings.push(w),
      });
      assert.equal(result.dtypes["BF16"], undefined, quantize);
      assert.equal(result.dtypes["F32"], 5, `${quantize}: the 5 norms`);
      assert.deepEqual(warnings, []);
    }
    const warnings: string[] = [];
    const result = await convertModel(DEMO_MODEL, `${dir}/none.apr`, {
      onWarning: (w) => warnings.push(w),
    });
    assert.equal(result.dtypes["BF16"], 21);
    assert.equal(warnings.length, 1);
    assert.match(
      warnings[0]!,
      /21 tensor\(s\) are written as BF16 \(APR dtype 30\).*quantize: "f16"/,
    );
  });
});
