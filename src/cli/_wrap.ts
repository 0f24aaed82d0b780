/**
 * Help text that fits a terminal: lines broken at spaces, never inside a
 * word, continuation lines indented under the text they continue (as `git`,
 * `cargo` and clap lay help out).
 *
 * @module
 */

/** Width of help text when stdout is not a terminal (a pipe, a file, a pager). */
export const DEFAULT_HELP_COLUMNS = 80;
/** Help never grows wider than this on a wide terminal: long lines are hard to read. */
export const MAX_HELP_COLUMNS = 100;
/** Narrower terminals still get this much: below it, wrapping helps no one. */
const MIN_HELP_COLUMNS = 40;

/**
 * The width help is laid out for.
 *
 * @param terminalColumns The terminal's width, or `undefined` when stdout is no terminal.
 * @returns A width between 40 and 100 columns; 80 without a terminal.
 */
export function helpColumns(terminalColumns: number | undefined): number {
  if (terminalColumns === undefined || !Number.isFinite(terminalColumns)) {
    return DEFAULT_HELP_COLUMNS;
  }
  return Math.min(MAX_HELP_COLUMNS, Math.max(MIN_HELP_COLUMNS, Math.floor(terminalColumns)));
}

/**
 * Break one line of text at spaces so each line fits `width` columns.
 *
 * A word longer than a whole line (a URL, a long path) stays whole on a line
 * of its own: cutting it would make it unusable when copied.
 *
 * @example Usage
 * ```ts
 * import { wrapLine } from "./_wrap.ts";
 * console.assert(wrapLine("aa bb cc", 5, "", "  ").join("|") === "aa bb|  cc");
 * ```
 *
 * @param text The line (no newlines).
 * @param width Columns available, the first line's prefix included.
 * @param first Printed before the first line.
 * @param rest Printed before each continuation line.
 * @returns The lines, prefixes included, without trailing spaces.
 */
export function wrapLine(text: string, width: number, first: string, rest: string): string[] {
  return wrapWords(text.split(" ").filter((w) => w !== ""), width, first, rest);
}

function wrapWords(words: readonly string[], width: number, first: string, rest: string): string[] {
  const lines: string[] = [];
  let line = first;
  let empty = true;
  for (const word of words) {
    if (!empty && line.length + 1 + word.length > width) {
      lines.push(line);
      line = rest;
      empty = true;
    }
    line += (empty ? "" : " ") + word;
    empty = false;
  }
  lines.push(line.trimEnd());
  return lines;
}

/**
 * Lay out paragraphs for `width`: the lines of a paragraph (hand-broken for
 * some other width) are joined and broken again; blank lines, list items
 * (`- `) and indented lines keep their breaks, a line's indent carrying over
 * to its continuations.
 *
 * @param text Text with `\n` breaks.
 * @param width Columns available.
 * @returns The text, every line at most `width` columns unless one word is longer.
 */
export function wrapText(text: string, width: number): string {
  const logical: string[] = [];
  for (const line of text.split("\n")) {
    const previous = logical.length - 1;
    const startsAnew = line.trim() === "" || /^(\s|- )/.test(line) || previous < 0 ||
      logical[previous]!.trim() === "";
    if (startsAnew) logical.push(line);
    else logical[previous] += ` ${line}`;
  }
  return logical.flatMap((line) => {
    if (line.length <= width) return [line];
    const indent = /^\s*(?:- )?/.exec(line)![0];
    const lead = /^\s*/.exec(line)![0];
    return wrapLine(line.slice(lead.length), width, lead, " ".repeat(indent.length));
  }).join("\n");
}

/**
 * Two columns, a term and its explanation (a flag and its help), the
 * explanation wrapped beside the term; a term wider than `termWidth` gets its
 * explanation on the next line instead, so long flags do not squeeze every
 * explanation into a narrow column.
 *
 * @param rows Term and explanation pairs.
 * @param width Columns available.
 * @param termWidth Widest term kept beside its explanation.
 * @returns The lines, each indented by two spaces.
 */
export function twoColumns(
  rows: readonly (readonly [string, string])[],
  width: number,
  termWidth: number,
): string[] {
  const column = Math.min(termWidth, Math.max(...rows.map(([term]) => term.length)));
  const indent = " ".repeat(2 + column + 2);
  return rows.flatMap(([term, text]) => {
    if (term.length > column) {
      return [`  ${term}`, ...wrapLine(text, width, indent, indent)];
    }
    return wrapLine(text, width, `  ${term.padEnd(column)}  `, indent);
  });
}

/**
 * An example command line, with its `# comment` when one is given: kept on
 * one line when it fits, else the comment above the command and the command
 * broken at spaces with a shell continuation (` \`), so it can still be
 * pasted.
 *
 * @param example The example as written (`cmd args   # what it does`).
 * @param width Columns available.
 * @returns The lines, each indented by two spaces.
 */
export function exampleLines(example: string, width: number): string[] {
  if (2 + example.length <= width) return [`  ${example}`];
  const hash = example.search(/\s#\s/);
  const command = (hash < 0 ? example : example.slice(0, hash)).trimEnd();
  const comment = hash < 0 ? undefined : example.slice(hash).trim();
  const lines = comment === undefined ? [] : wrapLine(comment.slice(2), width, "  # ", "  # ");
  const broken = wrapWords(shellTokens(command), width - 2, "  ", "      ");
  return [...lines, ...broken.map((l, i) => i < broken.length - 1 ? `${l} \\` : l)];
}

/** A command line's words, a quoted part (`'a | b'`) kept inside its word. */
function shellTokens(command: string): string[] {
  return command.match(/(?:'[^']*'|"[^"]*"|[^\s'"])+/g) ?? [];
}
