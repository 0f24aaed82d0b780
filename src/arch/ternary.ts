// This module is browser compatible.

/**
 * BitNet b1.58's weights as llama.cpp's converter writes them
 * (`BitnetModel.weight_quant`, conversion/bitnet.py): each projection
 * rounded to ternary with its mean absolute value as the scale, in float32
 * as torch computes it — `scale = mean(|w|).clamp(min=1e-5)`,
 * `iscale = 1 / scale`, `(w · iscale).round().clamp(−1, 1) / iscale`, back
 * in the tensor's type.
 *
 * torch sums in float32 (cascade summation); the mean here is the float64
 * sum rounded once to float32, then divided in float32 — the same wherever
 * torch's float32 sum is the correctly rounded one (always for weights that
 * are already ternary × a power of two, as the fixture's are).
 *
 * @module
 */

import type { TensorEntry } from "../tensor.ts";
import { mapFloatsInType } from "./transforms.ts";

/** `round()` as torch rounds: halves to even, the sign of zero kept. */
function roundHalfEven(x: number): number {
  return Math.abs(x % 1) === 0.5 ? 2 * Math.round(x / 2) : Math.round(x);
}

/** mean(|w|) of an F32 or BF16 payload, as float32 (see the module's note). */
async function meanAbs(source: TensorEntry, dtype: "F32" | "BF16"): Promise<number> {
  let sum = 0;
  let count = 0;
  const values = mapFloatsInType(source.open(), dtype, (v) => {
    sum += Math.abs(v);
    count++;
    return v;
  });
  for await (const _ of values) { /* the sum is taken as the values pass */ }
  return Math.fround(Math.fround(sum) / count);
}

/**
 * A projection rounded to ternary × its scale, in its type (F32 or BF16).
 * The payload is read twice: once for the scale, once for the values.
 *
 * @param source The tensor.
 * @param dtype Its type.
 * @returns The rounded payload, in the same type.
 * @throws {RangeError} (from the stream) When the payload is not whole values.
 */
export function ternaryWeights(
  source: TensorEntry,
  dtype: "F32" | "BF16",
): ReadableStream<Uint8Array> {
  return ReadableStream.from((async function* () {
    const scale = Math.max(await meanAbs(source, dtype), Math.fround(1e-5));
    const iscale = Math.fround(1 / scale);
    yield* mapFloatsInType(source.open(), dtype, (v) => {
      const q = Math.min(1, Math.max(-1, roundHalfEven(Math.fround(v * iscale))));
      return Math.fround(q / iscale);
    });
  })());
}
