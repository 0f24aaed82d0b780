// This module is browser compatible.

/**
 * A small YAML reader for the subset model cards' front matter uses, read as
 * PyYAML's `yaml.safe_load` reads it (llama.cpp's converter parses model
 * cards with it): block mappings and sequences (the compact `key:\n- a`
 * form too), flow sequences and mappings (`[a, "b"]`, `{k: v}`), plain,
 * single- and double-quoted scalars (multi-line ones folded), literal and
 * folded block scalars (`|`, `>`, with `-`/`+`), comments, and YAML 1.1's
 * scalar types (`yes`/`no`/`on`/`off` are booleans, `1.0` a float, `0o`
 * octal, `~` null). Timestamps stay strings.
 *
 * Anchors, aliases, tags, complex keys and multiple documents are refused:
 * model cards do not use them, and a reader of less than the whole language
 * should say so rather than guess. Hand-written rather than a YAML package
 * (a 100 kB dependency for the dozen keys the converter reads); bounded by
 * the caller's byte limit and by {@linkcode MAX_YAML_DEPTH}.
 *
 * @module
 */

/** Deepest nesting read: real front matter nests 4–6 levels (`model-index`). */
export const MAX_YAML_DEPTH = 64;

/** A YAML text outside the subset, or malformed; `line` counts from 1. */
export class YamlSubsetError extends Error {
  /** The line (from 1) where reading stopped. */
  readonly line: number;
  /**
   * @param message What is wrong.
   * @param line The line, from 1.
   */
  constructor(message: string, line: number) {
    super(`line ${line}: ${message}`);
    this.name = "YamlSubsetError";
    this.line = line;
  }
}

const BOOL = /^(?:yes|Yes|YES|no|No|NO|true|True|TRUE|false|False|FALSE|on|On|ON|off|Off|OFF)$/;
const NULL = /^(?:~|null|Null|NULL|)$/;
// PyYAML's resolver (YAML 1.1): a float needs a dot; `1e5` is a string.
const FLOAT =
  /^(?:[-+]?(?:[0-9][0-9_]*)\.[0-9_]*(?:[eE][-+][0-9]+)?|\.[0-9][0-9_]*(?:[eE][-+][0-9]+)?|[-+]?[0-9][0-9_]*(?::[0-5]?[0-9])+\.[0-9_]*|[-+]?\.(?:inf|Inf|INF)|\.(?:nan|NaN|NAN))$/;
const INT =
  /^(?:[-+]?0b[0-1_]+|[-+]?0[0-7_]+|[-+]?(?:0|[1-9][0-9_]*)|[-+]?0x[0-9a-fA-F_]+|[-+]?[1-9][0-9_]*(?::[0-5]?[0-9])+)$/;

/** A plain scalar's value, as PyYAML's YAML 1.1 resolver types it. */
function resolvePlain(text: string): unknown {
  if (NULL.test(text)) return null;
  if (BOOL.test(text)) return /^(?:yes|true|on)$/i.test(text);
  if (INT.test(text)) return parseInt11(text.replaceAll("_", ""));
  if (FLOAT.test(text)) return parseFloat11(text.replaceAll("_", "").toLowerCase());
  return text;
}

function sexagesimal(text: string): number {
  const sign = text.startsWith("-") ? -1 : 1;
  let value = 0;
  for (const part of text.replace(/^[-+]/, "").split(":")) value = value * 60 + Number(part);
  return sign * value;
}

function parseInt11(text: string): number {
  if (text.includes(":")) return sexagesimal(text);
  const sign = text.startsWith("-") ? -1 : 1;
  const digits = text.replace(/^[-+]/, "");
  if (digits.startsWith("0b")) return sign * parseInt(digits.slice(2), 2);
  if (digits.startsWith("0x")) return sign * parseInt(digits.slice(2), 16);
  if (digits.length > 1 && digits.startsWith("0")) return sign * parseInt(digits, 8);
  return sign * Number(digits);
}

function parseFloat11(text: string): number {
  if (text.endsWith("inf")) return text.startsWith("-") ? -Infinity : Infinity;
  if (text.endsWith("nan")) return NaN;
  if (text.includes(":")) return sexagesimal(text);
  return Number(text);
}

