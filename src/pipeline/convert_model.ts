/**
 * `convertModel()` and `importModel()`: any model in, one file out, through
 * the stream pipeline — reader → quantizer → (decoder) → sink — in one pass
 * and bounded memory.
 *
 * @module
 */

import { dirname } from "node:path";
import { DTYPES, elementCount } from "../dtype.ts";
import { UsageError } from "../errors.ts";
import { AprSink } from "../formats/apr/sink.ts";
import { AprLz4Sink } from "../formats/apr/lz4_sink.ts";
import { ShardedAprSink } from "../formats/apr/sharded_sink.ts";
import { GgufSink } from "../formats/gguf/sink.ts";
import { QnatSink } from "../formats/qnat/sink.ts";
import { SafetensorsSink } from "../formats/safetensors/writer.ts";
import { QUANTIZE_TARGETS, type QuantizeTarget } from "../quant/plan_quantization.ts";
import { QuantizeStream } from "../quant/quantize_stream.ts";
import { isHubRef, parseHubRef } from "../sources/hub_ref.ts";
import type {
  ModelChunk,
  ModelHeader,
  ModelMetadata,
  ProgressCallback,
  TensorInfo,
} from "../tensor.ts";
import { checkBeforeClose } from "./_check_before_close.ts";
import { DequantizeStream } from "./dequantize_stream.ts";
import { addTiedLmHead, dropTiedLmHead } from "./tied_embeddings.ts";
import type { Model } from "./model.ts";
import { type ModelLocation, openModel, type OpenModelOptions } from "./open_model.ts";

export type { QuantizeTarget };

/** Output formats of {@linkcode convertModel}. */
export type OutputFormat = "apr" | "safetensors" | "gguf" | "qnat";

/** Every output format, for validation and help. */
export const OUTPUT_FORMATS: readonly OutputFormat[] = ["apr", "safetensors", "gguf", "qnat"];

export { QUANTIZE_TARGETS };

/**
 * Options of {@linkcode convertModel}. Its `signal` stops the conversion: an
 * APR output keeps what it committed for `resume`, other outputs remove their
 * partial files, and the call rejects with the signal's reason.
 */
