import assert from "node:assert/strict";
import { openSafetensorsModel } from "../../src/formats/safetensors/sharded.ts";
import { HubRequestError } from "../../src/errors.ts";
import { openHubModelFiles } from "../../src/sources/hub_files.ts";
import { LocalModelFiles } from "../../src/io/model_files.ts";
import { buildTinyShardedModel, startHubServer } from "../_hub_server.ts";

const REF = "hf://test-org/tiny-model";

async function drain(stream: ReadableStream<Uint8Array>): Promise<Uint8Array> {
  const parts: Uint8Array[] = [];
  for await (const part of stream) parts.push(part);
  const out = new Uint8Array(parts.reduce((n, p) => n + p.length, 0));
  let at = 0;
  for (const p of parts) {
    out.set(p, at);
    at += p.length;
  }
  return out;
}

Deno.test("openHubModelFiles() streams a sharded model over HTTP with nothing written to disk", async () => {
  const files = buildTinyShardedModel({ bigShardBytes: 2 * 1024 * 1024 });
  const server = await startHubServer({ files });
  const cacheDir = await Deno.makeTempDir({ prefix: "aprkit-hub-" });
  const localDir = await Deno.makeTempDir({ prefix: "aprkit-local-" });
  try {
    for (const f of files) await Deno.writeFile(`${localDir}/${f.path}`, f.data!);
    const remote = await openHubModelFiles(REF, {
      settings: {
        endpoint: server.endpoint,
        token: undefined,
        home: cacheDir,
        cacheDir,
        offline: false,
      },
    });
    assert.equal(remote.name, `hf://test-org/tiny-model@${server.commit}`);
    assert.deepEqual(await remote.list(), files.map((f) => f.path).sort());
    const reader = await openSafetensorsModel(remote, { chunkSize: 256 * 1024 });
    const local = await openSafetensorsModel(new LocalModelFiles(localDir));
    try {
      assert.deepEqual(reader.header.tensors, local.header.tensors);
      for (const [i, entry] of reader.tensors.entries()) {
        assert.deepEqual(await drain(entry.open()), await drain(local.tensors[i]!.open()));
      }
    } finally {
      await reader.close();
      await local.close();
    }
    // Only the index's shards were read; the stray shard never.
    const read = new Set(server.dataRequests().map((r) => r.file));
    assert.ok(!read.has("model-stray.safetensors"));
    assert.ok(read.has("model-00002-of-00002.safetensors"));
    assert.deepEqual([...Deno.readDirSync(cacheDir)], []);
  } finally {
    await server.close();
    await Deno.remove(cacheDir, { recursive: true });
    await Deno.remove(localDir, { recursive: true });
  }
});

Deno.test("openHubModelFiles() refuses offline mode and unknown folders", async (t) => {
  const server = await startHubServer({ files: buildTinyShardedModel() });
  const settings = {
    endpoint: server.endpoint,
    token: undefined,
    home: "/x",
    cacheDir: "/x",
    offline: false,
  };
  try {
    await t.step("offline", async () => {
      const error = await openHubModelFiles(REF, { settings: { ...settings, offline: true } })
        .catch((e) => e);
      assert.ok(error instanceof HubRequestError);
      assert.match(
        error.message,
        /HF_HUB_OFFLINE is set and streaming without the cache needs the network/,
      );
    });
    await t.step("missing folder", async () => {
      const error = await openHubModelFiles(`${REF}/nope`, { settings }).catch((e) => e);
      assert.ok(error instanceof HubRequestError);
      assert.match(error.message, /no folder "nope"/);
    });
  } finally {
    await server.close();
  }
});
