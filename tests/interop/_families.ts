/**
 * The family fixtures of issue 18 (`tests/testdata/families/`, made by its
 * `make_families.py` and `make_llamacpp.py`): where each file is, what the
 * recorded references say, and how a run is compared with them.
 */

import assert from "node:assert/strict";
import { createHash } from "node:crypto";
import { convertModel } from "../../src/pipeline/convert_model.ts";
import { runApr, testdata, withTempDir } from "../cli/_run_apr.ts";
import { type GgufFile, readGgufFile, sameBytes, type StoredTensor } from "./_files.ts";

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
  /** sha256 of the whole file (manifests made before issue 25 lack it). */
  file_sha256?: string;
  /** Every KV pair, in file order. */
  kv: ManifestKv[];
  /**
   * Every tensor, in file order: ggml type name, `ne`, sha256 of its bytes;
   * the F32 values (base64) of the tensors in {@linkcode ULP_TENSORS}.
   */
  tensors: { name: string; type: string; ne: number[]; sha256: string; f32_base64?: string }[];
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

/** The largest log-prob difference from transformers over its likeliest tokens at every step. */
export function worstDifference(ref: FamilyReference, logprobs: number[][]): number {
  let worst = 0;
  ref.steps.forEach((step, i) => {
    for (const [token, expected] of step.top) {
      worst = Math.max(worst, Math.abs((logprobs[i]?.[token] ?? -Infinity) - expected));
    }
  });
  return worst;
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
  {
    file: GgufFile;
    kv: ManifestKv[];
    tensors: (GgufManifest["tensors"][number] & { bytes?: Uint8Array })[];
  }
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
    ...ULP_TENSORS.some((s) => name.endsWith(s)) ? { bytes: t.bytes } : {},
  }));
  return { file, kv, tensors };
}

function plainValue(v: unknown): unknown {
  if (typeof v === "bigint") return Number(v);
  if (Array.isArray(v)) return v.map(plainValue);
  return v;
}

/**
 * Families with fixtures that aprkit does not write as GGUF yet, and what is
 * missing. Each must be refused cleanly (exit 2 naming it, no file) until it
 * is supported; then it leaves this list and is judged like the others.
 */
export const NOT_YET_GGUF: Readonly<Record<string, string>> = {};

/**
 * Fixtures judged by a test of their own instead of the shared loops, and
 * why: what the loops require of every family does not hold for them.
 */
export const OWN_TESTS: Readonly<Record<string, string>> = {
  "gpt-oss-mxfp4": "gpt_oss_test.ts: its MXFP4 experts stay MXFP4 in GGUF (its presets are " +
    "llama-quantize's with them kept MXFP4) and APR holds them dequantized",
  "deepseek4": "deepseek4_test.ts: llama.cpp runs its MXFP4 experts on Q8_0 activations (judged " +
    "with them decoded to F32), its presets are llama-quantize's with the experts kept MXFP4",
  "deepseek4-fp8": "deepseek4_test.ts: as deepseek4, and its FP8 projections are Q8_0 under " +
    "every outtype (K-quant presets refused as llama-quantize refuses the converter's file)",
};

/**
 * Families whose GGUF aprkit refuses to read back into Hugging Face's layout
 * (gpt_oss_test.ts checks the refusal).
 */
