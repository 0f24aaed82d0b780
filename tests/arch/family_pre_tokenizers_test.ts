/**
 * The pre-tokenizer (`tokenizer.ggml.pre`) written for the published
 * tokenizers of the families added for issue 31: the name llama.cpp's
 * converter gives each by its hash (`get_vocab_base_pre`, de3ff81's
 * `conversion/base.py`), or a refusal where llama.cpp runs custom code and
 * the steps are not the published file's — never another name.
 *
 * Each case gives the fixture's tokenizer the published file's pre-tokenizer,
 * normaliser and `ignore_merges` (the steps of the table entry that names
 * it, checked against published files and transformers' ids in
 * tests/testdata/tokenizers/pre_tokenizers/README.md); for the published
 * files kept in published_chains.json (Trinity Large's, Seed-OSS's, Granite
 * 4.0's), the file's own.
 */

import assert from "node:assert/strict";
import { aprToGgufKv } from "../../src/formats/gguf/metadata.ts";
import { aprMetadataFromHf } from "../../src/formats/safetensors/hf_metadata.ts";
import { PRE_TOKENIZERS, tokenizeAlike } from "../../src/tokenizer/pre_tokenizers.ts";

const fixture = async (family: string, file: string) =>
  JSON.parse(
    await Deno.readTextFile(
      new URL(`../testdata/families/hf/${family}/${file}`, import.meta.url),
    ),
  ) as Record<string, unknown>;

/** Fixture → the converter's name for its family's published tokenizer, and that model. */
const PUBLISHED: Record<string, { pre: string; model: string }> = {
  "qwen35": { pre: "qwen35", model: "Qwen/Qwen3.5-9B-Instruct" },
  "qwen35-moe": { pre: "qwen35", model: "Qwen/Qwen3.5-9B-Instruct" },
  "qwen3-next": { pre: "qwen2", model: "Qwen/Qwen1.5-7B (Qwen3's tokenizer)" },
  "deepseek32": { pre: "deepseek-v3", model: "deepseek-ai/DeepSeek-V3" },
  "glm": { pre: "chatglm-bpe", model: "THUDM/glm-4-9b-chat" },
  "glm4": { pre: "glm4", model: "THUDM/glm-4-9b-hf" },
  "glm4moe": { pre: "glm4", model: "zai-org/GLM-4.5-Air" },
  "glm4moe-lite": { pre: "glm4", model: "zai-org/GLM-4.7-Flash" },
  "glm-dsa": { pre: "glm4", model: "zai-org/GLM-4.5-Air (GLM-5 shares it)" },
  "solar-open": { pre: "solar-open", model: "upstage/Solar-Open-100B" },
  "minimax-m2": { pre: "minimax-m2", model: "MiniMaxAI/MiniMax-M2" },
  "exaone4": { pre: "exaone4", model: "LGAI-EXAONE/EXAONE-4.0-32B" },
  "exaone-moe": { pre: "exaone-moe", model: "LGAI-EXAONE/K-EXAONE-236B-A23B" },
  "hunyuan-dense": { pre: "hunyuan-dense", model: "tencent/Hunyuan-4B-Instruct" },
  "jais2": { pre: "jais-2", model: "inceptionai/Jais-2-8B-Chat" },
  "youtu": { pre: "youtu", model: "tencent/Youtu-LLM-2B" },
  "mellum": { pre: "mellum2", model: "JetBrains/Mellum2-12B-A2.5B-Base" },
  "cohere2moe": { pre: "cohere2moe", model: "CohereLabs/North-Mini-Code-1.0" },
  "dbrx": { pre: "dbrx", model: "databricks/dbrx-base" },
  "gpt-oss": { pre: "gpt-4o", model: "openai/gpt-oss-20b" },
  "lfm2": { pre: "lfm2", model: "LiquidAI/LFM2.5-350M" },
  "lfm2-moe": { pre: "lfm2", model: "LiquidAI/LFM2.5-8B-A1B" },
  "falcon-h1": { pre: "falcon-h1", model: "tiiuae/Falcon-H1-1B-Base" },
  // Not named by the hash table's comments: GGUF metadata the converter wrote for
  // published Granite 4.0 and Nemotron models, and dots.llm1's vocabulary (Qwen2.5's,
  // whose hash is qwen2): tests/testdata/tokenizers/pre_tokenizers/README.md, "Families".
  "granite-hybrid": { pre: "dbrx", model: "ibm-granite/granite-4.0-h-tiny (cl100k)" },
  // Llama 3's steps, which llama.cpp runs alike under pixtral (Nemotron-H-8B's own not seen;
  // Nemotron 3's are Tekken's: PUBLISHED_UNLIKE_CONVERTER below).
  "nemotron-h": { pre: "pixtral", model: "nvidia/Nemotron-H-8B-Base-8K (Llama 3's steps)" },
  "dots1": { pre: "qwen2", model: "rednote-hilab/dots.llm1.inst (Qwen2.5's)" },
  // Tencent's GGUF of Hy-MT2-30B-A3B (hy_v3, Hy3's vocabulary) carries hunyuan-dense.
  "hy-v3": { pre: "hunyuan-dense", model: "tencent/Hy3 (Hy-MT2-30B-A3B's GGUF)" },
  "hy-v4": { pre: "hy_v4", model: "tencent/Hy4-preview" },
  // The published steps (a census of Hub tokenizers), which the converter names laguna.
  "laguna": { pre: "laguna", model: "poolside/Laguna-XS.2" },
  // Published files whose converter hash is the name's (published_chains.json).
  "afmoe": { pre: "afmoe", model: "arcee-ai/Trinity-Large-Base" },
  "seed-oss": { pre: "seed-coder", model: "ByteDance-Seed/Seed-OSS-36B-Base" },
};

