/**
 * DeepSeek-V4 (issue 31; src/arch/families/deepseek4.ts), judged by the real
 * programs on the `deepseek4` fixture (its published layout: MXFP4 experts
 * as I8 + F8_E8M0 scales):
 * - HF → GGUF is llama.cpp's converter's `--outtype f32`, `bf16` and `q8_0`
 *   file, sha256 for sha256 (experts repacked to MXFP4 and written first after
 *   the I32 hash table, the default chat template, file type
 *   `MOSTLY_MXFP4_MOE` and the F32 tensors kept F32 under every outtype);
 * - the K-quant presets keep the experts MXFP4 and equal `llama-quantize
 *   --tensor-type exps=mxfp4` (plain llama-quantize refuses: "requantizing
 *   from type mxfp4 is disabled"), saying so in one note; with
 *   `--allow-requantize` they equal `llama-quantize --allow-requantize`;
 * - llama.cpp's CPU kernel multiplies MXFP4 weights by activations rounded to
 *   Q8_0, which flips this fixture's expert and indexer choices, so the judge
 *   runs aprkit's file with its experts decoded to F32 (`--keep-names --dtype
 *   f32`, GGUF → GGUF) and requires transformers' log-probs within 0.03
 *   there; the MXFP4 file itself is run and its figure printed;
 * - configs llama.cpp or its converter cannot take are refused in one line;
 * - a DeepSeek-V4 GGUF is not read back into Hugging Face's layout;
 * - `deepseek4-fp8` (the published FP8 projections: E4M3 + E8M0 `.scale`):
 *   the converter's f32, bf16 and q8_0 files (those matrices Q8_0 under
 *   every outtype), a K-quant preset refused as llama-quantize refuses the
 *   converter's Q8_0, and with `--allow-requantize` llama-quantize's file;
 *   the single type q4_k refused too, naming `--quantize q4_k_m --pure
 *   --allow-requantize` (llama-quantize's `--pure --allow-requantize` file);
 *   llama.cpp runs that file (experts decoded to F32) within 0.03 of
 *   transformers' run of the FP8 checkpoint (`FineGrainedFP8Config(dequantize=True)`).
 */

import assert from "node:assert/strict";
import { KvWriter } from "../../src/arch/kv.ts";
import { familyOf } from "../../src/arch/registry.ts";
import { convertModel } from "../../src/pipeline/convert_model.ts";
import { assertOneLineError, runApr, withTempDir } from "../cli/_run_apr.ts";
import { llamaLogProbs } from "./_llama_judge.ts";
import {
  compareWithReference,
  equalsKeptMxfp4Presets,
  fail,
  familyDir,
  familyReference,
  fileDifference,
  ggufDescription,
  keepsMxfp4UnderSingleType,
  llamaCppManifest,
  manifestDifferences,
  worstDifference,
} from "./_families.ts";

const FIXTURE = "deepseek4";
const SOURCE = familyDir(FIXTURE);

Deno.test("deepseek4: HF → GGUF is llama.cpp's converter's --outtype f32, bf16 and q8_0 file, sha256 for sha256, MXFP4 experts included", async (t) => {
  await withTempDir(async (dir) => {
    for (const type of ["f32", "bf16", "q8_0"] as const) {
      await t.step(type, async () => {
        const out = `${dir}/${type}.gguf`;
        // --dtype f32 is the converter's --outtype f32: the experts stay MXFP4.
        await convertModel(SOURCE, out, type === "f32" ? { float32: true } : { quantize: type });
        const theirs = await llamaCppManifest(FIXTURE, type);
        assert.ok(theirs?.file_sha256 !== undefined, `no llama.cpp ${type} manifest`);
        const mine = await ggufDescription(out);
        // Not vacuous: 4 layers × 3 expert stacks in MXFP4, the hash table I32.
        assert.equal(mine.tensors.filter((x) => x.type === "MXFP4").length, 12);
        assert.deepEqual(
          mine.tensors.filter((x) => x.type === "I32").map((x) => x.name),
          ["blk.0.ffn_gate_tid2eid.weight"],
        );
        fail(`${FIXTURE} ${type}`, manifestDifferences(mine, theirs));
        fail(`${FIXTURE} ${type}`, await fileDifference(out, theirs));
      });
    }
  });
});

Deno.test("deepseek4: Q4_K_M and Q5_K_S keep the experts MXFP4, equal to llama-quantize --tensor-type exps=mxfp4, in a note; --allow-requantize and MXFP4_MOE equal llama-quantize's", (t) =>
  equalsKeptMxfp4Presets(t, FIXTURE, 12));

Deno.test("deepseek4: the single type q4_k keeps the experts as the converter writes them, in a note naming q4_k_m --pure", () =>
  keepsMxfp4UnderSingleType(FIXTURE, 12));