export const NOT_READ_BACK: Readonly<Record<string, string>> = {
  "gpt-oss": "transposed, split and MXFP4 experts",
  "qwen3-next": "ssm_a is −exp(A_log), in_proj_qkvz split into attn_qkv and attn_gate",
  "mamba": "A_log is held as ssm_a = −exp(A_log), which log gives back only to within rounding",
  "mamba2": "as mamba",
  "falcon-mamba": "as mamba",
  "qwen35": "ssm_a is −exp(A_log), value heads regrouped",
  "qwen35-moe": "as qwen35",
  "qwen35-mtp": "as qwen35",
  "qwen35-moe-mtp": "as qwen35",
  "granite-hybrid": "as mamba (its Mamba-2 layers), experts stacked",
  "bamba": "as mamba (its Mamba-2 layers)",
  "jamba": "as mamba (its Mamba layers), experts stacked",
  "nemotron-h": "as mamba (its Mamba-2 layers)",
  "nemotron-h-moe": "as mamba (its Mamba-2 layers), experts stacked",
  "falcon-h1": "as mamba (its Mamba-2 layers), µP multipliers folded into the weights",
  "minicpm3": "no RoPE base, value length or muP scales in the file to rebuild config.json from",
  "kimi-linear": "ssm_a is −exp(A_log), MLA's kv_b_proj split per head, experts stacked",
  "qwen4exp": "as qwen35, the n-gram table's shards concatenated, its hash constants as keys",
  "qwen3-next-mtp": "as qwen3-next",
  "hy-v4": "as deepseek2, the experts' gate_up_proj split into gate and up stacks",
  "nemotron-h-latent": "as nemotron-h-moe",
  "nemotron-h-latent-mtp": "as nemotron-h-moe",
};

/**
 * GGUF tensors (name suffixes) whose values the converter computes with
 * torch's float32 `exp` (Mamba's `ssm_a` = −exp(A_log); Gemma 4's audio
 * `per_dim_scale` = softplus, through `exp` and `log1p`): its last bit
 * depends on the machine's math library (MKL, SLEEF) and differs from the
 * correctly rounded value, which aprkit writes, for about 1% of values. The
 * manifests keep these tensors' values; they must agree within one unit in
 * the last place.
 */
export const ULP_TENSORS: readonly string[] = [
  ".ssm_a",
  ".per_dim_scale.weight",
  ".per_dim_k_scale.weight",
];

/** Whether two F32 payloads agree within one unit in the last place, value by value. */
export function withinOneUlp(a: Uint8Array, b: Uint8Array): boolean {
  if (a.length !== b.length || a.length % 4 !== 0) return false;
  const x = new Int32Array(a.slice().buffer);
  const y = new Int32Array(b.slice().buffer);
  // Same-signed floats are ordered as their bit patterns.
  return x.every((v, i) => (v < 0) === (y[i]! < 0) && Math.abs(v - y[i]!) <= 1);
}

/**
 * Fixture folders (`hf/`) whose tensors are not a renaming of their GGUF's,
 * or that aprkit refuses: unknown-arch is refused; gpt-oss's experts and
 * sinks and DeepSeek's attn_k_b / attn_v_b are made, not renamed, and their
 * GGUF is not read back (gpt_oss_test.ts, families_gguf_test.ts).
 */
