import assert from "node:assert/strict";
import { join } from "node:path";
import { HubRequestError } from "../../src/errors.ts";
import { DiskFullError } from "../../src/sources/hub_download.ts";
import { pullModel, type PullOptions, type PullProgressEvent } from "../../src/sources/hub_pull.ts";
import type { HubSettings } from "../../src/sources/hub_settings.ts";
import {
  buildTinyShardedModel,
  type HubFault,
  type HubServer,
  type HubServerFile,
  sha256Hex,
  startHubServer,
} from "../_hub_server.ts";

const REF = "hf://test-org/tiny-model";
const BIG = "model-00002-of-00002.safetensors";
const EXPECTED = [
  "README.md",
  "config.json",
  "generation_config.json",
  "model-00001-of-00002.safetensors",
  "model-00002-of-00002.safetensors",
  "model.safetensors.index.json",
  "tokenizer_config.json",
];

async function withHub(
  options: { files?: HubServerFile[]; faults?: HubFault[]; token?: string; bigShardBytes?: number },
  body: (server: HubServer, settings: HubSettings, cacheDir: string) => Promise<void>,
): Promise<void> {
  const files = options.files ??
    buildTinyShardedModel({ bigShardBytes: options.bigShardBytes ?? 3 * 1024 * 1024 });
  const server = await startHubServer({
    files,
    faults: options.faults ?? [],
    ...(options.token === undefined ? {} : { token: options.token }),
  });
  const cacheDir = await Deno.makeTempDir({ prefix: "aprkit-hub-" });
  try {
    await body(server, {
      endpoint: server.endpoint,
      token: options.token,
      home: cacheDir,
      cacheDir,
      offline: false,
    }, cacheDir);
  } finally {
    await server.close();
    await Deno.remove(cacheDir, { recursive: true });
  }
}

/** Retries without real waiting. */
const FAST: PullOptions = { sleep: () => Promise.resolve(), retries: 3 };

function contentOf(files: HubServerFile[], path: string): Uint8Array {
  const file = files.find((f) => f.path === path);
  assert.ok(file?.data);
  return file.data;
}

Deno.test("pullModel() fills the standard cache layout with the model's files only", async () => {
  const files = buildTinyShardedModel({ bigShardBytes: 3 * 1024 * 1024 });
  await withHub({ files }, async (server, settings, cacheDir) => {
    const events: PullProgressEvent[] = [];
    const result = await pullModel(REF, {
      ...FAST,
      settings,
      jobs: 3,
      partSize: 1024 * 1024,
      onProgress: (e) => events.push(e),
    });
    const repoDir = join(cacheDir, "models--test-org--tiny-model");
    assert.equal(result.commit, server.commit);
    assert.equal(result.snapshotPath, join(repoDir, "snapshots", server.commit));
    assert.deepEqual(result.files.map((f) => f.path), EXPECTED);
    assert.equal(await Deno.readTextFile(join(repoDir, "refs", "main")), server.commit);
    for (const path of EXPECTED) {
      const link = join(result.snapshotPath, path);
      const target = await Deno.readLink(link);
      assert.match(target, /^\.\.\/\.\.\/blobs\/[0-9a-f]{40,64}$/, `${path} is a relative link`);
      assert.deepEqual(await Deno.readFile(link), contentOf(files, path));
    }
    // LFS blobs are named by their sha256.
    const big = contentOf(files, BIG);
    assert.equal(
      await Deno.readLink(join(result.snapshotPath, BIG)),
      `../../blobs/${sha256Hex(big)}`,
    );
    // No stray weights, no leftovers (the model card, README.md, is a companion).
    const fetched = new Set(server.dataRequests().map((r) => r.file));
    for (const stray of ["model-stray.safetensors", "pytorch_model.bin"]) {
      assert.ok(!fetched.has(stray), `${stray} was fetched`);
    }
    const blobs = [...Deno.readDirSync(join(repoDir, "blobs"))].map((e) => e.name);
    assert.equal(blobs.length, EXPECTED.length);
    assert.ok(blobs.every((b) => !b.includes(".")), `leftover partial files: ${blobs}`);
    assert.equal(server.counters.cdnSawAuthorization, false);
    // The big shard came as several ranges.
    assert.ok(server.dataRequests().filter((r) => r.file === BIG).length >= 3);
    assert.equal(result.bytesDownloaded, server.counters.bytesServed);
    const last = events.at(-1)!;
    assert.equal(last.bytesDone, last.bytesTotal);
    assert.ok(events.some((e) => e.active.some((a) => a.path === BIG)));
  });
});

