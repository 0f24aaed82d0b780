/**
 * `apr inspect`: header, metadata and a tensor summary of any model, reading
 * headers only (a remote 50 GB file costs a few KB).
 *
 * @module
 */

import { terminalSafe } from "./terminal_text.ts";
import { AprReader } from "../formats/apr/reader.ts";
import { openModel } from "../pipeline/open_model.ts";
import { formatBytes, formatCount, formatTable } from "./format.ts";
import { parameterCount, shortenValue, summarizeByDtype } from "./_summary.ts";
import { type CommandSpec, stringOption } from "./command.ts";
import { ggufHeaderOf, ggufKvText, ggufKvView } from "./_gguf_view.ts";
import { REVISION_OPTION, TRANSLATE_OPTION } from "./_convert_flags.ts";

const FLAG_NAMES: Record<number, string> = {
  0x0001: "LZ4",
  0x0002: "ZSTD",
  0x0004: "ENCRYPTED",
  0x0008: "SIGNED",
  0x0010: "SHARDED",
  0x0020: "QUANTIZED",
  0x0040: "HAS_FILTERBANK",
  0x0080: "HAS_MODEL_CARD",
  0x0100: "STREAMING",
  0x0200: "HAS_VOCAB",
  0x0400: "LAYOUT_ROW_MAJOR",
  0x0800: "LAYOUT_COLUMN_MAJOR",
};

/** Names of the flags set in an APR header's flag word. */
export function flagNames(flags: number): string[] {
  return Object.entries(FLAG_NAMES).filter(([bit]) => (flags & Number(bit)) !== 0).map(([, n]) =>
    n
  );
}

