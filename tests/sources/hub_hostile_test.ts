/**
 * A hostile Hub (docs/SECURITY.md, issue 9): a real HTTP server on 127.0.0.1
 * answering what an attacker publishing a repository could make it answer —
 * file names that climb out of the cache, ETags and commits that are not
 * hashes, endless JSON, silence, a trickle — and what aprkit must do about it.
 */

import assert from "node:assert/strict";
import { createHash } from "node:crypto";
import { join } from "node:path";
import { HubAnswerError, HubRequestError } from "../../src/errors.ts";
import {
  HubClient,
  MAX_API_ANSWER_BYTES,
  MAX_HUB_FILE_BYTES,
} from "../../src/sources/hub_client.ts";
import { MAX_JSON_FILE_BYTES } from "../../src/io/model_files.ts";
import { assertSafeRepoPath, unsafePathReason } from "../../src/sources/hub_names.ts";
import { pullModel, type PullOptions } from "../../src/sources/hub_pull.ts";
import type { HubSettings } from "../../src/sources/hub_settings.ts";
import { assertOneLineError, runApr } from "../cli/_run_apr.ts";

const REPO = "evil-org/evil-model";
const COMMIT = "c0ffee0000000000000000000000000000c0ffee";
const CONFIG = new TextEncoder().encode('{"model_type":"llama"}');
const CONFIG_OID = gitBlobId(CONFIG);
/** No real waiting between retries, few retries. */
const FAST: PullOptions = { sleep: () => Promise.resolve(), retries: 1 };

/** Requests left hanging by a test, answered when its server closes (shutdown waits for them). */
const hanging = new Set<() => void>();

/** A response that does not come until the server closes. */
function hang(): Promise<Response> {
  return new Promise((resolve) => hanging.add(() => resolve(new Response("late"))));
}

function gitBlobId(data: Uint8Array): string {
  return createHash("sha1").update(`blob ${data.length}\0`).update(data).digest("hex");
}

/** What the hostile server answers; each field overrides the honest answer. */
interface Hostility {
  /** File names listed by the revision endpoint. */
  files?: string[];
  /** The commit id announced (revision info and X-Repo-Commit). */
  commit?: string;
  /** The ETag of every file. */
  etag?: string;
  /** Answer the revision endpoint with this response instead. */
  revision?: () => Response | Promise<Response>;
  /** Answer file metadata requests (HEAD) with this response instead. */
  head?: (request: Request) => Response | Promise<Response>;
  /** Answer file downloads (GET) with this response instead. */
  download?: (request: Request) => Response | Promise<Response>;
}

interface Hostile {
  settings: HubSettings;
  /** Every request path seen. */
  requests: string[];
  cacheDir: string;
  /** A folder beside the cache that nothing may touch. */
  outside: string;
  close(): Promise<void>;
}

async function startHostileHub(hostility: Hostility): Promise<Hostile> {
  const requests: string[] = [];
  const commit = hostility.commit ?? COMMIT;
  const server = Deno.serve({ hostname: "127.0.0.1", port: 0, onListen() {} }, (request) => {
    const url = new URL(request.url);
    requests.push(`${request.method} ${decodeURIComponent(url.pathname)}`);
    if (url.pathname.startsWith(`/api/models/${REPO}/revision/`)) {
      if (hostility.revision) return hostility.revision();
      return Response.json({
        sha: commit,
        siblings: (hostility.files ?? ["config.json"]).map((rfilename) => ({ rfilename })),
      });
    }
    if (url.pathname.startsWith(`/${REPO}/resolve/`)) {
      const headers = {
        "x-repo-commit": commit,
        etag: `"${hostility.etag ?? CONFIG_OID}"`,
        "content-length": String(CONFIG.length),
      };
      if (request.method === "HEAD") {
        return hostility.head?.(request) ?? new Response(null, { headers });
      }
      if (hostility.download) return hostility.download(request);
      return new Response(CONFIG, { headers });
    }
    return new Response("not found", { status: 404 });
  });
  const root = await Deno.makeTempDir({ prefix: "aprkit-hostile-" });
  const cacheDir = join(root, "hub");
  const outside = join(root, "outside");
  await Deno.mkdir(outside);
  await Deno.writeTextFile(join(outside, "victim"), "precious");
  return {
    settings: {
      endpoint: `http://127.0.0.1:${server.addr.port}`,
      token: undefined,
      home: root,
      cacheDir,
      offline: false,
    },
    requests,
    cacheDir,
    outside,
    async close() {
      for (const release of hanging) release();
      hanging.clear();
      await server.shutdown();
      await Deno.remove(root, { recursive: true });
    },
  };
}

