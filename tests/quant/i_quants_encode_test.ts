import { deepStrictEqual as assertEquals, ok, throws } from "node:assert/strict";
import { encodeIq4Nl, encodeIq4Xs } from "../../src/quant/iq4_encode.ts";
import { encodeIq3S, encodeIq3Xxs } from "../../src/quant/iq3_encode.ts";
import { encodeIq2S, encodeIq2Xs, encodeIq2Xxs } from "../../src/quant/iq2_encode.ts";
import { encodeIq1M, encodeIq1S } from "../../src/quant/iq1_encode.ts";
import { decodeIq4Nl, decodeIq4Xs } from "../../src/quant/i_quants.ts";
import { DTYPES } from "../../src/dtype.ts";

// Vectors made by llama.cpp de3ff81's own ggml_quantize_chunk (libggml-base,
// GGML_NATIVE=OFF) by tests/testdata/ggml_iquants/make_fixtures.py: A is 12
// rows of 512 values, B 16 rows of 256 hard cases (zeros, constants, 3e4 and
// 1e-20 magnitudes, ties, values at each type's eps); WA/WB importance weights.
const DIR = new URL("../testdata/ggml_iquants/", import.meta.url);
const file = (name: string) => Deno.readFileSync(new URL(name, DIR));
const f32 = (name: string) => new Float32Array(file(name).buffer);
const INPUT = { a: f32("a.f32"), b: f32("b.f32") };
const WEIGHTS = { a: f32("wa.f32"), b: f32("wb.f32") };

type Encoder = (v: Float32Array, out?: Uint8Array, w?: Float32Array) => Uint8Array;
/** Each type's encoder and whether ggml encodes it without importance weights. */
const TYPES: [string, Encoder, boolean][] = [
  ["IQ4_NL", encodeIq4Nl, true],
  ["IQ4_XS", encodeIq4Xs, true],
  ["IQ3_S", encodeIq3S, true],
  ["IQ3_XXS", encodeIq3Xxs, true],
  ["IQ2_S", encodeIq2S, true],
  ["IQ2_XXS", encodeIq2Xxs, false],
  ["IQ2_XS", encodeIq2Xs, false],
  ["IQ1_S", encodeIq1S, false],
  ["IQ1_M", encodeIq1M, true],
];

/** Compare block by block, naming the first block that differs. */
function assertBlocks(type: string, got: Uint8Array, want: Uint8Array): void {
  const bb = DTYPES[type as "IQ4_NL"].blockBytes;
  assertEquals(got.length, want.length);
  for (let o = 0; o < want.length; o += bb) {
    const g = got.subarray(o, o + bb);
    const w = want.subarray(o, o + bb);
    if (!g.every((v, i) => v === w[i])) {
      assertEquals([...g], [...w], `${type}: block ${o / bb} differs`);
    }
  }
}

Deno.test("the i-quant encoders reproduce ggml_quantize_chunk's bytes, with and without importance weights", async (t) => {
  for (const [type, encode, unweighted] of TYPES) {
    for (const key of ["a", "b"] as const) {
      const base = `${key}.${type.toLowerCase()}`;
      if (unweighted) {
        await t.step(base, () => assertBlocks(type, encode(INPUT[key]), file(base)));
      }
      await t.step(
        `${base}.imatrix`,
        () =>
          assertBlocks(type, encode(INPUT[key], undefined, WEIGHTS[key]), file(`${base}.imatrix`)),
      );
    }
  }
});

Deno.test("encodeIq4Nl() and encodeIq4Xs() round-trip within a step and reject partial blocks", () => {
  const x = new Float32Array(512).map((_, i) => Math.sin(i * 0.37) * 0.1);
  const err = (y: Float32Array) => Math.max(...x.map((v, i) => Math.abs(v - y[i]!)));
  ok(err(decodeIq4Nl(encodeIq4Nl(x))) < 0.02);
  ok(err(decodeIq4Xs(encodeIq4Xs(x))) < 0.02);
  throws(
    () => encodeIq4Xs(new Float32Array(300)),
    /300 values are not a whole number of 256-value blocks/,
  );
  throws(
    () => encodeIq4Nl(new Float32Array(64), undefined, new Float32Array(48)),
    /whole rows of 48/,
  );
});

