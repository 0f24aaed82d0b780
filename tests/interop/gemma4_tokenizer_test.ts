/**
 * Gemma 4's vocabulary (`tokenizer.ggml.model` `gemma4`: llama.cpp's BPE over
 * the merges on ▁-escaped text, split at newlines only), judged by llama.cpp:
 * aprkit's GGUF of the `gemma4` fixture (a byte-fallback BPE tokenizer.json
 * as GemmaTokenizer writes it, with Gemma 4's added tokens) must tokenize the
 * shared strings and a chat-shaped control text as transformers does
 * (tests/testdata/families/tokens/gemma4.json, made by make_families.py).
 */

import assert from "node:assert/strict";
import { convertModel } from "../../src/pipeline/convert_model.ts";
import { withTempDir } from "../cli/_run_apr.ts";
import { readGgufFile } from "./_files.ts";
import { llamaTokenize } from "./_llama_judge.ts";
import { tokenizationDifferences } from "./_tokenizations.ts";
import { FAMILIES_DIR, familyDir } from "./_families.ts";

const reference = JSON.parse(
  await Deno.readTextFile(`${FAMILIES_DIR}/tokens/gemma4.json`),
) as { texts: string[]; ids: number[][] };

/**
 * Texts llama.cpp's gemma4 vocabulary cannot tokenize as transformers does,
 * whatever the GGUF says, with the reason. Each must still differ.
 */
const KNOWN_DIFFERENCES: Record<string, string> = {};

Deno.test("gemma4 vocabulary: llama.cpp on aprkit's GGUF tokenizes as transformers does", async () => {
  await withTempDir(async (dir) => {
    const gguf = `${dir}/gemma4.gguf`;
    await convertModel(familyDir("gemma4"), gguf);
    const kv = (await readGgufFile(gguf)).kv;
    assert.equal(kv.get("tokenizer.ggml.model")?.value, "gemma4");
    assert.equal(kv.has("tokenizer.ggml.pre"), false);
    const [ids] = await llamaTokenize([{ path: gguf, texts: reference.texts }]);
    const { same, differences } = tokenizationDifferences(
      "gemma4",
      reference.texts,
      ids!,
      reference.ids,
      KNOWN_DIFFERENCES,
    );
    console.log(`gemma4: ${same}/${reference.texts.length} texts tokenized as transformers does`);
    assert.deepEqual(differences, [], differences.join("\n"));
  });
});
