/**
 * Flags shared by `import`, `convert` and `export`, and the code that turns
 * them into {@linkcode ConvertOptions} and runs the conversion with progress.
 *
 * @module
 */

import { messageLine } from "./terminal_text.ts";
import { basename, dirname, join } from "node:path";
import { UsageError } from "../errors.ts";
import {
  convertModel,
  type ConvertOptions,
  type ConvertResult,
  plannedOutputs,
  QUANTIZE_TARGETS,
  type QuantizeTarget,
} from "../pipeline/convert_model.ts";
import { isHubRef, parseHubRef } from "../sources/hub_ref.ts";
import { formatBytes, formatCount, formatDuration, parseSize } from "./format.ts";
import { resumeLine } from "./_resume_line.ts";
import {
  type CommandContext,
  integerOption,
  type OptionSpec,
  type OptionValues,
  stringList,
  stringOption,
} from "./command.ts";
import { type LlamaQuantizeFlags, llamaQuantizeParams } from "../quant/llama_quantize_params.ts";
import { parsePruneLayers } from "../pipeline/prune_layers.ts";
import { pathExists } from "../io/fs_paths.ts";
import { assertNotLocked } from "../io/partial_file.ts";
import { assertOutputNames } from "../io/output_paths.ts";
import { ROW_FALLBACKS, type RowFallback } from "../quant/apr_row_fallback.ts";
import { aprPresetRefusal } from "../quant/plan_quantization.ts";
import type { ProgressEvent } from "../tensor.ts";
import type { ProgressDisplay } from "./progress_display.ts";

/** Flags of every command that writes a model. */
export const WRITE_OPTIONS: Readonly<Record<string, OptionSpec>> = {
  output: { type: "string", short: "o", valueName: "OUT", description: "output path" },
  quantize: {
    type: "string",
    valueName: "T",
    description:
      `quantize weights: ${
        QUANTIZE_TARGETS.join(", ")
      } (default none: keep source types). From q1_0 on (any case) they are llama-quantize's ` +
      "file types: each tensor's type as llama.cpp chooses it (GGUF: byte-identical; the " +
      "IQ1/IQ2/IQ3_XXS mixes and q2_k_s need --imatrix; APR takes q4_k_m, q4_k_s, q5_k_m, " +
      "q5_k_s and q6_k, mapped to Q4_K/Q6_K)",
  },
  imatrix: {
    type: "string",
    valueName: "FILE",
    description:
      "llama.cpp importance matrix (llama-imatrix's .dat or .gguf) weighting the quantization " +
      "error as llama-quantize --imatrix does; needs --quantize q4_k or a llama-quantize type",
  },
  "quantize-all": {
    type: "boolean",
    description:
      "quantize every float tensor (default keeps norms, biases, tensors < 1024 elements)",
  },
  force: { type: "boolean", short: "f", description: "replace the output if it exists" },
  threads: {
    type: "string",
    valueName: "N",
    description:
      "quantization worker threads; the main thread encodes a share too (default: one per " +
      "core but the main thread's, at most 3; 0: none)",
  },
  "keep-names": {
    type: "boolean",
    description: "keep GGUF tensor names instead of mapping them to Hugging Face names",
  },
  "pre-tokenizer": {
    type: "string",
    valueName: "NAME",
    description:
      "llama.cpp pre-tokenizer to record instead of the one recognised from tokenizer.json " +
      "(default, or a name docs/INTEROP.md lists); GGUF output refuses an unrecognised " +
      "byte-level BPE tokenizer without it",
  },
};

/**
 * The flags of `apr import`, which writes APR only: its --quantize lists the
 * targets APR takes (no q8_0, which APR readers do not decode).
 */
