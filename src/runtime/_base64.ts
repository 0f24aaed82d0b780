// This module is browser compatible.

/**
 * Internal: decode the base64 the embedded WebAssembly modules are written in
 * (`deno task wasm`), with what every runtime has (`atob`).
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
