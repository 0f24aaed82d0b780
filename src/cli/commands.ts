/**
 * The list of `apr` commands, in the order `apr --help` shows them, every one
 * loaded (for the help list and the tests; a run loads only its own:
 * `_command_loader.ts`).
 *
 * @module
 */

import type { CommandSpec } from "./command.ts";
import { COMMAND_NAMES, loadCommand } from "./_command_loader.ts";

const loaded: CommandSpec[] = [];
// One after the other: Deno loads overlapping module graphs imported at once
// each on its own (all eight together cost 0.47 CPU-s, in turn 0.27).
for (const name of COMMAND_NAMES) loaded.push((await loadCommand(name))!);

/** Every command. */
export const COMMANDS: readonly CommandSpec[] = loaded;
