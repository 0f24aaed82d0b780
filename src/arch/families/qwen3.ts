// This module is browser compatible.

/**
 * Qwen3 (`Qwen3ForCausalLM`), after llama.cpp's `Qwen3Model`
 * (conversion/qwen.py): llama block names plus Q/K RMSNorms, NEOX RoPE.
 * Its headless `Qwen3Model` (Qwen3-Embedding) is the same architecture with
 * the sentence-transformers pooling as `qwen3.pooling_type` and no output
 * layer, as the converter writes it. A Qwen3-Reranker (`Qwen3ForCausalLM`
 * told by its README or name) is written as the converter's reranker
 * (`../qwen3_reranker.ts`).
 *
 * @module
 */

import { type Family, LLAMA_BLOCK, NVFP4_UNSCALED } from "../family.ts";
import type { KvWriter } from "../kv.ts";
import { headlessHfName, writePooledTextModelKv } from "../pooling.ts";
import {
  RERANKER_READ_BACK,
  rerankRefusal,
  rerankTensors,
  writeRerankKv,
} from "../qwen3_reranker.ts";
import { QWEN2_FIELDS } from "./qwen2.ts";

/** `Qwen3Model.set_gguf_parameters`: Qwen2's keys and pooling, then a reranker's. */
function writeQwen3Kv(w: KvWriter): void {
  writePooledTextModelKv(w);
  writeRerankKv(w);
}

/** Qwen3 dense models. */
export const QWEN3: Family = {
  name: "qwen3",
  source: "llama.cpp conversion/qwen.py Qwen3Model; transformers Qwen3ForCausalLM",
  configFields: QWEN2_FIELDS,
  hfArchitectures: ["Qwen3ForCausalLM", "Qwen3Model"],
  hfModelTypes: ["qwen3"],
  ggufArchitecture: "qwen3",
  ggufRopeType: "neox",
  blockNames: LLAMA_BLOCK,
  // A Qwen3-Reranker GGUF's yes/no rows, kept under their GGUF name when it is re-quantized (it is
  // not read back into Hugging Face's layout: RERANKER_READ_BACK).
  globalNames: [["cls.output", "cls.output"]],
  permutesQk: false,
  tiedByDefault: false,
  ggufRenamesOnly: true,
  // src/models/qwen3.cpp loads a Qwen3-Reranker's `cls.output`, which gguf-py does not list for qwen3.
  ggufLoaderKinds: ["CLS_OUT"],
  ggufReadBackRefusalOf: (names) => names.has("cls.output.weight") ? RERANKER_READ_BACK : undefined,
  // src/models/qwen3.cpp passes every `*_s` scale (NVFP4's per-tensor factor).
  gguf: {
    writeKv: writeQwen3Kv,
    // A re-quantized Qwen3-Reranker GGUF's `cls.output` stays as it is (see globalNames).
    hfName: (name) => name.startsWith("cls.") ? name : headlessHfName(name),
    nvfp4Scales: true,
    nvfp4Unscaled: NVFP4_UNSCALED,
    unsupported: rerankRefusal,
    made: rerankTensors,
  },
};
