/**
 * Quantized Hugging Face checkpoints (issue 25 item 5): each method's fixture
 * (tests/testdata/hf/quantized/, made by make_fixtures.py from the published
 * formulas) reads as its dequantized F32 tensors, equal bit for bit to the
 * reference the script computed (transformers' own dequantizer where it runs
 * on CPU) and, converted to GGUF, to llama.cpp's `convert_hf_to_gguf.py
 * --outtype f32` of the same folder, byte for byte (its tensor order, KV
 * pairs and sha256); the companion tensors never appear.
 * NVFP4 checkpoints (ModelOpt, compressed-tensors) keep their weights as
 * ggml's NVFP4 in GGUF: the converter's f32, bf16 and q8_0 files are matched
 * tensor by tensor (stored bytes), and the dequantized values equal gguf-py's
 * NVFP4 dequantizer times `.scale` on them.
 *
 * @module
 */

import { deepEqual, equal, ok } from "node:assert/strict";
import { createHash } from "node:crypto";
import { openModel } from "../../src/pipeline/open_model.ts";
import { convertModel } from "../../src/pipeline/convert_model.ts";
import { convertModels } from "../../src/pipeline/convert_many.ts";
import { dequantizeCheckpoint } from "../../src/quant/checkpoint/mod.ts";
import { decodeToFloat32 } from "../../src/quant/decode.ts";
import type { TensorEntry } from "../../src/tensor.ts";
import { testdata, withTempDir } from "../cli/_run_apr.ts";
import { readGgufFile } from "../interop/_files.ts";
import {
  fail,
  fileDifference,
  ggufDescription,
  type GgufManifest,
  manifestDifferences,
} from "../interop/_families.ts";
import { writeLlamaTokenizer } from "../../bench/_llama_shaped_model.ts";

interface Expected {
  reference: string;
  values: Record<string, { shape: number[]; sha256: string }>;
  llamacpp?: Record<string, { shape: number[]; sha256: string }>;
  /** The same file of the converter's, whole: sha256, KV pairs and tensors in file order. */
  llamacpp_gguf?: GgufManifest;
  /** By --outtype: f32, bf16, q8_0. */
  llamacpp_nvfp4?: Record<string, {
    "general.file_type": number;
    tensors: Record<
      string,
      { type: string; shape: number[]; sha256: string; dequantized_sha256?: string }
    >;
    /** The converter's whole file. */
    gguf: GgufManifest;
  }>;
}

/**
 * NVFP4 fixtures: llama.cpp's converter keeps their weights as NVFP4
 * (`llamacpp_nvfp4`); the MoE ones' experts stacked, a `.scale` per expert.
 */
const NVFP4_FIXTURES = [
  "modelopt-nvfp4",
  "modelopt-mixed",
  "ct-nvfp4",
  "modelopt-nvfp4-moe",
  "ct-nvfp4-moe",
  "modelopt-nvfp4-mellum",
  "modelopt-nvfp4-nemotron-h",
  "modelopt-nvfp4-nemotron-h-latent",
];

const FIXTURES = [
  "fp8-block",
  "fp8-block-edge",
  "fp8-tensor",
  "ct-fp8-channel",
  "ct-int8-channel",
  "ct-w4a16-asym",
  "ct-w8-packed-sym",
  "gptq-4bit-actorder",
  "gptq-2bit",
  "gptq-8bit-v2",
  // Two shards splitting groups: the converter orders the dequantized weights by their `.qweight`'s shard.
  "gptq-4bit-sharded",
  "awq-gemm",
  "bitnet",
  "mxfp4-gpt-oss",
  "modelopt-fp8",
  ...NVFP4_FIXTURES,
];

const COMPANION =
  /(_scale_inv|\.weight_scale|\.weight_scale_2|_global_scale|\.k_scale|\.v_scale|\.input_scale|\.weight_packed|\.weight_shape|\.weight_zero_point|\.qweight|\.qzeros|\.scales|\.g_idx|_blocks|_scales)$/;

function folder(name: string): string {
  return testdata(`hf/quantized/${name}`);
}

async function expected(name: string): Promise<Expected> {
  return JSON.parse(await Deno.readTextFile(`${folder(name)}/expected.json`));
}

function sha256(values: Float32Array): string {
  return createHash("sha256")
    .update(new Uint8Array(values.buffer, values.byteOffset, values.byteLength))
    .digest("hex");
}

