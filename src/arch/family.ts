// This module is browser compatible.

/**
 * What aprkit knows about one model family (DESIGN.md §2.5a): the shape of
 * an entry in the family registry. Each family is one module under
 * `families/`, following one upstream source (a llama.cpp converter class,
 * a transformers model), registered in `registry.ts`.
 *
 * This layer sits below `pipeline/` and is read by `formats/` and `quant/`:
 * it imports neither, only `tensor.ts`.
 *
 * @module
 */

import type { ModelMetadata, TensorEntry, TensorInfo } from "../tensor.ts";
import type { ConfigFields } from "./config_fields.ts";
import type { KvWriter } from "./kv.ts";
import type { TiktokenFacts } from "../tokenizer/tiktoken_vocab.ts";

/**
 * One tensor stacked from per-expert tensors: Hugging Face stores
 * `model.layers.L.<prefix>.E.<hf>.weight` per expert E, GGUF one 3-D
 * `blk.L.<gguf>.weight` of shape `[experts, rows, cols]`.
 */
export interface ExpertStack {
  /** The Hugging Face piece after the expert index (`w1`, `gate_proj`). */
  readonly hf: string;
  /** The GGUF base name (`ffn_gate_exps`). */
  readonly gguf: string;
}

/** How a family's Hugging Face experts are laid out. */
export interface ExpertLayout {
  /** The module holding the experts, below the layer (`block_sparse_moe.experts`, `mlp.experts`). */
  readonly prefix: string;
  /** The stacked tensors, in the order llama.cpp's converter writes them. */
  readonly stacks: readonly ExpertStack[];
  /**
   * transformers 5's own layout, already stacked: `<prefix>.gate_up_proj`
   * (`[experts, 2 × ff, hidden]`, split into the gate and up stacks) and
   * `<prefix>.down_proj`. Maps the piece to the GGUF names it becomes.
   */
  readonly stacked?: readonly (readonly [string, readonly string[]])[];
  /**
   * Whether a `stacked` tensor (its piece, shape, and the model's hidden size)
   * holds each expert's matrix transposed, `[in, out]` (Llama 4 always;
   * Qwen3-VL-MoE's Hub checkpoints, told from the shape): `gate_up_proj`
   * `[experts, hidden, 2 × ff]`, `down_proj` `[experts, ff, hidden]`. The
   * split is then by columns, each part transposed on the way to GGUF as the
   * family's converter does. `undefined` when the shape fits both layouts.
   * Absent: never transposed.
   */
  readonly transposedStack?: (
    piece: string,
    shape: readonly number[],
    hidden: number,
  ) => boolean | undefined;
}

/** A key's value as config fields nobody writes imply it ({@linkcode GgufSupport.impliedKeys}). */
export interface ImpliedKey {
  /** The key after `{arch}.` (`ssm.inner_size`). */
  readonly key: string;
  readonly value: number;
  /** The fields it follows from, with their values, for the message (`expand 3 × hidden_size 64`). */
  readonly from: string;
}

/** The layers a config makes MoE layers ({@linkcode GgufSupport.moeLayers}). */
export interface MoeLayers {
  /** Per layer: whether it has experts. */
  readonly moe: readonly boolean[];
  /** The fields that say so, with their values, for the message. */
  readonly from: string;
}

/**
 * The layers a config gives a tensor of one kind, where llama.cpp tells
 * them by their tensors ({@linkcode GgufSupport.layerTensors}).
 */
export interface LayerTensors {
  /** gguf-py's `MODEL_TENSOR` name of the tensor (`ATTN_NORM_2`). */
  readonly kind: string;
  /**
   * The kind a layer has in its place (`ATTN_NORM`): a checkpoint with
   * neither is a fragment, not judged by them.
   */
  readonly instead: string;
  /** Per layer: whether it has one. */
  readonly has: readonly boolean[];
  /** The fields that say so, with their values, for the message. */
  readonly from: string;
  /** The tensor with its article, for the message (`a second LayerNorm (ln_attn)`). */
  readonly tensor: string;
  /** A layer with it and one without, for the message (`two LayerNorms`, `one`). */
  readonly with: string;
  readonly without: string;
  /**
   * Per layer, the rows transformers builds it with, where llama.cpp reads
   * its width off the tensor (Laguna's attention gate: per head or per
   * element, by `gating`).
   */
  readonly rows?: readonly number[];
}

/** A tensor a family adds for GGUF (e.g. `rope_freqs.weight`), made from the config alone. */
export interface GeneratedTensor {
  /** GGUF name. */
  readonly name: string;
  /** Its values (a 1-D F32 tensor). */
  readonly values: Float32Array;
}

/**
 * A tensor a family makes that contradicts the config it is made by (Qwen4-Exp's
 * n-gram table with other rows than its heads' vocabularies padded as the config
 * says), thrown by {@linkcode GgufSupport.made}: the shape check reports it as
 * the tensor's problem, before any output.
 */