/** Everything below a folder, as relative paths (links not followed). */
async function tree(dir: string, prefix = ""): Promise<string[]> {
  const found: string[] = [];
  try {
    for await (const entry of Deno.readDir(dir)) {
      const path = prefix + entry.name;
      found.push(path);
      if (entry.isDirectory) found.push(...await tree(join(dir, entry.name), `${path}/`));
    }
  } catch (error) {
    if (!(error instanceof Deno.errors.NotFound)) throw error;
  }
  return found.sort();
}

async function assertOutsideUntouched(hub: Hostile): Promise<void> {
  assert.deepEqual(await tree(hub.outside), ["victim"]);
  assert.equal(await Deno.readTextFile(join(hub.outside, "victim")), "precious");
  // Nothing but the cache folder itself beside the victim's folder.
  assert.deepEqual(
    (await tree(join(hub.outside, ".."))).filter((p) => !p.startsWith("hub")),
    ["outside", "outside/victim"],
  );
}

Deno.test("unsafePathReason() accepts plain relative paths and names what is wrong with others", async (t) => {
  for (const ok of ["config.json", "sub/dir/model-00001-of-00002.safetensors", "a..b.json", ".x"]) {
    await t.step(
      `accepts ${JSON.stringify(ok)}`,
      () => assert.equal(unsafePathReason(ok), undefined),
    );
  }
  const cases: [string, RegExp][] = [
    ["", /empty/],
    ["../../../../tmp/x/evil.gguf", /"\.\." path segment/],
    ["a/./b", /"\." path segment/],
    ["a//b", /empty path segment/],
    ["/etc/passwd", /absolute/],
    ["a\\..\\b", /backslash/],
    ["C:evil", /drive letter/],
    ["a\u0000b", /control character/],
    ["a\u001b[2Jb", /control character/],
    ["a\nb", /control character/],
    ["x".repeat(1025), /longer than 1024/],
  ];
  for (const [path, reason] of cases) {
    await t.step(`refuses ${JSON.stringify(path.slice(0, 30))}`, () => {
      assert.match(unsafePathReason(path) ?? "", reason);
      assert.throws(() => assertSafeRepoPath(path, "the test"), /^TypeError: Cannot use the test/);
    });
  }
});

Deno.test("pullModel() refuses file names that would leave the cache, creating and requesting nothing for them", async (t) => {
  const names = [
    "../../../../outside/evil.gguf",
    "/tmp/evil.gguf",
    "sub/../../evil.gguf",
    "a\u0000.json",
    "",
    ".",
  ];
  for (const name of names) {
    await t.step(JSON.stringify(name), async () => {
      const hub = await startHostileHub({ files: ["config.json", name] });
      try {
        await assert.rejects(
          pullModel(`hf://${REPO}`, { ...FAST, settings: hub.settings, include: ["**", "*"] }),
          (e: Error) => {
            assert.ok(e instanceof TypeError, String(e));
            assert.match(
              e.message,
              /^Cannot select files: the repository lists the unsafe file name/,
            );
            assert.ok(
              !e.message.includes("\u0000"),
              "the message carries no raw control character",
            );
            return true;
          },
        );
        // No file request at all: the names are refused before any download.
        assert.deepEqual(hub.requests.filter((r) => r.includes("/resolve/")), []);
        await assertOutsideUntouched(hub);
        assert.deepEqual(
          (await tree(hub.cacheDir)).filter((p) =>
            p.includes("snapshots/") || p.includes("blobs/")
          ),
          [],
        );
      } finally {
        await hub.close();
      }
    });
  }
});

