/**
 * The family fixtures of issue 18 (`tests/testdata/families/`, made by its
 * `make_families.py` and `make_llamacpp.py`): where each file is, what the
 * recorded references say, and how a run is compared with them.
 */

import { createHash } from "node:crypto";
import { testdata } from "../cli/_run_apr.ts";
import { type GgufFile, readGgufFile } from "./_files.ts";

/** Largest difference in log-probability accepted against transformers. */
export const LOGPROB_TOLERANCE = 0.03;

/** transformers' run of one family's checkpoint (`reference/<family>.json`). */
export interface FamilyReference {
  /** The fixture's name, e.g. `"llama3-rope"`. */
  family: string;
  /** The Hugging Face class, e.g. `"LlamaForCausalLM"`. */
  architecture: string;
  /** The 40 prompt token ids. */
  prompt: number[];
  /** The prompt and all greedy tokens but the last: what a judge evaluates. */
  sequence: number[];
  /** Positions in `sequence` whose next-token distribution is recorded. */
  positions: number[];
  /** transformers' greedy tokens, one per step. */
  greedy: number[];
  /** Per step: the greedy token and the likeliest tokens as `[id, log-prob]`. */
  steps: { greedy: number; top: [number, number][] }[];
}

/** One KV pair of a GGUF file as gguf-py's reader gives it. */
export interface ManifestKv {
  key: string;
  type: number;
  array_types?: number[];
  value: unknown;
}

/** A GGUF file llama.cpp's tools wrote, described (`llama.cpp/<family>-<type>.json`). */
export interface GgufManifest {
  /** Which tool and commit wrote it. */
  made_by: string;
  /** Every KV pair, in file order. */
  kv: ManifestKv[];
  /** Every tensor, in file order: ggml type name, `ne`, sha256 of its bytes. */
  tensors: { name: string; type: string; ne: number[]; sha256: string }[];
}

/** The folder of the fixtures. */
export const FAMILIES_DIR = testdata("families");

/** The Hugging Face checkpoint of a family. */
export function familyDir(family: string): string {
  return `${FAMILIES_DIR}/hf/${family}`;
}

/** Every family that has a reference run, sorted. */
export function familyNames(): string[] {
  return [...Deno.readDirSync(`${FAMILIES_DIR}/reference`)]
    .map((e) => e.name.replace(/\.json$/, ""))
    .sort();
}

/** transformers' reference run of a family. */
export async function familyReference(family: string): Promise<FamilyReference> {
  return JSON.parse(await Deno.readTextFile(`${FAMILIES_DIR}/reference/${family}.json`));
}

/** The manifest of llama.cpp's file of a family (`"f32"`, `"Q4_K_M"`), or undefined when its converter refused it. */
export async function llamaCppManifest(
  family: string,
  type: string,
): Promise<GgufManifest | undefined> {
  try {
    return JSON.parse(await Deno.readTextFile(`${FAMILIES_DIR}/llama.cpp/${family}-${type}.json`));
  } catch (error) {
    if (error instanceof Deno.errors.NotFound) return undefined;
    throw error;
  }
}

/**
 * How a run's next-token log-probabilities differ from transformers': the
 * greedy token at every step, and every recorded top token's log-probability
 * within {@linkcode LOGPROB_TOLERANCE}.
 *
 * @returns One line per difference; empty when the run matches.
 */
export function compareWithReference(ref: FamilyReference, logprobs: number[][]): string[] {
  const problems: string[] = [];
  let worst = 0;
  ref.steps.forEach((step, i) => {
    const row = logprobs[i];
    if (row === undefined) {
      problems.push(`step ${i}: no log-probabilities`);
      return;
    }
    const argmax = row.reduce((best, v, t) => (v > row[best]! ? t : best), 0);
    if (argmax !== step.greedy) {
      problems.push(`step ${i}: greedy token ${argmax}, transformers ${step.greedy}`);
    }
    for (const [token, expected] of step.top) {
      const got = row[token] ?? -Infinity;
      const diff = Math.abs(got - expected);
      worst = Math.max(worst, diff);
      if (!(diff <= LOGPROB_TOLERANCE)) {
        problems.push(
          `step ${i}, token ${token}: log-prob ${got.toFixed(4)}, transformers ${expected}`,
        );
      }
    }
  });
  if (problems.length > 0) problems.unshift(`largest log-prob difference ${worst.toFixed(4)}`);
  return problems;
}

/** A GGUF file described as a manifest is (values normalised for comparison). */
export async function ggufDescription(path: string): Promise<
  { file: GgufFile; kv: ManifestKv[]; tensors: GgufManifest["tensors"] }
> {
  const file = await readGgufFile(path);
  const kv = [...file.kv].map(([key, e]) => ({
    key,
    type: e.type as number,
    ...(e.arrayTypes !== undefined ? { array_types: [...e.arrayTypes] as number[] } : {}),
    value: plainValue(e.value),
  }));
  const tensors = [...file.tensors].map(([name, t]) => ({
    name,
    type: t.dtype,
    ne: [...t.shape].reverse(),
    sha256: createHash("sha256").update(t.bytes).digest("hex"),
  }));
  return { file, kv, tensors };
}

function plainValue(v: unknown): unknown {
  if (typeof v === "bigint") return Number(v);
  if (Array.isArray(v)) return v.map(plainValue);
  return v;
}
