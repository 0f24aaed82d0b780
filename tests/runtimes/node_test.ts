/**
 * mod.ts under Node: `deno bundle` makes one JavaScript file of mod.ts (the
 * `deno task bundle` command), and Node ≥ 20 runs the library's main paths
 * with it (open and inspect a GGUF and a sharded SafeTensors folder, import
 * the folder to APR with Q4_K, convert it to GGUF, import the GGUF, validate,
 * read values back, refuse an empty Blob and a missing file, import hf://
 * from a local Hub through the cache and with --no-cache). Deno runs the
 * same script on mod.ts itself; every file written must be byte-identical.
 *
 * @module
 */

import { deepEqual, equal, ok } from "node:assert/strict";
import { join } from "node:path";
import { type HubServerFile, startHubServer } from "../_hub_server.ts";

const ROOT = new URL("../../", import.meta.url).pathname;
const SCRIPT = join(ROOT, "tests/runtimes/_main_paths.mjs");
const GGUF = join(ROOT, "tests/testdata/gguf/tiny-qwen2-Q4_K_M.gguf");
const FOLDER = join(ROOT, "tests/testdata/hf/tiny-qwen2");
const OUTPUTS = [
  "folder.apr",
  "folder.gguf",
  "gguf.apr",
  "hub.apr",
  "hub-stream.apr",
  "inspect.json",
];
const DEMO = join(ROOT, "examples/tiny-llama");

async function run(
  command: string,
  args: string[],
  env: Record<string, string> = {},
): Promise<string> {
  const result = await new Deno.Command(command, {
    args,
    cwd: ROOT,
    stdout: "piped",
    stderr: "piped",
    env: { NO_COLOR: "1", ...env },
  }).output();
  const stderr = new TextDecoder().decode(result.stderr);
  equal(result.code, 0, `${command} ${args.join(" ")} failed:\n${stderr}`);
  return new TextDecoder().decode(result.stdout);
}

/** The bundle command of deno.json's "bundle" task, with the output moved to `output`. */
async function bundleArgs(output: string): Promise<string[]> {
  const config = JSON.parse(await Deno.readTextFile(join(ROOT, "deno.json")));
  const task: string = config.tasks.bundle;
  ok(task.startsWith("deno bundle "), `deno.json's bundle task runs deno bundle: ${task}`);
  return task.slice("deno ".length).split(" ").map((arg) => arg.startsWith("dist/") ? output : arg);
}

Deno.test("mod.ts bundled runs under Node: open, inspect, import a sharded folder, convert to GGUF — the same bytes as Deno", async () => {
  const version = await run("node", ["--version"]);
  const major = Number(/^v(\d+)/.exec(version)?.[1]);
  ok(major >= 20, `node ${version.trim()} is older than 20`);
  const dir = await Deno.makeTempDir({ prefix: "aprkit-node-" });
  // The demo model on a local Hub: hf:// through the cache (symlinks, refs)
  // and streamed (--no-cache), each runtime with a cache of its own.
  const files: HubServerFile[] = [];
  for await (const entry of Deno.readDir(DEMO)) {
    files.push({ path: entry.name, diskPath: join(DEMO, entry.name) });
  }
  const hub = await startHubServer({ repoId: "org/name", files });
  const hubEnv = (name: string) => ({
    HF_ENDPOINT: hub.endpoint,
    HF_HOME: join(dir, `hf-${name}`),
    HF_HUB_OFFLINE: "",
  });
  try {
    const bundle = join(dir, "aprkit.js");
    await run(Deno.execPath(), await bundleArgs(bundle));
    // The bundle does not import node: modules at its top level (it loads in a browser).
    const text = await Deno.readTextFile(bundle);
    ok(!/^import .* from "node:/m.test(text), "the bundle has a static node: import");
    const denoOut = join(dir, "deno");
    const nodeOut = join(dir, "node");
    await Deno.mkdir(denoOut);
    await Deno.mkdir(nodeOut);
    await run(Deno.execPath(), [
      "run",
      "--allow-all",
      SCRIPT,
      new URL("mod.ts", `file://${ROOT}`).href,
      denoOut,
      GGUF,
      FOLDER,
      "hf://org/name",
    ], hubEnv("deno"));
    await run(
      "node",
      [SCRIPT, `file://${bundle}`, nodeOut, GGUF, FOLDER, "hf://org/name"],
      hubEnv("node"),
    );
    // Node filled a Hugging Face cache of the standard layout.
    const snapshot = join(dir, "hf-node/hub/models--org--name/snapshots", hub.commit);
    ok((await Deno.lstat(join(snapshot, "config.json"))).isSymlink);
    for (const name of OUTPUTS) {
      const [a, b] = await Promise.all([
        Deno.readFile(join(denoOut, name)),
        Deno.readFile(join(nodeOut, name)),
      ]);
      ok(a.length > 0, `${name} is empty`);
      deepEqual(b, a, `${name} differs between Node and Deno`);
    }
    const report = JSON.parse(await Deno.readTextFile(join(nodeOut, "inspect.json")));
    equal(report.folder.format, "safetensors");
    equal(report.folder.tensors.length, 26);
    equal(report.gguf.format, "gguf");
    ok(report.validation.every((c: { ok: boolean }) => c.ok), JSON.stringify(report.validation));
    ok(report.validation.some((c: { check: string }) => c.check === "footer CRC"));
    equal(report.emptyBlob, "ModelFormatError");
    // Paths are taken where a ByteSource is (they were not: "source.read is not a function").
    deepEqual(report.validationByPath, report.validation);
    equal(report.openAprByPath, report.aprInspect.tensors.length);
    // Node's ENOENT became the NotFound class Deno throws, its code kept.
    deepEqual(report.missing, {
      openModel: "NotFound ENOENT",
      importModel: "NotFound ENOENT",
      validateApr: "NotFound ENOENT",
      openApr: "NotFound ENOENT",
      openFileSource: "NotFound ENOENT",
    });
    // Deno says the same.
    deepEqual(
      JSON.parse(await Deno.readTextFile(join(denoOut, "inspect.json"))).missing,
      report.missing,
    );
  } finally {
    await hub.close();
    await Deno.remove(dir, { recursive: true });
  }
});