export const NOT_RENAMED_FIXTURES: ReadonlySet<string> = new Set([
  "unknown-arch",
  "deepseek2",
  "deepseek3",
  // deepseek3's checkpoint with Kimi-K2's tokenizer files.
  "kimi-k2",
  "glm4moe",
  "glm4moe-mtp",
  "solar-open",
  "gpt-oss",
  "gpt-oss-mxfp4",
  "gpt-oss-bf16",
  "qwen3-next",
  // A_log (−exp), D and the convolution are made (reshaped), not renamed.
  "mamba",
  "mamba2",
  "falcon-mamba",
  "qwen35",
  "qwen35-moe",
  "qwen35-bf16",
  "qwen35-mtp",
  "qwen35-moe-mtp",
  "glm4moe-lite",
  "granitemoe",
  "granitemoe-shared",
  "granite-hybrid",
  "bamba",
  // The short convolution is squeezed (made, not renamed).
  "lfm2",
  "jamba",
  "deepseek32",
  "glm-dsa",
  "granitemoe-swa",
  "youtu",
  // The flat experts are made (w2 transposed per expert), not renamed.
  "dbrx",
  // The router bias is made (a name without a suffix), experts stacked.
  "hy-v3",
  // The router's scales are made (`ffn_gate_inp.scale`, `ffn_down_exps.scale`), and the
  // per-layer embeddings are whole-model tensors of Gemma 4's own.
  "gemma4",
  "gemma4-moe",
  // Gemma4ForConditionalGeneration: its towers have no GGUF name (gemma4_conditional_test.ts).
  "gemma4-cg",
  "nemotron-h",
  "nemotron-h-moe",
  "falcon-h1",
  "lfm2-moe",
  // The MTP layers are made (renumbered after the trunk), experts stacked.
  "mimo2",
  "mimo2-mtp",
  // KDA's A_log (−exp) and convolutions and MLA's attn_k_b / attn_v_b are made.
  "kimi-linear",
  // MLA's kv_b_proj split, as deepseek2's; the stacked experts' gate_up_proj split.
  "hy-v4",
  // As qwen35; index_qk_proj split, the n-gram table concatenated from its shards.
  "qwen4exp",
  // The stacks' tensors are placed in blocks and split (made, not renamed).
  "hrm-text",
  // Qwen4ExpForConditionalGeneration: its tower has no GGUF name (qwen4exp_conditional_test.ts).
  "qwen4exp-cg",
  "gemma4-dense",
  // Gemma4UnifiedForConditionalGeneration: as gemma4-cg (gemma4_conditional_test.ts).
  "gemma4-unified",
  // Gemma 4's drafters: no reference run (gemma4_assistant_test.ts).
  "gemma4-assistant",
  "gemma4-unified-assistant",
  // qwen3-next's with an MTP layer config.json does not count (the converter counts its tensors).
  "qwen3-next-mtp",
  // Bare hyper-connection parameters, sinks, `ape` and the hash table, MXFP4 experts' scales.
  "deepseek4",
  // Gemma4ForConditionalGeneration with an audio tower (F32, BF16): as gemma4-cg.
  "gemma4-audio",
  "gemma4-audio-bf16",
  // deepseek4's with FP8 projections: their `.scale` too (deepseek4_test.ts).
  "deepseek4-fp8",
  // mtp.* renamed as the blocks after the trunk (read under another name).
  "exaone-moe-mtp",
  // As hy-v3; the MTP block's final_layernorm read as shared_head.norm.
  "hy-v3-mtp",
  // As nemotron-h-moe; the MTP layer's mtp.layers.{0,1}.* folded into the block after the trunk.
  "nemotron-h-latent",
  "nemotron-h-latent-mtp",
  // As exaone-moe-mtp; mtp.fc and the MTP norms copied into both MTP layers.
  "exaone-moe-mtp2",
]);

/** The families aprkit converts: every fixture but the ones it refuses so far. */
export function convertedFamilies(): string[] {
  return familyNames().filter((f) => !(f in NOT_YET_GGUF) && !(f in OWN_TESTS));
}

/**
 * The converted families a run judges: all of them, unless `APR_FAMILIES=a,b`
 * narrows a local run to those fixtures (the suite sets nothing).
 */
export function familiesToJudge(): string[] {
  const only = Deno.env.get("APR_FAMILIES")?.split(",").filter((f) => f !== "");
  return convertedFamilies().filter((f) => only === undefined || only.includes(f));
}

/**
 * The families a run imports into APR: the judged ones and those not written
 * as GGUF (their APR import keeps the Hugging Face tensors all the same).
 */
export function aprFamiliesToJudge(): string[] {
  const only = Deno.env.get("APR_FAMILIES")?.split(",").filter((f) => f !== "");
  const notGguf = Object.keys(NOT_YET_GGUF).filter((f) => only === undefined || only.includes(f));
  return [...familiesToJudge(), ...notGguf];
}

/** The families whose GGUF aprkit reads back into their Hugging Face layout. */
export function readBackFamilies(): string[] {
  return familiesToJudge().filter((f) => !(f in NOT_READ_BACK));
}

