/**
 * The multimodal tables (`src/arch/multimodal.ts`, `src/arch/mmproj.ts`) and
 * the config reading they need, on hand-written names and configs: both key
 * layouts, every tensor family of Gemma 3's vision GGUF, M-RoPE sections, and
 * the class read from `text_config` when transformers 4.57 put it there.
 */

import assert from "node:assert/strict";
import { languageModelName, multimodalTextFamily } from "../../src/arch/multimodal.ts";
import { MMPROJ_CLASSES } from "../../src/arch/mmproj.ts";
import { KvWriter } from "../../src/arch/kv.ts";
import { writeTextModelKv } from "../../src/arch/text_model.ts";
import { aprMetadataFromHf } from "../../src/formats/safetensors/hf_metadata.ts";

Deno.test("languageModelName: both layouts to the text model's names; vision tensors are not", () => {
  const cases: [string, string | undefined][] = [
    [
      "language_model.model.layers.3.self_attn.q_proj.weight",
      "model.layers.3.self_attn.q_proj.weight",
    ],
    ["language_model.model.embed_tokens.weight", "model.embed_tokens.weight"],
    ["language_model.lm_head.weight", "lm_head.weight"],
    ["model.language_model.layers.0.mlp.down_proj.weight", "model.layers.0.mlp.down_proj.weight"],
    ["model.language_model.norm.weight", "model.norm.weight"],
    ["lm_head.weight", "lm_head.weight"],
    ["model.layers.0.self_attn.q_proj.bias", "model.layers.0.self_attn.q_proj.bias"], // Qwen2-VL, Hub
    ["vision_tower.vision_model.encoder.layers.0.mlp.fc1.weight", undefined],
    ["model.vision_tower.encoder.layers.0.mlp.fc1.weight", undefined],
    ["multi_modal_projector.mm_input_projection_weight", undefined],
    ["model.multi_modal_projector.linear_1.weight", undefined],
    ["visual.blocks.0.attn.qkv.weight", undefined],
    ["model.visual.patch_embed.proj.weight", undefined],
    ["image_newline", undefined],
    // Llama 4: the Hub's layout (what transformers 4.57 and 5.18 both save) and module paths.
    [
      "language_model.model.layers.1.feed_forward.experts.gate_up_proj",
      "model.layers.1.feed_forward.experts.gate_up_proj",
    ],
    ["vision_model.model.layers.0.mlp.fc1.weight", undefined],
    ["model.vision_model.patch_embedding.linear.weight", undefined],
    ["vision_model.class_embedding", undefined],
    // SmolVLM and Idefics3: text_model renamed as LlamaModel.filter_tensors does; the connector is vision.
    ["model.text_model.layers.0.self_attn.q_proj.weight", "model.layers.0.self_attn.q_proj.weight"],
    ["model.text_model.embed_tokens.weight", "model.embed_tokens.weight"],
    ["model.connector.modality_projection.proj.weight", undefined],
    ["model.vision_model.encoder.layers.0.mlp.fc1.weight", undefined],
  ];
  for (const [name, want] of cases) assert.equal(languageModelName(name), want, name);
});

