// This module is browser compatible.

/**
 * Open a GGUF file as a {@linkcode ModelReader}: Hugging Face tensor names
 * (for the llama block layout), row-major shapes, APR metadata, and raw
 * payload streams — plus the raw GGUF view for tools that need it.
 *
 * @module
 */

import { ModelFormatError } from "../../errors.ts";
import { type ByteSource, DEFAULT_CHUNK_SIZE } from "../../io/byte_source.ts";
import type { ModelHeader, ModelReader, TensorEntry, TensorInfo } from "../../tensor.ts";
import { type GgufHeader, parseGgufHeader } from "./header.ts";
import { ggufToAprMetadata } from "./metadata.ts";
import { GGUF_LLAMA_LIKE_ARCHITECTURES, ggufToHfName } from "./names.ts";

/** Options of {@linkcode openGguf}. */
export interface OpenGgufOptions {
  /**
   * Keep GGUF tensor names (`blk.0.attn_q.weight`) instead of mapping them to
   * Hugging Face names for llama-like architectures.
   *
   * @default {false}
   */
  keepNames?: boolean;
  /**
   * Largest chunk a payload stream yields, in bytes.
   *
   * @default {4194304}
   */
  chunkSize?: number;
}

/** A GGUF file opened for reading: a {@linkcode ModelReader} plus the raw GGUF header. */
export interface GgufReader extends ModelReader {
  /** The GGUF header as stored: version, KV pairs, tensor infos (GGUF names, `ne` order), data offset. */
  readonly gguf: GgufHeader;
}

/**
 * Open a GGUF file (v2 or v3). Reads and validates the header only (FORMATS.md
 * §3); tensor payloads are read when an entry is opened, as raw bytes in
 * bounded chunks (quantized types stay quantized: their dtype is the ggml
 * type, e.g. `"Q4_K"`). Shapes are reversed to row-major (`ne = [cols, rows]`
 * → `[rows, cols]`) without moving data. Tensor order is file order.
 *
 * The reader owns `source`: `close()` closes it. One shard of a split set
 * (`split.count` ≥ 2) is opened as that file alone: `openModel` and
 * `openGgufSplit` (split.ts) read the whole set.
 *
 * @example Usage
 * ```ts ignore
 * import { openGguf } from "./reader.ts";
 * import { openFileSource } from "../../io/file_source.ts";
 * const model = await openGguf(await openFileSource("tiny.gguf"));
 * console.log(model.header.tensors[0]); // { name: "model.embed_tokens.weight", dtype: "Q4_K", ... }
 * await model.close();
 * ```
 *
 * @param source The file's bytes.
 * @param options Name mapping and chunk size.
 * @returns The opened model.
 * @throws {RangeError} When `chunkSize` is not a positive integer (before any I/O).
 * @throws {ModelFormatError} When the file breaks a rule of FORMATS.md §3.
 */
export async function openGguf(
  source: ByteSource,
  options: OpenGgufOptions = {},
): Promise<GgufReader> {
  const chunkSize = options.chunkSize ?? DEFAULT_CHUNK_SIZE;
  if (!Number.isSafeInteger(chunkSize) || chunkSize <= 0) {
    throw new RangeError(`Cannot open GGUF: chunkSize ${chunkSize} is not a positive integer`);
  }
  const gguf = await parseGgufHeader(source);
  const names = ggufTensorNames(gguf.kv, [gguf], options.keepNames === true, source.name);
  const entries: TensorEntry[] = gguf.tensors.map((t, i) => {
    const info: TensorInfo = {
      name: names[i]!,
      dtype: t.dtype,
      shape: [...t.ne].reverse(),
      byteLength: t.byteLength,
    };
    const start = gguf.dataOffset + t.offset;
    return {
      info,
      open: () => source.stream(start, start + t.byteLength, chunkSize),
      slice: (from: number, to: number) => source.stream(start + from, start + to, chunkSize),
    };
  });
  const header: ModelHeader = {
    format: "gguf",
    metadata: ggufToAprMetadata(gguf.kv),
    tensors: entries.map((e) => e.info),
  };
  return {
    gguf,
    header,
    tensors: entries,
    close: () => source.close(),
  };
}

/**
 * Internal: the names the tensors of one GGUF file or split set get — Hugging
 * Face names for llama-like architectures (from the first file's
 * `general.architecture`) unless `keepNames` — checked not to merge two
 * tensors (a file holding both spellings, or a set holding one tensor twice).
 *
 * @param kv The (first file's) metadata.
 * @param headers The file's header, or every shard's, in order.
 * @param keepNames Keep GGUF names.
 * @param where The file or set, for messages.
 * @returns One name per tensor, in file (then shard) order.
 * @throws {ModelFormatError} When two tensors get the same name.
 */
export function ggufTensorNames(
  kv: GgufHeader["kv"],
  headers: readonly GgufHeader[],
  keepNames: boolean,
  where: string,
): string[] {
  const arch = kv.get("general.architecture")?.value;
  const mapNames = !keepNames && typeof arch === "string" &&
    GGUF_LLAMA_LIKE_ARCHITECTURES.has(arch);
  const names: string[] = [];
  const seen = new Map<string, string>();
  headers.forEach((gguf, shard) => {
    for (const t of gguf.tensors) {
      // The family's names (i18a): a GGUF's architecture picks its table.
      const name = mapNames ? ggufToHfName(t.name, arch as string) : t.name;
      const other = seen.get(name);
      if (other !== undefined) {
        const what = other === t.name
          ? `duplicate tensor "${name}"`
          : `duplicate tensor "${name}": both "${other}" and "${t.name}" map to it (open with keepNames)`;
        throw new ModelFormatError(
          "GGUF",
          where,
          headers.length > 1 ? `${what} (again in shard ${shard + 1})` : what,
          headers.length > 1 ? {} : { offset: t.infoOffset },
        );
      }
      seen.set(name, t.name);
      names.push(name);
    }
  });
  return names;
}
