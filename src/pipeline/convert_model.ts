/**
 * `convertModel()` and `importModel()`: any model in, one file out, through
 * the stream pipeline — reader → quantizer → (decoder) → sink — in one pass
 * and bounded memory.
 *
 * @module
 */

import { checkOutputPaths, type PlannedOutput } from "../io/output_paths.ts";
import { assertModelMatchesConfig } from "./model_shape_check.ts";
import { DTYPES, elementCount } from "../dtype.ts";
import { ModelFormatError, UsageError } from "../errors.ts";
import type { AprSink } from "../formats/apr/sink.ts";
import type { AprLz4Sink } from "../formats/apr/lz4_sink.ts";
import { lz4ReadersLine } from "../formats/apr/lz4_readers.ts";
import { shardSetReadersLine } from "../formats/apr/shard_set_readers.ts";
import type { ShardedAprSink } from "../formats/apr/sharded_sink.ts";
import { GgufSink } from "../formats/gguf/sink.ts";
import type { SplitGgufSink } from "../formats/gguf/split_sink.ts";
import type { GgufSplitReader } from "../formats/gguf/split.ts";
import { ggufStorage, hasPaddedRows } from "../formats/gguf/tensor_storage.ts";
import type { QnatSink } from "../formats/qnat/sink.ts";
import { sourceIdentityOf } from "./source_identity.ts";
import type { SafetensorsSink } from "../formats/safetensors/writer.ts";
import {
  aprPresetRefusal,
  ggufPresetOf,
  ImportanceSizeError,
  presetOf,
  QUANTIZE_TARGETS,
  type QuantizeTarget,
  quantizeTargetsFor,
  targetDType,
} from "../quant/plan_quantization.ts";
import { LLAMA_FTYPES } from "../quant/llama_presets.ts";
import {
  hasLlamaQuantizeFlags,
  type LlamaQuantizeFlags,
  llamaQuantizeParams,
} from "../quant/llama_quantize_params.ts";
import { usesImportance } from "../quant/_block_encoders.ts";
import { ROW_FALLBACKS, type RowFallback } from "../quant/apr_row_fallback.ts";
import { aprPlanNotes, ggufRowFallbackNote } from "./apr_plan_notes.ts";
import { hfToGgufName } from "../formats/gguf/names.ts";
import { type ImportanceMatrix, readImportanceMatrix } from "./read_imatrix.ts";
import { imatrixGgufKv } from "../formats/gguf/imatrix_kv.ts";
import { parseKvOverride } from "../formats/gguf/kv_override.ts";
import { selectImportance } from "./imatrix_weights.ts";
import { prunedImportance, pruneLayers } from "./prune_layers.ts";
import { GgufValueType } from "../formats/gguf/header.ts";
import type { GgufKvInput } from "../formats/gguf/writer.ts";
import { familyOf } from "../arch/registry.ts";
import { hfFolderName } from "./model_name.ts";
import { aprGeneralFields, generalMetadataOf } from "../arch/hf_model_card.ts";
import { QuantizeStream } from "../quant/quantize_stream.ts";
import { QUANT_METHODS } from "../quant/checkpoint/mod.ts";
import { isHubRef, parseHubRef } from "../sources/hub_ref.ts";
import type {
  ModelChunk,
  ModelHeader,
  ModelMetadata,
  ProgressCallback,
  TensorInfo,
} from "../tensor.ts";
import { abortableTensors } from "../io/abortable_reads.ts";
import { checkBeforeClose } from "./_check_before_close.ts";
import { DequantizeStream } from "./dequantize_stream.ts";
import { addTiedLmHead, dropTiedLmHead } from "./tied_embeddings.ts";
import { PRE_TOKENIZER_NAMES } from "../tokenizer/pre_tokenizers.ts";
import { reorderQkRows } from "./qk_row_layout.ts";
import {
  assertGgufFamily,
  assertGgufMadeTensors,
  assertGgufMtpBlocks,
  converterConvertsAnyway,
  converterKeepsSourceFloats,
  converterQuantizesEveryMatrix,
  requireGgufVocabulary,
  toGgufLayout,
} from "./gguf_layout.ts";
import { languageModelOnly, languageModelView } from "./language_model.ts";
import { forcedQ8_0 } from "./fp8_as_q8_0.ts";
import { inConverterReadOrder } from "./converter_read_order.ts";
import {
  checkKeptBlocks,
  checkpointKept,
  keptBlocks,
  type KeptBlocksOptions,
  keptFileType,
  requantizedAsQ8_0,
} from "./kept_block_targets.ts";
import { assertMmprojSupported, toVisionGguf } from "./vision_gguf.ts";
import { assertReadsBack, fromGgufLayout } from "./hf_layout.ts";
import { inLlamaQuantizeOrder } from "./llama_quantize_order.ts";
import {
  aprUnreadNote,
  assertEmbeddingMatchesConfig,
  fromAprLayout,
  toAprLayout,
} from "./apr_layout.ts";
import type { Model } from "./model.ts";
import { type ModelLocation, openModel, type OpenModelOptions } from "./open_model.ts";
import { fs } from "../runtime/fs.ts";

export type { QuantizeTarget };

/** Output formats of {@linkcode convertModel}. */
export type OutputFormat = "apr" | "safetensors" | "gguf" | "qnat";

/** Every output format, for validation and help. */
export const OUTPUT_FORMATS: readonly OutputFormat[] = ["apr", "safetensors", "gguf", "qnat"];

export { QUANTIZE_TARGETS };

/**
 * Options of {@linkcode convertModel}. Its `signal` stops the conversion at
 * once, a tensor read in flight included: an APR output keeps what it
 * committed for `resume`, a split GGUF set its completed shards, other
 * outputs remove their partial files, and the call rejects with the signal's
 * reason.
 */
export interface ConvertOptions extends OpenModelOptions, LlamaQuantizeFlags {
  /** Output format. @default from the output's extension, else `"apr"` */
  format?: OutputFormat;
  /**
   * Quantize weights to this type (`none` keeps source types), or with one of
   * llama-quantize's presets (`q4_k_m`, `q4_k_s`, `q5_k_m`, `q5_k_s`, `q6_k`,
   * `q8_0`: each tensor's type chosen as llama.cpp does; for APR, mapped to
   * Q4_K/Q6_K, docs/QUANTIZATION.md). @default "none"
   */
  quantize?: QuantizeTarget;
  /**
   * An importance matrix (llama.cpp's legacy `.dat`, as a path or parsed)
   * weighting the K-quant and Q5_0/Q5_1 quantization error as
   * `llama-quantize --imatrix` does.
   */
  imatrix?: string | ImportanceMatrix;
  /**
   * APR output: what Q4_K/Q6_K tensors whose rows are not whole 256-value
   * super-blocks become: `"q8"` (APR_Q8) or `"f16"`, which every APR reader
   * decodes alike, or `"padded"` (the K-quant, each row padded to whole
   * super-blocks: decoded right by realizar's transformer loader only).
   * @default "q8"
   */
  rowFallback?: RowFallback;
  /** Quantize every float tensor, not only large weight matrices. @default false */
  quantizeAll?: boolean;
  /**
   * Encoder worker threads for the K-quants (q4_k/q5_k/q6_k and the presets'
   * K-quant tensors) and weighted encoders (each costs ~15 MiB); the main
   * thread encodes a share of their jobs too. Q8_0, Q5_0, F16 and the others
   * encode on the main thread, cheaper than a hand-off; 0 encodes everything
   * on the main thread.
   * @default one per core but the main thread's, at most 3
   */
  threads?: number;
  /** Decode every tensor to F32 (exports). @default false */
  float32?: boolean;
  /**
   * Continue an interrupted APR output from its partial file and journal, or
   * a split GGUF output from its completed shards. @default false
   */
  resume?: boolean;
  /**
   * APR output: commit (fdatasync, then a journal line) at least every this
   * many bytes written, inside tensors too; with a commit at least every
   * 2 s, this bounds what an interruption loses.
   * @default 64 MiB
   */
  commitBytes?: number;
  /** Replace an existing output. @default false */
  force?: boolean;
  /**
   * SafeTensors, APR or GGUF output: split into shards of at most this many
   * bytes of tensor data (APR: `NAME-0000i-of-0000N.apr` plus
   * `NAME.apr.manifest.json`; GGUF: llama.cpp's `gguf-split` layout,
   * `NAME-0000i-of-0000N.gguf`).
   */
  maxShardSize?: number;
  /** Progress of the write (bytes and tensors). */
  onProgress?: ProgressCallback;
  /**
   * GGUF output of an image-text-to-text checkpoint: also write its vision
   * tower and projector to this path as llama.cpp's vision GGUF (what
   * `convert_hf_to_gguf.py --mmproj` writes; Gemma 3, Qwen2-VL, Qwen2.5-VL,
   * Qwen3-VL and Mistral 3 so far), in a second streaming pass over the source that
   * reads only those tensors.
   */
  mmproj?: string;
  /**
   * APR output of an image-text-to-text checkpoint: keep the vision tower and
   * projector, under their Hugging Face names, beside the language model.
   * @default false (the language model only, with a note)
   */
  keepVision?: boolean;
  /**
   * Told, in one line each, about choices that change the output: a tied
   * lm_head copy added; for APR, K-quant rows given the row fallback, types
   * APR cannot hold stored as F32, padded K-quants copied from the source.
   */
  onNote?: (message: string) => void;

