/**
 * Issue 26 item 2: a SentencePiece `tokenizer.model` read with aprkit's
 * bounded protobuf reader gives the pieces, scores and types the
 * sentencepiece library reports (tests/testdata/sentencepiece/, made by
 * make_model.py); a folder carrying it converts to a GGUF on which llama.cpp
 * tokenizes as sentencepiece does; hostile files are refused with a reason.
 */

import assert from "node:assert/strict";
import {
  MAX_SENTENCEPIECE_BYTES,
  parseSentencePieceModel,
} from "../../src/tokenizer/sentencepiece_model.ts";
import { convertModel } from "../../src/pipeline/convert_model.ts";
import { assertOneLineError, DEMO_MODEL, runApr, withTempDir } from "../cli/_run_apr.ts";
import { readGgufFile } from "../interop/_files.ts";
import { writeTinyCheckpoint } from "../interop/_tiny_checkpoint.ts";
import { llamaTokenize } from "../interop/_llama_judge.ts";

const DIR = new URL("../testdata/sentencepiece/", import.meta.url);
const bytes = await Deno.readFile(new URL("tiny.model", DIR));
const expected = JSON.parse(await Deno.readTextFile(new URL("tiny.expected.json", DIR))) as {
  pieces: string[];
  scores: number[];
  converter_types: number[];
  proto_types: number[];
  add_dummy_prefix: boolean;
  remove_extra_whitespaces: boolean;
  strings: string[];
  ids: number[][];
};

Deno.test("parseSentencePieceModel() reads what sentencepiece reports: pieces, scores, types, normaliser flags", () => {
  const m = parseSentencePieceModel(bytes);
  assert.deepEqual(m.pieces.map((p) => p.piece), expected.pieces);
  assert.deepEqual(m.pieces.map((p) => p.score), expected.scores);
  assert.deepEqual(m.pieces.map((p) => p.type), expected.proto_types);
  assert.equal(m.addDummyPrefix, expected.add_dummy_prefix);
  assert.equal(m.removeExtraWhitespaces, expected.remove_extra_whitespaces);
});