/** The table entry that recognises a name (its own or one it tokenizes alike). */
function entryOf(name: string) {
  const entry = PRE_TOKENIZERS.find((e) =>
    e.preTokenizer !== undefined && (e.name === name || (e.alike ?? []).includes(name))
  );
  assert.ok(entry, `${name}: no entry recognises it`);
  return entry;
}

/** The fixture's tokenizer.json with the published file's pre-tokenizer steps. */
function withSteps(
  tokenizer: Record<string, unknown>,
  pre: unknown,
  normalizer: string | undefined,
  ignoreMerges: boolean,
): Record<string, unknown> {
  return {
    ...tokenizer,
    pre_tokenizer: pre,
    normalizer: normalizer === undefined || normalizer === "none" ? null : { type: normalizer },
    model: { ...(tokenizer["model"] as Record<string, unknown>), ignore_merges: ignoreMerges },
  };
}

/** The name aprkit writes for the family fixture's model with the steps of the entry for `name`. */
async function writtenWithStepsOf(family: string, name: string): Promise<unknown> {
  const config = await fixture(family, "config.json");
  const tokenizer = await fixture(family, "tokenizer.json");
  const tokenizerConfig = await fixture(family, "tokenizer_config.json");
  const entry = entryOf(name);
  const tok = withSteps(
    tokenizer,
    entry.preTokenizer,
    entry.normalizer,
    entry.ignoreMerges ?? false,
  );
  return aprMetadataFromHf({ config, tokenizer: tok, tokenizerConfig })["tokenizer.pre"];
}

for (const [name, published] of Object.entries(PUBLISHED)) {
  Deno.test(`${name}: ${published.model}'s tokenizer is written as ${published.pre}, as the converter names it`, async () => {
    assert.equal(await writtenWithStepsOf(name, published.pre), published.pre);
  });
}

/**
 * Published tokenizer.json files (published_chains.json: kept by
 * 1cyberlangke1/tokkit, each hashed here as the converter hashes it) → the
 * family fixture of their model and the name aprkit writes: the converter's
 * (Granite 4.0-tiny-preview's refact, which llama.cpp runs alike with
 * StarCoder's steps, gets `starcoder`).
 */
const PUBLISHED_FILES: Record<string, { family: string; written: string }> = {
  "arcee-ai/Trinity-Large-Base": { family: "afmoe", written: "afmoe" },
  "arcee-ai/Trinity-Large-Thinking": { family: "afmoe", written: "afmoe" },
  "arcee-ai/Trinity-Large-TrueBase": { family: "afmoe", written: "afmoe" },
  "ByteDance-Seed/Seed-OSS-36B-Base": { family: "seed-oss", written: "seed-coder" },
  "ibm-granite/granite-4.0-350m-base": { family: "granite-hybrid", written: "dbrx" },
  "ibm-granite/granite-4.0-tiny-preview": { family: "granite-hybrid", written: "starcoder" },
  "ibm-granite/granite-4.0-tiny-base-preview": { family: "granite-hybrid", written: "starcoder" },
};

Deno.test("published tokenizer.json files of the issue-31 families are written under the converter's name for them, or one llama.cpp runs alike", async () => {
  const published = JSON.parse(
    await Deno.readTextFile(
      new URL("../testdata/tokenizers/pre_tokenizers/published_chains.json", import.meta.url),
    ),
  ) as {
    chains: {
      model: string;
      converter_name: string;
      normalizer: unknown;
      pre_tokenizer: unknown;
      ignore_merges: boolean;
    }[];
  };
  const checked: string[] = [];
  for (const chain of published.chains) {
    const to = PUBLISHED_FILES[chain.model];
    if (to === undefined) continue;
    const tokenizer = await fixture(to.family, "tokenizer.json");
    const meta = aprMetadataFromHf({
      config: await fixture(to.family, "config.json"),
      tokenizer: {
        ...tokenizer,
        normalizer: chain.normalizer,
        pre_tokenizer: chain.pre_tokenizer,
        model: {
          ...(tokenizer["model"] as Record<string, unknown>),
          ignore_merges: chain.ignore_merges,
        },
      },
      tokenizerConfig: await fixture(to.family, "tokenizer_config.json"),
    });
    assert.equal(meta["tokenizer.pre"], to.written, chain.model);
    assert.ok(tokenizeAlike(to.written, chain.converter_name), chain.model);
    checked.push(chain.model);
  }
  assert.deepEqual(checked.sort(), Object.keys(PUBLISHED_FILES).sort());
});

