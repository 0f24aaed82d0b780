/**
 * aprkit's vision GGUFs (`--mmproj`) run by llama.cpp's multimodal runtime
 * (libmtmd, `_mtmd_judge.ts`) as transformers computes them: each fixture of
 * `tests/testdata/multimodal/judge/` is converted (text GGUF and vision GGUF),
 * llama.cpp encodes the reference's image with them, and the projected
 * embeddings the language model would receive must be transformers' (the
 * reference, `make_mmproj_reference.py`) within {@linkcode TOLERANCE}.
 * Byte equality with llama.cpp's converter is checked elsewhere
 * (`multimodal_test.ts` and the others); this is what those files compute.
 */

import assert from "node:assert/strict";
import { fileURLToPath as fromFileUrl } from "node:url";
import { convertModel } from "../../src/pipeline/convert_model.ts";
import { lcgImage, mtmdEmbed } from "./_mtmd_judge.ts";
import { assertRefused, copyCheckpoint } from "./_multimodal.ts";

const JUDGE = fromFileUrl(new URL("../testdata/multimodal/judge/", import.meta.url));
const TESTDATA = fromFileUrl(new URL("../testdata/", import.meta.url));

/**
 * Largest difference allowed between llama.cpp's and transformers' features,
 * as a fraction of the largest feature's magnitude: ggml's CPU GELU goes
 * through an F16 table and its softmax and norms sum in another order,
 * 3·10⁻⁴–6·10⁻³ of it here (docs/INTEROP.md lists each fixture); a Qwen2.5-VL
 * window computed differently was 0.11 of it (0.85 on 7.8).
 */
const TOLERANCE = 0.01;

interface Reference {
  fixture: string;
  checkpoint: string;
  image: { width: number; height: number };
  n_tokens: number;
  n_embd: number;
  max_abs: number;
  embd: number[];
}

const references: Reference[] = [...Deno.readDirSync(JUDGE)]
  .filter((e) => e.name.endsWith(".json"))
  .map((e) => JSON.parse(Deno.readTextFileSync(`${JUDGE}${e.name}`)) as Reference)
  .sort((a, b) => a.fixture.localeCompare(b.fixture));

Deno.test("mmproj judge: a reference for every fixture the test expects", () => {
  assert.deepEqual(references.map((r) => r.fixture), [
    "gemma3",
    "gemma4-audio",
    "gemma4-cg",
    "gemma4-unified",
    "glm4v",
    "glm4v-moe",
    "idefics3",
    "lfm2-vl",
    "ministral3-vl",
    "mistral3",
    "qwen2-vl",
    "qwen2.5-vl",
    "qwen3-vl",
    "qwen3-vl-moe",
    "qwen3.5-moe-vl",
    "qwen3.5-vl",
    "qwen4exp-cg",
    "smolvlm",
  ]);
});

for (const ref of references) {
  Deno.test(`mmproj judge: llama.cpp runs aprkit's ${ref.fixture} vision GGUF as transformers computes it`, async () => {
    const dir = await Deno.makeTempDir({ prefix: "mmproj-judge-" });
    try {
      const text = `${dir}/m.gguf`;
      const mmproj = `${dir}/mm.gguf`;
      await convertModel(`${TESTDATA}${ref.checkpoint}`, text, { mmproj, onNote: () => {} });
      assert.equal(ref.image.width, ref.image.height);
      const run = await mtmdEmbed(text, mmproj, {
        image: lcgImage(ref.image.width),
        width: ref.image.width,
        height: ref.image.height,
      });
      assert.ok("chunks" in run, `llama.cpp failed: ${"error" in run ? run.error : ""}`);
      // SmolVLM/Idefics3: llama.cpp encodes the image as a tile and again as
      // the overview; at the tile size both are the image, and each must match.
      assert.ok(run.chunks.length >= 1);
      for (const chunk of run.chunks) {
        assert.equal(chunk.type, "image");
        assert.deepEqual([chunk.n_tokens, chunk.n_embd], [ref.n_tokens, ref.n_embd]);
        let worst = 0;
        for (let i = 0; i < ref.embd.length; i++) {
          worst = Math.max(worst, Math.abs(chunk.embd[i]! - ref.embd[i]!));
        }
        assert.ok(
          worst <= TOLERANCE * ref.max_abs,
          `${ref.fixture}: llama.cpp's features differ from transformers' by up to ${worst} ` +
            `(max |x| ${ref.max_abs})`,
        );
        console.log(
          `${ref.fixture}: worst difference ${worst.toPrecision(3)} (max |x| ${
            ref.max_abs.toPrecision(3)
          })`,
        );
      }
    } finally {
      await Deno.remove(dir, { recursive: true });
    }
  });
}

Deno.test("mmproj judge: a Qwen2.5-VL window llama.cpp does not compute is refused for --mmproj", async () => {
  // llama.cpp's qwen2.5vl_merger reads no window size and always uses 112
  // pixels: with 32, llama.cpp computed this tower's features 0.85 off
  // transformers' (the reference's image, 128 × 128).
  const dir = await Deno.makeTempDir({ prefix: "mmproj-judge-" });
  try {
    const model = await copyCheckpoint(
      `${TESTDATA}multimodal/hf/qwen2.5-vl-t5`,
      `${dir}/model`,
      (config) => {
        (config["vision_config"] as Record<string, unknown>)["window_size"] = 32;
      },
    );
    await assertRefused(
      ["convert", model, "-o", `${dir}/m.gguf`, "--mmproj", `${dir}/mm.gguf`],
      /window_size 32: llama\.cpp's qwen2\.5vl_merger attends in windows of 112 pixels/,
    );
    assert.deepEqual([...Deno.readDirSync(dir)].map((e) => e.name), ["model"]);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});
