/**
 * llama.cpp as a judge of GGUF files: runs `_llama_judge.mjs` with Node and
 * node-llama-cpp 3.22.1 (llama.cpp's CPU build, prebuilt for linux-x64),
 * installed by `.ci/run` into `.tools/llama-judge/` (or the folder in
 * `APRKIT_LLAMA_JUDGE_DIR`). Without it the calling test fails, saying how
 * to install it: a judge that cannot run must not pass silently.
 */

import { fileURLToPath as fromFileUrl } from "node:url";

/** node-llama-cpp version the judge runs (with its prebuilt binary of the same version). */
export const NODE_LLAMA_CPP_VERSION = "3.22.1";

/** The prompt every generation test uses (the reference results were made with it). */
export const PROMPT = "The quick brown fox";

/** What llama.cpp made of one file. */
export interface JudgeResult {
  /** The file. */
  path: string;
  /** Token ids of the prompt, by the file's own tokenizer. */
  prompt: number[];
  /** Greedy continuation. */
  generated: number[];
  /** The 8 likeliest tokens after the prompt, with their probabilities. */
  next: [number, number][];
}

const REPO = fromFileUrl(new URL("../../", import.meta.url));

/** Where the judge is installed. */
export function judgeDir(): string {
  return Deno.env.get("APRKIT_LLAMA_JUDGE_DIR") ?? `${REPO}.tools/llama-judge`;
}

/**
 * Load each file in llama.cpp and generate `tokens` greedy tokens after the prompt.
 *
 * @param paths GGUF files.
 * @param tokens How many tokens to generate.
 * @returns One result per file, in order.
 * @throws {Error} When the judge is not installed, or a file fails to load (named).
 */
export async function llamaGenerate(paths: string[], tokens = 16): Promise<JudgeResult[]> {
  const dir = judgeDir();
  const installed = await Deno.stat(`${dir}/node_modules/node-llama-cpp/package.json`)
    .then(() => true, () => false);
  if (!installed) {
    throw new Error(
      `The llama.cpp judge is not installed in ${dir}. Run .ci/run, or: npm install ` +
        `--no-save --ignore-scripts --omit=optional --prefix ${dir} ` +
        `node-llama-cpp@${NODE_LLAMA_CPP_VERSION} ` +
        `@node-llama-cpp/linux-x64@${NODE_LLAMA_CPP_VERSION}`,
    );
  }
  const child = new Deno.Command("node", {
    args: [fromFileUrl(new URL("./_llama_judge.mjs", import.meta.url)), dir],
    stdin: "piped",
    stdout: "piped",
    stderr: "piped",
  }).spawn();
  const writer = child.stdin.getWriter();
  await writer.write(
    new TextEncoder().encode(
      JSON.stringify(paths.map((path) => ({ path, prompt: PROMPT, tokens }))),
    ),
  );
  await writer.close();
  const out = await child.output();
  const stderr = new TextDecoder().decode(out.stderr);
  if (!out.success) throw new Error(`The llama.cpp judge failed (exit ${out.code}):\n${stderr}`);
  const results = JSON.parse(new TextDecoder().decode(out.stdout)) as (JudgeResult & {
    error?: string;
  })[];
  for (const r of results) {
    if (r.error !== undefined) {
      throw new Error(`llama.cpp cannot load ${r.path}: ${r.error}\n${stderr}`);
    }
  }
  return results;
}
