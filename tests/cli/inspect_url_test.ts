/**
 * `apr inspect https://…` reads a remote file's header with range requests,
 * never the whole file.
 */

import { equal, ok } from "node:assert/strict";
import { runApr, testdata } from "./_run_apr.ts";

Deno.test("apr inspect of an http:// URL reads only the header", async () => {
  const bytes = await Deno.readFile(testdata("gguf/tiny-llama-f32.gguf"));
  let served = 0;
  const server = Deno.serve({ hostname: "127.0.0.1", port: 0, onListen() {} }, (request) => {
    const range = /bytes=(\d+)-(\d*)/.exec(request.headers.get("range") ?? "");
    if (!range) {
      served += bytes.length;
      return new Response(bytes);
    }
    const start = Number(range[1]);
    const end = Math.min(range[2] ? Number(range[2]) + 1 : bytes.length, bytes.length);
    served += end - start;
    return new Response(bytes.subarray(start, end), {
      status: 206,
      headers: { "content-range": `bytes ${start}-${end - 1}/${bytes.length}` },
    });
  });
  try {
    const url = `http://127.0.0.1:${server.addr.port}/tiny-llama-f32.gguf`;
    const run = await runApr(["inspect", url, "--json"]);
    equal(run.code, 0, run.stderr);
    const result = JSON.parse(run.stdout);
    equal(result.format, "gguf");
    equal(result.tensorCount, 21);
    ok(served < bytes.length / 8, `inspect read ${served} of ${bytes.length} bytes`);
  } finally {
    await server.shutdown();
  }
});
