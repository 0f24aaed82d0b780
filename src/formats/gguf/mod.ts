// This module is browser compatible, except `GgufSink`, which writes files with Deno APIs.

/**
 * GGUF (v2, v3): strict header parsing (FORMATS.md §3, G1–G16), a
 * {@linkcode ModelReader} with Hugging Face names and APR metadata, the name
 * and metadata mappings in both directions, and GGUF v3 writing (in memory,
 * or streamed to a file for export).
 *
 * @example Usage
 * ```ts ignore
 * import { openGguf } from "./mod.ts";
 * import { openFileSource } from "../../io/file_source.ts";
 * const model = await openGguf(await openFileSource("model.gguf"));
 * console.log(model.header.metadata.architecture, model.header.tensors.length);
 * await model.close();
 * ```
 *
 * @module
 */

export {
  GGUF_DEFAULT_ALIGNMENT,
  GGUF_MAGIC,
  GGUF_MAX_ARRAY_DEPTH,
  GGUF_MAX_DIMS,
  GGUF_MAX_KEY_LENGTH,
  GGUF_MIN_KV_BYTES,
  GGUF_MIN_TENSOR_INFO_BYTES,
  type GgufHeader,
  type GgufKvEntry,
  type GgufTensorInfo,
  type GgufValue,
  GgufValueType,
  ggufValueTypeName,
  parseGgufHeader,
} from "./header.ts";
export { type GgufReader, openGguf, type OpenGgufOptions } from "./reader.ts";
export { GGUF_LLAMA_LIKE_ARCHITECTURES, ggufToHfName, hfToGgufName } from "./names.ts";
export {
  aprToGgufKv,
  GGUF_METADATA_MAX_ARRAY,
  type GgufMetadataEntry,
  ggufToAprMetadata,
} from "./metadata.ts";
export {
  encodeGguf,
  encodeGgufHeader,
  type EncodeGgufOptions,
  GGUF_MAX_TENSOR_NAME_BYTES,
  type GgufKvInput,
  type GgufLayout,
  type GgufTensorInput,
  type GgufTensorSpec,
} from "./writer.ts";
export { GgufSink, type GgufSinkOptions } from "./sink.ts";
export {
  GGUF_MAX_SPLITS,
  GGUF_SPLIT_KEYS,
  ggufSplitCount,
  ggufSplitPath,
  type GgufSplitReader,
  isGgufSplitShard,
  openGgufSplit,
  parseGgufSplitPath,
} from "./split.ts";
