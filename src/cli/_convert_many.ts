/**
 * `apr convert SOURCE --quantize Q4_K_M,Q5_K_M,Q6_K,Q8_0 -o 'model-{QUANT}.gguf'`:
 * several quantizations from one read of the source (`convertModels`), with
 * progress per output, a summary line per output as it is published, and
 * `--resume` keeping the outputs an earlier run published.
 *
 * @module
 */

import { basename } from "node:path";
import { UsageError } from "../errors.ts";
import { convertModels, type OutputSpec } from "../pipeline/convert_many.ts";
import type { ConvertOptions, ConvertResult, QuantizeTarget } from "../pipeline/convert_model.ts";
import type { ProgressEvent } from "../tensor.ts";
import type { CommandContext } from "./command.ts";
import {
  inFlagTerms,
  listenForCtrlC,
  reportInterrupted,
  summaryLine,
  warningsThrough,
} from "./_convert_flags.ts";
import { messageLine } from "./terminal_text.ts";

/** What `-o` must hold when several quantizations are asked for. */
export const QUANT_PLACEHOLDER = "{QUANT}";

/**
 * The outputs of `--quantize A,B,…`: `-o`'s `{QUANT}` replaced by each type
 * as typed.
 *
 * @param targets The types, as typed (`Q4_K_M`).
 * @param output `-o`, holding `{QUANT}`.
 * @returns One output per type.
 * @throws {UsageError} When `-o` has no `{QUANT}` or a type repeats.
 */
export function outputsOf(targets: readonly string[], output: string | undefined): OutputSpec[] {
  if (output === undefined || !output.includes(QUANT_PLACEHOLDER)) {
    throw new UsageError(
      `several --quantize types write one file each: give -o with ${QUANT_PLACEHOLDER} in it, ` +
        `e.g. -o 'model-${QUANT_PLACEHOLDER}.gguf'`,
    );
  }
  const seen = new Set<string>();
  return targets.map((typed) => {
    const quantize = typed.toLowerCase() as QuantizeTarget;
    if (seen.has(quantize)) throw new UsageError(`--quantize names ${typed} twice`);
    seen.add(quantize);
    return { output: output.replaceAll(QUANT_PLACEHOLDER, typed), quantize };
  });
}

/**
 * Run several conversions of one source with progress on stderr and a
 * summary line per output (or one JSON document) on stdout.
 *
 * @param ctx The command context.
 * @param source The source as given.
 * @param outputs Each output and its quantization.
 * @param options Conversion options for every output.
 * @returns The exit code.
 */
export async function runConversions(
  ctx: CommandContext,
  source: string,
  outputs: readonly OutputSpec[],
  options: Omit<ConvertOptions, "quantize">,
): Promise<number> {
  const display = ctx.progress();
  // Ctrl-C as for one output (`listenForCtrlC`): the outputs written are kept.
  using interrupt = listenForCtrlC();
  const latest = new Map<number, ProgressEvent>();
  const notes: string[] = [];
  const results: ConvertResult[] = [];
  try {
    await convertModels(source, outputs, {
      ...options,
      signal: interrupt.signal,
      onWarning: warningsThrough(ctx, display),
      onNote: (message) => notes.push(messageLine(inFlagTerms(message))),
      onProgress: (index, event) => {
        latest.set(index, event);
        const all = [...latest.values()];
        display.update({
          phase: "convert",
          bytesDone: all.reduce((n, e) => n + e.bytesDone, 0),
          bytesTotal: all.reduce((n, e) => n + e.bytesTotal, 0),
          itemsDone: all.reduce((n, e) => n + e.itemsDone, 0),
          itemsTotal: all.reduce((n, e) => n + e.itemsTotal, 0),
        });
        display.updateItem(basename(outputs[index]!.output), event.bytesDone, event.bytesTotal);
      },
      onOutputDone: (index, result) => {
        results[index] = result;
        // Published: its row gives way (the summary follows when all are done).
        display.updateItem(basename(outputs[index]!.output), 1, 1);
      },
    });
  } catch (error) {
    display.finish();
    if (interrupt.signal.aborted) {
      return reportInterrupted(
        ctx,
        `interrupted; the outputs written are kept (${
          results.filter((r) => r !== undefined).length
        } of ${outputs.length}): ` +
          "run the same command with --resume to write the others",
      );
    }
    throw error;
  }
  display.finish();
  const written = results.filter((r): r is ConvertResult => r !== undefined);
  if (ctx.json) {
    ctx.printJson({
      command: ctx.command,
      source,
      outputs: written.map(({ files: _files, ...document }) => document),
      ...(notes.length > 0 ? { notes } : {}),
    });
  } else if (!ctx.quiet) {
    for (const result of written) ctx.out(`${summaryLine(result, result.output)}\n`);
    for (const note of notes) ctx.out(`note: ${note}\n`);
  }
  return 0;
}
