import { deepEqual, equal, ok } from "node:assert/strict";
import { sharedReads } from "../../src/pipeline/shared_reads.ts";
import type { ModelReader, TensorEntry } from "../../src/tensor.ts";

/** A model of `count` tensors of `chunks` 1 KiB chunks each, counting the reads of each payload. */
function countingModel(count: number, chunks: number) {
  const opens = new Array<number>(count).fill(0);
  const tensors: TensorEntry[] = Array.from({ length: count }, (_, t) => ({
    info: { name: `t${t}`, dtype: "U8", shape: [chunks * 1024], byteLength: chunks * 1024 },
    open() {
      opens[t]!++;
      let i = 0;
      return new ReadableStream<Uint8Array>({
        pull(controller) {
          if (i === chunks) return controller.close();
          controller.enqueue(new Uint8Array(1024).fill((t * 31 + i++) & 255));
        },
      }, { highWaterMark: 0 });
    },
  }));
  const reader: ModelReader = {
    header: { format: "safetensors", metadata: {}, tensors: tensors.map((t) => t.info) },
    tensors,
    close: () => Promise.resolve(),
  };
  return { reader, opens };
}

async function digestOf(stream: ReadableStream<Uint8Array>): Promise<number[]> {
  const sums: number[] = [];
  for await (const chunk of stream) sums.push(chunk.reduce((a, b) => a + b, 0), chunk.length);
  return sums;
}

/** Read every tensor of a view in `order`, one at a time, as a conversion does. */
async function readAll(view: ModelReader, order: number[]): Promise<number[][]> {
  const out: number[][] = [];
  for (const t of order) out[t] = await digestOf(view.tensors[t]!.open());
  return out;
}

Deno.test("views reading in one order read each payload from the source once, each getting every byte", async () => {
  const { reader, opens } = countingModel(12, 5);
  const { readers } = sharedReads(reader, 4);
  const order = [...Array(12).keys()];
  const results = await Promise.all(readers.map((v) => readAll(v, order)));
  const alone = await readAll(countingModel(12, 5).reader, order);
  for (const r of results) deepEqual(r, alone);
  deepEqual(opens, new Array(12).fill(1));
});

Deno.test("views in different orders do not deadlock; what they share is read once", async () => {
  const { reader, opens } = countingModel(8, 3);
  const { readers } = sharedReads(reader, 2);
  const converter = [0, 1, 2, 3, 4, 5, 6, 7];
  // llama-quantize's order: each block's tensors by name.
  const byName = [0, 3, 2, 1, 4, 7, 6, 5];
  const [a, b] = await Promise.all([readAll(readers[0]!, converter), readAll(readers[1]!, byName)]);
  const alone = await readAll(countingModel(8, 3).reader, converter);
  deepEqual(a, alone);
  deepEqual(b, alone);
  ok(opens.every((n) => n >= 1 && n <= 2), `${opens}`);
  equal(opens[0], 1);
  equal(opens[4], 1);
});

Deno.test("a retired view holds no one back", async () => {
  const { reader, opens } = countingModel(6, 2);
  const views = sharedReads(reader, 3);
  const order = [...Array(6).keys()];
  // View 2 reads the first tensor with the others, then its conversion fails.
  const failing = digestOf(views.readers[2]!.tensors[0]!.open()).then(() => views.retire(2));
  await Promise.all([
    readAll(views.readers[0]!, order),
    readAll(views.readers[1]!, order),
    failing,
  ]);
  deepEqual(opens, new Array(6).fill(1));
});
