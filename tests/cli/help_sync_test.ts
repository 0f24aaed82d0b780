/**
 * `--help` and the README say exactly what the parser accepts. The accepted
 * flags are derived from each command's spec (the same table the parser is
 * built from), so a flag added anywhere is checked here without a list to
 * maintain: it must appear in the command's help and in its README section,
 * and neither may name a flag the command does not take.
 *
 * @module
 */

import { deepEqual, ok } from "node:assert/strict";
import {
  commandHelp,
  type CommandSpec,
  COMMON_OPTIONS,
  parseCommandArgs,
} from "../../src/cli/command.ts";
import { COMMANDS } from "../../src/cli/commands.ts";

const README = await Deno.readTextFile(new URL("../../README.md", import.meta.url));

/** Every `--flag` a command accepts: its own and the common ones. */
function accepted(spec: CommandSpec): Set<string> {
  return new Set([...Object.keys(COMMON_OPTIONS), ...Object.keys(spec.options)]);
}

/** The `--flags` a text names (long forms only). */
function flagsIn(text: string): Set<string> {
  return new Set([...text.matchAll(/(?<![\w-])--([a-z][a-z0-9-]*)/g)].map((m) => m[1]!));
}

/** The README section `### \`apr NAME\``, up to the next heading. */
function readmeSection(name: string): string {
  const start = README.indexOf(`### \`apr ${name}\``);
  ok(start >= 0, `README has no section for apr ${name}`);
  const rest = README.slice(README.indexOf("\n", start) + 1);
  const end = rest.search(/^#{2,3} /m);
  return end < 0 ? rest : rest.slice(0, end);
}

/** The fenced blocks of a Markdown text: language and content. */
function fencedBlocks(text: string): { lang: string; body: string }[] {
  return [...text.matchAll(/^```(\w*)\n([\s\S]*?)^```/gm)].map((m) => ({
    lang: m[1]!,
    body: m[2]!,
  }));
}

/**
 * The shell words of a command line up to a pipe or a comment; a `cmd && `
 * prefix and `NAME=value` environment settings are dropped. Quotes as sh.
 */
function shellWords(line: string): string[] {
  const words: string[] = [];
  let word: string | undefined;
  for (let i = 0; i < line.length; i++) {
    const c = line[i]!;
    if (c === "'" || c === '"') {
      const close = line.indexOf(c, i + 1);
      word = (word ?? "") + line.slice(i + 1, close);
      i = close;
    } else if (c === " " || c === "\t") {
      if (word !== undefined) words.push(word);
      word = undefined;
    } else if (word === undefined && (c === "#" || c === "|")) {
      break;
    } else {
      word = (word ?? "") + c;
    }
  }
  if (word !== undefined) words.push(word);
  const and = words.lastIndexOf("&&");
  const command = and < 0 ? words : words.slice(and + 1);
  while (command[0] !== undefined && /^[A-Z_]+=/.test(command[0])) command.shift();
  return command;
}

/** The arguments after `apr NAME` in an example line, or undefined when it runs something else. */
function exampleArgs(line: string, name: string): string[] | undefined {
  const words = shellWords(line);
  if (words[0] !== "apr" || words[1] !== name) return undefined;
  return words.slice(2);
}

for (const spec of COMMANDS) {
  Deno.test(`apr ${spec.name}: --help lists exactly the flags it accepts`, () => {
    const flags = accepted(spec);
    const help = commandHelp(spec);
    const options = help.slice(help.indexOf("Options:"), help.indexOf("Examples:"));
    deepEqual([...flagsIn(options)].sort(), [...flags].sort(), "the Options list");
    const named = [...flagsIn(help)].filter((f) => !flags.has(f));
    deepEqual(named, [], `apr ${spec.name} --help names flags it rejects: ${named.join(", ")}`);
  });

  Deno.test(`apr ${spec.name}: its usage line and Options agree on each flag's values`, () => {
    for (const m of spec.usage.matchAll(/--([a-z][a-z0-9-]*) ([^\s\]]+)/g)) {
      const option = spec.options[m[1]!] ?? COMMON_OPTIONS[m[1]!];
      ok(option, `usage names --${m[1]}, which apr ${spec.name} rejects`);
      if (option.valueName?.includes("|") || m[2]!.includes("|")) {
        deepEqual(m[2], option.valueName, `--${m[1]}'s values in the usage line and in Options`);
      }
    }
  });

  Deno.test(`apr ${spec.name}: the examples in --help parse`, () => {
    for (const example of spec.examples) {
      const args = exampleArgs(example, spec.name);
      ok(args, `example does not run apr ${spec.name}: ${example}`);
      parseCommandArgs(spec, args);
    }
  });

  Deno.test(`apr ${spec.name}: its README section names exactly the flags it accepts`, () => {
    const flags = accepted(spec);
    const section = readmeSection(spec.name);
    const synopsis = fencedBlocks(section).find((b) => b.lang === "");
    ok(synopsis, `README's apr ${spec.name} section has no synopsis block`);
    // The common flags are described once, for every command, above the sections.
    const own = Object.entries(spec.options).filter(([f]) => !(f in COMMON_OPTIONS));
    const shown = flagsIn(synopsis.body);
    const absent = own.filter(([f, o]) =>
      !shown.has(f) && !(o.short && new RegExp(`(?<![\\w-])-${o.short}\\b`).test(synopsis.body))
    ).map(([f]) => f);
    deepEqual(absent, [], `README synopsis of apr ${spec.name} lacks: ${absent.join(", ")}`);
    const unknown = [...flagsIn(section)].filter((f) => !flags.has(f));
    deepEqual(
      unknown,
      [],
      `README on apr ${spec.name} names flags it rejects: ${unknown.join(", ")}`,
    );
    for (const block of fencedBlocks(section).filter((b) => b.lang === "sh")) {
      for (const line of block.body.split("\n").filter((l) => l.trim())) {
        const args = exampleArgs(line, spec.name);
        if (args) parseCommandArgs(spec, args);
      }
    }
  });
}

Deno.test("every README command section belongs to a command", () => {
  const sections = [...README.matchAll(/^### `apr (\w+)`/gm)].map((m) => m[1]!);
  deepEqual(sections.sort(), COMMANDS.map((c) => c.name).sort());
});
