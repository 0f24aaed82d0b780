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
import { readGgufFile, readValues } from "./_files.ts";
import { llamaGenerate } from "./_llama_judge.ts";
import { openModel } from "../../src/pipeline/open_model.ts";

Deno.test("row-padded Q4_K tensors go to GGUF as F16 with one warning, and llama.cpp runs the file", async () => {
  await withTempDir(async (dir) => {
    // tiny-llama's rows hold 128 or 192 values: Q4_K pads each row to 256.
    const apr = `${dir}/q4k.apr`;
    await convertModel(DEMO_MODEL, apr, { quantize: "q4_k" });
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
      "cannot hold; writing them as F16",
    ]);
    const gguf = await readGgufFile(out);
    const types = [...gguf.tensors.values()].map((t) => t.dtype);
    assert.equal(types.filter((t) => t === "F16").length, 15);
    assert.equal(types.filter((t) => t === "F32").length, 5);
    assert.equal(gguf.kv.get("general.file_type")?.value, 1, "mostly F16");
    // The F16 values are the Q4_K values rounded to F16 (Q/K rows permuted for llama.cpp).
    const q4k = await readValues(apr);
    const f16 = await readValues(out, { keepNames: false });
    for (const [name, values] of f16) {
      if (/_proj|embed/.test(name) && !/[qk]_proj/.test(name)) {
        const want = decodeF16(encodeF16(q4k.get(name)!));
        assert.ok(values.every((v, i) => Object.is(v, want[i])), name);
      }
    }
    const [run] = await llamaGenerate([out], 4);
    assert.equal(run!.generated.length, 4);
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
