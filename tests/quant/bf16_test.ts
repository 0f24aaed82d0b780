import { deepStrictEqual as assertEquals } from "node:assert/strict";
import { bf16ToF32, decodeBf16, encodeBf16, f32BitsToBf16Bits } from "../../src/quant/bf16.ts";

Deno.test("f32BitsToBf16Bits() rounds to nearest even and keeps NaN quiet", async (t) => {
  const rows: [string, number, number][] = [
    ["one", 0x3f800000, 0x3f80],
    ["minus zero", 0x80000000, 0x8000],
    ["tie rounds down to even", 0x3f808000, 0x3f80],
    ["tie rounds up to even", 0x3f818000, 0x3f82],
    ["above a tie rounds up", 0x3f808001, 0x3f81],
    ["max finite f32 rounds to infinity", 0x7f7fffff, 0x7f80],
    ["largest value that stays finite", 0x7f7f7fff, 0x7f7f],
    ["infinity", 0x7f800000, 0x7f80],
    ["minus infinity", 0xff800000, 0xff80],
    ["signalling NaN becomes quiet", 0x7f800001, 0x7fc0],
    ["NaN keeps payload bits", 0x7fa10000, 0x7fe1],
    ["negative quiet NaN", 0xffc00000, 0xffc0],
    ["subnormal tie to even", 0x00018000, 0x0002],
    ["smallest subnormal truncates to zero", 0x00000001, 0x0000],
  ];
  for (const [name, x, want] of rows) {
    await t.step(name, () => assertEquals(f32BitsToBf16Bits(x), want));
  }
});

Deno.test("encodeBf16() and decodeBf16() agree with the scalar kernel at any offset", () => {
  const n = 4096;
  const v = new Float32Array(n);
  const bits = new Uint32Array(v.buffer);
  for (let i = 0; i < n; i++) bits[i] = (Math.random() * 2 ** 32) >>> 0;
  const aligned = encodeBf16(v);
  const buf = new Uint8Array(aligned.length + 1);
  encodeBf16(v, buf.subarray(1));
  assertEquals(buf.subarray(1), aligned);
  for (let i = 0; i < n; i++) {
    assertEquals(aligned[2 * i]! | (aligned[2 * i + 1]! << 8), f32BitsToBf16Bits(bits[i]!));
  }
  const back = decodeBf16(buf.subarray(1));
  const backBits = new Uint32Array(back.buffer);
  for (let i = 0; i < n; i++) {
    assertEquals(backBits[i], (f32BitsToBf16Bits(bits[i]!) << 16) >>> 0);
  }
  assertEquals(bf16ToF32(0x3f80), 1);
  assertEquals(Object.is(bf16ToF32(0x8000), -0), true);
});
