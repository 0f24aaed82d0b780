/**
 * Issue 18, judged by the real programs: every family's tiny checkpoint
 * (transformers 5.18 `save_pretrained`, `tests/testdata/families/hf/`)
 * converted by aprkit to GGUF must run in llama.cpp as transformers computes
 * it (same greedy tokens, log-probabilities within 0.03 over transformers'
 * likeliest tokens, 4 steps), and equal what llama.cpp's own converter and
 * `llama-quantize` wrote (tensors: names, types, shapes, bytes; KV pairs);
 * GGUF → SafeTensors gives the source's tensors back; HF → APR names tensors
 * as realizar's `AprTransformer` looks them up; an unknown architecture is
 * refused. Every llama.cpp evaluation runs in one Node process.
 */

import assert from "node:assert/strict";
import { convertModel } from "../../src/pipeline/convert_model.ts";
import { openModel } from "../../src/pipeline/open_model.ts";
import { runApr, withTempDir } from "../cli/_run_apr.ts";
import { readTensors, sameBytes } from "./_files.ts";
import { llamaLogProbs } from "./_llama_judge.ts";
import { manifestDifferences } from "./_manifest_diff.ts";
import {
  compareWithReference,
  FAMILIES_DIR,
  familyDir,
  familyNames,
  type FamilyReference,
  familyReference,
  ggufDescription,
  llamaCppManifest,
} from "./_families.ts";

const FAMILIES = familyNames();

/** Families whose converter output is kept as a GGUF file, to check the harness itself. */
const CONVERTER_GGUFS = ["gemma2", "llama3-rope", "phi4", "qwen2-moe"];

function errorText(error: unknown): string {
  return error instanceof Error ? error.message.split("\n")[0]! : String(error);
}

function fail(what: string, problems: string[]): void {
  if (problems.length > 0) assert.fail(`${what}:\n  ${problems.slice(0, 25).join("\n  ")}`);
}

Deno.test("families: the harness — llama.cpp runs its own converter's files as transformers computes them", async () => {
  const jobs: { path: string; ids: number[]; positions: number[] }[] = [];
  const refs: FamilyReference[] = [];
  for (const family of CONVERTER_GGUFS) {
    const ref = await familyReference(family);
    refs.push(ref);
    jobs.push({
      path: `${FAMILIES_DIR}/llama.cpp/${family}-f32.gguf`,
      ids: ref.sequence,
      positions: ref.positions,
    });
  }
  const runs = await llamaLogProbs(jobs);
  runs.forEach((run, i) => {
    assert.equal(run.error, undefined, `${CONVERTER_GGUFS[i]}: ${run.error}`);
    fail(
      `${CONVERTER_GGUFS[i]} (llama.cpp's converter)`,
      compareWithReference(refs[i]!, run.logprobs),
    );
  });
});

Deno.test("families: HF → GGUF runs in llama.cpp as transformers computes it, and equals llama.cpp's converter and llama-quantize", async (t) => {
  await withTempDir(async (dir) => {
    const converted = new Map<
      string,
      { f32?: string; q4?: string; viaApr?: string; error?: string }
    >();
    for (const family of FAMILIES) {
      const f32 = `${dir}/${family}-f32.gguf`;
      const q4 = `${dir}/${family}-Q4_K_M.gguf`;
      const apr = `${dir}/${family}.apr`;
      const viaApr = `${dir}/${family}-via-apr.gguf`;
      try {
        await convertModel(familyDir(family), f32);
        await convertModel(familyDir(family), q4, { quantize: "q4_k_m" });
        // `apr import` then `apr export`: the APR file must hold all the GGUF needs.
        await convertModel(familyDir(family), apr);
        await convertModel(apr, viaApr);
        converted.set(family, { f32, q4, viaApr });
      } catch (error) {
        converted.set(family, { error: errorText(error) });
      }
    }
    const loadable = FAMILIES.filter((f) => converted.get(f)!.f32 !== undefined);
    const refs = new Map(
      await Promise.all(FAMILIES.map(async (f) => [f, await familyReference(f)] as const)),
    );
    const runs = await llamaLogProbs(loadable.map((f) => ({
      path: converted.get(f)!.f32!,
      ids: refs.get(f)!.sequence,
      positions: refs.get(f)!.positions,
    })));
    const judged = new Map(loadable.map((f, i) => [f, runs[i]!]));

    for (const family of FAMILIES) {
      const c = converted.get(family)!;
      await t.step(`${family}: llama.cpp computes what transformers computes`, () => {
        assert.equal(c.error, undefined, `aprkit cannot convert it: ${c.error}`);
        const run = judged.get(family)!;
        assert.equal(run.error, undefined, `llama.cpp cannot load aprkit's GGUF: ${run.error}`);
        fail(family, compareWithReference(refs.get(family)!, run.logprobs));
      });
      await t.step(
        `${family}: F32 (directly and via APR) and Q4_K_M equal llama.cpp's converter and llama-quantize`,
        async () => {
          assert.equal(c.error, undefined, `aprkit cannot convert it: ${c.error}`);
          const files = [["f32", c.f32!], ["f32", c.viaApr!], ["Q4_K_M", c.q4!]] as const;
          for (const [type, path] of files) {
            const theirs = await llamaCppManifest(family, type);
            assert.ok(theirs !== undefined, `no llama.cpp ${type} manifest for ${family}`);
            const what = `${family} ${type}${path === c.viaApr ? " via APR" : ""}`;
            fail(what, manifestDifferences(await ggufDescription(path), theirs));
          }
        },
      );
    }
  });
});

