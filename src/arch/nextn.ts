// This module is browser compatible.

/**
 * Multi-token-prediction layers as llama.cpp's converter appends them after
 * the trunk (GLM-4.5's layout, which DeepSeek-V3.2, GLM-5, Qwen3.5, K-EXAONE
 * and Hy3 share): their own tensors' names and their count; Qwen3.5's and
 * K-EXAONE's `mtp.*` module read as those blocks, and the blocks read back
 * as that module. A module of no family, so that families importing one
 * another can all read it.
 *
 * @module
 */

import type { Family } from "./family.ts";

/** The multi-token-prediction layers' own tensors (GLM-4.7-Flash's, DeepSeek-V3.2's and GLM-5's too). */
export const NEXTN_BLOCK: readonly (readonly [string, string])[] = [
  ["nextn.eh_proj", "eh_proj"],
  ["nextn.embed_tokens", "embed_tokens"],
  ["nextn.enorm", "enorm"],
  ["nextn.hnorm", "hnorm"],
  ["nextn.shared_head_head", "shared_head.head"],
  ["nextn.shared_head_norm", "shared_head.norm"],
];

/** The multi-token-prediction layers the converter appends (`num_nextn_predict_layers`). */
export function nextnLayers(hparams: Readonly<Record<string, unknown>>): number {
  const n = hparams["num_nextn_predict_layers"];
  return typeof n === "number" ? n : 0;
}

/** The `mtp.*` module's own tensors (Qwen3.5's, K-EXAONE's) as the converter renames them. */
const MTP_OWN: Readonly<Record<string, string>> = {
  fc: "eh_proj",
  pre_fc_norm_embedding: "enorm",
  pre_fc_norm_hidden: "hnorm",
  norm: "shared_head.norm",
};

/** Where the converter puts the `mtp.*` module's own tensors. */
export type MtpOwnPlace =
  /** In the first MTP block only (Qwen3.5's `_QwenMtpMixin`). */
  | "first"
  /** A copy in every MTP block (K-EXAONE's `ExaoneMoEModel`: "shared weights for all NextN/MTP layers"). */
  | "every";

/**
 * An `mtp.*` tensor (`model.mtp.*` too) as the converter reads it, where
 * `count` MTP layers follow the trunk: `mtp.layers.i.*` as
 * `model.layers.{N + i}.*`, `mtp.fc` as `model.layers.N.eh_proj` (with
 * `place` `"every"`, one name per MTP layer: the converter writes a copy in
 * each); every other name as it is.
 *
 * @param name The checkpoint's tensor name.
 * @param hparams `config.json` (its `num_hidden_layers`, N).
 * @param count The MTP layers config.json counts (none: names kept).
 * @param place Where the module's own tensors go.
 * @returns The name, or the names of the copies.
 */
export function mtpSourceNames(
  name: string,
  hparams: Readonly<Record<string, unknown>>,
  count: number,
  place: MtpOwnPlace,
): string | readonly string[] {
  const bare = name.startsWith("model.mtp.") ? name.slice("model.".length) : name;
  const trunk = hparams["num_hidden_layers"];
  if (!bare.startsWith("mtp.") || count === 0 || typeof trunk !== "number") return name;
  const layer = /^mtp\.layers\.(\d+)\.(.+)$/.exec(bare);
  if (layer !== null) return `model.layers.${trunk + Number(layer[1])}.${layer[2]}`;
  const own = /^mtp\.([a-z_]+)\.(weight|bias)$/.exec(bare);
  const piece = own === null ? undefined : MTP_OWN[own[1]!];
  if (piece === undefined) return name;
  const at = (block: number) => `model.layers.${block}.${piece}.${own![2]}`;
  return place === "first" ? at(trunk) : Array.from({ length: count }, (_, i) => at(trunk + i));
}

/**
 * The family's reading of checkpoint names (`GgufSupport.sourceName`) over
 * `hparams`, each name as the list of names it is read under, or
 * `undefined` when the family renames none.
 *
 * @param family The family.
 * @param hparams `config.json` (a multimodal model's `text_config` merged in).
 * @returns The renaming.
 */
export function sourceNamer(
  family: Family,
  hparams: Readonly<Record<string, unknown>>,
): ((name: string) => readonly string[]) | undefined {
  const rename = family.gguf?.sourceName;
  if (rename === undefined) return undefined;
  return (name) => {
    const named = rename(name, hparams);
    return typeof named === "string" ? [named] : named;
  };
}
