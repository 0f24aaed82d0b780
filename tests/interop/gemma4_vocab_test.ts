/**
 * Gemma 4's real vocabulary, judged against what llama.cpp's converter wrote
 * from the published tokenizer and against transformers' ids for it:
 * tests/testdata/tokenizers/gemma4/fixture.json (made once by
 * make_fixture.py there) is the published Gemma 4 vocabulary
 * (llama.cpp's models/ggml-vocab-gemma-4.gguf), cut down to what llama.cpp's
 * 45 Gemma 4 test texts reach, in the tokenizer.json form that gives those
 * texts the ids transformers recorded with the published tokenizer (45/45,
 * checked when made), with a tokenizer_config.json naming its added tokens
 * special as the published one does. aprkit's GGUF of it (inside the `gemma4` fixture's
 * checkpoint, its embedding rows resized to the vocabulary) must carry the
 * converter's tokens, token types, merges, special ids and flags, `tokenizer.ggml.model`
 * `gemma4` and no pre-tokenizer, and llama.cpp must tokenize every text to
 * the recorded ids.
 */

import assert from "node:assert/strict";
import { convertModel } from "../../src/pipeline/convert_model.ts";
import { encodeSafetensors } from "../../src/formats/safetensors/encode.ts";
import type { DType } from "../../src/dtype.ts";
import { withTempDir } from "../cli/_run_apr.ts";
import { readGgufFile } from "./_files.ts";
import { llamaTokenize } from "./_llama_judge.ts";
import { tokenizationDifferences } from "./_tokenizations.ts";
import { familyDir } from "./_families.ts";

interface Fixture {
  texts: string[];
  ids: number[][];
  token_types: number[];
  merges: string[];
  /** The converter's special ids and add_bos / add_space_prefix flags. */
  kv: Record<string, number | boolean>;
  tokenizer: { model: { vocab: Record<string, number> } };
  tokenizer_config: Record<string, unknown>;
}

const fixture = JSON.parse(
  await Deno.readTextFile(
    new URL("../testdata/tokenizers/gemma4/fixture.json", import.meta.url),
  ),
) as Fixture;

/** Tensors with one row per token, resized (zeros) to the new vocabulary. */
const VOCAB_ROWS = new Set(["model.embed_tokens.weight", "model.embed_tokens_per_layer.weight"]);

/** A safetensors file with its vocabulary-row tensors resized to `rows` (zeros). */
function resized(bytes: Uint8Array, rows: number): Uint8Array {
  const length = Number(new DataView(bytes.buffer, bytes.byteOffset).getBigUint64(0, true));
  const header = JSON.parse(new TextDecoder().decode(bytes.subarray(8, 8 + length)));
  const start = 8 + length;
  const tensors = Object.entries(header)
    .filter(([name]) => name !== "__metadata__")
    .map(([name, info]) => {
      const { dtype, shape, data_offsets: [from, to] } = info as {
        dtype: DType;
        shape: number[];
        data_offsets: [number, number];
      };
      if (!VOCAB_ROWS.has(name)) {
        return { name, dtype, shape, data: bytes.slice(start + from, start + to) };
      }
      const newShape = [rows, ...shape.slice(1)];
      const size = (to - from) / shape.reduce((a, b) => a * b, 1);
      return {
        name,
        dtype,
        shape: newShape,
        data: new Uint8Array(newShape.reduce((a, b) => a * b, size)),
      };
    });
  return encodeSafetensors({ tensors });
}

Deno.test("gemma4: the published vocabulary converts as llama.cpp's converter wrote it, and llama.cpp tokenizes it as transformers does", async () => {
  const rows = fixture.token_types.length;
  await withTempDir(async (dir) => {
    const folder = `${dir}/gemma4`;
    await Deno.mkdir(folder);
    const source = familyDir("gemma4");
    for await (const entry of Deno.readDir(source)) {
      const from = `${source}/${entry.name}`;
      const to = `${folder}/${entry.name}`;
      if (entry.name.endsWith(".safetensors")) {
        await Deno.writeFile(to, resized(await Deno.readFile(from), rows));
      } else if (entry.name === "config.json") {
        const config = JSON.parse(await Deno.readTextFile(from));
        config.vocab_size = rows;
        config.vocab_size_per_layer_input = rows;
        await Deno.writeTextFile(to, JSON.stringify(config));
      } else if (entry.name === "model.safetensors.index.json") {
        // total_size changes with the rows; the weight map does not.
        const index = JSON.parse(await Deno.readTextFile(from));
        delete index.metadata;
        await Deno.writeTextFile(to, JSON.stringify(index));
      } else if (entry.name !== "tokenizer.json" && entry.name !== "tokenizer_config.json") {
        await Deno.copyFile(from, to);
      }
    }
    await Deno.writeTextFile(`${folder}/tokenizer.json`, JSON.stringify(fixture.tokenizer));
    await Deno.writeTextFile(
      `${folder}/tokenizer_config.json`,
      JSON.stringify(fixture.tokenizer_config),
    );

    const gguf = `${dir}/gemma4.gguf`;
    await convertModel(folder, gguf);
    const kv = (await readGgufFile(gguf)).kv;
    assert.equal(kv.get("tokenizer.ggml.model")?.value, "gemma4");
    assert.equal(kv.has("tokenizer.ggml.pre"), false);
    const tokens = kv.get("tokenizer.ggml.tokens")?.value as string[];
    const byId = Object.entries(fixture.tokenizer.model.vocab).sort(([, a], [, b]) => a - b);
    assert.deepEqual(tokens, byId.map(([t]) => t));
    assert.deepEqual(kv.get("tokenizer.ggml.token_type")?.value, fixture.token_types);
    assert.deepEqual(kv.get("tokenizer.ggml.merges")?.value, fixture.merges);
    for (const [key, value] of Object.entries(fixture.kv)) {
      assert.equal(kv.get(key)?.value, value, key);
    }

    const [ids] = await llamaTokenize([{ path: gguf, texts: fixture.texts }]);
    const { same, differences } = tokenizationDifferences(
      "gemma4 (published vocabulary)",
      fixture.texts,
      ids!,
      fixture.ids,
      {},
    );
    console.log(`gemma4: ${same}/${fixture.texts.length} texts tokenized as transformers does`);
    assert.deepEqual(differences, [], differences.join("\n"));
  });
});
