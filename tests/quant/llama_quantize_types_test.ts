import { deepStrictEqual as assertEquals, ok, throws } from "node:assert/strict";
import { openModel } from "../../src/pipeline/open_model.ts";
import { readImportanceMatrix } from "../../src/pipeline/read_imatrix.ts";
import { type LlamaPreset, presetTensorTypes } from "../../src/quant/llama_presets.ts";
import { planModel, type QuantizeTarget } from "../../src/quant/plan_quantization.ts";
import { isEncodeTarget, TensorEncoder } from "../../src/quant/_tensor_encoder.ts";
import { usesImportance } from "../../src/quant/_block_encoders.ts";
import { UsageError } from "../../src/errors.ts";
import type { ModelHeader } from "../../src/tensor.ts";
import type { DType } from "../../src/dtype.ts";
import { withTempDir } from "../pipeline/_helpers.ts";
import {
  imatrixPath,
  type Manifest,
  manifest,
  sha16,
  sourceGguf,
  valuesOf,
} from "./_llama_quantize_fixture.ts";

// The judge: llama.cpp de3ff81's llama-quantize run on two small F32 models
// (tests/testdata/llama_quantize/make_fixtures.py) for every file type it
// lists, with and without an importance matrix. Here: aprkit's choice of type
// for every tensor of every run, its bytes for every tensor whose type aprkit
// encodes, and the same refusals.

interface Loaded {
  m: Manifest;
  header: ModelHeader;
  importance: ReadonlyMap<string, Float32Array>;
}

/** The model as aprkit reads llama-quantize's input (its GGUF, names kept). */
async function load(key: string): Promise<Loaded> {
  const m = manifest(key);
  const importance = (await readImportanceMatrix(imatrixPath(key))).entries;
  return await withTempDir(async (dir) => {
    const path = `${dir}/${key}.gguf`;
    await Deno.writeFile(path, sourceGguf(m));
    const model = await openModel(path, { keepNames: true });
    try {
      return { m, header: model.header, importance };
    } finally {
      await model.close();
    }
  });
}

/** A tensor's bytes in `type`, as the encoder of a plan makes them. */
async function encode(
  type: DType,
  values: Float32Array,
  shape: readonly number[],
  importance: Float32Array | undefined,
): Promise<Uint8Array> {
  if (!isEncodeTarget(type)) throw new TypeError(type);
  const parts: Uint8Array<ArrayBuffer>[] = [];
  const encoder = new TensorEncoder(type, shape, 1, undefined, 1 << 20, importance);
  const emit = (b: Uint8Array | Promise<Uint8Array>) => parts.push((b as Uint8Array).slice());
  encoder.push(values, emit);
  encoder.finish(emit);
  return new Uint8Array(await new Blob(parts).arrayBuffer());
}

const REFUSES_WITHOUT_IMATRIX = /without an importance matrix/;

for (const key of ["dense", "moe"]) {
  Deno.test(`llama-quantize's choice of type for every tensor of the ${key} model, for every file type, with and without --imatrix`, async (t) => {
    const { m, header } = await load(key);
    for (const run of m.runs) {
      if (run.refused !== undefined) continue;
      await t.step(`${run.ftype}${run.imatrix ? " --imatrix" : ""}`, () => {
        const types = presetTensorTypes(header.tensors, header.metadata, run.ftype as LlamaPreset, {
          imatrix: run.imatrix,
        });
        // Unquantized tensors keep their F32.
        assertEquals(types.map((x) => x ?? "F32"), run.types);
      });
    }
  });

  Deno.test(`the ${key} model: llama-quantize's bytes for every tensor whose type aprkit encodes`, async (t) => {
    const { m, importance } = await load(key);
    // One encoding per tensor, type and weighting: runs share most of them.
    const cache = new Map<string, string>();
    let checked = 0;
    for (const run of m.runs) {
      if (run.refused !== undefined) continue;
      await t.step(`${run.ftype}${run.imatrix ? " --imatrix" : ""}`, async () => {
        for (let i = 0; i < m.tensors.length; i++) {
          const [name, shape] = m.tensors[i]!;
          const type = run.types![i]! as DType;
          if (!isEncodeTarget(type)) continue;
          const weights = run.imatrix && usesImportance(type) ? importance.get(name) : undefined;
          const id = `${name}|${type}|${weights !== undefined}`;
          let hash = cache.get(id);
          if (hash === undefined) {
            hash = await sha16(
              await encode(type, valuesOf(m.model.seed, name, shape), shape, weights),
            );
            cache.set(id, hash);
          }
          assertEquals([name, type, hash], [name, type, run.sha256_16![i]]);
          checked++;
        }
      });
    }
    ok(checked > 1000, `${checked} tensors compared`);
  });

  Deno.test(`the ${key} model: planModel refuses where llama-quantize does, and plans the rest as it`, async (t) => {
    const { m, header, importance } = await load(key);
    for (const run of m.runs) {
      await t.step(`${run.ftype}${run.imatrix ? " --imatrix" : ""}`, () => {
        const options = {
          to: run.ftype.toLowerCase() as QuantizeTarget,
          ggufTypes: true,
          ...(run.imatrix ? { importance } : {}),
        };
        if (run.refused !== undefined) {
          // The two refusals llama-quantize makes here: an imatrix is required, or
          // a row fits no fallback (Q1_0's 128-value blocks).
          const why = /requires an imatrix/.test(run.refused)
            ? REFUSES_WITHOUT_IMATRIX
            : /no tensor type fallback/.test(run.refused)
            ? /llama-quantize has no fallback type for it/
            : undefined;
          ok(why !== undefined, run.refused);
          throws(() => planModel(header, options), why);
          return;
        }
        if (!run.types!.every((x) => isEncodeTarget(x as DType))) {
          // An i-quant aprkit cannot encode yet: refused before anything is written.
          throws(
            () => planModel(header, options),
            (e: unknown) => e instanceof UsageError && /cannot encode yet/.test(e.message),
          );
          return;
        }
        const { plans } = planModel(header, options);
        assertEquals(plans.map((p) => p.info.dtype), run.types);
        // Weighted exactly where llama-quantize weights: every weighted type but token_embd's.
        assertEquals(
          plans.map((p) => p.importance !== undefined),
          plans.map((p) =>
            run.imatrix && p.action === "float" && usesImportance(p.info.dtype) &&
            p.info.name !== "token_embd.weight"
          ),
        );
      });
    }
  });
}
