import { equal } from "node:assert/strict";
import { readUtf8, utf8Length, writeUtf8 } from "../../../src/formats/gguf/_short_utf8.ts";

function rng(seed: number): () => number {
  let s = seed >>> 0;
  return () => (s = (Math.imul(s, 1103515245) + 12345) >>> 0) / 2 ** 32;
}

Deno.test("writeUtf8() gives TextEncoder's bytes; lone surrogates are left to it", () => {
  const r = rng(33);
  // Code units around every boundary of the encoding, surrogates of both halves included.
  const units = [
    0,
    0x41,
    0x7f,
    0x80,
    0x120,
    0x7ff,
    0x800,
    0x2581,
    0xd7ff,
    0xd800,
    0xdbff,
    0xdc00,
    0xdfff,
    0xe000,
    0xfeff,
    0xfffd,
    0xffff,
  ];
  const encoder = new TextEncoder();
  for (let k = 0; k < 20000; k++) {
    let s = "";
    const len = Math.floor(r() * 8);
    for (let i = 0; i < len; i++) {
      s += String.fromCharCode(
        r() < 0.7 ? units[Math.floor(r() * units.length)]! : Math.floor(r() * 0x10000),
      );
    }
    const expected = encoder.encode(s);
    const n = utf8Length(s);
    if (n < 0) {
      // A lone surrogate: TextEncoder's U+FFFD, not ours.
      equal(/[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/.test(s), true);
      continue;
    }
    equal(n, expected.length, JSON.stringify(s));
    const out = new Uint8Array(n + 2);
    writeUtf8(s, out, 1);
    equal(out.subarray(1, n + 1).join(), expected.join(), JSON.stringify(s));
  }
});

Deno.test("readUtf8() gives TextDecoder's string for well-formed UTF-8 and undefined for the rest", () => {
  const r = rng(34);
  // Bytes around every boundary of well-formedness (overlongs, surrogates, past U+10FFFF).
  const bytes = [
    0x00,
    0x41,
    0x7f,
    0x80,
    0x8f,
    0x90,
    0x9f,
    0xa0,
    0xbf,
    0xc0,
    0xc1,
    0xc2,
    0xdf,
    0xe0,
    0xe1,
    0xec,
    0xed,
    0xee,
    0xef,
    0xf0,
    0xf1,
    0xf3,
    0xf4,
    0xf5,
    0xfe,
    0xff,
    0xbb,
  ];
  const decoder = new TextDecoder("utf-8", { fatal: true, ignoreBOM: true });
  const encoder = new TextEncoder();
  let valid = 0;
  for (let k = 0; k < 30000; k++) {
    // Half well-formed (random code points, encoded), half byte soup.
    const b = k % 2 === 0
      ? encoder.encode(
        String.fromCodePoint(
          ...Array.from({ length: 1 + Math.floor(r() * 4) }, () => {
            const c = Math.floor(r() ** 3 * 0x110000);
            return c >= 0xd800 && c <= 0xdfff ? 0x2581 : c;
          }),
        ),
      )
      : new Uint8Array(1 + Math.floor(r() * 8)).map(() =>
        r() < 0.8 ? bytes[Math.floor(r() * bytes.length)]! : Math.floor(r() * 256)
      );
    let expected: string | undefined;
    try {
      expected = decoder.decode(b);
      valid++;
    } catch {
      expected = undefined;
    }
    equal(readUtf8(b), expected, b.join());
  }
  // Both kinds were exercised.
  equal(valid > 15000 && valid < 29000, true, `${valid} valid`);
  // A BOM is kept, as ignoreBOM does.
  equal(readUtf8(new Uint8Array([0xef, 0xbb, 0xbf, 0x41])), "\ufeffA");
});
