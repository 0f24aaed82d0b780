/**
 * Entry of the `apr` CLI: dispatches to a command and maps errors to exit
 * codes — 0 success, 1 unexpected failure (a bug), 2 bad usage or bad input,
 * 3 a failure of the environment: a full disk, an I/O error, a network or
 * server failure that retries did not fix (one line, no stack trace unless
 * `--verbose`).
 *
 * @module
 */

import { messageLine } from "./terminal_text.ts";
import denoJson from "../../deno.json" with { type: "json" };
import {
  EnvironmentError,
  HubAnswerError,
  HubOfflineError,
  HubRequestError,
  ModelFormatError,
  UsageError,
} from "../errors.ts";
import { isStorageFailure } from "../io/storage_errors.ts";
import { type CommandContext, commandHelp, type CommandSpec, parseCommandArgs } from "./command.ts";
import { closest } from "./_suggest.ts";
import { helpColumns, twoColumns, wrapLine } from "./_wrap.ts";
import { COMMAND_NAMES, loadCommand } from "./_command_loader.ts";
import { ProgressDisplay, type ProgressMode } from "./progress_display.ts";

/** The version in deno.json, printed by `apr --version`. */
export const VERSION: string = denoJson.version;

/** Where the CLI writes; the real console by default, arrays in tests. */
export interface MainIo {
  /** Standard output. */
  out(text: string): void;
  /** Standard error. */
  err(text: string): void;
  /** Whether stderr is a terminal (live progress bars). */
  errIsTerminal: boolean;
  /** Terminal width. */
  columns: number;
  /** `NO_COLOR` is set. */
  noColor: boolean;
  /** Width of stdout when it is a terminal (help is wrapped to it); absent: 80 columns. */
  outColumns?: number;
}

const encoder = new TextEncoder();

/** Set once stdout's reader has gone (a broken pipe): later output is dropped. */
let stdoutClosed = false;

function consoleIo(): MainIo {
  const errIsTerminal = Deno.stderr.isTerminal();
  let columns = 100;
  try {
    if (errIsTerminal) columns = Deno.consoleSize().columns;
  } catch { /* not a console: keep the default */ }
  let outColumns: number | undefined;
  try {
    if (Deno.stdout.isTerminal()) outColumns = Deno.consoleSize().columns;
  } catch { /* not a console: help keeps 80 columns */ }
  return {
    ...(outColumns === undefined ? {} : { outColumns }),
    out: (text) => {
      if (stdoutClosed) return;
      try {
        writeAll(Deno.stdout, text);
      } catch (error) {
        // `apr … | head -1`: the reader left. What it did not read is not a
        // failure of the command, whose work (a file written) is done.
        if (!(error instanceof Deno.errors.BrokenPipe)) throw error;
        stdoutClosed = true;
      }
    },
    err: (text) => writeAll(Deno.stderr, text),
    errIsTerminal,
    columns,
    noColor: Deno.noColor,
  };
}

function writeAll(stream: typeof Deno.stdout, text: string): void {
  const bytes = encoder.encode(text);
  let written = 0;
  while (written < bytes.length) written += stream.writeSync(bytes.subarray(written));
}

function mainHelp(columns: number, commands: readonly CommandSpec[]): string {
  return [
    ...wrapLine(
      `apr ${VERSION} — import models into the APR v2 format, streaming, in bounded memory`,
      columns,
      "",
      "",
    ),
    "",
    "Usage: apr COMMAND [OPTIONS]",
    "",
    "Commands:",
    ...twoColumns(commands.map((c) => [c.name, c.summary]), columns, 12),
    "",
    "Every command takes --json, --quiet, --verbose and --help.",
    'Run "apr COMMAND --help" for its flags and examples.',
    "",
    "Examples:",
    "  apr import hf://Qwen/Qwen2.5-0.5B -o qwen.apr --quantize q4_k",
    "  apr import ./model-dir/ -o model.apr",
    "  apr inspect model.apr",
    "  apr validate --deep model.apr",
    "",
    ...wrapLine(
      "Exit codes: 0 success, 1 unexpected failure, 2 bad usage or bad input, " +
        "3 failure of the environment (disk full, I/O error, network or server failure), " +
        "4 apr diff: the models differ.",
      columns,
      "",
      "",
    ),
    "",
  ].join("\n");
}

/**
 * Run the CLI.
 *
 * @param args Command-line arguments, without the program name.
 * @param io Where to write; the console by default.
 * @returns The exit code: 0 success, 1 unexpected failure, 2 bad usage or bad input,
 * 3 failure of the environment.
 */
