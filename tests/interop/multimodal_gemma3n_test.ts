/**
 * Issue 27's last optional family, Gemma 3n (`Gemma3nForConditionalGeneration`,
 * `Gemma3nForCausalLM`), judged by the real programs: tiny checkpoints
 * (`tests/testdata/multimodal/gemma3n/`, one language model saved by
 * transformers 5.18 under the Hub's ConditionalGeneration key layout with
 * small tower tensors, and as `Gemma3nForCausalLM`) converted by aprkit. The
 * text GGUF (architecture `gemma3n`: per-layer embeddings padded to
 * `vocab_size`, AltUp projections stacked, Laurel, activation sparsity
 * scales, sliding-window pattern) runs in llama.cpp as transformers computes
 * the next tokens and equals llama.cpp's converter's, directly, via APR, at
 * BF16 and Q8_0; the APR holds the language model under its Hugging Face
 * names without the towers; the vision and audio GGUF (`--mmproj`) is
 * refused.
 */

import assert from "node:assert/strict";
import { torchNormalIcdf } from "../../src/arch/families/gemma3n.ts";
import { convertModel } from "../../src/pipeline/convert_model.ts";
import type { QuantizeTarget } from "../../src/quant/plan_quantization.ts";
import { runApr, testdata, withTempDir } from "../cli/_run_apr.ts";
import { llamaLogProbs } from "./_llama_judge.ts";
import {
  fail,
  type FamilyReference,
  ggufDescription,
  type GgufManifest,
  manifestDifferences,
} from "./_families.ts";
import {
  assertAsConverter,
  assertAsTransformers,
  assertKeepsVision,
  assertRefused,
  convertFixtures,
  copyCheckpoint,
  fixtureJson,
  metadataDifferences,
  modelContents,
  sourceNames,
} from "./_multimodal.ts";

const DIR = testdata("multimodal/gemma3n");
/** The ConditionalGeneration layout (towers included) and the text-only class: the same weights. */
const FIXTURES = ["gemma3n-t5", "gemma3n-text-t5"];
const TOWERS = /^model\.(vision_tower|audio_tower|embed_vision|embed_audio)\./;

function json<T>(path: string): Promise<T> {
  return fixtureJson(DIR, path);
}

Deno.test("gemma3n: the fixtures have the Hub's ConditionalGeneration layout (towers included) and the text-only class's", async () => {
  const full = sourceNames(DIR, "gemma3n-t5");
  assert.ok(full.includes("model.language_model.embed_tokens_per_layer.weight"));
  assert.ok(full.includes("model.language_model.layers.0.altup.correct_output_scale"));
  assert.ok(!full.includes("lm_head.weight"));
  for (const tower of ["vision_tower", "audio_tower", "embed_vision", "embed_audio"]) {
    assert.ok(full.some((n) => n.startsWith(`model.${tower}.`)), tower);
  }
  const text = sourceNames(DIR, "gemma3n-text-t5");
  assert.ok(text.includes("model.embed_tokens_per_layer.weight"));
  assert.ok(!text.some((n) => TOWERS.test(n) || n.includes("language_model")));
  const config = await json<Record<string, Record<string, unknown>>>("hf/gemma3n-t5/config.json");
  assert.deepEqual(config["architectures"], ["Gemma3nForConditionalGeneration"]);
  assert.equal(config["text_config"]!["vocab_size"], 400);
  assert.equal(config["text_config"]!["vocab_size_per_layer_input"], 384);
});

