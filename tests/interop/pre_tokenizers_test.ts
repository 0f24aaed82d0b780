/**
 * Issue 26 item 1: every pre-tokenizer of aprkit's table, judged by llama.cpp
 * against transformers. Each fixture (tests/testdata/tokenizers/pre_tokenizers,
 * made once by make_fixtures.py) is a byte-level tokenizer.json with a real
 * vocabulary (llama.cpp's models/ggml-vocab-*.gguf) and the entry's
 * pre-tokenizer, with Hugging Face `tokenizers`' ids for ~85 texts; where the
 * vocabulary is the entry's own model's, those ids equal the ones llama.cpp
 * recorded from the published tokenizer (README.md there). aprkit must
 * recognise the entry's name, and llama.cpp (the judge, vocabulary only) must
 * tokenize every text of aprkit's GGUF as transformers does. A fixture made of
 * a published tokenizer.json itself (`published`: Trinity Large's, Seed-OSS's,
 * Granite 4.0's) is also judged under the name the converter gives it by its
 * hash, where that is another.
 */

import assert from "node:assert/strict";
import { convertModel } from "../../src/pipeline/convert_model.ts";
import { FAMILIES } from "../../src/arch/registry.ts";
import { PRE_TOKENIZERS, recognisePreTokenizer } from "../../src/tokenizer/pre_tokenizers.ts";
import { withTempDir } from "../cli/_run_apr.ts";
import { readGgufFile } from "./_files.ts";
import { llamaTokenize } from "./_llama_judge.ts";
import { tokenizationDifferences } from "./_tokenizations.ts";
import { writeTinyLlama } from "./_tiny_llama.ts";
import { packageFiles, type PackageSpec } from "./_tokenizer_packages.ts";

const FIXTURES = new URL("../testdata/tokenizers/pre_tokenizers/", import.meta.url);

interface Fixture {
  name: string;
  vocabulary: string;
  /** The published tokenizer.json the fixture is made of, and the converter's name for it. */
  published?: { model: string; converter_name: string | null };
  texts: string[];
  ids: number[][];
  tokenizer: {
    model: { vocab: Record<string, number> };
    added_tokens: { id: number }[];
  };
}

/**
 * Texts where llama.cpp's regexes for the name split differently from the
 * Hugging Face regex they stand for, with the reason (fixture's file → text →
 * why). Each must still differ, so the list stays true.
 */
const NFC =
  "the tokenizer.json normalises to NFC (e + U+0301 → é); llama.cpp applies no normaliser";
const KNOWN_DIFFERENCES: Record<string, Record<string, string>> = {
  "command-r": { "e\u0301 decomposed accent": NFC },
  olmo: { "e\u0301 decomposed accent": NFC },
  // ByteDance-Seed/Seed-OSS-36B-Base's published tokenizer.json normalises to NFC.
  "seed-coder-seed-oss": { "e\u0301 decomposed accent": NFC },
  // poolside/Laguna-XS.2's steps (the converter writes laguna for them); no
  // name llama.cpp knows splits \r\n as they do.
  laguna: {
    "windows\r\nline\r\nendings\r\n":
      "the tokenizer.json cuts before each newline run with its \\r ((?:\\r?\\n)+); llama.cpp's laguna cuts between \\n and all else, so \\r stays with the text before it",
  },
};

/**
 * The folder's other files: make_fixtures.py's summary, the converter's names,
 * the census's chains and the published files' chains.
 */
const NOT_FIXTURES = new Set([
  "summary.json",
  "converter_names.json",
  "census_chains.json",
  "published_chains.json",
]);

async function fixtures(): Promise<[string, Fixture][]> {
  const out: [string, Fixture][] = [];
  for await (const entry of Deno.readDir(FIXTURES)) {
    if (!entry.name.endsWith(".json") || NOT_FIXTURES.has(entry.name)) continue;
    const key = entry.name.slice(0, -".json".length);
    out.push([key, JSON.parse(await Deno.readTextFile(new URL(entry.name, FIXTURES)))]);
  }
  return out.sort(([a], [b]) => a.localeCompare(b));
}

/** One GGUF to judge: the fixture it was made of (its key) and the name it carries. */
interface Job {
  key: string;
  name: string;
  path: string;
  fixture: Fixture;
}

/**
 * aprkit's GGUF of a fixture (a tiny Llama around its vocabulary), written
 * with `preTokenizer` when given; checks the name it carries.
 */
