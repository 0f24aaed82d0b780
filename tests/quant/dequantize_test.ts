import { deepStrictEqual as assertEquals } from "node:assert/strict";
import {
  decodeQ4_0,
  decodeQ4_1,
  decodeQ5_0,
  decodeQ5_1,
  decodeQ8_0,
} from "../../src/quant/ggml_legacy.ts";
import { decodeQ2K, decodeQ3K, decodeQ5K, decodeQ8K } from "../../src/quant/k_quants.ts";
import { decodeQ4K } from "../../src/quant/q4_k.ts";
import { decodeQ6K } from "../../src/quant/q6_k.ts";
import { decodeF8E4M3, decodeF8E5M2, decodeF8E8M0 } from "../../src/quant/float8.ts";
import { decodeF4, decodeF6E2M3, decodeF6E3M2 } from "../../src/quant/float6_4.ts";
import { f16ToF32 } from "../../src/quant/f16.ts";

// Per-element definitions written from ggml's block structs (ggml-common.h) and
// the packing loops of llama.cpp's reference quantizers — a second derivation,
// independent of the decoders' loop structure, checked on random blocks.

const h = (b: Uint8Array, o: number) => f16ToF32(b[o]! | (b[o + 1]! << 8));

function randomBlocks(n: number, size: number, f16At: number[]): Uint8Array {
  const b = new Uint8Array(n * size);
  for (let i = 0; i < b.length; i++) b[i] = Math.floor(Math.random() * 256);
  // Keep f16 scales finite and modest so every value is a real number.
  for (let k = 0; k < n; k++) {
    for (const o of f16At) {
      b[k * size + o + 1] = 0x10 + Math.floor(Math.random() * 0x28);
    }
  }
  return b;
}

function k4(s: Uint8Array, j: number): [number, number] {
  return j < 4
    ? [s[j]! & 63, s[j + 4]! & 63]
    : [(s[j + 4]! & 15) | ((s[j - 4]! >> 6) << 4), (s[j + 4]! >> 4) | ((s[j]! >> 6) << 4)];
}

const SPECS: {
  name: string;
  size: number;
  n: number;
  f16At: number[];
  decode: (b: Uint8Array) => Float32Array;
  element: (b: Uint8Array, e: number) => number;
}[] = [
  {
    name: "Q4_0",
    size: 18,
    n: 32,
    f16At: [0],
    decode: (b) => decodeQ4_0(b),
    element: (b, e) => (((e < 16 ? b[2 + e]! : b[2 + e - 16]! >> 4) & 15) - 8) * h(b, 0),
  },
  {
    name: "Q4_1",
    size: 20,
    n: 32,
    f16At: [0, 2],
    decode: (b) => decodeQ4_1(b),
    element: (b, e) => ((e < 16 ? b[4 + e]! : b[4 + e - 16]! >> 4) & 15) * h(b, 0) + h(b, 2),
  },
  {
    name: "Q5_0",
    size: 22,
    n: 32,
    f16At: [0],
    decode: (b) => decodeQ5_0(b),
    element: (b, e) => {
      const lo = (e < 16 ? b[6 + e]! : b[6 + e - 16]! >> 4) & 15;
      const hi = (b[2 + (e >> 3)]! >> (e & 7)) & 1;
      return ((lo | (hi << 4)) - 16) * h(b, 0);
    },
  },
  {
    name: "Q5_1",
    size: 24,
    n: 32,
    f16At: [0, 2],
    decode: (b) => decodeQ5_1(b),
    element: (b, e) => {
      const lo = (e < 16 ? b[8 + e]! : b[8 + e - 16]! >> 4) & 15;
      const hi = (b[4 + (e >> 3)]! >> (e & 7)) & 1;
      return (lo | (hi << 4)) * h(b, 0) + h(b, 2);
    },
  },
  {
    name: "Q8_0",
    size: 34,
    n: 32,
    f16At: [0],
    decode: (b) => decodeQ8_0(b),
    element: (b, e) => ((b[2 + e]! << 24) >> 24) * h(b, 0),
  },
  {
    name: "Q2_K",
    size: 84,
    n: 256,
    f16At: [80, 82],
    decode: (b) => decodeQ2K(b),
    element: (b, e) => {
      const n = e >> 7, j = (e & 127) >> 5, l = e & 31;
      const sc = b[8 * n + 2 * j + (l >> 4)]!;
      const q = (b[16 + 32 * n + l]! >> (2 * j)) & 3;
      return h(b, 80) * (sc & 15) * q - h(b, 82) * (sc >> 4);
    },
  },
  {
    name: "Q3_K",
    size: 110,
    n: 256,
    f16At: [108],
    decode: (b) => decodeQ3K(b),
    element: (b, e) => {
      const n = e >> 7, j = (e & 127) >> 5, l = e & 31;
      const is = 8 * n + 2 * j + (l >> 4);
      const s = b.subarray(96, 108);
      const low = is < 8 ? s[is]! & 15 : s[is - 8]! >> 4;
      const high = (s[8 + (is % 4)]! >> (2 * Math.floor(is / 4))) & 3;
      const q = ((b[32 + 32 * n + l]! >> (2 * j)) & 3) - ((b[l]! >> (4 * n + j)) & 1 ? 0 : 4);
      return h(b, 108) * ((low | (high << 4)) - 32) * q;
    },
  },
  {
    name: "Q4_K",
    size: 144,
    n: 256,
    f16At: [0, 2],
    decode: (b) => decodeQ4K(b),
    element: (b, e) => {
      const c = e >> 6, hi = (e >> 5) & 1, l = e & 31;
      const [sc, m] = k4(b.subarray(4, 16), 2 * c + hi);
      const q = hi ? b[16 + 32 * c + l]! >> 4 : b[16 + 32 * c + l]! & 15;
      return h(b, 0) * sc * q - h(b, 2) * m;
    },
  },
  {
    name: "Q5_K",
    size: 176,
    n: 256,
    f16At: [0, 2],
    decode: (b) => decodeQ5K(b),
    element: (b, e) => {
      const c = e >> 6, hi = (e >> 5) & 1, l = e & 31;
      const [sc, m] = k4(b.subarray(4, 16), 2 * c + hi);
      const lo = hi ? b[48 + 32 * c + l]! >> 4 : b[48 + 32 * c + l]! & 15;
      const q = lo + ((b[16 + l]! >> (2 * c + hi)) & 1) * 16;
      return h(b, 0) * sc * q - h(b, 2) * m;
    },
  },
  {
    name: "Q6_K",
    size: 210,
    n: 256,
    f16At: [208],
    decode: (b) => decodeQ6K(b),
    element: (b, e) => {
      const half = e >> 7, r = e & 127, quarter = r >> 5, l = r & 31;
      const qlByte = b[64 * half + (quarter & 1) * 32 + l]!;
      const lo = quarter < 2 ? qlByte & 15 : qlByte >> 4;
      const hb = (b[128 + 32 * half + l]! >> (2 * quarter)) & 3;
      const sc = (b[192 + 8 * half + 2 * quarter + (l >> 4)]! << 24) >> 24;
      return h(b, 208) * sc * ((lo | (hb << 4)) - 32);
    },
  },
];

