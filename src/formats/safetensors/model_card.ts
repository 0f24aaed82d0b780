// This module is browser compatible.

/**
 * A model card's YAML header (`README.md`'s front matter), read as
 * llama.cpp's converter reads it (gguf-py's `Metadata.load_model_card`,
 * de3ff81): the first line must be exactly `---`, the header runs to the next
 * line that is exactly `---`; `- no` is quoted (the "Norway problem": YAML
 * 1.1 reads Norwegian's language code as false) and tabs become two spaces,
 * as the converter does before parsing. Only the keys the converter reads
 * are kept (`MODEL_CARD_KEYS` of `arch/hf_model_card.ts`), so a card's long `model-index` or gating
 * form does not travel into every APR file.
 *
 * Bounded like the other companion files: only the first
 * {@linkcode MAX_MODEL_CARD_BYTES} of `README.md` are read (the header must
 * close within them; the prose after it is never read).
 *
 * @module
 */

import { ModelFormatError } from "../../errors.ts";
import { parseYamlSubset, YamlSubsetError } from "./yaml_subset.ts";
import { MODEL_CARD_KEYS } from "../../arch/hf_model_card.ts";

/** Bytes of `README.md` read: real headers are under 100 kB (Llama 3.1's, with its licence, ~60 kB). */
export const MAX_MODEL_CARD_BYTES = 1 << 20;

/** Python's `str.splitlines` line breaks (its file separators included). */
// deno-lint-ignore no-control-regex
const LINE_BREAKS = /\r\n|[\n\r\v\f\x1c\x1d\x1e\x85\u2028\u2029]/;

/**
 * The YAML text of a model card's header, as the converter cuts it, or
 * undefined when the card has none. `complete` says whether `text` is the
 * whole file (an unclosed header then runs to its end, as in the converter).
 */
function headerText(text: string, complete: boolean, location: string): string | undefined {
  const lines = text.split(LINE_BREAKS);
  if (lines[0] !== "---") return undefined;
  const close = lines.indexOf("---", 1);
  if (close < 0 && !complete) {
    throw new ModelFormatError(
      "model card",
      location,
      `the YAML header does not close (no "---" line) within its first ${MAX_MODEL_CARD_BYTES} bytes`,
    );
  }
  const yaml = lines.slice(1, close < 0 ? undefined : close).join("\n") + "\n";
  return yaml.replaceAll("- no\n", '- "no"\n').replaceAll("\t", "  ");
}

/**
 * Read a model card's header: the keys gguf-py reads, in the card's order.
 *
 * @example Usage
 * ```ts
 * import { readModelCard } from "./model_card.ts";
 * const card = readModelCard("---\nlicense: mit\nlanguage:\n- no\n---\n# Model\n", true, "README.md");
 * console.assert(card?.["license"] === "mit" && (card["language"] as string[])[0] === "no");
 * ```
 *
 * @param text The start of `README.md` (at most {@linkcode MAX_MODEL_CARD_BYTES}), decoded.
 * @param complete Whether `text` is the whole file.
 * @param location Its path or URL, for messages.
 * @returns The keys, or undefined for a card without a header (or an empty one).
 * @throws {ModelFormatError} When the header is malformed, outside the YAML the
 * reader knows, or not a mapping.
 */
export function readModelCard(
  text: string,
  complete: boolean,
  location: string,
): Record<string, unknown> | undefined {
  const yaml = headerText(text, complete, location);
  if (yaml === undefined || yaml.trim() === "") return undefined;
  let value: unknown;
  try {
    value = parseYamlSubset(yaml);
  } catch (cause) {
    if (!(cause instanceof YamlSubsetError)) throw cause;
    // The header starts on the file's second line.
    throw new ModelFormatError(
      "model card",
      location,
      `its YAML header, ${cause.message.replace(/^line (\d+)/, (_, n) => `line ${Number(n) + 1}`)}`,
      { cause },
    );
  }
  if (value === null || value === undefined) return undefined;
  if (typeof value !== "object" || Array.isArray(value)) {
    throw new ModelFormatError("model card", location, "its YAML header is not a mapping");
  }
  const card = value as Record<string, unknown>;
  const out: Record<string, unknown> = {};
  for (const key of Object.keys(card)) {
    if (MODEL_CARD_KEYS.includes(key)) out[key] = jsonSafe(card[key]);
  }
  return out;
}

/** NaN and ±infinity (`.nan`, `.inf`) have no JSON form: APR metadata is JSON. */
function jsonSafe(value: unknown): unknown {
  if (typeof value === "number" && !Number.isFinite(value)) return String(value);
  if (Array.isArray(value)) return value.map(jsonSafe);
  if (value !== null && typeof value === "object") {
    return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, jsonSafe(v)]));
  }
  return value;
}
