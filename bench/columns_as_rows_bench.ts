/**
 * `columnsAsRows` (src/arch/columns_as_rows.ts) on experts of real models'
 * sizes, read from 1 MiB chunks, its chunks given back to the pool as the
 * GGUF sink does: `deno bench bench/columns_as_rows_bench.ts`. Each group's
 * baseline copies the same bytes through (`keepRanges` of all of them), the
 * least any transform of the payload costs.
 *
 * @module
 */

import { columnsAsRows, keepRanges } from "../src/arch/transforms.ts";
import { releaseChunk } from "../src/io/byte_source.ts";

const CHUNK = 1 << 20;
const EXPERTS = 2;

/** Deterministic bytes, as a checkpoint's BF16 weights look to a copy. */
function payload(length: number): Uint8Array {
  const bytes = new Uint8Array(length);
  const words = new Uint32Array(bytes.buffer);
  let seed = 7;
  for (let i = 0; i < words.length; i++) words[i] = seed = (seed * 1103515245 + 12345) >>> 0;
  return bytes;
}

function source(bytes: Uint8Array): ReadableStream<Uint8Array> {
  let at = 0;
  return new ReadableStream<Uint8Array>({
    pull(controller) {
      if (at >= bytes.length) return controller.close();
      controller.enqueue(bytes.subarray(at, at + CHUNK));
      at += CHUNK;
    },
  }, { highWaterMark: 0 });
}

async function drain(stream: ReadableStream<Uint8Array>): Promise<void> {
  for await (const chunk of stream) releaseChunk(chunk);
}

const options = { n: 5, warmup: 1 };
const cases = [
  {
    group: `gpt-oss-20b gate_up ${EXPERTS} × [2880, 5760] BF16, [..., 1::2]`,
    bytes: payload(EXPERTS * 2880 * 5760 * 2),
    layout: { matrices: EXPERTS, rows: 2880, cols: 5760, width: 2, start: 1, step: 2 },
  },
  {
    group: `Llama 4 Scout gate_up ${EXPERTS} × [5120, 16384] BF16, up's window`,
    bytes: payload(EXPERTS * 5120 * 16384 * 2),
    layout: { matrices: EXPERTS, rows: 5120, cols: 16384, width: 2, start: 8192, count: 8192 },
  },
];
for (const { group, bytes, layout } of cases) {
  Deno.bench({
    name: "copy (keepRanges)",
    group,
    baseline: true,
    ...options,
    async fn() {
      await drain(keepRanges(source(bytes), [[0, bytes.length]]));
    },
  });
  Deno.bench({
    name: "columnsAsRows",
    group,
    ...options,
    async fn() {
      await drain(columnsAsRows(source(bytes), layout));
    },
  });
}