Deno.test("multimodalTextFamily: the language model's family, from text_config for LLaVA", () => {
  assert.equal(multimodalTextFamily("Gemma3ForConditionalGeneration", {}), "gemma3");
  assert.equal(multimodalTextFamily("Qwen2_5_VLForConditionalGeneration", {}), "qwen2vl");
  assert.equal(multimodalTextFamily("Qwen2VLForConditionalGeneration", {}), "qwen2vl");
  assert.equal(multimodalTextFamily("Mistral3ForConditionalGeneration", {}), "mistral3");
  // Ministral 3 as published: the same class around a `ministral3` text config (its YaRN keys).
  assert.equal(
    multimodalTextFamily("Mistral3ForConditionalGeneration", {
      text_config: { model_type: "ministral3" },
    }),
    "ministral3",
  );
  // Mistral 4's DeepSeek-V2-style text model (the converter's Mistral4Model) is not claimed.
  assert.equal(
    multimodalTextFamily("Mistral3ForConditionalGeneration", {
      text_config: { model_type: "mistral4" },
    }),
    undefined,
  );
  // Qwen3.5 as published: its image-text classes around the qwen35 / qwen35moe text models.
  assert.equal(multimodalTextFamily("Qwen3_5ForConditionalGeneration", {}), "qwen35");
  assert.equal(multimodalTextFamily("Qwen3_5MoeForConditionalGeneration", {}), "qwen35moe");
  // SmolVLM and Idefics3: a Llama text model the converter knows by text_config.architectures.
  for (const cls of ["SmolVLMForConditionalGeneration", "Idefics3ForConditionalGeneration"]) {
    for (const arch of ["VLlama3ForCausalLM", "LlamaForCausalLM"]) {
      assert.equal(
        multimodalTextFamily(cls, { text_config: { model_type: "llama", architectures: [arch] } }),
        "llama",
      );
    }
    // Without one the converter has no text class for it: not claimed.
    assert.equal(multimodalTextFamily(cls, { text_config: { model_type: "llama" } }), undefined);
  }
  // LFM2-VL: an LFM2 text model the converter knows by text_config.architectures, or none.
  for (const arch of ["Lfm2ForCausalLM", "LFM2ForCausalLM"]) {
    assert.equal(
      multimodalTextFamily("Lfm2VlForConditionalGeneration", {
        text_config: { model_type: "lfm2", architectures: [arch] },
      }),
      "lfm2",
    );
  }
  assert.equal(
    multimodalTextFamily("Lfm2VlForConditionalGeneration", { text_config: { model_type: "lfm2" } }),
    undefined,
  );
  // GLM-4.1V and GLM-4.5V: the converter's Glm4Model and Glm4MoeModel.
  assert.equal(multimodalTextFamily("Glm4vForConditionalGeneration", {}), "glm4");
  assert.equal(multimodalTextFamily("Glm4vMoeForConditionalGeneration", {}), "glm4moe");
  assert.equal(multimodalTextFamily("LlavaForConditionalGeneration", {}), "llama");
  assert.equal(
    multimodalTextFamily("LlavaForConditionalGeneration", {
      text_config: { model_type: "mistral" },
    }),
    "mistral",
  );
  // A text model llama.cpp's LlamaModel would misread is not claimed.
  assert.equal(
    multimodalTextFamily("LlavaForConditionalGeneration", { text_config: { model_type: "qwen2" } }),
    undefined,
  );
  assert.equal(multimodalTextFamily("Llama4ForConditionalGeneration", {}), "llama4");
  assert.equal(multimodalTextFamily("LlamaForCausalLM", {}), undefined);
});

Deno.test("Gemma 3's vision GGUF names: SigLIP in both layouts, the projector, the skipped head", () => {
  const g = MMPROJ_CLASSES["Gemma3ForConditionalGeneration"]!;
  const cases: [string, string | undefined][] = [
    ["multi_modal_projector.mm_input_projection_weight", "mm.input_projection.weight"],
    ["model.multi_modal_projector.mm_soft_emb_norm.weight", "mm.soft_emb_norm.weight"],
    ["vision_tower.vision_model.embeddings.patch_embedding.bias", "v.patch_embd.bias"],
    ["model.vision_tower.embeddings.position_embedding.weight", "v.position_embd.weight"],
    [
      "vision_tower.vision_model.encoder.layers.11.self_attn.out_proj.weight",
      "v.blk.11.attn_out.weight",
    ],
    ["model.vision_tower.encoder.layers.0.layer_norm2.bias", "v.blk.0.ln2.bias"],
    ["vision_tower.vision_model.encoder.layers.2.mlp.fc1.weight", "v.blk.2.ffn_up.weight"],
    ["vision_tower.vision_model.post_layernorm.weight", "v.post_ln.weight"],
    ["vision_tower.vision_model.head.mlp.fc1.weight", undefined],
    ["language_model.model.layers.0.mlp.up_proj.weight", undefined],
    ["model.language_model.norm.weight", undefined],
  ];
  for (const [name, want] of cases) assert.equal(g.pieces(name, [4, 4])[0]?.name, want, name);
  assert.equal(g.shift("mm.soft_emb_norm.weight"), 1);
  assert.equal(g.shift("v.post_ln.weight"), 0);
  assert.equal(g.forcedType("mm.input_projection.weight", "F32"), "F16");
  assert.equal(g.forcedType("v.patch_embd.weight", "BF16"), "F32");
  assert.equal(g.forcedType("v.blk.0.attn_q.weight", "F32"), undefined);
});

