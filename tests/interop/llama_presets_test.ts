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
import { kvJson, readGgufFile, sameBytes } from "./_files.ts";
import { openModel } from "../../src/pipeline/open_model.ts";

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

Deno.test("a tied model quantized to APR with Q4_K_M exports to llama-quantize's GGUF, Q6_K token_embd included", async (t) => {
  await withTempDir(async (dir) => {
    const reference = testdata("gguf/tiny-qwen2-Q4_K_M.gguf");
    const want = (await readGgufFile(reference)).tensors;
    const exported: string[] = [];
    const sources = [
      { label: "HF folder", path: SOURCE },
      { label: "BF16 GGUF", path: testdata("hf/tiny-qwen2-gguf/tiny-qwen2-bf16.gguf") },
    ];
    for (const [i, source] of sources.entries()) {
      await t.step(source.label, async () => {
        const apr = `${dir}/${i}.apr`;
        const gguf = `${dir}/${i}.gguf`;
        await convertModel(source.path, apr, { quantize: "q4_k_m" });
        // The APR copy of the output layer and the embedding are both Q6_K,
        // as llama-quantize makes the tied embedding of a model with no output.weight.
        const model = await openModel(apr);
        const types = new Map(model.header.tensors.map((x) => [x.name, x.dtype]));
        await model.close();
        assert.equal(types.get("model.embed_tokens.weight"), "Q6_K");
        assert.equal(types.get("lm_head.weight"), "Q6_K");
        await convertModel(apr, gguf, {});
        const got = (await readGgufFile(gguf)).tensors;
        assert.deepEqual([...got.keys()].sort(), [...want.keys()].sort());
        const same = [...want].filter(([name, w]) => {
          const g = got.get(name)!;
          return g.dtype === w.dtype && sameBytes(g.bytes, w.bytes);
        });
        assert.equal(same.length, want.size, `${same.length}/${want.size} tensors equal`);
        // The same KV pairs, in the same order, as the one-pass conversion's.
        const direct = `${dir}/${i}-direct.gguf`;
        await convertModel(source.path, direct, { quantize: "q4_k_m" });
        assert.deepEqual(
          [...kvJson((await readGgufFile(gguf)).kv)],
          [...kvJson((await readGgufFile(direct)).kv)],
        );
        exported.push(gguf);
      });
    }
    const runs = await llamaGenerate([...exported, reference]);
    const theirs = runs[runs.length - 1]!;
    for (const run of runs.slice(0, -1)) {
      assert.deepEqual(run.prompt, theirs.prompt);
      assert.deepEqual(run.generated, theirs.generated);
      assert.deepEqual(run.next, theirs.next);
    }
  });
});
