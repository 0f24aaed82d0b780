// This module is browser compatible.

/**
 * An image-text-to-text checkpoint's language model, as a model stream of
 * its own (`src/arch/multimodal.ts`): its tensors under the text family's
 * Hugging Face names (`model.layers.N.*`, `lm_head.weight`, whichever key
 * layout the checkpoint has), the vision tower and projector left out — or
 * kept under their Hugging Face names when asked (APR). What follows (Q/K
 * rows, tied embeddings, the GGUF layout) then sees a text model.
 *
 * @module
 */

import { mmprojSupport } from "../arch/mmproj.ts";
import { isMultimodalClass, languageModelName, MULTIMODAL_CLASSES } from "../arch/multimodal.ts";
import type { ModelChunk, ModelHeader, ModelMetadata } from "../tensor.ts";

/** Options of {@linkcode languageModelOnly}. */
export interface LanguageModelOptions {
  /** Keep the vision tower and projector, under their Hugging Face names. @default false */
  keepVision?: boolean;
  /** The output format, for the note (`gguf`: where the vision tower goes instead). */
  format: string;
  /** Where the vision GGUF goes (GGUF output), for the note. */
  mmproj?: string;
  /** Told in one line what was left out. */
  onNote?: (message: string) => void;
}

/** Whether a model is a multimodal checkpoint read from Hugging Face files. */
export function isMultimodalFromHf(metadata: ModelMetadata): boolean {
  return isMultimodalClass(metadata.hf_architecture) && metadata.original_format !== "gguf" &&
    (metadata.gguf_metadata === undefined || metadata.gguf_metadata === null);
}

/**
 * A header with the language model's tensors under the text family's names
 * (others unchanged): what the stream will carry, for checks made before it
 * runs. Other models' headers are returned as they are.
 *
 * @param header The source's header.
 * @returns The header as the text family names it.
 */
export function languageModelView(header: ModelHeader): ModelHeader {
  if (!isMultimodalFromHf(header.metadata)) return header;
  return {
    ...header,
    tensors: header.tensors.map((t) => ({ ...t, name: languageModelName(t.name) ?? t.name })),
  };
}

/**
 * The transform: a pass-through for other models.
 *
 * @param options What to keep and whom to tell.
 * @returns The transform.
 * @throws {RangeError} (from the stream) When two tensors would get the same name.
 */
export function languageModelOnly(
  options: LanguageModelOptions,
): TransformStream<ModelChunk, ModelChunk> {
  let names: Map<string, string | undefined> | undefined;
  return new TransformStream<ModelChunk, ModelChunk>({
    transform(chunk, controller) {
      if (chunk.type === "header") {
        const { header } = chunk;
        if (!isMultimodalFromHf(header.metadata)) {
          controller.enqueue(chunk);
          return;
        }
        names = new Map();
        const seen = new Set<string>();
        let left = 0;
        for (const info of header.tensors) {
          const text = languageModelName(info.name);
          const name = text ?? (options.keepVision === true ? info.name : undefined);
          if (name === undefined) {
            left++;
          } else if (seen.has(name)) {
            throw new RangeError(
              `Cannot take the language model out: "${info.name}" and another tensor are both "${name}"`,
            );
          } else {
            seen.add(name);
          }
          names.set(info.name, name);
        }
        const tensors = header.tensors.flatMap((info) => {
          const name = names!.get(info.name);
          return name === undefined ? [] : [{ ...info, name }];
        });
        if (left > 0) {
          options.onNote?.(
            leftOutNote(left, String(header.metadata.hf_architecture), options),
          );
        }
        controller.enqueue({ type: "header", header: { ...header, tensors } });
        return;
      }
      if (names === undefined) {
        controller.enqueue(chunk);
        return;
      }
      const name = names.get(chunk.tensor.info.name);
      if (name === undefined) return; // left out: its payload is never opened
      controller.enqueue({
        type: "tensor",
        tensor: { ...chunk.tensor, info: { ...chunk.tensor.info, name } },
      });
    },
  });
}

function leftOutNote(count: number, hfClass: string, options: LanguageModelOptions): string {
  const entry = Object.hasOwn(MULTIMODAL_CLASSES, hfClass)
    ? MULTIMODAL_CLASSES[hfClass]
    : undefined;
  const towers = entry?.towers ?? "the vision tower and projector";
  const tensors = `${towers} of this ${hfClass} (${count} tensors)`;
  if (options.mmproj !== undefined) {
    const caveat = mmprojSupport(hfClass)?.runtimeCaveat;
    return `${tensors} went to the vision GGUF "${options.mmproj}"; the output holds its language model` +
      (caveat === undefined ? "" : `. ${caveat}`);
  }
  const what = `${tensors} were left out; the output holds its language model`;
  if (options.format !== "gguf") {
    return `${what}. --keep-vision keeps them, under their Hugging Face names`;
  }
  if (mmprojSupport(hfClass) === undefined && entry?.mmprojElsewhere !== undefined) {
    return `${what}. aprkit writes no vision GGUF for this class; ${entry.mmprojElsewhere}`;
  }
  return mmprojSupport(hfClass) !== undefined
    ? `${what}. --mmproj FILE writes them as llama.cpp's vision GGUF`
    : `${what}. aprkit writes no vision GGUF for this class; llama.cpp makes one with its ` +
      `legacy scripts (tools/mtmd/legacy-models, docs/multimodal/llava.md)`;
}