/**
 * Published tokenizers whose steps llama.cpp splits as transformers does only
 * under another name than the converter's, which aprkit writes instead:
 * NVIDIA-Nemotron-3-Nano's tokenizer.json has Mistral Nemo's Tekken regex with
 * `ignore_merges` (a census of Hub tokenizers, README "Families"); the
 * converter names it `pixtral` by its hash, which llama.cpp runs with Llama
 * 3's regex (69 of 84 texts as transformers on Llama 3's full vocabulary,
 * against 84 under `tekken`).
 */
const PUBLISHED_UNLIKE_CONVERTER: Record<
  string,
  { entry: string; converter: string; model: string }
> = {
  "nemotron-h-moe": {
    entry: "tekken",
    converter: "pixtral",
    model: "nvidia/NVIDIA-Nemotron-3-Nano-30B-A3B-BF16",
  },
  "nemotron-h": {
    entry: "tekken",
    converter: "pixtral",
    model: "NVIDIA Nemotron 3's (nvidia/NVIDIA-Nemotron-3-Nano-4B-BF16)",
  },
};

for (const [name, published] of Object.entries(PUBLISHED_UNLIKE_CONVERTER)) {
  Deno.test(`${name}: ${published.model}'s tokenizer is written as ${published.entry}, not the converter's ${published.converter}`, async () => {
    assert.equal(await writtenWithStepsOf(name, published.entry), published.entry);
    assert.ok(!tokenizeAlike(published.entry, published.converter));
  });
}

/**
 * Families whose published tokenizers llama.cpp splits with custom code
 * (`src/llama-vocab.cpp`, `src/unicode.cpp`): the table holds the published
 * steps (Trinity's, Laguna's), and any other spelling is refused. The regexes
 * llama.cpp lists for the name, as `Split` steps, must match no entry (GGUF
 * output then refuses the tokenizer, naming its steps, unless
 * `--pre-tokenizer NAME` is given).
 */
const CUSTOM: Record<string, { pre: string; regexes: string[] }> = {
  "afmoe": {
    pre: "afmoe",
    regexes: [
      // llama.cpp runs tiny_aya's digit grouping for \p{AFMoE_digits}.
      "\\d{1,3}(?=(?:\\d{3})*\\b)",
      "[一-鿿㐀-䶿豈-﫿぀-ゟ゠-ヿ･-ﾟ⼀-⿟เ-๿຀-໿ក-៿က-႟ꩠ-ꩿꧠ-꧿가-힯ᄀ-ᇿ]+",
      "[!\"#$%&'()*+,\\-./:;<=>?@\\[\\\\\\]^_`{|}~][A-Za-z]+|[^\\r\\n\\p{L}\\p{P}\\p{S}]?[\\p{L}\\p{M}]+| ?[\\p{P}\\p{S}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+",
    ],
  },
  "laguna": {
    pre: "laguna",
    regexes: [
      "[^\\n]+|[\\n]+",
      "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+",
    ],
  },
};

for (const [name, custom] of Object.entries(CUSTOM)) {
  Deno.test(`${name}: llama.cpp's ${custom.pre} regexes as a tokenizer.json are refused, not written as another name`, async () => {
    const config = await fixture(name, "config.json");
    const tokenizer = await fixture(name, "tokenizer.json");
    const tokenizerConfig = await fixture(name, "tokenizer_config.json");
    const pre = {
      type: "Sequence",
      pretokenizers: [
        ...custom.regexes.map((regex) => ({
          type: "Split",
          pattern: { Regex: regex },
          behavior: "Isolated",
          invert: false,
        })),
        { type: "ByteLevel", add_prefix_space: false, trim_offsets: true, use_regex: false },
      ],
    };
    for (const ignoreMerges of [false, true]) {
      const meta = aprMetadataFromHf({
        config,
        tokenizer: withSteps(tokenizer, pre, undefined, ignoreMerges),
        tokenizerConfig,
      });
      assert.equal(meta["tokenizer.pre"], undefined);
      assert.match(String(meta["tokenizer.pre_unrecognised"]), /^Split\(Isolated, /);
      // GGUF output refuses it, naming the converter's name for the published tokenizer.
      assert.throws(
        () => aprToGgufKv(meta),
        (e: Error) =>
          e.message.includes("is none that llama.cpp implements") &&
          e.message.includes(`preTokenizer: "${custom.pre}" writes that name`) &&
          !e.message.includes("\n"),
      );
    }
  });
}
