// This module is browser compatible.

/**
 * Tensor names between llama.cpp's GGUF spelling (`blk.0.attn_q.weight`) and
 * Hugging Face's (`model.layers.0.self_attn.q_proj.weight`), for the llama
 * family of block layouts. Both directions, so the GGUF writer and `apr diff`
 * can go back. Names outside the table pass through unchanged.
 *
 * @module
 */

/**
 * Architectures (`general.architecture`) whose GGUF tensors follow llama's
 * block layout and whose Hugging Face names are the llama ones, so the
 * mapping is meaningful. Others (gemma, which bakes `+1` into its norms;
 * gpt2, phi3 with fused projections…) keep their GGUF names.
 */
export const GGUF_LLAMA_LIKE_ARCHITECTURES: ReadonlySet<string> = new Set([
  "llama",
  "mistral",
  "qwen2",
  "qwen3",
  "granite",
]);

/** Per-block pieces: GGUF name → Hugging Face name (without the `.weight`/`.bias` suffix). */
const BLOCK_NAMES: ReadonlyMap<string, string> = new Map([
  ["attn_q", "self_attn.q_proj"],
  ["attn_k", "self_attn.k_proj"],
  ["attn_v", "self_attn.v_proj"],
  ["attn_output", "self_attn.o_proj"],
  ["attn_q_norm", "self_attn.q_norm"],
  ["attn_k_norm", "self_attn.k_norm"],
  ["ffn_gate", "mlp.gate_proj"],
  ["ffn_up", "mlp.up_proj"],
  ["ffn_down", "mlp.down_proj"],
  ["attn_norm", "input_layernorm"],
  ["ffn_norm", "post_attention_layernorm"],
]);
const BLOCK_NAMES_BACK: ReadonlyMap<string, string> = new Map(
  [...BLOCK_NAMES].map(([g, h]) => [h, g]),
);

/** Whole-model pieces: GGUF base name → Hugging Face base name. */
const GLOBAL_NAMES: ReadonlyMap<string, string> = new Map([
  ["token_embd", "model.embed_tokens"],
  ["output_norm", "model.norm"],
  ["output", "lm_head"],
]);
const GLOBAL_NAMES_BACK: ReadonlyMap<string, string> = new Map(
  [...GLOBAL_NAMES].map(([g, h]) => [h, g]),
);

const GGUF_BLOCK = /^blk\.(\d+)\.([a-z_]+)\.(weight|bias)$/;
const HF_BLOCK = /^model\.layers\.(\d+)\.([a-z_]+\.?[a-z_]*)\.(weight|bias)$/;
const ANY_GLOBAL = /^(.+)\.(weight|bias)$/;

/**
 * Map a GGUF tensor name to its Hugging Face name (llama block layout).
 * Never throws. A name without a mapping is returned unchanged.
 *
 * @example Usage
 * ```ts
 * import { ggufToHfName } from "./names.ts";
 * console.assert(ggufToHfName("blk.3.ffn_down.weight") === "model.layers.3.mlp.down_proj.weight");
 * console.assert(ggufToHfName("rope_freqs.weight") === "rope_freqs.weight");
 * ```
 *
 * @param name A GGUF tensor name.
 * @returns The Hugging Face name, or `name` unchanged when it is not in the table.
 */
export function ggufToHfName(name: string): string {
  const block = GGUF_BLOCK.exec(name);
  if (block !== null) {
    const hf = BLOCK_NAMES.get(block[2]!);
    return hf === undefined ? name : `model.layers.${block[1]}.${hf}.${block[3]}`;
  }
  const global = ANY_GLOBAL.exec(name);
  const hf = global === null ? undefined : GLOBAL_NAMES.get(global[1]!);
  return hf === undefined ? name : `${hf}.${global![2]}`;
}

/**
 * Map a Hugging Face tensor name back to its GGUF name: the inverse of
 * {@linkcode ggufToHfName}.
 * Never throws. A name without a mapping is returned unchanged.
 *
 * @example Usage
 * ```ts
 * import { hfToGgufName } from "./names.ts";
 * console.assert(hfToGgufName("model.layers.0.self_attn.q_proj.bias") === "blk.0.attn_q.bias");
 * console.assert(hfToGgufName("lm_head.weight") === "output.weight");
 * ```
 *
 * @param name A Hugging Face tensor name.
 * @returns The GGUF name, or `name` unchanged when it is not in the table.
 */
export function hfToGgufName(name: string): string {
  const block = HF_BLOCK.exec(name);
  if (block !== null) {
    const gguf = BLOCK_NAMES_BACK.get(block[2]!);
    return gguf === undefined ? name : `blk.${block[1]}.${gguf}.${block[3]}`;
  }
  const global = ANY_GLOBAL.exec(name);
  const gguf = global === null ? undefined : GLOBAL_NAMES_BACK.get(global[1]!);
  return gguf === undefined ? name : `${gguf}.${global![2]}`;
}
