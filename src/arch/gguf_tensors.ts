// This module is browser compatible.

/**
 * llama.cpp's tensor naming, read from the tables generated from gguf-py
 * (`_gguf_tables.ts`): which tensor kinds a GGUF architecture has
 * (`MODEL_TENSORS`), the kind a GGUF tensor name is, and the kind
 * gguf-py's `TensorNameMap` gives a Hugging Face name — as llama.cpp's
 * converter and loader know them, not as a family module spells them.
 *
 * @module
 */

import {
  HF_BLOCK_NAMES,
  HF_BLOCK_NAMES_BY_ARCH,
  HF_GLOBAL_NAMES,
  MODEL_TENSORS,
  TENSOR_NAMES,
} from "./_gguf_tables.ts";

/** A tensor name read as a gguf-py tensor kind. */
export interface TensorKind {
  /** gguf-py's `MODEL_TENSOR` member name (`ATTN_Q`). */
  readonly kind: string;
  /** The block the name is of, for a per-block kind. */
  readonly block?: number;
  /** What follows the kind's name (`.weight`, `.bias`, or `""`). */
  readonly suffix: string;
}

const words = (s: string | undefined): string[] => s === undefined || s === "" ? [] : s.split(" ");
const has = Object.hasOwn;

const KINDS = new Map<string, ReadonlySet<string>>();

/**
 * The tensor kinds of a GGUF architecture (gguf-py's `MODEL_TENSORS`).
 *
 * @example Usage
 * ```ts
 * import { ggufTensorKinds } from "./gguf_tensors.ts";
 * console.assert(ggufTensorKinds("llama")!.has("ATTN_Q"));
 * console.assert(ggufTensorKinds("nonesuch") === undefined);
 * ```
 *
 * @param arch `general.architecture` (`llama`).
 * @returns The kinds, or `undefined` for an architecture llama.cpp does not name.
 */
export function ggufTensorKinds(arch: string): ReadonlySet<string> | undefined {
  if (!has(MODEL_TENSORS, arch)) return undefined;
  let kinds = KINDS.get(arch);
  if (kinds === undefined) KINDS.set(arch, kinds = new Set(words(MODEL_TENSORS[arch])));
  return kinds;
}

/**
 * A kind's GGUF base name (gguf-py's `TENSOR_NAMES`), for a block when it is per block.
 *
 * @example Usage
 * ```ts
 * import { ggufKindName } from "./gguf_tensors.ts";
 * console.assert(ggufKindName("ATTN_Q", 3) === "blk.3.attn_q");
 * console.assert(ggufKindName("ATTN_Q") === "blk.{bid}.attn_q");
 * ```
 *
 * @param kind A `MODEL_TENSOR` member name.
 * @param block The block; absent: `{bid}` is left in.
 * @returns The name, or `undefined` for a kind gguf-py does not name.
 */
export function ggufKindName(kind: string, block?: number): string | undefined {
  if (!has(TENSOR_NAMES, kind)) return undefined;
  const name = TENSOR_NAMES[kind]!;
  return block === undefined ? name : name.replace("{bid}", String(block));
}

/**
 * GGUF base name (with `{bid}`) → kinds: a few kinds share a name
 * (`blk.{bid}.ffn_norm` is `FFN_NORM` and `FFN_PRE_NORM`), an architecture
 * having one of them.
 */
const BY_GGUF_NAME: ReadonlyMap<string, readonly string[]> = (() => {
  const map = new Map<string, string[]>();
  for (const [kind, name] of Object.entries(TENSOR_NAMES)) {
    map.set(name, [...map.get(name) ?? [], kind]);
  }
  return map;
})();

/**
 * Templates of a dotted name: the name itself, then with each numeric
 * segment in turn standing as `{bid}`, each with its number; with
 * `inSegment`, then each segment's trailing number too (`layer0` as
 * `layer{bid}`, as gguf-py formats some audio names).
 */
function* templates(
  name: string,
  inSegment = false,
): Generator<readonly [string, number | undefined]> {
  yield [name, undefined];
  const parts = name.split(".");
  const pattern = inSegment ? /^(\D*?)(\d{1,9})$/ : /^()(\d{1,9})$/;
  for (let i = 0; i < parts.length; i++) {
    const m = pattern.exec(parts[i]!);
    if (m === null) continue;
    const t = [...parts];
    t[i] = `${m[1]}{bid}`;
    yield [t.join("."), Number(m[2])];
  }
}

/**
 * The suffixes the converter tries: `.weight` and `.bias`, and `.scale` (a
 * per-tensor factor llama.cpp loads beside a weight: Gemma 4's router
 * scales, NVFP4's).
 */
const SUFFIXES: readonly string[] = [".weight", ".bias", ".scale"];
/**
 * A GGUF's suffixes: those, and `.input_scale` (an NVFP4 weight's activation
 * scale, which llama.cpp's loader reads beside it).
 */
const GGUF_SUFFIXES: readonly string[] = [...SUFFIXES, ".input_scale"];

