/**
 * `apr import`: any source — a SafeTensors file or sharded folder, a GGUF
 * file, an `hf://` model — into one APR v2 file.
 *
 * @module
 */

import {
  COMPRESS_OPTION,
  convertOptionsFrom,
  HUB_OPTIONS,
  IMPORT_WRITE_OPTIONS,
  KEEP_VISION_OPTION,
  resolveOutput,
  ROW_FALLBACK_OPTION,
  runConversion,
} from "./_convert_flags.ts";
import { type CommandSpec, stringOption } from "./command.ts";

/** The `import` command. */
export const importCommand: CommandSpec = {
  name: "import",
  summary: "import a SafeTensors/GGUF model or hf://org/name into one .apr file",
  usage:
    "apr import SOURCE [-o OUT] [--quantize T] [--imatrix FILE] [--resume] [--force] [--no-cache] [--json]",
  description:
    "Converts SOURCE into APR v2 in one streaming pass: memory stays bounded whatever\n" +
    "the model's size, and each output byte is written once, to OUT.partial, renamed\n" +
    "to OUT when complete. SOURCE is a model folder (model.safetensors.index.json or\n" +
    "model.safetensors, plus config.json and tokenizer.json), a .safetensors, .gguf or\n" +
    ".apr file, an index.json, a split GGUF set, or hf://org/name[@revision][/path]\n" +
    "(or hf://org/name:QUANT, the GGUF of that quantization). hf:// models are\n" +
    "downloaded into the shared Hugging Face cache (resumable, verified) unless\n" +
    "--no-cache. If an import is interrupted, run the same command with --resume.",
  options: {
    ...IMPORT_WRITE_OPTIONS,
    resume: {
      type: "boolean",
      description:
        "continue an interrupted import from OUT.partial and its journal (from its last commit, inside a tensor too; committed bytes are verified meanwhile)",
    },
    "max-shard-size": {
      type: "string",
      valueName: "SIZE",
      description:
        "split into NAME-0000i-of-0000N.apr shards of at most SIZE of tensor data (e.g. 2GB) plus NAME.apr.manifest.json; only aprkit joins the set (aprender and realizar read one shard as the whole model)",
    },
    ...COMPRESS_OPTION,
    ...KEEP_VISION_OPTION,
    ...ROW_FALLBACK_OPTION,
    ...HUB_OPTIONS,
  },
  positionals: { min: 1, max: 1, names: "SOURCE" },
  examples: [
    "apr import ./Qwen2.5-0.5B/ -o qwen.apr                  # sharded folder, keep BF16",
    "apr import hf://microsoft/phi-4 -o phi-4.apr --quantize q4_k",
    "apr import hf://microsoft/phi-4 -o phi-4.apr --resume   # after an interruption",
    "apr import ./hf-folder/ -o m.apr --quantize q4_k_m       # llama.cpp's mix, as Q4_K/Q6_K",
    "apr import model-Q4_K_M.gguf -o model.apr                # Q4_K/Q6_K copied verbatim",
    "apr import hf://org/name --no-cache --json               # stream, nothing cached",
  ],
  async run(ctx, values, [source]) {
    const output = await resolveOutput(stringOption(values, "output"), source!, ".apr");
    return runConversion(ctx, source!, output, { ...convertOptionsFrom(values), format: "apr" });
  },
};