export class TensorConfigMismatch extends RangeError {
  /**
   * @param tensor The checkpoint tensor's name.
   * @param reason What is wrong, naming the config fields.
   */
  constructor(readonly tensor: string, readonly reason: string) {
    super(`Cannot convert "${tensor}" to GGUF: ${reason}`);
    this.name = "TensorConfigMismatch";
  }
}

/**
 * A GGUF tensor a family makes itself from Hugging Face tensors, where a
 * rename or a stack is not enough (gpt-oss's transposed, interleaved
 * experts; its MXFP4 blocks repacked to ggml's layout).
 */
export interface MadeTensor {
  /** The GGUF tensor: name, type, shape, size. */
  readonly info: TensorInfo;
  /**
   * The Hugging Face tensors it is made from, in the model's order (none of
   * them is written otherwise).
   */
  readonly needs: readonly string[];
  /**
   * Written before every other tensor, as the converter's
   * `generate_extra_tensors` writes them; otherwise where its last source is.
   */
  readonly first?: boolean;
  /**
   * The payload, streamed from the sources (in the order of `needs`).
   *
   * @param sources The entries of `needs`.
   */
  open(sources: readonly TensorEntry[]): ReadableStream<Uint8Array>;
}

/**
 * Small Hugging Face tensors the converter writes as GGUF keys, not tensors
 * (Apertus's per-layer xIELU scalars, read with `.item()` in its
 * `modify_tensors`): the pipeline reads their values before the header is
 * written, and the keys follow `general.architecture` as the converter adds
 * them while making tensors.
 */
export interface TensorKeys {
  /**
   * Whether a tensor is one of them (read, and not written as a tensor).
   *
   * @param name The tensor's Hugging Face name.
   */
  reads(name: string): boolean;
  /**
   * Write the keys.
   *
   * @param w The writer, over the model's `config.json`.
   * @param values Each tensor `reads` claims, in the model's order, with its values.
   * @throws {RangeError} When a tensor the keys need is missing or not one value.
   */
  write(w: KvWriter, values: readonly (readonly [string, readonly number[]])[]): void;
  /**
   * The tensors again from a GGUF's keys, for a GGUF read back into the
   * checkpoint's layout (F32, in the checkpoint's order).
   *
   * @param kv A key's value in the GGUF (`undefined` when it has none).
   * @throws {RangeError} When a key they need is missing or malformed.
   */
  back(kv: (key: string) => unknown): readonly KeyTensor[];
}

/** A tensor made again from GGUF keys (see {@linkcode TensorKeys.back}). */
export interface KeyTensor {
  /** Hugging Face name. */
  readonly name: string;
  /** Shape (`[]` for a scalar). */
  readonly shape: readonly number[];
  /** Its values. */
  readonly values: readonly number[];
}

/**
 * A whole-model tensor stacked from numbered ones: `<hf>.0.weight`,
 * `<hf>.1.weight`, … → `<gguf>.weight` of shape `[count, rows, cols]`
 * (Gemma 3n's AltUp projections).
 */
export interface GlobalStack {
  /** The Hugging Face base name before the index (`model.altup_projections`). */
  readonly hf: string;
  /** The GGUF base name (`altup_proj`). */
  readonly gguf: string;
}

/**
 * A checkpoint tensor joined again from the GGUF tensors the converter split
 * it into ({@linkcode GgufSupport.joinedBack}). Each part is cut into
 * `blocks` equal blocks along its first axis; the tensor is every part's
 * first block in the parts' order, then every part's second, and so on
 * (DeepSeek's `kv_b_proj`: per head, the key rows, then the value rows; one
 * block: the parts one after another).
 */
export interface JoinedTensor {
  /** The checkpoint tensor's name. */
  readonly name: string;
  /** Its shape. */
  readonly shape: readonly number[];
  /** The GGUF tensors it is joined from, in order, each once. */
  readonly parts: readonly JoinedPart[];
  /** Blocks each part is cut into. */
  readonly blocks: number;
}

/** A GGUF tensor that is a part of a {@linkcode JoinedTensor}. */
export interface JoinedPart {
  /** Its GGUF name. */
  readonly name: string;
  /**
   * Whether the converter transposed each block, a matrix of the part's last
   * two axes (DeepSeek's `attn_k_b`: `[kv_lora, nope]` per head, the
   * checkpoint's `[nope, kv_lora]`), so it is transposed back.
   */
  readonly transposed?: boolean;
}

