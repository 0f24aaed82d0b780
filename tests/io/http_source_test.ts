import assert from "node:assert/strict";
import { HubRequestError } from "../../src/errors.ts";
import { fetchWithRetry, openHttpSource, redactUrl } from "../../src/io/http_source.ts";
import { HubClient } from "../../src/sources/hub_client.ts";
import { type HubFault, type HubServer, startHubServer } from "../_hub_server.ts";

const PATH = "big.bin";
const DATA = new Uint8Array(300_000).map((_, i) => (i * 31 + 7) & 0xff);

async function withCdn(
  faults: HubFault[],
  body: (url: string, server: HubServer) => Promise<void>,
): Promise<void> {
  const server = await startHubServer({ files: [{ path: PATH, data: DATA }], faults });
  try {
    const info = await new HubClient({ endpoint: server.endpoint }).fileInfo(
      server.repoId,
      "main",
      PATH,
    );
    await body(info.location.url, server);
  } finally {
    await server.close();
  }
}

const FAST = { sleep: () => Promise.resolve(), retries: 2 };

Deno.test("openHttpSource() reads exact ranges and streams bounded chunks", async () => {
  await withCdn([], async (url, server) => {
    const source = await openHttpSource(url, FAST);
    assert.equal(source.size, DATA.length);
    assert.deepEqual(await source.read(1000, 5000), DATA.slice(1000, 6000));
    assert.deepEqual(await source.read(0, 0), new Uint8Array(0));
    const chunks: Uint8Array[] = [];
    for await (const chunk of source.stream(10, 250_010, 64_000)) chunks.push(chunk);
    assert.deepEqual(chunks.map((c) => c.length), [64_000, 64_000, 64_000, 58_000]);
    assert.deepEqual(
      new Uint8Array(chunks.flatMap((c) => [...c])),
      DATA.slice(10, 250_010),
    );
    // One request per stream, not per chunk.
    assert.equal(server.dataRequests().filter((r) => r.range === "bytes=10-250009").length, 1);
    await source.close();
  });
});

Deno.test("openHttpSource() rejects ranges outside the file before any request", async () => {
  await withCdn([], async (url, server) => {
    const source = await openHttpSource(url, FAST);
    const before = server.counters.requests.length;
    await assert.rejects(source.read(DATA.length - 1, 2), (e: Error) => {
      assert.ok(e instanceof RangeError);
      assert.match(e.message, /bytes \[299999, 300001\) are outside its 300000 bytes/);
      return true;
    });
    assert.throws(() => source.stream(0, 10, 0), /chunk size 0 is not positive/);
    assert.equal(server.counters.requests.length, before);
  });
});

Deno.test("HttpSource survives D1, D3 and refuses D4", async (t) => {
  await t.step("D1: a drop resumes from the byte reached", async () => {
    await withCdn([{ kind: "drop", path: PATH, afterBytes: 100_000 }], async (url, server) => {
      const source = await openHttpSource(url, FAST);
      assert.deepEqual(await source.read(5, 200_000), DATA.slice(5, 200_005));
      const ranges = server.dataRequests().map((r) => r.range);
      assert.deepEqual(ranges.slice(-2), ["bytes=5-200004", "bytes=100005-200004"]);
    });
  });
  await t.step("D3: a 200 answer to a Range yields the right bytes", async () => {
    await withCdn([{ kind: "ignore-range", path: PATH, times: 1 }], async (url) => {
      const source = await openHttpSource(url, { ...FAST, size: DATA.length });
      assert.deepEqual(await source.read(123_456, 1000), DATA.slice(123_456, 124_456));
    });
  });
  await t.step("D4: a size change is an error", async () => {
    await withCdn([{ kind: "length", path: PATH, delta: 5 }], async (url) => {
      const source = await openHttpSource(url, { ...FAST, size: DATA.length });
      await assert.rejects(source.read(0, 10), (e: Error) => {
        assert.ok(e instanceof HubRequestError);
        assert.match(e.message, /announced as 300000 bytes but the server now serves 300005 bytes/);
        return true;
      });
    });
  });
  await t.step("D1 forever: gives up after the retries", async () => {
    const faults: HubFault[] = [{ kind: "drop", path: PATH, afterBytes: 0, times: 99 }];
    await withCdn(faults, async (url) => {
      const source = await openHttpSource(url, { ...FAST, size: DATA.length });
      await assert.rejects(source.read(0, 1000), (e: Error) => {
        assert.ok(e instanceof HubRequestError);
        assert.match(e.message, /connection dropped at byte 0 3 times without progress/);
        return true;
      });
    });
  });
});

Deno.test("HttpSource stream cancellation stops the download", async () => {
  const big = new Uint8Array(32 * 1024 * 1024);
  const server = await startHubServer({ files: [{ path: PATH, data: big }] });
  try {
    const info = await new HubClient({ endpoint: server.endpoint }).fileInfo(
      server.repoId,
      "main",
      PATH,
    );
    const source = await openHttpSource(info.location.url, { ...FAST, size: big.length });
    const reader = source.stream(0, big.length, 1000).getReader();
    const first = await reader.read();
    assert.equal(first.value?.length, 1000);
    await reader.cancel();
    await new Promise((r) => setTimeout(r, 50));
    assert.ok(server.counters.bytesServed < big.length / 2, `${server.counters.bytesServed}`);
  } finally {
    await server.close();
  }
});

