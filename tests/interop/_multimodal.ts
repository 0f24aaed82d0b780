/**
 * What the image-text-to-text tests (`multimodal_test.ts`,
 * `multimodal_qwen3vl_test.ts`, `multimodal_gemma3n_test.ts`) share: their
 * fixture folders (`tests/testdata/multimodal/`, each with `hf/`,
 * `reference/` and `llama.cpp/`), the conversions they judge, and the checks
 * each of them makes of a converted checkpoint the same way.
 */

import assert from "node:assert/strict";
import { convertModel } from "../../src/pipeline/convert_model.ts";
import { openModel } from "../../src/pipeline/open_model.ts";
import { runApr } from "../cli/_run_apr.ts";
import type { LogProbsResult } from "./_llama_judge.ts";
import {
  compareWithReference,
  fail,
  type FamilyReference,
  ggufDescription,
  type GgufManifest,
  manifestDifferences,
} from "./_families.ts";

/** A JSON file of a fixture folder, by its path inside it. */
export async function fixtureJson<T>(folder: string, path: string): Promise<T> {
  return JSON.parse(await Deno.readTextFile(`${folder}/${path}`));
}

/** The tensor names of the checkpoint `hf/<name>` of a fixture folder, as its index lists them. */
export function sourceNames(folder: string, name: string): string[] {
  return Object.keys(
    JSON.parse(Deno.readTextFileSync(`${folder}/hf/${name}/model.safetensors.index.json`))
      .weight_map,
  );
}

/** A model's tensor names and metadata, as aprkit reads them. */
export async function modelContents(
  path: string,
): Promise<{ names: string[]; metadata: Record<string, unknown> }> {
  const model = await openModel(path);
  try {
    return {
      names: [...model.names()],
      metadata: model.header.metadata as Record<string, unknown>,
    };
  } finally {
    await model.close();
  }
}

/** One checkpoint converted the ways the tests judge it. */
export interface ConvertedFixture {
  /** HF → GGUF. */
  gguf: string;
  /** HF → APR → GGUF. */
  viaApr: string;
  /** The notes of HF → GGUF. */
  notes: string[];
}

/** Each checkpoint `hf/<name>` of a fixture folder converted to GGUF directly and via APR, in `dir`. */
export async function convertFixtures(
  folder: string,
  names: readonly string[],
  dir: string,
): Promise<Map<string, ConvertedFixture>> {
  const files = new Map<string, ConvertedFixture>();
  for (const name of names) {
    const notes: string[] = [];
    const gguf = `${dir}/${name}.gguf`;
    const apr = `${dir}/${name}.apr`;
    const viaApr = `${dir}/${name}-via-apr.gguf`;
    await convertModel(`${folder}/hf/${name}`, gguf, { onNote: (m) => notes.push(m) });
    await convertModel(`${folder}/hf/${name}`, apr);
    await convertModel(apr, viaApr);
    files.set(name, { gguf, viaApr, notes });
  }
  return files;
}

/** Fail unless llama.cpp loaded the file and computed what transformers computes. */
export function assertAsTransformers(
  what: string,
  run: LogProbsResult,
  ref: FamilyReference,
): void {
  assert.equal(run.error, undefined, `llama.cpp cannot load aprkit's GGUF: ${run.error}`);
  fail(what, compareWithReference(ref, run.logprobs));
}

/**
 * Fail unless the GGUF made directly and the one made via APR equal the
 * converter's file `theirs` (but for the differences `accepted` allows).
 */
export async function assertAsConverter(
  what: string,
  files: ConvertedFixture,
  theirs: GgufManifest,
  accepted: (problem: string) => boolean = () => false,
): Promise<void> {
  // An APR keeps its own tensor order (as families_gguf_test.ts notes): via APR,
  // the tensors and keys must be equal, their order may differ.
  const differences = async (path: string, tensorOrder: boolean) =>
    manifestDifferences(await ggufDescription(path), theirs, { tensorOrder }).filter((p) =>
      !accepted(p)
    );
  fail(what, await differences(files.gguf, true));
  fail(`${what} via APR`, await differences(files.viaApr, false));
}

/** Names in an APR that are not language model names realizar looks up. */
export function notRealizarNames(names: readonly string[]): string[] {
  return names.filter((n) => !/^(model\.(embed_tokens|norm|layers\.\d+)\.|lm_head\.)/.test(n))
    .map((n) => `${n}: not a language model name realizar looks up`);
}

/** Where an APR's metadata differs from the values expected of it. */
export function metadataDifferences(
  metadata: Record<string, unknown>,
  expected: Record<string, unknown>,
): string[] {
  return Object.entries(expected).filter(([key, value]) => metadata[key] !== value)
    .map(([key, value]) => `${key} ${metadata[key]}, expected ${value}`);
}

/**
 * Import the checkpoint `hf/<name>` of a fixture folder to `apr` with
 * `--keep-vision` and fail unless the APR holds the source's tensors that
 * `tower` matches, under their own names, and the language model renamed.
 *
 * @returns The tower's tensor names (sorted) and every name in the APR.
 */