  /**
   * The llama.cpp pre-tokenizer (`tokenizer.ggml.pre`) to record, instead of
   * the one recognised from `tokenizer.json`: `"default"` or a name of
   * `PRE_TOKENIZER_NAMES`. GGUF output refuses a byte-level BPE tokenizer whose
   * pre-tokenizer aprkit does not recognise unless this is given.
   * @default the recognised one
   */
  preTokenizer?: string;

  /**
   * GGUF output: the `general.file_type` to write (llama.cpp's `LLAMA_FTYPE_*`).
   * @default derived from the tensors (the type most of them have)
   */
  ggufFileType?: number;

  /** QNAT output: elements per NF4 block (even, must divide each NF4 tensor). @default 64 */
  blockSize?: number;
  /** QNAT output: double-quantize the NF4 block scales to 8 bits. @default false */
  doubleQuant?: boolean;
  /**
   * APR output: compress the file as one LZ4 block (flag 0x0001, realizar's
   * layout; files under 4 GiB, built in memory, no resume). @default none
   */
  compress?: "lz4";
}

/** What {@linkcode convertModel} wrote. */
export interface ConvertResult {
  /** The vision GGUF written for the `mmproj` option. */
  mmproj?: ConvertResult;
  /** The output path. */
  output: string;
  /** The output format. */
  format: OutputFormat;
  /** The source's format. */
  sourceFormat: string;
  /** Tensors written. */
  tensors: number;
  /** Parameters (elements) written. */
  parameters: number;
  /** Tensor payload bytes written (for QNAT: its NF4 and F32 sections). */
  tensorBytes: number;
  /** Size of everything written: the file, or every shard plus the index/manifest. */
  fileBytes: number;
  /**
   * Every file written: the output, or (sharded) each shard then the index
   * or manifest; a sharded output's own path names no file.
   */
  files: string[];
  /**
   * The shards of a split GGUF output, in order (llama.cpp loads the set
   * from the first); absent for other outputs.
   */
  shards?: string[];
  /** Tensors found complete in a resumed partial output (APR only). */
  resumedTensors: number;
  /**
   * Payload bytes found committed in a resumed partial output (APR only):
   * whole tensors and the committed part of the tensor that was being
   * written.
   */
  resumedBytes: number;
  /** Tensors stored in each dtype, as written (for QNAT: `NF4` and `F32`). */
  dtypes: Record<string, number>;
  /** Wall time in milliseconds. */
  durationMs: number;
}

/**
 * Convert any model aprkit reads into APR, SafeTensors or GGUF.
 *
 * @example Import a Hugging Face folder, quantized
 * ```ts ignore
 * import { convertModel } from "./convert_model.ts";
 * await convertModel("./phi-4/", "phi-4.apr", { quantize: "q4_k" });
 * ```
 *
 * @param source A path, URL, Blob or `hf://` reference.
 * @param output The output path.
 * @param options Format, quantization, resume, progress.
 * @returns What was written.
 * @throws {Deno.errors.NotFound} When the source, or the output's folder, does not exist.
 * @throws {UsageError} For options that do not apply or combine (an unknown `format` or `quantize`, `resume: true` for a non-APR output…), an output that exists without `force: true`, or a `resume` of a partial output planned from another input or options.
 * @throws {ModelFormatError} When the source is malformed.
 * @throws {HubRequestError} When the Hub refuses or keeps failing (`HubOfflineError` offline, `HubAnswerError` for an unusable answer).
 * @throws {TypeError} When a tensor cannot be stored in the output format (a name or shape it cannot hold).
 * When `options.signal` aborts, the call rejects with its reason.
 */
export async function convertModel(
  source: ModelLocation,
  output: string,
  options: ConvertOptions = {},
): Promise<ConvertResult> {
  const format = options.format ?? formatFromPath(output) ?? "apr";
  checkOptions(format, options);
  // Every output path, before the source is read (one rule: io/output_paths.ts);
  // a file of the source is named so before any other fault of its name.
  await checkOutputPaths(plannedOutputs(output, options), {
    force: options.force === true,
    ...(typeof source === "string" ? { source } : {}),
  });
  checkExtension(output, format);
  if (options.mmproj !== undefined) checkExtension(options.mmproj, "gguf");
  const result = await convertPart(source, output, options, format, "model");
  if (options.mmproj === undefined) return result;
  // The vision GGUF keeps the source's float types (plus the converter's forced ones).
  // Its notes would repeat the model's (the model's note already names it).
  // It is one file whatever the model's shard size (llama.cpp's clip.cpp opens
  // it with gguf_init_from_file, which joins no split set), written afresh.
  const {
    quantize: _q,
    imatrix: _i,
    mmproj,
    onNote: _n,
    maxShardSize: _m,
    resume: _r,
    ...rest
  } = options;
  return {
    ...result,
    mmproj: await convertPart(source, mmproj, rest, "gguf", "vision"),
  };
}

/**
 * The outputs {@linkcode convertModel} writes for these options: the model
 * (a file, or a set of shards named after it) and the vision GGUF of `mmproj`.
 *
 * @param output The output path.
 * @param options The conversion's options.
 * @returns Each output, for `checkOutputPaths`.
 */
export function plannedOutputs(output: string, options: ConvertOptions): PlannedOutput[] {
  const format = options.format ?? formatFromPath(output) ?? "apr";
  return [
    { path: output, format, split: options.maxShardSize !== undefined },
    ...(options.mmproj !== undefined
      ? [{ path: options.mmproj, role: "mmproj", format: "gguf" }]
      : []),
  ];
}

/**
 * One output of a model the caller opened and closes (`convert_many.ts`'s
 * views of one read), written as {@linkcode convertModel} does. The caller
 * has checked the output's options ({@linkcode checkConvertOptions}, which
 * gave `format`) before the read: they are not checked again here.
 *
 * @param model The opened model (not closed here).
 * @param source Where it came from (names in messages, the Hub folder's name).
 * @param output The output path.
 * @param options As for {@linkcode convertModel}, without `mmproj`.
 * @param format The output format `checkConvertOptions` returned.
 * @returns What was written.
 */
export function convertOpenedModel(
  model: Model,
  source: ModelLocation,
  output: string,
  options: ConvertOptions,
  format: OutputFormat,
): Promise<ConvertResult> {
  return convertPart(source, output, options, format, "model", model);
}