const ESCAPES: Readonly<Record<string, string>> = {
  "0": "\0",
  a: "\x07",
  b: "\b",
  t: "\t",
  "\t": "\t",
  n: "\n",
  v: "\v",
  f: "\f",
  r: "\r",
  e: "\x1b",
  " ": " ",
  '"': '"',
  "/": "/",
  "\\": "\\",
  N: "\x85",
  _: "\xa0",
  L: "\u2028",
  P: "\u2029",
};
const HEX_ESCAPES: Readonly<Record<string, number>> = { x: 2, u: 4, U: 8 };

/** Fold a quoted scalar's line breaks as YAML does: one break → space, n breaks → n − 1 newlines. */
function foldQuoted(raw: string): string {
  return raw.replace(/[ \t]*\n(?:[ \t]*\n)*[ \t]*/g, (m) => {
    const breaks = m.split("\n").length - 1;
    return breaks === 1 ? " " : "\n".repeat(breaks - 1);
  });
}

class Reader {
  readonly lines: string[];
  i = 0;

  constructor(text: string) {
    this.lines = text.split("\n");
  }

  fail(message: string, line = this.i): never {
    throw new YamlSubsetError(message, line + 1);
  }

  /** Skip blank and comment-only lines; the next line's indent, or -1 at the end. */
  nextIndent(): number {
    while (this.i < this.lines.length) {
      const line = this.lines[this.i]!;
      const content = line.trimStart();
      if (content === "" || content.startsWith("#")) {
        this.i++;
        continue;
      }
      if (line.startsWith("---") || line.startsWith("...")) {
        this.fail("more than one YAML document");
      }
      return line.length - content.length;
    }
    return -1;
  }

  /** A node whose lines are indented more than `parent` (or, for a sequence, as much: `key:\n- a`). */
  node(parent: number, depth: number, sequenceAtParent: boolean): unknown {
    if (depth > MAX_YAML_DEPTH) this.fail(`nested deeper than ${MAX_YAML_DEPTH} levels`);
    const indent = this.nextIndent();
    if (indent < 0) return null;
    const content = this.lines[this.i]!.slice(indent);
    const isItem = content === "-" || content.startsWith("- ");
    if (indent < parent || (indent === parent && !(sequenceAtParent && isItem))) return null;
    if (isItem) return this.sequence(indent, depth);
    if (keyEnd(content) !== undefined) return this.mapping(indent, depth);
    // A scalar on lines of its own.
    const start = this.i;
    this.i++;
    return this.inline(content, start, indent - 1, depth);
  }

  sequence(indent: number, depth: number): unknown[] {
    const out: unknown[] = [];
    while (this.nextIndent() === indent) {
      const line = this.lines[this.i]!;
      const content = line.slice(indent);
      if (!(content === "-" || content.startsWith("- "))) break;
      const rest = content.slice(1);
      const after = rest.trimStart();
      if (after === "" || after.startsWith("#")) {
        this.i++;
        out.push(this.node(indent, depth + 1, false));
        continue;
      }
      // "- key: v" or "- - x": the item is a node starting at the text's column.
      const column = indent + 1 + (rest.length - after.length);
      this.lines[this.i] = " ".repeat(column) + after;
      if (after === "-" || after.startsWith("- ") || keyEnd(after) !== undefined) {
        out.push(this.node(indent, depth + 1, false));
        continue;
      }
      const start = this.i;
      this.i++;
      out.push(this.inline(after, start, indent, depth + 1));
    }
    return out;
  }

  mapping(indent: number, depth: number): Record<string, unknown> {
    const out: Record<string, unknown> = {};
    while (this.nextIndent() === indent) {
      const start = this.i;
      const content = this.lines[start]!.slice(indent);
      if (content === "-" || content.startsWith("- ")) break;
      const end = keyEnd(content);
      if (end === undefined) this.fail("expected a key (`key: value`)");
      const key = keyText(content.slice(0, end), this, start);
      const rest = content.slice(end + 1).trimStart();
      this.i++;
      let value: unknown;
      if (rest === "" || rest.startsWith("#")) value = this.node(indent, depth + 1, true);
      else value = this.inline(rest, start, indent, depth + 1);
      // PyYAML keeps the last of repeated keys.
      Object.defineProperty(out, key, {
        value,
        enumerable: true,
        writable: true,
        configurable: true,
      });
    }
    return out;
  }