/** Families whose converter output is kept as a GGUF file, to check the harness itself. */
export const CONVERTER_GGUFS = ["gemma2", "llama3-rope", "phi4", "qwen2-moe"];

/** Keys whose values may legitimately differ from the converter's, and why. None so far. */
export const DIFFERING_KEYS: Readonly<Record<string, string>> = {};

/** The first line of an error's message. */
export function errorText(error: unknown): string {
  return error instanceof Error ? error.message.split("\n")[0]! : String(error);
}

/**
 * How a GGUF file differs from a manifest of llama.cpp's: one line per
 * difference. `tensorOrder: false` for a file exported from APR, whose index
 * is sorted by name (APR_V2.md): llama.cpp finds tensors by name, and such a
 * file cannot keep the order of the checkpoint it was imported from.
 */
export function manifestDifferences(
  mine: { kv: ManifestKv[]; tensors: (GgufManifest["tensors"][number] & { bytes?: Uint8Array })[] },
  theirs: GgufManifest,
  { tensorOrder = true } = {},
): string[] {
  const out: string[] = [];
  const mineTensors = new Map(mine.tensors.map((t) => [t.name, t]));
  const theirNames = new Set(theirs.tensors.map((t) => t.name));
  const missing = theirs.tensors.filter((t) => !mineTensors.has(t.name)).map((t) => t.name);
  const extra = mine.tensors.filter((t) => !theirNames.has(t.name)).map((t) => t.name);
  if (missing.length > 0) out.push(`tensors missing: ${missing.join(", ")}`);
  if (extra.length > 0) out.push(`tensors llama.cpp does not write: ${extra.join(", ")}`);
  for (const ref of theirs.tensors) {
    const got = mineTensors.get(ref.name);
    if (got === undefined) continue;
    if (got.type !== ref.type) out.push(`${ref.name}: type ${got.type}, llama.cpp ${ref.type}`);
    else if (JSON.stringify(got.ne) !== JSON.stringify(ref.ne)) {
      out.push(`${ref.name}: ne ${JSON.stringify(got.ne)}, llama.cpp ${JSON.stringify(ref.ne)}`);
    } else if (got.sha256 !== ref.sha256) {
      const close = got.bytes !== undefined && ref.f32_base64 !== undefined &&
        withinOneUlp(got.bytes, Uint8Array.from(atob(ref.f32_base64), (c) => c.charCodeAt(0)));
      if (!close) out.push(`${ref.name}: bytes differ`);
    }
  }
  const mineKv = new Map(mine.kv.map((e) => [e.key, e]));
  const theirKeys = new Set(theirs.kv.map((e) => e.key));
  for (const ref of theirs.kv) {
    if (ref.key in DIFFERING_KEYS) continue;
    const got = mineKv.get(ref.key);
    if (got === undefined) {
      out.push(`KV ${ref.key} missing (llama.cpp: ${short(ref.value)})`);
      continue;
    }
    const a = JSON.stringify({ type: got.type, array_types: got.array_types, value: got.value });
    const b = JSON.stringify({ type: ref.type, array_types: ref.array_types, value: ref.value });
    if (a !== b) out.push(`KV ${ref.key}: ${short(a)}, llama.cpp ${short(b)}`);
  }
  for (const e of mine.kv) {
    if (!theirKeys.has(e.key) && !(e.key in DIFFERING_KEYS)) {
      out.push(`KV ${e.key} = ${short(e.value)} is not in llama.cpp's file`);
    }
  }
  // The same order too, so that the files' headers can be byte-identical.
  const order = (names: string[], other: Set<string>) => names.filter((n) => other.has(n));
  const myTensorNames = new Set(mineTensors.keys());
  const a = order(mine.tensors.map((t) => t.name), theirNames);
  const b = order(theirs.tensors.map((t) => t.name), myTensorNames);
  if (tensorOrder && a.join() !== b.join()) {
    out.push(`tensor order differs: ${firstDifference(a, b)}`);
  }
  // general.quantization_version aside: llama.cpp's converter wrote it last at
  // c392e50 (tests/testdata/gguf/hf-convert/, which aprkit follows) and before
  // the tokenizer keys at the judge's commit.
  const myKeys = new Set(mineKv.keys());
  myKeys.delete("general.quantization_version");
  const c = order(mine.kv.map((e) => e.key), theirKeys).filter((k) => myKeys.has(k));
  const d = order(theirs.kv.map((e) => e.key), myKeys);
  if (c.join() !== d.join()) out.push(`KV order differs: ${firstDifference(c, d)}`);
  return out;
}