Deno.test("pullModel() makes no data request when the cache is complete", async () => {
  await withHub({}, async (server, settings) => {
    const first = await pullModel(REF, { ...FAST, settings });
    server.reset();
    const second = await pullModel(REF, { ...FAST, settings });
    assert.deepEqual(server.dataRequests(), []);
    assert.ok(
      server.counters.requests.every((r) => r.method === "GET" && r.url.startsWith("/api/")),
    );
    assert.equal(second.bytesDownloaded, 0);
    assert.equal(second.bytesReused, first.bytesDownloaded);
    assert.ok(second.files.every((f) => f.reused));
  });
});

Deno.test("pullModel() sends the token to the Hub only, and reports D6 auth failures clearly", async (t) => {
  await withHub({ token: "hf_secret" }, async (server, settings) => {
    await t.step("with the token", async () => {
      const result = await pullModel(REF, { ...FAST, settings });
      assert.equal(result.files.length, EXPECTED.length);
      assert.equal(server.counters.cdnSawAuthorization, false);
    });
    await t.step("without a token: 401, set HF_TOKEN", async () => {
      const error = await pullModel(REF, { ...FAST, settings: { ...settings, token: undefined } })
        .catch((e) => e);
      assert.ok(error instanceof HubRequestError);
      assert.equal(error.status, 401);
      assert.match(error.message, /authentication required.*set HF_TOKEN/);
    });
    await t.step("with a bad token: refused, never printed", async () => {
      const error = await pullModel(REF, { ...FAST, settings: { ...settings, token: "hf_wrong" } })
        .catch((e) => e);
      assert.ok(error instanceof HubRequestError);
      assert.match(error.message, /token was refused/);
      assert.ok(!error.message.includes("hf_wrong"));
    });
  });
});

Deno.test("pullModel() reports D6 not-found failures naming the missing thing", async (t) => {
  await withHub({}, async (_server, settings) => {
    const cases: [string, RegExp][] = [
      ["hf://test-org/no-such-model", /repository "test-org\/no-such-model" not found/],
      ["hf://test-org/tiny-model@v9", /revision "v9" not found/],
      ["hf://test-org/tiny-model/nope.gguf", /"nope\.gguf" is neither a file nor a folder/],
    ];
    for (const [ref, message] of cases) {
      await t.step(ref, async () => {
        const error = await pullModel(ref, { ...FAST, settings }).catch((e) => e);
        assert.ok(error instanceof HubRequestError || error instanceof TypeError);
        assert.match(error.message, message);
      });
    }
  });
  // A shard named by the index but absent from the repository (FORMATS.md I8).
  const files = buildTinyShardedModel().filter((f) => f.path !== BIG);
  await withHub({ files }, async (_server, settings) => {
    const error = await pullModel(REF, { ...FAST, settings }).catch((e) => e);
    assert.ok(error instanceof HubRequestError);
    assert.equal(error.status, 404);
    assert.match(error.message, /file "model-00002-of-00002\.safetensors" not found/);
  });
});

Deno.test("pullModel() handles D1: a dropped body continues from the byte reached", async () => {
  const files = buildTinyShardedModel({ bigShardBytes: 3 * 1024 * 1024 });
  const size = contentOf(files, BIG).length;
  const faults: HubFault[] = [{ kind: "drop", path: BIG, afterBytes: 1_000_000, times: 2 }];
  await withHub({ files, faults }, async (server, settings) => {
    const result = await pullModel(REF, { ...FAST, settings, jobs: 1 });
    assert.deepEqual(
      await Deno.readFile(join(result.snapshotPath, BIG)),
      contentOf(files, BIG),
    );
    const ranges = server.dataRequests().filter((r) => r.file === BIG).map((r) => r.range);
    assert.deepEqual(ranges, [
      `bytes=0-${size - 1}`,
      `bytes=1000000-${size - 1}`,
      `bytes=2000000-${size - 1}`,
    ]);
    assert.equal(server.counters.bytesByFile.get(BIG), size);
  });
});

