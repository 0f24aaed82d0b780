/**
 * Issue 35 item 1: the whole GGUF, as llama.cpp's converter writes it, model
 * card and name included. Each case of tests/testdata/model_cards/cases.json
 * is a family's tiny checkpoint in a folder with a real-looking name
 * (`Qwen2.5-7B-Instruct`, `Mixtral-8x7B-Instruct-v0.1`…) and a `README.md`
 * (licence, base models as ids, URLs and mappings, datasets, tags, languages,
 * odd YAML); make_model_cards.py recorded what `convert_hf_to_gguf.py` wrote
 * for it. aprkit's GGUF must have the same KV pairs in the same order and be
 * the same file (sha256); HF → APR → GGUF must have the same pairs (APR
 * orders tensors its own way), and the APR file must carry the card.
 */

import assert from "node:assert/strict";
import { createHash } from "node:crypto";
import { convertModel } from "../../src/pipeline/convert_model.ts";
import { openModel } from "../../src/pipeline/open_model.ts";
import { withTempDir } from "../cli/_run_apr.ts";
import { fileURLToPath as fromFileUrl } from "node:url";
import { familyDir, ggufDescription, type ManifestKv } from "./_families.ts";

const DIR = new URL("../testdata/model_cards/", import.meta.url);

interface Case {
  id: string;
  family: string;
  /** A multimodal fixture (tests/testdata/multimodal/hf/) instead of the family's. */
  multimodal?: string;
  /** Also the vision GGUF (`--mmproj`). */
  mmproj?: boolean;
  folder: string;
  readme: string | null;
  config?: Record<string, unknown>;
}

const { cases } = JSON.parse(await Deno.readTextFile(new URL("cases.json", DIR))) as {
  cases: Case[];
};

async function manifest(id: string): Promise<{ file_sha256: string; kv: ManifestKv[] }> {
  return JSON.parse(await Deno.readTextFile(new URL(`${id}.json`, DIR)));
}

/** The case's folder, as make_model_cards.py builds it. */
async function caseFolder(root: string, c: Case): Promise<string> {
  const folder = `${root}/${c.id}/${c.folder}`;
  await Deno.mkdir(folder, { recursive: true });
  const from = c.multimodal !== undefined
    ? fromFileUrl(new URL(`../testdata/multimodal/hf/${c.multimodal}`, import.meta.url))
    : familyDir(c.family);
  for await (const entry of Deno.readDir(from)) {
    await Deno.copyFile(`${from}/${entry.name}`, `${folder}/${entry.name}`);
  }
  if (c.readme !== null) await Deno.writeTextFile(`${folder}/README.md`, c.readme);
  if (c.config !== undefined) {
    const config = JSON.parse(await Deno.readTextFile(`${folder}/config.json`));
    await Deno.writeTextFile(
      `${folder}/config.json`,
      JSON.stringify({ ...config, ...c.config }, null, 2),
    );
  }
  return folder;
}

async function sha256(path: string): Promise<string> {
  return createHash("sha256").update(await Deno.readFile(path)).digest("hex");
}

/** Each KV pair that differs, by position: key, type and value. */
function kvDifferences(mine: ManifestKv[], theirs: ManifestKv[]): string[] {
  const out: string[] = [];
  const show = (e: ManifestKv | undefined) =>
    e === undefined
      ? "nothing"
      : JSON.stringify({ key: e.key, type: e.type, array_types: e.array_types, value: e.value })
        .slice(0, 200);
  for (let i = 0; i < Math.max(mine.length, theirs.length); i++) {
    const a = show(mine[i]);
    const b = show(theirs[i]);
    if (a !== b) out.push(`pair ${i}: aprkit ${a}\n    llama.cpp ${b}`);
  }
  return out;
}

Deno.test("model cards: HF → GGUF has the converter's KV pairs in its order and is its file, sha256 for sha256 (its pairs through APR too)", async (t) => {
  assert.ok(cases.length >= 10);
  await withTempDir(async (dir) => {
    for (const c of cases) {
      await t.step(`${c.id} (${c.folder}, ${c.family})`, async () => {
        const want = await manifest(c.id);
        const folder = await caseFolder(dir, c);
        const out = `${dir}/${c.id}.gguf`;
        const mmproj = `${dir}/${c.id}-mmproj.gguf`;
        await convertModel(folder, out, c.mmproj === true ? { mmproj } : {});
        const mine = (await ggufDescription(out)).kv;
        const differences = kvDifferences(mine, want.kv);
        assert.deepEqual(differences, [], differences.join("\n"));
        assert.equal(await sha256(out), want.file_sha256, "the whole file");
        if (c.mmproj === true) {
          // The vision GGUF carries the same general.* keys, counted from its own tensors.
          const vision = await manifest(`${c.id}-mmproj`);
          const visionDifferences = kvDifferences((await ggufDescription(mmproj)).kv, vision.kv);
          assert.deepEqual(visionDifferences, [], `mmproj:\n${visionDifferences.join("\n")}`);
          assert.equal(await sha256(mmproj), vision.file_sha256, "the whole vision GGUF");
        }
        const apr = `${dir}/${c.id}.apr`;
        await convertModel(folder, apr);
        await convertModel(apr, `${dir}/${c.id}-via-apr.gguf`);
        // APR keeps tensors in its own order (names sorted), so only the pairs are compared.
        const viaApr = (await ggufDescription(`${dir}/${c.id}-via-apr.gguf`)).kv;
        const aprDifferences = kvDifferences(viaApr, want.kv);
        assert.deepEqual(aprDifferences, [], `through APR:\n${aprDifferences.join("\n")}`);
      });
    }
  });
});

Deno.test("model cards: the APR file carries the card, and the licence and name derived from it", async () => {
  await withTempDir(async (dir) => {
    const c = cases.find((x) => x.id === "odd-yaml")!;
    const folder = await caseFolder(dir, c);
    await convertModel(folder, `${dir}/m.apr`);
    const model = await openModel(`${dir}/m.apr`);
    try {
      const m = model.header.metadata;
      assert.equal(m.name, "Tiny Merge");
      assert.equal(m.license, "mit,apache-2.0");
      assert.equal(m.author, "Some Merger");
      assert.equal(m.version, "v2");
      assert.equal(m.description, "A merge of models, described over three lines.");
      assert.equal(m["hf_folder_name"], "TinyMerge-slerp-v2");
      const card = m["model_card"] as Record<string, unknown>;
      assert.deepEqual(card["language"], ["en", "no", "nb"]);
      assert.deepEqual(card["license"], ["mit", "apache-2.0"]);
      // Only the keys the converter reads travel: not the model-index.
      assert.equal(card["model-index"], undefined);
    } finally {
      await model.close();
    }
  });
});
