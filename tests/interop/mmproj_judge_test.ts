/**
 * aprkit's vision GGUFs (`--mmproj`) run by llama.cpp's multimodal runtime
 * (libmtmd, `_mtmd_judge.ts`) as transformers computes them: each fixture of
 * `tests/testdata/multimodal/judge/` is converted (text GGUF and vision GGUF),
 * llama.cpp encodes the reference's image with them, and the projected
 * embeddings the language model would receive must be transformers' (the
 * reference, `make_mmproj_reference.py`) within {@linkcode TOLERANCE}.
 * Audio towers alike, on one clip (`judge/audio/`, `sineClip`).
 * Byte equality with llama.cpp's converter is checked elsewhere
 * (`multimodal_test.ts` and the others); this is what those files compute.
 */

import assert from "node:assert/strict";
import { fileURLToPath as fromFileUrl } from "node:url";
import { convertModel } from "../../src/pipeline/convert_model.ts";
import { lcgImage, type Media, type MtmdChunk, mtmdEmbed, sineClip } from "./_mtmd_judge.ts";
import { assertRefused, copyCheckpoint } from "./_multimodal.ts";

const JUDGE = fromFileUrl(new URL("../testdata/multimodal/judge/", import.meta.url));
const AUDIO_JUDGE = `${JUDGE}audio/`;
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
function worstTokenDifference(
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

/** Largest absolute difference between two equally long lists of values. */
function worstDifference(a: number[], b: number[]): number {
  assert.equal(a.length, b.length);
  let worst = 0;
  for (let i = 0; i < a.length; i++) worst = Math.max(worst, Math.abs(a[i]! - b[i]!));
  return worst;
}

/** The references in `dir`, by fixture name. */
function readReferences<T extends { fixture: string }>(dir: string): T[] {
  return [...Deno.readDirSync(dir)]
    .filter((e) => e.name.endsWith(".json"))
    .map((e) => JSON.parse(Deno.readTextFileSync(`${dir}${e.name}`)) as T)
    .sort((a, b) => a.fixture.localeCompare(b.fixture));
}

/**
 * llama.cpp's features are transformers' within {@linkcode TOLERANCE}:
 * `worst`, their largest difference, against `maxAbs`, the reference's
 * largest magnitude.
 */
function assertJudged(what: string, worst: number, maxAbs: number) {
  assert.ok(
    worst <= TOLERANCE * maxAbs,
    `${what}: llama.cpp's features differ from transformers' by up to ${worst} ` +
      `(max |x| ${maxAbs})`,
  );
  console.log(
    `${what}: worst difference ${worst.toPrecision(3)} (max |x| ${maxAbs.toPrecision(3)})`,
  );
}

/** What llama.cpp makes of `media` with aprkit's text GGUF and `--mmproj` file of `checkpoint`. */
async function encodeConverted(
  checkpoint: string,
  media: Media,
  notes: string[] = [],
): Promise<MtmdChunk[]> {
  const dir = await Deno.makeTempDir({ prefix: "mmproj-judge-" });
  try {
    const text = `${dir}/m.gguf`;
    const mmproj = `${dir}/mm.gguf`;
    await convertModel(`${TESTDATA}${checkpoint}`, text, {
      mmproj,
      onNote: (n) => notes.push(n),
    });
    const run = await mtmdEmbed(text, mmproj, media);
    assert.ok("chunks" in run, `llama.cpp failed: ${"error" in run ? run.error : ""}`);
    return run.chunks;
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
}

const references = readReferences<Reference>(JUDGE);

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
    assert.equal(ref.image.width, ref.image.height);
    const notes: string[] = [];
    const chunks = await encodeConverted(ref.checkpoint, {
      image: lcgImage(ref.image.width),
      width: ref.image.width,
      height: ref.image.height,
    }, notes);
    // The user is told where llama.cpp's order is not transformers'.
    assert.equal(
      notes.some((n) => n.includes("column by column")),
      COLUMN_MAJOR.has(ref.fixture),
      notes.join("\n"),
    );
    // SmolVLM/Idefics3: llama.cpp encodes the image as a tile and again as
    // the overview; at the tile size both are the image, and each must match.
    assert.ok(chunks.length >= 1);
    for (const chunk of chunks) {
      assert.equal(chunk.type, "image");
      assert.deepEqual([chunk.n_tokens, chunk.n_embd], [ref.n_tokens, ref.n_embd]);
      if (COLUMN_MAJOR.has(ref.fixture)) {
        const asIs = worstTokenDifference(ref, chunk.embd, (i) => i);
        assert.ok(
          asIs > TOLERANCE * ref.max_abs,
          `${ref.fixture}: llama.cpp's token order is now transformers'`,
        );
        console.log(`${ref.fixture}: in transformers' token order ${asIs.toPrecision(3)}`);
      }
      const worst = worstTokenDifference(
        ref,
        chunk.embd,
        (i) => transformersToken(ref.fixture, i, ref.n_tokens),
      );
      assertJudged(ref.fixture, worst, ref.max_abs);
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

/** transformers' audio features for `sineClip()` (`make_mmproj_reference.py`, `audio/`). */
interface AudioReference {
  fixture: string;
  checkpoint: string;
  n_tokens: number;
  n_embd: number;
  max_abs: number;
  /**
   * Gemma 4's conformer: from log-mel features floored as llama.cpp floors
   * them, log(max(mel, 0.001)); Gemma 4 Unified's embedder: from frames of
   * 640 raw samples.
   */
  embd: number[];
  /** The conformer's from the feature extractor's own floor, log(mel + 0.001). */
  embd_stock_floor?: number[];
}

/**
 * How far llama.cpp's features are from transformers' with transformers' own
 * log-mel floor on the reference clip (docs/INTEROP.md): 0.0425 (max |x|
 * 2.98), all of it the floor llama.cpp hard-codes, since with its floor the
 * difference is ggml's residue.
 */
const STOCK_FLOOR_DIFFERENCE: Record<string, number> = { "gemma4-audio": 0.0425 };

const audioReferences = readReferences<AudioReference>(AUDIO_JUDGE);

Deno.test("mmproj judge: an audio reference for every audio fixture the test expects", () => {
  assert.deepEqual(audioReferences.map((r) => r.fixture), ["gemma4-audio", "gemma4-unified"]);
});

for (const ref of audioReferences) {
  Deno.test(`mmproj judge: llama.cpp runs aprkit's ${ref.fixture} audio tower as transformers computes it`, async () => {
    const chunks = await encodeConverted(ref.checkpoint, { audio: sineClip() });
    assert.equal(chunks.length, 1);
    const chunk = chunks[0]!;
    assert.equal(chunk.type, "audio");
    assert.deepEqual([chunk.n_tokens, chunk.n_embd], [ref.n_tokens, ref.n_embd]);
    assertJudged(`${ref.fixture} audio`, worstDifference(chunk.embd, ref.embd), ref.max_abs);
    // transformers' own floor, log(mel + 0.001), is a preprocessing
    // difference llama.cpp hard-codes (no file can change it): documented,
    // and measured here as documented (ggml's residue is under 0.003).
    if (ref.embd_stock_floor === undefined) return;
    const stock = worstDifference(chunk.embd, ref.embd_stock_floor);
    const documented = STOCK_FLOOR_DIFFERENCE[ref.fixture]!;
    assert.ok(
      Math.abs(stock - documented) < 0.005,
      `${ref.fixture}: ${stock} from transformers' stock log-mel floor, documented ${documented}`,
    );
    console.log(`${ref.fixture} audio: ${stock.toPrecision(3)} with transformers' log-mel floor`);
  });
}
