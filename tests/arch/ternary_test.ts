/**
 * BitNet's projections rounded to ternary as llama.cpp's converter rounds
 * them (`BitnetModel.weight_quant`), against its own output on weights that
 * rounding changes (tests/testdata/arch/bitnet_ternary.json, made by
 * make_bitnet_ternary.py): F32 and BF16, values rounding to ±0, a scale
 * clamped to 1e-5, halves rounded to even.
 */

import assert from "node:assert/strict";
import { ternaryWeights } from "../../src/arch/ternary.ts";
import { elementCount } from "../../src/dtype.ts";

interface Case {
  dtype: "F32" | "BF16";
  shape: number[];
  input: string;
  output: string;
}

const decodeBase64 = (text: string) => Uint8Array.from(atob(text), (c) => c.charCodeAt(0));

const CASES = JSON.parse(
  await Deno.readTextFile(new URL("../testdata/arch/bitnet_ternary.json", import.meta.url)),
) as Record<string, Case>;

Deno.test("ternaryWeights(): byte for byte what llama.cpp's converter writes", async (t) => {
  for (const [name, c] of Object.entries(CASES)) {
    await t.step(name, async () => {
      const input = decodeBase64(c.input);
      const source = {
        info: { name, dtype: c.dtype, shape: c.shape, byteLength: input.length },
        // Cut off any value boundary.
        open: () => ReadableStream.from([input.slice(0, 5), input.slice(5)]),
      };
      const out = new Uint8Array(await new Response(ternaryWeights(source, c.dtype)).arrayBuffer());
      assert.equal(out.length, elementCount(c.shape) * (c.dtype === "F32" ? 4 : 2));
      assert.deepEqual(out, decodeBase64(c.output));
    });
  }
});
