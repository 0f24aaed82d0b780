import assert from "node:assert/strict";
import { ModelFormatError } from "../../../src/errors.ts";
import {
  checkAprTensor,
  compareUtf8Bytes,
  encodeAprIndex,
  parseAprIndex,
} from "../../../src/formats/apr/index_entry.ts";

Deno.test("compareUtf8Bytes() orders by UTF-8 bytes, not UTF-16 units", () => {
  const a = "\uFB00"; // EF AC 80
  const b = "\u{1D538}"; // F0 9D 94 B8
  assert.ok(a > b, "JS string order puts U+FB00 after U+1D538");
  assert.ok(compareUtf8Bytes(a, b) < 0);
  assert.ok(compareUtf8Bytes(b, a) > 0);
  assert.equal(compareUtf8Bytes("x", "x"), 0);
  assert.ok(compareUtf8Bytes("ab", "abc") < 0);
  assert.ok(compareUtf8Bytes("bias", "weights") < 0);
  const names = ["z", "\u{1D538}", "\uFB00", "a", "\uD7FF", "é"];
  const byBytes = [...names].sort((x, y) => {
    const [p, q] = [new TextEncoder().encode(x), new TextEncoder().encode(y)];
    for (let i = 0; i < Math.min(p.length, q.length); i++) if (p[i] !== q[i]) return p[i]! - q[i]!;
    return p.length - q.length;
  });
  assert.deepEqual([...names].sort(compareUtf8Bytes), byBytes);
});

Deno.test("parseAprIndex() round-trips encodeAprIndex()", () => {
  const entries = [
    { name: "a", dtype: "F32" as const, shape: [], offset: 0, size: 4 },
    { name: "b", dtype: "Q4_K" as const, shape: [2, 256], offset: 64, size: 288 },
    { name: "c", dtype: "U8" as const, shape: [1, 1, 1, 1, 1, 1, 1, 2], offset: 384, size: 2 },
  ];
  const parsed = parseAprIndex(encodeAprIndex(entries), 3);
  assert.deepEqual(parsed.map(({ dtypeCode: _, entryOffset: _o, ...e }) => e), entries);
  assert.deepEqual(parsed.map((e) => e.dtypeCode), [0, 12, 7]);
  assert.deepEqual(parsed.map((e) => e.entryOffset), [0, 21, 58]);
});

function entryBytes(code: number, shape: number[], size: number, name = "t"): Uint8Array {
  const n = new TextEncoder().encode(name);
  const out = new Uint8Array(2 + n.length + 2 + 8 * shape.length + 16);
  const v = new DataView(out.buffer);
  v.setUint16(0, n.length, true);
  out.set(n, 2);
  let p = 2 + n.length;
  out[p++] = code;
  out[p++] = shape.length;
  for (const d of shape) {
    v.setBigUint64(p, BigInt(d), true);
    p += 8;
  }
  v.setBigUint64(p + 8, BigInt(size), true);
  return out;
}

Deno.test("parseAprIndex() reads legacy and newest dtype codes", () => {
  assert.equal(parseAprIndex(entryBytes(2, [3], 6), 1)[0]!.dtype, "BF16");
  assert.equal(parseAprIndex(entryBytes(128, [32], 18), 1)[0]!.dtype, "APR_Q4");
  assert.equal(parseAprIndex(entryBytes(129, [2], 6), 1)[0]!.dtype, "APR_Q8");
});

Deno.test("parseAprIndex() rejects malformed entries", async (t) => {
  const longName = new Uint8Array(2 + 300);
  new DataView(longName.buffer).setUint16(0, 257, true);
  const cases: [string, Uint8Array, string][] = [
    ["truncated", entryBytes(0, [4], 16).subarray(0, 20), "tensor index truncated"],
    ["unknown dtype", entryBytes(99, [4], 16), 'tensor "t" has unknown dtype code 99'],
    ["code 2 at 4 bytes/elem", entryBytes(2, [3], 12), "dtype code 2 (legacy BF16)"],
    ["ndim 9", entryBytes(0, [1, 1, 1, 1, 1, 1, 1, 1, 1], 4), "9 dimensions, over the limit of 8"],
    ["name too long", longName, "name is 257 bytes, over the 256-byte limit"],
  ];
  for (const [label, bytes, message] of cases) {
    await t.step(label, () => {
      assert.throws(() => parseAprIndex(bytes, 1, "i.apr", 256), (e) => {
        assert.ok(e instanceof ModelFormatError);
        assert.ok(e.message.includes(message), e.message);
        return true;
      });
    });
  }
});

Deno.test("checkAprTensor() rejects what APR cannot store", async (t) => {
  const cases: [string, () => void, ErrorConstructor, string][] = [
    ["long name", () => checkAprTensor("x".repeat(257), "F32", [1]), RangeError, "257 UTF-8 bytes"],
    ["9 dims", () => checkAprTensor("x", "F32", Array(9).fill(1)), RangeError, "9 dimensions"],
    ["no APR code", () => checkAprTensor("x", "Q8_0", [32]), TypeError, "dtype Q8_0 has no APR"],
    ["lone surrogate", () => checkAprTensor("\uD800", "F32", [1]), TypeError, "not valid Unicode"],
  ];
  for (const [label, f, cls, message] of cases) {
    await t.step(label, () => {
      assert.throws(f, (e) => e instanceof cls && (e as Error).message.includes(message));
    });
  }
  checkAprTensor("x".repeat(256), "F32", [1, 1, 1, 1, 1, 1, 1, 1]);
});
