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

import type { ModelMetadata } from "../tensor.ts";
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

/**
 * Where a family's MTP count comes from, for a message: the config field
 * holding `count` (`config.json's num_nextn_predict_layers`), or the
 * family's own (MiMo-V2's 3).
 */
export function mtpCountLabel(hparams: Readonly<Record<string, unknown>>, count: number): string {
  const field = ["num_nextn_predict_layers", "mtp_num_hidden_layers"].find((k) =>
    (hparams[k] ?? 0) === count
  );
  return field === undefined
    ? "the family's multi-token-prediction layer count"
    : `config.json's ${field}`;
}

/**
 * Why a checkpoint's MTP layers and the count config.json gives cannot make
 * a GGUF llama.cpp loads (the converter writes the first with exit 0 and
 * fails on the second): no MTP layer where llama.cpp loads every MTP block
 * `block_count` counts (`mtpBlocksRequired`; GLM-4.5's, Hy3's, MiMo-V2's
 * load a file without them), or `mtp.layers.*` tensors where config.json
 * counts none and the family keeps them (written under their checkpoint
 * names: K-EXAONE's, "wrong number of tensors"). Some but not all held is
 * the shape check's (`model_shape.ts`).
 *
 * @param family The family.
 * @param hparams `config.json` (a multimodal model's `text_config` merged in).
 * @param names The checkpoint's tensor names.
 * @param dropped Whether the family's GGUF leaves a tensor out (`drops`).
 * @returns The reason, or `undefined`.
 */
export function mtpCountRefusal(
  family: Family,
  hparams: Readonly<Record<string, unknown>>,
  names: readonly string[],
  dropped: (name: string) => boolean,
): string | undefined {
  const extra = family.gguf?.extraBlocks?.(hparams);
  const trunk = hparams["num_hidden_layers"];
  if (extra === undefined || typeof trunk !== "number") return undefined;
  if (extra === 0) {
    const kept = names.find((n) => /^(?:model\.)?mtp\.layers\.\d+\./.test(n) && !dropped(n));
    if (kept === undefined) return undefined;
    return `its ${mtpCountLabel(hparams, 0)} is 0 and the checkpoint holds ` +
      `multi-token-prediction layers ("${kept}"): written under their own names, a file ` +
      `llama.cpp's ${family.ggufArchitecture} does not load`;
  }
  if (family.gguf?.mtpBlocksRequired !== true) return undefined;
  const rename = sourceNamer(family, hparams);
  const held = names.some((source) =>
    (rename?.(source) ?? [source]).some((name) => {
      const m = /(?:^|\.)layers\.(\d+)\./.exec(name);
      return m !== null && Number(m[1]) >= trunk;
    })
  );
  if (held) return undefined;
  return `its ${mtpCountLabel(hparams, extra)} is ${extra} and the checkpoint holds no ` +
    `multi-token-prediction layer: llama.cpp's ${family.ggufArchitecture} loads every MTP ` +
    `block block_count counts, and refuses the file without blk.${trunk}; set it to 0 to ` +
    `write the model without them`;
}

/** A GGUF tensor of an MTP block's own (`blk.N.nextn.*`). */
const NEXTN_TENSOR = /^blk\.(\d+)\.nextn\./;

/**
 * The first MTP block of a GGUF, read from its tensor names (the lowest
 * block with `nextn.*` tensors: the first has them in every layout), or
 * `undefined` without one.
 *
 * @param ggufNames The GGUF's tensor names.
 * @returns The trunk's block count.
 */
export function firstNextnBlock(ggufNames: ReadonlySet<string>): number | undefined {
  let first: number | undefined;
  for (const name of ggufNames) {
    const m = NEXTN_TENSOR.exec(name);
    if (m !== null && (first === undefined || Number(m[1]) < first)) first = Number(m[1]);
  }
  return first;
}

/** {@linkcode MTP_OWN} backwards: the block's piece → the module's own tensor. */
const MTP_OWN_BACK: ReadonlyMap<string, string> = new Map(
  Object.entries(MTP_OWN).map(([own, piece]) => [piece, own]),
);

/**
 * A name of a block from the first MTP block on (`ggufNames`'
 * {@linkcode firstNextnBlock}, N), for a GGUF read back into Hugging Face's
 * layout, under the checkpoint's own MTP module: `model.layers.{N + i}.*` as
 * `{layers}.i.*` (MiMo-V2-Flash's `model.mtp.layers`). Every other name as it is.
 *
 * @param name The name the family's table gives (`model.layers.5.eh_proj.weight`).
 * @param ggufNames The GGUF's tensor names.
 * @param layers The checkpoint's MTP layers' module.
 * @returns The checkpoint's name.
 */
