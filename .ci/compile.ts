/**
 * `deno task compile`: build the single-binary `apr` with `deno compile`, then
 * smoke-test it (`--version`, and the demo import).
 *
 * `deno compile` needs the `denort` runtime for the target. It downloads it,
 * which fails on machines without internet access; there it uses the runtime
 * named by `DENORT_BIN`. So this script compiles when `DENORT_BIN` is set or
 * when running in GitHub Actions, and otherwise skips with a message saying so.
 *
 * Usage: deno task compile [--target TRIPLE] [--output PATH]
 */

import { parseArgs } from "node:util";

const { values } = parseArgs({
  args: Deno.args,
  options: { target: { type: "string" }, output: { type: "string" } },
});

const canCompile = Deno.env.get("DENORT_BIN") !== undefined ||
  Deno.env.get("GITHUB_ACTIONS") === "true";
if (!canCompile) {
  console.log(
    "compile: skipped — deno compile must download its runtime (denort), which this machine " +
      "cannot; set DENORT_BIN to a denort binary of the same Deno version to compile here. " +
      "The release workflow compiles for every target.",
  );
  Deno.exit(0);
}

const windows = values.target?.includes("windows") ?? Deno.build.os === "windows";
const output = values.output ?? `dist/apr${windows ? ".exe" : ""}`;
const permissions = ["--allow-read", "--allow-write", "--allow-env", "--allow-net", "--allow-sys"];
const args = [
  "compile",
  ...permissions,
  ...(values.target ? ["--target", values.target] : []),
  "--include",
  "deno.json",
  // Quantization workers are loaded by URL at run time, so the compiler does
  // not see them; without this the binary quantizes on one thread.
  "--include",
  "src/quant/_encode_worker.ts",
  "--output",
  output,
  "cli.ts",
];
await run(Deno.execPath(), args);

const native = values.target === undefined || values.target.includes(Deno.build.target);
if (native) {
  // A DENORT_BIN that is not a denort (a plain deno, say) yields a binary
  // that is Deno itself: `--version` must answer as apr.
  const version = await runCaptured(output, ["--version"]);
  if (!version.startsWith("apr ")) {
    console.error(
      `compile: ${output} is not apr: its --version printed "${version.split("\n")[0]}" ` +
        `(is DENORT_BIN="${Deno.env.get("DENORT_BIN") ?? ""}" a denort binary of Deno ` +
        `${Deno.version.deno}? a plain deno makes a copy of deno)`,
    );
    Deno.exit(1);
  }
  console.log(version.trim());
  const demoOut = "demo-out/compiled-demo.apr";
  await run(output, [
    "import",
    "examples/tiny-llama",
    "-o",
    demoOut,
    "--quantize",
    "q4_k",
    "--force",
  ]);
  await run(output, ["validate", "--deep", demoOut]);
} else {
  console.log(
    `compile: built ${output} for ${values.target}; not runnable on ${Deno.build.target}`,
  );
}

async function run(command: string, commandArgs: string[]): Promise<void> {
  console.log(`$ ${command} ${commandArgs.join(" ")}`);
  const { code } = await new Deno.Command(command, { args: commandArgs }).spawn().status;
  if (code !== 0) {
    console.error(`compile: "${command} ${commandArgs[0]}" exited with ${code}`);
    Deno.exit(1);
  }
}

async function runCaptured(command: string, commandArgs: string[]): Promise<string> {
  console.log(`$ ${command} ${commandArgs.join(" ")}`);
  const { code, stdout } = await new Deno.Command(command, {
    args: commandArgs,
    stdout: "piped",
    stderr: "inherit",
  }).output();
  if (code !== 0) {
    console.error(`compile: "${command} ${commandArgs[0]}" exited with ${code}`);
    Deno.exit(1);
  }
  return new TextDecoder().decode(stdout);
}
