/**
 * `--resume`'s first line when a run kept only part of its first tensor
 * (sub-tensor commits, issues 13/14): it says so instead of nothing.
 *
 * @module
 */

import { equal, rejects } from "node:assert/strict";
import { resumeLine } from "../../src/cli/_resume_line.ts";
import { AprSink } from "../../src/formats/apr/sink.ts";
import type { ModelChunk, ProgressEvent, TensorEntry } from "../../src/tensor.ts";
import { withTempDir } from "./_run_apr.ts";

const CHUNK = 4096;
const BIG = new Uint8Array(256 * 256 * 4).map((_, i) => (i * 7) & 0xff);
const SMALL = new Uint8Array(64).fill(3);
const INFOS = [
  { name: "big", dtype: "F32" as const, shape: [256, 256], byteLength: BIG.length },
  { name: "small", dtype: "F32" as const, shape: [16], byteLength: SMALL.length },
];

/** The two tensors in 4 KiB chunks; "big" fails at `failAt` bytes when given. */
function model(failAt?: number): ReadableStream<ModelChunk> {
  const stream = (data: Uint8Array, from: number, fail?: number) => {
    let at = from;
    return new ReadableStream<Uint8Array>({
      pull(controller) {
        if (fail !== undefined && at >= fail) controller.error(new Error("connection reset"));
        else if (at >= data.length) controller.close();
        else {
          const end = Math.min(data.length, at + CHUNK);
          controller.enqueue(data.slice(at, end));
          at = end;
        }
      },
    }, { highWaterMark: 0 });
  };
  const entries: TensorEntry[] = [BIG, SMALL].map((data, i) => ({
    info: INFOS[i]!,
    open: () => stream(data, 0, i === 0 ? failAt : undefined),
    slice: (start: number, end: number) => stream(data.subarray(0, end), start),
  }));
  return ReadableStream.from<ModelChunk>([
    { type: "header", header: { format: "test", metadata: { model_type: "m" }, tensors: INFOS } },
    ...entries.map((tensor) => ({ type: "tensor" as const, tensor })),
  ]);
}

Deno.test("resumeLine() says how much of the first tensor a resume kept when no tensor is whole", async () => {
  await withTempDir(async (dir) => {
    const out = `${dir}/m.apr`;
    await rejects(
      model(100 * 1024).pipeTo(
        await AprSink.create(out, { commitBytes: 16 * 1024, commitIntervalMs: 1e9 }),
      ),
      /connection reset/,
    );
    const lines: string[] = [];
    await model().pipeTo(
      await AprSink.create(out, {
        resume: true,
        onProgress: (e) => {
          const line = resumeLine(e);
          if (line !== undefined) lines.push(line);
        },
      }),
    );
    // The failure commits up to the last chunk written: 100 KiB of "big".
    equal(lines[0], "resuming: 0 of 2 tensors and 100 KiB of the first already written");
  });
});

Deno.test("resumeLine() counts whole tensors, and says nothing for a fresh run", () => {
  const event: ProgressEvent = {
    phase: "write",
    bytesDone: 3 * 2 ** 20,
    bytesTotal: 2 ** 30,
    itemsDone: 3,
    itemsTotal: 21,
  };
  equal(resumeLine(event), undefined);
  equal(
    resumeLine({ ...event, resumedItems: 3, resumedBytes: 3 * 2 ** 20 }),
    "resuming: 3 of 21 tensors already written (3.00 MiB)",
  );
});
