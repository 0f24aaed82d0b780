/**
 * The JSR package as `deno publish` would upload it: every relative link in
 * a Markdown file it publishes (the README is the package page) resolves to
 * a file it publishes, and the JSON schema's `$id` is where JSR serves that
 * schema in this package and version.
 *
 * @module
 */

import { deepEqual, equal, ok } from "node:assert/strict";
import { dirname, join, normalize } from "node:path";

const REPO = new URL("../", import.meta.url).pathname;

/** The files `deno publish --dry-run` lists, relative to the repository (run once). */
let published: Promise<Set<string>> | undefined;
function publishedFiles(): Promise<Set<string>> {
  return published ??= listPublished();
}

async function listPublished(): Promise<Set<string>> {
  const out = await new Deno.Command(Deno.execPath(), {
    args: ["publish", "--dry-run", "--allow-dirty"],
    cwd: REPO,
    env: { NO_COLOR: "1" },
    stdout: "piped",
    stderr: "piped",
  }).output();
  const text = new TextDecoder().decode(out.stdout) + new TextDecoder().decode(out.stderr);
  ok(out.success, text);
  const files = new Set<string>();
  for (const [, path] of text.matchAll(/^\s+file:\/\/(\S+) \([^)]*\)$/gm)) {
    ok(path!.startsWith(REPO), path);
    files.add(path!.slice(REPO.length));
  }
  ok(files.has("mod.ts") && files.has("README.md"), [...files].join(" "));
  return files;
}

/** Relative link targets of a Markdown file: `[text](path)` and `src="path"`, anchors dropped. */
function relativeLinks(markdown: string): string[] {
  const targets = [
    ...[...markdown.matchAll(/\]\(([^)\s]+)(?:\s+"[^"]*")?\)/g)].map((m) => m[1]!),
    ...[...markdown.matchAll(/\bsrc="([^"]+)"/g)].map((m) => m[1]!),
  ];
  return targets
    .filter((t) => !/^[a-z][a-z0-9+.-]*:/i.test(t) && !t.startsWith("#"))
    .map((t) => decodeURIComponent(t.split("#")[0]!));
}

Deno.test("the JSR package: every relative link in a published Markdown file resolves to a published file", async () => {
  const files = await publishedFiles();
  const dead: string[] = [];
  let checked = 0;
  for (const file of [...files].filter((f) => f.endsWith(".md"))) {
    const text = await Deno.readTextFile(join(REPO, file));
    for (const link of relativeLinks(text)) {
      const target = normalize(join(dirname(file), link));
      checked++;
      if (!files.has(target)) dead.push(`${file} → ${link}`);
    }
  }
  ok(checked > 10, `only ${checked} links found: the link pattern is broken`);
  deepEqual(dead, []);
});

Deno.test("the JSR package: the JSON schema's $id is its URL in this package and version", async () => {
  const config = JSON.parse(await Deno.readTextFile(join(REPO, "deno.json")));
  const schema = JSON.parse(await Deno.readTextFile(join(REPO, "docs/apr-json.schema.json")));
  equal(schema.$id, `https://jsr.io/${config.name}/${config.version}/docs/apr-json.schema.json`);
  ok((await publishedFiles()).has("docs/apr-json.schema.json"));
});