export const IMPORT_WRITE_OPTIONS: Readonly<Record<string, OptionSpec>> = {
  ...WRITE_OPTIONS,
  quantize: {
    type: "string",
    valueName: "T",
    description:
      `quantize weights: ${
        QUANTIZE_TARGETS.filter((t) => aprPresetRefusal(t) === undefined && t !== "q8_0").join(", ")
      } (default none: keep source types). q4_k_m, q4_k_s, q5_k_m, q5_k_s and q6_k (any case) ` +
      "are llama-quantize's presets: each tensor's type as llama.cpp chooses it, mapped to " +
      "Q4_K/Q6_K (its other file types are for GGUF: write a .gguf with apr convert)",
  },
};

/**
 * `--translate` of `apr inspect` and `apr tensors`: a GGUF is shown as
 * stored unless asked to be shown as a conversion reads it (the inverse of
 * convert's `--keep-names`).
 */
export const TRANSLATE_OPTION: OptionSpec = {
  type: "boolean",
  description: "show a GGUF as a conversion reads it: Hugging Face tensor names, metadata in " +
    "APR's keys (default: as stored, GGUF names and every key; other formats are shown as they are)",
};

/** `--revision` of `apr inspect` and `apr tensors`. */
export const REVISION_OPTION: OptionSpec = {
  type: "string",
  valueName: "R",
  description: "Hub revision (branch, tag or commit)",
};

/** Where `--tensor-type` and `--tensor-type-file` are listed in command-line order. */
const TENSOR_TYPE_ORDER = "tensor-type order";

/** llama-quantize's per-tensor flags (`apr convert` to GGUF with a --quantize file type). */
export const LLAMA_QUANTIZE_OPTIONS: Readonly<Record<string, OptionSpec>> = {
  "output-tensor-type": {
    type: "string",
    valueName: "TYPE",
    description: "GGUF: output.weight's ggml type, as llama-quantize's flag (e.g. q8_0)",
  },
  "token-embedding-type": {
    type: "string",
    valueName: "TYPE",
    description: "GGUF: token_embd.weight's ggml type, as llama-quantize's flag",
  },
  "tensor-type": {
    type: "string",
    valueName: "PATTERN=TYPE",
    multiple: true,
    orderedIn: TENSOR_TYPE_ORDER,
    description:
      "GGUF: tensors whose name the regex PATTERN finds get TYPE (first match wins), as " +
      "llama-quantize's flag",
  },
  "tensor-type-file": {
    type: "string",
    valueName: "FILE",
    multiple: true,
    orderedIn: TENSOR_TYPE_ORDER,
    description:
      "GGUF: --tensor-type entries read from FILE, separated by spaces or newlines, taken where " +
      "the flag stands among the --tensor-type flags (llama-quantize's flag; e.g. a file holding " +
      "'attn_v=q8_0 ffn_down=q6_k')",
  },
  "include-weights": {
    type: "string",
    valueName: "NAME",
    multiple: true,
    description: "GGUF with --imatrix: use the matrix only for tensors whose name holds NAME, as " +
      "llama-quantize's flag (e.g. --include-weights attn_v)",
  },
  "exclude-weights": {
    type: "string",
    valueName: "NAME",
    multiple: true,
    description:
      "GGUF with --imatrix: do not use the matrix for tensors whose name holds NAME, as " +
      "llama-quantize's flag (e.g. --exclude-weights ffn_down; not with --include-weights)",
  },
  "override-kv": {
    type: "string",
    valueName: "KEY=TYPE:VALUE",
    multiple: true,
    description:
      "GGUF: set a metadata key after the model's, TYPE int (written UINT32 of the absolute " +
      "value), float, bool or str, as llama-quantize's flag (e.g. --override-kv " +
      "general.name=str:MyModel)",
  },
  "prune-layers": {
    type: "string",
    valueName: "L0,L1,…",
    description:
      "GGUF: leave out these blocks and number the later ones down, block_count set to the " +
      "blocks kept, as llama-quantize's flag (e.g. --prune-layers 20,21)",
  },
  pure: {
    type: "boolean",
    description:
      "GGUF: no mix: every quantized tensor the file type's main type (llama-quantize's)",
  },
  "leave-output-tensor": {
    type: "boolean",
    description: "GGUF: keep output.weight's source type (llama-quantize's flag)",
  },
  "allow-requantize": {
    type: "boolean",
    description: "GGUF: decode tensors already quantized (Q8_0, Q4_K, …) and quantize them again " +
      "(refused without, as by llama-quantize)",
  },
  "keep-split": {
    type: "boolean",
    description:
      "GGUF from a split GGUF set: write OUT-0000i-of-0000N.gguf shard for shard as the " +
      "source (llama-quantize's flag)",
  },
};

