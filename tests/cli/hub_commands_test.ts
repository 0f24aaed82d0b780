/**
 * `apr pull`, `apr import hf://…` and `apr inspect hf://…` as subprocesses
 * against the local Hub (tests/_hub_server.ts), with HF_ENDPOINT and HF_HOME
 * pointing at it and at a temporary cache.
 *
 * @module
 */

import { deepEqual, equal, match, ok } from "node:assert/strict";
import { buildTinyShardedModel, startHubServer } from "../_hub_server.ts";
import { assertOneLineError, exists, lines, runApr, sha256, withTempDir } from "./_run_apr.ts";

const REF = "hf://test-org/tiny-model";
const BIG_SHARD_BYTES = 2 * 1024 * 1024;

function hubEnv(endpoint: string, home: string, offline = false): Record<string, string> {
  return { HF_ENDPOINT: endpoint, HF_HOME: home, HF_HUB_OFFLINE: offline ? "1" : "0" };
}

/** Every regular file under a folder (recursively), relative paths. */
async function filesUnder(dir: string): Promise<string[]> {
  if (!(await exists(dir))) return [];
  const out: string[] = [];
  for await (const e of Deno.readDir(dir)) {
    const path = `${dir}/${e.name}`;
    if (e.isDirectory) out.push(...(await filesUnder(path)).map((p) => `${e.name}/${p}`));
    else out.push(e.name);
  }
  return out;
}