/**
 * The whole file against the manifest's `file_sha256`, when it has one: one
 * line when they differ, none otherwise.
 */
export async function fileDifference(path: string, theirs: GgufManifest): Promise<string[]> {
  // A file with values the converter's machine rounds its own way (ULP_TENSORS)
  // is compared tensor by tensor and key by key only.
  if (theirs.file_sha256 === undefined || theirs.tensors.some((t) => t.f32_base64)) return [];
  const mine = createHash("sha256").update(await Deno.readFile(path)).digest("hex");
  return mine === theirs.file_sha256
    ? []
    : [`file sha256 ${mine}, llama.cpp's ${theirs.file_sha256}`];
}

/** Where two orders of the same names first part: `#i: mine, llama.cpp's`. */
function firstDifference(mine: string[], theirs: string[]): string {
  const i = mine.findIndex((n, k) => n !== theirs[k]);
  return `#${i}: ${mine.slice(i, i + 3).join(", ")}…, llama.cpp ${
    theirs.slice(i, i + 3).join(", ")
  }…`;
}

function short(value: unknown): string {
  const s = typeof value === "string" ? value : JSON.stringify(value);
  return s.length > 120 ? `${s.slice(0, 117)}...` : s;
}

/** Fail listing the problems (the first 25), if there are any. */
export function fail(what: string, problems: string[]): void {
  if (problems.length > 0) assert.fail(`${what}:\n  ${problems.slice(0, 25).join("\n  ")}`);
}

/**
 * How one set of tensors differs from another it must equal (names, dtypes,
 * shapes, bytes; Gemma's norms as a GGUF round trip can give them back).
 */
export function tensorDifferences(
  family: string,
  got: Map<string, StoredTensor>,
  want: Map<string, StoredTensor>,
): string[] {
  const problems: string[] = [];
  const missing = [...want.keys()].filter((n) => !got.has(n));
  const extra = [...got.keys()].filter((n) => !want.has(n));
  if (missing.length > 0) problems.push(`missing: ${missing.join(", ")}`);
  if (extra.length > 0) problems.push(`not in the source: ${extra.join(", ")}`);
  for (const [name, w] of want) {
    const have = got.get(name);
    if (have === undefined) continue;
    if (have.dtype !== w.dtype) {
      problems.push(`${name}: ${have.dtype}, source ${w.dtype}`);
    } else if (JSON.stringify(have.shape) !== JSON.stringify(w.shape)) {
      problems.push(`${name}: shape ${have.shape}, source ${w.shape}`);
    } else if (!sameBytes(have.bytes, expectedBack(family, name, w.bytes))) {
      problems.push(`${name}: bytes differ`);
    }
  }
  return problems;
}

/**
 * The bytes a GGUF round trip must give back. Gemma's (1–3) and Nemotron's
 * checkpoints store norm weights as w − 1 and GGUF holds w (llama.cpp's
 * converter adds 1 in F32), so the way back can only be f32(f32(x + 1) − 1):
 * bit-exact to that, not to x. Gemma 4's norms multiply by w, unshifted.
 */
