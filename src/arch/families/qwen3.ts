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

import { type Family, LLAMA_BLOCK } from "../family.ts";
import type { KvWriter } from "../kv.ts";
import { headlessHfName, writePooledTextModelKv } from "../pooling.ts";
import { rerankRefusal, rerankTensors, writeRerankKv } from "../qwen3_reranker.ts";
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
  permutesQk: false,
  tiedByDefault: false,
  ggufRenamesOnly: true,
  // src/models/qwen3.cpp passes every `*_s` scale (NVFP4's per-tensor factor).
  gguf: {
    writeKv: writeQwen3Kv,
    hfName: headlessHfName,
    nvfp4Scales: true,
    unsupported: rerankRefusal,
    made: rerankTensors,
  },
};