Deno.test("encodeFromFloat32() writes the i-quants through the block-encoder table", async () => {
  const { encodeFromFloat32 } = await import("../../src/quant/encode.ts");
  assertBlocks("IQ4_XS", encodeFromFloat32("IQ4_XS", INPUT.a, [12, 512]), file("a.iq4_xs"));
  assertBlocks("IQ4_NL", encodeFromFloat32("IQ4_NL", INPUT.b, [16, 256]), file("b.iq4_nl"));
});

Deno.test("the i-quants ggml quantizes only with importance weights refuse to encode without them", () => {
  for (const [type, encode, unweighted] of TYPES) {
    if (unweighted) continue;
    throws(() => encode(INPUT.b), new RegExp(`Cannot encode ${type} without importance weights`));
  }
});

/** seeded.json's inputs, regenerated as make_fixtures.py makes them. */
function seededInputs(seed: number, rows: number, cols: number): [Float32Array, Float32Array] {
  let x = seed >>> 0;
  const states = new Uint32Array(rows * cols + cols);
  for (let i = 0; i < states.length; i++) {
    x ^= x << 13;
    x ^= x >>> 17;
    x ^= x << 5;
    states[i] = x >>> 0;
  }
  const fr = Math.fround;
  const u = (i: number) => fr((states[i]! >>> 8) * 2 ** -24);
  const values = new Float32Array(rows * cols);
  for (let r = 0; r < rows; r++) {
    for (let c = 0; c < cols; c++) {
      const t = fr(fr(u(r * cols + c) * 2) - 1);
      const v = r % 2 === 0 ? fr(fr(t * t) * t) : t;
      values[r * cols + c] = fr(v * 2 ** ((r % 16) - 12));
    }
  }
  const weights = new Float32Array(cols);
  for (let c = 0; c < cols; c++) {
    const uw = u(rows * cols + c);
    weights[c] = states[rows * cols + c]! % 32 === 0 ? 0 : fr(fr(uw * uw) * 4);
  }
  return [values, weights];
}

async function sha256(bytes: Uint8Array): Promise<string> {
  const d = await crypto.subtle.digest("SHA-256", bytes.slice());
  return [...new Uint8Array(d)].map((b) => b.toString(16).padStart(2, "0")).join("");
}

Deno.test("the i-quant encoders match ggml on 48 seeded rows of 1024 values, row by row", async (t) => {
  const want = JSON.parse(Deno.readTextFileSync(new URL("seeded.json", DIR)));
  const [values, weights] = seededInputs(want.seed, want.rows, want.cols);
  assertEquals(await sha256(new Uint8Array(values.buffer)), want.f32_sha256);
  assertEquals(await sha256(new Uint8Array(weights.buffer)), want.weights_sha256);
  for (const [type, encode, unweighted] of TYPES) {
    for (const weighted of unweighted ? [false, true] : [true]) {
      const key = type + (weighted ? ".imatrix" : "");
      await t.step(key, async () => {
        const out = encode(values, undefined, weighted ? weights : undefined);
        const rowBytes = out.length / want.rows;
        const rows = [];
        for (let r = 0; r < want.rows; r++) {
          rows.push((await sha256(out.subarray(r * rowBytes, (r + 1) * rowBytes))).slice(0, 16));
        }
        assertEquals(rows, want.outputs[key].rows);
        assertEquals(await sha256(out), want.outputs[key].sha256);
      });
    }
  }
});

