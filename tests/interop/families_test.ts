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
import { readTensors, sameBytes, type StoredTensor } from "./_files.ts";
import { llamaLogProbs } from "./_llama_judge.ts";
import {
  compareWithReference,
  FAMILIES_DIR,
  familyDir,
  familyNames,
  type FamilyReference,
  familyReference,
  ggufDescription,
  type GgufManifest,
  llamaCppManifest,
  type ManifestKv,
} from "./_families.ts";

/**
 * Families with fixtures that aprkit does not write as GGUF yet, and what is
 * missing. Each must be refused cleanly (exit 2 naming it, no file) until it
 * is supported; then it leaves this list and is judged like the others.
 */
const NOT_YET_GGUF: Readonly<Record<string, string>> = {
  "deepseek-v2": "multi-head latent attention (kv_b_proj split into attn_k_b / attn_v_b), " +
    "expert groups and the deepseek2 keys",
  "gpt-oss": "fused interleaved gate_up experts with biases, attention sinks, MXFP4",
};

/** The families aprkit converts (and the fixtures' own, refused ones apart). */
const FAMILIES = familyNames().filter((f) => !(f in NOT_YET_GGUF));

/** Families whose converter output is kept as a GGUF file, to check the harness itself. */
const CONVERTER_GGUFS = ["gemma2", "llama3-rope", "phi4", "qwen2-moe"];

/** Keys whose values may legitimately differ from the converter's, and why. None so far. */
const DIFFERING_KEYS: Readonly<Record<string, string>> = {};

function errorText(error: unknown): string {
  return error instanceof Error ? error.message.split("\n")[0]! : String(error);
}

/** How a GGUF file differs from a manifest of llama.cpp's: one line per difference. */
function manifestDifferences(
  mine: { kv: ManifestKv[]; tensors: GgufManifest["tensors"] },
  theirs: GgufManifest,
): string[] {
  const out: string[] = [];
  const mineTensors = new Map(mine.tensors.map((t) => [t.name, t]));
  const theirNames = new Set(theirs.tensors.map((t) => t.name));
  const missing = theirs.tensors.filter((t) => !mineTensors.has(t.name)).map((t) => t.name);
  const extra = mine.tensors.filter((t) => !theirNames.has(t.name)).map((t) => t.name);
  if (missing.length > 0) out.push(`tensors missing: ${missing.join(", ")}`);
  if (extra.length > 0) out.push(`tensors llama.cpp does not write: ${extra.join(", ")}`);
  for (const ref of theirs.tensors) {
    const got = mineTensors.get(ref.name);
    if (got === undefined) continue;
    if (got.type !== ref.type) out.push(`${ref.name}: type ${got.type}, llama.cpp ${ref.type}`);
    else if (JSON.stringify(got.ne) !== JSON.stringify(ref.ne)) {
      out.push(`${ref.name}: ne ${JSON.stringify(got.ne)}, llama.cpp ${JSON.stringify(ref.ne)}`);
    } else if (got.sha256 !== ref.sha256) out.push(`${ref.name}: bytes differ`);
  }
  const mineKv = new Map(mine.kv.map((e) => [e.key, e]));
  const theirKeys = new Set(theirs.kv.map((e) => e.key));
  for (const ref of theirs.kv) {
    if (ref.key in DIFFERING_KEYS) continue;
    const got = mineKv.get(ref.key);
    if (got === undefined) {
      out.push(`KV ${ref.key} missing (llama.cpp: ${short(ref.value)})`);
      continue;
    }
    const a = JSON.stringify({ type: got.type, array_types: got.array_types, value: got.value });
    const b = JSON.stringify({ type: ref.type, array_types: ref.array_types, value: ref.value });
    if (a !== b) out.push(`KV ${ref.key}: ${short(a)}, llama.cpp ${short(b)}`);
  }
  for (const e of mine.kv) {
    if (!theirKeys.has(e.key) && !(e.key in DIFFERING_KEYS)) {
      out.push(`KV ${e.key} = ${short(e.value)} is not in llama.cpp's file`);
    }
  }
  return out;
}

