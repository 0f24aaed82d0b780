// The llama.cpp judge: loads GGUF files with llama.cpp's CPU build (npm
// node-llama-cpp 3.22.1 and its prebuilt @node-llama-cpp/linux-x64 binary,
// installed into the folder given as argv[2]) and prints, for each file, the
// prompt's token ids and the greedy (temperature 0) continuation, as one JSON
// document on stdout. Input on stdin: [{ "path", "prompt", "tokens" }].
// A job with "ids" instead ({ "path", "ids", "positions" }) evaluates those
// token ids as given (no BOS, no tokenizer) and returns, for each position
// asked, the log-softmax of llama.cpp's raw logits for the next token over
// the whole vocabulary: { "path", "logprobs": number[][] }.
// A job with "texts" ({ "path", "texts" }) embeds each text with an embedding
// context (the pooling the file names) and returns, per text, the token ids
// llama.cpp evaluated and the vector: { "path", "ids", "embeddings" }.
// A job with "pairs" ({ "path", "pairs": [{ "query", "document" }] }) scores
// each pair with a ranking context (of "contextSize" tokens, 128 unless given):
// { "path", "ids", "scores" }.
// A file that fails to load gets { "error" } instead, so the caller fails.
// Run by tests/interop/_llama_judge.ts with Node (node-llama-cpp's native
// addon does not load under Deno's npm support without its GPU variants).
import { createRequire } from "node:module";
import { join } from "node:path";
import { pathToFileURL } from "node:url";

const judgeDir = process.argv[2];
const require = createRequire(join(judgeDir, "package.json"));
const entry = require.resolve("node-llama-cpp");
const { getLlama } = await import(pathToFileURL(entry).href);

let input = "";
for await (const chunk of process.stdin) input += chunk;
const jobs = JSON.parse(input);

const llama = await getLlama({
  gpu: false,
  build: "never",
  logLevel: "error",
  progressLogs: false,
});
/** log-softmax of a token → logit map, as a dense array by token id. */
function logSoftmax(logits, nVocab) {
  const out = new Array(nVocab).fill(-Infinity);
  let max = -Infinity;
  for (const [, v] of logits) if (v > max) max = v;
  let sum = 0;
  for (const [, v] of logits) sum += Math.exp(v - max);
  const lse = max + Math.log(sum);
  for (const [t, v] of logits) out[t] = v - lse;
  return out;
}

/** Next-token log-probabilities after each asked position of a fixed id sequence. */
async function logprobsJob(model, job) {
  // `exact`: flash attention off and an F32 KV cache, which the default
  // context's F16 cache and flash kernels move by up to ~0.2 on tiny models.
  const exact = job.exact === true
    ? {
      flashAttention: false,
      experimentalKvCacheKeyType: "F32",
      experimentalKvCacheValueType: "F32",
    }
    : {};
  const context = await model.createContext({ contextSize: 128, threads: 1, ...exact });
  try {
    const wanted = new Set(job.positions);
    const evaluated = await context.getSequence().controlledEvaluate(
      job.ids.map((t, i) => wanted.has(i) ? [t, { generateNext: { logits: true } }] : t),
    );
    return job.positions.map((i) => {
      // `logits: true` gives every token's raw logit (no sampler applied).
      const logits = evaluated[i]?.next?.logits;
      if (logits === undefined) throw new Error(`no logits at position ${i}`);
      let nVocab = 0;
      for (const t of logits.keys()) nVocab = Math.max(nVocab, t + 1);
      return logSoftmax(logits, nVocab);
    });
  } finally {
    await context.dispose();
  }
}

/** Each text's token ids (as the embedding context prepares them) and vector. */
async function embeddingsJob(model, job) {
  const context = await model.createEmbeddingContext({ contextSize: 128, threads: 1 });
  try {
    const ids = [];
    const embeddings = [];
    for (const text of job.texts) {
      const tokens = model.tokenize(text);
      context._prepareInput(tokens);
      // node-llama-cpp prepends nothing to a UGM (t5) vocabulary's input, while
      // llama.cpp's own llama_tokenize with add_special (llama-embedding,
      // llama-server) prepends BOS when the vocabulary says add_bos
      // (src/llama-vocab.cpp, LLAMA_VOCAB_TYPE_UGM): that is what is judged.
      if (
        model.vocabularyType === "ugm" && model.tokens.shouldPrependBosToken &&
        tokens[0] !== model.tokens.bos
      ) tokens.unshift(model.tokens.bos);
      ids.push([...tokens]);
      embeddings.push([...(await context.getEmbeddingFor(tokens)).vector]);
    }
    return { ids, embeddings };
  } finally {
    await context.dispose();
  }
}

/** Each pair's token ids (as the ranking context builds its input) and score. */
async function rankingJob(model, job) {
  const context = await model.createRankingContext({
    contextSize: job.contextSize ?? 128,
    threads: 1,
  });
  try {
    const ids = [];
    const scores = [];
    for (const { query, document } of job.pairs) {
      const tokenize = (text) => model.tokenize(text, false, "trimLeadingSpace");
      ids.push([...context._getEvaluationInput(tokenize(query), tokenize(document))]);
      scores.push(await context.rank(query, document));
    }
    return { ids, scores };
  } finally {
    await context.dispose();
  }
}

const results = [];
for (const job of jobs) {
  try {
    const model = await llama.loadModel({ modelPath: job.path });
    if (job.pairs !== undefined) {
      results.push({ path: job.path, ...await rankingJob(model, job) });
      await model.dispose();
      continue;
    }
    if (job.texts !== undefined) {
      results.push({ path: job.path, ...await embeddingsJob(model, job) });
      await model.dispose();
      continue;
    }
    if (job.ids !== undefined) {
      const logprobs = await logprobsJob(model, job);
      results.push({ path: job.path, logprobs });
      await model.dispose();
      continue;
    }
    const context = await model.createContext({ contextSize: 128, threads: 1 });
    const sequence = context.getSequence();
    const prompt = model.tokenize(job.prompt);
    const generated = [];
    for await (const token of sequence.evaluate(prompt, { temperature: 0 })) {
      generated.push(token);
      if (generated.length >= job.tokens) break;
    }
    await context.dispose();
    // The distribution of the token after the prompt: tells apart weights
    // that differ slightly even when a tiny model's greedy text does not.
    const probe = await model.createContext({ contextSize: 128, threads: 1 });
    const evaluated = await probe.getSequence().controlledEvaluate(
      prompt.map((t, i) =>
        i === prompt.length - 1 ? [t, { generateNext: { probabilities: true } }] : t
      ),
    );
    const probabilities = evaluated[evaluated.length - 1]?.next?.probabilities ?? new Map();
    const next = [...probabilities.entries()].slice(0, 8);
    await probe.dispose();
    const text = model.detokenize(prompt);
    results.push({ path: job.path, prompt: [...prompt], text, generated, next });
    await model.dispose();
  } catch (error) {
    results.push({ path: job.path, error: String(error?.message ?? error) });
  }
}
process.stdout.write(JSON.stringify(results));
await llama.dispose();
