import { deepStrictEqual as assertEquals, ok, throws } from "node:assert/strict";
import { decodeQ4K, encodeQ4K } from "../../src/quant/q4_k.ts";
import { decodeQ6K, encodeQ6K } from "../../src/quant/q6_k.ts";
import { encodeQ5K } from "../../src/quant/q5_k.ts";
import { encodeQ8_0 } from "../../src/quant/q8_0.ts";
import { encodeQ5_0, encodeQ5_1 } from "../../src/quant/q5_0.ts";
import { encodeQ4_0, encodeQ4_1 } from "../../src/quant/q4_0.ts";
import { encodeAprQ4 } from "../../src/quant/apr_q4.ts";
import { encodeQ2K } from "../../src/quant/q2_k.ts";
import { encodeQ3K } from "../../src/quant/q3_k.ts";
import {
  encodeQ1_0,
  encodeQ2_0,
  encodeTq1_0,
  encodeTq2_0,
} from "../../src/quant/ternary_encoders.ts";
import { encodeMxfp4 } from "../../src/quant/mxfp4_encoder.ts";
import { encodeF16 } from "../../src/quant/f16.ts";
import { encodeBf16 } from "../../src/quant/bf16.ts";
import {
  decodeQ4_0,
  decodeQ4_1,
  decodeQ5_0,
  decodeQ5_1,
  decodeQ8_0,
} from "../../src/quant/ggml_legacy.ts";
import { decodeQ2K, decodeQ3K, decodeQ5K } from "../../src/quant/k_quants.ts";
import { aprQ8Absmax, aprQ8Scale, encodeAprQ8 } from "../../src/quant/apr_q8.ts";
import { wasmKernels } from "../../src/quant/wasm/kernels.ts";
import {
  decodeNf4Blocks,
  encodeNf4Blocks,
  nf4BlockStats,
  quantizeNf4,
} from "../../src/quant/nf4.ts";
import {
  decoderKernel,
  halfEncoder,
  type KernelBackend,
  kernelBackend,
  nf4Decoder,
  nf4Encoder,
  setKernelBackend,
} from "../../src/quant/kernels.ts";
import { BLOCK_ENCODERS, blockEncoder, encodeBlocks } from "../../src/quant/_block_encoders.ts";
import { encodeFromFloat32 } from "../../src/quant/encode.ts";
import { QuantizeStream } from "../../src/quant/quantize_stream.ts";
import type { ModelChunk } from "../../src/tensor.ts";
import { loadFixture, readGgufTensors, sha256 } from "./_gguf_fixtures.ts";
import { kernelMix } from "./_kernel_mix.ts";

const wasm = wasmKernels();

function firstDifference(a: Uint8Array, b: Uint8Array): number {
  if (a.length !== b.length) return Math.min(a.length, b.length);
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return i;
  return -1;
}

Deno.test("the WebAssembly kernels load in Deno (no silent fallback)", () => {
  ok(wasm !== undefined);
  assertEquals(kernelBackend(), "wasm");
});

// The guard of the WebAssembly kernels: the TypeScript ports reproduce
// llama-quantize (fixture hashes), and the wasm kernels must give the same
// bytes on everything, garbage included.
for (
  const [name, ts, bytesPerBlock] of [
    ["Q4_K", encodeQ4K, 144],
    ["Q5_K", encodeQ5K, 176],
    ["Q6_K", encodeQ6K, 210],
  ] as const
) {
  Deno.test(`wasm ${name} encoder gives the TypeScript kernel's bytes on 3 Mi mixed values`, () => {
    const kernel = wasm![`encode${name.replace("_", "")}` as "encodeQ4K" | "encodeQ5K"];
    // Three seeds of 1 Mi values each: ~12k super-blocks of mixed kinds.
    for (const seed of [1, 2, 3]) {
      const values = kernelMix(1 << 20, seed);
      const expected = ts(values);
      const actual = kernel(values);
      assertEquals(actual.length, (values.length / 256) * bytesPerBlock);
      const at = firstDifference(expected, actual);
      ok(
        at < 0,
        `seed ${seed}: first differing byte ${at} (super-block ${Math.floor(at / bytesPerBlock)})`,
      );
    }
  });
}

