/**
 * Base64 to bytes (the browser judge returns a file's bytes as base64).
 *
 * @module
 */

/**
 * Decode base64.
 *
 * @param text Standard base64.
 * @returns The bytes.
 */
export function decodeBase64(text: string): Uint8Array {
  const binary = atob(text);
  const bytes = new Uint8Array(binary.length);
  for (let i = 0; i < binary.length; i++) bytes[i] = binary.charCodeAt(i);
  return bytes;
}