/** Flags of commands that read from the Hub. */
export const HUB_OPTIONS: Readonly<Record<string, OptionSpec>> = {
  revision: { type: "string", valueName: "R", description: "Hub revision: branch, tag or commit" },
  "no-cache": {
    type: "boolean",
    description: "hf:// only: stream from the Hub; write nothing but the output",
  },
  jobs: {
    type: "string",
    short: "j",
    valueName: "N",
    description: "parallel downloads (default 8)",
  },
};

/**
 * Library messages name library options (`force: true`); the CLI's user
 * typed flags. Each option phrase a library message can hold, and its flag.
 */
const OPTION_FLAGS: readonly (readonly [RegExp, string])[] = [
  [/\bforce: true\b/g, "--force"],
  [/\bpreTokenizer: "([^"]*)"/g, "--pre-tokenizer $1"],
  [/\bresume: true\b/g, "--resume"],
  [/\bcompress: "lz4"/g, "--compress lz4"],
  [/\bfloat32: true\b/g, "--dtype f32"],
  [/\bdoubleQuant(?:: true)?\b/g, "--double-quant"],
  [/\bblockSize\b/g, "--block-size"],
  [/\bmaxShardSize\b/g, "--max-shard-size"],
  [/\bquantize: "([^"]*)"/g, "--quantize $1"],
  [/\bquantize target\b/g, "--quantize"],
  [/\bthe imatrix option\b/g, "--imatrix"],
  [/\browFallback\b/g, "--row-fallback"],
  [/\boutputTensorType\b/g, "--output-tensor-type"],
  [/\btokenEmbeddingType\b/g, "--token-embedding-type"],
  [/\btensorTypes\b/g, "--tensor-type"],
  [/\bpure: true\b/g, "--pure"],
  [/\bleaveOutputTensor: true\b/g, "--leave-output-tensor"],
  [/\ballowRequantize: true\b/g, "--allow-requantize"],
  [/\bkeepSplit(?:: true)?\b/g, "--keep-split"],
  [/\bincludeWeights\b/g, "--include-weights"],
  [/\bexcludeWeights\b/g, "--exclude-weights"],
  [/\boverrideKv\b/g, "--override-kv"],
  [/\bpruneLayers\b/g, "--prune-layers"],
  [/\bthe imatrix option too\b/g, "--imatrix too"],
];

/**
 * A library message in the CLI's words: option phrases become flags.
 *
 * @param message A message from a library call.
 * @returns The message naming `--force` where the library said `force: true`, etc.
 */
export function inFlagTerms(message: string): string {
  return OPTION_FLAGS.reduce((text, [phrase, flag]) => text.replace(phrase, flag), message);
}

/**
 * Default output path: the source's name with a new extension, in the working directory.
 *
 * @param source The source as given.
 * @param extension E.g. `".apr"`.
 * @returns The output path.
 */
export function defaultOutput(source: string, extension: string): string {
  let name: string;
  if (isHubRef(source)) {
    const ref = parseHubRef(source);
    name = ref.quant !== undefined
      ? `${basename(ref.repoId)}-${ref.quant}`
      : basename(ref.path ?? ref.repoId);
  } else {
    name = basename(source.replace(/[\\/]+$/, "")) || "model";
  }
  name = name.replace(/\.(apr|gguf|safetensors|json)$/i, "").replace(/\.safetensors\.index$/i, "");
  return `${name || "model"}${extension}`;
}

