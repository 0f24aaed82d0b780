/**
 * The Hub cache as trustworthy as huggingface_hub's (issue 22), with real
 * `apr` subprocesses against the local Hub (tests/_hub_server.ts): two runs
 * sharing one cache, small files checked against their git blob id, an
 * unrequested `Content-Encoding`, a poisoned cached blob, an unreachable Hub
 * with the model cached, Ctrl-C during a download, several GGUFs.
 *
 * @module
 */

import { equal, match, ok } from "node:assert/strict";
import {
  buildTinyShardedModel,
  encodeSafetensors,
  sha256Hex,
  startHubServer,
} from "../_hub_server.ts";
import { CLI_PATH, exists, lines, noise, runApr, sha256, withTempDir } from "./_run_apr.ts";
import { HubRequestError } from "../../src/errors.ts";
import { pullModel } from "../../src/sources/hub_pull.ts";
import { hubSettingsFromEnv } from "../../src/sources/hub_settings.ts";

const REF = "hf://test-org/tiny-model";
const REPO_DIR = "hub/models--test-org--tiny-model";
const BIG = "model-00002-of-00002.safetensors";

function hubEnv(endpoint: string, home: string): Record<string, string> {
  return { HF_ENDPOINT: endpoint, HF_HOME: home, HF_HUB_OFFLINE: "0", NO_COLOR: "1" };
}

/** Start `apr ARGS` without waiting for it. */
function spawnApr(args: string[], env: Record<string, string>): Deno.ChildProcess {
  return new Deno.Command(Deno.execPath(), {
    args: ["run", "-A", CLI_PATH, ...args],
    env,
    stdin: "null",
    stdout: "piped",
    stderr: "piped",
  }).spawn();
}

async function finish(
  child: Deno.ChildProcess,
): Promise<{ code: number; stderr: string; stdout: string }> {
  const out = await child.output();
  const text = new TextDecoder();
  return { code: out.code, stdout: text.decode(out.stdout), stderr: text.decode(out.stderr) };
}

/** The `.incomplete` partial blobs of the test repository, with their sizes. */
async function partials(home: string): Promise<{ path: string; size: number }[]> {
  const dir = `${home}/${REPO_DIR}/blobs`;
  const found: { path: string; size: number }[] = [];
  if (!(await exists(dir))) return found;
  for await (const entry of Deno.readDir(dir)) {
    if (!entry.name.endsWith(".incomplete")) continue;
    // A small file's partial may be renamed into place between the listing and the stat.
    const info = await Deno.stat(`${dir}/${entry.name}`).catch(() => undefined);
    if (info !== undefined) found.push({ path: `${dir}/${entry.name}`, size: info.size });
  }
  return found;
}