export function mtpLayerHfName(
  name: string,
  ggufNames: ReadonlySet<string> | undefined,
  layers: string,
): string {
  const m = /^model\.layers\.(\d+)\.(.+)$/.exec(name);
  const trunk = m === null || ggufNames === undefined ? undefined : firstNextnBlock(ggufNames);
  if (m === null || trunk === undefined || Number(m[1]) < trunk) return name;
  return `${layers}.${Number(m[1]) - trunk}.${m[2]}`;
}

/**
 * The inverse of {@linkcode mtpSourceNames}, for a GGUF read back into
 * Hugging Face's layout: an MTP block's (see {@linkcode mtpLayerHfName})
 * `eh_proj`/`enorm`/`hnorm`/`shared_head.norm` as `mtp.fc`/… (several GGUF
 * tensors under one name where the converter copied it into every block;
 * the read-back checks that they agree), its other tensors under
 * `mtp.layers.i`. Every other name as it is.
 *
 * @param name The name the family's table gives.
 * @param ggufNames The GGUF's tensor names.
 * @returns The checkpoint's name.
 */
export function mtpHfName(name: string, ggufNames: ReadonlySet<string> | undefined): string {
  const layer = mtpLayerHfName(name, ggufNames, "mtp.layers");
  const own = /^mtp\.layers\.\d+\.(.+)\.(weight|bias)$/.exec(layer);
  const piece = own === null ? undefined : MTP_OWN_BACK.get(own[1]!);
  return piece === undefined ? layer : `mtp.${piece}.${own![2]}`;
}

/**
 * The trunk's layers of a GGUF with MTP blocks, as a Hugging Face import
 * counts them (`num_hidden_layers`): `block_count` less
 * `nextn_predict_layers`, unless the file is all MTP layers (Gemma 4's
 * drafters, whose every layer is one); `num_layers` as it is otherwise.
 *
 * @param numLayers The GGUF's `block_count`.
 * @param nextn Its `nextn_predict_layers`.
 * @returns The trunk's layers.
 */
export function trunkLayers(numLayers: number, nextn: number | undefined): number {
  return nextn !== undefined && nextn > 0 && nextn < numLayers ? numLayers - nextn : numLayers;
}

/** A GGUF's `block_count` and `nextn_predict_layers`, from the keys APR metadata keeps (`gguf_metadata`). */
function ggufCounts(
  metadata: ModelMetadata,
): { blocks: number; nextn: number } | undefined {
  const kv = metadata.gguf_metadata;
  const value = (key: string) => {
    const entry = typeof kv === "object" && kv !== null && !Array.isArray(kv)
      ? (kv as Record<string, unknown>)[key]
      : undefined;
    return typeof entry === "object" && entry !== null
      ? (entry as Record<string, unknown>)["value"]
      : undefined;
  };
  const arch = value("general.architecture");
  const blocks = value(`${arch}.block_count`);
  const nextn = value(`${arch}.nextn_predict_layers`);
  return typeof blocks === "number" && typeof nextn === "number" ? { blocks, nextn } : undefined;
}

/**
 * What config.json says of the MTP layers, from the GGUF keys of a model
 * read back from GGUF (an APR file imported from one, under Hugging Face
 * names, has no config.json): the trunk as `num_hidden_layers`, the MTP
 * layers as each family counts them (`num_nextn_predict_layers`,
 * `mtp_num_hidden_layers`), so `sourceName` renames the `mtp.*` tensors the
 * read-back named; `{}` without MTP layers.
 *
 * @param metadata The model's metadata (its `gguf_metadata`).
 * @returns The config fields.
 */
export function ggufMtpHparams(metadata: ModelMetadata): Readonly<Record<string, number>> {
  const counts = ggufCounts(metadata);
  if (counts === undefined) return {};
  const trunk = trunkLayers(counts.blocks, counts.nextn);
  if (trunk === counts.blocks) return {};
  return {
    num_hidden_layers: trunk,
    num_nextn_predict_layers: counts.nextn,
    mtp_num_hidden_layers: counts.nextn,
  };
}

/**
 * The blocks of a model's GGUF: `num_layers`, with the MTP blocks a
 * read-back into Hugging Face's layout left out of it (`num_layers` then
 * being the GGUF's trunk, see {@linkcode trunkLayers}) counted again.
 *
 * @param metadata The model's metadata (`num_layers`, `gguf_metadata`).
 * @returns The block count, or `num_layers` as it is.
 */
export function blockCountOf(metadata: ModelMetadata): unknown {
  const counts = ggufCounts(metadata);
  const layers = metadata.num_layers;
  return counts !== undefined && counts.blocks !== layers &&
      trunkLayers(counts.blocks, counts.nextn) === layers
    ? counts.blocks
    : layers;
}