/**
 * Check a conversion's options as {@linkcode convertModel} does first
 * (format, quantization target and how they combine), before any file is
 * opened.
 *
 * @param output The output path (its extension names the format unless `options.format` does).
 * @param options The options.
 * @returns The output format.
 * @throws {UsageError} For options that do not apply or combine.
 */
export function checkConvertOptions(output: string, options: ConvertOptions): OutputFormat {
  const format = outputFormat(output, options);
  checkOptions(format, options);
  checkExtension(output, format);
  return format;
}

/**
 * The format `output` is written in: `options.format`, else its extension's, else APR.
 *
 * @param output The output path.
 * @param options The options.
 * @returns The format (checked by {@linkcode checkConvertOptions}).
 */
export function outputFormat(output: string, options: ConvertOptions): OutputFormat {
  return options.format ?? formatFromPath(output) ?? "apr";
}

/** One output of {@linkcode convertModel}: the model, or a multimodal checkpoint's vision GGUF. */
async function convertPart(
  source: ModelLocation,
  output: string,
  options: ConvertOptions,
  format: OutputFormat,
  part: "model" | "vision",
  opened?: Model,
): Promise<ConvertResult> {
  const started = performance.now();
  const read = typeof options.imatrix === "string"
    ? await readImportanceMatrix(options.imatrix)
    : options.imatrix;
  // --include-weights/--exclude-weights: the entries used (and counted in the keys).
  const imatrix = read === undefined
    ? undefined
    : selectImportance(read, options.includeWeights ?? [], options.excludeWeights ?? []);
  // --prune-layers: blocks renumbered; the matrix is looked up under the new
  // numbers (filled in when the pruning sees the header, before any planning).
  const importance = imatrix === undefined ? undefined : new Map(imatrix.entries);
  let pruned: ReadonlyMap<number, number> | undefined;
  // An APR import streamed without the cache saves its sha256 checks beside
  // the partial output, so --resume continues them instead of fetching every
  // file again only to hash it.
  const checkpoint = format === "apr" && options.noCache === true && typeof source === "string" &&
      isHubRef(source)
    ? { path: `${output}.partial.digests.json`, restore: options.resume === true }
    : undefined;
  const model = opened ?? await openModel(source, {
    ...openOptionsFor(format, options),
    ...(checkpoint !== undefined ? { hubDigestCheckpoint: checkpoint } : {}),
  });
  try {
    const location = typeof source === "string" ? source : model.location;
    // A vision GGUF aprkit cannot write is refused first: the family's
    // warnings would otherwise print before the one-line refusal.
    if (options.mmproj !== undefined || part === "vision") {
      assertMmprojSupported(model.header, location);
    }
    checkModelFor(model, location, format, options);
    const ggufNames = format === "gguf" && options.keepNames !== true;
    // DeepSeek-V4's FP8 matrices: Q8_0 under every outtype, as its converter writes them.
    const forced = forcedQ8_0(model, ggufNames);
    if (checkpointKept(model) === undefined && forced === undefined) {
      noteDequantized(model, options);
    }
    checkKeptBlocks(model, keptBlocksOptions(format, options), options.onNote);
    const split = options.keepSplit === true ? sourceSplit(model, location) : undefined;
    let header: ModelHeader | undefined;
    // APR output gets an explicit lm_head for tied embeddings (realizar needs
    // it); other formats tie it themselves, so a copy is dropped there.
    // A GGUF of a preset's mix is llama-quantize's file (order, dimensions,
    // keys), whether the preset is applied now or was when an APR was made.
    // q4_k of a GGUF already quantized: llama-quantize's --pure Q4_K_M file.
    const quantizedAs = format === "gguf" && options.quantize === "q4_k" &&
        ggufPresetOf(model.header, "q4_k") !== undefined
      ? "q4_k_m"
      : options.quantize ?? recordedPreset(model.header.metadata);
    // Kept blocks quantized again to Q8_0: llama-quantize's Q8_0 file, not the converter's.
    const q8_0Again = requantizedAsQ8_0(model, keptBlocksOptions(format, options));
    const byQuantize = isLlamaQuantizePreset(quantizedAs, q8_0Again);
    let stream = model.chunks();
    // A checkpoint's tensors in the order llama.cpp's converter reads them.
    const { shardOf, quantDequantized, quantMarkedBy } = model.reader as {
      shardOf?: (name: string) => string | undefined;
      quantDequantized?: readonly string[];
      quantMarkedBy?: ReadonlyMap<string, string>;
    };
    if (ggufNames && part !== "vision" && shardOf !== undefined) {
      const made = new Map((quantDequantized ?? []).map((n) => [n, quantMarkedBy?.get(n)]));
      stream = stream.pipeThrough(inConverterReadOrder(shardOf, made));
    }
    // An image-text-to-text checkpoint: its language model under the text
    // family's names, the vision tower left out (kept on request for APR).
    const folderName = await hfFolderName(source, model.header.format);
    if (part === "vision") {
      stream = stream.pipeThrough(toVisionGguf(folderName));
    } else if ((format === "gguf" || format === "apr") && options.keepNames !== true) {
      stream = stream.pipeThrough(languageModelOnly({
        format,
        keepVision: options.keepVision === true,
        ...(options.mmproj !== undefined ? { mmproj: options.mmproj } : {}),
        ...(options.onNote !== undefined ? { onNote: options.onNote } : {}),
      }));
    }
    // A GGUF of a known family becomes its Hugging Face checkpoint's tensors
    // first (issue 18 item 4); SafeTensors drops the tensors the converter
    // generated, which transformers computes itself.
    if (options.keepNames !== true) {
      stream = stream.pipeThrough(fromGgufLayout({
        dropGenerated: format === "safetensors",
        dequantizeNvfp4: format !== "gguf",
      }));
    }
    // APR keeps the tensors realizar looks up; other formats the checkpoint's own.
    stream = stream.pipeThrough(
      format === "apr" ? toAprLayout({ keepNames: options.keepNames === true }) : fromAprLayout(),
    );
    if (format === "apr" && options.keepNames !== true) {
      stream = stream.pipeThrough(aprUnreadNote(options.onNote));
    }
    // GGUF wants llama.cpp's interleaved Q/K rows; SafeTensors and APR Hugging
    // Face's (APR rope_type 2, which both of realizar's paths rotate right).
    const rows = format === "gguf"
      ? "interleaved"
      : format === "safetensors" || (format === "apr" && options.keepNames !== true)
      ? "hf"
      : undefined;
    if (rows !== undefined) stream = stream.pipeThrough(reorderQkRows(rows));
    stream = stream.pipeThrough(
      format === "apr" ? addTiedLmHead(options.onNote) : dropTiedLmHead(),
    );
    // GGUF: the family's tensors as llama.cpp's converter writes them (names,
    // stacked experts, shifted norms, generated tensors).
    if (format === "gguf") {
      stream = stream.pipeThrough(
        toGgufLayout({ keepNames: options.keepNames === true, location }),
      );
      // A K-quant preset's file is llama-quantize's, tensor order included.
      // --keep-split writes them in the source's order, shard after shard.
      if (byQuantize) {
        stream = stream.pipeThrough(inLlamaQuantizeOrder(split?.compare));
      }
      if ((options.pruneLayers?.length ?? 0) > 0) {
        stream = stream.pipeThrough(pruneLayers(options.pruneLayers!, (map) => {
          pruned = map;
          if (importance === undefined) return;
          importance.clear();
          for (const [name, values] of prunedImportance(imatrix!.entries, map)) {
            importance.set(name, values);
          }
        }));
      }
    }
    // The converter's file first (its forced Q8_0), which a preset then
    // quantizes as llama-quantize quantizes that file.
    if (forced !== undefined) {
      stream = stream.pipeThrough(
        new QuantizeStream({ to: "none", ggufTypes: true, forcedTypes: forced }),
      );
    }
    if (format === "apr" || options.quantize !== undefined) {
      stream = stream.pipeThrough(
        new QuantizeStream({
          to: options.quantize ?? "none",
          ...(forced !== undefined ? { forcedTypes: forced } : {}),
          all: options.quantizeAll === true,
          ggufTypes: format === "gguf",
          ...(format === "gguf" && options.keepNames !== true && !q8_0Again &&
              converterQuantizesEveryMatrix(model.header.metadata)
            ? { everyMatrix: true }
            : {}),
          ...(format === "gguf" && options.keepNames !== true && !q8_0Again &&
              converterConvertsAnyway(model.header.metadata) !== undefined
            ? { convertedAnyway: converterConvertsAnyway(model.header.metadata)! }
            : {}),
          ...(q8_0Again ? { llamaQuantizeQ8_0: true } : {}),
          ...(format === "gguf" && options.keepNames !== true && !q8_0Again &&
              converterKeepsSourceFloats(model.header.metadata)
            ? { sourceFloats: true }
            : {}),
          ...(options.rowFallback !== undefined ? { rowFallback: options.rowFallback } : {}),
          ...(format === "apr" && options.onNote
            ? {
              onPlan: (plans) =>
                aprPlanNotes(plans, options.rowFallback).forEach((n) => options.onNote!(n)),
            }
            : format === "gguf" && options.onNote &&
                (options.quantize === "q4_k" || options.quantize === "q6_k")
            ? {
              onPlan: (plans) => {
                const note = ggufRowFallbackNote(plans);
                if (note !== undefined) options.onNote!(note);
              },
            }
            : {}),
          ...(importance !== undefined ? { importance } : {}),
          ...(hasLlamaQuantizeFlags(options)
            ? { llamaQuantize: llamaQuantizeParams(options) }
            : {}),
          ...(options.threads !== undefined ? { workers: options.threads } : {}),
          // Several outputs of one read (convert_many.ts): batches sized to a share.
          streams: (model.reader as { sharedBy?: number }).sharedBy ?? 1,
        }),
      );
    }
    // Blocks kept as llama.cpp's converter keeps them stay so under --outtype
    // f32 too: a checkpoint's, or those a family makes (DeepSeek-V4's MXFP4 experts).
    const kept = keptBlocks(model, ggufNames);
    const keptAs = q8_0Again
      ? undefined
      : keptFileType(model, ggufNames, options.quantize ?? "none");
    if (format !== "apr") {
      const storage = (info: TensorInfo) =>
        options.float32
          // Integers (DeepSeek-V4's hash table) have no float form to decode to.
          ? (info.dtype === kept || !DTYPES[info.dtype].isFloat ||
              forced?.get(info.name) === info.dtype
            ? "keep"
            : "F32")
          : format === "gguf"
          ? ggufStorage(info, { asStored: (options.quantize ?? "none") === "none" })
          : representable(format, info)
          ? "keep"
          : "F32";
      stream = stream.pipeThrough(
        new DequantizeStream({
          keep: (info) => storage(info) === "keep",
          to: (info) => {
            const to = storage(info);
            return to === "keep" ? "F32" : to;
          },
          onDecode: (infos) => {
            if (!options.float32) warnDecoded(format, infos, options.onWarning);
          },
        }),
      );
    }
    stream = stream.pipeThrough(finalizeMetadata(model, source, folderName, options, (h) => {
      header = h;
      if (imatrix !== undefined) {
        warnMissingImportance(h, { ...imatrix, entries: importance! }, options);
      }
    }));
    if (format === "gguf" && options.keepNames !== true && part !== "vision") {
      stream = stream.pipeThrough(requireGgufVocabulary(model.header.metadata, location));
    }
    // Only a resumable output journals it: the identity of the source's content.
    const resumable = format === "apr"
      ? options.compress !== "lz4"
      : format === "gguf" && options.maxShardSize !== undefined;
    const sourceKey = resumable ? await sourceIdentityOf(model) : undefined;
    const made = await createSink(
      format,
      output,
      // llama.cpp's converter files a model with kept blocks under their type.
      keptAs !== undefined ? { ...options, ggufFileType: options.ggufFileType ?? keptAs } : options,
      imatrix,
      sourceKey,
      quantizedAs,
      byQuantize,
      () => pruned === undefined ? [] : [prunedBlockCount(header!, pruned)],
      split?.shardOf,
    );
    // A Hub model streamed without the cache is checked against its sha256s
    // before the output is renamed into place (FORMATS.md D5).
    // Ctrl-C gives up the tensor read in flight, whatever the sink (a stalled
    // server is not waited out; see abortable_reads.ts).
    if (options.signal) stream = stream.pipeThrough(abortableTensors(options.signal));
    await stream.pipeTo(
      checkBeforeClose(made.sink, () => model.verify()),
      options.signal ? { signal: options.signal } : {},
    );
    const written = header!;
    if (format === "apr") warnOnBf16(written, options.onWarning);
    // What APR's readers do with these outputs (issue 34 §3): said, never left silent.
    if (made.kind === "sharded-apr" && made.sink.result) {
      options.onNote?.(shardSetReadersLine(made.sink.result.shards.length));
    }
    if (made.kind === "apr-lz4") options.onNote?.(lz4ReadersLine());
    let dtypes: Record<string, number> = {};
    for (const t of written.tensors) dtypes[t.dtype] = (dtypes[t.dtype] ?? 0) + 1;
    let tensorBytes = written.tensors.reduce((s, t) => s + t.byteLength, 0);
    // QNAT converts as it writes (NF4 or F32 sections): report what it wrote.
    if (made.kind === "qnat" && made.sink.result) {
      dtypes = { ...made.sink.result.dtypes };
      tensorBytes = made.sink.result.tensorBytes;
    }
    const files = writtenPaths(made, output);
    return {
      output,
      format,
      sourceFormat: model.header.format,
      tensors: written.tensors.length,
      parameters: written.tensors.reduce((s, t) => s + elementCount(t.shape), 0),
      tensorBytes,
      fileBytes: await sizeOfAll(files),
      files,
      ...(made.kind === "split-gguf" ? { shards: [...made.sink.outputs] } : {}),
      resumedTensors: made.kind === "apr" || made.kind === "sharded-apr"
        ? made.sink.result?.resumedTensors ?? 0
        : made.kind === "split-gguf"
        ? made.sink.resumed.tensors
        : 0,
      resumedBytes: made.kind === "apr" || made.kind === "sharded-apr"
        ? made.sink.result?.resumedBytes ?? 0
        : made.kind === "split-gguf"
        ? made.sink.resumed.bytes
        : 0,
      dtypes,
      durationMs: Math.round(performance.now() - started),
    };
  } catch (error) {
    if (error instanceof ImportanceSizeError && imatrix !== undefined) {
      throw new ModelFormatError(
        "imatrix",
        imatrix.source,
        error.message.replace(/^Cannot use the importance matrix: its /, "its "),
        { cause: error },
      );
    }
    throw nameTheSource(
      error,
      typeof source === "string" ? source : model.location,
      format,
      output,
    );
  } finally {
    if (opened === undefined) await model.close();
  }
}