async function until(condition: () => Promise<boolean>, what: string, ms = 60_000): Promise<void> {
  const deadline = Date.now() + ms;
  while (!(await condition())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

Deno.test("two apr pull runs into one HF_HOME at once: one downloads, the other waits for its lock and reuses", async () => {
  const files = buildTinyShardedModel({ bigShardBytes: 1024 * 1024 });
  const size = files.find((f) => f.path === BIG)!.data!.length;
  // ~16 chunks of 64 KiB, 150 ms each: the download outlasts the second process's start.
  const server = await startHubServer({
    files,
    faults: [{ kind: "slow", path: BIG, delayMs: 150 }],
  });
  try {
    await withTempDir(async (dir) => {
      const env = hubEnv(server.endpoint, `${dir}/home`);
      const runs = await Promise.all([
        finish(spawnApr(["pull", REF, "--json"], env)),
        finish(spawnApr(["pull", REF, "--json"], env)),
      ]);
      for (const run of runs) equal(run.code, 0, run.stderr);
      // Both point at the same snapshot, and the big file was served once.
      equal(JSON.parse(runs[0]!.stdout).snapshotPath, JSON.parse(runs[1]!.stdout).snapshotPath);
      equal(server.counters.bytesByFile.get(BIG), size, "the big file was downloaded twice");
      const waited = runs.filter((r) => /waiting for another run downloading/.test(r.stderr));
      ok(
        waited.length >= 1,
        `one run should have waited:\n${runs.map((r) => r.stderr).join("\n")}`,
      );
      // The waiting run says so in its JSON document too, and reused the blob.
      const doc = JSON.parse(waited[0]!.stdout);
      ok(
        doc.warnings.some((w: string) => w.includes("waiting for another run")),
        waited[0]!.stdout,
      );
      ok(doc.files.find((f: { path: string }) => f.path === BIG).reused, waited[0]!.stdout);
      // huggingface_hub's lock path: {cache}/.locks/models--org--name/{etag}.lock.
      const etag = doc.files &&
        (await Deno.realPath(`${doc.snapshotPath}/${BIG}`)).split("/").pop();
      ok(await exists(`${dir}/home/hub/.locks/models--test-org--tiny-model/${etag}.lock`));
      equal((await partials(`${dir}/home`)).length, 0);
    });
  } finally {
    await server.close();
  }
});

Deno.test("a small file whose content is not its git blob id is never cached; a healthy Hub then fills the cache", async () => {
  const server = await startHubServer({
    files: buildTinyShardedModel(),
    faults: [{ kind: "corrupt", path: "config.json" }],
  });
  try {
    await withTempDir(async (dir) => {
      const home = `${dir}/home`;
      const env = hubEnv(server.endpoint, home);
      const bad = await runApr(["pull", REF], { env });
      ok(bad.code !== 0, bad.stderr);
      match(
        bad.stderr,
        /"hf:\/\/test-org\/tiny-model@[0-9a-f]{40}\/config\.json": its git blob SHA-1 is [0-9a-f]{40} but the Hub announced [0-9a-f]{40}/,
      );
      const snapshotConfig = `${home}/${REPO_DIR}/snapshots/${server.commit}/config.json`;
      ok(!(await exists(snapshotConfig)), "a corrupt config.json was linked into the snapshot");
      server.faults.length = 0;
      const good = await runApr(["pull", REF], { env });
      equal(good.code, 0, good.stderr);
      const config = JSON.parse(await Deno.readTextFile(snapshotConfig));
      equal(config.hidden_size, 8);
    });
  } finally {
    await server.close();
  }
});

Deno.test("a gzip answer to a plain request is refused: retried once it is fleeting, an error naming Content-Encoding when it persists", async () => {
  const files = buildTinyShardedModel();
  const original = files.find((f) => f.path === "tokenizer_config.json")!.data!;
  const server = await startHubServer({
    files,
    faults: [{ kind: "gzip", path: "tokenizer_config.json", times: 1 }],
  });
  try {
    await withTempDir(async (dir) => {
      const home = `${dir}/home`;
      const env = hubEnv(server.endpoint, home);
      const run = await runApr(["pull", REF], { env });
      equal(run.code, 0, run.stderr);
      const cached = await Deno.readFile(`${run.stdout.trim()}/tokenizer_config.json`);
      equal(new TextDecoder().decode(cached), new TextDecoder().decode(original));

      // Persisting, it is an error naming the encoding, and nothing is cached.
      const other = `${dir}/other-cache`;
      server.faults.push({ kind: "gzip", path: "tokenizer_config.json", times: 100 });
      const refused = await pullModel(REF, {
        settings: { ...hubSettingsFromEnv(env), cacheDir: other },
        retryDelayMs: 1,
      }).then(() => undefined, (error: Error) => error);
      ok(refused instanceof HubRequestError, String(refused));
      match(
        refused.message,
        /tokenizer_config\.json": the server sent it encoded as "gzip" \(Content-Encoding\) 6 times/,
      );
      const blobs = await Array.fromAsync(
        Deno.readDir(`${other}/models--test-org--tiny-model/blobs`),
      );
      ok(
        !(await exists(
          `${other}/models--test-org--tiny-model/snapshots/${server.commit}/tokenizer_config.json`,
        )),
        `an encoded body was cached: ${blobs.map((b) => b.name)}`,
      );
    });
  } finally {
    await server.close();
  }
});

Deno.test("a cached blob that fails to parse is named, with how to remove it", async () => {
  const server = await startHubServer({ files: buildTinyShardedModel() });
  try {
    await withTempDir(async (dir) => {
      const home = `${dir}/home`;
      const env = hubEnv(server.endpoint, home);
      const pulled = await runApr(["pull", REF], { env });
      equal(pulled.code, 0, pulled.stderr);
      // Poison the cache as an older, unchecked run could have: invalid UTF-8.
      const blob = await Deno.realPath(`${pulled.stdout.trim()}/config.json`);
      await Deno.writeFile(blob, new Uint8Array([0x7b, 0xff, 0xfe, 0x7d]));
      const run = await runApr(["import", REF, "-o", `${dir}/m.apr`], { env });
      equal(run.code, 2, run.stderr);
      equal(lines(run.stderr).length, 1, run.stderr);
      ok(run.stderr.includes(`the blob "${blob}": delete it`), run.stderr);
      match(run.stderr, /run the same command again to fetch it anew/);
      // Following the advice works.
      await Deno.remove(blob);
      const again = await runApr(["import", REF, "-o", `${dir}/m.apr`], { env });
      equal(again.code, 0, again.stderr);
    });
  } finally {
    await server.close();
  }
});

Deno.test("a cached model with an unreachable Hub: one fast attempt, the cache is used, one warning line (and in --json)", async () => {
  const server = await startHubServer({ files: buildTinyShardedModel() });
  await withTempDir(async (dir) => {
    const home = `${dir}/home`;
    const env = hubEnv(server.endpoint, home);
    try {
      const pulled = await runApr(["pull", REF], { env });
      equal(pulled.code, 0, pulled.stderr);
    } finally {
      await server.close(); // nothing listens there any more
    }
    const started = performance.now();
    const run = await runApr(["pull", REF], { env });
    const seconds = (performance.now() - started) / 1000;
    equal(run.code, 0, run.stderr);
    // The default retries back off 0.5+1+2+4+8 s: well over 10 s.
    ok(seconds < 10, `took ${seconds.toFixed(1)} s`);
    const warnings = lines(run.stderr);
    equal(warnings.length, 2, run.stderr); // the warning, and the summary line
    match(
      warnings[0]!,
      /^warning: cannot reach the Hub at http:\/\/127\.0\.0\.1:\d+ \(.*\); using the cached snapshot 0123456789ab of hf:\/\/test-org\/tiny-model@main$/,
    );

    const json = await runApr(["import", REF, "-o", `${dir}/m.apr`, "--json"], { env });
    equal(json.code, 0, json.stderr);
    const doc = JSON.parse(json.stdout);
    equal(doc.command, "import");
    equal(doc.warnings.length, 1, json.stdout);
    match(doc.warnings[0], /^cannot reach the Hub/);

    // inspect reads headers over HTTP (and import --no-cache streams): with
    // the Hub unreachable and the model cached, they read the cache, and say so.
    for (const args of [["inspect", REF], ["import", REF, "--no-cache", "-o", `${dir}/n.apr`]]) {
      const started = performance.now();
      const streamed = await runApr([...args, "--json"], { env });
      const seconds = (performance.now() - started) / 1000;
      equal(streamed.code, 0, streamed.stderr);
      ok(seconds < 10, `${args[0]} took ${seconds.toFixed(1)} s`);
      const warned = JSON.parse(streamed.stdout).warnings;
      equal(warned.length, 1, streamed.stdout);
      match(
        warned[0],
        /^cannot reach the Hub at .*; using the cached snapshot 0123456789ab of hf:\/\/test-org\/tiny-model@main$/,
      );
    }

    // HF_HUB_OFFLINE=1 stays silent: offline was asked for.
    const offline = await runApr(["pull", REF, "--json"], { env: { ...env, HF_HUB_OFFLINE: "1" } });
    equal(offline.code, 0, offline.stderr);
    equal(JSON.parse(offline.stdout).warnings.length, 0);
  });
});

Deno.test("Ctrl-C during a download says the partial download is kept; the next run continues it", async () => {
  const files = buildTinyShardedModel({ bigShardBytes: 2 * 1024 * 1024 });
  const size = files.find((f) => f.path === BIG)!.data!.length;
  const bigSha = sha256Hex(files.find((f) => f.path === BIG)!.data!);
  const server = await startHubServer({
    files,
    faults: [{ kind: "slow", path: BIG, delayMs: 100 }],
  });
  try {
    await withTempDir(async (dir) => {
      const home = `${dir}/home`;
      const env = hubEnv(server.endpoint, home);
      for (const args of [["pull", REF, "--json"], ["import", REF, "-o", `${dir}/m.apr`]]) {
        await Deno.remove(home, { recursive: true }).catch(() => {});
        server.faults.splice(0, server.faults.length, { kind: "slow", path: BIG, delayMs: 100 });
        const child = spawnApr(args, env);
        const bigPartial = async () =>
          (await partials(home)).find((p) => p.path.endsWith(`/${bigSha}.incomplete`));
        await until(async () => ((await bigPartial())?.size ?? 0) > 0, "a partial blob");
        child.kill("SIGINT");
        const run = await finish(child);
        equal(run.code, 130, run.stderr);
        match(
          run.stderr,
          /apr: interrupted; the partial download is kept in the Hugging Face cache and continues when you run the same command again/,
        );
        ok(!/nothing was kept/.test(run.stderr), run.stderr);
        if (args.includes("--json")) {
          // With --json, the interruption is the document's error.
          const { error } = JSON.parse(run.stdout);
          equal(error.code, "Interrupted");
          equal(error.exitCode, 130);
          match(error.message, /partial download is kept/);
        }
        const partial = await bigPartial();
        ok(
          partial !== undefined && partial.size > 0 && partial.size < size,
          "the partial blob is kept",
        );
        server.faults.length = 0;
        // The slow server may still count a chunk it was delaying for the dead connection.
        await new Promise((resolve) => setTimeout(resolve, 300));
        server.reset();
        const again = await runApr(args, { env });
        equal(again.code, 0, again.stderr);
        // Only what the partial did not hold was asked for again. (The byte
        // count may include a chunk the slow server was still delaying for
        // the dead connection when the counters were reset.)
        const ranges = server.dataRequests().filter((r) => r.file === BIG).map((r) => r.range);
        equal(ranges.join(), `bytes=${partial!.size}-${size - 1}`);
        ok(server.counters.bytesByFile.get(BIG)! <= size - partial!.size + 64 * 1024);
      }
    });
  } finally {
    await server.close();
  }
});

Deno.test("a repository with several GGUFs: the error names real hf:// references and --include, code UsageError", async () => {
  const gguf = (n: number): Uint8Array => new Uint8Array([0x47, 0x47, 0x55, 0x46, 3, 0, 0, 0, n]);
  const server = await startHubServer({
    files: [
      { path: "tiny-Q4_K_M.gguf", data: gguf(1) },
      { path: "tiny-Q8_0.gguf", data: gguf(2) },
      { path: "config.json", data: new TextEncoder().encode("{}") },
    ],
  });
  try {
    await withTempDir(async (dir) => {
      const env = hubEnv(server.endpoint, `${dir}/home`);
      const run = await runApr(["pull", REF, "--json"], { env });
      equal(run.code, 2, run.stderr);
      const { error } = JSON.parse(run.stdout);
      equal(error.code, "UsageError");
      ok(error.message.includes("hf://test-org/tiny-model/tiny-Q4_K_M.gguf"), error.message);
      ok(error.message.includes("hf://test-org/tiny-model/tiny-Q8_0.gguf"), error.message);
      ok(error.message.includes("--include"), error.message);
      ok(!error.message.includes("hf://org/name"), error.message);
      // Streamed (--no-cache), the message names a real reference too.
      const streamed = await runApr(["import", REF, "--no-cache", "--json"], { env });
      equal(streamed.code, 2, streamed.stderr);
      const streamedError = JSON.parse(streamed.stdout).error;
      equal(streamedError.code, "UsageError");
      match(
        streamedError.message,
        /2 model files \(tiny-Q4_K_M\.gguf, tiny-Q8_0\.gguf\); name one, e\.g\. "hf:\/\/test-org\/tiny-model@[0-9a-f]{40}\/tiny-Q4_K_M\.gguf"/,
      );
    });
  } finally {
    await server.close();
  }
});

Deno.test("a missing Deno permission is reported as a permission, not a missing folder or a bug", async () => {
  await withTempDir(async (dir) => {
    const out = await new Deno.Command(Deno.execPath(), {
      args: ["run", "--allow-env", CLI_PATH, "import", `${dir}/model`, "-o", `${dir}/m.apr`],
      env: { NO_COLOR: "1" },
      stdin: "null",
      stdout: "piped",
      stderr: "piped",
    }).output();
    const stderr = new TextDecoder().decode(out.stderr);
    equal(out.code, 2, stderr);
    equal(lines(stderr).length, 1, stderr);
    match(
      stderr,
      /^apr: permission missing \(a Deno permission, not a missing file\): Requires read access/,
    );
    ok(!/does not exist|looks like a bug/.test(stderr), stderr);
  });
});

Deno.test("apr inspect on a text file says it is not a model file", async () => {
  await withTempDir(async (dir) => {
    await Deno.writeTextFile(`${dir}/README.md`, "# aprkit\n\nA library.\n");
    const run = await runApr(["inspect", `${dir}/README.md`]);
    equal(run.code, 2, run.stderr);
    match(run.stderr, /README\.md": not a model file/);
    // A real SafeTensors file without its extension is still recognised.
    await Deno.writeFile(`${dir}/weights`, encodeSafetensors({ w: new Float32Array(4) }));
    const real = await runApr(["inspect", `${dir}/weights`, "--json"]);
    equal(real.code, 0, real.stderr);
    equal(JSON.parse(real.stdout).format, "safetensors");
  });
});

Deno.test("--resume after an interrupted --no-cache import fetches only what the journal does not hold", async () => {
  const tensors: Record<string, Float32Array> = {};
  for (let i = 0; i < 8; i++) tensors[`model.layers.${i}.mlp.weight`] = noise(64 * 1024, i + 1);
  const shard = encodeSafetensors(tensors);
  const files = [
    {
      path: "config.json",
      data: new TextEncoder().encode('{"architectures":["LlamaForCausalLM"]}'),
    },
    { path: "model.safetensors", data: shard },
  ];
  const stallAt = Math.floor(shard.length * 0.6);
  const server = await startHubServer({
    files,
    faults: [{ kind: "stall", path: "model.safetensors", afterBytes: stallAt }],
  });
  try {
    await withTempDir(async (dir) => {
      const env = hubEnv(server.endpoint, `${dir}/home`);
      const out = `${dir}/m.apr`;
      const child = spawnApr(["import", REF, "--no-cache", "-o", out], env);
      await until(
        () =>
          Promise.resolve((server.counters.bytesByFile.get("model.safetensors") ?? 0) >= stallAt),
        "the stall",
      );
      await new Promise((resolve) => setTimeout(resolve, 1000)); // let the sink write what came
      const stopping = performance.now();
      child.kill("SIGINT");
      const stopped = await finish(child);
      // The stalled read is cancelled, not waited out (idle timeouts and retries: minutes).
      const stopSeconds = (performance.now() - stopping) / 1000;
      ok(stopSeconds < 20, `Ctrl-C took ${stopSeconds.toFixed(1)} s`);
      equal(stopped.code, 130, stopped.stderr);
      match(stopped.stderr, /--resume to continue/);
      ok(await exists(`${out}.partial.digests.json`), "the sha256 check's progress was not saved");

      server.faults.length = 0;
      await new Promise((resolve) => setTimeout(resolve, 300));
      server.reset();
      const resumed = await runApr(["import", REF, "--no-cache", "-o", out, "--resume"], { env });
      equal(resumed.code, 0, resumed.stderr);
      match(resumed.stderr, /resuming: [1-9]\d* of 8 tensors already written/);
      const served = server.counters.bytesByFile.get("model.safetensors") ?? 0;
      // Everything before the stall was written and hashed: at most the rest
      // (plus the header and the tensor the stall cut) comes again.
      ok(
        served < shard.length - stallAt + 300 * 1024,
        `the resume fetched ${served} of ${shard.length} bytes (the first run got ${stallAt})`,
      );
      ok(!(await exists(`${out}.partial.digests.json`)), "the checkpoint outlived the import");

      // The same bytes as an import in one go.
      const fresh = await runApr(["import", REF, "--no-cache", "-o", `${dir}/fresh.apr`], { env });
      equal(fresh.code, 0, fresh.stderr);
      equal(await sha256(out), await sha256(`${dir}/fresh.apr`));
    });
  } finally {
    await server.close();
  }
});
