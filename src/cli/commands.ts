/**
 * The list of `apr` commands, in the order `apr --help` shows them.
 *
 * @module
 */

import type { CommandSpec } from "./command.ts";
import { inspectCommand } from "./inspect_command.ts";
import { tensorsCommand } from "./tensors_command.ts";
import { validateCommand } from "./validate_command.ts";

/** Every command. */
export const COMMANDS: readonly CommandSpec[] = [
  inspectCommand,
  tensorsCommand,
  validateCommand,
];