Deno.test("gemma3n: HF → GGUF (text) runs in llama.cpp as transformers computes it, and equals llama.cpp's converter, directly and via APR", async (t) => {
  await withTempDir(async (dir) => {
    const ref = await json<FamilyReference>("reference/gemma3n-t5.json");
    const files = await convertFixtures(DIR, FIXTURES, dir);
    const jobs = FIXTURES.map((n) => ({
      path: files.get(n)!.gguf,
      ids: ref.sequence,
      positions: ref.positions,
    }));
    const runs = await llamaLogProbs(jobs);
    for (const [i, name] of FIXTURES.entries()) {
      const f = files.get(name)!;
      await t.step(`${name}: llama.cpp computes what transformers computes`, () => {
        assertAsTransformers(name, runs[i]!, ref);
      });
      await t.step(
        `${name}: equals llama.cpp's converter's text GGUF (directly and via APR)`,
        async () => {
          const theirs = await json<GgufManifest>(`llama.cpp/${name}-f32.json`);
          const value = (key: string) => theirs.kv.find((e) => e.key === key)?.value;
          assert.equal(value("general.architecture"), "gemma3n");
          assert.deepEqual(value("gemma3n.attention.sliding_window_pattern"), [true, false]);
          assert.deepEqual(value("gemma3n.feed_forward_length"), [512, 512]);
          assert.equal(value("tokenizer.ggml.tokens") instanceof Array, true);
          const tensor = (n: string) => theirs.tensors.find((e) => e.name === n)?.ne;
          assert.deepEqual(tensor("per_layer_token_embd.weight"), [512, 400]); // 384 rows + 16 zero rows
          assert.deepEqual(tensor("altup_proj.weight"), [64, 64, 3]);
          await assertAsConverter(name, f, theirs);
        },
      );
    }
    await t.step("one note says the towers were left out, and where their GGUF comes from", () => {
      const notes = files.get("gemma3n-t5")!.notes.filter((n) => n.includes("left out"));
      assert.equal(notes.length, 1, files.get("gemma3n-t5")!.notes.join("\n"));
      assert.match(
        notes[0]!,
        /vision and audio towers.*Gemma3nForConditionalGeneration \(9 tensors\).*convert_hf_to_gguf\.py --mmproj/,
      );
      assert.deepEqual(
        files.get("gemma3n-text-t5")!.notes.filter((n) => n.includes("left out")),
        [],
      );
    });
  });
});

/**
 * aprkit's `quantize` option for each file it is compared with: the
 * converter's `--outtype bf16` and `q8_0` (the AltUp coefficients stay F32),
 * and llama-quantize's Q4_K_M of the converter's F32 file (AltUp, Laurel and
 * the per-layer projection stay as they are; the per-layer embedding is typed
 * as the token embedding).
 */
const TYPES: readonly (readonly [string, QuantizeTarget])[] = [
  ["bf16", "bf16"],
  ["q8_0", "q8_0"],
  ["Q4_K_M", "q4_k_m"],
];

Deno.test("gemma3n: the text GGUF at BF16 and Q8_0 equals the converter's, at Q4_K_M llama-quantize's", async (t) => {
  await withTempDir(async (dir) => {
    for (const [type, quantize] of TYPES) {
      await t.step(type, async () => {
        const theirs = await json<GgufManifest>(`llama.cpp/gemma3n-t5-${type}.json`);
        const out = `${dir}/gemma3n-${type}.gguf`;
        await convertModel(`${DIR}/hf/gemma3n-t5`, out, { quantize });
        fail(`gemma3n ${type}`, manifestDifferences(await ggufDescription(out), theirs));
      });
    }
    await t.step(
      "the converter's --outtype q8_0 also quantizes what llama-quantize leaves",
      async () => {
        const converter = await json<GgufManifest>("llama.cpp/gemma3n-t5-q8_0.json");
        const quantize = await json<GgufManifest>("llama.cpp/gemma3n-t5-Q8_0.json");
        const types = (m: GgufManifest) => new Map(m.tensors.map((e) => [e.name, e.type]));
        const a = types(converter);
        const differing = [...types(quantize)].filter(([n, type]) => a.get(n) !== type);
        assert.ok(differing.length > 0);
        for (const [name, type] of differing) {
          assert.match(name, /altup|laurel|per_layer_model_proj/);
          assert.equal(type, "F32");
          assert.equal(a.get(name), "Q8_0");
        }
      },
    );
  });
});