async function payload(entry: TensorEntry, stream = entry.open()): Promise<Uint8Array> {
  const parts: Uint8Array[] = [];
  for await (const chunk of stream) parts.push(chunk);
  const out = new Uint8Array(parts.reduce((n, p) => n + p.length, 0));
  let at = 0;
  for (const p of parts) {
    out.set(p, at);
    at += p.length;
  }
  return out;
}

for (const name of FIXTURES) {
  Deno.test(`quantized checkpoint ${name}: dequantized values equal the reference's`, async () => {
    const want = await expected(name);
    const model = await openModel(folder(name));
    try {
      const names = model.names();
      deepEqual(names.filter((n) => COMPANION.test(n)), [], "no companion tensor is served");
      for (const [tensor, { shape, sha256: hash }] of Object.entries(want.values)) {
        const t = model.tensor(tensor);
        equal(t.info.dtype, "F32", tensor);
        deepEqual(t.info.shape, shape, tensor);
        equal(sha256(await t.toFloat32()), hash, `${tensor} vs ${want.reference}`);
      }
    } finally {
      await model.close();
    }
  });
}

for (
  const name of FIXTURES.filter((n) =>
    n !== "awq-gemm" && n !== "mxfp4-gpt-oss" && !NVFP4_FIXTURES.includes(n)
  )
) {
  Deno.test(`quantized checkpoint ${name}: GGUF output equals llama.cpp's converter, the whole file`, async () => {
    const { llamacpp: want, llamacpp_gguf: file } = await expected(name);
    ok(want !== undefined && file?.file_sha256 !== undefined);
    await withTempDir(async (dir) => {
      const out = `${dir}/out.gguf`;
      await convertModel(folder(name), out, { float32: true });
      // Tensor order (GPTQ's and pack-quantized weights after the others, as
      // the converter adds them), types, bytes and KV pairs, then the file.
      fail(`${name} vs llama.cpp`, [
        ...manifestDifferences(await ggufDescription(out), file),
        ...await fileDifference(out, file),
      ]);
      const gguf = await openModel(out, { keepNames: true });
      try {
        deepEqual(gguf.names().sort(), Object.keys(want).sort());
        for (const [tensor, { shape, sha256: hash }] of Object.entries(want)) {
          const t = gguf.tensor(tensor);
          deepEqual(t.info.shape, shape, tensor);
          equal(sha256(await t.toFloat32()), hash, `${tensor} vs llama.cpp`);
        }
      } finally {
        await gguf.close();
      }
    });
  });
}

Deno.test("quantized checkpoint gptq-4bit-sharded: outputs from one read keep the converter's order of made weights", async () => {
  // Shared reads (convert_many.ts) hand each conversion the reader's marks.
  const { llamacpp_gguf: file } = await expected("gptq-4bit-sharded");
  ok(file?.file_sha256 !== undefined);
  await withTempDir(async (dir) => {
    const outputs = [`${dir}/a.gguf`, `${dir}/b.gguf`];
    await convertModels(folder("gptq-4bit-sharded"), outputs.map((output) => ({ output })), {
      float32: true,
    });
    for (const out of outputs) {
      fail(`${out} vs llama.cpp`, [
        ...manifestDifferences(await ggufDescription(out), file),
        ...await fileDifference(out, file),
      ]);
    }
  });
});

Deno.test("quantized checkpoints: small tiles and restarts give the same values", async () => {
  for (
    const name of [
      "gptq-4bit-actorder",
      "gptq-2bit",
      "gptq-8bit-v2",
      "awq-gemm",
      "mxfp4-gpt-oss",
      "modelopt-nvfp4",
      "modelopt-mixed",
      "ct-nvfp4",
      "ct-nvfp4-moe",
    ]
  ) {
    const want = await expected(name);
    const model = await openModel(folder(name));
    try {
      const config = JSON.parse(await Deno.readTextFile(`${folder(name)}/config.json`));
      // The reader's raw tensors are under the dequantized ones: rebuild them
      // from the unquantized view with 1 KiB tiles (several tiles per tensor).
      const raw = await openRaw(name);
      try {
        const { tensors } = await dequantizeCheckpoint(raw.tensors, config, name, {
          tileBytes: 1024,
          hfQuantConfig: await hfQuantConfig(name),
        });
        for (const entry of tensors) {
          const hash = want.values[entry.info.name]?.sha256;
          if (hash === undefined) continue;
          const bytes = await payload(entry);
          const values = decodeToFloat32("F32", bytes, entry.info.shape);
          equal(sha256(values), hash, `${name} ${entry.info.name}, small tiles`);
          // Restart at a row boundary: the tail equals the tail of the full payload.
          const row = entry.info.shape.at(-1)! * 4;
          const offset = Math.floor(entry.info.shape.slice(0, -1).reduce((a, b) => a * b, 1) / 2) *
            row;
          ok(entry.restartPoint!(offset) !== undefined);
          const tail = await payload(entry, entry.openAt!(offset)!);
          deepEqual(tail, bytes.subarray(offset));
        }
      } finally {
        await raw.close();
      }
    } finally {
      await model.close();
    }
  }
});

