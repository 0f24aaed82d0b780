/**
 * The NVFP4 weights a checkpoint keeps for GGUF (`src/arch/kept_blocks.ts`),
 * named and ordered as llama.cpp's converter writes them
 * (`_generate_nvfp4_tensors`); the values are judged against the converter's
 * files in `tests/quant/checkpoint_test.ts`.
 *
 * @module
 */

import { deepEqual, throws } from "node:assert/strict";
import { keptNvfp4Tensors } from "../../src/arch/kept_blocks.ts";
import { FAMILIES, familyOf } from "../../src/arch/registry.ts";
import type { TensorEntry, TensorInfo } from "../../src/tensor.ts";

const LLAMA = familyOf("llama")!;

function info(name: string, dtype: TensorInfo["dtype"], shape: number[]): TensorInfo {
  return { name, dtype, shape, byteLength: shape.reduce((a, b) => a * b, 1) * 4 };
}

Deno.test("kept NVFP4: weight, then .scale and .input_scale when the checkpoint has them, first", () => {
  const made = keptNvfp4Tensors(
    [
      info("model.layers.0.mlp.up_proj.weight", "U8", [128, 32]),
      info("model.layers.0.mlp.up_proj.weight_scale", "F8_E4M3", [128, 4]),
      info("model.layers.0.mlp.up_proj.weight_scale_2", "F32", [1]),
      info("model.layers.0.mlp.up_proj.input_scale", "F32", [1]),
      // A factor of 1 the checkpoint left out (or quant/ dropped): no .scale.
      info("model.layers.0.mlp.down_proj.weight", "U8", [64, 64]),
      info("model.layers.0.mlp.down_proj.weight_scale", "F8_E4M3", [64, 8]),
      info("model.norm.weight", "F32", [64]),
    ],
    LLAMA,
    {},
  );
  deepEqual(made.map((m) => [m.info.name, m.info.dtype, m.info.shape, m.needs, m.first]), [
    [
      "blk.0.ffn_up.weight",
      "NVFP4",
      [128, 64],
      ["model.layers.0.mlp.up_proj.weight", "model.layers.0.mlp.up_proj.weight_scale"],
      true,
    ],
    ["blk.0.ffn_up.scale", "F32", [1], ["model.layers.0.mlp.up_proj.weight_scale_2"], true],
    ["blk.0.ffn_up.input_scale", "F32", [1], ["model.layers.0.mlp.up_proj.input_scale"], true],
    [
      "blk.0.ffn_down.weight",
      "NVFP4",
      [64, 128],
      ["model.layers.0.mlp.down_proj.weight", "model.layers.0.mlp.down_proj.weight_scale"],
      true,
    ],
  ]);
});

const QWEN3MOE = familyOf("qwen3moe")!;

/** One NVFP4 expert weight's codes and scales (`rows` × 64 values), ModelOpt's names. */
function expert(layer: number, e: number, proj: string, rows = 64): TensorInfo[] {
  const base = `model.layers.${layer}.mlp.experts.${e}.${proj}`;
  return [
    info(`${base}.weight`, "U8", [rows, 32]),
    info(`${base}.weight_scale`, "F8_E4M3", [rows, 4]),
  ];
}

