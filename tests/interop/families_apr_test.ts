/**
 * Issue 18 item 5: a Hugging Face import of every family is an APR file
 * realizar's `AprTransformer` can run — tensors under the names it looks up
 * (fused `qkv_proj` or split q/k/v, split `gate_up_proj`, MoE as `mlp.gate` +
 * `mlp.experts.E.*_proj`), `rope_type` written, and the sizes its load gate
 * compares with the embedding — and a config.json that disagrees with the
 * embedding is refused at import.
 */

import assert from "node:assert/strict";
import { convertModel } from "../../src/pipeline/convert_model.ts";
import { openModel } from "../../src/pipeline/open_model.ts";
import { runApr, withTempDir } from "../cli/_run_apr.ts";
import { aprFamiliesToJudge, fail, familyDir } from "./_families.ts";

const FAMILIES = aprFamiliesToJudge();

const QWEN35_LINEAR = ["in_proj_qkv", "in_proj_z", "in_proj_b", "in_proj_a"].map((x) =>
  `${x}.weight`
);

/** Hybrid fixtures' linear-attention input projections (layers 0–2 are linear). */
const LINEAR_ATTENTION: Readonly<Record<string, readonly string[]>> = {
  "qwen3-next": ["in_proj_qkvz.weight", "in_proj_ba.weight"],
  "qwen35": QWEN35_LINEAR,
  "qwen35-moe": QWEN35_LINEAR,
  "qwen35-mtp": QWEN35_LINEAR,
  "qwen35-moe-mtp": QWEN35_LINEAR,
  "qwen3-next-mtp": ["in_proj_qkvz.weight", "in_proj_ba.weight"],
};
/** Each name under `prefix` (none when empty), a `.weight` tensor. */
function weights(prefix: string, names: readonly string[]): string[] {
  return under(prefix, names).map((x) => `${x}.weight`);
}

/** Each name under `prefix` (none when empty), as written (no suffix: `A_log`, `D`, biases). */
function under(prefix: string, names: readonly string[]): string[] {
  return names.map((x) => prefix === "" ? x : `${prefix}.${x}`);
}

/** A Mamba-2 mixer's tensors under `prefix` (Bamba's and Granite-H's `mamba`). */
function mamba2Mixer(prefix: string): string[] {
  return [
    ...weights(prefix, ["in_proj", "conv1d", "out_proj", "norm"]),
    ...under(prefix, ["A_log", "D", "dt_bias"]),
  ];
}

/** Granite MoE's tensors: experts as JetMoE's input_linear (gate and up) and output_linear. */
const GRANITEMOE_BLOCK = (l: number) =>
  weights(`model.layers.${l}`, [
    "input_layernorm",
    "self_attn.q_proj",
    "self_attn.k_proj",
    "self_attn.v_proj",
    "self_attn.o_proj",
    "post_attention_layernorm",
    "block_sparse_moe.router.layer",
    "block_sparse_moe.input_linear",
    "block_sparse_moe.output_linear",
  ]);

/** Mamba, Mamba-2 and Falcon Mamba: the checkpoint's `backbone.*`, no RoPE. */
const MAMBA_LAYER = (version: 1 | 2) => (l: number) => {
  const p = `backbone.layers.${l}`;
  return [
    `${p}.norm.weight`,
    ...weights(`${p}.mixer`, ["in_proj", "conv1d", "out_proj"]),
    ...under(`${p}.mixer`, ["A_log", "D", "conv1d.bias"]),
    ...(version === 2
      ? [`${p}.mixer.dt_bias`, `${p}.mixer.norm.weight`]
      : weights(`${p}.mixer`, ["x_proj", "dt_proj"])),
  ];
};
const MAMBA_GLOBALS = ["backbone.embeddings.weight", "backbone.norm_f.weight"];

/** Nemotron-H's layers under `backbone.*`: Mamba-2 (0), MLP or MoE (1), attention (3). */
const NEMOTRON_H_LAYER = (moe: boolean) => (l: number): string[] => {
  const p = `backbone.layers.${l}`;
  const mixer = l === 0
    ? mamba2Mixer(`${p}.mixer`)
    : l === 3
    ? weights(`${p}.mixer`, ["q_proj", "k_proj", "v_proj", "o_proj"])
    : moe
    ? [
      `${p}.mixer.gate.weight`,
      `${p}.mixer.gate.e_score_correction_bias`,
      `${p}.mixer.shared_experts.up_proj.weight`,
      ...[0, 1, 2, 3].map((e) => `${p}.mixer.experts.${e}.up_proj.weight`),
    ]
    : weights(`${p}.mixer`, ["up_proj", "down_proj"]);
  return [`${p}.norm.weight`, ...mixer];
};

