/**
 * `apr tensors`: one line per tensor; `--stats` decodes each and reports
 * min/max/mean/std and NaN/Inf counts.
 *
 * @module
 */

import { AprReader } from "../formats/apr/reader.ts";
import { openModel } from "../pipeline/open_model.ts";
import { type TensorStats, tensorStats } from "../pipeline/tensor_stats.ts";
import { formatBytes, formatTable } from "./format.ts";
import { type CommandSpec, regExpOption, stringOption } from "./command.ts";
import { ggufTensorOffsets } from "./_gguf_view.ts";
import { REVISION_OPTION, TRANSLATE_OPTION } from "./_convert_flags.ts";
import type { GgufHeader } from "../formats/gguf/header.ts";

/** The `tensors` command. */
export const tensorsCommand: CommandSpec = {
  name: "tensors",
  summary: "list tensors (name, dtype, shape, size); --stats decodes and summarizes values",
  usage: "apr tensors SOURCE [--filter REGEX] [--stats] [--translate] [--json]",
  description: "Lists every tensor of SOURCE (any format aprkit reads) in stream order. --stats\n" +
    "decodes each tensor to float32, streaming, and reports min, max, mean, standard\n" +
    "deviation and the number of NaN and infinite values. A GGUF's tensors have their\n" +
    "GGUF names and file offsets; --translate gives the Hugging Face names a\n" +
    "conversion reads (shapes are row-major either way: GGUF's ne reversed).",
  options: {
    translate: TRANSLATE_OPTION,
    filter: {
      type: "string",
      valueName: "REGEX",
      description: "only tensors whose name matches this regular expression",
    },
    stats: { type: "boolean", description: "decode each tensor and report value statistics" },
    revision: REVISION_OPTION,
  },
  positionals: { min: 1, max: 1, names: "SOURCE" },
  examples: [
    "apr tensors model.apr",
    "apr tensors model.gguf --filter 'layers\\.0\\.' --stats",
    "apr tensors model.apr --json | jq '.tensors[] | select(.dtype == \"Q4_K\") | .name'",
    "apr tensors model.gguf --translate --filter 'layers\\.0\\.'   # Hugging Face names",
  ],
  async run(ctx, values, [source]) {
    const filter = regExpOption(values, "filter");
    const withStats = values.stats === true;
    const translate = values.translate === true;
    const model = await openModel(source!, {
      noCache: !withStats,
      keepNames: !translate,
      revision: stringOption(values, "revision"),
      onWarning: ctx.warn,
    });
    try {
      const apr = model.reader instanceof AprReader ? model.reader : undefined;
      // A single GGUF shown as stored: its payloads' file offsets.
      const gguf = translate ? undefined : (model.reader as { gguf?: GgufHeader }).gguf;
      const ggufOffsets = gguf ? ggufTensorOffsets(gguf) : undefined;
      const rows: {
        name: string;
        dtype: string;
        shape: readonly number[];
        bytes: number;
        offset?: number;
        stats?: TensorStats;
      }[] = [];
      for (const entry of model.reader.tensors) {
        const { name, dtype, shape, byteLength } = entry.info;
        if (filter && !filter.test(name)) continue;
        const offset = apr?.tensor(name)?.fileOffset ?? ggufOffsets?.get(name);
        rows.push({
          name,
          dtype,
          shape,
          bytes: byteLength,
          ...(offset !== undefined ? { offset } : {}),
          ...(withStats ? { stats: await tensorStats(entry.info, entry.open()) } : {}),
        });
      }
      if (ctx.json) {
        ctx.printJson({ command: "tensors", source: source!, tensors: rows });
        return 0;
      }
      const fmt = (v: number | null): string => (v === null ? "-" : v.toPrecision(6));
      const table = formatTable([
        [
          "name",
          "dtype",
          "shape",
          "size",
          ...(withStats ? ["min", "max", "mean", "std", "nan", "inf"] : []),
        ],
        ...rows.map((r) => [
          r.name,
          r.dtype,
          `[${r.shape.join(", ")}]`,
          formatBytes(r.bytes),
          ...(r.stats
            ? [
              fmt(r.stats.min),
              fmt(r.stats.max),
              fmt(r.stats.mean),
              fmt(r.stats.std),
              String(r.stats.nan),
              String(r.stats.inf),
            ]
            : []),
        ]),
      ]);
      ctx.out(`${table.join("\n")}\n`);
      if (filter && rows.length === 0) {
        ctx.warn(`no tensor name matches /${stringOption(values, "filter")}/`);
      }
      return 0;
    } finally {
      await model.close();
    }
  },
};