Deno.test("pullModel() checks --revision like @rev before it touches the cache", async (t) => {
  for (
    const revision of ["../../outside/victim", "/abs", "a/../../b", "x\u0000", "r".repeat(300)]
  ) {
    await t.step(JSON.stringify(revision.slice(0, 30)), async () => {
      const hub = await startHostileHub({});
      try {
        await assert.rejects(
          pullModel(`hf://${REPO}`, { ...FAST, settings: hub.settings, revision }),
          /^TypeError: Cannot use revision /,
        );
        assert.deepEqual(hub.requests, []);
        await assertOutsideUntouched(hub);
        assert.deepEqual(await tree(hub.cacheDir), []);
      } finally {
        await hub.close();
      }
    });
  }
  await t.step("a revision with slashes (refs/pr/1) is still allowed", async () => {
    const hub = await startHostileHub({});
    try {
      const result = await pullModel(`hf://${REPO}`, {
        ...FAST,
        settings: hub.settings,
        revision: "refs/pr/1",
        include: ["config.json"],
      });
      assert.equal(result.commit, COMMIT);
      const ref = join(hub.cacheDir, `models--evil-org--evil-model`, "refs", "refs", "pr", "1");
      assert.equal(await Deno.readTextFile(ref), COMMIT);
    } finally {
      await hub.close();
    }
  });
});

Deno.test("pullModel() uses only a plain hex ETag as a blob name and only a 40-hex commit as a folder", async (t) => {
  const cases: [string, Hostility, RegExp][] = [
    ["ETag ..", { etag: ".." }, /no usable ETag for "config\.json" \(got "\\"\.\.\\""\)/],
    ["ETag with a slash", { etag: "../../outside/victim" }, /no usable ETag/],
    ["ETag not hex", { etag: "not-a-hash-at-all" }, /no usable ETag/],
    ["commit climbing out", { commit: "../../../outside" }, /no commit id \(sha\)/],
    ["commit too short", { commit: "abc123" }, /no commit id \(sha\)/],
  ];
  for (const [name, hostility, message] of cases) {
    await t.step(name, async () => {
      const hub = await startHostileHub(hostility);
      try {
        await assert.rejects(
          pullModel(`hf://${REPO}`, { ...FAST, settings: hub.settings, include: ["config.json"] }),
          (e: Error) => {
            assert.ok(e instanceof HubAnswerError, String(e));
            assert.match(e.message, message);
            return true;
          },
        );
        await assertOutsideUntouched(hub);
        const cached = await tree(hub.cacheDir);
        assert.ok(
          !cached.some((p) => p.includes("blobs/") || p.includes("snapshots/")),
          cached.join(),
        );
      } finally {
        await hub.close();
      }
    });
  }
});

Deno.test("pullModel() caps API answers: an endless or huge JSON body is refused without reading it all", async (t) => {
  await t.step("endless body", async () => {
    let sent = 0;
    const chunk = new TextEncoder().encode(`{"sha":"${COMMIT}","siblings":[` + "[".repeat(65_000));
    const hub = await startHostileHub({
      revision: () =>
        new Response(
          new ReadableStream({
            pull(controller) {
              sent += chunk.length;
              controller.enqueue(chunk);
            },
          }),
        ),
    });
    try {
      await assert.rejects(
        pullModel(`hf://${REPO}`, { ...FAST, settings: hub.settings }),
        (e: Error) => e instanceof HubAnswerError && /larger than/.test(e.message),
      );
      // It stopped soon after the limit (a few chunks in flight at most).
      assert.ok(sent < MAX_API_ANSWER_BYTES * 1.5, `${sent} bytes were sent`);
    } finally {
      await hub.close();
    }
  });
  await t.step("a gzip bomb: the cap counts the bytes after decoding", async () => {
    // 96 MiB of "[" sent gzipped as ~100 KB: read whole, it would fail as "not JSON".
    const chunk = new TextEncoder().encode("[".repeat(1 << 20));
    let left = 96;
    const hub = await startHostileHub({
      revision: () =>
        new Response(
          new ReadableStream<BufferSource>({
            pull(controller) {
              if (left-- === 0) return controller.close();
              controller.enqueue(chunk);
            },
          }).pipeThrough(new CompressionStream("gzip")),
          { headers: { "content-encoding": "gzip", "content-type": "application/json" } },
        ),
    });
    try {
      await assert.rejects(
        pullModel(`hf://${REPO}`, { ...FAST, settings: hub.settings }),
        (e: Error) => e instanceof HubAnswerError && /larger than/.test(e.message),
      );
    } finally {
      await hub.close();
    }
  });
});

