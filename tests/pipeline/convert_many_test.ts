/**
 * Several quantizations from one read (issue 33 item 3): each output is the
 * file its own single run writes, byte for byte, whether the outputs share
 * a tensor order (K-quant presets: llama-quantize's) or not (Q8_0: the
 * converter's), and `resume` keeps the outputs a finished run published.
 *
 * @module
 */

import { deepEqual, equal, ok, rejects } from "node:assert/strict";
import { createHash } from "node:crypto";
import { convertModel } from "../../src/pipeline/convert_model.ts";
import { convertModels } from "../../src/pipeline/convert_many.ts";
import type { QuantizeTarget } from "../../src/quant/mod.ts";
import { manifest, sourceGguf } from "../quant/_llama_quantize_fixture.ts";

const MODEL = new URL("../testdata/families/hf/llama", import.meta.url).pathname;

async function sha256(path: string): Promise<string> {
  return createHash("sha256").update(await Deno.readFile(path)).digest("hex");
}

Deno.test("convertModels writes each quantization as its single run does, from one read", async () => {
  const dir = await Deno.makeTempDir();
  try {
    const targets: QuantizeTarget[] = ["q4_k_m", "q5_k_s", "q6_k", "q8_0"];
    const progress = new Map<number, number>();
    const done: number[] = [];
    const results = await convertModels(
      MODEL,
      targets.map((quantize) => ({ output: `${dir}/m-${quantize}.gguf`, quantize })),
      {
        onProgress: (i, e) => progress.set(i, e.bytesDone),
        onOutputDone: (i) => done.push(i),
      },
    );
    deepEqual(results.map((r) => r.output), targets.map((t) => `${dir}/m-${t}.gguf`));
    deepEqual([...done].sort(), [0, 1, 2, 3]);
    for (const [i, target] of targets.entries()) {
      ok((progress.get(i) ?? 0) > 0, `progress of output ${i}`);
      const single = `${dir}/single-${target}.gguf`;
      await convertModel(MODEL, single, { quantize: target });
      equal(await sha256(`${dir}/m-${target}.gguf`), await sha256(single), target);
    }
    // An existing output is refused, or kept with resume.
    await rejects(
      convertModels(MODEL, [{ output: `${dir}/m-q8_0.gguf`, quantize: "q8_0" }]),
      /exists/,
    );
    await Deno.remove(`${dir}/m-q6_k.gguf`);
    const notes: string[] = [];
    const resumed = await convertModels(
      MODEL,
      targets.map((quantize) => ({ output: `${dir}/m-${quantize}.gguf`, quantize })),
      { resume: true, onNote: (n) => notes.push(n) },
    );
    deepEqual(resumed.map((r) => r.output), [`${dir}/m-q6_k.gguf`]);
    equal(notes.filter((n) => n.includes("kept")).length, 3);
    equal(await sha256(`${dir}/m-q6_k.gguf`), await sha256(`${dir}/single-q6_k.gguf`));
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("convertModels refuses outputs that do not combine, before reading", async () => {
  await rejects(
    convertModels(MODEL, [
      { output: "/tmp/aprkit-many-a.gguf", quantize: "q8_0" },
      { output: "/tmp/aprkit-many-b.apr", quantize: "q8" },
    ]),
    /one format/,
  );
  await rejects(
    convertModels(MODEL, [
      { output: "/tmp/aprkit-many-a.gguf", quantize: "q8_0" },
      { output: "/tmp/aprkit-many-a.gguf", quantize: "q6_k" },
    ]),
    /same path/,
  );
  // Checked once, before the read, with the resume each output gets: an APR
  // output resumes, and resume does not combine with LZ4 compression.
  const missing = "/tmp/aprkit-many-no-such-model";
  await rejects(
    convertModels(missing, [{ output: "/tmp/aprkit-many-a.apr", quantize: "q8" }], {
      resume: true,
      compress: "lz4",
    }),
    /compress: "lz4" cannot be combined with resume: true/,
  );
  // A GGUF output in one file does not resume, so it is not refused for it.
  await rejects(
    convertModels(missing, [{ output: "/tmp/aprkit-many-a.gguf", quantize: "q8_0" }], {
      resume: true,
      compress: "lz4",
    }),
    (e: Error) => !/resume/.test(e.message),
  );
});

/** `targets` from one read of `model` (with `options`), each the bytes of its single run (in-thread). */
async function assertEachAsSingle(
  model: string,
  dir: string,
  targets: QuantizeTarget[],
  options: { threads?: number } = {},
): Promise<void> {
  await convertModels(
    model,
    targets.map((quantize) => ({ output: `${dir}/m-${quantize}.gguf`, quantize })),
    options,
  );
  for (const target of targets) {
    await convertModel(model, `${dir}/single-${target}.gguf`, { quantize: target, threads: 0 });
    equal(
      await sha256(`${dir}/m-${target}.gguf`),
      await sha256(`${dir}/single-${target}.gguf`),
      target,
    );
  }
}

Deno.test("convertModels with shared encoder workers: presets giving a tensor the same type encode it once, and each output is its single run's bytes", async () => {
  const dir = await Deno.makeTempDir();
  try {
    // threads: 1 sends every K-quant tensor to the (shared) pool, however
    // small; llama-quantize's dense fixture has rows of 256, so the three
    // presets' Q6_K output.weight is one job list.
    const model = `${dir}/f32.gguf`;
    await Deno.writeFile(model, sourceGguf(manifest("dense")));
    await assertEachAsSingle(model, dir, ["q4_k_m", "q5_k_m", "q6_k"], { threads: 1 });
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

// Families whose layout shifts (Gemma), stacks experts (Qwen2-MoE) or splits
// fused tensors (Phi-3): no pipeline may change a chunk another one shares.
for (const family of ["gemma2", "qwen2-moe", "phi4"]) {
  Deno.test(`convertModels of ${family}: each output is its single run's bytes`, async () => {
    const dir = await Deno.makeTempDir();
    const model = new URL(`../testdata/families/hf/${family}`, import.meta.url).pathname;
    try {
      await assertEachAsSingle(model, dir, ["q4_k_m", "q8_0", "f16"]);
    } finally {
      await Deno.remove(dir, { recursive: true });
    }
  });
}

Deno.test("convertModels checks every output path by the one rule, before reading", async () => {
  const dir = await Deno.makeTempDir();
  try {
    await Deno.mkdir(`${dir}/m-q8_0.gguf`);
    await rejects(
      convertModels(MODEL, [
        { output: `${dir}/m-q4_k_m.gguf`, quantize: "q4_k_m" },
        { output: `${dir}/m-q8_0.gguf`, quantize: "q8_0" },
      ], { force: true }),
      /directory/,
    );
    deepEqual([...Deno.readDirSync(dir)].map((e) => e.name), ["m-q8_0.gguf"]);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});
