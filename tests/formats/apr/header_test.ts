import assert from "node:assert/strict";
import { ModelFormatError } from "../../../src/errors.ts";
import {
  APR_FLAGS,
  aprHeaderCrc,
  encodeAprHeader,
  parseAprHeader,
} from "../../../src/formats/apr/header.ts";
import { testdata } from "./_fixtures.ts";

const FIELDS = { tensorCount: 2, metadataSize: 189, tensorIndexOffset: 256, dataOffset: 384 };

Deno.test("encodeAprHeader() writes the golden vector's header", () => {
  const golden = Deno.readFileSync(testdata("apr/golden-v2.apr"));
  assert.deepEqual(encodeAprHeader(FIELDS), golden.subarray(0, 64));
  assert.equal(aprHeaderCrc(golden), 0x3bc08c02);
});

Deno.test("parseAprHeader() round-trips encodeAprHeader()", () => {
  const h = parseAprHeader(encodeAprHeader(FIELDS));
  assert.deepEqual(
    { ...h, headerCrc: 0 },
    {
      versionMajor: 2,
      versionMinor: 0,
      flags: APR_FLAGS.LAYOUT_ROW_MAJOR,
      tensorCount: 2,
      metadataOffset: 64,
      metadataSize: 189,
      tensorIndexOffset: 256,
      dataOffset: 384,
      headerCrc: 0,
    },
  );
});

function mutated(f: (b: Uint8Array, v: DataView) => void, fixCrc = true): Uint8Array {
  const b = encodeAprHeader(FIELDS);
  const v = new DataView(b.buffer);
  f(b, v);
  if (fixCrc) v.setUint32(40, aprHeaderCrc(b), true);
  return b;
}

Deno.test("parseAprHeader() rejects malformed headers", async (t) => {
  const cases: [string, Uint8Array, string][] = [
    ["too short", encodeAprHeader(FIELDS).subarray(0, 63), "file too short: 63 bytes"],
    ["wrong magic", mutated((b) => (b[3] = 0x32)), "wrong magic"],
    ["APR v1", mutated((b) => b.set([1, 0, 0, 0], 4), false), "APR v1 file"],
    ["version 2.1", mutated((b) => (b[5] = 1)), "unsupported version 2.1"],
    ["version 3.0", mutated((b) => (b[4] = 3)), "unsupported version 3.0"],
    ["header CRC", mutated((b) => (b[50] = 1), false), "header CRC mismatch"],
    [
      "column-major",
      mutated((_, v) => v.setUint16(6, 0x0c00, true)),
      "column-major layout (flag 0x0800)",
    ],
    ["LZ4", mutated((_, v) => v.setUint16(6, 0x0401, true)), "unsupported flags 0x0001 (LZ4)"],
    ["huge offset", mutated((_, v) => v.setBigUint64(32, 2n ** 60n, true)), "exceeds 2^53"],
  ];
  for (const [label, bytes, message] of cases) {
    await t.step(label, () => {
      assert.throws(() => parseAprHeader(bytes, "x.apr"), (e) => {
        assert.ok(e instanceof ModelFormatError);
        assert.match(e.message, /^Cannot read APR file "x\.apr": /);
        assert.ok(e.message.includes(message), e.message);
        return true;
      });
    });
  }
});

Deno.test("encodeAprHeader() rejects fields that do not fit", () => {
  assert.throws(
    () => encodeAprHeader({ ...FIELDS, tensorCount: 2 ** 32 }),
    /tensorCount 4294967296 is not an integer/,
  );
});