Deno.test("wasm Q2_K (with and without importance), Q3_K, TQ1_0, TQ2_0, Q1_0, Q2_0 and MXFP4 encoders give the TypeScript kernels' bytes", () => {
  const cases = [
    ["Q2_K", encodeQ2K, wasm!.encodeQ2K, 84, 256],
    ["Q3_K", encodeQ3K, wasm!.encodeQ3K, 110, 256],
    ["TQ1_0", encodeTq1_0, wasm!.encodeTq1_0, 54, 256],
    ["TQ2_0", encodeTq2_0, wasm!.encodeTq2_0, 66, 256],
    ["Q1_0", encodeQ1_0, wasm!.encodeQ1_0, 18, 128],
    ["Q2_0", encodeQ2_0, wasm!.encodeQ2_0, 18, 64],
    ["MXFP4", encodeMxfp4, wasm!.encodeMxfp4, 17, 32],
  ] as const;
  // MXFP4's exponent is floor(log2f(absmax)): absmaxes just below each power
  // of two (where log2 rounds up to the integer in f32), for every exponent.
  const edge = new Float32Array(32 * 2 * 254 * 4);
  const bits = new Uint32Array(edge.buffer);
  let at = 0;
  for (let e = 1; e < 255; e++) {
    for (const k of [1, 2, 3, 40]) {
      for (let j = 0; j < 32; j++) bits[at + j] = (e << 23) | (0x7fffff - k + 1 - j);
      at += 32;
      for (let j = 0; j < 32; j++) bits[at + j] = ((e << 23) | (0x800000 - k)) ^ (j % 2 << 31);
      at += 32;
    }
  }
  for (const [name, ts, wa, blockBytes, blockValues] of cases) {
    for (const seed of [21, 22, 23]) {
      const values = kernelMix(1 << 20, seed);
      const at = firstDifference(ts(values), wa(values));
      ok(
        at < 0,
        `${name} seed ${seed}: first differing byte ${at} (block ${Math.floor(at / blockBytes)})`,
      );
    }
    if (name === "Q2_K") {
      // With importance weights too (rows of 1024: four super-blocks each), zeros among them.
      const weights = kernelMix(1024, 25).map((v) => (Number.isFinite(v) ? Math.abs(v) : 0));
      const values = kernelMix(1 << 20, 26);
      const at = firstDifference(
        encodeQ2K(values, undefined, weights),
        wa(values, undefined, weights),
      );
      ok(at < 0, `Q2_K with weights: first differing byte ${at} (block ${Math.floor(at / 84)})`);
    }
    const edgeAt = firstDifference(ts(edge), wa(edge));
    ok(edgeAt < 0, `${name} edge: first differing byte ${edgeAt}`);
    throws(
      () => wa(new Float32Array(blockValues + 1)),
      new RegExp(`${name}: ${blockValues + 1} values`),
    );
    // More than one slice of the module's memory; `out` is filled.
    const values = kernelMix(256 * 700, 24);
    const expected = ts(values);
    const out = new Uint8Array(expected.length + 2).fill(0xaa);
    ok(wa(values, out) === out);
    assertEquals(out.subarray(0, expected.length), expected);
    assertEquals(out.subarray(expected.length), new Uint8Array([0xaa, 0xaa]));
  }
});

Deno.test("wasm Q8_0, Q5_0, Q5_1, Q4_0 and Q4_1 encoders give the TypeScript kernels' bytes", () => {
  const cases = [
    ["Q8_0", encodeQ8_0, wasm!.encodeQ8_0],
    ["Q5_0", encodeQ5_0, wasm!.encodeQ5_0],
    ["Q5_1", encodeQ5_1, wasm!.encodeQ5_1],
    ["Q4_0", encodeQ4_0, wasm!.encodeQ4_0],
    ["Q4_1", encodeQ4_1, wasm!.encodeQ4_1],
  ] as const;
  // Blocks where C's sequential scans show their order: a NaN last or first
  // (Q8_0's MAX keeps a NaN only until the next value), ±x of equal magnitude
  // (Q5_0 keeps the first), zeros of both signs as the min or max (Q5_1 keeps
  // the first), ties at the rounding halves, subnormals, ±inf.
  const edge = new Float32Array(32 * 10);
  const block = (i: number, f: (j: number) => number) => {
    for (let j = 0; j < 32; j++) edge[32 * i + j] = f(j);
  };
  block(0, (j) => (j === 31 ? NaN : j - 3));
  block(1, (j) => (j === 0 ? NaN : j === 5 ? NaN : (j * 7) % 11 - 5));
  block(2, (j) => (j === 3 ? -9 : j === 9 ? 9 : j / 4));
  block(3, (j) => (j === 2 ? 9 : j === 9 ? -9 : -j / 4));
  block(4, (j) => (j === 1 ? -0 : j === 4 ? 0 : j + 1));
  block(5, (j) => (j === 1 ? 0 : j === 4 ? -0 : -j - 1));
  block(6, (j) => (j % 2 === 0 ? -0 : 0));
  block(7, (j) => (j - 16) * 127 / 32 + 0.5);
  block(8, (j) => (j - 16) * 1e-41);
  block(9, (j) => (j === 7 ? Infinity : j === 8 ? -Infinity : j));
  for (const [name, ts, wa] of cases) {
    for (const values of [kernelMix(1 << 20, 12), edge]) {
      const at = firstDifference(ts(values), wa(values));
      ok(at < 0, `${name}: first differing byte ${at}`);
    }
    throws(() => wa(new Float32Array(33)), new RegExp(`${name}: 33 values .* 32-value blocks`));
    // 3000 blocks: more than one slice of the module's memory; `out` is filled.
    const values = kernelMix(32 * 3000, 13);
    const expected = ts(values);
    const out = new Uint8Array(expected.length + 2).fill(0xaa);
    ok(wa(values, out) === out);
    assertEquals(out.subarray(0, expected.length), expected);
    assertEquals(out.subarray(expected.length), new Uint8Array([0xaa, 0xaa]));
  }
});

