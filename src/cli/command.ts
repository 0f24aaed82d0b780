/**
 * What every `apr` command is made of: its flags (with help text), its
 * positional arguments, and a `run` that returns an exit code. Parsing and
 * help are generated from this description, so `--help` never drifts from
 * what the parser accepts.
 *
 * @module
 */

import { parseArgs } from "node:util";
import { UsageError } from "../errors.ts";
import { closest } from "./_suggest.ts";
import { DEFAULT_HELP_COLUMNS, exampleLines, twoColumns, wrapLine, wrapText } from "./_wrap.ts";
import type { ProgressDisplay } from "./progress_display.ts";

/** One flag of a command. */
export interface OptionSpec {
  /** `boolean` for a switch, `string` for a flag taking a value. */
  readonly type: "boolean" | "string";
  /** One-letter alias, e.g. `"o"` for `--output`. */
  readonly short?: string;
  /** May be given several times (values collected in order). */
  readonly multiple?: boolean;
  /**
   * Also collect this flag's values, as `--flag=value`, in the list of this
   * name, in command-line order with the other flags naming it: for flags
   * whose relative order matters (`--tensor-type` and `--tensor-type-file`).
   */
  readonly orderedIn?: string;
  /** Placeholder shown in help, e.g. `"FILE"`. */
  readonly valueName?: string;
  /** One line of help. */
  readonly description: string;
}

/** Values parsed from the command line. */
export type OptionValues = Record<string, string | boolean | string[] | boolean[] | undefined>;

/** What a command gets to talk to the world. */
export interface CommandContext {
  /** The command's name (`import`, `pull`…), the `command` of its `--json` document. */
  readonly command: string;
  /** Write to standard output (results, `--json`). */
  readonly out: (text: string) => void;
  /** Write to standard error (progress, warnings). */
  readonly err: (text: string) => void;
  /** `--json` was given: print one JSON document on stdout, nothing else there. */
  readonly json: boolean;
  /** `--quiet` was given: no progress, no chatter. */
  readonly quiet: boolean;
  /** `--verbose` was given. */
  readonly verbose: boolean;
  /** Make a progress display honouring `--quiet`, the terminal and `NO_COLOR`. */
  progress(): ProgressDisplay;
  /** Print a warning line on stderr (unless quiet); `--json` documents list it too. */
  warn(message: string): void;
  /** Every warning of this run, in order (the `warnings` of a `--json` document). */
  readonly warnings: string[];
  /**
   * Print the `--json` document of a result (docs/apr-json.schema.json): the
   * result's fields plus `warnings`.
   */
  printJson(result: object): void;
}

/** One command of the CLI. */
export interface CommandSpec {
  /** Word after `apr`. */
  readonly name: string;
  /** One line for the command list. */
  readonly summary: string;
  /** Synopsis, e.g. `apr inspect SOURCE [--json]`. */
  readonly usage: string;
  /** A paragraph of help. */
  readonly description: string;
  /** The command's own flags (the common ones are added). */
  readonly options: Readonly<Record<string, OptionSpec>>;
  /** Positional arguments: at least `min`, at most `max`. */
  readonly positionals: { readonly min: number; readonly max: number; readonly names: string };
  /** Example command lines with a comment each. */
  readonly examples: readonly string[];
  /** Do the work. */
  run(ctx: CommandContext, values: OptionValues, positionals: string[]): Promise<number>;
}

/** Flags every command accepts. */
export const COMMON_OPTIONS: Readonly<Record<string, OptionSpec>> = {
  json: { type: "boolean", description: "print a machine-readable JSON result on stdout" },
  quiet: { type: "boolean", short: "q", description: "no progress or informational output" },
  verbose: { type: "boolean", short: "v", description: "show stack traces and details on errors" },
  help: { type: "boolean", short: "h", description: "show this help" },
};

/**
 * Parse a command's arguments against its spec.
 *
 * @param spec The command.
 * @param args Arguments after the command name.
 * @returns Flag values and positionals.
 * @throws {UsageError} On an unknown flag, a missing value, or the wrong number of positionals.
 */
