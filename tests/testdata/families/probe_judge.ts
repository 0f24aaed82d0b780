/**
 * The held-out probe's judge (`probe_held_out.py`): llama.cpp's log-probs of
 * a GGUF at a reference's positions, flash attention off and an F32 KV cache,
 * compared with transformers' (the reference JSON). Prints one JSON line:
 * `{"worst": N}` or `{"error": "..."}`.
 *
 *     deno run -A tests/testdata/families/probe_judge.ts REFERENCE.json FILE.gguf
 */

import { llamaLogProbs } from "../../interop/_llama_judge.ts";
import { type FamilyReference, worstDifference } from "../../interop/_families.ts";

const [referencePath, gguf] = Deno.args;
if (referencePath === undefined || gguf === undefined) {
  console.error("usage: probe_judge.ts REFERENCE.json FILE.gguf");
  Deno.exit(2);
}
const ref: FamilyReference = JSON.parse(await Deno.readTextFile(referencePath));
const [result] = await llamaLogProbs([
  { path: gguf, ids: ref.sequence, positions: ref.positions, exact: true },
]);
if (result?.error !== undefined) {
  console.log(JSON.stringify({ error: result.error }));
} else {
  const greedy = ref.steps.every((step, i) => {
    const row = result!.logprobs[i]!;
    return row.reduce((best, v, t) => (v > row[best]! ? t : best), 0) === step.greedy;
  });
  console.log(JSON.stringify({ worst: worstDifference(ref, result!.logprobs), greedy }));
}