/** The published checkpoint's form: its non-expert projections FP8 (E4M3 + E8M0 `.scale`). */
const FP8 = "deepseek4-fp8";

Deno.test("deepseek4 FP8: the converter's --outtype f32, bf16 and q8_0 file, sha256 for sha256 (FP8 matrices dequantized with their block scales, Q8_0 under every outtype)", async (t) => {
  await withTempDir(async (dir) => {
    for (const type of ["f32", "bf16", "q8_0"] as const) {
      await t.step(type, async () => {
        const out = `${dir}/${type}.gguf`;
        await convertModel(
          familyDir(FP8),
          out,
          type === "f32" ? { float32: true } : { quantize: type },
        );
        const theirs = await llamaCppManifest(FP8, type);
        assert.ok(theirs?.file_sha256 !== undefined, `no llama.cpp ${type} manifest`);
        const mine = await ggufDescription(out);
        // Not vacuous: 4 layers × 8 projections + 2 indexers' wq_b, Q8_0.
        assert.equal(mine.tensors.filter((x) => x.type === "Q8_0").length, 34);
        assert.ok(
          mine.tensors.some((x) => x.name === "blk.1.indexer.attn_q_b.weight" && x.type === "Q8_0"),
        );
        fail(`${FP8} ${type}`, manifestDifferences(mine, theirs));
        fail(`${FP8} ${type}`, await fileDifference(out, theirs));
      });
    }
  });
});

Deno.test("deepseek4 FP8: a K-quant preset, and the single type q4_k, refused in one line with no file (llama-quantize, --pure too, refuses the converter's Q8_0), naming the flags that quantize them again", async (t) => {
  const cases = [
    ["Q4_K_M", /--allow-requantize quantizes them again, as llama-quantize --allow-requantize/],
    ["q4_k", /--quantize q4_k_m --pure --allow-requantize quantizes them again/],
  ] as const;
  for (const [quantize, again] of cases) {
    await t.step(quantize, () =>
      withTempDir(async (dir) => {
        const out = `${dir}/out.gguf`;
        const refused = await runApr([
          "convert",
          familyDir(FP8),
          "-o",
          out,
          "--quantize",
          quantize,
        ]);
        assertOneLineError(
          refused,
          /34 FP8 matrices as Q8_0/,
          /requantizing from type q8_0 is disabled/,
          again,
        );
        assert.deepEqual([...Deno.readDirSync(dir)], []);
      }));
  }
});

Deno.test("deepseek4 FP8: Q4_K_M with --allow-requantize (and --pure) equals llama-quantize --allow-requantize's file of the converter's, and MXFP4_MOE llama-quantize's (the Q8_0 matrices kept)", (t) =>
  equalsKeptMxfp4Presets(t, FP8, 12, [
    "Q4_K_M-allow-requantize",
    "MXFP4_MOE",
    "Q4_K_M-pure-allow-requantize",
    "Q8_0-allow-requantize",
  ]));

/** The fixture copied to `dir/checkpoint`, its config.json changed by `edit`. */
async function withConfig(
  dir: string,
  edit: (config: Record<string, unknown>) => void,
): Promise<string> {
  const copy = `${dir}/checkpoint`;
  await Deno.mkdir(copy);
  for (const entry of Deno.readDirSync(SOURCE)) {
    await Deno.copyFile(`${SOURCE}/${entry.name}`, `${copy}/${entry.name}`);
  }
  const config = JSON.parse(await Deno.readTextFile(`${copy}/config.json`));
  edit(config);
  await Deno.writeTextFile(`${copy}/config.json`, JSON.stringify(config, null, 2));
  return copy;
}

/**
 * The fixture's config.json as transformers 5.18 saves it
 * (`AutoConfig.from_pretrained(…).save_pretrained(…)`, written by
 * tests/testdata/families/make_transformers5_configs.py): the published
 * compress_ratios, num_hash_layers and rope_scaling folded into layer_types,
 * compress_rates, mlp_layer_types and rope_parameters.
 */
const TRANSFORMERS5_CONFIG = JSON.parse(
  Deno.readTextFileSync(
    new URL("../testdata/families/transformers5/deepseek4.config.json", import.meta.url),
  ),
) as Record<string, unknown>;

/** `config` replaced by {@linkcode TRANSFORMERS5_CONFIG}. */
function transformers5Form(config: Record<string, unknown>): void {
  for (const key of Object.keys(config)) delete config[key];
  Object.assign(config, structuredClone(TRANSFORMERS5_CONFIG));
}

