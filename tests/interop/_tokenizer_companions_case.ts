/**
 * A tiny llama checkpoint whose tokenizer comes with the companions issue 26
 * item 3 is about: `tokenizer.model` (tests/testdata/sentencepiece/tiny.model),
 * `added_tokens.json` (ids over pieces, past the pieces, and past the
 * vocabulary) and `chat_template.jinja` with two
 * `additional_chat_templates/*.jinja`; and one shaped as CodeLlama's
 * (`vocab_size` 32016, for which `LlamaModel.set_vocab` sets FIM and EOT ids).
 * Run as a script it writes both, `DIR/case` and `DIR/codellama`
 * (for tests/testdata/tokenizers/companions/make_expected.sh):
 *
 *   deno run -A tests/interop/_tokenizer_companions_case.ts DIR
 */

import { writeTinyLlama } from "./_tiny_llama.ts";

const TINY_MODEL = new URL("../testdata/sentencepiece/tiny.model", import.meta.url);

/** Embedding rows: the model's 400 pieces and two ids for added tokens. */
export const VOCAB_SIZE = 402;

/**
 * Write the checkpoint into `folder` (created).
 *
 * @param folder The checkpoint folder.
 */
export async function writeCompanionsCase(folder: string): Promise<void> {
  await Deno.mkdir(`${folder}/additional_chat_templates`, { recursive: true });
  await Deno.copyFile(TINY_MODEL, `${folder}/tokenizer.model`);
  await Deno.writeTextFile(
    `${folder}/tokenizer_config.json`,
    JSON.stringify({ bos_token: "<s>", eos_token: "</s>", unk_token: "<unk>" }),
  );
  await Deno.writeTextFile(
    `${folder}/added_tokens.json`,
    JSON.stringify({ "<|extra_a|>": 400, "<|extra_b|>": 401, "<|over|>": 7, "<|past|>": 402 }),
  );
  await Deno.writeTextFile(
    `${folder}/chat_template.jinja`,
    "{% for m in messages %}{{ m['role'] }}: {{ m['content'] }}\n{% endfor %}",
  );
  await Deno.writeTextFile(
    `${folder}/additional_chat_templates/tool_use.jinja`,
    "{% for t in tools %}{{ t }}{% endfor %}",
  );
  await Deno.writeTextFile(
    `${folder}/additional_chat_templates/rag.jinja`,
    "{% for d in documents %}{{ d['text'] }}{% endfor %}",
  );
  await writeTinyLlama(folder, VOCAB_SIZE);
}

/** CodeLlama's `vocab_size`: 32000 pieces and 16 added ones. */
export const CODELLAMA_VOCAB_SIZE = 32016;

/**
 * Write a checkpoint with CodeLlama's `vocab_size` (the pieces of tiny.model,
 * the rest padding) into `folder` (created).
 *
 * @param folder The checkpoint folder.
 */
export async function writeCodeLlamaCase(folder: string): Promise<void> {
  await Deno.mkdir(folder, { recursive: true });
  await Deno.copyFile(TINY_MODEL, `${folder}/tokenizer.model`);
  await Deno.writeTextFile(
    `${folder}/tokenizer_config.json`,
    JSON.stringify({ bos_token: "<s>", eos_token: "</s>", unk_token: "<unk>" }),
  );
  await writeTinyLlama(folder, CODELLAMA_VOCAB_SIZE);
}

if (import.meta.main) {
  const dir = Deno.args[0];
  if (dir === undefined) throw new Error("usage: _tokenizer_companions_case.ts DIR");
  await writeCompanionsCase(`${dir}/case`);
  await writeCodeLlamaCase(`${dir}/codellama`);
}
