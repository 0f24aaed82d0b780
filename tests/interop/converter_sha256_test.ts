/**
 * Issue 26 item 6: for every family aprkit converts, HF → GGUF gives the
 * same file, sha256 for sha256, as the llama.cpp node-llama-cpp 3.22.1
 * bundles: `convert_hf_to_gguf.py --outtype f32/f16/bf16/q8_0`, and
 * `llama-quantize` of its F32 file for each preset; and HF → APR → GGUF
 * and GGUF → APR → GGUF give the same files back. The references are
 * recorded in tests/testdata/converter/reference.json by make_reference.sh
 * (Python and llama.cpp are not needed here); the folders are built the same
 * way on both sides (`_converter_cases.ts`).
 */

import assert from "node:assert/strict";
import { createHash } from "node:crypto";
import { convertModel, type ConvertOptions } from "../../src/pipeline/convert_model.ts";
import { withTempDir } from "../cli/_run_apr.ts";
import { CONVERTER_CASES, writeCaseFolder } from "./_converter_cases.ts";

const reference = JSON.parse(
  await Deno.readTextFile(new URL("../testdata/converter/reference.json", import.meta.url)),
) as { llama_cpp: string; files: Record<string, string> };

/** Each reference file's name and the aprkit options that must give it. */
const OUTPUTS: readonly [string, ConvertOptions][] = [
  ["f32", { float32: true }],
  ["f16", { quantize: "f16" }],
  ["bf16", {}],
  ["q8_0", { quantize: "q8_0" }],
  ["Q4_K_M", { quantize: "q4_k_m" }],
  ["Q4_K_S", { quantize: "q4_k_s" }],
  ["Q5_K_M", { quantize: "q5_k_m" }],
  ["Q5_K_S", { quantize: "q5_k_s" }],
  ["Q6_K", { quantize: "q6_k" }],
];

async function sha256(path: string): Promise<string> {
  return createHash("sha256").update(await Deno.readFile(path)).digest("hex");
}

Deno.test(`HF → GGUF is llama.cpp's converter + llama-quantize (${reference.llama_cpp.slice(0, 7)}) sha256 for sha256, every family and type`, async () => {
  await withTempDir(async (dir) => {
    const differing: string[] = [];
    for (const c of CONVERTER_CASES) {
      const folder = await writeCaseFolder(dir, c);
      for (const [name, options] of OUTPUTS) {
        const key = `${c.family} ${name}`;
        const want = reference.files[key];
        assert.ok(want !== undefined, `${key}: no reference; run make_reference.sh`);
        const out = `${dir}/${c.family}-${name}.gguf`;
        await convertModel(folder, out, options);
        const got = await sha256(out);
        if (got !== want) differing.push(`${key}: ${got}, llama.cpp ${want}`);
        if (name === "f32") {
          // GGUF → APR → GGUF gives the same file back (issue 26 item 5).
          await convertModel(out, `${dir}/round.apr`);
          await convertModel(`${dir}/round.apr`, `${dir}/round.gguf`);
          const round = await sha256(`${dir}/round.gguf`);
          if (round !== want) differing.push(`${key} through APR: ${round}, llama.cpp ${want}`);
          await Deno.remove(`${dir}/round.apr`);
          await Deno.remove(`${dir}/round.gguf`);
        }
        await Deno.remove(out);
      }
      // HF → APR → GGUF gives the converter's BF16 file too.
      await convertModel(folder, `${dir}/via.apr`);
      await convertModel(`${dir}/via.apr`, `${dir}/via.gguf`);
      const via = await sha256(`${dir}/via.gguf`);
      const bf16 = reference.files[`${c.family} bf16`];
      if (via !== bf16) differing.push(`${c.family} bf16 through APR: ${via}, llama.cpp ${bf16}`);
      await Deno.remove(`${dir}/via.apr`);
      await Deno.remove(`${dir}/via.gguf`);
      await Deno.remove(folder, { recursive: true });
    }
    assert.deepEqual(differing, [], differing.join("\n"));
  });
});