Deno.test("wasm Q8_0, Q5_0, Q5_1, Q4_0 and Q4_1 encoders reproduce llama.cpp's quantize_* bytes", () => {
  const dir = new URL("../testdata/ggml_quants/", import.meta.url);
  const input = (name: string) => new Float32Array(Deno.readFileSync(new URL(name, dir)).buffer);
  for (
    const [file, encode] of [
      ["a.q8_0", wasm!.encodeQ8_0],
      ["a.q5_0", wasm!.encodeQ5_0],
      ["a.q5_1", wasm!.encodeQ5_1],
      ["a.q4_0", wasm!.encodeQ4_0],
      ["a.q4_1", wasm!.encodeQ4_1],
      ["c.q4_0", wasm!.encodeQ4_0],
      ["c.q4_1", wasm!.encodeQ4_1],
    ] as const
  ) {
    const values = input(`${file.split(".")[0]}.f32`);
    assertEquals(encode(values), Deno.readFileSync(new URL(file, dir)), file);
  }
});

Deno.test("wasm Q3_K–Q6_K with importance weights give the TypeScript kernels' bytes", () => {
  // Rows of 1024 (four super-blocks each) and of 256, zero weights among
  // them, values with every kind of block (kernelMix).
  for (
    const [name, ts, wa, blockBytes] of [
      ["Q3_K", encodeQ3K, wasm!.encodeQ3K, 110],
      ["Q4_K", encodeQ4K, wasm!.encodeQ4K, 144],
      ["Q5_K", encodeQ5K, wasm!.encodeQ5K, 176],
      ["Q6_K", encodeQ6K, wasm!.encodeQ6K, 210],
    ] as const
  ) {
    for (const cols of [1024, 256]) {
      const weights = kernelMix(cols, 27).map((v) => (Number.isFinite(v) ? Math.abs(v) : 0));
      for (const seed of [28, 29]) {
        const values = kernelMix(1 << 18, seed);
        const expected = ts(values, undefined, weights);
        const at = firstDifference(expected, wa(values, undefined, weights));
        ok(
          at < 0,
          `${name} cols ${cols} seed ${seed}: first differing byte ${at} (block ${
            at / blockBytes | 0
          })`,
        );
        ok(firstDifference(expected, ts(values)) >= 0, `${name}: the weights must be used`);
      }
    }
  }
});

Deno.test("with importance weights the wasm backend gives the TypeScript encoders' bytes", () => {
  const values = kernelMix(256 * 4, 11);
  const importance = new Float32Array(256).map((_, i) => 1 + (i % 7));
  for (
    const [target, ts] of [
      ["Q3_K", encodeQ3K],
      ["Q4_K", encodeQ4K],
      ["Q5_K", encodeQ5K],
      ["Q6_K", encodeQ6K],
    ] as const
  ) {
    const weighted = blockEncoder(target, "wasm")(values, undefined, importance);
    assertEquals(weighted, ts(values, undefined, importance));
    ok(firstDifference(weighted, ts(values)) >= 0, "the weights must be used");
  }
});

