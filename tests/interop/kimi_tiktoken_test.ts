/**
 * Kimi-Linear as published: a folder with `tiktoken.model`, its remote
 * tokenizer code (`tokenization_kimi.py`) and no `tokenizer.json`. llama.cpp's
 * converter reads that vocabulary through the remote code (its `kimi-k2`
 * path); aprkit reads the file itself (ranks, then the reserved specials named
 * by tokenizer_config.json, merges rebuilt from the ranks). Its GGUF must
 * carry the converter's vocabulary, and llama.cpp must tokenize with it as
 * the tiktoken tokenizer does (tests/testdata/families/tokens/kimi-linear.json,
 * made by make_families.py through the fixture's remote code).
 */

import assert from "node:assert/strict";
import { convertModel } from "../../src/pipeline/convert_model.ts";
import { assertOneLineError, runApr, withTempDir } from "../cli/_run_apr.ts";
import { copyCheckpoint } from "./_multimodal.ts";
import { readGgufFile } from "./_files.ts";
import { llamaTokenize } from "./_llama_judge.ts";
import { tokenizationDifferences } from "./_tokenizations.ts";
import {
  fail,
  FAMILIES_DIR,
  familyDir,
  fileDifference,
  ggufDescription,
  llamaCppManifest,
  manifestDifferences,
} from "./_families.ts";

const reference = JSON.parse(
  await Deno.readTextFile(`${FAMILIES_DIR}/tokens/kimi-linear.json`),
) as { texts: string[]; ids: number[][] };

Deno.test("kimi-linear: the vocabulary read from tiktoken.model is the converter's kimi-k2 one", async () => {
  await assert.rejects(
    Deno.stat(`${familyDir("kimi-linear")}/tokenizer.json`),
    Deno.errors.NotFound,
  );
  await withTempDir(async (dir) => {
    const gguf = `${dir}/kimi-linear.gguf`;
    await convertModel(familyDir("kimi-linear"), gguf);
    const ours = (await readGgufFile(gguf)).kv;
    const theirs = await llamaCppManifest("kimi-linear", "f32");
    assert.ok(theirs !== undefined);
    const keys = theirs.kv.map((kv) => kv.key).filter((k) => k.startsWith("tokenizer."));
    assert.deepEqual(keys, [
      "tokenizer.ggml.model",
      "tokenizer.ggml.pre",
      "tokenizer.ggml.tokens",
      "tokenizer.ggml.token_type",
      "tokenizer.ggml.merges",
      "tokenizer.ggml.bos_token_id",
      "tokenizer.ggml.eos_token_id",
    ]);
    assert.deepEqual([...ours.keys()].filter((k) => k.startsWith("tokenizer.")), keys);
    for (const kv of theirs.kv.filter((kv) => kv.key.startsWith("tokenizer."))) {
      assert.deepEqual(ours.get(kv.key)?.value, kv.value, kv.key);
    }
    // The converter's own kimi-k2 path: its name, and EOS the tokenizer's <|im_end|> (not config.json's [EOS]).
    assert.equal(ours.get("tokenizer.ggml.pre")?.value, "kimi-k2");
    const tokens = ours.get("tokenizer.ggml.tokens")?.value as string[];
    assert.equal(tokens[ours.get("tokenizer.ggml.eos_token_id")?.value as number], "<|im_end|>");
    assert.equal(tokens[381], "<|reserved_token_381|>");
  });
});

Deno.test("kimi-linear: llama.cpp on aprkit's GGUF tokenizes as Kimi's tiktoken tokenizer does", async () => {
  await withTempDir(async (dir) => {
    const gguf = `${dir}/kimi-linear.gguf`;
    await convertModel(familyDir("kimi-linear"), gguf);
    // The same vocabulary under Llama 3's pre-tokenizer: the texts must tell them apart
    // (contractions, which Kimi's regex keeps with their word, and the vocabulary merges across).
    const llama3 = `${dir}/kimi-linear-llama-bpe.gguf`;
    await convertModel(familyDir("kimi-linear"), llama3, { preTokenizer: "llama-bpe" });
    const [ids, otherIds] = await llamaTokenize([
      { path: gguf, texts: reference.texts },
      { path: llama3, texts: reference.texts },
    ]);
    assert.ok(
      otherIds!.some((row, i) => JSON.stringify(row) !== JSON.stringify(reference.ids[i])),
      "llama-bpe tokenizes every text as kimi-k2 does: the texts do not test the pre-tokenizer",
    );
    const { same, differences } = tokenizationDifferences(
      "kimi-linear",
      reference.texts,
      ids!,
      reference.ids,
      {},
    );
    console.log(`kimi-linear: ${same}/${reference.texts.length} texts tokenized as tiktoken does`);
    assert.deepEqual(differences, [], differences.join("\n"));
  });
});

Deno.test("kimi-linear: a tiktoken.model line that is not a token and its rank is refused, naming the file", async () => {
  await withTempDir(async (dir) => {
    const folder = await copyCheckpoint(familyDir("kimi-linear"), `${dir}/kimi-linear`);
    await Deno.writeTextFile(`${folder}/tiktoken.model`, "IQ== 0\nnot-a-line\n");
    const out = `${dir}/out.gguf`;
    const run = await runApr(["convert", folder, "-o", out]);
    assertOneLineError(run, /tiktoken\.model.*line 2 is not a base64 token and its rank/);
    await assert.rejects(Deno.stat(out), Deno.errors.NotFound);
  });
});

Deno.test("kimi-k2 (deepseek2, model_type kimi_k2): from tiktoken.model the GGUF equals the converter's (F32, Q8_0)", async () => {
  await withTempDir(async (dir) => {
    for (const type of ["f32", "q8_0"] as const) {
      const out = `${dir}/kimi-k2-${type}.gguf`;
      await convertModel(familyDir("kimi-k2"), out, type === "f32" ? {} : { quantize: type });
      const theirs = await llamaCppManifest("kimi-k2", type);
      assert.ok(theirs !== undefined);
      fail(`kimi-k2 ${type}`, manifestDifferences(await ggufDescription(out), theirs));
      fail(`kimi-k2 ${type}`, await fileDifference(out, theirs));
      // DeepseekV2Model's kimi-k2 path keeps config.json's EOS ([EOS]), not the tokenizer's.
      const kv = (await readGgufFile(out)).kv;
      const tokens = kv.get("tokenizer.ggml.tokens")?.value as string[];
      assert.equal(tokens[kv.get("tokenizer.ggml.eos_token_id")?.value as number], "[EOS]");
      assert.equal(kv.get("tokenizer.ggml.pre")?.value, "kimi-k2");
    }
  });
});
