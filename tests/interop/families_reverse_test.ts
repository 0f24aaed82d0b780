/**
 * Issue 18 item 4, judged by the source checkpoints: a GGUF of every family
 * (aprkit's, and llama.cpp's converter's where kept) converted back to
 * SafeTensors gives transformers' tensors bit for bit, and to APR gives what a
 * direct Hugging Face import gives (Hugging Face names and Q/K rows,
 * `rope_type` 2).
 */

import { convertModel } from "../../src/pipeline/convert_model.ts";
import { openModel } from "../../src/pipeline/open_model.ts";
import { withTempDir } from "../cli/_run_apr.ts";
import { readTensors } from "./_files.ts";
import {
  CONVERTER_GGUFS,
  fail,
  FAMILIES_DIR,
  familyDir,
  readBackFamilies,
  tensorDifferences,
} from "./_families.ts";

const FAMILIES = readBackFamilies();

/** Tensors llama.cpp's converter generates from config.json (Llama 3 RoPE, LongRoPE). */
const GENERATED_ROPE_TENSORS = [
  "rope_freqs.weight",
  "rope_factors_long.weight",
  "rope_factors_short.weight",
];

Deno.test("families: GGUF → SafeTensors gives the source checkpoint's tensors back, bit for bit, from aprkit's GGUF and from llama.cpp's converter's", async (t) => {
  await withTempDir(async (dir) => {
    const cases = [
      ...FAMILIES.map((family) => ({ family, converters: false })),
      ...CONVERTER_GGUFS.map((family) => ({ family, converters: true })),
    ];
    for (const { family, converters } of cases) {
      await t.step(`${family}${converters ? " (llama.cpp's converter's GGUF)" : ""}`, async () => {
        let gguf = `${FAMILIES_DIR}/llama.cpp/${family}-f32.gguf`;
        if (!converters) {
          gguf = `${dir}/${family}.gguf`;
          await convertModel(familyDir(family), gguf);
        }
        const back = `${dir}/${family}${converters ? "-llamacpp" : ""}.safetensors`;
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
          // The converter's generated RoPE tensors may stay in the APR file: it
          // has no config to make them from again for a GGUF export, and
          // realizar does not look them up. Everything else must be equal.
          const got = await readTensors(viaGguf);
          for (const name of GENERATED_ROPE_TENSORS) got.delete(name);
          const problems = tensorDifferences(family, got, await readTensors(direct));
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
