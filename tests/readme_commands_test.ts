/**
 * The README's commands run as written. Every line of its fenced `sh`
 * blocks, and the "from a clone" commands of its install table, is run by
 * `sh` in a fresh folder laid out like a clone (the repository's files
 * linked in), with `apr` on the PATH. Offline: `hf://` models come from a
 * local Hub (`HF_ENDPOINT`) serving the example model, and the files a line
 * reads (`model.apr`, `./phi-4/`, `model-Q4_K_M.gguf`, `imatrix.dat`…) are made from the
 * example model and the test fixtures when the line does not write them.
 * Only the `npx` lines are left out: they fetch Deno from the npm registry.
 *
 * @module
 */

import { equal, ok } from "node:assert/strict";
import { join } from "node:path";
import { type HubServer, type HubServerFile, startHubServer } from "./_hub_server.ts";
import { importModel } from "../src/pipeline/convert_model.ts";
import { openModel } from "../src/pipeline/open_model.ts";
import { hfToGgufName } from "../src/formats/gguf/names.ts";

const ROOT = new URL("../", import.meta.url).pathname;
const README = await Deno.readTextFile(join(ROOT, "README.md"));
const DEMO = join(ROOT, "examples/tiny-llama");
const Q4_K_M = join(ROOT, "tests/testdata/gguf/tiny-llama-q4_k_m.gguf");

/** Every command line of the README's ```sh blocks, and the install table's clone commands. */
function readmeCommands(): string[] {
  const lines = [...README.matchAll(/^```sh\n([\s\S]*?)^```/gm)]
    .flatMap((m) => m[1]!.split("\n"))
    .filter((l) => l.trim() !== "");
  const cloneRow = README.split("\n").find((l) => l.startsWith("| from a clone"));
  ok(cloneRow, "the install table has a 'from a clone' row");
  const clone = [...cloneRow.matchAll(/`([^`]+)`/g)].map((m) => m[1]!);
  return [...clone, ...lines];
}

/** Repositories the README names, each served as its own local Hub. */
async function startHubs(): Promise<Map<string, HubServer>> {
  const demoFiles: HubServerFile[] = [];
  for await (const entry of Deno.readDir(DEMO)) {
    demoFiles.push({ path: entry.name, diskPath: join(DEMO, entry.name) });
  }
  const ggufFiles: HubServerFile[] = [
    { path: "README.md", data: new TextEncoder().encode("# tiny\n") },
    { path: "llama-2-7b.Q4_K_M.gguf", diskPath: Q4_K_M },
    {
      path: "llama-2-7b.Q8_0.gguf",
      diskPath: join(ROOT, "tests/testdata/gguf/tiny-llama-q8_0.gguf"),
    },
  ];
  const hubs = new Map<string, HubServer>();
  for (const repoId of ["microsoft/phi-4", "Qwen/Qwen2.5-0.5B", "org/name"]) {
    hubs.set(repoId, await startHubServer({ repoId, files: demoFiles }));
  }
  const repoId = "TheBloke/Llama-2-7B-GGUF";
  hubs.set(repoId, await startHubServer({ repoId, files: ggufFiles }));
  return hubs;
}

/**
 * A folder laid out like a clone: the repository's entries linked in, its
 * config copied (a task may write deno.lock), and an `apr` command.
 */
async function makeClone(dir: string): Promise<void> {
  for await (const entry of Deno.readDir(ROOT)) {
    if (entry.name.startsWith(".") || entry.name === "deno.json" || entry.name === "deno.lock") {
      continue;
    }
    await Deno.symlink(join(ROOT, entry.name), join(dir, entry.name));
  }
  await Deno.copyFile(join(ROOT, "deno.json"), join(dir, "deno.json"));
  await Deno.copyFile(join(ROOT, "deno.lock"), join(dir, "deno.lock"));
  await Deno.mkdir(join(dir, ".bin"));
  const apr = join(dir, ".bin", "apr");
  await Deno.writeTextFile(
    apr,
    `#!/bin/sh\nexec "${Deno.execPath()}" run -A "${ROOT}cli.ts" "$@"\n`,
  );
  await Deno.chmod(apr, 0o755);
}

