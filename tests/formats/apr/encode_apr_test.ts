import assert from "node:assert/strict";
import { encodeApr } from "../../../src/formats/apr/encode_apr.ts";
import { GOLDEN_METADATA, GOLDEN_SHA256, GOLDEN_TENSORS, sha256, testdata } from "./_fixtures.ts";

Deno.test("encodeApr() writes the golden vector byte for byte", () => {
  const bytes = encodeApr({ metadata: GOLDEN_METADATA, tensors: GOLDEN_TENSORS });
  assert.equal(sha256(bytes), GOLDEN_SHA256);
  assert.deepEqual(bytes, Deno.readFileSync(testdata("apr/golden-v2.apr")));
});

Deno.test("encodeApr() output does not depend on tensor order", () => {
  const a = encodeApr({ metadata: GOLDEN_METADATA, tensors: GOLDEN_TENSORS });
  const b = encodeApr({ metadata: GOLDEN_METADATA, tensors: [...GOLDEN_TENSORS].reverse() });
  assert.deepEqual(a, b);
});

Deno.test("encodeApr() with arrival data order keeps the input order", () => {
  const bytes = encodeApr({ metadata: GOLDEN_METADATA, tensors: GOLDEN_TENSORS }, {
    dataOrder: "arrival",
  });
  // weights (32 bytes, padded to 64) first, then bias.
  assert.equal(new DataView(bytes.buffer).getFloat32(384, true), 1);
  assert.equal(new DataView(bytes.buffer).getFloat32(448, true), 0.125);
});

Deno.test("encodeApr() rejects tensors APR cannot hold", async (t) => {
  const cases: [string, Parameters<typeof encodeApr>[0], ErrorConstructor, string][] = [
    [
      "duplicate",
      { tensors: [GOLDEN_TENSORS[1]!, GOLDEN_TENSORS[1]!] },
      TypeError,
      'tensor name "bias" appears twice',
    ],
    [
      "wrong size",
      { tensors: [{ name: "w", dtype: "F32", shape: [3], data: new Uint8Array(8) }] },
      TypeError,
      "has byteLength 8, expected 12",
    ],
    [
      "dtype without code",
      { tensors: [{ name: "w", dtype: "BOOL", shape: [1], data: new Uint8Array(1) }] },
      TypeError,
      "dtype BOOL has no APR v2 code",
    ],
  ];
  for (const [label, input, cls, message] of cases) {
    await t.step(label, () => {
      assert.throws(() => encodeApr(input), (e) => e instanceof cls && e.message.includes(message));
    });
  }
});