/** The fixture's `hf_quant_config.json` (ModelOpt), parsed, or `undefined`. */
async function hfQuantConfig(name: string): Promise<unknown> {
  try {
    return JSON.parse(await Deno.readTextFile(`${folder(name)}/hf_quant_config.json`));
  } catch (error) {
    if (error instanceof Deno.errors.NotFound) return undefined;
    throw error;
  }
}

/** The fixture's tensors as stored (no config read, so nothing dequantized). */
async function openRaw(name: string) {
  const { openSafetensorsModel } = await import("../../src/formats/safetensors/sharded.ts");
  const { LocalModelFiles } = await import("../../src/io/model_files.ts");
  return await openSafetensorsModel(new LocalModelFiles(folder(name)), { asStored: true });
}

for (const name of ["fp8-block", ...NVFP4_FIXTURES]) {
  Deno.test(`quantized checkpoint ${name}: an APR import holds the dequantized weights, no scales`, async () => {
    const want = await expected(name);
    await withTempDir(async (dir) => {
      const out = `${dir}/m.apr`;
      await convertModel(folder(name), out);
      const apr = await openModel(out);
      try {
        deepEqual(apr.names().filter((n) => COMPANION.test(n)), []);
        for (const [tensor, { sha256: hash }] of Object.entries(want.values)) {
          equal(sha256(await apr.tensor(tensor).toFloat32()), hash, tensor);
        }
      } finally {
        await apr.close();
      }
    });
  });
}

Deno.test("quantized checkpoint mxfp4 (gpt-oss): GGUF output keeps the experts as MXFP4, holding transformers' dequantized values", async () => {
  await withTempDir(async (dir) => {
    const out = `${dir}/m.gguf`;
    // GGUF output needs a vocabulary: the fixture with a tokenizer beside it.
    const source = `${dir}/mxfp4-gpt-oss`;
    await Deno.mkdir(source);
    for (const e of Deno.readDirSync(folder("mxfp4-gpt-oss"))) {
      await Deno.copyFile(`${folder("mxfp4-gpt-oss")}/${e.name}`, `${source}/${e.name}`);
    }
    await writeLlamaTokenizer(source, 260);
    await convertModel(source, out);
    // The dequantized reading, whose values equal transformers' (sha256, above).
    const hf = await openModel(folder("mxfp4-gpt-oss"));
    const model = await openModel(out, { keepNames: true });
    try {
      const want = (await expected("mxfp4-gpt-oss")).values;
      const gateUpHf = await hf.tensor("model.layers.0.mlp.experts.gate_up_proj").toFloat32();
      const downHf = await hf.tensor("model.layers.0.mlp.experts.down_proj").toFloat32();
      equal(sha256(gateUpHf), want["model.layers.0.mlp.experts.gate_up_proj"]!.sha256);
      equal(sha256(downHf), want["model.layers.0.mlp.experts.down_proj"]!.sha256);
      const gate = model.tensor("blk.0.ffn_gate_exps.weight");
      const up = model.tensor("blk.0.ffn_up_exps.weight");
      const down = model.tensor("blk.0.ffn_down_exps.weight");
      for (const t of [gate, up, down]) equal(t.info.dtype, "MXFP4", t.info.name);
      // GGUF holds gate and up transposed and split ([experts, ff, hidden]);
      // transformers' gate_up_proj is [experts, hidden, 2·ff], gate/up interleaved.
      const [experts, ff, hidden] = gate.info.shape as [number, number, number];
      const [g, u] = [await gate.toFloat32(), await up.toFloat32()];
      const gateUp = new Float32Array(experts * hidden * 2 * ff);
      for (let e = 0; e < experts; e++) {
        for (let j = 0; j < ff; j++) {
          for (let h = 0; h < hidden; h++) {
            const at = (e * hidden + h) * 2 * ff + 2 * j;
            gateUp[at] = g[(e * ff + j) * hidden + h]!;
            gateUp[at + 1] = u[(e * ff + j) * hidden + h]!;
          }
        }
      }
      // down_proj: transformers' [experts, ff, hidden], GGUF's [experts, hidden, ff].
      const d = await down.toFloat32();
      const [, rows, cols] = down.info.shape as [number, number, number];
      const downProj = new Float32Array(d.length);
      for (let e = 0; e < experts; e++) {
        for (let r = 0; r < rows; r++) {
          for (let c = 0; c < cols; c++) {
            downProj[(e * cols + c) * rows + r] = d[(e * rows + r) * cols + c]!;
          }
        }
      }
      // Equal as numbers: ggml's MXFP4 table has no −0 (code 8 is +0).
      deepEqual([...gateUp].map((v) => v + 0), [...gateUpHf].map((v) => v + 0));
      deepEqual([...downProj].map((v) => v + 0), [...downHf].map((v) => v + 0));
    } finally {
      await model.close();
      await hf.close();
    }
  });
});