  /**
   * A value starting inside line `start` (its text `text`), continued on the
   * next lines indented more than `parent`.
   */
  inline(text: string, start: number, parent: number, depth: number): unknown {
    const first = text[0];
    if (first === "&" || first === "*" || first === "!") {
      this.fail("anchors, aliases and tags are not read", start);
    }
    if (first === "?" && (text.length === 1 || text[1] === " ")) {
      this.fail("complex keys are not read", start);
    }
    if (first === "|" || first === ">") return this.blockScalar(text, start, parent);
    // Quoted and flow values may run over several lines: gather them.
    let joined = text;
    const continuation = (): boolean => {
      if (this.i >= this.lines.length) return false;
      const line = this.lines[this.i]!;
      const content = line.trimStart();
      return content === "" || line.length - content.length > parent;
    };
    if (first === '"' || first === "'" || first === "[" || first === "{") {
      // The lines up to where its quotes and brackets close (flow values may
      // run back to any column, as PyYAML reads them), scanned once and
      // parsed once: a long value costs time linear in its length.
      const scanner = new FlowScanner();
      let closed = scanner.feed(text);
      while (!closed && this.i < this.lines.length) {
        const line = this.lines[this.i]!;
        joined += "\n" + line;
        this.i++;
        closed = scanner.feed("\n" + line);
      }
      const parsed = tryFlow(joined, depth);
      if (parsed === undefined) this.fail("unterminated quoted or flow value", start);
      if (parsed.rest.trim() !== "" && !/^\s+#/.test(parsed.rest)) {
        this.fail(`unexpected text after the value: ${parsed.rest.trim().slice(0, 20)}`, start);
      }
      return parsed.value;
    }
    // A plain scalar: the line's text up to a comment, then more-indented lines.
    const parts = [stripComment(text)];
    while (continuation()) {
      const content = this.lines[this.i]!.trim();
      if (content.startsWith("#")) break;
      parts.push(stripComment(content));
      this.i++;
    }
    while (parts.length > 1 && parts.at(-1) === "") parts.pop();
    let value = "";
    let blanks = 0;
    for (const [k, part] of parts.entries()) {
      if (part === "") {
        blanks++;
        continue;
      }
      if (k > 0) value += blanks > 0 ? "\n".repeat(blanks) : " ";
      blanks = 0;
      value += part;
    }
    return parts.length > 1 ? value : resolvePlain(value);
  }

  blockScalar(header: string, start: number, parent: number): string {
    const m = /^([|>])([-+]?)([1-9]?)([-+]?)\s*(?:#.*)?$/.exec(header);
    if (m === null) this.fail("malformed block scalar header", start);
    const folded = m[1] === ">";
    const chomp = m[2] || m[4];
    const lines: string[] = [];
    while (this.i < this.lines.length) {
      const line = this.lines[this.i]!;
      const content = line.trimStart();
      if (content !== "" && line.length - content.length <= parent) break;
      lines.push(line);
      this.i++;
    }
    const firstText = lines.find((l) => l.trim() !== "");
    const indent = m[3]
      ? Math.max(parent, 0) + Number(m[3])
      : firstText === undefined
      ? 0
      : firstText.length - firstText.trimStart().length;
    const body = lines.map((l) => l.slice(Math.min(indent, l.length - l.trimStart().length)));
    let trailing = 0;
    while (body.length > 0 && body.at(-1)!.trim() === "") {
      body.pop();
      trailing++;
    }
    let text: string;
    if (!folded) {
      text = body.join("\n");
    } else {
      text = "";
      let previousMore = true;
      let blanks = 0;
      for (const [k, line] of body.entries()) {
        if (line.trim() === "") {
          blanks++;
          continue;
        }
        const more = /^[ \t]/.test(line);
        if (k > 0 && text !== "") {
          text += blanks > 0
            ? "\n".repeat(blanks + (more || previousMore ? 1 : 0))
            : more || previousMore
            ? "\n"
            : " ";
        } else if (blanks > 0) {
          text += "\n".repeat(blanks);
        }
        blanks = 0;
        text += line;
        previousMore = more;
      }
    }
    if (body.length === 0) return chomp === "+" ? "\n".repeat(trailing) : "";
    if (chomp === "-") return text;
    if (chomp === "+") return text + "\n" + "\n".repeat(trailing);
    return text + "\n";
  }
}

/** Where a quoted or flow value ends: fed its lines, says when its quotes and brackets have closed. */
class FlowScanner {
  #depth = 0;
  #quote: string | undefined;
  #escaped = false;
  #comment = false;
  #previous = " ";
  #started = false;