/**
 * The output path of a writing command: `-o` as given, or the default name in
 * the working directory; `-o` naming a folder (an existing directory, or any
 * path ending in `/`) means the default name inside it, as `cp` does.
 *
 * @param given The `-o` value, if any.
 * @param source The source as given.
 * @param extension The output format's extension, with the dot.
 * @returns The path to write.
 */
export async function resolveOutput(
  given: string | undefined,
  source: string,
  extension: string,
): Promise<string> {
  if (given === undefined) return defaultOutput(source, extension);
  const folder = /[\\/]$/.test(given) ||
    await Deno.stat(given).then((info) => info.isDirectory, () => false);
  return folder ? join(given, defaultOutput(source, extension)) : given;
}

/**
 * Read the flags every writing command shares.
 *
 * @param values Parsed flags.
 * @returns The conversion options they select.
 */
export function convertOptionsFrom(values: OptionValues): ConvertOptions {
  // Presets are spelled Q4_K_M by llama.cpp: names are case-insensitive.
  const quantize = stringOption(values, "quantize")?.toLowerCase();
  if (quantize !== undefined && !QUANTIZE_TARGETS.includes(quantize as QuantizeTarget)) {
    throw new UsageError(
      `--quantize "${quantize}" is not one of ${QUANTIZE_TARGETS.join(", ")}`,
    );
  }
  const maxShard = stringOption(values, "max-shard-size");
  let maxShardSize: number | undefined;
  if (maxShard !== undefined) {
    try {
      maxShardSize = parseSize(maxShard);
    } catch (error) {
      throw new UsageError(`--max-shard-size: ${(error as Error).message}`);
    }
  }
  const jobs = integerOption(values, "jobs");
  const threadsText = stringOption(values, "threads");
  const threads = threadsText === undefined ? undefined : Number(threadsText);
  if (threads !== undefined && !(Number.isSafeInteger(threads) && threads >= 0 && threads <= 64)) {
    throw new UsageError(`--threads must be a whole number from 0 to 64, got "${threadsText}"`);
  }
  const blockSize = integerOption(values, "block-size");
  return {
    ...(quantize !== undefined ? { quantize: quantize as QuantizeTarget } : {}),
    ...(stringOption(values, "imatrix") !== undefined
      ? { imatrix: stringOption(values, "imatrix")! }
      : {}),
    quantizeAll: values["quantize-all"] === true,
    force: values.force === true,
    resume: values.resume === true,
    keepNames: values["keep-names"] === true,
    ...(stringOption(values, "pre-tokenizer") !== undefined
      ? { preTokenizer: stringOption(values, "pre-tokenizer")! }
      : {}),
    ...(values["keep-vision"] === true ? { keepVision: true } : {}),
    ...(stringOption(values, "mmproj") !== undefined
      ? { mmproj: stringOption(values, "mmproj")! }
      : {}),
    noCache: values["no-cache"] === true,
    revision: stringOption(values, "revision"),
    ...(jobs !== undefined ? { jobs } : {}),
    ...(threads !== undefined ? { threads } : {}),
    ...(maxShardSize !== undefined ? { maxShardSize } : {}),
    ...(blockSize !== undefined ? { blockSize } : {}),
    ...(values["double-quant"] === true ? { doubleQuant: true } : {}),
    ...llamaQuantizeFlags(values),
    ...compressOption(values),
    ...rowFallbackOption(values),
  };
}

