/**
 * `deno task web`: build the web page (web/page.html + web/app.ts, which
 * imports mod.ts) into one static HTML file, `dist/aprkit.html`, with the
 * bundled script inline, and beside it its service worker, `aprkit-sw.js`
 * (web/download_sw.ts: streamed downloads in browsers without a save
 * picker). Serve both from any static host (or localhost), no server
 * logic, nothing uploaded; the page alone works too, its downloads then
 * kept in memory.
 *
 * Usage: deno task web [--output PATH]
 */

import { parseArgs } from "node:util";
import { dirname, join } from "node:path";
import { SERVICE_WORKER_FILE } from "./streamed_download.ts";

const { values } = parseArgs({ args: Deno.args, options: { output: { type: "string" } } });
const root = new URL("../", import.meta.url).pathname; // the repository
const output = values.output ?? join(root, "dist/aprkit.html");
const dir = await Deno.makeTempDir({ prefix: "aprkit-web-" });
try {
  const bundle = join(dir, "app.js");
  const worker = join(dir, SERVICE_WORKER_FILE);
  for (const [entry, out] of [["web/app.ts", bundle], ["web/download_sw.ts", worker]]) {
    const run = await new Deno.Command(Deno.execPath(), {
      args: ["bundle", "--quiet", "--platform", "browser", "-o", out!, join(root, entry!)],
      cwd: root,
      stdout: "inherit",
      stderr: "inherit",
    }).output();
    if (run.code !== 0) {
      console.error(`web: deno bundle of ${entry} failed`);
      Deno.exit(1);
    }
  }
  // An inline script ends at the first "</script": none may appear inside.
  const script = (await Deno.readTextFile(bundle)).replaceAll("</script", "<\\/script");
  const page = await Deno.readTextFile(join(root, "web/page.html"));
  if (!page.includes("/*APP*/")) throw new Error("web/page.html has no /*APP*/ placeholder");
  await Deno.mkdir(dirname(output), { recursive: true });
  await Deno.writeTextFile(output, page.replace("/*APP*/", () => script));
  const workerOut = join(dirname(output), SERVICE_WORKER_FILE);
  await Deno.copyFile(worker, workerOut);
  console.log(`web: wrote ${output} (${(await Deno.stat(output)).size} bytes) and ${workerOut}`);
} finally {
  await Deno.remove(dir, { recursive: true });
}
