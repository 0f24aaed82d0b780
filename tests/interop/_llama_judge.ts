/**
 * llama.cpp as a judge of GGUF files: runs `_llama_judge.mjs` with Node and
 * node-llama-cpp 3.22.1 (llama.cpp's CPU build, prebuilt for linux-x64),
 * installed by `.ci/run` into `.tools/llama-judge/` (or the folder in
 * `APRKIT_LLAMA_JUDGE_DIR`). A plain `deno task test` in a fresh clone
 * installs it there on first use, pinned, from the npm registry; when that is
 * impossible the calling test fails, saying how to install it: a judge that
 * cannot run must not pass silently.
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
  /** Those ids turned back into text by the file's tokenizer. */
  text: string;
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
  return await runJudge<JudgeResult>(paths.map((path) => ({ path, prompt: PROMPT, tokens })));
}

/** What llama.cpp computed for one file of {@linkcode llamaLogProbs}. */
export interface LogProbsResult {
  /** The file. */
  path: string;
  /**
   * Per asked position, the log-probability of every token id (by the file's
   * vocabulary) being the next one: log-softmax of llama.cpp's raw logits.
   */
  logprobs: number[][];
  /** Why llama.cpp could not load or run the file (then `logprobs` is empty). */
  error?: string;
}

/**
 * Load each file in llama.cpp, evaluate a fixed sequence of token ids (no
 * tokenizer, no BOS added) and return the next-token log-probabilities after
 * each asked position. One Node process evaluates every file in turn; a file
 * llama.cpp cannot load gets an `error` (the others still run), so callers
 * must check it.
 *
 * @param jobs Files, the token ids to evaluate, and the 0-based positions whose
 *   next-token distribution to return; `exact` evaluates with flash attention
 *   off and an F32 KV cache (the default context's F16 cache moves tiny
 *   models' log-probs by 0.02–0.18 on correct files).
 * @returns One result per job, in order.
 * @throws {Error} When the judge is not installed or fails as a whole.
 */
export async function llamaLogProbs(
  jobs: {
    path: string;
    ids: readonly number[];
    positions: readonly number[];
    exact?: boolean;
  }[],
): Promise<LogProbsResult[]> {
  const results = await runJudge<LogProbsResult>(jobs, { keepErrors: true });
  // JSON has no -Infinity: a token llama.cpp gave no logit comes back null.
  return results.map((r) => ({
    path: r.path,
    logprobs: (r.logprobs ?? []).map((row) => row.map((v) => v ?? -Infinity)),
    ...(r.error !== undefined ? { error: r.error } : {}),
  }));
}

/** What llama.cpp's embedding context gives for each text of a file. */
export interface EmbeddingsResult {
  /** The file. */
  path: string;
  /** Per text, the token ids llama.cpp evaluated (its tokenizer, with CLS/SEP as it adds them). */
  ids: number[][];
  /** Per text, the sentence vector (pooled as the file's `pooling_type` says). */
  embeddings: number[][];
  /** Why llama.cpp could not load or run the file (then both lists are empty). */
  error?: string;
}

/**
 * Embed texts with llama.cpp (node-llama-cpp's embedding context, CPU), all
 * files in one Node process.
 *
 * @param jobs Per file, the texts to embed.
 * @returns Per file, in order, the ids and vectors, or the error.
 */
export async function llamaEmbeddings(
  jobs: { path: string; texts: readonly string[] }[],
): Promise<EmbeddingsResult[]> {
  const results = await runJudge<EmbeddingsResult>(jobs, { keepErrors: true });
  return results.map((r) => ({
    path: r.path,
    ids: r.ids ?? [],
    embeddings: r.embeddings ?? [],
    ...(r.error !== undefined ? { error: r.error } : {}),
  }));
}

/** What llama.cpp's ranking context gives for each (query, document) pair of a file. */
export interface RankingResult {
  /** The file. */
  path: string;
  /** Per pair, the token ids llama.cpp evaluated (`BOS q EOS SEP d EOS`, node-llama-cpp's input). */
  ids: number[][];
  /** Per pair, the score: the classifier's output through a sigmoid, as node-llama-cpp gives it. */
  scores: number[];
  /** Why llama.cpp could not load or rank with the file (then both lists are empty). */
  error?: string;
}

/**
 * Score (query, document) pairs with llama.cpp (node-llama-cpp's ranking
 * context, CPU), all files in one Node process.
 *
 * @param jobs Per file, the pairs, and the context's size in tokens (128
 *   unless given: a Qwen3-Reranker's prompt is longer).
 * @returns Per file, in order, the ids and scores, or the error.
 */
export async function llamaRankings(
  jobs: {
    path: string;
    pairs: readonly { query: string; document: string }[];
    contextSize?: number;
  }[],
): Promise<RankingResult[]> {
  const results = await runJudge<RankingResult>(jobs, { keepErrors: true });
  return results.map((r) => ({
    path: r.path,
    ids: r.ids ?? [],
    scores: r.scores ?? [],
    ...(r.error !== undefined ? { error: r.error } : {}),
  }));
}

/**
 * Run `_llama_judge.mjs` on some jobs; fails naming the first file that did
 * not load, unless `keepErrors` (then such a result carries its `error`).
 */