function short(value: unknown): string {
  const s = typeof value === "string" ? value : JSON.stringify(value);
  return s.length > 120 ? `${s.slice(0, 117)}...` : s;
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

/**
 * How one set of tensors differs from another it must equal (names, dtypes,
 * shapes, bytes; Gemma's norms as a GGUF round trip can give them back).
 */
function tensorDifferences(
  family: string,
  got: Map<string, StoredTensor>,
  want: Map<string, StoredTensor>,
): string[] {
  const problems: string[] = [];
  const missing = [...want.keys()].filter((n) => !got.has(n));
  const extra = [...got.keys()].filter((n) => !want.has(n));
  if (missing.length > 0) problems.push(`missing: ${missing.join(", ")}`);
  if (extra.length > 0) problems.push(`not in the source: ${extra.join(", ")}`);
  for (const [name, w] of want) {
    const have = got.get(name);
    if (have === undefined) continue;
    if (have.dtype !== w.dtype) {
      problems.push(`${name}: ${have.dtype}, source ${w.dtype}`);
    } else if (JSON.stringify(have.shape) !== JSON.stringify(w.shape)) {
      problems.push(`${name}: shape ${have.shape}, source ${w.shape}`);
    } else if (!sameBytes(have.bytes, expectedBack(family, name, w.bytes))) {
      problems.push(`${name}: bytes differ`);
    }
  }
  return problems;
}

Deno.test("families: GGUF → SafeTensors gives the source checkpoint's tensors back, bit for bit", async (t) => {
  await withTempDir(async (dir) => {
    for (const family of FAMILIES) {
      await t.step(family, async () => {
        const gguf = `${dir}/${family}.gguf`;
        const back = `${dir}/${family}.safetensors`;
        await convertModel(familyDir(family), gguf);
        await convertModel(gguf, back);
        const source = await readTensors(familyDir(family));
        fail(family, tensorDifferences(family, await readTensors(back), source));
      });
    }
  });
});

Deno.test("families: GGUF → APR equals HF → APR (Hugging Face names and layout, rope_type 2), from aprkit's GGUF and from llama.cpp's converter's", async (t) => {
  await withTempDir(async (dir) => {
    const cases = [
      ...FAMILIES.map((family) => ({ family, gguf: undefined as string | undefined })),
      ...CONVERTER_GGUFS.map((family) => ({
        family,
        gguf: `${FAMILIES_DIR}/llama.cpp/${family}-f32.gguf` as string | undefined,
      })),
    ];
    for (const { family, gguf } of cases) {
      await t.step(
        `${family}${gguf === undefined ? "" : " (llama.cpp's converter's GGUF)"}`,
        async () => {
          const direct = `${dir}/${family}.apr`;
          if (!(await exists(direct))) await convertModel(familyDir(family), direct);
          let source = gguf;
          if (source === undefined) {
            source = `${dir}/${family}.gguf`;
            await convertModel(familyDir(family), source);
          }
          const viaGguf = `${dir}/${family}-${gguf === undefined ? "aprkit" : "llamacpp"}.apr`;
          await convertModel(source, viaGguf);
          const problems = tensorDifferences(
            family,
            await readTensors(viaGguf),
            await readTensors(direct),
          );
          const model = await openModel(viaGguf);
          try {
            const ropeType = (model.header.metadata as Record<string, unknown>).rope_type;
            if (ropeType !== 2) {
              problems.push(`rope_type ${ropeType}, want 2 (Hugging Face's Q/K rows)`);
            }
          } finally {
            await model.close();
          }
          fail(family, problems);
        },
      );
    }
  });
});

async function exists(path: string): Promise<boolean> {
  try {
    await Deno.stat(path);
    return true;
  } catch {
    return false;
  }
}

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

Deno.test("families: HF → APR names tensors as realizar's AprTransformer looks them up, with rope_type and the sizes its load gate checks", async (t) => {
  await withTempDir(async (dir) => {
    for (const family of FAMILIES) {
      await t.step(family, async () => {
        const apr = `${dir}/${family}.apr`;
        await convertModel(familyDir(family), apr);
        const model = await openModel(apr);
        let names: Set<string>;
        let metadata: Record<string, unknown>;
        let embedding: readonly number[] = [];
        try {
          names = new Set(model.names());
          metadata = model.header.metadata as Record<string, unknown>;
          if (names.has("model.embed_tokens.weight")) {
            embedding = model.tensor("model.embed_tokens.weight").info.shape;
          }
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
        // realizar's load gate (PMAT-906): the sizes it reads must match the embedding.
        const [rows, cols] = embedding;
        if (metadata.vocab_size !== rows) {
          problems.push(`vocab_size ${metadata.vocab_size}, embedding rows ${rows}`);
        }
        if (metadata.hidden_size !== cols) {
          problems.push(`hidden_size ${metadata.hidden_size}, embedding columns ${cols}`);
        }
        const layers = Number(metadata.num_layers);
        if (!(layers >= 2) || !names.has(`model.layers.${layers - 1}.self_attn.o_proj.weight`)) {
          problems.push(`num_layers ${metadata.num_layers} does not match the layers`);
        }
        fail(family, problems);
      });
    }
  });
});

Deno.test("families: a family aprkit does not write as GGUF yet is refused, naming it and the supported list, with no file", async (t) => {
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

Deno.test("families: a config.json whose vocab_size or hidden_size disagrees with the embedding is refused at import, in one line, with no file", async (t) => {
  for (const [key, value] of [["vocab_size", 400], ["hidden_size", 96]] as const) {
    await t.step(`${key} ${value} for a 384×64 embedding`, async () => {
      await withTempDir(async (dir) => {
        const source = `${dir}/llama`;
        await Deno.mkdir(source);
        for (const entry of Deno.readDirSync(familyDir("llama"))) {
          await Deno.copyFile(`${familyDir("llama")}/${entry.name}`, `${source}/${entry.name}`);
        }
        const config = JSON.parse(await Deno.readTextFile(`${source}/config.json`));
        config[key] = value;
        await Deno.writeTextFile(`${source}/config.json`, JSON.stringify(config, null, 2));
        const out = `${dir}/llama.apr`;
        const run = await runApr(["convert", source, "-o", out]);
        assert.equal(run.code, 2, run.stderr);
        const lines = run.stderr.trim().split("\n");
        assert.equal(lines.length, 1, run.stderr);
        assert.match(lines[0]!, new RegExp(key));
        assert.match(lines[0]!, /config\.json/);
        assert.match(lines[0]!, new RegExp(String(value)));
        await assert.rejects(Deno.stat(out), Deno.errors.NotFound);
      });
    });
  }
});
