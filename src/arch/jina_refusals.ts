// This module is browser compatible.

/**
 * Jina embedders aprkit knows and writes no GGUF of, with why: their
 * Hugging Face classes belong to no family (their APR import keeps the
 * checkpoint's tensors as they are). jina-embeddings-v2 is the
 * `jina-bert-v2` family and jina-embeddings-v3's remote-code
 * `XLMRobertaModel` is refused by the XLM-RoBERTa family.
 *
 * @module
 */

/** Hugging Face class → why aprkit writes no GGUF of it. */
const REFUSALS: Readonly<Record<string, string>> = {
  // Measured: convert_hf_to_gguf.py on a tiny JinaEmbeddingsV3Model saved by transformers 5.18
  // fails with "Model JinaEmbeddingsV3Model is not supported".
  JinaEmbeddingsV3Model: "llama.cpp's converter has no class for transformers' " +
    "JinaEmbeddingsV3Model (it converts jina-embeddings-v3's remote-code XLMRobertaModel, with " +
    "its task LoRA adapters as GGUF files of their own), so there is no file of it to be equal to",
  // The converter registers it as its EuroBertModel, which reads no adapter.
  JinaEmbeddingsV5Model: "jina-embeddings-v5 is a base model with per-task LoRA adapters " +
    "(PEFT) that its remote code merges at load; llama.cpp's converter reads it as EuroBERT and " +
    "writes no adapter, so its file embeds as the base model, not as any v5 task, and aprkit " +
    "writes no GGUF of it",
};

/**
 * Why aprkit writes no GGUF of a Jina embedder's Hugging Face class, or
 * `undefined`.
 *
 * @param hfArchitecture `architectures[0]` of `config.json`.
 * @returns The reason, one sentence.
 */
export function jinaGgufRefusal(hfArchitecture: unknown): string | undefined {
  return typeof hfArchitecture === "string" && Object.hasOwn(REFUSALS, hfArchitecture)
    ? REFUSALS[hfArchitecture]
    : undefined;
}
