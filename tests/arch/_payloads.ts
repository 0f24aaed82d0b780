/**
 * Payloads for the streaming transforms' tests: bytes cut into chunks at
 * chosen places, and a stream read back whole.
 *
 * @module
 */

/** `bytes` cut into chunks of the given sizes (the rest in one last chunk). */
export function chunked(bytes: Uint8Array, sizes: number[]): ReadableStream<Uint8Array> {
  const parts: Uint8Array[] = [];
  let at = 0;
  for (const n of sizes) {
    parts.push(bytes.slice(at, at + n));
    at += n;
  }
  if (at < bytes.length) parts.push(bytes.slice(at));
  return ReadableStream.from(parts);
}

/** Everything `stream` holds, in one array. */
export async function all(stream: ReadableStream<Uint8Array>): Promise<Uint8Array> {
  return new Uint8Array(await new Response(stream).arrayBuffer());
}
