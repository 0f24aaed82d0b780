/**
 * Our GGUF export read by an independent parser: the `@huggingface/gguf`
 * npm package (huggingface.js), fetching the file over HTTP from a server
 * this test starts on 127.0.0.1 — the way that package reads remote files.
 */

import assert from "node:assert/strict";
import { gguf } from "@huggingface/gguf";
import { parseGgufHeader } from "../../../src/formats/gguf/header.ts";
import { openFileSource } from "../../../src/io/file_source.ts";
import { convertModel } from "../../../src/pipeline/convert_model.ts";

const testdata = (name: string) => new URL(`../../testdata/gguf/${name}`, import.meta.url).pathname;

/** Serve one file with Range support, as a CDN would. */
function serveFile(path: string): { url: string; close: () => Promise<void> } {
  const server = Deno.serve({ hostname: "127.0.0.1", port: 0, onListen() {} }, async (request) => {
    const bytes = await Deno.readFile(path);
    const range = /bytes=(\d+)-(\d*)/.exec(request.headers.get("range") ?? "");
    if (!range) return new Response(bytes);
    const start = Number(range[1]);
    const end = Math.min(range[2] ? Number(range[2]) + 1 : bytes.length, bytes.length);
    return new Response(bytes.subarray(start, end), {
      status: 206,
      headers: { "content-range": `bytes ${start}-${end - 1}/${bytes.length}` },
    });
  });
  return { url: `http://127.0.0.1:${server.addr.port}/model.gguf`, close: () => server.shutdown() };
}

for (const fixture of ["tiny-llama-q4_k_m.gguf", "llama-2-tiny-random.gguf"]) {
  Deno.test(`GgufSink output of ${fixture} → APR → GGUF is read alike by @huggingface/gguf`, async () => {
    const dir = await Deno.makeTempDir();
    const server = { close: () => Promise.resolve() };
    try {
      await convertModel(testdata(fixture), `${dir}/model.apr`);
      await convertModel(`${dir}/model.apr`, `${dir}/model.gguf`);
      const ours = await parseGgufHeader(await openFileSource(`${dir}/model.gguf`));
      const served = serveFile(`${dir}/model.gguf`);
      server.close = served.close;
      const theirs = await gguf(served.url);

      assert.equal(theirs.tensorInfos.length, ours.tensors.length);
      for (const [i, info] of theirs.tensorInfos.entries()) {
        const mine = ours.tensors[i]!;
        assert.equal(info.name, mine.name);
        assert.equal(info.dtype, mine.ggmlType, info.name);
        assert.deepEqual(info.shape.map(Number), mine.ne, info.name);
        assert.equal(Number(info.offset), mine.offset, info.name);
      }
      // Every KV pair we wrote, with the same value. Their parser keeps
      // 64-bit integers as bigint, and decodes strings with a default
      // TextDecoder, which drops a leading U+FEFF: llama's vocabulary has the
      // token "\uFEFF" itself, which we keep (it decodes to "" there).
      const metadata = theirs.metadata as Record<string, unknown>;
      for (const [key, entry] of ours.kv) {
        const value = metadata[key];
        const norm = (v: unknown): unknown =>
          Array.isArray(v)
            ? v.map(norm)
            : typeof v === "bigint"
            ? Number(v)
            : typeof v === "string"
            ? v.replace(/^\uFEFF/, "")
            : v;
        assert.deepEqual(norm(value), norm(entry.value), key);
      }
      assert.equal(metadata["general.architecture"], "llama");
    } finally {
      await server.close();
      await Deno.remove(dir, { recursive: true });
    }
  });
}