export async function main(args: readonly string[], io: MainIo = consoleIo()): Promise<number> {
  // `deno task apr -- inspect x` passes the "--" through: it ends no options here.
  const [name, ...rest] = args[0] === "--" ? args.slice(1) : args;
  if (name === undefined || name === "--help" || name === "-h" || name === "help") {
    const topic = name === "help" && rest[0] !== undefined ? await loadCommand(rest[0]) : undefined;
    const columns = helpColumns(io.outColumns);
    if (topic) io.out(commandHelp(topic, columns));
    else io.out(mainHelp(columns, (await import("./commands.ts")).COMMANDS));
    return name === undefined ? 2 : 0;
  }
  if (name === "--version" || name === "-V") {
    // `apr --version --json`: a document like every other command's.
    io.out(
      rest.includes("--json")
        ? jsonDocument({ command: "version", version: VERSION }, [])
        : `apr ${VERSION}\n`,
    );
    return 0;
  }
  const verbose = rest.includes("--verbose") || rest.includes("-v");
  const json = rest.includes("--json");
  // Collected for --json documents, success or error alike.
  const warnings: string[] = [];
  try {
    const command = await loadCommand(name);
    if (!command) {
      const near = closest(name, COMMAND_NAMES);
      throw new UsageError(
        `unknown command "${name}"${
          near ? `; did you mean "${near}"?` : ""
        } (run "apr --help" for the list)`,
      );
    }
    const { values, positionals } = parseCommandArgs(command, rest);
    if (values.help) {
      io.out(commandHelp(command, helpColumns(io.outColumns)));
      return 0;
    }
    await chooseKernels();
    return await command.run(makeContext(io, command.name, values, warnings), values, positionals);
  } catch (error) {
    // The flag table is the conversion flags' module: loaded by the commands
    // that can fail in library terms, so only a usage error loads it here.
    const { inFlagTerms } = await import("./_convert_flags.ts");
    return reportError(io, error, verbose, json, warnings, inFlagTerms);
  }
}

/**
 * `APR_KERNELS=typescript` runs the TypeScript kernels instead of the
 * WebAssembly ones (same bytes, slower): for benchmarks and comparisons.
 */
async function chooseKernels(): Promise<void> {
  const choice = Deno.env.get("APR_KERNELS");
  if (choice === undefined || choice === "") return;
  if (choice !== "wasm" && choice !== "typescript") {
    throw new UsageError(`APR_KERNELS is "${choice}": expected wasm or typescript`);
  }
  (await import("../quant/kernels.ts")).setKernelBackend(choice);
}

function makeContext(
  io: MainIo,
  command: string,
  values: Record<string, unknown>,
  warnings: string[],
): CommandContext {
  const json = values.json === true;
  const quiet = values.quiet === true;
  const mode: ProgressMode = quiet ? "quiet" : io.errIsTerminal ? "tty" : "plain";
  const plainIntervalMs = Number(Deno.env.get("APR_PROGRESS_INTERVAL_MS") ?? 5000);
  return {
    command,
    out: io.out,
    err: io.err,
    json,
    quiet,
    verbose: values.verbose === true,
    progress: () =>
      new ProgressDisplay({
        mode,
        write: io.err,
        color: !io.noColor,
        columns: io.columns,
        plainIntervalMs,
      }),
    warn: (message) => {
      warnings.push(messageLine(message));
      if (!quiet) io.err(`warning: ${messageLine(message)}\n`);
    },
    warnings,
    printJson: (result) => io.out(jsonDocument(result, warnings)),
  };
}

/**
 * OS errors about a path the user chose (the message carries the reason and
 * the path): a read-only file system, a name too long, a symlink loop. Deno
 * has no error class for these, only the `code`.
 */
const OS_PATH_ERRORS = new Set(["EROFS", "ENAMETOOLONG", "ELOOP", "EACCES", "EPERM", "ENOTDIR"]);

/**
 * Whether an error is the user's to fix (bad input, bad usage, missing file)
 * rather than a fault in aprkit.
 *
 * @param error Anything thrown.
 * @returns True for exit code 2.
 */
