// This module is browser compatible.

/**
 * Qwen3-Reranker: a `Qwen3ForCausalLM` whose score is the softmax of its
 * last position's logits over the tokens `yes` and `no`, after llama.cpp's
 * `Qwen3Model` (conversion/qwen.py `_is_qwen3_reranker`,
 * `_find_rerank_config`): told by a `# qwen3-reranker` heading in its
 * README, or `qwen3-reranker` in its folder's name, `_name_or_path`,
 * `model_type` or class; written with the `yes` and `no` rows of its output
 * layer as `cls.output` (the output layer itself dropped; kept as the token
 * embedding when tied), `pooling_type` rank, the labels, and its prompt as
 * the `rerank` chat template. llama.cpp's rank pooling then takes the last
 * token and softmaxes `[yes, no]` (`build_pooling`).
 *
 * APR keeps the model as it is and records `rerank.labels`,
 * `rerank.label_token_ids` and `rerank.template`, so a reader knows how to
 * score a pair.
 *
 * @module
 */

import type { ModelMetadata, TensorEntry, TensorInfo } from "../tensor.ts";
import { tensorByteLength } from "../dtype.ts";
import type { MadeTensor } from "./family.ts";
import type { KvWriter } from "./kv.ts";
import { concatPayloads, keepRanges } from "./transforms.ts";

/** The converter's `rerank` chat template: the prompt of Qwen3-Reranker's model card. */
export const QWEN3_RERANK_TEMPLATE = "<|im_start|>system\nJudge whether the Document meets " +
  'the requirements based on the Query and the Instruct provided. Note that the answer can only be "yes" or "no".' +
  "<|im_end|>\n<|im_start|>user\n<Instruct>: Given a web search query, retrieve relevant passages " +
  "that answer the query\n<Query>: {query}\n<Document>: {document}<|im_end|>\n" +
  "<|im_start|>assistant\n<think>\n\n</think>\n\n";

/** The labels, in `cls.output`'s row order. */
const LABELS = ["yes", "no"] as const;

/** What tells a Qwen3 checkpoint a reranker. */
export interface RerankerHints {
  /** aprkit's architecture name of the model (only `qwen3`'s converter class looks). */
  readonly architecture?: string | undefined;
  /** `README.md`'s text, when the folder has one. */
  readonly readme?: string | undefined;
  /** The model folder's name (the converter's `dir_model.name`). */
  readonly folder?: string | undefined;
  /** `config.json`. */
  readonly config: Readonly<Record<string, unknown>>;
}

/**
 * `_is_qwen3_reranker`: a README heading, or a name among the folder's,
 * `_name_or_path`, `model_type` and the class.
 *
 * @param hints The README, folder name and config.
 * @returns Whether the converter writes the model as a reranker.
 */
export function isQwen3Reranker(hints: RerankerHints): boolean {
  const readme = (hints.readme ?? "").toLowerCase();
  if (readme.includes("# qwen3-reranker") || readme.includes("# qwen3-vl-reranker")) return true;
  const architectures = hints.config["architectures"];
  const names = [
    hints.folder,
    hints.config["_name_or_path"],
    hints.config["model_type"],
    Array.isArray(architectures) ? architectures[0] : undefined,
  ].filter((n): n is string => typeof n === "string").map((n) => n.toLowerCase());
  if (names.some((n) => n.includes("qwen3-reranker") || n.includes("qwen3-vl-reranker"))) {
    return true;
  }
  const cls = Array.isArray(architectures) ? architectures[0] : undefined;
  return typeof cls === "string" && cls.toLowerCase().includes("sequenceclassification");
}

/**
 * The APR metadata of a Qwen3 model the converter writes as a reranker: its
 * labels, their token ids (the tokenizer's `convert_tokens_to_ids`; absent
 * when it has no such token, which GGUF output refuses), and its prompt.
 *
 * @param hints The architecture, README, folder name and config.
 * @param tokenId A token's id in the model's vocabulary, or `undefined`.
 * @returns `rerank.*` keys; none for another model.
 */