/** What a family needs to be written as llama.cpp's GGUF. */
export interface GgufSupport {
  /**
   * The converter class converts every matrix to its `--outtype`, MoE
   * routers too, where others keep them in F32 (DBRX's `tensor_force_quant`
   * returns `n_dims > 1`).
   */
  readonly quantizesEveryMatrix?: boolean;
  /**
   * Matrices (GGUF names) its converter class converts to its `--outtype`
   * though the converter's F32 list names their kind: the list is matched
   * with the block number of the checkpoint's name, which a tensor renamed
   * into another block misses (Nemotron-H's multi-token-prediction router,
   * `mtp.layers.1.mixer.gate` written as the block after the trunk's).
   *
   * @param hparams `config.json`.
   */
  convertedAnyway?(hparams: Readonly<Record<string, unknown>>): readonly string[];
  /**
   * Write the family's `{arch}.*` keys and `general.file_type` (via
   * `w.fileType()`), in the order llama.cpp's converter's
   * `set_gguf_parameters` does.
   *
   * @param w The writer, over the model's `config.json`.
   */
  writeKv(w: KvWriter): void;
  /**
   * Keys its converter class writes in its constructor, after
   * `general.architecture` and before every other (DeepSeek-V4's default
   * chat template, which a model's own replaces in that place).
   *
   * @param w The writer, over the model's `config.json`.
   * @param folderName The model folder's name (the converter's `dir_model.name`), when known.
   */
  writeEarlyKv?(w: KvWriter, folderName: string | undefined): void;
  /**
   * `general.file_type` its converter class files every `--outtype` under
   * (DeepSeek-V4: `MOSTLY_MXFP4_MOE`, 38).
   */
  readonly fileType?: number;
  /**
   * Whether its converter class keeps each float tensor in its source type
   * whatever `--outtype` (DeepSeek-V4's `tensor_force_quant`: F32 as F32, a
   * BF16 matrix as BF16; 1-D tensors F32 as always).
   */
  readonly keepsSourceFloats?: boolean;
  /**
   * Whether its converter class writes each matrix it dequantized from the
   * checkpoint's FP8 blocks as Q8_0 whatever `--outtype` (DeepSeek-V4's
   * `tensor_force_quant` on `_dsv4_fp8_dequantized`).
   */
  readonly fp8AsQ8_0?: boolean;
  /**
   * Why llama.cpp could not run a config of the family as written (it reads
   * no key for something the config sets otherwise than it assumes), or
   * `undefined` when it can: such a model's GGUF is refused.
   *
   * @param w The writer, over the model's `config.json`.
   */
  unsupported?(w: KvWriter): string | undefined;
  /**
   * Whether the converter writes `LlamaModel`'s `{arch}.vocab_size` and
   * `{arch}.rope.dimension_count`, which APR metadata alone gives for a model
   * whose `config.json` was not kept (an APR file from elsewhere).
   */
  readonly llamaKeys?: boolean;
  /**
   * Tensors made from the config, written before the model's own (the
   * converter's `generate_extra_tensors`).
   */
  generate?(w: KvWriter): readonly GeneratedTensor[];
  /** Tensors written as keys (see {@linkcode TensorKeys}). */
  readonly tensorKeys?: TensorKeys;
  /**
   * Added to every value of a tensor (GGUF name) on the way to GGUF: Gemma's
   * RMSNorm multiplies by `1 + w` and llama.cpp by `w`.
   */
  shift?(ggufName: string): number;
  /**
   * Rows of the token embedding to keep (Gemma 3 drops the rows no token
   * claims, as the converter does), from the metadata.
   */
  embeddingRows?(metadata: ModelMetadata): number | undefined;
  /**
   * The tensors the family makes itself (see {@linkcode MadeTensor}), from
   * the model's tensors and `config.json`; the others are renamed or stacked.
   *
   * @throws {RangeError} When a tensor it needs is missing or mis-shaped;
   * a {@linkcode TensorConfigMismatch} when one contradicts the config (the
   * shape check reports it, before any output).
   */
  made?(tensors: readonly TensorInfo[], w: KvWriter): readonly MadeTensor[];
  /**
   * Whether the converter drops a Hugging Face tensor (DeepSeek-V3's
   * multi-token-prediction layers, past `num_hidden_layers`).
   *
   * @param name The tensor's Hugging Face name.
   * @param w The writer, over the model's `config.json`.
   */
  drops?(name: string, w: KvWriter): boolean;
  /**
   * The name a checkpoint tensor is read under before anything else, where
   * the converter renames it first (Qwen3.5's multi-token-prediction layer,
   * `mtp.layers.0.*` and `mtp.fc`, as the block after the trunk): the GGUF
   * layout and the shape check see this name; APR keeps the checkpoint's.
   * Several names where the converter writes a copy under each (K-EXAONE's
   * `mtp.fc` in every MTP layer): the source is read once per copy.
   *
   * @param name The tensor's Hugging Face name.
   * @param hparams `config.json` (a multimodal model's `text_config` merged in).
   */
  sourceName?(
    name: string,
    hparams: Readonly<Record<string, unknown>>,
  ): string | readonly string[];
  /**
   * `config.json` with what the converter counts from the checkpoint's tensor
   * names where the config says nothing (Qwen3-Next's multi-token-prediction
   * layers), filled in at import so every later step reads one config; absent:
   * the config as it is.
   *
   * @param config The model's `config.json`.
   * @param names The checkpoint's tensor names.
   */
  countedConfig?(
    config: Readonly<Record<string, unknown>>,
    names: readonly string[],
  ): Readonly<Record<string, unknown>>;
  /**
   * Layers the converter writes past `num_hidden_layers` (GLM-4.5's
   * multi-token-prediction layers): counted in `block_count`, so
   * llama-quantize's layer-dependent choices count them too.
   *
   * @param hfConfig The model's `config.json`.
   */
  extraBlocks?(hfConfig: Readonly<Record<string, unknown>>): number;
  /**
   * llama.cpp loads every MTP block `extraBlocks` counts, held or not: its
   * loader has no trunk-only case (GLM-4.5's, Hy3's, MiMo-V2's load a file
   * without them), so a checkpoint without them is refused for GGUF
   * (Qwen3.5 with `mtp_num_hidden_layers` 1 and no `mtp.*`: "missing tensor
   * 'blk.4.attn_norm.weight'").
   */
  mtpBlocksRequired?: boolean;
  /**
   * Sizes that config fields neither the converter nor llama.cpp reads
   * still fix (Mamba's `expand`: transformers builds an inner width of
   * `expand × hidden_size`, whatever `intermediate_size` says), as the keys
   * they would make: the shape check compares the tensors with each as with
   * the written key, so a field the tensors contradict is refused by name.
   *
   * @param hparams The model's `config.json` (`text_config` merged in).
   */
  impliedKeys?(hparams: Readonly<Record<string, unknown>>): readonly ImpliedKey[];
  /**
   * Which layers transformers builds with experts, where a field says it
   * per layer and llama.cpp tells them by their tensors (Jamba's
   * `expert_layer_period`): the shape check finds a router in exactly
   * those. `undefined` when the config does not say.
   *
   * @param hparams The model's `config.json` (`text_config` merged in).
   */
  moeLayers?(hparams: Readonly<Record<string, unknown>>): MoeLayers | undefined;
  /**
   * Which layers transformers builds with a tensor that llama.cpp loads
   * when the file has it (Falcon's second LayerNorm, `ln_attn`, by
   * `num_ln_in_parallel_attn`), and with how many rows where llama.cpp reads
   * them off the tensor: the shape check finds one in exactly those, so wide.
   *
   * @param hparams The model's `config.json` (`text_config` merged in).
   */
  layerTensors?(hparams: Readonly<Record<string, unknown>>): LayerTensors | undefined;
  /**
   * The checkpoint name the converter maps, where it renames before mapping
   * (Gemma 3n's `…_scale` parameters read as `…_scale.weight`).
   */
  hfName?(name: string): string;
  /**
   * The inverse of {@linkcode hfName}, for a GGUF read back into Hugging
   * Face's layout (ERNIE 4.5 MoE's `e_score_correction.bias` back to
   * `e_score_correction_bias`), or the name where the family's table has two
   * for one GGUF name (Falcon's `attn_norm`: `ln_attn` beside an
   * `attn_norm_2`, else `input_layernorm`).
   *
   * @param name The name the family's table gives.
   * @param ggufNames Every tensor name of the GGUF, when read back from one.
   */
  hfNameBack?(name: string, ggufNames?: ReadonlySet<string>): string;
  /**
   * Whether a Hugging Face tensor is stored transposed, `[in, out]` (GPT-2's
   * `Conv1D` projections): the converter writes it as `[out, in]`, and a
   * GGUF read back transposes it again.
   *
   * @param name The tensor's Hugging Face name.
   */
  transposed?(name: string): boolean;
  /**
   * The order GGUF holds a tensor's row blocks in, where the converter
   * reorders them (GPT-NeoX's fused Q/K/V, interleaved per head): the tensor's
   * rows cut into `order.length` equal blocks, GGUF's block `i` being the
   * checkpoint's block `order[i]`; `undefined` for a tensor kept as it is.
   *
   * @param name The tensor's Hugging Face name.
   * @param shape Its shape.
   * @param heads The model's attention heads.
   */
  rowBlocks?(name: string, shape: readonly number[], heads: number): readonly number[] | undefined;
  /**
   * The checkpoint tensors a GGUF tensor the family's `made` stacked was made
   * from (StableLM 2 12B's per-head Q/K norms), in order, each an equal slice
   * of it along its first axis: a GGUF read back unstacks it into them.
   * `undefined` for a tensor not stacked so.
   *
   * @param name The GGUF tensor's name as the family's table maps it
   * (`model.layers.0.self_attn.q_norm.weight`).
   * @param shape Its shape.
   */
  unstacked?(name: string, shape: readonly number[]): readonly string[] | undefined;
  /**
   * The checkpoint tensors a GGUF read back joins from several GGUF tensors,
   * where the family's `made` split one (DeepSeek's `kv_b_proj` from
   * `attn_k_b` and `attn_v_b`); their parts are read back as nothing else.
   *
   * @param tensors The GGUF's tensors.
   * @param metadata The GGUF's metadata (its keys in `gguf_metadata`).
   */
  joinedBack?(tensors: readonly TensorInfo[], metadata: ModelMetadata): readonly JoinedTensor[];
  /**
   * The `config.json` fields `made` reads, from a GGUF's keys, for a model
   * read back from GGUF (an APR file of one keeps no `config.json`) and
   * written as GGUF again (DeepSeek's per-head sizes, to split `kv_b_proj`).
   *
   * @param key A key's value by its name after `{arch}.`, `undefined` when the GGUF has none.
   */
  hfConfigBack?(key: (name: string) => unknown): Readonly<Record<string, unknown>>;
  /** Whole-model tensors stacked from numbered ones, emitted after the last of them. */
  readonly stacks?: readonly GlobalStack[];
  /**
   * Rows a tensor (GGUF name) is padded to with zeros, or `undefined` (Gemma
   * 3n's embeddings, to `vocab_size`).
   *
   * @param ggufName The tensor's GGUF name.
   * @param hparams `config.json`, a multimodal model's `text_config` moved to the top.
   */
  paddedRows?(ggufName: string, hparams: Readonly<Record<string, unknown>>): number | undefined;
  /**
   * llama.cpp's graph for the architecture multiplies each attention and
   * feed-forward weight's `.scale` tensor into its product (`build_lora_mm`
   * with the `*_s` tensors) and, in a MoE graph, each stacked expert's
   * (`build_moe_ffn` with `*_exps_s`). An NVFP4 checkpoint's weights are kept
   * for GGUF only then: the converter writes their per-tensor factor as
   * `.scale` (per expert for stacked experts), and a graph that ignores it
   * computes with weights off by that factor.
   */
  readonly nvfp4Scales?: boolean;
  /**
   * Of a family whose graph applies `.scale` (`nvfp4Scales`), the GGUF
   * tensors (`blk.N.KIND.weight`'s KIND, or a whole-model tensor's base name)
   * it uses without it, each with where: an NVFP4 weight of one of them is
   * refused for GGUF (`NVFP4_UNSCALED` lists those of llama.cpp's shared
   * graph code).
   */
  readonly nvfp4Unscaled?: Readonly<Record<string, string>>;
  /**
   * Whether the family's GGUF carries a sentence embedder's `Dense`
   * projections (EmbeddingGemma's `dense_2`, `dense_3`); a model with them
   * is refused for the others, whose files would not embed as it does.
   */
  readonly sentenceDense?: boolean;
}

