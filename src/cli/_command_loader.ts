/**
 * Internal: the `apr` commands by name, each loaded when it runs. A command's
 * module brings its whole pipeline (a conversion loads the GGUF, APR,
 * SafeTensors and Hub code it may use); `apr convert` need not also load
 * `pull`'s, `validate`'s and the others' (start-up is paid by every run:
 * docs/BENCHMARKS.md, "Fixed costs per run").
 *
 * @module
 */

import type { CommandSpec } from "./command.ts";

/** The command names, in the order `apr --help` lists them. */
export const COMMAND_NAMES: readonly string[] = [
  "import",
  "pull",
  "inspect",
  "tensors",
  "validate",
  "convert",
  "export",
  "diff",
];

/**
 * Load one command.
 *
 * @param name One of {@linkcode COMMAND_NAMES}.
 * @returns Its spec, or `undefined` for a name that is none.
 */
export async function loadCommand(name: string): Promise<CommandSpec | undefined> {
  switch (name) {
    case "import":
      return (await import("./import_command.ts")).importCommand;
    case "pull":
      return (await import("./pull_command.ts")).pullCommand;
    case "inspect":
      return (await import("./inspect_command.ts")).inspectCommand;
    case "tensors":
      return (await import("./tensors_command.ts")).tensorsCommand;
    case "validate":
      return (await import("./validate_command.ts")).validateCommand;
    case "convert":
      return (await import("./convert_command.ts")).convertCommand;
    case "export":
      return (await import("./convert_command.ts")).exportCommand;
    case "diff":
      return (await import("./diff_command.ts")).diffCommand;
  }
  return undefined;
}
