/**
 * Issue 26 item 3: the tokenizer companions llama.cpp's converter reads
 * beside `tokenizer.model` and `tokenizer_config.json`: `added_tokens.json`
 * (written over the SentencePiece pieces, USER_DEFINED, score −1000, ids past
 * the vocabulary skipped) and `additional_chat_templates/*.jinja` beside
 * `chat_template.jinja` (`tokenizer.chat_template.NAME`, the names in
 * `tokenizer.chat_templates`). The converter's keys for the same folder were
 * recorded once by tests/testdata/tokenizers/companions/make_expected.sh.
 * Also CodeLlama's fixed ids (`vocab_size` 32016): the converter sets FIM
 * prefix/suffix/middle and EOT ids, and writes EOT only.
 */

import assert from "node:assert/strict";
import { convertModel } from "../../src/pipeline/convert_model.ts";
import { ggufTemplateName } from "../../src/formats/safetensors/hf_tokenizer_gguf.ts";
import { assertOneLineError, runApr, withTempDir } from "../cli/_run_apr.ts";
import { readGgufFile } from "./_files.ts";
import { writeCodeLlamaCase, writeCompanionsCase } from "./_tokenizer_companions_case.ts";

const expected = JSON.parse(
  await Deno.readTextFile(
    new URL("../testdata/tokenizers/companions/expected.json", import.meta.url),
  ),
) as { keys: Record<string, unknown>; codellama: Record<string, unknown> };

/**
 * Keys whose order the converter takes from the file system's listing of
 * `additional_chat_templates/` (gguf-py's glob); aprkit sorts by name.
 */
const LISTING_ORDER = new Set(["tokenizer.chat_templates"]);

/**
 * tiny.model's user-defined piece "<tool>": aprkit keeps it USER_DEFINED,
 * the converter types it NORMAL (src/tokenizer/sentencepiece_vocab.ts says why).
 */
const USER_DEFINED_PIECE = 4;

Deno.test("added_tokens.json and additional_chat_templates/: aprkit's GGUF has the converter's tokenizer keys", async () => {
  await withTempDir(async (dir) => {
    await writeCompanionsCase(`${dir}/case`);
    for (const route of ["direct", "via APR"]) {
      const gguf = `${dir}/case-${route === "direct" ? "direct" : "apr"}.gguf`;
      if (route === "direct") await convertModel(`${dir}/case`, gguf);
      else {
        await convertModel(`${dir}/case`, `${dir}/case.apr`);
        await convertModel(`${dir}/case.apr`, gguf);
      }
      const kv = (await readGgufFile(gguf)).kv;
      for (let [key, want] of Object.entries(expected.keys)) {
        const got = kv.get(key)?.value;
        let value = ArrayBuffer.isView(got) ? [...(got as unknown as number[])] : got;
        // Through APR a score of −0 comes back as 0: the same number to
        // llama.cpp, not the same bits (left as it is; noted in issue 26).
        if (route === "via APR" && key === "tokenizer.ggml.scores") {
          value = (value as number[]).map((x) => x + 0);
          want = (want as number[]).map((x) => x + 0);
        }
        if (key === "tokenizer.ggml.token_type") {
          const types = [...(want as number[])];
          assert.equal(types[USER_DEFINED_PIECE], 1);
          types[USER_DEFINED_PIECE] = 4;
          assert.deepEqual(value, types, `${route}: ${key}`);
          continue;
        }
        if (LISTING_ORDER.has(key)) {
          assert.deepEqual([...(value as string[])].sort(), [...(want as string[])].sort(), key);
        } else {
          assert.deepEqual(value, want, `${route}: ${key}`);
        }
      }
      const written = [...kv.keys()].filter((k) => k.startsWith("tokenizer.chat_template"));
      assert.deepEqual(
        written.sort(),
        Object.keys(expected.keys).filter((k) => k.startsWith("tokenizer.chat_template")).sort(),
      );
    }
  });
});

Deno.test("CodeLlama's vocab_size (32016): the converter's EOT id 32010 and nothing for FIM, as it writes them", async () => {
  await withTempDir(async (dir) => {
    await writeCodeLlamaCase(`${dir}/codellama`);
    await convertModel(`${dir}/codellama`, `${dir}/codellama.gguf`);
    const kv = (await readGgufFile(`${dir}/codellama.gguf`)).kv;
    const got: Record<string, unknown> = {};
    for (const [key, entry] of kv) {
      if (!key.startsWith("tokenizer.")) continue;
      const v = entry.value;
      got[key] = Array.isArray(v) || ArrayBuffer.isView(v)
        ? { length: (v as ArrayLike<unknown>).length }
        : v;
    }
    assert.deepEqual(got, expected.codellama);
  });
});

Deno.test("two chat templates gguf-py would key alike are refused in one line, nothing written (issue 34)", async (t) => {
  // gguf-py keys each name with every character but A-Z, a-z, 0-9 as "_",
  // per code point (Python iterates a str so): one emoji is one "_".
  assert.equal(ggufTemplateName("tool use"), "tool_use");
  assert.equal(ggufTemplateName("a\u{1F600}b"), "a_b");
  const cases: [string, RegExp][] = [
    [
      "tool use.jinja",
      /"[^"]*tool_use\.jinja": its template name becomes "tool_use" in GGUF, as "tool use\.jinja"'s does/,
    ],
    [
      "default.jinja",
      /"[^"]*default\.jinja": its template name becomes "default" in GGUF, as "chat_template\.jinja"'s does/,
    ],
  ];
  for (const [extra, message] of cases) {
    await t.step(extra, async () => {
      await withTempDir(async (dir) => {
        await writeCompanionsCase(`${dir}/case`);
        await Deno.writeTextFile(`${dir}/case/additional_chat_templates/${extra}`, "{{ x }}");
        await Deno.mkdir(`${dir}/out`);
        for (const out of ["m.gguf", "m.apr"]) {
          assertOneLineError(
            await runApr(["convert", `${dir}/case`, "-o", `${dir}/out/${out}`]),
            message,
          );
        }
        assert.deepEqual([...Deno.readDirSync(`${dir}/out`)], []);
      });
    });
  }
});