/**
 * How realizar's `AprTransformer` looks a family's tensors up, where that
 * differs from the Hugging Face checkpoint (APR keeps Hugging Face names).
 */
export interface AprLayout {
  /**
   * Fused tensors realizar does not know, split by rows into equal parts,
   * in order: piece after `model.layers.N.` → the pieces it becomes
   * (Phi-3's `mlp.gate_up_proj` → `mlp.gate_proj`, `mlp.up_proj`).
   */
  readonly split?: readonly (readonly [string, readonly string[]])[];
  /**
   * Pieces realizar knows under other names: the piece after
   * `model.layers.N.` → realizar's, `{E}` standing for an expert number
   * (Mixtral's `block_sparse_moe.experts.{E}.w1` → `mlp.experts.{E}.gate_proj`).
   */
  readonly rename?: readonly (readonly [string, string])[];
}

/**
 * The shared experts of DeepSeek-style MoE blocks under the name realizar's
 * transformer loader asks for (`mlp.shared_expert.*`, Qwen2-MoE's), not
 * `mlp.shared_experts.*` (issue 34 §3; realizar
 * `src/apr_transformer/mod_dequant_q4k_apr.rs` `AprTransformer::build_apr_layers`,
 * whose ungated shared expert is added as DeepSeek adds it:
 * `src/gpu/scheduler/moe_dispatch.rs`).
 */