/** What of a conversion decides what becomes of kept blocks. */
function keptBlocksOptions(format: OutputFormat, options: ConvertOptions): KeptBlocksOptions {
  return {
    ggufNames: format === "gguf" && options.keepNames !== true,
    quantize: options.quantize ?? "none",
    allowRequantize: options.allowRequantize === true,
  };
}

/** A quantized checkpoint kept in F32 is several times its source's size: say how to shrink it. */
function noteDequantized(model: Model, options: ConvertOptions): void {
  const method = (model.reader as { quantMethod?: unknown }).quantMethod;
  if (typeof method !== "string" || (options.quantize ?? "none") !== "none") return;
  if (options.float32) return;
  // llama.cpp's converter dequantizes too, except the blocks it keeps for GGUF.
  const like = QUANT_METHODS.get(method)?.packedForGguf !== undefined
    ? "as llama.cpp's converter does (for GGUF it keeps MXFP4 and NVFP4 blocks)"
    : "as llama.cpp's converter does";
  options.onNote?.(
    `the ${method} checkpoint's quantized weights were dequantized to F32, ${like}; quantize: "bf16" (or another target) writes a smaller file`,
  );
}

/**
 * A quantized checkpoint whose method cannot go to GGUF, or whose forced
 * blocks cannot go under the target asked for (kept_block_targets.ts: FP8
 * matrices the converter writes as Q8_0, under a K-quant target without
 * `--allow-requantize`).
 */
