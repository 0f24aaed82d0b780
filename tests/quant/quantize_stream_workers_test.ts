/**
 * Which encoders QuantizeStream hands to its workers, and how often it starts
 * them (issue 23): a costly encoder (Q4_K) starts the workers once for the
 * whole stream, however many tensors come between; a cheap one (Q8_0) never
 * starts them. Workers are counted by wrapping the global `Worker`.
 */

import { deepStrictEqual as assertEquals } from "node:assert/strict";
import { QuantizeStream } from "../../src/quant/quantize_stream.ts";
import type { QuantizeTarget } from "../../src/quant/plan_quantization.ts";
import type { ModelChunk, TensorEntry, TensorInfo } from "../../src/tensor.ts";

/** Convert three 512×512 matrices with small vectors between them; count the workers started. */
async function workersStarted(to: QuantizeTarget): Promise<number> {
  const Original = globalThis.Worker;
  let started = 0;
  globalThis.Worker = class extends Original {
    constructor(url: string | URL, options?: WorkerOptions) {
      super(url, options);
      started++;
    }
  };
  try {
    const infos: TensorInfo[] = [];
    for (let i = 0; i < 3; i++) {
      infos.push({ name: `m${i}.weight`, dtype: "F32", shape: [512, 512], byteLength: 4 << 18 });
      infos.push({ name: `v${i}.weight`, dtype: "F32", shape: [256], byteLength: 1024 });
    }
    const entries: TensorEntry[] = infos.map((info) => ({
      info,
      open: () => {
        const v = new Float32Array(info.byteLength / 4).map((_, i) => Math.sin(i * 0.01));
        return ReadableStream.from([new Uint8Array(v.buffer)]);
      },
    }));
    const input = ReadableStream.from<ModelChunk>([
      { type: "header", header: { format: "test", metadata: {}, tensors: infos } },
      ...entries.map((tensor) => ({ type: "tensor" as const, tensor })),
    ]);
    const stream = input.pipeThrough(
      new QuantizeStream({ to, all: true, ggufTypes: true, workers: 2 }),
    );
    // Read every payload in order, as a sink does (the stream has ended by the last ones).
    const chunks = await Array.fromAsync(stream);
    for (const c of chunks) {
      if (c.type === "tensor") { for await (const _ of c.tensor.open()) { /* drain */ } }
    }
    return started;
  } finally {
    globalThis.Worker = Original;
  }
}

Deno.test("QuantizeStream starts its workers once per stream for a costly encoder (Q4_K)", async () => {
  assertEquals(await workersStarted("q4_k"), 2);
});

Deno.test("QuantizeStream encodes Q8_0 in the calling thread: no worker is started", async () => {
  assertEquals(await workersStarted("q8_0"), 0);
});