export const SHARED_EXPERT_APR_NAMES: readonly (readonly [string, string])[] = [
  ["mlp.shared_experts.gate_proj", "mlp.shared_expert.gate_proj"],
  ["mlp.shared_experts.up_proj", "mlp.shared_expert.up_proj"],
  ["mlp.shared_experts.down_proj", "mlp.shared_expert.down_proj"],
];

/**
 * What a family's converter class sets on a SentencePiece (`tokenizer.model`)
 * vocabulary beyond the generic builder (`_set_vocab_sentencepiece`).
 */
export interface SentencePieceFacts {
  /** `tokenizer.ggml.add_space_prefix`, written as given (Gemma 1–3: false). */
  readonly addSpacePrefix?: boolean;
  /**
   * `add_space_prefix` from `tokenizer_config.json`'s `add_prefix_space` when
   * it says (`LlamaModel.set_vocab`).
   */
  readonly addSpacePrefixFromTokenizerConfig?: boolean;
  /**
   * `add_space_prefix` whenever `tokenizer_config.json` has `add_prefix_space`,
   * `null` written as false (`Ernie4_5Model.set_vocab` passes the value to
   * gguf-py's `add_bool` unchecked).
   */
  readonly addSpacePrefixWhenConfigured?: boolean;
  /** Special token ids the class sets by hand (Gemma: `eot` 107), when the files name none. */
  readonly specialIds?: Readonly<Record<string, number>>;
  /**
   * Special token ids the class sets by hand for one `vocab_size` only
   * (`LlamaModel.set_vocab`: CodeLlama's 32016), when the files name none.
   */
  readonly specialIdsByVocabSize?: Readonly<Record<number, Readonly<Record<string, number>>>>;
  /**
   * Special token ids the class sets after the generic builder, replacing
   * the files' (Nemotron: PAD 0, UNK 1).
   */
  readonly forcedIds?: Readonly<Record<string, number>>;
  /**
   * Phi-3's own builder (`Phi3MiniModel.set_vocab`): added tokens from
   * `tokenizer_config.json` and then `tokenizer.json` are written verbatim,
   * USER_DEFINED or CONTROL when marked special, score −1000.
   */
  readonly addedTokensVerbatim?: boolean;
}

