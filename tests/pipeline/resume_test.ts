/**
 * Resumable imports (DESIGN.md §1.4, §2.3): an `apr import` killed with
 * SIGKILL after its first journal commit, run again with `--resume`, gives
 * the same bytes as an uninterrupted import; a resume with other options is
 * refused without destroying the partial output.
 *
 * The sink commits every 64 MiB (APR_SINK_COMMIT_BYTES), so the model is
 * 128 MiB of F32 in 8 tensors: the first commit lands halfway, and the
 * second half leaves a window of a hundred milliseconds or more to kill in.
 *
 * @module
 */

import { equal, match, ok } from "node:assert/strict";
import { APR_SINK_COMMIT_BYTES } from "../../src/formats/apr/sink.ts";
import { importModel } from "../../src/pipeline/convert_model.ts";
import { type HubFault, startHubServer } from "../_hub_server.ts";
import { CLI_PATH, sha256, withTempDir, writeBigSafetensors } from "./_helpers.ts";

const TENSOR_ELEMENTS = 4 << 20; // 16 MiB of F32 each
const TENSORS = 8;

function apr(args: string[], env: Record<string, string> = {}): Deno.Command {
  return new Deno.Command(Deno.execPath(), {
    args: ["run", "-A", CLI_PATH, ...args],
    env: { HF_HUB_OFFLINE: "1", NO_COLOR: "1", ...env },
    stdin: "null",
    stdout: "piped",
    stderr: "piped",
  });
}

async function run(
  args: string[],
  env: Record<string, string> = {},
): Promise<{ code: number; stdout: string; stderr: string }> {
  const out = await apr(args, env).output();
  const text = new TextDecoder();
  return { code: out.code, stdout: text.decode(out.stdout), stderr: text.decode(out.stderr) };
}

async function committedLines(journal: string): Promise<number> {
  try {
    const text = await Deno.readTextFile(journal);
    return text.split("\n").filter((l) => l.includes('"crc"')).length;
  } catch (error) {
    if (error instanceof Deno.errors.NotFound) return 0;
    throw error;
  }
}

/**
 * Start an import and send `signal` once its journal holds a committed
 * tensor. Resolves with the child's status and stderr, or `undefined` when
 * the import finished before the signal could be sent.
 */
async function interruptMidway(
  source: string,
  out: string,
  signal: Deno.Signal,
  extraArgs: string[] = [],
  env: Record<string, string> = {},
): Promise<{ status: Deno.CommandStatus; stderr: string } | undefined> {
  const child = apr(["import", source, "-o", out, "--quiet", ...extraArgs], env).spawn();
  let exited = false;
  const status = child.status.then((s) => {
    exited = true;
    return s;
  });
  // Drain the pipes so the child never blocks on them.
  const stderr = new Response(child.stderr).text();
  const drained = child.stdout.cancel();
  let sent = false;
  while (!exited) {
    if (await committedLines(`${out}.partial.journal`) > 0) {
      child.kill(signal);
      sent = true;
      break;
    }
    await new Promise((r) => setTimeout(r, 1));
  }
  const s = await status;
  await drained;
  return sent && !s.success ? { status: s, stderr: await stderr } : undefined;
}

/** Start an import and SIGKILL it once its journal holds a committed tensor. */
async function killMidway(source: string, out: string): Promise<boolean> {
  const result = await interruptMidway(source, out, "SIGKILL");
  return result?.status.signal === "SIGKILL";
}

