// This module is browser compatible.

/**
 * A strict JSON parser for SafeTensors headers. `JSON.parse` cannot be used
 * directly: it silently keeps the last of two equal keys (FORMATS.md S11) and
 * rounds integers above 2^53 (S13), so a header could mean something other
 * than what the file says. This parser keeps every number's source text and
 * reports duplicate keys, with their position.
 *
 * @module
 */

/** A JSON number with its source text, so integer checks see what the file says. */
export class JsonNumber {
  /** The number as written, e.g. `"18446744073709551614"` or `"1.5"`. */
  readonly raw: string;

  /** @param raw The number's source text. */
  constructor(raw: string) {
    this.raw = raw;
  }

  /**
   * The value when the text is a plain non-negative integer (`0` or
   * `[1-9][0-9]*`, no sign, fraction or exponent) of at most 2^53 − 1.
   * Returns `"unsafe"` for larger integers and `undefined` for anything else.
   */
  safeInteger(): number | "unsafe" | undefined {
    if (!/^(?:0|[1-9][0-9]*)$/.test(this.raw)) return undefined;
    // Up to 15 digits is always below 2^53: skip the BigInt.
    if (this.raw.length <= 15) return Number(this.raw);
    const value = BigInt(this.raw);
    return value > BigInt(Number.MAX_SAFE_INTEGER) ? "unsafe" : Number(value);
  }
}

/** A parsed JSON object: keys in source order with the position of each key. */
export class JsonObject {
  /** Keys, in source order. */
  readonly keys: string[] = [];
  /** Values, parallel to `keys`. */
  readonly values: JsonValue[] = [];
  /** Character position of each key's opening quote, parallel to `keys`. */
  readonly positions: number[] = [];
  // Header entries have three keys: a linear scan beats building a Map per
  // entry; the top-level object (one key per tensor) gets a Map.
  #index: Map<string, number> | undefined;

  /** Index of `key` in `keys`, or -1. */
  indexOf(key: string): number {
    if (this.#index !== undefined) return this.#index.get(key) ?? -1;
    return this.keys.indexOf(key);
  }

  /** The value of `key`, or `undefined`. */
  get(key: string): JsonValue | undefined {
    const i = this.indexOf(key);
    return i === -1 ? undefined : this.values[i];
  }

  /** Add an entry; returns false (adding nothing) when the key is already there. */
  add(key: string, value: JsonValue, position: number): boolean {
    if (this.indexOf(key) !== -1) return false;
    if (this.#index === undefined && this.keys.length >= 8) {
      this.#index = new Map(this.keys.map((k, i) => [k, i]));
    }
    this.#index?.set(key, this.keys.length);
    this.keys.push(key);
    this.values.push(value);
    this.positions.push(position);
    return true;
  }
}

/** A parsed JSON value. */
export type JsonValue = null | boolean | string | JsonNumber | JsonValue[] | JsonObject;

/** Thrown for malformed JSON; `position` is a character index into the text. */
export class JsonSyntaxError extends Error {
  /** Character index of the problem. */
  readonly position: number;
  /** Set when the problem is a repeated key: the key, and the nesting depth (1 = top level). */
  readonly duplicate: { key: string; depth: number } | undefined;