Deno.test("the WebAssembly i-quant encoders give the TypeScript encoders' (ggml's) bytes", async (t) => {
  const { wasmKernels } = await import("../../src/quant/wasm/kernels.ts");
  const wasm = wasmKernels();
  ok(wasm !== undefined, "WebAssembly runs here");
  const cases: [string, Encoder][] = [
    ["IQ4_NL", wasm.encodeIq4Nl],
    ["IQ4_XS", wasm.encodeIq4Xs],
    ["IQ3_XXS", wasm.encodeIq3Xxs],
    ["IQ3_S", wasm.encodeIq3S],
    ["IQ2_XXS", wasm.encodeIq2Xxs],
    ["IQ2_XS", wasm.encodeIq2Xs],
    ["IQ2_S", wasm.encodeIq2S],
    ["IQ1_S", wasm.encodeIq1S],
    ["IQ1_M", wasm.encodeIq1M],
  ];
  const seeded = JSON.parse(Deno.readTextFileSync(new URL("seeded.json", DIR)));
  const [sv, sw] = seededInputs(seeded.seed, seeded.rows, seeded.cols);
  for (const [type, encode] of cases) {
    const [, ts, unweighted] = TYPES.find(([n]) => n === type)!;
    for (const key of ["a", "b"] as const) {
      const base = `${key}.${type.toLowerCase()}`;
      if (unweighted) await t.step(base, () => assertBlocks(type, encode(INPUT[key]), file(base)));
      await t.step(
        `${base}.imatrix`,
        () =>
          assertBlocks(type, encode(INPUT[key], undefined, WEIGHTS[key]), file(`${base}.imatrix`)),
      );
    }
    await t.step(`${type} seeded`, async () => {
      assertEquals(
        await sha256(encode(sv, undefined, sw)),
        seeded.outputs[`${type}.imatrix`].sha256,
      );
      if (unweighted) assertEquals(await sha256(encode(sv)), seeded.outputs[type].sha256);
    });
    // Rows longer than half the kernels' slice fall back to TypeScript; odd block counts fill spare lanes.
    const long = new Float32Array(40960).map((_, i) => Math.sin(i * 0.7) * (1 + (i % 97)));
    const w = new Float32Array(40960).map((_, i) => 0.5 + (i % 13) / 7);
    await t.step(`${type} long rows, odd block counts`, () => {
      assertBlocks(type, encode(long, undefined, w), ts(long, undefined, w));
      const odd = long.subarray(0, DTYPES[type as "IQ4_NL"].blockElements * 37);
      if (unweighted) assertBlocks(type, encode(odd), ts(odd));
      const w37 = w.subarray(0, 256 * 37);
      const two = long.subarray(0, 256 * 74);
      assertBlocks(type, encode(two, undefined, w37), ts(two, undefined, w37));
    });
    // Values on a coarse lattice and weights with many zeros make neighbours'
    // distances tie or nearly tie, where the grid searches' shortcut
    // (iq_grid_search.ts, filteredNeighbour) must hand over to C's sums.
    const ties = new Float32Array(256 * 24).map((_, i) => ((i * 7919) % 11 - 5) * 0.25);
    const tw = new Float32Array(256 * 24).map((_, i) => i % 3 === 0 ? 0 : 1 + (i % 5));
    await t.step(`${type} near ties`, () => {
      assertBlocks(type, encode(ties, undefined, tw), ts(ties, undefined, tw));
    });
    if (!unweighted) {
      throws(() => encode(INPUT.b), new RegExp(`Cannot encode ${type} without importance weights`));
    }
  }
});

Deno.test("the encoder workers encode i-quants with importance weights, as ggml", async () => {
  const { EncoderPool } = await import("../../src/quant/_encoder_pool.ts");
  const pool = new EncoderPool(2);
  pool.acquire();
  try {
    const got = await Promise.all([
      pool.encode("IQ2_XXS", INPUT.a.slice(), WEIGHTS.a),
      pool.encode("IQ4_XS", INPUT.b.slice()),
      pool.encode("IQ1_M", INPUT.b.slice(), WEIGHTS.b),
    ]);
    assertBlocks("IQ2_XXS", got[0]!, file("a.iq2_xxs.imatrix"));
    assertBlocks("IQ4_XS", got[1]!, file("b.iq4_xs"));
    assertBlocks("IQ1_M", got[2]!, file("b.iq1_m.imatrix"));
  } finally {
    pool.release();
    pool.close();
  }
});
