/**
 * AprSink commits inside a tensor and resumes there (DESIGN.md §2.3), and
 * reads its journal back as hostile input: what a resume trusts is checked.
 *
 * @module
 */

import assert from "node:assert/strict";
import { UsageError } from "../../../src/errors.ts";
import { planAprLayout } from "../../../src/formats/apr/layout.ts";
import { AprSink } from "../../../src/formats/apr/sink.ts";
import type { ModelChunk, TensorEntry } from "../../../src/tensor.ts";
import { bytesOf } from "./_fixtures.ts";

const CHUNK = 4096;
const TENSORS = [
  { name: "a", dtype: "F32" as const, shape: [64, 64], data: bytesOf(64 * 64 * 4, 1) },
  { name: "big", dtype: "F32" as const, shape: [256, 256], data: bytesOf(256 * 256 * 4, 2) },
  { name: "c", dtype: "F32" as const, shape: [16], data: bytesOf(64, 3) },
];
const INFOS = TENSORS.map(({ name, dtype, shape, data }) => ({
  name,
  dtype,
  shape,
  byteLength: data.length,
}));

interface Log {
  opened: string[];
  openedAt: { name: string; offset: number }[];
}

function stream(data: Uint8Array, from: number, failAt?: number): ReadableStream<Uint8Array> {
  let at = from;
  return new ReadableStream<Uint8Array>({
    pull(controller) {
      if (failAt !== undefined && at >= failAt) {
        controller.error(new Error("connection reset"));
      } else if (at >= data.length) {
        controller.close();
      } else {
        const end = Math.min(data.length, at + CHUNK);
        controller.enqueue(data.slice(at, end));
        at = end;
      }
    },
  }, { highWaterMark: 0 });
}

function model(log: Log, failAt?: number): ReadableStream<ModelChunk> {
  const entries: TensorEntry[] = TENSORS.map((t, i) => ({
    info: INFOS[i]!,
    open: () => {
      log.opened.push(t.name);
      return stream(t.data, 0, t.name === "big" ? failAt : undefined);
    },
    // Random access, as file readers give: the sink restarts through it.
    slice: (start: number, end: number) => {
      log.openedAt.push({ name: t.name, offset: start });
      return stream(t.data.subarray(0, end), start);
    },
  }));
  return ReadableStream.from<ModelChunk>([
    { type: "header", header: { format: "test", metadata: { model_type: "m" }, tensors: INFOS } },
    ...entries.map((tensor) => ({ type: "tensor" as const, tensor })),
  ]);
}

