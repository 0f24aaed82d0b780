/**
 * `apr diff`: tensor-by-tensor comparison of two models in any formats
 * (GGUF names are mapped to Hugging Face names, so a GGUF and its import
 * line up).
 *
 * @module
 */

import { elementCount } from "../dtype.ts";
import { UsageError } from "../errors.ts";
import { compareTensors, type TensorDifference } from "../pipeline/compare_tensors.ts";
import { EMBED_TOKENS, LM_HEAD } from "../pipeline/tied_embeddings.ts";
import { openModel } from "../pipeline/open_model.ts";
import { qkRowLayout, withQkRowLayout } from "../pipeline/qk_row_layout.ts";
import type { TensorEntry } from "../tensor.ts";
import { formatTable } from "./format.ts";
import { type CommandSpec, regExpOption, stringOption } from "./command.ts";

interface DiffRow {
  name: string;
  status: "same" | "different" | "only in A" | "only in B" | "shape differs";
  dtypeA?: string;
  dtypeB?: string;
  shapeA?: readonly number[];
  shapeB?: readonly number[];
  difference?: TensorDifference;
}

/**
 * Exit code of a comparison that found differences: not 1, which every
 * command keeps for a bug in aprkit, so a script can tell "the models
 * differ" from "the comparison crashed" (diff(1) conflates neither: its 2 is
 * trouble, aprkit's 2 is bad input).
 */
export const DIFFERENT_EXIT_CODE = 4;

/** The `diff` command. */
export const diffCommand: CommandSpec = {
  name: "diff",
  summary: "compare two models tensor by tensor (any formats): shape, dtype, max |diff|, RMSE",
  usage: "apr diff A B [--filter REGEX] [--tolerance X] [--json]",
  description:
    "Decodes each tensor present in both A and B to float32, streaming, and reports the\n" +
    "largest absolute difference and the RMSE; lists tensors only one side has and\n" +
    "shape mismatches. GGUF tensor names are mapped to Hugging Face names, so a GGUF\n" +
    "file and its APR import compare directly. Exit code 0 when every tensor matches\n" +
    "within the tolerance, 4 when they differ (1 stays a bug in aprkit, 2 bad input).",
  options: {
    filter: { type: "string", valueName: "REGEX", description: "only tensors whose name matches" },
    tolerance: {
      type: "string",
      valueName: "X",
      description: "largest absolute difference counted as equal (default 0)",
    },
    "keep-names": { type: "boolean", description: "do not map GGUF names to Hugging Face names" },
  },
  positionals: { min: 2, max: 2, names: "A and B" },
  examples: [
    "apr diff model-Q4_K_M.gguf model.apr           # an import against its source",
    "apr diff a.apr b.safetensors --filter 'layers\\.0\\.' --json",
    "apr diff model.safetensors model-q8.apr --tolerance 0.01",
  ],
  async run(ctx, values, [pathA, pathB]) {
    const filter = regExpOption(values, "filter");
    const toleranceText = stringOption(values, "tolerance") ?? "0";
    const tolerance = Number(toleranceText);
    // NaN would make every comparison false: every tensor "different".
    if (toleranceText.trim() === "" || !Number.isFinite(tolerance) || tolerance < 0) {
      throw new UsageError(`--tolerance must be a number >= 0, got "${toleranceText}"`);
    }
    const keepNames = values["keep-names"] === true;
    const a = await openModel(pathA!, { keepNames, onWarning: ctx.warn });
    try {
      const b = await openModel(pathB!, { keepNames, onWarning: ctx.warn });
      try {
        const byName = (ts: readonly TensorEntry[]) => new Map(ts.map((t) => [t.info.name, t]));
        const mapA = byName(a.reader.tensors);
        // llama's Q/K rows differ between Hugging Face's layout and llama.cpp's
        // (APR's rope_type says which a file holds): compare B in A's layout.
        const layoutA = qkRowLayout(a.header.metadata);
        const mapB = byName(
          layoutA === undefined || qkRowLayout(b.header.metadata) === undefined
            ? b.reader.tensors
            : withQkRowLayout(b.header, b.reader.tensors, layoutA).entries,
        );
        // An APR import stores an explicit lm_head for tied embeddings, which
        // its source only has as the embedding: compare the two.
        for (const [x, y] of [[mapA, mapB], [mapB, mapA]] as const) {
          const embed = x.get(EMBED_TOKENS);
          if (embed && !x.has(LM_HEAD) && y.has(LM_HEAD)) x.set(LM_HEAD, embed);
        }
        const names = [...new Set([...mapA.keys(), ...mapB.keys()])]
          .filter((n) => !filter || filter.test(n));
        const rows: DiffRow[] = [];
        for (const name of names) {
          const ta = mapA.get(name), tb = mapB.get(name);
          if (!ta || !tb) {
            rows.push({ name, status: ta ? "only in A" : "only in B" });
            continue;
          }
          const base = {
            name,
            dtypeA: ta.info.dtype,
            dtypeB: tb.info.dtype,
            shapeA: ta.info.shape,
            shapeB: tb.info.shape,
          };
          const sameShape = ta.info.shape.length === tb.info.shape.length &&
            ta.info.shape.every((d, i) => d === tb.info.shape[i]);
          if (!sameShape || elementCount(ta.info.shape) !== elementCount(tb.info.shape)) {
            rows.push({ ...base, status: "shape differs" });
            continue;
          }
          const difference = await compareTensors(ta, tb);
          const same = difference.maxAbsDiff <= tolerance && difference.nanMismatches === 0;
          rows.push({ ...base, status: same ? "same" : "different", difference });
        }
        const identical = rows.every((r) => r.status === "same");
        if (ctx.json) {
          ctx.printJson({ command: "diff", a: pathA, b: pathB, identical, tensors: rows });
        } else {
          const table = formatTable([
            ["name", "status", "dtype A→B", "shape", "max |diff|", "rmse"],
            ...rows.map((r) => [
              r.name,
              r.status,
              r.dtypeA ? `${r.dtypeA}→${r.dtypeB}` : "-",
              r.shapeA
                ? `[${r.shapeA.join(",")}]${r.status === "shape differs" ? `≠[${r.shapeB}]` : ""}`
                : "-",
              r.difference ? r.difference.maxAbsDiff.toPrecision(4) : "-",
              r.difference ? r.difference.rmse.toPrecision(4) : "-",
            ]),
          ]);
          const counts = Object.entries(
            rows.reduce<Record<string, number>>(
              (m, r) => ({ ...m, [r.status]: (m[r.status] ?? 0) + 1 }),
              {},
            ),
          ).map(([s, n]) => `${n} ${s}`).join(", ");
          ctx.out(`${table.join("\n")}\n${rows.length} tensors: ${counts}\n`);
        }
        return identical ? 0 : DIFFERENT_EXIT_CODE;
      } finally {
        await b.close();
      }
    } finally {
      await a.close();
    }
  },
};