function refuseGgufOf(model: Model, format: OutputFormat, options: ConvertOptions): void {
  if (format !== "gguf") return;
  const method = (model.reader as { quantMethod?: unknown }).quantMethod;
  checkKeptBlocks(model, keptBlocksOptions(format, options));
  const refusal = typeof method === "string" ? QUANT_METHODS.get(method)?.ggufRefusal : undefined;
  if (refusal !== undefined) {
    throw new UsageError(
      `Cannot convert "${model.location}" to gguf: its ${method} checkpoint cannot be written as GGUF yet: ${refusal}`,
    );
  }
}

/**
 * Check, before any output exists, that `source` can be converted with
 * `options`: the refusals {@linkcode convertModel} gives before it writes
 * (options that do not apply or combine, a family or checkpoint the format
 * cannot hold). The web page runs it before it asks for a file to save to.
 *
 * @param source The model, as {@linkcode convertModel} takes it.
 * @param options Format (default APR) and quantization, as {@linkcode convertModel} takes them.
 * @throws {UsageError} For a conversion {@linkcode convertModel} refuses before writing.
 * @throws {ModelFormatError} When the source is malformed.
 */
export async function checkConversion(
  source: ModelLocation,
  options: ConvertOptions = {},
): Promise<void> {
  const format = options.format ?? "apr";
  checkOptions(format, options);
  const model = await openModel(source, openOptionsFor(format, options));
  try {
    checkModelFor(model, typeof source === "string" ? source : model.location, format, options);
  } finally {
    await model.close();
  }
}

/** How a conversion to `format` opens its source. */
function openOptionsFor(format: OutputFormat, options: ConvertOptions): OpenModelOptions {
  // GGUF keeps the blocks llama.cpp's converter keeps (MXFP4, NVFP4).
  return format === "gguf" && options.keepNames !== true
    ? { ...options, packedForGguf: true }
    : options;
}

/** The refusals that need the open model, before the output exists. */
function checkModelFor(
  model: Model,
  location: string,
  format: OutputFormat,
  options: ConvertOptions,
): void {
  // A model that does not match its own config (a shard of another model,
  // a missing layer, a mis-shaped tensor) is refused before any output.
  assertModelMatchesConfig(model);
  refuseGgufOf(model, format, options);
  if ((format === "apr" || format === "gguf") && options.keepNames !== true) {
    assertSentenceModulesRecorded(model.header.metadata, location, format);
  }
  // A family aprkit cannot write as llama.cpp reads it is refused before the output exists.
  if (format === "gguf" && options.keepNames !== true) {
    assertGgufFamily(model.header.metadata, location, options.onWarning);
    assertGgufMadeTensors(model.header, location);
    assertGgufMtpBlocks(model.header, location);
  }
  if (format !== "gguf" && options.keepNames !== true) {
    assertReadsBack(model.header, location, format);
  }
  // realizar refuses a model whose config disagrees with its embedding: say so at import.
  if (format === "apr") assertEmbeddingMatchesConfig(languageModelView(model.header), location);
}

/**
 * Refuse a sentence-transformers model with a module APR and GGUF cannot say
 * (`embedding.unrecorded_modules`): its file would not tell how the model
 * makes its sentence vector.
 */
function assertSentenceModulesRecorded(
  metadata: ModelMetadata,
  location: string,
  format: OutputFormat,
): void {
  const modules = metadata["embedding.unrecorded_modules"];
  if (!Array.isArray(modules) || modules.length === 0) return;
  throw new UsageError(
    `Cannot convert "${location}" to ${format}: its sentence-transformers module ` +
      `${modules.join(", ")} is none aprkit records (Transformer, Pooling, Dense, Normalize), ` +
      `so the file would not say how the model makes its sentence vector`,
  );
}

/** The files a closed sink wrote. */
function writtenPaths(made: MadeSink, output: string): string[] {
  if (made.kind === "safetensors" || made.kind === "split-gguf") return [...made.sink.outputs];
  if (made.kind === "sharded-apr" && made.sink.result) {
    return [...made.sink.result.shards.map((s) => s.path), made.sink.result.manifestPath];
  }
  return [output];
}

async function sizeOfAll(paths: readonly string[]): Promise<number> {
  let total = 0;
  for (const path of paths) total += (await fs.stat(path)).size;
  return total;
}

/**
 * A tensor the output format cannot hold (a name that is not valid Unicode or
 * too long, too many dimensions), or metadata too large for it, is reported by the sink, which does not know
 * where the tensor came from: say which file it is, so the one line names it.
 */
function nameTheSource(
  error: unknown,
  location: string,
  format: OutputFormat,
  output: string,
): unknown {
  // Every refusal names a file (issue 20 item 8): writers and converters say
  // what they cannot do with a tensor or a value ("Cannot convert tensor
  // "B"", "Cannot encode GGUF: …", "Cannot write QNAT file: …") without
  // knowing which conversion they serve.
  if (
    (error instanceof TypeError || error instanceof RangeError) &&
    error.message.startsWith("Cannot ") &&
    !error.message.includes(`"${location}"`) && !error.message.includes(`"${output}"`)
  ) {
    return new UsageError(
      `Cannot convert "${location}" to ${format}: ${
        error.message.replace(/^Cannot /, "cannot ")
      } (writing "${output}")`,
      { cause: error },
    );
  }
  return error;
}

/**
 * Import any model into one APR v2 file: {@linkcode convertModel} with the APR format.
 *
 * @example Usage
 * ```ts ignore
 * import { importModel } from "./convert_model.ts";
 * await importModel("hf://org/name", "model.apr", { quantize: "q4_k" });
 * ```
 *
 * @param source A path, URL, Blob or `hf://` reference.
 * @param output The `.apr` path.
 * @param options Quantization, resume, progress.
 * @returns What was written.
 * @throws {Deno.errors.NotFound} When the source, or the output's folder, does not exist.
 * @throws {UsageError} For options that do not apply or combine, an output that exists without `force: true`, or a `resume` planned from another input or options.
 * @throws {ModelFormatError} When the source is malformed.
 * @throws {HubRequestError} When the Hub refuses or keeps failing.
 */
export function importModel(
  source: ModelLocation,
  output: string,
  options: Omit<ConvertOptions, "format"> = {},
): Promise<ConvertResult> {
  return convertModel(source, output, { ...options, format: "apr" });
}

/**
 * The output format an output path implies.
 *
 * @param path The output path.
 * @returns The format, or `undefined` for an unknown extension.
 */
export function formatFromPath(path: string): OutputFormat | undefined {
  const lower = path.toLowerCase();
  if (lower.endsWith(".apr")) return "apr";
  if (lower.endsWith(".safetensors")) return "safetensors";
  if (lower.endsWith(".gguf")) return "gguf";
  if (lower.endsWith(".qnat")) return "qnat";
  return undefined;
}

/** Each output format as its documentation spells it. */
const FORMAT_NAMES: Readonly<Record<OutputFormat, string>> = {
  apr: "APR",
  gguf: "GGUF",
  safetensors: "SafeTensors",
  qnat: "QNAT",
};