async function ggufOf(dir: string, key: string, fixture: Fixture, preTokenizer?: string) {
  const folder = `${dir}/${key}`;
  await Deno.mkdir(folder);
  await Deno.writeTextFile(`${folder}/tokenizer.json`, JSON.stringify(fixture.tokenizer));
  await Deno.writeTextFile(`${folder}/tokenizer_config.json`, "{}");
  const ids = [
    ...Object.values(fixture.tokenizer.model.vocab),
    ...fixture.tokenizer.added_tokens.map((t) => t.id),
  ];
  await writeTinyLlama(folder, Math.max(...ids) + 1);
  const gguf = `${dir}/${key}.gguf`;
  await convertModel(folder, gguf, preTokenizer === undefined ? {} : { preTokenizer });
  const name = preTokenizer ?? fixture.name;
  const kv = (await readGgufFile(gguf)).kv;
  assert.equal(kv.get("tokenizer.ggml.pre")?.value, name, `${key}: tokenizer.ggml.pre`);
  return { key, name, path: gguf, fixture };
}

/** llama.cpp's ids of every job's texts against transformers', but for the known differences. */
async function judge(jobs: Job[]): Promise<void> {
  const results = await llamaTokenize(jobs.map(({ path, fixture }) => ({
    path,
    texts: fixture.texts,
  })));
  const report: string[] = [];
  for (const [i, { key, name, fixture }] of jobs.entries()) {
    const { same, differences } = tokenizationDifferences(
      `${key} as ${name}`,
      fixture.texts,
      results[i]!,
      fixture.ids,
      KNOWN_DIFFERENCES[key.split("-as-")[0]!],
    );
    report.push(...differences);
    console.log(`${key} (${name}): ${same}/${fixture.texts.length} as transformers`);
  }
  assert.deepEqual(report, [], report.join("\n"));
}

Deno.test("pre-tokenizer table: each fixture is recognised as its entry, and llama.cpp tokenizes aprkit's GGUF of it as transformers does", async () => {
  const all = await fixtures();
  assert.ok(all.length >= 26, `${all.length} fixtures`);
  await withTempDir(async (dir) => {
    const jobs: Job[] = [];
    for (const [key, fixture] of all) {
      assert.equal(recognisePreTokenizer(fixture.tokenizer)?.name, fixture.name, key);
      jobs.push(await ggufOf(dir, key, fixture));
      // The converter's name for the published file (Granite 4.0's dbrx), where another.
      const converter = fixture.published?.converter_name;
      if (typeof converter === "string" && converter !== fixture.name) {
        jobs.push(await ggufOf(dir, `${key}-as-${converter}`, fixture, converter));
      }
    }
    assert.ok(jobs.some((j) => j.key === "smaug-bpe-granite-4.0-as-dbrx"));
    await judge(jobs);
  });
});

Deno.test("pre-tokenizer table: the names families write for their published tokenizers tokenize as the entry they stand for", async () => {
  // A family's name (Granite 4.0's dbrx, Nemotron-H's pixtral…) replaces the
  // entry's only where llama.cpp runs both alike: judged here on the entry's
  // fixture, written under the family's name.
  const names = new Set(
    [...FAMILIES.values()].flatMap((f) => f.preTokenizer === undefined ? [] : [f.preTokenizer]),
  );
  assert.ok(names.has("dbrx") && names.has("pixtral"), [...names].join(", "));
  const all = new Map(await fixtures());
  await withTempDir(async (dir) => {
    const jobs: Job[] = [];
    for (const name of [...names].sort()) {
      const entry = PRE_TOKENIZERS.find((e) => e.name === name || (e.alike ?? []).includes(name));
      assert.ok(entry !== undefined, `${name}: no entry stands for it`);
      if (entry.name === name) continue; // judged under its own name above
      const fixture = all.get(entry.name);
      assert.ok(fixture !== undefined, `${name}: no fixture for ${entry.name}`);
      jobs.push(await ggufOf(dir, `${entry.name}-as-${name}`, fixture, name));
    }
    await judge(jobs);
  });
});

Deno.test("pre-tokenizer table: published tokenizer.json files are recognised as the converter names them", async () => {
  const list = JSON.parse(
    await Deno.readTextFile(new URL("../recognition_packages.json", FIXTURES)),
  ) as Record<string, PackageSpec & { pre: string }>;
  for (const [key, pkg] of Object.entries(list)) {
    // Its own folder name: packages.json's folders keep two files, these one.
    const dir = await packageFiles(`recognition-${key}`, pkg);
    const tokenizer = JSON.parse(await Deno.readTextFile(`${dir}/tokenizer.json`));
    assert.equal(recognisePreTokenizer(tokenizer)?.name, pkg.pre, `${key} (${pkg.model})`);
  }
});
