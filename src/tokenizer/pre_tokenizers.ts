// This module is browser compatible.

/**
 * The pre-tokenizers llama.cpp implements (`tokenizer.ggml.pre`), recognised
 * from a Hugging Face `tokenizer.json` itself.
 *
 * llama.cpp's converter recognises a byte-level BPE tokenizer by running it on
 * a fixed text and hashing the token ids (`get_vocab_base_pre`); aprkit runs
 * no tokenizer, so it compares what decides that output instead: the
 * pre-tokenizer's steps (each `Split` regex and its behaviour, `ByteLevel`
 * and whether it applies GPT-2's regex, `Digits`, `Punctuation`…), and where
 * two names share the steps, the normaliser or the BPE model's
 * `ignore_merges`. Each entry names the published model the converter names
 * for it; the regexes llama.cpp runs for that name (`src/llama-vocab.cpp`,
 * `llm_tokenizer_bpe`) split the text as the entry's steps do (the tests
 * check it with transformers' and llama.cpp's ids). Names that llama.cpp
 * handles alike are listed under one entry (`alike`).
 *
 * A byte-level tokenizer that matches no entry has no pre-tokenizer in
 * llama.cpp that would split its text as transformers does; writing
 * `default` gives a file that loads and answers in garbage, so GGUF output
 * refuses it unless asked for a name explicitly (see
 * `describePreTokenizer`).
 *
 * @module
 */

/** One pre-tokenizer llama.cpp implements. */
export interface PreTokenizerEntry {
  /** The `tokenizer.ggml.pre` name llama.cpp's converter writes. */
  readonly name: string;
  /** The published model the converter names for it (its `get_vocab_base_pre` comment). */
  readonly model: string;
  /**
   * The `tokenizer.json` `pre_tokenizer` that is recognised as this name;
   * none for a name llama.cpp runs custom code for, which `--pre-tokenizer`
   * can still write.
   */
  readonly preTokenizer?: unknown;
  /** The `normalizer` type, where it tells two entries apart (`"NFC"`, `"none"`). */
  readonly normalizer?: string;
  /** The BPE model's `ignore_merges`, where it tells two entries apart. */
  readonly ignoreMerges?: boolean;
  /**
   * Other names the converter writes for models whose text llama.cpp splits
   * and merges exactly as this one's: the same regexes, `ignore_merges` and
   * byte encoding in `src/llama-vocab.cpp`. They differ at most in defaults
   * the GGUF's own keys override (`add_bos`, `add_sep`, the BOS id) or in
   * `clean_spaces`, which only decoding reads; the structure of a
   * `tokenizer.json` cannot tell them apart, and writing this name gives the
   * same tokens.
   */
  readonly alike?: readonly string[];
  /**
   * A name llama.cpp runs with exactly this entry's regex where its regexes
   * for `name` (and `alike`) do not, for tokenizers whose BPE model's
   * `ignore_merges` is `ignoreMerges` (the exact name's own setting):
   * written by default, since llama.cpp then splits text as transformers
   * does; `--pre-tokenizer NAME` writes the converter's name.
   */
  readonly exact?: { readonly name: string; readonly ignoreMerges: boolean };
}

const byteLevel = (regex: boolean) => ({
  type: "ByteLevel",
  add_prefix_space: false,
  trim_offsets: true,
  use_regex: regex,
});
const splitStep = (regex: string) => ({
  type: "Split",
  pattern: { Regex: regex },
  behavior: "Isolated",
  invert: false,
});
const DIGITS = { type: "Digits", individual_digits: true };
const sequence = (...steps: unknown[]) => ({ type: "Sequence", pretokenizers: steps });
/** `Split` steps, one per regex, then byte-level without GPT-2's regex. */
const splits = (...regexes: string[]) => sequence(...regexes.map(splitStep), byteLevel(false));

const CONTRACTIONS = "(?i:'s|'t|'re|'ve|'m|'ll|'d)";
const LLAMA3 = CONTRACTIONS +
  "|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}{1,3}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+";
const QWEN2 = CONTRACTIONS +
  "|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+";