Deno.test("families: GGUF → SafeTensors gives the source checkpoint's tensors back, bit for bit", async (t) => {
  await withTempDir(async (dir) => {
    for (const family of FAMILIES) {
      await t.step(family, async () => {
        const gguf = `${dir}/${family}.gguf`;
        const back = `${dir}/${family}.safetensors`;
        await convertModel(familyDir(family), gguf);
        await convertModel(gguf, back);
        const source = await readTensors(familyDir(family));
        const got = await readTensors(back);
        const problems: string[] = [];
        const missing = [...source.keys()].filter((n) => !got.has(n));
        const extra = [...got.keys()].filter((n) => !source.has(n));
        if (missing.length > 0) problems.push(`missing: ${missing.join(", ")}`);
        if (extra.length > 0) problems.push(`not in the source: ${extra.join(", ")}`);
        for (const [name, want] of source) {
          const have = got.get(name);
          if (have === undefined) continue;
          if (have.dtype !== want.dtype) {
            problems.push(`${name}: ${have.dtype}, source ${want.dtype}`);
          } else if (JSON.stringify(have.shape) !== JSON.stringify(want.shape)) {
            problems.push(`${name}: shape ${have.shape}, source ${want.shape}`);
          } else if (!sameBytes(have.bytes, expectedBack(family, name, want.bytes))) {
            problems.push(`${name}: bytes differ`);
          }
        }
        fail(family, problems);
      });
    }
  });
});

/**
 * The bytes a GGUF round trip must give back. Gemma's checkpoints store norm
 * weights as w − 1 and GGUF holds w (llama.cpp's converter adds 1 in F32), so
 * the way back can only be f32(f32(x + 1) − 1): bit-exact to that, not to x.
 */
function expectedBack(family: string, name: string, bytes: Uint8Array): Uint8Array {
  if (!family.startsWith("gemma") || !name.endsWith("norm.weight")) return bytes;
  const x = new Float32Array(bytes.slice().buffer);
  const out = x.map((v) => Math.fround(Math.fround(v + 1) - 1));
  return new Uint8Array(out.buffer);
}

Deno.test("families: HF → APR names tensors as realizar's AprTransformer looks them up, with rope_type", async (t) => {
  await withTempDir(async (dir) => {
    for (const family of FAMILIES) {
      await t.step(family, async () => {
        const apr = `${dir}/${family}.apr`;
        await convertModel(familyDir(family), apr);
        const model = await openModel(apr);
        let names: Set<string>;
        let metadata: Record<string, unknown>;
        try {
          names = new Set(model.names());
          metadata = model.header.metadata as Record<string, unknown>;
        } finally {
          await model.close();
        }
        const problems: string[] = [];
        const need = (name: string) => {
          if (!names.has(name)) problems.push(`no ${name}`);
        };
        const refuse = (name: string, why: string) => {
          if (names.has(name)) problems.push(`${name}: ${why}`);
        };
        need("model.embed_tokens.weight");
        need("model.norm.weight");
        for (const layer of [0, 1]) {
          const p = `model.layers.${layer}`;
          if (names.has(`${p}.self_attn.qkv_proj.weight`)) {
            refuse(`${p}.self_attn.q_proj.weight`, "both fused qkv_proj and split q_proj");
          } else {
            for (const x of ["q", "k", "v", "o"]) need(`${p}.self_attn.${x}_proj.weight`);
          }
          need(`${p}.self_attn.o_proj.weight`);
          refuse(
            `${p}.mlp.gate_up_proj.weight`,
            "realizar does not know fused gate_up_proj; split it",
          );
          const moe = [...names].some((n) =>
            n.startsWith(`${p}.mlp.experts.`) ||
            n.startsWith(`${p}.block_sparse_moe.`)
          );
          if (moe) {
            need(`${p}.mlp.gate.weight`);
            for (let e = 0; e < 4; e++) {
              for (const x of ["gate", "up", "down"]) {
                need(`${p}.mlp.experts.${e}.${x}_proj.weight`);
              }
            }
          } else if (family === "starcoder2") {
            need(`${p}.mlp.c_fc.weight`);
            need(`${p}.mlp.c_proj.weight`);
          } else {
            for (const x of ["gate", "up", "down"]) need(`${p}.mlp.${x}_proj.weight`);
          }
        }
        if (typeof metadata.rope_type !== "number") problems.push("no rope_type in the metadata");
        fail(family, problems);
      });
    }
  });
});

Deno.test("families: an unknown architecture is refused for GGUF output, naming it and the supported list, with no file", async () => {
  await withTempDir(async (dir) => {
    const out = `${dir}/made-up.gguf`;
    const run = await runApr(["convert", `${FAMILIES_DIR}/hf/unknown-arch`, "-o", out]);
    assert.equal(run.code, 2, run.stderr);
    const lines = run.stderr.trim().split("\n");
    assert.equal(lines.length, 1, run.stderr);
    assert.match(lines[0]!, /TinyMadeUpForCausalLM|tiny_made_up/);
    // The supported list names at least the families the fixtures cover.
    assert.match(lines[0]!, /llama/i);
    assert.match(lines[0]!, /qwen2/i);
    assert.ok(!lines[0]!.includes("    at "), "no stack trace");
    await assert.rejects(Deno.stat(out), Deno.errors.NotFound);
    assert.deepEqual([...Deno.readDirSync(dir)].map((e) => e.name), []);
  });
});