/**
 * Nemotron 3 Super's layers ("MEMEM*E"): Mamba-2 (0), LatentMoE (1: the
 * router and shared expert on the hidden state, 8 experts between the latent
 * projections), attention (5).
 */
const NEMOTRON_H_LATENT_LAYER = (l: number): string[] => {
  const p = `backbone.layers.${l}`;
  const mixer = l === 0
    ? mamba2Mixer(`${p}.mixer`)
    : l === 5
    ? weights(`${p}.mixer`, ["q_proj", "k_proj", "v_proj", "o_proj"])
    : [
      `${p}.mixer.gate.weight`,
      `${p}.mixer.gate.e_score_correction_bias`,
      ...weights(`${p}.mixer`, ["fc1_latent_proj", "fc2_latent_proj", "shared_experts.up_proj"]),
      ...[0, 1, 2, 3, 4, 5, 6, 7].map((e) => `${p}.mixer.experts.${e}.up_proj.weight`),
    ];
  return [`${p}.norm.weight`, ...mixer];
};

/** Nemotron 3 Super's multi-token-prediction layer, kept under the checkpoint's `mtp.*` names. */
const NEMOTRON_H_MTP = [
  ...weights("mtp.layers.0", ["enorm", "hnorm", "eh_proj", "norm", "mixer.q_proj"]),
  ...weights("mtp.layers.1", ["norm", "mixer.fc1_latent_proj", "mixer.gate", "final_layernorm"]),
  "mtp.layers.1.mixer.experts.7.down_proj.weight",
];

/**
 * GPT-2's block, StarCoder's too: Conv1D weights stay [in, out] (GPT-2) as
 * transformers stores them.
 */
const GPT2_NAMED = {
  globals: weights("transformer", ["wte", "wpe", "ln_f"]),
  block: (l: number) =>
    weights(`transformer.h.${l}`, [
      "ln_1",
      "attn.c_attn",
      "attn.c_proj",
      "ln_2",
      "mlp.c_fc",
      "mlp.c_proj",
    ]),
  rope: false,
};

/**
 * Fixtures of families realizar has no model for, kept under their
 * checkpoint's names: the whole-model tensors (the embedding first) and each
 * of layers 0 and 1 (a hybrid's fixture puts one kind of layer at each),
 * whether the family rotates Q/K (`rope_type` written) or adds learned
 * positions or none, and the layer count when the fixture's is checked.
 */
const CHECKPOINT_NAMED: Readonly<
  Record<
    string,
    {
      globals: string[];
      block: (layer: number) => string[];
      rope: boolean;
      layers?: number;
      /** The layers checked, when not 0 and 1 (a hybrid's kinds further apart). */
      checked?: readonly number[];
    }
  >