Deno.test("pullModel() handles D2: 429/5xx are retried with bounded backoff honouring Retry-After", async (t) => {
  await t.step("transient failures then success", async () => {
    const faults: HubFault[] = [
      { kind: "status", on: "revision", status: 503, times: 1 },
      { kind: "status", on: "head", status: 429, retryAfter: "7", path: BIG },
      { kind: "status", on: "cdn", status: 502, path: BIG, times: 2 },
    ];
    await withHub({ faults }, async (_server, settings) => {
      const waits: number[] = [];
      const result = await pullModel(REF, {
        settings,
        retries: 3,
        retryDelayMs: 10,
        sleep: (ms) => {
          waits.push(ms);
          return Promise.resolve();
        },
      });
      assert.equal(result.files.length, EXPECTED.length);
      assert.ok(waits.includes(7000), `Retry-After honoured: ${waits}`);
      assert.ok(waits.includes(20), `backoff doubles: ${waits}`);
    });
  });
  await t.step("persistent failure: a clear error after the retries", async () => {
    const faults: HubFault[] = [{ kind: "status", on: "cdn", status: 503, path: BIG, times: 99 }];
    await withHub({ faults }, async (server, settings) => {
      const error = await pullModel(REF, { ...FAST, settings, jobs: 1 }).catch((e) => e);
      assert.ok(error instanceof HubRequestError);
      assert.equal(error.status, 503);
      assert.match(error.message, /server error \(HTTP 503\) on 4 attempts; try again later/);
      assert.equal(server.dataRequests().filter((r) => r.file === BIG).length, 4);
    });
  });
});

Deno.test("pullModel() handles D3: a Range answered with 200 gives an uncorrupted file", async () => {
  const files = buildTinyShardedModel({ bigShardBytes: 3 * 1024 * 1024 });
  const faults: HubFault[] = [
    { kind: "drop", path: BIG, afterBytes: 1_500_000 },
    { kind: "ignore-range", path: BIG, times: 5 },
  ];
  await withHub({ files, faults }, async (_server, settings) => {
    const result = await pullModel(REF, { ...FAST, settings, jobs: 2, partSize: 1024 * 1024 });
    assert.deepEqual(await Deno.readFile(join(result.snapshotPath, BIG)), contentOf(files, BIG));
  });
});

Deno.test("pullModel() handles D4: a body shorter or longer than announced is never accepted", async (t) => {
  for (const delta of [-10, 10]) {
    await t.step(`${delta > 0 ? "longer" : "shorter"} by ${Math.abs(delta)} bytes`, async () => {
      const faults: HubFault[] = [{ kind: "length", path: BIG, delta }];
      await withHub({ faults }, async (_server, settings, cacheDir) => {
        const error = await pullModel(REF, { ...FAST, settings }).catch((e) => e);
        assert.ok(error instanceof HubRequestError);
        assert.match(error.message, /announced as \d+ bytes but the server now serves \d+ bytes/);
        const blobs = [
          ...Deno.readDirSync(join(cacheDir, "models--test-org--tiny-model", "blobs")),
        ];
        assert.ok(!blobs.some((b) => b.name === sha256Hex(new Uint8Array(0))));
        const snapshot = join(cacheDir, "models--test-org--tiny-model", "snapshots");
        assert.ok(
          ![...Deno.readDirSync(join(snapshot, _server.commit))].some((e) => e.name === BIG),
          "the shard must not be linked",
        );
      });
    });
  }
});

