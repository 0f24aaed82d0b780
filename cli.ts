#!/usr/bin/env -S deno run --allow-read --allow-write --allow-env --allow-net --allow-sys
/**
 * The `apr` command line: import models from SafeTensors, GGUF and the Hugging
 * Face Hub into APR v2, and inspect, validate, convert and export them.
 *
 * Run `apr --help` for the commands.
 *
 * @example Run from JSR
 * ```sh
 * deno run -A jsr:@aprkit/apr/cli inspect model.apr
 * ```
 *
 * @module
 */

import { main } from "./src/cli/main.ts";

if (import.meta.main) {
  Deno.exit(await main(Deno.args));
}
