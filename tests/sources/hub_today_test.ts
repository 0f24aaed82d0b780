/**
 * The Hub as it answers today (issue 20 item 6; docs/SECURITY.md "Untrusted
 * Hub"): HTTP 429 with an IETF-draft `RateLimit: "api";r=0;t=55` header is
 * waited out within a budget, saying how long; a gated repository's tree
 * lists redacted hashes (64 `*`), which are not taken for a sha256 — the
 * resolve answer's `X-Linked-Etag` is.
 */

import assert from "node:assert/strict";
import { HubRequestError } from "../../src/errors.ts";
import { isEnvironmentError, isUserError } from "../../src/cli/main.ts";
import { parseRateLimit } from "../../src/io/rate_limit.ts";
import { HubClient } from "../../src/sources/hub_client.ts";
import { pullModel } from "../../src/sources/hub_pull.ts";
import { buildTinyShardedModel, type HubFault, sha256Hex, startHubServer } from "../_hub_server.ts";

const REPO = "test-org/tiny-model";
const BIG = "model-00002-of-00002.safetensors";

Deno.test("parseRateLimit() reads the draft's header, the used-up quota that resets last", () => {
  assert.deepEqual(parseRateLimit('"api";r=0;t=55'), {
    policy: "api",
    remaining: 0,
    resetSeconds: 55,
  });
  assert.deepEqual(parseRateLimit('"api";r=3;t=10, "resolvers";r=0;t=120'), {
    policy: "resolvers",
    remaining: 0,
    resetSeconds: 120,
  });
  for (
    const bad of [
      null,
      "",
      '"api";r=5;t=55',
      '"api";t=-1;r=0',
      '"api";r=0',
      "x".repeat(2000),
      '"api";r=0;t=1e9',
    ]
  ) {
    assert.equal(parseRateLimit(bad), undefined, String(bad));
  }
});

async function withHub(
  options: { faults?: HubFault[]; gated?: boolean },
  body: (endpoint: string, cacheDir: string) => Promise<void>,
): Promise<void> {
  const server = await startHubServer({
    files: buildTinyShardedModel(),
    faults: options.faults ?? [],
    ...(options.gated ? { gated: true } : {}),
  });
  const cacheDir = await Deno.makeTempDir({ prefix: "aprkit-hub-" });
  try {
    await body(server.endpoint, cacheDir);
  } finally {
    await server.close();
    await Deno.remove(cacheDir, { recursive: true });
  }
}

Deno.test("HTTP 429 with RateLimit t=55 waits 55 s once, says so, and does not spend a retry", async () => {
  const faults: HubFault[] = [
    { kind: "status", on: "revision", status: 429, rateLimit: '"api";r=0;t=55', times: 1 },
  ];
  await withHub({ faults }, async (endpoint, cacheDir) => {
    const waits: number[] = [];
    const said: string[] = [];
    const result = await pullModel(`hf://${REPO}`, {
      settings: { endpoint, token: undefined, home: cacheDir, cacheDir, offline: false },
      retries: 0, // the rate-limit wait is not a retry
      sleep: (ms) => (waits.push(ms), Promise.resolve()),
      onWait: (message) => said.push(message),
    });
    assert.ok(result.files.length > 0);
    assert.deepEqual(waits, [55_000], "the reset time, not the 30 s backoff cap");
    assert.equal(said.length, 1);
    assert.match(said[0]!, /rate-limits requests \(quota "api" used up, HTTP 429\): waiting 55 s/);
  });
});

Deno.test("a reset past the wait budget fails at once, saying when, with exit code 3", async () => {
  const faults: HubFault[] = [
    { kind: "status", on: "revision", status: 429, rateLimit: '"api";r=0;t=250', times: 99 },
  ];
  await withHub({ faults }, async (endpoint, cacheDir) => {
    const waits: number[] = [];
    const error = await pullModel(`hf://${REPO}`, {
      settings: { endpoint, token: undefined, home: cacheDir, cacheDir, offline: false },
      sleep: (ms) => (waits.push(ms), Promise.resolve()),
    }).catch((e) => e);
    assert.ok(error instanceof HubRequestError, String(error));
    assert.equal(error.status, 429);
    // 250 s fits the 300 s budget once; the second reset would not.
    assert.deepEqual(waits, [250_000]);
    assert.match(
      error.message,
      /quota "api" resets in 250 s\), more than the 50 s left of this request's 300 s wait budget/,
    );
    assert.ok(!isUserError(error) && isEnvironmentError(error), "a busy server is exit 3, not 2");
  });
});

Deno.test("a gated repository's redacted tree hashes are not sha256; X-Linked-Etag is", async () => {
  await withHub({ gated: true }, async (endpoint, cacheDir) => {
    const client = new HubClient({ endpoint });
    const tree = await client.listTree(REPO, "main");
    const big = tree.find((e) => e.path === BIG)!;
    assert.equal(big.sha256, undefined, "64 '*' is no hash");
    const info = await client.fileInfo(REPO, "main", BIG);
    const data = buildTinyShardedModel().find((f) => f.path === BIG)!.data!;
    assert.equal(info.sha256, sha256Hex(data));
    // And a pull still verifies every LFS file against it.
    const result = await pullModel(`hf://${REPO}`, {
      settings: { endpoint, token: undefined, home: cacheDir, cacheDir, offline: false },
    });
    assert.ok(result.files.some((f) => f.path === BIG));
  });
});
