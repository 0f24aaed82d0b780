/**
 * Entry of the `apr` CLI: dispatches to a command and maps errors to exit codes.
 *
 * @module
 */

/**
 * Run the CLI.
 *
 * @param args Command-line arguments, without the program name.
 * @returns The exit code: 0 success, 1 unexpected failure, 2 bad usage or bad input.
 */
export function main(args: readonly string[]): Promise<number> {
  console.log(`apr: ${args.join(" ")}`);
  return Promise.resolve(0);
}