Deno.test("wasm encoders treat NaN bit patterns as the TypeScript kernels do", () => {
  // Canonical NaNs of both signs, mixed into everything (levels read NaN's
  // mantissa through nearest_int, so their bits matter).
  const bits = new Uint32Array(256 * 64);
  const f = new Float32Array(bits.buffer);
  f.set(kernelMix(bits.length, 9));
  for (let i = 0; i < bits.length; i += 7) bits[i] = i % 2 === 0 ? 0x7fc00000 : 0xffc00000;
  assertEquals(firstDifference(encodeQ4K(f), wasm!.encodeQ4K(f)), -1);
  assertEquals(firstDifference(encodeQ5K(f), wasm!.encodeQ5K(f)), -1);
  assertEquals(firstDifference(encodeQ6K(f), wasm!.encodeQ6K(f)), -1);
  // One payload per super-block of ordinary values: propagated like C on x86.
  // (Two different NaNs meeting in one operation give an operand-order
  // dependent payload, in C as well: not a defined result, not tested.)
  const payloads = [0x7fc00001, 0x7fa00000, 0xffffffff, 0x7f800001, 0xffc12345];
  const g = new Float32Array(256 * payloads.length).map((_, i) => Math.sin(i) * 0.1);
  const gBits = new Uint32Array(g.buffer);
  for (let i = 0; i < gBits.length; i += 7) gBits[i] = payloads[Math.floor(i / 256)]!;
  assertEquals(firstDifference(encodeQ4K(g), wasm!.encodeQ4K(g)), -1);
  assertEquals(firstDifference(encodeQ5K(g), wasm!.encodeQ5K(g)), -1);
  assertEquals(firstDifference(encodeQ6K(g), wasm!.encodeQ6K(g)), -1);
});

Deno.test("wasm APR_Q8 absmax and encoder match the TypeScript kernels", () => {
  // An odd length: the SIMD loops' scalar tails run too.
  const values = kernelMix(1 << 20, 7).subarray(0, (1 << 20) - 13);
  const absmax = aprQ8Absmax(values);
  assertEquals(wasm!.aprQ8Absmax(values), absmax);
  assertEquals(
    wasm!.aprQ8Absmax(values.subarray(0, 999), 1e30),
    aprQ8Absmax(values.subarray(0, 999), 1e30),
  );
  assertEquals(wasm!.aprQ8Absmax(new Float32Array([NaN, -0, NaN])), 0);
  for (const scale of [aprQ8Scale(absmax), aprQ8Scale(1), 1e-3, 1e-30, 3e38]) {
    const at = firstDifference(encodeAprQ8(values, scale), wasm!.encodeAprQ8(values, scale));
    ok(at < 0, `scale ${scale}: first differing byte ${at}`);
  }
  // Halves away from zero, values just below a half (0.5 - 2^-25 would round
  // up if 0.5 were added in f32), the clamp edge, NaN and ±infinity.
  const edge = new Float32Array([
    0.5,
    -0.5,
    1.5,
    -2.5,
    0.49999997,
    -0.49999997,
    126.5,
    -126.49999,
    127.5,
    NaN,
    Infinity,
    -Infinity,
    -0,
    1e-45,
    2 ** 31,
    -(2 ** 40),
  ]);
  assertEquals(wasm!.encodeAprQ8(edge, 1), encodeAprQ8(edge, 1));
  const out = new Uint8Array(edge.length + 3).fill(7);
  ok(wasm!.encodeAprQ8(edge, 1, out) === out);
  assertEquals(out.subarray(edge.length), new Uint8Array([7, 7, 7]));
});

Deno.test("wasm APR_Q4 encoder matches the TypeScript kernel, partial last block included", () => {
  const values = kernelMix(1 << 20, 8);
  for (const n of [values.length, values.length - 1, 1000, 31, 0]) {
    const v = values.subarray(0, n);
    const at = firstDifference(encodeAprQ4(v), wasm!.encodeAprQ4(v));
    ok(at < 0, `${n} values: first differing byte ${at}`);
  }
  // Ties at ±k.5 scale units, just below a half, NaN, ±infinity in one block.
  const edge = new Float32Array(64).map((_, i) => (i - 16) / 2);
  edge.set([0.49999997, -0.49999997, NaN, Infinity, -Infinity, -0, 3.5, -3.5], 40);
  assertEquals(wasm!.encodeAprQ4(edge), encodeAprQ4(edge));
});

/** Same f32 bit patterns (NaNs included). */
function sameFloats(a: Float32Array, b: Float32Array): number {
  return firstDifference(
    new Uint8Array(a.buffer, a.byteOffset, a.byteLength),
    new Uint8Array(b.buffer, b.byteOffset, b.byteLength),
  );
}

