/**
 * `--help` as a user reads it: every line fits 80 columns (words never cut,
 * examples still paste as one command), and every `| jq FILTER` example works
 * on the JSON the command prints today.
 *
 * @module
 */

import { deepEqual, equal, ok } from "node:assert/strict";
import { commandHelp } from "../../src/cli/command.ts";
import { COMMANDS } from "../../src/cli/commands.ts";
import { exampleLines, wrapLine, wrapText } from "../../src/cli/_wrap.ts";
import { runApr, testdata } from "./_run_apr.ts";

Deno.test("every command's --help fits 80 columns, and the main help too", async () => {
  for (const spec of COMMANDS) {
    const long = commandHelp(spec, 80).split("\n").filter((l) => l.length > 80);
    deepEqual(long, [], `apr ${spec.name} --help`);
  }
  const main = await runApr(["--help"]);
  equal(main.code, 0);
  deepEqual(main.stdout.split("\n").filter((l) => l.length > 80), [], "apr --help");
  const piped = await runApr(["convert", "--help"]);
  deepEqual(piped.stdout.split("\n").filter((l) => l.length > 80), [], "apr convert --help");
});

Deno.test("help is wrapped at spaces: the words of every flag's help survive whole", () => {
  for (const spec of COMMANDS) {
    const help = commandHelp(spec, 60);
    for (const option of Object.values(spec.options)) {
      const words = option.description.split(/\s+/);
      const text = help.replace(/\s+/g, " ");
      ok(text.includes(words.join(" ")), `apr ${spec.name}: "${option.description}"`);
    }
  }
});

Deno.test("wrapLine keeps a word longer than the line whole", () => {
  deepEqual(wrapLine("see https://example.org/a/very/long/path now", 12, "", "  "), [
    "see",
    "  https://example.org/a/very/long/path",
    "  now",
  ]);
});

Deno.test("wrapText joins a hand-broken paragraph and keeps list items apart", () => {
  equal(
    wrapText("one two\nthree four\n\n- five six seven", 12),
    "one two\nthree four\n\n- five six\n  seven",
  );
});

Deno.test("a long example keeps its quoting whole and continues with a backslash", () => {
  const lines = exampleLines(
    "apr tensors model.apr --json | jq '.tensors[] | select(.dtype == \"Q4_K\") | .name'  # Q4_K",
    40,
  );
  equal(lines[0], "  # Q4_K");
  ok(lines.slice(1, -1).every((l) => l.endsWith(" \\")));
  const joined = lines.slice(1).map((l) => l.replace(/ \\$/, "").trim()).join(" ");
  equal(
    joined,
    "apr tensors model.apr --json | jq '.tensors[] | select(.dtype == \"Q4_K\") | .name'",
  );
});

/**
 * The subset of jq the examples use: paths of `.key`, `["key"]` and `[]`,
 * `select(.f == V)` and `|`, strict like jq (indexing a string or iterating a scalar is an
 * error), so an example written for another JSON shape fails here as in jq.
 */
function jq(filter: string, input: unknown): unknown[] {
  let values = [input];
  for (const stage of filter.split("|").map((s) => s.trim())) {
    const select = /^select\(\.(\w+) == (.+)\)$/.exec(stage);
    if (select) {
      const wanted = JSON.parse(select[2]!);
      values = values.filter((v) => field(v, select[1]!) === wanted);
      continue;
    }
    values = values.flatMap((v) => walk(stage, v));
  }
  return values;
}

/** A path stage (`.a["b"].c[]`) applied to one value: the values it yields. */
function walk(stage: string, input: unknown): unknown[] {
  if (!stage.startsWith(".")) throw new Error(`jq subset: cannot read "${stage}"`);
  let values = [input];
  const steps = stage === "." ? [] : [...stage.matchAll(/\.(\w+)|\["([^"]+)"\]|(\[\])|(\.)/gy)];
  if (steps.map((m) => m[0]).join("") !== stage && stage !== ".") {
    throw new Error(`jq subset: cannot read "${stage}"`);
  }
  for (const m of steps) {
    if (m[4] !== undefined) continue;
    if (m[3] !== undefined) {
      values = values.flatMap((v) => {
        if (!Array.isArray(v)) throw new Error(`jq: cannot iterate over ${typeof v}`);
        return v;
      });
    } else {
      values = values.map((v) => field(v, m[1] ?? m[2]!));
    }
  }
  return values;
}

function field(value: unknown, key: string): unknown {
  if (value === null || typeof value !== "object" || Array.isArray(value)) {
    throw new Error(
      `jq: cannot index ${Array.isArray(value) ? "array" : typeof value} with "${key}"`,
    );
  }
  return (value as Record<string, unknown>)[key];
}

Deno.test("the jq examples in --help work on the JSON each command prints", async () => {
  // Model files each example's placeholder stands for.
  const models: Record<string, string> = {
    "model.apr": testdata("gguf/tiny-llama-q4_k_m.gguf"),
    "model.gguf": testdata("gguf/tiny-llama-q4_k_m.gguf"),
  };
  let checked = 0;
  for (const spec of COMMANDS) {
    for (const example of spec.examples) {
      const m = /^apr (.*?) \| jq '([^']*)'/.exec(example) ??
        /^apr (.*?) \| jq (\S+)/.exec(example);
      if (!m) continue;
      const args = m[1]!.split(/\s+/).slice(1).map((a) => models[a] ?? a);
      const run = await runApr([spec.name, ...args]);
      equal(run.code, 0, `${example}: ${run.stderr}`);
      const results = jq(m[2]!, JSON.parse(run.stdout));
      ok(results.every((r) => r !== undefined), `${example}: a path the JSON does not have`);
      checked++;
    }
  }
  ok(checked >= 3, `only ${checked} jq examples found`);
});
