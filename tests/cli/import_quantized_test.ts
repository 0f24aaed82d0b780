/**
 * `apr import`/`convert` of quantized Hugging Face checkpoints the CLI must
 * refuse (issue 25 item 5): a `quant_method` aprkit does not dequantize
 * (bitsandbytes, hqq, exl2, aqlm…), quantized tensors without a
 * `quantization_config`, and hostile companions (a g_idx outside its groups,
 * scales that do not fit, blocks of size 0). Each is one line naming the file
 * and what is wrong, exit 2, and no output file.
 *
 * @module
 */

import { deepEqual, equal, match } from "node:assert/strict";
import { encodeSafetensors } from "../../src/formats/safetensors/encode.ts";
import type { DType } from "../../src/dtype.ts";
import { openModel } from "../../src/pipeline/open_model.ts";
import { type HubServerFile, sha256Hex, startHubServer } from "../_hub_server.ts";
import { assertOneLineError, runApr, testdata, withTempDir } from "./_run_apr.ts";
import { writeLlamaTokenizer } from "../../bench/_llama_shaped_model.ts";

const SUPPORTED = "(supported: awq, bitnet, compressed-tensors, fp8, gptq, modelopt, mxfp4)";

interface Tensor {
  name: string;
  dtype: DType;
  shape: number[];
  data?: Uint8Array;
}

const SIZE: Partial<Record<DType, number>> = { F32: 4, F16: 2, BF16: 2, I32: 4, U8: 1, F8_E4M3: 1 };

/**
 * A model folder: config.json with `quantization` (and `sizes`: the widths
 * its tensors have, as a real config states them) and the tensors (zeros
 * unless given).
 */
async function model(
  dir: string,
  quantization: unknown,
  tensors: Tensor[],
  sizes: Record<string, number> = {},
): Promise<string> {
  const folder = `${dir}/model`;
  await Deno.mkdir(folder);
  const config: Record<string, unknown> = {
    architectures: ["LlamaForCausalLM"],
    model_type: "llama",
    hidden_size: 8,
    // What llama's GGUF keys need (issue 18), so GGUF output gets as far as the tensors.
    num_hidden_layers: 1,
    num_attention_heads: 1,
    vocab_size: 8,
    ...sizes,
  };
  if (quantization !== undefined) config["quantization_config"] = quantization;
  await Deno.writeTextFile(`${folder}/config.json`, JSON.stringify(config));
  // GGUF output needs a vocabulary (and gets as far as the tensors with one).
  await writeLlamaTokenizer(folder, 260);
  await Deno.writeFile(
    `${folder}/model.safetensors`,
    encodeSafetensors({
      tensors: tensors.map((t) => ({
        name: t.name,
        dtype: t.dtype,
        shape: t.shape,
        data: t.data ?? new Uint8Array(t.shape.reduce((a, b) => a * b, 1) * SIZE[t.dtype]!),
      })),
    }),
  );
  return folder;
}

async function refused(
  quantization: unknown,
  tensors: Tensor[],
  ...patterns: (RegExp | string)[]
): Promise<void> {
  await withTempDir(async (dir) => {
    const folder = await model(dir, quantization, tensors);
    for (const out of ["out.apr", "out.gguf", "out.safetensors"]) {
      const verb = out.endsWith(".apr") ? "import" : "convert";
      const run = await runApr([verb, folder, "-o", `${dir}/${out}`]);
      assertOneLineError(run, folder, ...patterns);
    }
    deepEqual([...Deno.readDirSync(dir)].map((e) => e.name), ["model"], "nothing written");
  });
}

const WEIGHT: Tensor = { name: "model.layers.0.mlp.down_proj.weight", dtype: "U8", shape: [8, 8] };

for (const method of ["bitsandbytes", "hqq", "exl2", "aqlm"]) {
  Deno.test(`apr import refuses quant_method ${method}, naming it and the supported list`, async () => {
    await refused(
      { quant_method: method, bits: 4 },
      [WEIGHT, { name: "model.layers.0.mlp.down_proj.weight.absmax", dtype: "F32", shape: [2] }],
      `quantization_config.quant_method "${method}" is not supported ${SUPPORTED}`,
    );
  });
}

