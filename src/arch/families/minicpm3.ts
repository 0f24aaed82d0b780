// This module is browser compatible.

/**
 * MiniCPM3 (`MiniCPM3ForCausalLM`: openbmb's MiniCPM3-4B), after llama.cpp's
 * `MiniCPM3Model` (conversion/minicpm.py), GGUF architecture `minicpm3`.
 *
 * DeepSeek-V2's multi-head latent attention (q and kv LoRA, a RoPE key
 * shared by the heads) with the RoPE dims rotated by `rotate_half`'s halves
 * (llama.cpp's NEOX, nothing permuted), and unlike `deepseek2` `kv_b_proj`
 * kept whole (`attn_kv_b`): llama.cpp's `minicpm3` graph does not absorb it.
 * A dense SwiGLU MLP in every layer. LongRoPE factors
 * (`rope_factors_long/short.weight`) without any RoPE key.
 *
 * The converter writes its own short list of keys (no RoPE base, no value
 * length, no scaling), and llama.cpp's graph hard-codes the muP-style scales
 * of the published model: embeddings ×12, each residual branch
 * ×1.4/√layers, the final hidden state ×256/hidden before the head. A config
 * that computes otherwise is refused, naming the field.
 *
 * realizar has no MiniCPM3 model: APR output keeps the checkpoint's tensors
 * under their Hugging Face names.
 *
 * @module
 */

import type { Family } from "../family.ts";
import type { KvWriter } from "../kv.ts";
import { longRopeFactors } from "../rope_factors.ts";
import { activation, SILU } from "../config_fields.ts";
import { DEEPSEEK2_BLOCK, DEEPSEEK_MOE_BLOCK } from "./deepseek2.ts";
import { impliedKeys } from "../implied_keys.ts";

const MOE = new Set(DEEPSEEK_MOE_BLOCK.map(([g]) => g));

/** `MiniCPM3Model.set_gguf_parameters`: its own keys, in its order. */
function writeMiniCpm3Kv(w: KvWriter): void {
  w.fileType();
  w.u32("context_length", w.need("max_position_embeddings"));
  w.u32("embedding_length", w.need("hidden_size"));
  w.u32("block_count", w.need("num_hidden_layers"));
  w.u32("feed_forward_length", w.need("intermediate_size"));
  w.u32("attention.head_count", w.need("num_attention_heads"));
  w.u32("attention.head_count_kv", w.need("num_key_value_heads"));
  w.f32("attention.layer_norm_rms_epsilon", w.need("rms_norm_eps"));
  w.u32("vocab_size", w.need("vocab_size"));
  w.u32("attention.q_lora_rank", w.find("q_lora_rank"));
  w.u32("attention.kv_lora_rank", w.need("kv_lora_rank"));
  const rope = w.need("qk_rope_head_dim");
  w.u32("attention.key_length", w.need("qk_nope_head_dim") + rope);
  w.u32("rope.dimension_count", rope);
}

