/**
 * Gemma 4 as published (`Gemma4ForConditionalGeneration`): the `gemma4`
 * fixture's language model inside the image-text class with a tiny vision
 * tower (`tests/testdata/families/hf/gemma4-cg`, transformers 5.18's
 * `model.language_model.*` layout); and `Gemma4UnifiedForConditionalGeneration`:
 * the `gemma4-dense` fixture's inside the unified class with its tiny vision
 * and audio embedders and `suppress_tokens` in generation_config.json
 * (`hf/gemma4-unified`). aprkit writes each language model as the converter
 * does without `--mmproj` (f32, bf16, q8_0 and llama-quantize's presets,
 * sha256 for sha256; the unified one with `tokenizer.ggml.suppress_tokens`),
 * leaving the towers out with one note, and llama.cpp runs it as transformers
 * computes the text fixture (the same weights; make_families.py checks the
 * composite computes the same). `--mmproj` writes the multimodal GGUF equal
 * to the converter's: Gemma4ForConditionalGeneration's vision tower, and with
 * an audio tower (`hf/gemma4-audio`, as E2B and E4B; the converter writes both
 * into one file) the conformer too, from F32 and from BF16 weights
 * (`hf/gemma4-audio-bf16`); the unified class's vision and audio embedders.
 */

import assert from "node:assert/strict";
import { convertModel } from "../../src/pipeline/convert_model.ts";
import { assertOneLineError, runApr, testdata, withTempDir } from "../cli/_run_apr.ts";
import { readGgufFile } from "./_files.ts";
import { llamaLogProbs } from "./_llama_judge.ts";
import {
  compareWithReference,
  equalsConverterFiles,
  fail,
  familyDir,
  familyReference,
  ggufDescription,
  type GgufManifest,
  manifestDifferences,
} from "./_families.ts";
import { assertMmprojAsConverter, copyCheckpoint, fixtureJson } from "./_multimodal.ts";

/** Each image-text fixture: its class, its text fixture, how its towers are named in the note. */
const COMPOSITES = [
  {
    fixture: "gemma4-cg",
    hfClass: "Gemma4ForConditionalGeneration",
    text: "gemma4",
    note: /vision and audio towers .* left out.*--mmproj/,
  },
  {
    fixture: "gemma4-unified",
    hfClass: "Gemma4UnifiedForConditionalGeneration",
    text: "gemma4-dense",
    note: /vision and audio embedders .* left out.*--mmproj/,
  },
  {
    fixture: "gemma4-audio",
    hfClass: "Gemma4ForConditionalGeneration",
    text: "gemma4",
    note: /vision and audio towers .* left out.*--mmproj/,
  },
] as const;

for (const { fixture, hfClass, text, note } of COMPOSITES) {
  Deno.test(`${fixture} (${hfClass}, the ${text} text model): the text GGUF equals llama.cpp's converter's and llama-quantize's`, async (t) => {
    await equalsConverterFiles(t, fixture);
  });

  Deno.test(`${fixture} (${hfClass}, the ${text} text model): llama.cpp runs the text GGUF as transformers computes it; the towers are left out with one note`, async () => {
    await withTempDir(async (dir) => {
      const out = `${dir}/cg.gguf`;
      const notes: string[] = [];
      await convertModel(familyDir(fixture), out, { onNote: (m) => notes.push(m) });
      assert.equal(notes.filter((n) => note.test(n)).length, 1, notes.join("\n"));
      const ref = await familyReference(text);
      const [run] = await llamaLogProbs([{
        path: out,
        ids: ref.sequence,
        positions: ref.positions,
      }]);
      assert.equal(run!.error, undefined, run!.error);
      fail(fixture, compareWithReference(ref, run!.logprobs));
    });
  });
}

Deno.test("gemma4: tokenizer.ggml.suppress_tokens only for Gemma4UnifiedForConditionalGeneration, as only its converter class writes it", async () => {
  await withTempDir(async (dir) => {
    await convertModel(familyDir("gemma4-unified"), `${dir}/unified.gguf`);
    const unified = (await readGgufFile(`${dir}/unified.gguf`)).kv;
    assert.deepEqual(unified.get("tokenizer.ggml.suppress_tokens")?.value, [3, 5, 7]);
    // The text fixture (Gemma4ForCausalLM) with the same generation_config.json.
    const folder = `${dir}/dense`;
    await Deno.mkdir(folder);
    for (const entry of Deno.readDirSync(familyDir("gemma4-dense"))) {
      await Deno.copyFile(`${familyDir("gemma4-dense")}/${entry.name}`, `${folder}/${entry.name}`);
    }
    await Deno.copyFile(
      `${familyDir("gemma4-unified")}/generation_config.json`,
      `${folder}/generation_config.json`,
    );
    await convertModel(folder, `${dir}/dense.gguf`);
    const dense = (await readGgufFile(`${dir}/dense.gguf`)).kv;
    assert.equal(dense.has("tokenizer.ggml.suppress_tokens"), false);
  });
});