Deno.test("wasm Q4_K, Q6_K, Q8_0 and Q4_0 decoders give the TypeScript decoders' values", () => {
  // Real blocks, and random bytes (f16 scales that are NaN, infinite, subnormal).
  const values = kernelMix(1 << 18, 10);
  const random = new Uint8Array(210 * 144 * 20 + 7);
  let s = 99;
  for (let i = 0; i < random.length; i++) random[i] = (s = (s * 1103515245 + 12345) >>> 0) >>> 24;
  for (
    const [ts, wa, bytes] of [
      [decodeQ4K, wasm!.decodeQ4K, encodeQ4K(values)],
      [decodeQ6K, wasm!.decodeQ6K, encodeQ6K(values)],
      [decodeQ4K, wasm!.decodeQ4K, random],
      [decodeQ6K, wasm!.decodeQ6K, random],
      [decodeQ4K, wasm!.decodeQ4K, random.subarray(3)],
    ] as const
  ) {
    assertEquals(sameFloats(ts(bytes), wa(bytes)), -1);
  }
  // `out` bounds what is written, as with the TypeScript decoders.
  const out = new Float32Array(256 * 3 + 5).fill(7);
  wasm!.decodeQ6K(random, out);
  assertEquals(sameFloats(out.subarray(0, 768), decodeQ6K(random.subarray(0, 630))), -1);
  assertEquals([...out.subarray(768)], [7, 7, 7, 7, 7]);
});

/**
 * A copy of Q4_1/Q5_1 blocks (f16 d, f16 m first) where d and m are never both
 * NaN: `q·d + m` would then add two NaNs, whose payload depends on the
 * operand order the compiler picks (V8 and C alike): not a defined result.
 */
function noNaNPairs(bytes: Uint8Array, blockBytes: number): Uint8Array {
  const out = bytes.slice();
  const isNaN16 = (o: number) =>
    (out[o + 1]! & 0x7c) === 0x7c && ((out[o + 1]! & 3) | out[o]!) !== 0;
  for (let o = 0; o + blockBytes <= out.length; o += blockBytes) {
    if (isNaN16(o) && isNaN16(o + 2)) out[o + 3] = 0x3c; // m = ±1
  }
  return out;
}

Deno.test("wasm Q4_1, Q5_0, Q5_1, Q2_K, Q3_K and Q5_K decoders give the TypeScript decoders' values", () => {
  // Random bytes (f16 scales that are NaN, infinite, subnormal; every bit
  // pattern of quants and packed scales), at an odd offset with a partial
  // last block, and real blocks where aprkit has the encoder.
  const values = kernelMix(1 << 18, 14);
  const random = new Uint8Array(110 * 176 * 24 + 13);
  let s = 7;
  for (let i = 0; i < random.length; i++) random[i] = (s = (s * 1103515245 + 12345) >>> 0) >>> 24;
  const cases = [
    ["Q4_1", decodeQ4_1, wasm!.decodeQ4_1, undefined],
    ["Q5_0", decodeQ5_0, wasm!.decodeQ5_0, encodeQ5_0(values)],
    ["Q5_1", decodeQ5_1, wasm!.decodeQ5_1, encodeQ5_1(values)],
    ["Q2_K", decodeQ2K, wasm!.decodeQ2K, undefined],
    ["Q3_K", decodeQ3K, wasm!.decodeQ3K, undefined],
    ["Q5_K", decodeQ5K, wasm!.decodeQ5K, encodeQ5K(values)],
  ] as const;
  const blockSize = { Q4_1: 20, Q5_1: 24 } as Record<string, number>;
  for (const [name, ts, wa, real] of cases) {
    const inputs = [random, random.subarray(3), real ?? random.subarray(1)];
    const additive = name === "Q4_1" || name === "Q5_1";
    for (const bytes of additive ? inputs.map((b) => noNaNPairs(b, blockSize[name]!)) : inputs) {
      const expected = ts(bytes);
      ok(expected.length > 0);
      assertEquals(sameFloats(expected, wa(bytes)), -1, name);
    }
    ok(sameFloats(ts(random), ts(random.subarray(1))) >= 0, "the offsets give other blocks");
  }
  // Q5_K round trip through both wasm kernels (the encoder's levels come back).
  const q5 = wasm!.encodeQ5K(values);
  assertEquals(sameFloats(wasm!.decodeQ5K(q5), decodeQ5K(encodeQ5K(values))), -1);
});

