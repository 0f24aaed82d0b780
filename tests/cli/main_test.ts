/**
 * `apr` as a whole (src/cli/main.ts), run as a subprocess: version, help for
 * every command, and usage errors (exit 2, one line).
 *
 * @module
 */

import { equal, match, ok } from "node:assert/strict";
import denoJson from "../../deno.json" with { type: "json" };
import { COMMANDS } from "../../src/cli/commands.ts";
import { assertOneLineError, runApr } from "./_run_apr.ts";

Deno.test("apr --version prints the version in deno.json", async () => {
  for (const flag of ["--version", "-V"]) {
    const run = await runApr([flag]);
    equal(run.code, 0);
    equal(run.stdout, `apr ${denoJson.version}\n`);
    equal(run.stderr, "");
  }
});

Deno.test("apr --help lists every command and exits 0; bare apr prints it and exits 2", async () => {
  const [help, bare] = await Promise.all([runApr(["--help"]), runApr([])]);
  equal(help.code, 0);
  equal(bare.code, 2);
  equal(bare.stdout, help.stdout);
  for (const c of COMMANDS) match(help.stdout, new RegExp(`^  ${c.name} `, "m"));
  match(help.stdout, /Examples:/);
  match(help.stdout, /Exit codes: 0 success, 1 unexpected failure, 2 bad usage/);
});

Deno.test("apr COMMAND --help lists the command's flags and examples", async (t) => {
  const runs = await Promise.all(COMMANDS.map((c) => runApr([c.name, "--help"])));
  const viaHelp = await Promise.all(COMMANDS.map((c) => runApr(["help", c.name])));
  for (const [i, c] of COMMANDS.entries()) {
    await t.step(c.name, () => {
      const run = runs[i]!;
      equal(run.code, 0, run.stderr);
      equal(run.stderr, "");
      ok(run.stdout.startsWith(`Usage: apr ${c.name}`), run.stdout);
      for (const flag of [...Object.keys(c.options), "json", "quiet", "verbose", "help"]) {
        match(run.stdout, new RegExp(`--${flag}\\b`), `--${flag} missing from help`);
      }
      const examples = run.stdout.split("Examples:\n")[1] ?? "";
      ok(
        examples.split("\n").filter((l) => l.startsWith(`  apr ${c.name} `)).length >= 1,
        `no example in:\n${run.stdout}`,
      );
      equal(viaHelp[i]!.stdout, run.stdout);
    });
  }
});

Deno.test("apr rejects bad usage with exit 2 and one line", async (t) => {
  const cases: { name: string; args: string[]; expect: RegExp[] }[] = [
    { name: "unknown command", args: ["frobnicate"], expect: [/unknown command "frobnicate"/] },
    {
      name: "unknown flag",
      args: ["inspect", "x.apr", "--frobnicate"],
      expect: [/apr inspect:/, /--frobnicate/],
    },
    { name: "missing argument", args: ["inspect"], expect: [/apr inspect: missing SOURCE/] },
    { name: "missing two arguments", args: ["diff", "a.apr"], expect: [/missing A and B/] },
    {
      name: "one argument too many",
      args: ["validate", "a.apr", "b.apr"],
      expect: [/unexpected argument "b.apr"/],
    },
    { name: "flag without its value", args: ["import", "x", "-o"], expect: [/apr import:/] },
    {
      name: "unknown quantization",
      args: ["import", "x", "--quantize", "q3"],
      expect: [/--quantize "q3" is not one of/],
    },
    {
      name: "jobs not a number",
      args: ["import", "x", "--jobs", "many"],
      expect: [/--jobs must be a positive whole number/],
    },
    { name: "pull of a local path", args: ["pull", "./model"], expect: [/hf:\/\/org\/name/] },
    {
      name: "a source that does not exist",
      args: ["inspect", "/nonexistent/model.apr"],
      expect: [/"\/nonexistent\/model.apr"/, /no such file/],
    },
    {
      name: "export without a format",
      args: ["export", "x.apr", "-o", "out.bin"],
      expect: [/--format/],
    },
    {
      name: "export --dtype other than f32",
      args: ["export", "x.apr", "-o", "out.safetensors", "--dtype", "f16"],
      expect: [/--dtype "f16": only f32/],
    },
  ];
  const runs = await Promise.all(cases.map((c) => runApr(c.args)));
  for (const [i, c] of cases.entries()) {
    await t.step(c.name, () => assertOneLineError(runs[i]!, ...c.expect));
  }
});

Deno.test("apr --verbose prints the stack of a failure", async () => {
  const run = await runApr(["inspect", "/nonexistent/model.apr", "--verbose"]);
  equal(run.code, 2);
  match(run.stderr, /^\s+at /m);
});

Deno.test("apr accepts a leading -- (as `deno task apr -- ...` passes it)", async () => {
  const run = await runApr(["--", "--version"]);
  equal(run.code, 0, run.stderr);
  equal(run.stdout, `apr ${denoJson.version}\n`);
});

Deno.test("mistyped commands and options get one line of ours, with a suggestion", async (t) => {
  const cases: [string[], RegExp][] = [
    [
      ["inpsect", "x"],
      /^apr: unknown command "inpsect"; did you mean "inspect"\? \(run "apr --help" for the list\)$/,
    ],
    [["frobnicate"], /^apr: unknown command "frobnicate" \(run "apr --help" for the list\)$/],
    [
      ["import", "x", "--bogus-flag"],
      /^apr import: unknown option --bogus-flag \(see apr import --help\)$/,
    ],
    [
      ["import", "x", "--quantise", "q4"],
      /^apr import: unknown option --quantise; did you mean --quantize\? \(see apr import --help\)$/,
    ],
    [["import", "x", "-o"], /^apr import: --output needs a value \(see apr import --help\)$/],
    [
      ["inspect", "x", "--json=1"],
      /^apr inspect: --json takes no value \(see apr inspect --help\)$/,
    ],
  ];
  for (const [args, message] of cases) {
    await t.step(args.join(" "), async () => {
      const run = await runApr(args);
      assertOneLineError(run, message);
      ok(!run.stderr.includes("apr: apr"), "no doubled prefix");
      ok(!run.stderr.includes("positional argument"), "no parser jargon");
    });
  }
});

Deno.test("--json: an error is also one JSON document on stdout", async () => {
  const run = await runApr(["inspect", "/nonexistent/model.apr", "--json"]);
  equal(run.code, 2);
  const doc = JSON.parse(run.stdout);
  equal(doc.error.exitCode, 2);
  equal(doc.error.code, "NotFound");
  match(doc.error.message, /nonexistent\/model\.apr/);
  equal(run.stderr.trimEnd().split("\n").length, 1);
  const bad = await runApr([
    "inspect",
    "tests/testdata/safetensors/other/safetensors-cpp-abuse-1.safetensors",
    "--json",
  ]);
  equal(bad.code, 2);
  const err = JSON.parse(bad.stdout).error;
  equal(err.code, "ModelFormatError");
  match(err.path, /safetensors-cpp-abuse-1\.safetensors$/);
});
