/**
 * The list of `apr` commands, in the order `apr --help` shows them.
 *
 * @module
 */

import type { CommandSpec } from "./command.ts";
import { convertCommand, exportCommand } from "./convert_command.ts";
import { diffCommand } from "./diff_command.ts";
import { importCommand } from "./import_command.ts";
import { pullCommand } from "./pull_command.ts";
import { inspectCommand } from "./inspect_command.ts";
import { tensorsCommand } from "./tensors_command.ts";
import { validateCommand } from "./validate_command.ts";

/** Every command. */
export const COMMANDS: readonly CommandSpec[] = [
  importCommand,
  pullCommand,
  inspectCommand,
  tensorsCommand,
  validateCommand,
  convertCommand,
  exportCommand,
  diffCommand,
];
