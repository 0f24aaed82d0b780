/**
 * Issue 18, judged by the real programs: every family's tiny checkpoint
 * (transformers `save_pretrained`, `tests/testdata/families/hf/`) converted by
 * aprkit to GGUF must run in llama.cpp as transformers computes it (same
 * greedy tokens, log-probabilities within 0.03 over transformers' likeliest
 * tokens, 4 steps) and equal what llama.cpp's own converter and
 * `llama-quantize` wrote (tensors: names, types, shapes, bytes; KV pairs), and
 * an architecture aprkit does not write as GGUF is refused. Every llama.cpp
 * evaluation runs in one Node process.
 */

import assert from "node:assert/strict";
import { convertModel } from "../../src/pipeline/convert_model.ts";
import { runApr, withTempDir } from "../cli/_run_apr.ts";
import { llamaLogProbs } from "./_llama_judge.ts";
import {
  compareWithReference,
  convertedFamilies,
  CONVERTER_GGUFS,
  errorText,
  fail,
  FAMILIES_DIR,
  familiesToJudge,
  familyDir,
  familyNames,
  type FamilyReference,
  familyReference,
  fileDifference,
  ggufDescription,
  llamaCppManifest,
  manifestDifferences,
  NOT_YET_GGUF,
  OWN_TESTS,
} from "./_families.ts";

const FAMILIES = familiesToJudge();

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
      {
        f32?: string;
        bf16?: string;
        q8_0?: string;
        q4?: string;
        q5?: string;
        viaApr?: string;
        error?: string;
      }
    >();
    for (const family of FAMILIES) {
      const out = (what: string) => `${dir}/${family}-${what}.gguf`;
      const apr = `${dir}/${family}.apr`;
      try {
        const source = familyDir(family);
        await convertModel(source, out("f32"));
        // The converter's other --outtype values, and llama-quantize's presets.
        await convertModel(source, out("bf16"), { quantize: "bf16" });
        await convertModel(source, out("q8_0"), { quantize: "q8_0" });
        await convertModel(source, out("Q4_K_M"), { quantize: "q4_k_m" });
        await convertModel(source, out("Q5_K_S"), { quantize: "q5_k_s" });
        // `apr import` then `apr export`: the APR file must hold all the GGUF needs.
        await convertModel(source, apr);
        await convertModel(apr, out("via-apr"));
        converted.set(family, {
          f32: out("f32"),
          bf16: out("bf16"),
          q8_0: out("q8_0"),
          q4: out("Q4_K_M"),
          q5: out("Q5_K_S"),
          viaApr: out("via-apr"),
        });
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
      const checks = [
        ["F32 equals llama.cpp's converter's file", [["f32", c.f32]]],
        ["F32 via APR (import, then export) equals it too", [["f32", c.viaApr]]],
        ["BF16 and Q8_0 equal the converter's --outtype bf16 and q8_0", [
          ["bf16", c.bf16],
          ["q8_0", c.q8_0],
        ]],
        ["Q4_K_M and Q5_K_S equal llama-quantize's files", [
          ["Q4_K_M", c.q4],
          ["Q5_K_S", c.q5],
        ]],
      ] as const;
      for (const [what, files] of checks) {
        await t.step(`${family}: ${what}`, async () => {
          assert.equal(c.error, undefined, `aprkit cannot convert it: ${c.error}`);
          for (const [type, path] of files) {
            const theirs = await llamaCppManifest(family, type);
            assert.ok(theirs !== undefined, `no llama.cpp ${type} manifest for ${family}`);
            const mine = await ggufDescription(path!);
            fail(
              `${family} ${what}`,
              manifestDifferences(mine, theirs, { tensorOrder: path !== c.viaApr }),
            );
            // Where the manifest records the whole file's sha256, the files are identical.
            if (path !== c.viaApr) fail(`${family} ${what}`, await fileDifference(path!, theirs));
          }
        });
      }
    }
  });
});

Deno.test("families: a family aprkit does not write as GGUF yet is refused, naming it and the supported list, with no file", async (t) => {
  // Every fixture is converted and judged above, or listed as not yet written.
  const converted = convertedFamilies();
  const unjudged = familyNames().filter((f) => !converted.includes(f) && !(f in OWN_TESTS));
  assert.deepEqual(unjudged, Object.keys(NOT_YET_GGUF));
  await withTempDir(async (dir) => {
    for (const [family, missing] of Object.entries(NOT_YET_GGUF)) {
      await t.step(`${family} (missing: ${missing})`, async () => {
        const out = `${dir}/${family}.gguf`;
        const config = JSON.parse(await Deno.readTextFile(`${familyDir(family)}/config.json`));
        const run = await runApr(["convert", familyDir(family), "-o", out]);
        assert.equal(run.code, 2, run.stderr);
        const lines = run.stderr.trim().split("\n");
        assert.equal(lines.length, 1, run.stderr);
        assert.ok(lines[0]!.includes(config.architectures[0]), lines[0]);
        assert.match(lines[0]!, /llama/);
        await assert.rejects(Deno.stat(out), Deno.errors.NotFound);
        assert.deepEqual([...Deno.readDirSync(dir)], []);
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

Deno.test("families: `apr convert DIR -o x.gguf` (the CLI) writes what llama.cpp's converter and llama-quantize write", async (t) => {
  await withTempDir(async (dir) => {
    for (
      const [family, type, args] of [
        ["llama3-rope-tf4", "f32", []],
        ["mixtral", "Q4_K_M", ["--quantize", "Q4_K_M"]],
      ] as const
    ) {
      await t.step(`${family} ${type}`, async () => {
        const out = `${dir}/${family}-${type}.gguf`;
        const run = await runApr(["convert", familyDir(family), "-o", out, ...args]);
        assert.equal(run.code, 0, run.stderr);
        const theirs = await llamaCppManifest(family, type);
        assert.ok(theirs !== undefined);
        fail(`${family} ${type} (CLI)`, manifestDifferences(await ggufDescription(out), theirs));
      });
    }
  });
});