export function expectedBack(family: string, name: string, bytes: Uint8Array): Uint8Array {
  const shifted = (family.startsWith("gemma") && !family.startsWith("gemma4")) ||
    family === "nemotron";
  if (!shifted || !name.endsWith("norm.weight")) return bytes;
  const x = new Float32Array(bytes.slice().buffer);
  const out = x.map((v) => Math.fround(Math.fround(v + 1) - 1));
  return new Uint8Array(out.buffer);
}

/** The llama-quantize files of a model with MXFP4 experts, and what makes aprkit's. */
const KEPT_MXFP4_PRESETS = {
  // Experts kept MXFP4 (--tensor-type exps=mxfp4), said in a note.
  "Q4_K_M": { args: ["--quantize", "Q4_K_M"], madeBy: /exps=mxfp4/, kept: true, note: true },
  "Q5_K_S": { args: ["--quantize", "Q5_K_S"], madeBy: /exps=mxfp4/, kept: true, note: true },
  // Experts quantized again.
  "Q4_K_M-allow-requantize": {
    args: ["--quantize", "Q4_K_M", "--allow-requantize"],
    madeBy: /--allow-requantize/,
    kept: false,
    note: false,
  },
  // MXFP4 is the experts' type in this preset: nothing to keep or requantize.
  "MXFP4_MOE": {
    args: ["--quantize", "MXFP4_MOE"],
    madeBy: /llama-quantize of the f32 file, MXFP4_MOE/,
    kept: true,
    note: false,
  },
  // The files the single type q4_k's note and refusal name.
  "Q4_K_M-pure": {
    args: ["--quantize", "Q4_K_M", "--pure"],
    madeBy: /exps=mxfp4 --pure/,
    kept: true,
    note: true,
  },
  "Q4_K_M-pure-allow-requantize": {
    args: ["--quantize", "Q4_K_M", "--pure", "--allow-requantize"],
    madeBy: /--pure --allow-requantize/,
    kept: false,
    note: false,
  },
  // q8_0 is the converter's --outtype q8_0 (experts kept); with --allow-requantize llama-quantize's.
  "Q8_0-allow-requantize": {
    args: ["--quantize", "q8_0", "--allow-requantize"],
    madeBy: /--allow-requantize of the f32 file, Q8_0/,
    kept: false,
    note: false,
  },
} as const;

/**
 * A fixture whose GGUF holds MXFP4 experts (src/pipeline/kept_block_targets.ts):
 * `apr convert --quantize Q4_K_M` and `Q5_K_S` (and Q4_K_M `--pure`) keep
 * them, equal to `llama-quantize --tensor-type exps=mxfp4` of the
 * converter's f32 file sha256 for sha256, and say so in one note; with
 * `--allow-requantize` Q4_K_M (and Q4_K_M `--pure`, and q8_0) equals
 * `llama-quantize --allow-requantize` (the experts quantized again), and
 * MXFP4_MOE plain `llama-quantize`'s, neither with the note.
 *
 * @param t The test.
 * @param fixture The fixture (`hf/<fixture>/`, `llama.cpp/<fixture>-*.json`).
 * @param experts Its MXFP4 expert stacks.
 * @param presets The files to compare (default all).
 */
export async function equalsKeptMxfp4Presets(
  t: Deno.TestContext,
  fixture: string,
  experts: number,
  presets: readonly (keyof typeof KEPT_MXFP4_PRESETS)[] = [
    "Q4_K_M",
    "Q5_K_S",
    "Q4_K_M-allow-requantize",
    "MXFP4_MOE",
    "Q4_K_M-pure",
    "Q4_K_M-pure-allow-requantize",
    "Q8_0-allow-requantize",
  ],
): Promise<void> {
  await withTempDir(async (dir) => {
    for (const type of presets) {
      const { args, madeBy, kept, note } = KEPT_MXFP4_PRESETS[type];
      await t.step(type, async () => {
        const out = `${dir}/${type}.gguf`;
        const run = await runApr(["convert", familyDir(fixture), "-o", out, ...args]);
        assert.equal(run.code, 0, run.stderr);
        const theirs = await llamaCppManifest(fixture, type);
        assert.ok(theirs?.file_sha256 !== undefined, `no llama-quantize ${type} manifest`);
        assert.match(theirs.made_by, madeBy);
        const mine = await ggufDescription(out);
        assert.equal(mine.tensors.filter((x) => x.type === "MXFP4").length, kept ? experts : 0);
        fail(`${fixture} ${type}`, manifestDifferences(mine, theirs));
        fail(`${fixture} ${type}`, await fileDifference(out, theirs));
        const notes = run.stdout.split("\n").filter((l) =>
          l.startsWith("note: the routed experts")
        );
        assert.equal(notes.length, note ? 1 : 0, run.stdout);
        if (note) assert.match(notes[0]!, /--tensor-type exps=mxfp4/);
      });
    }
  });
}