const O200K =
  "[^\\r\\n\\p{L}\\p{N}]?[\\p{Lu}\\p{Lt}\\p{Lm}\\p{Lo}\\p{M}]*[\\p{Ll}\\p{Lm}\\p{Lo}\\p{M}]+" +
  CONTRACTIONS + "?|[^\\r\\n\\p{L}\\p{N}]?[\\p{Lu}\\p{Lt}\\p{Lm}\\p{Lo}\\p{M}]+" +
  "[\\p{Ll}\\p{Lm}\\p{Lo}\\p{M}]*" + CONTRACTIONS +
  "?|\\p{N}{1,3}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n/]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+";
const DEEPSEEK3_WORDS =
  "[!\"#$%&'()*+,\\-./:;<=>?@\\[\\\\\\]^_`{|}~][A-Za-z]+|[^\r\n\\p{L}\\p{P}\\p{S}]?[\\p{L}\\p{M}]+| ?[\\p{P}\\p{S}]+[\r\n]*|\\s*[\r\n]+|\\s+(?!\\S)|\\s+";
const BLOOM = " ?[^(\\s|[.,!?…。，、।۔،])]+";
/**
 * Regexes whose matches leave nothing between them (every character that no
 * other alternative takes is whitespace, which the last, `\s+`, takes): a
 * `Split` that keeps the matches and removes the rest (`invert`, `Removed`:
 * how tiktoken's conversions spell it, Xenova/gpt-4's and gpt-4o's, phi-4's,
 * OLMo 3's, Granite 4.1's, MiniMax-M2.5's) cuts text as `Isolated` does.
 */
const GAPLESS: ReadonlySet<string> = new Set([LLAMA3, O200K]);

/**
 * Every byte-level BPE pre-tokenizer name llama.cpp's converter can write
 * (`get_vocab_base_pre`, de3ff81), first match wins: an entry that asks for
 * a normaliser or `ignore_merges` comes before the one with the same steps
 * that does not. What each `preTokenizer` was checked against (a published
 * `tokenizer.json`, or transformers' ids recorded by llama.cpp for the
 * model's vocabulary) is in `tests/testdata/tokenizers/pre_tokenizers/README.md`.
 */
