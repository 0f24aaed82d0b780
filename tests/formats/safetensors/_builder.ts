/**
 * Small builders of SafeTensors bytes for tests, including malformed ones.
 *
 * @module
 */

import { BlobSource } from "../../../src/io/blob_source.ts";

/** Options of {@linkcode rawSafetensors}. */
export interface RawOptions {
  /** Length written in the prefix; defaults to the header's byte length. */
  declared?: bigint;
  /** Bytes of data after the header (zeros), or the data itself. */
  data?: number | Uint8Array;
}

/**
 * Build a SafeTensors file from raw header text: the header need not be valid.
 *
 * @param header JSON text (or any text) for the header.
 * @param options Declared length and data.
 * @returns The file bytes.
 */
export function rawSafetensors(header: string | Uint8Array, options: RawOptions = {}): Uint8Array {
  const json = typeof header === "string" ? new TextEncoder().encode(header) : header;
  const data = typeof options.data === "number"
    ? new Uint8Array(options.data)
    : options.data ?? new Uint8Array(0);
  const out = new Uint8Array(8 + json.length + data.length);
  new DataView(out.buffer).setBigUint64(0, options.declared ?? BigInt(json.length), true);
  out.set(json, 8);
  out.set(data, 8 + json.length);
  return out;
}

/**
 * Wrap bytes as a ByteSource.
 *
 * @param bytes The file.
 * @param name Name for messages.
 * @returns A Blob-backed source.
 */
export function sourceOf(bytes: Uint8Array, name = "test.safetensors"): BlobSource {
  return new BlobSource(new Blob([bytes as Uint8Array<ArrayBuffer>]), name);
}

/**
 * Read a whole stream into one array.
 *
 * @param stream The stream.
 * @returns Its bytes, concatenated.
 */
export async function collect(stream: ReadableStream<Uint8Array>): Promise<Uint8Array> {
  const parts: Uint8Array[] = [];
  let length = 0;
  for await (const chunk of stream) {
    parts.push(chunk);
    length += chunk.length;
  }
  const out = new Uint8Array(length);
  let at = 0;
  for (const p of parts) {
    out.set(p, at);
    at += p.length;
  }
  return out;
}

/**
 * Await a rejection and return the error, checking its class and message.
 *
 * @param fn What should reject.
 * @param errorClass The expected class.
 * @param message A pattern (or substring) the message must match.
 * @returns The error.
 */
export async function rejection<E extends Error>(
  fn: () => Promise<unknown>,
  // deno-lint-ignore no-explicit-any
  errorClass: new (...args: any[]) => E,
  message?: RegExp | string,
): Promise<E> {
  let caught: unknown;
  try {
    await fn();
  } catch (error) {
    caught = error;
  }
  if (caught === undefined) throw new Error("expected a rejection, got none");
  if (!(caught instanceof errorClass)) {
    throw new Error(`expected ${errorClass.name}, got ${String(caught)}`, { cause: caught });
  }
  if (typeof message === "string" && !caught.message.includes(message)) {
    throw new Error(`message ${JSON.stringify(caught.message)} lacks ${JSON.stringify(message)}`);
  }
  if (message instanceof RegExp && !message.test(caught.message)) {
    throw new Error(`message ${JSON.stringify(caught.message)} does not match ${message}`);
  }
  return caught;
}
