import { deepStrictEqual as assertEquals, notDeepStrictEqual, ok } from "node:assert/strict";
import { encodeQ4_0, encodeQ4_1 } from "../../src/quant/q4_0.ts";
import { encodeQ2K } from "../../src/quant/q2_k.ts";
import { encodeQ3K } from "../../src/quant/q3_k.ts";
import {
  encodeQ1_0,
  encodeQ2_0,
  encodeTq1_0,
  encodeTq2_0,
} from "../../src/quant/ternary_encoders.ts";
import { encodeMxfp4 } from "../../src/quant/mxfp4_encoder.ts";
import { decodeQ4_0, decodeQ4_1 } from "../../src/quant/ggml_legacy.ts";
import { decodeQ2K, decodeQ3K } from "../../src/quant/k_quants.ts";

// Vectors made by llama.cpp de3ff81's own ggml_quantize_chunk (libggml-base
// through ctypes: tests/testdata/ggml_quants/make_fixtures.py): a is 8 rows of
// 96 values, b 4 rows of 512, c 16 rows of 512 built to reach the edge paths
// (zeros, constants, values under GROUP_MAX_EPS, spikes, mixed scales), each
// with one importance weight per column.
const DIR = new URL("../testdata/ggml_quants/", import.meta.url);
const f32 = (name: string) => new Float32Array(Deno.readFileSync(new URL(name, DIR)).buffer);
const bytes = (name: string) => Deno.readFileSync(new URL(name, DIR));
const INPUTS: Record<string, [Float32Array, Float32Array]> = {
  a: [f32("a.f32"), f32("wa.f32")],
  b: [f32("b.f32"), f32("wb.f32")],
  c: [f32("c.f32"), f32("wc.f32")],
};

type Encoder = (v: Float32Array, out?: Uint8Array, w?: Float32Array) => Uint8Array;
/** Each type, its encoder, the inputs whose rows are whole blocks, and whether ggml uses the weights. */
const TYPES: [string, Encoder, string[], boolean][] = [
  ["q4_0", encodeQ4_0, ["a", "b", "c"], true],
  ["q4_1", encodeQ4_1, ["a", "b", "c"], true],
  ["q2_k", encodeQ2K, ["b", "c"], true],
  ["q3_k", encodeQ3K, ["b", "c"], true],
  ["tq1_0", encodeTq1_0, ["b", "c"], false],
  ["tq2_0", encodeTq2_0, ["b", "c"], false],
  ["q1_0", encodeQ1_0, ["b", "c"], false],
  ["q2_0", encodeQ2_0, ["b", "c"], false],
  ["mxfp4", encodeMxfp4, ["a", "b", "c"], false],
];

Deno.test("the legacy, low-bit K-quant, ternary and MXFP4 encoders reproduce ggml's bytes, with and without importance weights", async (t) => {
  for (const [type, encode, inputs, weighted] of TYPES) {
    for (const key of inputs) {
      const [values, weights] = INPUTS[key]!;
      await t.step(`${key}.${type}`, () => assertEquals(encode(values), bytes(`${key}.${type}`)));
      await t.step(`${key}.${type}.imatrix`, () => {
        // ggml ignores the weights of the unweighted types: so does the table's encoder.
        const got = weighted ? encode(values, undefined, weights) : encode(values);
        assertEquals(got, bytes(`${key}.${type}.imatrix`));
      });
    }
  }
});

Deno.test("the weighted encoders use the importance weights (the bytes differ)", () => {
  const [values, weights] = INPUTS.b!;
  for (const encode of [encodeQ4_0, encodeQ4_1, encodeQ2K, encodeQ3K]) {
    notDeepStrictEqual(encode(values), encode(values, undefined, weights));
  }
});

Deno.test("Q4_0, Q4_1, Q2_K and Q3_K round-trip within their steps", () => {
  const x = new Float32Array(512).map((_, i) => Math.sin(i * 0.37) * 0.1);
  const err = (y: Float32Array) => Math.max(...x.map((v, i) => Math.abs(v - y[i]!)));
  ok(err(decodeQ4_0(encodeQ4_0(x))) <= 0.1 / 8);
  ok(err(decodeQ4_1(encodeQ4_1(x))) <= 0.2 / 15);
  ok(err(decodeQ3K(encodeQ3K(x))) <= 0.1 / 3);
  ok(err(decodeQ2K(encodeQ2K(x))) <= 0.2 / 3);
});