Deno.test("rope.dimension_sections: mrope_section padded to 4, from rope_scaling or rope_parameters", () => {
  for (
    const config of [
      { rope_scaling: { type: "mrope", mrope_section: [16, 24, 24] }, rope_theta: 1e6 },
      {
        text_config: {
          rope_parameters: { rope_type: "default", mrope_section: [16, 24, 24], rope_theta: 1e6 },
        },
      },
    ]
  ) {
    const w = new KvWriter({ num_hidden_layers: 2, ...config }, "qwen2vl");
    writeTextModelKv(w);
    const e = w.entries().get("qwen2vl.rope.dimension_sections");
    assert.deepEqual(e, { type: "ARRAY", array_types: ["INT32"], value: [16, 24, 24, 0] });
  }
  const bad = new KvWriter(
    { num_hidden_layers: 2, rope_scaling: { mrope_section: [1.5] } },
    "qwen2vl",
  );
  assert.throws(() => writeTextModelKv(bad), RangeError);
});

Deno.test("aprMetadataFromHf: a multimodal config gives the text family and text_config's numbers", () => {
  const m = aprMetadataFromHf({
    config: {
      // transformers 4.57's Qwen2.5-VL: the class only inside text_config.
      model_type: "qwen2_5_vl",
      text_config: {
        architectures: ["Qwen2_5_VLForConditionalGeneration"],
        hidden_size: 64,
        num_hidden_layers: 2,
        num_attention_heads: 4,
        num_key_value_heads: 2,
        vocab_size: 384,
        rope_theta: 1e6,
        bos_token_id: 7,
      },
      vision_config: { depth: 2 },
    },
  });
  assert.equal(m.architecture, "qwen2vl");
  assert.equal(m.hf_architecture, "Qwen2_5_VLForConditionalGeneration");
  assert.equal(m.hidden_size, 64);
  assert.equal(m.num_layers, 2);
  assert.equal(m.rope_type, 2);
  assert.equal(m["tokenizer.bos_token_id"], 7);
  // Gemma 3 in transformers 5: the global layers' base, nested.
  const g = aprMetadataFromHf({
    config: {
      architectures: ["Gemma3ForConditionalGeneration"],
      text_config: {
        rope_parameters: {
          full_attention: { rope_type: "linear", factor: 8, rope_theta: 1e6 },
          sliding_attention: { rope_type: "default", rope_theta: 1e4 },
        },
      },
    },
    preprocessorConfig: { image_mean: [0.5, 0.5, 0.5], image_std: [0.5, 0.5, 0.5] },
  });
  assert.equal(g.architecture, "gemma3");
  assert.equal(g.rope_theta, 1e6);
  assert.deepEqual(g["hf_preprocessor_config"], {
    image_mean: [0.5, 0.5, 0.5],
    image_std: [0.5, 0.5, 0.5],
  });
});

Deno.test("Qwen2.5-VL's vision GGUF: qkv split in three, the two-frame patch kernel in two, both layouts", () => {
  const q = MMPROJ_CLASSES["Qwen2_5_VLForConditionalGeneration"]!;
  const qkv = q.pieces("visual.blocks.2.attn.qkv.weight", [6, 4]);
  assert.deepEqual(qkv.map((p) => [p.name, p.shape, p.ranges]), [
    ["v.blk.2.attn_q.weight", [2, 4], [[0, 8]]],
    ["v.blk.2.attn_k.weight", [2, 4], [[8, 16]]],
    ["v.blk.2.attn_v.weight", [2, 4], [[16, 24]]],
  ]);
  const bias = q.pieces("model.visual.blocks.0.attn.qkv.bias", [6]);
  assert.deepEqual(bias.map((p) => [p.name, p.shape, p.ranges]), [
    ["v.blk.0.attn_q.bias", [2], [[0, 2]]],
    ["v.blk.0.attn_k.bias", [2], [[2, 4]]],
    ["v.blk.0.attn_v.bias", [2], [[4, 6]]],
  ]);
  // [out 2, in 1, frames 2, 2, 2]: each (out, in) pair holds frame 0's 4 values, then frame 1's.
  const frames = q.pieces("visual.patch_embed.proj.weight", [2, 1, 2, 2, 2]);
  assert.deepEqual(frames.map((p) => [p.name, p.shape, p.ranges]), [
    ["v.patch_embd.weight", [2, 1, 2, 2], [[0, 4], [8, 12]]],
    ["v.patch_embd.weight.1", [2, 1, 2, 2], [[4, 8], [12, 16]]],
  ]);
  assert.throws(() => q.pieces("visual.patch_embed.proj.weight", [2, 1, 3, 2, 2]), RangeError);
  // A hostile shape is refused before millions of ranges are planned.
  assert.throws(
    () => q.pieces("visual.patch_embed.proj.weight", [1 << 20, 2, 2, 1, 1]),
    RangeError,
  );
  assert.throws(() => q.pieces("visual.blocks.0.attn.qkv.weight", [5, 4]), RangeError);
  const names: [string, string | undefined][] = [
    ["visual.blocks.1.attn.proj.weight", "v.blk.1.attn_out.weight"],
    ["model.visual.blocks.1.norm1.weight", "v.blk.1.ln1.weight"],
    ["visual.blocks.1.mlp.gate_proj.bias", "v.blk.1.ffn_gate.bias"],
    ["visual.merger.ln_q.weight", "v.post_ln.weight"],
    ["model.visual.merger.mlp.2.weight", "mm.2.weight"],
    ["model.language_model.layers.0.mlp.up_proj.weight", undefined],
    ["lm_head.weight", undefined],
  ];
  for (const [name, want] of names) assert.equal(q.pieces(name, [4, 4])[0]?.name, want, name);
  assert.equal(q.forcedType("v.patch_embd.weight.1", "BF16"), "F32");
  assert.equal(q.forcedType("v.patch_embd.weight", "F16"), "F16");
});