/** The converter's manifest of a fixture's file. */
function manifest(name: string): Promise<GgufManifest> {
  return fixtureJson<GgufManifest>(testdata("families"), `llama.cpp/${name}.json`);
}

// Each class's multimodal GGUF against the converter's --mmproj --outtype f32 file.
const MMPROJ_CASES = [
  ["gemma4-cg", "Gemma4ForConditionalGeneration", "the vision tower"],
  ["gemma4-audio", "Gemma4ForConditionalGeneration", "the vision and audio towers"],
  ["gemma4-unified", "Gemma4UnifiedForConditionalGeneration", "the vision and audio embedders"],
] as const;

for (const [fixture, hfClass, what] of MMPROJ_CASES) {
  Deno.test(`${fixture} (${hfClass}): --mmproj writes ${what} equal to llama.cpp's converter's file`, async () => {
    await withTempDir(async (dir) => {
      const theirs = await manifest(`${fixture}-mmproj-f32`);
      await assertMmprojAsConverter(
        familyDir(fixture),
        `${dir}/m.gguf`,
        theirs,
        await manifest(`${fixture}-f32`),
        () => false,
      );
      const audio = theirs.tensors.filter((t) => /^(a|mm\.a)\./.test(t.name)).length;
      const keys = theirs.kv.map((e) => e.key);
      if (fixture === "gemma4-cg") {
        assert.equal(audio, 0);
        assert.ok(!keys.includes("clip.has_audio_encoder"));
      } else {
        // The audio tower (or the unified class's audio projection) is there.
        assert.ok(audio >= (fixture === "gemma4-audio" ? 100 : 1), `${audio} audio tensors`);
        assert.ok(keys.includes("clip.audio.projector_type"));
      }
    });
  });
}

Deno.test("gemma4-audio: --mmproj from BF16 weights: the convolutions, position embeddings and 1-D tensors F32, the rest BF16, as the converter's --outtype bf16", async () => {
  await withTempDir(async (dir) => {
    const theirs = await manifest("gemma4-audio-bf16-mmproj-bf16");
    const type = (name: string) => theirs.tensors.find((e) => e.name === name)?.type;
    // tensor_force_quant's convolutions (".conv", or "_conv" and ".weight" in the Hugging Face name).
    assert.equal(type("a.conv1d.0.weight"), "F32");
    assert.equal(type("a.input_projection.weight"), "F32");
    assert.equal(type("a.blk.0.conv_dw.weight"), "F32");
    assert.equal(type("a.blk.0.conv_pw1.weight"), "BF16");
    assert.equal(type("mm.a.input_projection.weight"), "BF16");
    const mmproj = `${dir}/mmproj.gguf`;
    await convertModel(familyDir("gemma4-audio-bf16"), `${dir}/text.gguf`, { mmproj });
    // aprkit writes general.file_type only for a --quantize target, which the
    // vision pass does not take (it keeps the source's types): 0 here, the
    // converter's bf16 32. Every other key, and every tensor, must be equal
    // (per_dim_scale within one unit in the last place: ULP_TENSORS).
    assert.deepEqual(
      manifestDifferences(await ggufDescription(mmproj), theirs),
      ['KV general.file_type: {"type":4,"value":0}, llama.cpp {"type":4,"value":32}'],
    );
  });
});

// Configs refused for --mmproj: [fixture, the edit, the refusal]. Without hidden_size the
// converter raises (no feed-forward length); the others it writes, and llama.cpp computes
// otherwise (its gemma4a encoder and gemma4v/gemma4uv pooling hard-code these; measured:
// pooling 2 aborts llama-mtmd-cli, GGML_ASSERT(ggml_can_repeat(b, a))).
const MMPROJ_REFUSED: [
  string,
  (config: Record<string, Record<string, unknown>>) => void,
  RegExp,
][] = [
  [
    "gemma4-audio",
    (c) => delete c["audio_config"]!["hidden_size"],
    /audio_config has no number for hidden_size/,
  ],
  [
    "gemma4-audio",
    (c) => c["audio_config"]!["attention_chunk_size"] = 4,
    /audio_config\.attention_chunk_size is 4; llama\.cpp's gemma4a audio encoder assumes 12/,
  ],
  [
    "gemma4-audio",
    (c) => c["audio_config"]!["rms_norm_eps"] = 1e-5,
    /audio_config\.rms_norm_eps is 0\.00001; llama\.cpp's gemma4a .* assumes 0\.000001/,
  ],
  [
    // Measured: a checkpoint with kernel 3 aborts llama.cpp, GGML_ASSERT(ggml_can_repeat(b, a)).
    "gemma4-audio",
    (c) => c["audio_config"]!["conv_kernel_size"] = 3,
    /audio_config\.conv_kernel_size is 3; llama\.cpp's gemma4a audio encoder assumes 5/,
  ],
  [
    "gemma4-cg",
    (c) => c["vision_config"]!["pooling_kernel_size"] = 2,
    /vision_config\.pooling_kernel_size is 2; llama\.cpp's gemma4v assumes 3/,
  ],
  [
    "gemma4-unified",
    (c) => {
      c["vision_config"]!["pooling_kernel_size"] = 2;
      // The converter's patch side (else the patch times the pooling), as the checkpoint's.
      c["vision_config"]!["model_patch_size"] = 12;
    },
    /vision_config\.pooling_kernel_size is 2; llama\.cpp's gemma4uv assumes 3/,
  ],
  [
    "gemma4-unified",
    (c) => c["audio_config"]!["rms_norm_eps"] = 1e-5,
    /audio_config\.rms_norm_eps is 0\.00001; llama\.cpp's gemma4ua .* assumes 0\.000001/,
  ],
];

