import assert from "node:assert/strict";
import { mergeRankScores } from "../../src/tokenizer/merge_rank_scores.ts";

Deno.test("mergeRankScores(): -(rank of the first merge that makes the token); +0, never -0, for rank 0", () => {
  const scores = mergeRankScores(
    ["▁", "t", "h", "▁t", "th", "▁th", "<0x0A>", "▁the"],
    ["▁ t", "t h", "▁t h", "▁ th", "▁th e"],
  );
  // "▁th" is made by merge 2 ("▁t h") before merge 3 ("▁ th"): the first rank counts.
  assert.deepEqual(scores, [-5, -5, -5, 0, -1, -2, -5, -4]);
  assert.ok(Object.is(scores[3], 0));
});
