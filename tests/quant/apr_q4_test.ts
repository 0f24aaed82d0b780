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

Deno.test("encodeAprQ4() equals a plain reading of APR_V2.md §5 on random blocks", () => {
  const v = new Float32Array(32 * 50 + 7).map(() => (Math.random() - 0.5) * 3);
  v.set([NaN, 0.5, -0.5, 7.5], 40);
  const got = encodeAprQ4(v);
  for (let b = 0; b * 32 < v.length; b++) {
    const block = v.subarray(b * 32, Math.min(v.length, b * 32 + 32));
    let absmax = 0;
    for (const x of block) if (Math.abs(x) > absmax) absmax = Math.abs(x);
    const s = absmax === 0 ? 1 : Math.fround(absmax / 7);
    for (let i = 0; i < 32; i++) {
      const x = i < block.length ? block[i]! : 0;
      const r = Math.fround(x / s);
      const q = Number.isNaN(r)
        ? 0
        : Math.max(-8, Math.min(7, Math.sign(r) * Math.round(Math.abs(r))));
      const byte = got[b * 18 + 2 + (i >> 1)]!;
      assertEquals((i & 1 ? byte >> 4 : byte & 15) - 8, q === 0 ? 0 : q, `block ${b} index ${i}`);
    }
  }
});
