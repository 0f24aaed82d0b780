import assert from "node:assert/strict";
import { agreedCopies } from "../../src/pipeline/agreed_copies.ts";
import type { TensorEntry } from "../../src/tensor.ts";

/** An entry serving `bytes` in chunks of `size`. */
function entry(bytes: Uint8Array, size: number): TensorEntry {
  const chunks: Uint8Array[] = [];
  for (let i = 0; i < bytes.length; i += size) chunks.push(bytes.slice(i, i + size));
  return {
    info: { name: "t", dtype: "U8", shape: [bytes.length], byteLength: bytes.length },
    open: () => ReadableStream.from(chunks.map((c) => c.slice())),
  };
}

async function collect(stream: ReadableStream<Uint8Array>): Promise<Uint8Array> {
  return new Uint8Array(await new Response(stream).arrayBuffer());
}

Deno.test("agreedCopies() gives the first copy's bytes where every copy agrees, whatever their chunks", async () => {
  const bytes = Uint8Array.from({ length: 1000 }, (_, i) => i % 251);
  const got = await collect(
    agreedCopies([entry(bytes, 64), entry(bytes, 7), entry(bytes, 999)], () => new Error("differ")),
  );
  assert.deepEqual(got, bytes);
});

Deno.test("agreedCopies() errors naming the copy that differs", async () => {
  const bytes = Uint8Array.from({ length: 300 }, (_, i) => i % 200);
  const other = bytes.slice();
  other[250] = 7;
  await assert.rejects(
    collect(
      agreedCopies(
        [entry(bytes, 100), entry(bytes, 33), entry(other, 50)],
        (i) => new Error(`copy ${i}`),
      ),
    ),
    /copy 2/,
  );
});