export interface ConvertOptions extends OpenModelOptions {
  /** Output format. @default from the output's extension, else `"apr"` */
  format?: OutputFormat;
  /** Quantize weights to this type (`none` keeps source types). @default "none" */
  quantize?: QuantizeTarget;
  /** Quantize every float tensor, not only large weight matrices. @default false */
  quantizeAll?: boolean;
  /**
   * Encoder worker threads for q4_k/q6_k and the other quantizers (each
   * costs ~25 MiB); 0 encodes on the main thread.
   * @default one per core, at most 4
   */
  threads?: number;
  /** Decode every tensor to F32 (exports). @default false */
  float32?: boolean;
  /** Continue an interrupted APR output from its partial file and journal. @default false */
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
   * SafeTensors or APR output: split into shards of at most this many bytes of
   * tensor data (APR: `NAME-0000i-of-0000N.apr` plus `NAME.apr.manifest.json`).
   */
  maxShardSize?: number;
  /** Progress of the write (bytes and tensors). */
  onProgress?: ProgressCallback;
  /** Told, in one line, about a choice that changes the output (a tied lm_head copy added). */
  onNote?: (message: string) => void;

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
  /** Tensor payload bytes written. */
  tensorBytes: number;
  /** Tensors found complete in a resumed partial output (APR only). */
  resumedTensors: number;
  /**
   * Payload bytes found committed in a resumed partial output (APR only):
   * whole tensors and the committed part of the tensor that was being
   * written.
   */
  resumedBytes: number;
  /** Tensors stored in each dtype. */
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
 */
export async function convertModel(
  source: ModelLocation,
  output: string,
  options: ConvertOptions = {},
): Promise<ConvertResult> {
  const started = performance.now();
  const format = options.format ?? formatFromPath(output) ?? "apr";
  checkOptions(format, options);
  await assertFolderExists(output);
  const model = await openModel(source, options);
  try {
    let header: ModelHeader | undefined;
    // APR output gets an explicit lm_head for tied embeddings (realizar needs
    // it); other formats tie it themselves, so a copy is dropped there.
    let stream = model.chunks().pipeThrough(
      format === "apr" ? addTiedLmHead(options.onNote) : dropTiedLmHead(),
    );
    if (format === "apr" || options.quantize !== undefined) {
      stream = stream.pipeThrough(
        new QuantizeStream({
          to: options.quantize ?? "none",
          all: options.quantizeAll === true,
          ...(options.threads !== undefined ? { workers: options.threads } : {}),
        }),
      );
    }
    if (format !== "apr") {
      stream = stream.pipeThrough(
        new DequantizeStream({
          keep: (info) => !options.float32 && representable(format, info),
          onDecode: (infos) => {
            if (!options.float32) {
              options.onWarning?.(
                `${infos.length} tensor(s) of types ${
                  [...new Set(infos.map((i) => i.dtype))].join(", ")
                } have no ${format} type; writing them as F32`,
              );
            }
          },
        }),
      );
    }
    stream = stream.pipeThrough(finalizeMetadata(model, source, (h) => (header = h)));
    const sink = await createSink(format, output, options);
    // A Hub model streamed without the cache is checked against its sha256s
    // before the output is renamed into place (FORMATS.md D5).
    await stream.pipeTo(
      checkBeforeClose(sink, () => model.verify()),
      options.signal ? { signal: options.signal } : {},
    );
    const written = header!;
    const dtypes: Record<string, number> = {};
    for (const t of written.tensors) dtypes[t.dtype] = (dtypes[t.dtype] ?? 0) + 1;
    return {
      output,
      format,
      sourceFormat: model.header.format,
      tensors: written.tensors.length,
      parameters: written.tensors.reduce((s, t) => s + elementCount(t.shape), 0),
      tensorBytes: written.tensors.reduce((s, t) => s + t.byteLength, 0),
      resumedTensors: sink instanceof AprSink || sink instanceof ShardedAprSink
        ? sink.result?.resumedTensors ?? 0
        : 0,
      resumedBytes: sink instanceof AprSink || sink instanceof ShardedAprSink
        ? sink.result?.resumedBytes ?? 0
        : 0,
      dtypes,
      durationMs: Math.round(performance.now() - started),
    };
  } catch (error) {
    throw nameTheSource(error, typeof source === "string" ? source : model.location, format);
  } finally {
    await model.close();
  }
}

/**
 * A tensor the output format cannot hold (a name that is not valid Unicode or
 * too long, too many dimensions) is reported by the sink, which does not know
 * where the tensor came from: say which file it is, so the one line names it.
 */
function nameTheSource(error: unknown, location: string, format: OutputFormat): unknown {
  if (
    (error instanceof TypeError || error instanceof RangeError) &&
    /^Cannot (use tensor name|store tensor)/.test(error.message) &&
    !error.message.includes(location)
  ) {
    return new UsageError(
      `Cannot convert "${location}" to ${format}: ${error.message.replace(/^Cannot /, "cannot ")}`,
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
  if (options.resume && format !== "apr") {
    throw new UsageError(`--resume works for APR output only, not ${format}`);
  }
  if (options.compress !== undefined) {
    if (options.compress !== "lz4") {
      throw new UsageError(`Unknown compression "${options.compress}": expected lz4`);
    }
    if (format !== "apr") {
      throw new UsageError(`--compress works for APR output only, not ${format}`);
    }
    if (options.resume) throw new UsageError("--compress lz4 cannot be combined with --resume");
    if (options.maxShardSize !== undefined) {
      throw new UsageError("--compress lz4 cannot be combined with --max-shard-size");
    }
  }
  if ((options.blockSize !== undefined || options.doubleQuant) && format !== "qnat") {
    throw new UsageError(
      `--block-size and --double-quant work for QNAT output only, not ${format}`,
    );
  }
  if (options.maxShardSize !== undefined && format !== "safetensors" && format !== "apr") {
    throw new UsageError(
      `--max-shard-size works for SafeTensors and APR output only, not ${format}`,
    );
  }
}

function representable(format: OutputFormat, info: TensorInfo): boolean {
  const spec = DTYPES[info.dtype];
  // QnatSink decodes every input type itself (NF4 or F32 sections).
  if (format === "qnat") return true;
  return format === "safetensors" ? spec.safetensors !== undefined : spec.ggufType !== undefined;
}

function createSink(
  format: OutputFormat,
  output: string,
  options: ConvertOptions,
): Promise<WritableStream<ModelChunk>> {
  const common = {
    force: options.force === true,
    ...(options.onProgress ? { onProgress: options.onProgress } : {}),
  };
  switch (format) {
    case "apr":
      if (options.compress === "lz4") return AprLz4Sink.create(output, common);
      if (options.maxShardSize !== undefined) {
        return ShardedAprSink.create(output, {
          ...common,
          maxShardSize: options.maxShardSize,
          resume: options.resume === true,
          ...(options.commitBytes !== undefined ? { commitBytes: options.commitBytes } : {}),
          planKey: JSON.stringify({
            quantize: options.quantize ?? "none",
            all: options.quantizeAll === true,
            keepNames: options.keepNames === true,
          }),
        });
      }
      return AprSink.create(output, {
        ...common,
        resume: options.resume === true,
        ...(options.commitBytes !== undefined ? { commitBytes: options.commitBytes } : {}),
        planKey: JSON.stringify({
          quantize: options.quantize ?? "none",
          all: options.quantizeAll === true,
          keepNames: options.keepNames === true,
        }),
      });
    case "safetensors":
      return SafetensorsSink.create(output, {
        ...common,
        ...(options.maxShardSize !== undefined ? { maxShardSize: options.maxShardSize } : {}),
      });
    case "gguf":
      return GgufSink.create(output, { ...common, keepNames: options.keepNames === true });
    case "qnat":
      return QnatSink.create(output, {
        ...common,
        ...(options.blockSize !== undefined ? { blockSize: options.blockSize } : {}),
        doubleQuant: options.doubleQuant === true,
      });
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
      if (typeof source === "string" && isHubRef(source)) {
        const ref = parseHubRef(source);
        metadata.source = `hf://${ref.repoId}${ref.path ? `/${ref.path}` : ""}`;
      }
      const header = { ...chunk.header, metadata };
      onHeader(header);
      controller.enqueue({ type: "header", header });
    },
  });
}

/**
 * The output's folder must exist, as for `cp`: a mistyped folder is reported
 * rather than created (checked before the source is opened).
 */
async function assertFolderExists(output: string): Promise<void> {
  const folder = dirname(output) || ".";
  const info = await Deno.stat(folder).catch(() => undefined);
  if (info === undefined) {
    throw new UsageError(
      `Cannot write "${output}": the folder "${folder}" does not exist; create it first`,
    );
  }
  if (!info.isDirectory) {
    throw new UsageError(`Cannot write "${output}": "${folder}" is not a folder`);
  }
}