/** Make what `line` reads but does not write. */
async function prepareInputs(dir: string, line: string): Promise<void> {
  const outputs = new Set([...line.matchAll(/-o\s+(\S+)/g)].map((m) => m[1]!));
  const reads = (name: string): boolean =>
    new RegExp(`(^|\\s)${name.replace(/[.]/g, "\\.")}(\\s|$)`).test(line) && !outputs.has(name);
  for (const folder of ["./phi-4/", "./Qwen2.5-0.5B/", "./hf-folder/"]) {
    if (line.includes(folder)) await Deno.symlink(DEMO, join(dir, folder.slice(2, -1)));
  }
  // An image-text-to-text checkpoint: the tiny Gemma 3 fixture (tests/testdata/multimodal/).
  if (line.includes("./gemma-3-4b-it/")) {
    await Deno.symlink(
      join(ROOT, "tests/testdata/multimodal/hf/gemma3-t4"),
      join(dir, "gemma-3-4b-it"),
    );
  }
  if (reads("model-Q4_K_M.gguf")) await Deno.copyFile(Q4_K_M, join(dir, "model-Q4_K_M.gguf"));
  if (reads("imatrix.dat")) await Deno.writeFile(join(dir, "imatrix.dat"), await demoImatrix());
  if (reads("types.txt")) {
    await Deno.writeTextFile(join(dir, "types.txt"), "attn_v=q8_0\nffn_down=q6_k\n");
  }
  for (const apr of ["model.apr", "phi-4.apr"]) {
    if (reads(apr)) await importModel(DEMO, join(dir, apr));
  }
}

/**
 * A legacy llama-imatrix `.dat` for the example model: one entry per weight
 * matrix (GGUF names), all ones, one call.
 */
async function demoImatrix(): Promise<Uint8Array> {
  const model = await openModel(DEMO);
  const parts: Uint8Array[] = [];
  const i32 = (v: number) => new Uint8Array(new Int32Array([v]).buffer);
  const matrices = model.header.tensors.filter((t) => t.shape.length === 2);
  await model.close();
  parts.push(i32(matrices.length));
  for (const t of matrices) {
    const name = new TextEncoder().encode(hfToGgufName(t.name));
    const cols = t.shape[1]!;
    parts.push(i32(name.length), name, i32(1), i32(cols));
    parts.push(new Uint8Array(new Float32Array(cols).fill(1).buffer));
  }
  const out = new Uint8Array(parts.reduce((n, p) => n + p.length, 0));
  let o = 0;
  for (const p of parts) {
    out.set(p, o);
    o += p.length;
  }
  return out;
}

/** The local Hub a line's hf:// reference names, if any. */
function hubFor(line: string, hubs: Map<string, HubServer>): HubServer | undefined {
  const repo = /hf:\/\/([^\s@/]+\/[^\s@/:]+)/.exec(line)?.[1];
  if (repo === undefined) return undefined;
  const hub = hubs.get(repo);
  ok(hub, `no local Hub for ${repo}: add it to startHubs()`);
  return hub;
}

Deno.test("every command in the README runs as written (offline, against the example model)", async (t) => {
  const commands = readmeCommands().filter((l) => !l.startsWith("npx "));
  ok(commands.length >= 12, `found only ${commands.length} commands`);
  const hubs = await startHubs();
  const base = await Deno.makeTempDir({ prefix: "aprkit-readme-" });
  try {
    for (const [i, line] of commands.entries()) {
      await t.step(line, async () => {
        const dir = join(base, String(i));
        await Deno.mkdir(dir);
        await makeClone(dir);
        await prepareInputs(dir, line);
        const hub = hubFor(line, hubs);
        const run = await new Deno.Command("sh", {
          args: ["-c", line],
          cwd: dir,
          env: {
            PATH: `${join(dir, ".bin")}:${Deno.env.get("PATH")}`,
            HF_HOME: join(dir, ".hf"),
            NO_COLOR: "1",
            ...(hub ? { HF_ENDPOINT: hub.endpoint } : {}),
          },
          stdin: "null",
          stdout: "piped",
          stderr: "piped",
        }).output();
        const text = new TextDecoder();
        equal(run.code, 0, `${line}\n${text.decode(run.stderr)}${text.decode(run.stdout)}`);
        // What it says it writes is there (a sharded output is named by its shards instead).
        if (!line.includes("--max-shard-size")) {
          for (const [, output] of line.matchAll(/-o\s+(\S+)/g)) {
            ok((await Deno.stat(join(dir, output!))).size > 0, `${output} written`);
          }
        }
      });
    }
  } finally {
    for (const hub of hubs.values()) await hub.close();
    await Deno.remove(base, { recursive: true });
  }
});
