// This module is browser compatible.

/**
 * XLM-RoBERTa sentence embedders (`XLMRobertaModel`: multilingual-e5,
 * bge-m3) and cross-encoders (`XLMRobertaForSequenceClassification`:
 * bge-reranker), after llama.cpp's `XLMRobertaModel` (conversion/bert.py):
 * BERT's graph and names (GGUF `bert`), a `roberta.` prefix dropped, the
 * position embedding's first `pad_token_id + 1` rows cut (RoBERTa counts
 * positions from there) and `context_length` lowered by as many, the
 * classification head's `dense` and `out_proj` as `cls` and `cls.output`,
 * and the SentencePiece Unigram vocabulary as llama.cpp's `t5` one
 * (`src/tokenizer/t5_vocab.ts`).
 *
 * @module
 */

import type { Family, MadeTensor } from "../family.ts";
import type { KvWriter } from "../kv.ts";
import { keepRanges } from "../transforms.ts";
import { tensorByteLength } from "../../dtype.ts";
import type { TensorInfo } from "../../tensor.ts";
import { BERT, BERT_FIELDS, writeBertKv } from "./bert.ts";

/** `_xlmroberta_tokenizer_init`: positions start past the padding id; `undefined` without one. */
function positionOffset(w: KvWriter): number | undefined {
  const pad = w.num("pad_token_id");
  return pad === undefined ? undefined : pad + 1;
}

/** BERT's keys, `context_length` lowered by the position offset as the converter lowers it. */
function writeXlmRobertaKv(w: KvWriter): void {
  const offset = positionOffset(w);
  const max = w.num("max_position_embeddings");
  if (offset === undefined || max === undefined) return writeBertKv(w);
  w.writeOver({ ...w.hparams, max_position_embeddings: max - offset }, writeBertKv);
}

/** The converter's reading of a name: `roberta.` dropped, then BERT's. */
function hfName(name: string): string {
  return BERT.gguf!.hfName!(name.replace(/^roberta\./, ""));
}

/** The position embedding without its first `offset` rows. */
function positionTensor(tensors: readonly TensorInfo[], w: KvWriter): readonly MadeTensor[] {
  const offset = positionOffset(w);
  const source = tensors.find((t) => hfName(t.name) === "embeddings.position_embeddings.weight");
  if (offset === undefined || source === undefined) return [];
  const [rows, cols] = source.shape as [number, number];
  if (source.shape.length !== 2 || rows <= offset) {
    throw new RangeError(
      `"${source.name}" [${source.shape}] has no rows past pad_token_id + 1 (${offset})`,
    );
  }
  const shape = [rows - offset, cols];
  const rowBytes = tensorByteLength(source.dtype, [cols]);
  return [{
    info: {
      name: "position_embd.weight",
      dtype: source.dtype,
      shape,
      byteLength: tensorByteLength(source.dtype, shape),
    },
    needs: [source.name],
    open: ([entry]) => keepRanges(entry!.open(), [[offset * rowBytes, rows * rowBytes]]),
  }];
}

/**
 * jina-embeddings-v3 (`XLMRobertaModel` as jinaai's XLMRobertaLoRA remote
 * code, its config naming `lora_adaptations`): the converter writes it as
 * `jina-bert-v3` (RoPE, fused QKV) and each task's LoRA weights as an
 * adapter GGUF of its own beside the model, to be applied at run time;
 * aprkit writes neither.
 */
function jinaV3Refusal(w: KvWriter): string | undefined {
  if (w.hparams["lora_adaptations"] === undefined) return undefined;
  return "its config.json has lora_adaptations (jina-embeddings-v3): llama.cpp's converter " +
    "writes it as jina-bert-v3 with one LoRA adapter GGUF per task beside the model, and aprkit " +
    "writes neither";
}

/** XLM-RoBERTa. */
export const XLM_ROBERTA: Family = {
  ...BERT,
  configFields: BERT_FIELDS,
  name: "xlm-roberta",
  source: "llama.cpp conversion/bert.py XLMRobertaModel; transformers XLMRobertaModel",
  hfArchitectures: ["XLMRobertaModel", "XLMRobertaForSequenceClassification"],
  hfModelTypes: ["xlm-roberta"],
  globalNames: [
    ...BERT.globalNames!,
    ["cls", "classifier.dense"],
    ["cls.output", "classifier.out_proj"],
  ],
  t5Vocabulary: true,
  // A `bert` GGUF with a t5 vocabulary; read back, it keeps its GGUF names: the converter cut the
  // position embedding's first pad_token_id + 1 rows, which a read-back cannot give again.
  ggufClaims: (_, metadata) => metadata["tokenizer.model_type"] === "t5",
  ggufNamesKept: true,
  gguf: {
    ...BERT.gguf!,
    writeKv: writeXlmRobertaKv,
    made: positionTensor,
    hfName,
    drops: (name, w) => BERT.gguf!.drops!(name.replace(/^roberta\./, ""), w),
    unsupported: jinaV3Refusal,
  },
};