Deno.test("Mistral 3's vision GGUF: Pixtral's names in both layouts, Q and K rows interleaved per head", () => {
  const m = MMPROJ_CLASSES["Mistral3ForConditionalGeneration"]!;
  const names: [string, string | undefined][] = [
    ["vision_tower.transformer.layers.4.attention.q_proj.weight", "v.blk.4.attn_q.weight"],
    ["model.vision_tower.transformer.layers.0.attention.o_proj.weight", "v.blk.0.attn_out.weight"],
    ["vision_tower.transformer.layers.0.attention_norm.weight", "v.blk.0.ln1.weight"],
    ["vision_tower.transformer.layers.0.feed_forward.gate_proj.weight", "v.blk.0.ffn_gate.weight"],
    ["vision_tower.ln_pre.weight", "v.pre_ln.weight"],
    ["model.vision_tower.patch_conv.weight", "v.patch_embd.weight"],
    ["multi_modal_projector.linear_2.weight", "mm.2.weight"],
    ["model.multi_modal_projector.norm.weight", "mm.input_norm.weight"],
    ["multi_modal_projector.patch_merger.merging_layer.weight", "mm.patch_merger.weight"],
    ["language_model.model.layers.0.self_attn.q_proj.weight", undefined],
  ];
  for (const [name, want] of names) assert.equal(m.pieces(name, [4, 4])[0]?.name, want, name);
  // The text embedding gives the [IMG_BREAK] row llama.cpp's pixtral loader needs.
  const ids = { "[IMG_BREAK]": 2 };
  for (
    const name of [
      "language_model.model.embed_tokens.weight",
      "model.language_model.embed_tokens.weight",
    ]
  ) {
    const [row] = m.pieces(name, [4, 3], {}, ids);
    assert.deepEqual(row, {
      name: "v.token_embd.img_break",
      shape: [3],
      ranges: [[6, 9]],
      type: "F32",
    });
    assert.throws(() => m.pieces(name, [4, 3], {}, {}), /no \[IMG_BREAK\] added token/);
  }
  const vision = { num_attention_heads: 16 };
  assert.equal(m.permuteHeads?.("v.blk.0.attn_q.weight", vision), 16);
  assert.equal(m.permuteHeads?.("v.blk.0.attn_k.weight", vision), 16);
  assert.equal(m.permuteHeads?.("v.blk.0.attn_v.weight", vision), undefined);
  assert.throws(() => m.permuteHeads?.("v.blk.0.attn_q.weight", {}), RangeError);
});