Deno.test("apr import refuses a quantization_config without quant_method", async () => {
  await refused({ bits: 4 }, [WEIGHT], `quant_method (missing) is not supported ${SUPPORTED}`);
});

Deno.test("apr import refuses GPTQ tensors in a checkpoint without quantization_config", async () => {
  await refused(
    undefined,
    [{ name: "model.layers.0.mlp.down_proj.qweight", dtype: "I32", shape: [1, 8] }],
    'tensor "model.layers.0.mlp.down_proj.qweight" is part of a quantized checkpoint, but config.json has no quantization_config',
  );
});

const GPTQ = { quant_method: "gptq", bits: 4, group_size: 8, checkpoint_format: "gptq" };
function gptqLayer(gIdx: number[]): Tensor[] {
  return [
    { name: "l.qweight", dtype: "I32", shape: [1, 8] },
    { name: "l.qzeros", dtype: "I32", shape: [1, 1] },
    { name: "l.scales", dtype: "F16", shape: [1, 8] },
    {
      name: "l.g_idx",
      dtype: "I32",
      shape: [8],
      data: new Uint8Array(new Int32Array(gIdx).buffer),
    },
  ];
}

Deno.test("apr import refuses a GPTQ g_idx pointing outside its groups", async () => {
  await refused(
    GPTQ,
    gptqLayer([0, 0, 0, 5, 0, 0, 0, 0]),
    '"l.g_idx"[3] is 5, outside the 1 groups',
  );
  await refused(GPTQ, gptqLayer([0, 0, 0, 0, 0, 0, 0, -1]), '"l.g_idx"[7] is -1, outside');
});

Deno.test("apr import refuses GPTQ 3-bit packing and a missing companion", async () => {
  await refused(
    { ...GPTQ, bits: 3 },
    gptqLayer([0, 0, 0, 0, 0, 0, 0, 0]),
    "bits 3 is not supported",
  );
  await refused(
    GPTQ,
    gptqLayer([0, 0, 0, 0, 0, 0, 0, 0]).filter((t) => t.name !== "l.qzeros"),
    'tensor "l.qweight" has no "l.qzeros" beside it',
  );
  await refused(
    GPTQ,
    gptqLayer([0, 0, 0, 0, 0, 0, 0, 0]).map((t) =>
      t.name === "l.scales" ? { ...t, shape: [1, 4] } : t
    ),
    "scales must have 8 columns",
  );
});

const FP8_WEIGHT: Tensor = { name: "l.weight", dtype: "F8_E4M3", shape: [8, 8] };

Deno.test("apr import refuses fp8 scales that do not fit their weight", async () => {
  await refused(
    { quant_method: "fp8", weight_block_size: [4, 4] },
    [FP8_WEIGHT, { name: "l.weight_scale_inv", dtype: "F32", shape: [3, 2] }],
    'scale "l.weight_scale_inv" [3, 2] does not fit weight "l.weight" [8, 8] with blocks [4, 4]',
  );
});

Deno.test("apr import refuses fp8 blocks of size 0", async () => {
  await refused(
    { quant_method: "fp8", weight_block_size: [0, 128] },
    [FP8_WEIGHT, { name: "l.weight_scale_inv", dtype: "F32", shape: [1, 1] }],
    "weight_block_size must be a list of positive integers (found [0,128])",
  );
});

Deno.test("apr import refuses an orphan scale (no weight beside it)", async () => {
  await refused(
    { quant_method: "fp8", weight_block_size: [4, 4] },
    [{ name: "l.weight_scale_inv", dtype: "F32", shape: [2, 2] }],
    'tensor "l.weight_scale_inv" has no "l.weight" beside it',
  );
});

