/**
 * End-to-end correctness of `importModel()` / `convertModel()`: exact
 * copies, quantization within its error bounds, GGUF imports that keep the
 * K-quant blocks verbatim, round trips through SafeTensors, and determinism.
 *
 * @module
 */

import { deepEqual, equal, ok } from "node:assert/strict";
import { tensorByteLength } from "../../src/dtype.ts";
import { ggufToHfName } from "../../src/formats/gguf/names.ts";
import { convertModel, importModel } from "../../src/pipeline/convert_model.ts";
import type { Model } from "../../src/pipeline/model.ts";
import { openModel } from "../../src/pipeline/open_model.ts";
import { DEMO_MODEL, sha256, testdata, withTempDir } from "./_helpers.ts";
import { permuteQkRows, permuteQkValues } from "../_qk_rows.ts";

interface ManifestTensor {
  name: string;
  type: string;
  numpy_shape: number[];
  raw_sha256: string;
  f32_sha256: string;
}

const Q4_K_M_GGUF = testdata("gguf/tiny-llama-q4_k_m.gguf");
const Q4_K_M_MANIFEST: { tensors: ManifestTensor[] } = JSON.parse(
  await Deno.readTextFile(testdata("gguf/tiny-llama-q4_k_m.manifest.json")),
);

async function withModels<T>(
  paths: string[],
  fn: (...models: Model[]) => Promise<T>,
): Promise<T> {
  const models: Model[] = [];
  try {
    for (const p of paths) models.push(await openModel(p));
    return await fn(...models);
  } finally {
    for (const m of models) await m.close();
  }
}

function f32Bytes(values: Float32Array): Uint8Array {
  return new Uint8Array(values.buffer, values.byteOffset, values.byteLength);
}

Deno.test("importModel() without quantization copies every tensor's bytes exactly", async () => {
  await withTempDir(async (dir) => {
    const out = `${dir}/demo.apr`;
    const result = await importModel(DEMO_MODEL, out);
    equal(result.format, "apr");
    equal(result.sourceFormat, "safetensors");
    // The demo ties its output layer to the embedding (no lm_head in the
    // source): the import adds the explicit copy realizar reads.
    equal(result.tensors, 21);
    await withModels([DEMO_MODEL, out], async (source, imported) => {
      deepEqual(imported.names().sort(), [...source.names(), "lm_head.weight"].sort());
      for (const name of source.names()) {
        const a = source.tensor(name), b = imported.tensor(name);
        deepEqual(b.info, a.info, name);
        deepEqual(await b.bytes(), await a.bytes(), name);
      }
      const embed = source.tensor("model.embed_tokens.weight");
      const lmHead = imported.tensor("lm_head.weight");
      deepEqual(lmHead.info.shape, embed.info.shape);
      deepEqual(await lmHead.bytes(), await embed.bytes(), "lm_head is the embedding");
      const meta = imported.header.metadata;
      equal(meta.tied_embeddings, true);
      equal(meta.original_format, "safetensors");
      equal(meta.param_count, result.parameters);
      equal(meta.total_size, result.tensorBytes);
      equal(meta.architecture, "llama");
      ok(Array.isArray(meta["tokenizer.vocabulary"]), "tokenizer vocabulary from tokenizer.json");
      ok(Array.isArray(meta["tokenizer.merges"]), "tokenizer merges from tokenizer.json");
    });
  });
});

/** The largest error each target may make on one value (APR_V2.md §5, QUANTIZATION.md). */
function checkBound(
  target: string,
  name: string,
  source: Float32Array,
  decoded: Float32Array,
): void {
  equal(decoded.length, source.length, name);
  const absmax = source.reduce((m, v) => Math.max(m, Math.abs(v)), 0);
  let sumSq = 0, sumErr = 0;
  for (let i = 0; i < source.length; i++) {
    const v = source[i]!, d = decoded[i]!, err = Math.abs(v - d);
    sumSq += v * v;
    sumErr += err * err;
    let bound: number;
    switch (target) {
      case "f16": // round to nearest: half an ulp of 11 significant bits, or of the subnormal step
        bound = Math.max(Math.abs(v) * 2 ** -11, 2 ** -25);
        break;
      case "q8": // one scale per tensor: absmax/127, half a step (plus f32 rounding)
        bound = absmax / 254 * (1 + 1e-5);
        break;
      case "q4": { // blocks of 32: step absmax_block/7 (stored as f16), half a step
        const start = i - (i % 32);
        let blockMax = 0;
        for (let j = start; j < Math.min(start + 32, source.length); j++) {
          blockMax = Math.max(blockMax, Math.abs(source[j]!));
        }
        bound = (blockMax / 7) * (0.5 + 8 * 2 ** -11) + 1e-7;
        break;
      }
      default:
        bound = Infinity; // Q4_K: bounded in RMSE below
    }
    ok(err <= bound, `${target} ${name}[${i}]: |${v} - ${d}| = ${err} > ${bound}`);
  }
  if (target === "q4_k") {
    // 4-bit levels per sub-block of 32 with 6-bit scales: QUANTIZATION.md measures
    // RMSE ≈ 0.07 of the values' RMS on normal weights.
    const rel = Math.sqrt(sumErr / sumSq);
    ok(rel < 0.12, `q4_k ${name}: relative RMSE ${rel}`);
  }
}

