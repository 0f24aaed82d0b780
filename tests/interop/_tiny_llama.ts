/**
 * A one-layer llama checkpoint (BF16 zeros) around a tokenizer, for tests
 * that judge only the tokenizer: its `config.json` and `model.safetensors`.
 */

import { encodeSafetensors } from "../../src/formats/safetensors/encode.ts";

const HIDDEN = 16;

/**
 * Write `config.json` and `model.safetensors` of a tiny llama into a folder
 * that holds (or will hold) the tokenizer files.
 *
 * @param folder The checkpoint folder (must exist).
 * @param vocabSize Embedding rows: the tokenizer's ids must fit.
 */
export async function writeTinyLlama(folder: string, vocabSize: number): Promise<void> {
  await Deno.writeTextFile(
    `${folder}/config.json`,
    JSON.stringify({
      architectures: ["LlamaForCausalLM"],
      model_type: "llama",
      hidden_size: HIDDEN,
      intermediate_size: HIDDEN,
      num_hidden_layers: 1,
      num_attention_heads: 2,
      num_key_value_heads: 1,
      head_dim: HIDDEN / 2,
      vocab_size: vocabSize,
      max_position_embeddings: 64,
      rms_norm_eps: 1e-5,
      rope_theta: 10000,
      tie_word_embeddings: true,
      torch_dtype: "bfloat16",
    }),
  );
  const zeros = (name: string, shape: number[]) => ({
    name,
    dtype: "BF16" as const,
    shape,
    data: new Uint8Array(shape.reduce((a, b) => a * b, 2)),
  });
  const p = "model.layers.0";
  await Deno.writeFile(
    `${folder}/model.safetensors`,
    encodeSafetensors({
      tensors: [
        zeros("model.embed_tokens.weight", [vocabSize, HIDDEN]),
        zeros(`${p}.input_layernorm.weight`, [HIDDEN]),
        zeros(`${p}.self_attn.q_proj.weight`, [HIDDEN, HIDDEN]),
        zeros(`${p}.self_attn.k_proj.weight`, [HIDDEN / 2, HIDDEN]),
        zeros(`${p}.self_attn.v_proj.weight`, [HIDDEN / 2, HIDDEN]),
        zeros(`${p}.self_attn.o_proj.weight`, [HIDDEN, HIDDEN]),
        zeros(`${p}.post_attention_layernorm.weight`, [HIDDEN]),
        zeros(`${p}.mlp.gate_proj.weight`, [HIDDEN, HIDDEN]),
        zeros(`${p}.mlp.up_proj.weight`, [HIDDEN, HIDDEN]),
        zeros(`${p}.mlp.down_proj.weight`, [HIDDEN, HIDDEN]),
        zeros("model.norm.weight", [HIDDEN]),
      ],
    }),
  );
}
