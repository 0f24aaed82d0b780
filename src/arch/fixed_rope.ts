// This module is browser compatible.

/**
 * RoPE that llama.cpp's converter writes no key for: its GPT-NeoX, Phi-2
 * and StableLM classes write the rotated share of each head but neither
 * `rope.freq_base` nor a scaling, so llama.cpp rotates with its defaults
 * (base 10000, unscaled) whatever the config says.
 *
 * @module
 */

import type { KvWriter } from "./kv.ts";

/** llama.cpp's RoPE base when a file names none. */
export const DEFAULT_ROPE_BASE = 10000;

/**
 * Why llama.cpp would rotate otherwise than transformers, for a family whose
 * converter writes no RoPE base or scaling.
 *
 * @param w The writer, over the model's `config.json`.
 * @returns The refusal (one line), or `undefined` for base 10000 unscaled.
 */
export function unwrittenRopeRefusal(w: KvWriter): string | undefined {
  const theta = w.fullRope["rope_theta"] ?? DEFAULT_ROPE_BASE;
  if (theta !== DEFAULT_ROPE_BASE) {
    return `its config.json has rope_theta ${JSON.stringify(theta)}; the converter writes no ` +
      `rope.freq_base for ${w.arch} and llama.cpp computes with ${DEFAULT_ROPE_BASE}`;
  }
  const type = w.fullRope["rope_type"];
  if (type !== undefined && type !== "default") {
    return `its config.json has rope_type ${JSON.stringify(type)}; the converter writes no ` +
      `RoPE scaling for ${w.arch} and llama.cpp computes without`;
  }
  return undefined;
}
