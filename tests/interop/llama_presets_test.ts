/**
 * Issue 12, judged by llama.cpp itself: the tiny-qwen2 checkpoint converted
 * in one pass with each llama-quantize preset (and with an importance matrix)
 * runs in llama.cpp exactly as llama-quantize's own files do — the same prompt
 * tokens, greedy tokens and next-token probabilities in the same build.
 */

import assert from "node:assert/strict";
import { convertModel } from "../../src/pipeline/convert_model.ts";
import type { QuantizeTarget } from "../../src/quant/plan_quantization.ts";
import { testdata, withTempDir } from "../cli/_run_apr.ts";
import { llamaGenerate } from "./_llama_judge.ts";

const SOURCE = testdata("hf/tiny-qwen2");
const CASES: { to: QuantizeTarget; file: string; imatrix?: boolean }[] = [
  { to: "q4_k_m", file: "tiny-qwen2-Q4_K_M.gguf" },
  { to: "q4_k_s", file: "tiny-qwen2-Q4_K_S.gguf" },
  { to: "q6_k", file: "tiny-qwen2-Q6_K.gguf" },
  { to: "q8_0", file: "tiny-qwen2-Q8_0.gguf" },
  { to: "q4_k_m", file: "tiny-qwen2-Q4_K_M-imatrix.gguf", imatrix: true },
];

Deno.test("llama.cpp runs apr's one-pass preset GGUFs of tiny-qwen2 as it runs llama-quantize's", async () => {
  await withTempDir(async (dir) => {
    const ours: string[] = [];
    for (const [i, c] of CASES.entries()) {
      const out = `${dir}/${i}.gguf`;
      await convertModel(SOURCE, out, {
        quantize: c.to,
        ...(c.imatrix ? { imatrix: testdata("gguf/tiny-qwen2-imatrix.dat") } : {}),
      });
      ours.push(out);
    }
    const theirs = CASES.map((c) => testdata(`gguf/${c.file}`));
    const runs = await llamaGenerate([...ours, ...theirs]);
    for (const [i, c] of CASES.entries()) {
      const a = runs[i]!;
      const b = runs[CASES.length + i]!;
      assert.deepEqual(a.prompt, b.prompt, c.file);
      assert.deepEqual(a.generated, b.generated, c.file);
      assert.deepEqual(a.next, b.next, c.file);
    }
  });
});

Deno.test("llama.cpp loads and runs the example model's Q4_K_M GGUF with its Q5_0/Q8_0 fallbacks", async () => {
  await withTempDir(async (dir) => {
    const out = `${dir}/tiny-llama-Q4_K_M.gguf`;
    await convertModel(testdata("../../examples/tiny-llama"), out, { quantize: "q4_k_m" });
    const [run] = await llamaGenerate([out]);
    assert.ok(run!.prompt.length > 0 && run!.generated.length > 0, JSON.stringify(run));
  });
});
