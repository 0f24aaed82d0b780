// This module is browser compatible.

/**
 * Tensors llama.cpp's converter makes from the RoPE configuration:
 * `rope_freqs.weight` for Llama 3's frequency scaling (`LlamaModel.
 * generate_extra_tensors`, conversion/llama.py) and Phi-3's LongRoPE
 * `rope_factors_long/short.weight` (`Phi3MiniModel`, conversion/phi.py).
 * Computed in float32 step by step, as torch does.
 *
 * @module
 */

import type { GeneratedTensor } from "./family.ts";
import type { KvWriter } from "./kv.ts";

const f = Math.fround;

/**
 * Llama 3's per-frequency RoPE factors, or nothing when the model's RoPE
 * type is not `llama3`.
 *
 * @param w The writer over `config.json`.
 * @returns `rope_freqs.weight`, or nothing.
 */
export function llama3RopeFreqs(w: KvWriter): GeneratedTensor[] {
  const rope = w.fullRope;
  const type = rope["rope_type"];
  if (typeof type !== "string" || type.toLowerCase() !== "llama3") return [];
  const num = (key: string, fallback: number): number => {
    const v = rope[key];
    return typeof v === "number" && Number.isFinite(v) ? v : fallback;
  };
  const base = num("rope_theta", 10000);
  const dim = w.num("head_dim") ??
    Math.trunc(w.need("hidden_size") / w.need("num_attention_heads"));
  if (!Number.isSafeInteger(dim) || dim <= 0 || dim > 1 << 16) {
    throw new RangeError(`config.json: head size ${dim} is not a positive integer`);
  }
  const factor = num("factor", 8);
  const low = num("low_freq_factor", 1);
  const high = num("high_freq_factor", 4);
  const oldContext = num("original_max_position_embeddings", 8192);
  const lowWavelen = oldContext / low;
  const highWavelen = oldContext / high;
  const values = new Float32Array(Math.ceil(dim / 2));
  for (let i = 0; i < values.length; i++) {
    const freq = f(1 / f(Math.pow(base, f(f(2 * i) / dim))));
    // torch casts the Python scalar to float32 before dividing.
    const wavelen = f(f(2 * Math.PI) / freq);
    if (wavelen < highWavelen) values[i] = 1;
    else if (wavelen > lowWavelen) values[i] = factor;
    else {
      const smooth = f(f(f(oldContext / wavelen) - low) / (high - low));
      values[i] = f(1 / f(f(f(1 - smooth) / factor) + smooth));
    }
  }
  return [{ name: "rope_freqs.weight", values }];
}

/**
 * Phi-3's LongRoPE factors (`rope_scaling.long_factor`/`short_factor`), with
 * `rope.scaling.attn_factor` written as the converter does; nothing for a
 * model without them.
 *
 * @param w The writer over `config.json`.
 * @returns `rope_factors_long.weight` and `rope_factors_short.weight`, or nothing.
 * @throws {RangeError} When the factors are missing or do not match the rotary size.
 */
export function phi3RopeFactors(w: KvWriter): GeneratedTensor[] {
  const long = w.rope["long_factor"];
  if (!Array.isArray(long) || long.length === 0) return [];
  const nEmbd = w.need("hidden_size", "n_embd");
  const nHead = w.need("num_attention_heads", "n_head");
  const maxPos = w.need("n_positions", "max_position_embeddings");
  const origPos = w.rope["original_max_position_embeddings"];
  if (typeof origPos !== "number") {
    throw new RangeError("config.json has no original_max_position_embeddings for LongRoPE");
  }
  const rot = typeof w.rope["partial_rotary_factor"] === "number"
    ? w.rope["partial_rotary_factor"] as number
    : 1;
  const ropeDims = Math.trunc(Math.trunc(rot * nEmbd) / nHead);
  const scale = maxPos / origPos;
  const type = String(w.rope["rope_type"] ?? "").toLowerCase();
  let attn: number;
  if (type === "su" || type === "longrope") {
    attn = scale > 1 ? Math.sqrt(1 + Math.log(scale) / Math.log(origPos)) : 1;
  } else if (type === "yarn") {
    attn = scale > 1 ? 0.1 * Math.log(scale) + 1 : 1;
  } else {
    throw new RangeError(
      `config.json: RoPE scaling type "${type}" with long factors is not supported`,
    );
  }
  w.f32("rope.scaling.attn_factor", attn);
  return longRopeFactors(w, ropeDims);
}

/**
 * The LongRoPE factor tensors as the converter makes them
 * (`rope_scaling.long_factor`/`short_factor`, one per rotary frequency pair),
 * without a key; nothing for a model without them.
 *
 * @param w The writer over `config.json`.
 * @param ropeDims The rotated dimensions of a head.
 * @returns `rope_factors_long.weight` and `rope_factors_short.weight`, or nothing.
 * @throws {RangeError} When the factors are missing or do not match the rotary size.
 */
export function longRopeFactors(w: KvWriter, ropeDims: number): GeneratedTensor[] {
  const long = w.rope["long_factor"];
  const short = w.rope["short_factor"];
  if (!Array.isArray(long) || long.length === 0) return [];
  if (!Array.isArray(short) || long.length !== short.length || long.length !== ropeDims / 2) {
    throw new RangeError(
      `config.json: the LongRoPE long and short factors must have ${ropeDims / 2} values each`,
    );
  }
  const floats = (xs: unknown[]) => {
    if (!xs.every((x) => typeof x === "number")) {
      throw new RangeError("config.json: a LongRoPE factor is not a number");
    }
    return Float32Array.from(xs as number[]);
  };
  return [
    { name: "rope_factors_long.weight", values: floats(long) },
    { name: "rope_factors_short.weight", values: floats(short) },
  ];
}