Deno.test("wasm NF4 decoder gives the TypeScript decoder's values", () => {
  // Block sizes below, at and above 32 values and not multiples of 32 (the
  // scalar tail), one larger than the module's slice (the TypeScript path),
  // with and without zero points; then random codes with extreme scales.
  const values = kernelMix(6 * 34 * 1024, 15).map((v) => (Number.isFinite(v) ? v : 0));
  const decode = (
    q: { codes: Uint8Array; scales: Float32Array; zeros: Float32Array | undefined },
    size: number,
    kernel: typeof decodeNf4Blocks,
  ) => {
    const out = new Float32Array(q.scales.length * size);
    kernel(q.codes, q.scales, q.zeros, size, out);
    return out;
  };
  for (const blockSize of [2, 6, 34, 64, 4096, values.length]) {
    for (const zeroPoint of [false, true]) {
      const q = quantizeNf4(values, { blockSize, zeroPoint });
      const expected = decode(q, blockSize, decodeNf4Blocks);
      ok(expected.some((v) => v !== 0));
      const at = sameFloats(expected, decode(q, blockSize, wasm!.decodeNf4Blocks));
      ok(at < 0, `block size ${blockSize}, zero points ${zeroPoint}: first differing byte ${at}`);
    }
  }
  const codes = new Uint8Array(32 * 700).map((_, i) => (i * 2654435761) >>> 24);
  const scales = new Float32Array(700).map((_, i) => [1e-45, 3e38, 0, 1, 1e-3][i % 5]!);
  const zeros = new Float32Array(700).map((_, i) => [0, -0, 1e30, -3e38, 0.5][i % 7 % 5]!);
  const q = { codes, scales, zeros };
  assertEquals(
    sameFloats(decode(q, 64, decodeNf4Blocks), decode(q, 64, wasm!.decodeNf4Blocks)),
    -1,
  );
});

Deno.test("wasm encoders reproduce llama-quantize's bytes on the GGUF fixtures", async (t) => {
  const f32 = readGgufTensors("tiny-llama-f32.gguf");
  const cases = [["tiny-llama-q4_k_m", "Q4_K"], ["tiny-llama-q4_k_m", "Q6_K"], [
    "tiny-llama-q6_k",
    "Q6_K",
  ]] as const;
  for (const [stem, type] of cases) {
    const { manifest } = loadFixture(stem);
    for (const m of manifest.tensors.filter((x) => x.type === type)) {
      await t.step(`${stem} ${m.name}`, () => {
        const src = f32.tensors.find((x) => x.name === m.name)!;
        const n = m.ne.reduce((a, b) => a * b, 1);
        const values = new Float32Array(f32.bytes.slice(src.offset, src.offset + 4 * n).buffer);
        const bytes = type === "Q4_K" ? wasm!.encodeQ4K(values) : wasm!.encodeQ6K(values);
        assertEquals(sha256(bytes), m.raw_sha256);
      });
    }
  }
});

Deno.test("wasm Q5_K encoder reproduces llama.cpp's quantize_q5_K bytes", () => {
  // The vectors of llama_encoders_test.ts (made by llama.cpp c392e50's ggml-quants.c).
  const dir = new URL("../testdata/ggml_quants/", import.meta.url);
  const values = new Float32Array(Deno.readFileSync(new URL("b.f32", dir)).buffer);
  assertEquals(wasm!.encodeQ5K(values), Deno.readFileSync(new URL("b.q5_k", dir)));
});

Deno.test("wasm encoders: partial blocks are refused, `out` is filled, slices join up", () => {
  throws(() => wasm!.encodeQ4K(new Float32Array(300)), /300 values are not a whole number/);
  throws(() => wasm!.encodeQ6K(new Float32Array(100)), /100 values are not a whole number/);
  throws(() => wasm!.encodeQ5K(new Float32Array(257)), /Q5_K: 257 values are not a whole/);
  // 65 super-blocks: more than one slice of the module's memory.
  const values = kernelMix(256 * 65, 4);
  const out = new Uint8Array(65 * 144 + 10).fill(0xaa);
  ok(wasm!.encodeQ4K(values, out) === out);
  assertEquals(out.subarray(0, 65 * 144), encodeQ4K(values));
  assertEquals(out.subarray(65 * 144), new Uint8Array(10).fill(0xaa));
  const out5 = new Uint8Array(65 * 176 + 3).fill(0xaa);
  ok(wasm!.encodeQ5K(values, out5) === out5);
  assertEquals(out5.subarray(0, 65 * 176), encodeQ5K(values));
  assertEquals(out5.subarray(65 * 176), new Uint8Array(3).fill(0xaa));
  assertEquals(wasm!.encodeQ6K(new Float32Array(0)).length, 0);
});