/**
 * A converter class that writes a byte-fallback BPE `tokenizer.json`
 * through gguf-py's `LlamaHfVocab` under a tokenizer model of its own, with
 * its merges (`Gemma4Model.set_vocab`: `gemma4`).
 */
export interface LlamaHfVocabularyFacts {
  /** `tokenizer.ggml.model`. */
  readonly model: string;
  /** Tokens it types USER_DEFINED whatever they are (Gemma 4's "always render" ones). */
  readonly userDefined: readonly string[];
  /** `tokenizer.ggml.add_space_prefix`, written after `SpecialVocab`'s keys. */
  readonly addSpacePrefix: boolean;
  /** `tokenizer.ggml.add_bos_token`, written then (in place when `SpecialVocab` wrote one). */
  readonly addBosToken: boolean;
}

/**
 * How llama.cpp rotates a GGUF architecture's Q/K (`llama_model_rope_type()`,
 * src/llama-model.cpp): `norm` adjacent pairs; `neox` pairs half a head
 * apart; `mrope` and `imrope` (Qwen2-VL, Qwen3-VL) per-axis sections, which
 * for text (one position on every axis) rotate as `neox` does; `none`
 * rotates nothing (GPT-2's learned positions; the state-space models: Mamba, Mamba-2).
 */
export type GgufRopeType = "norm" | "neox" | "mrope" | "imrope" | "none";

