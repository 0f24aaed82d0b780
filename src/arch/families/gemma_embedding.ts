// This module is browser compatible.

/**
 * EmbeddingGemma (`Gemma3TextModel` saved by sentence-transformers), after
 * llama.cpp's `EmbeddingGemma` (conversion/gemma.py): Gemma 3's block and
 * keys under GGUF `gemma-embedding` (bidirectional attention, a symmetric
 * sliding window), the window as `config.json` has it, the pooling, and the
 * `2_Dense`/`3_Dense` projections as `dense_2`/`dense_3` with their
 * `dense_N_feat_in`/`_out` keys, written first. The converter writes the
 * projections only with `--sentence-transformers-dense-modules`; aprkit
 * always does, since without them llama.cpp's vectors are not the model's
 * (its file equals the converter's with that flag).
 *
 * @module
 */

import type { Family, MadeTensor } from "../family.ts";
import type { KvWriter, SentenceDense } from "../kv.ts";
import { activation, type ConfigFields, GELU } from "../config_fields.ts";
import { headlessHfName, writePoolingType } from "../pooling.ts";
import type { TensorInfo } from "../../tensor.ts";
import { GEMMA3, writeGemma3Kv } from "./gemma3.ts";

/** The activation a `Dense` module applies that llama.cpp's `build_dense_out` matches: none. */
const IDENTITY = "torch.nn.modules.linear.Identity";

/** `_get_dense_prefix`: `2_Dense` is `dense_2`, any other `dense_3`. */
function denseName(d: SentenceDense): string {
  return d.path === "2_Dense" ? "dense_2" : "dense_3";
}

/** The weight tensor of a `Dense` module, as the reader names it. */
function denseWeight(d: SentenceDense): string {
  return `${d.path}.linear.weight`;
}

/**
 * `EmbeddingGemma.set_gguf_parameters`: Gemma 3's keys, the window from
 * `config.json` again, each projection's widths, the pooling.
 */
function writeGemmaEmbeddingKv(w: KvWriter): void {
  writeGemma3Kv(w);
  w.u32("attention.sliding_window", w.need("sliding_window"));
  for (const d of w.dense) {
    if (typeof d.in_features !== "number" || typeof d.out_features !== "number") continue;
    w.u32(`${denseName(d)}_feat_in`, d.in_features);
    w.u32(`${denseName(d)}_feat_out`, d.out_features);
  }
  writePoolingType(w);
}

/**
 * What llama.cpp's gemma-embedding cannot compute as sentence-transformers
 * does: a projection with a bias or an activation (the converter writes the
 * weight only, `build_dense_out` multiplies), more than two of them, or
 * widths other than `hidden → n → hidden` (`load_arch_hparams` asserts).
 */
function unsupported(w: KvWriter): string | undefined {
  const d = w.dense;
  if (d.length === 0) return undefined;
  const bad = d.find((m) => m.bias !== false || m.activation_function !== IDENTITY);
  if (bad !== undefined) {
    return `its sentence-transformers ${bad.path} has ${
      bad.bias !== false ? "a bias" : `the activation ${String(bad.activation_function)}`
    }, which llama.cpp's gemma-embedding does not apply (it multiplies by the weights only)`;
  }
  const hidden = w.need("hidden_size");
  if (
    d.length > 2 || d[0]!.path !== "2_Dense" || d[0]!.in_features !== hidden ||
    d.at(-1)!.out_features !== hidden ||
    (d.length === 2 && d[1]!.in_features !== d[0]!.out_features)
  ) {
    return `its sentence-transformers projections (${
      d.map((m) => `${m.path} ${m.in_features}→${m.out_features}`).join(", ")
    }) are not the 2_Dense (hidden → n) and 3_Dense (n → hidden) llama.cpp's gemma-embedding ` +
      `applies`;
  }
  return undefined;
}

/** The projections' weights, renamed, before every other tensor (`generate_extra_tensors`). */
function denseTensors(tensors: readonly TensorInfo[], w: KvWriter): readonly MadeTensor[] {
  return w.dense.map((d) => {
    const source = tensors.find((t) => t.name === denseWeight(d));
    if (source === undefined) {
      throw new RangeError(
        `the sentence-transformers ${d.path} has no weights aprkit reads (` +
          `${d.path}/model.safetensors)`,
      );
    }
    return {
      info: { ...source, name: `${denseName(d)}.weight` },
      needs: [source.name],
      first: true,
      open: ([entry]) => entry!.open(),
    };
  });
}

/** A projection's tensors keep their names; the transformer's are the causal LM's under `model.`. */
function hfName(name: string): string {
  return /^\d+_[A-Za-z]+\./.test(name) ? name : headlessHfName(name);
}

/** Gemma 3's fields; bidirectional attention and a query scale of `1/sqrt(head_dim)` assumed. */
const GEMMA_EMBEDDING_FIELDS: ConfigFields = {
  written: ["sliding_window", "layer_types", "sliding_window_pattern"],
  assumed: [
    activation("hidden_activation", GELU, "gelu_pytorch_tanh"),
    // src/models/gemma-embedding.cpp: f_attention_scale = 1/sqrt(n_embd_head_k).
    {
      field: "query_pre_attn_scalar",
      hfDefault: 256,
      llamaCpp: (w: KvWriter) => w.num("head_dim") ?? 256,
    },
    { field: "attn_logit_softcapping", hfDefault: null, llamaCpp: null },
    // causal_attn = false in load_arch_hparams.
    { field: "use_bidirectional_attention", hfDefault: false, llamaCpp: true },
  ],
  irrelevant: {
    _sliding_window_pattern: "transformers' private copy of sliding_window_pattern",
    final_logit_softcapping: "caps a language-model head's logits; an embedder has none",
  },
};

/** EmbeddingGemma. */
export const GEMMA_EMBEDDING: Family = {
  ...GEMMA3,
  name: "gemma-embedding",
  source: "llama.cpp conversion/gemma.py EmbeddingGemma; transformers Gemma3TextModel",
  configFields: GEMMA_EMBEDDING_FIELDS,
  hfArchitectures: ["Gemma3TextModel"],
  // Gemma 3's text config; the class, not the type, tells an embedder (the registry reads the class).
  hfModelTypes: ["gemma3_text"],
  ggufArchitecture: "gemma-embedding",
  globalNames: [["dense_2", "2_Dense.linear"], ["dense_3", "3_Dense.linear"]],
  gguf: {
    ...GEMMA3.gguf!,
    writeKv: writeGemmaEmbeddingKv,
    unsupported,
    made: denseTensors,
    hfName,
    sentenceDense: true,
  },
};
