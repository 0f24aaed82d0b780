/**
 * APR v2: the container codec, the strict reader and validator, the
 * streaming sink with resume journal, and the two writer APIs.
 *
 * Everything here except {@linkcode AprSink} and {@linkcode AprWriter}
 * (which write files) is browser compatible.
 *
 * @module
 */

export { crc32, crc32Combine } from "./crc32.ts";
export {
  APR_FLAGS,
  APR_HEADER_SIZE,
  APR_MAGIC,
  type AprHeader,
  aprHeaderCrc,
  type AprHeaderFields,
  encodeAprHeader,
  parseAprHeader,
} from "./header.ts";
export {
  APR_METADATA_ALIASES,
  encodeAprMetadata,
  normalizeAprMetadata,
  parseAprMetadata,
} from "./metadata.ts";
export {
  APR_LEGACY_BF16_CODE,
  APR_MAX_DIMS,
  APR_MAX_NAME_BYTES,
  type AprIndexEntry,
  type AprIndexEntryInit,
  checkAprTensor,
  compareUtf8Bytes,
  encodeAprIndex,
  parseAprIndex,
} from "./index_entry.ts";
export {
  APR_ALIGNMENT,
  APR_FOOTER_SIZE,
  type AprDataOrder,
  type AprLayout,
  type AprLayoutOptions,
  type AprPlannedTensor,
  pad64,
  planAprLayout,
} from "./layout.ts";
export { type AprTensorData, encodeApr, type EncodeAprInput } from "./encode_apr.ts";
export {
  APR_MAX_METADATA_SIZE,
  APR_MAX_TENSORS,
  type AprCheck,
  type AprFooterCheck,
  AprReader,
  type AprReaderOptions,
  type AprTensorEntry,
  openApr,
  validateApr,
  type ValidateAprOptions,
} from "./reader.ts";
export {
  APR_SINK_COMMIT_BYTES,
  APR_SINK_COMMIT_INTERVAL_MS,
  AprSink,
  type AprSinkOptions,
  type AprSinkResult,
} from "./sink.ts";
export { AprWriter, type AprWriterOptions } from "./writer.ts";
export {
  APR_MANIFEST_SUFFIX,
  APR_MAX_MANIFEST_BYTES,
  APR_MAX_SHARDS,
  type AprManifestShard,
  type AprShardManifest,
  type AprShardNames,
  aprShardNames,
  parseAprManifest,
  planAprShards,
  shardFileName,
} from "./sharded_manifest.ts";
export {
  aprManifestNameOf,
  isAprShard,
  openShardedApr,
  type OpenShardedAprOptions,
  type ShardedAprReader,
} from "./sharded_reader.ts";
export {
  ShardedAprSink,
  type ShardedAprSinkOptions,
  type ShardedAprSinkResult,
} from "./sharded_sink.ts";
export { APR_LZ4_MAX_IMAGE_SIZE, encodeAprLz4, openAprLz4Image } from "./lz4_image.ts";
export { AprLz4Sink, type AprLz4SinkOptions } from "./lz4_sink.ts";