/** What of a config llama.cpp's `minicpm3` would run otherwise than transformers, or `undefined`. */
function unsupported(w: KvWriter): string | undefined {
  const h = w.hparams;
  const heads = w.need("num_attention_heads");
  if (h["q_lora_rank"] === null || h["q_lora_rank"] === undefined) {
    return "its config.json has q_lora_rank null (a plain q_proj); llama.cpp's minicpm3 " +
      "loads only the q LoRA (attn_q_a, attn_q_b)";
  }
  const kvHeads = w.num("num_key_value_heads") ?? heads;
  if (kvHeads !== heads) {
    return `its config.json has num_key_value_heads ${kvHeads}, not num_attention_heads ` +
      `${heads}; MLA has a key per head and llama.cpp's minicpm3 caches num_key_value_heads`;
  }
  for (const field of ["attention_bias", "mlp_bias"]) {
    if (h[field] === true) {
      return `its config.json has ${field} true; llama.cpp's minicpm3 loads no bias tensors`;
    }
  }
  const vWidth = Math.trunc(w.need("hidden_size") / heads);
  const v = w.num("v_head_dim") ?? vWidth;
  if (v !== vWidth) {
    return `its config.json has v_head_dim ${v}; the converter writes no value length and ` +
      `llama.cpp's minicpm3 computes with hidden_size / num_attention_heads = ${vWidth}`;
  }
  const rope = w.fullRope;
  const theta = rope["rope_theta"] ?? 10000;
  if (theta !== 10000) {
    return `its config.json has rope_theta ${theta}; the converter writes no RoPE base for ` +
      "minicpm3 and llama.cpp computes with 10000";
  }
  const type = String(rope["rope_type"] ?? rope["type"] ?? "default");
  if (type !== "default" && type !== "longrope") {
    return `its config.json has rope_type ${JSON.stringify(type)}; the converter writes no ` +
      "RoPE scaling for minicpm3 and llama.cpp rotates without";
  }
  if (type === "longrope") {
    // transformers switches to the long factors past the original context
    // and scales by an attention factor when it is shorter than the trained
    // one; llama.cpp switches past the trained context (the only one
    // written) and scales by nothing.
    const maxPos = w.need("max_position_embeddings");
    const orig = rope["original_max_position_embeddings"] ?? maxPos;
    if (orig !== maxPos) {
      return `its config.json has LongRoPE original_max_position_embeddings ${orig}, not ` +
        `max_position_embeddings ${maxPos}; llama.cpp's minicpm3 switches to the long ` +
        "factors only past max_position_embeddings and applies no attention factor";
    }
    for (const key of ["attention_factor", "mscale_all_dim"]) {
      const value = rope[key];
      if (value !== undefined && value !== null && value !== (key === "attention_factor" ? 1 : 0)) {
        return `its config.json has LongRoPE ${key} ${value}; the converter writes no ` +
          "attention scaling for minicpm3 and llama.cpp computes without";
      }
    }
  }
  return undefined;
}

/** MiniCPM3-4B. */
export const MINICPM3: Family = {
  name: "minicpm3",
  source: "llama.cpp conversion/minicpm.py MiniCPM3Model; transformers MiniCPM3ForCausalLM",
  configFields: {
    written: ["kv_lora_rank", "q_lora_rank", "qk_nope_head_dim", "qk_rope_head_dim"],
    checked: ["v_head_dim", "attention_bias", "mlp_bias"],
    // llama.cpp's minicpm3 graph: "if the model varies, these parameters need to be read from the model".
    assumed: [
      activation("hidden_act", SILU),
      { field: "scale_emb", hfDefault: 12, llamaCpp: 12 },
      { field: "scale_depth", hfDefault: 1.4, llamaCpp: 1.4 },
      { field: "dim_model_base", hfDefault: 256, llamaCpp: 256 },
    ],
    irrelevant: {
      qk_head_dim: "qk_nope_head_dim + qk_rope_head_dim, which are written",
    },
  },
  hfArchitectures: ["MiniCPM3ForCausalLM"],
  hfModelTypes: ["minicpm3"],
  ggufArchitecture: "minicpm3",
  ggufRopeType: "neox",
  blockNames: [
    ...DEEPSEEK2_BLOCK.filter(([g]) => !MOE.has(g)),
    ["attn_kv_b", "self_attn.kv_b_proj"],
  ],
  permutesQk: false,
  tiedByDefault: true,
  ggufRenamesOnly: false,
  gguf: {
    writeKv: writeMiniCpm3Kv,
    // As DeepSeek-V2's: head_dim is the rotary width, qk_head_dim nope + rope.
    impliedKeys: (h) =>
      impliedKeys(h, [["rope.dimension_count", "head_dim"], [
        "attention.key_length",
        "qk_head_dim",
      ]]),
    llamaKeys: true,
    unsupported,
    generate: (w) => longRopeFactors(w, w.need("qk_rope_head_dim")),
  },
  ggufReadBackRefusal:
    "aprkit does not read a MiniCPM3 GGUF back into Hugging Face's layout (the converter writes no RoPE base, value length or muP scales for it); --keep-names keeps its GGUF tensors",
};
