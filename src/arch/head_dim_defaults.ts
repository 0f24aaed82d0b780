// This module is browser compatible.

/**
 * The `head_dim` transformers fills in when `config.json` has none. llama.cpp's
 * converter reads the config through `AutoConfig.from_pretrained(...).to_dict()`,
 * so for these classes it sees `head_dim = hidden_size // num_attention_heads`
 * and writes `{arch}.attention.key_length` / `value_length` from it (its
 * `TextModel.set_gguf_parameters`), even for a `config.json` saved before the
 * field existed (Llama 3.1, Mistral 7B). aprkit reads `config.json` itself, so
 * it fills the field in as transformers does.
 *
 * The model types are those of `tests/testdata/arch/config_fields.json`
 * (`head_dim_when_absent`, recorded from transformers 5.18 by
 * `make_config_fields.py`), and a test keeps this list equal to them. Classes
 * that default `head_dim` to a constant (Qwen3's 128, Gemma's 256…) are not
 * filled in: their published configs all state it, and a constant default
 * that disagrees with the tensors is refused by the shape check.
 *
 * @module
 */

/** Model types whose transformers config fills `head_dim` with `hidden_size / num_attention_heads`. */
export const HEAD_DIM_FROM_WIDTH: ReadonlySet<string> = new Set([
  "arcee",
  "cohere2",
  "eurobert",
  "idefics3",
  "jais2",
  "llama",
  "mistral",
  "mistral3",
  "nemotron",
  "nomic_bert",
  "qwen3_vl_moe",
  "smolvlm",
]);

/**
 * `hparams` with `head_dim` as transformers fills it in, where its class
 * does and the config has none (or null); otherwise `hparams` itself.
 *
 * @param hparams The config, a multimodal model's `text_config` merged in.
 * @returns The config as the converter sees it.
 */
export function withHeadDimDefault(
  hparams: Readonly<Record<string, unknown>>,
): Readonly<Record<string, unknown>> {
  const type = hparams["model_type"];
  if (typeof type !== "string" || !HEAD_DIM_FROM_WIDTH.has(type)) return hparams;
  if (hparams["head_dim"] != null) return hparams;
  const width = hparams["hidden_size"];
  const heads = hparams["num_attention_heads"];
  if (
    typeof width !== "number" || typeof heads !== "number" || !Number.isSafeInteger(width) ||
    !Number.isSafeInteger(heads) || heads <= 0
  ) {
    return hparams;
  }
  return { ...hparams, head_dim: Math.floor(width / heads) };
}
