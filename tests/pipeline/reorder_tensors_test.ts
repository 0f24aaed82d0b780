/**
 * `reorderTensors` (src/pipeline/reorder_tensors.ts), the machinery of the
 * converter's reading order and llama-quantize's writing order: the header
 * first in the new order, each tensor out as soon as its turn comes (so only
 * those ahead of their turn are held), errors for a tensor the header does
 * not list, one that comes twice or never, and cancellation both ways.
 */

import assert from "node:assert/strict";
import { reorderTensors } from "../../src/pipeline/reorder_tensors.ts";
import type { ModelChunk, TensorEntry } from "../../src/tensor.ts";

const entry = (name: string): TensorEntry => ({
  info: { name, dtype: "F32", shape: [1], byteLength: 4 },
  open: () => new ReadableStream({ start: (c) => (c.enqueue(new Uint8Array(4)), c.close()) }),
});

const header = (names: readonly string[]): ModelChunk => ({
  type: "header",
  header: { format: "safetensors", metadata: {}, tensors: names.map((n) => entry(n).info) },
});

const tensor = (name: string): ModelChunk => ({ type: "tensor", tensor: entry(name) });

const reversed = (tensors: readonly { name: string }[]) => tensors.map((t) => t.name).reverse();

/** What comes out of the transform for `chunks`, in order (`H:` the header's names). */
async function run(
  chunks: readonly ModelChunk[],
  orderOf: Parameters<typeof reorderTensors>[0],
): Promise<string[]> {
  const out: string[] = [];
  const stream = ReadableStream.from(chunks).pipeThrough(reorderTensors(orderOf));
  for await (const chunk of stream) {
    out.push(
      chunk.type === "header"
        ? `H:${chunk.header.tensors.map((t) => t.name).join(",")}`
        : chunk.tensor.info.name,
    );
  }
  return out;
}

Deno.test("reorderTensors() emits the header and the tensors in the computed order", async () => {
  const names = ["a", "b", "c"];
  assert.deepEqual(await run([header(names), ...names.map(tensor)], reversed), [
    "H:c,b,a",
    "c",
    "b",
    "a",
  ]);
  // `undefined`: passed through as it comes.
  assert.deepEqual(await run([header(names), ...names.map(tensor)], () => undefined), [
    "H:a,b,c",
    "a",
    "b",
    "c",
  ]);
});

Deno.test("reorderTensors() lets a tensor go as soon as its turn comes, holding only those ahead of it", async () => {
  // Wanted: a, b, c, d; served: b, a, d, c. After a arrives, a and b go;
  // after c, c and d: never more than one tensor is held.
  const seen: string[] = [];
  const stream = ReadableStream.from([
    header(["b", "a", "d", "c"]),
    ..."badc".split("").map(tensor),
  ])
    .pipeThrough(
      new TransformStream<ModelChunk, ModelChunk>({
        transform(chunk, controller) {
          seen.push(chunk.type === "header" ? "H" : `in:${chunk.tensor.info.name}`);
          controller.enqueue(chunk);
        },
      }),
    )
    .pipeThrough(reorderTensors((t) => t.map((x) => x.name).sort()));
  for await (const chunk of stream) {
    if (chunk.type === "tensor") seen.push(`out:${chunk.tensor.info.name}`);
  }
  assert.deepEqual(seen, [
    "H",
    "in:b",
    "in:a",
    "out:a",
    "out:b",
    "in:d",
    "in:c",
    "out:c",
    "out:d",
  ]);
});

Deno.test("reorderTensors() errors for a tensor not in the header, one that comes twice, and one that never comes", async (t) => {
  const cases: [string, ModelChunk[], string][] = [
    [
      "not in the header",
      [header(["a", "b"]), tensor("a"), tensor("b"), tensor("x")],
      '"x" is not in the header',
    ],
    ["twice", [header(["a", "b"]), tensor("b"), tensor("b")], '"b" arrived twice'],
    [
      "twice, after it went",
      [header(["a", "b"]), tensor("b"), tensor("a"), tensor("a")],
      '"a" arrived twice',
    ],
    ["never", [header(["a", "b", "c"]), tensor("c"), tensor("a")], '"b" never arrived'],
  ];
  for (const [what, chunks, message] of cases) {
    await t.step(what, async () => {
      await assert.rejects(run(chunks, (x) => x.map((y) => y.name)), (error: Error) => {
        assert.ok(error instanceof TypeError);
        assert.equal(error.message, `Cannot reorder tensors: ${message}`);
        return true;
      });
    });
  }
});

Deno.test("reorderTensors() passes an error of the source on", async () => {
  // "b" is held (reversed: "a" first) when the source breaks.
  const chunks = [header(["b", "a"]), tensor("b")];
  const source = new ReadableStream<ModelChunk>({
    pull(controller) {
      const chunk = chunks.shift();
      if (chunk === undefined) controller.error(new RangeError("the source broke"));
      else controller.enqueue(chunk);
    },
  });
  const reader = source.pipeThrough(reorderTensors(reversed)).getReader();
  assert.equal((await reader.read()).value?.type, "header");
  await assert.rejects(reader.read(), RangeError);
});

Deno.test("reorderTensors() cancelled by its reader cancels the source", async () => {
  let cancelled: unknown;
  const source = new ReadableStream<ModelChunk>({
    start(controller) {
      controller.enqueue(header(["a", "b", "c"]));
      controller.enqueue(tensor("c"));
    },
    cancel(reason) {
      cancelled = reason;
    },
  });
  const reader = source.pipeThrough(reorderTensors((x) => x.map((y) => y.name))).getReader();
  assert.equal((await reader.read()).value?.type, "header");
  await reader.cancel("stop");
  assert.equal(cancelled, "stop");
});

Deno.test("reorderTensors() aborted by its writer errors its reader", async () => {
  const transform = reorderTensors(reversed);
  const writer = transform.writable.getWriter();
  const reader = transform.readable.getReader();
  const headerRead = reader.read();
  await writer.write(header(["a", "b"]));
  assert.equal((await headerRead).value?.type, "header");
  // "a" is held ("b" comes first): the read waits until the abort errors it.
  const tensorRead = reader.read();
  await writer.write(tensor("a"));
  await writer.abort(new Error("upstream gone"));
  await assert.rejects(tensorRead, /upstream gone/);
});
