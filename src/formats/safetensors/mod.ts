/**
 * SafeTensors: header codec, readers (one file, or a Hugging Face sharded
 * set with its index and companion metadata), the in-memory encoder and the
 * streaming writer (FORMATS.md §1–2).
 *
 * @example Usage
 * ```ts
 * import { encodeSafetensors, openSafetensors } from "./mod.ts";
 * import { BlobSource } from "../../io/blob_source.ts";
 * const bytes = encodeSafetensors({
 *   tensors: [{ name: "w", dtype: "F32", shape: [1], data: new Uint8Array(4) }],
 * });
 * const model = await openSafetensors(new BlobSource(new Blob([bytes])));
 * console.assert(model.header.tensors[0]?.byteLength === 4);
 * await model.close();
 * ```
 *
 * @module
 */

export {
  MAX_HEADER_BYTES,
  parseSafetensorsHeader,
  type SafetensorsHeader,
  type SafetensorsTensorInfo,
} from "./header.ts";
export { openSafetensors, type OpenSafetensorsOptions, SafetensorsReader } from "./reader.ts";
export {
  MAX_INDEX_BYTES,
  MAX_SHARDS,
  openSafetensorsModel,
  type OpenSafetensorsModelOptions,
  SAFETENSORS_INDEX_NAME,
  SAFETENSORS_SINGLE_NAME,
  type SafetensorsModelReader,
} from "./sharded.ts";
export {
  encodeSafetensors,
  type EncodeSafetensorsInput,
  type EncodeSafetensorsTensor,
} from "./encode.ts";
export { SafetensorsSink, type SafetensorsSinkOptions } from "./writer.ts";
