// This module is browser compatible.

/**
 * llama.cpp's vision GGUF (`convert_hf_to_gguf.py --mmproj`): the vision
 * tower and projector of an image-text-to-text checkpoint, as the file
 * llama.cpp's multimodal runtime (tools/mtmd, `clip.cpp`) loads beside the
 * text GGUF. Architecture `clip`, `general.type` `mmproj`, the `clip.*` keys
 * (`MmprojModel.set_gguf_parameters` and the class's own), tensors under
 * gguf-py's `MMPROJ` names (`v.blk.N.attn_q`, `mm.*`).
 *
 * One entry per multimodal class aprkit writes a vision GGUF for; Gemma 3
 * (SigLIP) so far, after llama.cpp's `Gemma3VisionModel` (conversion/gemma.py).
 *
 * @module
 */

import { KvWriter, record } from "./kv.ts";

/** What the vision GGUF's keys are made from. */
export interface MmprojSources {
  /** `config.json`. */
  readonly config: Readonly<Record<string, unknown>>;
  /** `preprocessor_config.json` (image mean and std). */
  readonly preprocessor: Readonly<Record<string, unknown>>;
}

/** How one multimodal class's vision tower becomes llama.cpp's vision GGUF. */
export interface MmprojSupport {
  /** What the entry follows. */
  readonly source: string;
  /**
   * The GGUF name of a checkpoint tensor, or `undefined` when it is not part
   * of the vision GGUF (the language model, a tensor the converter skips).
   */
  tensorName(name: string): string | undefined;
  /** Added to every value of a tensor (GGUF name) on the way (Gemma's `1 + w` norm). */
  shift(ggufName: string): number;
  /** The type the converter forces a tensor (GGUF name) to, if any. */
  forcedType(ggufName: string): "F16" | "F32" | undefined;
  /**
   * The keys after `general.file_type`, in the converter's order.
   *
   * @throws {RangeError} When a config lacks what the converter needs.
   */
  writeKv(w: KvWriter, sources: MmprojSources): void;
}

/** `MmprojModel.set_gguf_parameters`: the keys every vision GGUF has. */
function writeClipKv(w: KvWriter, sources: MmprojSources): void {
  w.set("has_vision_encoder", "BOOL", true);
  const text = { ...sources.config, ...record(sources.config["text_config"]) };
  const textHidden = text["hidden_size"] ?? text["n_embd"];
  w.u32("vision.projection_dim", textHidden);
  w.u32("vision.image_size", w.need("image_size"));
  w.u32("vision.patch_size", w.need("patch_size"));
  w.u32("vision.embedding_length", w.need("hidden_size", "width", "vt_hidden_size"));
  w.u32("vision.feed_forward_length", w.need("intermediate_size", "vt_intermediate_size"));
  w.u32(
    "vision.block_count",
    w.need("n_layers", "num_hidden_layers", "n_layer", "num_layers", "depth", "layers"),
  );
  w.u32("vision.attention.head_count", w.need("num_attention_heads", "num_heads", "heads"));
  const floats = (key: string): number[] => {
    const v = sources.preprocessor[key];
    if (!Array.isArray(v) || !v.every((x) => typeof x === "number" && Number.isFinite(x))) {
      throw new RangeError(`preprocessor_config.json has no list of numbers for ${key}`);
    }
    return v as number[];
  };
  w.setArray("vision.image_mean", "FLOAT32", floats("image_mean"));
  w.setArray("vision.image_std", "FLOAT32", floats("image_std"));
}

// SigLIP's tensors under gguf-py's MMPROJ names (tensor_mapping.py), per block and global.
const SIGLIP_BLOCK: Readonly<Record<string, string>> = {
  "layer_norm1": "ln1",
  "layer_norm2": "ln2",
  "mlp.fc1": "ffn_up",
  "mlp.fc2": "ffn_down",
  "self_attn.q_proj": "attn_q",
  "self_attn.k_proj": "attn_k",
  "self_attn.v_proj": "attn_v",
  "self_attn.out_proj": "attn_out",
};
const SIGLIP_GLOBAL: Readonly<Record<string, string>> = {
  "embeddings.patch_embedding": "v.patch_embd",
  "embeddings.position_embedding": "v.position_embd",
  "post_layernorm": "v.post_ln",
};
const GEMMA3_PROJECTOR: Readonly<Record<string, string>> = {
  "mm_input_projection": "mm.input_projection",
  "mm_soft_emb_norm": "mm.soft_emb_norm",
};

