/**
 * aprkit: import machine-learning models — Hugging Face repositories of
 * (sharded) SafeTensors, GGUF files — into the single-file APR v2 tensor
 * format that aprender and realizar read, streaming, in bounded memory, with
 * resume. Also reads APR back, validates it, quantizes, and exports to
 * SafeTensors and GGUF.
 *
 * A model flows as a `ReadableStream` of {@linkcode ModelChunk}s (a header,
 * then one re-openable tensor payload each) through `TransformStream`
 * quantizers into a `WritableStream` sink.
 *
 * Runs in Deno, in Node ≥ 20 (bundled: `deno task bundle`) and in browsers
 * (`File`/`Blob` in, a picked file out through {@linkcode bindOutput}).
 *
 * @example Import a model in one call
 * ```ts ignore
 * import { importModel } from "@aprkit/apr";
 * await importModel("hf://Qwen/Qwen2.5-0.5B", "qwen.apr", { quantize: "q4_k" });
 * ```
 *
 * @example Compose the streams yourself
 * ```ts ignore
 * import { AprSink, openModel, QuantizeStream } from "@aprkit/apr";
 * const model = await openModel("model.safetensors");
 * await model.chunks()
 *   .pipeThrough(new QuantizeStream({ to: "f16" }))
 *   .pipeTo(await AprSink.create("model.apr"));
 * ```
 *
 * @example Random access to any tensor, any format
 * ```ts ignore
 * import { openModel } from "@aprkit/apr";
 * const model = await openModel("model.gguf");
 * const values = await model.tensor("model.embed_tokens.weight").toFloat32();
 * await model.close();
 * ```
 *
 * @module
 */

// Shared vocabulary.
export {
  type DType,
  dtypeFromAprCode,
  dtypeFromGgufType,
  dtypeFromSafetensors,
  type DTypeLayout,
  DTYPES,
  type DTypeSpec,
  elementCount,
  tensorByteLength,
} from "./src/dtype.ts";
export {
  EnvironmentError,
  type FormatName,
  HubAnswerError,
  HubOfflineError,
  HubRequestError,
  HubUnreachableError,
  ModelFormatError,
  UsageError,
} from "./src/errors.ts";
export {
  type ModelChunk,
  modelChunks,
  type ModelHeader,
  type ModelMetadata,
  type ModelReader,
  type ProgressCallback,
  type ProgressEvent,
  type TensorEntry,
  type TensorInfo,
} from "./src/tensor.ts";

// Opening, importing, converting.
export { Model, ModelTensor } from "./src/pipeline/model.ts";
export { type ModelLocation, openModel, type OpenModelOptions } from "./src/pipeline/open_model.ts";
export {
  convertModel,
  type ConvertOptions,
  type ConvertResult,
  importModel,
  type OutputFormat,
} from "./src/pipeline/convert_model.ts";
export {
  type ConvertManyOptions,
  convertModels,
  type OutputSpec,
} from "./src/pipeline/convert_many.ts";
export {
  DequantizeStream,
  type DequantizeStreamOptions,
} from "./src/pipeline/dequantize_stream.ts";
export { type TensorStats, tensorStats } from "./src/pipeline/tensor_stats.ts";
export { compareTensors, type TensorDifference } from "./src/pipeline/compare_tensors.ts";

// Quantization.
export { QuantizeStream, type QuantizeStreamOptions } from "./src/quant/quantize_stream.ts";
export {
  ImportanceSizeError,
  planQuantization,
  type QuantizeOptions,
  type QuantizeTarget,
  type TensorAction,
  type TensorPlan,
} from "./src/quant/plan_quantization.ts";
export { aprRowType, ROW_FALLBACKS, type RowFallback } from "./src/quant/apr_row_fallback.ts";
export {
  LLAMA_FTYPES,
  LLAMA_PRESETS,
  type LlamaPreset,
  type LlamaQuantizeParams,
  presetTensorTypes,
  type PresetTypesOptions,
  type TensorTypeOverride,
} from "./src/quant/llama_presets.ts";
export {
  hasLlamaQuantizeFlags,
  type LlamaQuantizeFlags,
  llamaQuantizeParams,
} from "./src/quant/llama_quantize_params.ts";
export { type ImportanceMatrix, parseImatrixDat } from "./src/formats/imatrix/imatrix_dat.ts";
export { readImportanceMatrix } from "./src/pipeline/read_imatrix.ts";
export { decodeStream, type DecodeStreamOptions, decodeToFloat32 } from "./src/quant/decode.ts";
export { type KernelBackend, kernelBackend, setKernelBackend } from "./src/quant/kernels.ts";

