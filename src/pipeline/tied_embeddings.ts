// This module is browser compatible.

/**
 * Tied embeddings across formats. Hugging Face and GGUF models whose output
 * layer shares the embedding matrix store it once (no `lm_head.weight`).
 * realizar's APR forward pass reads a shared `embed_tokens` matrix as
 * `[hidden, vocab]` (GGUF's layout), which is wrong for the `[vocab, hidden]`
 * matrix of a Hugging Face name, so aprender's importer writes an explicit
 * `lm_head.weight` copy and records `tied_embeddings: true`. aprkit does the
 * same on APR output, and drops the copy again when exporting to SafeTensors
 * or GGUF, whose readers tie the weights themselves.
 *
 * @module
 */

import type { ModelChunk, ModelHeader, TensorEntry } from "../tensor.ts";
import { sameBytes } from "../tensor.ts";

/** Name of the output projection in Hugging Face naming. */
export const LM_HEAD = "lm_head.weight";
/** Name of the token embedding in Hugging Face naming. */
export const EMBED_TOKENS = "model.embed_tokens.weight";

/**
 * Whether a header describes a transformer LM whose output layer is tied to
 * its embedding and not stored: an embedding, no `lm_head.weight`, a known
 * architecture, `tied_embeddings` not `false` (a Hugging Face config
 * sets it from `tie_word_embeddings` or its class's default, see
 * `tiedWordEmbeddings`), and no sentence pooling (an embedder, read from
 * GGUF under a causal LM's names, outputs its pooled hidden states: it has
 * no output layer).
 *
 * @param header The model header.
 * @returns `true` when an explicit `lm_head.weight` should be written.
 */
export function needsTiedLmHead(header: ModelHeader): boolean {
  const names = new Set(header.tensors.map((t) => t.name));
  return names.has(EMBED_TOKENS) && !names.has(LM_HEAD) &&
    typeof header.metadata.architecture === "string" && header.metadata.tied_embeddings !== false &&
    header.metadata["embedding.pooling"] === undefined;
}

/**
 * Add `lm_head.weight` as a second entry over the embedding's payload, right
 * after the embedding, and set `tied_embeddings: true`. Nothing is buffered:
 * the new entry re-opens the embedding's source when the sink reads it.
 *
 * @param onNote Told in one line when a copy is added, and why.
 * @returns The transform (a pass-through for models that need nothing).
 */
export function addTiedLmHead(
  onNote?: (message: string) => void,
): TransformStream<ModelChunk, ModelChunk> {
  let active = false;
  return new TransformStream<ModelChunk, ModelChunk>({
    transform(chunk, controller) {
      if (chunk.type === "header") {
        active = needsTiedLmHead(chunk.header);
        if (!active) {
          controller.enqueue(chunk);
          return;
        }
        onNote?.(tiedNote(chunk.header));
        const tensors = chunk.header.tensors.flatMap((t) =>
          t.name === EMBED_TOKENS ? [t, { ...t, name: LM_HEAD }] : [t]
        );
        controller.enqueue({
          type: "header",
          header: {
            ...chunk.header,
            metadata: { ...chunk.header.metadata, tied_embeddings: true },
            tensors,
          },
        });
        return;
      }
      controller.enqueue(chunk);
      if (active && chunk.tensor.info.name === EMBED_TOKENS) {
        const embed: TensorEntry = chunk.tensor;
        controller.enqueue({
          type: "tensor",
          tensor: {
            info: { ...embed.info, name: LM_HEAD },
            open: () => embed.open(),
            ...sameBytes(embed),
          },
        });
      }
    },
  });
}

function tiedNote(header: ModelHeader): string {
  const embed = header.tensors.find((t) => t.name === EMBED_TOKENS)!;
  const mib = (embed.byteLength / 2 ** 20).toFixed(1);
  const meta = header.metadata;
  const why = meta.tied_embeddings === true
    ? `the model ties its output layer to its embedding (tie_word_embeddings${
      typeof meta.hf_model_type === "string"
        ? `, set in config.json or by default for ${meta.hf_model_type}`
        : ""
    })`
    : "the model stores no lm_head.weight and nothing says its embeddings are untied";
  return `adding lm_head.weight as a copy of ${EMBED_TOKENS} (${mib} MiB): ${why}, and realizar reads an explicit output layer`;
}

/**
 * Drop an `lm_head.weight` that `tied_embeddings: true` marks as a copy of
 * the embedding (for SafeTensors and GGUF output, whose readers tie it).
 *
 * @returns The transform.
 */
export function dropTiedLmHead(): TransformStream<ModelChunk, ModelChunk> {
  let active = false;
  return new TransformStream<ModelChunk, ModelChunk>({
    transform(chunk, controller) {
      if (chunk.type === "header") {
        const names = new Set(chunk.header.tensors.map((t) => t.name));
        active = chunk.header.metadata.tied_embeddings === true && names.has(LM_HEAD) &&
          names.has(EMBED_TOKENS);
        controller.enqueue(
          active
            ? {
              type: "header",
              header: {
                ...chunk.header,
                tensors: chunk.header.tensors.filter((t) => t.name !== LM_HEAD),
              },
            }
            : chunk,
        );
        return;
      }
      if (!(active && chunk.tensor.info.name === LM_HEAD)) controller.enqueue(chunk);
    },
  });
}
