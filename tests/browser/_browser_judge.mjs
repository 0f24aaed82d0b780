// Drives the system Chromium, headless, through puppeteer-core (no browser
// download): opens the web page, puts a model file into its file input,
// reads the inspect view, runs conversions into files of the origin-private
// file system (standing in for the user's save picker, which a headless
// browser cannot show) and returns their bytes. Run by node from
// web_page_test.ts: `node _browser_judge.mjs <puppeteer install dir>`, the
// job as JSON on stdin, the result as JSON on stdout.

import { createRequire } from "node:module";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { pathToFileURL } from "node:url";

const [dir] = process.argv.slice(2);
const require = createRequire(join(dir, "node_modules", "x.js"));
const puppeteer = (await import(pathToFileURL(require.resolve("puppeteer-core")).href)).default;

let input = "";
for await (const chunk of process.stdin) input += chunk;
const job = JSON.parse(input);

const profile = await mkdtemp(join(tmpdir(), "aprkit-chromium-"));
const browser = await puppeteer.launch({
  executablePath: job.chromium,
  headless: true,
  userDataDir: profile,
  args: [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
  ],
});
const result = { requests: [], errors: [], outputs: [] };
try {
  const page = await browser.newPage();
  await page.setViewport({ width: 1200, height: 900 });
  page.on("request", (request) => result.requests.push(`${request.method()} ${request.url()}`));
  page.on("pageerror", (error) => result.errors.push(String(error)));
  // The save picker, answered with a file of the origin-private file system.
  await page.evaluateOnNewDocument(() => {
    globalThis.showSaveFilePicker = async ({ suggestedName }) => {
      const root = await navigator.storage.getDirectory();
      globalThis.__saved = suggestedName;
      const handle = await root.getFileHandle(suggestedName, { create: true });
      if (!globalThis.__slowWrites) return handle;
      // A slow disk, so that a cancel lands mid-conversion.
      return {
        name: handle.name,
        async createWritable() {
          const writable = await handle.createWritable();
          return {
            async write(command) {
              await new Promise((r) => setTimeout(r, globalThis.__slowWrites));
              return writable.write(command);
            },
            close: () => writable.close(),
            abort: (reason) => writable.abort(reason),
          };
        },
      };
    };
  });
  await page.goto(job.url);
  await page.waitForSelector("body[data-ready='1']", { timeout: 30_000 });
  if (job.folder) {
    // A folder of shards, through the webkitdirectory input.
    await (await page.$("#folder")).uploadFile(job.folder);
  } else {
    await (await page.$("#file")).uploadFile(job.file);
  }
  await page.waitForFunction(
    () => !document.getElementById("view").hidden || !document.getElementById("error").hidden,
    { timeout: 60_000 },
  );
  result.error = await page.$eval("#error", (e) => e.hidden ? null : e.textContent);
  const rows = (id) =>
    page.$$eval(
      `#${id} tbody tr`,
      (trs) => trs.map((tr) => [...tr.cells].map((c) => c.textContent)),
    );
  result.tensors = await rows("tensors");
  result.checks = await rows("checks");
  result.metadata = await rows("metadata");
  result.summary = await page.$eval("#summary", (e) => e.textContent);
  if (job.screenshot) await page.screenshot({ path: job.screenshot });
  for (const conversion of job.conversions) {
    await page.select("#format", conversion.format);
    await page.select("#quantize", conversion.quantize);
    await page.$eval("#status", (e) => delete e.dataset.done);
    await page.click("#go");
    await page.waitForFunction(
      () => {
        const status = document.getElementById("status");
        return status.dataset.done === "1" || status.textContent === "failed";
      },
      { timeout: 120_000 },
    );
    const status = await page.$eval("#status", (e) => e.textContent);
    const error = await page.$eval("#error", (e) => e.hidden ? null : e.textContent);
    const base64 = await page.evaluate(async () => {
      const root = await navigator.storage.getDirectory();
      const file = await (await root.getFileHandle(globalThis.__saved)).getFile();
      const bytes = new Uint8Array(await file.arrayBuffer());
      let text = "";
      for (let i = 0; i < bytes.length; i += 0x8000) {
        text += String.fromCharCode(...bytes.subarray(i, i + 0x8000));
      }
      return btoa(text);
    });
    const name = await page.evaluate(() => globalThis.__saved);
    result.outputs.push({ ...conversion, name, status, error, base64 });
  }
  result.progress = await page.$eval("#bar", (e) => e.value);
  if (job.cancel) {
    // Cancel a conversion mid-way: the page says so and the picked file
    // keeps nothing of it.
    await page.evaluate(() => (globalThis.__slowWrites = 40));
    await page.select("#format", "apr");
    await page.select("#quantize", "none");
    await page.$eval("#status", (e) => delete e.dataset.done);
    await page.click("#go");
    await page.waitForFunction(() => document.getElementById("bar").value > 0, {
      timeout: 60_000,
    });
    await page.click("#cancel");
    await page.waitForFunction(
      () => ["cancelled", "failed"].includes(document.getElementById("status").textContent),
      { timeout: 60_000 },
    );
    result.cancel = {
      status: await page.$eval("#status", (e) => e.textContent),
      error: await page.$eval("#error", (e) => e.hidden ? null : e.textContent),
      size: await page.evaluate(async () => {
        const root = await navigator.storage.getDirectory();
        return (await (await root.getFileHandle(globalThis.__saved)).getFile()).size;
      }),
      buttons: await page.evaluate(() => [
        document.getElementById("go").disabled,
        document.getElementById("cancel").disabled,
      ]),
    };
  }
} finally {
  await browser.close();
  await rm(profile, { recursive: true, force: true });
}
process.stdout.write(JSON.stringify(result));