export const PRE_TOKENIZERS: readonly PreTokenizerEntry[] = [
  {
    name: "llama-bpe",
    model: "meta-llama/Meta-Llama-3-8B (and Llama 3.1, 3.2, 3.3)",
    preTokenizer: splits(LLAMA3),
    ignoreMerges: true,
    alike: [
      "llama3",
      "llama-v3",
      "falcon3",
      "falcon-h1",
      "pixtral",
      "midm-2.0",
      "lfm2",
      "jina-v5-nano",
    ],
  },
  {
    name: "smaug-bpe",
    model: "abacusai/Smaug-Llama-3-70B-Instruct",
    preTokenizer: splits(LLAMA3),
    alike: ["dbrx", "glm4", "chatglm-bpe"],
  },
  {
    name: "qwen2",
    model: "Qwen/Qwen1.5-7B (and Qwen2, Qwen2.5, Qwen3)",
    preTokenizer: splits(QWEN2),
    alike: [
      "deepseek-r1-qwen",
      "megrez",
      "stablelm2",
      "hunyuan",
      "solar-open",
      "grok-2",
      "kormo",
      "f2llmv2",
    ],
  },
  {
    name: "deepseek-v3",
    model: "deepseek-ai/DeepSeek-V3 (and DeepSeek-R1)",
    preTokenizer: splits(
      "\\p{N}{1,3}",
      "[\u4e00-\u9fa5\u3040-\u309f\u30a0-\u30ff]+",
      DEEPSEEK3_WORDS,
    ),
    alike: ["hunyuan-dense", "joyai-llm", "hy_v4"],
  },
  {
    name: "spark2_5",
    model: "XHToken/Spark-X2.5-1.7B",
    preTokenizer: sequence(
      splitStep("\\p{N}{1,3}"),
      splitStep("[\u4e00-\u9fa5\u3040-\u309f\u30a0-\u30ff]+"),
      splitStep(
        "[!\"#$%&'()*+,\\-./:;<=>?@\\[\\\\\\]^_`{|}~][A-Za-z]+|[^\r\n\\p{L}\\p{P}\\p{S}]?[\\p{L}\\p{M}]+| ?[\\p{P}\\p{S}]+|[\r\n]|\\s+(?!\\S)|\\s+",
      ),
      DIGITS,
      byteLevel(false),
    ),
  },
  {
    name: "gpt-4o",
    model: "Xenova/gpt-4o (o200k; openai/gpt-oss-20b and -120b)",
    preTokenizer: splits(O200K),
    alike: ["llama4", "kanana2", "talkie", "minimax-m2"],
    // llama.cpp's gpt-4o regex rewrites o200k's letter classes as lookaheads
    // on \p{L} only, so combining marks (\p{M}: Devanagari's vowel signs,
    // Thai's tone marks) split words; its granite-embed-multi-97m regex is
    // the same with \p{M}, and sets ignore_merges.
    exact: { name: "granite-embed-multi-97m", ignoreMerges: true },
  },
  {
    name: "granite-embed-multi-97m",
    model: "ibm-granite/granite-embedding-97m-multilingual-r2",
  },
  {
    name: "youtu",
    model: "tencent/Youtu-LLM-2B",
    preTokenizer: splits(
      "[\uac00-\ud7a3\u3131-\u318e]+|[\uff01\u2026\u201c\u201d\u2018\u2019\u2014\uff1a\uff1b\uff0c\u3001-\u303f\ufe30-\ufe4f]+|[\u3105-\u312f]+|[\u4e00-\u9fa5\u3040-\u309f\u30a0-\u30ff]+",
      "[^\\r\\n\\p{L}\\p{N}]?[\\p{Lu}\\p{Lt}\\p{Lm}\\p{Lo}\\p{M}]*[\\p{Ll}\\p{Lm}\\p{Lo}\\p{M}]+" +
        CONTRACTIONS + "?|[^\\r\\n\\p{L}\\p{N}]?[\\p{Lu}\\p{Lt}\\p{Lm}\\p{Lo}\\p{M}]+" +
        "[\\p{Ll}\\p{Lm}\\p{Lo}\\p{M}]*" + CONTRACTIONS +
        "?|\\p{N}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n/]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+",
    ),
    ignoreMerges: true,
  },
  {
    name: "qwen35",
    model: "Qwen/Qwen3.5-9B-Instruct",
    preTokenizer: splits(
      CONTRACTIONS +
        "|[^\\r\\n\\p{L}\\p{N}]?[\\p{L}\\p{M}]+|\\p{N}| ?[^\\s\\p{L}\\p{M}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+",
    ),
  },
  {
    name: "tekken",
    model: "mistralai/Mistral-Nemo-Base-2407",
    preTokenizer: splits(
      "[^\\r\\n\\p{L}\\p{N}]?[\\p{Lu}\\p{Lt}\\p{Lm}\\p{Lo}\\p{M}]*[\\p{Ll}\\p{Lm}\\p{Lo}\\p{M}]+|[^\\r\\n\\p{L}\\p{N}]?[\\p{Lu}\\p{Lt}\\p{Lm}\\p{Lo}\\p{M}]+[\\p{Ll}\\p{Lm}\\p{Lo}\\p{M}]*|\\p{N}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n/]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+",
    ),
    ignoreMerges: true,
  },
  {
    name: "tiny_aya",
    model: "CohereLabs/tiny-aya-base",
    preTokenizer: splits("\\d{1,3}(?=(?:\\d{3})*\\b)", O200K),
    alike: ["cohere2moe"],
  },
  {
    name: "jais-2",
    model: "inceptionai/Jais-2-8B-Chat",
    preTokenizer: splits(
      CONTRACTIONS +
        "|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}{1,3}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s{512}(?!\\S)|\\s{256}(?!\\S)|\\s{128}(?!\\S)|\\s{64}(?!\\S)|\\s{32}(?!\\S)|\\s{16}(?!\\S)|\\s{8}(?!\\S)|\\s{4}(?!\\S)|\\s{1,2}(?!\\S)|\\s{1}",
    ),
  },
  {
    name: "seed-coder",
    model: "ByteDance-Seed/Seed-Coder-8B-Base",
    preTokenizer: splits(
      CONTRACTIONS +
        "|[^\r\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}{1}| ?[^\\s\\p{L}\\p{N}\r\n]+|\\s*[\r\n]+|\\s+(?!\\S)|\\s+",
    ),
  },
  {
    name: "bailingmoe",
    model: "inclusionAI/Ling-lite",
    preTokenizer: splits(
      "'(?i:[sdmt]|ll|ve|re)|[^\\r\\n\\p{L}\\p{N}]?+\\p{L}+|\\p{N}| ?[^\\s\\p{L}\\p{N}]++[\\r\\n]*|\\s*[\\r\\n]|\\s+(?!\\S)|\\s+",
    ),
    alike: ["bailingmoe2", "llada-moe"],
  },
  {
    name: "exaone-moe",
    model: "LGAI-EXAONE/K-EXAONE-236B-A23B",
    preTokenizer: splits(
      CONTRACTIONS +
        "|[^\\r\\n\\p{L}\\p{N}]?(?:\\p{L}\\p{M}*(?: \\p{L}\\p{M}*)*)+|\\p{N}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n/]?|\\s*[\\r\\n]|\\s+(?!\\S)|\\s+",
    ),
  },
  {
    name: "minicpm5",
    model: "openbmb/MiniCPM5-1B",
    preTokenizer: splits(
      "\\p{N}{1,3}",
      CONTRACTIONS +
        "|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}+| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+",
    ),
    ignoreMerges: true,
  },
  {
    name: "ufakzeka",
    model: "ufakai/ufakzeka-1",
    preTokenizer: splits(
      "[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+",
    ),
  },
  {
    name: "bloom",
    model: "bigscience/bloom",
    preTokenizer: splits(BLOOM),
    alike: ["poro-chat", "gpt3-finnish"],
  },
  {
    name: "viking",
    model: "LumiOpen/Viking-7B",
    preTokenizer: sequence(splitStep(BLOOM), DIGITS, byteLevel(false)),
  },
  {
    name: "olmo",
    model:
      "allenai/OLMo-1.7-7B-hf (and mosaicml/mpt-7b: the converter's hash of both is one, and its last match, olmo, is what it writes)",
    preTokenizer: byteLevel(true),
    normalizer: "NFC",
    alike: ["mpt"],
  },
  {
    name: "gpt-2",
    model: "openai-community/gpt2 (and microsoft/phi-2)",
    preTokenizer: byteLevel(true),
    alike: [
      "phi-2",
      "jais",
      "exaone4",
      "gigachat",
      "jina-es",
      "jina-de",
      "jina-v2-es",
      "jina-v2-de",
      "jina-v1-en",
      "jina-v2-code",
      "roberta-bpe",
      "a.x-4.0",
      "mellum",
      "modern-bert",
      "trillion",
      "granite-docling",
    ],
  },
  {
    name: "command-r",
    model: "CohereForAI/c4ai-command-r-v01 (and c4ai-command-r-plus, aya-expanse)",
    preTokenizer: sequence(DIGITS, byteLevel(true)),
    normalizer: "NFC",
  },
  {
    name: "starcoder",
    model: "bigcode/starcoder2-3b (and smallcloudai/Refact-1_6-base)",
    preTokenizer: sequence(DIGITS, byteLevel(true)),
    alike: ["refact", "smollm", "codeshell", "exaone", "minerva-7b", "mellum2"],
  },
  {
    name: "falcon",
    model: "tiiuae/falcon-7b",
    preTokenizer: sequence(
      { type: "Punctuation", behavior: "Contiguous" },
      byteLevel(true),
      { type: "Digits", individual_digits: false },
      splitStep("[0-9][0-9][0-9]"),
    ),
  },
  {
    name: "deepseek-llm",
    model: "deepseek-ai/deepseek-llm-7b-base",
    preTokenizer: sequence(
      splitStep("[\r\n]"),
      splitStep(
        "\\s?[A-Za-z\u00b5\u00c0-\u00d6\u00d8-\u00f6\u00f8-\u01ba\u01bc-\u01bf\u01c4-\u0293\u0295-\u02af\u0370-\u0373\u0376\u0377\u037b-\u037d\u037f\u0386\u0388-\u038a\u038c\u038e-\u03a1\u03a3-\u03f5\u03f7-\u0481\u048a-\u052f\u0531-\u0556\u10a0-\u10c5\u13a0-\u13f5\u13f8-\u13fd\u1c90-\u1cba\u1cbd-\u1cbf\u1d00-\u1d2b\u1d6b-\u1d77\u1d79-\u1d9a\u1e00-\u1f15\u1f18-\u1f1d\u1f20-\u1f45\u1f48-\u1f4d\u1f50-\u1f57\u1f59\u1f5b\u1f5d\u1f5f-\u1f7d\u1f80-\u1fb4\u1fb6-\u1fbc\u1fbe\u1fc2-\u1fc4\u1fc6-\u1fcc\u1fd0-\u1fd3\u1fd6-\u1fdb\u1fe0-\u1fec\u1ff2-\u1ff4\u1ff6-\u1ffc\u2102\u2107\u210a-\u2113\u2115\u2119-\u211d\u2124\u2126\u2128\u212a-\u212d\u212f-\u2134\u2139\u213c-\u213f\u2145-\u2149\u214e\u2183\u2184\u2c00-\u2c7b\u2c7e-\u2ce4\u2ceb-\u2cee\u2cf2\u2cf3\ua640-\ua66d\ua680-\ua69b\ua722-\ua76f\ua771-\ua787\ua78b-\ua78e\uab70-\uabbf\ufb00-\ufb06\ufb13-\ufb17\uff21-\uff3a\uff41-\uff5a\u{10400}-\u{1044f}\u{104b0}-\u{104d3}\u{104d8}-\u{104fb}\u{10c80}-\u{10cb2}\u{10cc0}-\u{10cf2}\u{118a0}-\u{118df}\u{1e900}-\u{1e943}]+",
      ),
      splitStep("\\s?[!-/:-~\uff01-\uff0f\uff1a-\uff5e\u2018-\u201f\u3000-\u3002]+"),
      splitStep("\\s+$"),
      splitStep("[一-龥ࠀ-一가-퟿]+"),
      { type: "Digits", individual_digits: false },
      byteLevel(false),
    ),
  },
  {
    name: "deepseek-coder",
    model: "deepseek-ai/deepseek-coder-6.7b-base",
    preTokenizer: sequence(
      splitStep("[\r\n]"),
      splitStep("\\s?\\p{L}+"),
      splitStep("\\s?\\p{P}+"),
      splitStep("[\u4e00-\u9fa5\u0800-\u4e00\uac00-\ud7ff]+"),
      DIGITS,
      byteLevel(false),
    ),
  },
  { name: "chameleon", model: "facebook/chameleon-7b" },
  { name: "kimi-k2", model: "moonshotai/Kimi-K2-Base" },
  { name: "superbpe", model: "UW/OLMo2-8B-SuperBPE-t180k" },
  {
    name: "afmoe",
    model: "arcee-ai/Trinity-Tokenizer (and Trinity Large's published tokenizer.json)",
    // Trinity's steps (published_chains.json): digit runs cut into chunks of
    // 510, then an all-digit piece's leading one or two digits and groups of
    // three (1234567 → 1 234 567), runs of CJK/kana, Thai, Lao, Khmer, Myanmar
    // and Hangul, then DeepSeek-V3's words; llama.cpp's afmoe groups digits in
    // custom code (\p{AFMoE_digits}) and lists the same script runs.
    preTokenizer: sequence(
      { type: "Digits", individual_digits: false },
      splitStep("\\p{Nd}{1,510}(?=(?>\\p{Nd}{510})*(?:\\P{Nd}|$))|\\G\\p{Nd}{510}"),
      splitStep("\\A\\p{Nd}{1,2}(?=\\p{Nd}{3}+\\z)"),
      splitStep("\\A\\p{Nd}{3}|\\G\\p{Nd}{3}"),
      splitStep(
        "(?:[\\u4E00-\\u9FFF\\u3040-\\u309F\\u30A0-\\u30FF\\u3400-\\u4DBF\\uf900-\\uFAFF\\uFF65-\\uFF9F\\u2F00-\\u2FDF]+" +
          "|[\\u0E00-\\u0E7F]+|[\\u0E80-\\u0EFF]+|[\\u1780-\\u17FF]+" +
          "|[\\u1000-\\u109F\\uAA60-\\uAA7F\\uA9E0-\\uA9FF]+|[\\uAC00-\\uD7AF\\u1100-\\u11FF]+)",
      ),
      splitStep(DEEPSEEK3_WORDS),
      byteLevel(false),
    ),
  },
  {
    name: "laguna",
    model: "poolside/Laguna-XS.2",
    // Newline runs (with their \r) start the next piece, then Qwen2's regex:
    // llama.cpp cuts between newline and other characters ([^\n]+|[\n]+,
    // custom code), which splits alike but for \r\n (its \r stays behind).
    preTokenizer: sequence(
      {
        type: "Split",
        pattern: { Regex: "(?:\\r?\\n)+(?!\\r?\\n)" },
        behavior: "MergedWithNext",
        invert: false,
      },
      splitStep(QWEN2),
      byteLevel(false),
    ),
  },
];