Deno.test("quantized checkpoint gptq: without g_idx, groups follow group_size", async () => {
  // These fixtures' g_idx is the default i / group_size: dropping it changes nothing.
  for (const name of ["gptq-2bit", "gptq-8bit-v2"]) {
    const want = await expected(name);
    const config = JSON.parse(await Deno.readTextFile(`${folder(name)}/config.json`));
    const raw = await openRaw(name);
    try {
      const stored = raw.tensors.filter((t) => !t.info.name.endsWith(".g_idx"));
      const { tensors } = await dequantizeCheckpoint(stored, config, name);
      let checked = 0;
      for (const entry of tensors) {
        const hash = want.values[entry.info.name]?.sha256;
        if (hash === undefined) continue;
        const values = decodeToFloat32("F32", await payload(entry), entry.info.shape);
        equal(sha256(values), hash, `${name} ${entry.info.name} without g_idx`);
        checked++;
      }
      equal(checked, 7);
    } finally {
      await raw.close();
    }
  }
});

for (const name of ["gptq-4bit-actorder", "ct-nvfp4", "modelopt-nvfp4-moe"]) {
  Deno.test(`quantized checkpoint ${name}: a SafeTensors output holds the dequantized weights under their names`, async () => {
    const want = await expected(name);
    await withTempDir(async (dir) => {
      const out = `${dir}/m.safetensors`;
      await convertModel(folder(name), out);
      const st = await openModel(out);
      try {
        deepEqual(st.names().filter((n) => COMPANION.test(n)), []);
        for (const [tensor, { shape, sha256: hash }] of Object.entries(want.values)) {
          deepEqual(st.tensor(tensor).info.shape, shape);
          equal(sha256(await st.tensor(tensor).toFloat32()), hash, tensor);
        }
      } finally {
        await st.close();
      }
    });
  });
}

Deno.test("quantized checkpoint: compressed-tensors' older compression_config key is read too", async () => {
  const want = await expected("ct-fp8-channel");
  await withTempDir(async (dir) => {
    for (const e of Deno.readDirSync(folder("ct-fp8-channel"))) {
      await Deno.copyFile(`${folder("ct-fp8-channel")}/${e.name}`, `${dir}/${e.name}`);
    }
    const config = JSON.parse(await Deno.readTextFile(`${dir}/config.json`));
    config.compression_config = config.quantization_config;
    delete config.quantization_config;
    await Deno.writeTextFile(`${dir}/config.json`, JSON.stringify(config));
    const model = await openModel(dir);
    try {
      for (const [tensor, { sha256: hash }] of Object.entries(want.values)) {
        equal(sha256(await model.tensor(tensor).toFloat32()), hash, tensor);
      }
    } finally {
      await model.close();
    }
  });
});

