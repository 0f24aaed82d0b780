// This module is browser compatible.

/**
 * The shared vocabulary of the stream protocol (DESIGN.md §2.2): a model is a
 * header chunk, then one chunk per tensor whose payload can be opened (and
 * re-opened) as a stream of bounded byte chunks.
 *
 * @module
 */

import type { DType } from "./dtype.ts";

/** Name, type, shape and exact payload size of one tensor. */
export interface TensorInfo {
  /** Tensor name, e.g. `"model.embed_tokens.weight"`. */
  readonly name: string;
  /** Element type of the payload. */
  readonly dtype: DType;
  /** Dimensions, outermost first (row-major); `[]` is a scalar. */
  readonly shape: readonly number[];
  /** Exact payload size in bytes. */
  readonly byteLength: number;
}

/**
 * APR v2 metadata (APR_V2.md §3). Known fields are typed; any other key is a
 * custom key kept in insertion order (`tokenizer.vocabulary`, `source_metadata`…).
 */
export interface ModelMetadata {
  /** Model kind, always written (`""` when unknown). */
  model_type?: string;
  /** Human-readable model name. */
  name?: string | null;
  /** Free-text description. */
  description?: string | null;
  /** Author or organisation. */
  author?: string | null;
  /** License identifier. */
  license?: string | null;
  /** Where the training data came from. */
  data_source?: string | null;
  /** License of the training data. */
  data_license?: string | null;
  /** Model version. */
  version?: string | null;
  /** Where the model was imported from, e.g. `"hf://org/name"`. */
  source?: string | null;
  /** Format imported from: `"safetensors"`, `"gguf"`. */
  original_format?: string | null;
  /** Creation time, as written by the producer. */
  created_at?: string | null;
  /** Sum of tensor payload bytes, always written. */
  total_size?: number;
  /** Number of parameters (elements), always written. */
  param_count?: number;
  /** How the weights were quantized, if they were. */
  quantization?: {
    /** Quantization name, e.g. `"q4_k"`. */
    quant_type: string;
    /** Bits per weight. */
    bits: number;
    /** Elements per block, or null. */
    block_size: number | null;
    /** Whether zero maps to zero. */
    symmetric: boolean;
  } | null;
  /** Which shard of a sharded set this file is. */
  sharding?: {
    /** Number of shards. */
    shard_count: number;
    /** This shard's index, from 0. */
    shard_index: number;
    /** Sum of tensor payload bytes, always written. */
    total_size: number;
    /** File name pattern of the shards. */
    pattern: string | null;
  } | null;
  /** Jinja chat template. */
  chat_template?: string | null;
  /** Name of the chat format. */
  chat_format?: string | null;
  /** Special token strings. */
  special_tokens?: {
    /** Beginning-of-sequence token. */
    bos_token?: string | null;
    /** End-of-sequence token. */
    eos_token?: string | null;
    /** Unknown token. */
    unk_token?: string | null;
    /** Padding token. */
    pad_token?: string | null;
    /** ChatML start token. */
    im_start_token?: string | null;
    /** ChatML end token. */
    im_end_token?: string | null;
  } | null;
  /** aprender/realizar architecture name, e.g. `"llama"`. */
  architecture?: string | null;
  /** Hugging Face class, e.g. `"LlamaForCausalLM"`. */
  hf_architecture?: string | null;
  /** Hugging Face `model_type`. */
  hf_model_type?: string | null;
  /** Embedding width. */
  hidden_size?: number | null;
  /** Transformer blocks. */
  num_layers?: number | null;
  /** Attention heads. */
  num_heads?: number | null;
  /** Key/value heads. */
  num_kv_heads?: number | null;
  /** Vocabulary size. */
  vocab_size?: number | null;
  /** Feed-forward width. */
  intermediate_size?: number | null;
  /** Context length. */
  max_position_embeddings?: number | null;
  /** RoPE base frequency. */
  rope_theta?: number | null;
  /** RoPE style: 0 NORM, 2 NEOX. */
  rope_type?: number | null;
  /** Normalization epsilon. */
  rms_norm_eps?: number | null;
  /** Width of one attention head. */
  head_dim?: number | null;
  /** Experts (mixture of experts). */
  num_experts?: number | null;
  /** Experts used per token. */
  num_experts_per_tok?: number | null;
  /** Feed-forward width of one expert. */
  moe_intermediate_size?: number | null;
  /** Custom keys (`tokenizer.vocabulary`, `source_metadata`…), kept in insertion order. */
  [custom: string]: unknown;
}

/** What a model holds, known before any tensor data is read. */
export interface ModelHeader {
  /** Source format: `"apr"`, `"safetensors"`, `"gguf"`. */
  readonly format: string;
  /** Metadata, already in APR's vocabulary. */
  readonly metadata: ModelMetadata;
  /** Every tensor, in the order their chunks will arrive. */
  readonly tensors: readonly TensorInfo[];
}