// APR v2.
export {
  type AprCheck,
  type AprDataOrder,
  type AprFooterCheck,
  type AprHeader,
  type AprLayoutOptions,
  AprLz4Sink,
  type AprLz4SinkOptions,
  type AprManifestShard,
  AprReader,
  type AprReaderOptions,
  type AprShardManifest,
  AprSink,
  type AprSinkOptions,
  type AprSinkResult,
  type AprTensorData,
  type AprTensorEntry,
  AprWriter,
  type AprWriterOptions,
  encodeApr,
  type EncodeAprInput,
  openApr,
  openShardedApr,
  type OpenShardedAprOptions,
  type ShardedAprReader,
  ShardedAprSink,
  type ShardedAprSinkOptions,
  type ShardedAprSinkResult,
  validateApr,
  type ValidateAprOptions,
} from "./src/formats/apr/mod.ts";

// SafeTensors.
export {
  encodeSafetensors,
  type EncodeSafetensorsInput,
  type EncodeSafetensorsTensor,
  openSafetensors,
  openSafetensorsModel,
  type OpenSafetensorsModelOptions,
  type OpenSafetensorsOptions,
  type SafetensorsHeader,
  type SafetensorsModelReader,
  SafetensorsReader,
  SafetensorsSink,
  type SafetensorsSinkOptions,
  type SafetensorsTensorInfo,
} from "./src/formats/safetensors/mod.ts";

// GGUF.
export {
  encodeGguf,
  type EncodeGgufOptions,
  type GgufHeader,
  type GgufKvEntry,
  type GgufKvInput,
  type GgufReader,
  GgufSink,
  type GgufSinkOptions,
  type GgufTensorInfo,
  type GgufTensorInput,
  type GgufTensorSpec,
  ggufToHfName,
  type GgufValue,
  GgufValueType,
  hfToGgufName,
  openGguf,
  type OpenGgufOptions,
} from "./src/formats/gguf/mod.ts";

// QNAT (QLoRA NF4).
export {
  openQnat,
  type OpenQnatOptions,
  QNAT_FLAGS,
  type QnatComputeDtype,
  type QnatFixedHeader,
  type QnatMetadata,
  QnatReader,
  QnatSink,
  type QnatSinkOptions,
  type QnatSinkResult,
  type QnatTensorEntry,
  type QnatTensorHeader,
} from "./src/formats/qnat/mod.ts";
export {
  dequantizeNf4,
  NF4_LEVELS,
  type Nf4Tensor,
  quantizeNf4,
  type QuantizeNf4Options,
} from "./src/quant/nf4.ts";

// Byte sources and the Hugging Face Hub.
export { bindOutput, type PositionedWritable } from "./src/runtime/browser_fs.ts";
export type { ByteSource } from "./src/io/byte_source.ts";
export { BlobSource } from "./src/io/blob_source.ts";
export { FileSource, openFileSource } from "./src/io/file_source.ts";
export {
  type HttpLocation,
  HttpSource,
  type HttpSourceOptions,
  openHttpSource,
  type RetryOptions,
} from "./src/io/http_source.ts";
export { LocalModelFiles, type ModelFiles } from "./src/io/model_files.ts";
export { BlobFolder } from "./src/io/blob_folder.ts";
export { type HubRef, parseHubRef } from "./src/sources/hub_ref.ts";
export {
  type HttpTimeouts,
  type HubEnv,
  type HubSettings,
  hubSettingsFromEnv,
} from "./src/sources/hub_settings.ts";
export {
  type PulledFile,
  type PullFileProgress,
  pullModel,
  type PullOptions,
  type PullProgressEvent,
  type PullResult,
} from "./src/sources/hub_pull.ts";
export {
  type HubModelFilesHandle,
  type HubModelFilesOptions,
  openHubModelFiles,
} from "./src/sources/hub_files.ts";
