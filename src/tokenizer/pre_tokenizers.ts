// This module is browser compatible.

/**
 * The pre-tokenizers llama.cpp implements (`tokenizer.ggml.pre`), recognised
 * from a Hugging Face `tokenizer.json` itself.
 *
 * llama.cpp's converter recognises a byte-level BPE tokenizer by running it on
 * a fixed text and hashing the token ids (`get_vocab_base_pre`); aprkit runs
 * no tokenizer, so it compares what decides that output instead: the
 * pre-tokenizer's steps (each `Split` regex and its behaviour, `ByteLevel`
 * and whether it applies GPT-2's regex, `Digits`…) and the BPE model's
 * `ignore_merges`. Each entry names the published model whose
 * `tokenizer.json` it was read from, and the regexes llama.cpp runs for that
 * name (`src/llama-vocab.cpp`, `llm_tokenizer_bpe`) split the text the same
 * way. Several of llama.cpp's names share one set of regexes and flags
 * (`smaug-bpe` and `llama-bpe`; `grok-2`, `megrez` and `qwen2`): those
 * tokenize alike, so one entry stands for them.
 *
 * A byte-level tokenizer that matches no entry has no pre-tokenizer in
 * llama.cpp that would split its text as transformers does; writing
 * `default` gives a file that loads and answers in garbage, so GGUF output
 * refuses it unless asked for `default` explicitly (see
 * `describePreTokenizer`).
 *
 * @module
 */

/** One pre-tokenizer llama.cpp implements. */
export interface PreTokenizerEntry {
  /** The `tokenizer.ggml.pre` name llama.cpp's converter writes. */
  readonly name: string;
  /** The published model whose `tokenizer.json` has these steps. */
  readonly model: string;
  /** The steps, as {@linkcode preTokenizerSteps} spells them. */
  readonly steps: readonly string[];
  /** The BPE model's `ignore_merges`, where it tells two entries apart. */
  readonly ignoreMerges?: boolean;
}

/** A byte-level step without GPT-2's regex (the regex came before, in `Split`s). */
const BYTES = "ByteLevel";
/** A byte-level step that also splits with GPT-2's regex. */
const BYTES_GPT2 = "ByteLevel(regex)";
const split = (regex: string): string => `Split(Isolated, ${regex})`;

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

/**
 * Every pre-tokenizer aprkit recognises, first match wins. The steps of the
 * first five were read from the published `tokenizer.json` files the tests
 * carry (`tests/testdata/tokenizers/README.md`); the others are the
 * "original regex from tokenizer.json" that `src/llama-vocab.cpp` quotes
 * for the name, or (GPT-2, StarCoder 2, DeepSeek Coder/LLM) the Hugging Face
 * steps that its regex list reproduces.
 */
