/**
 * The blocks llama.cpp's converter writes to GGUF as they are, and the one
 * rule for them whatever brings them: a checkpoint's MXFP4 (gpt-oss's
 * experts as the Hub publishes them) or NVFP4 weights, which the reader
 * serves as stored, and the MXFP4 experts a family's converter class makes
 * (DeepSeek-V4's, `GgufSupport.fileType`).
 *
 * - The converter's own outtypes (f32, f16, bf16, q8_0) keep them and file the
 *   model under their type.
 * - Any other GGUF target keeps MXFP4 experts as `llama-quantize --tensor-type
 *   exps=mxfp4` does, said in one note (plain llama-quantize refuses:
 *   "requantizing from type mxfp4 is disabled"); with `--allow-requantize` a
 *   preset quantizes them again, as llama-quantize does.
 * - NVFP4 has no such form: refused under any other target.
 *
 * @module
 */

import { UsageError } from "../errors.ts";
import { presetOf, type QuantizeTarget } from "../quant/plan_quantization.ts";
import { converterFileType } from "./gguf_layout.ts";
import type { Model } from "./model.ts";

/** A block type llama.cpp's converter keeps. */
export type KeptType = "MXFP4" | "NVFP4";

/** llama.cpp's `LLAMA_FTYPE_MOSTLY_MXFP4_MOE` and `LLAMA_FTYPE_MOSTLY_NVFP4`, by kept type. */
export const KEPT_FILE_TYPES = { MXFP4: 38, NVFP4: 39 } as const;

/** The targets under which the converter files kept blocks as their type (its f32, f16, bf16). */
export const KEPT_OUTTYPES: ReadonlySet<QuantizeTarget> = new Set(["none", "f16", "bf16"]);

/** Targets that write what llama.cpp's converter writes of a model with kept blocks. */
export const PACKED_TARGETS: ReadonlySet<QuantizeTarget> = new Set([
  "none",
  "f16",
  "bf16",
  "q8_0",
]);

/** What of the conversion decides the rule. */
export interface KeptBlocksOptions {
  /** The GGUF is written under llama.cpp's names (not `--keep-names`). */
  ggufNames: boolean;
  /** The target, `"none"` when not quantizing. */
  quantize: QuantizeTarget;
  /** llama-quantize's `--allow-requantize`. */
  allowRequantize: boolean;
}

/**
 * The ggml type of a quantized checkpoint's blocks its reader serves as
 * stored (opened for GGUF), or `undefined`. Never throws.
 *
 * @param model The open model.
 * @returns `"MXFP4"`, `"NVFP4"` or `undefined`.
 */
export function checkpointKept(model: Model): KeptType | undefined {
  const kept = (model.reader as { quantKept?: unknown }).quantKept;
  return kept === "MXFP4" || kept === "NVFP4" ? kept : undefined;
}

/**
 * The blocks the GGUF holds as llama.cpp's converter writes them: the
 * checkpoint's, or the MXFP4 experts the family's converter class makes.
 * Never throws.
 *
 * @param model The open model.
 * @param ggufNames Whether the output is a GGUF under llama.cpp's names.
 * @returns The kept type, or `undefined`.
 */
export function keptBlocks(model: Model, ggufNames: boolean): KeptType | undefined {
  if (!ggufNames) return undefined;
  return checkpointKept(model) ??
    (converterFileType(model.header.metadata) === KEPT_FILE_TYPES.MXFP4 ? "MXFP4" : undefined);
}

/**
 * Apply the rule before the output exists: refuse NVFP4 under a target
 * llama.cpp has no file of, and say when MXFP4 experts stay MXFP4 where
 * llama-quantize would need `--tensor-type exps=mxfp4`.
 *
 * @param model The open model.
 * @param options What of the conversion decides.
 * @param onNote Receives the note.
 * @throws {UsageError} For NVFP4 blocks under a target other than the converter's.
 */
export function checkKeptBlocks(
  model: Model,
  options: KeptBlocksOptions,
  onNote?: (message: string) => void,
): void {
  const kept = keptBlocks(model, options.ggufNames);
  const to = options.quantize;
  if (kept === undefined || PACKED_TARGETS.has(to)) return;
  if (kept === "NVFP4") {
    const method = (model.reader as { quantMethod?: unknown }).quantMethod;
    throw new UsageError(
      `Cannot convert "${model.location}" to gguf with quantize "${to}": its ${method} ` +
        "weights stay NVFP4 in GGUF, as llama.cpp's converter keeps them, and llama-quantize " +
        `does not requantize them; supported: ${[...PACKED_TARGETS].join(", ")}`,
    );
  }
  // MXFP4_MOE makes the experts MXFP4 itself; --allow-requantize quantizes a preset's again.
  const preset = presetOf(to, true);
  if (preset === "MXFP4_MOE" || (preset !== undefined && options.allowRequantize)) return;
  onNote?.(
    "the routed experts stay MXFP4, as llama.cpp's converter writes them: the file is " +
      "llama-quantize's with --tensor-type exps=mxfp4 (without it llama-quantize refuses: " +
      '"requantizing from type mxfp4 is disabled"); --allow-requantize quantizes them again',
  );
}

/**
 * The `general.file_type` the converter files a model with kept blocks
 * under: the kept type's under its float outtypes; a family's own
 * (DeepSeek-V4's) under all four of its outtypes; otherwise `undefined`
 * (the target's).
 *
 * @param model The open model.
 * @param ggufNames Whether the output is a GGUF under llama.cpp's names.
 * @param to The target.
 * @returns The file type, or `undefined`.
 */
export function keptFileType(
  model: Model,
  ggufNames: boolean,
  to: QuantizeTarget,
): number | undefined {
  const kept = keptBlocks(model, ggufNames);
  if (kept !== undefined && KEPT_OUTTYPES.has(to)) return KEPT_FILE_TYPES[kept];
  const family = ggufNames ? converterFileType(model.header.metadata) : undefined;
  return family !== undefined && PACKED_TARGETS.has(to) ? family : undefined;
}
