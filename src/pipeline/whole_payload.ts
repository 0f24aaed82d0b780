// This module is browser compatible.

/**
 * A small payload read whole into one array of its known size (a tensor's
 * bytes for the library API, a `.scale`'s factors, the tensors a family
 * writes as keys), checked against that size both ways.
 *
 * @module
 */

/**
 * The whole of `stream`, which must be exactly `byteLength` bytes.
 *
 * @param stream The payload.
 * @param byteLength Its size.
 * @param name The tensor, for the message.
 * @returns The bytes.
 * @throws {RangeError} When the payload is longer or shorter than `byteLength`.
 */
export async function wholePayload(
  stream: ReadableStream<Uint8Array>,
  byteLength: number,
  name: string,
): Promise<Uint8Array> {
  const out = new Uint8Array(byteLength);
  let offset = 0;
  for await (const chunk of stream) {
    if (offset + chunk.length > out.length) {
      throw new RangeError(`Cannot read tensor "${name}": payload longer than its size`);
    }
    out.set(chunk, offset);
    offset += chunk.length;
  }
  if (offset !== out.length) {
    throw new RangeError(
      `Cannot read tensor "${name}": payload ended after ${offset} of ${out.length} bytes`,
    );
  }
  return out;
}
