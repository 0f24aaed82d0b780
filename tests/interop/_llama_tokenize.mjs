// The llama.cpp judge of tokenizers: loads each GGUF file's vocabulary only
// (node-llama-cpp 3.22.1, vocabOnly: true, installed into the folder given
// as argv[2]) and tokenizes the given texts as llama.cpp does, special-token
// text parsed as special tokens and nothing added before or after (as
// transformers' encode(text, add_special_tokens=False)). Input on stdin:
// [{ "path", "texts" }]; output on stdout: [{ "path", "ids": [[...], ...] }],
// or { "path", "error" } for a file that fails to load.
import { createRequire } from "node:module";
import { join } from "node:path";
import { pathToFileURL } from "node:url";

const judgeDir = process.argv[2];
const require = createRequire(join(judgeDir, "package.json"));
const { getLlama } = await import(pathToFileURL(require.resolve("node-llama-cpp")).href);

let input = "";
for await (const chunk of process.stdin) input += chunk;
const jobs = JSON.parse(input);

const llama = await getLlama({
  gpu: false,
  build: "never",
  logLevel: "error",
  progressLogs: false,
});
const results = [];
for (const job of jobs) {
  try {
    const model = await llama.loadModel({ modelPath: job.path, vocabOnly: true });
    const ids = job.texts.map((text) => [...model.tokenize(text, true)]);
    results.push({ path: job.path, ids });
    await model.dispose();
  } catch (error) {
    results.push({ path: job.path, error: String(error?.message ?? error) });
  }
}
process.stdout.write(JSON.stringify(results));
await llama.dispose();