export async function assertKeepsVision(
  folder: string,
  name: string,
  apr: string,
  tower: RegExp,
): Promise<{ tower: string[]; names: string[] }> {
  const run = await runApr(["import", `${folder}/hf/${name}`, "-o", apr, "--keep-vision"]);
  assert.equal(run.code, 0, run.stderr);
  assert.doesNotMatch(run.stdout, /left out/);
  const { names } = await modelContents(apr);
  const source = sourceNames(folder, name).filter((n) => tower.test(n)).sort();
  assert.deepEqual(names.filter((n) => tower.test(n)).sort(), source);
  assert.ok(!names.some((n) => n.includes("language_model")), "language model renamed");
  return { tower: source, names };
}

/**
 * Convert `source` to `gguf` with `--mmproj` and fail unless the vision GGUF
 * equals `theirs` (tensors, keys and key order), the text GGUF still equals
 * `text` (but for the differences `accepted` allows), and one note names the
 * vision GGUF. `added`: the F32 tensors aprkit writes beyond the converter's
 * (Mistral 3's `[IMG_BREAK]` row), by name, with their values.
 */
export async function assertMmprojAsConverter(
  source: string,
  gguf: string,
  theirs: GgufManifest,
  text: GgufManifest,
  accepted: (problem: string) => boolean = () => false,
  added: Readonly<Record<string, Float32Array>> = {},
): Promise<void> {
  const mmproj = gguf.replace(/\.gguf$/, "-mmproj.gguf");
  const notes: string[] = [];
  const result = await convertModel(source, gguf, { mmproj, onNote: (m) => notes.push(m) });
  assert.equal(result.mmproj?.output, mmproj);
  const extra = Object.keys(added);
  assert.equal(result.mmproj?.tensors, theirs.tensors.length + extra.length);
  const mine = await ggufDescription(mmproj);
  for (const name of extra) {
    const t = mine.file.tensors.get(name);
    assert.ok(t !== undefined, `${source} mmproj: no ${name}`);
    assert.equal(t.dtype, "F32", name);
    assert.deepEqual([...t.shape], [added[name]!.length], name);
    assert.deepEqual(
      new Float32Array(t.bytes.slice().buffer),
      added[name],
      `${source} mmproj: ${name}'s values`,
    );
  }
  const asTheirs = { ...mine, tensors: mine.tensors.filter((t) => !extra.includes(t.name)) };
  fail(`${source} mmproj`, manifestDifferences(asTheirs, theirs));
  // Key order too: the converter's.
  assert.deepEqual(mine.kv.map((e) => e.key), theirs.kv.map((e) => e.key));
  // The text GGUF is unchanged by --mmproj.
  fail(
    `${source} text`,
    manifestDifferences(await ggufDescription(gguf), text).filter((p) => !accepted(p)),
  );
  assert.equal(
    notes.filter((n) => n.includes(`went to the vision GGUF "${mmproj}"`)).length,
    1,
    notes.join("\n"),
  );
}

/**
 * Row `row` of the F32 or BF16 tensor `name` of the checkpoint at `folder`,
 * read from its safetensors file (as its index places it) by hand, as F32:
 * the values a tensor aprkit takes from it must have.
 */
export async function checkpointRow(
  folder: string,
  name: string,
  row: number,
): Promise<Float32Array> {
  const index = await fixtureJson<{ weight_map: Record<string, string> }>(
    folder,
    "model.safetensors.index.json",
  );
  const bytes = await Deno.readFile(`${folder}/${index.weight_map[name]}`);
  const length = Number(new DataView(bytes.buffer).getBigUint64(0, true));
  const header = JSON.parse(new TextDecoder().decode(bytes.subarray(8, 8 + length)));
  const t = header[name] as { dtype: string; shape: number[]; data_offsets: [number, number] };
  assert.ok(t.dtype === "F32" || t.dtype === "BF16", `${folder}: ${name} is ${t.dtype}`);
  const size = t.dtype === "F32" ? 4 : 2;
  const width = t.shape[1]!;
  const start = 8 + length + t.data_offsets[0] + row * width * size;
  const data = bytes.slice(start, start + width * size);
  if (size === 4) return new Float32Array(data.buffer);
  // A BF16 value is the top half of the F32 one.
  const halves = new Uint16Array(data.buffer);
  return new Float32Array(Uint32Array.from(halves, (h) => h << 16).buffer);
}

/** A copy of the checkpoint folder `from` at `to`, with its config.json edited when `edit` is given. */
export async function copyCheckpoint(
  from: string,
  to: string,
  edit?: (config: Record<string, unknown>) => void,
): Promise<string> {
  await Deno.mkdir(to);
  for (const entry of Deno.readDirSync(from)) {
    await Deno.copyFile(`${from}/${entry.name}`, `${to}/${entry.name}`);
  }
  if (edit === undefined) return to;
  const config = JSON.parse(await Deno.readTextFile(`${to}/config.json`));
  edit(config);
  await Deno.writeTextFile(`${to}/config.json`, JSON.stringify(config));
  return to;
}

/** Run `apr` and fail unless it exits 2 with one line on stderr that `message` matches. */
export async function assertRefused(args: string[], message: RegExp): Promise<void> {
  const run = await runApr(args);
  assert.equal(run.code, 2, run.stderr);
  assert.equal(run.stderr.trim().split("\n").length, 1, run.stderr);
  assert.match(run.stderr, message);
}
