import assert from "node:assert/strict";
import { HubRequestError } from "../../src/errors.ts";
import { HubClient } from "../../src/sources/hub_client.ts";
import { buildTinyShardedModel, sha256Hex, startHubServer } from "../_hub_server.ts";

const REPO = "test-org/tiny-model";

Deno.test("HubClient lists the tree across Link pages with sizes and LFS sha256", async () => {
  const files = buildTinyShardedModel();
  const server = await startHubServer({ files, treePageSize: 2 });
  try {
    const client = new HubClient({ endpoint: server.endpoint });
    const tree = await client.listTree(REPO, server.commit);
    assert.deepEqual(tree.map((e) => e.path), files.map((f) => f.path).sort());
    const pages = server.counters.requests.filter((r) => r.url.includes("/tree/")).length;
    assert.equal(pages, Math.ceil(files.length / 2));
    for (const entry of tree) {
      const data = files.find((f) => f.path === entry.path)!.data!;
      assert.equal(entry.size, data.length);
      const lfs = !/\.(json|md)$/.test(entry.path);
      assert.equal(entry.sha256, lfs ? sha256Hex(data) : undefined);
    }
  } finally {
    await server.close();
  }
});

Deno.test("HubClient.fileInfo() reads HEAD metadata and stops at the CDN redirect", async () => {
  const files = buildTinyShardedModel();
  const server = await startHubServer({ files, token: "hf_abc" });
  try {
    const client = new HubClient({ endpoint: server.endpoint, token: "hf_abc" });
    const shard = files.find((f) => f.path === "model-00001-of-00002.safetensors")!.data!;
    const lfs = await client.fileInfo(REPO, "main", "model-00001-of-00002.safetensors");
    assert.equal(lfs.commit, server.commit);
    assert.equal(lfs.etag, sha256Hex(shard));
    assert.equal(lfs.sha256, lfs.etag);
    assert.equal(lfs.size, shard.length);
    assert.ok(lfs.location.url.startsWith(server.cdnUrl));
    assert.deepEqual(lfs.location.headers, {}, "no token to the CDN");
    const config = await client.fileInfo(REPO, "main", "config.json");
    assert.equal(config.sha256, undefined);
    assert.match(config.etag, /^[0-9a-f]{40}$/);
    assert.ok(config.location.url.startsWith(server.endpoint));
    const source = await client.openFile(REPO, server.commit, "config.json", config);
    const text = new TextDecoder().decode(await source.read(0, source.size));
    assert.equal(JSON.parse(text).hidden_size, 8);
    assert.ok(!JSON.stringify(config).includes("hf_abc") || config.location.headers !== undefined);
  } finally {
    await server.close();
  }
});

Deno.test("HubClient reports each D6 failure with its own message", async (t) => {
  const server = await startHubServer({ files: buildTinyShardedModel(), token: "hf_abc" });
  const good = new HubClient({ endpoint: server.endpoint, token: "hf_abc", retries: 0 });
  const cases: [string, () => Promise<unknown>, number, RegExp][] = [
    [
      "no token",
      () => new HubClient({ endpoint: server.endpoint }).repoInfo(REPO, "main"),
      401,
      /authentication required \(HTTP 401\).*set HF_TOKEN/,
    ],
    [
      "bad token",
      () => new HubClient({ endpoint: server.endpoint, token: "nope" }).repoInfo(REPO, "main"),
      401,
      /the token was refused \(HTTP 401\)/,
    ],
    [
      "unknown repo",
      () => good.repoInfo("test-org/other", "main"),
      404,
      /repository "test-org\/other" not found/,
    ],
    [
      "unknown revision",
      () => good.repoInfo(REPO, "v2"),
      404,
      /revision "v2" not found in hf:\/\/test-org\/tiny-model/,
    ],
    [
      "unknown file",
      () => good.fileInfo(REPO, "main", "nope.json"),
      404,
      /file "nope\.json" not found in hf:\/\/test-org\/tiny-model at revision "main"/,
    ],
  ];
  try {
    for (const [name, run, status, message] of cases) {
      await t.step(name, async () => {
        const error = await run().catch((e) => e);
        assert.ok(error instanceof HubRequestError, String(error));
        assert.equal(error.status, status);
        assert.match(error.message, message);
        assert.ok(!error.message.includes("hf_abc"));
      });
    }
  } finally {
    await server.close();
  }
});
