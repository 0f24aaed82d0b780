// This module is browser compatible.

/**
 * Tensor names between llama.cpp's GGUF spelling (`blk.0.attn_q.weight`)
 * and Hugging Face's (`model.layers.0.self_attn.q_proj.weight`), from each
 * family's table, both ways. Names outside the table pass through
 * unchanged; without a family, llama's table is used.
 *
 * @module
 */

import { type Family, GLOBAL_NAMES, LLAMA_BLOCK } from "./family.ts";
import { ggufTensorKind } from "./gguf_tensors.ts";
import { FAMILIES, familyOf, familyOfGguf } from "./registry.ts";

interface Tables {
  toHf: Map<string, string>;
  toGguf: Map<string, string>;
  /** Whole-model names: the common ones and the family's own. */
  globalToHf: ReadonlyMap<string, string>;
  globalToGguf: ReadonlyMap<string, string>;
  /** The family's Hugging Face block names (`model.layers.N.<piece>.weight`). */
  hfBlock: RegExp;
  /** Where its blocks live (`model.layers`). */
  hfBlockPrefix: string;
}

const TABLES = new WeakMap<object, Tables>();
const LLAMA_KEY = {};

function tables(family: Family | undefined): Tables {
  const key = family ?? LLAMA_KEY;
  let t = TABLES.get(key);
  if (t === undefined) {
    // The shared tables (LLAMA_BLOCK's per-head norms, GLOBAL_NAMES' output)
    // hold names some architectures lack: a family's names are only the
    // kinds its GGUF architecture has (gguf-py's MODEL_TENSORS). Without a
    // family, llama's table is the generic one and keeps them all.
    const known = ([g]: readonly [string, string], block: boolean) =>
      family === undefined ||
      ggufTensorKind(family.ggufArchitecture, block ? `blk.0.${g}` : g) !== undefined;
    const block = (family?.blockNames ?? LLAMA_BLOCK).filter((p) => known(p, true));
    const toHf = new Map<string, string>();
    const toGguf = new Map<string, string>();
    for (const [g, h] of block) {
      if (!toHf.has(g)) toHf.set(g, h);
      if (!toGguf.has(h)) toGguf.set(h, g);
    }
    const globals = [...GLOBAL_NAMES, ...family?.globalNames ?? []].filter((p) => known(p, false));
    const hfBlockPrefix = family?.hfBlockPrefix ?? "model.layers";
    t = {
      hfBlockPrefix,
      hfBlock: new RegExp(
        `^${hfBlockPrefix.replaceAll(".", "\\.")}\\.(\\d+)\\.(.+)\\.(weight|bias)$`,
      ),
      toHf,
      toGguf,
      globalToHf: new Map(globals),
      globalToGguf: new Map(globals.map(([g, h]) => [h, g])),
    };
    TABLES.set(key, t);
  }
  return t;
}

// A block's piece may be dotted (`nextn.eh_proj`, an MTP block's own tensor).
const GGUF_BLOCK = /^blk\.(\d+)\.([a-z][a-z0-9_]*(?:\.[a-z][a-z0-9_]*)*)\.(weight|bias)$/;
const ANY_GLOBAL = /^(.+)\.(weight|bias)$/;

/** A family, or its architecture name (`"phi3"`), or the GGUF architecture it is filed under. */
type FamilyRef = string | { readonly name: string } | undefined;

function resolve(ref: FamilyRef): Family | undefined {
  const name = typeof ref === "string" ? ref : ref?.name;
  // A GGUF architecture named unlike its family (glm's `chatglm`).
  return familyOf(name) ?? familyOfGguf(name, false);
}

/**
 * Map a GGUF tensor name to its Hugging Face name.
 * Never throws. A name without a mapping is returned unchanged.
 *
 * @example Usage
 * ```ts
 * import { ggufToHfName } from "./names.ts";
 * console.assert(ggufToHfName("blk.3.ffn_down.weight") === "model.layers.3.mlp.down_proj.weight");
 * console.assert(ggufToHfName("blk.0.ffn_up.weight", "phi3") === "model.layers.0.mlp.gate_up_proj.weight");
 * console.assert(ggufToHfName("rope_freqs.weight") === "rope_freqs.weight");
 * ```
 *
 * @param name A GGUF tensor name.
 * @param family The family (or its architecture name); llama's names when absent or unknown.
 * @returns The Hugging Face name, or `name` unchanged when it is not in the table.
 */
export function ggufToHfName(
  name: string,
  family?: string | { readonly name: string },
): string {
  const block = GGUF_BLOCK.exec(name);
  if (block !== null) {
    const t = tables(resolve(family));
    const hf = t.toHf.get(block[2]!);
    return hf === undefined ? name : `${t.hfBlockPrefix}.${block[1]}.${hf}.${block[3]}`;
  }
  const global = ANY_GLOBAL.exec(name);
  const hf = global === null ? undefined : tables(resolve(family)).globalToHf.get(global[1]!);
  return hf === undefined ? name : `${hf}.${global![2]}`;
}

/**
 * Map a Hugging Face tensor name to its GGUF name: the inverse of
 * {@linkcode ggufToHfName}. Per-expert tensors, which GGUF stacks, have no
 * GGUF name of their own.
 * Never throws. A name without a mapping is returned unchanged.
 *
 * @example Usage
 * ```ts
 * import { hfToGgufName } from "./names.ts";
 * console.assert(hfToGgufName("model.layers.0.self_attn.q_proj.bias") === "blk.0.attn_q.bias");
 * console.assert(hfToGgufName("model.layers.1.pre_feedforward_layernorm.weight", "gemma2") === "blk.1.ffn_norm.weight");
 * console.assert(hfToGgufName("lm_head.weight") === "output.weight");
 * ```
 *
 * @param name A Hugging Face tensor name.
 * @param family The family (or its architecture name); llama's names when absent or unknown.
 * @returns The GGUF name, or `name` unchanged when it is not in the table.
 */
export function hfToGgufName(
  name: string,
  family?: string | { readonly name: string },
): string {
  const block = tables(resolve(family)).hfBlock.exec(name);
  if (block !== null) {
    const gguf = tables(resolve(family)).toGguf.get(block[2]!);
    return gguf === undefined ? name : `blk.${block[1]}.${gguf}.${block[3]}`;
  }
  const global = ANY_GLOBAL.exec(name);
  const gguf = global === null ? undefined : tables(resolve(family)).globalToGguf.get(global[1]!);
  return gguf === undefined ? name : `${gguf}.${global![2]}`;
}

/**
 * GGUF architectures (`general.architecture`) whose tensors read back under
 * Hugging Face names by renaming alone: the families whose GGUF is a pure
 * rename of their checkpoint. Others (Gemma's shifted norms, stacked
 * experts) keep their GGUF names.
 */
export const GGUF_HF_NAMED_ARCHITECTURES: ReadonlySet<string> = new Set(
  [...FAMILIES.values()].filter((f) => f.ggufRenamesOnly).map((f) => f.ggufArchitecture),
);