export function isUserError(error: unknown): boolean {
  if (error instanceof ModelFormatError || error instanceof UsageError) return true;
  // HF_HUB_OFFLINE without the files in the cache is the user's setting to
  // change, not a transient network failure.
  if (error instanceof HubOfflineError) return true;
  // A server's answer that cannot be used (an unsafe file name, a wrong
  // sha256) is bad input, like a malformed file.
  if (error instanceof HubAnswerError) return true;
  // A 4xx is the request's fault (a wrong name, a missing token), except
  // 408 and 429: a slow or busy server, the environment's (exit code 3).
  if (error instanceof HubRequestError) {
    return error.status >= 400 && error.status < 500 && error.status !== 408 &&
      error.status !== 429;
  }
  // A permission the deno command line did not grant is the user's to give.
  if (error instanceof Deno.errors.NotCapable) return true;
  if (
    error instanceof Deno.errors.NotFound || error instanceof Deno.errors.AlreadyExists ||
    error instanceof Deno.errors.PermissionDenied || error instanceof Deno.errors.IsADirectory ||
    error instanceof Deno.errors.NotADirectory || error instanceof Deno.errors.FilesystemLoop ||
    OS_PATH_ERRORS.has((error as { code?: unknown } | null)?.code as string)
  ) {
    return true;
  }
  // Argument checks in aprkit throw TypeError/RangeError phrased "Cannot …".
  return (error instanceof RangeError || error instanceof TypeError) &&
    error.message.startsWith("Cannot ");
}

/**
 * Whether an error comes from the machine or the network (a full disk, an
 * I/O error, a server that kept failing or stalled): not the user's input,
 * not a bug either. Exit code 3; checked after {@linkcode isUserError}, so
 * a 4xx answer stays exit 2.
 *
 * @param error Anything thrown.
 * @returns True for exit code 3.
 */
export function isEnvironmentError(error: unknown): boolean {
  return error instanceof EnvironmentError || error instanceof HubRequestError ||
    isStorageFailure(error);
}

/** What to do after a network or server failure, when the message does not say. */
const NETWORK_FIX =
  "check the network and run the same command again (--resume continues an APR import; HF_HUB_OFFLINE=1 uses only the cache)";

/**
 * Deno refused an access the command line did not allow (`--allow-read`…):
 * say it is a permission, not a missing file or a bug. Deno's own message
 * names the access and the flag ("Requires read access to …, run again with
 * the --allow-read flag").
 */
function permissionMessage(error: Error): string {
  return `permission missing (a Deno permission, not a missing file): ${error.message}`;
}

/** One `--json` document (docs/apr-json.schema.json): the fields, then `warnings`. */
function jsonDocument(fields: object, warnings: readonly string[]): string {
  return `${JSON.stringify({ ...fields, warnings }, null, 2)}\n`;
}

function reportError(
  io: MainIo,
  error: unknown,
  verbose: boolean,
  json: boolean,
  warnings: readonly string[],
  inFlagTerms: (message: string) => string,
): number {
  const userError = isUserError(error);
  const environment = !userError && isEnvironmentError(error);
  const exitCode = userError ? 2 : environment ? 3 : 1;
  // Library errors name library options (force: true); say the flags here.
  // A malformed file's message quotes the file, so it is left as it is.
  let message = error instanceof ModelFormatError
    ? error.message
    : error instanceof Deno.errors.NotCapable
    ? permissionMessage(error)
    : inFlagTerms(error instanceof Error ? error.message : String(error));
  if (
    environment && error instanceof HubRequestError && !/run (it )?again|--resume/.test(message)
  ) {
    message = `${message}; ${NETWORK_FIX}`;
  }
  if (json) {
    // Scripts get one JSON document on stdout whatever happens.
    const path = error instanceof ModelFormatError || error instanceof EnvironmentError
      ? error.path
      : error instanceof HubRequestError
      ? error.url
      : undefined;
    const code = error instanceof Error ? error.name : "Error";
    io.out(jsonDocument({ error: { message, code, exitCode, path } }, warnings));
  }
  if (verbose && error instanceof Error && error.stack) {
    io.err(`${error.stack}\n`);
    let cause = error.cause;
    while (cause instanceof Error) {
      io.err(`caused by: ${cause.stack ?? cause.message}\n`);
      cause = cause.cause;
    }
  } else {
    // One line whatever the message holds: names from files are escaped, not
    // split. Messages that name their command ("apr import: …") keep it alone.
    const line = messageLine(message);
    io.err(line.startsWith("apr ") ? `${line}\n` : `apr: ${line}\n`);
    if (!userError && !environment) {
      io.err("apr: this looks like a bug; run again with --verbose for details\n");
    }
  }
  return exitCode;
}