Deno.test("setKernelBackend() selects the kernels; both give the same bytes", async () => {
  const values = kernelMix(256 * 40, 5);
  const shape = [40, 256];
  const results: Record<string, Uint8Array[]> = {};
  try {
    for (const backend of ["typescript", "wasm"] as KernelBackend[]) {
      setKernelBackend(backend);
      assertEquals(kernelBackend(), backend);
      for (
        const target of [
          "Q4_K",
          "Q5_K",
          "Q6_K",
          "APR_Q4",
          "Q8_0",
          "Q5_0",
          "Q5_1",
          "Q4_0",
          "Q4_1",
        ] as const
      ) {
        ok((blockEncoder(target) === BLOCK_ENCODERS[target]) === (backend === "typescript"));
      }
      ok((decoderKernel("Q4_K") === decodeQ4K) === (backend === "typescript"));
      ok((decoderKernel("Q6_K") === decodeQ6K) === (backend === "typescript"));
      ok((decoderKernel("Q8_0") === decodeQ8_0) === (backend === "typescript"));
      ok((decoderKernel("Q4_0") === decodeQ4_0) === (backend === "typescript"));
      ok((nf4Decoder() === decodeNf4Blocks) === (backend === "typescript"));
      for (
        const [dtype, ts] of [
          ["Q4_1", decodeQ4_1],
          ["Q5_0", decodeQ5_0],
          ["Q5_1", decodeQ5_1],
          ["Q2_K", decodeQ2K],
          ["Q3_K", decodeQ3K],
          ["Q5_K", decodeQ5K],
        ] as const
      ) {
        ok((decoderKernel(dtype) === ts) === (backend === "typescript"), dtype);
      }
      results[backend] = [
        encodeFromFloat32("Q4_K", values, shape),
        encodeFromFloat32("Q6_K", values, shape),
        encodeFromFloat32("Q5_K", values, shape),
        encodeFromFloat32("Q8_0", values, shape),
        encodeFromFloat32("Q5_0", values, shape),
        encodeFromFloat32("Q5_1", values, shape),
        encodeFromFloat32("APR_Q8", values, shape),
        encodeFromFloat32("APR_Q4", values, shape),
        await quantizeInWorkers(values, shape, "q4_k"),
        await quantizeInWorkers(values, shape, "q6_k"),
      ];
    }
  } finally {
    setKernelBackend("wasm");
  }
  assertEquals(results.wasm, results.typescript);
  assertEquals(results.wasm![0], encodeQ4K(values));
  assertEquals(results.wasm![2], encodeQ5K(values));
  assertEquals(results.wasm![3], encodeQ8_0(values));
  assertEquals(results.wasm![8], encodeQ4K(values));
  assertEquals(results.wasm![9], encodeQ6K(values));
  throws(() => setKernelBackend("c" as KernelBackend), /Unknown kernel backend "c"/);
  throws(() => encodeBlocks("NVFP4", values), /Cannot encode NVFP4 in blocks/);
});

async function quantizeInWorkers(
  values: Float32Array,
  shape: number[],
  to: "q4_k" | "q6_k",
): Promise<Uint8Array> {
  const info = { name: "w", dtype: "F32" as const, shape, byteLength: 4 * values.length };
  const input = ReadableStream.from<ModelChunk>([
    { type: "header", header: { format: "test", metadata: {}, tensors: [info] } },
    {
      type: "tensor",
      tensor: { info, open: () => ReadableStream.from([new Uint8Array(values.slice().buffer)]) },
    },
  ]);
  const parts: Uint8Array<ArrayBuffer>[] = [];
  for await (const chunk of input.pipeThrough(new QuantizeStream({ to, workers: 2 }))) {
    if (chunk.type === "tensor") {
      for await (const b of chunk.tensor.open()) parts.push(b.slice());
    }
  }
  return new Uint8Array(await new Blob(parts).arrayBuffer());
}

