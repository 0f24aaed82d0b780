/**
 * `transposedColumns` (Qwen3-VL-MoE's packed experts back to GGUF's layout),
 * element by element for 1-, 2- and 4-byte types, whatever the chunking of
 * the payload; byte-exact agreement with llama.cpp's converter is
 * `tests/interop/multimodal_qwen3vl_test.ts`'s.
 */

import assert from "node:assert/strict";
import { transposedColumns } from "../../src/arch/transforms.ts";

/** `count` matrices of `rows × cols` elements of `eb` bytes, byte k being k mod 251. */
function matrices(count: number, rows: number, cols: number, eb: number): Uint8Array {
  return Uint8Array.from({ length: count * rows * cols * eb }, (_, k) => k % 251);
}

/** The same payload in pieces of `size` bytes. */
function chunked(bytes: Uint8Array, size: number): ReadableStream<Uint8Array> {
  const parts: Uint8Array[] = [];
  for (let at = 0; at < bytes.length; at += size) parts.push(bytes.slice(at, at + size));
  return ReadableStream.from(parts);
}

async function read(stream: ReadableStream<Uint8Array>): Promise<Uint8Array> {
  return new Uint8Array(await new Response(stream).arrayBuffer());
}

Deno.test("transposedColumns: each matrix's columns [from, to) transposed, for 1-, 2- and 4-byte elements and any chunking", async () => {
  const [count, rows, cols] = [3, 4, 6];
  for (const eb of [1, 2, 4]) {
    const input = matrices(count, rows, cols, eb);
    for (const [from, to] of [[0, 3], [3, 6], [0, 6]] as const) {
      const want = new Uint8Array(count * (to - from) * rows * eb);
      let at = 0;
      for (let m = 0; m < count; m++) {
        for (let c = from; c < to; c++) {
          for (let r = 0; r < rows; r++) {
            const src = ((m * rows + r) * cols + c) * eb;
            want.set(input.subarray(src, src + eb), at);
            at += eb;
          }
        }
      }
      for (const size of [1, 7, input.length]) {
        const got = await read(
          transposedColumns(
            chunked(input, size),
            { count, rows, cols, elementBytes: eb },
            from,
            to,
          ),
        );
        assert.deepEqual(got, want, `eb ${eb}, columns ${from}–${to}, chunks of ${size}`);
      }
    }
  }
});

Deno.test("transposedColumns: a payload shorter than its matrices is an error", async () => {
  const input = matrices(2, 2, 2, 4).subarray(0, 20);
  await assert.rejects(
    read(
      transposedColumns(
        ReadableStream.from([input]),
        { count: 2, rows: 2, cols: 2, elementBytes: 4 },
        0,
        2,
      ),
    ),
    /Cannot transpose matrix 2 of 2: the payload ends 4 bytes into it/,
  );
});