Deno.test("deepseek4: llama.cpp runs aprkit's GGUF with its experts decoded to F32 as transformers computes it, from the published config.json and from transformers 5's; the MXFP4 file's figure is recorded", async () => {
  await withTempDir(async (dir) => {
    const ref = await familyReference(FIXTURE);
    const mxfp4 = `${dir}/mxfp4.gguf`;
    const decoded = `${dir}/decoded.gguf`;
    await convertModel(SOURCE, mxfp4);
    // transformers 5's config.json (the converter fails on it: KeyError
    // 'num_hash_layers'), folded back: the same file but for compress_ratios,
    // which keeps no entry for the MTP layer, and the folder's name.
    await Deno.mkdir(`${dir}/t5`);
    const t5 = `${dir}/t5/mxfp4.gguf`;
    await convertModel(await withConfig(`${dir}/t5`, transformers5Form), t5);
    const published = await ggufDescription(mxfp4);
    const folded = await ggufDescription(t5);
    assert.deepEqual(folded.tensors, published.tensors);
    const differing = folded.kv.filter((e, i) =>
      JSON.stringify(e) !== JSON.stringify(published.kv[i])
    );
    assert.deepEqual(differing.map((e) => [e.key, e.value]), [
      ["general.name", "Checkpoint"],
      ["deepseek4.attention.compress_ratios", [0, 4, 128, 4]],
    ]);
    const t5Decoded = `${dir}/t5/decoded.gguf`;
    // The same files with every block type decoded to F32 (the I32 table kept).
    for (const [from, to] of [[mxfp4, decoded], [t5, t5Decoded]]) {
      const run = await runApr(["convert", from!, "-o", to!, "--keep-names", "--dtype", "f32"]);
      assert.equal(run.code, 0, run.stderr);
    }
    const mine = await ggufDescription(decoded);
    assert.deepEqual([...new Set(mine.tensors.map((x) => x.type))].sort(), ["F32", "I32"]);
    // Flash attention off, F32 KV cache: a correct F32 file is within ~1e-4 there.
    const runs = await llamaLogProbs(
      [decoded, t5Decoded, mxfp4].map((path) => ({
        path,
        ids: ref.sequence,
        positions: ref.positions,
        exact: true,
      })),
    );
    for (const r of runs) assert.equal(r.error, undefined, r.error);
    const [f32, t5f32, packed] = runs;
    fail("experts decoded to F32", compareWithReference(ref, f32!.logprobs));
    fail(
      "transformers 5's config.json, experts decoded to F32",
      compareWithReference(ref, t5f32!.logprobs),
    );
    // llama.cpp's MXFP4 × Q8_0 kernel: recorded, not judged against transformers.
    const figure = worstDifference(ref, packed!.logprobs);
    assert.ok(Number.isFinite(figure), "llama.cpp gave the MXFP4 file no log-probabilities");
    console.log(
      `deepseek4: llama.cpp on the MXFP4 file, largest log-prob difference from transformers ` +
        `${figure.toFixed(4)}; experts in F32 ${worstDifference(ref, f32!.logprobs).toFixed(4)}`,
    );
  });
});

Deno.test("deepseek4 FP8: llama.cpp runs aprkit's GGUF (the FP8 projections Q8_0, as the converter writes them; experts decoded to F32) as transformers computes the FP8 checkpoint", async () => {
  await withTempDir(async (dir) => {
    // transformers' run of the FP8 folder, dequantized (E4M3 × E8M0, exact in F32).
    const ref = await familyReference(FP8);
    const packed = `${dir}/fp8.gguf`;
    const decoded = `${dir}/decoded.gguf`;
    await convertModel(familyDir(FP8), packed);
    const run = await runApr(["convert", packed, "-o", decoded, "--keep-names", "--dtype", "f32"]);
    assert.equal(run.code, 0, run.stderr);
    // The Q8_0 projections' values are what llama.cpp computes with; only the
    // experts' MXFP4 × Q8_0-activation kernel is taken out of the judgement.
    assert.equal(
      (await ggufDescription(packed)).tensors.filter((x) => x.type === "Q8_0").length,
      34,
    );
    const [result] = await llamaLogProbs([
      { path: decoded, ids: ref.sequence, positions: ref.positions, exact: true },
    ]);
    assert.equal(result!.error, undefined, result!.error);
    fail(`${FP8}, FP8 projections as Q8_0`, compareWithReference(ref, result!.logprobs));
    console.log(
      `${FP8}: llama.cpp's largest log-prob difference from transformers ` +
        worstDifference(ref, result!.logprobs).toFixed(4),
    );
  });
});

