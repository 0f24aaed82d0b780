import assert from "node:assert/strict";
import { FileSink } from "../../src/io/file_sink.ts";

Deno.test("FileSink writes at offsets, reads back, truncates and syncs", async () => {
  const dir = await Deno.makeTempDir();
  const path = `${dir}/out.bin`;
  const sink = await FileSink.open(path, { truncate: true });
  try {
    await sink.writeAt(4, new Uint8Array([5, 6, 7]));
    await sink.writeAt(0, new Uint8Array([1, 2]));
    assert.equal(await sink.size(), 7);
    assert.deepEqual(await sink.readAt(0, 7), new Uint8Array([1, 2, 0, 0, 5, 6, 7]));
    await sink.truncate(10);
    await sink.syncData();
    assert.equal(await sink.size(), 10);
    await assert.rejects(() => sink.readAt(8, 4), RangeError);
    assert.throws(() => sink.writeAt(-1, new Uint8Array(1)), RangeError);
  } finally {
    await sink.close();
    await sink.close();
  }
  assert.deepEqual(Deno.readFileSync(path), new Uint8Array([1, 2, 0, 0, 5, 6, 7, 0, 0, 0]));
  await assert.rejects(() => sink.writeAt(0, new Uint8Array(1)), /the file is closed/);
  const again = await FileSink.open(path, { create: false });
  await again.writeAt(9, new Uint8Array([9]));
  await again.close();
  assert.equal(Deno.readFileSync(path)[9], 9);
  await Deno.remove(dir, { recursive: true });
});

Deno.test("FileSink.open() without create fails for a missing file", async () => {
  const dir = await Deno.makeTempDir();
  await assert.rejects(
    () => FileSink.open(`${dir}/missing`, { create: false }),
    Deno.errors.NotFound,
  );
  await Deno.remove(dir);
});