Deno.test("without WebAssembly the TypeScript kernels run, with the same bytes", async () => {
  const child = await new Deno.Command(Deno.execPath(), {
    args: ["run", "-A", new URL("./_no_wasm_child.ts", import.meta.url).pathname],
    stdout: "piped",
    stderr: "piped",
  }).output();
  const text = new TextDecoder();
  assertEquals(child.code, 0, text.decode(child.stderr));
  const [backend, q4, q6] = text.decode(child.stdout).trim().split(" ");
  assertEquals(backend, "typescript");
  const values = kernelMix(256 * 8, 6);
  assertEquals(q4, sha256(encodeQ4K(values)));
  assertEquals(q6, sha256(encodeQ6K(values)));
});

/**
 * f32 bit patterns where f16/bf16 rounding can go wrong: every sign and
 * exponent (zeros, subnormals, normals, ±inf, NaN payloads) times mantissas
 * just below, at and above each possible tie (any number of dropped bits,
 * kept bit odd or even), plus a stride over all 2^32 patterns.
 */
function halfEdgeBits(): Uint32Array {
  const mantissas = new Set<number>([0, 0x7fffff, 0x400000, 0x3fffff, 1]);
  for (let p = 0; p < 23; p++) {
    for (const m of [1 << p, (1 << p) - 1, (1 << p) + 1]) {
      mantissas.add(m & 0x7fffff);
      mantissas.add((m | (2 << p)) & 0x7fffff); // the kept bit above the tie odd
    }
  }
  const out: number[] = [];
  for (let sign = 0; sign < 2; sign++) {
    for (let e = 0; e < 256; e++) {
      for (const m of mantissas) out.push(((sign << 31) | (e << 23) | m) >>> 0);
    }
  }
  for (let x = 0; x < 2 ** 32; x += 40_009) out.push(x);
  return new Uint32Array(out);
}

Deno.test("wasm F16 and BF16 encoders give the TypeScript kernels' bytes on every edge", () => {
  const bits = halfEdgeBits();
  const values = new Float32Array(bits.buffer);
  ok(values.length > 100_000); // several 32 Ki-value slices (n - 3 below leaves a tail of < 8)
  for (
    const [name, ts, kernel] of [
      ["F16", encodeF16, wasm!.encodeF16],
      ["BF16", encodeBf16, wasm!.encodeBf16],
    ] as const
  ) {
    for (const n of [values.length, values.length - 3, 7, 0]) {
      const v = values.subarray(0, n);
      assertEquals(firstDifference(kernel(v), ts(v)), -1, `${name}, ${n} values`);
    }
    // `out` at an odd byte offset is filled in place; a short `out` is refused.
    const out = new Uint8Array(2 * 1001 + 1);
    kernel(values.subarray(0, 1001), out.subarray(1));
    assertEquals(out.subarray(1), ts(values.subarray(0, 1001)));
    throws(() => kernel(values.subarray(0, 10), new Uint8Array(19)), RangeError);
    // The pipeline's choice follows the backend.
    assertEquals(halfEncoder(name, "wasm"), kernel);
    assertEquals(halfEncoder(name, "typescript"), ts);
  }
});

Deno.test("wasm NF4 encoder gives the TypeScript kernel's codes (scales, zero points, garbage)", () => {
  for (const blockSize of [2, 18, 64, 4096, 1 << 17]) {
    for (const zeroPoint of [false, true]) {
      const blocks = Math.max(2, Math.floor((1 << 18) / blockSize));
      const values = kernelMix(blocks * blockSize, blockSize + (zeroPoint ? 1 : 0));
      const scales = new Float32Array(blocks);
      const zeros = zeroPoint ? new Float32Array(blocks) : undefined;
      for (let b = 0; b < blocks; b++) {
        const s = nf4BlockStats(values.subarray(b * blockSize, (b + 1) * blockSize), zeroPoint);
        // Scale 0, a negative and a NaN scale take the all-level-0 path.
        scales[b] = b % 5 === 1 ? [0, -1, NaN][b % 3]! : s.scale;
        if (zeros) zeros[b] = s.zero;
      }
      const ts = new Uint8Array((blocks * blockSize) / 2);
      const w = new Uint8Array(ts.length);
      encodeNf4Blocks(values, scales, zeros, blockSize, ts);
      wasm!.encodeNf4Blocks(values, scales, zeros, blockSize, w);
      assertEquals(firstDifference(w, ts), -1, `block size ${blockSize}, zero points ${zeroPoint}`);
    }
  }
  assertEquals(nf4Encoder("wasm"), wasm!.encodeNf4Blocks);
  assertEquals(nf4Encoder("typescript"), encodeNf4Blocks);
});
