/**
 * Issue 35 item 1: model cards read as llama.cpp's converter reads them.
 * The YAML reader must give PyYAML's `safe_load` values for every sample
 * (tests/testdata/model_cards/yaml.json, made by make_model_cards.py), and
 * refuse what it does not read with one line naming README.md.
 */

import assert from "node:assert/strict";
import { parseYamlSubset, YamlSubsetError } from "../../../src/formats/safetensors/yaml_subset.ts";
import {
  MAX_MODEL_CARD_BYTES,
  readModelCard,
} from "../../../src/formats/safetensors/model_card.ts";
import { ModelFormatError } from "../../../src/errors.ts";
import { readHfCompanionFiles } from "../../../src/formats/safetensors/hf_metadata.ts";
import { LocalModelFiles } from "../../../src/io/model_files.ts";
import { withTempDir } from "../../cli/_run_apr.ts";

const DIR = new URL("../../testdata/model_cards/", import.meta.url);
const samples = JSON.parse(await Deno.readTextFile(new URL("yaml.json", DIR))) as {
  yaml: string;
  value: unknown;
}[];

/** PyYAML's values as make_model_cards.py wrote them: NaN and infinities as Python's text. */
function asPython(value: unknown): unknown {
  if (typeof value === "number" && !Number.isFinite(value)) {
    return Number.isNaN(value) ? "nan" : value > 0 ? "inf" : "-inf";
  }
  if (Array.isArray(value)) return value.map(asPython);
  if (value !== null && typeof value === "object") {
    return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, asPython(v)]));
  }
  return value;
}

Deno.test("parseYamlSubset() reads every sample as PyYAML's safe_load does", () => {
  assert.ok(samples.length >= 8);
  samples.forEach(({ yaml, value }, i) => {
    assert.deepEqual(asPython(parseYamlSubset(yaml)), value, `sample ${i}:\n${yaml.slice(0, 200)}`);
  });
});

Deno.test("parseYamlSubset() refuses what it does not read, naming the line", () => {
  const refused: [string, RegExp][] = [
    ["a: &x 1\nb: *x\n", /line 1: anchors/],
    ["a: 1\nb: !!str 2\n", /line 2: anchors, aliases and tags/],
    ["? complex\n: key\n", /line 1: complex keys/],
    ["a: 1\n---\nb: 2\n", /line 2: more than one YAML document/],
    ['a: "unterminated\n', /line 1: unterminated/],
    ["a: [1, 2\n", /line 1: unterminated/],
    ["a:\n  b: 1\n c: 2\n", /line 3/],
    [`${"- ".repeat(100)}x\n`, /nested deeper than 64/],
  ];
  for (const [yaml, message] of refused) {
    assert.throws(() => parseYamlSubset(yaml), (e: unknown) => {
      assert.ok(e instanceof YamlSubsetError, yaml);
      assert.match(e.message, message, yaml);
      return true;
    });
  }
});

Deno.test("readModelCard() cuts the header as the converter does, and keeps only the keys it reads", () => {
  const card = readModelCard(
    "---\nlicense: mit\nlanguage:\n- no\nmodel-index:\n- name: x\n---\n# Title\n---\n",
    true,
    "README.md",
  );
  assert.deepEqual(card, { license: "mit", language: ["no"] });
  // No header: the first line must be exactly ---.
  assert.equal(readModelCard("# Model\n---\nlicense: mit\n---\n", true, "README.md"), undefined);
  assert.equal(readModelCard("--- \nlicense: mit\n---\n", true, "README.md"), undefined);
  assert.equal(readModelCard("\ufeff---\nlicense: mit\n---\n", true, "README.md"), undefined);
  assert.equal(readModelCard("---\n---\n", true, "README.md"), undefined);
  // Tabs are two spaces, as the converter makes them.
  assert.deepEqual(readModelCard("---\ntags:\n\t- a\n---\n", true, "README.md"), { tags: ["a"] });
  // A whole file whose header never closes is all header, as in the converter.
  assert.deepEqual(readModelCard("---\nlicense: mit\n", true, "README.md"), { license: "mit" });
});

Deno.test("readModelCard() refuses a malformed header in one line naming the file", () => {
  const cases: [string, boolean, RegExp][] = [
    ["---\nlicense: [mit\n---\n", true, /README\.md.*line 2: unterminated/],
    ["---\n- a\n- b\n---\n", true, /README\.md.*not a mapping/],
    ["---\nlicense: mit\n", false, /README\.md.*does not close/],
  ];
  for (const [text, complete, message] of cases) {
    assert.throws(() => readModelCard(text, complete, "README.md"), (e: unknown) => {
      assert.ok(e instanceof ModelFormatError);
      assert.match(e.message, message);
      assert.ok(!e.message.includes("\n"));
      return true;
    });
  }
});

Deno.test("a folder's README.md is read up to its bound only: a huge card with a small header is fine", async () => {
  await withTempDir(async (dir) => {
    const body = "x".repeat(80) + "\n";
    await Deno.writeTextFile(
      `${dir}/README.md`,
      `---\nlicense: apache-2.0\n---\n${body.repeat(Math.ceil(2 * MAX_MODEL_CARD_BYTES / 81))}`,
    );
    // Not UTF-8 past the bound: never read.
    const f = await Deno.open(`${dir}/README.md`, { append: true });
    await f.write(new Uint8Array([0xff, 0xfe]));
    f.close();
    const files = new LocalModelFiles(dir);
    const companions = await readHfCompanionFiles(files);
    assert.deepEqual(companions.modelCard, { license: "apache-2.0" });
    await Deno.writeTextFile(
      `${dir}/README.md`,
      `---\nlicense: ${"a".repeat(MAX_MODEL_CARD_BYTES)}`,
    );
    await assert.rejects(() => readHfCompanionFiles(files), /README\.md.*does not close/);
  });
});

Deno.test("parseYamlSubset() reads a header of the bound's size in linear time, even unterminated", () => {
  const lines = Math.floor(MAX_MODEL_CARD_BYTES / 4);
  for (const text of [`tags: [\n${"  a,\n".repeat(lines)}`, `tags:\n${"- a\n".repeat(lines)}`]) {
    const started = performance.now();
    try {
      parseYamlSubset(text);
    } catch (error) {
      assert.ok(error instanceof YamlSubsetError);
    }
    // ~0.5 s of CPU; a parse per line (quadratic) would take minutes.
    const ms = performance.now() - started;
    assert.ok(ms < 20_000, `${ms} ms for ${text.length} bytes`);
  }
});