function record(value: unknown): Record<string, unknown> | undefined {
  return value !== null && typeof value === "object" && !Array.isArray(value)
    ? value as Record<string, unknown>
    : undefined;
}

/** One pre-tokenizer step, spelled so that equal spellings split text alike. */
function stepName(step: Record<string, unknown>): string {
  switch (step["type"]) {
    case "Split": {
      const pattern = record(step["pattern"]);
      const regex = pattern?.["Regex"];
      const text = pattern?.["String"];
      const behavior = String(step["behavior"] ?? "?");
      const invert = step["invert"] === true ? ", inverted" : "";
      if (typeof regex === "string") {
        if (behavior === "Removed" && invert !== "" && GAPLESS.has(regex)) {
          return `Split(Isolated, ${regex})`;
        }
        return `Split(${behavior}${invert}, ${regex})`;
      }
      return `Split(${behavior}${invert}, string ${JSON.stringify(text)})`;
    }
    case "ByteLevel":
      // add_prefix_space puts a space before the text; no llama.cpp pre-tokenizer does.
      return `ByteLevel${step["use_regex"] === false ? "" : "(regex)"}${
        step["add_prefix_space"] === true ? "(prefix space)" : ""
      }`;
    case "Digits":
      return step["individual_digits"] === true ? "Digits(individual)" : "Digits";
    default:
      return JSON.stringify(step);
  }
}

