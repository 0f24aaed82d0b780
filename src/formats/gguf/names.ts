// This module is browser compatible.

/**
 * Tensor names between GGUF and Hugging Face spellings: the family layer's
 * tables (`src/arch/names.ts`), re-exported where the GGUF format's users
 * have always found them.
 *
 * @module
 */

export {
  GGUF_HF_NAMED_ARCHITECTURES as GGUF_LLAMA_LIKE_ARCHITECTURES,
  ggufToHfName,
  hfToGgufName,
} from "../../arch/names.ts";
