/**
 * Several outputs from one read of the source (issue 33 item 3): `apr
 * convert SOURCE --quantize Q4_K_M,Q5_K_M,Q6_K,Q8_0 -o 'model-{QUANT}.gguf'`
 * opens, reads and verifies the source once and writes every output, each
 * the bytes its own single run writes. This is the work of everyone who
 * publishes quantizations, who otherwise runs the converter and then
 * llama-quantize once per type over a full-size intermediate file.
 *
 * Each output runs its own pipeline (layout, quantizer, sink) over a view of
 * the one opened model (`shared_reads.ts`), so memory is each pipeline's
 * bound plus a few chunks per view.
 *
 * @module
 */

import { UsageError } from "../errors.ts";
import { fs } from "../runtime/fs.ts";
import type { ProgressEvent } from "../tensor.ts";
import {
  checkConvertOptions,
  convertOpenedModel,
  type ConvertOptions,
  type ConvertResult,
  type OutputFormat,
  outputFormat,
  plannedOutputs,
  type QuantizeTarget,
} from "./convert_model.ts";
import { checkOutputPaths } from "../io/output_paths.ts";
import { type ModelLocation, openModel } from "./open_model.ts";
import { sharedModels } from "./shared_reads.ts";

/** One output of {@linkcode convertModels}. */
export interface OutputSpec {
  /** Its path. */
  readonly output: string;
  /** Its quantization (absent: the source's types). */
  readonly quantize?: QuantizeTarget;
}

/** Options of {@linkcode convertModels}: {@linkcode ConvertOptions} for every output. */
export interface ConvertManyOptions
  extends Omit<ConvertOptions, "quantize" | "mmproj" | "onProgress"> {
  /** Progress of output `index` (its sink's events). */
  onProgress?: (index: number, event: ProgressEvent) => void;
  /** Told as each output is published, before the others are done. */
  onOutputDone?: (index: number, result: ConvertResult) => void;
}

/**
 * Write several outputs of one model from one read of it.
 *
 * With `resume`, an output that exists (a finished run published it whole)
 * is kept and not written again; the others are written (resuming where
 * their format can: APR, split GGUF).
 *
 * @example Four quantizations of a Hugging Face folder
 * ```ts ignore
 * import { convertModels } from "./convert_many.ts";
 * await convertModels("./Qwen2.5-0.5B/", [
 *   { output: "qwen-Q4_K_M.gguf", quantize: "q4_k_m" },
 *   { output: "qwen-Q8_0.gguf", quantize: "q8_0" },
 * ]);
 * ```
 *
 * @param source The model (a path, a URL, `hf://org/name`).
 * @param outputs Each output's path and quantization: one format, distinct paths.
 * @param options As for `convertModel`, for every output.
 * @returns What each output wrote, in `outputs` order; an output kept by `resume` is absent.
 * @throws {UsageError} For outputs that do not combine, or options any output refuses (before reading).
 * @throws The first output's error when one fails, after the others are done (each written or not, whole).
 */
export async function convertModels(
  source: ModelLocation,
  outputs: readonly OutputSpec[],
  options: ConvertManyOptions = {},
): Promise<ConvertResult[]> {
  const { onProgress, onOutputDone, ...common } = options;
  if (outputs.length === 0) throw new UsageError("no output to write");
  // `resume` is per output here (a finished output is kept): passed on, and
  // so checked, only where its format resumes (APR, split GGUF). Each output's
  // options are checked once, here, before the read.
  const { resume: _resume, ...checked } = common;
  const resumes = (format: OutputFormat) =>
    common.resume === true && (format === "apr" || common.maxShardSize !== undefined);
  const formats = new Set(outputs.map((o) => {
    const spec = { ...checked, ...o };
    return checkConvertOptions(o.output, {
      ...spec,
      resume: resumes(outputFormat(o.output, spec)),
    });
  }));
  if (formats.size > 1) {
    throw new UsageError(
      `several outputs from one read are written in one format, not ${[...formats].join(" and ")}`,
    );
  }
  const paths = new Set(outputs.map((o) => o.output));
  if (paths.size < outputs.length) {
    throw new UsageError("two outputs have the same path: give each quantization its own file");
  }
  const exists = await Promise.all(
    outputs.map((o) => fs.lstat(o.output).then(() => true, () => false)),
  );
  if (!common.force && !common.resume) {
    const present = outputs.find((_, i) => exists[i]);
    if (present !== undefined) {
      throw new UsageError(
        `Cannot write "${present.output}": it exists; add force: true to replace it (or resume: true to keep the outputs already written)`,
      );
    }
  }
  // Outputs a finished run published (each is renamed into place whole).
  const todo = outputs.map((o, i) => ({ ...o, index: i }))
    .filter((_, i) => common.force || !exists[i]);
  for (const o of outputs.filter((_, i) => !common.force && exists[i])) {
    common.onNote?.(`"${o.output}" was written by an earlier run: kept`);
  }
  if (todo.length === 0) return [];
  // Every output path by the one rule (io/output_paths.ts), before the source is read.
  await checkOutputPaths(todo.flatMap((o) => plannedOutputs(o.output, { ...checked, ...o })), {
    force: common.force === true,
    ...(typeof source === "string" ? { source } : {}),
  });
  const format = [...formats][0]!;
  const model = await openModel(source, {
    ...common,
    ...(format === "gguf" && common.keepNames !== true ? { packedForGguf: true } : {}),
  });
  const results: ConvertResult[] = [];
  try {
    const views = sharedModels(model, todo.length);
    const settled = await Promise.allSettled(todo.map(async (o, view) => {
      try {
        const result = await convertOpenedModel(views.models[view]!, source, o.output, {
          ...common,
          ...(o.quantize !== undefined ? { quantize: o.quantize } : {}),
          // Resuming is per output: only a format that resumes is asked to.
          resume: resumes(format),
          ...(onProgress !== undefined ? { onProgress: (e) => onProgress(o.index, e) } : {}),
        }, format);
        onOutputDone?.(o.index, result);
        results[o.index] = result;
      } finally {
        views.retire(view);
      }
    }));
    const failed = settled.find((s) => s.status === "rejected");
    if (failed !== undefined) throw (failed as PromiseRejectedResult).reason;
  } finally {
    await model.close();
  }
  return results.filter((r) => r !== undefined);
}
