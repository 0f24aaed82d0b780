// This module is browser compatible.

/**
 * llama-quantize's per-tensor flags as given (`--output-tensor-type q8_0`,
 * `--tensor-type attn_v=Q6_K`, …), read as its `quantize.cpp` reads them,
 * into the {@linkcode LlamaQuantizeParams} the type choice takes.
 *
 * @module
 */

import { type DType, DTYPES } from "../dtype.ts";
import { UsageError } from "../errors.ts";
import { isEncodeTarget } from "./_tensor_encoder.ts";
import type { LlamaQuantizeParams, TensorTypeOverride } from "./llama_presets.ts";

/** The per-tensor flags, spelled as llama-quantize takes them. */
export interface LlamaQuantizeFlags {
  /** `--output-tensor-type`: a ggml type name, any case. */
  outputTensorType?: string;
  /** `--token-embedding-type`: a ggml type name, any case. */
  tokenEmbeddingType?: string;
  /** `--tensor-type`, each `PATTERN=TYPE` (a regular expression, then a ggml type name). */
  tensorTypes?: readonly string[];
  /** `--pure`. */
  pure?: boolean;
  /** `--leave-output-tensor`. */
  leaveOutputTensor?: boolean;
  /** `--allow-requantize`: quantized source tensors are decoded and quantized again. */
  allowRequantize?: boolean;
  /** `--keep-split`: a split GGUF source gives an output split as it is, shard for shard. */
  keepSplit?: boolean;
  /** `--include-weights`: only the importance matrix's entries whose name holds one of these. */
  includeWeights?: readonly string[];
  /** `--exclude-weights`: not the importance matrix's entries whose name holds one of these. */
  excludeWeights?: readonly string[];
  /** `--override-kv`, each `KEY=TYPE:VALUE` (TYPE int, float, bool or str). */
  overrideKv?: readonly string[];
  /** `--prune-layers`: blocks left out, the later ones renumbered. */
  pruneLayers?: readonly number[];
}

/**
 * Whether any per-tensor flag is given. Never throws.
 *
 * @param flags The flags.
 * @returns True when at least one is set.
 */
export function hasLlamaQuantizeFlags(flags: LlamaQuantizeFlags): boolean {
  return flags.outputTensorType !== undefined || flags.tokenEmbeddingType !== undefined ||
    (flags.tensorTypes?.length ?? 0) > 0 || flags.pure === true ||
    flags.leaveOutputTensor === true || flags.allowRequantize === true ||
    flags.keepSplit === true || (flags.includeWeights?.length ?? 0) > 0 ||
    (flags.excludeWeights?.length ?? 0) > 0 || (flags.overrideKv?.length ?? 0) > 0 ||
    (flags.pruneLayers?.length ?? 0) > 0;
}

/**
 * Read the flags as llama-quantize does: type names case-insensitively
 * (`parse_ggml_type`), `--tensor-type` split at its first `=` with the
 * pattern lowercased (`parse_tensor_type`) and compiled as an ECMAScript
 * regular expression, as `std::regex` compiles it.
 *
 * @example Usage
 * ```ts
 * import { llamaQuantizeParams } from "./llama_quantize_params.ts";
 * const p = llamaQuantizeParams({ tensorTypes: ["ATTN_V=q8_0"], pure: true });
 * console.assert(p.tensorTypes![0]!.type === "Q8_0");
 * console.assert(p.tensorTypes![0]!.pattern.test("blk.0.attn_v.weight"));
 * ```
 *
 * @param flags The flags as given.
 * @returns The parameters of the type choice.
 * @throws {UsageError} For an unknown type, one aprkit cannot encode, a
 * malformed `PATTERN=TYPE` or a pattern that is not a regular expression.
 */
export function llamaQuantizeParams(flags: LlamaQuantizeFlags): LlamaQuantizeParams {
  const tensorTypes = (flags.tensorTypes ?? []).map(tensorTypeOf);
  return {
    ...(flags.outputTensorType !== undefined
      ? { outputTensorType: ggmlType(flags.outputTensorType, "outputTensorType") }
      : {}),
    ...(flags.tokenEmbeddingType !== undefined
      ? { tokenEmbeddingType: ggmlType(flags.tokenEmbeddingType, "tokenEmbeddingType") }
      : {}),
    ...(tensorTypes.length > 0 ? { tensorTypes } : {}),
    ...(flags.pure === true ? { pure: true } : {}),
    ...(flags.leaveOutputTensor === true ? { leaveOutputTensor: true } : {}),
    ...(flags.allowRequantize === true ? { allowRequantize: true } : {}),
    ...(flags.keepSplit === true ? { fileOrder: true } : {}),
  };
}

function tensorTypeOf(text: string): TensorTypeOverride {
  const eq = text.indexOf("=");
  if (eq <= 0 || eq === text.length - 1) {
    throw new UsageError(
      `tensorTypes "${text}" is not PATTERN=TYPE (e.g. attn_v=q8_0)`,
    );
  }
  const source = text.slice(0, eq).toLowerCase();
  let pattern: RegExp;
  try {
    pattern = new RegExp(source);
  } catch (error) {
    throw new UsageError(
      `tensorTypes "${text}": "${source}" is not a regular expression (${
        (error as Error).message
      })`,
    );
  }
  return { pattern, type: ggmlType(text.slice(eq + 1), `tensorTypes "${text}"`) };
}

/** ggml's types by lowercase name: those GGUF holds. */
const GGML_TYPES = new Map(
  Object.values(DTYPES).filter((d) => d.ggufType !== undefined).map((d) => [
    d.name.toLowerCase(),
    d.name,
  ]),
);

/** The types llama-quantize writes that aprkit encodes: floats and block quantizations. */
function writable(type: DType): boolean {
  return DTYPES[type].isFloat && isEncodeTarget(type);
}

function ggmlType(text: string, option: string): DType {
  const type = GGML_TYPES.get(text.toLowerCase());
  const known = [...GGML_TYPES.values()].filter(writable).join(", ");
  if (type === undefined) {
    throw new UsageError(`${option}: "${text}" is not a ggml type; expected one of ${known}`);
  }
  if (!writable(type)) {
    throw new UsageError(
      `${option}: aprkit cannot quantize to ${type}${
        DTYPES[type].decodeOnly ? " yet" : ""
      }; expected one of ${known}`,
    );
  }
  return type;
}
