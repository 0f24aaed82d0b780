/**
 * Issue 27's optional part, Qwen3-VL (`Qwen3VLForConditionalGeneration`,
 * `Qwen3VLMoeForConditionalGeneration`), judged by the real programs as
 * `multimodal_test.ts` judges the other classes: tiny checkpoints
 * (`tests/testdata/multimodal/qwen3vl/`, saved by transformers 4.57.6 and
 * 5.18, both in Qwen3-VL's module-path layout) converted by aprkit. The text
 * GGUF (architecture `qwen3vl` / `qwen3vlmoe`, interleaved M-RoPE sections,
 * `n_deepstack_layers`) runs in llama.cpp as transformers computes the
 * text-only next tokens and equals llama.cpp's converter's, directly and via
 * APR; the vision GGUF (`--mmproj`, deepstack mergers) equals the converter's
 * `--mmproj`; the APR holds the language model under realizar's names.
 */

import assert from "node:assert/strict";
import { convertModel } from "../../src/pipeline/convert_model.ts";
import { rawSafetensors, testdata, withTempDir } from "../cli/_run_apr.ts";
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
  assertMmprojAsConverter,
  assertRefused,
  convertFixtures,
  copyCheckpoint,
  fixtureJson,
  metadataDifferences,
  modelContents,
  notRealizarNames,
  sourceNames,
} from "./_multimodal.ts";

const DIR = testdata("multimodal/qwen3vl");
/** Untied (as Qwen3-VL-8B), whose vision GGUF is compared too. */
const UNTIED = ["qwen3-vl-t4", "qwen3-vl-t5"];
/** Tied embeddings, no `lm_head.weight` (as Qwen3-VL-2B and -4B). */
const TIED = ["qwen3-vl-tied-t4", "qwen3-vl-tied-t5"];
/**
 * Qwen3-VL-MoE: transformers 4.57.6's packed, transposed experts (the Hub's),
 * and transformers 5.18's own layout, which llama.cpp's converter does not
 * read (it assumes the Hub's): that fixture is judged by transformers alone.
 */
const MOE = ["qwen3-vl-moe-t4", "qwen3-vl-moe-t5"];
const FIXTURES = [...UNTIED, ...TIED, ...MOE];
const NO_CONVERTER_FILE = new Set(["qwen3-vl-moe-t5"]);

function isMoe(name: string): boolean {
  return MOE.includes(name);
}

function json<T>(path: string): Promise<T> {
  return fixtureJson(DIR, path);
}

Deno.test("qwen3-vl: the fixtures are both transformers' saves, in Qwen3-VL's layout, with deepstack mergers", () => {
  for (const name of FIXTURES) {
    const names = sourceNames(DIR, name);
    assert.ok(names.some((n) => n.startsWith("model.language_model.layers.0.self_attn.q_norm")));
    assert.ok(names.some((n) => n.startsWith("model.visual.deepstack_merger_list.1.")));
    assert.equal(names.includes("lm_head.weight"), !TIED.includes(name));
    assert.equal(
      names.includes("model.language_model.layers.0.mlp.experts.gate_up_proj"),
      isMoe(name),
    );
  }
});

Deno.test("qwen3-vl: HF → GGUF (text) runs in llama.cpp as transformers computes it, and equals llama.cpp's converter, directly and via APR", async (t) => {
  await withTempDir(async (dir) => {
    const files = await convertFixtures(DIR, FIXTURES, dir);
    const refs = await Promise.all(
      FIXTURES.map((n) => json<FamilyReference>(`reference/${n}.json`)),
    );
    // Where llama.cpp's converter gives no file to compare with, the GGUF made
    // via APR runs in llama.cpp too.
    const jobs = FIXTURES.flatMap((n, i) =>
      [files.get(n)!.gguf, ...NO_CONVERTER_FILE.has(n) ? [files.get(n)!.viaApr] : []].map((
        path,
      ) => ({ path, ids: refs[i]!.sequence, positions: refs[i]!.positions }))
    );
    const results = await llamaLogProbs(jobs);
    const runs = FIXTURES.map((n) => results[jobs.findIndex((j) => j.path === files.get(n)!.gguf)]);
    for (const [i, name] of FIXTURES.entries()) {
      const f = files.get(name)!;
      await t.step(`${name}: llama.cpp computes what transformers computes`, () => {
        assertAsTransformers(name, runs[i]!, refs[i]!);
      });
      if (NO_CONVERTER_FILE.has(name)) {
        await t.step(`${name}: via APR, llama.cpp computes what transformers computes`, () => {
          const run = results[jobs.findIndex((j) => j.path === f.viaApr)]!;
          assertAsTransformers(`${name} via APR`, run, refs[i]!);
        });
      } else {
        await t.step(
          `${name}: equals llama.cpp's converter's text GGUF (directly and via APR)`,
          async () => {
            const theirs = await json<GgufManifest>(`llama.cpp/${name}-f32.json`);
            const arch = isMoe(name) ? "qwen3vlmoe" : "qwen3vl";
            assert.equal(theirs.kv.find((e) => e.key === "general.architecture")?.value, arch);
            assert.ok(
              theirs.kv.some((e) => e.key === `${arch}.n_deepstack_layers` && e.value === 2),
            );
            await assertAsConverter(name, f, theirs);
          },
        );
      }
      await t.step(
        `${name}: one note says the vision tower was left out and how to write it`,
        () => {
          const left = f.notes.filter((n) => n.includes("vision tower"));
          assert.equal(left.length, 1, f.notes.join("\n"));
          assert.match(left[0]!, /Qwen3VL(Moe)?ForConditionalGeneration.*left out.*--mmproj FILE/);
        },
      );
    }
  });
});