Deno.test("apr import refuses compressed-tensors NVFP4 of the wrong shapes, mixed precision of other formats, and several groups", async () => {
  const nvfp4 = { quant_method: "compressed-tensors", format: "nvfp4-pack-quantized" };
  await refused(
    nvfp4,
    [
      { name: "l.weight_packed", dtype: "U8", shape: [8, 32] },
      { name: "l.weight_scale", dtype: "F8_E4M3", shape: [8, 8] },
      { name: "l.weight_global_scale", dtype: "F32", shape: [1] },
    ],
    '"l.weight_packed" U8 [8, 32] and "l.weight_scale" F8_E4M3 [8, 8] are not NVFP4: expected U8 [out, in/2] and F8_E4M3 [out, in/16]',
  );
  await refused(
    nvfp4,
    [
      { name: "l.weight_packed", dtype: "U8", shape: [8, 32] },
      { name: "l.weight_scale", dtype: "F8_E4M3", shape: [8, 4] },
      { name: "l.weight_global_scale", dtype: "F32", shape: [2] },
    ],
    '"l.weight_global_scale" is F32 [2], expected one F32 value',
  );
  await refused(
    nvfp4,
    [
      { name: "l.weight_packed", dtype: "U8", shape: [8, 32] },
      { name: "l.weight_scale", dtype: "F8_E4M3", shape: [8, 4] },
    ],
    'tensor "l.weight_packed" has no "l.weight_global_scale" beside it',
  );
  await refused(
    {
      quant_method: "compressed-tensors",
      format: "mixed-precision",
      config_groups: {
        a: { format: "nvfp4-pack-quantized", weights: {} },
        b: { format: "float-quantized", weights: {} },
      },
    },
    [WEIGHT],
    'format "mixed-precision" is supported only when every config group is "nvfp4-pack-quantized"',
  );
  const scheme = { weights: { num_bits: 8, type: "float", strategy: "channel" } };
  await refused(
    {
      quant_method: "compressed-tensors",
      format: "float-quantized",
      config_groups: { a: scheme, b: scheme },
    },
    [WEIGHT],
    "config_groups must hold exactly one group (found 2)",
  );
});

Deno.test("apr import refuses one shard of a quantized checkpoint opened without its folder", async () => {
  await withTempDir(async (dir) => {
    const folder = await model(dir, { quant_method: "fp8", weight_block_size: [4, 4] }, [
      FP8_WEIGHT,
      { name: "l.weight_scale_inv", dtype: "F32", shape: [2, 2] },
    ]);
    const file = `${folder}/model.safetensors`;
    const run = await runApr(["import", file, "-o", `${dir}/out.apr`]);
    assertOneLineError(
      run,
      file,
      `tensor "l.weight_scale_inv" is part of a quantized checkpoint; open the model's folder (with its config.json) to read it dequantized`,
    );
    // The folder reads it dequantized, and the summary says how to keep the file small.
    const ok = await runApr(["import", folder, "-o", `${dir}/out.apr`]);
    equal(ok.code, 0, ok.stderr);
    match(
      ok.stdout,
      /^note: the fp8 checkpoint's quantized weights were dequantized to F32, as llama.cpp's converter does; --quantize bf16 \(or another target\) writes a smaller file$/m,
    );
  });
});

Deno.test("apr inspect says a checkpoint is read dequantized, and from what", async () => {
  const folder = testdata("hf/quantized/gptq-4bit-actorder");
  const text = await runApr(["inspect", folder]);
  equal(text.code, 0, text.stderr);
  match(text.stdout, /^format: +safetensors \(a gptq checkpoint, read dequantized to F32\)$/m);
  const json = await runApr(["inspect", folder, "--json"]);
  equal(JSON.parse(json.stdout).dequantizedFrom, "gptq");
});

Deno.test("apr import refuses a dequantized row over the row limit", async () => {
  const columns = (1 << 20) + 1;
  await refused(
    { quant_method: "fp8" },
    [
      { name: "l.weight", dtype: "F8_E4M3", shape: [1, columns] },
      { name: "l.weight_scale_inv", dtype: "F32", shape: [] },
    ],
    `the dequantized tensor "l.weight" [1, ${columns}] has rows over the 1048576-value limit`,
  );
});

Deno.test("apr import hf://… --no-cache of a GPTQ checkpoint dequantizes from byte ranges", async () => {
  const fixture = testdata("hf/quantized/gptq-4bit-actorder");
  const files: HubServerFile[] = [];
  for (const e of Deno.readDirSync(fixture)) {
    files.push({ path: e.name, diskPath: `${fixture}/${e.name}` });
  }
  const hub = await startHubServer({ repoId: "org/gptq", files });
  try {
    await withTempDir(async (dir) => {
      const out = `${dir}/m.apr`;
      const run = await runApr(["import", `hf://${hub.repoId}`, "--no-cache", "-o", out], {
        env: { HF_ENDPOINT: hub.endpoint, HF_HOME: `${dir}/hf-home`, HF_HUB_OFFLINE: "0" },
      });
      equal(run.code, 0, run.stderr);
      const want = JSON.parse(await Deno.readTextFile(`${fixture}/expected.json`));
      const model = await openModel(out);
      try {
        for (
          const [name, { sha256 }] of Object.entries(want.values) as [string, { sha256: string }][]
        ) {
          const values = await model.tensor(name).toFloat32();
          equal(sha256Hex(new Uint8Array(values.buffer)), sha256, name);
        }
      } finally {
        await model.close();
      }
    });
  } finally {
    await hub.close();
  }
});

