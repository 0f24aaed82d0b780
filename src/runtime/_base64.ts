// This module is browser compatible.

/**
 * Internal: base64, decoded for the embedded WebAssembly modules (written in
 * it by `deno task wasm`) and both ways for a tokenizer's precompiled charsmap
 * in APR metadata, with what every runtime has (`atob`, `btoa`).
 *
 * @module
 */

/**
 * Decode base64.
 *
 * @param b64 Base64 text.
 * @returns The bytes.
 */
export function decodeBase64(b64: string): Uint8Array<ArrayBuffer> {
  const s = atob(b64);
  const bytes = new Uint8Array(s.length);
  for (let i = 0; i < s.length; i++) bytes[i] = s.charCodeAt(i);
  return bytes;
}

/**
 * Encode bytes as base64 (in slices, so a large array does not overflow
 * the argument list of `String.fromCharCode`).
 *
 * @param bytes The bytes.
 * @returns Base64 text.
 */
export function encodeBase64(bytes: Uint8Array): string {
  let s = "";
  for (let i = 0; i < bytes.length; i += 0x8000) {
    s += String.fromCharCode(...bytes.subarray(i, i + 0x8000));
  }
  return btoa(s);
}