/** llama-quantize's per-tensor flags, as given (convertModel checks them). */
function llamaQuantizeFlags(values: OptionValues): LlamaQuantizeFlags {
  const tensorTypes = orderedTensorTypes(stringList(values, TENSOR_TYPE_ORDER));
  const include = stringList(values, "include-weights");
  const exclude = stringList(values, "exclude-weights");
  const overrideKv = stringList(values, "override-kv");
  const prune = stringOption(values, "prune-layers");
  return {
    ...(stringOption(values, "output-tensor-type") !== undefined
      ? { outputTensorType: stringOption(values, "output-tensor-type")! }
      : {}),
    ...(stringOption(values, "token-embedding-type") !== undefined
      ? { tokenEmbeddingType: stringOption(values, "token-embedding-type")! }
      : {}),
    ...(tensorTypes.length > 0 ? { tensorTypes } : {}),
    ...(values.pure === true ? { pure: true } : {}),
    ...(values["leave-output-tensor"] === true ? { leaveOutputTensor: true } : {}),
    ...(values["allow-requantize"] === true ? { allowRequantize: true } : {}),
    ...(values["keep-split"] === true ? { keepSplit: true } : {}),
    ...(include.length > 0 ? { includeWeights: include } : {}),
    ...(exclude.length > 0 ? { excludeWeights: exclude } : {}),
    ...(overrideKv.length > 0 ? { overrideKv } : {}),
    ...(prune !== undefined ? { pruneLayers: parsePruneLayers(prune) } : {}),
  };
}

/**
 * `--tensor-type` values and the entries of `--tensor-type-file` files, in
 * command-line order (llama-quantize appends both to one list, and the first
 * pattern found wins): a file's entries are separated by whitespace, as its
 * `file >> arg` reads them.
 */
function orderedTensorTypes(flags: readonly string[]): string[] {
  return flags.flatMap((flag) => {
    const eq = flag.indexOf("=");
    const [name, value] = [flag.slice(2, eq), flag.slice(eq + 1)];
    if (name === "tensor-type") return [value];
    let text: string;
    try {
      text = Deno.readTextFileSync(value);
    } catch (error) {
      throw new UsageError(
        `--tensor-type-file "${value}": ${
          error instanceof Deno.errors.NotFound ? "no such file" : (error as Error).message
        }`,
      );
    }
    const entries = text.split(/\s+/).filter((e) => e !== "");
    for (const entry of entries) {
      try {
        llamaQuantizeParams({ tensorTypes: [entry] });
      } catch (error) {
        throw new UsageError(
          `--tensor-type-file "${value}": ${inFlagTerms((error as Error).message)}`,
        );
      }
    }
    return entries;
  });
}

/** `--row-fallback q8|f16|padded` (APR output). */
function rowFallbackOption(values: OptionValues): { rowFallback?: RowFallback } {
  const text = stringOption(values, "row-fallback")?.toLowerCase();
  if (text === undefined) return {};
  if (!ROW_FALLBACKS.includes(text as RowFallback)) {
    throw new UsageError(`--row-fallback "${text}" is not one of ${ROW_FALLBACKS.join(", ")}`);
  }
  return { rowFallback: text as RowFallback };
}

/** `--compress lz4` (APR output). */
function compressOption(values: OptionValues): { compress?: "lz4" } {
  const text = stringOption(values, "compress");
  if (text === undefined) return {};
  if (text.toLowerCase() !== "lz4") {
    throw new UsageError(`--compress "${text}": only lz4 is supported`);
  }
  return { compress: "lz4" };
}

/** The `--keep-vision` flag of commands writing APR. */
export const KEEP_VISION_OPTION: Readonly<Record<string, OptionSpec>> = {
  "keep-vision": {
    type: "boolean",
    description:
      "APR from an image-text-to-text checkpoint: keep the vision tower and projector under " +
      "their Hugging Face names (default: the language model only)",
  },
};

/** The `--mmproj` flag of commands writing GGUF. */
export const MMPROJ_OPTION: Readonly<Record<string, OptionSpec>> = {
  mmproj: {
    type: "string",
    valueName: "FILE",
    description:
      "GGUF from an image-text-to-text checkpoint (Gemma 3, Qwen2-VL, Qwen2.5-VL, Qwen3-VL, Mistral 3, Llama 4, Qwen3.5, SmolVLM, Idefics3, LFM2-VL, GLM-4.1V, GLM-4.5V, Gemma 4 with its audio tower, Gemma 4 Unified): also write its vision (and audio) tower and " +
      "projector to FILE as llama.cpp's vision GGUF (convert_hf_to_gguf.py --mmproj)",
  },
};