Deno.test("importModel() quantizes within each type's error bound", async (t) => {
  await withTempDir(async (dir) => {
    for (const target of ["f16", "bf16", "q8", "q4", "q4_k"] as const) {
      await t.step(target, async () => {
        const out = `${dir}/demo-${target}.apr`;
        // The demo model's rows of 128/192 values are not whole Q4_K
        // super-blocks: ask for the row-padded layout to measure its encoder
        // (the default row fallback is tested in interop/apr_readers_test.ts).
        const result = await importModel(DEMO_MODEL, out, {
          quantize: target,
          ...(target === "q4_k" ? { rowFallback: "padded" as const } : {}),
        });
        const expectedDtype = {
          f16: "F16",
          bf16: "BF16",
          q8: "APR_Q8",
          q4: "APR_Q4",
          q4_k: "Q4_K",
        }[target];
        // The policy quantizes the 15 weight matrices and the added lm_head,
        // and keeps the 5 norms in float: as F32 (exactly the BF16 values,
        // readable by every APR reader), except for a BF16 target.
        equal(result.dtypes[expectedDtype], target === "bf16" ? 21 : 16);
        if (target !== "bf16") equal(result.dtypes["F32"], 5);
        await withModels([DEMO_MODEL, out], async (source, imported) => {
          for (const name of source.names()) {
            const a = source.tensor(name), b = imported.tensor(name);
            deepEqual(b.info.shape, a.info.shape);
            if (b.info.dtype === "F32" && a.info.shape.length === 1) {
              deepEqual(await b.toFloat32(), await a.toFloat32(), `${name} kept as F32`);
              continue;
            }
            equal(b.info.dtype, expectedDtype, name);
            equal(b.info.byteLength, tensorByteLength(b.info.dtype, b.info.shape));
            checkBound(target, name, await a.toFloat32(), await b.toFloat32());
          }
        });
      });
    }
  });
});

Deno.test("importModel() of a Q4_K_M GGUF keeps K-quant blocks verbatim, maps names, keeps the tokenizer", async () => {
  await withTempDir(async (dir) => {
    const out = `${dir}/gguf.apr`;
    await importModel(Q4_K_M_GGUF, out);
    await withModels([out], async (imported) => {
      equal(imported.names().length, Q4_K_M_MANIFEST.tensors.length);
      for (const m of Q4_K_M_MANIFEST.tensors) {
        const hfName = ggufToHfName(m.name);
        ok(hfName !== m.name, `${m.name} should map to a Hugging Face name`);
        const tensor = imported.tensor(hfName);
        equal(tensor.info.dtype, m.type, hfName);
        deepEqual(tensor.info.shape, m.numpy_shape, hfName);
        // Q/K rows come back in Hugging Face's order (rope_type 2, issue 18): the
        // same blocks, permuted back into llama.cpp's order they are the file's.
        const qk = /self_attn\.([qk])_proj\.weight$/.exec(hfName);
        const heads = qk?.[1] === "q" ? 4 : 2;
        const rows = tensor.info.shape[0]!;
        const raw = qk === null
          ? await tensor.bytes()
          : permuteQkRows(await tensor.bytes(), rows, heads);
        const values = qk === null
          ? await tensor.toFloat32()
          : permuteQkValues(await tensor.toFloat32(), rows, heads);
        equal(await sha256(raw), m.raw_sha256, `${hfName} bytes`);
        equal(await sha256(f32Bytes(values)), m.f32_sha256, `${hfName} f32`);
      }
      ok(imported.names().includes("model.embed_tokens.weight"));
      ok(imported.names().includes("lm_head.weight"));
      const meta = imported.header.metadata;
      equal(meta.original_format, "gguf");
      equal(meta.rope_type, 2);
      const vocab = meta["tokenizer.vocabulary"];
      ok(Array.isArray(vocab) && vocab.length > 0, "tokenizer.vocabulary");
      ok(vocab.every((v) => typeof v === "string"));
      // A SentencePiece ("llama") vocabulary: scores instead of merges.
      equal(meta["tokenizer.model_type"], "llama");
      const scores = meta["tokenizer.scores"];
      ok(Array.isArray(scores) && scores.length === vocab.length, "tokenizer.scores");
      equal(meta["tokenizer.vocab_size"], vocab.length);
    });
  });
});

