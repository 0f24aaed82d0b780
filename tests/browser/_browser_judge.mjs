// Drives the system Chromium, headless, through puppeteer-core (no browser
// download): opens the web page, puts a model file into its file input,
// reads the inspect view, runs conversions and returns their bytes. With
// job.save "picker" they go into files of the origin-private file system
// (standing in for the user's save picker, which a headless browser cannot
// show). The other modes remove the save picker, as Firefox and Safari lack
// it, so the page downloads: "staged" through a file of the origin-private
// file system (Firefox); "stream" also removes that file system's writable
// files, so the download streams through the page's service worker;
// "memory" also removes service workers (a page from file://), so the
// download is kept in memory. Downloads land in job.downloads. Run by node
// from web_page_test.ts: `node _browser_judge.mjs <puppeteer install dir>`,
// the job as JSON on stdin, the result as JSON on stdout.

import { createRequire } from "node:module";
import { mkdtemp, readFile, rm } from "node:fs/promises";
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
const save = job.save ?? "picker";
// Downloads by guid: name, then final state.
const downloads = new Map();
const downloadStates = new Map();
try {
  if (save !== "picker") {
    const cdp = await browser.target().createCDPSession();
    await cdp.send("Browser.setDownloadBehavior", {
      behavior: "allowAndName",
      downloadPath: job.downloads,
      eventsEnabled: true,
    });
    cdp.on("Browser.downloadWillBegin", (e) => downloads.set(e.guid, e.suggestedFilename));
    cdp.on("Browser.downloadProgress", (e) => {
      if (e.state !== "inProgress") downloadStates.set(e.guid, e.state);
    });
  }
  /** The first download not in `before` to end: its name, state and bytes. */
  const nextDownload = async (before) => {
    const deadline = Date.now() + 120_000;
    for (;;) {
      const guid = [...downloadStates.keys()].find((g) => !before.has(g));
      if (guid !== undefined) {
        const state = downloadStates.get(guid);
        const bytes = state === "completed"
          ? await readFile(join(job.downloads, guid))
          : Buffer.alloc(0);
        return { name: downloads.get(guid), state, base64: bytes.toString("base64") };
      }
      if (Date.now() > deadline) throw new Error("no download ended");
      await new Promise((r) => setTimeout(r, 20));
    }
  };
  const page = await browser.newPage();
  await page.setViewport({ width: 1200, height: 900 });
  page.on("request", (request) => result.requests.push(`${request.method()} ${request.url()}`));
  page.on("pageerror", (error) => result.errors.push(String(error)));
  // Slow reads of the input (globalThis.__slowReads ms each), so that a
  // cancel lands mid-conversion.
  // A storage quota of globalThis.__quota bytes, when set.
  await page.evaluateOnNewDocument(() => {
    const estimate = StorageManager.prototype.estimate;
    StorageManager.prototype.estimate = function () {
      return globalThis.__quota === undefined
        ? estimate.call(this)
        : Promise.resolve({ quota: globalThis.__quota, usage: 0 });
    };
  });
  await page.evaluateOnNewDocument(() => {
    const read = Blob.prototype.arrayBuffer;
    Blob.prototype.arrayBuffer = async function () {
      if (globalThis.__slowReads) await new Promise((r) => setTimeout(r, globalThis.__slowReads));
      return read.call(this);
    };
  });
  if (save !== "picker") {
    await page.evaluateOnNewDocument((save) => {
      delete globalThis.showSaveFilePicker;
      if (save !== "staged") delete FileSystemFileHandle.prototype.createWritable;
      if (save === "memory") {
        Object.defineProperty(Navigator.prototype, "serviceWorker", { get: () => undefined });
      }
    }, save);
  }
  // The save picker, answered with a file of the origin-private file system
  // (or failing as globalThis.__pickerFails says: "AbortError" is the user
  // closing it).
  if (save === "picker") {
    await page.evaluateOnNewDocument(() => {
      globalThis.__pickerCalls = 0;
      globalThis.showSaveFilePicker = async ({ suggestedName }) => {
        globalThis.__pickerCalls++;
        if (globalThis.__pickerFails) {
          throw new DOMException("the picker failed", globalThis.__pickerFails);
        }
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
  }
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
  if (job.translate) {
    // Shown as a conversion reads it, then back as stored.
    const first = result.tensors[0][0];
    await page.click("#translate");
    await page.waitForFunction(
      (name) => {
        const cell = document.querySelector("#tensors tbody tr td");
        return !document.getElementById("view").hidden && cell && cell.textContent !== name;
      },
      { timeout: 60_000 },
      first,
    );
    result.translated = { tensors: await rows("tensors"), metadata: await rows("metadata") };
    await page.click("#translate");
    await page.waitForFunction(
      (name) => document.querySelector("#tensors tbody tr td")?.textContent === name,
      { timeout: 60_000 },
      first,
    );
  }
  if (job.screenshot) await page.screenshot({ path: job.screenshot });
  result.saveNote = await page.$eval("#saveNote", (e) => e.textContent);
  result.hasPicker = await page.evaluate(() => "showSaveFilePicker" in globalThis);
  const click = async (format, quantize) => {
    await page.select("#format", format);
    // A pair the page does not offer (it lists each format's own targets) is
    // forced in, as a stale form could hold it: the conversion must still refuse.
    await page.$eval("#quantize", (s, q) => {
      if (![...s.options].some((o) => o.value === q)) s.add(new Option(q, q));
    }, quantize);
    await page.select("#quantize", quantize);
    await page.$eval("#status", (e) => {
      delete e.dataset.done;
      e.textContent = "";
    });
    await page.click("#go");
  };
  const shown = () =>
    page.evaluate(() => ({
      status: document.getElementById("status").textContent,
      error: document.getElementById("error").hidden
        ? null
        : document.getElementById("error").textContent,
      pickerCalls: globalThis.__pickerCalls,
      go: document.getElementById("go").disabled,
    }));
  if (job.refused) {
    // What the page offers the refused pair's format: not the refused target.
    await page.select("#format", job.refused.format);
    result.offered = await page.$$eval("#quantize option", (os) => os.map((o) => o.value));
    // A pair the conversion refuses: said before any file is asked for.
    await click(job.refused.format, job.refused.quantize);
    await page.waitForFunction(() => document.getElementById("status").textContent === "refused", {
      timeout: 60_000,
    });
    result.refused = await shown();
  }
  if (job.pickerFailures) {
    // The user closes the picker; the picker fails.
    result.pickerFailures = [];
    for (const failure of ["AbortError", "NotAllowedError"]) {
      await page.evaluate((f) => (globalThis.__pickerFails = f), failure);
      await click("apr", "none");
      await page.waitForFunction(
        () =>
          document.getElementById("status").textContent !== "" &&
          !document.getElementById("go").disabled,
        { timeout: 60_000 },
      );
      result.pickerFailures.push({ failure, ...await shown() });
    }
    await page.evaluate(() => (globalThis.__pickerFails = undefined));
  }
  for (const conversion of job.conversions) {
    const before = new Set(downloads.keys());
    await page.evaluate((quota) => (globalThis.__quota = quota), conversion.quota);
    await click(conversion.format, conversion.quantize);
    await page.waitForFunction(
      () => {
        const status = document.getElementById("status");
        return status.dataset.done === "1" || status.textContent === "failed";
      },
      { timeout: 120_000 },
    );
    const status = await page.$eval("#status", (e) => e.textContent);
    const held = await page.$eval("#status", (e) => e.dataset.held ?? null);
    const error = await page.$eval("#error", (e) => e.hidden ? null : e.textContent);
    if (save !== "picker") {
      const got = status === "failed"
        ? { name: null, state: "none", base64: "" }
        : await nextDownload(before);
      result.outputs.push({ ...conversion, ...got, status, error, held });
      continue;
    }
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
    // Cancel a conversion mid-way: the page says so, and the picked file
    // keeps nothing of it (a slow disk) or the download fails (slow reads).
    const before = new Set(downloads.keys());
    await page.evaluate((picker) => {
      if (picker) globalThis.__slowWrites = 40;
      else globalThis.__slowReads = 40;
    }, save === "picker");
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
      buttons: await page.evaluate(() => [
        document.getElementById("go").disabled,
        document.getElementById("cancel").disabled,
      ]),
    };
    if (save === "picker") {
      result.cancel.size = await page.evaluate(async () => {
        const root = await navigator.storage.getDirectory();
        return (await (await root.getFileHandle(globalThis.__saved)).getFile()).size;
      });
    } else {
      const { state, base64 } = await nextDownload(before);
      result.cancel.download = { state, bytes: base64.length };
    }
  }
} finally {
  await browser.close();
  await rm(profile, { recursive: true, force: true });
}
process.stdout.write(JSON.stringify(result));
