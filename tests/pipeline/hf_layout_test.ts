/**
 * Issue 18 item 4: a GGUF of every family exported to SafeTensors gives the
 * Hugging Face checkpoint back — its tensor names, experts unstacked, fused
 * tensors as transformers has them, Q/K rows un-permuted, generated RoPE
 * tensors dropped, Gemma's norms shifted back. The GGUF is aprkit's own,
 * which tests/arch/converter_manifest_test.ts proves equal to llama.cpp's
 * converter's, so this is the converter's file read back.
 */

import assert from "node:assert/strict";
import { convertModel } from "../../src/pipeline/convert_model.ts";
import { openModel } from "../../src/pipeline/open_model.ts";
import { withTempDir } from "../cli/_run_apr.ts";
import { NOT_READ_BACK, NOT_RENAMED_FIXTURES } from "../interop/_families.ts";

/** Fixtures whose GGUF is not a renaming of them, or is not read back (refused; families_reverse_test). */
const NOT_CONVERTED = new Set([...NOT_RENAMED_FIXTURES, ...Object.keys(NOT_READ_BACK)]);

const FIXTURES = new URL("../testdata/families/hf/", import.meta.url).pathname;

Deno.test("GGUF → SafeTensors gives every family's checkpoint back", async (t) => {
  await withTempDir(async (dir) => {
    for (const entry of [...Deno.readDirSync(FIXTURES)].sort((a, b) => a.name < b.name ? -1 : 1)) {
      if (NOT_CONVERTED.has(entry.name)) continue;
      const family = entry.name;
      await t.step(family, async () => {
        await convertModel(`${FIXTURES}${family}`, `${dir}/${family}.gguf`, { float32: true });
        await convertModel(`${dir}/${family}.gguf`, `${dir}/${family}.safetensors`);
        const ours = await openModel(`${dir}/${family}.safetensors`);
        const source = await openModel(`${FIXTURES}${family}`);
        try {
          const names = (m: typeof ours) => m.header.tensors.map((t) => t.name).sort();
          // A tied checkpoint stores no lm_head; neither does its GGUF.
          assert.deepEqual(names(ours), names(source));
          for (const info of source.header.tensors) {
            const a = await ours.tensor(info.name).toFloat32();
            const b = await source.tensor(info.name).toFloat32();
            assert.equal(a.length, b.length, info.name);
            // Gemma's and Nemotron's norms went through w + 1 and back in float32:
            // exactly f32(f32(w + 1) − 1).
            const shifted = (family.startsWith("gemma") || family === "nemotron") &&
              info.name.endsWith("norm.weight");
            for (let i = 0; i < a.length; i++) {
              const want = shifted ? Math.fround(Math.fround(b[i]! + 1) - 1) : b[i]!;
              if (a[i] !== want) assert.fail(`${info.name}[${i}]: ${a[i]} vs ${b[i]}`);
            }
          }
        } finally {
          await ours.close();
          await source.close();
        }
      });
    }
  });
});
