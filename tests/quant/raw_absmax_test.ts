import assert from "node:assert/strict";
import { RawAbsmax } from "../../src/quant/_raw_absmax.ts";
import { aprQ8Absmax } from "../../src/quant/apr_q8.ts";
import { encodeF16 } from "../../src/quant/f16.ts";
import { encodeBf16 } from "../../src/quant/bf16.ts";
import { decodeToFloat32 } from "../../src/quant/decode.ts";

/** Values with every hard case: signs, zeros, subnormals, infinities, NaN. */
function hardValues(extra: number): Float32Array {
  const v = [0, -0, 1e-45, -3e-39, 6e-8, -5.9e-8, 65504, -65520, 1.5, -2.25, NaN, -NaN, extra];
  let seed = 7;
  for (let i = 0; i < 1000; i++) {
    seed = (seed * 1103515245 + 12345) >>> 0;
    v.push((seed / 2 ** 32 - 0.5) * 40);
  }
  return new Float32Array(v);
}

Deno.test("RawAbsmax gives aprQ8Absmax's number on the raw bits, chunked at any byte", () => {
  for (const extra of [-100.5, Infinity, -Infinity, 3.4e38]) {
    const values = hardValues(extra);
    for (
      const [dtype, bytes] of [
        ["F32", new Uint8Array(values.buffer)],
        ["F16", encodeF16(values)],
        ["BF16", encodeBf16(values)],
      ] as const
    ) {
      const expected = aprQ8Absmax(decodeToFloat32(dtype, bytes, [values.length]));
      for (const step of [1, 3, 7, 4096, bytes.length]) {
        const raw = RawAbsmax.for(dtype)!;
        for (let at = 0; at < bytes.length; at += step) {
          // Copies at odd offsets: misaligned views too.
          const piece = new Uint8Array(step + 1).subarray(1, 1 + Math.min(step, bytes.length - at));
          piece.set(bytes.subarray(at, at + piece.length));
          raw.push(piece);
        }
        assert.equal(raw.result(), expected, `${dtype} ${extra} step ${step}`);
      }
    }
  }
  assert.equal(RawAbsmax.for("Q4_K"), undefined);
  const cut = RawAbsmax.for("F32")!;
  cut.push(new Uint8Array(6));
  assert.throws(() => cut.result(), RangeError);
});