> = {
  gpt2: GPT2_NAMED,
  "gpt-bigcode": GPT2_NAMED,
  // Q/K/V fused per head, as transformers stores them.
  gptneox: {
    globals: weights("", ["gpt_neox.embed_in", "gpt_neox.final_layer_norm", "embed_out"]),
    block: (l) =>
      weights(`gpt_neox.layers.${l}`, [
        "input_layernorm",
        "attention.query_key_value",
        "attention.dense",
        "post_attention_layernorm",
        "mlp.dense_h_to_4h",
        "mlp.dense_4h_to_h",
      ]),
    rope: true,
  },
  // Q/K/V fused per head, as transformers stores them.
  bloom: {
    globals: weights("transformer", ["word_embeddings", "word_embeddings_layernorm", "ln_f"]),
    block: (l) =>
      weights(`transformer.h.${l}`, [
        "input_layernorm",
        "self_attention.query_key_value",
        "self_attention.dense",
        "post_attention_layernorm",
        "mlp.dense_h_to_4h",
        "mlp.dense_4h_to_h",
      ]),
    rope: false,
  },
  // Q/K/V fused per KV group, as transformers stores them.
  falcon: {
    globals: weights("", ["transformer.word_embeddings", "transformer.ln_f", "lm_head"]),
    block: (l) =>
      weights(`transformer.h.${l}`, [
        "ln_attn",
        "ln_mlp",
        "self_attention.query_key_value",
        "self_attention.dense",
        "mlp.dense_h_to_4h",
        "mlp.dense_4h_to_h",
      ]),
    rope: true,
  },
  granitemoe: {
    globals: weights("", ["model.embed_tokens", "model.norm", "lm_head"]),
    block: GRANITEMOE_BLOCK,
    rope: true,
  },
  // The sinks and transformers 5's stacked experts have no `.weight` suffix: not listed.
  "granitemoe-swa": {
    globals: weights("", ["model.embed_tokens", "model.norm", "lm_head"]),
    block: (l) => [
      ...GRANITEMOE_BLOCK(l).filter((x) => !x.includes("block_sparse_moe")),
      ...weights(`model.layers.${l}`, [
        "block_sparse_moe.router",
        "shared_mlp.input_linear",
        "shared_mlp.output_linear",
      ]),
    ],
    rope: true,
  },
  "granitemoe-shared": {
    globals: weights("", ["model.embed_tokens", "model.norm", "lm_head"]),
    block: (l) => [
      ...GRANITEMOE_BLOCK(l),
      ...weights(`model.layers.${l}`, ["shared_mlp.input_linear", "shared_mlp.output_linear"]),
    ],
    rope: true,
  },
  phi2: {
    globals: weights("", ["model.embed_tokens", "model.final_layernorm", "lm_head"]),
    block: (l) =>
      weights(`model.layers.${l}`, [
        "input_layernorm",
        "self_attn.q_proj",
        "self_attn.k_proj",
        "self_attn.v_proj",
        "self_attn.dense",
        "mlp.fc1",
        "mlp.fc2",
      ]),
    rope: true,
  },
  mamba: { globals: MAMBA_GLOBALS, block: MAMBA_LAYER(1), rope: false, layers: 2 },
  "falcon-mamba": { globals: MAMBA_GLOBALS, block: MAMBA_LAYER(1), rope: false, layers: 2 },
  mamba2: { globals: MAMBA_GLOBALS, block: MAMBA_LAYER(2), rope: false, layers: 2 },
  // A Mamba layer with a dense MLP (0) and an attention layer with experts (1).
  jamba: {
    globals: weights("model", ["embed_tokens", "final_layernorm"]),
    block: (l) =>
      l === 0
        ? [
          ...weights("model.layers.0.mamba", [
            "in_proj",
            "conv1d",
            "x_proj",
            "dt_proj",
            "out_proj",
            "dt_layernorm",
          ]),
          ...under("model.layers.0.mamba", ["A_log", "D"]),
          ...weights("model.layers.0.feed_forward", ["gate_proj", "up_proj", "down_proj"]),
        ]
        : [
          ...weights("model.layers.1.self_attn", ["q_proj", "k_proj", "v_proj", "o_proj"]),
          "model.layers.1.feed_forward.router.weight",
          ...[0, 1, 2, 3].map((e) => `model.layers.1.feed_forward.experts.${e}.gate_proj.weight`),
        ],
    rope: false,
  },
  // A convolution layer (0) and an attention layer (1), each with its MLP.
  lfm2: {
    globals: weights("model", ["embed_tokens", "embedding_norm"]),
    block: (l) => [
      ...(l === 0
        ? weights("model.layers.0.conv", ["conv", "in_proj", "out_proj"])
        : weights("model.layers.1.self_attn", [
          "q_proj",
          "k_proj",
          "v_proj",
          "out_proj",
          "q_layernorm",
          "k_layernorm",
        ])),
      ...weights(`model.layers.${l}.feed_forward`, ["w1", "w2", "w3"]),
    ],
    rope: true,
  },
  // A Mamba-2 layer (0) and an attention layer (1), each with its MLP.
  bamba: {
    globals: weights("model", ["embed_tokens", "final_layernorm"]),
    block: (l) => [
      ...(l === 0
        ? mamba2Mixer("model.layers.0.mamba")
        : weights("model.layers.1.self_attn", ["q_proj", "k_proj", "v_proj", "o_proj"])),
      ...weights(`model.layers.${l}.feed_forward`, ["gate_proj", "up_proj", "down_proj"]),
    ],
    rope: true,
  },
  // A Mamba-2 layer (0) and an attention layer (1), each with its MoE and shared MLP.
  "granite-hybrid": {
    globals: weights("model", ["embed_tokens", "norm"]),
    block: (l) => [
      ...(l === 0
        ? mamba2Mixer("model.layers.0.mamba")
        : weights("model.layers.1.self_attn", ["q_proj", "k_proj", "v_proj", "o_proj"])),
      ...weights(`model.layers.${l}`, [
        "block_sparse_moe.input_linear",
        "block_sparse_moe.output_linear",
        "shared_mlp.input_linear",
      ]),
    ],
    rope: true,
  },
  // The experts stay flat, as transformers stores them (no `.weight` suffix).
  dbrx: {
    globals: weights("", ["transformer.wte", "transformer.norm_f", "lm_head"]),
    block: (l) => [
      ...weights(`transformer.blocks.${l}`, [
        "norm_attn_norm.norm_1",
        "norm_attn_norm.attn.Wqkv",
        "norm_attn_norm.attn.out_proj",
        "norm_attn_norm.norm_2",
        "ffn.router.layer",
      ]),
      ...under(`transformer.blocks.${l}.ffn.experts.mlp`, ["w1", "v1", "w2"]),
    ],
    rope: true,
  },
  // A Mamba-2 layer (0), an MLP or MoE layer (1), an attention layer (3), each after its norm.
  "nemotron-h": {
    globals: MAMBA_GLOBALS,
    block: NEMOTRON_H_LAYER(false),
    rope: false,
    checked: [0, 1, 3],
  },
  "nemotron-h-moe": {
    globals: MAMBA_GLOBALS,
    block: NEMOTRON_H_LAYER(true),
    rope: false,
    checked: [0, 1, 3],
  },
  "nemotron-h-latent": {
    globals: MAMBA_GLOBALS,
    block: NEMOTRON_H_LATENT_LAYER,
    rope: false,
    checked: [0, 1, 5],
  },
  "nemotron-h-latent-mtp": {
    globals: [...MAMBA_GLOBALS, ...NEMOTRON_H_MTP],
    block: NEMOTRON_H_LATENT_LAYER,
    rope: false,
    checked: [0, 1, 5],
  },
  // Attention and Mamba-2 side by side in every layer, the multipliers unfolded.
  "falcon-h1": {
    globals: weights("model", ["embed_tokens", "final_layernorm"]),
    block: (l) => [
      ...weights(`model.layers.${l}.mamba`, ["in_proj", "conv1d", "out_proj"]),
      ...under(`model.layers.${l}.mamba`, ["A_log", "D", "dt_bias"]),
      ...weights(`model.layers.${l}.self_attn`, ["q_proj", "k_proj", "v_proj", "o_proj"]),
      ...weights(`model.layers.${l}.feed_forward`, ["gate_proj", "up_proj", "down_proj"]),
      `model.layers.${l}.pre_ff_layernorm.weight`,
    ],
    rope: true,
  },
  // As lfm2, with a dense first layer (0) and experts on the others (1).
  "lfm2-moe": {
    globals: weights("model", ["embed_tokens", "embedding_norm"]),
    block: (l) =>
      l === 0
        ? [
          ...weights("model.layers.0.conv", ["conv", "in_proj", "out_proj"]),
          ...weights("model.layers.0.feed_forward", ["w1", "w2", "w3"]),
        ]
        : [
          "model.layers.1.feed_forward.gate.weight",
          "model.layers.1.feed_forward.expert_bias",
          ...[0, 1, 2, 3].map((e) => `model.layers.1.feed_forward.experts.${e}.w1.weight`),
        ],
    rope: true,
  },
  // A KDA layer with the dense MLP (0) and an MLA layer with experts (1); no RoPE.
  "kimi-linear": {
    globals: weights("", ["model.embed_tokens", "model.norm", "lm_head"]),
    block: (l) => {
      const p = `model.layers.${l}`;
      return l === 0
        ? [
          ...weights(`${p}.self_attn`, [
            ...["q", "k", "v"].flatMap((x) => [`${x}_proj`, `${x}_conv1d`]),
            ...["f_a_proj", "f_b_proj", "b_proj", "g_a_proj", "g_b_proj", "o_norm", "o_proj"],
          ]),
          ...under(`${p}.self_attn`, ["A_log", "dt_bias"]),
          ...weights(`${p}.mlp`, ["gate_proj", "up_proj", "down_proj"]),
        ]
        : [
          ...weights(`${p}.self_attn`, [
            "q_proj",
            "kv_a_proj_with_mqa",
            "kv_a_layernorm",
            "kv_b_proj",
            "o_proj",
          ]),
          ...weights(`${p}.block_sparse_moe`, [
            "gate",
            ...["gate_proj", "up_proj", "down_proj"].map((x) => `shared_experts.${x}`),
            ...[0, 1, 2, 3].flatMap((e) => ["w1", "w2", "w3"].map((x) => `experts.${e}.${x}`)),
          ]),
          `${p}.block_sparse_moe.gate.e_score_correction_bias`,
        ];
    },
    rope: false,
  },
  // Hy4: MLA with its gate, sinks and DSA indexer, the hyper-connections' parameters
  // (no `.weight`, as published), a dense layer (0) and one with transformers 5's
  // stacked experts (1).
  "hy-v4": {
    globals: [
      ...weights("", ["model.embed_tokens", "model.norm", "lm_head"]),
      ...under("model.hc_head", ["hc_head_fn", "hc_head_base", "hc_head_scale"]),
    ],
    block: (l) => {
      const p = `model.layers.${l}`;
      return [
        ...weights(`${p}.self_attn`, [
          "q_a_proj",
          "q_b_proj",
          "kv_a_proj_with_mqa",
          "kv_b_proj",
          "o_proj",
          "linear_gate",
          "indexer.wq_b",
          "indexer.wk",
        ]),
        `${p}.self_attn.learnable_sink_param`,
        ...under(`${p}.hc_attn_layer.hc_pre`, ["hc_fn", "hc_base", "hc_scale"]),
        ...under(`${p}.hc_mlp_layer.hc_pre`, ["hc_fn", "hc_base", "hc_scale"]),
        ...(l === 0 ? weights(`${p}.mlp`, ["gate_proj", "up_proj", "down_proj"]) : [
          `${p}.mlp.gate.weight`,
          `${p}.mlp.gate.e_score_correction_bias`,
          ...under(`${p}.mlp.experts`, ["gate_up_proj", "down_proj"]),
          ...weights(`${p}.mlp.shared_experts`, ["gate_proj", "up_proj", "down_proj"]),
        ]),
      ];
    },
    rope: true,
    layers: 3,
  },
  // DeepSeek-V4 under its published names: hyper-connections (bare parameters), the
  // windowed layer 0 with hash routing, and CSA layer 1 with its compressor and indexer,
  // routed experts as stored (MXFP4 codes and scales).
  deepseek4: {
    globals: [
      ...weights("", ["embed", "norm", "head"]),
      "hc_head_fn",
      "hc_head_base",
      "hc_head_scale",
    ],
    block: (l) => {
      const p = `layers.${l}`;
      return [
        ...weights(`${p}.attn`, ["wq_a", "q_norm", "wq_b", "wkv", "kv_norm", "wo_a", "wo_b"]),
        `${p}.attn.attn_sink`,
        ...under(p, ["hc_attn_fn", "hc_attn_base", "hc_attn_scale", "hc_ffn_fn", "hc_ffn_base"]),
        ...weights(`${p}.ffn`, [
          "gate",
          "shared_experts.w1",
          "shared_experts.w2",
          "shared_experts.w3",
        ]),
        ...[0, 1, 2, 3].flatMap((
          e,
        ) => [`${p}.ffn.experts.${e}.w1.weight`, `${p}.ffn.experts.${e}.w1.scale`]),
        ...(l === 0 ? [`${p}.ffn.gate.tid2eid`] : [
          `${p}.ffn.gate.bias`,
          ...weights(`${p}.attn.compressor`, ["wkv", "wgate", "norm"]),
          `${p}.attn.compressor.ape`,
          ...weights(`${p}.attn.indexer`, ["wq_b", "weights_proj", "compressor.wkv"]),
        ]),
      ];
    },
    rope: true,
    layers: 4,
  },
  // Hyper-connections for norms; a linear layer with PLE (1), the attention layer with its indexer (3).
  qwen4exp: {
    globals: weights("", ["model.embed_tokens", "model.hyper_connection_mixer.hc_norm", "lm_head"]),
    block: (l) => [
      ...weights(`model.layers.${l}`, [
        "attn_hyper_connection.hc_norm",
        "mlp_hyper_connection.block_inject_weight",
        "mlp.gate",
        "mlp.experts.0.gate_proj",
      ]),
      ...(l === 1
        ? [
          ...weights("model.layers.1.linear_attn", QWEN35_LINEAR.map((x) => x.slice(0, -7))),
          ...weights("model.layers.1.ple", ["key_proj", "conv1d"]),
          ...weights("model.layers.1.ple.ple_embedding.ngram_embedding", ["shard_0", "shard_1"]),
        ]
        : weights("model.layers.3.self_attn", ["q_proj", "indexer.index_qk_proj"])),
    ],
    rope: true,
    checked: [1, 3],
  },
  // The L and H stacks (layer 0 of each), fused projections as stored, the L state's start.
  "hrm-text": {
    globals: [...weights("", ["model.embed_tokens", "lm_head"]), "model.z_L_init"],
    block: (l) =>
      l === 0
        ? ["L", "H"].flatMap((s) =>
          weights(`model.${s}_module.layers.0`, [
            "attn.gqkv_proj",
            "attn.o_proj",
            "mlp.gate_up_proj",
            "mlp.down_proj",
          ])
        )
        : [],
    rope: true,
  },
};