for (const name of NVFP4_FIXTURES) {
  Deno.test(`quantized checkpoint ${name}: NVFP4 values equal gguf-py's dequantizer on llama.cpp's converter output`, async () => {
    const want = await expected(name);
    const gguf = want.llamacpp_nvfp4!["f32"]!;
    // The converter files the model as MOSTLY_NVFP4 and keeps each weight NVFP4.
    equal(gguf["general.file_type"], 39);
    const model = await openModel(folder(name));
    try {
      let checked = 0;
      for (const [tensor, entry] of Object.entries(gguf.tensors)) {
        if (entry.type !== "NVFP4") continue;
        // A stacked tensor is its experts' values one after another.
        const hfNames = checkpointNames(tensor, entry.shape, Object.keys(want.values));
        const parts = [];
        for (const hfName of hfNames) {
          deepEqual(model.tensor(hfName).info.shape, entry.shape.slice(-2), tensor);
          parts.push(await model.tensor(hfName).toFloat32());
        }
        const values = new Float32Array(parts.reduce((n, p) => n + p.length, 0));
        parts.forEach((p, i) => values.set(p, i * p.length));
        equal(sha256(values), entry.dequantized_sha256, `${hfNames} vs ${tensor} from llama.cpp`);
        checked++;
      }
      // Layers of four attention weights and three expert stacks in the MoEs (two, one).
      // Nemotron-H's "MEM*E": two Mamba layers' in/out, one attention, two MoE layers'
      // shared expert and two stacks ("MEMEM*E": three, one, three).
      const counts: Record<string, number> = {
        "modelopt-mixed": 3,
        "modelopt-nvfp4-moe": 14,
        "modelopt-nvfp4-nemotron-h": 16,
        "modelopt-nvfp4-nemotron-h-latent": 22,
      };
      equal(checked, counts[name] ?? 7);
    } finally {
      await model.close();
    }
  });

  Deno.test(`quantized checkpoint ${name}: GGUF output keeps NVFP4 as llama.cpp's converter does (--outtype f32, bf16, q8_0), tensor order and bytes`, async () => {
    const manifests = (await expected(name)).llamacpp_nvfp4!;
    await withTempDir(async (dir) => {
      for (const [outtype, want] of Object.entries(manifests)) {
        const out = `${dir}/${outtype}.gguf`;
        // The NVFP4 weights stay NVFP4 under each; the file type is MOSTLY_NVFP4 but for q8_0.
        await convertModel(
          folder(name),
          out,
          outtype === "f32" ? { float32: true } : { quantize: outtype as "bf16" | "q8_0" },
        );
        const gguf = await readGgufFile(out);
        equal(gguf.kv.get("general.file_type")?.value, want["general.file_type"], outtype);
        deepEqual([...gguf.tensors.keys()].sort(), Object.keys(want.tensors).sort());
        for (const [tensor, entry] of Object.entries(want.tensors)) {
          const t = gguf.tensors.get(tensor)!;
          equal(t.dtype, entry.type, `${outtype} ${tensor}`);
          deepEqual(t.shape, entry.shape, tensor);
          equal(
            createHash("sha256").update(t.bytes).digest("hex"),
            entry.sha256,
            `${outtype} ${tensor} vs llama.cpp`,
          );
        }
        // The whole file: tensor order, types, bytes and KV pairs, with
        // LlamaConfig's head_dim (hidden_size / heads), which transformers 5
        // fills in for the converter when config.json leaves it out, as these
        // fixtures' (and published Llama 3.1 checkpoints') do.
        deepEqual(
          manifestDifferences(await ggufDescription(out), want.gguf),
          [],
          `${name} --outtype ${outtype} vs llama.cpp`,
        );
      }
    });
  });
}

/**
 * The GGUF weight names of the fixtures' linear layers (after `blk.N.`), by
 * checkpoint module: Llama's and Qwen3-MoE's under `model.layers.N`,
 * Nemotron-H's mixers under `backbone.layers.N`.
 */
const GGUF_LINEAR: Record<string, string> = {
  "attn_q.weight": "(self_attn|mixer).q_proj.weight",
  "attn_k.weight": "(self_attn|mixer).k_proj.weight",
  "attn_v.weight": "(self_attn|mixer).v_proj.weight",
  "attn_output.weight": "(self_attn|mixer).o_proj.weight",
  "ffn_gate.weight": "mlp.gate_proj.weight",
  "ffn_up.weight": "mlp.up_proj.weight",
  "ffn_down.weight": "mlp.down_proj.weight",
  "ffn_up_shexp.weight": "mixer.shared_experts.up_proj.weight",
  "ffn_down_shexp.weight": "mixer.shared_experts.down_proj.weight",
  "ssm_in.weight": "mixer.in_proj.weight",
  "ssm_out.weight": "mixer.out_proj.weight",
  "ffn_gate_exps.weight": "(mlp|mixer).experts.(\\d+).gate_proj.weight",
  "ffn_up_exps.weight": "(mlp|mixer).experts.(\\d+).up_proj.weight",
  "ffn_down_exps.weight": "(mlp|mixer).experts.(\\d+).down_proj.weight",
};