Deno.test("pullModel() does not hang on a server that never answers, goes silent, or trickles", async (t) => {
  await t.step("no response headers", async () => {
    const hub = await startHostileHub({ revision: hang });
    const started = performance.now();
    try {
      await assert.rejects(
        pullModel(`hf://${REPO}`, { ...FAST, settings: hub.settings, headerTimeoutMs: 200 }),
        (e: Error) => e instanceof HubRequestError && /no response within 0\.2 s/.test(e.message),
      );
      assert.ok(performance.now() - started < 10_000);
    } finally {
      await hub.close();
    }
  });
  await t.step("a body that stops", async () => {
    const hub = await startHostileHub({
      download: () =>
        new Response(
          new ReadableStream({
            start(controller) {
              controller.enqueue(CONFIG.subarray(0, 4));
            },
            pull: (controller) => hang().then(() => controller.close()),
          }),
        ),
    });
    try {
      await assert.rejects(
        pullModel(`hf://${REPO}`, {
          ...FAST,
          settings: hub.settings,
          include: ["config.json"],
          idleTimeoutMs: 200,
        }),
        (e: Error) => e instanceof HubRequestError && /no data for 0\.2 s/.test(e.message),
      );
    } finally {
      await hub.close();
    }
  });
  await t.step("a trickle: 1 byte every 20 ms, progress or not", async () => {
    const hub = await startHostileHub({
      download: (request) => {
        // Honour the Range so every retry makes a little progress.
        const from = Number(/bytes=(\d+)-/.exec(request.headers.get("range") ?? "")?.[1] ?? 0);
        let at = from;
        return new Response(
          new ReadableStream({
            async pull(controller) {
              await new Promise((r) => setTimeout(r, 20));
              if (at >= CONFIG.length) return controller.close();
              controller.enqueue(CONFIG.subarray(at, at + 1));
              at++;
            },
          }),
          {
            status: 206,
            headers: { "content-range": `bytes ${from}-${CONFIG.length - 1}/${CONFIG.length}` },
          },
        );
      },
    });
    const started = performance.now();
    try {
      await assert.rejects(
        pullModel(`hf://${REPO}`, {
          ...FAST,
          retries: 2,
          settings: hub.settings,
          include: ["config.json"],
          minBytesPerSecond: 1000,
          speedWindowMs: 100,
        }),
        (e: Error) =>
          e instanceof HubRequestError && /slower than 1000 bytes\/s over 0\.1 s/.test(e.message),
      );
      assert.ok(performance.now() - started < 10_000);
    } finally {
      await hub.close();
    }
  });
});

Deno.test("apr pull: an unsafe file name from the Hub is exit 2 with one line, before any download", async () => {
  const hub = await startHostileHub({ files: ["config.json", "evil\u0000.json", "../x.json"] });
  try {
    const run = await runApr(["pull", `hf://${REPO}`, "--include", "**"], {
      env: { HF_HUB_OFFLINE: "0", HF_ENDPOINT: hub.settings.endpoint, HF_HOME: hub.settings.home },
    });
    assertOneLineError(run, /unsafe file name "(evil\\u0000\.json|\.\.\/x\.json)"/);
    assert.equal(run.code, 2);
    assert.deepEqual(hub.requests.filter((r) => r.includes("/resolve/")), []);
    await assertOutsideUntouched(hub);
  } finally {
    await hub.close();
  }
});

Deno.test("pullModel() follows no redirect to a non-HTTP URL: a file: URL would read the local disk", async () => {
  const secret = new TextEncoder().encode("the user's secret");
  const sha256 = createHash("sha256").update(secret).digest("hex");
  let secretPath = "";
  const hub = await startHostileHub({
    head: () =>
      new Response(null, {
        status: 302,
        headers: {
          location: `file://${secretPath}`,
          "x-repo-commit": COMMIT,
          "x-linked-etag": `"${sha256}"`,
          "x-linked-size": String(secret.length),
        },
      }),
  });
  try {
    secretPath = join(hub.outside, "secret");
    await Deno.writeFile(secretPath, secret);
    await assert.rejects(
      pullModel(`hf://${REPO}`, { ...FAST, settings: hub.settings, include: ["config.json"] }),
      (e: Error) => {
        assert.ok(e instanceof HubAnswerError, String(e));
        assert.match(e.message, /the redirect "file:\/\/.*secret" is not http\(s\)/);
        return true;
      },
    );
    const cached = await tree(hub.cacheDir);
    assert.ok(!cached.some((p) => p.includes("blobs/")), cached.join());
  } finally {
    await hub.close();
  }
});

