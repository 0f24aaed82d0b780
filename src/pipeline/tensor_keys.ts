/**
 * The tensors a family's GGUF holds as keys (`GgufSupport.tensorKeys`:
 * Apertus's per-layer xIELU scalars), read before the GGUF header is
 * written: a stream's header comes before its tensors, so the GGUF layout
 * holds the entries (not their payloads) until these have arrived, reads
 * their few values, and passes them on in the header's metadata
 * (`TENSOR_KEY_VALUES`), where the family's keys are made from them.
 *
 * @module
 */

import { elementCount } from "../dtype.ts";
import type { Family } from "../arch/family.ts";
import type { TensorEntry, TensorInfo } from "../tensor.ts";
import { decodedBytes } from "./dequantize_stream.ts";
import { wholePayload } from "./whole_payload.ts";

/**
 * The most values one such tensor may have: they are scalars, and each is
 * read whole into memory before the header.
 */
export const MAX_TENSOR_KEY_VALUES = 64;

/**
 * The names of a model's tensors its family writes as keys.
 *
 * @param tensors The model's tensors.
 * @param family Its family.
 * @returns The names, in the model's order (empty for most families).
 * @throws {RangeError} When one has more than {@linkcode MAX_TENSOR_KEY_VALUES} values
 * (checked before any is read).
 */
export function tensorKeyNames(tensors: readonly TensorInfo[], family: Family): Set<string> {
  const reads = family.gguf?.tensorKeys?.reads;
  const names = new Set<string>();
  if (reads === undefined) return names;
  for (const info of tensors) {
    if (!reads(info.name)) continue;
    const count = elementCount(info.shape);
    if (count > MAX_TENSOR_KEY_VALUES) {
      throw new RangeError(
        `Cannot convert tensor "${info.name}" to GGUF: the ${family.name} family writes it as a ` +
          `key, and it has ${count} values (at most ${MAX_TENSOR_KEY_VALUES})`,
      );
    }
    names.add(info.name);
  }
  return names;
}

/**
 * The values of the tensors, decoded from any float type.
 *
 * @param entries The tensors, in the model's order.
 * @returns Name → values, in that order.
 * @throws {RangeError} When a payload ends early or runs long.
 */
export async function readTensorKeyValues(
  entries: readonly TensorEntry[],
): Promise<Record<string, number[]>> {
  const out: Record<string, number[]> = {};
  for (const entry of entries) {
    const bytes = await wholePayload(
      decodedBytes(entry, "F32"),
      elementCount(entry.info.shape) * 4,
      entry.info.name,
    );
    out[entry.info.name] = [...new Float32Array(bytes.buffer)];
  }
  return out;
}