/**
 * One rule for every command (issue 34 §2): an output whose extension names
 * another format than the one written is refused (`apr import x.gguf -o
 * y.gguf` wrote an APR file named `.gguf`, which every GGUF reader refuses).
 * A name without a known extension takes the format asked for.
 */
function checkExtension(output: string, format: OutputFormat): void {
  const named = formatFromPath(output);
  if (named === undefined || named === format) return;
  throw new UsageError(
    `the output "${output}" ends in .${named}, but ${FORMAT_NAMES[format]} is what would be ` +
      `written: name it .${format}${
        format === "apr" ? `, or write ${FORMAT_NAMES[named]} with apr convert` : ""
      }`,
  );
}

/**
 * For `keepSplit`, the source set's split: the shard of each tensor and their
 * order in the source, by GGUF name (a tensor the source lacks goes last).
 * The source must be a split GGUF set.
 */
function sourceSplit(model: Model, location: string): {
  shardOf: (name: string) => number | undefined;
  compare: (a: string, b: string) => number;
} {
  const reader = model.reader as Partial<GgufSplitReader>;
  if (reader.ggufShards === undefined || reader.ggufShards.length < 2) {
    throw new UsageError(
      `keepSplit: "${location}" is not a split GGUF set (NAME-00001-of-0000N.gguf); ` +
        "there is no split to keep",
    );
  }
  const shard = new Map<string, number>();
  const index = new Map<string, number>();
  reader.ggufShards.forEach((h, i) =>
    h.tensors.forEach((t) => {
      shard.set(t.name, i);
      index.set(t.name, index.size);
    })
  );
  const at = (name: string) => index.get(name) ?? index.size;
  return { shardOf: (name) => shard.get(name), compare: (a, b) => at(a) - at(b) };
}

/** The per-tensor llama-quantize options given, by name. */
function flagsGiven(options: LlamaQuantizeFlags): string {
  return Object.entries({
    outputTensorType: options.outputTensorType !== undefined,
    tokenEmbeddingType: options.tokenEmbeddingType !== undefined,
    tensorTypes: (options.tensorTypes?.length ?? 0) > 0,
    "pure: true": options.pure === true,
    "leaveOutputTensor: true": options.leaveOutputTensor === true,
    "allowRequantize: true": options.allowRequantize === true,
    "keepSplit: true": options.keepSplit === true,
    includeWeights: (options.includeWeights?.length ?? 0) > 0,
    excludeWeights: (options.excludeWeights?.length ?? 0) > 0,
    overrideKv: (options.overrideKv?.length ?? 0) > 0,
    pruneLayers: (options.pruneLayers?.length ?? 0) > 0,
  }).filter(([, given]) => given).map(([name]) => name).join(", ");
}

function checkOptions(format: OutputFormat, options: ConvertOptions): void {
  if (!OUTPUT_FORMATS.includes(format)) {
    throw new UsageError(
      `Unknown format "${format}": expected one of ${OUTPUT_FORMATS.join(", ")}`,
    );
  }
  if (options.quantize !== undefined && !QUANTIZE_TARGETS.includes(options.quantize)) {
    throw new UsageError(
      `Unknown quantization "${options.quantize}": expected one of ${QUANTIZE_TARGETS.join(", ")}`,
    );
  }
  const preNames = ["default", ...PRE_TOKENIZER_NAMES];
  if (options.preTokenizer !== undefined && !preNames.includes(options.preTokenizer)) {
    throw new UsageError(
      `Unknown pre-tokenizer "${options.preTokenizer}": expected one of ${preNames.join(", ")}`,
    );
  }
  const preset = options.quantize === undefined
    ? undefined
    : presetOf(options.quantize, format === "gguf");
  if (preset !== undefined && preset !== "Q6_K" && format !== "gguf" && format !== "apr") {
    throw new UsageError(
      `quantize: "${options.quantize}" (a llama-quantize preset) works for GGUF and APR output, not ${format}`,
    );
  }
  // The single type q4_k of a quantized GGUF is llama-quantize's --pure Q4_K_M
  // of it (plan_quantization.ts), which requantizes only when told to.
  const requantizeOnly = options.allowRequantize === true &&
    !hasLlamaQuantizeFlags({ ...options, allowRequantize: false });
  const takesFlags = presetOf(options.quantize ?? "none", true) !== undefined ||
    (options.quantize === "q4_k" && requantizeOnly);
  if (hasLlamaQuantizeFlags(options)) {
    if (format !== "gguf" || !takesFlags) {
      throw new UsageError(
        `${flagsGiven(options)}: for GGUF output with a llama-quantize file type only ` +
          `(quantize: "q4_k_m", …; allowRequantize: true with "q4_k" too), not ${format} ` +
          `with quantize: "${options.quantize ?? "none"}"`,
      );
    }
    llamaQuantizeParams(options);
    (options.overrideKv ?? []).forEach(parseKvOverride);
    for (const layer of options.pruneLayers ?? []) {
      if (!Number.isSafeInteger(layer) || layer < 0) {
        throw new UsageError(`pruneLayers: ${layer} is not a layer number (whole, from 0)`);
      }
    }
    if (
      ((options.includeWeights?.length ?? 0) > 0 || (options.excludeWeights?.length ?? 0) > 0) &&
      options.imatrix === undefined
    ) {
      throw new UsageError(
        "includeWeights and excludeWeights choose entries of the importance matrix: give the imatrix option too",
      );
    }
    if (options.keepSplit === true && options.maxShardSize !== undefined) {
      throw new UsageError(
        "keepSplit: true splits as the source is split; it cannot be combined with maxShardSize",
      );
    }
  }
  if (options.quantize === "q8_0" && format === "apr") {
    throw new UsageError(
      'quantize: "q8_0" works for GGUF output only: APR readers do not decode Q8_0 (use quantize: "q8" for APR_Q8)',
    );
  }
  const aprRefused = format === "apr" && options.quantize !== undefined
    ? aprPresetRefusal(options.quantize)
    : undefined;
  if (aprRefused !== undefined) throw new UsageError(`quantize: ${aprRefused}`);
  if (
    options.quantize !== undefined && (format === "gguf" || format === "safetensors") &&
    !quantizeTargetsFor(format).includes(options.quantize)
  ) {
    // Written as F32 with a warning, the output was twice a BF16 source's size.
    const type = targetDType(options.quantize) ?? options.quantize;
    throw new UsageError(
      `quantize: "${options.quantize}" is ${type}, which ${
        format === "gguf" ? "GGUF" : "SafeTensors"
      } has no type for; ${format} output takes ${
        quantizeTargetsFor(format).filter((t) => t !== "none").join(", ")
      }`,
    );
  }
  if (options.imatrix !== undefined && !IMATRIX_TARGETS.has(options.quantize ?? "none")) {
    throw new UsageError(
      `the imatrix option needs a K-quant quantize target (q4_k, q6_k or a preset), not ${
        options.quantize ?? "none"
      }`,
    );
  }
  if (options.mmproj !== undefined && (format !== "gguf" || options.keepNames === true)) {
    throw new UsageError(
      `mmproj works for GGUF output only (a vision GGUF beside the text GGUF), not ${
        format === "gguf" ? "with keepNames" : format
      }`,
    );
  }
  if (options.keepVision === true && format !== "apr") {
    throw new UsageError(
      format === "gguf"
        ? "keepVision works for APR output only: a GGUF holds the language model (llama.cpp reads the vision tower from a separate --mmproj file)"
        : `keepVision works for APR output only, not ${format}`,
    );
  }
  if (options.rowFallback !== undefined) {
    if (!ROW_FALLBACKS.includes(options.rowFallback)) {
      throw new UsageError(
        `Unknown row fallback "${options.rowFallback}": expected one of ${
          ROW_FALLBACKS.join(", ")
        }`,
      );
    }
    if (format !== "apr") {
      throw new UsageError(
        `rowFallback works for APR output only, not ${format} (GGUF gets llama-quantize's fallback types)`,
      );
    }
  }
  if (options.resume && format !== "apr" && !(format === "gguf" && options.maxShardSize)) {
    throw new UsageError(
      `resume: true works for APR output and split GGUF output (maxShardSize) only, not ${format}`,
    );
  }
  if (options.compress !== undefined) {
    if (options.compress !== "lz4") {
      throw new UsageError(`Unknown compression "${options.compress}": expected lz4`);
    }
    if (format !== "apr") {
      throw new UsageError(`compress: "lz4" works for APR output only, not ${format}`);
    }
    if (options.resume) {
      throw new UsageError('compress: "lz4" cannot be combined with resume: true');
    }
    if (options.maxShardSize !== undefined) {
      throw new UsageError('compress: "lz4" cannot be combined with maxShardSize');
    }
  }
  if ((options.blockSize !== undefined || options.doubleQuant) && format !== "qnat") {
    throw new UsageError(
      `blockSize and doubleQuant work for QNAT output only, not ${format}`,
    );
  }
  if (options.maxShardSize !== undefined && format === "qnat") {
    throw new UsageError(
      `maxShardSize works for SafeTensors, APR and GGUF output only, not ${format}`,
    );
  }
}