export function parseCommandArgs(
  spec: CommandSpec,
  args: readonly string[],
): { values: OptionValues; positionals: string[] } {
  const options = { ...COMMON_OPTIONS, ...spec.options };
  let parsed;
  try {
    parsed = parseArgs({
      args: joinNegativeValues(args, options),
      options: Object.fromEntries(
        Object.entries(options).map(([name, o]) => [name, {
          type: o.type,
          ...(o.short ? { short: o.short } : {}),
          ...(o.multiple ? { multiple: true } : {}),
        }]),
      ),
      allowPositionals: true,
      strict: true,
      tokens: true,
    });
  } catch (error) {
    throw new UsageError(describeParseError(spec, Object.keys(options), error), { cause: error });
  }
  const values = parsed.values as OptionValues;
  for (const token of parsed.tokens ?? []) {
    const list = token.kind === "option" ? options[token.name]?.orderedIn : undefined;
    if (list === undefined || token.kind !== "option") continue;
    values[list] = [
      ...(values[list] as string[] | undefined ?? []),
      `--${token.name}=${token.value}`,
    ];
  }
  if (values.help) return { values, positionals: parsed.positionals };
  const { min, max, names } = spec.positionals;
  if (parsed.positionals.length < min) {
    throw new UsageError(`apr ${spec.name}: missing ${names} (usage: ${spec.usage})`);
  }
  if (parsed.positionals.length > max) {
    throw new UsageError(
      `apr ${spec.name}: unexpected argument "${parsed.positionals[max]}" (usage: ${spec.usage})`,
    );
  }
  return { values, positionals: parsed.positionals };
}

/**
 * `--threads -1` as `--threads=-1`: a string option followed by a negative
 * number takes it as its value (parseArgs would call it "ambiguous"), so the
 * option's own check answers with the range it accepts.
 *
 * @param args The arguments.
 * @param options The command's options.
 * @returns The arguments, negative values joined to their option.
 */
function joinNegativeValues(
  args: readonly string[],
  options: Record<string, { type: string; short?: string }>,
): string[] {
  const out: string[] = [];
  for (let i = 0; i < args.length; i++) {
    const arg = args[i]!;
    const next = args[i + 1];
    const name = arg.startsWith("--") ? arg.slice(2) : undefined;
    if (
      name !== undefined && options[name]?.type === "string" && next !== undefined &&
      /^-\d/.test(next)
    ) {
      out.push(`${arg}=${next}`);
      i++;
    } else {
      out.push(arg);
    }
  }
  return out;
}

/**
 * The `--help` text of a command, laid out for `columns` (see `_wrap.ts`):
 * words are never cut, long flags take their help on the next line.
 *
 * @param spec The command.
 * @param columns Width of the text (80 when stdout is no terminal).
 * @returns Help text ending in a newline.
 */
export function commandHelp(spec: CommandSpec, columns: number = DEFAULT_HELP_COLUMNS): string {
  const options = { ...spec.options, ...COMMON_OPTIONS };
  const rows = Object.entries(options).map(([name, o]): [string, string] => {
    const flag = `${o.short ? `-${o.short}, ` : "    "}--${name}${
      o.type === "string" ? ` ${o.valueName ?? "VALUE"}` : ""
    }`;
    return [flag, o.description + (o.multiple ? " (repeatable)" : "")];
  });
  // Continuation lines of the synopsis start under the command's first argument.
  const usageLead = /^apr \S+ /.exec(spec.usage)?.[0] ?? "";
  return [
    ...wrapLine(spec.usage, columns, "Usage: ", " ".repeat("Usage: ".length + usageLead.length)),
    "",
    wrapText(spec.description, columns),
    "",
    "Options:",
    ...twoColumns(rows, columns, HELP_FLAG_COLUMN),
    "",
    "Examples:",
    ...spec.examples.flatMap((e) => exampleLines(e, columns)),
    "",
  ].join("\n");
}

/** Flags wider than this take their explanation on the next line. */
const HELP_FLAG_COLUMN = 24;

