/**
 * A GGUF file compared with a manifest of llama.cpp's file
 * (`tests/testdata/<set>/llama.cpp/<name>.json`): tensors (names, types, `ne`,
 * bytes) and KV pairs (type, value), one line per difference.
 */

import type { GgufManifest, ManifestKv } from "./_families.ts";

/** Keys whose values may legitimately differ from the converter's, and why. None so far. */
const DIFFERING_KEYS: Readonly<Record<string, string>> = {};

/** How a GGUF file differs from a manifest of llama.cpp's: one line per difference. */
export function manifestDifferences(
  mine: { kv: ManifestKv[]; tensors: GgufManifest["tensors"] },
  theirs: GgufManifest,
): string[] {
  const out: string[] = [];
  const mineTensors = new Map(mine.tensors.map((t) => [t.name, t]));
  const theirNames = new Set(theirs.tensors.map((t) => t.name));
  const missing = theirs.tensors.filter((t) => !mineTensors.has(t.name)).map((t) => t.name);
  const extra = mine.tensors.filter((t) => !theirNames.has(t.name)).map((t) => t.name);
  if (missing.length > 0) out.push(`tensors missing: ${missing.join(", ")}`);
  if (extra.length > 0) out.push(`tensors llama.cpp does not write: ${extra.join(", ")}`);
  for (const ref of theirs.tensors) {
    const got = mineTensors.get(ref.name);
    if (got === undefined) continue;
    if (got.type !== ref.type) out.push(`${ref.name}: type ${got.type}, llama.cpp ${ref.type}`);
    else if (JSON.stringify(got.ne) !== JSON.stringify(ref.ne)) {
      out.push(`${ref.name}: ne ${JSON.stringify(got.ne)}, llama.cpp ${JSON.stringify(ref.ne)}`);
    } else if (got.sha256 !== ref.sha256) out.push(`${ref.name}: bytes differ`);
  }
  const mineKv = new Map(mine.kv.map((e) => [e.key, e]));
  const theirKeys = new Set(theirs.kv.map((e) => e.key));
  for (const ref of theirs.kv) {
    if (ref.key in DIFFERING_KEYS) continue;
    const got = mineKv.get(ref.key);
    if (got === undefined) {
      out.push(`KV ${ref.key} missing (llama.cpp: ${short(ref.value)})`);
      continue;
    }
    const a = JSON.stringify({ type: got.type, array_types: got.array_types, value: got.value });
    const b = JSON.stringify({ type: ref.type, array_types: ref.array_types, value: ref.value });
    if (a !== b) out.push(`KV ${ref.key}: ${short(a)}, llama.cpp ${short(b)}`);
  }
  for (const e of mine.kv) {
    if (!theirKeys.has(e.key) && !(e.key in DIFFERING_KEYS)) {
      out.push(`KV ${e.key} = ${short(e.value)} is not in llama.cpp's file`);
    }
  }
  return out;
}

function short(value: unknown): string {
  const s = typeof value === "string" ? value : JSON.stringify(value);
  return s.length > 120 ? `${s.slice(0, 117)}...` : s;
}