Deno.test("apr import refuses ModelOpt checkpoints it cannot read: other algorithms, misplaced and misshapen scales", async () => {
  const codes: Tensor = { name: "l.weight", dtype: "U8", shape: [8, 32] };
  await refused(
    { quant_method: "modelopt", quant_algo: "NVFP4_AWQ" },
    [codes],
    'quant_algo "NVFP4_AWQ" is not supported (supported: FP8, FP8_PER_CHANNEL_PER_TOKEN, NVFP4, W4A16_NVFP4, MIXED_PRECISION of these)',
  );
  await refused(
    {
      quant_method: "modelopt",
      quant_algo: "MIXED_PRECISION",
      quantized_layers: { l: { quant_algo: "INT4_AWQ" } },
    },
    [codes],
    'quant_algo "INT4_AWQ" is not supported',
  );
  await refused(
    { quant_method: "modelopt", quant_algo: "FP8" },
    [codes, { name: "l.weight_scale", dtype: "F8_E4M3", shape: [8, 4] }],
    '"l.weight_scale" is a 2-D (NVFP4) scale, but quant_algo "FP8" names no NVFP4 weights',
  );
  await refused(
    { quant_method: "modelopt", quant_algo: "NVFP4" },
    [codes, { name: "l.weight_scale", dtype: "F8_E4M3", shape: [8, 2] }],
    '"l.weight" U8 [8, 32] and "l.weight_scale" F8_E4M3 [8, 2] are not NVFP4',
  );
  await refused(
    { quant_method: "modelopt", quant_algo: "FP8" },
    [
      { name: "l.weight", dtype: "F8_E4M3", shape: [8, 8] },
      { name: "l.weight_scale", dtype: "F32", shape: [] },
      { name: "l.weight_scale_2", dtype: "F32", shape: [] },
    ],
    '"l.weight_scale_2" belongs to an NVFP4 weight',
  );
  await refused(
    { quant_method: "modelopt", quant_algo: "FP8" },
    [
      { name: "l.weight", dtype: "F8_E4M3", shape: [8, 8] },
      { name: "l.weight_scale", dtype: "F32", shape: [3] },
    ],
    'scale "l.weight_scale" [3] does not fit weight "l.weight" [8, 8]',
  );
});

Deno.test("apr convert keeps an NVFP4 checkpoint's weights under a K-quant, in one note (llama-quantize refuses to requantize NVFP4)", async () => {
  await withTempDir(async (dir) => {
    const out = `${dir}/out.gguf`;
    const args = ["convert", testdata("hf/quantized/modelopt-nvfp4"), "-o", out];
    const run = await runApr([...args, "--quantize", "q4_k_m"]);
    equal(run.code, 0, run.stderr);
    // The file itself is llama-quantize's (tests/interop/nvfp4_presets_test.ts).
    const notes = run.stdout.split("\n").filter((l) => l.startsWith("note: "));
    equal(notes.length, 1, run.stdout);
    match(notes[0]!, /NVFP4 weights stay NVFP4/);
    match(notes[0]!, /"requantizing from type nvfp4 is disabled"/);
    const again = await runApr([...args, "--quantize", "q4_k_m", "--allow-requantize", "--force"]);
    equal(again.code, 0, again.stderr);
    equal(again.stdout.includes("note: "), false, again.stdout);
  });
});

