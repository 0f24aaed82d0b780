/**
 * The llama.cpp-converter sha256 table (issue 26 item 6): which families, with
 * which real tokenizer, `converter_sha256_test.ts` checks against
 * tests/testdata/converter/reference.json. A family joins by adding a line
 * here (and its shape to `TINY_FAMILIES`) and re-running
 * tests/testdata/converter/make_reference.sh.
 *
 * Run as a script, it writes each case's folder under the given folder and
 * prints `family<TAB>folder` lines (make_reference.sh reads them).
 */

import { TINY_FAMILIES, writeTinyCheckpoint } from "./_tiny_checkpoint.ts";
import { tokenizerFiles, tokenizerPackages } from "./_tokenizer_packages.ts";

/** One family of the table. */
export interface ConverterCase {
  /** Key of `TINY_FAMILIES`. */
  family: string;
  /** Key of tests/testdata/tokenizers/packages.json. */
  tokenizer: string;
  /** The published model's `generation_config.json` (general.sampling.*), if the case has one. */
  generationConfig?: Record<string, unknown>;
}

/** The families aprkit converts today, each with a tokenizer llama.cpp's converter recognises. */
export const CONVERTER_CASES: readonly ConverterCase[] = [
  {
    family: "llama",
    tokenizer: "llama3_1",
    // meta-llama/Llama-3.1-8B-Instruct's.
    generationConfig: {
      bos_token_id: 128000,
      do_sample: true,
      eos_token_id: [128001, 128008, 128009],
      temperature: 0.6,
      top_p: 0.9,
      transformers_version: "4.42.3",
    },
  },
  { family: "mistral", tokenizer: "llama3_1" },
  { family: "qwen2", tokenizer: "qwen3" },
  {
    family: "qwen3",
    tokenizer: "qwen3",
    // Qwen/Qwen3-0.6B's.
    generationConfig: {
      bos_token_id: 151643,
      do_sample: true,
      eos_token_id: [151645, 151643],
      pad_token_id: 151643,
      temperature: 0.6,
      top_k: 20,
      top_p: 0.95,
      transformers_version: "4.51.0",
    },
  },
];

/** Hidden size of the tiny checkpoints: small, so K-quant rows fall back as llama-quantize does. */
export const CASE_HIDDEN = 32;

/**
 * Write a case's checkpoint folder.
 *
 * @param root Parent folder.
 * @param c The case.
 * @returns The folder.
 */
export async function writeCaseFolder(root: string, c: ConverterCase): Promise<string> {
  const pkg = (await tokenizerPackages())[c.tokenizer]!;
  // The folder's name is the model's name in the GGUF (general.name): the same on every machine.
  const folder = `${root}/${c.family}`;
  await writeTinyCheckpoint(
    folder,
    await tokenizerFiles(c.tokenizer),
    pkg.vocab_size,
    TINY_FAMILIES[c.family]!,
    {
      hidden: CASE_HIDDEN,
      layers: 1,
      ...(c.generationConfig !== undefined ? { generationConfig: c.generationConfig } : {}),
    },
  );
  return folder;
}

if (import.meta.main) {
  for (const c of CONVERTER_CASES) {
    console.log(`${c.family}\t${await writeCaseFolder(Deno.args[0]!, c)}`);
  }
}