Deno.test("kept NVFP4: a layer's experts stacked per projection when its last expert arrives, a .scale per expert (1 where one has none), first", async () => {
  const made = keptNvfp4Tensors(
    [
      ...expert(0, 0, "down_proj"),
      info("model.layers.0.mlp.experts.0.down_proj.weight_scale_2", "F32", [1]),
      ...expert(0, 0, "up_proj", 128),
      // Expert 1's factor was 1 (left out): the stacked .scale holds 1 for it.
      ...expert(0, 1, "down_proj"),
      // A dense weight between them is written where it is, as the converter does.
      info("model.layers.0.self_attn.o_proj.weight", "U8", [64, 32]),
      info("model.layers.0.self_attn.o_proj.weight_scale", "F8_E4M3", [64, 4]),
      ...expert(0, 1, "up_proj", 128),
    ],
    QWEN3MOE,
    { num_experts: 2 },
  );
  const down = [0, 1].flatMap((e) => [
    `model.layers.0.mlp.experts.${e}.down_proj.weight`,
    `model.layers.0.mlp.experts.${e}.down_proj.weight_scale`,
  ]);
  const up = down.map((n) => n.replace("down_proj", "up_proj"));
  deepEqual(made.map((m) => [m.info.name, m.info.dtype, m.info.shape, m.needs, m.first]), [
    ["blk.0.ffn_down_exps.weight", "NVFP4", [2, 64, 64], down, true],
    [
      "blk.0.ffn_down_exps.scale",
      "F32",
      [2],
      ["model.layers.0.mlp.experts.0.down_proj.weight_scale_2"],
      true,
    ],
    [
      "blk.0.attn_output.weight",
      "NVFP4",
      [64, 64],
      ["model.layers.0.self_attn.o_proj.weight", "model.layers.0.self_attn.o_proj.weight_scale"],
      true,
    ],
    // No expert has a factor: no .scale, as the converter's np.allclose(scales, 1.0).
    ["blk.0.ffn_up_exps.weight", "NVFP4", [2, 128, 64], up, true],
  ]);
  // Expert 1's value is 1, as the converter's default for a missing weight_scale_2.
  const quarter = new Uint8Array(new Float32Array([0.25]).buffer);
  const entry: TensorEntry = {
    info: info("s", "F32", [1]),
    open: () => ReadableStream.from([quarter.slice()]),
  };
  const scale = await new Response(made[1]!.open([entry])).arrayBuffer();
  deepEqual([...new Float32Array(scale)], [0.25, 1]);
});

Deno.test("kept NVFP4: stacked experts stream expert by expert, repacked as one; their .scale in expert order", async () => {
  const made = keptNvfp4Tensors(
    [1, 0].flatMap((e) => [
      ...expert(0, e, "gate_proj", 1),
      info(`model.layers.0.mlp.experts.${e}.gate_proj.weight_scale_2`, "F32", [1]),
    ]),
    QWEN3MOE,
    {},
  );
  // Without an expert count the converter stacks at the end, in expert order.
  deepEqual(made.map((m) => m.info.name), [
    "blk.0.ffn_gate_exps.weight",
    "blk.0.ffn_gate_exps.scale",
  ]);
  const opened: number[] = [];
  const bytes = (data: Uint8Array, id = -1): TensorEntry => ({
    info: info("x", "U8", [data.length]),
    open: () => {
      opened.push(id);
      return ReadableStream.from([data.slice()]);
    },
  });
  // Expert 0's codes 1, 2, 1, 2…, expert 1's 3, 4…; scales 0x38 + e, sign bits set (dropped).
  const sources = [0, 1].flatMap((e) => [
    bytes(new Uint8Array(32).fill(e === 0 ? 0x21 : 0x43), e),
    bytes(new Uint8Array(4).fill(0xb8 + e), e),
  ]);
  // One expert at a time: expert 1's payloads are opened only once expert 0's are done.
  const reader = made[0]!.open(sources).getReader();
  const first = await reader.read();
  deepEqual([first.value?.length, opened], [36, [0, 0]]);
  const second = await reader.read();
  deepEqual([second.value?.length, opened], [36, [0, 0, 1, 1]]);
  deepEqual((await reader.read()).done, true);
  const weight = new Uint8Array(await new Response(made[0]!.open(sources)).arrayBuffer());
  deepEqual(weight.length, 72);
  deepEqual([...weight.subarray(0, 4)], [0x38, 0x38, 0x38, 0x38]);
  deepEqual([...weight.subarray(36, 40)], [0x39, 0x39, 0x39, 0x39]);
  // ggml's byte j holds values j (low) and j + 8 (high): 1 and 1, then 2 and 2.
  deepEqual([weight[4], weight[5], weight[40], weight[41]], [0x11, 0x22, 0x33, 0x44]);
  deepEqual(made[0]!.needs, [
    "model.layers.0.mlp.experts.0.gate_proj.weight",
    "model.layers.0.mlp.experts.0.gate_proj.weight_scale",
    "model.layers.0.mlp.experts.1.gate_proj.weight",
    "model.layers.0.mlp.experts.1.gate_proj.weight_scale",
  ]);
  const f32 = (v: number) => bytes(new Uint8Array(new Float32Array([v]).buffer));
  const scale = await new Response(made[1]!.open([f32(0.25), f32(0.5)])).arrayBuffer();
  deepEqual([...new Float32Array(scale)], [0.25, 0.5]);
});