Deno.test("apr import --resume after SIGKILL gives the bytes of an uninterrupted import", async () => {
  ok(
    TENSOR_ELEMENTS * 4 * TENSORS >= 2 * APR_SINK_COMMIT_BYTES,
    "model too small to commit midway",
  );
  await withTempDir(async (dir) => {
    const source = `${dir}/big.safetensors`;
    const tensors: Record<string, number> = {};
    for (let i = 0; i < TENSORS; i++) tensors[`model.layers.${i}.weight`] = TENSOR_ELEMENTS;
    await writeBigSafetensors(source, tensors);
    const reference = `${dir}/reference.apr`;
    await importModel(source, reference);
    const expected = await sha256(reference);
    await Deno.remove(reference);

    const out = `${dir}/out.apr`;
    let killed = false;
    let committed = 0;
    // On a very slow or very fast machine the window can be missed (the
    // child may commit every tensor before the kill lands): try again.
    for (let attempt = 0; attempt < 6 && !killed; attempt++) {
      await Deno.remove(out).catch(() => {});
      await Deno.remove(`${out}.partial`).catch(() => {});
      await Deno.remove(`${out}.partial.journal`).catch(() => {});
      killed = await killMidway(source, out);
      committed = await committedLines(`${out}.partial.journal`);
      if (killed && committed >= TENSORS) killed = false;
    }
    ok(killed, `could not kill the import between its first commit and its end (${committed})`);
    ok(!(await Deno.stat(out).catch(() => undefined)), "no OUT after a kill");
    ok(committed >= 1 && committed < TENSORS, `committed ${committed}`);

    // Other options than the interrupted run: refused, partial kept.
    const other = await run(["import", source, "-o", out, "--resume", "--quantize", "f16"]);
    equal(other.code, 2, other.stderr);
    const errLines = other.stderr.split("\n").filter((l) => l !== "");
    equal(errLines.length, 1, other.stderr);
    match(errLines[0]!, /^apr: Cannot resume "/);
    match(errLines[0]!, /different input or options/);
    ok(!/^\s+at /m.test(other.stderr));
    equal(await committedLines(`${out}.partial.journal`), committed, "journal kept");

    const resumed = await run(["import", source, "-o", out, "--resume", "--json"]);
    equal(resumed.code, 0, resumed.stderr);
    const result = JSON.parse(resumed.stdout);
    ok(result.resumedTensors >= 1, `resumedTensors ${result.resumedTensors}`);
    equal(result.tensors, TENSORS);
    equal(await sha256(out), expected);
    ok(!(await Deno.stat(`${out}.partial`).catch(() => undefined)), "partial removed");
    ok(!(await Deno.stat(`${out}.partial.journal`).catch(() => undefined)), "journal removed");
  });
});

Deno.test({
  name: "apr import interrupted by Ctrl-C (SIGINT) says how to resume, and --resume completes it",
  ignore: Deno.build.os === "windows",
  async fn() {
    await withTempDir(async (dir) => {
      // Served by a local Hub that stops sending the shard once 3/4 of it is
      // out: the import commits at 64 MiB and then waits, so the signal always
      // lands between the first commit and the end (no race with a fast run).
      const source = `${dir}/big.safetensors`;
      const tensors: Record<string, number> = {};
      for (let i = 0; i < TENSORS; i++) tensors[`model.layers.${i}.weight`] = TENSOR_ELEMENTS;
      await writeBigSafetensors(source, tensors);
      const size = (await Deno.stat(source)).size;
      const hub = await startHubServer({
        files: [{ path: "model.safetensors", diskPath: source }],
        serveChunkSize: 1 << 20,
      });
      try {
        const env = {
          HF_ENDPOINT: hub.endpoint,
          HF_HOME: `${dir}/hf-home`,
          HF_HUB_OFFLINE: "0",
        };
        const ref = `hf://${hub.repoId}`;
        const reference = `${dir}/reference.apr`;
        const plain = await run(["import", ref, "-o", reference, "--no-cache", "--quiet"], env);
        equal(plain.code, 0, plain.stderr);
        const expected = await sha256(reference);

        const out = `${dir}/out.apr`;
        // The stall counts the file's bytes served since the server started
        // (the reference import above included): no reset() zeroes them.
        const servedBefore = hub.counters.bytesByFile.get("model.safetensors") ?? 0;
        const stall: HubFault = {
          kind: "stall",
          path: "model.safetensors",
          afterBytes: servedBefore + Math.floor(size * 0.75),
        };
        hub.faults.push(stall);
        const interrupted = await interruptMidway(ref, out, "SIGINT", ["--no-cache"], env);
        hub.faults.splice(hub.faults.indexOf(stall), 1);
        ok(interrupted, "the import ended before its first commit could be seen");
        equal(interrupted!.status.code, 130);
        match(interrupted!.stderr, /interrupted; run the same command with --resume/);
        ok(!/^\s+at /m.test(interrupted!.stderr), "no stack trace");
        ok(!(await Deno.stat(out).catch(() => undefined)), "no OUT after an interrupt");

        // Without --resume, the leftover is kept and named: exit 2 (on a copy,
        // so the original stays for the resume below); --force starts over.
        const other = `${dir}/other.apr`;
        await Deno.copyFile(`${out}.partial`, `${other}.partial`);
        await Deno.copyFile(`${out}.partial.journal`, `${other}.partial.journal`);
        const refused = await run(["import", ref, "-o", other, "--no-cache"], env);
        equal(refused.code, 2, refused.stderr);
        match(
          refused.stderr,
          /a partial import of this output exists .*add --resume to continue or --force to start over/,
        );
        ok(await Deno.stat(`${other}.partial.journal`), "the partial import is kept");
        const again = await run(["import", ref, "-o", other, "--no-cache", "--force"], env);
        equal(again.code, 0, again.stderr);
        equal(await sha256(other), expected);

        const resumed = await run(
          ["import", ref, "-o", out, "--no-cache", "--resume", "--json"],
          env,
        );
        equal(resumed.code, 0, resumed.stderr);
        ok(JSON.parse(resumed.stdout).resumedTensors >= 1);
        equal(await sha256(out), expected);
      } finally {
        await hub.close();
      }
    });
  },
});
