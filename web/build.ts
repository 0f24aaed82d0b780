/**
 * `deno task web`: build the web page (web/page.html + web/app.ts, which
 * imports mod.ts) into one static HTML file, `dist/aprkit.html`, with the
 * bundled script inline: open it from any static host (or localhost), no
 * server logic, nothing uploaded.
 *
 * Usage: deno task web [--output PATH]
 */

import { parseArgs } from "node:util";
import { dirname, join } from "node:path";

const { values } = parseArgs({ args: Deno.args, options: { output: { type: "string" } } });
const root = new URL("../", import.meta.url).pathname; // the repository
const output = values.output ?? join(root, "dist/aprkit.html");
const dir = await Deno.makeTempDir({ prefix: "aprkit-web-" });
try {
  const bundle = join(dir, "app.js");
  const run = await new Deno.Command(Deno.execPath(), {
    args: ["bundle", "--quiet", "--platform", "browser", "-o", bundle, join(root, "web/app.ts")],
    cwd: root,
    stdout: "inherit",
    stderr: "inherit",
  }).output();
  if (run.code !== 0) {
    console.error("web: deno bundle failed");
    Deno.exit(1);
  }
  // An inline script ends at the first "</script": none may appear inside.
  const script = (await Deno.readTextFile(bundle)).replaceAll("</script", "<\\/script");
  const page = await Deno.readTextFile(join(root, "web/page.html"));
  if (!page.includes("/*APP*/")) throw new Error("web/page.html has no /*APP*/ placeholder");
  await Deno.mkdir(dirname(output), { recursive: true });
  await Deno.writeTextFile(output, page.replace("/*APP*/", () => script));
  console.log(`web: wrote ${output} (${(await Deno.stat(output)).size} bytes)`);
} finally {
  await Deno.remove(dir, { recursive: true });
}