Deno.test("kept NVFP4: experts in a checkpoint's name order (experts.10 before experts.2) stack in expert order, when the last one read arrives", () => {
  const ids = Array.from({ length: 11 }, (_, e) => e).sort((a, b) => `${a}`.localeCompare(`${b}`));
  const made = keptNvfp4Tensors(
    [
      ...ids.slice(0, -1).flatMap((e) => expert(0, e, "up_proj")),
      info("model.layers.0.self_attn.o_proj.weight", "U8", [64, 32]),
      info("model.layers.0.self_attn.o_proj.weight_scale", "F8_E4M3", [64, 4]),
      ...expert(0, ids.at(-1)!, "up_proj"),
    ],
    QWEN3MOE,
    { num_local_experts: 11 },
  );
  deepEqual(made.map((m) => m.info.name), ["blk.0.attn_output.weight", "blk.0.ffn_up_exps.weight"]);
  deepEqual(
    made[1]!.needs.filter((n) => n.endsWith(".weight")),
    Array.from({ length: 11 }, (_, e) => `model.layers.0.mlp.experts.${e}.up_proj.weight`),
  );
  // Layer 1's one expert of eleven never completes: refused at the end.
  throws(
    () => keptNvfp4Tensors(expert(1, 0, "up_proj"), QWEN3MOE, { num_local_experts: 11 }),
    /layer 1: expert 1's up_proj is missing \(11 experts expected\)/,
  );
});

Deno.test("kept NVFP4: experts the converter cannot stack are refused, naming why", async (t) => {
  await t.step("an expert missing", () => {
    throws(
      () =>
        keptNvfp4Tensors([...expert(0, 0, "up_proj"), ...expert(0, 2, "up_proj")], QWEN3MOE, {
          num_experts: 3,
        }),
      /Cannot stack the NVFP4 experts of layer 0: expert 1's up_proj is missing \(3 experts expected\)/,
    );
  });
  await t.step("experts of unequal shapes", () => {
    throws(
      () =>
        keptNvfp4Tensors([...expert(0, 0, "up_proj"), ...expert(0, 1, "up_proj", 128)], QWEN3MOE, {
          num_experts: 2,
        }),
      /experts of layer 0: "model\.layers\.0\.mlp\.experts\.1\.up_proj\.weight" is \[128,32\]/,
    );
  });
  await t.step("Mixtral's w1/w2/w3 (the converter cannot name them)", () => {
    throws(
      () =>
        keptNvfp4Tensors(
          [
            info("model.layers.0.block_sparse_moe.experts.0.w1.weight", "U8", [64, 32]),
            info("model.layers.0.block_sparse_moe.experts.0.w1.weight_scale", "F8_E4M3", [64, 4]),
          ],
          familyOf("mixtral")!,
          { num_local_experts: 1 },
        ),
      /"model\.layers\.0\.block_sparse_moe\.experts\.0\.w1\.weight" to GGUF: llama\.cpp's converter stacks NVFP4 experts named ….experts.N.gate_proj, up_proj or down_proj only/,
    );
  });
  await t.step("a family whose experts are not mlp.experts", () => {
    throws(
      () =>
        keptNvfp4Tensors(expert(0, 0, "up_proj"), familyOf("mixtral")!, { num_local_experts: 1 }),
      /the mixtral family has no GGUF name for its experts' up_proj, which llama\.cpp's converter stacks as model\.layers\.0\.mlp\.experts\.up_proj\.weight/,
    );
  });
  await t.step("a MoE family whose graph ignores the experts' .scale (qwen2moe)", () => {
    throws(
      () => keptNvfp4Tensors(expert(0, 0, "up_proj"), familyOf("qwen2moe")!, { num_experts: 1 }),
      /llama\.cpp's qwen2moe graph does not multiply in NVFP4's per-tensor scale.*qwen3moe/,
    );
  });
});

