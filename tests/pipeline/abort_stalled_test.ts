/**
 * Ctrl-C (the conversion's `signal`) ends a conversion promptly whatever it
 * writes, even while a tensor read waits on a server that stopped sending:
 * the read in flight is given up, not waited out (an idle timeout and its
 * retries take minutes). A real local Hub (tests/_hub_server.ts) streams the
 * demo model with `noCache` and stalls halfway through its second shard —
 * or at its very start, while the model is being opened (the shard's header
 * read): then `apr` itself, sent SIGINT, exits 130 at once, nothing written.
 *
 * @module
 */

import { equal, match, ok } from "node:assert/strict";
import { join } from "node:path";
import { convertModel, type OutputFormat } from "../../src/pipeline/convert_model.ts";
import { hubSettingsFromEnv } from "../../src/sources/hub_settings.ts";
import { type HubServer, startHubServer } from "../_hub_server.ts";
import { CLI_PATH, DEMO_MODEL, listDir, withTempDir } from "../cli/_run_apr.ts";

const STALLED = "model-00002-of-00002.safetensors";
/** Time allowed from the abort to the end of the call (before the fix: minutes). */
const PROMPT_MS = 3000;

async function demoFiles(): Promise<{ path: string; diskPath: string }[]> {
  const files = [];
  for await (const e of Deno.readDir(DEMO_MODEL)) {
    files.push({ path: e.name, diskPath: join(DEMO_MODEL, e.name) });
  }
  return files;
}

/** A `--no-cache` conversion from `hub` to `out`, its abort, and its outcome (its error). */
function startConversion(
  hub: HubServer,
  dir: string,
  out: string,
  format?: OutputFormat,
): { stop: () => Error; conversion: Promise<unknown> } {
  const abort = new AbortController();
  const reason = new Error("stopped by the test");
  const settings = hubSettingsFromEnv({
    HF_ENDPOINT: hub.endpoint,
    HF_HOME: join(dir, "home"),
    HF_HUB_OFFLINE: "0",
  });
  const conversion = convertModel("hf://test-org/tiny-model", out, {
    ...(format === undefined ? {} : { format }),
    noCache: true,
    hubSettings: settings,
    signal: abort.signal,
  }).then(() => undefined, (error) => error);
  return { stop: () => (abort.abort(reason), reason), conversion };
}

/** What `running` settles to within {@linkcode PROMPT_MS}, else "still running". */
async function within<T>(running: Promise<T>): Promise<T | "still running"> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const late = new Promise<"still running">((resolve) => {
    timer = setTimeout(() => resolve("still running"), PROMPT_MS);
  });
  try {
    return await Promise.race([running, late]);
  } finally {
    clearTimeout(timer);
  }
}

for (const format of ["gguf", "safetensors", "qnat", "apr"] as OutputFormat[]) {
  Deno.test(`an aborted ${format} conversion from a stalled --no-cache stream ends at once, nothing at its output`, async () => {
    const size = (await Deno.stat(join(DEMO_MODEL, STALLED))).size;
    const afterBytes = Math.floor(size / 2);
    const hub = await startHubServer({
      files: await demoFiles(),
      faults: [{ kind: "stall", path: STALLED, afterBytes }],
      serveChunkSize: 4096,
    });
    try {
      await withTempDir(async (dir) => {
        const { stop, conversion } = startConversion(hub, dir, join(dir, `out.${format}`), format);
        // Abort once the server holds the stalled body back.
        while ((hub.counters.bytesByFile.get(STALLED) ?? 0) < afterBytes) {
          await new Promise((r) => setTimeout(r, 5));
        }
        await new Promise((r) => setTimeout(r, 50));
        const aborted = performance.now();
        const reason = stop();
        const ended = await within(conversion);
        const took = performance.now() - aborted;
        ok(ended !== "still running", `${format}: still running ${PROMPT_MS} ms after the abort`);
        equal(ended, reason, `${format}: ${ended}`);
        ok(took < PROMPT_MS, `${format}: took ${took} ms`);
        // Nothing at the output path; an APR output keeps what it wrote for
        // --resume (OUT.partial, its journal and its sha256 checks' progress).
        const left = (await listDir(dir)).filter((n) => n.startsWith("out"));
        ok(!left.includes(`out.${format}`), `${format} left ${left}`);
        if (format !== "apr") equal(left.length, 0, `${format} left ${left}`);
        else ok(left.every((n) => n.startsWith("out.apr.partial")), `left ${left}`);
      });
    } finally {
      await hub.close();
    }
  });
}

/** Wait until the server has seen a data request for `path` (a Range GET). */
async function untilRequested(hub: HubServer, path: string) {
  while (!hub.dataRequests().some((r) => r.file === path)) {
    await new Promise((r) => setTimeout(r, 5));
  }
  // Let the request reach the stalled body.
  await new Promise((r) => setTimeout(r, 100));
}

// Opening the model reads the index and each shard's header over Range
// requests, before any tensor stream exists: the same signal stops those too.
Deno.test("an aborted --no-cache conversion whose shard header stalls ends at once, nothing at its output", async () => {
  const hub = await startHubServer({
    files: await demoFiles(),
    faults: [{ kind: "stall", path: STALLED, afterBytes: 0 }],
  });
  try {
    await withTempDir(async (dir) => {
      const { stop, conversion } = startConversion(hub, dir, join(dir, "out.gguf"));
      await untilRequested(hub, STALLED);
      const aborted = performance.now();
      const reason = stop();
      const ended = await within(conversion);
      ok(ended !== "still running", `still running ${PROMPT_MS} ms after the abort`);
      equal(ended, reason);
      ok(performance.now() - aborted < PROMPT_MS);
      equal((await listDir(dir)).filter((n) => n.startsWith("out")).length, 0);
    });
  } finally {
    await hub.close();
  }
});

Deno.test({
  name:
    "Ctrl-C while a --no-cache shard header stalls: apr exits 130 at once, nothing at the output",
  ignore: Deno.build.os === "windows",
  fn: async () => {
    const hub = await startHubServer({
      files: await demoFiles(),
      faults: [{ kind: "stall", path: STALLED, afterBytes: 0 }],
    });
    try {
      await withTempDir(async (dir) => {
        const out = join(dir, "out.gguf");
        const child = new Deno.Command(Deno.execPath(), {
          args: ["run", "-A", CLI_PATH, "convert", "hf://test-org/tiny-model", "--no-cache"]
            .concat(["-o", out]),
          env: {
            HF_ENDPOINT: hub.endpoint,
            HF_HOME: join(dir, "home"),
            HF_HUB_OFFLINE: "0",
            NO_COLOR: "1",
          },
          stdin: "null",
          stdout: "null",
          stderr: "piped",
        }).spawn();
        const stderr = new Response(child.stderr).text();
        await untilRequested(hub, STALLED);
        const interrupted = performance.now();
        child.kill("SIGINT");
        const ended = await within(child.status);
        if (ended === "still running") child.kill("SIGKILL");
        const status = await child.status;
        ok(ended !== "still running", `still running ${PROMPT_MS} ms after Ctrl-C`);
        ok(performance.now() - interrupted < PROMPT_MS);
        equal(status.code, 130, await stderr);
        match(await stderr, /interrupted; nothing was kept/);
        equal((await listDir(dir)).filter((n) => n.startsWith("out")).length, 0);
      });
    } finally {
      await hub.close();
    }
  },
});