Deno.test("families: HF → APR names tensors as realizar's AprTransformer looks them up, with rope_type and the sizes its load gate checks", async (t) => {
  await withTempDir(async (dir) => {
    for (const family of FAMILIES) {
      await t.step(family, async () => {
        const apr = `${dir}/${family}.apr`;
        await convertModel(familyDir(family), apr);
        const model = await openModel(apr);
        let names: Set<string>;
        let metadata: Record<string, unknown>;
        let embedding: readonly number[] = [];
        try {
          names = new Set(model.names());
          metadata = model.header.metadata as Record<string, unknown>;
          const embed = CHECKPOINT_NAMED[family]?.globals[0] ?? "model.embed_tokens.weight";
          if (names.has(embed)) embedding = model.tensor(embed).info.shape;
        } finally {
          await model.close();
        }
        const problems: string[] = [];
        const need = (name: string) => {
          if (!names.has(name)) problems.push(`no ${name}`);
        };
        const refuse = (name: string, why: string) => {
          if (names.has(name)) problems.push(`${name}: ${why}`);
        };
        const own = CHECKPOINT_NAMED[family];
        if (own !== undefined) {
          // realizar has no model for it: APR keeps the checkpoint's tensors under its names.
          for (const x of [...own.globals, ...(own.checked ?? [0, 1]).flatMap(own.block)]) need(x);
          if ((typeof metadata.rope_type === "number") !== own.rope) {
            problems.push(
              `rope_type ${metadata.rope_type} for ${own.rope ? "RoPE" : "no rotary positions"}`,
            );
          }
          const [rows, cols] = embedding;
          if (metadata.vocab_size !== rows || metadata.hidden_size !== cols) {
            problems.push(
              `vocab_size ${metadata.vocab_size} × hidden_size ` +
                `${metadata.hidden_size}, embedding ${rows} × ${cols}`,
            );
          }
          if (own.layers !== undefined && metadata.num_layers !== own.layers) {
            problems.push(`num_layers ${metadata.num_layers}, the fixture has ${own.layers}`);
          }
          fail(family, problems);
          return;
        }
        need("model.embed_tokens.weight");
        // OLMo 1's LayerNorms have no weights: there is no norm tensor to store.
        if (family !== "olmo") need("model.norm.weight");
        if (family === "jamba") {
          // realizar has no hybrid model: APR keeps the checkpoint's tensors, a
          // Mamba layer with a dense MLP (0) and an attention layer with experts (1).
          need("model.final_layernorm.weight");
          for (const x of ["in_proj", "conv1d", "x_proj", "dt_proj", "out_proj", "dt_layernorm"]) {
            need(`model.layers.0.mamba.${x}.weight`);
          }
          for (const x of ["A_log", "D"]) need(`model.layers.0.mamba.${x}`);
          for (const x of ["gate", "up", "down"]) {
            need(`model.layers.0.feed_forward.${x}_proj.weight`);
          }
          for (const x of ["q", "k", "v", "o"]) need(`model.layers.1.self_attn.${x}_proj.weight`);
          need("model.layers.1.feed_forward.router.weight");
          for (let e = 0; e < 4; e++) {
            need(`model.layers.1.feed_forward.experts.${e}.gate_proj.weight`);
          }
          if (metadata.rope_type !== undefined) problems.push("rope_type for a model without RoPE");
          fail(family, problems);
          return;
        }
        if (family === "lfm2") {
          // realizar has no LFM2 model: APR keeps the checkpoint's tensors, a
          // convolution layer (0) and an attention layer (1).
          need("model.embedding_norm.weight");
          for (const x of ["conv", "in_proj", "out_proj"]) need(`model.layers.0.conv.${x}.weight`);
          for (
            const x of ["q_proj", "k_proj", "v_proj", "out_proj", "q_layernorm", "k_layernorm"]
          ) {
            need(`model.layers.1.self_attn.${x}.weight`);
          }
          for (const layer of [0, 1]) {
            for (const x of ["w1", "w2", "w3"]) {
              need(`model.layers.${layer}.feed_forward.${x}.weight`);
            }
          }
          if (typeof metadata.rope_type !== "number") problems.push("no rope_type");
          fail(family, problems);
          return;
        }
        if (family === "bamba") {
          // realizar has no hybrid model: APR keeps the checkpoint's tensors,
          // a Mamba-2 layer (0) and an attention layer (1), each with its MLP.
          need("model.final_layernorm.weight");
          for (const x of ["in_proj", "conv1d", "out_proj", "norm"]) {
            need(`model.layers.0.mamba.${x}.weight`);
          }
          for (const x of ["A_log", "D", "dt_bias"]) need(`model.layers.0.mamba.${x}`);
          for (const x of ["q", "k", "v", "o"]) need(`model.layers.1.self_attn.${x}_proj.weight`);
          for (const layer of [0, 1]) {
            for (const x of ["gate", "up", "down"]) {
              need(`model.layers.${layer}.feed_forward.${x}_proj.weight`);
            }
          }
          if (typeof metadata.rope_type !== "number") problems.push("no rope_type");
          fail(family, problems);
          return;
        }
        if (family === "granite-hybrid") {
          // realizar has no hybrid model: APR keeps the checkpoint's tensors,
          // a Mamba-2 layer (0) and an attention layer (1), each with its MoE.
          for (const x of ["in_proj", "conv1d", "out_proj", "norm"]) {
            need(`model.layers.0.mamba.${x}.weight`);
          }
          for (const x of ["A_log", "D", "dt_bias"]) need(`model.layers.0.mamba.${x}`);
          for (const x of ["q", "k", "v", "o"]) need(`model.layers.1.self_attn.${x}_proj.weight`);
          for (const layer of [0, 1]) {
            for (const x of ["block_sparse_moe.input_linear", "block_sparse_moe.output_linear"]) {
              need(`model.layers.${layer}.${x}.weight`);
            }
            need(`model.layers.${layer}.shared_mlp.input_linear.weight`);
          }
          const [rows, cols] = embedding;
          if (metadata.vocab_size !== rows || metadata.hidden_size !== cols) {
            problems.push(
              `sizes ${metadata.vocab_size}×${metadata.hidden_size}, embedding ${rows}×${cols}`,
            );
          }
          if (typeof metadata.rope_type !== "number") problems.push("no rope_type");
          fail(family, problems);
          return;
        }
        for (const layer of [0, 1]) {
          const p = `model.layers.${layer}`;
          if (
            family.startsWith("deepseek") ||
            ["glm4moe-lite", "glm-dsa", "youtu", "minicpm3"].includes(family)
          ) {
            // realizar has no DeepSeek (or GLM-4.7-Flash, GLM-5, Youtu, MiniCPM3) model: APR keeps the checkpoint's MLA tensors,
            // its shared experts under the name realizar's loader asks for (issue 34 §3).
            for (const x of ["q_a_proj", "q_b_proj", "kv_a_proj_with_mqa", "kv_b_proj", "o_proj"]) {
              need(`${p}.self_attn.${x}.weight`);
            }
            // Youtu-LLM's and MiniCPM3's MLP is dense in every layer.
            if (layer === 0 || family === "youtu" || family === "minicpm3") {
              for (const x of ["gate", "up", "down"]) need(`${p}.mlp.${x}_proj.weight`);
            } else {
              need(`${p}.mlp.gate.weight`);
              for (const x of ["gate", "up", "down"]) {
                need(`${p}.mlp.shared_expert.${x}_proj.weight`);
                refuse(
                  `${p}.mlp.shared_experts.${x}_proj.weight`,
                  "realizar asks for shared_expert",
                );
                for (let e = 0; e < 4; e++) need(`${p}.mlp.experts.${e}.${x}_proj.weight`);
              }
            }
            continue;
          }
          if (family === "glm4") {
            // realizar has no GLM-4 model: APR keeps the checkpoint's tensors, its
            // MLP's fused gate and up split as Phi-3's, which realizar's loader
            // finds (it never looks up gate_up_proj: issue 34 §3).
            for (const x of ["q", "k", "v", "o"]) need(`${p}.self_attn.${x}_proj.weight`);
            for (const x of ["gate", "up", "down"]) need(`${p}.mlp.${x}_proj.weight`);
            refuse(`${p}.mlp.gate_up_proj.weight`, "realizar never looks up gate_up_proj");
            for (const x of ["post_self_attn", "post_attention", "post_mlp"]) {
              need(`${p}.${x}_layernorm.weight`);
            }
            continue;
          }
          const linear = LINEAR_ATTENTION[family];
          if (linear !== undefined) {
            // realizar has no gated DeltaNet: APR keeps the checkpoint's linear
            // attention (layers 0–2; layer 3 attends) under its own names.
            for (const x of [...linear, "A_log", "dt_bias", "conv1d.weight", "norm.weight"]) {
              need(`${p}.linear_attn.${x}`);
            }
            need(`${p}.linear_attn.out_proj.weight`);
          } else if (names.has(`${p}.self_attn.qkv_proj.weight`)) {
            refuse(`${p}.self_attn.q_proj.weight`, "both fused qkv_proj and split q_proj");
          } else {
            for (const x of ["q", "k", "v", "o"]) need(`${p}.self_attn.${x}_proj.weight`);
          }
          if (linear === undefined) need(`${p}.self_attn.o_proj.weight`);
          refuse(
            `${p}.mlp.gate_up_proj.weight`,
            "realizar does not know fused gate_up_proj; split it",
          );
          if (family === "gpt-oss") {
            // realizar has no gpt-oss model: APR keeps the checkpoint's own tensors.
            for (const x of ["gate_up_proj", "gate_up_proj_bias", "down_proj", "down_proj_bias"]) {
              need(`${p}.mlp.experts.${x}`);
            }
            need(`${p}.mlp.router.weight`);
            need(`${p}.self_attn.sinks`);
            continue;
          }
          const moe = [...names].some((n) =>
            n.startsWith(`${p}.mlp.experts.`) ||
            n.startsWith(`${p}.block_sparse_moe.`)
          );
          if (moe) {
            need(`${p}.mlp.gate.weight`);
            for (let e = 0; e < 4; e++) {
              for (const x of ["gate", "up", "down"]) {
                need(`${p}.mlp.experts.${e}.${x}_proj.weight`);
              }
            }
          } else if (family === "starcoder2") {
            need(`${p}.mlp.c_fc.weight`);
            need(`${p}.mlp.c_proj.weight`);
          } else if (["arcee", "jais2", "nemotron"].includes(family)) {
            // Arcee's, Jais 2's and Nemotron's feed-forward has no gate (ReLU² of up): the checkpoint's two.
            for (const x of ["up", "down"]) need(`${p}.mlp.${x}_proj.weight`);
          } else if (family === "apertus") {
            // Apertus's has none either (xIELU of up), and APR keeps xIELU's scalars as tensors.
            for (const x of ["up", "down"]) need(`${p}.mlp.${x}_proj.weight`);
            for (const x of ["alpha_p", "alpha_n", "beta", "eps"]) need(`${p}.mlp.act_fn.${x}`);
          } else {
            for (const x of ["gate", "up", "down"]) need(`${p}.mlp.${x}_proj.weight`);
          }
        }
        if (typeof metadata.rope_type !== "number") problems.push("no rope_type in the metadata");
        // realizar's load gate (PMAT-906): the sizes it reads must match the embedding.
        const [rows, cols] = embedding;
        if (metadata.vocab_size !== rows) {
          problems.push(`vocab_size ${metadata.vocab_size}, embedding rows ${rows}`);
        }
        if (metadata.hidden_size !== cols) {
          problems.push(`hidden_size ${metadata.hidden_size}, embedding columns ${cols}`);
        }
        const layers = Number(metadata.num_layers);
        if (!(layers >= 2) || !names.has(`model.layers.${layers - 1}.self_attn.o_proj.weight`)) {
          problems.push(`num_layers ${metadata.num_layers} does not match the layers`);
        }
        fail(family, problems);
      });
    }
  });
});

