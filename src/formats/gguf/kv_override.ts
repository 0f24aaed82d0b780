// This module is browser compatible.

/**
 * `--override-kv KEY=TYPE:VALUE` as llama-quantize has it
 * (`string_parse_kv_override` in llama.cpp's common.cpp, written by
 * `llama_model_quantize_impl`): a metadata pair set after the model's own,
 * replacing a key of the same name.
 *
 * @module
 */

import { UsageError } from "../../errors.ts";
import { GgufValueType } from "./header.ts";
import type { GgufKvInput } from "./writer.ts";

/** llama_model_kv_override's key and string buffers: 128 bytes with the terminator. */
const MAX_BYTES = 127;

/**
 * Keys whose value llama-quantize's type choice reads from its loader, where
 * the override applies too; aprkit chooses from the source's, so overriding
 * them is refused rather than written with other types than llama-quantize's.
 */
const TYPE_CHOICE_KEYS =
  /^(general\.architecture|[a-z0-9_]+\.(block_count|expert_count|attention\.head_count(_kv)?))$/;

/**
 * One `--override-kv` pair as llama-quantize writes it: `int:` as UINT32 of
 * the absolute value (its cast of `std::abs`), `float:` as FLOAT32, `bool:`
 * (`true` or `false`), `str:` (at most 127 bytes).
 *
 * @example Usage
 * ```ts
 * import { parseKvOverride } from "./kv_override.ts";
 * const [key, kv] = parseKvOverride("general.name=str:My model");
 * console.assert(key === "general.name" && kv.value === "My model");
 * console.assert(parseKvOverride("llama.context_length=int:-512")[1].value === 512);
 * ```
 *
 * @param text `KEY=TYPE:VALUE`.
 * @returns The key and its GGUF value.
 * @throws {UsageError} For a malformed pair, an unknown type, a value of the
 * wrong form or too long, or a key that would change llama-quantize's type choice.
 */
export function parseKvOverride(text: string): [string, GgufKvInput] {
  const eq = text.indexOf("=");
  const key = eq < 0 ? "" : text.slice(0, eq);
  const bytes = (s: string) => new TextEncoder().encode(s).length;
  if (key === "" || bytes(key) > MAX_BYTES) {
    throw new UsageError(
      `overrideKv "${text}" is not KEY=TYPE:VALUE (e.g. general.name=str:My model; keys of 1 to 127 bytes)`,
    );
  }
  if (TYPE_CHOICE_KEYS.test(key)) {
    throw new UsageError(
      `overrideKv "${text}": ${key} is one llama-quantize chooses tensor types by; ` +
        "aprkit takes it from the source and cannot override it",
    );
  }
  const rest = text.slice(eq + 1);
  const colon = rest.indexOf(":");
  const type = colon < 0 ? rest : rest.slice(0, colon);
  const value = rest.slice(colon + 1);
  const bad = (form: string): never => {
    throw new UsageError(`overrideKv "${text}": ${type}: takes ${form}, not "${value}"`);
  };
  switch (colon < 0 ? "" : type) {
    case "int": {
      if (!/^[+-]?\d+$/.test(value)) bad("a whole number");
      const n = Math.abs(Number(value));
      if (n > 0xffffffff) bad("a whole number of at most 4294967295 either side of 0 (UINT32)");
      return [key, { type: GgufValueType.UINT32, value: n }];
    }
    case "float": {
      const n = Number(value);
      if (value.trim() === "" || !Number.isFinite(n)) bad("a finite number");
      return [key, { type: GgufValueType.FLOAT32, value: n }];
    }
    case "bool":
      if (value !== "true" && value !== "false") bad("true or false");
      return [key, { type: GgufValueType.BOOL, value: value === "true" }];
    case "str":
      if (bytes(value) > MAX_BYTES) bad("at most 127 bytes");
      return [key, { type: GgufValueType.STRING, value }];
    default:
      throw new UsageError(
        `overrideKv "${text}": the type must be int, float, bool or str (KEY=TYPE:VALUE)`,
      );
  }
}
