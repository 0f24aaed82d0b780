/**
 * What the interop tests compare: a GGUF file's KV pairs and raw tensors as
 * stored (GGUF names, ggml types, `ne`), and any model's tensors by name.
 */

import { openFileSource } from "../../src/io/file_source.ts";
import { type GgufReader, openGguf } from "../../src/formats/gguf/reader.ts";
import type { GgufKvEntry } from "../../src/formats/gguf/header.ts";
import { openModel, type OpenModelOptions } from "../../src/pipeline/open_model.ts";

/** One stored tensor. */
export interface StoredTensor {
  dtype: string;
  shape: readonly number[];
  bytes: Uint8Array;
}

/** A GGUF file as stored: KV pairs in order, tensors by GGUF name. */
export interface GgufFile {
  kv: ReadonlyMap<string, GgufKvEntry>;
  tensors: Map<string, StoredTensor>;
}

/** Read a GGUF file's KV pairs and raw tensors (small test files only). */
export async function readGgufFile(path: string): Promise<GgufFile> {
  const reader: GgufReader = await openGguf(await openFileSource(path), { keepNames: true });
  try {
    const tensors = new Map<string, StoredTensor>();
    for (const t of reader.tensors) {
      tensors.set(t.info.name, {
        dtype: t.info.dtype,
        shape: t.info.shape,
        bytes: await collect(t.open()),
      });
    }
    return { kv: reader.gguf.kv, tensors };
  } finally {
    await reader.close();
  }
}

/** Any model's tensors by name (as aprkit names them), raw bytes (small test files only). */
export async function readTensors(
  location: string,
  options: OpenModelOptions = {},
): Promise<Map<string, StoredTensor>> {
  const model = await openModel(location, options);
  try {
    const out = new Map<string, StoredTensor>();
    for (const name of model.names()) {
      const t = model.tensor(name);
      out.set(name, { dtype: t.info.dtype, shape: t.info.shape, bytes: await t.bytes() });
    }
    return out;
  } finally {
    await model.close();
  }
}

/** Every tensor's values decoded to f32, by name. */
export async function readValues(
  location: string,
  options: OpenModelOptions = {},
): Promise<Map<string, Float32Array>> {
  const model = await openModel(location, options);
  try {
    const out = new Map<string, Float32Array>();
    for (const name of model.names()) out.set(name, await model.tensor(name).toFloat32());
    return out;
  } finally {
    await model.close();
  }
}

/** The KV pairs as `key → JSON of {type, value}`, for readable diffs. */
export function kvJson(kv: ReadonlyMap<string, GgufKvEntry>): Map<string, string> {
  return new Map(
    [...kv].map(([k, e]) => [
      k,
      JSON.stringify(
        { type: e.type, arrayTypes: e.arrayTypes, value: e.value },
        (_, v) => typeof v === "bigint" ? v.toString() : v,
      ),
    ]),
  );
}

/** Bytes equal. */
export function sameBytes(a: Uint8Array, b: Uint8Array): boolean {
  if (a.length !== b.length) return false;
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return false;
  return true;
}

async function collect(stream: ReadableStream<Uint8Array>): Promise<Uint8Array> {
  const parts: Uint8Array[] = [];
  let n = 0;
  for await (const c of stream) {
    parts.push(c.slice());
    n += c.length;
  }
  const out = new Uint8Array(n);
  let at = 0;
  for (const p of parts) {
    out.set(p, at);
    at += p.length;
  }
  return out;
}