async function runJudge<T>(
  jobs: { path: string }[],
  { keepErrors = false } = {},
): Promise<T[]> {
  const dir = await ensureJudge();
  const child = new Deno.Command("node", {
    args: [fromFileUrl(new URL("./_llama_judge.mjs", import.meta.url)), dir],
    stdin: "piped",
    stdout: "piped",
    stderr: "piped",
  }).spawn();
  const writer = child.stdin.getWriter();
  await writer.write(new TextEncoder().encode(JSON.stringify(jobs)));
  await writer.close();
  const out = await child.output();
  const stderr = new TextDecoder().decode(out.stderr);
  if (!out.success) throw new Error(`The llama.cpp judge failed (exit ${out.code}):\n${stderr}`);
  const results = JSON.parse(new TextDecoder().decode(out.stdout)) as (T & {
    path: string;
    error?: string;
  })[];
  for (const r of results) {
    if (r.error !== undefined && !keepErrors) {
      throw new Error(`llama.cpp cannot load ${r.path}: ${r.error}\n${stderr}`);
    }
  }
  return results;
}

/**
 * Tokenize texts with llama.cpp, each file's vocabulary only: special-token
 * text parsed as special tokens, no BOS/EOS added (`_llama_tokenize.mjs`).
 *
 * @param jobs Each GGUF file with the texts to tokenize.
 * @returns One list of token ids per text, per file, in order.
 * @throws {Error} When the judge is not installed, or a file fails to load (named).
 */
export async function llamaTokenize(
  jobs: { path: string; texts: string[] }[],
): Promise<number[][][]> {
  const dir = await ensureJudge();
  const child = new Deno.Command("node", {
    args: [fromFileUrl(new URL("./_llama_tokenize.mjs", import.meta.url)), dir],
    stdin: "piped",
    stdout: "piped",
    stderr: "piped",
  }).spawn();
  const writer = child.stdin.getWriter();
  await writer.write(new TextEncoder().encode(JSON.stringify(jobs)));
  await writer.close();
  const out = await child.output();
  const stderr = new TextDecoder().decode(out.stderr);
  if (!out.success) throw new Error(`The llama.cpp judge failed (exit ${out.code}):\n${stderr}`);
  const results = JSON.parse(new TextDecoder().decode(out.stdout)) as {
    path: string;
    ids?: number[][];
    error?: string;
  }[];
  return results.map((r) => {
    if (r.ids === undefined) {
      throw new Error(`llama.cpp cannot load ${r.path}: ${r.error}\n${stderr}`);
    }
    return r.ids;
  });
}

/** The prebuilt llama.cpp package for this platform (no GPU variants). */
function judgeBinaryPackage(): string {
  const platform = { linux: "linux", darwin: "mac", windows: "win" }[Deno.build.os as string];
  const arch = Deno.build.arch === "aarch64" ? "arm64" : "x64";
  const suffix = platform === "mac" && arch === "arm64" ? "-metal" : "";
  return `@node-llama-cpp/${platform ?? Deno.build.os}-${arch}${suffix}`;
}

async function judgeInstalled(dir: string): Promise<boolean> {
  try {
    const manifest = JSON.parse(
      await Deno.readTextFile(`${dir}/node_modules/node-llama-cpp/package.json`),
    ) as { version?: string };
    return manifest.version === NODE_LLAMA_CPP_VERSION;
  } catch {
    return false;
  }
}

/**
 * The judge's folder, installing the pinned judge there first if it is
 * missing. Test files run in parallel, so each installs into a folder of its
 * own and renames it into place; a loser of that race keeps the winner's.
 */
async function ensureJudge(): Promise<string> {
  const dir = judgeDir();
  if (await judgeInstalled(dir)) return dir;
  const packages = [
    `node-llama-cpp@${NODE_LLAMA_CPP_VERSION}`,
    `${judgeBinaryPackage()}@${NODE_LLAMA_CPP_VERSION}`,
  ];
  const how = `npm install --no-save --ignore-scripts --omit=optional --prefix ${dir} ` +
    packages.join(" ");
  const staging = `${dir}.installing-${Deno.pid}-${crypto.randomUUID().slice(0, 8)}`;
  try {
    await Deno.mkdir(staging, { recursive: true });
    // --ignore-scripts: the postinstall would download or build llama.cpp;
    // --omit=optional: no CUDA/Vulkan builds, only the CPU binary named here.
    const npm = await new Deno.Command(Deno.build.os === "windows" ? "npm.cmd" : "npm", {
      args: [
        "install",
        "--no-save",
        "--no-audit",
        "--no-fund",
        "--loglevel=error",
        "--ignore-scripts",
        "--omit=optional",
        "--prefix",
        staging,
        ...packages,
      ],
      stdout: "piped",
      stderr: "piped",
    }).output();
    if (!npm.success) {
      throw new Error(new TextDecoder().decode(npm.stderr).trim().split("\n").slice(-3).join(" "));
    }
    try {
      await Deno.rename(staging, dir);
    } catch (error) {
      if (!(await judgeInstalled(dir))) throw error;
    }
  } catch (error) {
    throw new Error(
      `The llama.cpp judge is not installed in ${dir} and installing it failed ` +
        `(${error instanceof Error ? error.message : String(error)}). Run .ci/run, or: ${how}`,
      { cause: error },
    );
  } finally {
    await Deno.remove(staging, { recursive: true }).catch(() => {});
  }
  return dir;
}
