// Builders shared by the APR tests.
import { createHash } from "node:crypto";
import type { DType } from "../../../src/dtype.ts";
import type { ModelMetadata, TensorInfo } from "../../../src/tensor.ts";

/** sha256 of bytes, hex. */
export function sha256(bytes: Uint8Array): string {
  return createHash("sha256").update(bytes).digest("hex");
}

/** Little-endian f32 bytes. */
export function f32(values: number[]): Uint8Array {
  return new Uint8Array(new Float32Array(values).buffer);
}

/** Metadata of the golden vector (APR_V2.md §7). */
export const GOLDEN_METADATA: ModelMetadata = {
  model_type: "linear_regression",
  name: "golden-v2",
  version: "0.0.0-golden",
  created_at: "1700000000",
  total_size: 0,
  param_count: 8,
};

/** Tensors of the golden vector, in the order aprender's test adds them. */
export const GOLDEN_TENSORS: { name: string; dtype: DType; shape: number[]; data: Uint8Array }[] = [
  { name: "weights", dtype: "F32", shape: [8], data: f32([1, 2, 0.5, -0.5, 4, -2, 0.25, 8]) },
  { name: "bias", dtype: "F32", shape: [1], data: f32([0.125]) },
];

/** sha256 of tests/testdata/apr/golden-v2.apr. */
export const GOLDEN_SHA256 = "047642c8a09f5807466374928c28e370855ddb96f527d4445ee359a591594c2c";

/** Path of a test data file. */
export function testdata(path: string): string {
  return new URL(`../../testdata/${path}`, import.meta.url).pathname;
}

/** Deterministic pseudo-random bytes. */
export function bytesOf(length: number, seed: number): Uint8Array {
  const out = new Uint8Array(length);
  let x = (seed * 2654435761) >>> 0 || 1;
  for (let i = 0; i < length; i++) {
    x ^= x << 13;
    x >>>= 0;
    x ^= x >>> 17;
    x ^= x << 5;
    x >>>= 0;
    out[i] = x & 0xff;
  }
  return out;
}

/** A TensorInfo with its byte length. */
export function info(name: string, dtype: DType, shape: number[], byteLength: number): TensorInfo {
  return { name, dtype, shape, byteLength };
}