Deno.test("pullModel() handles D5: a sha256 mismatch deletes the download and caches nothing", async (t) => {
  for (const jobs of [1, 3]) {
    await t.step(`jobs ${jobs}`, async () => {
      const faults: HubFault[] = [{ kind: "corrupt", path: BIG }];
      await withHub({ faults }, async (server, settings, cacheDir) => {
        const error = await pullModel(REF, { ...FAST, settings, jobs, partSize: 1024 * 1024 })
          .catch((e) => e);
        assert.ok(error instanceof HubRequestError);
        assert.match(
          error.message,
          /sha256 is [0-9a-f]{64} but the Hub announced [0-9a-f]{64}.*deleted and not cached/,
        );
        const blobsDir = join(cacheDir, "models--test-org--tiny-model", "blobs");
        const names = [...Deno.readDirSync(blobsDir)].map((e) => e.name);
        assert.ok(names.every((n) => !n.startsWith(sha256Hex(new Uint8Array(0)))));
        const bigEtag = server.counters.requests.find((r) => r.server === "cdn" && r.file === BIG)!
          .url.split("/").at(-1)!;
        assert.ok(names.every((n) => !n.startsWith(bigEtag)), `left behind: ${names}`);
      });
    });
  }
});

Deno.test("pullModel() resolves an expired signed CDN URL again with HEAD", async () => {
  const files = buildTinyShardedModel({ bigShardBytes: 3 * 1024 * 1024 });
  const faults: HubFault[] = [
    { kind: "drop", path: BIG, afterBytes: 1_000_000 },
    { kind: "expire", path: BIG, afterBytes: 1 },
  ];
  await withHub({ files, faults }, async (server, settings) => {
    const result = await pullModel(REF, { ...FAST, settings, jobs: 1 });
    assert.deepEqual(await Deno.readFile(join(result.snapshotPath, BIG)), contentOf(files, BIG));
    const heads = server.counters.requests.filter((r) => r.method === "HEAD" && r.file === BIG);
    assert.equal(heads.length, 2);
    assert.equal(server.counters.bytesByFile.get(BIG), contentOf(files, BIG).length);
  });
});

Deno.test("pullModel() resumes parallel ranges from the sidecar after a failure", async () => {
  const files = buildTinyShardedModel({ bigShardBytes: 4 * 1024 * 1024 });
  const size = contentOf(files, BIG).length;
  const faults: HubFault[] = [
    { kind: "drop", path: BIG, afterBytes: 700_000, times: 99, fromOffset: 2 * 1024 * 1024 },
  ];
  await withHub({ files, faults }, async (server, settings, cacheDir) => {
    const error = await pullModel(REF, {
      settings,
      sleep: () => Promise.resolve(),
      retries: 0,
      jobs: 2,
      partSize: 1024 * 1024,
    }).catch((e) => e);
    assert.ok(error instanceof HubRequestError, Deno.inspect(error));
    const blobsDir = join(cacheDir, "models--test-org--tiny-model", "blobs");
    const names = [...Deno.readDirSync(blobsDir)].map((e) => e.name);
    assert.ok(names.some((n) => n.endsWith(".incomplete.parts.json")), `${names}`);
    const firstRun = server.counters.bytesByFile.get(BIG) ?? 0;
    assert.ok(firstRun > 0);
    faults.length = 0;
    server.reset();
    const result = await pullModel(REF, { ...FAST, settings, jobs: 2, partSize: 1024 * 1024 });
    assert.deepEqual(await Deno.readFile(join(result.snapshotPath, BIG)), contentOf(files, BIG));
    const secondRun = server.counters.bytesByFile.get(BIG) ?? 0;
    // The two ranges completed before the failure are not fetched again.
    assert.ok(secondRun <= size - 2 * 1024 * 1024, `${secondRun} of ${size}`);
    assert.ok(
      server.dataRequests().every((r) => r.file !== BIG || !r.range?.startsWith("bytes=0-")),
    );
    assert.ok([...Deno.readDirSync(blobsDir)].every((e) => !e.name.includes(".")));
  });
});

