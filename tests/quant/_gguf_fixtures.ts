/**
 * Test helpers: the GGUF fixtures' manifests (tests/testdata/README.md) and a
 * minimal GGUF tensor-table reader for the F32 file, which has no manifest.
 *
 * @module
 */

import { createHash } from "node:crypto";
import type { DType } from "../../src/dtype.ts";

const DIR = new URL("../testdata/gguf/", import.meta.url);

/** One tensor of a manifest. */
export interface ManifestTensor {
  name: string;
  type: DType;
  ne: number[];
  numpy_shape: number[];
  abs_offset: number;
  n_bytes: number;
  raw_sha256: string;
  f32_sha256: string;
}

/** A fixture file's manifest. */
export interface Manifest {
  file: string;
  tensors: ManifestTensor[];
}

/** Read a fixture's bytes and manifest. */
export function loadFixture(stem: string): { bytes: Uint8Array; manifest: Manifest } {
  const manifest = JSON.parse(
    Deno.readTextFileSync(new URL(`${stem}.manifest.json`, DIR)),
  ) as Manifest;
  return { bytes: Deno.readFileSync(new URL(`${stem}.gguf`, DIR)), manifest };
}

/** sha256 hex of bytes. */
export function sha256(bytes: Uint8Array | Float32Array): string {
  return createHash("sha256")
    .update(new Uint8Array(bytes.buffer, bytes.byteOffset, bytes.byteLength))
    .digest("hex");
}

/** A tensor of a GGUF file located by the minimal reader. */
export interface GgufTensor {
  name: string;
  ggmlType: number;
  ne: number[];
  offset: number;
}

/** Read the tensor table of a GGUF v2/v3 file (test-only; no validation). */
export function readGgufTensors(file: string): { bytes: Uint8Array; tensors: GgufTensor[] } {
  const bytes = Deno.readFileSync(new URL(file, DIR));
  const dv = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  let p = 8;
  const u32 = () => {
    const v = dv.getUint32(p, true);
    p += 4;
    return v;
  };
  const u64 = () => {
    const v = Number(dv.getBigUint64(p, true));
    p += 8;
    return v;
  };
  const str = () => {
    const n = u64();
    const s = new TextDecoder().decode(bytes.subarray(p, p + n));
    p += n;
    return s;
  };
  const sizes: Record<number, number> = {
    0: 1,
    1: 1,
    2: 2,
    3: 2,
    4: 4,
    5: 4,
    6: 4,
    7: 1,
    10: 8,
    11: 8,
    12: 8,
  };
  const skip = (type: number): number | undefined => {
    if (type === 8) {
      str();
      return undefined;
    }
    if (type === 9) {
      const et = u32();
      const n = u64();
      for (let i = 0; i < n; i++) skip(et);
      return undefined;
    }
    const v = type === 4 ? dv.getUint32(p, true) : undefined;
    p += sizes[type]!;
    return v;
  };
  const nTensors = u64();
  const nKv = u64();
  let alignment = 32;
  for (let i = 0; i < nKv; i++) {
    const key = str();
    const v = skip(u32());
    if (key === "general.alignment" && v !== undefined) alignment = v;
  }
  const tensors: GgufTensor[] = [];
  for (let i = 0; i < nTensors; i++) {
    const name = str();
    const nd = u32();
    const ne: number[] = [];
    for (let d = 0; d < nd; d++) ne.push(u64());
    const ggmlType = u32();
    tensors.push({ name, ggmlType, ne, offset: u64() });
  }
  const start = Math.ceil(p / alignment) * alignment;
  for (const t of tensors) t.offset += start;
  return { bytes, tensors };
}