/**
 * The steps of a `tokenizer.json`'s `pre_tokenizer`, in order, nested
 * `Sequence`s flattened.
 *
 * @example Usage
 * ```ts
 * import { preTokenizerSteps } from "./pre_tokenizers.ts";
 * const steps = preTokenizerSteps({ type: "ByteLevel", use_regex: true, add_prefix_space: false });
 * console.assert(steps[0] === "ByteLevel(regex)");
 * ```
 *
 * @param pre The `pre_tokenizer` object (or `null`).
 * @returns One name per step; none for `null`.
 */
export function preTokenizerSteps(pre: unknown): string[] {
  const steps: string[] = [];
  const walk = (node: unknown, depth: number): void => {
    const r = record(node);
    if (r === undefined || depth > 16) return;
    if (r["type"] === "Sequence" && Array.isArray(r["pretokenizers"])) {
      for (const child of r["pretokenizers"]) walk(child, depth + 1);
    } else {
      steps.push(stepName(r));
    }
  };
  walk(pre, 0);
  return steps;
}

/** The `normalizer`'s type, `Sequence`s spelled with their parts; `"none"` for none. */
export function normalizerName(normalizer: unknown): string {
  const r = record(normalizer);
  if (r === undefined) return "none";
  if (r["type"] === "Sequence" && Array.isArray(r["normalizers"])) {
    return `Sequence(${r["normalizers"].map(normalizerName).join(", ")})`;
  }
  return String(r["type"]);
}