Deno.test("parseSentencePieceModel() refuses hostile bytes with a reason, before allocating", () => {
  const bad: [Uint8Array, RegExp][] = [
    [bytes.subarray(0, bytes.length - 3), /runs past|no text|past its/],
    // pieces field claiming 2^40 bytes.
    [new Uint8Array([0x0a, 0x80, 0x80, 0x80, 0x80, 0x80, 0x20]), /runs past its message's end/],
    // an 11-byte varint.
    [new Uint8Array([0x08, ...new Array(11).fill(0xff)]), /longer than 10 bytes/],
    // wire type 7.
    [new Uint8Array([0x0f]), /unsupported wire type 7/],
    // a piece that is not UTF-8.
    [new Uint8Array([0x0a, 0x03, 0x0a, 0x01, 0xff]), /not valid UTF-8/],
    [new Uint8Array([]), /no pieces/],
    [new Uint8Array(MAX_SENTENCEPIECE_BYTES + 1), /exceeds the \d+-byte limit/],
    // JSON is not a protobuf.
    [new TextEncoder().encode('{"a": 1}'), /./],
  ];
  for (const [input, reason] of bad) {
    assert.throws(() => parseSentencePieceModel(input), (e: Error) => {
      assert.ok(e instanceof RangeError, String(e));
      assert.match(e.message, reason);
      return true;
    });
  }
});

Deno.test("a folder with tokenizer.model converts to a GGUF llama vocabulary: the converter's types and scores, and llama.cpp tokenizes as sentencepiece", async () => {
  await withTempDir(async (dir) => {
    // A tiny llama checkpoint with 400 embedding rows, one per piece, and only tokenizer.model.
    const files = `${dir}/files`;
    await Deno.mkdir(files);
    await Deno.writeTextFile(`${files}/tokenizer.json`, "{}");
    await Deno.writeTextFile(
      `${files}/tokenizer_config.json`,
      JSON.stringify({ bos_token: "<s>", eos_token: "</s>", unk_token: "<unk>" }),
    );
    const folder = `${dir}/spm`;
    await writeTinyCheckpoint(folder, files, 400);
    await Deno.remove(`${folder}/tokenizer.json`);
    // As Llama's config.json: the special ids SpecialVocab falls back to without tokenizer.json.
    const config = JSON.parse(await Deno.readTextFile(`${folder}/config.json`));
    await Deno.writeTextFile(
      `${folder}/config.json`,
      JSON.stringify({ ...config, bos_token_id: 1, eos_token_id: 2 }),
    );
    await Deno.writeFile(`${folder}/tokenizer.model`, bytes);
    const gguf = `${dir}/spm.gguf`;
    await convertModel(folder, `${dir}/spm.apr`);
    await convertModel(`${dir}/spm.apr`, gguf);
    const kv = (await readGgufFile(gguf)).kv;
    assert.equal(kv.get("tokenizer.ggml.model")?.value, "llama");
    assert.deepEqual(kv.get("tokenizer.ggml.tokens")?.value, expected.pieces);
    // Through APR (JSON metadata) a -0 score comes back as 0 (docs/INTEROP.md).
    const zeroed = (v: unknown) => (v as number[]).map((x) => x + 0);
    assert.deepEqual(zeroed(kv.get("tokenizer.ggml.scores")?.value), zeroed(expected.scores));
    // The converter's types, except user-defined pieces ("<tool>"), which it types NORMAL so
    // llama.cpp splits them; aprkit keeps them USER_DEFINED, and llama.cpp keeps them whole.
    const types = expected.converter_types.map((t, i) => expected.proto_types[i] === 4 ? 4 : t);
    assert.ok(types.includes(4));
    assert.deepEqual(kv.get("tokenizer.ggml.token_type")?.value, types);
    // Neither key, as the converter's SentencePiece path writes them: llama.cpp's default
    // space prefix is the model's add_dummy_prefix, and its SentencePiece tokenizer ignores
    // remove_extra_whitespaces.
    assert.equal(kv.get("tokenizer.ggml.add_space_prefix"), undefined);
    assert.equal(kv.get("tokenizer.ggml.remove_extra_whitespaces"), undefined);
    assert.equal(kv.get("tokenizer.ggml.bos_token_id")?.value, 1);
    const [ids] = await llamaTokenize([{ path: gguf, texts: expected.strings }]);
    // Where llama.cpp's SentencePiece tokenizer cannot agree whatever the GGUF says; each must
    // still differ, so the list stays true.
    const known: Record<string, string> = {
      "  two  spaces": "llama.cpp applies remove_extra_whitespaces only in its Unigram tokenizer",
      "zebras <tool> 42": "llama.cpp puts a space prefix after a user-defined token, as after a " +
        "control token (is_prev_special); sentencepiece does not",
    };
    for (const [i, text] of expected.strings.entries()) {
      if (Object.hasOwn(known, text)) assert.notDeepEqual(ids![i], expected.ids[i], text);
      else assert.deepEqual(ids![i], expected.ids[i], text);
    }
    // The user-defined piece itself stays whole (typed NORMAL, as the converter does, it splits).
    assert.ok(ids![2]!.includes(4));
  });
});

Deno.test("apr convert: a folder whose tokenizer.model is not a SentencePiece model is exit 2, one line naming the file, no output", async () => {
  await withTempDir(async (dir) => {
    const folder = `${dir}/bad-spm`;
    await Deno.mkdir(folder);
    for (const entry of Deno.readDirSync(DEMO_MODEL)) {
      await Deno.copyFile(`${DEMO_MODEL}/${entry.name}`, `${folder}/${entry.name}`);
    }
    // A truncated model: the last piece runs past the end of the file.
    await Deno.writeFile(`${folder}/tokenizer.model`, bytes.subarray(0, 1000));
    const out = `${dir}/x.gguf`;
    const run = await runApr(["convert", folder, "-o", out, "--quiet"]);
    assertOneLineError(run, `${folder}/tokenizer.model`, "not a SentencePiece model");
    assert.equal(await Deno.stat(out).then(() => true, () => false), false);
  });
});