/**
 * The block count llama-quantize sets after pruning, last of all its keys:
 * the blocks kept, under the GGUF architecture's key.
 */
function prunedBlockCount(
  header: ModelHeader,
  map: ReadonlyMap<number, number>,
): readonly [string, GgufKvInput] {
  const arch = header.metadata.architecture;
  const gguf = familyOf(arch)?.ggufArchitecture ?? String(arch);
  return [`${gguf}.block_count`, { type: GgufValueType.UINT32, value: map.size }];
}

/** A resumed APR output must have been quantized with the same importance matrix. */
function imatrixKey(options: ConvertOptions): { imatrix?: string } {
  const m = options.imatrix;
  return m === undefined ? {} : { imatrix: typeof m === "string" ? m : m.source };
}

/**
 * Whether GGUF output of this target is what llama-quantize writes (its
 * K-quant presets). Q8_0 is also the converter's own `--outtype q8_0`, and
 * follows the converter, unless it quantizes kept blocks again
 * (`requantizedQ8_0`, kept_block_targets.ts).
 */
function isLlamaQuantizePreset(
  to: QuantizeTarget | undefined,
  requantizedQ8_0 = false,
): boolean {
  const preset = to === undefined ? undefined : presetOf(to, true);
  return preset !== undefined && (preset !== "Q8_0" || requantizedQ8_0);
}

/** The K-quant preset an APR file's `quantization` record names, if any. */
function recordedPreset(metadata: ModelMetadata): QuantizeTarget | undefined {
  const type = (metadata.quantization as { quant_type?: unknown } | null | undefined)?.quant_type;
  return type === "q4_k_m" || type === "q4_k_s" || type === "q5_k_m" || type === "q5_k_s"
    ? type
    : undefined;
}

/** llama.cpp's `general.file_type` of the converter's float --outtype values. */
const OUTTYPE_FTYPES: Readonly<Partial<Record<QuantizeTarget, number>>> = { f16: 1, bf16: 32 };

/** A resumed APR output must have been planned with the same row fallback (the default adds nothing). */
function rowFallbackKey(options: ConvertOptions): { rowFallback?: RowFallback } {
  const f = options.rowFallback;
  return f === undefined || f === "q8" ? {} : { rowFallback: f };
}

/** Targets whose encoders use an importance matrix: q4_k, q6_k and llama-quantize's file types. */
const IMATRIX_TARGETS: ReadonlySet<QuantizeTarget> = new Set(
  QUANTIZE_TARGETS.filter((t) => t === "q4_k" || presetOf(t, true) !== undefined),
);

/**
 * llama-quantize says which tensors the matrix lacks ("did not find weights"),
 * and quantizes them without: so do we, in one warning.
 */
function warnMissingImportance(
  header: ModelHeader,
  imatrix: ImportanceMatrix,
  options: ConvertOptions,
): void {
  const missing = header.tensors
    .filter((t) => usesImportance(t.dtype) && !imatrix.entries.has(hfToGgufName(t.name)))
    .map((t) => hfToGgufName(t.name));
  if (missing.length > 0) {
    options.onWarning?.(
      `the importance matrix "${imatrix.source}" has no entry for ${missing.length} tensor(s) ` +
        `(${missing.slice(0, 3).join(", ")}${missing.length > 3 ? ", …" : ""}); ` +
        "they are quantized without it, as llama-quantize does",
    );
  }
}

/**
 * Say which tensors an export decodes because the format cannot hold them
 * as they are (1-D tensors decoded to F32 for GGUF are llama.cpp's rule, not
 * a loss, and go unmentioned).
 */
function warnDecoded(
  format: OutputFormat,
  infos: readonly TensorInfo[],
  onWarning: ((message: string) => void) | undefined,
): void {
  const padded = format === "gguf" ? infos.filter(hasPaddedRows) : [];
  if (padded.length > 0) {
    const as = [...new Set(padded.map((i) => ggufStorage(i)))].join("/");
    onWarning?.(
      `${padded.length} ${[...new Set(padded.map((i) => i.dtype))].join("/")} tensor(s) have ` +
        `rows that are not whole blocks (padded per row), which GGUF cannot hold; writing them ` +
        `as ${as}, as llama-quantize does`,
    );
  }
  const foreign = infos.filter((i) =>
    DTYPES[i.dtype][format === "gguf" ? "ggufType" : "safetensors"] === undefined
  );
  if (foreign.length > 0) {
    onWarning?.(
      `${foreign.length} tensor(s) of types ${
        [...new Set(foreign.map((i) => i.dtype))].join(", ")
      } have no ${format} type; writing them as F32`,
    );
  }
}

/**
 * APR dtype 30 (BF16) is read by realizar's transformer loader and current
 * aprender, not by aprender 0.26 or realizar's `get_tensor_f32`: say so once
 * after an import that kept BF16 tensors (docs/INTEROP.md).
 */
function warnOnBf16(
  header: ModelHeader,
  onWarning: ((message: string) => void) | undefined,
): void {
  const n = header.tensors.filter((t) => t.dtype === "BF16").length;
  if (n > 0) {
    onWarning?.(
      `${n} tensor(s) are written as BF16 (APR dtype 30), which aprender 0.26 and ` +
        `realizar's get_tensor_f32 (current, not only older builds: it has no BF16 case) cannot ` +
        `decode; use quantize: "f16" for them`,
    );
  }
}

function representable(format: OutputFormat, info: TensorInfo): boolean {
  const spec = DTYPES[info.dtype];
  // QnatSink decodes every input type itself (NF4 or F32 sections).
  if (format === "qnat") return true;
  return format === "safetensors" ? spec.safetensors !== undefined : spec.ggufType !== undefined;
}

/**
 * The sink of a conversion, by kind. Each writer but GGUF's is loaded here, by
 * the conversion that writes it: a GGUF conversion loads no APR, SafeTensors
 * or QNAT code (start-up is paid by every run: docs/BENCHMARKS.md, "Fixed
 * costs per run").
 */
type MadeSink =
  | { kind: "apr"; sink: AprSink }
  | { kind: "apr-lz4"; sink: AprLz4Sink }
  | { kind: "sharded-apr"; sink: ShardedAprSink }
  | { kind: "safetensors"; sink: SafetensorsSink }
  | { kind: "gguf"; sink: GgufSink }
  | { kind: "split-gguf"; sink: SplitGgufSink }
  | { kind: "qnat"; sink: QnatSink };