Deno.test("pullModel() handles D7: a killed process resumes from the partial blob", async () => {
  const files = buildTinyShardedModel({ bigShardBytes: 5 * 1024 * 1024 });
  const size = contentOf(files, BIG).length;
  const stallAt = 3 * 1024 * 1024 + 12345;
  const faults: HubFault[] = [{ kind: "stall", path: BIG, afterBytes: stallAt }];
  await withHub({ files, faults }, async (server, settings, cacheDir) => {
    const driver = new URL("./_pull_driver.ts", import.meta.url).pathname;
    const child = new Deno.Command(Deno.execPath(), {
      args: ["run", "-A", driver, REF],
      env: {
        HF_ENDPOINT: server.endpoint,
        HF_HUB_CACHE: cacheDir,
        HF_HOME: cacheDir,
        APR_PULL_JOBS: "1",
      },
      stdout: "null",
      stderr: "piped",
    }).spawn();
    const sha = sha256Hex(contentOf(files, BIG));
    const incomplete = join(cacheDir, "models--test-org--tiny-model", "blobs", `${sha}.incomplete`);
    // Wait until the server stalls and every whole MiB chunk it sent is on disk.
    const want = Math.floor(stallAt / (1024 * 1024)) * 1024 * 1024;
    for (let i = 0; i < 400; i++) {
      const length = await Deno.stat(incomplete).then((s) => s.size, () => 0);
      if ((server.counters.bytesByFile.get(BIG) ?? 0) >= stallAt && length >= want) break;
      await new Promise((r) => setTimeout(r, 25));
    }
    child.kill("SIGKILL");
    const status = await child.status;
    await child.stderr.cancel();
    assert.equal(status.signal, "SIGKILL");
    const prefix = (await Deno.stat(incomplete)).size;
    assert.equal(prefix, want);
    faults.length = 0;
    server.reset();
    const result = await pullModel(REF, { ...FAST, settings, jobs: 1 });
    assert.deepEqual(await Deno.readFile(join(result.snapshotPath, BIG)), contentOf(files, BIG));
    // The prefix was not fetched again.
    const ranges = server.dataRequests().filter((r) => r.file === BIG).map((r) => r.range);
    assert.deepEqual(ranges, [`bytes=${prefix}-${size - 1}`]);
    assert.equal(server.counters.bytesByFile.get(BIG), size - prefix);
    assert.equal(result.bytesReused >= prefix, true);
  });
});

Deno.test({
  name: "pullModel() handles D8: a full disk fails clearly and keeps the partial",
  // /dev/full, which fails every write with ENOSPC, is Linux's.
  ignore: Deno.build.os !== "linux",
}, async () => {
  await withHub({}, async (server, settings, cacheDir) => {
    // Point the partial download at /dev/full: every write fails with ENOSPC.
    const files = buildTinyShardedModel({ bigShardBytes: 3 * 1024 * 1024 });
    const sha = sha256Hex(contentOf(files, BIG));
    const blobs = join(cacheDir, "models--test-org--tiny-model", "blobs");
    await Deno.mkdir(blobs, { recursive: true });
    await Deno.symlink("/dev/full", join(blobs, `${sha}.incomplete`));
    const error = await pullModel(REF, { ...FAST, settings, jobs: 1 }).catch((e) => e);
    assert.ok(error instanceof DiskFullError, String(error));
    assert.match(error.message, /the disk is full.*partial download is kept/);
    assert.equal((await Deno.lstat(join(blobs, `${sha}.incomplete`))).isSymlink, true);
    void server;
  });
});

Deno.test("pullModel() works offline from a complete cache and fails clearly without one", async (t) => {
  await withHub({}, async (server, settings) => {
    const offline = { ...settings, offline: true };
    await t.step("empty cache", async () => {
      const error = await pullModel(REF, { settings: offline }).catch((e) => e);
      assert.ok(error instanceof HubRequestError);
      assert.match(
        error.message,
        /offline \(HF_HUB_OFFLINE is set\): revision "main" is not recorded/,
      );
    });
    await pullModel(REF, { ...FAST, settings });
    server.reset();
    await t.step("complete cache", async () => {
      const result = await pullModel(REF, { settings: offline });
      assert.deepEqual(result.files.map((f) => f.path), EXPECTED);
      assert.equal(result.commit, server.commit);
      assert.equal(server.counters.requests.length, 0);
    });
    await t.step("a shard missing from the cache", async () => {
      await Deno.remove(join(
        settings.cacheDir,
        "models--test-org--tiny-model",
        "snapshots",
        server.commit,
        BIG,
      ));
      const error = await pullModel(REF, { settings: offline }).catch((e) => e);
      assert.ok(error instanceof HubRequestError);
      assert.match(error.message, /"model-00002-of-00002\.safetensors" is missing/);
      assert.equal(server.counters.requests.length, 0);
    });
  });
});