/**
 * Read a string flag, or `undefined`.
 *
 * @param values Parsed values.
 * @param name Flag name.
 * @returns The value when given once.
 */
export function stringOption(values: OptionValues, name: string): string | undefined {
  const v = values[name];
  return typeof v === "string" ? v : undefined;
}

/**
 * Read a repeatable string flag.
 *
 * @param values Parsed values.
 * @param name Flag name.
 * @returns Every value given, in order.
 */
export function stringList(values: OptionValues, name: string): string[] {
  const v = values[name];
  if (Array.isArray(v)) return v.filter((x): x is string => typeof x === "string");
  return typeof v === "string" ? [v] : [];
}

/**
 * Parse a positive integer flag such as `--jobs 4`.
 *
 * @param values Parsed values.
 * @param name Flag name.
 * @returns The integer, or `undefined` when absent.
 * @throws {UsageError} When the value is not a positive integer.
 */
export function integerOption(values: OptionValues, name: string): number | undefined {
  const text = stringOption(values, name);
  if (text === undefined) return undefined;
  const n = Number(text);
  if (!Number.isSafeInteger(n) || n <= 0) {
    throw new UsageError(`--${name} must be a positive whole number, got "${text}"`);
  }
  return n;
}

/**
 * Parse a regular-expression flag such as `--filter 'layers\\.0\\.'`.
 *
 * @param values Parsed values.
 * @param name Flag name.
 * @returns The expression, or `undefined` when absent.
 * @throws {UsageError} When the value is not a valid regular expression.
 */
export function regExpOption(values: OptionValues, name: string): RegExp | undefined {
  const text = stringOption(values, name);
  if (text === undefined) return undefined;
  try {
    return new RegExp(text);
  } catch (error) {
    throw new UsageError(`--${name} "${text}" is not a valid regular expression`, {
      cause: error,
    });
  }
}

/**
 * node:util's parse errors are phrased for its own CLI ("To specify a
 * positional argument starting with a '-' …"): say it in one line of ours,
 * with a suggestion for a near miss.
 */
/**
 * Flags of `hf download` (huggingface_hub's CLI) that aprkit spells another
 * way: the answer to a user who types them out of habit.
 */
const HF_HABITS: Readonly<Record<string, string>> = {
  "local-dir":
    "aprkit writes a model to one file with apr import/convert SOURCE -o OUT, and apr pull fills the Hugging Face cache and prints the snapshot folder",
  exclude: "apr pull selects files with --include GLOB (repeatable); there is no --exclude",
  "cache-dir": "set HF_HUB_CACHE (or HF_HOME) for the cache folder",
  token: "set HF_TOKEN (or log in with hf auth login: aprkit reads $HF_HOME/token)",
  "repo-type": "aprkit reads model repositories only",
};

function describeParseError(spec: CommandSpec, known: string[], error: unknown): string {
  const message = error instanceof Error ? error.message : String(error);
  const help = `(see apr ${spec.name} --help)`;
  const unknown = /^Unknown option '(-{1,2})([^']*)'/.exec(message);
  if (unknown) {
    const typed = unknown[2]!;
    const flag = `${unknown[1]}${typed}`;
    const habit = HF_HABITS[typed];
    if (unknown[1] === "--" && habit) {
      return `apr ${spec.name}: unknown option ${flag}; ${habit} ${help}`;
    }
    const near = unknown[1] === "--" ? closest(typed, known) : undefined;
    return `apr ${spec.name}: unknown option ${flag}${
      near ? `; did you mean --${near}?` : ""
    } ${help}`;
  }
  const missing = /^Option '(?:-\w, )?([^' ]+)[^']*' argument missing/.exec(message);
  if (missing) return `apr ${spec.name}: ${missing[1]} needs a value ${help}`;
  const notValue = /^Option '(?:-\w, )?([^' ]+)[^']*' does not take an argument/.exec(message);
  if (notValue) return `apr ${spec.name}: ${notValue[1]} takes no value ${help}`;
  return `apr ${spec.name}: ${message.split("\n")[0]} ${help}`;
}