  /**
   * @param message What is wrong.
   * @param position Character index of the problem.
   * @param duplicate The repeated key, when that is the problem.
   */
  constructor(message: string, position: number, duplicate?: { key: string; depth: number }) {
    super(message);
    this.position = position;
    this.duplicate = duplicate;
  }
}

// SafeTensors headers nest three levels deep ({name: {shape: [..]}}); a cap far
// above that keeps a hostile `[[[[...` from exhausting the call stack.
const MAX_DEPTH = 64;

const NUMBER = /-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?/y;

/**
 * Receives each member of the top-level object as soon as it is parsed.
 *
 * @param key The member's key.
 * @param value Its value.
 * @param position Character position of the key's opening quote.
 */
export type JsonEntryCallback = (key: string, value: JsonValue, position: number) => void;

/**
 * Parse JSON text strictly (RFC 8259), rejecting duplicate keys in any object.
 *
 * @param text The JSON text.
 * @param maxValues Most values (objects, arrays, strings, numbers, literals)
 *   accepted: each costs tens of bytes of memory, so a hostile text of
 *   millions of tiny values is stopped before it exhausts memory.
 * @param onEntry When given and the text is an object, each of its members is
 *   handed here as it is parsed and not kept: the returned object is empty. A
 *   SafeTensors header of 261,000 entries held as a tree peaked near 600 MB
 *   (~2.5 KB per entry in objects, arrays and number wrappers); streamed, each
 *   entry's tree is garbage as soon as the caller has read it (issue 34 §1).
 * @returns The value, numbers kept as {@linkcode JsonNumber}.
 * @throws {JsonSyntaxError} On malformed JSON, a repeated key, or more than `maxValues` values.
 */
export function parseJsonStrict(
  text: string,
  maxValues = Number.POSITIVE_INFINITY,
  onEntry?: JsonEntryCallback,
): JsonValue {
  let i = 0;
  let values = 0;

  const fail = (message: string, at = i): never => {
    throw new JsonSyntaxError(message, at);
  };
  const skipSpace = (): void => {
    for (;;) {
      const c = text.charCodeAt(i);
      if (c === 0x20 || c === 0x0a || c === 0x0d || c === 0x09) i++;
      else return;
    }
  };
  const describe = (): string => i >= text.length ? "end of text" : JSON.stringify(text[i]);

  const parseString = (): string => {
    const start = i;
    i++; // opening quote
    let out = "";
    let runStart = i;
    for (;;) {
      if (i >= text.length) fail("unterminated string", start);
      const c = text.charCodeAt(i);
      if (c === 0x22) {
        out += text.slice(runStart, i);
        i++;
        return out;
      }
      if (c < 0x20) fail("control character in string");
      if (c !== 0x5c) {
        i++;
        continue;
      }
      out += text.slice(runStart, i);
      const e = text[i + 1];
      switch (e) {
        case '"':
        case "\\":
        case "/":
          out += e;
          i += 2;
          break;
        case "b":
          out += "\b";
          i += 2;
          break;
        case "f":
          out += "\f";
          i += 2;
          break;
        case "n":
          out += "\n";
          i += 2;
          break;
        case "r":
          out += "\r";
          i += 2;
          break;
        case "t":
          out += "\t";
          i += 2;
          break;
        case "u": {
          const hex = text.slice(i + 2, i + 6);
          if (!/^[0-9a-fA-F]{4}$/.test(hex)) fail("invalid \\u escape");
          out += String.fromCharCode(parseInt(hex, 16));
          i += 6;
          break;
        }
        default:
          fail("invalid escape in string");
      }
      runStart = i;
    }
  };

  const parseValue = (depth: number): JsonValue => {
    skipSpace();
    if (++values > maxValues) fail(`more than ${maxValues} JSON values`);
    const c = text[i];
    if (c === "{") {
      if (depth >= MAX_DEPTH) fail(`nesting deeper than ${MAX_DEPTH} levels`);
      const object = new JsonObject();
      // The streamed top level keeps only its keys, for the duplicate check.
      const streamed = depth === 0 && onEntry !== undefined ? new Set<string>() : undefined;
      const has = (key: string): boolean =>
        streamed === undefined ? object.indexOf(key) !== -1 : streamed.has(key);
      i++;
      skipSpace();
      if (text[i] === "}") {
        i++;
        return object;
      }
      for (;;) {
        skipSpace();
        if (text[i] !== '"') fail(`expected a key string, found ${describe()}`);
        const keyAt = i;
        const key = parseString();
        if (has(key)) {
          throw new JsonSyntaxError(`key ${JSON.stringify(key)} appears twice`, keyAt, {
            key,
            depth: depth + 1,
          });
        }
        skipSpace();
        if (text[i] !== ":") fail(`expected ":", found ${describe()}`);
        i++;
        const value = parseValue(depth + 1);
        if (streamed === undefined) object.add(key, value, keyAt);
        else {
          streamed.add(key);
          onEntry!(key, value, keyAt);
        }
        skipSpace();
        if (text[i] === ",") {
          i++;
          continue;
        }
        if (text[i] === "}") {
          i++;
          return object;
        }
        fail(`expected "," or "}", found ${describe()}`);
      }
    }
    if (c === "[") {
      if (depth >= MAX_DEPTH) fail(`nesting deeper than ${MAX_DEPTH} levels`);
      const array: JsonValue[] = [];
      i++;
      skipSpace();
      if (text[i] === "]") {
        i++;
        return array;
      }
      for (;;) {
        array.push(parseValue(depth + 1));
        skipSpace();
        if (text[i] === ",") {
          i++;
          continue;
        }
        if (text[i] === "]") {
          i++;
          return array;
        }
        fail(`expected "," or "]", found ${describe()}`);
      }
    }
    if (c === '"') return parseString();
    if (text.startsWith("true", i)) {
      i += 4;
      return true;
    }
    if (text.startsWith("false", i)) {
      i += 5;
      return false;
    }
    if (text.startsWith("null", i)) {
      i += 4;
      return null;
    }
    NUMBER.lastIndex = i;
    const match = NUMBER.exec(text);
    if (match === null) fail(`unexpected ${describe()}`);
    i += match![0].length;
    return new JsonNumber(match![0]);
  };

  const value = parseValue(0);
  skipSpace();
  if (i < text.length) fail(`unexpected ${describe()} after the JSON value`);
  return value;
}