/**
 * A fixture with MXFP4 experts under the single type q4_k (aprkit's own mix,
 * which takes no llama-quantize flag): the experts stay as the converter's
 * f32 file holds them, byte for byte, in one note naming `--quantize q4_k_m
 * --pure` (whose file {@linkcode equalsKeptMxfp4Presets} compares with
 * llama-quantize's).
 *
 * @param fixture The fixture (`hf/<fixture>/`, `llama.cpp/<fixture>-f32.json`).
 * @param experts Its MXFP4 expert stacks.
 */
export async function keepsMxfp4UnderSingleType(fixture: string, experts: number): Promise<void> {
  await withTempDir(async (dir) => {
    const out = `${dir}/q4_k.gguf`;
    const run = await runApr(["convert", familyDir(fixture), "-o", out, "--quantize", "q4_k"]);
    assert.equal(run.code, 0, run.stderr);
    const converter = (await llamaCppManifest(fixture, "f32"))!.tensors.filter((x) =>
      x.type === "MXFP4"
    );
    const mine = (await ggufDescription(out)).tensors.filter((x) => x.type === "MXFP4");
    assert.equal(mine.length, experts);
    assert.deepEqual(
      mine.map((x) => [x.name, x.sha256]).sort(),
      converter.map((x) => [x.name, x.sha256]).sort(),
    );
    const notes = run.stdout.split("\n").filter((l) => l.startsWith("note: the routed experts"));
    assert.equal(notes.length, 1, run.stdout);
    assert.match(notes[0]!, /requantizing from type mxfp4 is disabled/);
    assert.match(notes[0]!, /--quantize q4_k_m --pure is llama-quantize's --pure file/);
  });
}

/**
 * Test steps: a fixture without a reference run (a BF16 copy) converted by
 * aprkit is llama.cpp's converter's f32, bf16, q8_0 file and llama-quantize's
 * Q4_K_M, Q5_K_S file, sha256 for sha256.
 *
 * @param t The test.
 * @param fixture The fixture (`hf/<fixture>/`, `llama.cpp/<fixture>-*.json`).
 */
export async function equalsConverterFiles(t: Deno.TestContext, fixture: string): Promise<void> {
  await withTempDir(async (dir) => {
    const cases = [
      ["f32", { float32: true }],
      ["bf16", { quantize: "bf16" }],
      ["q8_0", { quantize: "q8_0" }],
      ["Q4_K_M", { quantize: "q4_k_m" }],
      ["Q5_K_S", { quantize: "q5_k_s" }],
    ] as const;
    for (const [type, options] of cases) {
      await t.step(type, async () => {
        const out = `${dir}/${type}.gguf`;
        await convertModel(familyDir(fixture), out, options);
        const theirs = await llamaCppManifest(fixture, type);
        assert.ok(theirs?.file_sha256 !== undefined, `no llama.cpp ${type} manifest`);
        fail(`${fixture} ${type}`, manifestDifferences(await ggufDescription(out), theirs));
        fail(`${fixture} ${type}`, await fileDifference(out, theirs));
      });
    }
  });
}
