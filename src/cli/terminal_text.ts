// This module is browser compatible.

/**
 * Strings from files and servers on the terminal. A tensor name, a metadata
 * value or a file name is an attacker's choice (docs/SECURITY.md): printed
 * raw, ESC and BEL sequences could retitle or clear the terminal, CR/LF could
 * forge output lines, and bidirectional overrides could reorder what is shown.
 * Everything that reaches stdout or stderr in text mode goes through here;
 * `--json` output is JSON and keeps the exact strings.
 *
 * @module
 */

// C0 and C1 controls, DEL, line/paragraph separators, and the bidirectional
// embeddings, overrides and isolates.
// deno-lint-ignore no-control-regex -- control characters are what this escapes
const UNSAFE = /[\u0000-\u001f\u007f-\u009f\u2028\u2029\u202a-\u202e\u2066-\u2069]/g;
const SHORT_ESCAPES: Readonly<Record<string, string>> = {
  "\n": "\\n",
  "\r": "\\r",
  "\t": "\\t",
};

/** Longest text printed as one message line; longer ones are clipped with a note. */
export const MAX_MESSAGE_LENGTH = 1000;
/**
 * Longest run of characters without a space shown whole in a message line:
 * paths, names and numbers fit; a longer run (a 100,000-digit "number" or a
 * huge name echoed from a file) keeps its first {@linkcode ECHO_KEEP} characters.
 */
export const MAX_MESSAGE_WORD = 160;
/** Characters kept of a clipped run. */
export const ECHO_KEEP = 80;
const LONG_WORD = new RegExp(`\\S{${MAX_MESSAGE_WORD + 1},}`, "g");

/**
 * Escape what a terminal would interpret: `\n`, `\r`, `\t` as such, any other
 * control or bidirectional character as `\uXXXX` (JSON's spelling).
 *
 * @example Usage
 * ```ts
 * import { terminalSafe } from "./terminal_text.ts";
 * console.assert(terminalSafe("a\u001b[2Jb\nc") === "a\\u001b[2Jb\\nc");
 * ```
 *
 * @param text Any string.
 * @returns The text, safe to print.
 */
export function terminalSafe(text: string): string {
  return text.replace(
    UNSAFE,
    (c) => SHORT_ESCAPES[c] ?? `\\u${c.charCodeAt(0).toString(16).padStart(4, "0")}`,
  );
}

/**
 * One line of a message: escaped as {@linkcode terminalSafe}, each run of
 * more than {@linkcode MAX_MESSAGE_WORD} non-space characters cut to its first
 * {@linkcode ECHO_KEEP}, and the whole clipped to {@linkcode MAX_MESSAGE_LENGTH}
 * characters, so a file cannot fill the screen with an echoed value.
 *
 * @param text The message.
 * @returns The line, without a newline.
 */
export function messageLine(text: string): string {
  const safe = terminalSafe(text).replace(
    LONG_WORD,
    (word) => `${word.slice(0, ECHO_KEEP)}… (${word.length} characters)`,
  );
  if (safe.length <= MAX_MESSAGE_LENGTH) return safe;
  return `${safe.slice(0, MAX_MESSAGE_LENGTH)}… (${
    safe.length - MAX_MESSAGE_LENGTH
  } more characters)`;
}
