// This module is browser compatible.

/**
 * Sentence-embedding facts shared by the families llama.cpp's converter
 * writes as embedders: the `{arch}.pooling_type` of a sentence-transformers
 * pooling module (`_try_set_pooling_type`, conversion/base.py), and the
 * tensor names of a headless decoder (`Qwen3Model`, `Qwen2Model`: the
 * causal LM's `model.` module saved without its prefix and without
 * `lm_head`), which the converter prefixes back (`name = f"model.{name}"`).
 *
 * @module
 */

import type { KvWriter } from "./kv.ts";
import { writeTextModelKv } from "./text_model.ts";

/**
 * gguf-py's `PoolingType` of the sentence-transformers modes the converter's
 * `_try_set_pooling_type` knows.
 */
const POOLING_TYPES: Readonly<Record<string, number>> = { mean: 1, cls: 2, lasttoken: 3 };

/**
 * `_try_set_pooling_type`: `{arch}.pooling_type` from the pooling module,
 * nothing when the model has none.
 *
 * @param w The writer, its `pooling` from `modules.json`.
 * @throws {RangeError} For a mode llama.cpp does not pool by (`max`, `weightedmean`).
 */
export function writePoolingType(w: KvWriter): void {
  if (w.pooling === undefined) return;
  const type = Object.hasOwn(POOLING_TYPES, w.pooling) ? POOLING_TYPES[w.pooling] : undefined;
  if (type === undefined) {
    throw new RangeError(
      `the sentence-transformers pooling "${w.pooling}" is not one llama.cpp pools by ` +
        `(${Object.keys(POOLING_TYPES).join(", ")})`,
    );
  }
  w.u32("pooling_type", type);
}

/**
 * The sentence-transformers pooling mode a GGUF's `{arch}.pooling_type`
 * says llama.cpp pools a sentence vector by (mean, CLS, last token), for an
 * APR reader (`embedding.pooling`); `undefined` for none, rank (a
 * reranker's) or a type the converter does not write.
 *
 * @param type The key's value.
 * @returns The mode.
 */
export function poolingOfGguf(type: unknown): string | undefined {
  return Object.entries(POOLING_TYPES).find(([, t]) => t === type)?.[0];
}

/**
 * `Qwen2Model.set_gguf_parameters` (Qwen3's too): the common keys, then the
 * pooling when the folder is a sentence-transformers model.
 *
 * @param w The writer.
 */
export function writePooledTextModelKv(w: KvWriter): void {
  writeTextModelKv(w);
  writePoolingType(w);
}

/**
 * A headless decoder's tensor under the causal LM's name: `layers.0.…`,
 * `embed_tokens`, `norm` → `model.…`; the causal LM's own names unchanged.
 *
 * @param name A Hugging Face tensor name.
 * @returns The name with the `model.` prefix.
 */
export function headlessHfName(name: string): string {
  return /^(model|lm_head)\./.test(name) ? name : `model.${name}`;
}
