/**
 * `apr convert` and `apr export`: any model to APR, SafeTensors or GGUF,
 * through the same streaming pipeline as `import`.
 *
 * @module
 */

import { UsageError } from "../errors.ts";
import { formatFromPath, OUTPUT_FORMATS, type OutputFormat } from "../pipeline/convert_model.ts";
import {
  COMPRESS_OPTION,
  convertOptionsFrom,
  HUB_OPTIONS,
  KEEP_VISION_OPTION,
  LLAMA_QUANTIZE_OPTIONS,
  MMPROJ_OPTION,
  resolveOutput,
  ROW_FALLBACK_OPTION,
  runConversion,
  WRITE_OPTIONS,
} from "./_convert_flags.ts";
import { type CommandSpec, type OptionSpec, type OptionValues, stringOption } from "./command.ts";
import { outputsOf, runConversions } from "./_convert_many.ts";

/** The formats `apr export` writes: everything but APR (that is `import` and `convert`). */
const EXPORT_FORMATS: readonly OutputFormat[] = OUTPUT_FORMATS.filter((f) => f !== "apr");

/** `--format`, listing the formats a command writes. */
function formatOption(formats: readonly OutputFormat[]): OptionSpec {
  return {
    type: "string",
    valueName: formats.join("|"),
    description: `output format (default: from OUT's extension)`,
  };
}

/** Flags `convert` and `export` share. */
const FORMAT_OPTIONS: Readonly<Record<string, OptionSpec>> = {
  dtype: {
    type: "string",
    valueName: "f32",
    description:
      "decode every tensor to this type (only f32); types the format lacks become F32 anyway",
  },
  "block-size": {
    type: "string",
    valueName: "N",
    description: "QNAT: elements per NF4 block, even, dividing each NF4 tensor (default 64)",
  },
  "double-quant": {
    type: "boolean",
    description: "QNAT: store NF4 block scales as 8 bits plus one f32 factor per tensor",
  },
};

/** Only the given keys of a flag table. */
function pick(
  options: Readonly<Record<string, OptionSpec>>,
  keys: readonly string[],
): Record<string, OptionSpec> {
  return Object.fromEntries(keys.map((k) => [k, options[k]!]));
}

function outputFormat(
  values: OptionValues,
  output: string | undefined,
  formats: readonly OutputFormat[],
): OutputFormat {
  const text = stringOption(values, "format");
  const listed = formats.join(", ");
  if (text !== undefined) {
    if (!formats.includes(text as OutputFormat)) {
      throw new UsageError(
        `--format "${text}" is not one of ${listed}${
          text === "apr" ? " (apr import or apr convert write APR)" : ""
        }`,
      );
    }
    return text as OutputFormat;
  }
  if (output === undefined) {
    // Nothing names the format: the missing output is what to ask for.
    throw new UsageError(
      `missing -o OUT: the output file, whose extension names the format (${
        formats.map((f) => `.${f}`).join(", ")
      }); or --format (${listed}) to write <name>.FORMAT in the working directory`,
    );
  }
  const implied = formatFromPath(output);
  if (implied === undefined || !formats.includes(implied)) {
    throw new UsageError(
      `give --format (${listed}), or an output ending in ${formats.map((f) => `.${f}`).join(", ")}${
        implied === "apr" ? " (apr import or apr convert write APR)" : ""
      }`,
    );
  }
  return implied;
}

function float32(values: OptionValues): boolean {
  const dtype = stringOption(values, "dtype");
  if (dtype === undefined) return false;
  if (dtype.toLowerCase() !== "f32") {
    throw new UsageError(`--dtype "${dtype}": only f32 is supported`);
  }
  return true;
}

async function run(
  ctx: Parameters<CommandSpec["run"]>[0],
  values: OptionValues,
  source: string,
  formats: readonly OutputFormat[],
): Promise<number> {
  const given = stringOption(values, "output");
  const targets = stringOption(values, "quantize")?.split(",").map((t) => t.trim());
  if (targets !== undefined && targets.length > 1) {
    // Several quantizations from one read: -o names each file with {QUANT}.
    const outputs = outputsOf(targets, given);
    const format = outputFormat(values, outputs[0]!.output, formats);
    for (const o of outputs) convertOptionsFrom({ ...values, quantize: o.quantize });
    const { quantize: _quantize, ...common } = convertOptionsFrom({
      ...values,
      quantize: undefined,
    });
    return runConversions(ctx, source, outputs, { ...common, format, float32: float32(values) });
  }
  const format = outputFormat(values, given, formats);
  const output = await resolveOutput(given, source, `.${format}`);
  return runConversion(ctx, source, output, {
    ...convertOptionsFrom(values),
    format,
    float32: float32(values),
  });
}