Deno.test("HubClient.listTree() sends the token to the Hub's origin only: a next page elsewhere is refused", async (t) => {
  const elsewhere: string[] = [];
  const other = Deno.serve({ hostname: "127.0.0.1", port: 0, onListen() {} }, (request) => {
    elsewhere.push(request.headers.get("authorization") ?? "no token");
    return Response.json([]);
  });
  const otherOrigin = `http://localhost:${other.addr.port}`;
  for (
    const [name, link, reason] of [
      [
        "another origin",
        `<${otherOrigin}/api/models/x/tree/main?cursor=2>; rel="next"`,
        /is not on/,
      ],
      ["a file: URL", `<file:///etc/hostname>; rel="next"`, /is not http\(s\)/],
    ] as const
  ) {
    await t.step(name, async () => {
      const hub = Deno.serve(
        { hostname: "127.0.0.1", port: 0, onListen() {} },
        () =>
          Response.json([{ type: "file", path: "config.json", size: 2, oid: "x" }], {
            headers: { link },
          }),
      );
      try {
        const client = new HubClient({
          endpoint: `http://127.0.0.1:${hub.addr.port}`,
          token: "hf_secret",
          ...FAST,
        });
        await assert.rejects(
          client.listTree(REPO, "main"),
          (e: Error) => e instanceof HubAnswerError && reason.test(e.message),
        );
        assert.deepEqual(elsewhere, [], "nothing was sent to the other origin");
      } finally {
        await hub.shutdown();
      }
    });
  }
  await other.shutdown();
});

Deno.test("pullModel() checks the index's size before downloading it to read it whole", async () => {
  const huge = MAX_JSON_FILE_BYTES + 1;
  const hub = await startHostileHub({
    files: ["model.safetensors.index.json", "model-00001-of-00001.safetensors"],
    head: () =>
      new Response(null, {
        headers: {
          "x-repo-commit": COMMIT,
          "x-linked-etag": `"${"ab".repeat(32)}"`,
          "x-linked-size": String(huge),
        },
      }),
  });
  try {
    await assert.rejects(
      pullModel(`hf://${REPO}`, { ...FAST, settings: hub.settings }),
      new RegExp(`^RangeError: Cannot read ".*model\\.safetensors\\.index\\.json": ${huge} bytes`),
    );
    assert.deepEqual(
      hub.requests.filter((r) => r.startsWith("GET") && r.includes("/resolve/")),
      [],
    );
  } finally {
    await hub.close();
  }
});

Deno.test("pullModel() refuses an announced size no Hub file has, before planning the download", async () => {
  const hub = await startHostileHub({
    head: () =>
      new Response(null, {
        headers: {
          "x-repo-commit": COMMIT,
          "x-linked-etag": `"${"ab".repeat(32)}"`,
          "x-linked-size": String(Number.MAX_SAFE_INTEGER),
        },
      }),
  });
  try {
    await assert.rejects(
      pullModel(`hf://${REPO}`, { ...FAST, settings: hub.settings, include: ["config.json"] }),
      (e: Error) =>
        e instanceof HubAnswerError &&
        e.message.includes(`no usable size for "config.json" (got "${Number.MAX_SAFE_INTEGER}"`) &&
        e.message.includes(`at most ${MAX_HUB_FILE_BYTES}`),
    );
    assert.deepEqual(
      hub.requests.filter((r) => r.startsWith("GET") && r.includes("/resolve/")),
      [],
    );
  } finally {
    await hub.close();
  }
});

Deno.test("pullModel() stops an endless same-host redirect loop", async () => {
  let heads = 0;
  let hubUrl = "";
  const hub = await startHostileHub({
    head: (request) => {
      heads++;
      // Always "renamed" again, on the Hub's own origin.
      const next = new URL(request.url);
      next.searchParams.set("hop", String(heads));
      hubUrl = next.origin;
      return new Response(null, { status: 307, headers: { location: next.href } });
    },
  });
  try {
    await assert.rejects(
      pullModel(`hf://${REPO}`, { ...FAST, settings: hub.settings, include: ["config.json"] }),
      (e: Error) => e instanceof HubAnswerError && /too many redirects/.test(e.message),
    );
    assert.ok(heads <= 6, `${heads} HEAD requests to ${hubUrl}`);
  } finally {
    await hub.close();
  }
});
