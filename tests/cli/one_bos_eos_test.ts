/**
 * One APR file, one BOS/EOS pair (issue 34 §2): a checkpoint whose
 * `config.json` says `bos_token_id` 1 / `eos_token_id` 2 while its
 * tokenizer's own special tokens are other ids wrote 1/2 as
 * `tokenizer.bos/eos_token_id` (what realizar reads) and the tokenizer's ids
 * in `tokenizer.special_ids`; the GGUF route wrote the tokenizer's. The
 * converter's rule (gguf-py SpecialVocab: the tokenizer's own special tokens
 * first) is the one source of truth for both.
 *
 * @module
 */

import { deepEqual, equal } from "node:assert/strict";
import { join } from "node:path";
import { copyModel, DEMO_MODEL, runApr, withTempDir } from "./_run_apr.ts";

type Json = Record<string, unknown>;

/** The demo model with ids 200/201 made the tokenizer's BOS/EOS; config.json keeps 1/2. */
async function twoPairs(dir: string): Promise<string> {
  const model = await copyModel(dir, DEMO_MODEL);
  const tokenizer = JSON.parse(await Deno.readTextFile(join(model, "tokenizer.json"))) as {
    model: { vocab: Record<string, number> };
    added_tokens: Json[];
  };
  const byId = new Map(Object.entries(tokenizer.model.vocab).map(([t, id]) => [id, t]));
  for (const [id, content] of [[200, "<|bos|>"], [201, "<|eos|>"]] as const) {
    delete tokenizer.model.vocab[byId.get(id)!];
    tokenizer.model.vocab[content] = id;
    tokenizer.added_tokens.push({ id, content, special: true, normalized: false });
  }
  await Deno.writeTextFile(join(model, "tokenizer.json"), JSON.stringify(tokenizer));
  const config = JSON.parse(await Deno.readTextFile(join(model, "tokenizer_config.json"))) as Json;
  config["bos_token"] = "<|bos|>";
  config["eos_token"] = "<|eos|>";
  await Deno.writeTextFile(join(model, "tokenizer_config.json"), JSON.stringify(config));
  return model;
}

async function metadata(path: string): Promise<Json> {
  // A GGUF in APR's keys (as stored, inspect shows its own keys).
  const run = await runApr(["inspect", path, "--json", "--translate"]);
  equal(run.code, 0, run.stderr);
  return (JSON.parse(run.stdout) as { metadata: Json }).metadata;
}

Deno.test("an APR import holds the converter's one BOS/EOS pair, as its GGUF does", async () => {
  await withTempDir(async (dir) => {
    const model = await twoPairs(dir);
    const apr = join(dir, "x.apr");
    const gguf = join(dir, "x.gguf");
    equal((await runApr(["import", model, "-o", apr])).code, 0);
    equal((await runApr(["convert", model, "-o", gguf])).code, 0);
    const a = await metadata(apr);
    const g = await metadata(gguf);
    const ids = a["tokenizer.special_ids"] as Json;
    deepEqual([ids["bos"], ids["eos"]], [200, 201]);
    deepEqual([a["tokenizer.bos_token_id"], a["tokenizer.eos_token_id"]], [200, 201]);
    deepEqual([g["tokenizer.bos_token_id"], g["tokenizer.eos_token_id"]], [200, 201]);
  });
});