/**
 * The checkpoint weights an NVFP4 GGUF tensor holds: one, or a stack's
 * experts 0…n−1 (`[n, rows, cols]`).
 */
function checkpointNames(tensor: string, shape: number[], names: string[]): string[] {
  const [, layer, rest] = /^blk\.(\d+)\.(.*)$/.exec(tensor)!;
  const module = new RegExp(
    `^(model|backbone)\\.layers\\.${layer}\\.${GGUF_LINEAR[rest!]!.replaceAll(".", "\\.")}$`,
  );
  const found = names.filter((n) => module.test(n));
  if (shape.length === 3) {
    const expert = (n: string) => Number(module.exec(n)![3]);
    const experts = found.sort((a, b) => expert(a) - expert(b));
    deepEqual(experts.map(expert), Array.from({ length: shape[0]! }, (_, e) => e), tensor);
    return experts;
  }
  equal(found.length, 1, tensor);
  return found;
}

Deno.test("quantized checkpoint modelopt: hf_quant_config.json's fields in config.json's quantization_config read alike", async () => {
  for (const name of ["modelopt-fp8", "modelopt-nvfp4", "modelopt-mixed"]) {
    const want = await expected(name);
    await withTempDir(async (dir) => {
      for (const e of Deno.readDirSync(folder(name))) {
        if (e.name !== "hf_quant_config.json") {
          await Deno.copyFile(`${folder(name)}/${e.name}`, `${dir}/${e.name}`);
        }
      }
      // As newer ModelOpt exports write it: the method and algorithm in config.json.
      const hf = (await hfQuantConfig(name)) as { quantization: Record<string, unknown> };
      const config = JSON.parse(await Deno.readTextFile(`${dir}/config.json`));
      config.quantization_config = { quant_method: "modelopt", ...hf.quantization };
      await Deno.writeTextFile(`${dir}/config.json`, JSON.stringify(config));
      const model = await openModel(dir);
      try {
        for (const [tensor, { sha256: hash }] of Object.entries(want.values)) {
          equal(sha256(await model.tensor(tensor).toFloat32()), hash, `${name} ${tensor}`);
        }
      } finally {
        await model.close();
      }
    });
  }
});

Deno.test("quantized checkpoint modelopt NVFP4 for GGUF: a weight_scale_2 or input_scale of 1 is left out, as the converter's _scale_is_trivial", async () => {
  const raw = await openRaw("modelopt-nvfp4");
  try {
    const one = new Uint8Array(new Float32Array([1]).buffer);
    const unit = (name: string): TensorEntry => ({
      info: { name, dtype: "F32", shape: [], byteLength: 4 },
      open: () => ReadableStream.from([one.slice()]),
      slice: (start, end) => ReadableStream.from([one.slice(start, end)]),
    });
    const up = "model.layers.0.mlp.up_proj";
    const tensors = raw.tensors.map((t) =>
      t.info.name === `${up}.weight_scale_2` || t.info.name === `${up}.input_scale`
        ? unit(t.info.name)
        : t
    );
    const config = JSON.parse(await Deno.readTextFile(`${folder("modelopt-nvfp4")}/config.json`));
    const { tensors: kept, kept: type } = await dequantizeCheckpoint(tensors, config, "m", {
      packedForGguf: true,
      hfQuantConfig: await hfQuantConfig("modelopt-nvfp4"),
    });
    equal(type, "NVFP4");
    const names = kept.map((t) => t.info.name);
    ok(names.includes(`${up}.weight`) && names.includes(`${up}.weight_scale`));
    ok(!names.includes(`${up}.weight_scale_2`) && !names.includes(`${up}.input_scale`));
    // The others keep theirs, as one F32 value; the KV-cache scales are dropped.
    const down = kept.find((t) => t.info.name === "model.layers.0.mlp.down_proj.weight_scale_2")!;
    deepEqual([down.info.dtype, down.info.shape], ["F32", [1]]);
    ok(names.includes("model.layers.0.mlp.down_proj.input_scale"));
    ok(!names.some((n) => n.endsWith(".k_scale") || n.endsWith(".v_scale")));
  } finally {
    await raw.close();
  }
});