function gemma3TensorName(name: string): string | undefined {
  // transformers' module paths have a leading "model."; the converter reads `mm_input_projection_weight` as `.weight`.
  const n = name.replace(/^model\.(?=vision_tower\.|multi_modal_projector\.)/, "").replace(
    /_weight$/,
    ".weight",
  );
  const suffix = /\.(weight|bias)$/.exec(n)?.[1];
  if (suffix === undefined) return undefined;
  const base = n.slice(0, -suffix.length - 1);
  const projector = /^multi_modal_projector\.(.+)$/.exec(base);
  if (projector !== null) {
    const g = GEMMA3_PROJECTOR[projector[1]!];
    return g === undefined ? undefined : `${g}.${suffix}`;
  }
  const vision = /^vision_tower\.(?:vision_model\.)?(.+)$/.exec(base);
  if (vision === null || vision[1]!.startsWith("head.")) return undefined; // the converter skips SigLIP's head
  const block = /^encoder\.layers\.(\d+)\.(.+)$/.exec(vision[1]!);
  if (block !== null) {
    const g = SIGLIP_BLOCK[block[2]!];
    return g === undefined ? undefined : `v.blk.${block[1]}.${g}.${suffix}`;
  }
  const g = SIGLIP_GLOBAL[vision[1]!];
  return g === undefined ? undefined : `${g}.${suffix}`;
}

/** Gemma 3's vision GGUF (SigLIP encoder, average-pooling projector). */
const GEMMA3_MMPROJ: MmprojSupport = {
  source: "llama.cpp conversion/gemma.py Gemma3VisionModel",
  tensorName: gemma3TensorName,
  // Gemma3RMSNorm multiplies by 1 + w; only the projector's norm is Gemma's (SigLIP's are LayerNorms).
  shift: (name) => name === "mm.soft_emb_norm.weight" ? 1 : 0,
  forcedType: (name) =>
    name.startsWith("mm.input_projection.")
      ? "F16"
      : /^v\.(patch_embd|position_embd)\./.test(name)
      ? "F32"
      : undefined,
  writeKv(w, sources) {
    writeClipKv(w, sources);
    w.set("projector_type", "STRING", "gemma3");
    w.f32("vision.attention.layer_norm_epsilon", w.num("layer_norm_eps") ?? 1e-6);
    w.set("use_gelu", "BOOL", true);
    // The projector pools the patch grid to image_seq_length tokens; 4 is llama.cpp's default.
    const seq = sources.preprocessor["image_seq_length"];
    const perSide = Math.trunc(Math.sqrt(typeof seq === "number" ? seq : 256));
    const scale = Math.trunc(Math.trunc(w.need("image_size") / w.need("patch_size")) / perSide);
    if (scale > 0 && scale !== 4) w.u32("vision.projector.scale_factor", scale);
  },
};

/** Multimodal classes whose vision GGUF aprkit writes, by `architectures[0]`. */
export const MMPROJ_CLASSES: Readonly<Record<string, MmprojSupport>> = {
  Gemma3ForConditionalGeneration: GEMMA3_MMPROJ,
};

/**
 * The vision GGUF support of a Hugging Face class.
 *
 * @param hfArchitecture `architectures[0]` of `config.json`.
 * @returns The support, or `undefined` when aprkit does not write one for it.
 */
export function mmprojSupport(hfArchitecture: unknown): MmprojSupport | undefined {
  return typeof hfArchitecture === "string" && Object.hasOwn(MMPROJ_CLASSES, hfArchitecture)
    ? MMPROJ_CLASSES[hfArchitecture]
    : undefined;
}

/**
 * The vision GGUF's keys up to the end of the class's own, in the
 * converter's order: `general.architecture` `clip`, `general.type`
 * `mmproj`, `general.name` (a place the writer fills), `general.size_label`,
 * `general.file_type` (a place the writer fills), then the `clip.*` keys.
 *
 * @param support The class's support.
 * @param sources `config.json` and `preprocessor_config.json`.
 * @param sizeLabel gguf-py's size label of the written tensors.
 * @returns The keys, gguf-py type names and values.
 * @throws {RangeError} When a config lacks what the converter needs.
 */
export function mmprojKv(
  support: MmprojSupport,
  sources: MmprojSources,
  sizeLabel: string,
): ReturnType<KvWriter["entries"]> {
  const vision = record(sources.config["vision_config"]);
  if (vision === undefined) throw new RangeError("config.json has no vision_config");
  const w = new KvWriter(vision, "clip");
  w.set("general.type", "STRING", "mmproj");
  w.set("general.name", "STRING", "");
  w.set("general.size_label", "STRING", sizeLabel);
  w.fileType();
  support.writeKv(w, sources);
  return w.entries();
}
