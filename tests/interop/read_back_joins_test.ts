/**
 * The families whose GGUF read-back joins, transposes or reshapes tensors
 * (`gguf.joinedBack`: DeepSeek's `kv_b_proj`, Granite MoE's `input_linear`,
 * DBRX's flat experts, HRM-Text's fused projections, LFM2's convolution).
 * From a BF16 GGUF: every BF16 tensor read back is the checkpoint's rounded
 * to BF16 (as the GGUF holds it), every F32 one (norms, routers) the
 * checkpoint's own, names and shapes the checkpoint's. And a GGUF read back
 * into APR (Hugging Face names, no `config.json`) written as GGUF again is
 * the GGUF: its tensors, bytes and keys (`gguf.hfConfigBack` gives the
 * split's sizes).
 */

import assert from "node:assert/strict";
import { convertModel } from "../../src/pipeline/convert_model.ts";
import { encodeBf16 } from "../../src/quant/bf16.ts";
import { withTempDir } from "../cli/_run_apr.ts";
import { readGgufFile, readTensors } from "./_files.ts";
import { fail, familyDir, tensorDifferences } from "./_families.ts";

const FAMILIES = [
  "deepseek2",
  "deepseek3",
  "youtu",
  "glm4moe-lite",
  "glm4moe",
  "solar-open",
  "granitemoe",
  "granitemoe-shared",
  "granitemoe-swa",
  "dbrx",
  "hrm-text",
  "lfm2",
  "lfm2-moe",
  "deepseek32",
  "glm-dsa",
];

Deno.test("families: a BF16 GGUF of a family read back by joins gives the checkpoint's tensors in BF16, bit for bit", async (t) => {
  await withTempDir(async (dir) => {
    for (const family of FAMILIES) {
      await t.step(family, async () => {
        const gguf = `${dir}/${family}-bf16.gguf`;
        await convertModel(familyDir(family), gguf, { quantize: "bf16" });
        const back = `${dir}/${family}-bf16.safetensors`;
        await convertModel(gguf, back);
        const got = await readTensors(back);
        const source = await readTensors(familyDir(family));
        // The checkpoint as the GGUF holds it: each tensor read back in BF16 rounded so.
        let rounded = 0;
        for (const [name, want] of source) {
          if (got.get(name)?.dtype !== "BF16" || want.dtype !== "F32") continue;
          const values = new Float32Array(want.bytes.slice().buffer);
          source.set(name, { ...want, dtype: "BF16", bytes: encodeBf16(values) });
          rounded++;
        }
        const problems = tensorDifferences(family, got, source);
        // The matrices, joined ones among them, are BF16 in the GGUF.
        if (rounded < source.size / 2) problems.push(`only ${rounded} BF16 tensors read back`);
        fail(family, problems);
      });
    }
  });
});

Deno.test("families: a GGUF of a family read back by joins → APR → GGUF is the GGUF again, tensors and keys", async (t) => {
  await withTempDir(async (dir) => {
    for (const family of FAMILIES) {
      await t.step(family, async () => {
        const gguf = `${dir}/${family}.gguf`;
        await convertModel(familyDir(family), gguf);
        await convertModel(gguf, `${dir}/${family}.apr`);
        await convertModel(`${dir}/${family}.apr`, `${dir}/${family}-back.gguf`);
        const [got, want] = [
          await readGgufFile(`${dir}/${family}-back.gguf`),
          await readGgufFile(gguf),
        ];
        const problems = tensorDifferences(family, got.tensors, want.tensors);
        const keys = (kv: typeof got.kv) => JSON.stringify([...kv].map(([k, e]) => [k, e.value]));
        if (keys(got.kv) !== keys(want.kv)) problems.push("the keys differ");
        fail(family, problems);
        assert.ok(want.tensors.size > 0);
      });
    }
  });
});
