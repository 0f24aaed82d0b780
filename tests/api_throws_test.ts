/**
 * Every public function of `mod.ts` says what it throws: each exported
 * function, public constructor and method documents its errors with
 * `@throws`, or says "Never throws." in its description. Read from
 * `deno doc --json`, so a new export is checked without a list here.
 * (The error classes' own constructors are exempt: they make errors.)
 *
 * @module
 */

import { deepEqual } from "node:assert/strict";

interface JsDoc {
  doc?: string;
  tags?: { kind: string }[];
}
interface Declaration {
  kind: string;
  jsDoc?: JsDoc;
  def?: {
    constructors?: { jsDoc?: JsDoc; accessibility?: string }[];
    methods?: { name: string; kind: string; jsDoc?: JsDoc; accessibility?: string }[];
  };
}

function documentsErrors(doc: JsDoc | undefined): boolean {
  return (doc?.tags ?? []).some((t) => t.kind === "throws") ||
    /\bNever throws\b/.test(doc?.doc ?? "");
}

Deno.test("every function, constructor and method exported by mod.ts documents what it throws", async () => {
  const run = await new Deno.Command(Deno.execPath(), {
    args: ["doc", "--json", new URL("../mod.ts", import.meta.url).pathname],
    stdout: "piped",
    stderr: "piped",
  }).output();
  const doc = JSON.parse(new TextDecoder().decode(run.stdout));
  const module = Object.values(doc.nodes)[0] as {
    symbols: { name: string; declarations: Declaration[] }[];
  };
  const undocumented: string[] = [];
  for (const symbol of module.symbols) {
    for (const d of symbol.declarations) {
      if (d.kind === "function" && !documentsErrors(d.jsDoc)) undocumented.push(symbol.name);
      if (d.kind !== "class") continue;
      if (!/Error$/.test(symbol.name)) {
        for (const c of d.def?.constructors ?? []) {
          if (c.accessibility !== "private" && !documentsErrors(c.jsDoc)) {
            undocumented.push(`new ${symbol.name}()`);
          }
        }
      }
      for (const m of d.def?.methods ?? []) {
        if (m.kind === "method" && m.accessibility !== "private" && !documentsErrors(m.jsDoc)) {
          undocumented.push(`${symbol.name}.${m.name}()`);
        }
      }
    }
  }
  deepEqual(undocumented, [], `without @throws or "Never throws.": ${undocumented.join(", ")}`);
});
