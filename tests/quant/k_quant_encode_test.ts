import { deepStrictEqual as assertEquals, ok, throws } from "node:assert/strict";
import { decodeQ4K, encodeQ4K } from "../../src/quant/q4_k.ts";
import { decodeQ6K, encodeQ6K } from "../../src/quant/q6_k.ts";
import { loadFixture, readGgufTensors, sha256 } from "./_gguf_fixtures.ts";

function rmse(a: Float32Array, b: Float32Array): number {
  let s = 0;
  for (let i = 0; i < a.length; i++) {
    const d = a[i]! - b[i]!;
    s += d * d;
  }
  return Math.sqrt(s / a.length);
}

const F32 = readGgufTensors("tiny-llama-f32.gguf");

function f32Weights(name: string, n: number): Float32Array {
  const t = F32.tensors.find((x) => x.name === name);
  if (t === undefined) throw new Error(`no tensor ${name} in the F32 fixture`);
  assertEquals(t.ggmlType, 0);
  return new Float32Array(F32.bytes.slice(t.offset, t.offset + 4 * n).buffer);
}

const CASES = [
  { stem: "tiny-llama-q4_k_m", type: "Q4_K", encode: encodeQ4K, decode: decodeQ4K },
  { stem: "tiny-llama-q4_k_m", type: "Q6_K", encode: encodeQ6K, decode: decodeQ6K },
  { stem: "tiny-llama-q6_k", type: "Q6_K", encode: encodeQ6K, decode: decodeQ6K },
] as const;

for (const c of CASES) {
  Deno.test(`encode${c.type.replace("_", "")}() reproduces llama-quantize's bytes for the ${c.type} tensors of ${c.stem}.gguf`, async (t) => {
    const { bytes, manifest } = loadFixture(c.stem);
    const tensors = manifest.tensors.filter((m) => m.type === c.type);
    ok(tensors.length > 0);
    for (const m of tensors) {
      await t.step(m.name, () => {
        const n = m.ne.reduce((a, b) => a * b, 1);
        const values = f32Weights(m.name, n);
        const mine = c.encode(values);
        const theirs = bytes.subarray(m.abs_offset, m.abs_offset + m.n_bytes);
        ok(rmse(values, c.decode(mine)) <= rmse(values, c.decode(theirs)));
        assertEquals(sha256(mine), m.raw_sha256);
      });
    }
  });
}

Deno.test("encodeQ4K() and encodeQ6K() reject a partial super-block", () => {
  for (const f of [encodeQ4K, encodeQ6K]) {
    throws(
      () => f(new Float32Array(300)),
      (e: unknown) =>
        e instanceof RangeError &&
        /300 values are not a whole number of 256-value blocks/.test(e.message),
    );
  }
});

Deno.test("encodeQ4K() and encodeQ6K() encode zeros to zeros and keep constants", () => {
  assertEquals(decodeQ4K(encodeQ4K(new Float32Array(256))), new Float32Array(256));
  // llama.cpp's Q6_K zero block decodes to -0 (0 * -32), which compares equal to 0.
  ok(decodeQ6K(encodeQ6K(new Float32Array(256))).every((v) => v === 0));
  const ramp = new Float32Array(256).map((_, i) => (i - 128) / 64);
  ok(rmse(ramp, decodeQ4K(encodeQ4K(ramp))) < 0.05);
  ok(rmse(ramp, decodeQ6K(encodeQ6K(ramp))) < 0.03);
});