/** One tensor of a model stream: its info and a re-openable payload. */
export interface TensorEntry {
  /** Name, dtype, shape and exact size of the payload. */
  readonly info: TensorInfo;
  /**
   * Open the payload as a stream of bounded chunks (a few MiB at most) whose
   * lengths sum to `info.byteLength`. May be called again for a second pass.
   */
  open(): ReadableStream<Uint8Array>;
  /**
   * Open bytes `[start, end)` of the payload, when the source is random
   * access (a local or ranged file). Lets a transform read rows in another
   * order without holding the tensor (e.g. RoPE row layouts). Absent for
   * payloads computed on the fly.
   */
  readonly slice?: (start: number, end: number) => ReadableStream<Uint8Array>;
  /**
   * Optional, for resuming inside a tensor (DESIGN.md §2.3): whether the
   * payload can restart at byte `offset`, and what {@linkcode TensorEntry.openAt}
   * needs to do so (`state`, recorded by the sink in its journal; e.g. the
   * APR_Q8 scale its first pass found). `undefined`: not a restart point.
   * Asked only after `open()`'s stream delivered `offset` bytes. A payload
   * with `slice` and neither of these restarts anywhere (see {@linkcode restartOf}).
   */
  restartPoint?(offset: number): { readonly state?: string } | undefined;
  /**
   * Optional: the payload from byte `offset` on, where `offset` was a
   * {@linkcode TensorEntry.restartPoint} of an earlier run with that `state`
   * (read back from a file: validate it). `undefined` when it cannot restart
   * there; the caller then opens the payload from the start.
   */
  openAt?(offset: number, state?: string): ReadableStream<Uint8Array> | undefined;
}

/** How a payload restarts inside itself (see {@linkcode TensorEntry.restartPoint}). */
export type Restart = Required<Pick<TensorEntry, "restartPoint" | "openAt">>;

/**
 * An entry's restart support: its own `restartPoint`/`openAt`, or, for a
 * random-access payload (`slice`), every offset inside it, without state.
 *
 * @param entry The entry.
 * @returns Its restart support, or `undefined` when it has none.
 */
export function restartOf(entry: TensorEntry): Restart | undefined {
  const { restartPoint, openAt, slice } = entry;
  if (restartPoint !== undefined && openAt !== undefined) {
    return { restartPoint: (o) => restartPoint(o), openAt: (o, s) => openAt(o, s) };
  }
  if (slice === undefined) return undefined;
  const length = entry.info.byteLength;
  const inside = (o: number) => Number.isSafeInteger(o) && o > 0 && o < length;
  return {
    restartPoint: (o) => inside(o) ? {} : undefined,
    openAt: (o, state) => inside(o) && state === undefined ? slice(o, length) : undefined,
  };
}

/**
 * Random access and restart support of `source`, for an entry serving the
 * same bytes (a renamed copy, an unconverted payload).
 *
 * @param source The entry whose bytes are served.
 * @returns The fields to spread into the new entry.
 */
export function sameBytes(
  source: TensorEntry,
): Pick<TensorEntry, "slice" | "restartPoint" | "openAt"> {
  const restart = restartOf(source);
  return {
    ...(source.slice === undefined ? {} : { slice: source.slice }),
    ...(restart === undefined ? {} : restart),
  };
}

/** A chunk of a model stream: the header first, exactly once, then tensors in header order. */
export type ModelChunk =
  | { readonly type: "header"; readonly header: ModelHeader }
  | { readonly type: "tensor"; readonly tensor: TensorEntry };

/**
 * A model opened for reading: its header and random access to every tensor.
 * Every format reader (APR, SafeTensors, GGUF, sharded sets) provides one.
 */
export interface ModelReader {
  /** Header: format, APR-vocabulary metadata, tensor infos. */
  readonly header: ModelHeader;
  /** One entry per tensor, in `header.tensors` order. */
  readonly tensors: readonly TensorEntry[];
  /**
   * Optional: entry `index` of `tensors`, made afresh and kept by nobody.
   * {@linkcode modelChunks} streams through it when present, so a pass over
   * the model holds one entry at a time instead of one (and its closures)
   * per tensor (issue 34 §1: ~220 bytes a tensor, 56 MB for 261,000).
   */
  entry?(index: number): TensorEntry;
  /** Release files and connections. Safe to call twice. */
  close(): Promise<void>;
  /**
   * Check the bytes read against the checksums the file itself carries (an
   * APR footer CRC), reading what was not read yet; absent where the format
   * has none. Call it before keeping anything made from the model.
   */
  verify?(): Promise<void>;
}

/**
 * Turn a model reader into the stream protocol: the header chunk, then one
 * tensor chunk per entry. Pull-based: nothing is read until a consumer asks.
 * Never throws. Errors of the model reach the consumer through the stream.
 *
 * @param model The model to stream.
 * @returns A stream of {@linkcode ModelChunk}s.
 */
export function modelChunks(model: ModelReader): ReadableStream<ModelChunk> {
  let next = -1;
  const count = model.entry === undefined ? undefined : model.header.tensors.length;
  return new ReadableStream<ModelChunk>({
    pull(controller) {
      if (next === -1) {
        controller.enqueue({ type: "header", header: model.header });
      } else if (next < (count ?? model.tensors.length)) {
        const tensor = count === undefined ? model.tensors[next]! : model.entry!(next);
        controller.enqueue({ type: "tensor", tensor });
      } else {
        controller.close();
      }
      next++;
    },
  }, { highWaterMark: 0 });
}

/** Progress of a long operation (import, download, export), reported as it goes. */
export interface ProgressEvent {
  /** What is being done: `"import"`, `"download"`, `"verify"`, `"export"`. */
  readonly phase: string;
  /** Bytes done so far (including bytes skipped because a resume found them done). */
  readonly bytesDone: number;
  /** Bytes to do in all. */
  readonly bytesTotal: number;
  /** Items (tensors or files) done. */
  readonly itemsDone: number;
  /** Items in all. */
  readonly itemsTotal: number;
  /** The tensor or file being worked on. */
  readonly current?: string;
  /** Of `bytesDone`, the bytes a resume found already written (not processed by this run). */
  readonly resumedBytes?: number;
  /** Of `itemsDone`, the items a resume found already written. */
  readonly resumedItems?: number;
}

/** A callback receiving progress events. */
export type ProgressCallback = (event: ProgressEvent) => void;