  /** Feed the next line; true when the value has closed by its end. */
  feed(text: string): boolean {
    for (const c of text) {
      const previous = this.#previous;
      this.#previous = c;
      if (this.#comment) {
        if (c === "\n") this.#comment = false;
        continue;
      }
      if (this.#quote !== undefined) {
        if (this.#escaped) this.#escaped = false;
        else if (this.#quote === '"' && c === "\\") this.#escaped = true;
        // A doubled '' is a quote inside: closing then reopening gives the same.
        else if (c === this.#quote) this.#quote = undefined;
        continue;
      }
      if (c === '"' || c === "'") {
        this.#quote = c;
        this.#started = true;
      } else if (c === "[" || c === "{") {
        this.#depth++;
        this.#started = true;
      } else if (c === "]" || c === "}") {
        this.#depth--;
      } else if (c === "#" && /\s/.test(previous)) {
        this.#comment = true;
      }
    }
    return this.#started && this.#depth <= 0 && this.#quote === undefined;
  }
}

/** The index of a mapping key's `:` in a line (outside quotes), or undefined. */
function keyEnd(content: string): number | undefined {
  const first = content[0];
  if (first === '"' || first === "'") {
    const close = quotedEnd(content, 0);
    if (close === undefined) return undefined;
    const after = content.slice(close + 1);
    const m = /^\s*:(?:\s|$)/.exec(after);
    return m === null ? undefined : close + 1 + m[0].indexOf(":");
  }
  if (first === "[" || first === "{" || first === "#" || first === "|" || first === ">") {
    return undefined;
  }
  for (let k = 0; k < content.length; k++) {
    const c = content[k];
    if (c === "#" && k > 0 && /\s/.test(content[k - 1]!)) return undefined;
    if (c === ":" && (k + 1 === content.length || /\s/.test(content[k + 1]!))) return k;
  }
  return undefined;
}

/** Where a quoted scalar that opens at `open` closes, or undefined. */
function quotedEnd(text: string, open: number): number | undefined {
  const quote = text[open];
  for (let k = open + 1; k < text.length; k++) {
    const c = text[k];
    if (quote === '"' && c === "\\") {
      k++;
    } else if (c === quote) {
      if (quote === "'" && text[k + 1] === "'") {
        k++;
        continue;
      }
      return k;
    }
  }
  return undefined;
}

function keyText(raw: string, reader: Reader, line: number): string {
  const text = raw.trimEnd();
  if (text.startsWith('"') || text.startsWith("'")) {
    const parsed = tryFlow(text, 0);
    if (parsed === undefined || typeof parsed.value !== "string") {
      reader.fail("malformed key", line);
    }
    return parsed.value as string;
  }
  if (text.startsWith("&") || text.startsWith("*") || text.startsWith("!")) {
    reader.fail("anchors, aliases and tags are not read", line);
  }
  // A plain key is a string whatever it looks like (`1.0:`): PyYAML would
  // type it, but no model-card key the converter reads is a number.
  return text;
}

function stripComment(text: string): string {
  const m = /\s#/.exec(text);
  return (m === null ? text : text.slice(0, m.index)).trim();
}

/** A quoted or flow value at the start of `text`: its value and what follows, or undefined if unfinished. */
function tryFlow(text: string, depth: number): { value: unknown; rest: string } | undefined {
  const state = { text, k: 0, depth };
  try {
    const value = flowValue(state);
    return { value, rest: text.slice(state.k) };
  } catch (error) {
    if (error === UNFINISHED) return undefined;
    throw error;
  }
}

const UNFINISHED = Symbol("unfinished");

interface FlowState {
  text: string;
  k: number;
  depth: number;
}

function skipSpace(s: FlowState): void {
  while (s.k < s.text.length) {
    const c = s.text[s.k]!;
    if (c === " " || c === "\t" || c === "\n" || c === "\r") s.k++;
    else if (c === "#" && (s.k === 0 || /\s/.test(s.text[s.k - 1]!))) {
      while (s.k < s.text.length && s.text[s.k] !== "\n") s.k++;
    } else break;
  }
}

function flowValue(s: FlowState): unknown {
  if (s.depth > MAX_YAML_DEPTH) {
    throw new YamlSubsetError(`nested deeper than ${MAX_YAML_DEPTH} levels`, 0);
  }
  skipSpace(s);
  const c = s.text[s.k];
  if (c === undefined) throw UNFINISHED;
  if (c === '"') return doubleQuoted(s);
  if (c === "'") return singleQuoted(s);
  if (c === "[" || c === "{") {
    const close = c === "[" ? "]" : "}";
    s.k++;
    const list: unknown[] = [];
    const map: Record<string, unknown> = {};
    for (;;) {
      skipSpace(s);
      if (s.k >= s.text.length) throw UNFINISHED;
      if (s.text[s.k] === close) {
        s.k++;
        return c === "[" ? list : map;
      }
      const item = flowValueAt({ ...s, depth: s.depth + 1 }, s);
      skipSpace(s);
      if (c === "{") {
        let value: unknown = null;
        if (s.text[s.k] === ":") {
          s.k++;
          value = flowValueAt({ ...s, depth: s.depth + 1 }, s);
          skipSpace(s);
        }
        map[String(item)] = value;
      } else {
        list.push(item);
      }
      if (s.k >= s.text.length) throw UNFINISHED;
      if (s.text[s.k] === ",") s.k++;
      else if (s.text[s.k] !== close) {
        throw new YamlSubsetError(`unexpected "${s.text[s.k]}" in a flow collection`, 0);
      }
    }
  }
  // A plain scalar inside a flow collection ends at , [ ] { } or ": ".
  const start = s.k;
  while (s.k < s.text.length) {
    const ch = s.text[s.k]!;
    if (ch === "," || ch === "]" || ch === "}" || ch === "[" || ch === "{") break;
    if (ch === ":" && /[\s,\]}]/.test(s.text[s.k + 1] ?? " ")) break;
    if (ch === "#" && /\s/.test(s.text[s.k - 1] ?? " ")) break;
    s.k++;
  }
  return resolvePlain(foldQuoted(s.text.slice(start, s.k)).trim());
}

function flowValueAt(inner: FlowState, outer: FlowState): unknown {
  const v = flowValue(inner);
  outer.k = inner.k;
  return v;
}

/** The text between the quotes of the scalar at `s.k`, moving past it. */
function takeQuoted(s: FlowState): string {
  const close = quotedEnd(s.text, s.k);
  if (close === undefined) throw UNFINISHED;
  const raw = s.text.slice(s.k + 1, close);
  s.k = close + 1;
  return raw;
}

function doubleQuoted(s: FlowState): string {
  const raw = takeQuoted(s);
  let out = "";
  // Escaped line breaks join lines without a space; others fold.
  const segments = raw.split(/\\\n[ \t]*/);
  for (const [n, segment] of segments.entries()) {
    let folded = foldQuoted(n < segments.length - 1 ? segment.replace(/[ \t]+$/, "") : segment);
    if (n < segments.length - 1) folded = folded.replace(/[ \t]+$/, "");
    out += unescape(folded);
  }
  return out;
}

function unescape(text: string): string {
  return text.replace(/\\(x[0-9a-fA-F]{2}|u[0-9a-fA-F]{4}|U[0-9a-fA-F]{8}|.)/gs, (_, e: string) => {
    const hex = HEX_ESCAPES[e[0]!];
    if (hex !== undefined && e.length === hex + 1) {
      return String.fromCodePoint(parseInt(e.slice(1), 16));
    }
    const plain = ESCAPES[e];
    if (plain === undefined) throw new YamlSubsetError(`unknown escape "\\${e}"`, 0);
    return plain;
  });
}

function singleQuoted(s: FlowState): string {
  return foldQuoted(takeQuoted(s)).replaceAll("''", "'");
}

/**
 * Read a YAML text of the subset the module doc lists.
 *
 * @example Usage
 * ```ts
 * import { parseYamlSubset } from "./yaml_subset.ts";
 * const card = parseYamlSubset("license: apache-2.0\ntags:\n- text-generation\nbase_model: [a/b]\n");
 * console.assert((card as { tags: string[] }).tags[0] === "text-generation");
 * ```
 *
 * @param text The YAML text.
 * @returns The value (`null` for an empty text).
 * @throws {YamlSubsetError} For malformed YAML or YAML outside the subset.
 */
export function parseYamlSubset(text: string): unknown {
  const reader = new Reader(text.replaceAll("\r\n", "\n"));
  const value = reader.node(-1, 0, false);
  if (reader.nextIndent() >= 0) reader.fail("unexpected text after the value");
  return value;
}