Deno.test("apr pull / import / inspect / offline against a local Hub", async (t) => {
  const server = await startHubServer({
    files: buildTinyShardedModel({ bigShardBytes: BIG_SHARD_BYTES }),
  });
  try {
    await withTempDir(async (dir) => {
      const home = `${dir}/hf-home`;
      const env = hubEnv(server.endpoint, home);

      await t.step("apr pull prints the snapshot path; a second pull fetches no data", async () => {
        const first = await runApr(["pull", REF], { env });
        equal(first.code, 0, first.stderr);
        const path = first.stdout.trim();
        equal(lines(first.stdout).length, 1, first.stdout);
        ok(path.startsWith(`${home}/hub/models--test-org--tiny-model/snapshots/`), path);
        const snapshot = (await filesUnder(path)).sort();
        deepEqual(snapshot, [
          // The model card: its licence reaches the APR file (below).
          "README.md",
          "config.json",
          "generation_config.json",
          "model-00001-of-00002.safetensors",
          "model-00002-of-00002.safetensors",
          "model.safetensors.index.json",
          "tokenizer_config.json",
        ]);
        server.reset();
        const second = await runApr(["pull", REF, "--json"], { env });
        equal(second.code, 0, second.stderr);
        deepEqual(server.dataRequests(), [], "a complete cache needs no data requests");
        const result = JSON.parse(second.stdout);
        equal(result.modelPath, path);
        equal(result.bytesDownloaded, 0);
      });

      let cachedSha = "";
      await t.step("apr import hf:// writes a valid APR from the cache", async () => {
        const out = `${dir}/cached.apr`;
        const run = await runApr(["import", REF, "-o", out, "--json"], { env });
        equal(run.code, 0, run.stderr);
        equal(JSON.parse(run.stdout).tensors, 3);
        const validate = await runApr(["validate", out, "--deep"], { env });
        equal(validate.code, 0, validate.stdout + validate.stderr);
        const inspect = JSON.parse((await runApr(["inspect", out, "--json"])).stdout);
        equal(inspect.metadata.source, REF);
        equal(inspect.metadata.license, "apache-2.0");
        cachedSha = await sha256(out);
      });

      await t.step(
        "apr import hf:// --no-cache gives the same bytes and caches nothing",
        async () => {
          const freshHome = `${dir}/fresh-home`;
          const out = `${dir}/streamed.apr`;
          const run = await runApr(["import", REF, "-o", out, "--no-cache", "--quiet"], {
            env: hubEnv(server.endpoint, freshHome),
          });
          equal(run.code, 0, run.stderr);
          equal(await sha256(out), cachedSha);
          const blobs = (await filesUnder(freshHome)).filter((p) => p.includes("/blobs/"));
          deepEqual(blobs, [], "no shard may be written with --no-cache");
          ok(!(await filesUnder(freshHome)).some((p) => p.endsWith(".safetensors")));
        },
      );

      await t.step(
        "apr import hf:// --no-cache checks each shard's sha256: a mismatch is exit 2, no output",
        async () => {
          const shard = "model-00002-of-00002.safetensors";
          server.faults.push({ kind: "corrupt", path: shard });
          try {
            const out = `${dir}/corrupt.apr`;
            const run = await runApr(["import", REF, "-o", out, "--no-cache", "--quiet"], {
              env: hubEnv(server.endpoint, `${dir}/corrupt-home`),
            });
            assertOneLineError(
              run,
              new RegExp(`${shard}": its sha256 is [0-9a-f]{64} but the Hub announced`),
            );
            ok(!(await exists(out)), "no output");
            ok(!(await exists(`${out}.partial`)), "no partial output");
            ok(!(await exists(`${out}.partial.journal`)), "no journal");
          } finally {
            server.faults.length = 0;
          }
        },
      );

      await t.step("apr inspect hf:// reads only headers", async () => {
        server.reset();
        const run = await runApr(["inspect", REF, "--json"], {
          env: hubEnv(server.endpoint, `${dir}/inspect-home`),
        });
        equal(run.code, 0, run.stderr);
        const result = JSON.parse(run.stdout);
        equal(result.tensorCount, 3);
        equal(result.format, "safetensors");
        ok(
          server.counters.bytesServed < BIG_SHARD_BYTES / 8,
          `inspect read ${server.counters.bytesServed} bytes of a ${BIG_SHARD_BYTES}-byte shard`,
        );
        ok(!(await exists(`${dir}/inspect-home/hub`)), "inspect caches nothing");
      });

      await t.step("HF_HUB_OFFLINE=1 with a complete cache imports without a request", async () => {
        server.reset();
        const out = `${dir}/offline.apr`;
        const run = await runApr(["import", REF, "-o", out, "--quiet"], {
          env: hubEnv(server.endpoint, home, true),
        });
        equal(run.code, 0, run.stderr);
        equal(server.counters.requests.length, 0);
        equal(await sha256(out), cachedSha);
      });

      await t.step("HF_HUB_OFFLINE=1 inspects from the cache without a request", async () => {
        server.reset();
        const run = await runApr(["inspect", REF, "--json"], {
          env: hubEnv(server.endpoint, home, true),
        });
        equal(run.code, 0, run.stderr);
        equal(JSON.parse(run.stdout).tensorCount, 3);
        equal(server.counters.requests.length, 0);
      });

      await t.step("HF_HUB_OFFLINE=1 without a cache fails with one line", async () => {
        const out = `${dir}/offline-empty.apr`;
        const run = await runApr(["import", REF, "-o", out], {
          env: hubEnv(server.endpoint, `${dir}/empty-home`, true),
        });
        assertOneLineError(run, /offline|HF_HUB_OFFLINE/i, "test-org/tiny-model");
        ok(!(await exists(out)));
      });

      await t.step("a repository the Hub does not have exits 2 with one line", async () => {
        const out = `${dir}/missing.apr`;
        const runs = await Promise.all([
          runApr(["import", "hf://test-org/no-such-model", "-o", out], {
            env: hubEnv(server.endpoint, `${dir}/home-404`),
          }),
          runApr(["pull", "hf://test-org/no-such-model"], {
            env: hubEnv(server.endpoint, `${dir}/home-404`),
          }),
          runApr(["inspect", "hf://test-org/no-such-model"], {
            env: hubEnv(server.endpoint, `${dir}/home-404`),
          }),
        ]);
        for (const run of runs) {
          assertOneLineError(run, "test-org/no-such-model", /not found|404/i);
        }
        ok(!(await exists(out)));
        ok(!(await exists(`${out}.partial`)));
        match(runs[0]!.stderr, /^apr: /);
      });
    });
  } finally {
    await server.close();
  }
});
