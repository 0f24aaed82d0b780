/**
 * The blocks llama.cpp's converter writes to GGUF as they are or forces to a
 * type, and the one rule for them under each target: a checkpoint's MXFP4
 * (gpt-oss's experts as the Hub publishes them) or NVFP4 weights (ModelOpt's,
 * compressed-tensors'), which the reader serves as stored; the MXFP4 experts
 * a family's converter class makes (DeepSeek-V4's, `GgufSupport.fileType`);
 * and the FP8 matrices it forces to Q8_0 (fp8_as_q8_0.ts).
 *
 * - The converter's own outtypes (f32, f16, bf16, q8_0) write its file; kept
 *   blocks file the model under their type (f32, f16, bf16). `q8_0` with
 *   `--allow-requantize` is llama-quantize's Q8_0 file of it instead.
 * - A llama-quantize preset of the converter's file keeps MXFP4 and NVFP4
 *   blocks as `llama-quantize --tensor-type NAME=mxfp4|nvfp4` does, said in
 *   one note (plain llama-quantize refuses: "requantizing from type nvfp4 is
 *   disabled"); with `--allow-requantize` it quantizes them again, as
 *   llama-quantize does. The forced Q8_0 is refused without
 *   `--allow-requantize` (llama-quantize refuses it) unless the preset's
 *   type for it is Q8_0 (Q8_0, MXFP4_MOE).
 * - A single type (`q4_k`, aprkit's own mix, which takes no llama-quantize
 *   flag but `--allow-requantize`, for a GGUF already in ggml blocks) keeps MXFP4 and NVFP4 blocks (one note naming the preset that is
 *   llama-quantize's file) and refuses the forced Q8_0, as llama-quantize
 *   `--pure` refuses to requantize it.
 *
 * @module
 */

import { UsageError } from "../errors.ts";
import { presetOf, type QuantizeTarget } from "../quant/plan_quantization.ts";
import { forcedQ8_0 } from "./fp8_as_q8_0.ts";
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
 * Apply the rule before the output exists: refuse the forced Q8_0 under a
 * target llama-quantize refuses, and say when MXFP4 or NVFP4 blocks stay so
 * where llama-quantize would need `--tensor-type`.
 *
 * @param model The open model.
 * @param options What of the conversion decides.
 * @param onNote Receives the note.
 * @throws {UsageError} For forced Q8_0 matrices under a target llama-quantize refuses.
 */
export function checkKeptBlocks(
  model: Model,
  options: KeptBlocksOptions,
  onNote?: (message: string) => void,
): void {
  refuseForcedQ8_0(model, options);
  const kept = keptBlocks(model, options.ggufNames);
  const to = options.quantize;
  if (kept === undefined || PACKED_TARGETS.has(to)) return;
  const preset = presetOf(to, true);
  // MXFP4_MOE makes the experts MXFP4 itself; --allow-requantize quantizes a preset's again.
  if (kept === "MXFP4" && preset === "MXFP4_MOE") return;
  if (preset !== undefined && options.allowRequantize) return;
  const what = kept === "MXFP4"
    ? "the routed experts stay MXFP4"
    : `the ${(model.reader as { quantMethod?: unknown }).quantMethod} NVFP4 weights stay NVFP4`;
  const flag = kept === "MXFP4" ? "--tensor-type exps=mxfp4" : "--tensor-type NAME=nvfp4 for each";
  const refusal = `"requantizing from type ${kept.toLowerCase()} is disabled"`;
  onNote?.(
    preset !== undefined
      ? `${what}, as llama.cpp's converter writes them: the file is llama-quantize's with ` +
        `${flag} (without it llama-quantize refuses: ${refusal}); --allow-requantize ` +
        "quantizes them again"
      : `${what}, as llama.cpp's converter writes them (llama-quantize refuses to requantize ` +
        `them: ${refusal}); --quantize ${PURE_PRESET[to] ?? "q4_k_m"} --pure is ` +
        `llama-quantize's --pure file with ${flag}, and --allow-requantize quantizes them again`,
  );
}

/** The llama-quantize preset whose `--pure` file has a single type's type (Q4_K_M's is Q4_K). */
const PURE_PRESET: Partial<Record<QuantizeTarget, QuantizeTarget>> = { q4_k: "q4_k_m" };

/**
 * Refuse a target llama-quantize has no file of for a model whose FP8
 * matrices the converter forces to Q8_0: given the converter's file,
 * llama-quantize refuses to requantize them ("requantizing from type q8_0 is
 * disabled") unless told to (`--allow-requantize`) or their type stays Q8_0
 * (`q8_0`; `mxfp4_moe` makes them Q8_0, checked tensor by tensor when
 * planned). A single type (`q4_k`) takes no llama-quantize flag: its
 * refusal names the preset whose `--pure --allow-requantize` file it is.
 */
function refuseForcedQ8_0(model: Model, options: KeptBlocksOptions): void {
  const to = options.quantize;
  if (to === "none" || to === "f16" || to === "bf16") return;
  const forced = forcedQ8_0(model, options.ggufNames);
  if (forced === undefined) return;
  const preset = presetOf(to, true);
  if (preset === "Q8_0" || preset === "MXFP4_MOE") return;
  if (preset !== undefined && options.allowRequantize) return;
  throw new UsageError(
    `Cannot convert "${model.location}" to gguf with quantize "${to}": llama.cpp's converter ` +
      `writes its ${forced.size} FP8 matrices as Q8_0 whatever the outtype, which llama-quantize ` +
      'refuses to requantize ("requantizing from type q8_0 is disabled"); ' +
      (preset === undefined
        ? `--quantize ${PURE_PRESET[to] ?? "q4_k_m"} --pure --allow-requantize quantizes them ` +
          "again, as llama-quantize --pure --allow-requantize does"
        : "--allow-requantize quantizes them again, as llama-quantize --allow-requantize does"),
  );
}

/**
 * Whether `q8_0` with `--allow-requantize` asks for llama-quantize's Q8_0
 * file of the converter's (kept MXFP4/NVFP4 blocks quantized again; its
 * order, keys and file type) rather than the converter's `--outtype q8_0`,
 * which keeps them and takes no llama-quantize flag. Never throws.
 *
 * @param model The open model.
 * @param options What of the conversion decides.
 * @returns True for a GGUF of a model with kept or forced blocks under `q8_0` and `--allow-requantize`.
 */
export function requantizedAsQ8_0(model: Model, options: KeptBlocksOptions): boolean {
  return options.quantize === "q8_0" && options.allowRequantize &&
    (keptBlocks(model, options.ggufNames) !== undefined ||
      forcedQ8_0(model, options.ggufNames) !== undefined);
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
