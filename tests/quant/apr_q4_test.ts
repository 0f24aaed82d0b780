import { deepStrictEqual as assertEquals } from "node:assert/strict";
import { decodeAprQ4, encodeAprQ4 } from "../../src/quant/apr_q4.ts";

Deno.test("encodeAprQ4() writes golden blocks with ties away from zero and a partial last block", () => {
  const v = new Float32Array(33);
  v.set([7, 3.5, -7, -3.5, 0.5, -0.5, 2.5, 8]);
  v[32] = 14;
  // Block 0: absmax 8 → s = 8/7 (f32); block 1: absmax 14 → s = 2.
  const out = encodeAprQ4(v);
  assertEquals(out.length, 36);
  const s0 = Math.fround(8 / 7);
  const q = (x: number) => {
    const r = Math.fround(x / s0);
    return Math.min(7, Math.max(-8, r < 0 ? -Math.round(-r) : Math.round(r))) + 8;
  };
  assertEquals([out[0], out[1]], [0x92, 0x3c]); // f16(8/7) = 0x3c92
  assertEquals(out[2], q(7) | (q(3.5) << 4));
  assertEquals(out[3], q(-7) | (q(-3.5) << 4));
  assertEquals(out[4], q(0.5) | (q(-0.5) << 4));
  assertEquals(out[5], q(2.5) | (7 + 8) << 4);
  assertEquals([...out.subarray(6, 18)], new Array(12).fill(0x88));
  assertEquals([...out.subarray(18, 21)], [0x00, 0x40, 0x0f | 0x80]);
  assertEquals([...out.subarray(21, 36)], new Array(15).fill(0x88));
});

Deno.test("encodeAprQ4() rounds an exact tie 2.5 away from zero", () => {
  // absmax 7 → s = 1, so 2.5 → 3 and -2.5 → -3.
  const v = new Float32Array(32);
  v.set([7, 2.5, -2.5, 0]);
  const out = encodeAprQ4(v);
  assertEquals([...out.subarray(0, 4)], [0x00, 0x3c, 15 | (11 << 4), 5 | (8 << 4)]);
  const back = decodeAprQ4(out);
  assertEquals([...back.subarray(0, 4)], [7, 3, -3, 0]);
});

Deno.test("encodeAprQ4() stores scale 1 for an all-zero block", () => {
  const out = encodeAprQ4(new Float32Array(5));
  assertEquals([...out], [0x00, 0x3c, ...new Array(16).fill(0x88)]);
});
