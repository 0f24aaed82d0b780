/**
 * Offline, a Hub request fails in about a second with a hint: a connection
 * to an origin that has never answered is tried twice, not through the
 * whole backoff, and the message names HF_HUB_OFFLINE and HF_ENDPOINT. An
 * origin that has answered keeps every retry (a blip mid-run).
 *
 * @module
 */

import { equal, match, ok } from "node:assert/strict";
import { fetchWithRetry, UNREACHED_RETRIES } from "../../src/io/http_source.ts";
import { HubRequestError } from "../../src/errors.ts";
import { runApr } from "../cli/_run_apr.ts";

Deno.test("fetchWithRetry(): an origin never reached gives up after one retry, naming HF_HUB_OFFLINE and HF_ENDPOINT", async () => {
  let calls = 0;
  const refused = (() => (calls++, Promise.reject(new TypeError("fetch failed")))) as typeof fetch;
  const error = await fetchWithRetry("http://never-reached.test/api/models/a/b", {}, {
    fetch: refused,
    sleep: () => Promise.resolve(),
  }).catch((e) => e);
  ok(error instanceof HubRequestError);
  equal(calls, UNREACHED_RETRIES + 1);
  match(
    error.message,
    /^Cannot reach "http:\/\/never-reached\.test\/api\/models\/a\/b": fetch failed/,
  );
  match(error.message, /HF_HUB_OFFLINE=1/);
  match(error.message, /HF_ENDPOINT names another Hub \(now http:\/\/never-reached\.test\)/);
});

Deno.test("fetchWithRetry(): an origin that answered keeps every retry when its connection fails", async () => {
  let calls = 0;
  const flaky = (() => {
    calls++;
    return calls === 1
      ? Promise.resolve(new Response("ok"))
      : Promise.reject(new TypeError("connection reset"));
  }) as typeof fetch;
  const url = "http://answered-once.test/x";
  await (await fetchWithRetry(url, {}, { fetch: flaky })).text();
  const error = await fetchWithRetry(url, {}, {
    fetch: flaky,
    retries: 4,
    sleep: () => Promise.resolve(),
  }).catch((e) => e);
  ok(error instanceof HubRequestError);
  equal(calls, 1 + 5);
  match(error.message, /gave up after 5 attempts/);
});

Deno.test("apr inspect hf://… with the Hub unreachable fails within seconds, with the hint", async () => {
  const listener = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const port = (listener.addr as Deno.NetAddr).port;
  listener.close(); // Nothing listens there now: connections are refused.
  const started = performance.now();
  const run = await runApr(["inspect", "hf://org/name"], {
    env: { HF_ENDPOINT: `http://127.0.0.1:${port}`, HF_HUB_OFFLINE: "" },
  });
  const seconds = (performance.now() - started) / 1000;
  ok(run.code !== 0, run.stderr);
  match(run.stderr, /HF_HUB_OFFLINE=1/);
  match(run.stderr, /HF_ENDPOINT/);
  ok(seconds < 8, `took ${seconds.toFixed(1)} s (the whole backoff is ~15 s)`);
});
