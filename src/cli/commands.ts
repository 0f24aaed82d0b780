/**
 * The list of `apr` commands, in the order `apr --help` shows them, every one
 * loaded (for the help list and the tests; a run loads only its own:
 * `_command_loader.ts`).
 *
 * @module
 */

import type { CommandSpec } from "./command.ts";
import { COMMAND_NAMES, loadCommand } from "./_command_loader.ts";

/** Every command. */
export const COMMANDS: readonly CommandSpec[] = await Promise.all(
  COMMAND_NAMES.map(async (name) => (await loadCommand(name))!),
);