const ENTRY_STEPS = new Map(
  PRE_TOKENIZERS.map((
    e,
  ) => [e, e.preTokenizer === undefined ? [] : preTokenizerSteps(e.preTokenizer)]),
);

/**
 * The llama.cpp pre-tokenizer of a byte-level BPE `tokenizer.json`.
 *
 * @example Usage
 * ```ts
 * import { recognisePreTokenizer } from "./pre_tokenizers.ts";
 * const gpt2 = { pre_tokenizer: { type: "ByteLevel", use_regex: true }, model: { type: "BPE" } };
 * console.assert(recognisePreTokenizer(gpt2)?.name === "gpt-2");
 * ```
 *
 * @param tokenizer The parsed `tokenizer.json`.
 * @returns The table's entry, or undefined when none matches.
 */
export function recognisePreTokenizer(tokenizer: unknown): PreTokenizerEntry | undefined {
  const t = record(tokenizer);
  const steps = preTokenizerSteps(t?.["pre_tokenizer"]);
  if (steps.length === 0) return undefined;
  const normalizer = normalizerName(t?.["normalizer"]);
  const ignoreMerges = record(t?.["model"])?.["ignore_merges"] === true;
  return PRE_TOKENIZERS.find((entry) => {
    const want = ENTRY_STEPS.get(entry)!;
    return want.length === steps.length && want.every((s, i) => s === steps[i]) &&
      (entry.normalizer === undefined || entry.normalizer === normalizer) &&
      (entry.ignoreMerges === undefined || entry.ignoreMerges === ignoreMerges);
  });
}

