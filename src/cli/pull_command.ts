/**
 * `apr pull`: download a Hub model into the shared Hugging Face cache —
 * parallel, resumable, verified — and print the snapshot path.
 *
 * @module
 */

import { UsageError } from "../errors.ts";
import { pullModel } from "../sources/hub_pull.ts";
import { isHubRef } from "../sources/hub_ref.ts";
import { formatBytes, formatCount } from "./format.ts";
import { type CommandSpec, integerOption, stringList, stringOption } from "./command.ts";
import {
  DOWNLOAD_KEPT,
  listenForCtrlC,
  reportInterrupted,
  warningsThrough,
} from "./_convert_flags.ts";

/** The `pull` command. */
export const pullCommand: CommandSpec = {
  name: "pull",
  summary: "download hf://org/name into the shared Hugging Face cache (parallel, resumable)",
  usage: "apr pull hf://org/name[@revision][/path] [--include GLOB]... [--revision R] [--jobs N]",
  description:
    "Fills the standard Hugging Face cache ($HF_HUB_CACHE, default ~/.cache/huggingface/hub),\n" +
    "so other tools reuse the files. Only what the model needs is fetched: the shards its\n" +
    "index names (or model.safetensors, or one .gguf), config and tokenizer files. Big\n" +
    "files download as parallel byte ranges; an interrupted pull continues from the\n" +
    "partial blob; every LFS file is checked against its sha256. Prints the snapshot\n" +
    "path. Honours HF_ENDPOINT, HF_TOKEN, HF_HOME, HF_HUB_CACHE and HF_HUB_OFFLINE.",
  options: {
    include: {
      type: "string",
      multiple: true,
      valueName: "GLOB",
      description: "fetch the files matching GLOB instead of the model's files",
    },
    revision: {
      type: "string",
      valueName: "R",
      description: "branch, tag or commit (default main)",
    },
    jobs: {
      type: "string",
      short: "j",
      valueName: "N",
      description: "parallel downloads (default 8)",
    },
  },
  positionals: { min: 1, max: 1, names: "hf://org/name" },
  examples: [
    "apr pull hf://Qwen/Qwen2.5-0.5B",
    "apr pull hf://TheBloke/Llama-2-7B-GGUF --include '*Q4_K_M.gguf'",
    "HF_ENDPOINT=http://127.0.0.1:8080 apr pull hf://org/name --jobs 4 --json",
  ],
  async run(ctx, values, [source]) {
    if (!isHubRef(source!)) {
      const bare = /^[A-Za-z0-9][\w.-]*\/[\w.-]+$/.test(source ?? "")
        ? `; write hf://${source}`
        : "";
      throw new UsageError(`apr pull takes hf://org/name, got "${source}"${bare}`);
    }
    const include = stringList(values, "include");
    const jobs = integerOption(values, "jobs");
    const display = ctx.progress();
    // Ctrl-C stops the downloads (a second one ends the process at once); the
    // partial blobs stay and the next pull continues them.
    using interrupt = listenForCtrlC(() => new DOMException("interrupted", "AbortError"));
    let result;
    try {
      result = await pullModel(source!, {
        signal: interrupt.signal,
        revision: stringOption(values, "revision"),
        ...(include.length > 0 ? { include } : {}),
        ...(jobs !== undefined ? { jobs } : {}),
        onWarning: warningsThrough(ctx, display),
        onWait: warningsThrough(ctx, display),
        onProgress: (event) => {
          display.update(event);
          for (const f of event.active) display.updateItem(f.path, f.bytesDone, f.bytesTotal);
        },
      });
    } catch (error) {
      if (!interrupt.signal.aborted) throw error;
      display.finish();
      return reportInterrupted(ctx, DOWNLOAD_KEPT);
    } finally {
      display.finish();
    }
    if (ctx.json) {
      ctx.printJson({ command: "pull", source: source!, ...result });
      return 0;
    }
    if (!ctx.quiet) {
      const reused = result.files.filter((f) => f.reused).length;
      ctx.err(
        `pulled ${formatCount(result.files.length)} files at ${result.commit.slice(0, 12)}: ` +
          `${formatBytes(result.bytesDownloaded)} downloaded, ${
            formatBytes(result.bytesReused)
          } reused ` +
          `(${reused} files already cached)\n`,
      );
    }
    ctx.out(`${result.modelPath}\n`);
    return 0;
  },
};