export function rerankerMetadata(
  hints: RerankerHints,
  tokenId: (token: string) => number | undefined,
): ModelMetadata {
  if (hints.architecture !== "qwen3" || !isQwen3Reranker(hints)) return {};
  const ids = LABELS.map(tokenId);
  return {
    "rerank.labels": [...LABELS],
    ...ids.every((id) => id !== undefined) ? { "rerank.label_token_ids": ids } : {},
    "rerank.template": QWEN3_RERANK_TEMPLATE,
  };
}

/**
 * `Qwen3Model.set_gguf_parameters` for a reranker: rank pooling, the labels
 * and the `rerank` template.
 *
 * @param w The writer, its `rerank` from the metadata.
 */
export function writeRerankKv(w: KvWriter): void {
  if (w.rerank === undefined) return;
  w.u32("pooling_type", 4); // gguf-py PoolingType.RANK
  w.setArray("classifier.output_labels", "STRING", w.rerank.labels);
  w.set("tokenizer.chat_template.rerank", "STRING", w.rerank.template);
  w.setArray("tokenizer.chat_templates", "STRING", ["rerank"]);
}

/**
 * Why a reranker cannot be written: its tokenizer has no `yes` or `no` token
 * (the converter's assertion fails).
 *
 * @param w The writer.
 * @returns The reason, or `undefined`.
 */
export function rerankRefusal(w: KvWriter): string | undefined {
  if (w.rerank === undefined || w.rerank.ids !== undefined) return undefined;
  return `it is a Qwen3-Reranker (its README or name says so), and its tokenizer has no ` +
    `"yes" or "no" token to score with`;
}

/**
 * `cls.output`, the `yes` and `no` rows of the output layer (the embedding
 * when `tie_word_embeddings`), where that tensor is; a tied embedding is
 * written after it as `token_embd`, an untied output layer not at all.
 *
 * @param tensors The model's tensors.
 * @param w The writer, its `rerank` from the metadata.
 * @returns The made tensors (none for a model that is not a reranker).
 * @throws {RangeError} When the output layer is missing or a label's row is past it.
 */
export function rerankTensors(tensors: readonly TensorInfo[], w: KvWriter): readonly MadeTensor[] {
  const ids = w.rerank?.ids;
  if (ids === undefined) return [];
  const tied = w.hparams["tie_word_embeddings"] === true;
  const names = tied ? ["model.embed_tokens.weight", "embed_tokens.weight"] : ["lm_head.weight"];
  const head = tensors.find((t) => names.includes(t.name));
  if (head === undefined || head.shape.length !== 2) {
    throw new RangeError(`the reranker has no ${names[0]} [vocab, hidden] to take its scores from`);
  }
  const [rows, cols] = head.shape as [number, number];
  const bad = ids.find((id) => id >= rows);
  if (bad !== undefined) {
    throw new RangeError(`token ${bad} is past the ${rows} rows of "${head.name}"`);
  }
  const rowBytes = tensorByteLength(head.dtype, [cols]);
  const row = (entry: TensorEntry, id: number) => () =>
    entry.slice?.(id * rowBytes, (id + 1) * rowBytes) ??
      keepRanges(entry.open(), [[id * rowBytes, (id + 1) * rowBytes]]);
  const shape = [ids.length, cols];
  const cls: MadeTensor = {
    info: {
      name: "cls.output.weight",
      dtype: head.dtype,
      shape,
      byteLength: tensorByteLength(head.dtype, shape),
    },
    needs: [head.name],
    open: ([entry]) => concatPayloads(ids.map((id) => row(entry!, id))),
  };
  if (!tied) return [cls];
  // Consumed for cls.output, the embedding is written too, after it, as the converter yields both.
  return [cls, {
    info: { ...head, name: "token_embd.weight" },
    needs: [head.name],
    open: ([entry]) => entry!.open(),
  }];
}

/**
 * Why a Qwen3-Reranker GGUF (`cls.output`) is not read back into Hugging
 * Face's layout: the converter kept only the `yes`/`no` rows of the output
 * layer (an untied reranker's `lm_head` is gone), and nothing in the file is
 * the model card that makes the causal LM a reranker.
 */
export const RERANKER_READ_BACK =
  "aprkit does not read a Qwen3-Reranker GGUF back into Hugging Face's layout (llama.cpp's " +
  "converter kept only the yes/no rows of its output layer, as cls.output); --keep-names keeps " +
  "its GGUF tensors";