Deno.test("qwen3-vl: HF → APR holds the language model under realizar's names, the text config's hyperparameters, no vision tower", async (t) => {
  await withTempDir(async (dir) => {
    for (const name of FIXTURES) {
      await t.step(name, async () => {
        const apr = `${dir}/${name}.apr`;
        const notes: string[] = [];
        await convertModel(`${DIR}/hf/${name}`, apr, { onNote: (m) => notes.push(m) });
        const { names, metadata } = await modelContents(apr);
        const problems = notRealizarNames(names);
        const need = ["model.embed_tokens.weight", "model.norm.weight", "lm_head.weight"];
        for (let l = 0; l < 3; l++) {
          for (const x of ["q_proj", "k_proj", "v_proj", "o_proj", "q_norm", "k_norm"]) {
            need.push(`model.layers.${l}.self_attn.${x}.weight`);
          }
          // Qwen3-VL-MoE's experts stay packed, as the checkpoint has them.
          if (isMoe(name)) {
            need.push(
              `model.layers.${l}.mlp.gate.weight`,
              `model.layers.${l}.mlp.experts.gate_up_proj`,
              `model.layers.${l}.mlp.experts.down_proj`,
            );
          }
        }
        for (const n of need) if (!names.includes(n)) problems.push(`no ${n}`);
        problems.push(...metadataDifferences(metadata, {
          architecture: isMoe(name) ? "qwen3vlmoe" : "qwen3vl",
          ...(isMoe(name) ? { num_experts: 4, num_experts_per_tok: 2 } : {}),
          num_layers: 3,
          hidden_size: 64,
          num_heads: 4,
          num_kv_heads: 2,
          head_dim: 16,
          vocab_size: 384,
          rope_theta: 5000000,
          rope_type: 2,
        }));
        fail(name, problems);
        assert.equal(
          notes.filter((n) => /vision tower.*left out.*--keep-vision/.test(n)).length,
          1,
          notes.join("\n"),
        );
      });
    }
  });
});

Deno.test("qwen3-vl: --keep-vision keeps the vision tower in the APR under its Hugging Face names", async () => {
  await withTempDir(async (dir) => {
    const name = "qwen3-vl-t4";
    const { tower, names } = await assertKeepsVision(
      DIR,
      name,
      `${dir}/${name}.apr`,
      /^model\.visual\./,
    );
    assert.ok(tower.length > 30);
    assert.ok(names.includes("model.layers.0.self_attn.q_norm.weight"));
  });
});

Deno.test("qwen3-vl: --mmproj writes the vision GGUF equal to llama.cpp's converter's, deepstack mergers included", async (t) => {
  await withTempDir(async (dir) => {
    for (const name of [...UNTIED, "qwen3-vl-moe-t4"]) {
      await t.step(name, async () => {
        // The converter reads Qwen3-VL's module paths (`model.visual.*`): each
        // fixture is held to the converter's file from that same fixture.
        const theirs = await json<GgufManifest>(`llama.cpp/${name}-mmproj-f32.json`);
        assert.ok(theirs.tensors.some((e) => e.name === "v.deepstack.2.fc2.weight"));
        await assertMmprojAsConverter(
          `${DIR}/hf/${name}`,
          `${dir}/${name}.gguf`,
          theirs,
          await json<GgufManifest>(`llama.cpp/${name}-f32.json`),
        );
      });
    }
  });
});

/** A copy of the t4 fixture in `dir` with its config.json changed. */
function variant(
  dir: string,
  name: string,
  change: (config: Record<string, unknown>) => void,
): Promise<string> {
  return copyCheckpoint(`${DIR}/hf/qwen3-vl-t4`, `${dir}/${name}`, change);
}

/**
 * A Qwen3-VL-MoE checkpoint (zeros) whose packed experts fit both layouts:
 * `2 × ff` equals the hidden size, so `gate_up_proj` is `[2, 8, 8]` either way.
 */
