/**
 * aprkit: import machine-learning models (Hugging Face SafeTensors, GGUF) into
 * the APR v2 tensor format, streaming, in bounded memory.
 *
 * @module
 */

export * from "./src/dtype.ts";
export * from "./src/errors.ts";
export * from "./src/tensor.ts";
export type { ByteSource } from "./src/io/byte_source.ts";
export { BlobSource } from "./src/io/blob_source.ts";
