// This module is browser compatible.

/**
 * Internal byte helpers shared by the kernels: little-endian typed views that
 * never sit at an unaligned offset (STYLE.md), and f32 rounding shorthands.
 *
 * @module
 */

/** True on little-endian hosts, where typed arrays read payload bytes directly. */
export const LITTLE_ENDIAN: boolean = new Uint8Array(new Uint16Array([1]).buffer)[0] === 1;

/**
 * A Float32Array holding the little-endian f32 values of `bytes`: a view when
 * the bytes are 4-byte aligned on a little-endian host, a decoded copy otherwise.
 */
export function f32View(bytes: Uint8Array): Float32Array {
  const n = bytes.length >>> 2;
  if (LITTLE_ENDIAN && (bytes.byteOffset & 3) === 0) {
    return new Float32Array(bytes.buffer, bytes.byteOffset, n);
  }
  const out = new Float32Array(n);
  const dv = new DataView(bytes.buffer, bytes.byteOffset, n * 4);
  for (let i = 0; i < n; i++) out[i] = dv.getFloat32(i * 4, true);
  return out;
}

/** Like {@linkcode f32View} for u16 values. */
export function u16View(bytes: Uint8Array): Uint16Array {
  const n = bytes.length >>> 1;
  if (LITTLE_ENDIAN && (bytes.byteOffset & 1) === 0) {
    return new Uint16Array(bytes.buffer, bytes.byteOffset, n);
  }
  const out = new Uint16Array(n);
  for (let i = 0; i < n; i++) out[i] = bytes[2 * i]! | (bytes[2 * i + 1]! << 8);
  return out;
}

/** Like {@linkcode f32View} for u32 values (raw f32 bits). */
export function u32View(bytes: Uint8Array): Uint32Array {
  const n = bytes.length >>> 2;
  if (LITTLE_ENDIAN && (bytes.byteOffset & 3) === 0) {
    return new Uint32Array(bytes.buffer, bytes.byteOffset, n);
  }
  const out = new Uint32Array(n);
  for (let i = 0, j = 0; i < n; i++, j += 4) {
    out[i] = (bytes[j]! | (bytes[j + 1]! << 8) | (bytes[j + 2]! << 16) | (bytes[j + 3]! << 24)) >>>
      0;
  }
  return out;
}

/** The raw f32 bits of `values`, without copying. */
export function f32Bits(values: Float32Array): Uint32Array {
  return new Uint32Array(values.buffer, values.byteOffset, values.length);
}

/** Write `out` (little-endian) from `words` when `out` could not be viewed as u16. */
export function storeU16(words: Uint16Array, out: Uint8Array): void {
  for (let i = 0; i < words.length; i++) {
    const w = words[i]!;
    out[2 * i] = w & 255;
    out[2 * i + 1] = w >>> 8;
  }
}

/** A writable u16 view of `out` when aligned on a little-endian host, else `undefined`. */
export function writableU16(out: Uint8Array): Uint16Array | undefined {
  if (LITTLE_ENDIAN && (out.byteOffset & 1) === 0) {
    return new Uint16Array(out.buffer, out.byteOffset, out.length >>> 1);
  }
  return undefined;
}

/** A writable f32 view of `out` when aligned on a little-endian host, else `undefined`. */
export function writableF32(out: Uint8Array): Float32Array | undefined {
  if (LITTLE_ENDIAN && (out.byteOffset & 3) === 0) {
    return new Float32Array(out.buffer, out.byteOffset, out.length >>> 2);
  }
  return undefined;
}

/** Read a little-endian u16 at `i`. */
export function readU16(b: Uint8Array, i: number): number {
  return b[i]! | (b[i + 1]! << 8);
}

/** Write a little-endian u16 at `i`. */
export function writeU16(b: Uint8Array, i: number, v: number): void {
  b[i] = v & 255;
  b[i + 1] = (v >>> 8) & 255;
}

/** Write a little-endian u32 at byte offset `i`. */
export function writeU32(b: Uint8Array, i: number, v: number): void {
  b[i] = v & 0xff;
  b[i + 1] = (v >>> 8) & 0xff;
  b[i + 2] = (v >>> 16) & 0xff;
  b[i + 3] = v >>> 24;
}