async function ambiguousMoe(dir: string): Promise<string> {
  const folder = `${dir}/ambiguous`;
  await Deno.mkdir(folder);
  const text = {
    model_type: "qwen3_vl_moe_text",
    hidden_size: 8,
    num_hidden_layers: 1,
    num_attention_heads: 2,
    num_key_value_heads: 1,
    head_dim: 4,
    vocab_size: 16,
    intermediate_size: 16,
    moe_intermediate_size: 4,
    num_experts: 2,
    num_experts_per_tok: 1,
    rms_norm_eps: 1e-6,
    max_position_embeddings: 64,
    rope_scaling: { rope_type: "default", mrope_section: [1, 1, 0], mrope_interleaved: true },
    rope_theta: 10000,
  };
  await Deno.writeTextFile(
    `${folder}/config.json`,
    JSON.stringify({
      architectures: ["Qwen3VLMoeForConditionalGeneration"],
      model_type: "qwen3_vl_moe",
      text_config: text,
      vision_config: { depth: 1, deepstack_visual_indexes: [] },
      tie_word_embeddings: false,
    }),
  );
  const layer = "model.language_model.layers.0";
  const shapes: Record<string, number[]> = {
    "lm_head.weight": [16, 8],
    "model.language_model.embed_tokens.weight": [16, 8],
    "model.language_model.norm.weight": [8],
    [`${layer}.input_layernorm.weight`]: [8],
    [`${layer}.post_attention_layernorm.weight`]: [8],
    [`${layer}.self_attn.q_proj.weight`]: [8, 8],
    [`${layer}.self_attn.k_proj.weight`]: [4, 8],
    [`${layer}.self_attn.v_proj.weight`]: [4, 8],
    [`${layer}.self_attn.o_proj.weight`]: [8, 8],
    [`${layer}.self_attn.q_norm.weight`]: [4],
    [`${layer}.self_attn.k_norm.weight`]: [4],
    [`${layer}.mlp.gate.weight`]: [2, 8],
    [`${layer}.mlp.experts.gate_up_proj`]: [2, 8, 8],
    [`${layer}.mlp.experts.down_proj`]: [2, 4, 8],
  };
  const header: Record<string, unknown> = {};
  let offset = 0;
  for (const [name, shape] of Object.entries(shapes)) {
    const bytes = shape.reduce((a, b) => a * b, 4);
    header[name] = { dtype: "F32", shape, data_offsets: [offset, offset + bytes] };
    offset += bytes;
  }
  await Deno.writeFile(
    `${folder}/model.safetensors`,
    rawSafetensors(JSON.stringify(header), new Uint8Array(offset)),
  );
  return folder;
}

Deno.test("qwen3-vl: refused in one line, with no file: a deepstack index past the tower (--mmproj); Qwen3-VL-MoE experts whose shape fits both layouts", async () => {
  await withTempDir(async (dir) => {
    const past = await variant(dir, "past", (c) => {
      (c["vision_config"] as Record<string, unknown>)["deepstack_visual_indexes"] = [1, 5];
    });
    const ambiguous = await ambiguousMoe(dir);
    const out = `${dir}/out`;
    await Deno.mkdir(out);
    const cases: [string[], RegExp][] = [
      [
        ["convert", past, "-o", `${out}/m.gguf`, "--mmproj", `${out}/mm.gguf`],
        /vision GGUF.*deepstack_visual_indexes \[1, 5\] go past its depth 3/,
      ],
      [
        ["convert", ambiguous, "-o", `${out}/m.gguf`],
        /gate_up_proj.*\[2,8,8\] fits both the Hub's transposed experts and transformers 5's/,
      ],
    ];
    for (const [args, message] of cases) {
      await assertRefused(args, message);
      assert.deepEqual([...Deno.readDirSync(out)], []);
    }
  });
});

Deno.test("qwen3-vl: --mmproj from BF16 weights: the tensors the converter writes as F32 (position embeddings, 1-D) are F32, the rest BF16, as its --outtype bf16", async () => {
  await withTempDir(async (dir) => {
    const source = `${DIR}/bf16/qwen3-vl-t4`;
    const theirs = await json<GgufManifest>("llama.cpp/qwen3-vl-t4-bf16-mmproj-bf16.json");
    assert.equal(theirs.tensors.find((e) => e.name === "v.position_embd.weight")?.type, "F32");
    assert.equal(theirs.tensors.find((e) => e.name === "v.blk.0.attn_qkv.weight")?.type, "BF16");
    const mmproj = `${dir}/mmproj.gguf`;
    await convertModel(source, `${dir}/text.gguf`, { mmproj });
    // aprkit writes general.file_type only for a --quantize target, which the
    // vision pass does not take (it keeps the source's types): 0 here, the
    // converter's bf16 32. Every other key, and every tensor, must be equal.
    const problems = manifestDifferences(await ggufDescription(mmproj), theirs);
    assert.deepEqual(
      problems,
      ['KV general.file_type: {"type":4,"value":0}, llama.cpp {"type":4,"value":32}'],
    );
  });
});