Deno.test("gemma4: --mmproj of a tower the converter cannot write, or llama.cpp would compute otherwise, is refused in one line, with no file", async () => {
  await withTempDir(async (dir) => {
    for (const [i, [fixture, edit, why]] of MMPROJ_REFUSED.entries()) {
      const model = await copyCheckpoint(familyDir(fixture), `${dir}/src${i}`, (config) => {
        edit(config as Record<string, Record<string, unknown>>);
      });
      await assertMmprojRefused(model, `${dir}/out${i}`, why);
    }
  });
});

/** Convert `model` with `--mmproj` into `out` and fail unless it is refused in one line that `why` matches, writing nothing. */
async function assertMmprojRefused(model: string, out: string, why: RegExp): Promise<void> {
  await Deno.mkdir(out);
  const run = await runApr(["convert", model, "-o", `${out}/m.gguf`, "--mmproj", `${out}/mm.gguf`]);
  assertOneLineError(run, new RegExp(`vision GGUF.*${why.source}`));
  assert.deepEqual([...Deno.readDirSync(out)], []);
}

/**
 * Rewrite a safetensors shard with the tensors `which` selects stored as F16
 * (the first half of their bytes: never read, the plan refuses them).
 *
 * @returns The bytes it saved.
 */
async function asF16(path: string, which: (name: string) => boolean): Promise<number> {
  const bytes = await Deno.readFile(path);
  const length = Number(new DataView(bytes.buffer).getBigUint64(0, true));
  const header = JSON.parse(new TextDecoder().decode(bytes.subarray(8, 8 + length)));
  const data = bytes.subarray(8 + length);
  const parts: Uint8Array[] = [];
  let at = 0;
  for (const [name, entry] of Object.entries<Record<string, unknown>>(header)) {
    if (name === "__metadata__") continue;
    const [start, end] = entry["data_offsets"] as [number, number];
    let payload = data.subarray(start, end);
    if (which(name)) {
      entry["dtype"] = "F16";
      payload = payload.subarray(0, payload.length / 2);
    }
    entry["data_offsets"] = [at, at + payload.length];
    at += payload.length;
    parts.push(payload);
  }
  let json = new TextEncoder().encode(JSON.stringify(header));
  json = Uint8Array.from([...json, ...new Array((8 - json.length % 8) % 8).fill(0x20)]);
  const size = new Uint8Array(8);
  new DataView(size.buffer).setBigUint64(0, BigInt(json.length), true);
  await Deno.writeFile(path, Uint8Array.from([...size, ...json, ...parts.flatMap((p) => [...p])]));
  return data.length - at;
}

Deno.test("gemma4-audio: --mmproj of F16 per_dim_scale (the converter's softplus in half precision) is refused in one line, with no file", async () => {
  await withTempDir(async (dir) => {
    const model = await copyCheckpoint(familyDir("gemma4-audio"), `${dir}/src`);
    const index = JSON.parse(await Deno.readTextFile(`${model}/model.safetensors.index.json`));
    const shard = index.weight_map["model.audio_tower.layers.0.self_attn.per_dim_scale"];
    const saved = await asF16(`${model}/${shard}`, (name) => name.endsWith("per_dim_scale"));
    index.metadata.total_size -= saved;
    await Deno.writeTextFile(`${model}/model.safetensors.index.json`, JSON.stringify(index));
    await assertMmprojRefused(
      model,
      `${dir}/out`,
      /Cannot compute "model\.audio_tower\.layers\.0\.self_attn\.per_dim_scale".*F16, not F32 or BF16/,
    );
  });
});