Deno.test("HttpSource stream cancellation does not wait for a stalled server", async () => {
  // The server sends a little, then nothing: the pending read would only end
  // at the idle timeout, and every retry would stall again.
  const server = Deno.serve({ hostname: "127.0.0.1", port: 0, onListen() {} }, () => {
    const body = new ReadableStream<Uint8Array>({
      start(controller) {
        controller.enqueue(DATA.subarray(0, 1000));
      },
    });
    return new Response(body, {
      status: 206,
      headers: { "content-range": `bytes 0-${DATA.length - 1}/${DATA.length}` },
    });
  });
  try {
    const source = await openHttpSource(`http://127.0.0.1:${server.addr.port}/f`, {
      ...FAST,
      size: DATA.length,
      idleTimeoutMs: 60_000,
    });
    const reader = source.stream(0, DATA.length, 1000).getReader();
    assert.equal((await reader.read()).value?.length, 1000);
    const pending = reader.read().catch(() => undefined);
    await new Promise((r) => setTimeout(r, 100)); // the read is now stalled
    const started = performance.now();
    await reader.cancel();
    await pending;
    // Well under the 60 s idle timeout: the connection was dropped at once.
    assert.ok(performance.now() - started < 10_000, `${performance.now() - started} ms`);
  } finally {
    await server.shutdown();
  }
});

Deno.test("fetchWithRetry() honours Retry-After and gives up with a clear error", async (t) => {
  await t.step("retries then succeeds", async () => {
    const waits: number[] = [];
    let calls = 0;
    const fakeFetch = (() => {
      calls++;
      return Promise.resolve(
        calls < 3
          ? new Response("busy", { status: 429, headers: { "retry-after": "2" } })
          : new Response("ok"),
      );
    }) as typeof fetch;
    const response = await fetchWithRetry("http://h/x?sig=secret", {}, {
      fetch: fakeFetch,
      sleep: (ms) => (waits.push(ms), Promise.resolve()),
    });
    assert.equal(await response.text(), "ok");
    assert.deepEqual(waits, [2000, 2000]);
  });
  await t.step("bounded", async () => {
    const fakeFetch = (() => Promise.resolve(new Response("x", { status: 500 }))) as typeof fetch;
    const waits: number[] = [];
    const error = await fetchWithRetry("http://h/x?sig=secret", {}, {
      fetch: fakeFetch,
      retries: 3,
      retryDelayMs: 100,
      maxRetryDelayMs: 250,
      sleep: (ms) => (waits.push(ms), Promise.resolve()),
    }).catch((e) => e);
    assert.ok(error instanceof HubRequestError);
    assert.equal(error.status, 500);
    assert.match(error.message, /server error \(HTTP 500\) on 4 attempts/);
    assert.ok(!error.message.includes("secret"), "signed URL query never printed");
    assert.deepEqual(waits, [100, 200, 250]);
  });
  await t.step("network failure", async () => {
    const fakeFetch = (() => Promise.reject(new TypeError("connection refused"))) as typeof fetch;
    const error = await fetchWithRetry("http://h/x", {}, {
      fetch: fakeFetch,
      retries: 1,
      sleep: () => Promise.resolve(),
    }).catch((e) => e);
    assert.ok(error instanceof HubRequestError);
    assert.equal(error.status, 0);
    assert.match(error.message, /connection refused \(gave up after 2 attempts\)/);
  });
});

Deno.test("redactUrl() drops the query and credentials", () => {
  assert.equal(
    redactUrl("https://u:p@cdn.example/a/b?X-Amz-Signature=s#f"),
    "https://cdn.example/a/b",
  );
});

Deno.test("HttpSource: a server making a little progress per request is held to the speed floor", async (t) => {
  // Each answer is quick but carries two bytes: no idle timeout fires, every
  // request progresses (so retries reset), yet 300 KB would take hours.
  for (const ending of ["short 206 answers", "connections dropped after two bytes"] as const) {
    await t.step(ending, async () => {
      let requests = 0;
      const server = Deno.serve({ hostname: "127.0.0.1", port: 0, onListen() {} }, async (req) => {
        requests++;
        await new Promise((r) => setTimeout(r, 2));
        const from = Number(/bytes=(\d+)-/.exec(req.headers.get("range") ?? "")?.[1] ?? 0);
        const piece = DATA.subarray(from, from + 2);
        // A short 206 says it ends early; a dropped one announces the whole rest.
        const last = ending === "short 206 answers" ? from + 1 : DATA.length - 1;
        return new Response(piece, {
          status: 206,
          headers: { "content-range": `bytes ${from}-${last}/${DATA.length}` },
        });
      });
      try {
        const source = await openHttpSource(`http://127.0.0.1:${server.addr.port}/f`, {
          ...FAST,
          size: DATA.length,
          minBytesPerSecond: 10_000,
          speedWindowMs: 200,
        });
        const started = performance.now();
        await assert.rejects(
          source.read(0, DATA.length),
          (e: Error) =>
            e instanceof HubRequestError && /slower than 10000 bytes\/s/.test(e.message),
        );
        assert.ok(performance.now() - started < 20_000, "gave up in bounded time");
        assert.ok(requests < 5_000, `${requests} requests`);
      } finally {
        await server.shutdown();
      }
    });
  }
});