async function withDir(fn: (dir: string) => Promise<void>): Promise<void> {
  const dir = await Deno.makeTempDir({ prefix: "aprkit_resume_inside_" });
  try {
    await fn(dir);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
}

async function reference(dir: string): Promise<Uint8Array> {
  await model({ opened: [], openedAt: [] }).pipeTo(await AprSink.create(`${dir}/ref.apr`));
  return await Deno.readFile(`${dir}/ref.apr`);
}

/** Run 1: "big" fails after 150 KiB; commits every 16 KiB. Returns the partial commit. */
async function interrupted(out: string): Promise<{ reached: number; crc: number }> {
  await assert.rejects(
    model({ opened: [], openedAt: [] }, 150 * 1024).pipeTo(
      await AprSink.create(out, { commitBytes: 16 * 1024, commitIntervalMs: 1e9 }),
    ),
    /connection reset/,
  );
  const lines = (await Deno.readTextFile(`${out}.partial.journal`)).trim().split("\n");
  const last = JSON.parse(lines.at(-1)!);
  assert.equal(last.index, 1, "the last commit is inside 'big'");
  assert.ok(last.reached > 0 && last.reached < TENSORS[1]!.data.length, lines.at(-1));
  return last;
}

Deno.test("AprSink resumes inside a tensor from its last commit, with identical bytes", async () => {
  await withDir(async (dir) => {
    const expected = await reference(dir);
    const out = `${dir}/m.apr`;
    const { reached } = await interrupted(out);
    // The failure commits up to the last chunk written, the first at or past 150 KiB.
    assert.equal(reached, Math.ceil(150 * 1024 / CHUNK) * CHUNK);
    const log: Log = { opened: [], openedAt: [] };
    const sink = await AprSink.create(out, { resume: true });
    await model(log).pipeTo(sink);
    assert.deepEqual(await Deno.readFile(out), expected);
    assert.deepEqual(log.openedAt, [{ name: "big", offset: reached }]);
    assert.deepEqual(log.opened, ["c"], "nothing committed is read again");
    assert.equal(sink.result!.resumedTensors, 1);
    assert.equal(sink.result!.resumedBytes, TENSORS[0]!.data.length + reached);
  });
});

Deno.test("AprSink rewrites a tensor's committed head when it changed on disk", async () => {
  await withDir(async (dir) => {
    const expected = await reference(dir);
    const out = `${dir}/m.apr`;
    const { reached } = await interrupted(out);
    const layout = planAprLayout({ model_type: "m" }, INFOS);
    const f = await Deno.open(`${out}.partial`, { write: true });
    await f.seek(layout.tensors[1]!.fileOffset + 1000, Deno.SeekMode.Start);
    await f.write(new Uint8Array([0xde, 0xad]));
    f.close();
    const log: Log = { opened: [], openedAt: [] };
    const sink = await AprSink.create(out, { resume: true });
    await model(log).pipeTo(sink);
    assert.deepEqual(await Deno.readFile(out), expected);
    // The rest was written from the restart point meanwhile; then the head again.
    assert.deepEqual(log.openedAt, [{ name: "big", offset: reached }]);
    assert.deepEqual(log.opened, ["big", "c"]);
    assert.equal(sink.result!.resumedBytes, TENSORS[0]!.data.length);
  });
});

Deno.test("AprSink reads its journal back as hostile input", async (t) => {
  await withDir(async (dir) => {
    const expected = await reference(dir);
    const out = `${dir}/m.apr`;
    const layout = planAprLayout({ model_type: "m" }, INFOS);
    const big = layout.tensors[1]!;
    const bad = [
      "not json",
      "[1,2,3]",
      "null",
      JSON.stringify({ index: 1, offset: big.fileOffset, length: big.info.byteLength, crc: -1 }),
      JSON.stringify({ index: 1, offset: 0, length: big.info.byteLength, crc: 5 }),
      JSON.stringify({ index: 9, offset: big.fileOffset, length: 4, crc: 5 }),
      JSON.stringify({
        index: 1,
        offset: big.fileOffset,
        length: big.info.byteLength,
        reached: big.info.byteLength + 4,
        crc: 5,
      }),
      JSON.stringify({
        index: 1,
        offset: big.fileOffset,
        length: big.info.byteLength,
        reached: 4096,
        crc: 5,
        state: "x".repeat(10_000),
      }),
      // A well-formed claim whose CRC is wrong: verified, then rewritten.
      JSON.stringify({
        index: 1,
        offset: big.fileOffset,
        length: big.info.byteLength,
        reached: 8192,
        crc: 12345,
      }),
      '{"index": 1, "offset": 1e400',
    ];
    await t.step("invalid and false lines are skipped; the output is still exact", async () => {
      await interrupted(out);
      const journal = await Deno.readTextFile(`${out}.partial.journal`);
      const first = journal.split("\n")[0]!;
      await Deno.writeTextFile(`${out}.partial.journal`, [first, ...bad].join("\n"));
      const sink = await AprSink.create(out, { resume: true });
      await model({ opened: [], openedAt: [] }).pipeTo(sink);
      assert.deepEqual(await Deno.readFile(out), expected);
      assert.equal(sink.result!.resumedBytes, 0);
      await Deno.remove(out);
    });
    await t.step(
      "a journal larger than any import writes is refused before it is read",
      async () => {
        await interrupted(out);
        const f = await Deno.open(`${out}.partial.journal`, { write: true });
        await f.truncate(65 * 1024 * 1024); // sparse: nothing is really written
        f.close();
        await assert.rejects(
          async () =>
            await model({ opened: [], openedAt: [] }).pipeTo(
              await AprSink.create(out, { resume: true }),
            ),
          (e) => e instanceof UsageError && /journal .* is \d+ bytes, more than/.test(e.message),
        );
        assert.ok(await Deno.stat(`${out}.partial`), "the partial is kept");
      },
    );
  });
});