async function createSink(
  format: OutputFormat,
  output: string,
  options: ConvertOptions,
  imatrix: ImportanceMatrix | undefined,
  sourceKey: string | undefined,
  quantizedAs: QuantizeTarget | undefined,
  byQuantize: boolean,
  lateKv: () => readonly (readonly [string, GgufKvInput])[],
  shardOf?: (name: string) => number | undefined,
): Promise<MadeSink> {
  const source = sourceKey === undefined ? {} : { sourceKey };
  const common = {
    force: options.force === true,
    ...(options.onProgress ? { onProgress: options.onProgress } : {}),
  };
  switch (format) {
    case "apr": {
      if (options.compress === "lz4") {
        const { AprLz4Sink } = await import("../formats/apr/lz4_sink.ts");
        return { kind: "apr-lz4", sink: await AprLz4Sink.create(output, common) };
      }
      // Resuming, one file or shards: the journal's source and plan must match this run's.
      const resumable = {
        resume: options.resume === true,
        ...source,
        ...(options.commitBytes !== undefined ? { commitBytes: options.commitBytes } : {}),
        planKey: JSON.stringify({
          quantize: options.quantize ?? "none",
          all: options.quantizeAll === true,
          keepNames: options.keepNames === true,
          ...imatrixKey(options),
          ...rowFallbackKey(options),
        }),
      };
      if (options.maxShardSize !== undefined) {
        const { ShardedAprSink } = await import("../formats/apr/sharded_sink.ts");
        const sink = await ShardedAprSink.create(output, {
          ...common,
          maxShardSize: options.maxShardSize,
          ...(options.onWarning !== undefined ? { onWarning: options.onWarning } : {}),
          ...resumable,
        });
        return { kind: "sharded-apr", sink };
      }
      const { AprSink } = await import("../formats/apr/sink.ts");
      const sink = await AprSink.create(output, { ...common, ...resumable });
      return { kind: "apr", sink };
    }
    case "safetensors": {
      const { SafetensorsSink } = await import("../formats/safetensors/writer.ts");
      const sink = await SafetensorsSink.create(output, {
        ...common,
        ...(options.maxShardSize !== undefined ? { maxShardSize: options.maxShardSize } : {}),
      });
      return { kind: "safetensors", sink };
    }
    case "gguf": {
      const preset = quantizedAs === undefined ? undefined : presetOf(quantizedAs, true);
      // The preset's mix names the file type; otherwise the sink derives it from the tensors.
      // As the converter's --outtype: the file type says what was asked for,
      // even where 1-D tensors (F32) outnumber the matrices (StarCoder2's biases).
      const fileType = options.ggufFileType ??
        (preset !== undefined
          ? LLAMA_FTYPES[preset]
          : options.quantize !== undefined
          ? OUTTYPE_FTYPES[options.quantize]
          : undefined);
      const ggufOptions = {
        ...common,
        keepNames: options.keepNames === true,
        // A K-quant preset's file is llama-quantize's, dimensions and key order
        // included; Q8_0 is also what llama.cpp's converter writes itself
        // (--outtype q8_0), and follows the converter.
        squeezeDims: byQuantize,
        ...(fileType !== undefined ? { fileType } : {}),
        extraKv: {
          *[Symbol.iterator]() {
            // llama-quantize sets these two last, after the model's keys.
            if (byQuantize && fileType !== undefined) {
              yield ["general.quantization_version", { type: GgufValueType.UINT32, value: 2 }];
              yield ["general.file_type", { type: GgufValueType.UINT32, value: fileType }];
            }
            // Then --override-kv's pairs, in the order given.
            yield* (options.overrideKv ?? []).map(parseKvOverride);
            // As llama-quantize --imatrix: which matrix the model was quantized with.
            if (imatrix !== undefined) yield* imatrixGgufKv(imatrix);
            // Known once the stream's header is seen (--prune-layers' block count).
            yield* lateKv();
          },
        } as Iterable<readonly [string, GgufKvInput]>,
      };
      if (shardOf !== undefined) {
        // llama-quantize --keep-split: the source's shards, OUT-0000i-of-0000N.gguf.
        const { SplitGgufSink } = await import("../formats/gguf/split_sink.ts");
        return {
          kind: "split-gguf",
          sink: await SplitGgufSink.create(output, { ...ggufOptions, shardOf }),
        };
      }
      if (options.maxShardSize !== undefined) {
        // gguf-split's layout: OUT-0000i-of-0000N.gguf, loaded from the first.
        const { SplitGgufSink } = await import("../formats/gguf/split_sink.ts");
        const sink = await SplitGgufSink.create(output, {
          ...ggufOptions,
          maxShardSize: options.maxShardSize,
          resume: options.resume === true,
          ...(options.onWarning !== undefined ? { onWarning: options.onWarning } : {}),
          ...source,
          planKey: JSON.stringify({
            quantize: options.quantize ?? "none",
            all: options.quantizeAll === true,
            float32: options.float32 === true,
            ...imatrixKey(options),
          }),
        });
        return { kind: "split-gguf", sink };
      }
      return { kind: "gguf", sink: await GgufSink.create(output, ggufOptions) };
    }
    case "qnat": {
      const { QnatSink } = await import("../formats/qnat/sink.ts");
      const sink = await QnatSink.create(output, {
        ...common,
        ...(options.blockSize !== undefined ? { blockSize: options.blockSize } : {}),
        doubleQuant: options.doubleQuant === true,
      });
      return { kind: "qnat", sink };
    }
  }
}

/**
 * Last stage before the sink: set the metadata that depends on the final
 * tensors (parameter count, total size) and where the model came from. No
 * timestamp is written, so the same input and options give the same bytes.
 */
function finalizeMetadata(
  model: Model,
  source: ModelLocation,
  folderName: string | undefined,
  options: ConvertOptions,
  onHeader: (header: ModelHeader) => void,
): TransformStream<ModelChunk, ModelChunk> {
  return new TransformStream<ModelChunk, ModelChunk>({
    transform(chunk, controller) {
      if (chunk.type !== "header") {
        controller.enqueue(chunk);
        return;
      }
      const tensors = chunk.header.tensors;
      const metadata: ModelMetadata = {
        ...chunk.header.metadata,
        original_format: chunk.header.metadata.original_format ?? model.header.format,
        total_size: tensors.reduce((s, t) => s + t.byteLength, 0),
        param_count: tensors.reduce((s, t) => s + elementCount(t.shape), 0),
      };
      // aprender's importer names an imported transformer's model_type after
      // its architecture ("llama", "qwen2"); an APR source keeps its own.
      if (!metadata.model_type && typeof metadata.architecture === "string") {
        metadata.model_type = metadata.architecture;
      }
      // A Hugging Face model's name, licence, author… as llama.cpp's
      // converter finds them: its model card, else its folder's name
      // (`tiny-llama` → "Tiny Llama"); the folder is kept for GGUF export.
      if (folderName !== undefined) {
        metadata["hf_folder_name"] = folderName;
        const total = metadata.param_count ?? 0;
        const general = generalMetadataOf(metadata, folderName, {
          total,
          shared: total,
          expert: 0,
          expertCount: 0,
        });
        for (const [field, value] of Object.entries(aprGeneralFields(general))) {
          if (metadata[field] === undefined || metadata[field] === null) metadata[field] = value;
        }
      }
      if (options.preTokenizer !== undefined) {
        metadata["tokenizer.pre"] = options.preTokenizer;
        metadata["tokenizer.pre_type"] = options.preTokenizer;
      }
      if (typeof source === "string" && isHubRef(source)) {
        const ref = parseHubRef(source);
        metadata.source = `hf://${ref.repoId}${ref.quant ? `:${ref.quant}` : ""}${
          ref.path ? `/${ref.path}` : ""
        }`;
      }
      const header = { ...chunk.header, metadata };
      onHeader(header);
      controller.enqueue({ type: "header", header });
    },
  });
}