Deno.test("ggml dequantizers match per-element definitions on random blocks", async (t) => {
  for (const s of SPECS) {
    await t.step(s.name, () => {
      const blocks = 3;
      const b = randomBlocks(blocks, s.size, s.f16At);
      const got = s.decode(b);
      const want = new Float32Array(blocks * s.n);
      for (let k = 0; k < blocks; k++) {
        const blk = b.subarray(k * s.size, (k + 1) * s.size);
        for (let e = 0; e < s.n; e++) want[k * s.n + e] = s.element(blk, e);
      }
      assertEquals(got, want);
      // At an odd byte offset too.
      const shifted = new Uint8Array(b.length + 1);
      shifted.set(b, 1);
      assertEquals(s.decode(shifted.subarray(1)), want);
    });
  }
});

Deno.test("decodeQ8K() multiplies the f32 scale by the i8 quants", () => {
  const b = new Uint8Array(292);
  new DataView(b.buffer).setFloat32(0, 0.5, true);
  b[4] = 4;
  b[5] = 0xfe;
  const y = decodeQ8K(b);
  assertEquals([y[0], y[1], y[2]], [2, -1, 0]);
});

Deno.test("float8 decoders follow the OCP FP8 conventions", async (t) => {
  const rows: [string, (b: Uint8Array) => Float32Array, number[], number[]][] = [
    ["F8_E4M3", decodeF8E4M3, [0x38, 0x7e, 0x7f, 0x01, 0x80, 0xb8, 0x08], [
      1,
      448,
      NaN,
      2 ** -9,
      -0,
      -1,
      2 ** -6,
    ]],
    ["F8_E5M2", decodeF8E5M2, [0x3c, 0x7b, 0x7c, 0x7d, 0xfc, 0x01], [
      1,
      57344,
      Infinity,
      NaN,
      -Infinity,
      2 ** -16,
    ]],
    ["F8_E8M0", decodeF8E8M0, [127, 0, 254, 255, 128], [1, 2 ** -127, 2 ** 127, NaN, 2]],
  ];
  for (const [name, fn, bytes, want] of rows) {
    await t.step(name, () => assertEquals([...fn(new Uint8Array(bytes))], want));
  }
});

Deno.test("F4 and F6 decoders unpack OCP MX element types", async (t) => {
  await t.step("F4 low nibble first", () => {
    assertEquals([...decodeF4(new Uint8Array([0x71, 0xf8, 0x32]))], [0.5, 6, -0, -6, 1, 1.5]);
  });
  await t.step("F6_E2M3 four values per three bytes", () => {
    // Values 1.0 (0b001000), 7.5 (0b011111), -0.125 (0b100001), 0 packed little-endian.
    const w = 0b001000 | (0b011111 << 6) | (0b100001 << 12) | (0 << 18);
    const b = new Uint8Array([w & 255, (w >> 8) & 255, (w >> 16) & 255]);
    assertEquals([...decodeF6E2M3(b)], [1, 7.5, -0.125, 0]);
  });
  await t.step("F6_E3M2 max 28 and subnormals", () => {
    const w = 0b011111 | (0b001100 << 6) | (0b000001 << 12) | (0b111111 << 18);
    const b = new Uint8Array([w & 255, (w >> 8) & 255, (w >> 16) & 255]);
    assertEquals([...decodeF6E3M2(b)], [28, 1, 0.0625, -28]);
  });
});