Deno.test("deepseek4: configs llama.cpp or its converter cannot take are refused for GGUF in one line, with no file", async (t) => {
  const cases: [string, (c: Record<string, unknown>) => void, RegExp[]][] = [
    [
      "transformers 5's form with hash layers after a routed one",
      (c) => {
        transformers5Form(c);
        c["mlp_layer_types"] = ["moe", "hash_moe", "moe", "moe"];
      },
      [/num_hash_layers/, /mlp_layer_types/],
    ],
    [
      "transformers 5's form with YaRN on the main RoPE too",
      (c) => {
        transformers5Form(c);
        const rope = c["rope_parameters"] as Record<string, Record<string, unknown>>;
        rope["main"] = { ...rope["compress"], rope_theta: 10000.0 };
      },
      [/RoPE/, /compressed layers only/],
    ],
    // On this 4-stream checkpoint the tensors contradict these first (the family's
    // own refusal of each, for a checkpoint they agree with, is tested below).
    ["hc_mult 2", (c) => void (c["hc_mult"] = 2), [
      /hyper_connection\.count 2 from config\.json's hc_mult\)/,
      /does not match the model's config/,
    ]],
    ["a compress ratio of 8", (c) => void (c["compress_ratios"] = [0, 8, 128, 4, 0]), [
      /compress_ratios \[0,8,128,4,0\] from config\.json's compress_ratios/,
      /does not match the model's config/,
    ]],
    ["softmax scoring", (c) => void (c["scoring_func"] = "softmax"), [/scoring_func/]],
  ];
  for (const [what, edit, patterns] of cases) {
    await t.step(what, async () => {
      await withTempDir(async (dir) => {
        const source = await withConfig(dir, edit);
        const out = `${dir}/out.gguf`;
        const run = await runApr(["convert", source, "-o", out]);
        assertOneLineError(run, ...patterns);
        await assert.rejects(Deno.stat(out), Deno.errors.NotFound);
      });
    });
  }
});

Deno.test("deepseek4: hc_mult other than 4 and a compress ratio llama.cpp does not load are the family's refusals", async () => {
  const config = JSON.parse(await Deno.readTextFile(`${SOURCE}/config.json`));
  const refusal = (edit: Record<string, unknown>) =>
    familyOf("deepseek4")!.gguf!.unsupported!(new KvWriter({ ...config, ...edit }, "deepseek4"));
  assert.equal(refusal({}), undefined);
  assert.match(
    refusal({ hc_mult: 2 }) ?? "",
    /hc_mult 2; llama\.cpp's deepseek4 computes 4 hyper-connection streams/,
  );
  assert.match(
    refusal({ compress_ratios: [0, 8, 128, 4, 0] }) ?? "",
    /compress_ratios \[0,8,128,4,0\]; llama\.cpp's deepseek4 loads one of 0, 4, 128/,
  );
});

Deno.test("deepseek4: its GGUF is refused for SafeTensors and APR output (not read back into Hugging Face's layout), in one line, with no file", async (t) => {
  await withTempDir(async (dir) => {
    const gguf = `${dir}/deepseek4.gguf`;
    await convertModel(SOURCE, gguf);
    for (const output of ["safetensors", "apr"]) {
      await t.step(output, async () => {
        const out = `${dir}/back.${output}`;
        const run = await runApr(["convert", gguf, "-o", out]);
        assertOneLineError(run, /DeepSeek-V4 GGUF/, /MXFP4/, /--keep-names/);
        await assert.rejects(Deno.stat(out), Deno.errors.NotFound);
      });
    }
  });
});

Deno.test("deepseek4: the converter's default chat template follows general.architecture; a folder naming 0731 gets Flash-0731's, and the model's own replaces it in place", async (t) => {
  const { CONVERTER_TEMPLATES } = await import("../../src/arch/_converter_templates.ts");
  const templateKv = async (source: string, out: string) => {
    await convertModel(source, out);
    const kv = (await ggufDescription(out)).kv;
    assert.equal(kv[1]!.key, "tokenizer.chat_template");
    assert.equal(kv.filter((e) => e.key === "tokenizer.chat_template").length, 1);
    return kv[1]!.value;
  };
  await withTempDir(async (dir) => {
    await t.step("a folder naming 0731", async () => {
      await Deno.mkdir(`${dir}/named`);
      const source = `${dir}/named/DeepSeek-V4-Flash-0731`;
      await Deno.rename(await withConfig(`${dir}/named`, () => {}), source);
      assert.equal(
        await templateKv(source, `${dir}/0731.gguf`),
        CONVERTER_TEMPLATES["deepseek-ai-DeepSeek-V4-Flash-0731.jinja"],
      );
    });
    await t.step("the model's own template", async () => {
      await Deno.mkdir(`${dir}/own`);
      const source = await withConfig(`${dir}/own`, () => {});
      const tokenizer = JSON.parse(await Deno.readTextFile(`${source}/tokenizer_config.json`));
      tokenizer.chat_template = "{{ messages[0]['content'] }}";
      await Deno.writeTextFile(`${source}/tokenizer_config.json`, JSON.stringify(tokenizer));
      assert.equal(await templateKv(source, `${dir}/own.gguf`), "{{ messages[0]['content'] }}");
    });
  });
});
