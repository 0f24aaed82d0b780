/**
 * QNAT, QLoRA's native storage format: NF4 weights with per-block scales
 * (optionally double-quantized, optionally with zero points), byte layout in
 * docs/QNAT.md. A strict reader (browser compatible) and a streaming sink.
 *
 * @module
 */

export {
  parseQnatHeader,
  parseQnatMetadata,
  parseQnatTensorHeaders,
  planQnatLayout,
  QNAT_ALIGNMENT,
  QNAT_FLAGS,
  QNAT_HEADER_SIZE,
  QNAT_KIND,
  QNAT_MAGIC,
  QNAT_MAX_DIMS,
  QNAT_MAX_METADATA_SIZE,
  QNAT_MAX_NAME_BYTES,
  QNAT_MAX_TENSORS,
  QNAT_VERSION,
  type QnatComputeDtype,
  type QnatFixedHeader,
  type QnatLayout,
  type QnatMetadata,
  type QnatSectionLayout,
  qnatSectionLayout,
  type QnatTensorHeader,
  type QnatTensorPlan,
} from "./header.ts";
export { openQnat, type OpenQnatOptions, QnatReader, type QnatTensorEntry } from "./reader.ts";
export {
  isQnatNf4Tensor,
  QNAT_MIN_NF4_ELEMENTS,
  QnatSink,
  type QnatSinkOptions,
  type QnatSinkResult,
} from "./sink.ts";
