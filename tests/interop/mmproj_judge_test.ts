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

/**
 * Towers whose tokens llama.cpp gives the language model in another order
 * than transformers, a fact of its graph no file changes (docs/INTEROP.md):
 * Llama 4's pixel shuffle leaves out transformers' second permute
 * (clip.cpp's llama4 graph has it commented out), so llama.cpp orders the
 * shuffled g × g grid column by column where transformers (and Meta's
 * reference code) go row by row. The judge compares llama.cpp's token i with
 * transformers' token at the transposed place, and checks that in
 * transformers' order they differ.
 */
const COLUMN_MAJOR = new Set(["llama4"]);

/** transformers' token index of llama.cpp's token `i`, for `n` tokens of a square grid. */
function transformersToken(fixture: string, i: number, n: number): number {
  if (!COLUMN_MAJOR.has(fixture)) return i;
  const side = Math.round(Math.sqrt(n));
  assert.equal(side * side, n);
  return (i % side) * side + Math.floor(i / side);
}

/** The largest difference of llama.cpp's features from the reference's, token by token. */
function worstDifference(
  ref: Reference,
  embd: ArrayLike<number>,
  token: (i: number) => number,
): number {
  let worst = 0;
  for (let i = 0; i < ref.n_tokens; i++) {
    const theirs = token(i) * ref.n_embd;
    for (let k = 0; k < ref.n_embd; k++) {
      worst = Math.max(worst, Math.abs(embd[i * ref.n_embd + k]! - ref.embd[theirs + k]!));
    }
  }
  return worst;
}

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
  // Listed in the order they were added (parallel branches add at the end), compared sorted.
  assert.deepEqual(
    references.map((r) => r.fixture),
    [
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
      "llama4",
    ].sort((a, b) => a.localeCompare(b)),
  );
});

for (const ref of references) {
  Deno.test(`mmproj judge: llama.cpp runs aprkit's ${ref.fixture} vision GGUF as transformers computes it`, async () => {
    const dir = await Deno.makeTempDir({ prefix: "mmproj-judge-" });
    try {
      const text = `${dir}/m.gguf`;
      const mmproj = `${dir}/mm.gguf`;
      const notes: string[] = [];
      await convertModel(`${TESTDATA}${ref.checkpoint}`, text, {
        mmproj,
        onNote: (n) => notes.push(n),
      });
      // The user is told where llama.cpp's order is not transformers'.
      assert.equal(
        notes.some((n) => n.includes("column by column")),
        COLUMN_MAJOR.has(ref.fixture),
        notes.join("\n"),
      );
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
        const worst = worstDifference(
          ref,
          chunk.embd,
          (i) => transformersToken(ref.fixture, i, ref.n_tokens),
        );
        if (COLUMN_MAJOR.has(ref.fixture)) {
          const asIs = worstDifference(ref, chunk.embd, (i) => i);
          assert.ok(
            asIs > TOLERANCE * ref.max_abs,
            `${ref.fixture}: llama.cpp's token order is now transformers'`,
          );
          console.log(`${ref.fixture}: in transformers' token order ${asIs.toPrecision(3)}`);
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
