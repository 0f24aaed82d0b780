/**
 * Issue 18 items 2–3: for every family fixture (tests/testdata/families),
 * aprkit's GGUF equals what llama.cpp's converter wrote for it
 * (`convert_hf_to_gguf.py --outtype f32|bf16|q8_0`) and what `llama-quantize
 * Q4_K_M|Q5_K_S` made of its F32 file, recorded by
 * tests/testdata/arch/make_converter_manifest.py: the same tensors in the
 * same order with the same types, shapes and bytes (sha256), and the same
 * keys, types and values in the same order, tokenizer keys aside (the
 * fixtures' toy tokenizer is not one the converter knows; see the script).
 * Without llama.cpp or Python: the manifest is committed.
 */

import assert from "node:assert/strict";
import { createHash } from "node:crypto";
import { ggufValueTypeName } from "../../src/formats/gguf/header.ts";
import { convertModel } from "../../src/pipeline/convert_model.ts";
import type { QuantizeTarget } from "../../src/quant/plan_quantization.ts";
import { withTempDir } from "../cli/_run_apr.ts";
import { readGgufFile } from "../interop/_files.ts";

interface Manifest {
  kv: { key: string; types: string[]; value: unknown }[];
  tensors: { name: string; type: string; shape: number[]; sha256: string }[];
}

const MANIFEST = JSON.parse(
  await Deno.readTextFile(new URL("../testdata/arch/converter_manifest.json", import.meta.url)),
) as Record<string, Record<string, Manifest>>;
const FIXTURES = new URL("../testdata/families/hf/", import.meta.url).pathname;

/**
 * Keys aprkit writes and the converter does not, per family, and why.
 * Gemma 3: the fixture's layer_types are not llama.cpp's assumed pattern
 * of 6, so aprkit states the pattern (src/arch/families/gemma3.ts).
 */
const EXTRA_KEYS: Readonly<Record<string, readonly string[]>> = {
  gemma3: ["gemma3.attention.sliding_window_pattern"],
};

const OUTTYPES: Record<string, { float32?: boolean; quantize?: QuantizeTarget }> = {
  f32: { float32: true },
  bf16: { quantize: "bf16" },
  q8_0: { quantize: "q8_0" },
  // llama-quantize of the converter's F32 file.
  Q4_K_M: { quantize: "q4_k_m" },
  Q5_K_S: { quantize: "q5_k_s" },
};

Deno.test("every family's GGUF equals llama.cpp's converter's and llama-quantize's: tensors, bytes and keys", async (t) => {
  await withTempDir(async (dir) => {
    for (const [family, byType] of Object.entries(MANIFEST)) {
      for (const [outtype, expected] of Object.entries(byType)) {
        await t.step(`${family} ${outtype}`, async () => {
          const out = `${dir}/${family}-${outtype}.gguf`;
          await convertModel(`${FIXTURES}${family}`, out, OUTTYPES[outtype]!);
          const ours = await readGgufFile(out);
          assert.deepEqual(
            [...ours.tensors].map(([name, t]) => ({ name, type: t.dtype, shape: t.shape })),
            expected.tensors.map(({ name, type, shape }) => ({ name, type, shape })),
          );
          for (const { name, sha256 } of expected.tensors) {
            const bytes = ours.tensors.get(name)!.bytes;
            assert.equal(createHash("sha256").update(bytes).digest("hex"), sha256, `${name} bytes`);
          }
          const extra = new Set(EXTRA_KEYS[family] ?? []);
          const kv = [...ours.kv].filter(([k]) => !k.startsWith("tokenizer.") && !extra.has(k))
            .map(([key, e]) => ({
              key,
              types: [ggufValueTypeName(e.type), ...(e.arrayTypes ?? []).map(ggufValueTypeName)],
              value: typeof e.value === "bigint" ? Number(e.value) : e.value,
            }));
          assert.deepEqual(kv, expected.kv);
          for (const key of extra) assert.ok(ours.kv.has(key), `${key} written`);
        });
      }
    }
  });
});
