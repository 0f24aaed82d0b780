import { deepStrictEqual as assertEquals } from "node:assert/strict";
import { createHash } from "node:crypto";
import { encodeQ4K } from "../../src/quant/q4_k.ts";
import { encodeQ6K } from "../../src/quant/q6_k.ts";

// The fixtures pin the encoders to llama-quantize on ordinary weights. These
// pin the bytes on data the fast paths must hand back to the general path
// (NaN, ±Infinity, overflowing and subnormal ranges, outliers), as produced
// by the encoders before the speed work (commit dbe3c59), so an
// optimization cannot change them unnoticed.
const N = 4096;

function values(kind: string): Float32Array {
  const v = new Float32Array(N);
  let seed = 7;
  const r = () => ((seed = (seed * 1103515245 + 12345) >>> 0) / 2 ** 32);
  for (let i = 0; i < N; i++) {
    const x = (r() + r() + r() + r() - 2) * 0.035;
    v[i] = kind === "normal"
      ? x
      : kind === "nan"
      ? (r() < 0.02 ? NaN : x)
      : kind === "inf"
      ? (r() < 0.02 ? (r() < 0.5 ? Infinity : -Infinity) : x)
      : kind === "huge"
      ? x * 1e37
      : kind === "outlier"
      ? (i % 64 === 0 ? 1e30 : x)
      : kind === "subnormal"
      ? x * 1e-42
      : kind === "positive"
      ? Math.abs(x) + 1
      : Math.round(x * 100);
  }
  return v;
}

const sha256 = (b: Uint8Array) => createHash("sha256").update(b).digest("hex");

const CASES: [kind: string, q4k: string, q6k: string][] = [
  [
    "normal",
    "509cd3f6ce9ef6ed5d7fef23931d069f30d5f77b7153c7dded57d23559b0b7c7",
    "ae926145d316881252092e730c281ab432891655ff06b8a2866f4e653406d9c5",
  ],
  [
    "nan",
    "8a3707aab5e4208f60d08e274e7283812b4179b1a0f3f5400886fdf8df73ef55",
    "5b81d655e56fdc985901961d40ebb58d3ae4ae8548f47b4ff4926fe9ed54398b",
  ],
  [
    "inf",
    "abf309384365023cd59543314b9882156d141160e7b9dd1067e8d49b9ec54ad3",
    "05b3e7a086585dd6dff6ff59e4f4716a1f8cefb2bb25e56e6395ca0e1bddb1b7",
  ],
  [
    "huge",
    "cfdfedf7069155f6140ca6f8f685ac3e3a44e0faad199e8e8f7e948704da43f4",
    "9b00b8930d66b11eb3cc96e31d08b2889160b0e617f1f6c229fa37c92578c23c",
  ],
  [
    "outlier",
    "988bdea94a208658f620ecffd24f4e0b954cea40ed290dc03e5b3b720c8e949a",
    "497256bc6db1e124db440a1d03b23a4b06426e085525fa742837c65ae1bb4e84",
  ],
  [
    "subnormal",
    "cfc335996cfae29fdf14fd2db7ea853366d350a5d387aa3c322616e81dacd56b",
    "9b00b8930d66b11eb3cc96e31d08b2889160b0e617f1f6c229fa37c92578c23c",
  ],
  [
    "positive",
    "30aa7117ced3bd6613fbd51a269947630c6b072f822a44fcc7431e2a1117068f",
    "eed3d9df559878ed1e84f0b34fd06b712526f24bd5ea7c6505a18591a1ea24ef",
  ],
  [
    "integers",
    "e79d9b6927af39f00becdea59bd15dfb97356771b14ec4040db6d48042edd850",
    "b4e29ec4b7d5fde3a72cc21a2e2c9be929161b6d84906aee5435cda7ae5b9cfa",
  ],
];

Deno.test("encodeQ4K() and encodeQ6K() keep their bytes on edge-case data", async (t) => {
  for (const [kind, q4k, q6k] of CASES) {
    await t.step(kind, () => {
      const v = values(kind);
      assertEquals(sha256(encodeQ4K(v)), q4k);
      assertEquals(sha256(encodeQ6K(v)), q6k);
    });
  }
});