/** The `--compress` flag of commands writing APR. */
export const COMPRESS_OPTION: Readonly<Record<string, OptionSpec>> = {
  compress: {
    type: "string",
    valueName: "lz4",
    description:
      "APR: compress the file as one LZ4 block (under 4 GiB). Only realizar's AprV2Model built " +
      "with its non-default apr-compression feature loads it; aprender's reader and realizar's " +
      "transformer loader (its run paths) do not, in any build",
  },
};

/** The `--row-fallback` flag of commands writing APR. */
export const ROW_FALLBACK_OPTION: Readonly<Record<string, OptionSpec>> = {
  "row-fallback": {
    type: "string",
    valueName: "R",
    description:
      "APR: type of Q4_K/Q6_K tensors whose rows are not whole 256-value blocks: q8 (APR Q8, " +
      "default) or f16, which every APR reader decodes alike, or padded (row-padded K-quant: " +
      "realizar's transformer loader only)",
  },
};

/**
 * Run a conversion with progress on stderr and a summary (or JSON) on stdout.
 *
 * @param ctx The command context.
 * @param source The source as given.
 * @param output The output path.
 * @param options Conversion options.
 * @returns The exit code.
 */
export async function runConversion(
  ctx: CommandContext,
  source: string,
  output: string,
  options: ConvertOptions,
): Promise<number> {
  // An interrupted import is never thrown away by accident: continuing or
  // starting over is the user's explicit choice.
  const journal = `${output}.partial.journal`;
  // Names that cannot be written are refused before any look at the disk.
  assertOutputNames(plannedOutputs(output, options));
  // A run in progress on this output comes first: neither flag may touch it
  // (a split GGUF set's lock is its journal).
  await assertNotLocked(`${output}.partial`);
  await assertNotLocked(journal);
  if (!options.resume && !options.force && await pathExists(journal).catch(() => false)) {
    throw new UsageError(
      `Cannot write "${output}": a partial import of this output exists ("${output}.partial"); add --resume to continue or --force to start over`,
    );
  }
  const display = ctx.progress();
  // Ctrl-C stops the pipeline (a second one ends the process at once): the
  // APR sink commits what it wrote for --resume, a split GGUF set keeps its
  // completed shards, other sinks remove their partial files; then say which.
  using interrupt = listenForCtrlC();
  let announced = false;
  // Whether a Hub download into the cache is under way (Ctrl-C keeps its partial blobs).
  let downloading = false;
  const onProgress = (event: ProgressEvent): void => {
    downloading = false;
    // Said once, before any progress line: what this run will not redo.
    const line = announced ? undefined : resumeLine(event);
    if (line !== undefined) {
      announced = true;
      display.log(line);
    }
    display.update(event);
  };
  let result: ConvertResult;
  const notes: string[] = [];
  try {
    result = await convertModel(source, output, {
      ...options,
      signal: interrupt.signal,
      onWarning: warningsThrough(ctx, display),
      // Said with the summary, once the output exists (not for a failed run).
      onNote: (message) => notes.push(messageLine(inFlagTerms(message))),
      onDownloadProgress: (event) => {
        downloading = true;
        display.update(event);
        for (const file of event.active) {
          display.updateItem(file.path, file.bytesDone, file.bytesTotal);
        }
      },
      onProgress,
    });
  } catch (error) {
    display.finish();
    if (interrupt.signal.aborted) {
      const kept = await keptForResume(output);
      return reportInterrupted(
        ctx,
        kept.length > 0
          ? `interrupted; run the same command with --resume to continue from ${
            namedKept(kept, output)
          }`
          : downloading
          ? DOWNLOAD_KEPT
          : "interrupted; nothing was kept (no partial file is left)",
      );
    }
    // A refused resume (other options) or bad usage is not an interruption:
    // "run the same command with --resume" would be wrong advice there.
    const kept = error instanceof UsageError ? [] : await keptForResume(output);
    if (kept.length > 0) {
      ctx.err(
        `apr: ${kept.length === 1 ? "the partial output " : ""}${namedKept(kept, output)} ${
          kept.length === 1 ? "is" : "are"
        } kept; run the same command with --resume to continue\n`,
      );
    }
    throw error;
  }
  display.finish();
  if (ctx.json) {
    // The JSON document keeps its documented fields; `files` is the library's.
    const { files: _files, ...document } = result;
    ctx.printJson({
      command: ctx.command,
      source,
      ...document,
      ...(notes.length > 0 ? { notes } : {}),
    });
  } else if (!ctx.quiet) {
    ctx.out(`${summaryLine(result, output)}\n`);
    const vision = result.mmproj;
    if (vision !== undefined) {
      ctx.out(
        `wrote ${vision.output}: multimodal projector GGUF (mmproj), ` +
          `${formatCount(vision.tensors)} tensors, ${formatCount(vision.parameters)} parameters, ` +
          `${formatBytes(vision.fileBytes)} on disk\n`,
      );
    }
    for (const note of notes) ctx.out(`note: ${note}\n`);
  }
  return 0;
}