/**
 * The name to write for a `tokenizer.json` recognised as `entry`: its exact
 * name (see {@linkcode PreTokenizerEntry.exact}) when the tokenizer's
 * `ignore_merges` fits it, else the converter's name.
 *
 * @example Usage
 * ```ts
 * import { preTokenizerName, PRE_TOKENIZERS } from "./pre_tokenizers.ts";
 * const gpt4o = PRE_TOKENIZERS.find((e) => e.name === "gpt-4o")!;
 * console.assert(preTokenizerName(gpt4o, { model: { ignore_merges: true } }) === "granite-embed-multi-97m");
 * console.assert(preTokenizerName(gpt4o, { model: {} }) === "gpt-4o");
 * ```
 *
 * @param entry The recognised entry.
 * @param tokenizer The parsed `tokenizer.json`.
 * @returns The `tokenizer.ggml.pre` name.
 */
export function preTokenizerName(entry: PreTokenizerEntry, tokenizer: unknown): string {
  const ignoreMerges = record(record(tokenizer)?.["model"])?.["ignore_merges"] === true;
  return entry.exact !== undefined && entry.exact.ignoreMerges === ignoreMerges
    ? entry.exact.name
    : entry.name;
}

/**
 * Every name llama.cpp accepts for a byte-level BPE vocabulary that aprkit
 * can write: each entry's name and the names that tokenize alike.
 */
export const PRE_TOKENIZER_NAMES: readonly string[] = PRE_TOKENIZERS.flatMap((e) => [
  e.name,
  ...(e.alike ?? []),
]);

/**
 * Whether llama.cpp tokenizes alike under two pre-tokenizer names: the same
 * name, or one entry's name and one of its `alike`.
 *
 * @example Usage
 * ```ts
 * import { tokenizeAlike } from "./pre_tokenizers.ts";
 * console.assert(tokenizeAlike("smaug-bpe", "glm4"));
 * console.assert(!tokenizeAlike("llama-bpe", "glm4"));
 * ```
 *
 * @param a A `tokenizer.ggml.pre` name.
 * @param b Another.
 * @returns True when one entry holds both.
 */
export function tokenizeAlike(a: string, b: string): boolean {
  if (a === b) return true;
  return PRE_TOKENIZERS.some((e) => {
    const names = [e.name, ...(e.alike ?? [])];
    return names.includes(a) && names.includes(b);
  });
}

/**
 * A short description of a `tokenizer.json`'s pre-tokenizer, for the message
 * that refuses one no entry matches.
 *
 * @example Usage
 * ```ts
 * import { describePreTokenizer } from "./pre_tokenizers.ts";
 * console.assert(describePreTokenizer({ pre_tokenizer: null }) === "no pre-tokenizer");
 * ```
 *
 * @param tokenizer The parsed `tokenizer.json`.
 * @returns The steps, each cut to 80 characters.
 */
export function describePreTokenizer(tokenizer: unknown): string {
  const steps = preTokenizerSteps(record(tokenizer)?.["pre_tokenizer"]);
  if (steps.length === 0) return "no pre-tokenizer";
  return steps.map((s) => (s.length > 80 ? `${s.slice(0, 77)}...` : s)).join(" + ");
}
