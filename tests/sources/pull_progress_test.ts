/**
 * Progress on a slow link: a file's row moves while its bytes arrive, not
 * only when the file (or a 1 MiB write chunk) is complete. On a link of a
 * few hundred KB/s the old 1 MiB step froze the display for seconds and
 * kept files under 1 MiB at "0 B" until they ended.
 *
 * @module
 */

import { ok } from "node:assert/strict";
import { pullModel, type PullProgressEvent } from "../../src/sources/hub_pull.ts";
import { PROGRESS_STEP_BYTES } from "../../src/sources/hub_download.ts";
import { buildTinyShardedModel, startHubServer } from "../_hub_server.ts";

Deno.test("pullModel(): a file's progress row advances in steps of at most 64 KiB while it downloads", async () => {
  const files = buildTinyShardedModel({ bigShardBytes: 600 * 1024 });
  const big = files.find((f) => f.path === "model-00002-of-00002.safetensors")!;
  const server = await startHubServer({ files, faults: [], serveChunkSize: 16 * 1024 });
  const cacheDir = await Deno.makeTempDir({ prefix: "aprkit-progress-" });
  try {
    const events: PullProgressEvent[] = [];
    await pullModel("hf://test-org/tiny-model", {
      settings: {
        endpoint: server.endpoint,
        token: undefined,
        home: cacheDir,
        cacheDir,
        offline: false,
      },
      sleep: () => Promise.resolve(),
      jobs: 1,
      onProgress: (e) => events.push(e),
    });
    const rows = events.flatMap((e) => e.active.filter((a) => a.path === big.path));
    const size = big.data!.length;
    ok(size < 1024 * 1024 && size > 8 * PROGRESS_STEP_BYTES);
    const partial = rows.filter((r) => r.bytesDone > 0 && r.bytesDone < size);
    ok(partial.length >= 8, `only ${partial.length} updates of a ${size}-byte file's row`);
    // No step between two updates is larger than the progress step.
    let last = 0;
    for (const row of rows) {
      ok(row.bytesDone - last <= PROGRESS_STEP_BYTES, `a jump of ${row.bytesDone - last} bytes`);
      last = row.bytesDone;
    }
    ok(PROGRESS_STEP_BYTES <= 64 * 1024);
  } finally {
    await server.close();
    await Deno.remove(cacheDir, { recursive: true });
  }
});