Deno.test("Llama 4's vision GGUF names: the encoder, adapter and projector in both layouts", () => {
  const g = MMPROJ_CLASSES["Llama4ForConditionalGeneration"]!;
  const cases: [string, string | undefined][] = [
    ["vision_model.class_embedding", "v.class_embd"],
    ["model.vision_model.positional_embedding_vlm", "v.position_embd.weight"],
    ["vision_model.patch_embedding.linear.weight", "v.patch_embd.weight"],
    ["vision_model.layernorm_pre.bias", "v.pre_ln.bias"],
    ["model.vision_model.layernorm_post.weight", "v.post_ln.weight"],
    ["vision_model.model.layers.7.self_attn.o_proj.bias", "v.blk.7.attn_out.bias"],
    [
      // The pre-MLP norm under the name llama.cpp's graph reads (the converter: attn_post_norm).
      "model.vision_model.model.layers.0.post_attention_layernorm.weight",
      "v.blk.0.ln2.weight",
    ],
    ["vision_model.model.layers.2.mlp.fc2.weight", "v.blk.2.ffn_down.weight"],
    ["vision_model.vision_adapter.mlp.fc1.weight", "mm.model.mlp.1.weight"],
    ["model.multi_modal_projector.linear_1.weight", "mm.model.fc.weight"],
    ["language_model.model.layers.0.feed_forward.gate_proj.weight", undefined],
  ];
  for (const [name, want] of cases) assert.equal(g.pieces(name, [4, 4])[0]?.name, want, name);
  assert.equal(g.forcedType("v.patch_embd.weight", "F16"), "F16");
  assert.equal(g.forcedType("v.patch_embd.weight", "BF16"), "F32");
  assert.equal(g.forcedType("v.blk.0.attn_q.weight", "BF16"), undefined);
});

Deno.test("LFM2-VL's and Gemma 4's vision GGUF: the patch kernel's rows viewed channels first, both LFM2-VL layouts, Gemma 4's scalars as one value", () => {
  const lfm2 = MMPROJ_CLASSES["Lfm2VlForConditionalGeneration"]!;
  for (
    const name of [
      "model.vision_tower.vision_model.embeddings.patch_embedding.weight",
      // transformers 5.18's own save of a model it built (no vision_model.).
      "model.vision_tower.embeddings.patch_embedding.weight",
    ]
  ) {
    const [piece] = lfm2.pieces(name, [4, 768]);
    assert.equal(piece!.name, "v.patch_embd.weight");
    assert.deepEqual(piece!.shape, [4, 3, 16, 16]);
    // Output (c, h, w) = (1, 0, 2) reads input (h·16 + w)·3 + c = 7.
    assert.equal(piece!.reorder!.order[256 + 2], 7);
    assert.equal(piece!.reorder!.group, 768);
  }
  assert.throws(() =>
    lfm2.pieces("model.vision_tower.embeddings.patch_embedding.weight", [4, 588])
  );
  assert.deepEqual(lfm2.pieces("model.multi_modal_projector.layer_norm.bias", [128]), [
    { name: "mm.input_norm.bias", shape: [128] },
  ]);
  assert.deepEqual(lfm2.pieces("model.language_model.layers.0.conv.in_proj.weight", [2, 2]), []);

  const gemma4 = MMPROJ_CLASSES["Gemma4ForConditionalGeneration"]!;
  // Gemma 4's patch side from the shape (3 × 14 × 14 values a row here).
  const [kernel] = gemma4.pieces("model.vision_tower.patch_embedder.input_proj.weight", [4, 588]);
  assert.deepEqual(kernel!.shape, [4, 3, 14, 14]);
  const cases: [string, readonly number[], string, readonly number[]][] = [
    [
      "model.vision_tower.encoder.layers.3.self_attn.q_proj.linear.weight",
      [8, 8],
      "v.blk.3.attn_q.weight",
      [8, 8],
    ],
    [
      "model.vision_tower.encoder.layers.3.self_attn.q_proj.input_max",
      [],
      "v.blk.3.attn_q.input_max",
      [1],
    ],
    ["model.vision_tower.encoder.layers.3.layer_scalar", [], "v.blk.3.out_scale.weight", [1]],
    [
      "model.vision_tower.encoder.layers.3.pre_feedforward_layernorm.weight",
      [8],
      "v.blk.3.ln2.weight",
      [8],
    ],
    ["model.embed_vision.embedding_projection.weight", [16, 8], "mm.input_projection.weight", [
      16,
      8,
    ]],
  ];
  for (const [name, shape, want, wantShape] of cases) {
    assert.deepEqual(gemma4.pieces(name, shape), [{ name: want, shape: wantShape }], name);
  }
  // An audio tensor the converter's table has no name for: it stops, and so does aprkit.
  assert.throws(
    () => gemma4.pieces("model.audio_tower.layers.0.conv.weight", [4, 4]),
    /no name for it/,
  );
});