Deno.test("apr convert refuses NVFP4 rows GGUF's 64-value blocks cannot hold, naming the weight; APR dequantizes them", async () => {
  await withTempDir(async (dir) => {
    const folder = await model(dir, { quant_method: "modelopt", quant_algo: "NVFP4" }, [
      { name: "model.layers.0.mlp.down_proj.weight", dtype: "U8", shape: [8, 16] },
      { name: "model.layers.0.mlp.down_proj.weight_scale", dtype: "F8_E4M3", shape: [8, 2] },
    ]);
    const run = await runApr(["convert", folder, "-o", `${dir}/out.gguf`]);
    assertOneLineError(
      run,
      'NVFP4 weight "model.layers.0.mlp.down_proj.weight" has rows of 32 values; GGUF\'s NVFP4 blocks hold 64',
    );
    deepEqual([...Deno.readDirSync(dir)].map((e) => e.name), ["model"], "nothing written");
    const dequantized = await openModel(folder);
    try {
      const t = dequantized.tensor("model.layers.0.mlp.down_proj.weight");
      deepEqual([t.info.dtype, t.info.shape], ["F32", [8, 32]]);
    } finally {
      await dequantized.close();
    }
  });
});

/** A copy of a quantized fixture in `dir/name`, its config.json's fields replaced by `fields`. */
async function relabelled(
  dir: string,
  fixture: string,
  name: string,
  fields: Record<string, unknown>,
): Promise<string> {
  const folder = `${dir}/${name}`;
  await Deno.mkdir(folder);
  const source = testdata(`hf/quantized/${fixture}`);
  for (const e of Deno.readDirSync(source)) {
    await Deno.copyFile(`${source}/${e.name}`, `${folder}/${e.name}`);
  }
  const config = JSON.parse(await Deno.readTextFile(`${folder}/config.json`));
  await Deno.writeTextFile(`${folder}/config.json`, JSON.stringify({ ...config, ...fields }));
  return folder;
}

Deno.test("apr convert refuses NVFP4 to GGUF for a family whose llama.cpp graph ignores its .scale, in one line, with no file", async () => {
  await withTempDir(async (dir) => {
    const folder = await relabelled(dir, "ct-nvfp4", "qwen2-nvfp4", {
      architectures: ["Qwen2ForCausalLM"],
      model_type: "qwen2",
    });
    const run = await runApr(["convert", folder, "-o", `${dir}/out.gguf`]);
    assertOneLineError(
      run,
      "llama.cpp's qwen2 graph does not multiply in NVFP4's per-tensor scale",
    );
    deepEqual([...Deno.readDirSync(dir)].map((e) => e.name), ["qwen2-nvfp4"], "nothing written");
  });
});

Deno.test("apr convert refuses NVFP4 experts to GGUF for a MoE family whose llama.cpp graph ignores their .scale (qwen2moe), in one line, with no file", async () => {
  await withTempDir(async (dir) => {
    // Qwen2-MoE without a shared expert, as llama.cpp's qwen2moe computes it (norm_topk_prob false).
    const folder = await relabelled(dir, "modelopt-nvfp4-moe", "qwen2moe-nvfp4", {
      architectures: ["Qwen2MoeForCausalLM"],
      model_type: "qwen2_moe",
      shared_expert_intermediate_size: 0,
      norm_topk_prob: false,
    });
    const run = await runApr(["convert", folder, "-o", `${dir}/out.gguf`]);
    assertOneLineError(
      run,
      "NVFP4 weight \"model.layers.0.mlp.experts.0.down_proj.weight\" to GGUF: llama.cpp's qwen2moe graph does not multiply in NVFP4's per-tensor scale",
    );
    deepEqual([...Deno.readDirSync(dir)].map((e) => e.name), ["qwen2moe-nvfp4"], "nothing written");
  });
});

Deno.test("apr convert refuses an NVFP4 latent projection of Nemotron 3 Super to GGUF (llama.cpp multiplies it without its .scale), in one line, with no file", async () => {
  await withTempDir(async (dir) => {
    const folder = await relabelled(dir, "modelopt-nvfp4-nemotron-h-latent", "super-nvfp4", {});
    // Layer 1's fc1_latent_proj ([64, 64], BF16 in the fixture) NVFP4 as its shared
    // expert's up_proj is ([64, 64] too): that weight's codes and scales under its name.
    const to = "backbone.layers.1.mixer.fc1_latent_proj";
    await madeNvfp4(folder, "backbone.layers.1.mixer.shared_experts.up_proj", to);
    const run = await runApr(["convert", folder, "-o", `${dir}/out.gguf`]);
    assertOneLineError(
      run,
      `NVFP4 weight "${to}.weight" to GGUF: llama.cpp's nemotron_h_moe graph uses ` +
        "ffn_latent_down without its per-tensor scale (.scale; the latent projections are a plain " +
        "ggml_mul_mat)",
    );
    deepEqual([...Deno.readDirSync(dir)].map((e) => e.name), ["super-nvfp4"], "nothing written");
  });
});