Deno.test("gemma3n: HF → APR holds the language model under its Hugging Face names, the text config's hyperparameters, no towers (--keep-vision keeps them)", async () => {
  await withTempDir(async (dir) => {
    const apr = `${dir}/g.apr`;
    const notes: string[] = [];
    await convertModel(`${DIR}/hf/gemma3n-t5`, apr, { onNote: (m) => notes.push(m) });
    const { names, metadata } = await modelContents(apr);
    const text = sourceNames(DIR, "gemma3n-text-t5");
    // The text-only checkpoint's names, plus the output layer realizar reads (tied: a copy).
    assert.deepEqual(names.sort(), [...text, "lm_head.weight"].sort());
    fail(
      "gemma3n APR",
      metadataDifferences(metadata, {
        architecture: "gemma3n",
        hf_architecture: "Gemma3nForConditionalGeneration",
        num_layers: 2,
        hidden_size: 64,
        num_heads: 4,
        num_kv_heads: 2,
        head_dim: 16,
        vocab_size: 400,
        rope_theta: 1000000,
        rope_type: 2,
      }),
    );
    assert.equal(
      notes.filter((n) => /towers.*left out.*--keep-vision/.test(n)).length,
      1,
      notes.join("\n"),
    );

    const { tower } = await assertKeepsVision(DIR, "gemma3n-t5", `${dir}/kept.apr`, TOWERS);
    assert.equal(tower.length, 9);
  });
});

Deno.test("gemma3n: refused in one line, with no file: --mmproj (its vision and audio GGUF), and configs llama.cpp would run otherwise than transformers", async () => {
  await withTempDir(async (dir) => {
    const variant = (tag: string, edit: (text: Record<string, unknown>) => void) =>
      copyCheckpoint(
        `${DIR}/hf/gemma3n-t5`,
        `${dir}/${tag}`,
        (config) => edit(config["text_config"] as Record<string, unknown>),
      );
    const shared = await variant("shared", (c) => c["num_kv_shared_layers"] = 1);
    const laurel = await variant("laurel", (c) => c["laurel_rank"] = 32);
    const sparsity = await variant("sparsity", (c) => c["activation_sparsity_pattern"] = [0.95, 0]);
    const missing = await variant("missing", (c) => delete c["activation_sparsity_pattern"]);
    const out = `${dir}/out`;
    await Deno.mkdir(out);
    const cases: [string[], RegExp][] = [
      [
        ["convert", `${DIR}/hf/gemma3n-t5`, "-o", `${out}/m.gguf`, "--mmproj", `${out}/mm.gguf`],
        /vision GGUF.*aprkit writes none for Gemma3nForConditionalGeneration.*--mmproj.*supported: Gemma3ForConditionalGeneration/,
      ],
      [
        ["convert", shared, "-o", `${out}/m.gguf`],
        /num_kv_shared_layers is 1; llama\.cpp shares the KV of layers from 20 on, which for 2 layers is 0/,
      ],
      [
        ["convert", laurel, "-o", `${out}/m.gguf`],
        /laurel_rank is 32; llama\.cpp reads no key for it and assumes 64/,
      ],
      [
        ["convert", sparsity, "-o", `${out}/m.gguf`],
        /activation_sparsity_pattern is \[0\.95,0\]; llama\.cpp assumes 0\.95 for the first 10 layers/,
      ],
      [
        ["convert", missing, "-o", `${out}/m.gguf`],
        /config\.json has no activation_sparsity_pattern.*which the gemma3n family's GGUF needs/,
      ],
    ];
    for (const [args, message] of cases) {
      await assertRefused(args, message);
      assert.deepEqual([...Deno.readDirSync(out)], []);
    }
    // Such a config is kept in APR, where nothing assumes llama.cpp's sizes.
    const apr = await runApr(["import", laurel, "-o", `${dir}/laurel.apr`]);
    assert.equal(apr.code, 0, apr.stderr);
  });
});

Deno.test("gemma3n: the activation sparsity scales are torch's float32 normal quantiles, bit for bit", async () => {
  const { quantiles } = await json<{ quantiles: [number, number | string][] }>(
    "reference/normal_icdf.json",
  );
  assert.ok(quantiles.length > 1000);
  const problems: string[] = [];
  for (const [p, q] of quantiles) {
    const want = typeof q === "number" ? q : q === "-inf" ? -Infinity : Infinity;
    const got = torchNormalIcdf(p);
    if (!Object.is(got, want)) problems.push(`p ${p}: ${got}, torch ${want}`);
  }
  fail("normal quantiles", problems);
});