Deno.test("Gemma 4's audio tower and the unified embedders in the multimodal GGUF: names from gguf-py's table, softplus, reshapes, forced F32", () => {
  const gemma4 = MMPROJ_CLASSES["Gemma4ForConditionalGeneration"]!;
  const one = (name: string, shape: readonly number[]) => {
    const pieces = gemma4.pieces(name, shape);
    assert.equal(pieces.length, 1, name);
    return pieces[0]!;
  };
  // `.linear` dropped, bounds kept, a segment's trailing block number (layer1).
  assert.equal(
    one("model.audio_tower.layers.2.self_attn.q_proj.linear.weight", [8, 8]).name,
    "a.blk.2.attn_q.weight",
  );
  assert.deepEqual(one("model.audio_tower.layers.2.feed_forward2.ffw_layer_1.output_min", []), {
    name: "a.blk.2.ffn_up_1.output_min",
    shape: [1],
  });
  const conv = one("model.audio_tower.subsample_conv_projection.layer1.conv.weight", [4, 8, 3, 3]);
  assert.deepEqual(conv, { name: "a.conv1d.1.weight", shape: [4, 8, 3, 3], type: "F32" });
  // "_conv" and ".weight": F32 too, as the converter's test reads.
  assert.equal(
    one("model.audio_tower.subsample_conv_projection.input_proj_linear.weight", [32, 8]).type,
    "F32",
  );
  assert.equal(
    one("model.audio_tower.layers.0.lconv1d.linear_start.linear.weight", [8, 4]).type,
    undefined,
  );
  assert.deepEqual(one("model.audio_tower.layers.0.lconv1d.depthwise_conv1d.weight", [32, 1, 5]), {
    name: "a.blk.0.conv_dw.weight",
    shape: [32, 5],
    type: "F32",
  });
  assert.throws(
    () => one("model.audio_tower.layers.0.lconv1d.depthwise_conv1d.weight", [32, 2, 5]),
    /depthwise kernel/,
  );
  const scale = one("model.audio_tower.layers.0.self_attn.per_dim_scale", [16]);
  assert.equal(scale.name, "a.blk.0.per_dim_scale.weight");
  // softplus(0) = ln 2; above torch's threshold 20 the value itself.
  assert.equal(scale.map!(0), Math.fround(Math.LN2));
  assert.equal(scale.map!(25), 25);
  assert.equal(
    one("model.embed_audio.embedding_projection.weight", [64, 32]).name,
    "mm.a.input_projection.weight",
  );
  assert.deepEqual(
    gemma4.pieces("model.language_model.layers.0.self_attn.q_proj.weight", [4, 4]),
    [],
  );

  const unified = MMPROJ_CLASSES["Gemma4UnifiedForConditionalGeneration"]!;
  const vision = { patch_size: 4, pooling_kernel_size: 2 };
  // The positions [size, 2, width] as [2, size, width]: segment i = (axis, position) reads (position, axis).
  const [pos] = unified.pieces("model.vision_embedder.pos_embedding", [16, 2, 32], vision);
  assert.equal(pos!.name, "v.position_embd.weight");
  assert.deepEqual(pos!.shape, [2, 16, 32]);
  assert.deepEqual(pos!.reorder!.order.slice(0, 3), [0, 2, 4]);
  assert.equal(pos!.reorder!.order[16], 1);
  // The patch projection's 8·8·3 columns (patch × pooling kernel) channels first, as its first norm.
  const [dense] = unified.pieces("model.vision_embedder.patch_dense.weight", [32, 192], vision);
  assert.deepEqual([dense!.name, dense!.shape, dense!.reorder!.group], ["v.patch_embd.weight", [
    32,
    192,
  ], 192]);
  assert.equal(dense!.reorder!.order[64 + 2], 7);
  const [ln1] = unified.pieces("model.vision_embedder.patch_ln1.bias", [192], vision);
  assert.deepEqual([ln1!.name, ln1!.reorder!.order], [
    "v.patch_norm.1.bias",
    dense!.reorder!.order,
  ]);
  assert.deepEqual(unified.pieces("model.vision_embedder.pos_norm.weight", [32], vision), [
    { name: "v.patch_norm.3.weight", shape: [32] },
  ]);
  assert.throws(() => unified.pieces("model.vision_embedder.patch_dense.weight", [32, 48], vision));
  assert.equal(unified.forcedType("v.patch_embd.weight", "BF16"), "F32");
  assert.equal(unified.forcedType("v.position_embd.weight", "BF16"), undefined);
});