/** One model family. */
export interface Family {
  /** aprkit's architecture name (APR `architecture`), as aprender and realizar spell it. */
  readonly name: string;
  /** What the entry follows (upstream class and file). */
  readonly source: string;
  /** Hugging Face `architectures[0]` values of this family. */
  readonly hfArchitectures: readonly string[];
  /** Hugging Face `model_type` values of this family. */
  readonly hfModelTypes: readonly string[];
  /**
   * The family a config of one of its classes belongs to where the config
   * decides (Nemotron-H's MoE variant, a GGUF architecture of its own), or
   * `undefined` for this family.
   *
   * @param hparams `config.json`.
   */
  variantOf?(hparams: Readonly<Record<string, unknown>>): string | undefined;
  /** `general.architecture` in GGUF (`llama` for Mistral and Mixtral). */
  readonly ggufArchitecture: string;
  /**
   * llama.cpp's RoPE type of `ggufArchitecture` (`llama_model_rope_type()`):
   * a GGUF of the family imported to APR gets its `rope_type` from it
   * (`gguf_rope.ts`).
   */
  readonly ggufRopeType: GgufRopeType;
  /**
   * Per-block tensor names, GGUF base name → Hugging Face piece after
   * `model.layers.N.` (or {@linkcode hfBlockPrefix}), without `.weight`/`.bias`.
   */
  readonly blockNames: readonly (readonly [string, string])[];
  /**
   * The Hugging Face module holding the blocks, where it is not
   * `model.layers` (BERT's `encoder.layer`).
   */
  readonly hfBlockPrefix?: string;
  /** Whole-model tensors besides {@linkcode GLOBAL_NAMES}: GGUF base name → Hugging Face base name. */
  readonly globalNames?: readonly (readonly [string, string])[];
  /** Experts stacked into 3-D GGUF tensors. */
  readonly experts?: ExpertLayout;
  /**
   * Whether llama.cpp's converter permutes the Q/K rows (its `LlamaModel`:
   * NORM RoPE in llama.cpp, `rotate_half` in transformers).
   */
  readonly permutesQk: boolean;
  /**
   * Whether transformers rotates adjacent pairs of the checkpoint's Q/K rows
   * (Llama 4's complex rotation), so its rows are already llama.cpp's
   * interleaved ones (APR `rope_type` 0); otherwise `rotate_half` (2).
   */
  readonly hfRopeInterleaved?: boolean;
  /**
   * Whether the family rotates no Q/K (GPT-2's and GPTBigCode's learned
   * positions, BLOOM's ALiBi): its APR metadata has no `rope_type`, whatever
   * `ggufRopeType` llama.cpp lists (starcoder: NORM, unused).
   */
  readonly noRope?: boolean;
  /**
   * transformers' default for `tie_word_embeddings` when `config.json` does
   * not say (the config class's default).
   */
  readonly tiedByDefault: boolean;
  /**
   * Whether a GGUF of this family reads back under Hugging Face names by
   * renaming alone (no fused, stacked or shifted tensors).
   */
  readonly ggufRenamesOnly: boolean;
  /**
   * `config.json` keys of APR's feed-forward widths where the family names
   * them otherwise than the common ones (`intermediate_size`,
   * `moe_intermediate_size`): Llama 4's dense width is
   * `intermediate_size_mlp` and its experts' `intermediate_size`, as its
   * converter writes them to `feed_forward_length` and
   * `expert_feed_forward_length`, which a GGUF import reads back.
   */
  readonly hfWidthKeys?: Readonly<
    Partial<Record<"intermediate_size" | "moe_intermediate_size", string>>
  >;
  /**
   * The feed-forward width the checkpoint's tensors have, where the model
   * derives it from the config (LFM2's `block_auto_adjust_ff_dim`); absent:
   * `intermediate_size` (or {@linkcode hfWidthKeys}).
   */
  hfWidth?(hparams: Readonly<Record<string, unknown>>): number | undefined;
  /**
   * Whether a layer's tensor (the piece after `model.layers.N.`, or
   * {@linkcode hfBlockPrefix}) is one of the model's though the family's GGUF
   * table has no name for it: a variant aprkit keeps in APR only
   * (nomic-embed-text-v2-moe's router, experts and their bias). The shape
   * check then checks it by layer alone.
   *
   * @param piece The tensor's name after its layer's prefix.
   * @param hparams `config.json`.
   */
  hfKeptPiece?(piece: string, hparams: Readonly<Record<string, unknown>>): boolean;
  /**
   * Whether a checkpoint's embedding may have other rows than its
   * `vocab_size` on purpose (Gemma 3: llama.cpp trims it to the tokens its
   * tokenizer claims), so realizar's load gate is not checked at import.
   */
  readonly embeddingRowsMayDiffer?: boolean;
  /**
   * Whether some layers have no attention (a hybrid's state-space layers), so
   * a model's shape check does not ask every layer for the first one's
   * attention tensors.
   */
  readonly hybrid?: boolean;
  /** APR output: what realizar needs changed; absent: Hugging Face's tensors as they are. */
  readonly apr?: AprLayout;
  /** GGUF output; absent: refused. */
  readonly gguf?: GgufSupport;
  /**
   * Why GGUF output is refused, where `gguf` is absent because llama.cpp
   * cannot run what its converter writes (ModernBERT); said instead of the
   * list of families aprkit writes.
   */
  readonly ggufRefusal?: string;
  /**
   * The prefix a task-head class puts before the base model's tensor names
   * (`model.` in `ModernBertForSequenceClassification`; the converter reads
   * them without it), for a family with no `gguf.hfName` to say so.
   */
  readonly hfHeadPrefix?: string;
  /**
   * How each field of its transformers config class reaches llama.cpp
   * (`config_fields.ts`): written, checked against what llama.cpp
   * hard-codes, warned about, or irrelevant.
   */
  readonly configFields: ConfigFields;
  /**
   * Special tokens its converter class sets by the token's text on a
   * byte-level BPE vocabulary (GLM's `_set_vocab_glm`: `bos` `[gMASK]`…),
   * in its order: kind → token. Each applies only where the files name no
   * token of that kind (gguf-py's `_set_special_token`).
   */
  readonly specialTokensByName?: readonly (readonly [string, string])[];
  /**
   * Special token ids its converter class sets from the configs after the
   * tokenizer files' own, replacing them (HunYuan's `eod_token_id` as EOS):
   * kind → id.
   *
   * @param config `config.json`.
   * @param generation `generation_config.json` (`{}` when absent).
   */
  specialIdsFromConfig?(
    config: Readonly<Record<string, unknown>>,
    generation: Readonly<Record<string, unknown>>,
  ): Readonly<Record<string, number>>;
  /**
   * The `tokenizer.ggml.pre` name the converter gives the family's published
   * tokenizers (recognised by their hash: GLM's `glm4`), written instead of
   * the name aprkit recognises when llama.cpp tokenizes alike under both.
   */
  readonly preTokenizer?: string;
  /**
   * The `tokenizer.ggml.pre` name the converter gives the family's published
   * tokenizer where llama.cpp splits it with custom code (AFMoE's `afmoe`):
   * a tokenizer.json with other steps than the published file's is refused
   * for GGUF, and the refusal names this one for `--pre-tokenizer`.
   */
  readonly customPreTokenizer?: string;
  /**
   * `tokenizer.ggml.add_bos_token` as its converter class sets it after the
   * tokenizer files' flags (Nemotron-H: true); absent: the files'.
   */
  readonly addBosToken?: boolean;
  /** What its converter class does to a SentencePiece vocabulary; absent: the generic builder. */
  readonly sentencePiece?: SentencePieceFacts;
  /**
   * The tiktoken file its published checkpoints hold instead of a
   * `tokenizer.json` (Hunyuan-A13B's `hy.tiktoken`, read by remote code), and
   * what that code adds to it: read as the `tokenizer.json` the converter
   * makes of it when the folder has no `tokenizer.json`.
   */
  readonly tiktoken?: TiktokenFacts;
  /**
   * Why a GGUF of this family cannot be read back into its Hugging Face
   * layout (SafeTensors or APR output); absent: it can.
   */
  readonly ggufReadBackRefusal?: string;
  /**
   * Tensor kinds (gguf-py `MODEL_TENSOR` names) llama.cpp's loader reads for
   * the family's architecture that gguf-py's `MODEL_TENSORS` does not list
   * (Qwen3's `CLS_OUT`, which its converter writes for a Qwen3-Reranker):
   * a GGUF with them is read, not taken for another model.
   */
  readonly ggufLoaderKinds?: readonly string[];
  /**
   * Why a GGUF of this family with these tensors cannot be read back, where
   * only some of its GGUFs cannot (a BERT cross-encoder's); absent or
   * `undefined`: as {@linkcode ggufReadBackRefusal} says.
   *
   * @param ggufNames Every tensor name of the GGUF.
   * @param metadata The GGUF's APR metadata (its keys in `gguf_metadata`).
   */
  ggufReadBackRefusalOf?(
    ggufNames: ReadonlySet<string>,
    metadata?: ModelMetadata,
  ): string | undefined;
  /**
   * Whether a GGUF filed under {@linkcode ggufArchitecture} is this
   * family's, where several families share that architecture (BERT,
   * DistilBERT and XLM-RoBERTa as `bert`), from its tensor names and its APR
   * metadata; absent: the architecture's own family, or the only one under it.
   *
   * @param ggufNames Every tensor name of the GGUF.
   * @param metadata The GGUF's APR metadata.
   */
  ggufClaims?(ggufNames: ReadonlySet<string>, metadata: ModelMetadata): boolean;
  /**
   * Whether a GGUF of this family read into SafeTensors or APR keeps its
   * GGUF tensor names, as a GGUF of an architecture aprkit does not know
   * does (XLM-RoBERTa: its read-back is not written yet).
   */
  readonly ggufNamesKept?: boolean;
  /**
   * Whether its converter class writes a SentencePiece Unigram
   * `tokenizer.json` as llama.cpp's `t5` vocabulary (XLM-RoBERTa's
   * `_xlmroberta_set_vocab`: its precompiled charsmap, `[PAD<id>]` padding);
   * a tokenizer it cannot write so is refused for GGUF.
   */
  readonly t5Vocabulary?: boolean;
  /**
   * The vocabularies (`tokenizer.ggml.model`) aprkit writes the family's
   * GGUF with, where its converter class writes others in another way than
   * aprkit does (JinaBERT v2's BPE ones, `token_type_count` after them); a
   * model with another is refused for GGUF. Absent: any.
   */
  readonly ggufVocabularies?: readonly string[];
  /**
   * Whether its converter class writes the vocabulary as `LlamaHfVocab`
   * reads it, under its own tokenizer model (Gemma 4); a tokenizer it
   * cannot read so is refused for GGUF.
   */
  readonly llamaHfVocabulary?: LlamaHfVocabularyFacts;
  /**
   * Whether its converter class writes `tokenizer.ggml.token_type_count`
   * (`type_vocab_size`, else 1) after a byte-level BPE vocabulary
   * (`RobertaModel.set_vocab`, after `_set_vocab_gpt2`).
   */
  readonly bpeTokenTypeCount?: boolean;
}

