import { deepEqual } from "node:assert/strict";
import { realizarUnread } from "../../src/arch/realizar_reads.ts";

const layer = (pieces: string[]): string[] => pieces.map((p) => `model.layers.3.${p}`);

Deno.test("realizarUnread() names what AprTransformer::build_apr_layers never looks up", async (t) => {
  const cases: [string, string[], string[]][] = [
    [
      "a Llama layer: everything read",
      [
        "self_attn.q_proj.weight",
        "self_attn.k_proj.weight",
        "self_attn.v_proj.weight",
        "self_attn.o_proj.weight",
        "input_layernorm.weight",
        "post_attention_layernorm.weight",
        "mlp.gate_proj.weight",
        "mlp.up_proj.weight",
        "mlp.down_proj.weight",
      ],
      [],
    ],
    [
      "fused QKV with its bias (Phi-3)",
      ["self_attn.qkv_proj.weight", "self_attn.qkv_proj.bias"],
      [],
    ],
    ["Q/K/V biases are read (Qwen2)", ["self_attn.q_proj.bias", "self_attn.v_proj.bias"], []],
    ["per-head Q/K norms are not", ["self_attn.q_norm.weight", "self_attn.k_norm.weight"], [
      "self_attn.k_norm",
      "self_attn.q_norm",
    ]],
    ["an output bias, a norm bias: only the bias is missed", [
      "self_attn.o_proj.weight",
      "self_attn.o_proj.bias",
      "input_layernorm.bias",
    ], ["input_layernorm.bias", "self_attn.o_proj.bias"]],
    ["StarCoder2's MLP: weight and bias as one", [
      "mlp.c_fc.weight",
      "mlp.c_fc.bias",
      "mlp.c_proj.weight",
    ], ["mlp.c_fc", "mlp.c_proj"]],
    ["a fused gate_up_proj is not (GLM-4, before its split)", ["mlp.gate_up_proj.weight"], [
      "mlp.gate_up_proj",
    ]],
    ["experts and the router (Mixtral after its rename)", [
      "mlp.gate.weight",
      "mlp.experts.0.gate_proj.weight",
      "mlp.experts.7.down_proj.weight",
    ], []],
    ["shared_expert and its gate (Qwen2-MoE) are read, shared_experts is not", [
      "mlp.shared_expert.up_proj.weight",
      "mlp.shared_expert_gate.weight",
      "mlp.shared_experts.up_proj.weight",
    ], ["mlp.shared_experts.up_proj"]],
    ["per-expert pieces named once", [
      "mlp.experts.0.w9.weight",
      "mlp.experts.1.w9.weight",
    ], ["mlp.experts.{E}.w9"]],
  ];
  for (const [name, pieces, unread] of cases) {
    await t.step(name, () => deepEqual(realizarUnread(layer(pieces)), unread));
  }
  await t.step("tensors outside the layers are not judged", () => {
    deepEqual(
      realizarUnread(["model.embed_tokens.weight", "model.norm.weight", "lm_head.weight"]),
      [],
    );
  });
});
