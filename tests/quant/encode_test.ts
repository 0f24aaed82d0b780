import { deepStrictEqual as assertEquals, throws } from "node:assert/strict";
import { encodeFromFloat32 } from "../../src/quant/encode.ts";
import { decodeToFloat32 } from "../../src/quant/decode.ts";
import { encodeQ4K } from "../../src/quant/q4_k.ts";
import { encodeAprQ8Tensor } from "../../src/quant/apr_q8.ts";
import { encodeF16 } from "../../src/quant/f16.ts";

Deno.test("encodeFromFloat32() pads K-quant rows and matches the kernels", () => {
  const values = new Float32Array(2 * 300).map((_, i) => Math.sin(i));
  const padded = new Float32Array(2 * 512);
  padded.set(values.subarray(0, 300), 0);
  padded.set(values.subarray(300), 512);
  assertEquals(encodeFromFloat32("Q4_K", values, [2, 300]), encodeQ4K(padded));
  assertEquals(encodeFromFloat32("APR_Q8", values, [600]), encodeAprQ8Tensor(values));
  assertEquals(encodeFromFloat32("F16", values, [2, 300]), encodeF16(values));
  const f32 = encodeFromFloat32("F32", values, [600]);
  assertEquals(decodeToFloat32("F32", f32, [600]), values);
  assertEquals(
    decodeToFloat32("Q4_K", encodeFromFloat32("Q4_K", values, [2, 300]), [2, 300]).length,
    600,
  );
});

Deno.test("encodeFromFloat32() rejects unknown targets and wrong lengths", () => {
  throws(
    () => encodeFromFloat32("NVFP4", new Float32Array(64), [64]),
    (e: unknown) =>
      e instanceof TypeError &&
      /Cannot encode NVFP4: aprkit decodes this ggml type/.test(e.message),
  );
  throws(
    () => encodeFromFloat32("F16", new Float32Array(3), [4]),
    (e: unknown) => e instanceof RangeError && /3 values given, 4 expected/.test(e.message),
  );
});