/**
 * The tensors llama.cpp's shared graph code uses without their NVFP4
 * `.scale` in every family (`GgufSupport.nvfp4Unscaled`): `build_moe_ffn`
 * multiplies the router with `build_lora_mm` given no scale, and
 * `build_inp_embd` takes the embeddings' rows with `ggml_get_rows`; neither
 * `.scale` is among those `llama_model::load_tensors` loads (ModelOpt's
 * exports keep both unquantized; the converter would repack them as any
 * other weight).
 */
export const NVFP4_UNSCALED: Readonly<Record<string, string>> = {
  ffn_gate_inp: "build_moe_ffn's router build_lora_mm is given none, and none is loaded",
  token_embd: "build_inp_embd takes its rows with ggml_get_rows, and none is loaded",
};

/** Whole-model tensors of every family: GGUF base name → Hugging Face base name. */
export const GLOBAL_NAMES: readonly (readonly [string, string])[] = [
  ["token_embd", "model.embed_tokens"],
  ["output_norm", "model.norm"],
  ["output", "lm_head"],
];

/** The llama block: attention, SwiGLU feed-forward, two RMSNorms. */
export const LLAMA_BLOCK: readonly (readonly [string, string])[] = [
  ["attn_q", "self_attn.q_proj"],
  ["attn_k", "self_attn.k_proj"],
  ["attn_v", "self_attn.v_proj"],
  ["attn_output", "self_attn.o_proj"],
  ["attn_q_norm", "self_attn.q_norm"],
  ["attn_k_norm", "self_attn.k_norm"],
  ["ffn_gate", "mlp.gate_proj"],
  ["ffn_up", "mlp.up_proj"],
  ["ffn_down", "mlp.down_proj"],
  ["attn_norm", "input_layernorm"],
  ["ffn_norm", "post_attention_layernorm"],
];
