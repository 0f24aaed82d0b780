/**
 * Error messages cite no file the user does not have: no message in `src/`
 * names FORMATS.md (the rule is said in words), and the rule numbers the
 * code's comments cite (S1–S18, I1–I12, G1–G16, D1–D8) are rows of the
 * repository's docs/FORMATS.md.
 *
 * @module
 */

import { deepEqual, equal } from "node:assert/strict";

const ROOT = new URL("../", import.meta.url);

async function sourceFiles(dir: URL): Promise<URL[]> {
  const out: URL[] = [];
  for await (const entry of Deno.readDir(dir)) {
    const url = new URL(entry.name + (entry.isDirectory ? "/" : ""), dir);
    if (entry.isDirectory) out.push(...await sourceFiles(url));
    else if (entry.name.endsWith(".ts")) out.push(url);
  }
  return out;
}

Deno.test("no message in src/ cites FORMATS.md; every rule its comments cite is in docs/FORMATS.md", async () => {
  const formats = await Deno.readTextFile(new URL("docs/FORMATS.md", ROOT));
  const rows = new Set([...formats.matchAll(/^\| ([SIGD]\d+)\s+\|/gm)].map((m) => m[1]));
  const inMessages: string[] = [];
  const missingRules = new Set<string>();
  for (const file of await sourceFiles(new URL("src/", ROOT))) {
    const lines = (await Deno.readTextFile(file)).split("\n");
    lines.forEach((line, i) => {
      const code = line.trimStart();
      const comment = code.startsWith("*") || code.startsWith("//") || code.startsWith("/*");
      if (!comment && line.includes("FORMATS.md")) {
        inMessages.push(`${file.pathname.slice(ROOT.pathname.length)}:${i + 1}`);
      }
      for (const m of line.matchAll(/FORMATS\.md ([SIGD]\d+)\b/g)) {
        if (!rows.has(m[1]!)) missingRules.add(m[1]!);
      }
    });
  }
  equal(inMessages.join("\n"), "", "say the rule in words, not by a file the user lacks");
  deepEqual([...missingRules], []);
  equal(rows.size, 18 + 12 + 16 + 8);
});