/** The `inspect` command. */
export const inspectCommand: CommandSpec = {
  name: "inspect",
  summary: "show a model's header, metadata and tensor summary (reads headers only)",
  usage: "apr inspect SOURCE [--translate] [--revision R] [--json]",
  description: "SOURCE is an .apr, .gguf or .safetensors file, a model folder, an index.json, a\n" +
    "split GGUF set, an http(s):// URL, hf://org/name[@revision][/path] or\n" +
    "hf://org/name:QUANT. Only headers are read: remote files are inspected with a\n" +
    "few range requests and nothing is downloaded. A GGUF is shown as stored: every\n" +
    "key/value pair in file order with its GGUF type (arrays by type, length and\n" +
    "first items); --translate shows it as a conversion reads it (APR's keys).",
  options: {
    translate: TRANSLATE_OPTION,
    revision: REVISION_OPTION,
  },
  positionals: { min: 1, max: 1, names: "SOURCE" },
  examples: [
    "apr inspect model.apr",
    "apr inspect hf://Qwen/Qwen2.5-0.5B            # headers over HTTP, no download",
    "apr inspect model.gguf --json | jq '.metadata[\"general.architecture\"].value'",
    "apr inspect model.gguf --translate   # metadata in APR's keys, as convert reads it",
  ],
  async run(ctx, values, [source]) {
    const translate = values.translate === true;
    const model = await openModel(source!, {
      noCache: true,
      keepNames: !translate,
      revision: stringOption(values, "revision"),
      onWarning: ctx.warn,
    });
    try {
      const header = model.header;
      const gguf = ggufHeaderOf(model.reader);
      const byDtype = summarizeByDtype(header);
      const params = parameterCount(header);
      const bytes = byDtype.reduce((s, r) => s + r.bytes, 0);
      const apr = model.reader instanceof AprReader ? model.reader : undefined;
      // A quantized Hugging Face checkpoint is read dequantized: say from what.
      const quantMethod = (model.reader as { quantMethod?: unknown }).quantMethod;
      const result = {
        command: "inspect",
        source: source!,
        format: header.format,
        ...(typeof quantMethod === "string" ? { dequantizedFrom: quantMethod } : {}),
        ...(apr
          ? {
            fileSize: apr.fileSize,
            version: `${apr.aprHeader.versionMajor}.${apr.aprHeader.versionMinor}`,
            flags: flagNames(apr.aprHeader.flags),
          }
          : {}),
        ...(gguf ? { ggufVersion: gguf.version, view: translate ? "translated" : "stored" } : {}),
        tensorCount: header.tensors.length,
        parameterCount: params,
        tensorBytes: bytes,
        dtypes: byDtype,
        metadata: gguf && !translate ? ggufKvView(gguf) : shortenValue(header.metadata),
      };
      if (ctx.json) {
        ctx.printJson(result);
        return 0;
      }
      const lines = [
        `source:      ${terminalSafe(source!)}`,
        `format:      ${header.format}${apr ? ` v${result.version}` : ""}${
          gguf ? ` v${gguf.version}` : ""
        }${
          typeof quantMethod === "string"
            ? ` (a ${quantMethod} checkpoint, read dequantized to F32)`
            : ""
        }`,
      ];
      if (apr) {
        lines.push(
          `file size:   ${formatBytes(apr.fileSize)} (${formatCount(apr.fileSize)} bytes)`,
        );
        lines.push(`flags:       ${result.flags?.join(", ") || "none"}`);
      }
      lines.push(
        `tensors:     ${formatCount(header.tensors.length)}`,
        `parameters:  ${formatCount(params)}`,
        `tensor data: ${formatBytes(bytes)}`,
        "",
      );
      if (gguf && !translate) {
        lines.push(
          `metadata (${gguf.kv.size} key/value pairs as stored; --translate for APR's keys):`,
        );
        for (const [key, view] of Object.entries(ggufKvView(gguf))) {
          lines.push(cut(`  ${terminalSafe(key)}: ${terminalSafe(ggufKvText(view))}`));
        }
      } else {
        lines.push("metadata:");
        for (const [key, value] of Object.entries(result.metadata as Record<string, unknown>)) {
          lines.push(...metadataLines(key, value, "  "));
        }
      }
      lines.push("", "tensors by dtype:");
      lines.push(
        ...formatTable([
          ["dtype", "tensors", "parameters", "bytes"],
          ...byDtype.map((r) => [
            r.dtype,
            formatCount(r.tensors),
            formatCount(r.params),
            formatBytes(r.bytes),
          ]),
        ]).map((l) => `  ${l}`),
      );
      ctx.out(`${lines.join("\n")}\n`);
      return 0;
    } finally {
      await model.close();
    }
  },
};

/** Longest metadata line `apr inspect` prints; the --json output has it all. */
const MAX_METADATA_LINE = 160;

/** A line cut at {@linkcode MAX_METADATA_LINE} characters, saying so. */
function cut(line: string): string {
  return line.length > MAX_METADATA_LINE
    ? `${line.slice(0, MAX_METADATA_LINE - 20)}… (${line.length} chars)`
    : line;
}

/**
 * One metadata entry as text lines: a long object (GGUF's own key table)
 * one key per line, indented, and any line cut at {@linkcode MAX_METADATA_LINE}
 * characters saying how long the value was, so no line runs to thousands of
 * characters.
 */
function metadataLines(key: string, value: unknown, indent: string, depth = 0): string[] {
  const json = JSON.stringify(value) ?? String(value);
  const head = `${indent}${terminalSafe(key)}: `;
  if (
    depth < 2 && value !== null && typeof value === "object" && !Array.isArray(value) &&
    head.length + json.length > MAX_METADATA_LINE && Object.keys(value).length > 0
  ) {
    return [
      `${indent}${terminalSafe(key)}:`,
      ...Object.entries(value).flatMap(([k, v]) => metadataLines(k, v, `${indent}  `, depth + 1)),
    ];
  }
  const text = terminalSafe(json);
  const room = MAX_METADATA_LINE - head.length;
  return [
    text.length > room
      ? `${head}${text.slice(0, Math.max(20, room - 20))}… (${json.length} chars)`
      : `${head}${text}`,
  ];
}