/** The `convert` command. */
export const convertCommand: CommandSpec = {
  name: "convert",
  summary: "convert between APR, SafeTensors and GGUF, optionally re-quantizing",
  usage:
    "apr convert SOURCE -o OUT [--format apr|safetensors|gguf|qnat] [--quantize T] [--imatrix FILE] [--json]",
  description:
    "Reads SOURCE (any format aprkit reads, local or hf://) and writes OUT in the format\n" +
    "--format names or OUT's extension implies (an extension naming another format is\n" +
    "refused), streaming, in bounded memory. Source tensors whose type the output format\n" +
    "lacks are written as F32; a --quantize type it lacks (q8/q4 for GGUF) is refused.\n" +
    "--quantize Q4_K_M (or Q4_K_S, Q5_K_M, Q5_K_S, Q6_K, Q8_0) to GGUF replaces\n" +
    "convert_hf_to_gguf.py + llama-quantize in one pass: the same types and bytes.\n" +
    "Several types at once (--quantize Q4_K_M,Q6_K,Q8_0 -o 'model-{QUANT}.gguf') read\n" +
    "the source once and write one file per type, each the bytes of its own run;\n" +
    "--resume keeps the files an interrupted run already wrote.",
  options: {
    ...WRITE_OPTIONS,
    format: formatOption(OUTPUT_FORMATS),
    ...FORMAT_OPTIONS,
    "max-shard-size": {
      type: "string",
      valueName: "SIZE",
      description:
        "split into shards of at most SIZE of tensor data (e.g. 5GB, 500MiB): SafeTensors or APR plus an index/manifest; GGUF as llama.cpp's gguf-split (OUT-0000i-of-0000N.gguf)",
    },
    resume: {
      type: "boolean",
      description:
        "continue an interrupted APR output from OUT.partial and its journal, or a split GGUF output from its completed shards; with several --quantize types, keep the outputs already written",
    },
    ...COMPRESS_OPTION,
    ...KEEP_VISION_OPTION,
    ...MMPROJ_OPTION,
    ...ROW_FALLBACK_OPTION,
    ...LLAMA_QUANTIZE_OPTIONS,
    ...HUB_OPTIONS,
  },
  positionals: { min: 1, max: 1, names: "SOURCE" },
  examples: [
    "apr convert model.apr -o model-q4k.apr --quantize q4_k",
    "apr convert hf://Qwen/Qwen2.5-0.5B -o qwen-Q4_K_M.gguf --quantize Q4_K_M",
    "apr convert ./hf-folder/ -o m.gguf --quantize Q4_K_M --imatrix imatrix.dat",
    "apr convert m-f32.gguf -o m.gguf --quantize Q4_K_M --output-tensor-type q8_0",
    "apr convert m-f32.gguf -o m.gguf --quantize Q4_K_M --token-embedding-type q6_k",
    "apr convert m-f32.gguf -o m.gguf --quantize Q4_K_M --tensor-type 'attn_(q|k)=q8_0'",
    "apr convert m-f32.gguf -o m.gguf --quantize Q5_K_M --pure",
    "apr convert m-f32.gguf -o m.gguf --quantize Q4_K_M --leave-output-tensor",
    "apr convert m-Q8_0.gguf -o m.gguf --quantize Q4_K_M --allow-requantize",
    "apr convert m-f16-00001-of-00003.gguf -o m.gguf --quantize Q4_K_M --keep-split",
    "apr convert m-f32.gguf -o m.gguf --quantize Q4_K_M --tensor-type-file types.txt",
    "apr convert m-f32.gguf -o m.gguf --quantize IQ4_XS --imatrix i.dat --exclude-weights ffn_down",
    "apr convert m-f32.gguf -o m.gguf --quantize Q4_K_M --imatrix i.dat --include-weights attn_v",
    "apr convert m-f32.gguf -o m.gguf --quantize Q4_K_M --override-kv general.name=str:MyModel",
    "apr convert m-f32.gguf -o m.gguf --quantize Q4_K_M --prune-layers 20,21",
    "apr convert model.gguf -o model.safetensors --dtype f32",
    "apr convert ./hf-folder/ -o model.gguf",
    "apr convert ./hf-folder/ -o big.gguf --max-shard-size 45GB",
    "apr convert ./hf-folder/ --quantize Q4_K_M,Q5_K_M,Q6_K,Q8_0 -o 'm-{QUANT}.gguf'  # one read",
  ],
  run: (ctx, values, [source]) => run(ctx, values, source!, OUTPUT_FORMATS),
};

/** The `export` command: another format, the same tensor types (no quantization flags). */
export const exportCommand: CommandSpec = {
  name: "export",
  summary: "export a model to SafeTensors (optionally sharded), GGUF or QNAT (NF4)",
  usage:
    "apr export FILE --format safetensors|gguf|qnat -o OUT [--max-shard-size SIZE] [--dtype f32] [--block-size N] [--double-quant]",
  description:
    "Writes FILE (usually an .apr) in another format. SafeTensors keeps every tensor's\n" +
    "bytes when its type exists there (SafeTensors -> APR -> SafeTensors is exact);\n" +
    "--max-shard-size writes model-0000N-of-0000M.safetensors shards beside OUT plus\n" +
    "model.safetensors.index.json (for GGUF, a gguf-split set). GGUF maps names and\n" +
    "metadata back to llama.cpp's\n" +
    "and copies Q4_K/Q6_K blocks verbatim. --dtype f32 decodes everything to F32.\n" +
    "Tensor types are kept (or decoded to F32); to re-quantize, or to write APR, use\n" +
    "apr convert.",
  options: {
    ...pick(WRITE_OPTIONS, ["output", "force", "keep-names", "pre-tokenizer"]),
    format: formatOption(EXPORT_FORMATS),
    ...FORMAT_OPTIONS,
    "max-shard-size": {
      type: "string",
      valueName: "SIZE",
      description:
        "SafeTensors: split into shards of at most SIZE (e.g. 5GB, 500MiB) plus model.safetensors.index.json; GGUF: llama.cpp's gguf-split layout",
    },
  },
  positionals: { min: 1, max: 1, names: "FILE" },
  examples: [
    "apr export model.apr --format safetensors -o model.safetensors",
    "mkdir -p out && apr export model.apr --format safetensors -o out/model.safetensors --max-shard-size 2GB",
    "apr export model.apr --format gguf -o model.gguf",
    "apr export model.apr --format qnat -o model.qnat --double-quant",
    "apr export model.gguf --format safetensors --dtype f32 -o decoded.safetensors",
  ],
  run: (ctx, values, [source]) => run(ctx, values, source!, EXPORT_FORMATS),
};
