/**
 * DeepSeek-V3.2's and GLM-5's refusals: the YaRN scaling llama.cpp's
 * `deepseek32` and `glm-dsa` read no key for, and the indexer sizes its graph
 * cannot take. Their GGUF itself is judged against llama.cpp's converter and
 * transformers in tests/interop/families_gguf_test.ts (fixtures `deepseek32`,
 * `glm-dsa`).
 */

import assert from "node:assert/strict";
import { DEEPSEEK32 } from "../../src/arch/families/deepseek32.ts";
import { GLM_DSA } from "../../src/arch/families/glm_dsa.ts";
import type { Family } from "../../src/arch/family.ts";
import { KvWriter } from "../../src/arch/kv.ts";
import { copyCheckpoint } from "../interop/_multimodal.ts";
import { runApr, withTempDir } from "../cli/_run_apr.ts";

const FIXTURES = new URL("../testdata/families/hf/", import.meta.url).pathname;

async function config(fixture: string): Promise<Record<string, unknown>> {
  return JSON.parse(await Deno.readTextFile(`${FIXTURES}${fixture}/config.json`));
}

const V32 = await config("deepseek32");
const GLM5 = await config("glm-dsa");
const YARN = V32["rope_parameters"] as Record<string, unknown>;

function refusal(
  family: Family,
  base: Record<string, unknown>,
  change: Record<string, unknown>,
): string | undefined {
  return family.gguf!.unsupported!(new KvWriter({ ...base, ...change }, family.ggufArchitecture!));
}

Deno.test("deepseek32, glm-dsa: a YaRN other than mscale = mscale_all_dim = 1 is refused, naming both fields", () => {
  for (const [family, base] of [[DEEPSEEK32, V32], [GLM_DSA, GLM5]] as const) {
    const yarn = (rope: Record<string, unknown>) =>
      refusal(family, base, { rope_parameters: { ...YARN, ...rope } });
    // The fixtures: DeepSeek-V3.2's YaRN (both 1), GLM-5's unscaled RoPE.
    assert.equal(refusal(family, base, {}), undefined);
    assert.equal(yarn({}), undefined);
    const arch = family.ggufArchitecture!;
    // DeepSeek-V2's 0.707 (measured 1.92 off on deepseek32's weights, 3.00 on glm-dsa's).
    assert.match(
      yarn({ mscale: 0.707, mscale_all_dim: 0.707 })!,
      new RegExp(`YaRN mscale 0\\.707 and mscale_all_dim 0\\.707: llama\\.cpp's ${arch} .*both 1`),
    );
    // Only mscale_all_dim 0.707: transformers' scores scale by mscale(0.707)², llama.cpp's by mscale(1)² (0.67 off).
    assert.match(yarn({ mscale_all_dim: 0.707 })!, /mscale 1 and mscale_all_dim 0\.707/);
    // Neither set: transformers rotates by mscale(factor) and leaves the scores unscaled.
    assert.match(
      yarn({ mscale: undefined, mscale_all_dim: undefined })!,
      /mscale null and mscale_all_dim null/,
    );
    assert.match(yarn({ attention_factor: 1.2 })!, /with attention_factor 1\.2/);
    assert.equal(yarn({ attention_factor: 1 }), undefined);
    // No scaling at a factor of 1, whatever mscale says.
    assert.equal(yarn({ factor: 1, mscale: 0.707 }), undefined);
    // The indexer's sizes llama.cpp's graph takes.
    assert.match(refusal(family, base, { index_head_dim: 32 })!, /index_head_dim 32/);
  }
});

Deno.test("deepseek32: a YaRN llama.cpp would scale otherwise is refused by the CLI in one line, with no file; APR is written", async () => {
  await withTempDir(async (dir) => {
    const source = await copyCheckpoint(`${FIXTURES}deepseek32`, `${dir}/v2-yarn`, (c) => {
      c["rope_parameters"] = { ...YARN, mscale: 0.707, mscale_all_dim: 0.707 };
    });
    const out = `${dir}/m.gguf`;
    const run = await runApr(["convert", source, "-o", out]);
    assert.equal(run.code, 2, run.stderr);
    assert.equal(run.stderr.trim().split("\n").length, 1, run.stderr);
    assert.match(run.stderr, /DeepseekV32ForCausalLM|deepseek32/);
    assert.match(run.stderr, /mscale 0\.707 and mscale_all_dim 0\.707/);
    await assert.rejects(Deno.stat(out), Deno.errors.NotFound);
    const apr = await runApr(["convert", source, "-o", `${dir}/m.apr`]);
    assert.equal(apr.code, 0, apr.stderr);
  });
});

Deno.test("glm-dsa: a GGUF's keys give kv_b_proj's per-head sizes back with a partial_rotary_factor (rope.dimension_count its share of qk_rope_head_dim)", () => {
  const h = { ...GLM5, rope_parameters: { rope_theta: 1e6, partial_rotary_factor: 0.5 } };
  const w = new KvWriter(h, "glm-dsa");
  GLM_DSA.gguf!.writeKv(w);
  const kv = w.entries();
  assert.equal(kv.get("glm-dsa.rope.dimension_count")?.value, 4);
  const back = GLM_DSA.gguf!.hfConfigBack!((name) => kv.get(`glm-dsa.${name}`)?.value);
  assert.deepEqual(back, { num_attention_heads: 4, qk_nope_head_dim: 16, v_head_dim: 16 });
});