/**
 * The summary line of a conversion: what was written, its tensors by type,
 * sizes and time.
 *
 * @param result What the conversion returned.
 * @param output The output path as given.
 * @returns The line, without a newline.
 */
export function summaryLine(result: ConvertResult, output: string): string {
  const dtypes = Object.entries(result.dtypes).map(([d, n]) => `${n} ${d}`).join(", ");
  const resumed = result.resumedTensors ? `, ${result.resumedTensors} resumed` : "";
  // A split GGUF set is named by its first shard, which llama.cpp loads.
  // Other sharded outputs name their index and shards (their own name is no file).
  const wrote = result.shards === undefined
    ? writtenFiles(result.files, output)
    : `${result.shards[0]} (+${result.shards.length - 1} more shards)`;
  return `wrote ${wrote}: ${result.format}, ${
    formatCount(result.tensors)
  } tensors (${dtypes}${resumed}), ` +
    `${formatCount(result.parameters)} parameters, ${
      formatBytes(result.tensorBytes)
    } of tensor data, ${formatBytes(result.fileBytes)} on disk, ` +
    `in ${formatDuration(result.durationMs / 1000)}`;
}

/**
 * What a conversion wrote, as the summary names it: the output, or for a
 * sharded output (whose own name is no file) the index and the shards.
 */
export function writtenFiles(files: readonly string[], output: string): string {
  if (files.length === 1 && files[0] === output) return output;
  const index = files.find((f) => /\.json$/i.test(f));
  const shards = files.filter((f) => f !== index);
  if (shards.length === 0) return index ?? output;
  const range = shards.length === 1
    ? basename(shards[0]!)
    : `${basename(shards[0]!)} … ${basename(shards.at(-1)!)}`;
  return `${index ?? output} and ${shards.length} shard${
    shards.length === 1 ? "" : "s"
  } (${range})`;
}

/**
 * A library's warning callback for a command showing progress: the line goes
 * above the bars (not through them) and into the `--json` document's `warnings`.
 *
 * @param ctx The command context.
 * @param display The command's progress display.
 * @returns The callback.
 */
export function warningsThrough(
  ctx: CommandContext,
  display: ProgressDisplay,
): (message: string) => void {
  return (message) => {
    const line = messageLine(inFlagTerms(message));
    ctx.warnings.push(line);
    display.log(`warning: ${line}`);
  };
}

