import { deepStrictEqual as assertEquals, ok, throws } from "node:assert/strict";
import { encodeQ5_0, encodeQ5_1 } from "../../src/quant/q5_0.ts";
import { encodeQ8_0 } from "../../src/quant/q8_0.ts";
import { encodeQ5K } from "../../src/quant/q5_k.ts";
import { encodeQ4K } from "../../src/quant/q4_k.ts";
import { encodeQ6K } from "../../src/quant/q6_k.ts";
import { decodeQ5_0, decodeQ5_1, decodeQ8_0 } from "../../src/quant/ggml_legacy.ts";
import { decodeQ5K } from "../../src/quant/k_quants.ts";

// Vectors made by llama.cpp c392e50's own ggml-quants.c (quantize_q5_0 & co.
// called directly; tests/testdata/README.md): A is 8 rows of 96 values (not
// whole super-blocks, where llama-quantize falls back to Q5_0/Q5_1/Q8_0),
// B 4 rows of 512; each has a matching importance vector, one weight per column.
const DIR = new URL("../testdata/ggml_quants/", import.meta.url);
const f32 = (name: string) => new Float32Array(Deno.readFileSync(new URL(name, DIR)).buffer);
const bytes = (name: string) => Deno.readFileSync(new URL(name, DIR));
const A = f32("a.f32");
const B = f32("b.f32");
const WA = f32("wa.f32");
const WB = f32("wb.f32");

const CASES = [
  { file: "a.q5_0", encode: () => encodeQ5_0(A) },
  { file: "a.q5_0.imatrix", encode: () => encodeQ5_0(A, undefined, WA) },
  { file: "a.q5_1", encode: () => encodeQ5_1(A) },
  { file: "a.q5_1.imatrix", encode: () => encodeQ5_1(A, undefined, WA) },
  { file: "a.q8_0", encode: () => encodeQ8_0(A) },
  { file: "b.q5_k", encode: () => encodeQ5K(B) },
  { file: "b.q5_k.imatrix", encode: () => encodeQ5K(B, undefined, WB) },
  { file: "b.q4_k.imatrix", encode: () => encodeQ4K(B, undefined, WB) },
  { file: "b.q6_k.imatrix", encode: () => encodeQ6K(B, undefined, WB) },
];

Deno.test("the block encoders reproduce llama.cpp's quantize_* bytes, with and without importance weights", async (t) => {
  for (const c of CASES) {
    await t.step(c.file, () => assertEquals(c.encode(), bytes(c.file)));
  }
});

Deno.test("the importance weights change the bytes (they are used, not ignored)", () => {
  ok(!encodeQ5_0(A).every((v, i) => v === encodeQ5_0(A, undefined, WA)[i]));
  ok(!encodeQ5K(B).every((v, i) => v === encodeQ5K(B, undefined, WB)[i]));
});

Deno.test("encodeQ5_0(), encodeQ5_1(), encodeQ8_0() and encodeQ5K() round-trip within their step", () => {
  const x = new Float32Array(512).map((_, i) => Math.sin(i * 0.37) * 0.1);
  const err = (y: Float32Array) => Math.max(...x.map((v, i) => Math.abs(v - y[i]!)));
  ok(err(decodeQ8_0(encodeQ8_0(x))) <= 0.1 / 127);
  ok(err(decodeQ5_0(encodeQ5_0(x))) <= 0.1 / 16);
  ok(err(decodeQ5_1(encodeQ5_1(x))) <= 0.2 / 31);
  ok(err(decodeQ5K(encodeQ5K(x))) <= 0.2 / 31);
});

Deno.test("encoders reject partial blocks and rows that do not match the importance weights", () => {
  throws(
    () => encodeQ8_0(new Float32Array(33)),
    /33 values are not a whole number of 32-value blocks/,
  );
  throws(
    () => encodeQ5K(new Float32Array(300)),
    /300 values are not a whole number of 256-value blocks/,
  );
  throws(
    () => encodeQ5_0(new Float32Array(96), undefined, new Float32Array(64)),
    /96 values are not whole rows of 64/,
  );
});

Deno.test("TensorEncoder gives each matrix of a 3-D tensor its own importance weights, in batches of whole rows", async () => {
  const { TensorEncoder } = await import("../../src/quant/_tensor_encoder.ts");
  // Two matrices of 8 rows × 96 columns, encoded 100 values at a time.
  const values = new Float32Array(2 * A.length);
  values.set(A);
  values.set(A.map((v) => -2 * v), A.length);
  const weights = new Float32Array(2 * 96);
  weights.set(WA);
  weights.set(WA.map((w) => w + 1), 96);
  const pieces: Uint8Array[] = [];
  const encoder = new TensorEncoder("Q5_1", [2, 8, 96], 1, undefined, 100, weights);
  const emit = (b: Uint8Array | Promise<Uint8Array>) => pieces.push(b as Uint8Array);
  for (let i = 0; i < values.length; i += 100) encoder.push(values.subarray(i, i + 100), emit);
  encoder.finish(emit);
  const expected = new Uint8Array(2 * 576);
  expected.set(encodeQ5_1(values.subarray(0, A.length), undefined, weights.subarray(0, 96)));
  expected.set(encodeQ5_1(values.subarray(A.length), undefined, weights.subarray(96)), 576);
  const got = new Uint8Array(pieces.reduce((n, p) => n + p.length, 0));
  let o = 0;
  for (const p of pieces) {
    got.set(p, o);
    o += p.length;
  }
  assertEquals(got, expected);
});
