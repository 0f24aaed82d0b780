import { deepStrictEqual as assertEquals } from "node:assert/strict";
import {
  aprQ8Absmax,
  aprQ8Scale,
  decodeAprQ8,
  encodeAprQ8,
  encodeAprQ8Tensor,
} from "../../src/quant/apr_q8.ts";

Deno.test("encodeAprQ8Tensor() writes the golden payload, ties away from zero", () => {
  const v = new Float32Array([1, -2.5, 0.5, 127, -0.5, 2.5, -127, 0]);
  assertEquals(
    [...encodeAprQ8Tensor(v)],
    [0x00, 0x00, 0x80, 0x3f, 1, 0xfd, 1, 127, 0xff, 3, 0x81, 0],
  );
});

Deno.test("aprQ8Scale() is absmax / 127 in f32, or 1 for zeros", () => {
  assertEquals(aprQ8Scale(0), 1);
  assertEquals(aprQ8Scale(254), 2);
  assertEquals(aprQ8Scale(1), Math.fround(1 / 127));
  assertEquals(aprQ8Absmax(new Float32Array([-3, NaN, 2])), 3);
  assertEquals(aprQ8Absmax(new Float32Array([1]), 5), 5);
});

Deno.test("encodeAprQ8() clamps, maps NaN to 0, and decodes back", () => {
  const scale = aprQ8Scale(254);
  const q = encodeAprQ8(new Float32Array([254, 1, -3, 1000, -1000, NaN]), scale);
  assertEquals([...q], [127, 1, 0xfe, 127, 0x81, 0]);
  assertEquals([...decodeAprQ8(q, scale)], [254, 2, -4, 254, -254, 0]);
  assertEquals(encodeAprQ8Tensor(new Float32Array(0)).length, 0);
  assertEquals([...encodeAprQ8Tensor(new Float32Array([0, 0]))], [0, 0, 0x80, 0x3f, 0, 0]);
});

Deno.test("encodeAprQ8() equals a plain reading of APR_V2.md §5 on random and special values", () => {
  const v = new Float32Array(5000).map(() => (Math.random() - 0.5) * 10);
  v.set([NaN, Infinity, -Infinity, 0.5, -0.5, 1.5, -1.5, 2.5], 0);
  const scale = Math.fround(3 / 127);
  const got = encodeAprQ8(v, scale);
  for (let i = 0; i < v.length; i++) {
    const r = Math.fround(v[i]! / scale);
    let q = Number.isNaN(r) ? 0 : Math.sign(r) * Math.round(Math.abs(r));
    q = Math.max(-127, Math.min(127, q));
    assertEquals((got[i]! << 24) >> 24, q === 0 ? 0 : q, `index ${i}`);
  }
});