Deno.test("kept NVFP4: refused for a family whose llama.cpp graph ignores .scale (qwen2's feed-forward), naming those it is kept for", () => {
  throws(
    () =>
      keptNvfp4Tensors(
        [
          info("model.layers.0.mlp.up_proj.weight", "U8", [128, 32]),
          info("model.layers.0.mlp.up_proj.weight_scale", "F8_E4M3", [128, 4]),
        ],
        familyOf("qwen2")!,
        {},
      ),
    /llama\.cpp's qwen2 graph does not multiply in NVFP4's per-tensor scale \(\.scale\).*supported for llama, mistral, mixtral, mistral3, qwen3[^;]*; APR/,
  );
});

const NEMOTRON_H_MOE = familyOf("nemotron_h_moe")!;

/** One NVFP4 weight of a Nemotron-H block (`backbone.layers.L.PIECE`), `rows` × 64 values. */
function nemotron(layer: number, piece: string, rows = 64): TensorInfo[] {
  const base = `backbone.layers.${layer}.${piece}`;
  return [
    info(`${base}.weight`, "U8", [rows, 32]),
    info(`${base}.weight_scale`, "F8_E4M3", [rows, 4]),
  ];
}

Deno.test("kept NVFP4: Nemotron-H's mixer.experts (ReLU², no gate) stacked as the converter's model.layers.L.mlp.experts names them, after every other weight (it reads no n_routed_experts)", () => {
  const made = keptNvfp4Tensors(
    [
      ...nemotron(1, "mixer.experts.0.up_proj"),
      ...nemotron(1, "mixer.experts.0.down_proj"),
      ...nemotron(1, "mixer.experts.1.up_proj"),
      ...nemotron(1, "mixer.experts.1.down_proj"),
      ...nemotron(1, "mixer.shared_experts.up_proj"),
      ...nemotron(0, "mixer.in_proj", 328),
    ],
    NEMOTRON_H_MOE,
    { n_routed_experts: 2 },
  );
  deepEqual(made.map((m) => [m.info.name, m.info.shape]), [
    ["blk.1.ffn_up_shexp.weight", [64, 64]],
    ["blk.0.ssm_in.weight", [328, 64]],
    ["blk.1.ffn_up_exps.weight", [2, 64, 64]],
    ["blk.1.ffn_down_exps.weight", [2, 64, 64]],
  ]);
});

Deno.test("kept NVFP4: Nemotron-H's router and latent projections refused, which its graph multiplies without their .scale", async (t) => {
  for (
    const [piece, kind, why] of [
      ["mixer.gate", "ffn_gate_inp", "the router's build_lora_mm is given none"],
      [
        "mixer.fc1_latent_proj",
        "ffn_latent_down",
        "the latent projections are a plain ggml_mul_mat",
      ],
      ["mixer.fc2_latent_proj", "ffn_latent_up", "the latent projections are a plain ggml_mul_mat"],
    ] as const
  ) {
    await t.step(piece, () => {
      throws(
        () => keptNvfp4Tensors(nemotron(1, piece), NEMOTRON_H_MOE, {}),
        new RegExp(
          `"backbone\\.layers\\.1\\.${piece.replaceAll(".", "\\.")}\\.weight" to GGUF: ` +
            `llama\\.cpp's nemotron_h_moe graph uses ${kind} without its per-tensor scale ` +
            `\\(\\.scale; ${why}\\)`,
        ),
      );
    });
  }
});

