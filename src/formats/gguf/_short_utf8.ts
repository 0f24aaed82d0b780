// This module is browser compatible.

/**
 * Internal: UTF-8 of short strings in JavaScript, for the GGUF header's
 * vocabulary (tens of thousands of tokens of a few bytes each, nearly all
 * non-ASCII: SentencePiece's "▁", GPT-2's "Ġ"). TextEncoder.encode and
 * TextDecoder.decode cost a runtime call per string, ~0.2 CPU-s per
 * conversion for a 32,000-token vocabulary read and written once each. The
 * same bytes and strings as theirs; anything unusual (a lone surrogate, a
 * byte sequence that is not well-formed UTF-8) is left to them (`undefined`).
 *
 * @module
 */

/**
 * The UTF-8 length of `value`, or -1 when it holds a lone surrogate
 * (TextEncoder writes U+FFFD for it: left to TextEncoder).
 */
export function utf8Length(value: string): number {
  let n = 0;
  for (let i = 0; i < value.length; i++) {
    const c = value.charCodeAt(i);
    if (c < 0x80) n += 1;
    else if (c < 0x800) n += 2;
    else if (c < 0xd800 || c > 0xdfff) n += 3;
    else if (c <= 0xdbff && i + 1 < value.length && (value.charCodeAt(i + 1) & 0xfc00) === 0xdc00) {
      n += 4;
      i++;
    } else return -1;
  }
  return n;
}

/** Write `value` (no lone surrogate: utf8Length ≥ 0) as UTF-8 at `at` of `out`. */
export function writeUtf8(value: string, out: Uint8Array, at: number): void {
  for (let i = 0; i < value.length; i++) {
    let c = value.charCodeAt(i);
    if (c < 0x80) {
      out[at++] = c;
    } else if (c < 0x800) {
      out[at++] = 0xc0 | (c >> 6);
      out[at++] = 0x80 | (c & 63);
    } else if (c < 0xd800 || c > 0xdfff) {
      out[at++] = 0xe0 | (c >> 12);
      out[at++] = 0x80 | ((c >> 6) & 63);
      out[at++] = 0x80 | (c & 63);
    } else {
      c = 0x10000 + ((c - 0xd800) << 10) + (value.charCodeAt(++i) - 0xdc00);
      out[at++] = 0xf0 | (c >> 18);
      out[at++] = 0x80 | ((c >> 12) & 63);
      out[at++] = 0x80 | ((c >> 6) & 63);
      out[at++] = 0x80 | (c & 63);
    }
  }
}

/** Whether byte `b` is a continuation byte (10xxxxxx). */
const cont = (b: number | undefined): boolean => b !== undefined && (b & 0xc0) === 0x80;

/**
 * `bytes` decoded as well-formed UTF-8 (a leading BOM kept, as TextDecoder
 * with `ignoreBOM`), or `undefined` when they are not (TextDecoder then says
 * how; with `fatal` it throws).
 */
export function readUtf8(bytes: Uint8Array): string | undefined {
  let s = "";
  const n = bytes.length;
  let i = 0;
  while (i < n) {
    const b = bytes[i]!;
    if (b < 0x80) {
      s += String.fromCharCode(b);
      i++;
      continue;
    }
    const b1 = bytes[i + 1];
    if (b >= 0xc2 && b <= 0xdf) {
      if (!cont(b1)) return undefined;
      s += String.fromCharCode(((b & 31) << 6) | (b1! & 63));
      i += 2;
      continue;
    }
    const b2 = bytes[i + 2];
    if (b >= 0xe0 && b <= 0xef) {
      // No overlongs (E0 A0..BF), no surrogates (ED 80..9F).
      const lo = b === 0xe0 ? 0xa0 : 0x80;
      const hi = b === 0xed ? 0x9f : 0xbf;
      if (b1 === undefined || b1 < lo || b1 > hi || !cont(b2)) return undefined;
      s += String.fromCharCode(((b & 15) << 12) | ((b1 & 63) << 6) | (b2! & 63));
      i += 3;
      continue;
    }
    const b3 = bytes[i + 3];
    if (b >= 0xf0 && b <= 0xf4) {
      // No overlongs (F0 90..BF), nothing past U+10FFFF (F4 80..8F).
      const lo = b === 0xf0 ? 0x90 : 0x80;
      const hi = b === 0xf4 ? 0x8f : 0xbf;
      if (b1 === undefined || b1 < lo || b1 > hi || !cont(b2) || !cont(b3)) return undefined;
      const c = (((b & 7) << 18) | ((b1 & 63) << 12) | ((b2! & 63) << 6) | (b3! & 63)) - 0x10000;
      s += String.fromCharCode(0xd800 + (c >> 10), 0xdc00 + (c & 1023));
      i += 4;
      continue;
    }
    return undefined;
  }
  return s;
}
