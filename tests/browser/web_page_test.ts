/**
 * The web page in a real browser: `deno task web` builds it, the system
 * Chromium runs it headless (driven by puppeteer-core from Node; `.ci/run`
 * installs both, no browser download), a fixture file goes into its file
 * input, the inspect view shows its tensors, and conversions written through
 * the page's save path are byte-identical to the CLI's. The page asks the
 * network for nothing but itself.
 *
 * Set APRKIT_SCREENSHOT=path to also save a screenshot (docs/web-page.png).
 *
 * @module
 */

import { deepEqual, equal, match, ok } from "node:assert/strict";
import { join } from "node:path";
import { decodeBase64 } from "./_base64.ts";
import { CLI_PATH, testdata } from "../cli/_run_apr.ts";

const REPO = new URL("../../", import.meta.url).pathname;
const PUPPETEER_VERSION = "24.40.0";
const CHROMIUM = Deno.env.get("APRKIT_CHROMIUM") ?? "/usr/bin/chromium";

/** Where puppeteer-core is installed (by .ci/run). */
function judgeDir(): string {
  return Deno.env.get("APRKIT_BROWSER_JUDGE_DIR") ?? `${REPO}.tools/browser-judge`;
}

/** puppeteer-core's version in `dir`, if installed. */
async function installedVersion(dir: string): Promise<string | undefined> {
  const pkg = await Deno.readTextFile(join(dir, "node_modules/puppeteer-core/package.json"))
    .catch(() => undefined);
  return pkg === undefined ? undefined : JSON.parse(pkg).version;
}

/**
 * The judge, installed on first use like the llama.cpp judge (the pinned
 * puppeteer-core from the npm registry, no browser download); the system
 * Chromium must be there (.ci/run installs Debian's).
 */
async function ensureJudge(): Promise<void> {
  const dir = judgeDir();
  const install =
    `npm install --no-save --ignore-scripts --prefix ${dir} puppeteer-core@${PUPPETEER_VERSION}`;
  if (await installedVersion(dir) !== PUPPETEER_VERSION) {
    const out = await new Deno.Command("npm", {
      args: install.split(" ").slice(1).concat(["--no-audit", "--no-fund", "--loglevel=error"]),
      stdout: "piped",
      stderr: "piped",
    }).output().catch(() => undefined);
    ok(
      out?.success && await installedVersion(dir) === PUPPETEER_VERSION,
      `puppeteer-core ${PUPPETEER_VERSION} is not in ${dir} and could not be installed: run ` +
        `${install} (or bash .ci/run, or set APRKIT_BROWSER_JUDGE_DIR)`,
    );
  }
  if (!await isFile(CHROMIUM) && Deno.env.get("APRKIT_CHROMIUM") === undefined) {
    await installChromium();
  }
  ok(
    await isFile(CHROMIUM),
    `no Chromium at ${CHROMIUM}: apt-get install chromium (or set APRKIT_CHROMIUM)`,
  );
}

async function isFile(path: string): Promise<boolean> {
  return (await Deno.stat(path).catch(() => undefined))?.isFile === true;
}

/**
 * Debian's Chromium, as `.ci/run` installs it, when this machine lets the
 * test do so (root, apt-get): `deno task test` in a fresh clone then needs
 * only what the README's first screen says. Elsewhere the assertion after
 * this names the command to run.
 */
async function installChromium(): Promise<void> {
  if (Deno.build.os !== "linux" || Deno.uid() !== 0) return;
  const apt = async (args: string[]) =>
    (await new Deno.Command("apt-get", {
      args,
      env: { DEBIAN_FRONTEND: "noninteractive" },
      stdin: "null",
      stdout: "null",
      stderr: "piped",
    }).output().catch(() => undefined))?.success === true;
  if (await apt(["update", "-qq"])) {
    await apt(["install", "-y", "-qq", "--no-install-recommends", "chromium"]);
  }
}

async function run(command: string, args: string[], stdin?: string): Promise<string> {
  const child = new Deno.Command(command, {
    args,
    cwd: REPO,
    stdin: stdin === undefined ? "null" : "piped",
    stdout: "piped",
    stderr: "piped",
    env: { NO_COLOR: "1", HF_HUB_OFFLINE: "1" },
  }).spawn();
  if (stdin !== undefined) {
    const writer = child.stdin.getWriter();
    await writer.write(new TextEncoder().encode(stdin));
    await writer.close();
  }
  const out = await child.output();
  const stderr = new TextDecoder().decode(out.stderr);
  equal(out.code, 0, `${command} ${args.join(" ")}:\n${stderr}`);
  return new TextDecoder().decode(out.stdout);
}