Deno.test("kept NVFP4: Nemotron-H's multi-token-prediction experts refused (the converter would stack them with the trunk layer of the same number)", () => {
  throws(
    () =>
      keptNvfp4Tensors(
        [
          ...nemotron(1, "mixer.experts.0.up_proj"),
          info("mtp.layers.1.mixer.experts.0.up_proj.weight", "U8", [64, 32]),
          info("mtp.layers.1.mixer.experts.0.up_proj.weight_scale", "F8_E4M3", [64, 4]),
        ],
        NEMOTRON_H_MOE,
        { num_nextn_predict_layers: 1 },
      ),
    /"mtp\.layers\.1\.mixer\.experts\.0\.up_proj\.weight" to GGUF: llama\.cpp's converter stacks NVFP4 experts of the model's own layers only/,
  );
});

/** One NVFP4 weight (`NAME.weight` codes and scales), `rows` × 64 values. */
function nvfp4(base: string, rows = 64): TensorInfo[] {
  return [
    info(`${base}.weight`, "U8", [rows, 32]),
    info(`${base}.weight_scale`, "F8_E4M3", [rows, 4]),
  ];
}

Deno.test("kept NVFP4: a MoE router refused in every family that keeps NVFP4 (build_moe_ffn multiplies it without a .scale, and llama.cpp loads none)", async (t) => {
  for (
    const [family, router] of [
      ["qwen3moe", "model.layers.0.mlp.gate"],
      ["mellum", "model.layers.0.mlp.gate"],
      ["mixtral", "model.layers.0.block_sparse_moe.gate"],
    ] as const
  ) {
    await t.step(family, () => {
      const f = familyOf(family)!;
      const name = router.replaceAll(".", "\\.");
      throws(
        () => keptNvfp4Tensors(nvfp4(router, 4), f, { num_local_experts: 4 }),
        new RegExp(
          `^RangeError: Cannot convert NVFP4 weight "${name}\\.weight" to GGUF: ` +
            `llama\\.cpp's ${f.ggufArchitecture} graph uses ffn_gate_inp without its per-tensor ` +
            "scale \\(\\.scale; build_moe_ffn's router build_lora_mm is given none, and none is " +
            "loaded\\): llama\\.cpp refuses the converter's file of it \\(its \\.scale and " +
            "\\.input_scale are tensors it does not load\\) or computes it unscaled; APR and " +
            "SafeTensors outputs dequantize it$",
        ),
      );
    });
  }
});

Deno.test("kept NVFP4: the embeddings refused in every family that keeps NVFP4 (build_inp_embd takes their rows without a .scale)", async (t) => {
  const keeping = [...FAMILIES.values()].filter((f) => f.gguf?.nvfp4Scales === true);
  deepEqual(keeping.map((f) => f.name), [
    "llama",
    "mistral",
    "mixtral",
    "mistral3",
    "qwen3",
    "qwen3moe",
    "ministral3",
    "mellum",
    "nemotron_h_moe",
  ]);
  for (const family of keeping) {
    const embeddings = family.name === "nemotron_h_moe"
      ? "backbone.embeddings"
      : "model.embed_tokens";
    await t.step(family.name, () => {
      throws(
        () => keptNvfp4Tensors(nvfp4(embeddings), family, {}),
        new RegExp(
          `"${embeddings.replace(".", "\\.")}\\.weight" to GGUF: llama\\.cpp's ` +
            `${family.ggufArchitecture} graph uses token_embd without its per-tensor scale ` +
            "\\(\\.scale; build_inp_embd takes its rows with ggml_get_rows, and none is loaded\\)",
        ),
      );
    });
  }
});

Deno.test("kept NVFP4: the attention, dense feed-forward and head weights of a family that keeps NVFP4 keep it (their graphs multiply each .scale)", () => {
  const made = keptNvfp4Tensors(
    [
      ...nvfp4("model.layers.0.self_attn.q_proj"),
      ...nvfp4("model.layers.0.mlp.up_proj"),
      ...nvfp4("lm_head"),
    ],
    familyOf("qwen3")!,
    {},
  );
  deepEqual(made.map((m) => m.info.name), [
    "blk.0.attn_q.weight",
    "blk.0.ffn_up.weight",
    "output.weight",
  ]);
});