export const PRE_TOKENIZERS: readonly PreTokenizerEntry[] = [
  {
    name: "llama-bpe",
    model: "meta-llama/Meta-Llama-3-8B (and Llama 3.1, 3.2, 3.3)",
    steps: [split(LLAMA3), BYTES],
    ignoreMerges: true,
  },
  {
    name: "qwen2",
    model: "Qwen/Qwen1.5-7B (and Qwen2, Qwen2.5, Qwen3)",
    steps: [split(QWEN2), BYTES],
  },
  {
    name: "deepseek-v3",
    model: "deepseek-ai/DeepSeek-V3 (and DeepSeek-R1)",
    steps: [
      split("\\p{N}{1,3}"),
      split("[\u4e00-\u9fa5\u3040-\u309f\u30a0-\u30ff]+"),
      split(
        "[!\"#$%&'()*+,\\-./:;<=>?@\\[\\\\\\]^_`{|}~][A-Za-z]+|[^\r\n\\p{L}\\p{P}\\p{S}]?[\\p{L}\\p{M}]+| ?[\\p{P}\\p{S}]+[\r\n]*|\\s*[\r\n]+|\\s+(?!\\S)|\\s+",
      ),
      BYTES,
    ],
  },
  {
    name: "gpt-4o",
    model: "Xenova/gpt-4o (o200k; openai/gpt-oss-20b and -120b)",
    steps: [split(O200K), BYTES],
  },
  {
    name: "qwen35",
    model: "Qwen/Qwen3.5-9B-Instruct",
    steps: [
      split(
        CONTRACTIONS +
          "|[^\\r\\n\\p{L}\\p{N}]?[\\p{L}\\p{M}]+|\\p{N}| ?[^\\s\\p{L}\\p{M}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+",
      ),
      BYTES,
    ],
  },
  {
    name: "tekken",
    model: "mistralai/Mistral-Nemo-Base-2407",
    steps: [
      split(
        "[^\\r\\n\\p{L}\\p{N}]?[\\p{Lu}\\p{Lt}\\p{Lm}\\p{Lo}\\p{M}]*[\\p{Ll}\\p{Lm}\\p{Lo}\\p{M}]+|[^\\r\\n\\p{L}\\p{N}]?[\\p{Lu}\\p{Lt}\\p{Lm}\\p{Lo}\\p{M}]+[\\p{Ll}\\p{Lm}\\p{Lo}\\p{M}]*|\\p{N}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n/]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+",
      ),
      BYTES,
    ],
  },
  {
    name: "tiny_aya",
    model: "CohereLabs/tiny-aya-base",
    steps: [split("\\d{1,3}(?=(?:\\d{3})*\\b)"), split(O200K), BYTES],
  },
  {
    name: "jais-2",
    model: "inceptionai/Jais-2-8B-Chat",
    steps: [
      split(
        CONTRACTIONS +
          "|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}{1,3}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s{512}(?!\\S)|\\s{256}(?!\\S)|\\s{128}(?!\\S)|\\s{64}(?!\\S)|\\s{32}(?!\\S)|\\s{16}(?!\\S)|\\s{8}(?!\\S)|\\s{4}(?!\\S)|\\s{1,2}(?!\\S)|\\s{1}",
      ),
      BYTES,
    ],
  },
  {
    name: "seed-coder",
    model: "ByteDance-Seed/Seed-Coder-8B-Base",
    steps: [
      split(
        CONTRACTIONS +
          "|[^\r\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}{1}| ?[^\\s\\p{L}\\p{N}\r\n]+|\\s*[\r\n]+|\\s+(?!\\S)|\\s+",
      ),
      BYTES,
    ],
  },
  {
    name: "bailingmoe",
    model: "inclusionAI/Ling-lite",
    steps: [
      split(
        "'(?i:[sdmt]|ll|ve|re)|[^\\r\\n\\p{L}\\p{N}]?+\\p{L}+|\\p{N}| ?[^\\s\\p{L}\\p{N}]++[\\r\\n]*|\\s*[\\r\\n]|\\s+(?!\\S)|\\s+",
      ),
      BYTES,
    ],
  },
  {
    name: "exaone-moe",
    model: "LGAI-EXAONE/K-EXAONE-236B-A23B",
    steps: [
      split(
        CONTRACTIONS +
          "|[^\\r\\n\\p{L}\\p{N}]?(?:\\p{L}\\p{M}*(?: \\p{L}\\p{M}*)*)+|\\p{N}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n/]?|\\s*[\\r\\n]|\\s+(?!\\S)|\\s+",
      ),
      BYTES,
    ],
  },
  {
    name: "minicpm5",
    model: "openbmb/MiniCPM5-1B",
    steps: [
      split("\\p{N}{1,3}"),
      split(
        CONTRACTIONS +
          "|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}+| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+",
      ),
      BYTES,
    ],
  },
  {
    name: "gpt-2",
    model: "openai-community/gpt2 (and microsoft/phi-2)",
    steps: [BYTES_GPT2],
  },
  {
    name: "starcoder",
    model: "bigcode/starcoder2-3b (and HuggingFaceTB/SmolLM-135M)",
    steps: ["Digits(individual)", BYTES_GPT2],
  },
  {
    name: "deepseek-coder",
    model: "deepseek-ai/deepseek-coder-6.7b-base",
    steps: [
      split("[\r\n]"),
      split("\\s?\\p{L}+"),
      split("\\s?\\p{P}+"),
      split("[\u4e00-\u9fa5\u0800-\u4e00\uac00-\ud7ff]+"),
      "Digits(individual)",
      BYTES,
    ],
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
      if (typeof regex === "string") return `Split(${behavior}${invert}, ${regex})`;
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
  const ignoreMerges = record(t?.["model"])?.["ignore_merges"] === true;
  return PRE_TOKENIZERS.find((entry) =>
    entry.steps.length === steps.length && entry.steps.every((s, i) => s === steps[i]) &&
    (entry.ignoreMerges === undefined || entry.ignoreMerges === ignoreMerges)
  );
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