Deno.test("SafeTensors -> APR -> SafeTensors returns identical tensor bytes, single file and sharded", async () => {
  await withTempDir(async (dir) => {
    const apr = `${dir}/demo.apr`;
    await importModel(DEMO_MODEL, apr);
    await Deno.mkdir(`${dir}/single`);
    await Deno.mkdir(`${dir}/sharded`);
    await convertModel(apr, `${dir}/single/model.safetensors`, { format: "safetensors" });
    const sharded = await convertModel(apr, `${dir}/sharded/model.safetensors`, {
      format: "safetensors",
      maxShardSize: 200_000,
    });
    equal(sharded.tensors, 20);
    const shardFiles = [...Deno.readDirSync(`${dir}/sharded`)].map((e) => e.name).sort();
    ok(shardFiles.includes("model.safetensors.index.json"), shardFiles.join());
    ok(shardFiles.filter((n) => /^model-\d{5}-of-\d{5}\.safetensors$/.test(n)).length >= 3);
    await withModels(
      [DEMO_MODEL, `${dir}/single/model.safetensors`, `${dir}/sharded`],
      async (source, single, resharded) => {
        for (const copy of [single, resharded]) {
          deepEqual(copy.names().sort(), source.names().sort());
          for (const name of source.names()) {
            deepEqual(copy.tensor(name).info, source.tensor(name).info);
            deepEqual(await copy.tensor(name).bytes(), await source.tensor(name).bytes(), name);
          }
        }
      },
    );
  });
});

Deno.test("convertModel() of a GGUF to F32 SafeTensors decodes exactly as llama.cpp", async () => {
  await withTempDir(async (dir) => {
    const out = `${dir}/decoded.safetensors`;
    const result = await convertModel(Q4_K_M_GGUF, out, { format: "safetensors", float32: true });
    deepEqual(result.dtypes, { F32: Q4_K_M_MANIFEST.tensors.length });
    await withModels([out], async (decoded) => {
      for (const m of Q4_K_M_MANIFEST.tensors) {
        const tensor = decoded.tensor(ggufToHfName(m.name));
        equal(tensor.info.dtype, "F32");
        // SafeTensors gets Hugging Face's Q/K rows: permute them back to
        // compare with llama.cpp's values (4 heads, 2 KV heads).
        const qk = /attn_([qk])\.weight$/.exec(m.name);
        const bytes = qk === null
          ? await tensor.bytes()
          : permuteQkRows(await tensor.bytes(), tensor.info.shape[0]!, qk[1] === "q" ? 4 : 2);
        equal(await sha256(bytes), m.f32_sha256, m.name);
      }
    });
  });
});

Deno.test("importModel() is deterministic: the same input and options give the same bytes", async (t) => {
  await withTempDir(async (dir) => {
    const cases: [string, string, "none" | "q8" | "q4_k"][] = [
      ["demo none", DEMO_MODEL, "none"],
      ["demo q8", DEMO_MODEL, "q8"],
      ["demo q4_k", DEMO_MODEL, "q4_k"],
      ["gguf", Q4_K_M_GGUF, "none"],
    ];
    for (const [i, [name, source, quantize]] of cases.entries()) {
      await t.step(name, async () => {
        await importModel(source, `${dir}/${i}-a.apr`, { quantize });
        await importModel(source, `${dir}/${i}-b.apr`, { quantize });
        equal(await sha256(`${dir}/${i}-a.apr`), await sha256(`${dir}/${i}-b.apr`));
      });
    }
  });
});

Deno.test("APR metadata.quantization names what was written when every K-quant row falls back", async () => {
  await withTempDir(async (dir) => {
    // The demo model's rows of 128/192 values are not whole Q4_K super-blocks.
    for (
      const [rowFallback, dtype, record] of [
        ["q8", "APR_Q8", { quant_type: "q8", bits: 8, block_size: null, symmetric: true }],
        ["f16", "F16", undefined],
        ["padded", "Q4_K", { quant_type: "q4_k", bits: 4, block_size: 256, symmetric: false }],
      ] as const
    ) {
      const out = `${dir}/demo-${rowFallback}.apr`;
      const result = await importModel(DEMO_MODEL, out, { quantize: "q4_k", rowFallback });
      equal(result.dtypes[dtype], 16, rowFallback);
      const model = await openModel(out);
      try {
        deepEqual(model.header.metadata.quantization, record, rowFallback);
      } finally {
        await model.close();
      }
    }
  });
});