/**
 * The partial files a failed or interrupted conversion to `output` left for
 * `--resume`, as they are on disk: `OUT.partial` (one APR file), or the
 * shards' `STEM-0000i-of-0000N.EXT.partial` (a split GGUF set's completed
 * shards, a sharded APR output's shards). Only files a journal vouches for
 * count (`OUT.partial.journal`, or a shard's own); other sinks remove theirs.
 */
async function keptForResume(output: string): Promise<string[]> {
  const dir = dirname(output);
  const base = basename(output);
  const dot = base.lastIndexOf(".");
  const stem = dot > 0 ? base.slice(0, dot) : base;
  const ext = dot > 0 ? base.slice(dot) : "";
  const shard = /^(.*)-\d{5}-of-\d{5}(\.[^.]*)\.partial$/;
  const names = new Set<string>();
  try {
    for await (const entry of Deno.readDir(dir)) names.add(entry.name);
  } catch {
    return []; // No folder: nothing kept.
  }
  const journaled = names.has(`${base}.partial.journal`);
  const kept = [...names].filter((name) => {
    if (name === `${base}.partial`) return journaled;
    const match = shard.exec(name);
    if (match?.[1] !== stem || match[2]!.toLowerCase() !== ext.toLowerCase()) return false;
    return journaled || names.has(`${name}.journal`);
  });
  return kept.sort().map((name) => join(dir, name));
}

/** How a message names the kept partial files (one, or a set by its first and last). */
function namedKept(kept: readonly string[], output: string): string {
  if (kept.length === 1) return `"${kept[0]}"`;
  return `the ${kept.length} partial shards of "${output}" (${basename(kept[0]!)} … ${
    basename(kept.at(-1)!)
  })`;
}

/** What Ctrl-C during a download into the cache leaves, and what to do. */
export const DOWNLOAD_KEPT =
  "interrupted; the partial download is kept in the Hugging Face cache and continues when you run the same command again";

/**
 * Say what Ctrl-C left, on stderr and (with `--json`) as the error document.
 *
 * @param ctx The command context.
 * @param line What was kept and what to do, without `apr: `.
 * @returns The exit code, 130.
 */
export function reportInterrupted(ctx: CommandContext, line: string): number {
  ctx.err(`\napr: ${line}\n`);
  if (ctx.json) ctx.printJson({ error: { message: line, code: "Interrupted", exitCode: 130 } });
  return 130;
}

/** The reason a conversion was stopped by Ctrl-C. */
export class Interrupted extends Error {
  constructor() {
    super("interrupted");
    this.name = "Interrupted";
  }
}

/** Ctrl-C while a command runs: see {@linkcode listenForCtrlC}. */
export interface CtrlC extends Disposable {
  /** Aborted by the first Ctrl-C. */
  readonly signal: AbortSignal;
}

/**
 * Stop a long command on Ctrl-C, as every conversion and download does: the
 * first Ctrl-C aborts `signal` (the pipeline then stops, keeping what a
 * resume can use, and the command says what was kept), a second ends the
 * process at once (exit 130). Disposing stops listening. Where signals do
 * not exist (some embedders), nothing listens: the default, ending the
 * process, still keeps the partial output.
 *
 * @param reason The abort reason. @default {new Interrupted()}
 * @returns The signal; dispose of it (`using`) when the command is done.
 */
export function listenForCtrlC(reason: () => unknown = () => new Interrupted()): CtrlC {
  const interrupt = new AbortController();
  const onInterrupt = (): void => {
    if (interrupt.signal.aborted) Deno.exit(130);
    interrupt.abort(reason());
  };
  let listening = false;
  try {
    Deno.addSignalListener("SIGINT", onInterrupt);
    listening = true;
  } catch {
    // Signals are not available everywhere.
  }
  return {
    signal: interrupt.signal,
    [Symbol.dispose]() {
      if (listening) Deno.removeSignalListener("SIGINT", onInterrupt);
      listening = false;
    },
  };
}
