// This module is browser compatible.

/**
 * A GGUF as it is stored, for `apr inspect`, `apr tensors` and the web page:
 * its own key/value pairs, every one in file order with its GGUF type
 * (arrays summarised: type, length, first items), and its tensors under
 * their GGUF names with their file offsets — what gguf-py's `gguf-dump`
 * shows. The translation to Hugging Face names and APR keys (what a
 * conversion reads) is the `--translate` view.
 *
 * @module
 */

import { type GgufHeader, type GgufKvEntry, ggufValueTypeName } from "../formats/gguf/header.ts";
import { shortenValue, SHOWN_ARRAY_LENGTH } from "./_summary.ts";

/** One GGUF key/value pair as shown. */
export interface GgufKvView {
  /** The GGUF value type (`"UINT32"`, `"STRING"`, `"ARRAY"`…). */
  type: string;
  /** For arrays: the element type (then the inner arrays' element type…). */
  arrayTypes?: string[];
  /** For arrays: the number of elements. */
  length?: number;
  /** The value (JSON: 64-bit integers beyond 2^53 as decimal strings; long strings cut). Absent for an array cut to `head`. */
  value?: unknown;
  /** For arrays longer than {@linkcode SHOWN_ARRAY_LENGTH}: the first elements. */
  head?: unknown[];
}

/**
 * The GGUF header a model reader read, if it is a GGUF file or split set
 * (the first shard's, whose pairs describe the set).
 *
 * @param reader A model reader.
 * @returns The header, or `undefined` for other formats.
 */
export function ggufHeaderOf(reader: unknown): GgufHeader | undefined {
  const r = reader as { gguf?: GgufHeader; ggufShards?: readonly GgufHeader[] };
  return r.gguf ?? r.ggufShards?.[0];
}

/**
 * Every key/value pair of a GGUF header, in file order.
 *
 * @param gguf The header.
 * @returns Key → the pair as shown.
 */
export function ggufKvView(gguf: GgufHeader): Record<string, GgufKvView> {
  const view: Record<string, GgufKvView> = {};
  for (const [key, entry] of gguf.kv) view[key] = kvView(entry);
  return view;
}

function kvView(entry: GgufKvEntry): GgufKvView {
  const type = ggufValueTypeName(entry.type);
  const value = toJson(entry.value);
  if (!Array.isArray(value)) return { type, value: shortenValue(value) };
  const arrayTypes = (entry.arrayTypes ?? []).map(ggufValueTypeName);
  return value.length > SHOWN_ARRAY_LENGTH
    ? {
      type,
      arrayTypes,
      length: value.length,
      head: value.slice(0, SHOWN_ARRAY_LENGTH).map((v) => shortenValue(v)),
    }
    : { type, arrayTypes, length: value.length, value: shortenValue(value) };
}

/**
 * One pair as one line of text: `TYPE value`, an array as
 * `ARRAY<STRING>[151936] ["!", "\"", …]`.
 *
 * @param view The pair as shown.
 * @returns The text (JSON values).
 */
export function ggufKvText(view: GgufKvView): string {
  if (view.type !== "ARRAY") return `${view.type} ${JSON.stringify(view.value)}`;
  const items = view.head ?? (view.value as unknown[]);
  const shown = items.map((v) => JSON.stringify(v)).join(", ");
  // An array of arrays of INT32 is ARRAY<ARRAY<INT32>>.
  const element = (view.arrayTypes ?? []).reduceRight(
    (inner, t) => inner ? `${t}<${inner}>` : t,
    "",
  );
  return `ARRAY<${element}>[${view.length}] [${shown}${view.head ? ", …" : ""}]`;
}

/**
 * File offsets of a single GGUF file's tensor payloads, by GGUF name.
 *
 * @param gguf The header.
 * @returns Name → absolute file offset.
 */
export function ggufTensorOffsets(gguf: GgufHeader): Map<string, number> {
  return new Map(gguf.tensors.map((t) => [t.name, gguf.dataOffset + t.offset]));
}

function toJson(v: unknown): unknown {
  if (typeof v === "bigint") return v.toString();
  if (Array.isArray(v)) return v.map(toJson);
  return v;
}