/** The name without a suffix, then without each of `suffixes` it ends with. */
function* bases(
  name: string,
  suffixes: readonly string[] = SUFFIXES,
): Generator<readonly [string, string]> {
  yield [name, ""];
  for (const suffix of suffixes) {
    if (name.endsWith(suffix)) yield [name.slice(0, -suffix.length), suffix];
  }
}

/**
 * The kind of a GGUF tensor name of an architecture: `blk.3.attn_q.weight`
 * is `ATTN_Q` of block 3, `blk.0.ffn_gate_inp.scale` the `.scale` of
 * `FFN_GATE_INP`. Other suffixes are read as part of the kind's name and so
 * are not found.
 *
 * @example Usage
 * ```ts
 * import { ggufTensorKind } from "./gguf_tensors.ts";
 * console.assert(ggufTensorKind("llama", "blk.3.attn_q.weight")?.block === 3);
 * console.assert(ggufTensorKind("llama", "blk.3.attn_q_norm.weight") === undefined);
 * ```
 *
 * @param arch `general.architecture`.
 * @param name The tensor's GGUF name.
 * @param extra Kinds llama.cpp's loader reads for the architecture beyond gguf-py's list
 *   (`Family.ggufLoaderKinds`).
 * @returns The kind, or `undefined` when the architecture has no such tensor.
 */
export function ggufTensorKind(
  arch: string,
  name: string,
  extra: readonly string[] = [],
): TensorKind | undefined {
  const listed = ggufTensorKinds(arch);
  if (listed === undefined) return undefined;
  const kinds = extra.length === 0 ? listed : new Set([...listed, ...extra]);
  for (const [base, suffix] of bases(name, GGUF_SUFFIXES)) {
    for (const [template, block] of templates(base)) {
      // A template with {bid} is a block's, a plain one a whole-model tensor's.
      if ((block === undefined) === template.includes("{bid}")) continue;
      const kind = BY_GGUF_NAME.get(template)?.find((k) => kinds.has(k));
      if (kind === undefined) continue;
      return block === undefined ? { kind, suffix } : { kind, block, suffix };
    }
  }
  return undefined;
}

const HF_MAPS = new Map<string, ReadonlyMap<string, string>>();

/**
 * gguf-py's `TensorNameMap(arch)` as templates: Hugging Face name (`{bid}`
 * for the block) → kind, for the kinds the architecture has. Built in its
 * order (whole-model names, then block names with the architecture's
 * overrides), a later entry replacing an earlier one as in its dict.
 */
function hfMap(arch: string): ReadonlyMap<string, string> | undefined {
  const kinds = ggufTensorKinds(arch);
  if (kinds === undefined) return undefined;
  let map = HF_MAPS.get(arch);
  if (map !== undefined) return map;
  const m = new Map<string, string>();
  const add = (table: Readonly<Record<string, string>>) => {
    for (const [kind, names] of Object.entries(table)) {
      if (!kinds.has(kind)) continue;
      m.set(TENSOR_NAMES[kind]!, kind);
      for (const n of words(names)) m.set(n, kind);
    }
  };
  add(HF_GLOBAL_NAMES);
  add({
    ...HF_BLOCK_NAMES,
    ...has(HF_BLOCK_NAMES_BY_ARCH, arch) ? HF_BLOCK_NAMES_BY_ARCH[arch] : {},
  });
  HF_MAPS.set(arch, map = m);
  return map;
}

/**
 * The kind gguf-py's `TensorNameMap` gives a Hugging Face tensor name for
 * an architecture (its `get_type_and_name` with the converter's
 * `.weight`/`.bias` suffixes), or `undefined` when it maps none — the
 * converter's class then renames it itself, or refuses it.
 *
 * @example Usage
 * ```ts
 * import { hfTensorKind } from "./gguf_tensors.ts";
 * const k = hfTensorKind("llama", "model.layers.2.self_attn.o_proj.weight");
 * console.assert(k?.kind === "ATTN_OUT" && k.block === 2 && k.suffix === ".weight");
 * ```
 *
 * @param arch `general.architecture` of the family's GGUF.
 * @param name A Hugging Face tensor name.
 * @param options A converter class's own `try_suffixes` (Gemma 4's clipped
 *   linears' `.input_max`…), and whether a block number may end a segment
 *   (`layer0`) rather than be one.
 * @returns The kind, with the block and suffix.
 */
export function hfTensorKind(
  arch: string,
  name: string,
  options: { suffixes?: readonly string[]; inSegment?: boolean } = {},
): TensorKind | undefined {
  const map = hfMap(arch);
  if (map === undefined) return undefined;
  for (const [base, suffix] of bases(name, options.suffixes)) {
    for (const [template, block] of templates(base, options.inSegment)) {
      const kind = map.get(template);
      if (kind === undefined) continue;
      return block === undefined ? { kind, suffix } : { kind, block, suffix };
    }
  }
  return undefined;
}