Deno.test("families: a config.json whose vocab_size or hidden_size disagrees with the embedding is refused at import, in one line, with no file", async (t) => {
  for (const [key, value] of [["vocab_size", 400], ["hidden_size", 96]] as const) {
    await t.step(`${key} ${value} for a 384×64 embedding`, async () => {
      await withTempDir(async (dir) => {
        const source = `${dir}/llama`;
        await Deno.mkdir(source);
        for (const entry of Deno.readDirSync(familyDir("llama"))) {
          await Deno.copyFile(`${familyDir("llama")}/${entry.name}`, `${source}/${entry.name}`);
        }
        const config = JSON.parse(await Deno.readTextFile(`${source}/config.json`));
        config[key] = value;
        await Deno.writeTextFile(`${source}/config.json`, JSON.stringify(config, null, 2));
        const out = `${dir}/llama.apr`;
        const run = await runApr(["convert", source, "-o", out]);
        assert.equal(run.code, 2, run.stderr);
        const lines = run.stderr.trim().split("\n");
        assert.equal(lines.length, 1, run.stderr);
        assert.match(lines[0]!, new RegExp(key));
        assert.match(lines[0]!, /config\.json/);
        assert.match(lines[0]!, new RegExp(String(value)));
        await assert.rejects(Deno.stat(out), Deno.errors.NotFound);
      });
    });
  }
});