interface JudgeResult {
  requests: string[];
  translated?: { tensors: string[][]; metadata: string[][] };
  saveNote: string;
  hasPicker: boolean;
  refused?: unknown;
  offered?: string[];
  pickerFailures?: unknown[];
  errors: string[];
  error: string | null;
  tensors: string[][];
  checks: string[][];
  metadata: string[][];
  summary: string;
  progress: number;
  cancel?: {
    status: string;
    error: string | null;
    size?: number;
    buttons: boolean[];
    download?: { state: string; bytes: number };
  };
  outputs: {
    format: string;
    quantize: string;
    name: string;
    status: string;
    error: string | null;
    base64: string;
    state?: string;
    held?: string | null;
  }[];
}

Deno.test("the web page in headless Chromium: a dropped file is inspected and converted to the CLI's bytes", async () => {
  await ensureJudge();
  const dir = await Deno.makeTempDir({ prefix: "aprkit-web-" });
  const page = join(dir, "aprkit.html");
  await run(Deno.execPath(), ["task", "--quiet", "web", "--output", page]);
  const html = await Deno.readFile(page);
  const worker = await Deno.readFile(join(dir, "aprkit-sw.js"));
  // What reached the server: downloads must be answered by the service worker.
  const served: string[] = [];
  const server = Deno.serve({ hostname: "127.0.0.1", port: 0, onListen() {} }, (request) => {
    const path = new URL(request.url).pathname;
    served.push(path);
    if (path === "/aprkit-sw.js") {
      return new Response(worker, { headers: { "content-type": "text/javascript" } });
    }
    return path === "/aprkit.html"
      ? new Response(html, { headers: { "content-type": "text/html; charset=utf-8" } })
      : new Response("not found", { status: 404 });
  });
  try {
    // An APR file for the third case, as the CLI writes it.
    const aprInput = join(dir, "tiny-qwen2.apr");
    await run(Deno.execPath(), [
      "run",
      "-A",
      CLI_PATH,
      "import",
      testdata("gguf/tiny-qwen2-Q4_K_M.gguf"),
      "-o",
      aprInput,
      "--quiet",
    ]);
    const cases: {
      file: string;
      folder: boolean;
      cancel: boolean;
      save?: "picker" | "staged" | "stream" | "memory";
      checks?: boolean;
      conversions: { format: string; quantize: string; cli: string[]; quota?: number }[];
    }[] = [
      {
        file: testdata("gguf/tiny-qwen2-Q4_K_M.gguf"),
        folder: false,
        cancel: true,
        checks: true,
        conversions: [
          { format: "apr", quantize: "none", cli: ["import"] },
          { format: "gguf", quantize: "none", cli: ["convert", "--format", "gguf"] },
        ],
      },
      {
        file: testdata("hf/tiny-qwen2/model-00001-of-00009.safetensors"),
        folder: false,
        cancel: false,
        conversions: [
          { format: "apr", quantize: "q4_k", cli: ["import", "--quantize", "q4_k"] },
          {
            format: "gguf",
            quantize: "q8_0",
            cli: ["convert", "--format", "gguf", "--quantize", "q8_0"],
          },
        ],
      },
      {
        // A folder of shards with its index, picked as a folder.
        file: testdata("hf/tiny-qwen2"),
        folder: true,
        cancel: false,
        conversions: [{ format: "apr", quantize: "q4_k", cli: ["import", "--quantize", "q4_k"] }],
      },
      {
        file: aprInput,
        folder: false,
        cancel: false,
        conversions: [{ format: "gguf", quantize: "none", cli: ["convert", "--format", "gguf"] }],
      },
      {
        // Firefox: no save picker, so the page downloads a file it wrote
        // in the origin-private file system.
        file: testdata("hf/tiny-qwen2"),
        folder: true,
        cancel: false,
        save: "staged",
        conversions: [
          // Over the storage quota: refused when the size is known, before the tensors.
          { format: "gguf", quantize: "none", cli: [], quota: 1000 },
          { format: "apr", quantize: "q4_k", cli: ["import", "--quantize", "q4_k"] },
        ],
      },
      {
        // Safari before writable OPFS files: the download streams through
        // the page's service worker.
        file: testdata("gguf/tiny-qwen2-Q4_K_M.gguf"),
        folder: false,

        save: "stream",
        cancel: true,
        conversions: [
          { format: "apr", quantize: "q4_k", cli: ["import", "--quantize", "q4_k"] },
          { format: "gguf", quantize: "none", cli: ["convert", "--format", "gguf"] },
        ],
      },
      {
        // No service worker either (a page opened from file://): the
        // download is kept in memory.
        file: testdata("hf/tiny-qwen2/model-00001-of-00009.safetensors"),
        folder: false,
        cancel: false,
        save: "memory",
        conversions: [
          {
            format: "gguf",
            quantize: "q8_0",
            cli: ["convert", "--format", "gguf", "--quantize", "q8_0"],
          },
        ],
      },
    ];
    const downloads = join(dir, "downloads");
    await Deno.mkdir(downloads);
    for (const [index, c] of cases.entries()) {
      const url = `http://127.0.0.1:${server.addr.port}/aprkit.html`;
      const shot = index === 0 ? Deno.env.get("APRKIT_SCREENSHOT") : undefined;
      const result: JudgeResult = JSON.parse(
        await run(
          "node",
          [join(REPO, "tests/browser/_browser_judge.mjs"), judgeDir()],
          JSON.stringify({
            chromium: CHROMIUM,
            url,
            ...(c.folder === true ? { folder: c.file } : { file: c.file }),
            conversions: c.conversions.map(({ format, quantize, quota }) => ({
              format,
              quantize,
              quota,
            })),
            cancel: c.cancel === true,
            translate: c.checks === true,
            save: c.save ?? "picker",
            downloads,
            ...(c.checks === true
              ? { refused: { format: "apr", quantize: "q8_0" }, pickerFailures: true }
              : {}),
            ...(shot ? { screenshot: shot } : {}),
          }),
        ),
      );
      deepEqual(result.errors, [], "uncaught errors in the page");
      equal(result.error, null);
      // Nothing left the machine: the page asked for itself, its service
      // worker and the downloads that worker answers; the server saw only
      // the first two.
      const origin = `http://127.0.0.1:${server.addr.port}/`;
      ok(
        result.requests.every((r) =>
          r === `GET ${url}` || r.startsWith(`GET ${origin}aprkit-download/`)
        ),
        JSON.stringify(result.requests),
      );
      ok(served.every((p) => p === "/aprkit.html" || p === "/aprkit-sw.js"), served.join(" "));
      served.length = 0;
      equal(result.hasPicker, (c.save ?? "picker") === "picker");
      if (c.save !== undefined) {
        ok(result.saveNote.includes("in memory, up to 2 GiB"), result.saveNote);
      }
      if (c.checks === true) {
        // APR + q8_0 is not offered, and refused before a file is asked for
        // when forced in; a closed picker and a failing one are told apart.
        ok(result.offered?.includes("q8") && !result.offered.includes("q8_0"), `${result.offered}`);
        deepEqual(result.refused, {
          status: "refused",
          error:
            'quantize: "q8_0" works for GGUF output only: APR readers do not decode Q8_0 (use quantize: "q8" for APR_Q8)',
          pickerCalls: 0,
          go: false,
        });
        deepEqual(result.pickerFailures, [
          {
            failure: "AbortError",
            status: "not saved: no file was picked",
            error: null,
            pickerCalls: 1,
            go: false,
          },
          {
            failure: "NotAllowedError",
            status: "failed",
            error: "Cannot pick a file to save to: NotAllowedError: the picker failed",
            pickerCalls: 2,
            go: false,
          },
        ]);
      }
      // The inspect view: the tensors as the library lists them.
      const expected = JSON.parse(
        await run(Deno.execPath(), ["run", "-A", CLI_PATH, "tensors", c.file, "--json"]),
      );
      const names = (expected.tensors ?? expected).map((t: { name: string }) => t.name);
      deepEqual(result.tensors.map((row) => row[0]), names);
      ok(result.summary.includes(`tensors: ${names.length}`), result.summary);
      ok(result.checks.length > 0 && result.checks.every((row) => row[1]!.startsWith("ok")));
      ok(result.metadata.length > 0);
      // A GGUF as stored: every key of the file, as apr inspect lists them;
      // the box shows it as a conversion reads it (apr ... --translate).
      const inspected = JSON.parse(
        await run(Deno.execPath(), ["run", "-A", CLI_PATH, "inspect", c.file, "--json"]),
      );
      if (inspected.view === "stored") {
        deepEqual(result.metadata.map((row) => row[0]), Object.keys(inspected.metadata));
        ok(
          result.metadata.some((row) => row[1]!.startsWith("ARRAY<STRING>[512] [")),
          JSON.stringify(result.metadata),
        );
      }
      if (c.checks === true) {
        const translated = JSON.parse(
          await run(Deno.execPath(), [
            "run",
            "-A",
            CLI_PATH,
            "tensors",
            c.file,
            "--translate",
            "--json",
          ]),
        );
        deepEqual(
          result.translated?.tensors.map((row) => row[0]),
          translated.tensors.map((t: { name: string }) => t.name),
        );
        ok(result.translated?.metadata.some((row) => row[0] === "hidden_size"));
      }
      // Each conversion: the same bytes as the CLI's.
      for (const [i, conversion] of c.conversions.entries()) {
        const out = result.outputs[i]!;
        if (conversion.quota !== undefined) {
          equal(out.status, "failed");
          match(
            out.error ?? "",
            /^Cannot save "tiny-qwen2\.gguf" as a download: it is [\d,]+ bytes, and this browser lets the page store 1,000 more; /,
          );
          equal(out.state, "none");
          continue;
        }
        equal(out.error, null, `${conversion.format}/${conversion.quantize}: ${out.error}`);
        ok(out.status.startsWith("wrote "), out.status);
        if (c.save !== undefined) {
          // Saved as a download, under the suggested name, the way said.
          equal(out.state, "completed");
          const how = {
            picker: "",
            staged: "download",
            stream: "streamed download",
            memory: "download kept in memory",
          }[c.save];
          ok(out.status.startsWith(`wrote ${out.name} (${how}):`), out.status);
          // A GGUF streams as written, one chunk held at a time; an APR
          // file's tensors wait for those before them in name order.
          if (c.save !== "staged") {
            ok((Number(out.held) === 0) === (conversion.format === "gguf"), `held ${out.held}`);
          }
        }
        const cliOut = join(dir, `cli-${index}-${i}.${conversion.format}`);
        await run(Deno.execPath(), [
          "run",
          "-A",
          CLI_PATH,
          ...conversion.cli,
          c.file,
          "-o",
          cliOut,
          "--quiet",
        ]);
        const expectedBytes = await Deno.readFile(cliOut);
        const browserBytes = decodeBase64(out.base64);
        if (Deno.env.get("APRKIT_BROWSER_DUMP")) {
          await Deno.writeFile(join(Deno.env.get("APRKIT_BROWSER_DUMP")!, out.name), browserBytes);
        }
        equal(browserBytes.length, expectedBytes.length, `${out.name} size`);
        ok(
          browserBytes.every((b, j) => b === expectedBytes[j]),
          `${out.name} differs from the CLI's ${cliOut}`,
        );
      }
      equal(result.progress, 1);
      if (c.file === aprInput) {
        // An APR file gets apr validate --deep's checks, the footer CRC included.
        ok(result.checks.some((row) => row[0] === "footer CRC"), JSON.stringify(result.checks));
      }
      if (c.cancel && c.save === undefined) {
        // The cancelled run wrote to the file the first conversion filled:
        // the abort leaves it as it was.
        deepEqual(result.cancel, {
          status: "cancelled",
          error: null,
          size: decodeBase64(result.outputs[0]!.base64).length,
          buttons: [false, true],
        });
      } else if (c.cancel) {
        // A cancelled streamed download fails in the browser: no file is kept.
        deepEqual(result.cancel, {
          status: "cancelled",
          error: null,
          buttons: [false, true],
          download: { state: "canceled", bytes: 0 },
        });
      }
    }
  } finally {
    await server.shutdown();
    await Deno.remove(dir, { recursive: true });
  }
});
