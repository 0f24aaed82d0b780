import { deepStrictEqual as assertEquals } from "node:assert/strict";
import { decodeF16, encodeF16, f16ToF32, f32BitsToF16Bits, f32ToF16 } from "../../src/quant/f16.ts";

function bitsOf(x: number): number {
  const f = new Float32Array([x]);
  return new Uint32Array(f.buffer)[0]!;
}

Deno.test("f32BitsToF16Bits() rounds edge cases as IEEE binary16 does", async (t) => {
  const rows: [string, number, number][] = [
    ["one", bitsOf(1), 0x3c00],
    ["minus zero", 0x80000000, 0x8000],
    ["max finite 65504", bitsOf(65504), 0x7bff],
    ["just below the overflow tie", bitsOf(65519.996), 0x7bff],
    ["overflow tie 65520 goes to infinity", bitsOf(65520), 0x7c00],
    ["large value overflows", bitsOf(1e6), 0x7c00],
    ["negative overflow", bitsOf(-1e6), 0xfc00],
    ["infinity", 0x7f800000, 0x7c00],
    ["minus infinity", 0xff800000, 0xfc00],
    ["quiet NaN", 0x7fc00000, 0x7e00],
    ["signalling NaN becomes quiet", 0x7f800001, 0x7e00],
    ["NaN keeps top payload bits", 0x7fa00000, 0x7f00],
    ["negative NaN keeps its sign", 0xffc00000, 0xfe00],
    ["tie rounds down to even", bitsOf(1 + 2 ** -11), 0x3c00],
    ["tie rounds up to even", bitsOf(1 + 3 * 2 ** -11), 0x3c02],
    ["above a tie rounds up", bitsOf(1 + 2 ** -11 + 2 ** -20), 0x3c01],
    ["smallest subnormal 2^-24", bitsOf(2 ** -24), 0x0001],
    ["2^-25 is a tie to zero", bitsOf(2 ** -25), 0x0000],
    ["just above 2^-25 rounds to the smallest subnormal", bitsOf(2 ** -25 * 1.0000001), 0x0001],
    ["subnormal tie 3*2^-25 rounds to even", bitsOf(3 * 2 ** -25), 0x0002],
    ["largest subnormal", bitsOf(1023 * 2 ** -24), 0x03ff],
    ["smallest normal", bitsOf(2 ** -14), 0x0400],
    ["below the largest subnormal rounds up to normal", bitsOf(1023.5 * 2 ** -24), 0x0400],
    ["negative subnormal", bitsOf(-(2 ** -24)), 0x8001],
    ["tiny f32 subnormal", 0x00000001, 0x0000],
  ];
  for (const [name, x, want] of rows) {
    await t.step(name, () => assertEquals(f32BitsToF16Bits(x), want));
  }
});

Deno.test("f32ToF16() and f16ToF32() round-trip every finite f16", () => {
  for (let h = 0; h < 65536; h++) {
    if ((h & 0x7c00) === 0x7c00 && (h & 0x3ff) !== 0) continue;
    assertEquals(f32ToF16(f16ToF32(h)), h);
  }
  assertEquals(f16ToF32(0x7bff), 65504);
  assertEquals(f16ToF32(0x0001), 2 ** -24);
  assertEquals(Object.is(f16ToF32(0x8000), -0), true);
  assertEquals(Number.isNaN(f16ToF32(0x7e00)), true);
});

Deno.test("encodeF16() and decodeF16() work at unaligned byte offsets", () => {
  const values = new Float32Array([1, -2, 65504, 1e6, NaN, 2 ** -24, -0, 0.1]);
  const aligned = encodeF16(values);
  const buf = new Uint8Array(1 + aligned.length);
  encodeF16(values, buf.subarray(1));
  assertEquals(buf.subarray(1), aligned);
  assertEquals([...aligned.subarray(0, 4)], [0x00, 0x3c, 0x00, 0xc0]);
  assertEquals([...aligned.subarray(8, 10)], [0x00, 0x7e]);
  const back = decodeF16(buf.subarray(1));
  assertEquals(back, decodeF16(aligned));
  assertEquals([...back.subarray(0, 4)], [1, -2, 65504, Infinity]);
  assertEquals(back[7], Math.fround(0.0999755859375));
});

Deno.test("encodeF16() matches the scalar kernel on random values, NaNs included", () => {
  const n = 10000;
  const v = new Float32Array(n);
  const bits = new Uint32Array(v.buffer);
  for (let i = 0; i < n; i++) bits[i] = (Math.random() * 2 ** 32) >>> 0;
  const out = encodeF16(v);
  for (let i = 0; i < n; i++) {
    assertEquals(out[2 * i]! | (out[2 * i + 1]! << 8), f32BitsToF16Bits(bits[i]!), `index ${i}`);
  }
});