/**
 * Replaces `to.weight` in `folder`'s model.safetensors by an NVFP4 weight:
 * `from`'s codes, scales, `weight_scale_2` and `input_scale` (its first
 * `rows` rows of codes and scales when given) under `to`'s name.
 */
async function madeNvfp4(folder: string, from: string, to: string, rows?: number): Promise<void> {
  const file = `${folder}/model.safetensors`;
  const bytes = await Deno.readFile(file);
  const length = Number(new DataView(bytes.buffer).getBigUint64(0, true));
  const header = JSON.parse(new TextDecoder().decode(bytes.subarray(8, 8 + length)));
  const tensors = Object.keys(header).filter((n) => n !== "__metadata__" && n !== `${to}.weight`)
    .map((name) => {
      const [begin, end] = header[name].data_offsets as [number, number];
      const data = bytes.subarray(8 + length + begin, 8 + length + end);
      return { name, dtype: header[name].dtype as DType, shape: header[name].shape, data };
    });
  for (const suffix of [".weight", ".weight_scale", ".weight_scale_2", ".input_scale"]) {
    const t = tensors.find((x) => x.name === from + suffix)!;
    const cut = rows !== undefined && t.shape.length === 2;
    const shape = cut ? [rows, t.shape[1]] : t.shape;
    const data = cut ? t.data.subarray(0, rows * t.shape[1]) : t.data;
    tensors.push({ ...t, name: to + suffix, shape, data });
  }
  await Deno.writeFile(file, encodeSafetensors({ tensors }));
}

Deno.test("apr convert refuses an NVFP4 MoE router to GGUF (llama.cpp's build_moe_ffn multiplies it without its .scale), in one line, with no file", async () => {
  await withTempDir(async (dir) => {
    const folder = await relabelled(dir, "modelopt-nvfp4-moe", "router-nvfp4", {});
    // Layer 0's router ([4, 64], BF16 in the fixture) NVFP4: the first 4 rows of its q_proj.
    const to = "model.layers.0.mlp.gate";
    await madeNvfp4(folder, "model.layers.0.self_attn.q_proj", to, 4);
    const run = await runApr(["convert", folder, "-o", `${dir}/out.gguf`]);
    assertOneLineError(
      run,
      `NVFP4 weight "${to}.weight" to GGUF: llama.cpp's qwen3moe graph uses ffn_gate_inp ` +
        "without its per-tensor scale (.scale; build_moe_ffn's router build_lora_mm is given " +
        "none, and none is loaded)",
    );
    deepEqual([...Deno.readDirSync(dir)].map((e) => e.name), ["router-nvfp4"], "nothing written");
  });
});

Deno.test("apr import refuses an NVFP4 global scale of 0 (its reciprocal would make every weight infinite)", async () => {
  await withTempDir(async (dir) => {
    const folder = await model(
      dir,
      { quant_method: "compressed-tensors", format: "nvfp4-pack-quantized" },
      [
        { name: "model.layers.0.mlp.down_proj.weight_packed", dtype: "U8", shape: [8, 32] },
        { name: "model.layers.0.mlp.down_proj.weight_scale", dtype: "F8_E4M3", shape: [8, 4] },
        { name: "model.layers.0.mlp.down_proj.weight_global_scale", dtype: "F32", shape: [1] },
      ],
      // The down projection's 64 columns (without it, the shape check refuses first).
      { intermediate_size: 64 },
    );
    for (const out of ["out.apr", "out.safetensors", "out.gguf"]) {
      const verb = out.endsWith(".apr") ? "import" : "convert";
      const run = await runApr([verb, folder, "-o", `${dir}/${out}`]);
      assertOneLineError(
        run,
        '"model.layers.0.mlp.down_proj.weight_global_scale" holds 0, which makes the NVFP4 per-tensor factor Infinity',
      );
    }
    deepEqual([...Deno.readDirSync(dir)].map((e) => e.name), ["model"], "nothing written");
  });
});