Deno.test("pullModel() selects with include globs and sub-paths", async (t) => {
  await withHub({}, async (_server, settings) => {
    await t.step("include", async () => {
      const result = await pullModel(REF, { ...FAST, settings, include: ["*.json"] });
      assert.deepEqual(result.files.map((f) => f.path), [
        "config.json",
        "generation_config.json",
        "model.safetensors.index.json",
        "tokenizer_config.json",
      ]);
    });
    await t.step("one file", async () => {
      const result = await pullModel(`${REF}/pytorch_model.bin`, { ...FAST, settings });
      assert.deepEqual(result.files.map((f) => f.path), [
        "config.json",
        "generation_config.json",
        "pytorch_model.bin",
        "tokenizer_config.json",
      ]);
      assert.equal(result.modelPath, join(result.snapshotPath, "pytorch_model.bin"));
    });
  });
});

Deno.test("pullModel() rejects bad arguments before any I/O", async (t) => {
  const cases: [string, PullOptions, RegExp][] = [
    ["ftp://x/y", {}, /must start with "hf:\/\/"/],
    [REF, { jobs: 0 }, /0 is not a positive integer/],
  ];
  for (const [ref, options, message] of cases) {
    await t.step(`${ref} ${JSON.stringify(options)}`, async () => {
      await assert.rejects(pullModel(ref, options), (e: Error) => {
        assert.ok(e instanceof TypeError || e instanceof RangeError);
        assert.match(e.message, message);
        return true;
      });
    });
  }
});

Deno.test("pullModel() downloads a blob shared by two paths once", async () => {
  const same = new TextEncoder().encode('{"same": true}');
  const weights = buildTinyShardedModel().find((f) =>
    f.path === "model-00001-of-00002.safetensors"
  )!;
  const files: HubServerFile[] = [
    { path: "config.json", data: same },
    { path: "generation_config.json", data: same },
    { path: "model.safetensors", data: weights.data!, lfs: true },
  ];
  await withHub({ files }, async (server, settings) => {
    const result = await pullModel(REF, { ...FAST, settings });
    assert.deepEqual(result.files.map((f) => f.path), [
      "config.json",
      "generation_config.json",
      "model.safetensors",
    ]);
    const gets = server.dataRequests().filter((r) => r.file?.endsWith("config.json"));
    assert.equal(gets.length, 1);
    assert.equal(
      await Deno.readLink(join(result.snapshotPath, "config.json")),
      await Deno.readLink(join(result.snapshotPath, "generation_config.json")),
    );
  });
});

Deno.test("pullModel() falls back to a complete cache when the Hub is unreachable", async (t) => {
  await withHub({}, async (server, settings) => {
    await pullModel(REF, { ...FAST, settings });
    await server.close();
    await t.step("cached model", async () => {
      const result = await pullModel(REF, { ...FAST, settings, retries: 0 });
      assert.equal(result.commit, server.commit);
      assert.equal(result.bytesDownloaded, 0);
    });
    await t.step("model not cached: the network error", async () => {
      const error = await pullModel("hf://test-org/other", { ...FAST, settings, retries: 0 })
        .catch((e) => e);
      assert.ok(error instanceof HubRequestError);
      assert.equal(error.status, 0);
      assert.match(error.message, /gave up after 1 attempts/);
    });
  });
});

Deno.test("pullModel() with the model cached: a busy Hub (503) is retried as usual, not taken for offline", async () => {
  await withHub({}, async (server, settings) => {
    await pullModel(REF, { ...FAST, settings });
    server.faults.push({ kind: "status", status: 503, on: "revision", times: 2 });
    const warnings: string[] = [];
    const result = await pullModel(REF, {
      ...FAST,
      settings,
      onWarning: (m) => warnings.push(m),
    });
    assert.equal(result.commit, server.commit);
    assert.deepEqual(warnings, []);
    const revisions = server.counters.requests.filter((r) => r.url.includes("/revision/"));
    assert.ok(revisions.length >= 3, `${revisions.length} revision requests`);
  });
});
